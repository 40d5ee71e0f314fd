//! Hostile property tests: every public view op and constructor of the Rust API driven
//! with extreme but well-typed values — 0-size dims beside 2^40-size ones, offsets and
//! strides near ±2^62 / ±2^63, zero and negative strides, `isize::MIN`, `usize::MAX`.
//!
//! What is asserted:
//! - never a panic (proptest reports a panic as a failure, and this suite runs in a debug
//!   build, where an unchecked overflow panics): every call is `Ok` or `Err`;
//! - every `Ok` tensor satisfies the layout invariants, checked against an independent
//!   index-arithmetic model in `i128`: `numel` is the product of the shape (0 when a dim
//!   is 0), every element's storage index lies inside the storage, `index_range` and
//!   `data_ptr` agree with the model, and, for small tensors, the values read (`to_vec`,
//!   `contiguous`, `sum`, `+ 1`) are the storage elements the model names.
//!
//! Nothing here allocates more than a few kilobytes: huge shapes appear only in tensors
//! without elements, in stride-0 views, or in calls that must refuse them.

mod common;

use common::view_ops::{run_op, Op};
use proptest::prelude::*;
use strata::layout::overlap::Overlap;
use strata::{s, DType, Scalar, Tensor, TensorIndex};

/// Elements of the base storage (an `arange`, so a value names its storage index).
const BASE: usize = 64;
/// Tensors up to this many elements are materialised and compared value by value.
const SMALL: usize = 512;

const P40: usize = 1 << 40;
const P62: usize = 1 << 62;

fn sizes() -> impl Strategy<Value = usize> {
    prop_oneof![
        4 => 0usize..4,
        1 => Just(7usize),
        1 => Just(1usize << 31),
        2 => Just(P40),
        1 => Just(P62),
        1 => Just(isize::MAX as usize),
        1 => Just(usize::MAX),
    ]
}

fn strides() -> impl Strategy<Value = isize> {
    prop_oneof![
        4 => -3isize..4,
        1 => Just(1isize << 40),
        1 => Just(-(1isize << 40)),
        1 => Just(1isize << 62),
        1 => Just(-(1isize << 62)),
        1 => Just(isize::MAX),
        1 => Just(isize::MIN),
        1 => Just(isize::MIN + 1),
    ]
}

fn ints() -> impl Strategy<Value = i64> {
    prop_oneof![
        4 => -4i64..5,
        1 => Just(1i64 << 40),
        1 => Just(-(1i64 << 40)),
        1 => Just(1i64 << 62),
        1 => Just(-(1i64 << 62)),
        1 => Just(i64::MAX),
        1 => Just(i64::MIN),
        1 => Just(i64::MAX - 1),
    ]
}

fn offsets() -> impl Strategy<Value = usize> {
    prop_oneof![
        4 => 0usize..BASE,
        1 => Just(P62),
        1 => Just(isize::MAX as usize),
        1 => Just(usize::MAX),
    ]
}

fn opt_int() -> impl Strategy<Value = Option<i64>> {
    prop_oneof![1 => Just(None), 4 => ints().prop_map(Some)]
}

/// One entry of an `index` key.
fn idx() -> impl Strategy<Value = TensorIndex> {
    prop_oneof![
        3 => ints().prop_map(TensorIndex::Int),
        3 => (opt_int(), opt_int(), ints()).prop_map(|(a, b, c)| TensorIndex::slice(a, b, c)),
        1 => Just(TensorIndex::NewAxis),
        1 => Just(TensorIndex::Ellipsis),
    ]
}

