//! Read side: the metric registry, filters, `/api/summary` and `/api/timeseries`.
//!
//! Percentiles are exact nearest-rank over the selected rows (the value at rank ⌈q·n⌉ of the
//! sorted values): the window is read from SQLite, sorted in memory. Exact is affordable at the
//! volumes one collector holds and avoids explaining an error bound on a dashboard.

use rusqlite::{Connection, ToSql};
use serde::Serialize;
use serde_json::{json, Map, Value};

/// Metric name (the record's key, DESIGN.md §1) → SQL expression over `records`.
pub const METRICS: &[(&str, &str)] = &[
    ("ttft", "ttft"),
    ("ttfp", "ttfp"),
    ("perceivedTtft", "perceived_ttft"),
    ("total", "total"),
    ("perceivedTotal", "perceived_total"),
    ("tpot", "tpot"),
    ("itl.p50", "itl_p50"),
    ("itl.p95", "itl_p95"),
    ("itl.max", "itl_max"),
    ("renderDelay.p95", "render_delay_p95"),
    ("stalls.count", "stalls_count"),
    ("stalls.totalMs", "stalls_total_ms"),
];

/// The stage decomposition of one answer, in time order: name → SQL expression. Server stages
/// (from Server-Timing) come from the `stages` table and are reported next to these; they
/// overlap start→headers / headers→firstToken, so they are a breakdown, not extra segments.
pub const STAGES: &[(&str, &str)] = &[
    ("interaction→start", "-m_interaction"),
    ("start→headers", "m_headers"),
    ("headers→firstToken", "m_first_token - m_headers"),
    ("firstToken→firstPaint", "m_first_paint - m_first_token"),
    ("decode", "m_last_token - m_first_token"),
    ("lastToken→lastPaint", "m_last_paint - m_last_token"),
];

pub fn metric_expr(name: &str) -> Option<&'static str> {
    METRICS.iter().find(|(n, _)| *n == name).map(|(_, e)| *e)
}

/// Nearest-rank percentile of sorted values; `None` when empty.
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// Filters shared by every query. Times are `startEpochMs` (when the request started, on the
/// client's clock), in ms since the epoch; `from` inclusive, `to` exclusive.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    pub from: Option<f64>,
    pub to: Option<f64>,
    pub route: Option<String>,
    pub model: Option<String>,
    pub outcome: Option<String>,
}

impl Filter {
    fn sql(&self, prefix: &str) -> (String, Vec<Box<dyn ToSql>>) {
        let mut w = vec!["1=1".to_string()];
        let mut p: Vec<Box<dyn ToSql>> = Vec::new();
        if let Some(f) = self.from {
            w.push(format!("{prefix}start_ms >= ?"));
            p.push(Box::new(f));
        }
        if let Some(t) = self.to {
            w.push(format!("{prefix}start_ms < ?"));
            p.push(Box::new(t));
        }
        for (col, v) in [
            ("route", &self.route),
            ("model", &self.model),
            ("outcome", &self.outcome),
        ] {
            if let Some(v) = v {
                w.push(format!("{prefix}{col} = ?"));
                p.push(Box::new(v.clone()));
            }
        }
        (w.join(" AND "), p)
    }
}

/// Sorted non-null values of an expression over the filtered records.
pub fn values(c: &Connection, f: &Filter, expr: &str) -> rusqlite::Result<Vec<f64>> {
    let (w, p) = f.sql("");
    let sql = format!("SELECT v FROM (SELECT ({expr}) AS v FROM records WHERE {w}) WHERE v IS NOT NULL ORDER BY v");
    let mut st = c.prepare_cached(&sql)?;
    let rows = st.query_map(rusqlite::params_from_iter(p.iter()), |r| r.get::<_, f64>(0))?;
    rows.collect()
}

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Stat {
    pub count: usize,
    pub p50: Option<f64>,
    pub p75: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
}

pub fn stat(sorted: &[f64]) -> Stat {
    Stat {
        count: sorted.len(),
        p50: percentile(sorted, 0.50),
        p75: percentile(sorted, 0.75),
        p95: percentile(sorted, 0.95),
        p99: percentile(sorted, 0.99),
    }
}

