//! The wire contract, checked from both ends: every record the core encodes over a varied set
//! of sessions is read with serde into a strict mirror of `RumRecord` (unknown keys, missing
//! keys, wrong types and unknown enum values all fail), and the mirror and the TypeScript
//! declarations in js/index.d.ts list the same keys and the same string values.
//!
//! The mirror is the contract written once more, on purpose: a key added to the encoder and
//! not to js/index.d.ts (or the other way round) fails here.

mod common;

use common::{chunk, finished, outgoing};
use llm_rum::core::config::{Budget, Config, ModelRule};
use llm_rum::core::request::kinds::{Outcome as End, PAINT_AUTO, PAINT_NONE, PAINT_OBSERVED};
use llm_rum::core::session::{Handle, Session};
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

// ---- the mirror of js/index.d.ts (names and string values as the .d.ts spells them) ----

/// A member that must be present, possibly `null` (a plain `Option` would accept a missing key).
fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    Option::deserialize(d)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[allow(dead_code)]
struct RumRecord {
    id: String,
    trace_id: String,
    span_id: String,
    trace_source: TraceSource,
    sampled: bool,
    url: String,
    method: String,
    transport: Transport,
    #[serde(deserialize_with = "nullable")]
    reconnect_of: Option<String>,
    status: u16,
    outcome: Outcome,
    format: Format,
    #[serde(deserialize_with = "nullable")]
    model: Option<String>,
    #[serde(deserialize_with = "nullable")]
    model_source: Option<ModelSource>,
    #[serde(deserialize_with = "nullable")]
    provider: Option<String>,
    understood: bool,
    complete: bool,
    start_epoch_ms: f64,
    marks: Marks,
    #[serde(deserialize_with = "nullable")]
    ttft: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    ttfp: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    perceived_ttft: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    total: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    perceived_total: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    render_delay: Option<Distribution>,
    itl: Itl,
    #[serde(deserialize_with = "nullable")]
    tpot: Option<f64>,
    stalls: Stalls,
    #[serde(deserialize_with = "nullable")]
    buffered: Option<bool>,
    #[serde(deserialize_with = "nullable")]
    paint_error_ms: Option<f64>,
    paint_source: PaintSource,
    output_tokens: u32,
    output_tokens_source: OutputTokensSource,
    chars: u32,
    reasoning_chars: u32,
    content_events: u32,
    chunks: u32,
    bytes: u64,
    delivery: Delivery,
    #[serde(deserialize_with = "nullable")]
    upstream_buffered: Option<bool>,
    #[serde(deserialize_with = "nullable")]
    upstream_hints: Option<Vec<UpstreamHint>>,
    #[serde(deserialize_with = "nullable")]
    server_timing: Option<Vec<ServerTimingEntry>>,
    #[serde(deserialize_with = "nullable")]
    ttft_split: Option<TtftSplit>,
    correlation: BTreeMap<String, String>,
    stall_list: Vec<Stall>,
    budget_breaches: Vec<BudgetBreach>,
    hidden: bool,
    unseen: Vec<Unseen>,
    user_marks: BTreeMap<String, f64>,
    user_stages: BTreeMap<String, f64>,
}

/// `start: 0` in the .d.ts: the literal zero.
#[derive(Debug)]
struct Zero;

