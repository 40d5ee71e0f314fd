//! The CPU linear-algebra loops: one factorisation per matrix of a batch, through `faer`
//! (LU with partial pivoting, Householder QR, Cholesky, the symmetric eigendecomposition,
//! the SVD), float32, float64, complex64 and complex128 (faer's own complex types are
//! `num_complex`'s, which strata's complex dtypes store).
//!
//! The op layer (`ops/linalg.rs`) hands over inputs already broadcast to the batch shape
//! (views: any strides, negative and zero too) and fresh row-major outputs. Each input
//! matrix is read where it lies, through a `faer::MatRef` with the tensor's row and column
//! strides; a matrix is copied only where faer factors in place (LU and QR, into one
//! column-major scratch matrix per worker). Outputs are written in place: Cholesky factors
//! in the output itself, eigenvectors, singular vectors (`Vh` as the column-major view of
//! `V`), inverses and solutions straight into the output tensors.
//!
//! Parallelism: many small matrices are spread over the pool's threads (each factored
//! serially); large ones go one after another, each with `Par::rayon(threads)`, so faer's
//! own blocked algorithms split the work. Both only inside `pool::parallel`.
//!
//! A factorisation that cannot finish (a zero pivot, a matrix that is not positive
//! definite, no convergence) is reported back as a [`Failure`] (the first batch element in
//! order, and LAPACK's 1-based `info`); the op layer turns it into the error.

use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::linalg::cholesky::llt::factor::{cholesky_in_place, cholesky_in_place_scratch, LltError};
use faer::linalg::evd::{self_adjoint_evd, self_adjoint_evd_scratch, ComputeEigenvectors};
use faer::linalg::householder::{
    apply_block_householder_sequence_on_the_left_in_place_scratch,
    apply_block_householder_sequence_on_the_left_in_place_with_conj,
};
use faer::linalg::lu::partial_pivoting::{factor as lu, inverse as lu_inv, solve as lu_solve};
use faer::linalg::qr::no_pivoting::factor as qr;
use faer::linalg::svd::{svd, svd_scratch, ComputeSvdVectors};
use faer::reborrow::ReborrowMut;
use faer::{ColMut, Conj, Mat, MatMut, MatRef, Par};
use num_complex::Complex;
use rayon::prelude::*;

use super::reduce::Shared;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::linalg::{Failure, Job, QOut, SvdOut};
use crate::storage::borrow;
use crate::tensor::Tensor;

/// Below this many flops (`≈ m·n·min(m, n)`) per matrix a factorisation runs on one
/// thread: faer's parallel paths cost more than they save on small matrices. (At 96³, two
/// threads made 512² `solve`, `eigh` and `svd` 20–40% slower than one on the 2-core VM of
/// the README's table; 2048² gains 1.4–2×.)
const PAR_MATRIX: usize = 768 * 768 * 768;
/// Below this many flops in the whole batch nothing goes parallel.
const PAR_BATCH: usize = 32 * 32 * 32;

/// A zeroed `m × n` matrix, or an out-of-memory error (`Mat::zeros` aborts when the
/// allocation fails; the work matrices are as large as an input matrix).
fn try_zeros<T: Elem>(op: &'static str, m: usize, n: usize) -> Result<Mat<T>> {
    let mut a = Mat::new();
    a.try_reserve(m, n).map_err(|_| {
        let bytes = (m as u128) * (n as u128) * (size_of::<T>() as u128);
        Error::out_of_memory(op, bytes)
    })?;
    a.resize_with(m, n, |_, _| T::ZERO);
    Ok(a)
}

/// The real element types: float32 and float64 (and the parts of the complex ones).
trait Float:
    faer::traits::RealField
    + Copy
    + Send
    + Sync
    + PartialOrd
    + std::ops::Mul<Output = Self>
    + std::ops::MulAssign
    + std::ops::AddAssign
    + std::ops::Neg<Output = Self>
    + 'static
{
    const ZERO: Self;
    /// The machine epsilon, as an `f64`.
    const EPS: f64;
    /// `x` rounded to this type.
    fn from_f64(x: f64) -> Self;
    /// `ln |self|` (`-inf` for zero).
    fn ln_abs(self) -> Self;
    /// `⌊log₂ self⌋` of a positive finite value, at least the smallest normal exponent.
    fn exponent(self) -> i32;
    /// `2ᵉ` for `e` within the normal exponents.
    fn pow2(e: i32) -> Self;
    /// The largest and smallest normal exponents.
    const EXP_RANGE: (i32, i32);
    /// Neither infinite nor NaN.
    fn finite(self) -> bool;
}

impl Float for f32 {
    const ZERO: f32 = 0.0;
    const EPS: f64 = f32::EPSILON as f64;
    fn from_f64(x: f64) -> f32 {
        x as f32
    }
    fn ln_abs(self) -> f32 {
        self.abs().ln()
    }
    fn exponent(self) -> i32 {
        (((self.to_bits() >> 23) & 0xff) as i32 - 127).max(-126)
    }
    fn pow2(e: i32) -> f32 {
        f32::from_bits(((e.clamp(-126, 127) + 127) as u32) << 23)
    }
    const EXP_RANGE: (i32, i32) = (-126, 127);
    fn finite(self) -> bool {
        self.is_finite()
    }
}

