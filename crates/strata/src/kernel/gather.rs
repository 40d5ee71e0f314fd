//! Gather and scatter along one dim by a list of indices (`index_select`, `index_copy_`),
//! the building blocks of advanced indexing. Both always copy.

use crate::error::{Error, Result};
use crate::kernel::walk;
use crate::layout::{wrap_dim, Layout};
use crate::tensor::Tensor;

/// Checks and wraps `index` against a dim of `size` elements.
fn wrap_indices(op: &'static str, index: &[i64], dim: usize, size: usize) -> Result<Vec<usize>> {
    index
        .iter()
        .map(|&i| {
            let j = if i < 0 { i + size as i64 } else { i };
            if j < 0 || j >= size as i64 {
                Err(Error::index(
                    op,
                    format!("index {i} is out of bounds for dimension {dim} with size {size}"),
                ))
            } else {
                Ok(j as usize)
            }
        })
        .collect()
}

/// Splits a layout around `dim`: (outer shape, outer strides, dim stride, inner shape,
/// inner strides).
fn around(l: &Layout, d: usize) -> (Vec<usize>, Vec<isize>, isize, Vec<usize>, Vec<isize>) {
    (
        l.shape()[..d].to_vec(),
        l.strides()[..d].to_vec(),
        l.strides()[d],
        l.shape()[d + 1..].to_vec(),
        l.strides()[d + 1..].to_vec(),
    )
}

/// Moves one element of `item` bytes from `src` to `dst`.
///
/// # Safety
/// Both pointers must be valid for `item` bytes and must not overlap.
#[inline(always)]
unsafe fn move_item(dst: *mut u8, src: *const u8, item: usize) {
    // SAFETY: forwarded to the caller.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, item) }
}

/// Copies `src[.., index[k], ..]` (along `d`) to `dst[.., k, ..]` for every `k`, or the
/// reverse when `scatter` is set. `dst` and `src` must not share memory.
fn transfer(
    op: &'static str,
    dst: &Tensor,
    src: &Tensor,
    d: usize,
    index: &[usize],
    scatter: bool,
) -> Result<()> {
    let item = dst.dtype().itemsize();
    let _g = super::plan::borrow_for_write(op, dst, [src])?;
    // The side walked by position k, and the side walked by index[k].
    let (by_k, by_idx) = if scatter {
        (src.layout(), dst.layout())
    } else {
        (dst.layout(), src.layout())
    };
    let (outer, k_outer, k_stride, inner, k_inner) = around(by_k, d);
    let (_, i_outer, i_stride, _, i_inner) = around(by_idx, d);
    let (dp, sp) = (
        dst.storage().data_ptr(),
        src.storage().data_ptr() as *const u8,
    );
    walk(
        &outer,
        [&k_outer, &i_outer],
        [by_k.offset(), by_idx.offset()],
        |[ko, io]| {
            for (k, &i) in index.iter().enumerate() {
                let kb = (ko as isize + k as isize * k_stride) as usize;
                let ib = (io as isize + i as isize * i_stride) as usize;
                walk(&inner, [&k_inner, &i_inner], [kb, ib], |[kp, ip]| {
                    let (dpos, spos) = if scatter { (ip, kp) } else { (kp, ip) };
                    // SAFETY: every position comes from a layout inside its storage (L4) with
                    // in-range indices (checked by `wrap_indices`); dst is exclusively and src
                    // shared borrowed (S4), and they are different storages (checked by the
                    // callers), so the ranges do not overlap.
                    unsafe { move_item(dp.add(dpos * item), sp.add(spos * item), item) };
                });
            }
        },
    );
    Ok(())
}

impl Tensor {
    /// The slices `index[k]` of `dim`, stacked along `dim` in a new tensor (PyTorch's
    /// `index_select`; negative indices count from the end).
    pub fn index_select(&self, dim: i64, index: &[i64]) -> Result<Tensor> {
        let d = wrap_dim("index_select", dim, self.ndim())?;
        if self.ndim() == 0 {
            return Err(Error::index(
                "index_select",
                "cannot index a 0-dim tensor along a dim",
            ));
        }
        let idx = wrap_indices("index_select", index, d, self.shape()[d])?;
        let mut shape = self.shape().to_vec();
        shape[d] = idx.len();
        let out = Tensor::zeros(&shape, self.dtype())?;
        transfer("index_select", &out, self, d, &idx, false)?;
        Ok(out)
    }

    /// Writes slice `k` of `src` into slice `index[k]` of `dim` of this tensor, in place
    /// (PyTorch's `index_copy_`; with repeated indices the last write wins). `src` must
    /// have this tensor's shape with `dim` of size `index.len()`, and this dtype.
    pub fn index_copy_(&self, dim: i64, index: &[i64], src: &Tensor) -> Result<&Self> {
        let d = wrap_dim("index_copy_", dim, self.ndim())?;
        if self.ndim() == 0 {
            return Err(Error::index(
                "index_copy_",
                "cannot index a 0-dim tensor along a dim",
            ));
        }
        let idx = wrap_indices("index_copy_", index, d, self.shape()[d])?;
        let mut want = self.shape().to_vec();
        want[d] = idx.len();
        let src = src.to_dtype(self.dtype())?.broadcast_to(&want)?;
        self.check_write("index_copy_")?;
        // By address, not storage identity: the same bytes may be another storage.
        let src = if src.may_share_memory(self) {
            src.contiguous_copy()?
        } else {
            src
        };
        transfer("index_copy_", self, &src, d, &idx, true)?;
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use crate::{DType, Tensor};

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
}