impl<'de> Deserialize<'de> for Zero {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Zero, D::Error> {
        match f64::deserialize(d)? {
            0.0 => Ok(Zero),
            v => Err(de::Error::custom(format!("marks.start is {v}, not 0"))),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[allow(dead_code)]
struct Marks {
    #[serde(deserialize_with = "nullable")]
    interaction: Option<f64>,
    start: Zero,
    #[serde(deserialize_with = "nullable")]
    headers: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    first_byte: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    first_reasoning: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    first_token: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    first_paint: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    last_token: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    last_paint: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    end: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Distribution {
    #[serde(deserialize_with = "nullable")]
    first: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    p50: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    p95: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    max: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Itl {
    n: u32,
    #[serde(deserialize_with = "nullable")]
    p50: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    p95: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    p99: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    max: Option<f64>,
    buckets: [u32; 15],
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[allow(dead_code)]
struct Delivery {
    arrivals: u32,
    events_per_arrival: EventsPerArrival,
    #[serde(deserialize_with = "nullable")]
    largest_arrival_share: Option<f64>,
}

/// `Delivery.eventsPerArrival`, declared inline in the .d.ts.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct EventsPerArrival {
    #[serde(deserialize_with = "nullable")]
    p50: Option<u32>,
    #[serde(deserialize_with = "nullable")]
    max: Option<u32>,
}

/// `UpstreamHint` in the .d.ts (a type alias, read like a member's union).
#[derive(Debug, Deserialize, PartialEq, Eq, PartialOrd, Ord, Clone, Copy)]
enum UpstreamHint {
    #[serde(rename = "content-encoding: gzip")]
    Gzip,
    #[serde(rename = "content-encoding: br")]
    Br,
    #[serde(rename = "content-encoding: deflate")]
    Deflate,
    #[serde(rename = "content-encoding: zstd")]
    Zstd,
    #[serde(rename = "content-encoding: other")]
    OtherEncoding,
    #[serde(rename = "x-accel-buffering: no")]
    AccelNo,
    #[serde(rename = "x-accel-buffering: yes")]
    AccelYes,
    #[serde(rename = "via")]
    Via,
    #[serde(rename = "cf-ray")]
    CfRay,
    #[serde(rename = "x-amz-cf-id")]
    AmzCfId,
    #[serde(rename = "x-served-by")]
    ServedBy,
    #[serde(rename = "x-cache")]
    Cache,
    #[serde(rename = "x-vercel-id")]
    VercelId,
    #[serde(rename = "fly-request-id")]
    FlyRequestId,
    #[serde(rename = "x-azure-ref")]
    AzureRef,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[allow(dead_code)]
struct Stalls {
    count: u32,
    total_ms: f64,
    longest_ms: f64,
    network: u32,
    render: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Stall {
    start: f64,
    dur: f64,
    cause: Cause,
    #[serde(deserialize_with = "nullable")]
    blame: Option<Blame>,
}

/// `Stall.blame`, declared inline in the .d.ts.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[allow(dead_code)]
struct Blame {
    invoker: String,
    source: String,
    script_ms: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct ServerTimingEntry {
    name: String,
    #[serde(deserialize_with = "nullable")]
    dur: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    desc: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct BudgetBreach {
    metric: String,
    limit: f64,
    value: f64,
}

/// `RumRecord.ttftSplit`, declared inline in the .d.ts.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct TtftSplit {
    server: f64,
    network: f64,
}

#[derive(Debug, Deserialize, PartialEq, Eq, PartialOrd, Ord, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum TraceSource {
    Propagated,
    App,
    Server,
    None,
}

#[derive(Debug, Deserialize, PartialEq, Eq, PartialOrd, Ord, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum Transport {
    Fetch,
    EventSource,
}

#[derive(Debug, Deserialize, PartialEq, Eq, PartialOrd, Ord, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum Outcome {
    Ok,
    Aborted,
    Error,
    Partial,
}

#[derive(Debug, Deserialize, PartialEq, Eq, PartialOrd, Ord, Clone, Copy)]
#[serde(rename_all = "kebab-case")]
enum Format {
    OpenaiChat,
    OpenaiResponses,
    Anthropic,
    AiSdkUi,
    Ndjson,
    Text,
    Unknown,
}

#[derive(Debug, Deserialize, PartialEq, Eq, PartialOrd, Ord, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum ModelSource {
    Stream,
    Config,
}

#[derive(Debug, Deserialize, PartialEq, Eq, PartialOrd, Ord, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum PaintSource {
    Observed,
    Auto,
    None,
}

#[derive(Debug, Deserialize, PartialEq, Eq, PartialOrd, Ord, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum OutputTokensSource {
    Usage,
    Events,
}

#[derive(Debug, Deserialize, PartialEq, Eq, PartialOrd, Ord, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum Cause {
    Network,
    Render,
}

// ---- the names a mirror type declares, as serde sees them ----

/// An error that carries what a `Deserialize` impl asked for: a struct's field names or an
/// enum's variant names (serde passes both as `&'static [&'static str]`).
#[derive(Debug)]
struct Asked(Option<&'static [&'static str]>);

