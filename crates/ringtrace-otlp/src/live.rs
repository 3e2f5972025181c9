//! The export of rings being drained (`ringtrace record --otlp`): records
//! given as they come, trees sent as soon as they are whole, by a thread
//! of their own so that a slow collector never holds the drain back.

use crate::convert::{host_name, ProcessInfo, Resources};
use crate::export::{OtlpError, OtlpOptions, OtlpSummary};
use crate::pipeline::Pipeline;
use ringtrace_export::spans::{AssembleSummary, Assembled, Assembler, ProcessKey};
use ringtrace_export::WallClock;
use ringtrace_tracepoint::tracing_record::TracingRecord;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::thread::JoinHandle;

/// Pieces (trees, events) waiting for the sending thread: past this, the
/// newest are counted as not sent rather than held.
const QUEUE: usize = 4096;

enum Message {
    Process {
        pid: u32,
        comm: String,
        clock: String,
        wall: WallClock,
    },
    Piece(Assembled),
    /// A process's times map to Unix time otherwise from now on.
    Wall {
        process: usize,
        wall: WallClock,
    },
}

/// A process of a live export, as its ring's header describes it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct LiveProcess<'a> {
    /// Its pid.
    pub pid: u32,
    /// Its command name.
    pub comm: &'a str,
    /// Its ring's clock's name.
    pub clock: &'a str,
    /// How ns of its clock map to Unix time
    /// ([`WallClock::of_process`]).
    pub wall: WallClock,
}

impl<'a> LiveProcess<'a> {
    /// A process with `pid`, `comm`, on clock `clock`, times mapped by
    /// `wall`.
    pub fn new(pid: u32, comm: &'a str, clock: &'a str, wall: WallClock) -> Self {
        LiveProcess {
            pid,
            comm,
            clock,
            wall,
        }
    }
}

/// Span trees sent while their rings are drained.
///
/// Records go to [`LiveExport::record`] as they are drained, in time
/// order for each process; [`LiveExport::round`] after each drain round
/// queues the trees made whole (decided by the keep rules and sent by a
/// thread of the export's own, each batch retried as the transport
/// says, a failed batch counted and the next tried); [`LiveExport::finish`]
/// ends the trees still open and waits for the last batch.
pub struct LiveExport {
    assembler: Assembler,
    processes: usize,
    tx: Option<SyncSender<Message>>,
    worker: Option<JoinHandle<(Pipeline, Receiver<Message>)>>,
    /// Pieces not queued because the queue was full.
    dropped_spans: u64,
    dropped_logs: u64,
}

impl std::fmt::Debug for LiveExport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveExport")
            .field("processes", &self.processes)
            .field("open_trees", &self.assembler.open_trees())
            .finish_non_exhaustive()
    }
}

impl LiveExport {
    /// Starts the sending thread for `options`.
    pub fn start(options: OtlpOptions) -> LiveExport {
        let (tx, rx) = sync_channel::<Message>(QUEUE);
        let host = options.host.clone().unwrap_or_else(host_name);
        let service = options.service_name.clone();
        let mut pipeline = Pipeline::new(Resources::default(), &options).keep_trying();
        let worker = std::thread::Builder::new()
            .name("ringtrace-otlp".into())
            .spawn(move || {
                // `recv` fails once the export's sender is dropped: then
                // everything queued has been taken.
                while let Ok(m) = rx.recv() {
                    match m {
                        Message::Process {
                            pid,
                            comm,
                            clock,
                            wall,
                        } => {
                            let info = ProcessInfo {
                                pid,
                                comm: &comm,
                                clock: &clock,
                                wall,
                            };
                            pipeline.add_process(&info, service.as_deref(), &host);
                        }
                        Message::Piece(a) => pipeline.take(a),
                        Message::Wall { process, wall } => pipeline.set_wall(process, wall),
                    }
                }
                (pipeline, rx)
            })
            .ok();
        LiveExport {
            assembler: Assembler::new(),
            processes: 0,
            tx: Some(tx),
            worker,
            dropped_spans: 0,
            dropped_logs: 0,
        }
    }

    /// Adds a process; returns its key's index (pass it in
    /// [`ProcessKey::new`] with the process's pid and anchor).
    pub fn add_process(&mut self, p: LiveProcess<'_>) -> usize {
        let index = self.processes;
        self.processes += 1;
        if let Some(tx) = &self.tx {
            // Waits for room: a process is never left out.
            let _ = tx.send(Message::Process {
                pid: p.pid,
                comm: p.comm.to_owned(),
                clock: p.clock.to_owned(),
                wall: p.wall,
            });
        }
        index
    }

    /// From now on, the times of the process of key index `process` map
    /// to Unix time by `wall` (its clock anchors record has come, say,
    /// where [`add_process`](Self::add_process) had its header's anchor).
    pub fn set_wall(&mut self, process: usize, wall: WallClock) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Message::Wall { process, wall });
        }
    }

    /// Applies a `tracing` record (see [`Assembler::record`]).
    pub fn record(
        &mut self,
        key: ProcessKey,
        r: &TracingRecord<'_>,
        cpu: usize,
        at: u64,
        start: Option<u64>,
    ) {
        self.assembler.record(key, r, cpu, at, start);
    }

    /// Counts an event that is no `tracing` record.
    pub fn other(&mut self, at: u64) {
        self.assembler.other(at);
    }

    /// Queues for sending what the records so far made whole; what finds
    /// the queue full is counted as not sent.
    pub fn round(&mut self) {
        let ready: Vec<Assembled> = self.assembler.take().collect();
        for a in ready {
            self.queue(a);
        }
    }

    fn queue(&mut self, a: Assembled) {
        let Some(tx) = &self.tx else {
            return;
        };
        if let Err(
            TrySendError::Full(Message::Piece(a)) | TrySendError::Disconnected(Message::Piece(a)),
        ) = tx.try_send(Message::Piece(a))
        {
            match a {
                Assembled::Tree(t) => self.dropped_spans += t.spans.len() as u64,
                Assembled::Event(_) => self.dropped_logs += 1,
                _ => {}
            }
        }
    }

    /// Ends the trees still open (their open spans ended at the last
    /// time seen), sends them, waits for the last batch, and sums up.
    /// Spans that found the queue full count as not sent.
    pub fn finish(mut self) -> Result<OtlpSummary, OtlpError> {
        let assembler = std::mem::take(&mut self.assembler);
        let (rest, summary): (Vec<Assembled>, AssembleSummary) = assembler.finish();
        if let Some(tx) = self.tx.take() {
            for a in rest {
                // The end: wait for room rather than count it lost.
                if let Err(e) = tx.send(Message::Piece(a)) {
                    if let Message::Piece(Assembled::Tree(t)) = e.0 {
                        self.dropped_spans += t.spans.len() as u64;
                    }
                }
            }
        }
        let Some((mut pipeline, _)) = self.worker.take().and_then(|w| w.join().ok()) else {
            return Err(OtlpError::Worker);
        };
        pipeline.not_sent(self.dropped_spans, self.dropped_logs);
        pipeline.finish(summary)
    }
}
