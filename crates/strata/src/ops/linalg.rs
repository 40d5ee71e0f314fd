//! Linear algebra, PyTorch's `torch.linalg` (`strata::linalg`): `cholesky`, `det`,
//! `slogdet`, `eigh`, `eigvalsh`, `inv`, `solve`, `qr`, `svd`, `svdvals` run one
//! factorisation per matrix through the backend's `linalg` loops (`kernel/linalg.rs` on
//! the CPU, over `faer`); `pinv`, `lstsq`, `matrix_rank`, `matrix_norm`, `vector_norm`,
//! `norm`, `vecdot`, and `Tensor::trace`/`Tensor::tensordot` are compositions of those
//! and of other ops.
//!
//! Every input is `(..., m, n)`: the leading dims are a batch (broadcast between the
//! operands of `solve`), read in place whatever the strides; results are fresh row-major
//! tensors. float32, float64, complex64 and complex128 (eigenvalues, singular values and
//! `log|det|` of a complex matrix are real), with PyTorch's errors for other dtypes, for
//! non-square or 1-d inputs, and PyTorch's `LinAlgError` texts ([`Error::LinAlg`]) for a
//! singular matrix, one that is not positive definite, or no convergence. Autograd: the
//! factorisations record PyTorch's backward formulas (`ops/linalg_grad.rs`), and the
//! compositions (`pinv`, `lstsq`, the norms, `trace`, `tensordot`, `vecdot`) record their
//! parts.

use super::linalg_grad as grad;
use crate::autograd::{needs_grad, no_grad};
use crate::backend::backend_of;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::broadcast::broadcast_shapes;
use crate::layout::wrap_dim;
use crate::tensor::Tensor;

/// What QR writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QOut {
    /// `R` only (`mode='r'`): `min(m, n) × n`.
    None,
    /// `Q` (`m × min(m, n)`) and `R` (`min(m, n) × n`).
    Reduced,
    /// `Q` (`m × m`) and `R` (`m × n`).
    Complete,
}

/// Which singular vectors the SVD writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SvdOut {
    /// Singular values only.
    None,
    /// `U` (`m × k`) and `Vh` (`k × n`), `k = min(m, n)`.
    Thin,
    /// `U` (`m × m`) and `Vh` (`n × n`).
    Full,
}

/// One factorisation per matrix, the backend's `linalg` family. Outputs are fresh
/// row-major tensors with the batch shape in front:
///
/// - `Cholesky`: `[L]`, `n × n` (`upper`: `U = Lᴴ`, from A's upper triangle);
/// - `Inv`: `[A⁻¹]`; `Det`: `[det]` (one value per matrix); `Slogdet`: `[sign, log|det|]`;
/// - `Solve`: `[X]`, `n × k`, from inputs `A` (`n × n`) and `B` (`n × k`);
/// - `Qr`: `[Q, R]` or `[R]`; `Eigh`: `[w]` or `[w, V]` (ascending eigenvalues, from the
///   lower triangle, or the upper one with `upper`); `Svd`: `[S]` or `[U, S, Vh]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Job {
    Cholesky { upper: bool },
    Inv,
    Det,
    Slogdet,
    Solve,
    Qr { q: QOut },
    Eigh { vectors: bool, upper: bool },
    Svd { vectors: SvdOut },
}

/// A factorisation that could not be completed: the first batch element (row-major) and
/// LAPACK's 1-based `info` (the zero pivot, the order of the leading minor that is not
/// positive definite).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Failure {
    pub batch: usize,
    pub info: usize,
}

/// The order of a matrix or vector norm (`ord=` of `linalg.norm`/`matrix_norm`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NormOrd {
    /// A number: `p` for vector norms; `±1`, `±2`, `±inf` for matrix norms.
    P(f64),
    /// `'fro'`: the Frobenius norm (the 2-norm of the elements).
    Fro,
    /// `'nuc'`: the nuclear norm (the sum of the singular values).
    Nuc,
}

/// `(solution, residuals, rank, singular_values)` of [`lstsq`].
#[derive(Clone, Debug)]
pub struct Lstsq {
    /// `X` minimising `‖AX − B‖`: `(..., n, k)` (`(..., n)` for a vector `B`).
    pub solution: Tensor,
    /// The squared residuals `‖AX − B‖²` per column, `(..., k)`, when `m > n`, every
    /// matrix has full rank and the driver is not `gelsy`; else empty.
    pub residuals: Tensor,
    /// The effective rank of each matrix (int64), except for driver `gels` (empty).
    pub rank: Tensor,
    /// The singular values, `(..., min(m, n))`, for drivers `gelsd` and `gelss`; else
    /// empty.
    pub singular_values: Tensor,
}

/// float32, float64, complex64 and complex128, with PyTorch's texts for the others.
fn check_float(op: &'static str, t: &Tensor) -> Result<()> {
    match t.dtype() {
        DType::F32 | DType::F64 | DType::C64 | DType::C128 => Ok(()),
        DType::F16 | DType::BF16 => Err(Error::dtype(
            op,
            format!(
                "Low precision dtypes not supported. Got {}",
                t.dtype().legacy_name()
            ),
        )),
        other => Err(Error::dtype(
            op,
            format!(
                "Expected a floating point or complex tensor as input. Got {}",
                other.legacy_name()
            ),
        )),
    }
}

/// A floating-point or complex tensor (any float dtype), for the norms.
fn check_any_float(op: &'static str, t: &Tensor) -> Result<()> {
    if t.dtype().is_float() || t.is_complex() {
        return Ok(());
    }
    Err(Error::dtype(
        op,
        format!(
            "Expected a floating point or complex tensor as input. Got {}",
            t.dtype().legacy_name()
        ),
    ))
}

