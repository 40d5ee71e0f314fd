//! The elementwise loops of the CPU backend: typed maps on the engine, `out[i] = f(a[i])`,
//! `f(a[i], b[i])`, `f(a[i], b[i], c[i])`, with inputs broadcast to `out`'s shape.
//!
//! These are the one mechanism every elementwise op goes through. The op layer picks the
//! dtypes (promotion), converts inputs whose dtype differs from the kernel's, allocates
//! or checks the output, and passes a plain Rust closure; this module handles overlap,
//! borrows, the version counter, the loop plan and the inner loops (a contiguous and a
//! stride-0 fast path the compiler vectorises, then the general strided one).

use super::cpu::{self, Level};
use super::engine::{par_from, Loop, GRAIN};
use super::math::{Complex, Real};
use super::plan::{borrow_for, borrow_for_write, stage_if_overlapping};
use crate::dtype::Element;
use crate::error::{list, Error, Result};
use crate::layout::Layout;
use crate::ops::table::Cost;
use crate::tensor::Tensor;
use std::mem::MaybeUninit;

/// Checks dtypes and shapes, stages overlapping inputs and returns the broadcast input
/// layouts plus the (possibly staged) input tensors.
fn prepare<const M: usize>(
    op: &'static str,
    out: &Tensor,
    out_dtype: crate::DType,
    inputs: [(&Tensor, crate::DType); M],
) -> Result<([Tensor; M], [Layout; M])> {
    if out.dtype() != out_dtype {
        return Err(Error::dtype(
            op,
            format!(
                "expected an output of dtype {out_dtype}, got {}",
                out.dtype()
            ),
        ));
    }
    for (t, dt) in &inputs {
        if t.dtype() != *dt {
            return Err(Error::dtype(
                op,
                format!("expected an input of dtype {dt}, got {}", t.dtype()),
            ));
        }
    }
    out.check_write(op)?;
    let target: Vec<i64> = out.shape().iter().map(|&n| n as i64).collect();
    let mut staged: Vec<Tensor> = Vec::with_capacity(M);
    let mut layouts: Vec<Layout> = Vec::with_capacity(M);
    for (t, _) in &inputs {
        let s = stage_if_overlapping(out, t)?;
        let l = s.layout().expand(&target).map_err(|_| {
            Error::shape(
                op,
                format!(
                    "output with shape {} doesn't match the broadcast shape of an input of shape {}",
                    list(out.shape()),
                    list(t.shape())
                ),
            )
        })?;
        staged.push(s);
        layouts.push(l);
    }
    let staged: [Tensor; M] = staged
        .try_into()
        .map_err(|_| Error::shape(op, "input count"))?;
    let layouts: [Layout; M] = layouts
        .try_into()
        .map_err(|_| Error::shape(op, "input count"))?;
    Ok((staged, layouts))
}

/// The flat path's test: `out` contiguous, every input contiguous with `out`'s shape or a
/// single element (broadcast: flagged `true`), all of the kernel's dtypes, and fewer than
/// [`GRAIN`] elements. Such an op is one run, so it skips the loop planner, whose fixed
/// cost is most of a small op's time (larger ones go through the planner, whose cost is
/// then negligible, and which splits them across threads). Returns the element count and
/// the broadcast flags. Whether each input is disjoint from `out` or exactly its elements
/// is checked by address once the operands are borrowed ([`flat_disjoint`]); an input
/// over another shared file map while `out` is over one goes to the general path.
fn flat<const M: usize>(
    out: &Tensor,
    out_dtype: crate::DType,
    inputs: [(&Tensor, crate::DType); M],
) -> Option<(usize, [bool; M])> {
    let n = out.numel();
    if n >= GRAIN || out.dtype() != out_dtype || !out.is_contiguous() {
        return None;
    }
    let mut one = [false; M];
    let out_file = out.storage().maybe_shared_file_map();
    for (k, (t, dt)) in inputs.into_iter().enumerate() {
        if t.dtype() != dt {
            return None;
        }
        // Another mapping of the output's file may be the same bytes at another address
        // ([`flat_disjoint`] compares addresses): the general path stages by file offset
        // (Note [one file mapped twice] in `storage/mmap.rs`).
        if out_file && !t.same_storage(out) && t.storage().maybe_shared_file_map() {
            return None;
        }
        if !t.same_shape(out) || !t.is_contiguous() {
            if t.numel() != 1 || t.ndim() > out.ndim() {
                return None;
            }
            one[k] = true;
        }
    }
    Some((n, one))
}

/// The flat path's write check: `out` is writable. [`flat`] found it contiguous, so its
/// elements are distinct and [`Tensor::check_write`]'s self-overlap test (a dim sort, a
/// tenth of a small op's time) cannot fail.
#[inline]
fn flat_check_write(op: &'static str, out: &Tensor) -> Result<()> {
    debug_assert!(out.is_contiguous());
    out.storage().check_writable(op)
}

/// The flat path's overlap test, by address (whatever storages the bytes belong to): an
/// input run (`x`, `xn` elements of `xi` bytes) may be read while the output run (`o`,
/// `n` elements of `oi` bytes) is written when the two are disjoint, or when the input
/// is exactly the output's elements (same start, same item size, same length: each is
/// read before it is written).
#[inline]
fn flat_disjoint(o: *mut u8, n: usize, oi: usize, x: *mut u8, xn: usize, xi: usize) -> bool {
    let (o, x) = (o as usize, x as usize);
    // Inside their storages (L4): the ends cannot overflow.
    let (oe, xe) = (o + n * oi, x + xn * xi);
    oe <= x || xe <= o || (o == x && oi == xi && n == xn)
}

/// Whether an op of cost class `cost` computes a transcendental function (nanoseconds
/// per element, so worth a second thread sooner than memory-bound arithmetic; see
/// [`par_from`]).
fn is_math(cost: Cost) -> bool {
    cost == Cost::Math
}

/// Pointer to a tensor's element `[0, 0, …]`.
fn first(t: &Tensor) -> *mut u8 {
    t.storage().data_ptr().wrapping_add(t.byte_offset())
}

/// Elements per block of the contiguous kernels below.
pub(crate) const RUN_BLOCK: usize = 64;

/// A unary elementwise function as the block loops run it: one element at a time
/// ([`Map1::one`]), or a whole block ([`Map1::block`]; by default `one` over the block,
/// which the compiler vectorises when `one` is branch-free). Every `Fn(A) -> O` is one;
/// [`Fixup`] is the other kind: a vector function exact except on rare inputs, which it
/// recomputes one by one after the block.
pub(crate) trait Map1<A: Copy, O>: Sync {
    /// The function at one element.
    fn one(&self, a: A) -> O;
    /// The function over a block.
    #[inline(always)]
    fn block(&self, x: &[A; RUN_BLOCK]) -> [O; RUN_BLOCK] {
        std::array::from_fn(|i| self.one(x[i]))
    }
    /// Whether [`Map1::run_avx512`] is this map's own AVX-512 kernel (the float64
    /// functions of `kernel/vector_math/avx512_f64.rs`), which the AVX-512 copy of the
    /// block loops then runs instead of [`Map1::block`] (see [`blocks1_on`]).
    const AVX512: bool = false;
    /// `o[k] = f(x[k])` for `n` contiguous elements with AVX-512 instructions; by default
    /// [`Map1::one`] element by element.
    ///
    /// # Safety
    /// The CPU has the AVX-512 level (`kernel/cpu.rs`); `o` is writable and `x` readable
    /// for `n` elements (neither need be aligned), disjoint or identical; `x`'s elements
    /// are values of `A` (the loops call this only for the float maps that set
    /// [`Map1::AVX512`]).
    #[inline(always)]
    unsafe fn run_avx512(&self, o: *mut O, x: *const A, n: usize) {
        for k in 0..n {
            // SAFETY: the caller's contract.
            unsafe {
                o.add(k)
                    .write_unaligned(self.one(x.add(k).read_unaligned()))
            };
        }
    }
    /// The function over disjoint slices of equal length (see [`blocks1`]), a block of
    /// [`RUN_BLOCK`] at a time: a known trip count keeps large functions vector code
    /// (float64 `erf` ran scalar, 4x slower, in a loop over the whole slice).
    #[inline(always)]
    fn slices(&self, x: &[A], o: &mut [O]) {
        let mut xs = x.chunks_exact(RUN_BLOCK);
        let mut os = o.chunks_exact_mut(RUN_BLOCK);
        for (xc, oc) in (&mut xs).zip(&mut os) {
            if let (Some(xa), Some(oa)) = (
                xc.first_chunk::<RUN_BLOCK>(),
                oc.first_chunk_mut::<RUN_BLOCK>(),
            ) {
                for i in 0..RUN_BLOCK {
                    oa[i] = self.one(xa[i]);
                }
            }
        }
        for (o, &x) in os.into_remainder().iter_mut().zip(xs.remainder()) {
            *o = self.one(x);
        }
    }
}

impl<A: Copy, O, F: Fn(A) -> O + Sync> Map1<A, O> for F {
    #[inline(always)]
    fn one(&self, a: A) -> O {
        self(a)
    }
}

/// A binary elementwise function as the block loops run it, as [`Map1`] for one input:
/// one element at a time ([`Map2::one`]) or a whole block ([`Map2::block`]). Every
/// `Fn(A, B) -> O` is one; [`ComplexParts`] is the other kind.
pub(crate) trait Map2<A: Copy, B: Copy, O>: Sync {
    /// The function at one pair of elements.
    fn one(&self, a: A, b: B) -> O;
    /// The function over a block of pairs.
    #[inline(always)]
    fn block(&self, x: &[A; RUN_BLOCK], y: &[B; RUN_BLOCK]) -> [O; RUN_BLOCK] {
        std::array::from_fn(|i| self.one(x[i], y[i]))
    }
    /// Whether [`Map2::block`] is this map's own, to run only at the AVX-512 level (whose
    /// two-source shuffles make it pay), in a copy of the block loops built for AVX-512;
    /// the other levels then apply [`Map2::one`] element by element.
    const AVX512: bool = false;
}

impl<A: Copy, B: Copy, O, F: Fn(A, B) -> O + Sync> Map2<A, B, O> for F {
    #[inline(always)]
    fn one(&self, a: A, b: B) -> O {
        self(a, b)
    }
}

/// A binary complex function run over a block as separate arrays of real and imaginary
/// parts: the operands' parts are split out, the function is applied to values rebuilt
/// from them and its result split again, then interleaved back. Once the function is
/// inlined every complex value is a pair of scalars, so the compiler vectorises each
/// part's arithmetic lane by lane; on the interleaved pairs it did not (see the README's
/// benchmarks). At the AVX-512 level only (see [`Map2::AVX512`]).
pub(crate) struct ComplexParts<F>(pub F);

impl<C: Complex, F: Fn(C, C) -> C + Sync> Map2<C, C, C> for ComplexParts<F> {
    #[inline(always)]
    fn one(&self, a: C, b: C) -> C {
        (self.0)(a, b)
    }

    // With AVX2 only, the split and the interleave measured slower than the pairs.
    const AVX512: bool = true;

    #[inline(always)]
    fn block(&self, x: &[C; RUN_BLOCK], y: &[C; RUN_BLOCK]) -> [C; RUN_BLOCK] {
        let (xr, xi): ([C::Part; RUN_BLOCK], [C::Part; RUN_BLOCK]) = (
            std::array::from_fn(|i| x[i].re()),
            std::array::from_fn(|i| x[i].im()),
        );
        let (yr, yi): ([C::Part; RUN_BLOCK], [C::Part; RUN_BLOCK]) = (
            std::array::from_fn(|i| y[i].re()),
            std::array::from_fn(|i| y[i].im()),
        );
        let mut rr = [C::Part::ZERO; RUN_BLOCK];
        let mut ri = [C::Part::ZERO; RUN_BLOCK];
        for i in 0..RUN_BLOCK {
            let r = (self.0)(C::make(xr[i], xi[i]), C::make(yr[i], yi[i]));
            rr[i] = r.re();
            ri[i] = r.im();
        }
        std::array::from_fn(|i| C::make(rr[i], ri[i]))
    }
}

