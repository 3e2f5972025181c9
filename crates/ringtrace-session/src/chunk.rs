//! The chunk file's bytes: its header, its entries, and the index of a
//! finished chunk; both ways. No I/O here. docs/format.md, "The session
//! directory", is the byte-by-byte description.

use crate::codec::{bad, crc32, Bad, Put, Take};
use crate::loss::LossCause;
use crate::options::MAX_ROTATE_SIZE;

/// The first eight bytes of every chunk.
pub(crate) const MAGIC: [u8; 8] = *b"RTCHUNK\0";
/// The chunk format this build writes (version 2 added fill entries);
/// it reads this one and [`OLDEST_VERSION`].
pub(crate) const VERSION: u32 = 2;
/// The oldest chunk format this build reads.
pub(crate) const OLDEST_VERSION: u32 = 1;
/// Bytes of the fixed header.
pub(crate) const HEADER_LEN: usize = 160;
/// The body is one zstd frame.
pub(crate) const FLAG_ZSTD: u32 = 1;
/// A finished chunk: counts, times and the index are filled in.
pub(crate) const FLAG_FINISHED: u32 = 2;
/// Bytes before each entry's payload: kind, 3 zero bytes, length,
/// checksum.
pub(crate) const ENTRY_PREFIX: usize = 16;
/// An entry holding a page.
pub(crate) const KIND_PAGE: u8 = 1;
/// An entry holding a loss.
pub(crate) const KIND_LOSS: u8 = 2;
/// A loss entry's payload: ts, count, cause, zero.
pub(crate) const LOSS_LEN: usize = 24;
/// An entry holding a fill sample (version 2).
pub(crate) const KIND_FILL: u8 = 3;
/// A fill entry's payload: ts, pages, capacity, zero.
pub(crate) const FILL_LEN: usize = 24;
/// Longest clock name kept in a chunk header.
const CLOCK_NAME: usize = 63;
/// The largest body a reader decompresses: past the writer's largest
/// rotation size with room for the entry that crossed it.
pub(crate) const MAX_BODY: u64 = 2 << 30;
/// The largest body a writer leaves in a chunk: it rotates once the body
/// reaches [`MAX_ROTATE_SIZE`] at most, so the body is below it before its
/// last entry, the longest a page of `MAX_PAGE_SIZE` bytes with its prefix.
const MAX_WRITTEN_BODY: u64 =
    MAX_ROTATE_SIZE - 1 + (ENTRY_PREFIX + ringtrace_ring::config::MAX_PAGE_SIZE) as u64;
/// The shortest entry: a prefix and the shortest payload (a loss or fill
/// entry's; a page is longer).
const MIN_ENTRY: u64 = (ENTRY_PREFIX + LOSS_LEN) as u64;
/// The most bytes a chunk file holds, finished or open (about 1.4 GiB):
/// its header; its body, at most [`MAX_WRITTEN_BODY`], stored as it is or
/// as a zstd frame of at most zstd's `ZSTD_COMPRESSBOUND` of it; and its
/// index, a count, 16 bytes per entry and a checksum. A reader refuses a
/// larger file unread. (A `.open` whose finishes kept failing can grow
/// past its rotation size: past this only with a `rotate_size` near
/// [`MAX_ROTATE_SIZE`].)
pub(crate) const MAX_FILE: u64 = HEADER_LEN as u64
    + MAX_WRITTEN_BODY
    + (MAX_WRITTEN_BODY >> 8)
    + 16
    + 16 * (MAX_WRITTEN_BODY / MIN_ENTRY);

/// A chunk's fixed header.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ChunkHeader {
    pub flags: u32,
    pub pid: u32,
    pub cpu: u32,
    pub page_size: u32,
    pub number: u32,
    pub start: u64,
    pub first_ts: u64,
    pub last_ts: u64,
    pub entries: u64,
    pub body_len: u64,
    pub stored_len: u64,
    pub body_checksum: u64,
    pub clock: String,
}

impl ChunkHeader {
    /// Its [`HEADER_LEN`] bytes, checksum last.
    pub fn encode(&self) -> Vec<u8> {
        let mut p = Put(Vec::with_capacity(HEADER_LEN));
        p.0.extend_from_slice(&MAGIC);
        p.u32(VERSION);
        p.u32(self.flags);
        p.u32(self.pid);
        p.u32(self.cpu);
        p.u32(self.page_size);
        p.u32(self.number);
        for v in [
            self.start,
            self.first_ts,
            self.last_ts,
            self.entries,
            self.body_len,
            self.stored_len,
            self.body_checksum,
        ] {
            p.u64(v);
        }
        let mut end = self.clock.len().min(CLOCK_NAME);
        while !self.clock.is_char_boundary(end) {
            end -= 1;
        }
        p.u8(end as u8);
        p.0.extend_from_slice(&self.clock.as_bytes()[..end]);
        p.0.resize(HEADER_LEN - 8, 0);
        p.checksum();
        p.0
    }

