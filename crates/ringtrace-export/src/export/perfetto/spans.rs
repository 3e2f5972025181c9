//! `tracing` records as track events. An event is an instant on its
//! thread's track, named by its message (or its callsite), its target as
//! the category, its level and other fields as annotations. A span is a
//! slice on its thread's track for each time it is entered, with its
//! fields (from its creation and later records), level and id; a task
//! (see the tasks module) has besides a track of its own, under its
//! parent task's or its process's, holding one slice from its creation to
//! its close, and a flow from that slice through each slice of a thread
//! that polled it after another had (or first).
//! A local span is one slice from its start to its end. Creation, records
//! and `follows_from` links draw nothing of their own.

use super::sink::{Arg, EventType, SeqKey, TrackEvent};
use super::stacks::Open;
use super::tracks::TrackKey;
use super::walk::{Live, Walk};
use crate::trace::Process;
use ringtrace_tracepoint::tracing_record::{CallsiteKind, RecordKind, TracingRecord};
use ringtrace_tracepoint::FieldValue;
use std::io;

/// The pair a `tracing` span's slices belong to on a thread's track.
const PAIR: &str = "tracing span";

/// `r`'s fields as annotations (one named like an annotation the
/// exporter adds as `field:NAME`), without `skip`.
fn fields(r: &TracingRecord<'_>, skip: Option<&str>) -> Vec<Arg<'static>> {
    r.fields
        .iter()
        .filter(|f| Some(f.name) != skip)
        .map(|f| {
            let name = match f.name {
                "cpu" | "level" | "span" | "parent" | "tid" => format!("field:{}", f.name),
                name => name.to_owned(),
            };
            Arg::owned(name, f.value.clone())
        })
        .collect()
}

/// Sets each of `new` in `args`, replacing one of the same name.
fn merge(args: &mut Vec<Arg<'static>>, new: Vec<Arg<'static>>) {
    for arg in new {
        match args.iter_mut().find(|a| a.name == arg.name) {
            Some(old) => *old = arg,
            None => args.push(arg),
        }
    }
}

impl<'t> Walk<'t, '_, '_> {
    /// Writes `tracing` record `r` of process `p` (the trace's
    /// `process`-th), read from CPU `cpu`.
    pub fn tracing(
        &mut self,
        process: usize,
        p: &Process<'t>,
        r: &TracingRecord<'_>,
        cpu: usize,
        (ts, ns): (u64, u64),
    ) -> io::Result<()> {
        let pid = process as u32;
        let name = r.callsite.name.as_str();
        let target = r.callsite.target.as_str();
        let cpu_v = FieldValue::Unsigned(cpu as u64);
        let level = FieldValue::Str(r.callsite.level.name().to_owned());
        match (r.kind, r.span) {
            (RecordKind::Event | RecordKind::EventIn, _) => {
                let message = r.fields.iter().find_map(|f| match (&f.value, f.name) {
                    (FieldValue::Str(s), "message") => Some(s.clone()),
                    _ => None,
                });
                let mut args = vec![Arg::of("cpu", &cpu_v), Arg::of("level", &level).interned()];
                args.extend(fields(r, message.as_ref().map(|_| "message")));
                let title = message.as_deref().unwrap_or(name);
                self.instant(pid, r.tid, ns, title, target, &args)
            }
            (RecordKind::SpanNew, Some(span)) => {
                let mut args = vec![
                    Arg::owned("level", level.clone()).interned(),
                    Arg::owned("span", FieldValue::Unsigned(span)),
                ];
                if let Some(parent) = r.parent {
                    args.push(Arg::owned("parent", FieldValue::Unsigned(parent)));
                }
                args.extend(fields(r, None));
                // A span of this id still open lost its close: its task
                // slice ends here.
                if let Some(old) = self.spans.remove(&(pid, span)) {
                    self.unclosed(old, ns)?;
                }
                let key = (pid, span, ts);
                let mut live = Live {
                    key,
                    name: name.to_owned(),
                    target: target.to_owned(),
                    args,
                    recorded: Vec::new(),
                    task_track: None,
                    drawn: false,
                    polled_by: None,
                };
                if self.tasks.is_task(key) {
                    let parent = r
                        .parent
                        .and_then(|s| self.spans.get(&(pid, s)))
                        .and_then(|l| l.task_track);
                    let track_key = TrackKey::Task {
                        pid,
                        span,
                        created: ts,
                    };
                    let track = self
                        .tracks
                        .uuid(self.sink, pid, track_key, Some(name), parent)?;
                    let (causes, follows) = self.tasks.first_slice(key);
                    let mut flows: Vec<u64> = self.tasks.chain(key).into_iter().collect();
                    flows.extend(causes);
                    let (seq, _) = self.thread(pid, r.tid)?;
                    let e = TrackEvent {
                        name: Some(name),
                        category: Some(target),
                        args: &live.args,
                        flows: &flows,
                        ends_flows: &follows,
                        ..TrackEvent::new(EventType::Begin, track)
                    };
                    self.sink.event(seq, ns, &e)?;
                    live.task_track = Some(track);
                    live.drawn = true;
                }
                self.spans.insert((pid, span), live);
                Ok(())
            }
            (RecordKind::SpanRecord, Some(span)) => {
                if let Some(live) = self.spans.get_mut(&(pid, span)) {
                    let new = fields(r, None);
                    merge(&mut live.recorded, new.clone());
                    merge(&mut live.args, new);
                }
                Ok(())
            }
            (RecordKind::SpanEnter, Some(span)) => {
                let live = self.spans.entry((pid, span)).or_insert_with(|| Live {
                    key: (pid, span, 0),
                    name: name.to_owned(),
                    target: target.to_owned(),
                    args: vec![
                        Arg::owned("level", level.clone()).interned(),
                        Arg::owned("span", FieldValue::Unsigned(span)),
                    ],
                    recorded: Vec::new(),
                    task_track: None,
                    drawn: false,
                    polled_by: None,
                });
                let key = live.key;
                let first = !live.drawn;
                live.drawn = true;
                let live_tid = live.polled_by.replace(r.tid);
                let mut args = vec![Arg::owned("cpu", cpu_v.clone())];
                if live.task_track.is_some() {
                    // The task's slice has its fields; each poll names it.
                    args.push(Arg::owned("span", FieldValue::Unsigned(span)));
                } else {
                    args.extend(live.args.iter().cloned());
                }
                let slice = Open {
                    name: live.name.clone(),
                    category: live.target.clone(),
                    pair: PAIR,
                    span: Some(span),
                    args,
                };
                let (mut flows, mut follows) = (Vec::new(), Vec::new());
                if let Some(chain) = self.tasks.chain(key) {
                    // The chain goes to each thread the task moves to.
                    if live_tid != Some(r.tid) {
                        flows.push(chain);
                    }
                } else if first {
                    (flows, follows) = self.tasks.first_slice(key);
                }
                self.begin_slice(pid, r.tid, ns, slice, &flows, &follows)
            }
            (RecordKind::SpanExit, Some(span)) => {
                if self.end_slice(pid, r.tid, ns, (PAIR, name, Some(span)), &[])? {
                    return Ok(());
                }
                self.counts.unmatched += 1;
                let unmatched = FieldValue::Str(name.to_owned());
                let args = [
                    Arg::of("cpu", &cpu_v),
                    Arg::of("level", &level).interned(),
                    Arg::of("unmatched_end", &unmatched),
                ];
                self.instant(pid, r.tid, ns, r.kind.name(), target, &args)
            }
            (RecordKind::SpanClose, Some(span)) => {
                let Some(live) = self.spans.remove(&(pid, span)) else {
                    return Ok(());
                };
                self.tasks.done(live.key);
                let Some(track) = live.task_track else {
                    return Ok(());
                };
                let (seq, _) = self.thread(pid, r.tid)?;
                let e = TrackEvent {
                    args: &live.recorded,
                    ..TrackEvent::new(EventType::End, track)
                };
                self.sink.event(seq, ns, &e)
            }
            (RecordKind::LocalSpan, _) => {
                let start = r
                    .start
                    .map(|s| self.sink.time().ns(p.timeline(s)))
                    .map_or(ns, |s| s.min(ns));
                let mut args = vec![Arg::of("cpu", &cpu_v)];
                if r.callsite.kind != CallsiteKind::LocalSpan {
                    args.push(Arg::of("level", &level).interned());
                }
                let (seq, track) = self.thread(pid, r.tid)?;
                let category = if target.is_empty() { "tracing" } else { target };
                let begin = TrackEvent {
                    name: Some(name),
                    category: Some(category),
                    args: &args,
                    ..TrackEvent::new(EventType::Begin, track)
                };
                self.sink.event(seq, start, &begin)?;
                self.sink
                    .event(seq, ns, &TrackEvent::new(EventType::End, track))
            }
            // Follows-from links are flows (the tasks module); a span kind
            // always carries its span id (the decoder reads it).
            (RecordKind::SpanFollows, _) | (_, None) => Ok(()),
        }
    }

    /// Ends `live`'s task slice, if open, at `ns` with `unclosed: true`.
    fn unclosed(&mut self, live: Live, ns: u64) -> io::Result<()> {
        self.tasks.done(live.key);
        let Some(track) = live.task_track else {
            return Ok(());
        };
        self.counts.closed_at_end += 1;
        let unclosed = FieldValue::Bool(true);
        let args = [Arg::of("unclosed", &unclosed)];
        let seq = SeqKey {
            pid: live.key.0,
            tid: None,
        };
        let e = TrackEvent {
            args: &args,
            ..TrackEvent::new(EventType::End, track)
        };
        self.sink.event(seq, ns, &e)
    }

    /// Ends every task slice still open at `ns`, with `unclosed: true`.
    pub fn finish_tasks(&mut self, ns: u64) -> io::Result<()> {
        let mut open: Vec<Live> = self.spans.drain().map(|(_, live)| live).collect();
        open.sort_by_key(|live| live.key);
        for live in open.into_iter().rev() {
            self.unclosed(live, ns)?;
        }
        Ok(())
    }
}