impl std::fmt::Display for Asked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl std::error::Error for Asked {}

impl de::Error for Asked {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Asked(None)
    }
}

struct Probe;

impl<'de> Deserializer<'de> for Probe {
    type Error = Asked;
    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Asked> {
        Err(Asked(None))
    }
    fn deserialize_struct<V: Visitor<'de>>(self, _: &'static str, fields: &'static [&'static str], _: V) -> Result<V::Value, Asked> {
        Err(Asked(Some(fields)))
    }
    fn deserialize_enum<V: Visitor<'de>>(self, _: &'static str, variants: &'static [&'static str], _: V) -> Result<V::Value, Asked> {
        Err(Asked(Some(variants)))
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map identifier ignored_any
    }
}

fn names<T: for<'de> Deserialize<'de>>() -> BTreeSet<String> {
    match T::deserialize(Probe) {
        Err(Asked(Some(names))) => names.iter().map(|s| s.to_string()).collect(),
        Err(e) => panic!("not a struct or enum: {e}"),
        Ok(_) => unreachable!("the probe never yields a value"),
    }
}

// ---- js/index.d.ts, read as text ----

/// One declared member: its name and its type as written.
#[derive(Debug, Clone)]
struct Member {
    name: String,
    ty: String,
}

/// `interface Name { member: type; … }` blocks, plus the inline object types of members
/// (`Stall.blame: { invoker: string; … } | null` is declared as `Stall.blame`).
fn declarations() -> BTreeMap<String, Vec<Member>> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/js/index.d.ts")).unwrap();
    let mut out: BTreeMap<String, Vec<Member>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("export interface ") {
            current = Some(rest.trim_end_matches(" {").trim().to_string());
            continue;
        }
        if line == "}" {
            current = None;
            continue;
        }
        let Some(iface) = &current else { continue };
        // Members are indented two spaces; comments start with `/**`, `*` or `//`.
        let Some(decl) = line.strip_prefix("  ").filter(|l| !l.starts_with(' ') && !l.starts_with('/') && !l.starts_with('*')) else {
            continue;
        };
        let Some((name, ty)) = decl.split_once(':') else { continue };
        let name = name.trim_end_matches('?').trim().to_string();
        let ty = ty.trim().trim_end_matches(';').trim().to_string();
        if let Some(inline) = ty.strip_prefix('{').and_then(|t| t.split_once('}')).map(|(body, _)| body) {
            let members = inline
                .split(';')
                .filter_map(|m| m.split_once(':'))
                .map(|(n, t)| Member { name: n.trim().to_string(), ty: t.trim().to_string() })
                .collect();
            out.insert(format!("{iface}.{name}"), members);
        }
        out.entry(iface.clone()).or_default().push(Member { name, ty });
    }
    out
}

/// The string literals of `export type Name = 'a' | 'b' …;` (one or several lines).
fn type_literals(name: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/js/index.d.ts")).unwrap();
    let head = format!("export type {name} =");
    let at = text.find(&head).unwrap_or_else(|| panic!("js/index.d.ts declares no type {name}"));
    let body = &text[at + head.len()..];
    let body = &body[..body.find(';').unwrap()];
    body.split('|').map(|s| s.trim().trim_matches('\'').to_string()).filter(|s| !s.is_empty()).collect()
}

fn keys(decl: &BTreeMap<String, Vec<Member>>, name: &str) -> BTreeSet<String> {
    decl.get(name).unwrap_or_else(|| panic!("js/index.d.ts declares no {name}")).iter().map(|m| m.name.clone()).collect()
}

/// `Unseen` in the .d.ts (a type alias).
#[derive(Debug, Deserialize, PartialEq, Eq, PartialOrd, Ord, Clone, Copy)]
#[serde(rename_all = "camelCase")]
enum Unseen {
    FirstPaint,
    End,
}

