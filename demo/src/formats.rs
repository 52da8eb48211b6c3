//! Event shaping per provider wire format.
//!
//! Owner of: the bytes of each write. Given "here is the next content text", produce the bytes
//! a real provider would send, so that the SDK's content extraction is tested against the real
//! shapes (OpenAI Chat Completions and Responses, Anthropic Messages, Vercel AI SDK v5 UI message
//! stream, Ollama-like NDJSON, raw text). Timing is not decided here (see generate.rs).
//!
//! Each produced [`Event`] is one write to the socket and carries a [`Kind`] for the ground-truth
//! record. Several protocol events may share one write (e.g. Anthropic's `message_start` and
//! `content_block_start`) because real servers emit them back to back; the kind names the write's
//! role in the answer, not the protocol event name:
//! - `role`: framing before any content (OpenAI's role-only chunk, `response.created`, ...)
//! - `content`: carries answer text (`tokens` says how many content tokens)
//! - `finish`: framing after the content (finish_reason chunk, `content_block_stop`, ...)
//! - `usage`: the event carrying the token usage
//! - `done`: the stream terminator (`data: [DONE]`, `message_stop`)
//! - `ping`: keep-alives (SSE comments, Anthropic's `ping` event)
//! - `error`: an in-band error event (`error_at`), as each provider sends one mid-answer

use serde_json::{json, Value};
use std::time::{SystemTime, UNIX_EPOCH};

/// The wire formats, named as in DESIGN.md §1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    OpenAiChat,
    OpenAiResponses,
    Anthropic,
    AiSdkUi,
    Ndjson,
    Text,
}

impl Format {
    pub fn parse(s: &str) -> Option<Format> {
        Some(match s {
            "openai-chat" | "openai" => Format::OpenAiChat,
            "openai-responses" | "responses" => Format::OpenAiResponses,
            "anthropic" => Format::Anthropic,
            "ai-sdk-ui" | "ai-sdk" => Format::AiSdkUi,
            "ndjson" | "ollama" => Format::Ndjson,
            "text" => Format::Text,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::OpenAiChat => "openai-chat",
            Format::OpenAiResponses => "openai-responses",
            Format::Anthropic => "anthropic",
            Format::AiSdkUi => "ai-sdk-ui",
            Format::Ndjson => "ndjson",
            Format::Text => "text",
        }
    }

    /// Whether the stream names its model (Chat Completions chunks, Responses' response
    /// object, Anthropic's `message_start`, Ollama's NDJSON lines); AI SDK UI and text do not.
    pub fn names_model(self) -> bool {
        !matches!(self, Format::AiSdkUi | Format::Text)
    }

    /// Whether the format is Server-Sent Events (pings and `id:` lines apply only to those).
    pub fn is_sse(self) -> bool {
        !matches!(self, Format::Ndjson | Format::Text)
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::Ndjson => "application/x-ndjson",
            Format::Text => "text/plain; charset=utf-8",
            _ => "text/event-stream; charset=utf-8",
        }
    }

