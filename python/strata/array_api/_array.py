"""``Array``: the array type of ``strata.array_api``.

An ``Array`` is a ``strata.Tensor`` (a subclass, no extra state): the same view of the
same storage with the same autograd state, held by a second Python object whose
operators and attributes follow the standard where it and PyTorch disagree:

- operators promote by dtype only: a 0-d array takes part in type promotion like any
  other (``float64`` 0-d ``+`` ``float32`` 1-D is ``float64``); the Tensor operators keep
  PyTorch's rule that a 0-d tensor of the same kind does not widen the result;
- ``//`` and ``%`` give the standard's special cases (``inf // 2.0`` is ``inf``, not NaN;
  a zero remainder takes the divisor's sign), as the namespace's ``floor_divide`` and
  ``remainder`` do;
- ``size`` is an attribute (the number of elements), not PyTorch's method; ``T`` is only
  for 2-D arrays (``mT`` and ``permute_dims`` for others);
- a boolean mask with a zero-length dim where the array's dim is not selects nothing
  (NumPy's reading), where PyTorch raises ``IndexError``.

Every function of the namespace returns Arrays; an Array passed to strata's own
functions and methods is a Tensor to them (their results are plain Tensors). Converting
either way shares everything: ``strata.array_api.asarray(t)`` of a Tensor ``t`` is an
Array over ``t`` (no copy), and an Array is already a Tensor.
"""

from __future__ import annotations

import builtins
import functools
import math

import strata as _st

Tensor = _st.Tensor

_share_as = _st._strata._share_as
_SCALARS = (builtins.bool, builtins.int, builtins.float, builtins.complex)
_OPERANDS = (Tensor, *_SCALARS)


def _as_array(t):
    """``t`` as an ``Array`` (``t`` itself when it is one; else a second object over the
    same tensor). Anything not a tensor is returned as it is."""
    if type(t) is Array or not isinstance(t, Tensor):
        return t
    return _share_as(Array, t)


def _arrays(result):
    """A function's result with every tensor in it (alone, or in a tuple, a named tuple
    or a list) an ``Array``."""
    if isinstance(result, Tensor):
        return _as_array(result)
    if isinstance(result, list):
        return [_arrays(r) for r in result]
    if isinstance(result, tuple):
        items = [_arrays(r) for r in result]
        return type(result)(*items) if hasattr(result, "_fields") else tuple(items)
    return result


def returns_arrays(fn):
    """``fn`` with the tensors of its result made ``Array``s."""
    if getattr(fn, "_returns_arrays", False):
        return fn

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        return _arrays(fn(*args, **kwargs))

    wrapped._returns_arrays = True
    return wrapped


def wrap_module(namespace: dict, names) -> None:
    """Replaces each function named in ``names`` in a module's ``namespace`` by its
    ``returns_arrays`` form (classes, such as the named result types, are left alone)."""
    for name in names:
        obj = namespace.get(name)
        if callable(obj) and not isinstance(obj, type):
            namespace[name] = returns_arrays(obj)


# The operators whose values differ from the Tensor's even for operands of one dtype.
_SPECIAL_VALUES = frozenset({"floor_divide", "remainder"})


def _binary(dunder: str, fn_name: str, reflected: builtins.bool):
    tensor_op = getattr(Tensor, dunder, None)
    direct = tensor_op is not None and fn_name not in _SPECIAL_VALUES

    def op(self, other):
        if isinstance(other, Tensor):
            if direct and self.dtype is other.dtype:
                # One dtype: both promotion rules agree, and so do the values.
                return _as_array(tensor_op(self, other))
        elif isinstance(other, _SCALARS):
            if direct:  # a Python scalar is weak under both rules
                return _as_array(tensor_op(self, other))
        else:
            return NotImplemented if tensor_op is None else _as_array(tensor_op(self, other))
        fn = _FUNCTIONS[fn_name]
        return fn(other, self) if reflected else fn(self, other)

    op.__name__ = op.__qualname__ = dunder
    op.__doc__ = f"The standard's ``{dunder}`` (``strata.array_api.{fn_name}``)."
    return op


def _unary(dunder: str, fn_name: str):
    def op(self):
        return _FUNCTIONS[fn_name](self)

    op.__name__ = op.__qualname__ = dunder
    op.__doc__ = f"The standard's ``{dunder}`` (``strata.array_api.{fn_name}``)."
    return op


