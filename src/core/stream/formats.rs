//! What counts as answer text, per streaming format: the rules behind the record's
//! `firstToken`, `chars`, `contentEvents` and `format`.
//!
//! Rules, per format (an event is "content" when it carries ≥ 1 char of answer text):
//! - `openai-chat`: `choices[].delta.content` (and `choices[].message.content`, for servers
//!   that send whole messages) → content, summed over choices; `delta.reasoning_content` /
//!   `delta.reasoning` → reasoning; role-only, empty, `null` and tool-call-only deltas are
//!   nothing. `usage.completion_tokens` → usage. `data: [DONE]` → done, and so is a non-null
//!   `finish_reason`: the answer text is complete at that point (only the usage chunk may
//!   follow), and some OpenAI-compatible servers never send `[DONE]`.
//! - `openai-responses`: `response.output_text.delta` / `response.refusal.delta` → content;
//!   `response.reasoning_text.delta` / `response.reasoning_summary_text.delta` → reasoning;
//!   `response.completed` / `response.incomplete` → done + `response.usage.output_tokens`;
//!   `response.failed` → error.
//! - `anthropic`: `content_block_delta` with `text_delta` → `delta.text`, `thinking_delta` →
//!   `delta.thinking` (reasoning); `message_delta` → `usage.output_tokens`; `message_stop` →
//!   done; `ping` and the rest are nothing.
//! - `ai-sdk-ui` (AI SDK v5 UI message stream): `text-delta` → `delta` (v4 `textDelta` too),
//!   `reasoning-delta` → reasoning, `finish` → done. The older AI SDK *data stream* protocol
//!   (`0:"text"`, `g:"reasoning"`, `3:"error"`, `d:{finish}`) is read by
//!   [`Classifier::data_stream_line`] and reported under the same name.
//! - `ndjson`: Ollama chat `message.content` / `message.thinking`, Ollama generate
//!   `response` / `thinking`, `done: true` → done, `eval_count` → usage; OpenAI-shaped
//!   objects (`choices`) by the openai-chat rules. Any other non-empty line (JSON or not)
//!   counts as content with the line's chars; the format stays `ndjson`.
//! - `text`: handled by `StreamDecoder` (every decoded char is content).
//! - `unknown`: any event with non-empty data is content; chars = chars of the data.
//!
//! In every format: `{"type":"error"}` or a non-null top-level `error` member → `error_event`,
//! and data `[DONE]` → done. The format is detected from the first event that identifies it
//! and then kept.
//!
//! The model that answered (the record's `model`): the first non-empty one the stream names —
//! `openai-chat`: each chunk's `model`; `openai-responses`: `response.model` (from
//! `response.created` on, `response.completed` too); `anthropic`: `message_start` →
//! `message.model`; `ndjson`: each line's `model` (Ollama, OpenAI-shaped lines). AI SDK UI
//! streams, the data stream and text carry none. (An EventSource shows the SDK only the named
//! events the app listens for: one that skips `message_start` hides Anthropic's model.) Held to the name bound (`util::text::name`); never read from anything else (the
//! prompt is not seen at all).

use crate::core::util::json_read::{self, Json};
use crate::core::stream::content::Content;
use crate::core::stream::tail::TextTail;
use crate::core::stream::utf8::count_chars;
use crate::core::util::text::name;
use alloc::string::String;

/// The content rule that applied to a stream; `as_str` gives the record's `format` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    OpenAiChat,
    OpenAiResponses,
    Anthropic,
    AiSdkUi,
    Ndjson,
    Text,
    Unknown,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::OpenAiChat => "openai-chat",
            Format::OpenAiResponses => "openai-responses",
            Format::Anthropic => "anthropic",
            Format::AiSdkUi => "ai-sdk-ui",
            Format::Ndjson => "ndjson",
            Format::Text => "text",
            Format::Unknown => "unknown",
        }
    }
}

/// Classifies already-framed messages: one SSE event (`event` type, joined `data`) or one
/// NDJSON line. Used by `StreamDecoder` for fetch bodies and directly for EventSource
/// messages, so both paths share one definition of "content".
#[derive(Clone, Debug)]
pub struct Classifier {
    format: Format,
    /// The answer text's tail for paint probes (`tail.rs`), when an element is observed.
    pub tail: Option<TextTail>,
    /// The model the stream named first (bounded), once it has.
    model: Option<String>,
}

