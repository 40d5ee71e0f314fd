//! Every error path of the public API: the exact message (PyTorch's wording where strata
//! promises it), the [`ErrorKind`], and that a refused op left the
//! data and the version counter alone. Nothing here may panic.

use std::fmt::Debug;
use std::ptr::NonNull;

use strata::layout::broadcast::broadcast_shapes;
use strata::storage::Backing;
use strata::{DType, Ellipsis, Error, ErrorKind, Layout, NewAxis, Storage, Tensor, TensorIndex};

/// The error of `r`, checking its full text and kind.
#[track_caller]
fn fails<T: Debug>(r: strata::Result<T>, kind: ErrorKind, msg: &str) -> Error {
    let e = r.expect_err("expected an error");
    assert_eq!(e.to_string(), msg);
    assert_eq!(e.kind(), kind, "{e}");
    e
}

/// As [`fails`], for texts that end in run-dependent detail: checks the start.
#[track_caller]
fn fails_starting<T: Debug>(r: strata::Result<T>, kind: ErrorKind, prefix: &str) -> Error {
    let e = r.expect_err("expected an error");
    assert!(
        e.to_string().starts_with(prefix),
        "{e}\n  does not start with\n{prefix}"
    );
    assert_eq!(e.kind(), kind, "{e}");
    e
}

fn ar(n: i64) -> Tensor {
    Tensor::arange(0, n, 1, DType::I64).unwrap()
}

fn ar_f32(shape: &[i64]) -> Tensor {
    let n: i64 = shape.iter().product();
    Tensor::arange(0, n, 1, DType::F32)
        .unwrap()
        .view(shape)
        .unwrap()
}

const VIEW_TEXT: &str = "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.";
const SELF_OVERLAP: &str = "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.";

// ---------------------------------------------------------------------------------------
// Dims
// ---------------------------------------------------------------------------------------

#[test]
fn dim_out_of_range_names_the_range() {
    let x = ar_f32(&[2, 3]);
    let e = fails(
        x.transpose(0, 3),
        ErrorKind::Index,
        "transpose: Dimension out of range (expected to be in range of [-2, 1], but got 3)",
    );
    assert!(matches!(
        e,
        Error::DimOutOfRange {
            op: "transpose",
            dim: 3,
            ndim: 2
        }
    ));
    fails(
        x.transpose(-3, 0),
        ErrorKind::Index,
        "transpose: Dimension out of range (expected to be in range of [-2, 1], but got -3)",
    );
    // A 0-d tensor accepts 0 and -1, as in PyTorch.
    let s = Tensor::scalar(1.0f32);
    assert_eq!(s.transpose(0, -1).unwrap().shape(), &[] as &[usize]);
    fails(
        s.transpose(1, 0),
        ErrorKind::Index,
        "transpose: Dimension out of range (expected to be in range of [-1, 0], but got 1)",
    );
    // unsqueeze takes one more position.
    fails(
        x.unsqueeze(3),
        ErrorKind::Index,
        "unsqueeze: Dimension out of range (expected to be in range of [-3, 2], but got 3)",
    );
    assert_eq!(x.unsqueeze(2).unwrap().shape(), &[2, 3, 1]);
    assert_eq!(x.unsqueeze(-3).unwrap().shape(), &[1, 2, 3]);
    fails(
        x.unsqueeze(-4),
        ErrorKind::Index,
        "unsqueeze: Dimension out of range (expected to be in range of [-3, 2], but got -4)",
    );
    fails(
        x.size(2),
        ErrorKind::Index,
        "size: Dimension out of range (expected to be in range of [-2, 1], but got 2)",
    );
    assert_eq!(x.size(-1).unwrap(), 3);

    // Every op that takes a dim wraps it the same way.
    let r = "Dimension out of range (expected to be in range of [-2, 1], but got 2)";
    let cases: Vec<(&str, strata::Result<Tensor>)> = vec![
        ("select", x.select(2, 0)),
        ("narrow", x.narrow(2, 0, 1)),
        ("slice", x.slice(2, None, None, 1)),
        ("flip", x.flip(&[2])),
        ("squeeze", x.squeeze_dims(&[2])),
        ("unfold", x.unfold(2, 1, 1)),
        ("diagonal", x.diagonal(0, 0, 2)),
        ("flatten", x.flatten(0, 2)),
        ("unflatten", x.unflatten(2, &[1])),
        ("permute", x.permute(&[0, 2])),
        ("movedim", x.movedim(&[2], &[0])),
    ];
    for (op, res) in cases {
        fails(res, ErrorKind::Index, &format!("{op}: {r}"));
    }
    fails(x.split(1, 2), ErrorKind::Index, &format!("split: {r}"));
    fails(x.chunk(2, 2), ErrorKind::Index, &format!("chunk: {r}"));
    fails(x.unbind(2), ErrorKind::Index, &format!("unbind: {r}"));
    fails(
        x.split_with_sizes(&[1], 2),
        ErrorKind::Index,
        &format!("split_with_sizes: {r}"),
    );
}

#[test]
fn size_of_0d_tensor_is_an_error() {
    let s = Tensor::scalar(1.0f32);
    let e = s.size(0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Index);
}

// ---------------------------------------------------------------------------------------
// view / reshape / flatten / unflatten
// ---------------------------------------------------------------------------------------

