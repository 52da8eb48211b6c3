pub mod decoder;
pub mod formats;
pub mod sse;
pub mod tail;
pub mod utf8;

pub use decoder::{is_stream_content_type, Content, StreamDecoder};
