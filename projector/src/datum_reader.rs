//! A writer schema with its named types resolved once, to read the many
//! datums written with it: resolving a schema's names (a map of every named
//! type, each name hashed) costs more than decoding an event, and
//! apache-avro's datum reader, which holds them, borrows its schema. This
//! module keeps the two together.
//!
//! It reads bytes only; what an event is, is [`crate::events::decode`]'s.

use apache_avro::Schema;
use apache_avro::reader::datum::GenericDatumReader;
use apache_avro::types::Value;

/// A schema and apache-avro's datum reader of it.
pub struct DatumReader(Resolved);

#[ouroboros::self_referencing]
struct Resolved {
    schema: Schema,
    #[borrows(schema)]
    #[covariant]
    reader: GenericDatumReader<'this>,
}

impl DatumReader {
    /// A reader of datums written with `schema`; fails when the schema
    /// refers to a named type it does not define.
    pub fn new(schema: Schema) -> Result<DatumReader, apache_avro::Error> {
        Resolved::try_new(schema, |schema| GenericDatumReader::builder(schema).build()).map(DatumReader)
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
}

impl std::fmt::Debug for DatumReader {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self.schema() {
            Schema::Record(record) => record.name.fullname(None),
            other => format!("{other:?}"),
        };
        formatter.debug_tuple("DatumReader").field(&name).finish()
    }
}