/// A function with a branch-free vector form that is exact on all but a rare set of
/// inputs (say, trigonometric arguments too large for a cheap reduction), and a scalar
/// form exact everywhere. Implemented by zero-sized types in `kernel/vector_math/`.
pub(crate) trait VectorFn<T: Element>: Sync {
    /// The vector form (any value where [`VectorFn::rare`] holds).
    fn fast(x: T) -> T;
    /// Whether `x` needs [`VectorFn::exact`].
    fn rare(x: T) -> bool;
    /// The exact scalar form.
    fn exact(x: T) -> T;
}

/// Runs a [`VectorFn`] as a [`Map1`]: a block is computed by the vector form, then the
/// rare elements in it, if any (one vectorised test over the block), are recomputed.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Fixup<V>(pub(crate) V);

impl<T: Element, V: VectorFn<T>> Map1<T, T> for Fixup<V> {
    #[inline(always)]
    fn one(&self, a: T) -> T {
        if V::rare(a) {
            V::exact(a)
        } else {
            V::fast(a)
        }
    }

    #[inline(always)]
    fn block(&self, x: &[T; RUN_BLOCK]) -> [T; RUN_BLOCK] {
        // A plain loop: `std::array::from_fn`'s closure was left out of line (compiled for
        // the baseline, called per element) once `fast` was large (float64 tanh: 42 ms
        // per 1M instead of ~9).
        let mut r = *x;
        for v in r.iter_mut() {
            *v = V::fast(*v);
        }
        if x.iter().fold(false, |any, &v| any | V::rare(v)) {
            for (ri, &xi) in r.iter_mut().zip(x) {
                if V::rare(xi) {
                    *ri = V::exact(xi);
                }
            }
        }
        r
    }

    #[inline(always)]
    fn slices(&self, x: &[T], o: &mut [T]) {
        let mut xs = x.chunks_exact(RUN_BLOCK);
        let mut os = o.chunks_exact_mut(RUN_BLOCK);
        for (xc, oc) in (&mut xs).zip(&mut os) {
            if let (Some(xa), Some(oa)) = (
                xc.first_chunk::<RUN_BLOCK>(),
                oc.first_chunk_mut::<RUN_BLOCK>(),
            ) {
                for i in 0..RUN_BLOCK {
                    oa[i] = V::fast(xa[i]);
                }
                if xa.iter().fold(false, |any, &v| any | V::rare(v)) {
                    for i in 0..RUN_BLOCK {
                        if V::rare(xa[i]) {
                            oa[i] = V::exact(xa[i]);
                        }
                    }
                }
            }
        }
        for (o, &x) in os.into_remainder().iter_mut().zip(xs.remainder()) {
            *o = self.one(x);
        }
    }
}

/// `out[k] = f(x[k])` for `n` elements, the output and the input contiguous (unary ops
/// compute a broadcast input once, so there is no stride-0 form).
///
/// Works in blocks: a block of inputs is read into a local array, mapped, and only then
/// written, so the compiler vectorises `f` whatever the operands' alignment, and an output
/// identical to its input (in place) is still read before it is written. The plain
/// pointer loop this replaces stayed scalar: the compiler cannot rule out the output
/// aliasing an input at an offset.
///
/// Runs that are disjoint and aligned, of types every bit pattern is a value of (all but
/// bool), go through [`Map1::slices`] instead: as slices the compiler knows they do not
/// alias, so `f` reads and writes them directly. (Through the local blocks, a math op's
/// time varied up to 2x between processes: the stack copies' addresses, random per
/// process, 4 KiB-aliased with the operands' or not; and 8-byte blocks were copied by a
/// `memcpy` call each, 15–22% of int64 `t // 7`.)
///
/// # Safety
/// `o` must be writable and `x` readable for the `n` elements; an input and the output
/// are disjoint or identical.
#[inline(always)]
unsafe fn blocks1<A: Element, O: Element>(o: *mut u8, x: *const u8, n: usize, f: &impl Map1<A, O>) {
    let (sa, so) = (size_of::<A>(), size_of::<O>());
    let (ou, xu) = (o as usize, x as usize);
    // Inside their storages (L4): the ends cannot overflow.
    if A::ANY_BIT_PATTERN
        && O::ANY_BIT_PATTERN
        && (ou + n * so <= xu || xu + n * sa <= ou)
        && ou % align_of::<O>() == 0
        && xu % align_of::<A>() == 0
    {
        // SAFETY: the runs are readable/writable (caller), disjoint and aligned (checked),
        // of types for which every bit pattern is a value (not bool, checked).
        let (xs, os) = unsafe {
            (
                std::slice::from_raw_parts(x as *const A, n),
                std::slice::from_raw_parts_mut(o as *mut O, n),
            )
        };
        f.slices(xs, os);
        return;
    }
    let mut k = 0;
    while k + RUN_BLOCK <= n {
        // SAFETY: elements `k..k + RUN_BLOCK` are inside the run (caller).
        let xa: [A; RUN_BLOCK] = std::array::from_fn(|i| unsafe { A::load(x.add((k + i) * sa)) });
        let r: [O; RUN_BLOCK] = f.block(&xa);
        for (i, v) in r.iter().enumerate() {
            // SAFETY: as above.
            unsafe { v.store(o.add((k + i) * so)) };
        }
        k += RUN_BLOCK;
    }
    for k in k..n {
        // SAFETY: element `k` is inside the run (caller).
        unsafe { f.one(A::load(x.add(k * sa))).store(o.add(k * so)) };
    }
}

/// As [`blocks1`], for two inputs: `out[k] = f(x[k·DX], y[k·DY])`.
///
/// # Safety
/// As for [`blocks1`].
#[inline(always)]
unsafe fn blocks2<
    A: Element,
    B: Element,
    O: Element,
    const DX: usize,
    const DY: usize,
    const OWN_BLOCK: bool,
>(
    o: *mut u8,
    x: *const u8,
    y: *const u8,
    n: usize,
    f: &impl Map2<A, B, O>,
) {
    let (sa, sb, so) = (size_of::<A>(), size_of::<B>(), size_of::<O>());
    let (ou, xu, yu) = (o as usize, x as usize, y as usize);
    // Inside their storages (L4): the ends cannot overflow.
    let disjoint = |pu: usize, len: usize| ou + n * so <= pu || pu + len <= ou;
    let (xn, yn) = (if DX == 0 { 1 } else { n }, if DY == 0 { 1 } else { n });
    if !OWN_BLOCK
        && A::ANY_BIT_PATTERN
        && B::ANY_BIT_PATTERN
        && (DX != 0 || DY != 0)
        && n > 0
        && disjoint(xu, xn * sa)
        && disjoint(yu, yn * sb)
        && ou % align_of::<O>() == 0
        && xu % align_of::<A>() == 0
        && yu % align_of::<B>() == 0
    {
        // SAFETY: the runs are readable/writable (caller), the output disjoint from both
        // inputs and all three aligned (checked); the inputs' types take any bit pattern,
        // and the output is written, never read, through `MaybeUninit`.
        let (xs, ys, os) = unsafe {
            (
                std::slice::from_raw_parts(x as *const A, xn),
                std::slice::from_raw_parts(y as *const B, yn),
                std::slice::from_raw_parts_mut(o as *mut MaybeUninit<O>, n),
            )
        };
        slices2::<A, B, O, DX, DY>(os, xs, ys, f);
        return;
    }
    let mut k = 0;
    while k + RUN_BLOCK <= n {
        // SAFETY: elements `k..k + RUN_BLOCK` are inside the run (caller).
        let xa: [A; RUN_BLOCK] =
            std::array::from_fn(|i| unsafe { A::load(x.add((k + i) * DX * sa)) });
        // SAFETY: as above.
        let ya: [B; RUN_BLOCK] =
            std::array::from_fn(|i| unsafe { B::load(y.add((k + i) * DY * sb)) });
        let r: [O; RUN_BLOCK] = if OWN_BLOCK {
            f.block(&xa, &ya)
        } else {
            std::array::from_fn(|i| f.one(xa[i], ya[i]))
        };
        for (i, v) in r.iter().enumerate() {
            // SAFETY: as above.
            unsafe { v.store(o.add((k + i) * so)) };
        }
        k += RUN_BLOCK;
    }
    for k in k..n {
        // SAFETY: element `k` is inside the run (caller).
        unsafe {
            f.one(A::load(x.add(k * DX * sa)), B::load(y.add(k * DY * sb)))
                .store(o.add(k * so))
        };
    }
}

/// [`blocks2`] over disjoint, aligned runs as slices: `o[k] = f(x[k·DX], y[k·DY])`, a
/// block of [`RUN_BLOCK`] at a time (a known trip count keeps large functions vector
/// code, as in [`Map1::slices`]). As slices the compiler knows the output aliases neither
/// input, so it reads and writes the runs in address order; through local blocks it read
/// each block's input backwards, and float64 `a + b` on outputs of 8 MiB and more ran
/// measurably slower (see the README's benchmarks).
#[inline(always)]
fn slices2<A: Copy, B: Copy, O, const DX: usize, const DY: usize>(
    o: &mut [MaybeUninit<O>],
    x: &[A],
    y: &[B],
    f: &impl Map2<A, B, O>,
) {
    // `DX`/`DY` 0: the input is one element, broadcast.
    let xi = |i: usize| if DX == 0 { x[0] } else { x[i] };
    let yi = |i: usize| if DY == 0 { y[0] } else { y[i] };
    let mut k = 0;
    for oc in o.chunks_exact_mut(RUN_BLOCK) {
        if let Some(oa) = oc.first_chunk_mut::<RUN_BLOCK>() {
            match (DX, DY) {
                (0, _) => {
                    let (a, ys) = (x[0], &y[k..k + RUN_BLOCK]);
                    if let Some(ya) = ys.first_chunk::<RUN_BLOCK>() {
                        for i in 0..RUN_BLOCK {
                            oa[i].write(f.one(a, ya[i]));
                        }
                    }
                }
                (_, 0) => {
                    let (xs, b) = (&x[k..k + RUN_BLOCK], y[0]);
                    if let Some(xa) = xs.first_chunk::<RUN_BLOCK>() {
                        for i in 0..RUN_BLOCK {
                            oa[i].write(f.one(xa[i], b));
                        }
                    }
                }
                _ => {
                    let (xs, ys) = (&x[k..k + RUN_BLOCK], &y[k..k + RUN_BLOCK]);
                    if let (Some(xa), Some(ya)) =
                        (xs.first_chunk::<RUN_BLOCK>(), ys.first_chunk::<RUN_BLOCK>())
                    {
                        for i in 0..RUN_BLOCK {
                            oa[i].write(f.one(xa[i], ya[i]));
                        }
                    }
                }
            }
        }
        k += RUN_BLOCK;
    }
    for (i, ov) in o.iter_mut().enumerate().skip(k) {
        ov.write(f.one(xi(i), yi(i)));
    }
}

/// As [`blocks1`], for a strided run: `out[k·so] = f(x[k·sx])` (byte strides). The
/// elements are gathered a block at a time into a local array ([`gather_run`]), so `f`
/// still runs as vector code over the block (for every op: float32 `sqrt` of a `[::2]`
/// view took 1.4x its gathered time element by element).
///
/// # Safety
/// `o + k·so` must be writable and `x + k·sx` readable for `k < n`; an input element and
/// an output element are disjoint or identical.
#[inline(always)]
unsafe fn blocks1_strided<A: Element, O: Element>(
    o: *mut u8,
    so: isize,
    x: *const u8,
    sx: isize,
    n: usize,
    f: &impl Map1<A, O>,
) {
    let mut k = 0;
    while k + RUN_BLOCK <= n {
        let mut xa = [A::default(); RUN_BLOCK];
        // SAFETY: elements `k..k + RUN_BLOCK` are inside the run (caller).
        unsafe { gather_run(&mut xa, x.offset(k as isize * sx), sx) };
        let r: [O; RUN_BLOCK] = f.block(&xa);
        // SAFETY: as above.
        unsafe { scatter_run(o.offset(k as isize * so), so, &r) };
        k += RUN_BLOCK;
    }
    for k in k..n {
        // SAFETY: element `k` is inside the run (caller).
        unsafe {
            f.one(A::load(x.offset(k as isize * sx)))
                .store(o.offset(k as isize * so))
        };
    }
}

