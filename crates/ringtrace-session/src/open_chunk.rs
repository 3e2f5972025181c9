//! The chunk being written for one CPU buffer: a `.open` file that grows
//! entry by entry with one positioned write each (so a killed writer
//! loses nothing already appended), and its finish into a `.chunk`.

use crate::chunk::{self, ChunkHeader, FLAG_FINISHED, FLAG_ZSTD, HEADER_LEN};
use crate::fsutil;
use crate::options::Compression;
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A chunk file's name: its number, 8 digits, and `chunk` or `open`.
pub(crate) fn file_name(number: u32, ext: &str) -> String {
    format!("{number:08}.{ext}")
}

/// What a finished chunk holds, for the index and `max_size`.
#[derive(Debug, Clone)]
pub(crate) struct Done {
    pub path: PathBuf,
    pub number: u32,
    pub pages: u64,
    pub events: u64,
    pub raw_bytes: u64,
    pub disk_bytes: u64,
    /// Bytes the `.open` file had (counted on disk until now).
    pub open_bytes: u64,
    pub last_ts: u64,
    /// Events its pages' headers said were lost (`lost`).
    pub page_lost: u64,
    /// Events its loss entries said were lost, by cause (the order of
    /// `LossCause::ALL`).
    pub lost_by_cause: [u64; 4],
}

