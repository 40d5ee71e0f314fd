//! The CPU loops of the reductions and scans declared in `ops/reduce.rs` (which holds
//! the op layer: dims, dtype rules, outputs).
//!
//! How: the input's dims are split into kept and reduced ones and simplified like an
//! engine loop (`kernel/engine.rs`; [`geom`]); then either each output element folds runs
//! along the fastest input dim with several accumulators and pairwise combination (as
//! accurate as NumPy's pairwise sum), or, when the fastest dim is kept, a block of outputs
//! is folded row by row while the input streams ([`run`]). Work is split across rayon
//! threads by output blocks, or by fixed subtrees of one fold, so results never depend on
//! the number of threads. The per-op accumulators are in [`accumulators`].

mod accumulators;
mod arg;
mod geom;
mod run;
pub(crate) use run::Shared;
mod scan;
mod vertical;
mod wide_leaf;

use std::marker::PhantomData;

use self::accumulators::{
    Extreme, Logical, LseMax, LseSum, LseSumF32, Mean, MeanF64, Prod, ReduceOp, SqDev, Sum,
    Summable,
};
use self::geom::Geom;
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::kernel::math::not_implemented;
use crate::layout::{contiguous_strides, DimVec};
use crate::ops::reduce::{ReduceSpec, Reduction};
use crate::storage::borrow;
use crate::tensor::Tensor;
use crate::{with_dtype, with_real_dtype};

/// Runs `$body` with `$T` bound to the element type of a float dtype, else `$other`.
/// (The float-only counterpart of [`with_dtype!`](crate::with_dtype) for ops PyTorch refuses on integers.)
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

/// The error for an output whose dtype is not the one the loop writes: the op layer and
/// the loop disagree on the dtype rule (a bug, reported rather than writing garbage).
fn out_dtype_error(name: &'static str, out: &Tensor, want: DType) -> Error {
    Error::dtype(
        name,
        format!(
            "internal error: the output is {} but the {name} loop writes {want}",
            out.dtype()
        ),
    )
}

/// Folds `t` with `op` into `out` (fresh, contiguous, keep-shaped, of `O::Out`'s dtype);
/// `aux` (keep-shaped, contiguous `f64`) is handed to the op per output element.
fn fold_into<O: ReduceOp>(
    name: &'static str,
    out: &Tensor,
    t: &Tensor,
    spec: &ReduceSpec<'_>,
    op: &O,
    aux: Option<&Tensor>,
) -> Result<()> {
    if out.dtype() != O::Out::DTYPE {
        return Err(out_dtype_error(name, out, O::Out::DTYPE));
    }
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
                op.finish(op.identity(), spec.n, a)
                    .store(outp.add(k * size_of::<O::Out>()));
            }
        }
        return Ok(());
    }
    let out_strides = contiguous_strides(out.shape());
    let g = Geom::new(
        t.shape(),
        t.strides(),
        t.offset(),
        &out_strides,
        spec.mask,
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
    unsafe { run::fold(op, &g, ptrs, spec.n, true) };
    Ok(())
}

/// `fold_into` a fresh keep-shaped tensor of `O::Out`'s dtype (a pass's scratch result).
fn fold_scratch<O: ReduceOp>(
    name: &'static str,
    out_like: &Tensor,
    t: &Tensor,
    spec: &ReduceSpec<'_>,
    op: &O,
) -> Result<Tensor> {
    let scratch = Tensor::zeros(out_like.shape(), O::Out::DTYPE)?;
    fold_into(name, &scratch, t, spec, op, None)?;
    Ok(scratch)
}

fn var_into<T: Summable>(
    name: &'static str,
    out: &Tensor,
    t: &Tensor,
    spec: &ReduceSpec<'_>,
    sqrt: bool,
) -> Result<()> {
    let mean = fold_scratch(name, out, t, spec, &MeanF64::<T>::default())?;
    let op = SqDev::<T> {
        correction: spec.correction,
        sqrt,
        _t: PhantomData,
    };
    fold_into(name, out, t, spec, &op, Some(&mean))
}