/// `dst.len()` elements of a strided run (byte step `sx` from `x`) into `dst`. Small
/// steps (`±1` to `±4` elements: flips, `[::2]`, the parts of an interleaved array) are
/// constants here, so the compiler loads whole vectors and keeps the lanes it needs, and
/// `dst` is written by vector stores: element-by-element stores read back at once by the
/// kernel's vector loads stall store-to-load forwarding (float32 `exp` of a `[::2]` view
/// ran at 3.9x its contiguous time, against 2x for PyTorch; see `blocks1_avx512`).
///
/// # Safety
/// `x + i·sx` must be readable for `i < dst.len()`.
#[inline(always)]
unsafe fn gather_run<A: Element>(dst: &mut [A], x: *const u8, sx: isize) {
    #[inline(always)]
    unsafe fn stepped<A: Element, const STEP: isize>(dst: &mut [A], x: *const u8) {
        let sa = size_of::<A>() as isize;
        for (i, v) in dst.iter_mut().enumerate() {
            // SAFETY: the caller's guarantee, with `sx = STEP·sa`.
            *v = unsafe { A::load(x.offset(i as isize * STEP * sa)) };
        }
    }
    let sa = size_of::<A>() as isize;
    // SAFETY: in every arm, the caller's guarantee; the arms' steps are `sx` itself.
    unsafe {
        match (sx % sa == 0).then_some(sx / sa) {
            Some(1) => stepped::<A, 1>(dst, x),
            Some(2) => stepped::<A, 2>(dst, x),
            Some(3) => stepped::<A, 3>(dst, x),
            Some(4) => stepped::<A, 4>(dst, x),
            Some(-1) => stepped::<A, -1>(dst, x),
            Some(-2) => stepped::<A, -2>(dst, x),
            _ => {
                for (i, v) in dst.iter_mut().enumerate() {
                    *v = A::load(x.offset(i as isize * sx));
                }
            }
        }
    }
}

/// `src` to a strided run (byte step `so` from `o`); a contiguous one as one copy.
///
/// # Safety
/// `o + i·so` must be writable for `i < src.len()`.
#[inline(always)]
unsafe fn scatter_run<O: Element>(o: *mut u8, so: isize, src: &[O]) {
    if so == size_of::<O>() as isize {
        // SAFETY: the caller's guarantee; `src` is a local array, disjoint from `o`.
        unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr() as *const u8, o, std::mem::size_of_val(src))
        };
        return;
    }
    for (i, v) in src.iter().enumerate() {
        // SAFETY: the caller's guarantee.
        unsafe { v.store(o.offset(i as isize * so)) };
    }
}

/// A map's own AVX-512 kernel ([`Map1::run_avx512`]) over a contiguous run, or over a
/// strided run gathered a block at a time into a local array ([`gather_run`]), the
/// results written straight to a contiguous output.
/// Every element goes through the kernel, the tail included, so an element's result does
/// not depend on where it sits in the run.
///
/// # Safety
/// As for [`blocks1`] (contiguous) or [`blocks1_strided`]; the CPU has the AVX-512 level.
#[inline(always)]
unsafe fn blocks1_avx512<A: Element, O: Element, F: Map1<A, O>, const STRIDED: bool>(
    o: *mut u8,
    so: isize,
    x: *const u8,
    sx: isize,
    n: usize,
    f: &F,
) {
    if !STRIDED {
        // SAFETY: the caller's contract (the kernel reads and writes unaligned).
        unsafe { f.run_avx512(o as *mut O, x as *const A, n) };
        return;
    }
    let out_contiguous = so == size_of::<O>() as isize;
    let mut k = 0;
    while k < n {
        let m = RUN_BLOCK.min(n - k);
        let mut xa = [A::default(); RUN_BLOCK];
        // SAFETY: elements `k..k + m` are inside the run (caller).
        unsafe { gather_run(&mut xa[..m], x.offset(k as isize * sx), sx) };
        if out_contiguous {
            // SAFETY: `m` output elements from `k` are writable (caller), disjoint from
            // the local array; the CPU has AVX-512 (caller).
            unsafe { f.run_avx512(o.offset(k as isize * so) as *mut O, xa.as_ptr(), m) };
        } else {
            let mut r = [O::default(); RUN_BLOCK];
            // SAFETY: both local arrays hold `m` elements; the CPU has AVX-512 (caller).
            unsafe { f.run_avx512(r.as_mut_ptr(), xa.as_ptr(), m) };
            // SAFETY: elements `k..k + m` are inside the run (caller).
            unsafe { scatter_run(o.offset(k as isize * so), so, &r[..m]) };
        }
        k += m;
    }
}

/// [`blocks1`] (contiguous, `so`/`sx` ignored) or [`blocks1_strided`], compiled for the
/// CPU level `level` (`kernel/cpu.rs`): the same code at every level, so the same results.
/// The AVX-512 copy exists only for `MATH` on float types; others run the AVX2 copy.
///
/// # Safety
/// As for the function chosen; `level` at most [`cpu::level`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn blocks1_on<
    A: Element,
    O: Element,
    F: Map1<A, O>,
    const STRIDED: bool,
    const MATH: bool,
