//! The fold drivers: "horizontal" (each output folds runs along the fastest input dim,
//! with several accumulators and pairwise combination) and "vertical" (a block of output
//! elements along the fastest *kept* dim is folded row by row: `acc[j] ⊕= x[i, j]`, the
//! accumulator block staying in L1 while the input streams).
//!
//! Determinism: the association tree of every output element depends only on the
//! geometry, never on the thread count or on how work is split; rayon only decides which
//! subtrees run concurrently. So a result is bit-identical for any pool size.

use rayon::prelude::*;
use smallvec::SmallVec;

use super::geom::{count, in_bytes, out_bytes, sizes, Dim, Geom, Odometer};
use super::ops::ReduceOp;
use crate::dtype::Element;
use crate::kernel::engine::GRAIN;

/// Accumulators of the multi-accumulator inner loop.
const LANES: usize = 16;
/// Largest run folded by one multi-accumulator loop for pairwise ops (each lane then adds
/// up 16 elements in sequence, as NumPy's pairwise sum does); longer runs are halved.
const LEAF: usize = 256;
/// The same for order-insensitive ops (leaves only bound the task size).
const LEAF_EXACT: usize = 1 << 15;
/// Rows per leaf of a vertical fold for pairwise ops.
const VLEAF: usize = 16;
/// The same for order-insensitive ops.
const VLEAF_EXACT: usize = 1024;
/// Accumulator bytes of one vertical column block (kept in L1).
const VBLOCK_BYTES: usize = 8192;
/// Elements of a subtree below which it is not split into rayon tasks.
const PAR_MIN: usize = 1 << 16;

/// Raw base pointers of a reduction.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ptrs {
    /// Input storage base.
    pub inp: *const u8,
    /// Output element 0.
    pub out: *mut u8,
    /// Auxiliary `f64` element 0 (same element strides as the output), if any.
    pub aux: Option<*const f64>,
}

/// Byte offsets of the input, output and aux for each kept dim.
struct KeptStrides {
    shape: SmallVec<[usize; 6]>,
    si: SmallVec<[isize; 6]>,
    so: SmallVec<[isize; 6]>,
    sa: SmallVec<[isize; 6]>,
}

impl KeptStrides {
    fn new(dims: &[Dim], isz: usize, osz: usize, has_aux: bool) -> Self {
        KeptStrides {
            shape: sizes(dims),
            si: in_bytes(dims, isz),
            so: out_bytes(dims, osz),
            sa: if has_aux {
                out_bytes(dims, size_of::<f64>())
            } else {
                SmallVec::from_elem(0, dims.len())
            },
        }
    }

    fn odometer(&self, start: usize) -> Odometer<3> {
        Odometer::new(
            &self.shape,
            [self.si.clone(), self.so.clone(), self.sa.clone()],
            start,
        )
    }
}

/// Folds the input into the output with `op`: every output element of `g.kept` gets
/// `finish(fold of its g.red elements, n)`.
///
/// # Safety
/// `p.inp` must be the base of a storage holding every input element `g` addresses, and
/// `p.out` (and `p.aux`) valid for every output element `g` addresses, as guaranteed by
/// building `g` from bounds-checked layouts (L4) of live storages (S1) whose borrows the
/// caller holds (S4: shared for input and aux, exclusive for the output); the output
/// elements must be distinct (a fresh contiguous tensor). `n` is only passed to `finish`.
pub(crate) unsafe fn fold<O: ReduceOp>(op: &O, g: &Geom, p: Ptrs, n: usize, parallel: bool) {
    let total = count(&g.kept).saturating_mul(count(&g.red));
    let par = parallel && rayon::current_num_threads() > 1 && total >= GRAIN;
    // SAFETY: forwarded from the caller.
    unsafe {
        if g.horizontal() {
            horizontal(op, g, p, n, par);
        } else {
            vertical(op, g, p, n, par);
        }
    }
}