/// At least 2 dims.
fn check_matrix(op: &'static str, t: &Tensor) -> Result<()> {
    if t.ndim() < 2 {
        return Err(Error::shape(
            op,
            "The input tensor A must have at least 2 dimensions.",
        ));
    }
    Ok(())
}

/// Square matrices.
fn check_square(op: &'static str, t: &Tensor) -> Result<usize> {
    let nd = t.ndim();
    let (m, n) = (t.shape()[nd - 2], t.shape()[nd - 1]);
    if m != n {
        return Err(Error::shape(
            op,
            format!("A must be batches of square matrices, but they are {m} by {n} matrices"),
        ));
    }
    Ok(n)
}

/// The checks every factorised op makes first: a float32/float64/complex CPU tensor of at
/// least two dims. (Each op records its backward, `ops/linalg_grad.rs`, or refuses one.)
fn prep(op: &'static str, a: &Tensor) -> Result<()> {
    check_matrix(op, a)?;
    check_float(op, a)?;
    if !a.device().is_cpu() {
        return Err(Error::unsupported_on(op, a.device()));
    }
    Ok(())
}

/// The batch shape of `a` (all but the last two dims) followed by `tail`.
fn with_batch(batch: &[usize], tail: &[usize]) -> Vec<usize> {
    let mut s = batch.to_vec();
    s.extend_from_slice(tail);
    s
}

/// The batch dims of `a`.
fn batch_of(a: &Tensor) -> &[usize] {
    &a.shape()[..a.ndim() - 2]
}

/// A fresh output of `shape`, written whole by the kernel.
fn fresh(op: &'static str, shape: &[usize], dtype: DType) -> Result<Tensor> {
    Tensor::alloc_uninit_on(op, shape, dtype, crate::storage::Device::Cpu)
}

/// `r × c` identities stacked to `batch`.
fn eyes(batch: &[usize], r: usize, c: usize, dtype: DType) -> Result<Tensor> {
    let shape: Vec<i64> = with_batch(batch, &[r, c])
        .iter()
        .map(|&s| s as i64)
        .collect();
    Tensor::eye(r, c, dtype)?.expand(&shape)?.contiguous()
}

/// Runs `job` through the backend when there is a matrix with elements, and turns a
/// failure into PyTorch's error (`batched`: the input had batch dims).
fn run(op: &'static str, job: Job, outs: &[&Tensor], ins: &[&Tensor], batched: bool) -> Result<()> {
    if ins.iter().any(|t| t.numel() == 0) {
        return Ok(());
    }
    // backend seam
    let failed = backend_of(op, ins)?.linalg(op, job, outs, ins)?;
    let Some(f) = failed else {
        return Ok(());
    };
    let at = if batched {
        format!("(Batch element {}): ", f.batch)
    } else {
        String::new()
    };
    let (op, what) = match job {
        Job::Inv => (
            op,
            format!(
                "The diagonal element {} is zero, the inversion could not be completed because the input matrix is singular.",
                f.info
            ),
        ),
        Job::Solve => (
            "torch.linalg.solve",
            "The solver failed because the input matrix is singular.".to_string(),
        ),
        Job::Cholesky { .. } => (
            op,
            format!(
                "The factorization could not be completed because the input is not positive-definite (the leading minor of order {} is not positive-definite).",
                f.info
            ),
        ),
        Job::Eigh { .. } => (
            op,
            format!(
                "The algorithm failed to converge because the input matrix is ill-conditioned or has too many repeated eigenvalues (error code: {}).",
                f.info
            ),
        ),
        Job::Svd { .. } => (
            op,
            format!(
                "The algorithm failed to converge because the input matrix is ill-conditioned or has too many repeated singular values (error code: {}).",
                f.info
            ),
        ),
        Job::Det | Job::Slogdet | Job::Qr { .. } => (
            op,
            format!("the factorization failed (code {})", f.info),
        ),
    };
    Err(Error::LinAlg {
        op,
        msg: format!("{at}{what}"),
    })
}

/// The machine epsilon of a float dtype (of the parts of a complex one).
fn eps(dtype: DType) -> f64 {
    match dtype.to_real() {
        DType::F32 => f64::from(f32::EPSILON),
        DType::F16 => 0.0009765625,
        DType::BF16 => 0.0078125,
        _ => f64::EPSILON,
    }
}

/// The Cholesky factor `L` (lower triangular, `A = L·Lᴴ`) of each symmetric (complex:
/// Hermitian) positive definite matrix, read from its lower triangle; with `upper`,
/// `U = Lᴴ` (`A = Uᴴ·U`)
/// from its upper triangle (PyTorch's `linalg.cholesky`).
///
/// ```
/// let a = strata::Tensor::from_vec(vec![4.0f64, 2.0, 2.0, 5.0], &[2, 2])?;
/// let l = strata::linalg::cholesky(&a, false)?;
/// assert_eq!(l.to_vec::<f64>()?, vec![2.0, 0.0, 1.0, 2.0]);
/// # Ok::<(), strata::Error>(())
/// ```
///
/// # Errors
/// Fewer than 2 dims, non-square matrices, a dtype other than float32/float64, a matrix
/// that is not positive definite ([`Error::LinAlg`]).
pub fn cholesky(a: &Tensor, upper: bool) -> Result<Tensor> {
    const OP: &str = "linalg.cholesky";
    prep(OP, a)?;
    check_square(OP, a)?;
    let out = fresh(OP, a.shape(), a.dtype())?;
    run(OP, Job::Cholesky { upper }, &[&out], &[a], a.ndim() > 2)?;
    grad::cholesky(a, out, upper)
}

