//! The special matmul kernels (issue "matmul shapes beyond the square case") against the
//! general `gemm` path and a naive f64 triple loop, at every CPU level this machine has:
//!
//! - batches of small matrices (`Route::Small`): random batch shapes (0 and 1 sizes,
//!   broadcast batch dims), transposed, flipped (negative strides) and stepped operands;
//! - `a · aᵀ` / `aᵀ · a` as a symmetric product (`Route::Symmetric`): exactly symmetric,
//!   and not taken for `a · bᵀ` with another `b`, another offset, or `a · a`;
//! - matrix·vector and vector·matrix (`Route::Vector`), both layouts of the matrix, strided
//!   and flipped vectors.
//!
//! `with_route` forces a kernel (whatever the size thresholds), `last_route` says which ran.

mod common;

use common::{values_f64, Rng};
use strata::kernel::cpu::{detected, Level};
use strata::kernel::matmul::{last_route, with_route, Route};
use strata::{DType, Tensor};

/// The levels this CPU can run.
fn levels() -> Vec<Level> {
    Level::ALL
        .into_iter()
        .filter(|&l| l <= detected())
        .collect()
}

/// A random `shape` tensor of `dt`, laid out as `layout` says: 0 contiguous, 1 with the
/// last two dims stored transposed, 2 flipped in every dim, 3 stepped (`x[..., ::2]`, with
/// the last dim reversed).
fn operand(shape: &[usize], dt: DType, layout: u64, seed: u64) -> Tensor {
    let nd = shape.len();
    let base = |s: &[usize]| {
        Tensor::rand(s, DType::F64, seed)
            .unwrap()
            .to_dtype(dt)
            .unwrap()
    };
    match layout {
        1 if nd >= 2 => {
            let mut s = shape.to_vec();
            s.swap(nd - 2, nd - 1);
            base(&s).transpose(nd as i64 - 2, nd as i64 - 1).unwrap()
        }
        2 => {
            let dims: Vec<i64> = (0..nd as i64).collect();
            base(shape).flip(&dims).unwrap()
        }
        3 if nd >= 1 => {
            let mut s = shape.to_vec();
            s[nd - 1] *= 2;
            base(&s).slice(nd as i64 - 1, None, None, -2).unwrap()
        }
        _ => base(shape),
    }
}

/// `a @ b` by a triple loop in f64 over the logical values (batch dims broadcast).
fn naive(a: &Tensor, b: &Tensor) -> (Vec<usize>, Vec<f64>) {
    let (sa, sb) = (a.shape().to_vec(), b.shape().to_vec());
    let (na, nb) = (sa.len(), sb.len());
    let (m, k, n) = (sa[na - 2], sa[na - 1], sb[nb - 1]);
    let bd = (na - 2).max(nb - 2);
    let pad = |s: &[usize], nd: usize| {
        let mut v = vec![1; bd - (nd - 2)];
        v.extend_from_slice(&s[..nd - 2]);
        v
    };
    let (ba, bb) = (pad(&sa, na), pad(&sb, nb));
    let batch: Vec<usize> = ba.iter().zip(&bb).map(|(&x, &y)| x.max(y)).collect();
    let (va, vb) = (values_f64(a), values_f64(b));
    let count: usize = batch.iter().product();
    let mut out = vec![0.0; count * m * n];
    for i in 0..count {
        let idx = common::unravel(i, &batch);
        let ia: Vec<usize> = idx.iter().zip(&ba).map(|(&x, &s)| x % s).collect();
        let ib: Vec<usize> = idx.iter().zip(&bb).map(|(&x, &s)| x % s).collect();
        let (oa, ob) = (
            common::ravel(&ia, &ba) * m * k,
            common::ravel(&ib, &bb) * k * n,
        );
        for r in 0..m {
            for c in 0..n {
                let mut s = 0.0;
                for t in 0..k {
                    s += va[oa + r * k + t] * vb[ob + t * n + c];
                }
                out[i * m * n + r * n + c] = s;
            }
        }
    }
    let mut shape = batch;
    shape.extend([m, n]);
    (shape, out)
}

/// Values of `x` and `y` agree within `tol` (relative to the larger magnitude, at least 1).
fn close(x: &[f64], y: &[f64], tol: f64, what: &str) {
    assert_eq!(x.len(), y.len(), "{what}: lengths");
    for (i, (p, q)) in x.iter().zip(y).enumerate() {
        let scale = p.abs().max(q.abs()).max(1.0);
        assert!((p - q).abs() <= tol * scale, "{what}: [{i}] {p} vs {q}");
    }
}

fn tol(dt: DType) -> f64 {
    match dt {
        DType::F64 => 1e-12,
        DType::F32 => 1e-4,
        _ => 2e-2,
    }
}