/// Each output element folds its own runs.
///
/// # Safety
/// As for [`fold`].
unsafe fn horizontal<O: ReduceOp>(op: &O, g: &Geom, p: Ptrs, n: usize, par: bool) {
    let isz = size_of::<O::In>();
    let osz = size_of::<O::Out>();
    let (run_n, run_s) = match g.red.last() {
        Some(d) => (d.n, d.si * isz as isize),
        None => (1, 0),
    };
    let outer = &g.red[..g.red.len().saturating_sub(1)];
    let runs = Runs {
        shape: sizes(outer),
        strides: in_bytes(outer, isz),
        q: count(outer),
        n: run_n,
        s: run_s,
    };
    let ks = KeptStrides::new(&g.kept, isz, osz, p.aux.is_some());
    let nout = count(&g.kept);
    let in0 = Shared(p.inp.wrapping_offset(g.in_off * isz as isize));
    let out0 = Shared(p.out.wrapping_offset(g.out_off * osz as isize));
    let aux0 = Shared(p.aux.map(|a| a.wrapping_offset(g.out_off)));
    let range = |lo: usize, hi: usize, inner_par: bool| {
        let (in0, out0, aux0) = (in0.get(), out0.get(), aux0.get());
        let mut od = ks.odometer(lo);
        for _ in lo..hi {
            let [io, oo, ao] = od.off;
            // SAFETY: the kept offsets address an output element and its aux element
            // (valid by the caller's contract); `runs` addresses this output's inputs.
            unsafe {
                let aux = match aux0 {
                    Some(a) => a.byte_offset(ao).read_unaligned(),
                    None => 0.0,
                };
                let acc = runs.fold(op, in0.offset(io), aux, inner_par);
                op.finish(acc, n, aux).store(out0.offset(oo));
            }
            od.step();
        }
    };
    let threads = rayon::current_num_threads();
    if par && nout >= 2 * threads {
        let per = nout.div_ceil(threads * 8).max(1);
        let chunks = nout.div_ceil(per);
        (0..chunks)
            .into_par_iter()
            .for_each(|c| range(c * per, ((c + 1) * per).min(nout), false));
    } else {
        range(0, nout, par);
    }
}

/// The runs folded into one output element in horizontal mode: `q` runs (an odometer
/// over the outer reduced dims) of `n` elements at byte stride `s`.
struct Runs {
    shape: SmallVec<[usize; 6]>,
    strides: SmallVec<[isize; 6]>,
    q: usize,
    n: usize,
    s: isize,
}

impl Runs {
    /// Folds every run from `base`.
    ///
    /// # Safety
    /// Every element of every run must be readable (caller of [`fold`]).
    unsafe fn fold<O: ReduceOp>(&self, op: &O, base: *const u8, aux: f64, par: bool) -> O::Acc {
        // SAFETY: forwarded.
        unsafe {
            if self.q == 1 {
                return run_tree(op, base, self.n, self.s, aux, par);
            }
            let leaf = if O::PAIRWISE { LEAF } else { LEAF_EXACT };
            let leaf_runs = (leaf / self.n).max(1);
            self.tree(op, base, 0, self.q, leaf_runs, aux, par)
        }
    }

    /// Pairwise tree over runs `lo..hi`, leaves of up to `leaf_runs` runs.
    ///
    /// # Safety
    /// As for [`Runs::fold`].
    #[allow(clippy::too_many_arguments)]
    unsafe fn tree<O: ReduceOp>(
        &self,
        op: &O,
        base: *const u8,
        lo: usize,
        hi: usize,
        leaf_runs: usize,
        aux: f64,
        par: bool,
    ) -> O::Acc {
        if hi - lo <= leaf_runs {
            let mut od = Odometer::<1>::new(&self.shape, [self.strides.clone()], lo);
            let mut acc = op.identity();
            for _ in lo..hi {
                // SAFETY: the odometer addresses the start of a run of this output.
                let r = unsafe { run_tree(op, base.offset(od.off[0]), self.n, self.s, aux, false) };
                acc = op.combine(acc, r);
                od.step();
            }
            return acc;
        }
        let mid = lo + (hi - lo) / 2;
        let ptr = Shared(base);
        // SAFETY: both halves address runs of this output.
        let (a, b) = if par && (hi - lo) * self.n >= PAR_MIN {
            rayon::join(
                // SAFETY: `[lo, mid)` is a part of this output's runs (caller contract).
                || unsafe { self.tree(op, ptr.get(), lo, mid, leaf_runs, aux, true) },
                // SAFETY: `[mid, hi)` likewise.
                || unsafe { self.tree(op, ptr.get(), mid, hi, leaf_runs, aux, true) },
            )
        } else {
            // SAFETY: both halves address runs of this output (caller contract).
            unsafe {
                (
                    self.tree(op, base, lo, mid, leaf_runs, aux, false),
                    self.tree(op, base, mid, hi, leaf_runs, aux, false),
                )
            }
        };
        op.combine(a, b)
    }
}

