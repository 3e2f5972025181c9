//! The slices open on each thread's track. Perfetto ends a track's
//! innermost slice at each `SLICE_END`, so an end must close the slice
//! on top. An end closes the most recent open slice of its pair and span
//! (a `tracing` span by its id, a tracepoint pair by its name); slices
//! begun after it and still open are ended with it and begun again right
//! after it (`continued`), so each slice still covers its own time (the
//! Chrome export's rule). An end with nothing to close is the caller's
//! to show.

use super::sink::Arg;
use std::collections::HashMap;

/// A slice begun and not yet ended.
#[derive(Debug, Clone)]
pub(super) struct Open {
    pub name: String,
    pub category: String,
    /// The pair of edges it belongs to (`tracing span`, `enter/exit`...).
    pub pair: &'static str,
    /// A `tracing` span's id.
    pub span: Option<u64>,
    /// Its begin's args, given again when it is begun again.
    pub args: Vec<Arg<'static>>,
}

impl Open {
    /// Whether an end of `pair` for `name` or `span` closes it.
    fn closed_by(&self, pair: &str, name: &str, span: Option<u64>) -> bool {
        self.pair == pair
            && match (self.span, span) {
                (Some(a), Some(b)) => a == b,
                _ => self.name == name,
            }
    }
}

/// Each thread's open slices, innermost last, by (pid, tid).
#[derive(Debug, Default)]
pub(super) struct Stacks {
    open: HashMap<(u32, u32), Vec<Open>>,
    /// Slices ended early and begun again to keep the nesting.
    pub split: u64,
}

impl Stacks {
    /// Notes `slice` begun on `thread`.
    pub fn begin(&mut self, thread: (u32, u32), slice: Open) {
        self.open.entry(thread).or_default().push(slice);
    }

    /// Ends the slice of `pair` for `name` or `span` on `thread`: `None`
    /// if none is open, else the slices above it (innermost last), which
    /// the caller ends before it and begins again after it, in order.
    pub fn end(
        &mut self,
        thread: (u32, u32),
        pair: &str,
        name: &str,
        span: Option<u64>,
    ) -> Option<Vec<Open>> {
        let stack = self.open.get_mut(&thread)?;
        let at = stack.iter().rposition(|o| o.closed_by(pair, name, span))?;
        let above = stack.split_off(at + 1);
        stack.pop();
        stack.extend(above.iter().cloned());
        self.split += above.len() as u64;
        Some(above)
    }

    /// Every slice still open, by thread, innermost last; none after.
    pub fn take_all(&mut self) -> Vec<((u32, u32), Vec<Open>)> {
        let mut all: Vec<_> = std::mem::take(&mut self.open).into_iter().collect();
        all.sort_by_key(|(thread, _)| *thread);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(name: &str, pair: &'static str, span: Option<u64>) -> Open {
        Open {
            name: name.into(),
            category: String::new(),
            pair,
            span,
            args: Vec::new(),
        }
    }

    #[test]
    fn an_end_below_the_top_returns_the_slices_above_it_and_keeps_them_open() {
        let mut s = Stacks::default();
        s.begin((1, 1), open("a", "enter/exit", None));
        s.begin((1, 1), open("b", "start/stop", None));
        let above = s.end((1, 1), "enter/exit", "a", None).unwrap();
        assert_eq!(above.len(), 1);
        assert_eq!(above[0].name, "b");
        assert_eq!(s.split, 1);
        assert!(s.end((1, 1), "enter/exit", "a", None).is_none());
        assert!(
            s.end((1, 2), "start/stop", "b", None).is_none(),
            "another thread"
        );
        assert_eq!(s.end((1, 1), "start/stop", "b", None).unwrap().len(), 0);
    }

    #[test]
    fn a_span_is_ended_by_its_id_not_its_name() {
        let mut s = Stacks::default();
        s.begin((1, 1), open("poll", "tracing span", Some(7)));
        s.begin((1, 1), open("poll", "tracing span", Some(8)));
        let above = s.end((1, 1), "tracing span", "poll", Some(7)).unwrap();
        assert_eq!(above[0].span, Some(8));
        let left = s.take_all();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].1[0].span, Some(8));
    }
}
