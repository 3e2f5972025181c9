//! How a session is written: when chunks rotate, how much is kept, and
//! whether finished chunks are compressed.

use crate::error::OptionsError;
use std::time::Duration;

/// The default size at which a chunk finishes: 4 MiB of entries.
pub const DEFAULT_ROTATE_SIZE: u64 = 4 << 20;
/// The largest `rotate_size`: 1 GiB (a reader holds one chunk's body in
/// memory while it decodes it).
pub const MAX_ROTATE_SIZE: u64 = 1 << 30;
/// The smallest `max_size`: 64 KiB.
pub const MIN_MAX_SIZE: u64 = 64 << 10;

/// How finished chunks are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Compression {
    /// As written.
    #[default]
    None,
    /// The body of each finished chunk as one zstd frame (the crate's
    /// `zstd` feature, on by default).
    Zstd {
        /// zstd's level: 1 (fastest) to 22 (smallest); 3 is zstd's own
        /// default.
        level: i32,
    },
}

/// zstd's levels this crate accepts.
pub const ZSTD_LEVELS: std::ops::RangeInclusive<i32> = 1..=22;

/// How a session is written. Build with [`SessionOptions::default`] and the
/// setters, or set the fields; [`SessionWriter::create`] checks them
/// ([`SessionOptions::check`]).
///
/// ```
/// use ringtrace_session::{Compression, SessionOptions};
/// use std::time::Duration;
/// let options = SessionOptions::default()
///     .rotate_size(1 << 20)
///     .rotate_time(Some(Duration::from_secs(10)))
///     .max_size(Some(1 << 30))
///     .compression(Compression::None);
/// assert!(options.check().is_ok());
/// assert!(SessionOptions::default().rotate_size(0).check().is_err());
/// ```
///
/// [`SessionWriter::create`]: crate::SessionWriter::create
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionOptions {
    /// A chunk finishes once its entries reach this many bytes
    /// (uncompressed): 1 to [`MAX_ROTATE_SIZE`], [`DEFAULT_ROTATE_SIZE`] by
    /// default.
    pub rotate_size: u64,
    /// A chunk finishes once it has been open this long (checked on each
    /// append and on [`ProcessWriter::tick`](crate::ProcessWriter::tick));
    /// `None` (the default): only by size. Not zero.
    pub rotate_time: Option<Duration>,
    /// Keep the finished chunks' bytes on disk under this (at least
    /// [`MIN_MAX_SIZE`]): the oldest are deleted and counted as rotated
    /// out. `None` (the default): keep everything.
    pub max_size: Option<u64>,
    /// How finished chunks are stored: zstd at level 3 when the `zstd`
    /// feature is on (the default), else none.
    pub compression: Compression,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            rotate_size: DEFAULT_ROTATE_SIZE,
            rotate_time: None,
            max_size: None,
            // Opt-in: zstd at level 3 costs the recorder more CPU per
            // event than everything else it does (docs/results.md).
            compression: Compression::None,
        }
    }
}

impl SessionOptions {
    /// Sets [`rotate_size`](SessionOptions::rotate_size).
    pub fn rotate_size(mut self, bytes: u64) -> Self {
        self.rotate_size = bytes;
        self
    }
    /// Sets [`rotate_time`](SessionOptions::rotate_time).
    pub fn rotate_time(mut self, after: Option<Duration>) -> Self {
        self.rotate_time = after;
        self
    }
    /// Sets [`max_size`](SessionOptions::max_size).
    pub fn max_size(mut self, bytes: Option<u64>) -> Self {
        self.max_size = bytes;
        self
    }
    /// Sets [`compression`](SessionOptions::compression).
    pub fn compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// Whether every value is in its range; the error names the value and
    /// the range.
    pub fn check(&self) -> Result<(), OptionsError> {
        if !(1..=MAX_ROTATE_SIZE).contains(&self.rotate_size) {
            return Err(OptionsError::RotateSize {
                value: self.rotate_size,
                max: MAX_ROTATE_SIZE,
            });
        }
        if self.rotate_time == Some(Duration::ZERO) {
            return Err(OptionsError::RotateTime);
        }
        if let Some(max) = self.max_size.filter(|&m| m < MIN_MAX_SIZE) {
            return Err(OptionsError::MaxSize {
                value: max,
                min: MIN_MAX_SIZE,
            });
        }
        match self.compression {
            Compression::None => Ok(()),
            Compression::Zstd { .. } if !cfg!(feature = "zstd") => Err(OptionsError::ZstdNotBuilt),
            Compression::Zstd { level } if !ZSTD_LEVELS.contains(&level) => {
                Err(OptionsError::ZstdLevel {
                    value: level,
                    min: *ZSTD_LEVELS.start(),
                    max: *ZSTD_LEVELS.end(),
                })
            }
            Compression::Zstd { .. } => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_value_out_of_range_is_its_own_error() {
        let d = SessionOptions::default();
        assert!(d.check().is_ok());
        assert!(matches!(
            d.clone().rotate_size(0).check(),
            Err(OptionsError::RotateSize { value: 0, .. })
        ));
        assert!(d.clone().rotate_size(MAX_ROTATE_SIZE + 1).check().is_err());
        assert!(matches!(
            d.clone().rotate_time(Some(Duration::ZERO)).check(),
            Err(OptionsError::RotateTime)
        ));
        assert!(matches!(
            d.clone().max_size(Some(0)).check(),
            Err(OptionsError::MaxSize { value: 0, .. })
        ));
        let level = d
            .clone()
            .compression(Compression::Zstd { level: 23 })
            .check();
        if cfg!(feature = "zstd") {
            let e = level.unwrap_err();
            assert!(
                e.to_string().contains("23") && e.to_string().contains("1 to 22"),
                "{e}"
            );
        } else {
            assert!(matches!(level, Err(OptionsError::ZstdNotBuilt)));
        }
    }
}
