//! Issue 11: the collector tried as an attacker would, against the real binary on loopback.
//! One test (or more) per finding; the XSS finding's browser half is tests/e2e/dashboard.spec.js.
//! Every loop is bounded in count and time; every process is killed by PID on drop.

mod common;

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;
use llm_rum_collector_testkit::client::{self, Conn};
use llm_rum_demo::nginx::Nginx;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::time::timeout;

/// The smallest record the collector accepts, with a ttft and one Server-Timing stage.
fn small(id: &str, start: f64) -> Value {
    json!({"id": id, "outcome": "ok", "startEpochMs": start, "ttft": 100,
           "serverTiming": [{"name": "q", "dur": 1}]})
}

async fn health(addr: SocketAddr) -> (u16, Value) {
    let r = get(addr, "/healthz").await;
    (r.status, r.json())
}

async fn counter(addr: SocketAddr, name: &str) -> u64 {
    health(addr).await.1["counters"][name]
        .as_u64()
        .unwrap_or_else(|| panic!("no counter {name}"))
}

/// Reads until the server closes the connection; None if it is still open after `within`.
async fn closed_within(s: &mut TcpStream, within: Duration) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some(out),
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
        }
    }
}

async fn post_ok(addr: SocketAddr, id: &str) {
    let b = beacon(vec![small(id, now_ms())]).to_string();
    let r = timeout(Duration::from_secs(5), post(addr, b.as_bytes(), &[]))
        .await
        .expect("served in time");
    assert_eq!(r.status, 200, "{}", r.text());
}

