//! The floor of any two-section rseq writer on this host, in bare-rdtsc
//! units (see `ringtrace_benches::section_floor`; `ring_ratio` times it
//! beside the ring in one run):
//! `cargo run --release -p ringtrace-benches --example section_floor`.
//! x86_64 Linux with glibc 2.35+ only; elsewhere it says so.

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn main() {
    use ringtrace_clock::{Clock, Tsc};
    use std::hint::black_box;
    use std::time::Instant;
    let cpu = ringtrace_ring::cpu::current_cpu();
    let floor = ringtrace_benches::pin(cpu)
        .then(|| ringtrace_benches::section_floor::SectionFloor::new(cpu))
        .flatten();
    let (Some(mut floor), Ok(tsc)) = (floor, Tsc::new()) else {
        println!("section_floor: needs glibc's rseq registration, a pinned thread and a TSC");
        return;
    };
    let payload = [0xA5u8; 16];
    let n = 50_000u32;
    let mut ratios = Vec::new();
    for _ in 0..151 {
        let t = Instant::now();
        for _ in 0..n {
            black_box(tsc.read());
        }
        let bare = t.elapsed().as_nanos() as f64;
        let t = Instant::now();
        for _ in 0..n {
            floor.record_16b(black_box(&payload));
        }
        ratios.push(t.elapsed().as_nanos() as f64 / bare);
    }
    ratios.sort_by(f64::total_cmp);
    let at = |q: f64| ratios[((ratios.len() - 1) as f64 * q) as usize];
    println!(
        "two-section floor: times a bare rdtsc p10 {:.2} p50 {:.2} p90 {:.2}",
        at(0.1),
        at(0.5),
        at(0.9)
    );
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
fn main() {
    println!("section_floor: x86_64 Linux only");
}
