//! Complex tensors' own ops: the views of their parts (`view_as_real`, `view_as_complex`,
//! `real`, `imag`: metadata only, as PyTorch), `conj`, `abs`/`angle` (real results), and
//! building a complex tensor from parts (`complex`, `polar`). Arithmetic and the
//! transcendental functions are op-table entries with `complex` arms (`ops/table.rs`);
//! the loops here are `kernel/complex.rs`.
//!
//! Under autograd (`autograd/complex.rs`) the views of parts are differentiable views,
//! and `conj`, `angle`, `complex`, `polar` record their own formulas.
//!
//! Difference from PyTorch, on purpose: `conj` of a complex tensor is a new tensor (as
//! `conj_physical`; strata has no lazy conjugate bit).

use std::sync::Arc;

use crate::autograd::views::ViewGrad;
use crate::autograd::{needs_grad, no_grad, record1, Save};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::plan::output_for;
use crate::layout::broadcast::broadcast_shapes;
use crate::layout::wrap_dim;
use crate::ops::table::Unary;
use crate::tensor::Tensor;

/// The loops of a complex op (and of the FFTs, `ops/fft.rs`) run on the CPU only: the
/// CUDA kernels have no complex arms.
pub(crate) fn on_cpu(op: &'static str, t: &Tensor) -> Result<()> {
    if t.device().is_cpu() {
        Ok(())
    } else {
        Err(Error::unsupported_on(op, t.device()))
    }
}

impl Tensor {
    /// True for a complex tensor (`complex64`, `complex128`).
    pub fn is_complex(&self) -> bool {
        self.dtype().is_complex()
    }

    /// A complex tensor's elements as real pairs: shape `[.., 2]`, the real part at index
    /// 0 and the imaginary part at 1, over the same memory (a view: writes go through).
    ///
    /// # Errors
    /// A tensor that is not complex (PyTorch's text).
    pub fn view_as_real(&self) -> Result<Tensor> {
        if !self.is_complex() {
            return Err(Error::dtype(
                "view_as_real",
                "view_as_real is only supported for complex tensors",
            ));
        }
        let out = self
            .detach()
            .unsqueeze(-1)?
            .view_dtype(self.dtype().to_real())?;
        self.grad_view(out, "ViewAsRealBackward0", || {
            ViewGrad::Map(Arc::new(|g: &Tensor| pairs_to_complex(g)))
        })
    }

    /// Real pairs `[.., 2]` (float32 or float64) as complex numbers, over the same memory
    /// (a view).
    ///
    /// # Errors
    /// PyTorch's: another dtype, a 0-d tensor, a last dim not of size 2 or not of stride
    /// 1, an odd stride elsewhere or an odd storage offset.
    pub fn view_as_complex(&self) -> Result<Tensor> {
        const OP: &str = "view_as_complex";
        let to = match self.dtype() {
            DType::F32 => DType::C64,
            DType::F64 => DType::C128,
            DType::F16 => {
                // PyTorch would give complex32 (ComplexHalf), a dtype strata lacks.
                return Err(Error::dtype(
                    OP,
                    "view_as_complex: strata has no complex32 (ComplexHalf); convert the half pairs to float32 first",
                ));
            }
            other => {
                return Err(Error::dtype(
                    OP,
                    format!(
                        "view_as_complex is only supported for half, float and double tensors, but got a tensor of scalar type: {}",
                        other.legacy_name()
                    ),
                ))
            }
        };
        let shape_err = |msg: &str| Error::shape(OP, msg.to_string());
        let n = self.ndim();
        if n == 0 {
            return Err(shape_err("Input tensor must have one or more dimensions"));
        }
        if self.shape()[n - 1] != 2 {
            return Err(shape_err("Tensor must have a last dimension of size 2"));
        }
        if self.strides()[n - 1] != 1 {
            return Err(shape_err("Tensor must have a last dimension with stride 1"));
        }
        if self.strides()[..n - 1].iter().any(|s| s % 2 != 0) {
            return Err(shape_err(
                "Tensor must have a stride divisible by 2 for all but last dimension",
            ));
        }
        if !self.offset().is_multiple_of(2) {
            return Err(shape_err(
                "Tensor must have a storage_offset divisible by 2",
            ));
        }
        let out = self.detach().view_dtype(to)?.squeeze_dims(&[-1])?;
        self.grad_view(out, "ViewAsComplexBackward0", || {
            ViewGrad::Map(Arc::new(|g: &Tensor| g.view_as_real()))
        })
    }

