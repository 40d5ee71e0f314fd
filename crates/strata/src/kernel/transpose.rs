//! Cache-tile kernels for loops whose input and output disagree on the fastest dim
//! (transposes, permutes such as NCHW ↔ NHWC, `a + b.T`).
//!
//! The engine hands a tiled loop one cache tile of `rows × len` elements at a time (see
//! [`Loop::run_tiles`](super::engine::Loop::run_tiles)): rows run along the dim the input
//! is contiguous in, `len` along the output's contiguous dim. A row-by-row copy reads one
//! element per input cache line per step. Instead, [`copy_tile`] loads a square block as
//! whole input vectors, transposes it in registers and stores whole output vectors, so
//! both sides move in vector-sized pieces: line-wide blocks (16×16 of 4-byte elements,
//! 8×8 of 8-byte) where the CPU has AVX-512, else 16-byte ones (4×4, 2×2, 8×8 of 2-byte);
//! ragged edges go element by element. In a streaming loop (Note [streaming tiles] in the
//! engine) aligned output vectors are stored non-temporally. [`stage_tile`] uses the same
//! blocks to copy an elementwise op's transposed inputs into per-thread scratch, then
//! runs the op's own kernel row by row. Other strides fall back to the row kernel.

/// Calls `row(ptrs, ls, len)` once for each of the tile's `rows` rows.
fn each_row<const N: usize>(
    p: [*mut u8; N],
    ts: [isize; N],
    ls: [isize; N],
    (rows, len): (usize, usize),
    row: impl Fn([*mut u8; N], [isize; N], usize),
) {
    for t in 0..rows as isize {
        row(
            std::array::from_fn(|k| p[k].wrapping_offset(t * ts[k])),
            ls,
            len,
        );
    }
}

/// Copies a `rows × len` tile from `p[1]` to `p[0]` of `item`-byte elements, where row `t`
/// and column `l` of operand `k` live at byte offset `t·ts[k] + l·ls[k]`. Uses register
/// blocks when the output is contiguous along `l` and the input along `t`, else calls
/// `row(ptrs, ls, len)` once per row. With `stream`, register blocks store aligned output
/// non-temporally (Note [streaming tiles] in the engine), fenced before this returns.
///
/// # Safety
/// `p[0]` must be writable and `p[1]` readable at every such offset, `t < rows`, `l < len`,
/// and the two must not overlap.
pub(super) unsafe fn copy_tile(
    p: [*mut u8; 2],
    ts: [isize; 2],
    ls: [isize; 2],
    (rows, len): (usize, usize),
    item: usize,
    stream: bool,
    row: impl Fn([*mut u8; 2], [isize; 2], usize),
) {
    let item_s = item as isize;
    #[cfg(target_arch = "x86_64")]
    if ls[0] == item_s && ts[1] == item_s && matches!(item, 2 | 4 | 8) {
        let t = Tile {
            o: p[0],
            os: ts[0],
            i: p[1],
            is: ls[1],
            item,
            stream,
        };
        // SAFETY: forwarded: the tile covers exactly `t < rows`, `l < len`.
        unsafe { t.copy(0..rows, 0..len) };
        return;
    }
    let _ = (item_s, stream);
    each_row(p, ts, ls, (rows, len), row);
}

/// Copies `m` elements of `item` bytes from `q[1]` to `q[0]` at byte strides `s`.
///
/// # Safety
/// Both runs must be valid (read / write) and disjoint.
unsafe fn copy_elems(q: [*mut u8; 2], s: [isize; 2], m: usize, item: usize) {
    for e in 0..m as isize {
        // SAFETY: forwarded to the caller.
        unsafe {
            std::ptr::copy_nonoverlapping(q[1].offset(e * s[1]), q[0].offset(e * s[0]), item)
        };
    }
}

/// Bytes of scratch per staged input of a tile (see [`stage_tile`]): with two inputs,
/// half of a 2 MiB L2.
pub(super) const STAGE_BYTES: usize = 512 * 1024;

std::thread_local! {
    /// Each thread's staging scratch: two blocks of STAGE_BYTES, 64-byte aligned, made
    /// on the thread's first staged tile and kept. Only staged bytes are ever read.
    static SCRATCH: std::cell::Cell<Option<Box<Scratch>>> = const { std::cell::Cell::new(None) };
}

/// Two staging blocks (see [`SCRATCH`]).
#[repr(C, align(64))]
struct Scratch([[std::mem::MaybeUninit<u8>; STAGE_BYTES]; 2]);

