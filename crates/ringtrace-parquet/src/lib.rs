//! Parquet export.
