//! Integer `floor_divide`, `remainder` and `fmod` by one divisor for the whole tensor
//! (`t // 7`, `t % k`): a multiply and shifts per element instead of a hardware division.
//!
//! A hardware division costs 10–20 cycles an element and does not vectorise; NumPy divides
//! by an invariant integer with libdivide's multiply-high. This is the same method,
//! Granlund and Montgomery's ("Division by invariant integers using multiplication",
//! PLDI 1994, figure 4.1): for an unsigned `N`-bit divisor `d ≥ 2`, with
//! `l = ⌈log₂ d⌉` and `m = ⌊2ᴺ·(2ˡ − d)/d⌋ + 1` (which fits in `N` bits),
//!
//! ```text
//! t = ⌊m·x / 2ᴺ⌋,   ⌊x/d⌋ = (t + ((x − t) >> 1)) >> (l − 1)    for every N-bit x.
//! ```
//!
//! The product is taken in the type twice as wide, or for 64-bit integers from four
//! 32×32-bit products (a `u128` product stays scalar); all of it vectorises. A divisor
//! of ±1 needs no division and has its own closure.
//!
//! Signed floor division reduces to the unsigned one on a magnitude: for `d > 0`,
//! `⌊a/d⌋ = s ^ ⌊(a ^ s)/d⌋` with `s = −1` where `a < 0` (for negative `a`, `a ^ s` is
//! `−a − 1 ≥ 0`); for `d < 0` the same on `−a` (taken as unsigned, so `−MIN` fits), with
//! `s = −1` where `a > 0`. Truncating division takes the magnitude's quotient and the
//! sign. Remainders are `a − q·d`, wrapping, which is exact (the true remainder fits).
//! Every result equals the per-element functions' (`floor_div_int`, `remainder_int`,
//! `Int::w_rem` in `kernel/math.rs`), wrap-around at `MIN // −1` included; the tests
//! compare them over every 8-bit pair and random and extreme wider values.

use super::elementwise_loops::unary_into;
use super::math::Int;
use crate::error::Result;
use crate::ops::table::{Binary, Cost};
use crate::tensor::Tensor;

/// An unsigned divisor `d ≥ 2` as its multiplier and shift.
#[derive(Debug, Clone, Copy)]
struct Magic<U> {
    m: U,
    /// `⌈log₂ d⌉ − 1`.
    shift: u32,
}

/// The integers that divide by a [`Magic`]: `U` the unsigned type of the same width.
pub(crate) trait DivideInt: Int {
    /// Runs `kind` (`FloorDivide`, `Remainder` or `Fmod`) of `a` by the divisor `d` into
    /// `out`; `None` for other ops and for `d == 0`.
    fn run_by(kind: Binary, out: &Tensor, a: &Tensor, d: Self) -> Option<Result<()>>;
}

macro_rules! unsigned_magic {
    ($u:ty, $wide:ty) => {
        impl Magic<$u> {
            /// `d ≥ 2`.
            fn new(d: $u) -> Self {
                const N: u32 = <$u>::BITS;
                let l = N - (d - 1).leading_zeros();
                let m = ((1u128 << N) * ((1u128 << l) - d as u128)) / d as u128 + 1;
                Magic {
                    m: m as $u,
                    shift: l - 1,
                }
            }

            /// `⌊x / d⌋`.
            #[inline(always)]
            fn div(self, x: $u) -> $u {
                let t = ((self.m as $wide * x as $wide) >> <$u>::BITS) as $u;
                (t + ((x - t) >> 1)) >> self.shift
            }
        }
    };
}

unsigned_magic!(u8, u16);
unsigned_magic!(u16, u32);
unsigned_magic!(u32, u64);

impl Magic<u64> {
    /// `d ≥ 2`.
    fn new(d: u64) -> Self {
        let l = 64 - (d - 1).leading_zeros();
        let m = ((1u128 << 64) * ((1u128 << l) - d as u128)) / d as u128 + 1;
        Magic {
            m: m as u64,
            shift: l - 1,
        }
    }

