//! Browser-layer tests in headless Chromium and Firefox (wasm-bindgen-test): the wasm surface
//! that ships — `Core`, the `#[wasm_bindgen]` class of src/wasm/core.rs, with the same exports
//! and the same allocator (talc) as the shipped build; only the panic handler differs (the
//! harness brings std's, the shipped `tiny` build traps: src/wasm/runtime.rs) — driven as the
//! facade drives it (response headers as js/capture/fetch.js writes them, one `name:value` line
//! each; records read as js/deliver/records.js reads them). The fetch wrapper's transparency
//! (bytes, aborts, cancellation) is proven end-to-end in tests/e2e with the real server.
#![cfg(target_arch = "wasm32")]

use js_sys::{Reflect, JSON};
use llm_rum::core::request::kinds::FORGET;
use llm_rum::wasm::Core;
use wasm_bindgen::JsValue;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn core() -> Core {
    // The configuration object js/core.js builds (the facade lower-cases correlation header
    // names before handing them over).
    Core::new(
        r#"{"pageOrigin":"http://127.0.0.1:8080",
            "propagate":["https://api.example.com","https://other.example.com/v1/"],
            "correlation":["x-request-id","openai-processing-ms"],
            "stallThresholdMs":250,"stripQuery":true,"sampled":true,
            "budgets":[["ttft",100],["itl.p95",1000]],"collect":false}"#,
    )
}

/// The beacon's `page`, which the facade's queue asks the core for: templated like a record's
/// `url`, the app's template first.
#[wasm_bindgen_test]
fn the_beacon_page_is_templated() {
    let mut c = core();
    assert_eq!(c.page("/c/3f6c1e2a-9b4d-4c8e-a1f0-7d2b5e9c4a61", ""), "/c/:id");
    assert_eq!(c.page("/c/3f6c1e2a-9b4d-4c8e-a1f0-7d2b5e9c4a61", "/c/:conversation"), "/c/:conversation");
}

/// Response headers as the glue hands them over: what a real `Headers` object iterates (names
/// lower-cased, sorted, each once), one `name:value` line each.
fn headers(pairs: &[(&str, &str)]) -> String {
    let h = web_sys::Headers::new().unwrap();
    for (k, v) in pairs {
        h.append(k, v).unwrap();
    }
    let mut out = String::new();
    for entry in js_sys::try_iter(&h).unwrap().unwrap() {
        let pair: js_sys::Array = entry.unwrap().into();
        out += &format!("{}:{}\n", pair.get(0).as_string().unwrap(), pair.get(1).as_string().unwrap());
    }
    out
}

fn get(v: &JsValue, path: &str) -> JsValue {
    let mut cur = v.clone();
    for k in path.split('.') {
        cur = Reflect::get(&cur, &JsValue::from_str(k)).unwrap();
    }
    cur
}

/// The finished records, as js/deliver/records.js reads `take_records`: a line per record, `F`
/// (final) or `S` (a snapshot), its 16-hex-digit id, its JSON. Checks the id is the record's.
fn records(c: &mut Core) -> JsValue {
    let text = c.take_records();
    assert!(!text.is_empty(), "a record was expected");
    let out = js_sys::Array::new();
    for line in text.lines() {
        let (kind, rest) = line.split_at(1);
        assert_eq!(kind, "F", "{line}");
        let (id, json) = rest.split_at(16);
        let rec = JSON::parse(json).expect("records are valid JSON");
        assert_eq!(get(&rec, "id").as_string().as_deref(), Some(id));
        out.push(&rec);
    }
    out.into()
}

const SSE: &str = "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n\
data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n\
data: {\"choices\":[{\"delta\":{\"content\":\"lo ✓\"}}]}\n\n\
data: {\"choices\":[],\"usage\":{\"completion_tokens\":2}}\n\ndata: [DONE]\n\n";