/// Median of every stage (client segments and server stages) over the filtered records:
/// `(name, median, count)`, client segments first in time order, then server stages by name.
pub fn stage_medians(c: &Connection, f: &Filter) -> rusqlite::Result<Vec<(String, f64, usize)>> {
    let mut out = Vec::new();
    for (name, expr) in STAGES {
        let v = values(c, f, expr)?;
        if let Some(m) = percentile(&v, 0.5) {
            out.push((name.to_string(), m, v.len()));
        }
    }
    let (w, p) = f.sql("r.");
    let sql = format!(
        "SELECT s.name, s.dur FROM stages s JOIN records r ON r.id = s.record_id WHERE {w} ORDER BY s.name, s.dur"
    );
    let mut st = c.prepare_cached(&sql)?;
    let rows = st.query_map(rusqlite::params_from_iter(p.iter()), |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?))
    })?;
    let mut cur: Option<(String, Vec<f64>)> = None;
    let flush = |cur: Option<(String, Vec<f64>)>, out: &mut Vec<(String, f64, usize)>| {
        if let Some((n, v)) = cur {
            if let Some(m) = percentile(&v, 0.5) {
                out.push((format!("server:{n}"), m, v.len()));
            }
        }
    };
    for row in rows {
        let (n, d) = row?;
        match &mut cur {
            Some((cn, v)) if *cn == n => v.push(d),
            _ => {
                flush(cur.take(), &mut out);
                cur = Some((n, vec![d]));
            }
        }
    }
    flush(cur, &mut out);
    Ok(out)
}

/// Routes listed in the summary's per-route buffering table.
pub const MAX_ROUTES: usize = 20;

/// `/api/summary`.
pub fn summary(c: &Connection, f: &Filter) -> rusqlite::Result<Value> {
    let (w, p) = f.sql("");
    let mut metrics = Map::new();
    for (name, expr) in METRICS {
        metrics.insert(
            name.to_string(),
            serde_json::to_value(stat(&values(c, f, expr)?)).unwrap_or(Value::Null),
        );
    }
    let mut outcomes = Map::new();
    {
        let mut st = c.prepare_cached(&format!(
            "SELECT outcome, COUNT(*) FROM records WHERE {w} GROUP BY outcome"
        ))?;
        let rows = st.query_map(rusqlite::params_from_iter(p.iter()), |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
        })?;
        for r in rows {
            let (o, n) = r?;
            outcomes.insert(o, n.into());
        }
    }
    // Sums of values from beacons are TOTAL() (a float, never an integer overflow: a stored
    // i64::MAX once made every later SUM fail); counts are clamped at ingest anyway.
    let agg = format!(
        "SELECT COUNT(*), \
           SUM(stalls_count IS NOT NULL), SUM(stalls_count > 0), \
           SUM(buffered IS NOT NULL), SUM(buffered = 1), \
           TOTAL(stalls_network), TOTAL(stalls_render), \
           SUM(hidden = 1), \
           SUM(upstream_buffered IS NOT NULL), SUM(upstream_buffered = 1) \
         FROM records WHERE {w}"
    );
    let (count, stall_n, stalled, buf_n, buffered, net, render, hidden, up_n, upstream) =
        c.prepare_cached(&agg)?
            .query_row(rusqlite::params_from_iter(p.iter()), |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, Option<i64>>(1)?.unwrap_or(0),
                    r.get::<_, Option<i64>>(2)?.unwrap_or(0),
                    r.get::<_, Option<i64>>(3)?.unwrap_or(0),
                    r.get::<_, Option<i64>>(4)?.unwrap_or(0),
                    r.get::<_, f64>(5)?,
                    r.get::<_, f64>(6)?,
                    r.get::<_, Option<i64>>(7)?.unwrap_or(0),
                    r.get::<_, Option<i64>>(8)?.unwrap_or(0),
                    r.get::<_, Option<i64>>(9)?.unwrap_or(0),
                ))
            })?;
    let rate = |a: i64, n: i64| {
        if n > 0 {
            json!(a as f64 / n as f64)
        } else {
            Value::Null
        }
    };
    // Per route, the two kinds of buffering side by side: the UI's (`buffered`: render as
    // text arrives) and upstream (`upstreamBuffered`: a proxy or compression; fix the path).
    // The busiest routes first, bounded.
    let mut routes = Vec::new();
    {
        let mut st = c.prepare_cached(&format!(
            "SELECT route, COUNT(*), SUM(buffered IS NOT NULL), SUM(buffered = 1), \
               SUM(upstream_buffered IS NOT NULL), SUM(upstream_buffered = 1) \
             FROM records WHERE {w} GROUP BY route ORDER BY COUNT(*) DESC, route LIMIT {MAX_ROUTES}"
        ))?;
        let rows = st.query_map(rusqlite::params_from_iter(p.iter()), |r| {
            Ok((
                r.get::<_, Option<String>>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, Option<i64>>(2)?.unwrap_or(0),
                r.get::<_, Option<i64>>(3)?.unwrap_or(0),
                r.get::<_, Option<i64>>(4)?.unwrap_or(0),
                r.get::<_, Option<i64>>(5)?.unwrap_or(0),
            ))
        })?;
        for row in rows {
            let (route, n, bn, b, un, u) = row?;
            routes.push(json!({"route": route, "count": n, "bufferedRate": rate(b, bn), "upstreamBufferedRate": rate(u, un)}));
        }
    }
    let stages: Vec<Value> = stage_medians(c, f)?
        .into_iter()
        .map(|(n, m, k)| json!({"stage": n, "median": m, "count": k, "server": n.starts_with("server:")}))
        .collect();
    // Beacons are filtered by arrival time (they have no start time of their own).
    let (dropped, too_old, future): (f64, f64, f64) = {
        let mut q = "SELECT TOTAL(dropped), TOTAL(refused_old), TOTAL(refused_future) FROM beacons WHERE 1=1".to_string();
        let mut bp: Vec<f64> = Vec::new();
        if let Some(fr) = f.from {
            q += " AND received_ms >= ?";
            bp.push(fr);
        }
        if let Some(t) = f.to {
            q += " AND received_ms < ?";
            bp.push(t);
        }
        c.prepare_cached(&q)?
            .query_row(rusqlite::params_from_iter(bp.iter()), |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?
    };
    Ok(json!({
        "count": count,
        "metrics": metrics,
        "outcomes": outcomes,
        "stallRate": rate(stalled, stall_n),
        "bufferedRate": rate(buffered, buf_n),
        "upstreamBufferedRate": rate(upstream, up_n),
        "routes": routes,
        "hiddenCount": hidden,
        "stallCauses": {"network": total_json(net), "render": total_json(render)},
        "stages": stages,
        "dropped": total_json(dropped),
        "refused": {"tooOld": total_json(too_old), "future": total_json(future)},
        "percentiles": "exact nearest-rank: value at rank ceil(q*n) of the sorted window",
    }))
}

