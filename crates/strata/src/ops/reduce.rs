//! Reductions and scans: THE table ([`Reduction`]) and the op layer — dims, `keepdim`,
//! dtype rules, output allocation — calling the backend of the input's device. The CPU
//! loops live in `kernel/reduce/`.
//!
//! Semantics follow PyTorch: `dims` lists the dims to reduce (negative dims count from
//! the end, an empty list reduces every dim, a repeated dim is an error), `keepdim` keeps
//! them as size-1 dims. Integer and bool sums and products accumulate in `i64` and give
//! int64; `f16`/`bf16` accumulate in `f32` and keep their dtype. Outputs are fresh
//! contiguous tensors.
//!
//! ```
//! use strata::{DType, Tensor};
//! let x = Tensor::arange(0, 6, 1, DType::I32)?.view(&[2, 3])?;
//! let s = x.sum(&[0], false)?;
//! assert_eq!((s.dtype(), s.to_vec::<i64>()?), (DType::I64, vec![3, 5, 7]));
//! let (v, i) = x.t()?.max_dim(-1, true)?;
//! assert_eq!((v.shape(), i.to_vec::<i64>()?), (&[3, 1][..], vec![1, 1, 1]));
//! # Ok::<(), strata::Error>(())
//! ```
//!
//! To add a reduction: one line in the `reductions!` table below (name, kind, dtype rule,
//! doc), its `Tensor` method here, its loop in `kernel/reduce.rs`'s exhaustive match
//! (the compiler points at it), and its Python method in `strata-py/src/ops.rs` plus the
//! stub; `python/tests/test_reduction_table.py` checks the last two against the table.

use crate::backend::backend_for;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::{wrap_dim, DimVec, Layout, Shape};
use crate::tensor::{Tensor, TensorIndex};

/// What a reduction gives back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReductionKind {
    /// One value per output element, over any set of dims (`sum(dims, keepdim)`).
    Reduce,
    /// Values and indices along one dim (`max(dim)` → `(values, indices)`), or the value
    /// over all dims without a dim (`max()`).
    ValuesIndices,
    /// The int64 index of the best element along one dim or of the flattened tensor.
    Arg,
    /// A cumulative op along one dim; the output has the input's shape.
    Scan,
}

impl ReductionKind {
    /// Lower-case name (`"reduce"`, `"values_indices"`, `"arg"`, `"scan"`).
    pub fn name(self) -> &'static str {
        match self {
            ReductionKind::Reduce => "reduce",
            ReductionKind::ValuesIndices => "values_indices",
            ReductionKind::Arg => "arg",
            ReductionKind::Scan => "scan",
        }
    }
}

/// How a reduction's output dtype follows from its input's (PyTorch's rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DTypeRule {
    /// Bool and integers accumulate in `i64` and give int64; `f16`/`bf16` accumulate in
    /// `f32` and keep their dtype; `f32`/`f64` stay.
    SumLike,
    /// The input's dtype.
    Same,
    /// Float input only, keeping its dtype; anything else is a dtype error reported as
    /// `op` with `msg` (`{dtype}` in it replaced by the input's legacy name).
    FloatOnly {
        /// The op named in the error.
        op: &'static str,
        /// The error text.
        msg: &'static str,
    },
    /// Bool and integers are first converted to float32; floats stay.
    ToFloat,
    /// Bool, except uint8 for uint8 input (PyTorch's legacy rule).
    Logical,
    /// int64 indices.
    Index,
}

impl DTypeRule {
    /// Lower-case name (`"sum_like"`, `"same"`, …).
    pub fn name(self) -> &'static str {
        match self {
            DTypeRule::SumLike => "sum_like",
            DTypeRule::Same => "same",
            DTypeRule::FloatOnly { .. } => "float_only",
            DTypeRule::ToFloat => "to_float",
            DTypeRule::Logical => "logical",
            DTypeRule::Index => "index",
        }
    }

    /// The dtype the loop reads: the input's, or float32 for [`ToFloat`](Self::ToFloat)
    /// on non-float input.
    pub fn input_dtype(self, input: DType) -> DType {
        match self {
            DTypeRule::ToFloat if !input.is_float() => DType::F32,
            _ => input,
        }
    }

    /// The output dtype for `input`, or the rule's dtype error.
    pub fn out_dtype(self, input: DType) -> Result<DType> {
        Ok(match self {
            DTypeRule::SumLike => {
                if input.is_float() {
                    input
                } else {
                    DType::I64
                }
            }
            DTypeRule::Same => input,
            DTypeRule::FloatOnly { op, msg } => {
                if !input.is_float() {
                    return Err(Error::dtype(
                        op,
                        msg.replace("{dtype}", input.legacy_name()),
                    ));
                }
                input
            }
            DTypeRule::ToFloat => self.input_dtype(input),
            DTypeRule::Logical => {
                if input == DType::U8 {
                    DType::U8
                } else {
                    DType::Bool
                }
            }
            DTypeRule::Index => DType::I64,
        })
    }
}

