//! CUDA C++ source for the GPU kernels, compiled at run time with NVRTC and cached per
//! device by source text (the idea of PyTorch's jiterator).
//!
//! Every kernel is generated from the same pieces: [`PRELUDE`] (conversions, wrapping
//! integer arithmetic and the math helpers the op table's CUDA expressions call), the
//! element type names of [`ctype`], the value conversions of [`convert`] (strata's cast
//! rules, `dtype.rs`), and a strided loop over a coalesced index space ([`Geometry`]).
//! The elementwise bodies are the `cuda(...)` expressions of the op table
//! (`ops/table.rs`): nothing here lists the ops a second time.

use std::ffi::{c_void, CString};
use std::fmt::Write as _;

use cudarc::driver::sys;
use cudarc::nvrtc::sys as nvrtc;

use super::driver::{drv, Gpu, Kernel};

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::storage::Device;

/// The most dims a kernel's index space has after merging (a tensor whose layout still
/// needs more is refused with a clear error rather than run wrongly).
pub(crate) const MAX_DIMS: usize = 12;
/// The most operands of one loop kernel (output included).
pub(crate) const MAX_OPS: usize = 4;

/// Helpers every kernel starts with. Kernel texts are generated and cached without it
/// (a per-call key of a few hundred bytes); [`compile`] puts it in front.
pub(crate) const PRELUDE: &str = r#"
typedef unsigned long long u64; typedef long long i64;
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
__device__ __forceinline__ float h2f(unsigned short h){ float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ unsigned short f2h(float f){ unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
__device__ __forceinline__ float b2f(unsigned short b){ return __uint_as_float(((unsigned)b) << 16); }
__device__ __forceinline__ unsigned short f2b(float f){
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u); return (unsigned short)(u >> 16); }
// double -> half/bfloat16 rounded once: to float by round-to-odd, then to nearest even.
__device__ __forceinline__ float d2f_odd(double d){
  float f = __double2float_rz(d);
  if ((double)f != d && f == f) { unsigned u = __float_as_uint(f) | 1u; f = __uint_as_float(u); }
  return f; }
__device__ __forceinline__ unsigned short d2h(double d){ return f2h(d2f_odd(d)); }
__device__ __forceinline__ unsigned short d2b(double d){ return f2b(d2f_odd(d)); }
template<class D> __device__ __forceinline__ D f2i(double v){
  const double lo = (double)(D)((D)0 < (D)-1 ? (D)0 : (D)((u64)1 << (8*sizeof(D)-1)));
  const double hi = -lo == 0.0 ? (double)(D)-1 : -lo;
  if (v != v) return (D)0;
  if (v <= lo) return (D)lo;
  if (v >= hi) return (D)-1 > (D)0 ? (D)-1 : (D)(((u64)1 << (8*sizeof(D)-1)) - 1);
  return (D)v; }
template<class T> __device__ __forceinline__ bool nz(T x){ return x != (T)0; }
template<class T> __device__ __forceinline__ T wadd(T a, T b){ return (T)((u64)a + (u64)b); }
template<class T> __device__ __forceinline__ T wsub(T a, T b){ return (T)((u64)a - (u64)b); }
template<class T> __device__ __forceinline__ T wmul(T a, T b){ return (T)((u64)a * (u64)b); }
template<class T> __device__ __forceinline__ T wneg(T a){ return (T)((u64)0 - (u64)a); }
template<class T> __device__ __forceinline__ bool isneg(T a){ return (T)-1 < (T)0 && a < (T)0; }
template<class T> __device__ __forceinline__ T wabs(T a){ return isneg(a) ? wneg(a) : a; }
template<class T> __device__ __forceinline__ T isgn(T a){ return isneg(a) ? (T)-1 : (a == (T)0 ? (T)0 : (T)1); }
template<class T> __device__ __forceinline__ T wdiv(T a, T b){ return ((T)-1 < (T)0 && b == (T)-1) ? wneg(a) : (T)(a / b); }
template<class T> __device__ __forceinline__ T wrem(T a, T b){ return ((T)-1 < (T)0 && b == (T)-1) ? (T)0 : (T)(a % b); }
template<class T> __device__ __forceinline__ T ifloordiv(T a, T b){
  T q = wdiv(a, b); return (isneg(a) != isneg(b) && wrem(a, b) != (T)0) ? wsub(q, (T)1) : q; }
template<class T> __device__ __forceinline__ T iremainder(T a, T b){
  T r = wrem(a, b); return (r != (T)0 && isneg(r) != isneg(b)) ? wadd(r, b) : r; }
template<class T> __device__ __forceinline__ T ipow(T a, T b){
  if (isneg(b)) { if (a == (T)1) return (T)1; if (a == wneg((T)1)) return ((u64)b & 1) ? a : (T)1; return (T)0; }
  u64 e = (u64)b; T r = (T)1; while (e) { if (e & 1) r = wmul(r, a); a = wmul(a, a); e >>= 1; } return r; }
template<class T> __device__ __forceinline__ T ishl(T a, T b){
  if (isneg(b) || (u64)b >= 8*sizeof(T)) return (T)0; return (T)((u64)a << (unsigned)b); }
template<class T> __device__ __forceinline__ T ishr(T a, T b){
  const unsigned mx = 8*sizeof(T) - ((T)-1 < (T)0 ? 1 : 0);
  if (isneg(b) || (u64)b >= mx) return ((T)-1 < (T)0) ? (T)(a >> mx) : (T)0; return (T)(a >> (unsigned)b); }
template<class T> __device__ __forceinline__ T iheav(T a, T b){ return a == (T)0 ? b : (isneg(a) ? (T)0 : (T)1); }
#define STRATA_F1(n) __device__ __forceinline__ float m_##n(float x){ return n##f(x); } __device__ __forceinline__ double m_##n(double x){ return n(x); }
#define STRATA_F2(n) __device__ __forceinline__ float m_##n(float x, float y){ return n##f(x, y); } __device__ __forceinline__ double m_##n(double x, double y){ return n(x, y); }
STRATA_F1(sqrt) STRATA_F1(exp) STRATA_F1(exp2) STRATA_F1(log) STRATA_F1(log2) STRATA_F1(log10)
STRATA_F1(log1p) STRATA_F1(expm1) STRATA_F1(sin) STRATA_F1(cos) STRATA_F1(tan) STRATA_F1(asin)
STRATA_F1(acos) STRATA_F1(atan) STRATA_F1(sinh) STRATA_F1(cosh) STRATA_F1(tanh) STRATA_F1(asinh)
STRATA_F1(acosh) STRATA_F1(atanh) STRATA_F1(erf) STRATA_F1(erfc) STRATA_F1(erfinv) STRATA_F1(floor)
STRATA_F1(ceil) STRATA_F1(rint) STRATA_F1(trunc) STRATA_F1(fabs)
STRATA_F2(pow) STRATA_F2(atan2) STRATA_F2(hypot) STRATA_F2(copysign) STRATA_F2(fmod) STRATA_F2(nextafter)
template<class T> __device__ __forceinline__ bool m_isnan(T x){ return x != x; }
template<class T> __device__ __forceinline__ bool m_isinf(T x){ return x - x != x - x && x == x; }
template<class T> __device__ __forceinline__ bool m_isfinite(T x){ return x - x == x - x; }
__device__ __forceinline__ bool m_signbit(float x){ return (__float_as_uint(x) >> 31) != 0; }
__device__ __forceinline__ bool m_signbit(double x){ return __double_as_longlong(x) < 0; }
template<class T> __device__ __forceinline__ T rsgn(T x){ return x > (T)0 ? (T)1 : (x < (T)0 ? (T)-1 : (x == (T)0 ? (T)0 : x)); }
template<class T> __device__ __forceinline__ T rfloordiv(T a, T b){
  if (b == (T)0) return a / b;
  T m = m_fmod(a, b); T d = (a - m) / b;
  if (m != (T)0 && ((b < (T)0) != (m < (T)0))) d = d - (T)1;
  if (d != (T)0) { T f = m_floor(d); return (d - f > (T)0.5) ? f + (T)1 : f; }
  return m_copysign((T)0, a / b); }
template<class T> __device__ __forceinline__ T rremainder(T a, T b){
  T m = m_fmod(a, b); return (m != (T)0 && ((b < (T)0) != (m < (T)0))) ? m + b : m; }
template<class T> __device__ __forceinline__ T rmaximum(T a, T b){ return (a != a || b != b) ? a + b : (a < b ? b : a); }
template<class T> __device__ __forceinline__ T rminimum(T a, T b){ return (a != a || b != b) ? a + b : (a > b ? b : a); }
template<class T> __device__ __forceinline__ T rfmax(T a, T b){ return (a >= b || b != b) ? a : b; }
template<class T> __device__ __forceinline__ T rfmin(T a, T b){ return (a <= b || b != b) ? a : b; }
template<class T> __device__ __forceinline__ T rheav(T a, T b){ return a < (T)0 ? (T)0 : (a == (T)0 ? b : (a > (T)0 ? (T)1 : a)); }
template<class T> __device__ __forceinline__ T rlogaddexp(T a, T b){
  if (a == b) return a + (T)0.69314718055994530942; T d = a - b;
  if (d > (T)0) return a + m_log1p(m_exp(-d)); if (d <= (T)0) return b + m_log1p(m_exp(d)); return d; }
template<class T> __device__ __forceinline__ T rlogaddexp2(T a, T b){
  if (a == b) return a + (T)1; T d = a - b; const T l2e = (T)1.44269504088896340736;
  if (d > (T)0) return a + m_log1p(m_exp2(-d)) * l2e; if (d <= (T)0) return b + m_log1p(m_exp2(d)) * l2e; return d; }
template<class T> __device__ __forceinline__ T rxlogy(T a, T b){ if (b != b) return b; if (a == (T)0) return (T)0; return a * m_log(b); }
template<class T> __device__ __forceinline__ T rsigmoid(T x){ return (T)1 / ((T)1 + m_exp(-x)); }
// nextafter in a half type's own precision, on its float value (exact both ways).
__device__ __forceinline__ float nextafter_bits(float a, float b, bool bf){
  if (a != a || b != b) return a + b; if (a == b) return b;
  unsigned short h = bf ? f2b(a) : f2h(a);
  if (a == 0.0f) h = (unsigned short)((b < 0.0f ? 0x8000u : 0u) | 1u);
  else if ((a < b) == (a > 0.0f)) h = (unsigned short)(h + 1); else h = (unsigned short)(h - 1);
  return bf ? b2f(h) : h2f(h); }
"#;

/// The element type a storage of `dt` holds, as the kernels name it.
pub(crate) fn ctype(dt: DType) -> &'static str {
    match dt {
        DType::Bool | DType::U8 => "unsigned char",
        DType::I8 => "signed char",
        DType::I16 => "short",
        DType::U16 | DType::F16 | DType::BF16 => "unsigned short",
        DType::I32 => "int",
        DType::U32 => "unsigned int",
        DType::I64 => "long long",
        DType::U64 => "unsigned long long",
        DType::F32 => "float",
        DType::F64 => "double",
        DType::C64 => "float2",
        DType::C128 => "double2",
    }
}

