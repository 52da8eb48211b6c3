//! Which stored aggregates answer a window, and reading them within a time budget.
//!
//! A window `[from, to)` is cut into the coarsest periods that lie inside it and are complete
//! at their level (days, then hours, then minutes; see `rollup`), and what is left — the parts
//! of the window that are not whole minutes — is read from the raw records. The answer is the
//! same set of records as a scan of the window; only the percentiles carry the sketch's error.

use std::collections::HashSet;
use std::time::Instant;

use rusqlite::{Connection, ToSql};

use crate::query::agg::{Agg, Sample, Want};
use crate::store::sqlite::rollup::LEVEL_MS;

/// Filters shared by every query. Times are `startEpochMs` (when the request started, on the
/// client's clock, corrected for skew), in ms since the epoch; `from` inclusive, `to` exclusive.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    pub from: Option<f64>,
    pub to: Option<f64>,
    pub route: Option<String>,
    pub model: Option<String>,
    /// GenAI's provider name. Not a rollup key: a read filtered by it scans the raw records
    /// (bounded by the query budget like any read).
    pub provider: Option<String>,
    pub outcome: Option<String>,
}

impl Filter {
    /// Filtered by a key a period may have folded away (see `rollup::OTHER`).
    fn by_key(&self) -> bool {
        self.route.is_some() || self.model.is_some()
    }

    /// Filtered by a field no rollup holds: only raw records can answer.
    fn raw_only(&self) -> bool {
        self.provider.is_some()
    }

    /// The keys a rollup row holds, by column (the one list every store's SQL is made from).
    pub fn rollup_keys(&self) -> [(&'static str, Option<&str>); 3] {
        [("route", self.route.as_deref()), ("model", self.model.as_deref()), ("outcome", self.outcome.as_deref())]
    }

    /// Every key by column: the rollup keys and `provider` (raw records only).
    pub fn keys(&self) -> impl Iterator<Item = (&'static str, Option<&str>)> {
        self.rollup_keys().into_iter().chain([("provider", self.provider.as_deref())])
    }

    /// ` AND route = ? …` and its values.
    fn keys_sql(&self) -> (String, Vec<String>) {
        let mut w = String::new();
        let mut p = Vec::new();
        for (col, v) in self.keys() {
            if let Some(v) = v {
                w += &format!(" AND {col} = ?");
                p.push(v.to_string());
            }
        }
        (w, p)
    }
}

/// Why a read gave up.
#[derive(Debug)]
pub enum QueryError {
    /// It ran past its time budget (`--query-budget`).
    Budget,
    Sql(rusqlite::Error),
    /// Anything else (a read that panicked, a stored value of the wrong type).
    Failed(String),
}

impl From<rusqlite::Error> for QueryError {
    fn from(e: rusqlite::Error) -> Self {
        match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::OperationInterrupted) => QueryError::Budget,
            _ => QueryError::Sql(e),
        }
    }
}

impl std::fmt::Display for QueryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QueryError::Budget => write!(f, "the query ran past its time budget"),
            QueryError::Sql(e) => write!(f, "{e}"),
            QueryError::Failed(e) => write!(f, "{e}"),
        }
    }
}

pub type QResult<T> = Result<T, QueryError>;

/// A read connection and the instant its current query must be done by.
pub struct Ctx<'a> {
    pub c: &'a Connection,
    pub deadline: Instant,
}

