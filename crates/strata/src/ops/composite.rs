//! Ops composed of other ops (PyTorch's semantics and messages): `softmax`,
//! `log_softmax`, `isclose`/`allclose`, `cross`, `cumulative_sum`, `masked_fill`. They
//! add no loop and record no node of their own: their gradients are those of the ops they
//! are made of.

use crate::autograd::no_grad;
use crate::dtype::DType;
use crate::error::{list, Error, Result};
use crate::kernel::plan::Operand;
use crate::layout::broadcast::broadcast_shapes;
use crate::layout::wrap_dim;
use crate::tensor::{Scalar, Tensor};

/// `x` cast to `dtype` when given; the result must be a floating-point tensor.
fn float_input(op: &'static str, x: &Tensor, dtype: Option<DType>) -> Result<Tensor> {
    let x = match dtype {
        Some(dt) if dt != x.dtype() => x.to_dtype(dt)?,
        _ => x.clone(),
    };
    if !x.dtype().is_float() {
        return Err(Error::dtype(
            op,
            format!(
                "{op}: expected a floating point tensor, got {} (pass dtype= to convert it)",
                x.dtype()
            ),
        ));
    }
    Ok(x)
}

/// `f(x viewed with at least one dim, dim)`, the result viewed back to `x`'s shape.
fn along(
    op: &'static str,
    x: &Tensor,
    dim: i64,
    f: impl FnOnce(&Tensor, i64) -> Result<Tensor>,
) -> Result<Tensor> {
    if x.ndim() == 0 {
        wrap_dim(op, dim, 1)?;
        return f(&x.reshape(&[1])?, 0)?.reshape(&[]);
    }
    let d = wrap_dim(op, dim, x.ndim())? as i64;
    f(x, d)
}

/// `x − max(x)` along `d` (the max taken without a graph: the results are invariant to
/// the shift, so its gradient would cancel), or `None` for an empty `x`.
fn shifted(x: &Tensor, d: i64) -> Result<Option<Tensor>> {
    if x.numel() == 0 {
        return Ok(None);
    }
    let m = {
        let _off = no_grad();
        x.amax(&[d], true)?
    };
    x.sub(&m).map(Some)
}

/// `masked_fill`'s checks, and its value as a 0-d tensor of `dtype`: a number (or a 0-d
/// tensor's value) that `dtype` cannot hold is PyTorch's "value cannot be converted"
/// error, as for any element write, never wrapped or clipped; a 0-d tensor is cast
/// keeping its graph.
fn masked_value(mask: &Tensor, value: Operand<'_>, dtype: DType) -> Result<Tensor> {
    const OP: &str = "masked_fill";
    if mask.dtype() != DType::Bool {
        return Err(Error::dtype(
            OP,
            format!(
                "masked_fill_ only supports boolean masks, but got mask with dtype {}",
                mask.dtype().c_name()
            ),
        ));
    }
    match value {
        Operand::Scalar(s) => {
            s.check_fits(OP, dtype)?;
            Tensor::scalar_of(s, dtype)
        }
        Operand::Tensor(t) if t.ndim() != 0 => Err(Error::shape(
            OP,
            format!(
                "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
                t.ndim()
            ),
        )),
        Operand::Tensor(t) => {
            if t.numel() == 1 && t.dtype() != dtype {
                t.item()?.check_fits(OP, dtype)?;
            }
            t.to_dtype(dtype)
        }
    }
}

