//! Stage 2, one request: `Timeline` takes the marks as they happen (`on_*` with
//! `performance.now()` stamps), sums the stream's content, keeps bounded statistics
//! (`histogram.rs`: inter-token gaps, the `llm-rum-sketch` crate's sketch) and derives ttft, total and tpot; `delivery.rs` decides
//! how the text reached the page (`delivery`, `upstreamBuffered`) and `hints.rs` which response
//! facts explain bursts (`upstreamHints`); `headers.rs` reads a response's headers into the
//! timeline; `kinds.rs` holds the closed sets a record names
//! (outcome, trace source, transport).

pub mod delivery;
pub mod headers;
pub mod hints;
pub mod histogram;
pub mod kinds;
pub mod timeline;

pub use kinds::Outcome;
pub use timeline::Timeline;
