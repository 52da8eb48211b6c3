//! The pure core: every metric is defined here, once. No wasm-bindgen, web-sys or js-sys:
//! time (`performance.now()` milliseconds) and randomness come in as arguments, so every line
//! is tested natively with `cargo test`.
//!
//! The units, leaves first: each imports only from those above it, never back (tests/layers.rs
//! checks this and that no files import each other in a circle). The numbers are the order a
//! request's data flows through the stages.
//!
//! ```text
//! util/      size-driven stand-ins: JSON read/write, decimal, hex, math, truncate, URL split
//! clock.rs   the page clock's step, inferred from the readings (a leaf)
//! stalls.rs  Stall, Stalls, Blame: filled by request/ and paint/, reported by record/ (a leaf)
//! config.rs  the SDK configuration as the core sees it (one JSON object from the facade)
//! stream/    1. bytes → content: framing (SSE, NDJSON, text), UTF-8, formats, text tail
//! trace/     traceparent out; Server-Timing and traceresponse back
//! paint/     3. what the person saw: arrivals matched to painted frames
//! request/   2. one request's Timeline: marks, content, statistics, paint tracking
//! record/    4. the v1 wire record: encode, the visibility rule, budgets
//! session.rs the per-page state the wasm surface holds: handles → timelines → records
//! ```
//!
//! The beacon queue (when and what to send to the collector, retries) is not here: it decides
//! no metric and only moves finished record texts, so it lives in the transport chunk that
//! pages with a collector load (js/deliver/queue.js; issue 14: −2.0 KB brotli of wasm on
//! every page).

pub mod clock;
pub mod config;
pub mod paint;
pub mod record;
pub mod request;
pub mod session;
pub mod stalls;
pub mod stream;
pub mod trace;
pub mod util;

pub use config::Config;
pub use request::Outcome;
pub use session::Session;
