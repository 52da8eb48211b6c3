//! Decoding and validating a v1 beacon (DESIGN.md §3) into rows ready to store.
//!
//! Owner of "what input is acceptable". The rule is all-or-nothing: one bad record rejects the
//! whole beacon with a message naming the field, so a 4xx always means nothing was stored and the
//! SDK (or whoever sent it) can see why. Unknown fields are ignored (forward compatible); a
//! bounded part of them is kept in the stored raw JSON (`raw`). Names that become keys pass
//! through `keys::safe_key`; counts are clamped to `MAX_COUNT` so no sum can overflow; times
//! are bounded by `MAX_MS`. This code must never panic on any input: it only uses checked
//! accessors on `serde_json::Value`, whose parser bounds nesting depth (no stack overflow).

pub mod clock;
pub mod keys;
pub mod raw;


use serde_json::{Map, Value};

use crate::ingest::keys::safe_key;

/// Largest accepted body. The SDK splits payloads at 60 KiB; 64 KiB is the browsers'
/// keepalive/sendBeacon quota, so nothing legitimate is bigger.
pub const MAX_BODY: usize = 64 * 1024;
/// More records than this in one beacon is not something the SDK produces (a record is ≥ ~600
/// bytes, so 64 KiB holds ~100); the cap bounds per-request work.
pub const MAX_RECORDS: usize = 500;
const MAX_ID: usize = 128;
const MAX_STR: usize = 2048;
const MAX_STAGES: usize = 64;
/// Server-Timing names are ≤ 64 bytes; percent-encoding can triple that.
const MAX_STAGE_NAME: usize = 64;
/// Routes and pages as keys (a longer path is not a route anyone groups by).
const MAX_ROUTE: usize = 512;
/// Counts (`dropped`, stall counts) are clamped here: the SDK counts in u32, and a sum of
/// clamped counts over every row a database can hold stays far from i64 overflow.
pub const MAX_COUNT: u64 = u32::MAX as u64;
/// Durations and marks: 30 days (an EventSource can stay open long; nothing measured is longer).
pub const MAX_MS: f64 = 30.0 * 24.0 * 3600.0 * 1000.0;

/// `itl.buckets`: one count per GenAI bucket bound, then one above the last.
pub const ITL_BUCKETS: usize = llm_rum::core::record::genai::CHUNK_BUCKETS_S.len() + 1;

/// Marks stored as columns, in this order (`interaction` may be negative: it precedes `start`).
pub const MARKS: [&str; 8] = [
    "interaction",
    "headers",
    "firstByte",
    "firstToken",
    "firstPaint",
    "lastToken",
    "lastPaint",
    "end",
];

/// The marks' columns in both stores, in `MARKS` order: the one list the SQLite insert and
/// reads and the ClickHouse rows take them from.
pub const MARK_COLUMNS: [&str; 8] = [
    "m_interaction",
    "m_headers",
    "m_first_byte",
    "m_first_token",
    "m_first_paint",
    "m_last_token",
    "m_last_paint",
    "m_end",
];

