//! Matrix products against a naive reference.
//!
//! Operands get random shapes (sizes 0 included, 1-D promotion, broadcast batch dims) and
//! random layouts built from view ops only: transposed matrices, flipped dims (negative
//! strides), stepped dims (`x[::2]`, `x[::-3]`) and expanded (stride-0) dims. The reference
//! reads each operand's logical values (`to_vec`) and multiplies with a triple loop in f64
//! (floats, with a tolerance scaled by `Σ|a·b|`) or wrapping i64 (integers, exact).

mod common;

use common::Rng;
use proptest::prelude::*;
use strata::{DType, ErrorKind, Tensor};

// ---------------------------------------------------------------------------------------
// Operands with random layouts
// ---------------------------------------------------------------------------------------

/// How one dim of an operand is laid out.
#[derive(Debug, Clone, Copy)]
struct DimLayout {
    /// `x[::step]` over a base `step` times larger (negative: from the end).
    step: i64,
    /// Reversed (negative stride).
    flip: bool,
    /// Built from size 1 and expanded (stride 0).
    expand: bool,
}

fn dim_layout() -> impl Strategy<Value = DimLayout> {
    (
        prop_oneof![4 => Just(1i64), 1 => Just(2), 1 => Just(-3)],
        any::<bool>(),
        prop_oneof![5 => Just(false), 1 => Just(true)],
    )
        .prop_map(|(step, flip, expand)| DimLayout { step, flip, expand })
}

/// The layout of an operand: per-dim choices and whether the last two dims are stored
/// transposed.
#[derive(Debug, Clone)]
struct Recipe {
    dims: Vec<DimLayout>,
    transposed: bool,
    seed: u64,
}

fn recipe(ndim: usize) -> impl Strategy<Value = Recipe> {
    (
        proptest::collection::vec(dim_layout(), ndim),
        any::<bool>(),
        any::<u64>(),
    )
        .prop_map(|(dims, transposed, seed)| Recipe {
            dims,
            transposed,
            seed,
        })
}

/// Random data of `dt` in a contiguous tensor of `shape`.
fn base(shape: &[usize], dt: DType, rng: &mut Rng) -> Tensor {
    let n: usize = shape.iter().product();
    match dt {
        DType::I32 | DType::I64 => {
            // Full-range values, so products and sums wrap.
            let v: Vec<i64> = (0..n)
                .map(|_| match dt {
                    DType::I32 => rng.next() as u32 as i32 as i64,
                    _ => rng.next() as i64,
                })
                .collect();
            Tensor::from_vec(v, shape).unwrap().to_dtype(dt).unwrap()
        }
        _ => {
            let v: Vec<f64> = (0..n).map(|_| rng.unit() * 2.0 - 1.0).collect();
            Tensor::from_vec(v, shape).unwrap().to_dtype(dt).unwrap()
        }
    }
}

/// A tensor of logical `shape` laid out as `r` says, by view ops over a larger base.
fn operand(shape: &[usize], dt: DType, r: &Recipe) -> Tensor {
    let nd = shape.len();
    let mut rng = Rng(r.seed);
    let phys: Vec<usize> = (0..nd)
        .map(|d| {
            let l = r.dims[d];
            if l.expand {
                1
            } else {
                shape[d] * l.step.unsigned_abs() as usize
            }
        })
        .collect();
    let transposed = r.transposed && nd >= 2;
    let mut stored = phys.clone();
    if transposed {
        stored.swap(nd - 2, nd - 1);
    }
    let mut t = base(&stored, dt, &mut rng);
    if transposed {
        t = t.transpose(-2, -1).unwrap();
    }
    for d in 0..nd {
        let l = r.dims[d];
        if !l.expand && l.step != 1 {
            t = t.slice(d as i64, None, None, l.step).unwrap();
        }
        if l.flip {
            t = t.flip(&[d as i64]).unwrap();
        }
    }
    let target: Vec<i64> = shape.iter().map(|&n| n as i64).collect();
    let t = t.expand(&target).unwrap();
    assert_eq!(t.shape(), shape);
    t
}

// ---------------------------------------------------------------------------------------
// The reference
// ---------------------------------------------------------------------------------------

