//! JSON writing for the bodies the projector stores: the bytes of
//! `serde_json::to_writer`, written with less work per string.
//!
//! Why: a work's documents hold about two hundred strings, most of them field
//! names, and `serde_json` escapes each byte by byte through its writer and
//! formatter; that was the largest single cost of rendering. Here a string
//! is scanned in eight-byte words and copied in one piece when nothing in it
//! needs escaping, which is every field name and nearly every value.
//!
//! The output must stay byte for byte `serde_json`'s compact output: stored
//! bodies are served as they are, and their tags are hashes of the bytes.
//! So numbers and escapes are written by `serde_json`'s own formatter, and a
//! shape this writer does not handle (a map key that is not a string or an
//! integer) fails, for the caller to serialize with `serde_json` instead.
//!
//! It must not decide what is serialized, only how.

use serde::ser::{self, Serialize};
use serde_json::ser::{CharEscape, CompactFormatter, Formatter};

/// A value this writer does not serialize; `serde_json` serializes it instead.
#[derive(Debug)]
pub struct Unsupported(String);

impl std::fmt::Display for Unsupported {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl std::error::Error for Unsupported {}

impl ser::Error for Unsupported {
    fn custom<T: std::fmt::Display>(message: T) -> Self {
        Unsupported(message.to_string())
    }
}

/// Appends `value` as compact JSON to `out`; on failure `out` holds part of it.
pub fn write(out: &mut Vec<u8>, value: &(impl Serialize + ?Sized)) -> Result<(), Unsupported> {
    value.serialize(&mut Writer { out })
}

struct Writer<'a> {
    out: &'a mut Vec<u8>,
}

/// Whether any of the eight bytes of `word` is a control character, a quote or a backslash.
fn needs_escape(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let has_zero = |word: u64| word.wrapping_sub(ONES) & !word & HIGHS;
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    (below_space | has_zero(word ^ (ONES * u64::from(b'"'))) | has_zero(word ^ (ONES * u64::from(b'\\')))) != 0
}

fn escape_of(byte: u8) -> Option<CharEscape> {
    Some(match byte {
        b'"' => CharEscape::Quote,
        b'\\' => CharEscape::ReverseSolidus,
        0x08 => CharEscape::Backspace,
        0x09 => CharEscape::Tab,
        0x0A => CharEscape::LineFeed,
        0x0C => CharEscape::FormFeed,
        0x0D => CharEscape::CarriageReturn,
        0x00..=0x1F => CharEscape::AsciiControl(byte),
        _ => return None,
    })
}

/// Whether `bytes` holds nothing JSON escapes: read in eight-byte words,
/// the last one overlapping the one before when the length is not a
/// multiple of eight.
#[inline]
fn is_clean(bytes: &[u8]) -> bool {
    let word = |at: usize| bytes.get(at..at + 8).and_then(|word| word.try_into().ok()).map(u64::from_le_bytes);
    if bytes.len() < 8 {
        return bytes.iter().all(|&byte| byte >= 0x20 && byte != b'"' && byte != b'\\');
    }
    let whole_words = bytes.len() / 8;
    (0..whole_words).all(|index| word(index * 8).is_some_and(|word| !needs_escape(word)))
        && word(bytes.len() - 8).is_some_and(|word| !needs_escape(word))
}

/// Appends `value` as a JSON string, escaped as `serde_json` escapes it.
#[inline]
fn write_string(out: &mut Vec<u8>, value: &str) {
    let bytes = value.as_bytes();
    if !is_clean(bytes) {
        return write_escaped(out, bytes);
    }
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    out.extend_from_slice(bytes);
    out.push(b'"');
}

