//! How much heap each actor holds (issue 43): the global allocator counts,
//! per thread, the bytes allocated minus the bytes freed, so the engine can
//! measure what one actor's `finish` and drop give back at the end of a
//! run ([`given_back_since`]). `work.csv` records it beside each actor's
//! time, and `--balance-by memory` cuts nodes by it, so that a
//! coordinator's nodes hold even shares of the model's memory rather than
//! of its actors.
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

/// Drops `value` and returns the heap bytes given back on this thread
/// since `before` (an earlier [`thread_net_bytes`]): what `value` owned
/// (shared data another owner keeps is not counted), and what was freed
/// on its way out, less what was allocated since. The engine takes
/// `before` ahead of an actor's `finish`, so memory `finish` frees or
/// moves into the metrics is counted as the actor's (the scheduler's end
/// of a run drains much of what it held): the result, plus what the
/// metrics keep, is what the actor held at the end of virtual time.
pub fn given_back_since<T>(before: i64, value: T) -> i64 {
    drop(value);
    before - thread_net_bytes()
}

/// Hands the heap this process has freed back to the system where the
/// allocator allows (glibc's `malloc_trim`; elsewhere nothing). Called
/// once the actors are finished and dropped: glibc keeps freed small
/// blocks for reuse, and the results then encoded (a node's reports, a
/// run's merged metrics) are large blocks it maps afresh, so without this
/// a node's resident set at the end of a run was its peak plus the
/// largest report (issue 43: 240 MB on the scheduler's node at 100,000
/// servers).
pub fn return_freed_to_system() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` has no preconditions; it only releases free
    // memory and is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn freed_by<T>(value: T) -> i64 {
        given_back_since(thread_net_bytes(), value)
    }

    #[test]
    fn dropping_a_value_gives_back_what_it_owns() {
        let v: Vec<u64> = Vec::with_capacity(1_000);
        assert_eq!(freed_by(v), 8_000);
        let nested: Vec<Vec<u8>> = (0..10).map(|_| vec![0u8; 100]).collect();
        let freed = freed_by(nested);
        assert_eq!(freed, 10 * 100 + 10 * std::mem::size_of::<Vec<u8>>() as i64);
        assert_eq!(freed_by(5u32), 0);
    }

    /// A last step that frees part of the value and moves part of it out:
    /// with what was moved out added back, the count is what the value
    /// held before the step, as the engine counts an actor's `finish`.
    #[test]
    fn what_a_last_step_frees_or_moves_out_is_counted_as_held_before_it() {
        let mut value: (Vec<u64>, Vec<u8>) = (vec![1; 1_000], vec![2; 500]);
        let before = thread_net_bytes();
        value.0.truncate(10);
        value.0.shrink_to_fit();
        let kept = std::mem::take(&mut value.1);
        let given = given_back_since(before, value);
        assert_eq!(given + kept.capacity() as i64, 8_000 + 500);
        assert_eq!(given_back_since(thread_net_bytes(), kept), 500);
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
