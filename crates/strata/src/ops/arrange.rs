//! Ops that place tensors' elements by position: `cat`/`stack` (joining), `roll`,
//! `repeat`/`tile`, `tril`/`triu`, `meshgrid` and `diff` (PyTorch's semantics and
//! messages).
//!
//! None of them has a loop of its own. `cat`, `stack`, `roll` and `repeat` allocate the
//! output and fill it with the backend's strided copy, one call per input (or per block)
//! into a view of the output, and record their own backward (views of the output
//! gradient, or a sum for `repeat`); `tril`/`triu` are a `where` over a broadcast index
//! comparison, `meshgrid` expanded views and `diff` a subtraction of two narrows, so their
//! gradients come from those ops.

use crate::autograd::{needs_grad, no_grad, record1};
use crate::backend::backend_of;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::plan::promote_types;
use crate::layout::wrap_dim;
use crate::tensor::{Scalar, Tensor, MAX_NDIM};

/// The output `out` ← `src` (cast and broadcast), through the backend's copy; `out` is a
/// view of a fresh tensor, so nothing overlaps.
fn place(op: &'static str, out: &Tensor, src: &Tensor) -> Result<()> {
    if out.numel() == 0 {
        return Ok(());
    }
    // backend seam
    backend_of(op, &[out, src])?.copy(out, src)
}

/// A fresh tensor for an op's output: on the inputs' device, contiguous, not zeroed
/// (every element is placed).
fn fresh(op: &'static str, shape: &[usize], dtype: DType, like: &[&Tensor]) -> Result<Tensor> {
    let device = crate::backend::common_device(like);
    Tensor::alloc_uninit_on(op, shape, dtype, device)
}

/// The promoted dtype of `tensors` (PyTorch's `result_type` over tensors with dims).
fn promoted(tensors: &[&Tensor]) -> Result<DType> {
    let mut dt = tensors[0].dtype();
    for t in &tensors[1..] {
        dt = promote_types(dt, t.dtype())?;
    }
    Ok(dt)
}

/// # Joining and placing
impl Tensor {
    /// The tensors joined along `dim` (PyTorch's `cat`, NumPy's `concatenate`): every
    /// other dim must agree; the dtype is the inputs' promoted one. 1-D tensors of shape
    /// `[0]` are skipped (PyTorch's legacy rule).
    ///
    /// ```
    /// use strata::Tensor;
    /// let a = Tensor::from_vec(vec![1i32, 2], &[1, 2])?;
    /// let b = Tensor::from_vec(vec![3i32, 4, 5, 6], &[2, 2])?;
    /// let c = Tensor::cat(&[&a, &b], 0)?;
    /// assert_eq!((c.shape(), c.to_vec::<i32>()?), (&[3, 2][..], vec![1, 2, 3, 4, 5, 6]));
    /// # Ok::<(), strata::Error>(())
    /// ```
    ///
    /// # Errors
    /// An empty list; a 0-d tensor; tensors with different numbers of dims or sizes
    /// outside `dim`; `dim` out of range; tensors on different devices.
    pub fn cat(tensors: &[&Tensor], dim: i64) -> Result<Tensor> {
        const OP: &str = "cat";
        if tensors.is_empty() {
            return Err(Error::value(
                OP,
                "torch.cat(): expected a non-empty list of Tensors",
            ));
        }
        let dtype = promoted(tensors)?;
        let skipped = |t: &Tensor| t.ndim() == 1 && t.shape()[0] == 0;
        let kept: Vec<usize> = (0..tensors.len())
            .filter(|&i| !skipped(tensors[i]))
            .collect();
        let Some(&first) = kept.first() else {
            return fresh(OP, &[0], dtype, tensors);
        };
        let r = tensors[first];
        if let Some(p) = tensors.iter().position(|t| t.ndim() == 0) {
            return Err(Error::shape(
                OP,
                format!("zero-dimensional tensor (at position {p}) cannot be concatenated"),
            ));
        }
        let d = wrap_dim(OP, dim, r.ndim())?;
        let mut total = 0usize;
        for &i in &kept {
            let t = tensors[i];
            if t.ndim() != r.ndim() {
                return Err(Error::shape(
                    OP,
                    format!(
                        "Tensors must have same number of dimensions: got {} and {}",
                        r.ndim(),
                        t.ndim()
                    ),
                ));
            }
            for k in (0..r.ndim()).filter(|&k| k != d) {
                if t.shape()[k] != r.shape()[k] {
                    return Err(Error::shape(
                        OP,
                        format!(
                            "Sizes of tensors must match except in dimension {d}. Expected size {} but got size {} for tensor number {i} in the list.",
                            r.shape()[k],
                            t.shape()[k]
                        ),
                    ));
                }
            }
            total = total.checked_add(t.shape()[d]).ok_or_else(|| {
                Error::shape(OP, "the joined size along the dim overflows".to_string())
            })?;
        }
        let mut shape = r.shape().to_vec();
        shape[d] = total;
        let out = fresh(OP, &shape, dtype, tensors)?;
        // Each input's (start, length) along `d`; skipped inputs get none.
        let mut spans: Vec<Option<(usize, usize)>> = vec![None; tensors.len()];
        let mut at = 0usize;
        for &i in &kept {
            let n = tensors[i].shape()[d];
            spans[i] = Some((at, n));
            place(OP, &out.narrow(d as i64, at as i64, n as i64)?, tensors[i])?;
            at += n;
        }
        if !needs_grad(tensors) {
            return Ok(out);
        }
        // PyTorch's `CatBackward0`: each input's slice of the output gradient.
        record1(
            "CatBackward0",
            tensors,
            out,
            &[],
            Box::new(move |_saved, grads, needs| {
                let g = &grads[0];
                spans
                    .iter()
                    .zip(needs)
                    .map(|(span, &need)| match span {
                        Some((s, n)) if need => Ok(Some(g.narrow(d as i64, *s as i64, *n as i64)?)),
                        _ => Ok(None),
                    })
                    .collect()
            }),
        )
    }