    /// Extra response headers the real provider sends and clients key on.
    pub fn extra_headers(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Format::AiSdkUi => &[("x-vercel-ai-ui-message-stream", "v1")],
            _ => &[],
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Role,
    Content,
    Finish,
    Usage,
    Done,
    Ping,
    /// An in-band error event (the provider failed mid-answer).
    Error,
    /// A whole non-streamed body (chat.completion JSON, /plain, error bodies).
    Body,
    /// A chunk of /bytes.
    Bytes,
}

/// One write.
#[derive(Clone, Debug)]
pub struct Event {
    pub kind: Kind,
    /// Content tokens carried by this write (0 for framing).
    pub tokens: u64,
    pub bytes: Vec<u8>,
}

impl Event {
    fn new(kind: Kind, tokens: u64, s: String) -> Event {
        Event {
            kind,
            tokens,
            bytes: s.into_bytes(),
        }
    }
}

/// Per-stream state of the shaping: ids, sequence numbers and (for formats whose epilogue
/// repeats it) the text so far.
pub struct Shaper {
    pub format: Format,
    id: String,
    model: String,
    created: u64,
    include_usage: bool,
    ids: bool,
    prompt_tokens: u64,
    next_event_id: u64,
    seq: u64,
    /// Text so far: only kept for OpenAI Responses, whose `*.done` events repeat it.
    text: String,
    start: std::time::Instant,
}

impl Shaper {
    /// `rid` is the server's request id (used to derive provider-looking ids), `ids` adds SSE
    /// `id:` lines, `include_usage` adds OpenAI's usage chunk.
    pub fn new(
        format: Format,
        rid: &str,
        model: &str,
        include_usage: bool,
        ids: bool,
        prompt_tokens: u64,
    ) -> Shaper {
        let created = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let id = match format {
            Format::OpenAiChat | Format::Ndjson | Format::Text => format!("chatcmpl-{rid}"),
            Format::OpenAiResponses => format!("resp_{rid}"),
            Format::Anthropic => format!("msg_{rid}"),
            Format::AiSdkUi => format!("msg-{rid}"),
        };
        Shaper {
            format,
            id,
            model: model.to_string(),
            created,
            include_usage,
            ids,
            prompt_tokens,
            next_event_id: 0,
            seq: 0,
            text: String::new(),
            start: std::time::Instant::now(),
        }
    }

    /// Frames one SSE event (optional `event:` and `id:` lines, one `data:` line).
    fn sse(&mut self, event: Option<&str>, data: &str) -> String {
        let mut s = String::new();
        if let Some(e) = event {
            s.push_str("event: ");
            s.push_str(e);
            s.push('\n');
        }
        if self.ids {
            s.push_str(&format!("id: {}\n", self.next_event_id));
            self.next_event_id += 1;
        }
        s.push_str("data: ");
        s.push_str(data);
        s.push_str("\n\n");
        s
    }

    fn chat_chunk(&self, delta: Value, finish: Value) -> Value {
        let mut v = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": "fp_llmrum_demo",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        });
        // OpenAI adds `"usage": null` to every chunk when include_usage is on.
        if self.include_usage {
            v["usage"] = Value::Null;
        }
        v
    }

    /// Responses API event with its sequence number.
    fn resp_event(&mut self, ty: &str, mut body: Value) -> String {
        let mut v = json!({"type": ty, "sequence_number": self.seq});
        self.seq += 1;
        if let (Some(dst), Some(src)) = (v.as_object_mut(), body.as_object_mut()) {
            dst.append(src);
        }
        self.sse(Some(ty), &v.to_string())
    }

    fn resp_item(&self, status: &str, text: Option<&str>) -> Value {
        let content = match text {
            Some(t) => json!([{"type": "output_text", "text": t, "annotations": []}]),
            None => json!([]),
        };
        json!({"id": format!("msg_{}", self.id), "type": "message", "status": status, "role": "assistant", "content": content})
    }

    fn resp_object(&self, status: &str, output: Value, usage: Value) -> Value {
        json!({
            "id": self.id, "object": "response", "created_at": self.created, "status": status,
            "model": self.model, "output": output, "usage": usage,
        })
    }

    fn resp_usage(&self, completion: u64) -> Value {
        json!({"input_tokens": self.prompt_tokens, "output_tokens": completion, "total_tokens": self.prompt_tokens + completion})
    }

    fn chat_usage(&self, completion: u64) -> Value {
        json!({"prompt_tokens": self.prompt_tokens, "completion_tokens": completion, "total_tokens": self.prompt_tokens + completion})
    }