impl Ctx<'_> {
    pub fn check(&self) -> QResult<()> {
        if Instant::now() >= self.deadline {
            Err(QueryError::Budget)
        } else {
            Ok(())
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    /// Rollup rows of `level` with `from <= period < to`.
    Rollup { level: usize, from: i64, to: i64 },
    /// Raw records with `from <= start_ms < to`.
    Raw { from: f64, to: f64 },
}

/// Plans windows against what the rollups hold right now.
pub struct Planner {
    /// Periods per level whose rows are stale (SQLite: hours and days until compaction
    /// rebuilds them; ClickHouse: minutes with records newer than their row).
    dirty: [HashSet<i64>; 3],
    /// Overflowed periods per level (only loaded for reads filtered by route or model).
    overflow: [HashSet<i64>; 3],
    by_key: bool,
    raw_only: bool,
    /// The coarsest level the store keeps (`LEVEL_MS` index): SQLite all three, ClickHouse
    /// minutes only.
    top: usize,
}

impl Planner {
    /// For reads within `[lo, hi)` (ms) filtered as `f`.
    pub fn new(c: &Connection, f: &Filter, lo: f64, hi: f64) -> rusqlite::Result<Planner> {
        let span = |level: usize| {
            let len = LEVEL_MS[level] as f64;
            ((lo / len).floor() as i64, (hi / len).ceil() as i64)
        };
        let mut dirty: [HashSet<i64>; 3] = Default::default();
        for (level, set) in dirty.iter_mut().enumerate().skip(1) {
            let (a, b) = span(level);
            *set = crate::store::sqlite::rollup::dirty(c, level, a, b)?;
        }
        let mut overflow: [HashSet<i64>; 3] = Default::default();
        if f.by_key() {
            let mut st = c.prepare_cached(
                "SELECT period FROM rollup_overflow WHERE level = ?1 AND period >= ?2 AND period < ?3",
            )?;
            for (level, set) in overflow.iter_mut().enumerate() {
                let (a, b) = span(level);
                for p in st.query_map(rusqlite::params![level as i64, a, b], |r| r.get::<_, i64>(0))? {
                    set.insert(p?);
                }
            }
        }
        Ok(Planner {
            dirty,
            overflow,
            by_key: f.by_key(),
            raw_only: f.raw_only(),
            top: LEVEL_MS.len() - 1,
        })
    }

    /// A store that keeps minute rows only: `dirty` and `overflow` are minutes.
    pub fn minutes(f: &Filter, dirty: HashSet<i64>, overflow: HashSet<i64>) -> Planner {
        Planner {
            dirty: [dirty, HashSet::new(), HashSet::new()],
            overflow: [overflow, HashSet::new(), HashSet::new()],
            by_key: f.by_key(),
            raw_only: f.raw_only(),
            top: 0,
        }
    }

    /// Appends the pieces that cover `[a, b)` exactly.
    pub fn plan(&self, a: f64, b: f64, out: &mut Vec<Piece>) {
        self.range(a, b, self.top, out)
    }

    /// A raw piece inside one minute whose rest of the minute holds no matching record reads
    /// that minute's row instead: the row holds exactly the same records. Typical: the minute
    /// in progress at the end of a window that ends now (what every alert evaluation reads).
    fn refine(&self, cx: &Ctx, f: &Filter, pieces: &mut [Piece]) -> QResult<()> {
        let (kw, kp) = f.keys_sql();
        let len = LEVEL_MS[0] as f64;
        for piece in pieces.iter_mut() {
            let Piece::Raw { from, to } = *piece else { continue };
            let m = (from / len).floor();
            let (m0, m1) = (m * len, (m + 1.0) * len);
            if to > m1 || !self.usable(0, m as i64) {
                continue;
            }
            let mut st = cx.c.prepare_cached(&format!(
                "SELECT EXISTS(SELECT 1 FROM records WHERE start_ms >= ? AND start_ms < ?{kw})"
            ))?;
            let mut empty = |a: f64, b: f64| -> QResult<bool> {
                if a >= b {
                    return Ok(true);
                }
                let mut p: Vec<Box<dyn ToSql>> = vec![Box::new(a), Box::new(b)];
                p.extend(kp.iter().map(|v| Box::new(v.clone()) as Box<dyn ToSql>));
                let any: bool = st.query_row(rusqlite::params_from_iter(p.iter()), |r| r.get(0))?;
                Ok(!any)
            };
            if empty(m0, from)? && empty(to, m1)? {
                *piece = Piece::Rollup {
                    level: 0,
                    from: m as i64,
                    to: m as i64 + 1,
                };
            }
        }
        Ok(())
    }

    fn usable(&self, level: usize, p: i64) -> bool {
        !self.raw_only
            && !self.dirty[level].contains(&p)
            && !(self.by_key && self.overflow[level].contains(&p))
    }

    fn range(&self, a: f64, b: f64, level: usize, out: &mut Vec<Piece>) {
        if a >= b {
            return;
        }
        let len = LEVEL_MS[level] as f64;
        let (p0, p1) = ((a / len).ceil() as i64, (b / len).floor() as i64);
        if p0 >= p1 {
            return self.below(a, b, level, out);
        }
        self.below(a, p0 as f64 * len, level, out);
        for p in p0..p1 {
            if self.usable(level, p) {
                push(out, Piece::Rollup { level, from: p, to: p + 1 });
            } else {
                self.below(p as f64 * len, (p + 1) as f64 * len, level, out);
            }
        }
        self.below(p1 as f64 * len, b, level, out);
    }

    /// `[a, b)` one level finer (raw records below minutes).
    fn below(&self, a: f64, b: f64, level: usize, out: &mut Vec<Piece>) {
        if a >= b {
            return;
        }
        if level == 0 {
            push(out, Piece::Raw { from: a, to: b });
        } else {
            self.range(a, b, level - 1, out);
        }
    }
}

/// Appends, joining a piece to the previous one when they are contiguous and alike.
fn push(out: &mut Vec<Piece>, p: Piece) {
    match (out.last_mut(), &p) {
        (Some(Piece::Rollup { level: l, to, .. }), Piece::Rollup { level, from, to: t })
            if l == level && to == from =>
        {
            *to = *t;
        }
        (Some(Piece::Raw { to, .. }), Piece::Raw { from, to: t }) if to == from => *to = *t,
        _ => out.push(p),
    }
}

/// The span of the stored records, `[lo, hi)` ms (the earliest start to just past the
/// latest); `None` when there are none.
pub fn data_bounds(c: &Connection) -> rusqlite::Result<Option<(f64, f64)>> {
    // Two statements: SQLite answers a lone MIN() or MAX() from one end of the index, but
    // both in one statement scan all of it (1–2 s at ten million records).
    let one = |sql: &str| c.query_row(sql, [], |r| r.get::<_, Option<f64>>(0));
    let lo = one("SELECT MIN(start_ms) FROM records")?;
    let hi = one("SELECT MAX(start_ms) FROM records")?;
    Ok(lo.zip(hi.map(|h| h + 1.0)))
}

/// The window of a filter, bounded by the stored data; an open end is widened to a multiple of
/// `unit` ms (whole days for a total, so it can use day rows; whole buckets for a series).
/// `None`: nothing can match.
pub fn window(r: &dyn Rows, f: &Filter, unit: f64) -> QResult<Option<(f64, f64)>> {
    let Some((lo, hi)) = r.bounds(f)? else {
        return Ok(None);
    };
    let lo = (lo / unit).floor() * unit;
    let hi = (hi / unit).ceil() * unit;
    let a = f.from.map_or(lo, |x| x.max(lo));
    let b = f.to.map_or(hi, |x| x.min(hi));
    Ok((a < b).then_some((a, b)))
}

/// A store's side of a planned read: what `query`'s reads (summary, timeseries, histogram, the
/// alert engine's windows) ask of SQLite and ClickHouse alike, so the plan and the answers are
/// written once. Blocking: call from a blocking task.
pub trait Rows {
    /// `[lo, hi)` of the stored records' starts (`data_bounds`); `None` when there are none.
    /// A store may look only within `f`'s window (the window is clipped to it anyway, and the
    /// same records lie in the result).
    fn bounds(&self, f: &Filter) -> QResult<Option<(f64, f64)>>;
    /// The planner for reads within `[lo, hi)` filtered as `f`.
    fn planner(&self, f: &Filter, lo: f64, hi: f64) -> QResult<Planner>;
    /// Improves a plan with what only the store can check (SQLite: `Planner::refine`).
    fn refine(&self, _p: &Planner, _f: &Filter, _pieces: &mut [Piece]) -> QResult<()> {
        Ok(())
    }
    /// Reads every piece into `sink`, decoding only what `want` needs.
    fn run(&self, pieces: &[Piece], f: &Filter, want: Want, sink: &mut dyn Sink) -> QResult<()>;
    /// Dropped, too-old and future counts of the beacons received in the filter's window.
    fn beacon_totals(&self, f: &Filter) -> QResult<(f64, f64, f64)>;
}

impl Rows for Ctx<'_> {
    fn bounds(&self, _f: &Filter) -> QResult<Option<(f64, f64)>> {
        // Both ends of the index: no need to narrow.
        Ok(data_bounds(self.c)?)
    }
    fn planner(&self, f: &Filter, lo: f64, hi: f64) -> QResult<Planner> {
        Ok(Planner::new(self.c, f, lo, hi)?)
    }
    fn refine(&self, p: &Planner, f: &Filter, pieces: &mut [Piece]) -> QResult<()> {
        p.refine(self, f, pieces)
    }
    fn run(&self, pieces: &[Piece], f: &Filter, want: Want, sink: &mut dyn Sink) -> QResult<()> {
        run(self, pieces, f, want, sink)
    }
    fn beacon_totals(&self, f: &Filter) -> QResult<(f64, f64, f64)> {
        beacon_totals(self, f)
    }
}