/// The string literals of a union type: `'ok' | 'aborted'` → {ok, aborted} (`| null` is not one).
fn literals(decl: &BTreeMap<String, Vec<Member>>, iface: &str, member: &str) -> BTreeSet<String> {
    let ty = &decl[iface].iter().find(|m| m.name == member).unwrap_or_else(|| panic!("{iface}.{member}")).ty;
    ty.split('|').map(|s| s.trim()).filter(|s| *s != "null").map(|s| s.trim_matches('\'').to_string()).collect()
}

#[test]
fn the_mirror_and_index_d_ts_declare_the_same_keys_and_values() {
    let d = declarations();
    for (iface, mirror) in [
        ("RumRecord", names::<RumRecord>()),
        ("Marks", names::<Marks>()),
        ("Distribution", names::<Distribution>()),
        ("Itl", names::<Itl>()),
        ("Stalls", names::<Stalls>()),
        ("Stall", names::<Stall>()),
        ("Stall.blame", names::<Blame>()),
        ("ServerTimingEntry", names::<ServerTimingEntry>()),
        ("BudgetBreach", names::<BudgetBreach>()),
        ("RumRecord.ttftSplit", names::<TtftSplit>()),
        ("Delivery", names::<Delivery>()),
        ("Delivery.eventsPerArrival", names::<EventsPerArrival>()),
    ] {
        assert_eq!(keys(&d, iface), mirror, "{iface}: js/index.d.ts vs the mirror");
    }
    // The hints: the .d.ts, the mirror and the core's own list name the same set.
    let core: BTreeSet<String> = llm_rum::core::request::hints::ALL.iter().map(|h| h.to_string()).collect();
    assert_eq!(type_literals("UpstreamHint"), names::<UpstreamHint>(), "UpstreamHint: js/index.d.ts vs the mirror");
    assert_eq!(core, names::<UpstreamHint>(), "UpstreamHint: the core vs the mirror");
    let core: BTreeSet<String> = llm_rum::core::request::kinds::UNSEEN_ALL.iter().map(|h| h.to_string()).collect();
    assert_eq!(type_literals("Unseen"), names::<Unseen>(), "Unseen: js/index.d.ts vs the mirror");
    assert_eq!(core, names::<Unseen>(), "Unseen: the core vs the mirror");
    for (iface, member, mirror) in [
        ("RumRecord", "traceSource", names::<TraceSource>()),
        ("RumRecord", "transport", names::<Transport>()),
        ("RumRecord", "outcome", names::<Outcome>()),
        ("RumRecord", "format", names::<Format>()),
        ("RumRecord", "outputTokensSource", names::<OutputTokensSource>()),
        ("RumRecord", "paintSource", names::<PaintSource>()),
        ("RumRecord", "modelSource", names::<ModelSource>()),
        ("Stall", "cause", names::<Cause>()),
    ] {
        assert_eq!(literals(&d, iface, member), mirror, "{iface}.{member}: js/index.d.ts vs the mirror");
    }
    // The beacon's own members (`reason` among them) are written by the facade's queue
    // (js/deliver/queue.js): tests/e2e/queue.spec.js checks them against these declarations.
}

/// The codes the facade hands the core (js/codes.js) are the ones the core reads: how a
/// request ended (`Outcome::from_code`, `FORGET`) and how its answer element was known.
#[test]
fn the_facade_passes_the_cores_codes() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/js/codes.js")).unwrap();
    let code = |name: &str| -> u32 {
        let decl = text.lines().find_map(|l| l.strip_prefix(&format!("export const {name} = ")));
        decl.unwrap_or_else(|| panic!("js/codes.js declares no {name}")).trim_end_matches(';').parse().unwrap()
    };
    assert_eq!(End::from_code(code("OK")), End::Ok);
    assert_eq!(End::from_code(code("ABORTED")), End::Aborted);
    assert_eq!(End::from_code(code("ERROR")), End::Error);
    assert_eq!(code("FORGET"), llm_rum::core::request::kinds::FORGET);
    assert_eq!(code("UNSEEN"), llm_rum::core::request::kinds::UNSEEN_REST);
    assert_eq!((code("PAINT_NONE"), code("PAINT_OBSERVED"), code("PAINT_AUTO")), (PAINT_NONE, PAINT_OBSERVED, PAINT_AUTO));
}