    /// The tensors, all of one shape, joined along a new dim `dim` (PyTorch's `stack`).
    ///
    /// # Errors
    /// An empty list; tensors of different shapes; `dim` outside `-(ndim+1)..=ndim`.
    pub fn stack(tensors: &[&Tensor], dim: i64) -> Result<Tensor> {
        const OP: &str = "stack";
        let Some(r) = tensors.first() else {
            return Err(Error::value(OP, "stack expects a non-empty TensorList"));
        };
        for (i, t) in tensors.iter().enumerate() {
            if t.shape() != r.shape() {
                return Err(Error::shape(
                    OP,
                    format!(
                        "stack expects each tensor to be equal size, but got {:?} at entry 0 and {:?} at entry {i}",
                        r.shape(),
                        t.shape()
                    ),
                ));
            }
        }
        if r.ndim() + 1 > MAX_NDIM {
            return Err(Error::shape(
                OP,
                format!("tensors have at most {MAX_NDIM} dims"),
            ));
        }
        let d = wrap_dim(OP, dim, r.ndim() + 1)?;
        let dtype = promoted(tensors)?;
        let mut shape = r.shape().to_vec();
        shape.insert(d, tensors.len());
        let out = fresh(OP, &shape, dtype, tensors)?;
        for (i, t) in tensors.iter().enumerate() {
            place(OP, &out.select(d as i64, i as i64)?, t)?;
        }
        if !needs_grad(tensors) {
            return Ok(out);
        }
        // PyTorch's `StackBackward0`: each input's slice of the output gradient.
        record1(
            "StackBackward0",
            tensors,
            out,
            &[],
            Box::new(move |_saved, grads, needs| {
                let g = &grads[0];
                (0..needs.len())
                    .map(|i| {
                        if needs[i] {
                            Ok(Some(g.select(d as i64, i as i64)?))
                        } else {
                            Ok(None)
                        }
                    })
                    .collect()
            }),
        )
    }

