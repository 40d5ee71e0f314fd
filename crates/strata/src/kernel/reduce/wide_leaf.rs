//! Wide leaves of the pairwise fold, for contiguous runs of float sums (`sum`, `mean`,
//! `var`, `logsumexp`, ... — every [`ReduceOp::PAIRWISE`] op whose accumulator is 4 or 8
//! bytes).
//!
//! A plain leaf ([`lanes`](super::run)) folds at most 256 elements into [`LANES`]
//! accumulators: at AVX-512 that is one or two vector registers, each lane a chain of 8
//! to 16 dependent adds, and the per-leaf work (the dispatch to the CPU level, the lane
//! combines up the tree) comes every 256 elements. A wide leaf keeps [`sets`] sets of
//! `LANES` accumulators — eight vector registers of `f32` at AVX-512, all sixteen at
//! AVX2 — and folds up to [`DEPTH`] rows of `sets · LANES` elements: element `i` of the
//! leaf goes to lane `i % LANES` of set `(i / LANES) % sets`, so each lane is still a
//! chain of at most 16 adds (the accuracy of NumPy's pairwise sum, whose 8 accumulators
//! fold blocks of 128), the adds are independent across eight or more registers, and the
//! tree above has a leaf every 2048 `f32` (1024 `f64`). The sets are then combined
//! pairwise into `LANES` accumulators, lane `k` still holding exactly the elements
//! `≡ k (mod LANES)` (the narrow-row streams of `super::vertical` rely on it).
//!
//! The association depends only on the run's length and the accumulator type, never on
//! the CPU level: the same code runs at every level (compiled for it through
//! [`run_at`]), so a sum is bit-identical on every machine and for every pool size.

use std::cell::Cell;
use std::mem::MaybeUninit;

use half::f16;

use super::accumulators::ReduceOp;
use super::run::{AuxLanes, LANES};
use crate::dtype::{DType, Element};
use crate::kernel::cpu::{self, Level};
use crate::kernel::half_convert::{bf16_bits_to_f32_lax, run_at, AtLevel, HalfBlock};
use crate::kernel::prefetch::read_ahead;

/// Rows folded in sequence by each lane of a wide leaf.
const DEPTH: usize = 16;

/// Accumulator sets of a wide leaf for accumulator type `A`: eight of `f32` (eight
/// 512-bit registers), four of `f64` (eight 512-bit registers, sixteen 256-bit ones).
pub(super) const fn sets<A>() -> usize {
    if size_of::<A>() <= 4 {
        8
    } else {
        4
    }
}

/// Elements of a full wide leaf for accumulator type `A`.
pub(super) const fn leaf<A>() -> usize {
    sets::<A>() * LANES * DEPTH
}

/// True when contiguous runs of `O` fold in wide leaves.
pub(super) const fn applies<O: ReduceOp>() -> bool {
    O::PAIRWISE && O::In::DTYPE.is_float() && matches!(size_of::<O::Acc>(), 4 | 8)
}

/// Longest run [`fold`] takes: longer ones are halved by `run::run_lanes` (which also
/// splits them across threads).
pub(super) const TREE_MAX: usize = 1 << 16;

/// Folds the `n` contiguous elements from `p` (at most [`TREE_MAX`]) into [`LANES`]
/// accumulators, element `i` into lane `i % LANES`: halved as `run::run_lanes` halves a
/// run, down to wide leaves (module docs).
///
/// # Safety
/// The `n` elements from `p` must be readable; [`applies`]`::<O>()`.
pub(super) unsafe fn fold<O: ReduceOp>(
    op: &O,
    p: *const u8,
    n: usize,
    aux: &AuxLanes<O>,
) -> [O::Acc; LANES] {
    let body = WideLeaf {
        op,
        p,
        n,
        aux,
        result: Cell::new([op.identity(); LANES]),
    };
    // SAFETY: the caller's contract; `cpu::level` is what the CPU has.
    unsafe { run_at(cpu::level(), &body) };
    body.result.get()
}

/// The arguments of [`fold`] as an [`AtLevel`] computation; the result lands in `result`.
struct WideLeaf<'a, O: ReduceOp> {
    op: &'a O,
    p: *const u8,
    n: usize,
    aux: &'a AuxLanes<O>,
    result: Cell<[O::Acc; LANES]>,
}

/// Four sets of accumulators.
type Quad<A> = [[A; LANES]; 4];