const MEAN_DTYPE: DTypeRule = DTypeRule::FloatOnly {
    op: "mean()",
    msg: "could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {dtype}",
};
const VAR_DTYPE: DTypeRule = DTypeRule::FloatOnly {
    op: "var",
    msg: "std and var only support floating point and complex dtypes",
};
const STD_DTYPE: DTypeRule = DTypeRule::FloatOnly {
    op: "std",
    msg: "std and var only support floating point and complex dtypes",
};

/// Generates [`Reduction`] and its accessors from the table.
macro_rules! reductions {
    ($( $(#[doc = $doc:literal])* $variant:ident = $name:literal, $kind:ident, $rule:expr; )*) => {
        /// Every reduction and scan, declared once in the table in `ops/reduce.rs`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Reduction {
            $( $(#[doc = $doc])* $variant, )*
        }

        impl Reduction {
            /// Every entry of the table, in table order.
            pub const ALL: &'static [Reduction] = &[$(Reduction::$variant),*];

            /// The op's name, as the `Tensor` method and the Python method are called.
            pub const fn name(self) -> &'static str {
                match self { $(Reduction::$variant => $name,)* }
            }

            /// What the op gives back.
            pub const fn kind(self) -> ReductionKind {
                match self { $(Reduction::$variant => ReductionKind::$kind,)* }
            }

            /// How the output dtype follows from the input's.
            pub const fn dtype_rule(self) -> DTypeRule {
                match self { $(Reduction::$variant => $rule,)* }
            }

            /// The one-line doc of the table entry.
            pub const fn doc(self) -> &'static str {
                match self { $(Reduction::$variant => concat!($($doc),*),)* }
            }
        }
    };
}

reductions! {
    /// Sum over dims; the sum over an empty dim is 0.
    Sum = "sum", Reduce, DTypeRule::SumLike;
    /// Product over dims; the product over an empty dim is 1.
    Prod = "prod", Reduce, DTypeRule::SumLike;
    /// Mean over dims of a float tensor; NaN over an empty dim.
    Mean = "mean", Reduce, MEAN_DTYPE;
    /// Maximum over dims; NaN propagates; an empty dim is an error.
    Amax = "amax", Reduce, DTypeRule::Same;
    /// Minimum over dims; NaN propagates; an empty dim is an error.
    Amin = "amin", Reduce, DTypeRule::Same;
    /// Maximum of all elements, or (values, indices) along a dim.
    Max = "max", ValuesIndices, DTypeRule::Same;
    /// Minimum of all elements, or (values, indices) along a dim.
    Min = "min", ValuesIndices, DTypeRule::Same;
    /// Index of the maximum (first occurrence, NaN counting as the maximum).
    Argmax = "argmax", Arg, DTypeRule::Index;
    /// Index of the minimum (first occurrence, NaN counting as the minimum).
    Argmin = "argmin", Arg, DTypeRule::Index;
    /// True where every element over dims is non-zero.
    All = "all", Reduce, DTypeRule::Logical;
    /// True where some element over dims is non-zero.
    Any = "any", Reduce, DTypeRule::Logical;
    /// Variance with a correction (1 by default), two passes in f64.
    Var = "var", Reduce, VAR_DTYPE;
    /// Standard deviation: the square root of var.
    Std = "std", Reduce, STD_DTYPE;
    /// log(sum(exp(x))) computed stably; integers are promoted to float32.
    Logsumexp = "logsumexp", Reduce, DTypeRule::ToFloat;
    /// Cumulative sum along a dim.
    Cumsum = "cumsum", Scan, DTypeRule::SumLike;
    /// Cumulative product along a dim.
    Cumprod = "cumprod", Scan, DTypeRule::SumLike;
}

/// The dims of a reduction, resolved, as a backend receives them.
#[derive(Debug)]
pub(crate) struct ReduceSpec<'a> {
    /// Per input dim: reduced?
    pub mask: &'a [bool],
    /// Elements folded into each output element (saturating; 0 when a reduced dim is
    /// empty).
    pub n: usize,
    /// `var`/`std`: the divisor is `max(n − correction, 0)`; unused by other ops.
    pub correction: f64,
}

/// A reduction's dims resolved against a tensor.
#[derive(Debug)]
struct Plan {
    /// Per input dim: reduced?
    mask: DimVec<bool>,
    /// The input shape with reduced dims set to 1.
    keep_shape: Shape,
    /// The result shape (reduced dims dropped unless `keepdim`).
    out_shape: Shape,
    /// Elements folded into each output element.
    n: usize,
}

