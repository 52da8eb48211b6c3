//! Session → record scenarios through the core's public API: timeline and record math on
//! synthetic timelines with exact expected values, property tests over random schedules, page
//! hide/unload, and the paint wiring (records that wait for their last paint, text probes,
//! late observation).

mod common;

use common::test_rng::Rng;
use common::{chunk, finished, has};
use llm_rum::core::config::{Budget, Config};
use llm_rum::core::record::encode;
use llm_rum::core::request::kinds::{Outcome, PAINT_AUTO, PAINT_NONE, PAINT_OBSERVED};
use llm_rum::core::session::{self, Session};
use llm_rum::core::util::json_write::JsonWriter;

fn session(budgets: &[(&str, f64)]) -> Session {
    Session::new(Config {
        page_origin: "https://chat.example".into(),
        budgets: budgets.iter().map(|(m, l)| Budget { metric: (*m).into(), limit: *l }).collect(),
        ..Config::default()
    })
}

/// Plays a schedule of (time, bytes) chunks; returns the record JSON.
fn play(s: &mut Session, start: f64, headers: f64, chunks: &[(f64, String)], end: f64, outcome: Outcome) -> String {
    let h = s.begin("https://chat.example/v1/chat?user=secret", "post", start, 1.0e12, &[9u8; 32]);
    let tl = s.get(h).unwrap();
    tl.on_headers(headers, 200, "text/event-stream", false);
    for (t, c) in chunks {
        s.get(h).unwrap().on_chunk(*t, c.as_bytes());
    }
    s.end(h, end, outcome);
    let recs = finished(s);
    assert_eq!(recs.len(), 1);
    recs.into_iter().next().unwrap()
}

#[test]
fn exact_marks_and_metrics_on_a_scripted_timeline() {
    let mut s = session(&[("ttft", 400.0), ("itl.max", 300.0), ("total", 10_000.0)]);
    let role = "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n".to_string();
    let chunks = vec![
        (1050.0, role),                 // first byte, not a token
        (1500.0, chunk("Hello")),       // ttft = 500
        (1530.0, chunk(", ")),          // gap 30
        (1560.0, chunk("wörld")),       // gap 30
        (1960.0, chunk("!")),           // gap 400: a stall
        (1990.0, chunk(" Bye") + &chunk(".")), // two events in one chunk: one arrival, gap 30
        (2000.0, "data: {\"choices\":[],\"usage\":{\"completion_tokens\":7}}\n\ndata: [DONE]\n\n".into()),
    ];
    let rec = play(&mut s, 1000.0, 1040.0, &chunks, 2001.0, Outcome::Ok);
    has(&rec, "\"url\":\"https://chat.example/v1/chat\"");
    has(&rec, "\"method\":\"POST\"");
    has(&rec, "\"outcome\":\"ok\"");
    has(&rec, "\"format\":\"openai-chat\"");
    has(&rec, "\"complete\":true");
    has(&rec, "\"marks\":{\"interaction\":null,\"start\":0,\"headers\":40,\"firstByte\":50,\"firstReasoning\":null,\"firstToken\":500,\"firstPaint\":null,\"lastToken\":990,\"lastPaint\":null,\"end\":1001}");
    has(&rec, "\"ttft\":500,");
    has(&rec, "\"total\":990,");
    // Gaps 30, 30, 400, 30 → nearest-rank p50 = 30, p95 = p99 = max = 400 (histogram: ±1 %).
    has(&rec, "\"itl\":{\"n\":4,\"p50\":");
    // …and per GenAI bucket: three gaps ≤ 40 ms, the stall's 400 ms ≤ 640 ms.
    has(&rec, "\"max\":400,\"buckets\":[0,0,3,0,0,0,1,0,0,0,0,0,0,0,0]}");
    // tpot from usage: (990 − 500) / (7 − 1).
    has(&rec, "\"tpot\":81.667,");
    has(&rec, "\"stalls\":{\"count\":1,\"totalMs\":400,\"longestMs\":400,\"network\":1,\"render\":0}");
    has(&rec, "\"stallList\":[{\"start\":560,\"dur\":400,\"cause\":\"network\",\"blame\":null}]");
    has(&rec, "\"outputTokens\":7,\"outputTokensSource\":\"usage\"");
    has(&rec, "\"chars\":18,"); // "Hello" ", " "wörld" "!" " Bye" "." = 5+2+5+1+4+1
    has(&rec, "\"contentEvents\":6,");
    has(&rec, "\"chunks\":7,");
    has(&rec, "\"budgetBreaches\":[{\"metric\":\"ttft\",\"limit\":400,\"value\":500},{\"metric\":\"itl.max\",\"limit\":300,\"value\":400}]");
    assert!(!rec.contains("secret"));
}

#[test]
fn itl_percentiles_are_within_the_histogram_bound() {
    let mut s = session(&[]);
    let mut chunks = Vec::new();
    let mut t = 100.0;
    for i in 0..200 {
        t += 10.0 + (i % 10) as f64; // gaps 10..19 ms, uniform
        chunks.push((t, chunk("x")));
    }
    let rec = play(&mut s, 0.0, 50.0, &chunks, t + 1.0, Outcome::Ok);
    // 199 gaps; the first is 11 (i = 1), values cycle 10..19: p50 = 15, p95 = 19.
    let get = |k: &str| -> f64 {
        let i = rec.find(&format!("\"{k}\":")).unwrap() + k.len() + 3;
        rec[i..].split([',', '}']).next().unwrap().parse().unwrap()
    };
    let p50 = get("p50");
    let p95 = get("p95");
    assert!((p50 - 15.0).abs() <= 0.15 + 1e-9, "p50 {p50}");
    assert!((p95 - 19.0).abs() <= 0.19 + 1e-9, "p95 {p95}");
    has(&rec, "\"n\":199,");
    has(&rec, "\"stalls\":{\"count\":0,");
}

