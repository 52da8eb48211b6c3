//! Shared test helpers: temp dirs, beacon builders, an in-process collector, and the real
//! binary as a child process that is always killed (by PID) and reaped.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use llm_rum_collector::cli::Config;
use llm_rum_collector_testkit::client::{self, Resp};
use serde_json::{json, Value};

pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let p = std::env::temp_dir().join(format!(
            "llm-rum-collector-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub fn db(&self) -> PathBuf {
        self.0.join("rum.db")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn now_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as f64
}

/// A start time the collector accepts: a minute ago.
pub fn recent() -> f64 {
    now_ms() - 60_000.0
}

/// A record shaped like the SDK's (js/index.d.ts), with the given id, start and ttft.
pub fn record(id: &str, start: f64, ttft: f64) -> Value {
    json!({
        "id": id, "traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331",
        "traceSource": "propagated", "sampled": true,
        "url": "http://127.0.0.1:8080/v1/chat/completions", "method": "POST", "status": 200,
        "outcome": "ok", "format": "openai-chat", "understood": true, "complete": true,
        "startEpochMs": start,
        "marks": {"interaction": null, "start": 0, "headers": 20, "firstByte": 21, "firstReasoning": null,
                  "firstToken": ttft, "firstPaint": ttft + 16.0, "lastToken": ttft + 500.0, "lastPaint": ttft + 516.0, "end": ttft + 501.0},
        "ttft": ttft, "ttfp": ttft + 16.0, "perceivedTtft": ttft + 16.0, "total": ttft + 500.0, "perceivedTotal": ttft + 516.0,
        "renderDelay": {"first": 16, "p50": 8, "p95": 16, "max": 20},
        "itl": {"n": 49, "p50": 10, "p95": 25, "p99": 40, "max": 60, "buckets": [25, 20, 3, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]},
        "model": "gpt-4o-2024-08-06", "modelSource": "stream", "provider": "openai",
        "tpot": 10, "stalls": {"count": 0, "totalMs": 0, "longestMs": 0, "network": 0, "render": 0},
        "buffered": false, "outputTokens": 50, "outputTokensSource": "usage", "chars": 200,
        "reasoningChars": 0, "contentEvents": 50, "chunks": 50, "bytes": 9000,
        "serverTiming": [{"name": "queue", "dur": 5, "desc": null}, {"name": "prefill", "dur": (ttft - 40.0).max(0.0), "desc": null}],
        "ttftSplit": {"server": ttft - 35.0, "network": 35}, "correlation": {"x-request-id": id},
        "stallList": [], "budgetBreaches": [], "hidden": false, "userMarks": {}
    })
}

pub fn beacon(records: Vec<Value>) -> Value {
    json!({"v": 1, "sdk": "llm-rum/0.1.0", "session": "s1", "page": "/chat", "records": records})
}

pub fn config(db: &Path) -> Config {
    Config {
        listen: "127.0.0.1:0".into(),
        db: db.to_path_buf(),
        rate_limit: 0,
        ..Config::default()
    }
}

pub async fn post(addr: SocketAddr, body: &[u8], headers: &[(&str, &str)]) -> Resp {
    let mut h = vec![("content-type", "text/plain;charset=UTF-8")];
    h.extend_from_slice(headers);
    client::request(addr, "POST", "/v1/rum", &h, body)
        .await
        .expect("post")
}

pub async fn get(addr: SocketAddr, path: &str) -> Resp {
    client::request(addr, "GET", path, &[], b"")
        .await
        .expect("get")
}

/// Rows in the records table, read straight from the SQLite file.
pub fn stored_count(db: &Path) -> i64 {
    let c = rusqlite::Connection::open(db).unwrap();
    c.query_row("SELECT COUNT(*) FROM records", [], |r| r.get(0))
        .unwrap()
}

/// The real `llm-rum-collector` binary's command line, listening on an ephemeral loopback port.
/// Logs at warn unless RUST_LOG says otherwise (test output stays readable).
pub fn collector_cmd(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_llm-rum-collector"));
    c.args(["--listen", "127.0.0.1:0"]).args(args);
    if std::env::var_os("RUST_LOG").is_none() {
        c.env("RUST_LOG", "warn");
    }
    c
}

/// The binary under a lower open-file limit (soft and hard: it cannot raise it back).
pub fn collector_cmd_with_nofile(limit: u32, args: &[&str]) -> Command {
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(format!("ulimit -n {limit} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_llm-rum-collector"))
        .args(["--listen", "127.0.0.1:0"])
        .args(args);
    if std::env::var_os("RUST_LOG").is_none() {
        c.env("RUST_LOG", "warn");
    }
    c
}

/// Lines the child wrote to stderr (collected by a thread).
#[derive(Clone, Default)]
pub struct Logs(pub std::sync::Arc<std::sync::Mutex<String>>);

impl Logs {
    pub fn text(&self) -> String {
        self.0.lock().unwrap().clone()
    }
    /// Waits (bounded) for a line containing `needle`.
    pub fn wait_for(&self, needle: &str, within: Duration) -> bool {
        let t = std::time::Instant::now();
        while t.elapsed() < within {
            if self.text().contains(needle) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }
}

/// The real `llm-rum-collector` binary; killed with SIGKILL and reaped on drop.
pub struct Proc {
    pub child: Child,
    pub addr: SocketAddr,
}

impl Proc {
    pub fn spawn(args: &[&str]) -> Proc {
        let mut c = collector_cmd(args);
        c.stderr(Stdio::inherit());
        Proc::start(c)
    }

    /// Started with stderr captured into `Logs` (at info level).
    pub fn spawn_logged(mut c: Command) -> (Proc, Logs) {
        c.env("RUST_LOG", "info").stderr(Stdio::piped());
        let mut p = Proc::start(c);
        let logs = Logs::default();
        let err = p.child.stderr.take().unwrap();
        let l = logs.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let mut t = l.0.lock().unwrap();
                t.push_str(&line);
                t.push('\n');
            }
        });
        (p, logs)
    }

    /// Starts `c` (stdin null, stdout piped for the address line; stderr as the caller set it).
    pub fn start(mut c: Command) -> Proc {
        let mut child = c
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn collector");
        let stdout = child.stdout.take().unwrap();
        // Read the address line on a thread so a silent child cannot hang the test.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(l) => l,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("collector did not print its address");
            }
        };
        let addr = line
            .trim()
            .strip_prefix("listening on http://")
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| {
                let _ = child.kill();
                let _ = child.wait();
                panic!("unexpected first line {line:?}")
            });
        Proc { child, addr }
    }

    /// SIGKILL (Child::kill on Unix), by this child's PID only, then reap it.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill9();
    }
}
pub mod clickhouse;