impl Scratch {
    /// The calling thread's scratch, taken out of [`SCRATCH`] (a fresh one if a caller up
    /// the stack holds it, which does not happen: kernels do not nest); give it back with
    /// [`Scratch::put`].
    fn take() -> Box<Scratch> {
        SCRATCH.take().unwrap_or_else(|| {
            let layout = std::alloc::Layout::new::<Scratch>();
            // SAFETY: the layout has non-zero size; uninitialised bytes are valid
            // `MaybeUninit`s, so the block is a valid `Scratch` as it is.
            unsafe {
                let p = std::alloc::alloc(layout).cast::<Scratch>();
                if p.is_null() {
                    std::alloc::handle_alloc_error(layout);
                }
                Box::from_raw(p)
            }
        })
    }

    fn put(self: Box<Self>) {
        SCRATCH.set(Some(self));
    }
}

/// Runs an elementwise kernel over a `rows × len` tile whose inputs may be transposed
/// against the output: an input contiguous along rows (`ts[k] == items[k]`) but not along
/// the run (`ls[k]`) is first copied, in register blocks, into a scratch block laid out
/// like a compact tile, so `row(ptrs, strides, len)` then reads it contiguously and the
/// kernel's vectorised contiguous path runs instead of a strided gather. Other operands
/// (operand 0, the output, always) are passed as they are. Rows are staged in chunks
/// that fit the scratch.
///
/// # Safety
/// As for [`copy_tile`]: every operand must be valid at `t·ts[k] + l·ls[k]` for
/// `t < rows`, `l < len`, and `row` must only access the `len` elements it is handed.
pub(super) unsafe fn stage_tile<const N: usize>(
    p: [*mut u8; N],
    ts: [isize; N],
    ls: [isize; N],
    (rows, len): (usize, usize),
    items: [usize; N],
    row: &impl Fn([*mut u8; N], [isize; N], usize),
) {
    // Inputs worth staging, each given one of two scratch blocks: an op has at most two
    // inputs that can be (`where`'s bool condition never is, having 1-byte elements); a
    // third would simply run strided.
    let staged = |k: usize| {
        let item = items[k] as isize;
        k > 0
            && cfg!(target_arch = "x86_64")
            && matches!(items[k], 2 | 4 | 8)
            && ts[k] == item
            && ls[k] != item
            && ls[k] != 0
            && items[k] * len <= STAGE_BYTES
    };
    let Some(widest) = (0..N).filter(|&k| staged(k)).map(|k| items[k] * len).max() else {
        each_row(p, ts, ls, (rows, len), row);
        return;
    };
    let mut scratch = Scratch::take();
    let mut free = scratch.0.iter_mut();
    let slot: [Option<*mut u8>; N] = std::array::from_fn(|k| {
        staged(k)
            .then(|| free.next().map(|b| b.as_mut_ptr().cast()))
            .flatten()
    });
    let chunk = STAGE_BYTES / widest;
    // Staged operands are read from scratch, one compact row of `len` after another.
    let strides: [isize; N] = std::array::from_fn(|k| match slot[k] {
        Some(_) => items[k] as isize,
        None => ls[k],
    });
    let row_step: [isize; N] = std::array::from_fn(|k| match slot[k] {
        Some(_) => (len * items[k]) as isize,
        None => ts[k],
    });
    let mut t0 = 0;
    while t0 < rows {
        let n = chunk.min(rows - t0);
        let at: [*mut u8; N] = std::array::from_fn(|k| {
            let src = p[k].wrapping_offset(t0 as isize * ts[k]);
            match slot[k] {
                Some(buf) => {
                    // SAFETY: the chunk lies inside the tile (caller); the scratch holds
                    // `n · len · item ≤ STAGE_BYTES` bytes; scratch and input are
                    // disjoint. (`copy_tile` takes its register blocks here: scratch is
                    // contiguous along the run and the input along the rows.)
                    unsafe {
                        copy_tile(
                            [buf, src],
                            [row_step[k], ts[k]],
                            [strides[k], ls[k]],
                            (n, len),
                            items[k],
                            false,
                            |q, s, m| copy_elems(q, s, m, items[k]),
                        )
                    };
                    buf
                }
                None => src,
            }
        });
        each_row(at, row_step, strides, (n, len), row);
        t0 += n;
    }
    scratch.put();
}

/// A tile whose output is contiguous along columns (`l`) and whose input is contiguous
/// along rows (`t`): output element `(t, l)` at `o + t·os + l·item`, input at
/// `i + l·is + t·item`.
#[cfg(target_arch = "x86_64")]
struct Tile {
    o: *mut u8,
    os: isize,
    i: *const u8,
    is: isize,
    item: usize,
    /// Store 16-byte (64-byte) aligned output vectors non-temporally.
    stream: bool,
}

#[cfg(target_arch = "x86_64")]
impl Tile {
    /// Output and input pointers of element `(t, l)`.
    fn at(&self, t: usize, l: usize) -> (*mut u8, *const u8) {
        let (t, l, item) = (t as isize, l as isize, self.item as isize);
        (
            self.o.wrapping_offset(t * self.os + l * item),
            self.i.wrapping_offset(l * self.is + t * item),
        )
    }