#[test]
fn outcomes() {
    let mut s = session(&[]);
    let r = play(&mut s, 0.0, 10.0, &[(20.0, chunk("a"))], 30.0, Outcome::Aborted);
    has(&r, "\"outcome\":\"aborted\"");
    has(&r, "\"complete\":false");
    // Cancelled after the end marker (openai-node cancels at [DONE]): a complete answer.
    let r = play(&mut s, 0.0, 10.0, &[(20.0, chunk("a")), (21.0, "data: [DONE]\n\n".into())], 30.0, Outcome::Aborted);
    has(&r, "\"outcome\":\"ok\"");
    has(&r, "\"complete\":true");
    // A connection dropped after the end marker: also a complete answer.
    let r = play(&mut s, 0.0, 10.0, &[(20.0, chunk("a")), (21.0, "data: [DONE]\n\n".into())], 30.0, Outcome::Error);
    has(&r, "\"outcome\":\"ok\"");
    // Cut by page unload: partial, complete or not.
    let r = play(&mut s, 0.0, 10.0, &[(20.0, chunk("a")), (21.0, "data: [DONE]\n\n".into())], 30.0, Outcome::Partial);
    has(&r, "\"outcome\":\"partial\"");
    // A fully read body with an HTTP error status is an error.
    let h = s.begin("https://chat.example/x", "GET", 0.0, 0.0, &[1u8; 32]);
    s.get(h).unwrap().on_headers(5.0, 503, "text/event-stream", false);
    s.end(h, 6.0, Outcome::Ok);
    has(&finished(&mut s)[0], "\"outcome\":\"error\"");
    // No response at all: error with status 0 and null marks.
    let h = s.begin("https://chat.example/x", "GET", 0.0, 0.0, &[1u8; 32]);
    s.end(h, 6.0, Outcome::Error);
    let r = &finished(&mut s)[0];
    has(r, "\"status\":0,");
    has(r, "\"ttft\":null");
    has(r, "\"itl\":{\"n\":0,\"p50\":null,\"p95\":null,\"p99\":null,\"max\":null,\"buckets\":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}");
    // An in-band error event turns a complete read into an error.
    let r = play(&mut s, 0.0, 1.0, &[(2.0, "data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}\n\n".into())], 3.0, Outcome::Ok);
    has(&r, "\"outcome\":\"error\"");
}

