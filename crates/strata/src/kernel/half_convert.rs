//! Block conversions between the half types (`f16`, `bf16`) and `f32`/`f64`.
//!
//! Half precision is stored in 16 bits and computed in `f32`: every half kernel
//! (elementwise ops, casts, reductions) widens a block of elements, works in `f32`, and
//! narrows the result. Done one element at a time through `half`'s scalar conversions
//! that costs a CPU-feature check and a call per element (30x PyTorch's time for an f16
//! `a + b`); done a block at a time here it is a few vector instructions per 8 or 16
//! elements:
//!
//! - `f16`, at [`Level::Avx2`]: F16C (`vcvtph2ps` / `vcvtps2ph`, round to nearest even),
//!   8 lanes; at [`Level::Avx512`] the AVX-512F forms, 16 lanes (the tail of a block goes
//!   through the AVX2 code). At [`Level::Portable`] a branch-free bit manipulation the
//!   compiler vectorises.
//! - `bf16`: a branch-free bit manipulation at every level (the upper half of an `f32`,
//!   rounded to nearest even), compiled inside the callers' per-level copies so it runs
//!   as AVX2 / AVX-512 code there; narrowing at [`Level::Avx512`] on a CPU with
//!   AVX512_BF16 by `vcvtne2ps2bf16`, thirty-two lanes an instruction
//!   ([`narrow_bf16_native`]; [`run_at`] has a copy of each caller compiled with it).
//!
//! Every path gives the bits `half`'s own scalar conversions give (`f16::from_f32`,
//! `to_f32`, `bf16::from_f32`, `to_f32`), NaN payloads included: a NaN keeps the top of
//! its payload and is made quiet, subnormals are exact, values past the largest finite
//! half round to ±inf, ties go to even. `crates/strata/tests/half_vector.rs` checks each
//! level against them (every `f16` bit pattern; dense sweeps and the special values of
//! `f32`).
//!
//! `f64` goes through `f32`: widening is exact twice; narrowing first rounds to `f32`
//! *to odd* (truncate, then set the last bit when inexact), which makes the second
//! rounding give the correctly rounded half of the `f64` (the `f32` keeps more than two
//! extra bits), as NumPy's `float64 → float16` does. (`half`'s `f16::from_f64` rounds
//! twice on an F16C machine and truncates the `f64` first without one.) At AVX-512 the
//! rounding to odd is a conversion with the rounding mode in the instruction (toward
//! zero) and a masked OR, and float16 takes both roundings in registers
//! (`narrow_f64_run`).
//!
//! Why not `half`'s slice conversions (`HalfFloatSliceExt::convert_from_f32_slice` and
//! friends): they do use F16C when the CPU has it, detected at runtime, but through a
//! call per 8 elements into a function that copies each chunk to and from a stack array,
//! and never with AVX-512; they cannot be inlined into a caller's AVX2 loop, where the
//! conversion must sit beside the `f32` work it feeds for that work to stay in
//! registers; and their `bf16` and `f64` conversions are scalar per element. The
//! functions here are `#[inline]` into the callers' per-level copies instead.

use half::{bf16, f16};

use super::cpu::{self, Level};

/// Elements per block of the half kernels' working arrays (`f32` blocks of 256 bytes).
pub const BLOCK: usize = 64;

/// A half type with block conversions to and from `f32`.
pub trait HalfBlock: crate::dtype::Element {
    /// Widens `n` elements from `src` to `f32`s at `dst` at CPU level `level`.
    ///
    /// # Safety
    /// `src` readable for `n` elements, `dst` writable for `n` `f32`s (any alignment);
    /// `level` at most [`cpu::detected`].
    unsafe fn widen(level: Level, src: *const u8, dst: *mut f32, n: usize);

    /// Narrows `n` `f32`s from `src` to elements at `dst` (round to nearest even).
    ///
    /// # Safety
    /// As for [`HalfBlock::widen`], the other way round.
    unsafe fn narrow(level: Level, src: *const f32, dst: *mut u8, n: usize);
}

impl HalfBlock for f16 {
    #[inline(always)]
    unsafe fn widen(level: Level, src: *const u8, dst: *mut f32, n: usize) {
        let src = src.cast::<u16>();
        // SAFETY: the caller's contract; each level's code only where the CPU has it.
        unsafe {
            #[cfg(target_arch = "x86_64")]
            match level {
                Level::Avx512 => return x86::f16_to_f32_avx512(src, dst, n),
                Level::Avx2 => return x86::f16_to_f32_avx2(src, dst, n),
                Level::Portable => {}
            }
            let _ = level;
            for k in 0..n {
                dst.add(k)
                    .write_unaligned(f16_bits_to_f32(src.add(k).read_unaligned()));
            }
        }
    }

