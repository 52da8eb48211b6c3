//! The store on ClickHouse (`--store clickhouse://HOST:PORT/DB`): collectors become stateless
//! ingest and read nodes, any number of them writing into one ClickHouse and answering the
//! same dashboard.
//!
//! Owner of "a 2xx means stored" on ClickHouse: a beacon is answered 200 once its rows are in
//! ClickHouse (the insert returned 200) or in the local spool (`spool`: fsynced on disk), and
//! 503 + Retry-After when neither can take it (the spool at its bound): never a silent drop.
//! Concurrent beacons share one insert (group commit, as SQLite's writer does), and inserts
//! are at least `MIN_INSERT_GAP` apart: ClickHouse wants few large inserts, each is a part.
//! While the spool holds anything, new batches queue behind it (it is drained oldest first,
//! retried with backoff), so ClickHouse sees batches in the order they were acknowledged.

pub mod answer;
pub mod http;
pub mod query;
pub mod reader;
pub mod rollup;
pub mod rows;
pub mod spool;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hyper::body::Bytes;
use tokio::sync::{mpsc, oneshot, Notify};

use crate::ingest::clock::Admitted;
use crate::metrics::counters::{add, Counters};
use crate::ingest::Beacon;
use crate::store::sqlite::Stored;
use crate::store::clickhouse::http::{lit, ChError, Http, Target};
use crate::store::clickhouse::spool::{Batch, PushError, Spool};

/// The schema (`{db}` = the database), statements separated by `;`.
pub const SCHEMA: &str = include_str!("schema.sql");

/// An insert not answered within this is treated as failed and its batch spooled (it may
/// have landed after all: the copy collapses, see schema.sql).
pub const INSERT_TIMEOUT: Duration = Duration::from_secs(5);
/// Inserts from one collector at most this often (ClickHouse makes a part of each insert).
pub const MIN_INSERT_GAP: Duration = Duration::from_millis(200);
/// Records per insert at most.
const GROUP_RECORDS: usize = 50_000;
/// A spool backlog drains in inserts of about this many bytes (~6 000 records).
const DRAIN_BYTES: u64 = 16 << 20;
/// Spool retries back off from the first to the second.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(250), Duration::from_secs(10));

pub struct Settings {
    pub target: Target,
    pub spool_dir: PathBuf,
    pub spool_max_bytes: u64,
    pub query_budget: Duration,
    /// Delete days of records that ended longer ago than this; None = keep everything.
    pub retain_ms: Option<f64>,
    pub counters: Arc<Counters>,
    pub metrics: Option<Arc<crate::metrics::Metrics>>,
}

struct Job {
    received_ms: i64,
    client: Option<String>,
    beacon: Beacon,
    admitted: Admitted,
    reply: oneshot::Sender<Result<Stored, WriteError>>,
}

/// Why a beacon was not acknowledged.
#[derive(Debug, Clone)]
pub struct WriteError {
    pub msg: String,
    /// Seconds the client should wait (the spool is full).
    pub retry_after: Option<u64>,
}

pub struct ClickHouse {
    pub http: Http,
    pub query_budget: Duration,
    tx: mpsc::Sender<Job>,
    pub spool: Arc<Spool>,
    /// The last failure talking to ClickHouse (None: the last insert or drain succeeded).
    last_error: Arc<Mutex<Option<String>>>,
    /// Beacons refused because the spool was full (for /healthz).
    refused_full: Arc<AtomicU64>,
    /// The last batch offered to the spool was refused (full), and nothing has left it since.
    at_bound: Arc<AtomicBool>,
    retain_ms: Option<f64>,
    retention_due: Mutex<Instant>,
    /// The minute rollups' builder, as last seen (rollup.rs).
    pub rollups: rollup::Status,
}

