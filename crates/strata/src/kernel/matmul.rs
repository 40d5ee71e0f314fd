//! Matrix products: [`matmul`](Tensor::matmul), [`mm`](Tensor::mm), [`mv`](Tensor::mv),
//! [`bmm`](Tensor::bmm), [`dot`](Tensor::dot) and [`outer`](Tensor::outer), with PyTorch's
//! semantics and error texts.
//!
//! Floating-point products go through the `gemm` crate, which takes arbitrary signed row and
//! column strides: the operands' own element strides are passed as they are, so transposed
//! (`a.t()`), flipped (negative strides), stepped (`a[::2]`) and broadcast (stride-0)
//! operands are read in place, never copied to a contiguous buffer first (the engine's
//! rule, `kernel/engine.rs`).
//! `bfloat16` is computed in `float32` (as PyTorch accumulates it) and rounded back, and so
//! are `float16` matrix·vector shapes (where `gemm` would accumulate in `float16`).
//! Integer products use a plain strided kernel with wrapping arithmetic. As in PyTorch,
//! both operands must have the same dtype (no promotion) and `bool` is refused.
//!
//! A batched product is one `gemm` call per matrix of the broadcast batch: each call gets
//! pointers computed from the batch strides (0 for a broadcast batch dim). Large matrices
//! are split across threads by `gemm` itself; many small ones are spread over rayon
//! workers, one matrix each.

use std::cell::Cell;

use rayon::prelude::*;

use super::reduce::Shared;

use super::cpu::{self, Level};
use super::elementwise_loops::binary_into;
use super::engine::GRAIN;
use super::plan::promote_types;
use super::prefetch::{read_ahead, read_ahead_by, AHEAD_PER_STREAM};
use crate::backend::backend_of;
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::layout::broadcast::broadcast_shapes;
use crate::layout::{checked_numel, DimVec};
use crate::ops::table::Cost;
use crate::storage::borrow;
use crate::tensor::Tensor;
use crate::with_dtype;

/// `m·n·k` from which one product is split across threads by `gemm`.
const PAR_WORK: usize = 64 * 64 * 64;

/// One product with fewer rows than this, at least [`BAND_MIN_N`] columns per thread and
/// [`BAND_WORK`] multiply-adds is split into column bands, one per thread (gemm keeps a
/// product of a single row block on one thread: 64×784·784×256 took as long on two
/// threads as on one).
const BAND_MAX_M: usize = 192;
const BAND_MIN_N: usize = 64;
const BAND_WORK: usize = 1 << 22;

/// `gemm::f16` must be strata's `half::f16`, or `gemm` would reject it at run time.
const _: fn(gemm::f16) -> half::f16 = |x| x;

impl Tensor {
    /// The matrix product of two tensors with NumPy's and PyTorch's `matmul` semantics:
    ///
    /// - 1-D · 1-D: the dot product, a 0-d tensor;
    /// - 2-D · 2-D: the matrix product;
    /// - a 1-D operand is promoted to a matrix by prepending (left) or appending (right) a
    ///   dim of size 1, which is removed from the result;
    /// - N-D: a batch of matrix products over the last two dims, the leading (batch) dims
    ///   broadcast together.
    ///
    /// Both tensors must have the same dtype (no promotion, as in PyTorch); `bool` is not
    /// supported. Strided, transposed, flipped and broadcast operands are read in place. The
    /// result is a fresh contiguous tensor.
    ///
    /// ```
    /// use strata::{DType, Tensor};
    /// let a = Tensor::arange(0, 6, 1, DType::F32)?.view(&[2, 3])?;
    /// let p = a.matmul(&a.t()?)?; // a · aᵀ, no copy of aᵀ
    /// assert_eq!(p.to_vec::<f32>()?, vec![5.0, 14.0, 14.0, 50.0]);
    /// let v = Tensor::from_vec(vec![1.0f32, 1.0, 1.0], &[3])?;
    /// assert_eq!(a.matmul(&v)?.shape(), &[2]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    ///
    /// # Errors
    /// A 0-d operand, mismatched inner sizes or batch dims (PyTorch's texts), different
    /// dtypes, `bool`, or a conflicting borrow of an operand's storage.
    pub fn matmul(&self, other: &Tensor) -> Result<Tensor> {
        grad_product(self, other, "MmBackward0", |a, b| a.matmul_raw(b))
    }

    fn matmul_raw(&self, other: &Tensor) -> Result<Tensor> {
        const OP: &str = "matmul";
        let (d1, d2) = (self.ndim(), other.ndim());
        match (d1, d2) {
            (0, _) | (_, 0) => Err(Error::shape(
                OP,
                format!(
                    "both arguments to matmul need to be at least 1D, but they are {d1}D and {d2}D"
                ),
            )),
            (1, 1) => dot_impl(OP, self, other),
            (2, 1) => mv_impl(OP, self, other),
            (1, 2) => mm_impl(OP, &self.unsqueeze(0)?, other)?.squeeze_dims(&[0]),
            (2, 2) => mm_impl(OP, self, other),
            _ => batched(OP, self, other),
        }
    }

    /// The product of two matrices (2-D only; see [`matmul`](Self::matmul) for the general
    /// op).
    ///
    /// # Errors
    /// A non-2-D operand, `mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)`,
    /// different dtypes, `bool`.
    pub fn mm(&self, mat2: &Tensor) -> Result<Tensor> {
        grad_product(self, mat2, "MmBackward0", |a, b| mm_impl("mm", a, b))
    }

    /// The product of a matrix and a vector.
    ///
    /// # Errors
    /// Operands that are not 2-D and 1-D, mismatched sizes, different dtypes, `bool`.
    pub fn mv(&self, vec: &Tensor) -> Result<Tensor> {
        grad_product(self, vec, "MvBackward0", |a, b| mv_impl("mv", a, b))
    }

    /// A batch of matrix products: `[b, n, m] · [b, m, p] → [b, n, p]` (3-D only, equal
    /// batch sizes, no broadcasting).
    ///
    /// # Errors
    /// A non-3-D operand, `Expected size for first two dimensions of batch2 tensor to be:
    /// [b, m] but got: [..].`, different dtypes, `bool`.
    pub fn bmm(&self, mat2: &Tensor) -> Result<Tensor> {
        grad_product(self, mat2, "BmmBackward0", |a, b| a.bmm_raw(b))
    }

    fn bmm_raw(&self, mat2: &Tensor) -> Result<Tensor> {
        const OP: &str = "bmm";
        if self.ndim() != 3 {
            return Err(Error::shape(OP, "batch1 must be a 3D tensor"));
        }
        if mat2.ndim() != 3 {
            return Err(Error::shape(OP, "batch2 must be a 3D tensor"));
        }
        let (s1, s2) = (self.shape(), mat2.shape());
        if s2[0] != s1[0] || s2[1] != s1[2] {
            return Err(batch2_error(OP, s1[0], s1[2], s2[0], s2[1]));
        }
        check_dtypes(OP, self, mat2, Texts::BMM)?;
        product(OP, self, mat2, &s1[..1])
    }

    /// The dot product of two 1-D tensors, as a 0-d tensor.
    ///
    /// # Errors
    /// `1D tensors expected, but got 2D and 2D tensors`, different sizes or dtypes, `bool`.
    pub fn dot(&self, other: &Tensor) -> Result<Tensor> {
        grad_product(self, other, "DotBackward0", |a, b| dot_impl("dot", a, b))
    }

    /// The outer product of two 1-D tensors: `out[i, j] = self[i] · vec2[j]`. Unlike the
    /// other products, and as in PyTorch, the dtypes are promoted and `bool` is allowed
    /// (it is an elementwise product).
    ///
    /// # Errors
    /// `outer: Expected 1-D argument self, but got 2-D`, or an unsupported promotion.
    pub fn outer(&self, vec2: &Tensor) -> Result<Tensor> {
        const OP: &str = "outer";
        for (t, name) in [(self, "self"), (vec2, "vec2")] {
            if t.ndim() != 1 {
                return Err(Error::shape(
                    OP,
                    format!("Expected 1-D argument {name}, but got {}-D", t.ndim()),
                ));
            }
        }
        let dt = promote_types(self.dtype(), vec2.dtype())?;
        let a = self.to_dtype(dt)?.unsqueeze(1)?;
        let b = vec2.to_dtype(dt)?.unsqueeze(0)?;
        if !a.device().is_cpu() || !b.device().is_cpu() {
            // Another device: its backend's elementwise product.
            return a.mul(&b);
        }
        let out = Tensor::zeros(&[self.shape()[0], vec2.shape()[0]], dt)?;
        with_dtype!(dt, T => binary_into::<T, T, T, _>(OP, Cost::Memory, &out, &a, &b, |x: T, y: T| x.mul(y)))?;
        Ok(out)
    }
}

