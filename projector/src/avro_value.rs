//! Reading typed values out of decoded Avro records, with errors that name
//! the field. Every decode failure becomes a precise dead-letter reason.

use apache_avro::types::Value;
use read_model::calendar::{Date, Timestamp};

/// Why a decoded record does not fit the shape the projector expects.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ShapeError(pub String);

/// The fields of one decoded record.
#[derive(Debug, Clone, Copy)]
pub struct Fields<'a> {
    record: &'static str,
    fields: &'a [(String, Value)],
}

fn strip_union(value: &Value) -> &Value {
    match value {
        Value::Union(_, inner) => inner,
        other => other,
    }
}

impl<'a> Fields<'a> {
    /// The fields of `value`, which must be a record; `record` names it in errors.
    pub fn of(record: &'static str, value: &'a Value) -> Result<Fields<'a>, ShapeError> {
        match strip_union(value) {
            Value::Record(fields) => Ok(Fields { record, fields }),
            other => Err(ShapeError(format!("{record}: expected a record, found {}", kind_of(other)))),
        }
    }

    fn error(&self, field: &'static str, expected: &str, found: &Value) -> ShapeError {
        ShapeError(format!("{}.{field}: expected {expected}, found {}", self.record, kind_of(found)))
    }

    /// A field's value with any union wrapper removed.
    pub fn get(&self, field: &'static str) -> Result<&'a Value, ShapeError> {
        self.raw(field).map(strip_union)
    }

    /// A field's value as decoded, union wrapper included.
    pub fn raw(&self, field: &'static str) -> Result<&'a Value, ShapeError> {
        self.fields
            .iter()
            .find(|(name, _)| name == field)
            .map(|(_, value)| value)
            .ok_or_else(|| ShapeError(format!("{}.{field}: missing", self.record)))
    }

    pub fn string(&self, field: &'static str) -> Result<String, ShapeError> {
        match self.get(field)? {
            Value::String(text) => Ok(text.clone()),
            other => Err(self.error(field, "a string", other)),
        }
    }

    pub fn optional_string(&self, field: &'static str) -> Result<Option<String>, ShapeError> {
        match self.get(field)? {
            Value::Null => Ok(None),
            Value::String(text) => Ok(Some(text.clone())),
            other => Err(self.error(field, "a string or null", other)),
        }
    }

    pub fn long(&self, field: &'static str) -> Result<i64, ShapeError> {
        match self.get(field)? {
            Value::Long(number) | Value::TimestampMillis(number) => Ok(*number),
            Value::Int(number) => Ok(i64::from(*number)),
            other => Err(self.error(field, "a long", other)),
        }
    }

    pub fn int(&self, field: &'static str) -> Result<i32, ShapeError> {
        match self.get(field)? {
            Value::Int(number) => Ok(*number),
            other => Err(self.error(field, "an int", other)),
        }
    }

    pub fn boolean(&self, field: &'static str) -> Result<bool, ShapeError> {
        match self.get(field)? {
            Value::Boolean(flag) => Ok(*flag),
            other => Err(self.error(field, "a boolean", other)),
        }
    }

    pub fn timestamp(&self, field: &'static str) -> Result<Timestamp, ShapeError> {
        self.long(field).map(Timestamp)
    }

    pub fn date(&self, field: &'static str) -> Result<Date, ShapeError> {
        self.optional_date(field)?
            .ok_or_else(|| ShapeError(format!("{}.{field}: expected a date, found null", self.record)))
    }

    pub fn optional_date(&self, field: &'static str) -> Result<Option<Date>, ShapeError> {
        match self.get(field)? {
            Value::Null => Ok(None),
            Value::Date(days) | Value::Int(days) => Ok(Some(Date(*days))),
            other => Err(self.error(field, "a date or null", other)),
        }
    }

    pub fn symbol(&self, field: &'static str) -> Result<&'a str, ShapeError> {
        self.optional_symbol(field)?
            .ok_or_else(|| ShapeError(format!("{}.{field}: expected an enum, found null", self.record)))
    }

    pub fn optional_symbol(&self, field: &'static str) -> Result<Option<&'a str>, ShapeError> {
        match self.get(field)? {
            Value::Null => Ok(None),
            Value::Enum(_, symbol) => Ok(Some(symbol)),
            other => Err(self.error(field, "an enum symbol", other)),
        }
    }

    pub fn record(&self, field: &'static str) -> Result<Fields<'a>, ShapeError> {
        Fields::of(field, self.get(field)?)
    }

    /// An array field; `None` when the field is null.
    pub fn optional_array(&self, field: &'static str) -> Result<Option<&'a [Value]>, ShapeError> {
        match self.get(field)? {
            Value::Null => Ok(None),
            Value::Array(items) => Ok(Some(items)),
            other => Err(self.error(field, "an array or null", other)),
        }
    }

    pub fn array(&self, field: &'static str) -> Result<&'a [Value], ShapeError> {
        self.optional_array(field)?
            .ok_or_else(|| ShapeError(format!("{}.{field}: expected an array, found null", self.record)))
    }

    pub fn optional_string_array(&self, field: &'static str) -> Result<Option<Vec<String>>, ShapeError> {
        let Some(items) = self.optional_array(field)? else {
            return Ok(None);
        };
        items
            .iter()
            .map(|item| match strip_union(item) {
                Value::String(text) => Ok(text.clone()),
                other => Err(self.error(field, "an array of strings", other)),
            })
            .collect::<Result<_, _>>()
            .map(Some)
    }

    pub fn string_array(&self, field: &'static str) -> Result<Vec<String>, ShapeError> {
        self.optional_string_array(field)?
            .ok_or_else(|| ShapeError(format!("{}.{field}: expected an array, found null", self.record)))
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Boolean(_) => "a boolean",
        Value::Int(_) | Value::Long(_) => "a number",
        Value::String(_) => "a string",
        Value::Record(_) => "a record",
        Value::Array(_) => "an array",
        Value::Enum(..) => "an enum symbol",
        Value::Union(..) => "a union",
        _ => "another type",
    }
}