/// A raw pointer (or an `Option` of one) that may cross to a rayon worker.
#[derive(Clone, Copy)]
pub(crate) struct Shared<P>(pub P);
// SAFETY: only used for pointers into storages the op keeps alive and borrows for the
// whole call (S3, S4: shared for what is read, exclusive for the output); workers read
// inputs and write disjoint output elements.
unsafe impl<P> Send for Shared<P> {}
// SAFETY: as above; sharing the wrapper shares the pointer value only.
unsafe impl<P> Sync for Shared<P> {}
impl<P: Copy> Shared<P> {
    /// The pointer (a method, so closures capture the `Send` wrapper, not the field).
    pub(crate) fn get(self) -> P {
        self.0
    }
}

/// A shared read pointer.
type SendPtr = Shared<*const u8>;

/// Per-lane auxiliary values.
type AuxLanes = [f64; LANES];

/// Pairwise fold of one run of `n` elements from `p` at byte stride `s` (see
/// [`run_lanes`]), folded to one accumulator.
///
/// # Safety
/// The `n` elements must be readable.
unsafe fn run_tree<O: ReduceOp>(
    op: &O,
    p: *const u8,
    n: usize,
    s: isize,
    aux: f64,
    par: bool,
) -> O::Acc {
    // SAFETY: forwarded.
    let acc = unsafe { run_lanes(op, p, n, s, &[aux; LANES], par) };
    fold_lanes(op, acc, 1)[0]
}

/// Folds a run serially (used by the arg-reductions for block extremes).
///
/// # Safety
/// The `n` elements from `p` at byte stride `s` must be readable.
pub(crate) unsafe fn fold_run<O: ReduceOp>(op: &O, p: *const u8, n: usize, s: isize) -> O::Acc {
    // SAFETY: forwarded.
    unsafe { run_tree(op, p, n, s, 0.0, false) }
}

/// Pairwise fold of one run into [`LANES`] accumulators, element `i` going to lane
/// `i % LANES`: halves (at a multiple of [`LANES`], so lanes stay aligned) down to leaves
/// folded by [`lanes`], combined lane by lane.
///
/// # Safety
/// The `n` elements must be readable.
unsafe fn run_lanes<O: ReduceOp>(
    op: &O,
    p: *const u8,
    n: usize,
    s: isize,
    aux: &AuxLanes,
    par: bool,
) -> [O::Acc; LANES] {
    let leaf = if O::PAIRWISE { LEAF } else { LEAF_EXACT };
    if n <= leaf {
        // SAFETY: forwarded.
        return unsafe { lanes(op, p, n, s, aux) };
    }
    let h = n / 2 / LANES * LANES;
    let q = Shared(p.wrapping_offset(h as isize * s));
    let ptr = Shared(p);
    // SAFETY: `[0, h)` and `[h, n)` are parts of the run.
    let (mut a, b) = if par && n >= PAR_MIN {
        rayon::join(
            // SAFETY: `[0, h)` is a part of the run (caller contract).
            || unsafe { run_lanes(op, ptr.get(), h, s, aux, true) },
            // SAFETY: `[h, n)` is the rest of the run.
            || unsafe { run_lanes(op, q.get(), n - h, s, aux, true) },
        )
    } else {
        // SAFETY: `[0, h)` and `[h, n)` are parts of the run (caller contract).
        unsafe {
            (
                run_lanes(op, p, h, s, aux, false),
                run_lanes(op, q.get(), n - h, s, aux, false),
            )
        }
    };
    for (x, y) in a.iter_mut().zip(b) {
        *x = op.combine(*x, y);
    }
    a
}

