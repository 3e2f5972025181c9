//! Figures computed from a trace by ringtrace's own reader.
