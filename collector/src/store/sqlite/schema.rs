//! The database schema and its migrations.
//!
//! Every database, new or old, takes the same path: the baseline (the first released schema,
//! `CREATE … IF NOT EXISTS`), then each migration it has not had yet, in order, each in its
//! own transaction that also bumps `PRAGMA user_version`. A new schema change is a new entry
//! at the end of `MIGRATIONS`, never an edit of an old one.

use rusqlite::Connection;

/// The first released schema (public for tests that build a database as it was then).
pub const BASELINE: &str = r#"
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

/// One schema change: its SQL, then (optionally) a data step in the same transaction.
pub struct Migration {
    pub sql: &'static str,
    pub then: Option<fn(&rusqlite::Transaction) -> rusqlite::Result<()>>,
}

/// Migration N (1-based) brings a database from user_version N−1 to N.
const MIGRATIONS: &[Migration] = &[
    // 1 (issue 11): clock correction and refusals per beacon; counts clamped (a stored
    // i64::MAX made every later SUM overflow); `meta` for the writer's health probe.
    Migration {
        sql: r#"
    ALTER TABLE beacons ADD COLUMN sent_ms REAL;
    ALTER TABLE beacons ADD COLUMN skew_ms REAL;
    ALTER TABLE beacons ADD COLUMN refused_old INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE beacons ADD COLUMN refused_future INTEGER NOT NULL DEFAULT 0;
    UPDATE beacons SET dropped = 4294967295 WHERE dropped > 4294967295;
    UPDATE records SET stalls_count = 4294967295 WHERE stalls_count > 4294967295;
    UPDATE records SET stalls_network = 4294967295 WHERE stalls_network > 4294967295;
    UPDATE records SET stalls_render = 4294967295 WHERE stalls_render > 4294967295;
    CREATE TABLE meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID;
    "#,
        then: None,
    },
    // 2 (issue 12): rollups (per-minute/hour/day aggregates with log-histogram sketches) and
    // beacon rollups; the records already stored are rolled up in the same transaction.
    Migration {
        sql: crate::store::sqlite::rollup::SCHEMA,
        then: Some(crate::store::sqlite::rollup::backfill),
    },
    // 3 (issue 16): the record's `upstreamBuffered` (a proxy or compression held the text
    // back), counted next to the UI's own `buffered`. Rollup rows count it from format 2 of
    // `agg::Agg::encode` on; the rows already stored (format 1) read as counting none, which
    // is exact: their records were stored without the column (NULL).
    Migration {
        sql: "ALTER TABLE records ADD COLUMN upstream_buffered INTEGER;",
        then: None,
    },
    // Issue 31: which model answered and whose it is (OpenTelemetry GenAI's names). Older
    // records keep null; their `raw` may hold the fields if their SDK sent them.
    Migration {
        sql: "ALTER TABLE records ADD COLUMN model_source TEXT;\n\
              ALTER TABLE records ADD COLUMN provider TEXT;\n\
              CREATE INDEX records_provider ON records(provider, start_ms);",
        then: None,
    },
];

pub const VERSION: i64 = MIGRATIONS.len() as i64;

/// Brings the database to `VERSION`. A database from a newer collector is refused (its
/// schema may mean things this one does not know).
pub fn migrate(c: &mut Connection) -> Result<(), String> {
    let err = |e: rusqlite::Error| format!("schema: {e}");
    c.execute_batch(BASELINE).map_err(err)?;
    let have: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(err)?;
    if have > VERSION {
        return Err(format!(
            "schema: the database is at version {have}, this collector knows up to {VERSION} (a newer collector wrote it)"
        ));
    }
    for (i, m) in MIGRATIONS.iter().enumerate().skip(have as usize) {
        let tx = c.transaction().map_err(err)?;
        tx.execute_batch(m.sql).map_err(err)?;
        if let Some(step) = m.then {
            step(&tx).map_err(err)?;
        }
        tx.pragma_update(None, "user_version", i as i64 + 1)
            .map_err(err)?;
        tx.commit().map_err(err)?;
        tracing::info!(version = i + 1, "schema migrated");
    }
    // Retention frees pages; incremental auto-vacuum lets them be returned to the file system
    // a bounded number at a time. New databases get it at creation (`open_conn`); a database
    // created before needs one full VACUUM to switch.
    let mode: i64 = c
        .query_row("PRAGMA auto_vacuum", [], |r| r.get(0))
        .map_err(err)?;
    if mode != 2 {
        let t = std::time::Instant::now();
        c.pragma_update(None, "auto_vacuum", "INCREMENTAL")
            .map_err(err)?;
        c.execute_batch("VACUUM").map_err(err)?;
        tracing::info!(
            ms = t.elapsed().as_millis() as u64,
            "database switched to incremental auto-vacuum (one VACUUM)"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pre_migration_database_is_brought_up_to_date_and_a_newer_one_refused() {
        let dir = std::env::temp_dir().join(format!("llm-rum-schema-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("old.db");
        {
            // The schema as the first collector release created it, with a poisoned count.
            let c = Connection::open(&path).unwrap();
            c.execute_batch(BASELINE).unwrap();
            c.execute(
                "INSERT INTO beacons(received_ms, records, dropped) VALUES (1, 0, ?)",
                [i64::MAX],
            )
            .unwrap();
        }
        let mut c = Connection::open(&path).unwrap();
        migrate(&mut c).unwrap();
        let (v, av): (i64, i64) = (
            c.query_row("PRAGMA user_version", [], |r| r.get(0))
                .unwrap(),
            c.query_row("PRAGMA auto_vacuum", [], |r| r.get(0)).unwrap(),
        );
        assert_eq!((v, av), (VERSION, 2));
        let (dropped, refused): (i64, i64) = c
            .query_row("SELECT dropped, refused_old FROM beacons", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!((dropped, refused), (4294967295, 0));
        migrate(&mut c).unwrap(); // idempotent
        c.pragma_update(None, "user_version", VERSION + 1).unwrap();
        assert!(migrate(&mut c).unwrap_err().contains("newer collector"));
        drop(c);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