/// The official openai and anthropic clients abort the fetch right after an in-band error
/// event; whatever ends the read after one (abort, cancel, a drop, a clean end), the answer
/// failed. Each format's error event as the providers send it (and demo/src/formats.rs).
#[test]
fn an_error_event_then_the_clients_abort_is_an_error_in_every_format() {
    let sse = "text/event-stream";
    let responses = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\n";
    let anthropic = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n";
    let ai_sdk = "data: {\"type\":\"text-delta\",\"id\":\"t\",\"delta\":\"Hi\"}\n\n";
    let chat = chunk("Hi");
    // (content type, a content event of the format, its error event)
    let cases: [(&str, &str, &str, &str); 6] = [
        ("openai-chat", sse, &chat, "data: {\"error\":{\"message\":\"The server had an error\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n"),
        ("openai-responses", sse, responses, "event: error\ndata: {\"type\":\"error\",\"sequence_number\":7,\"code\":\"server_error\",\"message\":\"x\",\"param\":null}\n\n"),
        ("openai-responses", sse, responses, "event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":7,\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"x\"}}}\n\n"),
        ("anthropic", sse, anthropic, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"),
        ("ai-sdk-ui", sse, ai_sdk, "data: {\"type\":\"error\",\"errorText\":\"x\"}\n\n"),
        ("ndjson", "application/x-ndjson", "{\"message\":{\"content\":\"Hi\"},\"done\":false}\n", "{\"error\":\"x\"}\n"),
    ];
    let mut s = session(&[]);
    for (format, ct, first, ev) in cases {
        for outcome in [Outcome::Aborted, Outcome::Error, Outcome::Ok, Outcome::Partial] {
            let h = s.begin("https://chat.example/v1/x", "POST", 0.0, 0.0, &[3u8; 32]);
            let tl = s.get(h).unwrap();
            tl.on_headers(1.0, 200, ct, false);
            tl.on_chunk(2.0, first.as_bytes());
            tl.on_chunk(3.0, ev.as_bytes());
            s.end(h, 4.0, outcome);
            let r = &finished(&mut s)[0];
            assert!(r.contains("\"outcome\":\"error\""), "{format}: {ev} then {outcome:?}: {r}");
            has(r, &["\"format\":\"", format, "\""].concat());
            has(r, "\"ttft\":2");
        }
    }
    // Without one, the client's abort is the user's cancel.
    let r = play(&mut s, 0.0, 1.0, &[(2.0, chunk("Hi"))], 3.0, Outcome::Aborted);
    has(&r, "\"outcome\":\"aborted\"");
}

#[test]
fn stale_handles_and_bounded_in_flight() {
    let mut s = session(&[]);
    let h = s.begin("https://chat.example/a", "GET", 0.0, 0.0, &[1u8; 32]);
    s.end(h, 1.0, Outcome::Ok);
    let h2 = s.begin("https://chat.example/b", "GET", 2.0, 0.0, &[2u8; 32]);
    assert_ne!(h, h2, "a reused slot gets a new generation");
    assert!(s.get(h).is_none(), "the stale handle does not reach the new request");
    s.end(h, 3.0, Outcome::Error); // no effect
    assert_eq!(finished(&mut s).len(), 1);
    // Past MAX_IN_FLIGHT abandoned requests, the oldest are ended as partial.
    for i in 0..session::MAX_IN_FLIGHT + 3 {
        s.begin("https://chat.example/c", "GET", 10.0 + i as f64, 0.0, &[3u8; 32]);
    }
    let done = finished(&mut s);
    assert_eq!(done.len(), 4, "h2 and the 3 oldest abandoned ones");
    assert!(done.iter().all(|r| r.contains("\"outcome\":\"partial\"")));
    assert_eq!(s.running().len(), session::MAX_IN_FLIGHT);
}

/// "Current" is decided in the core, for `rum.mark` (the newest running request) and for
/// `rum.observe` (the newest running one whose response is measured, walking back past the
/// ones whose element the app named); `holds` tells the page which handles to let go of.
#[test]
fn current_request_current_answer_and_held_handles() {
    let mut s = session(&[]);
    assert_eq!((s.current(), s.current_answer(None)), (None, None));
    let a = s.begin("https://chat.example/a", "POST", 0.0, 0.0, &[1u8; 32]);
    s.get(a).unwrap().on_headers(5.0, 200, "text/event-stream", false);
    let b = s.begin("https://chat.example/b", "POST", 10.0, 0.0, &[2u8; 32]);
    assert_eq!(s.current(), Some(b), "marks go to the newest request, answered or not");
    assert_eq!(s.current_answer(None), Some(a), "b has no measured response yet");
    s.get(b).unwrap().on_headers(15.0, 200, "text/event-stream", false);
    assert_eq!(s.current_answer(None), Some(b));
    assert_eq!(s.current_answer(Some(b)), Some(a), "the one begun before b");
    assert_eq!(s.current_answer(Some(a)), None);
    s.end(b, 20.0, Outcome::Ok);
    assert_eq!((s.current(), s.current_answer(None)), (Some(a), Some(a)), "an ended request is not current");
    assert!(s.holds(a) && !s.holds(b), "b's record is queued: let go of it");
    // A stale handle (its slot reused) is not held, and walks back to nothing.
    let c = s.begin("https://chat.example/c", "POST", 30.0, 0.0, &[3u8; 32]);
    assert!(s.holds(c) && !s.holds(b));
    assert_eq!(s.current_answer(Some(b)), None);
    // Pushed out by newer requests: not held any more.
    for i in 0..session::MAX_IN_FLIGHT {
        s.begin("https://chat.example/d", "GET", 40.0 + i as f64, 0.0, &[4u8; 32]);
    }
    assert!(!s.holds(a) && !s.holds(c));
}

#[test]
fn unsampled_sessions_record_nothing_and_say_so_in_traceparent() {
    let mut s = Session::new(Config { sampled: false, page_origin: "https://chat.example".into(), ..Config::default() });
    let h = s.begin("https://chat.example/a", "GET", 0.0, 0.0, &[1u8; 32]);
    assert!(s.traceparent(h).ends_with("-00"));
    s.end(h, 1.0, Outcome::Ok);
    assert!(finished(&mut s).is_empty());
}


/// Properties over random schedules: ttft ≤ total; the gaps sum to the generation window
/// (lastToken − firstToken); n = arrivals − 1; the stall count equals the gaps over the
/// threshold; every record is well-formed enough to contain its keys once.
#[test]
fn properties_over_random_schedules() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..300 {
        let cfg = Config { page_origin: "https://chat.example".into(), ..Config::default() };
        let mut s = Session::new(cfg);
        let h = s.begin("https://chat.example/v1", "POST", 0.0, 0.0, &[5u8; 32]);
        s.get(h).unwrap().on_headers(rng.float(100.0), 200, "text/event-stream", false);
        let mut t = 100.0;
        let n = 1 + (rng.next_u64() % 60) as usize;
        let mut gaps = Vec::new();
        let mut last: Option<f64> = None;
        for _ in 0..n {
            let span = if rng.next_u64().is_multiple_of(10) { 900.0 } else { 60.0 };
            t += rng.float(span);
            let content = !rng.next_u64().is_multiple_of(4);
            let body = if content { chunk("tok") } else { ": ping\n\n".to_string() };
            s.get(h).unwrap().on_chunk(t, body.as_bytes());
            if content {
                if let Some(l) = last {
                    gaps.push(t - l);
                }
                last = Some(t);
            }
        }
        let tl = s.get(h).unwrap();
        let sum = tl.itl.sum();
        if let (Some(a), Some(b)) = (tl.first_token, tl.last_token) {
            assert!(tl.ttft().unwrap() <= tl.total().unwrap());
            assert!((sum - (b - a)).abs() < 1e-6, "gaps sum to the window");
            assert_eq!(tl.itl.count() as usize, gaps.len());
            assert_eq!(tl.stalls.count as usize, gaps.iter().filter(|g| **g > 250.0).count());
            assert!(tl.stalls.list.windows(2).all(|w| w[0].dur >= w[1].dur), "stallList longest first");
        } else {
            assert!(gaps.is_empty() && tl.itl.count() == 0);
        }
        let mut w = JsonWriter::new();
        encode(tl, &Config::default(), 1.0, &mut w);
        for key in ["\"id\":", "\"ttft\":", "\"itl\":", "\"stalls\":", "\"userMarks\":"] {
            assert_eq!(w.out.matches(key).count(), 1, "{key}");
        }
    }
}