/// The error texts of one family of products (they differ in PyTorch).
#[derive(Clone, Copy)]
struct Texts {
    /// The kernel name in `"<name>" not implemented for 'Bool'`.
    kernel: &'static str,
    /// How a dtype mismatch is worded.
    mismatch: Mismatch,
}

#[derive(Clone, Copy)]
enum Mismatch {
    /// `mat1 and mat2 must have the same dtype, but got Float and Double`.
    Mat,
    /// `expected scalar type Float but found Double`.
    Scalar,
    /// `dot : expected both vectors to have same dtype, but found Float and Double`.
    Dot,
}

impl Texts {
    const MM: Texts = Texts {
        kernel: "addmm_impl_cpu_",
        mismatch: Mismatch::Mat,
    };
    const MV: Texts = Texts {
        kernel: "addmv_impl_cpu",
        mismatch: Mismatch::Scalar,
    };
    const BMM: Texts = Texts {
        kernel: "bmm",
        mismatch: Mismatch::Scalar,
    };
    const DOT: Texts = Texts {
        kernel: "dot",
        mismatch: Mismatch::Dot,
    };
}

/// Equal dtypes, and not `bool`.
fn check_dtypes(op: &'static str, a: &Tensor, b: &Tensor, texts: Texts) -> Result<()> {
    let (x, y) = (a.dtype().legacy_name(), b.dtype().legacy_name());
    if a.dtype() != b.dtype() {
        return Err(Error::dtype(
            op,
            match texts.mismatch {
                Mismatch::Mat => {
                    format!("mat1 and mat2 must have the same dtype, but got {x} and {y}")
                }
                Mismatch::Scalar => format!("expected scalar type {x} but found {y}"),
                Mismatch::Dot => {
                    format!("dot : expected both vectors to have same dtype, but found {x} and {y}")
                }
            },
        ));
    }
    if a.dtype() == DType::Bool {
        return Err(Error::dtype(
            op,
            format!("\"{}\" not implemented for 'Bool'", texts.kernel),
        ));
    }
    Ok(())
}

fn batch2_error(op: &'static str, bs: usize, k: usize, got0: usize, got1: usize) -> Error {
    Error::shape(
        op,
        format!(
            "Expected size for first two dimensions of batch2 tensor to be: [{bs}, {k}] but got: [{got0}, {got1}]."
        ),
    )
}

fn mm_shape_error(op: &'static str, m: usize, k1: usize, k2: usize, n: usize) -> Error {
    Error::shape(
        op,
        format!("mat1 and mat2 shapes cannot be multiplied ({m}x{k1} and {k2}x{n})"),
    )
}

fn mv_shape_error(op: &'static str, m: usize, k1: usize, k2: usize) -> Error {
    Error::shape(
        op,
        format!("size mismatch, got input ({m}), mat ({m}x{k1}), vec ({k2})"),
    )
}

fn mm_impl(op: &'static str, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.ndim() != 2 {
        return Err(Error::shape(op, "self must be a matrix"));
    }
    if b.ndim() != 2 {
        return Err(Error::shape(op, "mat2 must be a matrix"));
    }
    let (sa, sb) = (a.shape(), b.shape());
    if sa[1] != sb[0] {
        return Err(mm_shape_error(op, sa[0], sa[1], sb[0], sb[1]));
    }
    check_dtypes(op, a, b, Texts::MM)?;
    product(op, a, b, &[])
}

fn mv_impl(op: &'static str, a: &Tensor, v: &Tensor) -> Result<Tensor> {
    if a.ndim() != 2 || v.ndim() != 1 {
        return Err(Error::shape(
            op,
            format!(
                "vector + matrix @ vector expected, got 1, {}, {}",
                a.ndim(),
                v.ndim()
            ),
        ));
    }
    let (m, k) = (a.shape()[0], a.shape()[1]);
    if v.shape()[0] != k {
        return Err(mv_shape_error(op, m, k, v.shape()[0]));
    }
    check_dtypes(op, a, v, Texts::MV)?;
    product(op, a, &v.unsqueeze(1)?, &[])?.view(&[m as i64])
}

fn dot_impl(op: &'static str, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.ndim() != 1 || b.ndim() != 1 {
        return Err(Error::shape(
            op,
            format!(
                "1D tensors expected, but got {}D and {}D tensors",
                a.ndim(),
                b.ndim()
            ),
        ));
    }
    check_dtypes(op, a, b, Texts::DOT)?;
    let (n1, n2) = (a.numel(), b.numel());
    if n1 != n2 {
        return Err(Error::shape(
            op,
            format!(
                "inconsistent tensor size, expected tensor [{n1}] and src [{n2}] to have the same number of elements, but got {n1} and {n2} elements respectively"
            ),
        ));
    }
    product(op, &a.unsqueeze(0)?, &b.unsqueeze(1)?, &[])?.view(&[])
}

/// `matmul` with at least one operand of 3 or more dims.
fn batched(op: &'static str, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (d1, d2) = (a.ndim(), b.ndim());
    let to_i64 = |s: &[usize]| s.iter().map(|&x| x as i64).collect::<Vec<i64>>();
    if d2 <= 2 {
        // PyTorch folds the batch dims of `a` into its rows and calls mm/mv: a single
        // product, when `a`'s batch and row dims can be viewed as one (no copy).
        let sa = a.shape();
        let k = sa[d1 - 1];
        let rows = checked_numel(op, &sa[..d1 - 1])?;
        if b.shape()[0] != k {
            return Err(if d2 == 2 {
                mm_shape_error(op, rows, k, b.shape()[0], b.shape()[1])
            } else {
                mv_shape_error(op, rows, k, b.shape()[0])
            });
        }
        check_dtypes(op, a, b, if d2 == 2 { Texts::MM } else { Texts::MV })?;
        if let Ok(folded) = a.view(&[rows as i64, k as i64]) {
            let b2 = if d2 == 1 { b.unsqueeze(1)? } else { b.clone() };
            let mut shape = sa[..d1 - 1].to_vec();
            if d2 == 2 {
                shape.push(b.shape()[1]);
            }
            return product(op, &folded, &b2, &[])?.view(&to_i64(&shape));
        }
    }
    let a3 = if d1 == 1 { a.unsqueeze(0)? } else { a.clone() };
    let b3 = if d2 == 1 { b.unsqueeze(1)? } else { b.clone() };
    let (na, nb) = (a3.ndim(), b3.ndim());
    let batch = broadcast_shapes(op, &a3.shape()[..na - 2], &b3.shape()[..nb - 2])?;
    let (m, k1) = (a3.shape()[na - 2], a3.shape()[na - 1]);
    let (k2, n) = (b3.shape()[nb - 2], b3.shape()[nb - 1]);
    if k1 != k2 {
        let bs = checked_numel(op, &batch)?;
        return Err(batch2_error(op, bs, k1, bs, k2));
    }
    check_dtypes(op, a, b, Texts::BMM)?;
    let out = product(op, &a3, &b3, &batch)?;
    let mut shape = batch.to_vec();
    if d1 > 1 {
        shape.push(m);
    }
    if d2 > 1 {
        shape.push(n);
    }
    out.view(&to_i64(&shape))
}

/// True when the storage's base pointer is aligned for elements of `dtype` (every element
/// then is: offsets are whole elements).
fn aligned(t: &Tensor) -> bool {
    (t.storage().data_ptr() as usize).is_multiple_of(t.dtype().itemsize())
}

/// `b` is the transpose of the matrix `a`: the same elements (same storage and offset, row
/// and column strides swapped), so `a · b` is symmetric.
fn transpose_of(a: &Tensor, b: &Tensor) -> bool {
    a.ndim() == 2
        && b.ndim() == 2
        && a.shape()[0] == b.shape()[1]
        && a.shape()[1] == b.shape()[0]
        && a.same_storage(b)
        && a.offset() == b.offset()
        && a.strides()[0] == b.strides()[1]
        && a.strides()[1] == b.strides()[0]
}

/// The core: `a` of shape `[.., m, k]` times `b` of shape `[.., k, n]`, whose leading
/// dims broadcast to `batch`, into a fresh contiguous `[batch.., m, n]`. Shapes and dtypes
/// were checked by the caller (same dtype, not bool).
fn product(op: &'static str, a: &Tensor, b: &Tensor, batch: &[usize]) -> Result<Tensor> {
    product_with(op, a, b, batch, true)
}

