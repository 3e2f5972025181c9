//! A traced process as the session describes it: who it is, its ring's
//! header, how it ended; and its `process` file, both ways.

use crate::codec::{bad, Bad, Put, Take};
use ringtrace_clock::Guarantee;
use ringtrace_ring::file::{ExitTime, FileClock, FileHeader, FileLayout};
use ringtrace_ring::Mode;

/// A process whose ring is streamed into the session.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessInfo {
    /// Its pid.
    pub pid: u32,
    /// Its start time, `/proc/PID/stat` field 22 (clock ticks since boot):
    /// with the pid, it tells a process from a later one given the same
    /// pid.
    pub start: u64,
    /// Its parent's pid (0: unknown).
    pub ppid: u32,
    /// Its command name (`/proc/PID/comm`).
    pub comm: String,
    /// Its ring's header: geometry, clock, wall-clock anchor, pid and
    /// command, as the ring file's (`Recovery::header`) or a memory ring's
    /// snapshot's. The reader rebuilds a `Recovery` with it.
    pub header: FileHeader,
    /// The ring's metadata (opaque: the facade's JSON).
    pub metadata: Vec<u8>,
}

impl ProcessInfo {
    /// The name of its directory in the session: `<pid>-<start>`.
    pub fn dir_name(&self) -> String {
        format!("{}-{}", self.pid, self.start)
    }
}

/// How a process ended, as far as the recorder knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProcessExit {
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it.
    Signaled(i32),
    /// It died with its ring left behind, and the ring was recovered.
    DiedWithRing,
    /// It was still running when the recorder stopped.
    Running,
    /// It closed its ring (dropped it, or exited normally); the recorder
    /// did not start it, so it does not know the exit code.
    Closed,
}

impl std::fmt::Display for ProcessExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProcessExit::Exited(code) => write!(f, "exited with code {code}"),
            ProcessExit::Signaled(sig) => write!(f, "killed by signal {sig}"),
            ProcessExit::DiedWithRing => f.write_str("died, its ring recovered"),
            ProcessExit::Running => f.write_str("still running when the recording stopped"),
            ProcessExit::Closed => f.write_str("closed its ring (a normal exit)"),
        }
    }
}

/// The first eight bytes of a `process` file.
const MAGIC: [u8; 8] = *b"RTPROC\0\0";
/// The most bytes a `process` file holds: three strings (the command, the
/// clock's name, the ring's command) of at most `u16::MAX` bytes after
/// their 2-byte lengths, and under 512 bytes of fixed fields. A reader
/// refuses a larger file unread.
pub(crate) const MAX_FILE: u64 = 3 * (2 + u16::MAX as u64) + 512;
/// The `process` file's version: 2 adds the exit time, 3 the exit code the
/// ring's exit record kept; 1 and 2 are still read.
const VERSION: u32 = 3;

fn exit_code(exit: Option<ProcessExit>) -> (u8, i32) {
    match exit {
        None => (0, 0),
        Some(ProcessExit::Exited(c)) => (1, c),
        Some(ProcessExit::Signaled(s)) => (2, s),
        Some(ProcessExit::DiedWithRing) => (3, 0),
        Some(ProcessExit::Running) => (4, 0),
        Some(ProcessExit::Closed) => (5, 0),
    }
}

/// The `process` file's bytes; `exit` is `None` while it runs, and
/// `exited_at` the time its ring was marked exited, if it was.
pub(crate) fn encode(
    info: &ProcessInfo,
    exit: Option<ProcessExit>,
    exited_at: Option<ExitTime>,
) -> Vec<u8> {
    let mut p = Put::default();
    p.0.extend_from_slice(&MAGIC);
    p.u32(VERSION);
    p.u32(info.pid);
    p.u64(info.start);
    p.u32(info.ppid);
    p.str(&info.comm);
    let (tag, value) = exit_code(exit);
    p.u8(tag);
    p.i32(value);
    let h = &info.header;
    p.u32(h.version);
    for v in [h.page_size, h.pages_per_cpu, h.cpus, h.quarantine_pages] {
        p.u64(v as u64);
    }
    p.u8(match h.mode {
        Mode::Overwrite => 0,
        Mode::Discard => 1,
    });
    for v in h.layout.words() {
        p.u64(v);
    }
    let c = &h.clock;
    p.str(&c.name);
    p.u64(c.frequency_hz.unwrap_or(0));
    p.u64(c.mult.unwrap_or(0));
    p.u32(c.shift);
    p.u8(u8::from(c.ticks_are_ns));
    p.u8(match c.guarantee {
        Guarantee::Global => 0,
        Guarantee::PerCpu => 1,
        Guarantee::None => 2,
    });
    p.u64(c.precision_ns.unwrap_or(f64::NAN).to_bits());
    p.u64(h.wall_ns);
    p.u64(h.anchor_ticks);
    p.u32(h.pid);
    p.str(&h.comm);
    p.u64(h.metadata_checksum);
    // Version 2: the exit time, bit 0 of the flags for the ring marked
    // exited, bit 1 for its ticks, bit 2 for its wall-clock ns, all zero
    // when the ring was not marked exited. Version 3: bit 3 for the exit
    // code the exit record kept, in the byte after them.
    let at = exited_at.unwrap_or(ExitTime::new(None, None));
    let flags = u8::from(exited_at.is_some())
        | u8::from(at.ticks.is_some()) << 1
        | u8::from(at.wall_ns.is_some()) << 2
        | u8::from(at.code.is_some()) << 3;
    p.u8(flags);
    p.u64(at.ticks.unwrap_or(0));
    p.u64(at.wall_ns.unwrap_or(0));
    p.u8(at.code.unwrap_or(0));
    p.checksum();
    p.0
}