/// With a collector, a hidden page's running requests go out as `partial` snapshots; the
/// request runs on and its final record has the same id (the beacon queue, js/deliver/queue.js,
/// lets it replace the partial: tests/e2e/queue.spec.js).
#[test]
fn hidden_page_sends_partials_that_the_final_record_supersedes() {
    let mut s = session(&[]);
    s.cfg.collect = true;
    let h = s.begin("https://chat.example/v1", "POST", 0.0, 0.0, &[7u8; 32]);
    s.get(h).unwrap().on_headers(10.0, 200, "text/event-stream", false);
    s.get(h).unwrap().on_chunk(100.0, chunk("Hi").as_bytes());
    s.snapshot_running(150.0);
    let p = s.take_records();
    assert_eq!(p.len(), 1);
    assert!(p[0].snapshot, "for the collector only: onRecord does not see the partial");
    has(&p[0].json, "\"outcome\":\"partial\"");
    has(&p[0].json, "\"end\":150");
    has(&p[0].json, "\"ttft\":100,");
    // The request keeps running and completes: same id, outcome ok, real end.
    assert!(s.get(h).unwrap().end.is_none(), "the snapshot did not end the request");
    s.get(h).unwrap().on_chunk(200.0, chunk("!").as_bytes());
    s.end(h, 210.0, Outcome::Ok);
    let q = s.take_records();
    assert_eq!(q.len(), 1);
    assert!(!q[0].snapshot, "onRecord sees the final record");
    has(&q[0].json, "\"outcome\":\"ok\"");
    has(&q[0].json, "\"end\":210");
    // The id handed out with each record is the record's own, and the same for both.
    let id = |x: &str| x.split("{\"id\":\"").nth(1).unwrap()[..16].to_string();
    assert_eq!((id(&p[0].json), id(&q[0].json)), (p[0].id.clone(), q[0].id.clone()));
    assert_eq!(p[0].id, q[0].id);
}

#[test]
fn recorded_urls_are_templated_and_the_app_template_wins() {
    let mut s = session(&[]);
    let url = "https://chat.example/v1/threads/thread_9QxZr4kLmN2pT7vB1cD5eF8g/runs/98765?conv=3f6c1e2a-9b4d-4c8e-a1f0-7d2b5e9c4a61";
    let run = |s: &mut Session, route: Option<&str>| {
        let h = s.begin(url, "POST", 0.0, 0.0, &[7u8; 32]);
        s.get(h).unwrap().ident.route = route.map(String::from);
        s.get(h).unwrap().on_headers(10.0, 200, "text/event-stream", false);
        s.end(h, 30.0, Outcome::Ok);
        finished(s).remove(0)
    };
    let rec = run(&mut s, None);
    has(&rec, "\"url\":\"https://chat.example/v1/threads/:id/runs/:id\"");
    assert!(!rec.contains("9QxZr4") && !rec.contains("98765") && !rec.contains("3f6c1e2a"));
    has(&run(&mut s, Some("/v1/threads/:thread/runs/:run")), "\"url\":\"https://chat.example/v1/threads/:thread/runs/:run\"");
    // `templateIds: false`: the path as it is (the query still stripped).
    s.cfg.template_ids = false;
    has(&run(&mut s, None), "\"url\":\"https://chat.example/v1/threads/thread_9QxZr4kLmN2pT7vB1cD5eF8g/runs/98765\"");
}

/// Records leave the core once each (`take_records`); `partial` snapshots are made only with a
/// collector (`collect`); the list is bounded when the facade does not take them (measurement
/// failed in the page), the oldest dropped and counted.
#[test]
fn records_leave_once_and_snapshots_only_with_a_collector() {
    let mut s = session(&[]);
    let run = |s: &mut Session, i: u8| {
        let h = s.begin("https://chat.example/v1", "POST", 0.0, 0.0, &[i; 32]);
        s.get(h).unwrap().on_headers(10.0, 200, "text/event-stream", false);
        s.get(h).unwrap().on_chunk(100.0, chunk("Hi").as_bytes());
        h
    };
    let h = run(&mut s, 1);
    s.snapshot_running(150.0);
    s.end(h, 210.0, Outcome::Ok);
    let r = s.take_records();
    assert_eq!(r.iter().map(|r| r.snapshot).collect::<Vec<_>>(), [false], "no collector: no snapshot");
    s.cfg.collect = true;
    let h = run(&mut s, 2);
    s.snapshot_running(150.0);
    s.end(h, 210.0, Outcome::Ok);
    let out = s.take_records();
    assert_eq!(out.iter().map(|r| r.snapshot).collect::<Vec<_>>(), [true, false]);
    has(&out[0].json, "\"outcome\":\"partial\"");
    has(&out[1].json, "\"outcome\":\"ok\"");
    assert!(s.take_records().is_empty(), "each once");
    for i in 0..(session::MAX_FINISHED + 5) {
        let h = run(&mut s, i as u8);
        s.end(h, 30.0, Outcome::Ok);
    }
    assert_eq!(s.take_records().len(), session::MAX_FINISHED);
    assert_eq!(s.dropped, 5, "the oldest");
}

#[test]
fn streams_cut_while_the_page_unloads_are_partial() {
    let mut s = session(&[]);
    let h = s.begin("https://chat.example/v1", "POST", 0.0, 0.0, &[7u8; 32]);
    s.get(h).unwrap().on_headers(10.0, 200, "text/event-stream", false);
    s.get(h).unwrap().on_chunk(20.0, chunk("Hi").as_bytes());
    s.unloading = true;
    s.end(h, 30.0, Outcome::Error); // Chromium's teardown of the page's fetches
    has(&finished(&mut s)[0], "\"outcome\":\"partial\"");
    // A stream that had completed before is still ok.
    let h = s.begin("https://chat.example/v1", "POST", 0.0, 0.0, &[8u8; 32]);
    s.get(h).unwrap().on_headers(10.0, 200, "text/event-stream", false);
    s.end(h, 30.0, Outcome::Ok);
    has(&finished(&mut s)[0], "\"outcome\":\"ok\"");
}