def _inplace_special(dunder: str, fn_name: str):
    """``//=`` and ``%=`` of a floating array: the standard's special values (as the
    binary operator), written into ``self``; anything else is Tensor's in-place op."""
    tensor_op = getattr(Tensor, dunder)

    def op(self, other):
        if isinstance(other, _OPERANDS) and self.dtype.is_floating_point:
            out = _FUNCTIONS[fn_name](self, other)
            if out.dtype == self.dtype and out.shape == self.shape:
                self.copy_(out)
                return self
        return tensor_op(self, other)

    op.__name__ = op.__qualname__ = dunder
    return op


def _empty_mask(x, key) -> builtins.bool:
    """Whether ``key`` is a boolean mask that fits ``x`` (each dim equal to ``x``'s or 0)
    with a zero-length dim where ``x``'s is not: it selects nothing (NumPy's reading; the
    Tensor raises ``IndexError``, as PyTorch)."""
    if not isinstance(key, Tensor) or key.dtype != _st.bool or not 0 < key.ndim <= x.ndim:
        return False
    ks, xs = key.shape, x.shape[: key.ndim]
    return ks != xs and all(k in (s, 0) for k, s in zip(ks, xs))


_T = Tensor.T
_MT = Tensor.mT


class Array(Tensor):
    """An array of ``strata.array_api``: a ``strata.Tensor`` whose operators, ``size`` and
    ``T`` follow the Python array API standard (see the module's documentation)."""

    __slots__ = ()
    __module__ = "strata.array_api"
    __hash__ = Tensor.__hash__

    @property
    def size(self) -> builtins.int:
        """The number of elements (the standard's attribute; PyTorch's ``size()`` method
        is ``shape`` here)."""
        return math.prod(self.shape)

    @property
    def T(self):  # noqa: N802  (the standard's name)
        """The transpose of a 2-D array (the standard defines ``.T`` for 2-D only)."""
        if self.ndim != 2:
            raise ValueError(
                f"Array.T: the array has {self.ndim} dims; .T is defined for 2-D arrays "
                "only (use permute_dims or .mT)"
            )
        return _as_array(_T.__get__(self))

    @property
    def mT(self):  # noqa: N802  (the standard's name)
        """The last two dims swapped (a view)."""
        return _as_array(_MT.__get__(self))

    def to_device(self, device, /, *, stream=None):
        """This array on ``device`` (itself when already there)."""
        return _as_array(Tensor.to_device(self, device, stream=stream))

    def __getitem__(self, key):
        if _empty_mask(self, key):
            shape = (0, *self.shape[key.ndim :])
            return _as_array(_st.empty(shape, dtype=self.dtype, device=self.device))
        return _as_array(Tensor.__getitem__(self, key))

    def __setitem__(self, key, value):
        if _empty_mask(self, key):
            return
        Tensor.__setitem__(self, key, value)

    def __iter__(self):
        # The rows, as Arrays (as indexing gives them).
        return map(_as_array, Tensor.__iter__(self))

    def __repr__(self) -> str:
        text = Tensor.__repr__(self)
        if not text.startswith("tensor"):
            return text
        # One character shorter than "tensor": the continuation lines move left by one.
        return "Array" + text[len("tensor"):].replace("\n ", "\n")

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        # Pickled as the plain tensor (shared memory and files included), rebuilt as an
        # Array.
        return (_as_array, (_share_as(Tensor, self),))


_BINARY = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide",
    "floordiv": "floor_divide", "mod": "remainder", "pow": "pow", "matmul": "matmul",
    "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
    "lshift": "bitwise_left_shift", "rshift": "bitwise_right_shift",
}
_COMPARE = {
    "lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal",
    "eq": "equal", "ne": "not_equal",
}
_UNARY = {"neg": "negative", "pos": "positive", "abs": "abs", "invert": "bitwise_invert"}

for _op, _fn in _BINARY.items():
    setattr(Array, f"__{_op}__", _binary(f"__{_op}__", _fn, False))
    setattr(Array, f"__r{_op}__", _binary(f"__r{_op}__", _fn, True))
for _op, _fn in _COMPARE.items():
    setattr(Array, f"__{_op}__", _binary(f"__{_op}__", _fn, False))
for _op, _fn in _UNARY.items():
    setattr(Array, f"__{_op}__", _unary(f"__{_op}__", _fn))
Array.__ifloordiv__ = _inplace_special("__ifloordiv__", "floor_divide")
Array.__imod__ = _inplace_special("__imod__", "remainder")
del _op, _fn

# The namespace's functions by name, filled in by the package once its modules are
# loaded (the operators look their function up here at call time).
_FUNCTIONS: dict = {}
