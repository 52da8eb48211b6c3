//! Routes, the request observer (ids, log, CORS), the LLM endpoints' HTTP side, static files.
//!
//! Owner of: what goes on the wire besides the body timing. Every request passes the `observe`
//! middleware first: it stamps the receive time and id, logs the request (preflights included,
//! since tests assert which requests carried `traceparent` and which caused preflights), answers
//! CORS preflights, and adds CORS / Timing-Allow-Origin headers to every response.

use crate::formats::{error_body, Kind, Shaper};
use crate::generate::{self, first_write_ms, Generator};
use crate::scenario::{get, parse_query, Scenario};
use crate::trace::{new_span_id, new_trace_id, parse_traceparent};
use crate::truth::{blank, round_us, unix_ms, LogEntry, Record, Store};
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::middleware::{from_fn_with_state, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get as get_route, post};
use axum::{Extension, Router};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use tower_http::services::ServeDir;

/// Largest /bytes body and /plain padding, to keep memory and time bounded.
const MAX_BYTES: u64 = 256 * 1024 * 1024;
const MAX_PLAIN: u64 = 16 * 1024 * 1024;

/// Shared server state.
#[derive(Clone)]
pub struct App {
    pub store: Arc<Store>,
    /// Generation slots: streams beyond them wait in the queue (`queue;dur`).
    pub slots: Arc<Semaphore>,
    /// Static mounts (URL prefix, directory), longest prefix first.
    pub mounts: Arc<Vec<(String, ServeDir)>>,
}

impl App {
    pub fn new(slots: usize, mounts: Vec<(String, PathBuf)>) -> App {
        let mut mounts: Vec<(String, ServeDir)> = mounts
            .into_iter()
            .map(|(p, d)| {
                let p = if p.len() > 1 {
                    p.trim_end_matches('/').to_string()
                } else {
                    p
                };
                (p, ServeDir::new(d))
            })
            .collect();
        mounts.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
        App {
            store: Arc::new(Store::default()),
            slots: Arc::new(Semaphore::new(slots)),
            mounts: Arc::new(mounts),
        }
    }
}

/// Stamped on each request by `observe`.
#[derive(Clone)]
pub struct Arrival {
    pub id: String,
    pub t0: Instant,
    pub unix_ms: f64,
}

pub fn router(app: App) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat))
        // The same endpoint under a per-user id, as chat products route it (the SDK's
        // URL-templating tests: no id may leave the page).
        .route("/v1/threads/{thread}/chat/completions", post(chat))
        .route("/v1/stream", get_route(stream_get))
        .route("/bytes", get_route(bytes))
        .route("/plain", any(plain))
        .route("/redirect", get_route(redirect))
        .route("/__truth", get_route(truth))
        .route("/__log", get_route(log))
        .route("/__reset", post(reset))
        .route("/__health", get_route(|| async { "ok" }))
        .fallback(static_files)
        .layer(from_fn_with_state(app.clone(), observe))
        .with_state(app)
}