/// [`product`], with `gemm` allowed or not (tests compare the two kernels).
fn product_with(
    op: &'static str,
    a: &Tensor,
    b: &Tensor,
    batch: &[usize],
    allow_gemm: bool,
) -> Result<Tensor> {
    let dt = a.dtype();
    let (na, nb) = (a.ndim(), b.ndim());
    let (m, k, n) = (a.shape()[na - 2], a.shape()[na - 1], b.shape()[nb - 1]);
    if !a.device().is_cpu() {
        // A GPU backend takes every dtype it supports as it is (cuBLAS accumulates half
        // types in f32 itself).
        let backend = backend_of(op, &[a, b])?;
        let mut out_shape: DimVec<usize> = batch.iter().copied().collect();
        out_shape.extend([m, n]);
        let out = Tensor::zeros_on(&out_shape, dt, a.device())?;
        if out.numel() > 0 {
            backend.matmul(op, &out, a, b, batch)?;
        }
        return Ok(out);
    }
    // Half-precision products accumulate in f32, as PyTorch's do, and round once at the
    // end: bf16 always goes through f32; f16 too for matrix·vector shapes, where `gemm`
    // would accumulate in f16 (its gemv kernels round the output after every step), and
    // where `gemm` cannot be used (the plain kernel accumulates in the element type).
    let gemm_ok = allow_gemm && aligned(a) && aligned(b);
    if dt == DType::BF16 || (dt == DType::F16 && (m.min(n) <= 1 || !gemm_ok)) {
        let a32 = a.to_dtype(DType::F32)?;
        // `a · aᵀ` stays one: `b` is converted as a view of the converted `a`.
        let b32 = if transpose_of(a, b) {
            a32.t()?
        } else {
            b.to_dtype(DType::F32)?
        };
        let p = product_with(op, &a32, &b32, batch, allow_gemm)?;
        return p.to_dtype(dt);
    }
    let mut out_shape: DimVec<usize> = batch.iter().copied().collect();
    out_shape.extend([m, n]);
    let out = Tensor::zeros(&out_shape, dt)?;
    if out.numel() == 0 || k == 0 {
        return Ok(out);
    }
    if allow_gemm {
        backend_of(op, &[a, b])?.matmul(op, &out, a, b, batch)?;
    } else {
        run_product(op, &out, a, b, batch, false)?;
    }
    Ok(out)
}

/// The CPU loops of a product: `out` (fresh, contiguous `[batch.., m, n]`, non-empty, of
/// the operands' dtype) `= a · b`, with `gemm` allowed or not (tests compare the two
/// kernels). bf16 (and f16 for matrix·vector) operands were converted to f32 by the op
/// layer.
pub(crate) fn run_product(
    op: &'static str,
    out: &Tensor,
    a: &Tensor,
    b: &Tensor,
    batch: &[usize],
    allow_gemm: bool,
) -> Result<()> {
    let dt = a.dtype();
    let (na, nb) = (a.ndim(), b.ndim());
    let (m, k, n) = (a.shape()[na - 2], a.shape()[na - 1], b.shape()[nb - 1]);
    if out.dtype() != dt || b.dtype() != dt || !out.is_contiguous() {
        return Err(Error::dtype(
            op,
            format!(
                "internal error: product of {} and {} into {}",
                dt,
                b.dtype(),
                out.dtype()
            ),
        ));
    }
    // `gemm` dereferences typed pointers: an operand in foreign memory that is not aligned
    // for its dtype is read from an aligned copy instead (rare; `Element::load` elsewhere
    // tolerates it).
    let a = if aligned(a) {
        a.clone()
    } else {
        a.contiguous_copy()?
    };
    let b = if aligned(b) {
        b.clone()
    } else {
        b.contiguous_copy()?
    };
    let expand = |t: &Tensor, r: usize, c: usize| {
        let target: Vec<i64> = batch.iter().chain(&[r, c]).map(|&x| x as i64).collect();
        t.layout().expand(&target)
    };
    let (la, lb) = (expand(&a, m, k)?, expand(&b, k, n)?);
    let nd = batch.len();
    let _g = borrow::acquire(
        op,
        &[
            (out.storage(), true),
            (a.storage(), false),
            (b.storage(), false),
        ],
    )?;
    let item = dt.itemsize();
    // Pointers are read under the borrows, so they stay valid until `_g` drops (S3).
    let side = |l: &crate::layout::Layout, base: *mut u8| Side {
        ptr: base.wrapping_add(l.offset().wrapping_mul(item)),
        batch_strides: l.strides()[..nd].iter().copied().collect(),
        rs: l.strides()[nd],
        cs: l.strides()[nd + 1],
    };
    let use_gemm = allow_gemm && aligned(&a) && aligned(&b) && aligned(out);
    // `a · b` where `b` is `a`'s transpose: the same elements (same storage and offset, row
    // and column strides swapped), so the product is symmetric.
    let symmetric = nd == 0
        && m == n
        && a.same_storage(&b)
        && la.offset() == lb.offset()
        && la.strides()[0] == lb.strides()[1]
        && la.strides()[1] == lb.strides()[0];
    let mut job = Job {
        m,
        n,
        k,
        batch,
        count: checked_numel(op, batch)?,
        a: side(&la, a.storage().data_ptr()),
        b: side(&lb, b.storage().data_ptr()),
        out: out.storage().data_ptr(),
        use_gemm,
        route: Route::Plain,
        level: Level::Portable,
    };
    let (forced, level) = match OVERRIDE.with(Cell::get) {
        Some((r, l)) => (Some(r), l.min(cpu::detected())),
        None => (None, cpu::level()),
    };
    job.level = level;
    job.route = choose(&job, dt, symmetric, allow_gemm, forced);
    LAST.with(|c| c.set(job.route));
    // `gemm` packs an operand whose columns are not contiguous on every call, and the
    // symmetric route makes one call per panel, so `a · aᵀ` with row-major `a` repacked
    // all of `a` about n/256 times (2048² f32: 189 ms, the full product 157). One
    // column-major copy of `a` (16 MiB there) gives the layout of `aᵀ · a`, whose large
    // operand `gemm` reads in place (107 ms, as `aᵀ · a`).
    let _packed = if job.route == Route::Symmetric && job.a.rs != 1 {
        let p = a.transpose(0, 1)?.contiguous_copy()?;
        let base = p.storage().data_ptr().wrapping_add(p.offset() * item);
        job.a = Side {
            ptr: base,
            batch_strides: DimVec::new(),
            rs: 1,
            cs: m as isize,
        };
        job.b = Side {
            ptr: base,
            batch_strides: DimVec::new(),
            rs: m as isize,
            cs: 1,
        };
        Some(p)
    } else {
        None
    };
    // SAFETY: `la`/`lb` are `a`/`b` broadcast to `[batch.., m, k]`/`[batch.., k, n]`, so
    // every element `[i.., r, c]` they describe is an element of `a`/`b` and lies inside
    // its storage (L4); `out` is a fresh contiguous `[batch.., m, n]`, and its
    // `count·m·n` elements are its whole storage. The storages are borrowed above
    // (shared for the inputs, exclusive for `out`, a storage nobody else has yet) for the
    // whole call (S3, S4), hold initialised bytes (S5), and `out` is writable (fresh CPU
    // memory, S1). `use_gemm` is only set when every base pointer is aligned for `T`.
    // With `_packed`, both sides read that fresh contiguous `k × m` copy of `a` (element
    // `[r, c]` of `a` at `c·m + r`), aligned and alive until this function returns.
    with_dtype!(dt, T => unsafe { T::run(&job) });
    Ok(())
}

/// One operand of a batched product: element `[i.., r, c]` is at
/// `ptr + (Σ i·batch_strides + r·rs + c·cs)·itemsize`.
struct Side {
    ptr: *mut u8,
    batch_strides: DimVec<isize>,
    rs: isize,
    cs: isize,
}

/// A batched product to run: `count` matrices `out[i] = a[i] · b[i]`, `out` contiguous.
struct Job<'a> {
    m: usize,
    n: usize,
    k: usize,
    batch: &'a [usize],
    count: usize,
    a: Side,
    b: Side,
    out: *mut u8,
    use_gemm: bool,
    /// The kernel that runs (chosen by [`choose`]).
    route: Route,
    /// The instruction-set level of the vector kernels (at most the CPU's).
    level: Level,
}

// SAFETY: the pointers address storages the op keeps alive and borrowed for the whole
// `run` call (S3, S4); workers only read the inputs and write disjoint output matrices or
// rows (`out` is fresh and contiguous, so distinct batch/row indices never share memory).
unsafe impl Sync for Job<'_> {}

