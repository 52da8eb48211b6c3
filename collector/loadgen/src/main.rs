//! `llm-rum-loadgen`: the collector's benchmarks (figures, not pass/fail tests).
//!
//! Throughput (default): starts the real `llm-rum-collector` binary (next to this one, or
//! `--collector PATH`) on 127.0.0.1:0 with a fresh database, runs N concurrent keep-alive
//! clients posting v1 beacons of 10 records each for D seconds, then stops the collector (by its
//! PID), counts the rows in the SQLite file and checks records stored == records acknowledged.
//! Prints sustained records/s and ingest latency percentiles. Bounded: loopback only, at most
//! `--seconds` of load (≤ 120).
//!
//! `--park N`: memory under N connections parked mid-body (headers and `--park-body` bytes of
//! a 64 KiB body sent, then silence): the collector's RSS before and after, how many it still
//! holds, whether a normal client is served meanwhile, and how many remain after `--wait` s.
//! `--collector-args` passes flags through (e.g. "--body-timeout 5").
//!
//! `--fill N` (`fill.rs`): the read benchmark — N records spread over `--window` seconds
//! through ingest, then every dashboard read timed.
//!
//! `--retention N`: N records received two days ago in a fresh database (no server), then
//! retention's delete batches until none is left: time per batch, and the vacuum step.
//!
//!   cargo build --release -p llm-rum-collector -p llm-rum-loadgen
//!   target/release/llm-rum-loadgen --clients 32 --seconds 10
//!   target/release/llm-rum-loadgen --park 3000
//!   target/release/llm-rum-loadgen --retention 100000
//!   target/release/llm-rum-loadgen --fill 1000000 --window 3600
//!   target/release/llm-rum-loadgen --fill 1000000 --collector-args "--store clickhouse://127.0.0.1:8123/bench"
//!
//! With `--collector-args "--store clickhouse://…"` the collector stores into ClickHouse; counts
//! and sizes are then read from ClickHouse (`--exact` compares the summary's percentiles with
//! exact ones computed by ClickHouse itself). `--bulk` (with `--fill`) inserts the records
//! straight into ClickHouse instead of through HTTP ingest (`fill::bulk`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use llm_rum_collector_testkit::client::Conn;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod fill;

struct Args(Vec<String>);

impl Args {
    fn get(&self, name: &str, default: &str) -> String {
        self.0
            .iter()
            .position(|a| a == name)
            .and_then(|i| self.0.get(i + 1))
            .cloned()
            .unwrap_or_else(|| default.to_string())
    }
    fn num<T: std::str::FromStr>(&self, name: &str, default: &str) -> T {
        self.get(name, default)
            .parse()
            .unwrap_or_else(|_| panic!("{name}: expected a number"))
    }
}

/// Starts the collector on 127.0.0.1:0 with `extra` flags; returns it and its address.
fn spawn_collector(a: &Args, db: &Path, extra: &[&str]) -> (Child, SocketAddr) {
    let default_bin = std::env::current_exe()
        .expect("exe")
        .with_file_name("llm-rum-collector");
    let bin = PathBuf::from(a.get("--collector", &default_bin.display().to_string()));
    let passthrough = a.get("--collector-args", "");
    let mut child = Command::new(&bin)
        .args(["--listen", "127.0.0.1:0", "--rate-limit", "0", "--db"])
        .arg(db)
        .args(extra)
        .args(passthrough.split_whitespace())
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
    let addr: SocketAddr = line
        .trim()
        .trim_start_matches("listening on http://")
        .parse()
        .expect("address line");
    (child, addr)
}

/// The ClickHouse store the collector was pointed at (`--collector-args "--store clickhouse://…"`),
/// if any: its HTTP address and database, for the counts and sizes printed.
struct Ch {
    addr: SocketAddr,
    db: String,
}

impl Ch {
    fn of(a: &Args) -> Option<Ch> {
        let args = a.get("--collector-args", "");
        let url = args.split_whitespace().find(|x| x.starts_with("clickhouse://"))?;
        let t = llm_rum_collector::store::clickhouse::http::Target::parse(url).expect("--store URL");
        let addr = t.base.trim_start_matches("http://").parse().expect("HOST:PORT as an IP address");
        Some(Ch { addr, db: t.database })
    }