impl Plan {
    /// Resolves `dims` (empty: all) for `t`, PyTorch-style.
    fn new(op: &'static str, t: &Tensor, dims: &[i64], keepdim: bool) -> Result<Plan> {
        let nd = t.ndim();
        let mut mask: DimVec<bool> = DimVec::from_elem(dims.is_empty(), nd);
        let mut seen: DimVec<bool> = DimVec::from_elem(false, nd.max(1));
        for &d in dims {
            let w = wrap_dim(op, d, nd)?;
            if seen[w] {
                return Err(Error::value(
                    op,
                    format!("dim {w} appears multiple times in the list of dims"),
                ));
            }
            seen[w] = true;
            if nd > 0 {
                mask[w] = true;
            }
        }
        let shape = t.shape();
        let keep_shape: Shape = (0..nd)
            .map(|k| if mask[k] { 1 } else { shape[k] })
            .collect();
        let out_shape: Shape = if keepdim {
            keep_shape.clone()
        } else {
            (0..nd).filter(|&k| !mask[k]).map(|k| shape[k]).collect()
        };
        // Elements per reduced group: 0 when a reduced size is 0; when only a kept size is
        // 0 (the result is empty), the reduced sizes may multiply past `usize`, and the
        // count, never used for an element, saturates.
        let mut n = 1usize;
        for k in (0..nd).filter(|&k| mask[k]) {
            if shape[k] == 0 {
                n = 0;
                break;
            }
            n = n.saturating_mul(shape[k]);
        }
        Ok(Plan {
            mask,
            keep_shape,
            out_shape,
            n,
        })
    }

    fn spec(&self, correction: f64) -> ReduceSpec<'_> {
        ReduceSpec {
            mask: &self.mask,
            n: self.n,
            correction,
        }
    }

    /// The keep-shaped result `out` (fresh, contiguous) viewed with the result shape.
    fn finish(&self, out: Tensor) -> Result<Tensor> {
        if out.shape() == self.out_shape.as_slice() {
            return Ok(out);
        }
        let layout = Layout::contiguous(&self.out_shape)?;
        Tensor::from_parts(out.storage().clone(), layout, out.dtype())
    }

    /// PyTorch's `zero_numel_check_dims`: ops without an identity (max, min, …) refuse
    /// to reduce an empty dim. `dims` are reported as given.
    fn check_nonempty(&self, op: &'static str, t: &Tensor, dims: &[i64]) -> Result<()> {
        if t.numel() != 0 {
            return Ok(());
        }
        if dims.is_empty() {
            return Err(Error::shape(
                op,
                "Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.",
            ));
        }
        for &d in dims {
            let w = wrap_dim(op, d, t.ndim())?;
            if t.shape()[w] == 0 {
                return Err(Error::index(
                    op,
                    format!("Expected reduction dim {d} to have non-zero size."),
                ));
            }
        }
        Ok(())
    }
}

/// Records `out = sum(t, dims)` (or the mean, `mean`) for autograd: the gradient of each
/// input element is the output gradient of its row (divided by the row's length).
fn spread_grad(t: &Tensor, out: Tensor, dims: &[i64], mean: bool) -> Result<Tensor> {
    if t.grad.get().is_none() || !crate::autograd::needs_grad(&[t]) {
        return Ok(out);
    }
    // PyTorch's names: the overload over all elements is 0, the one with dims 1.
    let name = match (mean, dims.is_empty()) {
        (false, true) => "SumBackward0",
        (false, false) => "SumBackward1",
        (true, true) => "MeanBackward0",
        (true, false) => "MeanBackward1",
    };
    let in_shape = t.shape().to_vec();
    let nd = in_shape.len();
    let mut keep = in_shape.clone();
    let mut count = 1usize;
    if dims.is_empty() {
        count = t.numel();
        keep.iter_mut().for_each(|n| *n = 1);
    } else {
        for &d in dims {
            let w = wrap_dim(name, d, nd)?;
            count *= in_shape[w];
            keep[w] = 1;
        }
    }
    let keep_i: Vec<i64> = keep.iter().map(|&n| n as i64).collect();
    let in_i: Vec<i64> = in_shape.iter().map(|&n| n as i64).collect();
    crate::autograd::record1(
        name,
        &[t],
        out,
        &[],
        Box::new(move |_saved, grads, _needs| {
            let g = grads[0].reshape(&keep_i)?.expand(&in_i)?;
            let g = if mean { g.div(count as f64)? } else { g };
            Ok(vec![Some(g)])
        }),
    )
}

/// The dims `dims` (all when empty) of an `nd`-dim tensor, wrapped.
fn reduced_dims(op: &'static str, dims: &[i64], nd: usize) -> Result<Vec<usize>> {
    if dims.is_empty() {
        return Ok((0..nd).collect());
    }
    dims.iter().map(|&d| wrap_dim(op, d, nd)).collect()
}