/// The inverse of each square matrix (PyTorch's `linalg.inv`), through LU with partial
/// pivoting.
///
/// # Errors
/// As [`cholesky`]; a singular matrix (an exact zero pivot) is [`Error::LinAlg`] with
/// PyTorch's text naming the diagonal element.
pub fn inv(a: &Tensor) -> Result<Tensor> {
    const OP: &str = "linalg.inv";
    prep(OP, a)?;
    check_square(OP, a)?;
    let out = fresh(OP, a.shape(), a.dtype())?;
    run(OP, Job::Inv, &[&out], &[a], a.ndim() > 2)?;
    grad::inv(a, out)
}

/// The determinant of each square matrix, shape `(...)` (PyTorch's `linalg.det`); 1 for
/// a `0 × 0` matrix.
///
/// # Errors
/// As [`inv`], except that singular matrices have determinant 0.
pub fn det(a: &Tensor) -> Result<Tensor> {
    const OP: &str = "linalg.det";
    prep(OP, a)?;
    check_square(OP, a)?;
    if a.shape()[a.ndim() - 1] == 0 {
        return grad::det(a, Tensor::full(batch_of(a), 1.0, a.dtype())?);
    }
    let out = fresh(OP, batch_of(a), a.dtype())?;
    run(OP, Job::Det, &[&out], &[a], a.ndim() > 2)?;
    grad::det(a, out)
}

/// `(sign, logabsdet)` of each square matrix's determinant (PyTorch's `linalg.slogdet`):
/// `det = sign·exp(logabsdet)`; a singular matrix gives `(0, -inf)`. For a complex
/// matrix `sign` is complex of modulus 1 and `logabsdet` real.
///
/// # Errors
/// As [`det`].
pub fn slogdet(a: &Tensor) -> Result<(Tensor, Tensor)> {
    const OP: &str = "linalg.slogdet";
    prep(OP, a)?;
    check_square(OP, a)?;
    let real = a.dtype().to_real();
    if a.shape()[a.ndim() - 1] == 0 {
        return grad::slogdet(
            a,
            Tensor::full(batch_of(a), 1.0, a.dtype())?,
            Tensor::zeros(batch_of(a), real)?,
        );
    }
    let sign = fresh(OP, batch_of(a), a.dtype())?;
    let logabs = fresh(OP, batch_of(a), real)?;
    run(OP, Job::Slogdet, &[&sign, &logabs], &[a], a.ndim() > 2)?;
    grad::slogdet(a, sign, logabs)
}

/// `upper` for PyTorch's `UPLO` argument.
fn uplo(uplo: &str) -> Result<bool> {
    match uplo {
        "L" | "l" => Ok(false),
        "U" | "u" => Ok(true),
        other => Err(Error::value(
            "linalg.eigh",
            format!("Expected UPLO argument to be 'L' or 'U', but got {other}"),
        )),
    }
}

fn eigh_impl(op: &'static str, a: &Tensor, uplo_: &str, vectors: bool) -> Result<Vec<Tensor>> {
    prep(op, a)?;
    let n = check_square(op, a)?;
    let upper = uplo(uplo_)?;
    if needs_grad(&[a]) && !vectors {
        // eigvalsh: the backward needs the eigenvectors.
        let mut o = eigh_impl(op, &a.detach(), uplo_, true)?;
        let v = o.pop().expect("eigenvectors");
        return grad::eigh(a, o.pop().expect("eigenvalues"), v, false);
    }
    let batch = batch_of(a);
    let w = fresh(op, &with_batch(batch, &[n]), a.dtype().to_real())?;
    let mut outs = vec![w];
    if vectors {
        outs.push(fresh(op, a.shape(), a.dtype())?);
    }
    let refs: Vec<&Tensor> = outs.iter().collect();
    run(op, Job::Eigh { vectors, upper }, &refs, &[a], a.ndim() > 2)?;
    if !vectors {
        return Ok(outs);
    }
    let v = outs.pop().expect("eigenvectors");
    grad::eigh(a, outs.pop().expect("eigenvalues"), v, true)
}

/// `(eigenvalues, eigenvectors)` of each symmetric (complex: Hermitian) matrix, read from
/// its lower triangle (`uplo = "L"`) or upper one (`"U"`): eigenvalues real and ascending,
/// `(..., n)`; eigenvectors the columns of an orthogonal (unitary) `(..., n, n)`
/// (PyTorch's `linalg.eigh`).
///
/// # Errors
/// As [`cholesky`] (but any symmetric matrix has a decomposition); a bad `uplo`.
pub fn eigh(a: &Tensor, uplo: &str) -> Result<(Tensor, Tensor)> {
    let mut o = eigh_impl("linalg.eigh", a, uplo, true)?;
    let v = o.pop().expect("eigenvectors");
    Ok((o.pop().expect("eigenvalues"), v))
}

/// The eigenvalues of each symmetric matrix, ascending (PyTorch's `linalg.eigvalsh`).
///
/// # Errors
/// As [`eigh`].
pub fn eigvalsh(a: &Tensor, uplo: &str) -> Result<Tensor> {
    Ok(eigh_impl("linalg.eigvalsh", a, uplo, false)?.remove(0))
}