impl Float for f64 {
    const ZERO: f64 = 0.0;
    const EPS: f64 = f64::EPSILON;
    fn from_f64(x: f64) -> f64 {
        x
    }
    fn ln_abs(self) -> f64 {
        self.abs().ln()
    }
    fn exponent(self) -> i32 {
        (((self.to_bits() >> 52) & 0x7ff) as i32 - 1023).max(-1022)
    }
    fn pow2(e: i32) -> f64 {
        f64::from_bits(((e.clamp(-1022, 1023) + 1023) as u64) << 52)
    }
    const EXP_RANGE: (i32, i32) = (-1022, 1023);
    fn finite(self) -> bool {
        self.is_finite()
    }
}

/// The element types the loops run on: the two real ones and the two complex ones. The
/// eigenvalues of a Hermitian matrix, singular values and `log|det|` are real
/// ([`Elem::R`]) whatever the element type.
trait Elem:
    faer::traits::ComplexField<Real = Self::R>
    + Copy
    + Send
    + Sync
    + PartialEq
    + std::ops::Mul<Output = Self>
    + std::ops::MulAssign
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::SubAssign
    + std::ops::Div<Output = Self>
    + 'static
{
    /// The real type of the parts.
    type R: Float;
    const ZERO: Self;
    const ONE: Self;
    /// `|self|`.
    fn modulus(self) -> Self::R;
    /// The real part.
    fn real_part(self) -> Self::R;
    /// The complex conjugate (the value itself for a real type).
    fn conjugate(self) -> Self;
    /// `self / r`.
    fn div_real(self, r: Self::R) -> Self;
}

macro_rules! real_elem {
    ($t:ty) => {
        impl Elem for $t {
            type R = $t;
            const ZERO: $t = 0.0;
            const ONE: $t = 1.0;
            fn modulus(self) -> $t {
                self.abs()
            }
            fn real_part(self) -> $t {
                self
            }
            fn conjugate(self) -> $t {
                self
            }
            fn div_real(self, r: $t) -> $t {
                self / r
            }
        }
    };
}
real_elem!(f32);
real_elem!(f64);

macro_rules! complex_elem {
    ($t:ty) => {
        impl Elem for Complex<$t> {
            type R = $t;
            const ZERO: Complex<$t> = Complex::new(0.0, 0.0);
            const ONE: Complex<$t> = Complex::new(1.0, 0.0);
            fn modulus(self) -> $t {
                self.norm()
            }
            fn real_part(self) -> $t {
                self.re
            }
            fn conjugate(self) -> Complex<$t> {
                self.conj()
            }
            fn div_real(self, r: $t) -> Complex<$t> {
                Complex::new(self.re / r, self.im / r)
            }
        }
    };
}
complex_elem!(f32);
complex_elem!(f64);

/// The power of two `2ᵉ` to divide `a` by when its largest modulus lies outside
/// `[√min/ε, ε/√min]` (LAPACK's scaling before `gesdd`/`syevd`: faer's SVD and
/// eigendecomposition square the elements, which overflow or underflow out there), so that
/// the largest modulus becomes about 1; `None` inside the range or for a zero or
/// non-finite matrix.
fn scale_exponent<T: Elem>(a: MatRef<'_, T>) -> Option<i32> {
    let mut big = T::R::ZERO;
    for j in 0..a.ncols() {
        for i in 0..a.nrows() {
            let m = a[(i, j)].modulus();
            if !m.finite() {
                return None;
            }
            if m > big {
                big = m;
            }
        }
    }
    if big == T::R::ZERO {
        return None;
    }
    let (lo_exp, hi_exp) = T::R::EXP_RANGE;
    // √min/ε and its inverse, as exponents of two.
    let eps_exp = T::R::EPS.log2() as i32;
    let lo = lo_exp / 2 - eps_exp;
    let hi = -lo;
    let e = big.exponent();
    debug_assert!(e >= lo_exp && e <= hi_exp);
    (e < lo || e > hi).then_some(e)
}

/// A copy of `a` divided by `2ᵉ` (exact: a power of two), or `None` when the copy cannot
/// be allocated (the factorisation then runs on `a` itself).
fn scaled_copy<T: Elem>(a: MatRef<'_, T>, e: i32) -> Option<Mat<T>> {
    let mut w = try_zeros::<T>("linalg", a.nrows(), a.ncols()).ok()?;
    let f = T::R::pow2(e);
    for j in 0..a.ncols() {
        for i in 0..a.nrows() {
            w[(i, j)] = a[(i, j)].div_real(f);
        }
    }
    Some(w)
}