#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub id: String,
    pub start_ms: f64,
    pub url: Option<String>,
    /// Path of `url` (no scheme, host, query or fragment): what `route=` filters on.
    pub route: Option<String>,
    pub method: Option<String>,
    pub status: Option<i64>,
    pub model: Option<String>,
    /// Where `model` came from: "stream" (what answered: GenAI's `response.model`) or
    /// "config" (the app's rule: `request.model`).
    pub model_source: Option<String>,
    /// GenAI's `provider.name` (`openai`, `anthropic`, …, or the app's own name).
    pub provider: Option<String>,
    pub outcome: String,
    pub format: Option<String>,
    pub ttft: Option<f64>,
    pub ttfp: Option<f64>,
    pub perceived_ttft: Option<f64>,
    pub total: Option<f64>,
    pub perceived_total: Option<f64>,
    pub tpot: Option<f64>,
    pub itl_p50: Option<f64>,
    pub itl_p95: Option<f64>,
    pub itl_max: Option<f64>,
    pub render_delay_p95: Option<f64>,
    /// The answer's gaps per GenAI `time_per_output_chunk` bucket (`itl.buckets`), for
    /// `/metrics`; not a column (it stays in `raw`).
    pub itl_buckets: Option<[u64; ITL_BUCKETS]>,
    pub stalls_count: Option<i64>,
    pub stalls_network: Option<i64>,
    pub stalls_render: Option<i64>,
    pub stalls_total_ms: Option<f64>,
    pub buffered: Option<bool>,
    /// Something between the model and the page delivered the text in bursts (SDK-decided).
    pub upstream_buffered: Option<bool>,
    pub hidden: Option<bool>,
    pub marks: [Option<f64>; 8],
    /// Server-Timing stages with a duration; repeated names are summed.
    pub stages: Vec<(String, f64)>,
    /// The record as received (compact JSON), bounded (see `raw`).
    pub raw: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Beacon {
    pub sdk: Option<String>,
    pub session: Option<String>,
    pub page: Option<String>,
    /// When the SDK sent the beacon (epoch ms, the client's clock; see `clock`).
    pub sent_at: Option<f64>,
    /// Records the SDK had to drop (queue full) since its last beacon (clamped to MAX_COUNT).
    pub dropped: u64,
    pub records: Vec<Row>,
}

/// Decodes a beacon body. `Err` carries the message for the 400 response.
pub fn decode(body: &[u8]) -> Result<Beacon, String> {
    if body.len() > MAX_BODY {
        // The HTTP layer answers 413 before calling this; kept so the decoder is safe alone.
        return Err(format!("body over {MAX_BODY} bytes"));
    }
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("body is not JSON: {e}"))?;
    let obj = v.as_object().ok_or("beacon must be a JSON object")?;
    match obj.get("v") {
        Some(Value::Number(n)) if n.as_u64() == Some(1) => {}
        Some(other) => {
            return Err(format!(
                "unsupported beacon version {other} (expected \"v\":1)"
            ))
        }
        None => return Err("missing beacon version \"v\" (expected 1)".into()),
    }
    let sdk = opt_str(obj, "sdk", MAX_STR, "")?;
    let session = opt_str(obj, "session", MAX_ID, "")?;
    let page = opt_str(obj, "page", MAX_STR, "")?.map(|p| safe_key(&p, MAX_ROUTE));
    let sent_at = match obj.get("sentAt") {
        None | Some(Value::Null) => None,
        Some(v) => match finite(v, "", "sentAt")? {
            Some(x) if x >= 0.0 => Some(x),
            _ => return Err("sentAt: must be a number ≥ 0 (epoch ms)".into()),
        },
    };
    let dropped = count(obj.get("dropped"), "dropped")?.unwrap_or(0);
    let recs = match obj.get("records") {
        Some(Value::Array(a)) => a,
        Some(_) => return Err("records: must be an array".into()),
        None => return Err("missing records array".into()),
    };
    if recs.len() > MAX_RECORDS {
        return Err(format!(
            "too many records: {} (at most {MAX_RECORDS} per beacon)",
            recs.len()
        ));
    }
    let mut records = Vec::with_capacity(recs.len());
    for (i, r) in recs.iter().enumerate() {
        let at = format!("records[{i}].");
        let o = r
            .as_object()
            .ok_or_else(|| format!("records[{i}]: must be an object"))?;
        records.push(decode_record(o, &at)?);
    }
    Ok(Beacon {
        sdk,
        session,
        page,
        sent_at,
        dropped,
        records,
    })
}

