//! The wasm side: `Core` (`core.rs`), the `#[wasm_bindgen]` surface over the pure core whose JS
//! glue wasm-bindgen-cli generates, and the runtime (`runtime.rs`: the allocator every wasm
//! build uses, and the shipped build's panic handler). Only compiled for wasm32.

pub mod core;
mod runtime;

pub use self::core::Core;
