pub mod server_timing;
pub mod traceparent;