/// A TOTAL() of counts as JSON: an integer while exact (below 2^53), else the float.
fn total_json(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9_007_199_254_740_992.0 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

/// `/api/timeseries`: the q-percentile of `expr` per bucket of `bucket_ms` (by startEpochMs).
pub fn timeseries(
    c: &Connection,
    f: &Filter,
    expr: &str,
    q: f64,
    bucket_ms: f64,
) -> rusqlite::Result<Vec<Value>> {
    let (w, p) = f.sql("");
    let sql = format!(
        "SELECT b, v FROM (SELECT CAST(start_ms / ? AS INTEGER) AS b, ({expr}) AS v FROM records WHERE {w}) \
         WHERE v IS NOT NULL ORDER BY b, v"
    );
    let mut params: Vec<Box<dyn ToSql>> = vec![Box::new(bucket_ms)];
    params.extend(p);
    let mut st = c.prepare_cached(&sql)?;
    let rows = st.query_map(rusqlite::params_from_iter(params.iter()), |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?))
    })?;
    let mut out = Vec::new();
    let mut cur: Option<(i64, Vec<f64>)> = None;
    let emit = |cur: Option<(i64, Vec<f64>)>, out: &mut Vec<Value>| {
        if let Some((b, v)) = cur {
            out.push(json!({"t": b as f64 * bucket_ms, "n": v.len(), "value": percentile(&v, q)}));
        }
    };
    for row in rows {
        let (b, v) = row?;
        match &mut cur {
            Some((cb, vs)) if *cb == b => vs.push(v),
            _ => {
                emit(cur.take(), &mut out);
                cur = Some((b, vec![v]));
            }
        }
    }
    emit(cur, &mut out);
    Ok(out)
}

/// Histogram of two metrics on shared bins (the dashboard's ttft vs perceivedTtft chart).
pub fn histogram(
    c: &Connection,
    f: &Filter,
    names: &[&str],
    bins: usize,
) -> rusqlite::Result<Value> {
    let mut series = Vec::new();
    let mut hi: f64 = 0.0;
    for n in names {
        let v = match metric_expr(n) {
            Some(e) => values(c, f, e)?,
            None => Vec::new(),
        };
        // Clip the axis at p99 so one outlier does not squash every bar into the first bin.
        if let Some(p) = percentile(&v, 0.99) {
            hi = hi.max(p);
        }
        series.push((n.to_string(), v));
    }
    let bins = bins.clamp(1, 200);
    let width = if hi > 0.0 { hi / bins as f64 } else { 1.0 };
    let out: Vec<Value> = series
        .into_iter()
        .map(|(n, v)| {
            let mut counts = vec![0u64; bins];
            for x in &v {
                let i = ((x / width) as usize).min(bins - 1);
                counts[i] += 1;
            }
            json!({"metric": n, "count": v.len(), "counts": counts})
        })
        .collect();
    Ok(json!({"binWidth": width, "bins": bins, "series": out}))
}
