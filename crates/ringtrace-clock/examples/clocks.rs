//! Lists every clock source under every protection: name, frequency,
//! guarantee and the median cost of one read.
//!
//! `cargo run --release -p ringtrace-clock --example clocks`

use ringtrace_clock::{measure_read_cost, Clock, ClockSpec};

fn main() {
    println!(
        "{:<24} {:>14} {:>9} {:>10} {:>12} {:>9}",
        "clock", "frequency_hz", "ticks_ns", "guarantee", "precision_ns", "read_ns"
    );
    for spec in ClockSpec::all() {
        match spec.build() {
            Ok(clock) => {
                let info = clock.info();
                let cost = measure_read_cost(&clock, 201, 256)
                    .expect("201 batches of 256 reads are within the limits");
                let freq = info
                    .frequency_hz
                    .map_or_else(|| "-".to_owned(), |f| f.to_string());
                let precision = info
                    .precision_ns
                    .map_or_else(|| "-".to_owned(), |p| format!("{p:.3}"));
                println!(
                    "{:<24} {:>14} {:>9} {:>10} {:>12} {:>9.2}",
                    info.name, freq, info.ticks_are_ns, info.guarantee, precision, cost.median_ns
                );
            }
            Err(e) => println!("{:<24} unavailable: {e}", spec.to_string()),
        }
    }
}
