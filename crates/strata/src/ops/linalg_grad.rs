//! The backward formulas of the factorised linear algebra ops (`ops/linalg.rs`), PyTorch's
//! (its `FunctionsManual.cpp`), for real and complex matrices alike: each is written with
//! conjugate transposes, so it is its own complex formula (`autograd/complex.rs`'s
//! [`Rule::Own`](crate::autograd::complex::Rule)). The compositions (`pinv`, `lstsq`, the
//! norms through singular values) differentiate through these.
//!
//! As in PyTorch, the formulas assume what makes the derivative exist: an invertible
//! matrix for `inv`, `solve` and `slogdet`, distinct eigenvalues for the eigenvectors of
//! `eigh`, distinct non-zero singular values for the singular vectors of `svd` (a
//! singular value's own gradient needs neither; `det`'s exists everywhere and is
//! computed everywhere). Where the assumption fails the gradient is inf or NaN, as
//! PyTorch's, or the singular-matrix error of the solve it needs.

use crate::autograd::{needs_grad, record, record1, Save};
use crate::error::Result;
use crate::tensor::Tensor;

/// `v` as the diagonals of a batch of square matrices: `(..., k)` → `(..., k, k)`.
fn diag_embed(v: &Tensor) -> Result<Tensor> {
    let k = v.shape()[v.ndim() - 1];
    let mut shape = v.shape().to_vec();
    shape.push(k);
    let out = Tensor::zeros_on(&shape, v.dtype(), v.device())?;
    // Through the base, so a second derivative reaches `v`.
    out.diagonal(0, -2, -1)?.copy_(v)?;
    Ok(out)
}

/// `a` with the diagonals of its matrices replaced by `v` (`None`: zeros).
fn with_diagonal(a: &Tensor, v: Option<&Tensor>) -> Result<Tensor> {
    let n = a.shape()[a.ndim() - 1];
    let eye = Tensor::eye(n, n, crate::dtype::DType::Bool)?;
    let off = Tensor::where_cond(&eye, 0.0, a)?;
    match v {
        Some(v) => off.add(&diag_embed(v)?),
        None => Ok(off),
    }
}

/// `inv`: `Y = A⁻¹`, `gA = −Yᴴ·G·Yᴴ`.
pub(crate) fn inv(a: &Tensor, y: Tensor) -> Result<Tensor> {
    if !needs_grad(&[a]) {
        return Ok(y);
    }
    record1(
        "LinalgInvExBackward0",
        &[a],
        y,
        &[Save::Output(0)],
        Box::new(|saved, grads, _needs| {
            let yh = saved[0].mh()?;
            Ok(vec![Some(yh.matmul(&grads[0])?.matmul(&yh)?.neg()?)])
        }),
    )
}

/// `det`: `gA = g·adj(A)ᴴ`, the adjugate's conjugate transpose: `(g·conj(det))·A⁻ᴴ` when
/// every matrix is invertible; else through the SVD `A = U·diag(s)·Vh`, where
/// `adj(A)ᴴ = conj(det U·det Vh)·U·diag(p)·Vh` with `p_i = Π_{j≠i} s_j` (PyTorch's
/// singular case, which `A⁻¹` cannot serve).
pub(crate) fn det(a: &Tensor, d: Tensor) -> Result<Tensor> {
    if !needs_grad(&[a]) {
        return Ok(d);
    }
    record1(
        "LinalgDetBackward0",
        &[a],
        d,
        &[Save::Input(a), Save::Output(0)],
        Box::new(|saved, grads, _needs| {
            let (a, d) = (&saved[0], &saved[1]);
            let g = grads[0].unsqueeze(-1)?.unsqueeze(-1)?;
            let singular = d.eq(0.0)?.any(&[], false)?.item()?.to_f64() != 0.0;
            if !singular {
                let s = g.mul(&d.conj()?.unsqueeze(-1)?.unsqueeze(-1)?)?;
                return Ok(vec![Some(s.mul(&super::linalg::inv(a)?.mh()?)?)]);
            }
            let (u, sv, vh) = super::linalg::svd(a, false)?;
            let k = sv.shape()[sv.ndim() - 1] as i64;
            let kk = sv.shape()[sv.ndim() - 1];
            let eye = Tensor::eye(kk, kk, crate::dtype::DType::Bool)?;
            let mut shape: Vec<i64> = sv.shape().iter().map(|&x| x as i64).collect();
            shape.push(k);
            let rows = Tensor::where_cond(&eye, 1.0, &sv.unsqueeze(-2)?.expand(&shape)?)?;
            let p = rows.prod(&[-1], false)?;
            let c = super::linalg::det(&u)?.mul(&super::linalg::det(&vh)?)?;
            let scale = g.mul(&c.conj()?.unsqueeze(-1)?.unsqueeze(-1)?)?;
            let core = u.mul(&p.unsqueeze(-2)?.to_dtype(u.dtype())?)?.matmul(&vh)?;
            Ok(vec![Some(scale.mul(&core)?)])
        }),
    )
}

