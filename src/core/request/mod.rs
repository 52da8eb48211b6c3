//! Stage 2, one request: `Timeline` takes the marks as they happen (`on_*` with
//! `performance.now()` stamps), sums the stream's content, keeps bounded statistics
//! (`histogram.rs`: inter-token gaps) and derives ttft, total and tpot; `kinds.rs` holds the
//! closed sets a record names (outcome, trace source, transport).

pub mod histogram;
pub mod kinds;
pub mod timeline;

pub use kinds::Outcome;
pub use timeline::Timeline;
