//! SQLite storage: the single writer, its health, and read connections (the schema is
//! `schema`'s, retention's batches `retention`'s).
//!
//! Owner of "a 2xx means stored". One writer thread owns the only write connection; HTTP
//! handlers hand it their validated rows over a channel and wait for a reply that is sent only
//! after the transaction holding those rows has committed. Concurrent beacons are grouped into
//! one transaction (group commit), which is what makes ≥ 10k records/s possible with a durable
//! commit: the cost of the commit is shared by every beacon waiting on it.
//!
//! Between commits, on a 1 s tick, the writer does its maintenance: a retention batch when one
//! is due, and a probe write when it has not committed for a while or its last commit failed,
//! so `health()` (and `/healthz`) says whether a commit would succeed now.

pub mod pool;
pub mod retention;
pub mod rollup;
pub mod samples;
pub mod schema;


use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::{params_from_iter, Connection, ToSql};
use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::{mpsc, oneshot};

use crate::ingest::clock::Admitted;
use crate::metrics::counters::{add, Counters};
use crate::ingest::{Beacon, Row};
use crate::query::agg::Sample;
use crate::store::sqlite::rollup::Rollups;

/// Record columns in insert order (after `received_ms`): `HEAD`, the metric table's columns
/// (`agg::METRICS`, in its order), `TAIL`, the marks (`ingest::MARK_COLUMNS`), `raw` and `id`;
/// `row_params` binds the values in this order.
const HEAD: [&str; 12] = [
    "start_ms",
    "session",
    "page",
    "url",
    "route",
    "method",
    "status",
    "model",
    "model_source",
    "provider",
    "outcome",
    "format",
];
const TAIL: [&str; 5] = ["stalls_network", "stalls_render", "buffered", "upstream_buffered", "hidden"];

fn cols() -> Vec<&'static str> {
    HEAD.iter()
        .copied()
        .chain(crate::query::agg::METRICS.iter().map(|m| m.column))
        .chain(TAIL.iter().copied())
        .chain(crate::ingest::MARK_COLUMNS)
        .chain(["raw", "id"])
        .collect()
}

pub use crate::cli::Sync;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stored {
    /// Records inserted or that replaced a stored `partial`.
    pub stored: usize,
    /// Records already present (retried beacon, or a `partial` after its completed version).
    pub duplicates: usize,
    /// Indexes (in the beacon) of the records stored, for the metrics.
    pub fresh: Vec<usize>,
}

struct Job {
    received_ms: i64,
    client: Option<String>,
    beacon: Beacon,
    admitted: Admitted,
    reply: oneshot::Sender<Result<Stored, String>>,
}

enum Msg {
    Write(Job),
    /// Once a second: maintenance (retention, health probe).
    Tick,
}

/// `None`: the last commit (or probe) succeeded; `Some(why)`: it failed.
type Health = Arc<Mutex<Option<String>>>;

/// Handle to the writer thread; cheap to clone.
#[derive(Clone)]
pub struct Store {
    tx: mpsc::Sender<Msg>,
    path: PathBuf,
    health: Health,
}

/// The writer's settings beyond the connection.
pub struct WriterConfig {
    /// Delete what was received longer ago than this; None = keep everything.
    pub retain_ms: Option<f64>,
    pub counters: Arc<Counters>,
    /// Prometheus families fed with every record stored (`/metrics`).
    pub metrics: Option<Arc<crate::metrics::Metrics>>,
}

pub fn open_conn(path: &Path, sync: Sync) -> rusqlite::Result<Connection> {
    let c = Connection::open(path)?;
    // Only the writer writes; anyone else holding the lock (a backup, the sqlite3 shell) gets
    // 5 s, then the beacon is answered 503 and retried by the SDK.
    c.busy_timeout(Duration::from_secs(5))?;
    // Before any table exists (a no-op on existing databases; `schema::migrate` converts those).
    c.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
    c.pragma_update(None, "journal_mode", "WAL")?;
    c.pragma_update(
        None,
        "synchronous",
        if sync == Sync::Full { "FULL" } else { "NORMAL" },
    )?;
    Ok(c)
}

