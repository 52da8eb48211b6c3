//! HTTP surface: routes, CORS, rate limiting, read-token check, handlers.
//!
//! Owner of status codes. Ingest answers: 200 stored (after the commit), 400 bad beacon,
//! 403 origin not allowed, 408 body too slow, 413 too big, 429 rate limited (+ Retry-After),
//! 503 storage failed. Every ingest answer to an allowed origin carries the CORS headers,
//! errors included, so an SDK using `fetch` can read why it was refused.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::alerts::Engine;
use crate::cli::Config;
use crate::ingest::clock::{self, now_ms};
use crate::metrics::counters::{add, Counters};
use crate::ingest::{self, MAX_BODY};
use crate::log::Every;
use crate::query::plan::QueryError;
use crate::query::{self, Filter};
use crate::serve::Registry;
use crate::store::Storage;

pub struct AppState {
    pub cfg: Config,
    /// The store (SQLite or ClickHouse): writes, reads, the alert engine's windows.
    pub storage: Storage,
    pub engine: Mutex<Engine>,
    /// How long the last budget evaluation took (ms), for `/api/alerts`.
    pub last_eval_ms: Mutex<Option<f64>>,
    /// `/metrics`.
    pub metrics: Arc<crate::metrics::Metrics>,
    pub counters: Arc<Counters>,
    pub connections: Arc<Registry>,
    /// Origins the collector itself is served on (`--public-url`, the listen address): a
    /// browser on them posts same-origin. Never derived from the request's `Host`, which the
    /// page's own DNS decides (DNS rebinding).
    pub own_origins: Vec<String>,
    limiter: Mutex<Limiter>,
}

impl AppState {
    pub fn new(
        cfg: Config,
        storage: Storage,
        engine: Engine,
        metrics: Arc<crate::metrics::Metrics>,
        counters: Arc<Counters>,
        connections: Arc<Registry>,
        addr: SocketAddr,
    ) -> AppState {
        let mut own = vec![format!("http://{addr}")];
        if addr.ip().is_loopback() {
            own.push(format!("http://localhost:{}", addr.port()));
        }
        own.extend(cfg.public_origin.clone());
        AppState {
            cfg,
            storage,
            engine: Mutex::new(engine),
            last_eval_ms: Mutex::new(None),
            metrics,
            counters,
            connections,
            own_origins: own,
            limiter: Mutex::new(Limiter::default()),
        }
    }
}

pub type Shared = Arc<AppState>;

pub fn router(state: Shared) -> Router {
    let reads = Router::new()
        .route("/api/summary", get(summary))
        .route("/api/timeseries", get(timeseries))
        .route("/api/histogram", get(histogram))
        .route("/api/alerts", get(alerts))
        .route("/metrics", get(metrics))
        .route_layer(middleware::from_fn_with_state(state.clone(), require_token));
    Router::new()
        .route("/v1/rum", post(ingest).options(preflight))
        .route("/healthz", get(healthz))
        // The dashboard's page, code and style hold no data, so no token: the page takes
        // `?token=` from its address (or this tab's session) and sends it with every API call.
        .route("/", get(dashboard))
        .route(
            "/dashboard.js",
            get(|| asset("text/javascript; charset=utf-8", crate::serve::dashboard::JS)),
        )
        .route(
            "/dashboard.css",
            get(|| asset("text/css; charset=utf-8", crate::serve::dashboard::CSS)),
        )
        .merge(reads)
        .layer(middleware::map_response(nosniff))
        .with_state(state)
}

/// Every answer: its content type is the only way to read it.
async fn nosniff(mut r: Response) -> Response {
    r.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

fn err(status: StatusCode, msg: impl Into<String>) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        json!({"error": msg.into()}).to_string(),
    )
        .into_response()
}

fn json_ok(v: Value) -> Response {
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        v.to_string(),
    )
        .into_response()
}

// ---------- CORS ----------

