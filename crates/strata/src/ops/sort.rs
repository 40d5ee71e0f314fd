//! Sorting and searching: `sort`, `argsort`, `topk`, `unique`, `searchsorted`
//! (PyTorch's semantics and messages). The op layer checks arguments and allocates; the
//! loops are the backend's `sort` and `searchsorted` (`kernel/sort.rs` on the CPU: every
//! sort is stable, NaN sorts as the largest value). `unique` is a sort followed by
//! elementwise ops, a mask selection and a scatter.

use crate::autograd::{needs_grad, no_grad, record};
use crate::backend::backend_of;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::plan::promote_types;
use crate::layout::wrap_dim;
use crate::tensor::Tensor;

/// The first `k` (all, when `None`) of each lane along `dim`, sorted, and their
/// positions; the values are recorded for autograd as `name`.
fn sorted_lanes(
    op: &'static str,
    name: &'static str,
    x: &Tensor,
    dim: i64,
    descending: bool,
    k: Option<usize>,
) -> Result<(Tensor, Tensor)> {
    let nd = x.ndim();
    let d = wrap_dim(op, dim, nd.max(1))?;
    let n = if nd == 0 { 1 } else { x.shape()[d] };
    let k = k.unwrap_or(n);
    if k > n {
        return Err(Error::index(op, "selected index k out of range"));
    }
    let (values, indices) = if nd == 0 && k == 1 {
        let _off = no_grad();
        (
            x.clone_data()?,
            Tensor::zeros_on(&[], DType::I64, x.device())?,
        )
    } else if nd == 0 {
        let _off = no_grad();
        (
            x.reshape(&[1])?.narrow(0, 0, 0)?.clone_data()?,
            Tensor::zeros_on(&[0], DType::I64, x.device())?,
        )
    } else {
        let mut shape = x.shape().to_vec();
        shape[d] = k;
        let values = Tensor::alloc_uninit_on(op, &shape, x.dtype(), x.device())?;
        let indices = Tensor::alloc_uninit_on(op, &shape, DType::I64, x.device())?;
        if values.numel() > 0 {
            // backend seam
            backend_of(op, &[x])?.sort(op, Some(&values), &indices, x, d, descending)?;
        }
        (values, indices)
    };
    if !needs_grad(&[x]) {
        return Ok((values, indices));
    }
    // PyTorch's `SortBackward0`/`TopkBackward0`: the gradient put back at the positions
    // the values came from.
    let (idx, shape) = (indices.clone(), x.shape().to_vec());
    let mut out = record(
        name,
        &[x],
        vec![values],
        &[],
        Box::new(move |_saved, grads, _needs| {
            let g = &grads[0];
            if shape.is_empty() {
                return Ok(vec![Some(g.clone())]);
            }
            let z = Tensor::zeros_on(&shape, g.dtype(), g.device())?;
            Ok(vec![Some(z.scatter(d as i64, &idx, g)?)])
        }),
    )?;
    Ok((out.pop().expect("one output"), indices))
}

/// For `n` sorted elements (or slices) whose original positions are `order` and where
/// `first[i]` marks the start of a new value: the inverse (each original element's value
/// number, 1-D) and the counts of each value, as asked.
fn inverse_and_counts(
    first: &Tensor,
    order: &Tensor,
    return_inverse: bool,
    return_counts: bool,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let (n, dev) = (first.numel(), first.device());
    let inverse = if return_inverse {
        let inv = Tensor::zeros_on(&[n], DType::I64, dev)?;
        if n > 0 {
            let rank = first.to_dtype(DType::I64)?.cumsum(0)?.sub(1)?;
            inv.scatter_(0, order, &rank)?;
        }
        Some(inv)
    } else {
        None
    };
    let counts = if return_counts {
        let starts = first.nonzero()?.reshape(&[-1])?;
        let end = Tensor::full_on(&[1], n as i64, DType::I64, dev)?;
        Some(Tensor::cat(&[&starts, &end], 0)?.diff(1, 0, None, None)?)
    } else {
        None
    };
    Ok((inverse, counts))
}

/// # Sorting and searching
impl Tensor {
    /// The elements sorted along `dim` and their original positions (int64), PyTorch's
    /// `sort`. Equal elements keep their order (every sort is stable, so `stable` only
    /// documents the caller's need); NaN sorts as the largest value (last ascending,
    /// first descending).
    ///
    /// ```
    /// let x = strata::Tensor::from_vec(vec![3.0f32, 1.0, 2.0], &[3])?;
    /// let (v, i) = x.sort(-1, false, false)?;
    /// assert_eq!((v.to_vec::<f32>()?, i.to_vec::<i64>()?), (vec![1.0, 2.0, 3.0], vec![1, 2, 0]));
    /// # Ok::<(), strata::Error>(())
    /// ```
    ///
    /// # Errors
    /// `dim` out of range; a lane longer than `u32::MAX` elements.
    pub fn sort(&self, dim: i64, descending: bool, stable: bool) -> Result<(Tensor, Tensor)> {
        let _ = stable;
        sorted_lanes("sort", "SortBackward0", self, dim, descending, None)
    }