impl Job<'_> {
    /// Typed pointers to matrix `i` (row-major over the batch shape) of `a`, `b`, `out`.
    fn at<T>(&self, i: usize) -> (*const T, *const T, *mut T) {
        let (mut oa, mut ob) = (0isize, 0isize);
        let mut rem = i;
        for d in (0..self.batch.len()).rev() {
            let idx = (rem % self.batch[d]) as isize;
            rem /= self.batch[d];
            oa += idx * self.a.batch_strides[d];
            ob += idx * self.b.batch_strides[d];
        }
        (
            (self.a.ptr as *const T).wrapping_offset(oa),
            (self.b.ptr as *const T).wrapping_offset(ob),
            (self.out as *mut T).wrapping_add(i * self.m * self.n),
        )
    }
}

/// Arithmetic for the plain kernels: integers wrap (as in PyTorch), half types round
/// after each operation, `bool` is and/or.
trait Arith: Element {
    /// `self · other`.
    fn mul(self, other: Self) -> Self;
    /// `self + other`.
    fn add(self, other: Self) -> Self;
}

macro_rules! arith_int {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)]
            fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            #[inline(always)]
            fn add(self, o: Self) -> Self { self.wrapping_add(o) }
        }
    )*};
}
arith_int!(u8, i8, i16, u16, i32, u32, i64, u64);

macro_rules! arith_float {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)]
            fn mul(self, o: Self) -> Self { self * o }
            #[inline(always)]
            fn add(self, o: Self) -> Self { self + o }
        }
    )*};
}
arith_float!(
    f32,
    f64,
    half::f16,
    half::bf16,
    crate::Complex32,
    crate::Complex64
);

impl Arith for bool {
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        self & o
    }
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        self | o
    }
}

/// Per-dtype choice of kernel: `gemm` for f32, f64 and f16, the plain kernel otherwise.
trait MatElem: Arith {
    /// Runs `job`.
    ///
    /// # Safety
    /// Every element `job` describes must be readable (inputs) or writable (`out`, not
    /// aliased by anything else) for the duration of the call, and `job.use_gemm` may only
    /// be set when the base pointers are aligned for `Self`.
    unsafe fn run(job: &Job<'_>) {
        // SAFETY: forwarded from the caller.
        unsafe { plain::<Self>(job) }
    }
}

macro_rules! mat_plain {
    ($($t:ty),*) => {$( impl MatElem for $t {} )*};
}
mat_plain!(bool, u8, i8, i16, u16, i32, u32, i64, u64, half::bf16);

macro_rules! mat_gemm {
    ($($t:ty),*) => {$(
        impl MatElem for $t {
            unsafe fn run(job: &Job<'_>) {
                // SAFETY: forwarded from the caller; `choose` picks a `gemm` route only
                // when `use_gemm` (aligned pointers) is set, and no vector route for
                // these types.
                unsafe {
                    match job.route {
                        Route::Gemm | Route::Symmetric => with_gemm::<$t>(job),
                        _ => plain::<$t>(job),
                    }
                }
            }
        }
    )*};
}
// Complex `a · aᵀ` (a transpose, not the conjugate one) is symmetric too, so the
// symmetric route serves it.
mat_gemm!(half::f16, crate::Complex32, crate::Complex64);

macro_rules! mat_fast {
    ($($t:ty),*) => {$(
        impl MatElem for $t {
            unsafe fn run(job: &Job<'_>) {
                // SAFETY: forwarded from the caller; `choose` picks every route but `Plain`
                // only when `use_gemm` (aligned pointers) is set.
                unsafe {
                    match job.route {
                        Route::Gemm | Route::Symmetric => with_gemm::<$t>(job),
                        Route::Small => small::<$t>(job),
                        Route::Vector => vector::<$t>(job),
                        Route::Plain | Route::Auto => plain::<$t>(job),
                    }
                }
            }
        }
    )*};
}
mat_fast!(f32, f64);

/// The scalars `gemm` multiplies.
trait GemmScalar: Copy + Send + Sync + 'static {
    const ZERO: Self;
    const ONE: Self;
}
impl GemmScalar for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
}
impl GemmScalar for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
}
impl GemmScalar for half::f16 {
    const ZERO: Self = half::f16::ZERO;
    const ONE: Self = half::f16::ONE;
}
impl GemmScalar for crate::Complex32 {
    const ZERO: Self = crate::Complex32::new(0.0, 0.0);
    const ONE: Self = crate::Complex32::new(1.0, 0.0);
}
impl GemmScalar for crate::Complex64 {
    const ZERO: Self = crate::Complex64::new(0.0, 0.0);
    const ONE: Self = crate::Complex64::new(1.0, 0.0);
}

/// Every matrix of `job` through `gemm`, with the operands' own strides.
///
/// # Safety
/// As for [`MatElem::run`], with aligned base pointers.
unsafe fn with_gemm<T: GemmScalar>(job: &Job<'_>) {
    let (m, n, k) = (job.m, job.n, job.k);
    let work = m.saturating_mul(n).saturating_mul(k);
    if job.route == Route::Symmetric {
        // SAFETY: forwarded; `choose` sets `Symmetric` only for an unbatched `a · aᵀ`.
        return unsafe { symmetric::<T>(job) };
    }
    // `o[.., ..cols] = a · b[.., ..cols]`, the output's row stride being `n`.
    let product = |a: *const T, b: *const T, o: *mut T, cols: usize, par: gemm::Parallelism| {
        // SAFETY: callers pass `a`/`b` pointing at element `[.., 0, 0]` of a matrix of
        // their operands (`b` possibly at a column `c0` with `c0 + cols ≤ n`), so every
        // element `r·rs + c·cs` (`r < m`, `c < k` for `a`; `r < k`, `c < cols` for `b`) is
        // an element of the operand, inside its borrowed storage (L4, S4); gemm reads
        // exactly those. `o` is that matrix's (or band's) first element in the contiguous
        // output (row stride n, column stride 1), written only by this call (S4:
        // exclusive borrow; distinct matrices and bands are disjoint). All pointers are
        // aligned for `T` (caller). `read_dst = false`: dst := 1·a·b.
        unsafe {
            gemm::gemm(
                m,
                cols,
                k,
                o,
                1,
                n as isize,
                false,
                a,
                job.a.cs,
                job.a.rs,
                b,
                job.b.cs,
                job.b.rs,
                T::ZERO,
                T::ONE,
                false,
                false,
                false,
                par,
            )
        }
    };
    let one = |i: usize, par: gemm::Parallelism| {
        let (a, b, o) = job.at::<T>(i);
        product(a, b, o, n, par)
    };
    let serial = || (0..job.count).for_each(|i| one(i, gemm::Parallelism::None));
    if work.saturating_mul(job.count) < PAR_WORK {
        return serial();
    }
    // gemm's `Parallelism::Rayon` uses the pool it is called in: `parallel`'s.
    super::pool::parallel(|threads| {
        if threads > 1
            && job.count == 1
            && m < BAND_MAX_M
            && n >= BAND_MIN_N * threads
            && work >= BAND_WORK
        {
            // One product with few rows: gemm keeps it on one thread (a single row block),
            // so its columns are split into one band per thread here.
            let (a, b, o) = job.at::<T>(0);
            let (a, b, o) = (Shared(a), Shared(b), Shared(o));
            let per = n.div_ceil(threads).next_multiple_of(16);
            (0..n.div_ceil(per)).into_par_iter().for_each(|band| {
                let c0 = band * per;
                // Columns `c0..c0 + cols` of `b` and of the output (`c0 + cols ≤ n`).
                product(
                    a.get(),
                    b.get().wrapping_offset(c0 as isize * job.b.cs),
                    o.get().wrapping_add(c0),
                    per.min(n - c0),
                    gemm::Parallelism::None,
                )
            });
        } else if threads > 1 && work >= PAR_WORK {
            // Big matrices: gemm splits each one across the pool.
            (0..job.count).for_each(|i| one(i, gemm::Parallelism::Rayon(threads)));
        } else if threads > 1 && job.count > 1 {
            // Many small matrices: one per task.
            (0..job.count)
                .into_par_iter()
                .with_min_len(PAR_WORK.div_ceil(work.max(1)))
                .for_each(|i| one(i, gemm::Parallelism::None));
        } else {
            serial();
        }
    })
}