/// `a @ b` forced onto `route` at `level`, with the route that ran.
fn run(route: Route, level: Level, a: &Tensor, b: &Tensor) -> (Tensor, Route) {
    with_route(route, level, || {
        let r = a.matmul(b).unwrap();
        (r, last_route())
    })
}

#[test]
fn small_batches_match_gemm_and_the_naive_product() {
    let mut rng = Rng(17);
    for case in 0..150 {
        let dt = if case % 2 == 0 {
            DType::F32
        } else {
            DType::F64
        };
        let dim = |rng: &mut Rng| [0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16][rng.below(11) as usize];
        let (m, k, n) = (dim(&mut rng), dim(&mut rng), dim(&mut rng));
        // Batch shapes: one dim, two broadcast dims, or a batch only on one side.
        let (ba, bb): (Vec<usize>, Vec<usize>) = match rng.below(4) {
            0 => {
                let b = [0, 1, 3, 40][rng.below(4) as usize];
                (vec![b], vec![b])
            }
            1 => (vec![3, 1], vec![1, 4]),
            2 => (vec![5], vec![]),
            _ => (vec![2, 1, 3], vec![3]),
        };
        let sa: Vec<usize> = ba.iter().copied().chain([m, k]).collect();
        let sb: Vec<usize> = bb.iter().copied().chain([k, n]).collect();
        let a = operand(&sa, dt, rng.below(4), rng.next());
        let b = operand(&sb, dt, rng.below(4), rng.next());
        let what = format!(
            "case {case}: {dt} {sa:?} @ {sb:?}, {:?} {:?}",
            a.strides(),
            b.strides()
        );
        let (shape, want) = naive(&a, &b);
        let (g, _) = run(Route::Gemm, Level::Portable, &a, &b);
        assert_eq!(g.shape(), &shape[..], "{what}");
        let mut first_vector: Option<Vec<f64>> = None;
        for level in levels() {
            let (s, route) = run(Route::Small, level, &a, &b);
            if m * n * k > 0 && shape.iter().product::<usize>() > 0 {
                assert_eq!(route, Route::Small, "{what}");
            }
            assert_eq!(s.shape(), &shape[..], "{what}");
            let v = values_f64(&s);
            close(&v, &want, tol(dt), &what);
            close(&v, &values_f64(&g), tol(dt), &what);
            // The vector levels fuse each multiply-add, in the same order: they give the
            // same bits (the portable level rounds twice, within `tol` of them).
            if level != Level::Portable {
                match &first_vector {
                    None => first_vector = Some(v),
                    Some(f) => assert_eq!(f, &v, "{what}: level {level:?}"),
                }
            }
        }
    }
}

#[test]
fn small_batches_are_chosen_for_tiny_matrices_and_not_for_others() {
    for dt in [DType::F32, DType::F64] {
        let a = operand(&[1000, 16, 16], dt, 0, 1);
        let b = operand(&[1000, 16, 16], dt, 1, 2);
        let r = a.matmul(&b).unwrap();
        assert_eq!(last_route(), Route::Small);
        let (g, _) = run(Route::Gemm, Level::Portable, &a, &b);
        close(&values_f64(&r), &values_f64(&g), tol(dt), "1000x16x16");
        let a = operand(&[10000, 4, 4], dt, 2, 3);
        let r = a.matmul(&a).unwrap();
        assert_eq!(last_route(), Route::Small);
        let (_, want) = naive(&a, &a);
        close(&values_f64(&r), &want, tol(dt), "10000x4x4");
        // Too wide for the kernel: gemm.
        let a = operand(&[4, 17, 17], dt, 0, 4);
        a.matmul(&a).unwrap();
        assert_eq!(last_route(), Route::Gemm);
    }
    // Integers and half precision keep their kernels (values checked in tests/matmul.rs).
    let a = Tensor::ones(&[50, 4, 4], DType::I32).unwrap();
    let r = a.matmul(&a).unwrap();
    assert_eq!(last_route(), Route::Plain);
    assert!(values_f64(&r).iter().all(|&x| x == 4.0));
    let a = operand(&[50, 4, 4], DType::F16, 0, 5);
    let r = a.matmul(&a).unwrap();
    assert_eq!(last_route(), Route::Gemm);
    let (_, want) = naive(&a, &a);
    close(&values_f64(&r), &want, tol(DType::F16), "f16 batch");
}

/// `x[i, j] == x[j, i]` bit for bit.
fn assert_symmetric(t: &Tensor, what: &str) {
    let n = t.shape()[0];
    let v = values_f64(t);
    for i in 0..n {
        for j in 0..n {
            assert_eq!(
                v[i * n + j].to_bits(),
                v[j * n + i].to_bits(),
                "{what}: [{i},{j}]"
            );
        }
    }
}