/// The type a kernel computes `dt` values in: half types in `float`, bool as `bool`.
pub(crate) fn vtype(dt: DType) -> &'static str {
    match dt {
        DType::Bool => "bool",
        DType::F16 | DType::BF16 => "float",
        other => ctype(other),
    }
}

/// The value at `p` (a pointer to `ctype(dt)`), in `vtype(dt)`.
pub(crate) fn load(dt: DType, p: &str) -> String {
    match dt {
        DType::Bool => format!("(*({p}) != 0)"),
        DType::F16 => format!("h2f(*({p}))"),
        DType::BF16 => format!("b2f(*({p}))"),
        _ => format!("(*({p}))"),
    }
}

/// The statement storing `v` (a `vtype(dt)` value) at `p`.
pub(crate) fn store(dt: DType, p: &str, v: &str) -> String {
    match dt {
        DType::Bool => format!("*({p}) = (unsigned char)(({v}) ? 1 : 0);"),
        DType::F16 => format!("*({p}) = f2h({v});"),
        DType::BF16 => format!("*({p}) = f2b({v});"),
        _ => format!("*({p}) = ({v});"),
    }
}

/// The statement storing `v`, a value of dtype `from` in `vtype(from)`, at `p` of dtype
/// `to`, with strata's cast rules (`Element::cast`): to bool is `!= 0`; floats to
/// integers truncate and saturate (NaN to 0); integers wrap; a float64 reaches a half
/// type rounded once.
pub(crate) fn store_cast(from: DType, to: DType, p: &str, v: &str) -> String {
    if from == DType::F64 && to == DType::F16 {
        return format!("*({p}) = d2h({v});");
    }
    if from == DType::F64 && to == DType::BF16 {
        return format!("*({p}) = d2b({v});");
    }
    store(to, p, &convert(from, to, v))
}