/// A failed step: the file and the step, with the system's error.
pub(crate) type Failed = (PathBuf, &'static str, io::Error);

/// The chunk being written.
#[derive(Debug)]
pub(crate) struct OpenChunk {
    path: PathBuf,
    file: File,
    header: ChunkHeader,
    /// Bytes of the file (header and whole entries).
    len: u64,
    body_checksum: crc32fast::Hasher,
    index: Vec<(u64, u64)>,
    first_ts: Option<u64>,
    pub pages: u64,
    pub events: u64,
    /// What its entries say was lost: pages' `lost`, loss entries by
    /// cause (kept for `max_size`, which counts them when it deletes it).
    pub page_lost: u64,
    pub lost_by_cause: [u64; 4],
    opened: Instant,
}

impl OpenChunk {
    /// Creates `dir/NNNNNNNN.open` with its header: `header` says whose
    /// it is (pid, start, cpu, page size, clock) and its number.
    pub fn create(dir: &Path, header: ChunkHeader) -> Result<OpenChunk, Failed> {
        let path = dir.join(file_name(header.number, "open"));
        let _ = fs::remove_file(&path); // a crash's leftover of this number
        let file = fsutil::create_new(&path).map_err(|e| (path.clone(), "create", e))?;
        let bytes = header.encode();
        if let Err(e) = file.write_all_at(&bytes, 0) {
            let _ = fs::remove_file(&path);
            return Err((path, "write", e));
        }
        Ok(OpenChunk {
            path,
            file,
            header,
            len: HEADER_LEN as u64,
            body_checksum: crc32fast::Hasher::new(),
            index: Vec::new(),
            first_ts: None,
            pages: 0,
            events: 0,
            page_lost: 0,
            lost_by_cause: [0; 4],
            opened: Instant::now(),
        })
    }

    /// Bytes of entries so far.
    pub fn body_len(&self) -> u64 {
        self.len - HEADER_LEN as u64
    }

    /// Since it was created.
    pub fn age(&self) -> std::time::Duration {
        self.opened.elapsed()
    }

    /// Appends entries (already encoded, one after the other in `bytes`)
    /// with one write: `entries` gives each one's offset in `bytes` and
    /// its times (first, last). On failure the file is cut back to its
    /// whole entries and none is appended, so a later append goes on from
    /// there.
    pub fn append_run(
        &mut self,
        bytes: &[u8],
        entries: impl Iterator<Item = (u64, u64, u64)>,
    ) -> Result<(), Failed> {
        if let Err(e) = self.file.write_all_at(bytes, self.len) {
            let _ = self.file.set_len(self.len);
            return Err((self.path.clone(), "write", e));
        }
        let body = self.body_len();
        for (offset, first, last) in entries {
            self.index.push((body + offset, first));
            self.first_ts.get_or_insert(first);
            self.header.last_ts = self.header.last_ts.max(last);
        }
        self.len += bytes.len() as u64;
        self.body_checksum.update(bytes);
        Ok(())
    }

    /// Finishes the chunk and renames it `NNNNNNNN.chunk`: the caller
    /// drops it then. Uncompressed, in place: the index is appended, the
    /// header rewritten as a finished one's, the file renamed (no byte of
    /// the body is copied, nothing waits for the disk). Compressed, the
    /// body is read back, compressed, and written under a temporary name
    /// renamed into place, the `.open` removed. On failure the `.open` is
    /// left as it was (still read as an open chunk) and can be appended to
    /// and finished again.
    pub fn finish(&self, compression: Compression) -> Result<Done, Failed> {
        match compression {
            Compression::None => self.finish_in_place(),
            Compression::Zstd { level } => self.finish_compressed(level),
        }
    }

    /// The finished header for a body stored as `stored_len` bytes.
    fn finished_header(&self, flags: u32, stored_len: u64) -> ChunkHeader {
        ChunkHeader {
            flags: flags | FLAG_FINISHED,
            first_ts: self.first_ts.unwrap_or(0),
            entries: self.index.len() as u64,
            body_len: self.body_len(),
            stored_len,
            body_checksum: u64::from(self.body_checksum.clone().finalize()),
            ..self.header.clone()
        }
    }

    fn finished_path(&self) -> PathBuf {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        dir.join(file_name(self.header.number, "chunk"))
    }

    fn finish_in_place(&self) -> Result<Done, Failed> {
        let index = chunk::encode_index(&self.index);
        let header = self.finished_header(0, self.body_len());
        let path = self.finished_path();
        // Index, then header, then the rename that makes it a chunk. A
        // crash before the rename leaves a `.open` that reads whole: up
        // to its last entry (the index after it is recognised), or, once
        // the header is written, as the finished chunk it is.
        let undo = |step: &'static str, e: io::Error| {
            let _ = self.file.write_all_at(&self.header.encode(), 0);
            let _ = self.file.set_len(self.len);
            (self.path.clone(), step, e)
        };
        self.file
            .write_all_at(&index, self.len)
            .map_err(|e| undo("write", e))?;
        self.file
            .write_all_at(&header.encode(), 0)
            .map_err(|e| undo("write", e))?;
        fs::rename(&self.path, &path).map_err(|e| undo("rename into place", e))?;
        let disk_bytes = self.len + index.len() as u64;
        Ok(self.done(path, disk_bytes, header.last_ts))
    }

    fn finish_compressed(&self, level: i32) -> Result<Done, Failed> {
        let mut body = vec![0u8; self.body_len() as usize];
        self.file
            .read_exact_at(&mut body, HEADER_LEN as u64)
            .map_err(|e| (self.path.clone(), "read back", e))?;
        let stored =
            chunk::compress(&body, level).map_err(|e| (self.path.clone(), "compress", e))?;
        let header = self.finished_header(FLAG_ZSTD, stored.len() as u64);
        let bytes = [header.encode(), stored, chunk::encode_index(&self.index)].concat();
        let path = self.finished_path();
        fsutil::replace(&path, &bytes)?;
        // Once the chunk is in place, the `.open` is a copy a reader skips.
        let _ = fs::remove_file(&self.path);
        Ok(self.done(path, bytes.len() as u64, header.last_ts))
    }

    fn done(&self, path: PathBuf, disk_bytes: u64, last_ts: u64) -> Done {
        Done {
            path,
            number: self.header.number,
            pages: self.pages,
            events: self.events,
            raw_bytes: self.body_len(),
            disk_bytes,
            open_bytes: self.len,
            last_ts,
            page_lost: self.page_lost,
            lost_by_cause: self.lost_by_cause,
        }
    }
}
