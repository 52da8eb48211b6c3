//! EventSource records through the core's public API: messages framed by the browser,
//! classified by the same content rules as fetch bodies; outcomes of `close()` and dropped
//! connections; in-band and Resource Timing trace ids; the opt-in query `traceparent`; linked
//! reconnects and their rebased start.

mod common;

use common::{finished, has};
use llm_rum::core::config::Config;
use llm_rum::core::request::kinds::Outcome;
use llm_rum::core::session::{Handle, Session};

const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const TP: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

fn session() -> Session {
    Session::new(Config { page_origin: "https://chat.example".into(), ..Config::default() })
}

fn begin(s: &mut Session, t: f64, send: bool, first: &[u8]) -> Handle {
    let r = [(t as u8) ^ 5; 32];
    s.begin_eventsource("https://chat.example/v1/stream?q=secret", t, 1.0e12 + t, &r, first, send)
}

fn delta(text: &str) -> String {
    ["{\"choices\":[{\"delta\":{\"content\":\"", text, "\"},\"finish_reason\":null}]}"].concat()
}

fn end(s: &mut Session, h: Handle, t: f64, by_app: bool) -> String {
    s.end(h, t, Outcome::eventsource_end(by_app));
    let mut r = finished(s);
    assert_eq!(r.len(), 1);
    r.remove(0)
}

#[test]
fn first_token_is_the_first_content_message_not_open() {
    let mut s = session();
    let h = begin(&mut s, 100.0, false, &[]);
    let tl = s.get(h).unwrap();
    tl.on_message(130.0, "", "", "");
    let role = "{\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}";
    tl.on_message(150.0, "message", role, "");
    tl.on_message(180.0, "message", &delta("Hé"), "");
    tl.on_message(200.0, "message", &delta("llo"), "");
    tl.on_message(520.0, "message", &delta("!"), "");
    tl.on_message(521.0, "message", "[DONE]", "");
    let rec = end(&mut s, h, 525.0, true);
    for n in [
        "\"transport\":\"eventsource\"",
        "\"reconnectOf\":null",
        "\"url\":\"https://chat.example/v1/stream\"",
        "\"method\":\"GET\"",
        "\"status\":200",
        "\"outcome\":\"ok\"",
        "\"format\":\"openai-chat\"",
        "\"complete\":true",
        "\"headers\":30,",
        "\"firstByte\":50,",
        "\"firstToken\":80,",
        "\"lastToken\":420,",
        "\"chars\":6,",
        "\"contentEvents\":3,",
        "\"chunks\":5,",
        "\"traceSource\":\"none\"",
        "\"stallList\":[{\"start\":100,\"dur\":320,",
    ] {
        has(&rec, n);
    }
    let bytes: usize = [role.len(), delta("Hé").len(), delta("llo").len(), delta("!").len(), 6].iter().sum();
    has(&rec, &["\"bytes\":", &bytes.to_string()].concat());
}

#[test]
fn named_events_and_outcomes() {
    let mut s = session();
    let h = begin(&mut s, 0.0, false, &[]);
    let tl = s.get(h).unwrap();
    tl.on_open(5.0);
    tl.on_message(10.0, "message_start", "{\"type\":\"message_start\",\"message\":{}}", "");
    tl.on_message(20.0, "content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}", "");
    tl.on_message(30.0, "ping", "{\"type\": \"ping\"}", "");
    // Without a JSON `type`, the event name decides.
    tl.on_message(40.0, "content_block_delta", "{\"delta\":{\"type\":\"text_delta\",\"text\":\" you\"}}", "");
    let open = end(&mut s, h, 50.0, true);
    has(&open, "\"format\":\"anthropic\"");
    has(&open, "\"contentEvents\":2,");
    has(&open, "\"chars\":6,");
    has(&open, "\"outcome\":\"aborted\"");
    // The server dropped the connection before the end marker: error; with it: ok.
    let h = begin(&mut s, 0.0, false, &[]);
    s.get(h).unwrap().on_message(10.0, "message", "partial answer", "");
    let r = end(&mut s, h, 20.0, false);
    has(&r, "\"outcome\":\"error\"");
    has(&r, "\"format\":\"unknown\"");
    has(&r, "\"headers\":10,");
    let h = begin(&mut s, 0.0, false, &[]);
    s.get(h).unwrap().on_message(10.0, "message_stop", "{\"type\":\"message_stop\"}", "");
    has(&end(&mut s, h, 20.0, false), "\"outcome\":\"ok\"");
    // An in-band error event turns a complete stream into an error.
    let h = begin(&mut s, 0.0, false, &[]);
    s.get(h).unwrap().on_message(10.0, "error", "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}", "");
    s.get(h).unwrap().on_message(11.0, "message", "[DONE]", "");
    has(&end(&mut s, h, 20.0, true), "\"outcome\":\"error\"");
    // Never opened (404, wrong type): error, status 0.
    let h = begin(&mut s, 0.0, false, &[]);
    let r = end(&mut s, h, 20.0, false);
    has(&r, "\"outcome\":\"error\"");
    has(&r, "\"status\":0");
}

