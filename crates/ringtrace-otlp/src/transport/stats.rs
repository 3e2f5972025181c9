//! What a [`Sender`](super::Sender) has done: requests, retries, and where
//! every span and log record pushed has ended up.

/// Where the records of one signal (spans, or log records) are.
///
/// Invariant, at every moment: `pushed == delivered + undelivered +
/// queued()`. After a successful or failed [`flush`](super::Sender::flush)
/// nothing is queued, so every record pushed is counted exactly once as
/// delivered or undelivered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecordCounts {
    /// Records handed to `push_*`.
    pub pushed: u64,
    /// Records in requests the collector answered with a 2xx status.
    pub delivered: u64,
    /// Records in batches that failed for good: a permanent error status,
    /// or retries exhausted.
    pub undelivered: u64,
    /// Records the collector reported rejecting in a 2xx response's
    /// `partial_success` (`rejected_spans` / `rejected_log_records`). They
    /// are also counted in `delivered`: they reached the collector, which
    /// dropped them; sending them again would not help.
    pub rejected: u64,
}

impl RecordCounts {
    /// Records pushed but not yet sent (waiting to fill a batch).
    pub fn queued(&self) -> u64 {
        self.pushed
            .saturating_sub(self.delivered)
            .saturating_sub(self.undelivered)
    }
}

/// Counters of a [`Sender`](super::Sender), read with
/// [`Sender::stats`](super::Sender::stats).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SendStats {
    /// HTTP requests attempted, retries included.
    pub requests: u64,
    /// Of `requests`, the ones that repeated an earlier failed attempt.
    pub retries: u64,
    /// Request body bytes of the attempts the collector answered (any
    /// status).
    pub bytes_sent: u64,
    /// Where the spans are.
    pub spans: RecordCounts,
    /// Where the log records are.
    pub log_records: RecordCounts,
    /// Why the last batch that failed for good failed: its URL and its last
    /// attempt's error.
    pub last_error: Option<String>,
    /// 2xx responses whose body was not an `Export*ServiceResponse`. Their
    /// records still count as delivered.
    pub undecodable_responses: u64,
    /// The last note from a 2xx response: a `partial_success.error_message`
    /// (a warning or the reason for rejections), or why its body did not
    /// decode.
    pub last_response_note: Option<String>,
}
