//! The file header: what a reader needs to make sense of a ring file
//! without the program that wrote it. Fields are little-endian, in the
//! order `encode` writes them, and end with an FNV-1a checksum of the
//! bytes before it.

use super::layout::FileLayout;
use crate::config::Mode;
use ringtrace_clock::{ClockInfo, Guarantee, TickConversion};

/// The first eight bytes of every ring file.
pub const MAGIC: [u8; 8] = *b"RINGTRC\0";
/// The format version this build writes (and the newest it reads).
/// Version 2 added the metadata annex: two layout words, its offset and
/// capacity. Version 3 counts hits per page too, beside each commit word
/// (the rseq write path's, see `meta::CommitLine`): a reader sums them with
/// the hot line's `hit`, which an older reader would not.
pub const VERSION: u32 = 3;
/// The oldest format version this build reads: a version 1 file recovers
/// (with no metadata records), but is not appended to.
pub const OLDEST_VERSION: u32 = 1;
/// Layout words in the header: 11 in version 1, 13 since the annex.
fn layout_words(version: u32) -> usize {
    if version >= 2 {
        13
    } else {
        11
    }
}
/// Written in the machine's own byte order: a reader on a machine of the
/// other order reads it reversed.
pub const BYTE_ORDER_MARK: u32 = 0x0102_0304;
/// Longest clock name and command name kept.
const MAX_NAME: usize = 64;

/// The clock a ring file was stamped with.
#[derive(Debug, Clone, PartialEq)]
pub struct FileClock {
    /// Its name (`tsc@irq`, `mono`, ...).
    pub name: String,
    /// Ticks per second; `None` when ticks are not time.
    pub frequency_hz: Option<u64>,
    /// The tick to ns multiplier (`ns = ticks * mult >> shift`, rounded);
    /// `None` when ticks are not time.
    pub mult: Option<u64>,
    /// The shift that goes with `mult`.
    pub shift: u32,
    /// Whether one tick is one nanosecond.
    pub ticks_are_ns: bool,
    /// How far readings are ordered.
    pub guarantee: Guarantee,
    /// Nominal resolution, ns.
    pub precision_ns: Option<f64>,
}

impl FileClock {
    /// What `info` says, as recorded.
    pub fn from_info(info: &ClockInfo) -> FileClock {
        FileClock {
            name: info.name.clone(),
            frequency_hz: info.frequency_hz,
            mult: info.conversion.map(|c| c.mult()),
            shift: TickConversion::SHIFT,
            ticks_are_ns: info.ticks_are_ns,
            guarantee: info.guarantee,
            precision_ns: info.precision_ns,
        }
    }

    /// Nanoseconds in `ticks`, by the recorded conversion (rounded to
    /// nearest), or `None` when ticks are not time.
    pub fn ticks_to_ns(&self, ticks: u64) -> Option<u64> {
        let mult = self.mult?;
        if self.shift == 0 || self.shift > 63 {
            return None;
        }
        let half = 1u128 << (self.shift - 1);
        let ns = (u128::from(ticks) * u128::from(mult) + half) >> self.shift;
        Some(u64::try_from(ns).unwrap_or(u64::MAX))
    }
}

/// Everything in a ring file's header.
#[derive(Debug, Clone, PartialEq)]
pub struct FileHeader {
    /// The format version.
    pub version: u32,
    /// Bytes per page.
    pub page_size: usize,
    /// Pages in each CPU buffer's ring.
    pub pages_per_cpu: usize,
    /// CPU buffers.
    pub cpus: usize,
    /// Quarantine pages per CPU buffer.
    pub quarantine_pages: usize,
    /// Overwrite or discard.
    pub mode: Mode,
    /// Where everything is.
    pub layout: FileLayout,
    /// The clock events are stamped with.
    pub clock: FileClock,
    /// A CLOCK_REALTIME reading, ns since the Unix epoch...
    pub wall_ns: u64,
    /// ...and the clock's reading taken with it: an event at `ticks` was
    /// recorded at about `wall_ns + ns(ticks - anchor_ticks)`.
    pub anchor_ticks: u64,
    /// The writing process.
    pub pid: u32,
    /// Its command name (`/proc/self/comm`).
    pub comm: String,
    /// FNV-1a 64 of the metadata.
    pub metadata_checksum: u64,
}

/// FNV-1a, 64 bits.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xCBF2_9CE4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3)
    })
}

struct Put(Vec<u8>);