/// A view op with its (extreme) arguments.
fn op() -> impl Strategy<Value = Op> {
    let dims = || prop::collection::vec(ints(), 0..4);
    prop_oneof![
        prop::collection::vec(ints(), 0..4).prop_map(Op::View),
        prop::collection::vec(ints(), 0..4).prop_map(Op::Reshape),
        (ints(), ints()).prop_map(|(a, b)| Op::Flatten(a, b)),
        (ints(), dims()).prop_map(|(a, b)| Op::Unflatten(a, b)),
        (ints(), ints()).prop_map(|(a, b)| Op::Transpose(a, b)),
        Just(Op::T),
        Just(Op::MT),
        dims().prop_map(Op::Permute),
        (dims(), dims()).prop_map(|(a, b)| Op::Movedim(a, b)),
        (ints(), ints(), ints()).prop_map(|(a, b, c)| Op::Narrow(a, b, c)),
        (ints(), ints()).prop_map(|(a, b)| Op::Select(a, b)),
        (ints(), opt_int(), opt_int(), ints()).prop_map(|(a, b, c, d)| Op::Slice(a, b, c, d)),
        dims().prop_map(Op::Flip),
        prop::collection::vec(ints(), 0..5).prop_map(Op::Expand),
        prop::collection::vec(sizes(), 0..5).prop_map(Op::BroadcastTo),
        Just(Op::Squeeze),
        dims().prop_map(Op::SqueezeDims),
        ints().prop_map(Op::Unsqueeze),
        (
            prop::collection::vec(sizes(), 0..4),
            prop::collection::vec(strides(), 0..4),
            prop::option::of(offsets())
        )
            .prop_map(|(a, b, c)| Op::AsStrided(a, b, c)),
        (ints(), sizes(), sizes()).prop_map(|(a, b, c)| Op::Unfold(a, b, c)),
        (ints(), ints(), ints()).prop_map(|(a, b, c)| Op::Diagonal(a, b, c)),
        (sizes(), ints()).prop_map(|(a, b)| Op::Split(a, b, 0)),
        (prop::collection::vec(sizes(), 0..4), ints())
            .prop_map(|(a, b)| Op::SplitWithSizes(a, b, 0)),
        (sizes(), ints()).prop_map(|(a, b)| Op::Chunk(a, b, 0)),
        ints().prop_map(|d| Op::Unbind(d, 0)),
        prop_oneof![Just(DType::U8), Just(DType::F64), Just(DType::I16)].prop_map(Op::ViewDtype),
        prop::collection::vec(idx(), 0..5).prop_map(Op::Index),
    ]
}

/// Applies `op` ([`run_op`]), refusing (as a test-side skip) splits into more pieces than
/// are quick to check; ops that give several pieces continue with the first and check all.
fn apply(t: &Tensor, op: &Op) -> strata::Result<Vec<Tensor>> {
    match op {
        // A split into more than a few thousand pieces is legal but slow to check.
        Op::Split(s, d, _) => {
            guarded_pieces(t, *d, |n| *s == 0 || n / s.max(&1) < 4096).and_then(|()| run_op(t, op))
        }
        Op::Chunk(c, d, p) => run_op(t, &Op::Chunk((*c).min(4096), *d, *p)),
        Op::Unbind(d, _) => guarded_pieces(t, *d, |n| n < 4096).and_then(|()| run_op(t, op)),
        _ => run_op(t, op),
    }
}

/// Refuses (as a test-side skip, with an `Err`) a split whose piece count is huge.
fn guarded_pieces(t: &Tensor, d: i64, ok: impl Fn(usize) -> bool) -> strata::Result<()> {
    match t.size(d) {
        Ok(n) if !ok(n) => Err(strata::Error::Value {
            op: "test",
            msg: "too many pieces to check".into(),
        }),
        _ => Ok(()),
    }
}

/// The model's element count: 0 when a dim is 0, else the exact product.
fn model_numel(shape: &[usize]) -> u128 {
    if shape.contains(&0) {
        return 0;
    }
    shape
        .iter()
        .try_fold(1u128, |a, &n| a.checked_mul(n as u128))
        .unwrap_or(u128::MAX)
}

/// Storage index of row-major element `flat`, by index arithmetic in `i128`.
fn model_index(t: &Tensor, mut flat: u128) -> i128 {
    let mut pos = t.offset() as i128;
    for (&n, &s) in t.shape().iter().zip(t.strides()).rev() {
        let i = flat % n as u128;
        flat /= n as u128;
        pos += i as i128 * s as i128;
    }
    pos
}

/// What the values of a checked tensor are.
#[derive(Debug, Clone, Copy)]
enum Vals {
    /// Each value is its storage index (views of the `arange` base).
    Index,
    /// Every value is this one.
    Const(i64),
    /// Not checked (`empty`).
    Any,
}

