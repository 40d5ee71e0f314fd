//! Advanced indexing, NumPy's and PyTorch's: integer index tensors and boolean masks
//! mixed with basic entries ([`Tensor::index`], [`Tensor::index_put_`]), and the ops
//! built on the same machinery ([`Tensor::nonzero`], [`Tensor::index_select`],
//! [`Tensor::index_copy_`]). This module decides what a key means; the loops that read
//! index tensors and move elements are the CPU backend's, in `kernel/gather.rs`, each
//! called from one place here marked `// backend seam`.
//!
//! A key is resolved in three steps:
//!
//! 1. Its basic part is applied as a view: every index tensor becomes a full slice (a
//!    mask of `k` dims, `k` of them) and a 0-d integer tensor an int.
//! 2. The index tensors are broadcast together (a mask counts as the 1-D tensor of the
//!    positions of its true elements, as `nonzero` gives them), and each element of the
//!    broadcast shape becomes one element offset into the view (bounds checked: an index
//!    outside `-size..size` is an index error naming it, the dim and the size).
//! 3. The result's dims are the view's dims no index tensor covers, with the broadcast
//!    dims in place of the indexed ones when those are adjacent, else in front (NumPy's
//!    rule; an int is basic, as in PyTorch, so `x[0, :, [0, 1]]` keeps them in place).

use crate::backend::{backend_of, Bound};
use crate::dtype::DType;
use crate::error::{try_vec, Error, Result};
use crate::layout::broadcast::broadcast_all;
use crate::layout::{checked_numel, wrap_dim, DimVec, Shape, Strides};
use crate::tensor::{Scalar, Tensor, TensorIndex, ViewOp, MAX_NDIM};

/// What an index tensor of a key selects.
enum Kind {
    /// Positions along one dim (`i64` or `u64`).
    Ints(Tensor),
    /// A `bool` mask over `ndims` dims.
    Mask(Tensor),
    /// A mask, resolved: the element offsets (in the view) of its true elements.
    Offsets(Vec<isize>),
}

/// One index tensor of a key.
struct Advanced {
    /// Its position in the basic key (its first full slice).
    pos: usize,
    /// The first dim of the view it covers.
    dim: usize,
    /// How many dims it covers (1, or a mask's ndim).
    ndims: usize,
    kind: Kind,
}

/// A key with index tensors, resolved against the view of its basic part.
struct Plan {
    view: Tensor,
    /// The broadcast shape of the index tensors.
    bshape: Shape,
    /// For each element of `bshape` (row-major): the element offset, from the view's
    /// offset, of the position its indices select.
    offs: Vec<isize>,
    /// The view's dims that no index tensor covers: sizes and strides.
    rest: Shape,
    rest_strides: Strides,
    /// Where the broadcast dims go among the rest dims in the result.
    insert_at: usize,
}

impl Plan {
    /// The result's shape: the rest dims with the broadcast dims at `insert_at`.
    fn natural(&self, op: &'static str) -> Result<Shape> {
        let mut s = Shape::with_capacity(self.rest.len() + self.bshape.len());
        s.extend_from_slice(&self.rest[..self.insert_at]);
        s.extend_from_slice(&self.bshape);
        s.extend_from_slice(&self.rest[self.insert_at..]);
        if s.len() > MAX_NDIM {
            return Err(Error::shape(
                op,
                format!("tensors have at most {MAX_NDIM} dims, got {}", s.len()),
            ));
        }
        Ok(s)
    }

    /// `t`, of the [natural](Self::natural) shape, with the broadcast dims moved to the
    /// front (a view): the order the kernels walk.
    fn front(&self, t: &Tensor) -> Result<Tensor> {
        if self.insert_at == 0 {
            return Ok(t.clone());
        }
        let (nb, at) = (self.bshape.len() as i64, self.insert_at as i64);
        let src: DimVec<i64> = (at..at + nb).collect();
        let dst: DimVec<i64> = (0..nb).collect();
        t.movedim(&src, &dst)
    }
}

enum Resolved {
    /// A key of basic entries only: its view.
    View(Tensor),
    Advanced(Plan),
}