>(
    level: Level,
    o: *mut u8,
    so: isize,
    x: *const u8,
    sx: isize,
    n: usize,
    f: &F,
) {
    #[inline(always)]
    unsafe fn body<A: Element, O: Element, const STRIDED: bool>(
        o: *mut u8,
        so: isize,
        x: *const u8,
        sx: isize,
        n: usize,
        f: &impl Map1<A, O>,
    ) {
        // SAFETY: the contract of `blocks1_on`.
        unsafe {
            if STRIDED {
                blocks1_strided::<A, O>(o, so, x, sx, n, f)
            } else {
                blocks1::<A, O>(o, x, n, f)
            }
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn on_avx2<A: Element, O: Element, const STRIDED: bool>(
            o: *mut u8,
            so: isize,
            x: *const u8,
            sx: isize,
            n: usize,
            f: &impl Map1<A, O>,
        ) {
            // SAFETY: the contract of `blocks1_on`.
            unsafe { body::<A, O, STRIDED>(o, so, x, sx, n, f) }
        }
        #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")]
        unsafe fn on_avx512<A: Element, O: Element, F: Map1<A, O>, const STRIDED: bool>(
            o: *mut u8,
            so: isize,
            x: *const u8,
            sx: isize,
            n: usize,
            f: &F,
        ) {
            // SAFETY: the contract of `blocks1_on`; this copy runs only on AVX-512 CPUs.
            unsafe {
                if F::AVX512 {
                    blocks1_avx512::<A, O, F, STRIDED>(o, so, x, sx, n, f)
                } else {
                    body::<A, O, STRIDED>(o, so, x, sx, n, f)
                }
            }
        }
        match level {
            Level::Avx512 if MATH && A::VECTOR_MATH => {
                // SAFETY: the caller's contract; the CPU has the level's features.
                return unsafe { on_avx512::<A, O, F, STRIDED>(o, so, x, sx, n, f) };
            }
            Level::Avx2 | Level::Avx512 => {
                // SAFETY: as above.
                return unsafe { on_avx2::<A, O, STRIDED>(o, so, x, sx, n, f) };
            }
            Level::Portable => {}
        }
    }
    let _ = level;
    // SAFETY: the caller's contract.
    unsafe { body::<A, O, STRIDED>(o, so, x, sx, n, f) }
}

/// [`blocks2`], compiled for AVX2 when `level` has it (as [`blocks1_on`]; memory-bound
/// binary ops gain nothing from AVX-512, so there is no third copy).
///
/// # Safety
/// As for [`blocks2`]; `level` at most [`cpu::level`].
#[inline(always)]
unsafe fn blocks2_on<
    A: Element,
    B: Element,
    O: Element,
    F: Map2<A, B, O>,
    const DX: usize,
    const DY: usize,
>(
    level: Level,
    o: *mut u8,
    x: *const u8,
    y: *const u8,
    n: usize,
    f: &F,
) {
    #[cfg(target_arch = "x86_64")]
    {
        if F::AVX512 && level >= Level::Avx512 {
            #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")]
            unsafe fn on_avx512<
                A: Element,
                B: Element,
                O: Element,
                const DX: usize,
                const DY: usize,
            >(
                o: *mut u8,
                x: *const u8,
                y: *const u8,
                n: usize,
                f: &impl Map2<A, B, O>,
            ) {
                // SAFETY: the contract of `blocks2_on`; this copy runs only on AVX-512 CPUs.
                unsafe { blocks2::<A, B, O, DX, DY, true>(o, x, y, n, f) }
            }
            // SAFETY: the caller's contract; the CPU has the AVX-512 level's features.
            return unsafe { on_avx512::<A, B, O, DX, DY>(o, x, y, n, f) };
        }
        if level >= Level::Avx2 {
            #[target_feature(enable = "avx2,fma,f16c")]
            unsafe fn on_avx2<
                A: Element,
                B: Element,
                O: Element,
                const DX: usize,
                const DY: usize,
            >(
                o: *mut u8,
                x: *const u8,
                y: *const u8,
                n: usize,
                f: &impl Map2<A, B, O>,
            ) {
                // SAFETY: the contract of `blocks2_on`.
                unsafe { blocks2::<A, B, O, DX, DY, false>(o, x, y, n, f) }
            }
            // SAFETY: the caller's contract; the CPU has AVX2, FMA and F16C.
            return unsafe { on_avx2::<A, B, O, DX, DY>(o, x, y, n, f) };
        }
    }
    let _ = level;
    // SAFETY: the caller's contract.
    unsafe { blocks2::<A, B, O, DX, DY, false>(o, x, y, n, f) }
}

/// `out[i] = f(a[i])`, with `a` broadcast to `out`'s shape.
///
/// `MATH` is whether `cost` is [`Cost::Math`], known at compile time: only math gets the
/// AVX-512 copy of the block loop and the strided block loop (memory-bound ops gain
/// nothing from them, and each copy is compiled for every op and dtype).
pub(crate) fn unary_into<A, O, F, const MATH: bool>(
    op: &'static str,
    cost: Cost,
    out: &Tensor,
    a: &Tensor,
    f: F,
) -> Result<()>
where
    A: Element,
    O: Element,
    F: Map1<A, O>,
{
    if let Some((n, [false])) = flat(out, O::DTYPE, [(a, A::DTYPE)]) {
        flat_check_write(op, out)?;
        let g = borrow_for(op, out, [a])?;
        // Pointers are read under the borrows (S3).
        let (o, x) = (first(out), first(a));
        if flat_disjoint(o, n, size_of::<O>(), x, n, size_of::<A>()) {
            out.storage().bump_version();
            // SAFETY: `out` and `a` are contiguous runs of `n` elements of the kernel's
            // dtypes inside their storages (L4), borrowed above; `a` is disjoint from `out`
            // or exactly it (`flat_disjoint`); `cpu::level` says what the CPU has.
            unsafe { blocks1_on::<A, O, _, false, MATH>(cpu::level(), o, 0, x, 0, n, &f) };
            return Ok(());
        }
        drop(g);
    }
    let ([a], [la]) = prepare(op, out, O::DTYPE, [(a, A::DTYPE)])?;
    let _g = borrow_for_write(op, out, [&a])?;
    let lp = Loop::new(
        out.shape(),
        [
            (out.layout(), size_of::<O>(), out.storage().data_ptr()),
            (&la, size_of::<A>(), a.storage().data_ptr()),
        ],
    );
    let (so, sa) = (size_of::<O>() as isize, size_of::<A>() as isize);
    let level = cpu::level();
    debug_assert_eq!(MATH, is_math(cost));
    // SAFETY: the loop's pointers come from layouts inside their storages (L4), borrowed
    // above (exclusive for `out`, shared for `a`); `out` does not overlap itself
    // (`check_write`) and `a` is disjoint from it, identical, or staged (`prepare`); the
    // inner loop touches exactly `n` elements at the loop's strides. `level` is what this
    // CPU has (`cpu::level`).
    unsafe {
        lp.run(par_from(MATH, &[A::DTYPE, O::DTYPE]), |p, s, n| {
            let (o, x) = (p[0], p[1] as *const u8);
            if s[0] == so && s[1] == sa {
                blocks1_on::<A, O, _, false, MATH>(level, o, 0, x, 0, n, &f);
            } else if s[1] != 0 {
                // Strided inputs are gathered a block at a time to run as vector code
                // (float32 `sqrt` of a `[::2]` view: 873 µs element by element, PyTorch
                // 600).
                blocks1_on::<A, O, _, true, MATH>(level, o, s[0], x, s[1], n, &f);
            } else {
                let v = f.one(A::load(x));
                for k in 0..n as isize {
                    v.store(o.offset(k * s[0]));
                }
            }
        })
    };
    Ok(())
}

/// `out[i] = f(a[i], b[i])`, with `a` and `b` broadcast to `out`'s shape.
pub(crate) fn binary_into<A, B, O, F>(
    op: &'static str,
    cost: Cost,
    out: &Tensor,
    a: &Tensor,
    b: &Tensor,
    f: F,
) -> Result<()>
where
    A: Element,
    B: Element,
    O: Element,
    F: Map2<A, B, O>,
{
    if let Some((n, one @ ([false, _] | [_, false]))) =
        flat(out, O::DTYPE, [(a, A::DTYPE), (b, B::DTYPE)])
    {
        flat_check_write(op, out)?;
        let g = borrow_for(op, out, [a, b])?;
        // Pointers are read under the borrows (S3).
        let (o, x, y) = (first(out), first(a), first(b));
        let len = |one: bool| if one { 1 } else { n };
        // A broadcast single element overlapping the output is never "exactly" it, so it
        // goes to the general path, which stages it.
        if flat_disjoint(o, n, size_of::<O>(), x, len(one[0]), size_of::<A>())
            && flat_disjoint(o, n, size_of::<O>(), y, len(one[1]), size_of::<B>())
        {
            out.storage().bump_version();
            let level = cpu::level();
            // SAFETY: as in `unary_into`'s flat path, for two inputs, a broadcast one being
            // a single element read at stride 0.
            unsafe {
                match one {
                    [false, false] => blocks2_on::<A, B, O, _, 1, 1>(level, o, x, y, n, &f),
                    [false, true] => blocks2_on::<A, B, O, _, 1, 0>(level, o, x, y, n, &f),
                    _ => blocks2_on::<A, B, O, _, 0, 1>(level, o, x, y, n, &f),
                }
            };
            return Ok(());
        }
        drop(g);
    }
    let ([a, b], [la, lb]) = prepare(op, out, O::DTYPE, [(a, A::DTYPE), (b, B::DTYPE)])?;
    let _g = borrow_for_write(op, out, [&a, &b])?;
    let lp = Loop::new(
        out.shape(),
        [
            (out.layout(), size_of::<O>(), out.storage().data_ptr()),
            (&la, size_of::<A>(), a.storage().data_ptr()),
            (&lb, size_of::<B>(), b.storage().data_ptr()),
        ],
    );
    let (so, sa, sb) = (
        size_of::<O>() as isize,
        size_of::<A>() as isize,
        size_of::<B>() as isize,
    );
    let level = cpu::level();
    // SAFETY: as in `unary_into`, for two inputs.
    unsafe {
        lp.run(
            par_from(is_math(cost), &[A::DTYPE, B::DTYPE, O::DTYPE]),
            |p, s, n| {
                let (o, x, y) = (p[0], p[1] as *const u8, p[2] as *const u8);
                if s[0] == so && s[1] == sa && s[2] == sb {
                    blocks2_on::<A, B, O, _, 1, 1>(level, o, x, y, n, &f);
                } else if s[0] == so && s[1] == sa && s[2] == 0 {
                    blocks2_on::<A, B, O, _, 1, 0>(level, o, x, y, n, &f);
                } else if s[0] == so && s[1] == 0 && s[2] == sb {
                    blocks2_on::<A, B, O, _, 0, 1>(level, o, x, y, n, &f);
                } else {
                    for k in 0..n as isize {
                        f.one(A::load(x.offset(k * s[1])), B::load(y.offset(k * s[2])))
                            .store(o.offset(k * s[0]));
                    }
                }
            },
        )
    };
    Ok(())
}

/// `out[i] = f(a[i], b[i], c[i])`, with the inputs broadcast to `out`'s shape.
pub(crate) fn ternary_into<A, B, C, O, F>(
    op: &'static str,
    cost: Cost,
    out: &Tensor,
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    f: F,
) -> Result<()>
where
    A: Element,
    B: Element,
    C: Element,
    O: Element,
    F: Fn(A, B, C) -> O + Sync,
{
    let ([a, b, c], [la, lb, lc]) = prepare(
        op,
        out,
        O::DTYPE,
        [(a, A::DTYPE), (b, B::DTYPE), (c, C::DTYPE)],
    )?;
    let _g = borrow_for_write(op, out, [&a, &b, &c])?;
    let lp = Loop::new(
        out.shape(),
        [
            (out.layout(), size_of::<O>(), out.storage().data_ptr()),
            (&la, size_of::<A>(), a.storage().data_ptr()),
            (&lb, size_of::<B>(), b.storage().data_ptr()),
            (&lc, size_of::<C>(), c.storage().data_ptr()),
        ],
    );
    let level = cpu::level();
    // SAFETY: as in `unary_into`, for three inputs.
    unsafe {
        lp.run(
            par_from(is_math(cost), &[A::DTYPE, B::DTYPE, C::DTYPE, O::DTYPE]),
            |p, s, n| {
                let (o, x, y, z) = (
                    p[0],
                    p[1] as *const u8,
                    p[2] as *const u8,
                    p[3] as *const u8,
                );
                // A contiguous output with each input a run or one broadcast element (the
                // usual `clamp(x, lo, hi)`, `where(m, x, y)`, `where(m, x, 0.0)`): vector
                // blocks; any other strides element by element.
                let step = |st: isize, size: usize| match st {
                    0 => Some(0),
                    st if st == size as isize => Some(1),
                    _ => None,
                };
                if s[0] == size_of::<O>() as isize {
                    let pattern = (
                        step(s[1], size_of::<A>()),
                        step(s[2], size_of::<B>()),
                        step(s[3], size_of::<C>()),
                    );
                    // SAFETY: the run's `n` elements of each operand at these strides lie
                    // inside its storage (the loop's contract); inputs are disjoint from
                    // `out` or exactly its elements (`prepare` staged the rest).
                    let done = match pattern {
                        (Some(1), Some(1), Some(1)) => {
                            blocks3_on::<A, B, C, O, F, 1, 1, 1>(level, o, x, y, z, n, &f);
                            true
                        }
                        (Some(1), Some(0), Some(0)) => {
                            blocks3_on::<A, B, C, O, F, 1, 0, 0>(level, o, x, y, z, n, &f);
                            true
                        }
                        (Some(1), Some(1), Some(0)) => {
                            blocks3_on::<A, B, C, O, F, 1, 1, 0>(level, o, x, y, z, n, &f);
                            true
                        }
                        (Some(1), Some(0), Some(1)) => {
                            blocks3_on::<A, B, C, O, F, 1, 0, 1>(level, o, x, y, z, n, &f);
                            true
                        }
                        _ => false,
                    };
                    if done {
                        return;
                    }
                }
                for k in 0..n as isize {
                    f(
                        A::load(x.offset(k * s[1])),
                        B::load(y.offset(k * s[2])),
                        C::load(z.offset(k * s[3])),
                    )
                    .store(o.offset(k * s[0]));
                }
            },
        )
    };
    Ok(())
}

/// As [`blocks2`], for three inputs: `out[k] = f(x[k·DX], y[k·DY], z[k·DZ])`, a block of
/// [`RUN_BLOCK`] at a time through local arrays, so that `f` runs as vector code.
///
/// # Safety
/// `o` is writable for `n` elements of `O`; `x`, `y`, `z` readable for `n` elements at
/// stride `DX`, `DY`, `DZ` (1: a run, 0: one element); each input disjoint from the output
/// or exactly its elements (read before written, element by element).
#[inline(always)]
unsafe fn blocks3<
    A: Element,
    B: Element,
    C: Element,
    O: Element,
    F: Fn(A, B, C) -> O,
    const DX: usize,
    const DY: usize,
    const DZ: usize,
>(
    o: *mut u8,
    x: *const u8,
    y: *const u8,
    z: *const u8,
    n: usize,
    f: &F,
) {
    let (sa, sb, sc, so) = (
        size_of::<A>(),
        size_of::<B>(),
        size_of::<C>(),
        size_of::<O>(),
    );
    let mut k = 0;
    while k + RUN_BLOCK <= n {
        // SAFETY: elements `k..k + RUN_BLOCK` are inside the run (caller).
        let xa: [A; RUN_BLOCK] =
            std::array::from_fn(|i| unsafe { A::load(x.add((k + i) * DX * sa)) });
        // SAFETY: as above.
        let ya: [B; RUN_BLOCK] =
            std::array::from_fn(|i| unsafe { B::load(y.add((k + i) * DY * sb)) });
        // SAFETY: as above.
        let za: [C; RUN_BLOCK] =
            std::array::from_fn(|i| unsafe { C::load(z.add((k + i) * DZ * sc)) });
        let r: [O; RUN_BLOCK] = std::array::from_fn(|i| f(xa[i], ya[i], za[i]));
        for (i, v) in r.iter().enumerate() {
            // SAFETY: as above.
            unsafe { v.store(o.add((k + i) * so)) };
        }
        k += RUN_BLOCK;
    }
    for k in k..n {
        // SAFETY: element `k` is inside the run (caller).
        unsafe {
            f(
                A::load(x.add(k * DX * sa)),
                B::load(y.add(k * DY * sb)),
                C::load(z.add(k * DZ * sc)),
            )
            .store(o.add(k * so))
        };
    }
}

/// [`blocks3`], compiled for AVX2 when `level` has it (as [`blocks2_on`]).
///
/// # Safety
/// As for [`blocks3`]; `level` at most [`cpu::level`].
#[inline(always)]
unsafe fn blocks3_on<
    A: Element,
    B: Element,
    C: Element,
    O: Element,
    F: Fn(A, B, C) -> O,
    const DX: usize,
    const DY: usize,
    const DZ: usize,
>(
    level: Level,
    o: *mut u8,
    x: *const u8,
    y: *const u8,
    z: *const u8,
    n: usize,
    f: &F,
) {
    #[cfg(target_arch = "x86_64")]
    if level >= Level::Avx2 {
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn on_avx2<
            A: Element,
            B: Element,
            C: Element,
            O: Element,
            F: Fn(A, B, C) -> O,
            const DX: usize,
            const DY: usize,
            const DZ: usize,
        >(
            o: *mut u8,
            x: *const u8,
            y: *const u8,
            z: *const u8,
            n: usize,
            f: &F,
        ) {
            // SAFETY: the contract of `blocks3_on`.
            unsafe { blocks3::<A, B, C, O, F, DX, DY, DZ>(o, x, y, z, n, f) }
        }
        // SAFETY: the caller's contract; the CPU has AVX2, FMA and F16C.
        return unsafe { on_avx2::<A, B, C, O, F, DX, DY, DZ>(o, x, y, z, n, f) };
    }
    let _ = level;
    // SAFETY: the caller's contract.
    unsafe { blocks3::<A, B, C, O, F, DX, DY, DZ>(o, x, y, z, n, f) }
}

/// `f` over `xs` through the unary block loops at CPU level `level` (at most
/// [`cpu::detected`]), contiguous, or strided when `stride > 1` (every `stride`-th element
/// of `xs`): for the tests of the vector math at each level.
#[cfg(test)]
pub(crate) fn map_at_level<A: Element, O: Element>(
    level: Level,
    xs: &[A],
    stride: usize,
    f: impl Map1<A, O>,
) -> Vec<O> {
    assert!(level <= cpu::detected() && stride >= 1);
    let n = xs.len().div_ceil(stride);
    let mut out = vec![O::default(); n];
    let (o, x) = (out.as_mut_ptr() as *mut u8, xs.as_ptr() as *const u8);
    // SAFETY: `out` holds `n` elements; `xs` holds the `n` elements at stride `stride`;
    // `level` is one this CPU has (asserted).
    unsafe {
        if stride == 1 {
            blocks1_on::<A, O, _, false, true>(level, o, 0, x, 0, n, &f)
        } else {
            let sx = (stride * size_of::<A>()) as isize;
            blocks1_on::<A, O, _, true, true>(level, o, size_of::<O>() as isize, x, sx, n, &f)
        }
    }
    out
}

/// `xs[k] = f(xs[k])` in place at `level` (the output identical to the input: the block
/// path of [`blocks1`], which the disjoint slices of [`map_at_level`] skip).
#[cfg(test)]
pub(crate) fn map_in_place_at_level<T: Element>(level: Level, xs: &mut [T], f: impl Map1<T, T>) {
    assert!(level <= cpu::detected());
    let p = xs.as_mut_ptr() as *mut u8;
    // SAFETY: `xs` holds its `len` elements, read and written in place (identical runs);
    // `level` is one this CPU has (asserted).
    unsafe { blocks1_on::<T, T, _, false, true>(level, p, 0, p, 0, xs.len(), &f) }
}

// Half precision (`f16`, `bf16`) through `f32` blocks: the half arms of the unary and
// binary ops (`kernel/unary.rs`, `kernel/binary.rs`) widen a block of inputs with the
// vector conversions of `kernel/half_convert.rs`, run the op's `f32` function over the
// block (vector code, compiled per CPU level) and narrow the block back, instead of
// converting element by element.

use std::marker::PhantomData;

use super::half_convert::{narrow_bf16_native, run_at, AtLevel, HalfBlock, BLOCK as HALF_BLOCK};
use super::vector_math::{run_f32_kernel, F32Kernel};

/// Widens `m` halves at `x + i·sx` (`i < m`; `sx` in bytes) into `v`: straight from
/// memory when contiguous, else gathered into `tmp` first.
///
/// # Safety
/// The `m` elements must be readable; `m` at most [`HALF_BLOCK`]; `level` at most
/// [`cpu::detected`].
#[inline(always)]
unsafe fn half_load<H: HalfBlock>(
    level: Level,
    x: *const u8,
    sx: isize,
    m: usize,
    tmp: &mut [H; HALF_BLOCK],
    v: &mut [f32; HALF_BLOCK],
) {
    // SAFETY: the caller's contract; `tmp` and `v` hold `m` elements.
    unsafe {
        if sx == 2 {
            H::widen(level, x, v.as_mut_ptr(), m);
        } else {
            for (i, t) in tmp[..m].iter_mut().enumerate() {
                *t = H::load(x.offset(i as isize * sx));
            }
            H::widen(level, tmp.as_ptr().cast(), v.as_mut_ptr(), m);
        }
    }
}

/// Narrows `v[..m]` to the halves at `o + i·so`: straight to memory when contiguous,
/// else through `tmp`.
///
/// # Safety
/// The `m` elements must be writable; `m` at most [`HALF_BLOCK`]; `level` at most
/// [`cpu::detected`].
#[inline(always)]
unsafe fn half_store<H: HalfBlock>(
    level: Level,
    o: *mut u8,
    so: isize,
    m: usize,
    tmp: &mut [H; HALF_BLOCK],
    v: &[f32; HALF_BLOCK],
) {
    // SAFETY: the caller's contract.
    unsafe {
        if so == 2 {
            H::narrow(level, v.as_ptr(), o, m);
        } else {
            H::narrow(level, v.as_ptr(), tmp.as_mut_ptr().cast(), m);
            for (i, t) in tmp[..m].iter().enumerate() {
                t.store(o.offset(i as isize * so));
            }
        }
    }
}

/// One full block of `bf16`s, fused: `o[i] = narrow(f(widen(x[i]), widen(y[i])))` for
/// `i <` [`HALF_BLOCK`], the runs contiguous, read straight from memory into registers
/// (no working arrays: the conversions are a few integer instructions per vector, see
/// `half_convert`; with `native`, which needs AVX512_BF16, the results are rounded by
/// `half_convert::narrow_bf16_native` from one float32 block array). With `BX` (`BY`)
/// the first (second) input is the value `xv` (`yv`) and `x` (`y`) is not read. The whole
/// block is read before it is written (in place is fine).
///
/// # Safety
/// `o` writable and `x` (unless `BX`) and `y` (unless `BY`) readable for
/// [`HALF_BLOCK`] `bf16`s.
#[inline(always)]
unsafe fn bf16_block<const BX: bool, const BY: bool>(
    o: *mut u8,
    x: *const u8,
    y: *const u8,
    xv: f32,
    yv: f32,
    f: &impl Fn(f32, f32) -> f32,
    native: bool,
) {
    use super::half_convert::{bf16_bits_to_f32_lax as up, f32_to_bf16_bits as down};
    type Bits = [u16; HALF_BLOCK];
    let xa: Bits = if BX {
        [0; HALF_BLOCK]
    } else {
        // SAFETY: the caller's contract.
        unsafe { x.cast::<Bits>().read_unaligned() }
    };
    let ya: Bits = if BY {
        [0; HALF_BLOCK]
    } else {
        // SAFETY: the caller's contract.
        unsafe { y.cast::<Bits>().read_unaligned() }
    };
    // Plain loops (an `array::from_fn` closure here is the inlining trap of
    // docs/ARCHITECTURE.md): widen, compute, round back.
    let mut a = [xv; HALF_BLOCK];
    let mut b = [yv; HALF_BLOCK];
    if !BX {
        for (v, &h) in a.iter_mut().zip(&xa) {
            *v = up(h);
        }
    }
    if !BY {
        for (v, &h) in b.iter_mut().zip(&ya) {
            *v = up(h);
        }
    }
    let mut r: Bits = [0; HALF_BLOCK];
    if native {
        let mut v = [0f32; HALF_BLOCK];
        for ((o, &u), &w) in v.iter_mut().zip(&a).zip(&b) {
            *o = f(u, w);
        }
        // SAFETY: the CPU has AVX512_BF16 (the caller's `native`); local arrays of
        // `HALF_BLOCK`.
        unsafe { narrow_bf16_native(v.as_ptr(), r.as_mut_ptr(), HALF_BLOCK) };
    } else {
        for ((o, &u), &w) in r.iter_mut().zip(&a).zip(&b) {
            *o = down(f(u, w));
        }
    }
    // SAFETY: as above.
    unsafe { o.cast::<Bits>().write_unaligned(r) };
}

/// One full block of `f16`s, fused as [`bf16_block`] is: both inputs widened with the
/// vector conversions (F16C / AVX-512) into block arrays, `f` applied, the results
/// narrowed back, every length the constant [`HALF_BLOCK`] (with the run's length
/// unknown, the conversion loops and their tails stayed loops over arrays in memory:
/// float16 `a * b` of 1M took 161 µs, PyTorch 119).
///
/// # Safety
/// As for [`bf16_block`], for `f16`; `level` at most [`cpu::detected`].
#[inline(always)]
unsafe fn f16_block<const BX: bool, const BY: bool>(
    level: Level,
    o: *mut u8,
    x: *const u8,
    y: *const u8,
    xv: f32,
    yv: f32,
    f: &impl Fn(f32, f32) -> f32,
) {
    let mut a = [xv; HALF_BLOCK];
    let mut b = [yv; HALF_BLOCK];
    // SAFETY: the caller's contract; the arrays hold `HALF_BLOCK` values.
    unsafe {
        if !BX {
            half::f16::widen(level, x, a.as_mut_ptr(), HALF_BLOCK);
        }
        if !BY {
            half::f16::widen(level, y, b.as_mut_ptr(), HALF_BLOCK);
        }
    }
    let mut r = [0f32; HALF_BLOCK];
    for ((o, &u), &w) in r.iter_mut().zip(&a).zip(&b) {
        *o = f(u, w);
    }
    // SAFETY: as above; the whole block was read before this write.
    unsafe { half::f16::narrow(level, r.as_ptr(), o, HALF_BLOCK) };
}

/// The arguments of [`half_map1`] as an [`AtLevel`] computation.
struct HalfMap1<'a, H, F> {
    o: *mut u8,
    so: isize,
    x: *const u8,
    sx: isize,
    n: usize,
    f: &'a F,
    /// The op's float32 AVX-512 kernel, run on each widened block at that level in place
    /// of `f` (`vector_math::F32Kernel`).
    kernel: Option<F32Kernel>,
    h: PhantomData<H>,
}

