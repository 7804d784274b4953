//! Avro's binary encoding read from a byte slice: the few kinds of value
//! the contract's records are made of (longs and ints as zigzag varints,
//! booleans, strings, arrays in blocks, and union branches and enum symbols
//! by index). It knows nothing of the contract; [`super::records`] says what
//! is read in which order.
//!
//! Every length and count comes from bytes nobody checked: nothing is
//! allocated for more than the bytes left could hold, and a value that ends
//! past them is an error, not a panic.

/// Why bytes do not hold the value asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BinaryError {
    #[error("the datum ends inside a value")]
    Truncated,
    #[error("a variable-length integer overflows 64 bits")]
    LongOverflow,
    #[error("{0} does not fit an int")]
    IntOverflow(i64),
    #[error("{0} is not a boolean byte")]
    Boolean(u8),
    #[error("{0} is not a length")]
    Length(i64),
    #[error("a string is not UTF-8")]
    Utf8,
    #[error("union branch {0} is not one of the schema's")]
    Branch(i64),
    #[error("{index} is not a symbol of the enum {name}")]
    Symbol { name: &'static str, index: i64 },
}

/// Reads a long: a zigzag-encoded variable-length integer of up to 10 bytes.
pub fn long(bytes: &mut &[u8]) -> Result<i64, BinaryError> {
    let mut value = 0_u64;
    let mut shift = 0_u32;
    loop {
        let (&byte, rest) = bytes.split_first().ok_or(BinaryError::Truncated)?;
        *bytes = rest;
        // The tenth byte holds the 64th bit only.
        if shift == 63 && byte > 1 {
            return Err(BinaryError::LongOverflow);
        }
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok((value >> 1) as i64 ^ -((value & 1) as i64));
        }
        shift += 7;
    }
}

/// Reads an int, which Avro writes as a long of the int's range.
pub fn int(bytes: &mut &[u8]) -> Result<i32, BinaryError> {
    let value = long(bytes)?;
    i32::try_from(value).map_err(|_| BinaryError::IntOverflow(value))
}

pub fn boolean(bytes: &mut &[u8]) -> Result<bool, BinaryError> {
    let (&byte, rest) = bytes.split_first().ok_or(BinaryError::Truncated)?;
    *bytes = rest;
    match byte {
        0 => Ok(false),
        1 => Ok(true),
        other => Err(BinaryError::Boolean(other)),
    }
}

/// Reads a string: its length in bytes, then its UTF-8 bytes.
pub fn string(bytes: &mut &[u8]) -> Result<String, BinaryError> {
    let text = str::from_utf8(length_prefixed(bytes)?).map_err(|_| BinaryError::Utf8)?;
    Ok(text.to_owned())
}

/// Reads past a string, which must be UTF-8 all the same: a datum is of
/// the schema or not, whether or not a value of it is kept.
pub fn skip_string(bytes: &mut &[u8]) -> Result<(), BinaryError> {
    str::from_utf8(length_prefixed(bytes)?).map(drop).map_err(|_| BinaryError::Utf8)
}

fn length_prefixed<'a>(bytes: &mut &'a [u8]) -> Result<&'a [u8], BinaryError> {
    let length = long(bytes)?;
    let length = usize::try_from(length).map_err(|_| BinaryError::Length(length))?;
    if length > bytes.len() {
        return Err(BinaryError::Truncated);
    }
    let (value, rest) = bytes.split_at(length);
    *bytes = rest;
    Ok(value)
}

/// Reads an array of items read by `item`: blocks of a count and that many
/// items, the last block of count 0. A negative count is followed by the
/// block's size in bytes (for readers that skip it), read and not needed.
pub fn array<T>(
    bytes: &mut &[u8],
    mut item: impl FnMut(&mut &[u8]) -> Result<T, BinaryError>,
) -> Result<Vec<T>, BinaryError> {
    let mut items = Vec::new();
    loop {
        let count = long(bytes)?;
        if count == 0 {
            return Ok(items);
        }
        if count < 0 {
            long(bytes)?;
        }
        let count = usize::try_from(count.unsigned_abs()).map_err(|_| BinaryError::Length(count))?;
        // Every item of the contract's arrays takes at least a byte.
        if count > bytes.len() {
            return Err(BinaryError::Truncated);
        }
        items.reserve(count);
        for _ in 0..count {
            items.push(item(bytes)?);
        }
    }
}

