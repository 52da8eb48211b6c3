//! Budgets end to end: the real binary with a 2 s window and 1.5 s sustain. A breach fires
//! only after it has lasted the sustain period, names the stage that grew, and clears after
//! recovery. A budget on one model watches that model's answers only.

mod common;

use std::time::{Duration, Instant};

use common::*;
use llm_rum_collector_testkit::client::Conn;
use serde_json::Value;

async fn send(conn: &mut Conn, id: &str, ttft: f64) {
    send_model(conn, id, ttft, "gpt-4o-2024-08-06").await
}

async fn send_model(conn: &mut Conn, id: &str, ttft: f64, model: &str) {
    let mut r = record(id, now_ms(), ttft);
    r["model"] = serde_json::json!(model);
    let body = beacon(vec![r]).to_string();
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
        "--budget",
        "ttft p95<=300 model=fast-model",
        "--budget",
        "ttft p95<=300 model=gpt-4o-2024-08-06",
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
        // Slow answers from one model, fast ones from another, interleaved (two to one: the
        // stage medians of all answers show the slow model's).
        send(&mut conn, &id(), 900.0).await;
        send(&mut conn, &id(), 900.0).await;
        send_model(&mut conn, &id(), 100.0, "fast-model").await;
        let a = alerts(&mut conn).await;
        if a["firing"].as_u64() == Some(2) {
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
    // Every answer's budget and the slow model's fired; the fast model's stays quiet.
    let mut names: Vec<&str> = fired["alerts"].as_array().unwrap().iter().map(|a| a["budget"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["ttft p95<=300", "ttft p95<=300 model=gpt-4o-2024-08-06"], "{fired}");
    let fast = fired["budgets"].as_array().unwrap().iter().find(|b| b["budget"] == "ttft p95<=300 model=fast-model").unwrap();
    assert!(fast["current"].as_f64().unwrap() <= 300.0, "{fast}");
    let alert = fired["alerts"].as_array().unwrap().iter().find(|a| a["budget"] == "ttft p95<=300").unwrap();
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
        send_model(&mut conn, &id(), 100.0, "fast-model").await;
        let a = alerts(&mut conn).await;
        if a["firing"].as_u64() == Some(0) {
            break a;
        }
        assert!(Instant::now() < deadline, "the alert never cleared: {a}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let all = resolved["alerts"].as_array().unwrap();
    assert_eq!(all.len(), 2, "{resolved}");
    for alert in all {
        assert_eq!(alert["state"], "resolved");
        assert!(alert["resolvedAtMs"].as_f64().unwrap() > alert["firedAtMs"].as_f64().unwrap());
    }
    drop(p);
}