#[test]
fn view_errors() {
    let x = ar_f32(&[24]);
    let e = fails(
        x.view(&[5, 5]),
        ErrorKind::Shape,
        "view: shape '[5, 5]' is invalid for input of size 24",
    );
    assert!(matches!(
        e,
        Error::InvalidShape { op: "view", ref shape, numel: 24 } if shape == &[5, 5]
    ));
    fails(
        x.reshape(&[5, 5]),
        ErrorKind::Shape,
        "reshape: shape '[5, 5]' is invalid for input of size 24",
    );
    fails(
        x.view(&[-1, 5]),
        ErrorKind::Shape,
        "view: shape '[-1, 5]' is invalid for input of size 24",
    );
    fails(
        x.view(&[-1, -1]),
        ErrorKind::Shape,
        "view: only one dimension can be inferred",
    );
    fails(
        x.reshape(&[2, -1, -1]),
        ErrorKind::Shape,
        "reshape: only one dimension can be inferred",
    );
    fails(
        x.view(&[-2, 12]),
        ErrorKind::Shape,
        "view: invalid shape dimension -2",
    );
    fails(
        x.reshape(&[4, -3]),
        ErrorKind::Shape,
        "reshape: invalid shape dimension -3",
    );
    let empty = Tensor::zeros(&[0, 3], DType::F32).unwrap();
    fails(
        empty.view(&[0, -1]),
        ErrorKind::Shape,
        "view: cannot reshape tensor of 0 elements into shape [0, -1] because the unspecified dimension size -1 can be any value and is ambiguous",
    );
    assert_eq!(empty.view(&[3, -1, 5]).unwrap().shape(), &[3, 0, 5]);

    // The stride rule: t.T spans two contiguous subspaces.
    let t = ar_f32(&[3, 4]).t().unwrap();
    let e = fails(
        t.view(&[12]),
        ErrorKind::Shape,
        &format!("{VIEW_TEXT} (view of shape [4, 3] with strides [1, 4] as [12])"),
    );
    assert!(matches!(e, Error::ViewIncompatible { .. }));
    fails_starting(t.view(&[-1]), ErrorKind::Shape, VIEW_TEXT);
    fails_starting(t.view(&[2, 6]), ErrorKind::Shape, VIEW_TEXT);
    // ... while reshape copies.
    let r = t.reshape(&[-1]).unwrap();
    assert!(!r.same_storage(&t));
}

#[test]
fn flatten_and_unflatten_errors() {
    let x = ar_f32(&[2, 3, 4]);
    fails(
        x.flatten(2, 1),
        ErrorKind::Value,
        "flatten: flatten() has invalid args: start_dim cannot come after end_dim",
    );
    fails(
        x.flatten(-1, 0),
        ErrorKind::Value,
        "flatten: flatten() has invalid args: start_dim cannot come after end_dim",
    );
    fails(
        x.unflatten(2, &[3, 2]),
        ErrorKind::Shape,
        "unflatten: unflatten: Provided sizes [3, 2] don't multiply up to the size of dim 2 (4) in the input tensor",
    );
    fails(
        x.unflatten(1, &[]),
        ErrorKind::Shape,
        "unflatten: unflatten: sizes must be non-empty",
    );
    fails(
        x.unflatten(1, &[-1, -1]),
        ErrorKind::Shape,
        "unflatten: only one dimension can be inferred",
    );
    fails(
        x.unflatten(1, &[-2, 3]),
        ErrorKind::Shape,
        "unflatten: invalid shape dimension -2",
    );
    fails(
        Tensor::scalar(1.0f32).unflatten(0, &[1]),
        ErrorKind::Shape,
        "unflatten: unflatten: cannot unflatten a 0-dim tensor",
    );
    assert_eq!(x.unflatten(2, &[2, -1]).unwrap().shape(), &[2, 3, 2, 2]);
}

// ---------------------------------------------------------------------------------------
// Dim-reordering ops
// ---------------------------------------------------------------------------------------

#[test]
fn transpose_family_errors() {
    let x = ar_f32(&[2, 3, 4]);
    fails(
        x.t(),
        ErrorKind::Shape,
        "t: t() expects a tensor with <= 2 dimensions, but self is 3D",
    );
    fails(
        ar(3).mt(),
        ErrorKind::Shape,
        "mT: tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.",
    );
    fails(
        x.permute(&[0, 0, 1]),
        ErrorKind::Shape,
        "permute: permute(): duplicate dims are not allowed.",
    );
    fails(
        x.permute(&[0, -3, 1]),
        ErrorKind::Shape,
        "permute: permute(): duplicate dims are not allowed.",
    );
    fails(
        x.permute(&[1, 0]),
        ErrorKind::Shape,
        "permute: number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = 3 is not equal to len(dims) = 2",
    );
    fails(
        x.movedim(&[0, 1], &[1, 1]),
        ErrorKind::Shape,
        "movedim: movedim: repeated dim in `destination` ([1, 1])",
    );
    fails(
        x.movedim(&[2, -1], &[0, 1]),
        ErrorKind::Shape,
        "movedim: movedim: repeated dim in `source` ([2, -1])",
    );
    fails(
        x.movedim(&[0, 1], &[0]),
        ErrorKind::Shape,
        "movedim: movedim: Invalid source or destination dims: source ([0, 1]) and destination ([0]) must have the same number of elements",
    );
    fails(
        x.flip(&[0, -3]),
        ErrorKind::Shape,
        "flip: dim 0 appears multiple times in the list of dims",
    );
}

// ---------------------------------------------------------------------------------------
// Selecting ops
// ---------------------------------------------------------------------------------------

