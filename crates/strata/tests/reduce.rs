//! Reductions and scans against a naive reference.
//!
//! The reference reads the input through `contiguous()` + `to_vec` and computes every
//! result with plain row-major index arithmetic in `f64` (or wrapping `i64` for integer
//! sums and products). Inputs are random shapes (0-d and empty dims included) seen
//! through random views: permutations, steps, flips (negative strides), narrows and
//! broadcast (stride-0) dims. Then: dtype rules, error texts, special values, accuracy of
//! large float sums, and determinism across thread pools.

mod common;

use common::{ravel, unravel, Rng};
use proptest::prelude::*;
use strata::{DType, ErrorKind, Tensor};

// ---------------------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------------------

/// Values the input is filled with.
#[derive(Debug, Clone, Copy)]
enum Values {
    /// Small integers in [-4, 4] (exact in every dtype, sums exact in f16/bf16 too).
    Small,
    /// -1, 1 or 2: products never lose precision and only grow in magnitude.
    ForProd,
    /// Reals in [-3, 3) (float tests).
    Real,
}

/// A view of a fresh tensor: `base` of shape `shape`, then `views` applied (each
/// `(kind, a, b)` taken modulo what applies).
#[derive(Debug, Clone)]
struct Input {
    shape: Vec<usize>,
    views: Vec<(u8, u8, u8)>,
    dtype: DType,
    seed: u64,
}

fn build(inp: &Input, values: Values) -> Tensor {
    let n: usize = inp.shape.iter().product();
    let mut rng = Rng(inp.seed);
    let data: Vec<f64> = (0..n)
        .map(|_| {
            let r = rng.next();
            match values {
                Values::Small => (r % 9) as f64 - 4.0,
                Values::ForProd => [-1.0, 1.0, 2.0][(r % 3) as usize],
                Values::Real => (r % 6000) as f64 / 1000.0 - 3.0,
            }
        })
        .collect();
    let mut t = Tensor::from_vec(data, &inp.shape)
        .unwrap()
        .to_dtype(inp.dtype)
        .unwrap();
    for &(kind, a, b) in &inp.views {
        let nd = t.ndim();
        let next = match kind % 6 {
            0 if nd >= 2 => {
                // A rotation of the dims (a permutation).
                let r = a as usize % nd;
                let perm: Vec<i64> = (0..nd).map(|k| ((k + r) % nd) as i64).collect();
                t.permute(&perm)
            }
            1 if nd >= 1 => t.flip(&[(a as usize % nd) as i64]),
            2 if nd >= 1 => {
                let step = 2 + (b % 2) as i64;
                let step = if a % 3 == 0 { -step } else { step };
                t.slice((a as usize % nd) as i64, None, None, step)
            }
            3 if nd < 5 => {
                // A broadcast dim inserted at `a`, of size 1..=3.
                let pos = a as usize % (nd + 1);
                let u = t.unsqueeze(pos as i64).unwrap();
                let mut sizes: Vec<i64> = u.shape().iter().map(|&s| s as i64).collect();
                sizes[pos] = 1 + (b % 3) as i64;
                u.expand(&sizes)
            }
            4 if nd >= 2 => t.transpose(0, -1),
            5 if nd >= 1 => {
                let d = a as usize % nd;
                let len = t.shape()[d];
                let start = if len == 0 {
                    0
                } else {
                    (b as usize % len) as i64
                };
                t.narrow(d as i64, start, len as i64 - start)
            }
            _ => Ok(t.clone()),
        };
        t = next.unwrap();
    }
    t
}

/// The real dtypes (complex ones have their own tests, and no GPU kernels).
const ALL_DTYPES: [DType; 13] = DType::REAL;
const FLOATS: [DType; 4] = [DType::F16, DType::BF16, DType::F32, DType::F64];

fn input(dtypes: &'static [DType]) -> impl Strategy<Value = Input> {
    (
        prop::collection::vec(
            prop_oneof![3 => 1usize..=5, 1 => 0usize..=1, 1 => 6usize..=9],
            0..=4,
        ),
        prop::collection::vec((any::<u8>(), any::<u8>(), any::<u8>()), 0..=3),
        0..dtypes.len(),
        any::<u64>(),
    )
        .prop_map(move |(shape, views, d, seed)| Input {
            shape,
            views,
            dtype: dtypes[d],
            seed,
        })
}

/// A dim list for `nd` dims from random bits: a subset in random order, some negative.
fn dims_from(nd: usize, bits: u8, neg: u8, rev: bool) -> Vec<i64> {
    let mut v: Vec<i64> = (0..nd)
        .filter(|k| bits >> k & 1 == 1)
        .map(|k| {
            if neg >> k & 1 == 1 {
                k as i64 - nd as i64
            } else {
                k as i64
            }
        })
        .collect();
    if rev {
        v.reverse();
    }
    v
}

// ---------------------------------------------------------------------------------------
// The reference
// ---------------------------------------------------------------------------------------

