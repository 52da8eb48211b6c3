//! Minute rollups on ClickHouse, and the reads that use them (`Reader`: `query::plan::Rows` on
//! ClickHouse, so the dashboard's answers and the window plan are the SQLite store's code).
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

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hyper::body::Bytes;
use serde::Deserialize;

use crate::ingest::MARK_COLUMNS;
use crate::query::agg::{stages_of, Agg, Sample, Want, MAX_SERVER_STAGES, METRICS, N_METRICS};
use crate::query::plan::{Filter, Piece, Planner, QResult, QueryError, Rows, Sink};
use crate::store::clickhouse::http::{lit, ChError};
use crate::store::clickhouse::query::where_;
use crate::store::clickhouse::ClickHouse;
use crate::store::sqlite::rollup::{key_of, Key, MAX_KEYS, OTHER};

/// A minute's rows are used once its last insert is this much older than they are (seconds):
/// the writer's `INSERT_TIMEOUT`, one more for `now()`'s whole seconds, one of margin.
pub const SETTLE_S: u32 = crate::store::clickhouse::INSERT_TIMEOUT.as_secs() as u32 + 2;
/// Records read per rebuild statement at most (about 30 MB of answer).
const BUILD_RECORDS: u64 = 50_000;
const MINUTE_MS: f64 = 60_000.0;


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

/// The columns of a record as a `Sample` (`Rec`'s order), read as `RowBinary` (a tenth of
/// ClickHouse's time and none of a JSON parse: 0.18 s against 0.61 s for the 148 000 records of
/// a 10 M-record window's two ragged minutes, measured); metrics `want` does not need read as
/// NULL. Metrics and marks as arrays of `Nullable(Float64)`.
fn sample_cols(want: Want) -> String {
    let metrics: Vec<String> = METRICS
        .iter()
        .enumerate()
        .map(|(i, m)| {
            if want.has(i) {
                format!("toNullable(toFloat64({}))", m.column)
            } else {
                NULL_F64.to_string()
            }
        })
        .collect();
    let marks: Vec<String> = MARK_COLUMNS
        .iter()
        .map(|c| if want.stages { format!("toNullable(toFloat64({c}))") } else { NULL_F64.to_string() })
        .collect();
    let server = if want.stages { "server_names, server_durs" } else { "emptyArrayString(), emptyArrayFloat64()" };
    format!(
        "start_ms, outcome, route, model, [{}], stalls_count, stalls_network, stalls_render, \
         buffered, upstream_buffered, hidden, [{}], {server}, id, version",
        metrics.join(", "),
        marks.join(", ")
    )
}

/// A typed NULL (an array of bare NULLs would be `Array(Nullable(Nothing))`).
const NULL_F64: &str = "CAST(NULL AS Nullable(Float64))";

/// `minutes_of`: minute, last insert, and the count, first and last start inside the window.
type Minute = (i64, u32, u64, f64, f64);

/// One row of `sample_cols`.
struct Rec(
    f64,
    String,
    Option<String>,
    Option<String>,
    Vec<Option<f64>>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<u8>,
    Option<u8>,
    Option<u8>,
    Vec<Option<f64>>,
    Vec<String>,
    Vec<f64>,
    String,
    u8,
);

/// The rows of `sample_cols` read without `FINAL`, collapsed here as `FINAL` would: one per
/// id, the highest version. `FINAL` merges the parts' granules on one thread: 0.17 s against
/// 0.04 s without it for one minute of a 10 M-record hour (33 000 records, measured), and the
/// same copies go either way.
fn collapse(rows: Vec<Rec>) -> Vec<Rec> {
    // The winners first, by borrowed id (no copy of an id per record), then moved out.
    let mut best: HashMap<&str, usize> = HashMap::with_capacity(rows.len());
    for (i, r) in rows.iter().enumerate() {
        let w = best.entry(r.14.as_str()).or_insert(i);
        if rows[*w].15 < r.15 {
            *w = i;
        }
    }
    let mut keep = vec![false; rows.len()];
    for i in best.into_values() {
        keep[i] = true;
    }
    rows.into_iter().zip(keep).filter_map(|(r, k)| k.then_some(r)).collect()
}

