//! The Parsing Canonical Form of an Avro schema, as the Avro specification
//! defines it, computed from the parsed schema. It tells whether a writer
//! schema is the contract's (`Contract::is_reader_schema`), whether a part
//! of one reads unchanged (`resolution`), and it is what a single-object
//! fingerprint hashes (`source::kafka::fingerprint`).
//!
//! apache-avro's own form is not used, for two reasons. It leaves a
//! primitive with a logical type wrapped (`{"type":"long"}`), where the
//! specification's \[PRIMITIVES\] rule, and the Java and Python
//! implementations with it, give `"long"`. And it panics on schemas it
//! parsed without complaint: a field carrying a custom attribute `symbols`
//! whose value is `null`, and the
//! schemas given here come from outside: file headers, a schema registry,
//! a directory of writer schemas.
//!
//! The form keeps, in this order, only `name` (the full name), `type`,
//! `fields`, `symbols`, `items`, `values` and `size`; a named type defined
//! earlier is its full name; a logical type is the type it annotates.
//! This module walks `apache_avro::Schema` and never parses JSON.

use apache_avro::Schema;
use apache_avro::schema::{FixedSchema, InnerDecimalSchema, Name, UuidSchema};

/// The Parsing Canonical Form of `schema`.
pub fn canonical_form(schema: &Schema) -> String {
    let mut form = String::new();
    write_schema(schema, &mut form);
    form
}

fn write_schema(schema: &Schema, form: &mut String) {
    match schema {
        Schema::Null => write_string("null", form),
        Schema::Boolean => write_string("boolean", form),
        Schema::Int | Schema::Date | Schema::TimeMillis => write_string("int", form),
        Schema::Long
        | Schema::TimeMicros
        | Schema::TimestampMillis
        | Schema::TimestampMicros
        | Schema::TimestampNanos
        | Schema::LocalTimestampMillis
        | Schema::LocalTimestampMicros
        | Schema::LocalTimestampNanos => write_string("long", form),
        Schema::Float => write_string("float", form),
        Schema::Double => write_string("double", form),
        Schema::Bytes | Schema::BigDecimal | Schema::Uuid(UuidSchema::Bytes) => write_string("bytes", form),
        Schema::String | Schema::Uuid(UuidSchema::String) => write_string("string", form),
        Schema::Uuid(UuidSchema::Fixed(fixed)) | Schema::Duration(fixed) => write_fixed(fixed, form),
        Schema::Decimal(decimal) => match &decimal.inner {
            InnerDecimalSchema::Bytes => write_string("bytes", form),
            InnerDecimalSchema::Fixed(fixed) => write_fixed(fixed, form),
        },
        Schema::Array(array) => {
            form.push_str(r#"{"type":"array","items":"#);
            write_schema(&array.items, form);
            form.push('}');
        }
        Schema::Map(map) => {
            form.push_str(r#"{"type":"map","values":"#);
            write_schema(&map.types, form);
            form.push('}');
        }
        Schema::Union(union) => write_list(union.variants(), write_schema, form),
        Schema::Record(record) => {
            write_named_start(&record.name, "record", form);
            form.push_str(r#","fields":"#);
            write_list(
                &record.fields,
                |field, form| {
                    form.push_str(r#"{"name":"#);
                    write_string(&field.name, form);
                    form.push_str(r#","type":"#);
                    write_schema(&field.schema, form);
                    form.push('}');
                },
                form,
            );
            form.push('}');
        }
        Schema::Enum(enumeration) => {
            write_named_start(&enumeration.name, "enum", form);
            form.push_str(r#","symbols":"#);
            write_list(&enumeration.symbols, |symbol, form| write_string(symbol, form), form);
            form.push('}');
        }
        Schema::Fixed(fixed) => write_fixed(fixed, form),
        Schema::Ref { name } => write_string(&name.fullname(None), form),
    }
}

/// A JSON array of `items`, each written by `write_item`.
fn write_list<T>(items: &[T], write_item: impl Fn(&T, &mut String), form: &mut String) {
    form.push('[');
    for (index, item) in items.iter().enumerate() {
        if index > 0 {
            form.push(',');
        }
        write_item(item, form);
    }
    form.push(']');
}

fn write_named_start(name: &Name, kind: &str, form: &mut String) {
    form.push_str(r#"{"name":"#);
    write_string(&name.fullname(None), form);
    form.push_str(r#","type":"#);
    write_string(kind, form);
}

fn write_fixed(fixed: &FixedSchema, form: &mut String) {
    write_named_start(&fixed.name, "fixed", form);
    form.push_str(&format!(r#","size":{}}}"#, fixed.size));
}

/// A JSON string: quotes, backslashes and control characters escaped, every
/// other character as itself (\[STRINGS\]).
fn write_string(text: &str, form: &mut String) {
    form.push_str(&serde_json::Value::from(text).to_string());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form_of(text: &str) -> String {
        canonical_form(&Schema::parse_str(text).expect("a schema"))
    }

    #[test]
    fn primitives_and_logical_types_are_their_names() {
        assert_eq!(form_of(r#"{"type":"int"}"#), r#""int""#);
        assert_eq!(form_of(r#"{"type":"long","logicalType":"timestamp-millis"}"#), r#""long""#);
        assert_eq!(form_of(r#"{"type":"int","logicalType":"date"}"#), r#""int""#);
        assert_eq!(form_of(r#"{"type":"string","logicalType":"uuid"}"#), r#""string""#);
    }

    #[test]
    fn named_types_are_full_names_with_only_the_kept_attributes_in_order() {
        let schema = r#"{
            "type": "record", "name": "Event", "namespace": "org.lcc", "doc": "dropped", "aliases": ["Old"],
            "fields": [
                {"name": "kind", "doc": "dropped", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
                {"name": "hash", "type": {"type": "fixed", "name": "Hash", "namespace": "other", "size": 32}},
                {"name": "again", "type": "Kind", "default": "A"},
                {"name": "tags", "type": {"type": "array", "items": "string"}},
                {"name": "counts", "type": {"type": "map", "values": ["null", "long"]}}
            ]
        }"#;
        assert_eq!(
            form_of(schema),
            concat!(
                r#"{"name":"org.lcc.Event","type":"record","fields":["#,
                r#"{"name":"kind","type":{"name":"org.lcc.Kind","type":"enum","symbols":["A","B"]}},"#,
                r#"{"name":"hash","type":{"name":"other.Hash","type":"fixed","size":32}},"#,
                r#"{"name":"again","type":"org.lcc.Kind"},"#,
                r#"{"name":"tags","type":{"type":"array","items":"string"}},"#,
                r#"{"name":"counts","type":{"type":"map","values":["null","long"]}}]}"#
            )
        );
    }

    /// apache-avro 0.22 parses this schema and then panics computing its
    /// own canonical form.
    #[test]
    fn a_custom_attribute_named_like_a_kept_one_is_dropped_without_a_panic() {
        let with_attribute =
            r#"{"type":"record","name":"R","fields":[{"name":"at","type":["null","int"],"symbols":null}]}"#;
        assert_eq!(
            form_of(with_attribute),
            r#"{"name":"R","type":"record","fields":[{"name":"at","type":["null","int"]}]}"#
        );
    }
}
