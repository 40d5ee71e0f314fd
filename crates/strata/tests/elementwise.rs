//! Elementwise ops against a naive reference.
//!
//! Operands are built in random layouts (contiguous, transposed, stepped, flipped,
//! broadcast with stride 0, 0-d, empty) and dtypes from a seeded generator. The reference
//! reads every operand back in the dtype the op computes in (`to_dtype` + `broadcast_to` +
//! `contiguous` + `to_vec`) and applies plain `f64`/`i64`/`bool` math element by element;
//! integer results wrap to the dtype's width. Result dtypes are checked against an
//! independent implementation of PyTorch's promotion rules, and every in-place variant
//! against its out-of-place op.

mod common;

use common::Rng;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use strata::kernel::plan::Operand;
use strata::{DType, ErrorKind, Result, Scalar, Tensor};

use DType::*;

// ---------------------------------------------------------------------------------------
// Random operands
// ---------------------------------------------------------------------------------------

fn float_val(r: &mut Rng) -> f64 {
    match r.below(24) {
        0 => f64::NAN,
        1 => f64::INFINITY,
        2 => f64::NEG_INFINITY,
        3 => -0.0,
        4 => 0.0,
        _ => (r.below(2049) as f64 - 1024.0) / 64.0,
    }
}

fn int_range(dt: DType) -> (i64, i64) {
    match dt {
        U8 => (0, 255),
        I8 => (-128, 127),
        I16 => (i16::MIN as i64, i16::MAX as i64),
        I32 => (i32::MIN as i64, i32::MAX as i64),
        _ => (i64::MIN, i64::MAX),
    }
}

fn int_val(r: &mut Rng, dt: DType) -> i64 {
    let (lo, hi) = int_range(dt);
    match r.below(24) {
        0 => 0,
        1 => lo,
        2 => hi,
        3 => r.below(256) as i64 + lo.max(-128),
        _ if lo == 0 => 1 + r.below(40) as i64,
        _ => {
            let v = r.below(40) as i64 - 20;
            if v == 0 {
                7
            } else {
                v
            }
        }
    }
}

/// `n` random values of `dt`, as a 1-d tensor.
fn values(dt: DType, n: usize, seed: u64) -> Tensor {
    let mut r = Rng(seed);
    if dt == Bool {
        let v: Vec<bool> = (0..n).map(|_| r.below(2) == 1).collect();
        return Tensor::from_vec(v, &[n]).unwrap();
    }
    if dt.is_float() {
        let v: Vec<f64> = (0..n).map(|_| float_val(&mut r)).collect();
        return Tensor::from_vec(v, &[n]).unwrap().to_dtype(dt).unwrap();
    }
    let v: Vec<i64> = (0..n).map(|_| int_val(&mut r, dt)).collect();
    Tensor::from_vec(v, &[n]).unwrap().to_dtype(dt).unwrap()
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Lay {
    Contig,
    Transposed,
    Stepped,
    Flipped,
    Expanded,
}

fn i64s(s: &[usize]) -> Vec<i64> {
    s.iter().map(|&k| k as i64).collect()
}

/// A tensor of `shape` in layout `lay`, with values fixed by `seed`.
fn make(shape: &[usize], dt: DType, lay: Lay, seed: u64) -> Tensor {
    let n = shape.len();
    let base = |s: &[usize]| {
        values(dt, s.iter().product(), seed)
            .reshape(&i64s(s))
            .unwrap()
    };
    let all: Vec<i64> = (0..n as i64).collect();
    let rev: Vec<i64> = (0..n as i64).rev().collect();
    let t = match lay {
        Lay::Contig => base(shape),
        Lay::Transposed | Lay::Flipped => {
            let r: Vec<usize> = shape.iter().rev().copied().collect();
            let t = base(&r).permute(&rev).unwrap();
            if lay == Lay::Flipped {
                t.flip(&all).unwrap()
            } else {
                t
            }
        }
        Lay::Stepped => {
            let big: Vec<usize> = shape.iter().map(|&s| 2 * s + 1).collect();
            let mut t = base(&big);
            for d in 0..n {
                t = t.slice(d as i64, Some(1), None, 2).unwrap();
            }
            t
        }
        Lay::Expanded => {
            let small: Vec<usize> = shape
                .iter()
                .enumerate()
                .map(|(d, &s)| if (seed >> d) & 1 == 1 { 1 } else { s })
                .collect();
            base(&small).broadcast_to(shape).unwrap()
        }
    };
    assert_eq!(t.shape(), shape);
    t
}

fn lay() -> impl Strategy<Value = Lay> {
    prop::sample::select(vec![
        Lay::Contig,
        Lay::Transposed,
        Lay::Stepped,
        Lay::Flipped,
        Lay::Expanded,
    ])
}

fn dtype() -> impl Strategy<Value = DType> {
    prop::sample::select(vec![F32, F64, F16, BF16, I32, I64, U8, I8, Bool])
}

fn shape() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(prop_oneof![1 => Just(0usize), 9 => 1usize..=4], 0..=3)
}

/// A tensor or a scalar operand.
#[derive(Debug)]
enum Arg {
    T(Tensor),
    S(Scalar),
}

impl Arg {
    fn op(&self) -> Operand<'_> {
        match self {
            Arg::T(t) => Operand::Tensor(t),
            Arg::S(s) => Operand::Scalar(*s),
        }
    }
    fn shape(&self) -> Vec<usize> {
        match self {
            Arg::T(t) => t.shape().to_vec(),
            Arg::S(_) => vec![],
        }
    }
    fn is_bool(&self) -> bool {
        match self {
            Arg::T(t) => t.dtype() == Bool,
            Arg::S(s) => matches!(s, Scalar::Bool(_)),
        }
    }
    fn as_tensor(&self, dt: DType) -> Tensor {
        match self {
            Arg::T(t) => t.to_dtype(dt).unwrap(),
            Arg::S(s) => Tensor::scalar_of(*s, dt).unwrap(),
        }
    }
}

/// How one operand of a binary op is derived from the case's shape.
#[derive(Debug, Clone)]
struct Spec {
    dt: DType,
    lay: Lay,
    ones: u8,
    drop: usize,
    seed: u64,
    scalar: bool,
}

fn spec(scalar_ok: bool) -> impl Strategy<Value = Spec> {
    (dtype(), lay(), any::<u8>(), 0usize..=3, any::<u64>(), 0..6).prop_map(
        move |(dt, lay, ones, drop, seed, s)| Spec {
            dt,
            lay,
            ones: if drop > 1 { ones } else { 0 },
            drop: drop.saturating_sub(1),
            seed,
            scalar: scalar_ok && s == 0,
        },
    )
}

fn build(sp: &Spec, shape: &[usize]) -> Arg {
    if sp.scalar {
        let mut r = Rng(sp.seed);
        return Arg::S(match sp.dt {
            Bool => Scalar::Bool(r.below(2) == 1),
            d if d.is_float() => Scalar::Float(float_val(&mut r)),
            d => Scalar::Int(int_val(&mut r, d).clamp(-100, 100)),
        });
    }
    let s: Vec<usize> = shape
        .iter()
        .enumerate()
        .map(|(d, &n)| if (sp.ones >> d) & 1 == 1 { 1 } else { n })
        .skip(sp.drop.min(shape.len()))
        .collect();
    Arg::T(make(&s, sp.dt, sp.lay, sp.seed))
}

// ---------------------------------------------------------------------------------------
// Promotion (written independently from strata's)
// ---------------------------------------------------------------------------------------

