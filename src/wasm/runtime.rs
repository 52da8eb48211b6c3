//! The shipped wasm's runtime (feature `tiny`): a panic handler and a global allocator.
//!
//! Why: with std, every panic site (bounds checks, `unwrap`) keeps the whole `core::fmt`
//! machinery and its Unicode tables alive — about a quarter of the module — and std's
//! dlmalloc is ~10 KB more. The core never panics by design (fuzzed/property-tested natively);
//! should one slip through, `unreachable` traps, the JS facade catches the exception, turns
//! measurement off and the app's request continues (js/fetch.js fences every call).

use core::alloc::{GlobalAlloc, Layout};
use core::arch::wasm32;
use core::cell::UnsafeCell;

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    wasm32::unreachable()
}

const PAGE: usize = 65536;
/// Size classes are powers of two from 16 B to 64 KiB; larger blocks are whole pages.
const MIN_SHIFT: u32 = 4;
const MAX_SHIFT: u32 = 16;
const CLASSES: usize = (MAX_SHIFT - MIN_SHIFT + 1) as usize;

/// Segregated free lists, no headers: `dealloc` is told the layout, so the class is known.
/// Freed blocks are reused for the same class and memory is never returned (wasm memory
/// cannot shrink anyway), so the footprint is the peak live size per class — bounded
/// because the core's per-request state is bounded.
struct Heap {
    /// Head of each class's free list (address; 0 = empty). A free block stores the next
    /// address in its first word.
    free: [usize; CLASSES],
    /// Free large blocks: first word = next, second word = pages.
    large: usize,
    /// The bump region carved for small classes.
    bump: usize,
    end: usize,
}

struct Allocator(UnsafeCell<Heap>);

// wasm32-unknown-unknown without atomics is single-threaded.
unsafe impl Sync for Allocator {}

#[global_allocator]
static ALLOC: Allocator = Allocator(UnsafeCell::new(Heap { free: [0; CLASSES], large: 0, bump: 0, end: 0 }));

extern "C" {
    /// End of static data and stack, placed by the linker (wasm-ld).
    static __heap_base: u8;
}

fn class_of(layout: &Layout) -> Option<usize> {
    let size = layout.size().max(layout.align()).max(1 << MIN_SHIFT);
    let shift = usize::BITS - (size - 1).leading_zeros();
    if shift > MAX_SHIFT {
        None
    } else {
        Some((shift - MIN_SHIFT) as usize)
    }
}

fn pages_for(size: usize) -> usize {
    size.div_ceil(PAGE)
}

/// Grows memory by `pages`; returns the address of the new region or 0.
fn grow(pages: usize) -> usize {
    let prev = wasm32::memory_grow(0, pages);
    if prev == usize::MAX {
        0
    } else {
        prev * PAGE
    }
}

impl Heap {
    unsafe fn alloc_small(&mut self, class: usize) -> *mut u8 {
        let head = self.free[class];
        if head != 0 {
            self.free[class] = *(head as *const usize);
            return head as *mut u8;
        }
        let size = 1usize << (class as u32 + MIN_SHIFT);
        if self.bump == 0 {
            self.bump = core::ptr::addr_of!(__heap_base) as usize;
            self.end = wasm32::memory_size(0) * PAGE;
        }
        // Blocks are aligned to their size (so any alignment ≤ size holds).
        let mut start = (self.bump + size - 1) & !(size - 1);
        if start + size > self.end {
            let region = grow(pages_for(size).max(1));
            if region == 0 {
                return core::ptr::null_mut();
            }
            if region != self.end {
                start = region; // not contiguous (cannot happen with one allocator; be safe)
            }
            self.end = region + pages_for(size).max(1) * PAGE;
            start = (start + size - 1) & !(size - 1);
        }
        self.bump = start + size;
        start as *mut u8
    }

    unsafe fn alloc_large(&mut self, size: usize) -> *mut u8 {
        let pages = pages_for(size);
        // Exact-fit reuse: large blocks come from Vec/String doubling, so sizes repeat.
        let mut link: *mut usize = &mut self.large;
        while *link != 0 {
            let block = *link;
            if *((block + core::mem::size_of::<usize>()) as *const usize) == pages {
                *link = *(block as *const usize);
                return block as *mut u8;
            }
            link = block as *mut usize;
        }
        grow(pages) as *mut u8
    }
}

unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let heap = &mut *self.0.get();
        match class_of(&layout) {
            Some(c) => heap.alloc_small(c),
            None => heap.alloc_large(layout.size()),
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let heap = &mut *self.0.get();
        let addr = ptr as usize;
        match class_of(&layout) {
            Some(c) => {
                *(addr as *mut usize) = heap.free[c];
                heap.free[c] = addr;
            }
            None => {
                *(addr as *mut usize) = heap.large;
                *((addr + core::mem::size_of::<usize>()) as *mut usize) = pages_for(layout.size());
                heap.large = addr;
            }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
        let (old_c, new_c) = (class_of(&layout), class_of(&new_layout));
        let same = match (old_c, new_c) {
            (Some(a), Some(b)) => a == b,
            (None, None) => pages_for(layout.size()) == pages_for(new_size),
            _ => false,
        };
        if same {
            return ptr;
        }
        let new = self.alloc(new_layout);
        if !new.is_null() {
            core::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
            self.dealloc(ptr, layout);
        }
        new
    }
}