#[wasm_bindgen_test]
fn same_origin_request_gets_a_traceparent_and_a_full_record() {
    let mut c = core();
    let h = c.begin("http://127.0.0.1:8080/v1/chat/completions?q=secret", "post", 100.0, 1.7e12, &[7u8; 32], -1.0);
    c.set_route(h, "/v1/chat/:kind");
    let tp = c.traceparent(h);
    assert_eq!(tp.len(), 55, "{tp}");
    assert!(tp.starts_with("00-") && tp.ends_with("-01"));
    let hs = headers(&[
        ("content-type", "text/event-stream; charset=utf-8"),
        ("server-timing", "queue;dur=12.5, prefill;dur=80, trace;desc=\"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\""),
        ("x-request-id", "req-42"),
        ("openai-processing-ms", "93"),
    ]);
    assert!(c.response(h, 150.0, 200, &hs, false));
    let bytes = SSE.as_bytes();
    c.chunk(h, 210.0, &bytes[..70], 150.0);
    c.chunk(h, 240.0, &bytes[70..], 210.0);
    c.end(h, 241.0, 0);
    let recs = records(&mut c);
    let r = Reflect::get(&recs, &0.into()).unwrap();
    assert_eq!(get(&r, "url"), "http://127.0.0.1:8080/v1/chat/:kind", "query stripped, the app's route template applied");
    assert_eq!(get(&r, "method"), "POST");
    assert_eq!(get(&r, "outcome"), "ok");
    assert_eq!(get(&r, "format"), "openai-chat");
    assert_eq!(get(&r, "traceSource"), "propagated");
    assert_eq!(get(&r, "traceId").as_string().unwrap(), tp[3..35]);
    assert_eq!(get(&r, "spanId").as_string().unwrap(), tp[36..52]);
    assert_eq!(get(&r, "marks.headers"), 50.0);
    assert_eq!(get(&r, "ttft"), 140.0, "the chunk carrying the first non-empty delta");
    assert_eq!(get(&r, "outputTokens"), 2.0);
    assert_eq!(get(&r, "chars"), 7.0, "Hel + lo ✓ (✓ is one scalar value)");
    assert_eq!(get(&r, "correlation.x-request-id"), "req-42");
    assert_eq!(get(&r, "correlation.openai-processing-ms"), "93");
    assert_eq!(get(&r, "serverTiming.length"), 3.0);
    assert_eq!(get(&r, "serverTiming.1.dur"), 80.0);
    assert_eq!(get(&r, "ttftSplit.server"), 92.5);
    assert_eq!(get(&r, "ttftSplit.network"), 47.5);
    // Budgets from the constructor: ttft 140 > 100 breaches; itl.p95 has no gap to judge
    // (both content events came in one chunk) and does not.
    assert_eq!(get(&r, "budgetBreaches.length"), 1.0);
    assert_eq!(get(&r, "budgetBreaches.0.metric"), "ttft");
    assert_eq!(get(&r, "budgetBreaches.0.value"), 140.0);
    // Two content events, both in the second chunk: one arrival, too short to tell; no hint
    // headers on this response.
    assert_eq!(get(&r, "delivery.arrivals"), 1.0);
    assert_eq!(get(&r, "delivery.eventsPerArrival.max"), 2.0);
    assert_eq!(get(&r, "upstreamBuffered"), JsValue::NULL);
    assert_eq!(get(&r, "upstreamHints.length"), 0.0);
}

/// The upstream hints come from real `Headers` (names and closed-set values only), and the
/// app's own delay before a read (`asked`) is not counted as the network's silence.
#[wasm_bindgen_test]
fn upstream_hints_and_the_apps_own_delay() {
    let mut c = core();
    let mut run = |hs: &[(&str, &str)], asked: f64| {
        let h = c.begin("http://127.0.0.1:8080/v1/chat", "POST", 0.0, 1.7e12, &[9u8; 32], -1.0);
        assert!(c.response(h, 10.0, 200, &headers(hs), false));
        // Ten events in one read at 500 ms, the page having asked for it at `asked`.
        let body: String = (0..10).map(|i| format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"t{i}\"}}}}]}}\n\n")).collect();
        c.chunk(h, 500.0, body.as_bytes(), asked);
        c.end(h, 501.0, 0);
        Reflect::get(&records(&mut c), &0.into()).unwrap()
    };
    let r = run(&[("content-type", "text/event-stream"), ("content-encoding", "gzip"), ("via", "1.1 proxy-7.internal"), ("cf-ray", "8a1b-FRA"), ("x-accel-buffering", "no")], 10.0);
    assert_eq!(get(&r, "upstreamBuffered"), true);
    assert_eq!(get(&r, "delivery.eventsPerArrival.p50"), 10.0);
    assert_eq!(get(&r, "delivery.largestArrivalShare"), 1.0);
    let hints = JSON::stringify(&get(&r, "upstreamHints")).unwrap();
    assert_eq!(hints, r#"["content-encoding: gzip","x-accel-buffering: no","via","cf-ray"]"#);
    // The app only asked at 495 ms (it was busy since the headers): its own burst.
    let r = run(&[("content-type", "text/event-stream")], 495.0);
    assert_eq!(get(&r, "upstreamBuffered"), false);
    assert_eq!(get(&r, "upstreamHints.length"), 0.0);
}

#[wasm_bindgen_test]
fn other_origins_get_no_traceparent_unless_allowlisted() {
    let mut c = core();
    for (url, allowed) in [
        ("https://evil.example.com/v1/chat", false),
        ("https://api.example.com.evil.test/v1/chat", false),
        ("https://api.example.com/v1/chat", true),
        ("https://other.example.com/v1/chat", true),
        ("https://other.example.com/v2/chat", false),
    ] {
        let h = c.begin(url, "GET", 0.0, 0.0, &[1u8; 32], -1.0);
        assert_eq!(!c.traceparent(h).is_empty(), allowed, "{url}");
        c.end(h, 0.0, FORGET);
    }
    assert!(c.take_records().is_empty(), "discarded requests leave no record");
}

