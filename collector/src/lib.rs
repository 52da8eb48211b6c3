//! llm-rum-collector: receives llm-rum beacons, stores them in SQLite (or ClickHouse, past one
//! machine), answers percentile queries, evaluates budgets into alerts, and serves a dashboard.
//!
//! The tree, by role (one owner per file; no import circle between files, tests/layers.rs):
//!
//! - `ingest/`: decoding and validating beacons (`mod`), the safe character set of names that
//!   become keys (`keys`), what is kept of a record as received (`raw`), client clock skew and
//!   the accepted time window (`clock`).
//! - `store/`: the storage seam (`mod`: what the collector asks of its store) and the two
//!   stores behind it. `sqlite/`: the group-committing writer and its health (`mod`), tables
//!   and migrations (`schema`), bounded deletes (`retention`), per-period aggregates the
//!   writer keeps (`rollup`), records read back as contributions (`samples`), read connections
//!   and query budgets (`pool`). `clickhouse/`: its HTTP client (`http`), schema (`schema.sql`),
//!   rows (`rows`), the on-disk spool (`spool`), a read's filter as SQL (`query`), answers as
//!   typed rows and records (`answer`), the minute rollups and their builder (`rollup`), the
//!   shared reads' store side (`reader`), the writer (`mod`).
//! - `query/`: what records add up to (`agg`: the metric table, counts and sketches), which
//!   rollups and records answer a window (`plan`, with `Rows`: what a store answers it with),
//!   the reads over either store (`mod`: summary/timeseries/histogram).
//! - `alerts/`: the budget engine, pure (`mod`), Prometheus alerting rules from budgets
//!   (`rules`).
//! - `serve/`: connections (`mod`: accept loop, cap, timeouts), routes, CORS, rate limit,
//!   security headers (`http`), the client behind trusted proxies (`proxy`), the embedded
//!   dashboard (`dashboard`).
//! - `metrics/`: the Prometheus exposition (`mod`), what was refused or closed, and why
//!   (`counters`).
//! - `cli` (flags and config file), `log` (logging that cannot stop the collector).
//!
//! Not shipped here: the tests' and load generator's HTTP client and PRNG (`testkit/`), the
//! load generator (`loadgen/`).

pub mod alerts;
pub mod cli;
pub mod ingest;
pub mod log;
pub mod metrics;
pub mod query;
pub mod serve;
pub mod store;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;

/// A running collector: its address and the tasks serving it.
pub struct Running {
    pub addr: SocketAddr,
    pub state: serve::http::Shared,
}

/// Opens the store, binds, and starts serving, evaluating alerts and ticking the writer's
/// maintenance on the current runtime.
pub async fn start(cfg: cli::Config) -> Result<Running, String> {
    let counters = Arc::new(metrics::counters::Counters::default());
    let retain_ms = (cfg.retain_days > 0.0).then_some(cfg.retain_days * 86_400_000.0);
    let metrics = Arc::new(metrics::Metrics::new(&cfg));
    let storage = match &cfg.clickhouse {
        None => {
            let store = store::sqlite::Store::open(
                &cfg.db,
                cfg.sync,
                store::sqlite::WriterConfig {
                    retain_ms,
                    counters: counters.clone(),
                    metrics: Some(metrics.clone()),
                },
            )?;
            let pool = store::sqlite::pool::Pool::open(
                &cfg.db,
                cfg.read_connections,
                Duration::from_secs_f64(cfg.query_budget_s),
            )
            .map_err(|e| format!("open readers: {e}"))?;
            store::Storage::Sqlite {
                store,
                pool: Arc::new(pool),
            }
        }
        Some(target) => store::Storage::ClickHouse(
            store::clickhouse::ClickHouse::open(store::clickhouse::Settings {
                target: target.clone(),
                spool_dir: cfg.spool.clone(),
                spool_max_bytes: (cfg.spool_max_mb * 1_048_576.0) as u64,
                query_budget: Duration::from_secs_f64(cfg.query_budget_s),
                retain_ms,
                counters: counters.clone(),
                metrics: Some(metrics.clone()),
            })
            .await?,
        ),
    };
    let engine = alerts::Engine::new(
        cfg.budgets.clone(),
        cfg.alert_window_s * 1000.0,
        cfg.sustain_s * 1000.0,
    );
    let listener = TcpListener::bind(&cfg.listen)
        .await
        .map_err(|e| format!("listen {}: {e}", cfg.listen))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let limits = serve::Limits {
        header: Duration::from_secs_f64(cfg.header_timeout_s),
        idle: Duration::from_secs_f64(cfg.idle_timeout_s),
        max_connections: serve::fit_to_fd_limit(cfg.max_connections),
    };
    tracing::info!(
        %addr,
        store = %cfg.clickhouse.as_ref().map_or(format!("sqlite {}", cfg.db.display()), |t| format!("clickhouse {}/{}", t.base, t.database)),
        max_connections = limits.max_connections,
        header_timeout_s = cfg.header_timeout_s,
        body_timeout_s = cfg.body_timeout_s,
        idle_timeout_s = cfg.idle_timeout_s,
        retain_days = cfg.retain_days,
        trusted_proxies = cfg.trusted_proxies.len(),
        "collector starting"
    );
    let registry = Arc::new(serve::Registry::new(limits, counters.clone()));
    let up = storage.clone();
    metrics.collect_collector(
        counters.clone(),
        Box::new(move || up.health().status != "failing"),
        registry.clone(),
    );
    let state = Arc::new(serve::http::AppState::new(
        cfg,
        storage,
        engine,
        metrics,
        counters,
        registry.clone(),
        addr,
    ));
    tokio::spawn(serve::serve(
        listener,
        serve::http::router(state.clone()),
        registry,
    ));
    tokio::spawn(serve::http::alert_loop(state.clone()));
    let store = state.storage.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tick.tick().await;
            store.tick().await;
        }
    });
    Ok(Running { addr, state })
}
