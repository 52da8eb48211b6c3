//! The HTTP contract against an in-process collector on 127.0.0.1:0 with a real SQLite file:
//! every bad-input class, CORS, rate limiting, dedupe, read token, summary and timeseries
//! (percentiles within the sketch's error of independently computed exact values).

mod common;

use common::*;
use llm_rum_collector::cli::Config;
use llm_rum_collector_testkit::client;
use serde_json::{json, Value};

async fn start(cfg: Config) -> std::net::SocketAddr {
    llm_rum_collector::start(cfg).await.expect("start").addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_a_clear_4xx_and_nothing_is_stored() {
    let dir = TempDir::new("bad");
    let addr = start(config(&dir.db())).await;
    let good = beacon(vec![record("r1", recent(), 100.0)]);
    let mutate = |f: &dyn Fn(&mut Value)| {
        let mut b = good.clone();
        f(&mut b);
        b.to_string().into_bytes()
    };
    let cases: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        ("over 64 KiB", vec![b' '; 64 * 1024 + 1], 413, "65536"),
        ("not JSON", b"{\"v\":1,".to_vec(), 400, "not JSON"),
        ("empty body", vec![], 400, "not JSON"),
        (
            "wrong version",
            mutate(&|b| b["v"] = json!(2)),
            400,
            "version",
        ),
        (
            "records not an array",
            mutate(&|b| b["records"] = json!("x")),
            400,
            "records",
        ),
        (
            "wrong type",
            mutate(&|b| b["records"][0]["ttft"] = json!("100")),
            400,
            "records[0].ttft",
        ),
        (
            "negative time",
            mutate(&|b| b["records"][0]["total"] = json!(-5)),
            400,
            "negative",
        ),
        (
            "non-finite time",
            good.to_string()
                .replace("\"ttft\":100.0", "\"ttft\":1e400")
                .into_bytes(),
            400,
            "not JSON",
        ),
        (
            "too many records",
            mutate(&|b| b["records"] = json!(vec![json!({"id": "x"}); 501])),
            400,
            "too many",
        ),
        (
            "missing id",
            mutate(&|b| {
                b["records"][0].as_object_mut().unwrap().remove("id");
            }),
            400,
            "records[0].id",
        ),
        // One bad record rejects the whole beacon: a 4xx means nothing stored.
        (
            "one bad of two",
            mutate(
                &|b| b["records"] = json!([record("ok1", recent(), 1.0), {"id": "bad", "outcome": "ok", "startEpochMs": -1}]),
            ),
            400,
            "records[1].startEpochMs",
        ),
    ];
    for (name, body, status, needle) in cases {
        let r = post(addr, &body, &[]).await;
        assert_eq!(r.status, status, "{name}: {}", r.text());
        let msg = r.json()["error"].as_str().unwrap_or_default().to_string();
        assert!(
            msg.contains(needle),
            "{name}: message {msg:?} should mention {needle:?}"
        );
    }
    // A chunked body without Content-Length is bounded too.
    let big = vec![b'x'; 70 * 1024];
    let raw = {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut req = b"POST /v1/rum HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n".to_vec();
        req.extend(format!("{:x}\r\n", big.len()).as_bytes());
        req.extend(&big);
        req.extend(b"\r\n0\r\n\r\n");
        let _ = s.write_all(&req).await;
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out).await;
        String::from_utf8_lossy(&out).into_owned()
    };
    assert!(
        raw.starts_with("HTTP/1.1 413"),
        "chunked over the limit: {raw:.80}"
    );
    assert_eq!(stored_count(&dir.db()), 0);
    // And the valid beacon still goes through afterwards.
    let r = post(addr, good.to_string().as_bytes(), &[]).await;
    assert_eq!((r.status, r.json()["stored"].as_u64()), (200, Some(1)));
    assert_eq!(stored_count(&dir.db()), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_fields_are_ignored_and_dropped_is_stored() {
    let dir = TempDir::new("unknown");
    let addr = start(config(&dir.db())).await;
    let mut b = beacon(vec![record("r1", recent(), 100.0)]);
    b["futureTopLevel"] = json!({"x": [1, 2, 3]});
    b["dropped"] = json!(7);
    b["records"][0]["futureMetric"] = json!({"deep": true});
    b["records"][0]["model"] = json!("gpt-x");
    let r = post(
        addr,
        b.to_string().as_bytes(),
        &[("content-type", "application/json")],
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let c = rusqlite::Connection::open(dir.db()).unwrap();
    let (raw, model, route): (String, String, String) = c
        .query_row(
            "SELECT raw, model, route FROM records WHERE id='r1'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert!(
        raw.contains("futureMetric"),
        "raw JSON keeps unknown fields"
    );
    assert_eq!(
        (model.as_str(), route.as_str()),
        ("gpt-x", "/v1/chat/completions")
    );
    let dropped: i64 = c
        .query_row("SELECT dropped FROM beacons", [], |r| r.get(0))
        .unwrap();
    assert_eq!(dropped, 7);
    assert_eq!(get(addr, "/api/summary").await.json()["dropped"], json!(7));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_answers_429_with_retry_after() {
    let dir = TempDir::new("rate");
    let addr = start(Config {
        rate_limit: 3,
        ..config(&dir.db())
    })
    .await;
    let mut statuses = Vec::new();
    for i in 0..6 {
        let r = post(
            addr,
            beacon(vec![record(&format!("r{i}"), recent(), 1.0)])
                .to_string()
                .as_bytes(),
            &[],
        )
        .await;
        if r.status == 429 {
            let after: u64 = r
                .header("retry-after")
                .expect("Retry-After")
                .parse()
                .unwrap();
            assert!(after >= 1);
            assert!(r.json()["error"].as_str().unwrap().contains("rate limit"));
        }
        statuses.push(r.status);
    }
    // Burst of 3, refilled at 3/s: six back-to-back beacons cannot all pass.
    let ok = statuses.iter().filter(|s| **s == 200).count() as i64;
    assert!(statuses.contains(&429), "{statuses:?}");
    assert!((3..6).contains(&ok), "{statuses:?}");
    assert_eq!(stored_count(&dir.db()), ok, "a 429 stores nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cors_echoes_allowed_origins_and_answers_preflights() {
    let dir = TempDir::new("cors");
    let addr = start(Config {
        allow_origins: vec!["http://app.test:8080".into()],
        ..config(&dir.db())
    })
    .await;
    let body = beacon(vec![record("c1", recent(), 1.0)]).to_string();
    let r = post(addr, body.as_bytes(), &[("origin", "http://app.test:8080")]).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("http://app.test:8080")
    );
    assert_eq!(r.header("access-control-allow-credentials"), Some("true"));
    // Errors carry CORS headers too, so the SDK can read them.
    let r = post(addr, b"nope", &[("origin", "http://app.test:8080")]).await;
    assert_eq!(
        (r.status, r.header("access-control-allow-origin")),
        (400, Some("http://app.test:8080"))
    );
    // Preflight.
    let r = client::request(
        addr,
        "OPTIONS",
        "/v1/rum",
        &[
            ("origin", "http://app.test:8080"),
            ("access-control-request-method", "POST"),
            ("access-control-request-headers", "content-type"),
        ],
        b"",
    )
    .await
    .unwrap();
    assert_eq!(r.status, 204);
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("http://app.test:8080")
    );
    assert_eq!(r.header("access-control-allow-credentials"), Some("true"));
    assert!(r
        .header("access-control-allow-methods")
        .unwrap()
        .contains("POST"));
    assert_eq!(
        r.header("access-control-allow-headers"),
        Some("content-type")
    );
    // Another origin: refused, nothing stored, no CORS grant.
    let other = beacon(vec![record("c2", recent(), 1.0)]).to_string();
    let r = post(addr, other.as_bytes(), &[("origin", "http://evil.test")]).await;
    assert_eq!(r.status, 403);
    assert_eq!(r.header("access-control-allow-origin"), None);
    let r = client::request(
        addr,
        "OPTIONS",
        "/v1/rum",
        &[("origin", "http://evil.test")],
        b"",
    )
    .await
    .unwrap();
    assert_eq!(
        (r.status, r.header("access-control-allow-origin")),
        (403, None)
    );
    // No Origin (curl, a server) and the collector's own origin pass.
    let own = format!("http://{addr}");
    let r = post(
        addr,
        beacon(vec![record("c3", recent(), 1.0)])
            .to_string()
            .as_bytes(),
        &[("origin", &own)],
    )
    .await;
    assert_eq!(r.status, 200);
    let r = post(
        addr,
        beacon(vec![record("c4", recent(), 1.0)])
            .to_string()
            .as_bytes(),
        &[],
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(stored_count(&dir.db()), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dedupe_by_id_keeps_the_complete_record() {
    let dir = TempDir::new("dedupe");
    let addr = start(config(&dir.db())).await;
    // The same beacon twice (a retry): stored once.
    let b = beacon(vec![
        record("d1", recent(), 100.0),
        record("d2", recent(), 200.0),
    ])
    .to_string();
    let r1 = post(addr, b.as_bytes(), &[]).await.json();
    let r2 = post(addr, b.as_bytes(), &[]).await.json();
    assert_eq!(
        (r1["stored"].as_u64(), r1["duplicates"].as_u64()),
        (Some(2), Some(0))
    );
    assert_eq!(
        (r2["stored"].as_u64(), r2["duplicates"].as_u64()),
        (Some(0), Some(2))
    );
    assert_eq!(stored_count(&dir.db()), 2);

    // partial, then the completed version (same id): the complete one is kept.
    let mut partial = record("p1", recent(), 100.0);
    partial["outcome"] = json!("partial");
    partial["total"] = json!(null);
    partial["marks"]["lastToken"] = json!(300);
    let complete = record("p1", recent(), 100.0);
    post(
        addr,
        beacon(vec![partial.clone()]).to_string().as_bytes(),
        &[],
    )
    .await;
    let r = post(addr, beacon(vec![complete]).to_string().as_bytes(), &[])
        .await
        .json();
    assert_eq!(
        r["stored"].as_u64(),
        Some(1),
        "the complete record replaces the partial"
    );
    // A late partial (e.g. persisted and resent on the next page load) never overwrites it.
    let r = post(addr, beacon(vec![partial]).to_string().as_bytes(), &[])
        .await
        .json();
    assert_eq!(r["duplicates"].as_u64(), Some(1));
    let c = rusqlite::Connection::open(dir.db()).unwrap();
    let (outcome, total, stages): (String, f64, i64) = c
        .query_row(
            "SELECT outcome, total, (SELECT COUNT(*) FROM stages WHERE record_id='p1') FROM records WHERE id='p1'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!((outcome.as_str(), total, stages), ("ok", 600.0, 2));
    assert_eq!(stored_count(&dir.db()), 3);
    // Duplicates inside one beacon: stored once as well.
    let b = beacon(vec![
        record("d3", recent(), 1.0),
        record("d3", recent(), 1.0),
    ])
    .to_string();
    let r = post(addr, b.as_bytes(), &[]).await.json();
    assert_eq!(
        (r["stored"].as_u64(), r["duplicates"].as_u64()),
        (Some(1), Some(1))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_need_the_token_when_configured() {
    let dir = TempDir::new("token");
    let addr = start(Config {
        read_token: Some("s3cret".into()),
        ..config(&dir.db())
    })
    .await;
    // The page itself holds no data (it takes the token from its address): served to anyone.
    assert_eq!(get(addr, "/").await.status, 200);
    for path in ["/api/summary", "/api/alerts", "/api/timeseries?metric=ttft", "/metrics"] {
        assert_eq!(get(addr, path).await.status, 401, "{path}");
        let sep = if path.contains('?') { '&' } else { '?' };
        assert_eq!(
            get(addr, &format!("{path}{sep}token=s3cret")).await.status,
            200,
            "{path}"
        );
        assert_eq!(
            get(addr, &format!("{path}{sep}token=wrong")).await.status,
            401,
            "{path}"
        );
        let r = client::request(
            addr,
            "GET",
            path,
            &[("authorization", "Bearer s3cret")],
            b"",
        )
        .await
        .unwrap();
        assert_eq!(r.status, 200, "{path}");
    }
    // Ingest never needs it (browsers cannot hold a secret).
    let r = post(
        addr,
        beacon(vec![record("t1", recent(), 1.0)])
            .to_string()
            .as_bytes(),
        &[],
    )
    .await;
    assert_eq!(r.status, 200);
    let html = get(addr, "/?token=s3cret").await.text();
    assert!(
        html.contains("src=\"/dashboard.js\""),
        "the page loads its script from the collector"
    );
    // The script and style hold no data: served without the token.
    let js = get(addr, "/dashboard.js").await;
    let css = get(addr, "/dashboard.css").await;
    assert_eq!((js.status, css.status), (200, 200));
    assert!(
        js.text().contains("createElementNS"),
        "the dashboard draws SVG"
    );
    for text in [&html, &js.text(), &css.text()] {
        for external in [
            "src=\"http",
            "href=\"http",
            "src=\"//",
            "href=\"//",
            "@import",
            "url(http",
            "fetch(\"http",
        ] {
            assert!(
                !text.contains(external),
                "no external resources ({external})"
            );
        }
    }
}

/// (ttft, startEpochMs, route, model, outcome, stalls, record)
type Row = (
    f64,
    f64,
    &'static str,
    &'static str,
    &'static str,
    i64,
    Value,
);

/// Nearest-rank percentile, written independently of the collector's.
fn nearest_rank(mut v: Vec<f64>, q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let k = (q * v.len() as f64).ceil().max(1.0) as usize;
    v[k - 1]
}

/// Within the sketch's documented error of the exact value: 1 % relative, ±0.01 ms absolute.
fn within(got: Option<f64>, exact: f64, label: &str) {
    let g = got.unwrap_or_else(|| panic!("{label}: no value"));
    assert!(
        (g - exact).abs() <= 0.01 * exact.abs() + 0.01,
        "{label}: {g} vs exact {exact}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn summary_percentiles_match_exact_values() {
    let dir = TempDir::new("summary");
    let addr = start(config(&dir.db())).await;
    // An hour ago, on a multiple of 60 s (buckets are aligned to the epoch); records must start
    // within the last 24 h to be accepted.
    let t0 = (now_ms() / 60_000.0).floor() * 60_000.0 - 3_600_000.0;
    let mut seed = 12345u64;
    let mut rnd = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    // 300 records: random ttft, two routes × two models × outcomes, spread over 10 minutes.
    let mut rows: Vec<Row> = Vec::new();
    for i in 0..300 {
        let ttft = (rnd() % 5000) as f64 / 4.0;
        let start = t0 + (rnd() % 600_000) as f64;
        let route = if i % 3 == 0 { "/v1/a" } else { "/v1/b" };
        let model = if i % 2 == 0 { "m1" } else { "m2" };
        let outcome = ["ok", "ok", "ok", "error", "aborted"][i % 5];
        let stalls = if i % 4 == 0 { 2 } else { 0 };
        let mut r = record(&format!("s{i}"), start, ttft);
        r["url"] = json!(format!("https://api.test{route}?secret=1"));
        r["model"] = json!(model);
        r["outcome"] = json!(outcome);
        r["stalls"] = json!({"count": stalls, "totalMs": stalls * 300, "longestMs": 300, "network": stalls / 2, "render": stalls / 2});
        r["buffered"] = json!(i % 10 == 0);
        // Upstream buffering: half of /v1/a's answers, none of /v1/b's; too short to tell
        // (null) for every 7th.
        r["upstreamBuffered"] = if i % 7 == 0 { Value::Null } else { json!(i % 6 == 0) };
        rows.push((ttft, start, route, model, outcome, stalls, r));
    }
    for chunk in rows.chunks(50) {
        let b = beacon(chunk.iter().map(|r| r.6.clone()).collect());
        assert_eq!(post(addr, b.to_string().as_bytes(), &[]).await.status, 200);
    }
    let check = |s: &Value, sel: Vec<f64>, label: &str| {
        let m = &s["metrics"]["ttft"];
        assert_eq!(m["count"].as_u64(), Some(sel.len() as u64), "{label}");
        for (k, q) in [("p50", 0.5), ("p75", 0.75), ("p95", 0.95), ("p99", 0.99)] {
            within(m[k].as_f64(), nearest_rank(sel.clone(), q), &format!("{label} {k}"));
        }
    };
    let all: Vec<f64> = rows.iter().map(|r| r.0).collect();
    let s = get(addr, "/api/summary").await.json();
    check(&s, all.clone(), "all");
    // perceivedTtft = ttft + 16 in these records.
    within(
        s["metrics"]["perceivedTtft"]["p95"].as_f64(),
        nearest_rank(all, 0.95) + 16.0,
        "perceivedTtft",
    );
    assert_eq!(
        s["outcomes"],
        json!({"ok": 180, "error": 60, "aborted": 60})
    );
    assert_eq!(s["stallRate"].as_f64(), Some(0.25));
    assert_eq!(s["bufferedRate"].as_f64(), Some(0.1));
    // The two kinds of buffering, overall and per route (busiest first), against the records.
    let share = |route: Option<&str>, key: &str| {
        let known: Vec<bool> = rows
            .iter()
            .filter(|r| route.is_none_or(|x| r.2 == x))
            .filter_map(|r| r.6[key].as_bool())
            .collect();
        known.iter().filter(|b| **b).count() as f64 / known.len() as f64
    };
    // (serde_json parses floats to within an ulp: compare to 1e-12.)
    let near = |v: &Value, want: f64| (v.as_f64().unwrap() - want).abs() < 1e-12;
    assert!(near(&s["upstreamBufferedRate"], share(None, "upstreamBuffered")), "{}", s["upstreamBufferedRate"]);
    let routes = s["routes"].as_array().unwrap();
    assert_eq!(routes.iter().map(|r| r["route"].as_str().unwrap()).collect::<Vec<_>>(), ["/v1/b", "/v1/a"]);
    assert_eq!((routes[0]["count"].as_u64(), routes[1]["count"].as_u64()), (Some(200), Some(100)));
    for r in routes {
        let route = r["route"].as_str();
        assert!(near(&r["bufferedRate"], share(route, "buffered")), "{r}");
        assert!(near(&r["upstreamBufferedRate"], share(route, "upstreamBuffered")), "{r}");
    }
    assert_eq!(routes[0]["upstreamBufferedRate"].as_f64(), Some(0.0));
    assert!(routes[1]["upstreamBufferedRate"].as_f64().unwrap() > 0.4);
    assert_eq!(s["stallCauses"], json!({"network": 75, "render": 75}));
    let stage = |name: &str| {
        s["stages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["stage"] == name)
            .cloned()
            .unwrap()
    };
    assert_eq!(stage("start→headers")["median"].as_f64(), Some(20.0));
    assert_eq!(stage("decode")["median"].as_f64(), Some(500.0));
    assert_eq!(
        stage("firstToken→firstPaint")["median"].as_f64(),
        Some(16.0)
    );
    assert_eq!(stage("server:queue")["median"].as_f64(), Some(5.0));
    let sel = |f: &dyn Fn(&Row) -> bool| {
        rows.iter()
            .filter(|r| f(r))
            .map(|r| r.0)
            .collect::<Vec<_>>()
    };
    check(
        &get(addr, "/api/summary?route=/v1/a").await.json(),
        sel(&|r| r.2 == "/v1/a"),
        "route",
    );
    check(
        &get(addr, "/api/summary?model=m2&outcome=ok").await.json(),
        sel(&|r| r.3 == "m2" && r.4 == "ok"),
        "model+outcome",
    );
    let (from, to) = (t0 + 120_000.0, t0 + 300_000.0);
    check(
        &get(addr, &format!("/api/summary?from={from}&to={to}"))
            .await
            .json(),
        sel(&|r| r.1 >= from && r.1 < to),
        "window",
    );
    let empty = get(addr, "/api/summary?route=/nope").await.json();
    assert_eq!(
        (
            empty["count"].as_u64(),
            empty["metrics"]["ttft"]["p95"].clone()
        ),
        (Some(0), Value::Null)
    );

    // Timeseries: p95 per 60 s bucket equals the exact value per bucket.
    let ts = get(
        addr,
        &format!(
            "/api/timeseries?metric=ttft&q=0.95&bucket=60&from={t0}&to={}",
            t0 + 600_000.0
        ),
    )
    .await
    .json();
    let points = ts["points"].as_array().unwrap();
    assert_eq!(points.len(), 10);
    for p in points {
        let b0 = p["t"].as_f64().unwrap();
        let exp = sel(&|r| r.1 >= b0 && r.1 < b0 + 60_000.0);
        assert_eq!(p["n"].as_u64(), Some(exp.len() as u64));
        within(p["value"].as_f64(), nearest_rank(exp, 0.95), "bucket");
    }
    assert_eq!(get(addr, "/api/timeseries?metric=bogus").await.status, 400);
    assert_eq!(
        get(addr, "/api/timeseries?metric=ttft&q=2").await.status,
        400
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_past_its_budget_is_stopped_and_answered_503() {
    let dir = TempDir::new("budget");
    let addr = start(Config {
        query_budget_s: 0.001,
        ..config(&dir.db())
    })
    .await;
    let t0 = recent() - 600_000.0;
    for b in 0..100 {
        let recs: Vec<Value> = (0..40)
            .map(|i| record(&format!("q{b}-{i}"), t0 + (b * 40 + i) as f64 * 100.0, 100.0 + i as f64))
            .collect();
        assert_eq!(post(addr, beacon(recs).to_string().as_bytes(), &[]).await.status, 200);
    }
    // 4 000 records read one by one (a bucket that is not whole minutes) cannot take 1 ms.
    let r = get(addr, "/api/timeseries?metric=ttft&bucket=1").await;
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(r.text().contains("budget"), "{}", r.text());
    let h = get(addr, "/healthz").await.json();
    assert!(h["counters"]["queries_over_budget"].as_u64() >= Some(1), "{h}");
    // The connection it ran on is fine afterwards.
    assert_eq!(get(addr, "/api/alerts").await.status, 200);
}
