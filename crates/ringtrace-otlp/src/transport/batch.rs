//! The queue of one signal's items waiting to be sent, and the cutting of
//! it into batches no larger than `max_batch_bytes`.
//!
//! Sizes are counted without encoding: an item's size is what it takes as
//! one element of a request (`key + length + encoded_len`). Merging items
//! of the same resource only removes bytes (a resource, a length prefix)
//! and can grow an outer length prefix by less than it removes, because
//! `varint_len(a + b) <= varint_len(a) + varint_len(b)`; so the sum of the
//! item sizes is an upper bound on the merged request's size, and a batch
//! cut by that sum never exceeds `max_batch_bytes` (unless it is a single
//! item already larger, which is sent alone).

use std::collections::VecDeque;

use super::signal::Signal;

/// One item waiting, with its sizes computed once.
struct Queued<S> {
    item: S,
    /// The item's encoded size as one element of a request.
    bytes: usize,
    /// The records (spans or log records) it carries.
    records: u64,
}

/// Items merged into one request.
pub(super) struct Batch<S> {
    /// The request's items, one per distinct resource.
    pub(super) items: Vec<S>,
    /// The records the batch carries.
    pub(super) records: u64,
}

/// The items of one signal waiting to be sent, oldest first.
pub(super) struct Queue<S> {
    items: VecDeque<Queued<S>>,
    /// The sum of the items' `bytes`.
    bytes: usize,
}

impl<S: Signal> Queue<S> {
    /// An empty queue.
    pub(super) fn new() -> Self {
        Queue {
            items: VecDeque::new(),
            bytes: 0,
        }
    }

    /// The encoded bytes waiting (an upper bound on their requests' size).
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Adds an item at the back.
    pub(super) fn push(&mut self, item: S) {
        let bytes = element_len(&item);
        let records = item.record_count();
        self.bytes = self.bytes.saturating_add(bytes);
        self.items.push_back(Queued {
            item,
            bytes,
            records,
        });
    }

    /// Takes the oldest items that fit in `max_batch_bytes` (at least one),
    /// merged, if the queue holds a full batch's worth or `everything` is
    /// asked for; `None` when there is nothing (or not enough) to send.
    pub(super) fn take_batch(
        &mut self,
        max_batch_bytes: usize,
        everything: bool,
    ) -> Option<Batch<S>> {
        if self.items.is_empty() || (!everything && self.bytes < max_batch_bytes) {
            return None;
        }
        let mut batch = Batch {
            items: Vec::new(),
            records: 0,
        };
        let mut batch_bytes = 0usize;
        while let Some(next) = self.items.front() {
            let fits = batch_bytes.saturating_add(next.bytes) <= max_batch_bytes;
            if !batch.items.is_empty() && !fits {
                break;
            }
            let Some(queued) = self.items.pop_front() else {
                break;
            };
            batch_bytes = batch_bytes.saturating_add(queued.bytes);
            self.bytes = self.bytes.saturating_sub(queued.bytes);
            batch.records += queued.records;
            queued.item.merge_into(&mut batch.items);
        }
        Some(batch)
    }
}

/// The bytes `item` takes as field 1 (`resource_spans` / `resource_logs`)
/// of an `Export*ServiceRequest`.
fn element_len<S: prost::Message>(item: &S) -> usize {
    let len = item.encoded_len();
    prost::encoding::key_len(1) + prost::encoding::encoded_len_varint(len as u64) + len
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};

    fn item(id: u8, name_bytes: usize) -> ResourceSpans {
        ResourceSpans {
            scope_spans: vec![ScopeSpans {
                spans: vec![Span {
                    span_id: vec![id; 8],
                    name: "n".repeat(name_bytes),
                    ..Span::default()
                }],
                ..ScopeSpans::default()
            }],
            ..ResourceSpans::default()
        }
    }

    #[test]
    fn batches_stay_under_the_limit_and_keep_every_item() {
        let mut queue = Queue::new();
        for id in 0..50 {
            queue.push(item(id, usize::from(id) * 7));
        }
        let limit = 600;
        let mut seen = Vec::new();
        while let Some(batch) = queue.take_batch(limit, true) {
            let encoded = ResourceSpans::encode_request(batch.items.clone());
            let ids: Vec<u8> = batch
                .items
                .iter()
                .flat_map(|rs| &rs.scope_spans)
                .flat_map(|ss| &ss.spans)
                .map(|span| span.span_id[0])
                .collect();
            assert_eq!(ids.len() as u64, batch.records);
            assert!(
                encoded.len() <= limit || ids.len() == 1,
                "{} bytes",
                encoded.len()
            );
            seen.extend(ids);
        }
        assert_eq!(seen, (0..50).collect::<Vec<u8>>());
        assert_eq!(queue.bytes(), 0);
    }

    #[test]
    fn an_item_larger_than_a_batch_goes_alone() {
        let mut queue = Queue::new();
        queue.push(item(1, 10));
        queue.push(item(2, 5000));
        queue.push(item(3, 10));
        let sizes: Vec<u64> =
            std::iter::from_fn(|| queue.take_batch(1000, true).map(|b| b.records)).collect();
        assert_eq!(sizes, [1, 1, 1]);
    }

    #[test]
    fn a_partial_batch_waits_unless_everything_is_asked_for() {
        let mut queue = Queue::new();
        queue.push(item(1, 10));
        assert!(queue.take_batch(1000, false).is_none());
        assert!(queue.take_batch(1000, true).is_some());
        assert!(queue.take_batch(1000, true).is_none());
    }
}