#[test]
fn select_narrow_slice_errors() {
    let x = ar_f32(&[2, 3, 4]);
    let e = fails(
        x.select(1, 5),
        ErrorKind::Index,
        "select(): index 5 out of range for tensor of size [2, 3, 4] at dimension 1",
    );
    assert!(matches!(
        e,
        Error::IndexOutOfRange {
            op: "select",
            index: 5,
            dim: 1,
            ..
        }
    ));
    fails(
        x.select(-1, -5),
        ErrorKind::Index,
        "select(): index -5 out of range for tensor of size [2, 3, 4] at dimension 2",
    );
    assert_eq!(x.select(-1, -4).unwrap().offset(), 0);
    let s = Tensor::scalar(1.0f32);
    fails(
        s.select(0, 0),
        ErrorKind::Index,
        "select: select() cannot be applied to a 0-dim tensor.",
    );

    let y = ar(10);
    fails(
        y.narrow(0, 8, 3),
        ErrorKind::Index,
        "narrow: start (8) + length (3) exceeds dimension size (10).",
    );
    fails(
        y.narrow(0, -3, 4),
        ErrorKind::Index,
        "narrow: start (7) + length (4) exceeds dimension size (10).",
    );
    fails(
        y.narrow(0, 11, 0),
        ErrorKind::Index,
        "narrow: start out of range (expected to be in range of [-10, 10], but got 11)",
    );
    fails(
        y.narrow(0, 0, -1),
        ErrorKind::Value,
        "narrow: narrow(): length must be non-negative.",
    );
    fails(
        s.narrow(0, 0, 1),
        ErrorKind::Shape,
        "narrow: narrow() cannot be applied to a 0-dim tensor.",
    );
    assert_eq!(y.narrow(0, 10, 0).unwrap().shape(), &[0]);

    fails(
        y.slice(0, None, None, 0),
        ErrorKind::Value,
        "slice: slice step cannot be zero",
    );
    fails(
        s.slice(0, None, None, 1),
        ErrorKind::Index,
        "slice: slice() cannot be applied to a 0-dim tensor.",
    );
    // Out-of-range bounds clamp instead of failing.
    assert_eq!(y.slice(0, Some(-100), Some(100), 3).unwrap().shape(), &[4]);
    assert_eq!(y.slice(0, Some(100), Some(-100), -3).unwrap().shape(), &[4]);
}

#[test]
fn expand_errors() {
    let x = ar_f32(&[2, 3]);
    fails(
        x.expand(&[4, 3]),
        ErrorKind::Shape,
        "expand: The expanded size of the tensor (4) must match the existing size (2) at non-singleton dimension 0.  Target sizes: [4, 3].  Tensor sizes: [2, 3]",
    );
    // PyTorch names the tensor type (`torch.FloatTensor{[2, 3]}`); the rest is verbatim.
    let e = fails_starting(x.expand(&[3]), ErrorKind::Shape, "expand: expand(");
    assert!(e.to_string().ends_with("{[2, 3]}, size=[3]): the number of sizes provided (1) must be greater or equal to the number of dimensions in the tensor (2)"), "{e}");
    fails(
        x.expand(&[-1, 2, 3]),
        ErrorKind::Shape,
        "expand: The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension 0",
    );
    fails_starting(
        x.expand(&[-2, 3]),
        ErrorKind::Shape,
        "expand: The expanded size of the tensor (-2) isn't allowed",
    );
    fails(
        x.broadcast_to(&[2, 4]),
        ErrorKind::Shape,
        "expand: The expanded size of the tensor (4) must match the existing size (3) at non-singleton dimension 1.  Target sizes: [2, 4].  Tensor sizes: [2, 3]",
    );
    fails_starting(x.expand_as(&ar(5)), ErrorKind::Shape, "expand: expand(");
    // size 1 may become 0; 0 may not become 1.
    assert_eq!(ar_f32(&[1, 3]).expand(&[0, 3]).unwrap().shape(), &[0, 3]);
    fails_starting(
        Tensor::zeros(&[0], DType::F32).unwrap().expand(&[1]),
        ErrorKind::Shape,
        "expand: The expanded size of the tensor (1) must match the existing size (0) at non-singleton dimension 0.",
    );
}

#[test]
fn unfold_diagonal_split_errors() {
    let x = ar(10);
    fails(
        x.unfold(0, 11, 1),
        ErrorKind::Shape,
        "unfold: maximum size for tensor at dimension 0 is 10 but size is 11",
    );
    fails(
        x.unfold(0, 3, 0),
        ErrorKind::Value,
        "unfold: step is 0 but must be > 0",
    );
    fails(
        Tensor::scalar(1i64).unfold(0, 2, 1),
        ErrorKind::Shape,
        "unfold: maximum size for tensor at dimension 0 is 1 but size is 2",
    );

    let m = ar_f32(&[2, 2]);
    fails(
        m.diagonal(0, 1, 1),
        ErrorKind::Shape,
        "diagonal: diagonal dimensions cannot be identical 1, 1",
    );
    fails(
        m.diagonal(0, -1, 1),
        ErrorKind::Shape,
        "diagonal: diagonal dimensions cannot be identical -1, 1",
    );
    fails(
        x.diagonal(0, 0, -1),
        ErrorKind::Shape,
        "diagonal: diagonal requires a tensor with at least 2 dims, got 1",
    );
    // Offsets past the edge give an empty diagonal, not an error.
    assert_eq!(m.diagonal(5, 0, 1).unwrap().shape(), &[0]);

    let y = ar(5);
    fails(
        y.split(0, 0),
        ErrorKind::Value,
        "split: split_size can only be 0 if dimension size is 0, but got dimension size of 5",
    );
    fails(
        y.split_with_sizes(&[2, 2], 0),
        ErrorKind::Shape,
        "split_with_sizes: split_with_sizes expects split_sizes to sum exactly to 5 (input tensor's size at dimension 0), but got split_sizes=[2, 2]",
    );
    fails(
        y.split_with_sizes(&[2, 2, 2], 0),
        ErrorKind::Shape,
        "split_with_sizes: split_with_sizes expects split_sizes to sum exactly to 5 (input tensor's size at dimension 0), but got split_sizes=[2, 2, 2]",
    );
    fails(
        y.split_with_sizes(&[usize::MAX, 6], 0),
        ErrorKind::Shape,
        &format!("split_with_sizes: split_with_sizes expects split_sizes to sum exactly to 5 (input tensor's size at dimension 0), but got split_sizes=[{}, 6]", usize::MAX),
    );
    fails(
        y.chunk(0, 0),
        ErrorKind::Value,
        "chunk: chunk expects `chunks` to be greater than 0, got: 0",
    );
    let s = Tensor::scalar(1i64);
    fails(
        s.unbind(0),
        ErrorKind::Shape,
        "unbind: unbind() expects at least a 1-dimensional tensor",
    );
    fails(
        s.split(1, 0),
        ErrorKind::Shape,
        "split: split() expects at least a 1-dimensional tensor",
    );
    fails(
        s.chunk(1, 0),
        ErrorKind::Shape,
        "chunk: chunk() expects at least a 1-dimensional tensor",
    );
    // A size-0 dim may be split by 0.
    assert_eq!(ar(0).split(0, 0).unwrap().len(), 1);
}