    /// Writes before the first content (sent when the generation starts, or with the headers
    /// when those are late).
    pub fn preamble(&mut self) -> Vec<Event> {
        match self.format {
            Format::OpenAiChat => {
                let c = self.chat_chunk(
                    json!({"role": "assistant", "content": "", "refusal": null}),
                    Value::Null,
                );
                vec![Event::new(Kind::Role, 0, self.sse(None, &c.to_string()))]
            }
            Format::OpenAiResponses => {
                let created = self.resp_object("in_progress", json!([]), Value::Null);
                let mut s =
                    self.resp_event("response.created", json!({"response": created.clone()}));
                s += &self.resp_event("response.in_progress", json!({"response": created}));
                let item = self.resp_item("in_progress", None);
                s += &self.resp_event(
                    "response.output_item.added",
                    json!({"output_index": 0, "item": item}),
                );
                let item_id = format!("msg_{}", self.id);
                s += &self.resp_event(
                    "response.content_part.added",
                    json!({"item_id": item_id, "output_index": 0, "content_index": 0,
                           "part": {"type": "output_text", "text": "", "annotations": []}}),
                );
                vec![Event::new(Kind::Role, 0, s)]
            }
            Format::Anthropic => {
                let start = json!({"type": "message_start", "message": {
                    "id": self.id, "type": "message", "role": "assistant", "model": self.model, "content": [],
                    "stop_reason": null, "stop_sequence": null,
                    "usage": {"input_tokens": self.prompt_tokens, "output_tokens": 1}}});
                let mut s = self.sse(Some("message_start"), &start.to_string());
                let block = json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}});
                s += &self.sse(Some("content_block_start"), &block.to_string());
                // Anthropic sends a ping right after the block opens.
                let ping = self.sse(Some("ping"), &json!({"type": "ping"}).to_string());
                vec![
                    Event::new(Kind::Role, 0, s),
                    Event::new(Kind::Ping, 0, ping),
                ]
            }
            Format::AiSdkUi => {
                let mut s = self.sse(
                    None,
                    &json!({"type": "start", "messageId": self.id}).to_string(),
                );
                s += &self.sse(None, &json!({"type": "start-step"}).to_string());
                s += &self.sse(
                    None,
                    &json!({"type": "text-start", "id": "txt-0"}).to_string(),
                );
                vec![Event::new(Kind::Role, 0, s)]
            }
            Format::Ndjson | Format::Text => vec![],
        }
    }

    /// One content write carrying `text` made of `tokens` tokens.
    pub fn content(&mut self, text: &str, tokens: u64) -> Event {
        let s = match self.format {
            Format::OpenAiChat => {
                let c = self.chat_chunk(json!({"content": text}), Value::Null);
                self.sse(None, &c.to_string())
            }
            Format::OpenAiResponses => {
                self.text.push_str(text);
                let item_id = format!("msg_{}", self.id);
                self.resp_event(
                    "response.output_text.delta",
                    json!({"item_id": item_id, "output_index": 0, "content_index": 0, "delta": text, "logprobs": []}),
                )
            }
            Format::Anthropic => {
                let d = json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}});
                self.sse(Some("content_block_delta"), &d.to_string())
            }
            Format::AiSdkUi => self.sse(
                None,
                &json!({"type": "text-delta", "id": "txt-0", "delta": text}).to_string(),
            ),
            Format::Ndjson => {
                let mut line = json!({"model": self.model, "created_at": rfc3339_now(),
                    "message": {"role": "assistant", "content": text}, "done": false})
                .to_string();
                line.push('\n');
                line
            }
            Format::Text => text.to_string(),
        };
        Event::new(Kind::Content, tokens, s)
    }

    /// Writes after the last content: finish framing, usage, terminator.
    pub fn epilogue(&mut self, completion_tokens: u64) -> Vec<Event> {
        match self.format {
            Format::OpenAiChat => {
                let mut out = Vec::new();
                let c = self.chat_chunk(json!({}), json!("stop"));
                out.push(Event::new(Kind::Finish, 0, self.sse(None, &c.to_string())));
                if self.include_usage {
                    let u = json!({
                        "id": self.id, "object": "chat.completion.chunk", "created": self.created,
                        "model": self.model, "system_fingerprint": "fp_llmrum_demo",
                        "choices": [], "usage": self.chat_usage(completion_tokens)});
                    out.push(Event::new(Kind::Usage, 0, self.sse(None, &u.to_string())));
                }
                out.push(Event::new(Kind::Done, 0, self.sse(None, "[DONE]")));
                out
            }
            Format::OpenAiResponses => {
                let text = std::mem::take(&mut self.text);
                let item_id = format!("msg_{}", self.id);
                let mut s = self.resp_event(
                    "response.output_text.done",
                    json!({"item_id": item_id, "output_index": 0, "content_index": 0, "text": text, "logprobs": []}),
                );
                s += &self.resp_event(
                    "response.content_part.done",
                    json!({"item_id": item_id, "output_index": 0, "content_index": 0,
                           "part": {"type": "output_text", "text": text, "annotations": []}}),
                );
                let item = self.resp_item("completed", Some(&text));
                s += &self.resp_event(
                    "response.output_item.done",
                    json!({"output_index": 0, "item": item.clone()}),
                );
                let resp = self.resp_object(
                    "completed",
                    json!([item]),
                    self.resp_usage(completion_tokens),
                );
                let done = self.resp_event("response.completed", json!({"response": resp}));
                vec![
                    Event::new(Kind::Finish, 0, s),
                    Event::new(Kind::Usage, 0, done),
                ]
            }
            Format::Anthropic => {
                let stop = self.sse(
                    Some("content_block_stop"),
                    &json!({"type": "content_block_stop", "index": 0}).to_string(),
                );
                let md = json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                                "usage": {"output_tokens": completion_tokens}});
                let md = self.sse(Some("message_delta"), &md.to_string());
                let ms = self.sse(
                    Some("message_stop"),
                    &json!({"type": "message_stop"}).to_string(),
                );
                vec![
                    Event::new(Kind::Finish, 0, stop),
                    Event::new(Kind::Usage, 0, md),
                    Event::new(Kind::Done, 0, ms),
                ]
            }
            Format::AiSdkUi => {
                let mut s = self.sse(
                    None,
                    &json!({"type": "text-end", "id": "txt-0"}).to_string(),
                );
                s += &self.sse(None, &json!({"type": "finish-step"}).to_string());
                s += &self.sse(None, &json!({"type": "finish"}).to_string());
                vec![
                    Event::new(Kind::Finish, 0, s),
                    Event::new(Kind::Done, 0, self.sse(None, "[DONE]")),
                ]
            }
            Format::Ndjson => {
                let ns = self.start.elapsed().as_nanos() as u64;
                let mut line = json!({"model": self.model, "created_at": rfc3339_now(),
                    "message": {"role": "assistant", "content": ""}, "done": true, "done_reason": "stop",
                    "total_duration": ns, "load_duration": 0, "prompt_eval_count": self.prompt_tokens,
                    "prompt_eval_duration": 0, "eval_count": completion_tokens, "eval_duration": ns})
                .to_string();
                line.push('\n');
                // The final line carries Ollama's token count (`eval_count`): it is the usage.
                vec![Event::new(Kind::Usage, 0, line)]
            }
            Format::Text => vec![],
        }
    }

    /// The format's in-band error event, as each provider sends it when generation fails
    /// mid-answer (an overload or a server error): OpenAI Chat `data: {"error": …}` (no event
    /// name), Responses `event: error` or (`failed`) `event: response.failed`, Anthropic
    /// `event: error`, AI SDK UI `{"type":"error","errorText"}`, Ollama NDJSON `{"error": …}`.
    /// Plain text has none (the scenario refuses `error_at` there).
    pub fn error(&mut self, failed: bool) -> Event {
        const MSG: &str = "The server had an error while processing your request.";
        let s = match self.format {
            Format::OpenAiChat => {
                let e = json!({"error": {"message": MSG, "type": "server_error", "param": null, "code": null}});
                self.sse(None, &e.to_string())
            }
            Format::OpenAiResponses if failed => {
                let mut resp = self.resp_object("failed", json!([]), Value::Null);
                resp["error"] = json!({"code": "server_error", "message": MSG});
                self.resp_event("response.failed", json!({"response": resp}))
            }
            Format::OpenAiResponses => self.resp_event(
                "error",
                json!({"code": "server_error", "message": MSG, "param": null}),
            ),
            Format::Anthropic => {
                let e = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
                self.sse(Some("error"), &e.to_string())
            }
            Format::AiSdkUi => self.sse(
                None,
                &json!({"type": "error", "errorText": MSG}).to_string(),
            ),
            Format::Ndjson | Format::Text => {
                let mut line = json!({"error": MSG}).to_string();
                line.push('\n');
                line
            }
        };
        Event::new(Kind::Error, 0, s)
    }

    /// A keep-alive write, for SSE formats only.
    pub fn ping(&self) -> Option<Event> {
        self.format
            .is_sse()
            .then(|| Event::new(Kind::Ping, 0, ": ping\n\n".to_string()))
    }

    /// A whole non-streamed answer: (content-type, body).
    pub fn non_stream(&self, text: &str, completion: u64) -> (&'static str, Vec<u8>) {
        let json_ct = "application/json";
        let v = match self.format {
            Format::OpenAiChat | Format::AiSdkUi => json!({
                "id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": null},
                             "logprobs": null, "finish_reason": "stop"}],
                "usage": self.chat_usage(completion), "system_fingerprint": "fp_llmrum_demo"}),
            Format::OpenAiResponses => self.resp_object(
                "completed",
                json!([self.resp_item("completed", Some(text))]),
                self.resp_usage(completion),
            ),
            Format::Anthropic => json!({
                "id": self.id, "type": "message", "role": "assistant", "model": self.model,
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": null,
                "usage": {"input_tokens": self.prompt_tokens, "output_tokens": completion}}),
            Format::Ndjson => json!({
                "model": self.model, "created_at": rfc3339_now(), "message": {"role": "assistant", "content": text},
                "done": true, "done_reason": "stop", "prompt_eval_count": self.prompt_tokens, "eval_count": completion}),
            Format::Text => return ("text/plain; charset=utf-8", text.as_bytes().to_vec()),
        };
        (json_ct, v.to_string().into_bytes())
    }
}

