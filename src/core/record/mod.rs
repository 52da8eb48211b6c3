//! Stage 4, the wire record: `encode.rs` turns a timeline into the v1 JSON record; `seen.rs`
//! applies the visibility rule to its paint metrics; `budgets.rs` resolves the metrics a budget
//! may name; `genai.rs` says which model and provider answered.

pub mod budgets;
pub mod encode;
pub mod genai;
pub mod seen;

pub use encode::encode;