/// Conjugates every element of `m` in place (nothing for a real type).
fn conj_in_place<E: Elem>(mut m: MatMut<'_, E>) {
    if E::IS_REAL {
        return;
    }
    for c in 0..m.ncols() {
        for r in 0..m.nrows() {
            m[(r, c)] = m[(r, c)].conjugate();
        }
    }
}

/// The storage offsets (in elements) of every matrix of `t` (`[batch.., r, c]`), in
/// row-major batch order.
fn matrix_offsets(t: &Tensor) -> Vec<isize> {
    let nd = t.ndim();
    let (shape, strides) = (&t.shape()[..nd - 2], &t.strides()[..nd - 2]);
    let mut v = Vec::with_capacity(crate::layout::numel_of(shape));
    super::walk(shape, [strides], [t.offset()], |[o]| v.push(o as isize));
    v
}

/// One input matrix: its base pointer, shape and strides.
struct In<T> {
    base: Shared<*const T>,
    rows: usize,
    cols: usize,
    rs: isize,
    cs: isize,
}

impl<T> Clone for In<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for In<T> {}

impl<T> In<T> {
    fn of(t: &Tensor) -> In<T> {
        let nd = t.ndim();
        In {
            base: Shared(t.storage().data_ptr() as *const T),
            rows: t.shape()[nd - 2],
            cols: t.shape()[nd - 1],
            rs: t.strides()[nd - 2],
            cs: t.strides()[nd - 1],
        }
    }

    /// The matrix at element offset `off`.
    ///
    /// # Safety
    /// `off` is one of [`matrix_offsets`] of the tensor this came from, whose storage is
    /// alive and borrowed for reading while the view is used.
    unsafe fn at<'a>(self, off: isize) -> MatRef<'a, T> {
        // SAFETY: every element `off + i·rs + j·cs` lies inside the tensor's checked
        // layout (L2-L4) over its live storage (caller).
        unsafe {
            MatRef::from_raw_parts(
                self.base.get().wrapping_offset(off),
                self.rows,
                self.cols,
                self.rs,
                self.cs,
            )
        }
    }
}

/// One fresh row-major output: `per` elements per batch element.
struct Out<T> {
    base: Shared<*mut T>,
    per: usize,
}

impl<T> Clone for Out<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Out<T> {}

impl<T> Out<T> {
    /// Output `t` of a batch of `count` (> 0) elements.
    fn of(t: &Tensor, count: usize) -> Out<T> {
        Out {
            base: Shared(t.storage().data_ptr() as *mut T),
            per: t.numel() / count.max(1),
        }
    }

    /// The same output read as elements of type `U` (a real output of a complex job).
    fn cast<U>(self) -> Out<U> {
        Out {
            base: Shared(self.base.get() as *mut U),
            per: self.per,
        }
    }

    /// Output `b`'s first element.
    fn ptr(self, b: usize) -> *mut T {
        self.base.get().wrapping_add(b * self.per)
    }

    /// Output `b` as a row-major `rows × cols` matrix (for 1-d outputs, `rows` is the
    /// vector's length and `cols` is 1).
    ///
    /// # Safety
    /// `b` is a batch element of the output, which is fresh, contiguous, borrowed for
    /// writing, and written by this worker only at `b`.
    unsafe fn mat<'a>(self, b: usize, rows: usize, cols: usize) -> MatMut<'a, T> {
        // SAFETY: the `rows·cols = per` elements of output `b` (caller).
        unsafe { MatMut::from_raw_parts_mut(self.ptr(b), rows, cols, cols as isize, 1) }
    }

    /// Output `b`'s elements.
    ///
    /// # Safety
    /// As [`mat`](Self::mat).
    unsafe fn slice<'a>(self, b: usize) -> &'a mut [T] {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts_mut(self.ptr(b), self.per) }
    }
}

/// Per-worker scratch: a column-major working matrix, Householder coefficients, the
/// eigenvalues or singular values (faer writes them as elements of the matrix type), the
/// LU permutation and faer's workspace.
struct Scratch<T: Elem> {
    work: Mat<T>,
    coeff: Mat<T>,
    vals: Vec<T>,
    perm: Vec<usize>,
    perm_inv: Vec<usize>,
    mem: MemBuffer,
}

/// Runs `job` on every matrix of the batch: `ins` are the inputs broadcast to the batch
/// shape, `outs` the fresh row-major outputs. Returns the first failure in batch order.
pub(crate) fn run(
    op: &'static str,
    job: Job,
    outs: &[&Tensor],
    ins: &[&Tensor],
) -> Result<Option<Failure>> {
    let mut wants: Vec<(&crate::Storage, bool)> =
        ins.iter().map(|t| (t.storage(), false)).collect();
    wants.extend(outs.iter().map(|t| (t.storage(), true)));
    let _g = borrow::acquire(op, &wants)?;
    for o in outs {
        o.storage().bump_version();
    }
    // A panic inside faer (which checks its own preconditions with assertions) must not
    // cross into the caller: it becomes an error naming the op.
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match ins[0].dtype() {
        DType::F32 => run_typed::<f32>(op, job, outs, ins),
        DType::F64 => run_typed::<f64>(op, job, outs, ins),
        DType::C64 => run_typed::<Complex<f32>>(op, job, outs, ins),
        DType::C128 => run_typed::<Complex<f64>>(op, job, outs, ins),
        other => Err(Error::dtype(
            op,
            format!("internal error: no linear-algebra loop for {other}"),
        )),
    }));
    r.unwrap_or_else(|_| {
        Err(Error::value(
            op,
            "internal error: the linear-algebra kernel failed",
        ))
    })
}

