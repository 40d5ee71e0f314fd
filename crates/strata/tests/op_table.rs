//! The elementwise op table (`ops/table.rs`): its consistency, and the ops added through it
//! (values against `std`/closed forms, dtype rules, special values, in-place variants).

use strata::ops::{op_table, Binary, Cost, Ternary, Unary};
use strata::{DType, ErrorKind, Tensor};

fn f64s(v: &[f64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap()
}

fn same_f64(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        let ok = (g.is_nan() && w.is_nan())
            || (g == w && g.is_sign_negative() == w.is_sign_negative())
            || (g - w).abs() <= 4.0 * f64::EPSILON * w.abs();
        assert!(ok, "got {g:?}, want {w:?} (all: {got:?} vs {want:?})");
    }
}

#[test]
fn table_names_are_unique_and_in_place_names_are_name_underscore() {
    let rows: Vec<_> = op_table().collect();
    assert_eq!(
        rows.len(),
        Unary::ALL.len() + Binary::ALL.len() + Ternary::ALL.len()
    );
    let mut seen = std::collections::HashSet::new();
    for r in &rows {
        assert!(seen.insert(r.name), "{} declared twice", r.name);
        if let Some(ip) = r.inplace {
            assert_eq!(ip, format!("{}_", r.name), "in-place name of {}", r.name);
            assert!(seen.insert(ip), "{ip} declared twice");
        }
        assert!((1..=3).contains(&r.arity));
    }
    for (u, r) in Unary::ALL.iter().zip(&rows) {
        assert_eq!(
            (u.name(), u.inplace(), u.cost(), r.arity),
            (r.name, r.inplace, r.cost, 1)
        );
    }
    for b in Binary::ALL {
        assert_eq!(Binary::from_name(b.name()), Some(*b));
        let r = rows.iter().find(|r| r.name == b.name()).unwrap();
        assert_eq!((r.arity, r.inplace, r.cost), (2, b.inplace(), b.cost()));
    }
    assert_eq!(Binary::from_name("sinh"), None);
    // The cost classes that decide parallelism: transcendental vs memory-bound.
    assert_eq!(Unary::Exp.cost(), Cost::Math);
    assert_eq!(Unary::Sinh.cost(), Cost::Math);
    assert_eq!(Unary::Neg.cost(), Cost::Memory);
    assert_eq!(Binary::Pow.cost(), Cost::Math);
    assert_eq!(Binary::Add.cost(), Cost::Memory);
    // Ops without an in-place variant in PyTorch have none here.
    for name in [
        "signbit",
        "isnan",
        "positive",
        "logaddexp",
        "fmax",
        "eq",
        "where",
    ] {
        let r = rows.iter().find(|r| r.name == name).unwrap();
        assert_eq!(r.inplace, None, "{name}");
    }
}

/// A unary `Tensor` method and its `f64` oracle.
type Case = (fn(&Tensor) -> strata::Result<Tensor>, fn(f64) -> f64);

#[test]
fn new_unary_ops_match_std() {
    let xs = [-0.9, -0.5, -0.0, 0.0, 0.25, 0.75, 0.999];
    let t = f64s(&xs);
    let cases: [Case; 8] = [
        (Tensor::sinh, f64::sinh),
        (Tensor::cosh, f64::cosh),
        (Tensor::asin, f64::asin),
        (Tensor::acos, f64::acos),
        (Tensor::atan, f64::atan),
        (Tensor::asinh, f64::asinh),
        (Tensor::atanh, f64::atanh),
        (Tensor::log10, |x| x.abs().log10()),
    ];
    for (k, (op, f)) in cases.into_iter().enumerate() {
        let src = if k == 7 { t.abs().unwrap() } else { t.clone() };
        let want: Vec<f64> = xs.iter().map(|&x| f(x)).collect();
        same_f64(&op(&src).unwrap().to_vec::<f64>().unwrap(), &want);
    }
    // Domain edges.
    let e = f64s(&[1.0, -1.0, 1.5, f64::INFINITY, f64::NAN]);
    let v = e.atanh().unwrap().to_vec::<f64>().unwrap();
    same_f64(
        &v,
        &[
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::NAN,
            f64::NAN,
        ],
    );
    let v = e.acosh().unwrap().to_vec::<f64>().unwrap();
    same_f64(
        &v,
        &[0.0, f64::NAN, 1.5f64.acosh(), f64::INFINITY, f64::NAN],
    );
    // asinh of a huge value does not overflow.
    let v = f64s(&[1e308, -1e308])
        .asinh()
        .unwrap()
        .to_vec::<f64>()
        .unwrap();
    assert!(
        (v[0] - 709.889_355_822_726).abs() < 1e-9 && v[1] == -v[0],
        "{v:?}"
    );
}