/// Elements per kernel call in [`HalfMap1`]'s contiguous runs.
const KERNEL_CHUNK: usize = 1024;

impl<H: HalfBlock, F: Fn(f32) -> f32> AtLevel for HalfMap1<'_, H, F> {
    #[inline(always)]
    unsafe fn run(&self, level: Level) {
        let &Self {
            o, so, x, sx, n, f, ..
        } = self;
        let mut tmp = [H::default(); HALF_BLOCK];
        let mut v = [0f32; HALF_BLOCK];
        let mut k = 0;
        let kernel = self.kernel.filter(|_| level == Level::Avx512);
        let contiguous_bf16 = H::DTYPE == crate::DType::BF16 && sx == 2 && so == 2;
        let native = super::half_convert::bf16_native(level);
        let fuse = contiguous_bf16 && kernel.is_none();
        // Contiguous runs with a float32 kernel: chunks of `KERNEL_CHUNK` widened into one
        // array and mapped by one kernel call (called per block of 64, the kernel's
        // dispatch and constant set-up came 16384 times per 1M: bfloat16 `exp` took
        // 330–680 µs, depending on how the build happened to inline them).
        if let (Some(kf), true) = (kernel, sx == 2 && so == 2) {
            let mut big = [0f32; KERNEL_CHUNK];
            while n - k >= KERNEL_CHUNK {
                let kk = k as isize * 2;
                // SAFETY: elements `k..k + KERNEL_CHUNK` of the contiguous runs
                // (`half_map1`'s caller); `big` holds `KERNEL_CHUNK` floats; the level is
                // AVX-512 (`kernel` is only kept there), at most what the CPU has; the
                // whole chunk is read before it is written.
                unsafe {
                    let (xk, ok) = (x.offset(kk), o.offset(kk));
                    if H::DTYPE == crate::DType::BF16 {
                        use super::half_convert::bf16_bits_to_f32_lax as up;
                        for (c, vc) in big.chunks_exact_mut(HALF_BLOCK).enumerate() {
                            let xa = xk
                                .add(c * HALF_BLOCK * 2)
                                .cast::<[u16; HALF_BLOCK]>()
                                .read_unaligned();
                            for (e, &b) in vc.iter_mut().zip(&xa) {
                                *e = up(b);
                            }
                        }
                    } else {
                        H::widen(level, xk, big.as_mut_ptr(), KERNEL_CHUNK);
                    }
                    let p = big.as_mut_ptr();
                    run_f32_kernel(kf, p, p, KERNEL_CHUNK);
                    // (bfloat16 rounds by AVX512_BF16 there where the CPU has it.)
                    H::narrow(level, big.as_ptr(), ok, KERNEL_CHUNK);
                }
                k += KERNEL_CHUNK;
            }
        }
        while k < n {
            let m = (n - k).min(HALF_BLOCK);
            let kk = k as isize;
            if let (true, true, Some(kf)) = (contiguous_bf16, m == HALF_BLOCK, kernel) {
                // bfloat16 widens by a shift and rounds back in plain loops (the generic
                // block conversion ran this 2× slower than float16's).
                use super::half_convert::{bf16_bits_to_f32_lax as up, f32_to_bf16_bits as down};
                // SAFETY: elements `k..k + m` of the contiguous runs (`half_map1`'s caller).
                let xa: [u16; HALF_BLOCK] = unsafe {
                    x.offset(kk * 2)
                        .cast::<[u16; HALF_BLOCK]>()
                        .read_unaligned()
                };
                for (e, &b) in v.iter_mut().zip(&xa) {
                    *e = up(b);
                }
                let p = v.as_mut_ptr();
                // SAFETY: the level is AVX-512 (at most what the CPU has); in place.
                unsafe { run_f32_kernel(kf, p, p, HALF_BLOCK) };
                let mut r = [0u16; HALF_BLOCK];
                if native {
                    // SAFETY: AVX512_BF16 (`native`); local arrays of `HALF_BLOCK`.
                    unsafe { narrow_bf16_native(v.as_ptr(), r.as_mut_ptr(), HALF_BLOCK) };
                } else {
                    for (o, &e) in r.iter_mut().zip(&v) {
                        *o = down(e);
                    }
                }
                // SAFETY: as above.
                unsafe {
                    o.offset(kk * 2)
                        .cast::<[u16; HALF_BLOCK]>()
                        .write_unaligned(r)
                };
                k += m;
                continue;
            }
            if fuse && m == HALF_BLOCK {
                let g = |a: f32, _: f32| f(a);
                // SAFETY: elements `k..k + m` of the contiguous runs (`half_map1`'s
                // caller); the second input is not read.
                unsafe {
                    bf16_block::<false, true>(
                        o.offset(kk * 2),
                        x.offset(kk * 2),
                        x,
                        0.0,
                        0.0,
                        &g,
                        native,
                    )
                };
                k += m;
                continue;
            }
            // SAFETY: elements `k..k + m` of the runs (`half_map1`'s caller).
            unsafe { half_load(level, x.offset(kk * sx), sx, m, &mut tmp, &mut v) };
            // The whole block (a fixed trip count, so vector code); lanes past `m` hold
            // earlier values and are not stored.
            if let Some(kf) = kernel {
                let p = v.as_mut_ptr();
                // SAFETY: the level is AVX-512 (checked above, at most what the CPU has);
                // the kernel maps the block in place.
                unsafe { run_f32_kernel(kf, p, p, HALF_BLOCK) };
            } else {
                for e in v.iter_mut() {
                    *e = f(*e);
                }
            }
            // SAFETY: as above.
            unsafe { half_store(level, o.offset(kk * so), so, m, &mut tmp, &v) };
            k += m;
        }
    }
}