    /// The real part: a view of a complex tensor's real parts; a real tensor itself (a
    /// new handle), as PyTorch.
    pub fn real(&self) -> Result<Tensor> {
        if self.is_complex() {
            self.view_as_real()?.select(-1, 0)
        } else {
            Ok(self.clone())
        }
    }

    /// The imaginary part: a view of a complex tensor's imaginary parts.
    ///
    /// # Errors
    /// A real tensor (PyTorch's text).
    pub fn imag(&self) -> Result<Tensor> {
        if self.is_complex() {
            self.view_as_real()?.select(-1, 1)
        } else {
            Err(Error::dtype(
                "imag",
                "imag is not implemented for tensors with non-complex dtypes.",
            ))
        }
    }

    /// The complex conjugate: a new tensor for a complex one (strata has no lazy
    /// conjugate bit, so this is PyTorch's `conj_physical`); a real tensor itself (a new
    /// handle), as PyTorch.
    pub fn conj(&self) -> Result<Tensor> {
        if !self.is_complex() {
            return Ok(self.clone());
        }
        self.conj_physical()
    }

    /// The conjugate transpose of the last two dims (PyTorch's `mH`/`adjoint()`): the `mT`
    /// view of a real tensor, a new tensor for a complex one.
    ///
    /// # Errors
    /// Fewer than 2 dims.
    pub fn mh(&self) -> Result<Tensor> {
        if self.ndim() < 2 {
            return Err(Error::shape(
                "mH",
                format!(
                    "tensor.mH is only supported on matrices or batches of matrices. Got {}-D tensor.",
                    self.ndim()
                ),
            ));
        }
        self.mt()?.conj()
    }

    /// The conjugate transpose of a matrix (PyTorch's `H`): [`mh`](Self::mh) of a 2-d
    /// tensor, the tensor itself when 0-d.
    ///
    /// # Errors
    /// Any other number of dims.
    pub fn h(&self) -> Result<Tensor> {
        match self.ndim() {
            0 => Ok(self.clone()),
            2 => self.mh(),
            d => Err(Error::shape(
                "H",
                format!("tensor.H is only supported on matrices (2-D tensors). Got {d}-D tensor."),
            )),
        }
    }

    /// The complex conjugate, always computed into a new tensor (a copy for a real one).
    pub fn conj_physical(&self) -> Result<Tensor> {
        if !self.is_complex() {
            return self.contiguous_copy();
        }
        on_cpu("conj_physical", self)?;
        let out = {
            let _off = no_grad();
            let out = self.detach().contiguous_copy()?;
            // Negating the imaginary parts through the real view.
            out.imag()?.neg_()?;
            out
        };
        if !needs_grad(&[self]) {
            return Ok(out);
        }
        record1(
            "ConjPhysicalBackward0",
            &[self],
            out,
            &[],
            Box::new(|_saved, grads, _needs| Ok(vec![Some(grads[0].conj_physical()?)])),
        )
    }

    /// The angle (argument) of each element: `atan2(im, re)` for complex, in the part
    /// dtype; for real input `0` where `x ≥ 0`, `π` where `x < 0`, NaN for NaN (integers
    /// give float32).
    pub fn angle(&self) -> Result<Tensor> {
        if self.is_complex() {
            on_cpu("angle", self)?;
            let out = output_for(self.shape(), self.dtype().to_real(), &[self])?;
            crate::kernel::complex::angle_into(&out, self)?;
            if !needs_grad(&[self]) {
                return Ok(out);
            }
            // ∂θ/∂x = −y/r², ∂θ/∂y = x/r²: the gradient `g·i·z/|z|²`, 0 at 0 (PyTorch's).
            return record1(
                "AngleBackward0",
                &[self],
                out,
                &[Save::Input(self)],
                Box::new(|saved, grads, _needs| {
                    let (z, g) = (&saved[0], &grads[0]);
                    let (x, y) = (z.real()?, z.imag()?);
                    let r2 = x.mul(&x)?.add(&y.mul(&y)?)?;
                    let zero = r2.eq(0.0)?;
                    let s = Tensor::where_cond(&zero, 0.0, &g.div(&r2)?)?;
                    Ok(vec![Some(Tensor::complex(
                        &y.mul(&s)?.neg()?,
                        &x.mul(&s)?,
                    )?)])
                }),
            );
        }
        let x = if self.dtype().is_float() {
            self.clone()
        } else {
            self.to_dtype(DType::F32)?
        };
        // atan2(0, x): 0 for x ≥ 0 (and +0.0), π for x < 0, NaN for NaN.
        let zero = Tensor::zeros(&[], x.dtype())?;
        zero.atan2(&x)
    }