/// Resolves `key` against `t` (see the module doc).
fn resolve(op: &'static str, t: &Tensor, key: &[TensorIndex]) -> Result<Resolved> {
    let mut basic: Vec<TensorIndex> = Vec::with_capacity(key.len());
    let mut adv: Vec<Advanced> = Vec::new();
    for entry in key {
        let TensorIndex::Tensor(x) = entry else {
            basic.push(entry.clone());
            continue;
        };
        match x.dtype() {
            DType::Bool => {
                if x.ndim() == 0 {
                    // NumPy's and PyTorch's rule: a new dim of size 1, indexed by the
                    // one-element mask [x] (so kept when true, emptied when false).
                    adv.push(Advanced {
                        pos: basic.len(),
                        dim: 0,
                        ndims: 1,
                        kind: Kind::Mask(x.reshape(&[1])?),
                    });
                    basic.push(TensorIndex::NewAxis);
                    continue;
                }
                adv.push(Advanced {
                    pos: basic.len(),
                    dim: 0,
                    ndims: x.ndim(),
                    kind: Kind::Mask((**x).clone()),
                });
                basic.extend(std::iter::repeat_n(TensorIndex::full(), x.ndim()));
            }
            dt if dt.is_int() && x.ndim() == 0 => {
                let i = match x.item()? {
                    // Past `i64::MAX`: out of range for every dim, never wrapped.
                    Scalar::UInt(u) => i64::try_from(u).unwrap_or(i64::MAX),
                    s => s.to::<i64>(),
                };
                basic.push(TensorIndex::Int(i));
            }
            dt if dt.is_int() => {
                // `u64` is read as it is (a value past `i64::MAX` is out of range, not
                // wrapped); the narrower types widen to `i64`.
                let ints = if dt == DType::U64 {
                    (**x).clone()
                } else {
                    x.to_dtype(DType::I64)?
                };
                adv.push(Advanced {
                    pos: basic.len(),
                    dim: 0,
                    ndims: 1,
                    kind: Kind::Ints(ints),
                });
                basic.push(TensorIndex::full());
            }
            dt => {
                return Err(Error::index(
                    op,
                    format!(
                        "tensors used as indices must be long, int, byte or bool tensors, got {dt}"
                    ),
                ))
            }
        }
    }
    let view = t.derive(ViewOp::Index(&basic))?;
    if adv.is_empty() {
        return Ok(Resolved::View(view));
    }
    // The view dim each entry of `basic` lands on. The view exists, so the ints and
    // slices are at most `t.ndim()`.
    let consumed = basic
        .iter()
        .filter(|b| matches!(b, TensorIndex::Int(_) | TensorIndex::Slice { .. }))
        .count();
    let (mut d, mut next) = (0usize, 0usize);
    for (p, b) in basic.iter().enumerate() {
        while next < adv.len() && adv[next].pos == p {
            adv[next].dim = d;
            next += 1;
        }
        match b {
            TensorIndex::Int(_) => {}
            TensorIndex::Slice { .. } | TensorIndex::NewAxis => d += 1,
            TensorIndex::Ellipsis => d += t.ndim() - consumed,
            TensorIndex::Tensor(_) => unreachable!("replaced by full slices above"),
        }
    }
    let nd = view.ndim();
    let mut covered: DimVec<bool> = DimVec::from_elem(false, nd);
    for a in &mut adv {
        if let Kind::Mask(m) = &a.kind {
            if view.shape().get(a.dim..a.dim + a.ndims) != Some(m.shape()) {
                return Err(Error::index(
                    op,
                    format!(
                        "The shape of the mask {:?} at index {} does not match the shape of the indexed tensor {:?}",
                        m.shape(),
                        a.dim,
                        view.shape()
                    ),
                ));
            }
            let weights = &view.strides()[a.dim..a.dim + a.ndims];
            a.kind = Kind::Offsets(true_offsets(op, m, weights)?);
        }
        covered[a.dim..a.dim + a.ndims].fill(true);
    }
    let adjacent = adv.windows(2).all(|w| w[1].dim == w[0].dim + w[0].ndims);
    let insert_at = if adjacent { adv[0].dim } else { 0 };
    let (mut rest, mut rest_strides) = (Shape::new(), Strides::new());
    for k in (0..nd).filter(|&k| !covered[k]) {
        rest.push(view.shape()[k]);
        rest_strides.push(view.strides()[k]);
    }

    let shapes: Vec<Shape> = adv
        .iter()
        .map(|a| match &a.kind {
            Kind::Ints(x) => Shape::from_slice(x.shape()),
            Kind::Offsets(o) => Shape::from_slice(&[o.len()]),
            Kind::Mask(_) => unreachable!("resolved above"),
        })
        .collect();
    let refs: Vec<&[usize]> = shapes.iter().map(|s| &s[..]).collect();
    let bshape = broadcast_all(op, &refs).map_err(|_| {
        let list: Vec<String> = refs.iter().map(|s| format!("{s:?}")).collect();
        Error::index(
            op,
            format!(
                "shape mismatch: indexing tensors could not be broadcast together with shapes {}",
                list.join(", ")
            ),
        )
    })?;
    let count = checked_numel(op, &bshape)?;
    let offs = if let [Advanced {
        kind: Kind::Offsets(o),
        ..
    }] = &mut adv[..]
    {
        // One mask alone (`x[mask]`): its offsets are the plan's.
        std::mem::take(o)
    } else if let [Advanced {
        kind: Kind::Ints(x),
        dim,
        ..
    }] = &adv[..]
    {
        // One index tensor alone (`x[idx]`, `index_select`, `take`): its offsets straight
        // into a fresh vector (the broadcast shape is its own).
        let bound = Bound::wrapping(*dim, view.shape()[*dim]);
        // backend seam
        backend_of(op, &[x])?.index_offsets(op, x, bound, view.strides()[*dim])?
    } else {
        let mut offs: Vec<isize> = try_vec(op, count)?;
        offs.resize(count, 0);
        for a in adv {
            let (index, bound, stride) = match a.kind {
                Kind::Ints(x) => (
                    x,
                    Some(Bound::wrapping(a.dim, view.shape()[a.dim])),
                    view.strides()[a.dim],
                ),
                Kind::Offsets(o) => {
                    let n = o.len();
                    let o: Vec<i64> = o.into_iter().map(|v| v as i64).collect();
                    (Tensor::from_vec(o, &[n])?, None, 1)
                }
                Kind::Mask(_) => unreachable!("resolved above"),
            };
            let index = index.broadcast_to(&bshape)?;
            // backend seam
            backend_of(op, &[&index])?.add_index_offsets(op, &mut offs, &index, bound, stride)?;
        }
        offs
    };
    Ok(Resolved::Advanced(Plan {
        view,
        bshape,
        offs,
        rest,
        rest_strides,
        insert_at,
    }))
}