/// Dropped and refused counts of the beacons received in the window (beacons have no start
/// time of their own): whole minutes from the beacon rollups, the rest from the beacons.
fn beacon_totals(cx: &Ctx, f: &Filter) -> QResult<(f64, f64, f64)> {
    let m0 = f.from.map(|x| (x / 60_000.0).ceil() as i64);
    let m1 = f.to.map(|x| (x / 60_000.0).floor() as i64);
    if let (Some(a), Some(b)) = (m0, m1) {
        if a >= b {
            return raw_beacons(cx.c, f.from, f.to);
        }
    }
    let (d, o, fu): (f64, f64, f64) = cx.c.prepare_cached(
        "SELECT TOTAL(dropped), TOTAL(refused_old), TOTAL(refused_future) FROM beacon_rollups \
         WHERE minute >= ?1 AND minute < ?2",
    )?
    .query_row([m0.unwrap_or(i64::MIN), m1.unwrap_or(i64::MAX)], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })?;
    let mut sum = (d, o, fu);
    for (a, b) in [
        (f.from, m0.map(|m| m as f64 * 60_000.0)),
        (m1.map(|m| m as f64 * 60_000.0), f.to),
    ] {
        if let (Some(a), Some(b)) = (a, b) {
            if a < b {
                let e = raw_beacons(cx.c, Some(a), Some(b))?;
                sum = (sum.0 + e.0, sum.1 + e.1, sum.2 + e.2);
            }
        }
    }
    Ok(sum)
}