    /// The positions that sort this tensor along `dim` (the indices of
    /// [`sort`](Self::sort)).
    ///
    /// # Errors
    /// As [`sort`](Self::sort).
    pub fn argsort(&self, dim: i64, descending: bool, stable: bool) -> Result<Tensor> {
        const OP: &str = "argsort";
        let _ = stable;
        let nd = self.ndim();
        let d = wrap_dim(OP, dim, nd.max(1))?;
        if nd == 0 {
            return Tensor::zeros_on(&[], DType::I64, self.device());
        }
        let indices = Tensor::alloc_uninit_on(OP, self.shape(), DType::I64, self.device())?;
        if indices.numel() > 0 {
            // backend seam
            backend_of(OP, &[self])?.sort(OP, None, &indices, self, d, descending)?;
        }
        Ok(indices)
    }

    /// The `k` largest (or, with `largest = false`, smallest) elements along `dim`, in
    /// order, and their positions (PyTorch's `topk`; the result is always sorted, which
    /// `sorted = false` allows). Ties keep their original order.
    ///
    /// # Errors
    /// `k` larger than the dim; `dim` out of range.
    pub fn topk(
        &self,
        k: usize,
        dim: i64,
        largest: bool,
        sorted: bool,
    ) -> Result<(Tensor, Tensor)> {
        let _ = sorted;
        sorted_lanes("topk", "TopkBackward0", self, dim, largest, Some(k))
    }

    /// The distinct elements of the flattened tensor, ascending (PyTorch's `unique` with
    /// `sorted=True`; NaNs are each distinct, as they compare unequal), with, on request,
    /// the inverse (for each element, the position of its value in the result; this
    /// tensor's shape) and the counts.
    ///
    /// ```
    /// let x = strata::Tensor::from_vec(vec![2i32, 1, 2, 5], &[4])?;
    /// let (u, inv, counts) = x.unique(true, true)?;
    /// assert_eq!(u.to_vec::<i32>()?, vec![1, 2, 5]);
    /// assert_eq!(inv.unwrap().to_vec::<i64>()?, vec![1, 0, 1, 2]);
    /// assert_eq!(counts.unwrap().to_vec::<i64>()?, vec![1, 2, 1]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    ///
    /// # Errors
    /// A failed allocation.
    pub fn unique(
        &self,
        return_inverse: bool,
        return_counts: bool,
    ) -> Result<(Tensor, Option<Tensor>, Option<Tensor>)> {
        let _off = no_grad();
        let flat = self.reshape(&[-1])?;
        let n = flat.numel();
        let dev = self.device();
        if n == 0 {
            let inv = return_inverse
                .then(|| Tensor::zeros_on(self.shape(), DType::I64, dev))
                .transpose()?;
            let counts = return_counts
                .then(|| Tensor::zeros_on(&[0], DType::I64, dev))
                .transpose()?;
            return Ok((flat.clone_data()?, inv, counts));
        }
        let (sorted, order) = flat.sort(0, false, true)?;
        // `first[i]`: element i of the sorted run starts a new value.
        let head = Tensor::full_on(&[1], true, DType::Bool, dev)?;
        let first = if n > 1 {
            let changed =
                sorted
                    .narrow(0, 1, n as i64 - 1)?
                    .ne(&sorted.narrow(0, 0, n as i64 - 1)?)?;
            Tensor::cat(&[&head, &changed], 0)?
        } else {
            head
        };
        let uniq = sorted.masked_select(&first)?;
        let (inverse, counts) = inverse_and_counts(&first, &order, return_inverse, return_counts)?;
        let shape: Vec<i64> = self.shape().iter().map(|&s| s as i64).collect();
        Ok((uniq, inverse.map(|i| i.view(&shape)).transpose()?, counts))
    }