/// Combines lanes pairwise down to `width` (a power of two dividing [`LANES`]): entry
/// `j < width` then folds every lane `k ≡ j (mod width)`.
#[inline(always)]
fn fold_lanes<O: ReduceOp>(op: &O, mut acc: [O::Acc; LANES], width: usize) -> [O::Acc; LANES] {
    let mut w = LANES / 2;
    while w >= width {
        for k in 0..w {
            acc[k] = op.combine(acc[k], acc[k + w]);
        }
        w /= 2;
    }
    acc
}

/// Folds `n` elements into [`LANES`] independent accumulators (so the loop vectorises
/// and is not bound by the add latency), element `i` into lane `i % LANES`.
///
/// # Safety
/// The `n` elements from `p` at byte stride `s` must be readable.
#[inline(always)]
unsafe fn lanes<O: ReduceOp>(
    op: &O,
    p: *const u8,
    n: usize,
    s: isize,
    aux: &AuxLanes,
) -> [O::Acc; LANES] {
    let isz = size_of::<O::In>();
    let mut acc = [op.identity(); LANES];
    let full = n / LANES;
    // SAFETY: every offset below is `i·s` for some `i < n`.
    unsafe {
        if s == isz as isize {
            for c in 0..full {
                let q = p.add(c * LANES * isz);
                for (k, a) in acc.iter_mut().enumerate() {
                    *a = op.combine(*a, op.map(O::In::load(q.add(k * isz)), aux[k]));
                }
            }
        } else {
            for c in 0..full {
                let q = p.offset((c * LANES) as isize * s);
                for (k, a) in acc.iter_mut().enumerate() {
                    *a = op.combine(*a, op.map(O::In::load(q.offset(k as isize * s)), aux[k]));
                }
            }
        }
        for (k, i) in (full * LANES..n).enumerate() {
            acc[k] = op.combine(
                acc[k],
                op.map(O::In::load(p.offset(i as isize * s)), aux[k]),
            );
        }
    }
    acc
}

/// Vertical folds of narrow rows that lie back to back in memory (`(m, w).sum(0)` with
/// `w` dividing [`LANES`]): the rows form one contiguous stream whose lane `k` belongs
/// to column `k % w`, folded like a long run, so it vectorises and streams.
///
/// # Safety
/// As for [`fold`]; `g` has one reduced dim `r` and an innermost kept dim `v` with
/// `v.si = 1`, `r.si = v.n` and `LANES % v.n = 0`.
unsafe fn narrow_stream<O: ReduceOp>(op: &O, g: &Geom, p: Ptrs, n: usize, par: bool) {
    let isz = size_of::<O::In>();
    let osz = size_of::<O::Out>();
    let (v, r) = (g.kept[g.kept.len() - 1], g.red[0]);
    let w = v.n;
    let outer = &g.kept[..g.kept.len() - 1];
    let ks = KeptStrides::new(outer, isz, osz, p.aux.is_some());
    let pouter = count(outer);
    let in0 = Shared(p.inp.wrapping_offset(g.in_off * isz as isize));
    let out0 = Shared(p.out.wrapping_offset(g.out_off * osz as isize));
    let aux0 = Shared(p.aux.map(|a| a.wrapping_offset(g.out_off)));
    let threads = rayon::current_num_threads();
    let outer_par = par && pouter >= 2 * threads;
    let one = |po: usize, inner_par: bool| {
        let (in0, out0, aux0) = (in0.get(), out0.get(), aux0.get());
        let [io, oo, ao] = ks.odometer(po).off;
        let mut aux = [0.0; LANES];
        if let Some(a) = aux0 {
            for (k, x) in aux.iter_mut().enumerate() {
                // SAFETY: the aux element of column `k % w` of this output row.
                *x = unsafe {
                    a.byte_offset(ao)
                        .offset((k % w) as isize * v.so)
                        .read_unaligned()
                };
            }
        }
        // SAFETY: the stream of `r.n · w` elements of this output row (caller's
        // contract); each output column is written by this call only.
        unsafe {
            let acc = run_lanes(op, in0.offset(io), r.n * w, isz as isize, &aux, inner_par);
            let acc = fold_lanes(op, acc, w);
            let o = out0.offset(oo);
            for j in 0..w {
                op.finish(acc[j], n, aux[j])
                    .store(o.offset(j as isize * v.so * osz as isize));
            }
        }
    };
    if outer_par {
        (0..pouter).into_par_iter().for_each(|po| one(po, false));
    } else {
        (0..pouter).for_each(|po| one(po, par));
    }
}