fn promote(a: DType, b: DType) -> DType {
    let signed = |d: DType| if d == U8 { I16 } else { d };
    match (a, b) {
        _ if a == b => a,
        (Bool, _) => b,
        (_, Bool) => a,
        (F16, BF16) | (BF16, F16) => F32,
        _ if a.is_float() && b.is_float() => {
            if a.itemsize() >= b.itemsize() {
                a
            } else {
                b
            }
        }
        _ if a.is_float() => a,
        _ if b.is_float() => b,
        _ if signed(a).itemsize() >= signed(b).itemsize() => signed(a),
        _ => signed(b),
    }
}

fn combine(hi: Option<DType>, lo: Option<DType>) -> Option<DType> {
    match (hi, lo) {
        (Some(h), _) if h.is_float() => Some(h),
        (Some(h), Some(l)) if h == Bool || l.is_float() => Some(promote(h, l)),
        (Some(h), _) => Some(h),
        (None, l) => l,
    }
}

fn expected_result_type(args: &[&Arg]) -> DType {
    let (mut dim, mut zero, mut wrapped) = (None, None, None);
    let up = |slot: &mut Option<DType>, d: DType| *slot = Some(slot.map_or(d, |c| promote(c, d)));
    for a in args {
        match a {
            Arg::T(t) if t.ndim() > 0 => up(&mut dim, t.dtype()),
            Arg::T(t) => up(&mut zero, t.dtype()),
            Arg::S(Scalar::Bool(_)) => up(&mut wrapped, Bool),
            Arg::S(Scalar::Int(_)) => up(&mut wrapped, I64),
            Arg::S(Scalar::UInt(_)) => up(&mut wrapped, U64),
            Arg::S(Scalar::Float(_)) => up(&mut wrapped, F32),
            // Not generated: this model covers the real dtypes (complex promotion is
            // tested in `kernel/plan.rs` and python/tests/test_complex.py).
            Arg::S(Scalar::Complex(..)) => up(&mut wrapped, C64),
        }
    }
    combine(dim, combine(zero, wrapped)).unwrap()
}

/// PyTorch's `canCast` (no float → integer, no non-bool → bool).
fn can_cast(from: DType, to: DType) -> bool {
    if from.is_float() {
        to.is_float()
    } else {
        from == Bool || to != Bool
    }
}

fn float_of(d: DType) -> DType {
    if d.is_float() {
        d
    } else {
        F32
    }
}

