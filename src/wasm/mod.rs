//! The wasm side: `Core` (`exports.rs`) and the raw exports the glue calls (`abi.rs`), and, in
//! the shipped build (feature `tiny`), the runtime (`runtime.rs`: panic handler and allocator).
//! Only compiled for wasm32.

pub mod abi;
pub mod exports;
#[cfg(feature = "tiny")]
mod runtime;

pub use exports::Core;