/// Char count of a JSON string value; 0 for absent / null / non-string.
fn chars(v: Option<Json<'_>>) -> u32 {
    v.and_then(Json::str_chars).unwrap_or(0)
}

/// A piece of answer text in a message: a JSON string value, or raw text.
#[derive(Clone, Copy)]
enum Piece<'a> {
    Json(Json<'a>),
    Raw(&'a str),
}

/// Pieces of answer text remembered per message for the probe tail (more are counted, not fed).
const MAX_PIECES: usize = 4;

/// Answer and reasoning chars found in one message, turned into a `Content` at the end.
#[derive(Default)]
struct Tally<'a> {
    text: u32,
    reasoning: u32,
    pieces: [Option<Piece<'a>>; MAX_PIECES],
}

impl<'a> Tally<'a> {
    /// Answer text from a JSON string value (absent / non-string: nothing).
    fn text(&mut self, v: Option<Json<'a>>) {
        let n = chars(v);
        if let (Some(v), true) = (v, n > 0) {
            self.text += n;
            self.keep(Piece::Json(v));
        }
    }
    /// Answer text that is the raw data itself.
    fn raw(&mut self, s: &'a str) {
        self.text += count_chars(s);
        self.keep(Piece::Raw(s));
    }
    fn keep(&mut self, p: Piece<'a>) {
        if let Some(slot) = self.pieces.iter_mut().find(|x| x.is_none()) {
            *slot = Some(p);
        }
    }
    fn into_content(self, c: &mut Content, tail: &mut Option<TextTail>) {
        if self.text > 0 {
            c.content_events = 1;
            c.content_chars = self.text;
            if let Some(tail) = tail {
                for p in self.pieces.into_iter().flatten() {
                    match p {
                        Piece::Json(v) => v.chars().for_each(|ch| tail.push(ch)),
                        Piece::Raw(s) => s.chars().for_each(|ch| tail.push(ch)),
                    }
                }
            }
        }
        if self.reasoning > 0 {
            c.reasoning_events = 1;
            c.reasoning_chars = self.reasoning;
        }
    }
}

/// The root members every rule looks at, read in one pass over the event's object.
#[derive(Clone, Copy)]
struct Root<'a> {
    choices: Option<Json<'a>>,
    object: Option<Json<'a>>,
    error: Option<Json<'a>>,
    usage: Option<Json<'a>>,
    delta: Option<Json<'a>>,
    text_delta: Option<Json<'a>>,
    response: Option<Json<'a>>,
    model: Option<Json<'a>>,
    message: Option<Json<'a>>,
}

const ROOT_KEYS: [&str; 10] = ["type", "choices", "object", "error", "usage", "delta", "textDelta", "response", "model", "message"];

impl<'a> Root<'a> {
    fn from(f: [Option<Json<'a>>; 10]) -> (Root<'a>, Option<&'a str>) {
        let [ty, choices, object, error, usage, delta, text_delta, response, model, message] = f;
        (Root { choices, object, error, usage, delta, text_delta, response, model, message }, ty.and_then(Json::str_raw))
    }
    /// (members, the JSON `type`) of an already parsed value.
    fn read(root: Json<'a>) -> (Root<'a>, Option<&'a str>) {
        Root::from(root.fields(ROOT_KEYS))
    }
    /// Parses and reads an event's data in one pass; `None` when it is not a JSON object.
    fn parse(data: &'a str) -> Option<(Root<'a>, Option<&'a str>)> {
        json_read::parse_fields(data, ROOT_KEYS).map(Root::from)
    }
}

fn detect(r: &Root<'_>, ty: &str) -> Option<Format> {
    if r.choices.is_some() || r.object.is_some_and(|o| o.str_eq("chat.completion.chunk")) {
        return Some(Format::OpenAiChat);
    }
    if ty.starts_with("response.") {
        return Some(Format::OpenAiResponses);
    }
    match ty {
        "message_start"
        | "content_block_start"
        | "content_block_delta"
        | "content_block_stop"
        | "message_delta"
        | "message_stop"
        | "ping" => Some(Format::Anthropic),
        "start" | "start-step" | "text-start" | "text-delta" | "text-end" | "finish-step" | "finish"
        | "reasoning-start" | "reasoning-delta" | "reasoning-end" => Some(Format::AiSdkUi),
        _ => None,
    }
}

fn is_error(r: &Root<'_>, ty: &str) -> bool {
    ty == "error" || r.error.is_some_and(|e| !e.is_null())
}

/// `choices[*]` by the Chat Completions rules; also used for OpenAI-shaped NDJSON.
fn openai_chat<'a>(r: &Root<'a>, t: &mut Tally<'a>, c: &mut Content) {
    let mut choices = r.choices.unwrap_or_default().items();
    while let Some([delta, message, finish]) = choices.next_fields(["delta", "message", "finish_reason"]) {
        if let Some(d) = delta.or(message) {
            let [content, reasoning_content, reasoning] = d.fields(["content", "reasoning_content", "reasoning"]);
            t.text(content);
            t.reasoning += chars(reasoning_content) + chars(reasoning);
        }
        if finish.is_some_and(|f| f.str_raw().is_some()) {
            c.done = true;
        }
    }
    if let Some(n) = r.usage.and_then(|u| u.get("completion_tokens")).and_then(Json::as_u32) {
        c.usage_output_tokens = Some(n);
    }
}