#[test]
fn symmetric_products_are_exactly_symmetric_and_match_gemm() {
    let mut rng = Rng(5);
    for case in 0..60 {
        let dt = [DType::F32, DType::F64, DType::F16][case % 3];
        let n = [1, 2, 3, 15, 16, 17, 33, 70][rng.below(8) as usize];
        let k = [0, 1, 5, 16, 40][rng.below(5) as usize];
        // A view with an offset into a larger storage, possibly flipped or stepped.
        let base = operand(&[n + 3, 2 * k + 1], dt, 0, rng.next());
        let mut a = base.narrow(0, 2, n as i64).unwrap();
        a = match rng.below(3) {
            0 => a.narrow(1, 1, k as i64).unwrap(),
            1 => a.slice(1, Some(1), None, 2).unwrap().flip(&[0, 1]).unwrap(),
            _ => a.narrow(1, 0, k as i64).unwrap().flip(&[1]).unwrap(),
        };
        assert_eq!(a.shape(), &[n, k]);
        // Both spellings of a·aᵀ (n×n): `a @ a.T`, and `c.T @ c` with `c = a.T`.
        let c = a.t().unwrap();
        for (x, y, form) in [
            (&a, &a.t().unwrap(), "a @ a.T"),
            (&c.t().unwrap(), &c, "c.T @ c"),
        ] {
            let what = format!(
                "case {case}: {dt} {form} n={n} k={k} strides {:?}",
                a.strides()
            );
            let (shape, want) = naive(x, y);
            let (g, _) = run(Route::Gemm, Level::Portable, x, y);
            for level in levels() {
                let (s, route) = run(Route::Symmetric, level, x, y);
                if k > 0 {
                    assert_eq!(route, Route::Symmetric, "{what}");
                }
                assert_eq!(s.shape(), &shape[..], "{what}");
                assert_symmetric(&s, &what);
                let v = values_f64(&s);
                close(&v, &want, tol(dt), &what);
                close(&v, &values_f64(&g), tol(dt), &what);
            }
        }
        // A product of the columns: aᵀ · a (k × k).
        if k > 0 {
            let (s, route) = run(Route::Symmetric, Level::Portable, &c, &a);
            assert_eq!(route, Route::Symmetric);
            assert_symmetric(&s, "aT @ a");
            close(&values_f64(&s), &naive(&c, &a).1, tol(dt), "aT @ a");
        }
    }
}

#[test]
fn symmetric_detection_fires_only_for_a_transpose_of_the_same_view() {
    for dt in [DType::F32, DType::F64] {
        let base = operand(&[301, 200], dt, 0, 9);
        let a = base.narrow(0, 0, 300).unwrap();
        // Large enough to be chosen without forcing.
        let s = a.matmul(&a.t().unwrap()).unwrap();
        assert_eq!(last_route(), Route::Symmetric);
        assert_symmetric(&s, "auto");
        let (g, _) = run(Route::Gemm, Level::Portable, &a, &a.t().unwrap());
        close(&values_f64(&s), &values_f64(&g), tol(dt), "auto a@a.T");
        let s = a.t().unwrap().matmul(&a).unwrap();
        assert_eq!(last_route(), Route::Symmetric);
        assert_symmetric(&s, "auto a.T@a");
        // Same storage, another offset (rows 1..301): not symmetric.
        let b = base.narrow(0, 1, 300).unwrap();
        let others = [
            ("other offset", b.t().unwrap()),
            ("copy of a", a.contiguous_copy().unwrap().t().unwrap()),
            ("other values", operand(&[300, 200], dt, 0, 10).t().unwrap()),
        ];
        for (what, bt) in others {
            for route in [Route::Auto, Route::Symmetric] {
                let (r, ran) = run(route, detected(), &a, &bt);
                assert_ne!(ran, Route::Symmetric, "{what}");
                let (g, _) = run(Route::Gemm, Level::Portable, &a, &bt);
                close(&values_f64(&r), &values_f64(&g), tol(dt), what);
            }
        }
        // a·a of a square a (not its transpose), and a batched a·aᵀ.
        let sq = base.narrow(1, 0, 200).unwrap().narrow(0, 0, 200).unwrap();
        let (_, ran) = run(Route::Symmetric, detected(), &sq, &sq);
        assert_ne!(ran, Route::Symmetric);
        let bt = operand(&[2, 5, 3], dt, 0, 11);
        let (r, ran) = run(
            Route::Symmetric,
            detected(),
            &bt,
            &bt.transpose(1, 2).unwrap(),
        );
        assert_ne!(ran, Route::Symmetric);
        let (_, want) = naive(&bt, &bt.transpose(1, 2).unwrap());
        close(&values_f64(&r), &want, tol(dt), "batched");
    }
}