/// Offsets `Σ coord·weights` of the true elements of a `bool` tensor, row-major.
///
/// A mask is read element by element: one with more elements than this machine has bytes
/// of memory (an expanded view) would take hours to read and could not be a dense mask;
/// it is refused as out of memory, as reading it into a list of its values would be.
fn true_offsets(op: &'static str, mask: &Tensor, weights: &[isize]) -> Result<Vec<isize>> {
    let n = mask.numel();
    if n > crate::storage::physical_memory().unwrap_or(usize::MAX) {
        return Err(Error::out_of_memory(op, n as u128));
    }
    // backend seam
    backend_of(op, &[mask])?.true_offsets(op, mask, weights)
}

/// `t[key]` (see [`Tensor::index`]).
pub(crate) fn index(op: &'static str, t: &Tensor, key: &[TensorIndex]) -> Result<Tensor> {
    let p = match resolve(op, t, key)? {
        Resolved::View(v) => return Ok(v),
        Resolved::Advanced(p) => p,
    };
    // Not zeroed: the gather writes every element (S5).
    let out = Tensor::alloc_uninit_on(op, &p.natural(op)?, t.dtype(), t.device())?;
    let front = p.front(&out)?;
    // backend seam
    backend_of(op, &[&front, &p.view])?.gather(
        op,
        &front,
        p.bshape.len(),
        &p.view,
        &p.rest_strides,
        &p.offs,
    )?;
    Ok(out)
}

/// `t[key] = value`, or `t[key] += value` with `accumulate` (see [`Tensor::index_put_`]).
fn index_put(
    op: &'static str,
    t: &Tensor,
    key: &[TensorIndex],
    value: &Tensor,
    accumulate: bool,
) -> Result<()> {
    let p = match resolve(op, t, key)? {
        Resolved::View(v) => {
            let value = value.to_dtype(v.dtype())?;
            if accumulate {
                v.add_(&value)?;
            } else {
                v.copy_(&value)?;
            }
            return Ok(());
        }
        Resolved::Advanced(p) => p,
    };
    // A host scalar (`t[mask] = 7` on a GPU tensor) joins the target's device first: it
    // is broadcast below, and only a 0-d host tensor may stay on the host.
    let value = if value.ndim() == 0 && value.device().is_cpu() && !t.device().is_cpu() {
        value.to_device(t.device())?
    } else {
        value.clone()
    };
    // The value broadcasts against the shape `t[key]` has, then its broadcast dims move
    // to the front, as the kernel walks them.
    let src = value.to_dtype(t.dtype())?.broadcast_to(&p.natural(op)?)?;
    let src = p.front(&src)?;
    p.view.check_write(op)?;
    // The value is read whole before anything is written (NumPy's rule): one that shares
    // memory with the target (by address, whatever its storage) is copied first. The
    // scatter writes in index order, not the value's, so any overlap needs the copy.
    let src = if src.may_share_memory(&p.view) {
        src.contiguous_copy()?
    } else {
        src
    };
    // backend seam
    backend_of(op, &[&p.view, &src])?.scatter(
        op,
        &p.view,
        &p.rest_strides,
        &p.offs,
        &src,
        p.bshape.len(),
        accumulate,
    )
}

/// `[:, :, …, index]`: `index` as a 1-D tensor along dim `d`.
fn along(d: usize, index: &[i64]) -> Result<Vec<TensorIndex>> {
    let mut key: Vec<TensorIndex> = std::iter::repeat_n(TensorIndex::full(), d).collect();
    key.push(TensorIndex::tensor(Tensor::from_slice(
        index,
        &[index.len()],
    )?));
    Ok(key)
}

/// # Advanced indexing
/// `index_put_` recorded for autograd (PyTorch's `IndexPutBackward0`): `∂self` is the
/// output gradient with the written elements zeroed (kept, when accumulating); `∂value` is
/// the output gradient at the written elements (summed back to `value`'s shape).
fn index_put_grad(t: &Tensor, key: &[TensorIndex], value: &Tensor, accumulate: bool) -> Result<()> {
    if t.grad.get().is_none() && value.grad.get().is_none() {
        return index_put("index_put_", t, key, value, accumulate);
    }
    crate::autograd::check_inplace(t)?;
    if !crate::autograd::needs_grad(&[t, value]) {
        return index_put("index_put_", t, key, value, accumulate);
    }
    {
        let _off = crate::autograd::no_grad();
        index_put("index_put_", t, key, value, accumulate)?;
    }
    let key = key.to_vec();
    crate::autograd::record_inplace(
        t,
        &[value],
        "IndexPutBackward0",
        &[],
        Box::new(move |_saved, grads, needs| {
            let g = &grads[0];
            let gs = if needs[0] && !accumulate {
                let gs = g.contiguous_copy()?;
                let z = Tensor::zeros_on(&[], g.dtype(), g.device())?;
                index_put("index_put_", &gs, &key, &z, false)?;
                Some(gs)
            } else if needs[0] {
                Some(g.clone())
            } else {
                None
            };
            let gv = if needs[1] {
                Some(index("index", g, &key)?)
            } else {
                None
            };
            Ok(vec![gs, gv])
        }),
    )
}

impl Tensor {
    /// `self[index] = value`, in place: PyTorch's `index_put_` with NumPy's setitem
    /// rules. `value` is cast to this tensor's dtype and broadcast to the shape
    /// `self.index(index)` would have; with repeated indices the last write wins. A key of
    /// basic entries only writes through the view (as `copy_`). A value that shares
    /// memory with this tensor is read whole before anything is written.
    ///
    /// ```
    /// use strata::{s, DType, Tensor};
    /// let x = Tensor::zeros(&[2, 3], DType::F32)?;
    /// let cols = Tensor::from_vec(vec![2i64, 0], &[2])?;
    /// x.index_put_(&s![.., cols], &Tensor::from_vec(vec![1.0f32, 2.0], &[2])?)?;
    /// assert_eq!(x.to_vec::<f32>()?, vec![2.0, 0.0, 1.0, 2.0, 0.0, 1.0]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    ///
    /// # Errors
    /// The errors of [`index`](Self::index); a value that does not broadcast; a read-only
    /// tensor, or one whose indexed elements alias each other.
    pub fn index_put_(&self, index: &[TensorIndex], value: &Tensor) -> Result<&Self> {
        index_put_grad(self, index, value, false)?;
        Ok(self)
    }