    /// `⌊x / d⌋`, the high word of `m·x` from four 32×32-bit products (a `u128` product
    /// stays scalar; these vectorise, `vpmuludq`).
    #[inline(always)]
    fn div(self, x: u64) -> u64 {
        const LOW: u64 = 0xffff_ffff;
        let (ml, mh) = (self.m & LOW, self.m >> 32);
        let (xl, xh) = (x & LOW, x >> 32);
        let (ll, lh, hl) = (ml * xl, ml * xh, mh * xl);
        // Below 3·2³²: no carry lost.
        let mid = (ll >> 32) + (lh & LOW) + (hl & LOW);
        let t = mh * xh + (lh >> 32) + (hl >> 32) + (mid >> 32);
        (t + ((x - t) >> 1)) >> self.shift
    }
}

/// The three ops through a closure per op: `$q(a)` the floor quotient, `$t(a)` the
/// truncated one, both wrapping as the per-element functions do.
macro_rules! run_ops {
    ($kind:expr, $out:expr, $a:expr, $d:expr, $ty:ty, |$x:ident| floor $q:expr, trunc $t:expr) => {{
        let (kind, out, a, d) = ($kind, $out, $a, $d);
        let op = kind.name();
        Some(match kind {
            Binary::FloorDivide => {
                unary_into::<$ty, $ty, _, true>(op, Cost::Math, out, a, move |$x: $ty| $q)
            }
            Binary::Remainder => unary_into::<$ty, $ty, _, true>(op, Cost::Math, out, a, {
                move |$x: $ty| $x.wrapping_sub(($q).wrapping_mul(d))
            }),
            Binary::Fmod => unary_into::<$ty, $ty, _, true>(op, Cost::Math, out, a, {
                move |$x: $ty| $x.wrapping_sub(($t).wrapping_mul(d))
            }),
            _ => return None,
        })
    }};
}

macro_rules! unsigned_divide {
    ($u:ty) => {
        impl DivideInt for $u {
            fn run_by(kind: Binary, out: &Tensor, a: &Tensor, d: $u) -> Option<Result<()>> {
                if d == 0 {
                    return None;
                }
                if d == 1 {
                    return run_ops!(kind, out, a, d, $u, |x| floor x, trunc x);
                }
                let g = Magic::<$u>::new(d);
                run_ops!(kind, out, a, d, $u, |x| floor g.div(x), trunc g.div(x))
            }
        }
    };
}

unsigned_divide!(u8);
unsigned_divide!(u16);
unsigned_divide!(u32);
unsigned_divide!(u64);

macro_rules! signed_divide {
    ($i:ty, $u:ty) => {
        impl DivideInt for $i {
            fn run_by(kind: Binary, out: &Tensor, a: &Tensor, d: $i) -> Option<Result<()>> {
                if d == 0 {
                    return None;
                }
                if d == 1 || d == -1 {
                    // `a // ±1` and truncation are `a·d` (wrapping: `MIN // −1` is `MIN`).
                    return run_ops!(kind, out, a, d, $i, |x| floor x.wrapping_mul(d), trunc x.wrapping_mul(d));
                }
                let g = Magic::<$u>::new(d.unsigned_abs());
                // The truncated quotient: the magnitude's, negated when the signs differ.
                let neg_d = -((d < 0) as $i);
                let trunc = move |x: $i| {
                    let q = g.div(x.unsigned_abs()) as $i;
                    let s = (x >> (<$i>::BITS - 1)) ^ neg_d;
                    (q ^ s).wrapping_sub(s)
                };
                if d > 0 {
                    run_ops!(kind, out, a, d, $i, |x| floor {
                        let s = x >> (<$i>::BITS - 1);
                        s ^ g.div((x ^ s) as $u) as $i
                    }, trunc trunc(x))
                } else {
                    run_ops!(kind, out, a, d, $i, |x| floor {
                        let s = -((x > 0) as $i);
                        s ^ g.div((x.wrapping_neg() ^ s) as $u) as $i
                    }, trunc trunc(x))
                }
            }
        }
    };
}