impl ClickHouse {
    /// Starts the writer and the spool's drainer. ClickHouse need not be reachable: the schema
    /// is created now if it is, else before the first drain, and batches spool meanwhile.
    pub async fn open(s: Settings) -> Result<Arc<ClickHouse>, String> {
        let spool = Arc::new(
            Spool::open(&s.spool_dir, s.spool_max_bytes)
                .map_err(|e| format!("spool {}: {e}", s.spool_dir.display()))?,
        );
        let http = Http::new(s.target.clone());
        let schema_ready = Arc::new(AtomicBool::new(false));
        let last_error: Arc<Mutex<Option<String>>> = Arc::default();
        match create_schema(&http).await {
            Ok(()) => schema_ready.store(true, Ordering::Release),
            Err(e) => {
                tracing::error!(error = %e, spool = %s.spool_dir.display(), "ClickHouse: schema not created (unreachable?); beacons are spooled until it is");
                *last_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.to_string());
            }
        }
        let (tx, rx) = mpsc::channel::<Job>(4096);
        let drained = Arc::new(Notify::new());
        let ch = Arc::new(ClickHouse {
            http: http.clone(),
            query_budget: s.query_budget,
            tx,
            spool: spool.clone(),
            last_error: last_error.clone(),
            refused_full: Arc::default(),
            at_bound: Arc::default(),
            retain_ms: s.retain_ms,
            retention_due: Mutex::new(Instant::now()),
            rollups: rollup::Status::default(),
        });
        let w = Writer {
            http: http.clone(),
            spool: spool.clone(),
            schema_ready: schema_ready.clone(),
            last_error: last_error.clone(),
            refused_full: ch.refused_full.clone(),
            at_bound: ch.at_bound.clone(),
            counters: s.counters,
            metrics: s.metrics,
            wake_drainer: drained.clone(),
            next_beacon: AtomicU64::new(0),
            node: format!("{:x}", rand_u64()),
        };
        tokio::spawn(w.run(rx));
        tokio::spawn(rollup::run(ch.clone(), schema_ready.clone()));
        tokio::spawn(drain(http, spool, schema_ready, last_error, drained, ch.at_bound.clone()));
        Ok(ch)
    }

    /// Stores a validated beacon: resolves once it is in ClickHouse or in the spool.
    pub async fn write(
        &self,
        beacon: Beacon,
        client: Option<String>,
        received_ms: i64,
        admitted: Admitted,
    ) -> Result<Stored, WriteError> {
        let (reply, rx) = oneshot::channel();
        let stopped = || WriteError {
            msg: "writer stopped".into(),
            retry_after: None,
        };
        self.tx
            .send(Job {
                received_ms,
                client,
                beacon,
                admitted,
                reply,
            })
            .await
            .map_err(|_| stopped())?;
        rx.await.map_err(|_| stopped())?
    }

    /// `/healthz`: `ok` (ClickHouse takes inserts, nothing spooled), `spooling` (acknowledged
    /// batches wait on disk; ingest still answers 200), `failing` (the spool is full or cannot
    /// be written: ingest answers 503).
    pub fn health(&self) -> (&'static str, serde_json::Value) {
        let (files, bytes) = self.spool.size();
        let err = self.last_error.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let full = self.at_bound.load(Ordering::Relaxed);
        let status = if full {
            "failing"
        } else if files > 0 || err.is_some() {
            "spooling"
        } else {
            "ok"
        };
        (
            status,
            serde_json::json!({
                "store": "clickhouse",
                "clickhouse": err.as_deref().unwrap_or("ok"),
                "spool": {"batches": files, "bytes": bytes, "maxBytes": self.spool.max_bytes,
                          "refusedFull": self.refused_full.load(Ordering::Relaxed)},
                "rollups": self.rollups.json(),
            }),
        )
    }

    /// Once a second: retention (whole days, by `DROP PARTITION`), at most once a minute.
    pub async fn tick(&self) {
        let Some(retain) = self.retain_ms else { return };
        {
            let mut due = self.retention_due.lock().unwrap_or_else(|e| e.into_inner());
            if Instant::now() < *due {
                return;
            }
            *due = Instant::now() + Duration::from_secs(60);
        }
        if let Err(e) = self.drop_days_before(crate::ingest::clock::now_ms() - retain).await {
            tracing::warn!(error = %e, "ClickHouse retention failed (retried in a minute)");
        }
    }

    /// Drops the day partitions that end before `cutoff_ms` (a day is dropped once all of it
    /// is older than the retention: records live up to a day longer than `--retain-days`).
    pub async fn drop_days_before(&self, cutoff_ms: f64) -> Result<usize, ChError> {
        let last_day = crate::store::clickhouse::rows::day(cutoff_ms - 86_400_000.0);
        let db = &self.http.target.database;
        let t = Duration::from_secs(30);
        let parts = self
            .http
            .exec(
                &format!(
                    "SELECT DISTINCT table, partition_id FROM system.parts WHERE database = {} AND active \
                     AND table IN ('records', 'beacons', 'rollups') AND max_date <= toDate({}) FORMAT TSV",
                    lit(db),
                    lit(&last_day)
                ),
                t,
            )
            .await?;
        let mut n = 0;
        for line in String::from_utf8_lossy(&parts).lines() {
            let Some((table, id)) = line.split_once('\t') else { continue };
            if !id.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            self.http
                .exec(&format!("ALTER TABLE {db}.{table} DROP PARTITION ID '{id}'"), t)
                .await?;
            n += 1;
        }
        if n > 0 {
            tracing::info!(partitions = n, before = %last_day, "ClickHouse retention: dropped days");
        }
        Ok(n)
    }
}

