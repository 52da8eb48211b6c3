//! Trace correlation: the `traceparent` the request sends (or adopts from the app), and what
//! the response says back (`Server-Timing` stages and trace, `traceresponse`).

pub mod server_timing;
pub mod traceparent;
