//! Retention: records and beacons received more than `--retain-days` ago are deleted, a
//! bounded batch per transaction, by the writer thread between ingest commits (so ingest waits
//! for one batch at most, never for a whole purge); then freed pages go back to the file system,
//! a bounded number at a time (incremental auto-vacuum).

use rusqlite::Connection;

/// Records per delete transaction: ingest waits for one batch at most. Measured on this
/// 2-core machine (`llm-rum-loadgen --retention 50000`, `synchronous=FULL`, records with two
/// stages): 2 000 per batch take 16–25 ms (p50; max ~50 ms), ~90 000 records/s; 5 000 took
/// 70–110 ms per batch and were no faster overall.
pub const BATCH: usize = 2_000;
/// Pages returned to the file system per vacuum step (16 MiB of 4 KiB pages).
pub const VACUUM_PAGES: i64 = 4_096;

/// How many rows one delete batch removed.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Deleted {
    pub records: usize,
    pub beacons: usize,
    /// Rollup rows (of every level) whose period ended before the cutoff.
    pub rollups: usize,
}

impl Deleted {
    /// More is waiting: a batch was full.
    pub fn full(&self, limit: usize) -> bool {
        self.records >= limit || self.beacons >= limit || self.rollups >= limit
    }
}

/// Deletes at most `limit` records (and their stages) and `limit` beacons received before
/// `cutoff_ms`, oldest first, and up to `limit` rollup rows of each level whose period ended
/// before it, in one transaction.
pub fn delete_batch(c: &mut Connection, cutoff_ms: i64, limit: usize) -> rusqlite::Result<Deleted> {
    let tx = c.transaction()?;
    let limit = limit as i64;
    tx.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS doomed (id TEXT PRIMARY KEY); DELETE FROM doomed;",
    )?;
    tx.execute(
        "INSERT INTO doomed SELECT id FROM records WHERE received_ms < ?1 ORDER BY received_ms LIMIT ?2",
        rusqlite::params![cutoff_ms, limit],
    )?;
    tx.execute(
        "DELETE FROM stages WHERE record_id IN (SELECT id FROM doomed)",
        [],
    )?;
    let records = tx.execute(
        "DELETE FROM records WHERE id IN (SELECT id FROM doomed)",
        [],
    )?;
    let beacons = tx.execute(
        "DELETE FROM beacons WHERE id IN (SELECT id FROM beacons WHERE received_ms < ?1 ORDER BY received_ms LIMIT ?2)",
        rusqlite::params![cutoff_ms, limit],
    )?;
    let rollups = crate::store::sqlite::rollup::delete_before(&tx, cutoff_ms, limit as usize)?;
    tx.commit()?;
    Ok(Deleted {
        records,
        beacons,
        rollups,
    })
}

/// Returns up to `VACUUM_PAGES` free pages to the file system; the number returned.
pub fn vacuum_step(c: &Connection) -> rusqlite::Result<i64> {
    let free = |c: &Connection| c.query_row("PRAGMA freelist_count", [], |r| r.get::<_, i64>(0));
    let before = free(c)?;
    if before == 0 {
        return Ok(0);
    }
    // One page per step of the statement: step it to the end.
    let mut st = c.prepare(&format!("PRAGMA incremental_vacuum({VACUUM_PAGES})"))?;
    let mut rows = st.query([])?;
    while rows.next()?.is_some() {}
    drop(rows);
    Ok(before - free(c)?)
}
