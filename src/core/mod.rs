//! The pure core: parsers, the per-request timeline, metric math and record encoding.
//!
//! No wasm-bindgen, web-sys or js-sys in here: time (performance.now() milliseconds) and
//! randomness come in as arguments, so every line is tested natively with `cargo test`.

pub mod beacon;
pub mod config;
pub mod paint;
pub mod record;
pub mod request;
pub mod session;
pub mod stalls;
pub mod stream;
pub mod trace;
pub mod util;
