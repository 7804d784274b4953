//! The JSON Canonicalization Scheme (RFC 8785): one byte sequence for one
//! JSON value, so that a hash or a signature over a document can be checked
//! by anyone who parses it and canonicalizes it again.
//!
//! Object members are sorted by the UTF-16 code units of their names;
//! strings are escaped only where JSON requires it; numbers are written as
//! ECMAScript writes them (shortest round-trip digits, exponent form below
//! 10^-6 and from 10^21); no whitespace.

use std::fmt::Write;

use serde_json::Value;

/// The canonical text of `value`.
pub fn canonical_json(value: &Value) -> String {
    let mut text = String::new();
    write_value(&mut text, value);
    text
}

fn write_value(text: &mut String, value: &Value) {
    match value {
        Value::Null => text.push_str("null"),
        Value::Bool(true) => text.push_str("true"),
        Value::Bool(false) => text.push_str("false"),
        Value::Number(number) => match (number.as_i64(), number.as_u64(), number.as_f64()) {
            (Some(integer), _, _) => {
                let _ = write!(text, "{integer}");
            }
            (None, Some(integer), _) => {
                let _ = write!(text, "{integer}");
            }
            (None, None, Some(float)) => text.push_str(&ecmascript_number(float)),
            _ => text.push_str("null"),
        },
        Value::String(string) => write_string(text, string),
        Value::Array(items) => {
            text.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    text.push(',');
                }
                write_value(text, item);
            }
            text.push(']');
        }
        Value::Object(members) => {
            let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
            sorted.sort_by(|(a, _), (b, _)| a.encode_utf16().cmp(b.encode_utf16()));
            text.push('{');
            for (index, (name, member)) in sorted.into_iter().enumerate() {
                if index > 0 {
                    text.push(',');
                }
                write_string(text, name);
                text.push(':');
                write_value(text, member);
            }
            text.push('}');
        }
    }
}

fn write_string(text: &mut String, string: &str) {
    text.push('"');
    for character in string.chars() {
        match character {
            '"' => text.push_str("\\\""),
            '\\' => text.push_str("\\\\"),
            '\u{8}' => text.push_str("\\b"),
            '\u{c}' => text.push_str("\\f"),
            '\n' => text.push_str("\\n"),
            '\r' => text.push_str("\\r"),
            '\t' => text.push_str("\\t"),
            control if u32::from(control) < 0x20 => {
                let _ = write!(text, "\\u{:04x}", u32::from(control));
            }
            other => text.push(other),
        }
    }
    text.push('"');
}

/// A finite number as ECMAScript's `Number.prototype.toString` writes it.
fn ecmascript_number(value: f64) -> String {
    if value == 0.0 {
        return "0".to_owned();
    }
    let sign = if value < 0.0 { "-" } else { "" };
    // Rust writes the shortest digits that round-trip: d.ddde±x.
    let scientific = format!("{:e}", value.abs());
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let length = digits.len() as i32;
    // ECMAScript's n: the value is 0.digits × 10^n.
    let n = exponent + 1;
    let body = if length <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - length) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let exponent_sign = if n - 1 < 0 { "-" } else { "+" };
        let fraction = if length > 1 { format!(".{}", &digits[1..]) } else { String::new() };
        format!("{}{fraction}e{exponent_sign}{}", &digits[..1], (n - 1).abs())
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn numbers_are_written_as_ecmascript_writes_them() {
        for (value, expected) in [
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (1e-7, "1e-7"),
            (0.000001, "0.000001"),
            (123.456, "123.456"),
            (-0.5, "-0.5"),
            (4.5e-9, "4.5e-9"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (333333333.3333333, "333333333.3333333"),
            (0.1 + 0.2, "0.30000000000000004"),
        ] {
            assert_eq!(ecmascript_number(value), expected, "{value}");
        }
    }

    #[test]
    fn members_sort_by_utf16_and_strings_escape_only_what_json_requires() {
        let value = json!({ "b": [1, true, null], "a": "é\u{1}\"\\/\n", "\u{fb33}": 1, "\u{1f600}": 2 });
        assert_eq!(
            canonical_json(&value),
            "{\"a\":\"é\\u0001\\\"\\\\/\\n\",\"b\":[1,true,null],\"\u{1f600}\":2,\"\u{fb33}\":1}",
            "U+1F600 (a surrogate pair, D83D DE00) sorts before U+FB33 in UTF-16, after it in UTF-8"
        );
    }
}