impl Put {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        let mut end = s.len().min(MAX_NAME);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.0.push(end as u8);
        self.0.extend_from_slice(&s.as_bytes()[..end]);
    }
}

/// Reads fields in order, failing with the field's name when the bytes run
/// out.
struct Take<'a> {
    bytes: &'a [u8],
    at: usize,
}

/// Why a header could not be read: which field, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HeaderProblem {
    pub field: &'static str,
    pub why: String,
}

fn problem(field: &'static str, why: impl Into<String>) -> HeaderProblem {
    HeaderProblem {
        field,
        why: why.into(),
    }
}

impl<'a> Take<'a> {
    fn bytes(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], HeaderProblem> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| problem(field, "the header ends before it"))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }
    fn u8(&mut self, field: &'static str) -> Result<u8, HeaderProblem> {
        Ok(self.bytes(1, field)?[0])
    }
    fn u32(&mut self, field: &'static str) -> Result<u32, HeaderProblem> {
        let b = self.bytes(4, field)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self, field: &'static str) -> Result<u64, HeaderProblem> {
        let b = self.bytes(8, field)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
    fn str(&mut self, field: &'static str) -> Result<String, HeaderProblem> {
        let len = self.u8(field)? as usize;
        let b = self.bytes(len, field)?;
        String::from_utf8(b.to_vec()).map_err(|_| problem(field, "not UTF-8"))
    }
}

fn guarantee_code(g: Guarantee) -> u8 {
    match g {
        Guarantee::Global => 0,
        Guarantee::PerCpu => 1,
        Guarantee::None => 2,
    }
}