// ---- a varied set of sessions ----

const ORIGIN: &str = "https://chat.example";
const TP: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

fn session(budgets: &[(&str, f64)]) -> Session {
    Session::new(Config {
        page_origin: ORIGIN.into(),
        propagate: vec!["https://api.example".into()],
        budgets: budgets.iter().map(|(m, l)| Budget { metric: (*m).into(), limit: *l }).collect(),
        models: vec![ModelRule { matches: "/api/chat".into(), model: Some("app-model".into()), provider: Some("app-backend".into()) }],
        ..Config::default()
    })
}

fn random(n: u8) -> [u8; 32] {
    [n; 32]
}

/// A fetch with `content_type` and `body` in chunks at 100 ms + 30 ms steps, ended with `end`.
fn fetch(s: &mut Session, n: u8, url: &str, status: u16, content_type: &str, chunks: &[&[u8]], end: End) -> Handle {
    let h = s.begin(url, "post", 1000.0, 1.7e12, &random(n));
    let tl = s.get(h).unwrap();
    tl.on_headers(1050.0, status, content_type, false);
    for (i, c) in chunks.iter().enumerate() {
        s.get(h).unwrap().on_chunk(1100.0 + 30.0 * i as f64, c);
    }
    s.end(h, 1100.0 + 30.0 * chunks.len() as f64, end);
    h
}

