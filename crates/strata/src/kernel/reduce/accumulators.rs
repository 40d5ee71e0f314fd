//! Reduction operators: what is accumulated, in which type, and how the result is made.
//!
//! A reduction of `x₀ … xₙ₋₁` into one output element is
//! `finish(combine(… combine(identity, map(x₀)) …, map(xₙ₋₁)), n)`, where `combine` is
//! associative (exactly, or up to rounding for float sums, which the drivers associate
//! pairwise). `map` and `finish` also see `aux`, a per-output `f64` (the mean for a
//! variance, the maximum for a log-sum-exp; 0 when the op has none).

use std::marker::PhantomData;

use half::{bf16, f16};

use super::run::{AuxLanes, LANES};
use crate::dtype::Element;
use crate::kernel::cpu::{self, Level};
use crate::kernel::half_convert::{bf16_bits_to_f32_lax, run_at, AtLevel, HalfBlock, BLOCK};
use crate::kernel::prefetch::read_ahead;

/// An accumulator type: `i64` (wrapping, like PyTorch's integer sums), `f32` or `f64`.
pub(crate) trait Num: Copy + Send + Sync + PartialOrd + 'static {
    /// Additive identity.
    const ZERO: Self;
    /// Multiplicative identity.
    const ONE: Self;
    /// Addition (wrapping for `i64`).
    fn add(self, o: Self) -> Self;
    /// Multiplication (wrapping for `i64`).
    fn mul(self, o: Self) -> Self;
    /// As `f64` (for dividing a sum in at least the accumulator's precision).
    fn to_f64(self) -> f64;
}

impl Num for i64 {
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
    const ZERO: Self = 0;
    const ONE: Self = 1;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        self.wrapping_add(o)
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        self.wrapping_mul(o)
    }
}

macro_rules! float_num {
    ($($t:ty),*) => {$(
        impl Num for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self + o
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self * o
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
        }
    )*};
}
float_num!(f32, f64);

/// Element types with PyTorch's sum rules: bool and integers accumulate in `i64` and give
/// int64; `f16`/`bf16` accumulate in `f32` and give their own dtype; `f32`/`f64` stay.
pub(crate) trait Summable: Element + PartialOrd {
    /// Accumulator of `sum`/`prod`/`mean`.
    type Acc: Num;
    /// Result element of `sum`/`prod`.
    type Out: Element;
    /// Accumulator of cumulative ops (PyTorch's CPU `acc_type`: `f64` for `f32`).
    type ScanAcc: Num;
    /// Into the accumulator.
    fn acc(self) -> Self::Acc;
    /// From the accumulator to the result.
    fn out(a: Self::Acc) -> Self::Out;
    /// Into the scan accumulator.
    fn scan_acc(self) -> Self::ScanAcc;
    /// From the scan accumulator to the result.
    fn scan_out(a: Self::ScanAcc) -> Self::Out;
    /// The smallest value (−∞ for floats).
    fn lowest() -> Self;
    /// The largest value (+∞ for floats).
    fn highest() -> Self;
    /// Into the accumulator, from the element's value as `f32` (exact for the float types,
    /// whose half-precision blocks the drivers widen with vector conversions: see
    /// [`ReduceOp::WIDEN`]).
    #[inline(always)]
    fn acc_wide(x: f32) -> Self::Acc {
        Self::from_f64(x as f64).acc()
    }
}

macro_rules! int_summable {
    ($($t:ty: $lo:expr, $hi:expr);*) => {$(
        impl Summable for $t {
            type Acc = i64;
            type Out = i64;
            type ScanAcc = i64;
            #[inline(always)]
            fn acc(self) -> i64 {
                self.to_i64()
            }
            #[inline(always)]
            fn out(a: i64) -> i64 {
                a
            }
            #[inline(always)]
            fn scan_acc(self) -> i64 {
                self.to_i64()
            }
            #[inline(always)]
            fn scan_out(a: i64) -> i64 {
                a
            }
            fn lowest() -> Self {
                $lo
            }
            fn highest() -> Self {
                $hi
            }
        }
    )*};
}
int_summable!(
    bool: false, true;
    u8: u8::MIN, u8::MAX;
    i8: i8::MIN, i8::MAX;
    i16: i16::MIN, i16::MAX;
    u16: u16::MIN, u16::MAX;
    i32: i32::MIN, i32::MAX;
    u32: u32::MIN, u32::MAX;
    i64: i64::MIN, i64::MAX;
    u64: u64::MIN, u64::MAX
);

macro_rules! float_summable {
    ($($t:ty: $acc:ty, $scan:ty, $to:expr, $from:expr, $to_s:expr, $from_s:expr);*) => {$(
        impl Summable for $t {
            type Acc = $acc;
            type Out = $t;
            type ScanAcc = $scan;
            #[inline(always)]
            fn acc(self) -> $acc {
                ($to)(self)
            }
            #[inline(always)]
            fn out(a: $acc) -> $t {
                ($from)(a)
            }
            #[inline(always)]
            fn scan_acc(self) -> $scan {
                ($to_s)(self)
            }
            #[inline(always)]
            fn scan_out(a: $scan) -> $t {
                ($from_s)(a)
            }
            fn lowest() -> Self {
                <$t>::NEG_INFINITY
            }
            fn highest() -> Self {
                <$t>::INFINITY
            }
            #[inline(always)]
            fn acc_wide(x: f32) -> $acc {
                x as $acc
            }
        }
    )*};
}
float_summable!(
    f16: f32, f32, f16::to_f32, f16::from_f32, f16::to_f32, f16::from_f32;
    bf16: f32, f32, bf16::to_f32, bf16::from_f32, bf16::to_f32, bf16::from_f32;
    f32: f32, f64, |v: f32| v, |v: f32| v, |v: f32| v as f64, |v: f64| v as f32;
    f64: f64, f64, |v: f64| v, |v: f64| v, |v: f64| v, |v: f64| v
);

