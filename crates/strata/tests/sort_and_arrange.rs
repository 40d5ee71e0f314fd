//! Sorting, searching and placing ops against index-arithmetic models: `sort`/`argsort`/
//! `topk` on random layouts (negative strides included) against a stable model sort,
//! `searchsorted` against `partition_point`, `cat`/`stack`/`roll`/`repeat` against
//! element-by-element models; and their errors.

mod common;

use proptest::prelude::*;
use strata::{DType, Tensor};

/// The f32 values of `t`, row-major.
fn vals(t: &Tensor) -> Vec<f32> {
    t.contiguous().unwrap().to_vec::<f32>().unwrap()
}

/// PyTorch's order for floats: NaN above everything, `-0.0 == 0.0`.
fn cmp(a: f32, b: f32) -> std::cmp::Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Greater,
        (false, true) => std::cmp::Ordering::Less,
        _ => a.partial_cmp(&b).unwrap(),
    }
}

/// The stable sort of each row of a row-major `[rows, n]` list: (values, positions).
fn model(v: &[f32], rows: usize, n: usize, descending: bool) -> (Vec<f32>, Vec<i64>) {
    let (mut vs, mut is) = (Vec::new(), Vec::new());
    for r in 0..rows {
        let mut p: Vec<usize> = (0..n).collect();
        p.sort_by(|&a, &b| {
            let o = cmp(v[r * n + a], v[r * n + b]);
            if descending {
                o.reverse()
            } else {
                o
            }
        });
        vs.extend(p.iter().map(|&i| v[r * n + i]));
        is.extend(p.iter().map(|&i| i as i64));
    }
    (vs, is)
}

