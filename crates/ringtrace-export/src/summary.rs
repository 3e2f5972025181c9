//! A recovered trace's decoder, and its metadata in words: what `dump`,
//! the exporters and `ringtrace recover` read a trace's metadata with.

use super::decode::Decoder;
use super::metadata::{MetadataError, TraceMetadata};
use ringtrace_ring::file::{Recovery, UnreadableMetadata};

/// Why a trace's metadata cannot decode its events.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UnusableMetadata {
    /// The file's metadata region could not be read (recovery says why).
    #[error("the file's metadata cannot be read: {0}")]
    Unreadable(#[from] UnreadableMetadata),
    /// It was read and is not valid metadata.
    #[error(transparent)]
    Invalid(#[from] MetadataError),
}

/// A trace's decoder, and its metadata in words.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct MetadataDecoder {
    /// Decodes the trace's events by its metadata and its metadata records
    /// ([`Decoder::metadata_records`]); with unusable metadata, it shows
    /// each tracepoint event raw, saying why.
    pub decoder: Decoder,
    /// The metadata in words (`6 tracepoints`, ...), or why it cannot be
    /// used.
    pub summary: Result<String, UnusableMetadata>,
}

/// A decoder for the file's metadata, carrying its metadata records, and
/// the metadata in words (or why it cannot be used).
pub fn metadata_decoder(r: &Recovery) -> MetadataDecoder {
    let (decoder, summary) = base_decoder(r);
    MetadataDecoder {
        decoder: decoder.with_metadata_records(r.metadata_records().to_vec()),
        summary,
    }
}

fn base_decoder(r: &Recovery) -> (Decoder, Result<String, UnusableMetadata>) {
    let parsed = r
        .metadata
        .as_ref()
        .map_err(|e| UnusableMetadata::Unreadable(e.clone()))
        .and_then(|bytes| TraceMetadata::parse(bytes).map_err(UnusableMetadata::from));
    match parsed {
        Ok(meta) => {
            let mut words = format!(
                "{} tracepoint{}",
                meta.tracepoints.len(),
                if meta.tracepoints.len() == 1 { "" } else { "s" }
            );
            if let Some(u) = &meta.untagged {
                words.push_str(&format!(", untagged layout `{}`", u.name));
            }
            (Decoder::new(&meta), Ok(words))
        }
        Err(why) => (Decoder::unusable(why.to_string()), Err(why)),
    }
}