/// `NaN`-propagating maximum step: `cand` replaces `best` when greater, or when it is
/// `NaN` (then nothing replaces it). Equal values keep `best` (first occurrence).
#[inline(always)]
pub(crate) fn better_max<T: PartialOrd>(cand: T, best: T) -> bool {
    // `!(cand <= best)` holds when `cand` is greater or either is NaN; `best == best`
    // then excludes a NaN `best`. Branch-free (`&`, not `&&`), so folds vectorise.
    #[allow(clippy::eq_op, clippy::neg_cmp_op_on_partial_ord)]
    let r = !(cand <= best) & (best == best);
    r
}

/// `NaN`-propagating minimum step (see [`better_max`]).
#[inline(always)]
pub(crate) fn better_min<T: PartialOrd>(cand: T, best: T) -> bool {
    #[allow(clippy::eq_op, clippy::neg_cmp_op_on_partial_ord)]
    let r = !(cand >= best) & (best == best);
    r
}

/// `eˣ` in `f32` for `x ≤ 0` (Cephes' `expf` reduction and polynomial, about 2 ulp),
/// written without branches or calls so loops over it vectorise. Arguments below −87
/// give 0 (the true value is subnormal), above 88 give +∞ (only reached by logsumexp
/// when the maximum is +∞, whose result is +∞ anyway); NaN stays NaN.
#[inline(always)]
pub(crate) fn exp_nonpos_f32(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // 1.5·2²³: adding and subtracting it rounds to the nearest integer.
    const ROUND: f32 = 12_582_912.0;
    let xc = x.clamp(-87.0, 88.0);
    let kr = xc * LOG2E + ROUND;
    let k = kr - ROUND;
    // The integer k sits in the low mantissa bits of `kr` (no float→int conversion, whose
    // saturating semantics would not vectorise; a NaN gives garbage, selected away below).
    let ki = kr.to_bits().wrapping_sub(ROUND.to_bits());
    let r = xc - k * LN2_HI - k * LN2_LO;
    let p = 1.987_569_1e-4_f32;
    let p = p * r + 1.398_199_9e-3;
    let p = p * r + 8.333_452e-3;
    let p = p * r + 4.166_579_6e-2;
    let p = p * r + 1.666_666_5e-1;
    let p = p * r + 0.5; // Cephes: 5.0000001201e-1, which rounds to 0.5 in f32
    let y = p * r * r + r + 1.0;
    // 2ᵏ with k in [−126, 127]: a normal exponent field.
    let scale = f32::from_bits(ki.wrapping_add(127) << 23);
    let y = y * scale;
    let y = if x < -87.0 { 0.0 } else { y };
    let y = if x > 88.0 { f32::INFINITY } else { y };
    #[allow(clippy::eq_op)]
    if x != x {
        x
    } else {
        y
    }
}

/// A fold over elements into one output element.
pub(crate) trait ReduceOp: Sync {
    /// Input element.
    type In: Element;
    /// Accumulator.
    type Acc: Copy + Send + Sync + 'static;
    /// Output element.
    type Out: Element;
    /// The per-output auxiliary value as `map` wants it (`()` when unused, so nothing
    /// is loaded in the inner loops).
    type Aux: Copy + Send + Sync + 'static;
    /// True when the association order affects the result's accuracy (float sums): the
    /// drivers then fold in small blocks combined pairwise.
    const PAIRWISE: bool;
    /// Neutral accumulator.
    fn identity(&self) -> Self::Acc;
    /// The auxiliary value for `map`, from the per-output `f64`.
    fn aux(&self, a: f64) -> Self::Aux;
    /// One input element as an accumulator.
    fn map(&self, x: Self::In, aux: Self::Aux) -> Self::Acc;
    /// Associative combination.
    fn combine(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc;
    /// The output from the folded accumulator of `n` elements.
    fn finish(&self, a: Self::Acc, n: usize, aux: f64) -> Self::Out;
    /// True when [`ReduceOp::map_wide`] is `map` without the widening: the horizontal
    /// driver then widens blocks of `f16`/`bf16` inputs to `f32` with the vector
    /// conversions of `kernel/half_convert.rs` ([`lanes_half`]) instead of converting
    /// each element in `map`. A `bf16` NaN may then reach `map_wide` still signalling
    /// (`bf16_bits_to_f32_lax`): the op must give for it what it gives for the quiet
    /// form, as arithmetic does.
    const WIDEN: bool = false;
    /// [`ReduceOp::map`] of an input element given as its `f32` value (exact for the half
    /// types).
    #[inline(always)]
    fn map_wide(&self, x: f32, aux: Self::Aux) -> Self::Acc {
        self.map(Self::In::from_f64(x as f64), aux)
    }
    /// A faster fold of `n` contiguous elements from `p` into [`LANES`] accumulators
    /// (element `i` into lane `i % LANES`, giving exactly what the generic loop of
    /// [`lanes`](super::run) gives), or `None` for that loop.
    ///
    /// # Safety
    /// The `n` elements from `p` must be readable.
    #[inline(always)]
    unsafe fn lanes_contiguous(&self, p: *const u8, n: usize) -> Option<[Self::Acc; LANES]> {
        let _ = (p, n);
        None
    }
}

/// [`lanes`](super::run) for half-precision inputs of a [`ReduceOp::WIDEN`] op: `n`
/// elements from `p` at byte stride `s` into [`LANES`] accumulators (element `i` into
/// lane `i % LANES`, as there), widened a block at a time with the vector conversions
/// and folded in `f32`, in code compiled for the CPU level.
///
/// # Safety
/// The `n` elements must be readable; `O::In` is `f16` or `bf16`.
pub(super) unsafe fn lanes_half<O: ReduceOp>(
    op: &O,
    p: *const u8,
    n: usize,
    s: isize,
    aux: &AuxLanes<O>,
) -> [O::Acc; LANES] {
    // SAFETY: forwarded; the widening reads the elements as the dtype's bits.
    unsafe {
        if O::In::DTYPE == crate::DType::F16 {
            lanes_widened::<O, f16>(op, p, n, s, aux)
        } else {
            lanes_widened::<O, bf16>(op, p, n, s, aux)
        }
    }
}

/// The arguments of [`lanes_widened`] as an [`AtLevel`] computation; the result lands
/// in `result`.
struct LanesWidened<'a, O: ReduceOp, H> {
    op: &'a O,
    p: *const u8,
    n: usize,
    s: isize,
    aux: &'a AuxLanes<O>,
    result: std::cell::Cell<[O::Acc; LANES]>,
    h: std::marker::PhantomData<H>,
}

