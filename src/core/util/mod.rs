//! Size-driven stand-ins for what a std or crates.io build would take from elsewhere; each file
//! says why it is hand-written (mostly: the shipped wasm is `no_std` and `core::fmt`, float
//! parsing and serde would cost it tens of KB).
//!
//! * `json_read` / `json_write` — reading events and the configuration; writing records and
//!   beacons;
//! * `decimal` — numbers from text (`str::parse::<f64>` alone is ~21 KB of wasm);
//! * `hex` — lower-case hex for trace ids;
//! * `math` — `ln`, `ceil`, `powi` without std;
//! * `swar` — byte scans eight bytes at a time (line ends, JSON strings);
//! * `text` — the one string truncator; `url` — the one URL splitter;
//! * `test_rng` — the tests' deterministic PRNG (tests only).

pub mod decimal;
pub mod hex;
pub mod json_read;
pub mod json_write;
pub mod math;
pub mod swar;
pub mod text;
pub mod url;
#[cfg(test)]
pub mod test_rng;