fn header_str(h: &HeaderMap, name: &str) -> Option<String> {
    h.get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

fn hv(s: &str) -> HeaderValue {
    HeaderValue::from_str(s).unwrap_or_else(|_| HeaderValue::from_static("invalid"))
}

fn set(h: &mut HeaderMap, name: &'static str, value: &str) {
    h.insert(HeaderName::from_static(name), hv(value));
}

fn cors_enabled(params: &[(String, String)]) -> bool {
    !matches!(get(params, "cors"), Some("0" | "false" | "no" | "off"))
}

/// Stamps, logs, answers preflights, adds CORS headers.
async fn observe(State(app): State<App>, mut req: Request, next: Next) -> Response {
    let t0 = Instant::now();
    let unix = unix_ms();
    let seq = app.store.next_seq();
    let id = format!("req-{seq}");
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    let params = parse_query(&query);
    let h = req.headers();
    let origin = header_str(h, "origin");
    let preflight =
        req.method() == Method::OPTIONS && h.contains_key("access-control-request-method");
    let acrh = header_str(h, "access-control-request-headers");
    let acrm = header_str(h, "access-control-request-method");
    // The control endpoints are not logged: tests poll them, and they would drown the log.
    if !path.starts_with("/__") {
        let traceparent = header_str(h, "traceparent");
        app.store.log(LogEntry {
            seq,
            id: id.clone(),
            at_ms: app.store.since_start_ms(),
            method: req.method().to_string(),
            path: path.clone(),
            query: query.clone(),
            host: header_str(h, "host"),
            origin: origin.clone(),
            had_traceparent: traceparent.is_some(),
            traceparent,
            test_id: header_str(h, "x-test-id")
                .or_else(|| get(&params, "test_id").map(str::to_string)),
            preflight,
            request_headers: acrh.clone(),
        });
    }
    let cors = cors_enabled(&params);
    if preflight {
        let mut resp = StatusCode::NO_CONTENT.into_response();
        let rh = resp.headers_mut();
        set(rh, "x-request-id", &id);
        if cors {
            if let Some(o) = &origin {
                set(rh, "access-control-allow-origin", o);
                set(rh, "access-control-allow-credentials", "true");
            }
            set(
                rh,
                "access-control-allow-methods",
                acrm.as_deref().unwrap_or("GET, POST, OPTIONS"),
            );
            if let Some(a) = &acrh {
                set(rh, "access-control-allow-headers", a);
            }
            // Not cached: every cross-origin request that needs a preflight shows one in the log.
            set(rh, "access-control-max-age", "0");
        }
        set(
            rh,
            "vary",
            "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
        );
        return resp;
    }
    req.extensions_mut().insert(Arrival {
        id,
        t0,
        unix_ms: unix,
    });
    let mut resp = next.run(req).await;
    let rh = resp.headers_mut();
    if cors {
        if let Some(o) = &origin {
            set(rh, "access-control-allow-origin", o);
            set(rh, "access-control-allow-credentials", "true");
            set(
                rh,
                "access-control-expose-headers",
                "server-timing, x-request-id, traceresponse, x-vercel-ai-ui-message-stream",
            );
        }
        // Resource Timing (incl. serverTiming, the only way to see it for EventSource) needs TAO.
        set(rh, "timing-allow-origin", "*");
    }
    // Lets pages with COEP: require-corp load anything from here, even without CORS mode.
    set(rh, "cross-origin-resource-policy", "cross-origin");
    rh.append(header::VARY, HeaderValue::from_static("Origin"));
    resp
}

/// Identity and trace fields of a new ground-truth record.
fn new_record(
    app: &App,
    arr: &Arrival,
    method: &Method,
    uri: &Uri,
    h: &HeaderMap,
    endpoint: &'static str,
) -> Arc<Record> {
    let query = uri.query().unwrap_or("").to_string();
    let params = parse_query(&query);
    let mut t = blank(arr.id.clone(), method.as_str(), uri.path(), endpoint);
    t.test_id = header_str(h, "x-test-id").or_else(|| get(&params, "test_id").map(str::to_string));
    t.query = query;
    t.origin = header_str(h, "origin");
    t.received_unix_ms = arr.unix_ms;
    t.traceparent = header_str(h, "traceparent");
    match t.traceparent.as_deref().and_then(parse_traceparent) {
        Some(p) => {
            t.traceparent_valid = true;
            t.trace_id = p.trace_id;
            t.parent_span_id = Some(p.span_id);
        }
        None => t.trace_id = new_trace_id(),
    }
    t.span_id = new_span_id();
    app.store.insert(arr.t0, t)
}

/// Marks the record `client_gone` if the handler is dropped before it returned a response
/// (hyper drops the handler future when the connection fails while waiting in the queue or
/// through late-header prefill).
struct CancelGuard(Option<Arc<Record>>);

impl CancelGuard {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if let Some(r) = self.0.take() {
            r.client_gone();
        }
    }
}