fn raw_beacons(c: &Connection, from: Option<f64>, to: Option<f64>) -> QResult<(f64, f64, f64)> {
    Ok(c.prepare_cached(
        "SELECT TOTAL(dropped), TOTAL(refused_old), TOTAL(refused_future) FROM beacons \
         WHERE received_ms >= ?1 AND received_ms < ?2",
    )?
    .query_row(
        [from.unwrap_or(f64::NEG_INFINITY), to.unwrap_or(f64::INFINITY)],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?)
}

/// What the pieces' rows are handed to.
pub trait Sink {
    /// A rollup row: the period's start (ms), the key's route and model ('' for none,
    /// `rollup::OTHER` for keys folded away) and outcome, the aggregate.
    fn agg(&mut self, t: f64, route: &str, model: &str, outcome: &str, a: Agg);
    /// A raw record.
    fn sample(&mut self, s: Sample);
}

/// `Rows::run` on SQLite.
fn run(cx: &Ctx, pieces: &[Piece], f: &Filter, want: Want, sink: &mut dyn Sink) -> QResult<()> {
    let (kw, kp) = f.keys_sql();
    for piece in pieces {
        cx.check()?;
        match *piece {
            Piece::Rollup { level, from, to } => {
                let mut st = cx.c.prepare_cached(&format!(
                    "SELECT period, route, model, outcome, data FROM rollups WHERE level = ? AND period >= ? AND period < ?{kw}"
                ))?;
                let mut p: Vec<Box<dyn ToSql>> =
                    vec![Box::new(level as i64), Box::new(from), Box::new(to)];
                p.extend(kp.iter().map(|v| Box::new(v.clone()) as Box<dyn ToSql>));
                let mut rows = st.query(rusqlite::params_from_iter(p.iter()))?;
                let len = LEVEL_MS[level] as f64;
                let mut k = 0u32;
                while let Some(r) = rows.next()? {
                    k += 1;
                    if k % 64 == 0 {
                        cx.check()?;
                    }
                    let period: i64 = r.get(0)?;
                    let route: String = r.get(1)?;
                    let model: String = r.get(2)?;
                    let outcome: String = r.get(3)?;
                    let data = blob(r, 4)?;
                    if let Some(a) = Agg::decode(data, want) {
                        sink.agg(period as f64 * len, &route, &model, &outcome, a);
                    }
                }
                if level == 0 {
                    deltas(cx, from, to, f, want, sink)?;
                }
            }
            Piece::Raw { from, to } => {
                let mut st = cx.c.prepare_cached(&crate::store::sqlite::samples::select(
                    want,
                    &format!("start_ms >= ? AND start_ms < ?{kw}"),
                ))?;
                let mut p: Vec<Box<dyn ToSql>> = vec![Box::new(from), Box::new(to)];
                p.extend(kp.iter().map(|v| Box::new(v.clone()) as Box<dyn ToSql>));
                let mut rows = st.query(rusqlite::params_from_iter(p.iter()))?;
                let mut k = 0u32;
                while let Some(r) = rows.next()? {
                    k += 1;
                    if k % 1024 == 0 {
                        cx.check()?;
                    }
                    sink.sample(crate::store::sqlite::samples::sample(r)?);
                }
            }
        }
    }
    Ok(())
}

fn blob<'r>(r: &'r rusqlite::Row, i: usize) -> QResult<&'r [u8]> {
    r.get_ref(i)?
        .as_blob()
        .map_err(|e| QueryError::Failed(format!("rollup data: {e}")))
}

