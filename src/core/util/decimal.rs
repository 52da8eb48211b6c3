//! A decimal number parser for the few numbers the core reads from text (Server-Timing `dur`,
//! the configuration's thresholds and budget limits).

use crate::core::util::math;

/// Parses a whole string as a decimal number: `[+-] digits [. digits] [(e|E) [+-] digits]`,
/// with at least one mantissa digit (`5.`, `.5` accepted). `None` for anything else, including
/// surrounding whitespace, `inf`/`nan`, hex, and values that overflow f64.
///
/// Why hand-written: `str::parse::<f64>` costs ~21 KB of wasm (measured), most of the size
/// budget. This keeps up to 19 significant digits and is exact (correctly rounded) when they fit
/// in 2^53 and the decimal exponent is within ±22 — every realistic duration such as `123.4` or
/// `0.25`; otherwise within a few ulp. Values below ~1e-300 may read as 0.
pub fn parse_decimal(s: &[u8]) -> Option<f64> {
    let mut i = 0;
    let neg = match s.first() {
        Some(b'-') => {
            i = 1;
            true
        }
        Some(b'+') => {
            i = 1;
            false
        }
        _ => false,
    };
    let mut mant: u64 = 0;
    let mut sig = 0u32; // significant digits held in `mant` (≤ 19, so no u64 overflow)
    let mut exp10: i32 = 0;
    let mut digits = 0u32;
    let mut frac = false;
    while let Some(&c) = s.get(i) {
        if c.is_ascii_digit() {
            digits = digits.saturating_add(1);
            if sig < 19 {
                mant = mant * 10 + u64::from(c - b'0');
                if mant != 0 {
                    sig += 1;
                }
                if frac {
                    exp10 = exp10.saturating_sub(1);
                }
            } else if !frac {
                // Dropped integer digit: still scales the value.
                exp10 = exp10.saturating_add(1);
            }
        } else if c == b'.' && !frac {
            frac = true;
        } else {
            break;
        }
        i += 1;
    }
    if digits == 0 {
        return None;
    }
    if let Some(b'e' | b'E') = s.get(i) {
        i += 1;
        let eneg = match s.get(i) {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        let mut e: i32 = 0;
        let estart = i;
        while let Some(&c) = s.get(i) {
            if !c.is_ascii_digit() {
                break;
            }
            e = (e * 10 + i32::from(c - b'0')).min(100_000);
            i += 1;
        }
        if i == estart {
            return None;
        }
        exp10 = if eneg { exp10.saturating_sub(e) } else { exp10.saturating_add(e) };
    }
    if i != s.len() {
        return None;
    }
    if mant == 0 {
        return Some(0.0);
    }
    let m = mant as f64;
    let exp10 = exp10.clamp(-400, 400);
    // powi(10, k) is exact for k ≤ 22 (every intermediate of square-and-multiply is an exactly
    // representable power of ten), so the fast path is one correctly rounded operation.
    let v = if exp10 >= 0 { m * math::powi(10.0, exp10) } else { m / math::powi(10.0, -exp10) };
    if !v.is_finite() {
        return None;
    }
    Some(if neg { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    #[test]
    fn decimal_parser() {
        let exact = [
            "0",
            "1",
            "123.4",
            "12.3",
            "45.6",
            "78.9",
            "47.2",
            "0.25",
            "5.",
            ".5",
            "-1.5",
            "+2",
            "1e3",
            "1E-3",
            "2.5e+2",
            "0.1",
            "0.2",
            "0.3",
            "1234567.891",
            "9007199254740991",
            "00012.500",
            "0.000001",
            "3.14159265358979",
            "1e22",
            "1e-22",
        ];
        for s in exact {
            assert_eq!(parse_decimal(s.as_bytes()), Some(s.parse::<f64>().unwrap()), "{s}");
        }
        let close = [
            "12345678901234567890123",
            "0.1234567890123456789012",
            "1e300",
            "1.5e308",
            "123456789.123456789e-5",
            "1e-200",
            "98765432109876543210.5",
        ];
        for s in close {
            let want: f64 = s.parse().unwrap();
            let got = parse_decimal(s.as_bytes()).unwrap();
            assert!(((got - want) / want).abs() < 1e-14, "{s}: {got} vs {want}");
        }
        for bad in [
            "", "-", "+", ".", "e5", "1e", "1e+", "1.2.3", "1,5", " 1", "1 ", "0x10", "inf", "NaN",
            "Infinity", "1e400", "--1", "1-", "١",
        ] {
            assert_eq!(parse_decimal(bad.as_bytes()), None, "{bad:?}");
        }
        assert_eq!(parse_decimal(b"-0"), Some(0.0));
        assert_eq!(parse_decimal(b"1e-400"), Some(0.0));
        assert_eq!(parse_decimal(b"1e99999999999999999999"), None);
        let many_zeros = format!("0.{}1", "0".repeat(5000));
        assert_eq!(parse_decimal(many_zeros.as_bytes()), Some(0.0));
    }
}