/// A per-process random value (the collector's node id in beacon ids): std's SipHash keys are
/// random per process, so no RNG crate is needed for one number.
fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    h.finish()
}

async fn create_schema(http: &Http) -> Result<(), ChError> {
    // Comments out first (they may hold `;`), then one statement per request.
    let sql: String = SCHEMA
        .replace("{db}", &http.target.database)
        .lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n");
    for stmt in sql.split(';').filter(|s| !s.trim().is_empty()) {
        http.exec(stmt, Duration::from_secs(10)).await?;
    }
    // `IF NOT EXISTS` keeps a table made by an older collector as it was: say so rather than
    // fail every insert (there is no migration yet; README).
    let have = http
        .exec(
            &format!(
                "SELECT count() FROM system.columns WHERE database = {} AND table = 'records' AND name IN ('minute', 'ins') FORMAT TSV",
                lit(&http.target.database)
            ),
            Duration::from_secs(10),
        )
        .await?;
    if String::from_utf8_lossy(&have).trim() != "2" {
        return Err(ChError::Server(
            0,
            format!(
                "{}.records was made by an older collector (no minute/ins columns): move it aside (RENAME TABLE) and restart",
                http.target.database
            ),
        ));
    }
    Ok(())
}

/// Inserts a batch: the records, then the beacons (each insert is atomic in ClickHouse; a
/// retry after a half-done pair re-inserts both and the copies collapse).
async fn insert(http: &Http, b: &Batch) -> Result<(), ChError> {
    let db = &http.target.database;
    for (table, body) in [("records", &b.records), ("beacons", &b.beacons)] {
        if body.is_empty() {
            continue;
        }
        http.run(
            &format!("INSERT INTO {db}.{table} FORMAT JSONEachRow"),
            Bytes::from(body.clone()),
            &[],
            INSERT_TIMEOUT,
        )
        .await?;
    }
    Ok(())
}

fn note(last_error: &Mutex<Option<String>>, r: Result<(), String>) {
    let mut h = last_error.lock().unwrap_or_else(|e| e.into_inner());
    match r {
        Ok(()) => {
            if h.take().is_some() {
                tracing::info!("ClickHouse: inserts succeed again");
            }
        }
        Err(e) => {
            if h.is_none() {
                tracing::error!(error = %e, "ClickHouse: insert failed; batches are spooled and retried");
            }
            *h = Some(e);
        }
    }
}

