//! The storage seam: everything the collector asks of its store, in one place — append a
//! beacon's records, the dashboard's and API's reads (summary with its per-route buffering
//! table, timeseries, histogram), the alert engine's windows, maintenance (retention), health.
//!
//! Two stores behind it: SQLite (`store`, `pool`, `query`: the embedded default, one file, no
//! server) and ClickHouse (`clickhouse`: past one machine, any number of collectors on one
//! database). An enum rather than a trait object: two stores, async reads, and the match
//! below is the whole of the dispatch.

pub mod clickhouse;
pub mod sqlite;


use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::alerts::{Engine, Event, Source};
use crate::store::clickhouse::{ClickHouse, WriteError};
use crate::ingest::clock::Admitted;
use crate::ingest::Beacon;
use crate::query::plan::{Filter, QResult, Rows};
use crate::store::sqlite::pool::Pool;
use crate::store::sqlite::{Store, Stored};

#[derive(Clone)]
pub enum Storage {
    Sqlite { store: Store, pool: Arc<Pool> },
    ClickHouse(Arc<ClickHouse>),
}

/// What `/healthz` reports of the store.
pub struct Health {
    /// `ok`, `spooling` (ClickHouse: acknowledged batches wait on disk) or `failing`.
    pub status: &'static str,
    pub detail: Value,
}

impl Storage {
    /// Stores a validated beacon; resolves when it is durable (a 2xx may be sent).
    pub async fn write(
        &self,
        beacon: Beacon,
        client: Option<String>,
        received_ms: i64,
        admitted: Admitted,
    ) -> Result<Stored, WriteError> {
        match self {
            Storage::Sqlite { store, .. } => store
                .write(beacon, client, received_ms, admitted)
                .await
                .map_err(|msg| WriteError {
                    msg,
                    retry_after: None,
                }),
            Storage::ClickHouse(ch) => ch.write(beacon, client, received_ms, admitted).await,
        }
    }

    /// Once a second: maintenance (SQLite: rollups, retention, health probe; ClickHouse:
    /// retention).
    pub async fn tick(&self) {
        match self {
            Storage::Sqlite { store, .. } => store.tick(),
            Storage::ClickHouse(ch) => ch.tick().await,
        }
    }

    pub fn health(&self) -> Health {
        match self {
            Storage::Sqlite { store, .. } => {
                let h = store.health();
                Health {
                    status: if h.is_ok() { "ok" } else { "failing" },
                    detail: serde_json::json!({
                        "store": "sqlite",
                        "writer": h.as_ref().err().map_or("ok", |e| e.as_str()),
                    }),
                }
            }
            Storage::ClickHouse(ch) => {
                let (status, detail) = ch.health();
                Health { status, detail }
            }
        }
    }

    /// How this store's percentiles relate to exact ones (every read says so): both stores
    /// answer from the same sketches.
    pub fn percentiles(&self) -> &'static str {
        crate::query::PERCENTILES
    }

    pub fn query_budget(&self) -> Duration {
        match self {
            Storage::Sqlite { pool, .. } => pool.budget,
            Storage::ClickHouse(ch) => ch.query_budget,
        }
    }

    /// `/api/summary`.
    pub async fn summary(&self, f: Filter) -> QResult<Value> {
        match self {
            Storage::Sqlite { pool, .. } => pool.read(move |c| crate::query::summary(c, &f)).await,
            Storage::ClickHouse(ch) => ch.read(move |r| crate::query::summary(r, &f)).await,
        }
    }

    /// `/api/timeseries` (`Ok(Err(msg))`: a request to answer 400).
    pub async fn timeseries(
        &self,
        f: Filter,
        metric: usize,
        q: f64,
        bucket_ms: f64,
    ) -> QResult<Result<Vec<Value>, String>> {
        match self {
            Storage::Sqlite { pool, .. } => {
                pool.read(move |c| crate::query::timeseries(c, &f, metric, q, bucket_ms))
                    .await
            }
            Storage::ClickHouse(ch) => {
                ch.read(move |r| crate::query::timeseries(r, &f, metric, q, bucket_ms)).await
            }
        }
    }

    /// `/api/histogram`.
    pub async fn histogram(&self, f: Filter, names: Vec<String>, bins: usize) -> QResult<Value> {
        match self {
            Storage::Sqlite { pool, .. } => {
                pool.read(move |c| {
                    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                    crate::query::histogram(c, &f, &refs, bins)
                })
                .await
            }
            Storage::ClickHouse(ch) => {
                ch.read(move |r| {
                    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                    crate::query::histogram(r, &f, &refs, bins)
                })
                .await
            }
        }
    }

    /// One evaluation of the budgets at `now` (blocking: call from a blocking task).
    pub fn evaluate(&self, engine: &mut Engine, now: f64) -> QResult<Vec<Event>> {
        match self {
            Storage::Sqlite { pool, .. } => pool.alerts(|cx| {
                let src = DbSource::new(cx, &engine.budgets);
                Ok(engine.evaluate(&src, now))
            }),
            Storage::ClickHouse(ch) => {
                let r = ch.reader();
                let src = DbSource::new(&r, &engine.budgets);
                Ok(engine.evaluate(&src, now))
            }
        }
    }
}

/// The alert engine's view of a store: rollups (SQLite: on the engine's own connection). Every
/// budget shares one window, so one read of it (with every budget's metric) serves them all.
pub struct DbSource<'a> {
    cx: &'a dyn Rows,
    want: crate::query::agg::Want,
    /// The window last read, and its aggregate per model filter (`None`: every answer).
    last: std::cell::RefCell<Option<((f64, f64), Vec<(Option<String>, Option<crate::query::agg::Agg>)>)>>,
}

impl<'a> DbSource<'a> {
    pub fn new(cx: &'a dyn Rows, budgets: &[crate::alerts::Budget]) -> DbSource<'a> {
        let metrics = budgets
            .iter()
            .filter_map(|b| crate::query::agg::metric_index(&b.metric))
            .fold(0u16, |m, i| m | (1 << i));
        DbSource {
            cx,
            want: crate::query::agg::Want { metrics, stages: false },
            last: std::cell::RefCell::new(None),
        }
    }
}

impl Source for DbSource<'_> {
    fn quantile(&self, metric: &str, q: f64, from: f64, to: f64, model: Option<&str>) -> Option<f64> {
        let i = crate::query::agg::metric_index(metric)?;
        let mut last = self.last.borrow_mut();
        if last.as_ref().is_none_or(|(w, _)| *w != (from, to)) {
            *last = Some(((from, to), Vec::new()));
        }
        let (_, aggs) = last.as_mut()?;
        let model = model.map(str::to_string);
        if !aggs.iter().any(|(m, _)| *m == model) {
            // One read per window and model filter, whatever the number of budgets on it.
            let f = Filter {
                from: Some(from),
                to: Some(to),
                model: model.clone(),
                ..Filter::default()
            };
            let agg = crate::query::plan::total(self.cx, &f, self.want)
                .map(|t| t.agg)
                .map_err(|e| tracing::error!(error = %e, "alert query failed"))
                .ok();
            aggs.push((model.clone(), agg));
        }
        aggs.iter().find(|(m, _)| *m == model)?.1.as_ref()?.metrics[i].quantile(q)
    }
    fn stage_medians(&self, from: f64, to: f64) -> Vec<(String, f64)> {
        crate::query::window_stage_medians(self.cx, from, to).unwrap_or_else(|e| {
            tracing::error!(error = %e, "alert stage query failed");
            Vec::new()
        })
    }
}
