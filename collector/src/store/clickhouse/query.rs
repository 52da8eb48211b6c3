//! The read side on ClickHouse: the same answers as `crate::query` (same JSON), computed by
//! ClickHouse over the records.
//!
//! Percentiles are ClickHouse's `quantileTDigest` (t-digest, Float32 results). Its error is in
//! rank, not value, and it interpolates between neighbouring values: the stated bound is that
//! each answer lies between the sorted values of rank ⌈q·n⌉ − 1 − ⌈n/100⌉ and ⌈q·n⌉ + 1 +
//! ⌈n/100⌉ (checked against exact nearest-rank percentiles in tests/clickhouse.rs, measured at
//! 1 M records in the README). Counts and sums are exact. Copies of a record (retries) collapse
//! at read time (`FINAL`) until ClickHouse's background merge has collapsed them on disk.

use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::store::clickhouse::http::{lit, ChError};
use crate::store::clickhouse::rows::day;
use crate::store::clickhouse::ClickHouse;
use crate::query::agg::{METRICS, STAGES};
use crate::query::plan::{Filter, QResult, QueryError};

/// How the API describes its percentiles on ClickHouse.
pub const PERCENTILES: &str = "ClickHouse quantileTDigest: between the values of rank ceil(q*n) -/+ (1 + ceil(n/100)) (exact counts)";

/// The client stages (`agg::STAGES`, same order) as SQL over the mark columns.
const STAGE_SQL: [&str; 6] = [
    "-m_interaction",
    "m_headers",
    "m_first_token - m_headers",
    "m_first_paint - m_first_token",
    "m_last_token - m_first_token",
    "m_last_paint - m_last_token",
];

const SUMMARY_QS: [f64; 4] = [0.50, 0.75, 0.95, 0.99];

fn num(x: f64) -> String {
    // Display never uses an exponent, so this is always a SQL number literal.
    format!("{x}")
}

/// `WHERE …` for a filter: the window (with the hours and days it spans, so the primary key
/// and the partitions prune), then the keys.
pub fn where_(f: &Filter) -> String {
    let mut w = vec!["1".to_string()];
    if let Some(a) = f.from.filter(|x| x.is_finite()) {
        w.push(format!("start_ms >= {}", num(a)));
        w.push(format!("hour >= {}", (a / 3_600_000.0).floor().max(0.0)));
        w.push(format!("day >= toDate({})", lit(&day(a.max(0.0)))));
    }
    if let Some(b) = f.to.filter(|x| x.is_finite()) {
        w.push(format!("start_ms < {}", num(b)));
        w.push(format!("hour <= {}", (b / 3_600_000.0).floor().max(0.0)));
        w.push(format!("day <= toDate({})", lit(&day(b.max(0.0)))));
    }
    for (col, v) in [
        ("route", &f.route),
        ("model", &f.model),
        ("provider", &f.provider),
        ("outcome", &f.outcome),
    ] {
        if let Some(v) = v {
            w.push(format!("{col} = {}", lit(v)));
        }
    }
    w.join(" AND ")
}

fn f64_of(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
    .filter(|x: &f64| x.is_finite())
}

fn u64_of(v: &Value) -> u64 {
    f64_of(v).unwrap_or(0.0) as u64
}

/// A Float32 percentile as the API shows it: to the microsecond (f32 noise cut off).
fn ms(v: &Value) -> Option<f64> {
    f64_of(v).map(|x| (x * 1000.0).round() / 1000.0)
}

fn rate(x: u64, n: u64) -> Value {
    if n > 0 {
        json!(x as f64 / n as f64)
    } else {
        Value::Null
    }
}

impl ClickHouse {
    /// Rows of a read (`JSONCompact`'s `data`), within the query budget.
    pub async fn rows(&self, sql: &str) -> QResult<Vec<Vec<Value>>> {
        let budget = self.query_budget;
        let settings = [
            ("max_execution_time", format!("{}", budget.as_secs_f64().ceil().max(1.0))),
            ("output_format_json_quote_64bit_integers", "0".to_string()),
        ];
        let sql = format!("{sql} FORMAT JSONCompact");
        let body = self
            .http
            .run(&sql, Default::default(), &settings, budget + Duration::from_secs(1))
            .await
            .map_err(|e| match e {
                ChError::Timeout => QueryError::Budget,
                // TIMEOUT_EXCEEDED: ClickHouse stopped it at max_execution_time.
                ChError::Server(_, m) if m.contains("Code: 159") => QueryError::Budget,
                e => QueryError::Failed(e.to_string()),
            })?;
        let v: Value = serde_json::from_slice(&body)
            .map_err(|e| QueryError::Failed(format!("ClickHouse answer: {e}")))?;
        Ok(v["data"]
            .as_array()
            .map(|rows| {
                rows.iter()
                    .map(|r| r.as_array().cloned().unwrap_or_default())
                    .collect()
            })
            .unwrap_or_default())
    }