fn logsumexp_into<T: Summable>(out: &Tensor, t: &Tensor, spec: &ReduceSpec<'_>) -> Result<()> {
    let m = fold_scratch("logsumexp", out, t, spec, &LseMax::<T>::default())?;
    if T::DTYPE == DType::F64 {
        fold_into("logsumexp", out, t, spec, &LseSum::<T>::default(), Some(&m))
    } else {
        fold_into(
            "logsumexp",
            out,
            t,
            spec,
            &LseSumF32::<T>::default(),
            Some(&m),
        )
    }
}

fn logical_into<T: Element, const ALL: bool>(
    name: &'static str,
    out: &Tensor,
    t: &Tensor,
    spec: &ReduceSpec<'_>,
) -> Result<()> {
    // PyTorch keeps uint8 for uint8 input (a legacy rule) and gives bool otherwise.
    if T::DTYPE == DType::U8 {
        fold_into(name, out, t, spec, &Logical::<T, u8, ALL>::default(), None)
    } else {
        fold_into(
            name,
            out,
            t,
            spec,
            &Logical::<T, bool, ALL>::default(),
            None,
        )
    }
}

/// The CPU loop of every reduction of kind `Reduce` (and `max()`/`min()`): `t` folded
/// over `spec` into `out` (fresh, contiguous, keep-shaped, of the dtype the op's rule
/// gives for `t`, which the op layer already converted where the rule says so).
pub(crate) fn reduce(op: Reduction, out: &Tensor, t: &Tensor, spec: &ReduceSpec<'_>) -> Result<()> {
    let name = op.name();
    let not_float = || {
        Error::dtype(
            name,
            format!("{name} needs a float tensor, got {}", t.dtype()),
        )
    };
    match op {
        Reduction::Sum => {
            with_real_dtype!(t.dtype(), T => fold_into(name, out, t, spec, &Sum::<T>::default(), None), complex => Err(not_implemented(name, t.dtype())))
        }
        Reduction::Prod => {
            with_real_dtype!(t.dtype(), T => fold_into(name, out, t, spec, &Prod::<T>::default(), None), complex => Err(not_implemented(name, t.dtype())))
        }
        Reduction::Mean => with_float!(t.dtype(),
            T => fold_into(name, out, t, spec, &Mean::<T>::default(), None),
            _ => Err(not_float())),
        Reduction::Amax | Reduction::Max => with_real_dtype!(t.dtype(),
            T => fold_into(name, out, t, spec, &Extreme::<T, true>::default(), None), complex => Err(not_implemented(name, t.dtype()))),
        Reduction::Amin | Reduction::Min => with_real_dtype!(t.dtype(),
            T => fold_into(name, out, t, spec, &Extreme::<T, false>::default(), None), complex => Err(not_implemented(name, t.dtype()))),
        Reduction::All => with_dtype!(t.dtype(), T => logical_into::<T, true>(name, out, t, spec)),
        Reduction::Any => {
            with_dtype!(t.dtype(), T => logical_into::<T, false>(name, out, t, spec))
        }
        Reduction::Var => with_float!(t.dtype(),
            T => var_into::<T>(name, out, t, spec, false),
            _ => Err(not_float())),
        Reduction::Std => with_float!(t.dtype(),
            T => var_into::<T>(name, out, t, spec, true),
            _ => Err(not_float())),
        Reduction::Logsumexp => with_float!(t.dtype(),
            T => logsumexp_into::<T>(out, t, spec),
            _ => Err(not_float())),
        Reduction::Argmax | Reduction::Argmin | Reduction::Cumsum | Reduction::Cumprod => {
            Err(Error::value(
                name,
                format!("internal error: {name} is not a reduction of kind 'reduce'"),
            ))
        }
    }
}