impl<O: ReduceOp, H: HalfBlock> AtLevel for LanesWidened<'_, O, H> {
    #[inline(always)]
    unsafe fn run(&self, level: Level) {
        let &Self {
            op, p, n, s, aux, ..
        } = self;
        // `acc` is indexed by constants only (the tail works on a copy), so it stays in
        // registers: indexed by `i % LANES` in the same loop, it lived on the stack, and
        // every block's adds went through memory (bfloat16 sum of 1M: 180 µs, now 110).
        let mut acc = [op.identity(); LANES];
        let mut tmp = [H::default(); BLOCK];
        let mut v = [0f32; BLOCK];
        let mut k = 0;
        // Contiguous `bf16`: full blocks straight from memory, widened in registers (a
        // shift; a NaN need not be made quiet for the sums, which give it quiet).
        if H::DTYPE == crate::DType::BF16 && s == 2 {
            while k + BLOCK <= n {
                // SAFETY: elements `k..k + BLOCK` of the contiguous run (`lanes_half`'s
                // caller).
                let bits = unsafe { p.add(k * 2).cast::<[u16; BLOCK]>().read_unaligned() };
                for c in bits.chunks_exact(LANES) {
                    for (j, a) in acc.iter_mut().enumerate() {
                        *a = op.combine(*a, op.map_wide(bf16_bits_to_f32_lax(c[j]), aux[j]));
                    }
                }
                k += BLOCK;
            }
        }
        // Every other `bf16` (`x[::2]`): each element is the low half of a 4-byte word,
        // whose high half (the element skipped) the shift drops; full blocks before the
        // last element fold straight from memory (the last element's word may end past
        // the storage, so the block holding it goes below).
        if H::DTYPE == crate::DType::BF16 && s == 4 && cfg!(target_endian = "little") {
            while k + BLOCK < n {
                // SAFETY: elements `k..k + BLOCK` of the run; the high half of each word
                // lies before the next element, which exists (`k + BLOCK < n`).
                let words = unsafe { p.add(k * 4).cast::<[u32; BLOCK]>().read_unaligned() };
                for c in words.chunks_exact(LANES) {
                    for (j, a) in acc.iter_mut().enumerate() {
                        *a = op.combine(*a, op.map_wide(f32::from_bits(c[j] << 16), aux[j]));
                    }
                }
                k += BLOCK;
            }
        }
        while k < n {
            let m = (n - k).min(BLOCK);
            // SAFETY: elements `k..k + m` of the run (`lanes_half`'s caller); with `s == 4`
            // the word of element `e < m - 1` also covers the two bytes before element
            // `e + 1`, inside the same storage.
            unsafe {
                let x = p.offset(k as isize * s);
                if s == 2 {
                    H::widen(level, x, v.as_mut_ptr(), m);
                } else if H::DTYPE == crate::DType::BF16 && s == 4 && cfg!(target_endian = "little")
                {
                    // `x[::2]` as above; the last element is read alone.
                    for (e, o) in v[..m - 1].iter_mut().enumerate() {
                        *o = f32::from_bits(x.add(e * 4).cast::<u32>().read_unaligned() << 16);
                    }
                    let last = x.add((m - 1) * 4).cast::<u16>().read_unaligned();
                    v[m - 1] = bf16_bits_to_f32_lax(last);
                } else {
                    for (e, t) in tmp[..m].iter_mut().enumerate() {
                        *t = H::load(x.offset(e as isize * s));
                    }
                    H::widen(level, tmp.as_ptr().cast(), v.as_mut_ptr(), m);
                }
            }
            // `k` is a multiple of BLOCK, itself a multiple of LANES: element `k + i`
            // goes to lane `i % LANES`.
            if m == BLOCK {
                for c in v.chunks_exact(LANES) {
                    for (j, a) in acc.iter_mut().enumerate() {
                        *a = op.combine(*a, op.map_wide(c[j], aux[j]));
                    }
                }
            } else {
                let mut t = acc;
                for (i, x) in v[..m].iter().enumerate() {
                    let j = i % LANES;
                    t[j] = op.combine(t[j], op.map_wide(*x, aux[j]));
                }
                acc = t;
            }
            k += m;
        }
        self.result.set(acc);
    }
}

/// [`lanes_half`] with the half type `H` whose bits `O::In` holds.
///
/// # Safety
/// As for [`lanes_half`].
#[inline(always)]
unsafe fn lanes_widened<O: ReduceOp, H: HalfBlock>(
    op: &O,
    p: *const u8,
    n: usize,
    s: isize,
    aux: &AuxLanes<O>,
) -> [O::Acc; LANES] {
    let body = LanesWidened::<O, H> {
        op,
        p,
        n,
        s,
        aux,
        result: std::cell::Cell::new([op.identity(); LANES]),
        h: std::marker::PhantomData,
    };
    // SAFETY: the caller's contract; `cpu::level` is what the CPU has.
    unsafe { run_at(cpu::level(), &body) };
    body.result.get()
}

/// `sum`.
#[derive(Debug, Default)]
pub(crate) struct Sum<T>(PhantomData<T>);