#[test]
fn in_band_and_resource_timing_trace_ids() {
    let mut s = session();
    // `id:` lines that are counters are ignored; a traceparent id is adopted.
    let h = begin(&mut s, 0.0, false, &[]);
    let tl = s.get(h).unwrap();
    tl.on_message(1.0, "message", "a", "17");
    assert_eq!(tl.ident.trace_source.as_str(), "none");
    tl.on_message(2.0, "message", "b", TP);
    assert_eq!((tl.ident.trace_source.as_str(), tl.ident.trace.trace_id_hex()), ("server", TRACE.into()));
    // A bare trace id in an `event: trace` message; the message is not content.
    let h = begin(&mut s, 0.0, false, &[]);
    let tl = s.get(h).unwrap();
    tl.on_message(1.0, "trace", TRACE, "");
    assert_eq!(tl.ident.trace.trace_id_hex(), TRACE);
    assert_eq!((tl.content.events, tl.content.content_events, tl.chunks), (0, 0, 1));
    // Upper-case / all-zero / short ids are not trace ids.
    for bad in ["0AF7651916CD43DD8448EB211C80319C", "00000000000000000000000000000000", "0af7651916cd43dd"] {
        let h = begin(&mut s, 0.0, false, &[]);
        s.get(h).unwrap().on_inband_trace(bad);
        assert_eq!(s.get(h).unwrap().ident.trace_source.as_str(), "none", "{bad}");
    }
    // Resource Timing's serverTiming at the end: stages and the trace.
    let h = begin(&mut s, 0.0, false, &[]);
    s.get(h).unwrap().on_message(10.0, "message", &delta("x"), "");
    s.get(h).unwrap().on_server_timing(&["queue;dur=1.5, trace;desc=\"", TP, "\""].concat());
    let r = end(&mut s, h, 20.0, false);
    has(&r, "\"traceSource\":\"server\"");
    has(&r, TRACE);
    has(&r, "{\"name\":\"queue\",\"dur\":1.5,\"desc\":null}");
}

#[test]
fn query_traceparent_and_reconnects() {
    let mut s = session();
    // Opted in, same origin: a traceparent to send as a query parameter.
    let first_random = [(0.0f64 as u8) ^ 5; 32];
    let h = begin(&mut s, 0.0, true, &[]);
    let tp = s.traceparent(h);
    assert_eq!(tp.len(), 55);
    let first = s.get(h).unwrap().ident.id.clone();
    s.get(h).unwrap().on_message(10.0, "message", &delta("x"), "");
    let r1 = end(&mut s, h, 20.0, false);
    has(&r1, "\"traceSource\":\"propagated\"");
    // The reconnect resends the same URL: same trace context, linked to the first record.
    let h2 = begin(&mut s, 3020.0, true, &first_random);
    assert_ne!(s.get(h2).unwrap().ident.id, first);
    assert_eq!(s.traceparent(h2), tp, "what the browser sends again");
    let r2 = end(&mut s, h2, 3030.0, true);
    has(&r2, "\"traceSource\":\"propagated\"");
    has(&r2, &["\"reconnectOf\":\"", &first, "\""].concat());
    has(&r2, &tp[3..35]);
    has(&r2, &tp[36..52]);
    // Not opted in: nothing is sent, the server's trace can be adopted.
    let h = begin(&mut s, 0.0, false, &[]);
    assert_eq!(s.traceparent(h), "");
    let h = begin(&mut s, 7.0, false, &first_random);
    assert_eq!(s.get(h).unwrap().ident.trace_source.as_str(), "none");
    assert_eq!(s.get(h).unwrap().reconnect_of.as_deref(), Some(first.as_str()));
    // Other origins get nothing even when opted in.
    let h = s.begin_eventsource("https://other.example/s", 0.0, 0.0, &[1u8; 32], &[], true);
    assert_eq!(s.traceparent(h), "");
}

#[test]
fn a_reconnect_start_moves_back_to_its_request_start() {
    let mut s = session();
    let h = begin(&mut s, 1000.0, false, &[0xab; 32]);
    let tl = s.get(h).unwrap();
    tl.on_open(1000.0);
    tl.on_message(1100.0, "message", &delta("a"), "");
    tl.on_message(1500.0, "message", &delta("b"), "");
    tl.rebase_start(1200.0); // later: ignored
    assert_eq!(tl.start, 1000.0);
    tl.rebase_start(997.5);
    let r = end(&mut s, h, 1600.0, true);
    has(&r, "\"startEpochMs\":1000000000997.5");
    has(&r, "\"headers\":2.5,");
    has(&r, "\"ttft\":102.5,");
    has(&r, "\"stallList\":[{\"start\":102.5,\"dur\":400,");
    has(&r, "\"reconnectOf\":\"abababababababab\"");
}

#[test]
fn fetch_records_say_fetch() {
    let mut s = session();
    let h = s.begin("https://chat.example/v1", "POST", 0.0, 0.0, &[3u8; 32]);
    s.end(h, 1.0, Outcome::Error);
    let r = finished(&mut s).remove(0);
    has(&r, "\"transport\":\"fetch\",\"reconnectOf\":null");
}