    /// `self[index] += value`, in place, every occurrence of a repeated index adding
    /// (PyTorch's `index_put_(…, accumulate=True)`); otherwise as
    /// [`index_put_`](Self::index_put_). Integers wrap; `bool` is a logical or.
    pub fn index_put_accumulate_(&self, index: &[TensorIndex], value: &Tensor) -> Result<&Self> {
        index_put_grad(self, index, value, true)?;
        Ok(self)
    }

    /// The coordinates of the non-zero elements (true, for `bool`; NaN counts as
    /// non-zero), row-major, as an `(n, ndim)` `i64` tensor (PyTorch's `nonzero()`).
    ///
    /// ```
    /// let x = strata::Tensor::from_vec(vec![0i32, 3, 0, 4], &[2, 2])?;
    /// let nz = x.nonzero()?;
    /// assert_eq!((nz.shape(), nz.to_vec::<i64>()?), (&[2, 2][..], vec![0, 1, 1, 1]));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn nonzero(&self) -> Result<Tensor> {
        const OP: &str = "nonzero";
        let mask = if self.dtype() == DType::Bool {
            self.clone()
        } else {
            self.to_dtype(DType::Bool)?
        };
        let shape = mask.shape();
        let nd = shape.len();
        // Row-major strides as weights give flat indices; a shape whose element count
        // does not fit has none.
        checked_numel(OP, shape)?;
        if nd == 1 {
            // backend seam
            if let Some(out) = backend_of(OP, &[&mask])?.nonzero_flat(OP, &mask)? {
                return Ok(out);
            }
        }
        let weights = crate::layout::contiguous_strides(shape);
        let flat = true_offsets(OP, &mask, &weights)?;
        let n = flat.len();
        let total = n
            .checked_mul(nd)
            .ok_or_else(|| Error::overflow(OP, format!("{n} x {nd} coordinates")))?;
        if nd == 1 {
            // Flat indices are the coordinates.
            let out: Vec<i64> = flat.into_iter().map(|f| f as i64).collect();
            return Tensor::from_vec(out, &[n, 1])?.to_device(self.device());
        }
        let mut out: Vec<i64> = try_vec(OP, total)?;
        let mut coords: DimVec<i64> = DimVec::from_elem(0, nd);
        for f in flat {
            let mut rem = f as usize;
            for d in (0..nd).rev() {
                coords[d] = (rem % shape[d]) as i64;
                rem /= shape[d];
            }
            out.extend_from_slice(&coords);
        }
        // On the input's device, as PyTorch's.
        Tensor::from_vec(out, &[n, nd])?.to_device(self.device())
    }

    /// [`nonzero`](Self::nonzero) as one 1-D `i64` tensor per dim (PyTorch's
    /// `nonzero(as_tuple=True)`, a tuple of index tensors that `index` takes back); a 0-d
    /// tensor counts as 1-D.
    pub fn nonzero_tuple(&self) -> Result<Vec<Tensor>> {
        if self.ndim() == 0 {
            return self.view(&[1])?.nonzero_tuple();
        }
        self.nonzero()?.unbind(1)
    }

    /// The slices `index[k]` of `dim`, stacked along `dim` in a new tensor (PyTorch's
    /// `index_select`; negative indices count from the end).
    pub fn index_select(&self, dim: i64, index: &[i64]) -> Result<Tensor> {
        const OP: &str = "index_select";
        let d = wrap_dim(OP, dim, self.ndim())?;
        if self.ndim() == 0 {
            return Err(Error::index(OP, "cannot index a 0-dim tensor along a dim"));
        }
        self::index(OP, self, &along(d, index)?)
    }

    /// Writes slice `k` of `src` into slice `index[k]` of `dim` of this tensor, in place
    /// (PyTorch's `index_copy_`; with repeated indices the last write wins). `src` must
    /// broadcast to this tensor's shape with `dim` of size `index.len()`; it is cast to
    /// this dtype.
    pub fn index_copy_(&self, dim: i64, index: &[i64], src: &Tensor) -> Result<&Self> {
        const OP: &str = "index_copy_";
        let d = wrap_dim(OP, dim, self.ndim())?;
        if self.ndim() == 0 {
            return Err(Error::index(OP, "cannot index a 0-dim tensor along a dim"));
        }
        index_put(OP, self, &along(d, index)?, src, false)?;
        Ok(self)
    }
}

/// `index`'s dtype must be `int64` for `op` (PyTorch's rule for `take` and `gather`).
fn long_index(op: &'static str, index: &Tensor) -> Result<()> {
    if index.dtype() == DType::I64 {
        return Ok(());
    }
    Err(Error::dtype(
        op,
        format!("expected an int64 tensor for index, got {}", index.dtype()),
    ))
}