signed_divide!(i8, u8);
signed_divide!(i16, u16);
signed_divide!(i32, u32);
signed_divide!(i64, u64);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::math::{floor_div_int, remainder_int};
    use crate::DType;

    /// `kind` of `xs` by `d` through [`DivideInt::run_by`], contiguous and at a negative
    /// step, against the per-element functions.
    fn check<I: DivideInt + crate::dtype::Element + std::fmt::Debug>(xs: &[I], d: I) {
        let t = Tensor::from_vec(xs.to_vec(), &[xs.len()]).unwrap();
        for (kind, f) in [
            (Binary::FloorDivide, floor_div_int::<I> as fn(I, I) -> I),
            (Binary::Remainder, remainder_int::<I>),
            (Binary::Fmod, |a: I, b: I| a.w_rem(b)),
        ] {
            for src in [t.clone(), t.flip(&[0]).unwrap()] {
                let out = Tensor::zeros(&[xs.len()], I::DTYPE).unwrap();
                I::run_by(kind, &out, &src, d).unwrap().unwrap();
                let want: Vec<I> = src
                    .to_vec::<I>()
                    .unwrap()
                    .into_iter()
                    .map(|a| f(a, d))
                    .collect();
                assert_eq!(out.to_vec::<I>().unwrap(), want, "{kind:?} by {d:?}");
            }
        }
    }

    #[test]
    fn every_8_bit_pair_matches_the_hardware_division() {
        let all_i8: Vec<i8> = (i8::MIN..=i8::MAX).collect();
        let all_u8: Vec<u8> = (u8::MIN..=u8::MAX).collect();
        for d in all_i8.iter().copied().filter(|&d| d != 0) {
            check(&all_i8, d);
        }
        for d in all_u8.iter().copied().filter(|&d| d != 0) {
            check(&all_u8, d);
        }
    }

    /// Extreme and random dividends and divisors of each wider type.
    macro_rules! wide_case {
        ($name:ident, $t:ty) => {
            #[test]
            fn $name() {
                let mut s = 0x9E37_79B9_7F4A_7C15u64;
                let mut next = move || {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    s
                };
                let mut xs: Vec<$t> = vec![
                    <$t>::MIN,
                    <$t>::MIN + 1,
                    <$t>::MAX,
                    <$t>::MAX - 1,
                    0,
                    1,
                    2,
                    3,
                ];
                xs.extend((0..4000).map(|k| {
                    let r = next() as $t;
                    // Also small values, where the quotient's rounding is closest.
                    if k % 2 == 0 {
                        r
                    } else {
                        r >> (<$t>::BITS / 2)
                    }
                }));
                let mut ds: Vec<$t> = vec![
                    1,
                    2,
                    3,
                    5,
                    7,
                    10,
                    64,
                    <$t>::MAX,
                    <$t>::MAX - 1,
                    <$t>::MAX / 2 + 1,
                    <$t>::MAX / 3,
                ];
                if <$t>::MIN != 0 {
                    ds.extend([
                        <$t>::MIN,
                        <$t>::MIN + 1,
                        (0 as $t).wrapping_sub(1),
                        (0 as $t).wrapping_sub(7),
                    ]);
                }
                ds.extend(
                    (0..60)
                        .map(|k| (next() as $t) >> (k % <$t>::BITS))
                        .filter(|&d| d != 0),
                );
                for d in ds {
                    check(&xs, d);
                }
            }
        };
    }

    wide_case!(i16_values, i16);
    wide_case!(u16_values, u16);
    wide_case!(i32_values, i32);
    wide_case!(u32_values, u32);
    wide_case!(i64_values, i64);
    wide_case!(u64_values, u64);

    #[test]
    fn a_zero_dim_and_empty_tensor() {
        let t = Tensor::from_vec(vec![-7i64], &[]).unwrap();
        let out = Tensor::zeros(&[], DType::I64).unwrap();
        i64::run_by(Binary::FloorDivide, &out, &t, 2)
            .unwrap()
            .unwrap();
        assert_eq!(out.to_vec::<i64>().unwrap(), [-4]);
        let e = Tensor::zeros(&[0], DType::I32).unwrap();
        i32::run_by(Binary::Remainder, &e.clone(), &e, 3)
            .unwrap()
            .unwrap();
    }
}
