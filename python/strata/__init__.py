"""strata: strided tensors over shared storage, with PyTorch's API.

A :class:`Tensor` is a view — dtype, shape, signed strides and an offset — over a flat,
reference-counted storage. Slicing (negative steps included), transposing, permuting,
broadcasting and flipping only rewrite the view; NumPy arrays are shared both ways
without copies.

NumPy is optional: it is imported only by ``Tensor.numpy()``.
"""

from __future__ import annotations

import builtins as _builtins
import os as _os

from . import _strata
from ._errors import (
    AutogradError,
    BorrowError,
    DeviceError,
    DTypeError,
    LinAlgError,
    FileError,
    FormatError,
    OverlapError,
    ReadOnlyError,
    ResourceError,
    ShapeError,
    StrataError,
    StrataOverflowError,
    StrataValueError,
    TensorIndexError,
)
from ._strata import (
    Tensor,
    UntypedStorage,
    arange,
    as_tensor,
    cache_info,
    dtype,
    empty,
    empty_cache,
    eye,
    from_numpy,
    full,
    linspace,
    manual_seed,
    ones,
    rand,
    randn,
    result_type,
    set_cache_decay,
    set_cache_limit,
    tensor,
    zeros,
)
from ._strata import cpu_level as cpu_level
from ._strata import from_dlpack as from_dlpack
from ._strata import from_file as from_file
from ._strata import frombuffer as frombuffer
from ._strata import where as where
from ._strata import cat, concatenate, cumulative_sum, einsum, meshgrid, searchsorted, stack  # noqa: E402
from ._strata import tensordot  # noqa: E402
from ._strata import complex, polar  # noqa: E402,A004  (PyTorch's names)


def _with_requires_grad(fn):
    """``fn`` with PyTorch's ``requires_grad=`` keyword."""

    def make(*args, requires_grad=False, **kwargs):
        t = fn(*args, **kwargs)
        if requires_grad:
            t.requires_grad_(True)
        return t

    make.__name__ = fn.__name__
    make.__qualname__ = fn.__name__
    make.__doc__ = fn.__doc__
    return make


for _name in ("tensor", "zeros", "ones", "empty", "full", "arange", "linspace", "eye", "rand", "randn",
              "frombuffer"):
    globals()[_name] = _with_requires_grad(globals()[_name])

from . import autograd  # noqa: E402  (needs the names above)
from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled  # noqa: E402

# A bad STRATA_CPU (the cap on the kernels' instruction set) fails the import, naming the
# variable and its value, rather than being silently ignored by the kernels.
cpu_level()

bool = _strata.bool  # noqa: A001  (PyTorch's name)
uint8 = _strata.uint8
int8 = _strata.int8
int16 = _strata.int16
uint16 = _strata.uint16
int32 = _strata.int32
uint32 = _strata.uint32
int64 = _strata.int64
uint64 = _strata.uint64
float16 = _strata.float16
bfloat16 = _strata.bfloat16
float32 = _strata.float32
float64 = _strata.float64
complex64 = _strata.complex64
complex128 = _strata.complex128
half = float16
cfloat = complex64
cdouble = complex128
float = float32  # noqa: A001
double = float64
short = int16
int = int32  # noqa: A001
long = int64


def _dtype_from_name(name: str) -> dtype:
    return getattr(_strata, name)


def _like(fn, other: Tensor, dtype=None, device=None, **kw):
    if not isinstance(other, Tensor):
        raise TypeError(f"{fn.__name__}_like(): argument 'input' must be Tensor, not {type(other).__name__}")
    return fn(
        *other.shape,
        dtype=other.dtype if dtype is None else dtype,
        device=other.device if device is None else device,
        **kw,
    )


def zeros_like(input: Tensor, dtype=None, device=None) -> Tensor:
    """Zeros with the shape (and by default the dtype and device) of ``input``."""
    return _like(zeros, input, dtype, device)


def ones_like(input: Tensor, dtype=None, device=None) -> Tensor:
    """Ones with the shape (and by default the dtype and device) of ``input``."""
    return _like(ones, input, dtype, device)


def empty_like(input: Tensor, dtype=None, device=None) -> Tensor:
    """An (always zeroed) tensor with the shape, dtype and device of ``input``."""
    return _like(empty, input, dtype, device)