/// Checks a tensor the API returned against the model.
fn check(t: &Tensor, vals: Vals) -> Result<(), TestCaseError> {
    let shape = t.shape();
    prop_assert_eq!(shape.len(), t.strides().len());
    prop_assert_eq!(shape.len(), t.ndim());
    prop_assert!(shape.iter().all(|&n| n <= isize::MAX as usize), "{shape:?}");
    let numel = model_numel(shape);
    prop_assert!(numel <= isize::MAX as u128, "numel of {shape:?}");
    prop_assert_eq!(t.numel() as u128, numel);
    let item = t.dtype().itemsize();
    let elems = (t.storage().nbytes() / item) as i128;
    // Every layout query answers without panicking.
    let _ = (t.is_contiguous(), t.is_f_contiguous());
    let _ = t.layout().is_non_overlapping_and_dense();
    let overlap = t.layout().internal_overlap();
    let base = t.storage().data_ptr() as usize;
    let ptr = t.data_ptr();
    prop_assert!(
        ptr >= base && ptr <= base + t.storage().nbytes(),
        "data_ptr {ptr:#x} outside storage {base:#x}+{}",
        t.storage().nbytes()
    );
    if numel == 0 {
        prop_assert_eq!(t.layout().index_range(), None);
        prop_assert_eq!(overlap, Overlap::No);
        return Ok(());
    }
    prop_assert_eq!(ptr, base + t.offset() * item);
    // Extent by the model: lowest and highest storage index of any element.
    let (mut lo, mut hi) = (t.offset() as i128, t.offset() as i128);
    for (&n, &s) in shape.iter().zip(t.strides()) {
        let span = (n as i128 - 1) * s as i128;
        if span < 0 {
            lo += span;
        } else {
            hi += span;
        }
    }
    prop_assert!(
        lo >= 0 && hi < elems,
        "extent [{lo}, {hi}] of {elems}: {t:?}"
    );
    prop_assert_eq!(t.layout().index_range(), Some((lo as usize, hi as usize)));
    if numel <= SMALL as u128 {
        let want: Vec<i128> = (0..numel).map(|f| model_index(t, f)).collect();
        prop_assert!(want.iter().all(|&i| (lo..=hi).contains(&i)));
        if overlap == Overlap::No {
            let mut seen = want.clone();
            seen.sort_unstable();
            seen.dedup();
            prop_assert_eq!(seen.len(), want.len(), "overlap said No");
        }
        if t.dtype() == DType::I64 {
            let got = t
                .to_vec::<i64>()
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let want_v: Vec<i64> = match vals {
                Vals::Index => want.iter().map(|&i| i as i64).collect(),
                Vals::Const(v) => vec![v; want.len()],
                Vals::Any => got.clone(),
            };
            prop_assert_eq!(&got, &want_v);
            let c = t
                .contiguous()
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert!(c.is_contiguous());
            prop_assert_eq!(c.to_vec::<i64>().unwrap(), want_v.clone());
            let s = t
                .sum(&[], false)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let total = want_v.iter().fold(0i64, |a, &v| a.wrapping_add(v));
            prop_assert_eq!(s.to_vec::<i64>().unwrap(), vec![total]);
            let p = t
                .add(1i64)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let plus: Vec<i64> = want_v.iter().map(|v| v.wrapping_add(1)).collect();
            prop_assert_eq!(p.to_vec::<i64>().unwrap(), plus);
        } else {
            // Other dtypes (view_dtype) are only read.
            t.contiguous()
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
        }
    }
    Ok(())
}