impl Store {
    /// Brings the schema up to date and starts the writer thread.
    pub fn open(path: &Path, sync: Sync, wc: WriterConfig) -> Result<Store, String> {
        let mut conn =
            open_conn(path, sync).map_err(|e| format!("open {}: {e}", path.display()))?;
        crate::store::sqlite::schema::migrate(&mut conn)?;
        let rollups = Rollups::new();
        // Bounded: when the disk cannot keep up, handlers wait here (backpressure), not in RAM.
        let (tx, rx) = mpsc::channel::<Msg>(4096);
        let health: Health = Arc::default();
        let h = health.clone();
        std::thread::Builder::new()
            .name("rum-writer".into())
            .spawn(move || Writer::new(conn, wc, h, rollups).run(rx))
            .map_err(|e| e.to_string())?;
        Ok(Store {
            tx,
            path: path.to_path_buf(),
            health,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stores a validated beacon; resolves after the commit that holds it.
    pub async fn write(
        &self,
        beacon: Beacon,
        client: Option<String>,
        received_ms: i64,
        admitted: Admitted,
    ) -> Result<Stored, String> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Msg::Write(Job {
                received_ms,
                client,
                beacon,
                admitted,
                reply,
            }))
            .await
            .map_err(|_| "writer stopped".to_string())?;
        rx.await.map_err(|_| "writer stopped".to_string())?
    }

    /// Asks the writer for its maintenance round (called once a second). Never waits: when
    /// the queue is full the writer is busy enough, and the next tick comes.
    pub fn tick(&self) {
        let _ = self.tx.try_send(Msg::Tick);
    }

    /// Ok when the writer runs and its last commit succeeded.
    pub fn health(&self) -> Result<(), String> {
        if self.tx.is_closed() {
            return Err("the writer thread stopped".into());
        }
        match &*self.health.lock().unwrap_or_else(|e| e.into_inner()) {
            None => Ok(()),
            Some(e) => Err(e.clone()),
        }
    }
}

/// Records per transaction at most: bounds the latency added to the first beacon of a group.
const GROUP_RECORDS: usize = 20_000;

/// Without a commit for this long, a tick probes that one would succeed.
const PROBE_AFTER: Duration = Duration::from_secs(10);

struct Writer {
    conn: Connection,
    wc: WriterConfig,
    health: Health,
    last_ok: Instant,
    /// When the next retention pass starts; `pass` while one is under way.
    retention_due: Instant,
    pass: Option<Pass>,
    rollups: Rollups,
    /// Hours or days are waiting to be compacted (worked on whenever no beacon waits).
    compacting: bool,
}

/// One retention pass: batches until a batch is not full, then a vacuum step.
#[derive(Default)]
struct Pass {
    started: Option<Instant>,
    cutoff_ms: i64,
    records: usize,
    beacons: usize,
    batches: usize,
    slowest_ms: f64,
}

impl Writer {
    fn new(conn: Connection, wc: WriterConfig, health: Health, rollups: Rollups) -> Writer {
        Writer {
            conn,
            wc,
            health,
            last_ok: Instant::now(),
            retention_due: Instant::now(),
            pass: None,
            rollups,
            compacting: true,
        }
    }

