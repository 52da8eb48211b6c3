//! llm-rum-collector: receives llm-rum beacons, stores them in SQLite, answers percentile
//! queries, evaluates budgets into alerts, and serves a dashboard.
//!
//! Modules, one owner each: `cli` (flags and config file), `ingest` (decode/validate beacons),
//! `store` (schema, the group-committing writer), `query` (summary/timeseries), `alerts`
//! (budget engine, pure), `dashboard` (the embedded page), `http` (routes, CORS, limits),
//! `client` (a minimal HTTP/1.1 client for the tests and the load generator).

pub mod alerts;
pub mod cli;
pub mod client;
pub mod dashboard;
pub mod http;
pub mod ingest;
pub mod query;
pub mod store;

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;

/// A running collector: its address and the tasks serving it.
pub struct Running {
    pub addr: SocketAddr,
    pub state: http::Shared,
}

/// Opens the store, binds, and starts serving and evaluating alerts on the current runtime.
pub async fn start(cfg: cli::Config) -> Result<Running, String> {
    let st = store::Store::open(&cfg.db, cfg.sync)?;
    let reader = store::open_reader(&cfg.db).map_err(|e| format!("open reader: {e}"))?;
    let engine = alerts::Engine::new(
        cfg.budgets.clone(),
        cfg.alert_window_s * 1000.0,
        cfg.sustain_s * 1000.0,
    );
    let listener = TcpListener::bind(&cfg.listen)
        .await
        .map_err(|e| format!("listen {}: {e}", cfg.listen))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let state = Arc::new(http::AppState::new(cfg, st, reader, engine));
    let app = http::router(state.clone());
    tokio::spawn(async move {
        if let Err(e) = axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        {
            eprintln!("llm-rum-collector: server error: {e}");
        }
    });
    tokio::spawn(http::alert_loop(state.clone()));
    Ok(Running { addr, state })
}