/// Operations on a tensor without elements (any shape) that must all succeed.
fn check_empty_ops(t: &Tensor) -> Result<(), TestCaseError> {
    let check = |t: &Tensor| check(t, Vals::Const(0));
    if t.numel() != 0 || t.dtype() != DType::I64 {
        return Ok(());
    }
    let fail = |e: strata::Error| TestCaseError::fail(e.to_string());
    prop_assert_eq!(t.to_vec::<i64>().map_err(fail)?.len(), 0);
    let c = t.contiguous().map_err(fail)?;
    prop_assert_eq!(c.shape(), t.shape());
    check(&c)?;
    let c = t.clone_data().map_err(fail)?;
    prop_assert_eq!(c.shape(), t.shape());
    check(&c)?;
    let p = t.add(1i64).map_err(fail)?;
    prop_assert_eq!(p.shape(), t.shape());
    check(&p)?;
    let s = t.sum(&[], false).map_err(fail)?;
    prop_assert_eq!(s.to_vec::<i64>().unwrap(), vec![0]);
    // A reduction over one dim: empty result unless that dim holds all the zeros and the
    // rest multiply past `isize` (then refusing with an error is right).
    // (Run only where the result is small or cannot be allocated at all.)
    let rest = if t.ndim() > 0 {
        model_numel(&t.shape()[1..])
    } else {
        0
    };
    if t.ndim() > 0 && (rest <= SMALL as u128 || rest.saturating_mul(8) > isize::MAX as u128) {
        if let Ok(r) = t.sum(&[0], false) {
            prop_assert_eq!(r.shape(), &t.shape()[1..]);
            check(&r)?;
        }
    }
    Ok(())
}

/// The base: an `arange` of [`BASE`] i64 elements.
fn base() -> Tensor {
    Tensor::arange(0i64, BASE as i64, 1i64, DType::I64).unwrap()
}

/// A start tensor: either a view of the base (possibly empty with extreme metadata), or a
/// fresh empty tensor of an extreme shape.
#[derive(Debug, Clone)]
enum Start {
    Strided(Vec<usize>, Vec<isize>, usize),
    Zeros(Vec<usize>),
}

fn start() -> impl Strategy<Value = Start> {
    prop_oneof![
        (
            prop::collection::vec(sizes(), 0..4),
            prop::collection::vec(strides(), 0..4),
            offsets()
        )
            .prop_map(|(a, mut b, c)| {
                b.resize(a.len(), 1);
                Start::Strided(a, b, c)
            }),
        // Shapes that are empty or whose product overflows: never a real allocation.
        (prop::collection::vec(sizes(), 1..4), 0usize..4).prop_map(|(mut a, z)| {
            let at = z.min(a.len());
            a.insert(at, 0);
            Start::Zeros(a)
        }),
    ]
}

fn make(s: &Start) -> strata::Result<Tensor> {
    match s {
        Start::Strided(sh, st, o) => base().as_strided(sh, st, Some(*o)),
        Start::Zeros(sh) => Tensor::zeros(sh, DType::I64),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, failure_persistence: None, ..ProptestConfig::default() })]

    /// Chains of view ops from an extreme start: Ok or Err, never a panic; every Ok obeys
    /// the model.
    #[test]
    fn view_chains(s in start(), ops in prop::collection::vec(op(), 1..5)) {
        let Ok(mut t) = make(&s) else { return Ok(()); };
        let mut vals = match s {
            Start::Strided(..) => Vals::Index,
            Start::Zeros(_) => Vals::Const(0),
        };
        check(&t, vals)?;
        check_empty_ops(&t)?;
        for op in &ops {
            match apply(&t, op) {
                Ok(pieces) => {
                    // reshape/flatten copy when the strides cannot express the new shape
                    // (e.g. an overlapping as_strided): the copy holds `t`'s values in
                    // row-major order, no longer their storage indices.
                    if let Some(p) = pieces.iter().find(|p| !p.same_storage(&t)) {
                        if t.numel() <= SMALL && t.dtype() == DType::I64 {
                            prop_assert_eq!(
                                p.to_vec::<i64>().unwrap(),
                                t.to_vec::<i64>().unwrap(),
                                "a copying {:?} changed the values", op
                            );
                        }
                        if let Vals::Index = vals {
                            vals = Vals::Any;
                        }
                    }
                    for p in &pieces {
                        check(p, vals)?;
                    }
                    match pieces.into_iter().next() {
                        Some(p) => t = p,
                        None => break,
                    }
                    check_empty_ops(&t)?;
                }
                Err(e) => {
                    // An error names its op and says something.
                    prop_assert!(!e.to_string().is_empty());
                }
            }
        }
    }

    /// Constructors with extreme shapes and ranges. Shapes without a 0 are filtered to
    /// those that overflow (must be refused) or are small.
    #[test]
    fn constructors(shape in prop::collection::vec(sizes(), 0..4), a in ints(), b in ints(), c in ints()) {
        let n = model_numel(&shape);
        let huge_alloc = n > SMALL as u128 && n.saturating_mul(8) <= isize::MAX as u128;
        if !huge_alloc {
            for (r, vals) in [
                (Tensor::zeros(&shape, DType::I64), Vals::Const(0)),
                (Tensor::empty(&shape, DType::I64), Vals::Any),
                (Tensor::ones(&shape, DType::I64), Vals::Const(1)),
                (Tensor::full(&shape, Scalar::Int(a), DType::I64), Vals::Const(a)),
            ] {
                match r {
                    Ok(t) => {
                        prop_assert_eq!(t.shape(), shape.as_slice());
                        prop_assert!(t.is_contiguous());
                        check(&t, vals)?;
                        check_empty_ops(&t)?;
                    }
                    Err(e) => {
                        // Only an element count past `isize` may be refused.
                        prop_assert!(
                            n.saturating_mul(8) > isize::MAX as u128
                                || shape.iter().any(|&d| d > isize::MAX as usize),
                            "{e}"
                        );
                    }
                }
            }
        }
        // arange: run only when the length is small or does not fit at all.
        if c != 0 {
            let len = ((b as i128 - a as i128) + c as i128 - (c as i128).signum()) / c as i128;
            if len <= SMALL as i128 || len > isize::MAX as i128 {
                if let Ok(t) = Tensor::arange(a, b, c, DType::I64) {
                    prop_assert_eq!(t.numel() as i128, len.max(0));
                    check(&t, Vals::Any)?;
                    let got = t.to_vec::<i64>().unwrap();
                    let want: Vec<i64> = (0..len.max(0)).map(|i| (a as i128 + i * c as i128) as i64).collect();
                    prop_assert_eq!(got, want);
                }
            }
        } else {
            prop_assert!(Tensor::arange(a, b, c, DType::I64).is_err());
        }
    }
}

