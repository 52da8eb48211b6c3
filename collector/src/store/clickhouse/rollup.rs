//! Minute rollups on ClickHouse: what a row holds, when it is current, and the builder. The
//! reads that use them are `reader` (`query::plan::Rows` on ClickHouse, so the dashboard's
//! answers and the window plan are the SQLite store's code).
//!
//! Why not a materialized view: it aggregates each insert as it comes, and inserts here carry
//! copies (an SDK retry, a spooled batch whose timed-out insert had landed after all, a
//! `partial` later completed) that only reading collapses. So a minute's row is recomputed from
//! the collapsed records: `build` reads the minute's records (copies collapsed as `FINAL` does,
//! by `collapse`), aggregates them with the
//! SQLite rollups' code (`agg::Agg`, the log-histogram sketch) per (route, model, outcome), and
//! inserts the rows stamped with ClickHouse's clock when the read began (`computed`).
//!
//! What tells a row is current — shared by every collector on the database, so nothing lives
//! in one collector's memory: each record row carries `ins`, ClickHouse's clock at its insert
//! (`MATERIALIZED now()`). A minute's rows answer a read only when every record of the minute
//! was inserted more than `SETTLE` before they were computed; any later insert (a late record,
//! a retry, a completed partial) makes the minute *dirty* and reads take it from the records
//! until it is rebuilt. So a read is never stale: rollups only make it faster. `SETTLE` covers
//! an insert that is still running when a rollup reads: an insert is visible once it returns,
//! and the writer gives up on one after `INSERT_TIMEOUT` (its batch is then spooled and
//! inserted again, with a new `ins`).
//!
//! Building: each collector's `run` looks once a second for minutes with inserts since its last
//! look (`ins >=`), and rebuilds those whose last insert is `SETTLE` old and newer than their
//! row. A minute is answered from its row at most `SETTLE` + about 2 s after its last insert
//! (README: the staleness bound is about speed, not correctness). Several collectors on one
//! database each rebuild the same minutes (the copies collapse: same key, same `computed`
//! second or the later wins); that costs ClickHouse reads, never a wrong count.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::body::Bytes;

use crate::query::agg::{Agg, Sample, Want, MAX_SERVER_STAGES};
use crate::query::plan::{Filter, QResult, QueryError};
use crate::store::clickhouse::answer::{collapse, failed, recs, sample_cols, Rec};
use crate::store::clickhouse::http::lit;
use crate::store::clickhouse::query::where_;
use crate::store::clickhouse::ClickHouse;
use crate::store::sqlite::rollup::{key_of, Key, MAX_KEYS, OTHER};

/// A minute's rows are used once its last insert is this much older than they are (seconds):
/// the writer's `INSERT_TIMEOUT`, one more for `now()`'s whole seconds, one of margin.
pub const SETTLE_S: u32 = crate::store::clickhouse::INSERT_TIMEOUT.as_secs() as u32 + 2;
/// Records read per rebuild statement at most (about 30 MB of answer).
const BUILD_RECORDS: u64 = 50_000;
pub(crate) const MINUTE_MS: f64 = 60_000.0;


/// What the builder last saw (for `/healthz` and the tests: "settled" is a look that began after
/// the last insert and found no minute pending).
#[derive(Default)]
pub struct Status {
    /// Minutes with records newer than their rows, at the last look.
    pub pending: AtomicU64,
    /// Minute rebuilds by this collector.
    pub built: AtomicU64,
    /// The collector's clock (epoch ms) when its last complete look began.
    pub looked_at_ms: AtomicU64,
    /// Minutes a read took from rows / record ranges it read (this collector's reads).
    pub minutes_read: AtomicU64,
    pub raw_pieces_read: AtomicU64,
    /// Partial minutes read as their rows minus the records outside the window.
    pub partial_minutes_from_rows: AtomicU64,
    pub error: Mutex<Option<String>>,
}

impl Status {
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "pendingMinutes": self.pending.load(Ordering::Relaxed),
            "builtMinutes": self.built.load(Ordering::Relaxed),
            "lookedAtMs": self.looked_at_ms.load(Ordering::Relaxed),
            "minutesReadFromRollups": self.minutes_read.load(Ordering::Relaxed),
            "rawRangesRead": self.raw_pieces_read.load(Ordering::Relaxed),
            "partialMinutesFromRows": self.partial_minutes_from_rows.load(Ordering::Relaxed),
            "settleSeconds": SETTLE_S,
            "error": self.error.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        })
    }
}

