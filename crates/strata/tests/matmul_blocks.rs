//! The blocking of the matmul routes at sizes the shape tests (`matmul_shapes.rs`) do not
//! reach, against a naive f64 product and the general `gemm` route, at every CPU level
//! this machine has:
//!
//! - the symmetric product (`Route::Symmetric`) over several row panels, the last one
//!   partial, for `a · aᵀ` and `aᵀ · a` with contiguous, transposed, flipped and
//!   stepped `a`: exactly symmetric, and close to the naive product;
//! - matrix·vector (`Route::Vector`) with row counts around the groups of rows the dot
//!   loops take at once (4, 8) and the lane count (16), and column counts around the
//!   columns the axpy loops take at once, in both matrix layouts, and vector·matrix.

mod common;

use common::values_f64;
use strata::kernel::cpu::{detected, Level};
use strata::kernel::matmul::{last_route, with_route, Route};
use strata::{DType, Tensor};

fn levels() -> Vec<Level> {
    Level::ALL
        .into_iter()
        .filter(|&l| l <= detected())
        .collect()
}

fn rand(shape: &[usize], dt: DType, seed: u64) -> Tensor {
    Tensor::rand(shape, DType::F64, seed)
        .unwrap()
        .to_dtype(dt)
        .unwrap()
}

/// `a @ b` (2-d, or matrix·vector, vector·matrix) in f64 over the logical values.
fn naive(a: &Tensor, b: &Tensor) -> Vec<f64> {
    let (va, vb) = (values_f64(a), values_f64(b));
    let (m, k) = match a.shape() {
        [k] => (1, *k),
        [m, k] => (*m, *k),
        s => panic!("{s:?}"),
    };
    let n = if b.shape().len() == 1 {
        1
    } else {
        b.shape()[1]
    };
    let mut out = vec![0.0; m * n];
    for r in 0..m {
        for c in 0..n {
            out[r * n + c] = (0..k).map(|t| va[r * k + t] * vb[t * n + c]).sum();
        }
    }
    out
}

fn close(x: &[f64], y: &[f64], tol: f64, what: &str) {
    assert_eq!(x.len(), y.len(), "{what}: lengths");
    for (i, (p, q)) in x.iter().zip(y).enumerate() {
        let scale = p.abs().max(q.abs()).max(1.0);
        assert!((p - q).abs() <= tol * scale, "{what}: [{i}] {p} vs {q}");
    }
}

fn tol(dt: DType) -> f64 {
    if dt == DType::F64 {
        1e-12
    } else {
        1e-4
    }
}

fn run(route: Route, level: Level, a: &Tensor, b: &Tensor) -> (Tensor, Route) {
    with_route(route, level, || {
        let r = a.matmul(b).unwrap();
        (r, last_route())
    })
}

#[test]
fn symmetric_products_over_several_panels() {
    let mut seed = 1;
    for dt in [DType::F32, DType::F64] {
        for (n, k) in [
            (127, 9),
            (128, 33),
            (129, 16),
            (200, 5),
            (257, 24),
            (300, 1),
        ] {
            seed += 1;
            // Contiguous; stored transposed; flipped; stepped (every second column).
            let forms: Vec<(String, Tensor)> = vec![
                ("contiguous".into(), rand(&[n, k], dt, seed)),
                ("transposed".into(), rand(&[k, n], dt, seed).t().unwrap()),
                (
                    "flipped".into(),
                    rand(&[n, k], dt, seed).flip(&[0, 1]).unwrap(),
                ),
                (
                    "stepped".into(),
                    rand(&[n, 2 * k], dt, seed).slice(1, None, None, 2).unwrap(),
                ),
            ];
            for (form, a) in forms {
                let at = a.t().unwrap();
                for (x, y, prod) in [(&a, &at, "a @ a.T"), (&at, &a, "a.T @ a")] {
                    let what = format!("{dt} {form} {prod} n={n} k={k}");
                    let want = naive(x, y);
                    let (g, _) = run(Route::Gemm, Level::Portable, x, y);
                    close(&values_f64(&g), &want, tol(dt), &what);
                    for level in levels() {
                        let (s, route) = run(Route::Symmetric, level, x, y);
                        assert_eq!(route, Route::Symmetric, "{what}");
                        let v = values_f64(&s);
                        let d = s.shape()[0];
                        for i in 0..d {
                            for j in 0..i {
                                assert_eq!(
                                    v[i * d + j].to_bits(),
                                    v[j * d + i].to_bits(),
                                    "{what}: [{i},{j}] at {level:?}"
                                );
                            }
                        }
                        close(&v, &want, tol(dt), &format!("{what} at {level:?}"));
                    }
                }
            }
        }
    }
    // Not forced: a large enough a @ a.T takes the route.
    let a = rand(&[160, 20], DType::F32, 77);
    let s = a.matmul(&a.t().unwrap()).unwrap();
    assert_eq!(last_route(), Route::Symmetric);
    close(
        &values_f64(&s),
        &naive(&a, &a.t().unwrap()),
        1e-4,
        "auto a @ a.T",
    );
}

#[test]
fn matrix_vector_around_the_row_and_column_groups() {
    let sizes = [1usize, 3, 4, 5, 7, 8, 9, 15, 16, 17, 23, 24, 25, 33, 100];
    let mut seed = 500;
    for dt in [DType::F32, DType::F64] {
        for &m in &sizes {
            for &k in &[0usize, 1, 7, 8, 9, 16, 17, 40] {
                seed += 1;
                let row_major = rand(&[m, k], dt, seed);
                let col_major = rand(&[k, m], dt, seed).t().unwrap();
                let v = rand(&[k], dt, seed + 1);
                let vs = rand(&[2 * k + 1], dt, seed + 2)
                    .slice(0, Some(1), None, 2)
                    .unwrap();
                let w = rand(&[m], dt, seed + 3);
                for (layout, a) in [("rows", &row_major), ("cols", &col_major)] {
                    for (vname, vec) in [("v", &v), ("v[1::2]", &vs)] {
                        let what = format!("{dt} {layout} m={m} k={k} a @ {vname}");
                        let want = naive(a, vec);
                        for level in levels() {
                            let (r, route) = run(Route::Vector, level, a, vec);
                            if k > 0 {
                                assert_eq!(route, Route::Vector, "{what}");
                            }
                            close(
                                &values_f64(&r),
                                &want,
                                tol(dt),
                                &format!("{what} at {level:?}"),
                            );
                        }
                    }
                    // w @ a: the other layout's loop.
                    let what = format!("{dt} {layout} m={m} k={k} w @ a");
                    let want = naive(&w, a);
                    for level in levels() {
                        let (r, route) = run(Route::Vector, level, &w, a);
                        if k > 1 {
                            assert_eq!(route, Route::Vector, "{what}");
                        }
                        close(
                            &values_f64(&r),
                            &want,
                            tol(dt),
                            &format!("{what} at {level:?}"),
                        );
                    }
                }
            }
        }
    }
}
