pub mod tracker;

pub use tracker::{PaintResult, PaintTracker};