fn broadcast(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let n = a.len().max(b.len());
    (0..n)
        .map(|i| {
            let x = (i + a.len()).checked_sub(n).map_or(1, |k| a[k]);
            let y = (i + b.len()).checked_sub(n).map_or(1, |k| b[k]);
            match (x, y) {
                _ if x == y || y == 1 => Some(x),
                (1, _) => Some(y),
                _ => None,
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Reading values and comparing
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
enum Vals {
    F(Vec<f64>),
    I(Vec<i64>),
    B(Vec<bool>),
}

/// `t`'s elements broadcast to `shape`, in row-major order.
fn read(t: &Tensor, shape: &[usize]) -> Vals {
    let c = t.broadcast_to(shape).unwrap().contiguous().unwrap();
    match t.dtype() {
        Bool => Vals::B(c.to_vec::<bool>().unwrap()),
        d if d.is_float() => Vals::F(c.to_dtype(F64).unwrap().to_vec::<f64>().unwrap()),
        _ => Vals::I(c.to_dtype(I64).unwrap().to_vec::<i64>().unwrap()),
    }
}

/// Reference results rounded (floats) or wrapped (integers) into `dt`.
fn into_dtype(v: Vals, dt: DType) -> Vals {
    let n = match &v {
        Vals::F(x) => x.len(),
        Vals::I(x) => x.len(),
        Vals::B(x) => x.len(),
    };
    let t = match v {
        Vals::F(x) => Tensor::from_vec(x, &[n]),
        Vals::I(x) => Tensor::from_vec(x, &[n]),
        Vals::B(x) => Tensor::from_vec(x, &[n]),
    };
    read(&t.unwrap().to_dtype(dt).unwrap(), &[n])
}

fn close(got: f64, want: f64, dt: DType) -> bool {
    if want.is_nan() || got.is_nan() {
        return want.is_nan() && got.is_nan();
    }
    if got == want {
        return true;
    }
    let (rtol, atol, max) = match dt {
        F64 => (1e-12, 1e-14, f64::MAX),
        F32 => (1e-5, 1e-6, f32::MAX as f64),
        F16 => (2e-3, 1e-4, 65504.0),
        _ => (1.6e-2, 1e-3, 3.38e38),
    };
    if got.is_infinite() || want.is_infinite() {
        // A result at the edge of the range may round to ±∞ on one side only.
        let f = if got.is_infinite() { want } else { got };
        return f.abs() >= max * 0.99 && f.signum() == got.signum() * want.signum() * f.signum();
    }
    (got - want).abs() <= atol + rtol * want.abs()
}

fn check_vals(what: &str, got: &Vals, want: &Vals, dt: DType) -> Result<(), TestCaseError> {
    let ok = match (got, want) {
        (Vals::F(g), Vals::F(w)) => {
            g.len() == w.len() && g.iter().zip(w).all(|(&a, &b)| close(a, b, dt))
        }
        _ => got == want,
    };
    prop_assert!(ok, "{what}: got {got:?}, want {want:?}");
    Ok(())
}

/// Exact equality, NaN equal to NaN.
fn same(a: &Vals, b: &Vals) -> bool {
    match (a, b) {
        (Vals::F(x), Vals::F(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|(p, q)| p == q || (p.is_nan() && q.is_nan()))
        }
        _ => a == b,
    }
}

fn width(dt: DType) -> (u32, bool) {
    match dt {
        U8 => (8, false),
        I8 => (8, true),
        I16 => (16, true),
        I32 => (32, true),
        _ => (64, true),
    }
}

fn aliases_itself(t: &Tensor) -> bool {
    t.numel() > 0
        && t.strides()
            .iter()
            .zip(t.shape())
            .any(|(&s, &n)| s == 0 && n > 1)
}

// ---------------------------------------------------------------------------------------
// Reference math
// ---------------------------------------------------------------------------------------

/// erf by its Taylor series (|x| < 2) or its continued fraction (200 terms).
fn erf_ref(x: f64) -> f64 {
    let a = x.abs();
    let r = if a < 2.0 {
        let (mut term, mut sum, mut n) = (a, a, 0.0);
        loop {
            n += 1.0;
            term *= -a * a / n;
            let t = term / (2.0 * n + 1.0);
            sum += t;
            if t.abs() < 1e-18 {
                break;
            }
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    } else {
        let mut f = a;
        for k in (1..=200).rev() {
            f = a + (k as f64 / 2.0) / f;
        }
        1.0 - (-a * a).exp() / (std::f64::consts::PI.sqrt() * f)
    };
    if x < 0.0 {
        -r
    } else {
        r
    }
}

/// Python's float `//` and `%`.
fn py_divmod(a: f64, b: f64) -> (f64, f64) {
    if b == 0.0 {
        return (a / b, a % b);
    }
    let mut m = a % b;
    let mut div = (a - m) / b;
    if m != 0.0 && (b < 0.0) != (m < 0.0) {
        m += b;
        div -= 1.0;
    }
    let fd = if div != 0.0 {
        let f = div.floor();
        if div - f > 0.5 {
            f + 1.0
        } else {
            f
        }
    } else {
        (0.0f64).copysign(a / b)
    };
    (fd, m)
}

fn floordiv_i(a: i64, b: i64) -> Option<i64> {
    if b == 0 {
        return None;
    }
    let q = a.wrapping_div(b);
    Some(if a.wrapping_rem(b) != 0 && (a < 0) != (b < 0) {
        q - 1
    } else {
        q
    })
}

fn rem_i(a: i64, b: i64) -> Option<i64> {
    if b == 0 {
        return None;
    }
    let r = a.wrapping_rem(b);
    Some(if r != 0 && (r < 0) != (b < 0) {
        r + b
    } else {
        r
    })
}

fn pow_i(a: i64, b: i64) -> Option<i64> {
    if b < 0 {
        return None;
    }
    let (mut r, mut base, mut e) = (1i64, a, b as u64);
    while e > 0 {
        if e & 1 == 1 {
            r = r.wrapping_mul(base);
        }
        base = base.wrapping_mul(base);
        e >>= 1;
    }
    Some(r)
}

fn shl_i(a: i64, b: i64, bits: u32) -> i64 {
    if b < 0 || b >= bits as i64 {
        0
    } else {
        a.wrapping_shl(b as u32)
    }
}

fn shr_i(a: i64, b: i64, bits: u32, signed: bool) -> i64 {
    let max = bits as i64 - signed as i64;
    if b < 0 || b >= max {
        if signed && a < 0 {
            -1
        } else {
            0
        }
    } else {
        a >> b
    }
}

fn nan_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

fn nan_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.min(b)
    }
}

fn b2f(b: bool) -> f64 {
    b as u8 as f64
}

// ---------------------------------------------------------------------------------------
// Binary ops
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq)]
enum Out {
    /// The promoted dtype.
    Same,
    /// The promoted dtype, float32 for integers.
    Float,
    /// bool.
    Bool,
}

type BinRun = fn(&Tensor, Operand<'_>) -> Result<Tensor>;
type BinRunInPlace = fn(&Tensor, Operand<'_>) -> Result<()>;
type IntRef2 = fn(i64, i64, u32, bool) -> Option<i64>;

struct BinOp {
    name: &'static str,
    run: BinRun,
    run_: Option<BinRunInPlace>,
    out: Out,
    f: Option<fn(f64, f64) -> f64>,
    i: Option<IntRef2>,
    b: Option<fn(bool, bool) -> bool>,
}

macro_rules! bin {
    ($name:ident, $ip:expr, $out:ident, $f:expr, $i:expr, $b:expr) => {
        BinOp {
            name: stringify!($name),
            run: |a, b| a.$name(b),
            run_: $ip,
            out: Out::$out,
            f: $f,
            i: $i,
            b: $b,
        }
    };
}

#[rustfmt::skip]
fn bin_ops() -> Vec<BinOp> {
    vec![
        bin!(add, Some(|a, b| a.add_(b).map(drop)), Same, Some(|a, b| a + b), Some(|a, b, _, _| Some(a.wrapping_add(b))), Some(|a, b| a | b)),
        bin!(sub, Some(|a, b| a.sub_(b).map(drop)), Same, Some(|a, b| a - b), Some(|a, b, _, _| Some(a.wrapping_sub(b))), None),
        bin!(mul, Some(|a, b| a.mul_(b).map(drop)), Same, Some(|a, b| a * b), Some(|a, b, _, _| Some(a.wrapping_mul(b))), Some(|a, b| a & b)),
        bin!(div, Some(|a, b| a.div_(b).map(drop)), Float, Some(|a, b| a / b), None, None),
        bin!(floor_divide, Some(|a, b| a.floor_divide_(b).map(drop)), Same, Some(|a, b| py_divmod(a, b).0), Some(|a, b, _, _| floordiv_i(a, b)), None),
        bin!(remainder, Some(|a, b| a.remainder_(b).map(drop)), Same, Some(|a, b| py_divmod(a, b).1), Some(|a, b, _, _| rem_i(a, b)), None),
        bin!(pow, Some(|a, b| a.pow_(b).map(drop)), Same, Some(f64::powf), Some(|a, b, _, _| pow_i(a, b)), None),
        bin!(maximum, Some(|a, b| a.maximum_(b).map(drop)), Same, Some(nan_max), Some(|a, b, _, _| Some(a.max(b))), Some(|a, b| a | b)),
        bin!(minimum, Some(|a, b| a.minimum_(b).map(drop)), Same, Some(nan_min), Some(|a, b, _, _| Some(a.min(b))), Some(|a, b| a & b)),
        bin!(atan2, Some(|a, b| a.atan2_(b).map(drop)), Float, Some(f64::atan2), None, None),
        bin!(eq, None, Bool, Some(|a, b| b2f(a == b)), Some(|a, b, _, _| Some((a == b) as i64)), Some(|a, b| a == b)),
        bin!(ne, None, Bool, Some(|a, b| b2f(a != b)), Some(|a, b, _, _| Some((a != b) as i64)), Some(|a, b| a != b)),
        bin!(lt, None, Bool, Some(|a, b| b2f(a < b)), Some(|a, b, _, _| Some((a < b) as i64)), Some(|a, b| !a & b)),
        bin!(le, None, Bool, Some(|a, b| b2f(a <= b)), Some(|a, b, _, _| Some((a <= b) as i64)), Some(|a, b| a <= b)),
        bin!(gt, None, Bool, Some(|a, b| b2f(a > b)), Some(|a, b, _, _| Some((a > b) as i64)), Some(|a, b| a & !b)),
        bin!(ge, None, Bool, Some(|a, b| b2f(a >= b)), Some(|a, b, _, _| Some((a >= b) as i64)), Some(|a, b| a >= b)),
        bin!(logical_and, None, Bool, Some(|a, b| b2f(a != 0.0 && b != 0.0)), Some(|a, b, _, _| Some((a != 0 && b != 0) as i64)), Some(|a, b| a & b)),
        bin!(logical_or, None, Bool, Some(|a, b| b2f(a != 0.0 || b != 0.0)), Some(|a, b, _, _| Some((a != 0 || b != 0) as i64)), Some(|a, b| a | b)),
        bin!(logical_xor, None, Bool, Some(|a, b| b2f((a != 0.0) != (b != 0.0))), Some(|a, b, _, _| Some(((a != 0) != (b != 0)) as i64)), Some(|a, b| a ^ b)),
        bin!(bitwise_and, Some(|a, b| a.bitwise_and_(b).map(drop)), Same, None, Some(|a, b, _, _| Some(a & b)), Some(|a, b| a & b)),
        bin!(bitwise_or, Some(|a, b| a.bitwise_or_(b).map(drop)), Same, None, Some(|a, b, _, _| Some(a | b)), Some(|a, b| a | b)),
        bin!(bitwise_xor, Some(|a, b| a.bitwise_xor_(b).map(drop)), Same, None, Some(|a, b, _, _| Some(a ^ b)), Some(|a, b| a ^ b)),
        bin!(bitwise_left_shift, Some(|a, b| a.bitwise_left_shift_(b).map(drop)), Same, None, Some(|a, b, bits, _| Some(shl_i(a, b, bits))), None),
        bin!(bitwise_right_shift, Some(|a, b| a.bitwise_right_shift_(b).map(drop)), Same, None, Some(|a, b, bits, s| Some(shr_i(a, b, bits, s))), None),
    ]
}

/// The reference result of `op` over `a` and `b`, in the output dtype, or `None` when the
/// op must fail.
fn bin_reference(op: &BinOp, a: &Arg, b: &Arg, shape: &[usize]) -> Option<(DType, Vals)> {
    let common = expected_result_type(&[a, b]);
    if op.name == "sub" && (a.is_bool() || b.is_bool()) {
        return None;
    }
    let cdt = match (a, b) {
        _ if op.out == Out::Float => float_of(common),
        // Comparisons and logical ops of two tensors compute in both dtypes promoted, so
        // values compare exactly (PyTorch's 0-d rule would wrap or round one of them).
        (Arg::T(x), Arg::T(y)) if op.out == Out::Bool && x.dtype() != y.dtype() => {
            promote(x.dtype(), y.dtype())
        }
        _ => common,
    };
    let odt = if op.out == Out::Bool { Bool } else { cdt };
    let valid = match cdt {
        Bool => op.b.is_some(),
        d if d.is_float() => op.f.is_some(),
        _ => op.i.is_some(),
    };
    if !valid {
        return None;
    }
    let (va, vb) = (
        read(&a.as_tensor(cdt), shape),
        read(&b.as_tensor(cdt), shape),
    );
    let want = match (va, vb, op.f, op.i, op.b) {
        (Vals::F(x), Vals::F(y), Some(f), _, _) => {
            Vals::F(x.iter().zip(&y).map(|(&p, &q)| f(p, q)).collect())
        }
        (Vals::I(x), Vals::I(y), _, Some(f), _) => {
            let (bits, signed) = width(cdt);
            let v: Option<Vec<i64>> = x
                .iter()
                .zip(&y)
                .map(|(&p, &q)| f(p, q, bits, signed))
                .collect();
            Vals::I(v?)
        }
        (Vals::B(x), Vals::B(y), _, _, Some(f)) => {
            Vals::B(x.iter().zip(&y).map(|(&p, &q)| f(p, q)).collect())
        }
        _ => unreachable!(),
    };
    Some((odt, into_dtype(want, odt)))
}

fn check_binary(op: &BinOp, sa: &Spec, sb: &Spec, shape: &[usize]) -> Result<(), TestCaseError> {
    let (a, b) = (build(sa, shape), build(sb, shape));
    let Arg::T(at) = &a else { unreachable!() };
    let got = (op.run)(at, b.op());
    let Some(bshape) = broadcast(&a.shape(), &b.shape()) else {
        prop_assert!(got.is_err(), "{}: accepted {:?} and {:?}", op.name, a, b);
        return Ok(());
    };
    let Some((odt, want)) = bin_reference(op, &a, &b, &bshape) else {
        prop_assert!(
            got.is_err(),
            "{} should fail on {:?} and {:?}",
            op.name,
            a,
            b
        );
        return Ok(());
    };
    let got = got.map_err(|e| TestCaseError::fail(format!("{}: {e} on {a:?} {b:?}", op.name)))?;
    prop_assert_eq!(got.dtype(), odt, "{} dtype on {:?} {:?}", op.name, a, b);
    prop_assert_eq!(got.shape(), &bshape[..]);
    check_vals(op.name, &read(&got, &bshape), &want, odt)?;
    if let Some(run_) = op.run_ {
        let a2 = make(at.shape(), sa.dt, sa.lay, sa.seed);
        let r = run_(&a2, b.op());
        let fits = bshape == a2.shape() && can_cast(odt, a2.dtype());
        if !fits || aliases_itself(&a2) {
            prop_assert!(r.is_err(), "{}_ should fail on {:?} {:?}", op.name, a2, b);
        } else {
            prop_assert!(r.is_ok(), "{}_: {:?} on {:?} {:?}", op.name, r, a2, b);
            let cast = read(&got.to_dtype(a2.dtype()).unwrap(), &bshape);
            prop_assert!(same(&read(&a2, &bshape), &cast), "{}_ differs", op.name);
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Unary ops
// ---------------------------------------------------------------------------------------

type UnRun = fn(&Tensor) -> Result<Tensor>;
type UnRunInPlace = fn(&Tensor) -> Result<()>;

struct UnOp {
    name: &'static str,
    run: UnRun,
    run_: Option<UnRunInPlace>,
    out: Out,
    f: Option<fn(f64) -> f64>,
    i: Option<fn(i64) -> i64>,
    b: Option<fn(bool) -> bool>,
}

macro_rules! un {
    ($name:ident, $ip:expr, $out:ident, $f:expr, $i:expr, $b:expr) => {
        UnOp {
            name: stringify!($name),
            run: |a| a.$name(),
            run_: $ip,
            out: Out::$out,
            f: $f,
            i: $i,
            b: $b,
        }
    };
    ($name:ident, $ip:ident, $f:expr) => {
        un!(
            $name,
            Some(|a| a.$ip().map(drop)),
            Float,
            Some($f),
            None,
            None
        )
    };
}

fn sign_f(x: f64) -> f64 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else if x == 0.0 {
        0.0
    } else {
        x
    }
}

#[rustfmt::skip]
fn un_ops() -> Vec<UnOp> {
    vec![
        un!(neg, Some(|a| a.neg_().map(drop)), Same, Some(|x| -x), Some(i64::wrapping_neg), None),
        un!(abs, Some(|a| a.abs_().map(drop)), Same, Some(f64::abs), Some(i64::wrapping_abs), None),
        un!(sign, Some(|a| a.sign_().map(drop)), Same, Some(sign_f), Some(i64::signum), Some(|x| x)),
        un!(square, Some(|a| a.square_().map(drop)), Same, Some(|x| x * x), Some(|x| x.wrapping_mul(x)), None),
        un!(relu, Some(|a| a.relu_().map(drop)), Same, Some(|x| if x < 0.0 { 0.0 } else { x }), Some(|x| x.max(0)), None),
        un!(sqrt, sqrt_, f64::sqrt),
        un!(rsqrt, rsqrt_, |x| 1.0 / x.sqrt()),
        un!(exp, exp_, f64::exp),
        un!(exp2, exp2_, f64::exp2),
        un!(log, log_, f64::ln),
        un!(log2, log2_, f64::log2),
        un!(log1p, log1p_, f64::ln_1p),
        un!(expm1, expm1_, f64::exp_m1),
        un!(sin, sin_, f64::sin),
        un!(cos, cos_, f64::cos),
        un!(tan, tan_, f64::tan),
        un!(tanh, tanh_, f64::tanh),
        un!(sigmoid, sigmoid_, |x| 1.0 / (1.0 + (-x).exp())),
        un!(gelu, gelu_, |x| 0.5 * x * (1.0 + erf_ref(x / std::f64::consts::SQRT_2))),
        un!(reciprocal, reciprocal_, |x| 1.0 / x),
        un!(floor, Some(|a| a.floor_().map(drop)), Same, Some(f64::floor), Some(|x| x), None),
        un!(ceil, Some(|a| a.ceil_().map(drop)), Same, Some(f64::ceil), Some(|x| x), None),
        un!(round, Some(|a| a.round_().map(drop)), Same, Some(f64::round_ties_even), Some(|x| x), None),
        un!(trunc, Some(|a| a.trunc_().map(drop)), Same, Some(f64::trunc), Some(|x| x), None),
        un!(logical_not, None, Bool, Some(|x| b2f(x == 0.0)), Some(|x| (x == 0) as i64), Some(|x| !x)),
        un!(bitwise_not, Some(|a| a.bitwise_not_().map(drop)), Same, None, Some(|x| !x), Some(|x| !x)),
        un!(isnan, None, Bool, Some(|x| b2f(x.is_nan())), Some(|_| 0), Some(|_| false)),
        un!(isinf, None, Bool, Some(|x| b2f(x.is_infinite())), Some(|_| 0), Some(|_| false)),
        un!(isfinite, None, Bool, Some(|x| b2f(x.is_finite())), Some(|_| 1), Some(|_| true)),
    ]
}

/// `(compute, output)` dtypes of a unary op on `dt`, `None` when it must fail.
fn un_dtypes(op: &UnOp, dt: DType) -> Option<(DType, DType)> {
    match op.out {
        Out::Float => Some((float_of(dt), float_of(dt))),
        Out::Bool => Some((dt, Bool)),
        Out::Same if dt == Bool => match op.name {
            "square" => Some((I64, I64)),
            _ => op.b.map(|_| (Bool, Bool)),
        },
        Out::Same if dt.is_float() => op.f.map(|_| (dt, dt)),
        Out::Same => Some((dt, dt)),
    }
}

fn check_unary(op: &UnOp, x: &Tensor, make2: impl Fn() -> Tensor) -> Result<(), TestCaseError> {
    let got = (op.run)(x);
    let Some((cdt, odt)) = un_dtypes(op, x.dtype()) else {
        prop_assert!(got.is_err(), "{} should fail on {:?}", op.name, x);
        return Ok(());
    };
    let got = got.map_err(|e| TestCaseError::fail(format!("{}: {e} on {x:?}", op.name)))?;
    prop_assert_eq!(got.dtype(), odt, "{} on {:?}", op.name, x);
    prop_assert_eq!(got.shape(), x.shape());
    let want = match read(&x.to_dtype(cdt).unwrap(), x.shape()) {
        Vals::F(v) => Vals::F(v.into_iter().map(op.f.unwrap()).collect()),
        Vals::I(v) => Vals::I(v.into_iter().map(op.i.unwrap()).collect()),
        Vals::B(v) => Vals::B(v.into_iter().map(op.b.unwrap()).collect()),
    };
    check_vals(op.name, &read(&got, x.shape()), &into_dtype(want, odt), odt)?;
    // The output follows the input's layout when the input is dense.
    if matches!(x.ndim(), 2..) && x.numel() > 1 && !aliases_itself(x) && x.is_contiguous() {
        prop_assert!(got.is_contiguous());
    }
    if let Some(run_) = op.run_ {
        let x2 = make2();
        let r = run_(&x2);
        if !can_cast(odt, x2.dtype()) || aliases_itself(&x2) {
            prop_assert!(r.is_err(), "{}_ should fail on {:?}", op.name, x2);
        } else {
            prop_assert!(r.is_ok(), "{}_: {:?} on {:?}", op.name, r, x2);
            let cast = read(&got.to_dtype(x2.dtype()).unwrap(), x.shape());
            prop_assert!(same(&read(&x2, x.shape()), &cast), "{}_ differs", op.name);
        }
    }
    Ok(())
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(160))]

    /// Every unary op on random shapes, layouts and dtypes.
    #[test]
    fn unary_ops_match_reference(s in shape(), dt in dtype(), l in lay(), seed in any::<u64>()) {
        let x = make(&s, dt, l, seed);
        for op in un_ops() {
            check_unary(&op, &x, || make(&s, dt, l, seed))?;
        }
    }

    /// Every binary op on random broadcast shapes, layouts, dtypes and scalars.
    #[test]
    fn binary_ops_match_reference(s in shape(), sa in spec(false), sb in spec(true)) {
        for op in bin_ops() {
            check_binary(&op, &sa, &sb, &s)?;
        }
    }

    /// `where_cond` and `clamp` against the reference.
    #[test]
    fn where_and_clamp_match_reference(s in shape(), sa in spec(false), sb in spec(true), sc in spec(false)) {
        let (a, b) = (build(&sa, &s), build(&sb, &s));
        let cond = make(&build_shape(&sc, &s), Bool, sc.lay, sc.seed);
        let c = Arg::T(cond.clone());
        let Arg::T(at) = &a else { unreachable!() };
        let r = Tensor::where_cond(&cond, at, b.op());
        let shape = broadcast(&c.shape(), &a.shape()).and_then(|x| broadcast(&x, &b.shape()));
        match shape {
            None => prop_assert!(r.is_err()),
            Some(shape) => {
                let r = r.map_err(|e| TestCaseError::fail(e.to_string()))?;
                let dt = expected_result_type(&[&a, &b]);
                prop_assert_eq!(r.dtype(), dt);
                let Vals::B(cv) = read(&cond, &shape) else { unreachable!() };
                let (va, vb) = (read(&a.as_tensor(dt), &shape), read(&b.as_tensor(dt), &shape));
                let want = match (va, vb) {
                    (Vals::F(x), Vals::F(y)) => Vals::F(cv.iter().zip(x.iter().zip(&y)).map(|(&c, (&p, &q))| if c { p } else { q }).collect()),
                    (Vals::I(x), Vals::I(y)) => Vals::I(cv.iter().zip(x.iter().zip(&y)).map(|(&c, (&p, &q))| if c { p } else { q }).collect()),
                    (Vals::B(x), Vals::B(y)) => Vals::B(cv.iter().zip(x.iter().zip(&y)).map(|(&c, (&p, &q))| if c { p } else { q }).collect()),
                    _ => unreachable!(),
                };
                prop_assert!(same(&read(&r, &shape), &want));
            }
        }
        // clamp with scalar bounds, then tensor bounds.
        let lo = Scalar::Int(-3);
        let hi = if sb.seed % 2 == 0 { Scalar::Float(2.5) } else { Scalar::Int(5) };
        let r = at.clamp(Some(lo), Some(hi));
        let (la, lh) = (Arg::S(lo), Arg::S(hi));
        let dt = expected_result_type(&[&a, &la, &lh]);
        if dt == Bool {
            prop_assert!(r.is_err());
        } else {
            let r = r.map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(r.dtype(), dt);
            let shape = at.shape().to_vec();
            let want = match read(&at.to_dtype(dt).unwrap(), &shape) {
                Vals::F(x) => Vals::F(x.into_iter().map(|v| nan_min(nan_max(v, -3.0), hi.to_f64())).collect()),
                Vals::I(x) => {
                    // Out-of-range scalar bounds wrap into the dtype (as in PyTorch), so
                    // `lo` may exceed `hi`: clamp is max then min, never `i64::clamp`.
                    let bound = |s: &Arg| match read(&s.as_tensor(dt), &[]) {
                        Vals::I(v) => v[0],
                        _ => unreachable!(),
                    };
                    let (l, h) = (bound(&la), bound(&lh));
                    Vals::I(x.into_iter().map(|v| v.max(l).min(h)).collect())
                }
                Vals::B(_) => unreachable!(),
            };
            check_vals("clamp", &read(&r, &shape), &into_dtype(want, dt), dt)?;
        }
        if let Arg::T(bt) = &b {
            let both = at.clamp_tensor(Some(bt), Some(bt));
            let want = at.maximum(bt).and_then(|m| m.minimum(bt));
            match (both, want) {
                (Ok(x), Ok(y)) => {
                    let sh = x.shape().to_vec();
                    prop_assert!(same(&read(&x, &sh), &read(&y, &sh)));
                }
                (Err(_), Ok(y)) => prop_assert_eq!(y.dtype(), Bool),
                (Err(_), Err(_)) => {}
                (Ok(x), Err(e)) => prop_assert!(false, "clamp_tensor gave {x:?}, maximum/minimum {e}"),
            }
        }
    }
}

fn build_shape(sp: &Spec, shape: &[usize]) -> Vec<usize> {
    shape
        .iter()
        .enumerate()
        .map(|(d, &n)| if (sp.ones >> d) & 1 == 1 { 1 } else { n })
        .skip(sp.drop.min(shape.len()))
        .collect()
}

// ---------------------------------------------------------------------------------------
// Fixed cases
// ---------------------------------------------------------------------------------------

fn t<T: strata::Element>(v: &[T]) -> Tensor {
    Tensor::from_slice(v, &[v.len()]).unwrap()
}

fn f64s(x: &Tensor) -> Vec<f64> {
    x.to_dtype(F64).unwrap().to_vec::<f64>().unwrap()
}

fn err_text(r: Result<impl std::fmt::Debug>) -> String {
    r.unwrap_err().to_string()
}

#[test]
fn result_dtypes_follow_pytorch() {
    let i32v = t(&[1i32, 2]);
    let f16v = Tensor::ones(&[2], F16).unwrap();
    let f64_0d = Tensor::scalar(2.0f64);
    assert_eq!(i32v.add(1.5).unwrap().dtype(), F32);
    assert_eq!(i32v.add(1).unwrap().dtype(), I32);
    assert_eq!(i32v.add(&f64_0d).unwrap().dtype(), F64);
    assert_eq!(f16v.add(&f64_0d).unwrap().dtype(), F16);
    assert_eq!(f16v.add(1e3).unwrap().dtype(), F16);
    assert_eq!(t(&[1u8]).add(&t(&[1i8])).unwrap().dtype(), I16);
    assert_eq!(t(&[1i64]).add(&t(&[1.0f32])).unwrap().dtype(), F32);
    let bf = Tensor::ones(&[1], BF16).unwrap();
    assert_eq!(f16v.add(&bf).unwrap().dtype(), F32);
    assert_eq!(i32v.div(&i32v).unwrap().dtype(), F32);
    assert_eq!(i32v.sqrt().unwrap().dtype(), F32);
    assert_eq!(t(&[true]).sigmoid().unwrap().dtype(), F32);
    assert_eq!(i32v.abs().unwrap().dtype(), I32);
    assert_eq!(i32v.floor().unwrap().dtype(), I32);
    assert_eq!(t(&[true]).square().unwrap().dtype(), I64);
    assert_eq!(i32v.lt(0.5).unwrap().dtype(), Bool);
    // bool + bool is bool ("or"); bool + int scalar is int64.
    let bb = t(&[true, false]).add(&t(&[true, false])).unwrap();
    assert_eq!(
        (bb.dtype(), bb.to_vec::<bool>().unwrap()),
        (Bool, vec![true, false])
    );
    assert_eq!(t(&[true]).add(1).unwrap().dtype(), I64);
    assert_eq!(
        t(&[3u8]).add(200).unwrap().to_vec::<u8>().unwrap(),
        vec![203]
    );
    // A weak integer scalar that does not fit wraps in arithmetic, as in PyTorch
    // (3 + 300 = 303 ≡ 47 mod 256)...
    assert_eq!(
        t(&[3u8]).add(300).unwrap().to_vec::<u8>().unwrap(),
        vec![47]
    );
    // ... and is refused by stores (PyTorch's checked_convert).
    assert_eq!(
        err_text(t(&[3u8]).fill_(300).map(|_| ())),
        "fill_: value cannot be converted to type uint8_t without overflow"
    );
    assert_eq!(
        err_text(t(&[3i8]).set(&[0], -129)),
        "set: value cannot be converted to type int8_t without overflow"
    );
    assert!(t(&[3u8]).fill_(255).is_ok() && t(&[3i32]).fill_(2.5).is_ok());
    assert!(t(&[3i32]).fill_(f64::NAN).is_err() && t(&[3i64]).fill_(1e19).is_err());
}

#[test]
fn special_values() {
    let nan = f64::NAN;
    let x = t(&[nan, 1.0, -2.0]);
    let y = t(&[0.0, nan, -3.0]);
    let mx = f64s(&x.maximum(&y).unwrap());
    assert!(mx[0].is_nan() && mx[1].is_nan() && mx[2] == -2.0);
    let mn = f64s(&x.minimum(&y).unwrap());
    assert!(mn[0].is_nan() && mn[1].is_nan() && mn[2] == -3.0);
    let s = f64s(
        &t(&[-0.0f32, 0.0, -5.0, f32::NAN, f32::INFINITY])
            .sign()
            .unwrap(),
    );
    assert_eq!(&s[..3], &[0.0, 0.0, -1.0]);
    assert!(s[3].is_nan() && s[4] == 1.0);
    let r = t(&[0.5f64, 1.5, 2.5, -0.5, -2.5, 3.7]).round().unwrap();
    assert_eq!(f64s(&r), vec![0.0, 2.0, 2.0, -0.0, -2.0, 4.0]);
    let d = f64s(&t(&[1.0f32, 0.0, -1.0]).div(0.0).unwrap());
    assert!(d[0] == f64::INFINITY && d[1].is_nan() && d[2] == f64::NEG_INFINITY);
    assert_eq!(
        f64s(&t(&[-7.5f64, 7.5]).remainder(2.0).unwrap()),
        vec![0.5, 1.5]
    );
    assert_eq!(
        f64s(&t(&[-7.5f64, 7.5]).floor_divide(-2.0).unwrap()),
        vec![3.0, -4.0]
    );
    assert_eq!(
        f64s(&t(&[-1.0f64, 1.0]).floor_divide(f64::INFINITY).unwrap()),
        vec![-1.0, 0.0]
    );
    let fl = t(&[f64::NAN, f64::INFINITY, 1.0]);
    assert_eq!(
        fl.isnan().unwrap().to_vec::<bool>().unwrap(),
        vec![true, false, false]
    );
    assert_eq!(
        fl.isinf().unwrap().to_vec::<bool>().unwrap(),
        vec![false, true, false]
    );
    assert_eq!(
        fl.isfinite().unwrap().to_vec::<bool>().unwrap(),
        vec![false, false, true]
    );
    assert!(f64s(&t(&[f32::NAN]).relu().unwrap())[0].is_nan());
    // GELU against known values of PyTorch's erf form.
    let g = f64s(&t(&[1.0f64, -1.0, 3.0]).gelu().unwrap());
    let want = [0.8413447460685429, -0.15865525393145707, 2.99595030590511];
    for (a, b) in g.iter().zip(want) {
        assert!((a - b).abs() < 1e-15, "{a} vs {b}");
    }
    assert!(f64s(&t(&[2.0f64]).sign().unwrap())[0] == 1.0);
}

#[test]
fn integers_wrap_and_divide_like_python() {
    assert_eq!(
        t(&[127i8]).add(1).unwrap().to_vec::<i8>().unwrap(),
        vec![-128]
    );
    assert_eq!(
        t(&[-128i8]).abs().unwrap().to_vec::<i8>().unwrap(),
        vec![-128]
    );
    assert_eq!(
        t(&[-128i8]).neg().unwrap().to_vec::<i8>().unwrap(),
        vec![-128]
    );
    assert_eq!(t(&[1u8]).neg().unwrap().to_vec::<u8>().unwrap(), vec![255]);
    assert_eq!(t(&[0u8]).sub(1).unwrap().to_vec::<u8>().unwrap(), vec![255]);
    assert_eq!(
        t(&[i64::MAX]).mul(2).unwrap().to_vec::<i64>().unwrap(),
        vec![-2]
    );
    assert_eq!(
        t(&[16i32]).pow(8).unwrap().to_vec::<i32>().unwrap(),
        vec![0]
    );
    let a = t(&[-7i64, 7, -7, 7]);
    let b = t(&[2i64, 2, -2, -2]);
    assert_eq!(
        a.floor_divide(&b).unwrap().to_vec::<i64>().unwrap(),
        vec![-4, 3, 3, -4]
    );
    assert_eq!(
        a.remainder(&b).unwrap().to_vec::<i64>().unwrap(),
        vec![1, 1, -1, -1]
    );
    assert_eq!(
        t(&[i32::MIN])
            .floor_divide(-1)
            .unwrap()
            .to_vec::<i32>()
            .unwrap(),
        vec![i32::MIN]
    );
    assert_eq!(
        t(&[-1i8, 1])
            .bitwise_left_shift(7)
            .unwrap()
            .to_vec::<i8>()
            .unwrap(),
        vec![-128, -128]
    );
    assert_eq!(
        t(&[-100i8])
            .bitwise_right_shift(100)
            .unwrap()
            .to_vec::<i8>()
            .unwrap(),
        vec![-1]
    );
    assert_eq!(
        t(&[5u8]).bitwise_not().unwrap().to_vec::<u8>().unwrap(),
        vec![250]
    );
    // Division by zero is an error raised before anything is written.
    let x = t(&[5i32, 6, 7]);
    let z = t(&[1i32, 0, 1]);
    assert_eq!(
        err_text(x.floor_divide(&z)),
        "floor_divide: ZeroDivisionError"
    );
    assert_eq!(err_text(x.remainder(0)), "remainder: ZeroDivisionError");
    assert!(x.floor_divide_(&z).is_err() && x.remainder_(&z).is_err());
    assert_eq!(x.to_vec::<i32>().unwrap(), vec![5, 6, 7]);
    // An empty result divides nothing.
    assert_eq!(
        Tensor::zeros(&[0], I32)
            .unwrap()
            .floor_divide(0)
            .unwrap()
            .numel(),
        0
    );
    assert_eq!(
        err_text(x.pow(-1)),
        "pow: Integers to negative integer powers are not allowed."
    );
    assert_eq!(err_text(x.pow(&t(&[1i32, -2, 0]))), err_text(x.pow(-1)));
    assert_eq!(f64s(&x.pow(-1.0).unwrap())[0], 0.2f32 as f64);
}

#[test]
fn error_texts() {
    let a = Tensor::zeros(&[2, 3], F32).unwrap();
    let b = Tensor::zeros(&[2, 4], F32).unwrap();
    let e = a.add(&b).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Shape);
    assert_eq!(
        e.to_string(),
        "add: The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"
    );
    let m = t(&[true, false]);
    assert!(err_text(m.neg()).ends_with("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."));
    assert!(err_text(m.sub(&m)).contains("with two bool tensors is not supported"));
    assert!(err_text(t(&[1i64]).sub(true)).contains("with a bool tensor is not supported"));
    let e = t(&[1.0f32]).bitwise_and(&t(&[1.0f32])).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DType);
    assert_eq!(
        e.to_string(),
        "bitwise_and: \"bitwise_and_cpu\" not implemented for 'Float'"
    );
    assert!(t(&[1.0f64]).bitwise_not().is_err());
    assert!(m.abs().is_err() && m.relu().is_err() && m.floor_divide(&m).is_err());
    let l = t(&[1i64, 2]);
    assert_eq!(
        err_text(l.div_(2)),
        "div: result type Float can't be cast to the desired output type Long"
    );
    assert!(err_text(l.sqrt_()).contains("result type Float can't be cast"));
    assert!(err_text(m.add_(1))
        .contains("result type Long can't be cast to the desired output type Bool"));
    assert_eq!(
        err_text(t(&[1.0f32]).add_(&Tensor::zeros(&[2, 1], F32).unwrap())),
        "add: output with shape [1] doesn't match the broadcast shape [2, 1]"
    );
    assert_eq!(
        err_text(Tensor::where_cond(&l, &l, 0)),
        "where: where expected condition to be a boolean tensor, but got a tensor with dtype Long"
    );
    assert!(
        err_text(l.clamp(None, None)).contains("At least one of 'min' or 'max' must not be None")
    );
    assert_eq!(l.to_vec::<i64>().unwrap(), vec![1, 2]);
}

#[test]
fn in_place_overlap() {
    let x = Tensor::arange(0, 3, 1, F32).unwrap();
    let e = x.expand(&[4, 3]).unwrap().add_(1).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Overlap);
    assert!(e.to_string().contains(
        "unsupported operation: more than one element of the written-to tensor refers to a single memory location"
    ));
    assert!(x.expand(&[2, 3]).unwrap().neg_().is_err());
    assert_eq!(x.to_vec::<f32>().unwrap(), vec![0.0, 1.0, 2.0]);
    // An input that overlaps the output is staged: the result is as if read first.
    let x = Tensor::arange(0, 6, 1, I64).unwrap();
    x.add_(&x.flip(&[0]).unwrap()).unwrap();
    assert_eq!(x.to_vec::<i64>().unwrap(), vec![5; 6]);
    let y = Tensor::arange(0, 6, 1, F64).unwrap();
    y.slice(0, Some(1), None, 1)
        .unwrap()
        .mul_(&y.slice(0, None, Some(5), 1).unwrap())
        .unwrap();
    assert_eq!(f64s(&y), vec![0.0, 0.0, 2.0, 6.0, 12.0, 20.0]);
    let m = Tensor::arange(0, 9, 1, I32).unwrap().view(&[3, 3]).unwrap();
    m.sub_(&m.t().unwrap()).unwrap();
    assert_eq!(
        m.to_vec::<i32>().unwrap(),
        vec![0, -2, -4, 2, 0, -2, 4, 2, 0]
    );
    let v = x.version();
    x.neg_().unwrap();
    assert!(x.version() > v);
    // Small contiguous ops take the flat path: an input that is exactly the output, one
    // element of the output broadcast (staged, so read before any write), and a
    // one-element input from another storage.
    let z = Tensor::arange(0, 5, 1, I64).unwrap();
    z.add_(&z).unwrap();
    assert_eq!(z.to_vec::<i64>().unwrap(), vec![0, 2, 4, 6, 8]);
    z.sub_(&z.select(0, 3).unwrap()).unwrap();
    assert_eq!(z.to_vec::<i64>().unwrap(), vec![-6, -4, -2, 0, 2]);
    z.mul_(&z.slice(0, Some(4), None, 1).unwrap()).unwrap();
    assert_eq!(z.to_vec::<i64>().unwrap(), vec![-12, -8, -4, 0, 4]);
    let one = Tensor::full(&[1, 1], 3i64, I64).unwrap();
    assert_eq!(z.add(&one).unwrap().shape(), &[1, 5]);
    assert_eq!(
        one.sub(&z).unwrap().to_vec::<i64>().unwrap(),
        vec![15, 11, 7, 3, -1]
    );
    let w = Tensor::arange(0, 4, 1, I64).unwrap().view(&[2, 2]).unwrap();
    w.add_(&one.view(&[1]).unwrap()).unwrap();
    assert_eq!(w.to_vec::<i64>().unwrap(), vec![3, 4, 5, 6]);
}