impl<T: Summable> ReduceOp for Sum<T> {
    type In = T;
    type Acc = T::Acc;
    type Out = T::Out;
    type Aux = ();
    const PAIRWISE: bool = T::DTYPE.is_float();
    #[inline(always)]
    fn identity(&self) -> T::Acc {
        T::Acc::ZERO
    }
    #[inline(always)]
    fn aux(&self, _: f64) {}
    #[inline(always)]
    fn map(&self, x: T, _: ()) -> T::Acc {
        x.acc()
    }
    #[inline(always)]
    fn combine(&self, a: T::Acc, b: T::Acc) -> T::Acc {
        a.add(b)
    }
    #[inline(always)]
    fn finish(&self, a: T::Acc, _: usize, _: f64) -> T::Out {
        T::out(a)
    }
    const WIDEN: bool = true;
    #[inline(always)]
    fn map_wide(&self, x: f32, _: ()) -> T::Acc {
        T::acc_wide(x)
    }
}

/// `prod`.
#[derive(Debug, Default)]
pub(crate) struct Prod<T>(PhantomData<T>);

impl<T: Summable> ReduceOp for Prod<T> {
    type In = T;
    type Acc = T::Acc;
    type Out = T::Out;
    type Aux = ();
    const PAIRWISE: bool = false;
    #[inline(always)]
    fn identity(&self) -> T::Acc {
        T::Acc::ONE
    }
    #[inline(always)]
    fn aux(&self, _: f64) {}
    #[inline(always)]
    fn map(&self, x: T, _: ()) -> T::Acc {
        x.acc()
    }
    #[inline(always)]
    fn combine(&self, a: T::Acc, b: T::Acc) -> T::Acc {
        a.mul(b)
    }
    #[inline(always)]
    fn finish(&self, a: T::Acc, _: usize, _: f64) -> T::Out {
        T::out(a)
    }
    const WIDEN: bool = true;
    #[inline(always)]
    fn map_wide(&self, x: f32, _: ()) -> T::Acc {
        T::acc_wide(x)
    }
}

/// `mean` of a float dtype: the sum (accumulated as `sum` does) over `n`, `NaN` when
/// `n = 0`.
#[derive(Debug, Default)]
pub(crate) struct Mean<T>(PhantomData<T>);

impl<T: Summable> ReduceOp for Mean<T> {
    type In = T;
    type Acc = T::Acc;
    type Out = T;
    type Aux = ();
    const PAIRWISE: bool = true;
    #[inline(always)]
    fn identity(&self) -> T::Acc {
        T::Acc::ZERO
    }
    #[inline(always)]
    fn aux(&self, _: f64) {}
    #[inline(always)]
    fn map(&self, x: T, _: ()) -> T::Acc {
        x.acc()
    }
    #[inline(always)]
    fn combine(&self, a: T::Acc, b: T::Acc) -> T::Acc {
        a.add(b)
    }
    #[inline(always)]
    fn finish(&self, a: T::Acc, n: usize, _: f64) -> T {
        // Divide the accumulator itself: a half sum would overflow before the division
        // (PyTorch: f16 mean = cast to f32, sum, divide, cast back).
        T::from_f64(a.to_f64() / n as f64)
    }
    const WIDEN: bool = true;
    #[inline(always)]
    fn map_wide(&self, x: f32, _: ()) -> T::Acc {
        T::acc_wide(x)
    }
}

/// `amax` (`MAX = true`) or `amin`: `NaN` propagates.
#[derive(Debug, Default)]
pub(crate) struct Extreme<T, const MAX: bool>(PhantomData<T>);

impl<T: Summable, const MAX: bool> ReduceOp for Extreme<T, MAX> {
    type In = T;
    type Acc = T;
    type Out = T;
    type Aux = ();
    const PAIRWISE: bool = false;
    #[inline(always)]
    fn identity(&self) -> T {
        if MAX {
            T::lowest()
        } else {
            T::highest()
        }
    }
    #[inline(always)]
    fn aux(&self, _: f64) {}
    #[inline(always)]
    fn map(&self, x: T, _: ()) -> T {
        x
    }
    #[inline(always)]
    fn combine(&self, a: T, b: T) -> T {
        let take = if MAX {
            better_max(b, a)
        } else {
            better_min(b, a)
        };
        if take {
            b
        } else {
            a
        }
    }
    #[inline(always)]
    fn finish(&self, a: T, _: usize, _: f64) -> T {
        a
    }
    #[inline(always)]
    unsafe fn lanes_contiguous(&self, p: *const u8, n: usize) -> Option<[T; LANES]> {
        let body = ExtremeLanes::<T, MAX> {
            p,
            n,
            result: std::cell::Cell::new([self.identity(); LANES]),
        };
        let level = cpu::level();
        // SAFETY: the caller's contract; `level` is at most what the CPU has.
        unsafe { run_at(level, &body) };
        Some(body.result.get())
    }
}

/// Elements per block of [`ExtremeLanes`] (checked for NaN once per block).
const EXTREME_BLOCK: usize = 512;

/// The contiguous fold of [`Extreme`] as an [`AtLevel`] computation (compiled per CPU
/// level, so AVX2 `vmaxps` on 8 lanes at once): blocks of [`EXTREME_BLOCK`] elements are
/// folded with a plain maximum (`if v > a { v } else { a }`: one vector max) while a
/// NaN flag is ORed on the side; a block that held a NaN is folded again with
/// [`Extreme::combine`], whose result it then keeps. On NaN-free data the plain step
/// *is* `combine` (`better_max` without NaNs is `>`), and a lane that is already NaN
/// stays NaN under both, so the result is bit for bit the generic loop's (the same
/// lanes and sets of lanes, combined in the same order; a `-0.0` against a `0.0` keeps
/// the same one), at every level. `float16`/`bfloat16` blocks are widened to `float32`
/// (exact, as is the way back for the lanes) and folded by the same `float32` code.
struct ExtremeLanes<T, const MAX: bool> {
    p: *const u8,
    n: usize,
    result: std::cell::Cell<[T; LANES]>,
}