/// Records reduction `op` of `t` over `dims` for autograd, with the formula of its
/// derivative (PyTorch's): max/min-like ops spread the gradient evenly over the elements
/// equal to the result, var/std through the deviations from the mean, logsumexp through
/// the softmax, prod through the product of the other elements.
fn reduce_grad(
    t: &Tensor,
    out: Tensor,
    dims: &[i64],
    op: Reduction,
    correction: f64,
) -> Result<Tensor> {
    if t.grad.get().is_none() || !crate::autograd::needs_grad(&[t]) {
        return Ok(out);
    }
    let name = match op {
        Reduction::Prod => "ProdBackward1",
        Reduction::Amax => "AmaxBackward0",
        Reduction::Amin => "AminBackward0",
        Reduction::Max => "MaxBackward1",
        Reduction::Min => "MinBackward1",
        Reduction::Var => "VarBackward0",
        Reduction::Std => "StdBackward0",
        _ => "LogsumexpBackward0",
    };
    let nd = t.ndim();
    let red = reduced_dims(name, dims, nd)?;
    let in_shape = t.shape().to_vec();
    let mut keep: Vec<i64> = in_shape.iter().map(|&n| n as i64).collect();
    let mut count = 1usize;
    for &d in &red {
        count *= in_shape[d];
        keep[d] = 1;
    }
    let in_i: Vec<i64> = in_shape.iter().map(|&n| n as i64).collect();
    let red_i: Vec<i64> = red.iter().map(|&d| d as i64).collect();
    let formula: crate::autograd::Formula = Box::new(move |saved, grads, _needs| {
        let (x, y) = (&saved[0], &saved[1]);
        let g = grads[0].reshape(&keep)?;
        let y = y.reshape(&keep)?;
        let gi = match op {
            Reduction::Amax | Reduction::Amin | Reduction::Max | Reduction::Min => {
                let hit = x.eq(&y)?.to_dtype(x.dtype())?;
                let n = hit.sum(&red_i, true)?;
                g.mul(&hit)?.div(&n)?
            }
            Reduction::Var | Reduction::Std => {
                let mean = x.mean(&red_i, true)?;
                let dev = x.sub(&mean)?;
                let denom = (count as f64 - correction).max(0.0);
                if op == Reduction::Var {
                    g.mul(&dev)?.mul(2.0 / denom)?
                } else {
                    g.mul(&dev)?.div(&y.mul(denom)?)?
                }
            }
            Reduction::Prod => g.mul(&prod_of_others(x, &red)?)?,
            _ => g.mul(&x.sub(&y)?.exp()?)?,
        };
        Ok(vec![Some(gi.expand(&in_i)?)])
    });
    crate::autograd::record1(
        name,
        &[t],
        out,
        &[
            crate::autograd::Save::Input(t),
            crate::autograd::Save::Output(0),
        ],
        formula,
    )
}

/// `logsumexp` of a complex tensor (PyTorch's): `log Σ exp(z − m) + m` with `m` the largest
/// real part of each slice (0 where it is infinite), a constant to autograd, so the
/// gradient is that of the arithmetic it is made of.
fn complex_logsumexp(z: &Tensor, dims: &[i64], keepdim: bool) -> Result<Tensor> {
    if z.numel() == 0 {
        return z.exp()?.sum(dims, keepdim)?.log();
    }
    let shift = |keep: bool| -> Result<Tensor> {
        let _off = crate::autograd::no_grad();
        let m = z.real()?.amax(dims, keep)?;
        Tensor::where_cond(&m.isinf()?, 0.0, &m)
    };
    z.sub(&shift(true)?)?
        .exp()?
        .sum(dims, keepdim)?
        .log()?
        .add(&shift(keepdim)?)
}

/// For each element of `x`, the product of the other elements of its slice over `dims`
/// (zeros included: exclusive products from both ends, no division).
fn prod_of_others(x: &Tensor, dims: &[usize]) -> Result<Tensor> {
    let nd = x.ndim();
    if nd == 0 {
        return Tensor::ones(&[], x.dtype());
    }
    let mut order: Vec<i64> = (0..nd)
        .filter(|d| !dims.contains(d))
        .map(|d| d as i64)
        .collect();
    order.extend(dims.iter().map(|&d| d as i64));
    let moved = x.permute(&order)?;
    let mut flat_shape: Vec<i64> = moved.shape()[..nd - dims.len()]
        .iter()
        .map(|&n| n as i64)
        .collect();
    let k: usize = dims.iter().map(|&d| x.shape()[d]).product();
    flat_shape.push(k as i64);
    let flat = moved.reshape(&flat_shape)?;
    let last = flat_shape.len() as i64 - 1;
    let exclusive = |v: &Tensor| -> Result<Tensor> {
        let ones = Tensor::ones(v.shape(), v.dtype())?;
        if k > 1 {
            let cp = v.cumprod(last)?;
            // Through the base (`index_assign_`), so a second derivative reaches `cp`.
            let key = [
                TensorIndex::Ellipsis,
                TensorIndex::Slice {
                    start: Some(1),
                    stop: None,
                    step: 1,
                },
            ];
            ones.index_assign_(&key, &cp.narrow(last, 0, k as i64 - 1)?)?;
        }
        Ok(ones)
    };
    let left = exclusive(&flat)?;
    let right = exclusive(&flat.flip(&[last])?)?.flip(&[last])?;
    let others = left.mul(&right)?;
    let moved_shape: Vec<i64> = moved.shape().iter().map(|&n| n as i64).collect();
    let mut inverse = vec![0i64; nd];
    for (i, &d) in order.iter().enumerate() {
        inverse[d as usize] = i as i64;
    }
    others.reshape(&moved_shape)?.permute(&inverse)
}

