//! The metadata annex in a ring file (see [`crate::annex`]): its views
//! for the writer, and reading it back in a recovery, where its bytes
//! cannot be trusted.
//!
//! ```text
//!   annex_offset      committed length, u64: bytes of whole records
//!   annex_offset + 8  len u32 LE | bytes | len u32 LE | bytes | ...
//!                     (up to annex_capacity bytes; past the committed
//!                      length: zeros, or a record a crash left torn)
//! ```

use super::header::FileHeader;
use super::read::Source;
use super::FileError;
use crate::annex::COMMITTED_WORD;
use std::path::Path;

/// What a recovery found in a file's annex: the records before any
/// damage, and the damage in words.
pub(crate) struct Recovered {
    pub records: Vec<Vec<u8>>,
    pub problems: Vec<String>,
}

/// Reads the annex of the file `source` with header `h`. A committed
/// length past the capacity is clamped to it; a record running past the
/// committed length, an empty one, or the file's end inside the annex
/// stop the reading there. Each is a problem in words, and the records
/// before it are kept. Never panics, whatever the bytes.
pub(crate) fn read(source: &Source, h: &FileHeader, path: &Path) -> Result<Recovered, FileError> {
    let mut out = Recovered {
        records: Vec::new(),
        problems: Vec::new(),
    };
    let (offset, capacity) = (h.layout.annex_offset, h.layout.annex_capacity);
    if capacity == 0 {
        return Ok(out); // no annex (or a version 1 file)
    }
    let word = source.read_at(offset, COMMITTED_WORD, path)?;
    let Ok(word) = <[u8; 8]>::try_from(word.as_slice()) else {
        out.problems.push(format!(
            "the file ends before the metadata annex's committed length (byte {offset})"
        ));
        return Ok(out);
    };
    let committed = u64::from_le_bytes(word);
    let end = if committed > capacity {
        out.problems.push(format!(
            "the metadata annex's committed length {committed} is past its capacity of {capacity} bytes: the word is corrupt; records are read up to the capacity"
        ));
        capacity
    } else {
        committed
    };
    // Read after the word: an append stores its record before the word,
    // so every byte the word covers is written. (A forged length is
    // bounded by the file: `read_at` reads what is there.)
    let want = usize::try_from(end).unwrap_or(usize::MAX);
    let start = offset.saturating_add(COMMITTED_WORD as u64);
    let framed = source.read_at(start, want, path)?;
    if framed.len() < want {
        out.problems.push(format!(
            "the file ends inside the metadata annex, after {} of its {end} committed bytes",
            framed.len()
        ));
    }
    let (records, stopped) = crate::annex::parse(&framed);
    if let Some(why) = stopped {
        let n = records.len();
        out.problems.push(format!(
            "the metadata annex is damaged at {why}; the {n} record{} before it {} kept",
            if n == 1 { "" } else { "s" },
            if n == 1 { "is" } else { "are" }
        ));
    }
    out.records = records;
    Ok(out)
}

/// The writer's annex over `map`, laid out by `layout`: empty in a new
/// file, the earlier runs' records in a file appended to (or what is
/// wrong with them). `file` (the mapped file) is what appends lock
/// against a forked process's.
#[cfg(not(loom))]
pub(crate) fn in_map(
    map: &std::sync::Arc<memmap2::MmapMut>,
    layout: &super::FileLayout,
    file: Option<std::fs::File>,
) -> Result<crate::annex::Annex, String> {
    let capacity = usize::try_from(layout.annex_capacity)
        .map_err(|_| format!("{} bytes do not fit in memory", layout.annex_capacity))?;
    if capacity == 0 {
        return Ok(crate::annex::Annex::in_memory(0));
    }
    let at = usize::try_from(layout.annex_offset).map_err(|e| e.to_string())?;
    let failed = |e: crate::page::zeroed::ZeroedError| e.reason;
    let committed = crate::page::zeroed::ZeroedBox::from_slice(
        crate::page::zeroed::ZeroedSlice::in_file(map, at, 1).map_err(failed)?,
    )
    .map_err(failed)?;
    let bytes = crate::page::zeroed::ZeroedSlice::in_file(map, at + COMMITTED_WORD, capacity)
        .map_err(failed)?;
    let lock = file.map(|f| (f, layout.annex_offset));
    let store = crate::annex::FileStore::adopt(committed, bytes, lock)?;
    Ok(crate::annex::Annex::in_file(store))
}
