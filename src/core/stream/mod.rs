pub mod content;
pub mod decoder;
pub mod formats;
pub mod lines;
pub mod sse;
pub mod tail;
pub mod utf8;

pub use content::Content;
pub use decoder::{is_stream_content_type, StreamDecoder};