def full_like(input: Tensor, fill_value, dtype=None, device=None) -> Tensor:
    """``fill_value`` everywhere, with the shape, dtype and device of ``input``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"full_like(): argument 'input' must be Tensor, not {type(input).__name__}")
    return full(
        input.shape,
        fill_value,
        dtype=input.dtype if dtype is None else dtype,
        device=input.device if device is None else device,
    )


def rand_like(input: Tensor, dtype=None, device=None) -> Tensor:
    """Uniform samples with the shape, dtype and device of ``input``."""
    return _like(rand, input, dtype, device)


def randn_like(input: Tensor, dtype=None, device=None) -> Tensor:
    """Normal samples with the shape, dtype and device of ``input``."""
    return _like(randn, input, dtype, device)


for _name in ("zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like"):
    globals()[_name] = _with_requires_grad(globals()[_name])
del _name


# The elementwise ops come from the op table (crates/strata/src/ops/table.rs):
# (name, arity, in-place name or None) for each, unary, binary, then ternary.
_OP_TABLE = tuple(_strata._op_table())
_ELEMENTWISE = [name for name, arity, _ in _OP_TABLE if arity < 3]
_BINARY = frozenset(name for name, arity, _ in _OP_TABLE if arity == 2)
_NUMBER = (_builtins.int, _builtins.float, _builtins.bool, _builtins.complex)


def _method(name: str):
    binary = name in _BINARY

    def fn(input, *args, **kwargs):
        if not isinstance(input, Tensor):
            if binary and isinstance(input, _NUMBER) and args and isinstance(args[0], Tensor) and not kwargs:
                # A Python scalar first stays weak, as on the right: st.add(5, t) is 5 + t.
                return _strata._scalar_lhs(name, input, args[0])
            input = tensor(input)
        return getattr(input, name)(*args, **kwargs)

    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = f"``strata.{name}(input, ...)`` is ``input.{name}(...)``."
    return fn


_FUNCTIONS = """
view reshape flatten unflatten transpose swapaxes swapdims permute movedim moveaxis t narrow
select flip expand broadcast_to squeeze unsqueeze as_strided unfold diagonal split chunk unbind
contiguous clone index_select
""".split() + _ELEMENTWISE + """
clamp matmul mm mv bmm dot outer
sum prod mean amax amin max min argmax argmin all any var std logsumexp cumsum cumprod
""".split()

_INDEX_FUNCTIONS = ["nonzero", "take", "gather", "masked_select"]  # indexing ops (crates/strata/src/ops/index.rs)

# Placing, sorting and composite ops (crates/strata/src/ops/{arrange,index,sort,composite,linalg}.rs).
_MORE_FUNCTIONS = """
roll tile tril triu diff scatter scatter_add take_along_dim argwhere
sort argsort topk unique softmax log_softmax isclose allclose cross trace
view_as_real view_as_complex conj conj_physical resolve_conj resolve_neg is_conj is_neg angle
masked_fill
""".split()

for _name in _FUNCTIONS + _INDEX_FUNCTIONS + _MORE_FUNCTIONS:
    globals()[_name] = _method(_name)
del _name

negative = neg
multiply = mul
subtract = sub
divide = div
true_divide = div
clip = clamp
absolute = abs  # noqa: A001
concat = cat


def save(obj: Tensor, f, *, version: tuple[int, int] | None = None) -> None:
    """Writes ``obj`` to the ``.npy`` file ``f`` (NumPy's format; ``numpy.load`` reads it).

    The smallest format version that fits is used unless ``version`` is given; the data
    starts at a multiple of 64 bytes. An F-contiguous tensor is written as it lies, with
    ``fortran_order: True``; other layouts are written in C order.
    """
    if not isinstance(obj, Tensor):
        raise TypeError(f"save: expected a strata Tensor, got {type(obj).__name__}")
    _strata._save_npy(obj, _os.fspath(f), version)


def load(f, *, mmap: bool = False, mmap_mode: str | None = None, max_header_size: int = 10000) -> Tensor:
    """Reads the ``.npy`` file ``f``.

    ``mmap=True`` maps the file copy-on-write (zero-copy; writes stay private), like
    ``torch.load(mmap=True)``; ``mmap_mode`` picks NumPy's modes instead: ``'r'``
    (read-only), ``'r+'`` (writes reach the file) or ``'c'`` (copy-on-write). Big-endian
    or misaligned data is loaded by a copy. Headers longer than ``max_header_size`` bytes
    are refused, as NumPy does.
    """
    if mmap_mode is None and mmap:
        mmap_mode = "c"
    return _strata._load_npy(_os.fspath(f), mmap_mode, max_header_size)


def real(input: Tensor) -> Tensor:
    """The real part: a view of a complex tensor's real parts; a real tensor itself."""
    return input.real


def imag(input: Tensor) -> Tensor:
    """The imaginary part: a view of a complex tensor's imaginary parts."""
    return input.imag


def is_complex(input: Tensor) -> bool:
    """True for a complex64 or complex128 tensor."""
    return input.is_complex()


def is_tensor(obj) -> bool:
    """True for strata tensors."""
    return isinstance(obj, Tensor)


def broadcast_shapes(*shapes) -> tuple:
    """The shape that ``shapes`` (sequences of sizes, or ints) broadcast to, by NumPy's and
    PyTorch's rule (aligned from the right; a size of 1 stretches)."""
    shapes = [(s,) if isinstance(s, _builtins.int) else tuple(s) for s in shapes]
    ndim = _builtins.max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    owner = [None] * ndim
    for i, s in enumerate(shapes):
        for k, d in enumerate(s):
            if d < 0:
                raise ShapeError(f"broadcast_shapes: Trying to create tensor with negative dimension {d}: {list(s)}")
            j = ndim - len(s) + k
            if d == 1:
                continue
            if out[j] == 1:
                out[j], owner[j] = d, i
            elif out[j] != d:
                raise ShapeError(
                    "broadcast_shapes: Shape mismatch: objects cannot be broadcast to a single shape.  "
                    f"Mismatch is between arg {owner[j]} and arg {i}."
                )
    return tuple(out)


def broadcast_tensors(*tensors: Tensor) -> tuple:
    """Views of ``tensors`` expanded to their common broadcast shape (no copies)."""
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"broadcast_tensors: expected Tensors, got {type(t).__name__}")
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(t.expand(shape) for t in tensors)