impl<T: Summable, const MAX: bool> AtLevel for ExtremeLanes<T, MAX> {
    #[inline(always)]
    unsafe fn run(&self, level: Level) {
        let op = Extreme::<T, MAX>(PhantomData);
        let (p, n) = (self.p, self.n);
        let isz = size_of::<T>();
        // Every load below is at `i < n`.
        let at = |i: usize| {
            // SAFETY: offsets `i·isz` for `i < n` are readable (`lanes_contiguous`'s
            // caller).
            unsafe { T::load(p.add(i * isz)) }
        };
        #[allow(clippy::eq_op)]
        let plain = |a: T, v: T| {
            let take = if MAX { v > a } else { v < a };
            (if take { v } else { a }, v != v)
        };
        // Two sets of accumulators for types of up to 4 bytes, one set (each lane in
        // element order) for wider ones, as the generic loop.
        let two = isz <= 4;
        let half = matches!(T::DTYPE, crate::DType::F16 | crate::DType::BF16);
        let mut acc = [op.identity(); LANES];
        let mut acc2 = acc;
        let pairs = n / (2 * LANES);
        let per = EXTREME_BLOCK / (2 * LANES);
        let mut c = 0;
        while c < pairs {
            let nb = (pairs - c).min(per);
            let (mut x, mut y) = (acc, acc2);
            // float32 at the vector levels: the same block in explicit vector code (LLVM
            // vectorised the generic loop with lane shuffles there: amax 1M float32 took
            // 172 µs at AVX2 and 247 at AVX-512, 63 in the baseline copy).
            let explicit = if T::DTYPE == crate::DType::F32 {
                // SAFETY: `T` is `f32` (same size and layout); elements `c·2·LANES ..
                // (c + nb)·2·LANES` are below `n` (`c + nb <= pairs`), so readable; the
                // level is the CPU's.
                unsafe {
                    extreme_block_f32::<MAX>(
                        level,
                        (p as *const f32).add(c * 2 * LANES),
                        nb,
                        &mut *(x.as_mut_ptr() as *mut [f32; LANES]),
                        &mut *(y.as_mut_ptr() as *mut [f32; LANES]),
                    )
                }
            } else if half {
                // float16 / bfloat16: the block widened to float32 (exactly) and folded
                // by the same explicit code, on the lanes widened too; written back
                // (exactly: every lane holds an input or the identity, ±inf) only when
                // the block had no NaN, else the generic fold below redoes it in `T`.
                // (Compared in software, a float16 amax of 1M took 290 µs.)
                let m = nb * 2 * LANES;
                let mut buf = [0f32; EXTREME_BLOCK];
                let q = p.wrapping_add(c * 2 * LANES * 2);
                // Elements `c·2·LANES .. + m` are below `n` (`c + nb <= pairs`); `buf`
                // holds `m <= EXTREME_BLOCK` floats. The lanes convert by the same block
                // conversions (through `half`'s scalar ones, 64 per block, float16 amax
                // took 210 µs).
                let (mut xf, mut yf) = ([0f32; LANES], [0f32; LANES]);
                let widen = |src: *const u8, dst: *mut f32, m: usize| {
                    // SAFETY: `src` holds `m` elements of `T` (a half type), `dst` room
                    // for `m` floats (the calls below); the level is the CPU's.
                    unsafe {
                        if T::DTYPE == crate::DType::F16 {
                            f16::widen(level, src, dst, m);
                        } else {
                            bf16::widen(level, src, dst, m);
                        }
                    }
                };
                widen(q, buf.as_mut_ptr(), m);
                widen(x.as_ptr().cast(), xf.as_mut_ptr(), LANES);
                widen(y.as_ptr().cast(), yf.as_mut_ptr(), LANES);
                // SAFETY: `buf` holds `nb·2·LANES` floats; the level is the CPU's.
                let r =
                    unsafe { extreme_block_f32::<MAX>(level, buf.as_ptr(), nb, &mut xf, &mut yf) };
                if r == Some(false) {
                    // SAFETY: `xf`/`yf` and `x`/`y` hold `LANES` values each; the level
                    // is the CPU's.
                    unsafe {
                        if T::DTYPE == crate::DType::F16 {
                            f16::narrow(level, xf.as_ptr(), x.as_mut_ptr().cast(), LANES);
                            f16::narrow(level, yf.as_ptr(), y.as_mut_ptr().cast(), LANES);
                        } else {
                            bf16::narrow(level, xf.as_ptr(), x.as_mut_ptr().cast(), LANES);
                            bf16::narrow(level, yf.as_ptr(), y.as_mut_ptr().cast(), LANES);
                        }
                    }
                }
                r
            } else if T::DTYPE == crate::DType::I32 {
                // int32 at the vector levels: explicit code too (LLVM vectorised the
                // generic loop across blocks at AVX-512, with gathers; an opaque index
                // stopped that but left the lanes scalar-ish: 1.15-1.33× PyTorch's amax).
                // SAFETY: `T` is `i32` (same size and layout); elements as for float32
                // above; the level is the CPU's.
                unsafe {
                    extreme_block_i32::<MAX>(
                        level,
                        (p as *const i32).add(c * 2 * LANES),
                        nb,
                        &mut *(x.as_mut_ptr() as *mut [i32; LANES]),
                        &mut *(y.as_mut_ptr() as *mut [i32; LANES]),
                    )
                }
            } else {
                None
            };
            let any_nan = if let Some(nan) = explicit {
                nan
            } else {
                let mut nan = [false; LANES];
                for cc in c..c + nb {
                    // At AVX-512, LLVM vectorises this loop across `cc` (gathers at a
                    // stride of 2·LANES elements: int32 amax 8x slower than at AVX2)
                    // instead of across the lanes `k`; an opaque index stops it there.
                    // (At the other levels the hint costs ~10%, so it is not used.)
                    let q = if level == Level::Avx512 {
                        std::hint::black_box(cc * 2 * LANES)
                    } else {
                        cc * 2 * LANES
                    };
                    read_ahead(p.wrapping_add(q * isz), 2 * LANES * isz);
                    for k in 0..LANES {
                        let (m, bad) = plain(x[k], at(q + k));
                        x[k] = m;
                        nan[k] |= bad;
                    }
                    let second = if two { &mut y } else { &mut x };
                    for (k, e) in second.iter_mut().enumerate() {
                        let (m, bad) = plain(*e, at(q + LANES + k));
                        *e = m;
                        nan[k] |= bad;
                    }
                }
                nan.iter().fold(false, |a, &b| a | b)
            };
            if any_nan {
                for cc in c..c + nb {
                    let q = cc * 2 * LANES;
                    for k in 0..LANES {
                        acc[k] = op.combine(acc[k], at(q + k));
                        let second = if two { &mut acc2[k] } else { &mut acc[k] };
                        *second = op.combine(*second, at(q + LANES + k));
                    }
                }
            } else {
                (acc, acc2) = (x, y);
            }
            c += nb;
        }
        // An odd run of LANES, as the generic loop: into the first set.
        let full = n / LANES;
        if full % 2 == 1 {
            let q = (full - 1) * LANES;
            for (k, a) in acc.iter_mut().enumerate() {
                *a = op.combine(*a, at(q + k));
            }
        }
        for (a, b) in acc.iter_mut().zip(acc2) {
            *a = op.combine(*a, b);
        }
        for (k, i) in (full * LANES..n).enumerate() {
            acc[k] = op.combine(acc[k], at(i));
        }
        self.result.set(acc);
    }
}

