//! Byte stream → content counts. Owns format detection and the line/event framing for
//! fetch bodies (SSE, NDJSON, plain text); `formats` owns what counts as answer text.
//!
//! Framing by Content-Type (media type compared case-insensitively, parameters ignored):
//! - `text/event-stream` → SSE (WHATWG HTML §9.2) → [`Classifier::sse_event`]; with the AI
//!   SDK header the format starts as `ai-sdk-ui`.
//! - NDJSON family (`application/x-ndjson`, `application/ndjson`, `application/jsonl`,
//!   `application/x-jsonlines`, `application/jsonlines`, `application/stream+json`,
//!   `application/json-seq`) → lines → [`Classifier::ndjson_line`].
//! - `text/plain` → every decoded char is answer text (`text`); with the AI SDK header, the
//!   AI SDK data stream protocol lines instead (`ai-sdk-ui`).
//! - anything else (missing, `application/json`, `application/octet-stream`, ...) → sniffed
//!   from the first bytes: an SSE field name (`data:`, `event:`, `id:`, `retry:`) or a comment
//!   (`:`) → SSE, `{` / `[` → NDJSON, otherwise text. Sniffing holds at most 16 bytes and
//!   decides as soon as the prefix is unambiguous, so it rarely delays the first token.
//!
//! `Content::events` counts dispatched SSE events plus SSE comment lines (keep-alives), or
//! non-blank NDJSON / data-stream lines, or text chunks that decoded to ≥ 1 char. An SSE
//! block without data (e.g. only `retry:`) is not dispatched and not counted.

use crate::core::stream::content::Content;
use crate::core::stream::formats::{Classifier, Format};
use crate::core::stream::tail::TextTail;
use crate::core::stream::lines::LineSplitter;
use crate::core::stream::sse::{SseItem, SseParser};
use crate::core::stream::utf8::{count_chars, Utf8Decoder};

const NDJSON_TYPES: [&str; 7] = [
    "application/x-ndjson",
    "application/ndjson",
    "application/jsonl",
    "application/x-jsonlines",
    "application/jsonlines",
    "application/stream+json",
    "application/json-seq",
];

/// The media type of a Content-Type value: parameters dropped, whitespace trimmed.
fn media_type(content_type: &str) -> &str {
    let end = content_type.bytes().position(|b| b == b';').unwrap_or(content_type.len());
    content_type.get(..end).unwrap_or("").trim_ascii()
}

/// True when a response with this Content-Type is a stream worth measuring by default.
/// `text/plain` is not: too many plain responses are not streams (the user's `match` option
/// opts those in).
pub fn is_stream_content_type(content_type: &str) -> bool {
    let mt = media_type(content_type);
    mt.eq_ignore_ascii_case("text/event-stream") || NDJSON_TYPES.iter().any(|t| mt.eq_ignore_ascii_case(t))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Sse,
    Ndjson,
    /// AI SDK data stream protocol lines.
    DataStream,
    Text,
    /// Content-Type says nothing; deciding from the first bytes.
    Sniff,
}

const SNIFF_MAX: usize = 16;

/// Decides the framing of an unlabelled body from its first bytes, or `None` while the
/// prefix is still ambiguous (and `complete` is false).
fn sniff(buf: &[u8], complete: bool) -> Option<Mode> {
    let undecided = if complete || buf.len() >= SNIFF_MAX { Some(Mode::Text) } else { None };
    const BOM: &[u8] = b"\xEF\xBB\xBF";
    let b = match buf.strip_prefix(BOM) {
        Some(rest) => rest,
        None if BOM.starts_with(buf) => return undecided,
        None => buf,
    };
    let start = b.iter().position(|c| !c.is_ascii_whitespace());
    let Some(s) = start.and_then(|i| b.get(i..)) else {
        return undecided;
    };
    match s.first() {
        Some(b'{' | b'[') => return Some(Mode::Ndjson),
        Some(b':') => return Some(Mode::Sse),
        _ => {}
    }
    for kw in [&b"data:"[..], b"event:", b"id:", b"retry:"] {
        if s.starts_with(kw) {
            return Some(Mode::Sse);
        }
        if kw.starts_with(s) {
            return undecided;
        }
    }
    Some(Mode::Text)
}

/// Incremental decoder for one response body.
pub struct StreamDecoder {
    mode: Mode,
    classifier: Classifier,
    sse: SseParser,
    lines: LineSplitter,
    utf8: Utf8Decoder,
    ai_sdk: bool,
    sniff_buf: [u8; SNIFF_MAX],
    sniff_len: usize,
}

