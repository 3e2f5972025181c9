//! Names that stay the same each time a trace is read: span uids, and
//! the W3C trace context a root span may carry to join a distributed
//! trace.

use thiserror::Error;

/// FNV-1a, 64 bits, over `parts` in order (each as its 8 little-endian
/// bytes), never 0.
pub(crate) fn stable_hash(parts: &[u64]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    // A last mix, so that uids that differ in one input differ in every
    // byte (an OTLP span id is compared as bytes).
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h.max(1)
}

/// A W3C trace context (`traceparent: 00-TRACEID-SPANID-FLAGS`): the
/// distributed trace a root span joins, and the remote span it is a
/// child of.
///
/// ```
/// use ringtrace_export::spans::TraceContext;
/// let c = TraceContext::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")?;
/// assert_eq!(c.trace_id[0], 0x4b);
/// assert_eq!(c.parent_span_id, 0x00f0_67aa_0ba9_02b7u64.to_be_bytes());
/// assert!(c.sampled);
/// assert!(TraceContext::parse("00-00000000000000000000000000000000-00f067aa0ba902b7-01").is_err());
/// # Ok::<(), ringtrace_export::spans::TraceContextError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TraceContext {
    /// The trace's id.
    pub trace_id: [u8; 16],
    /// The remote parent span's id.
    pub parent_span_id: [u8; 8],
    /// Whether the caller sampled it (flag 01).
    pub sampled: bool,
}

/// Why a `traceparent` value is not a W3C trace context.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("`{given}` is not a W3C traceparent ({why}); expected 00-<32 hex digits>-<16 hex digits>-<2 hex digits>")]
pub struct TraceContextError {
    given: String,
    why: &'static str,
}

fn hex_bytes<const N: usize>(s: &str) -> Option<[u8; N]> {
    if s.len() != 2 * N || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut out = [0u8; N];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

impl TraceContext {
    /// Parses a `traceparent` value (version 00; a later version's first
    /// four parts are read as 00's, as the W3C spec asks).
    pub fn parse(s: &str) -> Result<TraceContext, TraceContextError> {
        let fail = |why| TraceContextError {
            given: s.chars().take(80).collect(),
            why,
        };
        let s = s.trim();
        let parts: Vec<&str> = s.split('-').collect();
        if parts.len() < 4 {
            return Err(fail("it has fewer than four parts"));
        }
        let version = hex_bytes::<1>(parts[0]).ok_or_else(|| fail("bad version"))?;
        if version[0] == 0xff || (version[0] == 0 && parts.len() != 4) {
            return Err(fail("bad version"));
        }
        let trace_id = hex_bytes::<16>(parts[1]).ok_or_else(|| fail("bad trace id"))?;
        let parent_span_id = hex_bytes::<8>(parts[2]).ok_or_else(|| fail("bad parent id"))?;
        let flags = hex_bytes::<1>(parts[3]).ok_or_else(|| fail("bad flags"))?;
        if trace_id == [0; 16] {
            return Err(fail("the trace id is all zeros"));
        }
        if parent_span_id == [0; 8] {
            return Err(fail("the parent id is all zeros"));
        }
        Ok(TraceContext {
            trace_id,
            parent_span_id,
            sampled: flags[0] & 1 == 1,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceparent_parses_only_when_well_formed() {
        let ok = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
        assert!(!TraceContext::parse(ok).unwrap().sampled);
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-zz f92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-é1",
        ] {
            let e = TraceContext::parse(bad).unwrap_err().to_string();
            assert!(e.contains("expected 00-"), "{bad}: {e}");
        }
        let future = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more";
        assert!(TraceContext::parse(future).is_ok());
    }

    #[test]
    fn stable_hashes_differ_by_input_and_are_never_zero() {
        assert_ne!(stable_hash(&[1, 2]), stable_hash(&[2, 1]));
        assert_eq!(stable_hash(&[7, 8]), stable_hash(&[7, 8]));
        assert_ne!(stable_hash(&[]), 0);
    }
}