/// Records `max(dim)`/`min(dim)`'s values for autograd: the gradient goes to the element
/// each index names.
fn select_grad(
    t: &Tensor,
    values: Tensor,
    idx: &Tensor,
    dim: i64,
    keepdim: bool,
    name: &'static str,
) -> Result<Tensor> {
    if t.grad.get().is_none() || !crate::autograd::needs_grad(&[t]) {
        return Ok(values);
    }
    let nd = t.ndim();
    let d = wrap_dim(name, dim, nd.max(1))?;
    let in_shape = t.shape().to_vec();
    let idx = if keepdim || nd == 0 {
        idx.clone()
    } else {
        idx.unsqueeze(d as i64)?
    };
    crate::autograd::record1(
        name,
        &[t],
        values,
        &[],
        Box::new(move |_saved, grads, _needs| {
            let g = if keepdim || nd == 0 {
                grads[0].clone()
            } else {
                grads[0].unsqueeze(d as i64)?
            };
            let n = in_shape.get(d).copied().unwrap_or(1);
            let mut pos_shape = vec![1i64; nd];
            if nd > 0 {
                pos_shape[d] = n as i64;
            }
            let pos = Tensor::arange(0, n as i64, 1, DType::I64)?.reshape(&pos_shape)?;
            let hit = pos.eq(&idx)?;
            Ok(vec![Some(Tensor::where_cond(&hit, &g, 0.0)?)])
        }),
    )
}

/// Records a scan (cumsum, cumprod) for autograd: cumsum's gradient is the reversed
/// cumulative sum of the output gradient; cumprod's is `Σ_{j≥i} g_j·y_j / x_i`, computed
/// without the division where some `x_i` is zero.
fn scan_grad(t: &Tensor, out: Tensor, dim: i64, op: Reduction) -> Result<Tensor> {
    if t.grad.get().is_none() || !crate::autograd::needs_grad(&[t]) {
        return Ok(out);
    }
    if t.ndim() == 0 {
        // A scan of one element is the element.
        return crate::autograd::record1(
            "CumsumBackward0",
            &[t],
            out,
            &[],
            Box::new(|_saved, grads, _needs| Ok(vec![Some(grads[0].clone())])),
        );
    }
    let d = wrap_dim(op.name(), dim, t.ndim())? as i64;
    let cumsum = op == Reduction::Cumsum;
    let name = if cumsum {
        "CumsumBackward0"
    } else {
        "CumprodBackward0"
    };
    crate::autograd::record1(
        name,
        &[t],
        out,
        &[
            crate::autograd::Save::Input(t),
            crate::autograd::Save::Output(0),
        ],
        Box::new(move |saved, grads, _needs| {
            let g = &grads[0];
            let rev = |v: &Tensor| -> Result<Tensor> { v.flip(&[d])?.cumsum(d)?.flip(&[d]) };
            if cumsum {
                return Ok(vec![Some(rev(g)?)]);
            }
            let (x, y) = (&saved[0], &saved[1]);
            let has_zero = x.eq(0.0)?.any(&[], false)?.item()?.to_f64() != 0.0;
            if !has_zero {
                return Ok(vec![Some(rev(&g.mul(y)?)?.div(x)?)]);
            }
            // With zeros: element by element along the dim (∂y_j/∂x_i for j ≥ i is the
            // product of x_0..x_j without x_i).
            let n = x.shape()[d as usize];
            let gi = Tensor::zeros_on(x.shape(), g.dtype(), g.device())?;
            for i in 0..n {
                let others = x.clone_data()?;
                others.narrow(d, i as i64, 1)?.fill_(1.0)?;
                let contrib = g.mul(&others.cumprod(d)?)?;
                let tail = contrib
                    .narrow(d, i as i64, (n - i) as i64)?
                    .sum(&[d], true)?;
                let mut key = vec![
                    TensorIndex::Slice {
                        start: None,
                        stop: None,
                        step: 1
                    };
                    d as usize
                ];
                key.push(TensorIndex::Slice {
                    start: Some(i as i64),
                    stop: Some(i as i64 + 1),
                    step: 1,
                });
                gi.index_assign_(&key, &tail)?;
            }
            Ok(vec![Some(gi)])
        }),
    )
}