/// `(Q, R)` of each `m × n` matrix (PyTorch's `linalg.qr`): `mode` `"reduced"` (`Q`
/// `m × k`, `R` `k × n`, `k = min(m, n)`), `"complete"` (`Q` `m × m`, `R` `m × n`) or `"r"`
/// (`R` only; `Q` is an empty tensor). `Q` has orthonormal columns, `R` is upper
/// triangular, `A = Q·R`.
///
/// # Errors
/// Fewer than 2 dims, a dtype other than float32/float64, a bad `mode`.
pub fn qr(a: &Tensor, mode: &str) -> Result<(Tensor, Tensor)> {
    const OP: &str = "linalg.qr";
    prep(OP, a)?;
    let q = match mode {
        "reduced" => QOut::Reduced,
        "complete" => QOut::Complete,
        "r" => QOut::None,
        other => {
            return Err(Error::value(
                OP,
                format!("qr received unrecognized mode '{other}' but expected one of 'reduced' (default), 'r', or 'complete'"),
            ))
        }
    };
    let nd = a.ndim();
    let (m, n) = (a.shape()[nd - 2], a.shape()[nd - 1]);
    let k = m.min(n);
    let batch = batch_of(a);
    if needs_grad(&[a]) {
        if q == QOut::None {
            return Err(Error::autograd(
                "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.",
            ));
        }
        if q == QOut::Complete && m > n {
            return Err(Error::autograd(
                "The QR decomposition is not differentiable when mode='complete' and nrows > ncols.",
            ));
        }
        let (qt, r) = qr(&a.detach(), "reduced")?;
        return grad::qr(a, qt, r);
    }
    let (qc, rr) = if q == QOut::Complete { (m, m) } else { (k, k) };
    if k == 0 {
        let r = Tensor::zeros(&with_batch(batch, &[rr, n]), a.dtype())?;
        let qt = if q == QOut::None {
            Tensor::zeros(&[0], a.dtype())?
        } else {
            eyes(batch, m, qc, a.dtype())?
        };
        return Ok((qt, r));
    }
    let r = fresh(OP, &with_batch(batch, &[rr, n]), a.dtype())?;
    if q == QOut::None {
        run(OP, Job::Qr { q }, &[&r], &[a], nd > 2)?;
        real_diagonal(None, &r, m, n)?;
        return Ok((Tensor::zeros(&[0], a.dtype())?, r));
    }
    let qt = fresh(OP, &with_batch(batch, &[m, qc]), a.dtype())?;
    run(OP, Job::Qr { q }, &[&qt, &r], &[a], nd > 2)?;
    real_diagonal(Some(&qt), &r, m, n)?;
    Ok((qt, r))
}

/// A complex QR with `R`'s diagonal real, as LAPACK (NumPy, PyTorch) gives it and as the
/// backward formula (`ops/linalg_grad.rs`) assumes: faer's reflectors keep each diagonal
/// element's phase, so row `k` of `R` is turned onto the real axis by
/// `d_k = ±conj(r_kk)/|r_kk|` (keeping the sign of its real part, so the turn is at most a
/// quarter) and column `k` of `Q` by `conj(d_k)`; the product is unchanged. The signs of
/// the diagonal, as those of a real QR, may differ from LAPACK's (each column of `Q` is
/// unique up to its sign then), since they depend on the reflectors' bases.
fn real_diagonal(q: Option<&Tensor>, r: &Tensor, m: usize, n: usize) -> Result<()> {
    let k = m.min(n);
    if !r.is_complex() || k == 0 {
        return Ok(());
    }
    let _off = no_grad();
    let d = r.diagonal(0, -2, -1)?;
    let sign = Tensor::where_cond(&d.real()?.lt(0.0)?, -1.0, 1.0)?.to_dtype(d.dtype().to_real())?;
    let size = d.abs()?;
    let turn = sign.mul(&d.conj()?)?.div(&size)?;
    let turn = Tensor::where_cond(&size.eq(0.0)?, 1.0, &turn)?;
    r.narrow(-2, 0, k as i64)?.mul_(&turn.unsqueeze(-1)?)?;
    // Exactly real (the product leaves an ulp or so of imaginary part).
    r.diagonal(0, -2, -1)?.imag()?.fill_(0.0)?;
    if let Some(q) = q {
        q.narrow(-1, 0, k as i64)?
            .mul_(&turn.conj()?.unsqueeze(-2)?)?;
    }
    Ok(())
}

fn svd_impl(op: &'static str, a: &Tensor, vectors: SvdOut) -> Result<Vec<Tensor>> {
    prep(op, a)?;
    let nd = a.ndim();
    let (m, n) = (a.shape()[nd - 2], a.shape()[nd - 1]);
    let k = m.min(n);
    let batch = batch_of(a);
    let (uc, vr) = if vectors == SvdOut::Full {
        (m, n)
    } else {
        (k, k)
    };
    let real = a.dtype().to_real();
    if needs_grad(&[a]) {
        if vectors == SvdOut::Full && m != n {
            return Err(Error::autograd(format!(
                "{op}: the derivative with full_matrices=True of a non-square matrix is not defined (the extra singular vectors are arbitrary); use full_matrices=False"
            )));
        }
        // The backward needs the singular vectors, also for svdvals.
        let mut o = svd_impl(op, &a.detach(), SvdOut::Thin)?;
        let vh = o.pop().expect("Vh");
        let s = o.pop().expect("S");
        let u = o.pop().expect("U");
        return grad::svd(a, u, s, vh, vectors != SvdOut::None);
    }
    if k == 0 {
        let s = Tensor::zeros(&with_batch(batch, &[0]), real)?;
        if vectors == SvdOut::None {
            return Ok(vec![s]);
        }
        return Ok(vec![
            eyes(batch, m, uc, a.dtype())?,
            s,
            eyes(batch, vr, n, a.dtype())?,
        ]);
    }
    let s = fresh(op, &with_batch(batch, &[k]), real)?;
    if vectors == SvdOut::None {
        run(op, Job::Svd { vectors }, &[&s], &[a], nd > 2)?;
        return Ok(vec![s]);
    }
    let u = fresh(op, &with_batch(batch, &[m, uc]), a.dtype())?;
    let vh = fresh(op, &with_batch(batch, &[vr, n]), a.dtype())?;
    run(op, Job::Svd { vectors }, &[&u, &s, &vh], &[a], nd > 2)?;
    Ok(vec![u, s, vh])
}

