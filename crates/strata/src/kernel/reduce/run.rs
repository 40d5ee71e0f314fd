//! The fold drivers: "horizontal" here (each output folds runs along the fastest input
//! dim, with several accumulators and pairwise combination) and "vertical" in
//! [`super::vertical`] (a block of outputs along the fastest *kept* dim is folded row by
//! row: `acc[j] ⊕= x[i, j]`, the accumulator block staying in cache while the input
//! streams).
//!
//! Determinism: the association tree of every output element depends only on the
//! geometry, never on the thread count or on how work is split; rayon only decides which
//! subtrees run concurrently. So a result is bit-identical for any pool size.

use crate::layout::DimVec;
use rayon::prelude::*;

use super::accumulators::ReduceOp;
use super::geom::{count, in_bytes, out_bytes, sizes, Dim, Geom, Odometer};
use super::wide_leaf;
use crate::dtype::Element;
use crate::kernel::engine::par_from;
use crate::kernel::prefetch::read_ahead;

/// Accumulators of the multi-accumulator inner loop.
pub(super) const LANES: usize = 16;
/// Largest run folded by one multi-accumulator loop for pairwise ops (each lane then adds
/// up 16 elements in sequence, as NumPy's pairwise sum does); longer runs are halved.
/// Contiguous runs of float sums have wider leaves (`super::wide_leaf`).
const LEAF: usize = 256;
/// The same for order-insensitive ops (leaves only bound the task size).
const LEAF_EXACT: usize = 1 << 15;
/// Elements of a subtree below which it is not split into rayon tasks.
pub(super) const SPLIT_MIN: usize = 1 << 16;

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
pub(super) struct KeptStrides {
    shape: DimVec<usize>,
    si: DimVec<isize>,
    so: DimVec<isize>,
    sa: DimVec<isize>,
}

impl KeptStrides {
    pub(super) fn new(dims: &[Dim], isz: usize, osz: usize, has_aux: bool) -> Self {
        KeptStrides {
            shape: sizes(dims),
            si: in_bytes(dims, isz),
            so: out_bytes(dims, osz),
            sa: if has_aux {
                out_bytes(dims, size_of::<f64>())
            } else {
                DimVec::from_elem(0, dims.len())
            },
        }
    }