/// One block of [`ExtremeLanes`] for float32 in explicit vector code at the vector
/// levels: whether a NaN was seen, or `None` at the portable level (the generic loop).
///
/// # Safety
/// `p` readable for `nb·32` floats; `level` at most the CPU's.
#[inline(always)]
unsafe fn extreme_block_f32<const MAX: bool>(
    level: Level,
    p: *const f32,
    nb: usize,
    x: &mut [f32; LANES],
    y: &mut [f32; LANES],
) -> Option<bool> {
    #[cfg(target_arch = "x86_64")]
    match level {
        // SAFETY: the contract.
        Level::Avx512 => return Some(unsafe { extreme_block_f32_avx512::<MAX>(p, nb, x, y) }),
        // SAFETY: the contract.
        Level::Avx2 => return Some(unsafe { extreme_block_f32_avx2::<MAX>(p, nb, x, y) }),
        Level::Portable => {}
    }
    let _ = (level, p, nb, x, y);
    None
}

/// One NaN-free-path block of [`ExtremeLanes`] for float32 at AVX-512: `nb` pairs of
/// 16-element runs from `p`, the first of each into `x`, the second into `y`, with
/// `max_ps(v, a)` (`v > a ? v : a`: the plain step exactly, `-0.0` against `0.0` and NaN
/// operands included). Returns whether a NaN was seen.
///
/// # Safety
/// `p` readable for `nb·32` floats; the CPU has AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn extreme_block_f32_avx512<const MAX: bool>(
    p: *const f32,
    nb: usize,
    x: &mut [f32; LANES],
    y: &mut [f32; LANES],
) -> bool {
    use std::arch::x86_64::*;
    // SAFETY: the contract; `x`/`y` are 16 floats each.
    unsafe {
        let (mut a, mut b) = (_mm512_loadu_ps(x.as_ptr()), _mm512_loadu_ps(y.as_ptr()));
        let mut nan: __mmask16 = 0;
        for i in 0..nb {
            read_ahead(p.add(i * 32).cast(), 128);
            let u = _mm512_loadu_ps(p.add(i * 32));
            let v = _mm512_loadu_ps(p.add(i * 32 + 16));
            nan |= _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(u, v);
            if MAX {
                a = _mm512_max_ps(u, a);
                b = _mm512_max_ps(v, b);
            } else {
                a = _mm512_min_ps(u, a);
                b = _mm512_min_ps(v, b);
            }
        }
        _mm512_storeu_ps(x.as_mut_ptr(), a);
        _mm512_storeu_ps(y.as_mut_ptr(), b);
        nan != 0
    }
}

/// [`extreme_block_f32_avx512`] at AVX2: each 16-lane accumulator as two registers.
///
/// # Safety
/// `p` readable for `nb·32` floats; the CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn extreme_block_f32_avx2<const MAX: bool>(
    p: *const f32,
    nb: usize,
    x: &mut [f32; LANES],
    y: &mut [f32; LANES],
) -> bool {
    use std::arch::x86_64::*;
    // SAFETY: the contract; `x`/`y` are 16 floats each.
    unsafe {
        let mut acc = [
            _mm256_loadu_ps(x.as_ptr()),
            _mm256_loadu_ps(x.as_ptr().add(8)),
            _mm256_loadu_ps(y.as_ptr()),
            _mm256_loadu_ps(y.as_ptr().add(8)),
        ];
        let mut nan = _mm256_setzero_ps();
        for i in 0..nb {
            read_ahead(p.add(i * 32).cast(), 128);
            let v = [0, 8, 16, 24].map(|o| _mm256_loadu_ps(p.add(i * 32 + o)));
            nan = _mm256_or_ps(nan, _mm256_cmp_ps::<_CMP_UNORD_Q>(v[0], v[1]));
            nan = _mm256_or_ps(nan, _mm256_cmp_ps::<_CMP_UNORD_Q>(v[2], v[3]));
            for (a, v) in acc.iter_mut().zip(v) {
                *a = if MAX {
                    _mm256_max_ps(v, *a)
                } else {
                    _mm256_min_ps(v, *a)
                };
            }
        }
        _mm256_storeu_ps(x.as_mut_ptr(), acc[0]);
        _mm256_storeu_ps(x.as_mut_ptr().add(8), acc[1]);
        _mm256_storeu_ps(y.as_mut_ptr(), acc[2]);
        _mm256_storeu_ps(y.as_mut_ptr().add(8), acc[3]);
        _mm256_movemask_ps(nan) != 0
    }
}