    #[inline(always)]
    unsafe fn narrow(level: Level, src: *const f32, dst: *mut u8, n: usize) {
        let dst = dst.cast::<u16>();
        // SAFETY: as in `widen`.
        unsafe {
            #[cfg(target_arch = "x86_64")]
            match level {
                Level::Avx512 => return x86::f32_to_f16_avx512(src, dst, n),
                Level::Avx2 => return x86::f32_to_f16_avx2(src, dst, n),
                Level::Portable => {}
            }
            let _ = level;
            for k in 0..n {
                dst.add(k)
                    .write_unaligned(f32_to_f16_bits(src.add(k).read_unaligned()));
            }
        }
    }
}

impl HalfBlock for bf16 {
    #[inline(always)]
    unsafe fn widen(_: Level, src: *const u8, dst: *mut f32, n: usize) {
        let src = src.cast::<u16>();
        for k in 0..n {
            // SAFETY: the caller's contract.
            unsafe {
                dst.add(k)
                    .write_unaligned(bf16_bits_to_f32(src.add(k).read_unaligned()))
            };
        }
    }

    #[inline(always)]
    unsafe fn narrow(level: Level, src: *const f32, dst: *mut u8, n: usize) {
        let dst = dst.cast::<u16>();
        if bf16_native(level) {
            // SAFETY: the CPU has AVX512_BF16 (`bf16_native`); the caller's contract.
            return unsafe { narrow_bf16_native(src, dst, n) };
        }
        for k in 0..n {
            // SAFETY: the caller's contract.
            unsafe {
                dst.add(k)
                    .write_unaligned(f32_to_bf16_bits(src.add(k).read_unaligned()))
            };
        }
    }
}

/// `f16` bits to `f32`, branch-free (selects), exact; NaNs made quiet keeping their
/// payload (as `half` and F16C do).
#[inline(always)]
pub fn f16_bits_to_f32(h: u16) -> f32 {
    let h = h as u32;
    let sign = (h & 0x8000) << 16;
    let em = h & 0x7fff;
    // Normal: rebias the exponent by 127 - 15.
    let normal = (em << 13) + 0x3800_0000;
    // Infinity or NaN: all exponent bits, the payload kept, a NaN's quiet bit set.
    let quiet = if em > 0x7c00 { 0x0040_0000 } else { 0 };
    let special = (em << 13) | 0x7f80_0000 | quiet;
    // Subnormal or zero: `em` units of 2^-24, exact in f32.
    let sub = (em as f32 * f32::from_bits(0x3380_0000)).to_bits();
    let r = if em >= 0x7c00 {
        special
    } else if em < 0x0400 {
        sub
    } else {
        normal
    };
    f32::from_bits(r | sign)
}

/// `f32` to `f16` bits, round to nearest even, branch-free (selects); overflow to ±inf;
/// NaNs quiet with the top of their payload (as `half` and F16C do).
#[inline(always)]
pub fn f32_to_f16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = (b >> 16) & 0x8000;
    let a = b & 0x7fff_ffff;
    let nan = 0x7e00 | ((a & 0x007f_ffff) >> 13);
    // Normal results: rebias, add half an ulp less one plus the kept lowest bit (ties to
    // even), truncate; a carry out of the mantissa steps the exponent (up to inf). (Each
    // form is computed for every input and selected after, so the others wrap.)
    let normal = a
        .wrapping_sub(0x3800_0000)
        .wrapping_add(0x0fff + ((a >> 13) & 1))
        >> 13;
    // Subnormal results (|x| < 2^-14): adding 0.5 rounds to a multiple of 2^-24 (to
    // nearest even, in the FPU); the low bits then count those units.
    let sub = (f32::from_bits(a) + 0.5)
        .to_bits()
        .wrapping_sub(0x3f00_0000);
    let r = if a > 0x7f80_0000 {
        nan
    } else if a >= 0x4780_0000 {
        0x7c00
    } else if a >= 0x3880_0000 {
        normal
    } else {
        sub
    };
    (r | sign) as u16
}

/// `bf16` bits to `f32`: the upper half; a NaN made quiet (as `half` does).
#[inline(always)]
pub fn bf16_bits_to_f32(h: u16) -> f32 {
    let h = h as u32;
    let quiet = (((h & 0x7fff) > 0x7f80) as u32) << 6;
    f32::from_bits((h | quiet) << 16)
}

