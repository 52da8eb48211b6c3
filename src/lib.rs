//! llm-rum: real-user monitoring for streamed LLM answers.
//!
//! `core` is pure Rust (tested natively); `wasm` is the thin `#[wasm_bindgen]` surface and
//! the wasm runtime.
//!
//! `no_std` + `alloc`: the shipped wasm carries no std runtime (see the `tiny` feature).

#![cfg_attr(target_arch = "wasm32", no_std)]
extern crate alloc;

pub mod core;

#[cfg(target_arch = "wasm32")]
pub mod wasm;