#[test]
fn broadcast_to_huge_size_is_an_error() {
    let r = ar(1).broadcast_to(&[usize::MAX]);
    assert!(r.is_err(), "{r:?}");
}

#[test]
fn squeeze_repeated_dims_is_an_error() {
    let x = ar_f32(&[1, 3]);
    fails(
        x.squeeze_dims(&[0, 0]),
        ErrorKind::Shape,
        "squeeze: dim 0 appears multiple times in the list of dims",
    );
}

#[test]
fn view_dtype_errors() {
    let x = ar_f32(&[2, 6]);
    let t = x.t().unwrap(); // shape [6, 2], strides [1, 6]
    fails(
        t.view_dtype(DType::F64),
        ErrorKind::DType,
        "view: self.stride(-1) must be 1 to view Float as Double (different element sizes), but got 6",
    );
    fails(
        ar_f32(&[2, 3]).view_dtype(DType::F64),
        ErrorKind::DType,
        "view: self.size(-1) must be divisible by 2 to view Float as Double (different element sizes), but got 3",
    );
    fails(
        ar_f32(&[7]).narrow(0, 1, 6).unwrap().view_dtype(DType::F64),
        ErrorKind::DType,
        "view: self.storage_offset() must be divisible by 2 to view Float as Double (different element sizes), but got 1",
    );
    fails(
        ar_f32(&[2, 3]).narrow(1, 0, 2).unwrap().view_dtype(DType::F64),
        ErrorKind::DType,
        "view: self.stride(0) must be divisible by 2 to view Float as Double (different element sizes), but got 3",
    );
    fails(
        Tensor::scalar(1.0f32).view_dtype(DType::F64),
        ErrorKind::DType,
        "view: self.dim() cannot be 0 to view Float as Double (different element sizes)",
    );
    fails(
        Tensor::scalar(1i64).view_dtype(DType::U8),
        ErrorKind::DType,
        "view: self.dim() cannot be 0 to view Long as Byte (different element sizes)",
    );
    fails(
        ar(6)
            .view(&[2, 3])
            .unwrap()
            .t()
            .unwrap()
            .view_dtype(DType::I32),
        ErrorKind::DType,
        "view: self.stride(-1) must be 1 to view Long as Int (different element sizes), but got 3",
    );
    // Same item size: always free, whatever the strides.
    let v = t.view_dtype(DType::I32).unwrap();
    assert_eq!((v.shape(), v.strides()), (t.shape(), t.strides()));
    // The legal case halves the last dim.
    assert_eq!(x.view_dtype(DType::F64).unwrap().shape(), &[2, 3]);
}

#[test]
fn basic_index_errors() {
    let x = ar_f32(&[3, 4]);
    fails(
        x.index(&[
            TensorIndex::Int(0),
            TensorIndex::Int(0),
            TensorIndex::Int(0),
        ]),
        ErrorKind::Index,
        "index: too many indices for tensor of dimension 2",
    );
    fails(
        x.index(&[
            TensorIndex::full(),
            TensorIndex::full(),
            TensorIndex::Int(0),
            TensorIndex::NewAxis,
        ]),
        ErrorKind::Index,
        "index: too many indices for tensor of dimension 2",
    );
    fails(
        x.index(&[Ellipsis.into(), TensorIndex::Int(0), Ellipsis.into()]),
        ErrorKind::Index,
        "index: an index can only have a single ellipsis ('...')",
    );
    fails(
        x.index(&[TensorIndex::Int(3)]),
        ErrorKind::Index,
        "index: index 3 is out of bounds for dimension 0 with size 3",
    );
    fails(
        x.index(&[TensorIndex::full(), TensorIndex::Int(-5)]),
        ErrorKind::Index,
        "index: index -5 is out of bounds for dimension 1 with size 4",
    );
    fails(
        x.index(&[TensorIndex::step(0)]),
        ErrorKind::Value,
        "slice: slice step cannot be zero",
    );
    // New axes do not count against the dims.
    let v = x
        .index(&[
            NewAxis.into(),
            TensorIndex::Int(-1),
            NewAxis.into(),
            TensorIndex::Int(3),
        ])
        .unwrap();
    assert_eq!((v.shape(), v.offset()), (&[1usize, 1][..], 11));
}

// ---------------------------------------------------------------------------------------
// as_strided, bounds and overflow
// ---------------------------------------------------------------------------------------

#[test]
fn as_strided_out_of_bounds() {
    // PyTorch's example: sizes [3], strides [2], offset 0, itemsize 4 over 16 bytes.
    let x = Tensor::zeros(&[4], DType::F32).unwrap();
    let pytorch = "sizes [3], strides [2], storage offset 0, and itemsize 4 requiring a storage size of 20 are out of bounds for storage of size 16";
    let e = fails(
        x.as_strided(&[3], &[2], Some(0)),
        ErrorKind::Shape,
        &format!("as_strided: {pytorch}"),
    );
    assert!(matches!(
        e,
        Error::OutOfBounds {
            required: 20,
            available: 16,
            itemsize: 4,
            ..
        }
    ));
    // The same through from_parts.
    let storage = Storage::zeroed(16).unwrap();
    fails(
        Tensor::from_parts(storage, Layout::new(&[3], &[2], 0).unwrap(), DType::F32),
        ErrorKind::Shape,
        &format!("as_strided: {pytorch}"),
    );
    // Past the end by an offset alone.
    fails(
        x.as_strided(&[1], &[1], Some(4)),
        ErrorKind::Shape,
        "as_strided: sizes [1], strides [1], storage offset 4, and itemsize 4 requiring a storage size of 20 are out of bounds for storage of size 16",
    );
    // Below 0 through a negative stride.
    let e = fails(
        x.as_strided(&[3], &[-1], Some(1)),
        ErrorKind::Shape,
        "as_strided: sizes [3], strides [-1], storage offset 1 reach element -1, before the start of the storage",
    );
    assert!(matches!(
        e,
        Error::Shape {
            op: "as_strided",
            ..
        }
    ));
    fails(
        x.as_strided(&[2, 2], &[-3, 1], Some(2)),
        ErrorKind::Shape,
        "as_strided: sizes [2, 2], strides [-3, 1], storage offset 2 reach element -1, before the start of the storage",
    );
    // The same extents shifted inside are fine, and negative strides read backwards.
    let y = ar(4);
    assert_eq!(
        y.as_strided(&[3], &[-1], Some(2))
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![2, 1, 0]
    );
    assert_eq!(
        y.as_strided(&[2, 2], &[-2, 1], Some(2))
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![2, 3, 0, 1]
    );
    fails(
        x.as_strided(&[2, 3], &[1], None),
        ErrorKind::Shape,
        "as_strided: mismatch in length of strides and shape: shape [2, 3] has 2 dims but strides [1] has 1",
    );
    // Empty views have no extent to check.
    assert_eq!(
        x.as_strided(&[0, 5], &[100, 100], Some(3)).unwrap().numel(),
        0
    );
}

