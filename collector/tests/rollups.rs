//! Rollups against the exact answer: every read (summary, timeseries, histogram) over windows
//! that cut days, hours and minutes at odd places, with and without filters, after hours and
//! days were compacted, after late records landed in compacted periods and partials were
//! replaced by their completed versions — each percentile within the sketch's documented
//! error (1 % relative, ±0.01 ms) of the exact nearest-rank value computed here from the
//! records themselves; counts, rates and sums exact. Then: more keys in a period than it keeps
//! (filters still exact), and a database from before rollups (migration 2 builds them).

mod common;

use std::time::Duration;

use common::*;
use llm_rum_collector_testkit::rng::Rng;
use llm_rum_collector::ingest::{self, clock};
use serde_json::{json, Value};

const MIN: f64 = 60_000.0;
const HOUR: f64 = 3_600_000.0;
const DAY: f64 = 86_400_000.0;

const ROUTES: [&str; 3] = ["/v1/a", "/v1/b", "/v1/chat/:id"];
const MODELS: [&str; 3] = ["m1", "m2", "m3"];

/// A record with varied metrics; `interaction` after start now and then (a negative stage).
fn rec(rng: &mut Rng, id: &str, start: f64, outcome: &str) -> Value {
    let ttft = (5.0 + 0.8 * (rng.unit() * 6.0 - 3.0)).exp(); // ~150 ms, long tail
    let mut r = record(id, start, ttft);
    let route = *rng.pick(&ROUTES);
    r["url"] = json!(format!("https://api.test{route}?q=1"));
    r["model"] = json!(*rng.pick(&MODELS));
    r["outcome"] = json!(outcome);
    r["total"] = json!(ttft + 200.0 + rng.unit() * 4000.0);
    r["itl"]["p95"] = json!(5.0 + rng.unit() * 80.0);
    let stalls = (rng.next() % 4) as i64;
    r["stalls"] = json!({"count": stalls, "totalMs": stalls * 300, "longestMs": 300,
                         "network": stalls / 2, "render": stalls - stalls / 2});
    r["buffered"] = json!(rng.next() % 7 == 0);
    // Upstream buffering differs by route (so a per-route mix-up shows): null (too short to
    // tell) now and then.
    // (Drawn from the id, not from `rng`: the other fields stay as they were drawn before.)
    let h = id.bytes().fold(0xcbf29ce484222325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100000001b3));
    r["upstreamBuffered"] = match h % 8 {
        0 => Value::Null,
        k => json!(k as usize <= 1 + ROUTES.iter().position(|x| *x == route).unwrap() * 2),
    };
    // The provider is no function of the model (a gateway serves several): a provider
    // filter that read the model would show.
    r["provider"] = json!(["openai", "anthropic"][((h >> 8) % 2) as usize]);
    r["marks"]["interaction"] = json!(if rng.next() % 5 == 0 { 3.0 } else { -40.0 - rng.unit() * 100.0 });
    r["serverTiming"] = json!([{"name": "queue", "dur": rng.unit() * 30.0},
                               {"name": format!("s{}", rng.next() % 3), "dur": 1.0 + rng.unit() * 500.0}]);
    r
}

/// Writes records through the running collector's writer (start times days old, which HTTP
/// ingest would refuse as implausible, are what compaction needs).
async fn store(run: &llm_rum_collector::Running, recs: &[Value]) {
    for chunk in recs.chunks(40) {
        let b = ingest::decode(beacon(chunk.to_vec()).to_string().as_bytes()).expect("valid");
        run.state
            .storage
            .write(b, None, now_ms() as i64, clock::Admitted::default())
            .await
            .expect("stored");
    }
}

/// Hours and days that are complete but not rebuilt yet.
fn stale(db: &std::path::Path) -> i64 {
    let c = rusqlite::Connection::open(db).unwrap();
    c.query_row(
        "SELECT COUNT(*) FROM rollup_dirty WHERE (period + 1) * (CASE level WHEN 1 THEN 3600000 ELSE 86400000 END) + 300000 <= ?1",
        [now_ms() as i64],
        |r| r.get(0),
    )
    .unwrap()
}