/// `(U, S, Vh)` of each `m × n` matrix, `A = U·diag(S)·Vh` (PyTorch's `linalg.svd`):
/// singular values real and descending, `(..., k)`; with `full_matrices` `U` is `m × m` and `Vh`
/// `n × n`, else `m × k` and `k × n` (`k = min(m, n)`).
///
/// # Errors
/// Fewer than 2 dims, a dtype other than float32/float64; no convergence (non-finite
/// input) is [`Error::LinAlg`].
pub fn svd(a: &Tensor, full_matrices: bool) -> Result<(Tensor, Tensor, Tensor)> {
    let v = if full_matrices {
        SvdOut::Full
    } else {
        SvdOut::Thin
    };
    let mut o = svd_impl("linalg.svd", a, v)?;
    let vh = o.pop().expect("Vh");
    let s = o.pop().expect("S");
    Ok((o.pop().expect("U"), s, vh))
}

/// The singular values of each matrix, descending (PyTorch's `linalg.svdvals`).
///
/// # Errors
/// As [`svd`].
pub fn svdvals(a: &Tensor) -> Result<Tensor> {
    Ok(svd_impl("linalg.svdvals", a, SvdOut::None)?.remove(0))
}

/// PyTorch's rule for solve's right-hand side: a vector when `b` is 1-d, or when it has
/// one dim less than `a` and `a`'s shape without its last dim.
fn is_vector_rhs(a: &Tensor, b: &Tensor) -> bool {
    let nd = a.ndim();
    b.ndim() == 1 || (b.ndim() + 1 == nd && b.shape() == &a.shape()[..nd - 1])
}

/// `X` with `A·X = B` for each square `A` (PyTorch's `linalg.solve`); with `left = false`,
/// `X·A = B`. `B` is `(..., n, k)`, or `(..., n)` for a vector right-hand side (PyTorch's
/// rule); the batch dims of `A` and `B` broadcast.
///
/// # Errors
/// As [`inv`]; `A` and `B` of different dtypes, shapes that do not fit or whose batch
/// dims do not broadcast.
pub fn solve(a: &Tensor, b: &Tensor, left: bool) -> Result<Tensor> {
    const OP: &str = "linalg.solve";
    check_matrix(OP, a)?;
    if a.dtype() != b.dtype() {
        return Err(Error::dtype(
            OP,
            format!(
                "Expected A and B to have the same dtype, but found A of type {} and B of type {} instead",
                a.dtype().legacy_name(),
                b.dtype().legacy_name()
            ),
        ));
    }
    prep(OP, a)?;
    let n = check_square(OP, a)?;
    if !left {
        if b.ndim() < 2 {
            return Err(Error::shape(
                OP,
                "The input tensor B must have at least 2 dimensions when left=False.",
            ));
        }
        return solve(&a.mt()?, &b.mt()?, true)?.mt()?.contiguous();
    }
    let vector = is_vector_rhs(a, b);
    let b2 = if vector { b.unsqueeze(-1)? } else { b.clone() };
    let bnd = b2.ndim();
    if bnd < 2 || b2.shape()[bnd - 2] != n {
        let (r, c) = if bnd < 2 {
            (b2.shape().first().copied().unwrap_or(0), 1)
        } else {
            (b2.shape()[bnd - 2], b2.shape()[bnd - 1])
        };
        return Err(Error::shape(
            OP,
            format!("Incompatible shapes of A and B for the equation AX = B ({n}x{n} and {r}x{c})"),
        ));
    }
    let k = b2.shape()[bnd - 1];
    let batch = broadcast_shapes(OP, batch_of(a), batch_of(&b2))?;
    let to = |t: &Tensor, r: usize, c: usize| -> Result<Tensor> {
        let s: Vec<i64> = with_batch(&batch, &[r, c])
            .iter()
            .map(|&x| x as i64)
            .collect();
        t.expand(&s)
    };
    let (ae, be) = (to(&a.detach(), n, n)?, to(&b2.detach(), n, k)?);
    let out = fresh(OP, &with_batch(&batch, &[n, k]), a.dtype())?;
    run(OP, Job::Solve, &[&out], &[&ae, &be], !batch.is_empty())?;
    let out = grad::solve(a, &b2, out)?;
    if vector {
        out.squeeze_dims(&[-1])
    } else {
        Ok(out)
    }
}

/// The tolerance `max(atol, rtol·σ_max)` of `pinv` and `matrix_rank` for singular values
/// `s` (`(..., k)`, `k > 0`), kept as `(..., 1)`; PyTorch's defaults: `rtol = eps·max(m, n)`
/// unless `atol > 0` is given, then 0.
fn tolerance(
    s: &Tensor,
    m: usize,
    n: usize,
    atol: Option<f64>,
    rtol: Option<f64>,
) -> Result<Tensor> {
    let atol_v = atol.unwrap_or(0.0);
    let rtol_v = rtol.unwrap_or(if atol_v > 0.0 {
        0.0
    } else {
        eps(s.dtype()) * m.max(n) as f64
    });
    s.amax(&[-1], true)?
        .mul(rtol_v)?
        .clamp(Some(atol_v.into()), None)
}

