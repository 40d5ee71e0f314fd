//! # strata
//!
//! Strided tensors over flat, shared, reference-counted storage. A [`Tensor`] is a view —
//! dtype, shape, **signed** strides and an offset, all in elements — over a [`Storage`].
//! Slicing (negative steps included), transposing, permuting, broadcasting, flipping and
//! most reshapes only compute new view metadata ([`Layout`]); no data moves.
//!
//! ```
//! use strata::{s, DType, Tensor};
//! let x = Tensor::arange(0, 12, 1, DType::F32)?.view(&[3, 4])?;
//! let v = x.index(&s![1..2, 1..4])?;             // x[1:2, 1:4]
//! assert_eq!((v.offset(), v.strides()), (5, &[4, 1][..]));
//! let f = x.flip(&[0])?;                          // zero-copy, negative stride
//! assert_eq!((f.offset(), f.strides()), (8, &[-4, 1][..]));
//! assert!(f.same_storage(&x));
//! # Ok::<(), strata::Error>(())
//! ```
//!
//! Soundness: every element access holds a per-storage borrow (shared to read, exclusive
//! to write), so writes through one view never race reads through another; a conflicting
//! borrow on the same thread is an [`Error::Borrow`], never a deadlock. See the numbered
//! invariants on [`storage`] (S1–S5), [`layout`] (L1–L3) and [`Tensor`] (L4).
//!
//! The design — layers, where each invariant is enforced, how an op runs from Python to a
//! kernel, how to add an op, a dtype or a backend — is `docs/ARCHITECTURE.md` in the
//! repository.

pub mod autograd;
mod backend;
pub mod cuda;
pub mod dtype;
pub mod error;
pub mod interop;
pub mod kernel;
pub mod layout;
pub mod ops;
pub mod storage;
pub mod tensor;

pub use dtype::{Complex32, Complex64, DType, DTypeKind, Element};
pub use error::{try_vec, Error, ErrorKind, Result};
pub use layout::Layout;
pub use ops::fft::api as fft;
pub use ops::linalg;
#[doc(hidden)]
pub use ops::reduce::{DTypeRule, Reduction, ReductionKind};
pub use storage::{Allocator, CpuAllocator, Device, Storage};
/// The binding's in-place view path ([`Tensor::view_in_place`]); not the public way to make
/// a view.
#[doc(hidden)]
pub use tensor::ViewOp;
pub use tensor::{
    Ellipsis, Generator, NewAxis, ReadGuard, Scalar, Tensor, TensorIndex, WriteGuard,
};

#[doc(hidden)]
pub use half;
