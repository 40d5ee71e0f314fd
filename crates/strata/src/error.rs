//! The one error type of strata.
//!
//! Every user-reachable failure is an [`Error`] value; nothing in the public API panics on
//! bad input. Variants carry structured fields (the op, the offending shapes or values) and
//! their `Display` text follows PyTorch's wording where strata promises compatibility.
//! [`Error::kind`] groups the variants so bindings can map them to exception classes in one
//! place (see `crates/strata-py`).

use std::fmt;

/// Shorthand for `std::result::Result<T, strata::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Formats a shape or stride list the way PyTorch prints it: `[2, 3, 4]`.
pub(crate) struct ListFmt<'a, T>(pub &'a [T]);

impl<T: fmt::Display> fmt::Display for ListFmt<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, v) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{v}")?;
        }
        f.write_str("]")
    }
}

/// Renders a list as `[a, b, c]`.
pub(crate) fn list<T: fmt::Display>(v: &[T]) -> String {
    ListFmt(v).to_string()
}

/// An empty `Vec` with room for `n` elements, or a [`Error::Resource`] naming `op` when
/// the memory cannot be had: the fallible counterpart of `Vec::with_capacity` for sizes
/// that come from a user (a `Vec` that fails to allocate aborts the process).
pub fn try_vec<T>(op: &'static str, n: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|_| Error::out_of_memory(op, n as u128 * size_of::<T>() as u128))?;
    Ok(v)
}

/// The broad class of an [`Error`], used to pick an exception type in bindings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// Shapes, strides or sizes that do not fit together (Python: `ValueError`).
    Shape,
    /// A dim or element index out of range (Python: `IndexError`).
    Index,
    /// An unsupported or mismatched dtype (Python: `TypeError`).
    DType,
    /// A bad scalar argument such as a zero step (Python: `ValueError`).
    Value,
    /// A write to read-only storage.
    ReadOnly,
    /// A conflicting borrow of a storage (a write while it is read, or the reverse).
    Borrow,
    /// A written tensor that aliases itself or an input it cannot stage.
    Overlap,
    /// Arithmetic overflow in a shape, stride or byte size.
    Overflow,
    /// Allocation failure or an operating-system error.
    Resource,
    /// A file that could not be opened, read, written or mapped (Python: `OSError`).
    Io,
    /// A malformed file or header: bad magic, truncated data, lying sizes (Python:
    /// `ValueError`).
    Format,
    /// A device this build has no backend for, tensors on different devices, or a
    /// host-only operation on memory that is not on the host (Python: `DeviceError`, a
    /// `RuntimeError`).
    Device,
    /// An autograd error: a graph used wrongly, an in-place write autograd cannot allow,
    /// a saved tensor overwritten (Python: `RuntimeError`).
    Autograd,
    /// A linear-algebra routine that cannot complete on its input: a singular matrix, one
    /// that is not positive definite, no convergence (Python: `strata.linalg.LinAlgError`,
    /// a `RuntimeError`, as PyTorch's `torch.linalg.LinAlgError`).
    LinAlg,
}