/// The reduction's groups: for each output element (row-major over the keep-dim shape),
/// the row-major input positions folded into it, in order.
fn groups(shape: &[usize], dims: &[i64]) -> (Vec<usize>, Vec<usize>, Vec<Vec<usize>>) {
    let nd = shape.len();
    let mask: Vec<bool> = if dims.is_empty() {
        vec![true; nd]
    } else {
        (0..nd)
            .map(|k| {
                dims.iter()
                    .any(|&d| (if d < 0 { d + nd as i64 } else { d }) as usize == k)
            })
            .collect()
    };
    let keep: Vec<usize> = (0..nd)
        .map(|k| if mask[k] { 1 } else { shape[k] })
        .collect();
    let squeezed: Vec<usize> = (0..nd).filter(|&k| !mask[k]).map(|k| shape[k]).collect();
    let mut g = vec![Vec::new(); keep.iter().product()];
    for flat in 0..shape.iter().product() {
        let mut c = unravel(flat, shape);
        for k in 0..nd {
            if mask[k] {
                c[k] = 0;
            }
        }
        g[ravel(&c, &keep)].push(flat);
    }
    (keep, squeezed, g)
}

fn as_f64(t: &Tensor) -> Vec<f64> {
    t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()
}

fn as_i64(t: &Tensor) -> Vec<i64> {
    t.to_dtype(DType::I64).unwrap().to_vec::<i64>().unwrap()
}

/// Relative precision of a float dtype.
fn eps(dt: DType) -> f64 {
    match dt {
        DType::F16 => 1e-3,
        DType::BF16 => 8e-3,
        DType::F32 => 1e-6,
        _ => 1e-12,
    }
}

fn close(got: f64, want: f64, tol: f64) -> bool {
    (got.is_nan() && want.is_nan()) || got == want || (got - want).abs() <= tol
}

fn check_shape(r: &Tensor, keep: &[usize], squeezed: &[usize], keepdim: bool) {
    assert_eq!(r.shape(), if keepdim { keep } else { squeezed });
    assert!(r.is_contiguous());
}

