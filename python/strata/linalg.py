"""strata.linalg: linear algebra with PyTorch's ``torch.linalg`` signatures.

Every function takes ``(..., m, n)`` tensors: the leading dims are a batch (broadcast
between ``A`` and ``B`` in :func:`solve` and :func:`lstsq`), read in place whatever the
strides (transposed, stepped, flipped, broadcast). Results are fresh row-major tensors.
The factorisations (LU, QR, Cholesky, the symmetric eigendecomposition, the SVD) run in
Rust through the ``faer`` crate, float32, float64, complex64 and complex128 (eigenvalues,
singular values, norms and ``logabsdet`` of complex matrices are real); other dtypes are a
:class:`~strata.DTypeError` naming the op. A singular matrix (``inv``, ``solve``), one that
is not positive definite (``cholesky``) or a failed convergence raise
:class:`LinAlgError`, a ``RuntimeError``, with PyTorch's text.

The factorised functions have no backward yet: given a tensor that requires grad they
raise :class:`~strata.AutogradError`. ``vector_norm``, ``matrix_norm`` (``'fro'``, ``±1``,
``±inf``), ``norm`` of those, and ``vecdot`` are compositions of differentiable ops.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import _strata
from ._errors import LinAlgError, ShapeError

if TYPE_CHECKING:
    from . import Tensor, dtype

__all__ = [
    "LinAlgError",
    "cholesky",
    "det",
    "slogdet",
    "eigh",
    "eigvalsh",
    "inv",
    "pinv",
    "qr",
    "solve",
    "svd",
    "svdvals",
    "lstsq",
    "matrix_rank",
    "matrix_norm",
    "vector_norm",
    "norm",
    "vecdot",
    "matrix_power",
    "cross",
    "diagonal",
    "matmul",
]

# PyTorch's torch.return_types names.
_SlogdetResult = namedtuple("linalg_slogdet", ["sign", "logabsdet"])
_EighResult = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
_QrResult = namedtuple("linalg_qr", ["Q", "R"])
_SvdResult = namedtuple("linalg_svd", ["U", "S", "Vh"])
_LstsqResult = namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])


def _cast(t: Any, dtype: dtype | None) -> Any:
    if dtype is None:
        return t
    from . import Tensor as _Tensor
    from . import tensor as _tensor

    if not isinstance(t, _Tensor):
        t = _tensor(t)
    return t.to(dtype)


def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """The Cholesky factor ``L`` (``A = L @ L.mH``, read from ``A``'s lower triangle), or
    with ``upper=True`` ``U = L.mH`` (``A = U.mH @ U``, from the upper triangle)."""
    return _strata._linalg_cholesky(A, upper)


def det(A: Tensor) -> Tensor:
    """The determinant of each square matrix (LU with partial pivoting)."""
    return _strata._linalg_det(A)


def slogdet(A: Tensor) -> tuple[Tensor, Tensor]:
    """``(sign, logabsdet)`` of each determinant; a singular matrix gives ``(0, -inf)``."""
    return _SlogdetResult(*_strata._linalg_slogdet(A))


def eigh(A: Tensor, UPLO: str = "L") -> tuple[Tensor, Tensor]:
    """``(eigenvalues, eigenvectors)`` of each symmetric (complex: Hermitian) matrix, read
    from its lower (``UPLO='L'``) or upper (``'U'``) triangle: eigenvalues real and
    ascending, eigenvectors the columns of an orthogonal (unitary) matrix."""
    return _EighResult(*_strata._linalg_eigh(A, UPLO))


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    """The eigenvalues of each symmetric matrix, ascending."""
    return _strata._linalg_eigvalsh(A, UPLO)


def inv(A: Tensor) -> Tensor:
    """The inverse of each square matrix; a singular one raises :class:`LinAlgError`."""
    return _strata._linalg_inv(A)


def pinv(
    A: Tensor,
    *,
    atol: float | None = None,
    rtol: float | None = None,
    hermitian: bool = False,
) -> Tensor:
    """The pseudo-inverse of each matrix (``(..., n, m)``), singular values at or below
    ``max(atol, rtol * σ_max)`` treated as zero (``rtol`` defaults to ``eps * max(m, n)``
    unless ``atol > 0`` is given). ``hermitian=True`` uses ``eigh`` on the lower triangle."""
    return _strata._linalg_pinv(A, atol, rtol, hermitian)


def qr(A: Tensor, mode: str = "reduced") -> tuple[Tensor, Tensor]:
    """``(Q, R)`` with ``A = Q @ R``: ``mode='reduced'`` (``Q`` ``m × k``, ``R`` ``k × n``),
    ``'complete'`` (``Q`` ``m × m``, ``R`` ``m × n``) or ``'r'`` (``Q`` empty)."""
    return _QrResult(*_strata._linalg_qr(A, mode))


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """``X`` with ``A @ X = B`` (``X @ A = B`` with ``left=False``). ``B`` is ``(..., n, k)``
    or a batch of vectors ``(..., n)``; batch dims broadcast. A singular ``A`` raises
    :class:`LinAlgError`."""
    return _strata._linalg_solve(A, B, left)


def svd(A: Tensor, full_matrices: bool = True) -> tuple[Tensor, Tensor, Tensor]:
    """``(U, S, Vh)`` with ``A = U @ diag(S) @ Vh``, singular values descending."""
    return _SvdResult(*_strata._linalg_svd(A, full_matrices))


def svdvals(A: Tensor) -> Tensor:
    """The singular values of each matrix, descending."""
    return _strata._linalg_svdvals(A)


def lstsq(
    A: Tensor,
    B: Tensor,
    rcond: float | None = None,
    *,
    driver: str | None = None,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``(solution, residuals, rank, singular_values)`` of the least-squares problem
    ``min ‖A X − B‖`` (SVD based: the minimum-norm solution, singular values at or below
    ``rcond * σ_max`` dropped). As in PyTorch, ``driver`` (``'gelsy'`` by default, ``'gels'``,
    ``'gelsd'``, ``'gelss'``) decides which extra results are filled: ``residuals`` when
    ``m > n``, all matrices have full rank and the driver is not ``'gelsy'``; ``rank``
    except for ``'gels'``; ``singular_values`` for ``'gelsd'`` and ``'gelss'``; the others
    are empty tensors."""
    return _LstsqResult(*_strata._linalg_lstsq(A, B, rcond, driver))


def matrix_rank(
    A: Tensor,
    *,
    atol: float | None = None,
    rtol: float | None = None,
    hermitian: bool = False,
) -> Tensor:
    """The number of singular values above ``max(atol, rtol * σ_max)``, int64."""
    return _strata._linalg_matrix_rank(A, atol, rtol, hermitian)


def matrix_norm(
    A: Tensor,
    ord: float | str = "fro",
    dim: tuple[int, int] = (-2, -1),
    keepdim: bool = False,
    *,
    dtype: dtype | None = None,
) -> Tensor:
    """``'fro'``, ``'nuc'``, ``±1`` (column sums), ``±inf`` (row sums) or ``±2`` (singular
    values) norm of the matrices over ``dim``."""
    return _strata._linalg_matrix_norm(_cast(A, dtype), ord, dim, keepdim)


def vector_norm(
    x: Tensor,
    ord: float = 2,
    dim: int | Sequence[int] | None = None,
    keepdim: bool = False,
    *,
    dtype: dtype | None = None,
) -> Tensor:
    """``(Σ |x|^ord)^(1/ord)`` over ``dim`` (all dims when ``None``); ``inf``/``-inf`` the
    largest/smallest ``|x|``, ``0`` the count of non-zero elements."""
    return _strata._linalg_vector_norm(_cast(x, dtype), float(ord), dim, keepdim)


def norm(
    A: Tensor,
    ord: float | str | None = None,
    dim: int | Sequence[int] | None = None,
    keepdim: bool = False,
    *,
    dtype: dtype | None = None,
) -> Tensor:
    """A vector norm (``dim`` an int, or ``None`` with a 1-d input or no ``ord``) or a
    matrix norm (``dim`` a pair, or ``None`` with a 2-d input and an ``ord``)."""
    return _strata._linalg_norm(_cast(A, dtype), ord, dim, keepdim)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """``Σ conj(x) * y`` along ``dim``, the two broadcast."""
    return _strata._linalg_vecdot(x, y, dim)


def matrix_power(A: Tensor, n: int) -> Tensor:
    """``A`` multiplied by itself ``n`` times, by repeated squaring (``⌈log₂ n⌉`` squarings
    and at most as many more products); ``n = 0`` gives identities of ``A``'s dtype and
    ``n < 0`` powers of ``inv(A)`` (float and complex only)."""
    from . import Tensor as _Tensor
    from . import eye

    if not isinstance(A, _Tensor):
        raise TypeError(f"linalg.matrix_power: expected a Tensor, got {type(A).__name__}")
    n = n.__index__()
    if A.ndim < 2:
        raise ShapeError("linalg.matrix_power: The input tensor A must have at least 2 dimensions.")
    rows, cols = A.shape[-2:]
    if rows != cols:
        raise ShapeError(
            f"linalg.matrix_power: A must be batches of square matrices, but they are {rows} by {cols} matrices"
        )
    if n == 0:
        return eye(rows, dtype=A.dtype).expand(A.shape).contiguous()
    base = inv(A) if n < 0 else A
    n = abs(n)
    result = None
    while True:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if not n:
            break
        base = base @ base
    # A power of 1 is a new tensor, never the caller's.
    return result.clone() if result is A else result


def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """The cross product of 3-element vectors along ``dim`` (``torch.linalg.cross``: the
    other dims broadcast)."""
    from . import broadcast_tensors

    a, b = broadcast_tensors(input, other)
    return a.cross(b, dim)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """The ``offset`` diagonal of each matrix (a view; ``torch.linalg.diagonal``)."""
    return A.diagonal(offset, dim1, dim2)


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """The matrix product (``strata.matmul``)."""
    return input @ other