fn run_typed<T: Elem>(
    op: &'static str,
    job: Job,
    outs: &[&Tensor],
    ins: &[&Tensor],
) -> Result<Option<Failure>> {
    let a = In::<T>::of(ins[0]);
    let (m, n) = (a.rows, a.cols);
    let k = m.min(n);
    let a_offs = matrix_offsets(ins[0]);
    let count = a_offs.len();
    let b = ins.get(1).map(|t| (In::<T>::of(t), matrix_offsets(t)));
    let o: Vec<Out<T>> = outs.iter().map(|t| Out::of(t, count)).collect();
    // A complex multiply-add is four real ones: the thresholds below count real flops.
    let flops = m
        .saturating_mul(n)
        .saturating_mul(k.max(1))
        .saturating_mul(if T::IS_REAL { 1 } else { 4 });

    // Scratch sizes for one matrix under `par`.
    let scratch = |par: Par| -> Result<Scratch<T>> {
        let (work, coeff, req) = match job {
            Job::Inv | Job::Det | Job::Slogdet | Job::Solve => {
                let rhs = b.as_ref().map_or(n, |(b, _)| b.cols);
                let req = StackReq::any_of(&[
                    lu::lu_in_place_scratch::<usize, T>(n, n, par, Default::default()),
                    lu_inv::inverse_scratch::<usize, T>(n, par),
                    lu_solve::solve_in_place_scratch::<usize, T>(n, rhs, par),
                ]);
                (try_zeros(op, n, n)?, Mat::zeros(0, 0), req)
            }
            Job::Qr { q } => {
                let bs = qr::recommended_block_size::<T>(m, n);
                let qcols = match q {
                    QOut::Complete => m,
                    _ => k,
                };
                let req = StackReq::any_of(&[
                    qr::qr_in_place_scratch::<T>(m, n, bs, par, Default::default()),
                    apply_block_householder_sequence_on_the_left_in_place_scratch::<T>(
                        m, bs, qcols,
                    ),
                ]);
                (try_zeros(op, m, n)?, try_zeros(op, bs, k)?, req)
            }
            Job::Cholesky { .. } => (
                Mat::zeros(0, 0),
                Mat::zeros(0, 0),
                cholesky_in_place_scratch::<T>(n, par, Default::default()),
            ),
            Job::Eigh { vectors, .. } => {
                let v = if vectors {
                    ComputeEigenvectors::Yes
                } else {
                    ComputeEigenvectors::No
                };
                (
                    Mat::zeros(0, 0),
                    Mat::zeros(0, 0),
                    self_adjoint_evd_scratch::<T>(n, v, par, Default::default()),
                )
            }
            Job::Svd { vectors } => {
                let v = svd_vectors(vectors);
                (
                    Mat::zeros(0, 0),
                    Mat::zeros(0, 0),
                    svd_scratch::<T>(m, n, v, v, par, Default::default()),
                )
            }
        };
        let mem = MemBuffer::try_new(req)
            .map_err(|_| Error::out_of_memory(op, req.unaligned_bytes_required() as u128))?;
        Ok(Scratch {
            work,
            coeff,
            vals: vec![T::ZERO; k],
            perm: vec![0; m],
            perm_inv: vec![0; m],
            mem,
        })
    };

    // Matrices `lo..hi`, each under `par`; the first failure among them.
    let chunk = |lo: usize, hi: usize, par: Par| -> Result<Option<Failure>> {
        let mut s = scratch(par)?;
        let mut first = None;
        for i in lo..hi {
            // SAFETY: `a_offs[i]` is a matrix of input 0, borrowed above.
            let am = unsafe { a.at(a_offs[i]) };
            let bm = b.as_ref().map(|(bi, offs)| {
                // SAFETY: as above, for input 1.
                unsafe { bi.at(offs[i]) }
            });
            // SAFETY: each batch element's outputs are written by the one worker that
            // runs it.
            let info = unsafe { one(job, am, bm, &o, i, par, &mut s) };
            if let Some(info) = info {
                first.get_or_insert(Failure { batch: i, info });
            }
        }
        Ok(first)
    };

    if count == 0 {
        return Ok(None);
    }
    if flops.saturating_mul(count) < PAR_BATCH {
        return chunk(0, count, Par::Seq);
    }
    super::pool::parallel(|threads| {
        if threads > 1 && count > 1 && flops < PAR_MATRIX {
            let per = count.div_ceil(threads * 4).max(1);
            let found: Result<Vec<Option<Failure>>> = (0..count.div_ceil(per))
                .into_par_iter()
                .map(|c| chunk(c * per, ((c + 1) * per).min(count), Par::Seq))
                .collect();
            Ok(found?.into_iter().flatten().min_by_key(|f| f.batch))
        } else if threads > 1 && flops >= PAR_MATRIX {
            chunk(0, count, Par::rayon(threads))
        } else {
            chunk(0, count, Par::Seq)
        }
    })
}

