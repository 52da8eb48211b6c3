//! SQLite storage: the schema, the single writer, and read connections.
//!
//! Owner of "a 2xx means stored". One writer thread owns the only write connection; HTTP
//! handlers hand it their validated rows over a channel and wait for a reply that is sent only
//! after the transaction holding those rows has committed. Concurrent beacons are grouped into
//! one transaction (group commit), which is what makes ≥ 10k records/s possible with a durable
//! commit: the cost of the commit is shared by every beacon waiting on it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params_from_iter, Connection, OpenFlags, ToSql};
use tokio::sync::{mpsc, oneshot};

use crate::ingest::{Beacon, Row};

pub const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS beacons (
  id           INTEGER PRIMARY KEY,
  received_ms  INTEGER NOT NULL,
  client       TEXT,
  sdk          TEXT,
  session      TEXT,
  page         TEXT,
  records      INTEGER NOT NULL,
  dropped      INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS beacons_received ON beacons(received_ms);

CREATE TABLE IF NOT EXISTS records (
  id               TEXT PRIMARY KEY,
  received_ms      INTEGER NOT NULL,
  start_ms         REAL NOT NULL,
  session          TEXT,
  page             TEXT,
  url              TEXT,
  route            TEXT,
  method           TEXT,
  status           INTEGER,
  model            TEXT,
  outcome          TEXT NOT NULL,
  format           TEXT,
  ttft             REAL,
  ttfp             REAL,
  perceived_ttft   REAL,
  total            REAL,
  perceived_total  REAL,
  tpot             REAL,
  itl_p50          REAL,
  itl_p95          REAL,
  itl_max          REAL,
  render_delay_p95 REAL,
  stalls_count     INTEGER,
  stalls_network   INTEGER,
  stalls_render    INTEGER,
  stalls_total_ms  REAL,
  buffered         INTEGER,
  hidden           INTEGER,
  m_interaction    REAL,
  m_headers        REAL,
  m_first_byte     REAL,
  m_first_token    REAL,
  m_first_paint    REAL,
  m_last_token     REAL,
  m_last_paint     REAL,
  m_end            REAL,
  raw              TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS records_start    ON records(start_ms);
CREATE INDEX IF NOT EXISTS records_received ON records(received_ms);
CREATE INDEX IF NOT EXISTS records_route    ON records(route, start_ms);
CREATE INDEX IF NOT EXISTS records_model    ON records(model, start_ms);
CREATE INDEX IF NOT EXISTS records_outcome  ON records(outcome, start_ms);

CREATE TABLE IF NOT EXISTS stages (
  record_id TEXT NOT NULL,
  name      TEXT NOT NULL,
  dur       REAL NOT NULL,
  PRIMARY KEY (record_id, name)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS stages_name ON stages(name);
"#;

/// Record columns in insert order (after `id`, `received_ms`).
const COLS: [&str; 36] = [
    "start_ms",
    "session",
    "page",
    "url",
    "route",
    "method",
    "status",
    "model",
    "outcome",
    "format",
    "ttft",
    "ttfp",
    "perceived_ttft",
    "total",
    "perceived_total",
    "tpot",
    "itl_p50",
    "itl_p95",
    "itl_max",
    "render_delay_p95",
    "stalls_count",
    "stalls_network",
    "stalls_render",
    "stalls_total_ms",
    "buffered",
    "hidden",
    "m_interaction",
    "m_headers",
    "m_first_byte",
    "m_first_token",
    "m_first_paint",
    "m_last_token",
    "m_last_paint",
    "m_end",
    "raw",
    "id",
];

/// How durable a commit is. `Full` survives power loss; `Normal` (WAL) survives a process
/// crash/kill -9 but may lose the last commits on power loss.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sync {
    Full,
    Normal,
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stored {
    /// Records inserted or that replaced a stored `partial`.
    pub stored: usize,
    /// Records already present (retried beacon, or a `partial` after its completed version).
    pub duplicates: usize,
}

struct Job {
    received_ms: i64,
    client: Option<String>,
    beacon: Beacon,
    reply: oneshot::Sender<Result<Stored, String>>,
}

/// Handle to the writer thread; cheap to clone.
#[derive(Clone)]
pub struct Store {
    tx: mpsc::Sender<Job>,
    path: PathBuf,
}

pub fn open_conn(path: &Path, sync: Sync) -> rusqlite::Result<Connection> {
    let c = Connection::open(path)?;
    c.busy_timeout(Duration::from_secs(10))?;
    c.pragma_update(None, "journal_mode", "WAL")?;
    c.pragma_update(
        None,
        "synchronous",
        if sync == Sync::Full { "FULL" } else { "NORMAL" },
    )?;
    Ok(c)
}

/// A connection for queries (the API and the alert engine). WAL lets it read while the
/// writer writes.
pub fn open_reader(path: &Path) -> rusqlite::Result<Connection> {
    let c = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    c.busy_timeout(Duration::from_secs(10))?;
    Ok(c)
}

impl Store {
    /// Creates the schema and starts the writer thread.
    pub fn open(path: &Path, sync: Sync) -> Result<Store, String> {
        let conn = open_conn(path, sync).map_err(|e| format!("open {}: {e}", path.display()))?;
        conn.execute_batch(SCHEMA)
            .map_err(|e| format!("schema: {e}"))?;
        // Bounded: when the disk cannot keep up, handlers wait here (backpressure), not in RAM.
        let (tx, rx) = mpsc::channel::<Job>(4096);
        std::thread::Builder::new()
            .name("rum-writer".into())
            .spawn(move || writer(conn, rx))
            .map_err(|e| e.to_string())?;
        Ok(Store {
            tx,
            path: path.to_path_buf(),
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
    ) -> Result<Stored, String> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Job {
                received_ms,
                client,
                beacon,
                reply,
            })
            .await
            .map_err(|_| "writer stopped".to_string())?;
        rx.await.map_err(|_| "writer stopped".to_string())?
    }
}

/// Records per transaction at most: bounds the latency added to the first beacon of a group.
const GROUP_RECORDS: usize = 20_000;

fn writer(mut conn: Connection, mut rx: mpsc::Receiver<Job>) {
    let mut batch: Vec<Job> = Vec::new();
    while let Some(first) = rx.blocking_recv() {
        let mut n = first.beacon.records.len();
        batch.push(first);
        // Whatever queued up while the previous commit ran joins this transaction.
        while n < GROUP_RECORDS {
            match rx.try_recv() {
                Ok(j) => {
                    n += j.beacon.records.len();
                    batch.push(j);
                }
                Err(_) => break,
            }
        }
        match write_batch(&mut conn, &batch) {
            Ok(results) => {
                for (job, r) in batch.drain(..).zip(results) {
                    let _ = job.reply.send(Ok(r));
                }
            }
            Err(e) => {
                let msg = format!("storage error: {e}");
                eprintln!("llm-rum-collector: {msg}");
                for job in batch.drain(..) {
                    let _ = job.reply.send(Err(msg.clone()));
                }
            }
        }
    }
}

fn write_batch(conn: &mut Connection, batch: &[Job]) -> rusqlite::Result<Vec<Stored>> {
    let tx = conn.transaction()?;
    let mut out = Vec::with_capacity(batch.len());
    {
        let placeholders = vec!["?"; COLS.len() + 1].join(",");
        let updates: Vec<String> = std::iter::once("received_ms".to_string())
            .chain(COLS.iter().filter(|c| **c != "id").map(|c| c.to_string()))
            .map(|c| format!("{c}=excluded.{c}"))
            .collect();
        // Dedupe by id: a stored `partial` is replaced by any later version (the completed
        // record, or a newer partial); anything else already stored wins (a retried beacon
        // changes nothing, and a late partial never overwrites the completed record).
        let sql = format!(
            "INSERT INTO records(received_ms,{}) VALUES({placeholders}) \
             ON CONFLICT(id) DO UPDATE SET {} WHERE records.outcome = 'partial'",
            COLS.join(","),
            updates.join(",")
        );
        let mut ins = tx.prepare_cached(&sql)?;
        let mut del_st = tx.prepare_cached("DELETE FROM stages WHERE record_id = ?")?;
        let mut ins_st =
            tx.prepare_cached("INSERT OR REPLACE INTO stages(record_id,name,dur) VALUES(?,?,?)")?;
        let mut ins_b = tx.prepare_cached(
            "INSERT INTO beacons(received_ms,client,sdk,session,page,records,dropped) VALUES(?,?,?,?,?,?,?)",
        )?;
        for job in batch {
            let b = &job.beacon;
            let mut st = Stored::default();
            for r in &b.records {
                let changed = ins.execute(params_from_iter(row_params(job.received_ms, b, r)))?;
                if changed == 0 {
                    st.duplicates += 1;
                    continue;
                }
                st.stored += 1;
                del_st.execute([&r.id])?;
                for (name, dur) in &r.stages {
                    ins_st.execute(rusqlite::params![r.id, name, dur])?;
                }
            }
            ins_b.execute(rusqlite::params![
                job.received_ms,
                job.client,
                b.sdk,
                b.session,
                b.page,
                b.records.len() as i64,
                b.dropped.min(i64::MAX as u64) as i64
            ])?;
            out.push(st);
        }
    }
    tx.commit()?;
    Ok(out)
}

fn row_params<'a>(received_ms: i64, b: &'a Beacon, r: &'a Row) -> Vec<Box<dyn ToSql + 'a>> {
    let m = &r.marks;
    vec![
        Box::new(received_ms),
        Box::new(r.start_ms),
        Box::new(&b.session),
        Box::new(&b.page),
        Box::new(&r.url),
        Box::new(&r.route),
        Box::new(&r.method),
        Box::new(r.status),
        Box::new(&r.model),
        Box::new(&r.outcome),
        Box::new(&r.format),
        Box::new(r.ttft),
        Box::new(r.ttfp),
        Box::new(r.perceived_ttft),
        Box::new(r.total),
        Box::new(r.perceived_total),
        Box::new(r.tpot),
        Box::new(r.itl_p50),
        Box::new(r.itl_p95),
        Box::new(r.itl_max),
        Box::new(r.render_delay_p95),
        Box::new(r.stalls_count),
        Box::new(r.stalls_network),
        Box::new(r.stalls_render),
        Box::new(r.stalls_total_ms),
        Box::new(r.buffered),
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
    ]
}
