//! `set_`: pointing a tensor handle at another view — of another storage, of another
//! tensor's storage, or of nothing (PyTorch's `Tensor.set_`). Views made from the handle
//! before keep what they viewed; only this handle changes.

use crate::autograd::{check_inplace, is_grad_enabled};
use crate::error::{Error, Result};
use crate::layout::{contiguous_strides, Layout};
use crate::storage::Storage;

use super::Tensor;

impl Tensor {
    /// Makes this handle a view of `storage` with `shape`, `strides` (row-major when
    /// `None`) and `offset` in elements of this tensor's dtype, which does not change.
    /// Other handles and the views made from this one keep what they viewed.
    ///
    /// Unlike PyTorch, a storage is never grown to fit: a layout that reaches past its end
    /// is refused, as `as_strided` refuses it. Negative strides are allowed, inside the
    /// storage.
    ///
    /// # Errors
    /// - the storage on another device than this tensor (PyTorch's text);
    /// - a shape, stride or offset outside the storage, or whose extent overflows;
    /// - with grad mode on, this tensor being a leaf that requires grad or a view of one
    ///   (PyTorch's in-place texts);
    /// - this tensor having a `grad_fn`: its recorded history would describe another
    ///   tensor's values (PyTorch lets it through and fails at backward).
    pub fn set_(
        &mut self,
        storage: &Storage,
        offset: usize,
        shape: &[usize],
        strides: Option<&[isize]>,
    ) -> Result<&mut Tensor> {
        self.check_set(storage)?;
        let layout = match strides {
            Some(s) => Layout::new_op("set_", shape, s, offset)?,
            None => Layout::new_op("set_", shape, &contiguous_strides(shape), offset)?,
        };
        let view = Tensor::checked("set_", storage.clone(), layout, self.dtype)?;
        self.install(view);
        Ok(self)
    }

    /// Makes this handle another handle of `source`'s view: its storage, offset, shape and
    /// strides (PyTorch's `t.set_(source)`). The dtypes must match.
    ///
    /// # Errors
    /// As [`set_`](Self::set_), and: another dtype (PyTorch's text); with grad mode on,
    /// `source` requiring grad (`set_` is not differentiable).
    pub fn set_to(&mut self, source: &Tensor) -> Result<&mut Tensor> {
        if source.dtype != self.dtype {
            return Err(Error::DType {
                op: "set_",
                msg: format!(
                    "Could not set tensor of type {} to a tensor of type {}",
                    source.dtype.c_name(),
                    self.dtype.c_name()
                ),
            });
        }
        if is_grad_enabled() && source.requires_grad() {
            return Err(Error::autograd(
                "set_: the source requires grad, and set_ is not differentiable: call it under no_grad() or pass source.detach()",
            ));
        }
        self.check_set(source.storage())?;
        let view = Tensor::checked(
            "set_",
            source.storage.clone(),
            source.layout.clone(),
            self.dtype,
        )?;
        self.install(view);
        Ok(self)
    }

    /// Makes this handle an empty 1-D tensor (shape `[0]`) over a new, empty storage on its
    /// device (PyTorch's `t.set_()`).
    ///
    /// # Errors
    /// The autograd refusals of [`set_`](Self::set_).
    pub fn set_empty(&mut self) -> Result<&mut Tensor> {
        let empty = Tensor::empty_on(&[0], self.dtype, self.device())?;
        self.check_set(empty.storage())?;
        self.install(empty);
        Ok(self)
    }

    /// The refusals every form of `set_` shares.
    fn check_set(&self, storage: &Storage) -> Result<()> {
        if let Some(m) = self.grad.get() {
            let s = m.lock();
            // A view's node is its view op's; a view is cut loose from its base below.
            if s.grad_fn.is_some() && s.view.is_none() {
                return Err(Error::autograd(
                    "set_: this tensor was made by an op autograd recorded, and set_ would leave that record describing another tensor's values; call set_ on its detach() instead",
                ));
            }
        }
        check_inplace(self)?;
        if storage.device() != self.device() {
            return Err(Error::Device {
                op: "set_",
                device: storage.device(),
                msg: format!(
                    "Attempted to set the storage of a tensor on device \"{}\" to a storage on different device \"{}\".  This is no longer allowed; the devices must match.",
                    self.device(),
                    storage.device()
                ),
            });
        }
        Ok(())
    }