/// A provider-shaped JSON error body for `status=NNN`.
pub fn error_body(format: Format, status: u16) -> Vec<u8> {
    let (ty, code) = match status {
        400 => ("invalid_request_error", "invalid_request"),
        401 => ("authentication_error", "invalid_api_key"),
        403 => ("permission_error", "forbidden"),
        404 => ("not_found_error", "model_not_found"),
        429 => ("rate_limit_error", "rate_limit_exceeded"),
        529 => ("overloaded_error", "overloaded"),
        s if s >= 500 => ("server_error", "server_error"),
        _ => ("invalid_request_error", "scripted_error"),
    };
    let message = format!("scripted error: status {status}");
    let v = match format {
        Format::Anthropic => json!({"type": "error", "error": {"type": ty, "message": message}}),
        _ => json!({"error": {"message": message, "type": ty, "param": null, "code": code}}),
    };
    v.to_string().into_bytes()
}

/// Where to cut a write in two for `split=1`: inside the first multi-byte UTF-8 character of the
/// answer text when the write has one (right after its lead byte), else in the middle. `None`
/// when the write is too short to cut.
pub fn split_point(bytes: &[u8]) -> Option<usize> {
    if bytes.len() < 2 {
        return None;
    }
    match bytes.iter().position(|&b| b >= 0xC0) {
        Some(i) => Some(i + 1),
        None => Some(bytes.len() / 2),
    }
}