#[test]
fn in_place_casts_into_self() {
    let x = t(&[1i32, 2, 3]);
    x.add_(&t(&[i64::from(i32::MAX), 0, 0])).unwrap();
    assert_eq!(x.to_vec::<i32>().unwrap(), vec![i32::MIN, 2, 3]);
    let h = Tensor::ones(&[2], F16).unwrap();
    h.mul_(&t(&[0.5f64, 3.0])).unwrap();
    assert_eq!(f64s(&h), vec![0.5, 3.0]);
    let f = t(&[1.5f32, -2.5]);
    f.clamp_(Some(Scalar::Int(-1)), Some(Scalar::Float(1.0)))
        .unwrap();
    assert_eq!(f64s(&f), vec![1.0, -1.0]);
    assert!(t(&[1i32]).clamp_(Some(Scalar::Float(0.5)), None).is_err());
    let b = t(&[true, false]);
    b.bitwise_xor_(true).unwrap();
    assert_eq!(b.to_vec::<bool>().unwrap(), vec![false, true]);
}

#[test]
fn output_layout_follows_input() {
    let a = Tensor::arange(0, 12, 1, F32)
        .unwrap()
        .view(&[3, 4])
        .unwrap();
    let at = a.t().unwrap();
    let n = at.neg().unwrap();
    assert_eq!(n.strides(), at.strides());
    assert_eq!(f64s(&n), f64s(&at).iter().map(|v| -v).collect::<Vec<_>>());
    assert_eq!(at.add(&at).unwrap().strides(), at.strides());
    assert_eq!(at.add(1).unwrap().strides(), at.strides());
    assert_eq!(
        at.gt(&at.contiguous().unwrap()).unwrap().strides(),
        at.strides()
    );
    let p = Tensor::zeros(&[2, 3, 4], I64)
        .unwrap()
        .permute(&[2, 0, 1])
        .unwrap();
    assert_eq!(p.bitwise_not().unwrap().strides(), p.strides());
    // A flipped input gives a dense output in the same dim order.
    let f = a.flip(&[0]).unwrap().exp().unwrap();
    assert_eq!(f.strides(), &[4, 1]);
}