/// `v`, a `from` value in `vtype(from)`, as a `to` value in `vtype(to)`.
pub(crate) fn convert(from: DType, to: DType, v: &str) -> String {
    if from == to || (vtype(from) == vtype(to) && to != DType::Bool) {
        return v.to_string();
    }
    if to == DType::Bool {
        return format!("nz({v})");
    }
    if from == DType::Bool {
        return format!("(({v}) ? ({t})1 : ({t})0)", t = vtype(to));
    }
    if from.is_float() && !to.is_float() {
        return format!("f2i<{}>((double)({v}))", ctype(to));
    }
    format!("(({})({v}))", vtype(to))
}

/// A tensor operand of a loop: its dims' element strides, already permuted and merged
/// into the loop's index space, and its device address (offset applied).
#[derive(Debug, Clone)]
pub(crate) struct Geometry {
    /// The index space, outermost first.
    pub sizes: Vec<usize>,
    /// Per operand: element strides over `sizes`.
    pub strides: Vec<Vec<isize>>,
}

impl Geometry {
    /// Merges adjacent dims that every operand walks as one (`stride[d] == size[d+1] ·
    /// stride[d+1]`, or size 1), and drops size-1 dims.
    pub(crate) fn new(shape: &[usize], strides: Vec<Vec<isize>>) -> Geometry {
        let mut sizes: Vec<usize> = Vec::new();
        let mut out: Vec<Vec<isize>> = vec![Vec::new(); strides.len()];
        for d in 0..shape.len() {
            if shape[d] == 1 {
                continue;
            }
            let mergeable = !sizes.is_empty()
                && strides
                    .iter()
                    .zip(out.iter())
                    .all(|(s, o)| o.last().copied() == Some(s[d] * shape[d] as isize));
            if mergeable {
                let last = sizes.len() - 1;
                sizes[last] *= shape[d];
                for (o, s) in out.iter_mut().zip(strides.iter()) {
                    let l = o.len() - 1;
                    o[l] = s[d];
                }
            } else {
                sizes.push(shape[d]);
                for (o, s) in out.iter_mut().zip(strides.iter()) {
                    o.push(s[d]);
                }
            }
        }
        Geometry {
            sizes,
            strides: out,
        }
    }

    /// Elements in the index space.
    pub(crate) fn numel(&self) -> usize {
        self.sizes.iter().product()
    }

    /// True when every operand walks the whole space with unit stride (or is a scalar).
    pub(crate) fn flat(&self) -> bool {
        self.sizes.len() <= 1
            && self
                .strides
                .iter()
                .all(|s| s.first().is_none_or(|&x| x == 1))
    }
}

/// The argument block of every loop kernel, passed by value (layout mirrored in
/// [`loop_kernel`]'s `struct A`).
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct LoopArgs {
    pub ptr: [u64; MAX_OPS],
    pub scalar: [u64; MAX_OPS],
    pub size: [i64; MAX_DIMS],
    pub stride: [[i64; MAX_DIMS]; MAX_OPS],
    pub n: i64,
    pub nd: i64,
    /// Tiled loops: the tile's dims and the count of tiles' batches.
    pub tj: i64,
    pub tl: i64,
    pub nb: i64,
}

