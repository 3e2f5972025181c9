//! A table being written: its rows buffered column by column, and written
//! as one row group each time `row_group_rows` of them are buffered, so
//! that memory holds one row group per table whatever the trace's size.
//!
//! A row is pushed column by column in the schema's order ([`Row`]); the
//! buffers are made from the schema itself, so a value of the wrong type
//! or a row of the wrong length is caught (as [`ParquetError::Schema`])
//! rather than written.
//!
//! Levels: a nullable (OPTIONAL) column has definition level 1 for a
//! value, 0 for NULL. The MAP `fields` is two leaf columns, `key` and
//! `value`, under `fields` (OPTIONAL) and `key_value` (REPEATED): an
//! empty map is one level entry (definition 1, repetition 0); each entry
//! has `key` at definition 2 and `value` at 3 (2 when NULL), the first of
//! a row at repetition 0 and the others at 1.

use crate::error::ParquetError;
use crate::schema::Table;
use parquet::basic::{Repetition, Type as Physical};
use parquet::column::writer::ColumnWriter;
use parquet::data_type::ByteArray;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::{SerializedFileWriter, SerializedRowGroupWriter};
use parquet::schema::parser::parse_message_type;
use parquet::schema::types::Type;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod row;

pub(crate) use row::{saturated, Row};

/// One column's buffered values (and levels, where it has them).
#[derive(Debug)]
enum Buffer {
    Int64(Vec<i64>, Option<Vec<i16>>),
    Int32(Vec<i32>, Option<Vec<i16>>),
    Bool(Vec<bool>, Option<Vec<i16>>),
    Str(Vec<ByteArray>, Option<Vec<i16>>),
    Map(MapBuffer),
}

/// A MAP<STRING, STRING> column's two leaves.
#[derive(Debug, Default)]
struct MapBuffer {
    keys: Vec<ByteArray>,
    values: Vec<ByteArray>,
    key_defs: Vec<i16>,
    value_defs: Vec<i16>,
    reps: Vec<i16>,
}

impl Buffer {
    /// The buffer of schema field `f`.
    fn of(f: &Type) -> Result<Buffer, String> {
        if !f.is_primitive() {
            return Ok(Buffer::Map(MapBuffer::default()));
        }
        let defs = (f.get_basic_info().repetition() == Repetition::OPTIONAL).then(Vec::new);
        Ok(match f.get_physical_type() {
            Physical::INT64 => Buffer::Int64(Vec::new(), defs),
            Physical::INT32 => Buffer::Int32(Vec::new(), defs),
            Physical::BOOLEAN => Buffer::Bool(Vec::new(), defs),
            Physical::BYTE_ARRAY => Buffer::Str(Vec::new(), defs),
            other => return Err(format!("column `{}` is {other}", f.name())),
        })
    }

    fn clear(&mut self) {
        match self {
            Buffer::Int64(v, d) => (v.clear(), d.as_mut().map(Vec::clear)),
            Buffer::Int32(v, d) => (v.clear(), d.as_mut().map(Vec::clear)),
            Buffer::Bool(v, d) => (v.clear(), d.as_mut().map(Vec::clear)),
            Buffer::Str(v, d) => (v.clear(), d.as_mut().map(Vec::clear)),
            Buffer::Map(m) => (*m = MapBuffer::default(), None),
        };
    }
}

/// Pushes `value` (`None`: NULL) into a buffer of values and levels.
fn put<T>(values: &mut Vec<T>, defs: &mut Option<Vec<i16>>, value: Option<T>) -> bool {
    match (defs, value) {
        (None, Some(v)) => values.push(v),
        (None, None) => return false,
        (Some(d), Some(v)) => {
            d.push(1);
            values.push(v);
        }
        (Some(d), None) => d.push(0),
    }
    true
}

/// A table being written: its file, its buffered rows.
pub(crate) struct TableWriter {
    table: Table,
    /// Where the file goes once the export is complete (for errors).
    target: PathBuf,
    /// Where it is written.
    path: PathBuf,
    writer: SerializedFileWriter<File>,
    names: Vec<String>,
    buffers: Vec<Buffer>,
    buffered: usize,
    rows: u64,
    row_group_rows: usize,
    /// The first row that did not fit the schema, in words.
    broken: Option<String>,
}

