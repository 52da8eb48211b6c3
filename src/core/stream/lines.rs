//! Line framing for byte streams (SSE and NDJSON): lines end at CRLF, LF or CR, in any split.
//!
//! Memory is bounded: a line longer than [`MAX_LINE`] bytes puts the splitter into an
//! overflowed state in which it drops all further input, instead of growing a buffer without
//! limit.

use crate::core::util::swar::line_end;
use alloc::vec::Vec;

/// Upper bound for one line (and, in `sse.rs`, for one event's data buffer), in bytes.
pub const MAX_LINE: usize = 1 << 20;

/// Appends `bytes` to `buf` if the result stays within `max` bytes, growing capacity by
/// doubling but never past `max` (plain `extend` could double a 600 KiB buffer to 2 MiB).
/// Returns false, without appending, when the bound would be exceeded.
pub(crate) fn extend_within(buf: &mut Vec<u8>, bytes: &[u8], max: usize) -> bool {
    let need = match buf.len().checked_add(bytes.len()) {
        Some(n) if n <= max => n,
        _ => return false,
    };
    if need > buf.capacity() {
        let target = buf.capacity().saturating_mul(2).clamp(need, max);
        buf.reserve_exact(target - buf.len());
    }
    buf.extend_from_slice(bytes);
    true
}

/// Splits a byte stream into lines ended by CRLF, LF or CR (WHATWG HTML §9.2.5 `end-of-line`;
/// also used for NDJSON, whose LF/CRLF endings are a subset). A CR ending one chunk and an LF
/// starting the next are one line end. One UTF-8 BOM at the start of the stream is removed
/// (§9.2.6: "One leading U+FEFF BYTE ORDER MARK character must be ignored").
#[derive(Debug)]
pub struct LineSplitter {
    /// The unterminated tail of the last chunk (only that is ever copied).
    buf: Vec<u8>,
    /// The previous chunk ended with CR: an LF at the start of the next one is its pair.
    after_cr: bool,
    /// No line emitted yet (BOM check pending).
    first: bool,
    overflowed: bool,
}

impl Default for LineSplitter {
    fn default() -> Self {
        Self::new()
    }
}

impl LineSplitter {
    pub const fn new() -> Self {
        LineSplitter { buf: Vec::new(), after_cr: false, first: true, overflowed: false }
    }

    /// Calls `on_line` for every line completed by `bytes` (without its terminator).
    pub fn feed(&mut self, bytes: &[u8], on_line: &mut dyn FnMut(&[u8])) {
        if self.overflowed || bytes.is_empty() {
            return;
        }
        let mut rest = bytes;
        if self.after_cr {
            self.after_cr = false;
            if rest.first() == Some(&b'\n') {
                rest = &rest[1..];
            }
        }
        loop {
            let pos = line_end(rest);
            let Some(&end) = rest.get(pos) else { break };
            let is_cr = end == b'\r';
            self.line(&rest[..pos], on_line);
            if self.overflowed {
                return;
            }
            rest = &rest[pos + 1..];
            if is_cr {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
        }
        if !rest.is_empty() && !extend_within(&mut self.buf, rest, MAX_LINE) {
            self.overflow();
        }
    }

    /// End of stream: emits an unterminated last line, if any (NDJSON wants it; SSE
    /// discards it, see [`SseParser::finish`]). Resets the splitter for reuse.
    pub fn finish(&mut self, on_line: &mut dyn FnMut(&[u8])) {
        if !self.overflowed && !self.buf.is_empty() {
            self.line(&[], on_line);
        }
        self.reset();
    }

    /// Drops any pending partial line and starts over (a new stream).
    pub fn reset(&mut self) {
        self.buf.clear();
        self.after_cr = false;
        self.first = true;
    }

    /// A line exceeded [`MAX_LINE`]; all later input is ignored.
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// Stops the splitter for good and frees its buffer.
    pub fn overflow(&mut self) {
        self.overflowed = true;
        self.buf = Vec::new();
    }

    /// Capacity of the partial-line buffer (for the memory-bound tests).
    pub fn buffer_capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Emits one line: the buffered tail plus `piece`.
    fn line(&mut self, piece: &[u8], on_line: &mut dyn FnMut(&[u8])) {
        let joined: &[u8] = if self.buf.is_empty() {
            if piece.len() > MAX_LINE {
                self.overflow();
                return;
            }
            piece
        } else {
            if !extend_within(&mut self.buf, piece, MAX_LINE) {
                self.overflow();
                return;
            }
            &self.buf
        };
        let line = if self.first { joined.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(joined) } else { joined };
        self.first = false;
        on_line(line);
        self.buf.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_splitter_finish_emits_tail() {
        let mut s = LineSplitter::new();
        let mut lines: Vec<Vec<u8>> = Vec::new();
        s.feed(b"\xEF\xBB\xBF{\"a\":1}\r\n{\"b\"", &mut |l| lines.push(l.to_vec()));
        s.feed(b":2}", &mut |l| lines.push(l.to_vec()));
        s.finish(&mut |l| lines.push(l.to_vec()));
        assert_eq!(lines, vec![b"{\"a\":1}".to_vec(), b"{\"b\":2}".to_vec()]);
    }

    #[test]
    fn line_end_finds_what_a_byte_loop_finds() {
        let b: Vec<u8> = (0..40u8).map(|k| b'a' + k % 26).chain("é🚀\u{7f}".bytes()).collect();
        for at in 0..b.len() {
            for c in [b'\n', b'\r', 0x00, 0x09, 0x0b, 0x0c, 0x0e, 0x80, 0x8a, 0xff] {
                let mut v = b.clone();
                v[at] = c;
                for from in [0, 1, 7, 8, 9, at] {
                    let want = (from..v.len()).find(|&k| v[k] == b'\n' || v[k] == b'\r').unwrap_or(v.len());
                    assert_eq!(line_end(&v[from..]) + from, want, "{v:?} from {from}");
                }
            }
        }
        assert_eq!(line_end(b""), 0);
    }

    #[test]
    fn extend_within_caps_capacity() {
        let mut v = Vec::new();
        assert!(extend_within(&mut v, &[1; 700], 1000));
        assert!(extend_within(&mut v, &[1; 300], 1000));
        assert!(v.capacity() <= 1000);
        assert!(!extend_within(&mut v, &[1], 1000));
        assert_eq!(v.len(), 1000);
    }
}