// ---------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    #[test]
    fn sum_prod_mean_match_reference(
        inp in input(&ALL_DTYPES),
        bits in any::<u8>(), neg in any::<u8>(), rev in any::<bool>(), keepdim in any::<bool>(),
    ) {
        for values in [Values::Small, Values::ForProd] {
            let x = build(&inp, values);
            let dims = dims_from(x.ndim(), bits, neg, rev);
            let (keep, sq, g) = groups(x.shape(), &dims);
            let dt = x.dtype();
            let s = x.sum(&dims, keepdim).unwrap();
            let p = x.prod(&dims, keepdim).unwrap();
            check_shape(&s, &keep, &sq, keepdim);
            check_shape(&p, &keep, &sq, keepdim);
            if dt.is_float() {
                prop_assert_eq!(s.dtype(), dt);
                let xs = as_f64(&x.contiguous().unwrap());
                let (gs, gp) = (as_f64(&s), as_f64(&p));
                for (o, grp) in g.iter().enumerate() {
                    let want: f64 = grp.iter().map(|&i| xs[i]).sum();
                    let abs: f64 = grp.iter().map(|&i| xs[i].abs()).sum();
                    prop_assert!(close(gs[o], want, abs * eps(dt)), "sum {} vs {} {:?}", gs[o], want, x);
                    let want_p: f64 = grp.iter().map(|&i| xs[i]).product();
                    let want_p = as_f64(&Tensor::scalar(want_p).to_dtype(dt).unwrap())[0];
                    if values.is_prod() {
                        prop_assert!(close(gp[o], want_p, 0.0), "prod {} vs {}", gp[o], want_p);
                    }
                }
                let m = x.mean(&dims, keepdim).unwrap();
                check_shape(&m, &keep, &sq, keepdim);
                let gm = as_f64(&m);
                for (o, grp) in g.iter().enumerate() {
                    let want = grp.iter().map(|&i| xs[i]).sum::<f64>() / grp.len() as f64;
                    prop_assert!(close(gm[o], want, 4.0 * eps(dt) * want.abs().max(1.0)), "mean {} vs {}", gm[o], want);
                }
            } else {
                prop_assert_eq!(s.dtype(), DType::I64);
                prop_assert_eq!(p.dtype(), DType::I64);
                let xs = as_i64(&x.contiguous().unwrap());
                let (gs, gp) = (s.to_vec::<i64>().unwrap(), p.to_vec::<i64>().unwrap());
                for (o, grp) in g.iter().enumerate() {
                    let want = grp.iter().fold(0i64, |a, &i| a.wrapping_add(xs[i]));
                    prop_assert_eq!(gs[o], want);
                    let want = grp.iter().fold(1i64, |a, &i| a.wrapping_mul(xs[i]));
                    prop_assert_eq!(gp[o], want);
                }
                prop_assert!(x.mean(&dims, keepdim).is_err());
            }
        }
    }

    #[test]
    fn extremes_and_logicals_match_reference(
        inp in input(&ALL_DTYPES),
        bits in any::<u8>(), neg in any::<u8>(), rev in any::<bool>(), keepdim in any::<bool>(),
    ) {
        let x = build(&inp, Values::Small);
        let dims = dims_from(x.ndim(), bits, neg, rev);
        let (keep, sq, g) = groups(x.shape(), &dims);
        let xs = as_f64(&x.contiguous().unwrap());
        let nd = x.ndim() as i64;
        let empty_group = x.numel() == 0
            && (dims.is_empty() || dims.iter().any(|&d| x.shape()[d.rem_euclid(nd) as usize] == 0));
        for (max, r) in [(true, x.amax(&dims, keepdim)), (false, x.amin(&dims, keepdim))] {
            if empty_group {
                let e = r.unwrap_err();
                prop_assert!(e.to_string().contains("Expected reduction dim"), "{}", e);
                continue;
            }
            let r = r.unwrap();
            prop_assert_eq!(r.dtype(), x.dtype());
            check_shape(&r, &keep, &sq, keepdim);
            let got = as_f64(&r);
            for (o, grp) in g.iter().enumerate() {
                let it = grp.iter().map(|&i| xs[i]);
                let want = if max { it.fold(f64::MIN, f64::max) } else { it.fold(f64::MAX, f64::min) };
                prop_assert_eq!(got[o], want);
            }
        }
        for (all, r) in [(true, x.all(&dims, keepdim).unwrap()), (false, x.any(&dims, keepdim).unwrap())] {
            check_shape(&r, &keep, &sq, keepdim);
            prop_assert_eq!(r.dtype(), if x.dtype() == DType::U8 { DType::U8 } else { DType::Bool });
            let got = as_f64(&r);
            for (o, grp) in g.iter().enumerate() {
                let want = if all { grp.iter().all(|&i| xs[i] != 0.0) } else { grp.iter().any(|&i| xs[i] != 0.0) };
                prop_assert_eq!(got[o], want as u8 as f64);
            }
        }
        if x.numel() > 0 {
            let (m, n) = (x.max().unwrap(), x.min().unwrap());
            prop_assert_eq!(m.shape(), &[] as &[usize]);
            prop_assert_eq!(as_f64(&m)[0], xs.iter().copied().fold(f64::MIN, f64::max));
            prop_assert_eq!(as_f64(&n)[0], xs.iter().copied().fold(f64::MAX, f64::min));
        } else {
            prop_assert!(x.max().is_err() && x.min().is_err());
        }
    }

    #[test]
    fn arg_reductions_match_reference(
        inp in input(&ALL_DTYPES), d in any::<u8>(), negd in any::<bool>(), keepdim in any::<bool>(),
    ) {
        let x = build(&inp, Values::Small);
        let nd = x.ndim();
        let xs = as_f64(&x.contiguous().unwrap());
        // Over one dim.
        let dim = (d as usize % nd.max(1)) as i64 - if negd { nd.max(1) as i64 } else { 0 };
        let (keep, sq, g) = groups(x.shape(), &[dim]);
        let len = if nd == 0 { 1 } else { x.shape()[dim.rem_euclid(nd as i64) as usize] };
        let empty = x.numel() == 0 && len == 0;
        for max in [true, false] {
            let r = if max { x.max_dim(dim, keepdim) } else { x.min_dim(dim, keepdim) };
            let a = if max { x.argmax(Some(dim), keepdim) } else { x.argmin(Some(dim), keepdim) };
            if empty {
                prop_assert!(r.unwrap_err().to_string().contains("to have non-zero size"));
                prop_assert!(a.unwrap_err().to_string().contains("to have non-zero size"));
                continue;
            }
            let (v, i) = r.unwrap();
            let a = a.unwrap();
            check_shape(&v, &keep, &sq, keepdim);
            check_shape(&i, &keep, &sq, keepdim);
            prop_assert_eq!(v.dtype(), x.dtype());
            prop_assert_eq!(i.dtype(), DType::I64);
            let (gv, gi, ga) = (as_f64(&v), i.to_vec::<i64>().unwrap(), a.to_vec::<i64>().unwrap());
            prop_assert_eq!(&gi, &ga);
            for (o, grp) in g.iter().enumerate() {
                prop_assert_eq!(grp.len(), len);
                let mut best = 0;
                for (k, &e) in grp.iter().enumerate() {
                    if (max && xs[e] > xs[grp[best]]) || (!max && xs[e] < xs[grp[best]]) {
                        best = k;
                    }
                }
                prop_assert_eq!(gi[o], best as i64);
                prop_assert_eq!(gv[o], xs[grp[best]]);
            }
        }
        // Flattened.
        for max in [true, false] {
            let a = if max { x.argmax(None, keepdim) } else { x.argmin(None, keepdim) };
            if x.numel() == 0 {
                prop_assert!(a.is_err());
                continue;
            }
            let a = a.unwrap();
            let want_shape = if keepdim { vec![1; nd] } else { vec![] };
            prop_assert_eq!(a.shape(), want_shape.as_slice());
            let mut best = 0;
            for (k, &v) in xs.iter().enumerate() {
                if (max && v > xs[best]) || (!max && v < xs[best]) {
                    best = k;
                }
            }
            prop_assert_eq!(a.to_vec::<i64>().unwrap()[0], best as i64);
        }
    }

    #[test]
    fn var_std_logsumexp_match_reference(
        inp in input(&FLOATS),
        bits in any::<u8>(), neg in any::<u8>(), rev in any::<bool>(), keepdim in any::<bool>(),
        corr in 0u8..3,
    ) {
        let x = build(&inp, Values::Real);
        let dims = dims_from(x.ndim(), bits, neg, rev);
        let (keep, sq, g) = groups(x.shape(), &dims);
        let xs = as_f64(&x.contiguous().unwrap());
        let dt = x.dtype();
        let c = corr as f64;
        let v = x.var_correction(&dims, c, keepdim).unwrap();
        let s = x.std_correction(&dims, c, keepdim).unwrap();
        let l = x.logsumexp(&dims, keepdim).unwrap();
        for r in [&v, &s, &l] {
            check_shape(r, &keep, &sq, keepdim);
            prop_assert_eq!(r.dtype(), dt);
        }
        let (gv, gs, gl) = (as_f64(&v), as_f64(&s), as_f64(&l));
        for (o, grp) in g.iter().enumerate() {
            let n = grp.len() as f64;
            let mean = grp.iter().map(|&i| xs[i]).sum::<f64>() / n;
            let ss: f64 = grp.iter().map(|&i| (xs[i] - mean).powi(2)).sum();
            let want = ss / (n - c).max(0.0);
            let tol = 4.0 * eps(dt) * want.abs().max(1.0);
            prop_assert!(close(gv[o], want, tol), "var {} vs {}", gv[o], want);
            prop_assert!(close(gs[o], want.sqrt(), tol), "std {} vs {}", gs[o], want.sqrt());
            let m = grp.iter().map(|&i| xs[i]).fold(f64::NEG_INFINITY, f64::max);
            let m = if m.is_infinite() { 0.0 } else { m };
            let want = grp.iter().map(|&i| (xs[i] - m).exp()).sum::<f64>().ln() + m;
            prop_assert!(close(gl[o], want, 4.0 * eps(dt) * want.abs().max(1.0)), "lse {} vs {}", gl[o], want);
        }
    }

    #[test]
    fn cumulative_ops_match_reference(inp in input(&ALL_DTYPES), d in any::<u8>(), negd in any::<bool>()) {
        for values in [Values::Small, Values::ForProd] {
            let x = build(&inp, values);
            let nd = x.ndim();
            let dim = (d as usize % nd.max(1)) as i64 - if negd { nd.max(1) as i64 } else { 0 };
            let (_, _, g) = groups(x.shape(), &[dim]);
            let dt = x.dtype();
            let cs = x.cumsum(dim).unwrap();
            let cp = x.cumprod(dim).unwrap();
            let want_dt = if dt.is_float() { dt } else { DType::I64 };
            for r in [&cs, &cp] {
                prop_assert_eq!(r.shape(), x.shape());
                prop_assert_eq!(r.dtype(), want_dt);
            }
            if dt.is_float() {
                let xs = as_f64(&x.contiguous().unwrap());
                let (gs, gp) = (as_f64(&cs), as_f64(&cp));
                for grp in &g {
                    let (mut s, mut p) = (0.0, 1.0);
                    for &e in grp {
                        s += xs[e];
                        p *= xs[e];
                        prop_assert!(close(gs[e], s, eps(dt) * 64.0), "cumsum {} vs {}", gs[e], s);
                        let pw = as_f64(&Tensor::scalar(p).to_dtype(dt).unwrap())[0];
                        if values.is_prod() {
                            prop_assert!(close(gp[e], pw, 0.0), "cumprod {} vs {}", gp[e], pw);
                        }
                    }
                }
            } else {
                let xs = as_i64(&x.contiguous().unwrap());
                let (gs, gp) = (cs.to_vec::<i64>().unwrap(), cp.to_vec::<i64>().unwrap());
                for grp in &g {
                    let (mut s, mut p) = (0i64, 1i64);
                    for &e in grp {
                        s = s.wrapping_add(xs[e]);
                        p = p.wrapping_mul(xs[e]);
                        prop_assert_eq!(gs[e], s);
                        prop_assert_eq!(gp[e], p);
                    }
                }
            }
        }
    }
}

