//! llm-rum-collector: receives llm-rum beacons, stores them in SQLite (or ClickHouse, past one
//! machine), answers percentile queries, evaluates budgets into alerts, and serves a dashboard.
//!
//! Modules, one owner each: `cli` (flags and config file), `ingest` (decode/validate beacons),
//! `keys` (the safe character set of names that become keys), `raw` (what is kept of a record
//! as received), `clock` (client clock skew, the accepted time window), `proxy` (the client
//! behind trusted proxies), `storage` (the seam: what the collector asks of its store, SQLite or
//! ClickHouse), `clickhouse` (the ClickHouse store: HTTP client, schema, spool, reads), `store`
//! (SQLite's group-committing writer, its health), `schema`
//! (tables and migrations), `retention` (bounded deletes, incremental vacuum), `agg` (what
//! records add up to: counts and log-histogram sketches), `rollup` (per-period aggregates the
//! writer keeps), `samples` (records read back as contributions), `plan` (which rollups and
//! records answer a window), `pool` (read connections, the alert engine's own, query budgets),
//! `query` (summary/timeseries/histogram), `alerts` (budget engine, pure), `metrics` (the
//! Prometheus exposition), `rules` (Prometheus alerting rules from budgets), `dashboard` (the embedded page),
//! `http` (routes, CORS, rate limit, security headers), `serve` (connections: accept loop,
//! cap, timeouts), `counters` (what was refused or closed, and why), `log` (logging that
//! cannot stop the collector), `client` (a minimal HTTP/1.1 client for the tests and the load
//! generator), `rng` (their PRNG).

pub mod agg;
pub mod alerts;
pub mod clickhouse;
pub mod cli;
pub mod client;
pub mod clock;
pub mod counters;
pub mod dashboard;
pub mod http;
pub mod ingest;
pub mod keys;
pub mod log;
pub mod metrics;
pub mod plan;
pub mod pool;
pub mod proxy;
pub mod query;
pub mod raw;
pub mod retention;
pub mod rng;
pub mod rollup;
pub mod rules;
pub mod samples;
pub mod schema;
pub mod serve;
pub mod storage;
pub mod store;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;

/// A running collector: its address and the tasks serving it.
pub struct Running {
    pub addr: SocketAddr,
    pub state: http::Shared,
}

/// Opens the store, binds, and starts serving, evaluating alerts and ticking the writer's
/// maintenance on the current runtime.
pub async fn start(cfg: cli::Config) -> Result<Running, String> {
    let counters = Arc::new(counters::Counters::default());
    let retain_ms = (cfg.retain_days > 0.0).then_some(cfg.retain_days * 86_400_000.0);
    let metrics = Arc::new(metrics::Metrics::new(&cfg));
    let storage = match &cfg.clickhouse {
        None => {
            let store = store::Store::open(
                &cfg.db,
                cfg.sync,
                store::WriterConfig {
                    retain_ms,
                    counters: counters.clone(),
                    metrics: Some(metrics.clone()),
                },
            )?;
            let pool = pool::Pool::open(
                &cfg.db,
                cfg.read_connections,
                Duration::from_secs_f64(cfg.query_budget_s),
            )
            .map_err(|e| format!("open readers: {e}"))?;
            storage::Storage::Sqlite {
                store,
                pool: Arc::new(pool),
            }
        }
        Some(target) => storage::Storage::ClickHouse(
            clickhouse::ClickHouse::open(clickhouse::Settings {
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
    let state = Arc::new(http::AppState::new(
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
        http::router(state.clone()),
        registry,
    ));
    tokio::spawn(http::alert_loop(state.clone()));
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
