//! Reads response headers into a timeline: the content type (which decoder), Server-Timing,
//! `traceresponse`, the configured correlation headers, and the upstream hints (their names
//! and closed-set values only: core/request/hints.rs decides what is kept).
//!
//! Pure (natively tested): the headers come as one text, `name:value` per line, written by the
//! glue (js/wasm/llm_rum.js) from the `Headers` iterator: names lower-cased, each name once with
//! its values combined by ", " (Fetch §"sort and combine"), only what CORS exposes — what
//! `Headers.get` would return for each name. One string crosses instead of one `get` call
//! (and one string back) per header the core looks for (issue 14: smaller wasm, no web-sys in the build).
//! A value never holds a newline (Fetch: header values have no CR/LF).

use alloc::string::String;
use crate::core::request::hints::HINT_HEADERS;
use crate::core::stream::is_stream_content_type;
use crate::core::request::timeline::Timeline;

/// The value of header `name` (lower case) in `headers`, as `Headers.get` returns it.
pub fn get<'a>(headers: &'a str, name: &str) -> Option<&'a str> {
    headers.split('\n').find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k == name).then_some(v)
    })
}

/// Applies a response's headers to `tl`. Returns whether the response should be measured:
/// `measure_any` (the user's `match` selected this request) or a streaming content type.
pub fn apply_response_headers(
    tl: &mut Timeline,
    t: f64,
    status: u16,
    headers: &str,
    correlation: &[String],
    measure_any: bool,
) -> bool {
    let ct = get(headers, "content-type").unwrap_or_default();
    // The AI SDK's UI message stream is SSE, but its text/data streams are text/plain; the
    // header is what tells them apart from an ordinary text response.
    let ai_sdk = get(headers, "x-vercel-ai-ui-message-stream").is_some()
        || get(headers, "x-vercel-ai-data-stream").is_some();
    if !(measure_any || ai_sdk || is_stream_content_type(ct)) {
        return false;
    }
    tl.on_headers(t, status, ct, ai_sdk);
    // Cross-origin responses expose these only when the server lists them in
    // Access-Control-Expose-Headers (Fetch §3.2.3); absent is normal, not an error.
    if let Some(st) = get(headers, "server-timing") {
        tl.on_server_timing(st);
    }
    if let Some(tr) = get(headers, "traceresponse") {
        tl.on_traceresponse(tr);
    }
    for name in correlation {
        if let Some(v) = get(headers, name) {
            tl.on_correlation(name, v);
        }
    }
    for name in HINT_HEADERS {
        if let Some(v) = get(headers, name) {
            tl.hints.note(name, v);
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::config::Config;
    use crate::core::request::kinds::TraceSource;
    use crate::core::request::timeline::Identity;
    use crate::core::trace::traceparent::TraceContext;

    /// As the glue writes them from a `Headers` object.
    const HEADERS: &str = "content-type:text/event-stream; charset=utf-8\nserver-timing:queue;dur=12.5, trace;desc=\"a:b\"\nx-request-id:req:42\nvia:1.1 proxy\n";

    #[test]
    fn get_reads_one_line_per_header_with_colons_in_values() {
        assert_eq!(get(HEADERS, "content-type"), Some("text/event-stream; charset=utf-8"));
        assert_eq!(get(HEADERS, "x-request-id"), Some("req:42"), "the first colon ends the name");
        assert_eq!(get(HEADERS, "server-timing"), Some("queue;dur=12.5, trace;desc=\"a:b\""));
        assert_eq!(get(HEADERS, "request-id"), None, "whole names only");
        assert_eq!(get(HEADERS, "via"), Some("1.1 proxy"));
        assert_eq!(get("", "via"), None);
        assert_eq!(get("empty:\n", "empty"), Some(""));
    }

    /// Runs `f` on a fresh request's timeline.
    fn with_timeline(f: impl FnOnce(&mut Timeline)) {
        let ident = Identity {
            id: String::new(),
            trace: TraceContext::from_random(&[1; 24], true),
            trace_source: TraceSource::None,
            url: "https://x.test/v1".into(),
            route: None,
            method: "POST".into(),
            start_epoch_ms: 0.0,
        };
        f(&mut Timeline::new(&Config::default(), ident, 0.0));
    }

    #[test]
    fn applies_stream_responses_and_skips_others() {
        with_timeline(|tl| {
            assert!(apply_response_headers(tl, 5.0, 200, HEADERS, &["x-request-id".into()], false));
            assert_eq!(tl.headers, Some(5.0));
            assert_eq!(tl.server_timing.len(), 2);
            assert_eq!(tl.correlation, [("x-request-id".into(), "req:42".into())]);
            assert_eq!(tl.hints.iter().collect::<alloc::vec::Vec<_>>(), ["via"]);
        });
        let json = "content-type:application/json\n";
        with_timeline(|tl| assert!(!apply_response_headers(tl, 5.0, 200, json, &[], false)));
        with_timeline(|tl| assert!(apply_response_headers(tl, 5.0, 200, json, &[], true), "matched by the app"));
        let ai_sdk = "content-type:text/plain\nx-vercel-ai-data-stream:v1\n";
        with_timeline(|tl| assert!(apply_response_headers(tl, 5.0, 200, ai_sdk, &[], false), "the AI SDK's text stream"));
    }
}