    /// One statement, its answer's text (TSV).
    async fn query(&self, sql: &str) -> String {
        let r = llm_rum_collector_testkit::client::request(self.addr, "POST", "/", &[], format!("{sql} FORMAT TSV").as_bytes())
            .await
            .expect("clickhouse");
        assert_eq!(r.status, 200, "{sql}: {}", r.text());
        r.text()
    }

    /// Records stored (copies collapsed), and the table's bytes on disk / uncompressed.
    async fn sizes(&self) -> (u64, f64, f64) {
        let n = self.query(&format!("SELECT count() FROM {}.records FINAL", self.db)).await;
        let b = self
            .query(&format!(
                "SELECT sum(bytes_on_disk), sum(data_uncompressed_bytes) FROM system.parts \
                 WHERE database = '{}' AND table = 'records' AND active",
                self.db
            ))
            .await;
        let mut it = b.split_whitespace().map(|x| x.parse::<f64>().unwrap_or(f64::NAN));
        (n.trim().parse().unwrap_or(0), it.next().unwrap_or(f64::NAN), it.next().unwrap_or(f64::NAN))
    }
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("llm-rum-loadgen-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn main() {
    let a = Args(std::env::args().skip(1).collect());
    if a.0.iter().any(|x| x == "--help") {
        println!(
            "llm-rum-loadgen [--clients 32] [--seconds 10] [--records 10] [--sync full|normal]\n\
             llm-rum-loadgen --park N [--park-body 61440] [--wait 0]\n\
             llm-rum-loadgen --retention N [--batch 1000]\n\
             llm-rum-loadgen --fill N [--window 3600] [--clients 8] [--db PATH --keep] [--reads a,b] [--read-cap 600] [--runs 3]\n\
             llm-rum-loadgen --reads-only --db PATH [--window 3600] [...]\n\
             llm-rum-loadgen --fill N --bulk [--bulk-records 100000] --collector-args \"--store clickhouse://…\" (rows straight into ClickHouse)\n\
             common: [--collector PATH] [--collector-args \"--flag value ...\"]"
        );
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    if a.0.iter().any(|x| x == "--park") {
        rt.block_on(park(&a));
    } else if a.0.iter().any(|x| x == "--retention") {
        rt.block_on(retention(&a));
    } else if a.0.iter().any(|x| x == "--fill" || x == "--reads-only") {
        fill::run(&a, &rt);
    } else {
        throughput(&a, &rt);
    }
}

fn throughput(a: &Args, rt: &tokio::runtime::Runtime) {
    let clients: usize = a.num("--clients", "32");
    let seconds: f64 = a.num::<f64>("--seconds", "10").clamp(0.5, 120.0);
    let per_beacon: usize = a.num("--records", "10");
    let sync = a.get("--sync", "full");
    let dir = temp_dir("load");
    let db = dir.join("load.db");
    let (mut child, addr) = spawn_collector(a, &db, &["--sync", &sync]);

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
    let cpu = cpu_s(child.id());
    let _ = child.kill();
    let _ = child.wait();
    let stored: u64 = match Ch::of(a) {
        // Acknowledged means inserted or spooled: this run's spool must have been empty.
        Some(ch) => {
            let (n, disk, raw) = rt.block_on(ch.sizes());
            println!(
                "ClickHouse {}.records: {n} records, {:.0} bytes per record on disk ({:.0} uncompressed)",
                ch.db,
                disk / n.max(1) as f64,
                raw / n.max(1) as f64
            );
            n
        }
        None => rusqlite::Connection::open(&db)
            .unwrap()
            .query_row("SELECT COUNT(*) FROM records", [], |r| r.get(0))
            .unwrap(),
    };
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
        "collector CPU: {cpu:.1} s in all, {:.1} µs per record stored (load average {})",
        cpu / acked.max(1) as f64 * 1e6,
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim()
    );
    println!(
        "records stored {stored} == acknowledged {acked}: {}",
        if stored == acked { "OK" } else { "MISMATCH" }
    );
    if stored != acked {
        std::process::exit(1);
    }
}

/// CPU time (user + system) a process has used, seconds (Linux /proc): per record, a figure
/// that other work on a shared machine disturbs far less than records/s.
fn cpu_s(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return f64::NAN;
    };
    // Fields after the command name (which may hold spaces) start at its closing parenthesis.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = rest.split_whitespace().filter_map(|x| x.parse().ok()).collect();
    // utime and stime are fields 14 and 15 of stat (11 and 12 after the state letter).
    let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    match (f.get(10), f.get(11)) {
        (Some(u), Some(s)) => (u + s) / tick,
        _ => f64::NAN,
    }
}