/// # Gathers
impl Tensor {
    /// The elements at flat (row-major) positions `index` of this tensor viewed as 1-D,
    /// in a new tensor of `index`'s shape (PyTorch's `take`, NumPy's `take` without an
    /// axis). Negative indices count from the end.
    ///
    /// ```
    /// let x = strata::Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
    /// let i = strata::Tensor::from_vec(vec![3i64, 0, -1], &[3])?;
    /// assert_eq!(x.take(&i)?.to_vec::<f32>()?, vec![4.0, 1.0, 4.0]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    ///
    /// # Errors
    /// An index that is not `int64` (a dtype error); one outside `-numel..numel` (an
    /// index error naming it and the size).
    pub fn take(&self, index: &Tensor) -> Result<Tensor> {
        const OP: &str = "take";
        long_index(OP, index)?;
        let flat = self.reshape(&[-1])?;
        let ix = if index.ndim() == 0 {
            index.view(&[1])?
        } else {
            index.clone()
        };
        let out = self::index(OP, &flat, &[TensorIndex::tensor(ix)])?;
        if index.ndim() == 0 {
            return out.view(&[]);
        }
        Ok(out)
    }

    /// `out[i][j]… = self[…][index[i][j]…][…]` with the index replacing the coordinate of
    /// `dim` (PyTorch's `gather`, NumPy's `take_along_axis`): a new tensor of `index`'s
    /// shape. `index` has this tensor's number of dims and no dim longer than this
    /// tensor's, except `dim`; its values lie in `0..size` of `dim` (PyTorch's rule: a
    /// negative value is an error, not counted from the end).
    ///
    /// ```
    /// let x = strata::Tensor::from_vec(vec![1i32, 2, 3, 4], &[2, 2])?;
    /// let i = strata::Tensor::from_vec(vec![0i64, 0, 1, 0], &[2, 2])?;
    /// assert_eq!(x.gather(1, &i)?.to_vec::<i32>()?, vec![1, 1, 4, 3]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    ///
    /// # Errors
    /// A `dim` out of range; an index that is not `int64`, has another number of dims or
    /// a longer dim than allowed; an index value outside `0..size` of `dim`.
    pub fn gather(&self, dim: i64, index: &Tensor) -> Result<Tensor> {
        if !crate::autograd::needs_grad(&[self]) {
            return self.gather_raw(dim, index);
        }
        let out = {
            let _off = crate::autograd::no_grad();
            self.gather_raw(dim, index)?
        };
        // PyTorch's `GatherBackward0`: the gradient added back at the gathered positions.
        let (index, shape) = (index.clone(), self.shape().to_vec());
        crate::autograd::record1(
            "GatherBackward0",
            &[self],
            out,
            &[],
            Box::new(move |_saved, grads, _needs| {
                let g = &grads[0];
                let z = Tensor::zeros_on(&shape, g.dtype(), g.device())?;
                Ok(vec![Some(z.scatter_add(dim, &index, g)?)])
            }),
        )
    }

    /// [`gather`](Self::gather) without autograd.
    fn gather_raw(&self, dim: i64, index: &Tensor) -> Result<Tensor> {
        const OP: &str = "gather";
        long_index(OP, index)?;
        if self.ndim() == 0 || index.ndim() == 0 {
            // PyTorch treats 0-d tensors as 1-D here.
            let x = if self.ndim() == 0 {
                self.view(&[1])?
            } else {
                self.clone()
            };
            let i = if index.ndim() == 0 {
                index.view(&[1])?
            } else {
                index.clone()
            };
            if x.ndim() == 1 && i.ndim() == 1 {
                let out = x.gather_raw(dim, &i)?;
                let shape: Vec<i64> = index.shape().iter().map(|&n| n as i64).collect();
                return if index.ndim() == 0 {
                    out.view(&[])
                } else {
                    out.view(&shape)
                };
            }
        }
        let nd = self.ndim();
        let d = wrap_dim(OP, dim, nd)?;
        if index.ndim() != nd {
            return Err(Error::index(
                OP,
                format!(
                    "Index tensor must have the same number of dimensions as input tensor ({} vs {nd})",
                    index.ndim()
                ),
            ));
        }
        for k in (0..nd).filter(|&k| k != d) {
            if index.shape()[k] > self.shape()[k] {
                return Err(Error::shape(
                    OP,
                    format!(
                        "Size does not match at dimension {k} expected index {:?} to be no larger than self {:?} apart from dimension {d}",
                        index.shape(),
                        self.shape()
                    ),
                ));
            }
        }
        let count = checked_numel(OP, index.shape())?;
        let out = Tensor::alloc_uninit_on(OP, index.shape(), self.dtype(), self.device())?;
        // backend seam: one pass where the backend has a loop for the layouts.
        if backend_of(OP, &[&out, self])?.gather_dim(OP, &out, self, d, index)? {
            return Ok(out);
        }
        // Offsets of the other dims' coordinates (each within this tensor's shape, so
        // positions of its valid layout), then the index's along `dim`.
        let mut weights: DimVec<isize> = DimVec::from_slice(self.strides());
        weights[d] = 0;
        let mut offs: Vec<isize> = try_vec(OP, count)?;
        crate::kernel::walk(index.shape(), [&weights], [0], |[o]| offs.push(o as isize));
        // backend seam
        backend_of(OP, &[index])?.add_index_offsets(
            OP,
            &mut offs,
            index,
            Some(Bound::non_negative(d, self.shape()[d])),
            self.strides()[d],
        )?;
        // backend seam
        backend_of(OP, &[&out, self])?.gather(OP, &out, nd, self, &[], &offs)?;
        Ok(out)
    }