/// Waits (bounded) until every complete hour and day is compacted.
async fn compacted(db: &std::path::Path) {
    for _ in 0..300 {
        if stale(db) == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("not compacted: {} stale hours/days", stale(db));
}

fn exact(mut v: Vec<f64>, q: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1])
}

fn within(got: &Value, want: Option<f64>, label: &str) {
    match want {
        None => assert!(got.is_null(), "{label}: {got} for no values"),
        Some(x) => {
            let g = got.as_f64().unwrap_or_else(|| panic!("{label}: {got}"));
            assert!((g - x).abs() <= 0.01 * x.abs() + 0.01, "{label}: {g} vs exact {x}");
        }
    }
}

fn num(r: &Value, path: &[&str]) -> Option<f64> {
    path.iter().try_fold(r, |v, k| v.get(*k))?.as_f64()
}

type Sel<'a> = Vec<&'a Value>;

/// Checks one `/api/summary` answer against the records it should cover.
fn check_summary(s: &Value, sel: &Sel, label: &str) {
    assert_eq!(s["count"].as_u64(), Some(sel.len() as u64), "{label} count");
    for (m, path) in [
        ("ttft", &["ttft"][..]),
        ("perceivedTtft", &["perceivedTtft"]),
        ("total", &["total"]),
        ("itl.p95", &["itl", "p95"]),
        ("stalls.count", &["stalls", "count"]),
    ] {
        let v: Vec<f64> = sel.iter().filter_map(|r| num(r, path)).collect();
        assert_eq!(s["metrics"][m]["count"].as_u64(), Some(v.len() as u64), "{label} {m} count");
        for (k, q) in [("p50", 0.5), ("p75", 0.75), ("p95", 0.95), ("p99", 0.99)] {
            within(&s["metrics"][m][k], exact(v.clone(), q), &format!("{label} {m} {k}"));
        }
    }
    for o in ["ok", "error", "aborted", "partial"] {
        let n = sel.iter().filter(|r| r["outcome"] == o).count() as u64;
        assert_eq!(s["outcomes"][o].as_u64().unwrap_or(0), n, "{label} outcome {o}");
    }
    let stalled = sel.iter().filter(|r| r["stalls"]["count"].as_i64() > Some(0)).count();
    if !sel.is_empty() {
        // A ratio of exact counts, but read back through serde_json's default float parser,
        // which is not correctly rounded (it can be one ulp off without `float_roundtrip`:
        // CI read 10/11 as 0.9090909090909092), so equal to 1e-12, as in check_buffering.
        let (got, want) = (s["stallRate"].as_f64().unwrap_or(f64::NAN), stalled as f64 / sel.len() as f64);
        assert!((got - want).abs() < 1e-12, "{label} stallRate: {got} vs exact {want}");
    }
    check_buffering(s, sel, label);
    check_models(s, sel, label);
    let net: i64 = sel.iter().map(|r| r["stalls"]["network"].as_i64().unwrap()).sum();
    assert_eq!(s["stallCauses"]["network"].as_i64(), Some(net), "{label} network");
    let stage = |name: &str| {
        s["stages"].as_array().unwrap().iter().find(|x| x["stage"] == name).map(|x| x["median"].clone())
    };
    // A stage of either sign (interaction after start in some records).
    let inter: Vec<f64> = sel.iter().filter_map(|r| num(r, &["marks", "interaction"]).map(|i| -i)).collect();
    within(&stage("interaction→start").unwrap_or(Value::Null), exact(inter, 0.5), &format!("{label} interaction→start"));
    let queue: Vec<f64> = sel.iter().filter_map(|r| num(r, &["serverTiming", "0", "dur"]).or_else(|| r["serverTiming"][0]["dur"].as_f64())).collect();
    within(&stage("server:queue").unwrap_or(Value::Null), exact(queue, 0.5), &format!("{label} server:queue"));
}

/// The route the collector files a record under (its URL's path).
fn route_of(r: &Value) -> String {
    let url = r["url"].as_str().unwrap();
    let path = &url[url.find("://").unwrap() + 3..];
    let path = &path[path.find('/').unwrap()..];
    path.split('?').next().unwrap().to_string()
}