impl Values {
    fn is_prod(self) -> bool {
        matches!(self, Values::ForProd)
    }
}

// ---------------------------------------------------------------------------------------
// Dtypes, errors, special values
// ---------------------------------------------------------------------------------------

#[test]
fn result_dtypes_follow_pytorch() {
    let t = |dt| Tensor::ones(&[2, 3], dt).unwrap();
    for dt in [
        DType::Bool,
        DType::U8,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::U32,
        DType::I64,
    ] {
        assert_eq!(t(dt).sum(&[], false).unwrap().dtype(), DType::I64, "{dt}");
        assert_eq!(t(dt).prod(&[1], false).unwrap().dtype(), DType::I64, "{dt}");
        assert_eq!(t(dt).cumsum(0).unwrap().dtype(), DType::I64, "{dt}");
        assert_eq!(t(dt).amax(&[0], false).unwrap().dtype(), dt);
        assert_eq!(t(dt).argmax(None, false).unwrap().dtype(), DType::I64);
        assert_eq!(t(dt).logsumexp(&[0], false).unwrap().dtype(), DType::F32);
    }
    for dt in [DType::F16, DType::BF16, DType::F32, DType::F64] {
        assert_eq!(t(dt).sum(&[0], true).unwrap().dtype(), dt);
        assert_eq!(t(dt).mean(&[], false).unwrap().dtype(), dt);
        assert_eq!(t(dt).var(&[], false).unwrap().dtype(), dt);
        assert_eq!(t(dt).cumprod(1).unwrap().dtype(), dt);
    }
    assert_eq!(t(DType::F32).all(&[], false).unwrap().dtype(), DType::Bool);
    assert_eq!(t(DType::U8).any(&[], false).unwrap().dtype(), DType::U8);
    let x = Tensor::from_vec(vec![2i32, 3, 4], &[3]).unwrap();
    assert_eq!(x.sum(&[], false).unwrap().item().unwrap().to_f64(), 9.0);
    assert_eq!(x.cumsum(0).unwrap().to_vec::<i64>().unwrap(), vec![2, 5, 9]);
    assert_eq!(
        x.cumprod(-1).unwrap().to_vec::<i64>().unwrap(),
        vec![2, 6, 24]
    );
    // f16 sums accumulate in f32: 4096 ones are exact even though f16 steps by 4 there.
    let h = Tensor::ones(&[4096], DType::F16).unwrap();
    assert_eq!(h.sum(&[], false).unwrap().item().unwrap().to_f64(), 4096.0);
    // Integer sums wrap like i64.
    let big = Tensor::from_vec(vec![i64::MAX, 1], &[2]).unwrap();
    assert_eq!(
        big.sum(&[], false).unwrap().to_vec::<i64>().unwrap(),
        vec![i64::MIN]
    );
}

