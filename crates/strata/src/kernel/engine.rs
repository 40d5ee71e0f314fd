//! The strided loop engine: plan → simplify → iterate (with cache tiles) → parallelise.
//!
//! A [`Loop`] holds `N` operands over one shape, operand 0 being the output. Each operand
//! is a pointer to its element `[0, 0, …]` and byte strides over the loop shape (stride 0
//! for broadcast dims). [`Loop::run`] calls an inner kernel
//! `f(ptrs, byte_strides, len)` once per run of the innermost dim, so the kernel's loop is
//! the only per-element code and the compiler can vectorise its contiguous and stride-0
//! cases.
//!
//! Simplification: size-1 dims are dropped, dims whose strides are ≤ 0 for
//! every operand are flipped to positive, dims are sorted by the output's stride (then the
//! inputs'), and dims that are contiguous for every operand are coalesced. When an input's
//! fastest dim is not the output's (transposes, permutes, `a + b.T`), the two dims are
//! iterated in cache tiles so both sides stream from cache.

use rayon::prelude::*;

use crate::layout::{DimVec, Layout};

/// Elements below which an op runs on one thread (PyTorch's grain size): for kernels that
/// spend nanoseconds per element (transcendental math, small matmuls).
pub const GRAIN: usize = 32768;

/// Elements below which a memory-bound kernel (copy, cast, arithmetic, comparison, sum)
/// runs on one thread. Handing work to rayon's sleeping workers and waiting for them costs
/// about as long as one thread takes to add two f32 vectors of this length, so a smaller
/// op is slower on two threads than on one (PyTorch's 32768 assumes OpenMP threads that
/// spin). The measurements are in the tuning notes of `benches/engine.rs`.
pub const PAR_MIN: usize = 1 << 18;

/// Elements from which a kernel is split across threads: [`GRAIN`] when it spends
/// nanoseconds per element, because it is `math` (transcendental functions) or has an
/// operand in f16/bf16 (converted element by element through f32, so even a multiply
/// costs as much per element as math), else [`PAR_MIN`].
pub(crate) fn par_from(math: bool, dtypes: &[crate::DType]) -> usize {
    if math
        || dtypes
            .iter()
            .any(|d| matches!(d, crate::DType::F16 | crate::DType::BF16))
    {
        GRAIN
    } else {
        PAR_MIN
    }
}

/// Width of a cache tile along the innermost dim, in output bytes (eight cache lines):
/// each tile row is then a run the prefetchers follow, while a tile of [`TILE_ROWS`] rows
/// still fits in L2. Chosen on large transposes and 4-d permutes against narrower (one
/// line) and wider tiles; the measurements are in the tuning notes of `benches/engine.rs`.
const TILE_BYTES: usize = 512;
/// Length of a cache tile along the tiled dim, in elements.
const TILE_ROWS: usize = 256;
/// Output rows up to this many bytes are tiled whole (see `Loop::run_tiled`).
const SHORT_ROW: usize = 256;
/// Loops writing at least this many output bytes are "streaming": far too large to stay
/// in cache for whoever reads the result next, so a copy tile may write whole output
/// lines with non-temporal stores, which skip reading each line into cache before
/// overwriting it (a third of a copy's memory traffic). See Note [streaming tiles].
const STREAM_MIN: usize = 8 << 20;
/// Tile width along the innermost dim of a streaming loop, in output bytes (two lines).
const STREAM_TILE_BYTES: usize = 128;
/// Tile length along the tiled dim of a streaming loop, in elements.
const STREAM_ROWS: usize = 1024;
/// Width of an elementwise op's tile, in output bytes (see Note [staged tiles]).
const STAGED_TILE_BYTES: usize = 2048;
/// Length of an elementwise op's tile along the tiled dim, in elements.
const STAGED_ROWS: usize = 256;

