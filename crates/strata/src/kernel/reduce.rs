//! Reductions (`sum`, `prod`, `mean`, `amax`/`amin`, `max`/`min`, `argmax`/`argmin`,
//! `all`/`any`, `var`/`std`, `logsumexp`) and scans (`cumsum`, `cumprod`) on any layout.
//!
//! Semantics follow PyTorch: `dims` lists the dims to reduce (negative dims count from
//! the end, an empty list reduces every dim, a repeated dim is an error), `keepdim` keeps
//! them as size-1 dims. Integer and bool sums and products accumulate in `i64` and give
//! int64; `f16`/`bf16` accumulate in `f32` and keep their dtype.
//!
//! How: the input's dims are split into kept and reduced ones and simplified like an
//! engine loop (`kernel/engine.rs`; [`geom`]); then either each output element folds runs
//! along the fastest input dim with several accumulators and pairwise combination (as
//! accurate as NumPy's pairwise sum), or, when the fastest dim is kept, a block of outputs is folded
//! row by row while the input streams ([`run`]). Work is split across rayon threads by
//! output blocks, or by fixed subtrees of one fold, so results never depend on the number
//! of threads. Outputs are fresh contiguous tensors.
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

mod arg;
mod geom;
mod ops;
mod run;
mod scan;
mod vertical;

use std::marker::PhantomData;

use smallvec::SmallVec;

use self::geom::Geom;
use self::ops::{
    Extreme, Logical, LseMax, LseSum, LseSumF32, Mean, MeanF64, Prod, ReduceOp, SqDev, Sum,
    Summable,
};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::layout::{contiguous_strides, wrap_dim, Layout, Shape};
use crate::storage::borrow;
use crate::tensor::Tensor;
use crate::with_dtype;

/// Runs `$body` with `$T` bound to the element type of a float dtype, else `$other`.
/// (The float-only counterpart of [`with_dtype!`] for ops PyTorch refuses on integers.)
macro_rules! with_float {
    ($dtype:expr, $T:ident => $body:expr, _ => $other:expr) => {
        match $dtype {
            DType::F16 => {
                type $T = half::f16;
                $body
            }
            DType::BF16 => {
                type $T = half::bf16;
                $body
            }
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
            _ => $other,
        }
    };
}