/// Auto mode: the record waits while an element is looked for; one found by `claim` reports
/// `paintSource: auto` and the paint metrics from the arrivals tracked since the headers; none
/// found (the facade gives up with `finish`) reports `none` and null paint fields.
#[test]
fn auto_mode_claims_the_answer_element_or_reports_none() {
    let mut s = session(&[]);
    let h = s.begin("https://chat.example/v1/chat", "POST", 0.0, 0.0, &[9u8; 32]);
    s.get(h).unwrap().on_headers(10.0, 200, "text/event-stream", false);
    s.get(h).unwrap().observe(PAINT_NONE);
    s.get(h).unwrap().on_chunk(100.0, chunk("Hello").as_bytes());
    s.get(h).unwrap().on_chunk(130.0, chunk(" there, how can I help you today?").as_bytes());
    let tl = s.get(h).unwrap();
    // The element showing the answer, one after the question, a decoy; the end of a long one.
    assert_eq!(tl.claim("Hello there, how can", true), 0.0);
    assert_eq!(tl.claim("You: hi\nHello there, how can I help", true), 2.0 * 7.0 + 1.0);
    assert_eq!(tl.claim("12:00:01", true), -1.0);
    assert_eq!(tl.claim("there, how can I help you", false), 0.0);
    assert_eq!(tl.claim("nothing like the answer here", false), -1.0);
    tl.observe(PAINT_AUTO);
    assert!(!s.paint(h, 117.0 - 1.0, 117.0, 5, 1.0, "Hello"));
    s.get(h).unwrap().on_chunk(140.0, b"data: [DONE]\n\n");
    assert!(!s.end(h, 140.0, Outcome::Ok));
    assert!(s.paint(h, 150.0 - 1.0, 150.0, 38, 1.0, "there, how can I help you today?"));
    let rec = finished(&mut s).remove(0);
    has(&rec, "\"firstPaint\":117,");
    // The bracket's 1 ms and the clock's step: whole-millisecond stamps here read as a 1 ms clock.
    has(&rec, "\"buffered\":false,\"paintErrorMs\":2,\"paintSource\":\"auto\"");

    // Looked for, never found: the record waits for the facade to give up.
    let h = s.begin("https://chat.example/v1/chat", "POST", 0.0, 0.0, &[10u8; 32]);
    s.get(h).unwrap().on_headers(10.0, 200, "text/plain", false);
    s.get(h).unwrap().observe(PAINT_NONE);
    s.get(h).unwrap().on_chunk(100.0, b"Plain text answers are claimed too");
    assert_eq!(s.get(h).unwrap().claim("Plain text answers", true), 0.0);
    assert!(!s.end(h, 140.0, Outcome::Ok));
    s.finish(h);
    let rec = finished(&mut s).remove(0);
    has(&rec, "\"buffered\":null,\"paintErrorMs\":null,\"paintSource\":\"none\"");
    has(&rec, "\"firstPaint\":null,");
}