/// `out[k·so] = f(x[k·sx])` over `n` halves computed in `f32` (byte strides, any of them
/// 0 or negative), a block at a time, compiled for `level`. A block is read whole before
/// it is written, so an output identical to its input is fine.
///
/// # Safety
/// `o + k·so` writable and `x + k·sx` readable for `k < n`; an input element and an
/// output element are disjoint or identical; `level` at most [`cpu::detected`].
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn half_map1<H: HalfBlock>(
    level: Level,
    o: *mut u8,
    so: isize,
    x: *const u8,
    sx: isize,
    n: usize,
    f: &impl Fn(f32) -> f32,
    kernel: Option<F32Kernel>,
) {
    let body = HalfMap1::<H, _> {
        o,
        so,
        x,
        sx,
        n,
        f,
        kernel,
        h: PhantomData,
    };
    // SAFETY: the caller's contract.
    unsafe { run_at(level, &body) }
}

/// The arguments of [`half_map2`] as an [`AtLevel`] computation.
struct HalfMap2<'a, H, F> {
    o: *mut u8,
    so: isize,
    x: *const u8,
    sx: isize,
    y: *const u8,
    sy: isize,
    n: usize,
    f: &'a F,
    h: PhantomData<H>,
}

impl<H: HalfBlock, F: Fn(f32, f32) -> f32> AtLevel for HalfMap2<'_, H, F> {
    #[inline(always)]
    unsafe fn run(&self, level: Level) {
        let &Self {
            o,
            so,
            x,
            sx,
            y,
            sy,
            n,
            f,
            ..
        } = self;
        let mut tmp = [H::default(); HALF_BLOCK];
        let (mut a, mut b, mut r) = ([0f32; HALF_BLOCK], [0f32; HALF_BLOCK], [0f32; HALF_BLOCK]);
        // A broadcast input fills its block once.
        let one = |p: *const u8| {
            let mut v = [0f32; 1];
            // SAFETY: a stride-0 input is one readable element (`half_map2`'s caller).
            unsafe { H::widen(level, p, v.as_mut_ptr(), 1) };
            v[0]
        };
        if sx == 0 && n > 0 {
            a = [one(x); HALF_BLOCK];
        }
        if sy == 0 && n > 0 {
            b = [one(y); HALF_BLOCK];
        }
        let mut k = 0;
        let contiguous = so == 2 && matches!(sx, 0 | 2) && matches!(sy, 0 | 2);
        let fuse = H::DTYPE == crate::DType::BF16 && contiguous;
        let fuse16 = H::DTYPE == crate::DType::F16 && contiguous && level != Level::Portable;
        let native = super::half_convert::bf16_native(level);
        while k < n {
            let m = (n - k).min(HALF_BLOCK);
            let kk = k as isize;
            if fuse && m == HALF_BLOCK {
                let (xk, yk) = (x.wrapping_offset(kk * sx), y.wrapping_offset(kk * sy));
                let ok = o.wrapping_offset(kk * 2);
                // SAFETY: elements `k..k + m` of the contiguous runs (`half_map2`'s
                // caller); a stride-0 input is not read there (its value is `a[0]` /
                // `b[0]`, filled above).
                unsafe {
                    match (sx == 0, sy == 0) {
                        (false, false) => {
                            bf16_block::<false, false>(ok, xk, yk, 0.0, 0.0, f, native)
                        }
                        (true, false) => {
                            bf16_block::<true, false>(ok, xk, yk, a[0], 0.0, f, native)
                        }
                        (false, true) => {
                            bf16_block::<false, true>(ok, xk, yk, 0.0, b[0], f, native)
                        }
                        (true, true) => bf16_block::<true, true>(ok, xk, yk, a[0], b[0], f, native),
                    }
                }
                k += m;
                continue;
            }
            if fuse16 && m == HALF_BLOCK {
                let (xk, yk) = (x.wrapping_offset(kk * sx), y.wrapping_offset(kk * sy));
                let ok = o.wrapping_offset(kk * 2);
                let (xv, yv) = (a[0], b[0]);
                // SAFETY: as for the `bf16` blocks above; `H` is `f16`.
                unsafe {
                    match (sx == 0, sy == 0) {
                        (false, false) => f16_block::<false, false>(level, ok, xk, yk, xv, yv, f),
                        (true, false) => f16_block::<true, false>(level, ok, xk, yk, xv, yv, f),
                        (false, true) => f16_block::<false, true>(level, ok, xk, yk, xv, yv, f),
                        (true, true) => f16_block::<true, true>(level, ok, xk, yk, xv, yv, f),
                    }
                }
                k += m;
                continue;
            }
            // SAFETY: elements `k..k + m` of the runs (`half_map2`'s caller).
            unsafe {
                if sx != 0 {
                    half_load(level, x.offset(kk * sx), sx, m, &mut tmp, &mut a);
                }
                if sy != 0 {
                    half_load(level, y.offset(kk * sy), sy, m, &mut tmp, &mut b);
                }
            }
            for ((r, x), y) in r.iter_mut().zip(a.iter()).zip(b.iter()) {
                *r = f(*x, *y);
            }
            // SAFETY: as above.
            unsafe { half_store(level, o.offset(kk * so), so, m, &mut tmp, &r) };
            k += m;
        }
    }
}

/// As [`half_map1`] for two inputs: `out[k·so] = f(x[k·sx], y[k·sy])`; a stride-0 input
/// is widened once.
///
/// # Safety
/// As for [`half_map1`], for both inputs.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn half_map2<H: HalfBlock>(
    level: Level,
    o: *mut u8,
    so: isize,
    x: *const u8,
    sx: isize,
    y: *const u8,
    sy: isize,
    n: usize,
    f: &impl Fn(f32, f32) -> f32,
) {
    let body = HalfMap2::<H, _> {
        o,
        so,
        x,
        sx,
        y,
        sy,
        n,
        f,
        h: PhantomData,
    };
    // SAFETY: the caller's contract.
    unsafe { run_at(level, &body) }
}

/// `out[i] = f(a[i])` for a half dtype `H`, computed in `f32` a block at a time (see
/// [`half_map1`]), with `a` broadcast to `out`'s shape: [`unary_into`] for the half arms
/// of the ops that compute through their `f32` function.
pub(crate) fn unary_half_into<H, F>(
    op: &'static str,
    cost: Cost,
    out: &Tensor,
    a: &Tensor,
    f: F,
) -> Result<()>
where
    H: HalfBlock,
    F: Fn(f32) -> f32 + Sync,
{
    unary_half_kernel_into::<H, F>(op, cost, out, a, f, None)
}

/// [`unary_half_into`] with the op's float32 AVX-512 kernel (`vector_math::F32Kernel`),
/// which the AVX-512 level runs on each widened block instead of `f` (`f` stays the
/// other levels' function).
pub(crate) fn unary_half_kernel_into<H, F>(
    op: &'static str,
    cost: Cost,
    out: &Tensor,
    a: &Tensor,
    f: F,
    kernel: Option<F32Kernel>,
) -> Result<()>
where
    H: HalfBlock,
    F: Fn(f32) -> f32 + Sync,
{
    if let Some((n, [false])) = flat(out, H::DTYPE, [(a, H::DTYPE)]) {
        flat_check_write(op, out)?;
        let g = borrow_for(op, out, [a])?;
        // Pointers are read under the borrows (S3).
        let (o, x) = (first(out), first(a));
        if flat_disjoint(o, n, 2, x, n, 2) {
            out.storage().bump_version();
            // SAFETY: as in `unary_into`'s flat path.
            unsafe { half_map1::<H>(cpu::level(), o, 2, x, 2, n, &f, kernel) };
            return Ok(());
        }
        drop(g);
    }
    let ([a], [la]) = prepare(op, out, H::DTYPE, [(a, H::DTYPE)])?;
    let _g = borrow_for_write(op, out, [&a])?;
    let lp = Loop::new(
        out.shape(),
        [
            (out.layout(), 2, out.storage().data_ptr()),
            (&la, 2, a.storage().data_ptr()),
        ],
    );
    let level = cpu::level();
    // SAFETY: as in `unary_into`: the loop's runs lie inside the borrowed storages, `a` is
    // disjoint from `out`, identical, or staged; `level` is what the CPU has.
    unsafe {
        lp.run(par_from(is_math(cost), &[crate::DType::F32]), |p, s, n| {
            half_map1::<H>(level, p[0], s[0], p[1], s[1], n, &f, kernel)
        })
    };
    Ok(())
}

