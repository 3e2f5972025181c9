//! `Recovery::from_parts` and `CpuRecovery::new`: a recovery built by
//! another reader (a session directory's) says what a ring's own does.

use ringtrace_clock::Counter;
use ringtrace_ring::file::{CpuRecovery, Recovery, RecoveryParts, WriterState};
use ringtrace_ring::{RingBuffer, RingConfig};

#[test]
fn a_recovery_from_parts_reads_as_the_ring_it_was_taken_from() {
    let ring = RingBuffer::new(
        RingConfig::default().cpus(2).per_cpu_bytes(8192),
        Counter::new(),
    )
    .unwrap();
    ring.cpu_writer(0).write(b"zero").unwrap();
    ring.cpu_writer(1).write(b"one!").unwrap();
    ring.append_metadata(b"record").unwrap();
    let snapshot = ring.snapshot(b"meta".to_vec());
    let mut cpus = Vec::new();
    for c in &snapshot.cpus {
        let mut cpu = CpuRecovery::new(c.cpu);
        cpu.events = c.events.clone();
        cpu.counts = c.counts;
        cpus.push(cpu);
    }
    cpus[1].problems.push("chunk 2 is cut off".to_owned());
    let rebuilt = Recovery::from_parts(RecoveryParts {
        path: "elsewhere".into(),
        header: snapshot.header.clone(),
        metadata: Ok(b"meta".to_vec()),
        writer: WriterState::Died,
        cpus,
        metadata_records: snapshot.metadata_records().to_vec(),
        annex_problems: Vec::new(),
    });
    assert_eq!(rebuilt.merged(), snapshot.merged());
    assert_eq!(rebuilt.totals(), snapshot.totals());
    assert_eq!(rebuilt.metadata_records(), [b"record".to_vec()]);
    assert_eq!(rebuilt.header, snapshot.header);
    assert!(rebuilt.has_problems(), "a CPU's problem is the recovery's");
    assert!(!snapshot.has_problems());
}
