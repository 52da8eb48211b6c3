//! The pure core: parsers, the per-request timeline, metric math and record encoding.
//!
//! No wasm-bindgen, web-sys or js-sys in here: time (performance.now() milliseconds) and
//! randomness come in as arguments, so every line is tested natively with `cargo test`.

pub mod config;
pub mod formats;
pub mod hex;
pub mod jsonscan;
pub mod jsonw;
pub mod math;
pub mod paint;
pub mod probe;
pub mod record;
pub mod seen;
pub mod server_timing;
pub mod session;
pub mod sse;
pub mod stats;
pub mod stream;
pub mod timeline;
pub mod traceparent;
pub mod transport;
pub mod utf8;
#[cfg(test)]
mod test_rng;
#[cfg(test)]
mod timeline_tests;
