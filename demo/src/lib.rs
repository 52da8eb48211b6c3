//! llm-rum-demo as a library: the binary (main.rs) and the integration tests start the same
//! server through [`serve`].
//!
//! Module owners: `scenario` (presets, parameters, schedule), `answer` (text, tokens),
//! `formats` (bytes per provider format), `generate` (timed writes, body, client-gone),
//! `timer` (precise deadlines), `truth` (ground-truth records and request log),
//! `trace` (traceparent, ids),
//! `http` (routes, CORS, static files), `nginx` (a real nginx in front, for tests).

pub mod answer;
pub mod formats;
pub mod generate;
pub mod http;
pub mod nginx;
pub mod scenario;
pub mod timer;
pub mod trace;
pub mod truth;

use axum::serve::ListenerExt;

/// Serves `router` on `listener` until `stop` turns true. Accepted sockets get TCP_NODELAY:
/// Nagle's algorithm would hold back small token writes while an ACK is outstanding and merge
/// them, which would falsify inter-token timing.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let _ = axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            let _ = stop.wait_for(|v| *v).await;
        })
        .await;
}