/// Every matrix of `job` with a plain strided kernel (rows in parallel when large):
/// `out[r, :] = Σ_c a[r, c] · b[c, :]`, in i-k-j order so `b` and `out` stream by rows.
///
/// # Safety
/// As for [`MatElem::run`]; alignment is not needed.
unsafe fn plain<T: Arith>(job: &Job<'_>) {
    let (m, n, k) = (job.m, job.n, job.k);
    let (a_cs, b_rs, b_cs) = (job.a.cs, job.b.rs, job.b.cs);
    let row = |r: usize| {
        let (a, b, o) = job.at::<T>(r / m);
        let i = (r % m) as isize;
        let a_row = a.wrapping_offset(i * job.a.rs) as *const u8;
        let o_row = o.wrapping_offset(i * n as isize) as *mut u8;
        let (b, isz) = (b as *const u8, size_of::<T>() as isize);
        // SAFETY: `a_row + c·a_cs` (`c < k`) and `b + (c·b_rs + j·b_cs)` (`j < n`) are
        // elements of the inputs inside their borrowed storages (L4, S4); `o_row + j`
        // (`j < n`) is row `r` of the output, written by this task only (distinct rows are
        // disjoint; exclusive borrow). `load`/`store` tolerate unaligned pointers.
        unsafe {
            for c in 0..k as isize {
                let x = T::load(a_row.offset(c * a_cs * isz));
                let b_row = b.offset(c * b_rs * isz);
                if b_cs == 1 {
                    for j in 0..n as isize {
                        let p = o_row.offset(j * isz);
                        T::load(p)
                            .add(x.mul(T::load(b_row.offset(j * isz))))
                            .store(p);
                    }
                } else {
                    for j in 0..n as isize {
                        let p = o_row.offset(j * isz);
                        T::load(p)
                            .add(x.mul(T::load(b_row.offset(j * b_cs * isz))))
                            .store(p);
                    }
                }
            }
        }
    };
    let rows = job.count * m;
    let per_row = n.saturating_mul(k).max(1);
    if rows > 1 && rows.saturating_mul(per_row) >= 4 * GRAIN {
        super::pool::parallel(|threads| {
            if threads > 1 {
                (0..rows)
                    .into_par_iter()
                    .with_min_len(GRAIN.div_ceil(per_row))
                    .for_each(row);
            } else {
                (0..rows).for_each(row);
            }
        });
    } else {
        (0..rows).for_each(row);
    }
}

// ---------------------------------------------------------------------------------------
// Routes: which kernel runs a product
// ---------------------------------------------------------------------------------------

/// The kernel a product runs on (chosen per call from the shapes, layouts and dtype).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Let the op choose (only as a forced route: [`with_route`]).
    Auto,
    /// The plain strided loop (integers, unaligned foreign memory).
    Plain,
    /// One `gemm` call per matrix (the general path).
    Gemm,
    /// Batches of small float matrices: the direct kernel of [`small`].
    Small,
    /// `a · aᵀ` (and `aᵀ · a`): one triangle with `gemm`, mirrored ([`symmetric`]).
    Symmetric,
    /// Float matrix·vector and vector·matrix: dot or axpy loops ([`vector`]).
    Vector,
}

thread_local! {
    /// The route (and CPU level) [`with_route`] forces on this thread.
    static OVERRIDE: Cell<Option<(Route, Level)>> = const { Cell::new(None) };
    /// The route of this thread's last CPU product.
    static LAST: Cell<Route> = const { Cell::new(Route::Auto) };
}

/// Runs `f` with this thread's products forced onto `route` wherever that route can compute
/// them (whatever the size thresholds say; [`Route::Gemm`] where it cannot) and with their
/// vector kernels at `level` (capped at what the CPU has). A test hook: it lets the tests
/// compare every kernel with the general one at every CPU level.
#[doc(hidden)]
pub fn with_route<R>(route: Route, level: Level, f: impl FnOnce() -> R) -> R {
    let old = OVERRIDE.with(|c| c.replace(Some((route, level))));
    let r = f();
    OVERRIDE.with(|c| c.set(old));
    r
}

/// The route this thread's last CPU matrix product ran on (a test hook).
#[doc(hidden)]
pub fn last_route() -> Route {
    LAST.with(Cell::get)
}

/// Largest `n` and `k` of the small-matrix kernel (its row accumulator and packed `b`).
const SMALL_MAX: usize = 16;
/// Largest `m` the small-matrix kernel takes when not forced.
const SMALL_MAX_M: usize = 64;
/// Smallest `n` from which `a · aᵀ` is computed as a symmetric product when not forced.
const SYM_MIN: usize = 128;

/// The route of `job` (a non-empty product): `forced` when it can run it (and `Gemm` or
/// `Plain` otherwise), else the fastest that can.
fn choose(
    job: &Job<'_>,
    dt: DType,
    symmetric: bool,
    allow_gemm: bool,
    forced: Option<Route>,
) -> Route {
    let (m, n, k) = (job.m, job.n, job.k);
    let fast = job.use_gemm && matches!(dt, DType::F32 | DType::F64);
    let gemm_dt = job.use_gemm
        && matches!(
            dt,
            DType::F32 | DType::F64 | DType::F16 | DType::C64 | DType::C128
        );
    let general = if gemm_dt { Route::Gemm } else { Route::Plain };
    let small_ok = fast && n <= SMALL_MAX && k <= SMALL_MAX;
    let vector_ok = fast && job.count == 1 && vector_layout(job).is_some();
    let sym_ok = gemm_dt && symmetric && job.count == 1;
    match forced {
        Some(Route::Plain) => Route::Plain,
        Some(Route::Gemm) => general,
        Some(Route::Small) if small_ok => Route::Small,
        Some(Route::Vector) if vector_ok => Route::Vector,
        Some(Route::Symmetric) if sym_ok => Route::Symmetric,
        Some(Route::Small | Route::Vector | Route::Symmetric) => general,
        Some(Route::Auto) | None => {
            if !allow_gemm {
                Route::Plain
            } else if vector_ok && (m == 1 || n == 1) {
                Route::Vector
            } else if small_ok && m <= SMALL_MAX_M {
                Route::Small
            } else if sym_ok && n >= SYM_MIN {
                Route::Symmetric
            } else {
                general
            }
        }
    }
}

/// Runs `body(level_features_on, ..)`: `$f::<T>(args)` compiled for the CPU level, as the
/// elementwise loops do (`blocks1_on`): the same Rust code, three copies.
macro_rules! on_level {
    ($level:expr, $f:ident::<$t:ident>($($arg:ident: $ty:ty),*)) => {{
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "avx2,fma,f16c")]
            unsafe fn on_avx2<$t: Fast>($($arg: $ty),*) {
                // SAFETY: the caller's contract.
                unsafe { $f::<$t>($($arg),*) }
            }
            #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")]
            unsafe fn on_avx512<$t: Fast>($($arg: $ty),*) {
                // SAFETY: the caller's contract.
                unsafe { $f::<$t>($($arg),*) }
            }
            match $level {
                // SAFETY: the caller's contract; the level is at most the CPU's.
                Level::Avx512 => unsafe { on_avx512::<$t>($($arg),*) },
                // SAFETY: as above.
                Level::Avx2 => unsafe { on_avx2::<$t>($($arg),*) },
                // SAFETY: as above.
                Level::Portable => unsafe { $f::<$t>($($arg),*) },
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = $level;
            // SAFETY: the caller's contract.
            unsafe { $f::<$t>($($arg),*) }
        }
    }};
}

/// The floats of the vector kernels: plain `+` and `·` (no fused multiply-add, so every
/// CPU level rounds the same), except the small-matrix kernel's fused form
/// ([`small_mat`]).
trait Fast: GemmScalar + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self> {
    /// `self · b + c` rounded once (the CPU's fused multiply-add where it has one).
    fn fused(self, b: Self, c: Self) -> Self;
}
impl Fast for f32 {
    #[inline(always)]
    fn fused(self, b: f32, c: f32) -> f32 {
        self.mul_add(b, c)
    }
}
impl Fast for f64 {
    #[inline(always)]
    fn fused(self, b: f64, c: f64) -> f64 {
        self.mul_add(b, c)
    }
}

/// Splits `0..len` into chunks run by `f(lo, hi)`, across threads when `len · unit` is at
/// least [`PAR_WORK`].
fn split(len: usize, unit: usize, f: impl Fn(usize, usize) + Sync) {
    if len < 2 || len.saturating_mul(unit) < PAR_WORK {
        return f(0, len);
    }
    super::pool::parallel(|threads| {
        if threads < 2 {
            return f(0, len);
        }
        // Chunks of at least PAR_WORK / 4 work, a few per thread.
        let min = (PAR_WORK / 4).div_ceil(unit.max(1)).max(1);
        let chunks = (threads * 4).min(len.div_ceil(min)).max(1);
        let size = len.div_ceil(chunks);
        (0..chunks).into_par_iter().for_each(|c| {
            let lo = c * size;
            let hi = (lo + size).min(len);
            if lo < hi {
                f(lo, hi);
            }
        });
    })
}

