//! OTLP export.