/// The op layer of every [`ReductionKind::Reduce`] op (and `max()`/`min()`): resolve the
/// dims, apply the dtype rule, allocate the keep-shaped output, run the backend's loop.
fn reduce(
    op: Reduction,
    t: &Tensor,
    dims: &[i64],
    keepdim: bool,
    correction: f64,
    nonempty: Option<&'static str>,
) -> Result<Tensor> {
    if t.dtype().is_complex() && matches!(op, Reduction::Var | Reduction::Std) {
        // E|z − μ|² = var(re) + var(im), a real result.
        let part = |p: Tensor| reduce(Reduction::Var, &p, dims, keepdim, correction, nonempty);
        let v = part(t.real()?)?.add(&part(t.imag()?)?)?;
        return if op == Reduction::Std {
            v.sqrt()
        } else {
            Ok(v)
        };
    }
    if t.dtype().is_complex() && op == Reduction::Prod {
        return super::complex::prod(t, dims, keepdim);
    }
    if t.dtype().is_complex() && matches!(op, Reduction::Sum | Reduction::Mean) {
        // The parts sum (and average) independently: the same reduction over the real
        // pairs, the pair dim kept.
        let n = t.ndim();
        if n == 0 {
            return t.contiguous_copy();
        }
        let ds: Vec<i64> = if dims.is_empty() {
            (0..n as i64).collect()
        } else {
            dims.iter()
                .map(|&d| wrap_dim(op.name(), d, n).map(|d| d as i64))
                .collect::<Result<_>>()?
        };
        let pairs = reduce(op, &t.view_as_real()?, &ds, keepdim, correction, nonempty)?;
        return pairs.contiguous()?.view_as_complex();
    }
    let backend = backend_for(op.name(), t.device())?;
    let plan = Plan::new(op.name(), t, dims, keepdim)?;
    if let Some(pname) = nonempty {
        plan.check_nonempty(pname, t, dims)?;
    }
    let rule = op.dtype_rule();
    let out_dtype = rule.out_dtype(t.dtype())?;
    let in_dtype = rule.input_dtype(t.dtype());
    let converted;
    let input = if in_dtype == t.dtype() {
        t
    } else {
        converted = t.to_dtype(in_dtype)?;
        &converted
    };
    let out = Tensor::zeros_on(&plan.keep_shape, out_dtype, t.device())?;
    backend.reduce(op, &out, input, &plan.spec(correction))?;
    plan.finish(out)
}

impl Tensor {
    /// Sum over `dims` (all dims when empty), PyTorch's `sum(dim, keepdim)`.
    ///
    /// Bool and integer tensors sum in `i64` (wrapping) and give int64; `f16`/`bf16`
    /// accumulate in `f32`; float sums are pairwise (NumPy's accuracy or better) and
    /// deterministic whatever the number of threads. The sum over an empty dim is 0.
    ///
    /// # Errors
    /// A dim out of range, a repeated dim, or a conflicting borrow of the storage.
    pub fn sum(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let out = reduce(Reduction::Sum, self, dims, keepdim, 0.0, None)?;
        spread_grad(self, out, dims, false)
    }

    /// Product over `dims` (all when empty), with the dtype rules of [`sum`](Self::sum).
    /// The product over an empty dim is 1.
    ///
    /// # Errors
    /// As for [`sum`](Self::sum).
    pub fn prod(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let out = reduce(Reduction::Prod, self, dims, keepdim, 0.0, None)?;
        reduce_grad(self, out, dims, Reduction::Prod, 0.0)
    }

    /// Mean over `dims` (all when empty) of a float tensor; `NaN` over an empty dim.
    ///
    /// # Errors
    /// PyTorch's dtype error for non-float input, and those of [`sum`](Self::sum).
    pub fn mean(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let out = reduce(Reduction::Mean, self, dims, keepdim, 0.0, None)?;
        spread_grad(self, out, dims, true)
    }

    /// Maximum over `dims` (all when empty), keeping the dtype; `NaN` propagates.
    ///
    /// # Errors
    /// Reducing an empty dim (`amax(): Expected reduction dim 0 to have non-zero size.`),
    /// and those of [`sum`](Self::sum).
    pub fn amax(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let out = reduce(Reduction::Amax, self, dims, keepdim, 0.0, Some("amax()"))?;
        reduce_grad(self, out, dims, Reduction::Amax, 0.0)
    }

    /// Minimum over `dims` (all when empty); see [`amax`](Self::amax).
    ///
    /// # Errors
    /// As for [`amax`](Self::amax).
    pub fn amin(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let out = reduce(Reduction::Amin, self, dims, keepdim, 0.0, Some("amin()"))?;
        reduce_grad(self, out, dims, Reduction::Amin, 0.0)
    }