#[test]
fn erf_family() {
    let t = f64s(&[0.0, -0.0, 0.5, -1.0, 3.0, 10.0, f64::INFINITY, f64::NAN]);
    let erfc = t.erfc().unwrap().to_vec::<f64>().unwrap();
    assert_eq!(erfc[0], 1.0);
    assert!((erfc[2] - 0.479_500_122_186_953_5).abs() < 1e-16);
    assert!((erfc[4] - 2.209_049_699_858_544e-5).abs() < 1e-19);
    assert!(
        (erfc[5] - 2.088_487_583_762_545e-45).abs() < 1e-58,
        "{}",
        erfc[5]
    );
    assert_eq!(erfc[6], 0.0);
    assert!(erfc[7].is_nan());
    let y = f64s(&[0.0, -0.0, 0.5, -0.9, 0.999_999, 1.0, -1.0, 1.5, f64::NAN]);
    let x = y.erfinv().unwrap().to_vec::<f64>().unwrap();
    assert!(x[0] == 0.0 && x[1] == 0.0 && x[1].is_sign_negative());
    assert!((x[2] - 0.476_936_276_204_469_9).abs() < 1e-15, "{}", x[2]);
    assert_eq!((x[5], x[6]), (f64::INFINITY, f64::NEG_INFINITY));
    assert!(x[7].is_nan() && x[8].is_nan());
    // Round trip through erf.
    let back = Tensor::from_vec(x[2..5].to_vec(), &[3])
        .unwrap()
        .erf()
        .unwrap();
    same_f64(&back.to_vec::<f64>().unwrap(), &[0.5, -0.9, 0.999_999]);
    // Integers promote to float32.
    let i = Tensor::from_vec(vec![0i64, 1], &[2]).unwrap();
    assert_eq!(i.erf().unwrap().dtype(), DType::F32);
}

#[test]
fn fmod_keeps_ints_with_c_semantics_and_refuses_zero_divisors() {
    let a = Tensor::from_vec(vec![-7i32, 7, -7, 7, i32::MIN], &[5]).unwrap();
    let b = Tensor::from_vec(vec![2i32, -2, -2, 2, -1], &[5]).unwrap();
    let r = a.fmod(&b).unwrap();
    assert_eq!(r.dtype(), DType::I32);
    assert_eq!(r.to_vec::<i32>().unwrap(), vec![-1, 1, -1, 1, 0]);
    let z = Tensor::from_vec(vec![1i32, 0, 1, 1, 1], &[5]).unwrap();
    let e = a.fmod(&z).unwrap_err();
    assert!(e.to_string().contains("ZeroDivisionError"), "{e}");
    // In place: nothing is written when refused.
    let c = copy_of(&a);
    assert!(c.fmod_(&z).is_err());
    assert_eq!(c.to_vec::<i32>().unwrap(), a.to_vec::<i32>().unwrap());
    assert!(a.fmod(0).is_err());
    // Floats: C's fmod, the dividend's sign.
    let f = f64s(&[-7.5, 7.5, 1.0, f64::INFINITY]).fmod(2.0).unwrap();
    same_f64(&f.to_vec::<f64>().unwrap(), &[-1.5, 1.5, 1.0, f64::NAN]);
    let f = f64s(&[1.0]).fmod(0.0).unwrap().to_vec::<f64>().unwrap();
    assert!(f[0].is_nan());
    assert!(Tensor::from_vec(vec![true], &[1])
        .unwrap()
        .fmod(true)
        .is_err());
}

/// A copy of `t` in fresh memory.
fn copy_of(t: &Tensor) -> Tensor {
    let c = Tensor::zeros(t.shape(), t.dtype()).unwrap();
    c.copy_(t).unwrap();
    c
}