fn decode_record(o: &Map<String, Value>, at: &str) -> Result<Row, String> {
    let id = req_str(o, "id", MAX_ID, at)?;
    if id.is_empty() {
        return Err(format!("{at}id: must not be empty"));
    }
    // An epoch time, not a duration: `clock::admit` decides whether it is plausible.
    let start_ms = match o.get("startEpochMs") {
        Some(v) => match finite(v, at, "startEpochMs")? {
            Some(x) if x >= 0.0 => x,
            Some(x) => return Err(format!("{at}startEpochMs: must not be negative (got {x})")),
            None => return Err(format!("{at}startEpochMs: required")),
        },
        None => return Err(format!("{at}startEpochMs: required")),
    };
    let outcome = req_str(o, "outcome", 32, at)?;
    if !matches!(outcome.as_str(), "ok" | "aborted" | "error" | "partial") {
        return Err(format!(
            "{at}outcome: must be ok, aborted, error or partial"
        ));
    }
    let url = opt_str(o, "url", MAX_STR, at)?;
    let route = url.as_deref().map(|u| safe_key(&route_of(u), MAX_ROUTE));
    let status = match o.get("status") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match n.as_i64() {
            Some(s) if (0..1000).contains(&s) => Some(s),
            _ => return Err(format!("{at}status: must be an integer 0..999")),
        },
        Some(_) => return Err(format!("{at}status: must be a number")),
    };
    let t = |k: &str| match o.get(k) {
        None => Ok(None),
        Some(v) => time(v, at, k),
    };
    let itl = sub(o, "itl", at)?;
    let rd = sub(o, "renderDelay", at)?;
    let stalls = sub(o, "stalls", at)?;
    let sub_t =
        |m: Option<&Map<String, Value>>, parent: &str, k: &str| match m.and_then(|m| m.get(k)) {
            None => Ok(None),
            Some(v) => time(v, at, &format!("{parent}.{k}")),
        };
    let sub_n = |m: Option<&Map<String, Value>>, k: &str| -> Result<Option<i64>, String> {
        Ok(count(m.and_then(|m| m.get(k)), &format!("{at}stalls.{k}"))?.map(|x| x as i64))
    };
    let marks_obj = sub(o, "marks", at)?;
    let mut marks = [None; 8];
    for (slot, name) in marks.iter_mut().zip(MARKS) {
        if let Some(v) = marks_obj.and_then(|m| m.get(name)) {
            *slot = if name == "interaction" {
                // Before `start`, so a negative offset is the normal case.
                match finite(v, at, "marks.interaction")? {
                    Some(x) if x.abs() > MAX_MS => {
                        return Err(format!(
                            "{at}marks.interaction: must be within {MAX_MS} ms of start"
                        ))
                    }
                    x => x,
                }
            } else {
                time(v, at, &format!("marks.{name}"))?
            };
        }
    }
    let mut stages: Vec<(String, f64)> = Vec::new();
    match o.get("serverTiming") {
        None | Some(Value::Null) => {}
        Some(Value::Array(a)) => {
            for (j, e) in a.iter().enumerate() {
                let e = e
                    .as_object()
                    .ok_or_else(|| format!("{at}serverTiming[{j}]: must be an object"))?;
                let name = match e.get("name") {
                    Some(Value::String(s)) if s.len() <= MAX_STAGE_NAME => {
                        safe_key(s, 3 * MAX_STAGE_NAME)
                    }
                    _ => {
                        return Err(format!(
                            "{at}serverTiming[{j}].name: must be a string (≤ 64 bytes)"
                        ))
                    }
                };
                let dur = match e.get("dur") {
                    None => None,
                    Some(v) => time(v, at, &format!("serverTiming[{j}].dur"))?,
                };
                if let Some(d) = dur {
                    if let Some(s) = stages.iter_mut().find(|(n, _)| *n == name) {
                        s.1 = (s.1 + d).min(MAX_MS);
                    } else if stages.len() < MAX_STAGES {
                        stages.push((name, d));
                    }
                }
            }
        }
        Some(_) => return Err(format!("{at}serverTiming: must be an array")),
    }
    Ok(Row {
        start_ms,
        url,
        route,
        method: opt_str(o, "method", 16, at)?.map(|m| safe_key(&m, 48)),
        status,
        model: opt_str(o, "model", 256, at)?.map(|m| safe_key(&m, 256)),
        model_source: match opt_str(o, "modelSource", 16, at)?.as_deref() {
            None => None,
            Some(s @ ("stream" | "config")) => Some(s.to_string()),
            Some(_) => return Err(format!("{at}modelSource: must be \"stream\", \"config\" or null")),
        },
        provider: opt_str(o, "provider", 128, at)?.map(|p| safe_key(&p, 128)),
        format: opt_str(o, "format", 32, at)?.map(|f| safe_key(&f, 96)),
        ttft: t("ttft")?,
        ttfp: t("ttfp")?,
        perceived_ttft: t("perceivedTtft")?,
        total: t("total")?,
        perceived_total: t("perceivedTotal")?,
        tpot: t("tpot")?,
        itl_p50: sub_t(itl, "itl", "p50")?,
        itl_p95: sub_t(itl, "itl", "p95")?,
        itl_max: sub_t(itl, "itl", "max")?,
        render_delay_p95: sub_t(rd, "renderDelay", "p95")?,
        itl_buckets: itl_buckets(itl, at)?,
        stalls_count: sub_n(stalls, "count")?,
        stalls_network: sub_n(stalls, "network")?,
        stalls_render: sub_n(stalls, "render")?,
        stalls_total_ms: sub_t(stalls, "stalls", "totalMs")?,
        buffered: opt_bool(o, "buffered", at)?,
        upstream_buffered: opt_bool(o, "upstreamBuffered", at)?,
        hidden: opt_bool(o, "hidden", at)?,
        marks,
        stages,
        raw: crate::ingest::raw::bounded(o),
        outcome,
        id,
    })
}