/// `out[i] = f(a[i], b[i])` for a half dtype `H`, computed in `f32` a block at a time
/// (see [`half_map2`]), with `a` and `b` broadcast to `out`'s shape: [`binary_into`] for
/// the half arms of the ops that compute through their `f32` function.
pub(crate) fn binary_half_into<H, F>(
    op: &'static str,
    cost: Cost,
    out: &Tensor,
    a: &Tensor,
    b: &Tensor,
    f: F,
) -> Result<()>
where
    H: HalfBlock,
    F: Fn(f32, f32) -> f32 + Sync,
{
    if let Some((n, one @ ([false, _] | [_, false]))) =
        flat(out, H::DTYPE, [(a, H::DTYPE), (b, H::DTYPE)])
    {
        flat_check_write(op, out)?;
        let g = borrow_for(op, out, [a, b])?;
        // Pointers are read under the borrows (S3).
        let (o, x, y) = (first(out), first(a), first(b));
        let len = |one: bool| if one { 1 } else { n };
        if flat_disjoint(o, n, 2, x, len(one[0]), 2) && flat_disjoint(o, n, 2, y, len(one[1]), 2) {
            out.storage().bump_version();
            let st = |one: bool| if one { 0 } else { 2 };
            // SAFETY: as in `binary_into`'s flat path.
            unsafe { half_map2::<H>(cpu::level(), o, 2, x, st(one[0]), y, st(one[1]), n, &f) };
            return Ok(());
        }
        drop(g);
    }
    let ([a, b], [la, lb]) = prepare(op, out, H::DTYPE, [(a, H::DTYPE), (b, H::DTYPE)])?;
    let _g = borrow_for_write(op, out, [&a, &b])?;
    let lp = Loop::new(
        out.shape(),
        [
            (out.layout(), 2, out.storage().data_ptr()),
            (&la, 2, a.storage().data_ptr()),
            (&lb, 2, b.storage().data_ptr()),
        ],
    );
    let level = cpu::level();
    // SAFETY: as in `binary_into`.
    unsafe {
        lp.run(par_from(is_math(cost), &[crate::DType::F32]), |p, s, n| {
            half_map2::<H>(level, p[0], s[0], p[1], s[1], p[2], s[2], n, &f)
        })
    };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;
    use half::f16;

    /// Runs `blocks2_on` at every level the CPU has on `x`, `y` at the three stride
    /// patterns, and checks the outputs agree bit for bit with the baseline build's.
    fn both_ways2<A: Element, B: Element, O: Element>(x: &[A], y: &[B], f: impl Map2<A, B, O>) {
        let n = x.len().min(y.len());
        let run = |level: Level| {
            let mut outs = vec![vec![O::default(); n]; 3];
            let (xp, yp) = (x.as_ptr() as *const u8, y.as_ptr() as *const u8);
            // SAFETY: each output holds `n` elements; the inputs hold at least `n` (stride
            // 1) or one (stride 0); `level` only up to what the CPU has.
            unsafe {
                let o = |k: usize, outs: &mut Vec<Vec<O>>| outs[k].as_mut_ptr() as *mut u8;
                let (o0, o1, o2) = (o(0, &mut outs), o(1, &mut outs), o(2, &mut outs));
                blocks2_on::<A, B, O, _, 1, 1>(level, o0, xp, yp, n, &f);
                blocks2_on::<A, B, O, _, 1, 0>(level, o1, xp, yp, n, &f);
                blocks2_on::<A, B, O, _, 0, 1>(level, o2, xp, yp, n, &f);
            }
            outs
        };
        let bits = |v: Vec<Vec<O>>| -> Vec<Vec<u8>> {
            v.iter()
                .map(|o| {
                    // SAFETY: every element type is plain bytes without padding (a bool is
                    // 0 or 1), so the vector's memory reads as `size_of_val` bytes.
                    unsafe {
                        std::slice::from_raw_parts(o.as_ptr() as *const u8, size_of_val(&o[..]))
                    }
                    .to_vec()
                })
                .collect()
        };
        for level in levels() {
            assert_eq!(bits(run(level)), bits(run(Level::Portable)), "{level:?}");
        }
    }

    /// The levels this CPU supports.
    fn levels() -> Vec<Level> {
        Level::ALL
            .into_iter()
            .filter(|&l| l <= cpu::detected())
            .collect()
    }

    /// A strided run (every step from −4 to 5, and 7: the gather's constant steps and its
    /// general loop; output contiguous or every second element) gives, at every level,
    /// bit for bit what the same loop gives on the gathered values laid out contiguously
    /// (an index model: element `k` is `xs[start + k·step]`): for vector-math kernels
    /// (float32 `exp`, float64 `sin`), a plain float closure, an integer one and a
    /// boolean one, at lengths around the block.
    #[test]
    fn strided_runs_gather_every_step_as_the_contiguous_loop() {
        fn check<A: Element, O: Element, F: Map1<A, O>, const MATH: bool>(
            f: &F,
            xs: &[A],
            bits: impl Fn(O) -> u64,
        ) {
            for level in levels() {
                for step in [-4isize, -3, -2, -1, 1, 2, 3, 4, 5, 7] {
                    for ostep in [1usize, 2] {
                        for n in [0usize, 1, 15, 63, 64, 65, 130, 200] {
                            let span = step.unsigned_abs() * n.saturating_sub(1) + 1;
                            if span > xs.len() {
                                continue;
                            }
                            let start = if step < 0 { span - 1 } else { 0 };
                            let idx = |k: usize| (start as isize + k as isize * step) as usize;
                            let gathered: Vec<A> = (0..n).map(|k| xs[idx(k)]).collect();
                            let mut want = vec![O::default(); n];
                            let mut got = vec![O::default(); n * ostep];
                            // SAFETY: `want` holds `n` elements and `gathered` as many;
                            // `got` holds `n·ostep`, read at `ostep`; `xs` holds the `n`
                            // elements at `step` from `start` (`span` checked); `level` is
                            // one this CPU has (`levels`).
                            unsafe {
                                blocks1_on::<A, O, F, false, MATH>(
                                    level,
                                    want.as_mut_ptr() as *mut u8,
                                    0,
                                    gathered.as_ptr() as *const u8,
                                    0,
                                    n,
                                    f,
                                );
                                blocks1_on::<A, O, F, true, MATH>(
                                    level,
                                    got.as_mut_ptr() as *mut u8,
                                    (ostep * size_of::<O>()) as isize,
                                    xs.as_ptr().add(start) as *const u8,
                                    step * size_of::<A>() as isize,
                                    n,
                                    f,
                                );
                            }
                            for k in 0..n {
                                assert_eq!(
                                    bits(got[k * ostep]),
                                    bits(want[k]),
                                    "{level:?} step {step} ostep {ostep} n {n} k {k}"
                                );
                            }
                        }
                    }
                }
            }
        }
        let xs32: Vec<f32> = (0..1500)
            .map(|i| ((i * 7919) % 1000) as f32 * 0.01 - 5.0)
            .collect();
        let xs64: Vec<f64> = xs32.iter().map(|&v| v as f64 * 1.37).collect();
        check::<f32, f32, _, true>(&crate::kernel::vector_math::f32_math::ExpMap, &xs32, |v| {
            v.to_bits() as u64
        });
        check::<f64, f64, _, true>(
            &crate::kernel::vector_math::f64_math::SinMap,
            &xs64,
            f64::to_bits,
        );
        check::<f32, f32, _, false>(&|v: f32| v.abs().sqrt(), &xs32, |v| v.to_bits() as u64);
        let ints: Vec<i64> = (0..1500).map(|i| i * 0x9E37_79B9 - 700).collect();
        check::<i64, i64, _, false>(&|v: i64| v.wrapping_mul(3) ^ 5, &ints, |v| v as u64);
        let bools: Vec<bool> = (0..1500).map(|i| (i * 7) % 3 == 0).collect();
        check::<bool, bool, _, false>(&|b: bool| !b, &bools, u64::from);
    }

    /// Complex functions run as split parts ([`ComplexParts`]) give, at every level and
    /// stride pattern, bit for bit what the function gives one element at a time: values
    /// with zeros, infinities, NaNs and huge and tiny parts, at lengths around the block.
    #[test]
    fn complex_parts_blocks_match_the_scalar_function() {
        use crate::{Complex32, Complex64};
        fn check<C: Complex>(make: impl Fn(f64, f64) -> C) {
            let parts = [
                0.0,
                -0.0,
                1.0,
                -2.5,
                3.0e-3,
                7.0e30,
                -1.0e-30,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::NAN,
                0.75,
                -12.0,
            ];
            let all: Vec<C> = (0..parts.len() * parts.len())
                .map(|k| {
                    make(
                        parts[k % parts.len()],
                        parts[(k / parts.len() + 5) % parts.len()],
                    )
                })
                .collect();
            // Each function as its own closure type, so that the blocks inline it (and
            // are vectorised) as the kernels' are.
            fn each<C: Complex>(x: &[C], y: &[C], f: impl Fn(C, C) -> C + Sync + Copy, name: &str) {
                let n = x.len();
                for level in levels() {
                    let mut o = vec![C::default(); n];
                    let (op, xp, yp) = (
                        o.as_mut_ptr() as *mut u8,
                        x.as_ptr() as *const u8,
                        y.as_ptr() as *const u8,
                    );
                    // SAFETY: `o`, `x` and `y` hold `n` elements; `level` only up to what
                    // the CPU has.
                    unsafe {
                        blocks2_on::<C, C, C, _, 1, 1>(level, op, xp, yp, n, &ComplexParts(f))
                    };
                    let same = |p: C::Part, q: C::Part| {
                        p.to_f64().to_bits() == q.to_f64().to_bits() || (p.is_nan() && q.is_nan())
                    };
                    for k in 0..n {
                        let want = f(x[k], y[k]);
                        assert!(
                            same(o[k].re(), want.re()) && same(o[k].im(), want.im()),
                            "{name} at {k} of {n}, {level:?}"
                        );
                    }
                }
                both_ways2(x, y, ComplexParts(f));
            }
            for n in [0, 1, 63, 64, 65, 129, all.len()] {
                let x: Vec<C> = all.iter().cycle().take(n).copied().collect();
                let y: Vec<C> = all.iter().rev().cycle().take(n).copied().collect();
                each(&x, &y, |a: C, b: C| a * b, "mul");
                each(&x, &y, |a: C, b: C| a.div(b), "div");
                each(&x, &y, |a: C, b: C| a - b, "sub");
            }
        }
        check(|re, im| Complex32::new(re as f32, im as f32));
        check(Complex64::new);
    }

    /// `blocks2`'s two forms, the slices (output disjoint from the inputs, all aligned)
    /// and the local blocks (output unaligned, or identical to the first input), give at
    /// every level and stride pattern what the function gives element by element, at
    /// lengths around the block and its tail.
    #[test]
    fn binary_slices_and_blocks_match_the_function_element_by_element() {
        fn check<T: Element, M: Map2<T, T, T>>(f: &M, make: impl Fn(usize) -> T) {
            for n in [0, 1, 2, 63, 64, 65, 127, 128, 129, 200] {
                let x: Vec<T> = (0..n).map(&make).collect();
                let y: Vec<T> = (0..n).map(|k| make(3 * k + 7)).collect();
                let sz = size_of::<T>();
                for level in levels() {
                    for (dx, dy) in [(1, 1), (1, 0), (0, 1)] {
                        let want: Vec<T> = (0..n)
                            .map(|k| {
                                f.one(
                                    x[if dx == 0 { 0 } else { k }],
                                    y[if dy == 0 { 0 } else { k }],
                                )
                            })
                            .collect();
                        // Aligned and disjoint, then one byte off alignment, then in place.
                        for form in 0..3 {
                            let mut buf = vec![0u8; (n + 1) * sz];
                            let at = if form == 1 { 1 } else { 0 };
                            let o = if form == 2 {
                                // In place needs the first input read at stride 1.
                                if dx == 0 {
                                    continue;
                                }
                                for (k, v) in x.iter().enumerate() {
                                    // SAFETY: `buf` holds `n + 1` elements.
                                    unsafe { v.store(buf.as_mut_ptr().add(k * sz)) };
                                }
                                buf.as_mut_ptr()
                            } else {
                                buf.as_mut_ptr().wrapping_add(at)
                            };
                            let xp = if form == 2 {
                                o as *const u8
                            } else {
                                x.as_ptr() as *const u8
                            };
                            let yp = y.as_ptr() as *const u8;
                            if n == 0 && (dx == 0 || dy == 0) {
                                continue;
                            }
                            // SAFETY: `o` has room for `n` elements, the inputs hold `n`
                            // (stride 1) or at least one (stride 0); `level` only up to
                            // what the CPU has; the output is disjoint from `y` and
                            // disjoint from or identical to `x`.
                            unsafe {
                                match (dx, dy) {
                                    (1, 1) => {
                                        blocks2_on::<T, T, T, _, 1, 1>(level, o, xp, yp, n, f)
                                    }
                                    (1, 0) => {
                                        blocks2_on::<T, T, T, _, 1, 0>(level, o, xp, yp, n, f)
                                    }
                                    _ => blocks2_on::<T, T, T, _, 0, 1>(level, o, xp, yp, n, f),
                                }
                            }
                            for (k, w) in want.iter().enumerate() {
                                // SAFETY: element `k` of the output was written above.
                                let got = unsafe { T::load(o.add(k * sz)) };
                                let same = got == *w || (got != got && w != w);
                                assert!(same, "{:?} at {k} of {n}, {level:?}, {dx}{dy}, form {form}: {got:?} vs {w:?}", T::DTYPE);
                            }
                        }
                    }
                }
            }
        }
        check(&|a: f64, b: f64| a + b, |k| (k as f64 - 50.0) * 0.37);
        check(&|a: f32, b: f32| a * b - 1.0, |k| (k as f32 - 50.0) * 1.5);
        check(&|a: i64, b: i64| a.wrapping_sub(b) ^ (a >> 3), |k| {
            (k as i64 - 99) * 0x1234_5678_9abc
        });
        check(&|a: u8, b: u8| a.wrapping_add(b), |k| (k * 37) as u8);
        check(&|a: bool, b: bool| a ^ b, |k| k % 3 == 0);
        let c64 = |k: usize| crate::Complex64::new(k as f64 * 0.5 - 3.0, 1.0 - k as f64 * 0.25);
        check(&|a: crate::Complex64, b: crate::Complex64| a * b, c64);
        // The split-parts maps keep the block form (as slices, complex64 `a * b` and
        // complex128 `a / b` measured slower), aligned or not.
        check(
            &ComplexParts(|a: crate::Complex64, b: crate::Complex64| a * b),
            c64,
        );
        check(
            &ComplexParts(|a: crate::Complex32, b: crate::Complex32| a / b),
            |k| crate::Complex32::new(k as f32 * 0.5 - 3.0, 1.5 - k as f32 * 0.25),
        );
    }

    /// `blocks3` at every level and stride pattern the ternary loop uses, out of place
    /// and in place (the output is the first input), at lengths around the block, against
    /// the function element by element: `clamp` on floats with NaN and crossed bounds,
    /// `where` with a bool condition.
    #[test]
    fn ternary_blocks_match_the_function_element_by_element() {
        use crate::kernel::math::{maximum_real, minimum_real};
        fn check<A: Element, B: Element, C: Element>(
            f: impl Fn(A, B, C) -> A + Sync + Copy,
            xs: impl Fn(usize) -> A,
            ys: impl Fn(usize) -> B,
            zs: impl Fn(usize) -> C,
        ) {
            for n in [0usize, 1, 63, 64, 65, 130] {
                let (x, y, z): (Vec<A>, Vec<B>, Vec<C>) = (
                    (0..n).map(&xs).collect(),
                    (0..n.max(1)).map(&ys).collect(),
                    (0..n.max(1)).map(&zs).collect(),
                );
                for level in levels() {
                    for pat in [(1, 1), (0, 0), (1, 0), (0, 1)] {
                        let want: Vec<A> = (0..n)
                            .map(|k| f(x[k], y[k * pat.0], z[k * pat.1]))
                            .collect();
                        for in_place in [false, true] {
                            let mut o: Vec<A> = if in_place {
                                x.clone()
                            } else {
                                vec![xs(999); n]
                            };
                            let op = o.as_mut_ptr() as *mut u8;
                            let xp = if in_place {
                                op as *const u8
                            } else {
                                x.as_ptr() as *const u8
                            };
                            let (yp, zp) = (y.as_ptr() as *const u8, z.as_ptr() as *const u8);
                            // SAFETY: `o` and `x` hold `n` elements, `y` and `z` `n` or at
                            // least one (stride 0); the output is disjoint from the inputs
                            // or exactly the first; `level` only up to what the CPU has.
                            unsafe {
                                match pat {
                                    (1, 1) => blocks3_on::<A, B, C, A, _, 1, 1, 1>(
                                        level, op, xp, yp, zp, n, &f,
                                    ),
                                    (0, 0) => blocks3_on::<A, B, C, A, _, 1, 0, 0>(
                                        level, op, xp, yp, zp, n, &f,
                                    ),
                                    (1, 0) => blocks3_on::<A, B, C, A, _, 1, 1, 0>(
                                        level, op, xp, yp, zp, n, &f,
                                    ),
                                    _ => blocks3_on::<A, B, C, A, _, 1, 0, 1>(
                                        level, op, xp, yp, zp, n, &f,
                                    ),
                                }
                            }
                            for k in 0..n {
                                let (g, w) = (o[k], want[k]);
                                assert!(
                                    g == w || (g != g && w != w),
                                    "{:?} at {k} of {n}, {level:?}, {pat:?}, in place {in_place}",
                                    A::DTYPE
                                );
                            }
                        }
                    }
                }
            }
        }
        let clamp = |x: f64, lo: f64, hi: f64| minimum_real(maximum_real(x, lo), hi);
        let v = |k: usize| match k % 11 {
            3 => f64::NAN,
            7 => -0.0,
            _ => (k as f64 - 60.0) * 0.37,
        };
        check(
            clamp,
            v,
            |k| {
                if k % 13 == 5 {
                    f64::NAN
                } else {
                    -3.0 + (k % 4) as f64
                }
            },
            |k| {
                if k % 17 == 2 {
                    -9.0
                } else {
                    4.0 - (k % 3) as f64
                }
            },
        );
        let clamp32 = |x: f32, lo: f32, hi: f32| minimum_real(maximum_real(x, lo), hi);
        check(
            clamp32,
            |k| v(k) as f32,
            |k| -1.0 - (k % 5) as f32,
            |k| 2.0 + (k % 7) as f32,
        );
        check(
            |x: i64, lo: i64, hi: i64| x.max(lo).min(hi),
            |k| k as i64 * 7 - 300,
            |k| -(k as i64 % 50),
            |k| 40 + k as i64 % 9,
        );
        // `where`: the condition first, the output of the second input's type.
        fn check_where<T: Element>(v: impl Fn(usize) -> T) {
            let n = 130;
            let m: Vec<bool> = (0..n).map(|k| k % 3 != 1).collect();
            let (a, b): (Vec<T>, Vec<T>) = (
                (0..n).map(&v).collect(),
                (0..n).map(|k| v(k + 500)).collect(),
            );
            let f = |m: bool, x: T, y: T| if m { x } else { y };
            for level in levels() {
                for len in [0usize, 1, 64, 65, 130] {
                    let mut o = vec![v(7); len];
                    // SAFETY: every buffer holds `len` (or at least one) elements and is
                    // disjoint from `o`; `level` only up to what the CPU has.
                    unsafe {
                        blocks3_on::<bool, T, T, T, _, 1, 1, 0>(
                            level,
                            o.as_mut_ptr() as *mut u8,
                            m.as_ptr() as *const u8,
                            a.as_ptr() as *const u8,
                            b.as_ptr() as *const u8,
                            len,
                            &f,
                        )
                    };
                    for k in 0..len {
                        let w = if m[k] { a[k] } else { b[0] };
                        assert!(o[k] == w, "{:?} where at {k} of {len}, {level:?}", T::DTYPE);
                    }
                }
            }
        }
        check_where(|k| k as u8);
        check_where(|k| k as f64 * 0.5);
        check_where(|k| crate::Complex64::new(k as f64, -(k as f64)));
    }

    #[test]
    fn avx2_and_baseline_builds_agree_bit_for_bit() {
        // Special values and a length that leaves a tail after the 64-element blocks.
        let mut v: Vec<f32> = (0..203).map(|i| (i as f32 - 101.0) * 0.37).collect();
        v[3] = f32::NAN;
        v[70] = f32::INFINITY;
        v[71] = f32::NEG_INFINITY;
        v[72] = -0.0;
        let w: Vec<f32> = v.iter().rev().map(|x| x * 1.5 - 2.0).collect();
        both_ways2(&v, &w, |a: f32, b: f32| a + b);
        both_ways2(&v, &w, |a: f32, b: f32| a / b);
        both_ways2(&v, &w, super::super::math::maximum_real::<f32>);
        both_ways2(&v, &w, |a: f32, b: f32| a < b);
        let h: Vec<f16> = v.iter().map(|&x| f16::from_f32(x)).collect();
        let g: Vec<f16> = w.iter().map(|&x| f16::from_f32(x)).collect();
        both_ways2(&h, &g, |a: f16, b: f16| {
            f16::from_f32(a.to_f32() * b.to_f32())
        });
        let i: Vec<i64> = (0..203).map(|k| (k - 100) * 0x1234_5678_9abc).collect();
        let j: Vec<i64> = i.iter().map(|k| k.rotate_left(17)).collect();
        both_ways2(&i, &j, |a: i64, b: i64| a.wrapping_mul(b) ^ (a >> 3));
        both_ways2(&v, &i, |a: f32, b: i64| a as f64 + b as f64);
        // The unary form.
        let run = |level: Level, strided: bool| {
            let mut o = vec![0f32; v.len()];
            let f = |a: f32| a.sqrt() * a.exp() - a.abs();
            let (op, vp) = (o.as_mut_ptr() as *mut u8, v.as_ptr() as *const u8);
            // SAFETY: `o` and `v` hold `v.len()` elements (the strided form walks the
            // first half at stride 2); `level` only up to what the CPU has.
            unsafe {
                if strided {
                    blocks1_on::<f32, f32, _, true, true>(level, op, 8, vp, 8, v.len() / 2, &f)
                } else {
                    blocks1_on::<f32, f32, _, false, true>(level, op, 0, vp, 0, v.len(), &f)
                }
            };
            o.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        };
        for level in levels() {
            for strided in [false, true] {
                assert_eq!(run(level, strided), run(Level::Portable, strided));
            }
        }
    }

    #[test]
    fn maps_over_any_layout() {
        let a = Tensor::arange(0, 12, 1, DType::F32)
            .unwrap()
            .view(&[3, 4])
            .unwrap();
        let b = Tensor::arange(0, 4, 1, DType::F32).unwrap();
        let out = Tensor::zeros(&[4, 3], DType::F32).unwrap();
        binary_into(
            "add",
            Cost::Memory,
            &out,
            &a.t().unwrap(),
            &b.view(&[4, 1]).unwrap(),
            |x: f32, y: f32| x + y,
        )
        .unwrap();
        let want: Vec<f32> = (0..4)
            .flat_map(|i| (0..3).map(move |j| (j * 4 + i) as f32 + i as f32))
            .collect();
        assert_eq!(out.to_vec::<f32>().unwrap(), want);
        // In place on a flipped view of itself: staged, so no corruption.
        let x = Tensor::arange(0, 6, 1, DType::I64).unwrap();
        binary_into(
            "add",
            Cost::Memory,
            &x,
            &x,
            &x.flip(&[0]).unwrap(),
            |p: i64, q: i64| p * 10 + q,
        )
        .unwrap();
        assert_eq!(x.to_vec::<i64>().unwrap(), vec![5, 14, 23, 32, 41, 50]);
        let e = unary_into::<_, _, _, false>(
            "neg",
            Cost::Memory,
            &x.expand(&[2, 6]).unwrap(),
            &x,
            |v: i64| -v,
        )
        .unwrap_err();
        assert!(e.to_string().contains("more than one element"), "{e}");
    }
}
