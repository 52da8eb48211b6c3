//! The collector on a real ClickHouse (Debian's clickhouse-server 18.16, started per test on
//! free 127.0.0.1 ports with its own data folder, stopped by PID):
//! - the same records through SQLite and through ClickHouse give the same reads (both answer
//!   from the same sketches), percentiles within the stated error of the exact nearest-rank
//!   value computed here from the records sent;
//! - ClickHouse's reads from its minute rollups equal its reads from the records, through a
//!   retried beacon and a partial completed in a minute already rolled up;
//! - two collectors writing into one ClickHouse answer the same summary, per-route table and
//!   alert state, a record retried through both counted once;
//! - ClickHouse killed mid-ingest and started again: every acknowledged record is there, once;
//! - ClickHouse unreachable at start: the collector starts, spools, says so on /healthz, answers
//!   503 + Retry-After at the spool's bound, and drains once ClickHouse is up.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::clickhouse::ClickHouseServer;
use common::*;
use llm_rum_collector::cli::Config;
use llm_rum_collector::store::clickhouse::http::Target;
use llm_rum_collector_testkit::rng::Rng;
use serde_json::{json, Value};

fn ch_config(url: &str, spool: &TempDir) -> Config {
    Config {
        clickhouse: Some(Target::parse(url).unwrap()),
        spool: spool.0.join("spool"),
        ..config(&spool.db())
    }
}

async fn start(cfg: Config) -> SocketAddr {
    llm_rum_collector::start(cfg).await.expect("start").addr
}

async fn post_ok(addr: SocketAddr, records: Vec<Value>) {
    let r = post(addr, beacon(records).to_string().as_bytes(), &[]).await;
    assert_eq!(r.status, 200, "{}", r.text());
}

/// The records sent, as ground truth: (start, ttft) and the generated JSON.
struct Sent {
    records: Vec<Value>,
}

impl Sent {
    fn generate(n: usize, seed: u64) -> Sent {
        let mut rng = Rng(seed);
        let t0 = now_ms() - 50.0 * 60_000.0;
        let routes = ["/v1/chat/completions", "/v1/responses", "/api/chat"];
        let mut records = Vec::new();
        for i in 0..n {
            // Long-tailed, like real TTFTs: 80 ms … several seconds.
            let ttft = (80.0 + 400.0 * (rng.normal() * 0.8).exp() * rng.unit()).round();
            let mut r = record(&format!("rec-{seed}-{i}"), t0 + rng.unit() * 45.0 * 60_000.0, ttft);
            let route = *rng.pick(&routes);
            r["url"] = json!(format!("http://127.0.0.1:8080{route}"));
            r["outcome"] = json!(*rng.pick(&["ok", "ok", "ok", "ok", "error", "aborted"]));
            let stalls = rng.below(3);
            r["stalls"]["count"] = json!(stalls);
            r["stalls"]["network"] = json!(stalls.min(1));
            r["stalls"]["render"] = json!(stalls.saturating_sub(1));
            r["buffered"] = [json!(true), json!(false), Value::Null][rng.below(3)].clone();
            r["upstreamBuffered"] = [json!(true), json!(false), Value::Null][rng.below(3)].clone();
            r["hidden"] = json!(rng.below(10) == 0);
            let (model, provider) = [(json!("gpt-4o"), json!("openai")), (json!("claude-sonnet-4"), json!("anthropic")), (Value::Null, Value::Null)][rng.below(3)].clone();
            r["model"] = model;
            r["provider"] = provider;
            records.push(r);
        }
        Sent { records }
    }

    /// Sorted values of a metric (as the SDK sent them), optionally within a time bucket.
    fn values(&self, f: impl Fn(&Value) -> Option<f64>) -> Vec<f64> {
        let mut v: Vec<f64> = self.records.iter().filter_map(f).collect();
        v.sort_by(f64::total_cmp);
        v
    }
}

fn rank(q: f64, n: usize) -> usize {
    ((q * n as f64).ceil() as usize).clamp(1, n)
}

