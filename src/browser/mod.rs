//! Thin wasm adapters between the browser's objects and the pure core. Only compiled for
//! wasm32. The JS glue (js/fetch.js) owns calling the native fetch and piping bytes, so that a
//! failure here can never break the app's request (it catches and falls back); this layer
//! owns reading what the core needs out of browser objects.

pub mod headers;