/// `bf16` bits to `f32` without making a NaN quiet: the upper half, one shift. For
/// values that are computed on and then narrowed with [`f32_to_bf16_bits`] (which makes
/// every NaN quiet), this gives the same final bits as [`bf16_bits_to_f32`]: arithmetic
/// on a signalling NaN returns it quiet with its payload (the first operand's when both
/// are NaN, signalling or not), and a NaN passed through by selects or sign operations
/// is made quiet by the narrowing.
#[inline(always)]
pub fn bf16_bits_to_f32_lax(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

/// Whether the bfloat16 narrowing at `level` takes [`narrow_bf16_native`]: at the AVX-512
/// level on a CPU with AVX512_BF16.
#[inline(always)]
pub(crate) fn bf16_native(level: Level) -> bool {
    level == Level::Avx512 && crate::kernel::cpu::avx512_bf16()
}

/// `n` float32 rounded to bfloat16 bits exactly as [`f32_to_bf16_bits`] rounds them,
/// thirty-two at a time by `vcvtne2ps2bf16` (AVX512_BF16: round to nearest even, ±inf by
/// overflow, a NaN made quiet keeping the top of its payload, as the scalar form does),
/// which reads subnormal inputs as zero: a group of thirty-two holding one (a nonzero
/// fraction under a zero exponent) takes the scalar form, as does the tail. Measured:
/// bfloat16 `a * 2.0` (widen, multiply, narrow) 124 -> 72 µs per 1M on Zen 4.
///
/// # Safety
/// The CPU has AVX-512F, BW and BF16; `src` readable for `n` float32, `dst` writable for
/// `n` u16 (unaligned allowed; the two may not overlap).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
pub(crate) unsafe fn narrow_bf16_native(src: *const f32, dst: *mut u16, n: usize) {
    use std::arch::x86_64::*;
    let expm = _mm512_set1_epi32(0x7f80_0000);
    let fracm = _mm512_set1_epi32(0x007f_ffff);
    let mut k = 0;
    while k + 32 <= n {
        // SAFETY: elements `k..k + 32` are inside both runs (the caller's contract).
        unsafe {
            let lo = _mm512_loadu_si512(src.add(k).cast());
            let hi = _mm512_loadu_si512(src.add(k + 16).cast());
            let sub = (_mm512_testn_epi32_mask(lo, expm) & _mm512_test_epi32_mask(lo, fracm))
                | (_mm512_testn_epi32_mask(hi, expm) & _mm512_test_epi32_mask(hi, fracm));
            if sub == 0 {
                let r = _mm512_cvtne2ps_pbh(_mm512_castsi512_ps(hi), _mm512_castsi512_ps(lo));
                _mm512_storeu_si512(
                    dst.add(k).cast(),
                    std::mem::transmute::<__m512bh, __m512i>(r),
                );
            } else {
                for j in k..k + 32 {
                    dst.add(j)
                        .write_unaligned(f32_to_bf16_bits(src.add(j).read_unaligned()));
                }
            }
        }
        k += 32;
    }
    for j in k..n {
        // SAFETY: as above.
        unsafe {
            dst.add(j)
                .write_unaligned(f32_to_bf16_bits(src.add(j).read_unaligned()))
        };
    }
}

/// No AVX512_BF16 off x86-64 ([`bf16_native`] is false there).
///
/// # Safety
/// Never called.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) unsafe fn narrow_bf16_native(src: *const f32, dst: *mut u16, n: usize) {
    for j in 0..n {
        // SAFETY: the caller's contract.
        unsafe {
            dst.add(j)
                .write_unaligned(f32_to_bf16_bits(src.add(j).read_unaligned()))
        };
    }
}

/// `f32` to `bf16` bits, round to nearest even (overflow to ±inf by the carry); a NaN
/// keeps the top of its payload, made quiet (as `half` does).
#[inline(always)]
pub fn f32_to_bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let nan = (b >> 16) | 0x0040;
    // (Wraps only for NaNs, which take the other branch.)
    let rounded = b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16;
    let r = if b & 0x7fff_ffff > 0x7f80_0000 {
        nan
    } else {
        rounded
    };
    r as u16
}

/// `x` rounded to `f32` *to odd*: toward zero, then the last bit set when that was
/// inexact. Rounding the result to a format with at least two bits fewer (`f16`, `bf16`)
/// then gives the correctly rounded value of `x`. NaN and ±inf pass; values past
/// `f32::MAX` give `±f32::MAX` (odd), which still round to ±inf in the half types.
#[inline(always)]
pub fn f64_to_f32_odd(x: f64) -> f32 {
    let r = x as f32;
    let back = r as f64;
    // NaN compares unequal, but is neither "inexact" nor rounded away.
    let inexact = back != x && !x.is_nan();
    let away = back.abs() > x.abs();
    // `|r| > |x| ≥ 0` makes the magnitude bits non-zero: the step stays in the sign.
    let bits = r.to_bits() - (inexact && away) as u32;
    f32::from_bits(bits | inexact as u32)
}

