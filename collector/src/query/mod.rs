//! Read side: `/api/summary`, `/api/timeseries`, `/api/histogram`, and the alert engine's
//! values, all answered from rollups (`plan`) within a time budget.
//!
//! Percentiles are the log-histogram sketch's (`llm_rum::core::request::histogram`): the nearest-rank value
//! (rank ⌈q·n⌉ of the sorted values) within 1 % relative error (±0.01 ms below 0.01 ms). Counts,
//! rates and sums are exact.

pub mod agg;
pub mod plan;


use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::query::agg::{metric_index, Agg, Sample, Want, METRICS, N_STAGES, STAGES};
use crate::query::plan::{QResult, Rows, Sink};

pub use crate::query::plan::Filter;

/// How the API describes its percentiles.
pub const PERCENTILES: &str =
    "log-histogram sketch (DDSketch, alpha = 1%): within 1% of the exact nearest-rank value (rank ceil(q*n))";

/// Server stages listed in a summary at most (the most frequent; beacons choose the names).
pub const MAX_SUMMARY_SERVER_STAGES: usize = 32;

pub fn is_metric(name: &str) -> bool {
    metric_index(name).is_some()
}

pub fn metric_names() -> Vec<&'static str> {
    METRICS.iter().map(|m| m.name).collect()
}

/// Exact nearest-rank percentile of sorted values; `None` when empty (for the load generator's
/// own latency figures and the tests).
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Stat {
    pub count: u64,
    pub p50: Option<f64>,
    pub p75: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
}

fn stat(h: &llm_rum_sketch::LogHistogram) -> Stat {
    Stat {
        count: h.count() as u64,
        p50: h.quantile(0.50),
        p75: h.quantile(0.75),
        p95: h.quantile(0.95),
        p99: h.quantile(0.99),
    }
}

/// Median of every stage: `(name, median, count)`, client segments first in time order, then
/// server stages by name.
pub fn stage_medians(a: &Agg) -> Vec<(String, f64, u64)> {
    let mut out = Vec::new();
    for (k, name) in STAGES.iter().enumerate().take(N_STAGES) {
        if let Some(m) = a.stages[k].quantile(0.5) {
            out.push((name.to_string(), m, a.stages[k].count()));
        }
    }
    for (name, h) in a.top_server(MAX_SUMMARY_SERVER_STAGES) {
        if let Some(m) = h.quantile(0.5) {
            out.push((format!("server:{name}"), m, h.count() as u64));
        }
    }
    out
}

/// Routes listed in the summary's per-route buffering table.
pub const MAX_ROUTES: usize = 20;

/// Models listed in the summary's per-model table.
pub const MAX_MODELS: usize = 20;