    /// Asks for the bytes PREFETCH past `i` in each of the `n` input rows from `i` on.
    /// Each row a tile reads is a stream of its own, too many for the hardware
    /// prefetchers to follow (up to 128 rows, 32 KiB apart, in an 8192² f32 transpose):
    /// on a Xeon with AVX-512 this took that transpose from ~126 to ~92 ms (1 thread).
    #[inline(always)]
    fn prefetch_rows(&self, i: *const u8, n: usize) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        for k in 0..n as isize {
            let p = i.wrapping_offset(k * self.is + PREFETCH);
            // SAFETY: a prefetch is a hint: it never faults, whatever the address.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast()) };
        }
    }

    /// Calls `block(out, in)` for each `b × b` block of the rectangle, whose sides are
    /// multiples of `b`: in bands of input rows two output lines wide, each walked along
    /// the input rows (few input rows stream at a time; see Note [staged tiles] in the
    /// engine), prefetching every 64 bytes along them (see `prefetch_rows`).
    #[inline(always)]
    fn blocks(
        &self,
        tr: std::ops::Range<usize>,
        lr: std::ops::Range<usize>,
        b: usize,
        block: impl Fn(*mut u8, *const u8),
    ) {
        let band = 128 / self.item;
        for l0 in lr.clone().step_by(band) {
            let l1 = (l0 + band).min(lr.end);
            for t in tr.clone().step_by(b) {
                let prefetch = ((t - tr.start) * self.item).is_multiple_of(64);
                for l in (l0..l1).step_by(b) {
                    let (o, i) = self.at(t, l);
                    if prefetch {
                        self.prefetch_rows(i, b);
                    }
                    block(o, i);
                }
            }
        }
    }

    /// Copies a rectangle of the tile: in line-wide register blocks where the CPU has
    /// AVX2 or AVX-512 (`kernel/cpu.rs`) and elements are 2, 4 or 8 bytes, the rest in
    /// 16-byte blocks and element by element; streamed stores are fenced at the end.
    ///
    /// # Safety
    /// The rectangle must lie inside a valid tile.
    unsafe fn copy(&self, tr: std::ops::Range<usize>, lr: std::ops::Range<usize>) {
        use crate::kernel::cpu::{self, Level};
        let level = cpu::level();
        if self.item == 2 && level >= Level::Avx2 {
            // 2-byte elements in blocks as wide as the 4-byte ones: 32×32 (64-byte rows)
            // with AVX-512, 16×16 (32-byte rows) with AVX2.
            let b = if level == Level::Avx512 { 32 } else { 16 };
            let t_end = tr.start + (tr.len() - tr.len() % b);
            let l_end = lr.start + (lr.len() - lr.len() % b);
            // SAFETY: the CPU has the level's features (`cpu::level`); the three pieces
            // partition the rectangle, which lies inside the tile (caller).
            unsafe {
                if b == 32 {
                    x86::wide2_avx512(self, tr.start..t_end, lr.start..l_end);
                } else {
                    x86::wide2_avx2(self, tr.start..t_end, lr.start..l_end);
                }
                self.direct(tr.start..t_end, l_end..lr.end);
                self.direct(t_end..tr.end, lr);
            }
        } else if matches!(self.item, 4 | 8) && level >= Level::Avx2 {
            let b = 64 / self.item;
            let t_end = tr.start + (tr.len() - tr.len() % b);
            let l_end = lr.start + (lr.len() - lr.len() % b);
            // SAFETY: the CPU has the level's features (`cpu::level`); the three pieces
            // partition the rectangle, which lies inside the tile (caller).
            unsafe {
                if level == Level::Avx512 {
                    x86::wide(self, tr.start..t_end, lr.start..l_end);
                } else {
                    x86::wide_avx2(self, tr.start..t_end, lr.start..l_end);
                }
                self.direct(tr.start..t_end, l_end..lr.end);
                self.direct(t_end..tr.end, lr);
            }
        } else {
            // SAFETY: forwarded to the caller.
            unsafe { self.direct(tr, lr) };
        }
        if self.stream {
            // SAFETY: SSE is baseline on x86-64. Streamed stores are weakly ordered: the
            // fence makes them visible before the tile is reported done.
            unsafe { std::arch::x86_64::_mm_sfence() };
        }
    }

    /// A rectangle in 16-byte register blocks, its ragged edges element by element.
    ///
    /// # Safety
    /// The rectangle must lie inside a valid tile.
    unsafe fn direct(&self, tr: std::ops::Range<usize>, lr: std::ops::Range<usize>) {
        let b = BLOCK / self.item;
        let t_end = tr.start + (tr.len() - tr.len() % b);
        let l_end = lr.start + (lr.len() - lr.len() % b);
        self.blocks(tr.start..t_end, lr.start..l_end, b, |o, i| {
            // SAFETY: the block is inside the rectangle (caller).
            unsafe { x86::block(self.item, o, self.os, i, self.is, self.stream) }
        });
        for t in tr.clone() {
            let from = if t < t_end { l_end } else { lr.start };
            for l in from..lr.end {
                let (o, i) = self.at(t, l);
                // SAFETY: element `(t, l)` is inside the rectangle (caller).
                unsafe { std::ptr::copy_nonoverlapping(i, o, self.item) };
            }
        }
    }
}