// Note [staged tiles]
// ~~~~~~~~~~~~~~~~~~~
// An elementwise op with an input transposed against its output (`a + b.T`) copies that
// input's part of each tile into scratch (`stage_tile`), then runs its contiguous kernel
// over the tile's rows. The output and the other inputs are read and written along those
// rows, so a tile must be wide enough for each row to be a prefetchable stream of its
// own, and its staged part must stay in L2 until the kernel reads it: 2 KiB × 256 rows
// (512 KiB of f32 scratch). Narrower tiles, and tiles of a few whole rows (the staging
// then reads one line from each of thousands of rows), measured clearly slower; longer
// ones no faster. The staging copy itself walks its input a band of two line-wide blocks
// at a time (`x86::wide`), so that it too reads whole lines. The measurements are in the
// tuning notes of `benches/engine.rs`.
// Note [streaming tiles]
// ~~~~~~~~~~~~~~~~~~~~~~
// A transposing copy moves whole cache lines on both sides only when its register blocks
// are a line wide (16×16 f32, 8×8 f64 with AVX-512). Its output lines are then written
// whole, once each, so when the output is large (STREAM_MIN) there is no point reading
// them into cache first: the tile stores them non-temporally. Once nothing needs the
// tile to stay in cache, the best tile is the one that keeps the input streaming: few
// input rows at a time (the hardware prefetchers follow a few dozen streams), each read
// a long way: two output lines × 1024 rows came closest to a plain memcpy on a large
// transpose; wider tiles, the cached tile, and 16-byte SSE blocks (a line then written
// in four pieces) were slower. The measurements are in the tuning notes of
// `benches/engine.rs`.

type Dims = DimVec<usize>;
type Bytes = DimVec<isize>;

/// `N` raw pointers that may cross to rayon workers.
#[derive(Clone, Copy)]
struct Ptrs<const N: usize>([*mut u8; N]);
// SAFETY: the pointers address storages kept alive and borrowed by the op for the whole
// `run` call (invariant S4); workers write disjoint output elements (outer ranges never
// overlap and the output has no internal overlap, checked by the op).
unsafe impl<const N: usize> Send for Ptrs<N> {}
// SAFETY: as above; workers only read the pointer values.
unsafe impl<const N: usize> Sync for Ptrs<N> {}

impl<const N: usize> Ptrs<N> {
    /// The pointers (a method, so closures capture the `Send` wrapper, not the field).
    fn get(self) -> [*mut u8; N] {
        self.0
    }
}

/// An `N`-operand strided loop (operand 0 is the output).
#[derive(Debug, Clone)]
pub(crate) struct Loop<const N: usize> {
    shape: Dims,
    strides: [Bytes; N],
    ptrs: [*mut u8; N],
    /// Dim iterated in tiles together with the innermost one, if any.
    tile_dim: Option<usize>,
    /// Item size of each operand, in bytes.
    items: [usize; N],
}

// SAFETY: see `Ptrs`: the pointers are only dereferenced by the op's kernel under the
// op's borrows, with workers on disjoint output ranges.
unsafe impl<const N: usize> Sync for Loop<N> {}

impl<const N: usize> Loop<N> {
    /// A loop over `shape`; each operand is `(layout broadcast to shape, itemsize, storage
    /// base pointer)`.
    ///
    /// The caller guarantees each layout has exactly `shape` and lies inside its storage
    /// (L4), so every pointer computed from it is in bounds.
    pub(crate) fn new(shape: &[usize], ops: [(&Layout, usize, *mut u8); N]) -> Loop<N> {
        debug_assert!(ops.iter().all(|(l, _, _)| l.shape() == shape));
        let strides = std::array::from_fn(|k| {
            let (l, item, _) = ops[k];
            // Wrapping: only size-1 dims (dropped below, never stepped) can carry strides
            // this large; L4 bounds the others.
            l.strides()
                .iter()
                .map(|&s| s.wrapping_mul(item as isize))
                .collect()
        });
        let ptrs = std::array::from_fn(|k| {
            let (l, item, base) = ops[k];
            // Wrapping: only an empty view (never stepped) can have an offset past its
            // storage.
            base.wrapping_add(l.offset().wrapping_mul(item))
        });
        let mut lp = Loop {
            shape: shape.into(),
            strides,
            ptrs,
            tile_dim: None,
            items: std::array::from_fn(|k| ops[k].1),
        };
        lp.simplify();
        lp
    }