/// The UI's and upstream buffering shares, overall and per route, exactly as the records say:
/// rollup rows count them, so there is no tolerance. The 20 busiest routes are listed (count
/// descending, then name); when a period folded routes into `(other)`, the routes listed
/// carry at most their records.
fn check_buffering(s: &Value, sel: &Sel, label: &str) {
    let share = |rs: &[&Value], key: &str| {
        let known: Vec<bool> = rs.iter().filter_map(|r| r[key].as_bool()).collect();
        if known.is_empty() {
            Value::Null
        } else {
            json!(known.iter().filter(|b| **b).count() as f64 / known.len() as f64)
        }
    };
    // Rates are a ratio of exact counts: equal up to the float's last bit through JSON.
    let same = |got: &Value, want: &Value, what: &str| match (got.as_f64(), want.as_f64()) {
        (Some(g), Some(w)) => assert!((g - w).abs() < 1e-12, "{label} {what}: {g} vs exact {w}"),
        _ => assert_eq!(got, want, "{label} {what}"),
    };
    same(&s["bufferedRate"], &share(sel, "buffered"), "bufferedRate");
    same(&s["upstreamBufferedRate"], &share(sel, "upstreamBuffered"), "upstreamBufferedRate");
    let mut by: std::collections::BTreeMap<String, Vec<&Value>> = Default::default();
    for r in sel {
        by.entry(route_of(r)).or_default().push(r);
    }
    let listed = s["routes"].as_array().unwrap_or_else(|| panic!("{label}: {s}"));
    let folded = listed.iter().any(|r| r["route"] == "(other)");
    if !folded {
        let mut want: Vec<(&String, &Vec<&Value>)> = by.iter().collect();
        want.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(b.0)));
        want.truncate(20);
        let names: Vec<&str> = listed.iter().map(|r| r["route"].as_str().unwrap()).collect();
        assert_eq!(names, want.iter().map(|w| w.0.as_str()).collect::<Vec<_>>(), "{label} routes");
    }
    for r in listed {
        let name = r["route"].as_str().unwrap();
        if name == "(other)" {
            continue;
        }
        let rs = &by[name];
        let n = r["count"].as_u64().unwrap();
        if folded {
            assert!(n <= rs.len() as u64, "{label} {name}: {n} of {}", rs.len());
            continue;
        }
        assert_eq!(n, rs.len() as u64, "{label} {name} count");
        same(&r["bufferedRate"], &share(rs, "buffered"), &format!("{name} bufferedRate"));
        same(&r["upstreamBufferedRate"], &share(rs, "upstreamBuffered"), &format!("{name} upstreamBufferedRate"));
    }
}

/// The per-model table: every model's count exact, its percentiles within the sketch error,
/// its rates exact; busiest first (then by name).
fn check_models(s: &Value, sel: &Sel, label: &str) {
    let mut by: std::collections::BTreeMap<String, Vec<&Value>> = Default::default();
    for r in sel {
        by.entry(r["model"].as_str().unwrap().to_string()).or_default().push(r);
    }
    let listed = s["models"].as_array().unwrap_or_else(|| panic!("{label}: {s}"));
    if listed.iter().any(|r| r["model"] == "(other)") {
        return; // a period folded its keys (the test of folding checks the filters)
    }
    let mut want: Vec<(&String, &Vec<&Value>)> = by.iter().collect();
    want.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(b.0)));
    let names: Vec<&str> = listed.iter().map(|r| r["model"].as_str().unwrap()).collect();
    assert_eq!(names, want.iter().map(|w| w.0.as_str()).collect::<Vec<_>>(), "{label} models");
    for r in listed {
        let name = r["model"].as_str().unwrap();
        let rs = &by[name];
        assert_eq!(r["count"].as_u64(), Some(rs.len() as u64), "{label} {name} count");
        for m in ["ttft", "perceivedTtft"] {
            let v: Vec<f64> = rs.iter().filter_map(|x| x[m].as_f64()).collect();
            for (k, q) in [("p50", 0.5), ("p95", 0.95)] {
                within(&r[m][k], exact(v.clone(), q), &format!("{label} {name} {m} {k}"));
            }
        }
        let stalled = rs.iter().filter(|x| x["stalls"]["count"].as_i64() > Some(0)).count() as f64;
        let got = r["stallRate"].as_f64().unwrap();
        assert!((got - stalled / rs.len() as f64).abs() < 1e-12, "{label} {name} stallRate {got}");
        let up: Vec<bool> = rs.iter().filter_map(|x| x["upstreamBuffered"].as_bool()).collect();
        let got = &r["upstreamBufferedRate"];
        if up.is_empty() {
            assert!(got.is_null(), "{label} {name} upstreamBufferedRate {got} of no records saying");
        } else {
            let want = up.iter().filter(|b| **b).count() as f64 / up.len() as f64;
            let got = got.as_f64().unwrap();
            assert!((got - want).abs() < 1e-12, "{label} {name} upstreamBufferedRate {got} vs {want}");
        }
    }
}