impl FileHeader {
    /// The header's bytes, checksum last; at most `STATUS_OFFSET` long
    /// (the names are cut to 64 bytes). In the format of `self.version`
    /// (a version 1 header has no annex words).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut p = Put(Vec::with_capacity(512));
        p.0.extend_from_slice(&MAGIC);
        p.u32(self.version);
        p.0.extend_from_slice(&BYTE_ORDER_MARK.to_ne_bytes());
        p.u32(self.page_size as u32);
        p.u32(self.pages_per_cpu as u32);
        p.u32(self.cpus as u32);
        p.u32(self.quarantine_pages as u32);
        p.u32(match self.mode {
            Mode::Overwrite => 0,
            Mode::Discard => 1,
        });
        let words = self.layout.words();
        for v in &words[..layout_words(self.version)] {
            p.u64(*v);
        }
        let c = &self.clock;
        p.str(&c.name);
        p.u64(c.frequency_hz.unwrap_or(0));
        p.u64(c.mult.unwrap_or(0));
        p.u32(c.shift);
        p.u8(u8::from(c.ticks_are_ns));
        p.u8(guarantee_code(c.guarantee));
        p.u64(c.precision_ns.unwrap_or(f64::NAN).to_bits());
        p.u64(self.wall_ns);
        p.u64(self.anchor_ticks);
        p.u32(self.pid);
        p.str(&self.comm);
        p.u64(self.metadata_checksum);
        let sum = fnv1a64(&p.0);
        p.u64(sum);
        p.0
    }

    /// Reads a header from the first bytes of a file. The magic and version
    /// are checked by the caller first, so that their errors come first.
    pub(crate) fn decode(bytes: &[u8]) -> Result<FileHeader, HeaderProblem> {
        let mut t = Take { bytes, at: 0 };
        t.bytes(8, "magic")?;
        let version = t.u32("version")?;
        let bom = t.bytes(4, "byte order")?;
        if bom != BYTE_ORDER_MARK.to_ne_bytes() {
            return Err(problem(
                "byte order",
                format!(
                    "the file was written on a machine of the other byte order (mark {bom:02x?}); this reader is {}-endian",
                    if cfg!(target_endian = "little") { "little" } else { "big" }
                ),
            ));
        }
        let page_size = t.u32("page size")? as usize;
        let pages_per_cpu = t.u32("pages per CPU")? as usize;
        let cpus = t.u32("CPU count")? as usize;
        let quarantine_pages = t.u32("quarantine pages")? as usize;
        let mode = match t.u32("mode")? {
            0 => Mode::Overwrite,
            1 => Mode::Discard,
            other => {
                return Err(problem(
                    "mode",
                    format!("{other} is neither 0 (overwrite) nor 1 (discard)"),
                ))
            }
        };
        let mut l = [0u64; 13];
        for v in l.iter_mut().take(layout_words(version)) {
            *v = t.u64("layout")?;
        }
        let layout = FileLayout::from_words(l);
        let name = t.str("clock name")?;
        let frequency_hz = Some(t.u64("clock frequency")?).filter(|&f| f != 0);
        let mult = Some(t.u64("clock multiplier")?).filter(|&m| m != 0);
        let shift = t.u32("clock shift")?;
        if mult.is_some() && !(1..=63).contains(&shift) {
            return Err(problem(
                "clock shift",
                format!("{shift} is not 1 to 63, which a multiplier needs"),
            ));
        }
        let ticks_are_ns = t.u8("clock ticks-are-ns flag")? != 0;
        let guarantee = match t.u8("clock guarantee")? {
            0 => Guarantee::Global,
            1 => Guarantee::PerCpu,
            2 => Guarantee::None,
            other => {
                return Err(problem(
                    "clock guarantee",
                    format!("{other} is not 0, 1 or 2"),
                ))
            }
        };
        let precision = f64::from_bits(t.u64("clock precision")?);
        let wall_ns = t.u64("wall-clock anchor")?;
        let anchor_ticks = t.u64("clock anchor")?;
        let pid = t.u32("pid")?;
        let comm = t.str("command name")?;
        let metadata_checksum = t.u64("metadata checksum")?;
        let covered = t.at;
        let sum = t.u64("header checksum")?;
        if sum != fnv1a64(&bytes[..covered]) {
            return Err(problem(
                "header checksum",
                "it does not match the header's bytes: the header is corrupt",
            ));
        }
        Ok(FileHeader {
            version,
            page_size,
            pages_per_cpu,
            cpus,
            quarantine_pages,
            mode,
            layout,
            clock: FileClock {
                name,
                frequency_hz,
                mult,
                shift,
                ticks_are_ns,
                guarantee,
                precision_ns: (!precision.is_nan()).then_some(precision),
            },
            wall_ns,
            anchor_ticks,
            pid,
            comm,
            metadata_checksum,
        })
    }

    /// Physical pages per CPU buffer.
    pub fn physical_pages(&self) -> usize {
        self.pages_per_cpu + 1 + self.quarantine_pages
    }

    /// Checks the geometry and layout; returns the field and what is wrong.
    pub(crate) fn check(&self) -> Result<(), HeaderProblem> {
        use crate::config::{
            MAX_CPUS, MAX_PAGES, MAX_PAGE_SIZE, MAX_PHYSICAL_PAGES, MIN_PAGE_SIZE,
        };
        if !self.page_size.is_power_of_two()
            || !(MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&self.page_size)
        {
            return Err(problem(
                "page size",
                format!(
                    "{} is not a power of two from {MIN_PAGE_SIZE} to {MAX_PAGE_SIZE}",
                    self.page_size
                ),
            ));
        }
        if !(2..=MAX_PAGES).contains(&self.pages_per_cpu) {
            return Err(problem(
                "pages per CPU",
                format!("{} is not from 2 to {MAX_PAGES}", self.pages_per_cpu),
            ));
        }
        if !(1..=MAX_CPUS).contains(&self.cpus) {
            return Err(problem(
                "CPU count",
                format!("{} is not from 1 to {MAX_CPUS}", self.cpus),
            ));
        }
        if self.physical_pages() > MAX_PHYSICAL_PAGES {
            return Err(problem(
                "quarantine pages",
                format!(
                    "{} with {} ring pages is over {MAX_PHYSICAL_PAGES} pages",
                    self.quarantine_pages, self.pages_per_cpu
                ),
            ));
        }
        self.layout
            .check(
                self.pages_per_cpu as u64,
                self.physical_pages() as u64,
                self.page_size as u64,
                self.cpus as u64,
            )
            .map_err(|why| problem("layout", why))
    }

    /// The wall-clock time of an event at `ticks`, ns since the Unix epoch,
    /// or `None` when the clock's ticks are not time.
    pub fn wall_ns_at(&self, ticks: u64) -> Option<u64> {
        if ticks >= self.anchor_ticks {
            let after = self.clock.ticks_to_ns(ticks - self.anchor_ticks)?;
            Some(self.wall_ns.saturating_add(after))
        } else {
            let before = self.clock.ticks_to_ns(self.anchor_ticks - ticks)?;
            Some(self.wall_ns.saturating_sub(before))
        }
    }
}