struct Writer {
    http: Http,
    spool: Arc<Spool>,
    schema_ready: Arc<AtomicBool>,
    last_error: Arc<Mutex<Option<String>>>,
    refused_full: Arc<AtomicU64>,
    at_bound: Arc<AtomicBool>,
    counters: Arc<Counters>,
    metrics: Option<Arc<crate::metrics::Metrics>>,
    wake_drainer: Arc<Notify>,
    next_beacon: AtomicU64,
    node: String,
}

impl Writer {
    /// The stored version (0 partial, 1 complete) of each record of `jobs` ClickHouse holds
    /// (a primary-key lookup: records are ordered by (minute, id)). Empty when the lookup
    /// fails: the records then count as new.
    async fn stored_versions(&self, jobs: &[Job]) -> HashMap<String, u8> {
        let keys: Vec<String> = jobs
            .iter()
            .flat_map(|j| &j.beacon.records)
            .map(|r| format!("({},{})", (r.start_ms / 60_000.0).floor() as i64, lit(&r.id)))
            .collect();
        if keys.is_empty() {
            return HashMap::new();
        }
        // The statement in the body (ClickHouse appends it to `query=`): it may be long.
        let sql = format!(
            "SELECT id, max(version) FROM {}.records WHERE (minute, id) IN ({}) GROUP BY id FORMAT JSONCompact",
            self.http.target.database,
            keys.join(",")
        );
        let settings = [("max_query_size", format!("{}", sql.len() + 1024))];
        let r = self.http.run("", Bytes::from(sql), &settings, INSERT_TIMEOUT).await;
        match r.map_err(|e| e.to_string()).and_then(|b| answer::parse::<(String, u8)>(&b).map_err(|e| e.to_string())) {
            Ok(rows) => rows.into_iter().collect(),
            Err(e) => {
                tracing::debug!(error = %e, "ClickHouse: the duplicate lookup failed; records count as new");
                HashMap::new()
            }
        }
    }