/// One operand of a loop kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Slot {
    /// Elements of this dtype at a device address, walked with the geometry's strides.
    Tensor(DType),
    /// One value of this dtype passed by value (its bits, as [`scalar_bits`] encodes).
    Scalar(DType),
}

/// The source of a grid-stride loop over `a.nd` dims: operand `i` is `pi` (a pointer to its
/// element, for tensors) or `si` (its value, for scalars); `body` is the statements run per
/// element. `wide` selects 64-bit index arithmetic.
pub(crate) fn loop_kernel(slots: &[Slot], wide: bool, flat: bool, body: &str) -> String {
    let mut s = args_struct();
    let ix = if wide { "long long" } else { "int" };
    let _ = writeln!(s, "extern \"C\" __global__ void k(const A a) {{");
    let _ = writeln!(s, "  typedef {ix} I;");
    for (i, slot) in slots.iter().enumerate() {
        match slot {
            Slot::Tensor(dt) => {
                let _ = writeln!(s, "  {c}* const b{i} = ({c}*)a.ptr[{i}];", c = ctype(*dt));
            }
            Slot::Scalar(dt) => {
                let v = scalar_decode(*dt, &format!("a.scalar[{i}]"));
                let _ = writeln!(s, "  const {} s{i} = {v};", vtype(*dt));
            }
        }
    }
    let _ = writeln!(
        s,
        "  for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < (I)a.n; i += (I)gridDim.x * (I)blockDim.x) {{"
    );
    if flat {
        for (i, slot) in slots.iter().enumerate() {
            if let Slot::Tensor(dt) = slot {
                let _ = writeln!(s, "    {c}* const p{i} = b{i} + i;", c = ctype(*dt));
            }
        }
    } else {
        let _ = writeln!(s, "    I r = i;");
        for (i, slot) in slots.iter().enumerate() {
            if matches!(slot, Slot::Tensor(_)) {
                let _ = writeln!(s, "    I o{i} = 0;");
            }
        }
        // The dims count is an argument: one kernel serves every layout of an op.
        let _ = writeln!(s, "    for (int d = (int)a.nd - 1; d >= 0; --d) {{ const I c = r % (I)a.size[d]; r /= (I)a.size[d];");
        for (i, slot) in slots.iter().enumerate() {
            if matches!(slot, Slot::Tensor(_)) {
                let _ = writeln!(s, "      o{i} += c * (I)a.stride[{i}][d];");
            }
        }
        s.push_str("    }\n");
        for (i, slot) in slots.iter().enumerate() {
            if let Slot::Tensor(dt) = slot {
                let _ = writeln!(s, "    {c}* const p{i} = b{i} + o{i};", c = ctype(*dt));
            }
        }
    }
    let _ = writeln!(s, "    {body}");
    s.push_str("  }\n}\n");
    s
}

/// Elements a thread of [`flat_kernel`] and [`rows_kernel`] handles per pass
/// (independent loads in flight).
pub(crate) const UNROLL: usize = 4;

/// The loop over operands that are all contiguous (or scalars): each thread loads
/// [`UNROLL`] elements a grid-stride apart before computing any, so that several loads
/// are in flight (`bodies[k]` is the body for the `k`-th, whose tensor inputs' values are
/// `v{k}_{i}`; pointers `p{i}` are set for each).
pub(crate) fn flat_kernel(slots: &[Slot], wide: bool, prefix: &str, bodies: &[String]) -> String {
    unrolled_kernel(slots, wide, prefix, bodies, false)
}

/// As [`flat_kernel`], over rows: the last dim (`a.size[a.nd - 1]`) is walked by
/// `threadIdx.x`/`blockIdx.x` with each operand's stride along it, the others (the
/// rows) by `threadIdx.y`/`blockIdx.y`, so a row's offsets are computed once per row,
/// not per element (a flip, a stepped view, a broadcast row or column).
pub(crate) fn rows_kernel(slots: &[Slot], wide: bool, prefix: &str, bodies: &[String]) -> String {
    unrolled_kernel(slots, wide, prefix, bodies, true)
}

