//! `llm-rum-loadgen --fill N`: the read benchmark. Fills N records whose starts are spread over
//! the last `--window` seconds through the real ingest path (HTTP beacons to the real binary,
//! in start order, the way live traffic arrives), then times every dashboard read against that
//! database: the summary with and without a route filter, the timeseries, the histogram, the
//! alerts, four summaries at once (and the alerts meanwhile). A benchmark that prints figures,
//! not a test: nothing here passes or fails on a time.
//!
//!   llm-rum-loadgen --fill 1000000 --window 3600 --db /tmp/1m.db --keep
//!   llm-rum-loadgen --reads-only --db /tmp/1m.db --window 3600 [--collector OLD_BINARY]
//!
//! `--reads a,b` picks reads (names as printed), `--read-cap S` gives up on one read after S
//! seconds (for collectors that take minutes), `--runs R` repeats each read. `--exact` then
//! compares the summary's percentiles with the exact nearest-rank ones computed here from the
//! stored records (the rollups' error, measured: documented bound 1 %).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use llm_rum_collector_testkit::client::Conn;
use llm_rum_collector_testkit::rng::Rng;
use serde_json::{json, Value};

use super::{cpu_s, spawn_collector, temp_dir, written_bytes, Args, Ch};

const ROUTES: [&str; 4] = [
    "/v1/chat/completions",
    "/v1/responses",
    "/api/chat",
    "/v1/messages",
];
const MODELS: [&str; 3] = ["gpt-4o", "claude-sonnet-4", "llama-3.1-70b"];

/// A realistic record: log-normal waits, four routes, three models, 93 % ok.
fn record(rng: &mut Rng, id: u64, start: f64) -> Value {
    let ttft = (5.6 + 0.6 * rng.normal()).exp(); // median ~270 ms
    let paint = 8.0 + rng.unit() * 30.0;
    let interaction = 20.0 + rng.unit() * 80.0;
    let decode = (7.5 + 0.5 * rng.normal()).exp();
    let queue = rng.unit() * ttft * 0.3;
    let prefill = ttft * 0.5;
    let outcome = match id % 100 {
        0..=2 => "error",
        3..=5 => "aborted",
        6 => "partial",
        _ => "ok",
    };
    let stalls = if rng.next() % 3 == 0 { 1 + rng.next() % 3 } else { 0 };
    let net = rng.next() % (stalls + 1);
    let route = ROUTES[(rng.next() % 4) as usize];
    json!({
        "id": format!("f{id:x}"), "traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331",
        "traceSource": "propagated", "sampled": true,
        "url": format!("https://api.example.com{route}"), "method": "POST", "status": 200,
        "model": MODELS[(rng.next() % 3) as usize],
        "outcome": outcome, "format": "openai-chat", "startEpochMs": start,
        "marks": {"interaction": -interaction, "start": 0, "headers": ttft * 0.4, "firstByte": ttft * 0.4 + 1.0,
                  "firstToken": ttft, "firstPaint": ttft + paint, "lastToken": ttft + decode,
                  "lastPaint": ttft + decode + paint, "end": ttft + decode + 1.0},
        "ttft": ttft, "ttfp": ttft + paint, "perceivedTtft": ttft + paint + interaction,
        "total": ttft + decode, "perceivedTotal": ttft + decode + paint + interaction,
        "renderDelay": {"first": paint, "p50": paint / 2.0, "p95": paint, "max": paint * 1.5},
        "itl": {"n": 99, "p50": decode / 120.0, "p95": decode / 40.0, "p99": decode / 20.0, "max": decode / 8.0},
        "tpot": decode / 100.0,
        "stalls": {"count": stalls, "totalMs": stalls * 400, "longestMs": 400, "network": net, "render": stalls - net},
        "buffered": rng.next() % 20 == 0, "upstreamBuffered": rng.next() % 25 == 0, "hidden": false, "outputTokens": 100, "chars": 400, "chunks": 100,
        "bytes": 17000,
        "serverTiming": [{"name": "queue", "dur": queue, "desc": null}, {"name": "prefill", "dur": prefill, "desc": null}],
        "correlation": {"x-request-id": format!("r{id}")}, "stallList": [], "budgetBreaches": [], "userMarks": {}
    })
}