__all__ = [
    "Tensor",
    "UntypedStorage",
    "dtype",
    "tensor",
    "as_tensor",
    "from_numpy",
    "zeros",
    "ones",
    "empty",
    "full",
    "arange",
    "linspace",
    "eye",
    "rand",
    "randn",
    "manual_seed",
    "empty_cache",
    "set_cache_decay",
    "set_cache_limit",
    "cache_info",
    "zeros_like",
    "ones_like",
    "empty_like",
    "full_like",
    "rand_like",
    "randn_like",
    "where",
    "result_type",
    "is_tensor",
    "broadcast_shapes",
    "broadcast_tensors",
    "StrataError",
    "ShapeError",
    "TensorIndexError",
    "DTypeError",
    "StrataValueError",
    "ReadOnlyError",
    "BorrowError",
    "DeviceError",
    "AutogradError",
    "autograd",
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "is_grad_enabled",
    "OverlapError",
    "StrataOverflowError",
    "ResourceError",
    "FileError",
    "FormatError",
    "save",
    "load",
    "from_file",
    "frombuffer",
    "from_dlpack",
    "safetensors",
    "cuda",
    "multiprocessing",
    "utils",
    "layout",
    "strided",
    "storage",
    "TypedStorage",
    "Storage",
    *_FUNCTIONS,
    *_INDEX_FUNCTIONS,
    *_MORE_FUNCTIONS,
    "cat",
    "concat",
    "concatenate",
    "stack",
    "meshgrid",
    "searchsorted",
    "cumulative_sum",
    "einsum",
    "tensordot",
    "complex",
    "polar",
    "real",
    "imag",
    "is_complex",
    "LinAlgError",
    "linalg",
    "fft",
]
from . import safetensors  # noqa: E402  (submodule; after the names it uses)
from . import cuda  # noqa: E402  (submodule)
from . import linalg  # noqa: E402  (submodule)
from . import fft  # noqa: E402  (submodule)
from . import multiprocessing  # noqa: E402  (registers the ForkingPickler reducer)
from . import utils  # noqa: E402  (submodule: utils.dlpack)
from ._layout import layout, strided  # noqa: E402  (tensor.layout's values)
from . import storage  # noqa: E402  (submodule: TypedStorage, t.storage())
from .storage import TypedStorage  # noqa: E402

Storage = TypedStorage  # PyTorch's ``torch.Storage`` (float32 unless a dtype is given)

from . import nn, optim  # noqa: E402  (they build on everything above)
