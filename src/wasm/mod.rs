//! The wasm side: the `#[wasm_bindgen]` exports (`exports.rs`), reading response headers into
//! a timeline (`response.rs`), and, in the shipped build (feature `tiny`), the runtime
//! (`runtime.rs`: panic handler and allocator). Only compiled for wasm32.

pub mod exports;
pub mod response;
#[cfg(feature = "tiny")]
mod runtime;

pub use exports::Core;