#[test]
fn matrix_vector_products_match_gemm_in_every_layout() {
    let mut rng = Rng(99);
    for case in 0..120 {
        let dt = if case % 2 == 0 {
            DType::F32
        } else {
            DType::F64
        };
        let size = |rng: &mut Rng| [0, 1, 2, 3, 4, 5, 15, 16, 17, 33, 70][rng.below(11) as usize];
        let (m, k) = (size(&mut rng), size(&mut rng));
        // Row-major (dot products) or column-major (axpy) matrix, maybe flipped.
        let col_major = rng.below(2);
        let mut a = operand(&[m, k], dt, col_major, rng.next());
        // Flipped rows of a row-major matrix: a negative row stride (the rows stay
        // contiguous; a flipped column-major matrix has no unit stride left).
        if col_major == 0 && rng.below(3) == 0 {
            a = a.flip(&[0]).unwrap();
        }
        let v = operand(&[k], dt, [0, 2, 3][rng.below(3) as usize], rng.next());
        let w = operand(&[m], dt, [0, 2, 3][rng.below(3) as usize], rng.next());
        let what = format!(
            "case {case}: {dt} m={m} k={k} a{:?} v{:?}",
            a.strides(),
            v.strides()
        );
        // a @ v, v' @ a, and the same through mv and through a batch-1 matrix.
        let (gv, _) = run(Route::Gemm, Level::Portable, &a, &v);
        let (gw, _) = run(Route::Gemm, Level::Portable, &w, &a);
        let want_v = naive(&a, &v.unsqueeze(1).unwrap()).1;
        let want_w = naive(&w.unsqueeze(0).unwrap(), &a).1;
        let mut first: Option<(Vec<f64>, Vec<f64>)> = None;
        for level in levels() {
            let (rv, route) = run(Route::Vector, level, &a, &v);
            if m > 0 && k > 0 {
                assert_eq!(route, Route::Vector, "{what}");
            }
            assert_eq!(rv.shape(), &[m], "{what}");
            let (rw, route) = run(Route::Vector, level, &w, &a);
            if m > 0 && k > 0 {
                assert_eq!(route, Route::Vector, "{what}");
            }
            assert_eq!(rw.shape(), &[k], "{what}");
            let (xv, xw) = (values_f64(&rv), values_f64(&rw));
            close(&xv, &want_v, tol(dt), &what);
            close(&xv, &values_f64(&gv), tol(dt), &what);
            close(&xw, &want_w, tol(dt), &what);
            close(&xw, &values_f64(&gw), tol(dt), &what);
            let mv = with_route(Route::Vector, level, || a.mv(&v).unwrap());
            assert_eq!(values_f64(&mv), xv, "{what}: mv");
            match &first {
                None => first = Some((xv, xw)),
                Some(f) => assert_eq!(f, &(xv, xw), "{what}: level {level:?}"),
            }
        }
    }
}

#[test]
fn matrix_vector_is_chosen_for_large_shapes_and_matches_gemm() {
    for dt in [DType::F32, DType::F64] {
        for layout in [0, 1] {
            let a = operand(&[700, 600], dt, layout, 3);
            let v = operand(&[600], dt, 0, 4);
            let w = operand(&[700], dt, 2, 5);
            let r = a.matmul(&v).unwrap();
            assert_eq!(last_route(), Route::Vector);
            let (g, _) = run(Route::Gemm, Level::Portable, &a, &v);
            close(&values_f64(&r), &values_f64(&g), tol(dt), "a @ v");
            let r = w.matmul(&a).unwrap();
            assert_eq!(last_route(), Route::Vector);
            let (g, _) = run(Route::Gemm, Level::Portable, &w, &a);
            close(&values_f64(&r), &values_f64(&g), tol(dt), "w @ a");
        }
    }
    // A matrix with neither unit stride: the general path.
    let a = operand(&[40, 60], DType::F32, 3, 1)
        .slice(0, None, None, 2)
        .unwrap();
    let v = operand(&[60], DType::F32, 0, 2);
    let r = run(Route::Vector, detected(), &a, &v);
    assert_ne!(r.1, Route::Vector);
    close(
        &values_f64(&r.0),
        &naive(&a, &v.unsqueeze(1).unwrap()).1,
        1e-4,
        "strided",
    );
}

#[test]
fn forced_levels_above_the_cpu_are_capped() {
    // Asking for AVX-512 on a CPU without it runs the highest level it has (no fault).
    let a = operand(&[20, 8, 8], DType::F32, 0, 1);
    let (r, route) = run(Route::Small, Level::Avx512, &a, &a);
    assert_eq!(route, Route::Small);
    close(&values_f64(&r), &naive(&a, &a).1, 1e-4, "capped");
}
