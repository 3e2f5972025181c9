//! ringtrace as the backend of an application instrumented with
//! `tracing`: a few worker threads handle jobs inside spans
//! (`#[instrument]`, `info_span!`) and log with `info!`/`debug!`/`warn!`;
//! the layer records all of it into the tracer's ring, beside a
//! fastrace-style local span around each digit sum (one ring record per
//! span, no `tracing` dispatch). At exit the program
//! prints the start of the dump and exports a Chrome/Perfetto JSON trace
//! (spans as slices per thread, events as instants with their fields).
//!
//! `cargo run --example tracing_backend` (`-- --ring PATH` records into
//! a ring file at PATH instead of memory).

use ringtrace::{DumpOptions, ExportFormat, Tracer};
use tracing::{debug, info, info_span, instrument, warn};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Sums the digits of `n`: the work a job does.
#[instrument(level = "debug")]
fn checksum(n: u64) -> u64 {
    let sum = {
        let _digits = ringtrace::tracing_layer::local_span!("sum digits");
        sum_digits(n)
    };
    debug!(sum, "digits summed");
    sum
}

fn sum_digits(n: u64) -> u64 {
    n.to_string().bytes().map(|b| u64::from(b - b'0')).sum()
}

fn worker(id: u64, jobs: u64) -> u64 {
    let span = info_span!("worker", id);
    let _entered = span.enter();
    let mut total = 0;
    for job in 0..jobs {
        let _job = info_span!("job", job, input = id * 1000 + job).entered();
        let sum = checksum(id * 1000 + job);
        if sum % 7 == 0 {
            warn!(job, sum, "checksum divisible by 7");
        }
        total += sum;
    }
    info!(total, jobs, "worker done");
    total
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // `--ring PATH`: a ring file that outlives the program (for
    // `ringtrace dump` and `ringtrace export`), not memory.
    let ring: Vec<String> = std::env::args().skip(1).collect();
    let builder = Tracer::builder().clock("mono").buffer_size(1 << 20);
    let tracer = match ring.as_slice() {
        [] => builder.build()?,
        [flag, path] if flag == "--ring" => builder.file(path).build()?,
        _ => return Err(format!("usage: tracing_backend [--ring PATH], not {ring:?}").into()),
    };
    tracing_subscriber::registry().with(tracer.layer()).init();
    tracer.install()?; // tracepoints and local spans record into it too

    info!(workers = 3, "starting");
    let totals: Vec<u64> = std::thread::scope(|s| {
        let handles: Vec<_> = (1..=3).map(|id| s.spawn(move || worker(id, 20))).collect();
        handles.into_iter().map(|h| h.join().unwrap_or(0)).collect()
    });
    info!(grand_total = totals.iter().sum::<u64>(), "all workers done");

    tracer.flush();
    let dump = tracer.dump(DumpOptions::default())?;
    let lines: Vec<&str> = dump.lines().collect();
    let first_event = lines.iter().position(|l| !l.starts_with('#')).unwrap_or(0);
    println!("{}", lines[..first_event].join("\n"));
    for line in lines[first_event..].iter().take(12) {
        println!("{line}");
    }
    println!("... {} events in all", lines.len() - first_event);

    let out = std::env::temp_dir().join(format!("tracing_backend-{}.json", std::process::id()));
    let summary = tracer.export(ExportFormat::Chrome, &out)?;
    println!(
        "exported {} events to {} (open it in https://ui.perfetto.dev)",
        summary.events,
        out.display()
    );
    Ok(())
}