#[test]
fn overflow_is_an_error_not_a_panic() {
    let big = i64::MAX;
    let x = ar(24);
    // Shape products.
    fails(
        x.view(&[big, 4]),
        ErrorKind::Overflow,
        &format!("view: the number of elements of shape [{big}, 4] overflows"),
    );
    // A 0 makes 0 elements whatever the other sizes (PyTorch's rule): a size error.
    fails(
        x.reshape(&[big, big, 0]),
        ErrorKind::Shape,
        &format!("reshape: shape '[{big}, {big}, 0]' is invalid for input of size 24"),
    );
    fails(
        Tensor::zeros(&[usize::MAX, 2], DType::I64),
        ErrorKind::Overflow,
        &format!(
            "zeros: the number of elements of shape [{}, 2] overflows",
            usize::MAX
        ),
    );
    fails(
        Tensor::from_slice::<f32>(&[], &[usize::MAX / 2, 4]),
        ErrorKind::Overflow,
        &format!(
            "from_slice: the number of elements of shape [{}, 4] overflows",
            usize::MAX / 2
        ),
    );
    fails(
        Layout::contiguous(&[usize::MAX, 3]),
        ErrorKind::Overflow,
        &format!(
            "contiguous: the number of elements of shape [{}, 3] overflows",
            usize::MAX
        ),
    );
    let e = fails_starting(
        ar(1).expand(&[big, big]),
        ErrorKind::Overflow,
        "expand: the number of elements of shape",
    );
    assert!(matches!(e, Error::Overflow { op: "expand", .. }));
    fails(
        ar(1).broadcast_to(&[1 << 62, 4]),
        ErrorKind::Overflow,
        &format!(
            "expand: the number of elements of shape [{}, 4] overflows",
            1u64 << 62
        ),
    );
    // Byte sizes: the element count fits, the bytes do not.
    let n = isize::MAX as usize / 4;
    fails(
        Tensor::zeros(&[n], DType::I64),
        ErrorKind::Overflow,
        &format!("zeros: {n} elements of int64 overflows"),
    );
    fails(
        Tensor::arange(0, big, 2, DType::I64),
        ErrorKind::Overflow,
        "arange: 4611686018427387904 elements of int64 overflows",
    );
    fails(
        Tensor::arange(0.0, 1e19, 0.5, DType::F64),
        ErrorKind::Overflow,
        "arange: the length of range 0 -> 10000000000000000000 by 0.5 overflows",
    );
    // Strides and extents.
    let m = isize::MAX;
    fails(
        x.as_strided(&[3], &[m], Some(0)),
        ErrorKind::Overflow,
        &format!("as_strided: the extent of sizes [3], strides [{m}], offset 0 overflows"),
    );
    fails(
        x.as_strided(&[3], &[isize::MIN], Some(0)),
        ErrorKind::Overflow,
        &format!(
            "as_strided: the extent of sizes [3], strides [{}], offset 0 overflows",
            isize::MIN
        ),
    );
    fails(
        x.as_strided(&[usize::MAX / 2, 4], &[1, 1], Some(0)),
        ErrorKind::Overflow,
        &format!(
            "as_strided: the number of elements of shape [{}, 4] overflows",
            usize::MAX / 2
        ),
    );
    fails(
        x.as_strided(&[1], &[1], Some(usize::MAX)),
        ErrorKind::Overflow,
        &format!("as_strided: storage offset {} overflows", usize::MAX),
    );
    fails(
        Layout::new(&[2, 2], &[m, m], 0),
        ErrorKind::Overflow,
        &format!("as_strided: the extent of sizes [2, 2], strides [{m}, {m}], offset 0 overflows"),
    );
    // An empty view may carry a huge stride; stepping it must not overflow silently.
    let huge = m / 2 + 1;
    let e = x.as_strided(&[0, 3], &[1, huge], Some(0)).unwrap();
    fails(
        e.slice(1, None, None, 2),
        ErrorKind::Overflow,
        &format!("slice: stride {huge} times step 2 overflows"),
    );
    let e = x.as_strided(&[0, 3], &[huge, 1], Some(0)).unwrap();
    fails(
        e.view_dtype(DType::U8),
        ErrorKind::Overflow,
        "view: stride overflows",
    );
    // Huge but representable steps select one element and are fine.
    assert_eq!(
        x.slice(0, None, None, i64::MAX)
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![0]
    );
    assert_eq!(
        x.slice(0, None, None, i64::MIN + 1)
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![23]
    );
}

// ---------------------------------------------------------------------------------------
// Writes: read-only storage, self-overlap, borrows
// ---------------------------------------------------------------------------------------

