//! Copy and cast between any two layouts and dtypes, on the engine.

use super::engine::{par_from, Loop, PAR_MIN};
use super::plan;
use crate::dtype::Element;
use crate::error::{list, Error, Result};
use crate::layout::broadcast::broadcast_shapes;
use crate::storage::borrow;
use crate::tensor::Tensor;
use crate::with_dtype;

/// Inner kernel: `len` elements from `p[1]` (type S) to `p[0]` (type D), cast.
///
/// # Safety
/// `p[0]` must be writable and `p[1]` readable for `len` elements at the byte strides `s`.
#[inline(always)]
unsafe fn cast_run<D: Element, S: Element>(p: [*mut u8; 2], s: [isize; 2], len: usize) {
    let (o, i) = (p[0], p[1] as *const u8);
    let (ds, ss) = (size_of::<D>() as isize, size_of::<S>() as isize);
    // SAFETY: the caller guarantees every offset `k·s[_]`, `k < len`, is a valid element
    // of its operand, in every branch below.
    unsafe {
        if s[0] == ds && s[1] == ss {
            if D::DTYPE == S::DTYPE {
                // Same bytes: a memmove (source and destination may be the same memory
                // when a tensor is copied onto itself).
                std::ptr::copy(i, o, len * ds as usize);
            } else {
                for k in 0..len as isize {
                    S::load(i.offset(k * ss))
                        .cast::<D>()
                        .store(o.offset(k * ds));
                }
            }
        } else if s[1] == 0 {
            let v = S::load(i).cast::<D>();
            if s[0] == ds {
                for k in 0..len as isize {
                    v.store(o.offset(k * ds));
                }
            } else {
                for k in 0..len as isize {
                    v.store(o.offset(k * s[0]));
                }
            }
        } else if s[0] == ds {
            for k in 0..len as isize {
                S::load(i.offset(k * s[1]))
                    .cast::<D>()
                    .store(o.offset(k * ds));
            }
        } else {
            for k in 0..len as isize {
                S::load(i.offset(k * s[1]))
                    .cast::<D>()
                    .store(o.offset(k * s[0]));
            }
        }
    }
}

/// Runs the cast kernel over a copy loop.
///
/// # Safety
/// As for [`Loop::run`], with operand 0 of type `D` and operand 1 of type `S`.
unsafe fn run_cast<D: Element, S: Element>(lp: &Loop<2>) {
    // SAFETY: forwarded to the caller; `cast_run` accesses exactly the loop's runs.
    unsafe {
        lp.run(par_from(false, &[D::DTYPE, S::DTYPE]), |p, s, n| {
            cast_run::<D, S>(p, s, n)
        })
    }
}

/// Runs a same-type copy over a loop: cache tiles (transposes, permutes) move in register
/// blocks (see [`transpose`](super::transpose)), everything else run by run.
///
/// # Safety
/// As for [`Loop::run`], with both operands of type `T`, disjoint or identical.
unsafe fn run_copy<T: Element>(lp: &Loop<2>) {
    let row = |p, s, n| {
        // SAFETY: the engine (or `copy_tile`) passes runs inside the loop's operands.
        unsafe { cast_run::<T, T>(p, s, n) }
    };
    // SAFETY: forwarded to the caller; `cast_run` and `copy_tile` access exactly the runs
    // and tiles the loop hands them.
    unsafe {
        lp.run_tiles(PAR_MIN, row, |p, ts, ls, rows, len| {
            super::transpose::copy_tile(p, ts, ls, (rows, len), size_of::<T>(), row)
        })
    }
}

/// Copies `src` (broadcast to `dst`'s shape, cast to its dtype) into `dst`, in place.
///
/// An input that partially overlaps `dst` in memory is staged through a compact copy
/// first, so the result is always that of reading `src` completely before writing.
pub(crate) fn copy_into(dst: &Tensor, src: &Tensor) -> Result<()> {
    let bshape = broadcast_shapes("copy_", dst.shape(), src.shape())?;
    if bshape.as_slice() != dst.shape() {
        return Err(Error::shape(
            "copy_",
            format!(
                "output with shape {} doesn't match the broadcast shape {}",
                list(dst.shape()),
                list(&bshape)
            ),
        ));
    }
    dst.check_write("copy_")?;
    let src = plan::stage_if_overlapping(dst, src)?;
    let target: Vec<i64> = dst.shape().iter().map(|&n| n as i64).collect();
    let src_view = src.layout().expand(&target)?;
    let _g = borrow::acquire("copy_", &[(dst.storage(), true), (src.storage(), false)])?;
    dst.storage().bump_version();
    let lp = Loop::new(
        dst.shape(),
        [
            (
                dst.layout(),
                dst.dtype().itemsize(),
                dst.storage().data_ptr(),
            ),
            (&src_view, src.dtype().itemsize(), src.storage().data_ptr()),
        ],
    );
    let kernel: unsafe fn(&Loop<2>) = if dst.dtype() == src.dtype() {
        // Plain copies dispatch on the item size only: bytes are bytes.
        match dst.dtype().itemsize() {
            1 => run_copy::<u8>,
            2 => run_copy::<u16>,
            4 => run_copy::<u32>,
            _ => run_copy::<u64>,
        }
    } else {
        with_dtype!(dst.dtype(), D => with_dtype!(src.dtype(), S => run_cast::<D, S>))
    };
    // SAFETY: the loop's pointers come from layouts inside their storages (L4), borrowed
    // above (exclusive for dst, shared for src); dst does not overlap itself
    // (`check_write`) and src is disjoint from dst, identical to it, or staged; the kernel
    // matches the operands' item sizes.
    unsafe { kernel(&lp) };
    Ok(())
}
