"""Bad input raises the right exception — a strata class that also derives from the builtin a
Python user would catch (ShapeError is a ValueError, TensorIndexError an IndexError,
DTypeError a TypeError, ...) — with an informative message, and never crashes the
interpreter (crash-prone inputs run in a subprocess)."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import strata as st
from _isolated import assert_clean, run_isolated

# --------------------------------------------------------------------------------------
# The hierarchy.
# --------------------------------------------------------------------------------------

HIERARCHY = [
    (st.ShapeError, ValueError),
    (st.TensorIndexError, IndexError),
    (st.DTypeError, TypeError),
    (st.StrataValueError, ValueError),
    (st.ReadOnlyError, Exception),
    (st.BorrowError, RuntimeError),
    (st.OverlapError, RuntimeError),
    (st.StrataOverflowError, OverflowError),
    (st.ResourceError, OSError),
]


@pytest.mark.parametrize("cls,builtin", HIERARCHY, ids=lambda c: getattr(c, "__name__", c))
def test_hierarchy(cls, builtin):
    assert issubclass(cls, st.StrataError)
    assert issubclass(cls, builtin)
    assert issubclass(st.StrataError, Exception)
    assert cls.__module__ == "strata._errors"
    assert getattr(st, cls.__name__) is cls


def t23():
    return st.arange(6.0).view(2, 3)


# (id, call, exception class, regex the message must match)
CASES = [
    # ---- creation
    ("zeros_negative", lambda: st.zeros(-1), st.StrataValueError, r"negative dimension -1"),
    (
        "zeros_negative_tuple",
        lambda: st.zeros((2, -3)),
        st.StrataValueError,
        r"negative dimension -3",
    ),
    ("zeros_overflow", lambda: st.zeros(2**62, 2**62), st.StrataOverflowError, r"overflows"),
    ("ones_overflow", lambda: st.ones(2**31, 2**31, 4), st.StrataOverflowError, r"overflows"),
    (
        "empty_overflow",
        lambda: st.empty(2**40, 2**40, dtype=st.float64),
        st.StrataOverflowError,
        r"overflows",
    ),
    (
        "zeros_bytes_overflow",
        lambda: st.zeros(2**61, dtype=st.float64),
        st.StrataOverflowError,
        r"overflows",
    ),
    ("zeros_out_of_memory", lambda: st.zeros(2**50), st.ResourceError, r"memory|alloc"),
    ("zeros_above_int64", lambda: st.zeros(2**63), OverflowError, r""),
    ("zeros_float_size", lambda: st.zeros(2.5), st.DTypeError, r"integer"),
    ("zeros_bool_size", lambda: st.zeros(True), st.DTypeError, r"integer"),
    ("zeros_none_size", lambda: st.zeros(None), st.DTypeError, r"sequence of integers"),
    ("zeros_float_in_list", lambda: st.zeros([2, 1.5]), st.DTypeError, r"integer"),
    ("zeros_bad_dtype_name", lambda: st.zeros(2, dtype="foo"), st.DTypeError, r"unsupported dtype"),
    (
        "zeros_bad_dtype_type",
        lambda: st.zeros(2, dtype=5),
        st.DTypeError,
        r"expected a strata dtype",
    ),
    ("zeros_complex256_dtype", lambda: st.zeros(2, dtype=np.clongdouble), st.DTypeError, r"clongdouble"),
    ("full_bad_value", lambda: st.full((2,), "x"), st.DTypeError, r"expected a number"),
    ("full_negative", lambda: st.full((-2,), 1), st.StrataValueError, r"negative dimension"),
    ("full_overflow", lambda: st.full((2**62, 4), 1.0), st.StrataOverflowError, r"overflows"),
    ("arange_zero_step", lambda: st.arange(0, 10, 0), st.StrataValueError, r"step must be nonzero"),
    (
        "arange_wrong_sign",
        lambda: st.arange(0, 10, -1),
        st.StrataValueError,
        r"inconsistent with step sign",
    ),
    ("arange_overflow", lambda: st.arange(0, 2**62), st.StrataOverflowError, r"overflows"),
    ("arange_nan", lambda: st.arange(0, float("nan")), st.StrataValueError, r"NaN"),
    ("arange_inf", lambda: st.arange(0, float("inf")), st.StrataValueError, r"inf"),
    ("arange_str", lambda: st.arange("a"), st.DTypeError, r"expected a number"),
    ("arange_bad_dtype", lambda: st.arange(3, dtype="nope"), st.DTypeError, r"unsupported dtype"),
    ("linspace_negative", lambda: st.linspace(0, 1, -1), st.StrataValueError, r"negative"),
    ("linspace_overflow", lambda: st.linspace(0, 1, 2**62), st.StrataOverflowError, r"overflows"),
    ("linspace_str", lambda: st.linspace("a", 1, 2), TypeError, r""),
    ("eye_negative", lambda: st.eye(-1), st.StrataValueError, r"negative"),
    ("eye_negative_m", lambda: st.eye(2, -2), st.StrataValueError, r"negative"),
    ("eye_overflow", lambda: st.eye(2**32), st.StrataOverflowError, r"overflows"),
    ("rand_negative", lambda: st.rand(-1), st.StrataValueError, r"negative"),
    ("rand_int_dtype", lambda: st.rand(3, dtype=st.int32), st.DTypeError, r"rand"),
    ("randn_int_dtype", lambda: st.randn(3, dtype=st.int64), st.DTypeError, r"randn"),
    ("manual_seed_negative", lambda: st.manual_seed(-1), st.StrataValueError, r"non-negative"),
    ("manual_seed_str", lambda: st.manual_seed("a"), TypeError, r""),
    (
        "tensor_ragged",
        lambda: st.tensor([[1, 2], [3]]),
        st.ShapeError,
        r"expected sequence of length 2",
    ),
    ("tensor_mixed_depth", lambda: st.tensor([1, [2]]), st.ShapeError, r"depth"),
    ("tensor_mixed_depth2", lambda: st.tensor([[1], 2]), st.ShapeError, r"depth"),
    ("tensor_str", lambda: st.tensor("abc"), st.DTypeError, r"Could not infer dtype of str"),
    ("tensor_str_in_list", lambda: st.tensor([1, "a"]), st.DTypeError, r"str"),
    (
        "tensor_object",
        lambda: st.tensor(object()),
        st.DTypeError,
        r"Could not infer dtype of object",
    ),
    ("tensor_none", lambda: st.tensor(None), st.DTypeError, r"NoneType"),
    ("tensor_dict", lambda: st.tensor({1: 2}), st.DTypeError, r"dict"),
    (
        "tensor_bad_dtype",
        lambda: st.tensor([1], dtype="complex32"),
        st.DTypeError,
        r"unsupported dtype",
    ),
    ("from_numpy_list", lambda: st.from_numpy([1, 2]), TypeError, r""),
    ("from_numpy_int", lambda: st.from_numpy(5), TypeError, r""),
    # ---- views
    (
        "view_incompatible",
        lambda: t23().t().view(6),
        st.ShapeError,
        r"Use \.reshape\(\.\.\.\) instead",
    ),
    (
        "view_two_inferred",
        lambda: t23().view(-1, -1),
        st.ShapeError,
        r"only one dimension can be inferred",
    ),
    (
        "view_wrong_numel",
        lambda: t23().view(5, 5),
        st.ShapeError,
        r"shape '\[5, 5\]' is invalid for input of size 6",
    ),
    ("view_negative_dim", lambda: t23().view(-2, 3), st.ShapeError, r"invalid shape dimension -2"),
    (
        "reshape_wrong_numel",
        lambda: t23().reshape(4, 2),
        st.ShapeError,
        r"invalid for input of size 6",
    ),
    ("reshape_overflow", lambda: t23().reshape(2**62, 2**62), st.StrataOverflowError, r"overflows"),
    (
        # A 0 makes 0 elements whatever the other sizes (PyTorch's rule): a size error.
        "view_overflow_with_zero",
        lambda: t23().view(2**62, 2**62, 0),
        st.ShapeError,
        r"invalid for input of size 6",
    ),
    ("view_dtype_size", lambda: st.zeros(3).view(st.float64), st.DTypeError, r"divisible by 2"),
    (
        "view_dtype_stride",
        lambda: st.zeros(2, 4).t().view(st.float64),
        st.DTypeError,
        r"stride\(-1\) must be 1",
    ),
    ("view_as", lambda: t23().view_as(st.zeros(4)), st.ShapeError, r"invalid for input of size 6"),
    (
        "transpose_dim",
        lambda: t23().transpose(0, 5),
        st.TensorIndexError,
        r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 5\)",
    ),
    ("transpose_str", lambda: t23().transpose("a", 1), TypeError, r""),
    (
        "permute_duplicate",
        lambda: t23().permute(0, 0),
        st.ShapeError,
        r"duplicate dims are not allowed",
    ),
    ("permute_too_few", lambda: t23().permute(0), st.ShapeError, r"does not match the length"),
    (
        "permute_out_of_range",
        lambda: t23().permute(0, 2),
        st.TensorIndexError,
        r"Dimension out of range",
    ),
    (
        "expand_mismatch",
        lambda: t23().expand(4, 3),
        st.ShapeError,
        r"The expanded size of the tensor \(4\) must match the existing size \(2\)",
    ),
    (
        "expand_too_few",
        lambda: t23().expand(3),
        st.ShapeError,
        r"must be greater or equal to the number of dimensions",
    ),
    ("expand_negative_new_dim", lambda: t23().expand(-1, 2, 3), st.StrataError, r"-1"),
    ("expand_as", lambda: t23().expand_as(st.zeros(3, 2)), st.ShapeError, r"expanded size"),
    (
        "broadcast_to_negative",
        lambda: t23().broadcast_to((-1, 3)),
        st.StrataValueError,
        r"negative dimension",
    ),
    ("broadcast_to_mismatch", lambda: t23().broadcast_to((3, 3)), st.ShapeError, r"expanded size"),
    (
        "select_out_of_range",
        lambda: t23().select(1, 5),
        st.TensorIndexError,
        r"index 5 out of range for tensor of size \[2, 3\] at dimension 1",
    ),
    ("select_dim", lambda: t23().select(2, 0), st.TensorIndexError, r"Dimension out of range"),
    (
        "narrow_past_end",
        lambda: t23().narrow(1, 2, 3),
        st.TensorIndexError,
        r"start \(2\) \+ length \(3\) exceeds dimension size \(3\)",
    ),
    (
        "narrow_negative_length",
        lambda: t23().narrow(1, 0, -1),
        st.StrataValueError,
        r"length must be non-negative",
    ),
    (
        "unfold_too_big",
        lambda: st.arange(10).unfold(0, 11, 1),
        st.ShapeError,
        r"maximum size for tensor at dimension 0 is 10 but size is 11",
    ),
    (
        "unfold_zero_step",
        lambda: st.arange(10).unfold(0, 3, 0),
        st.StrataValueError,
        r"step is 0 but must be > 0",
    ),
    (
        "unfold_negative_size",
        lambda: st.arange(10).unfold(0, -1, 1),
        st.StrataValueError,
        r"negative",
    ),
    (
        "diagonal_same_dims",
        lambda: t23().diagonal(0, 1, 1),
        st.ShapeError,
        r"diagonal dimensions cannot be identical 1, 1",
    ),
    (
        "movedim_repeated",
        lambda: t23().movedim([0, 1], [1, 1]),
        st.ShapeError,
        r"repeated dim in `destination`",
    ),
    ("movedim_lengths", lambda: t23().movedim([0, 1], [1]), st.StrataError, r""),
    ("squeeze_dim", lambda: t23().squeeze(5), st.TensorIndexError, r"Dimension out of range"),
    ("unsqueeze_dim", lambda: t23().unsqueeze(5), st.TensorIndexError, r"range of \[-3, 2\]"),
    (
        "flatten_order",
        lambda: t23().flatten(1, 0),
        st.StrataValueError,
        r"start_dim cannot come after end_dim",
    ),
    (
        "unflatten_sizes",
        lambda: t23().unflatten(1, (2, 2)),
        st.ShapeError,
        r"don't multiply up to the size of dim 1 \(3\)",
    ),
    ("split_zero", lambda: t23().split(0), st.StrataValueError, r"split_size can only be 0"),
    ("split_sizes_sum", lambda: t23().split([1, 1], 1), st.StrataError, r""),
    ("chunk_zero", lambda: t23().chunk(0), st.StrataValueError, r"greater than 0"),
    ("unbind_dim", lambda: t23().unbind(2), st.TensorIndexError, r"Dimension out of range"),
    ("size_dim", lambda: t23().size(5), st.TensorIndexError, r"Dimension out of range"),
    ("stride_dim", lambda: t23().stride(-3), st.TensorIndexError, r"Dimension out of range"),
    (
        "as_strided_out_of_bounds",
        lambda: t23().as_strided((3,), (3,), 0),
        st.ShapeError,
        r"requiring a storage size of 28 are out of bounds for storage of size 24",
    ),
    (
        "as_strided_offset_out_of_bounds",
        lambda: t23().as_strided((2,), (1,), 5),
        st.ShapeError,
        r"out of bounds",
    ),
    (
        "as_strided_negative_stride",
        lambda: t23().as_strided((3,), (-1,), 0),
        st.ShapeError,
        r"before the start of the storage",
    ),
    (
        "as_strided_negative_offset",
        lambda: t23().as_strided((3,), (1,), -1),
        st.StrataValueError,
        r"invalid storage offset -1",
    ),
    (
        "as_strided_lengths",
        lambda: t23().as_strided((3, 2), (1,), 0),
        st.ShapeError,
        r"mismatch in length of strides and shape",
    ),
    (
        "as_strided_huge_stride",
        lambda: t23().as_strided((3,), (2**62,), 0),
        st.StrataOverflowError,
        r"overflows",
    ),
    (
        "as_strided_huge_size",
        lambda: t23().as_strided((2**62, 2**62), (0, 0), 0),
        st.StrataOverflowError,
        r"overflows",
    ),
    (
        "as_strided_huge_offset",
        lambda: t23().as_strided((1,), (1,), 2**62),
        st.StrataError,
        r"out of bounds|overflow",
    ),
    (
        "as_strided_negative_size",
        lambda: t23().as_strided((-1,), (1,), 0),
        st.StrataValueError,
        r"negative",
    ),
    (
        "as_strided_stride_above_int64",
        lambda: t23().as_strided((2,), (2**63,), 0),
        OverflowError,
        r"",
    ),
    # ---- indexing
    (
        "index_out_of_range",
        lambda: t23()[5],
        st.TensorIndexError,
        r"index 5 is out of bounds for dimension 0 with size 2",
    ),
    ("index_negative_out_of_range", lambda: t23()[-3], st.TensorIndexError, r"out of bounds"),
    ("index_second_dim", lambda: t23()[0, 3], st.TensorIndexError, r"index 3 is out of bounds"),
    (
        "index_too_many",
        lambda: t23()[0, 0, 0],
        st.TensorIndexError,
        r"too many indices for tensor of dimension 2",
    ),
    ("index_two_ellipsis", lambda: t23()[..., ...], st.TensorIndexError, r"single ellipsis"),
    ("index_float", lambda: t23()[1.5], st.TensorIndexError, r"only integers, slices"),
    ("index_str", lambda: t23()["a"], st.TensorIndexError, r"got str"),
    (
        "index_float_tensor",
        lambda: t23()[st.tensor([1.0])],
        st.TensorIndexError,
        r"long, int, byte or bool",
    ),
    ("index_float_list", lambda: t23()[[0.5]], st.TensorIndexError, r"integer or boolean"),
    (
        "index_list_out_of_range",
        lambda: t23()[[0, 5]],
        st.TensorIndexError,
        r"index 5 is out of bounds for dimension 0 with size 2",
    ),
    (
        "index_tensor_out_of_range",
        lambda: t23()[:, st.tensor([-4])],
        st.TensorIndexError,
        r"out of bounds",
    ),
    ("index_mask_shape", lambda: t23()[st.tensor([True, False, True])], st.TensorIndexError, r"The shape of the mask \[3\] at index 0 does not match"),
    (
        "index_same_dim_twice",
        lambda: t23()[[0], [0], [0]],
        st.TensorIndexError,
        r"too many indices",
    ),
    ("slice_zero_step", lambda: t23()[::0], st.StrataValueError, r"slice step cannot be zero"),
    ("setitem_bad_value", lambda: t23().__setitem__(0, "a"), st.DTypeError, r"str"),
    (
        "setitem_shape_mismatch",
        lambda: t23().__setitem__(0, st.zeros(4)),
        st.ShapeError,
        r"must match",
    ),
    (
        "setitem_advanced_shape_mismatch",
        lambda: t23().__setitem__([0, 1], st.zeros(3, 3)),
        st.ShapeError,
        r"",
    ),
    (
        "setitem_out_of_range",
        lambda: t23().__setitem__((slice(None), [7]), 1.0),
        st.TensorIndexError,
        r"out of bounds",
    ),
    (
        "index_select_out_of_range",
        lambda: t23().index_select(0, [5]),
        st.TensorIndexError,
        r"out of bounds",
    ),
    # ---- elementwise
    (
        "broadcast",
        lambda: st.zeros(2, 3) + st.zeros(4),
        st.ShapeError,
        r"The size of tensor a \(3\) must match the size of tensor b \(4\) at non-singleton dimension 1",
    ),
    (
        "broadcast_where",
        lambda: st.where(st.zeros(2, dtype=st.bool), st.zeros(3), 0.0),
        st.ShapeError,
        r"must match",
    ),
    (
        "inplace_broadcast",
        lambda: st.zeros(3).add_(st.zeros(2, 3)),
        st.ShapeError,
        r"doesn't match the broadcast shape \[2, 3\]",
    ),
    (
        "inplace_float_into_int",
        lambda: st.arange(3).add_(1.5),
        st.DTypeError,
        r"result type Float can't be cast to the desired output type Long",
    ),
    ("inplace_div_int", lambda: st.arange(3).div_(2), st.DTypeError, r"can't be cast"),
    (
        "inplace_int_into_bool",
        lambda: st.zeros(2, dtype=st.bool).add_(1),
        st.DTypeError,
        r"can't be cast",
    ),
    ("copy_broadcast", lambda: t23().copy_(st.zeros(4)), st.ShapeError, r"must match"),
    (
        "neg_bool",
        lambda: -st.tensor([True]),
        st.DTypeError,
        r"Negation, the `-` operator, on a bool tensor is not supported",
    ),
    (
        "sub_bool",
        lambda: st.tensor([True]) - st.tensor([True]),
        st.DTypeError,
        r"Subtraction, the `-` operator, with two bool tensors",
    ),
    (
        "sub_bool_int",
        lambda: st.tensor([True]) - st.tensor([1]),
        st.DTypeError,
        r"with a bool tensor is not supported",
    ),
    ("invert_float", lambda: ~st.zeros(2), st.DTypeError, r"not implemented for 'Float'"),
    ("and_float", lambda: st.zeros(2) & st.zeros(2), st.DTypeError, r"not implemented for 'Float'"),
    ("shift_float", lambda: st.zeros(2) << 1, st.DTypeError, r"not implemented"),
    (
        "floordiv_bool",
        lambda: st.tensor([True]) // st.tensor([True]),
        st.DTypeError,
        r"not implemented for 'Bool'",
    ),
    ("abs_bool", lambda: abs(st.tensor([True])), st.DTypeError, r"Bool"),
    (
        "relu_bool",
        lambda: st.tensor([True]).relu(),
        st.DTypeError,
        r"Boolean inputs not supported for relu",
    ),
    (
        "promote_uint64_int64",
        lambda: st.zeros(2, dtype=st.uint64) + st.zeros(2, dtype=st.int64),
        st.DTypeError,
        r"Promotion for uint16, uint32, uint64 types is not supported",
    ),
    (
        "result_type_uint16",
        lambda: st.result_type(st.zeros(1, dtype=st.uint64), st.zeros(1, dtype=st.int8)),
        st.DTypeError,
        r"not supported",
    ),
    (
        "int_negative_power",
        lambda: st.arange(3) ** -1,
        st.StrataValueError,
        r"Integers to negative integer powers are not allowed",
    ),
    ("int_mod_zero", lambda: st.arange(3) % 0, st.StrataValueError, r"ZeroDivisionError"),
    (
        "int_floordiv_zero",
        lambda: st.arange(3) // st.zeros(3, dtype=st.int64),
        st.StrataValueError,
        r"ZeroDivisionError",
    ),
    (
        "scalar_out_of_range",
        lambda: st.tensor([1], dtype=st.int8).fill_(200),
        st.StrataValueError,
        r"cannot be converted to type int8_t without overflow",
    ),
    ("add_str", lambda: st.zeros(2) + "a", st.DTypeError, r"str"),
    ("add_none", lambda: st.zeros(2) + None, st.DTypeError, r"NoneType"),
    ("add_object", lambda: st.zeros(2) + object(), st.DTypeError, r"object"),
    (
        "where_non_bool",
        lambda: st.where(st.zeros(2), st.zeros(2), st.zeros(2)),
        st.DTypeError,
        r"where expected condition to be a boolean tensor",
    ),
    (
        "clamp_no_bounds",
        lambda: t23().clamp(),
        st.StrataValueError,
        r"At least one of 'min' or 'max' must not be None",
    ),
    ("clamp_str", lambda: t23().clamp("a"), st.DTypeError, r"str"),
    ("to_bad_dtype", lambda: t23().to("nonsense"), st.DTypeError, r"unsupported dtype"),
    ("to_cuda", lambda: t23().to("cuda"), st.DeviceError, r"cuda:0 is not available"),
    # ---- matmul
    (
        "matmul_shapes",
        lambda: st.zeros(2, 3) @ st.zeros(4, 5),
        st.ShapeError,
        r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)",
    ),
    ("matmul_0d", lambda: st.zeros(()) @ st.zeros(3), st.ShapeError, r"need to be at least 1D"),
    (
        "matmul_dtypes",
        lambda: st.zeros(2, 3) @ st.zeros(3, 2, dtype=st.float64),
        st.DTypeError,
        r"must have the same dtype, but got Float and Double",
    ),
    (
        "matmul_bool",
        lambda: st.zeros(2, 3, dtype=st.bool) @ st.zeros(3, 2, dtype=st.bool),
        st.DTypeError,
        r"not implemented for 'Bool'",
    ),
    ("matmul_batch", lambda: st.zeros(2, 2, 3) @ st.zeros(3, 3, 2), st.ShapeError, r"must match"),
    ("matmul_vectors", lambda: st.zeros(3) @ st.zeros(4), st.ShapeError, r""),
    (
        "mm_3d",
        lambda: st.zeros(2, 3, 3).mm(st.zeros(3, 3)),
        st.ShapeError,
        r"self must be a matrix",
    ),
    ("mv_shapes", lambda: st.zeros(2, 3).mv(st.zeros(4)), st.ShapeError, r""),
    (
        "bmm_batch",
        lambda: st.zeros(2, 3, 3).bmm(st.zeros(3, 3, 3)),
        st.ShapeError,
        r"Expected size for first two dimensions of batch2 tensor to be: \[2, 3\]",
    ),
    ("bmm_2d", lambda: st.zeros(3, 3).bmm(st.zeros(3, 3)), st.ShapeError, r""),
    (
        "dot_2d",
        lambda: st.zeros(2, 3).dot(st.zeros(2, 3)),
        st.ShapeError,
        r"1D tensors expected, but got 2D and 2D tensors",
    ),
    ("dot_sizes", lambda: st.zeros(2).dot(st.zeros(3)), st.ShapeError, r"inconsistent tensor size"),
    (
        "dot_dtypes",
        lambda: st.zeros(2).dot(st.zeros(2, dtype=st.float64)),
        st.DTypeError,
        r"same dtype",
    ),
    (
        "outer_2d",
        lambda: st.zeros(2, 3).outer(st.zeros(3)),
        st.ShapeError,
        r"Expected 1-D argument self, but got 2-D",
    ),
    # ---- reductions
    ("sum_dim", lambda: t23().sum(5), st.TensorIndexError, r"Dimension out of range"),
    (
        "sum_repeated_dim",
        lambda: t23().sum((0, 0)),
        st.StrataValueError,
        r"dim 0 appears multiple times",
    ),
    ("amax_empty", lambda: st.zeros(0).amax(), st.StrataError, r"numel\(\) == 0"),
    (
        "amax_empty_dim",
        lambda: st.zeros(2, 0).amax(1),
        st.TensorIndexError,
        r"Expected reduction dim 1 to have non-zero size",
    ),
    ("max_empty", lambda: st.zeros(0).max(), st.StrataError, r"numel\(\) == 0"),
    ("max_dim_empty", lambda: st.zeros(2, 0).max(1), st.TensorIndexError, r"non-zero size"),
    ("argmax_empty", lambda: st.zeros(0).argmax(), st.TensorIndexError, r"numel\(\) == 0"),
    ("argmin_dim", lambda: t23().argmin(3), st.TensorIndexError, r"Dimension out of range"),
    (
        "mean_int",
        lambda: st.arange(3).mean(),
        st.DTypeError,
        r"Input dtype must be either a floating point or complex dtype. Got: Long",
    ),
    (
        "var_int",
        lambda: st.arange(3).var(),
        st.DTypeError,
        r"std and var only support floating point and complex dtypes",
    ),
    ("std_bool", lambda: st.zeros(3, dtype=st.bool).std(), st.DTypeError, r"floating point"),
    ("cumsum_dim", lambda: t23().cumsum(3), st.TensorIndexError, r"Dimension out of range"),
    ("cumprod_dim", lambda: t23().cumprod(-3), st.TensorIndexError, r"Dimension out of range"),
    ("logsumexp_dim", lambda: t23().logsumexp(3), st.TensorIndexError, r"Dimension out of range"),
    # ---- conversions
    (
        "item_many",
        lambda: t23().item(),
        st.StrataValueError,
        r"a Tensor with 6 elements cannot be converted to Scalar",
    ),
    ("float_many", lambda: float(t23()), st.StrataValueError, r"6 elements"),
    ("int_many", lambda: int(t23()), st.StrataValueError, r"6 elements"),
    ("item_empty", lambda: st.zeros(0).item(), st.StrataValueError, r"0 elements"),
    (
        "index_float_tensor_as_index",
        lambda: [1, 2, 3][st.tensor(1.0)],
        TypeError,
        r"only integer tensors of a single element",
    ),
    (
        "bool_many",
        lambda: bool(t23()),
        st.StrataValueError,
        r"Boolean value of Tensor with 6 values is ambiguous",
    ),
    ("len_0d", lambda: len(st.tensor(1.0)), TypeError, r"0-d"),
    ("iter_0d", lambda: iter(st.tensor(1.0)), TypeError, r"0-d"),
    ("numpy_bf16", lambda: st.zeros(2, dtype=st.bfloat16).numpy(), st.DTypeError, r"DLPack"),
]


@pytest.mark.parametrize("name,call,exc,match", CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises(name, call, exc, match):
    with pytest.raises(exc) as info:
        call()
    if match:
        assert info.match(match)
    if issubclass(exc, st.StrataError):
        # The class is one of the documented ones, and its builtin base holds.
        for cls, builtin in HIERARCHY:
            if isinstance(info.value, cls):
                assert isinstance(info.value, builtin)
    assert str(info.value)  # never an empty message


# --------------------------------------------------------------------------------------
# Overlapping writes.
# --------------------------------------------------------------------------------------

SELF_OVERLAP = {
    "add_": lambda t: t.add_(1),
    "iadd": lambda t: t.__iadd__(1),
    "mul_": lambda t: t.mul_(st.ones(3)),
    "fill_": lambda t: t.fill_(1),
    "zero_": lambda t: t.zero_(),
    "copy_": lambda t: t.copy_(st.ones(2, 3)),
    "setitem_all": lambda t: t.__setitem__(slice(None), 2.0),
    "setitem_ellipsis_tensor": lambda t: t.__setitem__(Ellipsis, st.ones(3)),
    "neg_": lambda t: t.neg_(),
    "clamp_": lambda t: t.clamp_(0, 1),
    "exp_": lambda t: t.exp_(),
}


@pytest.mark.parametrize("write", list(SELF_OVERLAP))
@pytest.mark.parametrize(
    "make",
    [
        lambda: st.zeros(3).expand(2, 3),
        lambda: st.zeros(1, 3).expand(2, 3),
        lambda: st.zeros(6).as_strided((2, 3), (1, 1)),
        lambda: st.zeros(4).unfold(0, 3, 1),
    ],
    ids=["expand", "expand_size1", "as_strided_overlap", "unfold"],
)
def test_write_to_self_overlapping_tensor_is_refused(write, make):
    t = make()
    base_before = t.untyped_storage().tolist(st.float32)
    with pytest.raises(
        st.OverlapError,
        match="more than one element of the written-to tensor refers to a single memory location",
    ):
        SELF_OVERLAP[write](t)
    assert t.untyped_storage().tolist(st.float32) == base_before  # nothing written


def test_overlap_error_is_runtime_error():
    with pytest.raises(RuntimeError):
        st.zeros(3).expand(2, 3).add_(1)


def test_non_overlapping_views_of_expanded_can_be_written():
    base = st.zeros(3)
    e = base.expand(2, 3)
    e[0].fill_(1.0)  # one row: no two elements alias
    assert base.tolist() == [1.0, 1.0, 1.0]


# --------------------------------------------------------------------------------------
# Known bugs (strict xfail: they fail today; fix the bug, then drop the marker).
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda: st.zeros("a"),
        lambda: st.zeros(["a"]),
        lambda: st.rand("a"),
        lambda: t23().sum("a"),
        lambda: t23().view([[]]),
        lambda: t23().flip("a"),
        lambda: t23().permute("a", 0),
    ],
)
def test_wrong_type_for_int_argument_is_type_error(call):
    with pytest.raises(TypeError):
        call()


@pytest.mark.parametrize(
    "fn", [st.zeros_like, st.ones_like, st.empty_like, st.rand_like, st.randn_like]
)
def test_like_functions_with_non_tensor_are_type_errors(fn):
    with pytest.raises(TypeError):
        fn(None)


def test_int_too_large_is_overflow_error():
    with pytest.raises(st.StrataOverflowError):
        st.tensor(2**70)
    with pytest.raises(OverflowError):
        st.tensor([1, -(2**70)])


def test_index_broadcast_mismatch_is_index_error():
    with pytest.raises(IndexError):
        t23()[[0, 1], [0, 1, 2]]


def test_huge_slice_bounds_are_clamped():
    t = st.arange(3)
    assert t[2**63 :].tolist() == []
    assert t[: 2**64].tolist() == [0, 1, 2]
    assert t[-(2**70) :].tolist() == [0, 1, 2]


# --------------------------------------------------------------------------------------
# Never crash the interpreter (each case runs in its own process).
# --------------------------------------------------------------------------------------


# The child's imports, before the (dedented) code of each isolated test.
PRELUDE = "import strata as st\nimport numpy as np\n"


def test_hostile_inputs_do_not_crash():
    code = """
    import itertools
    t = st.arange(6.0).view(2, 3)
    calls = [
        lambda: st.zeros(2**62, 2**62), lambda: st.zeros(2**63 - 1), lambda: st.ones(-5),
        lambda: st.empty(2**31, 2**31, 2**31), lambda: st.full((2**40, 2**40), 1.0),
        lambda: st.arange(-2**62, 2**62), lambda: st.arange(0, 1e30, 1e-30),
        lambda: st.linspace(0, 1, 2**62), lambda: st.eye(2**31, 2**31),
        lambda: t.as_strided((2**62,), (2**62,), 2**62), lambda: t.as_strided((3, 3), (-2**62, 2**62), 0),
        lambda: t.as_strided((2, 2), (-1, -1), 3), lambda: t.as_strided((0,), (2**62,), 6),
        lambda: t.as_strided((2**32, 2**32), (1, 2**32)),
        lambda: t.view(-1, 0), lambda: t.reshape(0, -1), lambda: t.expand(2**62, 2, 3),
        lambda: t.unfold(1, 2**62, 1), lambda: t.unfold(1, 1, 2**62), lambda: t.narrow(0, 2**62, 2**62),
        lambda: t.narrow(0, -2**62, 1), lambda: t.select(0, -2**63), lambda: t.diagonal(2**62),
        lambda: t.diagonal(-2**62), lambda: t[::-2**62], lambda: t[2**62::2**62], lambda: t[-2**63:],
        lambda: t[[2**62]], lambda: t[[-2**63]], lambda: t.split(2**62), lambda: t.chunk(2**62),
        lambda: t.split([2**62, -2**62 + 3], 1), lambda: t.index_select(0, [2**62]),
        lambda: st.tensor([[1, 2], [3]] * 1000), lambda: t.view(st.bool), lambda: t.view(st.uint8)[..., ::2].view(st.int16),
        lambda: t.sum(tuple(range(100))), lambda: t.cumsum(2**62), lambda: t.movedim(2**62, 0),
        lambda: t.permute(*range(2**8)), lambda: t.unsqueeze(2**62), lambda: t.flatten(2**62, -2**62),
        lambda: t @ t.view(3, 2).expand(2**40, 3, 2),
        lambda: st.from_numpy(np.lib.stride_tricks.as_strided(np.zeros(1), (2**40,), (0,))).add_(1),
        lambda: st.zeros(0, 2**62).sum(), lambda: st.zeros(0, 2**62).t().contiguous(),
        lambda: st.zeros(2**62, 0) @ st.zeros(0, 2**62),
        lambda: repr(st.zeros(0, 2**62)), lambda: st.zeros(1, 2**62)[:, :0].tolist(),
        lambda: st.tensor(float("nan")).long(), lambda: st.tensor([1e300]).half(), lambda: st.tensor([-1.0]).to(st.uint8),
    ]
    kinds = {}
    for i, c in enumerate(calls):
        try:
            c()
            kinds[i] = "ok"
        except (st.StrataError, ValueError, TypeError, IndexError, OverflowError, MemoryError, BufferError) as e:
            kinds[i] = type(e).__name__
    print(len(kinds))
    """
    r = assert_clean(PRELUDE + textwrap.dedent(code))
    assert r.stdout.strip().isdigit()


CRASHES = {
    "tensor_of_deeply_nested_list": "n = 1\nfor _ in range(3000): n = [n]\nst.tensor(n)",
    "repr_of_2000_dim_tensor": "repr(st.zeros(*([1] * 2000)))",
    "explain_of_2000_dim_tensor": "st.zeros(*([1] * 2000)).explain()",
    "tolist_of_20000_dim_tensor": "st.zeros(*([1] * 20000)).tolist()",
}


@pytest.mark.parametrize("name", list(CRASHES))
def test_recursion_does_not_crash(name):
    r = run_isolated(PRELUDE + CRASHES[name])
    assert r.returncode >= 0, f"killed by signal {-r.returncode}"
