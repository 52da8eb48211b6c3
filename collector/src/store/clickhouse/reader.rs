//! `query::plan::Rows` on ClickHouse: the store side of the shared reads (`query::summary`,
//! timeseries, histogram, the alert engine's windows) — whole minutes from the rollup rows
//! (`rollup`), the rest from the records, on a blocking thread.

/// `query::plan::Rows` on ClickHouse: the shared reads' store side, run on a blocking thread
/// (each question one statement, awaited on the runtime).
use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::body::Bytes;

use crate::query::agg::{Agg, Want};
use crate::query::plan::{Filter, Piece, Planner, QResult, QueryError, Rows, Sink};
use crate::store::clickhouse::answer::{collapse, recs, sample_cols, RowBinary};
use crate::store::clickhouse::http::lit;
use crate::store::clickhouse::query::where_;
use crate::store::clickhouse::rollup::{MINUTE_MS, SETTLE_S};
use crate::store::clickhouse::ClickHouse;
use crate::store::sqlite::rollup::{key_of, Key};

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
        for (col, v) in f.rollup_keys() {
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
        let mut r = RowBinary::new(&rows);
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