enum Vals {
    F(Vec<f64>),
    I(Vec<i64>),
}

fn values(t: &Tensor) -> Vals {
    if t.dtype().is_float() {
        Vals::F(t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap())
    } else {
        Vals::I(t.to_dtype(DType::I64).unwrap().to_vec::<i64>().unwrap())
    }
}

/// Row-major strides of `shape`, with 0 for size-1 dims (so they broadcast).
fn bcast_strides(shape: &[usize], out_batch: &[usize]) -> Vec<usize> {
    let mut s = vec![0; out_batch.len()];
    let mut acc = 1;
    let off = out_batch.len() - shape.len();
    for d in (0..shape.len()).rev() {
        s[off + d] = if shape[d] == 1 { 0 } else { acc };
        acc *= shape[d];
    }
    s
}

/// `matmul` by the book: returns the result shape, values (f64 or wrapping i64) and, per
/// element, `Σ|a·b|` (the scale of the rounding error).
fn reference(a: &Tensor, b: &Tensor) -> (Vec<usize>, Vals, Vec<f64>) {
    let (sa, sb) = (a.shape().to_vec(), b.shape().to_vec());
    let a_mat = if sa.len() == 1 {
        vec![1, sa[0]]
    } else {
        sa.clone()
    };
    let b_mat = if sb.len() == 1 {
        vec![sb[0], 1]
    } else {
        sb.clone()
    };
    let (ba, bb) = (&a_mat[..a_mat.len() - 2], &b_mat[..b_mat.len() - 2]);
    let nb = ba.len().max(bb.len());
    let mut batch = vec![1; nb];
    for d in 0..nb {
        let x = (d + ba.len()).checked_sub(nb).map_or(1, |i| ba[i]);
        let y = (d + bb.len()).checked_sub(nb).map_or(1, |i| bb[i]);
        batch[d] = if x == 1 { y } else { x };
    }
    let (m, k) = (a_mat[a_mat.len() - 2], a_mat[a_mat.len() - 1]);
    let n = b_mat[b_mat.len() - 1];
    let (sta, stb) = (bcast_strides(ba, &batch), bcast_strides(bb, &batch));
    let count: usize = batch.iter().product();
    let (va, vb) = (values(a), values(b));
    let mut scale = vec![0.0; count * m * n];
    let mut fo = vec![0.0; count * m * n];
    let mut io = vec![0i64; count * m * n];
    for bi in 0..count {
        let (mut oa, mut ob, mut rem) = (0, 0, bi);
        for d in (0..nb).rev() {
            let i = rem % batch[d];
            rem /= batch[d];
            oa += i * sta[d];
            ob += i * stb[d];
        }
        for i in 0..m {
            for j in 0..n {
                let o = (bi * m + i) * n + j;
                for c in 0..k {
                    let (ia, ib) = (oa * m * k + i * k + c, ob * k * n + c * n + j);
                    match (&va, &vb) {
                        (Vals::F(x), Vals::F(y)) => {
                            fo[o] += x[ia] * y[ib];
                            scale[o] += (x[ia] * y[ib]).abs();
                        }
                        (Vals::I(x), Vals::I(y)) => {
                            io[o] = io[o].wrapping_add(x[ia].wrapping_mul(y[ib]));
                        }
                        _ => unreachable!(),
                    }
                }
            }
        }
    }
    let mut shape = batch;
    if sa.len() > 1 {
        shape.push(m);
    }
    if sb.len() > 1 {
        shape.push(n);
    }
    let vals = match va {
        Vals::F(_) => Vals::F(fo),
        Vals::I(_) => Vals::I(io),
    };
    (shape, vals, scale)
}