    async fn run(self, mut rx: mpsc::Receiver<Job>) {
        let mut last_insert: Option<Instant> = None;
        while let Some(first) = rx.recv().await {
            // Whatever queued up while the previous insert ran (or waited its gap) joins.
            let mut jobs = vec![first];
            let mut n = jobs[0].beacon.records.len();
            while n < GROUP_RECORDS {
                match rx.try_recv() {
                    Ok(j) => {
                        n += j.beacon.records.len();
                        jobs.push(j);
                    }
                    Err(_) => break,
                }
            }
            let mut batch = Batch::default();
            for j in &jobs {
                let id = format!("{}-{}", self.node, self.next_beacon.fetch_add(1, Ordering::Relaxed));
                crate::store::clickhouse::rows::beacon(&mut batch, &id, j.received_ms, j.client.as_deref(), &j.beacon, &j.admitted);
            }
            // Straight to ClickHouse when nothing waits in the spool (order) and the schema is
            // there; otherwise, or when the insert fails, into the spool.
            let direct = self.schema_ready.load(Ordering::Acquire) && self.spool.is_empty();
            // Which records ClickHouse already holds (a retry): the answer's `duplicates` and
            // the counters count them as SQLite does. Batches that go to the spool are not
            // checked (ClickHouse is not answering): their copies count again on /metrics
            // and in `stored`, never in the reads.
            let stored = if direct { self.stored_versions(&jobs).await } else { HashMap::new() };
            let result = if direct {
                if let Some(t) = last_insert {
                    tokio::time::sleep(MIN_INSERT_GAP.saturating_sub(t.elapsed())).await;
                }
                last_insert = Some(Instant::now());
                let r = insert(&self.http, &batch).await;
                note(&self.last_error, r.as_ref().map(|_| ()).map_err(|e| e.to_string()));
                r.map_err(|e| e.to_string())
            } else {
                Err(String::new())
            };
            let outcome = match result {
                Ok(()) => Ok(()),
                Err(_) => match self.spool.push(&batch) {
                    Ok(()) => {
                        self.at_bound.store(false, Ordering::Relaxed);
                        self.wake_drainer.notify_one();
                        Ok(())
                    }
                    Err(PushError::Full) => {
                        self.at_bound.store(true, Ordering::Relaxed);
                        self.refused_full.fetch_add(jobs.len() as u64, Ordering::Relaxed);
                        Err(WriteError {
                            msg: format!(
                                "ClickHouse is not taking inserts and the spool holds its bound ({} bytes): retry later",
                                self.spool.max_bytes
                            ),
                            retry_after: Some(BACKOFF.1.as_secs().max(1)),
                        })
                    }
                    Err(PushError::Io(e)) => Err(WriteError {
                        msg: format!("ClickHouse is not taking inserts and the spool cannot be written: {e}"),
                        retry_after: Some(BACKOFF.1.as_secs().max(1)),
                    }),
                },
            };
            let c = &self.counters;
            // A record is new unless a version as complete is stored or earlier in this batch
            // (a `partial` gives way to its completed version, as in SQLite).
            let mut seen = stored;
            for j in jobs {
                match &outcome {
                    Ok(()) => {
                        let mut st = Stored::default();
                        for (i, r) in j.beacon.records.iter().enumerate() {
                            let v = u8::from(r.outcome != "partial");
                            if seen.get(&r.id).is_some_and(|&s| s >= v) {
                                st.duplicates += 1;
                            } else {
                                seen.insert(r.id.clone(), v);
                                st.stored += 1;
                                st.fresh.push(i);
                            }
                        }
                        add(&c.beacons_stored, 1);
                        add(&c.records_stored, st.stored as u64);
                        add(&c.records_duplicate, st.duplicates as u64);
                        add(&c.records_dropped_by_sdk, j.beacon.dropped);
                        if let Some(m) = &self.metrics {
                            for &i in &st.fresh {
                                m.observe(&j.beacon.records[i]);
                            }
                        }
                        let _ = j.reply.send(Ok(st));
                    }
                    Err(e) => {
                        add(&c.beacons_storage_failed, 1);
                        let _ = j.reply.send(Err(e.clone()));
                    }
                }
            }
        }
    }
}

/// Drains the spool oldest first, retrying with backoff; creates the schema first if the
/// start could not.
async fn drain(
    http: Http,
    spool: Arc<Spool>,
    schema_ready: Arc<AtomicBool>,
    last_error: Arc<Mutex<Option<String>>>,
    wake: Arc<Notify>,
    at_bound: Arc<AtomicBool>,
) {
    let mut backoff = BACKOFF.0;
    loop {
        if spool.is_empty() && schema_ready.load(Ordering::Acquire) {
            // Woken by the writer when it spools; the timeout is a safety net.
            let _ = tokio::time::timeout(Duration::from_secs(1), wake.notified()).await;
            continue;
        }
        let r: Result<(), String> = async {
            if !schema_ready.load(Ordering::Acquire) {
                create_schema(&http).await.map_err(|e| e.to_string())?;
                schema_ready.store(true, Ordering::Release);
                tracing::info!("ClickHouse: schema created");
            }
            let (seqs, b) = spool
                .oldest_joined(DRAIN_BYTES)
                .map_err(|e| format!("spool read: {e}"))?;
            if !seqs.is_empty() {
                insert(&http, &b).await.map_err(|e| e.to_string())?;
                for seq in seqs {
                    spool.remove(seq).map_err(|e| format!("spool remove: {e}"))?;
                }
                at_bound.store(false, Ordering::Relaxed);
            }
            Ok(())
        }
        .await;
        match r {
            Ok(()) => {
                backoff = BACKOFF.0;
                note(&last_error, Ok(()));
                // Ease the load off a ClickHouse that just came back.
                tokio::time::sleep(MIN_INSERT_GAP / 4).await;
            }
            Err(e) => {
                note(&last_error, Err(e));
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(BACKOFF.1);
            }
        }
    }
}
