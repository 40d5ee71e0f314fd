//! Vertical folds: the fastest input dim is kept, so a block of output elements along it
//! is folded row by row (`acc[j] ⊕= x[i, j]`, four rows per pass over the block), rows
//! combined pairwise in fixed leaves. Narrow rows that lie back to back (`(m, w).sum(0)`)
//! are folded as one contiguous stream instead. As in [`super::run`], association
//! depends on the geometry only, never on threads or block sizes.

use crate::layout::DimVec;
use rayon::prelude::*;

use super::accumulators::ReduceOp;
use super::geom::{count, in_bytes, sizes, Geom, Odometer};
use super::run::{fold_lanes, run_lanes, KeptStrides, Ptrs, SendPtr, Shared, LANES, SPLIT_MIN};
use crate::dtype::Element;
use crate::kernel::cpu::{self, Level};
use crate::kernel::half_convert::{run_at, AtLevel};

/// Rows per leaf of a vertical fold for pairwise ops.
const VLEAF: usize = 16;
/// The same for order-insensitive ops.
const VLEAF_EXACT: usize = 1024;
/// Accumulator bytes of one vertical column block.
const VBLOCK_BYTES: usize = 16384;
/// Elements of a super-row of narrow rows (see [`narrow_rows`]).
const SUPER_ROW: usize = 256;

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
    let threads = if par {
        crate::kernel::pool::threads()
    } else {
        1
    };
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
            let auxm: [O::Aux; LANES] = std::array::from_fn(|k| op.aux(aux[k]));
            let acc = run_lanes(op, in0.offset(io), r.n * w, isz as isize, &auxm, inner_par);
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
pub(super) unsafe fn vertical<O: ReduceOp>(op: &O, g: &Geom, p: Ptrs, n: usize, par: bool) {
    let isz = size_of::<O::In>();
    let osz = size_of::<O::Out>();
    let Some(v) = g.kept.last() else {
        return;
    };
    if let [r] = g.red[..] {
        if v.si == 1 && r.si == v.n as isize {
            if LANES.is_multiple_of(v.n) && r.n > VLEAF {
                // SAFETY: forwarded; the geometry condition is checked just above.
                return unsafe { narrow_stream(op, g, p, n, par) };
            }
            if v.n < SUPER_ROW / 4 && r.n >= 2 * (SUPER_ROW / v.n) {
                // SAFETY: forwarded; the geometry condition is checked just above.
                return unsafe { narrow_rows(op, g, p, n, par) };
            }
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
    let threads = if par {
        crate::kernel::pool::threads()
    } else {
        1
    };
    // Column block: fits L1, and gives every thread several jobs when possible. The
    // block size does not change any output's association tree.
    let mut b = (VBLOCK_BYTES / size_of::<O::Acc>().max(1)).clamp(64, nv.max(64));
    let want = 2 * threads;
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
        let auxm: Vec<O::Aux> = auxv.iter().map(|&a| op.aux(a)).collect();
        let o = out0.wrapping_offset(oo + j0 as isize * svo);
        if rows.r <= VLEAF && rows.shape.len() <= 1 {
            // Few rows of one dim: fold each column straight into its output (the same
            // sequential association as a tree leaf). Not more rows: a column is walked
            // at the row stride, a cache line per element — with order-insensitive ops'
            // leaves of 1024 rows, float32 `amax(dim=0)` of (1000, 1000) took 1.3 ms.
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
                    1 => cols.fold::<O, 1>(op, &auxm, &auxv, n),
                    2 => cols.fold::<O, 2>(op, &auxm, &auxv, n),
                    3 => cols.fold::<O, 3>(op, &auxm, &auxv, n),
                    4 => cols.fold::<O, 4>(op, &auxm, &auxv, n),
                    r => cols.fold_n(op, r, &auxm, &auxv, n),
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
                &auxm,
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
    unsafe fn fold<O: ReduceOp, const R: usize>(
        &self,
        op: &O,
        auxm: &[O::Aux],
        aux: &[f64],
        n: usize,
    ) {
        let isz = size_of::<O::In>();
        let osz = size_of::<O::Out>() as isize;
        // SAFETY: every offset is that of a (column, row) element or an output column.
        unsafe {
            if self.sv == (R * isz) as isize && self.rs == isz as isize && self.so == osz {
                for (jj, (&x, &xm)) in aux.iter().zip(auxm).enumerate() {
                    let p = self.base.add(jj * R * isz);
                    let mut a = op.identity();
                    for r in 0..R {
                        a = op.combine(a, op.map(O::In::load(p.add(r * isz)), xm));
                    }
                    op.finish(a, n, x).store(self.out.add(jj * osz as usize));
                }
            } else {
                for (jj, (&x, &xm)) in aux.iter().zip(auxm).enumerate() {
                    let p = self.base.offset(jj as isize * self.sv);
                    let mut a = op.identity();
                    for r in 0..R {
                        a = op.combine(a, op.map(O::In::load(p.offset(r as isize * self.rs)), xm));
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
    unsafe fn fold_n<O: ReduceOp>(
        &self,
        op: &O,
        rows: usize,
        auxm: &[O::Aux],
        aux: &[f64],
        n: usize,
    ) {
        for (jj, (&x, &xm)) in aux.iter().zip(auxm).enumerate() {
            let p = self.base.wrapping_offset(jj as isize * self.sv);
            let mut a = op.identity();
            for r in 0..rows {
                // SAFETY: element `r` of column `jj` (caller's contract).
                let v = unsafe { O::In::load(p.offset(r as isize * self.rs)) };
                a = op.combine(a, op.map(v, xm));
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
    shape: DimVec<usize>,
    strides: DimVec<isize>,
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
        aux: &[O::Aux],
        acc: &mut [O::Acc],
        scratch: &mut [O::Acc],
        par: bool,
    ) {
        let len = acc.len();
        if hi - lo <= self.leaf {
            let leaf = Leaf {
                rows: self,
                op,
                base,
                sv,
                lo,
                hi,
                aux,
                acc: acc.as_mut_ptr(),
                len,
            };
            // SAFETY: the caller's contract; `acc` holds `len` accumulators; the level is
            // the CPU's.
            unsafe { run_at(cpu::level(), &leaf) };
            return;
        }
        let mid = lo + (hi - lo) / 2;
        if par && (hi - lo) * len >= SPLIT_MIN {
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

/// A leaf of [`Rows::tree`] (rows `lo..hi`, at most a leaf's worth, folded in order into
/// `acc`) as an [`AtLevel`] computation, so that its row loops are compiled for the CPU
/// level (through the job closure they were the baseline's: SSE2).
struct Leaf<'a, O: ReduceOp> {
    rows: &'a Rows,
    op: &'a O,
    base: SendPtr,
    sv: isize,
    lo: usize,
    hi: usize,
    aux: &'a [O::Aux],
    /// `len` accumulators, overwritten.
    acc: *mut O::Acc,
    len: usize,
}

impl<O: ReduceOp> AtLevel for Leaf<'_, O> {
    #[inline(always)]
    unsafe fn run(&self, _: Level) {
        let &Self {
            rows,
            op,
            base,
            sv,
            lo,
            hi,
            aux,
            len,
            ..
        } = self;
        // SAFETY: `acc` holds `len` accumulators, borrowed by the caller for this call.
        let acc = unsafe { std::slice::from_raw_parts_mut(self.acc, len) };
        acc.fill(op.identity());
        let single = match rows.strides[..] {
            [rs] => Some(rs),
            _ => None,
        };
        let mut od = Odometer::<1>::new(&rows.shape, [rows.strides.clone()], lo);
        let mut next = |r: usize| -> *const u8 {
            let off = match single {
                Some(rs) => r as isize * rs,
                None => {
                    let o = od.off[0];
                    od.step();
                    o
                }
            };
            base.get().wrapping_offset(off)
        };
        let mut r = lo;
        while r + 4 <= hi {
            let four = [next(r), next(r + 1), next(r + 2), next(r + 3)];
            // SAFETY: rows `r..r + 4` of this block (caller's contract).
            unsafe { accumulate_rows4(op, four, sv, aux, acc) };
            r += 4;
        }
        while r < hi {
            // SAFETY: row `r` of this block (caller's contract).
            unsafe { accumulate_row(op, next(r), sv, aux, acc) };
            r += 1;
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
    aux: &[O::Aux],
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

/// Four rows at once: `acc[j] = (((acc[j] ⊕ x₀[j]) ⊕ x₁[j]) ⊕ x₂[j]) ⊕ x₃[j]`, the same
/// association as four [`accumulate_row`] calls with a quarter of the accumulator traffic.
///
/// # Safety
/// `acc.len()` elements from each `p[k]` at stride `sv` must be readable.
#[inline(always)]
unsafe fn accumulate_rows4<O: ReduceOp>(
    op: &O,
    p: [*const u8; 4],
    sv: isize,
    aux: &[O::Aux],
    acc: &mut [O::Acc],
) {
    let isz = size_of::<O::In>();
    let aux = &aux[..acc.len()];
    let step = |a: O::Acc, q: *const u8, x: O::Aux| {
        // SAFETY: `q` is an element of one of the rows (caller's contract).
        op.combine(a, op.map(unsafe { O::In::load(q) }, x))
    };
    if sv == isz as isize {
        for (j, (a, &x)) in acc.iter_mut().zip(aux).enumerate() {
            let o = j * isz;
            let v = step(*a, p[0].wrapping_add(o), x);
            let v = step(v, p[1].wrapping_add(o), x);
            let v = step(v, p[2].wrapping_add(o), x);
            *a = step(v, p[3].wrapping_add(o), x);
        }
    } else {
        for (j, (a, &x)) in acc.iter_mut().zip(aux).enumerate() {
            let o = j as isize * sv;
            let v = step(*a, p[0].wrapping_offset(o), x);
            let v = step(v, p[1].wrapping_offset(o), x);
            let v = step(v, p[2].wrapping_offset(o), x);
            *a = step(v, p[3].wrapping_offset(o), x);
        }
    }
}

/// Vertical folds of narrow rows back to back in memory whose width `w` does not divide
/// [`LANES`] (`(m, 3).sum(0)`): `G = SUPER_ROW / w` consecutive rows make a contiguous
/// super-row of `G·w` elements; super-rows are folded like wide rows (entry `k` belongs to
/// column `k % w`), then each column combines its `G` partials pairwise, then the rows
/// left over.
///
/// # Safety
/// As for [`vertical`]; `g` has one reduced dim `r` and an innermost kept dim `v` with
/// `v.si = 1`, `r.si = v.n` and `r.n ≥ G`.
unsafe fn narrow_rows<O: ReduceOp>(op: &O, g: &Geom, p: Ptrs, n: usize, par: bool) {
    let isz = size_of::<O::In>();
    let osz = size_of::<O::Out>();
    let (v, r) = (g.kept[g.kept.len() - 1], g.red[0]);
    let w = v.n;
    let grp = SUPER_ROW / w;
    let l = grp * w;
    let sup = r.n / grp;
    let rem = r.n - sup * grp;
    let rows = Rows {
        shape: [sup].into_iter().collect(),
        strides: [(l * isz) as isize].into_iter().collect(),
        r: sup,
        leaf: if O::PAIRWISE { VLEAF } else { VLEAF_EXACT },
    };
    let outer = &g.kept[..g.kept.len() - 1];
    let ks = KeptStrides::new(outer, isz, osz, p.aux.is_some());
    let pouter = count(outer);
    let in0 = Shared(p.inp.wrapping_offset(g.in_off * isz as isize));
    let out0 = Shared(p.out.wrapping_offset(g.out_off * osz as isize));
    let aux0 = Shared(p.aux.map(|a| a.wrapping_offset(g.out_off)));
    let threads = if par {
        crate::kernel::pool::threads()
    } else {
        1
    };
    let outer_par = par && pouter >= 2 * threads;
    let one = |po: usize, inner_par: bool| {
        let (in0, out0, aux0) = (in0.get(), out0.get(), aux0.get());
        let [io, oo, ao] = ks.odometer(po).off;
        let mut auxv = vec![0.0; l];
        if let Some(a) = aux0 {
            for (k, x) in auxv.iter_mut().enumerate() {
                // SAFETY: the aux element of column `k % w` of this output row.
                *x = unsafe {
                    a.byte_offset(ao)
                        .offset((k % w) as isize * v.so)
                        .read_unaligned()
                };
            }
        }
        let auxm: Vec<O::Aux> = auxv.iter().map(|&a| op.aux(a)).collect();
        let base = in0.wrapping_offset(io);
        let mut acc = vec![op.identity(); l];
        let mut scratch = vec![op.identity(); l * rows.depth()];
        // SAFETY: the super-rows of this output row (caller's contract).
        unsafe {
            rows.tree(
                op,
                Shared(base),
                isz as isize,
                0,
                sup,
                &auxm,
                &mut acc,
                &mut scratch,
                inner_par,
            )
        };
        let tail = base.wrapping_add(sup * l * isz);
        let mut parts: Vec<O::Acc> = Vec::with_capacity(grp);
        for j in 0..w {
            parts.clear();
            parts.extend((0..grp).map(|gg| acc[gg * w + j]));
            while parts.len() > 1 {
                let half = parts.len() / 2;
                for i in 0..half {
                    parts[i] = op.combine(parts[2 * i], parts[2 * i + 1]);
                }
                if parts.len() % 2 == 1 {
                    parts[half] = parts[parts.len() - 1];
                    parts.truncate(half + 1);
                } else {
                    parts.truncate(half);
                }
            }
            let (x, xm) = (auxv[j], auxm[j]);
            let mut t = op.identity();
            for i in 0..rem {
                // SAFETY: element `j` of leftover row `i` (caller's contract).
                let e = unsafe { O::In::load(tail.add((i * w + j) * isz)) };
                t = op.combine(t, op.map(e, xm));
            }
            let a = op.combine(parts[0], t);
            // SAFETY: output column `j` of this output row, written by this call only.
            unsafe {
                op.finish(a, n, x)
                    .store(out0.offset(oo + j as isize * v.so * osz as isize))
            };
        }
    };
    if outer_par {
        (0..pouter).into_par_iter().for_each(|po| one(po, false));
    } else {
        (0..pouter).for_each(|po| one(po, par));
    }
}