impl<O: ReduceOp> AtLevel for WideLeaf<'_, O> {
    #[inline(always)]
    unsafe fn run(&self, level: Level) {
        let &Self { op, p, n, aux, .. } = self;
        let leaf = leaf::<O::Acc>();
        let isz = size_of::<O::In>();
        // `run::run_lanes`'s tree, without recursion (so every leaf runs in this code
        // compiled for the level, with no dispatch between leaves): a node longer than
        // a leaf is halved at `n / 2 / LANES · LANES`, its halves folded left then right
        // and their results combined lane by lane — the same association as the
        // recursion, so a result does not depend on where the walk starts. Three
        // passes: the tree is laid out (its leaves in order, and its post-order as
        // "leaf" / "combine the last two" steps), the leaves are folded in one plain
        // loop, and the steps are replayed on the leaves' results. (A walk that folded
        // each leaf as it reached it measured the same within this VM's noise — 59–64
        // µs for a 1M float32 sum either way; the plain leaf loop is kept so the folds
        // are not interleaved with the tree's branches.)
        // Leaves: a piece longer than a leaf (at least 1024 elements) is halved into
        // pieces of more than `1024 / 2 - LANES` = 496, so a run of at most `TREE_MAX`
        // has at most 133 leaves and the tree is at most 8 levels deep (`todo` holds at
        // most 17 nodes, `stack` 9 results).
        const LEAVES: usize = 160;
        debug_assert!(n <= TREE_MAX && leaf >= 1024);
        let mut leaves = [(0usize, 0usize); LEAVES];
        let mut steps = [false; 2 * LEAVES];
        let (mut nl, mut ns) = (0, 0);
        let mut todo = [(0usize, 0usize, false); 32];
        let mut nt = 1;
        todo[0] = (0, n, false);
        while nt > 0 {
            nt -= 1;
            let (off, len, halves_done) = todo[nt];
            if halves_done {
                steps[ns] = true;
                ns += 1;
            } else if len <= leaf {
                leaves[nl] = (off, len);
                nl += 1;
                steps[ns] = false;
                ns += 1;
            } else {
                let h = len / 2 / LANES * LANES;
                todo[nt] = (off, len, true);
                todo[nt + 1] = (off + h, len - h, false);
                todo[nt + 2] = (off, h, false);
                nt += 3;
            }
        }
        if nl == 1 {
            // SAFETY: the whole run (`fold`'s caller).
            self.result.set(unsafe { leaf_fold(op, level, p, n, aux) });
            return;
        }
        // Only the first `nl` entries are written and read (a run of a few leaves does
        // not initialise kilobytes of them).
        let mut folded = [const { MaybeUninit::<[O::Acc; LANES]>::uninit() }; LEAVES];
        for (r, &(off, len)) in folded.iter_mut().zip(&leaves[..nl]) {
            // SAFETY: elements `off .. off + len` of the run (`fold`'s caller).
            r.write(unsafe { leaf_fold(op, level, p.add(off * isz), len, aux) });
        }
        let mut stack = [[op.identity(); LANES]; 32];
        let (mut sp, mut next) = (0, 0);
        for &combine in &steps[..ns] {
            if combine {
                let b = stack[sp - 1];
                for (x, y) in stack[sp - 2].iter_mut().zip(b) {
                    *x = op.combine(*x, y);
                }
                sp -= 1;
            } else {
                // SAFETY: the steps name each of the `nl` leaves once, in order, and
                // entries `..nl` were written above.
                stack[sp] = unsafe { folded[next].assume_init() };
                next += 1;
                sp += 1;
            }
        }
        let done = stack;
        self.result.set(done[0]);
    }
}