/// `slogdet`: `gA = g′·A⁻ᴴ`, with `g′ = g_logabsdet` for real matrices and, for complex
/// ones, `g_logabsdet + i·Im(g_sign·conj(sign))`: `log det = log|det| + iθ` is holomorphic,
/// and the sign `e^{iθ}` passes `Im(g_sign·conj(sign))` to `θ` (a real sign is locally
/// constant).
pub(crate) fn slogdet(a: &Tensor, sign: Tensor, logabs: Tensor) -> Result<(Tensor, Tensor)> {
    if !needs_grad(&[a]) {
        return Ok((sign, logabs));
    }
    let mut out = record(
        "LinalgSlogdetBackward0",
        &[a],
        vec![sign, logabs],
        &[Save::Input(a), Save::Output(0)],
        Box::new(|saved, grads, _needs| {
            let (a, sign) = (&saved[0], &saved[1]);
            let (g_sign, g_log) = (&grads[0], &grads[1]);
            let g = if a.is_complex() {
                let turn = g_sign.mul(&sign.conj()?)?.imag()?;
                let i_turn = Tensor::complex(&turn.mul(0.0)?, &turn)?;
                g_log.to_dtype(a.dtype())?.add(&i_turn)?
            } else {
                g_log.clone()
            };
            let g = g.unsqueeze(-1)?.unsqueeze(-1)?;
            Ok(vec![Some(g.mul(&super::linalg::inv(a)?.mh()?)?)])
        }),
    )?;
    let logabs = out.pop().expect("two outputs");
    Ok((out.pop().expect("two outputs"), logabs))
}

/// `solve` (`A·X = B`, `B` as `(..., n, k)`): `gB = A⁻ᴴ·G`, `gA = −gB·Xᴴ`. The batch dims
/// of `A` and `B` broadcast; the engine sums each gradient back to its input's shape.
pub(crate) fn solve(a: &Tensor, b: &Tensor, x: Tensor) -> Result<Tensor> {
    if !needs_grad(&[a, b]) {
        return Ok(x);
    }
    record1(
        "LinalgSolveExBackward0",
        &[a, b],
        x,
        &[Save::Input(a), Save::Output(0)],
        Box::new(|saved, grads, needs| {
            let (a, x) = (&saved[0], &saved[1]);
            let gb = super::linalg::solve(&a.mh()?, &grads[0], true)?;
            let ga = if needs[0] {
                Some(gb.matmul(&x.mh()?)?.neg()?)
            } else {
                None
            };
            Ok(vec![ga, needs[1].then_some(gb)])
        }),
    )
}

/// `cholesky` (Murray, arXiv:1602.07527, as PyTorch): with `L` lower, `Φ = tril(Lᴴ·G)`,
/// `gA = L⁻ᴴ · ½(Φ + tril(Φ, −1)ᴴ) · L⁻¹`; `upper` works on `L = Uᴴ`.
pub(crate) fn cholesky(a: &Tensor, l: Tensor, upper: bool) -> Result<Tensor> {
    if !needs_grad(&[a]) {
        return Ok(l);
    }
    record1(
        "LinalgCholeskyExBackward0",
        &[a],
        l,
        &[Save::Output(0)],
        Box::new(move |saved, grads, _needs| {
            let (l, g) = if upper {
                (saved[0].mh()?, grads[0].mh()?)
            } else {
                (saved[0].clone(), grads[0].clone())
            };
            let phi = l.mh()?.matmul(&g)?.tril(0)?;
            let sym = phi.add(&phi.tril(-1)?.mh()?)?.mul(0.5)?;
            let left = super::linalg::solve(&l.mh()?, &sym, true)?;
            Ok(vec![Some(super::linalg::solve(&l, &left, false)?)])
        }),
    )
}