    /// The elements shifted by `shifts[i]` along `dims[i]`, wrapping around (PyTorch's
    /// `roll`, NumPy's `roll`). With no `dims`, the flattened tensor is rolled by the one
    /// shift and the shape restored.
    ///
    /// ```
    /// let x = strata::Tensor::from_vec(vec![1i32, 2, 3, 4], &[4])?;
    /// assert_eq!(x.roll(&[1], &[])?.to_vec::<i32>()?, vec![4, 1, 2, 3]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    ///
    /// # Errors
    /// No shifts; shifts and dims of different lengths (or several shifts without dims);
    /// a dim out of range.
    pub fn roll(&self, shifts: &[i64], dims: &[i64]) -> Result<Tensor> {
        const OP: &str = "roll";
        if shifts.is_empty() {
            return Err(Error::value(OP, "`shifts` required"));
        }
        if dims.is_empty() {
            if shifts.len() != 1 {
                return Err(Error::value(
                    OP,
                    format!(
                        "shifts and dimensions must align. shifts: {}, dims:0",
                        shifts.len()
                    ),
                ));
            }
            let shape: Vec<i64> = self.shape().iter().map(|&n| n as i64).collect();
            return self.reshape(&[-1])?.roll(shifts, &[0])?.view(&shape);
        }
        if shifts.len() != dims.len() {
            return Err(Error::value(
                OP,
                format!(
                    "shifts and dimensions must align. shifts: {}, dims:{}",
                    shifts.len(),
                    dims.len()
                ),
            ));
        }
        let ds: Vec<usize> = dims
            .iter()
            .map(|&d| wrap_dim(OP, d, self.ndim()))
            .collect::<Result<_>>()?;
        let out = {
            let _off = no_grad();
            let mut cur = self.clone();
            for (&d, &s) in ds.iter().zip(shifts) {
                cur = roll_one(&cur, d, s)?;
            }
            cur
        };
        if !needs_grad(&[self]) {
            return Ok(out);
        }
        // PyTorch's `RollBackward0`: the gradient rolled back.
        let (back, dims) = (
            shifts.iter().map(|&s| s.wrapping_neg()).collect::<Vec<_>>(),
            dims.to_vec(),
        );
        record1(
            "RollBackward0",
            &[self],
            out,
            &[],
            Box::new(move |_saved, grads, _needs| Ok(vec![Some(grads[0].roll(&back, &dims)?)])),
        )
    }

    /// The tensor repeated `sizes[i]` times along each dim (PyTorch's `repeat`, NumPy's
    /// `tile` with as many reps as dims): `sizes` may be longer than the tensor's dims
    /// (new leading dims), not shorter.
    ///
    /// ```
    /// let x = strata::Tensor::from_vec(vec![1i32, 2], &[2])?;
    /// let r = x.repeat(&[2, 2])?;
    /// assert_eq!((r.shape(), r.to_vec::<i32>()?), (&[2, 4][..], vec![1, 2, 1, 2, 1, 2, 1, 2]));
    /// # Ok::<(), strata::Error>(())
    /// ```
    ///
    /// # Errors
    /// Fewer sizes than dims; a negative size; a result too large.
    pub fn repeat(&self, sizes: &[i64]) -> Result<Tensor> {
        const OP: &str = "repeat";
        if sizes.len() < self.ndim() {
            return Err(Error::shape(
                OP,
                "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor".to_string(),
            ));
        }
        if sizes.iter().any(|&r| r < 0) {
            return Err(Error::shape(
                OP,
                format!(
                    "Trying to create tensor with negative dimension {}: {sizes:?}",
                    sizes.iter().find(|&&r| r < 0).copied().unwrap_or(-1)
                ),
            ));
        }
        let m = sizes.len();
        let mut padded = vec![1usize; m - self.ndim()];
        padded.extend_from_slice(self.shape());
        let reps: Vec<usize> = sizes.iter().map(|&r| r as usize).collect();
        let mut shape = Vec::with_capacity(m);
        for (&s, &r) in padded.iter().zip(&reps) {
            shape.push(s.checked_mul(r).ok_or_else(|| {
                Error::shape(OP, format!("the repeated size overflows: {s} × {r}"))
            })?);
        }
        crate::layout::checked_numel(OP, &shape)?;
        // The output viewed as [r0, s0, r1, s1, …] (only dims with both sides > 1 split),
        // written from the input expanded along the r dims.
        let (mut split, mut src_shape, mut src_view) = (Vec::new(), Vec::new(), Vec::new());
        let mut sum_dims: Vec<i64> = Vec::new();
        for (&s, &r) in padded.iter().zip(&reps) {
            if r != 1 && s != 1 {
                sum_dims.push(split.len() as i64);
                split.push(r);
                src_view.push(1);
                src_shape.push(r);
            }
            split.push(if r != 1 && s != 1 { s } else { s * r });
            src_view.push(s);
            src_shape.push(if r != 1 && s != 1 { s } else { s * r });
        }
        if split.len() > MAX_NDIM {
            return Err(Error::shape(
                OP,
                format!(
                    "repeating {} dims needs {} dims, more than {MAX_NDIM}",
                    m,
                    split.len()
                ),
            ));
        }
        let out = fresh(OP, &shape, self.dtype(), &[self])?;
        {
            let _off = no_grad();
            let as_i64 = |v: &[usize]| v.iter().map(|&n| n as i64).collect::<Vec<i64>>();
            let src = self
                .reshape(&as_i64(&src_view))?
                .expand(&as_i64(&src_shape))?;
            place(OP, &out.view(&as_i64(&split))?, &src)?;
        }
        if !needs_grad(&[self]) {
            return Ok(out);
        }
        // PyTorch's `RepeatBackward0`: the copies' gradients summed back.
        let (input_shape, split): (Vec<i64>, Vec<i64>) = (
            self.shape().iter().map(|&n| n as i64).collect(),
            split.iter().map(|&n| n as i64).collect(),
        );
        let grid: Vec<i64> = padded
            .iter()
            .zip(&reps)
            .map(|(&s, &r)| (s * r) as i64)
            .collect();
        record1(
            "RepeatBackward0",
            &[self],
            out,
            &[],
            Box::new(move |_saved, grads, _needs| {
                let g = grads[0].reshape(&grid)?.reshape(&split)?;
                let mut s = if sum_dims.is_empty() {
                    g
                } else {
                    g.sum(&sum_dims, false)?
                };
                // Dims of size 1 repeated r times: summed too.
                let padded_len = s.ndim();
                let target_padded: Vec<i64> = {
                    let mut v = vec![1i64; padded_len - input_shape.len()];
                    v.extend_from_slice(&input_shape);
                    v
                };
                let ones: Vec<i64> = (0..padded_len as i64)
                    .filter(|&k| target_padded[k as usize] == 1 && s.shape()[k as usize] != 1)
                    .collect();
                if !ones.is_empty() {
                    s = s.sum(&ones, true)?;
                }
                Ok(vec![Some(s.reshape(&input_shape)?)])
            }),
        )
    }