/// The commits' parts not yet merged into the minute rows `from <= minute < to` (a second or
/// so of them), filtered like the rows.
fn deltas(cx: &Ctx, from: i64, to: i64, f: &Filter, want: Want, sink: &mut dyn Sink) -> QResult<()> {
    let mut st = cx
        .c
        .prepare_cached("SELECT minute, data FROM rollup_delta WHERE minute >= ?1 AND minute < ?2")?;
    let mut rows = st.query([from, to])?;
    let keep = |v: &Option<String>, x: &str| v.as_deref().is_none_or(|v| v == x);
    while let Some(r) = rows.next()? {
        cx.check()?;
        let minute: i64 = r.get(0)?;
        for ((route, model, outcome), a) in crate::store::sqlite::rollup::decode_delta(blob(r, 1)?, want).unwrap_or_default() {
            if keep(&f.route, &route) && keep(&f.model, &model) && keep(&f.outcome, &outcome) {
                sink.agg(minute as f64 * LEVEL_MS[0] as f64, &route, &model, &outcome, a);
            }
        }
    }
    Ok(())
}

/// How a route's answers were buffered: records, then (carrying the field, true) for the
/// UI's `buffered` and for `upstreamBuffered`. Exact: rollup rows count them.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Buffering {
    pub n: u64,
    pub buf_n: u64,
    pub buffered: u64,
    pub up_n: u64,
    pub upstream: u64,
}

