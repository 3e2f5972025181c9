//! The five tables and their Parquet schemas (message types), which other
//! tools depend on: change a column's name or type only with them.
//!
//! Times and durations are plain INT64 ns (no TIMESTAMP annotation), so
//! that DuckDB and ClickHouse read them alike; strings are BYTE_ARRAY
//! annotated STRING; a nullable column is OPTIONAL; `fields` is the
//! standard three-level MAP.

/// One table of the export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Table {
    Events,
    Spans,
    Losses,
    Processes,
    Sections,
}

impl Table {
    /// Every table, in the order written.
    pub const ALL: [Table; 5] = [
        Table::Events,
        Table::Spans,
        Table::Losses,
        Table::Processes,
        Table::Sections,
    ];

    /// Its name: the message's, and its file's stem.
    pub fn name(self) -> &'static str {
        match self {
            Table::Events => "events",
            Table::Spans => "spans",
            Table::Losses => "losses",
            Table::Processes => "processes",
            Table::Sections => "sections",
        }
    }

    /// Its file's name in the export directory.
    pub fn file(self) -> &'static str {
        match self {
            Table::Events => "events.parquet",
            Table::Spans => "spans.parquet",
            Table::Losses => "losses.parquet",
            Table::Processes => "processes.parquet",
            Table::Sections => "sections.parquet",
        }
    }

    /// Its schema, as `parse_message_type` reads it.
    pub fn message(self) -> &'static str {
        match self {
            Table::Events => EVENTS,
            Table::Spans => SPANS,
            Table::Losses => LOSSES,
            Table::Processes => PROCESSES,
            Table::Sections => SECTIONS,
        }
    }
}

/// The file names of an export: all a directory it replaces may hold.
pub(crate) fn files() -> impl Iterator<Item = &'static str> {
    Table::ALL.into_iter().map(Table::file)
}

const EVENTS: &str = "message events {
  required binary host (STRING);
  required int64 pid;
  required binary comm (STRING);
  required int64 tid;
  required int32 cpu;
  required int64 time_ns;
  required int64 unix_ns;
  required binary kind (STRING);
  required binary name (STRING);
  optional binary level (STRING);
  optional binary target (STRING);
  optional group fields (MAP) {
    repeated group key_value {
      required binary key (STRING);
      optional binary value (STRING);
    }
  }
  required int64 lost_before;
}";

const SPANS: &str = "message spans {
  required binary host (STRING);
  required int64 pid;
  required binary comm (STRING);
  required binary trace_id (STRING);
  required binary span_id (STRING);
  optional binary parent_span_id (STRING);
  required binary name (STRING);
  required binary target (STRING);
  optional binary level (STRING);
  required int64 tid;
  required int32 threads;
  required boolean task;
  required int64 start_ns;
  required int64 end_ns;
  required int64 duration_ns;
  required int64 busy_ns;
  required int64 start_unix_ns;
  required int64 end_unix_ns;
  required boolean closed;
  required boolean error;
  required boolean local;
  required int64 events;
  optional group fields (MAP) {
    repeated group key_value {
      required binary key (STRING);
      optional binary value (STRING);
    }
  }
}";

const LOSSES: &str = "message losses {
  required binary host (STRING);
  required int64 pid;
  required binary comm (STRING);
  required int32 cpu;
  required int64 time_ns;
  required int64 unix_ns;
  required int64 count;
  required binary cause (STRING);
}";

const PROCESSES: &str = "message processes {
  required binary host (STRING);
  required int64 pid;
  required binary comm (STRING);
  required binary clock (STRING);
  required binary ring (STRING);
  required int64 events;
  required int64 lost;
  optional int64 first_ns;
  optional int64 last_ns;
  required binary wall_source (STRING);
}";

const SECTIONS: &str = "message sections {
  required binary host (STRING);
  required int64 pid;
  required binary comm (STRING);
  required int64 tid;
  required int32 cpu;
  required binary section (STRING);
  required int64 start_ns;
  required int64 end_ns;
  required int64 duration_ns;
  required int64 start_unix_ns;
  required boolean closed;
}";

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::schema::parser::parse_message_type;

    #[test]
    fn every_schema_parses_and_names_its_table_and_file() {
        for t in Table::ALL {
            let schema = parse_message_type(t.message()).unwrap();
            assert_eq!(schema.name(), t.name());
            assert_eq!(t.file(), format!("{}.parquet", t.name()));
            let names: Vec<&str> = schema.get_fields().iter().map(|f| f.name()).collect();
            assert_eq!(names[..3], ["host", "pid", "comm"], "{}", t.name());
        }
    }
}