    /// The elements where `mask` (a `bool` tensor; the two broadcast together) is true,
    /// row-major, in a new 1-D tensor (PyTorch's `masked_select`; NumPy's `a[mask]`).
    ///
    /// ```
    /// let x = strata::Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
    /// let m = strata::Tensor::from_vec(vec![true, false], &[2])?;
    /// assert_eq!(x.masked_select(&m)?.to_vec::<f32>()?, vec![1.0, 3.0]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    ///
    /// # Errors
    /// A mask that is not `bool`; shapes that do not broadcast.
    pub fn masked_select(&self, mask: &Tensor) -> Result<Tensor> {
        const OP: &str = "masked_select";
        if mask.dtype() != DType::Bool {
            return Err(Error::dtype(
                OP,
                format!("expected a bool tensor for mask, got {}", mask.dtype()),
            ));
        }
        let shape = broadcast_all(OP, &[self.shape(), mask.shape()])?;
        if shape.is_empty() {
            return self.view(&[1])?.masked_select(&mask.view(&[1])?);
        }
        let x = self.broadcast_to(&shape)?;
        let m = mask.broadcast_to(&shape)?;
        let out = self::index(OP, &x, &[TensorIndex::tensor(m)])?;
        out.reshape(&[-1])
    }
}

/// What a scatter writes: a tensor's elements or one value.
enum ScatterSrc<'a> {
    Tensor(&'a Tensor),
    Value(Scalar),
}

/// The checks and the write of `scatter_`/`scatter_add_` (see [`Tensor::scatter_`]),
/// without autograd.
fn scatter_raw(
    op: &'static str,
    t: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &ScatterSrc<'_>,
    accumulate: bool,
) -> Result<()> {
    long_index(op, index)?;
    // PyTorch treats 0-d tensors as 1-D here.
    let one = |x: &Tensor| {
        if x.ndim() == 0 {
            x.view(&[1])
        } else {
            Ok(x.clone())
        }
    };
    let (t1, index) = (one(t)?, one(index)?);
    let nd = t1.ndim();
    let d = wrap_dim(op, dim, nd)?;
    if index.ndim() != nd {
        return Err(Error::index(
            op,
            format!(
                "Index tensor must have the same number of dimensions as self tensor ({} vs {nd})",
                index.ndim()
            ),
        ));
    }
    let src_t = match src {
        ScatterSrc::Tensor(s) => {
            let s = one(s)?;
            if s.ndim() != nd {
                return Err(Error::index(
                    op,
                    format!(
                        "Index tensor must have the same number of dimensions as src tensor ({nd} vs {})",
                        s.ndim()
                    ),
                ));
            }
            if s.dtype() != t.dtype() {
                return Err(Error::dtype(
                    op,
                    format!(
                        "{op}(): Expected self.dtype to be equal to src.dtype, got {} and {}",
                        t.dtype(),
                        s.dtype()
                    ),
                ));
            }
            Some(s)
        }
        ScatterSrc::Value(_) => None,
    };
    for k in 0..nd {
        let too_big_self = k != d && index.shape()[k] > t1.shape()[k];
        let too_big_src = src_t
            .as_ref()
            .is_some_and(|s| index.shape()[k] > s.shape()[k]);
        if too_big_self || too_big_src {
            let src_part = src_t.as_ref().map_or(String::new(), |s| {
                format!(" and to be no larger size than src {:?}", s.shape())
            });
            return Err(Error::shape(
                op,
                format!(
                    "Expected index {:?} to be no larger than self {:?} apart from dimension {d}{src_part}",
                    index.shape(),
                    t1.shape()
                ),
            ));
        }
    }
    t1.check_write(op)?;
    let count = checked_numel(op, index.shape())?;
    if count == 0 {
        return Ok(());
    }
    // The source of each index element: `src` cut to the index's shape, or the value
    // broadcast to it.
    let src_v = match (src, src_t) {
        (_, Some(s)) => {
            let mut v = s;
            for k in 0..nd {
                v = v.narrow(k as i64, 0, index.shape()[k] as i64)?;
            }
            // Read whole before anything is written (it may share `t`'s memory).
            if v.may_share_memory(&t1) {
                v.contiguous_copy()?
            } else {
                v
            }
        }
        (ScatterSrc::Value(x), None) => {
            let v = Tensor::full_on(&[], *x, t.dtype(), t.device())?;
            v.broadcast_to(index.shape())?
        }
        (ScatterSrc::Tensor(_), None) => unreachable!("a tensor source is checked above"),
    };
    let mut weights: DimVec<isize> = DimVec::from_slice(t1.strides());
    weights[d] = 0;
    let mut offs: Vec<isize> = try_vec(op, count)?;
    crate::kernel::walk(index.shape(), [&weights], [0], |[o]| offs.push(o as isize));
    // backend seam
    backend_of(op, &[&index])?.add_index_offsets(
        op,
        &mut offs,
        &index,
        Some(Bound::non_negative(d, t1.shape()[d])),
        t1.strides()[d],
    )?;
    // backend seam
    backend_of(op, &[&t1, &src_v])?.scatter(op, &t1, &[], &offs, &src_v, nd, accumulate)
}

/// `g` padded with zeros at the end of each dim to `shape` (a differentiable `cat`).
fn pad_to(g: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let mut x = g.clone();
    for (k, &n) in shape.iter().enumerate() {
        let have = x.shape()[k];
        if have < n {
            let mut zs = x.shape().to_vec();
            zs[k] = n - have;
            let z = Tensor::zeros_on(&zs, x.dtype(), x.device())?;
            x = Tensor::cat(&[&x, &z], k as i64)?;
        }
    }
    Ok(x)
}