    fn records(&self) -> String {
        format!("{}.records FINAL", self.http.target.database)
    }

    /// The client stages' columns: count and median of each (`agg::STAGES` order).
    fn stage_cols() -> Vec<String> {
        STAGE_SQL
            .iter()
            .map(|e| format!("count({e}), quantileTDigest(0.5)({e})"))
            .collect()
    }

    /// `(name, median, count)` of the client stages seen, from `stage_cols`' values.
    fn client_stages(row: &[Value]) -> Vec<(String, f64, u64)> {
        let mut out = Vec::new();
        for (k, name) in STAGES.iter().enumerate() {
            let n = row.get(2 * k).map_or(0, u64_of);
            if let (true, Some(m)) = (n > 0, row.get(2 * k + 1).and_then(ms)) {
                out.push((name.to_string(), m, n));
            }
        }
        out
    }

    /// The most frequent Server-Timing stages, by name: `(server:name, median, count)`.
    async fn server_stages(&self, w: &str) -> QResult<Vec<(String, f64, u64)>> {
        let mut server = self
            .rows(&format!(
                "SELECT name, quantileTDigest(0.5)(dur), count() FROM {} ARRAY JOIN server_names AS name, server_durs AS dur \
                 WHERE {w} GROUP BY name ORDER BY count() DESC, name LIMIT {}",
                self.records(),
                crate::query::MAX_SUMMARY_SERVER_STAGES
            ))
            .await?;
        server.sort_by(|a, b| a[0].as_str().cmp(&b[0].as_str()));
        Ok(server
            .into_iter()
            .filter_map(|r| Some((format!("server:{}", r[0].as_str()?), ms(&r[1])?, u64_of(&r[2]))))
            .collect())
    }

    /// Stage medians: `(name, median, count)`, client stages in time order, then the most
    /// frequent server stages by name (as `query::stage_medians`).
    async fn stages(&self, w: &str) -> QResult<Vec<(String, f64, u64)>> {
        let client = format!("SELECT {} FROM {} WHERE {w}", Self::stage_cols().join(", "), self.records());
        let (client, server) = tokio::try_join!(self.rows(&client), self.server_stages(w))?;
        let mut out = Self::client_stages(client.first().map_or(&[][..], |r| &r[..]));
        out.extend(server);
        Ok(out)
    }