/// Paint wiring: an observed answer's record waits for its last paint, reports the paint
/// metrics from the interaction, render stalls with their long-frame blame, user stages and
/// paint budgets; a hidden page withholds what nobody waited for.
#[test]
fn observed_answer_record_waits_for_its_last_paint() {
    let mut s = session(&[("perceivedTtft", 500.0), ("renderDelay.max", 300.0), ("stalls.count", 0.0)]);
    let h = s.begin("https://chat.example/v1/chat", "POST", 1000.0, 1.0e12, &[4u8; 32]);
    let tl = s.get(h).unwrap();
    tl.interaction = Some(700.0);
    tl.observe(PAINT_OBSERVED);
    tl.on_headers(1040.0, 200, "text/event-stream", false);
    tl.on_chunk(1500.0, chunk("Hello").as_bytes());
    assert!(!s.paint(h, 1510.0 - 2.0, 1510.0, 5, 2.0, ""));
    s.get(h).unwrap().on_chunk(1530.0, chunk(" world").as_bytes());
    // A 300 ms script blocks the page: the text waits, then paints.
    s.get(h).unwrap().on_long_frame(1525.0, 320.0, "Response.json.then", "https://chat.example/app.js?v=secret", 300.0);
    s.get(h).unwrap().on_long_frame(1200.0, 60.0, "DIV.onclick", "https://chat.example/x.js", 55.0);
    s.get(h).unwrap().on_user_mark("retrieval", 1300.0);
    s.get(h).unwrap().on_user_mark("answer", 1830.0);
    s.get(h).unwrap().on_chunk(1835.0, b"data: [DONE]\n\n");
    assert!(!s.end(h, 1840.0, Outcome::Ok), "the end of the answer is not painted yet");
    assert!(finished(&mut s).is_empty());
    assert!(s.current().is_none(), "an ended request takes no marks");
    assert!(s.paint(h, 1850.0 - 2.0, 1850.0, 11, 2.0, ""), "the frame showing the end completes the record");
    let rec = finished(&mut s).remove(0);
    has(&rec, "\"firstPaint\":510,\"lastToken\":530,\"lastPaint\":850,\"end\":840}");
    has(&rec, "\"interaction\":-300,");
    has(&rec, "\"ttfp\":510,\"perceivedTtft\":810,\"total\":530,\"perceivedTotal\":1150,");
    has(&rec, "\"renderDelay\":{\"first\":10,");
    has(&rec, "\"max\":320},\"buffered\":false,\"paintErrorMs\":3,"); // 2 + the 1 ms clock step
    has(&rec, "\"stalls\":{\"count\":1,\"totalMs\":340,\"longestMs\":340,\"network\":0,\"render\":1}");
    has(&rec, "\"stallList\":[{\"start\":510,\"dur\":340,\"cause\":\"render\",\"blame\":{\"invoker\":\"Response.json.then\",\"source\":\"https://chat.example/app.js\",\"scriptMs\":300}}]");
    has(&rec, "{\"metric\":\"perceivedTtft\",\"limit\":500,\"value\":810},{\"metric\":\"renderDelay.max\",\"limit\":300,\"value\":320}");
    has(&rec, "{\"metric\":\"stalls.count\",\"limit\":0,\"value\":1}");
    has(&rec, "\"userMarks\":{\"retrieval\":300,\"answer\":830},\"userStages\":{\"retrieval\":300,\"answer\":530}");
    assert!(!rec.contains("secret"));

    // Unobserved: paint fields null, stalls between arrivals; the record is queued at once.
    let h = s.begin("https://chat.example/v1/chat", "POST", 0.0, 0.0, &[5u8; 32]);
    s.get(h).unwrap().on_headers(1.0, 200, "text/event-stream", false);
    s.get(h).unwrap().on_chunk(10.0, chunk("a").as_bytes());
    assert!(s.end(h, 20.0, Outcome::Ok));
    let rec = finished(&mut s).remove(0);
    has(&rec, "\"ttfp\":null,\"perceivedTtft\":null,\"total\":10,\"perceivedTotal\":null,\"renderDelay\":null,\"buffered\":null,\"paintErrorMs\":null");

    // Hidden after the first paint: the first paint stands, the rest was not waited for; the
    // waiting record is finished by the hide.
    let h = s.begin("https://chat.example/v1/chat", "POST", 0.0, 0.0, &[6u8; 32]);
    let tl = s.get(h).unwrap();
    tl.observe(PAINT_OBSERVED);
    tl.on_headers(1.0, 200, "text/event-stream", false);
    tl.on_chunk(10.0, chunk("a").as_bytes());
    s.paint(h, 20.0 - 1.0, 20.0, 1, 1.0, "");
    s.get(h).unwrap().on_chunk(30.0, chunk("b").as_bytes());
    assert!(!s.end(h, 40.0, Outcome::Ok));
    s.page_hidden(45.0, false);
    let rec = finished(&mut s).remove(0);
    has(&rec, "\"firstPaint\":20,");
    has(&rec, "\"lastPaint\":null,");
    has(&rec, "\"perceivedTotal\":null,\"renderDelay\":null,\"buffered\":false,");
    has(&rec, "\"hidden\":true");
}

/// Markdown shrinks the rendered text unevenly; before a pause, the proportional mapping says
/// the screen is short of what arrived and charges the pause to those chars. The text probe
/// (the element's last chars, located in the answer's tail) gives the exact progress.
#[test]
fn text_probes_keep_markdown_pauses_out_of_render_delay() {
    let run = |probes: bool| {
        let mut s = session(&[]);
        let h = s.begin("https://chat.example/v1/chat", "POST", 0.0, 0.0, &[7u8; 32]);
        let tl = s.get(h).unwrap();
        tl.observe(PAINT_OBSERVED); // before headers: the tail starts with the decoder
        tl.on_headers(1.0, 200, "text/event-stream", false);
        let mut shown = String::new();
        let paint = |s: &mut Session, t: f64, shown: &str| {
            let probe = if probes { shown } else { "" };
            s.paint(h, t - 1.0, t, shown.encode_utf16().count() as u32, 1.0, probe)
        };
        s.get(h).unwrap().on_chunk(100.0, chunk("**Bold start here** ").as_bytes());
        shown.push_str("Bold start here ");
        paint(&mut s, 110.0, &shown);
        s.get(h).unwrap().on_chunk(130.0, chunk("plain words follow ").as_bytes());
        shown.push_str("plain words follow ");
        paint(&mut s, 140.0, &shown);
        // 600 ms of network silence, then the end.
        s.get(h).unwrap().on_chunk(760.0, chunk("end.").as_bytes());
        shown.push_str("end.");
        s.get(h).unwrap().on_chunk(761.0, b"data: [DONE]\n\n");
        s.end(h, 762.0, Outcome::Ok);
        assert!(paint(&mut s, 770.0, &shown));
        finished(&mut s).remove(0)
    };
    let proportional = run(false);
    has(&proportional, "\"max\":6"); // 640: the pause charged to a fraction of a char
    let probed = run(true);
    has(&probed, "\"renderDelay\":{\"first\":10,\"p50\":10,\"p95\":10,\"max\":10}");
}

/// An observed request that carried no answer text (tool calls only, an error, an abort before
/// the first token) has nothing to paint: its record is not held back.
#[test]
fn observed_request_without_answer_text_does_not_wait() {
    let mut s = session(&[]);
    let h = s.begin("https://chat.example/v1/chat", "POST", 0.0, 0.0, &[8u8; 32]);
    s.get(h).unwrap().observe(PAINT_OBSERVED);
    s.get(h).unwrap().on_headers(1.0, 200, "text/event-stream", false);
    s.get(h).unwrap().on_chunk(5.0, b"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0}]}}]}\n\ndata: [DONE]\n\n");
    assert!(s.end(h, 6.0, Outcome::Ok));
    let rec = finished(&mut s).remove(0);
    has(&rec, "\"firstPaint\":null");
}

