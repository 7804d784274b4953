//! The fingerprint that names a writer schema in Avro's single-object
//! encoding: CRC-64-AVRO of the schema's Parsing Canonical Form, as the Avro
//! specification defines that form. Producers in Java and Python compute it
//! by the specification, so this must too, byte for byte.

use apache_avro::Schema;
use apache_avro::rabin::Rabin;

/// The single-object fingerprint of a schema: CRC-64-AVRO of its Parsing Canonical Form.
pub fn fingerprint(schema: &Schema) -> [u8; 8] {
    // The corrected form has no logical types left, so apache-avro's own
    // canonical form of it is the specification's, and so is its fingerprint.
    let corrected = Schema::parse_str(&canonical_form(schema)).unwrap_or_else(|_| schema.clone());
    let bytes = corrected.fingerprint::<Rabin>().bytes;
    let mut fingerprint = [0; 8];
    fingerprint.copy_from_slice(&bytes[..8]);
    fingerprint
}

/// The Parsing Canonical Form as the Avro specification defines it.
///
/// apache-avro 0.22 strips `logicalType` but then leaves the primitive it
/// annotated wrapped (`{"type":"long"}`), where the specification's
/// \[PRIMITIVES\] rule, and with it the Java and Python implementations, give
/// `"long"`. Fingerprints of schemas with logical types (every event here:
/// the envelope's timestamps) would then differ from the producers'. The
/// wrapped forms are unwrapped here; in canonical form a `{` followed by
/// `"type"` only ever starts such a wrapper, since named types start with `"name"`.
pub fn canonical_form(schema: &Schema) -> String {
    let mut form = schema.canonical_form();
    for primitive in ["null", "boolean", "int", "long", "float", "double", "bytes", "string"] {
        form = form.replace(&format!(r#"{{"type":"{primitive}"}}"#), &format!(r#""{primitive}""#));
    }
    form
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_is_the_crc64_avro_of_the_canonical_form_little_endian() {
        // The value the Avro specification's reference implementation gives for the schema "int".
        let schema = Schema::parse_str(r#""int""#).expect("schema");
        assert_eq!(i64::from_le_bytes(fingerprint(&schema)), 8_247_732_601_305_521_295_i64);
    }

    #[test]
    fn the_canonical_form_reduces_primitives_with_logical_types_to_their_names() {
        let schema = Schema::parse_str(
            r#"{"type":"record","name":"r","doc":"d","fields":[{"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}}]}"#,
        )
        .expect("schema");
        assert_eq!(canonical_form(&schema), r#"{"name":"r","type":"record","fields":[{"name":"at","type":"long"}]}"#);
    }
}