    /// Number of elements.
    pub(crate) fn numel(&self) -> usize {
        crate::layout::numel_of(&self.shape)
    }

    /// The simplified shape (outer → inner).
    #[cfg(test)]
    pub(crate) fn shape(&self) -> &[usize] {
        &self.shape
    }

    fn simplify(&mut self) {
        if self.shape.contains(&0) {
            self.shape = [0].into_iter().collect();
            for s in &mut self.strides {
                *s = [0].into_iter().collect();
            }
            return;
        }
        // Drop size-1 dims.
        let keep: Dims = (0..self.shape.len())
            .filter(|&d| self.shape[d] != 1)
            .collect();
        self.shape = keep.iter().map(|&d| self.shape[d]).collect();
        for s in &mut self.strides {
            *s = keep.iter().map(|&d| s[d]).collect();
        }
        // Flip dims that run backwards for every operand.
        for d in 0..self.shape.len() {
            if self.strides.iter().all(|s| s[d] <= 0) && self.strides.iter().any(|s| s[d] < 0) {
                let n = self.shape[d] as isize - 1;
                for k in 0..N {
                    self.ptrs[k] = self.ptrs[k].wrapping_offset(n * self.strides[k][d]);
                    self.strides[k][d] = -self.strides[k][d];
                }
            }
        }
        // Order dims so the innermost is the output's fastest, ties broken by the inputs;
        // stride-0 (broadcast or reduced) dims say nothing for that operand. This is
        // PyTorch's insertion sort, which tolerates the comparison not being a total order.
        let nd = self.shape.len();
        let should_swap = |a: usize, b: usize| -> std::cmp::Ordering {
            for s in &self.strides {
                let (x, y) = (s[a].unsigned_abs(), s[b].unsigned_abs());
                if x == 0 || y == 0 {
                    continue;
                }
                if x != y {
                    return x.cmp(&y);
                }
            }
            std::cmp::Ordering::Equal
        };
        // `fast` lists dims fastest first.
        let mut fast: Dims = (0..nd).rev().collect();
        for i in 1..nd {
            let mut d1 = i;
            for d0 in (0..i).rev() {
                match should_swap(fast[d0], fast[d1]) {
                    std::cmp::Ordering::Greater => {
                        fast.swap(d0, d1);
                        d1 = d0;
                    }
                    std::cmp::Ordering::Less => break,
                    std::cmp::Ordering::Equal => {}
                }
            }
        }
        let order: Dims = fast.iter().rev().copied().collect();
        self.shape = order.iter().map(|&d| self.shape[d]).collect();
        for s in &mut self.strides {
            *s = order.iter().map(|&d| s[d]).collect();
        }
        // Coalesce dims d-1 (outer) and d (inner) contiguous for every operand.
        let mut d = self.shape.len();
        while d > 1 {
            d -= 1;
            let n = self.shape[d] as isize;
            if self.strides.iter().all(|s| s[d - 1] == s[d] * n) {
                self.shape[d - 1] *= self.shape[d];
                self.shape.remove(d);
                for s in &mut self.strides {
                    s[d - 1] = s[d];
                    s.remove(d);
                }
            }
        }
        if self.shape.is_empty() {
            self.shape.push(1);
            for s in &mut self.strides {
                s.push(0);
            }
        }
        self.tile_dim = self.pick_tile_dim();
    }