/// [`write_string`] of a string that holds something to escape: rare, so
/// kept out of line, where it would make every string's path longer.
#[cold]
#[inline(never)]
fn write_escaped(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'"');
    let mut start = 0;
    for (index, &byte) in bytes.iter().enumerate() {
        if let Some(escape) = escape_of(byte) {
            out.extend_from_slice(&bytes[start..index]);
            // Writing to a Vec cannot fail.
            let _ = CompactFormatter.write_char_escape(out, escape);
            start = index + 1;
        }
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// A serializer's integer methods, each number written by `serde_json`'s
/// formatter through `$write`: as it is for a value, quoted for a map key.
macro_rules! integers {
    ($write:ident) => {
        fn serialize_i8(self, value: i8) -> Result<(), Unsupported> {
            self.serialize_i64(i64::from(value))
        }

        fn serialize_i16(self, value: i16) -> Result<(), Unsupported> {
            self.serialize_i64(i64::from(value))
        }

        fn serialize_i32(self, value: i32) -> Result<(), Unsupported> {
            self.serialize_i64(i64::from(value))
        }

        fn serialize_i64(self, value: i64) -> Result<(), Unsupported> {
            self.$write(|out| CompactFormatter.write_i64(out, value))
        }

        fn serialize_i128(self, value: i128) -> Result<(), Unsupported> {
            self.$write(|out| CompactFormatter.write_i128(out, value))
        }

        fn serialize_u8(self, value: u8) -> Result<(), Unsupported> {
            self.serialize_u64(u64::from(value))
        }

        fn serialize_u16(self, value: u16) -> Result<(), Unsupported> {
            self.serialize_u64(u64::from(value))
        }

        fn serialize_u32(self, value: u32) -> Result<(), Unsupported> {
            self.serialize_u64(u64::from(value))
        }

        fn serialize_u64(self, value: u64) -> Result<(), Unsupported> {
            self.$write(|out| CompactFormatter.write_u64(out, value))
        }

        fn serialize_u128(self, value: u128) -> Result<(), Unsupported> {
            self.$write(|out| CompactFormatter.write_u128(out, value))
        }
    };
}

impl Writer<'_> {
    fn formatted(&mut self, write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> Result<(), Unsupported> {
        write(self.out).map_err(|error| Unsupported(error.to_string()))
    }
}

impl<'a, 'b> ser::Serializer for &'a mut Writer<'b> {
    type Ok = ();
    type Error = Unsupported;
    type SerializeSeq = Compound<'a, 'b>;
    type SerializeTuple = Compound<'a, 'b>;
    type SerializeTupleStruct = Compound<'a, 'b>;
    type SerializeTupleVariant = Compound<'a, 'b>;
    type SerializeMap = Compound<'a, 'b>;
    type SerializeStruct = Compound<'a, 'b>;
    type SerializeStructVariant = Compound<'a, 'b>;

    integers!(formatted);

    fn serialize_bool(self, value: bool) -> Result<(), Unsupported> {
        self.out.extend_from_slice(if value { b"true" } else { b"false" });
        Ok(())
    }

    fn serialize_f32(self, value: f32) -> Result<(), Unsupported> {
        if !value.is_finite() {
            return self.serialize_unit();
        }
        self.formatted(|out| CompactFormatter.write_f32(out, value))
    }

    fn serialize_f64(self, value: f64) -> Result<(), Unsupported> {
        if !value.is_finite() {
            return self.serialize_unit();
        }
        self.formatted(|out| CompactFormatter.write_f64(out, value))
    }

    fn serialize_char(self, value: char) -> Result<(), Unsupported> {
        self.serialize_str(value.encode_utf8(&mut [0; 4]))
    }

    fn serialize_str(self, value: &str) -> Result<(), Unsupported> {
        write_string(self.out, value);
        Ok(())
    }

    fn serialize_bytes(self, value: &[u8]) -> Result<(), Unsupported> {
        use ser::SerializeSeq;
        let mut seq = self.serialize_seq(Some(value.len()))?;
        for byte in value {
            seq.serialize_element(byte)?;
        }
        seq.end()
    }

    fn serialize_none(self) -> Result<(), Unsupported> {
        self.serialize_unit()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Unsupported> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), Unsupported> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Unsupported> {
        self.serialize_unit()
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Unsupported> {
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Unsupported> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Unsupported> {
        self.out.push(b'{');
        write_string(self.out, variant);
        self.out.push(b':');
        value.serialize(&mut *self)?;
        self.out.push(b'}');
        Ok(())
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Compound<'a, 'b>, Unsupported> {
        self.out.push(b'[');
        Ok(Compound { writer: self, first: true, close: b"]" })
    }

    fn serialize_tuple(self, len: usize) -> Result<Compound<'a, 'b>, Unsupported> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<Compound<'a, 'b>, Unsupported> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a, 'b>, Unsupported> {
        self.out.push(b'{');
        write_string(self.out, variant);
        self.out.extend_from_slice(b":[");
        Ok(Compound { writer: self, first: true, close: b"]}" })
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Compound<'a, 'b>, Unsupported> {
        self.out.push(b'{');
        Ok(Compound { writer: self, first: true, close: b"}" })
    }

    fn serialize_struct(self, _name: &'static str, len: usize) -> Result<Compound<'a, 'b>, Unsupported> {
        self.serialize_map(Some(len))
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a, 'b>, Unsupported> {
        self.out.push(b'{');
        write_string(self.out, variant);
        self.out.extend_from_slice(b":{");
        Ok(Compound { writer: self, first: true, close: b"}}" })
    }
}

/// An array or object being written, and what closes it.
struct Compound<'a, 'b> {
    writer: &'a mut Writer<'b>,
    first: bool,
    close: &'static [u8],
}

impl Compound<'_, '_> {
    fn separate(&mut self) {
        if !std::mem::take(&mut self.first) {
            self.writer.out.push(b',');
        }
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unsupported> {
        self.separate();
        value.serialize(&mut *self.writer)
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), Unsupported> {
        self.separate();
        write_string(self.writer.out, key);
        self.writer.out.push(b':');
        value.serialize(&mut *self.writer)
    }

    fn finish(self) -> Result<(), Unsupported> {
        self.writer.out.extend_from_slice(self.close);
        Ok(())
    }
}

/// The compound traits of arrays: each element through [`Compound::element`].
macro_rules! arrays {
    ($($trait:ident::$method:ident),*) => {$(
        impl ser::$trait for Compound<'_, '_> {
            type Ok = ();
            type Error = Unsupported;

            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unsupported> {
                self.element(value)
            }

            fn end(self) -> Result<(), Unsupported> {
                self.finish()
            }
        }
    )*};
}

arrays!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeMap for Compound<'_, '_> {
    type Ok = ();
    type Error = Unsupported;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Unsupported> {
        self.separate();
        key.serialize(MapKey { out: self.writer.out })?;
        self.writer.out.push(b':');
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unsupported> {
        value.serialize(&mut *self.writer)
    }

    fn end(self) -> Result<(), Unsupported> {
        self.finish()
    }
}

/// The compound traits of structs: each field through [`Compound::field`].
macro_rules! structs {
    ($($trait:ident),*) => {$(
        impl ser::$trait for Compound<'_, '_> {
            type Ok = ();
            type Error = Unsupported;

            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result<(), Unsupported> {
                self.field(key, value)
            }

            fn end(self) -> Result<(), Unsupported> {
                self.finish()
            }
        }
    )*};
}

structs!(SerializeStruct, SerializeStructVariant);

/// A map's key: a string, or an integer written as one, as `serde_json` writes them.
struct MapKey<'a> {
    out: &'a mut Vec<u8>,
}

impl MapKey<'_> {
    fn quoted(self, write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> Result<(), Unsupported> {
        self.out.push(b'"');
        write(self.out).map_err(|error| Unsupported(error.to_string()))?;
        self.out.push(b'"');
        Ok(())
    }

    fn unsupported() -> Result<(), Unsupported> {
        Err(Unsupported("a map key that is neither a string nor an integer".to_owned()))
    }
}

impl ser::Serializer for MapKey<'_> {
    type Ok = ();
    type Error = Unsupported;
    type SerializeSeq = ser::Impossible<(), Unsupported>;
    type SerializeTuple = ser::Impossible<(), Unsupported>;
    type SerializeTupleStruct = ser::Impossible<(), Unsupported>;
    type SerializeTupleVariant = ser::Impossible<(), Unsupported>;
    type SerializeMap = ser::Impossible<(), Unsupported>;
    type SerializeStruct = ser::Impossible<(), Unsupported>;
    type SerializeStructVariant = ser::Impossible<(), Unsupported>;

    integers!(quoted);

    fn serialize_str(self, value: &str) -> Result<(), Unsupported> {
        write_string(self.out, value);
        Ok(())
    }

    fn serialize_char(self, value: char) -> Result<(), Unsupported> {
        self.serialize_str(value.encode_utf8(&mut [0; 4]))
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Unsupported> {
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Unsupported> {
        value.serialize(self)
    }

    fn serialize_bool(self, _value: bool) -> Result<(), Unsupported> {
        Self::unsupported()
    }

    fn serialize_f32(self, _value: f32) -> Result<(), Unsupported> {
        Self::unsupported()
    }

    fn serialize_f64(self, _value: f64) -> Result<(), Unsupported> {
        Self::unsupported()
    }

    fn serialize_bytes(self, _value: &[u8]) -> Result<(), Unsupported> {
        Self::unsupported()
    }

    fn serialize_none(self) -> Result<(), Unsupported> {
        Self::unsupported()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<(), Unsupported> {
        Self::unsupported()
    }

    fn serialize_unit(self) -> Result<(), Unsupported> {
        Self::unsupported()
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Unsupported> {
        Self::unsupported()
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<(), Unsupported> {
        Self::unsupported()
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, Unsupported> {
        Err(Unsupported("a map key that is a sequence".to_owned()))
    }

    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, Unsupported> {
        Err(Unsupported("a map key that is a tuple".to_owned()))
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct, Unsupported> {
        Err(Unsupported("a map key that is a tuple".to_owned()))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, Unsupported> {
        Err(Unsupported("a map key that is a tuple".to_owned()))
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, Unsupported> {
        Err(Unsupported("a map key that is a map".to_owned()))
    }

    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self::SerializeStruct, Unsupported> {
        Err(Unsupported("a map key that is a struct".to_owned()))
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, Unsupported> {
        Err(Unsupported("a map key that is a struct".to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Serialize;

    use super::*;

    fn same_as_serde_json(value: &(impl Serialize + ?Sized)) {
        let mut ours = Vec::new();
        write(&mut ours, value).expect("writes");
        let theirs = serde_json::to_vec(value).expect("serde_json writes");
        assert_eq!(String::from_utf8_lossy(&ours), String::from_utf8_lossy(&theirs));
    }

    #[test]
    fn every_byte_a_string_can_hold_is_written_as_serde_json_writes_it() {
        let every_ascii: String = (0_u8..=0x7F).map(char::from).collect();
        for text in [
            String::new(),
            every_ascii.clone(),
            every_ascii.chars().rev().collect(),
            "Brontë, Åsa & Søren — «漢字» \u{1F3B5}".to_owned(),
            "exactly8".to_owned(),
            "eight+1\"".to_owned(),
            "a long clean run of text that ends in a control character\u{1F}".to_owned(),
        ] {
            same_as_serde_json(&text);
            same_as_serde_json(&BTreeMap::from([(text.clone(), text.clone())]));
        }
        for (index, byte) in (0_u8..=0x7F).enumerate() {
            let mut text = "x".repeat(index % 17);
            text.push(char::from(byte));
            text.push_str("tail of the string");
            same_as_serde_json(&text);
        }
    }

    #[derive(Serialize)]
    enum Shape {
        Unit,
        Newtype(u8),
        Tuple(i32, f64),
        Struct { name: &'static str, list: Vec<Option<bool>> },
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Document {
        lcc_id: String,
        share_percent: f64,
        not_a_number: f64,
        basis_points: u32,
        negative: i64,
        wide: u128,
        letter: char,
        missing: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        skipped: Option<String>,
        shapes: Vec<Shape>,
        empty: Vec<String>,
        by_number: BTreeMap<u32, String>,
        bytes: serde_bytes_like::Bytes,
        unit: (),
        pair: (String, i8),
        json: serde_json::Value,
    }

    mod serde_bytes_like {
        /// Bytes serialized as bytes, which `serde_json` writes as an array of numbers.
        pub struct Bytes(pub Vec<u8>);

        impl serde::Serialize for Bytes {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_bytes(&self.0)
            }
        }
    }

    #[test]
    fn every_shape_of_value_is_written_as_serde_json_writes_it() {
        let document = Document {
            lcc_id: "LCC-0000000001".to_owned(),
            share_percent: 57.15,
            not_a_number: f64::NAN,
            basis_points: 5_715,
            negative: -42,
            wide: u128::MAX,
            letter: '\n',
            missing: None,
            skipped: None,
            shapes: vec![
                Shape::Unit,
                Shape::Newtype(7),
                Shape::Tuple(-1, 1e21),
                Shape::Struct { name: "quoted \"name\"", list: vec![Some(true), None, Some(false)] },
            ],
            empty: Vec::new(),
            by_number: BTreeMap::from([(1, "one".to_owned()), (20, "twenty".to_owned())]),
            bytes: serde_bytes_like::Bytes(vec![0, 127, 255]),
            unit: (),
            pair: ("left".to_owned(), -8),
            json: serde_json::json!({"nested": [1, 2.5, "three", null, {"deep": true}]}),
        };
        same_as_serde_json(&document);
        same_as_serde_json(&[0.1_f32, f32::INFINITY, 3.0]);
    }

    #[test]
    fn a_map_key_serde_json_would_quote_otherwise_is_left_to_serde_json() {
        let mut out = Vec::new();
        assert!(write(&mut out, &BTreeMap::from([(true, 1)])).is_err());
        assert!(write(&mut out, &BTreeMap::from([((1, 2), 1)])).is_err());
    }
}