/// The stated error of both stores (the log-histogram sketch): within 1 % of the exact
/// nearest-rank value.
fn within_sketch(got: f64, sorted: &[f64], q: f64, what: &str) {
    let exact = sorted[rank(q, sorted.len()) - 1];
    assert!(
        (got - exact).abs() <= exact.abs() * 0.01 + 0.01,
        "{what}: {got} vs exact {exact}"
    );
}

const QS: [(&str, f64); 4] = [("p50", 0.5), ("p75", 0.75), ("p95", 0.95), ("p99", 0.99)];

/// The parts of a summary every store must answer exactly.
fn exact_parts(s: &Value) -> Value {
    let metric_counts: Value = s["metrics"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v["count"].clone()))
        .collect::<serde_json::Map<_, _>>()
        .into();
    let stage_counts: Vec<Value> = s["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| json!([x["stage"], x["count"]]))
        .collect();
    // Per model: counts and rates exact (percentiles checked against the truth separately).
    let models: Vec<Value> = s["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| json!([m["model"], m["count"], m["stallRate"], m["bufferedRate"], m["upstreamBufferedRate"]]))
        .collect();
    json!({
        "count": s["count"], "outcomes": s["outcomes"], "routes": s["routes"], "models": models,
        "stallRate": s["stallRate"], "bufferedRate": s["bufferedRate"],
        "upstreamBufferedRate": s["upstreamBufferedRate"], "hiddenCount": s["hiddenCount"],
        "stallCauses": s["stallCauses"], "dropped": s["dropped"], "refused": s["refused"],
        "metricCounts": metric_counts, "stageCounts": stage_counts,
    })
}

/// A GET that fails the test rather than hang it (bounded at 60 s).
async fn get(addr: SocketAddr, path: &str) -> llm_rum_collector_testkit::client::Resp {
    tokio::time::timeout(Duration::from_secs(60), common::get(addr, path))
        .await
        .unwrap_or_else(|_| panic!("GET {path}: no answer within 60 s"))
}

async fn wait_for(addr: SocketAddr, path: &str, within: Duration, ok: impl Fn(&Value) -> bool) -> Value {
    let t = Instant::now();
    loop {
        let v = get(addr, path).await.json();
        if ok(&v) {
            return v;
        }
        assert!(t.elapsed() < within, "{path} never as expected: {v}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn both_stores_agree_and_two_collectors_share_one_clickhouse() {
    let ch = ClickHouseServer::start();
    let dirs = [TempDir::new("ch-sqlite"), TempDir::new("ch-a"), TempDir::new("ch-b")];
    let with_budget = |mut c: Config| {
        c.budgets = vec![
            llm_rum_collector::alerts::parse_budget("ttft p95<=100").unwrap(),
            // A model's budget no answer of it breaks: never fires (its own filter is applied).
            llm_rum_collector::alerts::parse_budget("ttft p95<=100000 model=gpt-4o").unwrap(),
        ];
        c.alert_window_s = 3600.0;
        c.sustain_s = 0.3;
        c.eval_interval_ms = 100;
        c
    };
    let sqlite = start(with_budget(config(&dirs[0].db()))).await;
    let a = start(with_budget(ch_config(&ch.url("rum_shared"), &dirs[1]))).await;
    let b = start(with_budget(ch_config(&ch.url("rum_shared"), &dirs[2]))).await;

    let sent = Sent::generate(600, 7);
    // SQLite gets everything; the two ClickHouse collectors half each (a load balancer).
    for (i, chunk) in sent.records.chunks(20).enumerate() {
        post_ok(sqlite, chunk.to_vec()).await;
        post_ok(if i % 2 == 0 { a } else { b }, chunk.to_vec()).await;
    }
    // A retried beacon, landing on the other node, and a partial then its completed version:
    // each counted once, in both stores.
    let retried = sent.records[..20].to_vec();
    post_ok(sqlite, retried.clone()).await;
    post_ok(b, retried).await;
    let mut partial = record("late-1", now_ms() - 120_000.0, 150.0);
    partial["outcome"] = json!("partial");
    let mut done = partial.clone();
    done["outcome"] = json!("ok");
    for (first, then) in [(sqlite, sqlite), (a, b)] {
        post_ok(first, vec![partial.clone()]).await;
        post_ok(then, vec![done.clone()]).await;
    }
    let mut truth = sent.records.clone();
    truth.push(done.clone());
    let sent = Sent { records: truth };
    let n = sent.records.len() as u64;

    // ClickHouse inserts are group-committed (≥ 200 ms apart): wait for the last to land.
    let sa = wait_for(a, "/api/summary", Duration::from_secs(20), |s| s["count"] == json!(n)).await;
    let sb = get(b, "/api/summary").await.json();
    let sq = get(sqlite, "/api/summary").await.json();
    assert_eq!(sq["count"], json!(n));
    assert_eq!(exact_parts(&sq), exact_parts(&sa), "SQLite vs ClickHouse");
    assert_eq!(exact_parts(&sa), exact_parts(&sb), "two collectors on one ClickHouse");
    assert_eq!(sa["outcomes"]["ok"].as_u64().unwrap() as usize, sent.records.iter().filter(|r| r["outcome"] == "ok").count());
    // Both stores aggregate the same records into the same sketches: the whole answers agree,
    // percentiles included (ClickHouse's from its records or its minute rollups).
    assert_eq!(sq, sa, "SQLite vs ClickHouse, percentiles included");

    // Percentiles against the exact nearest-rank values of what was sent.
    for (metric, key) in [("ttft", "ttft"), ("perceivedTtft", "perceivedTtft"), ("total", "total")] {
        let v = sent.values(|r| r[key].as_f64());
        for (p, q) in QS {
            within_sketch(sq["metrics"][metric][p].as_f64().unwrap(), &v, q, &format!("{metric} {p}"));
            for s in [&sa, &sb] {
                within_sketch(s["metrics"][metric][p].as_f64().unwrap(), &v, q, &format!("{metric} {p}"));
            }
        }
    }
    let stalls = sent.values(|r| r["stalls"]["count"].as_f64());
    within_sketch(sa["metrics"]["stalls.count"]["p95"].as_f64().unwrap(), &stalls, 0.95, "stalls.count p95");
    // Stage medians: headers→firstToken is ttft − 20 in these records; server:prefill ttft − 40.
    let stage = |s: &Value, name: &str| {
        s["stages"].as_array().unwrap().iter().find(|x| x["stage"] == name).map(|x| x["median"].as_f64().unwrap())
    };
    let h2t = sent.values(|r| Some(r["ttft"].as_f64()? - 20.0));
    let prefill = sent.values(|r| Some((r["ttft"].as_f64()? - 40.0).max(0.0)));
    within_sketch(stage(&sq, "headers→firstToken").unwrap(), &h2t, 0.5, "headers→firstToken");
    within_sketch(stage(&sq, "server:prefill").unwrap(), &prefill, 0.5, "server:prefill");
    for s in [&sa, &sb] {
        within_sketch(stage(s, "headers→firstToken").unwrap(), &h2t, 0.5, "headers→firstToken");
        within_sketch(stage(s, "server:prefill").unwrap(), &prefill, 0.5, "server:prefill");
        assert_eq!(stage(s, "decode"), Some(500.0), "a constant stage is exact");
    }

    // The per-model table's percentiles, and a provider filter (raw records on SQLite).
    for m in sa["models"].as_array().unwrap() {
        let v = sent.values(|r| (r["model"] == m["model"]).then(|| r["ttft"].as_f64()).flatten());
        assert_eq!(m["count"], json!(v.len()), "{m}");
        for (p, q) in [("p50", 0.5), ("p95", 0.95)] {
            within_sketch(m["ttft"][p].as_f64().unwrap(), &v, q, &format!("model {} ttft {p}", m["model"]));
        }
    }
    let models: std::collections::BTreeSet<String> = sent.records.iter().map(|r| r["model"].to_string()).collect();
    assert_eq!(sa["models"].as_array().unwrap().len(), models.len(), "every model, and none");
    let path = "/api/summary?provider=anthropic";
    let (fq, fa) = (get(sqlite, path).await.json(), get(a, path).await.json());
    assert_eq!(exact_parts(&fq), exact_parts(&fa), "filtered by provider");
    assert_eq!(fa["count"], json!(sent.records.iter().filter(|r| r["provider"] == "anthropic").count()));

    // A filtered read (route and outcome), and the timeseries per 10-minute bucket.
    let route = "/v1/responses";
    let path = format!("/api/summary?route={route}&outcome=ok");
    let (fq, fa) = (get(sqlite, &path).await.json(), get(a, &path).await.json());
    assert_eq!(exact_parts(&fq), exact_parts(&fa), "filtered by route and outcome");
    let in_route = |r: &Value| r["url"].as_str().unwrap().ends_with(route) && r["outcome"] == "ok";
    let v = sent.values(|r| in_route(r).then(|| r["ttft"].as_f64()).flatten());
    assert_eq!(fa["count"], json!(v.len()));
    within_sketch(fa["metrics"]["ttft"]["p95"].as_f64().unwrap(), &v, 0.95, "filtered ttft p95");

    let ts = "/api/timeseries?metric=ttft&q=0.95&bucket=600";
    let (tq, ta) = (get(sqlite, ts).await.json(), get(a, ts).await.json());
    let (pq, pa) = (tq["points"].as_array().unwrap(), ta["points"].as_array().unwrap());
    assert!(pq.len() >= 5, "{tq}");
    assert_eq!(pq.len(), pa.len(), "{tq} vs {ta}");
    for (x, y) in pq.iter().zip(pa) {
        assert_eq!((&x["t"], &x["n"]), (&y["t"], &y["n"]));
        let t = x["t"].as_f64().unwrap();
        let v = sent.values(|r| {
            let s = r["startEpochMs"].as_f64()?;
            (s >= t && s < t + 600_000.0).then(|| r["ttft"].as_f64()).flatten()
        });
        within_sketch(x["value"].as_f64().unwrap(), &v, 0.95, "bucket p95");
        within_sketch(y["value"].as_f64().unwrap(), &v, 0.95, "bucket p95");
    }
    let hist = "/api/histogram?metrics=ttft,perceivedTtft&bins=20";
    let (hq, ha) = (get(sqlite, hist).await.json(), get(a, hist).await.json());
    for (x, y) in hq["series"].as_array().unwrap().iter().zip(ha["series"].as_array().unwrap()) {
        assert_eq!(x["count"], y["count"]);
        let sum: u64 = y["counts"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).sum();
        assert_eq!(json!(sum), y["count"], "every value in a bin");
    }

    // The same alert state on every node: ttft p95 > 100 ms throughout, so all three fire.
    for addr in [sqlite, a, b] {
        let al = wait_for(addr, "/api/alerts", Duration::from_secs(20), |v| v["firing"] == json!(1)).await;
        assert_eq!(al["alerts"][0]["budget"], "ttft p95<=100");
        let all = sent.values(|r| r["ttft"].as_f64());
        let gpt = sent.values(|r| (r["model"] == "gpt-4o").then(|| r["ttft"].as_f64()).flatten());
        for (k, v) in [(0, &all), (1, &gpt)] {
            let current = al["budgets"][k]["current"].as_f64().unwrap();
            within_sketch(current, v, 0.95, "alert value");
        }
    }
    // On disk: every record once after ClickHouse's own merge, too.
    let q = ch.query("SELECT count(), uniqExact(id) FROM rum_shared.records FINAL FORMAT TSV").await;
    assert_eq!(q.trim(), format!("{n}\t{n}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn clickhouse_killed_mid_ingest_every_acknowledged_record_is_there_once() {
    let mut ch = ClickHouseServer::start();
    let dir = TempDir::new("ch-fault");
    let addr = start(ch_config(&ch.url("rum_fault"), &dir)).await;
    let mut acked = std::collections::BTreeSet::new();
    let mut sent_beacons: Vec<Vec<Value>> = Vec::new();
    let mut saw_spooling = false;
    for i in 0..150 {
        if i == 50 {
            ch.kill9();
        }
        if i == 110 {
            ch.restart();
        }
        let recs: Vec<Value> = (0..5).map(|k| record(&format!("f-{i}-{k}"), recent(), 100.0 + k as f64)).collect();
        let r = post(addr, beacon(recs.clone()).to_string().as_bytes(), &[]).await;
        // Down or not, a beacon is acknowledged (spooled) or refused, never lost silently.
        assert_eq!(r.status, 200, "beacon {i}: {}", r.text());
        acked.extend(recs.iter().map(|r| r["id"].as_str().unwrap().to_string()));
        sent_beacons.push(recs);
        if (60..110).contains(&i) && i % 10 == 0 {
            let h = get(addr, "/healthz").await;
            assert_eq!(h.status, 200, "spooling still acknowledges");
            let h = h.json();
            if h["status"] == "spooling" && h["spool"]["batches"].as_u64().unwrap() > 0 {
                saw_spooling = true;
                assert!(h["clickhouse"].as_str().unwrap().contains("ClickHouse"), "{h}");
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(saw_spooling, "/healthz said spooling while ClickHouse was down");
    // SDK retries of beacons sent before, during and after the outage.
    for i in [10, 70, 140] {
        post_ok(addr, sent_beacons[i].clone()).await;
    }
    wait_for(addr, "/healthz", Duration::from_secs(60), |h| h["status"] == "ok" && h["spool"]["batches"] == json!(0)).await;
    let n = acked.len();
    assert_eq!(n, 750);
    let q = ch.query("SELECT count(), uniqExact(id) FROM rum_fault.records FINAL FORMAT TSV").await;
    assert_eq!(q.trim(), format!("{n}\t{n}"), "every acknowledged record, once");
    let ids = ch.query("SELECT id FROM rum_fault.records FINAL ORDER BY id FORMAT TSV").await;
    let stored: std::collections::BTreeSet<String> = ids.lines().map(str::to_string).collect();
    assert_eq!(stored, acked);
    let s = wait_for(addr, "/api/summary", Duration::from_secs(10), |s| s["count"] == json!(n)).await;
    assert_eq!(s["metrics"]["ttft"]["count"], json!(n));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn unreachable_at_start_the_collector_spools_says_so_and_drains() {
    // Ports chosen, server not started: nothing listens there yet.
    let mut ch = ClickHouseServer::start();
    ch.stop();
    let dir = TempDir::new("ch-down");
    let mut cfg = ch_config(&ch.url("rum_down"), &dir);
    // ~20 KB: a handful of one-record beacons (≈ 2.4 KB each as rows).
    cfg.spool_max_mb = 0.02;
    let run = llm_rum_collector::start(cfg).await.expect("start");
    let addr = run.addr;
    let h = get(addr, "/healthz").await;
    assert_eq!(h.status, 200);
    let h = h.json();
    assert_eq!(h["status"], "spooling", "{h}");
    assert!(h["clickhouse"].as_str().unwrap().contains("unreachable"), "{h}");

    let mut acked = 0;
    let mut refused = None;
    for i in 0..40 {
        let body = beacon(vec![record(&format!("d-{i}"), recent(), 200.0)]).to_string();
        let r = post(addr, body.as_bytes(), &[]).await;
        match r.status {
            200 => acked += 1,
            503 => {
                refused = Some(r);
                break;
            }
            s => panic!("beacon {i}: {s} {}", r.text()),
        }
    }
    let refused = refused.expect("the spool's bound answers 503");
    assert!(acked >= 4, "acknowledged {acked} before the bound");
    assert!(refused.header("retry-after").unwrap().parse::<u64>().unwrap() >= 1);
    assert!(refused.text().contains("spool"), "{}", refused.text());
    let h = get(addr, "/healthz").await;
    assert_eq!(h.status, 503, "at the bound /healthz fails");
    let h = h.json();
    assert_eq!(h["status"], "failing");
    assert_eq!(h["spool"]["batches"], json!(acked));
    assert!(h["spool"]["refusedFull"].as_u64().unwrap() >= 1);

    // ClickHouse comes up: the schema is created, the spool drains, ingest is back.
    ch.restart();
    wait_for(addr, "/healthz", Duration::from_secs(60), |h| h["status"] == "ok" && h["spool"]["batches"] == json!(0)).await;
    post_ok(addr, vec![record("d-after", recent(), 200.0)]).await;
    let n = acked + 1;
    wait_for(addr, "/api/summary", Duration::from_secs(10), |s| s["count"] == json!(n)).await;
    let q = ch.query("SELECT count(), uniqExact(id) FROM rum_down.records FINAL FORMAT TSV").await;
    assert_eq!(q.trim(), format!("{n}\t{n}"));

    // Retention drops whole days: a record started three days ago (written through the store:
    // HTTP ingest refuses starts that old) goes with its day; today's stay.
    let old = record("old-1", now_ms() - 3.0 * 86_400_000.0, 100.0);
    let b = llm_rum_collector::ingest::decode(beacon(vec![old]).to_string().as_bytes()).unwrap();
    run.state.storage.write(b, None, now_ms() as i64, Default::default()).await.expect("stored");
    let count = || async { ch.query("SELECT count() FROM rum_down.records FINAL FORMAT TSV").await.trim().to_string() };
    assert_eq!(count().await, (n + 1).to_string());
    let llm_rum_collector::store::Storage::ClickHouse(store) = &run.state.storage else {
        panic!("a ClickHouse store")
    };
    // A cutoff two days back keeps yesterday and today, drops the day three days back.
    assert_eq!(store.drop_days_before(now_ms() - 2.0 * 86_400_000.0).await.expect("retention"), 1);
    assert_eq!(count().await, n.to_string());
}

/// The ClickHouse collector's rollup builder, once it has looked after `after_ms` and found
/// nothing pending: every minute with records is answered from its rollup rows.
async fn settled(addr: SocketAddr, after_ms: f64) -> Value {
    let v = wait_for(addr, "/healthz", Duration::from_secs(60), |h| {
        let r = &h["rollups"];
        r["pendingMinutes"] == json!(0) && r["lookedAtMs"].as_f64().unwrap_or(0.0) > after_ms
    })
    .await;
    v["rollups"].clone()
}

/// The same reads on SQLite and on ClickHouse (as JSON, in this order).
async fn reads(addr: SocketAddr) -> Vec<Value> {
    let mut out = Vec::new();
    for path in [
        "/api/summary",
        "/api/summary?route=/v1/responses",
        "/api/summary?model=gpt-4o&outcome=ok",
        "/api/timeseries?metric=ttft&q=0.95&bucket=60",
        "/api/timeseries?metric=perceivedTtft&q=0.5&bucket=600",
        "/api/histogram?metrics=ttft,perceivedTtft&bins=20",
    ] {
        let r = get(addr, path).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        out.push(r.json());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rollup_reads_equal_raw_reads_through_retries_and_upgrades() {
    let ch = ClickHouseServer::start();
    let dirs = [TempDir::new("ru-sqlite"), TempDir::new("ru-ch")];
    let sqlite = start(config(&dirs[0].db())).await;
    let c = start(ch_config(&ch.url("rum_rollups"), &dirs[1])).await;
    let rollups = || async { get(c, "/healthz").await.json()["rollups"].clone() };

    // A partial in a minute that will be rolled up before it is completed.
    let sent = Sent::generate(400, 11);
    let mut partial = record("upgraded-1", now_ms() - 20.0 * 60_000.0, 333.0);
    partial["outcome"] = json!("partial");
    let mut batch = sent.records.clone();
    batch.push(partial.clone());
    for chunk in batch.chunks(25) {
        post_ok(sqlite, chunk.to_vec()).await;
        post_ok(c, chunk.to_vec()).await;
    }
    let n = batch.len() as u64;
    wait_for(c, "/api/summary", Duration::from_secs(20), |s| s["count"] == json!(n)).await;

    // Straight after the inserts no minute has settled: ClickHouse reads its records.
    let before = rollups().await;
    let raw = reads(c).await;
    let after = rollups().await;
    assert_eq!(raw, reads(sqlite).await, "records on ClickHouse vs SQLite's rollups");
    assert!(
        after["rawRangesRead"].as_u64() > before["rawRangesRead"].as_u64(),
        "the first reads are from records: {before} → {after}"
    );

    // Once the minutes are rolled up, the same answers come from the rollup rows alone.
    let done = now_ms();
    let r0 = settled(c, done).await;
    assert!(r0["builtMinutes"].as_u64().unwrap() >= 40, "{r0}");
    let rolled = reads(c).await;
    let r1 = rollups().await;
    assert_eq!(rolled, raw, "rollup rows vs records");
    assert_eq!(r1["rawRangesRead"], r0["rawRangesRead"], "no record read once settled: {r0} → {r1}");
    assert!(r1["minutesReadFromRollups"].as_u64() > r0["minutesReadFromRollups"].as_u64());

    // A window that starts and ends inside minutes: a partial minute mostly inside it is read
    // as its rows minus the records outside (counts exact, percentiles within the sketch's 1 %).
    let m = 60_000.0;
    let t0 = sent.records.iter().filter_map(|r| r["startEpochMs"].as_f64()).fold(f64::INFINITY, f64::min);
    let (from, to) = (((t0 / m).floor() + 5.0) * m + 10_000.0, ((t0 / m).floor() + 40.0) * m + 45_000.0);
    let path = format!("/api/summary?from={from}&to={to}");
    let (oq, oc) = (get(sqlite, &path).await.json(), get(c, &path).await.json());
    assert_eq!(exact_parts(&oq), exact_parts(&oc), "odd window: SQLite vs ClickHouse");
    let truth = Sent { records: batch.clone() };
    let v = truth.values(|r| {
        let s = r["startEpochMs"].as_f64()?;
        (s >= from && s < to).then(|| r["ttft"].as_f64()).flatten()
    });
    assert_eq!(oc["count"], json!(v.len()));
    for (p, q) in QS {
        within_sketch(oc["metrics"]["ttft"][p].as_f64().unwrap(), &v, q, &format!("odd window ttft {p}"));
    }
    let r1 = rollups().await;
    assert_eq!(r1["partialMinutesFromRows"].as_u64(), Some(2), "both ragged minutes from their rows: {r1}");

    // A retried beacon and the partial's completed version land in rolled-up minutes: those
    // minutes are read from the records at once (counted once, the partial replaced) ...
    let mut completed = partial.clone();
    completed["outcome"] = json!("ok");
    let retry: Vec<Value> = sent.records[100..125].iter().cloned().chain([completed]).collect();
    // The ingest answers say which records were copies, on both stores alike.
    for addr in [sqlite, c] {
        let r = post(addr, beacon(retry.clone()).to_string().as_bytes(), &[]).await;
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!((r.json()["stored"].clone(), r.json()["duplicates"].clone()), (json!(1), json!(25)), "{}", r.text());
    }
    // (Acknowledged means inserted: no waiting. The minutes' rows are not rebuilt for
    // rollup::SETTLE_S, so these reads must take the changed minutes from the records.)
    let changed = get(c, "/api/summary").await.json();
    assert!(changed["outcomes"].get("partial").is_none(), "{changed}");
    assert_eq!(changed["count"], json!(n), "the retry counted once");
    let expect = reads(sqlite).await;
    assert_eq!(reads(c).await, expect, "dirty minutes from the records");
    // ... and from the rebuilt rows once they settle.
    let r2 = settled(c, now_ms()).await;
    assert!(r2["builtMinutes"].as_u64() > r1["builtMinutes"].as_u64(), "{r1} → {r2}");
    assert_eq!(reads(c).await, expect, "rebuilt rollup rows");
    assert_eq!(rollups().await["rawRangesRead"], r2["rawRangesRead"], "no record read once settled");

    // A late record in the odd window's first minute, before the window starts: the minute is
    // dirty as a whole (its rows stand for all of it), so the window's edge is read from the
    // records — not as rows minus records the rows never held.
    // (A copy of a record of that minute under a new id: the same key as rows the minute has.)
    let minute = (from / m).floor() * m;
    let mut late = batch
        .iter()
        .find(|r| r["startEpochMs"].as_f64().is_some_and(|s| s >= minute && s < minute + m))
        .expect("a record in the window's first minute")
        .clone();
    late["id"] = json!("late-edge");
    late["startEpochMs"] = json!(from - 5_000.0);
    post_ok(sqlite, vec![late.clone()]).await;
    post_ok(c, vec![late]).await;
    let (oq, oc) = (get(sqlite, &path).await.json(), get(c, &path).await.json());
    assert_eq!(exact_parts(&oq), exact_parts(&oc), "odd window after a late record outside it");
}