/// A scatter recorded for autograd (PyTorch's `ScatterBackward0`/`ScatterAddBackward0`):
/// `∂self` is the output gradient with the written positions zeroed (kept whole when
/// accumulating), `∂src` the output gradient gathered at the index (zeros beyond it).
fn scatter_grad(
    op: &'static str,
    t: &Tensor,
    dim: i64,
    index: &Tensor,
    src: ScatterSrc<'_>,
    accumulate: bool,
) -> Result<()> {
    let src_tensor = match &src {
        ScatterSrc::Tensor(s) => Some(*s),
        ScatterSrc::Value(_) => None,
    };
    let tracked = t.grad.get().is_some() || src_tensor.is_some_and(|s| s.grad.get().is_some());
    if !tracked {
        return scatter_raw(op, t, dim, index, &src, accumulate);
    }
    crate::autograd::check_inplace(t)?;
    let others: Vec<&Tensor> = src_tensor.into_iter().collect();
    let mut all = vec![t];
    all.extend_from_slice(&others);
    if !crate::autograd::needs_grad(&all) {
        return scatter_raw(op, t, dim, index, &src, accumulate);
    }
    {
        let _off = crate::autograd::no_grad();
        scatter_raw(op, t, dim, index, &src, accumulate)?;
    }
    let index = index.clone();
    let src_shape = src_tensor.map(|s| s.shape().to_vec());
    let name = if accumulate {
        "ScatterAddBackward0"
    } else {
        "ScatterBackward0"
    };
    crate::autograd::record_inplace(
        t,
        &others,
        name,
        &[],
        Box::new(move |_saved, grads, needs| {
            let g = &grads[0];
            let gs = match (needs[0], accumulate) {
                (false, _) => None,
                (true, true) => Some(g.clone()),
                (true, false) => Some(g.scatter_value(dim, &index, Scalar::Int(0))?),
            };
            let mut out = vec![gs];
            if let Some(shape) = &src_shape {
                out.push(if needs[1] {
                    Some(pad_to(&g.gather(dim, &index)?, shape)?)
                } else {
                    None
                });
            }
            Ok(out)
        }),
    )
}

/// # Scatters
impl Tensor {
    /// `self[…][index[i][j]…][…] = src[i][j]…`, in place, the index replacing the
    /// coordinate of `dim` (PyTorch's `scatter_`, NumPy's `put_along_axis`). `index` is
    /// int64 with this tensor's number of dims, no dim longer than `src`'s nor (except
    /// `dim`) than this tensor's; `src` has this tensor's dtype; only `src`'s elements
    /// at the index's positions are read. With a repeated index one of the writes wins.
    ///
    /// ```
    /// use strata::Tensor;
    /// let x = Tensor::zeros(&[3], strata::DType::F32)?;
    /// let i = Tensor::from_vec(vec![2i64, 0], &[2])?;
    /// x.scatter_(0, &i, &Tensor::from_vec(vec![5.0f32, 7.0], &[2])?)?;
    /// assert_eq!(x.to_vec::<f32>()?, vec![7.0, 0.0, 5.0]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    ///
    /// # Errors
    /// A `dim` out of range; an index that is not int64, has another number of dims or a
    /// longer dim than allowed, or a value outside `0..size` of `dim` (an index error); a `src` of another dtype; a read-only or self-overlapping tensor.
    pub fn scatter_(&self, dim: i64, index: &Tensor, src: &Tensor) -> Result<&Self> {
        scatter_grad("scatter_", self, dim, index, ScatterSrc::Tensor(src), false)?;
        Ok(self)
    }

    /// [`scatter_`](Self::scatter_) of one value (cast to this tensor's dtype).
    ///
    /// # Errors
    /// As [`scatter_`](Self::scatter_).
    pub fn scatter_value_(&self, dim: i64, index: &Tensor, value: Scalar) -> Result<&Self> {
        scatter_grad(
            "scatter_",
            self,
            dim,
            index,
            ScatterSrc::Value(value),
            false,
        )?;
        Ok(self)
    }

    /// `self[…][index[i][j]…][…] += src[i][j]…`, in place, every occurrence of a repeated
    /// index adding (PyTorch's `scatter_add_`, NumPy's `add.at` along an axis).
    ///
    /// # Errors
    /// As [`scatter_`](Self::scatter_).
    pub fn scatter_add_(&self, dim: i64, index: &Tensor, src: &Tensor) -> Result<&Self> {
        scatter_grad(
            "scatter_add_",
            self,
            dim,
            index,
            ScatterSrc::Tensor(src),
            true,
        )?;
        Ok(self)
    }

    /// [`scatter_`](Self::scatter_) into a copy of this tensor.
    ///
    /// # Errors
    /// As [`scatter_`](Self::scatter_).
    pub fn scatter(&self, dim: i64, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        let out = self.clone_data()?;
        out.scatter_(dim, index, src)?;
        Ok(out)
    }

    /// [`scatter_value_`](Self::scatter_value_) into a copy of this tensor.
    ///
    /// # Errors
    /// As [`scatter_`](Self::scatter_).
    pub fn scatter_value(&self, dim: i64, index: &Tensor, value: Scalar) -> Result<Tensor> {
        let out = self.clone_data()?;
        out.scatter_value_(dim, index, value)?;
        Ok(out)
    }

    /// [`scatter_add_`](Self::scatter_add_) into a copy of this tensor.
    ///
    /// # Errors
    /// As [`scatter_`](Self::scatter_).
    pub fn scatter_add(&self, dim: i64, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        let out = self.clone_data()?;
        out.scatter_add_(dim, index, src)?;
        Ok(out)
    }

