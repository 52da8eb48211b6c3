//! The shipped wasm's runtime (feature `tiny`): a panic handler and a global allocator.
//!
//! Why: with std, every panic site (bounds checks, `unwrap`) keeps the whole `core::fmt`
//! machinery and its Unicode tables alive — about a quarter of the module — and std's
//! dlmalloc is ~10 KB more. The core never panics by design (fuzzed/property-tested natively);
//! should one slip through, `unreachable` traps, the JS facade catches the exception, turns
//! measurement off and the app's request continues (js/capture/fetch.js fences every call).

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    core::arch::wasm32::unreachable()
}

/// talc (no_std, made for wasm), without realloc-in-place (Cargo.toml). Its heap source
/// `WasmGrowAndClaim` claims each `memory.grow` region as a heap of its own: 137 B brotli
/// smaller than `WasmDynamicTalc`, which extends one heap; the core's memory is bounded per
/// request, so the unmerged region ends cost little. Single-threaded: wasm32 without the
/// atomics feature, which `new_wasm` requires.
#[global_allocator]
static ALLOC: TalcSyncCell<WasmGrowAndClaim, WasmBinning> = TalcSyncCell::new_wasm(WasmGrowAndClaim);

use talc::cell::TalcSyncCell;
use talc::wasm::{WasmBinning, WasmGrowAndClaim};