fn unrolled_kernel(
    slots: &[Slot],
    wide: bool,
    prefix: &str,
    bodies: &[String],
    rows: bool,
) -> String {
    let mut s = args_struct();
    let ix = if wide { "long long" } else { "int" };
    let _ = writeln!(s, "extern \"C\" __global__ void k(const A a) {{");
    let _ = writeln!(s, "  typedef {ix} I;");
    for (i, slot) in slots.iter().enumerate() {
        match slot {
            Slot::Tensor(dt) => {
                let _ = writeln!(s, "  {c}* const b{i} = ({c}*)a.ptr[{i}];", c = ctype(*dt));
            }
            Slot::Scalar(dt) => {
                let v = scalar_decode(*dt, &format!("a.scalar[{i}]"));
                let _ = writeln!(s, "  const {} s{i} = {v};", vtype(*dt));
            }
        }
    }
    let tensors: Vec<(usize, DType)> = slots
        .iter()
        .enumerate()
        .filter_map(|(i, slot)| match slot {
            Slot::Tensor(dt) => Some((i, *dt)),
            Slot::Scalar(_) => None,
        })
        .collect();
    if rows {
        s.push_str("  const int D = (int)a.nd - 1;\n  const I inner = (I)a.size[D];\n  const I rows = (I)(a.n / a.size[D]);\n");
        for &(i, _) in &tensors {
            let _ = writeln!(s, "  const I is{i} = (I)a.stride[{i}][D];");
        }
        s.push_str("  for (I row = (I)blockIdx.y * (I)blockDim.y + (I)threadIdx.y; row < rows; row += (I)gridDim.y * (I)blockDim.y) {\n    I r = row;\n");
        for &(i, _) in &tensors {
            let _ = writeln!(s, "    I o{i} = 0;");
        }
        s.push_str("    for (int d = D - 1; d >= 0; --d) { const I c = r % (I)a.size[d]; r /= (I)a.size[d];\n");
        for &(i, _) in &tensors {
            let _ = writeln!(s, "      o{i} += c * (I)a.stride[{i}][d];");
        }
        s.push_str("    }\n");
        for &(i, dt) in &tensors {
            let _ = writeln!(s, "    {c}* const r{i} = b{i} + o{i};", c = ctype(dt));
        }
    } else {
        s.push_str("  const I inner = (I)a.n;\n");
        for &(i, dt) in &tensors {
            let _ = writeln!(s, "  {c}* const r{i} = b{i};", c = ctype(dt));
        }
    }
    let at = |i: usize, k: usize| {
        if rows {
            format!("r{i} + x{k} * is{i}")
        } else {
            format!("r{i} + x{k}")
        }
    };
    s.push_str("  const I step = (I)gridDim.x * (I)blockDim.x;\n");
    let _ = writeln!(
        s,
        "  for (I base = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; base < inner; base += {UNROLL} * step) {{"
    );
    let _ = writeln!(s, "  {prefix}");
    for k in 0..bodies.len() {
        let _ = writeln!(
            s,
            "    const I x{k} = base + {k} * step; const bool ok{k} = x{k} < inner;"
        );
        for &(i, dt) in tensors.iter().filter(|&&(i, _)| i > 0) {
            let _ = writeln!(
                s,
                "    const {vt} v{k}_{i} = ok{k} ? {} : ({vt})0;",
                load(dt, &at(i, k)),
                vt = vtype(dt)
            );
        }
    }
    for (k, body) in bodies.iter().enumerate() {
        let _ = writeln!(s, "    if (ok{k}) {{");
        for &(i, dt) in &tensors {
            let _ = writeln!(s, "      {c}* const p{i} = {};", at(i, k), c = ctype(dt));
        }
        let _ = writeln!(s, "      {body}\n    }}");
    }
    s.push_str(if rows { "  }\n  }\n}\n" } else { "  }\n}\n" });
    s
}

/// The struct every loop kernel takes (see [`LoopArgs`]).
fn args_struct() -> String {
    format!(
        "struct A {{ u64 ptr[{MAX_OPS}]; u64 scalar[{MAX_OPS}]; i64 size[{MAX_DIMS}]; i64 stride[{MAX_OPS}][{MAX_DIMS}]; i64 n; i64 nd; i64 tj; i64 tl; i64 nb; }};\n"
    )
}

/// A tiled loop over dims `a.tj` (`J`) and `a.tl` (`L`, the output's unit-stride dim),
/// the other dims a batch (`blockIdx.z`): operands flagged in `tiled` (unit stride along
/// `J`) are first read into 32×33 shared tiles by threads walking `J`, then every element
/// is computed by threads walking `L`, so reads and writes are both coalesced (a
/// transposing copy, `a + b.T`). Blocks are 32×8 threads, 4 elements each per phase;
/// strides are read once into registers. `wide` selects 64-bit index arithmetic. `body`
/// as in [`loop_kernel`]; the tiled operands' values are `t{i}[tx][q]`.
pub(crate) fn tiled_kernel(slots: &[Slot], tiled: &[bool], wide: bool, body: &str) -> String {
    let mut s = args_struct();
    let ix = if wide { "long long" } else { "int" };
    let _ = writeln!(s, "extern \"C\" __global__ void k(const A a) {{");
    let _ = writeln!(s, "  typedef {ix} I;");
    s.push_str("  const int tx = threadIdx.x, ty = threadIdx.y;\n");
    s.push_str(
        "  const int J = (int)a.tj, L = (int)a.tl;\n  const I nJ = (I)a.size[J], nL = (I)a.size[L];\n",
    );
    s.push_str("  const I l0 = (I)blockIdx.x * 32, j0 = (I)blockIdx.y * 32;\n");
    s.push_str("  const bool full = j0 + 32 <= nJ && l0 + 32 <= nL;\n");
    for (i, slot) in slots.iter().enumerate() {
        match slot {
            Slot::Tensor(dt) => {
                let _ = writeln!(s, "  {c}* const b{i} = ({c}*)a.ptr[{i}];", c = ctype(*dt));
                let _ = writeln!(
                    s,
                    "  const I sj{i} = (I)a.stride[{i}][J], sl{i} = (I)a.stride[{i}][L];"
                );
                if tiled[i] {
                    let _ = writeln!(s, "  __shared__ {} t{i}[32][33];", vtype(*dt));
                }
            }
            Slot::Scalar(dt) => {
                let v = scalar_decode(*dt, &format!("a.scalar[{i}]"));
                let _ = writeln!(s, "  const {} s{i} = {v};", vtype(*dt));
            }
        }
    }
    s.push_str("  for (I bt = blockIdx.z; bt < (I)a.nb; bt += gridDim.z) {\n    I r = bt;\n");
    for (i, slot) in slots.iter().enumerate() {
        if matches!(slot, Slot::Tensor(_)) {
            let _ = writeln!(s, "    I o{i} = 0;");
        }
    }
    s.push_str("    for (int d = (int)a.nd - 1; d >= 0; --d) { if (d == J || d == L) continue; const I c = r % (I)a.size[d]; r /= (I)a.size[d];\n");
    for (i, slot) in slots.iter().enumerate() {
        if matches!(slot, Slot::Tensor(_)) {
            let _ = writeln!(s, "      o{i} += c * (I)a.stride[{i}][d];");
        }
    }
    s.push_str("    }\n");
    // Phase 1: the tiled operands, threads along J.
    s.push_str("    #pragma unroll\n    for (int u = 0; u < 4; ++u) { const int q = ty + 8 * u; const I j = j0 + tx, l = l0 + q; if (full || (j < nJ && l < nL)) {\n");
    for (i, slot) in slots.iter().enumerate() {
        if let (Slot::Tensor(dt), true) = (slot, tiled[i]) {
            let p = format!("b{i} + o{i} + j * sj{i} + l * sl{i}");
            let _ = writeln!(s, "      t{i}[q][tx] = {};", load(*dt, &p));
        }
    }
    s.push_str("    } }\n    __syncthreads();\n");
    // Phase 2: every element, threads along L.
    s.push_str("    #pragma unroll\n    for (int u = 0; u < 4; ++u) { const int q = ty + 8 * u; const I j = j0 + q, l = l0 + tx; if (full || (j < nJ && l < nL)) {\n");
    for (i, slot) in slots.iter().enumerate() {
        if let (Slot::Tensor(dt), false) = (slot, tiled[i]) {
            let _ = writeln!(
                s,
                "      {c}* const p{i} = b{i} + o{i} + j * sj{i} + l * sl{i};",
                c = ctype(*dt)
            );
        }
    }
    let _ = writeln!(s, "      {body}");
    s.push_str("    } }\n    __syncthreads();\n  }\n}\n");
    s
}