/// How to answer a caller's `Origin`.
enum Cors {
    /// No Origin (curl, a server), or the collector's own: no CORS headers needed.
    None,
    /// `--allow-origin '*'`: any origin, answered `*` and never with credentials (which would
    /// grant any page, `null` ones included, a credentialed read). Beacons need none: the SDK's
    /// fetch sends no cookies cross-origin and its text/plain sendBeacon is a no-cors request.
    Any,
    /// A listed origin, echoed exactly (credentialed callers are allowed for listed origins).
    Exact(HeaderValue),
}

/// `Err`: a foreign origin not on the allowlist.
fn check_origin(s: &AppState, h: &HeaderMap) -> Result<Cors, String> {
    let Some(o) = h.get(header::ORIGIN) else {
        return Ok(Cors::None);
    };
    let os = o.to_str().unwrap_or("");
    // Browsers send Origin on same-origin POSTs too. Our origin is the one we are served on,
    // never `http://` + the Host header: a rebound DNS name makes those two agree for any page.
    if s.own_origins.iter().any(|a| a == os) {
        return Ok(Cors::None);
    }
    if s.cfg.allow_origins.iter().any(|a| a == os) {
        return Ok(Cors::Exact(o.clone()));
    }
    if s.cfg.allow_origins.iter().any(|a| a == "*") {
        return Ok(Cors::Any);
    }
    Err(format!(
        "origin {os:?} is not allowed (start the collector with --allow-origin {os})"
    ))
}

fn with_cors(mut r: Response, cors: &Cors) -> Response {
    let h = r.headers_mut();
    match cors {
        Cors::None => return r,
        Cors::Any => {
            h.insert(
                header::ACCESS_CONTROL_ALLOW_ORIGIN,
                HeaderValue::from_static("*"),
            );
        }
        Cors::Exact(o) => {
            h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, o.clone());
            h.insert(
                header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
                HeaderValue::from_static("true"),
            );
            h.append(header::VARY, HeaderValue::from_static("origin"));
        }
    }
    h.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("retry-after"),
    );
    r
}

async fn preflight(State(s): State<Shared>, h: HeaderMap) -> Response {
    match check_origin(&s, &h) {
        Err(e) => err(StatusCode::FORBIDDEN, e),
        Ok(origin) => {
            let mut r = StatusCode::NO_CONTENT.into_response();
            let hm = r.headers_mut();
            hm.insert(
                header::ACCESS_CONTROL_ALLOW_METHODS,
                HeaderValue::from_static("POST, OPTIONS"),
            );
            let req = h
                .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
                .cloned()
                .unwrap_or(HeaderValue::from_static("content-type"));
            hm.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, req);
            hm.insert(
                header::ACCESS_CONTROL_MAX_AGE,
                HeaderValue::from_static("86400"),
            );
            with_cors(r, &origin)
        }
    }
}

// ---------- rate limit ----------

/// Token bucket per client IP: `rate` beacons per second, burst `rate`.
#[derive(Default)]
struct Limiter {
    buckets: HashMap<IpAddr, (f64, Instant)>,
}

impl Limiter {
    /// `Ok(())` or `Err(seconds until a beacon would be accepted)`.
    fn take(&mut self, ip: IpAddr, rate: u32, now: Instant) -> Result<(), u64> {
        let rate = rate as f64;
        if self.buckets.len() > 100_000 {
            // Bound memory under many clients: forget idle ones (a full bucket is the default).
            self.buckets
                .retain(|_, (_, t)| now.duration_since(*t).as_secs_f64() < 1.0);
        }
        let (tokens, last) = self.buckets.entry(ip).or_insert((rate, now));
        *tokens = (*tokens + now.duration_since(*last).as_secs_f64() * rate).min(rate);
        *last = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else {
            Err((((1.0 - *tokens) / rate).ceil() as u64).max(1))
        }
    }
}

// ---------- ingest ----------

static INVALID_LOG: Every = Every::new(Duration::from_secs(10));
static LIMIT_LOG: Every = Every::new(Duration::from_secs(10));
static BODY_LOG: Every = Every::new(Duration::from_secs(10));