/// Blocks of output elements along the fastest kept dim, folded row by row.
///
/// # Safety
/// As for [`fold`].
unsafe fn vertical<O: ReduceOp>(op: &O, g: &Geom, p: Ptrs, n: usize, par: bool) {
    let isz = size_of::<O::In>();
    let osz = size_of::<O::Out>();
    let Some(v) = g.kept.last() else {
        return;
    };
    if let [r] = g.red[..] {
        if v.si == 1 && r.si == v.n as isize && LANES % v.n == 0 && r.n > VLEAF {
            // SAFETY: forwarded; the geometry condition is checked just above.
            return unsafe { narrow_stream(op, g, p, n, par) };
        }
    }
    let (nv, sv) = (v.n, v.si * isz as isize);
    let (svo, sva) = (v.so * osz as isize, v.so);
    let outer = &g.kept[..g.kept.len() - 1];
    let ks = KeptStrides::new(outer, isz, osz, p.aux.is_some());
    let pouter = count(outer);
    let rows = Rows {
        shape: sizes(&g.red),
        strides: in_bytes(&g.red, isz),
        r: count(&g.red),
        leaf: if O::PAIRWISE { VLEAF } else { VLEAF_EXACT },
    };
    let threads = if par { rayon::current_num_threads() } else { 1 };
    // Column block: fits L1, and gives every thread several jobs when possible. The
    // block size does not change any output's association tree.
    let mut b = (VBLOCK_BYTES / size_of::<O::Acc>().max(1)).clamp(64, nv.max(64));
    let want = 4 * threads;
    if threads > 1 && pouter * nv.div_ceil(b) < want {
        b = b.min(nv.div_ceil(want.div_ceil(pouter)).max(256));
    }
    let b = b.min(nv);
    let nb = nv.div_ceil(b);
    let jobs = pouter * nb;
    let par_rows = threads > 1 && jobs < threads;
    let in0 = Shared(p.inp.wrapping_offset(g.in_off * isz as isize));
    let out0 = Shared(p.out.wrapping_offset(g.out_off * osz as isize));
    let aux0 = Shared(p.aux.map(|a| a.wrapping_offset(g.out_off)));
    let job = |j: usize| {
        let (in0, out0, aux0) = (in0.get(), out0.get(), aux0.get());
        let (po, bi) = (j / nb, j % nb);
        let [io, oo, ao] = ks.odometer(po).off;
        let j0 = bi * b;
        let len = b.min(nv - j0);
        let base = in0.wrapping_offset(io + j0 as isize * sv);
        let mut auxv = vec![0.0f64; len];
        if let Some(a) = aux0 {
            let a = a
                .wrapping_byte_offset(ao)
                .wrapping_offset(j0 as isize * sva);
            for (jj, x) in auxv.iter_mut().enumerate() {
                // SAFETY: an aux element of this job's outputs (caller's contract).
                *x = unsafe { a.offset(jj as isize * sva).read_unaligned() };
            }
        }
        let o = out0.wrapping_offset(oo + j0 as isize * svo);
        if rows.r <= rows.leaf && rows.shape.len() <= 1 {
            // Few rows of one dim: fold each column straight into its output (the same
            // sequential association as a tree leaf).
            let rs = rows.strides.first().copied().unwrap_or(0);
            let cols = Cols {
                base,
                sv,
                rs,
                out: o,
                so: svo,
            };
            // SAFETY: the columns of this job's block: inputs per the caller's contract,
            // outputs written by this job only.
            unsafe {
                match rows.r {
                    1 => cols.fold::<O, 1>(op, &auxv, n),
                    2 => cols.fold::<O, 2>(op, &auxv, n),
                    3 => cols.fold::<O, 3>(op, &auxv, n),
                    4 => cols.fold::<O, 4>(op, &auxv, n),
                    r => cols.fold_n(op, r, &auxv, n),
                }
            }
            return;
        }
        let mut acc = vec![op.identity(); len];
        let depth = rows.depth();
        let mut scratch = vec![op.identity(); len * depth];
        // SAFETY: the rows address this job's inputs (caller's contract).
        unsafe {
            rows.tree(
                op,
                Shared(base),
                sv,
                0,
                rows.r,
                &auxv,
                &mut acc,
                &mut scratch,
                par_rows,
            )
        };
        for (jj, (a, x)) in acc.iter().zip(&auxv).enumerate() {
            // SAFETY: an output element of this job; no other job writes it.
            unsafe { op.finish(*a, n, *x).store(o.offset(jj as isize * svo)) };
        }
    };
    if threads > 1 && jobs > 1 {
        (0..jobs).into_par_iter().for_each(job);
    } else {
        (0..jobs).for_each(job);
    }
}

