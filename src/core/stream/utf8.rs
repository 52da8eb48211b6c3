//! Incremental UTF-8 decoding for bodies delivered in arbitrary byte splits.
//!
//! Behaves like WHATWG Encoding "decode" with the UTF-8 decoder (what `TextDecoder` with
//! `stream: true` does): a character split across chunks comes out once, whole; every
//! ill-formed sequence becomes one U+FFFD per *maximal subpart* (Unicode §3.9 / WHATWG
//! Encoding §4.1, the same policy as `String::from_utf8_lossy`); one leading BOM is removed
//! at the start of the stream only. Well-formedness follows RFC 3629 §4 (no surrogates, no
//! overlongs, nothing above U+10FFFF), which is exactly what `core::str::from_utf8` checks,
//! so std does the validation and this type only carries ≤ 3 bytes between chunks.

use alloc::{borrow::Cow, string::String};

/// Number of Unicode scalar values in `s`: every byte that is not a continuation byte
/// (10xxxxxx) starts one scalar (RFC 3629 §3). Saturates at `u32::MAX`.
pub fn count_chars(s: &str) -> u32 {
    let n = s.bytes().filter(|b| (b & 0xC0) != 0x80).count();
    u32::try_from(n).unwrap_or(u32::MAX)
}

const REPLACEMENT: &str = "\u{FFFD}";

/// Stateful decoder for one byte stream. Memory: 4 bytes of carry-over, nothing else.
#[derive(Debug)]
pub struct Utf8Decoder {
    /// The valid-so-far prefix of a character cut by a chunk boundary (at most 3 bytes).
    pending: [u8; 4],
    pending_len: u8,
    /// No text has been produced yet: a U+FEFF at this point is the BOM and is dropped
    /// (WHATWG Encoding "decode": BOM sniffing; the SSE parser also strips one BOM).
    at_start: bool,
}

impl Default for Utf8Decoder {
    fn default() -> Self {
        Self::new()
    }
}

impl Utf8Decoder {
    pub const fn new() -> Self {
        Utf8Decoder { pending: [0; 4], pending_len: 0, at_start: true }
    }

    /// A decoder for bytes from the middle of a stream: a leading U+FEFF is kept as text.
    pub const fn new_mid_stream() -> Self {
        Utf8Decoder { pending: [0; 4], pending_len: 0, at_start: false }
    }

    /// Decodes one chunk, calling `out` with the decoded pieces in order. Pieces are borrowed
    /// from `bytes` where possible; nothing is allocated.
    pub fn decode(&mut self, bytes: &[u8], out: &mut dyn FnMut(&str)) {
        let mut rest = bytes;
        if self.pending_len > 0 {
            rest = self.complete_pending(bytes, out);
            if self.pending_len > 0 {
                return; // the chunk was too short to finish the character
            }
        }
        loop {
            match core::str::from_utf8(rest) {
                Ok(s) => {
                    self.emit(s, out);
                    return;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    if let Ok(s) = core::str::from_utf8(valid) {
                        self.emit(s, out);
                    }
                    match e.error_len() {
                        // An ill-formed maximal subpart of n bytes: one U+FFFD.
                        Some(n) => {
                            self.emit(REPLACEMENT, out);
                            rest = after.get(n..).unwrap_or(&[]);
                        }
                        // A valid but unfinished character at the end (≤ 3 bytes): carry it.
                        None => {
                            let n = after.len().min(3);
                            self.pending[..n].copy_from_slice(&after[..n]);
                            self.pending_len = n as u8;
                            return;
                        }
                    }
                }
            }
        }
    }

    /// End of stream: an unfinished character is one U+FFFD (WHATWG UTF-8 decoder, "end-of-
    /// queue" with bytes needed ≠ 0 is an error). Resets the decoder.
    pub fn finish(&mut self, out: &mut dyn FnMut(&str)) {
        if self.pending_len > 0 {
            self.pending_len = 0;
            self.emit(REPLACEMENT, out);
        }
        self.at_start = true;
    }

    /// Convenience: decodes `bytes` and returns the number of scalar values produced.
    #[cfg(test)]
    pub fn count(&mut self, bytes: &[u8]) -> u32 {
        let mut n = 0u32;
        self.decode(bytes, &mut |s| n = n.saturating_add(count_chars(s)));
        n
    }