/// `n` contiguous `f64`s rounded to `f32` to odd, [`f64_to_f32_odd`] each (the same
/// bits): explicit vector code at AVX-512, the scalar form (which vectorises) below.
///
/// # Safety
/// `src` readable and `dst` writable for `n` elements (any alignment); `level` at most
/// [`cpu::detected`].
#[inline(always)]
pub(crate) unsafe fn f64_to_f32_odd_run(level: Level, src: *const f64, dst: *mut f32, n: usize) {
    #[cfg(target_arch = "x86_64")]
    if level == Level::Avx512 {
        // SAFETY: the caller's contract; the level's features include F and VL.
        return unsafe { x86::f64_to_f32_odd_avx512(src, dst, n) };
    }
    let _ = level;
    for k in 0..n {
        // SAFETY: `k < n` (the caller's contract).
        unsafe {
            dst.add(k)
                .write_unaligned(f64_to_f32_odd(src.add(k).read_unaligned()))
        };
    }
}

/// `n` contiguous `f64`s narrowed to halves `H` at `dst` (contiguous), correctly
/// rounded (round to odd `f32`, then to `H`; see the module notes): `float16` at AVX-512
/// in registers, otherwise through `buf`.
///
/// # Safety
/// `src` readable for `n` `f64`s and `dst` writable for `n` halves (any alignment); `n`
/// at most [`BLOCK`]; `level` at most [`cpu::detected`].
#[inline(always)]
pub(crate) unsafe fn narrow_f64_run<H: HalfBlock>(
    level: Level,
    src: *const f64,
    dst: *mut u8,
    n: usize,
    buf: &mut [f32; BLOCK],
) {
    debug_assert!(n <= BLOCK);
    #[cfg(target_arch = "x86_64")]
    if level == Level::Avx512 && H::DTYPE == crate::DType::F16 {
        // SAFETY: the caller's contract; the level's features include F, VL and DQ.
        return unsafe { x86::f64_to_f16_avx512(src, dst.cast(), n) };
    }
    // SAFETY: the caller's contract; `buf` holds `n <= BLOCK` floats.
    unsafe {
        f64_to_f32_odd_run(level, src, buf.as_mut_ptr(), n);
        H::narrow(level, buf.as_ptr(), dst, n);
    }
}

/// The level to run at: `level`, capped by what the CPU has (so the safe functions below
/// accept any level).
#[inline]
fn usable(level: Level) -> Level {
    level.min(cpu::detected())
}

/// A computation run inside a function compiled for a CPU level (see [`run_at`]): a
/// struct holding the computation's arguments, with an `#[inline(always)]`
/// [`AtLevel::run`].
///
/// Why not a closure: the compiler does not inline a closure with a large body into the
/// three per-level copies that call it, and then the body (conversions, the `f32` work)
/// runs as baseline SSE2 code whatever the level; a bfloat16 `a + b` was 4x its `f32`
/// op that way. A method marked `#[inline(always)]` is inlined into each copy.
pub(crate) trait AtLevel {
    /// Runs the computation at `level`, compiled for it.
    ///
    /// # Safety
    /// `level` at most [`cpu::detected`]; whatever the implementation requires.
    unsafe fn run(&self, level: Level);
}

/// Runs `b.run(level)` inside a function compiled for `level`: `#[target_feature]`
/// copies for AVX2+FMA+F16C and AVX-512 (as the elementwise loops' `blocks1_on`), into
/// which `b.run` and the block conversions it calls are inlined, so plain Rust loops in
/// it (the `bf16` conversions, the `f32` work on a block) run as vector code of that
/// width.
///
/// # Safety
/// `level` at most [`cpu::detected`]; whatever `b` requires.
#[inline(always)]
pub(crate) unsafe fn run_at<B: AtLevel>(level: Level, b: &B) {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn avx2<B: AtLevel>(b: &B) {
            // SAFETY: forwarded (`run_at`).
            unsafe { b.run(Level::Avx2) }
        }
        #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")]
        unsafe fn avx512<B: AtLevel>(b: &B) {
            // SAFETY: forwarded (`run_at`).
            unsafe { b.run(Level::Avx512) }
        }
        // The same with AVX512_BF16, so that `narrow_bf16_native` inlines into the
        // bfloat16 loops (called from the plain AVX-512 copy, it is a call per block).
        #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c,avx512bf16")]
        unsafe fn avx512_bf16<B: AtLevel>(b: &B) {
            // SAFETY: forwarded (`run_at`).
            unsafe { b.run(Level::Avx512) }
        }
        if bf16_native(level) {
            // SAFETY: the CPU has the AVX-512 level and AVX512_BF16 (`bf16_native`).
            return unsafe { avx512_bf16(b) };
        }
        match level {
            // SAFETY: the CPU has the level's features (caller).
            Level::Avx512 => return unsafe { avx512(b) },
            // SAFETY: as above.
            Level::Avx2 => return unsafe { avx2(b) },
            Level::Portable => {}
        }
    }
    let _ = level;
    // SAFETY: the caller's contract.
    unsafe { b.run(Level::Portable) }
}