/// Bytes a process has caused to be written to storage (Linux /proc/PID/io `write_bytes`).
fn written_bytes(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/io"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("write_bytes:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|b| b.parse::<f64>().ok())
        })
        .unwrap_or(f64::NAN)
}

/// Resident memory of a process, MiB (Linux /proc).
fn rss_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn now_ms() -> f64 {
    llm_rum_collector::ingest::clock::now_ms()
}

/// How many of `conns` the server has not closed (a read that would block = still open).
async fn still_open(conns: &mut [tokio::net::TcpStream]) -> usize {
    let mut open = 0;
    let mut buf = [0u8; 512];
    for s in conns.iter_mut() {
        match tokio::time::timeout(Duration::from_millis(1), s.read(&mut buf)).await {
            Err(_) => open += 1,     // nothing to read yet: open
            Ok(Ok(n)) if n > 0 => {} // an answer (408): it closes next
            Ok(_) => {}              // EOF or reset
        }
    }
    open
}

/// Memory under N connections parked mid-body.
async fn park(a: &Args) {
    let n: usize = a.num("--park", "3000");
    let body_bytes: usize = a.num::<usize>("--park-body", "61440").min(65_000);
    let wait: f64 = a.num::<f64>("--wait", "0").clamp(0.0, 120.0);
    let dir = temp_dir("park");
    let (mut child, addr) = spawn_collector(a, &dir.join("park.db"), &[]);
    let pid = child.id();
    // Warm up: a few beacons, so the baseline includes the runtime's working set.
    let mut conn = Conn::connect(addr).await.expect("connect");
    for i in 0..20 {
        let b = json!({"v": 1, "records": [record(&format!("w{i}"), now_ms())]}).to_string();
        conn.request("POST", "/v1/rum", &[], b.as_bytes())
            .await
            .expect("warm-up");
    }
    drop(conn);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rss0 = rss_mib(pid);
    let head = "POST /v1/rum HTTP/1.1\r\nhost: x\r\ncontent-type: text/plain;charset=UTF-8\r\ncontent-length: 65536\r\n\r\n";
    let body = vec![b' '; body_bytes];
    let t0 = Instant::now();
    let mut conns = Vec::with_capacity(n);
    let mut failed = 0;
    for _ in 0..n {
        if t0.elapsed() > Duration::from_secs(60) {
            break; // bounded
        }
        match tokio::net::TcpStream::connect(addr).await {
            Ok(mut s) => {
                let sent = tokio::time::timeout(Duration::from_millis(500), async {
                    s.write_all(head.as_bytes()).await?;
                    s.write_all(&body).await
                })
                .await;
                if matches!(sent, Ok(Ok(()))) {
                    conns.push(s);
                } else {
                    failed += 1;
                }
            }
            Err(_) => failed += 1,
        }
    }
    let opened = t0.elapsed();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss1 = rss_mib(pid);
    let open1 = still_open(&mut conns).await;
    // A normal client meanwhile.
    let t = Instant::now();
    let normal = match tokio::time::timeout(Duration::from_secs(10), async {
        let b = json!({"v": 1, "records": [record("normal", now_ms())]}).to_string();
        llm_rum_collector_testkit::client::request(addr, "POST", "/v1/rum", &[], b.as_bytes()).await
    })
    .await
    {
        Ok(Ok(r)) => format!(
            "HTTP {} in {:.1} ms",
            r.status,
            t.elapsed().as_secs_f64() * 1000.0
        ),
        Ok(Err(e)) => format!("failed: {e}"),
        Err(_) => "no answer within 10 s".into(),
    };
    println!("parked {} connections mid-body ({body_bytes} of 65536 body bytes sent) in {:.1} s; {failed} could not connect or send", conns.len(), opened.as_secs_f64());
    println!("collector RSS: {rss0:.1} MiB before → {rss1:.1} MiB with them (+{:.1} MiB); connections it still holds: {open1}", rss1 - rss0);
    println!("a normal client meanwhile: {normal}");
    if wait > 0.0 {
        tokio::time::sleep(Duration::from_secs_f64(wait)).await;
        let open2 = still_open(&mut conns).await;
        println!(
            "after {wait:.0} s more: {open2} still held, RSS {:.1} MiB",
            rss_mib(pid)
        );
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Retention's delete batches over N old records.
async fn retention(a: &Args) {
    use llm_rum_collector::ingest::{self, clock};
    use llm_rum_collector::store::sqlite::{self as store, retention};
    let n: usize = a.num("--retention", "100000");
    let dir = temp_dir("retention");
    let db = dir.join("retention.db");
    let counters = Arc::new(llm_rum_collector::metrics::counters::Counters::default());
    let st = store::Store::open(
        &db,
        store::Sync::Full,
        store::WriterConfig {
            retain_ms: None,
            counters,
            metrics: None,
        },
    )
    .expect("open store");
    let old = now_ms() - 2.0 * 86_400_000.0;
    let t = Instant::now();
    let mut k = 0;
    while k < n {
        let recs: Vec<_> = (k..(k + 40).min(n))
            .map(|i| record(&format!("r{i}"), old))
            .collect();
        k += recs.len();
        let body = json!({"v": 1, "records": recs}).to_string();
        let b = ingest::decode(body.as_bytes()).expect("beacon");
        st.write(b, None, old as i64, clock::Admitted::default())
            .await
            .expect("write");
    }
    drop(st);
    let size = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| m.len() as f64 / 1048576.0)
            .unwrap_or(0.0)
    };
    println!(
        "{n} records written in {:.1} s; database {:.1} MiB",
        t.elapsed().as_secs_f64(),
        size(&db)
    );
    let mut c = store::open_conn(&db, store::Sync::Full).expect("open");
    let cutoff = now_ms() as i64 - 86_400_000;
    let batch: usize = a.num("--batch", &retention::BATCH.to_string());
    let mut times = Vec::new();
    let t = Instant::now();
    loop {
        let b = Instant::now();
        let d = retention::delete_batch(&mut c, cutoff, batch).expect("delete");
        times.push(b.elapsed().as_secs_f64() * 1000.0);
        if !d.full(batch) {
            break;
        }
    }
    let total = t.elapsed().as_secs_f64();
    let v = Instant::now();
    let mut pages = 0;
    loop {
        let p = retention::vacuum_step(&c).expect("vacuum");
        pages += p;
        if p < retention::VACUUM_PAGES {
            break;
        }
    }
    let vac = v.elapsed().as_secs_f64() * 1000.0;
    c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .expect("checkpoint");
    times.sort_by(f64::total_cmp);
    let p = |q: f64| llm_rum_collector::query::percentile(&times, q).unwrap_or(f64::NAN);
    println!(
        "retention: {} batches of ≤ {} records in {total:.2} s ({:.0} records/s); per batch p50 {:.1} ms, max {:.1} ms",
        times.len(),
        batch,
        n as f64 / total,
        p(0.5),
        p(1.0)
    );
    println!("vacuum: {pages} pages returned in {vac:.0} ms ({} steps of ≤ {} pages); database {:.1} MiB", (pages + retention::VACUUM_PAGES - 1) / retention::VACUUM_PAGES, retention::VACUUM_PAGES, size(&db));
    drop(c);
    let _ = std::fs::remove_dir_all(&dir);
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
