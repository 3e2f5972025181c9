//! What both exports share: each assembled piece decided by the keep
//! rules, converted, and handed to the transport; everything counted,
//! what was delivered and what was not.

use crate::convert::{ProcessInfo, Resources};
use crate::export::{OtlpError, OtlpOptions, OtlpSummary};
use crate::transport::{SendError, Sender};
use ringtrace_export::spans::{AssembleSummary, Assembled, EventData, KeepRules, SpanTree};

/// Log records gathered before they are handed to the sender.
const LOG_BATCH: usize = 512;

/// The export's state.
pub(crate) struct Pipeline {
    resources: Resources,
    sender: Sender,
    keep: KeepRules,
    logs: bool,
    /// Events outside spans not yet handed over, of one process.
    pending: Vec<EventData>,
    failed: Option<SendError>,
    /// Whether a batch that cannot be delivered stops the sending (an
    /// export of a whole trace), or the next batches are tried (a live
    /// export: the collector may come back).
    stop_on_failure: bool,
    not_sent_spans: u64,
    not_sent_logs: u64,
}

impl Pipeline {
    /// A pipeline sending to `options`' endpoint, the processes those of
    /// `resources`.
    pub(crate) fn new(resources: Resources, options: &OtlpOptions) -> Pipeline {
        Pipeline {
            resources,
            sender: Sender::new(options.endpoint.clone(), options.transport.clone()),
            keep: options.keep.clone(),
            logs: options.logs,
            pending: Vec::new(),
            failed: None,
            stop_on_failure: true,
            not_sent_spans: 0,
            not_sent_logs: 0,
        }
    }

    /// Tries every batch, even after one could not be delivered: the
    /// collector of a live export may come back.
    pub(crate) fn keep_trying(mut self) -> Pipeline {
        self.stop_on_failure = false;
        self
    }

    /// Whether sending has stopped.
    fn stopped(&self) -> bool {
        self.stop_on_failure && self.failed.is_some()
    }

    /// Adds a process; returns its place.
    pub(crate) fn add_process(
        &mut self,
        p: &ProcessInfo<'_>,
        service: Option<&str>,
        host: &str,
    ) -> usize {
        self.resources.add(p, service, host)
    }

    /// Maps the times of the process at `process` by `wall` from now on.
    pub(crate) fn set_wall(&mut self, process: usize, wall: ringtrace_export::WallClock) {
        self.resources.set_wall(process, wall);
    }

    /// Counts spans that never reached the pipeline.
    pub(crate) fn not_sent(&mut self, spans: u64, logs: u64) {
        self.not_sent_spans += spans;
        self.not_sent_logs += logs;
    }

    /// Decides, converts and sends one piece.
    pub(crate) fn take(&mut self, a: Assembled) {
        match a {
            Assembled::Tree(tree) => self.tree(tree),
            Assembled::Event(e) => self.event(e),
            _ => {}
        }
    }

    fn tree(&mut self, tree: SpanTree) {
        let id = tree.trace_id();
        if !self.keep.decide(&tree, &id).is_kept() {
            return;
        }
        if self.stopped() {
            self.not_sent_spans += tree.spans.len() as u64;
            return;
        }
        let spans = self.resources.spans(&tree);
        if let Err(e) = self.sender.push_spans(spans) {
            self.failed = Some(e);
        }
    }

    fn event(&mut self, e: EventData) {
        if !self.logs {
            return;
        }
        if self.stopped() {
            self.not_sent_logs += 1;
            return;
        }
        if self.pending.first().is_some_and(|p| p.process != e.process) {
            self.hand_logs();
        }
        self.pending.push(e);
        if self.pending.len() >= LOG_BATCH {
            self.hand_logs();
        }
    }

    fn hand_logs(&mut self) {
        let Some(first) = self.pending.first() else {
            return;
        };
        if self.stopped() {
            self.not_sent_logs += self.pending.len() as u64;
            self.pending.clear();
            return;
        }
        let logs = self.resources.logs(first.process, &self.pending);
        self.pending.clear();
        if let Err(e) = self.sender.push_logs(logs) {
            self.failed = Some(e);
        }
    }

    /// Sends what is left and sums up: an error when anything was not
    /// delivered.
    pub(crate) fn finish(mut self, assembled: AssembleSummary) -> Result<OtlpSummary, OtlpError> {
        self.hand_logs();
        if !self.stopped() {
            if let Err(e) = self.sender.flush() {
                self.failed = Some(e);
            }
        }
        let summary = OtlpSummary {
            kept: self.keep.stats().clone(),
            assembled,
            sent: self.sender.stats().clone(),
            not_sent_spans: self.not_sent_spans,
            not_sent_logs: self.not_sent_logs,
        };
        match self.failed {
            None => Ok(summary),
            Some(source) => Err(OtlpError::Undelivered {
                source,
                summary: Box::new(summary),
            }),
        }
    }
}