    fn run(mut self, mut rx: mpsc::Receiver<Msg>) {
        let mut batch: Vec<Job> = Vec::new();
        loop {
            // A retention pass or compaction under way continues whenever no beacon waits.
            let msg = if self.pass.is_some() || self.compacting {
                match rx.try_recv() {
                    Ok(m) => m,
                    Err(TryRecvError::Empty) => {
                        if self.pass.is_some() {
                            self.retention_batch();
                        } else {
                            self.compact_step();
                        }
                        continue;
                    }
                    Err(TryRecvError::Disconnected) => return,
                }
            } else {
                match rx.blocking_recv() {
                    Some(m) => m,
                    None => return,
                }
            };
            let first = match msg {
                Msg::Tick => {
                    self.tick();
                    continue;
                }
                Msg::Write(j) => j,
            };
            let mut n = first.beacon.records.len();
            let mut tick = false;
            batch.push(first);
            // Whatever queued up while the previous commit ran joins this transaction.
            while n < GROUP_RECORDS {
                match rx.try_recv() {
                    Ok(Msg::Write(j)) => {
                        n += j.beacon.records.len();
                        batch.push(j);
                    }
                    Ok(Msg::Tick) => tick = true,
                    Err(_) => break,
                }
            }
            let result = write_batch(&mut self.conn, &mut self.rollups, &batch);
            self.rollups.settle(result.is_ok());
            self.record(result.as_ref().map(|_| ()).map_err(|e| e.to_string()));
            let c = &self.wc.counters;
            match result {
                Ok(results) => {
                    for (job, r) in batch.drain(..).zip(results) {
                        add(&c.beacons_stored, 1);
                        add(&c.records_stored, r.stored as u64);
                        add(&c.records_duplicate, r.duplicates as u64);
                        add(&c.records_dropped_by_sdk, job.beacon.dropped);
                        if let Some(m) = &self.wc.metrics {
                            for &i in &r.fresh {
                                m.observe(&job.beacon.records[i]);
                            }
                        }
                        let _ = job.reply.send(Ok(r));
                    }
                }
                Err(e) => {
                    let msg = format!("storage error: {e}");
                    for job in batch.drain(..) {
                        add(&c.beacons_storage_failed, 1);
                        let _ = job.reply.send(Err(msg.clone()));
                    }
                }
            }
            if tick {
                self.tick();
            }
        }
    }

    /// Notes a commit's outcome: health, and a log line when it changes.
    fn record(&mut self, r: Result<(), String>) {
        let mut h = self.health.lock().unwrap_or_else(|e| e.into_inner());
        match r {
            Ok(()) => {
                self.last_ok = Instant::now();
                if h.take().is_some() {
                    tracing::info!("storage recovered: commits succeed again");
                }
            }
            Err(e) => {
                if h.is_none() {
                    tracing::error!(error = %e, "storage error: beacons are answered 503 until a commit succeeds");
                }
                *h = Some(format!("storage error: {e}"));
            }
        }
    }

    fn tick(&mut self) {
        let failing = self
            .health
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some();
        if failing || self.last_ok.elapsed() >= PROBE_AFTER {
            let r = self
                .conn
                .execute(
                    "INSERT INTO meta(key, value) VALUES ('probe', ?1) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    [crate::ingest::clock::now_ms() as i64],
                )
                .map(|_| ())
                .map_err(|e| e.to_string());
            self.record(r);
        }
        // One compaction step on every tick, waiting beacons or not (under sustained ingest the
        // writer is never idle, and stale hours would make every read fall back to minutes);
        // more whenever no beacon waits.
        if let Err(e) = self.rollups.merge_step(&mut self.conn) {
            tracing::error!(error = %e, "rollups: merging the deltas failed (retried)");
        }
        self.compacting = true;
        self.compact_step();
        if let Some(retain) = self.wc.retain_ms {
            if self.pass.is_none() && Instant::now() >= self.retention_due {
                // Checked every tenth of the retention period (at most a minute apart), so
                // nothing outlives it by more than ~10 %.
                let every = Duration::from_secs_f64((retain / 10_000.0).clamp(1.0, 60.0));
                self.retention_due = Instant::now() + every;
                self.pass = Some(Pass {
                    cutoff_ms: (crate::ingest::clock::now_ms() - retain) as i64,
                    ..Pass::default()
                });
                self.retention_batch();
            }
        }
    }

