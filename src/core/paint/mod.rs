//! What the person saw: answer text arrivals matched to painted frames.
//!
//! * `tracker.rs` — `PaintTracker`, the state machine fed with arrivals and paints, and its
//!   `PaintResult` (first/last paint, render delay, buffered, paint stalls);
//! * `buckets.rs` — the bounded arrival and paint lists it keeps (≤ `MAX_BUCKETS` each) and
//!   the error their coalescing adds;
//! * `delays.rs` — matching the two lists into char-weighted render delays.
//!
//! Where the screen's text ends in the raw answer (text probes) is found by the stream stage's
//! `TextTail`; the tracker receives the located position.

pub mod buckets;
pub mod delays;
pub mod tracker;

pub use delays::RenderDelay;
pub use tracker::{PaintResult, PaintTracker};
