//! A synthetic kallsyms: `_stext`, then one symbol per distinct source
//! location the preemptirq events name, so that their `caller_offs` and
//! `parent_offs` (offsets from `_stext`, as the kernel records them) print
//! as the location through `%ps`.

use std::collections::BTreeMap;

/// Where `_stext` is (x86_64's usual kernel text start).
pub const STEXT: u64 = 0xffff_ffff_8100_0000;
/// Bytes between two symbols.
const SPACING: u64 = 16;

/// The symbols of a trace's locations.
#[derive(Debug, Default, Clone)]
pub struct Symbols {
    /// (file, line, column) to its offset from `_stext`.
    offsets: BTreeMap<(String, u32, u32), i32>,
}

impl Symbols {
    /// Gives `file:line:column` a symbol, if it has none yet; false when
    /// the s32 offsets are used up.
    pub fn add(&mut self, file: &str, line: u32, column: u32) -> bool {
        let key = (file.to_owned(), line, column);
        if self.offsets.contains_key(&key) {
            return true;
        }
        let next = (self.offsets.len() as u64 + 1) * SPACING;
        let Ok(offset) = i32::try_from(next) else {
            return false;
        };
        self.offsets.insert(key, offset);
        true
    }

    /// The offset of a location's symbol from `_stext` (0, `_stext`
    /// itself, for one never added).
    pub fn offset_of(&self, file: &str, line: u32, column: u32) -> i32 {
        self.offsets
            .get(&(file.to_owned(), line, column))
            .copied()
            .unwrap_or(0)
    }

    /// The text of the kallsyms section: `ADDRESS t NAME` lines, in address
    /// order. A name is `file:line:column` with white space made `_` (a
    /// kallsyms line splits on it).
    pub fn kallsyms(&self) -> String {
        let mut lines: Vec<(u64, String)> = self
            .offsets
            .iter()
            .map(|((file, line, column), &offs)| {
                let name: String = format!("{file}:{line}:{column}")
                    .chars()
                    .map(|c| if c.is_whitespace() { '_' } else { c })
                    .collect();
                (STEXT + offs as u64, name)
            })
            .collect();
        if lines.is_empty() {
            return String::new();
        }
        lines.push((STEXT, "_stext".to_owned()));
        lines.sort();
        lines
            .into_iter()
            .map(|(addr, name)| {
                let kind = if name == "_stext" { 'T' } else { 't' };
                format!("{addr:016x} {kind} {name}\n")
            })
            .collect()
    }
}
