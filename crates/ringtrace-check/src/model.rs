//! What any correct ring must hand out, kept per CPU buffer, without
//! mimicking the page layout: accepted events come out intact, once, in
//! reservation order, at the exact timestamp their reservation got; time
//! never goes back; nothing is lost without being counted, and each loss
//! is reported on the first event after it, exactly.

use crate::{ensure, Violation};
use std::collections::BTreeMap;

/// A payload of exactly `len` (at least 9) bytes that names its id.
pub fn payload_for(id: u64, len: usize) -> Vec<u8> {
    let mut p = id.to_le_bytes().to_vec();
    p.resize(len.max(9) - 1, (id as u8).wrapping_mul(31));
    p.push((id % 251) as u8);
    p
}

/// The id a payload made by [`payload_for`] names.
pub fn id_of(payload: &[u8]) -> Result<u64, Violation> {
    payload
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_le_bytes)
        .ok_or_else(|| {
            Violation::new(
                "an event came out cut short",
                format!("payload of {} bytes", payload.len()),
            )
        })
}

/// One CPU buffer as the model knows it.
#[derive(Debug, Default)]
pub struct CpuModel {
    /// id -> (timestamp given at reserve, payload) of every committed event.
    pub committed: BTreeMap<u64, (u64, Vec<u8>)>,
    /// Ids consumed so far, in read order.
    pub read: Vec<u64>,
    /// The last timestamp a consuming reader returned.
    pub last_read_ts: u64,
    /// The last timestamp a reservation got (the ring's `last_ts`).
    pub last_reserved_ts: Option<u64>,
    /// A fixup took a page, or an overwrite claim stepped over one with a
    /// reservation open in it: events may have been counted lost or
    /// overrun late, and a late commit's loss is reported where the reader
    /// is when it lands, so the exact loss check is off from here.
    pub fixed_up: bool,
    /// Losses reported on a page that held no event to read (only discard
    /// records): they lie before the next event read.
    pub carried_loss: u64,
}

impl CpuModel {
    /// Checks an event a consuming reader returned, `lost` being the loss
    /// it reported just before it.
    pub fn see(&mut self, cpu: usize, ts: u64, payload: &[u8], lost: u64) -> Result<(), Violation> {
        let id = id_of(payload)?;
        if !self.fixed_up {
            // Reads are in order, so every committed event between the last
            // one read and this one was lost, and must be reported here.
            let after = self.read.last().map_or(0, |&l| l + 1);
            let gap = self.committed.range(after..id).count() as u64;
            ensure(
                lost + self.carried_loss == gap,
                "loss reported in the wrong place",
                || {
                    format!(
                    "cpu {cpu}: {} lost reported before event {id}, {gap} committed events were skipped",
                    lost + self.carried_loss
                )
                },
            )?;
        }
        self.carried_loss = 0;
        self.check_intact(cpu, id, ts, payload)?;
        ensure(ts >= self.last_read_ts, "time went back", || {
            format!(
                "cpu {cpu}: event {id} at {ts} read after {}",
                self.last_read_ts
            )
        })?;
        if let Some(&prev) = self.read.last() {
            ensure(id > prev, "out of order or duplicated", || {
                format!("cpu {cpu}: event {id} read after {prev}")
            })?;
        }
        self.last_read_ts = ts;
        self.read.push(id);
        Ok(())
    }

    /// Checks that event `id` was committed here, with this payload and
    /// exactly the timestamp its reservation was given.
    pub fn check_intact(
        &self,
        cpu: usize,
        id: u64,
        ts: u64,
        payload: &[u8],
    ) -> Result<(), Violation> {
        let Some((want_ts, want)) = self.committed.get(&id) else {
            return Err(Violation::new(
                "an event that was never committed came out",
                format!("cpu {cpu}: event {id}, payload {payload:?}"),
            ));
        };
        ensure(want.as_slice() == payload, "an event came out torn", || {
            format!("cpu {cpu}: event {id} is {payload:?}, was written as {want:?}")
        })?;
        ensure(
            *want_ts == ts,
            "a timestamp changed on its way through the ring",
            || format!("cpu {cpu}: event {id} reserved at {want_ts}, read at {ts}"),
        )
    }
}
