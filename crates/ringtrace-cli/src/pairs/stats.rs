//! The statistics of `ringtrace pairs`: walac/tracer-benchmark's per-CPU
//! figures and the way it combines them, plus a trimmed mean, an outlier
//! count and a histogram.
//!
//! Everything per CPU is in timer ticks per sample; [`combine`] turns the
//! combined figures into nanoseconds per pair (dividing by K).

use super::Metrics;

/// Share of samples dropped at each end for the trimmed mean, in percent.
pub const TRIM_PERCENT: usize = 1;

/// A sample above this many times its CPU's median is an outlier (the
/// thread was preempted or interrupted inside it).
pub const OUTLIER_FACTOR: u64 = 10;

/// A median or percentile under this many timer steps (per pair) is below
/// what the timer resolves.
pub const RESOLUTION_STEPS: u64 = 2;

/// Power-of-two buckets of ns per pair: bucket 0 holds values under
/// 2^-[`BUCKET_SHIFT`] ns, bucket k holds `[2^(k-1-S), 2^(k-S))` ns.
const BUCKETS: usize = 48;
const BUCKET_SHIFT: i32 = 4;

fn bucket(ns: f64) -> usize {
    // NaN and anything under the first bound go to bucket 0.
    if ns.is_nan() || ns < 1.0 / f64::from(1 << BUCKET_SHIFT) {
        return 0;
    }
    let k = ns.log2().floor() as i64 + i64::from(BUCKET_SHIFT) + 1;
    (k.max(0) as usize).min(BUCKETS - 1)
}

fn bucket_upper_ns(k: usize) -> f64 {
    2f64.powi(k as i32 - BUCKET_SHIFT)
}

/// One thread's statistics of one (pair, strategy), in ticks per sample.
pub(super) struct CpuStats {
    pub average: f64,
    pub median: f64,
    pub percentile: u64,
    pub trimmed_mean: f64,
    /// The standard error of `trimmed_mean` (see [`trimmed_mean_se`]).
    pub trimmed_se: f64,
    pub outliers: u64,
    pub samples: u64,
    /// The `highest` largest samples.
    pub top: Vec<u64>,
    histogram: [u64; BUCKETS],
}

/// Sorts `samples` and computes a CPU's statistics. `ns_per_pair` turns
/// one sample's ticks into ns per pair (for the histogram).
pub(super) fn cpu_stats(
    samples: &mut [u64],
    highest: usize,
    pct: u32,
    ns_per_pair: impl Fn(f64) -> f64,
) -> CpuStats {
    samples.sort_unstable();
    let n = samples.len();
    if n == 0 {
        return CpuStats {
            average: 0.0,
            median: 0.0,
            percentile: 0,
            trimmed_mean: 0.0,
            trimmed_se: f64::INFINITY,
            outliers: 0,
            samples: 0,
            top: Vec::new(),
            histogram: [0; BUCKETS],
        };
    }
    let mean = |s: &[u64]| {
        let total: u128 = s.iter().map(|&x| u128::from(x)).sum();
        total as f64 / s.len().max(1) as f64
    };
    let median = if n % 2 == 1 {
        samples[n / 2] as f64
    } else {
        (samples[n / 2 - 1] as f64 + samples[n / 2] as f64) / 2.0
    };
    // tracer-benchmark's index: n * pct / 100, clamped.
    let index = (n * pct as usize / 100).min(n - 1);
    let trim = n * TRIM_PERCENT / 100;
    let limit = median * OUTLIER_FACTOR as f64;
    let outliers = samples
        .iter()
        .rev()
        .take_while(|&&s| s as f64 > limit)
        .count() as u64;
    let mut histogram = [0u64; BUCKETS];
    for &s in samples.iter() {
        histogram[bucket(ns_per_pair(s as f64))] += 1;
    }
    CpuStats {
        average: mean(samples),
        median,
        percentile: samples[index],
        trimmed_mean: mean(&samples[trim..n - trim]),
        trimmed_se: trimmed_mean_se(samples, trim),
        outliers,
        samples: n as u64,
        top: samples[n - highest.min(n)..].to_vec(),
        histogram,
    }
}