/// A complete (non-streamed) response, recorded as one `body` write.
fn full_response(
    rec: &Record,
    status: u16,
    content_type: &str,
    body: Vec<u8>,
    extra: &[(&'static str, String)],
) -> Response {
    rec.update(|t| t.status = status);
    rec.headers_sent();
    rec.wrote(Kind::Body, 0, &body, None);
    rec.finish("complete");
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let h = resp.headers_mut();
    set(h, "content-type", content_type);
    set(h, "cache-control", "no-cache");
    set(h, "x-request-id", &rec.id);
    for (k, v) in extra {
        set(h, k, v);
    }
    resp
}

fn bad_request(rec: &Record, msg: &str) -> Response {
    let body = json!({"error": {"message": msg, "type": "invalid_request_error", "param": null, "code": "bad_scenario"}});
    full_response(
        rec,
        400,
        "application/json",
        body.to_string().into_bytes(),
        &[],
    )
}

/// What the request asked for, besides the scenario.
struct Ask {
    model: String,
    stream: bool,
    include_usage: bool,
    prompt_tokens: u64,
}

/// POST /v1/chat/completions (OpenAI-compatible).
async fn chat(
    State(app): State<App>,
    Extension(arr): Extension<Arrival>,
    method: Method,
    uri: Uri,
    h: HeaderMap,
    body: Bytes,
) -> Response {
    let rec = new_record(&app, &arr, &method, &uri, &h, "chat");
    let req: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return bad_request(&rec, &format!("request body is not JSON: {e}")),
    };
    let params = parse_query(uri.query().unwrap_or(""));
    let model = get(&params, "model")
        .or(req["model"].as_str())
        .unwrap_or("default")
        .to_string();
    // A rough prompt size for usage: ~4 bytes per token, like OpenAI's rule of thumb.
    let prompt_chars: usize = req["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .map(|x| {
                    x["content"]
                        .as_str()
                        .map_or_else(|| x["content"].to_string().len(), str::len)
                })
                .sum()
        })
        .unwrap_or(0);
    let ask = Ask {
        model,
        stream: req["stream"].as_bool().unwrap_or(false),
        include_usage: req["stream_options"]["include_usage"]
            .as_bool()
            .unwrap_or(false),
        prompt_tokens: (prompt_chars as u64).div_ceil(4).max(1),
    };
    generation(app, arr, rec, &params, ask).await
}

/// GET /v1/stream (EventSource): everything from the query.
async fn stream_get(
    State(app): State<App>,
    Extension(arr): Extension<Arrival>,
    method: Method,
    uri: Uri,
    h: HeaderMap,
) -> Response {
    let rec = new_record(&app, &arr, &method, &uri, &h, "stream");
    let params = parse_query(uri.query().unwrap_or(""));
    let ask = Ask {
        model: get(&params, "model").unwrap_or("default").to_string(),
        stream: true,
        include_usage: false,
        prompt_tokens: 1,
    };
    generation(app, arr, rec, &params, ask).await
}

/// The common path of both LLM endpoints: scenario, error status, queue, headers, generator.
async fn generation(
    app: App,
    arr: Arrival,
    rec: Arc<Record>,
    params: &[(String, String)],
    ask: Ask,
) -> Response {
    let mut sc = match Scenario::from_model(&ask.model) {
        Ok(s) => s,
        Err(e) => return bad_request(&rec, &e),
    };
    if let Err(e) = sc.apply(params) {
        return bad_request(&rec, &e);
    }
    let model_name = match &sc.served_model {
        Some(m) => m.clone(),
        None => ask.model.split('?').next().unwrap_or("default").to_string(),
    };
    rec.update(|t| {
        t.stream = ask.stream;
        t.format = Some(sc.format.name());
        t.model = (ask.stream && sc.status.is_none() && sc.format.names_model()).then(|| model_name.clone());
        t.scenario = Some(sc.to_json());
    });
    if let Some(status) = sc.status {
        let mut extra = vec![];
        if status == 429 || status == 503 {
            extra.push(("retry-after", "1".to_string()));
        }
        return full_response(
            &rec,
            status,
            "application/json",
            error_body(sc.format, status),
            &extra,
        );
    }

    let guard = CancelGuard(Some(rec.clone()));
    let permit = app
        .slots
        .clone()
        .acquire_owned()
        .await
        .expect("the semaphore is never closed");
    let t_gen = Instant::now();
    let queue_ms = round_us((t_gen - arr.t0).as_secs_f64() * 1000.0);
    rec.update(|t| t.queue_ms = Some(queue_ms));
    let include_usage = sc.include_usage(ask.include_usage);
    let shaper = Shaper::new(
        sc.format,
        &rec.id,
        &model_name,
        include_usage,
        sc.ids,
        ask.prompt_tokens,
    );
    let (trace_id, span_id) = {
        let s = rec.snapshot();
        (s.trace_id, s.span_id)
    };
    let at = |ms: f64| generate::deadline(t_gen, ms);

    let mut st = vec![format!("queue;dur={queue_ms}")];
    if !ask.stream {
        // The whole answer is "generated" before anything is sent.
        crate::timer::sleep_until(at(sc.total_ms())).await;
        guard.disarm();
        drop(permit);
        let text = crate::answer::text_of(sc.answer, sc.tokens);
        let (ct, body) = shaper.non_stream(&text, sc.tokens);
        rec.update(|t| {
            t.prefill_ms = Some(sc.prefill_ms);
            t.content_tokens = sc.tokens;
        });
        st.push(format!("prefill;dur={}", sc.prefill_ms));
        st.push(format!("trace;desc=00-{trace_id}-{span_id}-01"));
        let mut extra = vec![];
        if sc.server_timing {
            extra.push(("server-timing", st.join(", ")));
        }
        if sc.traceresponse {
            extra.push(("traceresponse", format!("00-{trace_id}-{span_id}-01")));
        }
        return full_response(&rec, 200, ct, body, &extra);
    }

    if sc.headers_late {
        // Headers wait for the first content, like servers that buffer through prefill.
        crate::timer::sleep_until(at(first_write_ms(&sc))).await;
        st.push(format!(
            "prefill;dur={}",
            round_us((Instant::now() - t_gen).as_secs_f64() * 1000.0)
        ));
    }
    st.push(format!("trace;desc=00-{trace_id}-{span_id}-01"));

    let format = sc.format;
    let server_timing = sc.server_timing;
    let traceresponse = sc.traceresponse;
    let accel_buffering = sc.accel_buffering;
    let (gen, body) = Generator::new(rec.clone(), sc, shaper, t_gen);
    tokio::spawn(gen.run(permit));

    let mut resp = Response::new(Body::new(body));
    let h = resp.headers_mut();
    set(h, "content-type", format.content_type());
    set(h, "cache-control", "no-cache");
    set(h, "x-request-id", &rec.id);
    if server_timing {
        set(h, "server-timing", &st.join(", "));
    }
    if traceresponse {
        set(h, "traceresponse", &format!("00-{trace_id}-{span_id}-01"));
    }
    for (k, v) in format.extra_headers() {
        set(h, k, v);
    }
    if let Some(b) = accel_buffering {
        set(h, "x-accel-buffering", if b { "yes" } else { "no" });
    }
    rec.headers_sent();
    guard.disarm();
    resp
}

