pub mod exports;
pub mod response;
#[cfg(feature = "tiny")]
mod runtime;
