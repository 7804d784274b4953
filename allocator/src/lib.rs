//! The global allocator of the service's binaries: mimalloc, asked for a
//! plain block whenever the layout's alignment is one every block has.
//!
//! Why not `mimalloc::MiMalloc`: it asks for every block with
//! `mi_malloc_aligned`, whose fast path covers only blocks of at most
//! 1 KiB; a larger block (a boxed request future, a document body, a
//! batch's buffers) takes mimalloc's generic aligned path, which
//! over-allocates by the alignment less one byte unless the block's size
//! class happens to be naturally aligned. Every mimalloc block is aligned
//! to at least a machine word, so a layout that asks for no more than that
//! is served by the plain `mi_malloc`, which goes straight to the block's
//! size class; only a layout that asks for more (a cache-padded atomic, a
//! page-aligned buffer) goes the aligned way.
//!
//! This crate owns the allocator and nothing else; it must not allocate
//! itself or keep state.

#![no_std]

use core::alloc::{GlobalAlloc, Layout};
use core::ffi::c_void;

use libmimalloc_sys as mimalloc;

/// The alignment every block mimalloc returns has: a machine word (its
/// size classes are whole words, and its pages start on larger boundaries).
const WORD: usize = size_of::<usize>();

/// mimalloc, as the process's global allocator.
#[derive(Debug, Clone, Copy, Default)]
pub struct Allocator;

impl Allocator {
    /// A block for `layout` from `plain` when every block has its
    /// alignment, else from `aligned`.
    ///
    /// # Safety
    ///
    /// `plain` and `aligned` are mimalloc's allocating or zeroing pair.
    #[inline(always)]
    unsafe fn allocate(
        layout: Layout,
        plain: unsafe extern "C" fn(usize) -> *mut c_void,
        aligned: unsafe extern "C" fn(usize, usize) -> *mut c_void,
    ) -> *mut u8 {
        let block = if layout.align() <= WORD {
            // SAFETY: mimalloc's plain calls take any size.
            unsafe { plain(layout.size()) }
        } else {
            // SAFETY: a Layout's alignment is a power of two, as the aligned calls require.
            unsafe { aligned(layout.size(), layout.align()) }
        };
        block.cast()
    }
}

// SAFETY: every method returns a block of at least the layout's size and
// alignment (plain blocks are word-aligned and only serve word-aligned
// layouts; the others come from mimalloc's aligned calls), or null on
// failure, and frees only blocks that mimalloc returned.
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: mimalloc's allocating pair.
        unsafe { Allocator::allocate(layout, mimalloc::mi_malloc, mimalloc::mi_malloc_aligned) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: mimalloc's zeroing pair.
        unsafe { Allocator::allocate(layout, mimalloc::mi_zalloc, mimalloc::mi_zalloc_aligned) }
    }

    #[inline]
    unsafe fn dealloc(&self, block: *mut u8, _layout: Layout) {
        // SAFETY: the caller passes a block this allocator returned, which
        // mimalloc allocated, plain or aligned; mi_free takes either.
        unsafe { mimalloc::mi_free(block.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let moved = if layout.align() <= WORD {
            // SAFETY: the caller passes a block this allocator returned; the
            // new block is word-aligned like every block, as the layout asks.
            unsafe { mimalloc::mi_realloc(block.cast::<c_void>(), new_size) }
        } else {
            // SAFETY: as above, keeping the layout's larger alignment.
            unsafe { mimalloc::mi_realloc_aligned(block.cast::<c_void>(), new_size, layout.align()) }
        };
        moved.cast()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Allocates, writes, grows and frees blocks of every size up to 80 KiB
    /// (past mimalloc's small and medium size classes) at every alignment
    /// up to a page, checking each block's alignment.
    #[test]
    fn every_block_has_the_alignment_its_layout_asks_for() {
        let allocator = Allocator;
        let sizes = (1..=1_100).chain((1_101..=80 * 1_024).step_by(509));
        for size in sizes {
            for align in [1, 2, 4, 8, 16, 32, 64, 128, 4_096] {
                let Ok(layout) = Layout::from_size_align(size, align) else { continue };
                // SAFETY: the layout has a non-zero size; the block is
                // written within its size, then grown and freed once.
                unsafe {
                    let block = allocator.alloc(layout);
                    assert!(!block.is_null());
                    assert_eq!(block as usize % align, 0, "size {size}, alignment {align}");
                    block.write_bytes(0xa5, size);
                    let grown = allocator.realloc(block, layout, size * 2);
                    assert!(!grown.is_null());
                    assert_eq!(grown as usize % align, 0, "grown from size {size}, alignment {align}");
                    assert_eq!(*grown.add(size - 1), 0xa5, "realloc keeps the contents");
                    let grown_layout = Layout::from_size_align(size * 2, align).unwrap_or(layout);
                    allocator.dealloc(grown, grown_layout);
                    let zeroed = allocator.alloc_zeroed(layout);
                    assert_eq!(zeroed as usize % align, 0);
                    assert!((0..size).all(|offset| *zeroed.add(offset) == 0), "size {size}: zeroed");
                    allocator.dealloc(zeroed, layout);
                }
            }
        }
    }
}