/// `minutes_of`: minute, last insert, and the count, first and last start inside the window.
pub(crate) type Minute = (i64, u32, u64, f64, f64);

impl ClickHouse {
    /// ClickHouse's clock, whole seconds.
    async fn server_now(&self) -> QResult<u32> {
        let b = self.answer("SELECT toUInt32(now()) FORMAT TSV", Duration::from_secs(10)).await?;
        String::from_utf8_lossy(&b)
            .trim()
            .parse()
            .map_err(|e| QueryError::Failed(format!("now(): {e}")))
    }

    /// Per minute with records that overlaps `[from, to)` — whole minutes: a minute's rows
    /// stand for all of it, and whether they are current depends on every record of it —
    /// its last insert (`ins`, seconds) and the count, first and last start inside `[from, to)`.
    /// One scan of two narrow columns serves both the window's span and the plan.
    pub(crate) async fn minutes_of(&self, from: Option<f64>, to: Option<f64>, budget: Duration) -> QResult<Vec<Minute>> {
        let (mut w, mut inside) = (vec!["1".to_string()], vec!["1".to_string()]);
        for (end, op, dop, sop) in [(from, ">=", ">=", ">="), (to, "<=", "<=", "<")] {
            if let Some(x) = end.filter(|x| x.is_finite()) {
                let m = (x / MINUTE_MS).floor();
                w.push(format!("minute {op} {m}"));
                w.push(format!("day {dop} toDate({})", lit(&crate::store::clickhouse::rows::day((m * MINUTE_MS).max(0.0)))));
                inside.push(format!("start_ms {sop} {x}"));
            }
        }
        let c = inside.join(" AND ");
        self.select(
            &format!(
                "SELECT minute AS m, toUInt32(max(ins)), countIf({c}), minIf(start_ms, {c}), maxIf(start_ms, {c}) \
                 FROM {}.records WHERE {} GROUP BY m",
                self.db(),
                w.join(" AND ")
            ),
            budget,
        )
        .await
    }

    /// Per minute in `[m0, m1]` with rows: when its newest rows were computed, and whether they
    /// folded keys into `OTHER`.
    pub(crate) async fn rolled(&self, m0: i64, m1: i64, budget: Duration) -> QResult<HashMap<i64, (u32, bool)>> {
        let rows: Vec<(i64, u32, u8)> = self
            .select(
                &format!(
                    "SELECT minute, computed, max(route = {}) FROM {}.rollups WHERE minute >= {m0} AND minute <= {m1} \
                     GROUP BY minute, computed",
                    lit(OTHER),
                    self.db()
                ),
                budget,
            )
            .await?;
        let mut out: HashMap<i64, (u32, bool)> = HashMap::new();
        for (m, c, o) in rows {
            let e = out.entry(m).or_insert((c, o != 0));
            if c > e.0 {
                *e = (c, o != 0);
            }
        }
        Ok(out)
    }

    /// Records of the minutes in `minutes` (collapsed), as samples, each with its minute.
    async fn records_of(&self, minutes: &[i64], budget: Duration) -> QResult<Vec<Sample>> {
        let (lo, hi) = (minutes[0] as f64 * MINUTE_MS, (minutes[minutes.len() - 1] + 1) as f64 * MINUTE_MS);
        let w = where_(&Filter { from: Some(lo), to: Some(hi), ..Filter::default() });
        let list: Vec<String> = minutes.iter().map(i64::to_string).collect();
        let body = self
            .answer(
                &format!(
                    "SELECT {} FROM {}.records WHERE {w} AND minute IN ({}) FORMAT RowBinary",
                    sample_cols(Want::ALL),
                    self.db(),
                    list.join(",")
                ),
                budget,
            )
            .await?;
        Ok(collapse(recs(&body)?).into_iter().map(Rec::sample).collect())
    }