/// The C++ expression decoding a scalar's 64 bits (`u64` expression `bits`) as a
/// `vtype(dt)` value.
fn scalar_decode(dt: DType, bits: &str) -> String {
    match dt {
        DType::Bool => format!("({bits} != 0)"),
        DType::F16 | DType::BF16 | DType::F32 => format!("__uint_as_float((unsigned){bits})"),
        DType::F64 => format!("__longlong_as_double((long long){bits})"),
        other => format!("({})({bits})", ctype(other)),
    }
}

/// The bits a scalar of `dt` travels in (see [`scalar_decode`]); half types travel as
/// the `f32` of their value.
pub(crate) fn scalar_bits(dt: DType, v: crate::tensor::Scalar) -> u64 {
    use crate::tensor::Scalar as S;
    let f = |v: S| match v {
        S::Bool(b) => f64::from(u8::from(b)),
        S::Int(i) => i as f64,
        S::UInt(u) => u as f64,
        S::Float(x) | S::Complex(x, _) => x,
    };
    let i = |v: S| match v {
        S::Bool(b) => i64::from(b),
        S::Int(i) => i,
        S::UInt(u) => u as i64,
        S::Float(x) | S::Complex(x, _) => x as i64,
    };
    match dt {
        DType::Bool => u64::from(match v {
            S::Bool(b) => b,
            other => f(other) != 0.0,
        }),
        DType::F16 => u64::from(half::f16::from_f64(f(v)).to_f32().to_bits()),
        DType::BF16 => u64::from(half::bf16::from_f64(f(v)).to_f32().to_bits()),
        DType::F32 => u64::from((f(v) as f32).to_bits()),
        DType::F64 => f(v).to_bits(),
        DType::U64 => match v {
            S::UInt(u) => u,
            other => i(other) as u64,
        },
        _ => i(v) as u64,
    }
}

impl Gpu {
    /// The kernel `k` of `source`, compiled with NVRTC for this device on first use.
    pub(crate) fn kernel(&self, op: &'static str, source: &str) -> Result<Kernel> {
        if let Some(k) = self
            .kernels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(source)
        {
            return Ok(*k);
        }
        let image = match disk_cache_get(self.cc, source) {
            Some(image) => image,
            None => {
                let image = compile(op, self.ordinal, self.cc, source)?;
                disk_cache_put(self.cc, source, &image);
                image
            }
        };
        let mut module: sys::CUmodule = std::ptr::null_mut();
        drv!(
            op,
            self.ordinal,
            cuModuleLoadData(&mut module, image.as_ptr().cast())
        )?;
        let mut func: sys::CUfunction = std::ptr::null_mut();
        let name = c"k";
        drv!(
            op,
            self.ordinal,
            cuModuleGetFunction(&mut func, module, name.as_ptr())
        )?;
        let k = Kernel { func };
        self.kernels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(source.to_string(), k);
        Ok(k)
    }

