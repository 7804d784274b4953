//! Inputs for the property tests on stable: a seed changed by a few random
//! edits, the kinds libFuzzer makes (flips, insertions, deletions, copies,
//! splices with another seed), so that arbitrary input starts from valid
//! input and reaches past the first check of each decoder. The fuzzers
//! themselves mutate by coverage instead.

use arbitrary::{Result, Unstructured};

/// The most edits applied to one seed.
const MOST_EDITS: usize = 8;

/// A seed of `seeds`, changed by up to [`MOST_EDITS`] edits drawn from `random`.
pub fn mutated(seeds: &[Vec<u8>], random: &mut Unstructured<'_>) -> Result<Vec<u8>> {
    let mut input = random.choose(seeds)?.clone();
    for _ in 0..random.int_in_range(0..=MOST_EDITS)? {
        edit(&mut input, seeds, random)?;
    }
    Ok(input)
}

fn edit(input: &mut Vec<u8>, seeds: &[Vec<u8>], random: &mut Unstructured<'_>) -> Result<()> {
    let at = |random: &mut Unstructured<'_>, length: usize| random.int_in_range(0..=length);
    match random.int_in_range(0..=6_u8)? {
        0 if !input.is_empty() => {
            let index = random.choose_index(input.len())?;
            input[index] ^= 1 << random.int_in_range(0..=7_u8)?;
        }
        1 if !input.is_empty() => {
            let index = random.choose_index(input.len())?;
            input[index] = *random.choose(&INTERESTING_BYTES)?;
        }
        2 => {
            let index = at(random, input.len())?;
            let inserted: Vec<u8> = random.arbitrary()?;
            input.splice(index..index, inserted.into_iter().take(16));
        }
        3 if !input.is_empty() => {
            let start = random.choose_index(input.len())?;
            let end = random.int_in_range(start..=input.len())?;
            input.drain(start..end);
        }
        4 if !input.is_empty() => {
            let start = random.choose_index(input.len())?;
            let end = random.int_in_range(start..=input.len().min(start + 64))?;
            let copy = input[start..end].to_vec();
            let index = at(random, input.len())?;
            input.splice(index..index, copy);
        }
        5 => {
            let other = random.choose(seeds)?;
            let cut = at(random, input.len())?;
            let from = at(random, other.len())?;
            input.truncate(cut);
            input.extend_from_slice(&other[from..]);
        }
        _ => {
            let length = at(random, input.len())?;
            input.truncate(length);
        }
    }
    Ok(())
}

/// Bytes that sit on the edges decoders branch on: zero, separators,
/// Avro's zig-zag extremes, UTF-8 lead bytes and the framing magic.
const INTERESTING_BYTES: [u8; 14] =
    [0x00, 0x01, 0x7F, 0x80, 0xFF, 0xFE, 0xC3, b'.', b'~', b'%', b'&', b'=', b'/', 0xF0];