/// The standard error of the mean of `sorted` without `trim` samples at
/// each end (Tukey and McLaughlin): the winsorized standard deviation (the
/// trimmed samples replaced by the nearest kept one) times sqrt(n) over the
/// kept count. Infinite for under two samples kept.
pub(super) fn trimmed_mean_se(sorted: &[u64], trim: usize) -> f64 {
    let n = sorted.len();
    let kept = n.saturating_sub(2 * trim);
    if kept < 2 {
        return f64::INFINITY;
    }
    let (lo, hi) = (sorted[trim] as f64, sorted[n - 1 - trim] as f64);
    let w = |i: usize| (sorted[i] as f64).clamp(lo, hi);
    let mean = (0..n).map(w).sum::<f64>() / n as f64;
    let var = (0..n).map(|i| (w(i) - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    var.sqrt() * (n as f64).sqrt() / kept as f64
}

/// The median of `values` (0 for none).
pub(super) fn median_of(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        m if m % 2 == 1 => values[m / 2],
        m => (values[m / 2 - 1] + values[m / 2]) / 2.0,
    }
}

/// How ticks per sample become ns per pair, and what is resolved.
pub(super) struct Scale<'a> {
    /// Ticks per sample to ns per pair.
    pub ns_per_pair: &'a dyn Fn(f64) -> f64,
    /// The smallest resolved median or percentile, in ns per pair.
    pub resolution_ns: f64,
}