#[wasm_bindgen_test]
fn server_trace_is_adopted_when_nothing_was_propagated() {
    let mut c = core();
    let h = c.begin("https://evil.example.com/v1/chat", "GET", 0.0, 0.0, &[1u8; 32], -1.0);
    let hs = headers(&[
        ("content-type", "text/event-stream"),
        ("traceresponse", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
    ]);
    assert!(c.response(h, 1.0, 200, &hs, false));
    c.end(h, 2.0, 0);
    let r = Reflect::get(&records(&mut c), &0.into()).unwrap();
    assert_eq!(get(&r, "traceSource"), "server");
    assert_eq!(get(&r, "traceId"), "0af7651916cd43dd8448eb211c80319c");
}

#[wasm_bindgen_test]
fn non_stream_responses_are_not_measured_unless_matched() {
    let mut c = core();
    let json = headers(&[("content-type", "application/json")]);
    let h = c.begin("http://127.0.0.1:8080/api", "GET", 0.0, 0.0, &[2u8; 32], -1.0);
    assert!(!c.response(h, 1.0, 200, &json, false));
    c.end(h, 2.0, 0);
    assert!(c.take_records().is_empty());
    // Matched by the user's `match`: measured whatever the type; an HTTP error is an error.
    let h = c.begin("http://127.0.0.1:8080/api", "GET", 0.0, 0.0, &[3u8; 32], -1.0);
    assert!(c.response(h, 1.0, 500, &json, true));
    c.chunk(h, 2.0, b"{\"error\":\"boom\"}", f64::NAN);
    c.end(h, 3.0, 0);
    let r = Reflect::get(&records(&mut c), &0.into()).unwrap();
    assert_eq!(get(&r, "outcome"), "error");
    assert_eq!(get(&r, "status"), 500.0);
}

#[wasm_bindgen_test]
fn app_traceparent_is_respected() {
    let mut c = core();
    let h = c.begin("http://127.0.0.1:8080/v1/chat", "POST", 0.0, 0.0, &[4u8; 32], -1.0);
    c.adopt_traceparent(h, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    assert!(c.response(h, 1.0, 200, &headers(&[("content-type", "text/event-stream")]), false));
    c.end(h, 2.0, 1);
    let r = Reflect::get(&records(&mut c), &0.into()).unwrap();
    assert_eq!(get(&r, "traceSource"), "app");
    assert_eq!(get(&r, "traceId"), "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(get(&r, "spanId"), "00f067aa0ba902b7");
    assert_eq!(get(&r, "outcome"), "aborted");
}

/// EventSource: the exports js/capture/eventsource.js drives, with the data an app's
/// listeners see (framing already done by the browser).
#[wasm_bindgen_test]
fn eventsource_attempts_and_reconnects() {
    let mut c = core();
    let first = [3u8; 32];
    let h = c.es_begin("http://127.0.0.1:8080/v1/stream?x=1", 100.0, 1.7e12, &first, &[], false, -1.0);
    assert_eq!(c.traceparent(h), "", "nothing propagates unless opted in");
    c.es_message(h, 120.0, "", "", ""); // open
    c.es_message(h, 150.0, "message_start", "{\"type\":\"message_start\",\"message\":{}}", "");
    c.es_message(h, 170.0, "content_block_delta", "{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi ✓\"}}", "0");
    c.es_message(h, 190.0, "message_stop", "{\"type\":\"message_stop\"}", "1");
    // Resource Timing's serverTiming, as the browser parsed it (0 / "": absent).
    c.es_server_timing(h, "queue", 2.0, "");
    c.es_server_timing(h, "trace", 0.0, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    c.es_end(h, 200.0, false, 100.4);
    let h2 = c.es_begin("http://127.0.0.1:8080/v1/stream?x=1", 3300.0, 1.7e12 + 3200.0, &[4u8; 32], &first, false, -1.0);
    c.es_message(h2, 3300.0, "", "", "");
    c.es_message(h2, 3350.0, "trace", "4bf92f3577b34da6a3ce929d0e0e4736", "");
    c.es_end(h2, 3360.0, true, 3297.5);
    let recs = records(&mut c);
    let a = Reflect::get(&recs, &0.into()).unwrap();
    let b = Reflect::get(&recs, &1.into()).unwrap();
    assert_eq!(get(&a, "transport"), "eventsource");
    assert_eq!(get(&a, "reconnectOf"), JsValue::NULL);
    assert_eq!(get(&a, "url"), "http://127.0.0.1:8080/v1/stream");
    assert_eq!(get(&a, "format"), "anthropic");
    assert_eq!(get(&a, "outcome"), "ok");
    assert_eq!(get(&a, "ttft"), 70.0);
    assert_eq!(get(&a, "marks.headers"), 20.0, "never moved forward to the entry's start");
    assert_eq!(get(&a, "chars"), 4.0);
    assert_eq!(get(&a, "chunks"), 3.0);
    assert_eq!(get(&a, "traceSource"), "server");
    assert_eq!(get(&a, "traceId"), "0af7651916cd43dd8448eb211c80319c");
    assert_eq!(get(&b, "reconnectOf"), get(&a, "id"));
    assert_eq!(get(&b, "outcome"), "aborted");
    assert_eq!(get(&b, "marks.headers"), 2.5, "start moved back to the request start");
    assert_eq!(get(&b, "traceId"), "4bf92f3577b34da6a3ce929d0e0e4736", "event: trace");
    assert_eq!(get(&b, "contentEvents"), 0.0);
}