/// A tensor over foreign memory: a `Vec<i64>` that the storage owns (and so keeps alive).
fn foreign_i64(values: Vec<i64>, shape: &[usize], read_only: bool) -> Tensor {
    let mut v = values;
    let nbytes = v.len() * 8;
    let ptr = NonNull::new(v.as_mut_ptr().cast::<u8>()).unwrap();
    // SAFETY: `ptr` addresses the `Vec`'s heap buffer of `nbytes` initialised bytes, which
    // stays put when the `Vec` value is moved into the owner box; the storage keeps the
    // owner (and so the buffer) alive for as long as any view exists, and nothing else
    // touches the buffer.
    let storage = unsafe { Storage::from_foreign(ptr, nbytes, read_only, Box::new(v)) };
    Tensor::from_parts(storage, Layout::contiguous(shape).unwrap(), DType::I64).unwrap()
}

#[test]
fn read_only_storage_refuses_every_write() {
    let x = foreign_i64(vec![1, 2, 3, 4, 5, 6], &[2, 3], true);
    assert!(x.is_read_only());
    let v0 = x.version();
    let text =
        |op: &str| format!("{op}: cannot write to a read-only tensor (its storage is read-only)");
    fails(x.fill_(0), ErrorKind::ReadOnly, &text("fill_"));
    fails(x.zero_(), ErrorKind::ReadOnly, &text("fill_"));
    fails(x.t().unwrap().fill_(7), ErrorKind::ReadOnly, &text("fill_"));
    fails(
        x.copy_(&x.flip(&[1]).unwrap()),
        ErrorKind::ReadOnly,
        &text("copy_"),
    );
    fails(
        x.copy_(&Tensor::zeros(&[3], DType::F32).unwrap()),
        ErrorKind::ReadOnly,
        &text("copy_"),
    );
    fails(x.set(&[1, 2], 9), ErrorKind::ReadOnly, &text("set"));
    fails(
        x.write_slice::<i64>().map(|_| ()),
        ErrorKind::ReadOnly,
        &text("write_slice"),
    );
    let e = x.fill_(0).unwrap_err();
    assert!(matches!(e, Error::ReadOnly { op: "fill_" }));
    // Nothing changed, and reads still work.
    assert_eq!(x.version(), v0);
    assert_eq!(x.to_vec::<i64>().unwrap(), vec![1, 2, 3, 4, 5, 6]);
    assert_eq!(
        x.t().unwrap().to_vec::<i64>().unwrap(),
        vec![1, 4, 2, 5, 3, 6]
    );
    assert_eq!(&*x.read_slice::<i64>().unwrap(), &[1, 2, 3, 4, 5, 6]);
    assert_eq!(x.get::<i64>(&[1, 0]).unwrap(), 4);
    // A copy is writable.
    let c = x.contiguous_copy().unwrap();
    assert!(!c.is_read_only());
    c.fill_(0).unwrap();
    // The same memory wrapped writable takes writes.
    let w = foreign_i64(vec![1, 2, 3], &[3], false);
    w.flip(&[0]).unwrap().copy_(&w).unwrap();
    assert_eq!(w.to_vec::<i64>().unwrap(), vec![3, 2, 1]);
}

#[test]
fn self_overlapping_writes_are_refused() {
    let x = ar(6);
    let v0 = x.version();
    let msg = |op: &str| format!("{op}: {SELF_OVERLAP}");
    // expand: a stride-0 dim of size > 1.
    let e = x.expand(&[2, 6]).unwrap();
    let err = fails(e.fill_(1), ErrorKind::Overlap, &msg("fill_"));
    assert!(matches!(err, Error::SelfOverlap { op: "fill_" }));
    fails(e.copy_(&ar(6)), ErrorKind::Overlap, &msg("copy_"));
    let one = x.narrow(0, 0, 1).unwrap().expand(&[4]).unwrap();
    fails(one.fill_(1), ErrorKind::Overlap, &msg("fill_"));
    // unfold(0, 2, 1): windows share elements (PyTorch silently corrupts here).
    let u = x.unfold(0, 2, 1).unwrap();
    fails(u.fill_(1), ErrorKind::Overlap, &msg("fill_"));
    fails(u.zero_(), ErrorKind::Overlap, &msg("fill_"));
    fails(
        u.copy_(&Tensor::zeros(&[5, 2], DType::I64).unwrap()),
        ErrorKind::Overlap,
        &msg("copy_"),
    );
    // An overlap only an exact search finds: strides 2 and 3 over (4, 3) hit 6 twice.
    let big = ar(16);
    let tricky = big.as_strided(&[4, 3], &[2, 3], Some(0)).unwrap();
    fails(tricky.fill_(1), ErrorKind::Overlap, &msg("fill_"));
    // ... and the same strides over (3, 3) do not overlap: the write goes through.
    let fine = big.as_strided(&[3, 3], &[2, 3], Some(0)).unwrap();
    fine.fill_(-1).unwrap();
    assert_eq!(
        big.to_vec::<i64>().unwrap(),
        vec![-1, 1, -1, -1, -1, -1, -1, -1, -1, 9, -1, 11, 12, 13, 14, 15]
    );
    // Non-overlapping unfold (step == size) is writable.
    x.unfold(0, 2, 2).unwrap().fill_(3).unwrap();
    // Nothing was written by the refused ops.
    assert_eq!(x.to_vec::<i64>().unwrap(), vec![3; 6]);
    assert_eq!(x.version(), v0 + 1);
}