/// Current UTC time as RFC 3339 with nanoseconds (Ollama's `created_at`), without a date crate.
fn rfc3339_now() -> String {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let secs = d.as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:09}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_nanos()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(format: Format, usage: bool) -> Vec<Event> {
        let mut s = Shaper::new(format, "req-1", "fast", usage, false, 5);
        let mut out = s.preamble();
        out.push(s.content("Hello", 1));
        out.push(s.content(" wörld", 1));
        out.extend(s.epilogue(2));
        out
    }

    /// Parses the SSE events of all writes: (event name, data) pairs. Comments are skipped.
    fn sse_events(evs: &[Event]) -> Vec<(Option<String>, String)> {
        let all: Vec<u8> = evs.iter().flat_map(|e| e.bytes.clone()).collect();
        let text = String::from_utf8(all).unwrap();
        assert!(
            text.ends_with("\n\n"),
            "every SSE event ends with a blank line"
        );
        let mut out = Vec::new();
        for block in text.split("\n\n").filter(|b| !b.is_empty()) {
            let mut name = None;
            let mut data = None;
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event: ") {
                    name = Some(v.to_string());
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data = Some(v.to_string());
                }
            }
            if let Some(d) = data {
                out.push((name, d));
            }
        }
        out
    }

    fn kinds(evs: &[Event]) -> Vec<Kind> {
        evs.iter().map(|e| e.kind).collect()
    }

    #[test]
    fn openai_chat_shape() {
        let evs = run(Format::OpenAiChat, true);
        use Kind::*;
        assert_eq!(
            kinds(&evs),
            vec![Role, Content, Content, Finish, Usage, Done]
        );
        let ev = sse_events(&evs);
        assert_eq!(ev.last().unwrap().1, "[DONE]");
        let j: Vec<Value> = ev[..ev.len() - 1]
            .iter()
            .map(|(_, d)| serde_json::from_str(d).unwrap())
            .collect();
        assert!(j
            .iter()
            .all(|c| c["object"] == "chat.completion.chunk" && c["id"] == "chatcmpl-req-1"));
        assert_eq!(j[0]["choices"][0]["delta"]["role"], "assistant");
        assert_eq!(j[0]["choices"][0]["delta"]["content"], "");
        assert_eq!(j[2]["choices"][0]["delta"]["content"], " wörld");
        assert_eq!(j[3]["choices"][0]["finish_reason"], "stop");
        assert_eq!(j[3]["choices"][0]["delta"], json!({}));
        assert!(j[3]["usage"].is_null());
        assert_eq!(j[4]["choices"], json!([]));
        assert_eq!(j[4]["usage"]["completion_tokens"], 2);
        // Without include_usage: no usage chunk and no usage key.
        let evs = run(Format::OpenAiChat, false);
        assert_eq!(kinds(&evs), vec![Role, Content, Content, Finish, Done]);
        assert!(!String::from_utf8(evs[1].bytes.clone())
            .unwrap()
            .contains("usage"));
    }

    #[test]
    fn openai_responses_shape() {
        let evs = run(Format::OpenAiResponses, false);
        let ev = sse_events(&evs);
        let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_deref().unwrap()).collect();
        assert_eq!(
            names,
            vec![
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.completed",
            ]
        );
        for (i, (n, d)) in ev.iter().enumerate() {
            let v: Value = serde_json::from_str(d).unwrap();
            assert_eq!(v["type"], n.as_deref().unwrap());
            assert_eq!(v["sequence_number"], i);
        }
        let v: Value = serde_json::from_str(&ev[5].1).unwrap();
        assert_eq!(v["delta"], " wörld");
        let v: Value = serde_json::from_str(&ev[6].1).unwrap();
        assert_eq!(v["text"], "Hello wörld");
        let v: Value = serde_json::from_str(&ev[9].1).unwrap();
        assert_eq!(v["response"]["usage"]["output_tokens"], 2);
        assert_eq!(v["response"]["status"], "completed");
    }

    #[test]
    fn anthropic_shape() {
        let evs = run(Format::Anthropic, false);
        use Kind::*;
        assert_eq!(
            kinds(&evs),
            vec![Role, Ping, Content, Content, Finish, Usage, Done]
        );
        let ev = sse_events(&evs);
        let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_deref().unwrap()).collect();
        assert_eq!(
            names,
            vec![
                "message_start",
                "content_block_start",
                "ping",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        for (n, d) in &ev {
            let v: Value = serde_json::from_str(d).unwrap();
            assert_eq!(
                v["type"],
                n.as_deref().unwrap(),
                "data.type matches the event name"
            );
        }
        let v: Value = serde_json::from_str(&ev[3].1).unwrap();
        assert_eq!(v["delta"], json!({"type": "text_delta", "text": "Hello"}));
        let v: Value = serde_json::from_str(&ev[6].1).unwrap();
        assert_eq!(v["usage"]["output_tokens"], 2);
        assert_eq!(v["delta"]["stop_reason"], "end_turn");
    }

    #[test]
    fn ai_sdk_ui_shape() {
        assert_eq!(
            Format::AiSdkUi.extra_headers(),
            &[("x-vercel-ai-ui-message-stream", "v1")]
        );
        let ev = sse_events(&run(Format::AiSdkUi, false));
        assert_eq!(ev.last().unwrap().1, "[DONE]");
        let types: Vec<String> = ev[..ev.len() - 1]
            .iter()
            .map(|(_, d)| {
                serde_json::from_str::<Value>(d).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(
            types,
            [
                "start",
                "start-step",
                "text-start",
                "text-delta",
                "text-delta",
                "text-end",
                "finish-step",
                "finish"
            ]
        );
        let v: Value = serde_json::from_str(&ev[4].1).unwrap();
        assert_eq!(
            v,
            json!({"type": "text-delta", "id": "txt-0", "delta": " wörld"})
        );
    }

    #[test]
    fn ndjson_and_text_shape() {
        let evs = run(Format::Ndjson, false);
        assert_eq!(kinds(&evs), vec![Kind::Content, Kind::Content, Kind::Usage]);
        let lines: Vec<Value> = evs
            .iter()
            .map(|e| {
                let s = std::str::from_utf8(&e.bytes).unwrap();
                assert!(s.ends_with('\n') && s.matches('\n').count() == 1);
                serde_json::from_str(s).unwrap()
            })
            .collect();
        assert_eq!(lines[0]["message"]["content"], "Hello");
        assert_eq!(lines[0]["done"], false);
        assert_eq!(lines[2]["done"], true);
        assert_eq!(lines[2]["eval_count"], 2);
        let ts = lines[0]["created_at"].as_str().unwrap();
        assert_eq!(ts.len(), "2024-01-01T00:00:00.000000000Z".len(), "{ts}");
        let evs = run(Format::Text, false);
        let all: Vec<u8> = evs.iter().flat_map(|e| e.bytes.clone()).collect();
        assert_eq!(all, "Hello wörld".as_bytes());
        assert_eq!(Format::Text.content_type(), "text/plain; charset=utf-8");
        assert_eq!(Format::Ndjson.content_type(), "application/x-ndjson");
    }

    #[test]
    fn ids_and_pings() {
        let mut s = Shaper::new(Format::OpenAiChat, "r", "m", false, true, 0);
        let a = String::from_utf8(s.preamble()[0].bytes.clone()).unwrap();
        let b = String::from_utf8(s.content("x", 1).bytes).unwrap();
        assert!(a.starts_with("id: 0\ndata: "));
        assert!(b.starts_with("id: 1\ndata: "));
        assert_eq!(s.ping().unwrap().bytes, b": ping\n\n");
        assert!(Shaper::new(Format::Ndjson, "r", "m", false, false, 0)
            .ping()
            .is_none());
    }

    #[test]
    fn split_cuts_inside_a_multibyte_char() {
        let b = "data: {\"c\":\"caf\u{e9}\"}\n\n".as_bytes();
        let i = split_point(b).unwrap();
        assert!(std::str::from_utf8(&b[..i]).is_err(), "cut falls inside é");
        assert_eq!(b[i - 1], 0xC3);
        assert_eq!(split_point(b"abcd"), Some(2));
        assert_eq!(split_point(b"a"), None);
    }

    #[test]
    fn non_stream_and_errors_are_json() {
        let s = Shaper::new(Format::OpenAiChat, "r", "m", false, false, 3);
        let (ct, b) = s.non_stream("hi", 1);
        assert_eq!(ct, "application/json");
        let v: Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["object"], "chat.completion");
        assert_eq!(v["choices"][0]["message"]["content"], "hi");
        assert_eq!(v["usage"]["completion_tokens"], 1);
        let e: Value = serde_json::from_slice(&error_body(Format::OpenAiChat, 429)).unwrap();
        assert_eq!(e["error"]["type"], "rate_limit_error");
        let e: Value = serde_json::from_slice(&error_body(Format::Anthropic, 529)).unwrap();
        assert_eq!(e["error"]["type"], "overloaded_error");
    }
}