// ---------------------------------------------------------------------------------------
// Regression tests: the listed cases, against PyTorch's semantics
// ---------------------------------------------------------------------------------------

#[test]
fn empty_beside_huge_dims_is_accepted() {
    // PyTorch: a 0 dim makes 0 elements, whatever the other sizes; contiguous strides are
    // products of max(size, 1), and one that does not fit `isize` saturates.
    for shape in [[0, P40, P40], [P40, P40, 0], [P40, 0, P40]] {
        let t = Tensor::zeros(&shape, DType::F32).unwrap();
        assert_eq!(t.numel(), 0);
        assert!(t.is_contiguous());
        check(&t, Vals::Any).unwrap();
        check_empty_ops(&t.to_dtype(DType::I64).unwrap()).unwrap();
        let big = shape.iter().position(|&n| n == P40).unwrap() as i64;
        for v in [
            t.transpose(-1, -2).err(),
            t.mt().err(),
            t.permute(&[2, 0, 1]).err(),
            t.flip(&[0, 1, 2]).err(),
            t.transpose(0, 2).err(),
            t.movedim(&[0], &[2]).err(),
            t.unsqueeze(1).err(),
            t.narrow(big, 1, 5).err(),
            t.select(big, (P40 - 1) as i64).err(),
            t.slice(big, Some(1), None, 3).err(),
            t.slice(big, None, None, -(1 << 40)).err(),
            t.expand(&[2, -1, -1, -1]).err(),
            t.diagonal(0, 0, 1).err(),
            t.unfold(big, 2, 3).err(),
            t.index(&s![..;-1, .., 1..]).err(),
        ] {
            assert!(v.is_none(), "{v:?} for {shape:?}");
        }
    }
    let t = Tensor::zeros(&[0, P40, P40], DType::F32).unwrap();
    assert_eq!(t.strides(), &[isize::MAX, P40 as isize, 1]);
    assert_eq!(
        Tensor::zeros(&[P40, P40, 0], DType::F32).unwrap().strides(),
        &[P40 as isize, 1, 1]
    );
    let f = t.flip(&[1]).unwrap();
    assert_eq!(f.strides(), &[isize::MAX, -(P40 as isize), 1]);
    assert_eq!(f.shape(), t.shape());
    // A flatten whose merged size passes `isize` is refused; one that keeps the 0 is not.
    assert!(Tensor::zeros(&[P40, P40, 0], DType::F32)
        .unwrap()
        .flatten(0, 1)
        .is_err());
    assert_eq!(t.flatten(0, 1).unwrap().shape(), &[0, P40]);
    assert_eq!(
        t.view(&[P40 as i64, 0, P40 as i64]).unwrap().shape(),
        &[P40, 0, P40]
    );
    assert_eq!(
        t.reshape(&[-1, 0]).unwrap_err().kind(),
        strata::ErrorKind::Shape
    );
    // Summing away the 0 dim leaves 2^80 elements: refused, not wrapped.
    assert_eq!(
        t.sum(&[0], false).unwrap_err().kind(),
        strata::ErrorKind::Overflow
    );
    assert_eq!(t.sum(&[1, 2], false).unwrap().shape(), &[0]);
    // The density test multiplies sizes in stride order: past `isize` before it meets the
    // 0 (it used to overflow); the 0 dim ends it, as in PyTorch.
    let z = Tensor::zeros(&[P40, P40, 0], DType::F32).unwrap();
    assert!(z.layout().is_non_overlapping_and_dense());
    assert_eq!(z.layout().internal_overlap(), Overlap::No);
    // A size past `isize` is refused even beside a 0 (PyTorch's sizes are int64).
    assert!(Tensor::zeros(&[0, usize::MAX], DType::F32).is_err());
}

