//! Software prefetch for the loops that stream through memory only reading it
//! (reductions, matrix·vector products).
//!
//! A loop calls [`read_ahead`] once per step with the bytes that step reads; the hint
//! asks for the same bytes [`AHEAD`] further on, one per 64-byte line. Loops that also
//! write a stream gain nothing (the writes bound them) and do not call it.
//!
//! Measured in a standalone harness on the 2-core AMD EPYC Zen 5 VM of 2026-12-07 (the
//! machine of the README's latest benchmark section), float32 maximum over 1M elements
//! (4 MiB, from L3) took 42 µs without prefetch and 32.5 with it at 4 KiB; over 16M
//! (64 MiB, from DRAM) 1.69 ms and 1.04. A distance of 256 or 512 bytes gained nothing,
//! and one line in two gained about half. An elementwise `a + b` (two reads and a write)
//! was within noise either way.

/// How far ahead of a read-only stream its loops prefetch, in bytes.
pub(crate) const AHEAD: usize = 4096;

/// The same for each of the eight rows a matrix·vector step reads at once: in a
/// standalone harness, 4096² float32 `A @ v` took 1.44 ms without hints, 1.25 with 1 KiB
/// (768 B to 1.5 KiB alike) and 1.57 with 4 KiB — eight streams that far ahead evict
/// each other's lines from L1 before they are read. In the library: float64 (4096,
/// 2048) 1.36–1.41 → 1.26–1.33 ms over two A/B runs, float32 4096² within noise. (The column form, `w @
/// A`, measured slower with hints in the library, 1.39–1.41 → 1.53–1.64 ms, though not
/// in the harness; it has none.)
pub(crate) const AHEAD_PER_STREAM: usize = 1024;

/// Asks for the `bytes` bytes lying [`AHEAD`] past `p`, one hint per 64-byte line (a
/// step's reads, so that each line of the stream is asked for once). A no-op off x86-64.
#[inline(always)]
pub(crate) fn read_ahead(p: *const u8, bytes: usize) {
    read_ahead_by(p, bytes, AHEAD);
}

/// [`read_ahead`] at a distance of `ahead` bytes.
#[inline(always)]
pub(crate) fn read_ahead_by(p: *const u8, bytes: usize, ahead: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let mut o = 0;
        while o < bytes {
            // SAFETY: a prefetch is a hint: it never faults, whatever the address
            // (`wrapping_add` keeps the arithmetic defined past the end of the stream).
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(ahead + o).cast()) };
            o += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, bytes, ahead);
}