    /// Launches `k` over `n` elements (grid-stride, 256 threads a block) on `stream`
    /// with its one by-value argument `args`.
    pub(crate) fn launch<T: Copy>(
        &self,
        op: &'static str,
        k: Kernel,
        n: usize,
        stream: sys::CUstream,
        args: &T,
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let threads = 256u32;
        let blocks = n
            .div_ceil(threads as usize)
            .min(self.sms as usize * 64)
            .max(1) as u32;
        self.launch_grid(op, k, (blocks, 1, 1), (threads, 1, 1), 0, stream, args)
    }

    /// Launches `k` with an explicit grid and block.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn launch_grid<T: Copy>(
        &self,
        op: &'static str,
        k: Kernel,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        shared: u32,
        stream: sys::CUstream,
        args: &T,
    ) -> Result<()> {
        let mut params: [*mut c_void; 1] = [(args as *const T).cast_mut().cast()];
        drv!(
            op,
            self.ordinal,
            cuLaunchKernel(
                k.func,
                grid.0,
                grid.1,
                grid.2,
                block.0,
                block.1,
                block.2,
                shared,
                stream,
                params.as_mut_ptr(),
                std::ptr::null_mut()
            )
        )
    }
}

/// The folder of compiled kernels: `$STRATA_KERNEL_CACHE`, else
/// `$XDG_CACHE_HOME/strata/kernels` or `~/.cache/strata/kernels`; `None` (no disk cache)
/// when `STRATA_KERNEL_CACHE` is empty or no home is known.
fn cache_dir() -> Option<std::path::PathBuf> {
    if let Some(d) = std::env::var_os("STRATA_KERNEL_CACHE") {
        return (!d.is_empty()).then(|| d.into());
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".cache")))?;
    Some(base.join("strata").join("kernels"))
}