    /// NumPy's `tile` (and PyTorch's): [`repeat`](Self::repeat) with `reps` padded with
    /// leading ones to the tensor's dims.
    ///
    /// # Errors
    /// As [`repeat`](Self::repeat).
    pub fn tile(&self, reps: &[i64]) -> Result<Tensor> {
        let mut r = vec![1i64; self.ndim().saturating_sub(reps.len())];
        r.extend_from_slice(reps);
        self.repeat(&r)
    }

    /// The lower triangle of the last two dims (`col − row ≤ diagonal`), zeros elsewhere
    /// (PyTorch's `tril`, NumPy's `tril`).
    ///
    /// # Errors
    /// Fewer than two dims.
    pub fn tril(&self, diagonal: i64) -> Result<Tensor> {
        triangle("tril", self, diagonal, true)
    }

    /// The upper triangle of the last two dims (`col − row ≥ diagonal`), zeros elsewhere.
    ///
    /// # Errors
    /// Fewer than two dims.
    pub fn triu(&self, diagonal: i64) -> Result<Tensor> {
        triangle("triu", self, diagonal, false)
    }

    /// Coordinate grids of 0-d or 1-D tensors (PyTorch's `meshgrid`): output `i` is
    /// tensor `i` expanded along the grid (a view, no copy). `xy` indexing swaps the first
    /// two grid dims (NumPy's default).
    ///
    /// # Errors
    /// An empty list; a tensor with more than one dim; tensors of different dtypes or
    /// devices.
    pub fn meshgrid(tensors: &[&Tensor], xy: bool) -> Result<Vec<Tensor>> {
        const OP: &str = "meshgrid";
        let Some(first) = tensors.first() else {
            return Err(Error::value(
                OP,
                "torch.meshgrid: Expected at least one tensor in the tensor list",
            ));
        };
        for t in tensors {
            if t.ndim() > 1 {
                return Err(Error::shape(
                    OP,
                    format!(
                        "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {:?}",
                        t.shape()
                    ),
                ));
            }
            if t.dtype() != first.dtype() {
                return Err(Error::dtype(
                    OP,
                    "torch.meshgrid: Expected all tensors in the tensor list to have the same dtype",
                ));
            }
            if t.device() != first.device() {
                return Err(Error::device_mismatch(OP, first.device(), t.device()));
            }
        }
        let n = tensors.len();
        // Grid position of each input.
        let pos = |i: usize| if xy && n >= 2 && i < 2 { 1 - i } else { i };
        let mut grid = vec![0i64; n];
        for (i, t) in tensors.iter().enumerate() {
            grid[pos(i)] = t.numel() as i64;
        }
        tensors
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut s = vec![1i64; n];
                s[pos(i)] = -1;
                t.reshape(&s)?.expand(&grid)
            })
            .collect()
    }

    /// The `n`-th forward difference along `dim` (PyTorch's `diff`, NumPy's `diff`):
    /// `out[i] = x[i+1] − x[i]` (`!=` for `bool`), applied `n` times, after joining
    /// `prepend` and `append` along `dim`.
    ///
    /// # Errors
    /// A 0-d tensor; `dim` out of range; `prepend`/`append` of another number of dims or
    /// other sizes outside `dim`.
    pub fn diff(
        &self,
        n: usize,
        dim: i64,
        prepend: Option<&Tensor>,
        append: Option<&Tensor>,
    ) -> Result<Tensor> {
        const OP: &str = "diff";
        if self.ndim() == 0 {
            return Err(Error::shape(
                OP,
                "diff expects input to be at least one-dimensional",
            ));
        }
        let d = wrap_dim(OP, dim, self.ndim())? as i64;
        let mut parts: Vec<&Tensor> = Vec::with_capacity(3);
        parts.extend(prepend);
        parts.push(self);
        parts.extend(append);
        for p in &parts {
            if p.ndim() != self.ndim() {
                return Err(Error::shape(
                    OP,
                    format!(
                        "diff expects prepend or append to be the same dimension as input, got {} and {}",
                        p.ndim(),
                        self.ndim()
                    ),
                ));
            }
        }
        let mut x = if parts.len() > 1 {
            Tensor::cat(&parts, d)?
        } else {
            self.clone()
        };
        for _ in 0..n {
            let len = x.shape()[d as usize];
            if len == 0 {
                break;
            }
            let (hi, lo) = (
                x.narrow(d, 1, len as i64 - 1)?,
                x.narrow(d, 0, len as i64 - 1)?,
            );
            x = if x.dtype() == DType::Bool {
                hi.ne(&lo)?
            } else {
                hi.sub(&lo)?
            };
        }
        if n == 0 {
            return x.clone_data();
        }
        Ok(x)
    }
}