    /// Reads and checks a header from the first [`HEADER_LEN`] bytes.
    pub fn decode(bytes: &[u8]) -> Result<ChunkHeader, Bad> {
        let bytes = bytes.get(..HEADER_LEN).ok_or_else(|| {
            bad(
                "header",
                format!(
                    "the file is {} bytes, shorter than a chunk header ({HEADER_LEN})",
                    bytes.len()
                ),
            )
        })?;
        let mut t = Take::new(bytes);
        if t.bytes(8, "magic")? != MAGIC {
            return Err(bad("magic", "not a ringtrace chunk"));
        }
        let version = t.u32("version")?;
        if !(OLDEST_VERSION..=VERSION).contains(&version) {
            return Err(bad(
                "version",
                format!("{version}; this build reads versions {OLDEST_VERSION} to {VERSION}"),
            ));
        }
        let mut h = ChunkHeader {
            flags: t.u32("flags")?,
            pid: t.u32("pid")?,
            cpu: t.u32("cpu")?,
            page_size: t.u32("page size")?,
            number: t.u32("number")?,
            start: t.u64("start")?,
            first_ts: t.u64("first timestamp")?,
            last_ts: t.u64("last timestamp")?,
            entries: t.u64("entries")?,
            body_len: t.u64("body length")?,
            stored_len: t.u64("stored length")?,
            body_checksum: t.u64("body checksum")?,
            clock: String::new(),
        };
        let len = usize::from(t.u8("clock name")?);
        if len > CLOCK_NAME {
            return Err(bad("clock name", format!("{len} bytes, past {CLOCK_NAME}")));
        }
        h.clock = String::from_utf8(t.bytes(len, "clock name")?.to_vec())
            .map_err(|_| bad("clock name", "not UTF-8"))?;
        t.bytes(HEADER_LEN - 8 - t.at, "padding")?;
        t.checksum()?;
        Ok(h)
    }
}

/// An entry's bytes: prefix, then payload.
#[cfg(test)]
pub(crate) fn encode_entry(kind: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    append_entry_to(&mut out, kind, payload);
    out
}

/// An entry's bytes appended to `out`.
pub(crate) fn append_entry_to(out: &mut Vec<u8>, kind: u8, payload: &[u8]) {
    let mut p = Put(std::mem::take(out));
    p.0.reserve(ENTRY_PREFIX + payload.len());
    p.u8(kind);
    p.0.extend_from_slice(&[0; 3]);
    p.u32(payload.len() as u32);
    p.u64(crc32(payload));
    p.0.extend_from_slice(payload);
    *out = p.0;
}

/// A loss entry's payload.
pub(crate) fn loss_payload(ts: u64, count: u64, cause: LossCause) -> Vec<u8> {
    let mut p = Put(Vec::with_capacity(LOSS_LEN));
    p.u64(ts);
    p.u64(count);
    p.u32(cause.code());
    p.u32(0);
    p.0
}

/// A fill entry's payload: at `ts`, `pages` of the buffer's `capacity`
/// were waiting for the reader.
pub(crate) fn fill_payload(ts: u64, pages: u32, capacity: u32) -> Vec<u8> {
    let mut p = Put(Vec::with_capacity(FILL_LEN));
    p.u64(ts);
    p.u32(pages);
    p.u32(capacity);
    p.u64(0);
    p.0
}

/// The index of a finished chunk: each entry's offset in the body and its
/// time, then a checksum.
pub(crate) fn encode_index(index: &[(u64, u64)]) -> Vec<u8> {
    let mut p = Put(Vec::with_capacity(16 + 16 * index.len()));
    p.u64(index.len() as u64);
    for &(offset, ts) in index {
        p.u64(offset);
        p.u64(ts);
    }
    p.checksum();
    p.0
}

/// An entry read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Entry {
    /// A page's bytes.
    Page(Vec<u8>),
    /// A loss.
    Loss {
        ts: u64,
        count: u64,
        cause: LossCause,
    },
    /// How full the buffer was when a drain round read it.
    Fill { ts: u64, pages: u32, capacity: u32 },
}