/// Every error strata reports.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A dim argument outside `[-ndim, ndim-1]`.
    #[error(
        "{op}: Dimension out of range (expected to be in range of [{}, {}], but got {dim})",
        -(*ndim as i64).max(1),
        (*ndim as i64).max(1) - 1
    )]
    DimOutOfRange {
        /// The op that received the dim.
        op: &'static str,
        /// The dim as given.
        dim: i64,
        /// The tensor's number of dims.
        ndim: usize,
    },

    /// An element index outside a dim.
    #[error(
        "{op}(): index {index} out of range for tensor of size {} at dimension {dim}",
        list(shape)
    )]
    IndexOutOfRange {
        /// The op that received the index.
        op: &'static str,
        /// The index as given.
        index: i64,
        /// The dim indexed.
        dim: usize,
        /// The tensor's shape.
        shape: Vec<usize>,
    },

    /// Two shapes that cannot be broadcast together.
    #[error("{op}: The size of tensor a ({a}) must match the size of tensor b ({b}) at non-singleton dimension {dim}")]
    Broadcast {
        /// The op.
        op: &'static str,
        /// Size on the left.
        a: usize,
        /// Size on the right.
        b: usize,
        /// Dim counted in the broadcast result.
        dim: usize,
    },

    /// `view` asked for a shape the strides cannot express.
    #[error("view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead. (view of shape {} with strides {} as {})", list(shape), list(strides), list(target))]
    ViewIncompatible {
        /// The tensor's shape.
        shape: Vec<usize>,
        /// The tensor's strides.
        strides: Vec<isize>,
        /// The requested shape.
        target: Vec<i64>,
    },

    /// A requested shape whose element count differs from the tensor's.
    #[error("{op}: shape '{}' is invalid for input of size {numel}", list(shape))]
    InvalidShape {
        /// The op.
        op: &'static str,
        /// The requested shape (with any -1 as given).
        shape: Vec<i64>,
        /// The tensor's element count.
        numel: usize,
    },

    /// A view whose extent leaves the storage.
    #[error("{op}: sizes {}, strides {}, storage offset {offset}, and itemsize {itemsize} requiring a storage size of {required} are out of bounds for storage of size {available}", list(shape), list(strides))]
    OutOfBounds {
        /// The op.
        op: &'static str,
        /// Requested shape.
        shape: Vec<usize>,
        /// Requested strides.
        strides: Vec<isize>,
        /// Requested offset (elements).
        offset: i64,
        /// Bytes per element.
        itemsize: usize,
        /// Bytes the view would need.
        required: i128,
        /// Bytes the storage has.
        available: usize,
    },

    /// Any other shape or size mismatch; `msg` holds the PyTorch-style text.
    #[error("{op}: {msg}")]
    Shape {
        /// The op.
        op: &'static str,
        /// What is wrong, naming the values.
        msg: String,
    },

    /// Any other index error.
    #[error("{op}: {msg}")]
    Index {
        /// The op.
        op: &'static str,
        /// What is wrong, naming the values.
        msg: String,
    },

    /// A bad scalar argument.
    #[error("{op}: {msg}")]
    Value {
        /// The op.
        op: &'static str,
        /// What is wrong, naming the values.
        msg: String,
    },

    /// An unsupported or mismatched dtype.
    #[error("{op}: {msg}")]
    DType {
        /// The op.
        op: &'static str,
        /// What is wrong, naming the dtypes.
        msg: String,
    },

    /// Arithmetic overflow computing sizes, strides or offsets.
    #[error("{op}: {what} overflows")]
    Overflow {
        /// The op.
        op: &'static str,
        /// What overflowed, with the values.
        what: String,
    },

    /// A write to read-only storage.
    #[error("{op}: cannot write to a read-only tensor (its storage is read-only)")]
    ReadOnly {
        /// The op that tried to write.
        op: &'static str,
    },

    /// A borrow that conflicts with one this thread already holds.
    #[error("{op}: storage is already borrowed {held} by this thread; cannot borrow it {wanted}")]
    Borrow {
        /// The op.
        op: &'static str,
        /// "mutably" or "immutably".
        held: &'static str,
        /// "mutably" or "immutably".
        wanted: &'static str,
    },

    /// The written tensor aliases itself.
    #[error("{op}: unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.")]
    SelfOverlap {
        /// The op.
        op: &'static str,
    },

    /// An input partially overlaps the written tensor and cannot be staged.
    #[error("{op}: unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation.")]
    PartialOverlap {
        /// The op.
        op: &'static str,
    },

    /// Allocation failure or an OS error.
    #[error("{op}: {msg}")]
    Resource {
        /// The op.
        op: &'static str,
        /// What failed.
        msg: String,
    },

    /// A file operation failed.
    #[error("{op}: {path}: {msg}")]
    Io {
        /// The op.
        op: &'static str,
        /// The file.
        path: String,
        /// The operating system's message.
        msg: String,
    },

    /// A malformed file.
    #[error("{op}: {msg}")]
    Format {
        /// The op.
        op: &'static str,
        /// What is wrong, naming the offending values.
        msg: String,
    },

    /// A device that cannot be used here: no backend in this build, tensors on different
    /// devices, or host-only access to memory that is not on the host.
    #[error("{op}: {msg}")]
    Device {
        /// The op.
        op: &'static str,
        /// The device concerned.
        device: crate::storage::Device,
        /// What is wrong, naming the device.
        msg: String,
    },

    /// A linear-algebra routine that cannot complete on its input (PyTorch's
    /// `LinAlgError` texts: a singular matrix, one that is not positive definite, no
    /// convergence), naming the batch element when the input is batched.
    #[error("{op}: {msg}")]
    LinAlg {
        /// The op.
        op: &'static str,
        /// What failed, with the batch element and LAPACK's index.
        msg: String,
    },

    /// An autograd error, with PyTorch's text (no op prefix: PyTorch's messages stand
    /// alone).
    #[error("{msg}")]
    Autograd {
        /// PyTorch's message.
        msg: String,
    },
}