    /// Convenience: end of stream, returns the number of scalar values produced (0 or 1).
    #[cfg(test)]
    pub fn finish_count(&mut self) -> u32 {
        let mut n = 0u32;
        self.finish(&mut |s| n = n.saturating_add(count_chars(s)));
        n
    }

    /// Completes the carried-over prefix with the first bytes of `bytes`; returns what is
    /// left of `bytes` afterwards.
    fn complete_pending<'b>(&mut self, bytes: &'b [u8], out: &mut dyn FnMut(&str)) -> &'b [u8] {
        let plen = usize::from(self.pending_len).min(3);
        let take = (4 - plen).min(bytes.len());
        let mut buf = self.pending;
        buf[plen..plen + take].copy_from_slice(&bytes[..take]);
        let avail = plen + take;
        let (valid_up_to, error_len) = match core::str::from_utf8(&buf[..avail]) {
            Ok(_) => (avail, None),
            Err(e) => (e.valid_up_to(), e.error_len()),
        };
        if valid_up_to > 0 {
            // The carried prefix was a valid start, so the first character is now complete;
            // its length follows from the lead byte (RFC 3629 §3).
            let len = match buf[0] {
                0x00..=0x7F => 1,
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                _ => 4,
            };
            if let Some(s) = buf.get(..len).and_then(|b| core::str::from_utf8(b).ok()) {
                self.emit(s, out);
            }
            self.pending_len = 0;
            return bytes.get(len.saturating_sub(plen)..).unwrap_or(&[]);
        }
        match error_len {
            // The new byte does not continue the character: the carried bytes are one
            // maximal subpart (n == plen, since they were a valid prefix). The offending
            // byte is re-examined as the start of the next sequence.
            Some(n) => {
                self.pending_len = 0;
                self.emit(REPLACEMENT, out);
                bytes.get(n.saturating_sub(plen)..).unwrap_or(&[])
            }
            // Still unfinished: the whole (short) chunk joins the carry.
            None => {
                self.pending[plen..avail].copy_from_slice(&buf[plen..avail]);
                self.pending_len = avail.min(3) as u8;
                &[]
            }
        }
    }

    fn emit(&mut self, s: &str, out: &mut dyn FnMut(&str)) {
        let mut s = s;
        if self.at_start && !s.is_empty() {
            self.at_start = false;
            s = s.strip_prefix('\u{FEFF}').unwrap_or(s);
        }
        if !s.is_empty() {
            out(s);
        }
    }
}

