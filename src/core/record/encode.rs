//! The wire record, version 1: one finished `Timeline` → one JSON object. The keys and their
//! types are the contract with js/index.d.ts `RumRecord` and the collector (tests/wire_contract.rs
//! checks every key against both declarations).
//!
//! Key names are the contract; never add answer or prompt text here (only counts and times).

use alloc::string::String;
use crate::core::config::Config;
use crate::core::util::hex::push_hex;
use crate::core::util::json_write::JsonWriter;
use crate::core::record::budgets::metric_value;
use crate::core::record::genai::{model_info, CHUNK_BUCKETS_S};
use crate::core::record::seen::Seen;
use crate::core::request::kinds::{paint_source_name, UNSEEN_END, UNSEEN_FIRST_PAINT};
use crate::core::request::kinds::Via;
use crate::core::request::timeline::Timeline;

fn mark(w: &mut JsonWriter, tl: &Timeline, name: &str, t: Option<f64>) {
    w.key(name);
    w.opt_ms(tl.rel(t));
}

/// The `serverTiming` array: the response's entries, in order.
fn server_timing(tl: &Timeline, w: &mut JsonWriter) {
    w.begin_array();
    for e in &tl.server_timing {
        w.begin_object();
        w.key("name");
        w.str(&e.name);
        w.key("dur");
        w.opt_ms(e.dur);
        w.key("desc");
        match &e.desc {
            Some(d) => w.str(d),
            None => w.null(),
        }
        w.end_object();
    }
    w.end_array();
}