    /// The maximum of all elements as a 0-d tensor (PyTorch's `max()`); `NaN` propagates.
    ///
    /// # Errors
    /// An empty tensor, or a conflicting borrow.
    pub fn max(&self) -> Result<Tensor> {
        let out = reduce(Reduction::Max, self, &[], false, 0.0, Some("max()"))?;
        reduce_grad(self, out, &[], Reduction::Max, 0.0)
    }

    /// The minimum of all elements as a 0-d tensor (PyTorch's `min()`).
    ///
    /// # Errors
    /// As for [`max`](Self::max).
    pub fn min(&self) -> Result<Tensor> {
        let out = reduce(Reduction::Min, self, &[], false, 0.0, Some("min()"))?;
        reduce_grad(self, out, &[], Reduction::Min, 0.0)
    }

    /// `(values, indices)` of the maximum along `dim`, PyTorch's `max(dim, keepdim)`:
    /// the index (int64) is that of the first occurrence, and a `NaN` counts as the
    /// maximum.
    ///
    /// # Errors
    /// A dim out of range, or an empty dim (`max(): Expected reduction dim 0 to have
    /// non-zero size.`).
    pub fn max_dim(&self, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let (v, i) = self.arg_dim(Reduction::Max, "max()", dim, keepdim, true)?;
        let v = v.ok_or_else(|| Error::value("max", "values were not computed"))?;
        Ok((select_grad(self, v, &i, dim, keepdim, "MaxBackward0")?, i))
    }

    /// `(values, indices)` of the minimum along `dim`; see [`max_dim`](Self::max_dim).
    ///
    /// # Errors
    /// As for [`max_dim`](Self::max_dim).
    pub fn min_dim(&self, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let (v, i) = self.arg_dim(Reduction::Min, "min()", dim, keepdim, true)?;
        let v = v.ok_or_else(|| Error::value("min", "values were not computed"))?;
        Ok((select_grad(self, v, &i, dim, keepdim, "MinBackward0")?, i))
    }

    /// Index (int64) of the maximum along `dim`, or of the flattened tensor when `dim` is
    /// `None`; first occurrence, `NaN` counting as the maximum.
    ///
    /// # Errors
    /// A dim out of range, an empty dim, or an empty tensor with `dim = None`.
    pub fn argmax(&self, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
        self.arg_any(Reduction::Argmax, "argmax()", dim, keepdim)
    }

    /// Index (int64) of the minimum; see [`argmax`](Self::argmax).
    ///
    /// # Errors
    /// As for [`argmax`](Self::argmax).
    pub fn argmin(&self, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
        self.arg_any(Reduction::Argmin, "argmin()", dim, keepdim)
    }

    fn arg_any(
        &self,
        op: Reduction,
        pname: &'static str,
        dim: Option<i64>,
        keepdim: bool,
    ) -> Result<Tensor> {
        match dim {
            Some(d) => Ok(self.arg_dim(op, pname, d, keepdim, false)?.1),
            None => {
                if self.numel() == 0 {
                    return Err(Error::index(
                        pname,
                        "Expected reduction dim to be specified for input.numel() == 0.",
                    ));
                }
                let flat = self.reshape(&[-1])?;
                let i = flat.arg_dim(op, pname, 0, false, false)?.1;
                if keepdim {
                    let ones: DimVec<usize> = DimVec::from_elem(1, self.ndim());
                    Tensor::from_parts(i.storage().clone(), Layout::contiguous(&ones)?, i.dtype())
                } else {
                    Ok(i)
                }
            }
        }
    }

    /// The op layer of the arg-reductions (`max(dim)`, `argmax`, …).
    fn arg_dim(
        &self,
        op: Reduction,
        pname: &'static str,
        dim: i64,
        keepdim: bool,
        with_values: bool,
    ) -> Result<(Option<Tensor>, Tensor)> {
        let name = op.name();
        let backend = backend_for(name, self.device())?;
        let w = wrap_dim(name, dim, self.ndim())?;
        if self.numel() == 0 && self.shape()[w] == 0 {
            return Err(Error::index(
                pname,
                format!("Expected reduction dim {w} to have non-zero size."),
            ));
        }
        let plan = Plan::new(name, self, &[dim], keepdim)?;
        let device = self.device();
        let vals = if with_values {
            let dt = op.dtype_rule().out_dtype(self.dtype())?;
            Some(Tensor::zeros_on(&plan.keep_shape, dt, device)?)
        } else {
            None
        };
        let idx = Tensor::zeros_on(&plan.keep_shape, DType::I64, device)?;
        if self.numel() > 0 {
            backend.arg_reduce(op, vals.as_ref(), &idx, self, &plan.spec(0.0))?;
        }
        let vals = vals.map(|v| plan.finish(v)).transpose()?;
        Ok((vals, plan.finish(idx)?))
    }