fn start_of(r: &Value) -> f64 {
    r["startEpochMs"].as_f64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_from_rollups_are_within_the_sketch_error_of_exact() {
    let dir = TempDir::new("rollups");
    let db = dir.db();
    let run = llm_rum_collector::start(config(&db)).await.expect("start");
    let addr = run.addr;
    let mut rng = Rng(0x5eed);
    let now = now_ms();
    let t0 = ((now - 3.0 * DAY) / DAY).floor() * DAY + 0.37 * HOUR; // three days back, mid-hour
    let span = now - 20.0 * MIN - t0;
    // Phase 1: 12 000 records over three days, 2 % partial.
    let mut recs: Vec<Value> = (0..12_000)
        .map(|i| {
            let outcome = match i % 50 {
                0 => "partial",
                1..=3 => "error",
                4 => "aborted",
                _ => "ok",
            };
            let start = t0 + rng.unit() * span;
            rec(&mut rng, &format!("r{i}"), start, outcome)
        })
        .collect();
    store(&run, &recs).await;
    compacted(&db).await;
    // Phase 2, into compacted hours and days: late records; the partials' completed versions
    // (taken out of every level's rows, then added); a retried beacon (nothing changes).
    let late: Vec<Value> = (0..2_000)
        .map(|i| {
            let start = t0 + rng.unit() * span;
            rec(&mut rng, &format!("late{i}"), start, "ok")
        })
        .collect();
    store(&run, &late).await;
    let mut completed = Vec::new();
    for r in recs.iter_mut().filter(|r| r["outcome"] == "partial") {
        let mut c = rec(&mut rng, r["id"].as_str().unwrap(), start_of(r), "ok");
        c["ttft"] = json!(5000.0 + rng.unit() * 100.0); // far from the partial's value
        *r = c.clone();
        completed.push(c);
    }
    store(&run, &completed).await;
    store(&run, &late[..100]).await;
    recs.extend(late);
    let all: Sel = recs.iter().collect();

    let windows: Vec<(Option<f64>, Option<f64>, &str)> = vec![
        (None, None, "everything"),
        (Some(t0 + 7.0 * HOUR + 13.0 * MIN + 17_500.0), Some(t0 + 2.0 * DAY + 2.0 * HOUR + 63_250.5), "odd window across days"),
        (Some(((t0 + DAY) / HOUR).ceil() * HOUR + 5.0 * MIN), Some(((t0 + DAY) / HOUR).ceil() * HOUR + 3.0 * HOUR), "whole minutes"),
        (Some(t0 + DAY + 10_000.0), Some(t0 + DAY + 50_000.0), "inside a minute"),
        (Some(now - 400.0 * MIN), None, "open end"),
    ];
    for (from, to, label) in &windows {
        let in_w = |r: &&Value| from.is_none_or(|f| start_of(r) >= f) && to.is_none_or(|t| start_of(r) < t);
        let mut q = String::new();
        if let Some(f) = from {
            q += &format!("&from={f}");
        }
        if let Some(t) = to {
            q += &format!("&to={t}");
        }
        let sel: Sel = all.iter().copied().filter(in_w).collect();
        let s = get(addr, &format!("/api/summary?{q}")).await.json();
        check_summary(&s, &sel, label);
        // Filters: route, model, outcome, and two at once.
        for (fq, f) in [
            ("route=/v1/chat/:id", &(|r: &&Value| r["url"].as_str().unwrap().contains("/v1/chat/")) as &dyn Fn(&&Value) -> bool),
            ("model=m2", &|r: &&Value| r["model"] == "m2"),
            ("outcome=error", &|r: &&Value| r["outcome"] == "error"),
            ("route=/v1/a&model=m1", &|r: &&Value| r["url"].as_str().unwrap().contains("/v1/a?") && r["model"] == "m1"),
            // Not a rollup key: read from the raw records, the same answers.
            ("provider=anthropic", &|r: &&Value| r["provider"] == "anthropic"),
            ("provider=openai&model=m3", &|r: &&Value| r["provider"] == "openai" && r["model"] == "m3"),
        ] {
            let sub: Sel = sel.iter().copied().filter(|r| f(r)).collect();
            let s = get(addr, &format!("/api/summary?{fq}{q}")).await.json();
            check_summary(&s, &sub, &format!("{label}, {fq}"));
        }
        // Timeseries: rollup-sized buckets (minute, hour) and a bucket that is not whole minutes.
        for bucket in [60.0, 3600.0, 90.0] {
            let ts = get(addr, &format!("/api/timeseries?metric=ttft&q=0.95&bucket={bucket}{q}")).await.json();
            let pts = ts["points"].as_array().unwrap_or_else(|| panic!("{ts}"));
            let b = bucket * 1000.0;
            let mut expected = std::collections::BTreeMap::<i64, Vec<f64>>::new();
            for r in &sel {
                expected.entry((start_of(r) / b).floor() as i64).or_default().push(r["ttft"].as_f64().unwrap());
            }
            assert_eq!(pts.len(), expected.len(), "{label} bucket {bucket}");
            for (p, (k, v)) in pts.iter().zip(expected) {
                assert_eq!(p["t"].as_f64(), Some(k as f64 * b));
                assert_eq!(p["n"].as_u64(), Some(v.len() as u64), "{label} bucket {bucket} at {k}");
                within(&p["value"], exact(v, 0.95), &format!("{label} bucket {bucket} at {k}"));
            }
        }
        // Histogram: every value counted once.
        let h = get(addr, &format!("/api/histogram?metrics=ttft,total&bins=40{q}")).await.json();
        let counted: u64 = h["series"][0]["counts"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).sum();
        assert_eq!(counted, sel.len() as u64, "{label} histogram");
    }
    // The hours and days phase 2 touched, rebuilt: the same answers from the rebuilt rows.
    compacted(&db).await;
    check_summary(&get(addr, "/api/summary").await.json(), &all, "everything, recompacted");
    let (f, t) = (windows[1].0.unwrap(), windows[1].1.unwrap());
    let sel: Sel = all.iter().copied().filter(|r| start_of(r) >= f && start_of(r) < t).collect();
    check_summary(&get(addr, &format!("/api/summary?from={f}&to={t}")).await.json(), &sel, "odd window, recompacted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_keys_than_a_period_keeps_fold_and_filters_stay_exact() {
    let dir = TempDir::new("overflow-keys");
    let db = dir.db();
    let run = llm_rum_collector::start(config(&db)).await.expect("start");
    let mut rng = Rng(77);
    // 300 routes in one minute two hours ago (past the 256 keys a period keeps), twice each.
    let minute = ((now_ms() - 2.0 * HOUR) / MIN).floor() * MIN;
    let recs: Vec<Value> = (0..600)
        .map(|i| {
            let mut r = rec(&mut rng, &format!("k{i}"), minute + (i as f64) * 50.0, "ok");
            r["url"] = json!(format!("https://h/r/{}", i % 300));
            r["model"] = json!("m1");
            r
        })
        .collect();
    store(&run, &recs).await;
    compacted(&db).await;
    let c = rusqlite::Connection::open(&db).unwrap();
    let (keys, overflowed): (i64, i64) = c
        .query_row(
            "SELECT (SELECT COUNT(*) FROM rollups WHERE level = 0 AND period = ?1), \
                    (SELECT COUNT(*) FROM rollup_overflow WHERE level IN (0, 1))",
            [(minute / MIN) as i64],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((keys, overflowed), (257, 2), "256 keys and the folded one; minute and hour marked");
    let all: Sel = recs.iter().collect();
    let s = get(run.addr, "/api/summary").await.json();
    check_summary(&s, &all, "unfiltered");
    // The per-route buffering table names the folded routes `(other)`: the busiest key here.
    assert_eq!(s["routes"][0]["route"], "(other)", "{}", s["routes"]);
    assert!(s["routes"][0]["count"].as_u64().unwrap() >= 88, "{}", s["routes"][0]);
    // A window ending inside the minute, after its last record: read from the minute's row
    // (nothing else in the minute), or, filtered by a folded route, from the records.
    let part = format!("from={minute}&to={}", minute + 45_000.0);
    check_summary(&get(run.addr, &format!("/api/summary?{part}")).await.json(), &all, "part of the minute");
    let r299: Sel = all.iter().copied().filter(|x| x["url"].as_str().unwrap().ends_with("/r/299")).collect();
    check_summary(&get(run.addr, &format!("/api/summary?{part}&route=/r/299")).await.json(), &r299, "part, folded route");
    for r in ["/r/0", "/r/255", "/r/299"] {
        let sel: Sel = all.iter().copied().filter(|x| x["url"].as_str().unwrap().ends_with(r)).collect();
        assert_eq!(sel.len(), 2);
        check_summary(&get(run.addr, &format!("/api/summary?route={r}")).await.json(), &sel, r);
        let ts = get(run.addr, &format!("/api/timeseries?metric=ttft&bucket=3600&route={r}")).await.json();
        assert_eq!(ts["points"][0]["n"].as_u64(), Some(2), "{r}: {ts}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_from_before_rollups_gets_them_built() {
    let dir = TempDir::new("backfill");
    let db = dir.db();
    let mut rng = Rng(9);
    let t0 = now_ms() - 30.0 * HOUR;
    let recs: Vec<Value> = (0..3_000)
        .map(|i| {
            let start = t0 + rng.unit() * 29.0 * HOUR;
            rec(&mut rng, &format!("b{i}"), start, if i % 9 == 0 { "error" } else { "ok" })
        })
        .collect();
    {
        let run = llm_rum_collector::start(config(&db)).await.expect("start");
        store(&run, &recs).await;
    }
    // The same records in a copy taken back to schema 1 (no rollups).
    let old = dir.0.join("old.db");
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(&format!("VACUUM INTO '{}'", old.display())).unwrap();
        let o = rusqlite::Connection::open(&old).unwrap();
        o.execute_batch(
            "DROP TABLE rollups; DROP TABLE rollup_overflow; DROP TABLE rollup_dirty; DROP TABLE rollup_delta; DROP TABLE beacon_rollups; \
             ALTER TABLE records DROP COLUMN upstream_buffered; \
             DROP INDEX records_provider; ALTER TABLE records DROP COLUMN provider; ALTER TABLE records DROP COLUMN model_source; \
             PRAGMA user_version = 1;",
        )
        .unwrap();
    }
    let run = llm_rum_collector::start(config(&old)).await.expect("migrated");
    let c = rusqlite::Connection::open(&old).unwrap();
    let v: i64 = c.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(v, llm_rum_collector::store::sqlite::schema::VERSION);
    // A collector of schema 1 never stored `upstreamBuffered`: after the migrations, none.
    let recs: Vec<Value> = recs
        .into_iter()
        .map(|mut r| {
            r["upstreamBuffered"] = Value::Null;
            r
        })
        .collect();
    let all: Sel = recs.iter().collect();
    check_summary(&get(run.addr, "/api/summary").await.json(), &all, "backfilled");
    compacted(&old).await;
    check_summary(&get(run.addr, "/api/summary").await.json(), &all, "backfilled, compacted");
    let from = t0 + 3.5 * HOUR + 1234.0;
    let sel: Sel = all.iter().copied().filter(|r| start_of(r) >= from).collect();
    check_summary(&get(run.addr, &format!("/api/summary?from={from}")).await.json(), &sel, "window");
}
