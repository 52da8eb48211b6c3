//! Server-sent events parsing (`text/event-stream`), on top of the line framing in `lines.rs`.
//!
//! Follows WHATWG HTML §9.2.6 "Interpreting an event stream". The parser works on bytes and
//! decodes per line: the only bytes the grammar looks at (CR, LF, `:`, space) are ASCII, and
//! UTF-8 never uses ASCII byte values inside a multi-byte sequence nor lets a maximal
//! ill-formed subpart swallow one (RFC 3629 §3), so decoding each line with U+FFFD
//! replacement gives exactly the text the spec's "decode the whole stream as UTF-8" gives.
//!
//! What the parser keeps is what the content rules use: the data and event type buffers. The
//! last event ID and the reconnection time (`id`, `retry`) matter to an EventSource, whose
//! browser parses them itself (`Timeline::on_message` gets its `lastEventId`); of a fetch body
//! they were never read, so their lines are ignored like unknown fields (−0.17 KB brotli of wasm).
//!
//! Memory is bounded: a line, or an event's data, longer than [`MAX_LINE`] bytes puts the
//! parser into an overflowed state in which it drops all further input, instead of growing
//! a buffer without limit. Buffers are reused between events (no allocation per event).

use alloc::borrow::Cow;
use alloc::vec::Vec;
use crate::core::stream::lines::{extend_within, LineSplitter, MAX_LINE};
use crate::core::stream::utf8::lossy;

/// One parsed item, borrowed from the parser's reused buffers.
#[derive(Debug, PartialEq, Eq)]
pub enum SseItem<'a> {
    /// A dispatched event: `event_type` is "message" when no `event` field was given.
    Event { event_type: &'a str, data: &'a str },
    /// A comment line (starts with `:`), the usual keep-alive.
    Comment,
}

/// Field state of the event being assembled (§9.2.6 "data buffer", "event type buffer").
#[derive(Debug, Default)]
struct Fields {
    data: Vec<u8>,
    event_type: Vec<u8>,
    overflowed: bool,
}

impl Fields {
    fn line(&mut self, line: &[u8], on: &mut dyn FnMut(SseItem<'_>)) {
        if self.overflowed {
            return;
        }
        // "If the line is empty (a blank line): Dispatch the event."
        if line.is_empty() {
            self.dispatch(on);
            return;
        }
        // "If the line starts with a U+003A COLON character: Ignore the line." (a comment)
        if line[0] == b':' {
            on(SseItem::Comment);
            return;
        }
        // "If the line contains a U+003A COLON character": field is the part before it, value
        // the part after, minus one leading U+0020 SPACE. "Otherwise": the whole line is the
        // field name and the value is empty.
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &[][..]),
        };
        match field {
            b"event" => {
                self.event_type.clear();
                self.event_type.extend_from_slice(value); // ≤ MAX_LINE: it came from one line
            }
            // "Append the field value to the data buffer, then append a single U+000A LINE
            // FEED (LF) character to the data buffer."
            b"data" => {
                let fits =
                    extend_within(&mut self.data, value, MAX_LINE) && extend_within(&mut self.data, b"\n", MAX_LINE);
                if !fits {
                    *self = Fields { overflowed: true, ..Fields::default() };
                }
            }
            // `id` and `retry` (see the module docs), and "Otherwise: The field is ignored."
            _ => {}
        }
    }

    /// §9.2.6 "dispatch the event".
    fn dispatch(&mut self, on: &mut dyn FnMut(SseItem<'_>)) {
        // "If the data buffer is an empty string, set the data buffer and the event type
        // buffer to the empty string and return."
        if self.data.is_empty() {
            self.event_type.clear();
            return;
        }
        // "If the data buffer's last character is a U+000A LINE FEED (LF) character, then
        // remove the last character from the data buffer."
        if self.data.last() == Some(&b'\n') {
            self.data.pop();
        }
        {
            let data = lossy(&self.data);
            let event_type: Cow<'_, str> = if self.event_type.is_empty() {
                Cow::Borrowed("message")
            } else {
                lossy(&self.event_type)
            };
            on(SseItem::Event { event_type: &event_type, data: &data });
        }
        self.data.clear();
        self.event_type.clear();
    }
}