/// Combines the CPUs' statistics as tracer-benchmark does: the average of
/// the averages, the median of the medians, the largest percentile (or the
/// one given, from a separate run) and the mean of the `highest` largest
/// samples over all CPUs. Returns the metrics and the distribution
/// (`[bucket upper bound in ns per pair, share of samples]`).
pub(super) fn combine(
    cpus: &[&CpuStats],
    percentile: Option<u64>,
    highest: usize,
    scale: &Scale,
) -> (Metrics, Vec<[f64; 2]>) {
    let ns = scale.ns_per_pair;
    let n = cpus.len().max(1) as f64;
    let average = cpus.iter().map(|c| c.average).sum::<f64>() / n;
    let trimmed_mean = cpus.iter().map(|c| c.trimmed_mean).sum::<f64>() / n;
    // The mean of independent per-CPU means: the root of the summed
    // variances over the count.
    let trimmed_se = cpus
        .iter()
        .map(|c| c.trimmed_se.powi(2))
        .sum::<f64>()
        .sqrt()
        / n;
    let median = median_of(cpus.iter().map(|c| c.median).collect());
    let pct = percentile.unwrap_or_else(|| cpus.iter().map(|c| c.percentile).max().unwrap_or(0));
    let mut top: Vec<u64> = cpus.iter().flat_map(|c| c.top.iter().copied()).collect();
    top.sort_unstable();
    let top = &top[top.len() - highest.min(top.len())..];
    let max_avg = top.iter().map(|&t| t as f64).sum::<f64>() / top.len().max(1) as f64;
    let mut counts = [0u64; BUCKETS];
    for c in cpus {
        for (k, n) in c.histogram.iter().enumerate() {
            counts[k] += n;
        }
    }
    let all = counts.iter().sum::<u64>().max(1) as f64;
    let distribution = counts
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(k, &n)| [bucket_upper_ns(k), n as f64 / all])
        .collect();
    let metrics = Metrics {
        average: ns(average),
        max_avg: ns(max_avg),
        median: ns(median),
        percentile: ns(pct as f64),
        trimmed_mean: ns(trimmed_mean),
        trimmed_mean_se: ns(trimmed_se),
        outliers: cpus.iter().map(|c| c.outliers).sum(),
        samples: cpus.iter().map(|c| c.samples).sum(),
        resolution_ns: scale.resolution_ns,
    };
    (metrics, distribution)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_s_statistics_follow_tracer_benchmark_and_trim_one_percent() {
        // 200 samples: 1..=198 and two preempted ones.
        let mut s: Vec<u64> = (1..=198).chain([10_000, 20_000]).collect();
        let c = cpu_stats(&mut s, 3, 99, |t| t);
        assert_eq!(c.median, 100.5);
        assert_eq!(c.percentile, 10_000); // index 198 of 200
        assert_eq!(c.top, vec![198, 10_000, 20_000]);
        // Two dropped at each end: 3..=198 remain.
        assert_eq!(c.trimmed_mean, (3..=198).sum::<u64>() as f64 / 196.0);
        assert_eq!(c.outliers, 2);
        assert!(c.average > c.trimmed_mean);
    }

    #[test]
    fn the_trimmed_mean_s_error_is_the_winsorized_spread_over_the_kept_count() {
        // 0..100 trimmed by 1 each end: winsorized 1,1,2,..,98,98.
        let s: Vec<u64> = (0..100).collect();
        let w: Vec<f64> = (0..100u64).map(|x| x.clamp(1, 98) as f64).collect();
        let mean = w.iter().sum::<f64>() / 100.0;
        let var = w.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 99.0;
        let want = var.sqrt() * 10.0 / 98.0;
        assert!((trimmed_mean_se(&s, 1) - want).abs() < 1e-12);
        // A constant has none; one sample has no estimate.
        assert_eq!(trimmed_mean_se(&[5; 50], 0), 0.0);
        assert_eq!(trimmed_mean_se(&[5], 0), f64::INFINITY);
        // Four times the samples, about half the error.
        let s4: Vec<u64> = (0..400).map(|x| x / 4).collect();
        let r = trimmed_mean_se(&s, 1) / trimmed_mean_se(&s4, 4);
        assert!((r - 2.0).abs() < 0.05, "{r}");
    }

    #[test]
    fn buckets_hold_fractions_of_a_nanosecond() {
        assert_eq!(bucket(0.0), 0);
        assert_eq!(bucket(f64::NAN), 0);
        assert_eq!(bucket(0.5), bucket(0.99));
        assert_ne!(bucket(0.99), bucket(1.0));
        assert!(bucket_upper_ns(bucket(0.7)) > 0.7);
        assert!(bucket_upper_ns(bucket(0.7)) / 2.0 <= 0.7);
        assert_eq!(bucket(1e30), BUCKETS - 1);
    }

    #[test]
    fn combining_takes_the_mean_of_means_and_the_median_of_medians() {
        let mut a: Vec<u64> = vec![10, 10, 10, 10];
        let mut b: Vec<u64> = vec![20, 20, 20, 1000];
        let (a, b) = (
            cpu_stats(&mut a, 2, 50, |t| t),
            cpu_stats(&mut b, 2, 50, |t| t),
        );
        let half = |t: f64| t / 2.0;
        let scale = Scale {
            ns_per_pair: &half,
            resolution_ns: 1.0,
        };
        let (m, dist) = combine(&[&a, &b], None, 2, &scale);
        assert_eq!(m.average, (10.0 + 265.0) / 2.0 / 2.0);
        assert_eq!(m.median, 15.0 / 2.0);
        assert_eq!(m.percentile, 10.0); // largest per-CPU, index 2 of 4
        assert_eq!(m.max_avg, (1000.0 + 20.0) / 2.0 / 2.0);
        assert_eq!(m.outliers, 1);
        assert_eq!(m.samples, 8);
        assert!((dist.iter().map(|d| d[1]).sum::<f64>() - 1.0).abs() < 1e-12);
        let (m, _) = combine(&[&a, &b], Some(7), 2, &scale);
        assert_eq!(m.percentile, 3.5);
    }
}