/// `x` rolled by `shift` along `d`: two block copies into a fresh tensor.
fn roll_one(x: &Tensor, d: usize, shift: i64) -> Result<Tensor> {
    const OP: &str = "roll";
    let n = x.shape()[d];
    let out = fresh(OP, x.shape(), x.dtype(), &[x])?;
    if n == 0 {
        return Ok(out);
    }
    let s = shift.rem_euclid(n as i64) as usize;
    let d64 = d as i64;
    place(
        OP,
        &out.narrow(d64, s as i64, (n - s) as i64)?,
        &x.narrow(d64, 0, (n - s) as i64)?,
    )?;
    if s > 0 {
        place(
            OP,
            &out.narrow(d64, 0, s as i64)?,
            &x.narrow(d64, (n - s) as i64, s as i64)?,
        )?;
    }
    Ok(out)
}

/// `tril` (`lower`) or `triu`: `where(col − row ≶ diagonal, x, 0)` over the last two dims.
fn triangle(op: &'static str, x: &Tensor, diagonal: i64, lower: bool) -> Result<Tensor> {
    let nd = x.ndim();
    if nd < 2 {
        return Err(Error::shape(
            op,
            format!("{op}: input tensor must have at least 2 dimensions"),
        ));
    }
    let (rows, cols) = (x.shape()[nd - 2], x.shape()[nd - 1]);
    let mask = {
        let _off = no_grad();
        let on = |n: usize, shape: [i64; 2]| -> Result<Tensor> {
            let t = Tensor::arange(0, n as i64, 1, DType::I64)?.view(&shape)?;
            if x.device().is_cpu() {
                Ok(t)
            } else {
                t.to_device(x.device())
            }
        };
        let r = on(rows, [rows as i64, 1])?;
        let c = on(cols, [1, cols as i64])?;
        let diff = c.sub(&r)?;
        if lower {
            diff.le(diagonal)?
        } else {
            diff.ge(diagonal)?
        }
    };
    let zero = if x.dtype() == DType::Bool {
        Scalar::Bool(false)
    } else {
        Scalar::Int(0)
    };
    let out = Tensor::where_cond(&mask, x, zero)?;
    // `where` promotes a bool tensor with an int zero; keep the input's dtype.
    if out.dtype() != x.dtype() {
        return out.to_dtype(x.dtype());
    }
    Ok(out)
}