impl StreamDecoder {
    /// `content_type`: the response's Content-Type ("" when absent). `ai_sdk_header`: the
    /// response carried an AI SDK stream header (`x-vercel-ai-ui-message-stream` for the SSE
    /// UI message stream, or `x-vercel-ai-data-stream` for the text/plain data stream).
    pub fn new(content_type: &str, ai_sdk_header: bool) -> Self {
        let mt = media_type(content_type);
        let mode = if mt.eq_ignore_ascii_case("text/event-stream") {
            Mode::Sse
        } else if NDJSON_TYPES.iter().any(|t| mt.eq_ignore_ascii_case(t)) {
            Mode::Ndjson
        } else if mt.eq_ignore_ascii_case("text/plain") {
            if ai_sdk_header {
                Mode::DataStream
            } else {
                Mode::Text
            }
        } else {
            Mode::Sniff
        };
        let mut d = StreamDecoder {
            mode: Mode::Sniff,
            classifier: Classifier::new(Format::Unknown),
            sse: SseParser::new(),
            lines: LineSplitter::new(),
            utf8: Utf8Decoder::new(),
            ai_sdk: ai_sdk_header,
            sniff_buf: [0; SNIFF_MAX],
            sniff_len: 0,
        };
        if mode != Mode::Sniff {
            d.set_mode(mode);
        }
        d
    }

    fn set_mode(&mut self, mode: Mode) {
        self.mode = mode;
        let initial = match mode {
            Mode::Sse if self.ai_sdk => Format::AiSdkUi,
            Mode::Sse | Mode::Sniff => Format::Unknown,
            Mode::Ndjson => Format::Ndjson,
            Mode::DataStream => Format::AiSdkUi,
            Mode::Text => Format::Text,
        };
        let tail = self.classifier.tail.take();
        self.classifier = Classifier::new(initial);
        self.classifier.tail = tail;
    }

    /// Keeps the answer text's tail from now on (paint probes); `chars_so_far` = answer chars
    /// already counted (their text is gone). Idempotent.
    pub fn keep_tail(&mut self, chars_so_far: u32) {
        self.classifier.tail.get_or_insert_with(|| TextTail::starting_at(chars_so_far));
    }

    /// The answer text's tail, when kept.
    pub fn tail(&self) -> Option<&TextTail> {
        self.classifier.tail.as_ref()
    }

    /// The model the stream named (`Classifier::model`).
    pub fn model(&self) -> Option<&str> {
        self.classifier.model()
    }

    /// One SSE message already framed by the browser (EventSource): classified by this
    /// decoder's own classifier, so format detection and content rules are the fetch path's.
    pub fn sse_message(&mut self, event_type: &str, data: &str) -> Content {
        self.classifier.sse_event(event_type, data)
    }

    /// Feeds one delivered chunk, arbitrary split. O(chunk) time, bounded memory.
    pub fn feed(&mut self, bytes: &[u8]) -> Content {
        if self.mode != Mode::Sniff {
            return self.feed_framed(bytes);
        }
        let take = (SNIFF_MAX - self.sniff_len).min(bytes.len());
        self.sniff_buf[self.sniff_len..self.sniff_len + take].copy_from_slice(&bytes[..take]);
        self.sniff_len += take;
        match sniff(&self.sniff_buf[..self.sniff_len], false) {
            Some(mode) => self.replay(mode, &bytes[take..]),
            None => Content::default(),
        }
    }

    /// Switches to the sniffed framing and feeds it the held-back prefix, then `rest`.
    fn replay(&mut self, mode: Mode, rest: &[u8]) -> Content {
        self.set_mode(mode);
        let held = self.sniff_buf;
        let mut c = self.feed_framed(&held[..self.sniff_len]);
        self.sniff_len = 0;
        c.merge(&self.feed_framed(rest));
        c
    }

    fn feed_framed(&mut self, bytes: &[u8]) -> Content {
        let mut c = Content::default();
        let cl = &mut self.classifier;
        match self.mode {
            Mode::Sse => self.sse.feed(bytes, &mut |item| match item {
                SseItem::Event { event_type, data } => c.merge(&cl.sse_event(event_type, data)),
                SseItem::Comment => c.events = c.events.saturating_add(1),
            }),
            Mode::Ndjson | Mode::DataStream => {
                let data_stream = self.mode == Mode::DataStream;
                self.lines.feed(bytes, &mut |line| line_content(cl, data_stream, line, &mut c))
            }
            Mode::Text => text_content(count_into(&mut cl.tail, |out| self.utf8.decode(bytes, out)), &mut c),
            Mode::Sniff => {}
        }
        c
    }