    /// A complex tensor `real + imag·i` from two real tensors of one float dtype
    /// (float32 → complex64, float64 → complex128), broadcast together (PyTorch's
    /// `torch.complex`).
    ///
    /// # Errors
    /// Operands of different dtypes or not float32/float64 (PyTorch's texts), shapes that
    /// do not broadcast.
    pub fn complex(real: &Tensor, imag: &Tensor) -> Result<Tensor> {
        make_complex::<false>("complex", real, imag)
    }

    /// A complex tensor `abs·(cos angle + i·sin angle)` from two real tensors (PyTorch's
    /// `torch.polar`); checks as [`complex`](Self::complex).
    pub fn polar(abs: &Tensor, angle: &Tensor) -> Result<Tensor> {
        make_complex::<true>("polar", abs, angle)
    }
}

fn make_complex<const POLAR: bool>(op: &'static str, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.dtype() != b.dtype() {
        return Err(Error::dtype(
            op,
            format!(
                "Expected object of scalar type {} but got scalar type {} for second argument",
                a.dtype().legacy_name(),
                b.dtype().legacy_name()
            ),
        ));
    }
    let out_dt = match a.dtype() {
        DType::F32 => DType::C64,
        DType::F64 => DType::C128,
        other => {
            return Err(Error::dtype(
                op,
                format!(
                    "Expected both inputs to be Half, Float or Double tensors but got {} and {}",
                    other.legacy_name(),
                    other.legacy_name()
                ),
            ))
        }
    };
    on_cpu(op, a)?;
    on_cpu(op, b)?;
    let shape = broadcast_shapes(op, a.shape(), b.shape())?;
    let sizes: Vec<i64> = shape.iter().map(|&n| n as i64).collect();
    let (ea, eb) = (a.expand(&sizes)?, b.expand(&sizes)?);
    let out = output_for(&shape, out_dt, &[&ea, &eb])?;
    crate::kernel::complex::make_into::<POLAR>(op, &out, &ea, &eb)?;
    if !needs_grad(&[a, b]) {
        return Ok(out);
    }
    if !POLAR {
        // `re + i·im`: each part's gradient is that part of `g`.
        return record1(
            "ComplexBackward0",
            &[a, b],
            out,
            &[],
            Box::new(|_saved, grads, _needs| {
                let g = &grads[0];
                Ok(vec![Some(g.real()?), Some(g.imag()?)])
            }),
        );
    }
    // `w = r·e^{iθ}`: ∂w/∂r = e^{iθ}, ∂w/∂θ = i·w, so with `g = p + iq`:
    // grad r = p·cos θ + q·sin θ, grad θ = q·Re w − p·Im w.
    record1(
        "PolarBackward0",
        &[a, b],
        out,
        &[Save::Input(b), Save::Output(0)],
        Box::new(|saved, grads, _needs| {
            let (theta, w, g) = (&saved[0], &saved[1], &grads[0]);
            let (p, q) = (g.real()?, g.imag()?);
            let gr = p.mul(&theta.cos()?)?.add(&q.mul(&theta.sin()?)?)?;
            let gt = q.mul(&w.real()?)?.sub(&p.mul(&w.imag()?)?)?;
            Ok(vec![Some(gr), Some(gt)])
        }),
    )
}