    /// `/api/summary`: six statements at once (ClickHouse runs each `FINAL` read on one
    /// thread, so concurrent statements are what uses every core).
    pub async fn summary(&self, f: &Filter) -> QResult<Value> {
        let w = where_(f);
        let qs = SUMMARY_QS.map(|q| q.to_string()).join(",");
        let mut cols = vec![
            "count()".to_string(),
            "count(stalls_count)".into(),
            "sum(stalls_count > 0)".into(),
            "count(buffered)".into(),
            "sum(buffered)".into(),
            "count(upstream_buffered)".into(),
            "sum(upstream_buffered)".into(),
            "sum(hidden)".into(),
            "sum(stalls_network)".into(),
            "sum(stalls_render)".into(),
        ];
        let fixed = cols.len();
        for col in METRICS.iter().map(|m| m.column) {
            cols.push(format!("count({col}), quantilesTDigest({qs})({col})"));
        }
        let stages_at = cols.len() + METRICS.len();
        cols.extend(Self::stage_cols());
        let main = format!("SELECT {} FROM {} WHERE {w}", cols.join(", "), self.records());
        let outcomes = format!("SELECT outcome, count() FROM {} WHERE {w} GROUP BY outcome", self.records());
        let routes = format!(
            "SELECT route, count(), count(buffered), sum(buffered), count(upstream_buffered), sum(upstream_buffered) \
             FROM {} WHERE {w} GROUP BY route ORDER BY count() DESC, isNotNull(route), route LIMIT {}",
            self.records(),
            crate::query::MAX_ROUTES
        );
        // Per model, the busiest first (as `query::summary`): `model: null` holds answers whose
        // stream named none and whose app set none.
        let models = format!(
            "SELECT model, count(), count(ttft), quantilesTDigest(0.5, 0.95)(ttft), \
             count(perceived_ttft), quantilesTDigest(0.5, 0.95)(perceived_ttft), \
             count(stalls_count), sum(stalls_count > 0), count(buffered), sum(buffered), \
             count(upstream_buffered), sum(upstream_buffered) \
             FROM {} WHERE {w} GROUP BY model ORDER BY count() DESC, isNotNull(model), model LIMIT {}",
            self.records(),
            crate::query::MAX_MODELS
        );
        // Beacons have no start time: their window is the received time.
        let mut bw = vec!["1".to_string()];
        if let Some(a) = f.from.filter(|x| x.is_finite()) {
            bw.push(format!("received_ms >= {}", num(a)));
        }
        if let Some(b) = f.to.filter(|x| x.is_finite()) {
            bw.push(format!("received_ms < {}", num(b)));
        }
        let beacons = format!(
            "SELECT sum(dropped), sum(refused_old), sum(refused_future) FROM {}.beacons FINAL WHERE {}",
            self.http.target.database,
            bw.join(" AND ")
        );
        let (row, outcomes, routes, models, server, b) = tokio::try_join!(
            self.rows(&main),
            self.rows(&outcomes),
            self.rows(&routes),
            self.rows(&models),
            self.server_stages(&w),
            self.rows(&beacons),
        )?;
        let row = row.into_iter().next().unwrap_or_default();
        let c = |i: usize| row.get(i).map_or(0, u64_of);
        let mut metrics = Map::new();
        for (i, name) in METRICS.iter().map(|m| m.name).enumerate() {
            let n = c(fixed + 2 * i);
            let q = row.get(fixed + 2 * i + 1).and_then(Value::as_array).cloned().unwrap_or_default();
            let p = |k: usize| if n > 0 { q.get(k).and_then(ms) } else { None };
            metrics.insert(
                name.to_string(),
                json!({"count": n, "p50": p(0), "p75": p(1), "p95": p(2), "p99": p(3)}),
            );
        }
        let outcomes: Map<String, Value> = outcomes
            .into_iter()
            .filter_map(|r| Some((r.first()?.as_str()?.to_string(), json!(u64_of(r.get(1)?)))))
            .collect();
        let routes: Vec<Value> = routes
            .into_iter()
            .map(|r| {
                let c = |i: usize| r.get(i).map_or(0, u64_of);
                json!({"route": r[0], "count": c(1), "bufferedRate": rate(c(3), c(2)),
                       "upstreamBufferedRate": rate(c(5), c(4))})
            })
            .collect();
        let models: Vec<Value> = models
            .into_iter()
            .map(|r| {
                let c = |i: usize| r.get(i).map_or(0, u64_of);
                let q = |n: usize, i: usize| {
                    let v = r.get(i).and_then(Value::as_array).cloned().unwrap_or_default();
                    let p = |k: usize| if c(n) > 0 { v.get(k).and_then(ms) } else { None };
                    json!({"p50": p(0), "p95": p(1)})
                };
                json!({"model": r[0], "count": c(1), "ttft": q(2, 3), "perceivedTtft": q(4, 5),
                       "stallRate": rate(c(7), c(6)), "bufferedRate": rate(c(9), c(8)),
                       "upstreamBufferedRate": rate(c(11), c(10))})
            })
            .collect();
        let mut stages = Self::client_stages(row.get(stages_at..).unwrap_or(&[]));
        stages.extend(server);
        let stages: Vec<Value> = stages
            .into_iter()
            .map(|(n, m, k)| json!({"stage": n, "median": m, "count": k, "server": n.starts_with("server:")}))
            .collect();
        let b = b.into_iter().next().unwrap_or_default();
        let bc = |i: usize| b.get(i).map_or(0, u64_of);
        Ok(json!({
            "count": c(0),
            "metrics": metrics,
            "outcomes": outcomes,
            "stallRate": rate(c(2), c(1)),
            "bufferedRate": rate(c(4), c(3)),
            "upstreamBufferedRate": rate(c(6), c(5)),
            "routes": routes,
            "models": models,
            "hiddenCount": c(7),
            "stallCauses": {"network": c(8), "render": c(9)},
            "stages": stages,
            "dropped": bc(0),
            "refused": {"tooOld": bc(1), "future": bc(2)},
            "percentiles": PERCENTILES,
        }))
    }