/// A chunk read back: its header, its entries, and what stopped the
/// reading early (the entries before it are kept).
#[derive(Debug, Default)]
pub(crate) struct ReadChunk {
    pub header: ChunkHeader,
    pub entries: Vec<Entry>,
    pub problem: Option<String>,
}

/// Entries of `body` in order with their offsets. `open`: the body of a
/// chunk being written, whose last entry may be torn (then left out,
/// silently); else every byte must be whole entries.
fn entries(body: &[u8], open: bool) -> (Vec<(u64, Entry)>, Option<String>) {
    let mut out = Vec::new();
    let mut t = Take::new(body);
    while t.at < body.len() {
        let at = t.at;
        // An open chunk whose finish stopped after appending the index:
        // the rest is exactly the index of the entries before it.
        if open && body.len() - at == 16 + 16 * out.len() && check_index(&body[at..], &out).is_ok()
        {
            break;
        }
        let prefix = t.bytes(ENTRY_PREFIX, "entry");
        let Ok(prefix) = prefix else {
            return (
                out,
                (!open).then(|| format!("the body ends inside an entry's prefix at byte {at}")),
            );
        };
        let kind = prefix[0];
        let len = u32::from_le_bytes([prefix[4], prefix[5], prefix[6], prefix[7]]) as usize;
        let mut sum = [0u8; 8];
        sum.copy_from_slice(&prefix[8..16]);
        let Ok(payload) = t.bytes(len, "entry") else {
            return (
                out,
                (!open).then(|| format!("the entry at byte {at} runs past the body's end")),
            );
        };
        if crc32(payload) != u64::from_le_bytes(sum) {
            // The last entry of an open chunk, torn by a crash.
            let torn = open && t.at == body.len();
            return (
                out,
                (!torn).then(|| format!("the entry at byte {at} does not match its checksum")),
            );
        }
        let entry = match kind {
            KIND_PAGE if len < ringtrace_ring::format::PAGE_HEADER => {
                return (
                    out,
                    Some(format!(
                        "the page entry at byte {at} is {len} bytes, shorter than a page header"
                    )),
                );
            }
            KIND_PAGE => Entry::Page(payload.to_vec()),
            KIND_LOSS => {
                let mut l = Take::new(payload);
                let read = (|| -> Result<_, Bad> {
                    Ok((l.u64("ts")?, l.u64("count")?, l.u32("cause")?))
                })();
                let Ok((ts, count, code)) = read else {
                    return (
                        out,
                        Some(format!(
                            "the loss entry at byte {at} is {len} bytes, not {LOSS_LEN}"
                        )),
                    );
                };
                let Some(cause) = LossCause::from_code(code) else {
                    return (
                        out,
                        Some(format!(
                            "the loss entry at byte {at} has cause {code}, not 1 to 4"
                        )),
                    );
                };
                Entry::Loss { ts, count, cause }
            }
            KIND_FILL => {
                let mut f = Take::new(payload);
                let read = (|| -> Result<_, Bad> {
                    Ok((f.u64("ts")?, f.u32("pages")?, f.u32("capacity")?))
                })();
                let (Ok((ts, pages, capacity)), FILL_LEN) = (read, len) else {
                    return (
                        out,
                        Some(format!(
                            "the fill entry at byte {at} is {len} bytes, not {FILL_LEN}"
                        )),
                    );
                };
                Entry::Fill {
                    ts,
                    pages,
                    capacity,
                }
            }
            other => {
                return (
                    out,
                    Some(format!(
                        "the entry at byte {at} is of kind {other}, not 1 (page), 2 (loss) or 3 (fill)"
                    )),
                );
            }
        };
        out.push((at as u64, entry));
    }
    (out, None)
}