/// A reduction's dims resolved against a tensor.
#[derive(Debug)]
struct Plan {
    /// Per input dim: reduced?
    mask: SmallVec<[bool; 6]>,
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
        let mut mask: SmallVec<[bool; 6]> = SmallVec::from_elem(dims.is_empty(), nd);
        let mut seen: SmallVec<[bool; 6]> = SmallVec::from_elem(false, nd.max(1));
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
        let reduced: Shape = (0..nd).filter(|&k| mask[k]).map(|k| shape[k]).collect();
        let n = if reduced.contains(&0) {
            0
        } else {
            reduced
                .iter()
                .try_fold(1usize, |a, &s| a.checked_mul(s))
                .unwrap_or(usize::MAX)
        };
        Ok(Plan {
            mask,
            keep_shape,
            out_shape,
            n,
        })
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

/// Folds `t` with `op` into a fresh keep-shaped tensor; `aux` (keep-shaped, contiguous
/// `f64`) is handed to the op per output element.
fn fold_keep<O: ReduceOp>(
    name: &'static str,
    t: &Tensor,
    plan: &Plan,
    op: &O,
    aux: Option<&Tensor>,
) -> Result<Tensor> {
    let out = Tensor::zeros(&plan.keep_shape, O::Out::DTYPE)?;
    let mut wants = vec![(out.storage(), true), (t.storage(), false)];
    if let Some(a) = aux {
        debug_assert!(a.dtype() == DType::F64 && a.shape() == out.shape() && a.is_contiguous());
        wants.push((a.storage(), false));
    }
    let _g = borrow::acquire(name, &wants)?;
    let outp = out.storage().data_ptr();
    let auxp = aux.map(|a| a.storage().data_ptr() as *const f64);
    if t.numel() == 0 {
        // Every output folds nothing: its value is `finish(identity)`.
        for k in 0..out.numel() {
            // SAFETY: `k` is an element of the fresh contiguous `out` and of `aux` (same
            // shape), inside their storages (L4), borrowed above (S4).
            unsafe {
                let a = auxp.map_or(0.0, |a| a.add(k).read_unaligned());
                op.finish(op.identity(), plan.n, a)
                    .store(outp.add(k * size_of::<O::Out>()));
            }
        }
        return Ok(out);
    }
    let out_strides = contiguous_strides(&plan.keep_shape);
    let g = Geom::new(
        t.shape(),
        t.strides(),
        t.offset(),
        &out_strides,
        &plan.mask,
        true,
        true,
    );
    let ptrs = run::Ptrs {
        inp: t.storage().data_ptr(),
        out: outp,
        aux: auxp,
    };
    // SAFETY: `g` comes from `t`'s checked layout (L1–L4) and the fresh contiguous output
    // (and aux, same shape and strides); the storages are alive (S1) and borrowed above,
    // shared for reads and exclusive for `out` (S4); output elements are distinct.
    unsafe { run::fold(op, &g, ptrs, plan.n, true) };
    Ok(out)
}

/// `fold_keep`, then the result shape.
fn fold<O: ReduceOp>(
    name: &'static str,
    t: &Tensor,
    plan: &Plan,
    op: &O,
    aux: Option<&Tensor>,
) -> Result<Tensor> {
    plan.finish(fold_keep(name, t, plan, op, aux)?)
}

fn sum_impl<T: Summable>(t: &Tensor, plan: &Plan) -> Result<Tensor> {
    fold("sum", t, plan, &Sum::<T>::default(), None)
}

fn prod_impl<T: Summable>(t: &Tensor, plan: &Plan) -> Result<Tensor> {
    fold("prod", t, plan, &Prod::<T>::default(), None)
}

fn extreme_impl<T: Summable, const MAX: bool>(
    name: &'static str,
    t: &Tensor,
    plan: &Plan,
) -> Result<Tensor> {
    fold(name, t, plan, &Extreme::<T, MAX>::default(), None)
}

fn logical_impl<T: Element, const ALL: bool>(
    name: &'static str,
    t: &Tensor,
    plan: &Plan,
) -> Result<Tensor> {
    // PyTorch keeps uint8 for uint8 input (a legacy rule) and gives bool otherwise.
    if T::DTYPE == DType::U8 {
        fold(name, t, plan, &Logical::<T, u8, ALL>::default(), None)
    } else {
        fold(name, t, plan, &Logical::<T, bool, ALL>::default(), None)
    }
}

fn var_impl<T: Summable>(
    name: &'static str,
    t: &Tensor,
    plan: &Plan,
    correction: f64,
    sqrt: bool,
) -> Result<Tensor> {
    let mean = fold_keep(name, t, plan, &MeanF64::<T>::default(), None)?;
    let op = SqDev::<T> {
        correction,
        sqrt,
        _t: PhantomData,
    };
    fold(name, t, plan, &op, Some(&mean))
}

fn logsumexp_impl<T: Summable>(t: &Tensor, plan: &Plan) -> Result<Tensor> {
    let m = fold_keep("logsumexp", t, plan, &LseMax::<T>::default(), None)?;
    if T::DTYPE == DType::F64 {
        fold("logsumexp", t, plan, &LseSum::<T>::default(), Some(&m))
    } else {
        fold("logsumexp", t, plan, &LseSumF32::<T>::default(), Some(&m))
    }
}

/// Values (optional) and indices of the best element along `dim`.
fn arg_impl<T: Summable, const MAX: bool>(
    t: &Tensor,
    plan: &Plan,
    with_values: bool,
) -> Result<(Option<Tensor>, Tensor)> {
    let vals = if with_values {
        Some(Tensor::zeros(&plan.keep_shape, T::DTYPE)?)
    } else {
        None
    };
    let idx = Tensor::zeros(&plan.keep_shape, DType::I64)?;
    if t.numel() > 0 {
        let mut wants = vec![(idx.storage(), true), (t.storage(), false)];
        if let Some(v) = &vals {
            wants.push((v.storage(), true));
        }
        let _g = borrow::acquire("argmax", &wants)?;
        let g = Geom::new(
            t.shape(),
            t.strides(),
            t.offset(),
            &contiguous_strides(&plan.keep_shape),
            &plan.mask,
            true,
            false,
        );
        let out = arg::ArgOut {
            vals: vals.as_ref().map(|v| v.storage().data_ptr()),
            idx: idx.storage().data_ptr(),
        };
        // SAFETY: `g` comes from `t`'s checked layout (L1–L4) and the fresh contiguous
        // outputs (same shape, so the same element strides); all storages are alive (S1)
        // and borrowed above (S4); the reduced dim is not flipped, so indices count from
        // its first element.
        unsafe { arg::arg_fold::<T, MAX>(&g, t.storage().data_ptr(), out, true) };
    }
    let vals = vals.map(|v| plan.finish(v)).transpose()?;
    Ok((vals, plan.finish(idx)?))
}

fn scan_impl<T: Summable, const PROD: bool>(
    name: &'static str,
    t: &Tensor,
    dim: usize,
) -> Result<Tensor> {
    let out = Tensor::zeros(t.shape(), <T as Summable>::Out::DTYPE)?;
    if t.numel() == 0 {
        return Ok(out);
    }
    let mask: SmallVec<[bool; 6]> = (0..t.ndim()).map(|k| k == dim).collect();
    let g = Geom::new(
        t.shape(),
        t.strides(),
        t.offset(),
        &contiguous_strides(t.shape()),
        &mask,
        false,
        false,
    );
    let _g = borrow::acquire(name, &[(out.storage(), true), (t.storage(), false)])?;
    // SAFETY: `g` comes from `t`'s checked layout (L1–L4) and the fresh contiguous `out`
    // of the same shape; both storages are alive (S1) and borrowed above (S4).
    unsafe { scan::scan::<T, PROD>(&g, t.storage().data_ptr(), out.storage().data_ptr(), true) };
    Ok(out)
}

fn mean_dtype_error(t: &Tensor) -> Error {
    Error::dtype(
        "mean()",
        format!(
            "could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}",
            t.dtype().legacy_name()
        ),
    )
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
        let plan = Plan::new("sum", self, dims, keepdim)?;
        with_dtype!(self.dtype(), T => sum_impl::<T>(self, &plan))
    }