impl Error {
    /// The broad class of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::DimOutOfRange { .. } | Error::IndexOutOfRange { .. } | Error::Index { .. } => {
                ErrorKind::Index
            }
            Error::Broadcast { .. }
            | Error::ViewIncompatible { .. }
            | Error::InvalidShape { .. }
            | Error::OutOfBounds { .. }
            | Error::Shape { .. } => ErrorKind::Shape,
            Error::Value { .. } => ErrorKind::Value,
            Error::DType { .. } => ErrorKind::DType,
            Error::Overflow { .. } => ErrorKind::Overflow,
            Error::ReadOnly { .. } => ErrorKind::ReadOnly,
            Error::Borrow { .. } => ErrorKind::Borrow,
            Error::SelfOverlap { .. } | Error::PartialOverlap { .. } => ErrorKind::Overlap,
            Error::Resource { .. } => ErrorKind::Resource,
            Error::Io { .. } => ErrorKind::Io,
            Error::Format { .. } => ErrorKind::Format,
            Error::Device { .. } => ErrorKind::Device,
            Error::Autograd { .. } => ErrorKind::Autograd,
            Error::LinAlg { .. } => ErrorKind::LinAlg,
        }
    }

    pub(crate) fn io(op: &'static str, path: &std::path::Path, e: &std::io::Error) -> Self {
        Error::Io {
            op,
            path: path.display().to_string(),
            msg: e.to_string(),
        }
    }

    pub(crate) fn autograd(msg: impl Into<String>) -> Self {
        Error::Autograd { msg: msg.into() }
    }

    pub(crate) fn format(op: &'static str, msg: impl Into<String>) -> Self {
        Error::Format {
            op,
            msg: msg.into(),
        }
    }

    pub(crate) fn shape(op: &'static str, msg: impl Into<String>) -> Self {
        Error::Shape {
            op,
            msg: msg.into(),
        }
    }

    pub(crate) fn index(op: &'static str, msg: impl Into<String>) -> Self {
        Error::Index {
            op,
            msg: msg.into(),
        }
    }

    pub(crate) fn value(op: &'static str, msg: impl Into<String>) -> Self {
        Error::Value {
            op,
            msg: msg.into(),
        }
    }

    pub(crate) fn dtype(op: &'static str, msg: impl Into<String>) -> Self {
        Error::DType {
            op,
            msg: msg.into(),
        }
    }

    /// An allocation of `bytes` bytes that the system refused.
    pub fn out_of_memory(op: &'static str, bytes: u128) -> Self {
        Error::Resource {
            op,
            msg: format!("out of memory: cannot allocate {bytes} bytes"),
        }
    }

    /// `op` asked for `device`, which has no backend in this build.
    pub fn device_unavailable(op: &'static str, device: crate::storage::Device) -> Self {
        Error::Device {
            op,
            device,
            msg: format!(
                "device {device} is not available: this build of strata has no backend for it (CUDA tensors arrive with the CUDA backend); use device 'cpu'"
            ),
        }
    }

    /// `op` has no loop on `device`'s backend yet.
    pub fn unsupported_on(op: &'static str, device: crate::storage::Device) -> Self {
        Error::Device {
            op,
            device,
            msg: format!(
                "{op} is not supported on {device} yet; copy the tensors to the cpu first"
            ),
        }
    }

    /// A host-only operation `op` on memory that lives on `device`.
    pub fn not_on_host(op: &'static str, device: crate::storage::Device) -> Self {
        Error::Device {
            op,
            device,
            msg: format!(
                "needs the tensor's data in host memory, but it is on {device}; copy it to the cpu first"
            ),
        }
    }

    /// Tensors on two different devices given to one op.
    pub fn device_mismatch(
        op: &'static str,
        a: crate::storage::Device,
        b: crate::storage::Device,
    ) -> Self {
        Error::Device {
            op,
            device: b,
            msg: format!(
                "Expected all tensors to be on the same device, but found at least two devices, {a} and {b}!"
            ),
        }
    }

    pub(crate) fn overflow(op: &'static str, what: impl Into<String>) -> Self {
        Error::Overflow {
            op,
            what: what.into(),
        }
    }
}