async fn ingest(
    State(s): State<Shared>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    h: HeaderMap,
    body: Body,
) -> Response {
    let cors = match check_origin(&s, &h) {
        Ok(o) => o,
        Err(e) => {
            add(&s.counters.beacons_origin_refused, 1);
            return err(StatusCode::FORBIDDEN, e);
        }
    };
    // The client behind trusted proxies (`--trusted-proxy`), else the TCP peer.
    let xff = h
        .get_all("x-forwarded-for")
        .into_iter()
        .filter_map(|v| v.to_str().ok());
    let client = crate::serve::proxy::client_ip(peer.ip(), xff, &s.cfg.trusted_proxies);
    let r = ingest_inner(&s, client, &h, body).await;
    with_cors(r, &cors)
}

async fn ingest_inner(s: &AppState, client: IpAddr, h: &HeaderMap, body: Body) -> Response {
    let c = &s.counters;
    if s.cfg.rate_limit > 0 {
        let res = s.limiter.lock().unwrap_or_else(|e| e.into_inner()).take(
            client,
            s.cfg.rate_limit,
            Instant::now(),
        );
        if let Err(after) = res {
            add(&c.beacons_rate_limited, 1);
            if let Some(n) = LIMIT_LOG.hit() {
                tracing::warn!(refused = n, last_client = %client, "rate limit: beacons answered 429");
            }
            let mut r = err(
                StatusCode::TOO_MANY_REQUESTS,
                format!("rate limit: {} beacons/s per client", s.cfg.rate_limit),
            );
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(after));
            return r;
        }
    }
    let too_big = || {
        add(&c.beacons_too_large, 1);
        err(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("body over {MAX_BODY} bytes (split the batch)"),
        )
    };
    let declared = h
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY as u64) {
        return too_big();
    }
    // The limit also covers chunked bodies without a Content-Length; the timeout, bodies that
    // trickle in (or stop) to hold the connection.
    let timeout = Duration::from_secs_f64(s.cfg.body_timeout_s);
    let bytes: Bytes = match tokio::time::timeout(timeout, axum::body::to_bytes(body, MAX_BODY))
        .await
    {
        Ok(Ok(b)) => b,
        Ok(Err(_)) => return too_big(),
        Err(_) => {
            add(&c.beacons_body_timeout, 1);
            if let Some(n) = BODY_LOG.hit() {
                tracing::warn!(closed = n, timeout_s = s.cfg.body_timeout_s, last_client = %client,
                    "closed connections whose request body did not arrive in time");
            }
            let mut r = err(
                StatusCode::REQUEST_TIMEOUT,
                format!("body not received within {} s", s.cfg.body_timeout_s),
            );
            r.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return r;
        }
    };
    // Parsed as JSON whatever the content type: the SDK sends text/plain to avoid a preflight.
    let mut beacon = match ingest::decode(&bytes) {
        Ok(b) => b,
        Err(e) => {
            add(&c.beacons_invalid, 1);
            if let Some(n) = INVALID_LOG.hit() {
                tracing::info!(refused = n, last_client = %client, last_error = %e, "invalid beacons answered 400");
            }
            return err(StatusCode::BAD_REQUEST, e);
        }
    };
    let received = now_ms();
    let admitted = clock::admit(&mut beacon, received);
    add(&c.records_refused_too_old, admitted.too_old as u64);
    add(&c.records_refused_future, admitted.future as u64);
    match s
        .storage
        .write(beacon, Some(client.to_string()), received as i64, admitted)
        .await
    {
        Ok(st) => {
            tracing::debug!(%client, stored = st.stored, duplicates = st.duplicates, refused = admitted.refused(), skew_ms = admitted.skew_ms, "beacon");
            json_ok(json!({
                "stored": st.stored,
                "duplicates": st.duplicates,
                "refused": {"tooOld": admitted.too_old, "future": admitted.future},
            }))
        }
        Err(e) => {
            let mut r = err(StatusCode::SERVICE_UNAVAILABLE, e.msg);
            if let Some(after) = e.retry_after {
                r.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(after));
            }
            r
        }
    }
}

/// 200 while beacons are acknowledged (`ok`, or `spooling` on ClickHouse), 503 when not.
async fn healthz(State(s): State<Shared>) -> Response {
    let h = s.storage.health();
    let mut body = json!({
        "status": h.status,
        "connections": s.connections.open(),
        "counters": s.counters.json(),
        "logLinesDropped": crate::log::DROPPED.load(std::sync::atomic::Ordering::Relaxed),
    });
    if let (Some(b), Value::Object(d)) = (body.as_object_mut(), h.detail) {
        b.extend(d);
    }
    let status = if h.status != "failing" {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body.to_string(),
    )
        .into_response()
}