    /// Takes `view`'s storage and layout. A leaf keeps its autograd state (`requires_grad`,
    /// `grad`, hooks), as PyTorch's does; a view of a tensor that requires grad is no
    /// longer a view of it, so it drops the state that tied it to its base.
    fn install(&mut self, view: Tensor) {
        let Tensor {
            storage, layout, ..
        } = view;
        self.storage = storage;
        self.layout = layout;
        if self.grad.get().is_some_and(|m| m.lock().view.is_some()) {
            self.grad.replace(None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autograd::no_grad;
    use crate::dtype::DType;

    fn t(v: &[f32]) -> Tensor {
        Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap()
    }

    #[test]
    fn set_views_storage_and_leaves_old_views() {
        let src = t(&[0., 1., 2., 3., 4., 5.]);
        let mut a = t(&[9., 9.]);
        let old = a.clone();
        a.set_(src.storage(), 1, &[2, 2], Some(&[1, 2])).unwrap();
        assert_eq!(a.shape(), &[2, 2]);
        assert_eq!(a.strides(), &[1, 2]);
        assert_eq!(a.offset(), 1);
        assert_eq!(a.to_vec::<f32>().unwrap(), vec![1., 3., 2., 4.]);
        assert_eq!(old.to_vec::<f32>().unwrap(), vec![9., 9.]);
        // Row-major strides by default; negative strides inside the storage.
        a.set_(src.storage(), 2, &[2, 2], None).unwrap();
        assert_eq!(a.strides(), &[2, 1]);
        a.set_(src.storage(), 5, &[3], Some(&[-2])).unwrap();
        assert_eq!(a.to_vec::<f32>().unwrap(), vec![5., 3., 1.]);
    }

    #[test]
    fn set_refuses_out_of_bounds_and_overflow() {
        let src = t(&[0.; 4]);
        let mut a = t(&[]);
        let e = a.set_(src.storage(), 0, &[5], None).unwrap_err();
        assert!(
            e.to_string()
                .contains("out of bounds for storage of size 16"),
            "{e}"
        );
        let e = a.set_(src.storage(), 0, &[3], Some(&[-1])).unwrap_err();
        assert!(e.to_string().contains("before the start"), "{e}");
        let e = a
            .set_(src.storage(), 0, &[2, 3], Some(&[isize::MAX, 1]))
            .unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Overflow, "{e}");
        let e = a.set_(src.storage(), usize::MAX, &[0], None).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Overflow, "{e}");
        let e = a
            .set_(src.storage(), 0, &[1 << 62, 1 << 62], None)
            .unwrap_err();
        assert!(e.to_string().starts_with("set_:"), "{e}");
        // An empty view anywhere in range is fine; the tensor is unchanged after errors.
        a.set_(src.storage(), 4, &[0], None).unwrap();
        assert_eq!((a.shape(), a.offset()), (&[0usize][..], 4));
    }

    #[test]
    fn set_to_and_set_empty() {
        let src = t(&[0., 1., 2., 3.]).flip(&[0]).unwrap();
        let mut a = t(&[7.]);
        a.set_to(&src).unwrap();
        assert_eq!(a.to_vec::<f32>().unwrap(), vec![3., 2., 1., 0.]);
        assert!(a.same_storage(&src));
        let ints = Tensor::from_vec(vec![1i64], &[1]).unwrap();
        let e = a.set_to(&ints).unwrap_err();
        assert_eq!(
            e.to_string(),
            "set_: Could not set tensor of type long int to a tensor of type float"
        );
        a.set_empty().unwrap();
        assert_eq!(
            (a.shape(), a.strides(), a.offset()),
            (&[0usize][..], &[1isize][..], 0)
        );
        assert_eq!(a.storage().nbytes(), 0);
        assert_eq!(a.dtype(), DType::F32);
    }

    #[test]
    fn set_autograd_rules() {
        let leaf = t(&[1., 2.]);
        leaf.requires_grad_(true).unwrap();
        leaf.set_grad(Some(t(&[5., 5.]))).unwrap();
        let mut a = leaf.clone();
        let src = t(&[3., 4., 5.]);
        let e = a.set_to(&src).unwrap_err();
        assert!(e.to_string().contains("leaf Variable"), "{e}");
        {
            let _g = no_grad();
            a.set_to(&src).unwrap();
        }
        // Still a leaf that requires grad, with its grad.
        assert!(a.requires_grad() && a.is_leaf());
        assert_eq!(a.grad().unwrap().to_vec::<f32>().unwrap(), vec![5., 5.]);
        // A non-leaf is refused in any mode.
        let mut y = leaf.mul(&leaf).unwrap();
        let e = y.set_to(&src).unwrap_err();
        assert!(e.to_string().contains("made by an op"), "{e}");
        // A source that requires grad, with grad mode on.
        let mut b = t(&[0.]);
        let e = b.set_to(&leaf).unwrap_err();
        assert!(e.to_string().contains("not differentiable"), "{e}");
        // A view of a leaf, set under no_grad, is no longer its view.
        let mut v = leaf.narrow(0, 0, 1).unwrap();
        assert!(v.requires_grad());
        {
            let _g = no_grad();
            v.set_to(&src).unwrap();
        }
        assert!(!v.requires_grad());
    }
}