fn svd_vectors(v: SvdOut) -> ComputeSvdVectors {
    match v {
        SvdOut::None => ComputeSvdVectors::No,
        SvdOut::Thin => ComputeSvdVectors::Thin,
        SvdOut::Full => ComputeSvdVectors::Full,
    }
}

/// Transposes the row-major `n × n` matrix `m` in place, in tiles.
fn transpose_square<T: Copy>(m: &mut [T], n: usize) {
    const TILE: usize = 32;
    for bi in (0..n).step_by(TILE) {
        for bj in (bi..n).step_by(TILE) {
            for i in bi..(bi + TILE).min(n) {
                let from = if bi == bj { i + 1 } else { bj };
                for j in from..(bj + TILE).min(n) {
                    m.swap(i * n + j, j * n + i);
                }
            }
        }
    }
}

/// Index (0-based) of the first exact zero on the diagonal of the `n × n` LU factor.
fn zero_pivot<T: Elem>(lu: MatRef<'_, T>) -> Option<usize> {
    (0..lu.nrows()).find(|&i| lu[(i, i)] == T::ZERO)
}

/// LU of `a` or of `aᵀ` (square) into `s.work`, with the row permutation in
/// `s.perm`/`s.perm_inv`: `(transpositions, transposed)`.
///
/// A matrix laid out by rows (a NumPy array, a row-major tensor) is factored as `aᵀ`,
/// whose copy into the column-major scratch is a straight copy rather than a transposing
/// one (`det(aᵀ) = det(a)`; the inverse and the solve use the transposed factors). The
/// two factorisations round differently, so an exactly singular `a` may give `aᵀ` a tiny
/// pivot instead of a zero one: when a pivot of `aᵀ`'s factors is within `n·ε` of the
/// largest, `a` itself is factored again, so that a singular matrix is found, and its
/// pivot reported, as LAPACK does on `a`.
fn factor_lu<T: Elem>(a: MatRef<'_, T>, s: &mut Scratch<T>, par: Par) -> (usize, bool) {
    if a.row_stride().unsigned_abs() > a.col_stride().unsigned_abs() {
        let swaps = lu_into(a.transpose(), s, par);
        if !near_singular(s.work.as_ref()) {
            return (swaps, true);
        }
    }
    (lu_into(a, s, par), false)
}

/// True when a pivot of the LU factors `lu` is zero or within `n·ε` of the largest one.
fn near_singular<T: Elem>(lu: MatRef<'_, T>) -> bool {
    let n = lu.nrows();
    let mut big = T::R::ZERO;
    for i in 0..n {
        let d = lu[(i, i)].modulus();
        if d > big {
            big = d;
        }
    }
    let cut = big * T::R::from_f64(n as f64 * T::R::EPS);
    // NaN pivots count as near-singular too.
    (0..n).any(|i| lu[(i, i)].modulus().partial_cmp(&cut) != Some(std::cmp::Ordering::Greater))
}

/// LU of `a` into `s.work`; returns the number of transpositions.
fn lu_into<T: Elem>(a: MatRef<'_, T>, s: &mut Scratch<T>, par: Par) -> usize {
    s.work.copy_from(a);
    let (info, _) = lu::lu_in_place(
        s.work.as_mut(),
        &mut s.perm,
        &mut s.perm_inv,
        par,
        MemStack::new(&mut s.mem),
        Default::default(),
    );
    info.transposition_count
}

/// Square matrices up to this order take [`small_lu`] for `inv`, `det`, `slogdet` and
/// `solve`: a batch of tiny matrices spent most of its time in faer's per-call setup
/// (10000 `inv`s of 4 × 4 took 1.4–1.6× NumPy's time).
const SMALL_N: usize = 8;

/// The LU factors of a square `a` of order `n ≤ SMALL_N` by Gaussian elimination with
/// partial pivoting, as LAPACK's unblocked `getf2` (the pivot the largest modulus in its
/// column, the rows swapped whole): `lu` row-major with stride `SMALL_N` (`L`'s unit
/// diagonal implied), `piv[j]` the row swapped with row `j`, the number of swaps, and the
/// first exactly zero pivot (0-based), which is skipped as LAPACK skips it.
struct SmallLu<T> {
    lu: [T; SMALL_N * SMALL_N],
    piv: [usize; SMALL_N],
    swaps: usize,
    zero: Option<usize>,
}

