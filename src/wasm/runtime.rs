//! The shipped wasm's runtime (feature `tiny`): a panic handler and a global allocator.
//!
//! Why: with std, every panic site (bounds checks, `unwrap`) keeps the whole `core::fmt`
//! machinery and its Unicode tables alive — about a quarter of the module — and std's
//! dlmalloc is ~10 KB more. The core never panics by design (fuzzed/property-tested natively);
//! should one slip through, `unreachable` traps, the JS facade catches the exception, turns
//! measurement off and the app's request continues (js/capture/fetch.js fences every call).

use core::alloc::{GlobalAlloc, Layout};
use core::arch::wasm32::{memory_grow, memory_size};
use core::ptr::null_mut;

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    core::arch::wasm32::unreachable()
}

/// A size-class allocator (issue 14: ~1 KB less wasm than talc, and O(1) both ways): every
/// block is a power of two (≥ 8 B) carved from the end of memory, and a freed block goes on its
/// class's free list for the next request of that class; blocks are never split or merged.
/// Fits the core: its memory is bounded per request and its buffers grow by doubling, so each
/// class's free list stays as long as its peak use (at most twice the bytes asked for, the
/// price of the rounding). Single-threaded: wasm32 without the atomics feature.
struct SizeClasses;

const PAGE: usize = 65536;
/// Heads of the free lists by class (log2 of the block size); a free block holds the next one's
/// address (0: none).
static mut FREE: [usize; 32] = [0; 32];
/// The unused end of memory: [BUMP, END).
static mut BUMP: usize = 0;
static mut END: usize = 0;

/// The class of `l`: log2 of the smallest power of two ≥ its size, its alignment and 8. A
/// `Layout`'s size is at most `isize::MAX`, so the class is at most 31 (the mask only tells the
/// compiler so: no bounds check on `FREE`).
fn class(l: Layout) -> usize {
    let n = l.size().max(l.align()).max(8);
    (usize::BITS - (n - 1).leading_zeros()) as usize & 31
}

unsafe impl GlobalAlloc for SizeClasses {
    #[allow(static_mut_refs)]
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let k = class(l);
        let head = FREE[k];
        if head != 0 {
            FREE[k] = *(head as *const usize);
            return head as *mut u8;
        }
        if END == 0 {
            // Memory past the initial pages is unclaimed (the stack and the data lie below).
            END = memory_size(0) * PAGE;
            BUMP = END;
        }
        let size = 1usize << k;
        // Aligned to the block's size (≤ a page): a block of class k suits any alignment ≤ 2^k.
        let a = size.min(PAGE);
        if l.align() > a {
            return null_mut();
        }
        let at = (BUMP + a - 1) & !(a - 1);
        if at + size > END {
            // memory.grow appends to the end, so [BUMP, END) stays one run.
            let pages = (at + size - END).div_ceil(PAGE);
            if memory_grow(0, pages) == usize::MAX {
                return null_mut();
            }
            END += pages * PAGE;
        }
        BUMP = at + size;
        at as *mut u8
    }

    #[allow(static_mut_refs)]
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        let k = class(l);
        *(p as *mut usize) = FREE[k];
        FREE[k] = p as usize;
    }

    unsafe fn realloc(&self, p: *mut u8, l: Layout, new_size: usize) -> *mut u8 {
        let new = Layout::from_size_align_unchecked(new_size, l.align());
        if class(new) == class(l) {
            return p; // the block already has the room
        }
        let q = self.alloc(new);
        if !q.is_null() {
            core::ptr::copy_nonoverlapping(p, q, l.size().min(new_size));
            self.dealloc(p, l);
        }
        q
    }
}

#[global_allocator]
static ALLOC: SizeClasses = SizeClasses;