/// A `process` file read back (its metadata is in another file).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Described {
    pub info: ProcessInfo,
    pub exit: Option<ProcessExit>,
    /// When its ring was marked exited (a file of version 2 only).
    pub exited_at: Option<ExitTime>,
}

/// Reads a `process` file's bytes. Never panics.
pub(crate) fn decode(bytes: &[u8]) -> Result<Described, Bad> {
    let mut t = Take::new(bytes);
    if t.bytes(8, "magic")? != MAGIC {
        return Err(bad("magic", "not a ringtrace process file"));
    }
    let version = t.u32("version")?;
    if !(1..=VERSION).contains(&version) {
        return Err(bad(
            "version",
            format!("{version}; this build reads 1 to {VERSION}"),
        ));
    }
    let pid = t.u32("pid")?;
    let start = t.u64("start")?;
    let ppid = t.u32("parent pid")?;
    let comm = t.str("command")?;
    let (tag, value) = (t.u8("exit")?, t.i32("exit")?);
    let exit = match tag {
        0 => None,
        1 => Some(ProcessExit::Exited(value)),
        2 => Some(ProcessExit::Signaled(value)),
        3 => Some(ProcessExit::DiedWithRing),
        4 => Some(ProcessExit::Running),
        5 => Some(ProcessExit::Closed),
        other => return Err(bad("exit", format!("kind {other}, not 0 to 5"))),
    };
    let header_version = t.u32("ring version")?;
    let mut geometry = [0usize; 4];
    for (g, name) in
        geometry
            .iter_mut()
            .zip(["page size", "pages per CPU", "CPUs", "quarantine pages"])
    {
        let v = t.u64(name)?;
        *g = usize::try_from(v).map_err(|_| bad(name, format!("{v} is too large")))?;
    }
    let [page_size, pages_per_cpu, cpus, quarantine_pages] = geometry;
    if !(64..=65_536).contains(&page_size) || !page_size.is_power_of_two() {
        return Err(bad(
            "page size",
            format!("{page_size}, not a power of two from 64 to 65536"),
        ));
    }
    if !(1..=4096).contains(&cpus) {
        return Err(bad("CPUs", format!("{cpus}, not 1 to 4096")));
    }
    let mode = match t.u8("mode")? {
        0 => Mode::Overwrite,
        1 => Mode::Discard,
        other => {
            return Err(bad(
                "mode",
                format!("{other}, not 0 (overwrite) or 1 (discard)"),
            ))
        }
    };
    let mut w = [0u64; 13];
    for v in &mut w {
        *v = t.u64("layout")?;
    }
    let layout = FileLayout::from_words(w);
    let name = t.str("clock name")?;
    let frequency = t.u64("clock frequency")?;
    let mult = t.u64("clock mult")?;
    let shift = t.u32("clock shift")?;
    let ticks_are_ns = t.u8("clock ticks are ns")? != 0;
    let guarantee = match t.u8("clock guarantee")? {
        0 => Guarantee::Global,
        1 => Guarantee::PerCpu,
        2 => Guarantee::None,
        other => return Err(bad("clock guarantee", format!("{other}, not 0 to 2"))),
    };
    let precision = f64::from_bits(t.u64("clock precision")?);
    let clock = FileClock {
        name,
        frequency_hz: (frequency != 0).then_some(frequency),
        mult: (mult != 0).then_some(mult),
        shift,
        ticks_are_ns,
        guarantee,
        precision_ns: (!precision.is_nan()).then_some(precision),
    };
    let header = FileHeader {
        version: header_version,
        page_size,
        pages_per_cpu,
        cpus,
        quarantine_pages,
        mode,
        layout,
        clock,
        wall_ns: t.u64("wall-clock anchor")?,
        anchor_ticks: t.u64("anchor ticks")?,
        pid: t.u32("ring pid")?,
        comm: t.str("ring command")?,
        metadata_checksum: t.u64("metadata checksum")?,
    };
    let exited_at = if version >= 2 {
        let flags = t.u8("exit time flags")?;
        let most = if version >= 3 { 0b1111 } else { 0b111 };
        if flags > most {
            return Err(bad(
                "exit time flags",
                format!("{flags:#x}, not 0 to {most} in version {version}"),
            ));
        }
        let (ticks, wall) = (t.u64("exit ticks")?, t.u64("exit wall-clock ns")?);
        let code = if version >= 3 { t.u8("exit code")? } else { 0 };
        (flags & 1 != 0).then(|| {
            ExitTime::new(
                (flags & 2 != 0).then_some(ticks),
                (flags & 4 != 0).then_some(wall),
            )
            .with_code((flags & 8 != 0).then_some(code))
        })
    } else {
        None
    };
    t.checksum()?;
    Ok(Described {
        info: ProcessInfo {
            pid,
            start,
            ppid,
            comm,
            header,
            metadata: Vec::new(),
        },
        exit,
        exited_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringtrace_clock::Counter;
    use ringtrace_ring::{RingBuffer, RingConfig};

    #[test]
    fn a_process_file_reads_back_every_field() {
        let ring = RingBuffer::new(
            RingConfig::default().cpus(2).per_cpu_bytes(8192),
            Counter::new(),
        )
        .unwrap();
        let info = ProcessInfo {
            pid: 42,
            start: 777,
            ppid: 1,
            comm: "worker\nline".into(),
            header: ring.snapshot(Vec::new()).header,
            metadata: Vec::new(),
        };
        for exit in [
            None,
            Some(ProcessExit::Exited(-3)),
            Some(ProcessExit::Signaled(9)),
            Some(ProcessExit::DiedWithRing),
            Some(ProcessExit::Running),
            Some(ProcessExit::Closed),
        ] {
            for exited_at in [
                None,
                Some(ExitTime::new(Some(77), Some(1_800_000_000_000_000_000))),
                Some(ExitTime::new(None, Some(5))),
                Some(ExitTime::new(None, None)),
                Some(ExitTime::new(Some(78), Some(6)).with_code(Some(101))),
                Some(ExitTime::new(None, None).with_code(Some(0))),
            ] {
                let bytes = encode(&info, exit, exited_at);
                let back = decode(&bytes).unwrap();
                assert_eq!(back.info, info);
                assert_eq!(back.exit, exit);
                assert_eq!(back.exited_at, exited_at);
                for cut in 0..bytes.len() {
                    assert!(decode(&bytes[..cut]).is_err());
                }
            }
        }
    }

    #[test]
    fn files_of_versions_1_and_2_read_without_what_they_lack() {
        let ring = RingBuffer::new(
            RingConfig::default().cpus(1).per_cpu_bytes(8192),
            Counter::new(),
        )
        .unwrap();
        let info = ProcessInfo {
            pid: 9,
            start: 1,
            ppid: 0,
            comm: "old".into(),
            header: ring.snapshot(Vec::new()).header,
            metadata: Vec::new(),
        };
        let v3 = encode(&info, Some(ProcessExit::Exited(0)), None);
        // Version 1: the same fields without the exit time and code (18
        // bytes), under its own version and checksum.
        let mut p = Put::default();
        p.0.extend_from_slice(&v3[..v3.len() - 8 - 18]);
        p.0[8..12].copy_from_slice(&1u32.to_le_bytes());
        p.checksum();
        let back = decode(&p.0).unwrap();
        assert_eq!(back.info, info);
        assert_eq!(back.exit, Some(ProcessExit::Exited(0)));
        assert_eq!(back.exited_at, None);
        // Version 2: the exit time without the code byte.
        let at = ExitTime::new(Some(5), Some(6));
        let v3 = encode(
            &info,
            Some(ProcessExit::Closed),
            Some(at.with_code(Some(7))),
        );
        let mut p = Put::default();
        p.0.extend_from_slice(&v3[..v3.len() - 8 - 1]);
        p.0[8..12].copy_from_slice(&2u32.to_le_bytes());
        // Bit 3 (the code) is not a version 2 flag.
        let flags_at = p.0.len() - 17;
        p.0[flags_at] &= 0b111;
        p.checksum();
        let back = decode(&p.0).unwrap();
        assert_eq!(back.exited_at, Some(at));
        let mut future = v3.clone();
        future[8..12].copy_from_slice(&4u32.to_le_bytes());
        let err = decode(&future).unwrap_err();
        assert!(err.why.contains("reads 1 to 3"), "{}", err.why);
    }
}
