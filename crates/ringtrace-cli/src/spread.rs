//! Repeated measurements and their spread: every figure the report draws a
//! conclusion from is a set of rounds, summarised as p10/p50/p90, and every
//! comparison is a ratio taken per round between two sides measured back
//! to back (these shared machines drift between fast and slow phases that
//! last seconds; a ratio of two figures taken apart compares phases).

use serde::Serialize;
use std::time::Instant;

/// p10, p50 and p90 of some values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// 10th percentile.
    pub p10: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
}

impl Spread {
    /// The spread of `values`; all zero for none.
    pub fn of(mut values: Vec<f64>) -> Spread {
        if values.is_empty() {
            return Spread {
                p10: 0.0,
                p50: 0.0,
                p90: 0.0,
            };
        }
        values.sort_by(f64::total_cmp);
        let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
        Spread {
            p10: at(0.1),
            p50: at(0.5),
            p90: at(0.9),
        }
    }
}

/// Two sides measured in rounds, and their ratio `b / a` per round.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Paired {
    /// Rounds.
    pub rounds: usize,
    /// Side a (the reference).
    pub a: Spread,
    /// Side b.
    pub b: Spread,
    /// `b / a`, per round.
    pub ratio: Spread,
    /// `b - a`, per round, in the sides' unit: what b adds to a.
    pub diff: Spread,
}

impl Paired {
    /// The pairing of per-round values `a[i]` and `b[i]` (rounds beyond the
    /// shorter list are dropped; a ratio over a zero `a` is left out).
    pub fn from_rounds(a: Vec<f64>, b: Vec<f64>) -> Paired {
        let rounds = a.len().min(b.len());
        let (a, b) = (&a[..rounds], &b[..rounds]);
        let mut rs: Vec<f64> = a
            .iter()
            .zip(b)
            .map(|(x, y)| if *x > 0.0 { y / x } else { f64::NAN })
            .collect();
        rs.retain(|r| r.is_finite());
        Paired {
            rounds,
            a: Spread::of(a.to_vec()),
            b: Spread::of(b.to_vec()),
            ratio: Spread::of(rs),
            diff: Spread::of(a.iter().zip(b).map(|(x, y)| y - x).collect()),
        }
    }
}

/// Measures `a` and `b` back to back for `rounds` rounds, alternating which
/// goes first.
pub fn paired(rounds: usize, mut a: impl FnMut() -> f64, mut b: impl FnMut() -> f64) -> Paired {
    let rounds = rounds.max(1);
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let (x, y) = if round % 2 == 0 {
            let x = a();
            (x, b())
        } else {
            let y = b();
            (a(), y)
        };
        xs.push(x);
        ys.push(y);
    }
    Paired::from_rounds(xs, ys)
}

/// ns per call of `f` over `iters` calls.
#[inline(never)]
pub fn ns_per(iters: u64, mut f: impl FnMut()) -> f64 {
    let t = Instant::now();
    for _ in 0..iters {
        f();
    }
    t.elapsed().as_nanos() as f64 / iters.max(1) as f64
}