impl Classifier {
    pub fn new(initial: Format) -> Self {
        Classifier { format: initial, tail: None, model: None }
    }

    /// The model the stream named (see the module's rules), once it has.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// Keeps `v` as the model when it is the first non-empty one (a string; bounded).
    fn note_model(&mut self, v: Option<Json<'_>>) {
        if self.model.is_none() {
            self.model = v.and_then(|v| name(v.chars()));
        }
    }

    /// One SSE message. Detects the format from the first JSON events when still unknown.
    pub fn sse_event(&mut self, event_type: &str, data: &str) -> Content {
        let mut c = Content { events: 1, ..Content::default() };
        if data.trim_ascii() == "[DONE]" {
            c.done = true;
            return c;
        }
        let mut t = Tally::default();
        // Events are JSON objects in every typed format; anything else (text, arrays, broken
        // JSON) is answer text only while nothing better is known.
        match Root::parse(data) {
            None => {
                if self.format == Format::Unknown {
                    t.raw(data);
                }
            }
            Some((r, json_ty)) => {
                // The JSON `type` names the event in every typed format; the SSE `event`
                // field is the fallback (EventSource users may only have that).
                let ty = json_ty.unwrap_or(if event_type == "message" { "" } else { event_type });
                if self.format == Format::Unknown {
                    if let Some(f) = detect(&r, ty) {
                        self.format = f;
                    }
                }
                if is_error(&r, ty) {
                    c.error_event = true;
                    return c;
                }
                match self.format {
                    Format::OpenAiChat => {
                        self.note_model(r.model);
                        openai_chat(&r, &mut t, &mut c)
                    }
                    Format::OpenAiResponses => match ty {
                        "response.output_text.delta" | "response.refusal.delta" => t.text(r.delta),
                        "response.reasoning_text.delta" | "response.reasoning_summary_text.delta" => {
                            t.reasoning = chars(r.delta)
                        }
                        "response.completed" | "response.incomplete" => {
                            // (An EventSource app may listen to this one only.)
                            self.note_model(r.response.and_then(|v| v.get("model")));
                            c.done = true;
                            c.usage_output_tokens =
                                r.response.and_then(|v| v.path(&["usage", "output_tokens"])).and_then(Json::as_u32);
                        }
                        "response.failed" => c.error_event = true,
                        // `response.created` opens every Responses stream with the response
                        // object (its `model` included); `in_progress` repeats it.
                        _ => self.note_model(r.response.and_then(|v| v.get("model"))),
                    },
                    Format::Anthropic => match ty {
                        "content_block_delta" => {
                            let d = r.delta;
                            match d.and_then(|d| d.get("type")).and_then(Json::str_raw) {
                                Some("text_delta") => t.text(d.and_then(|d| d.get("text"))),
                                Some("thinking_delta") => t.reasoning = chars(d.and_then(|d| d.get("thinking"))),
                                _ => {}
                            }
                        }
                        "message_delta" => {
                            c.usage_output_tokens = r.usage.and_then(|u| u.get("output_tokens")).and_then(Json::as_u32)
                        }
                        "message_stop" => c.done = true,
                        "message_start" => self.note_model(r.message.and_then(|m| m.get("model"))),
                        _ => {}
                    },
                    Format::AiSdkUi => {
                        let delta = r.delta.or(r.text_delta);
                        match ty {
                            "text-delta" => t.text(delta),
                            "reasoning-delta" => t.reasoning = chars(delta),
                            "finish" => c.done = true,
                            _ => {}
                        }
                    }
                    Format::Ndjson => return self.ndjson_line(data),
                    Format::Text | Format::Unknown => t.raw(data),
                }
            }
        }
        t.into_content(&mut c, &mut self.tail);
        c
    }