/// A `RowBinary` answer, read column by column (ClickHouse's encoding: little-endian numbers,
/// strings and arrays prefixed by a LEB128 length, `Nullable` by a byte that is 1 for NULL).
struct RowBinary<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> RowBinary<'a> {
    fn bad() -> QueryError {
        QueryError::Failed("ClickHouse RowBinary answer: truncated".into())
    }
    fn done(&self) -> bool {
        self.at >= self.buf.len()
    }
    fn bytes(&mut self, n: usize) -> QResult<&'a [u8]> {
        let s = self.buf.get(self.at..self.at + n).ok_or_else(Self::bad)?;
        self.at += n;
        Ok(s)
    }
    fn len(&mut self) -> QResult<usize> {
        Ok(llm_rum_sketch::get_varint(self.buf, &mut self.at).ok_or_else(Self::bad)? as usize)
    }
    fn raw(&mut self) -> QResult<&'a [u8]> {
        let n = self.len()?;
        self.bytes(n)
    }
    fn string(&mut self) -> QResult<String> {
        Ok(String::from_utf8_lossy(self.raw()?).into_owned())
    }
    fn array<const N: usize>(&mut self) -> QResult<[u8; N]> {
        self.bytes(N)?.try_into().map_err(|_| Self::bad())
    }
    fn f64(&mut self) -> QResult<f64> {
        Ok(f64::from_le_bytes(self.array()?))
    }
    fn i64(&mut self) -> QResult<i64> {
        Ok(i64::from_le_bytes(self.array()?))
    }
    fn u8(&mut self) -> QResult<u8> {
        Ok(self.bytes(1)?[0])
    }
    fn nullable<T>(&mut self, f: impl FnOnce(&mut Self) -> QResult<T>) -> QResult<Option<T>> {
        if self.u8()? != 0 {
            Ok(None)
        } else {
            f(self).map(Some)
        }
    }
    fn list<T>(&mut self, f: impl Fn(&mut Self) -> QResult<T>) -> QResult<Vec<T>> {
        let n = self.len()?;
        (0..n).map(|_| f(self)).collect()
    }
    fn rec(&mut self) -> QResult<Rec> {
        Ok(Rec(
            self.f64()?,
            self.string()?,
            self.nullable(Self::string)?,
            self.nullable(Self::string)?,
            self.list(|r| r.nullable(Self::f64))?,
            self.nullable(Self::i64)?,
            self.nullable(Self::i64)?,
            self.nullable(Self::i64)?,
            self.nullable(Self::u8)?,
            self.nullable(Self::u8)?,
            self.nullable(Self::u8)?,
            self.list(|r| r.nullable(Self::f64))?,
            self.list(Self::string)?,
            self.list(Self::f64)?,
            self.string()?,
            self.u8()?,
        ))
    }
}

/// Every row of a `RowBinary` answer to `sample_cols`.
fn recs(body: &[u8]) -> QResult<Vec<Rec>> {
    let mut r = RowBinary { buf: body, at: 0 };
    let mut out = Vec::new();
    while !r.done() {
        out.push(r.rec()?);
    }
    Ok(out)
}

impl Rec {
    fn sample(self) -> Sample {
        let mut metrics = [None; N_METRICS];
        for (m, v) in metrics.iter_mut().zip(self.4) {
            *m = v;
        }
        let mut marks = [None; 8];
        for (m, v) in marks.iter_mut().zip(self.11) {
            *m = v;
        }
        Sample {
            start_ms: self.0,
            outcome: self.1,
            route: self.2,
            model: self.3,
            metrics,
            stages: stages_of(&marks),
            stalls_count: self.5,
            stalls_network: self.6,
            stalls_render: self.7,
            buffered: self.8.map(|b| b != 0),
            upstream_buffered: self.9.map(|b| b != 0),
            hidden: self.10.map(|b| b != 0),
            server: self.12.into_iter().zip(self.13).collect(),
        }
    }
}

#[derive(Deserialize)]
struct Answer<T> {
    data: Vec<T>,
}

pub(crate) fn parse<T: for<'de> Deserialize<'de>>(body: &[u8]) -> QResult<Vec<T>> {
    serde_json::from_slice::<Answer<T>>(body)
        .map(|a| a.data)
        .map_err(|e| QueryError::Failed(format!("ClickHouse answer: {e}")))
}

fn failed(e: ChError) -> QueryError {
    match e {
        ChError::Timeout => QueryError::Budget,
        // TIMEOUT_EXCEEDED: ClickHouse stopped it at max_execution_time.
        ChError::Server(_, m) if m.contains("Code: 159") => QueryError::Budget,
        e => QueryError::Failed(e.to_string()),
    }
}

impl ClickHouse {
    /// A statement's answer within `budget` (`sql` names its format).
    pub async fn answer(&self, sql: &str, budget: Duration) -> QResult<Bytes> {
        let settings = [
            ("max_execution_time", format!("{}", budget.as_secs_f64().ceil().max(1.0))),
            ("output_format_json_quote_64bit_integers", "0".to_string()),
        ];
        self.http
            .run(sql, Bytes::new(), &settings, budget + Duration::from_secs(1))
            .await
            .map_err(failed)
    }

