//! `llm-rum-loadgen`: the collector's load test (a benchmark command, not a test).
//!
//! Starts the real `llm-rum-collector` binary (next to this one) on 127.0.0.1:0 with a fresh
//! database, runs N concurrent keep-alive clients posting v1 beacons of 10 records each for D
//! seconds, then stops the collector (by its PID), counts the rows in the SQLite file and checks
//! records stored == records acknowledged. Prints sustained records/s and ingest latency
//! percentiles. Bounded: loopback only, at most `--seconds` of load (≤ 120).
//!
//!   cargo build --release -p llm-rum-collector
//!   target/release/llm-rum-loadgen --clients 32 --seconds 10

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use llm_rum_collector::client::Conn;
use serde_json::json;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |name: &str, default: &str| -> String {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
            .unwrap_or_else(|| default.to_string())
    };
    if args.iter().any(|a| a == "--help") {
        println!(
            "llm-rum-loadgen [--clients 32] [--seconds 10] [--records 10] [--sync full|normal]"
        );
        return;
    }
    let clients: usize = arg("--clients", "32").parse().expect("--clients");
    let seconds: f64 = arg("--seconds", "10")
        .parse::<f64>()
        .expect("--seconds")
        .clamp(0.5, 120.0);
    let per_beacon: usize = arg("--records", "10").parse().expect("--records");
    let sync = arg("--sync", "full");

    let dir = std::env::temp_dir().join(format!("llm-rum-loadgen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let db = dir.join("load.db");
    let bin = std::env::current_exe()
        .expect("exe")
        .with_file_name("llm-rum-collector");
    let mut child = Command::new(&bin)
        .args([
            "--listen",
            "127.0.0.1:0",
            "--rate-limit",
            "0",
            "--sync",
            &sync,
            "--db",
        ])
        .arg(&db)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("start {}: {e} (build it first)", bin.display()));
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .expect("read address");
    let addr: std::net::SocketAddr = line
        .trim()
        .trim_start_matches("listening on http://")
        .parse()
        .expect("address line");

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (acked, beacons, mut lat, errors, elapsed) = rt.block_on(async move {
        let stop = Arc::new(AtomicBool::new(false));
        let t0 = Instant::now();
        let mut tasks = Vec::new();
        for c in 0..clients {
            let stop = stop.clone();
            tasks.push(tokio::spawn(async move {
                let mut conn = Conn::connect(addr).await.expect("connect");
                let (mut acked, mut beacons, mut errors, mut lat) = (0u64, 0u64, 0u64, Vec::new());
                let mut b = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as f64;
                    let recs: Vec<_> = (0..per_beacon).map(|r| record(&format!("c{c}-{b}-{r}"), now)).collect();
                    b += 1;
                    let body = json!({"v": 1, "sdk": "llm-rum/loadgen", "session": format!("c{c}"), "page": "/load", "records": recs}).to_string();
                    let t = Instant::now();
                    match conn.request("POST", "/v1/rum", &[("content-type", "text/plain;charset=UTF-8")], body.as_bytes()).await {
                        Ok(r) if r.status == 200 => {
                            lat.push(t.elapsed().as_secs_f64() * 1000.0);
                            acked += r.json()["stored"].as_u64().unwrap_or(0);
                            beacons += 1;
                        }
                        _ => errors += 1,
                    }
                }
                (acked, beacons, errors, lat)
            }));
        }
        tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
        stop.store(true, Ordering::Relaxed);
        let (mut acked, mut beacons, mut errors, mut lat) = (0, 0, 0, Vec::new());
        for t in tasks {
            let (a, b, e, l) = t.await.unwrap();
            acked += a;
            beacons += b;
            errors += e;
            lat.extend(l);
        }
        (acked, beacons, lat, errors, t0.elapsed().as_secs_f64())
    });
    let _ = child.kill();
    let _ = child.wait();
    let stored: u64 = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("SELECT COUNT(*) FROM records", [], |r| r.get(0))
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);

    lat.sort_by(f64::total_cmp);
    let p = |q: f64| llm_rum_collector::query::percentile(&lat, q).unwrap_or(f64::NAN);
    println!("clients {clients}, {per_beacon} records/beacon, {elapsed:.1} s, sync {sync}");
    println!(
        "beacons acknowledged {beacons} ({:.0}/s), errors {errors}",
        beacons as f64 / elapsed
    );
    println!(
        "records acknowledged {acked} → {:.0} records/s sustained",
        acked as f64 / elapsed
    );
    println!(
        "ingest latency ms: p50 {:.2}  p95 {:.2}  p99 {:.2}  max {:.2}",
        p(0.5),
        p(0.95),
        p(0.99),
        p(1.0)
    );
    println!(
        "records stored {stored} == acknowledged {acked}: {}",
        if stored == acked { "OK" } else { "MISMATCH" }
    );
    if stored != acked {
        std::process::exit(1);
    }
}

fn record(id: &str, start: f64) -> serde_json::Value {
    json!({
        "id": id, "traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331", "traceSource": "propagated",
        "sampled": true, "url": "https://api.example.com/v1/chat/completions", "method": "POST", "status": 200,
        "outcome": "ok", "format": "openai-chat", "understood": true, "complete": true, "startEpochMs": start,
        "marks": {"interaction": -40, "start": 0, "headers": 80, "firstByte": 81, "firstReasoning": null, "firstToken": 210,
                  "firstPaint": 226, "lastToken": 1900, "lastPaint": 1916, "end": 1901},
        "ttft": 210, "ttfp": 226, "perceivedTtft": 266, "total": 1900, "perceivedTotal": 1956,
        "renderDelay": {"first": 16, "p50": 8, "p95": 16, "max": 20}, "itl": {"n": 99, "p50": 15, "p95": 40, "p99": 60, "max": 300},
        "tpot": 17, "stalls": {"count": 1, "totalMs": 300, "longestMs": 300, "network": 1, "render": 0}, "buffered": false,
        "outputTokens": 100, "outputTokensSource": "usage", "chars": 400, "reasoningChars": 0, "contentEvents": 100,
        "chunks": 100, "bytes": 17000,
        "serverTiming": [{"name": "queue", "dur": 12, "desc": null}, {"name": "prefill", "dur": 90, "desc": null}],
        "ttftSplit": {"server": 102, "network": 108}, "correlation": {"x-request-id": id},
        "stallList": [{"start": 900, "dur": 300, "cause": "network"}], "budgetBreaches": [], "hidden": false, "userMarks": {}
    })
}
