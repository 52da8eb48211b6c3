//! Beacons to the collector: the queue of finished records and its policy (`queue.rs`: when a
//! flush is due, what goes into a payload, dedupe by record id, bounds) and the retry policy
//! (`retry.rs`), and why a flush happens (`reason.rs`). The JS sender moves the payloads and
//! reports outcomes.

pub mod queue;
pub mod reason;
pub mod retry;

pub use queue::BeaconQueue;
pub use reason::FlushReason;