#[test]
fn same_thread_borrow_conflicts_are_errors() {
    let x = Tensor::zeros(&[3, 4], DType::F32).unwrap();
    let other_view = x.t().unwrap();
    let v0 = x.version();
    {
        let guard = x.read_slice::<f32>().unwrap();
        let mutably = |op: &str| {
            format!("{op}: storage is already borrowed immutably by this thread; cannot borrow it mutably")
        };
        let e = fails(other_view.fill_(1.0), ErrorKind::Borrow, &mutably("fill_"));
        assert!(matches!(
            e,
            Error::Borrow {
                op: "fill_",
                held: "immutably",
                wanted: "mutably"
            }
        ));
        fails(
            other_view.set(&[0, 0], 1.0),
            ErrorKind::Borrow,
            &mutably("set"),
        );
        fails(
            other_view.copy_(&Tensor::ones(&[4, 3], DType::F32).unwrap()),
            ErrorKind::Borrow,
            &mutably("copy_"),
        );
        fails(
            x.write_slice::<f32>().map(|_| ()),
            ErrorKind::Borrow,
            &mutably("write_slice"),
        );
        // Reading alongside a read is fine.
        assert_eq!(other_view.to_vec::<f32>().unwrap(), vec![0.0; 12]);
        assert_eq!(x.read_slice::<f32>().unwrap().len(), 12);
        // Copying *from* the read-borrowed storage into another one is fine too.
        let dst = Tensor::ones(&[4, 3], DType::F32).unwrap();
        dst.copy_(&other_view).unwrap();
        assert_eq!(guard.len(), 12);
    }
    {
        let mut w = x.write_slice::<f32>().unwrap();
        w[0] = 5.0;
        let immutably = |op: &str| {
            format!("{op}: storage is already borrowed mutably by this thread; cannot borrow it immutably")
        };
        fails(
            other_view.to_vec::<f32>(),
            ErrorKind::Borrow,
            &immutably("to_vec"),
        );
        fails(
            other_view.get::<f32>(&[0, 0]),
            ErrorKind::Borrow,
            &immutably("get"),
        );
        fails(
            other_view.contiguous(),
            ErrorKind::Borrow,
            &immutably("copy_"),
        );
        let dst = Tensor::zeros(&[4, 3], DType::F32).unwrap();
        fails(
            dst.copy_(&other_view),
            ErrorKind::Borrow,
            &immutably("copy_"),
        );
        fails(
            other_view.fill_(2.0),
            ErrorKind::Borrow,
            "fill_: storage is already borrowed mutably by this thread; cannot borrow it mutably",
        );
    }
    // The guards are gone: everything works again; only write_slice and nothing refused
    // bumped the version.
    assert_eq!(x.version(), v0 + 1);
    assert_eq!(other_view.get::<f32>(&[0, 0]).unwrap(), 5.0);
    other_view.fill_(1.0).unwrap();
    assert_eq!(x.to_vec::<f32>().unwrap(), vec![1.0; 12]);
}

// ---------------------------------------------------------------------------------------
// Element access and dtypes
// ---------------------------------------------------------------------------------------

#[test]
fn dtype_mismatches() {
    let x = ar(6).view(&[2, 3]).unwrap();
    fails(
        x.to_vec::<f32>(),
        ErrorKind::DType,
        "to_vec: expected a tensor of dtype float32 but this tensor is int64",
    );
    fails(
        x.get::<i32>(&[0, 0]),
        ErrorKind::DType,
        "get: expected a tensor of dtype int32 but this tensor is int64",
    );
    fails(
        x.read_slice::<f64>().map(|_| ()),
        ErrorKind::DType,
        "read_slice: expected a tensor of dtype float64 but this tensor is int64",
    );
    fails(
        x.write_slice::<u64>().map(|_| ()),
        ErrorKind::DType,
        "write_slice: expected a tensor of dtype uint64 but this tensor is int64",
    );
    let b = Tensor::from_vec(vec![true, false], &[2]).unwrap();
    fails(
        b.read_slice::<bool>().map(|_| ()),
        ErrorKind::DType,
        "read_slice: bool tensors have no typed slice access (their bytes need not be 0 or 1); use to_vec",
    );
    assert_eq!(b.to_vec::<bool>().unwrap(), vec![true, false]);
    fails(
        Tensor::rand(&[2], DType::I64, 0),
        ErrorKind::DType,
        "rand: \"rand\" not implemented for 'Long'",
    );
    fails(
        Tensor::randn(&[2], DType::Bool, 0),
        ErrorKind::DType,
        "randn: \"randn\" not implemented for 'Bool'",
    );
}

#[test]
fn element_access_errors() {
    let x = ar(6).view(&[2, 3]).unwrap();
    fails(
        x.item(),
        ErrorKind::Value,
        "item: a Tensor with 6 elements cannot be converted to Scalar",
    );
    fails(
        ar(0).item(),
        ErrorKind::Value,
        "item: a Tensor with 0 elements cannot be converted to Scalar",
    );
    assert_eq!(
        x.narrow(1, 2, 1)
            .unwrap()
            .narrow(0, 1, 1)
            .unwrap()
            .item()
            .unwrap(),
        strata::Scalar::Int(5)
    );
    fails(
        x.get::<i64>(&[1]),
        ErrorKind::Index,
        "get: expected 2 indices for a tensor of shape [2, 3], got 1",
    );
    fails(
        x.get::<i64>(&[0, 3]),
        ErrorKind::Index,
        "get(): index 3 out of range for tensor of size [2, 3] at dimension 1",
    );
    fails(
        x.t().unwrap().get::<i64>(&[3, 0]),
        ErrorKind::Index,
        "get(): index 3 out of range for tensor of size [3, 2] at dimension 0",
    );
    fails_starting(x.get_scalar(&[2, 0]), ErrorKind::Index, "get(): index 2");
    let v0 = x.version();
    fails_starting(x.set(&[0, 0, 0], 1), ErrorKind::Index, "");
    fails_starting(x.set(&[2, 0], 1), ErrorKind::Index, "");
    assert_eq!(x.version(), v0);
    fails(
        Tensor::from_vec(vec![1.0f32; 5], &[2, 3]),
        ErrorKind::Shape,
        "from_slice: shape [2, 3] needs 6 elements but 5 were given",
    );
    let nc = x.t().unwrap();
    fails(
        nc.read_slice::<i64>().map(|_| ()),
        ErrorKind::Shape,
        "read_slice: needs a contiguous tensor, got shape [3, 2] with strides [1, 3]; call contiguous() first",
    );
    fails(
        nc.write_slice::<i64>().map(|_| ()),
        ErrorKind::Shape,
        "write_slice: needs a contiguous tensor, got shape [3, 2] with strides [1, 3]; call contiguous() first",
    );
    assert_eq!(x.version(), v0);
}