impl Buffering {
    fn add(&mut self, a: &Agg) {
        self.n += a.n;
        self.buf_n += a.buf_n;
        self.buffered += a.buffered;
        self.up_n += a.up_n;
        self.upstream += a.upstream;
    }
    fn add_sample(&mut self, s: &Sample) {
        self.n += 1;
        for (n, k, v) in [
            (&mut self.buf_n, &mut self.buffered, s.buffered),
            (&mut self.up_n, &mut self.upstream, s.upstream_buffered),
        ] {
            if let Some(v) = v {
                *n += 1;
                *k += v as u64;
            }
        }
    }
}

/// One aggregate of everything in the filter's window, with record counts per outcome (and,
/// when asked for, the buffering counts per route: `None` for records without one).
#[derive(Default)]
pub struct Total {
    pub agg: Agg,
    pub outcomes: std::collections::BTreeMap<String, u64>,
    pub routes: Option<std::collections::HashMap<Option<String>, Buffering>>,
    /// When asked for: everything per model (`None` for records without one), as `agg`.
    pub models: Option<std::collections::HashMap<Option<String>, Agg>>,
    want: Option<Want>,
}

impl Sink for Total {
    fn agg(&mut self, _t: f64, route: &str, model: &str, outcome: &str, a: Agg) {
        *self.outcomes.entry(outcome.to_string()).or_default() += a.n;
        // Rollup keys store a missing route or model as ''; a record's is never empty.
        let key = |k: &str| (!k.is_empty()).then(|| k.to_string());
        if let Some(routes) = &mut self.routes {
            routes.entry(key(route)).or_default().add(&a);
        }
        if let Some(models) = &mut self.models {
            model_entry(models, key(model)).merge(&a, usize::MAX);
        }
        self.agg.merge(&a, usize::MAX);
    }
    fn sample(&mut self, s: Sample) {
        *self.outcomes.entry(s.outcome.clone()).or_default() += 1;
        if let Some(routes) = &mut self.routes {
            routes.entry(s.route.clone().filter(|r| !r.is_empty())).or_default().add_sample(&s);
        }
        let want = self.want.unwrap_or(Want::ALL);
        if let Some(models) = &mut self.models {
            model_entry(models, s.model.clone().filter(|m| !m.is_empty())).add_wanted(&s, want);
        }
        self.agg.add_wanted(&s, want);
    }
}

/// A model's aggregate; past `MAX_KEYS` models (over a long window) the rest share
/// `rollup::OTHER`'s, so a read's memory stays bounded whatever the models seen.
fn model_entry(models: &mut std::collections::HashMap<Option<String>, Agg>, m: Option<String>) -> &mut Agg {
    let m = if models.len() >= crate::store::sqlite::rollup::MAX_KEYS && !models.contains_key(&m) {
        Some(crate::store::sqlite::rollup::OTHER.to_string())
    } else {
        m
    };
    models.entry(m).or_default()
}

/// Everything in the filter's window, aggregated (what `want` asks for).
pub fn total(cx: &dyn Rows, f: &Filter, want: Want) -> QResult<Total> {
    total_of(cx, f, want, false)
}

/// `total`, with the buffering counts per route and everything per model.
pub fn total_by_route(cx: &dyn Rows, f: &Filter, want: Want) -> QResult<Total> {
    total_of(cx, f, want, true)
}