/// `/api/summary`.
pub fn summary(cx: &dyn Rows, f: &Filter) -> QResult<Value> {
    let t = crate::query::plan::total_by_route(cx, f, Want::ALL)?;
    let a = &t.agg;
    let mut metrics = Map::new();
    for (i, name) in METRICS.iter().map(|m| m.name).enumerate() {
        metrics.insert(
            name.to_string(),
            serde_json::to_value(stat(&a.metrics[i])).unwrap_or(Value::Null),
        );
    }
    let outcomes: Map<String, Value> = t
        .outcomes
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(o, n)| (o.clone(), json!(n)))
        .collect();
    let rate = |x: u64, n: u64| {
        if n > 0 {
            json!(x as f64 / n as f64)
        } else {
            Value::Null
        }
    };
    let stages: Vec<Value> = stage_medians(a)
        .into_iter()
        .map(|(n, m, k)| json!({"stage": n, "median": m, "count": k, "server": n.starts_with("server:")}))
        .collect();
    // Per route, the two kinds of buffering side by side: the UI's (`buffered`: render as
    // text arrives) and upstream (`upstreamBuffered`: a proxy or compression; fix the path).
    // The busiest routes first, bounded; counted from the same rollup rows as everything else.
    let mut by_route: Vec<_> = t.routes.iter().flatten().filter(|(_, b)| b.n > 0).collect();
    by_route.sort_by(|a, b| b.1.n.cmp(&a.1.n).then_with(|| a.0.cmp(b.0)));
    let routes: Vec<Value> = by_route
        .into_iter()
        .take(MAX_ROUTES)
        .map(|(route, b)| {
            json!({"route": route, "count": b.n, "bufferedRate": rate(b.buffered, b.buf_n),
                   "upstreamBufferedRate": rate(b.upstream, b.up_n)})
        })
        .collect();
    // Per model: the questions a team asks first ("which model is slow for our users?"),
    // the busiest first, bounded, from the same rows. `model: null` holds answers whose
    // stream named none and whose app set none.
    let mut by_model: Vec<_> = t.models.iter().flatten().filter(|(_, a)| a.n > 0).collect();
    by_model.sort_by(|a, b| b.1.n.cmp(&a.1.n).then_with(|| a.0.cmp(b.0)));
    let q = |a: &Agg, m: &str| {
        let h = &a.metrics[metric_index(m).expect("a known metric")];
        json!({"p50": h.quantile(0.5), "p95": h.quantile(0.95)})
    };
    let models: Vec<Value> = by_model
        .into_iter()
        .take(MAX_MODELS)
        .map(|(model, a)| {
            json!({"model": model, "count": a.n, "ttft": q(a, "ttft"), "perceivedTtft": q(a, "perceivedTtft"),
                   "stallRate": rate(a.stalled, a.stall_n), "bufferedRate": rate(a.buffered, a.buf_n),
                   "upstreamBufferedRate": rate(a.upstream, a.up_n)})
        })
        .collect();
    let (dropped, too_old, future) = cx.beacon_totals(f)?;
    Ok(json!({
        "count": a.n,
        "metrics": metrics,
        "outcomes": outcomes,
        "stallRate": rate(a.stalled, a.stall_n),
        "bufferedRate": rate(a.buffered, a.buf_n),
        "upstreamBufferedRate": rate(a.upstream, a.up_n),
        "routes": routes,
        "models": models,
        "hiddenCount": a.hidden,
        "stallCauses": {"network": total_json(a.net), "render": total_json(a.render)},
        "stages": stages,
        "dropped": total_json(dropped),
        "refused": {"tooOld": total_json(too_old), "future": total_json(future)},
        "percentiles": PERCENTILES,
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

/// Whole-minute buckets a timeseries may have at most (each is planned on its own).
pub const MAX_BUCKETS: f64 = 100_000.0;

/// Per-bucket aggregates of one metric.
struct Buckets {
    bucket_ms: f64,
    metric: usize,
    by: BTreeMap<i64, Agg>,
}

impl Sink for Buckets {
    fn agg(&mut self, t: f64, _route: &str, _model: &str, _outcome: &str, a: Agg) {
        let b = (t / self.bucket_ms).floor() as i64;
        self.by.entry(b).or_default().metrics[self.metric].merge(&a.metrics[self.metric]);
    }
    fn sample(&mut self, s: Sample) {
        let b = (s.start_ms / self.bucket_ms).floor() as i64;
        if let Some(v) = s.metrics[self.metric] {
            self.by.entry(b).or_default().metrics[self.metric].record(v);
        }
    }
}

/// `/api/timeseries`: the q-percentile of a metric per bucket of `bucket_ms` (by startEpochMs,
/// aligned to the epoch). Buckets of whole minutes come from rollups; others from the records.
pub fn timeseries(cx: &dyn Rows, f: &Filter, metric: usize, q: f64, bucket_ms: f64) -> QResult<Result<Vec<Value>, String>> {
    let Some((a, b)) = crate::query::plan::window(cx, f, bucket_ms)? else {
        return Ok(Ok(Vec::new()));
    };
    let mut pieces = Vec::new();
    if bucket_ms % 60_000.0 == 0.0 {
        let (b0, b1) = ((a / bucket_ms).floor(), (b / bucket_ms).ceil());
        if b1 - b0 > MAX_BUCKETS {
            return Ok(Err(format!(
                "{} buckets of {} s in this window (at most {MAX_BUCKETS}): use a larger bucket or a shorter window",
                b1 - b0,
                bucket_ms / 1000.0
            )));
        }
        let planner = cx.planner(f, a, b)?;
        let mut k = b0;
        while k < b1 {
            let lo = (k * bucket_ms).max(a);
            let hi = ((k + 1.0) * bucket_ms).min(b);
            planner.plan(lo, hi, &mut pieces);
            k += 1.0;
        }
        cx.refine(&planner, f, &mut pieces)?;
    } else {
        // Not whole minutes: no rollup fits a bucket, so the records are read (within the
        // query budget).
        pieces.push(crate::query::plan::Piece::Raw { from: a, to: b });
    }
    let mut sink = Buckets {
        bucket_ms,
        metric,
        by: BTreeMap::new(),
    };
    cx.run(&pieces, f, Want::metric(metric), &mut sink)?;
    Ok(Ok(sink
        .by
        .into_iter()
        .filter(|(_, a)| a.metrics[metric].count() > 0)
        .map(|(k, a)| {
            let h = &a.metrics[metric];
            json!({"t": k as f64 * bucket_ms, "n": h.count(), "value": h.quantile(q)})
        })
        .collect()))
}

/// Histogram of metrics on shared bins (the dashboard's ttft vs perceivedTtft chart), drawn from
/// the sketches: each bucket's samples land in the bin of its representative value (within 1 %
/// of each sample).
pub fn histogram(cx: &dyn Rows, f: &Filter, names: &[&str], bins: usize) -> QResult<Value> {
    let idx: Vec<usize> = names.iter().filter_map(|n| metric_index(n)).collect();
    let want = Want {
        metrics: idx.iter().fold(0, |m, i| m | (1 << i)),
        stages: false,
    };
    let t = crate::query::plan::total(cx, f, want)?;
    let mut hi: f64 = 0.0;
    for &i in &idx {
        // Clip the axis at p99 so one outlier does not squash every bar into the first bin.
        if let Some(p) = t.agg.metrics[i].quantile(0.99) {
            hi = hi.max(p);
        }
    }
    let bins = bins.clamp(1, 200);
    let width = if hi > 0.0 { hi / bins as f64 } else { 1.0 };
    let out: Vec<Value> = names
        .iter()
        .zip(&idx)
        .map(|(n, &i)| {
            let h = &t.agg.metrics[i];
            let mut counts = vec![0u64; bins];
            for (v, c) in h.buckets() {
                counts[((v / width) as usize).min(bins - 1)] += c as u64;
            }
            json!({"metric": n, "count": h.count(), "counts": counts})
        })
        .collect();
    Ok(json!({"binWidth": width, "bins": bins, "series": out}))
}

/// Stage medians over `[from, to)` (what the alert engine compares when an alert fires).
pub fn window_stage_medians(cx: &dyn Rows, from: f64, to: f64) -> QResult<Vec<(String, f64)>> {
    let f = Filter {
        from: Some(from),
        to: Some(to),
        ..Filter::default()
    };
    let t = crate::query::plan::total(cx, &f, Want::STAGES)?;
    Ok(stage_medians(&t.agg)
        .into_iter()
        .map(|(n, m, _)| (n, m))
        .collect())
}