    /// One compaction step (see `rollup`); stops being scheduled when none is due.
    fn compact_step(&mut self) {
        let t = Instant::now();
        match self.rollups.compact_step(&mut self.conn, crate::ingest::clock::now_ms()) {
            Ok(true) => {
                tracing::debug!(ms = t.elapsed().as_millis() as u64, "rollups compacted");
            }
            Ok(false) => self.compacting = false,
            Err(e) => {
                self.compacting = false; // retried at the next tick
                tracing::error!(error = %e, "rollup compaction failed (retried)");
            }
        }
    }

    fn retention_batch(&mut self) {
        let Some(p) = self.pass.as_mut() else { return };
        let t = Instant::now();
        p.started.get_or_insert(t);
        let cutoff = p.cutoff_ms;
        let r = crate::store::sqlite::retention::delete_batch(&mut self.conn, cutoff, crate::store::sqlite::retention::BATCH);
        let p = self.pass.as_mut().expect("pass");
        match r {
            Ok(d) => {
                if d.rollups > 0 {
                    self.rollups.forget();
                }
                p.records += d.records;
                p.beacons += d.beacons;
                p.batches += 1;
                p.slowest_ms = p.slowest_ms.max(t.elapsed().as_secs_f64() * 1000.0);
                add(
                    &self.wc.counters.retention_records_deleted,
                    d.records as u64,
                );
                if d.full(crate::store::sqlite::retention::BATCH) {
                    return; // more next time no beacon waits
                }
            }
            Err(e) => tracing::error!(error = %e, "retention: delete failed (retried next pass)"),
        }
        let p = self.pass.take().expect("pass");
        let pages = crate::store::sqlite::retention::vacuum_step(&self.conn).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "retention: incremental vacuum failed");
            0
        });
        add(&self.wc.counters.retention_pages_vacuumed, pages as u64);
        if p.records + p.beacons > 0 || pages > 0 {
            tracing::info!(
                records = p.records,
                beacons = p.beacons,
                batches = p.batches,
                slowest_batch_ms = p.slowest_ms.round(),
                pages_vacuumed = pages,
                total_ms = p.started.map_or(0, |s| s.elapsed().as_millis() as u64),
                "retention pass"
            );
        }
    }
}