#[test]
fn narrow_start_plus_length_overflow() {
    let t = Tensor::zeros(&[4], DType::F32).unwrap();
    let e = t.narrow(0, 1, i64::MAX).unwrap_err();
    assert_eq!(
        e.to_string(),
        "narrow: start (1) + length (9223372036854775807) exceeds dimension size (4)."
    );
    assert!(t.narrow(0, -1, i64::MAX).is_err());
    assert_eq!(t.narrow(0, 4, 0).unwrap().shape(), &[0]);
}

#[test]
fn empty_view_with_huge_offset() {
    // An empty view is not bounded by its storage (as in PyTorch); its address is
    // clamped to the end of the storage, never wrapped.
    let b = Tensor::zeros(&[4], DType::F32).unwrap();
    let t = b.as_strided(&[0], &[1], Some(P62)).unwrap();
    assert_eq!(t.offset(), P62);
    let base = b.storage().data_ptr() as usize;
    assert_eq!(t.data_ptr(), base + 16);
    assert_eq!(t.byte_offset(), 16);
    let t = b.as_strided(&[0], &[1], Some(2)).unwrap();
    assert_eq!(t.data_ptr(), base + 8);
    assert!(b.as_strided(&[0], &[1], Some(usize::MAX)).is_err());
    // Exports of such a view do not wrap either.
    let e = b
        .as_strided(
            &[0, 3],
            &[isize::MIN, isize::MAX],
            Some(isize::MAX as usize),
        )
        .unwrap();
    check(&e, Vals::Any).unwrap();
    check_empty_ops(&e.to_dtype(DType::I64).unwrap()).unwrap();
}

#[test]
fn size_one_dims_with_extreme_strides() {
    let b = base();
    let t = b
        .as_strided(&[1, 2, 1], &[isize::MIN, 1, isize::MAX], Some(5))
        .unwrap();
    check(&t, Vals::Index).unwrap();
    let f = t.flip(&[0, 1, 2]).unwrap();
    check(&f, Vals::Index).unwrap();
    assert_eq!(f.to_vec::<i64>().unwrap(), vec![6, 5]);
    assert_eq!(
        t.diagonal(0, 0, 2).unwrap().to_vec::<i64>().unwrap(),
        vec![5, 6]
    );
}

#[test]
fn index_from_huge_unsigned_is_out_of_range_not_wrapped() {
    // `usize::MAX as i64` would be -1, the last element: it must be out of range.
    let t = base();
    assert!(t.index(&s![usize::MAX]).is_err());
    assert_eq!(
        t.index(&s![0..=i64::MAX]).unwrap().numel(),
        BASE,
        "an inclusive range to i64::MAX is the whole dim"
    );
}
