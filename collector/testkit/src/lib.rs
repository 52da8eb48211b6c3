//! What the collector's tests and its load generator share, kept out of the collector's
//! library (nothing here ships): a minimal HTTP/1.1 client (`client`) and a deterministic PRNG
//! (`rng`).

pub mod client;
pub mod rng;