/// The slice conversions below as [`AtLevel`] computations: `KIND` 0 widens to `f32`,
/// 1 narrows from `f32`, 2 widens to `f64`, 3 narrows from `f64`; `n` elements of
/// each.
struct Convert<H, const KIND: u8> {
    src: usize,
    dst: usize,
    n: usize,
    h: std::marker::PhantomData<H>,
}

impl<H: HalfBlock, const KIND: u8> AtLevel for Convert<H, KIND> {
    #[inline(always)]
    unsafe fn run(&self, l: Level) {
        let (s, d, n) = (self.src as *const u8, self.dst as *mut u8, self.n);
        // SAFETY: `n` elements of each slice (the constructors below); `l` comes from
        // `usable`.
        unsafe {
            match KIND {
                0 => H::widen(l, s, d.cast(), n),
                1 => H::narrow(l, s.cast(), d, n),
                2 => widen_f64::<H>(l, s, d, 1, n),
                _ => narrow_f64::<H>(l, s, 8, d, n),
            }
        }
    }
}

/// Runs the conversion `KIND` of `n` elements from `src` to `dst` at `level`, capped by
/// what the CPU has.
fn convert<H: HalfBlock, const KIND: u8>(level: Level, src: usize, dst: usize, n: usize) -> usize {
    let c = Convert::<H, KIND> {
        src,
        dst,
        n,
        h: std::marker::PhantomData,
    };
    // SAFETY: `usable` caps the level at the CPU's; the callers pass slices of `n`.
    unsafe { run_at(usable(level), &c) };
    n
}

/// Widens `src` into `dst` (`min` of the two lengths; returned) at CPU level `level`
/// (capped by what the CPU has).
pub fn widen_slice<H: HalfBlock>(level: Level, src: &[H], dst: &mut [f32]) -> usize {
    let n = src.len().min(dst.len());
    convert::<H, 0>(level, src.as_ptr() as usize, dst.as_mut_ptr() as usize, n)
}

/// Narrows `src` into `dst` (`min` of the two lengths; returned), round to nearest even,
/// at CPU level `level` (capped by what the CPU has).
pub fn narrow_slice<H: HalfBlock>(level: Level, src: &[f32], dst: &mut [H]) -> usize {
    let n = src.len().min(dst.len());
    convert::<H, 1>(level, src.as_ptr() as usize, dst.as_mut_ptr() as usize, n)
}

/// Widens `src` into `f64`s at `dst` (exact; `min` of the lengths, returned).
pub fn widen_slice_f64<H: HalfBlock>(level: Level, src: &[H], dst: &mut [f64]) -> usize {
    let n = src.len().min(dst.len());
    convert::<H, 2>(level, src.as_ptr() as usize, dst.as_mut_ptr() as usize, n)
}

/// Narrows `f64`s into `dst`, correctly rounded (see the module notes; `min` of the
/// lengths, returned).
pub fn narrow_slice_f64<H: HalfBlock>(level: Level, src: &[f64], dst: &mut [H]) -> usize {
    let n = src.len().min(dst.len());
    convert::<H, 3>(level, src.as_ptr() as usize, dst.as_mut_ptr() as usize, n)
}

/// Widens `n` halves from `src` (contiguous) to `f64`s at `dst + k·8·ds`.
///
/// # Safety
/// `src` readable for `n` halves; `dst + k·8·ds` writable for `k < n`; `level` at most
/// [`cpu::detected`].
#[inline(always)]
pub(crate) unsafe fn widen_f64<H: HalfBlock>(
    level: Level,
    src: *const u8,
    dst: *mut u8,
    ds: usize,
    n: usize,
) {
    let mut buf = [0f32; BLOCK];
    let mut k = 0;
    while k < n {
        let m = (n - k).min(BLOCK);
        // SAFETY: elements `k..k + m` of both runs (caller).
        unsafe {
            H::widen(level, src.add(k * 2), buf.as_mut_ptr(), m);
            for (i, v) in buf[..m].iter().enumerate() {
                dst.add((k + i) * 8 * ds)
                    .cast::<f64>()
                    .write_unaligned(*v as f64);
            }
        }
        k += m;
    }
}

