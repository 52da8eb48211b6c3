//! Eight bytes per step as one `u64` (SWAR: "SIMD within a register"; the shipped wasm has no
//! SIMD). Every chunk's bytes pass through two scans — line ends (stream/lines.rs) and JSON
//! strings (json_read.rs) — and byte loops were most of `core.chunk()` in the
//! profile of a 174-byte OpenAI event (callgrind, examples/hotpath.rs: `json_read::str_end`
//! alone was a third of its instructions).
//!
//! The byte tests are exact per byte (no carry crosses a byte: Hacker's Delight §6-1, the
//! carry-free "find the first zero byte"), so the first match is the lowest set bit: no
//! byte loop after the word test, whatever the length of the run.

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = ONES << 7;
const LOW7: u64 = !HIGH;

/// The eight bytes at `i` (little-endian), or `None` past the last whole word.
#[inline]
fn word(b: &[u8], i: usize) -> Option<u64> {
    let w: [u8; 8] = b.get(i..i.wrapping_add(8))?.try_into().ok()?;
    Some(u64::from_le_bytes(w))
}

/// The bytes from `i` on, as a word padded with `pad` (fewer than eight are left).
#[inline]
fn tail_word(b: &[u8], i: usize, pad: u8) -> u64 {
    let mut w = [pad; 8];
    for (d, s) in w.iter_mut().zip(b.get(i..).unwrap_or(&[])) {
        *d = *s;
    }
    u64::from_le_bytes(w)
}

/// Bit 7 set in exactly the bytes of `w` that are zero. `(x & 0x7F) + 0x7F` sets bit 7 of a
/// byte unless its low seven bits are clear, and never carries into the next byte.
#[inline]
fn zeros(w: u64) -> u64 {
    !((w & LOW7).wrapping_add(LOW7) | w | LOW7)
}

/// Bit 7 set in exactly the bytes of `w` that are `c`.
#[inline]
fn equal(w: u64, c: u8) -> u64 {
    zeros(w ^ ONES.wrapping_mul(c as u64))
}

/// Bit 7 set in exactly the bytes of `w` below 0x20 (control characters): as `zeros`, with
/// `+ 0x60` reaching bit 7 from 0x20 up.
#[inline]
fn controls(w: u64) -> u64 {
    !((w & LOW7).wrapping_add(ONES * 0x60) | w | LOW7)
}

/// The index of the first byte at or after `i` whose bit 7 `stops(word)` sets, or `b.len()`.
/// The last, partial word is padded with `pad`, a byte `stops` flags: past the end, where
/// the search ends anyway.
#[inline]
fn first(b: &[u8], mut i: usize, pad: u8, stops: impl Fn(u64) -> u64) -> usize {
    while i < b.len() {
        let m = match word(b, i) {
            Some(w) => stops(w),
            None => stops(tail_word(b, i, pad)),
        };
        if m != 0 {
            return (i + (m.trailing_zeros() / 8) as usize).min(b.len());
        }
        i += 8;
    }
    b.len().max(i)
}

/// Index of the first CR or LF in `b`, or `b.len()`.
pub fn line_end(b: &[u8]) -> usize {
    first(b, 0, b'\n', |w| equal(w, b'\n') | equal(w, b'\r'))
}

/// Index of the first byte at or after `i` that ends or escapes a run of plain JSON string
/// bytes (RFC 8259 §7): `"`, `\` or a control character; `b.len()` when there is none.
pub fn string_run(b: &[u8], i: usize) -> usize {
    first(b, i, b'"', |w| equal(w, b'"') | equal(w, b'\\') | controls(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive_run(b: &[u8], i: usize) -> usize {
        (i..b.len()).find(|&j| b[j] < 0x20 || b[j] == b'"' || b[j] == b'\\').unwrap_or(b.len())
    }

    #[test]
    fn string_run_stops_where_a_byte_loop_stops() {
        // (line_end: stream/lines.rs tests it.)
        // Each stop byte at each offset of a 0–24 byte run, between bytes that are close to the
        // tricks' edges (0x1F/0x20 neighbours, high bytes, continuation bytes).
        let fill = [b'a', 0x20, 0x21, 0x7F, 0x80, 0xBF, 0xC3, 0xFF, b'#', b']'];
        for len in 0..25 {
            for at in 0..=len {
                for stop in [b'"', b'\\', 0u8, 0x1F, 0x01, b'\n', b'\r'] {
                    for f in fill {
                        let mut b = vec![f; len];
                        if at < len {
                            b[at] = stop;
                        }
                        for start in 0..=len {
                            assert_eq!(string_run(&b, start), naive_run(&b, start), "{b:?} from {start}");
                        }
                    }
                }
            }
        }
        assert_eq!(string_run(b"abc", 7), 7); // past the end: as given
    }
}
