//! Read connections: a pool for the API and one connection of its own for the alert engine,
//! so budget evaluation never waits behind a dashboard read. WAL lets all of them read while
//! the writer writes. Every query runs against a deadline (`--query-budget`): SQLite's progress
//! handler interrupts a statement past it, and the read code checks it between rows.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};
use tokio::sync::Semaphore;

use crate::query::plan::{Ctx, QResult, QueryError};

/// A connection for queries.
pub fn open_reader(path: &Path) -> rusqlite::Result<Connection> {
    let c = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    c.busy_timeout(Duration::from_secs(10))?;
    // Rollup rows are read again and again (the dashboard refreshes every 10 s): 32 MiB of
    // page cache per connection (SQLite's default is 2 MiB) keeps a day of them decoded-ready.
    c.pragma_update(None, "cache_size", -32_768)?;
    Ok(c)
}

/// Runs `f` on `c` with the deadline enforced inside SQLite too, in one read transaction: a
/// read is several statements (dirty marks, rollup rows, delta rows, raw edges), and without one
/// snapshot for all of them the writer's once-a-second merge could commit between two of them
/// (minute rows read before, deltas after: the merged records counted in neither).
fn with_budget<T>(c: &Connection, budget: Duration, f: impl FnOnce(&Ctx) -> QResult<T>) -> QResult<T> {
    let deadline = Instant::now() + budget;
    c.execute_batch("BEGIN")?; // deferred: the snapshot is taken by the first SELECT
    // Called every N virtual-machine steps (~0.1 ms here): a true return interrupts.
    c.progress_handler(20_000, Some(move || Instant::now() >= deadline));
    let r = f(&Ctx { c, deadline });
    c.progress_handler(0, None::<fn() -> bool>);
    // Read-only: nothing to commit; ends the snapshot (also after an interrupted statement).
    if !c.is_autocommit() {
        c.execute_batch("ROLLBACK")?;
    }
    r
}

pub struct Pool {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    permits: Semaphore,
    alerts: Mutex<Connection>,
    pub budget: Duration,
}

impl Pool {
    /// `size` connections for the API, one more for the alert engine.
    pub fn open(path: &Path, size: usize, budget: Duration) -> rusqlite::Result<Pool> {
        let size = size.max(1);
        let idle = (0..size)
            .map(|_| open_reader(path))
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(Pool {
            path: path.to_path_buf(),
            idle: Mutex::new(idle),
            permits: Semaphore::new(size),
            alerts: Mutex::new(open_reader(path)?),
            budget,
        })
    }

    /// Runs a read on a pooled connection, off the async threads. Waits for a free connection
    /// when all are busy (the wait counts against nothing: only the query has a budget).
    pub async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Ctx) -> QResult<T> + Send + 'static,
    ) -> QResult<T> {
        let _permit = self.permits.acquire().await.expect("never closed");
        let conn = self
            .idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .map_or_else(|| open_reader(&self.path), Ok)?;
        let budget = self.budget;
        let joined = tokio::task::spawn_blocking(move || {
            let r = with_budget(&conn, budget, f);
            (conn, r)
        })
        .await;
        match joined {
            Ok((conn, r)) => {
                self.idle.lock().unwrap_or_else(|e| e.into_inner()).push(conn);
                r
            }
            // The read panicked; its connection is gone, the next read opens a new one.
            Err(e) => Err(QueryError::Failed(format!("the read failed: {e}"))),
        }
    }

    /// Runs `f` on the alert engine's own connection (blocking: call from a blocking task).
    pub fn alerts<T>(&self, f: impl FnOnce(&Ctx) -> QResult<T>) -> QResult<T> {
        let c = self.alerts.lock().unwrap_or_else(|e| e.into_inner());
        with_budget(&c, self.budget, f)
    }
}