/// Real pairs `[.., 2]` (a gradient of `view_as_real`) as complex numbers: a view where the
/// layout allows, else a fresh row-major copy's.
fn pairs_to_complex(g: &Tensor) -> Result<Tensor> {
    match g.view_as_complex() {
        Ok(z) => Ok(z),
        // `contiguous` of an empty tensor keeps its strides (nothing to move), which may
        // not suit `view_as_complex`; `contiguous_copy` is always row-major.
        Err(_) => g.contiguous_copy()?.view_as_complex(),
    }
}

/// `x ± y` for a complex `x` and a complex tensor of its dtype or a number, into a fresh
/// tensor, computed on the real pairs (`view_as_real`), where the real loops run at
/// memory speed (the complex loop, element by element, took twice NumPy's time). `None`
/// when the case is not that one (the table's complex arm serves it).
pub(crate) fn add_sub_as_pairs(
    kind: crate::ops::table::Binary,
    x: &Tensor,
    y: &crate::kernel::plan::Operand<'_>,
) -> Option<Result<Tensor>> {
    use crate::kernel::plan::Operand;
    use crate::ops::table::Binary;
    use crate::tensor::Scalar;
    if !matches!(kind, Binary::Add | Binary::Sub) || !x.device().is_cpu() {
        return None;
    }
    let run = |other: Tensor| -> Result<Tensor> {
        let px = x.view_as_real()?;
        let r = if kind == Binary::Add {
            px.add(&other)?
        } else {
            px.sub(&other)?
        };
        match r.view_as_complex() {
            Ok(z) => Ok(z),
            Err(_) => r.contiguous()?.view_as_complex(),
        }
    };
    match y {
        Operand::Tensor(t)
            if t.dtype() == x.dtype() && t.device().is_cpu() && t.ndim() <= x.ndim() =>
        {
            // The result has x's shape only when y broadcasts to it.
            let shape = broadcast_shapes(kind.name(), x.shape(), t.shape()).ok()?;
            if shape.as_slice() != x.shape() {
                return None;
            }
            Some(t.view_as_real().and_then(run))
        }
        Operand::Scalar(s @ (Scalar::Complex(..) | Scalar::Float(_) | Scalar::Int(_))) => {
            let (re, im) = s.to_complex();
            let part = x.dtype().to_real();
            Some(
                Tensor::from_vec(vec![re, im], &[2])
                    .and_then(|p| p.to_dtype(part))
                    .and_then(run),
            )
        }
        _ => None,
    }
}

/// The unary table ops whose complex form differs from the table's: `abs` (a real
/// result), `sign` (PyTorch refuses it for complex: `sgn` is the complex sign) and the
/// roundings (PyTorch's texts). `None` for the others, which the table serves.
pub(crate) fn unary_special(kind: Unary, x: &Tensor, in_place: bool) -> Option<Result<Tensor>> {
    match kind {
        Unary::Abs if in_place => Some(Err(Error::dtype(
            "abs_",
            "In-place abs is not supported for complex tensors.",
        ))),
        Unary::Abs => Some((|| {
            on_cpu("abs", x)?;
            let out = output_for(x.shape(), x.dtype().to_real(), &[x])?;
            crate::kernel::complex::abs_into(&out, x)?;
            Ok(out)
        })()),
        Unary::Floor | Unary::Ceil | Unary::Round | Unary::Trunc => Some(Err(Error::dtype(
            kind.name(),
            format!("{} is not supported for complex inputs", kind.name()),
        ))),
        Unary::Sign => Some(Err(Error::dtype(
            "sign",
            "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use torch.sgn instead.",
        ))),
        _ => None,
    }
}