// ---------------------------------------------------------------------------------------
// Batches of small matrices
// ---------------------------------------------------------------------------------------

/// Every matrix of `job` (`n`, `k` at most [`SMALL_MAX`]) with a direct kernel: per row, an
/// accumulator of `n` lanes (a compile-time size) updated with `a[r, c] · b[c, :]`; `b` is
/// packed into a contiguous tile first when its rows are not contiguous. Batches are split
/// across threads; within a chunk the batch index advances like an odometer.
///
/// # Safety
/// As for [`MatElem::run`], with aligned base pointers; `n, k <= SMALL_MAX`.
unsafe fn small<T: Fast>(job: &Job<'_>) {
    let work = (job.m * job.n * job.k).max(1);
    let level = job.level;
    split(job.count, work, |lo, hi| {
        // `on_level!`'s SAFETY: forwarded; `lo..hi` is a range of batch indices.
        on_level!(level, small_range_any::<T>(job: &Job<'_>, lo: usize, hi: usize))
    });
}

/// [`small_range`] for `job.n` as a compile-time size.
///
/// # Safety
/// As for [`small`]; `lo <= hi <= job.count`.
#[inline(always)]
unsafe fn small_range_any<T: Fast>(job: &Job<'_>, lo: usize, hi: usize) {
    macro_rules! by_n {
        ($($n:literal)*) => {
            match job.n {
                // SAFETY: forwarded.
                // The vector levels (which have FMA) fuse; the portable one may run on a
                // CPU without it, where `mul_add` is a slow library call.
                $($n => unsafe {
                    if job.level == Level::Portable {
                        small_range::<T, $n, false>(job, lo, hi)
                    } else {
                        small_range::<T, $n, true>(job, lo, hi)
                    }
                },)*
                _ => debug_assert!(false, "small kernel with n = {}", job.n),
            }
        };
    }
    by_n!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16);
}

/// Matrices `lo..hi` of `job`, whose `n` is `N`.
///
/// # Safety
/// As for [`small_range_any`].
#[inline(always)]
unsafe fn small_range<T: Fast, const N: usize, const FUSED: bool>(
    job: &Job<'_>,
    lo: usize,
    hi: usize,
) {
    let (m, k) = (job.m, job.k);
    let nd = job.batch.len();
    let mut idx: DimVec<usize> = DimVec::new();
    let mut rem = lo;
    for d in (0..nd).rev() {
        idx.insert(0, rem % job.batch[d]);
        rem /= job.batch[d];
    }
    let (mut pa, mut pb, mut po) = job.at::<T>(lo);
    let mut tile = [T::ZERO; SMALL_MAX * SMALL_MAX];
    for _ in lo..hi {
        // SAFETY: `pa`/`pb` point at element `[i.., 0, 0]` of matrix `i` of `a`/`b`, whose
        // elements `r·rs + c·cs` are inside the borrowed storages (L4, S4); `po` is matrix
        // `i` of the contiguous output (`m·N` elements, this task's only). `tile` holds
        // `k·N <= SMALL_MAX²` elements.
        unsafe {
            let (bp, brs) = if job.b.cs == 1 {
                (pb, job.b.rs)
            } else {
                for c in 0..k {
                    for j in 0..N {
                        tile[c * N + j] =
                            *pb.wrapping_offset(c as isize * job.b.rs + j as isize * job.b.cs);
                    }
                }
                (tile.as_ptr(), N as isize)
            };
            small_mat::<T, N, FUSED>(m, k, pa, job.a.rs, job.a.cs, bp, brs, po);
        }
        po = po.wrapping_add(m * N);
        // The next batch index: the last dim steps, carrying into the ones before it.
        let mut d = nd;
        while d > 0 {
            d -= 1;
            idx[d] += 1;
            pa = pa.wrapping_offset(job.a.batch_strides[d]);
            pb = pb.wrapping_offset(job.b.batch_strides[d]);
            if idx[d] < job.batch[d] {
                break;
            }
            let size = job.batch[d] as isize;
            pa = pa.wrapping_offset(job.a.batch_strides[d].wrapping_mul(size).wrapping_neg());
            pb = pb.wrapping_offset(job.b.batch_strides[d].wrapping_mul(size).wrapping_neg());
            idx[d] = 0;
        }
    }
}

/// One small product `o[m, N] = a[m, k] · b[k, N]`, `b` with contiguous rows: per row of
/// `o`, an accumulator of `N` lanes updated with `a[r, c] · b[c, :]` in order of `c`, with
/// a fused multiply-add when `FUSED` (so the vector levels agree with each other bit for
/// bit, and with the portable level to rounding).
///
/// # Safety
/// `a + r·ars + c·acs` (`r < m`, `c < k`) and `b + c·brs + j` (`j < N`) readable, `o`
/// writable for `m·N` elements, all aligned.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn small_mat<T: Fast, const N: usize, const FUSED: bool>(
    m: usize,
    k: usize,
    a: *const T,
    ars: isize,
    acs: isize,
    b: *const T,
    brs: isize,
    o: *mut T,
) {
    #[inline(always)]
    fn step<T: Fast, const FUSED: bool>(acc: T, x: T, b: T) -> T {
        if FUSED {
            x.fused(b, acc)
        } else {
            acc + x * b
        }
    }
    // From 8 columns on, rows go in groups of ROWS with one accumulator each: one row
    // alone is a chain of `k` dependent adds, and each row of `b` is then loaded once per
    // group (1000 products of 16×16 f32 at AVX-512: 166 -> 72 µs; f64: 285 -> 150).
    // Narrower rows fill few lanes, where the one-row form was as fast or faster.
    const ROWS: usize = 8;
    let mut r = 0;
    if N >= 8 {
        while r + ROWS <= m {
            let mut acc = [[T::ZERO; N]; ROWS];
            for c in 0..k {
                let mut brow = [T::ZERO; N];
                // SAFETY: the contract (`c < k`, `j < N`, `r + q < m`).
                unsafe {
                    let br = b.wrapping_offset(c as isize * brs);
                    for j in 0..N {
                        brow[j] = *br.add(j);
                    }
                    for q in 0..ROWS {
                        let x = *a.wrapping_offset((r + q) as isize * ars + c as isize * acs);
                        for j in 0..N {
                            acc[q][j] = step::<T, FUSED>(acc[q][j], x, brow[j]);
                        }
                    }
                }
            }
            for q in 0..ROWS {
                // SAFETY: the contract.
                unsafe { std::ptr::copy_nonoverlapping(acc[q].as_ptr(), o.add((r + q) * N), N) };
            }
            r += ROWS;
        }
    }
    for r in r..m {
        let mut acc = [T::ZERO; N];
        let ar = a.wrapping_offset(r as isize * ars);
        for c in 0..k {
            // SAFETY: the contract.
            unsafe {
                let x = *ar.wrapping_offset(c as isize * acs);
                let br = b.wrapping_offset(c as isize * brs);
                for j in 0..N {
                    acc[j] = step::<T, FUSED>(acc[j], x, *br.add(j));
                }
            }
        }
        // SAFETY: the contract.
        unsafe { std::ptr::copy_nonoverlapping(acc.as_ptr(), o.add(r * N), N) };
    }
}

// ---------------------------------------------------------------------------------------
// Matrix·vector
// ---------------------------------------------------------------------------------------

/// A matrix·vector product seen as `out[i] = Σ_c mat[i·si + c·sc] · x[c·xs]`, `i < len`,
/// `c < k`: for `a · v` (`n == 1`) the matrix is `a`, for `v · b` (`m == 1`) it is `bᵀ`.
#[derive(Clone, Copy)]
struct VecLayout {
    len: usize,
    mat: *const u8,
    si: isize,
    sc: isize,
    x: *const u8,
    xs: isize,
    out: *mut u8,
}

