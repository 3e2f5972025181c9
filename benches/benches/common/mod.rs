//! What the request-shaped benches share: the request, the floor layer,
//! thread CPU time, the spread of a round's figures and the host's name.
#![allow(dead_code)] // each bench uses some

/// One request: span `request` (two integer fields) entered, inside it
/// span `db` (one field) entered, an `info!` with two integers and a
/// message, then both exited and closed (locals drop in reverse: `_db`
/// exits, `db` closes, then `request`): 2 spans, 1 event, 9 records.
#[inline(never)]
pub fn request(i: u64) {
    let request = tracing::info_span!("request", id = i, status = 200u64);
    let _request = request.enter();
    let db = tracing::info_span!("db", rows = i);
    let _db = db.enter();
    tracing::info!(a = i, b = 2u64, "queried");
}

/// A layer with every hook left to its no-op default: the registry's
/// floor.
pub struct Noop;
impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Noop {}

/// This thread's CPU time, ns.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a live, writable timespec; the call writes only it.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "Linux always has CLOCK_THREAD_CPUTIME_ID");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The median, lowest and highest of `v` (NaN when empty).
pub fn spread(v: &[f64]) -> (f64, f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    (s[s.len() / 2], s[0], s[s.len() - 1])
}

/// The environment variable `name` as a number, else `default`.
pub fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The CPU's model name, from /proc/cpuinfo.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            let line = c.lines().find(|l| l.starts_with("model name"))?;
            Some(line.split(':').nth(1)?.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

/// The date and time, UTC, as `date -u` prints it.
pub fn date_utc() -> String {
    std::process::Command::new("date")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|_| "date unknown".into())
}