#[test]
fn operators() {
    let a = t(&[1.0f32, 2.0, 3.0]);
    let b = t(&[4.0f32, 5.0, 6.0]);
    assert_eq!(f64s(&(&a + &b).unwrap()), vec![5.0, 7.0, 9.0]);
    assert_eq!(f64s(&(&b - &a).unwrap()), vec![3.0, 3.0, 3.0]);
    assert_eq!(f64s(&(&a * 2.0).unwrap()), vec![2.0, 4.0, 6.0]);
    assert_eq!(f64s(&(&a / 2).unwrap()), vec![0.5, 1.0, 1.5]);
    assert_eq!(f64s(&(1.0 - &a).unwrap()), vec![0.0, -1.0, -2.0]);
    assert_eq!(f64s(&(6 / &a).unwrap()), vec![6.0, 3.0, 2.0]);
    assert_eq!(f64s(&(&a % 2.0).unwrap()), vec![1.0, 0.0, 1.0]);
    assert_eq!(f64s(&(-&a).unwrap()), vec![-1.0, -2.0, -3.0]);
    let owned = ((a.clone() + b.clone()).unwrap() * 2).unwrap();
    assert_eq!(f64s(&owned), vec![10.0, 14.0, 18.0]);
    let i = t(&[6i64, -7]);
    assert_eq!((&i % 4).unwrap().to_vec::<i64>().unwrap(), vec![2, 1]);
    assert_eq!((!&i).unwrap().to_vec::<i64>().unwrap(), vec![-7, 6]);
    assert_eq!((&i & 3).unwrap().to_vec::<i64>().unwrap(), vec![2, 1]);
    assert_eq!((&i | &i).unwrap().to_vec::<i64>().unwrap(), vec![6, -7]);
    let m = t(&[true, false]);
    assert_eq!((!&m).unwrap().to_vec::<bool>().unwrap(), vec![false, true]);
    assert_eq!(
        (&m ^ true).unwrap().to_vec::<bool>().unwrap(),
        vec![false, true]
    );
    assert!((!&a).is_err());
    assert!((-&m).is_err());
    assert!((&a + &Tensor::zeros(&[2], F32).unwrap()).is_err());
}