#[track_caller]
fn err<T: std::fmt::Debug>(r: strata::Result<T>, kind: ErrorKind, text: &str) {
    let e = r.unwrap_err();
    assert!(
        e.to_string().contains(text),
        "{e}\n  does not contain\n{text}"
    );
    assert_eq!(e.kind(), kind, "{e}");
}

#[test]
fn error_texts_follow_pytorch() {
    let x = Tensor::zeros(&[2, 3], DType::F32).unwrap();
    err(
        x.sum(&[0, -2], false),
        ErrorKind::Value,
        "dim 0 appears multiple times in the list of dims",
    );
    err(
        x.amax(&[1, 1], false),
        ErrorKind::Value,
        "dim 1 appears multiple times in the list of dims",
    );
    err(
        x.sum(&[2], false),
        ErrorKind::Index,
        "Dimension out of range (expected to be in range of [-2, 1], but got 2)",
    );
    err(x.cumsum(-3), ErrorKind::Index, "Dimension out of range");
    err(
        x.argmax(Some(5), false),
        ErrorKind::Index,
        "Dimension out of range",
    );
    let i = Tensor::zeros(&[2], DType::I64).unwrap();
    err(i.mean(&[], false), ErrorKind::DType, "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Long");
    let i32s = Tensor::zeros(&[2], DType::I32).unwrap();
    err(i32s.mean(&[0], false), ErrorKind::DType, "Got: Int");
    err(
        i.var(&[], false),
        ErrorKind::DType,
        "std and var only support floating point and complex dtypes",
    );
    let e = Tensor::zeros(&[0, 3], DType::F32).unwrap();
    err(
        e.max_dim(0, false),
        ErrorKind::Index,
        "max(): Expected reduction dim 0 to have non-zero size.",
    );
    err(
        e.min_dim(-2, false),
        ErrorKind::Index,
        "min(): Expected reduction dim 0 to have non-zero size.",
    );
    err(
        e.amax(&[0], false),
        ErrorKind::Index,
        "amax(): Expected reduction dim 0 to have non-zero size.",
    );
    err(
        e.amin(&[1, 0], true),
        ErrorKind::Index,
        "amin(): Expected reduction dim 0 to have non-zero size.",
    );
    err(
        e.argmax(Some(0), false),
        ErrorKind::Index,
        "argmax(): Expected reduction dim 0 to have non-zero size.",
    );
    err(
        e.amax(&[], false),
        ErrorKind::Shape,
        "amax(): Expected reduction dim to be specified for input.numel() == 0.",
    );
    err(
        e.max(),
        ErrorKind::Shape,
        "max(): Expected reduction dim to be specified for input.numel() == 0.",
    );
    err(
        e.argmin(None, false),
        ErrorKind::Index,
        "argmin(): Expected reduction dim to be specified for input.numel() == 0.",
    );
    // Reducing a non-empty dim of an empty tensor is fine.
    assert_eq!(e.amax(&[1], false).unwrap().shape(), &[0]);
    assert_eq!(e.max_dim(1, true).unwrap().1.shape(), &[0, 1]);
    // Identities over empty dims; mean of nothing is NaN.
    assert_eq!(as_f64(&e.sum(&[0], false).unwrap()), vec![0.0; 3]);
    assert_eq!(as_f64(&e.prod(&[0], false).unwrap()), vec![1.0; 3]);
    assert!(as_f64(&e.mean(&[0], false).unwrap())
        .iter()
        .all(|v| v.is_nan()));
    assert_eq!(as_f64(&e.all(&[], false).unwrap()), vec![1.0]);
    assert_eq!(as_f64(&e.any(&[], false).unwrap()), vec![0.0]);
    assert_eq!(
        as_f64(&e.logsumexp(&[0], false).unwrap()),
        vec![f64::NEG_INFINITY; 3]
    );
    // A held write borrow makes a reduction fail, not deadlock.
    let w = x.write_slice::<f32>().unwrap();
    err(x.sum(&[], false), ErrorKind::Borrow, "already borrowed");
    drop(w);
}