fn check(dt: DType, got: &Tensor, a: &Tensor, b: &Tensor) -> Result<(), TestCaseError> {
    let (shape, want, scale) = reference(a, b);
    prop_assert_eq!(got.shape(), &shape[..]);
    prop_assert_eq!(got.dtype(), dt);
    prop_assert!(got.is_contiguous());
    match (values(got), want) {
        (Vals::F(g), Vals::F(w)) => {
            let (rel, abs) = match dt {
                DType::F64 => (1e-12, 1e-300),
                DType::F32 => (1e-5, 1e-30),
                DType::F16 => (4e-3, 1e-3),
                _ => (2e-2, 1e-2),
            };
            for (i, (x, y)) in g.iter().zip(&w).enumerate() {
                let tol = rel * scale[i] + abs;
                prop_assert!((x - y).abs() <= tol, "{dt} at {i}: got {x}, want {y}");
            }
        }
        (Vals::I(g), Vals::I(w)) => {
            // The reference wraps in i64; reduce it to the dtype's width.
            let w: Vec<i64> = match dt {
                DType::I32 => w.iter().map(|&v| v as i32 as i64).collect(),
                _ => w,
            };
            prop_assert_eq!(g, w);
        }
        _ => prop_assert!(false, "value kinds differ"),
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Shapes
// ---------------------------------------------------------------------------------------

/// Shapes of the two operands of a valid `matmul`: a broadcast batch, each operand taking
/// a suffix of it with some dims set to 1, and each operand possibly 1-D.
#[derive(Debug, Clone)]
struct Case {
    a: Vec<usize>,
    b: Vec<usize>,
}

fn case(max: usize) -> impl Strategy<Value = Case> {
    (
        proptest::collection::vec(0usize..=3, 0..=3),
        0..=max,
        0..=max,
        0..=max,
        any::<(bool, bool)>(),
        any::<(u8, u8)>(),
        any::<(u8, u8)>(),
    )
        .prop_map(|(batch, m, k, n, (a1, b1), (la, lb), (ma, mb))| {
            let pick = |len: u8, mask: u8| -> Vec<usize> {
                let len = len as usize % (batch.len() + 1);
                let tail = &batch[batch.len() - len..];
                tail.iter()
                    .enumerate()
                    .map(|(i, &s)| if mask >> i & 1 == 1 { 1 } else { s })
                    .collect()
            };
            let mut a = pick(la, ma);
            let mut b = pick(lb, mb);
            // A 1-D operand has no batch dims.
            let a1 = a1 && a.is_empty();
            let b1 = b1 && b.is_empty();
            if a1 {
                a = vec![k];
            } else {
                a.extend([m, k]);
            }
            if b1 {
                b = vec![k];
            } else {
                b.extend([k, n]);
            }
            Case { a, b }
        })
}

fn case_and_recipes(max: usize) -> impl Strategy<Value = (Case, Recipe, Recipe)> {
    case(max).prop_flat_map(|c| {
        let (na, nb) = (c.a.len(), c.b.len());
        (Just(c), recipe(na), recipe(nb))
    })
}

const DTYPES: [DType; 6] = [
    DType::F32,
    DType::F64,
    DType::F16,
    DType::BF16,
    DType::I32,
    DType::I64,
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// `matmul` over every dtype, shape class and layout.
    #[test]
    fn matmul_matches_reference(
        (c, ra, rb) in case_and_recipes(6),
        dt in proptest::sample::select(DTYPES.to_vec()),
    ) {
        let a = operand(&c.a, dt, &ra);
        let b = operand(&c.b, dt, &rb);
        let got = a.matmul(&b).map_err(|e| TestCaseError::fail(e.to_string()))?;
        check(dt, &got, &a, &b)?;
    }

    /// Larger matrices, so `gemm` packs, tiles and runs on several threads.
    #[test]
    fn large_matmul_matches_reference(
        (c, ra, rb) in case_and_recipes(80),
        dt in proptest::sample::select(vec![DType::F32, DType::F64, DType::F16, DType::I32]),
    ) {
        let a = operand(&c.a, dt, &ra);
        let b = operand(&c.b, dt, &rb);
        let got = a.matmul(&b).map_err(|e| TestCaseError::fail(e.to_string()))?;
        check(dt, &got, &a, &b)?;
    }

    /// `mm`, `bmm` and `dot` agree with `matmul` where they apply.
    #[test]
    fn mm_bmm_dot_match_reference(
        (m, k, n, bs) in (0usize..9, 0usize..9, 0usize..9, 0usize..4),
        r in (recipe(3), recipe(3)),
        dt in proptest::sample::select(DTYPES.to_vec()),
    ) {
        let (ra, rb) = r;
        let a = operand(&[bs, m, k], dt, &ra);
        let b = operand(&[bs, k, n], dt, &rb);
        check(dt, &a.bmm(&b).map_err(|e| TestCaseError::fail(e.to_string()))?, &a, &b)?;
        let a2 = operand(&[m, k], dt, &Recipe { dims: ra.dims[1..].to_vec(), ..ra.clone() });
        let b2 = operand(&[k, n], dt, &Recipe { dims: rb.dims[1..].to_vec(), ..rb.clone() });
        check(dt, &a2.mm(&b2).map_err(|e| TestCaseError::fail(e.to_string()))?, &a2, &b2)?;
        let a1 = operand(&[k], dt, &Recipe { dims: ra.dims[2..].to_vec(), ..ra.clone() });
        let b1 = operand(&[k], dt, &Recipe { dims: rb.dims[2..].to_vec(), ..rb });
        check(dt, &a1.dot(&b1).map_err(|e| TestCaseError::fail(e.to_string()))?, &a1, &b1)?;
        check(dt, &a2.mv(&b1).map_err(|e| TestCaseError::fail(e.to_string()))?, &a2, &b1)?;
    }
}

// ---------------------------------------------------------------------------------------
// Fixed cases
// ---------------------------------------------------------------------------------------

fn f32s(v: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_slice(v, shape).unwrap()
}

fn arange(n: i64, shape: &[i64], dt: DType) -> Tensor {
    Tensor::arange(0, n, 1, dt).unwrap().view(shape).unwrap()
}

#[test]
fn small_products_by_hand() {
    let a = arange(6, &[2, 3], DType::F32);
    // a·aᵀ through the transposed view (strides (1, 3)): no copy is made of aᵀ.
    let p = a.matmul(&a.t().unwrap()).unwrap();
    assert_eq!(p.to_vec::<f32>().unwrap(), vec![5.0, 14.0, 14.0, 50.0]);
    // Flipped rows: negative row stride.
    let p = a.flip(&[0]).unwrap().matmul(&a.t().unwrap()).unwrap();
    assert_eq!(p.to_vec::<f32>().unwrap(), vec![14.0, 50.0, 5.0, 14.0]);
    // 1-D · 1-D is a 0-d dot product.
    let v = f32s(&[1.0, 2.0, 3.0], &[3]);
    let d = v.matmul(&v).unwrap();
    assert_eq!(d.shape(), &[] as &[usize]);
    assert_eq!(d.to_vec::<f32>().unwrap(), vec![14.0]);
    // 1-D promotion on either side.
    assert_eq!(
        a.matmul(&v).unwrap().to_vec::<f32>().unwrap(),
        vec![8.0, 26.0]
    );
    let w = f32s(&[1.0, 1.0], &[2]);
    assert_eq!(
        w.matmul(&a).unwrap().to_vec::<f32>().unwrap(),
        vec![3.0, 5.0, 7.0]
    );
    // Broadcast batch: [2, 1, 2, 3] · [4, 3, 1] → [2, 4, 2, 1].
    let x = arange(12, &[2, 1, 2, 3], DType::I64);
    let y = arange(12, &[4, 3, 1], DType::I64);
    let z = x.matmul(&y).unwrap();
    assert_eq!(z.shape(), &[2, 4, 2, 1]);
    assert_eq!(
        z.get::<i64>(&[1, 3, 1, 0]).unwrap(),
        9 * 9 + 10 * 10 + 11 * 11
    );
    // Integer products wrap.
    let big = Tensor::from_vec(vec![i32::MAX, 2], &[2]).unwrap();
    let r = big
        .dot(&Tensor::from_vec(vec![2i32, 1], &[2]).unwrap())
        .unwrap();
    assert_eq!(
        r.to_vec::<i32>().unwrap(),
        vec![i32::MAX.wrapping_mul(2).wrapping_add(2)]
    );
}

/// Half-precision products accumulate in f32: in f16, `2048 + 1` rounds back to 2048, so
/// an f16 accumulator would stop at 2048.
#[test]
fn half_products_accumulate_in_f32() {
    for dt in [DType::F16, DType::BF16] {
        let v = Tensor::ones(&[4096], dt).unwrap();
        let as_f32 = |t: Tensor| t.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(as_f32(v.dot(&v).unwrap()), vec![4096.0], "{dt}");
        let m = Tensor::ones(&[3, 4096], dt).unwrap();
        assert_eq!(as_f32(m.matmul(&v).unwrap()), vec![4096.0; 3], "{dt}");
        assert_eq!(
            as_f32(v.matmul(&m.t().unwrap()).unwrap()),
            vec![4096.0; 3],
            "{dt}"
        );
        let p = m.matmul(&m.t().unwrap()).unwrap();
        assert_eq!(as_f32(p), vec![4096.0; 9], "{dt}");
    }
}

#[test]
fn zero_sizes() {
    let a = Tensor::ones(&[3, 0], DType::F32).unwrap();
    let b = Tensor::ones(&[0, 4], DType::F32).unwrap();
    let p = a.matmul(&b).unwrap();
    assert_eq!(p.shape(), &[3, 4]);
    assert_eq!(p.to_vec::<f32>().unwrap(), vec![0.0; 12]);
    let p = b.t().unwrap().matmul(&a.t().unwrap()).unwrap();
    assert_eq!(p.shape(), &[4, 3]);
    let e = Tensor::ones(&[0, 2, 3], DType::I32).unwrap();
    let f = Tensor::ones(&[3, 5], DType::I32).unwrap();
    assert_eq!(e.matmul(&f).unwrap().shape(), &[0, 2, 5]);
    let v = Tensor::ones(&[0], DType::F64).unwrap();
    assert_eq!(v.dot(&v).unwrap().to_vec::<f64>().unwrap(), vec![0.0]);
}

#[test]
fn outer_promotes_like_pytorch() {
    let a = Tensor::from_vec(vec![1i32, 2, 3], &[3]).unwrap();
    let b = f32s(&[0.5, 2.0], &[2]);
    let o = a.outer(&b).unwrap();
    assert_eq!(o.dtype(), DType::F32);
    assert_eq!(o.shape(), &[3, 2]);
    assert_eq!(
        o.to_vec::<f32>().unwrap(),
        vec![0.5, 2.0, 1.0, 4.0, 1.5, 6.0]
    );
    let t = Tensor::from_vec(vec![true, false], &[2]).unwrap();
    let o = t.outer(&t.flip(&[0]).unwrap()).unwrap();
    assert_eq!(o.to_vec::<bool>().unwrap(), vec![false, true, false, false]);
    let e = arange(4, &[2, 2], DType::F32).outer(&b).unwrap_err();
    assert_eq!(
        e.to_string(),
        "outer: Expected 1-D argument self, but got 2-D"
    );
}

fn err(r: strata::Result<Tensor>) -> strata::Error {
    r.expect_err("expected an error")
}

#[test]
fn error_texts() {
    let z = |s: &[usize], dt: DType| Tensor::zeros(s, dt).unwrap();
    let (f, d) = (DType::F32, DType::F64);
    let e = err(z(&[2, 3], f).matmul(&z(&[4, 5], f)));
    assert_eq!(e.kind(), ErrorKind::Shape);
    assert_eq!(
        e.to_string(),
        "matmul: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"
    );
    let e = err(z(&[3], f).matmul(&z(&[4, 5], f)));
    assert!(e.to_string().ends_with("(1x3 and 4x5)"), "{e}");
    let e = err(z(&[2, 3], f).matmul(&z(&[4], f)));
    assert!(
        e.to_string()
            .ends_with("size mismatch, got input (2), mat (2x3), vec (4)"),
        "{e}"
    );
    let e = err(z(&[2, 2, 3], f).matmul(&z(&[4, 5], f)));
    assert!(e.to_string().ends_with("(4x3 and 4x5)"), "{e}");
    let e = err(z(&[2, 2, 3], f).matmul(&z(&[2, 4, 5], f)));
    assert_eq!(
        e.to_string(),
        "matmul: Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4]."
    );
    let e = err(z(&[2, 2, 3], f).matmul(&z(&[3, 3, 5], f)));
    assert_eq!(e.kind(), ErrorKind::Shape);
    assert!(
        e.to_string()
            .contains("The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"),
        "{e}"
    );
    let e = err(z(&[], f).matmul(&z(&[2, 2], f)));
    assert_eq!(
        e.to_string(),
        "matmul: both arguments to matmul need to be at least 1D, but they are 0D and 2D"
    );
    let e = err(z(&[2, 2, 3], f).bmm(&z(&[2, 4, 5], f)));
    assert_eq!(
        e.to_string(),
        "bmm: Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4]."
    );
    let e = err(z(&[2, 2, 3], f).bmm(&z(&[3, 3, 5], f)));
    assert!(
        e.to_string().ends_with("to be: [2, 3] but got: [3, 3]."),
        "{e}"
    );
    assert!(err(z(&[2, 3], f).bmm(&z(&[2, 3, 3], f)))
        .to_string()
        .ends_with("batch1 must be a 3D tensor"));
    assert!(err(z(&[2, 3], f).mm(&z(&[3], f)))
        .to_string()
        .ends_with("mat2 must be a matrix"));
    let e = err(z(&[2, 2], f).dot(&z(&[2, 2], f)));
    assert_eq!(
        e.to_string(),
        "dot: 1D tensors expected, but got 2D and 2D tensors"
    );
    let e = err(z(&[3], f).dot(&z(&[4], f)));
    assert!(e.to_string().ends_with(
        "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements, but got 3 and 4 elements respectively"
    ));
    // Dtypes: no promotion, and no bool.
    let e = err(z(&[2, 3], f).matmul(&z(&[3, 2], d)));
    assert_eq!(e.kind(), ErrorKind::DType);
    assert!(
        e.to_string()
            .ends_with("mat1 and mat2 must have the same dtype, but got Float and Double"),
        "{e}"
    );
    let e = err(z(&[2, 2, 3], f).bmm(&z(&[2, 3, 2], d)));
    assert!(
        e.to_string()
            .ends_with("expected scalar type Float but found Double"),
        "{e}"
    );
    let e = err(z(&[2, 2, 3], d).matmul(&z(&[2, 3, 2], f)));
    assert!(
        e.to_string()
            .ends_with("expected scalar type Double but found Float"),
        "{e}"
    );
    let e = err(z(&[3], f).dot(&z(&[3], DType::BF16)));
    assert!(e
        .to_string()
        .ends_with("dot : expected both vectors to have same dtype, but found Float and BFloat16"));
    let b = DType::Bool;
    let e = err(z(&[2, 2], b).matmul(&z(&[2, 2], b)));
    assert_eq!(e.kind(), ErrorKind::DType);
    assert!(e
        .to_string()
        .ends_with("\"addmm_impl_cpu_\" not implemented for 'Bool'"));
    assert!(err(z(&[1, 2, 2], b).bmm(&z(&[1, 2, 2], b)))
        .to_string()
        .ends_with("\"bmm\" not implemented for 'Bool'"));
    assert!(err(z(&[2], b).dot(&z(&[2], b)))
        .to_string()
        .ends_with("\"dot\" not implemented for 'Bool'"));
}

#[test]
fn conflicting_borrow_is_an_error() {
    let a = arange(4, &[2, 2], DType::F32);
    let guard = a.write_slice::<f32>().unwrap();
    let e = err(a.matmul(&a));
    assert_eq!(e.kind(), ErrorKind::Borrow);
    drop(guard);
    assert_eq!(
        a.matmul(&a).unwrap().to_vec::<f32>().unwrap(),
        vec![2.0, 3.0, 6.0, 11.0]
    );
}

fn dl(step: i64, flip: bool, expand: bool) -> DimLayout {
    DimLayout { step, flip, expand }
}

/// Many small matrices (parallel over the batch) and one big product (parallel inside
/// gemm), with a broadcast operand, against the reference.
#[test]
fn parallel_paths() {
    let a = operand(
        &[2, 200, 8, 9],
        DType::F32,
        &Recipe {
            dims: vec![
                dl(-3, false, false),
                dl(1, true, false),
                dl(2, false, false),
                dl(1, true, false),
            ],
            transposed: true,
            seed: 7,
        },
    );
    let b = operand(
        &[200, 9, 10],
        DType::F32,
        &Recipe {
            dims: vec![
                dl(1, false, true),
                dl(1, false, false),
                dl(-3, false, false),
            ],
            transposed: false,
            seed: 8,
        },
    );
    check(DType::F32, &a.matmul(&b).unwrap(), &a, &b).unwrap();
    let x = operand(
        &[130, 120],
        DType::F64,
        &Recipe {
            dims: vec![dl(1, true, false); 2],
            transposed: true,
            seed: 9,
        },
    );
    let y = Tensor::rand(&[120, 140], DType::F64, 3).unwrap();
    check(DType::F64, &x.matmul(&y).unwrap(), &x, &y).unwrap();
    let xi = operand(
        &[200, 90],
        DType::I64,
        &Recipe {
            dims: vec![dl(2, true, false); 2],
            transposed: true,
            seed: 10,
        },
    );
    let yi = operand(
        &[90, 70],
        DType::I64,
        &Recipe {
            dims: vec![dl(1, false, false); 2],
            transposed: true,
            seed: 11,
        },
    );
    check(DType::I64, &xi.matmul(&yi).unwrap(), &xi, &yi).unwrap();
}

/// One product with few rows and many columns is split into a column band per thread
/// (`kernel/matmul.rs`): columns not a multiple of the band width, a transposed or flipped
/// right operand and a stepped left one, on pools of 1–3 threads, against the reference.
#[test]
fn few_row_products_split_into_column_bands() {
    let mut rng = Rng(7);
    for threads in 1..=3 {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        for &(m, k, n) in &[
            (64usize, 784usize, 256usize),
            (5, 1000, 1001),
            (100, 300, 333),
        ] {
            let a = base(&[2 * m, k], DType::F32, &mut rng)
                .slice(0, None, None, 2)
                .unwrap();
            let bt = base(&[n, k], DType::F32, &mut rng);
            for b in [bt.t().unwrap(), bt.t().unwrap().flip(&[1]).unwrap()] {
                let got = pool.install(|| a.matmul(&b)).unwrap();
                check(DType::F32, &got, &a, &b).unwrap();
            }
        }
    }
}

/// 1-D `dot` (a product of one row: four sets of partial sums, read-ahead) at every
/// length around its 64-element step and long ones, contiguous, strided and flipped
/// operands, float32 and float64: small integers, so every association gives the exact
/// sum, compared with an integer model; and `(1, k) @ v` gives the same.
#[test]
fn dot_of_one_row_every_length() {
    let mut lens: Vec<usize> = (0..=200).collect();
    lens.extend([255, 256, 257, 1023, 1024, 1025, 4095, 4096, 4097, 5000]);
    let mut seed = 7u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % 17) as i64 - 8
    };
    for &k in &lens {
        let a: Vec<i64> = (0..2 * k).map(|_| next()).collect();
        let b: Vec<i64> = (0..2 * k).map(|_| next()).collect();
        for dt in [DType::F32, DType::F64] {
            let ta = Tensor::from_vec(a.iter().map(|&v| v as f64).collect(), &[2 * k])
                .unwrap()
                .to_dtype(dt)
                .unwrap();
            let tb = Tensor::from_vec(b.iter().map(|&v| v as f64).collect(), &[2 * k])
                .unwrap()
                .to_dtype(dt)
                .unwrap();
            let as_f64 = |t: Tensor| t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
            // Contiguous halves.
            let (x, y) = (
                ta.narrow(0, 0, k as i64).unwrap(),
                tb.narrow(0, k as i64, k as i64).unwrap(),
            );
            let want: i64 = (0..k).map(|i| a[i] * b[k + i]).sum();
            assert_eq!(as_f64(x.dot(&y).unwrap()), vec![want as f64], "{dt} k={k}");
            let row = x.unsqueeze(0).unwrap();
            assert_eq!(
                as_f64(row.matmul(&y).unwrap()),
                vec![want as f64],
                "{dt} k={k} row"
            );
            // Every second element, and flipped.
            let xs = ta.slice(0, None, None, 2).unwrap();
            let ys = tb.flip(&[0]).unwrap().narrow(0, 0, k as i64).unwrap();
            let want: i64 = (0..k).map(|i| a[2 * i] * b[2 * k - 1 - i]).sum();
            assert_eq!(
                as_f64(xs.dot(&ys).unwrap()),
                vec![want as f64],
                "{dt} k={k} strided"
            );
        }
    }
}