    /// One NDJSON line (without the line terminator). Blank lines are not events; a JSON
    /// text sequence record separator (RFC 7464, U+001E) is ignored.
    pub fn ndjson_line(&mut self, line: &str) -> Content {
        let line = line.trim_ascii();
        let line = line.strip_prefix('\u{1e}').unwrap_or(line).trim_ascii();
        if line.is_empty() {
            return Content::default();
        }
        let mut c = Content { events: 1, ..Content::default() };
        let mut t = Tally::default();
        let root = json_read::parse(line);
        let (r, ty) = match root {
            Some(root) => Root::read(root),
            None => Root::read(Json::default()),
        };
        if root.is_some() {
            self.note_model(r.model);
        }
        match root {
            Some(_) if is_error(&r, ty.unwrap_or("")) => {
                c.error_event = true;
            }
            Some(_) if r.choices.is_some() => openai_chat(&r, &mut t, &mut c),
            Some(root) if ["message", "response", "thinking", "done"].iter().any(|k| root.get(k).is_some()) => {
                let msg = r.message;
                t.text(msg.and_then(|m| m.get("content")));
                t.text(root.get("response"));
                t.reasoning = chars(msg.and_then(|m| m.get("thinking"))) + chars(root.get("thinking"));
                c.done = root.get("done").and_then(Json::as_bool) == Some(true);
                c.usage_output_tokens = root.get("eval_count").and_then(Json::as_u32);
            }
            _ => t.raw(line),
        }
        t.into_content(&mut c, &mut self.tail);
        c
    }

    /// One line of the AI SDK (v3/v4) data stream protocol, `TYPE:JSON` (text/plain bodies
    /// with the `x-vercel-ai-data-stream` header): `0` text, `g` reasoning, `3` error,
    /// `d` finish message (`usage.completionTokens`). Other parts are events only.
    pub fn data_stream_line(&mut self, line: &str) -> Content {
        let Some(colon) = line.bytes().position(|b| b == b':') else {
            return Content::default();
        };
        let (code, json) = (line.get(..colon).unwrap_or(""), line.get(colon + 1..).unwrap_or(""));
        let mut c = Content { events: 1, ..Content::default() };
        let mut t = Tally::default();
        let v = json_read::parse(json);
        match code {
            "0" => t.text(v),
            "g" => t.reasoning = chars(v),
            "3" => c.error_event = true,
            "d" => {
                c.done = true;
                c.usage_output_tokens = v.and_then(|v| v.path(&["usage", "completionTokens"])).and_then(Json::as_u32);
            }
            _ => {}
        }
        t.into_content(&mut c, &mut self.tail);
        c
    }