/// The cache file of `source` for `cc`: named by a 128-bit hash of the text with the
/// prelude (FNV-1a, two seeds), the NVRTC version and the architecture; the kernel text is
/// stored beside the image and compared on load, so a collision can only cost a
/// recompile.
fn cache_path(cc: (i32, i32), source: &str) -> Option<std::path::PathBuf> {
    let mut h = [0xcbf2_9ce4_8422_2325u64, 0x8422_2325_cbf2_9ce4u64];
    for b in PRELUDE.bytes().chain(source.bytes()) {
        for x in &mut h {
            *x = (*x ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: writes two ints (NVRTC is loaded: the caller compiled or will compile).
    unsafe { nvrtc::nvrtcVersion(&mut major, &mut minor) };
    Some(cache_dir()?.join(format!(
        "sm{}{}-nvrtc{major}.{minor}-{:016x}{:016x}",
        cc.0, cc.1, h[0], h[1]
    )))
}

fn disk_cache_get(cc: (i32, i32), source: &str) -> Option<Vec<u8>> {
    // SAFETY: only tries to open the library.
    if !unsafe { nvrtc::is_culib_present() } {
        return None;
    }
    let p = cache_path(cc, source)?;
    let text = std::fs::read(p.with_extension("cu")).ok()?;
    if text != source.as_bytes() {
        return None;
    }
    std::fs::read(p.with_extension("bin")).ok()
}

fn disk_cache_put(cc: (i32, i32), source: &str, image: &[u8]) {
    let Some(p) = cache_path(cc, source) else {
        return;
    };
    if let Some(dir) = p.parent() {
        if std::fs::create_dir_all(dir).is_err() {
            return;
        }
    }
    // Written under temporary names, then renamed: a concurrent reader sees whole files.
    let tmp = |ext: &str| p.with_extension(format!("{ext}.{}", std::process::id()));
    let ok = std::fs::write(tmp("bin"), image).is_ok()
        && std::fs::write(tmp("cu"), source).is_ok()
        && std::fs::rename(tmp("bin"), p.with_extension("bin")).is_ok()
        && std::fs::rename(tmp("cu"), p.with_extension("cu")).is_ok();
    if !ok {
        let _ = std::fs::remove_file(tmp("bin"));
        let _ = std::fs::remove_file(tmp("cu"));
    }
}

/// NVRTC: [`PRELUDE`] + `source` to a CUBIN for compute capability `cc` (PTX when this NVRTC does not
/// know the architecture: the driver then compiles it) (of device `ordinal`, named in
/// errors). Needs no GPU: the tests compile every generated kernel with it.
pub(crate) fn compile(
    op: &'static str,
    ordinal: usize,
    cc: (i32, i32),
    source: &str,
) -> Result<Vec<u8>> {
    let dev = Device::Cuda(ordinal);
    // SAFETY: only tries to open the library.
    if !unsafe { nvrtc::is_culib_present() } {
        return Err(Error::Device {
            op,
            device: dev,
            msg: "the CUDA kernels need NVRTC, but libnvrtc.so could not be loaded (add the CUDA toolkit's or the nvidia-cuda-nvrtc wheel's lib folder to LD_LIBRARY_PATH)".into(),
        });
    }
    let fail = |what: &str, r: nvrtc::nvrtcResult| Error::Device {
        op,
        device: dev,
        msg: format!("NVRTC failed in {what}: {r:?}"),
    };
    let full = format!("{PRELUDE}\n{source}");
    let src = CString::new(full)
        .map_err(|_| fail("source", nvrtc::nvrtcResult::NVRTC_ERROR_INVALID_INPUT))?;
    let mut prog: nvrtc::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: `src` is NUL-terminated and outlives the call; no headers are passed.
    let r = unsafe {
        nvrtc::nvrtcCreateProgram(
            &mut prog,
            src.as_ptr(),
            c"strata.cu".as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    if r != nvrtc::nvrtcResult::NVRTC_SUCCESS {
        return Err(fail("nvrtcCreateProgram", r));
    }
    let known = {
        let mut n = 0i32;
        // SAFETY: writes one int; then a buffer of that many ints.
        unsafe {
            nvrtc::nvrtcGetNumSupportedArchs(&mut n);
            let mut archs = vec![0i32; n.max(0) as usize];
            nvrtc::nvrtcGetSupportedArchs(archs.as_mut_ptr());
            archs.contains(&(cc.0 * 10 + cc.1))
        }
    };
    let kind = if known { "sm" } else { "compute" };
    let arch =
        CString::new(format!("--gpu-architecture={kind}_{}{}", cc.0, cc.1)).unwrap_or_default();
    let opts = [
        arch.as_ptr(),
        c"--std=c++17".as_ptr(),
        c"-default-device".as_ptr(),
    ];
    // SAFETY: `prog` is live; the option strings outlive the call.
    let r = unsafe { nvrtc::nvrtcCompileProgram(prog, opts.len() as i32, opts.as_ptr()) };
    let result = if r == nvrtc::nvrtcResult::NVRTC_SUCCESS {
        let mut n = 0usize;
        // SAFETY: `prog` compiled; the buffer has the size NVRTC reports.
        unsafe {
            if known {
                nvrtc::nvrtcGetCUBINSize(prog, &mut n);
                let mut bin = vec![0u8; n.max(1)];
                nvrtc::nvrtcGetCUBIN(prog, bin.as_mut_ptr().cast());
                Ok(bin)
            } else {
                nvrtc::nvrtcGetPTXSize(prog, &mut n);
                let mut ptx = vec![0u8; n.max(1)];
                nvrtc::nvrtcGetPTX(prog, ptx.as_mut_ptr().cast());
                Ok(ptx)
            }
        }
    } else {
        let mut n = 0usize;
        // SAFETY: as above, for the log.
        let log = unsafe {
            nvrtc::nvrtcGetProgramLogSize(prog, &mut n);
            let mut log = vec![0u8; n.max(1)];
            nvrtc::nvrtcGetProgramLog(prog, log.as_mut_ptr().cast());
            String::from_utf8_lossy(&log)
                .trim_end_matches('\0')
                .to_string()
        };
        Err(Error::Device {
            op,
            device: dev,
            msg: format!("NVRTC could not compile a kernel: {log}"),
        })
    };
    // SAFETY: `prog` is destroyed once.
    unsafe { nvrtc::nvrtcDestroyProgram(&mut prog) };
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Element offsets of every index of `g` for operand `k`, row-major, by brute force.
    fn offsets(sizes: &[usize], strides: &[isize]) -> Vec<isize> {
        let n: usize = sizes.iter().product();
        (0..n)
            .map(|mut i| {
                let mut o = 0;
                for d in (0..sizes.len()).rev() {
                    o += (i % sizes[d]) as isize * strides[d];
                    i /= sizes[d];
                }
                o
            })
            .collect()
    }

    #[test]
    fn merged_dims_walk_the_same_elements() {
        let cases: Vec<(Vec<usize>, Vec<Vec<isize>>)> = vec![
            (vec![3, 4], vec![vec![4, 1], vec![4, 1]]),
            (vec![3, 4], vec![vec![4, 1], vec![1, 3]]),
            (vec![2, 1, 5, 6], vec![vec![30, 30, 6, 1], vec![0, 7, 0, 1]]),
            (vec![4, 5], vec![vec![-5, -1], vec![5, 1]]),
            (vec![1, 1], vec![vec![1, 1], vec![0, 0]]),
            (vec![6, 2, 3], vec![vec![6, 3, 1], vec![-6, 3, 1]]),
        ];
        for (shape, strides) in cases {
            let g = Geometry::new(&shape, strides.clone());
            assert_eq!(g.numel(), shape.iter().product::<usize>());
            for (k, s) in strides.iter().enumerate() {
                assert_eq!(
                    offsets(&g.sizes, &g.strides[k]),
                    offsets(&shape, s),
                    "{shape:?} {strides:?}"
                );
            }
        }
        // Row-major operands merge into one flat dim; a transposed one does not.
        assert!(Geometry::new(&[3, 4], vec![vec![4, 1], vec![4, 1]]).flat());
        assert!(!Geometry::new(&[3, 4], vec![vec![4, 1], vec![1, 3]]).flat());
    }

    #[test]
    fn scalars_travel_as_their_bits() {
        use crate::tensor::Scalar;
        assert_eq!(
            scalar_bits(DType::F32, Scalar::Float(1.5)),
            u64::from(1.5f32.to_bits())
        );
        assert_eq!(
            scalar_bits(DType::F64, Scalar::Int(-2)),
            (-2.0f64).to_bits()
        );
        assert_eq!(scalar_bits(DType::I8, Scalar::Int(-1)), u64::MAX);
        assert_eq!(scalar_bits(DType::U64, Scalar::UInt(u64::MAX)), u64::MAX);
        assert_eq!(scalar_bits(DType::Bool, Scalar::Float(0.5)), 1);
        // Half types travel as the float32 of their rounded value.
        assert_eq!(
            scalar_bits(DType::BF16, Scalar::Float(1.0 + 1.0 / 512.0)),
            u64::from(1.0f32.to_bits())
        );
    }
}
