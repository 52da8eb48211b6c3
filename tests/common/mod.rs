//! Helpers shared by the native integration tests (each file in tests/ is its own crate and
//! takes what it needs).
#![allow(dead_code)]

/// The core's one deterministic PRNG for randomized tests (the same file its unit tests use).
#[path = "../../src/core/util/test_rng.rs"]
pub mod test_rng;

use llm_rum::core::util::json_write::push_string;
use llm_rum::core::Session;

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

/// Takes the session's records and returns the final ones' texts (what `onRecord` gets).
pub fn finished(s: &mut Session) -> Vec<String> {
    s.take_records().into_iter().filter(|r| !r.snapshot).map(|r| r.json).collect()
}

/// Takes the session's records and returns every text that goes to the collector (final
/// records and `partial` snapshots; none without a collector).
pub fn outgoing(s: &mut Session) -> Vec<String> {
    let collect = s.cfg.collect;
    s.take_records().into_iter().filter(|_| collect).map(|r| r.json).collect()
}