/// Reads a chunk file's bytes. `open`: a `.open` chunk (raw, entries up to
/// the last whole one); else a finished chunk, which must be whole. An
/// error (a header that cannot be read, a body that cannot be) reads no
/// entry; damage after some entries keeps those before it. Never panics.
pub(crate) fn read(bytes: &[u8], open: bool) -> Result<ReadChunk, String> {
    let header = ChunkHeader::decode(bytes).map_err(|b| format!("{}: {}", b.field, b.why))?;
    let rest = &bytes[HEADER_LEN..];
    // A `.open` with a finished header (a finish that stopped before its
    // rename: the chunk is whole) is read below, as the finished chunk it
    // is.
    if open && header.flags & FLAG_FINISHED == 0 {
        let (entries, problem) = entries(rest, true);
        return Ok(ReadChunk {
            header,
            entries: entries.into_iter().map(|(_, e)| e).collect(),
            problem,
        });
    }
    if header.flags & FLAG_FINISHED == 0 {
        return Err("its header is an open chunk's, not a finished one's".to_owned());
    }
    let stored_len = usize::try_from(header.stored_len)
        .ok()
        .filter(|&l| l <= rest.len())
        .ok_or_else(|| {
            format!(
                "it is cut off: its body is {} bytes, {} are left",
                header.stored_len,
                rest.len()
            )
        })?;
    let stored = &rest[..stored_len];
    if header.body_len > MAX_BODY {
        return Err(format!(
            "its body of {} bytes is past the {MAX_BODY} a reader takes",
            header.body_len
        ));
    }
    let body = if header.flags & FLAG_ZSTD != 0 {
        decompress(stored, header.body_len as usize)?
    } else {
        stored.to_vec()
    };
    if body.len() as u64 != header.body_len {
        return Err(format!(
            "its body is {} bytes, its header says {}",
            body.len(),
            header.body_len
        ));
    }
    if crc32(&body) != header.body_checksum {
        return Err("its body does not match its checksum".to_owned());
    }
    let (found, mut problem) = entries(&body, false);
    if problem.is_none() && found.len() as u64 != header.entries {
        problem = Some(format!(
            "it holds {} entries, its header says {}",
            found.len(),
            header.entries
        ));
    }
    if problem.is_none() {
        problem = check_index(&rest[stored_len..], &found).err();
    }
    Ok(ReadChunk {
        header,
        entries: found.into_iter().map(|(_, e)| e).collect(),
        problem,
    })
}

/// The index must list each entry's offset, in order.
fn check_index(bytes: &[u8], found: &[(u64, Entry)]) -> Result<(), String> {
    let mut t = Take::new(bytes);
    let read = (|| -> Result<Vec<u64>, Bad> {
        let n = t.u64("index count")?;
        if n != found.len() as u64 {
            return Err(bad(
                "index count",
                format!("{n}, for {} entries", found.len()),
            ));
        }
        let mut offsets = Vec::new();
        for _ in 0..n {
            offsets.push(t.u64("index offset")?);
            t.u64("index time")?;
        }
        t.checksum()?;
        Ok(offsets)
    })();
    match read {
        Err(b) => Err(format!("its index is damaged: {}: {}", b.field, b.why)),
        Ok(offsets) if offsets.iter().ne(found.iter().map(|(o, _)| o)) => {
            Err("its index does not list its entries' offsets".to_owned())
        }
        Ok(_) => Ok(()),
    }
}

#[cfg(feature = "zstd")]
fn decompress(stored: &[u8], len: usize) -> Result<Vec<u8>, String> {
    // One byte over, so that a frame longer than the header says shows.
    zstd::bulk::decompress(stored, len.saturating_add(1))
        .map_err(|e| format!("its zstd body cannot be decompressed: {e}"))
}

#[cfg(not(feature = "zstd"))]
fn decompress(_: &[u8], _: usize) -> Result<Vec<u8>, String> {
    Err("its body is zstd-compressed, and this build has no zstd (the `zstd` feature)".to_owned())
}

/// `body` compressed as one zstd frame.
#[cfg(feature = "zstd")]
pub(crate) fn compress(body: &[u8], level: i32) -> std::io::Result<Vec<u8>> {
    zstd::bulk::compress(body, level)
}

