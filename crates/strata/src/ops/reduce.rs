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
use crate::tensor::Tensor;

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
        reduce(Reduction::Sum, self, dims, keepdim, 0.0, None)
    }

    /// Product over `dims` (all when empty), with the dtype rules of [`sum`](Self::sum).
    /// The product over an empty dim is 1.
    ///
    /// # Errors
    /// As for [`sum`](Self::sum).
    pub fn prod(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        reduce(Reduction::Prod, self, dims, keepdim, 0.0, None)
    }

    /// Mean over `dims` (all when empty) of a float tensor; `NaN` over an empty dim.
    ///
    /// # Errors
    /// PyTorch's dtype error for non-float input, and those of [`sum`](Self::sum).
    pub fn mean(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        reduce(Reduction::Mean, self, dims, keepdim, 0.0, None)
    }

    /// Maximum over `dims` (all when empty), keeping the dtype; `NaN` propagates.
    ///
    /// # Errors
    /// Reducing an empty dim (`amax(): Expected reduction dim 0 to have non-zero size.`),
    /// and those of [`sum`](Self::sum).
    pub fn amax(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        reduce(Reduction::Amax, self, dims, keepdim, 0.0, Some("amax()"))
    }

    /// Minimum over `dims` (all when empty); see [`amax`](Self::amax).
    ///
    /// # Errors
    /// As for [`amax`](Self::amax).
    pub fn amin(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        reduce(Reduction::Amin, self, dims, keepdim, 0.0, Some("amin()"))
    }

    /// The maximum of all elements as a 0-d tensor (PyTorch's `max()`); `NaN` propagates.
    ///
    /// # Errors
    /// An empty tensor, or a conflicting borrow.
    pub fn max(&self) -> Result<Tensor> {
        reduce(Reduction::Max, self, &[], false, 0.0, Some("max()"))
    }

    /// The minimum of all elements as a 0-d tensor (PyTorch's `min()`).
    ///
    /// # Errors
    /// As for [`max`](Self::max).
    pub fn min(&self) -> Result<Tensor> {
        reduce(Reduction::Min, self, &[], false, 0.0, Some("min()"))
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
        Ok((
            v.ok_or_else(|| Error::value("max", "values were not computed"))?,
            i,
        ))
    }

    /// `(values, indices)` of the minimum along `dim`; see [`max_dim`](Self::max_dim).
    ///
    /// # Errors
    /// As for [`max_dim`](Self::max_dim).
    pub fn min_dim(&self, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let (v, i) = self.arg_dim(Reduction::Min, "min()", dim, keepdim, true)?;
        Ok((
            v.ok_or_else(|| Error::value("min", "values were not computed"))?,
            i,
        ))
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
        reduce(Reduction::Var, self, dims, keepdim, correction, None)
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
        reduce(Reduction::Std, self, dims, keepdim, correction, None)
    }

    /// `log Σ exp(x)` over `dims` (all when empty), computed stably (the maximum is
    /// subtracted first). Integer and bool input is promoted to float32, as PyTorch does;
    /// the result over an empty dim is `-inf`.
    ///
    /// # Errors
    /// As for [`sum`](Self::sum).
    pub fn logsumexp(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        reduce(Reduction::Logsumexp, self, dims, keepdim, 0.0, None)
    }

    /// Cumulative sum along `dim`, with the dtype rules of [`sum`](Self::sum) (int32 gives
    /// int64), accumulated in sequence as PyTorch does (`f32` in `f64`).
    ///
    /// # Errors
    /// A dim out of range or a conflicting borrow.
    pub fn cumsum(&self, dim: i64) -> Result<Tensor> {
        self.scan(Reduction::Cumsum, dim)
    }

    /// Cumulative product along `dim`; see [`cumsum`](Self::cumsum).
    ///
    /// # Errors
    /// As for [`cumsum`](Self::cumsum).
    pub fn cumprod(&self, dim: i64) -> Result<Tensor> {
        self.scan(Reduction::Cumprod, dim)
    }

    /// The op layer of the scans.
    fn scan(&self, op: Reduction, dim: i64) -> Result<Tensor> {
        let name = op.name();
        let backend = backend_for(name, self.device())?;
        let d = wrap_dim(name, dim, self.ndim())?;
        let dt = op.dtype_rule().out_dtype(self.dtype())?;
        let out = Tensor::zeros_on(self.shape(), dt, self.device())?;
        if self.numel() > 0 {
            backend.scan(op, &out, self, d)?;
        }
        Ok(out)
    }
}
