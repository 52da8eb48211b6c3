//! The raw wasm exports js/wasm/llm_rum.js (the hand-written glue) calls: numbers only.
//!
//! Why not `#[wasm_bindgen]` (issue 14, size): its per-export shims (argument frames, a
//! `RefCell` borrow check with a throw path, one allocation and free per string argument,
//! multi-value returns) and its externref table were ~8 KB of the ~89 KB module, and its glue
//! 2.3 KB brotli; these exports and the glue are a fraction of that.
//!
//! The calling convention, small enough to check by eye:
//! - Arguments that are text or bytes are written by the glue, one after the other, into one
//!   scratch buffer (`scratch`), and passed by their byte lengths; the export reads them back
//!   in the same order (`Args`). Text is UTF-8 from `TextEncoder` (always valid).
//! - A text result is left in `OUT` and its byte length returned (-1: none, `undefined` in
//!   JS); the glue decodes it from `out_ptr()` before the next call.
//! - A `Core` is a leaked `Box` whose address is the handle (`core_new` / `core_free`).
//! - A `bool` crosses as 0/1 (read as `!= 0`: any number from JS is a valid `u32`).
//! Single-threaded (wasm32 without atomics): the statics are only touched by one call at a time.

use super::exports::Core;
use alloc::{boxed::Box, string::String, vec::Vec};

static mut SCRATCH: Vec<u8> = Vec::new();
static mut OUT: String = String::new();

#[allow(static_mut_refs)]
fn scratch_buf() -> &'static mut Vec<u8> {
    // SAFETY: single-threaded; the glue never calls in while an export runs.
    unsafe { &mut SCRATCH }
}

/// Makes the scratch buffer hold at least `n` bytes (keeping what it holds) and returns its
/// address; the glue calls it before writing each argument (the buffer may move).
#[no_mangle]
pub extern "C" fn scratch(n: usize) -> *mut u8 {
    let s = scratch_buf();
    if s.len() < n {
        s.resize(n, 0);
    }
    s.as_mut_ptr()
}

/// Where the last text result is (see `ret`).
#[no_mangle]
pub extern "C" fn out_ptr() -> *const u8 {
    // SAFETY: as `scratch_buf`.
    #[allow(static_mut_refs)]
    unsafe {
        OUT.as_ptr()
    }
}

fn ret(s: Option<String>) -> i32 {
    match s {
        Some(s) => {
            let n = s.len() as i32;
            // SAFETY: as `scratch_buf`.
            #[allow(static_mut_refs)]
            unsafe {
                OUT = s
            };
            n
        }
        None => -1,
    }
}

/// The arguments written into the scratch buffer, read back in order.
struct Args(usize);

impl Args {
    fn bytes(&mut self, n: usize) -> &'static [u8] {
        let at = self.0;
        self.0 += n;
        scratch_buf().get(at..at + n).unwrap_or(&[])
    }
    fn text(&mut self, n: usize) -> &'static str {
        core::str::from_utf8(self.bytes(n)).unwrap_or("")
    }
}

fn core(p: *mut Core) -> &'static mut Core {
    // SAFETY: `p` is what `core_new` returned and `core_free` has not been called on it (the
    // glue frees it only when its `Core` object is garbage collected).
    unsafe { &mut *p }
}

#[no_mangle]
pub extern "C" fn core_new(config: usize) -> *mut Core {
    Box::into_raw(Box::new(Core::new(Args(0).text(config))))
}

#[no_mangle]
pub extern "C" fn core_free(p: *mut Core) {
    // SAFETY: see `core`; called once, by the glue's FinalizationRegistry.
    drop(unsafe { Box::from_raw(p) });
}

#[no_mangle]
pub extern "C" fn begin(p: *mut Core, url: usize, method: usize, random: usize, t: f64, epoch_ms: f64, interaction: f64) -> u32 {
    let mut a = Args(0);
    core(p).begin(a.text(url), a.text(method), t, epoch_ms, a.bytes(random), interaction)
}

#[no_mangle]
pub extern "C" fn set_route(p: *mut Core, h: u32, template: usize) {
    core(p).set_route(h, Args(0).text(template));
}

#[no_mangle]
pub extern "C" fn traceparent(p: *mut Core, h: u32) -> i32 {
    ret(Some(core(p).traceparent(h)))
}