/// Narrows `n` `f64`s from `src` (byte stride `ss`) to halves at `dst` (contiguous),
/// correctly rounded.
///
/// # Safety
/// `src + k·ss` readable for `k < n`; `dst` writable for `n` halves; `level` at most
/// [`cpu::detected`].
#[inline(always)]
pub(crate) unsafe fn narrow_f64<H: HalfBlock>(
    level: Level,
    src: *const u8,
    ss: isize,
    dst: *mut u8,
    n: usize,
) {
    let mut buf = [0f32; BLOCK];
    let mut k = 0;
    while k < n {
        let m = (n - k).min(BLOCK);
        // SAFETY: elements `k..k + m` of both runs (caller).
        unsafe {
            if ss == 8 {
                narrow_f64_run::<H>(level, src.add(k * 8).cast(), dst.add(k * 2), m, &mut buf);
            } else {
                for (i, b) in buf[..m].iter_mut().enumerate() {
                    let x = src
                        .offset((k + i) as isize * ss)
                        .cast::<f64>()
                        .read_unaligned();
                    *b = f64_to_f32_odd(x);
                }
                H::narrow(level, buf.as_ptr(), dst.add(k * 2), m);
            }
        }
        k += m;
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// `n` `f16`s (as bits) to `f32`, F16C, 8 at a time; the tail through a padded copy.
    ///
    /// # Safety
    /// `src` readable and `dst` writable for `n` elements; AVX2+F16C.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn f16_to_f32_avx2(src: *const u16, dst: *mut f32, n: usize) {
        let mut k = 0;
        // SAFETY: every access is to elements `< n` (caller), or to the local arrays.
        unsafe {
            while k + 8 <= n {
                let v = _mm_loadu_si128(src.add(k).cast());
                _mm256_storeu_ps(dst.add(k), _mm256_cvtph_ps(v));
                k += 8;
            }
            if k < n {
                let mut t = [0u16; 8];
                std::ptr::copy_nonoverlapping(
                    src.add(k).cast::<u8>(),
                    t.as_mut_ptr().cast::<u8>(),
                    (n - k) * 2,
                );
                let mut o = [0f32; 8];
                let v = _mm_loadu_si128(t.as_ptr().cast());
                _mm256_storeu_ps(o.as_mut_ptr(), _mm256_cvtph_ps(v));
                std::ptr::copy_nonoverlapping(
                    o.as_ptr().cast::<u8>(),
                    dst.add(k).cast::<u8>(),
                    (n - k) * 4,
                );
            }
        }
    }

    /// `n` `f32`s to `f16` bits, F16C with round to nearest even, 8 at a time.
    ///
    /// # Safety
    /// As for [`f16_to_f32_avx2`].
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn f32_to_f16_avx2(src: *const f32, dst: *mut u16, n: usize) {
        let mut k = 0;
        // SAFETY: as in `f16_to_f32_avx2`.
        unsafe {
            while k + 8 <= n {
                let v = _mm256_loadu_ps(src.add(k));
                let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v);
                _mm_storeu_si128(dst.add(k).cast(), h);
                k += 8;
            }
            if k < n {
                let mut t = [0f32; 8];
                std::ptr::copy_nonoverlapping(
                    src.add(k).cast::<u8>(),
                    t.as_mut_ptr().cast::<u8>(),
                    (n - k) * 4,
                );
                let mut o = [0u16; 8];
                let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_loadu_ps(t.as_ptr()));
                _mm_storeu_si128(o.as_mut_ptr().cast(), h);
                std::ptr::copy_nonoverlapping(
                    o.as_ptr().cast::<u8>(),
                    dst.add(k).cast::<u8>(),
                    (n - k) * 2,
                );
            }
        }
    }

    /// As [`f16_to_f32_avx2`], 16 at a time with AVX-512F; the tail through the AVX2 code.
    ///
    /// # Safety
    /// As for [`f16_to_f32_avx2`]; AVX-512F.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")]
    pub(super) unsafe fn f16_to_f32_avx512(src: *const u16, dst: *mut f32, n: usize) {
        let mut k = 0;
        // SAFETY: as in `f16_to_f32_avx2`.
        unsafe {
            while k + 16 <= n {
                let v = _mm256_loadu_si256(src.add(k).cast());
                _mm512_storeu_ps(dst.add(k), _mm512_cvtph_ps(v));
                k += 16;
            }
            f16_to_f32_avx2(src.add(k), dst.add(k), n - k);
        }
    }

    /// As [`f32_to_f16_avx2`], 16 at a time with AVX-512F; the tail through the AVX2 code.
    ///
    /// # Safety
    /// As for [`f16_to_f32_avx2`]; AVX-512F.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")]
    pub(super) unsafe fn f32_to_f16_avx512(src: *const f32, dst: *mut u16, n: usize) {
        let mut k = 0;
        // SAFETY: as in `f16_to_f32_avx2`.
        unsafe {
            while k + 16 <= n {
                let v = _mm512_loadu_ps(src.add(k));
                // Round to nearest even, exceptions suppressed (they are not observed).
                let h = _mm512_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(v);
                _mm256_storeu_si256(dst.add(k).cast(), h);
                k += 16;
            }
            f32_to_f16_avx2(src.add(k), dst.add(k), n - k);
        }
    }

    /// Eight `f64`s rounded to `f32` to odd, the bits of
    /// [`f64_to_f32_odd`](super::f64_to_f32_odd): a conversion toward zero (the rounding
    /// mode in the instruction), converted back and compared, the last bit set where it
    /// was inexact (an ordered compare: NaN is not). Past `f32::MAX` the truncation gives
    /// `±f32::MAX`, already odd, as the scalar form's step back from ±inf does.
    ///
    /// # Safety
    /// AVX-512F and VL.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl")]
    unsafe fn odd8(x: __m512d) -> __m256 {
        let r = _mm512_cvt_roundpd_ps::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(x);
        let inexact = _mm512_cmp_pd_mask::<_CMP_NEQ_OQ>(_mm512_cvtps_pd(r), x);
        let bits = _mm256_castps_si256(r);
        _mm256_castsi256_ps(_mm256_mask_or_epi32(
            bits,
            inexact,
            bits,
            _mm256_set1_epi32(1),
        ))
    }

    /// `n` contiguous `f64`s rounded to `f32` to odd ([`odd8`] by eight, the tail by the
    /// scalar form). (The vectorised scalar form took float64 → float16 of 1M to 204 µs,
    /// PyTorch 113.)
    ///
    /// # Safety
    /// `src` readable and `dst` writable for `n` elements (any alignment); AVX-512F and
    /// VL.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl")]
    pub(super) unsafe fn f64_to_f32_odd_avx512(src: *const f64, dst: *mut f32, n: usize) {
        let mut k = 0;
        // SAFETY: every access is to elements `< n` (caller).
        unsafe {
            while k + 8 <= n {
                _mm256_storeu_ps(dst.add(k), odd8(_mm512_loadu_pd(src.add(k))));
                k += 8;
            }
            while k < n {
                dst.add(k)
                    .write_unaligned(super::f64_to_f32_odd(src.add(k).read_unaligned()));
                k += 1;
            }
        }
    }

    /// `n` contiguous `f64`s to `f16`s, correctly rounded: sixteen at a time rounded to
    /// `f32` to odd ([`odd8`]) and then to `f16` in registers, the tail through
    /// [`f64_to_f32_odd_avx512`] and [`f32_to_f16_avx512`] (the same roundings). (Through
    /// a block of `f32`s in memory: 161 µs per 1M.)
    ///
    /// # Safety
    /// `src` readable and `dst` writable for `n` elements (any alignment); AVX-512F, VL
    /// and DQ.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,avx512dq")]
    pub(super) unsafe fn f64_to_f16_avx512(src: *const f64, dst: *mut u16, n: usize) {
        let mut k = 0;
        // SAFETY: every access is to elements `< n` (caller), or to the local array.
        unsafe {
            while k + 16 <= n {
                let lo = odd8(_mm512_loadu_pd(src.add(k)));
                let hi = odd8(_mm512_loadu_pd(src.add(k + 8)));
                let v = _mm512_insertf32x8::<1>(_mm512_castps256_ps512(lo), hi);
                let h = _mm512_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(v);
                _mm256_storeu_si256(dst.add(k).cast(), h);
                k += 16;
            }
            let mut buf = [0f32; 16];
            f64_to_f32_odd_avx512(src.add(k), buf.as_mut_ptr(), n - k);
            f32_to_f16_avx512(buf.as_ptr(), dst.add(k), n - k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `vcvtne2ps2bf16` and the scalar rounding give the same bits on a sweep of float32
    /// patterns (every sign, exponent and NaN payload, ties, the overflow edge), groups
    /// with a subnormal among normal values (the instruction reads those as zero: the
    /// group takes the scalar form) and tails of every length below 32.
    #[test]
    fn native_bf16_narrowing_matches_the_scalar_rounding() {
        if !bf16_native(Level::Avx512) {
            return; // (no AVX512_BF16 here: `narrow_bf16_native` is never called)
        }
        let mut xs: Vec<f32> = (0..1u64 << 32)
            .step_by(4099)
            .map(|b| f32::from_bits(b as u32))
            .collect();
        for b in [
            0x0000_0001u32,
            0x0000_8000,
            0x0000_8001,
            0x007f_ffff,
            0x0080_0000,
            0x3f80_8000,
            0x3f81_8000,
            0x7f7f_8000,
            0x7f7f_ffff,
            0x7f80_0000,
            0x7f80_0001,
            0xffc1_2345,
        ] {
            xs.push(f32::from_bits(b));
            xs.push(f32::from_bits(b ^ 0x8000_0000));
        }
        for n in (0..40).chain([xs.len()]) {
            let src = &xs[xs.len() - n..];
            let mut got = vec![0u16; n];
            // SAFETY: AVX512_BF16 (checked above); `n` elements each.
            unsafe { narrow_bf16_native(src.as_ptr(), got.as_mut_ptr(), n) };
            for (k, (&x, &g)) in src.iter().zip(&got).enumerate() {
                assert_eq!(
                    g,
                    f32_to_bf16_bits(x),
                    "n = {n}, k = {k}, x = {:#010x}",
                    x.to_bits()
                );
            }
        }
    }

    /// `f64_to_f32_odd_run` at every level the CPU has gives the scalar
    /// `f64_to_f32_odd`'s bits, with each special value at every position of a vector
    /// (±0, ±inf, NaNs with payloads, float64 subnormals, the float32 subnormal and
    /// overflow edges, exact and inexact values) and tails of every length below 9; and
    /// `narrow_f64_run` to float16 rounds as the scalar forms do (NaN: a NaN of the sign).
    #[test]
    fn round_to_odd_runs_match_the_scalar_form() {
        let mut xs: Vec<f64> = (0..1u64 << 20)
            .map(|i| f64::from_bits(i.wrapping_mul(0x9e37_79b9_7f4a_7c15)))
            .collect();
        let specials = [
            0.0,
            1.0,
            1.5,
            f64::INFINITY,
            f64::NAN,
            f64::from_bits(0x7ff0_0000_0000_0001),
            f64::from_bits(0x7ff8_dead_beef_0001),
            f64::MIN_POSITIVE,
            5e-324,
            f32::MAX as f64,
            f32::MAX as f64 * (1.0 + f64::EPSILON),
            1e300,
            f32::MIN_POSITIVE as f64,
            f32::MIN_POSITIVE as f64 * 0.75,
            1e-45,
            7e-46,
            1.0 + f64::EPSILON,
            65520.0,
        ];
        for (k, &x) in specials.iter().enumerate() {
            for j in 0..8 {
                xs.push(if j == k % 8 { x } else { j as f64 / 3.0 });
                xs.push(if j == k % 8 { -x } else { j as f64 / 7.0 });
            }
        }
        let mut level = Level::Portable;
        loop {
            for n in (0..9).chain([xs.len()]) {
                let src = &xs[xs.len() - n..];
                let mut got = vec![0f32; n];
                // SAFETY: `n` elements each; the level is at most the CPU's.
                unsafe { f64_to_f32_odd_run(level, src.as_ptr(), got.as_mut_ptr(), n) };
                for (k, (&x, &g)) in src.iter().zip(&got).enumerate() {
                    assert_eq!(
                        g.to_bits(),
                        f64_to_f32_odd(x).to_bits(),
                        "{level:?} n = {n}, k = {k}, x = {:#018x}",
                        x.to_bits()
                    );
                }
            }
            // And to float16 (in registers at AVX-512), against the scalar roundings.
            for n in (0..40).chain([BLOCK - 1, BLOCK]) {
                for chunk in xs.rchunks(n.max(1)).take(64) {
                    let m = chunk.len().min(n);
                    let mut got = vec![0u16; m];
                    let mut buf = [0f32; BLOCK];
                    // SAFETY: `m <= BLOCK` elements each; the level is the CPU's or less.
                    unsafe {
                        narrow_f64_run::<f16>(
                            level,
                            chunk.as_ptr(),
                            got.as_mut_ptr().cast(),
                            m,
                            &mut buf,
                        )
                    };
                    for (&x, &g) in chunk.iter().zip(&got) {
                        let want = f16::from_f32(f64_to_f32_odd(x));
                        let ok = if want.is_nan() {
                            f16::from_bits(g).is_nan()
                                && f16::from_bits(g).is_sign_negative() == want.is_sign_negative()
                        } else {
                            g == want.to_bits()
                        };
                        assert!(ok, "{level:?} n = {n}, x = {x:e}: {g:#06x}");
                    }
                }
            }
            level = match level {
                Level::Portable if cpu::detected() >= Level::Avx2 => Level::Avx2,
                Level::Avx2 if cpu::detected() >= Level::Avx512 => Level::Avx512,
                _ => break,
            };
        }
    }
}