    pub fn format(&self) -> Format {
        self.format
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(f: Format, events: &[(&str, &str)]) -> (Content, Format) {
        let mut cl = Classifier::new(f);
        let mut total = Content::default();
        for (t, d) in events {
            total.merge(&cl.sse_event(t, d));
        }
        (total, cl.format())
    }

    #[test]
    fn openai_chat_rules() {
        let evs = [
            (
                "message",
                r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":null,"refusal":null},"finish_reason":null}]}"#,
            ),
            (
                "message",
                r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":""},"finish_reason":null}]}"#,
            ),
            (
                "message",
                r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi \u00e9"},"finish_reason":null}]}"#,
            ),
            (
                "message",
                r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\""}}]},"finish_reason":null}]}"#,
            ),
            (
                "message",
                r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"reasoning_content":"hmm"},"finish_reason":null}]}"#,
            ),
            (
                "message",
                r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
            ),
            (
                "message",
                r#"{"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21}}"#,
            ),
            ("message", "[DONE]"),
        ];
        let (c, f) = totals(Format::Unknown, &evs);
        assert_eq!(f, Format::OpenAiChat);
        assert_eq!((c.events, c.content_events, c.content_chars), (8, 1, 4));
        assert_eq!((c.reasoning_events, c.reasoning_chars), (1, 3));
        assert_eq!(c.usage_output_tokens, Some(12));
        assert!(c.done && !c.error_event);
        // finish_reason alone is done; a null one is not.
        let mut cl = Classifier::new(Format::Unknown);
        assert!(!cl.sse_event("message", evs[2].1).done);
        assert!(cl.sse_event("message", evs[5].1).done);
        // Mid-stream error object.
        assert!(cl.sse_event("message", r#"{"error":{"message":"overloaded","type":"server_error"}}"#).error_event);
    }

    #[test]
    fn unknown_fallback_and_non_json() {
        let (c, f) = totals(Format::Unknown, &[("message", "hello wörld"), ("update", r#"{"foo":"bar"}"#)]);
        assert_eq!(f, Format::Unknown);
        assert_eq!((c.events, c.content_events, c.content_chars), (2, 2, 11 + 13));
        // Once a format is known, non-JSON data is not answer text.
        let (c, _) = totals(Format::Unknown, &[("message", r#"{"type":"ping"}"#), ("message", "keepalive")]);
        assert_eq!(c.content_events, 0);
    }

    #[test]
    fn ndjson_ollama_and_others() {
        let mut cl = Classifier::new(Format::Ndjson);
        let lines = [
            r#"{"model":"llama3","created_at":"t","message":{"role":"assistant","content":"","thinking":"Let me"},"done":false}"#,
            r#"{"model":"llama3","created_at":"t","message":{"role":"assistant","content":"Hello"},"done":false}"#,
            r#"{"model":"llama3","created_at":"t","response":" there","done":false}"#,
            "",
            "   ",
            r#"{"model":"llama3","created_at":"t","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","eval_count":17}"#,
            r#"{"choices":[{"delta":{"content":"ab"}}]}"#,
            r#"{"token":"x"}"#,
            "not json",
            "\u{1e}{\"response\":\"rs\",\"done\":false}",
            r#"{"error":"model not found"}"#,
        ];
        let mut c = Content::default();
        for l in lines {
            c.merge(&cl.ndjson_line(l));
        }
        assert_eq!(cl.format(), Format::Ndjson);
        assert_eq!(c.events, 9);
        assert_eq!((c.content_events, c.content_chars), (6, 5 + 6 + 2 + 13 + 8 + 2));
        assert_eq!((c.reasoning_events, c.reasoning_chars), (1, 6));
        assert_eq!(c.usage_output_tokens, Some(17));
        assert!(c.done && c.error_event);
    }

    #[test]
    fn data_stream_protocol() {
        let mut cl = Classifier::new(Format::AiSdkUi);
        let mut c = Content::default();
        for l in [
            r#"f:{"messageId":"m1"}"#,
            r#"g:"think""#,
            r#"0:"Hello""#,
            r#"0:", w\u00f6rld""#,
            r#"0:"""#,
            r#"e:{"finishReason":"stop","usage":{"promptTokens":3,"completionTokens":4}}"#,
            r#"d:{"finishReason":"stop","usage":{"promptTokens":3,"completionTokens":4}}"#,
            "garbage",
        ] {
            c.merge(&cl.data_stream_line(l));
        }
        assert_eq!((c.events, c.content_events, c.content_chars), (7, 2, 12));
        assert_eq!((c.reasoning_events, c.reasoning_chars), (1, 5));
        assert_eq!(c.usage_output_tokens, Some(4));
        assert!(c.done);
        assert!(cl.data_stream_line(r#"3:"boom""#).error_event);
    }

    #[test]
    fn garbage_never_panics() {
        let mut x: u64 = 0xDEADBEEF;
        let pieces = [
            "{",
            "}",
            "[",
            "]",
            "\"type\"",
            ":",
            "\"content_block_delta\"",
            "\"delta\"",
            ",",
            "\"text\"",
            "\"choices\"",
            "null",
            "1",
            "\\u",
            "\"",
            "é",
            "[DONE]",
        ];
        for f in [Format::Unknown, Format::OpenAiChat, Format::Anthropic, Format::AiSdkUi, Format::Ndjson] {
            let mut cl = Classifier::new(f);
            for _ in 0..3000 {
                let mut s = String::new();
                for _ in 0..(x % 12) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    s.push_str(pieces[(x % pieces.len() as u64) as usize]);
                }
                cl.sse_event("message", &s);
                cl.ndjson_line(&s);
                cl.data_stream_line(&s);
            }
        }
    }
}