    /// A dim to tile with the innermost one: when some input moves fastest along another
    /// dim than the innermost, both dims are walked in cache-sized tiles.
    fn pick_tile_dim(&self) -> Option<usize> {
        let nd = self.shape.len();
        if nd < 2 || self.shape[nd - 1] < 8 {
            return None;
        }
        let last = nd - 1;
        for s in &self.strides[1..] {
            let inner = s[last].unsigned_abs();
            // The input's fastest non-broadcast dim among the outer ones.
            let best = (0..last)
                .filter(|&d| s[d] != 0 && self.shape[d] >= 8)
                .min_by_key(|&d| s[d].unsigned_abs());
            if let Some(d) = best {
                if s[d].unsigned_abs() < inner && s[d].unsigned_abs() <= 16 {
                    return Some(d);
                }
            }
        }
        None
    }

    /// Runs `f(ptrs, strides, len)` over every innermost run, in parallel when the loop
    /// has at least `par_from` elements (see [`par_from`]). In a tiled loop, an input
    /// transposed against the output is staged per tile into a compact scratch block (see
    /// [`stage_tile`](super::transpose::stage_tile)), so `f` reads it contiguously.
    ///
    /// # Safety
    /// The operands' pointers must be valid for every element the loop visits (reads for
    /// inputs, writes for the output), under borrows the caller holds; the output must not
    /// overlap itself; `f` must only access `len` elements at the given strides.
    pub(crate) unsafe fn run<F>(&self, par_from: usize, f: F)
    where
        F: Fn([*mut u8; N], [isize; N], usize) + Sync,
    {
        let items = self.items;
        let tile = |p, ts, ls, nt, nl, _stream| {
            // SAFETY: forwarded to the caller: `stage_tile` reads the tile's inputs and
            // calls `f` on the tile's runs only (inputs are never written).
            unsafe { super::transpose::stage_tile(p, ts, ls, (nt, nl), items, &f) }
        };
        // SAFETY: forwarded to the caller.
        unsafe { self.run_with(par_from, &f, tile, true) }
    }

    /// As [`run`](Self::run), but a tiled loop hands each whole cache tile to `tile(ptrs,
    /// tile_strides, inner_strides, tile_rows, inner_len, stream)` (rows along the tiled
    /// dim, runs along the innermost), so a kernel can move the tile in register blocks;
    /// untiled loops call `f` per run as `run` does. `stream` says the loop is streaming
    /// (Note [streaming tiles]): the tile may store its output non-temporally, and must
    /// then fence those stores before it returns.
    ///
    /// # Safety
    /// As for [`run`](Self::run); `tile` must only access the `tile_rows × inner_len`
    /// elements at the given strides.
    pub(crate) unsafe fn run_tiles<F, G>(&self, par_from: usize, f: F, tile: G)
    where
        F: Fn([*mut u8; N], [isize; N], usize) + Sync,
        G: Fn([*mut u8; N], [isize; N], [isize; N], usize, usize, bool) + Sync,
    {
        // SAFETY: forwarded to the caller.
        unsafe { self.run_with(par_from, f, tile, false) }
    }

    /// [`run_tiles`](Self::run_tiles), with tiles shaped for staging (`staged`, see Note
    /// [staged tiles]) or for a copy.
    ///
    /// # Safety
    /// As for [`run_tiles`](Self::run_tiles).
    unsafe fn run_with<F, G>(&self, par_from: usize, f: F, tile: G, staged: bool)
    where
        F: Fn([*mut u8; N], [isize; N], usize) + Sync,
        G: Fn([*mut u8; N], [isize; N], [isize; N], usize, usize, bool) + Sync,
    {
        if self.numel() == 0 {
            return;
        }
        let go = |threads: usize| match self.tile_dim {
            Some(td) => self.run_tiled(td, threads, &tile, staged),
            None => self.run_rows(threads, &f),
        };
        // With one thread, neither walk calls rayon (see `kernel::pool`).
        if self.numel() >= par_from {
            super::pool::parallel(go)
        } else {
            go(1)
        }
    }