/// Incremental `text/event-stream` parser for one stream.
#[derive(Debug, Default)]
pub struct SseParser {
    lines: LineSplitter,
    fields: Fields,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one chunk (arbitrary split); `on` is called for each dispatched event and each
    /// comment line, in stream order.
    pub fn feed(&mut self, bytes: &[u8], on: &mut dyn FnMut(SseItem<'_>)) {
        if self.overflowed() {
            return;
        }
        let fields = &mut self.fields;
        self.lines.feed(bytes, &mut |line| fields.line(line, on));
        if self.overflowed() {
            // Stop both halves and free every buffer: the stream is no longer understood.
            self.lines.overflow();
            self.fields = Fields { overflowed: true, ..Fields::default() };
        }
    }

    /// End of stream. "If the file ends in the middle of an event, before the final empty
    /// line, the incomplete event is not dispatched" (§9.2.6): pending data is discarded.
    pub fn finish(&mut self) {
        self.lines.reset();
        self.fields.data.clear();
        self.fields.event_type.clear();
    }

    /// A line or an event's data exceeded [`MAX_LINE`]: parsing stopped.
    pub fn overflowed(&self) -> bool {
        self.lines.overflowed() || self.fields.overflowed
    }

    /// Largest capacity among the internal buffers (for the memory-bound tests).
    pub fn buffer_capacity(&self) -> usize {
        self.lines.buffer_capacity().max(self.fields.data.capacity())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Eq, Clone)]
    enum Ev {
        E(String, String),
        C,
    }

    fn run(chunks: &[&[u8]]) -> (Vec<Ev>, SseParser) {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for c in chunks {
            p.feed(c, &mut |it| {
                out.push(match it {
                    SseItem::Event { event_type, data } => Ev::E(event_type.into(), data.into()),
                    SseItem::Comment => Ev::C,
                })
            });
        }
        p.finish();
        (out, p)
    }

    fn ev(t: &str, d: &str) -> Ev {
        Ev::E(t.into(), d.into())
    }

    /// Every single cut, every pair of cuts near the interesting bytes, and byte-by-byte.
    fn assert_split_invariant(stream: &[u8]) -> Vec<Ev> {
        let (whole, _) = run(&[stream]);
        for i in 0..=stream.len() {
            let (got, _) = run(&[&stream[..i], &stream[i..]]);
            assert_eq!(got, whole, "cut at {i}");
        }
        for i in 0..=stream.len().min(60) {
            for j in i..=stream.len().min(60) {
                let (got, _) = run(&[&stream[..i], &stream[i..j], &stream[j..]]);
                assert_eq!(got, whole, "cuts {i},{j}");
            }
        }
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(run(&bytes).0, whole, "byte by byte");
        whole
    }

    const OPENAI: &str = ": OPENROUTER PROCESSING\n\n\
data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n\
data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Héllo 😀\"}}]}\n\n\
data: [DONE]\n\n";

    #[test]
    fn realistic_stream_is_split_invariant() {
        let evs = assert_split_invariant(OPENAI.as_bytes());
        assert_eq!(evs.len(), 4);
        assert_eq!(evs[0], Ev::C);
        assert_eq!(evs[3], ev("message", "[DONE]"));
        assert!(matches!(&evs[2], Ev::E(t, d) if t == "message" && d.contains("Héllo 😀")));
    }

    #[test]
    fn line_endings_crlf_lf_cr_mixed() {
        let s = b"event: a\r\ndata: 1\r\n\r\ndata: 2\rdata: 3\r\rdata:4\n\ndata: 5\r\n\n";
        let evs = assert_split_invariant(s);
        assert_eq!(evs, vec![ev("a", "1"), ev("message", "2\n3"), ev("message", "4"), ev("message", "5")]);
        // CR at the end of a chunk, LF at the start of the next: one line end, not two
        // (two would be a blank line and dispatch "x" early, then "y" separately).
        let (got, _) = run(&[b"data: x\r", b"\ndata: y\r", b"\n\r", b"\n"]);
        assert_eq!(got, vec![ev("message", "x\ny")]);
        // Empty chunks between CR and LF do not break the pair.
        let (got, _) = run(&[b"data: x\r", b"", b"\ndata: y\n\n"]);
        assert_eq!(got, vec![ev("message", "x\ny")]);
    }

    #[test]
    fn fields_per_spec() {
        let s = b": comment\n:\ndata\n\ndata:no-space\ndata:  two spaces\n\n\
event\ndata: t\n\nunknown: x\ndata: y\n\nevent: e1\n\nDATA: z\n\ndata: a:b: c\n\n";
        let evs = assert_split_invariant(s);
        assert_eq!(
            evs,
            vec![
                Ev::C,
                Ev::C,
                // "data" with no colon: empty value, the buffer is "\n", trailing LF removed.
                ev("message", ""),
                ev("message", "no-space\n two spaces"),
                // "event" with no colon: empty type → "message".
                ev("message", "t"),
                ev("message", "y"),
                // event: e1 with no data is not dispatched, and its type does not leak.
                // DATA is not data (case-sensitive).
                ev("message", "a:b: c"),
            ]
        );
    }