/// The beacon of records `k..k + per` (of `n`, starts spread over `span` ms from `t0`), as a
/// client would send it: what `fill` posts and `bulk` makes into rows.
fn beacon_of(rng: &mut Rng, k: u64, per: u64, n: u64, t0: f64, span: f64, session: &str) -> Value {
    let recs: Vec<Value> = (k..(k + per).min(n))
        .map(|k| {
            let start = t0 + (k as f64 + rng.unit()) / n as f64 * span;
            record(rng, k, start)
        })
        .collect();
    json!({"v": 1, "sdk": "llm-rum/fill", "session": session, "page": "/chat", "records": recs})
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

pub fn run(a: &Args, rt: &tokio::runtime::Runtime) {
    let n: u64 = a.num("--fill", "1000000");
    // Up to 29 days: inside the collector's default 30-day retention, so nothing is deleted.
    let window_s: f64 = a.num::<f64>("--window", "3600").clamp(60.0, 29.0 * 86_400.0);
    let reads_only = a.0.iter().any(|x| x == "--reads-only");
    let ch = Ch::of(a);
    let keep = a.0.iter().any(|x| x == "--keep") || reads_only;
    let dir = temp_dir("fill");
    let db = PathBuf::from(a.get("--db", &dir.join("fill.db").display().to_string()));
    // Every collector version knows these flags (so the same command measures an older one).
    let (mut child, addr) = spawn_collector(a, &db, &["--budget", "ttft p95<=800"]);
    println!(
        "collector pid {} on {addr}, database {}; load average {}",
        child.id(),
        db.display(),
        load()
    );
    // The window the reads look at: where the fill put (or put) the records.
    let window_end: f64 = if let (true, Some(ch)) = (reads_only, &ch) {
        rt.block_on(ch.query(&format!("SELECT max(start_ms) FROM {}.records", ch.db)))
            .trim()
            .parse::<f64>()
            .expect("records")
            + 1.0
    } else if reads_only {
        let c = rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open db");
        c.query_row("SELECT MAX(start_ms) FROM records", [], |r| r.get::<_, f64>(0))
            .expect("records")
            + 1.0
    } else if let (true, Some(ch)) = (a.0.iter().any(|x| x == "--bulk"), &ch) {
        let end = llm_rum_collector::ingest::clock::now_ms();
        rt.block_on(bulk(a, ch, n, end - window_s * 1000.0, window_s * 1000.0));
        rt.block_on(settled(addr));
        end
    } else {
        let end = llm_rum_collector::ingest::clock::now_ms();
        let (cpu0, w0) = (cpu_s(child.id()), written_bytes(child.id()));
        rt.block_on(fill(a, addr, n, end - window_s * 1000.0, window_s * 1000.0));
        println!(
            "collector during the fill: {:.1} µs of CPU and {:.1} KiB written to storage per record",
            (cpu_s(child.id()) - cpu0) / n as f64 * 1e6,
            (written_bytes(child.id()) - w0) / n as f64 / 1024.0
        );
        end
    };
    let from = window_end - window_s * 1000.0;
    if let Ok(c) = rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY) {
        let count = |sql: &str| c.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap_or(-1);
        println!(
            "database: {} records, {} rollup rows, {:.0} MiB",
            count("SELECT COUNT(*) FROM records"),
            count("SELECT COUNT(*) FROM rollups"),
            std::fs::metadata(&db).map(|m| m.len() as f64 / 1048576.0).unwrap_or(0.0)
        );
    }
    if let Some(ch) = &ch {
        let (n, disk, raw) = rt.block_on(ch.sizes());
        println!(
            "ClickHouse {}.records: {n} records, {:.1} MiB on disk: {:.0} bytes per record ({:.0} uncompressed)",
            ch.db,
            disk / 1048576.0,
            disk / n.max(1) as f64,
            raw / n.max(1) as f64
        );
    }
    rt.block_on(reads(a, addr, from, window_end));
    if a.0.iter().any(|x| x == "--exact") {
        match &ch {
            Some(ch) => rt.block_on(exact_ch(addr, ch, from)),
            None => rt.block_on(exact(addr, &db, from)),
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    if !keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// N records, starts from `t0` over `span` ms in order, by `--clients` keep-alive clients.
async fn fill(a: &Args, addr: SocketAddr, n: u64, t0: f64, span: f64) {
    let clients: usize = a.num("--clients", "8");
    let per: u64 = a.num("--records", "10");
    let next = Arc::new(AtomicU64::new(0));
    let acked = Arc::new(AtomicU64::new(0));
    let t = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let (next, acked) = (next.clone(), acked.clone());
        tasks.push(tokio::spawn(async move {
            let mut rng = Rng(0x9E37_79B9 ^ (c as u64 + 1) * 0x1234_5678_9ABC);
            let mut conn = Conn::connect(addr).await.expect("connect");
            let mut lat = Vec::new();
            loop {
                let i = next.fetch_add(per, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let body = beacon_of(&mut rng, i, per, n, t0, span, &format!("c{c}")).to_string();
                let s = Instant::now();
                for attempt in 0..5 {
                    match conn.request("POST", "/v1/rum", &[], body.as_bytes()).await {
                        Ok(r) if r.status == 200 => {
                            acked.fetch_add(r.json()["stored"].as_u64().unwrap_or(0), Ordering::Relaxed);
                            break;
                        }
                        Ok(r) => eprintln!("fill: HTTP {} {}", r.status, r.text()),
                        Err(e) => {
                            eprintln!("fill: {e} (attempt {attempt})");
                            conn = Conn::connect(addr).await.expect("reconnect");
                        }
                    }
                }
                lat.push(s.elapsed().as_secs_f64() * 1000.0);
            }
            lat
        }));
    }
    let reporter = {
        let acked = acked.clone();
        tokio::spawn(async move {
            let mut last = (0u64, Instant::now());
            loop {
                tokio::time::sleep(Duration::from_secs(30)).await;
                let done = acked.load(Ordering::Relaxed);
                let rate = (done - last.0) as f64 / last.1.elapsed().as_secs_f64();
                println!("  … {done} records stored, {rate:.0}/s over the last 30 s; load {}", load());
                last = (done, Instant::now());
            }
        })
    };
    let mut lat = Vec::new();
    for task in tasks {
        lat.extend(task.await.expect("client"));
    }
    reporter.abort();
    let secs = t.elapsed().as_secs_f64();
    lat.sort_by(f64::total_cmp);
    let p = |q: f64| llm_rum_collector::query::percentile(&lat, q).unwrap_or(f64::NAN);
    let stored = acked.load(Ordering::Relaxed);
    println!(
        "filled {stored} of {n} records in {secs:.0} s: {:.0} records/s through ingest ({clients} clients, {per} records/beacon); beacon latency p50 {:.1} ms, p99 {:.1} ms; load {}",
        stored as f64 / secs,
        p(0.5),
        p(0.99),
        load()
    );
}

/// `--bulk` (ClickHouse only): the same records as `fill`, made into ClickHouse rows by the
/// collector's own code (`ingest::decode`, `clock::admit`, `rows::beacon`) and inserted straight
/// into ClickHouse in inserts of `--bulk-records` (default 100 000), two at a time: filling
/// 10 M through HTTP ingest takes most of an hour here. The rollups are then built by the
/// collector itself (`settled`), as they are after live ingest.
async fn bulk(a: &Args, ch: &Ch, n: u64, t0: f64, span: f64) {
    let per: u64 = a.num("--records", "10");
    let size: u64 = a.num("--bulk-records", "100000");
    let next = Arc::new(AtomicU64::new(0));
    let t = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..2u64 {
        let (next, addr, db) = (next.clone(), ch.addr, ch.db.clone());
        tasks.push(tokio::spawn(async move {
            let mut rng = Rng(0x5EED ^ (w + 1) * 0x1234_5678_9ABC);
            let mut gen_s = 0.0;
            loop {
                let i = next.fetch_add(size, Ordering::Relaxed);
                if i >= n {
                    return gen_s;
                }
                let g = Instant::now();
                let (batch, r) = tokio::task::spawn_blocking(move || {
                    let mut batch = llm_rum_collector::store::clickhouse::spool::Batch::default();
                    let mut k = i;
                    while k < (i + size).min(n) {
                        let body = beacon_of(&mut rng, k, per, n, t0, span, &format!("b{w}"));
                        let mut b = llm_rum_collector::ingest::decode(body.to_string().as_bytes()).expect("a valid beacon");
                        let received = t0 + (k as f64 + 0.5) / n as f64 * span;
                        let admitted = llm_rum_collector::ingest::clock::admit(&mut b, received);
                        let id = format!("bulk-{k}");
                        llm_rum_collector::store::clickhouse::rows::beacon(&mut batch, &id, received as i64, None, &b, &admitted);
                        k += per;
                    }
                    (batch, rng)
                })
                .await
                .expect("generate");
                rng = r;
                gen_s += g.elapsed().as_secs_f64();
                for (table, body) in [("records", batch.records), ("beacons", batch.beacons)] {
                    let path = format!("/?query=INSERT%20INTO%20{db}.{table}%20FORMAT%20JSONEachRow");
                    let r = llm_rum_collector_testkit::client::request(addr, "POST", &path, &[], &body)
                        .await
                        .expect("clickhouse");
                    assert_eq!(r.status, 200, "insert: {}", r.text());
                }
            }
        }));
    }
    let mut gen_s = 0.0;
    for task in tasks {
        gen_s += task.await.expect("bulk worker");
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "bulk-inserted {n} records in {secs:.0} s: {:.0} records/s into ClickHouse (2 inserts at a time of {size}; \
         {:.0} s of it making rows); load {}",
        n as f64 / secs,
        gen_s / 2.0,
        load()
    );
}

/// Waits until the collector's rollup builder has looked after now and found nothing pending
/// (`/healthz` rollups), and says how long the rollups took.
async fn settled(addr: SocketAddr) {
    let t = Instant::now();
    let after = llm_rum_collector::ingest::clock::now_ms();
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (_, _, h) = timed(addr, "/healthz", Duration::from_secs(60)).await;
        let r = &h["rollups"];
        if r["pendingMinutes"] == json!(0) && r["lookedAtMs"].as_f64().unwrap_or(0.0) > after {
            println!(
                "rollups settled in {:.0} s ({} minutes built by the collector; load {})",
                t.elapsed().as_secs_f64(),
                r["builtMinutes"],
                load()
            );
            return;
        }
    }
}

/// One GET, timed; `None` when it took longer than `cap`.
async fn timed(addr: SocketAddr, path: &str, cap: Duration) -> (Option<f64>, u16, Value) {
    let t = Instant::now();
    match tokio::time::timeout(cap, async {
        let mut c = Conn::connect(addr).await?;
        c.request("GET", path, &[], b"").await
    })
    .await
    {
        Ok(Ok(r)) => (Some(t.elapsed().as_secs_f64() * 1000.0), r.status, r.json()),
        Ok(Err(e)) => {
            eprintln!("{path}: {e}");
            (None, 0, Value::Null)
        }
        Err(_) => (None, 0, Value::Null),
    }
}

fn ms(v: Option<f64>, cap: Duration) -> String {
    match v {
        Some(x) if x >= 10_000.0 => format!("{:.1} s", x / 1000.0),
        Some(x) => format!("{x:.0} ms"),
        None => format!("> {} s (gave up)", cap.as_secs()),
    }
}

async fn reads(a: &Args, addr: SocketAddr, from: f64, to: f64) {
    let cap = Duration::from_secs_f64(a.num::<f64>("--read-cap", "600"));
    let runs: usize = a.num("--runs", "3");
    let pick = a.get("--reads", "");
    let want = |name: &str| pick.is_empty() || pick.split(',').any(|p| p == name);
    // The dashboard's window: `from` on a minute, no end.
    let from_m = (from / 60_000.0).floor() * 60_000.0;
    let w = format!("from={from_m}");
    let odd = format!("from={}&to={}", from + 12_345.5, to - 54_321.25);
    // The longest window the dashboard offers (30 days, whole minutes), whatever the fill's.
    let d30 = format!("from={}", ((to - 30.0 * 86_400_000.0) / 60_000.0).floor() * 60_000.0);
    let list: Vec<(&str, String)> = vec![
        ("summary", format!("/api/summary?{w}")),
        ("summary-route", format!("/api/summary?{w}&route=/v1/chat/completions")),
        ("summary-model", format!("/api/summary?{w}&model=gpt-4o")),
        ("summary-odd-window", format!("/api/summary?{odd}")),
        ("timeseries", format!("/api/timeseries?metric=perceivedTtft&q=0.95&bucket=60&{w}")),
        ("histogram", format!("/api/histogram?metrics=ttft,perceivedTtft&bins=40&{w}")),
        ("summary-30d", format!("/api/summary?{d30}")),
        ("summary-30d-route", format!("/api/summary?{d30}&route=/v1/chat/completions")),
        ("timeseries-30d", format!("/api/timeseries?metric=perceivedTtft&q=0.95&bucket=3600&{d30}")),
        ("histogram-30d", format!("/api/histogram?metrics=ttft,perceivedTtft&bins=40&{d30}")),
        ("alerts", "/api/alerts".to_string()),
    ];
    println!("reads over [{from_m:.0}, now) — load average {}:", load());
    for (name, path) in &list {
        if !want(name) {
            continue;
        }
        let mut times = Vec::new();
        let mut last = (0, Value::Null);
        for _ in 0..runs {
            let (t, status, body) = timed(addr, path, cap).await;
            times.push(t);
            last = (status, body);
            if t.is_none() {
                break; // a capped read is not repeated
            }
        }
        let extra = match *name {
            "alerts" => format!(
                " (last evaluation of the budget: {})",
                last.1["lastEvaluationMs"].as_f64().map_or("not reported".into(), |v| format!("{v:.1} ms"))
            ),
            n if n.starts_with("summary") => format!(" (count {})", last.1["count"]),
            _ => String::new(),
        };
        println!(
            "  {name:<20} HTTP {:<3} {}{extra}",
            last.0,
            times.iter().map(|t| ms(*t, cap)).collect::<Vec<_>>().join(", ")
        );
    }
    if want("concurrent") {
        // Four summaries at once, and the alerts while they run.
        let t = Instant::now();
        let mut tasks = Vec::new();
        for k in 0..4 {
            let path = format!("/api/summary?{w}&k={k}");
            tasks.push(tokio::spawn(async move { timed(addr, &path, cap).await.0 }));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        let (alerts, _, body) = timed(addr, "/api/alerts", cap).await;
        let mut each = Vec::new();
        for task in tasks {
            each.push(task.await.unwrap_or(None));
        }
        println!(
            "  {:<20} all four done in {} (each: {}); /api/alerts meanwhile {} (last evaluation {})",
            "4 concurrent",
            ms(Some(t.elapsed().as_secs_f64() * 1000.0), cap),
            each.iter().map(|t| ms(*t, cap)).collect::<Vec<_>>().join(", "),
            ms(alerts, cap),
            body["lastEvaluationMs"].as_f64().map_or("not reported".into(), |v| format!("{v:.1} ms"))
        );
    }
}

/// The summary's percentiles against the exact ones over the same records (the dashboard's
/// window): the largest relative error per metric, which the sketch bounds at 1 %.
async fn exact(addr: SocketAddr, db: &std::path::Path, from: f64) {
    let from_m = (from / 60_000.0).floor() * 60_000.0;
    let (_, status, s) = timed(addr, &format!("/api/summary?from={from_m}"), Duration::from_secs(600)).await;
    let c = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).expect("open db");
    let t = Instant::now();
    let mut worst = (0.0f64, String::new());
    let mut line = Vec::new();
    for (metric, column) in [("ttft", "ttft"), ("perceivedTtft", "perceived_ttft"), ("total", "total"), ("itl.p95", "itl_p95")] {
        let mut st = c
            .prepare(&format!("SELECT {column} FROM records WHERE start_ms >= ?1 AND {column} IS NOT NULL"))
            .expect("prepare");
        let mut v: Vec<f64> = st
            .query_map([from_m], |r| r.get::<_, f64>(0))
            .expect("query")
            .map(|x| x.expect("row"))
            .collect();
        v.sort_by(f64::total_cmp);
        let mut max_rel = 0.0f64;
        for (k, q) in [("p50", 0.5), ("p75", 0.75), ("p95", 0.95), ("p99", 0.99)] {
            let (Some(want), Some(got)) = (llm_rum_collector::query::percentile(&v, q), s["metrics"][metric][k].as_f64())
            else {
                continue;
            };
            let rel = (got - want).abs() / want.abs().max(1e-9);
            max_rel = max_rel.max(rel);
            if rel > worst.0 {
                worst = (rel, format!("{metric} {k}: {got:.3} vs exact {want:.3}"));
            }
        }
        line.push(format!("{metric} {:.3} % (n {})", max_rel * 100.0, v.len()));
    }
    println!(
        "  {:<20} HTTP {status} largest relative error of p50/p75/p95/p99 vs exact: {}; worst {} (exact computed in {:.0} s)",
        "exact",
        line.join(", "),
        worst.1,
        t.elapsed().as_secs_f64()
    );
}

/// The summary's percentiles on ClickHouse (the sketch's, from rollup rows and records) against
/// exact ones computed by ClickHouse over the same records (`quantileExact`: the value at rank
/// ⌊q·n⌋ + 1): the relative error (the sketch's bound is 1 %), and the rank error (the share of
/// values ≤ the answer, minus q).
async fn exact_ch(addr: SocketAddr, ch: &Ch, from: f64) {
    let from_m = (from / 60_000.0).floor() * 60_000.0;
    let (_, status, s) = timed(addr, &format!("/api/summary?from={from_m}"), Duration::from_secs(600)).await;
    let t = Instant::now();
    let mut line = Vec::new();
    for (metric, column) in [("ttft", "ttft"), ("perceivedTtft", "perceived_ttft"), ("total", "total"), ("itl.p95", "itl_p95")] {
        let mut worst = (0.0f64, 0.0f64);
        for (k, q) in [("p50", 0.5), ("p75", 0.75), ("p95", 0.95), ("p99", 0.99)] {
            let Some(got) = s["metrics"][metric][k].as_f64() else { continue };
            let r = ch
                .query(&format!(
                    "SELECT quantileExact({q})({column}), countIf({column} <= {got}) / count({column}) \
                     FROM {}.records FINAL WHERE start_ms >= {from_m} AND {column} IS NOT NULL",
                    ch.db
                ))
                .await;
            let v: Vec<f64> = r.split_whitespace().filter_map(|x| x.parse().ok()).collect();
            if let [want, share] = v[..] {
                worst.0 = worst.0.max((got - want).abs() / want.abs().max(1e-9));
                worst.1 = worst.1.max((share - q).abs());
            }
        }
        line.push(format!("{metric} {:.2} % of value, {:.3} % of rank", worst.0 * 100.0, worst.1 * 100.0));
    }
    println!(
        "  {:<20} HTTP {status} largest error of p50/p75/p95/p99 vs exact: {} (exact computed in {:.0} s)",
        "exact",
        line.join("; "),
        t.elapsed().as_secs_f64()
    );
}