#[test]
fn where_and_clamp_examples() {
    let x = t(&[-2i32, 0, 3]);
    let w = Tensor::where_cond(&x.gt(0).unwrap(), &x, 0.5).unwrap();
    assert_eq!((w.dtype(), f64s(&w)), (F32, vec![0.5, 0.5, 3.0]));
    let c = Tensor::from_vec(vec![true, false], &[2, 1]).unwrap();
    let w = Tensor::where_cond(&c, &x, &x.neg().unwrap()).unwrap();
    assert_eq!(w.shape(), &[2, 3]);
    assert_eq!(w.to_vec::<i32>().unwrap(), vec![-2, 0, 3, 2, 0, -3]);
    let cl = x
        .clamp(Some(Scalar::Int(-1)), Some(Scalar::Int(1)))
        .unwrap();
    assert_eq!(cl.to_vec::<i32>().unwrap(), vec![-1, 0, 1]);
    let cl = x.clamp(None, Some(Scalar::Float(0.5))).unwrap();
    assert_eq!((cl.dtype(), f64s(&cl)), (F32, vec![-2.0, 0.0, 0.5]));
    // min > max gives max everywhere; NaN stays NaN.
    let f = t(&[f64::NAN, 1.0, 9.0]);
    let cl = f64s(
        &f.clamp(Some(Scalar::Float(5.0)), Some(Scalar::Float(2.0)))
            .unwrap(),
    );
    assert!(cl[0].is_nan() && cl[1..] == [2.0, 2.0]);
    let lo = t(&[0.0f64, 2.0, 0.0]);
    let cl = f.clamp_tensor(Some(&lo), None).unwrap();
    assert_eq!(f64s(&cl)[1..], [2.0, 9.0]);
    assert!(t(&[true]).clamp(Some(Scalar::Bool(false)), None).is_err());
}