/// Reads a union's branch index, for a union of `branches`; an index past
/// them is the caller's to judge, so it is returned as read when `branches`
/// is `None`.
pub fn branch(bytes: &mut &[u8], branches: Option<u32>) -> Result<u32, BinaryError> {
    let index = long(bytes)?;
    match u32::try_from(index) {
        Ok(branch) if branches.is_none_or(|branches| branch < branches) => Ok(branch),
        _ => Err(BinaryError::Branch(index)),
    }
}

/// Reads a union of null and one other type (null first, as every optional
/// field of the contract is written), the other read by `value`.
pub fn optional<T>(
    bytes: &mut &[u8],
    value: impl FnOnce(&mut &[u8]) -> Result<T, BinaryError>,
) -> Result<Option<T>, BinaryError> {
    match branch(bytes, Some(2))? {
        0 => Ok(None),
        _ => value(bytes).map(Some),
    }
}

/// Reads an enum's symbol index, for the enum `name` of `symbols` symbols.
pub fn symbol(bytes: &mut &[u8], name: &'static str, symbols: usize) -> Result<usize, BinaryError> {
    let index = long(bytes)?;
    usize::try_from(index).ok().filter(|&index| index < symbols).ok_or(BinaryError::Symbol { name, index })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Avro's zigzag varint of `value`.
    fn encoded(value: i64) -> Vec<u8> {
        let mut zigzag = ((value << 1) ^ (value >> 63)) as u64;
        let mut bytes = Vec::new();
        loop {
            let byte = (zigzag & 0x7f) as u8;
            zigzag >>= 7;
            if zigzag == 0 {
                bytes.push(byte);
                return bytes;
            }
            bytes.push(byte | 0x80);
        }
    }

    #[test]
    fn longs_read_back_across_their_range_and_an_eleventh_byte_overflows() {
        for value in [0, -1, 1, 63, -64, 64, 1 << 31, i64::from(i32::MIN), i64::MAX, i64::MIN] {
            let bytes = encoded(value);
            let mut rest = bytes.as_slice();
            assert_eq!(long(&mut rest), Ok(value));
            assert!(rest.is_empty());
        }
        assert_eq!(long(&mut [0xff; 9].as_slice()), Err(BinaryError::Truncated));
        assert_eq!(
            long(&mut [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02].as_slice()),
            Err(BinaryError::LongOverflow)
        );
        assert_eq!(int(&mut encoded(1 << 31).as_slice()), Err(BinaryError::IntOverflow(1 << 31)));
    }

    #[test]
    fn a_length_past_the_bytes_left_is_refused_before_anything_is_allocated() {
        let mut huge = encoded(i64::MAX);
        huge.push(b'a');
        assert_eq!(string(&mut huge.as_slice()), Err(BinaryError::Truncated));
        assert_eq!(string(&mut encoded(-1).as_slice()), Err(BinaryError::Length(-1)));
        let mut many = encoded(1 << 40);
        many.extend(encoded(0));
        assert_eq!(array(&mut many.as_slice(), long), Err(BinaryError::Truncated));
        let mut not_utf8 = encoded(1);
        not_utf8.push(0xff);
        assert_eq!(string(&mut not_utf8.as_slice()), Err(BinaryError::Utf8));
    }

    #[test]
    fn arrays_read_blocks_of_either_sign_until_a_block_of_zero() {
        let mut bytes = encoded(2);
        bytes.extend(encoded(5));
        bytes.extend(encoded(6));
        // A negative count, then the block's size in bytes.
        bytes.extend(encoded(-1));
        bytes.extend(encoded(1));
        bytes.extend(encoded(7));
        bytes.extend(encoded(0));
        bytes.push(9);
        let mut rest = bytes.as_slice();
        assert_eq!(array(&mut rest, long), Ok(vec![5, 6, 7]));
        assert_eq!(rest, [9]);
    }

    #[test]
    fn unions_and_enums_refuse_an_index_outside_them() {
        assert_eq!(optional(&mut [0].as_slice(), long), Ok(None));
        assert_eq!(optional(&mut [2, 4].as_slice(), long), Ok(Some(2)));
        assert_eq!(optional(&mut [4, 4].as_slice(), long), Err(BinaryError::Branch(2)));
        assert_eq!(branch(&mut [1].as_slice(), None), Err(BinaryError::Branch(-1)));
        assert_eq!(branch(&mut [8].as_slice(), None), Ok(4));
        assert_eq!(symbol(&mut [2].as_slice(), "Kind", 2), Ok(1));
        assert_eq!(symbol(&mut [4].as_slice(), "Kind", 2), Err(BinaryError::Symbol { name: "Kind", index: 2 }));
        assert_eq!(boolean(&mut [2].as_slice()), Err(BinaryError::Boolean(2)));
    }
}