/// Unobserved requests keep no paint state; an element observed mid-answer takes the text
/// that came before as one span, and paints from then on are matched against it.
#[test]
fn paint_tracking_starts_with_observation() {
    let mut s = session(&[]);
    let h = s.begin("https://chat.example/v1/chat", "POST", 0.0, 0.0, &[9u8; 32]);
    let tl = s.get(h).unwrap();
    tl.on_headers(1.0, 200, "text/event-stream", false);
    tl.on_chunk(100.0, chunk("abcde").as_bytes());
    tl.on_chunk(200.0, chunk("fghij").as_bytes());
    assert_eq!(tl.paint.result().first_paint, None);
    tl.observe(PAINT_OBSERVED); // the answer element shows up late
    tl.on_chunk(300.0, chunk("klmno").as_bytes());
    assert!(!s.paint(h, 310.0 - 1.0, 310.0, 15, 1.0, ""));
    s.get(h).unwrap().on_chunk(320.0, b"data: [DONE]\n\n");
    assert!(s.end(h, 321.0, Outcome::Ok));
    let rec = finished(&mut s).remove(0);
    // The first 10 chars spread over 100..200, all painted at 310: the first waited 210.
    has(&rec, "\"renderDelay\":{\"first\":210,");
    has(&rec, "\"max\":210}");
    has(&rec, "\"firstPaint\":310,");
}

#[test]
fn server_timing_that_could_not_be_seen_is_null_not_empty() {
    let mut s = session(&[]);
    // Seen and empty: the server sent none.
    let r = play(&mut s, 0.0, 1.0, &[(2.0, chunk("Hi"))], 3.0, Outcome::Ok);
    has(&r, "\"serverTiming\":[],");
    // Unseen (an EventSource without a Resource Timing entry): null, and no ttft split.
    let h = s.begin("https://chat.example/v1/stream", "GET", 0.0, 0.0, &[4u8; 32]);
    let tl = s.get(h).unwrap();
    tl.on_headers(1.0, 200, "text/event-stream", false);
    tl.on_chunk(2.0, chunk("Hi").as_bytes());
    tl.on_resource_timing(None);
    s.end(h, 3.0, Outcome::Ok);
    let r = &finished(&mut s)[0];
    has(r, "\"serverTiming\":null,");
    has(r, "\"ttftSplit\":null");
}

/// `paintErrorMs` is the brackets' half width plus the page clock's step (1 ms in Firefox and
/// WebKit): a time read from that clock is only known to within one step. The step is read off
/// the stamps the session is handed (core/clock.rs): whole milliseconds here, then 100 µs.
#[test]
fn paint_error_adds_the_clock_step() {
    for (start, want) in [(0.0, "\"paintErrorMs\":1.5,"), (0.3, "\"paintErrorMs\":0.6,")] {
        let mut s = Session::new(Config { page_origin: "https://chat.example".into(), ..Config::default() });
        let h = s.begin("https://chat.example/v1/chat", "POST", start, 0.0, &[5u8; 32]);
        let tl = s.get(h).unwrap();
        tl.observe(PAINT_OBSERVED);
        tl.on_headers(1.0, 200, "text/event-stream", false);
        tl.on_chunk(10.0, chunk("Hi").as_bytes());
        s.get(h).unwrap().on_chunk(11.0, b"data: [DONE]\n\n");
        assert!(!s.end(h, 12.0, Outcome::Ok));
        // Read at a whole ms: the clock's step stays 1 ms where the start is one too.
        assert!(s.paint(h, 19.0, 20.0, 2, 0.5, ""));
        has(&finished(&mut s)[0], want);
    }
}

/// Issue 27: a request whose answer text arrived before paint observation came in (made before
/// the core was in, never held back for it) reports no first paint — nor what is measured from
/// it — and says why, while what was seen later stands; one begun after is measured as usual.
#[test]
fn text_that_arrived_before_paint_observation_leaves_the_first_paint_unknown() {
    let mut s = Session::new(Config { page_origin: "https://chat.example".into(), ..Config::default() });
    let early = s.begin("https://chat.example/v1/chat", "POST", 0.0, 0.0, &[7u8; 32]);
    let tl = s.get(early).unwrap();
    tl.on_headers(1.0, 200, "text/event-stream", false);
    tl.on_chunk(10.0, chunk("Hi").as_bytes());
    s.paint_ready(30.0);
    s.get(early).unwrap().observe(PAINT_OBSERVED);
    s.get(early).unwrap().on_chunk(40.0, b"data: [DONE]\n\n");
    assert!(!s.end(early, 41.0, Outcome::Ok));
    assert!(s.paint(early, 50.0 - 0.5, 50.0, 2, 0.5, ""));
    let r = &finished(&mut s)[0];
    // Unknown: the first paint and what is measured from it.
    has(r, "\"firstPaint\":null,");
    has(r, "\"ttfp\":null,\"perceivedTtft\":null,");
    has(r, "\"renderDelay\":null,\"buffered\":null,");
    has(r, "\"unseen\":[\"firstPaint\"]");
    has(r, "\"ttft\":10,");
    // Seen from then on: the frame that showed the end of the answer.
    has(r, "\"lastPaint\":50,");
    has(r, "\"perceivedTotal\":50,");
    // Begun after paint came in: watched from its start.
    let late = s.begin("https://chat.example/v1/chat", "POST", 60.0, 0.0, &[8u8; 32]);
    let tl = s.get(late).unwrap();
    tl.observe(PAINT_OBSERVED);
    tl.on_headers(61.0, 200, "text/event-stream", false);
    tl.on_chunk(70.0, chunk("Hi").as_bytes());
    s.get(late).unwrap().on_chunk(71.0, b"data: [DONE]\n\n");
    assert!(!s.end(late, 72.0, Outcome::Ok));
    assert!(s.paint(late, 80.0 - 0.5, 80.0, 2, 0.5, ""));
    let r = &finished(&mut s)[0];
    has(r, "\"firstPaint\":20,");
    has(r, "\"unseen\":[]");
    // A second paint_ready (a second chunk load) changes nothing.
    s.paint_ready(1000.0);
}