fn value_strategy() -> impl Strategy<Value = f32> {
    prop_oneof![
        8 => (-6i32..6).prop_map(|i| i as f32 * 0.5),
        1 => Just(f32::NAN),
        1 => Just(-0.0f32),
        1 => Just(f32::INFINITY),
        1 => Just(f32::NEG_INFINITY),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Rows of up to 3000 elements (both the comparison and the radix paths), with many
    /// ties, NaNs, infinities and both zeros, read through a transposed, flipped view.
    #[test]
    fn sort_matches_a_stable_model(
        rows in 1usize..4,
        n in 0usize..3000,
        seed in any::<u64>(),
        descending in any::<bool>(),
    ) {
        let mut rng = common::Rng(seed);
        let pick = [0.0f32, -0.0, 1.5, -2.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 7.25, -7.25, 3.0];
        let data: Vec<f32> = (0..rows * n).map(|_| pick[(rng.next() % pick.len() as u64) as usize]).collect();
        // Stored as [n, rows] reversed along n: the sorted dim has a negative stride.
        let mut stored = vec![0.0f32; rows * n];
        for r in 0..rows {
            for i in 0..n {
                stored[(n - 1 - i) * rows + r] = data[r * n + i];
            }
        }
        let t = Tensor::from_vec(stored, &[n, rows]).unwrap().flip(&[0]).unwrap().t().unwrap();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
        prop_assert_eq!(bits(&vals(&t)), bits(&data));
        let (v, i) = t.sort(1, descending, true).unwrap();
        let (mv, mi) = model(&data, rows, n, descending);
        let got = vals(&v);
        prop_assert_eq!(got.len(), mv.len());
        for (a, b) in got.iter().zip(&mv) {
            prop_assert!(a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()), "{a} vs {b}");
        }
        prop_assert_eq!(i.contiguous().unwrap().to_vec::<i64>().unwrap(), mi.clone());
        prop_assert_eq!(t.argsort(1, descending, true).unwrap().contiguous().unwrap().to_vec::<i64>().unwrap(), mi.clone());
        // top-k is the first k of the stable sort.
        let k = n / 3;
        let (tv, ti) = t.topk(k, 1, descending, true).unwrap();
        let want: Vec<i64> = (0..rows).flat_map(|r| mi[r * n..r * n + k].to_vec()).collect();
        prop_assert_eq!(ti.to_vec::<i64>().unwrap(), want);
        prop_assert_eq!(tv.shape(), &[rows, k][..]);
    }

    #[test]
    fn integer_sorts_match_the_model(v in proptest::collection::vec(any::<i64>(), 0..2500), descending in any::<bool>()) {
        let t = Tensor::from_vec(v.clone(), &[v.len()]).unwrap();
        let (s, i) = t.sort(0, descending, true).unwrap();
        let mut p: Vec<usize> = (0..v.len()).collect();
        p.sort_by(|&a, &b| if descending { v[b].cmp(&v[a]) } else { v[a].cmp(&v[b]) });
        prop_assert_eq!(s.to_vec::<i64>().unwrap(), p.iter().map(|&k| v[k]).collect::<Vec<_>>());
        prop_assert_eq!(i.to_vec::<i64>().unwrap(), p.iter().map(|&k| k as i64).collect::<Vec<_>>());
    }

    #[test]
    fn searchsorted_matches_partition_point(
        seq in proptest::collection::vec(value_strategy(), 0..60),
        q in proptest::collection::vec(value_strategy(), 0..40),
        right in any::<bool>(),
    ) {
        let mut seq = seq;
        seq.sort_by(|a, b| cmp(*a, *b));
        let s = Tensor::from_vec(seq.clone(), &[seq.len()]).unwrap();
        let v = Tensor::from_vec(q.clone(), &[q.len()]).unwrap();
        let got = s.searchsorted(&v, right, false, None).unwrap().to_vec::<i64>().unwrap();
        let want: Vec<i64> = q
            .iter()
            .map(|&x| {
                seq.partition_point(|&e| match cmp(e, x) {
                    std::cmp::Ordering::Less => true,
                    std::cmp::Ordering::Equal => right,
                    std::cmp::Ordering::Greater => false,
                }) as i64
            })
            .collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn cat_stack_roll_repeat_match_models(
        a in 0usize..4, b in 0usize..4, c in 1usize..4, shift in -9i64..9, r0 in 0usize..3, r1 in 1usize..3,
    ) {
        let x: Vec<f32> = (0..a * c).map(|i| i as f32).collect();
        let y: Vec<f32> = (0..b * c).map(|i| 100.0 + i as f32).collect();
        let tx = Tensor::from_vec(x.clone(), &[a, c]).unwrap();
        let ty = Tensor::from_vec(y.clone(), &[b, c]).unwrap();
        // cat along 0 is the rows of one then the other; along 1 of the transposes, the same transposed.
        let cat0 = Tensor::cat(&[&tx, &ty], 0).unwrap();
        prop_assert_eq!(vals(&cat0), [x.clone(), y.clone()].concat());
        let cat1 = Tensor::cat(&[&tx.t().unwrap(), &ty.t().unwrap()], 1).unwrap();
        prop_assert_eq!(vals(&cat1.t().unwrap()), [x.clone(), y.clone()].concat());
        // stack: element [i][k] of the result is input i's element k.
        let st = Tensor::stack(&[&tx, &tx], 2).unwrap();
        let sv = vals(&st);
        for (k, &e) in x.iter().enumerate() {
            prop_assert_eq!(sv[2 * k], e);
            prop_assert_eq!(sv[2 * k + 1], e);
        }
        // roll along dim 1: out[i][j] = x[i][(j - shift) mod c].
        let rolled = vals(&tx.roll(&[shift], &[1]).unwrap());
        for i in 0..a {
            for j in 0..c {
                let src = (j as i64 - shift).rem_euclid(c as i64) as usize;
                prop_assert_eq!(rolled[i * c + j], x[i * c + src]);
            }
        }
        // repeat [r0, r1]: out[i][j] = x[i % a][j % c].
        let rep = tx.repeat(&[r0 as i64, r1 as i64]).unwrap();
        prop_assert_eq!(rep.shape(), &[a * r0, c * r1][..]);
        let rv = vals(&rep);
        for i in 0..a * r0 {
            for j in 0..c * r1 {
                prop_assert_eq!(rv[i * c * r1 + j], x[(i % a) * c + j % c]);
            }
        }
    }
}

#[track_caller]
fn msg(r: strata::Result<Tensor>) -> String {
    match r {
        Ok(t) => panic!("expected an error, got a tensor of shape {:?}", t.shape()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn errors_name_the_op_and_the_values() {
    let x = Tensor::zeros(&[2, 3], DType::F32).unwrap();
    let y = Tensor::zeros(&[2, 4], DType::F32).unwrap();
    assert!(msg(Tensor::cat(&[], 0)).contains("expected a non-empty list of Tensors"));
    assert!(msg(Tensor::cat(&[&x, &y], 0)).contains(
        "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for tensor number 1 in the list."
    ));
    assert!(msg(Tensor::cat(&[&x, &x], 2)).contains("Dimension out of range"));
    assert!(msg(Tensor::stack(&[&x, &y], 0)).contains("stack expects each tensor to be equal size"));
    assert!(msg(x.topk(4, 1, true, true).map(|p| p.0)).contains("selected index k out of range"));
    assert!(msg(x.repeat(&[2])).contains("can not be smaller than number of dimensions"));
    assert!(msg(x.repeat(&[-1, 2])).contains("negative dimension"));
    assert!(msg(x.repeat(&[i64::MAX, 2])).contains("overflow"));
    assert!(msg(x.roll(&[1, 2], &[0])).contains("shifts and dimensions must align"));
    assert!(msg(Tensor::zeros(&[3], DType::F32).unwrap().tril(0)).contains("at least 2 dimensions"));
    let i = Tensor::from_vec(vec![0i64, 5], &[1, 2]).unwrap();
    assert!(msg(x.gather(1, &i)).contains("out of bounds"));
    assert!(msg(x.scatter(1, &i, &x)).contains("out of bounds"));
    let i32s = Tensor::from_vec(vec![0i32, 1], &[1, 2]).unwrap();
    assert!(msg(x.scatter(1, &i32s, &x)).contains("int64"));
    assert!(
        msg(x.scatter(1, &Tensor::from_vec(vec![0i64], &[1]).unwrap(), &x))
            .contains("same number of dimensions")
    );
    let xd = Tensor::zeros(&[2, 3], DType::F64).unwrap();
    assert!(
        msg(x.scatter(1, &Tensor::from_vec(vec![0i64], &[1, 1]).unwrap(), &xd))
            .contains("Expected self.dtype to be equal to src.dtype")
    );
    assert!(msg(x.isclose(&xd, 1e-5, 1e-8, false)).contains("same dtype"));
    assert!(msg(x.isclose(&x, -1.0, 1e-8, false))
        .contains("rtol must be greater than or equal to zero"));
    assert!(msg(y.cross(&y, None)).contains("no dimension of size 3"));
    assert!(msg(x.cross(&x, Some(0))).contains("must have length 3"));
    assert!(msg(Tensor::einsum("ij,jk", &[&x])).contains("fewer operands"));
    assert!(msg(Tensor::einsum("ijk", &[&x])).contains("does not match the number of dimensions"));
    assert!(msg(Tensor::einsum("ij,jk->ik", &[&x, &x])).contains("subscript j"));
    assert!(msg(Tensor::einsum("ij->ii", &[&x])).contains("appears more than once"));
    assert!(msg(Tensor::einsum("i#", &[&x])).contains("invalid subscript"));
    let ints = Tensor::zeros(&[3], DType::I64).unwrap();
    assert!(msg(ints.softmax(0, None)).contains("floating point"));
    let seq = Tensor::zeros(&[2, 3], DType::F32).unwrap();
    assert!(msg(seq.searchsorted(
        &Tensor::zeros(&[3, 1], DType::F32).unwrap(),
        false,
        false,
        None
    ))
    .contains("first N-1 dimensions"));
    let bad_sorter = Tensor::from_vec(vec![0i64, 9, 1], &[3]).unwrap();
    let s1 = Tensor::zeros(&[3], DType::F32).unwrap();
    assert!(msg(s1.searchsorted(&s1, false, false, Some(&bad_sorter)))
        .contains("sorter index out of range"));
    assert!(msg(x.cumulative_sum(None, None, false)).contains("dim must be given"));
}

#[test]
fn unique_einsum_and_meshgrid_values() {
    let x = Tensor::from_vec(vec![3i32, 1, 3, 2, 1, 3], &[2, 3]).unwrap();
    let (u, inv, counts) = x.unique(true, true).unwrap();
    assert_eq!(u.to_vec::<i32>().unwrap(), vec![1, 2, 3]);
    assert_eq!(
        inv.unwrap().to_vec::<i64>().unwrap(),
        vec![2, 0, 2, 1, 0, 2]
    );
    assert_eq!(counts.unwrap().to_vec::<i64>().unwrap(), vec![2, 1, 3]);
    let rows = Tensor::from_vec(vec![1i32, 2, 0, 5, 1, 2], &[3, 2]).unwrap();
    let (u, inv, counts) = rows.unique_dim(0, true, true).unwrap();
    assert_eq!(u.to_vec::<i32>().unwrap(), vec![0, 5, 1, 2]);
    assert_eq!(inv.unwrap().to_vec::<i64>().unwrap(), vec![1, 0, 1]);
    assert_eq!(counts.unwrap().to_vec::<i64>().unwrap(), vec![1, 2]);
    // NaNs are each distinct.
    let n = Tensor::from_vec(vec![f32::NAN, 1.0, f32::NAN], &[3]).unwrap();
    assert_eq!(n.unique(false, false).unwrap().0.numel(), 3);
    // einsum against loops: a batched product with a broadcast ellipsis.
    let a = Tensor::arange(0, 24, 1, DType::F64)
        .unwrap()
        .view(&[2, 3, 4])
        .unwrap();
    let b = Tensor::arange(0, 20, 1, DType::F64)
        .unwrap()
        .view(&[4, 5])
        .unwrap();
    let r = Tensor::einsum("...ij,jk->...ik", &[&a, &b]).unwrap();
    let (av, bv, rv) = (
        a.to_vec::<f64>().unwrap(),
        b.to_vec::<f64>().unwrap(),
        r.to_vec::<f64>().unwrap(),
    );
    assert_eq!(r.shape(), &[2, 3, 5]);
    for n in 0..2 {
        for i in 0..3 {
            for k in 0..5 {
                let want: f64 = (0..4).map(|j| av[n * 12 + i * 4 + j] * bv[j * 5 + k]).sum();
                assert_eq!(rv[n * 15 + i * 5 + k], want);
            }
        }
    }
    // Implicit output: labels used once, alphabetically.
    let t = Tensor::einsum("ba", &[&b]).unwrap();
    assert_eq!(t.shape(), &[5, 4]);
    let g = Tensor::meshgrid(
        &[
            &Tensor::arange(0, 3, 1, DType::I64).unwrap(),
            &Tensor::arange(0, 2, 1, DType::I64).unwrap(),
        ],
        true,
    )
    .unwrap();
    assert_eq!(g[0].shape(), &[2, 3]);
    assert_eq!(g[0].strides(), &[0, 1]);
    assert_eq!(g[1].to_vec::<i64>().unwrap(), vec![0, 0, 0, 1, 1, 1]);
}