/// A block of output columns, each folding a few rows of one reduced dim.
struct Cols {
    /// Input element of column 0, row 0.
    base: *const u8,
    /// Input byte stride between columns.
    sv: isize,
    /// Input byte stride between rows.
    rs: isize,
    /// Output element of column 0.
    out: *mut u8,
    /// Output byte stride between columns.
    so: isize,
}

impl Cols {
    /// Folds `R` rows per column (one column per `aux` entry), `R` known at compile
    /// time so the row loop unrolls; columns of `R` adjacent elements (`(m, R).sum(-1)`)
    /// get a loop over contiguous memory that vectorises.
    ///
    /// # Safety
    /// Every `(column, row)` element must be readable and every output column writable.
    #[inline(always)]
    unsafe fn fold<O: ReduceOp, const R: usize>(&self, op: &O, aux: &[f64], n: usize) {
        let isz = size_of::<O::In>();
        let osz = size_of::<O::Out>() as isize;
        // SAFETY: every offset is that of a (column, row) element or an output column.
        unsafe {
            if self.sv == (R * isz) as isize && self.rs == isz as isize && self.so == osz {
                for (jj, &x) in aux.iter().enumerate() {
                    let p = self.base.add(jj * R * isz);
                    let mut a = op.identity();
                    for r in 0..R {
                        a = op.combine(a, op.map(O::In::load(p.add(r * isz)), x));
                    }
                    op.finish(a, n, x).store(self.out.add(jj * osz as usize));
                }
            } else {
                for (jj, &x) in aux.iter().enumerate() {
                    let p = self.base.offset(jj as isize * self.sv);
                    let mut a = op.identity();
                    for r in 0..R {
                        a = op.combine(a, op.map(O::In::load(p.offset(r as isize * self.rs)), x));
                    }
                    op.finish(a, n, x)
                        .store(self.out.offset(jj as isize * self.so));
                }
            }
        }
    }

    /// As [`Cols::fold`] for a row count known at run time.
    ///
    /// # Safety
    /// As for [`Cols::fold`].
    unsafe fn fold_n<O: ReduceOp>(&self, op: &O, rows: usize, aux: &[f64], n: usize) {
        for (jj, &x) in aux.iter().enumerate() {
            let p = self.base.wrapping_offset(jj as isize * self.sv);
            let mut a = op.identity();
            for r in 0..rows {
                // SAFETY: element `r` of column `jj` (caller's contract).
                let v = unsafe { O::In::load(p.offset(r as isize * self.rs)) };
                a = op.combine(a, op.map(v, x));
            }
            // SAFETY: output column `jj` (caller's contract).
            unsafe {
                op.finish(a, n, x)
                    .store(self.out.offset(jj as isize * self.so))
            };
        }
    }
}