/// The pseudo-inverse of each `m × n` matrix, `(..., n, m)` (PyTorch's `linalg.pinv`):
/// through the SVD (or, with `hermitian`, the symmetric eigendecomposition), singular
/// values at or below `max(atol, rtol·σ_max)` treated as zero.
///
/// # Errors
/// As [`svd`].
pub fn pinv(a: &Tensor, atol: Option<f64>, rtol: Option<f64>, hermitian: bool) -> Result<Tensor> {
    const OP: &str = "linalg.pinv";
    prep(OP, a)?;
    let nd = a.ndim();
    let (m, n) = (a.shape()[nd - 2], a.shape()[nd - 1]);
    if m.min(n) == 0 {
        return Tensor::zeros(&with_batch(batch_of(a), &[n, m]), a.dtype());
    }
    if hermitian {
        check_square(OP, a)?;
        let (w, v) = eigh(a, "L")?;
        let tol = tolerance(&w.abs()?, m, n, atol, rtol)?;
        let keep = w.abs()?.gt(&tol)?;
        let winv = Tensor::where_cond(&keep, &w.reciprocal()?, 0.0)?;
        return v.mul(&winv.unsqueeze(-2)?)?.matmul(&v.mh()?);
    }
    let (u, s, vh) = svd(a, false)?;
    let tol = tolerance(&s, m, n, atol, rtol)?;
    let sinv = Tensor::where_cond(&s.gt(&tol)?, &s.reciprocal()?, 0.0)?;
    vh.mh()?.mul(&sinv.unsqueeze(-2)?)?.matmul(&u.mh()?)
}

/// The rank of each matrix: how many singular values (absolute eigenvalues with
/// `hermitian`) exceed `max(atol, rtol·σ_max)`, int64 (PyTorch's `linalg.matrix_rank`).
///
/// # Errors
/// As [`svd`].
pub fn matrix_rank(
    a: &Tensor,
    atol: Option<f64>,
    rtol: Option<f64>,
    hermitian: bool,
) -> Result<Tensor> {
    const OP: &str = "linalg.matrix_rank";
    check_matrix(OP, a)?;
    check_float(OP, a)?;
    let _off = no_grad();
    let nd = a.ndim();
    let (m, n) = (a.shape()[nd - 2], a.shape()[nd - 1]);
    if m.min(n) == 0 {
        return Tensor::zeros(batch_of(a), DType::I64);
    }
    let s = if hermitian {
        check_square(OP, a)?;
        eigvalsh(a, "L")?.abs()?
    } else {
        svdvals(a)?
    };
    let tol = tolerance(&s, m, n, atol, rtol)?;
    s.gt(&tol)?.sum(&[-1], false)
}

/// The least-squares solution of `A·X = B` for each `m × n` `A` and `(m, k)` (or `(m,)`)
/// `B` (PyTorch's `linalg.lstsq`), through the SVD: singular values at or below
/// `rcond·σ_max` (default `eps·max(m, n)`) are treated as zero, so rank-deficient and
/// under-determined systems give the minimum-norm solution. `driver` (`gelsy` by
/// default, `gels`, `gelsd`, `gelss`) only decides which of the extra results are
/// filled, as in PyTorch.
///
/// # Errors
/// As [`svd`]; `A` and `B` of different dtypes, `B`'s rows not `m`, an unknown driver.
pub fn lstsq(a: &Tensor, b: &Tensor, rcond: Option<f64>, driver: Option<&str>) -> Result<Lstsq> {
    const OP: &str = "linalg.lstsq";
    if a.ndim() < 2 {
        return Err(Error::shape(OP, "input must have at least 2 dimensions."));
    }
    if b.ndim() < 1 {
        return Err(Error::shape(OP, "other must have at least 1 dimension."));
    }
    if a.dtype() != b.dtype() {
        return Err(Error::dtype(
            OP,
            format!(
                "Expected input and other to have the same dtype, but got input's dtype {} and other's dtype {}",
                a.dtype().legacy_name(),
                b.dtype().legacy_name()
            ),
        ));
    }
    prep(OP, a)?;
    let driver = driver.unwrap_or("gelsy");
    if !["gels", "gelsy", "gelsd", "gelss"].contains(&driver) {
        return Err(Error::value(
            OP,
            format!(
                "parameter `driver` should be one of (gels, gelsy, gelsd, gelss), but got {driver}"
            ),
        ));
    }
    let nd = a.ndim();
    let (m, n) = (a.shape()[nd - 2], a.shape()[nd - 1]);
    let vector = b.ndim() + 1 == nd;
    let b2 = if vector { b.unsqueeze(-1)? } else { b.clone() };
    let bnd = b2.ndim();
    if bnd < 2 || b2.shape()[bnd - 2] != m {
        return Err(Error::shape(
            OP,
            "input.size(-2) should match other.size(-2)",
        ));
    }
    let nrhs = b2.shape()[bnd - 1];
    let batch = broadcast_shapes(OP, batch_of(a), batch_of(&b2))?;
    let k = m.min(n);
    let rcond = rcond.unwrap_or(eps(a.dtype()) * m.max(n) as f64);
    let (x, rank, s) = if k == 0 {
        (
            Tensor::zeros(&with_batch(&batch, &[n, nrhs]), a.dtype())?,
            Tensor::zeros(batch_of(a), DType::I64)?,
            Tensor::zeros(&with_batch(batch_of(a), &[0]), a.dtype().to_real())?,
        )
    } else {
        let (u, s, vh) = svd(a, false)?;
        let tol = s.amax(&[-1], true)?.mul(rcond)?;
        let keep = s.gt(&tol)?;
        let sinv = Tensor::where_cond(&keep, &s.reciprocal()?, 0.0)?;
        let x = vh
            .mh()?
            .matmul(&sinv.unsqueeze(-1)?.mul(&u.mh()?.matmul(&b2)?)?)?;
        (x, keep.sum(&[-1], false)?, s)
    };
    let empty = || Tensor::zeros(&[0], a.dtype().to_real());
    let full_rank = k == 0 || rank.eq(n as i64)?.all(&[], false)?.item()?.to_f64() != 0.0;
    let residuals = if m > n && driver != "gelsy" && full_rank {
        let r = a.matmul(&x)?.sub(&b2)?;
        let r = if r.is_complex() { r.abs()? } else { r };
        r.mul(&r)?.sum(&[-2], false)?
    } else {
        empty()?
    };
    let rank = if driver == "gels" {
        Tensor::zeros(&[0], DType::I64)?
    } else {
        rank
    };
    let singular_values = if driver == "gelsd" || driver == "gelss" {
        s
    } else {
        empty()?
    };
    let solution = if vector { x.squeeze_dims(&[-1])? } else { x };
    Ok(Lstsq {
        solution: solution.contiguous()?,
        residuals,
        rank,
        singular_values,
    })
}

