//! The floor of any two-section rseq writer on this host, in bare-rdtsc
//! units (see `ringtrace_benches::section_floor`; `ring_ratio` times it
//! beside the ring in one run):
//! `cargo run --release -p ringtrace-benches --example section_floor [lookup|one]`
//! (`lookup`: with the ring's open-page lookup, `record_16b_lookup`;
//! `one`: the event in one section, `record_16b_one_section`).
//! x86_64 Linux with glibc 2.35+ only; elsewhere it says so.

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn main() {
    use ringtrace_benches::{pin, ratio_to_rdtsc, section_floor::SectionFloor};
    use std::hint::black_box;
    let cpu = ringtrace_ring::cpu::current_cpu();
    let floor = pin(cpu).then(|| SectionFloor::new(cpu)).flatten();
    let (Some(mut floor), Ok(tsc)) = (floor, ringtrace_clock::Tsc::new()) else {
        println!("section_floor: needs glibc's rseq registration, a pinned thread and a TSC");
        return;
    };
    let payload = [0xA5u8; 16];
    let which = std::env::args().nth(1).unwrap_or_default();
    let (what, [p10, p50, p90]) = match which.as_str() {
        "lookup" => (
            "two-section floor with the open-page lookup",
            ratio_to_rdtsc(&tsc, || floor.record_16b_lookup(black_box(&payload))),
        ),
        "one" => (
            "one-section floor",
            ratio_to_rdtsc(&tsc, || floor.record_16b_one_section(black_box(&payload))),
        ),
        _ => (
            "two-section floor",
            ratio_to_rdtsc(&tsc, || floor.record_16b(black_box(&payload))),
        ),
    };
    println!("{what}: times a bare rdtsc p10 {p10:.2} p50 {p50:.2} p90 {p90:.2}");
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
fn main() {
    println!("section_floor: x86_64 Linux only");
}