#[test]
fn special_values() {
    let nan = f32::NAN;
    let x = Tensor::from_vec(vec![1.0f32, nan, 3.0, nan, -1.0, 0.0], &[2, 3]).unwrap();
    assert!(as_f64(&x.sum(&[], false).unwrap())[0].is_nan());
    let s = as_f64(&x.sum(&[1], false).unwrap());
    assert!(s[0].is_nan() && s[1].is_nan());
    let m = as_f64(&x.amax(&[0], false).unwrap());
    assert!(m[0].is_nan() && m[1].is_nan() && m[2] == 3.0);
    let m = as_f64(&x.amin(&[0], false).unwrap());
    assert!(m[0].is_nan() && m[1].is_nan() && m[2] == 0.0);
    assert_eq!(
        x.argmax(None, false).unwrap().to_vec::<i64>().unwrap(),
        vec![1]
    );
    assert_eq!(
        x.argmin(None, false).unwrap().to_vec::<i64>().unwrap(),
        vec![1]
    );
    assert_eq!(
        x.argmax(Some(0), false).unwrap().to_vec::<i64>().unwrap(),
        vec![1, 0, 0]
    );
    assert_eq!(
        x.argmax(Some(1), false).unwrap().to_vec::<i64>().unwrap(),
        vec![1, 0]
    );
    let (v, i) = x.max_dim(1, false).unwrap();
    assert!(as_f64(&v).iter().all(|v| v.is_nan()));
    assert_eq!(i.to_vec::<i64>().unwrap(), vec![1, 0]);
    assert!(as_f64(&x.max().unwrap())[0].is_nan());
    assert_eq!(as_f64(&x.any(&[], false).unwrap()), vec![1.0]);
    // First occurrence on ties, also along a flipped (negative-stride) dim.
    let t = Tensor::from_vec(vec![5i64, 1, 5, 1], &[4]).unwrap();
    assert_eq!(
        t.argmax(None, false).unwrap().to_vec::<i64>().unwrap(),
        vec![0]
    );
    assert_eq!(
        t.flip(&[0])
            .unwrap()
            .argmax(Some(0), false)
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![1]
    );
    assert_eq!(
        t.flip(&[0])
            .unwrap()
            .argmin(Some(0), false)
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![0]
    );
    // logsumexp with infinities, as PyTorch.
    let inf = f64::INFINITY;
    let l = Tensor::from_vec(vec![-inf, -inf, inf, 1.0, 1000.0, 1000.0], &[3, 2]).unwrap();
    let got = as_f64(&l.logsumexp(&[1], false).unwrap());
    assert_eq!(got[0], -inf);
    assert_eq!(got[1], inf);
    assert!((got[2] - (1000.0 + 2f64.ln())).abs() < 1e-9);
    // var of one element (correction 1) is NaN; with correction 0 it is 0.
    let one = Tensor::from_vec(vec![3.0f32], &[1]).unwrap();
    assert!(as_f64(&one.var(&[], false).unwrap())[0].is_nan());
    assert_eq!(
        as_f64(&one.var_correction(&[], 0.0, false).unwrap())[0],
        0.0
    );
    // 0-d tensors reduce over dim 0 / -1 and keep 0 dims.
    let z = Tensor::scalar(7.5f32);
    assert_eq!(z.sum(&[0], true).unwrap().shape(), &[] as &[usize]);
    assert_eq!(as_f64(&z.sum(&[-1], false).unwrap()), vec![7.5]);
    let (v, i) = z.max_dim(0, false).unwrap();
    assert_eq!(
        (as_f64(&v), i.to_vec::<i64>().unwrap()),
        (vec![7.5], vec![0])
    );
    assert_eq!(as_f64(&z.cumsum(0).unwrap()), vec![7.5]);
    err(
        z.sum(&[1], false),
        ErrorKind::Index,
        "Dimension out of range (expected to be in range of [-1, 0], but got 1)",
    );
}

// ---------------------------------------------------------------------------------------
// Accuracy and determinism of large reductions
// ---------------------------------------------------------------------------------------

/// `n` values near 1 (`1 + k/100000`, `k < 1000`) in f32, and their exact sum. Naive f32
/// accumulation rounds every add the same way once the sum passes 2^22.
fn ones_ish(n: usize) -> (Vec<f32>, f64) {
    let mut rng = Rng(12345);
    let v: Vec<f32> = (0..n)
        .map(|_| 1.0 + rng.below(1000) as f32 / 100_000.0)
        .collect();
    let s = v.iter().map(|&x| x as f64).sum();
    (v, s)
}

#[test]
fn large_float_sums_are_accurate() {
    let n = 10_000_000;
    let (v, want) = ones_ish(n);
    // Naive sequential f32 accumulation is far off at this size.
    let naive: f32 = v.iter().fold(0.0, |a, &x| a + x);
    assert!(
        ((naive as f64 - want) / want).abs() > 1e-3,
        "{naive} vs {want}"
    );
    let x = Tensor::from_vec(v, &[n]).unwrap();
    let rel = |got: f64, want: f64| ((got - want) / want).abs();
    let full = as_f64(&x.sum(&[], false).unwrap())[0];
    assert!(rel(full, want) <= 1e-6, "full {full} vs {want}");
    let mean = as_f64(&x.mean(&[], false).unwrap())[0];
    assert!(rel(mean, want / n as f64) <= 1e-6);
    // Along dim 1 (contiguous runs) and dim 0 (rows folded into a row), and strided.
    let xs = x.to_vec::<f32>().unwrap();
    for (rows, cols) in [(4, n / 4), (n / 4, 4), (1000, n / 1000)] {
        let m = x.view(&[rows as i64, cols as i64]).unwrap();
        let by_col = as_f64(&m.sum(&[0], false).unwrap());
        let by_row = as_f64(&m.sum(&[1], false).unwrap());
        for j in [0, cols / 2, cols - 1] {
            let w: f64 = (0..rows).map(|i| xs[i * cols + j] as f64).sum();
            assert!(
                rel(by_col[j], w) <= 1e-5,
                "dim0 {rows}x{cols} col {j}: {} vs {w}",
                by_col[j]
            );
        }
        for i in [0, rows / 2, rows - 1] {
            let w: f64 = xs[i * cols..(i + 1) * cols].iter().map(|&v| v as f64).sum();
            assert!(
                rel(by_row[i], w) <= 1e-5,
                "dim1 {rows}x{cols} row {i}: {} vs {w}",
                by_row[i]
            );
        }
        let t = m.t().unwrap();
        let w: f64 = (0..rows).map(|i| xs[i * cols] as f64).sum();
        assert!(rel(as_f64(&t.sum(&[1], false).unwrap())[0], w) <= 1e-5);
    }
    // A non-coalescable full reduction (every other column).
    let m = x
        .view(&[(n / 1000) as i64, 1000])
        .unwrap()
        .slice(1, None, None, 2)
        .unwrap();
    let w: f64 = xs.iter().step_by(2).map(|&v| v as f64).sum();
    assert!(rel(as_f64(&m.sum(&[], false).unwrap())[0], w) <= 1e-6);
}