/// The rows of a vertical fold: an odometer over the reduced dims.
struct Rows {
    shape: SmallVec<[usize; 6]>,
    strides: SmallVec<[isize; 6]>,
    r: usize,
    leaf: usize,
}

impl Rows {
    /// Scratch blocks needed by [`Rows::tree`]: one per level below the root.
    fn depth(&self) -> usize {
        let mut d = 0;
        let mut m = self.r;
        while m > self.leaf {
            m = m.div_ceil(2);
            d += 1;
        }
        d
    }

    /// Folds rows `lo..hi` into `acc` (overwritten), pairwise above leaves of
    /// `self.leaf` rows, using `scratch` (`depth` blocks) for right halves.
    ///
    /// # Safety
    /// Every row `r` in `lo..hi` must have `acc.len()` readable elements from
    /// `base + offset(r)` at byte stride `sv`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn tree<O: ReduceOp>(
        &self,
        op: &O,
        base: SendPtr,
        sv: isize,
        lo: usize,
        hi: usize,
        aux: &[f64],
        acc: &mut [O::Acc],
        scratch: &mut [O::Acc],
        par: bool,
    ) {
        let len = acc.len();
        if hi - lo <= self.leaf {
            acc.fill(op.identity());
            if let [rs] = self.strides[..] {
                for r in lo..hi {
                    // SAFETY: row `r` of this block (caller's contract).
                    unsafe { accumulate_row(op, base.get().offset(r as isize * rs), sv, aux, acc) };
                }
                return;
            }
            let mut od = Odometer::<1>::new(&self.shape, [self.strides.clone()], lo);
            for _ in lo..hi {
                // SAFETY: row `r` of this block (caller's contract).
                unsafe { accumulate_row(op, base.get().offset(od.off[0]), sv, aux, acc) };
                od.step();
            }
            return;
        }
        let mid = lo + (hi - lo) / 2;
        if par && (hi - lo) * len >= PAR_MIN {
            let mut right = vec![op.identity(); len];
            let mut scratch2 = vec![op.identity(); scratch.len()];
            // SAFETY: both halves are rows of this block.
            rayon::join(
                || unsafe { self.tree(op, base, sv, lo, mid, aux, acc, scratch, true) },
                || unsafe {
                    self.tree(op, base, sv, mid, hi, aux, &mut right, &mut scratch2, true)
                },
            );
            for (a, r) in acc.iter_mut().zip(&right) {
                *a = op.combine(*a, *r);
            }
        } else {
            let (tmp, rest) = scratch.split_at_mut(len);
            // SAFETY: both halves are rows of this block.
            unsafe {
                self.tree(op, base, sv, lo, mid, aux, acc, rest, false);
                self.tree(op, base, sv, mid, hi, aux, tmp, rest, false);
            }
            for (a, r) in acc.iter_mut().zip(tmp.iter()) {
                *a = op.combine(*a, *r);
            }
        }
    }
}

/// `acc[j] = combine(acc[j], map(x[j]))` for one row `x` at byte stride `sv`.
///
/// # Safety
/// `acc.len()` elements from `p` at stride `sv` must be readable.
#[inline(always)]
unsafe fn accumulate_row<O: ReduceOp>(
    op: &O,
    p: *const u8,
    sv: isize,
    aux: &[f64],
    acc: &mut [O::Acc],
) {
    let isz = size_of::<O::In>();
    let aux = &aux[..acc.len()];
    // SAFETY: every offset is `j·sv` for `j < acc.len()`.
    unsafe {
        if sv == isz as isize {
            for (j, (a, &x)) in acc.iter_mut().zip(aux).enumerate() {
                *a = op.combine(*a, op.map(O::In::load(p.add(j * isz)), x));
            }
        } else {
            for (j, (a, &x)) in acc.iter_mut().zip(aux).enumerate() {
                *a = op.combine(*a, op.map(O::In::load(p.offset(j as isize * sv)), x));
            }
        }
    }
}