    /// Recomputes the rows of `minutes` (sorted) from their records: one read, one insert.
    pub async fn build(&self, minutes: &[i64]) -> QResult<()> {
        if minutes.is_empty() {
            return Ok(());
        }
        let budget = Duration::from_secs(60);
        // Stamped before the read: every insert that returned before this is in it.
        let computed = self.server_now().await?;
        let samples = self.records_of(minutes, budget).await?;
        let mut rows: BTreeMap<i64, HashMap<Key, Agg>> = minutes.iter().map(|&m| (m, HashMap::new())).collect();
        for s in samples {
            let m = (s.start_ms / MINUTE_MS).floor() as i64;
            let Some(keys) = rows.get_mut(&m) else { continue };
            // Bounded as SQLite's minute rows: past MAX_KEYS keys the rest share OTHER's row
            // (and reads filtered by route or model take that minute from the records).
            let mut k = key_of(&s);
            if !keys.contains_key(&k) && (keys.len() >= MAX_KEYS || k.0 == OTHER) {
                k = (OTHER.into(), OTHER.into(), k.2);
            }
            keys.entry(k).or_default().add(&s, MAX_SERVER_STAGES);
        }
        let mut body = Vec::new();
        for (m, keys) in &rows {
            let day = (*m as f64 * MINUTE_MS / 86_400_000.0).floor() as u16;
            for ((route, model, outcome), a) in keys {
                body.extend_from_slice(&day.to_le_bytes());
                body.extend_from_slice(&m.to_le_bytes());
                for s in [route.as_bytes(), model.as_bytes(), outcome.as_bytes(), &a.encode()] {
                    llm_rum_sketch::put_varint(&mut body, s.len() as u64);
                    body.extend_from_slice(s);
                }
                body.extend_from_slice(&computed.to_le_bytes());
            }
        }
        if body.is_empty() {
            return Ok(());
        }
        self.http
            .run(
                &format!("INSERT INTO {}.rollups (day, minute, route, model, outcome, data, computed) FORMAT RowBinary", self.db()),
                Bytes::from(body),
                &[],
                budget,
            )
            .await
            .map_err(failed)?;
        Ok(())
    }

    /// One look: rebuilds the settled minutes with inserts at or after `since` (seconds)
    /// newer than their rows. Returns the next look's `since`.
    async fn look(&self, since: u32) -> QResult<u32> {
        let started = crate::ingest::clock::now_ms();
        let budget = Duration::from_secs(60);
        let now = self.server_now().await?;
        let rows: Vec<(i64, u32, u64)> = self
            .select(
                &format!(
                    "SELECT minute AS m, toUInt32(max(ins)), count() FROM {}.records \
                     WHERE ins >= toDateTime({since}) GROUP BY m ORDER BY m",
                    self.db()
                ),
                budget,
            )
            .await?;
        let mut pending = 0;
        let mut todo: Vec<(i64, u64)> = Vec::new();
        if let (Some(first), Some(last)) = (rows.first(), rows.last()) {
            let rolled = self.rolled(first.0, last.0, budget).await?;
            for &(m, ins, n) in &rows {
                if ins + SETTLE_S >= now {
                    pending += 1; // not settled yet: the next looks see it again
                } else if rolled.get(&m).is_none_or(|&(c, _)| c <= ins + SETTLE_S) {
                    todo.push((m, n));
                }
            }
        }
        let st = &self.rollups;
        st.pending.store(pending + todo.len() as u64, Ordering::Relaxed);
        // In statements of about BUILD_RECORDS records (a minute bigger than that is one).
        let mut chunk: Vec<i64> = Vec::new();
        let mut n = 0;
        for (i, &(m, k)) in todo.iter().enumerate() {
            if !chunk.is_empty() && n + k > BUILD_RECORDS {
                self.build(&chunk).await?;
                st.built.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                st.pending.store(pending + (todo.len() - i) as u64, Ordering::Relaxed);
                chunk.clear();
                n = 0;
            }
            chunk.push(m);
            n += k;
        }
        self.build(&chunk).await?;
        st.built.fetch_add(chunk.len() as u64, Ordering::Relaxed);
        st.pending.store(pending, Ordering::Relaxed);
        st.looked_at_ms.store(started.max(0.0) as u64, Ordering::Relaxed);
        // A record not yet visible now was inserted at most INSERT_TIMEOUT ago (else it is
        // inserted again): looking back SETTLE_S from now sees it next time.
        Ok(now.saturating_sub(SETTLE_S))
    }
}

/// The builder: one look a second (the first looks at everything stored).
pub async fn run(ch: Arc<ClickHouse>, ready: Arc<std::sync::atomic::AtomicBool>) {
    let mut since = 0u32;
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        if !ready.load(Ordering::Acquire) {
            continue;
        }
        let r = ch.look(since).await;
        let mut err = ch.rollups.error.lock().unwrap_or_else(|e| e.into_inner());
        match r {
            Ok(next) => {
                since = next;
                *err = None;
            }
            Err(e) => {
                if err.is_none() {
                    tracing::warn!(error = %e, "ClickHouse rollups: a look failed (retried in a second)");
                }
                *err = Some(e.to_string());
            }
        }
    }
}