    #[test]
    fn id_and_retry_lines_change_no_event() {
        let (evs, _) = run(&[b"id: 7\nretry: 1500\ndata: x\n\nid: a\0b\nretry: 15x\n\nid\nevent: e\ndata: y\nretry\n\n"]);
        assert_eq!(evs, vec![ev("message", "x"), ev("e", "y")]);
    }

    #[test]
    fn bom_only_at_start() {
        let s = "\u{FEFF}data: a\n\n\u{FEFF}data: b\n\n";
        let evs = assert_split_invariant(s.as_bytes());
        // The second BOM is part of a field name "\u{FEFF}data", which is ignored.
        assert_eq!(evs, vec![ev("message", "a")]);
        let (evs, _) = run(&[b"\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\n"]);
        assert!(evs.is_empty(), "only one BOM stripped");
    }

    #[test]
    fn pending_event_at_eof_not_dispatched() {
        let (evs, _) = run(&[b"data: a\n\ndata: b\n"]);
        assert_eq!(evs, vec![ev("message", "a")]);
        let (evs, _) = run(&[b"data: a\n\ndata: b"]);
        assert_eq!(evs, vec![ev("message", "a")]);
    }

    #[test]
    fn invalid_utf8_replaced_like_lossy() {
        let s = b"data: a\xF0\x9F\n\ndata: \xE2\x82\xAC\xFF\n\n";
        let evs = assert_split_invariant(s);
        assert_eq!(evs, vec![ev("message", "a\u{FFFD}"), ev("message", "€\u{FFFD}")]);
    }

    #[test]
    fn ten_megabyte_line_overflows_with_bounded_memory() {
        let mut p = SseParser::new();
        let mut n = 0;
        p.feed(b"data: ok\n\ndata: ", &mut |_| n += 1);
        let chunk = vec![b'x'; 64 * 1024];
        for _ in 0..160 {
            p.feed(&chunk, &mut |_| n += 1);
            assert!(p.buffer_capacity() <= MAX_LINE);
        }
        p.feed(b"\n\ndata: later\n\n", &mut |_| n += 1);
        assert_eq!(n, 1);
        assert!(p.overflowed());
        assert_eq!(p.buffer_capacity(), 0, "buffers freed on overflow");

        // One 10 MB chunk holding a complete line: never copied, still overflow.
        let mut big = b"data: ".to_vec();
        big.resize(10 << 20, b'y');
        big.extend_from_slice(b"\n\n");
        let mut p = SseParser::new();
        p.feed(&big, &mut |_| n += 1);
        assert!(p.overflowed());
        assert!(p.buffer_capacity() <= MAX_LINE);
    }

    #[test]
    fn data_buffer_bounded_across_many_lines() {
        let mut p = SseParser::new();
        let line = [b"data: ".as_slice(), &[b'z'; 1000], b"\n"].concat();
        let mut n = 0;
        for _ in 0..2000 {
            p.feed(&line, &mut |_| n += 1);
            assert!(p.buffer_capacity() <= MAX_LINE);
        }
        assert!(p.overflowed());
        assert_eq!(n, 0);
    }

    #[test]
    fn exactly_max_line_is_fine() {
        let mut s = b"data: ".to_vec();
        s.resize(MAX_LINE, b'q');
        s.extend_from_slice(b"\n\n");
        let mut p = SseParser::new();
        let mut got = 0;
        p.feed(&s[..100], &mut |_| got += 1);
        p.feed(&s[100..], &mut |_| got += 1);
        // The data buffer needs value + LF = MAX_LINE - 5 bytes: fits.
        assert_eq!(got, 1);
        assert!(!p.overflowed());
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut x: u64 = 88172645463325252;
        let alphabet = b"data: \r\n:event id retry\xFF\xE2\x82\xEF\xBB\xBF0{}\"";
        for _ in 0..2000 {
            let mut p = SseParser::new();
            let len = (x % 64) as usize;
            let mut buf = Vec::new();
            for _ in 0..len {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                buf.push(if x.is_multiple_of(3) { x as u8 } else { alphabet[(x >> 8) as usize % alphabet.len()] });
            }
            let cut = (x as usize) % (len + 1);
            let mut a = Vec::new();
            p.feed(&buf[..cut], &mut |it| a.push(format!("{it:?}")));
            p.feed(&buf[cut..], &mut |it| a.push(format!("{it:?}")));
            let mut q = SseParser::new();
            let mut b = Vec::new();
            q.feed(&buf, &mut |it| b.push(format!("{it:?}")));
            assert_eq!(a, b);
        }
    }


}
