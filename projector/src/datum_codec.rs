//! A schema with its named types resolved once, to read the many datums
//! written with it and to write values with it: resolving a schema's names
//! (a map of every named type, each name hashed) costs more than decoding
//! an event, and apache-avro's datum reader and writer, which hold them,
//! borrow their schema. This module keeps the three together.
//!
//! It reads and writes bytes only; what an event is, is
//! [`crate::events::decode`]'s.

use apache_avro::Schema;
use apache_avro::reader::datum::GenericDatumReader;
use apache_avro::types::Value;
use apache_avro::writer::datum::GenericDatumWriter;

/// A schema and apache-avro's datum reader and writer of it.
pub struct DatumCodec(Resolved);

#[ouroboros::self_referencing]
struct Resolved {
    schema: Schema,
    #[borrows(schema)]
    #[covariant]
    reader: GenericDatumReader<'this>,
    #[borrows(schema)]
    #[covariant]
    writer: GenericDatumWriter<'this>,
}

impl DatumCodec {
    /// A codec of datums written with `schema`; fails when the schema
    /// refers to a named type it does not define.
    pub fn new(schema: Schema) -> Result<DatumCodec, apache_avro::Error> {
        Resolved::try_new(
            schema,
            |schema| GenericDatumReader::builder(schema).build(),
            |schema| GenericDatumWriter::builder(schema).build(),
        )
        .map(DatumCodec)
    }

    pub fn schema(&self) -> &Schema {
        self.0.borrow_schema()
    }

    /// apache-avro's reader, its names resolved.
    pub fn reader(&self) -> &GenericDatumReader<'_> {
        self.0.borrow_reader()
    }

    /// Reads one datum as generic values, for a schema that needs resolving.
    pub fn read_value(&self, datum: &mut &[u8]) -> Result<Value, apache_avro::Error> {
        self.reader().read_value(datum)
    }

    /// Writes `value`, which must match the schema, as one datum.
    pub fn write_value(&self, value: Value) -> Result<Vec<u8>, apache_avro::Error> {
        self.0.borrow_writer().write_value_to_vec(value)
    }
}

impl std::fmt::Debug for DatumCodec {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self.schema() {
            Schema::Record(record) => record.name.fullname(None),
            other => format!("{other:?}"),
        };
        formatter.debug_tuple("DatumCodec").field(&name).finish()
    }
}