/// The [`VecLayout`] of `job` when it is a (non-batched) matrix·vector product whose
/// matrix has contiguous rows (`sc == 1`: dot products) or columns (`si == 1`: axpy).
fn vector_layout(job: &Job<'_>) -> Option<VecLayout> {
    let (m, n, k) = (job.m, job.n, job.k);
    let mut v = if n == 1 {
        VecLayout {
            len: m,
            mat: job.a.ptr,
            si: job.a.rs,
            sc: job.a.cs,
            x: job.b.ptr,
            xs: job.b.rs,
            out: job.out,
        }
    } else if m == 1 {
        VecLayout {
            len: n,
            mat: job.b.ptr,
            si: job.b.cs,
            sc: job.b.rs,
            x: job.a.ptr,
            xs: job.a.cs,
            out: job.out,
        }
    } else {
        return None;
    };
    // A stride of a size-1 dim is never used: normalise it.
    if v.len == 1 {
        v.si = 1;
    }
    if k == 1 {
        v.sc = 1;
        v.xs = 1;
    }
    (v.sc == 1 || v.si == 1).then_some(v)
}

/// A matrix·vector product with vectorised loops: dot products of 8 (then 4) rows at a
/// time with lanes of partial sums when the matrix rows are contiguous, else 4-column axpy updates of
/// the (zeroed) output; output ranges split across threads.
///
/// # Safety
/// As for [`MatElem::run`], with aligned base pointers; `vector_layout(job)` is `Some`.
unsafe fn vector<T: Fast>(job: &Job<'_>) {
    let Some(v) = vector_layout(job) else { return };
    let k = job.k;
    // The dot loops want a contiguous `x`: a strided one is gathered first (k elements).
    let packed: Vec<T>;
    let mut v = v;
    if v.sc == 1 && v.xs != 1 {
        // SAFETY: `x + c·xs` (`c < k`) are elements of the vector operand (L4, S4).
        packed = (0..k)
            .map(|c| unsafe { *(v.x as *const T).wrapping_offset(c as isize * v.xs) })
            .collect();
        v.x = packed.as_ptr() as *const u8;
        v.xs = 1;
    }
    let level = job.level;
    let v = SendVec(v);
    split(v.0.len, k.max(1), |lo, hi| {
        let v = &v;
        // `on_level!`'s SAFETY: forwarded; `lo..hi` is a range of output elements, this
        // chunk's only.
        on_level!(level, mv_range::<T>(v: &SendVec, k: usize, lo: usize, hi: usize))
    });
}

/// A [`VecLayout`] shared by the workers of one product.
struct SendVec(VecLayout);
// SAFETY: the pointers address storages (or a local buffer) that outlive the parallel
// call and are only read.
unsafe impl Sync for SendVec {}

/// Lanes of partial sums per row in the dot loops.
const LANES: usize = 16;
/// Bytes of output per block of the axpy loops (kept in L1 while the columns stream).
const AXPY_BLOCK_BYTES: usize = 16384;

/// Elements `lo..hi` of a matrix·vector product.
///
/// # Safety
/// As for [`vector`]; `lo <= hi <= len`, `out + lo..hi` written by this call only.
#[inline(always)]
unsafe fn mv_range<T: Fast>(v: &SendVec, k: usize, lo: usize, hi: usize) {
    let v = v.0;
    let out = v.out as *mut T;
    let mat = v.mat as *const T;
    let x = v.x as *const T;
    if v.sc == 1 && v.len == 1 {
        // One row in all (a 1-D `dot`, or `(1, k) @ v`): computed by this call whatever
        // the thread count, so its own association (see `dot_wide`).
        // SAFETY: row 0 has `k` contiguous elements, `x` has `k` (as below); `out` is
        // this chunk's (`lo..hi` is `0..1`).
        unsafe { *out = dot_wide(mat, x, k) };
        return;
    }
    if v.sc == 1 {
        let row = |i: usize| mat.wrapping_offset(i as isize * v.si);
        let mut i = lo;
        // SAFETY: rows `i < len` of the matrix have `k` contiguous elements inside the
        // borrowed storage, `x` has `k` contiguous elements (L4, S4, or the packed copy),
        // and `out + i` is this chunk's.
        unsafe {
            // Eight rows at a time (more streams in flight: measured faster than four
            // on 4096² f32 in a standalone harness), then four, then one.
            while i + 8 <= hi {
                let s = dot_rows::<T, 8>(std::array::from_fn(|j| row(i + j)), x, k);
                for (j, s) in s.into_iter().enumerate() {
                    *out.add(i + j) = s;
                }
                i += 8;
            }
            while i + 4 <= hi {
                let s = dot_rows::<T, 4>(std::array::from_fn(|j| row(i + j)), x, k);
                for (j, s) in s.into_iter().enumerate() {
                    *out.add(i + j) = s;
                }
                i += 4;
            }
            while i < hi {
                *out.add(i) = dot1(row(i), x, k);
                i += 1;
            }
        }
    } else {
        // Contiguous columns (si == 1): out[lo..hi] += x[c] · col_c[lo..hi], blocked, eight
        // columns a pass (4096² f32 in a standalone harness: 3.4 ms with four columns and
        // 8 KiB blocks, 2.4 with eight and 16 KiB).
        const COLS: usize = 8;
        let block = AXPY_BLOCK_BYTES / std::mem::size_of::<T>();
        let col = |c: usize| mat.wrapping_offset(c as isize * v.sc);
        let xv = |c: usize| x.wrapping_offset(c as isize * v.xs);
        let mut b0 = lo;
        while b0 < hi {
            let b1 = (b0 + block).min(hi);
            let o = out.wrapping_add(b0);
            let len = b1 - b0;
            let mut c = 0;
            // SAFETY: columns `c < k` have `len` contiguous elements from row `b0`, inside
            // the borrowed storage; `x + c·xs` are elements of the vector operand; `o`
            // holds `len` output elements of this chunk.
            unsafe {
                while c + COLS <= k {
                    let xs: [T; COLS] = std::array::from_fn(|q| *xv(c + q));
                    let ps: [*const T; COLS] = std::array::from_fn(|q| col(c + q).add(b0));
                    for i in 0..len {
                        let mut s = *o.add(i);
                        for q in 0..COLS {
                            s = s + xs[q] * *ps[q].add(i);
                        }
                        *o.add(i) = s;
                    }
                    c += COLS;
                }
                while c < k {
                    let (x0, p0) = (*xv(c), col(c).add(b0));
                    for i in 0..len {
                        *o.add(i) = *o.add(i) + x0 * *p0.add(i);
                    }
                    c += 1;
                }
            }
            b0 = b1;
        }
    }
}

/// Pairwise sum of a lane array.
#[inline(always)]
fn lane_sum<T: Fast>(mut acc: [T; LANES]) -> T {
    let mut w = LANES;
    while w > 1 {
        w /= 2;
        for l in 0..w {
            acc[l] = acc[l] + acc[l + w];
        }
    }
    acc[0]
}

/// Dot products of `R` rows with `x` (`k` contiguous elements each).
///
/// # Safety
/// Each pointer readable for `k` elements.
#[inline(always)]
unsafe fn dot_rows<T: Fast, const R: usize>(r: [*const T; R], x: *const T, k: usize) -> [T; R] {
    let mut acc = [[T::ZERO; LANES]; R];
    let mut c = 0;
    // SAFETY: the contract; `c + l < k`.
    unsafe {
        while c + LANES <= k {
            for p in r {
                read_ahead_by(p.add(c).cast(), LANES * size_of::<T>(), AHEAD_PER_STREAM);
            }
            for l in 0..LANES {
                let xv = *x.add(c + l);
                for (a, p) in acc.iter_mut().zip(r) {
                    a[l] = a[l] + *p.add(c + l) * xv;
                }
            }
            c += LANES;
        }
    }
    let mut s = acc.map(lane_sum);
    // SAFETY: as above.
    unsafe {
        while c < k {
            let xv = *x.add(c);
            for (s, p) in s.iter_mut().zip(r) {
                *s = *s + *p.add(c) * xv;
            }
            c += 1;
        }
    }
    s
}