/// `itl.buckets`: absent or null (an older SDK), or exactly `ITL_BUCKETS` counts.
fn itl_buckets(itl: Option<&Map<String, Value>>, at: &str) -> Result<Option<[u64; ITL_BUCKETS]>, String> {
    let Some(v) = itl.and_then(|i| i.get("buckets")).filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let err = || format!("{at}itl.buckets: must be {ITL_BUCKETS} non-negative integers");
    let a = v.as_array().filter(|a| a.len() == ITL_BUCKETS).ok_or_else(err)?;
    let mut out = [0; ITL_BUCKETS];
    for (o, v) in out.iter_mut().zip(a) {
        *o = count(Some(v), "itl.buckets").map_err(|_| err())?.ok_or_else(err)?;
    }
    Ok(Some(out))
}

/// The path of a URL: `https://h:1/v1/chat?x#y` → `/v1/chat`; relative URLs keep their path.
/// The SDK sends URLs with id-like segments already templated (`/v1/threads/:id/runs`), so
/// this is the route records group by. Cut by the SDK core's splitter (one rule for both).
pub fn route_of(url: &str) -> String {
    match llm_rum::core::util::url::split(url).1 {
        "" => "/".into(),
        path => path.into(),
    }
}

fn sub<'a>(
    o: &'a Map<String, Value>,
    k: &str,
    at: &str,
) -> Result<Option<&'a Map<String, Value>>, String> {
    match o.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m)),
        Some(_) => Err(format!("{at}{k}: must be an object or null")),
    }
}

/// A duration or mark: null, or a finite number in [0, MAX_MS].
fn time(v: &Value, at: &str, k: &str) -> Result<Option<f64>, String> {
    match finite(v, at, k)? {
        Some(x) if x < 0.0 => Err(format!("{at}{k}: must not be negative (got {x})")),
        Some(x) if x > MAX_MS => Err(format!(
            "{at}{k}: must be at most {MAX_MS} ms (30 days), got {x}"
        )),
        x => Ok(x),
    }
}

/// A count: null, or a non-negative integer, clamped to MAX_COUNT.
fn count(v: Option<&Value>, k: &str) -> Result<Option<u64>, String> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match (n.as_u64(), n.as_f64()) {
            (Some(x), _) => Ok(Some(x.min(MAX_COUNT))),
            // Beyond u64 (1e30): still a count, just a huge one.
            (None, Some(f)) if f.is_finite() && f >= 0.0 && f.fract() == 0.0 => Ok(Some(MAX_COUNT)),
            _ => Err(format!("{k}: must be a non-negative integer")),
        },
        Some(_) => Err(format!("{k}: must be a non-negative integer")),
    }
}