/// The `ord`-norm of `x` over `dims` (all dims when `None`), PyTorch's
/// `linalg.vector_norm`: `Σ|x|^ord` to the `1/ord`; `inf`/`-inf` the largest/smallest
/// `|x|`, `0` the number of non-zero elements. Any float dtype, and complex (of the
/// moduli, a real result); differentiable.
///
/// # Errors
/// A dtype that is not a float; a dim out of range; `±inf` over no elements.
pub fn vector_norm(x: &Tensor, ord: f64, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    const OP: &str = "linalg.vector_norm";
    check_any_float(OP, x)?;
    if x.is_complex() {
        return vector_norm(&x.abs()?, ord, dims, keepdim);
    }
    let all: Vec<i64> = (0..x.ndim() as i64).collect();
    let dims = dims.unwrap_or(&all);
    if x.ndim() == 0 {
        // A 0-d tensor: |x| (or x != 0 for ord 0).
        return if ord == 0.0 {
            x.ne(0.0)?.to_dtype(x.dtype())
        } else {
            x.abs()
        };
    }
    if ord == f64::INFINITY {
        x.abs()?.amax(dims, keepdim)
    } else if ord == f64::NEG_INFINITY {
        x.abs()?.amin(dims, keepdim)
    } else if ord == 0.0 {
        x.ne(0.0)?.to_dtype(x.dtype())?.sum(dims, keepdim)
    } else if ord == 1.0 {
        x.abs()?.sum(dims, keepdim)
    } else if ord == 2.0 {
        x.mul(x)?.sum(dims, keepdim)?.sqrt()
    } else {
        x.abs()?.pow(ord)?.sum(dims, keepdim)?.pow(1.0 / ord)
    }
}

/// The `ord`-norm of the matrices over dims `dims` (PyTorch's `linalg.matrix_norm`):
/// `'fro'`, `'nuc'` (the sum of the singular values), `±1` (largest/smallest column
/// abs-sum), `±inf` (row abs-sum), `±2` (largest/smallest singular value).
///
/// # Errors
/// Fewer than 2 dims, a non-float dtype, equal `dims`, an unsupported order; as [`svd`]
/// for `'nuc'` and `±2`.
pub fn matrix_norm(a: &Tensor, ord: NormOrd, dims: [i64; 2], keepdim: bool) -> Result<Tensor> {
    const OP: &str = "linalg.matrix_norm";
    check_matrix(OP, a)?;
    check_any_float(OP, a)?;
    let nd = a.ndim();
    let (d0, d1) = (wrap_dim(OP, dims[0], nd)?, wrap_dim(OP, dims[1], nd)?);
    if d0 == d1 {
        return Err(Error::shape(
            OP,
            format!("dims must be different. Got ({}, {})", dims[0], dims[1]),
        ));
    }
    let (i0, i1) = (d0 as i64, d1 as i64);
    let squeeze = |t: Tensor| -> Result<Tensor> {
        if keepdim {
            Ok(t)
        } else {
            t.squeeze_dims(&[i0, i1])
        }
    };
    match ord {
        NormOrd::Fro => vector_norm(a, 2.0, Some(&[i0, i1]), keepdim),
        NormOrd::P(p) if p.abs() == 1.0 || p.is_infinite() => {
            // 1: over rows (dim d0) first, then the extreme over columns; inf: the reverse.
            let (first, second) = if p.abs() == 1.0 { (i0, i1) } else { (i1, i0) };
            let sums = a.abs()?.sum(&[first], true)?;
            squeeze(if p > 0.0 {
                sums.amax(&[second], true)?
            } else {
                sums.amin(&[second], true)?
            })
        }
        NormOrd::Nuc | NormOrd::P(2.0) | NormOrd::P(-2.0) => {
            let moved = a.movedim(&[i0, i1], &[-2, -1])?;
            let s = svdvals(&moved)?;
            let r = match ord {
                NormOrd::Nuc => s.sum(&[-1], false)?,
                NormOrd::P(p) if p > 0.0 => s.amax(&[-1], false)?,
                _ => s.amin(&[-1], false)?,
            };
            if keepdim {
                let (lo, hi) = (i0.min(i1), i0.max(i1));
                r.unsqueeze(lo)?.unsqueeze(hi)
            } else {
                Ok(r)
            }
        }
        NormOrd::P(p) => Err(Error::value(OP, format!("Order {p} not supported."))),
    }
}

