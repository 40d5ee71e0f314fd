//! Hostile aliasing: two storages over the same bytes (a foreign storage wrapping another
//! one's memory, as NumPy, DLPack or a buffer hands it back). Every in-place op must read
//! its input as if whole before writing, whatever storage the bytes arrive through: the
//! overlap check goes by address ranges, not storage identity. The oracle is an index
//! model on plain vectors.

use std::ptr::NonNull;

use proptest::prelude::*;
use strata::interop::dlpack::{from_dlpack_versioned, to_dlpack_versioned};
use strata::{DType, Storage, Tensor};

const N: usize = 24;

/// A second storage over `t`'s bytes (keeping `t`'s storage alive as its owner), with
/// `t`'s layout.
fn foreign_alias(t: &Tensor) -> Tensor {
    let s = t.storage();
    let ptr = NonNull::new(s.data_ptr()).unwrap();
    // SAFETY: the bytes belong to `s`, which the owner keeps alive; they are only
    // written through strata ops.
    let other = unsafe { Storage::from_foreign(ptr, s.nbytes(), false, Box::new(s.clone())) };
    Tensor::from_parts(other, t.layout().clone(), t.dtype()).unwrap()
}

/// The same bytes through a DLPack export and import.
fn dlpack_alias(t: &Tensor) -> Tensor {
    let m = to_dlpack_versioned(t, false).unwrap();
    // SAFETY: `m` is a fresh export of a live tensor, consumed once.
    unsafe { from_dlpack_versioned(m) }.unwrap()
}

fn base() -> Tensor {
    Tensor::arange(1.0, (N + 1) as f64, 1.0, DType::F64).unwrap()
}

fn vals(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}

/// `len` elements from `start` in steps of `step` (signed), as a view and as indices.
fn take(t: &Tensor, start: usize, step: i64, len: usize) -> (Tensor, Vec<usize>) {
    let v = t
        .slice(0, Some(start as i64), None, step)
        .unwrap()
        .slice(0, None, Some(len as i64), 1)
        .unwrap();
    let idx = (0..len)
        .map(|k| (start as i64 + k as i64 * step) as usize)
        .collect();
    (v, idx)
}

fn slice_spec(len: usize) -> impl Strategy<Value = (usize, i64)> {
    prop::sample::select(vec![1i64, 2, 3, -1, -2, -3]).prop_flat_map(move |step| {
        let step = if len > 1 && (len - 1) * step.unsigned_abs() as usize >= N {
            step.signum()
        } else {
            step
        };
        let span = len.saturating_sub(1) * step.unsigned_abs() as usize;
        let range = if step > 0 { 0..N - span } else { span..N };
        (range, Just(step))
    })
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Copy,
    Add,
    Mul,
    Max,
    ClampMin,
}

fn apply(op: Op, dst: &Tensor, src: &Tensor) {
    match op {
        Op::Copy => drop(dst.copy_(src).unwrap()),
        Op::Add => drop(dst.add_(src).unwrap()),
        Op::Mul => drop(dst.mul_(src).unwrap()),
        Op::Max => drop(dst.maximum_(src).unwrap()),
        Op::ClampMin => drop(dst.clamp_tensor_(Some(src), None).unwrap()),
    }
}

fn model(op: Op, d: f64, s: f64) -> f64 {
    match op {
        Op::Copy => s,
        Op::Add => d + s,
        Op::Mul => d * s,
        Op::Max | Op::ClampMin => d.max(s),
    }
}

#[test]
fn the_two_aliases_are_other_storages_over_the_same_bytes() {
    let t = base();
    for a in [foreign_alias(&t), dlpack_alias(&t)] {
        assert!(!a.same_storage(&t));
        assert_eq!(a.data_ptr(), t.data_ptr());
        assert!(a.may_share_memory(&t));
    }
}

#[test]
fn reported_cases() {
    let t = Tensor::arange(0.0, 10.0, 1.0, DType::I64).unwrap();
    t.copy_(&dlpack_alias(&t).flip(&[0]).unwrap()).unwrap();
    assert_eq!(
        t.to_vec::<i64>().unwrap(),
        (0..10).rev().collect::<Vec<_>>()
    );
    let u = Tensor::arange(0.0, 10.0, 1.0, DType::I64).unwrap();
    let a = foreign_alias(&u);
    u.slice(0, Some(1), None, 1)
        .unwrap()
        .copy_(&a.slice(0, None, Some(-1), 1).unwrap())
        .unwrap();
    let mut want = vec![0i64];
    want.extend(0..9);
    assert_eq!(u.to_vec::<i64>().unwrap(), want);
}

#[test]
fn large_shifted_add_through_an_alias() {
    // The loop engine's path, split across threads.
    let n = 1 << 19;
    let t = Tensor::arange(0.0, n as f64, 1.0, DType::F64).unwrap();
    let a = foreign_alias(&t);
    t.slice(0, Some(1), None, 1)
        .unwrap()
        .add_(&a.slice(0, None, Some(-1), 1).unwrap())
        .unwrap();
    let v = vals(&t);
    assert_eq!(v[0], 0.0);
    for k in 1..n {
        assert_eq!(v[k], (2 * k - 1) as f64, "at {k}");
    }
}

#[test]
fn index_copy_from_an_alias() {
    let t = Tensor::arange(0.0, 12.0, 1.0, DType::F64)
        .unwrap()
        .view(&[4, 3])
        .unwrap();
    let a = foreign_alias(&t);
    t.index_copy_(0, &[0, 1, 2, 3], &a.flip(&[0]).unwrap())
        .unwrap();
    assert_eq!(
        vals(&t),
        vec![9.0, 10.0, 11.0, 6.0, 7.0, 8.0, 3.0, 4.0, 5.0, 0.0, 1.0, 2.0]
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn slices_and_flips_through_another_storage(
        (len, ds, ss) in (0..=N).prop_flat_map(|len| (Just(len), slice_spec(len), slice_spec(len))),
        op in prop::sample::select(vec![Op::Copy, Op::Add, Op::Mul, Op::Max, Op::ClampMin]),
        via_dlpack in any::<bool>(),
        flip_src in any::<bool>(),
    ) {
        let t = base();
        let a = if via_dlpack { dlpack_alias(&t) } else { foreign_alias(&t) };
        let (dst, di) = take(&t, ds.0, ds.1, len);
        let (src, mut si) = take(&a, ss.0, ss.1, len);
        let src = if flip_src {
            si.reverse();
            src.flip(&[0]).unwrap()
        } else {
            src
        };
        let before: Vec<f64> = (1..=N).map(|k| k as f64).collect();
        let mut want = before.clone();
        for (k, &i) in di.iter().enumerate() {
            want[i] = model(op, before[i], before[si[k]]);
        }
        apply(op, &dst, &src);
        prop_assert_eq!(vals(&t), want, "{:?} dst {:?} src {:?}", op, di, si);
    }

    #[test]
    fn broadcast_rows_of_an_alias(row in 0usize..4, op in prop::sample::select(vec![Op::Copy, Op::Add, Op::Max])) {
        let t = Tensor::arange(1.0, 13.0, 1.0, DType::F64).unwrap().view(&[4, 3]).unwrap();
        let a = foreign_alias(&t);
        let src = a.select(0, row as i64).unwrap();
        let before = vals(&t);
        let want: Vec<f64> = (0..12).map(|k| model(op, before[k], before[row * 3 + k % 3])).collect();
        apply(op, &t, &src);
        prop_assert_eq!(vals(&t), want);
    }
}