/// UTF-8 decode with U+FFFD replacement. `from_utf8` first: it is the common case and much
/// faster than the lossy chunk iterator (measured per event in examples/hotpath.rs). Invalid
/// input goes through our own decoder (same replacement policy as `from_utf8_lossy`, tested
/// against it), so std's lossy iterator is not linked into the wasm as well.
pub fn lossy(b: &[u8]) -> Cow<'_, str> {
    match core::str::from_utf8(b) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => {
            let mut out = String::with_capacity(b.len() + 8);
            // A BOM mid-stream is text, so the decoder must not treat this as a stream start.
            let mut d = Utf8Decoder::new_mid_stream();
            d.decode(b, &mut |p| out.push_str(p));
            d.finish(&mut |p| out.push_str(p));
            Cow::Owned(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lossy_matches_std_on_invalid_input() {
        for bad in [&b"a\xffb"[..], b"\xef\xbb\xbfx\xc3", b"\xf0\x9f\x98", b"ok \xe2\x82 \xed\xa0\x80 end", b"\x80\x80"] {
            assert_eq!(lossy(bad), String::from_utf8_lossy(bad), "{bad:?}");
        }
    }

    fn decode_split(bytes: &[u8], cuts: &[usize]) -> String {
        let mut d = Utf8Decoder::new();
        let mut out = String::new();
        let mut prev = 0;
        for &c in cuts.iter().chain(std::iter::once(&bytes.len())) {
            d.decode(&bytes[prev..c], &mut |s| out.push_str(s));
            prev = c;
        }
        d.finish(&mut |s| out.push_str(s));
        out
    }

    const TEXT: &str = "aé€😀 👩‍👩‍👧‍👦 ok 中文 ﷽";

    #[test]
    fn multibyte_split_at_every_offset() {
        let b = TEXT.as_bytes();
        for i in 0..=b.len() {
            assert_eq!(decode_split(b, &[i]), TEXT, "cut at {i}");
        }
        for i in 0..=b.len() {
            for j in i..=b.len() {
                assert_eq!(decode_split(b, &[i, j]), TEXT, "cuts {i},{j}");
            }
        }
        let every: Vec<usize> = (1..b.len()).collect();
        assert_eq!(decode_split(b, &every), TEXT);
    }

    #[test]
    fn counts_scalar_values_across_chunks() {
        // 👩‍👩‍👧‍👦 is 7 scalar values (4 people + 3 ZWJ), one grapheme.
        assert_eq!(count_chars("👩‍👩‍👧‍👦"), 7);
        let b = TEXT.as_bytes();
        let want = TEXT.chars().count() as u32;
        for i in 0..=b.len() {
            let mut d = Utf8Decoder::new();
            let n = d.count(&b[..i]) + d.count(&b[i..]) + d.finish_count();
            assert_eq!(n, want, "cut at {i}");
        }
        let mut d = Utf8Decoder::new();
        let n: u32 = b.iter().map(|x| d.count(std::slice::from_ref(x))).sum();
        assert_eq!(n, want);
    }

    #[test]
    fn invalid_sequences_match_from_utf8_lossy() {
        let cases: &[&[u8]] = &[
            b"\xFF",
            b"a\x80b",
            b"\xE2\x82",     // truncated 3-byte at end
            b"\xE2\x82a",    // truncated 3-byte then ASCII
            b"\xF0\x9F\x98", // truncated emoji
            b"\xF0\x9F\x98\xF0\x9F\x98\x80",
            b"\xED\xA0\x80",     // surrogate: 3 × U+FFFD
            b"\xC0\xAF",         // overlong
            b"\xE0\x80\x80",     // overlong 3-byte
            b"\xF4\x90\x80\x80", // above U+10FFFF
            b"\xF5\x80",
            b"\xC2\xC2\xA9",
            b"\xE1\x80\xE1\x80\x80\xE1",
            b"ok\xF0\x9F\x98\x80\xFE\xFE\xE2\x82\xAC\xC3",
        ];
        for case in cases {
            let want = String::from_utf8_lossy(case).into_owned();
            for i in 0..=case.len() {
                for j in i..=case.len() {
                    assert_eq!(decode_split(case, &[i, j]), want, "{case:?} cuts {i},{j}");
                }
            }
        }
    }

    #[test]
    fn random_bytes_match_lossy() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for round in 0..300 {
            let len = (round % 40) + 1;
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    // bias towards interesting bytes
                    [0x41, 0x80, 0xBF, 0xC3, 0xE2, 0xED, 0xF0, 0xF4, 0x9F, 0xFF][(x % 10) as usize]
                })
                .collect();
            let want = String::from_utf8_lossy(&bytes);
            let want = want.strip_prefix('\u{FEFF}').unwrap_or(&want).to_string();
            let cut = (x as usize) % (len + 1);
            assert_eq!(decode_split(&bytes, &[cut]), want, "{bytes:?}");
            let every: Vec<usize> = (1..len).collect();
            assert_eq!(decode_split(&bytes, &every), want, "{bytes:?}");
        }
    }

    #[test]
    fn bom_stripped_only_at_start() {
        let s = "\u{FEFF}hi\u{FEFF}";
        let b = s.as_bytes();
        for i in 0..=b.len() {
            assert_eq!(decode_split(b, &[i]), "hi\u{FEFF}", "cut at {i}");
        }
        // Only one BOM is removed.
        assert_eq!(decode_split("\u{FEFF}\u{FEFF}x".as_bytes(), &[1, 4]), "\u{FEFF}x");
        // A broken BOM is not a BOM.
        assert_eq!(decode_split(b"\xEF\xBBx", &[1]), "\u{FFFD}x");
    }
}
