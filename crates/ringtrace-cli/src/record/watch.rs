//! What looks at each page as it is drained, besides the session: the
//! `--live` printer and the `--endpoint` OTLP stream.

use super::live::Printer;
#[cfg(feature = "otlp")]
use super::otlp::OtlpStream;
use ringtrace_ring::file::FileHeader;
use ringtrace_ring::PageBuf;

/// The watchers of a recording.
#[derive(Default)]
pub struct Watch {
    /// `--live`.
    pub printer: Option<Printer>,
    /// `--endpoint`.
    #[cfg(feature = "otlp")]
    pub otlp: Option<OtlpStream>,
}

impl Watch {
    /// Shows `page`, drained from the ring of the process with `header`,
    /// `metadata` and the `records` appended so far, to each watcher.
    pub fn page(
        &mut self,
        header: &FileHeader,
        metadata: &[u8],
        records: &[Vec<u8>],
        page: &PageBuf,
    ) {
        if let Some(p) = self.printer.as_mut() {
            p.page(header, metadata, records, page);
        }
        #[cfg(feature = "otlp")]
        if let Some(o) = self.otlp.as_mut() {
            o.page(header, metadata, records, page);
        }
    }

    /// A drain round is over.
    pub fn round(&mut self) {
        #[cfg(feature = "otlp")]
        if let Some(o) = self.otlp.as_mut() {
            o.round();
        }
    }
}
