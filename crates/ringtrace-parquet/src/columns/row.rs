//! One row pushed into a [`TableWriter`], column by column in the
//! schema's order: a value of another type than its column's, a NULL in
//! a required column, or a row of the wrong length marks the table broken,
//! and its next flush fails with [`ParquetError::Schema`] instead of
//! writing it.

use super::{put, Buffer, TableWriter};
use crate::error::ParquetError;
use parquet::data_type::ByteArray;

impl TableWriter {
    /// A new row, its columns to be pushed in the schema's order.
    pub fn row(&mut self) -> Row<'_> {
        Row { table: self, at: 0 }
    }
}

/// One row being pushed: each method fills the next column.
pub(crate) struct Row<'t> {
    table: &'t mut TableWriter,
    at: usize,
}

impl Row<'_> {
    /// The next column's buffer, or `None` (and the row marked broken)
    /// when there is none or it is not `kind`.
    fn next(&mut self, kind: &str, fits: fn(&Buffer) -> bool) -> Option<&mut Buffer> {
        let at = self.at;
        self.at += 1;
        let t = &mut *self.table;
        match t.buffers.get(at) {
            Some(b) if fits(b) => t.buffers.get_mut(at),
            found => {
                if t.broken.is_none() {
                    t.broken = Some(match found {
                        Some(_) => format!("column `{}` given {kind}", t.names[at]),
                        None => format!("a row has more than {} columns", t.names.len()),
                    });
                }
                None
            }
        }
    }

    fn fail_null(&mut self) {
        let at = self.at - 1;
        if self.table.broken.is_none() {
            self.table.broken = Some(format!(
                "NULL in required column `{}`",
                self.table.names[at]
            ));
        }
    }

    /// An INT64 value (`None`: NULL).
    pub fn i64(&mut self, v: Option<i64>) -> &mut Self {
        if let Some(Buffer::Int64(values, defs)) =
            self.next("an int64", |b| matches!(b, Buffer::Int64(..)))
        {
            if !put(values, defs, v) {
                self.fail_null();
            }
        }
        self
    }

    /// A u64 as INT64, saturated at `i64::MAX`.
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.i64(Some(saturated(v)))
    }

    /// An INT32 value.
    pub fn i32(&mut self, v: i32) -> &mut Self {
        if let Some(Buffer::Int32(values, defs)) =
            self.next("an int32", |b| matches!(b, Buffer::Int32(..)))
        {
            put(values, defs, Some(v));
        }
        self
    }

    /// A BOOLEAN value.
    pub fn bool(&mut self, v: bool) -> &mut Self {
        if let Some(Buffer::Bool(values, defs)) =
            self.next("a boolean", |b| matches!(b, Buffer::Bool(..)))
        {
            put(values, defs, Some(v));
        }
        self
    }

    /// A string (`None`: NULL).
    pub fn str(&mut self, v: Option<ByteArray>) -> &mut Self {
        if let Some(Buffer::Str(values, defs)) =
            self.next("a string", |b| matches!(b, Buffer::Str(..)))
        {
            if !put(values, defs, v) {
                self.fail_null();
            }
        }
        self
    }

    /// A string given as text.
    pub fn text(&mut self, v: &str) -> &mut Self {
        self.str(Some(ByteArray::from(v)))
    }

    /// A MAP<STRING, STRING> of `entries` (empty: an empty map).
    pub fn map<K: AsRef<str>>(
        &mut self,
        entries: impl IntoIterator<Item = (K, String)>,
    ) -> &mut Self {
        if let Some(Buffer::Map(m)) = self.next("a map", |b| matches!(b, Buffer::Map(..))) {
            let mut first = true;
            for (key, value) in entries {
                m.keys.push(ByteArray::from(key.as_ref()));
                m.values.push(ByteArray::from(value.into_bytes()));
                m.key_defs.push(2);
                m.value_defs.push(3);
                m.reps.push(if first { 0 } else { 1 });
                first = false;
            }
            if first {
                m.key_defs.push(1);
                m.value_defs.push(1);
                m.reps.push(0);
            }
        }
        self
    }

    /// Ends the row; writes a row group when `row_group_rows` are
    /// buffered.
    pub fn end(self) -> Result<(), ParquetError> {
        let t = self.table;
        if self.at != t.names.len() && t.broken.is_none() {
            t.broken = Some(format!(
                "a row of {} columns, and the table has {}",
                self.at,
                t.names.len()
            ));
        }
        t.buffered += 1;
        t.rows += 1;
        if t.buffered >= t.row_group_rows || t.broken.is_some() {
            t.flush()?;
        }
        Ok(())
    }
}

/// `v` as INT64: saturated at `i64::MAX` (ns past the year 2262).
pub(crate) fn saturated(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::super::MapBuffer;
    use super::*;
    use crate::schema::Table;
    use parquet::file::properties::WriterProperties;
    use std::sync::Arc;

    fn writer(dir: &ringtrace_testkit::TempDir, table: Table) -> TableWriter {
        let properties = Arc::new(WriterProperties::builder().build());
        TableWriter::create(table, dir.path(), dir.path(), &properties, 1000).unwrap()
    }

    /// A losses row, `cpu` given as `int64` when `wrong`.
    fn loss(t: &mut TableWriter, wrong: bool) -> Result<(), ParquetError> {
        let mut row = t.row();
        row.text("h").i64(Some(1)).text("app");
        if wrong {
            row.u64(0);
        } else {
            row.i32(0);
        }
        row.u64(1).u64(2).u64(3).text("lost");
        row.end()
    }

    #[test]
    fn a_value_of_the_wrong_type_or_a_short_row_fails_naming_the_column() {
        let dir = ringtrace_testkit::TempDir::new("parquet-row");
        let mut t = writer(&dir, Table::Losses);
        loss(&mut t, false).unwrap();
        let err = loss(&mut t, true).unwrap_err().to_string();
        assert!(
            err.contains("losses") && err.contains("column `cpu` given an int64"),
            "{err}"
        );

        let mut t = writer(&dir, Table::Losses);
        let mut row = t.row();
        row.text("h").i64(None);
        let err = row.end().unwrap_err().to_string();
        assert!(err.contains("NULL in required column `pid`"), "{err}");
    }

    #[test]
    fn a_maps_levels_mark_an_empty_map_and_each_entry() {
        let dir = ringtrace_testkit::TempDir::new("parquet-map");
        let mut t = writer(&dir, Table::Sections);
        // Sections have no map: a map given is refused.
        let mut row = t.row();
        row.text("h").map([("k", "v".to_owned())]);
        assert!(row.end().is_err());

        let mut t = writer(&dir, Table::Events);
        for entries in [vec![], vec![("a", "1"), ("b", "2")], vec![("c", "3")]] {
            let mut row = t.row();
            row.text("h")
                .i64(Some(1))
                .text("app")
                .u64(2)
                .i32(0)
                .u64(3)
                .u64(4);
            row.text("tracepoint").text("x").str(None).str(None);
            row.map(entries.into_iter().map(|(k, v)| (k, v.to_owned())));
            row.i64(Some(0));
            row.end().unwrap();
        }
        let Some(Buffer::Map(m)) = t.buffers.get(11) else {
            panic!("column 11 is the map");
        };
        let MapBuffer {
            keys,
            key_defs,
            value_defs,
            reps,
            ..
        } = m;
        assert_eq!(keys.len(), 3);
        assert_eq!(key_defs, &[1, 2, 2, 2]);
        assert_eq!(value_defs, &[1, 3, 3, 3]);
        assert_eq!(reps, &[0, 0, 1, 0]);
        t.finish().unwrap();
    }
}