/// Issue 27: the stalls of an answer whose text arrived before paint observation came in are
/// the gaps between its arrivals before it (the paints then could not be seen) and the gaps
/// between the paints seen after it — a stall under way when it came in counted once.
#[test]
fn stalls_before_paint_observation_come_from_the_arrivals() {
    let mut s = Session::new(Config { page_origin: "https://chat.example".into(), ..Config::default() });
    let h = s.begin("https://chat.example/v1/chat", "POST", 0.0, 0.0, &[9u8; 32]);
    let tl = s.get(h).unwrap();
    tl.on_headers(1.0, 200, "text/event-stream", false);
    tl.on_chunk(10.0, chunk("one").as_bytes());
    // A 400 ms network stall, under way when paint observation comes in (at 200).
    s.paint_ready(200.0);
    let tl = s.get(h).unwrap();
    tl.observe(PAINT_OBSERVED);
    tl.on_chunk(410.0, chunk(" two").as_bytes());
    assert!(!s.paint(h, 420.0 - 0.5, 420.0, 7, 0.5, ""));
    // Then text that waited 500 ms on screen: a render stall, seen between paints.
    s.get(h).unwrap().on_chunk(430.0, chunk(" three").as_bytes());
    s.get(h).unwrap().on_chunk(440.0, b"data: [DONE]\n\n");
    assert!(!s.end(h, 441.0, Outcome::Ok));
    assert!(s.paint(h, 930.0 - 0.5, 930.0, 13, 0.5, ""));
    let r = &finished(&mut s)[0];
    has(r, "\"unseen\":[\"firstPaint\"]");
    has(r, "\"stalls\":{\"count\":2,\"totalMs\":910,\"longestMs\":510,\"network\":1,\"render\":1}");
}

/// `delivery` and `upstreamBuffered` through the timeline's inputs: fetch reads with the time
/// the app asked for them (its own time is no silence of the network), a non-content read in
/// between, and EventSource messages dispatched together (one arrival).
#[test]
fn delivery_through_the_timeline() {
    let mut s = session(&[]);
    let events = |n: usize, from: usize| -> String { (from..from + n).map(|i| chunk(&format!("t{i} "))).collect() };
    let run = |s: &mut Session, reads: &[(f64, f64, String)]| -> String {
        let h = s.begin("https://chat.example/v1/chat", "POST", 0.0, 0.0, &[6u8; 32]);
        s.get(h).unwrap().on_headers(5.0, 200, "text/event-stream", false);
        for (asked, t, body) in reads {
            let tl = s.get(h).unwrap();
            tl.on_asked(*asked);
            tl.on_chunk(*t, body.as_bytes());
        }
        s.end(h, 2000.0, Outcome::Ok);
        finished(s).remove(0)
    };
    // Bursts of 9 events every 300 ms, read by an app that asks at once: buffered upstream.
    let reads: Vec<_> = (1..=4).map(|i| (5.0 + 300.0 * (i - 1) as f64, 300.0 * i as f64, events(9, 9 * i))).collect();
    let r = run(&mut s, &reads);
    has(&r, "\"delivery\":{\"arrivals\":4,\"eventsPerArrival\":{\"p50\":9,\"max\":9},\"largestArrivalShare\":0.252},\"upstreamBuffered\":true,\"upstreamHints\":[],");
    // The same reads, but the app asked for each only 290 ms after the previous one (a
    // blocking render in its read loop): its own bursts.
    let reads: Vec<_> = (1..=4).map(|i| (300.0 * i as f64 - 10.0, 300.0 * i as f64, events(9, 9 * i))).collect();
    has(&run(&mut s, &reads), "\"upstreamBuffered\":false,");
    // A keep-alive comment in between resets the app's clock: the app asked promptly after it,
    // so the silence since the previous text (300 ms) counts.
    let reads = vec![(5.0, 300.0, events(9, 0)), (300.0, 450.0, ": ping\n\n".to_string()), (450.0, 600.0, events(9, 9))];
    has(&run(&mut s, &reads), "\"upstreamBuffered\":true,");

    // EventSource: no headers to read (hints null); messages within 2 ms are one arrival.
    let h = s.begin_eventsource("https://chat.example/v1/stream", 0.0, 0.0, &[7u8; 32], &[], false);
    let tl = s.get(h).unwrap();
    tl.on_message(5.0, "", "", "");
    for i in 0..10 {
        tl.on_message(700.0 + 0.1 * i as f64, "message", &format!("{{\"choices\":[{{\"delta\":{{\"content\":\"w{i}\"}}}}]}}"), "");
    }
    tl.on_message(701.5, "message", "[DONE]", "");
    tl.on_resource_timing(None);
    s.end(h, 702.0, Outcome::Error);
    has(&finished(&mut s)[0], "\"delivery\":{\"arrivals\":1,\"eventsPerArrival\":{\"p50\":10,\"max\":10},\"largestArrivalShare\":1},\"upstreamBuffered\":true,\"upstreamHints\":null,");
}