fn small_lu<T: Elem>(a: MatRef<'_, T>) -> SmallLu<T> {
    let n = a.nrows();
    let mut lu = [T::ZERO; SMALL_N * SMALL_N];
    for r in 0..n {
        for c in 0..n {
            lu[r * SMALL_N + c] = a[(r, c)];
        }
    }
    let mut piv = [0usize; SMALL_N];
    let (mut swaps, mut zero) = (0, None);
    for j in 0..n {
        let mut p = j;
        let mut big = lu[j * SMALL_N + j].modulus();
        for r in j + 1..n {
            let v = lu[r * SMALL_N + j].modulus();
            // The first largest, as LAPACK's `i?amax` (a NaN is not taken over a number).
            if v > big {
                p = r;
                big = v;
            }
        }
        piv[j] = p;
        if lu[p * SMALL_N + j] == T::ZERO {
            zero.get_or_insert(j);
            continue;
        }
        if p != j {
            swaps += 1;
            for c in 0..n {
                lu.swap(j * SMALL_N + c, p * SMALL_N + c);
            }
        }
        let d = lu[j * SMALL_N + j];
        for r in j + 1..n {
            let l = lu[r * SMALL_N + j] / d;
            lu[r * SMALL_N + j] = l;
            for c in j + 1..n {
                lu[r * SMALL_N + c] -= l * lu[j * SMALL_N + c];
            }
        }
    }
    SmallLu {
        lu,
        piv,
        swaps,
        zero,
    }
}

/// Solves `A·x = b` in place from [`small_lu`]'s factors (no zero pivot), for one
/// right-hand side `x` (its first `n` elements).
fn small_solve<T: Elem>(f: &SmallLu<T>, n: usize, x: &mut [T; SMALL_N]) {
    for j in 0..n {
        x.swap(j, f.piv[j]);
    }
    for r in 1..n {
        let mut v = x[r];
        for c in 0..r {
            v -= f.lu[r * SMALL_N + c] * x[c];
        }
        x[r] = v;
    }
    for r in (0..n).rev() {
        let mut v = x[r];
        for c in r + 1..n {
            v -= f.lu[r * SMALL_N + c] * x[c];
        }
        x[r] = v / f.lu[r * SMALL_N + r];
    }
}

/// Writes `det` (or `slogdet`'s sign and `log|det|`) of batch element `i` from the LU
/// pivots `diag` and the number of row swaps. The sign is the product of the pivots'
/// phases `x/|x|` (±1 for a real type) and `log|det|` the sum of `ln|x|` (real). An exactly
/// zero pivot makes the determinant 0 (`(0, −inf)`), whatever follows it: faer's
/// elimination divides by a zero pivot (LAPACK skips it), so the later pivots may be NaN.
///
/// # Safety
/// The outputs have one element per batch element (output 1 of `slogdet` holding the
/// real type), and element `i` is written by this call only.
unsafe fn write_det<T: Elem>(
    job: Job,
    diag: impl Iterator<Item = T>,
    swaps: usize,
    o: &[Out<T>],
    i: usize,
) {
    let mut sign = if swaps % 2 == 1 {
        T::ZERO - T::ONE
    } else {
        T::ONE
    };
    let (mut det, mut logabs, mut zero) = (sign, T::R::ZERO, false);
    for x in diag {
        let m = x.modulus();
        zero |= m == T::R::ZERO;
        det *= x;
        logabs += m.ln_abs();
        if m != T::R::ZERO {
            sign *= x.div_real(m);
        }
    }
    if zero {
        (det, sign, logabs) = (T::ZERO, T::ZERO, T::R::ZERO.ln_abs());
    }
    // SAFETY: the caller's contract.
    unsafe {
        if job == Job::Det {
            o[0].slice(i)[0] = det;
        } else {
            o[0].slice(i)[0] = sign;
            o[1].cast::<T::R>().slice(i)[0] = logabs;
        }
    }
}

/// [`one`] for `inv`, `det`, `slogdet` and `solve` of a matrix of order `n ≤ SMALL_N`.
///
/// # Safety
/// As [`one`].
unsafe fn one_small<T: Elem>(
    job: Job,
    a: MatRef<'_, T>,
    b: Option<MatRef<'_, T>>,
    o: &[Out<T>],
    i: usize,
) -> Option<usize> {
    let n = a.nrows();
    let f = small_lu(a);
    match job {
        Job::Det | Job::Slogdet => {
            let diag = (0..n).map(|d| f.lu[d * SMALL_N + d]);
            // SAFETY: the caller's contract, passed on.
            unsafe { write_det(job, diag, f.swaps, o, i) };
            None
        }
        Job::Inv | Job::Solve => {
            if let Some(z) = f.zero {
                return Some(z + 1);
            }
            let mut col = [T::ZERO; SMALL_N];
            if job == Job::Inv {
                // SAFETY: output 0 is `n × n` at `i`.
                let mut out = unsafe { o[0].mat(i, n, n) };
                for c in 0..n {
                    col[..n].fill(T::ZERO);
                    col[c] = T::ONE;
                    small_solve(&f, n, &mut col);
                    for r in 0..n {
                        out[(r, c)] = col[r];
                    }
                }
            } else {
                let b = b.expect("solve has a right-hand side");
                // SAFETY: output 0 is `n × rhs` at `i`.
                let mut out = unsafe { o[0].mat(i, n, b.ncols()) };
                for c in 0..b.ncols() {
                    for r in 0..n {
                        col[r] = b[(r, c)];
                    }
                    small_solve(&f, n, &mut col);
                    for r in 0..n {
                        out[(r, c)] = col[r];
                    }
                }
            }
            None
        }
        _ => unreachable!("one_small serves the LU jobs"),
    }
}