/// The dot product of `r` and `x` (`k` contiguous elements each) for a product of one
/// row: four sets of [`LANES`] partial sums (one set is a chain of dependent adds, 2.1 ns
/// per 16 float32 with both streams in cache) and both streams read ahead; the sets
/// combined pairwise, then the lanes, then the tail. 4M float32 took 566–573 µs with
/// [`dot1`], 398–406 this way (NumPy 316–339; in a standalone harness 590 without the
/// read-ahead).
///
/// # Safety
/// Both pointers readable for `k` elements.
#[inline(always)]
unsafe fn dot_wide<T: Fast>(r: *const T, x: *const T, k: usize) -> T {
    const SETS: usize = 4;
    let mut acc = [[T::ZERO; LANES]; SETS];
    let step = SETS * LANES;
    let mut c = 0;
    // SAFETY: the contract; every index is below `k`.
    unsafe {
        while c + step <= k {
            read_ahead(r.add(c).cast(), step * size_of::<T>());
            read_ahead(x.add(c).cast(), step * size_of::<T>());
            // Whole arrays read, then folded: indexed element by element (`*r.add(c + j·16
            // + l)`) the loop stayed scalar, 4.4 ms per 4M float32 in a harness.
            let rv = r.add(c).cast::<[[T; LANES]; SETS]>().read_unaligned();
            let xv = x.add(c).cast::<[[T; LANES]; SETS]>().read_unaligned();
            for j in 0..SETS {
                for l in 0..LANES {
                    acc[j][l] = acc[j][l] + rv[j][l] * xv[j][l];
                }
            }
            c += step;
        }
        for l in 0..LANES {
            acc[0][l] = (acc[0][l] + acc[1][l]) + (acc[2][l] + acc[3][l]);
        }
        let mut s = lane_sum(acc[0]);
        while c < k {
            s = s + *r.add(c) * *x.add(c);
            c += 1;
        }
        s
    }
}

/// The dot product of one row with `x`.
///
/// # Safety
/// Both pointers readable for `k` elements.
#[inline(always)]
unsafe fn dot1<T: Fast>(r: *const T, x: *const T, k: usize) -> T {
    let mut acc = [T::ZERO; LANES];
    let mut c = 0;
    // SAFETY: the contract; `c + l < k`.
    unsafe {
        while c + LANES <= k {
            for l in 0..LANES {
                acc[l] = acc[l] + *r.add(c + l) * *x.add(c + l);
            }
            c += LANES;
        }
        let mut s = lane_sum(acc);
        while c < k {
            s = s + *r.add(c) * *x.add(c);
            c += 1;
        }
        s
    }
}

// ---------------------------------------------------------------------------------------
// Symmetric products
// ---------------------------------------------------------------------------------------

/// `a · aᵀ` (`b` is `a`'s transpose; `m == n`, one matrix): the upper triangle by row
/// panels, each one `gemm` call for the panel's rows from its diagonal on (about half the
/// work of the full product), then the lower triangle mirrored from it, so the result is
/// exactly symmetric.
///
/// # Safety
/// As for [`MatElem::run`], with aligned base pointers; `job` is an unbatched product
/// with `m == n` whose `b` is `a`'s transpose.
unsafe fn symmetric<T: GemmScalar>(job: &Job<'_>) {
    let (n, k) = (job.n, job.k);
    let panel = (n / 8).clamp(16, 128);
    let run = |par: gemm::Parallelism| {
        let (a, b, o) = job.at::<T>(0);
        let mut p0 = 0;
        while p0 < n {
            let rows = panel.min(n - p0);
            // SAFETY: rows `p0..p0+rows` of `a` and columns `p0..n` of `b` are elements of
            // the operands (L4, S4); the destination is the block `[p0.., p0..]` of the
            // contiguous `n × n` output (row stride n), written only here.
            unsafe {
                gemm::gemm(
                    rows,
                    n - p0,
                    k,
                    o.add(p0 * n + p0),
                    1,
                    n as isize,
                    false,
                    a.wrapping_offset(p0 as isize * job.a.rs),
                    job.a.cs,
                    job.a.rs,
                    b.wrapping_offset(p0 as isize * job.b.cs),
                    job.b.cs,
                    job.b.rs,
                    T::ZERO,
                    T::ONE,
                    false,
                    false,
                    false,
                    par,
                )
            };
            p0 += rows;
        }
    };
    let work = n.saturating_mul(n).saturating_mul(k) / 2;
    if work < PAR_WORK {
        run(gemm::Parallelism::None);
    } else {
        super::pool::parallel(|threads| {
            run(if threads > 1 {
                gemm::Parallelism::Rayon(threads)
            } else {
                gemm::Parallelism::None
            })
        });
    }
    // The lower triangle from the upper one, in 8×8 tiles written row by row (2048² f32
    // in a standalone harness: 2.1 ms; 64×64 tiles read by row and written by column, so
    // that each write went to another page: 6.9 ms).
    let o = job.out as *mut T;
    const TILE: usize = 8;
    for j0 in (0..n).step_by(TILE) {
        for i0 in (0..=j0).step_by(TILE) {
            for j in j0..(j0 + TILE).min(n) {
                for i in i0..(i0 + TILE).min(j) {
                    // SAFETY: `i < j < n`: both are elements of the `n × n` output.
                    unsafe { *o.add(j * n + i) = *o.add(i * n + j) };
                }
            }
        }
    }
}

/// A matrix product `f(a, b)` (matmul's semantics: 1-d operands as a row or a column,
/// batch dims broadcast) recorded for autograd: `∂a = g·bᵀ`, `∂b = aᵀ·g`, summed over
/// broadcast batch dims.
fn grad_product(
    a: &Tensor,
    b: &Tensor,
    name: &'static str,
    f: impl FnOnce(&Tensor, &Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    if (a.grad.get().is_none() && b.grad.get().is_none()) || !crate::autograd::needs_grad(&[a, b]) {
        return f(a, b);
    }
    let out = {
        let _off = crate::autograd::no_grad();
        f(a, b)?
    };
    let (sa, sb) = (a.shape().to_vec(), b.shape().to_vec());
    crate::autograd::record1(
        name,
        &[a, b],
        out,
        &[
            crate::autograd::Save::Input(a),
            crate::autograd::Save::Input(b),
        ],
        Box::new(move |saved, grads, needs| {
            let (a, b, g) = (&saved[0], &saved[1], &grads[0]);
            if sa.len() == 1 && sb.len() == 1 {
                let ga = if needs[0] { Some(b.mul(g)?) } else { None };
                let gb = if needs[1] { Some(a.mul(g)?) } else { None };
                return Ok(vec![ga, gb]);
            }
            let a1 = if sa.len() == 1 {
                a.unsqueeze(0)?
            } else {
                a.clone()
            };
            let b1 = if sb.len() == 1 {
                b.unsqueeze(1)?
            } else {
                b.clone()
            };
            let g1 = if sa.len() == 1 {
                g.unsqueeze(-2)?
            } else if sb.len() == 1 {
                g.unsqueeze(-1)?
            } else {
                g.clone()
            };
            let back = |x: Tensor, shape1: &[usize], shape: &[usize]| -> Result<Tensor> {
                let s = crate::autograd::sum_to(&x, shape1)?;
                let shape: Vec<i64> = shape.iter().map(|&n| n as i64).collect();
                s.reshape(&shape)
            };
            let ga = if needs[0] {
                Some(back(g1.matmul(&b1.mt()?)?, a1.shape(), &sa)?)
            } else {
                None
            };
            let gb = if needs[1] {
                Some(back(a1.mt()?.matmul(&g1)?, b1.shape(), &sb)?)
            } else {
                None
            };
            Ok(vec![ga, gb])
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_texts_follow_pytorch() {
        let z = |s: &[usize], dt| Tensor::zeros(s, dt).unwrap();
        let f = DType::F32;
        let e = z(&[2, 3], f).mm(&z(&[4, 5], f)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "mm: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"
        );
        let e = z(&[2, 2, 3], f).bmm(&z(&[2, 4, 5], f)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "bmm: Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4]."
        );
        let e = z(&[2, 2], f).dot(&z(&[2, 2], f)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "dot: 1D tensors expected, but got 2D and 2D tensors"
        );
        let e = z(&[2], f).matmul(&z(&[], f)).unwrap_err();
        assert!(e.to_string().contains("they are 1D and 0D"));
    }

    /// The plain kernel (used for unaligned foreign memory) agrees with `gemm` on strided
    /// float operands.
    #[test]
    fn plain_kernel_matches_gemm() -> Result<()> {
        for dt in [DType::F32, DType::F64, DType::F16] {
            let a = Tensor::rand(&[2, 9, 7], DType::F64, 1)?
                .to_dtype(dt)?
                .transpose(1, 2)?
                .flip(&[1])?;
            let b = Tensor::rand(&[18, 11], DType::F64, 2)?
                .to_dtype(dt)?
                .slice(0, None, None, -2)?;
            let g = product_with("t", &a, &b, &[2], true)?;
            let p = product_with("t", &a, &b, &[2], false)?;
            assert_eq!(g.shape(), &[2, 7, 11]);
            let g = g.to_dtype(DType::F64)?.to_vec::<f64>()?;
            let p = p.to_dtype(DType::F64)?.to_vec::<f64>()?;
            for (x, y) in g.iter().zip(&p) {
                assert!((x - y).abs() < 2e-2, "{dt}: {x} vs {y}");
            }
        }
        Ok(())
    }
}
