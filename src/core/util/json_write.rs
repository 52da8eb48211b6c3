//! A tiny JSON writer for records and beacons.
//!
//! Why not serde_json: in the wasm build it costs tens of KB (float formatting alone pulls in
//! `core::fmt` machinery). Records only need objects, arrays, strings, integers and
//! milliseconds rounded to microseconds, which this writes with integer arithmetic.

use alloc::string::String;
/// Appends JSON text to a `String`. The caller is responsible for structure (commas are
/// handled by `key`/`item`), which keeps the writer allocation-free beyond the output.
pub struct JsonWriter {
    pub out: String,
    /// true when the next member/element needs a leading comma.
    need_comma: bool,
}

impl Default for JsonWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl JsonWriter {
    pub fn new() -> Self {
        JsonWriter { out: String::with_capacity(512), need_comma: false }
    }

    pub fn begin_object(&mut self) {
        self.sep();
        self.out.push('{');
        self.need_comma = false;
    }
    pub fn end_object(&mut self) {
        self.out.push('}');
        self.need_comma = true;
    }
    pub fn begin_array(&mut self) {
        self.sep();
        self.out.push('[');
        self.need_comma = false;
    }
    pub fn end_array(&mut self) {
        self.out.push(']');
        self.need_comma = true;
    }

    /// Writes `"name":`; the value follows with one of the value methods. `name` is written
    /// as it is: record keys are the contract's names (no quote, backslash or control
    /// character). Not escaping them keeps the record writer small (issue 14); the maps whose
    /// keys come from the app or the server (`correlation`, `userMarks`) use `key_escaped`.
    pub fn key(&mut self, name: &str) {
        self.sep();
        self.out.push('"');
        self.out.push_str(name);
        self.out.push_str("\":");
        self.need_comma = false;
    }

    /// Writes `"name":` for a key that is data (escaped as a JSON string).
    pub fn key_escaped(&mut self, name: &str) {
        self.sep();
        push_string(&mut self.out, name);
        self.out.push(':');
        self.need_comma = false;
    }

    pub fn str(&mut self, v: &str) {
        self.sep();
        push_string(&mut self.out, v);
        self.need_comma = true;
    }
    pub fn bool(&mut self, v: bool) {
        self.raw(if v { "true" } else { "false" });
    }
    pub fn null(&mut self) {
        self.raw("null");
    }
    pub fn uint(&mut self, v: u64) {
        self.sep();
        push_u64(&mut self.out, v);
        self.need_comma = true;
    }
    /// A time or duration in ms, rounded to the microsecond; non-finite → null (JSON has no
    /// NaN, and the collector rejects non-finite times).
    pub fn ms(&mut self, v: f64) {
        self.sep();
        push_ms(&mut self.out, v);
        self.need_comma = true;
    }
    pub fn opt_ms(&mut self, v: Option<f64>) {
        match v {
            Some(v) => self.ms(v),
            None => self.null(),
        }
    }
    /// Already-encoded JSON (e.g. a number or a nested document).
    pub fn raw(&mut self, json: &str) {
        self.sep();
        self.out.push_str(json);
        self.need_comma = true;
    }

    fn sep(&mut self) {
        if self.need_comma {
            self.out.push(',');
        }
    }
}

/// Writes a JSON string literal (RFC 8259 §7): quotes, backslash and control characters
/// escaped; everything else verbatim UTF-8.
pub fn push_string(out: &mut String, s: &str) {
    out.push('"');
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let esc: Option<&str> = match b {
            b'"' => Some("\\\""),
            b'\\' => Some("\\\\"),
            b'\n' => Some("\\n"),
            b'\r' => Some("\\r"),
            b'\t' => Some("\\t"),
            0..=0x1f => None,
            _ => continue,
        };
        // Escapes sit at ASCII bytes, so these are char boundaries; `get` has no panic path.
        out.push_str(s.get(start..i).unwrap_or(""));
        match esc {
            Some(e) => out.push_str(e),
            None => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(HEX[(b >> 4) as usize] as char);
                out.push(HEX[(b & 15) as usize] as char);
            }
        }
        start = i + 1;
    }
    out.push_str(s.get(start..).unwrap_or(""));
    out.push('"');
}

pub fn push_u64(out: &mut String, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for &d in &buf[i..] {
        out.push(d as char);
    }
}

/// Milliseconds with up to three decimals (microseconds), trailing zeros trimmed.
pub fn push_ms(out: &mut String, v: f64) {
    if !v.is_finite() || v.abs() >= 9.0e15 {
        out.push_str("null");
        return;
    }
    let neg = v < 0.0;
    let micros = (v.abs() * 1000.0 + 0.5) as u64;
    if neg && micros != 0 {
        out.push('-');
    }
    push_u64(out, micros / 1000);
    let mut frac = micros % 1000;
    if frac != 0 {
        out.push('.');
        let mut digits = 3;
        while frac.is_multiple_of(10) {
            frac /= 10;
            digits -= 1;
        }
        let s = [(frac / 100) as u8, (frac / 10 % 10) as u8, (frac % 10) as u8];
        for &d in &s[3 - digits..] {
            out.push((b'0' + d) as char);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: f64) -> String {
        let mut s = String::new();
        push_ms(&mut s, v);
        s
    }

    #[test]
    fn milliseconds_round_to_microseconds() {
        assert_eq!(ms(0.0), "0");
        assert_eq!(ms(12.0), "12");
        assert_eq!(ms(12.5), "12.5");
        assert_eq!(ms(12.345_6), "12.346");
        assert_eq!(ms(0.0004), "0");
        assert_eq!(ms(0.001), "0.001");
        assert_eq!(ms(0.05), "0.05");
        assert_eq!(ms(-3.25), "-3.25");
        assert_eq!(ms(-0.0001), "0");
        assert_eq!(ms(1_700_000_000_123.456), "1700000000123.456");
        assert_eq!(ms(f64::NAN), "null");
        assert_eq!(ms(f64::INFINITY), "null");
    }

    #[test]
    fn strings_escape_per_rfc8259() {
        let mut s = String::new();
        push_string(&mut s, "a\"b\\c\nd\u{1}é😀");
        assert_eq!(s, "\"a\\\"b\\\\c\\nd\\u0001é😀\"");
    }

    #[test]
    fn structure_and_commas() {
        let mut w = JsonWriter::new();
        w.begin_object();
        w.key("a");
        w.uint(1);
        w.key("b");
        w.begin_array();
        w.ms(1.5);
        w.null();
        w.begin_object();
        w.end_object();
        w.end_array();
        w.key("c");
        w.bool(true);
        w.end_object();
        assert_eq!(w.out, r#"{"a":1,"b":[1.5,null,{}],"c":true}"#);
    }

    #[test]
    fn integers() {
        let mut s = String::new();
        push_u64(&mut s, 0);
        s.push(' ');
        push_u64(&mut s, u64::MAX);
        assert_eq!(s, "0 18446744073709551615");
    }
}