fn records() -> Vec<String> {
    let mut out = Vec::new();
    let mut s = session(&[("ttft", 10.0), ("itl.p95", 1.0), ("renderDelay.max", 1.0), ("stalls.count", 0.0), ("perceivedTtft", 1.0)]);
    let openai = [chunk("Hello").into_bytes(), chunk(" world").into_bytes(), b"data: {\"choices\":[],\"usage\":{\"completion_tokens\":3}}\n\ndata: [DONE]\n\n".to_vec()];
    let openai: Vec<&[u8]> = openai.iter().map(|c| c.as_slice()).collect();

    // ok, with Server-Timing (with and without desc), correlation, a server trace, marks, a
    // network stall, an interaction and budget breaches.
    let h = s.begin("https://other.example/v1/chat/completions?user=secret", "post", 1000.0, 1.7e12, &random(1));
    let tl = s.get(h).unwrap();
    tl.interaction = Some(900.0);
    tl.on_headers(1040.0, 200, "text/event-stream", false);
    tl.on_server_timing(&["queue;dur=12.5, prefill;dur=80;desc=\"gpu \\\"a\\\"\", cache;desc=hit, trace;desc=\"", TP, "\""].concat());
    tl.on_correlation("x-request-id", "req-42");
    tl.on_user_mark("retrieval", 1020.0);
    tl.on_chunk(1100.0, openai[0]);
    tl.on_chunk(1500.0, openai[1]);
    tl.on_chunk(1510.0, openai[2]);
    s.end(h, 1511.0, End::Ok);
    // aborted, an HTTP error, a request with no response at all.
    fetch(&mut s, 2, "https://chat.example/v1/chat", 200, "text/event-stream", &openai[..1], End::Aborted);
    fetch(&mut s, 3, "https://chat.example/v1/chat", 503, "text/event-stream", &[], End::Ok);
    let h = s.begin("https://chat.example/v1/chat", "get", 0.0, 1.7e12, &random(4));
    s.end(h, 5.0, End::Error);
    // Every format, and a line too long for the parser (understood: false).
    let anthropic = b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude-sonnet-4-5\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hm\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n\
event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{},\"usage\":{\"output_tokens\":2}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    fetch(&mut s, 5, "https://chat.example/v1/messages", 200, "text/event-stream", &[anthropic], End::Ok);
    let responses = b"data: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"output_tokens\":1}}}\n\n";
    fetch(&mut s, 6, "https://chat.example/v1/responses", 200, "text/event-stream", &[responses], End::Ok);
    let ai_sdk = b"data: {\"type\":\"text-delta\",\"id\":\"t\",\"delta\":\"Hi\"}\n\ndata: {\"type\":\"finish\"}\n\n";
    fetch(&mut s, 7, "https://chat.example/api/chat", 200, "text/event-stream", &[ai_sdk], End::Ok);
    fetch(&mut s, 8, "https://chat.example/api/generate", 200, "application/x-ndjson", &[b"{\"response\":\"Hi\",\"done\":false}\n{\"done\":true,\"eval_count\":1}\n"], End::Ok);
    fetch(&mut s, 9, "https://chat.example/text", 200, "text/plain", &[b"plain ", b"text"], End::Ok);
    fetch(&mut s, 10, "https://chat.example/x", 200, "text/event-stream", &[b"data: not json\n\n"], End::Error);
    let long = [b"data: ".as_slice(), &vec![b'x'; 2 << 20]].concat();
    fetch(&mut s, 11, "https://chat.example/long", 200, "text/event-stream", &[long.as_slice()], End::Ok);
    // The app's own traceparent; a cross-origin allow-listed request.
    let h = s.begin("https://chat.example/v1/chat", "post", 0.0, 1.7e12, &random(12));
    s.adopt_traceparent(h, TP);
    s.end(h, 1.0, End::Error);
    fetch(&mut s, 13, "https://api.example/v1/chat", 200, "text/event-stream", &openai, End::Ok);
    // A provider's own API host, its stream naming the model.
    let named = b"data: {\"model\":\"gpt-4o-2024-08-06\",\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [DONE]\n\n";
    fetch(&mut s, 21, "https://api.openai.com/v1/chat/completions", 200, "text/event-stream", &[named], End::Ok);
    // Behind a buffering, compressing proxy: the answer in one read at the end (upstream
    // buffered, with hints); the same length streamed (not buffered).
    let many: String = (0..12).map(|i| chunk(&format!("w{i} "))).collect();
    let h = s.begin("https://chat.example/v1/chat", "post", 1000.0, 1.7e12, &random(19));
    let tl = s.get(h).unwrap();
    tl.on_headers(1600.0, 200, "text/event-stream", false);
    for (name, value) in [("content-encoding", "gzip"), ("via", "1.1 edge"), ("x-accel-buffering", "no")] {
        tl.hints.note(name, value);
    }
    tl.on_asked(1600.0);
    tl.on_chunk(1600.5, many.as_bytes());
    s.end(h, 1601.0, End::Ok);
    let each: Vec<String> = (0..12).map(|i| chunk(&format!("w{i} "))).collect();
    let each: Vec<&[u8]> = each.iter().map(|c| c.as_bytes()).collect();
    fetch(&mut s, 20, "https://chat.example/v1/chat", 200, "text/event-stream", &each, End::Ok);
    out.extend(finished(&mut s));

    // What the person saw: an observed answer with a render stall blamed on a long frame.
    let h = s.begin("https://chat.example/v1/chat", "post", 1000.0, 1.7e12, &random(14));
    let tl = s.get(h).unwrap();
    tl.observe(PAINT_OBSERVED);
    tl.on_headers(1040.0, 200, "text/event-stream", false);
    tl.on_chunk(1500.0, openai[0]);
    s.paint(h, 1510.0 - 2.0, 1510.0, 5, 2.0, "Hello");
    s.get(h).unwrap().on_chunk(1530.0, openai[1]);
    s.get(h).unwrap().on_long_frame(1525.0, 320.0, "Response.json.then", "https://chat.example/app.js?v=1", 300.0);
    s.get(h).unwrap().on_chunk(1835.0, openai[2]);
    s.end(h, 1840.0, End::Ok);
    s.paint(h, 1850.0 - 2.0, 1850.0, 11, 2.0, "Hello world");
    // Observed, hidden before the end was painted.
    let h = s.begin("https://chat.example/v1/chat", "post", 0.0, 1.7e12, &random(15));
    let tl = s.get(h).unwrap();
    tl.observe(PAINT_OBSERVED);
    tl.on_headers(1.0, 200, "text/event-stream", false);
    tl.on_chunk(10.0, openai[0]);
    s.paint(h, 20.0 - 1.0, 20.0, 5, 1.0, "");
    s.get(h).unwrap().on_chunk(30.0, openai[1]);
    s.end(h, 40.0, End::Ok);
    s.page_hidden(45.0, false);
    out.extend(finished(&mut s));

    // EventSource: a first attempt with an in-band trace and no Resource Timing entry (WebKit
    // creates none: serverTiming null), and its reconnect, whose entry came.
    let first = random(16);
    let h = s.begin_eventsource("https://chat.example/v1/stream?q=1", 0.0, 1.7e12, &first, &[], false);
    let tl = s.get(h).unwrap();
    tl.on_message(10.0, "", "", "");
    tl.on_message(20.0, "message", "{\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}", TP);
    tl.on_resource_timing(None);
    s.end(h, 30.0, End::Error);
    let h = s.begin_eventsource("https://chat.example/v1/stream?q=1", 3000.0, 1.7e12, &random(17), &first, false);
    let tl = s.get(h).unwrap();
    tl.on_server_timing_entry(llm_rum::core::trace::server_timing::ServerTimingEntry::parsed_by_browser("queue", 4.0, ""));
    tl.on_resource_timing(Some(2990.0));
    tl.on_message(3010.0, "message", "[DONE]", "");
    s.end(h, 3020.0, End::Aborted);
    out.extend(finished(&mut s));

    // Partial: a stream cut by the page unloading; the snapshots a hidden page sends.
    let mut s = session(&[]);
    s.cfg.collect = true;
    let h = s.begin("https://chat.example/v1/chat", "post", 0.0, 1.7e12, &random(18));
    s.get(h).unwrap().on_headers(10.0, 200, "text/event-stream", false);
    s.get(h).unwrap().on_chunk(20.0, openai[0]);
    s.page_hidden(25.0, true);
    out.extend(outgoing(&mut s));
    s.end(h, 30.0, End::Error);
    out.extend(finished(&mut s));
    // Made before the core was in (issue 27): its text arrived before paint observation, and the
    // early tap's bound ended what was seen of it.
    let mut s = session(&[]);
    let h = s.begin("https://chat.example/v1/chat", "post", 0.0, 1.7e12, &random(19));
    s.get(h).unwrap().on_headers(10.0, 200, "text/event-stream", false);
    s.get(h).unwrap().on_chunk(20.0, openai[0]);
    s.paint_ready(40.0);
    s.get(h).unwrap().observe(PAINT_OBSERVED);
    s.end_unseen(h, 50.0);
    out.extend(finished(&mut s));
    out
}