impl TableWriter {
    /// A new file for `table` in `dir` (its final place `target_dir`).
    pub fn create(
        table: Table,
        dir: &Path,
        target_dir: &Path,
        properties: &Arc<WriterProperties>,
        row_group_rows: usize,
    ) -> Result<TableWriter, ParquetError> {
        let target = target_dir.join(table.file());
        let bad = |why: String| ParquetError::Schema {
            table: table.name(),
            why,
        };
        let schema = parse_message_type(table.message()).map_err(|e| bad(e.to_string()))?;
        let names = schema
            .get_fields()
            .iter()
            .map(|f| f.name().to_owned())
            .collect();
        let buffers = schema
            .get_fields()
            .iter()
            .map(|f| Buffer::of(f))
            .collect::<Result<Vec<_>, _>>()
            .map_err(bad)?;
        let path = dir.join(table.file());
        let file = File::create(&path).map_err(|e| ParquetError::io(&target, "create", e))?;
        let writer = SerializedFileWriter::new(file, Arc::new(schema), properties.clone())
            .map_err(|source| ParquetError::Parquet {
                path: target.clone(),
                source,
            })?;
        Ok(TableWriter {
            table,
            target,
            path,
            writer,
            names,
            buffers,
            buffered: 0,
            rows: 0,
            row_group_rows,
            broken: None,
        })
    }

    /// Writes the buffered rows as one row group (none if none).
    pub fn flush(&mut self) -> Result<(), ParquetError> {
        if let Some(why) = self.broken.take() {
            return Err(ParquetError::Schema {
                table: self.table.name(),
                why,
            });
        }
        if self.buffered == 0 {
            return Ok(());
        }
        let target = &self.target;
        let failed = |source| ParquetError::Parquet {
            path: target.clone(),
            source,
        };
        let mut group = self.writer.next_row_group().map_err(failed)?;
        for b in &self.buffers {
            write_buffer(b, &mut group).map_err(failed)?;
        }
        group.close().map_err(failed)?;
        self.buffers.iter_mut().for_each(Buffer::clear);
        self.buffered = 0;
        Ok(())
    }

    /// Writes the rows still buffered and the file's footer: the table's
    /// summary.
    pub fn finish(mut self) -> Result<crate::TableSummary, ParquetError> {
        self.flush()?;
        self.writer
            .close()
            .map_err(|source| ParquetError::Parquet {
                path: self.target.clone(),
                source,
            })?;
        let bytes = std::fs::metadata(&self.path)
            .map_err(|e| ParquetError::io(&self.target, "read the size of", e))?
            .len();
        Ok(crate::TableSummary {
            name: self.table.name().to_owned(),
            path: self.target,
            rows: self.rows,
            bytes,
        })
    }
}

type Written = parquet::errors::Result<()>;

/// Writes the next leaf column of `group` with `write`.
fn leaf(
    group: &mut SerializedRowGroupWriter<'_, File>,
    write: &mut dyn FnMut(&mut ColumnWriter<'_>) -> Written,
) -> Written {
    use parquet::errors::ParquetError as E;
    let mut column = group
        .next_column()?
        .ok_or_else(|| E::General("a column is missing".into()))?;
    write(column.untyped())?;
    column.close()
}

fn mismatch() -> parquet::errors::ParquetError {
    parquet::errors::ParquetError::General("a column's type is not its buffer's".into())
}

/// Writes one buffer into its leaf column(s) of `group`.
fn write_buffer(b: &Buffer, group: &mut SerializedRowGroupWriter<'_, File>) -> Written {
    match b {
        Buffer::Int64(v, d) => leaf(group, &mut |c| match c {
            ColumnWriter::Int64ColumnWriter(w) => w.write_batch(v, d.as_deref(), None).map(drop),
            _ => Err(mismatch()),
        }),
        Buffer::Int32(v, d) => leaf(group, &mut |c| match c {
            ColumnWriter::Int32ColumnWriter(w) => w.write_batch(v, d.as_deref(), None).map(drop),
            _ => Err(mismatch()),
        }),
        Buffer::Bool(v, d) => leaf(group, &mut |c| match c {
            ColumnWriter::BoolColumnWriter(w) => w.write_batch(v, d.as_deref(), None).map(drop),
            _ => Err(mismatch()),
        }),
        Buffer::Str(v, d) => leaf(group, &mut |c| match c {
            ColumnWriter::ByteArrayColumnWriter(w) => {
                w.write_batch(v, d.as_deref(), None).map(drop)
            }
            _ => Err(mismatch()),
        }),
        Buffer::Map(m) => {
            for (values, defs) in [(&m.keys, &m.key_defs), (&m.values, &m.value_defs)] {
                leaf(group, &mut |c| match c {
                    ColumnWriter::ByteArrayColumnWriter(w) => {
                        w.write_batch(values, Some(defs), Some(&m.reps)).map(drop)
                    }
                    _ => Err(mismatch()),
                })?;
            }
            Ok(())
        }
    }
}
