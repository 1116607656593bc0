//! How much heap each actor holds (issue 43): the global allocator counts,
//! per thread, the bytes allocated minus the bytes freed, so the engine can
//! measure what dropping one actor at the end of a run gives back
//! ([`freed_by`]). `work.csv` records it beside each actor's time, and
//! `--balance-by memory` cuts nodes by it, so that a coordinator's nodes
//! hold even shares of the model's memory rather than of its actors.
//!
//! Written here rather than taken from a crate: `allocation-counter`
//! (the per-thread counting crate) does not forward `realloc`, so every
//! growing buffer would be copied into a new one with both alive at once,
//! the very peak this measures (glibc grows large blocks in place). The
//! counts never reach a model or a digest.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    /// Bytes allocated minus bytes freed by this thread since it started.
    static NET: Cell<i64> = const { Cell::new(0) };
}

fn count(delta: i64) {
    // `try_with`: a thread's last frees can come after its locals are gone.
    let _ = NET.try_with(|n| n.set(n.get().wrapping_add(delta)));
}

/// [`System`], counting each thread's net bytes.
pub struct Counting;

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged and returns its result; counting touches only a thread-local
// integer and never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is `System.alloc`'s.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as i64);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as i64);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, so from `System`.
        unsafe { System.dealloc(ptr, layout) };
        count(-(layout.size() as i64));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as `dealloc`; `System.realloc` may grow the block in place.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as i64 - layout.size() as i64);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// This thread's allocated minus freed bytes so far.
pub fn thread_net_bytes() -> i64 {
    NET.try_with(Cell::get).unwrap_or(0)
}

/// Drops `value` and returns the heap bytes that gave back on this thread:
/// what `value` owned (shared data another owner keeps is not counted).
pub fn freed_by<T>(value: T) -> u64 {
    let before = thread_net_bytes();
    drop(value);
    u64::try_from(before - thread_net_bytes()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropping_a_value_gives_back_what_it_owns() {
        let v: Vec<u64> = Vec::with_capacity(1_000);
        assert_eq!(freed_by(v), 8_000);
        let nested: Vec<Vec<u8>> = (0..10).map(|_| vec![0u8; 100]).collect();
        let freed = freed_by(nested);
        assert_eq!(freed, 10 * 100 + 10 * std::mem::size_of::<Vec<u8>>() as u64);
        assert_eq!(freed_by(5u32), 0);
    }

    #[test]
    fn growing_in_place_counts_the_new_size() {
        let before = thread_net_bytes();
        let mut v: Vec<u8> = Vec::with_capacity(16);
        v.reserve_exact(1 << 20);
        let held = thread_net_bytes() - before;
        assert_eq!(held, v.capacity() as i64);
        drop(v);
        assert_eq!(thread_net_bytes(), before);
    }
}