/// Values (optional) and indices of the best element along the one reduced dim of
/// `spec`, into fresh contiguous keep-shaped outputs; `t` has elements.
fn arg_into<T: Summable, const MAX: bool>(
    name: &'static str,
    vals: Option<&Tensor>,
    idx: &Tensor,
    t: &Tensor,
    spec: &ReduceSpec<'_>,
) -> Result<()> {
    if let Some(v) = vals {
        if v.dtype() != T::DTYPE {
            return Err(out_dtype_error(name, v, T::DTYPE));
        }
    }
    if idx.dtype() != DType::I64 {
        return Err(out_dtype_error(name, idx, DType::I64));
    }
    let mut wants = vec![(idx.storage(), true), (t.storage(), false)];
    if let Some(v) = vals {
        wants.push((v.storage(), true));
    }
    let _g = borrow::acquire(name, &wants)?;
    let g = Geom::new(
        t.shape(),
        t.strides(),
        t.offset(),
        &contiguous_strides(idx.shape()),
        spec.mask,
        true,
        false,
    );
    let out = arg::ArgOut {
        vals: vals.map(|v| v.storage().data_ptr()),
        idx: idx.storage().data_ptr(),
    };
    // SAFETY: `g` comes from `t`'s checked layout (L1–L4) and the fresh contiguous
    // outputs (same shape, so the same element strides); all storages are alive (S1)
    // and borrowed above (S4); the reduced dim is not flipped, so indices count from
    // its first element.
    unsafe { arg::arg_fold::<T, MAX>(&g, t.storage().data_ptr(), out, true) };
    Ok(())
}

/// The CPU loop of the arg-reductions (`max(dim)`, `min(dim)`, `argmax`, `argmin`).
pub(crate) fn arg_reduce(
    op: Reduction,
    vals: Option<&Tensor>,
    idx: &Tensor,
    t: &Tensor,
    spec: &ReduceSpec<'_>,
) -> Result<()> {
    // The borrow error names the op as `argmax` whichever it is, as before the table.
    let name = "argmax";
    match op {
        Reduction::Max | Reduction::Argmax => {
            with_real_dtype!(t.dtype(), T => arg_into::<T, true>(name, vals, idx, t, spec), complex => Err(not_implemented(name, t.dtype())))
        }
        Reduction::Min | Reduction::Argmin => {
            with_real_dtype!(t.dtype(), T => arg_into::<T, false>(name, vals, idx, t, spec), complex => Err(not_implemented(name, t.dtype())))
        }
        _ => Err(Error::value(
            op.name(),
            format!("internal error: {} is not an arg-reduction", op.name()),
        )),
    }
}

fn scan_into<T: Summable, const PROD: bool>(
    name: &'static str,
    out: &Tensor,
    t: &Tensor,
    dim: usize,
) -> Result<()> {
    if out.dtype() != <T as Summable>::Out::DTYPE {
        return Err(out_dtype_error(name, out, <T as Summable>::Out::DTYPE));
    }
    let mask: DimVec<bool> = (0..t.ndim()).map(|k| k == dim).collect();
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
    Ok(())
}

/// The CPU loop of the scans (`cumsum`, `cumprod`) along `dim`; `t` has elements.
pub(crate) fn scan(op: Reduction, out: &Tensor, t: &Tensor, dim: usize) -> Result<()> {
    let name = op.name();
    match op {
        Reduction::Cumsum => {
            with_real_dtype!(t.dtype(), T => scan_into::<T, false>(name, out, t, dim), complex => Err(not_implemented(name, t.dtype())))
        }
        Reduction::Cumprod => {
            with_real_dtype!(t.dtype(), T => scan_into::<T, true>(name, out, t, dim), complex => Err(not_implemented(name, t.dtype())))
        }
        _ => Err(Error::value(
            name,
            format!("internal error: {name} is not a scan"),
        )),
    }
}