/// Runs `job` on one matrix `a` (and `b`), writing batch element `i` of the outputs;
/// `Some(info)` (LAPACK's 1-based code) when it cannot be completed.
///
/// # Safety
/// `a` and `b` are live, borrowed input matrices; batch element `i` of every output is
/// written by this call only.
#[allow(clippy::too_many_arguments)]
unsafe fn one<T: Elem>(
    job: Job,
    a: MatRef<'_, T>,
    b: Option<MatRef<'_, T>>,
    o: &[Out<T>],
    i: usize,
    par: Par,
    s: &mut Scratch<T>,
) -> Option<usize> {
    let (m, n) = (a.nrows(), a.ncols());
    let k = m.min(n);
    if n <= SMALL_N && matches!(job, Job::Inv | Job::Det | Job::Slogdet | Job::Solve) {
        // SAFETY: the caller's contract, passed on.
        return unsafe { one_small(job, a, b, o, i) };
    }
    match job {
        Job::Cholesky { upper } => {
            // Upper: `U = Lᴴ`, `L` the lower factor of A from its upper triangle (the lower
            // triangle of `Aᴴ`), written through the transposed view and then conjugated.
            // SAFETY: output 0 is `n × n` at batch element `i` (caller).
            let l = unsafe { o[0].mat(i, n, n) };
            let mut l = if upper { l.transpose_mut() } else { l };
            if upper {
                l.copy_from_triangular_lower(a.adjoint());
            } else {
                l.copy_from_triangular_lower(a);
            }
            let r = cholesky_in_place(
                l.rb_mut(),
                Default::default(),
                par,
                MemStack::new(&mut s.mem),
                Default::default(),
            );
            for c in 1..n {
                for r in 0..c {
                    l[(r, c)] = T::ZERO;
                }
            }
            if upper {
                conj_in_place(l);
            }
            match r {
                Ok(_) => None,
                Err(LltError::NonPositivePivot { index }) => Some(index + 1),
            }
        }
        Job::Inv => {
            let (_, transposed) = factor_lu(a, s, par);
            if let Some(z) = zero_pivot(s.work.as_ref()) {
                return Some(z + 1);
            }
            // SAFETY: output 0 is `n × n` at `i`.
            let out = unsafe { o[0].mat(i, n, n) };
            // inv(a) = inv(aᵀ)ᵀ: written through the transposed (column-major) view.
            let out = if transposed { out.transpose_mut() } else { out };
            let lu = s.work.as_ref();
            lu_inv::inverse(
                out,
                lu,
                lu,
                faer::perm::PermRef::new_checked(&s.perm, &s.perm_inv, n),
                par,
                MemStack::new(&mut s.mem),
            );
            None
        }
        Job::Det | Job::Slogdet => {
            let (swaps, _) = factor_lu(a, s, par);
            let diag = (0..n).map(|d| s.work[(d, d)]);
            // SAFETY: the caller's contract, passed on.
            unsafe { write_det(job, diag, swaps, o, i) };
            None
        }
        Job::Solve => {
            let b = b.expect("solve has a right-hand side");
            let (_, transposed) = factor_lu(a, s, par);
            if let Some(z) = zero_pivot(s.work.as_ref()) {
                return Some(z + 1);
            }
            // SAFETY: output 0 is `n × rhs` at `i`.
            let mut x = unsafe { o[0].mat(i, n, b.ncols()) };
            x.copy_from(b);
            let lu = s.work.as_ref();
            let perm = faer::perm::PermRef::new_checked(&s.perm, &s.perm_inv, n);
            let stack = MemStack::new(&mut s.mem);
            if transposed {
                // The factors are aᵀ's: a·x = b is (aᵀ)ᵀ·x = b.
                lu_solve::solve_transpose_in_place(lu, lu, perm, x, par, stack);
            } else {
                lu_solve::solve_in_place(lu, lu, perm, x, par, stack);
            }
            None
        }
        Job::Qr { q } => {
            s.work.copy_from(a);
            qr::qr_in_place(
                s.work.as_mut(),
                s.coeff.as_mut(),
                par,
                MemStack::new(&mut s.mem),
                Default::default(),
            );
            let (qi, ri) = if q == QOut::None {
                (None, 0)
            } else {
                (Some(0), 1)
            };
            let rrows = if q == QOut::Complete { m } else { k };
            // SAFETY: the R output is `rrows × n` at `i`.
            let mut r = unsafe { o[ri].mat(i, rrows, n) };
            for row in 0..rrows {
                for c in 0..n {
                    r[(row, c)] = if c >= row { s.work[(row, c)] } else { T::ZERO };
                }
            }
            if let Some(qi) = qi {
                let qcols = if q == QOut::Complete { m } else { k };
                // SAFETY: the Q output is `m × qcols` at `i`.
                let mut qm = unsafe { o[qi].mat(i, m, qcols) };
                for row in 0..m {
                    for c in 0..qcols {
                        qm[(row, c)] = if row == c { T::ONE } else { T::ZERO };
                    }
                }
                apply_block_householder_sequence_on_the_left_in_place_with_conj(
                    s.work.as_ref(),
                    s.coeff.as_ref(),
                    Conj::No,
                    qm,
                    par,
                    MemStack::new(&mut s.mem),
                );
            }
            None
        }
        Job::Eigh { vectors, upper } => {
            // faer reads the lower triangle: A's upper one is the lower one of Aᵀ, which for
            // a Hermitian A is conj(A) (same eigenvalues, conjugated eigenvectors).
            let a = if upper { a.transpose() } else { a };
            // Out of the safe range, a scaled copy: eigenvalues scale back, vectors do not.
            let scaled = scale_exponent(a).and_then(|e| Some((e, scaled_copy(a, e)?)));
            let (a, e) = match &scaled {
                Some((e, w)) => (w.as_ref(), *e),
                None => (a, 0),
            };
            let w = ColMut::from_slice_mut(&mut s.vals[..n]).as_diagonal_mut();
            // The eigenvectors go in column-major (faer's back-transformation is several
            // times slower into a row-major matrix), then the square is transposed in place.
            // SAFETY: output 1 is `n × n` at `i`.
            let v = vectors.then(|| unsafe { o[1].mat(i, n, n) }.transpose_mut());
            let r = self_adjoint_evd(a, w, v, par, MemStack::new(&mut s.mem), Default::default());
            // SAFETY: output 0 holds `n` real eigenvalues at `i`.
            let out = unsafe { o[0].cast::<T::R>().slice(i) };
            let f = T::R::pow2(e);
            for (d, x) in out.iter_mut().zip(&s.vals) {
                *d = if e == 0 {
                    x.real_part()
                } else {
                    x.real_part() * f
                };
            }
            if vectors {
                // SAFETY: output 1's `n × n` elements at `i`, written by this call only.
                let m = unsafe { o[1].slice(i) };
                transpose_square(m, n);
                if upper && !T::IS_REAL {
                    m.iter_mut().for_each(|x| *x = x.conjugate());
                }
            }
            r.err().map(|_| n)
        }
        Job::Svd { vectors } => {
            let (si, ui, vi) = if vectors == SvdOut::None {
                (0, None, None)
            } else {
                (1, Some(0), Some(2))
            };
            let (uc, vr) = if vectors == SvdOut::Full {
                (m, n)
            } else {
                (k, k)
            };
            let sv = ColMut::from_slice_mut(&mut s.vals[..k]).as_diagonal_mut();
            // Out of the safe range, a scaled copy: singular values scale back.
            let scaled = scale_exponent(a).and_then(|e| Some((e, scaled_copy(a, e)?)));
            let (a, e) = match &scaled {
                Some((e, w)) => (w.as_ref(), *e),
                None => (a, 0),
            };
            // faer's full U of a tall matrix leaves the block right of the first `n`
            // columns and above the last `m - n` rows unwritten (zero): start from zeros.
            for oi in [ui, vi].into_iter().flatten() {
                // SAFETY: output `oi`'s elements at `i`, written by this call only.
                unsafe { o[oi].slice(i) }.fill(T::ZERO);
            }
            // SAFETY: the U output is `m × uc` at `i`.
            let u = ui.map(|ui| unsafe { o[ui].mat(i, m, uc) });
            // Vh (`vr × n`, row-major) is V (`n × vr`) column-major, conjugated after.
            // SAFETY: the Vh output is `vr × n` at `i`.
            let v = vi.map(|vi| unsafe { o[vi].mat(i, vr, n) }.transpose_mut());
            let r = svd(
                a,
                sv,
                u,
                v,
                par,
                MemStack::new(&mut s.mem),
                Default::default(),
            );
            // SAFETY: the S output holds `k` real values at `i`.
            let out = unsafe { o[si].cast::<T::R>().slice(i) };
            let f = T::R::pow2(e);
            for (d, x) in out.iter_mut().zip(&s.vals) {
                *d = if e == 0 {
                    x.real_part()
                } else {
                    x.real_part() * f
                };
            }
            if let Some(vi) = vi.filter(|_| !T::IS_REAL) {
                // SAFETY: output 2's elements at `i`, written by this call only.
                unsafe { o[vi].slice(i) }
                    .iter_mut()
                    .for_each(|x| *x = x.conjugate());
            }
            r.err().map(|_| k)
        }
    }
}