    /// Product over `dims` (all when empty), with the dtype rules of [`sum`](Self::sum).
    /// The product over an empty dim is 1.
    ///
    /// # Errors
    /// As for [`sum`](Self::sum).
    pub fn prod(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let plan = Plan::new("prod", self, dims, keepdim)?;
        with_dtype!(self.dtype(), T => prod_impl::<T>(self, &plan))
    }

    /// Mean over `dims` (all when empty) of a float tensor; `NaN` over an empty dim.
    ///
    /// # Errors
    /// PyTorch's dtype error for non-float input, and those of [`sum`](Self::sum).
    pub fn mean(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let plan = Plan::new("mean", self, dims, keepdim)?;
        with_float!(self.dtype(), T => fold("mean", self, &plan, &Mean::<T>::default(), None),
            _ => Err(mean_dtype_error(self)))
    }

    /// Maximum over `dims` (all when empty), keeping the dtype; `NaN` propagates.
    ///
    /// # Errors
    /// Reducing an empty dim (`amax(): Expected reduction dim 0 to have non-zero size.`),
    /// and those of [`sum`](Self::sum).
    pub fn amax(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let plan = Plan::new("amax", self, dims, keepdim)?;
        plan.check_nonempty("amax()", self, dims)?;
        with_dtype!(self.dtype(), T => extreme_impl::<T, true>("amax", self, &plan))
    }

    /// Minimum over `dims` (all when empty); see [`amax`](Self::amax).
    ///
    /// # Errors
    /// As for [`amax`](Self::amax).
    pub fn amin(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let plan = Plan::new("amin", self, dims, keepdim)?;
        plan.check_nonempty("amin()", self, dims)?;
        with_dtype!(self.dtype(), T => extreme_impl::<T, false>("amin", self, &plan))
    }

    /// The maximum of all elements as a 0-d tensor (PyTorch's `max()`); `NaN` propagates.
    ///
    /// # Errors
    /// An empty tensor, or a conflicting borrow.
    pub fn max(&self) -> Result<Tensor> {
        let plan = Plan::new("max", self, &[], false)?;
        plan.check_nonempty("max()", self, &[])?;
        with_dtype!(self.dtype(), T => extreme_impl::<T, true>("max", self, &plan))
    }

    /// The minimum of all elements as a 0-d tensor (PyTorch's `min()`).
    ///
    /// # Errors
    /// As for [`max`](Self::max).
    pub fn min(&self) -> Result<Tensor> {
        let plan = Plan::new("min", self, &[], false)?;
        plan.check_nonempty("min()", self, &[])?;
        with_dtype!(self.dtype(), T => extreme_impl::<T, false>("min", self, &plan))
    }

    /// `(values, indices)` of the maximum along `dim`, PyTorch's `max(dim, keepdim)`:
    /// the index (int64) is that of the first occurrence, and a `NaN` counts as the
    /// maximum.
    ///
    /// # Errors
    /// A dim out of range, or an empty dim (`max(): Expected reduction dim 0 to have
    /// non-zero size.`).
    pub fn max_dim(&self, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        let (v, i) = self.arg_dim::<true>("max", "max()", dim, keepdim, true)?;
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
        let (v, i) = self.arg_dim::<false>("min", "min()", dim, keepdim, true)?;
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
        self.arg_any::<true>("argmax", "argmax()", dim, keepdim)
    }

    /// Index (int64) of the minimum; see [`argmax`](Self::argmax).
    ///
    /// # Errors
    /// As for [`argmax`](Self::argmax).
    pub fn argmin(&self, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
        self.arg_any::<false>("argmin", "argmin()", dim, keepdim)
    }