/// One wide leaf: the `n ≤ leaf` elements from `p` folded as the module docs say.
///
/// # Safety
/// As for [`fold`], with `n` at most a leaf.
#[inline(always)]
unsafe fn leaf_fold<O: ReduceOp>(
    op: &O,
    level: Level,
    p: *const u8,
    n: usize,
    aux: &AuxLanes<O>,
) -> [O::Acc; LANES] {
    let eight = sets::<O::Acc>() == 8;
    let row = sets::<O::Acc>() * LANES;
    let isz = size_of::<O::In>();
    let half = O::WIDEN && matches!(O::In::DTYPE, DType::F16 | DType::BF16);
    // Sets 0–3 in `lo`, 4–7 in `hi` (eight sets as one `[[_; LANES]; 8]` array were
    // left in memory by LLVM at AVX-512, and the row loop became gathers and
    // scatters: 1.1 ms for 1M `f32` instead of 50 µs). Both are indexed by constants
    // only, so they stay in registers.
    let mut lo: Quad<O::Acc> = [[op.identity(); LANES]; 4];
    let mut hi: Quad<O::Acc> = [[op.identity(); LANES]; 4];
    let full = n / row;
    // One row of `f32` values (half inputs widened into it).
    let mut v = [[0f32; LANES]; 8];
    for r in 0..full {
        // SAFETY: elements `r·row .. (r + 1)·row` of the run (`fold`'s caller).
        let q = unsafe { p.add(r * row * isz) };
        read_ahead(q, row * isz);
        if half {
            if O::In::DTYPE == DType::BF16 {
                // Widened by a shift (a NaN need not be made quiet for the sums,
                // which give it quiet).
                for (j, vj) in v.iter_mut().enumerate().take(row / LANES) {
                    // SAFETY: elements `j·LANES .. (j + 1)·LANES` of this row.
                    let bits =
                        unsafe { q.add(j * LANES * 2).cast::<[u16; LANES]>().read_unaligned() };
                    for (x, b) in vj.iter_mut().zip(bits) {
                        *x = bf16_bits_to_f32_lax(b);
                    }
                }
            } else {
                // SAFETY: as above; `v` holds `row ≤ 8·LANES` values.
                unsafe { f16::widen(level, q, v.as_mut_ptr().cast(), row) };
            }
            for j in 0..4 {
                for k in 0..LANES {
                    lo[j][k] = op.combine(lo[j][k], op.map_wide(v[j][k], aux[k]));
                }
            }
            if eight {
                for j in 0..4 {
                    for k in 0..LANES {
                        hi[j][k] = op.combine(hi[j][k], op.map_wide(v[j + 4][k], aux[k]));
                    }
                }
            }
        } else {
            // Rows read as arrays (element by element, LLVM kept the 128 sums in
            // scalar registers: 320 µs for 1M `f32`, against 50).
            // SAFETY: the first four sets' elements of this row; the input is a float
            // type (`applies`), valid for any bits.
            let xs = unsafe { q.cast::<Quad<O::In>>().read_unaligned() };
            for j in 0..4 {
                for k in 0..LANES {
                    lo[j][k] = op.combine(lo[j][k], op.map(xs[j][k], aux[k]));
                }
            }
            if eight {
                // SAFETY: the other four sets' elements of this row (`row` is eight
                // sets).
                let xs = unsafe {
                    q.add(4 * LANES * isz)
                        .cast::<Quad<O::In>>()
                        .read_unaligned()
                };
                for j in 0..4 {
                    for k in 0..LANES {
                        hi[j][k] = op.combine(hi[j][k], op.map(xs[j][k], aux[k]));
                    }
                }
            }
        }
    }
    // The last, partial row: element `i` to lane `i % LANES` of set `i / LANES`,
    // gathered in separate accumulators (indexed by variables, so in memory) and
    // combined into the sets once: `identity ⊕ y` is `y` (a float sum's `+0` start
    // only drops the sign of `-0`, which the sets' own `+0` start drops too).
    let m = n - full * row;
    if m > 0 {
        let mut t = [[op.identity(); LANES]; 8];
        for i in 0..m {
            // SAFETY: element `full·row + i < n` of the run.
            let x = unsafe { O::In::load(p.add((full * row + i) * isz)) };
            let (j, k) = (i / LANES, i % LANES);
            t[j][k] = op.combine(t[j][k], op.map(x, aux[k]));
        }
        for j in 0..4 {
            for k in 0..LANES {
                lo[j][k] = op.combine(lo[j][k], t[j][k]);
                if eight {
                    hi[j][k] = op.combine(hi[j][k], t[j + 4][k]);
                }
            }
        }
    }
    // Sets combined pairwise: (0 + 4), (1 + 5), ... then (0 + 2), (1 + 3), then 0 + 1.
    if eight {
        for j in 0..4 {
            for k in 0..LANES {
                lo[j][k] = op.combine(lo[j][k], hi[j][k]);
            }
        }
    }
    for j in 0..2 {
        for k in 0..LANES {
            lo[j][k] = op.combine(lo[j][k], lo[j + 2][k]);
        }
    }
    for k in 0..LANES {
        lo[0][k] = op.combine(lo[0][k], lo[1][k]);
    }
    lo[0]
}