fn bits(t: &Tensor) -> Vec<u64> {
    as_f64(t).iter().map(|v| v.to_bits()).collect()
}

#[test]
fn results_are_deterministic_across_thread_pools() {
    let x = Tensor::randn(&[1500, 2001], DType::F32, 7).unwrap();
    let run = |x: &Tensor| -> Vec<Vec<u64>> {
        let xt = x.t().unwrap();
        vec![
            bits(&x.sum(&[], false).unwrap()),
            bits(&x.sum(&[0], false).unwrap()),
            bits(&x.sum(&[1], false).unwrap()),
            bits(&xt.sum(&[1], false).unwrap()),
            bits(&x.mean(&[0, 1], false).unwrap()),
            bits(&x.var(&[0], false).unwrap()),
            bits(&x.logsumexp(&[1], false).unwrap()),
            bits(&x.prod(&[1], false).unwrap()),
            bits(&x.argmax(Some(0), false).unwrap()),
            bits(&x.cumsum(0).unwrap()),
            bits(&x.view(&[-1]).unwrap().sum(&[0], false).unwrap()),
        ]
    };
    let pool = |n| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .unwrap()
    };
    let one = pool(1).install(|| (run(&x), run(&x)));
    let two = pool(2).install(|| (run(&x), run(&x)));
    assert_eq!(one.0, one.1);
    assert_eq!(two.0, two.1);
    // The association order never depends on the split, so pools agree too.
    assert_eq!(one.0, two.0);
}

/// Checks sum, amax/amin, arg-reductions and cumsum of `x` over `dims` against the
/// reference (float input; sums to a relative tolerance, the rest exactly).
fn check_against_reference(x: &Tensor, dims: &[i64]) {
    let xs = as_f64(&x.contiguous().unwrap());
    let (_, _, g) = groups(x.shape(), dims);
    let s = as_f64(&x.sum(dims, false).unwrap());
    let hi = as_f64(&x.amax(dims, false).unwrap());
    let lo = as_f64(&x.amin(dims, false).unwrap());
    for (o, grp) in g.iter().enumerate() {
        let want: f64 = grp.iter().map(|&i| xs[i]).sum();
        let abs: f64 = grp.iter().map(|&i| xs[i].abs()).sum();
        assert!(
            close(s[o], want, abs * 1e-6),
            "sum {:?} {dims:?}: {} vs {want}",
            x.shape(),
            s[o]
        );
        let nan = grp.iter().any(|&i| xs[i].is_nan());
        let mx = grp.iter().map(|&i| xs[i]).fold(f64::MIN, f64::max);
        let mn = grp.iter().map(|&i| xs[i]).fold(f64::MAX, f64::min);
        assert!(if nan {
            hi[o].is_nan() && lo[o].is_nan()
        } else {
            hi[o] == mx && lo[o] == mn
        });
    }
    if let [d] = dims {
        for max in [true, false] {
            let (v, i) = if max {
                x.max_dim(*d, false)
            } else {
                x.min_dim(*d, false)
            }
            .unwrap();
            let (v, i) = (as_f64(&v), i.to_vec::<i64>().unwrap());
            for (o, grp) in g.iter().enumerate() {
                let mut best = 0;
                for (k, &e) in grp.iter().enumerate() {
                    let (c, b) = (xs[e], xs[grp[best]]);
                    let better = if max { c > b } else { c < b };
                    if better || (c.is_nan() && !b.is_nan()) {
                        best = k;
                    }
                }
                assert_eq!(i[o], best as i64, "arg {:?} dim {d} out {o}", x.shape());
                let w = xs[grp[best]];
                assert!(v[o] == w || (v[o].is_nan() && w.is_nan()));
            }
        }
        let cs = as_f64(&x.cumsum(*d).unwrap());
        for grp in &g {
            let mut acc = 0.0;
            for &e in grp {
                acc += xs[e];
                assert!(
                    close(cs[e], acc, 1e-9 * acc.abs().max(1.0)),
                    "cumsum {} vs {acc}",
                    cs[e]
                );
            }
        }
    }
}