fn num(params: &[(String, String)], key: &str, default: u64, max: u64) -> Result<u64, String> {
    match get(params, key) {
        None => Ok(default),
        Some(v) => match v.parse::<u64>() {
            Ok(n) if n <= max => Ok(n),
            _ => Err(format!("{key}: expected an integer 0..={max}, not {v:?}")),
        },
    }
}

fn ms_param(params: &[(String, String)], key: &str) -> Result<f64, String> {
    match get(params, key) {
        None => Ok(0.0),
        Some(v) => match v.parse::<f64>() {
            Ok(x) if (0.0..=crate::scenario::MAX_MS).contains(&x) => Ok(x),
            _ => Err(format!("{key}: expected milliseconds, not {v:?}")),
        },
    }
}

/// GET /bytes?size=N&chunk=M&gap_ms=G: deterministic octets, M per write, a write every G ms.
async fn bytes(
    State(app): State<App>,
    Extension(arr): Extension<Arrival>,
    method: Method,
    uri: Uri,
    h: HeaderMap,
) -> Response {
    let rec = new_record(&app, &arr, &method, &uri, &h, "bytes");
    let params = parse_query(uri.query().unwrap_or(""));
    let parsed = (|| {
        Ok::<_, String>((
            num(&params, "size", 1024, MAX_BYTES)?,
            num(&params, "chunk", 256, MAX_BYTES)?.max(1),
            ms_param(&params, "gap_ms")?,
        ))
    })();
    let (size, chunk, gap_ms) = match parsed {
        Ok(p) => p,
        Err(e) => return bad_request(&rec, &e),
    };
    rec.update(|t| t.stream = true);
    let (tx, body) = generate::bytes_channel(rec.clone());
    tokio::spawn(generate::run_bytes(
        rec.clone(),
        tx,
        size,
        chunk,
        gap_ms,
        Instant::now(),
    ));
    let mut resp = Response::new(Body::new(body));
    let h = resp.headers_mut();
    set(h, "content-type", "application/octet-stream");
    set(h, "cache-control", "no-cache");
    set(h, "x-request-id", &rec.id);
    rec.headers_sent();
    resp
}

