//! llm-rum: real-user monitoring for streamed LLM answers.
//!
//! `core` is pure Rust (tested natively); `wasm` is the thin `#[wasm_bindgen]` surface over it
//! and the wasm runtime.
//!
//! `no_std` + `alloc`: the shipped wasm carries no std runtime (see the `tiny` feature).

#![cfg_attr(target_arch = "wasm32", no_std)]
extern crate alloc;
// Without `tiny` (the wasm-bindgen-test build of tests/browser.rs), std supplies the panic
// handler that src/wasm/runtime.rs supplies in the shipped build (the allocator is the same).
#[cfg(all(target_arch = "wasm32", not(feature = "tiny")))]
extern crate std;

pub mod core;

#[cfg(target_arch = "wasm32")]
pub mod wasm;
