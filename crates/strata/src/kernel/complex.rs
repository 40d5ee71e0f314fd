//! The CPU loops of the complex ops whose result is real (`abs`, `angle`) or that build a
//! complex tensor from two real ones (`complex(real, imag)`, `polar(abs, angle)`); the op
//! layer is `ops/complex.rs`. The complex ops that keep their dtype are table entries
//! (`ops/table.rs`, their `complex` arms).

use super::elementwise_loops::{binary_into, unary_into, Map1, RUN_BLOCK};
use super::math::{not_implemented, Complex, Real};
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::ops::table::Cost;
use crate::tensor::Tensor;
use crate::{Complex32, Complex64};

/// `|z|`: where the squares can neither overflow nor lose the smaller part to underflow,
/// the direct root `√(re² + im²)` (within an ulp of `hypot`, and vector code); elsewhere,
/// and for NaN and infinities, `hypot`.
struct AbsMap<C>(std::marker::PhantomData<C>);

impl<C: Complex> AbsMap<C> {
    /// The range of `re² + im²` where the direct root is accurate.
    #[inline(always)]
    fn safe() -> (C::Part, C::Part) {
        if size_of::<C::Part>() == 4 {
            (C::Part::from_f64(1e-30), C::Part::from_f64(1e30))
        } else {
            (C::Part::from_f64(1e-270), C::Part::from_f64(1e270))
        }
    }
}

impl<C: Complex> Map1<C, C::Part> for AbsMap<C> {
    #[inline(always)]
    fn one(&self, z: C) -> C::Part {
        let (x, y) = (z.re(), z.im());
        let s = x * x + y * y;
        let (lo, hi) = Self::safe();
        if s > lo && s < hi {
            s.sqrt()
        } else {
            x.hypot(y)
        }
    }

    /// The direct roots of the whole block without a branch (vector code), then `hypot`
    /// for the elements outside the safe range, if any.
    #[inline(always)]
    fn block(&self, z: &[C; RUN_BLOCK]) -> [C::Part; RUN_BLOCK] {
        let (lo, hi) = Self::safe();
        let mut out = [C::Part::ZERO; RUN_BLOCK];
        let mut outside = 0u32;
        for i in 0..RUN_BLOCK {
            let (x, y) = (z[i].re(), z[i].im());
            let s = x * x + y * y;
            out[i] = s.sqrt();
            outside |= u32::from(!(s > lo && s < hi));
        }
        if outside != 0 {
            for i in 0..RUN_BLOCK {
                out[i] = self.one(z[i]);
            }
        }
        out
    }

    /// [`AbsMap::block`] a block at a time (the default applies `one`, whose `hypot`
    /// branch kept the loop scalar: complex64 `abs` 4.9× NumPy's time).
    #[inline(always)]
    fn slices(&self, z: &[C], o: &mut [C::Part]) {
        let mut zs = z.chunks_exact(RUN_BLOCK);
        let mut os = o.chunks_exact_mut(RUN_BLOCK);
        for (zc, oc) in (&mut zs).zip(&mut os) {
            if let (Some(za), Some(oa)) = (
                zc.first_chunk::<RUN_BLOCK>(),
                oc.first_chunk_mut::<RUN_BLOCK>(),
            ) {
                *oa = self.block(za);
            }
        }
        for (o, &z) in os.into_remainder().iter_mut().zip(zs.remainder()) {
            *o = self.one(z);
        }
    }
}

/// `|z|` of complex `a` into `out` (of `a`'s part dtype), without undue overflow.
pub(crate) fn abs_into(out: &Tensor, a: &Tensor) -> Result<()> {
    match a.dtype() {
        DType::C64 => unary_into::<_, _, _, false>(
            "abs",
            Cost::Memory,
            out,
            a,
            AbsMap::<Complex32>(std::marker::PhantomData),
        ),
        DType::C128 => unary_into::<_, _, _, false>(
            "abs",
            Cost::Memory,
            out,
            a,
            AbsMap::<Complex64>(std::marker::PhantomData),
        ),
        dt => Err(not_implemented("abs", dt)),
    }
}

/// The argument `atan2(im, re)` of complex `a` into `out` (of `a`'s part dtype).
pub(crate) fn angle_into(out: &Tensor, a: &Tensor) -> Result<()> {
    fn k<C: Complex>(z: C) -> C::Part {
        z.im().atan2(z.re())
    }
    match a.dtype() {
        DType::C64 => unary_into::<_, _, _, true>("angle", Cost::Math, out, a, k::<Complex32>),
        DType::C128 => unary_into::<_, _, _, true>("angle", Cost::Math, out, a, k::<Complex64>),
        dt => Err(not_implemented("angle", dt)),
    }
}

/// `re + im·i` (or, with `POLAR`, `re·(cos im + i·sin im)`) from two real tensors of the
/// part dtype of `out`, broadcast to its shape.
pub(crate) fn make_into<const POLAR: bool>(
    op: &'static str,
    out: &Tensor,
    re: &Tensor,
    im: &Tensor,
) -> Result<()> {
    fn k<C: Complex, const POLAR: bool>(a: C::Part, b: C::Part) -> C {
        if POLAR {
            C::make(a * b.cos(), a * b.sin())
        } else {
            C::make(a, b)
        }
    }
    let cost = if POLAR { Cost::Math } else { Cost::Memory };
    match out.dtype() {
        DType::C64 => binary_into(op, cost, out, re, im, k::<Complex32, POLAR>),
        DType::C128 => binary_into(op, cost, out, re, im, k::<Complex64, POLAR>),
        dt => Err(not_implemented(op, dt)),
    }
}

/// The product of each row of `r` elements of the contiguous complex `a` into the
/// contiguous `out` (one element per row; an empty row gives 1), in sequence.
pub(crate) fn prod_rows(out: &Tensor, a: &Tensor, r: usize) -> Result<()> {
    fn k<C: Complex>(out: &Tensor, a: &Tensor, r: usize) -> Result<()> {
        let src = a.read_slice::<C>()?;
        let mut dst = out.write_slice::<C>()?;
        let one = C::make(<C::Part as Real>::ONE, <C::Part as Real>::ZERO);
        for (i, o) in dst.iter_mut().enumerate() {
            *o = src[i * r..(i + 1) * r].iter().fold(one, |acc, &z| acc * z);
        }
        Ok(())
    }
    match a.dtype() {
        DType::C64 => k::<Complex32>(out, a, r),
        DType::C128 => k::<Complex64>(out, a, r),
        dt => Err(not_implemented("prod", dt)),
    }
}

/// The running product along each row of `r` elements of the contiguous complex `a` into
/// the contiguous `out` of the same shape.
pub(crate) fn cumprod_rows(out: &Tensor, a: &Tensor, r: usize) -> Result<()> {
    fn k<C: Complex>(out: &Tensor, a: &Tensor, r: usize) -> Result<()> {
        let src = a.read_slice::<C>()?;
        let mut dst = out.write_slice::<C>()?;
        for (s, d) in src.chunks(r.max(1)).zip(dst.chunks_mut(r.max(1))) {
            let mut acc = C::make(<C::Part as Real>::ONE, <C::Part as Real>::ZERO);
            for (x, y) in s.iter().zip(d.iter_mut()) {
                acc = acc * *x;
                *y = acc;
            }
        }
        Ok(())
    }
    match a.dtype() {
        DType::C64 => k::<Complex32>(out, a, r),
        DType::C128 => k::<Complex64>(out, a, r),
        dt => Err(not_implemented("cumprod", dt)),
    }
}
