//! Reads response headers into a timeline: the content type (which decoder), Server-Timing,
//! `traceresponse`, the configured correlation headers, and the upstream hints (their names
//! and closed-set values only: core/request/hints.rs decides what is kept).

use alloc::string::String;
use crate::core::request::hints::HINT_HEADERS;
use crate::core::stream::is_stream_content_type;
use crate::core::request::timeline::Timeline;
use web_sys::Headers;

fn get(headers: &Headers, name: &str) -> Option<String> {
    headers.get(name).ok().flatten()
}

/// Applies a response's headers to `tl`. Returns whether the response should be measured:
/// `measure_any` (the user's `match` selected this request) or a streaming content type.
pub fn apply_response_headers(
    tl: &mut Timeline,
    t: f64,
    status: u16,
    headers: &Headers,
    correlation: &[String],
    measure_any: bool,
) -> bool {
    let ct = get(headers, "content-type").unwrap_or_default();
    // The AI SDK's UI message stream is SSE, but its text/data streams are text/plain; the
    // header is what tells them apart from an ordinary text response.
    let ai_sdk = get(headers, "x-vercel-ai-ui-message-stream").is_some()
        || get(headers, "x-vercel-ai-data-stream").is_some();
    if !(measure_any || ai_sdk || is_stream_content_type(&ct)) {
        return false;
    }
    tl.on_headers(t, status, &ct, ai_sdk);
    // Cross-origin responses expose these only when the server lists them in
    // Access-Control-Expose-Headers (Fetch §3.2.3); absent is normal, not an error.
    if let Some(st) = get(headers, "server-timing") {
        tl.on_server_timing(&st);
    }
    if let Some(tr) = get(headers, "traceresponse") {
        tl.on_traceresponse(&tr);
    }
    for name in correlation {
        if let Some(v) = get(headers, name) {
            tl.on_correlation(name, &v);
        }
    }
    for name in HINT_HEADERS {
        if let Some(v) = get(headers, name) {
            tl.hints.note(name, &v);
        }
    }
    true
}
