//! Stage 1, bytes → content: a response body (or an EventSource message) becomes counts of
//! answer text, by framing and by format.
//!
//! * `decoder.rs` — `StreamDecoder`: picks the framing from the Content-Type (or sniffs it)
//!   and feeds the classifier; `utf8.rs` (text across chunk splits), `lines.rs` (line
//!   framing, bounded), `sse.rs` (server-sent events);
//! * `formats.rs` — `Classifier`: which format a stream is and what in it counts as answer
//!   text; `content.rs` — `Content`, what it found;
//! * `tail.rs` — `TextTail`: the last few hundred chars of an observed answer, fed by the
//!   classifier, where paint probes locate the text on screen; `markdown.rs` — the markdown
//!   in it that renders as no text (a fence's language, list numbers, link URLs).

pub mod content;
pub mod decoder;
pub mod formats;
pub mod lines;
pub mod markdown;
pub mod sse;
pub mod tail;
pub mod utf8;

pub use content::Content;
pub use decoder::{is_stream_content_type, StreamDecoder};