/// A register, in bytes.
#[cfg(target_arch = "x86_64")]
const BLOCK: usize = 16;

/// How far ahead of a block's input rows [`Tile::direct`] prefetches, in bytes (two
/// cache lines; four lines and more measured slower).
#[cfg(target_arch = "x86_64")]
const PREFETCH: isize = 128;

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// Loads the 16 bytes at `p + k·s`.
    ///
    /// # Safety
    /// Those bytes must be readable.
    #[inline(always)]
    unsafe fn ld(p: *const u8, s: isize, k: isize) -> __m128i {
        // SAFETY: forwarded to the caller; `loadu` has no alignment requirement.
        unsafe { _mm_loadu_si128(p.offset(k * s).cast()) }
    }

    /// Stores `v` to the 16 bytes at `p + k·s`, non-temporally if `nt`.
    ///
    /// # Safety
    /// Those bytes must be writable; with `nt`, 16-byte aligned.
    #[inline(always)]
    unsafe fn st(p: *mut u8, s: isize, k: isize, v: __m128i, nt: bool) {
        let p = p.wrapping_offset(k * s).cast();
        // SAFETY: forwarded to the caller; `storeu` has no alignment requirement.
        unsafe {
            if nt {
                _mm_stream_si128(p, v)
            } else {
                _mm_storeu_si128(p, v)
            }
        }
    }

    /// Transposes one register block of `item`-byte elements (16 bytes a row); with
    /// `stream`, stores its rows non-temporally when they are all 16-byte aligned.
    ///
    /// # Safety
    /// As for the block function of that size; `item` is 2, 4 or 8.
    #[inline(always)]
    pub(super) unsafe fn block(
        item: usize,
        o: *mut u8,
        os: isize,
        i: *const u8,
        is: isize,
        stream: bool,
    ) {
        let nt = stream && (o as usize | os as usize).is_multiple_of(16);
        // SAFETY: forwarded to the caller (`nt` only when every row is aligned).
        unsafe {
            match item {
                2 => block8x2(o, os, i, is, nt),
                4 => block4x4(o, os, i, is, nt),
                _ => block2x8(o, os, i, is, nt),
            }
        }
    }

    /// Copies the rectangle `tr × lr` of `t` in line-wide blocks (16×16 4-byte or 8×8
    /// 8-byte elements: each input and output row of a block is one 64-byte vector), in
    /// the order of [`Tile::blocks`](super::Tile::blocks); with `t.stream`,
    /// a block whose output rows are 64-byte aligned stores them non-temporally.
    ///
    /// # Safety
    /// The CPU must have AVX-512F; `t.item` is 4 or 8; the rectangle must lie inside a
    /// valid tile and its sides be multiples of the block (`64 / t.item`).
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn wide(
        t: &super::Tile,
        tr: std::ops::Range<usize>,
        lr: std::ops::Range<usize>,
    ) {
        let b = 64 / t.item;
        let aligned = t.os % 64 == 0;
        t.blocks(tr, lr, b, |o, i| {
            let nt = t.stream && aligned && (o as usize).is_multiple_of(64);
            // SAFETY: the block lies inside the rectangle (caller); AVX-512F is there
            // (caller; the closure inherits `wide`'s target features).
            unsafe {
                if t.item == 4 {
                    wide4(o, t.os, i, t.is, nt)
                } else {
                    wide8(o, t.os, i, t.is, nt)
                }
            }
        });
    }

    /// Copies the rectangle `tr × lr` of `t` (2-byte elements) in 16×16 blocks of 32-byte
    /// rows ([`block16x2`]), in the order of [`Tile::blocks`](super::Tile::blocks); with
    /// `t.stream`, a block whose output rows are 32-byte aligned stores them
    /// non-temporally.
    ///
    /// # Safety
    /// The CPU must have AVX2; `t.item` is 2; the rectangle must lie inside a valid tile
    /// and its sides be multiples of 16.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn wide2_avx2(
        t: &super::Tile,
        tr: std::ops::Range<usize>,
        lr: std::ops::Range<usize>,
    ) {
        let aligned = t.os % 32 == 0;
        t.blocks(tr, lr, 16, |o, i| {
            let nt = t.stream && aligned && (o as usize).is_multiple_of(32);
            // SAFETY: the block lies inside the rectangle (caller); AVX2 is there.
            unsafe { block16x2(o, t.os, i, t.is, nt) }
        });
    }

    /// As [`wide2_avx2`] in 32×32 blocks (each input and output row one 64-byte line, as
    /// the 4-byte [`wide4`] blocks), each copied as its four 16×16 quarters with the AVX2
    /// code ([`block16x2`]), compiled with AVX-512 enabled.
    ///
    /// # Safety
    /// The CPU must have AVX-512 (F, BW, DQ, VL) and AVX2; `t.item` is 2; the rectangle
    /// must lie inside a valid tile and its sides be multiples of 32.
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")]
    pub(super) unsafe fn wide2_avx512(
        t: &super::Tile,
        tr: std::ops::Range<usize>,
        lr: std::ops::Range<usize>,
    ) {
        let aligned = t.os % 32 == 0;
        t.blocks(tr, lr, 32, |o, i| {
            for (dt, dl) in [(0isize, 0isize), (0, 16), (16, 0), (16, 16)] {
                // Output rows `dt..dt + 16`, columns `dl..dl + 16` of the block: input
                // rows `dl..`, columns `dt..`.
                let o = o.wrapping_offset(dt * t.os + dl * 2);
                let i = i.wrapping_offset(dl * t.is + dt * 2);
                let nt = t.stream && aligned && (o as usize).is_multiple_of(32);
                // SAFETY: the quarter lies inside the block, inside the rectangle
                // (caller); AVX2 is there.
                unsafe { block16x2(o, t.os, i, t.is, nt) }
            }
        });
    }

    /// Transposes a 16×16 block of 2-byte elements: input rows at `i + k·is`, output rows
    /// at `o + k·os`, 32 bytes each. The 8×8 network of [`block8x2`] runs on both 128-bit
    /// halves of the registers at once (the unpack instructions work within each half),
    /// once for input rows 0-7 and once for 8-15; output row `c < 8` is then the low
    /// halves of the two results' row `c`, output row `8 + c` their high halves.
    ///
    /// # Safety
    /// Each of the 32 rows must be valid (input readable, output writable, 32-byte aligned
    /// with `nt`); AVX2.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn block16x2(o: *mut u8, os: isize, i: *const u8, is: isize, nt: bool) {
        // SAFETY: the loads read the block's input rows (caller).
        let r: [__m256i; 16] = std::array::from_fn(|k| unsafe {
            _mm256_loadu_si256(i.wrapping_offset(k as isize * is).cast())
        });
        let lo = net8x2(&r[..8]);
        let hi = net8x2(&r[8..]);
        for c in 0..8 {
            let (x, y) = (lo[c], hi[c]);
            // SAFETY: output rows `c` and `8 + c` of the block (caller).
            unsafe {
                st32(o, os, c, _mm256_permute2x128_si256::<0x20>(x, y), nt);
                st32(o, os, 8 + c, _mm256_permute2x128_si256::<0x31>(x, y), nt);
            }
        }
    }

    /// The 8×8 transpose network of [`block8x2`] on the two 128-bit halves of eight
    /// 256-bit rows: result `c` holds, in each half, column `c` of that half's 8×8 block.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn net8x2(r: &[__m256i]) -> [__m256i; 8] {
        // Pairs of 16-bit lanes, then 32-bit pairs, then 64-bit halves (as `block8x2`).
        let a: [__m256i; 8] = std::array::from_fn(|k| {
            let (x, y) = (r[2 * (k / 2)], r[2 * (k / 2) + 1]);
            if k % 2 == 0 {
                _mm256_unpacklo_epi16(x, y)
            } else {
                _mm256_unpackhi_epi16(x, y)
            }
        });
        let b: [__m256i; 8] = std::array::from_fn(|k| {
            let half = k / 4;
            let hi_cols = (k / 2) % 2;
            let (x, y) = (a[4 * half + hi_cols], a[4 * half + 2 + hi_cols]);
            if k % 2 == 0 {
                _mm256_unpacklo_epi32(x, y)
            } else {
                _mm256_unpackhi_epi32(x, y)
            }
        });
        std::array::from_fn(|c| {
            let (x, y) = (b[c / 2], b[4 + c / 2]);
            if c % 2 == 0 {
                _mm256_unpacklo_epi64(x, y)
            } else {
                _mm256_unpackhi_epi64(x, y)
            }
        })
    }

    /// Stores `v` to the 32 bytes at `p + k·s`, non-temporally if `nt`.
    ///
    /// # Safety
    /// Those bytes must be writable; with `nt`, 32-byte aligned; AVX.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn st32(p: *mut u8, s: isize, k: usize, v: __m256i, nt: bool) {
        let p = p.wrapping_offset(k as isize * s).cast();
        // SAFETY: forwarded to the caller.
        unsafe {
            if nt {
                _mm256_stream_si256(p, v)
            } else {
                _mm256_storeu_si256(p, v)
            }
        }
    }

    /// As [`wide`] with AVX2: each 64-byte row of a line-wide block moves as two 32-byte
    /// halves, the block as four 8×8 (4-byte) or 4×4 (8-byte) register transposes whose
    /// output halves land side by side, so every output line is still written whole.
    ///
    /// # Safety
    /// The CPU must have AVX2; otherwise as for [`wide`].
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn wide_avx2(
        t: &super::Tile,
        tr: std::ops::Range<usize>,
        lr: std::ops::Range<usize>,
    ) {
        let b = 64 / t.item;
        let h = b / 2;
        let aligned = t.os % 64 == 0;
        t.blocks(tr, lr, b, |o, i| {
            let nt = t.stream && aligned && (o as usize).is_multiple_of(64);
            // Quarter (p, q): input rows p·h.., input columns q·h.. go to output rows
            // q·h.., output columns p·h.. (byte offsets along rows: `h·item` = 32).
            for p in 0..2 {
                for q in 0..2 {
                    let (p, q, h) = (p as isize, q as isize, h as isize);
                    let ii = i.wrapping_offset(p * h * t.is + q * 32);
                    let oo = o.wrapping_offset(q * h * t.os + p * 32);
                    // SAFETY: the quarter lies inside the block, inside the rectangle
                    // (caller); AVX2 is there (caller; the closure inherits it).
                    unsafe {
                        if t.item == 4 {
                            half4(oo, t.os, ii, t.is, nt)
                        } else {
                            half8(oo, t.os, ii, t.is, nt)
                        }
                    }
                }
            }
        });
    }

    /// Transposes an 8×8 block of 4-byte elements, rows of 32 bytes (input rows at
    /// `i + k·is`, output rows at `o + k·os`).
    ///
    /// # Safety
    /// Each of the 16 rows must be valid (input readable, output writable, 32-byte aligned
    /// with `nt`); AVX2.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn half4(o: *mut u8, os: isize, i: *const u8, is: isize, nt: bool) {
        // SAFETY: the loads read the block's input rows (caller).
        let r: [__m256i; 8] = std::array::from_fn(|k| unsafe {
            _mm256_loadu_si256(i.wrapping_offset(k as isize * is).cast())
        });
        // Rows 2k, 2k+1 interleaved by 32-bit lane, within each 128-bit half.
        let t: [__m256i; 8] = std::array::from_fn(|k| {
            let (x, y) = (r[k & !1], r[k | 1]);
            if k % 2 == 0 {
                _mm256_unpacklo_epi32(x, y)
            } else {
                _mm256_unpackhi_epi32(x, y)
            }
        });
        // Then 64-bit pairs: u[4g + j] holds column j (low half) and j + 4 (high half)
        // of rows 4g..4g+4.
        let u: [__m256i; 8] = std::array::from_fn(|k| {
            let (g, j) = (k / 4, k % 4);
            let (x, y) = (t[4 * g + j / 2], t[4 * g + j / 2 + 2]);
            if j % 2 == 0 {
                _mm256_unpacklo_epi64(x, y)
            } else {
                _mm256_unpackhi_epi64(x, y)
            }
        });
        for j in 0..4 {
            let (x, y) = (u[j], u[4 + j]);
            // SAFETY: output rows j and j + 4 of the block (caller).
            unsafe {
                st32(o, os, j, _mm256_permute2x128_si256::<0x20>(x, y), nt);
                st32(o, os, j + 4, _mm256_permute2x128_si256::<0x31>(x, y), nt);
            }
        }
    }

    /// Transposes a 4×4 block of 8-byte elements, rows of 32 bytes (see [`half4`]).
    ///
    /// # Safety
    /// As for [`half4`], with 8 rows.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn half8(o: *mut u8, os: isize, i: *const u8, is: isize, nt: bool) {
        // SAFETY: the loads read the block's input rows (caller).
        let r: [__m256i; 4] = std::array::from_fn(|k| unsafe {
            _mm256_loadu_si256(i.wrapping_offset(k as isize * is).cast())
        });
        // t[0]: r0[0] r1[0] | r0[2] r1[2]; t[1]: r0[1] r1[1] | r0[3] r1[3]; t[2], t[3]
        // the same for rows 2, 3.
        let t = [
            _mm256_unpacklo_epi64(r[0], r[1]),
            _mm256_unpackhi_epi64(r[0], r[1]),
            _mm256_unpacklo_epi64(r[2], r[3]),
            _mm256_unpackhi_epi64(r[2], r[3]),
        ];
        // SAFETY: output rows 0..4 of the block (caller).
        unsafe {
            st32(o, os, 0, _mm256_permute2x128_si256::<0x20>(t[0], t[2]), nt);
            st32(o, os, 1, _mm256_permute2x128_si256::<0x20>(t[1], t[3]), nt);
            st32(o, os, 2, _mm256_permute2x128_si256::<0x31>(t[0], t[2]), nt);
            st32(o, os, 3, _mm256_permute2x128_si256::<0x31>(t[1], t[3]), nt);
        }
    }

    /// Stores `v` to the 64 bytes at `p + k·s`, non-temporally if `nt`.
    ///
    /// # Safety
    /// Those bytes must be writable; with `nt`, 64-byte aligned; AVX-512F.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn st64(p: *mut u8, s: isize, k: usize, v: __m512i, nt: bool) {
        let p = p.wrapping_offset(k as isize * s).cast();
        // SAFETY: forwarded to the caller.
        unsafe {
            if nt {
                _mm512_stream_si512(p, v)
            } else {
                _mm512_storeu_si512(p, v)
            }
        }
    }

    /// Transposes a 16×16 block of 4-byte elements: input rows at `i + k·is`, output rows
    /// at `o + k·os`, 64 bytes each.
    ///
    /// # Safety
    /// Each of the 32 rows must be valid (input readable, output writable, 64-byte aligned
    /// with `nt`); AVX-512F.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn wide4(o: *mut u8, os: isize, i: *const u8, is: isize, nt: bool) {
        // SAFETY: the loads read the block's input rows (caller).
        let mut r: [__m512i; 16] = std::array::from_fn(|k| unsafe {
            _mm512_loadu_si512(i.wrapping_offset(k as isize * is).cast())
        });
        let mut t = r;
        // Pairs of rows interleaved by 32-bit lane: t[2k], t[2k+1] hold rows 2k, 2k+1
        // columns (0,1), (2,3) of each 128-bit quarter.
        for k in 0..8 {
            t[2 * k] = _mm512_unpacklo_epi32(r[2 * k], r[2 * k + 1]);
            t[2 * k + 1] = _mm512_unpackhi_epi32(r[2 * k], r[2 * k + 1]);
        }
        // Then 64-bit pairs: within each 128-bit quarter, r[4k + j] holds column j of
        // rows 4k..4k+4 (a 4×4 transpose per quarter).
        for k in 0..4 {
            r[4 * k] = _mm512_unpacklo_epi64(t[4 * k], t[4 * k + 2]);
            r[4 * k + 1] = _mm512_unpackhi_epi64(t[4 * k], t[4 * k + 2]);
            r[4 * k + 2] = _mm512_unpacklo_epi64(t[4 * k + 1], t[4 * k + 3]);
            r[4 * k + 3] = _mm512_unpackhi_epi64(t[4 * k + 1], t[4 * k + 3]);
        }
        // Then the 128-bit quarters, in two rounds (as `wide8`).
        for h in 0..2 {
            for k in 0..4 {
                let (x, y) = (r[8 * h + k], r[8 * h + k + 4]);
                t[8 * h + k] = _mm512_shuffle_i32x4::<0x88>(x, y);
                t[8 * h + k + 4] = _mm512_shuffle_i32x4::<0xDD>(x, y);
            }
        }
        for k in 0..8 {
            r[k] = _mm512_shuffle_i32x4::<0x88>(t[k], t[k + 8]);
            r[k + 8] = _mm512_shuffle_i32x4::<0xDD>(t[k], t[k + 8]);
        }
        for (k, v) in r.into_iter().enumerate() {
            // SAFETY: output row `k` of the block (caller).
            unsafe { st64(o, os, k, v, nt) };
        }
    }

    /// Transposes an 8×8 block of 8-byte elements (see [`wide4`]).
    ///
    /// # Safety
    /// As for [`wide4`], with 16 rows.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn wide8(o: *mut u8, os: isize, i: *const u8, is: isize, nt: bool) {
        // SAFETY: the loads read the block's input rows (caller).
        let r: [__m512i; 8] = std::array::from_fn(|k| unsafe {
            _mm512_loadu_si512(i.wrapping_offset(k as isize * is).cast())
        });
        // t[2k] holds rows 2k, 2k+1 of the even columns, one column per 128-bit quarter
        // (0, 2, 4, 6); t[2k+1] the odd ones.
        let t: [__m512i; 8] = std::array::from_fn(|k| {
            let (x, y) = (r[k & !1], r[k | 1]);
            if k % 2 == 0 {
                _mm512_unpacklo_epi64(x, y)
            } else {
                _mm512_unpackhi_epi64(x, y)
            }
        });
        // Quarters 0, 2 / 1, 3 of two such registers: u[j] (j < 4) holds rows 0-3,
        // u[4 + j] rows 4-7, of columns (0, 4), (2, 6), (1, 5), (3, 7) for j = 0..4.
        let u: [__m512i; 8] = std::array::from_fn(|k| {
            let (h, j) = (k / 4, k % 4);
            let (x, y) = (t[4 * h + j / 2], t[4 * h + j / 2 + 2]);
            if j % 2 == 0 {
                _mm512_shuffle_i64x2::<0x88>(x, y)
            } else {
                _mm512_shuffle_i64x2::<0xDD>(x, y)
            }
        });
        // Output column c: the pair u[j], u[4 + j] whose columns include c.
        for (j, cols) in [(0, [0, 4]), (1, [2, 6]), (2, [1, 5]), (3, [3, 7])] {
            let (x, y) = (u[j], u[4 + j]);
            // SAFETY: output rows `cols` of the block (caller).
            unsafe {
                st64(o, os, cols[0], _mm512_shuffle_i64x2::<0x88>(x, y), nt);
                st64(o, os, cols[1], _mm512_shuffle_i64x2::<0xDD>(x, y), nt);
            }
        }
    }

    /// Transposes a 4×4 block of 4-byte elements: input rows at `i + k·is`, output rows at
    /// `o + k·os`, 16 bytes each.
    ///
    /// # Safety
    /// Each of the eight 16-byte rows must be valid (input readable, output writable).
    #[inline(always)]
    unsafe fn block4x4(o: *mut u8, os: isize, i: *const u8, is: isize, nt: bool) {
        // SAFETY: forwarded to the caller (rows 0..4 of each side).
        unsafe {
            let (r0, r1, r2, r3) = (ld(i, is, 0), ld(i, is, 1), ld(i, is, 2), ld(i, is, 3));
            let a = _mm_unpacklo_epi32(r0, r1); // r0[0] r1[0] r0[1] r1[1]
            let b = _mm_unpacklo_epi32(r2, r3); // r2[0] r3[0] r2[1] r3[1]
            let c = _mm_unpackhi_epi32(r0, r1); // r0[2] r1[2] r0[3] r1[3]
            let d = _mm_unpackhi_epi32(r2, r3); // r2[2] r3[2] r2[3] r3[3]
            st(o, os, 0, _mm_unpacklo_epi64(a, b), nt);
            st(o, os, 1, _mm_unpackhi_epi64(a, b), nt);
            st(o, os, 2, _mm_unpacklo_epi64(c, d), nt);
            st(o, os, 3, _mm_unpackhi_epi64(c, d), nt);
        }
    }

    /// Transposes a 2×2 block of 8-byte elements (see [`block4x4`]).
    ///
    /// # Safety
    /// Each of the four 16-byte rows must be valid.
    #[inline(always)]
    unsafe fn block2x8(o: *mut u8, os: isize, i: *const u8, is: isize, nt: bool) {
        // SAFETY: forwarded to the caller (rows 0..2 of each side).
        unsafe {
            let (r0, r1) = (ld(i, is, 0), ld(i, is, 1));
            st(o, os, 0, _mm_unpacklo_epi64(r0, r1), nt);
            st(o, os, 1, _mm_unpackhi_epi64(r0, r1), nt);
        }
    }

    /// Transposes an 8×8 block of 2-byte elements (see [`block4x4`]).
    ///
    /// # Safety
    /// Each of the sixteen 16-byte rows must be valid.
    #[inline(always)]
    unsafe fn block8x2(o: *mut u8, os: isize, i: *const u8, is: isize, nt: bool) {
        // SAFETY: forwarded to the caller (rows 0..8 of each side).
        unsafe {
            let r: [__m128i; 8] = std::array::from_fn(|k| ld(i, is, k as isize));
            // Pairs of 16-bit lanes, then 32-bit pairs, then 64-bit halves.
            let a: [__m128i; 8] = std::array::from_fn(|k| {
                let (x, y) = (r[2 * (k / 2)], r[2 * (k / 2) + 1]);
                if k % 2 == 0 {
                    _mm_unpacklo_epi16(x, y)
                } else {
                    _mm_unpackhi_epi16(x, y)
                }
            });
            // a[0] = r0r1 cols 0-3, a[1] = r0r1 cols 4-7, a[2] = r2r3 cols 0-3, …
            let b: [__m128i; 8] = std::array::from_fn(|k| {
                let half = k / 4; // 0: rows 0-3, 1: rows 4-7
                let hi_cols = (k / 2) % 2; // 0: cols 0-3, 1: cols 4-7
                let (x, y) = (a[4 * half + hi_cols], a[4 * half + 2 + hi_cols]);
                if k % 2 == 0 {
                    _mm_unpacklo_epi32(x, y)
                } else {
                    _mm_unpackhi_epi32(x, y)
                }
            });
            // b[4h + 2c + j] holds columns 4c+2j and 4c+2j+1 of rows 4h..4h+4.
            for col in 0..4 {
                let (x, y) = (b[col], b[4 + col]);
                st(o, os, 2 * col as isize, _mm_unpacklo_epi64(x, y), nt);
                st(o, os, 2 * col as isize + 1, _mm_unpackhi_epi64(x, y), nt);
            }
        }
    }
}