    /// `/api/timeseries`: the q-percentile of a metric per bucket of `bucket_ms`.
    pub async fn timeseries(
        &self,
        f: &Filter,
        metric: usize,
        q: f64,
        bucket_ms: f64,
    ) -> QResult<Result<Vec<Value>, String>> {
        let col = METRICS[metric].column;
        let max = crate::query::MAX_BUCKETS as u64;
        let rows = self
            .rows(&format!(
                "SELECT floor(start_ms / {b}) AS k, count(), quantileTDigest({q})({col}) FROM {} \
                 WHERE {} AND {col} IS NOT NULL GROUP BY k ORDER BY k LIMIT {}",
                self.records(),
                where_(f),
                max + 1,
                b = num(bucket_ms),
                q = num(q),
            ))
            .await?;
        if rows.len() as u64 > max {
            return Ok(Err(format!(
                "more than {max} buckets of {} s in this window: use a larger bucket or a shorter window",
                bucket_ms / 1000.0
            )));
        }
        Ok(Ok(rows
            .into_iter()
            .map(|r| {
                json!({"t": f64_of(&r[0]).unwrap_or(0.0) * bucket_ms, "n": u64_of(&r[1]), "value": ms(&r[2])})
            })
            .collect()))
    }

    /// `/api/histogram`: counts on shared bins (width: the largest p99 / bins).
    pub async fn histogram(&self, f: &Filter, names: &[String], bins: usize) -> QResult<Value> {
        let w = where_(f);
        let cols: Vec<&str> = names
            .iter()
            .filter_map(|n| crate::query::agg::metric_index(n))
            .map(|i| METRICS[i].column)
            .collect();
        let p99: Vec<String> = cols.iter().map(|c| format!("quantileTDigest(0.99)({c})")).collect();
        let row = self
            .rows(&format!("SELECT {} FROM {} WHERE {w}", p99.join(", "), self.records()))
            .await?
            .into_iter()
            .next()
            .unwrap_or_default();
        let hi = row.iter().filter_map(f64_of).fold(0.0, f64::max);
        let bins = bins.clamp(1, 200);
        let width = if hi > 0.0 { hi / bins as f64 } else { 1.0 };
        // Every metric's bins in one scan: the metrics side by side as an array, joined out.
        let mut counts = vec![vec![0u64; bins]; cols.len()];
        let rows = self
            .rows(&format!(
                "SELECT k, least(toUInt64(floor(v / {})), {}) AS b, count() FROM {} \
                 ARRAY JOIN [{}] AS v, range({}) AS k WHERE {w} AND isNotNull(v) GROUP BY k, b",
                num(width),
                bins - 1,
                self.records(),
                cols.iter().map(|c| format!("toNullable(toFloat64({c}))")).collect::<Vec<_>>().join(", "),
                cols.len()
            ))
            .await?;
        for r in rows {
            let (k, b) = (u64_of(&r[0]) as usize, u64_of(&r[1]) as usize);
            if let Some(c) = counts.get_mut(k) {
                c[b.min(bins - 1)] += u64_of(&r[2]);
            }
        }
        let series: Vec<Value> = names
            .iter()
            .zip(counts)
            .map(|(n, c)| json!({"metric": n, "count": c.iter().sum::<u64>(), "counts": c}))
            .collect();
        Ok(json!({"binWidth": width, "bins": bins, "series": series}))
    }

    /// The alert engine's percentile over `[from, to)`.
    pub async fn quantile(
        &self,
        metric: usize,
        q: f64,
        from: f64,
        to: f64,
        model: Option<&str>,
    ) -> QResult<Option<f64>> {
        let col = METRICS[metric].column;
        let f = Filter {
            from: Some(from),
            to: Some(to),
            model: model.map(str::to_string),
            ..Filter::default()
        };
        let row = self
            .rows(&format!(
                "SELECT count({col}), quantileTDigest({})({col}) FROM {} WHERE {}",
                num(q),
                self.records(),
                where_(&f)
            ))
            .await?
            .into_iter()
            .next()
            .unwrap_or_default();
        Ok(if row.first().map_or(0, u64_of) > 0 {
            row.get(1).and_then(ms)
        } else {
            None
        })
    }

    /// Stage medians over `[from, to)` (the alert engine's stage growth).
    pub async fn window_stage_medians(&self, from: f64, to: f64) -> QResult<Vec<(String, f64)>> {
        let f = Filter {
            from: Some(from),
            to: Some(to),
            ..Filter::default()
        };
        Ok(self
            .stages(&where_(&f))
            .await?
            .into_iter()
            .map(|(n, m, _)| (n, m))
            .collect())
    }
}
