//! Helpers shared by the native integration tests (each file in tests/ is its own crate and
//! takes what it needs).
#![allow(dead_code)]

/// The core's one deterministic PRNG for randomized tests (the same file its unit tests use).
#[path = "../../src/core/util/test_rng.rs"]
pub mod test_rng;

use llm_rum::core::util::json_write::push_string;

/// One OpenAI Chat Completions SSE event carrying `text` as answer content.
pub fn chunk(text: &str) -> String {
    let mut s = String::from("data: {\"choices\":[{\"delta\":{\"content\":");
    push_string(&mut s, text);
    s.push_str("}}]}\n\n");
    s
}

/// Asserts that a record's JSON text contains `needle`.
pub fn has(rec: &str, needle: &str) {
    assert!(rec.contains(needle), "record lacks {needle}\n{rec}");
}