    fn arg_any<const MAX: bool>(
        &self,
        name: &'static str,
        pname: &'static str,
        dim: Option<i64>,
        keepdim: bool,
    ) -> Result<Tensor> {
        match dim {
            Some(d) => Ok(self.arg_dim::<MAX>(name, pname, d, keepdim, false)?.1),
            None => {
                if self.numel() == 0 {
                    return Err(Error::index(
                        pname,
                        "Expected reduction dim to be specified for input.numel() == 0.",
                    ));
                }
                let flat = self.reshape(&[-1])?;
                let i = flat.arg_dim::<MAX>(name, pname, 0, false, false)?.1;
                if keepdim {
                    let ones: SmallVec<[usize; 6]> = SmallVec::from_elem(1, self.ndim());
                    Tensor::from_parts(i.storage().clone(), Layout::contiguous(&ones)?, i.dtype())
                } else {
                    Ok(i)
                }
            }
        }
    }

    fn arg_dim<const MAX: bool>(
        &self,
        name: &'static str,
        pname: &'static str,
        dim: i64,
        keepdim: bool,
        with_values: bool,
    ) -> Result<(Option<Tensor>, Tensor)> {
        let w = wrap_dim(name, dim, self.ndim())?;
        if self.numel() == 0 && self.shape()[w] == 0 {
            return Err(Error::index(
                pname,
                format!("Expected reduction dim {w} to have non-zero size."),
            ));
        }
        let plan = Plan::new(name, self, &[dim], keepdim)?;
        with_dtype!(self.dtype(), T => arg_impl::<T, MAX>(self, &plan, with_values))
    }

    /// True where every element over `dims` (all when empty) is non-zero; bool result
    /// (uint8 for uint8 input, as PyTorch). `all` of nothing is true.
    ///
    /// # Errors
    /// As for [`sum`](Self::sum).
    pub fn all(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let plan = Plan::new("all", self, dims, keepdim)?;
        with_dtype!(self.dtype(), T => logical_impl::<T, true>("all", self, &plan))
    }

    /// True where some element over `dims` (all when empty) is non-zero (`NaN` counts);
    /// see [`all`](Self::all).
    ///
    /// # Errors
    /// As for [`sum`](Self::sum).
    pub fn any(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let plan = Plan::new("any", self, dims, keepdim)?;
        with_dtype!(self.dtype(), T => logical_impl::<T, false>("any", self, &plan))
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
        self.var_std("var", dims, correction, keepdim, false)
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
        self.var_std("std", dims, correction, keepdim, true)
    }

    fn var_std(
        &self,
        name: &'static str,
        dims: &[i64],
        correction: f64,
        keepdim: bool,
        sqrt: bool,
    ) -> Result<Tensor> {
        let plan = Plan::new(name, self, dims, keepdim)?;
        with_float!(self.dtype(), T => var_impl::<T>(name, self, &plan, correction, sqrt),
            _ => Err(Error::dtype(name, "std and var only support floating point and complex dtypes")))
    }

    /// `log Σ exp(x)` over `dims` (all when empty), computed stably (the maximum is
    /// subtracted first). Integer and bool input is promoted to float32, as PyTorch does;
    /// the result over an empty dim is `-inf`.
    ///
    /// # Errors
    /// As for [`sum`](Self::sum).
    pub fn logsumexp(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let plan = Plan::new("logsumexp", self, dims, keepdim)?;
        let x = if self.dtype().is_float() {
            self.clone()
        } else {
            self.to_dtype(DType::F32)?
        };
        with_float!(x.dtype(), T => logsumexp_impl::<T>(&x, &plan),
            _ => Err(Error::dtype("logsumexp", "expected a float tensor")))
    }

    /// Cumulative sum along `dim`, with the dtype rules of [`sum`](Self::sum) (int32 gives
    /// int64), accumulated in sequence as PyTorch does (`f32` in `f64`).
    ///
    /// # Errors
    /// A dim out of range or a conflicting borrow.
    pub fn cumsum(&self, dim: i64) -> Result<Tensor> {
        let d = wrap_dim("cumsum", dim, self.ndim())?;
        with_dtype!(self.dtype(), T => scan_impl::<T, false>("cumsum", self, d))
    }

    /// Cumulative product along `dim`; see [`cumsum`](Self::cumsum).
    ///
    /// # Errors
    /// As for [`cumsum`](Self::cumsum).
    pub fn cumprod(&self, dim: i64) -> Result<Tensor> {
        let d = wrap_dim("cumprod", dim, self.ndim())?;
        with_dtype!(self.dtype(), T => scan_impl::<T, true>("cumprod", self, d))
    }
}
