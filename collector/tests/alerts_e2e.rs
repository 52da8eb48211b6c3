//! Budgets end to end: the real binary with a 2 s window and 1.5 s sustain. A breach fires
//! only after it has lasted the sustain period, names the stage that grew, and clears after
//! recovery.

mod common;

use std::time::{Duration, Instant};

use common::*;
use llm_rum_collector::client::Conn;
use serde_json::Value;

async fn send(conn: &mut Conn, id: &str, ttft: f64) {
    let body = beacon(vec![record(id, now_ms(), ttft)]).to_string();
    let r = conn
        .request("POST", "/v1/rum", &[], body.as_bytes())
        .await
        .expect("post");
    assert_eq!(r.status, 200);
}

async fn alerts(conn: &mut Conn) -> Value {
    conn.request("GET", "/api/alerts", &[], b"")
        .await
        .expect("alerts")
        .json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alert_fires_after_sustain_and_clears_after_recovery() {
    let dir = TempDir::new("alerts");
    let db = dir.db();
    let p = Proc::spawn(&[
        "--db",
        db.to_str().unwrap(),
        "--budget",
        "ttft p95<=300",
        "--alert-window",
        "2",
        "--sustain",
        "1.5",
        "--eval-interval",
        "100",
        "--rate-limit",
        "0",
    ]);
    let mut conn = Conn::connect(p.addr).await.unwrap();
    let mut n = 0;
    let mut id = || {
        n += 1;
        format!("a{n}")
    };
    // Healthy baseline (prefill = ttft − 40 in these records).
    for _ in 0..10 {
        send(&mut conn, &id(), 100.0).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Slow: prefill grows from 60 to 860 ms.
    let slow_from = Instant::now();
    let deadline = slow_from + Duration::from_secs(15);
    let fired = loop {
        send(&mut conn, &id(), 900.0).await;
        let a = alerts(&mut conn).await;
        if a["firing"].as_u64() == Some(1) {
            break a;
        }
        // Not before the sustain period: the breach cannot have started before the first slow
        // record, so anything firing earlier than 1.5 s after it is wrong.
        assert!(Instant::now() < deadline, "the alert never fired: {a}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        slow_from.elapsed() >= Duration::from_millis(1500),
        "fired after {:?}, before the sustain period",
        slow_from.elapsed()
    );
    let alert = &fired["alerts"][0];
    assert_eq!(alert["state"], "firing");
    assert!(
        alert["firedAtMs"].as_f64().unwrap() - alert["breachSinceMs"].as_f64().unwrap() >= 1500.0
    );
    assert!(alert["value"].as_f64().unwrap() > 300.0);
    assert_eq!(alert["grewMost"]["stage"], "server:prefill", "{alert}");
    assert_eq!(fired["budgets"][0]["budget"], "ttft p95<=300");

    // Recovery: healthy traffic until the slow records leave the 2 s window.
    let deadline = Instant::now() + Duration::from_secs(15);
    let resolved = loop {
        send(&mut conn, &id(), 100.0).await;
        let a = alerts(&mut conn).await;
        if a["firing"].as_u64() == Some(0) {
            break a;
        }
        assert!(Instant::now() < deadline, "the alert never cleared: {a}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let alert = &resolved["alerts"][0];
    assert_eq!(alert["state"], "resolved");
    assert!(alert["resolvedAtMs"].as_f64().unwrap() > alert["firedAtMs"].as_f64().unwrap());
    assert_eq!(resolved["alerts"].as_array().unwrap().len(), 1);
    drop(p);
}