/// `eigh` (Hermitian `A = V·diag(w)·Vᴴ`): `gA = V·(diag(g_w) + skew(Vᴴ·g_V)/E)·Vᴴ` with
/// `skew(M) = ½(M − Mᴴ)` and `E_ij = w_j − w_i` (PyTorch's `linalg_eig_backward` for
/// Hermitian input). Eigenvalues only (`vectors`: none) keep `V` for the formula.
pub(crate) fn eigh(a: &Tensor, w: Tensor, v: Tensor, vectors: bool) -> Result<Vec<Tensor>> {
    if !needs_grad(&[a]) {
        return Ok(if vectors { vec![w, v] } else { vec![w] });
    }
    let formula: crate::autograd::Formula = Box::new(move |saved, grads, _needs| {
        let (w, v) = (&saved[0], &saved[1]);
        let gw = &grads[0];
        let inner = if vectors {
            let vhgv = v.mh()?.matmul(&grads[1])?;
            let skew = vhgv.sub(&vhgv.mh()?)?.mul(0.5)?;
            let e = w.unsqueeze(-2)?.sub(&w.unsqueeze(-1)?)?;
            let n = w.shape()[w.ndim() - 1];
            let eye = Tensor::eye(n, n, crate::dtype::DType::Bool)?;
            let e = Tensor::where_cond(&eye, 1.0, &e)?;
            with_diagonal(&skew.div(&e)?, Some(gw))?
        } else {
            diag_embed(gw)?
        };
        Ok(vec![Some(
            v.matmul(&inner.to_dtype(v.dtype())?)?.matmul(&v.mh()?)?,
        )])
    });
    if vectors {
        record(
            "LinalgEighBackward0",
            &[a],
            vec![w, v],
            &[Save::Output(0), Save::Output(1)],
            formula,
        )
    } else {
        // eigvalsh: the eigenvectors are the formula's, not an output.
        let vd = v.detach();
        let mut out = record(
            "LinalgEighBackward0",
            &[a],
            vec![w],
            &[Save::Output(0), Save::Input(&vd)],
            formula,
        )?;
        out.truncate(1);
        Ok(out)
    }
}

/// `svd` (thin, `A = U·diag(S)·Vh`; PyTorch's `svd_backward`): with `skew(M) = M − Mᴴ`,
/// `E_ij = S_j² − S_i²` (1 on the diagonal),
/// `core = (skew(Uᴴ·gU)·S + S·skew(Vh·gVhᴴ)) / E + diag(gS)` (complex: plus the imaginary
/// diagonal of `Uᴴ·gU` over `2S`), `gA = U·core·Vh`, and for a tall (wide) `A` the part of
/// `gU` (`gVh`) outside the span of `U` (`V`). Singular values only (`gU`, `gVh` absent):
/// `U·diag(gS)·Vh`.
pub(crate) fn svd(
    a: &Tensor,
    u: Tensor,
    s: Tensor,
    vh: Tensor,
    vectors: bool,
) -> Result<Vec<Tensor>> {
    if !needs_grad(&[a]) {
        return Ok(if vectors { vec![u, s, vh] } else { vec![s] });
    }
    let formula: crate::autograd::Formula = Box::new(move |saved, grads, _needs| {
        let (u, s, vh) = (&saved[0], &saved[1], &saved[2]);
        let m = u.shape()[u.ndim() - 2];
        let n = vh.shape()[vh.ndim() - 1];
        let gs = &grads[0];
        if !vectors {
            let core = diag_embed(gs)?.to_dtype(u.dtype())?;
            return Ok(vec![Some(u.matmul(&core)?.matmul(vh)?)]);
        }
        let (gu, gvh) = (&grads[1], &grads[2]);
        let skew = |x: &Tensor| -> Result<Tensor> { x.sub(&x.mh()?) };
        let uhgu = skew(&u.mh()?.matmul(gu)?)?;
        let vhgv = skew(&vh.matmul(&gvh.mh()?)?)?;
        let s2 = s.mul(s)?;
        let k = s.shape()[s.ndim() - 1];
        let eye = Tensor::eye(k, k, crate::dtype::DType::Bool)?;
        let e = Tensor::where_cond(&eye, 1.0, &s2.unsqueeze(-2)?.sub(&s2.unsqueeze(-1)?)?)?;
        let mut core = uhgu
            .mul(&s.unsqueeze(-2)?)?
            .add(&s.unsqueeze(-1)?.mul(&vhgv)?)?
            .div(&e)?;
        core = core.add(&diag_embed(gs)?)?;
        if u.is_complex() {
            let d = uhgu.diagonal(0, -2, -1)?.div(&s.mul(2.0)?)?;
            core = core.add(&diag_embed(&d)?)?;
        }
        let ga = if m > n {
            let gus = gu.div(&s.unsqueeze(-2)?)?;
            let out = u.matmul(&core)?.add(&gus)?;
            out.sub(&u.matmul(&u.mh()?.matmul(&gus)?)?)?.matmul(vh)?
        } else if m < n {
            let sgvh = gvh.div(&s.unsqueeze(-1)?)?;
            let out = core.matmul(vh)?.add(&sgvh)?;
            let out = out.sub(&sgvh.matmul(&vh.mh()?)?.matmul(vh)?)?;
            u.matmul(&out)?
        } else {
            u.matmul(&core)?.matmul(vh)?
        };
        Ok(vec![Some(ga)])
    });
    if vectors {
        let mut out = record(
            "LinalgSvdBackward0",
            &[a],
            vec![s, u, vh],
            &[Save::Output(1), Save::Output(0), Save::Output(2)],
            formula,
        )?;
        let vh = out.pop().expect("three outputs");
        let u = out.pop().expect("three outputs");
        Ok(vec![u, out.pop().expect("three outputs"), vh])
    } else {
        let (ud, vd) = (u.detach(), vh.detach());
        record(
            "LinalgSvdBackward0",
            &[a],
            vec![s],
            &[Save::Input(&ud), Save::Output(0), Save::Input(&vd)],
            formula,
        )
    }
}

