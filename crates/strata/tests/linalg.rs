//! `strata::linalg`: each factorisation checked by reconstruction (Q·R = A,
//! U·diag(S)·Vh = A, L·Lᵀ = A, A·A⁻¹ = I, A·X = B, A·V = V·diag(w)) on random matrices,
//! batched, and on strided layouts (transposed, flipped, broadcast), plus the errors.

mod common;

use common::{values_f64, Rng};
use strata::linalg;
use strata::{DType, ErrorKind, Tensor};

/// A random tensor of `shape` with values in [-1, 1).
fn rand(rng: &mut Rng, shape: &[usize], dtype: DType) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|_| rng.unit() * 2.0 - 1.0).collect();
    Tensor::from_vec(v, shape).unwrap().to_dtype(dtype).unwrap()
}

/// Largest absolute difference between two tensors of one shape.
fn max_diff(a: &Tensor, b: &Tensor) -> f64 {
    assert_eq!(a.shape(), b.shape());
    values_f64(a)
        .iter()
        .zip(values_f64(b))
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

fn tol(dtype: DType) -> f64 {
    if dtype == DType::F32 {
        2e-4
    } else {
        1e-10
    }
}

/// `n × n` identities stacked to `batch`.
fn eyes(batch: &[usize], n: usize, dtype: DType) -> Tensor {
    let mut shape: Vec<i64> = batch.iter().map(|&b| b as i64).collect();
    shape.extend([n as i64, n as i64]);
    Tensor::eye(n, n, dtype)
        .unwrap()
        .expand(&shape)
        .unwrap()
        .contiguous()
        .unwrap()
}

/// A well-conditioned square batch: random plus `n` on the diagonal.
fn well_conditioned(rng: &mut Rng, batch: &[usize], n: usize, dtype: DType) -> Tensor {
    let mut shape = batch.to_vec();
    shape.extend([n, n]);
    rand(rng, &shape, dtype)
        .add(&eyes(batch, n, dtype).mul(n as f64).unwrap())
        .unwrap()
}

/// Symmetric positive definite: X·Xᵀ + n·I.
fn spd(rng: &mut Rng, batch: &[usize], n: usize, dtype: DType) -> Tensor {
    let mut shape = batch.to_vec();
    shape.extend([n, n]);
    let x = rand(rng, &shape, dtype);
    x.matmul(&x.mt().unwrap())
        .unwrap()
        .add(&eyes(batch, n, dtype).mul(n as f64).unwrap())
        .unwrap()
}

/// The same matrices in other layouts: transposed storage, flipped (negative strides)
/// storage, and a stepped slice of a larger tensor.
fn layouts(a: &Tensor) -> Vec<Tensor> {
    let nd = a.ndim() as i64;
    let t = a.mt().unwrap().contiguous().unwrap().mt().unwrap();
    let f = a
        .flip(&[nd - 2, nd - 1])
        .unwrap()
        .contiguous()
        .unwrap()
        .flip(&[nd - 2, nd - 1])
        .unwrap();
    // Every other column of a tensor twice as wide.
    let mut wide: Vec<i64> = a.shape().iter().map(|&s| s as i64).collect();
    let last = wide.len() - 1;
    wide[last] *= 2;
    let w = Tensor::zeros(
        &wide.iter().map(|&s| s as usize).collect::<Vec<_>>(),
        a.dtype(),
    )
    .unwrap();
    let stepped = w.slice(nd - 1, None, None, 2).unwrap();
    stepped.copy_(a).unwrap();
    if a.shape()[a.ndim() - 1] > 1 && a.shape()[a.ndim() - 2] > 1 {
        assert!(!t.is_contiguous() && !f.is_contiguous() && !stepped.is_contiguous());
    }
    vec![a.clone(), t, f, stepped]
}

#[test]
fn inv_times_a_is_identity_on_every_layout() {
    let mut rng = Rng(1);
    for dtype in [DType::F32, DType::F64] {
        for (batch, n) in [
            (vec![], 1),
            (vec![], 5),
            (vec![3], 4),
            (vec![2, 2], 3),
            (vec![], 70),
        ] {
            let a = well_conditioned(&mut rng, &batch, n, dtype);
            let reference = linalg::inv(&a).unwrap();
            assert!(reference.is_contiguous());
            for l in layouts(&a) {
                let x = linalg::inv(&l).unwrap();
                assert_eq!(x.dtype(), dtype);
                let i = a.matmul(&x).unwrap();
                assert!(max_diff(&i, &eyes(&batch, n, dtype)) < tol(dtype) * n as f64);
                assert!(max_diff(&x, &reference) < tol(dtype) * n as f64);
            }
        }
    }
}

#[test]
fn solve_satisfies_the_equation_with_broadcast_batches_and_vectors() {
    let mut rng = Rng(2);
    for dtype in [DType::F32, DType::F64] {
        let a = well_conditioned(&mut rng, &[2, 1], 4, dtype);
        let b = rand(&mut rng, &[3, 4, 2], dtype);
        let x = linalg::solve(&a, &b, true).unwrap();
        assert_eq!(x.shape(), &[2, 3, 4, 2]);
        let ax = a.matmul(&x).unwrap();
        assert!(max_diff(&ax, &b.expand(&[2, 3, 4, 2]).unwrap()) < tol(dtype) * 4.0);
        // Strided A and B.
        for (al, bl) in layouts(&a).iter().zip(layouts(&b)) {
            let x2 = linalg::solve(al, &bl, true).unwrap();
            assert!(max_diff(&x2, &x) < tol(dtype) * 4.0);
        }
        // A vector right-hand side (B of A's shape without its last dim), and a 1-d one.
        let a1 = well_conditioned(&mut rng, &[3], 5, dtype);
        let v = rand(&mut rng, &[3, 5], dtype);
        let xv = linalg::solve(&a1, &v, true).unwrap();
        assert_eq!(xv.shape(), &[3, 5]);
        let back = a1
            .matmul(&xv.unsqueeze(-1).unwrap())
            .unwrap()
            .squeeze_dims(&[-1])
            .unwrap();
        assert!(max_diff(&back, &v) < tol(dtype) * 5.0);
        let v1 = rand(&mut rng, &[5], dtype);
        let x1 = linalg::solve(&a1, &v1, true).unwrap();
        assert_eq!(x1.shape(), &[3, 5]);
        // left = false: X·A = B.
        let bl = rand(&mut rng, &[3, 2, 5], dtype);
        let xl = linalg::solve(&a1, &bl, false).unwrap();
        assert!(max_diff(&xl.matmul(&a1).unwrap(), &bl) < tol(dtype) * 5.0);
    }
}

#[test]
fn cholesky_reconstructs_and_is_triangular() {
    let mut rng = Rng(3);
    for dtype in [DType::F32, DType::F64] {
        for (batch, n) in [(vec![], 1), (vec![], 6), (vec![4], 3), (vec![], 100)] {
            let a = spd(&mut rng, &batch, n, dtype);
            for l_in in layouts(&a) {
                let l = linalg::cholesky(&l_in, false).unwrap();
                let llt = l.matmul(&l.mt().unwrap()).unwrap();
                assert!(max_diff(&llt, &a) < tol(dtype) * n as f64 * n as f64);
                // Strictly upper part exactly zero, positive diagonal.
                let upper = l.triu(1).unwrap();
                assert!(values_f64(&upper).iter().all(|&x| x == 0.0));
                let d = l.diagonal(0, -2, -1).unwrap();
                assert!(values_f64(&d).iter().all(|&x| x > 0.0));
                let u = linalg::cholesky(&l_in, true).unwrap();
                assert!(values_f64(&u.tril(-1).unwrap()).iter().all(|&x| x == 0.0));
                let utu = u.mt().unwrap().matmul(&u).unwrap();
                assert!(max_diff(&utu, &a) < tol(dtype) * n as f64 * n as f64);
            }
        }
        // Only the lower triangle is read (the upper one with upper = true).
        let a = spd(&mut rng, &[], 4, dtype);
        let junk = a
            .add(&rand(&mut rng, &[4, 4], dtype).triu(1).unwrap())
            .unwrap();
        let l1 = linalg::cholesky(&a, false).unwrap();
        let l2 = linalg::cholesky(&junk, false).unwrap();
        assert_eq!(values_f64(&l1), values_f64(&l2));
    }
}

#[test]
fn qr_reconstructs_with_orthonormal_q() {
    let mut rng = Rng(4);
    for dtype in [DType::F32, DType::F64] {
        for shape in [
            vec![3, 5],
            vec![5, 3],
            vec![4, 4],
            vec![2, 3, 6, 2],
            vec![1, 1],
            vec![80, 70],
        ] {
            let a = rand(&mut rng, &shape, dtype);
            let nd = shape.len();
            let (m, n) = (shape[nd - 2], shape[nd - 1]);
            let k = m.min(n);
            for l_in in layouts(&a) {
                for (mode, qc) in [("reduced", k), ("complete", m)] {
                    let (q, r) = linalg::qr(&l_in, mode).unwrap();
                    assert_eq!(q.shape()[nd - 1], qc);
                    assert_eq!(r.shape()[nd - 2], qc);
                    assert!(max_diff(&q.matmul(&r).unwrap(), &a) < tol(dtype) * m as f64);
                    let qtq = q.mt().unwrap().matmul(&q).unwrap();
                    assert!(
                        max_diff(&qtq, &eyes(&shape[..nd - 2], qc, dtype)) < tol(dtype) * m as f64
                    );
                    assert!(values_f64(&r.tril(-1).unwrap()).iter().all(|&x| x == 0.0));
                }
                let (q0, r0) = linalg::qr(&l_in, "r").unwrap();
                assert_eq!(q0.numel(), 0);
                let (_, r1) = linalg::qr(&l_in, "reduced").unwrap();
                assert_eq!(values_f64(&r0), values_f64(&r1));
            }
        }
    }
}

#[test]
fn svd_reconstructs_with_orthonormal_factors() {
    let mut rng = Rng(5);
    for dtype in [DType::F32, DType::F64] {
        for shape in [
            vec![3, 5],
            vec![5, 3],
            vec![4, 4],
            vec![2, 2, 6, 3],
            vec![1, 1],
            vec![60, 50],
        ] {
            let a = rand(&mut rng, &shape, dtype);
            let nd = shape.len();
            let (m, n) = (shape[nd - 2], shape[nd - 1]);
            let batch = &shape[..nd - 2];
            for l_in in layouts(&a) {
                let (u, s, vh) = linalg::svd(&l_in, false).unwrap();
                let us = u.mul(&s.unsqueeze(-2).unwrap()).unwrap();
                assert!(max_diff(&us.matmul(&vh).unwrap(), &a) < tol(dtype) * m.max(n) as f64);
                let sv = values_f64(&s);
                let k = m.min(n);
                for row in sv.chunks(k) {
                    assert!(row.windows(2).all(|w| w[0] >= w[1]) && row.iter().all(|&x| x >= 0.0));
                }
                let s2 = linalg::svdvals(&l_in).unwrap();
                assert!(max_diff(&s2, &s) < tol(dtype));
                let (uf, _, vhf) = linalg::svd(&l_in, true).unwrap();
                let utu = uf.mt().unwrap().matmul(&uf).unwrap();
                assert!(max_diff(&utu, &eyes(batch, m, dtype)) < tol(dtype) * m as f64);
                let vvt = vhf.matmul(&vhf.mt().unwrap()).unwrap();
                assert!(max_diff(&vvt, &eyes(batch, n, dtype)) < tol(dtype) * n as f64);
            }
        }
    }
}

#[test]
fn eigh_diagonalises_reading_one_triangle() {
    let mut rng = Rng(6);
    for dtype in [DType::F32, DType::F64] {
        for (batch, n) in [(vec![], 1), (vec![], 5), (vec![3], 4), (vec![], 64)] {
            let x = rand(&mut rng, &with(&batch, n), dtype);
            let a = x.add(&x.mt().unwrap()).unwrap();
            for l_in in layouts(&a) {
                let (w, v) = linalg::eigh(&l_in, "L").unwrap();
                let av = a.matmul(&v).unwrap();
                let vw = v.mul(&w.unsqueeze(-2).unwrap()).unwrap();
                assert!(max_diff(&av, &vw) < tol(dtype) * n as f64 * 4.0);
                let vtv = v.mt().unwrap().matmul(&v).unwrap();
                assert!(max_diff(&vtv, &eyes(&batch, n, dtype)) < tol(dtype) * n as f64);
                for row in values_f64(&w).chunks(n) {
                    assert!(row.windows(2).all(|p| p[0] <= p[1]));
                }
                let w2 = linalg::eigvalsh(&l_in, "L").unwrap();
                assert!(max_diff(&w2, &w) < tol(dtype) * n as f64);
            }
            // "U" reads the upper triangle only: junk below it changes nothing.
            let junk = a
                .triu(0)
                .unwrap()
                .add(&rand(&mut rng, &with(&batch, n), dtype).tril(-1).unwrap())
                .unwrap();
            let (wu, _) = linalg::eigh(&junk, "U").unwrap();
            let (wl, _) = linalg::eigh(&a, "L").unwrap();
            assert!(max_diff(&wu, &wl) < tol(dtype) * n as f64);
        }
    }
}

fn with(batch: &[usize], n: usize) -> Vec<usize> {
    let mut s = batch.to_vec();
    s.extend([n, n]);
    s
}

#[test]
fn det_and_slogdet_agree_and_multiply() {
    let mut rng = Rng(7);
    for dtype in [DType::F32, DType::F64] {
        let a = well_conditioned(&mut rng, &[3], 4, dtype).div(4.0).unwrap();
        let b = well_conditioned(&mut rng, &[3], 4, dtype).div(4.0).unwrap();
        let da = linalg::det(&a).unwrap();
        let db = linalg::det(&b).unwrap();
        let dab = linalg::det(&a.matmul(&b).unwrap()).unwrap();
        assert!(max_diff(&dab, &da.mul(&db).unwrap()) < tol(dtype) * 10.0);
        let (sign, logabs) = linalg::slogdet(&a).unwrap();
        assert!(max_diff(&sign.mul(&logabs.exp().unwrap()).unwrap(), &da) < tol(dtype) * 10.0);
        for l in layouts(&a) {
            assert!(max_diff(&linalg::det(&l).unwrap(), &da) < tol(dtype) * 10.0);
        }
        // A triangular matrix: the product of its diagonal; a row swap flips the sign.
        let t = a.triu(0).unwrap();
        let prod = t.diagonal(0, -2, -1).unwrap().prod(&[-1], false).unwrap();
        assert!(max_diff(&linalg::det(&t).unwrap(), &prod) < tol(dtype));
        let swapped = t.flip(&[-2]).unwrap();
        let d4 = linalg::det(&swapped).unwrap(); // 4 rows reversed: two swaps
        assert!(max_diff(&d4, &prod) < tol(dtype));
        let p = Tensor::from_vec(vec![0.0, 1.0, 1.0, 0.0], &[2, 2])
            .unwrap()
            .to_dtype(dtype)
            .unwrap();
        assert_eq!(values_f64(&linalg::det(&p).unwrap()), vec![-1.0]);
        // Singular: 0 and (0, -inf).
        let s = Tensor::from_vec(vec![1.0, 2.0, 2.0, 4.0], &[2, 2])
            .unwrap()
            .to_dtype(dtype)
            .unwrap();
        assert_eq!(values_f64(&linalg::det(&s).unwrap()), vec![0.0]);
        let (sg, la) = linalg::slogdet(&s).unwrap();
        assert_eq!(
            (values_f64(&sg), values_f64(&la)),
            (vec![0.0], vec![f64::NEG_INFINITY])
        );
    }
}

#[test]
fn broadcast_batches_are_read_in_place() {
    // A batch dim of stride 0: every element of the batch is the same matrix.
    let mut rng = Rng(8);
    let a = well_conditioned(&mut rng, &[], 3, DType::F64);
    let e = a.expand(&[4, 3, 3]).unwrap();
    assert_eq!(e.strides()[0], 0);
    let inv = linalg::inv(&e).unwrap();
    let one = linalg::inv(&a).unwrap();
    for i in 0..4 {
        assert_eq!(values_f64(&inv.select(0, i).unwrap()), values_f64(&one));
    }
    let (w, _) = linalg::eigh(&e.add(&e.mt().unwrap()).unwrap(), "L").unwrap();
    assert_eq!(w.shape(), &[4, 3]);
}

#[test]
fn empty_matrices_and_empty_batches() {
    let z = Tensor::zeros(&[0, 0], DType::F64).unwrap();
    assert_eq!(linalg::inv(&z).unwrap().shape(), &[0, 0]);
    assert_eq!(values_f64(&linalg::det(&z).unwrap()), vec![1.0]);
    let (s, l) = linalg::slogdet(&z).unwrap();
    assert_eq!((values_f64(&s), values_f64(&l)), (vec![1.0], vec![0.0]));
    assert_eq!(linalg::cholesky(&z, false).unwrap().shape(), &[0, 0]);
    let b0 = Tensor::zeros(&[0, 3, 3], DType::F32).unwrap();
    assert_eq!(linalg::inv(&b0).unwrap().shape(), &[0, 3, 3]);
    assert_eq!(linalg::det(&b0).unwrap().shape(), &[0]);
    let (w, v) = linalg::eigh(&b0, "L").unwrap();
    assert_eq!(
        (w.shape(), v.shape()),
        (&[0usize, 3][..], &[0usize, 3, 3][..])
    );
    let (u, s, vh) = linalg::svd(&Tensor::zeros(&[3, 0], DType::F64).unwrap(), true).unwrap();
    assert_eq!(
        (u.shape(), s.shape(), vh.shape()),
        (&[3usize, 3][..], &[0usize][..], &[0usize, 0][..])
    );
    assert_eq!(
        values_f64(&u),
        values_f64(&Tensor::eye(3, 3, DType::F64).unwrap())
    );
    let (q, r) = linalg::qr(&Tensor::zeros(&[2, 3, 0], DType::F64).unwrap(), "complete").unwrap();
    assert_eq!(
        (q.shape(), r.shape()),
        (&[2usize, 3, 3][..], &[2usize, 3, 0][..])
    );
    let x = linalg::solve(&b0, &Tensor::zeros(&[0, 3], DType::F32).unwrap(), true).unwrap();
    assert_eq!(x.shape(), &[0, 3]);
}

#[test]
fn errors_name_the_op_and_values() {
    let msg = |r: strata::Result<Tensor>| {
        let e = r.unwrap_err();
        (e.kind(), e.to_string())
    };
    let rect = Tensor::zeros(&[3, 4], DType::F64).unwrap();
    assert_eq!(
        msg(linalg::inv(&rect)),
        (
            ErrorKind::Shape,
            "linalg.inv: A must be batches of square matrices, but they are 3 by 4 matrices"
                .to_string()
        )
    );
    let v = Tensor::zeros(&[3], DType::F64).unwrap();
    assert_eq!(
        msg(linalg::det(&v)).1,
        "linalg.det: The input tensor A must have at least 2 dimensions."
    );
    let ints = Tensor::zeros(&[3, 3], DType::I64).unwrap();
    assert_eq!(
        msg(linalg::inv(&ints)),
        (
            ErrorKind::DType,
            "linalg.inv: Expected a floating point or complex tensor as input. Got Long"
                .to_string()
        )
    );
    let half = Tensor::zeros(&[3, 3], DType::F16).unwrap();
    assert_eq!(
        msg(linalg::cholesky(&half, false)).1,
        "linalg.cholesky: Low precision dtypes not supported. Got Half"
    );
    let sing = Tensor::from_vec(
        vec![1.0f64, 2.0, 3.0, 2.0, 4.0, 6.0, 1.0, 0.0, 1.0],
        &[3, 3],
    )
    .unwrap();
    assert_eq!(
        msg(linalg::inv(&sing)),
        (ErrorKind::LinAlg, "linalg.inv: The diagonal element 3 is zero, the inversion could not be completed because the input matrix is singular.".to_string())
    );
    let batch = Tensor::stack(&[&Tensor::eye(3, 3, DType::F64).unwrap(), &sing], 0).unwrap();
    assert_eq!(
        msg(linalg::inv(&batch)).1,
        "linalg.inv: (Batch element 1): The diagonal element 3 is zero, the inversion could not be completed because the input matrix is singular."
    );
    let b = Tensor::zeros(&[3], DType::F64).unwrap();
    assert_eq!(
        msg(linalg::solve(&batch, &b, true)).1,
        "torch.linalg.solve: (Batch element 1): The solver failed because the input matrix is singular."
    );
    let npd = Tensor::from_vec(vec![1.0f64, 2.0, 2.0, 1.0], &[2, 2]).unwrap();
    assert_eq!(
        msg(linalg::cholesky(&npd, false)),
        (ErrorKind::LinAlg, "linalg.cholesky: The factorization could not be completed because the input is not positive-definite (the leading minor of order 2 is not positive-definite).".to_string())
    );
    let eye3 = Tensor::eye(3, 3, DType::F64).unwrap();
    assert_eq!(
        msg(linalg::solve(
            &eye3,
            &Tensor::zeros(&[4, 2], DType::F64).unwrap(),
            true
        ))
        .1,
        "linalg.solve: Incompatible shapes of A and B for the equation AX = B (3x3 and 4x2)"
    );
    assert_eq!(
        msg(linalg::solve(&eye3, &Tensor::zeros(&[3], DType::F32).unwrap(), true)).1,
        "linalg.solve: Expected A and B to have the same dtype, but found A of type Double and B of type Float instead"
    );
    let a3 = eye3.expand(&[2, 3, 3]).unwrap();
    assert_eq!(
        msg(linalg::solve(
            &a3,
            &Tensor::zeros(&[3, 3, 2], DType::F64).unwrap(),
            true
        ))
        .0,
        ErrorKind::Shape
    );
    assert!(msg(linalg::qr(&eye3, "x").map(|p| p.0))
        .1
        .contains("unrecognized mode 'x'"));
    assert!(msg(linalg::eigh(&eye3, "X").map(|p| p.0))
        .1
        .contains("Expected UPLO argument to be 'L' or 'U', but got X"));
    assert!(msg(linalg::svd(&v, true).map(|p| p.0))
        .1
        .starts_with("linalg.svd: The input tensor A must have at least 2"));
    // QR's backward needs Q: mode "r" with grad is refused, not silently detached.
    let g = Tensor::eye(2, 2, DType::F64).unwrap();
    g.requires_grad_(true).unwrap();
    let (kind, text) = msg(linalg::qr(&g, "r").map(|p| p.0));
    assert_eq!(kind, ErrorKind::Autograd);
    assert!(
        text.contains("which is not computed when mode='r'"),
        "{text}"
    );
    assert_eq!(
        msg(rect.expand(&[2, 3, 4]).unwrap().trace()).1,
        "trace: expected a matrix, but got tensor with dim 3"
    );
}

#[test]
fn composites_match_their_definitions() {
    let mut rng = Rng(9);
    let a = rand(&mut rng, &[3, 4], DType::F64);
    let vals = values_f64(&a);
    let l2: f64 = vals.iter().map(|x| x * x).sum::<f64>().sqrt();
    let got = linalg::vector_norm(&a, 2.0, None, false).unwrap();
    assert!((values_f64(&got)[0] - l2).abs() < 1e-12);
    let l3: f64 = vals.iter().map(|x| x.abs().powi(3)).sum::<f64>().cbrt();
    let got3 = linalg::vector_norm(&a, 3.0, None, false).unwrap();
    assert!((values_f64(&got3)[0] - l3).abs() < 1e-12);
    let inf = linalg::vector_norm(&a, f64::INFINITY, Some(&[1]), true).unwrap();
    assert_eq!(inf.shape(), &[3, 1]);
    // The 2-norm of a matrix is its largest singular value; nuc their sum.
    let s = values_f64(&linalg::svdvals(&a).unwrap());
    let two = linalg::matrix_norm(&a, linalg::NormOrd::P(2.0), [-2, -1], false).unwrap();
    assert!((values_f64(&two)[0] - s[0]).abs() < 1e-12);
    let nuc = linalg::matrix_norm(&a, linalg::NormOrd::Nuc, [-2, -1], false).unwrap();
    assert!((values_f64(&nuc)[0] - s.iter().sum::<f64>()).abs() < 1e-12);
    // 1-norm: the largest column abs-sum.
    let col_max = (0..4)
        .map(|j| (0..3).map(|i| vals[i * 4 + j].abs()).sum::<f64>())
        .fold(0.0, f64::max);
    let one = linalg::matrix_norm(&a, linalg::NormOrd::P(1.0), [-2, -1], false).unwrap();
    assert!((values_f64(&one)[0] - col_max).abs() < 1e-12);
    // trace and tensordot.
    let sq = rand(&mut rng, &[4, 4], DType::F64);
    let sv = values_f64(&sq);
    assert!(
        (values_f64(&sq.trace().unwrap())[0] - (0..4).map(|i| sv[i * 5]).sum::<f64>()).abs()
            < 1e-12
    );
    let it = Tensor::from_vec(vec![1i32, 2, 3, 4], &[2, 2])
        .unwrap()
        .trace()
        .unwrap();
    assert_eq!((it.dtype(), values_f64(&it)), (DType::I64, vec![5.0]));
    let x = rand(&mut rng, &[2, 3, 4], DType::F64);
    let y = rand(&mut rng, &[4, 3, 5], DType::F64);
    let td = x.tensordot(&y, &[1, 2], &[1, 0]).unwrap();
    assert_eq!(td.shape(), &[2, 5]);
    let (xv, yv) = (values_f64(&x), values_f64(&y));
    let mut expect = vec![0.0; 10];
    for i in 0..2 {
        for l in 0..5 {
            for j in 0..3 {
                for k in 0..4 {
                    expect[i * 5 + l] += xv[i * 12 + j * 4 + k] * yv[k * 15 + j * 5 + l];
                }
            }
        }
    }
    assert!(values_f64(&td)
        .iter()
        .zip(&expect)
        .all(|(a, b)| (a - b).abs() < 1e-12));
    assert!(x.tensordot(&y, &[1], &[0]).is_err());
    // pinv of an invertible matrix is its inverse; matrix_rank of a rank-1 product is 1.
    let w = well_conditioned(&mut rng, &[], 4, DType::F64);
    let p = linalg::pinv(&w, None, None, false).unwrap();
    assert!(max_diff(&p, &linalg::inv(&w).unwrap()) < 1e-10);
    let u = rand(&mut rng, &[5, 1], DType::F64);
    let r1 = u.matmul(&u.mt().unwrap()).unwrap();
    assert_eq!(
        values_f64(&linalg::matrix_rank(&r1, None, None, false).unwrap()),
        vec![1.0]
    );
    assert_eq!(
        values_f64(&linalg::matrix_rank(&r1, None, None, true).unwrap()),
        vec![1.0]
    );
}

/// A random complex tensor of `shape` (parts in [-1, 1)).
fn crand(rng: &mut Rng, shape: &[usize], dtype: DType) -> Tensor {
    let real = dtype.to_real();
    Tensor::complex(&rand(rng, shape, real), &rand(rng, shape, real)).unwrap()
}

/// Largest absolute difference between two complex tensors, part by part.
fn cmax_diff(a: &Tensor, b: &Tensor) -> f64 {
    let pairs = |t: &Tensor| t.contiguous().unwrap().view_as_real().unwrap();
    max_diff(&pairs(a), &pairs(b))
}

#[test]
fn complex_factorisations_reconstruct_on_every_layout() {
    let mut rng = Rng(41);
    for dtype in [DType::C64, DType::C128] {
        let t = tol(dtype.to_real()) * 40.0;
        for (batch, n) in [(vec![], 1), (vec![], 5), (vec![2], 4), (vec![], 40)] {
            let eye = eyes(&batch, n, dtype);
            let a = crand(&mut rng, &with(&batch, n), dtype)
                .add(&eye.mul(n as f64).unwrap())
                .unwrap();
            // Hermitian positive definite: A·Aᴴ + n·I.
            let h = a.matmul(&a.mh().unwrap()).unwrap();
            for l in layouts(&a) {
                let inv = linalg::inv(&l).unwrap();
                assert_eq!(inv.dtype(), dtype);
                assert!(cmax_diff(&a.matmul(&inv).unwrap(), &eye) < t);
                let b = crand(&mut rng, &[n, 2], dtype);
                let x = linalg::solve(&l, &b, true).unwrap();
                let want = b.expand(&x.shape().iter().map(|&s| s as i64).collect::<Vec<_>>());
                assert!(cmax_diff(&a.matmul(&x).unwrap(), &want.unwrap()) < t);
                // det = sign·exp(logabsdet), sign of modulus 1, logabsdet real.
                let (sign, logabs) = linalg::slogdet(&l).unwrap();
                assert_eq!((sign.dtype(), logabs.dtype()), (dtype, dtype.to_real()));
                let det = linalg::det(&l).unwrap();
                let rebuilt = sign.mul(&logabs.exp().unwrap()).unwrap();
                let scale = det
                    .abs()
                    .unwrap()
                    .amax(&[], false)
                    .unwrap()
                    .item()
                    .unwrap()
                    .to_f64();
                assert!(cmax_diff(&det, &rebuilt) < t * scale.max(1.0));
                let (q, r) = linalg::qr(&l, "reduced").unwrap();
                assert!(cmax_diff(&q.matmul(&r).unwrap(), &a) < t);
                assert!(cmax_diff(&q.mh().unwrap().matmul(&q).unwrap(), &eye) < t);
                let (u, s, vh) = linalg::svd(&l, false).unwrap();
                assert_eq!(s.dtype(), dtype.to_real());
                let usv = u
                    .mul(&s.unsqueeze(-2).unwrap())
                    .unwrap()
                    .matmul(&vh)
                    .unwrap();
                assert!(cmax_diff(&usv, &a) < t);
            }
            for l in layouts(&h) {
                let lo = linalg::cholesky(&l, false).unwrap();
                assert!(cmax_diff(&lo.matmul(&lo.mh().unwrap()).unwrap(), &h) < t * n as f64);
                let up = linalg::cholesky(&l, true).unwrap();
                assert!(cmax_diff(&up.mh().unwrap().matmul(&up).unwrap(), &h) < t * n as f64);
                for uplo in ["L", "U"] {
                    let (w, v) = linalg::eigh(&l, uplo).unwrap();
                    assert_eq!(w.dtype(), dtype.to_real());
                    let av = h.matmul(&v).unwrap();
                    let vw = v.mul(&w.unsqueeze(-2).unwrap()).unwrap();
                    assert!(cmax_diff(&av, &vw) < t * n as f64 * 4.0);
                }
            }
        }
    }
}

/// The backward of `inv`, `det` and `solve` (`ops/linalg_grad.rs`) against central
/// differences of a scalar loss.
#[test]
fn inverse_determinant_and_solve_gradients_match_finite_differences() {
    let start = [3.0, 0.5, -0.25, 0.75, 2.5, 0.5, 0.1, -0.4, 2.0];
    let b = Tensor::from_vec(vec![1.0f64, -2.0, 0.5, 0.25, 1.5, -1.0], &[3, 2]).unwrap();
    type Loss = Box<dyn Fn(&Tensor) -> strata::Result<Tensor>>;
    let losses: Vec<(&str, Loss)> = vec![
        (
            "Σ inv(A)·W",
            Box::new(|a: &Tensor| {
                let w = Tensor::arange(1, 10, 1, DType::F64)?.view(&[3, 3])?;
                linalg::inv(a)?.mul(&w)?.sum(&[], false)
            }),
        ),
        ("det(A)", Box::new(|a: &Tensor| linalg::det(a))),
        (
            "Σ solve(A, B)²",
            Box::new(move |a: &Tensor| {
                let x = linalg::solve(a, &b, true)?;
                x.mul(&x)?.sum(&[], false)
            }),
        ),
    ];
    for (name, f) in &losses {
        let a = Tensor::from_vec(start.to_vec(), &[3, 3]).unwrap();
        a.requires_grad_(true).unwrap();
        f(&a).unwrap().backward(None, false, false).unwrap();
        let g = a.grad().unwrap().to_vec::<f64>().unwrap();
        for (i, &gi) in g.iter().enumerate() {
            let at = |d: f64| {
                let mut v = start;
                v[i] += d;
                let _off = strata::autograd::no_grad();
                f(&Tensor::from_vec(v.to_vec(), &[3, 3]).unwrap())
                    .unwrap()
                    .item()
                    .unwrap()
                    .to_f64()
            };
            let numeric = (at(1e-6) - at(-1e-6)) / 2e-6;
            assert!(
                (gi - numeric).abs() < 1e-6 * (1.0 + numeric.abs()),
                "{name}: element {i}: analytic {gi}, numeric {numeric}"
            );
        }
    }
}