fn total_of(cx: &dyn Rows, f: &Filter, want: Want, by_key: bool) -> QResult<Total> {
    let mut t = Total {
        want: Some(want),
        routes: by_key.then(Default::default),
        models: by_key.then(Default::default),
        ..Total::default()
    };
    if let Some((a, b)) = window(cx, f, LEVEL_MS[2] as f64)? {
        let planner = cx.planner(f, a, b)?;
        let mut pieces = Vec::new();
        planner.plan(a, b, &mut pieces);
        cx.refine(&planner, f, &mut pieces)?;
        cx.run(&pieces, f, want, &mut t)?;
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planner(dirty_hours: std::ops::Range<i64>, dirty_days: &[i64], overflow_minutes: &[i64], by_key: bool) -> Planner {
        Planner {
            dirty: [HashSet::new(), dirty_hours.collect(), dirty_days.iter().copied().collect()],
            overflow: [overflow_minutes.iter().copied().collect(), HashSet::new(), HashSet::new()],
            by_key,
            raw_only: false,
            top: LEVEL_MS.len() - 1,
        }
    }

    const M: f64 = 60_000.0;
    const H: f64 = 3_600_000.0;
    const D: f64 = 86_400_000.0;

    /// The pieces tile the window exactly: no gap, no overlap, in order.
    fn tiles(pieces: &[Piece], a: f64, b: f64) {
        let mut at = a;
        for p in pieces {
            let (lo, hi) = match *p {
                Piece::Rollup { level, from, to } => {
                    let len = LEVEL_MS[level] as f64;
                    (from as f64 * len, to as f64 * len)
                }
                Piece::Raw { from, to } => (from, to),
            };
            assert_eq!(lo, at, "{pieces:?}");
            assert!(hi > lo);
            at = hi;
        }
        assert_eq!(at, b.max(a));
    }

    #[test]
    fn coarsest_complete_periods_inside_the_window_and_raw_edges() {
        // Day 3 and hours from 80 on are dirty (not compacted yet).
        let p = planner(80..200, &[3], &[], false);
        let (a, b) = (1.5 * D + 30_000.0, 3.0 * D + 10.0 * H + 5.0 * M + 1.0);
        let mut out = Vec::new();
        p.plan(a, b, &mut out);
        tiles(&out, a, b);
        assert_eq!(
            out,
            vec![
                Piece::Raw { from: a, to: 1.5 * D + M },
                Piece::Rollup { level: 0, from: 2161, to: 2220 }, // rest of hour 36
                Piece::Rollup { level: 1, from: 37, to: 48 },     // rest of day 1
                Piece::Rollup { level: 2, from: 2, to: 3 },
                Piece::Rollup { level: 1, from: 72, to: 80 },     // day 3: hours up to 80
                Piece::Rollup { level: 0, from: 80 * 60, to: 82 * 60 + 5 },
                Piece::Raw { from: 3.0 * D + 10.0 * H + 5.0 * M, to: b },
            ]
        );
        // A window inside one minute is all raw; an empty one is nothing.
        let mut out = Vec::new();
        p.plan(M + 1.0, M + 2.0, &mut out);
        assert_eq!(out, vec![Piece::Raw { from: M + 1.0, to: M + 2.0 }]);
        let mut out = Vec::new();
        p.plan(5.0, 5.0, &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn overflowed_minutes_are_read_raw_only_when_filtered_by_key() {
        let (a, b) = (10.0 * M, 14.0 * M);
        for (by_key, expect) in [
            (false, vec![Piece::Rollup { level: 0, from: 10, to: 14 }]),
            (
                true,
                vec![
                    Piece::Rollup { level: 0, from: 10, to: 12 },
                    Piece::Raw { from: 12.0 * M, to: 13.0 * M },
                    Piece::Rollup { level: 0, from: 13, to: 14 },
                ],
            ),
        ] {
            let p = planner(0..1, &[0], &[12], by_key);
            let mut out = Vec::new();
            p.plan(a, b, &mut out);
            tiles(&out, a, b);
            assert_eq!(out, expect);
        }
    }
}
