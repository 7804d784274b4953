//! The fingerprint that names a writer schema in Avro's single-object
//! encoding: CRC-64-AVRO of the schema's Parsing Canonical Form, as the Avro
//! specification defines that form. Producers in Java and Python compute it
//! by the specification, so this must too, byte for byte.

use apache_avro::Schema;

use crate::canonical_form::canonical_form;

/// The single-object fingerprint of a schema: CRC-64-AVRO of its Parsing Canonical Form.
pub fn fingerprint(schema: &Schema) -> [u8; 8] {
    crc64_avro(canonical_form(schema).as_bytes()).to_le_bytes()
}

/// The Avro specification's 64-bit Rabin fingerprint (CRC-64-AVRO).
fn crc64_avro(bytes: &[u8]) -> u64 {
    const EMPTY: u64 = 0xc15d_213a_a4d7_a795;
    let table: [u64; 256] = std::array::from_fn(|index| {
        (0..8).fold(index as u64, |print, _| (print >> 1) ^ (EMPTY & (print & 1).wrapping_neg()))
    });
    bytes.iter().fold(EMPTY, |print, byte| (print >> 8) ^ table[((print ^ u64::from(*byte)) & 0xff) as usize])
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
    fn the_crc_is_apache_avros_rabin_fingerprint_of_the_same_form() {
        let contract = crate::contract::Contract::load().expect("contract");
        for topic in crate::contract::Topic::ALL {
            let form = canonical_form(contract.reader_schema(topic));
            let rabin = Schema::parse_str(&form).expect("a form parses").fingerprint::<apache_avro::rabin::Rabin>();
            assert_eq!(
                fingerprint(contract.reader_schema(topic)).to_vec(),
                rabin.bytes[..8].to_vec(),
                "{}",
                topic.name()
            );
        }
    }
}
