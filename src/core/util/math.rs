//! `ln`, `ceil`, `powi` without std: the sketch crate's (`llm_rum_sketch::math`), one copy
//! for the core and the sketch.

pub use llm_rum_sketch::math::*;
