//! Times for people: a wall-clock time in UTC, and seconds with nine
//! decimals.

/// `ns` since the Unix epoch as an RFC 3339 time in UTC, to the
/// nanosecond: `2026-12-01T05:09:05.123456789Z`. Computed by hand (days
/// to a civil date, as in Howard Hinnant's `civil_from_days`).
///
/// ```
/// use ringtrace_export::text::utc_time;
/// assert_eq!(utc_time(0), "1970-01-01T00:00:00.000000000Z");
/// assert_eq!(utc_time(951_782_400_000_000_001), "2000-02-29T00:00:00.000000001Z");
/// ```
pub fn utc_time(ns: u64) -> String {
    let secs = ns / 1_000_000_000;
    let frac = ns % 1_000_000_000;
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{frac:09}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Year, month (1 to 12) and day (1 to 31) of `days` since 1970-01-01.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    // Shifted to start on 0000-03-01, so that a leap day ends its year.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097; // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], March first
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

/// `ns` as seconds with nine decimals: `5.123456789`.
pub fn seconds(ns: u64) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        assert_eq!(
            utc_time(1_000_000_000_000_000_000),
            "2001-09-09T01:46:40.000000000Z"
        );
        // 2026-12-01T05:09:05Z, the day after a month of 30.
        assert_eq!(
            utc_time(1_796_101_745_500_000_000),
            "2026-12-01T05:09:05.500000000Z"
        );
        assert_eq!(
            utc_time(4_107_542_399_000_000_000),
            "2100-02-28T23:59:59.000000000Z"
        );
        assert_eq!(
            utc_time(4_107_542_400_000_000_000),
            "2100-03-01T00:00:00.000000000Z"
        );
        // The largest u64 is in 2554, and does not overflow.
        assert_eq!(utc_time(u64::MAX), "2554-07-21T23:34:33.709551615Z");
    }

    #[test]
    fn every_day_follows_the_one_before() {
        let mut last = civil_from_days(0);
        for day in 1..200_000 {
            let (y, m, d) = civil_from_days(day);
            let next_day = (y, m, d) == (last.0, last.1, last.2 + 1);
            let next_month = (y, m, d) == (last.0, last.1 + 1, 1);
            let next_year = (y, m, d) == (last.0 + 1, 1, 1) && last.1 == 12 && last.2 == 31;
            assert!(
                next_day || next_month || next_year,
                "{last:?} then {:?}",
                (y, m, d)
            );
            last = (y, m, d);
        }
    }

    #[test]
    fn seconds_have_nine_decimals() {
        assert_eq!(seconds(5_123_456_789), "5.123456789");
        assert_eq!(seconds(7), "0.000000007");
    }
}