fn finite(v: &Value, at: &str, k: &str) -> Result<Option<f64>, String> {
    match v {
        Value::Null => Ok(None),
        // serde_json rejects NaN/Infinity literals and out-of-range numbers at parse time; the
        // check stays because "finite" is the contract, not a parser detail.
        Value::Number(n) => match n.as_f64() {
            Some(x) if x.is_finite() => Ok(Some(x)),
            _ => Err(format!("{at}{k}: must be a finite number")),
        },
        _ => Err(format!("{at}{k}: must be a number or null")),
    }
}

fn req_str(o: &Map<String, Value>, k: &str, max: usize, at: &str) -> Result<String, String> {
    opt_str(o, k, max, at)?.ok_or_else(|| format!("{at}{k}: required string"))
}

fn opt_str(
    o: &Map<String, Value>,
    k: &str,
    max: usize,
    at: &str,
) -> Result<Option<String>, String> {
    match o.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.len() <= max => Ok(Some(s.clone())),
        Some(Value::String(_)) => Err(format!("{at}{k}: longer than {max} bytes")),
        Some(_) => Err(format!("{at}{k}: must be a string")),
    }
}

fn opt_bool(o: &Map<String, Value>, k: &str, at: &str) -> Result<Option<bool>, String> {
    match o.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(format!("{at}{k}: must be a boolean or null")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    pub fn record(id: &str) -> Value {
        json!({
            "id": id, "traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331",
            "traceSource": "propagated", "sampled": true,
            "url": "https://api.example.com/v1/chat/completions", "method": "POST", "status": 200,
            "outcome": "ok", "format": "openai-chat", "understood": true, "complete": true,
            "startEpochMs": 1_700_000_000_000.0_f64,
            "marks": {"interaction": -35.5, "start": 0, "headers": 80, "firstByte": 81, "firstReasoning": null,
                      "firstToken": 210, "firstPaint": 226, "lastToken": 1900, "lastPaint": 1916, "end": 1901},
            "ttft": 210, "ttfp": 226, "perceivedTtft": 261.5, "total": 1900, "perceivedTotal": 1951.5,
            "renderDelay": {"first": 16, "p50": 8, "p95": 16, "max": 20},
            "itl": {"n": 99, "p50": 15, "p95": 40, "p99": 60, "max": 300},
            "tpot": 17, "stalls": {"count": 1, "totalMs": 300, "longestMs": 300, "network": 1, "render": 0},
            "buffered": false, "outputTokens": 100, "outputTokensSource": "usage", "chars": 400,
            "reasoningChars": 0, "contentEvents": 100, "chunks": 100, "bytes": 17000,
            "serverTiming": [{"name": "queue", "dur": 12, "desc": null}, {"name": "prefill", "dur": 90, "desc": null},
                             {"name": "trace", "dur": null, "desc": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}],
            "ttftSplit": {"server": 102, "network": 108}, "correlation": {"x-request-id": "r1"},
            "stallList": [{"start": 900, "dur": 300, "cause": "network"}], "budgetBreaches": [],
            "hidden": false, "userMarks": {"retrieval_done": 40}
        })
    }

    pub fn beacon(records: Vec<Value>) -> Value {
        json!({"v": 1, "sdk": "llm-rum/0.1.0", "session": "s1", "page": "/chat", "records": records})
    }

    #[test]
    fn decodes_a_full_record() {
        let b = decode(beacon(vec![record("r1")]).to_string().as_bytes()).unwrap();
        let r = &b.records[0];
        assert_eq!(r.route.as_deref(), Some("/v1/chat/completions"));
        assert_eq!(
            (r.ttft, r.perceived_ttft, r.itl_p95, r.render_delay_p95),
            (Some(210.0), Some(261.5), Some(40.0), Some(16.0))
        );
        assert_eq!(
            (r.stalls_count, r.stalls_network, r.buffered),
            (Some(1), Some(1), Some(false))
        );
        assert_eq!(r.marks[0], Some(-35.5), "interaction precedes start");
        assert_eq!(
            r.stages,
            vec![("queue".to_string(), 12.0), ("prefill".to_string(), 90.0)]
        );
        assert!(r.raw.contains("retrieval_done"), "raw keeps every field");
    }

    #[test]
    fn routes() {
        for (u, r) in [
            ("https://h:8/v1/chat?x=1#y", "/v1/chat"),
            ("http://h", "/"),
            ("http://h?x", "/"),
            ("/rel/path?q", "/rel/path"),
            ("", "/"),
            ("héllo://ü/ä?", "/ä"),
            // As the SDK sends them: ids templated.
            ("https://h/v1/threads/:id/runs?x", "/v1/threads/:id/runs"),
        ] {
            assert_eq!(route_of(u), r, "{u}");
        }
    }

    #[test]
    fn rejects_each_bad_class_with_a_message() {
        let ok = beacon(vec![record("r1")]);
        let with = |f: &dyn Fn(&mut Value)| {
            let mut b = ok.clone();
            f(&mut b);
            decode(b.to_string().as_bytes()).unwrap_err()
        };
        assert!(decode(b"not json").unwrap_err().contains("not JSON"));
        assert!(decode(b"[1]").unwrap_err().contains("object"));
        assert!(with(&|b| b["v"] = json!(2)).contains("version"));
        assert!(with(&|b| b["v"] = json!("1")).contains("version"));
        assert!(
            with(&|b| b.as_object_mut().unwrap().remove("v").map(|_| ()).unwrap())
                .contains("version")
        );
        assert!(with(&|b| b["records"] = json!({})).contains("records"));
        assert!(
            with(&|b| b["records"] = json!(vec![json!({}); MAX_RECORDS + 1])).contains("too many")
        );
        assert!(with(&|b| b["records"][0]["ttft"] = json!(-1)).contains("records[0].ttft"));
        assert!(with(&|b| b["records"][0]["ttft"] = json!("12")).contains("records[0].ttft"));
        assert!(with(&|b| b["records"][0]["itl"]["p95"] = json!(-0.5)).contains("itl.p95"));
        assert!(
            with(&|b| b["records"][0]["marks"]["firstToken"] = json!(-3))
                .contains("marks.firstToken")
        );
        assert!(with(&|b| b["records"][0]["startEpochMs"] = json!(null)).contains("startEpochMs"));
        assert!(with(&|b| b["records"][0]["id"] = json!(7)).contains("id"));
        assert!(with(&|b| b["records"][0]["id"] = json!("")).contains("id"));
        assert!(with(&|b| b["records"][0]["outcome"] = json!("great")).contains("outcome"));
        assert!(with(&|b| b["records"][0]["stalls"]["count"] = json!(1.5)).contains("stalls.count"));
        assert!(
            with(&|b| b["records"][0]["serverTiming"][0]["dur"] = json!(-2))
                .contains("serverTiming[0].dur")
        );
        assert!(with(&|b| b["records"][0]["buffered"] = json!(1)).contains("buffered"));
        assert!(with(&|b| b["dropped"] = json!(-1)).contains("dropped"));
        // Non-finite numbers cannot be written in JSON; out-of-range literals are refused.
        let big = ok.to_string().replace("\"ttft\":210", "\"ttft\":1e999");
        assert!(decode(big.as_bytes()).is_err());
        let nan = ok.to_string().replace("\"ttft\":210", "\"ttft\":NaN");
        assert!(decode(nan.as_bytes()).is_err());
        // Unknown fields, at every level, are fine.
        let mut b = ok.clone();
        b["future"] = json!({"a": [1, 2]});
        b["records"][0]["newMetric"] = json!(3);
        b["records"][0]["marks"]["newMark"] = json!(-9);
        b["dropped"] = json!(4);
        let d = decode(b.to_string().as_bytes()).unwrap();
        assert_eq!(d.dropped, 4);
    }

    #[test]
    fn keys_counts_and_times_are_bounded() {
        let mut b = beacon(vec![record("r1")]);
        b["dropped"] = json!(u64::MAX);
        b["sentAt"] = json!(1_700_000_000_500.0_f64);
        b["page"] = json!("/chat/<b>");
        let r = &mut b["records"][0];
        r["stalls"]["network"] = json!(i64::MAX);
        r["stalls"]["render"] = json!(1e30);
        r["url"] = json!("https://h/v1/<script>alert(1)</script>?q");
        r["model"] = json!("gpt\"><svg onload=x>");
        r["serverTiming"][0]["name"] = json!("<img src=x onerror=alert(1)>");
        let d = decode(b.to_string().as_bytes()).unwrap();
        assert_eq!(
            (d.dropped, d.sent_at),
            (MAX_COUNT, Some(1_700_000_000_500.0))
        );
        assert_eq!(d.page.as_deref(), Some("/chat/%3Cb%3E"));
        let r = &d.records[0];
        assert_eq!(
            (r.stalls_network, r.stalls_render),
            (Some(MAX_COUNT as i64), Some(MAX_COUNT as i64))
        );
        assert_eq!(
            r.route.as_deref(),
            Some("/v1/%3Cscript%3Ealert%281%29%3C/script%3E")
        );
        assert_eq!(r.model.as_deref(), Some("gpt%22%3E%3Csvg%20onload=x%3E"));
        assert_eq!(r.stages[0].0, "%3Cimg%20src=x%20onerror=alert%281%29%3E");
        // Times: up to 30 days; an epoch start is not a duration.
        let mut b = beacon(vec![record("r1")]);
        b["records"][0]["total"] = json!(MAX_MS);
        assert!(decode(b.to_string().as_bytes()).is_ok());
        b["records"][0]["total"] = json!(1e308);
        assert!(decode(b.to_string().as_bytes())
            .unwrap_err()
            .contains("records[0].total: must be at most"));
        let mut b = beacon(vec![record("r1")]);
        b["records"][0]["marks"]["interaction"] = json!(-1e308);
        assert!(decode(b.to_string().as_bytes())
            .unwrap_err()
            .contains("marks.interaction"));
        let mut b = beacon(vec![record("r1")]);
        b["records"][0]["startEpochMs"] = json!(1e308);
        assert!(
            decode(b.to_string().as_bytes()).is_ok(),
            "refused later, by clock::admit"
        );
        for bad in [json!(-1), json!("1"), json!(true)] {
            let mut b = beacon(vec![]);
            b["sentAt"] = bad;
            assert!(decode(b.to_string().as_bytes())
                .unwrap_err()
                .contains("sentAt"));
        }
    }

    use llm_rum_collector_testkit::rng::Rng;

    fn is_key(s: &str) -> bool {
        s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~/:@+,;=%".contains(&b))
    }

    /// Accepted rows always satisfy the contract the store and queries rely on.
    fn check_invariants(b: &Beacon) {
        assert!(b.records.len() <= MAX_RECORDS);
        assert!(b.dropped <= MAX_COUNT);
        assert!(b.page.as_deref().is_none_or(is_key));
        for r in &b.records {
            assert!(!r.id.is_empty() && r.start_ms.is_finite() && r.start_ms >= 0.0);
            for x in [
                r.ttft,
                r.ttfp,
                r.perceived_ttft,
                r.total,
                r.perceived_total,
                r.tpot,
                r.itl_p50,
                r.itl_p95,
                r.itl_max,
                r.render_delay_p95,
                r.stalls_total_ms,
            ]
            .into_iter()
            .flatten()
            {
                assert!(x.is_finite() && (0.0..=MAX_MS).contains(&x));
            }
            assert!(r
                .marks
                .iter()
                .flatten()
                .all(|m| m.is_finite() && m.abs() <= MAX_MS));
            assert!(r
                .stages
                .iter()
                .all(|(n, d)| d.is_finite() && *d >= 0.0 && *d <= MAX_MS && is_key(n)));
            for c in [r.stalls_count, r.stalls_network, r.stalls_render]
                .into_iter()
                .flatten()
            {
                assert!((0..=MAX_COUNT as i64).contains(&c));
            }
            for k in [&r.route, &r.model, &r.format, &r.method]
                .into_iter()
                .flatten()
            {
                assert!(is_key(k), "{k}");
            }
            assert!(r.raw.len() <= crate::ingest::raw::RAW_MAX);
        }
    }

    #[test]
    fn never_panics_on_random_bytes() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let alphabet = b"{}[]\":,.-+0123456789eEtruefalsnl \\u\x00\xff\xc3\xa9v1records";
        for i in 0..10_000 {
            let len = rng.below(300);
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    if i % 2 == 0 {
                        rng.next() as u8
                    } else {
                        alphabet[rng.below(alphabet.len())]
                    }
                })
                .collect();
            if let Ok(b) = decode(&bytes) {
                check_invariants(&b);
            }
        }
        // Deep nesting: the parser's depth limit answers, not a stack overflow.
        let deep = format!(
            "{{\"v\":1,\"records\":[{}{}]}}",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert!(decode(deep.as_bytes()).is_err());
    }

    #[test]
    fn never_panics_on_mutated_beacons() {
        let mut rng = Rng(42);
        let valid = beacon(vec![record("a"), record("b")])
            .to_string()
            .into_bytes();
        for _ in 0..10_000 {
            let mut m = valid.clone();
            for _ in 0..1 + rng.below(4) {
                let p = rng.below(m.len());
                match rng.below(4) {
                    0 => m[p] = rng.next() as u8,
                    1 => {
                        m.remove(p);
                    }
                    2 => m.insert(p, b"-{}[],:\"0e9.n"[rng.below(13)]),
                    _ => m.truncate(p),
                }
                if m.is_empty() {
                    break;
                }
            }
            if let Ok(b) = decode(&m) {
                check_invariants(&b);
            }
        }
    }

    /// Structure-aware mutation: replace a random node of a valid beacon with a value of a
    /// random type, the way a buggy or hostile sender would.
    #[test]
    fn never_panics_on_retyped_fields() {
        fn nodes(v: &Value, path: Vec<String>, out: &mut Vec<Vec<String>>) {
            out.push(path.clone());
            match v {
                Value::Object(m) => m
                    .iter()
                    .for_each(|(k, c)| nodes(c, [path.clone(), vec![k.clone()]].concat(), out)),
                Value::Array(a) => a
                    .iter()
                    .enumerate()
                    .for_each(|(i, c)| nodes(c, [path.clone(), vec![i.to_string()]].concat(), out)),
                _ => {}
            }
        }
        /// The node at `path`, if an earlier mutation has not replaced one of its parents.
        fn at<'a>(v: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
            path.iter().try_fold(v, |v, k| match v {
                Value::Array(a) => a.get_mut(k.parse::<usize>().ok()?),
                Value::Object(o) => o.get_mut(k.as_str()),
                _ => None,
            })
        }
        let valid = beacon(vec![record("a"), record("b")]);
        let mut paths = Vec::new();
        nodes(&valid, vec![], &mut paths);
        let choices = [
            json!(null),
            json!(-1),
            json!(-0.0),
            json!(1e308),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(""),
            json!("x".repeat(5000)),
            json!([]),
            json!({}),
            json!(true),
            json!([null]),
            json!(0.5),
        ];
        let mut rng = Rng(7);
        let mut accepted = 0;
        for _ in 0..5_000 {
            let mut b = valid.clone();
            for _ in 0..1 + rng.below(3) {
                let p = &paths[rng.below(paths.len())];
                if let Some(node) = at(&mut b, p) {
                    *node = choices[rng.below(choices.len())].clone();
                }
            }
            if let Ok(d) = decode(b.to_string().as_bytes()) {
                accepted += 1;
                check_invariants(&d);
            }
        }
        assert!(
            accepted > 0,
            "some mutations (of unknown fields) must still be accepted"
        );
    }
}
