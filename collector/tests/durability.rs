//! "A 2xx means stored": the real binary on port 0 with a temp DB takes concurrent beacons,
//! is SIGKILLed mid-load, and restarted on the same DB: every acknowledged record is there.

mod common;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use llm_rum_collector_testkit::client::Conn;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_loses_no_acknowledged_record() {
    let dir = TempDir::new("kill9");
    let db = dir.db();
    let db_s = db.to_str().unwrap().to_string();
    let mut first = Proc::spawn(&["--db", &db_s, "--rate-limit", "0"]);
    let addr = first.addr;
    let acked: Arc<Mutex<HashSet<String>>> = Arc::default();
    let mut tasks = Vec::new();
    for c in 0..8 {
        let acked = acked.clone();
        tasks.push(tokio::spawn(async move {
            let Ok(mut conn) = Conn::connect(addr).await else {
                return;
            };
            // Bounded: at most 2 000 beacons per client even if the kill came late.
            for b in 0..2_000 {
                let ids: Vec<String> = (0..10).map(|r| format!("c{c}-b{b}-r{r}")).collect();
                let body =
                    beacon(ids.iter().map(|id| record(id, now_ms(), 100.0)).collect()).to_string();
                match conn
                    .request(
                        "POST",
                        "/v1/rum",
                        &[("content-type", "text/plain;charset=UTF-8")],
                        body.as_bytes(),
                    )
                    .await
                {
                    Ok(r) if r.status == 200 => acked.lock().unwrap().extend(ids),
                    _ => return, // the collector is gone
                }
            }
        }));
    }
    // Kill once a good number of beacons have been acknowledged (load is in full swing).
    let t = Instant::now();
    while acked.lock().unwrap().len() < 3_000 && t.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    first.kill9();
    for t in tasks {
        let _ = tokio::time::timeout(Duration::from_secs(10), t).await;
    }
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.len() >= 1_000,
        "load ran before the kill ({} acked)",
        acked.len()
    );

    // Restart on the same file: it opens (WAL recovery) and serves what was acknowledged.
    let second = Proc::spawn(&["--db", &db_s]);
    let summary = client_get(second.addr, "/api/summary").await;
    let served = summary["count"].as_u64().unwrap() as usize;
    let c = rusqlite::Connection::open(&db).unwrap();
    let mut st = c.prepare("SELECT id FROM records").unwrap();
    let stored: HashSet<String> = st
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let missing: Vec<_> = acked.difference(&stored).take(5).collect();
    assert!(
        missing.is_empty(),
        "{} acknowledged records lost, e.g. {missing:?}",
        acked.len() - acked.intersection(&stored).count()
    );
    assert_eq!(served, stored.len());
    // Whole beacons only: a beacon is committed in one transaction, never half.
    let mut per_beacon = std::collections::HashMap::<String, usize>::new();
    for id in &stored {
        *per_beacon
            .entry(id.rsplit_once("-r").unwrap().0.to_string())
            .or_default() += 1;
    }
    assert!(
        per_beacon.values().all(|n| *n == 10),
        "a beacon was stored partially"
    );
    drop(second);
}

async fn client_get(addr: std::net::SocketAddr, path: &str) -> serde_json::Value {
    get(addr, path).await.json()
}