#[test]
fn binary_dtype_rules() {
    let i = Tensor::from_vec(vec![-3i64, 0, 5], &[3]).unwrap();
    // copysign: integers give float32.
    let c = i.copysign(-1.0).unwrap();
    assert_eq!(c.dtype(), DType::F32);
    assert_eq!(c.to_vec::<f32>().unwrap(), vec![-3.0, -0.0, -5.0]);
    // Float-only ops refuse integers, with PyTorch's text.
    for r in [
        i.hypot(&i),
        i.logaddexp(&i),
        i.nextafter(&i),
        i.logaddexp2(&i),
    ] {
        let e = r.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::DType);
        assert!(e.to_string().contains("not implemented for 'Long'"), "{e}");
    }
    // xlogy promotes.
    assert_eq!(i.xlogy(2).unwrap().dtype(), DType::F32);
    // fmax / fmin keep ints and bool.
    assert_eq!(i.fmax(1).unwrap().to_vec::<i64>().unwrap(), vec![1, 1, 5]);
    let bt = Tensor::from_vec(vec![true, false], &[2]).unwrap();
    assert_eq!(
        bt.fmin(true).unwrap().to_vec::<bool>().unwrap(),
        vec![true, false]
    );
    // heaviside keeps the dtype.
    assert_eq!(
        i.heaviside(7).unwrap().to_vec::<i64>().unwrap(),
        vec![0, 7, 1]
    );
}

#[test]
fn binary_special_values() {
    let nan = f64::NAN;
    let inf = f64::INFINITY;
    let a = f64s(&[nan, 1.0, nan, -0.0, 0.0]);
    let b = f64s(&[1.0, nan, nan, 0.0, -0.0]);
    same_f64(
        &a.fmax(&b).unwrap().to_vec::<f64>().unwrap(),
        &[1.0, 1.0, nan, -0.0, 0.0],
    );
    same_f64(
        &a.fmin(&b).unwrap().to_vec::<f64>().unwrap(),
        &[1.0, 1.0, nan, -0.0, 0.0],
    );
    let l = f64s(&[inf, -inf, 0.0, 1000.0, nan]);
    let m = f64s(&[inf, -inf, 0.0, 1000.0, 0.0]);
    let s = l.logaddexp(&m).unwrap().to_vec::<f64>().unwrap();
    same_f64(
        &s,
        &[
            inf,
            -inf,
            std::f64::consts::LN_2,
            1000.0 + std::f64::consts::LN_2,
            nan,
        ],
    );
    let s = l.logaddexp2(&m).unwrap().to_vec::<f64>().unwrap();
    same_f64(&s, &[inf, -inf, 1.0, 1001.0, nan]);
    let h = f64s(&[3.0, inf, nan, 1e300])
        .hypot(&f64s(&[4.0, nan, inf, 1e300]))
        .unwrap();
    same_f64(
        &h.to_vec::<f64>().unwrap(),
        &[5.0, inf, inf, 1e300 * std::f64::consts::SQRT_2],
    );
    let n = f64s(&[1.0, 1.0, 0.0, -0.0, nan])
        .nextafter(&f64s(&[2.0, 0.0, -1.0, 1.0, 0.0]))
        .unwrap();
    let n = n.to_vec::<f64>().unwrap();
    assert_eq!(n[0], 1.0 + f64::EPSILON);
    assert_eq!(n[1], 1.0 - f64::EPSILON / 2.0);
    assert_eq!(n[2], -f64::from_bits(1));
    assert_eq!(n[3], f64::from_bits(1));
    assert!(n[4].is_nan());
    let x = f64s(&[0.0, 0.0, 2.0, -1.0])
        .xlogy(&f64s(&[0.0, nan, 3.0, 0.0]))
        .unwrap();
    same_f64(
        &x.to_vec::<f64>().unwrap(),
        &[0.0, nan, 2.0 * 3f64.ln(), inf],
    );
    let hv = f64s(&[-2.0, -0.0, 0.0, 3.0, nan]).heaviside(0.5).unwrap();
    same_f64(&hv.to_vec::<f64>().unwrap(), &[0.0, 0.5, 0.5, 1.0, nan]);
}