// ---------- 1. Stored XSS: the dashboard's HTTP side (the browser side is in e2e) ----------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_is_served_with_a_strict_policy_and_no_inline_code() {
    let dir = TempDir::new("csp");
    let p = Proc::spawn(&["--db", dir.db().to_str().unwrap()]);
    let r = get(p.addr, "/").await;
    assert_eq!(r.status, 200);
    let csp = r.header("content-security-policy").expect("CSP");
    for d in [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "object-src 'none'",
        "frame-ancestors 'none'",
        "require-trusted-types-for 'script'",
    ] {
        assert!(csp.contains(d), "{csp} lacks {d}");
    }
    assert!(!csp.contains("unsafe"), "{csp}");
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(r.header("referrer-policy"), Some("no-referrer"));
    let html = r.text();
    assert!(!html.contains("style="), "no inline style");
    // Scripts only by src, none inline.
    for (i, _) in html.match_indices("<script") {
        let tag_end = html[i..].find('>').unwrap() + i;
        assert!(html[i..tag_end].contains("src="), "inline script at {i}");
        assert!(
            html[tag_end..].starts_with("></script>"),
            "inline script body at {i}"
        );
    }
    let js = get(p.addr, "/dashboard.js").await;
    assert_eq!(
        js.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    assert_eq!(js.header("x-content-type-options"), Some("nosniff"));
    for sink in [
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "new Function",
    ] {
        let code: String = js
            .text()
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect();
        assert!(!code.contains(sink), "dashboard.js uses {sink}");
    }
    assert_eq!(
        get(p.addr, "/api/summary")
            .await
            .header("x-content-type-options"),
        Some("nosniff")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_that_become_keys_are_stored_in_the_safe_character_set() {
    let dir = TempDir::new("keys");
    let p = Proc::spawn(&["--db", dir.db().to_str().unwrap(), "--rate-limit", "0"]);
    let evil = "<img src=x onerror=alert(1)>";
    let mut r = small("k1", now_ms());
    r["url"] = json!(format!("https://h/v1/{evil}?q=1"));
    r["model"] = json!(evil);
    r["serverTiming"] = json!([{"name": evil, "dur": 5}]);
    let mut b = beacon(vec![r]);
    b["page"] = json!(format!("/chat/{evil}"));
    assert_eq!(
        post(p.addr, b.to_string().as_bytes(), &[]).await.status,
        200
    );
    let s = get(p.addr, "/api/summary").await.json();
    let stages: Vec<String> = s["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["stage"].as_str().unwrap().to_string())
        .collect();
    assert!(
        stages.contains(&"server:%3Cimg%20src=x%20onerror=alert%281%29%3E".to_string()),
        "{stages:?}"
    );
    let c = rusqlite::Connection::open(dir.db()).unwrap();
    let (route, model, page): (String, String, String) = c
        .query_row("SELECT r.route, r.model, r.page FROM records r", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    for k in [&route, &model, &page] {
        assert!(!k.contains(['<', '>', '"', '\'', ' ', '(', ')']), "{k}");
    }
    assert_eq!(route, "/v1/%3Cimg%20src=x%20onerror=alert%281%29%3E");
    // The filter takes the stored (encoded) form.
    let q = get(
        p.addr,
        "/api/summary?route=/v1/%253Cimg%2520src=x%2520onerror=alert%25281%2529%253E",
    )
    .await
    .json();
    assert_eq!(q["count"], 1);
}

// ---------- 2. Aggregates cannot overflow ----------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_largest_accepted_values_leave_every_api_working_across_restarts() {
    let dir = TempDir::new("overflow");
    let db = dir.db();
    let db_s = db.to_str().unwrap().to_string();
    let args = [
        "--db",
        db_s.as_str(),
        "--rate-limit",
        "0",
        "--budget",
        "ttft p95<=100",
        "--eval-interval",
        "100",
    ];
    let apis: Vec<String> = {
        let mut v: Vec<String> = [
            "/",
            "/api/summary",
            "/api/alerts",
            "/api/histogram?metrics=ttft,perceivedTtft,total,stalls.count,stalls.totalMs&bins=200",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for m in [
            "ttft",
            "ttfp",
            "perceivedTtft",
            "total",
            "perceivedTotal",
            "tpot",
            "itl.p50",
            "itl.p95",
            "itl.max",
            "renderDelay.p95",
            "stalls.count",
            "stalls.totalMs",
        ] {
            v.push(format!("/api/timeseries?metric={m}&bucket=0.001"));
        }
        v
    };
    {
        let p = Proc::spawn(&args);
        // The finding's two beacons, then the largest of everything ingest accepts.
        for d in [json!(i64::MAX), json!(1), json!(u64::MAX), json!(1e300)] {
            let r = post(
                p.addr,
                json!({"v": 1, "dropped": d, "records": []})
                    .to_string()
                    .as_bytes(),
                &[],
            )
            .await;
            assert_eq!(r.status, 200, "{}", r.text());
        }
        let max = llm_rum_collector::ingest::MAX_MS;
        for b in 0..10 {
            let recs: Vec<Value> = (0..40)
                .map(|i| {
                    json!({"id": format!("o{b}-{i}"), "outcome": "ok", "startEpochMs": now_ms(),
                        "ttft": max, "ttfp": max, "perceivedTtft": max, "total": max, "perceivedTotal": max, "tpot": max,
                        "itl": {"p50": max, "p95": max, "max": max}, "renderDelay": {"p95": max},
                        "stalls": {"count": u64::MAX, "network": u64::MAX, "render": i64::MAX, "totalMs": max},
                        "marks": {"interaction": -max, "headers": max, "firstToken": max, "firstPaint": max, "lastToken": max, "lastPaint": max, "end": max},
                        "serverTiming": [{"name": "a", "dur": max}, {"name": "a", "dur": max}]})
                })
                .collect();
            let r = post(p.addr, beacon(recs).to_string().as_bytes(), &[]).await;
            assert_eq!(r.status, 200, "{}", r.text());
        }
        tokio::time::sleep(Duration::from_millis(300)).await; // an alert evaluation ran over them
        for path in &apis {
            let r = get(p.addr, path).await;
            assert_eq!(r.status, 200, "{path}: {}", r.text());
        }
        let s = get(p.addr, "/api/summary").await.json();
        let cap = llm_rum_collector::ingest::MAX_COUNT as f64;
        assert_eq!(s["count"], 400);
        assert_eq!(
            s["dropped"].as_f64(),
            Some(3.0 * cap + 1.0),
            "counts clamped, summed without overflow"
        );
        assert_eq!(s["stallCauses"]["network"].as_f64(), Some(400.0 * cap));
        assert_eq!(s["metrics"]["ttft"]["p99"].as_f64(), Some(max));
        assert_eq!(
            a_stage(&s, "server:a"),
            Some(max),
            "repeated names summed, capped"
        );
    }
    // Restarted on the same file: still answering.
    {
        let p = Proc::spawn(&args);
        for path in &apis {
            assert_eq!(get(p.addr, path).await.status, 200, "{path} after restart");
        }
    }
    // A database the old collector poisoned (it stored i64::MAX; every SUM then failed for
    // good): migrated at start, every API answers.
    let old = TempDir::new("overflow-old");
    {
        let c = rusqlite::Connection::open(old.db()).unwrap();
        c.execute_batch(llm_rum_collector::store::sqlite::schema::BASELINE)
            .unwrap();
        for d in [i64::MAX, 1] {
            c.execute(
                "INSERT INTO beacons(received_ms, records, dropped) VALUES (?1, 0, ?2)",
                [now_ms() as i64, d],
            )
            .unwrap();
        }
        for i in 0..2 {
            c.execute(
                "INSERT INTO records(id, received_ms, start_ms, outcome, raw, stalls_count, stalls_network, stalls_render) VALUES (?1, ?2, ?2, 'ok', '{}', ?3, ?3, ?3)",
                rusqlite::params![format!("old{i}"), now_ms() as i64, i64::MAX],
            )
            .unwrap();
        }
    }
    let p = Proc::spawn(&["--db", old.db().to_str().unwrap()]);
    for path in &apis {
        assert_eq!(
            get(p.addr, path).await.status,
            200,
            "{path} on a poisoned database"
        );
    }
    let s = get(p.addr, "/api/summary").await.json();
    let cap = llm_rum_collector::ingest::MAX_COUNT as f64;
    assert_eq!(
        (s["dropped"].as_f64(), s["stallCauses"]["render"].as_f64()),
        (Some(cap + 1.0), Some(2.0 * cap))
    );
}

fn a_stage(s: &Value, name: &str) -> Option<f64> {
    s["stages"]
        .as_array()?
        .iter()
        .find(|x| x["stage"] == name)?["median"]
        .as_f64()
}

// ---------- 3. Timeouts and the connection cap ----------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_headers_are_closed_and_a_normal_client_is_served_meanwhile() {
    let dir = TempDir::new("slowloris");
    let (p, logs) = Proc::spawn_logged(collector_cmd(&[
        "--db",
        dir.db().to_str().unwrap(),
        "--rate-limit",
        "0",
        "--header-timeout",
        "1",
        "--max-connections",
        "64",
    ]));
    // 100 connections that send half their headers, 20 that send nothing: past the cap of 64.
    let t0 = Instant::now();
    let mut held = Vec::new();
    for i in 0..120 {
        let mut s = TcpStream::connect(p.addr).await.unwrap();
        if i < 100 {
            s.write_all(b"POST /v1/rum HTTP/1.1\r\nhost: x\r\ncontent-le")
                .await
                .unwrap();
        }
        held.push(s);
    }
    // Meanwhile a normal client is served (it takes the place of the quietest connection).
    tokio::time::sleep(Duration::from_millis(300)).await;
    post_ok(p.addr, "normal-1").await;
    // Every held connection is closed: evicted, or at the header timeout (1 s) at the latest.
    let mut still_open = 0;
    for s in &mut held {
        let left = Duration::from_secs(4).saturating_sub(t0.elapsed());
        if closed_within(s, left).await.is_none() {
            still_open += 1;
        }
    }
    assert_eq!(
        still_open,
        0,
        "half-sent connections still open {:?} after they were opened",
        t0.elapsed()
    );
    post_ok(p.addr, "normal-2").await;
    let (_, h) = health(p.addr).await;
    let c = &h["counters"];
    let closed = c["connections_header_timeout"].as_u64().unwrap()
        + c["connections_evicted"].as_u64().unwrap()
        + c["connections_refused"].as_u64().unwrap();
    assert!(closed >= 120, "{h}");
    assert!(c["connections_header_timeout"].as_u64().unwrap() > 0, "{h}");
    assert!(
        logs.wait_for(
            "request headers did not arrive in time",
            Duration::from_secs(2)
        ),
        "{}",
        logs.text()
    );
    assert!(
        logs.text().contains("connection limit reached"),
        "{}",
        logs.text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_parked_mid_way_gets_408_and_is_closed() {
    let dir = TempDir::new("slowbody");
    let (p, logs) = Proc::spawn_logged(collector_cmd(&[
        "--db",
        dir.db().to_str().unwrap(),
        "--rate-limit",
        "0",
        "--body-timeout",
        "1",
    ]));
    let t0 = Instant::now();
    let mut held = Vec::new();
    for _ in 0..10 {
        let mut s = TcpStream::connect(p.addr).await.unwrap();
        s.write_all(b"POST /v1/rum HTTP/1.1\r\nhost: x\r\ncontent-length: 2000\r\n\r\n{\"v\":1,\"records\":[").await.unwrap();
        held.push(s);
    }
    post_ok(p.addr, "normal").await;
    for s in &mut held {
        let left = Duration::from_secs(4).saturating_sub(t0.elapsed());
        let got = closed_within(s, left)
            .await
            .expect("closed after the body timeout");
        let text = String::from_utf8_lossy(&got);
        assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    }
    assert!(
        t0.elapsed() >= Duration::from_millis(900),
        "not before the timeout"
    );
    assert_eq!(counter(p.addr, "beacons_body_timeout").await, 10);
    assert_eq!(stored_count(&dir.db()), 1);
    assert!(
        logs.wait_for(
            "request body did not arrive in time",
            Duration::from_secs(2)
        ),
        "{}",
        logs.text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_keep_alive_connections_are_closed_busy_ones_kept() {
    let dir = TempDir::new("idle");
    let p = Proc::spawn(&[
        "--db",
        dir.db().to_str().unwrap(),
        "--rate-limit",
        "0",
        "--idle-timeout",
        "1",
    ]);
    let body = beacon(vec![small("i0", now_ms())]).to_string();
    let mut idle = Conn::connect(p.addr).await.unwrap();
    assert_eq!(
        idle.request("POST", "/v1/rum", &[], body.as_bytes())
            .await
            .unwrap()
            .status,
        200
    );
    // A busy connection (a request every 300 ms for 2.5 s) stays open throughout.
    let mut busy = Conn::connect(p.addr).await.unwrap();
    let t0 = Instant::now();
    let mut n = 0;
    while t0.elapsed() < Duration::from_millis(2500) {
        let b = beacon(vec![small(&format!("b{n}"), now_ms())]).to_string();
        let r = busy
            .request("POST", "/v1/rum", &[], b.as_bytes())
            .await
            .expect("the busy connection stays open");
        assert_eq!(r.status, 200);
        n += 1;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // The idle one was closed after ~1 s.
    assert!(
        idle.request("GET", "/healthz", &[], b"").await.is_err(),
        "idle connection still open after 2.5 s"
    );
    assert!(counter(p.addr, "connections_idle_timeout").await >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sockets_past_the_open_file_limit_do_not_cut_ingest_off() {
    let dir = TempDir::new("nofile");
    // 256 open files, soft and hard: the cap is lowered to fit (256 − 64 reserved).
    let (p, logs) = Proc::spawn_logged(collector_cmd_with_nofile(
        256,
        &["--db", dir.db().to_str().unwrap(), "--rate-limit", "0"],
    ));
    assert!(
        logs.wait_for("lowered to fit the open-file limit", Duration::from_secs(2)),
        "{}",
        logs.text()
    );
    assert!(
        logs.text().contains("max_connections=192"),
        "{}",
        logs.text()
    );
    // The finding: more idle sockets than the file limit (1,100 over 1,024 there).
    let mut held = Vec::new();
    for _ in 0..300 {
        held.push(TcpStream::connect(p.addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(400)).await;
    for i in 0..5 {
        post_ok(p.addr, &format!("n{i}")).await;
    }
    let (status, h) = health(p.addr).await;
    assert_eq!(status, 200);
    let c = &h["counters"];
    assert_eq!(c["accept_errors"], 0, "never out of file descriptors: {h}");
    assert!(h["connections"].as_u64().unwrap() <= 192, "{h}");
    assert!(
        c["connections_evicted"].as_u64().unwrap() + c["connections_refused"].as_u64().unwrap()
            >= 300 - 192,
        "{h}"
    );
    drop(held);
}

// ---------- 4. A writer that cannot die of logging ----------

/// Holds SQLite's write lock from outside for a while: the collector's commits fail (busy).
fn lock_db(db: &std::path::Path) -> rusqlite::Connection {
    let c = rusqlite::Connection::open(db).unwrap();
    c.execute_batch("BEGIN EXCLUSIVE").unwrap();
    c
}

/// While the writer cannot commit: 503 to ingest and /healthz; after: both recover.
async fn storage_failure_and_recovery(addr: SocketAddr, db: &std::path::Path) {
    post_ok(addr, "before").await;
    let lock = lock_db(db);
    let b = beacon(vec![small("during", now_ms())]).to_string();
    let r = timeout(Duration::from_secs(15), post(addr, b.as_bytes(), &[]))
        .await
        .expect("answered");
    assert_eq!(r.status, 503, "{}", r.text());
    let (status, h) = health(addr).await;
    assert_eq!(status, 503, "{h}");
    assert!(h["writer"].as_str().unwrap().contains("locked"), "{h}");
    lock.execute_batch("ROLLBACK").unwrap();
    drop(lock);
    // The writer probes once a second while failing.
    let t = Instant::now();
    while health(addr).await.0 != 200 {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "healthz never recovered"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    post_ok(addr, "after").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stderr_that_fails_never_kills_the_writer() {
    let (d1, d2) = (TempDir::new("devfull"), TempDir::new("epipe"));
    // stderr on a full device (ENOSPC) and on a pipe whose reader is gone (EPIPE).
    let mut full = collector_cmd(&["--db", d1.db().to_str().unwrap(), "--rate-limit", "0"]);
    full.stderr(
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap(),
    );
    let full = Proc::start(full);
    let mut epipe = collector_cmd(&["--db", d2.db().to_str().unwrap(), "--rate-limit", "0"]);
    epipe.stderr(Stdio::piped());
    let mut epipe = Proc::start(epipe);
    drop(epipe.child.stderr.take());
    let (db1, db2) = (d1.db(), d2.db());
    tokio::join!(
        storage_failure_and_recovery(full.addr, &db1),
        storage_failure_and_recovery(epipe.addr, &db2),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stderr_that_blocks_never_stalls_ingest() {
    let dir = TempDir::new("stderr-full-pipe");
    // A pipe nobody reads (its 64 KiB fill quickly at debug level: a line per beacon).
    let mut c = collector_cmd(&[
        "--db",
        dir.db().to_str().unwrap(),
        "--rate-limit",
        "0",
        "--sync",
        "normal",
    ]);
    c.env("RUST_LOG", "debug").stderr(Stdio::piped());
    let p = Proc::start(c);
    let addr = p.addr;
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for k in 0..8 {
        tasks.push(tokio::spawn(async move {
            let mut conn = Conn::connect(addr).await.unwrap();
            for i in 0..750 {
                let b = beacon(vec![small(&format!("p{k}-{i}"), now_ms())]).to_string();
                let r = timeout(
                    Duration::from_secs(5),
                    conn.request("POST", "/v1/rum", &[], b.as_bytes()),
                )
                .await
                .expect("ingest stalled")
                .unwrap();
                assert_eq!(r.status, 200);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let (status, h) = health(addr).await;
    assert_eq!(status, 200, "{h}");
    assert!(
        h["logLinesDropped"].as_u64().unwrap() > 0,
        "6,000 debug lines into a full pipe: some dropped, none waited for ({h})"
    );
    assert_eq!(stored_count(&dir.db()), 6000);
    eprintln!("6,000 beacons with stderr blocked: {:?}", t0.elapsed());
    drop(p);
}

// ---------- 5. Time you can trust ----------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clock_skew_is_corrected_and_implausible_times_are_refused() {
    let dir = TempDir::new("clock");
    let p = Proc::spawn(&[
        "--db",
        dir.db().to_str().unwrap(),
        "--rate-limit",
        "0",
        "--budget",
        "ttft p95<=100",
        "--alert-window",
        "2",
        "--sustain",
        "1",
        "--eval-interval",
        "100",
    ]);
    // The finding's values (no sentAt): refused, counted, nothing stored.
    let slow = |id: &str, start: f64| {
        let mut r = small(id, start);
        r["ttft"] = json!(5000);
        r
    };
    let b = beacon(vec![
        slow("zero", 0.0),
        slow("huge", 1e308),
        slow("ahead", now_ms() + 3_600_000.0),
    ]);
    let r = post(p.addr, b.to_string().as_bytes(), &[]).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["stored"], 0);
    assert_eq!(r.json()["refused"], json!({"tooOld": 1, "future": 2}));
    // Future-dated slow records keep coming: they never drive the alert engine.
    for i in 0..20 {
        let b = beacon(vec![slow(&format!("f{i}"), now_ms() + 600_000.0)]);
        assert_eq!(
            post(p.addr, b.to_string().as_bytes(), &[]).await.json()["refused"]["future"],
            1
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let a = get(p.addr, "/api/alerts").await.json();
    assert_eq!(
        (a["firing"].clone(), a["budgets"][0]["current"].clone()),
        (json!(0), Value::Null),
        "{a}"
    );
    // A client clock 2 h fast, with sentAt: moved back to the collector's time.
    let fast = now_ms() + 7_200_000.0;
    let mut b = beacon(vec![small("skewed", fast - 3_000.0)]);
    b["sentAt"] = json!(fast);
    let before = now_ms();
    let r = post(p.addr, b.to_string().as_bytes(), &[]).await.json();
    assert_eq!(
        (r["stored"].clone(), r["refused"]["future"].clone()),
        (json!(1), json!(0)),
        "{r}"
    );
    let c = rusqlite::Connection::open(dir.db()).unwrap();
    let (start, skew): (f64, f64) = c
        .query_row("SELECT r.start_ms, b.skew_ms FROM records r, beacons b WHERE r.id='skewed' AND b.sent_ms IS NOT NULL", [], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap();
    let expected = before - 3_000.0;
    assert!(
        (start - expected).abs() < 1_000.0,
        "start {start} vs {expected} (skew {skew})"
    );
    let s = get(p.addr, "/api/summary").await.json();
    assert_eq!(s["refused"], json!({"tooOld": 1, "future": 22}));
    assert_eq!(s["count"], 1);
}

// ---------- 6. Retention and what is kept of unknown fields ----------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_deletes_in_bounded_batches_and_vacuums() {
    let dir = TempDir::new("retention");
    let db = dir.db();
    // 0.00003 days = 2.6 s, checked every second.
    let (p, logs) = Proc::spawn_logged(collector_cmd(&[
        "--db",
        db.to_str().unwrap(),
        "--rate-limit",
        "0",
        "--sync",
        "normal",
        "--retain-days",
        "0.00003",
    ]));
    let n_beacons = 24;
    for b in 0..n_beacons {
        let recs: Vec<Value> = (0..500)
            .map(|i| small(&format!("old{b}-{i}"), now_ms()))
            .collect();
        let r = post(p.addr, beacon(recs).to_string().as_bytes(), &[]).await;
        assert_eq!(r.status, 200, "{}", r.text());
    }
    let t = Instant::now();
    let deleted = loop {
        let d = counter(p.addr, "retention_records_deleted").await;
        if d == 12_000 {
            break d;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "retention deleted {d} of 12000"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(deleted, 12_000);
    post_ok(p.addr, "fresh").await; // newer than the retention period: kept
    assert_eq!(stored_count(&db), 1);
    let c = rusqlite::Connection::open(&db).unwrap();
    let (stages, beacons): (i64, i64) = c
        .query_row(
            "SELECT (SELECT COUNT(*) FROM stages), (SELECT COUNT(*) FROM beacons)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(
        (stages, beacons),
        (1, 1),
        "stages and beacons go with their records"
    );
    assert!(
        logs.wait_for("retention pass", Duration::from_secs(5)),
        "{}",
        logs.text()
    );
    assert!(counter(p.addr, "retention_pages_vacuumed").await > 0);
    let line = logs
        .text()
        .lines()
        .find(|l| l.contains("retention pass") && l.contains("records="))
        .unwrap_or_default()
        .to_string();
    eprintln!("{line}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_fields_are_kept_to_1_kib() {
    let dir = TempDir::new("raw");
    let p = Proc::spawn(&["--db", dir.db().to_str().unwrap(), "--rate-limit", "0"]);
    let mut r = record("u1", now_ms(), 100.0);
    for i in 0..40 {
        r[format!("junk{i}")] = json!("x".repeat(1200));
    }
    let mut b = beacon(vec![r]);
    b["beaconJunk"] = json!("y".repeat(5000));
    assert!(b.to_string().len() > 50_000);
    assert_eq!(
        post(p.addr, b.to_string().as_bytes(), &[]).await.status,
        200
    );
    let c = rusqlite::Connection::open(dir.db()).unwrap();
    let raw: String = c
        .query_row("SELECT raw FROM records", [], |r| r.get(0))
        .unwrap();
    assert!(
        raw.len() <= llm_rum_collector::ingest::raw::RAW_MAX,
        "{}",
        raw.len()
    );
    let v: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(
        v["traceId"], "0af7651916cd43dd8448eb211c80319c",
        "known fields are kept"
    );
    let kept = v
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| k.starts_with("junk"))
        .count();
    assert!(
        kept == 0,
        "1,200-byte unknown fields do not fit in 1 KiB ({kept} kept)"
    );
    assert_eq!(
        v["_cut"].as_array().unwrap().len(),
        16,
        "the names of what was cut (at most 16)"
    );
    assert!(
        !raw.contains("yyyy"),
        "beacon-level unknown fields are not stored"
    );
}

// ---------- 7. Proxies (a real nginx in front) ----------

/// nginx on 127.0.0.1 proxying to `upstream`, appending the client to X-Forwarded-For (the
/// project's one nginx helper, shared with the end-to-end tests: demo/src/nginx.rs).
fn nginx(upstream: SocketAddr) -> Nginx {
    Nginx::start(
        upstream,
        "location / { proxy_pass http://UPSTREAM; proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for; }",
    )
    .expect("nginx (installed by scripts/setup.sh)")
}

/// A beacon POSTed from a given loopback source address (127.0.0.0/8 is all local).
async fn post_from(src: &str, to: SocketAddr, id: &str, headers: &[(&str, &str)]) -> u16 {
    let sock = TcpSocket::new_v4().unwrap();
    sock.bind(format!("{src}:0").parse().unwrap()).unwrap();
    let mut s = sock.connect(to).await.unwrap();
    let body = beacon(vec![small(id, now_ms())]).to_string();
    let mut req = format!(
        "POST /v1/rum HTTP/1.1\r\nhost: {to}\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = timeout(Duration::from_secs(5), s.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out)
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// The client recorded for the latest beacon.
fn last_client(db: &std::path::Path) -> String {
    let c = rusqlite::Connection::open(db).unwrap();
    c.query_row(
        "SELECT client FROM beacons ORDER BY id DESC LIMIT 1",
        [],
        |r| r.get(0),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwarded_for_is_believed_from_trusted_proxies_only() {
    // Rate limit 2/s: three beacons in a row from one client cannot all pass.
    let burst = |src: &'static str, to: SocketAddr, tag: &'static str| async move {
        let mut codes = Vec::new();
        for i in 0..3 {
            codes.push(post_from(src, to, &format!("{tag}{i}"), &[]).await);
        }
        codes
    };
    // Without --trusted-proxy (the finding): behind nginx every client shares one bucket.
    let d0 = TempDir::new("proxy-untrusted");
    let plain = Proc::spawn(&["--db", d0.db().to_str().unwrap(), "--rate-limit", "2"]);
    let ng0 = nginx(plain.addr);
    let a = burst("127.0.0.2", ng0.addr, "a").await;
    assert!(a.contains(&429), "{a:?}");
    assert_eq!(
        post_from("127.0.0.3", ng0.addr, "b0", &[]).await,
        429,
        "another client, same bucket"
    );

    // With it: per-client buckets, the client recorded.
    let d1 = TempDir::new("proxy-trusted");
    let db = d1.db();
    let col = Proc::spawn(&[
        "--db",
        db.to_str().unwrap(),
        "--rate-limit",
        "2",
        "--trusted-proxy",
        "127.0.0.1/32",
    ]);
    let ng = nginx(col.addr);
    let a = burst("127.0.0.2", ng.addr, "a").await;
    assert!(a.contains(&429), "{a:?}");
    assert_eq!(
        post_from("127.0.0.3", ng.addr, "b0", &[]).await,
        200,
        "another client, its own bucket"
    );
    assert_eq!(last_client(&db), "127.0.0.3");
    // A client's own X-Forwarded-For through the proxy is not believed (nginx appends the real one).
    assert_eq!(
        post_from(
            "127.0.0.4",
            ng.addr,
            "c0",
            &[("x-forwarded-for", "6.6.6.6")]
        )
        .await,
        200
    );
    assert_eq!(last_client(&db), "127.0.0.4");
    // Nor from a peer that is not a trusted proxy.
    assert_eq!(
        post_from(
            "127.0.0.5",
            col.addr,
            "d0",
            &[("x-forwarded-for", "7.7.7.7")]
        )
        .await,
        200
    );
    assert_eq!(last_client(&db), "127.0.0.5");
}

// ---------- 8. Origin ----------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_own_origin_is_never_taken_from_host_and_star_has_no_credentials() {
    let dir = TempDir::new("origin");
    let p = Proc::spawn(&[
        "--db",
        dir.db().to_str().unwrap(),
        "--rate-limit",
        "0",
        "--allow-origin",
        "http://app.test",
        "--public-url",
        "https://rum.example.com/dash",
    ]);
    let b = beacon(vec![small("o1", now_ms())]).to_string();
    let addr = p.addr;
    // Raw requests, so Host is exactly what a rebound DNS name produces.
    let send = |origin: String, host: String| {
        let b = b.clone();
        async move {
            let mut s = TcpStream::connect(addr).await.unwrap();
            let req = format!(
                "POST /v1/rum HTTP/1.1\r\nhost: {host}\r\norigin: {origin}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{b}",
                b.len()
            );
            s.write_all(req.as_bytes()).await.unwrap();
            let mut out = Vec::new();
            let _ = timeout(Duration::from_secs(5), s.read_to_end(&mut out)).await;
            String::from_utf8_lossy(&out).into_owned()
        }
    };
    // DNS rebinding: a page at http://evil.test:PORT whose name now points at the collector.
    let port = p.addr.port();
    let r = send(
        format!("http://evil.test:{port}"),
        format!("evil.test:{port}"),
    )
    .await;
    assert!(r.starts_with("HTTP/1.1 403"), "{r}");
    // The collector's own origins: the listen address (and localhost on loopback), --public-url.
    for own in [
        format!("http://{}", p.addr),
        format!("http://localhost:{port}"),
        "https://rum.example.com".to_string(),
    ] {
        let r = send(own.clone(), format!("{}", p.addr)).await;
        assert!(r.starts_with("HTTP/1.1 200"), "{own}: {r}");
        assert!(
            !r.to_ascii_lowercase()
                .contains("access-control-allow-origin"),
            "{own}: {r}"
        );
    }
    // `*`: any origin (null too), answered `*`, never with credentials.
    let d2 = TempDir::new("origin-star");
    let star = Proc::spawn(&[
        "--db",
        d2.db().to_str().unwrap(),
        "--rate-limit",
        "0",
        "--allow-origin",
        "*",
    ]);
    for origin in ["null", "http://anything.test"] {
        let r = post(star.addr, b.as_bytes(), &[("origin", origin)]).await;
        assert_eq!(r.status, 200, "{origin}");
        assert_eq!(
            r.header("access-control-allow-origin"),
            Some("*"),
            "{origin}"
        );
        assert_eq!(
            r.header("access-control-allow-credentials"),
            None,
            "{origin}"
        );
        let pre = client::request(
            star.addr,
            "OPTIONS",
            "/v1/rum",
            &[
                ("origin", origin),
                ("access-control-request-method", "POST"),
            ],
            b"",
        )
        .await
        .unwrap();
        assert_eq!(
            (
                pre.status,
                pre.header("access-control-allow-origin"),
                pre.header("access-control-allow-credentials")
            ),
            (204, Some("*"), None)
        );
    }
}
