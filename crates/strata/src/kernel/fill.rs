//! The CPU loops that write values rather than read them: `fill_` and the creation
//! patterns (`arange`, `linspace`, `rand`, `randn`). The op layer (`tensor/data.rs`,
//! `tensor/create.rs`) checks values and dtypes and allocates the tensors.

use rand::Rng;
use rand_distr::StandardNormal;

use super::engine::{Loop, PAR_MIN};
use crate::backend::Fill;
use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::storage::borrow;
use crate::tensor::{Scalar, Tensor};
use crate::with_dtype;

/// Sets every element of `dst` (writable, free of self-overlap) to `value`.
pub(crate) fn fill(dst: &Tensor, value: Scalar) -> Result<()> {
    let _g = borrow::acquire("fill_", &[(dst.storage(), true)])?;
    dst.storage().bump_version();
    // A small contiguous view (`t[1:3] = 0.0`) is one run from its first element: filled
    // directly, without the loop planner, whose set-up was 40% of such a fill's time.
    let n = dst.numel();
    if n < PAR_MIN && dst.is_contiguous() {
        with_dtype!(dst.dtype(), T => {
            let v = value.to::<T>();
            let o = dst.storage().data_ptr().wrapping_add(dst.byte_offset());
            // SAFETY: a contiguous view's `n` elements are consecutive from its first one,
            // inside its storage (L4), which is writable (the op layer checked) and
            // exclusively borrowed (S4).
            unsafe {
                for k in 0..n {
                    v.store(o.add(k * size_of::<T>()));
                }
            }
        });
        return Ok(());
    }
    let lp = Loop::new(
        dst.shape(),
        [(
            dst.layout(),
            dst.dtype().itemsize(),
            dst.storage().data_ptr(),
        )],
    );
    with_dtype!(dst.dtype(), T => {
        let v = value.to::<T>();
        // SAFETY: the loop covers this view, inside its storage (L4), which is writable
        // and free of self-overlap (the op layer checked) and exclusively borrowed (S4).
        unsafe {
            lp.run(PAR_MIN, |p, s, n| {
                let o = p[0];
                if s[0] == size_of::<T>() as isize {
                    for k in 0..n {
                        v.store(o.add(k * size_of::<T>()));
                    }
                } else {
                    for k in 0..n as isize {
                        v.store(o.offset(k * s[0]));
                    }
                }
            })
        };
    });
    Ok(())
}

/// Writes `n` values `value(i)` into the fresh contiguous `dst`.
fn write_seq<T: Element>(
    op: &'static str,
    dst: &Tensor,
    mut value: impl FnMut(usize) -> T,
) -> Result<()> {
    if dst.dtype() != T::DTYPE || !dst.is_contiguous() {
        return Err(Error::value(
            op,
            format!(
                "internal error: expected a contiguous {} output, got {} with strides {:?}",
                T::DTYPE,
                dst.dtype(),
                dst.strides()
            ),
        ));
    }
    let n = dst.numel();
    let _g = borrow::acquire(op, &[(dst.storage(), true)])?;
    let base = dst
        .storage()
        .data_ptr()
        .wrapping_add(dst.offset() * size_of::<T>());
    for i in 0..n {
        // SAFETY: `dst` is contiguous with `n` elements from `base`, inside its storage
        // (L4), exclusively borrowed above (S4).
        unsafe { value(i).store(base.add(i * size_of::<T>())) };
    }
    Ok(())
}

/// Writes the pattern `fill` into the fresh contiguous `dst`.
pub(crate) fn fill_pattern(op: &'static str, dst: &Tensor, fill: Fill<'_>) -> Result<()> {
    let dtype = dst.dtype();
    match fill {
        Fill::Arange { start, step, int } => {
            let (s, st) = (start.to_f64(), step.to_f64());
            let (si, sti) = (start.to::<i64>(), step.to::<i64>());
            with_dtype!(dtype, T => write_seq::<T>(op, dst, |i| {
                if int {
                    T::from_i64(si.wrapping_add((i as i64).wrapping_mul(sti)))
                } else {
                    T::from_f64(s + i as f64 * st)
                }
            }))
        }
        Fill::Linspace { start, end } => {
            let steps = dst.numel();
            let step = if steps > 1 {
                (end - start) / (steps - 1) as f64
            } else {
                0.0
            };
            let half = steps / 2;
            with_dtype!(dtype, T => write_seq::<T>(op, dst, |i| {
                let v = if i < half || steps == 1 {
                    start + step * i as f64
                } else {
                    end - step * (steps - 1 - i) as f64
                };
                T::from_f64(v)
            }))
        }
        Fill::Uniform(gen) => {
            let rng = gen.rng();
            with_dtype!(dtype, T => write_seq::<T>(op, dst, |_| {
                let v = T::from_f64(rng.random::<f64>());
                // Rounding to a narrow float can reach 1.0; keep rand in [0, 1).
                if v.to_f64() >= 1.0 {
                    T::from_f64(0.0)
                } else {
                    v
                }
            }))
        }
        Fill::Normal(gen) => {
            let rng = gen.rng();
            with_dtype!(dtype, T => write_seq::<T>(op, dst, |_| {
                T::from_f64(rng.sample::<f64, _>(StandardNormal))
            }))
        }
    }
}