#[no_mangle]
pub extern "C" fn adopt_traceparent(p: *mut Core, h: u32, value: usize) {
    core(p).adopt_traceparent(h, Args(0).text(value));
}

#[no_mangle]
pub extern "C" fn response(p: *mut Core, h: u32, t: f64, status: u32, headers: usize, measure_any: u32) -> bool {
    core(p).response(h, t, status as u16, Args(0).text(headers), measure_any != 0)
}

#[no_mangle]
pub extern "C" fn chunk(p: *mut Core, h: u32, t: f64, bytes: usize, asked: f64) {
    core(p).chunk(h, t, Args(0).bytes(bytes), asked);
}

#[no_mangle]
pub extern "C" fn end(p: *mut Core, h: u32, t: f64, outcome: u32) -> bool {
    core(p).end(h, t, outcome)
}

#[no_mangle]
pub extern "C" fn current_answer(p: *mut Core, before: u32) -> u32 {
    core(p).current_answer(before)
}

#[no_mangle]
pub extern "C" fn observe(p: *mut Core, h: u32, source: u32) -> bool {
    core(p).observe(h, source)
}

#[no_mangle]
pub extern "C" fn claim(p: *mut Core, h: u32, text: usize, whole: u32) -> f64 {
    core(p).claim(h, Args(0).text(text), whole != 0)
}

#[no_mangle]
pub extern "C" fn paint(p: *mut Core, h: u32, t: f64, len: u32, err_ms: f64, probe: usize) -> bool {
    core(p).paint(h, t, len, err_ms, Args(0).text(probe))
}

#[no_mangle]
pub extern "C" fn paint_ready(p: *mut Core, t: f64) {
    core(p).paint_ready(t);
}

#[no_mangle]
pub extern "C" fn finish(p: *mut Core, h: u32) {
    core(p).finish(h);
}

#[no_mangle]
pub extern "C" fn native_paint(p: *mut Core, t: f64, res_ms: f64) {
    core(p).native_paint(t, res_ms);
}

#[no_mangle]
pub extern "C" fn long_frame(p: *mut Core, start: f64, dur: f64, invoker: usize, source: usize, script_ms: f64) {
    let mut a = Args(0);
    core(p).long_frame(start, dur, a.text(invoker), a.text(source), script_ms);
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn es_begin(p: *mut Core, url: usize, random: usize, first: usize, t: f64, epoch_ms: f64, send_trace: u32, interaction: f64) -> u32 {
    let mut a = Args(0);
    core(p).es_begin(a.text(url), t, epoch_ms, a.bytes(random), a.bytes(first), send_trace != 0, interaction)
}

#[no_mangle]
pub extern "C" fn es_message(p: *mut Core, h: u32, t: f64, event_type: usize, data: usize, last_event_id: usize) {
    let mut a = Args(0);
    core(p).es_message(h, t, a.text(event_type), a.text(data), a.text(last_event_id));
}

#[no_mangle]
pub extern "C" fn es_server_timing(p: *mut Core, h: u32, name: usize, duration: f64, description: usize) {
    let mut a = Args(0);
    core(p).es_server_timing(h, a.text(name), duration, a.text(description));
}

#[no_mangle]
pub extern "C" fn es_end(p: *mut Core, h: u32, t: f64, closed_by_app: u32, rt_start: f64) -> bool {
    core(p).es_end(h, t, closed_by_app != 0, rt_start)
}

#[no_mangle]
pub extern "C" fn mark(p: *mut Core, name: usize, t: f64) -> bool {
    core(p).mark(Args(0).text(name), t)
}

#[no_mangle]
pub extern "C" fn page_hidden(p: *mut Core, t: f64, unloading: u32) {
    core(p).page_hidden(t, unloading != 0);
}

#[no_mangle]
pub extern "C" fn page_shown(p: *mut Core) {
    core(p).page_shown();
}

#[no_mangle]
pub extern "C" fn page(p: *mut Core, path: usize, template: usize) -> i32 {
    let mut a = Args(0);
    ret(Some(core(p).page(a.text(path), a.text(template))))
}

#[no_mangle]
pub extern "C" fn take_records(p: *mut Core, outgoing: u32) -> i32 {
    ret(Some(core(p).take_records(outgoing != 0)))
}
