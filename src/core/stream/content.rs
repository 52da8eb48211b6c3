//! `Content`: what the format classifier found in one piece of a stream — counts of events,
//! answer and reasoning text, usage, end and error markers. The classifier (`formats.rs`)
//! produces it per event; the decoder (`decoder.rs`) sums it per chunk; the request timeline
//! sums it per answer.

/// What one delivered chunk (or one EventSource message) contained. Counts only: the core
/// keeps no answer text, except the bounded tail for paint probes of observed requests
/// (`tail.rs`), which is never encoded into a record.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Content {
    /// Parsed events / lines in this piece (any kind, including pings and comments).
    pub events: u32,
    /// Events that carried non-empty answer text.
    pub content_events: u32,
    /// Unicode scalar values of answer text.
    pub content_chars: u32,
    /// Events that carried non-empty reasoning ("thinking") text.
    pub reasoning_events: u32,
    pub reasoning_chars: u32,
    /// Output tokens reported by an in-band `usage` object (the last one seen).
    pub usage_output_tokens: Option<u32>,
    /// An explicit end-of-answer marker was seen (`[DONE]`, `message_stop`, `finish`, ...).
    pub done: bool,
    /// An in-band error event was seen.
    pub error_event: bool,
}

impl Content {
    /// Adds `other` into `self` (usage: the later one wins).
    pub fn merge(&mut self, other: &Content) {
        // Saturating: totals of a never-ending stream must not wrap or panic.
        self.events = self.events.saturating_add(other.events);
        self.content_events = self.content_events.saturating_add(other.content_events);
        self.content_chars = self.content_chars.saturating_add(other.content_chars);
        self.reasoning_events = self.reasoning_events.saturating_add(other.reasoning_events);
        self.reasoning_chars = self.reasoning_chars.saturating_add(other.reasoning_chars);
        if other.usage_output_tokens.is_some() {
            self.usage_output_tokens = other.usage_output_tokens;
        }
        self.done |= other.done;
        self.error_event |= other.error_event;
    }
}