/// Encodes the record. `cfg` supplies the budgets and how URLs are recorded; `clock_step_ms`
/// is the page clock's step (`clock::ClockGrain`), part of every paint time's error.
pub fn encode(tl: &Timeline, cfg: &Config, clock_step_ms: f64, out: &mut JsonWriter) {
    let id = &tl.ident;
    let seen = Seen::of(tl);
    let w = out;
    w.begin_object();
    w.key("id");
    w.str(&id.id);
    w.key("traceId");
    let mut hex = String::with_capacity(32);
    push_hex(&mut hex, &id.trace.trace_id);
    w.str(&hex);
    w.key("spanId");
    hex.clear();
    push_hex(&mut hex, &id.trace.span_id);
    w.str(&hex);
    w.key("traceSource");
    w.str(id.trace_source.as_str());
    w.key("sampled");
    w.bool(id.trace.sampled());
    w.key("url");
    w.str(&cfg.record_url(&id.url, id.route.as_deref()));
    w.key("method");
    w.str(&id.method);
    w.key("transport");
    w.str(tl.via.as_str());
    w.key("reconnectOf");
    match &tl.reconnect_of {
        Some(r) => w.str(r),
        None => w.null(),
    }
    w.key("status");
    w.uint(tl.status as u64);
    w.key("outcome");
    w.str(tl.outcome.map(|o| o.as_str()).unwrap_or("partial"));
    w.key("format");
    w.str(tl.format());
    // Which model answered, and whose it is (record/genai.rs).
    let g = model_info(tl, cfg);
    for (k, v) in [("model", g.model), ("modelSource", g.source), ("provider", g.provider)] {
        w.key(k);
        match v {
            Some(v) => w.str(v),
            None => w.null(),
        }
    }
    w.key("understood");
    w.bool(tl.understood());
    w.key("complete");
    w.bool(tl.complete());
    w.key("startEpochMs");
    w.ms(id.start_epoch_ms);

    w.key("marks");
    w.begin_object();
    mark(w, tl, "interaction", tl.interaction);
    w.key("start");
    w.uint(0);
    mark(w, tl, "headers", tl.headers);
    mark(w, tl, "firstByte", tl.first_byte);
    mark(w, tl, "firstReasoning", tl.first_reasoning);
    mark(w, tl, "firstToken", tl.first_token);
    mark(w, tl, "firstPaint", seen.paint.first_paint);
    mark(w, tl, "lastToken", tl.last_token);
    mark(w, tl, "lastPaint", seen.paint.last_paint);
    mark(w, tl, "end", tl.end);
    w.end_object();

    w.key("ttft");
    w.opt_ms(tl.ttft());
    // Paint metrics: null unless an answer element was observed (and painted while visible).
    w.key("ttfp");
    w.opt_ms(seen.ttfp());
    w.key("perceivedTtft");
    w.opt_ms(seen.perceived_ttft());
    w.key("total");
    w.opt_ms(tl.total());
    w.key("perceivedTotal");
    w.opt_ms(seen.perceived_total());
    w.key("renderDelay");
    match seen.paint.render_delay {
        Some(d) => {
            w.begin_object();
            for (k, v) in [("first", d.first), ("p50", d.p50), ("p95", d.p95), ("max", d.max)] {
                w.key(k);
                w.ms(v);
            }
            w.end_object();
        }
        None => w.null(),
    }
    w.key("buffered");
    match seen.paint.buffered {
        Some(b) => w.bool(b),
        None => w.null(),
    }
    // The paint brackets' error bounds (from clock readings), plus the clock's own step.
    w.key("paintErrorMs");
    w.opt_ms(seen.paint.paint_error_ms.map(|e| e + clock_step_ms));
    w.key("paintSource");
    w.str(paint_source_name(tl.paint_source));

    w.key("itl");
    w.begin_object();
    w.key("n");
    w.uint(tl.itl.count() as u64);
    for (k, q) in [("p50", 0.5), ("p95", 0.95), ("p99", 0.99)] {
        w.key(k);
        w.opt_ms(tl.itl.quantile(q));
    }
    w.key("max");
    w.opt_ms(tl.itl.max());
    // The gaps per GenAI bucket (`CHUNK_BUCKETS_S`, then above the last): what the collector's
    // `gen_ai_client_operation_time_per_output_chunk_seconds` observes, one per gap.
    w.key("buckets");
    w.begin_array();
    // The bounds are 10 ms · 2^i (a test holds the table to it): doubled here rather than
    // read from the table, which would put 112 bytes of constants in the shipped wasm.
    let (mut below, mut bound_ms) = (0, 10.0);
    for _ in 0..CHUNK_BUCKETS_S.len() {
        let c = tl.itl.count_le(bound_ms);
        w.uint((c - below) as u64);
        below = c;
        bound_ms *= 2.0;
    }
    w.uint((tl.itl.count() - below) as u64);
    w.end_array();
    w.end_object();

    w.key("tpot");
    w.opt_ms(tl.tpot());

    let s = seen.stalls();
    w.key("stalls");
    w.begin_object();
    w.key("count");
    w.uint(s.count as u64);
    w.key("totalMs");
    w.ms(s.total_ms);
    w.key("longestMs");
    w.ms(s.longest_ms);
    w.key("network");
    w.uint(s.network as u64);
    w.key("render");
    w.uint(s.render as u64);
    w.end_object();

    let (tokens, from_usage) = tl.output_tokens();
    w.key("outputTokens");
    w.uint(tokens as u64);
    w.key("outputTokensSource");
    w.str(if from_usage { "usage" } else { "events" });
    w.key("chars");
    w.uint(tl.content.content_chars as u64);
    w.key("reasoningChars");
    w.uint(tl.content.reasoning_chars as u64);
    w.key("contentEvents");
    w.uint(tl.content.content_events as u64);
    w.key("chunks");
    w.uint(tl.chunks as u64);
    w.key("bytes");
    w.uint(tl.bytes);

    // How the text reached the page, and whether something upstream held it back
    // (request/delivery.rs defines the rule; request/hints.rs the hints).
    let d = tl.delivery.summary();
    w.key("delivery");
    w.begin_object();
    w.key("arrivals");
    w.uint(d.arrivals as u64);
    w.key("eventsPerArrival");
    w.begin_object();
    for (k, v) in [("p50", d.events_p50), ("max", d.events_max)] {
        w.key(k);
        match v {
            Some(n) => w.uint(n as u64),
            None => w.null(),
        }
    }
    w.end_object();
    w.key("largestArrivalShare");
    // A fraction: three decimals, as ms are written.
    w.opt_ms(d.largest_share);
    w.end_object();
    w.key("upstreamBuffered");
    match d.upstream_buffered {
        Some(b) => w.bool(b),
        None => w.null(),
    }
    // Headers are invisible to an EventSource, and absent without a response: null, "could
    // not be seen", as opposed to [] ("none of them").
    w.key("upstreamHints");
    if tl.via == Via::Fetch && tl.headers.is_some() {
        w.begin_array();
        for h in tl.hints.iter() {
            w.str(h);
        }
        w.end_array();
    } else {
        w.null();
    }

    w.key("serverTiming");
    if !tl.server_timing_seen {
        w.null();
    } else {
        server_timing(tl, w);
    }

    // TTFT split into the server's stages and everything else (network, TLS, proxies, client).
    w.key("ttftSplit");
    match (tl.ttft(), tl.server_ms()) {
        (Some(ttft), Some(server)) => {
            w.begin_object();
            w.key("server");
            w.ms(server);
            w.key("network");
            w.ms(ttft - server);
            w.end_object();
        }
        _ => w.null(),
    }

    w.key("correlation");
    w.begin_object();
    for (k, v) in &tl.correlation {
        w.key_escaped(k);
        w.str(v);
    }
    w.end_object();

    w.key("stallList");
    w.begin_array();
    for st in &s.list {
        w.begin_object();
        w.key("start");
        w.ms(st.start);
        w.key("dur");
        w.ms(st.dur);
        w.key("cause");
        w.str(st.cause.as_str());
        w.key("blame");
        match seen.blame_for(st) {
            Some(b) => {
                w.begin_object();
                w.key("invoker");
                w.str(&b.invoker);
                w.key("source");
                w.str(&b.source);
                w.key("scriptMs");
                w.ms(b.script_ms);
                w.end_object();
            }
            None => w.null(),
        }
        w.end_object();
    }
    w.end_array();

    w.key("budgetBreaches");
    w.begin_array();
    for b in &cfg.budgets {
        if let Some(v) = metric_value(tl, &seen, &b.metric) {
            if v > b.limit {
                w.begin_object();
                w.key("metric");
                w.str(&b.metric);
                w.key("limit");
                w.ms(b.limit);
                w.key("value");
                w.ms(v);
                w.end_object();
            }
        }
    }
    w.end_array();

    w.key("hidden");
    w.bool(tl.hidden());
    // What the SDK could not see (issue 27: requests made before the core was in are passed to
    // the app at once, never held for it): see kinds::UNSEEN_ALL.
    w.key("unseen");
    w.begin_array();
    if tl.observed && tl.first_paint_unseen() {
        w.str(UNSEEN_FIRST_PAINT);
    }
    if tl.unseen_end {
        w.str(UNSEEN_END);
    }
    w.end_array();
    w.key("userMarks");
    w.begin_object();
    for (k, t) in &tl.user_marks {
        w.key_escaped(k);
        w.ms(t - tl.start);
    }
    w.end_object();
    // Per-stage durations: each mark minus the previous one in time (the first: minus start),
    // so `{retrieval: 120, rerank: 30}` reads as the stages that ended at those marks.
    w.key("userStages");
    w.begin_object();
    let mut order: alloc::vec::Vec<&(String, f64)> = alloc::vec::Vec::with_capacity(tl.user_marks.len());
    for m in &tl.user_marks {
        // ≤ 32 marks: insertion keeps them in time order (stable for equal times).
        let at = order.iter().position(|o| o.1 > m.1).unwrap_or(order.len());
        order.insert(at, m);
    }
    let mut prev = tl.start;
    for (k, t) in order {
        w.key_escaped(k);
        w.ms(t - prev);
        prev = *t;
    }
    w.end_object();
    w.end_object();
}