    fn db(&self) -> &str {
        &self.http.target.database
    }

    /// A read's rows, typed (`sql` without its format: `JSONCompact`).
    async fn select<T: for<'de> Deserialize<'de>>(&self, sql: &str, budget: Duration) -> QResult<Vec<T>> {
        parse(&self.answer(&format!("{sql} FORMAT JSONCompact"), budget).await?)
    }

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
    async fn minutes_of(&self, from: Option<f64>, to: Option<f64>, budget: Duration) -> QResult<Vec<Minute>> {
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
    async fn rolled(&self, m0: i64, m1: i64, budget: Duration) -> QResult<HashMap<i64, (u32, bool)>> {
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

/// `query::plan::Rows` on ClickHouse: the shared reads' store side, run on a blocking thread
/// (each question one statement, awaited on the runtime).
pub struct Reader {
    pub ch: Arc<ClickHouse>,
    pub rt: tokio::runtime::Handle,
    pub deadline: Instant,
    /// Minutes the last plan found current with every key kept (not dirty, not folded into
    /// `OTHER`): a part of one of them may be read as its rows minus the rest (`run`).
    clean: std::cell::RefCell<HashSet<i64>>,
    /// The last `bounds` scan: its filter's window and each minute's last insert.
    minutes: std::cell::RefCell<Option<((Option<f64>, Option<f64>), HashMap<i64, u32>)>>,
}

impl Reader {
    fn left(&self) -> QResult<Duration> {
        let d = self.deadline.saturating_duration_since(Instant::now());
        if d.is_zero() {
            Err(QueryError::Budget)
        } else {
            Ok(d)
        }
    }

    /// ` AND route = '…'` for the filter's rollup keys (a missing key is stored as '').
    fn keys(f: &Filter) -> String {
        let mut w = String::new();
        for (col, v) in [("route", &f.route), ("model", &f.model), ("outcome", &f.outcome)] {
            if let Some(v) = v {
                w += &format!(" AND {col} = {}", lit(v));
            }
        }
        w
    }

    /// The newest rows of the minutes in `ranges` (`[from, to)` each), filtered by key.
    async fn rollup_rows(&self, ranges: &[(i64, i64)], f: &Filter) -> QResult<Bytes> {
        if ranges.is_empty() {
            return Ok(Bytes::new());
        }
        let within: Vec<String> = ranges.iter().map(|(a, b)| format!("(minute >= {a} AND minute < {b})")).collect();
        let within = within.join(" OR ");
        self.ch
            .answer(
                &format!(
                    "SELECT minute, route, model, outcome, data FROM {db}.rollups FINAL WHERE ({within}){} \
                     AND (minute, computed) IN (SELECT minute, max(computed) FROM {db}.rollups WHERE {within} GROUP BY minute) \
                     FORMAT RowBinary",
                    Self::keys(f),
                    db = self.ch.db()
                ),
                self.left()?,
            )
            .await
    }

    /// The records of `ranges` (start_ms `[from, to)` each), filtered as `f`.
    async fn records(&self, ranges: &[(f64, f64)], f: &Filter, want: Want) -> QResult<Bytes> {
        if ranges.is_empty() {
            return Ok(Bytes::new());
        }
        let within: Vec<String> = ranges
            .iter()
            .map(|&(a, b)| format!("({})", where_(&Filter { from: Some(a), to: Some(b), ..f.clone() })))
            .collect();
        self.ch
            .answer(
                &format!(
                    "SELECT {} FROM {}.records WHERE {} FORMAT RowBinary",
                    sample_cols(want),
                    self.ch.db(),
                    within.join(" OR ")
                ),
                self.left()?,
            )
            .await
    }
}

impl Rows for Reader {
    fn bounds(&self, f: &Filter) -> QResult<Option<(f64, f64)>> {
        // Within the filter's window only (a scan of every start is 0.1-0.5 s at 10 M records,
        // and the alert engine asks for its few minutes every second); the same scan gives the
        // plan each minute's last insert.
        let rows = self.rt.block_on(self.ch.minutes_of(f.from, f.to, self.left()?))?;
        let inside = rows.iter().filter(|r| r.2 > 0);
        let lo = inside.clone().map(|r| r.3).reduce(f64::min);
        let hi = inside.map(|r| r.4).reduce(f64::max);
        *self.minutes.borrow_mut() = Some(((f.from, f.to), rows.into_iter().map(|r| (r.0, r.1)).collect()));
        Ok(lo.zip(hi).map(|(lo, hi)| (lo, hi + 1.0)))
    }

    fn planner(&self, f: &Filter, lo: f64, hi: f64) -> QResult<Planner> {
        let (m0, m1) = ((lo / MINUTE_MS).floor() as i64, (hi / MINUTE_MS).ceil() as i64);
        // The window lies inside the last `bounds` scan's when the filter is the same.
        let cached = self.minutes.borrow_mut().take().filter(|(w, _)| *w == (f.from, f.to)).map(|(_, m)| m);
        let (ins, rolled) = self.rt.block_on(async {
            let ins = async {
                match cached {
                    Some(m) => Ok(m),
                    None => Ok(self.ch.minutes_of(Some(lo), Some(hi), self.left()?).await?.into_iter().map(|r| (r.0, r.1)).collect()),
                }
            };
            tokio::try_join!(ins, self.ch.rolled(m0, m1, self.left()?))
        })?;
        let mut dirty = HashSet::new();
        for (m, last) in ins {
            if rolled.get(&m).is_none_or(|&(c, _)| c <= last + SETTLE_S) {
                dirty.insert(m);
            }
        }
        *self.clean.borrow_mut() = rolled.iter().filter(|(m, (_, o))| !o && !dirty.contains(m)).map(|(m, _)| *m).collect();
        let overflow = rolled.into_iter().filter(|(_, (_, o))| *o).map(|(m, _)| m).collect();
        Ok(Planner::minutes(f, dirty, overflow))
    }

    fn run(&self, pieces: &[Piece], f: &Filter, want: Want, sink: &mut dyn Sink) -> QResult<()> {
        let mut minutes = Vec::new();
        let mut raw = Vec::new();
        // A record range inside one current minute and longer than half of it is read as the
        // minute's rows minus the records outside the range (`Agg::subtract`: counts exact,
        // sketches within their error): at most half a minute of records per ragged edge.
        // Only for ranges the last plan made (a timeseries whose buckets are not whole minutes
        // is not planned) and filters the rows can answer.
        let clean = self.clean.borrow();
        let mut flipped: HashSet<i64> = HashSet::new();
        for p in pieces {
            match *p {
                Piece::Rollup { from, to, .. } => minutes.push((from, to)),
                Piece::Raw { from, to } => {
                    let m = (from / MINUTE_MS).floor();
                    let (m0, m1) = (m * MINUTE_MS, (m + 1.0) * MINUTE_MS);
                    if f.provider.is_none() && to <= m1 && to - from > MINUTE_MS / 2.0 && clean.contains(&(m as i64)) {
                        flipped.insert(m as i64);
                        minutes.push((m as i64, m as i64 + 1));
                        raw.extend([(m0, from), (to, m1)].into_iter().filter(|(a, b)| a < b));
                    } else {
                        raw.push((from, to));
                    }
                }
            }
        }
        let st = &self.ch.rollups;
        st.minutes_read.fetch_add(minutes.iter().map(|(a, b)| (b - a) as u64).sum(), Ordering::Relaxed);
        st.raw_pieces_read.fetch_add(raw.len() as u64, Ordering::Relaxed);
        st.partial_minutes_from_rows.fetch_add(flipped.len() as u64, Ordering::Relaxed);
        // Both statements at once; their answers then go to the sink one after the other.
        let (rows, records) = self.rt.block_on(async {
            tokio::try_join!(self.rollup_rows(&minutes, f), self.records(&raw, f, want))
        })?;
        let mut partial: HashMap<(i64, Key), Agg> = HashMap::new();
        let mut r = RowBinary { buf: &rows, at: 0 };
        while !r.done() {
            let m = r.i64()?;
            let (route, model, outcome) = (r.string()?, r.string()?, r.string()?);
            if let Some(a) = Agg::decode(r.raw()?, want) {
                if flipped.contains(&m) {
                    partial.insert((m, (route, model, outcome)), a);
                } else {
                    sink.agg(m as f64 * MINUTE_MS, &route, &model, &outcome, a);
                }
            }
        }
        for r in collapse(recs(&records)?) {
            let s = r.sample();
            let m = (s.start_ms / MINUTE_MS).floor() as i64;
            if !flipped.contains(&m) {
                sink.sample(s);
            } else if let Some(a) = partial.get_mut(&(m, key_of(&s))) {
                let mut one = Agg::default();
                one.add_wanted(&s, want);
                a.subtract(&one);
            }
        }
        for ((m, (route, model, outcome)), a) in partial {
            if a.n > 0 {
                sink.agg(m as f64 * MINUTE_MS, &route, &model, &outcome, a);
            }
        }
        Ok(())
    }

    fn beacon_totals(&self, f: &Filter) -> QResult<(f64, f64, f64)> {
        // Beacons have no start time: their window is the received time.
        let mut bw = vec!["1".to_string()];
        if let Some(a) = f.from.filter(|x| x.is_finite()) {
            bw.push(format!("received_ms >= {a}"));
        }
        if let Some(b) = f.to.filter(|x| x.is_finite()) {
            bw.push(format!("received_ms < {b}"));
        }
        let rows: Vec<(Option<f64>, Option<f64>, Option<f64>)> = self.rt.block_on(self.ch.select(
            &format!(
                "SELECT toFloat64(sum(dropped)), toFloat64(sum(refused_old)), toFloat64(sum(refused_future)) \
                 FROM {}.beacons FINAL WHERE {}",
                self.ch.db(),
                bw.join(" AND ")
            ),
            self.left()?,
        ))?;
        let r = rows.first().copied().unwrap_or_default();
        Ok((r.0.unwrap_or(0.0), r.1.unwrap_or(0.0), r.2.unwrap_or(0.0)))
    }
}

impl ClickHouse {
    /// A reader for the shared reads, its budget starting now (call on a blocking thread).
    pub fn reader(self: &Arc<Self>) -> Reader {
        Reader {
            ch: self.clone(),
            rt: tokio::runtime::Handle::current(),
            deadline: Instant::now() + self.query_budget,
            clean: Default::default(),
            minutes: Default::default(),
        }
    }

    /// Runs a shared read (`query::summary` …) on a blocking thread.
    pub async fn read<T: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&Reader) -> QResult<T> + Send + 'static,
    ) -> QResult<T> {
        let ch = self.clone();
        tokio::task::spawn_blocking(move || f(&ch.reader()))
            .await
            .map_err(|e| QueryError::Failed(format!("read task: {e}")))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: &str, version: u8, outcome: &str) -> Rec {
        Rec(0.0, outcome.into(), None, None, vec![], None, None, None, None, None, None, vec![], vec![], vec![], id.into(), version)
    }

    #[test]
    fn copies_collapse_to_the_highest_version_as_final_does() {
        let rows = vec![
            rec("a", 0, "partial"),
            rec("b", 1, "ok"),
            rec("a", 1, "ok"),
            rec("b", 1, "ok"),
            rec("a", 0, "partial"), // a partial after its completed version: the completed stays
            rec("c", 0, "partial"),
        ];
        let mut out: Vec<(String, String)> = collapse(rows).into_iter().map(|r| (r.14, r.1)).collect();
        out.sort();
        let want = [("a", "ok"), ("b", "ok"), ("c", "partial")].map(|(a, b)| (a.to_string(), b.to_string()));
        assert_eq!(out, want);
    }

    #[test]
    fn row_binary_reads_what_clickhouse_writes() {
        // One row of sample_cols in RowBinary (tests/clickhouse.rs reads real 18.16 answers).
        let mut b = Vec::new();
        b.extend_from_slice(&1500.5f64.to_le_bytes());
        b.extend_from_slice(&[2, b'o', b'k']); // outcome
        b.extend_from_slice(&[0, 3, b'/', b'v', b'1']); // route: not NULL, "/v1"
        b.push(1); // model: NULL
        b.push(2); // metrics: [NULL, 7.25]
        b.push(1);
        b.push(0);
        b.extend_from_slice(&7.25f64.to_le_bytes());
        b.push(0); // stalls_count 2
        b.extend_from_slice(&2i64.to_le_bytes());
        b.extend_from_slice(&[1, 1, 0, 1, 1, 1]); // stalls_network/render NULL, buffered 1, upstream NULL, hidden NULL
        b.push(0); // marks: []
        b.extend_from_slice(&[1, 1, b'q']); // server_names ["q"]
        b.push(1);
        b.extend_from_slice(&4.0f64.to_le_bytes());
        b.extend_from_slice(&[2, b'i', b'd', 1]); // id, version
        let r = recs(&b).unwrap();
        assert_eq!(r.len(), 1);
        let s = recs(&b).unwrap().remove(0).sample();
        assert_eq!((s.start_ms, s.outcome.as_str(), s.route.as_deref(), s.model.as_deref()), (1500.5, "ok", Some("/v1"), None));
        assert_eq!((s.metrics[0], s.metrics[1], s.stalls_count, s.buffered), (None, Some(7.25), Some(2), Some(true)));
        assert_eq!(s.server, vec![("q".to_string(), 4.0)]);
        assert_eq!((r[0].14.as_str(), r[0].15), ("id", 1));
        assert!(recs(&b[..b.len() - 1]).is_err(), "a truncated answer is an error, not a short read");
    }
}