/// `prod` of a complex tensor over `dims` (all when empty): the reduced dims moved last
/// into one contiguous copy, each row multiplied in sequence.
pub(crate) fn prod(t: &Tensor, dims: &[i64], keepdim: bool) -> Result<Tensor> {
    const OP: &str = "prod";
    on_cpu(OP, t)?;
    let n = t.ndim();
    let mut reduced = vec![dims.is_empty(); n];
    for &d in dims {
        let w = wrap_dim(OP, d, n)?;
        if reduced[w] {
            return Err(Error::value(
                OP,
                format!("dim {w} appears multiple times in the list of dims"),
            ));
        }
        reduced[w] = true;
    }
    let keep: Vec<usize> = (0..n).filter(|&d| !reduced[d]).collect();
    let gone: Vec<usize> = (0..n).filter(|&d| reduced[d]).collect();
    let perm: Vec<i64> = keep.iter().chain(&gone).map(|&d| d as i64).collect();
    let moved = t.permute(&perm)?.contiguous()?;
    let r: usize = gone.iter().map(|&d| t.shape()[d]).product();
    let keep_shape: Vec<usize> = keep.iter().map(|&d| t.shape()[d]).collect();
    let out = Tensor::zeros(&keep_shape, t.dtype())?;
    crate::kernel::complex::prod_rows(&out, &moved, r)?;
    if !keepdim {
        return Ok(out);
    }
    let shape: Vec<i64> = (0..n)
        .map(|d| if reduced[d] { 1 } else { t.shape()[d] as i64 })
        .collect();
    out.reshape(&shape)
}

/// `cumprod` of a complex tensor along (wrapped) `dim`: the dim moved last into one
/// contiguous copy, each row scanned in sequence, moved back.
pub(crate) fn cumprod(t: &Tensor, dim: usize) -> Result<Tensor> {
    on_cpu("cumprod", t)?;
    let last = t.ndim().saturating_sub(1) as i64;
    if t.ndim() == 0 {
        return t.contiguous_copy();
    }
    let moved = t.movedim(&[dim as i64], &[last])?.contiguous()?;
    let out = Tensor::zeros(moved.shape(), t.dtype())?;
    crate::kernel::complex::cumprod_rows(&out, &moved, t.shape()[dim])?;
    out.movedim(&[last], &[dim as i64])?.contiguous()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Complex32, Complex64};

    #[test]
    fn part_views_are_metadata_only() {
        let v: Vec<Complex64> = (0..12)
            .map(|i| Complex64::new(i as f64, -(i as f64)))
            .collect();
        let t = Tensor::from_vec(v, &[3, 4]).unwrap();
        let s = t.slice(1, Some(1), None, 2).unwrap().t().unwrap();
        let r = s.view_as_real().unwrap();
        assert_eq!(r.shape(), &[2, 3, 2]);
        assert_eq!(r.strides(), &[4, 8, 1]);
        assert_eq!(r.offset(), 2 * s.offset());
        assert_eq!(r.dtype(), DType::F64);
        assert!(r.same_storage(&t));
        let im = s.imag().unwrap();
        assert_eq!(im.offset(), 2 * s.offset() + 1);
        assert_eq!(
            im.to_vec::<f64>().unwrap(),
            [-1.0, -5.0, -9.0, -3.0, -7.0, -11.0]
        );
        let back = r.view_as_complex().unwrap();
        assert_eq!((back.shape(), back.strides()), (s.shape(), s.strides()));
        assert_eq!(back.offset(), s.offset());
    }

    #[test]
    fn conj_prod_and_cumprod() {
        let v = vec![
            Complex32::new(1.0, 1.0),
            Complex32::new(0.0, 2.0),
            Complex32::new(3.0, 0.0),
        ];
        let t = Tensor::from_vec(v.clone(), &[3]).unwrap();
        let c = t.conj().unwrap().to_vec::<Complex32>().unwrap();
        assert_eq!(c, v.iter().map(|z| z.conj()).collect::<Vec<_>>());
        let p = prod(&t, &[], false).unwrap().to_vec::<Complex32>().unwrap();
        assert_eq!(p, [v[0] * v[1] * v[2]]);
        let cp = cumprod(&t, 0).unwrap().to_vec::<Complex32>().unwrap();
        assert_eq!(cp, [v[0], v[0] * v[1], v[0] * v[1] * v[2]]);
        let empty = Tensor::zeros(&[2, 0], DType::C64).unwrap();
        let ones = prod(&empty, &[1], true).unwrap();
        assert_eq!(ones.shape(), &[2, 1]);
        assert_eq!(
            ones.to_vec::<Complex32>().unwrap(),
            [Complex32::new(1.0, 0.0); 2]
        );
        assert!(prod(&t, &[0, -1], false).is_err());
    }
}