    /// Plain iteration: every index of the outer dims, one inner run each.
    fn run_rows<F>(&self, threads: usize, f: &F)
    where
        F: Fn([*mut u8; N], [isize; N], usize) + Sync,
    {
        let nd = self.shape.len();
        let inner = self.shape[nd - 1];
        let inner_strides: [isize; N] = std::array::from_fn(|k| self.strides[k][nd - 1]);
        // 0 when a dim is 0 (then the leading dims may multiply past `usize`).
        let rows = crate::layout::numel_of(&self.shape[..nd - 1]);
        // A long single run is split into blocks (each block is still a whole inner loop
        // for the kernel; only the range is cut).
        if rows < threads && inner >= 2 * GRAIN {
            let block = inner.div_ceil(threads * 4).max(GRAIN);
            let nblocks = inner.div_ceil(block);
            let base = Ptrs(self.ptrs);
            (0..rows * nblocks).into_par_iter().for_each(|job| {
                let (row, b) = (job / nblocks, job % nblocks);
                let start = b * block;
                let len = block.min(inner - start);
                let p = self.row_ptrs(base.get(), row);
                let p = std::array::from_fn(|k| {
                    p[k].wrapping_offset(start as isize * inner_strides[k])
                });
                f(p, inner_strides, len);
            });
            return;
        }
        let do_range = |lo: usize, hi: usize| {
            let mut idx: Dims = DimVec::from_elem(0, nd - 1);
            let mut rem = lo;
            for d in (0..nd - 1).rev() {
                idx[d] = rem % self.shape[d];
                rem /= self.shape[d];
            }
            let mut p = self.row_ptrs(self.ptrs, lo);
            for _ in lo..hi {
                f(p, inner_strides, inner);
                // Odometer step over the outer dims.
                let mut d = nd - 1;
                while d > 0 {
                    d -= 1;
                    idx[d] += 1;
                    for k in 0..N {
                        p[k] = p[k].wrapping_offset(self.strides[k][d]);
                    }
                    if idx[d] < self.shape[d] {
                        break;
                    }
                    for k in 0..N {
                        p[k] = p[k].wrapping_offset(-(self.shape[d] as isize) * self.strides[k][d]);
                    }
                    idx[d] = 0;
                }
            }
        };
        if threads <= 1 || rows < 2 {
            do_range(0, rows);
        } else {
            let chunks = (threads * 4).min(rows);
            let per = rows.div_ceil(chunks);
            (0..chunks).into_par_iter().for_each(|c| {
                let lo = c * per;
                let hi = ((c + 1) * per).min(rows);
                if lo < hi {
                    do_range(lo, hi);
                }
            });
        }
    }

    /// Pointers of outer row `row` (row-major over the outer dims).
    fn row_ptrs(&self, base: [*mut u8; N], row: usize) -> [*mut u8; N] {
        let nd = self.shape.len();
        let mut p = base;
        let mut rem = row;
        for d in (0..nd - 1).rev() {
            let i = (rem % self.shape[d]) as isize;
            rem /= self.shape[d];
            for k in 0..N {
                p[k] = p[k].wrapping_offset(i * self.strides[k][d]);
            }
        }
        p
    }

    /// Tiled iteration over dim `td` and the innermost dim, in tiles shaped for staging
    /// (`staged`) or for a copy.
    fn run_tiled<G>(&self, td: usize, threads: usize, tile: &G, staged: bool)
    where
        G: Fn([*mut u8; N], [isize; N], [isize; N], usize, usize, bool) + Sync,
    {
        let nd = self.shape.len();
        let last = nd - 1;
        let (nt, nl) = (self.shape[td], self.shape[last]);
        let inner_strides: [isize; N] = std::array::from_fn(|k| self.strides[k][last]);
        let t_strides: [isize; N] = std::array::from_fn(|k| self.strides[k][td]);
        // Outer dims are all but `td` and `last`.
        let outer: Dims = (0..last).filter(|&d| d != td).collect();
        let outer_count = outer
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(self.shape[d]))
            .unwrap_or(0); // passes `usize` only when some dim is 0: nothing to do