/// `qr` (`A = Q·R`, reduced, or complete with `m ≤ n`). For `m ≥ n`: from
/// `Qᴴ·dA·R⁻¹ = Ω + dR·R⁻¹` with `Ω = Qᴴ·dQ` skew-Hermitian and `dR·R⁻¹` upper triangular
/// with a real diagonal, `gA = (Q·M + gQ − Q·Qᴴ·gQ)·R⁻ᴴ`, `M = tril(Kᴴ, −1) − tril(K, −1)
/// − i·Im diag(K) + gR·Rᴴ`, `K = gQᴴ·Q − R·gRᴴ` (for real matrices the classic
/// `(gQ + Q·copyltu(R·gRᵀ − gQᵀ·Q))·R⁻ᵀ`). For `m < n`, `A = [X Y]` with `X = Q·R₁` square
/// and `Y = Q·R₂`: `gY = Q·gR₂`, and `X`'s gradient with `gQ + Y·gR₂ᴴ`.
pub(crate) fn qr(a: &Tensor, q: Tensor, r: Tensor) -> Result<(Tensor, Tensor)> {
    if !needs_grad(&[a]) {
        return Ok((q, r));
    }
    let mut out = record(
        "LinalgQrBackward0",
        &[a],
        vec![q, r],
        &[Save::Output(0), Save::Output(1)],
        Box::new(|saved, grads, _needs| {
            let (q, r) = (&saved[0], &saved[1]);
            let (gq, gr) = (&grads[0], &grads[1]);
            let m = q.shape()[q.ndim() - 2];
            let n = r.shape()[r.ndim() - 1];
            if m >= n {
                return Ok(vec![Some(qr_tall(q, r, gq, gr)?)]);
            }
            let (mi, ni) = (m as i64, n as i64);
            let (r1, r2) = (r.narrow(-1, 0, mi)?, r.narrow(-1, mi, ni - mi)?);
            let (gr1, gr2) = (gr.narrow(-1, 0, mi)?, gr.narrow(-1, mi, ni - mi)?);
            let y = q.matmul(&r2)?;
            let gq2 = gq.add(&y.matmul(&gr2.mh()?)?)?;
            let gx = qr_tall(q, &r1, &gq2, &gr1)?;
            let gy = q.matmul(&gr2)?;
            Ok(vec![Some(Tensor::cat(&[&gx, &gy], -1)?)])
        }),
    )?;
    let r = out.pop().expect("two outputs");
    Ok((out.pop().expect("two outputs"), r))
}

/// [`qr`]'s gradient for `Q` (`m × n`) and a square `R` (`n × n`), `m ≥ n`.
fn qr_tall(q: &Tensor, r: &Tensor, gq: &Tensor, gr: &Tensor) -> Result<Tensor> {
    let k = gq.mh()?.matmul(q)?.sub(&r.matmul(&gr.mh()?)?)?;
    let mut m = k.mh()?.tril(-1)?.sub(&k.tril(-1)?)?;
    if k.is_complex() {
        let im = k.diagonal(0, -2, -1)?.imag()?;
        m = m.sub(&diag_embed(&Tensor::complex(&im.mul(0.0)?, &im)?)?)?;
    }
    let m = m.add(&gr.matmul(&r.mh()?)?)?;
    let x = q
        .matmul(&m)?
        .add(gq)?
        .sub(&q.matmul(&q.mh()?.matmul(gq)?)?)?;
    super::linalg::solve(&r.mh()?, &x, false)
}
