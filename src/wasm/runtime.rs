//! The wasm runtime: the global allocator, and (feature `tiny`, the shipped build) the panic
//! handler.
//!
//! The allocator is talc (no_std, made for wasm, its WebAssembly setup as its README gives it),
//! in every wasm build — the shipped one and the browser tests' (tests/browser.rs), so the
//! tests run the allocator that ships. Why not std's dlmalloc, the default: measured on this
//! build (README, Dependencies) talc is smaller and faster, and it works without std.
//!
//! The panic handler (shipped build only; the tests' std brings its own): with std, every
//! panic site (bounds checks, `unwrap`) keeps the whole `core::fmt` machinery and its Unicode
//! tables alive — about a quarter of the module. The core never panics by design
//! (fuzzed/property-tested natively); should one slip through, `unreachable` traps, the JS
//! facade catches the exception, turns measurement off and the app's request continues
//! (js/core.js `fenced`).

#[cfg(feature = "tiny")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    core::arch::wasm32::unreachable()
}

/// Single-threaded: wasm32 without the atomics feature, which talc's wasm allocator requires.
#[cfg(not(target_feature = "atomics"))]
#[global_allocator]
static TALC: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();