    /// True where every element over `dims` (all when empty) is non-zero; bool result
    /// (uint8 for uint8 input, as PyTorch). `all` of nothing is true.
    ///
    /// # Errors
    /// As for [`sum`](Self::sum).
    pub fn all(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        reduce(Reduction::All, self, dims, keepdim, 0.0, None)
    }

    /// True where some element over `dims` (all when empty) is non-zero (`NaN` counts);
    /// see [`all`](Self::all).
    ///
    /// # Errors
    /// As for [`sum`](Self::sum).
    pub fn any(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        reduce(Reduction::Any, self, dims, keepdim, 0.0, None)
    }

    /// Variance over `dims` (all when empty) with Bessel's correction (`correction = 1`,
    /// PyTorch's default); see [`var_correction`](Self::var_correction).
    ///
    /// # Errors
    /// As for [`var_correction`](Self::var_correction).
    pub fn var(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        self.var_correction(dims, 1.0, keepdim)
    }

    /// Variance `Σ (x − mean)² / max(n − correction, 0)` of a float tensor over `dims`
    /// (all when empty), computed in `f64` with two passes; `NaN` for one element with
    /// `correction = 1` and for an empty dim.
    ///
    /// # Errors
    /// Non-float input (`std and var only support floating point and complex dtypes`), and
    /// those of [`sum`](Self::sum).
    pub fn var_correction(&self, dims: &[i64], correction: f64, keepdim: bool) -> Result<Tensor> {
        let out = reduce(Reduction::Var, self, dims, keepdim, correction, None)?;
        reduce_grad(self, out, dims, Reduction::Var, correction)
    }

    /// Standard deviation with `correction = 1`; see [`var`](Self::var).
    ///
    /// # Errors
    /// As for [`var_correction`](Self::var_correction).
    pub fn std(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        self.std_correction(dims, 1.0, keepdim)
    }

    /// Standard deviation: the square root of [`var_correction`](Self::var_correction).
    ///
    /// # Errors
    /// As for [`var_correction`](Self::var_correction).
    pub fn std_correction(&self, dims: &[i64], correction: f64, keepdim: bool) -> Result<Tensor> {
        let out = reduce(Reduction::Std, self, dims, keepdim, correction, None)?;
        reduce_grad(self, out, dims, Reduction::Std, correction)
    }

    /// `log Σ exp(x)` over `dims` (all when empty), computed stably (the maximum is
    /// subtracted first). Integer and bool input is promoted to float32, as PyTorch does;
    /// complex input gives a complex result (shifted by the largest real part); the
    /// result over an empty dim is `-inf`.
    ///
    /// # Errors
    /// As for [`sum`](Self::sum).
    pub fn logsumexp(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        if self.is_complex() {
            return complex_logsumexp(self, dims, keepdim);
        }
        let out = reduce(Reduction::Logsumexp, self, dims, keepdim, 0.0, None)?;
        reduce_grad(self, out, dims, Reduction::Logsumexp, 0.0)
    }

    /// Cumulative sum along `dim`, with the dtype rules of [`sum`](Self::sum) (int32 gives
    /// int64), accumulated in sequence as PyTorch does (`f32` in `f64`).
    ///
    /// # Errors
    /// A dim out of range or a conflicting borrow.
    pub fn cumsum(&self, dim: i64) -> Result<Tensor> {
        let out = self.scan(Reduction::Cumsum, dim)?;
        scan_grad(self, out, dim, Reduction::Cumsum)
    }

    /// Cumulative product along `dim`; see [`cumsum`](Self::cumsum).
    ///
    /// # Errors
    /// As for [`cumsum`](Self::cumsum).
    pub fn cumprod(&self, dim: i64) -> Result<Tensor> {
        let out = self.scan(Reduction::Cumprod, dim)?;
        scan_grad(self, out, dim, Reduction::Cumprod)
    }

    /// The op layer of the scans.
    fn scan(&self, op: Reduction, dim: i64) -> Result<Tensor> {
        let name = op.name();
        let backend = backend_for(name, self.device())?;
        let d = wrap_dim(name, dim, self.ndim())?;
        if self.is_complex() {
            return match op {
                // The parts accumulate independently.
                Reduction::Cumsum if self.ndim() > 0 => self
                    .view_as_real()?
                    .cumsum(d as i64)?
                    .contiguous()?
                    .view_as_complex(),
                Reduction::Cumprod => super::complex::cumprod(self, d),
                _ => self.contiguous_copy(),
            };
        }
        let dt = op.dtype_rule().out_dtype(self.dtype())?;
        let out = Tensor::zeros_on(self.shape(), dt, self.device())?;
        if self.numel() > 0 {
            backend.scan(op, &out, self, d)?;
        }
        Ok(out)
    }
}