/// One block of [`ExtremeLanes`] for int32 at the vector levels: `nb` pairs of 16-element
/// runs from `p`, the first of each into `x`, the second into `y`, by vector maxima (or
/// minima). An integer maximum does not depend on the order, so this is the generic
/// fold's result exactly. `Some(false)` (no NaN in integers), or `None` at the portable
/// level, having done nothing.
///
/// # Safety
/// `p` readable for `nb·32` int32; `level` at most the CPU's.
#[inline(always)]
unsafe fn extreme_block_i32<const MAX: bool>(
    level: Level,
    p: *const i32,
    nb: usize,
    x: &mut [i32; LANES],
    y: &mut [i32; LANES],
) -> Option<bool> {
    #[cfg(target_arch = "x86_64")]
    match level {
        Level::Avx512 => {
            // SAFETY: the contract.
            unsafe { extreme_block_i32_avx512::<MAX>(p, nb, x, y) };
            return Some(false);
        }
        Level::Avx2 => {
            // SAFETY: the contract.
            unsafe { extreme_block_i32_avx2::<MAX>(p, nb, x, y) };
            return Some(false);
        }
        Level::Portable => {}
    }
    let _ = (level, p, nb, x, y);
    None
}

/// [`extreme_block_i32`] at AVX-512: one 16-lane register per accumulator.
///
/// # Safety
/// `p` readable for `nb·32` int32; the CPU has AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn extreme_block_i32_avx512<const MAX: bool>(
    p: *const i32,
    nb: usize,
    x: &mut [i32; LANES],
    y: &mut [i32; LANES],
) {
    use std::arch::x86_64::*;
    // SAFETY: the contract; `x`/`y` are 16 int32 each.
    unsafe {
        let mut a = _mm512_loadu_si512(x.as_ptr().cast());
        let mut b = _mm512_loadu_si512(y.as_ptr().cast());
        for i in 0..nb {
            read_ahead(p.add(i * 32).cast(), 128);
            let u = _mm512_loadu_si512(p.add(i * 32).cast());
            let v = _mm512_loadu_si512(p.add(i * 32 + 16).cast());
            if MAX {
                a = _mm512_max_epi32(u, a);
                b = _mm512_max_epi32(v, b);
            } else {
                a = _mm512_min_epi32(u, a);
                b = _mm512_min_epi32(v, b);
            }
        }
        _mm512_storeu_si512(x.as_mut_ptr().cast(), a);
        _mm512_storeu_si512(y.as_mut_ptr().cast(), b);
    }
}

/// [`extreme_block_i32`] at AVX2: each 16-lane accumulator as two registers.
///
/// # Safety
/// `p` readable for `nb·32` int32; the CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn extreme_block_i32_avx2<const MAX: bool>(
    p: *const i32,
    nb: usize,
    x: &mut [i32; LANES],
    y: &mut [i32; LANES],
) {
    use std::arch::x86_64::*;
    // SAFETY: the contract; `x`/`y` are 16 int32 each.
    unsafe {
        let ld = |q: *const i32| _mm256_loadu_si256(q.cast());
        let mut acc = [
            ld(x.as_ptr()),
            ld(x.as_ptr().add(8)),
            ld(y.as_ptr()),
            ld(y.as_ptr().add(8)),
        ];
        for i in 0..nb {
            read_ahead(p.add(i * 32).cast(), 128);
            let v = [0, 8, 16, 24].map(|o| ld(p.add(i * 32 + o)));
            for (a, v) in acc.iter_mut().zip(v) {
                *a = if MAX {
                    _mm256_max_epi32(v, *a)
                } else {
                    _mm256_min_epi32(v, *a)
                };
            }
        }
        _mm256_storeu_si256(x.as_mut_ptr().cast(), acc[0]);
        _mm256_storeu_si256(x.as_mut_ptr().add(8).cast(), acc[1]);
        _mm256_storeu_si256(y.as_mut_ptr().cast(), acc[2]);
        _mm256_storeu_si256(y.as_mut_ptr().add(8).cast(), acc[3]);
    }
}

/// `all` (`ALL = true`) or `any`, giving `O` (bool, or uint8 for uint8 input).
#[derive(Debug, Default)]
pub(crate) struct Logical<T, O, const ALL: bool>(PhantomData<(T, O)>);

impl<T: Element, O: Element, const ALL: bool> ReduceOp for Logical<T, O, ALL> {
    type In = T;
    type Acc = bool;
    type Out = O;
    type Aux = ();
    const PAIRWISE: bool = false;
    #[inline(always)]
    fn identity(&self) -> bool {
        ALL
    }
    #[inline(always)]
    fn aux(&self, _: f64) {}
    #[inline(always)]
    fn map(&self, x: T, _: ()) -> bool {
        x.is_nonzero()
    }
    #[inline(always)]
    fn combine(&self, a: bool, b: bool) -> bool {
        if ALL {
            a & b
        } else {
            a | b
        }
    }
    #[inline(always)]
    fn finish(&self, a: bool, _: usize, _: f64) -> O {
        O::from_bool(a)
    }
}

/// The mean in `f64` (first pass of `var`/`std`).
#[derive(Debug, Default)]
pub(crate) struct MeanF64<T>(PhantomData<T>);