    pub(super) fn odometer(&self, start: usize) -> Odometer<3> {
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
    let ptrs = Shared(p);
    let go = |threads: usize| {
        // With one thread (`par` false) neither driver calls rayon (see `kernel::pool`).
        let (p, par) = (ptrs.get(), threads > 1);
        // SAFETY: forwarded from the caller.
        unsafe {
            if g.horizontal() {
                horizontal(op, g, p, n, par);
            } else {
                super::vertical::vertical(op, g, p, n, par);
            }
        }
    };
    if parallel && total >= par_from(false, &[O::In::DTYPE]) {
        crate::kernel::pool::parallel(go)
    } else {
        go(1)
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
    let threads = if par {
        crate::kernel::pool::threads()
    } else {
        1
    };
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
    shape: DimVec<usize>,
    strides: DimVec<isize>,
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
        let (a, b) = if par && (hi - lo) * self.n >= SPLIT_MIN {
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
pub(super) type SendPtr = Shared<*const u8>;

/// Per-lane auxiliary values.
pub(super) type AuxLanes<O> = [<O as ReduceOp>::Aux; LANES];

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
    let acc = unsafe { run_lanes(op, p, n, s, &[op.aux(aux); LANES], par) };
    fold_lanes(op, acc, 1)[0]
}

/// Pairwise fold of one run into [`LANES`] accumulators, element `i` going to lane
/// `i % LANES`: halves (at a multiple of [`LANES`], so lanes stay aligned) down to leaves
/// folded by [`lanes`] (or, for contiguous float sums, by `super::wide_leaf`), combined
/// lane by lane.
///
/// # Safety
/// The `n` elements must be readable.
pub(super) unsafe fn run_lanes<O: ReduceOp>(
    op: &O,
    p: *const u8,
    n: usize,
    s: isize,
    aux: &AuxLanes<O>,
    par: bool,
) -> [O::Acc; LANES] {
    // Contiguous runs of float sums longer than a plain leaf fold in wide leaves
    // (`super::wide_leaf`); halves of a run longer than a wide leaf are longer than a
    // plain one, so a run's leaves are all wide or all plain.
    let wide = wide_leaf::applies::<O>() && s == size_of::<O::In>() as isize && n > LEAF;
    let leaf = if !O::PAIRWISE {
        LEAF_EXACT
    } else if wide {
        wide_leaf::leaf::<O::Acc>()
    } else {
        LEAF
    };
    // A wide run short enough for one thread is walked down to its leaves in code
    // compiled for the CPU level (`wide_leaf::fold`, the same tree as below).
    if wide && n <= wide_leaf::TREE_MAX && !(par && n >= SPLIT_MIN) {
        // SAFETY: forwarded.
        return unsafe { wide_leaf::fold(op, p, n, aux) };
    }
    if n <= leaf {
        // SAFETY: forwarded.
        return unsafe { lanes(op, p, n, s, aux) };
    }
    let h = n / 2 / LANES * LANES;
    let q = Shared(p.wrapping_offset(h as isize * s));
    let ptr = Shared(p);
    // SAFETY: `[0, h)` and `[h, n)` are parts of the run.
    let (mut a, b) = if par && n >= SPLIT_MIN {
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
pub(super) fn fold_lanes<O: ReduceOp>(
    op: &O,
    mut acc: [O::Acc; LANES],
    width: usize,
) -> [O::Acc; LANES] {
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
    aux: &AuxLanes<O>,
) -> [O::Acc; LANES] {
    if O::WIDEN && matches!(O::In::DTYPE, crate::DType::F16 | crate::DType::BF16) {
        // SAFETY: forwarded; the input is a half type.
        return unsafe { super::accumulators::lanes_half(op, p, n, s, aux) };
    }
    let isz = size_of::<O::In>();
    if s == isz as isize {
        // SAFETY: forwarded; the run is contiguous.
        if let Some(acc) = unsafe { op.lanes_contiguous(p, n) } {
            return acc;
        }
    }
    let mut acc = [op.identity(); LANES];
    let full = n / LANES;
    // SAFETY: every offset below is `i·s` for some `i < n`.
    unsafe {
        if s == isz as isize && size_of::<O::Acc>() <= 4 {
            // Narrow accumulators fill only a quarter of the vector registers with one
            // set of lanes: a second set doubles the independent chains (compare-and-
            // select folds are latency-bound otherwise). Element `i` still belongs to
            // lane `i % LANES`.
            let mut acc2 = [op.identity(); LANES];
            for c in 0..full / 2 {
                let q = p.add(c * 2 * LANES * isz);
                read_ahead(q, 2 * LANES * isz);
                for (k, a) in acc.iter_mut().enumerate() {
                    *a = op.combine(*a, op.map(O::In::load(q.add(k * isz)), aux[k]));
                }
                let q = q.add(LANES * isz);
                for (k, a) in acc2.iter_mut().enumerate() {
                    *a = op.combine(*a, op.map(O::In::load(q.add(k * isz)), aux[k]));
                }
            }
            if full % 2 == 1 {
                let q = p.add((full - 1) * LANES * isz);
                for (k, a) in acc.iter_mut().enumerate() {
                    *a = op.combine(*a, op.map(O::In::load(q.add(k * isz)), aux[k]));
                }
            }
            for (a, b) in acc.iter_mut().zip(acc2) {
                *a = op.combine(*a, b);
            }
        } else if s == isz as isize {
            for c in 0..full {
                let q = p.add(c * LANES * isz);
                read_ahead(q, LANES * isz);
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