#[test]
fn parallel_matches_serial() {
    // Above the parallel thresholds of memory-bound (PAR_MIN, 2^18) and math ops.
    let n = 600 * 500;
    let a = Tensor::randn(&[600, 500], F32, 7).unwrap();
    let b = Tensor::randn(&[500, 600], F32, 8).unwrap().t().unwrap();
    let row = Tensor::randn(&[500], F32, 9).unwrap();
    let ints = Tensor::arange(0, n as i64, 1, I32)
        .unwrap()
        .view(&[600, 500])
        .unwrap();
    let run = || -> Vec<Vec<u64>> {
        let bits = |x: Tensor| -> Vec<u64> { f64s(&x).iter().map(|v| v.to_bits()).collect() };
        vec![
            bits(a.add(&b).unwrap()),
            bits(a.mul(&row).unwrap().gelu().unwrap()),
            bits(b.flip(&[0]).unwrap().atan2(&a).unwrap()),
            bits(ints.t().unwrap().floor_divide(7).unwrap()),
            bits(Tensor::where_cond(&a.gt(&b).unwrap(), &a, &row).unwrap()),
            bits(
                a.clamp(Some(Scalar::Float(-0.5)), Some(Scalar::Float(0.5)))
                    .unwrap(),
            ),
            bits({
                let c = a.contiguous_copy().unwrap();
                c.sigmoid_().unwrap();
                c
            }),
        ]
    };
    let pool = |k| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(k)
            .build()
            .unwrap()
    };
    let one = pool(1).install(run);
    let two = pool(2).install(run);
    assert!(one == two, "results differ between 1 and 2 threads");
}