#[test]
fn set_index_errors_name_set() {
    let x = ar(6).view(&[2, 3]).unwrap();
    fails(
        x.set(&[2, 0], 1),
        ErrorKind::Index,
        "set(): index 2 out of range for tensor of size [2, 3] at dimension 0",
    );
}

#[test]
fn misaligned_foreign_memory() {
    let mut bytes = vec![0u8; 17];
    let p = bytes.as_mut_ptr().wrapping_add(1);
    assert_ne!(p as usize % 4, 0);
    let ptr = NonNull::new(p).unwrap();
    // SAFETY: `ptr` is one byte into the `Vec`'s 17-byte heap buffer, so 16 bytes from it
    // are valid and initialised; the buffer does not move when the `Vec` is boxed as the
    // owner, which the storage keeps alive while any view exists.
    let storage = unsafe { Storage::from_foreign(ptr, 16, false, Box::new(bytes)) };
    let t = Tensor::from_parts(storage, Layout::contiguous(&[4]).unwrap(), DType::I32).unwrap();
    fails_starting(
        t.read_slice::<i32>().map(|_| ()),
        ErrorKind::Value,
        "read_slice: the data at 0x",
    );
    let e = t.write_slice::<i32>().map(|_| ()).unwrap_err();
    assert!(e.to_string().ends_with("is not aligned for int32"), "{e}");
    // Element-wise access does not need alignment.
    t.copy_(&Tensor::from_vec(vec![1i32, -2, 3, -4], &[4]).unwrap())
        .unwrap();
    assert_eq!(t.to_vec::<i32>().unwrap(), vec![1, -2, 3, -4]);
    assert_eq!(t.flip(&[0]).unwrap().get::<i32>(&[0]).unwrap(), -4);
}

// ---------------------------------------------------------------------------------------
// Constructors, copy_ and broadcasting
// ---------------------------------------------------------------------------------------

#[test]
fn constructor_errors() {
    fails(
        Tensor::arange(0, 5, 0, DType::I64),
        ErrorKind::Value,
        "arange: step must be nonzero",
    );
    fails(
        Tensor::arange(0, 5, -1, DType::I64),
        ErrorKind::Value,
        "arange: upper bound and larger bound inconsistent with step sign (start 0, end 5, step -1)",
    );
    fails(
        Tensor::arange(0.0, f64::INFINITY, 1.0, DType::F32),
        ErrorKind::Value,
        "arange: unsupported range: 0 -> inf",
    );
    fails(
        Tensor::arange(0.0, 1.0, f64::NAN, DType::F32),
        ErrorKind::Value,
        "arange: step must be nonzero",
    );
}

#[test]
fn copy_shape_errors() {
    let x = Tensor::zeros(&[2, 3], DType::F32).unwrap();
    let v0 = x.version();
    fails(
        x.copy_(&Tensor::zeros(&[2, 4], DType::F32).unwrap()),
        ErrorKind::Shape,
        "copy_: The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1",
    );
    fails(
        x.narrow(0, 0, 1)
            .unwrap()
            .squeeze()
            .unwrap()
            .copy_(&Tensor::zeros(&[2, 3], DType::F32).unwrap()),
        ErrorKind::Shape,
        "copy_: output with shape [3] doesn't match the broadcast shape [2, 3]",
    );
    assert_eq!(x.version(), v0);
    fails(
        broadcast_shapes("add", &[2, 3], &[2, 4]),
        ErrorKind::Shape,
        "add: The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1",
    );
}

#[test]
fn storage_replace_backing_errors() {
    let x = ar(4);
    let s = x.storage().clone();
    // Held borrow on this thread.
    {
        let _g = x.read_slice::<i64>().unwrap();
        fails(
            s.replace_backing("share_memory_", |b| {
                Backing::allocate(std::sync::Arc::new(strata::CpuAllocator), b.len())
            }),
            ErrorKind::Borrow,
            "share_memory_: storage is already borrowed immutably by this thread; cannot borrow it mutably",
        );
    }
    // A live raw export.
    {
        let _pin = s.pin_export();
        fails_starting(
            s.replace_backing("share_memory_", |_| Ok(Backing::empty())),
            ErrorKind::Value,
            "share_memory_: the storage's memory is still exported raw (1 live export(s)",
        );
    }
    // A backing of the wrong length.
    fails(
        s.replace_backing("share_memory_", |_| Ok(Backing::empty())),
        ErrorKind::Shape,
        "share_memory_: new backing has 0 bytes but the storage has 32",
    );
    // The data survived every refusal.
    assert_eq!(x.to_vec::<i64>().unwrap(), vec![0, 1, 2, 3]);
}

/// A view op that adds a dim to a tensor of `MAX_NDIM` (64) dims is refused, whichever
/// path builds it (an in-place edit, a derived layout, a basic index), not only
/// `as_strided`.
#[test]
fn views_beyond_the_dim_limit() {
    let t = Tensor::zeros(&[1; 64], DType::F32).unwrap();
    let msg = |op: &str| format!("{op}: tensors have at most 64 dims, got 65");
    fails(t.unsqueeze(0), ErrorKind::Shape, &msg("unsqueeze"));
    fails(t.view(&[1; 65]), ErrorKind::Shape, &msg("view"));
    fails(t.reshape(&[1; 65]), ErrorKind::Shape, &msg("reshape"));
    fails(t.unflatten(0, &[1, 1]), ErrorKind::Shape, &msg("unflatten"));
    fails(
        t.index(&[TensorIndex::NewAxis]),
        ErrorKind::Shape,
        &msg("index"),
    );
    fails(t.expand(&[1; 65]), ErrorKind::Shape, &msg("expand"));
    // At the limit itself every one of them is fine.
    let s = t.squeeze_dims(&[0]).unwrap();
    assert_eq!(s.unsqueeze(0).unwrap().ndim(), 64);
    assert_eq!(s.view(&[1; 64]).unwrap().ndim(), 64);
}
