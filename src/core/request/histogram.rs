//! The log-histogram sketch lives in its own crate (`sketch/`, `llm-rum-sketch`), shared with
//! the collector's rollups; re-exported here so the core names it where it uses it.

pub use llm_rum_sketch::*;