/// # Composite ops
impl Tensor {
    /// `value` where `mask` is true, this tensor's element elsewhere (PyTorch's
    /// `masked_fill`): the result has this tensor's dtype (`value`, a number or a 0-d
    /// tensor, is converted to it) and the broadcast shape of this tensor and `mask`.
    /// Differentiable in this tensor and a tensor `value`.
    ///
    /// # Errors
    /// A mask that is not bool, a value tensor with dims (PyTorch's texts), shapes that
    /// do not broadcast, a number the dtype cannot hold.
    pub fn masked_fill<'a>(&self, mask: &Tensor, value: impl Into<Operand<'a>>) -> Result<Tensor> {
        let v = masked_value(mask, value.into(), self.dtype())?;
        Tensor::where_cond(mask, &v, self)
    }

    /// In-place [`masked_fill`](Self::masked_fill): `mask` must broadcast to this tensor's
    /// shape. Returns this tensor.
    ///
    /// # Errors
    /// As [`masked_fill`](Self::masked_fill); a mask whose broadcast with this tensor is
    /// larger than it; the in-place rules of autograd.
    pub fn masked_fill_<'a>(&self, mask: &Tensor, value: impl Into<Operand<'a>>) -> Result<&Self> {
        let v = masked_value(mask, value.into(), self.dtype())?;
        let shape = broadcast_shapes("masked_fill_", self.shape(), mask.shape())?;
        if shape.as_slice() != self.shape() {
            return Err(Error::shape(
                "masked_fill_",
                format!(
                    "output with shape {} doesn't match the broadcast shape {}",
                    list(self.shape()),
                    list(&shape)
                ),
            ));
        }
        self.copy_(&Tensor::where_cond(mask, &v, self)?)?;
        Ok(self)
    }

    /// `exp(x) / Σ exp(x)` along `dim` (PyTorch's `softmax`), computed as
    /// `exp(x − max) / Σ exp(x − max)` so large inputs do not overflow. `dtype` casts the
    /// input first.
    ///
    /// ```
    /// let x = strata::Tensor::from_vec(vec![1000.0f32, 1000.0], &[2])?;
    /// assert_eq!(x.softmax(0, None)?.to_vec::<f32>()?, vec![0.5, 0.5]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    ///
    /// # Errors
    /// `dim` out of range; a tensor that is not floating point (with no `dtype`).
    pub fn softmax(&self, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
        const OP: &str = "softmax";
        let x = float_input(OP, self, dtype)?;
        along(OP, &x, dim, |x, d| match shifted(x, d)? {
            None => x.clone_data(),
            Some(s) => {
                let e = s.exp()?;
                e.div(&e.sum(&[d], true)?)
            }
        })
    }

    /// `log(softmax(x))` along `dim` (PyTorch's `log_softmax`), computed as
    /// `(x − max) − log Σ exp(x − max)`: exact where `softmax` underflows.
    ///
    /// # Errors
    /// As [`softmax`](Self::softmax).
    pub fn log_softmax(&self, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
        const OP: &str = "log_softmax";
        let x = float_input(OP, self, dtype)?;
        along(OP, &x, dim, |x, d| match shifted(x, d)? {
            None => x.clone_data(),
            Some(s) => s.sub(&s.exp()?.sum(&[d], true)?.log()?),
        })
    }

    /// Whether each pair of elements is close (PyTorch's `isclose`):
    /// `|a − b| ≤ atol + rtol·|b|`, or equal (infinities of one sign included), or both
    /// NaN with `equal_nan`. The tensors broadcast and must have one dtype; integers are
    /// compared in float32.
    ///
    /// # Errors
    /// Different dtypes; a negative tolerance; shapes that do not broadcast.
    pub fn isclose(&self, other: &Tensor, rtol: f64, atol: f64, equal_nan: bool) -> Result<Tensor> {
        const OP: &str = "isclose";
        if self.dtype() != other.dtype() {
            return Err(Error::dtype(
                OP,
                format!(
                    "isclose(): expected self and other to have the same dtype, but got self.dtype = {} and other.dtype = {}",
                    self.dtype(),
                    other.dtype()
                ),
            ));
        }
        if rtol.is_nan() || rtol < 0.0 {
            return Err(Error::value(
                OP,
                format!("isclose(): rtol must be greater than or equal to zero, but got {rtol}"),
            ));
        }
        if atol.is_nan() || atol < 0.0 {
            return Err(Error::value(
                OP,
                format!("isclose(): atol must be greater than or equal to zero, but got {atol}"),
            ));
        }
        let _off = no_grad();
        let mut close = self.eq(other)?;
        if equal_nan && self.dtype().is_float() {
            close = close.logical_or(&self.isnan()?.logical_and(&other.isnan()?)?)?;
        }
        if (rtol == 0.0 && atol == 0.0) || self.dtype() == DType::Bool {
            return Ok(close);
        }
        let (a, b) = if self.dtype().is_float() {
            (self.clone(), other.clone())
        } else {
            (self.to_dtype(DType::F32)?, other.to_dtype(DType::F32)?)
        };
        let allowed = b.mul(rtol)?.abs()?.add(atol)?;
        let actual = a.sub(&b)?.abs()?;
        close.logical_or(&actual.isfinite()?.logical_and(&actual.le(&allowed)?)?)
    }

    /// Whether every pair of elements is close ([`isclose`](Self::isclose) over all).
    ///
    /// # Errors
    /// As [`isclose`](Self::isclose).
    pub fn allclose(&self, other: &Tensor, rtol: f64, atol: f64, equal_nan: bool) -> Result<bool> {
        let close = self.isclose(other, rtol, atol, equal_nan)?;
        Ok(close.all(&[], false)?.item()? == Scalar::Bool(true))
    }

    /// The cross product of 3-vectors along `dim` (PyTorch's `cross`; `None`: the first
    /// dim of size 3), the two tensors broadcast together and promoted.
    ///
    /// ```
    /// let x = strata::Tensor::from_vec(vec![1.0f32, 0.0, 0.0], &[3])?;
    /// let y = strata::Tensor::from_vec(vec![0.0f32, 1.0, 0.0], &[3])?;
    /// assert_eq!(x.cross(&y, None)?.to_vec::<f32>()?, vec![0.0, 0.0, 1.0]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    ///
    /// # Errors
    /// Shapes that do not broadcast; no dim of size 3 (with `None`); a `dim` out of range
    /// or not of size 3.
    pub fn cross(&self, other: &Tensor, dim: Option<i64>) -> Result<Tensor> {
        const OP: &str = "cross";
        let shape = crate::layout::broadcast::broadcast_all(OP, &[self.shape(), other.shape()])?;
        let (a, b) = (self.broadcast_to(&shape)?, other.broadcast_to(&shape)?);
        let d = match dim {
            Some(d) => wrap_dim(OP, d, shape.len().max(1))?,
            None => shape
                .iter()
                .position(|&n| n == 3)
                .ok_or_else(|| Error::shape(OP, "no dimension of size 3 in input"))?,
        };
        if shape.get(d) != Some(&3) {
            return Err(Error::shape(
                OP,
                format!(
                    "linalg.cross: inputs dimension {d} must have length 3. Got {} and {}",
                    self.shape().get(d).copied().unwrap_or(0),
                    other.shape().get(d).copied().unwrap_or(0)
                ),
            ));
        }
        let d = d as i64;
        let (a0, a1, a2) = (a.narrow(d, 0, 1)?, a.narrow(d, 1, 1)?, a.narrow(d, 2, 1)?);
        let (b0, b1, b2) = (b.narrow(d, 0, 1)?, b.narrow(d, 1, 1)?, b.narrow(d, 2, 1)?);
        let c0 = a1.mul(&b2)?.sub(&a2.mul(&b1)?)?;
        let c1 = a2.mul(&b0)?.sub(&a0.mul(&b2)?)?;
        let c2 = a0.mul(&b1)?.sub(&a1.mul(&b0)?)?;
        Tensor::cat(&[&c0, &c1, &c2], d)
    }

    /// The running sums along `dim` (the array API's `cumulative_sum`): `dim` may be
    /// omitted only for a 1-D tensor; `dtype` casts first (integers otherwise sum in
    /// int64, as [`cumsum`](Self::cumsum)); `include_initial` puts a zero in front.
    ///
    /// # Errors
    /// No `dim` for a tensor that is not 1-D; `dim` out of range.
    pub fn cumulative_sum(
        &self,
        dim: Option<i64>,
        dtype: Option<DType>,
        include_initial: bool,
    ) -> Result<Tensor> {
        const OP: &str = "cumulative_sum";
        let d = match dim {
            Some(d) => wrap_dim(OP, d, self.ndim())? as i64,
            None if self.ndim() == 1 => 0,
            None => {
                return Err(Error::value(
                    OP,
                    format!(
                        "cumulative_sum: dim must be given for a tensor of {} dims",
                        self.ndim()
                    ),
                ))
            }
        };
        let x = match dtype {
            Some(dt) if dt != self.dtype() => self.to_dtype(dt)?,
            _ => self.clone(),
        };
        let s = x.cumsum(d)?;
        if !include_initial {
            return Ok(s);
        }
        let mut zs = s.shape().to_vec();
        zs[d as usize] = 1;
        let z = Tensor::zeros_on(&zs, s.dtype(), s.device())?;
        Tensor::cat(&[&z, &s], d)
    }
}