    /// End of body: flushes a pending line / event (SSE dispatches only on a blank line,
    /// so a pending unterminated event is *not* dispatched, as in EventSource).
    pub fn finish(&mut self) -> Content {
        let mut c = Content::default();
        if self.mode == Mode::Sniff {
            let mode = sniff(&self.sniff_buf[..self.sniff_len], true).unwrap_or(Mode::Text);
            c = self.replay(mode, &[]);
        }
        let cl = &mut self.classifier;
        match self.mode {
            Mode::Sse => self.sse.finish(),
            Mode::Ndjson | Mode::DataStream => {
                let data_stream = self.mode == Mode::DataStream;
                self.lines.finish(&mut |line| line_content(cl, data_stream, line, &mut c))
            }
            Mode::Text => text_content(count_into(&mut cl.tail, |out| self.utf8.finish(out)), &mut c),
            Mode::Sniff => {}
        }
        c
    }

    /// The content rule applied so far.
    pub fn format(&self) -> Format {
        if self.mode == Mode::Sniff {
            Format::Unknown
        } else {
            self.classifier.format()
        }
    }

    /// A line exceeded the bounded buffer: from then on content is not understood.
    pub fn overflowed(&self) -> bool {
        self.sse.overflowed() || self.lines.overflowed()
    }

    /// Largest internal buffer capacity in bytes (stays ≤ `lines::MAX_LINE`).
    pub fn buffer_capacity(&self) -> usize {
        self.sse.buffer_capacity().max(self.lines.buffer_capacity())
    }
}

fn line_content(cl: &mut Classifier, data_stream: bool, line: &[u8], c: &mut Content) {
    // Lines are decoded on their own; see `sse` for why that equals decoding the stream.
    let s = crate::core::stream::utf8::lossy(line);
    c.merge(&if data_stream { cl.data_stream_line(&s) } else { cl.ndjson_line(&s) });
}

/// Decoded text/plain pieces: counted, and fed to the probe tail when one is kept.
fn count_into(tail: &mut Option<TextTail>, decode: impl FnOnce(&mut dyn FnMut(&str))) -> u32 {
    let mut n = 0u32;
    decode(&mut |s| {
        n = n.saturating_add(count_chars(s));
        if let Some(t) = tail.as_mut() {
            s.chars().for_each(|ch| t.push(ch));
        }
    });
    n
}