/// Order-insensitive folds over many rows of a kept innermost dim (the vertical driver's
/// leaves of up to 1024 rows): float32 and int32 `amax`/`amin` and `any`/`all` over dim
/// 0 and over dim 1 of a 3-d tensor, against a per-column model, NaN and zeros included.
#[test]
fn vertical_exact_folds_of_many_rows() {
    let mut rng = Rng(4242);
    for &(r, c) in &[
        (17usize, 40usize),
        (100, 33),
        (1000, 70),
        (1025, 5),
        (3000, 17),
    ] {
        let mut xs: Vec<f64> = (0..r * c).map(|_| rng.below(41) as f64 - 20.0).collect();
        xs[rng.below((r * c) as u64) as usize] = f64::NAN;
        for k in 0..c {
            xs[(r - 1) * c + k] = if k % 2 == 0 { 0.0 } else { -0.0 };
        }
        for shape in [vec![r, c], vec![2, r, c]] {
            let dim = shape.len() as i64 - 2;
            let data: Vec<f64> = if shape.len() == 3 {
                xs.iter().chain(&xs).copied().collect()
            } else {
                xs.clone()
            };
            let (_, _, g) = groups(&shape, &[dim]);
            for dt in [DType::F32, DType::I32] {
                let data: Vec<f64> = if dt == DType::F32 {
                    data.clone()
                } else {
                    data.iter()
                        .map(|&v| if v.is_nan() { 7.0 } else { v })
                        .collect()
                };
                let t = Tensor::from_vec(data, &shape)
                    .unwrap()
                    .to_dtype(dt)
                    .unwrap();
                let vals = as_f64(&t.to_dtype(DType::F64).unwrap());
                let hi = as_f64(&t.amax(&[dim], false).unwrap().to_dtype(DType::F64).unwrap());
                let lo = as_f64(&t.amin(&[dim], false).unwrap().to_dtype(DType::F64).unwrap());
                let any = t.any(&[dim], false).unwrap();
                let all = t.all(&[dim], false).unwrap();
                let (any, all) = (
                    as_f64(&any.to_dtype(DType::F64).unwrap()),
                    as_f64(&all.to_dtype(DType::F64).unwrap()),
                );
                for (o, grp) in g.iter().enumerate() {
                    let col: Vec<f64> = grp.iter().map(|&i| vals[i]).collect();
                    let nan = col.iter().any(|v| v.is_nan());
                    let mx = col.iter().copied().fold(f64::MIN, f64::max);
                    let mn = col.iter().copied().fold(f64::MAX, f64::min);
                    let ok = if nan {
                        hi[o].is_nan() && lo[o].is_nan()
                    } else {
                        hi[o] == mx && lo[o] == mn
                    };
                    assert!(
                        ok,
                        "{dt} {shape:?} column {o}: {} {} vs {mx} {mn}",
                        hi[o], lo[o]
                    );
                    assert_eq!(
                        any[o] != 0.0,
                        col.iter().any(|&v| v != 0.0),
                        "{dt} {shape:?} any {o}"
                    );
                    assert_eq!(
                        all[o] != 0.0,
                        col.iter().all(|&v| v != 0.0),
                        "{dt} {shape:?} all {o}"
                    );
                }
            }
        }
    }
}

#[test]
fn medium_shapes_take_every_path() {
    let mut rng = Rng(99);
    let mut data = |n: usize| -> Vec<f32> {
        (0..n)
            .map(|_| rng.below(2001) as f32 / 8.0 - 125.0)
            .collect()
    };
    // Long contiguous runs (blocked arg scans, pairwise trees), narrow rows folded as one
    // stream (width dividing 16), odd widths (row trees), tiny runs (column folds).
    let cases: &[(&[usize], &[i64])] = &[
        (&[5000], &[0]),
        (&[3, 2500], &[1]),
        (&[3, 2500], &[0]),
        (&[2500, 4], &[0]),
        (&[2500, 2], &[0]),
        (&[2500, 16], &[0]),
        (&[2000, 3], &[0]),
        (&[2000, 7], &[-2]),
        (&[3000, 2], &[1]),
        (&[1000, 3], &[1]),
        (&[40, 60, 4], &[0, 1]),
        (&[6, 300, 8], &[1]),
        (&[300, 6, 2], &[0]),
    ];
    for &(shape, dims) in cases {
        let n = shape.iter().product();
        let x = Tensor::from_vec(data(n), shape).unwrap();
        check_against_reference(&x, dims);
        // The same through a flip and a transpose (other strides, other paths).
        check_against_reference(&x.flip(&[0]).unwrap(), dims);
        if shape.len() >= 2 {
            let t = x
                .transpose(0, -1)
                .unwrap()
                .contiguous()
                .unwrap()
                .transpose(0, -1)
                .unwrap();
            check_against_reference(&t, dims);
        }
    }
    // Ties and NaNs deep inside long runs: first occurrence, NaN wins.
    let mut v = vec![0.0f32; 5000];
    v[1700] = 9.0;
    v[3100] = 9.0;
    let x = Tensor::from_vec(v.clone(), &[5000]).unwrap();
    assert_eq!(
        x.argmax(None, false).unwrap().to_vec::<i64>().unwrap(),
        vec![1700]
    );
    v[4000] = f32::NAN;
    v[4500] = f32::NAN;
    let x = Tensor::from_vec(v, &[5000]).unwrap();
    check_against_reference(&x, &[0]);
    assert_eq!(
        x.argmin(Some(0), false).unwrap().to_vec::<i64>().unwrap(),
        vec![4000]
    );
    let x2 = x.view(&[2, 2500]).unwrap();
    check_against_reference(&x2, &[1]);
    check_against_reference(&x2.t().unwrap(), &[0]);
}