    /// The elements at `indices` along `dim` (PyTorch's `take_along_dim`, NumPy's
    /// `take_along_axis`): `indices` (int64, as many dims as this tensor) broadcasts
    /// against this tensor except along `dim`, then [`gather`](Self::gather). With no
    /// `dim`, both are flattened first.
    ///
    /// # Errors
    /// An index that is not int64, has another number of dims, does not broadcast, or
    /// holds a value out of range; a `dim` out of range.
    pub fn take_along_dim(&self, indices: &Tensor, dim: Option<i64>) -> Result<Tensor> {
        const OP: &str = "take_along_dim";
        long_index(OP, indices)?;
        let Some(dim) = dim else {
            return self.reshape(&[-1])?.gather(0, &indices.reshape(&[-1])?);
        };
        if self.ndim() != indices.ndim() {
            return Err(Error::index(
                OP,
                format!(
                    "torch.take_along_dim(): input and indices should have the same number of dimensions, but got {} dimensions for input, and {} dimensions for indices",
                    self.ndim(),
                    indices.ndim()
                ),
            ));
        }
        if self.ndim() == 0 {
            return self.gather(dim, indices);
        }
        let d = wrap_dim(OP, dim, self.ndim())?;
        // Broadcast every dim but `d`; `d` keeps each side's own size.
        let (mut xs, mut is) = (self.shape().to_vec(), indices.shape().to_vec());
        xs[d] = 1;
        is[d] = 1;
        let b = broadcast_all(OP, &[&xs, &is])?;
        let (mut xs, mut is) = (b.to_vec(), b.to_vec());
        xs[d] = self.shape()[d];
        is[d] = indices.shape()[d];
        self.broadcast_to(&xs)?
            .gather(d as i64, &indices.broadcast_to(&is)?)
    }

    /// The coordinates of the non-zero elements as an `(n, ndim)` int64 tensor
    /// (PyTorch's `argwhere`, NumPy's `argwhere`): [`nonzero`](Self::nonzero).
    ///
    /// # Errors
    /// As [`nonzero`](Self::nonzero).
    pub fn argwhere(&self) -> Result<Tensor> {
        self.nonzero()
    }
}

#[cfg(test)]
mod tests {
    use crate::{DType, Tensor, TensorIndex};

    #[test]
    fn select_and_copy() {
        let x = Tensor::arange(0, 12, 1, DType::I32)
            .unwrap()
            .view(&[3, 4])
            .unwrap();
        let s = x.index_select(1, &[3, 0, -1]).unwrap();
        assert_eq!(
            s.to_vec::<i32>().unwrap(),
            vec![3, 0, 3, 7, 4, 7, 11, 8, 11]
        );
        let r = x.t().unwrap().index_select(0, &[1]).unwrap();
        assert_eq!(r.to_vec::<i32>().unwrap(), vec![1, 5, 9]);
        assert!(x.index_select(0, &[3]).is_err());
        let y = Tensor::zeros(&[3, 4], DType::I32).unwrap();
        y.index_copy_(0, &[2, 0], &x.narrow(0, 0, 2).unwrap())
            .unwrap();
        assert_eq!(
            y.to_vec::<i32>().unwrap(),
            vec![4, 5, 6, 7, 0, 0, 0, 0, 0, 1, 2, 3]
        );
        // In place from itself: staged.
        x.index_copy_(0, &[1, 0], &x.narrow(0, 0, 2).unwrap())
            .unwrap();
        assert_eq!(x.to_vec::<i32>().unwrap()[..8], [4, 5, 6, 7, 0, 1, 2, 3]);
    }

    #[test]
    fn u64_indices_past_i64_max_are_out_of_range() {
        let x = Tensor::arange(0, 4, 1, DType::I64).unwrap();
        let big = Tensor::from_vec(vec![u64::MAX], &[1]).unwrap();
        let e = x.index(&[TensorIndex::tensor(big)]).unwrap_err();
        assert!(
            e.to_string().contains(
                "index 18446744073709551615 is out of bounds for dimension 0 with size 4"
            ),
            "{e}"
        );
        let e = x
            .index(&[TensorIndex::tensor(Tensor::scalar(u64::MAX))])
            .unwrap_err();
        assert!(e.to_string().contains("out of bounds"), "{e}");
    }

    #[test]
    fn accumulate_adds_every_repeat() {
        let x = Tensor::zeros(&[3], DType::F32).unwrap();
        let i = Tensor::from_vec(vec![0i64, 2, 0, 0], &[4]).unwrap();
        x.index_put_accumulate_(&[i.clone().into()], &Tensor::scalar(1.5f32))
            .unwrap();
        assert_eq!(x.to_vec::<f32>().unwrap(), vec![4.5, 0.0, 1.5]);
        x.index_put_(&[i.into()], &Tensor::scalar(7.0f32)).unwrap();
        assert_eq!(x.to_vec::<f32>().unwrap(), vec![7.0, 0.0, 7.0]);
    }

    #[test]
    fn nonzero_of_every_rank() {
        let z = Tensor::scalar(3.0f64).nonzero().unwrap();
        assert_eq!(z.shape(), &[1, 0]);
        let z = Tensor::scalar(0u8).nonzero().unwrap();
        assert_eq!(z.shape(), &[0, 0]);
        let f = Tensor::from_vec(vec![0.0f32, f32::NAN, -0.0, 2.0], &[4]).unwrap();
        assert_eq!(f.nonzero().unwrap().to_vec::<i64>().unwrap(), vec![1, 3]);
        let t = Tensor::scalar(true).nonzero_tuple().unwrap();
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].to_vec::<i64>().unwrap(), vec![0]);
    }
}