fn text_content(chars: u32, c: &mut Content) {
    if chars > 0 {
        c.events = c.events.saturating_add(1);
        c.content_events = c.content_events.saturating_add(1);
        c.content_chars = c.content_chars.saturating_add(chars);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::util::test_rng::Rng;
    use crate::core::stream::lines::MAX_LINE;

    fn run(ct: &str, ai: bool, chunks: &[&[u8]]) -> (Content, Format, bool) {
        let mut d = StreamDecoder::new(ct, ai);
        let mut c = Content::default();
        for ch in chunks {
            c.merge(&d.feed(ch));
        }
        c.merge(&d.finish());
        (c, d.format(), d.overflowed())
    }

    /// Totals for the whole body at once, checked equal for every 1-cut, every 2-cut in the
    /// first 80 bytes, and byte-by-byte delivery.
    fn split_invariant(ct: &str, ai: bool, body: &[u8]) -> (Content, Format) {
        let (whole, f, _) = run(ct, ai, &[body]);
        for i in 0..=body.len() {
            let (c, g, _) = run(ct, ai, &[&body[..i], &body[i..]]);
            assert_eq!((c, g), (whole, f), "{ct}: cut at {i}");
        }
        let n = body.len().min(80);
        for i in 0..=n {
            for j in i..=n {
                let (c, _, _) = run(ct, ai, &[&body[..i], &body[i..j], &body[j..]]);
                assert_eq!(c, whole, "{ct}: cuts {i},{j}");
            }
        }
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(run(ct, ai, &bytes).0, whole, "{ct}: byte by byte");
        (whole, f)
    }

    fn chars(s: &str) -> u32 {
        s.chars().count() as u32
    }

    const OPENAI_CHAT: &str = ": OPENROUTER PROCESSING\n\n\
data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n\
data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n\
data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"! How can I help? \\ud83d\\ude00 \u{1F600}\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n\
data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"stop\"}],\"usage\":null}\n\n\
data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":9,\"total_tokens\":17}}\n\n\
data: [DONE]\n\n";

    const ANTHROPIC: &str = "event: message_start\n\
data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-20250514\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n\
event: content_block_start\n\
data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n\
event: ping\n\
data: {\"type\": \"ping\"}\n\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Let me think\"}}\n\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EqQBCgIYAhIM1gbcDa9GJwZA2b3h\"}}\n\n\
event: content_block_stop\n\
data: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
event: content_block_start\n\
data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n\
event: content_block_delta\n\
data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\", w\u{f6}rld! \u{1F44B}\"}}\n\n\
event: content_block_stop\n\
data: {\"type\":\"content_block_stop\",\"index\":1}\n\n\
event: message_delta\n\
data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":15}}\n\n\
event: message_stop\n\
data: {\"type\":\"message_stop\"}\n\n";

    const RESPONSES: &str = "event: response.created\n\
data: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"model\":\"gpt-5-2025-08-07\",\"output\":[],\"usage\":null}}\n\n\
event: response.in_progress\n\
data: {\"type\":\"response.in_progress\",\"sequence_number\":1,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"usage\":null}}\n\n\
event: response.output_item.added\n\
data: {\"type\":\"response.output_item.added\",\"sequence_number\":2,\"output_index\":0,\"item\":{\"id\":\"rs_1\",\"type\":\"reasoning\",\"summary\":[]}}\n\n\
event: response.reasoning_summary_text.delta\n\
data: {\"type\":\"response.reasoning_summary_text.delta\",\"sequence_number\":3,\"item_id\":\"rs_1\",\"output_index\":0,\"summary_index\":0,\"delta\":\"**Plan**\"}\n\n\
event: response.output_item.added\n\
data: {\"type\":\"response.output_item.added\",\"sequence_number\":4,\"output_index\":1,\"item\":{\"id\":\"msg_1\",\"type\":\"message\",\"status\":\"in_progress\",\"content\":[],\"role\":\"assistant\"}}\n\n\
event: response.content_part.added\n\
data: {\"type\":\"response.content_part.added\",\"sequence_number\":5,\"item_id\":\"msg_1\",\"output_index\":1,\"content_index\":0,\"part\":{\"type\":\"output_text\",\"annotations\":[],\"text\":\"\"}}\n\n\
event: response.output_text.delta\n\
data: {\"type\":\"response.output_text.delta\",\"sequence_number\":6,\"item_id\":\"msg_1\",\"output_index\":1,\"content_index\":0,\"delta\":\"Hi\"}\n\n\
event: response.output_text.delta\n\
data: {\"type\":\"response.output_text.delta\",\"sequence_number\":7,\"item_id\":\"msg_1\",\"output_index\":1,\"content_index\":0,\"delta\":\" there\\n\"}\n\n\
event: response.output_text.done\n\
data: {\"type\":\"response.output_text.done\",\"sequence_number\":8,\"item_id\":\"msg_1\",\"output_index\":1,\"content_index\":0,\"text\":\"Hi there\\n\"}\n\n\
event: response.completed\n\
data: {\"type\":\"response.completed\",\"sequence_number\":9,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\",\"usage\":{\"input_tokens\":10,\"output_tokens\":20,\"output_tokens_details\":{\"reasoning_tokens\":12},\"total_tokens\":30}}}\n\n";

    const AI_SDK_UI: &str = "data: {\"type\":\"start\",\"messageId\":\"msg-1\"}\n\n\
data: {\"type\":\"start-step\"}\n\n\
data: {\"type\":\"reasoning-start\",\"id\":\"r1\"}\n\n\
data: {\"type\":\"reasoning-delta\",\"id\":\"r1\",\"delta\":\"Thinking...\"}\n\n\
data: {\"type\":\"reasoning-end\",\"id\":\"r1\"}\n\n\
data: {\"type\":\"text-start\",\"id\":\"t1\"}\n\n\
data: {\"type\":\"text-delta\",\"id\":\"t1\",\"delta\":\"Hello\"}\n\n\
data: {\"type\":\"text-delta\",\"id\":\"t1\",\"delta\":\"\"}\n\n\
data: {\"type\":\"text-delta\",\"id\":\"t1\",\"delta\":\" world\"}\n\n\
data: {\"type\":\"text-end\",\"id\":\"t1\"}\n\n\
data: {\"type\":\"finish-step\"}\n\n\
data: {\"type\":\"finish\"}\n\n\
data: [DONE]\n\n";

    const OLLAMA: &str = "{\"model\":\"qwen3\",\"created_at\":\"2025-01-01T00:00:00Z\",\"message\":{\"role\":\"assistant\",\"content\":\"\",\"thinking\":\"Hmm\"},\"done\":false}\n\
{\"model\":\"qwen3\",\"created_at\":\"2025-01-01T00:00:00Z\",\"message\":{\"role\":\"assistant\",\"content\":\"The sky\"},\"done\":false}\n\
{\"model\":\"qwen3\",\"created_at\":\"2025-01-01T00:00:00Z\",\"message\":{\"role\":\"assistant\",\"content\":\" is blue \u{2600}\u{fe0f}\"},\"done\":false}\n\
{\"model\":\"qwen3\",\"created_at\":\"2025-01-01T00:00:01Z\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done_reason\":\"stop\",\"done\":true,\"total_duration\":4883583458,\"eval_count\":282,\"eval_duration\":4535599000}";

    #[test]
    fn openai_chat_fixture() {
        let (c, f) = split_invariant("text/event-stream; charset=utf-8", false, OPENAI_CHAT.as_bytes());
        assert_eq!(f, Format::OpenAiChat);
        assert_eq!(c.events, 7, "1 comment + 6 events");
        assert_eq!(c.content_events, 2);
        assert_eq!(c.content_chars, chars("Hello") + chars("! How can I help? 😀 😀"));
        assert_eq!((c.reasoning_events, c.reasoning_chars), (0, 0));
        assert_eq!(c.usage_output_tokens, Some(9));
        assert!(c.done && !c.error_event);
    }

    #[test]
    fn anthropic_fixture() {
        let (c, f) = split_invariant("text/event-stream", false, ANTHROPIC.as_bytes());
        assert_eq!(f, Format::Anthropic);
        assert_eq!(c.events, 12);
        assert_eq!((c.content_events, c.content_chars), (2, chars("Hello") + chars(", wörld! 👋")));
        assert_eq!((c.reasoning_events, c.reasoning_chars), (1, chars("Let me think")));
        assert_eq!(c.usage_output_tokens, Some(15));
        assert!(c.done && !c.error_event);
        // An error mid-stream (overloaded) is flagged; the stream is not done.
        let err = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
        let body = [&ANTHROPIC[..ANTHROPIC.find("event: message_delta").unwrap()], err].concat();
        let (c, _, _) = run("text/event-stream", false, &[body.as_bytes()]);
        assert!(c.error_event && !c.done);
    }

    #[test]
    fn responses_fixture() {
        let (c, f) = split_invariant("text/event-stream", false, RESPONSES.as_bytes());
        assert_eq!(f, Format::OpenAiResponses);
        assert_eq!(c.events, 10);
        assert_eq!((c.content_events, c.content_chars), (2, chars("Hi there\n")));
        assert_eq!((c.reasoning_events, c.reasoning_chars), (1, chars("**Plan**")));
        assert_eq!(c.usage_output_tokens, Some(20));
        assert!(c.done && !c.error_event);
        let failed = "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"server_error\"}}}\n\n";
        let (c, f, _) = run("text/event-stream", false, &[failed.as_bytes()]);
        assert!(c.error_event && f == Format::OpenAiResponses);
    }

    #[test]
    fn ai_sdk_ui_fixture() {
        for ai in [false, true] {
            let (c, f) = split_invariant("text/event-stream", ai, AI_SDK_UI.as_bytes());
            assert_eq!(f, Format::AiSdkUi);
            assert_eq!(c.events, 13);
            assert_eq!((c.content_events, c.content_chars), (2, 11));
            assert_eq!((c.reasoning_events, c.reasoning_chars), (1, 11));
            assert!(c.done && !c.error_event);
        }
        let err = "data: {\"type\":\"error\",\"errorText\":\"rate limited\"}\n\n";
        assert!(run("text/event-stream", true, &[err.as_bytes()]).0.error_event);
    }

    #[test]
    fn ai_sdk_data_stream_over_text_plain() {
        let body = "f:{\"messageId\":\"m\"}\ng:\"hm\"\n0:\"Hel\"\n0:\"lo\\n\"\ne:{\"finishReason\":\"stop\"}\nd:{\"finishReason\":\"stop\",\"usage\":{\"promptTokens\":1,\"completionTokens\":3}}\n";
        let (c, f) = split_invariant("text/plain; charset=utf-8", true, body.as_bytes());
        assert_eq!(f, Format::AiSdkUi);
        assert_eq!((c.events, c.content_events, c.content_chars), (6, 2, 6));
        assert_eq!((c.reasoning_events, c.reasoning_chars), (1, 2));
        assert_eq!(c.usage_output_tokens, Some(3));
        assert!(c.done);
    }

    /// The model a body names, delivered whole and cut at every byte.
    fn model_of(ct: &str, ai: bool, body: &[u8]) -> Option<String> {
        let whole = |chunks: &[&[u8]]| {
            let mut d = StreamDecoder::new(ct, ai);
            for c in chunks {
                d.feed(c);
            }
            d.finish();
            d.model().map(String::from)
        };
        let want = whole(&[body]);
        for i in 0..=body.len() {
            assert_eq!(whole(&[&body[..i], &body[i..]]), want, "cut at {i}");
        }
        want
    }

    #[test]
    fn the_model_each_format_names() {
        let sse = "text/event-stream";
        assert_eq!(model_of(sse, false, OPENAI_CHAT.as_bytes()).as_deref(), Some("gpt-4o"));
        assert_eq!(model_of(sse, false, ANTHROPIC.as_bytes()).as_deref(), Some("claude-sonnet-4-20250514"));
        assert_eq!(model_of(sse, false, RESPONSES.as_bytes()).as_deref(), Some("gpt-5-2025-08-07"));
        assert_eq!(model_of("application/x-ndjson", false, OLLAMA.as_bytes()).as_deref(), Some("qwen3"));
        let openai_ndjson = "{\"model\":\"llama-3.1-8b\",\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n";
        assert_eq!(model_of("application/x-ndjson", false, openai_ndjson.as_bytes()).as_deref(), Some("llama-3.1-8b"));
        // Formats that carry none.
        assert_eq!(model_of(sse, false, AI_SDK_UI.as_bytes()), None);
        assert_eq!(model_of(sse, true, AI_SDK_UI.as_bytes()), None);
        assert_eq!(model_of("text/plain", true, b"0:\"Hi\"\nd:{\"finishReason\":\"stop\"}\n"), None);
        assert_eq!(model_of("text/plain", false, b"model: gpt-4o says hi"), None);
        assert_eq!(model_of("", false, b"data: {\"model\":\"x\",\"text\":\"no known format\"}\n\n"), None);
        // A key named `model` elsewhere is not the model: inside a delta, or an Anthropic
        // event other than message_start.
        let nested = "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\",\"model\":\"nested\"}}]}\n\n";
        assert_eq!(model_of(sse, false, nested.as_bytes()), None);
        let late = "event: message_delta\ndata: {\"type\":\"message_delta\",\"message\":{\"model\":\"late\"},\"usage\":{\"output_tokens\":2}}\n\n";
        assert_eq!(model_of(sse, false, late.as_bytes()), None);
    }

    #[test]
    fn the_first_model_named_is_kept_bounded() {
        let chunk = |model: &str| ["data: {\"model\":", model, ",\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n"].concat();
        let body = |models: &[&str]| models.iter().map(|m| chunk(m)).collect::<String>();
        let sse = "text/event-stream";
        // Empty, null and non-string values are skipped; the first real one stays.
        assert_eq!(model_of(sse, false, body(&["\"\"", "null", "42", "{\"id\":\"o\"}", "\"  gpt-4o \"", "\"gpt-4o-mini\""]).as_bytes()).as_deref(), Some("gpt-4o"));
        // Odd chars: escapes decoded, then anything outside the charset is `_`.
        assert_eq!(model_of(sse, false, body(&["\"<b>gpt\\u00e9 4o</b>\\n\""]).as_bytes()).as_deref(), Some("_b_gpt__4o_/b_"));
        // Oversized: cut at MAX_NAME chars (the line itself stays under the decoder's bound).
        let long = ["\"", &"m".repeat(100_000), "\""].concat();
        let mut d = StreamDecoder::new(sse, false);
        d.feed(body(&[&long]).as_bytes());
        assert_eq!(d.model(), Some("m".repeat(crate::core::util::text::MAX_NAME).as_str()));
        // EventSource messages take the same rules.
        let mut d = StreamDecoder::new(sse, false);
        d.sse_message("message", "{\"model\":\"gpt-4.1\",\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}");
        assert_eq!(d.model(), Some("gpt-4.1"));
    }

    #[test]
    fn line_ending_variants_give_same_totals() {
        for fixture in [OPENAI_CHAT, ANTHROPIC, RESPONSES, AI_SDK_UI] {
            let (lf, _, _) = run("text/event-stream", false, &[fixture.as_bytes()]);
            for nl in ["\r\n", "\r"] {
                let body = fixture.replace('\n', nl);
                let (c, _) = split_invariant("text/event-stream", false, body.as_bytes());
                assert_eq!(c, lf, "{nl:?}");
            }
            // With a BOM in front: still the same.
            let body = ["\u{FEFF}", fixture].concat();
            assert_eq!(run("text/event-stream", false, &[body.as_bytes()]).0, lf);
        }
    }

    #[test]
    fn ndjson_ollama_fixture() {
        for ct in ["application/x-ndjson", "application/jsonl", "Application/X-NDJSON; charset=utf-8"] {
            // The last line has no terminator: emitted at finish.
            let (c, f) = split_invariant(ct, false, OLLAMA.as_bytes());
            assert_eq!(f, Format::Ndjson);
            assert_eq!(c.events, 4);
            assert_eq!((c.content_events, c.content_chars), (2, chars("The sky is blue ☀️")));
            assert_eq!((c.reasoning_events, c.reasoning_chars), (1, 3));
            assert_eq!(c.usage_output_tokens, Some(282));
            assert!(c.done);
        }
        let crlf = OLLAMA.replace('\n', "\r\n") + "\r\n\r\n";
        assert_eq!(run("application/x-ndjson", false, &[crlf.as_bytes()]).0.content_chars, chars("The sky is blue ☀️"));
    }

    #[test]
    fn text_plain_counts_chars_across_chunks() {
        let text = "Bonjour 👩‍👩‍👧‍👦 — ça va? 中文";
        let b = text.as_bytes();
        for i in 0..=b.len() {
            let (c, f, _) = run("text/plain", false, &[&b[..i], &b[i..]]);
            assert_eq!(f, Format::Text);
            assert_eq!(c.content_chars, chars(text), "cut at {i}");
        }
        let bytes: Vec<&[u8]> = b.chunks(1).collect();
        let (c, _, _) = run("text/plain", false, &bytes);
        assert_eq!(c.content_chars, chars(text));
        // Every byte is its own chunk, but only chunks that complete a char are events.
        assert_eq!(c.content_events, chars(text));
        // Invalid bytes: U+FFFD counts as from_utf8_lossy; a dangling lead byte at the end too.
        let bad = b"a\xFF\xE2\x82b\xF0\x9F";
        let (c, _, _) = run("text/plain", false, &[&bad[..3], &bad[3..]]);
        assert_eq!(c.content_chars, chars(&String::from_utf8_lossy(bad)));
        // A BOM is not text.
        assert_eq!(run("text/plain", false, &[b"\xEF\xBB", b"\xBFhi"]).0.content_chars, 2);
    }

    #[test]
    fn unlabelled_bodies_are_sniffed() {
        let (c, f) = split_invariant("", false, OPENAI_CHAT.as_bytes());
        assert_eq!(f, Format::OpenAiChat);
        assert_eq!(c.content_events, 2);
        let (c, f) = split_invariant("application/octet-stream", false, AI_SDK_UI.as_bytes());
        assert_eq!((f, c.content_chars), (Format::AiSdkUi, 11));
        let (c, f) = split_invariant("application/json", false, OLLAMA.as_bytes());
        assert_eq!((f, c.content_events), (Format::Ndjson, 2));
        let (c, f) = split_invariant("", false, "\u{FEFF}\n\ndata: hi\n\n".as_bytes());
        assert_eq!((f, c.content_chars), (Format::Unknown, 2));
        // Text: events depend on chunking by design, chars do not.
        let text = "Plain answer é".as_bytes();
        for i in 0..=text.len() {
            let (c, f, _) = run("", false, &[&text[..i], &text[i..]]);
            assert_eq!((f, c.content_chars), (Format::Text, 14), "cut at {i}");
        }
        // Shorter than the sniff window: decided at finish.
        assert_eq!(run("", false, &[b"da"]).0.content_chars, 2);
        assert_eq!(run("", false, &[b"data: x\n\n"]).0.content_chars, 1);
        assert_eq!(run("", false, &[b""]).0, Content::default());
        // A decided prefix is not delayed: the first chunk is counted at once.
        let mut d = StreamDecoder::new("", false);
        assert_eq!(d.feed(b"Hi").content_chars, 2);
    }

    #[test]
    fn content_type_classification() {
        for ct in [
            "text/event-stream",
            "TEXT/EVENT-STREAM; charset=utf-8",
            " text/event-stream ;x=y",
            "application/x-ndjson",
            "application/jsonl",
            "application/x-jsonlines",
            "application/stream+json",
        ] {
            assert!(is_stream_content_type(ct), "{ct}");
        }
        for ct in ["text/plain", "text/plain; charset=utf-8", "application/json", "", "text/html", "text/event-streamx"]
        {
            assert!(!is_stream_content_type(ct), "{ct}");
        }
    }

    #[test]
    fn pending_event_at_end_is_not_dispatched() {
        let body =
            "data: {\"type\":\"text-delta\",\"delta\":\"a\"}\n\ndata: {\"type\":\"text-delta\",\"delta\":\"bc\"}\n";
        let (c, _) = split_invariant("text/event-stream", true, body.as_bytes());
        assert_eq!((c.content_events, c.content_chars), (1, 1));
    }

    #[test]
    fn ten_megabyte_line_overflows_with_bounded_memory() {
        for ct in ["text/event-stream", "application/x-ndjson", ""] {
            let mut d = StreamDecoder::new(ct, false);
            let first = if ct == "application/x-ndjson" {
                "{\"response\":\"ok\"}\n{\"response\":\""
            } else {
                "data: ok\n\ndata: "
            };
            let mut c = d.feed(first.as_bytes());
            let chunk = vec![b'x'; 256 * 1024];
            for _ in 0..40 {
                c.merge(&d.feed(&chunk));
                assert!(d.buffer_capacity() <= MAX_LINE, "{ct}");
            }
            c.merge(&d.feed(b"\"}\n\ndata: more\n\n{\"response\":\"more\"}\n"));
            c.merge(&d.finish());
            assert!(d.overflowed(), "{ct}");
            assert_eq!(c.content_events, 1, "{ct}: only the event before the long line");
            assert!(d.buffer_capacity() <= MAX_LINE);
        }
        // Plain text never buffers.
        let mut d = StreamDecoder::new("text/plain", false);
        let big = vec![b'y'; 10 << 20];
        assert_eq!(d.feed(&big).content_chars, 10 << 20);
        assert!(!d.overflowed());
    }


    #[test]
    fn garbage_never_panics() {
        let mut rng = Rng(0x1234_5678_9ABC_DEF1);
        let cts = ["text/event-stream", "application/x-ndjson", "text/plain", "", "application/json"];
        let bomb = ["data: ", &"[".repeat(100_000), "\n\n"].concat();
        let deep_obj = ["{\"a\":".repeat(50_000), "\n".into()].concat();
        for ct in cts {
            for ai in [false, true] {
                for round in 0..200 {
                    let mut d = StreamDecoder::new(ct, ai);
                    let len = rng.index(300);
                    let body: Vec<u8> = (0..len)
                        .map(|_| {
                            let r = rng.next_u64();
                            if r.is_multiple_of(4) {
                                b"\n\r:{}[]\"\\ data"[(r >> 8) as usize % 14]
                            } else {
                                (r >> 16) as u8
                            }
                        })
                        .collect();
                    let mut pos = 0;
                    while pos < body.len() {
                        let n = 1 + rng.index(body.len() - pos);
                        d.feed(&body[pos..pos + n]);
                        pos += n;
                    }
                    if round == 0 {
                        d.feed(bomb.as_bytes());
                        d.feed(deep_obj.as_bytes());
                        d.feed(b"data: {\"choices\":[{\"delta\":{\"content\":\"trunc");
                    }
                    d.finish();
                    let _ = (d.format(), d.overflowed());
                }
            }
        }
    }

    /// Property: any random mix of events, delivered in random splits, gives the same totals
    /// as one-shot delivery.
    #[test]
    fn random_splits_match_one_shot() {
        let events: Vec<String> = [OPENAI_CHAT, ANTHROPIC, RESPONSES, AI_SDK_UI]
            .iter()
            .flat_map(|f| f.split("\n\n").filter(|e| !e.is_empty()).map(|e| e.to_string() + "\n\n"))
            .chain([
                ": keep-alive\n\n".to_string(),
                "retry: 3000\n\n".to_string(),
                "data: plain é\ndata: two\n\n".to_string(),
                "data: \u{1F600}\u{200D}\u{1F525}\r\n\r\n".to_string(),
                "id: 5\rdata: {\"x\":1}\r\r".to_string(),
            ])
            .collect();
        let mut rng = Rng(42);
        for round in 0..400 {
            let mut body = String::new();
            for _ in 0..(1 + rng.index(12)) {
                body.push_str(&events[rng.index(events.len())]);
            }
            if round % 5 == 0 {
                body = body.replace('\n', "\r\n");
            }
            let b = body.as_bytes();
            let ct = if round % 7 == 0 { "" } else { "text/event-stream" };
            let (want, wf, _) = run(ct, false, &[b]);
            let mut cuts: Vec<usize> = (0..rng.index(20)).map(|_| rng.index(b.len() + 1)).collect();
            cuts.sort_unstable();
            let mut chunks: Vec<&[u8]> = Vec::new();
            let mut prev = 0;
            for c in cuts.into_iter().chain([b.len()]) {
                chunks.push(&b[prev..c]);
                prev = c;
            }
            let (got, gf, _) = run(ct, false, &chunks);
            assert_eq!((got, gf), (want, wf), "round {round}");
        }
    }
}