#[test]
fn every_record_the_core_encodes_reads_into_the_mirror() {
    let recs = records();
    assert!(recs.len() >= 15, "{}", recs.len());
    let mut seen = (BTreeSet::new(), BTreeSet::new(), BTreeSet::new(), BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    let mut unseen = BTreeSet::new();
    for text in &recs {
        let r: RumRecord = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert!(!text.contains("secret") && !text.contains("Hello"), "no query strings, no answer text: {text}");
        seen.0.insert(r.outcome);
        seen.1.insert(r.format);
        seen.2.insert(r.trace_source);
        seen.3.insert(r.transport);
        seen.4.insert(r.upstream_buffered);
        seen.5.extend(r.upstream_hints.unwrap_or_default());
        unseen.extend(r.unseen);
        assert_eq!(r.itl.buckets.iter().sum::<u32>(), r.itl.n, "itl.buckets sums to n: {text}");
        if let Some(max) = r.itl.max {
            // The highest non-empty bucket is the one holding the largest gap (or the one
            // below it, within 2 %: `LogHistogram::count_le`).
            let top = r.itl.buckets.iter().rposition(|&c| c > 0).unwrap();
            let bound = |i: usize| llm_rum::core::record::genai::CHUNK_BUCKETS_S.get(i).map_or(f64::INFINITY, |b| b * 1000.0);
            assert!(max <= bound(top) * 1.02 && (top == 0 || max > bound(top - 1)), "max {max} in bucket {top}: {text}");
        }
    }
    assert_eq!(unseen.len(), names::<Unseen>().len(), "every `unseen` value occurs: {unseen:?}");
    assert_eq!(seen.4, BTreeSet::from([None, Some(false), Some(true)]), "upstreamBuffered: each value occurs");
    assert!(seen.5.len() >= 3, "{:?}", seen.5);
    // The set is varied enough to mean something: every outcome, format, trace source and
    // transport the contract names occurs.
    assert_eq!(seen.0.len(), names::<Outcome>().len(), "{:?}", seen.0);
    assert_eq!(seen.1.len(), names::<Format>().len(), "{:?}", seen.1);
    assert_eq!(seen.2.len(), names::<TraceSource>().len(), "{:?}", seen.2);
    assert_eq!(seen.3.len(), names::<Transport>().len(), "{:?}", seen.3);
}

/// `model`, `modelSource`, `provider`: the stream's model, else the app's rule; the app's
/// provider, else the host's; null otherwise.
#[test]
fn records_name_the_model_and_provider() {
    let recs: Vec<serde_json::Value> = records().iter().map(|t| serde_json::from_str(t).unwrap()).collect();
    let one = |url: &str| {
        let r = recs.iter().find(|r| r["url"] == url).unwrap_or_else(|| panic!("no record for {url}"));
        (r["model"].as_str(), r["modelSource"].as_str(), r["provider"].as_str())
    };
    assert_eq!(one("https://api.openai.com/v1/chat/completions"), (Some("gpt-4o-2024-08-06"), Some("stream"), Some("openai")));
    assert_eq!(one("https://chat.example/v1/messages"), (Some("claude-sonnet-4-5"), Some("stream"), None), "the app's own backend: no provider");
    assert_eq!(one("https://chat.example/api/chat"), (Some("app-model"), Some("config"), Some("app-backend")), "AI SDK UI names none: the app's rule");
    assert_eq!(one("https://chat.example/text"), (None, None, None));
}

/// Walks a record by the .d.ts declarations: every declared member is seen with a value in
/// some record, every member declared `| null` is seen null in some record, and no member
/// declared without `| null` is ever null.
#[test]
fn every_declared_member_occurs_with_a_value_and_null_only_where_declared() {
    let d = declarations();
    let mut values: BTreeSet<String> = BTreeSet::new();
    let mut nulls: BTreeSet<String> = BTreeSet::new();
    fn walk(d: &BTreeMap<String, Vec<Member>>, iface: &str, v: &serde_json::Value, values: &mut BTreeSet<String>, nulls: &mut BTreeSet<String>) {
        for m in &d[iface] {
            let key = format!("{iface}.{}", m.name);
            let x = &v[&m.name];
            if x.is_null() {
                assert!(m.ty.ends_with("| null"), "{key} is null, but declared `{}`", m.ty);
                nulls.insert(key);
                continue;
            }
            values.insert(key.clone());
            let base = m.ty.trim_end_matches("| null").trim();
            if d.contains_key(&key) {
                walk(d, &key, x, values, nulls);
            } else if let Some(elem) = base.strip_suffix("[]").filter(|e| d.contains_key(*e)) {
                for item in x.as_array().unwrap() {
                    walk(d, elem, item, values, nulls);
                }
            } else if d.contains_key(base) {
                walk(d, base, x, values, nulls);
            }
        }
    }
    for text in records() {
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        walk(&d, "RumRecord", &v, &mut values, &mut nulls);
    }
    let declared: Vec<String> = ["RumRecord", "Marks", "Distribution", "Itl", "Stalls", "Stall", "Stall.blame", "ServerTimingEntry", "BudgetBreach", "RumRecord.ttftSplit", "Delivery", "Delivery.eventsPerArrival"]
        .iter()
        .flat_map(|i| d[*i].iter().map(move |m| format!("{i}.{}", m.name)))
        .collect();
    let missing: Vec<&String> = declared.iter().filter(|k| !values.contains(*k)).collect();
    assert!(missing.is_empty(), "never seen with a value: {missing:?}");
    let record_nullables: Vec<String> = d["RumRecord"].iter().filter(|m| m.ty.ends_with("| null")).map(|m| format!("RumRecord.{}", m.name)).collect();
    let never_null: Vec<&String> = record_nullables.iter().filter(|k| !nulls.contains(*k)).collect();
    assert!(never_null.is_empty(), "declared nullable, never seen null: {never_null:?}");
}