#[test]
fn nextafter_steps_in_half_precision() {
    use half::{bf16, f16};
    let one = Tensor::from_vec(vec![f16::ONE, f16::ONE, f16::ZERO], &[3]).unwrap();
    let to = Tensor::from_vec(vec![f16::from_f32(2.0), f16::ZERO, f16::NEG_ONE], &[3]).unwrap();
    let v = one.nextafter(&to).unwrap().to_vec::<f16>().unwrap();
    assert_eq!(v[0], f16::from_bits(f16::ONE.to_bits() + 1));
    assert_eq!(v[1], f16::from_bits(f16::ONE.to_bits() - 1));
    assert_eq!(v[2].to_bits(), 0x8001);
    let b = Tensor::from_vec(vec![bf16::ONE], &[1]).unwrap();
    let v = b
        .nextafter(&Tensor::from_vec(vec![bf16::from_f32(2.0)], &[1]).unwrap())
        .unwrap();
    assert_eq!(
        v.to_vec::<bf16>().unwrap()[0].to_bits(),
        bf16::ONE.to_bits() + 1
    );
}

#[test]
fn unary_predicates_and_misc() {
    let t = f64s(&[-1.0, -0.0, 0.0, 2.0, -f64::INFINITY, -f64::NAN, f64::NAN]);
    let s = t.signbit().unwrap();
    assert_eq!(s.dtype(), DType::Bool);
    assert_eq!(
        s.to_vec::<bool>().unwrap(),
        vec![true, true, false, false, true, true, false]
    );
    let i = Tensor::from_vec(vec![-3i8, 0, 4], &[3]).unwrap();
    assert_eq!(
        i.signbit().unwrap().to_vec::<bool>().unwrap(),
        vec![true, false, false]
    );
    let b = Tensor::from_vec(vec![true, false], &[2]).unwrap();
    assert_eq!(
        b.signbit().unwrap().to_vec::<bool>().unwrap(),
        vec![false, false]
    );
    // frac: floats only, sign of x; ±∞ gives NaN.
    let f = f64s(&[-2.5, 2.25, -0.0, f64::INFINITY]).frac().unwrap();
    same_f64(&f.to_vec::<f64>().unwrap(), &[-0.5, 0.25, -0.0, f64::NAN]);
    assert!(i.frac().is_err());
    // positive: a copy; bool refused.
    assert_eq!(
        i.positive().unwrap().to_vec::<i8>().unwrap(),
        vec![-3, 0, 4]
    );
    assert_eq!(b.positive().unwrap_err().kind(), ErrorKind::DType);
    // deg2rad / rad2deg promote integers.
    let d = Tensor::from_vec(vec![180i32, -90], &[2])
        .unwrap()
        .deg2rad()
        .unwrap();
    assert_eq!(d.dtype(), DType::F32);
    assert_eq!(
        d.to_vec::<f32>().unwrap(),
        vec![std::f32::consts::PI, -std::f32::consts::FRAC_PI_2]
    );
    let r = f64s(&[std::f64::consts::PI])
        .rad2deg()
        .unwrap()
        .to_vec::<f64>()
        .unwrap();
    assert!((r[0] - 180.0).abs() < 1e-12);
}

#[test]
fn in_place_variants_write_into_self() {
    let t = f64s(&[0.5, -0.25]);
    t.sinh_().unwrap();
    same_f64(
        &t.to_vec::<f64>().unwrap(),
        &[0.5f64.sinh(), (-0.25f64).sinh()],
    );
    let t = f64s(&[3.0, -3.0]);
    t.hypot_(4.0).unwrap().copysign_(-1.0).unwrap();
    same_f64(&t.to_vec::<f64>().unwrap(), &[-5.0, -5.0]);
    let t = Tensor::from_vec(vec![7i64, -7], &[2]).unwrap();
    t.fmod_(3).unwrap();
    assert_eq!(t.to_vec::<i64>().unwrap(), vec![1, -1]);
    // A float result cannot go into an integer tensor.
    let e = t.erf_().unwrap_err();
    assert!(e.to_string().contains("can't be cast"), "{e}");
    // logical_not_ casts the bool result back.
    let t = f64s(&[0.0, 2.0]);
    t.logical_not_().unwrap();
    assert_eq!(t.to_vec::<f64>().unwrap(), vec![1.0, 0.0]);
}
