"""The strata exception hierarchy.

Every error raised by strata derives from :class:`StrataError` and also from the builtin
exception a Python user would expect, so ``except ValueError`` keeps working.
"""


class StrataError(Exception):
    """Base class of every strata error."""


class ShapeError(StrataError, ValueError):
    """Shapes, strides or sizes that do not fit together."""


class TensorIndexError(StrataError, IndexError):
    """A dim or element index out of range."""


class DTypeError(StrataError, TypeError):
    """An unsupported or mismatched dtype."""


class StrataValueError(StrataError, ValueError):
    """A bad scalar argument (a zero step, a negative length, ...)."""


class ReadOnlyError(StrataError, ValueError):
    """A write to a read-only tensor."""


class BorrowError(StrataError, RuntimeError):
    """A conflicting borrow of a tensor's storage (a write while it is being read)."""


class OverlapError(StrataError, RuntimeError):
    """A written tensor whose elements alias each other or an input."""


class StrataOverflowError(StrataError, OverflowError):
    """Arithmetic overflow in a shape, stride or size."""


class ResourceError(StrataError, OSError):
    """Allocation failure or an operating-system error."""


class FileError(StrataError, OSError):
    """A file that could not be opened, read, written or mapped."""


class FormatError(StrataError, ValueError):
    """A malformed file: bad magic, a header that lies about sizes, truncated data."""


class LinAlgError(StrataError, RuntimeError):
    """A linear-algebra routine that cannot complete on its input: a singular matrix in
    ``linalg.inv``/``linalg.solve``, a matrix that is not positive definite in
    ``linalg.cholesky``, no convergence (PyTorch's ``torch.linalg.LinAlgError``, also a
    ``RuntimeError``). Also ``strata.linalg.LinAlgError``."""


class DeviceError(StrataError, RuntimeError):
    """A device this build has no backend for (CUDA until the CUDA backend lands), tensors
    on different devices, or a host-only operation on memory that is not on the host."""


__all__ = [
    "StrataError",
    "ShapeError",
    "TensorIndexError",
    "DTypeError",
    "StrataValueError",
    "ReadOnlyError",
    "BorrowError",
    "OverlapError",
    "StrataOverflowError",
    "ResourceError",
    "FileError",
    "FormatError",
    "DeviceError",
    "LinAlgError",
]


class AutogradError(StrataError, RuntimeError):
    """A graph used wrongly (a second backward through freed buffers, a gradient for a
    tensor that does not require one), an in-place write autograd cannot allow, or a saved
    tensor overwritten before backward. Messages are PyTorch's."""
