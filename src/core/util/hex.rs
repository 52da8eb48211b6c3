//! Lower-case hex, the only alphabet W3C Trace Context allows.
//!
//! Trace Context §3.2 ("HEXDIGLC = DIGIT / "a" / "b" / "c" / "d" / "e" / "f" ; lowercase hex
//! character") makes upper-case ids invalid, so the parser rejects them instead of folding case.
//! Hand-written (no `format!("{:02x}")`) because `core::fmt` is the biggest thing a wasm build
//! can accidentally link.

use alloc::string::String;
const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// The value of one lower-case hex digit; `None` for anything else (including `A`-`F`).
#[inline]
pub fn digit_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

/// Appends `bytes` as lower-case hex (two characters per byte) to `out`.
pub fn push_hex(out: &mut String, bytes: &[u8]) {
    out.reserve(bytes.len() * 2);
    for &b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 0x0f) as usize] as char);
    }
}

/// `bytes` as a new lower-case hex `String`.
pub fn to_hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    push_hex(&mut s, bytes);
    s
}

/// Writes `bytes` as lower-case hex into the front of `out`; returns the number of bytes written
/// (`2 * bytes.len()`), or `None` — writing nothing — when `out` is too short.
pub fn encode_into(bytes: &[u8], out: &mut [u8]) -> Option<usize> {
    let n = bytes.len().checked_mul(2)?;
    let dst = out.get_mut(..n)?;
    for (pair, &b) in dst.chunks_exact_mut(2).zip(bytes) {
        pair[0] = DIGITS[(b >> 4) as usize];
        pair[1] = DIGITS[(b & 0x0f) as usize];
    }
    Some(n)
}

/// Parses exactly `2 * N` lower-case hex characters into `N` bytes.
///
/// `None` on a wrong length, any non-hex character, or any upper-case digit.
pub fn parse_exact<const N: usize>(s: &[u8]) -> Option<[u8; N]> {
    if s.len() != N * 2 {
        return None;
    }
    let mut out = [0u8; N];
    for (o, pair) in out.iter_mut().zip(s.chunks_exact(2)) {
        *o = (digit_value(pair[0])? << 4) | digit_value(pair[1])?;
    }
    Some(out)
}

/// `parse_exact` for a `&str`.
pub fn parse_exact_str<const N: usize>(s: &str) -> Option<[u8; N]> {
    parse_exact(s.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_all_bytes() {
        let all: Vec<u8> = (0..=255u8).collect();
        let s = to_hex(&all);
        assert_eq!(s.len(), 512);
        assert!(s.starts_with("000102"));
        assert!(s.ends_with("fdfeff"));
        for (i, pair) in s.as_bytes().chunks(2).enumerate() {
            let b: [u8; 1] = parse_exact(pair).unwrap();
            assert_eq!(b[0] as usize, i);
        }
    }

    #[test]
    fn push_appends() {
        let mut s = String::from("x-");
        push_hex(&mut s, &[0xde, 0xad, 0x0b]);
        assert_eq!(s, "x-dead0b");
        push_hex(&mut s, &[]);
        assert_eq!(s, "x-dead0b");
    }

    #[test]
    fn encode_into_buffer() {
        let mut buf = [b'.'; 6];
        assert_eq!(encode_into(&[0xab, 0x01], &mut buf), Some(4));
        assert_eq!(&buf, b"ab01..");
        let mut small = [0u8; 3];
        assert_eq!(encode_into(&[1, 2], &mut small), None);
        assert_eq!(small, [0, 0, 0]);
        assert_eq!(encode_into(&[], &mut []), Some(0));
    }

    #[test]
    fn parse_rules() {
        assert_eq!(parse_exact_str::<4>("00ff10a9"), Some([0x00, 0xff, 0x10, 0xa9]));
        assert_eq!(parse_exact_str::<0>(""), Some([]));
        // Upper case is invalid in trace context (HEXDIGLC).
        assert_eq!(parse_exact_str::<2>("00FF"), None);
        assert_eq!(parse_exact_str::<2>("00fF"), None);
        // Wrong lengths.
        assert_eq!(parse_exact_str::<2>("00f"), None);
        assert_eq!(parse_exact_str::<2>("00ff0"), None);
        assert_eq!(parse_exact_str::<2>(""), None);
        // Non-hex, including characters adjacent to the digit ranges and non-ASCII.
        for bad in ["0g00", "0/00", "0:00", "0`00", "-100", " 100", "+100", "é0"] {
            assert_eq!(parse_exact_str::<2>(bad), None, "{bad}");
        }
    }

    #[test]
    fn digit_values() {
        for c in 0..=255u8 {
            let expect = match c {
                b'0'..=b'9' => Some(c - b'0'),
                b'a'..=b'f' => Some(c - b'a' + 10),
                _ => None,
            };
            assert_eq!(digit_value(c), expect);
        }
    }
}