    /// The distinct slices along `dim`, in lexicographic order (PyTorch's `unique` with
    /// `dim`), with, on request, the inverse (for each slice, the position of its value
    /// in the result) and the counts.
    ///
    /// # Errors
    /// A 0-d tensor or `dim` out of range.
    pub fn unique_dim(
        &self,
        dim: i64,
        return_inverse: bool,
        return_counts: bool,
    ) -> Result<(Tensor, Option<Tensor>, Option<Tensor>)> {
        const OP: &str = "unique";
        if self.ndim() == 0 {
            return Err(Error::index(
                OP,
                "unique: a 0-d tensor has no dim to take slices along",
            ));
        }
        let d = wrap_dim(OP, dim, self.ndim())?;
        let _off = no_grad();
        let dev = self.device();
        let n = self.shape()[d];
        let moved = self.movedim(&[d as i64], &[0])?;
        let m: usize = moved.shape()[1..].iter().product();
        let rows = moved.reshape(&[n as i64, m as i64])?;
        // Lexicographic order of the rows: stable sorts from the last column to the first.
        let mut order = Tensor::arange(0, n as i64, 1, DType::I64)?;
        if !dev.is_cpu() {
            order = order.to_device(dev)?;
        }
        for c in (0..m).rev() {
            let key = rows.select(1, c as i64)?.gather(0, &order)?;
            let o = key.argsort(0, false, true)?;
            order = order.gather(0, &o)?;
        }
        let sorted = rows.index(&[crate::tensor::TensorIndex::tensor(order.clone())])?;
        let head = Tensor::full_on(&[n.min(1)], true, DType::Bool, dev)?;
        let first = if n > 1 && m > 0 {
            let a = sorted.narrow(0, 1, n as i64 - 1)?;
            let b = sorted.narrow(0, 0, n as i64 - 1)?;
            Tensor::cat(&[&head, &a.ne(&b)?.any(&[1], false)?], 0)?
        } else if n > 1 {
            let rest = Tensor::full_on(&[n - 1], false, DType::Bool, dev)?;
            Tensor::cat(&[&head, &rest], 0)?
        } else {
            head
        };
        let picked = sorted.index(&[crate::tensor::TensorIndex::tensor(first.clone())])?;
        let mut shape: Vec<i64> = moved.shape().iter().map(|&s| s as i64).collect();
        shape[0] = picked.shape()[0] as i64;
        let uniq = picked
            .reshape(&shape)?
            .movedim(&[0], &[d as i64])?
            .contiguous()?;
        let (inverse, counts) = inverse_and_counts(&first, &order, return_inverse, return_counts)?;
        Ok((uniq, inverse, counts))
    }

    /// For each of `values`, the position where it would be inserted into this sorted
    /// tensor's last dim to keep it sorted (PyTorch's `searchsorted`): the first such
    /// position, or the last with `right`. This tensor is 1-D, or its leading dims equal
    /// `values`'. `sorter` (int64, this tensor's shape) orders an unsorted tensor. The two
    /// are compared in their promoted dtype; the result is int64, or int32 with
    /// `out_int32`.
    ///
    /// ```
    /// let s = strata::Tensor::from_vec(vec![1.0f32, 3.0, 5.0], &[3])?;
    /// let v = strata::Tensor::from_vec(vec![3.0f32, 6.0, 0.0], &[3])?;
    /// assert_eq!(s.searchsorted(&v, false, false, None)?.to_vec::<i64>()?, vec![1, 3, 0]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    ///
    /// # Errors
    /// Mismatched leading dims; a 0-d sequence; a sorter of another shape or dtype, or
    /// holding a position out of range; `out_int32` with a sequence longer than
    /// `i32::MAX`.
    pub fn searchsorted(
        &self,
        values: &Tensor,
        right: bool,
        out_int32: bool,
        sorter: Option<&Tensor>,
    ) -> Result<Tensor> {
        const OP: &str = "searchsorted";
        let nd = self.ndim();
        if nd == 0 {
            return Err(Error::shape(
                OP,
                "torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 dimension",
            ));
        }
        if nd > 1 && (values.ndim() != nd || self.shape()[..nd - 1] != values.shape()[..nd - 1]) {
            return Err(Error::shape(
                OP,
                format!(
                    "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and input value tensor must match, but we got boundaries tensor {:?} and input value tensor {:?}",
                    self.shape(),
                    values.shape()
                ),
            ));
        }
        if let Some(s) = sorter {
            if s.shape() != self.shape() {
                return Err(Error::shape(
                    OP,
                    format!(
                        "torch.searchsorted(): boundary and sorter must have the same size, but got boundary tensor {:?}and got sorter tensor {:?}",
                        self.shape(),
                        s.shape()
                    ),
                ));
            }
            if s.dtype() != DType::I64 {
                return Err(Error::dtype(
                    OP,
                    format!("torch.searchsorted(): sorter must be a tensor of long dtype but got dtype {}", s.dtype()),
                ));
            }
        }
        let n = self.shape()[nd - 1];
        if out_int32 && n > i32::MAX as usize {
            return Err(Error::shape(
                OP,
                format!("torch.searchsorted(): the size of boundaries' last dimension should be less than {}, but we got {n}", i32::MAX),
            ));
        }
        let dt = promote_types(self.dtype(), values.dtype())?;
        let (seq, vals) = (self.to_dtype(dt)?, values.to_dtype(dt)?);
        let out_dt = if out_int32 { DType::I32 } else { DType::I64 };
        let out = Tensor::alloc_uninit_on(OP, values.shape(), out_dt, values.device())?;
        if out.numel() == 0 {
            return Ok(out);
        }
        // backend seam
        backend_of(OP, &[&seq, &vals])?.searchsorted(OP, &out, &seq, &vals, sorter, right)?;
        Ok(out)
    }
}