/// /plain?status=NNN&type=json|text|html&body=TEXT&size=N&delay_ms=D: a non-streamed response.
async fn plain(
    State(app): State<App>,
    Extension(arr): Extension<Arrival>,
    method: Method,
    uri: Uri,
    h: HeaderMap,
) -> Response {
    let rec = new_record(&app, &arr, &method, &uri, &h, "plain");
    let params = parse_query(uri.query().unwrap_or(""));
    let parsed = (|| {
        Ok::<_, String>((
            num(&params, "status", 200, 599)?,
            num(&params, "size", 0, MAX_PLAIN)?,
            ms_param(&params, "delay_ms")?,
        ))
    })();
    let (status, size, delay_ms) = match parsed {
        Ok(p) if p.0 >= 200 => p,
        Ok(_) => return bad_request(&rec, "status must be 200..=599"),
        Err(e) => return bad_request(&rec, &e),
    };
    tokio::time::sleep(Duration::from_secs_f64(delay_ms / 1000.0)).await;
    let message = get(&params, "body").unwrap_or("plain response").to_string();
    let pad = "x".repeat(size as usize);
    let (ct, body) = match get(&params, "type").unwrap_or("json") {
        "text" => ("text/plain; charset=utf-8", format!("{message}{pad}")),
        "html" => ("text/html; charset=utf-8", format!("<!doctype html><p>{message}</p>{pad}")),
        _ => ("application/json", json!({"ok": status < 400, "status": status, "id": rec.id, "message": message, "pad": pad}).to_string()),
    };
    full_response(&rec, status as u16, ct, body.into_bytes(), &[])
}

/// GET /redirect?to=/path&status=302.
async fn redirect(
    State(app): State<App>,
    Extension(arr): Extension<Arrival>,
    method: Method,
    uri: Uri,
    h: HeaderMap,
) -> Response {
    let rec = new_record(&app, &arr, &method, &uri, &h, "redirect");
    let params = parse_query(uri.query().unwrap_or(""));
    let to = get(&params, "to").unwrap_or("/plain");
    // Same-server paths only: this is a test server, not an open redirector.
    if !to.starts_with('/') || to.starts_with("//") {
        return bad_request(&rec, "to must be a path starting with /");
    }
    let status = match get(&params, "status").unwrap_or("302") {
        s @ ("301" | "302" | "303" | "307" | "308") => s.parse().unwrap(),
        s => return bad_request(&rec, &format!("status {s} is not a redirect")),
    };
    full_response(
        &rec,
        status,
        "text/plain; charset=utf-8",
        format!("redirecting to {to}").into_bytes(),
        &[("location", to.to_string())],
    )
}

fn json_response(status: StatusCode, v: Value) -> Response {
    let mut resp = Response::new(Body::from(v.to_string()));
    *resp.status_mut() = status;
    set(resp.headers_mut(), "content-type", "application/json");
    set(resp.headers_mut(), "cache-control", "no-store");
    resp
}

/// GET /__truth?test_id=X | id=ID [&wait_ms=N] [&all=1]
async fn truth(State(app): State<App>, uri: Uri) -> Response {
    let params = parse_query(uri.query().unwrap_or(""));
    let (id, test_id) = (get(&params, "id"), get(&params, "test_id"));
    if id.is_none() && test_id.is_none() {
        return json_response(
            StatusCode::BAD_REQUEST,
            json!({"error": "give id= or test_id="}),
        );
    }
    let wait = get(&params, "wait_ms")
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    let found = if wait > 0 {
        app.store
            .wait_for(id, test_id, Duration::from_millis(wait))
            .await
    } else {
        app.store.find(id, test_id)
    };
    if found.is_empty() {
        return json_response(
            StatusCode::NOT_FOUND,
            json!({"error": "unknown request", "id": id, "test_id": test_id}),
        );
    }
    if matches!(get(&params, "all"), Some("1" | "true")) {
        let all: Vec<Value> = found
            .iter()
            .rev()
            .map(|r| serde_json::to_value(r.snapshot()).unwrap())
            .collect();
        return json_response(StatusCode::OK, Value::Array(all));
    }
    json_response(
        StatusCode::OK,
        serde_json::to_value(found[0].snapshot()).unwrap(),
    )
}