impl<T: Element> ReduceOp for MeanF64<T> {
    type In = T;
    type Acc = f64;
    type Out = f64;
    type Aux = ();
    const PAIRWISE: bool = true;
    #[inline(always)]
    fn identity(&self) -> f64 {
        0.0
    }
    #[inline(always)]
    fn aux(&self, _: f64) {}
    #[inline(always)]
    fn map(&self, x: T, _: ()) -> f64 {
        x.to_f64()
    }
    #[inline(always)]
    fn combine(&self, a: f64, b: f64) -> f64 {
        a + b
    }
    #[inline(always)]
    fn finish(&self, a: f64, n: usize, _: f64) -> f64 {
        a / n as f64
    }
}

/// `Σ (x − mean)² / max(n − correction, 0)` (second pass of `var`), its square root
/// for `std`; `aux` is the mean.
#[derive(Debug)]
pub(crate) struct SqDev<T> {
    pub correction: f64,
    pub sqrt: bool,
    pub _t: PhantomData<T>,
}

impl<T: Element> ReduceOp for SqDev<T> {
    type In = T;
    type Acc = f64;
    type Out = T;
    type Aux = f64;
    const PAIRWISE: bool = true;
    #[inline(always)]
    fn identity(&self) -> f64 {
        0.0
    }
    #[inline(always)]
    fn aux(&self, a: f64) -> f64 {
        a
    }
    #[inline(always)]
    fn map(&self, x: T, mean: f64) -> f64 {
        let d = x.to_f64() - mean;
        d * d
    }
    #[inline(always)]
    fn combine(&self, a: f64, b: f64) -> f64 {
        a + b
    }
    #[inline(always)]
    fn finish(&self, a: f64, n: usize, _: f64) -> T {
        let v = a / (n as f64 - self.correction).max(0.0);
        T::from_f64(if self.sqrt { v.sqrt() } else { v })
    }
}

/// The maximum as `f64` with ±∞ replaced by 0 (first pass of `logsumexp`, as PyTorch's
/// `masked_fill_(maxes.abs() == INFINITY, 0)`).
#[derive(Debug, Default)]
pub(crate) struct LseMax<T>(PhantomData<T>);

impl<T: Summable> ReduceOp for LseMax<T> {
    type In = T;
    type Acc = T;
    type Out = f64;
    type Aux = ();
    const PAIRWISE: bool = false;
    #[inline(always)]
    fn identity(&self) -> T {
        T::lowest()
    }
    #[inline(always)]
    fn aux(&self, _: f64) {}
    #[inline(always)]
    fn map(&self, x: T, _: ()) -> T {
        x
    }
    #[inline(always)]
    fn combine(&self, a: T, b: T) -> T {
        if better_max(b, a) {
            b
        } else {
            a
        }
    }
    #[inline(always)]
    fn finish(&self, a: T, _: usize, _: f64) -> f64 {
        let m = a.to_f64();
        if m.is_infinite() {
            0.0
        } else {
            m
        }
    }
}

/// `log Σ exp(x − m) + m` with `m` in `aux` (second pass of `logsumexp`).
#[derive(Debug, Default)]
pub(crate) struct LseSum<T>(PhantomData<T>);

impl<T: Element> ReduceOp for LseSum<T> {
    type In = T;
    type Acc = f64;
    type Out = T;
    type Aux = f64;
    const PAIRWISE: bool = true;
    #[inline(always)]
    fn identity(&self) -> f64 {
        0.0
    }
    #[inline(always)]
    fn aux(&self, a: f64) -> f64 {
        a
    }
    #[inline(always)]
    fn map(&self, x: T, m: f64) -> f64 {
        (x.to_f64() - m).exp()
    }
    #[inline(always)]
    fn combine(&self, a: f64, b: f64) -> f64 {
        a + b
    }
    #[inline(always)]
    fn finish(&self, a: f64, _: usize, m: f64) -> T {
        T::from_f64(a.ln() + m)
    }
}

/// `log Σ exp(x − m) + m` for `f32`, `f16` and `bf16` input: [`exp_nonpos_f32`] and an
/// `f32` pairwise sum (the terms lie in `[0, 1]` and one of them is 1).
#[derive(Debug, Default)]
pub(crate) struct LseSumF32<T>(PhantomData<T>);

impl<T: Element> ReduceOp for LseSumF32<T> {
    type In = T;
    type Acc = f32;
    type Out = T;
    type Aux = f32;
    const PAIRWISE: bool = true;
    #[inline(always)]
    fn identity(&self) -> f32 {
        0.0
    }
    #[inline(always)]
    fn aux(&self, a: f64) -> f32 {
        a as f32
    }
    #[inline(always)]
    fn map(&self, x: T, m: f32) -> f32 {
        exp_nonpos_f32(x.to_f64() as f32 - m)
    }
    #[inline(always)]
    fn combine(&self, a: f32, b: f32) -> f32 {
        a + b
    }
    #[inline(always)]
    fn finish(&self, a: f32, _: usize, m: f64) -> T {
        T::from_f64((a as f64).ln() + m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_exp_is_accurate() {
        let mut worst = 0.0f64;
        let mut x = -87.0f32;
        while x <= 0.0 {
            let (got, want) = (exp_nonpos_f32(x) as f64, (x as f64).exp());
            worst = worst.max(((got - want) / want).abs());
            x += 0.0137;
        }
        assert!(worst < 4e-7, "{worst}");
        assert_eq!(exp_nonpos_f32(0.0), 1.0);
        assert_eq!(exp_nonpos_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_nonpos_f32(-100.0), 0.0);
        assert_eq!(exp_nonpos_f32(f32::INFINITY), f32::INFINITY);
        assert!(exp_nonpos_f32(f32::NAN).is_nan());
    }

    #[test]
    fn nan_aware_steps() {
        let n = f32::NAN;
        assert!(better_max(2.0, 1.0) && !better_max(1.0, 1.0) && !better_max(0.0, 1.0));
        assert!(better_max(n, 1.0) && !better_max(1.0, n) && !better_max(n, n));
        assert!(better_min(0.0, 1.0) && better_min(n, 1.0) && !better_min(0.0, n));
        assert!(better_max(3i32, 2) && !better_min(3u8, 2));
    }
}