/// Scalar operands reuse one cached 0-d tensor per thread and dtype (`ops/elementwise.rs`,
/// `scalar_operand`): each op must still see its own value, on every thread, in every
/// dtype, one op after another and from several threads at once.
#[test]
fn scalar_operands_see_their_own_values_on_every_thread() {
    let threads: Vec<_> = (0..4i64)
        .map(|k| {
            std::thread::spawn(move || {
                let f = Tensor::arange(0, 5, 1, F32).unwrap();
                let i = Tensor::arange(0, 5, 1, I64).unwrap();
                let b = Tensor::from_slice(&[true, false, true], &[3]).unwrap();
                for step in 0..300i64 {
                    let s = step * 4 + k;
                    let got = f.mul(s as f64).unwrap().to_vec::<f32>().unwrap();
                    let want: Vec<f32> = (0..5).map(|x| (x * s) as f32).collect();
                    assert_eq!(got, want);
                    // Two scalar ops of one dtype in one expression, and another dtype.
                    let got = i.add(s).unwrap().sub(k).unwrap().to_vec::<i64>().unwrap();
                    let want: Vec<i64> = (0..5).map(|x| x + s - k).collect();
                    assert_eq!(got, want);
                    let flip = step % 2 == 0;
                    let got = b.logical_xor(flip).unwrap().to_vec::<bool>().unwrap();
                    assert_eq!(got, [!flip, flip, !flip]);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}