/// Without zstd, nothing asks for compression (the options refuse it).
#[cfg(not(feature = "zstd"))]
pub(crate) fn compress(body: &[u8], _: i32) -> std::io::Result<Vec<u8>> {
    Ok(body.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finished(entries: &[Vec<u8>], flags: u32) -> Vec<u8> {
        let body: Vec<u8> = entries.concat();
        let mut index = Vec::new();
        let mut at = 0u64;
        for e in entries {
            index.push((at, 5));
            at += e.len() as u64;
        }
        let stored = if flags & FLAG_ZSTD != 0 {
            compress(&body, 3).unwrap()
        } else {
            body.clone()
        };
        let header = ChunkHeader {
            flags: flags | FLAG_FINISHED,
            entries: entries.len() as u64,
            body_len: body.len() as u64,
            stored_len: stored.len() as u64,
            body_checksum: crc32(&body),
            clock: "mono".into(),
            ..ChunkHeader::default()
        };
        [header.encode(), stored, encode_index(&index)].concat()
    }

    #[test]
    fn a_finished_chunk_reads_back_its_entries() {
        let page = encode_entry(KIND_PAGE, &[3; 48]);
        let loss = encode_entry(KIND_LOSS, &loss_payload(9, 3, LossCause::Refused));
        let want = vec![
            Entry::Page(vec![3; 48]),
            Entry::Loss {
                ts: 9,
                count: 3,
                cause: LossCause::Refused,
            },
        ];
        for flags in [0, if cfg!(feature = "zstd") { FLAG_ZSTD } else { 0 }] {
            let bytes = finished(&[page.clone(), loss.clone()], flags);
            let read = read(&bytes, false).unwrap();
            assert_eq!(read.entries, want);
            assert_eq!(read.problem, None);
            assert_eq!(read.header.clock, "mono");
            assert!(super::read(&bytes[..bytes.len() - 1], false)
                .unwrap()
                .problem
                .is_some());
            assert!(super::read(&bytes[..HEADER_LEN + 3], false).is_err());
        }
    }

    #[test]
    fn an_open_chunk_reads_up_to_its_last_whole_entry() {
        let header = ChunkHeader {
            clock: "tsc".into(),
            ..ChunkHeader::default()
        };
        let page = encode_entry(KIND_PAGE, &[7; 40]);
        let bytes = [header.encode(), page.clone(), page.clone()].concat();
        for cut in HEADER_LEN..=bytes.len() {
            let read = read(&bytes[..cut], true).unwrap();
            let whole = (cut - HEADER_LEN) / page.len();
            assert_eq!(read.entries.len(), whole, "cut at {cut}");
            assert_eq!(read.problem, None, "a torn tail is no problem");
        }
        let mut zeroed = bytes.clone();
        let last = zeroed.len() - 1;
        zeroed[last] = 0;
        assert_eq!(read(&zeroed, true).unwrap().entries.len(), 1);
        zeroed[HEADER_LEN + ENTRY_PREFIX] ^= 1; // the first entry: damage
        let read = read(&zeroed, true).unwrap();
        assert!(read.entries.is_empty() && read.problem.is_some());
    }

    #[test]
    fn an_open_chunk_whose_finish_stopped_reads_whole() {
        let page = encode_entry(KIND_PAGE, &[7; 40]);
        let loss = encode_entry(KIND_LOSS, &loss_payload(9, 3, LossCause::Refused));
        let body = [page.clone(), loss.clone(), page.clone()].concat();
        let index = encode_index(&[
            (0, 1),
            (page.len() as u64, 9),
            ((page.len() + loss.len()) as u64, 2),
        ]);
        let open = ChunkHeader {
            clock: "mono".into(),
            ..ChunkHeader::default()
        };
        // Stopped after the index was appended: the index is no entry.
        let bytes = [open.encode(), body.clone(), index.clone()].concat();
        let read = read(&bytes, true).unwrap();
        assert_eq!(read.entries.len(), 3);
        assert_eq!(read.problem, None);
        // An index of other entries is damage, named.
        let other = encode_index(&[(0, 1)]);
        let bytes = [open.encode(), body.clone(), other].concat();
        assert!(super::read(&bytes, true).unwrap().problem.is_some());
        // Stopped after the header was rewritten: a finished chunk.
        let finished = ChunkHeader {
            flags: FLAG_FINISHED,
            entries: 3,
            body_len: body.len() as u64,
            stored_len: body.len() as u64,
            body_checksum: crc32(&body),
            ..open.clone()
        };
        let bytes = [finished.encode(), body, index].concat();
        let read = super::read(&bytes, true).unwrap();
        assert_eq!(read.entries.len(), 3);
        assert_eq!(read.problem, None);
        assert_eq!(read.header.flags, FLAG_FINISHED);
    }

    #[test]
    fn a_header_names_what_is_wrong() {
        let mut h = ChunkHeader::default().encode();
        assert!(ChunkHeader::decode(&h).is_ok());
        h[0] = b'X';
        assert_eq!(ChunkHeader::decode(&h).unwrap_err().field, "magic");
        let mut h = ChunkHeader::default().encode();
        h[30] ^= 1;
        assert_eq!(ChunkHeader::decode(&h).unwrap_err().field, "checksum");
        assert_eq!(ChunkHeader::decode(&h[..10]).unwrap_err().field, "header");
    }
}