fn write_batch(
    conn: &mut Connection,
    rollups: &mut Rollups,
    batch: &[Job],
) -> rusqlite::Result<Vec<Stored>> {
    let tx = conn.transaction()?;
    let mut out = Vec::with_capacity(batch.len());
    {
        let all = cols();
        let placeholders = vec!["?"; all.len() + 1].join(",");
        let updates: Vec<String> = std::iter::once("received_ms".to_string())
            .chain(all.iter().filter(|c| **c != "id").map(|c| c.to_string()))
            .map(|c| format!("{c}=excluded.{c}"))
            .collect();
        let cols = all.join(",");
        // New ids insert; an id already stored is looked at (below) before anything changes.
        let mut ins = tx.prepare_cached(&format!(
            "INSERT INTO records(received_ms,{cols}) VALUES({placeholders}) ON CONFLICT(id) DO NOTHING"
        ))?;
        // Dedupe by id: a stored `partial` is replaced by any later version (the completed
        // record, or a newer partial); anything else already stored wins (a retried beacon
        // changes nothing, and a late partial never overwrites the completed record).
        let mut replace = tx.prepare_cached(&format!(
            "INSERT INTO records(received_ms,{cols}) VALUES({placeholders}) \
             ON CONFLICT(id) DO UPDATE SET {} WHERE records.outcome = 'partial'",
            updates.join(",")
        ))?;
        let mut del_st = tx.prepare_cached("DELETE FROM stages WHERE record_id = ?")?;
        let mut ins_st =
            tx.prepare_cached("INSERT OR REPLACE INTO stages(record_id,name,dur) VALUES(?,?,?)")?;
        let mut ins_b = tx.prepare_cached(
            "INSERT INTO beacons(received_ms,client,sdk,session,page,records,dropped,sent_ms,skew_ms,refused_old,refused_future) \
             VALUES(?,?,?,?,?,?,?,?,?,?,?)",
        )?;
        // Beacon counts per received minute, summed over the batch.
        let mut minutes: Vec<(i64, u64, f64, f64, f64)> = Vec::new();
        for job in batch {
            let b = &job.beacon;
            let mut st = Stored::default();
            for (i, r) in b.records.iter().enumerate() {
                let params = row_params(job.received_ms, b, r);
                if ins.execute(params_from_iter(params.iter()))? == 0 {
                    // Stored before: only a partial gives way, and it leaves the rollups first.
                    let Some(old) = crate::store::sqlite::samples::stored_partial(&tx, &r.id)? else {
                        st.duplicates += 1;
                        continue;
                    };
                    rollups.apply(&tx, &old, true)?;
                    replace.execute(params_from_iter(params.iter()))?;
                    del_st.execute([&r.id])?;
                }
                st.stored += 1;
                st.fresh.push(i);
                for (name, dur) in &r.stages {
                    ins_st.execute(rusqlite::params![r.id, name, dur])?;
                }
                rollups.apply(&tx, &Sample::of(r), false)?;
            }
            ins_b.execute(rusqlite::params![
                job.received_ms,
                job.client,
                b.sdk,
                b.session,
                b.page,
                b.records.len() as i64,
                b.dropped as i64,
                b.sent_at,
                job.admitted.skew_ms,
                job.admitted.too_old,
                job.admitted.future
            ])?;
            let m = job.received_ms.div_euclid(60_000);
            match minutes.iter_mut().find(|x| x.0 == m) {
                Some(x) => {
                    x.1 += 1;
                    x.2 += b.dropped as f64;
                    x.3 += job.admitted.too_old as f64;
                    x.4 += job.admitted.future as f64;
                }
                None => minutes.push((
                    m,
                    1,
                    b.dropped as f64,
                    job.admitted.too_old as f64,
                    job.admitted.future as f64,
                )),
            }
            out.push(st);
        }
        for (m, n, d, o, f) in minutes {
            crate::store::sqlite::rollup::add_beacons(&tx, m, n, d, o, f)?;
        }
        rollups.flush(&tx)?;
    }
    tx.commit()?;
    Ok(out)
}

fn row_params<'a>(received_ms: i64, b: &'a Beacon, r: &'a Row) -> Vec<Box<dyn ToSql + 'a>> {
    let m = &r.marks;
    let mut v: Vec<Box<dyn ToSql + 'a>> = vec![
        Box::new(received_ms),
        Box::new(r.start_ms),
        Box::new(&b.session),
        Box::new(&b.page),
        Box::new(&r.url),
        Box::new(&r.route),
        Box::new(&r.method),
        Box::new(r.status),
        Box::new(&r.model),
        Box::new(&r.model_source),
        Box::new(&r.provider),
        Box::new(&r.outcome),
        Box::new(&r.format),
    ];
    for metric in &crate::query::agg::METRICS {
        // stalls.count is a count: stored as the integer it is.
        if metric.column == "stalls_count" {
            v.push(Box::new(r.stalls_count));
        } else {
            v.push(Box::new((metric.value)(r)));
        }
    }
    v.extend([
        Box::new(r.stalls_network) as Box<dyn ToSql + 'a>,
        Box::new(r.stalls_render),
        Box::new(r.buffered),
        Box::new(r.upstream_buffered),
        Box::new(r.hidden),
        Box::new(m[0]),
        Box::new(m[1]),
        Box::new(m[2]),
        Box::new(m[3]),
        Box::new(m[4]),
        Box::new(m[5]),
        Box::new(m[6]),
        Box::new(m[7]),
        Box::new(&r.raw),
        Box::new(&r.id),
    ]);
    v
}