// ---------- reads ----------

async fn require_token(State(s): State<Shared>, req: Request, next: Next) -> Response {
    if let Some(tok) = &s.cfg.read_token {
        let bearer = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::to_string);
        let query = req.uri().query().and_then(|q| {
            q.split('&')
                .find_map(|kv| kv.strip_prefix("token="))
                .map(percent_decode)
        });
        let ok = [bearer, query]
            .into_iter()
            .flatten()
            .any(|t| ct_eq(t.as_bytes(), tok.as_bytes()));
        if !ok {
            let mut r = err(
                StatusCode::UNAUTHORIZED,
                "read token required (Authorization: Bearer TOKEN or ?token=TOKEN)",
            );
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return r;
        }
    }
    next.run(req).await
}

/// Constant-time comparison, so the token cannot be guessed byte by byte from timings.
fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match b[i] {
            b'%' if i + 2 < b.len() => match (hex(b[i + 1]), hex(b[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[derive(Deserialize, Default)]
pub struct Params {
    from: Option<f64>,
    to: Option<f64>,
    route: Option<String>,
    model: Option<String>,
    provider: Option<String>,
    outcome: Option<String>,
    metric: Option<String>,
    q: Option<f64>,
    bucket: Option<f64>,
    metrics: Option<String>,
    bins: Option<usize>,
}

impl Params {
    fn filter(&self) -> Filter {
        let s = |v: &Option<String>| v.clone().filter(|x| !x.is_empty());
        Filter {
            from: self.from,
            to: self.to,
            route: s(&self.route),
            model: s(&self.model),
            provider: s(&self.provider),
            outcome: s(&self.outcome),
        }
    }
}

/// A read's failure as an answer: 503 past the query budget, else 500.
fn read_error(s: &Shared, e: QueryError) -> Response {
    match e {
        QueryError::Budget => {
            add(&s.counters.queries_over_budget, 1);
            err(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "the query ran past its {} s budget (--query-budget): narrow the window or the filter",
                    s.storage.query_budget().as_secs_f64()
                ),
            )
        }
        e => err(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("query failed: {e}"),
        ),
    }
}

async fn summary(State(s): State<Shared>, Query(p): Query<Params>) -> Response {
    match s.storage.summary(p.filter()).await {
        Ok(v) => json_ok(v),
        Err(e) => read_error(&s, e),
    }
}

async fn timeseries(State(s): State<Shared>, Query(p): Query<Params>) -> Response {
    let metric = p.metric.clone().unwrap_or_else(|| "ttft".into());
    let Some(idx) = crate::query::agg::metric_index(&metric) else {
        return err(
            StatusCode::BAD_REQUEST,
            format!(
                "unknown metric {metric:?} (known: {})",
                query::metric_names().join(", ")
            ),
        );
    };
    let q = p.q.unwrap_or(0.95);
    if !(q > 0.0 && q <= 1.0) {
        return err(StatusCode::BAD_REQUEST, "q must be in (0, 1], e.g. 0.95");
    }
    let bucket = p.bucket.unwrap_or(60.0);
    if !(bucket.is_finite() && bucket >= 0.001) {
        return err(
            StatusCode::BAD_REQUEST,
            "bucket must be a positive number of seconds",
        );
    }
    let f = p.filter();
    let budgets: Vec<Value> = s
        .cfg
        .budgets
        .iter()
        .filter(|b| b.metric == metric)
        .map(|b| json!({"q": b.q, "limit": b.limit, "text": b.text}))
        .collect();
    match s.storage.timeseries(f, idx, q, bucket * 1000.0).await {
        Ok(Ok(points)) => json_ok(
            json!({"metric": metric, "q": q, "bucketMs": bucket * 1000.0, "budgets": budgets, "points": points,
                   "percentiles": s.storage.percentiles()}),
        ),
        Ok(Err(msg)) => err(StatusCode::BAD_REQUEST, msg),
        Err(e) => read_error(&s, e),
    }
}

async fn histogram(State(s): State<Shared>, Query(p): Query<Params>) -> Response {
    let names: Vec<String> = p
        .metrics
        .clone()
        .unwrap_or_else(|| "ttft,perceivedTtft".into())
        .split(',')
        .map(|x| x.trim().to_string())
        .collect();
    if let Some(bad) = names.iter().find(|n| !query::is_metric(n)) {
        return err(StatusCode::BAD_REQUEST, format!("unknown metric {bad:?}"));
    }
    let bins = p.bins.unwrap_or(30);
    let f = p.filter();
    match s.storage.histogram(f, names, bins).await {
        Ok(v) => json_ok(v),
        Err(e) => read_error(&s, e),
    }
}

async fn alerts(State(s): State<Shared>) -> Response {
    let e = s.engine.lock().unwrap_or_else(|e| e.into_inner());
    let mut list: Vec<_> = e.alerts.iter().rev().cloned().collect();
    // Firing first, then most recent.
    list.sort_by_key(|a| a.state != "firing");
    let budgets: Vec<Value> = e
        .budgets
        .iter()
        .zip(&e.current)
        .map(|(b, v)| json!({"budget": b.text, "metric": b.metric, "q": b.q, "limit": b.limit, "current": v}))
        .collect();
    json_ok(json!({
        "firing": e.firing().count(),
        "alerts": list,
        "budgets": budgets,
        "windowSecs": e.window_ms / 1000.0,
        "sustainSecs": e.sustain_ms / 1000.0,
        "lastEvaluationMs": *s.last_eval_ms.lock().unwrap_or_else(|e| e.into_inner()),
    }))
}

async fn dashboard() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (header::CONTENT_SECURITY_POLICY, crate::serve::dashboard::CSP),
            // The page's URL may hold ?token= until its script moves it out: never send it on.
            (header::REFERRER_POLICY, "no-referrer"),
            (header::X_FRAME_OPTIONS, "DENY"),
        ],
        crate::serve::dashboard::HTML,
    )
        .into_response()
}

async fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

// ---------- alert evaluation ----------

/// `/metrics`: the Prometheus exposition (OpenMetrics text).
async fn metrics(State(s): State<Shared>) -> Response {
    match s.metrics.render() {
        Ok(body) => (
            [
                (header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE),
                (header::CACHE_CONTROL, "no-store"),
            ],
            body,
        )
            .into_response(),
        Err(e) => err(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

// ---------- alert evaluation ----------

/// Evaluates budgets on a timer, forever.
pub async fn alert_loop(s: Shared) {
    if s.cfg.budgets.is_empty() {
        return;
    }
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(s.cfg.eval_interval_ms));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let s2 = s.clone();
        let _ = tokio::task::spawn_blocking(move || {
            let t = Instant::now();
            // Evaluated on a copy, the lock not held while the store answers: a read over the
            // network (ClickHouse) must never hold `/api/alerts`, which takes the lock on a
            // runtime thread, and through it the runtime that drives that very read. Only this
            // loop changes the engine, so the copy replaces it whole.
            let mut e = s2.engine.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let r = s2.storage.evaluate(&mut e, now_ms()).map(|events| {
                for ev in events {
                    let a = e.alerts.iter().find(|a| match ev {
                        crate::alerts::Event::Fired(id) | crate::alerts::Event::Resolved(id) => {
                            a.id == id
                        }
                    });
                    if let Some(a) = a {
                        tracing::warn!(id = a.id, state = a.state, budget = %a.budget, value = a.value.round(), "alert");
                    }
                }
            });
            *s2.engine.lock().unwrap_or_else(|e| e.into_inner()) = e;
            let ms = t.elapsed().as_secs_f64() * 1000.0;
            *s2.last_eval_ms.lock().unwrap_or_else(|e| e.into_inner()) = Some(ms);
            s2.metrics.alert_evaluated(ms / 1000.0);
            if let Err(e) = r {
                tracing::error!(error = %e, "alert evaluation failed");
            }
        })
        .await;
    }
}