        // A copy's tile is TILE_BYTES of output wide (whole output lines, each written
        // once) and TILE_ROWS long along the dim the input streams in; a streaming loop's
        // are narrower and longer (Note [streaming tiles]), and an elementwise op's wider
        // (Note [staged tiles]).
        let out_step = self.strides[0][last].unsigned_abs().max(1);
        // Only copies stream (staged tiles run the op's own kernel), and not 2-byte
        // elements: their 16-byte blocks write a line in eight pieces, and streaming
        // measured slower for them.
        let stream = !staged
            && self.numel().saturating_mul(self.items[0]) >= STREAM_MIN
            && matches!(self.items[0], 4 | 8);
        let (width, tile_t) = if staged {
            (STAGED_TILE_BYTES, STAGED_ROWS)
        } else if stream {
            (STREAM_TILE_BYTES, STREAM_ROWS)
        } else {
            (TILE_BYTES, TILE_ROWS)
        };
        let line = (width / out_step).clamp(4, width);
        // A tiled dim shorter than the tile widens the tile along the run to keep its
        // area, up to runs that `stage_tile` can still stage for any element size; an
        // output row of at most SHORT_ROW bytes is taken whole, so the output is written
        // front to back (what makes NCHW ↔ NHWC with few channels close to a memcpy).
        let tile_l = if nl * out_step <= SHORT_ROW {
            nl
        } else if nt < tile_t {
            (line * tile_t / nt).clamp(line, super::transpose::STAGE_BYTES / 8)
        } else {
            line
        };
        let tiles_t = nt.div_ceil(tile_t);
        let tiles_l = nl.div_ceil(tile_l);
        let jobs = outer_count * tiles_t;
        let base = Ptrs(self.ptrs);
        let job = |j: usize| {
            let (o, bt) = (j / tiles_t, j % tiles_t);
            let mut p = base.get();
            let mut rem = o;
            for &d in outer.iter().rev() {
                let i = (rem % self.shape[d]) as isize;
                rem /= self.shape[d];
                for k in 0..N {
                    p[k] = p[k].wrapping_offset(i * self.strides[k][d]);
                }
            }
            let t0 = bt * tile_t;
            let t1 = (t0 + tile_t).min(nt);
            for bl in 0..tiles_l {
                let l0 = bl * tile_l;
                let len = tile_l.min(nl - l0);
                let q: [*mut u8; N] = std::array::from_fn(|k| {
                    p[k].wrapping_offset(
                        t0 as isize * t_strides[k] + l0 as isize * inner_strides[k],
                    )
                });
                tile(q, t_strides, inner_strides, t1 - t0, len, stream);
            }
        };
        if threads <= 1 || jobs < 2 {
            (0..jobs).for_each(job);
        } else {
            (0..jobs).into_par_iter().for_each(job);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lp(shape: &[usize], layouts: &[Layout]) -> Loop<2> {
        let p = std::ptr::null_mut::<u8>().wrapping_add(1 << 20);
        Loop::new(shape, [(&layouts[0], 4, p), (&layouts[1], 4, p)])
    }

    #[test]
    fn simplify_coalesces_and_flips() {
        let c = Layout::contiguous(&[4, 5, 6]).unwrap();
        assert_eq!(lp(&[4, 5, 6], &[c.clone(), c.clone()]).shape(), &[120]);
        let f = c.flip(&[0, 1, 2]).unwrap();
        let fl = lp(&[4, 5, 6], &[f.clone(), f]);
        assert_eq!(fl.shape(), &[120]);
        let c = Layout::contiguous(&[16, 5, 12]).unwrap();
        let t = Layout::contiguous(&[12, 5, 16])
            .unwrap()
            .permute(&[2, 1, 0])
            .unwrap();
        let tl = lp(&[16, 5, 12], &[c, t]);
        assert_eq!(tl.shape(), &[16, 5, 12]);
        assert_eq!(tl.tile_dim, Some(0));
    }
}