/// PyTorch's `linalg.norm`: with `dims` of length 1 (or `None` and no `ord`, over all
/// elements) a vector norm, with 2 dims (or `None` and a 2-d input) a matrix norm;
/// `ord` defaults to 2 (vector) or `'fro'` (matrix).
///
/// # Errors
/// As [`vector_norm`]/[`matrix_norm`]; `ord` without `dims` on an input that is not 1-d or
/// 2-d; `'fro'`/`'nuc'` for a vector norm.
pub fn norm(
    x: &Tensor,
    ord: Option<NormOrd>,
    dims: Option<&[i64]>,
    keepdim: bool,
) -> Result<Tensor> {
    const OP: &str = "linalg.norm";
    check_any_float("linalg.vector_norm", x)?;
    let matrix = match dims {
        Some(d) if d.len() == 2 => Some([d[0], d[1]]),
        Some(d) if d.len() == 1 => None,
        Some(d) => {
            return Err(Error::shape(
                OP,
                format!("If dim is specified, it must be of length 1 or 2. Got {d:?}"),
            ))
        }
        None => match ord {
            None => None,
            Some(_) if x.ndim() == 2 => Some([-2, -1]),
            Some(_) if x.ndim() == 1 => None,
            Some(_) => {
                return Err(Error::shape(
                    OP,
                    format!(
                        "If dim is not specified but ord is, the input must be 1D or 2D. Got {}D.",
                        x.ndim()
                    ),
                ))
            }
        },
    };
    match (matrix, ord) {
        (Some(d), ord) => matrix_norm(x, ord.unwrap_or(NormOrd::Fro), d, keepdim),
        (None, None) => vector_norm(x, 2.0, dims, keepdim),
        (None, Some(NormOrd::P(p))) => vector_norm(x, p, dims, keepdim),
        (None, Some(_)) => Err(Error::value(
            OP,
            "the orders 'fro' and 'nuc' are for matrix norms: give two dims",
        )),
    }
}

/// `Σ conj(x)·y` along `dim` (PyTorch's `linalg.vecdot`), the two broadcast.
///
/// # Errors
/// Shapes that do not broadcast; `dim` out of range.
pub fn vecdot(x: &Tensor, y: &Tensor, dim: i64) -> Result<Tensor> {
    x.conj()?.mul(y)?.sum(&[dim], false)
}

impl Tensor {
    /// The sum of the main diagonal of a 2-d tensor (PyTorch's `trace`; integers sum in
    /// int64).
    ///
    /// # Errors
    /// A tensor that is not 2-d.
    pub fn trace(&self) -> Result<Tensor> {
        if self.ndim() != 2 {
            return Err(Error::shape(
                "trace",
                format!("expected a matrix, but got tensor with dim {}", self.ndim()),
            ));
        }
        self.diagonal(0, 0, 1)?.sum(&[], false)
    }

    /// The sum over the dims `dims_a` of this tensor and `dims_b` of `other` (paired in
    /// order) of their product (PyTorch's `tensordot`): the result has this tensor's other
    /// dims, then `other`'s. One matmul over permuted, reshaped views.
    ///
    /// # Errors
    /// Lists of different lengths, dims out of range or repeated, paired dims of
    /// different sizes.
    pub fn tensordot(&self, other: &Tensor, dims_a: &[i64], dims_b: &[i64]) -> Result<Tensor> {
        const OP: &str = "tensordot";
        if dims_a.len() != dims_b.len() {
            return Err(Error::shape(
                OP,
                "both dimension lists should have same length",
            ));
        }
        let wrap = |t: &Tensor, dims: &[i64]| -> Result<Vec<usize>> {
            let mut out: Vec<usize> = Vec::with_capacity(dims.len());
            for &d in dims {
                let w = wrap_dim(OP, d, t.ndim())?;
                if out.contains(&w) {
                    return Err(Error::shape(
                        OP,
                        format!("dim {w} appears multiple times in the list of dims"),
                    ));
                }
                out.push(w);
            }
            Ok(out)
        };
        let (ca, cb) = (wrap(self, dims_a)?, wrap(other, dims_b)?);
        for (i, (&x, &y)) in ca.iter().zip(&cb).enumerate() {
            if self.shape()[x] != other.shape()[y] {
                return Err(Error::shape(
                    OP,
                    format!(
                        "contracted dimensions need to match, but first has size {} in dim {} and second has size {} in dim {}",
                        self.shape()[x],
                        dims_a[i],
                        other.shape()[y],
                        dims_b[i]
                    ),
                ));
            }
        }
        let free_a: Vec<usize> = (0..self.ndim()).filter(|d| !ca.contains(d)).collect();
        let free_b: Vec<usize> = (0..other.ndim()).filter(|d| !cb.contains(d)).collect();
        let size = |t: &Tensor, ds: &[usize]| ds.iter().map(|&d| t.shape()[d]).product::<usize>();
        let contracted = size(self, &ca);
        let as_i64 = |v: &[usize]| v.iter().map(|&d| d as i64).collect::<Vec<i64>>();
        let pa: Vec<usize> = free_a.iter().chain(&ca).copied().collect();
        let pb: Vec<usize> = cb.iter().chain(&free_b).copied().collect();
        let a2 = self
            .permute(&as_i64(&pa))?
            .reshape(&[size(self, &free_a) as i64, contracted as i64])?;
        let b2 = other
            .permute(&as_i64(&pb))?
            .reshape(&[contracted as i64, size(other, &free_b) as i64])?;
        let shape: Vec<i64> = free_a
            .iter()
            .map(|&d| self.shape()[d] as i64)
            .chain(free_b.iter().map(|&d| other.shape()[d] as i64))
            .collect();
        a2.matmul(&b2)?.reshape(&shape)
    }
}