/// GET /__log[?test_id=X]: every request seen (except /__*), in arrival order.
async fn log(State(app): State<App>, uri: Uri) -> Response {
    let params = parse_query(uri.query().unwrap_or(""));
    let test_id = get(&params, "test_id");
    let entries: Vec<Value> = app
        .store
        .log_snapshot()
        .into_iter()
        .filter(|e| test_id.is_none() || e.test_id.as_deref() == test_id)
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    json_response(StatusCode::OK, Value::Array(entries))
}

/// POST /__reset: forget all records and log entries.
async fn reset(State(app): State<App>) -> Response {
    app.store.reset();
    json_response(StatusCode::OK, json!({"ok": true}))
}

/// How long a static file asked for with `hang` is held (the test has long moved on).
const STATIC_HANG: Duration = Duration::from_secs(300);
/// The longest `delay_ms` a static file takes.
const STATIC_MAX_DELAY_MS: f64 = 60_000.0;

/// Static files from `--static PREFIX=DIR` mounts (longest prefix wins).
async fn static_files(State(app): State<App>, req: Request) -> Response {
    let path = req.uri().path().to_string();
    let query = req.uri().query().map(str::to_string);
    let mount = app
        .mounts
        .iter()
        .find(|(p, _)| p == "/" || path == *p || path.starts_with(&format!("{p}/")));
    let Some((prefix, dir)) = mount else {
        return (StatusCode::NOT_FOUND, "not found\n").into_response();
    };
    if prefix != "/" && path == *prefix {
        let loc = format!(
            "{prefix}/{}",
            query.as_ref().map(|q| format!("?{q}")).unwrap_or_default()
        );
        let mut r = StatusCode::PERMANENT_REDIRECT.into_response();
        set(r.headers_mut(), "location", &loc);
        return r;
    }
    let rest = if prefix == "/" {
        path.as_str()
    } else {
        &path[prefix.len()..]
    };
    let params = query.as_deref().map(parse_query).unwrap_or_default();
    // A file served late, failing, or never (tests of a slow or broken CDN, issue 27: the SDK's
    // wasm fetched at `?delay_ms=1500`, `?status=500`, `?hang=1`). `hang` holds the response
    // until the client goes away (the request's future is dropped then), at most STATIC_HANG.
    if get(&params, "hang").is_some() {
        tokio::time::sleep(STATIC_HANG).await;
        return (StatusCode::GATEWAY_TIMEOUT, "hung\n").into_response();
    }
    if let Ok(ms) = ms_param(&params, "delay_ms") {
        if ms > 0.0 {
            tokio::time::sleep(Duration::from_secs_f64(ms.min(STATIC_MAX_DELAY_MS) / 1000.0)).await;
        }
    }
    if let Some(code) = get(&params, "status").and_then(|v| v.parse::<u16>().ok()).and_then(|c| StatusCode::from_u16(c).ok()) {
        if code != StatusCode::OK {
            return (code, "scripted failure\n").into_response();
        }
    }
    let coi = matches!(get(&params, "coi"), Some("1" | "true"));
    // A page's Content-Security-Policy, as its site would send it (tests: what the SDK needs).
    let csp = get(&params, "csp").map(str::to_string);
    let (mut parts, body) = req.into_parts();
    let pq = match &query {
        Some(q) => format!("{rest}?{q}"),
        None => rest.to_string(),
    };
    parts.uri = match pq.parse() {
        Ok(u) => u,
        Err(_) => return (StatusCode::BAD_REQUEST, "bad path\n").into_response(),
    };
    let mut svc = dir.clone();
    let mut resp = match svc.try_call(Request::from_parts(parts, body)).await {
        Ok(r) => r.map(Body::new),
        Err(e) => {
            return (StatusCode::INTERNAL_SERVER_ERROR, format!("static: {e}\n")).into_response()
        }
    };
    let h = resp.headers_mut();
    set(h, "cache-control", "no-store");
    // Pin the types browsers are strict about (module scripts, wasm streaming compile).
    let ext = rest.rsplit('.').next().unwrap_or("");
    match ext {
        "wasm" => set(h, "content-type", "application/wasm"),
        "js" | "mjs" => set(h, "content-type", "text/javascript; charset=utf-8"),
        _ => {}
    }
    let is_html = h
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("text/html"));
    if coi && is_html {
        set(h, "cross-origin-opener-policy", "same-origin");
        set(h, "cross-origin-embedder-policy", "require-corp");
    }
    if let Some(policy) = csp.filter(|_| is_html) {
        set(h, "content-security-policy", &policy);
    }
    resp
}
