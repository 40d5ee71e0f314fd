//! Element types: [`DType`], the sealed [`Element`] trait and the one dispatch macro.

use std::fmt;

use half::{bf16, f16};
pub use num_complex::{Complex32, Complex64};

/// The broad category of a dtype, ordered as PyTorch's promotion categories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DTypeKind {
    /// `bool`.
    Bool,
    /// Unsigned integers.
    UInt,
    /// Signed integers.
    Int,
    /// Floating point.
    Float,
    /// Complex numbers (a pair of floats).
    Complex,
}

/// The element type of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// `bool`, one byte; any non-zero byte reads as `true`.
    Bool,
    /// `u8`.
    U8,
    /// `i8`.
    I8,
    /// `i16`.
    I16,
    /// `u16`.
    U16,
    /// `i32`.
    I32,
    /// `u32`.
    U32,
    /// `i64`.
    I64,
    /// `u64`.
    U64,
    /// IEEE half precision ([`half::f16`]).
    F16,
    /// bfloat16 ([`half::bf16`]).
    BF16,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// complex64: two `f32`, real then imaginary ([`Complex32`]).
    C64,
    /// complex128: two `f64`, real then imaginary ([`Complex64`]).
    C128,
}

impl DType {
    /// Every dtype but the complex ones, in declaration order.
    pub const REAL: [DType; 13] = [
        DType::Bool,
        DType::U8,
        DType::I8,
        DType::I16,
        DType::U16,
        DType::I32,
        DType::U32,
        DType::I64,
        DType::U64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];

    /// Every dtype, in declaration order.
    pub const ALL: [DType; 15] = [
        DType::Bool,
        DType::U8,
        DType::I8,
        DType::I16,
        DType::U16,
        DType::I32,
        DType::U32,
        DType::I64,
        DType::U64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
        DType::C64,
        DType::C128,
    ];

    /// Bytes per element.
    pub const fn itemsize(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 => 1,
            DType::I16 | DType::U16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::U64 | DType::F64 | DType::C64 => 8,
            DType::C128 => 16,
        }
    }

    /// PyTorch's name for the dtype (`"float32"`, `"bfloat16"`, …).
    pub const fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "uint8",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::U16 => "uint16",
            DType::I32 => "int32",
            DType::U32 => "uint32",
            DType::I64 => "int64",
            DType::U64 => "uint64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::C64 => "complex64",
            DType::C128 => "complex128",
        }
    }

    /// PyTorch's legacy tensor-type name, used in some of its error texts
    /// (`Float`, `Double`, `Long`, …).
    pub const fn legacy_name(self) -> &'static str {
        match self {
            DType::Bool => "Bool",
            DType::U8 => "Byte",
            DType::I8 => "Char",
            DType::I16 => "Short",
            DType::U16 => "UInt16",
            DType::I32 => "Int",
            DType::U32 => "UInt32",
            DType::I64 => "Long",
            DType::U64 => "UInt64",
            DType::F16 => "Half",
            DType::BF16 => "BFloat16",
            DType::F32 => "Float",
            DType::F64 => "Double",
            DType::C64 => "ComplexFloat",
            DType::C128 => "ComplexDouble",
        }
    }

    /// PyTorch's C++ name of the element type, used in some of its error texts ("Could
    /// not set tensor of type long int to a tensor of type float").
    pub const fn c_name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "unsigned char",
            DType::I8 => "signed char",
            DType::I16 => "short int",
            DType::U16 => "unsigned short",
            DType::I32 => "int",
            DType::U32 => "unsigned int",
            DType::I64 => "long int",
            DType::U64 => "unsigned long",
            DType::F16 => "c10::Half",
            DType::BF16 => "c10::BFloat16",
            DType::F32 => "float",
            DType::F64 => "double",
            DType::C64 => "c10::complex<float>",
            DType::C128 => "c10::complex<double>",
        }
    }

    /// The dtype's category.
    pub const fn kind(self) -> DTypeKind {
        match self {
            DType::Bool => DTypeKind::Bool,
            DType::U8 | DType::U16 | DType::U32 | DType::U64 => DTypeKind::UInt,
            DType::I8 | DType::I16 | DType::I32 | DType::I64 => DTypeKind::Int,
            DType::F16 | DType::BF16 | DType::F32 | DType::F64 => DTypeKind::Float,
            DType::C64 | DType::C128 => DTypeKind::Complex,
        }
    }

    /// True for the complex dtypes.
    pub const fn is_complex(self) -> bool {
        matches!(self.kind(), DTypeKind::Complex)
    }

    /// The real dtype of a complex one's parts (`complex64` → `float32`); other dtypes
    /// are their own.
    pub const fn to_real(self) -> DType {
        match self {
            DType::C64 => DType::F32,
            DType::C128 => DType::F64,
            other => other,
        }
    }

    /// The complex dtype whose parts are this float dtype (`float64` → `complex128`;
    /// half precision and float32 → `complex64`); `None` for the others.
    pub const fn to_complex(self) -> Option<DType> {
        match self {
            DType::F16 | DType::BF16 | DType::F32 | DType::C64 => Some(DType::C64),
            DType::F64 | DType::C128 => Some(DType::C128),
            _ => None,
        }
    }

    /// True for the floating-point dtypes.
    pub const fn is_float(self) -> bool {
        matches!(self.kind(), DTypeKind::Float)
    }

    /// True for signed and unsigned integers (not bool).
    pub const fn is_int(self) -> bool {
        matches!(self.kind(), DTypeKind::Int | DTypeKind::UInt)
    }

    /// Looks a dtype up by its [`name`](Self::name) or a common alias
    /// (`"float"`, `"double"`, `"half"`, `"long"`, `"int"`, `"f4"`, …).
    pub fn from_name(name: &str) -> Option<DType> {
        Some(match name {
            "bool" => DType::Bool,
            "uint8" | "u8" => DType::U8,
            "int8" | "i8" => DType::I8,
            "int16" | "short" | "i16" => DType::I16,
            "uint16" | "u16" => DType::U16,
            "int32" | "int" | "i32" => DType::I32,
            "uint32" | "u32" => DType::U32,
            "int64" | "long" | "i64" => DType::I64,
            "uint64" | "u64" => DType::U64,
            "float16" | "half" | "f16" => DType::F16,
            "bfloat16" | "bf16" => DType::BF16,
            "float32" | "float" | "f32" => DType::F32,
            "float64" | "double" | "f64" => DType::F64,
            "complex64" | "cfloat" | "c64" => DType::C64,
            "complex128" | "cdouble" | "c128" => DType::C128,
            _ => return None,
        })
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A Rust type that is the element of some [`DType`]. Sealed: implemented for `bool`, the
/// integer types, [`half::f16`], [`half::bf16`], `f32`, `f64`, [`Complex32`] and
/// [`Complex64`] only.
///
/// Elements are moved in and out of storage with [`load`](Element::load) and
/// [`store`](Element::store), which tolerate unaligned pointers (foreign memory need not be
/// aligned) and, for `bool`, any byte value: a storage byte other than 0 or 1 reads as
/// `true` instead of being undefined behaviour.
pub trait Element:
    sealed::Sealed + Copy + Send + Sync + PartialEq + fmt::Debug + Default + 'static
{
    /// The dtype this type represents.
    const DTYPE: DType;

    /// Whether elementwise math on this type gets an AVX-512 copy of its loops
    /// (`kernel/cpu.rs`): the float types, whose transcendental functions are compute-bound.
    /// Other types stop at AVX2, where memory-bound loops already run at bandwidth.
    const VECTOR_MATH: bool = false;

    /// Whether every bit pattern of the type's size is a value of it (all but `bool`), so
    /// that storage bytes may be read through a slice of the type.
    const ANY_BIT_PATTERN: bool = true;

    /// Reads one element.
    ///
    /// # Safety
    /// `p` must be valid for reads of `size_of::<Self>()` bytes.
    #[inline(always)]
    unsafe fn load(p: *const u8) -> Self {
        // SAFETY: the caller guarantees `p` is readable for the size of `Self`, and every
        // implementor except `bool` (which overrides this) is valid for any bit pattern.
        unsafe { (p as *const Self).read_unaligned() }
    }

    /// Writes one element.
    ///
    /// # Safety
    /// `p` must be valid for writes of `size_of::<Self>()` bytes.
    #[inline(always)]
    unsafe fn store(self, p: *mut u8) {
        // SAFETY: the caller guarantees `p` is writable for the size of `Self`.
        unsafe { (p as *mut Self).write_unaligned(self) }
    }

    /// The value as `f64` (bool as 0/1; large integers round).
    fn to_f64(self) -> f64;
    /// The value as `i64` (floats truncate toward zero and saturate; `u64` wraps).
    fn to_i64(self) -> i64;
    /// The value as `u64` (floats truncate and saturate; signed integers wrap).
    fn to_u64(self) -> u64;
    /// `self != 0`.
    fn is_nonzero(self) -> bool;
    /// From `f64`: floats round, integers truncate toward zero (saturating), bool is `!= 0`.
    fn from_f64(v: f64) -> Self;
    /// From `i64`: integers wrap, floats round, bool is `!= 0`.
    fn from_i64(v: i64) -> Self;
    /// From `u64`: integers wrap, floats round, bool is `!= 0`.
    fn from_u64(v: u64) -> Self;
    /// From `bool`: 0 or 1.
    fn from_bool(v: bool) -> Self {
        Self::from_i64(v as i64)
    }
    /// The value as a complex number `(re, im)` in `f64` (real types: `(value, 0)`).
    #[inline(always)]
    fn to_complex(self) -> (f64, f64) {
        (self.to_f64(), 0.0)
    }
    /// From a complex number: real types take the real part and drop the imaginary one
    /// (PyTorch's and NumPy's cast).
    #[inline(always)]
    fn from_complex(re: f64, _im: f64) -> Self {
        Self::from_f64(re)
    }

    /// Converts between element types with PyTorch's cast rules: float → int truncates
    /// toward zero, anything → bool is `!= 0`, bool → anything is 0 or 1, integer → integer
    /// wraps. Every branch is decided at compile time and is a plain `as` conversion, so
    /// loops over it vectorise.
    #[inline(always)]
    fn cast<D: Element>(self) -> D {
        if D::DTYPE == DType::Bool {
            D::from_bool(self.is_nonzero())
        } else if Self::DTYPE.is_complex() {
            let (re, im) = self.to_complex();
            D::from_complex(re, im)
        } else if Self::DTYPE.is_float() {
            D::from_f64(self.to_f64())
        } else if Self::DTYPE == DType::U64 {
            D::from_u64(self.to_u64())
        } else {
            D::from_i64(self.to_i64())
        }
    }
}

macro_rules! int_element {
    ($($t:ty => $dt:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::$dt;
            #[inline(always)] fn to_f64(self) -> f64 { self as f64 }
            #[inline(always)] fn to_i64(self) -> i64 { self as i64 }
            #[inline(always)] fn to_u64(self) -> u64 { self as u64 }
            #[inline(always)] fn is_nonzero(self) -> bool { self != 0 }
            #[inline(always)] fn from_f64(v: f64) -> Self { v as $t }
            #[inline(always)] fn from_i64(v: i64) -> Self { v as $t }
            #[inline(always)] fn from_u64(v: u64) -> Self { v as $t }
        }
    )*};
}
int_element!(u8 => U8, i8 => I8, i16 => I16, u16 => U16, i32 => I32, u32 => U32, i64 => I64, u64 => U64);

macro_rules! float_element {
    ($($t:ty => $dt:ident, $to:expr, $from:expr, $from_i:expr, $from_u:expr);*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::$dt;
            const VECTOR_MATH: bool = matches!(DType::$dt, DType::F32 | DType::F64);
            #[inline(always)] fn to_f64(self) -> f64 { ($to)(self) }
            #[inline(always)] fn to_i64(self) -> i64 { ($to)(self) as i64 }
            #[inline(always)] fn to_u64(self) -> u64 { ($to)(self) as u64 }
            #[inline(always)] fn is_nonzero(self) -> bool { ($to)(self) != 0.0 }
            #[inline(always)] fn from_f64(v: f64) -> Self { ($from)(v) }
            #[inline(always)] fn from_i64(v: i64) -> Self { ($from_i)(v) }
            #[inline(always)] fn from_u64(v: u64) -> Self { ($from_u)(v) }
        }
    )*};
}
float_element!(
    f32 => F32, |v: f32| v as f64, |v: f64| v as f32, |v: i64| v as f32, |v: u64| v as f32;
    f64 => F64, |v: f64| v, |v: f64| v, |v: i64| v as f64, |v: u64| v as f64;
    f16 => F16, |v: f16| v.to_f64(), f16::from_f64, |v: i64| f16::from_f32(v as f32), |v: u64| f16::from_f32(v as f32);
    bf16 => BF16, |v: bf16| v.to_f64(), bf16::from_f64, |v: i64| bf16::from_f32(v as f32), |v: u64| bf16::from_f32(v as f32)
);

macro_rules! complex_element {
    ($($t:ty => $dt:ident, $part:ty);*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::$dt;
            #[inline(always)] fn to_f64(self) -> f64 { self.re as f64 }
            #[inline(always)] fn to_i64(self) -> i64 { self.re as i64 }
            #[inline(always)] fn to_u64(self) -> u64 { self.re as u64 }
            #[inline(always)] fn is_nonzero(self) -> bool { self.re != 0.0 || self.im != 0.0 }
            #[inline(always)] fn from_f64(v: f64) -> Self { Self::new(v as $part, 0.0) }
            #[inline(always)] fn from_i64(v: i64) -> Self { Self::new(v as $part, 0.0) }
            #[inline(always)] fn from_u64(v: u64) -> Self { Self::new(v as $part, 0.0) }
            #[inline(always)] fn to_complex(self) -> (f64, f64) { (self.re as f64, self.im as f64) }
            #[inline(always)] fn from_complex(re: f64, im: f64) -> Self { Self::new(re as $part, im as $part) }
        }
    )*};
}
complex_element!(Complex32 => C64, f32; Complex64 => C128, f64);

impl sealed::Sealed for bool {}
impl Element for bool {
    const DTYPE: DType = DType::Bool;
    const ANY_BIT_PATTERN: bool = false;

    #[inline(always)]
    unsafe fn load(p: *const u8) -> Self {
        // SAFETY: the caller guarantees `p` is readable for one byte; it is read as `u8`,
        // so byte values other than 0/1 are not undefined behaviour.
        unsafe { p.read() != 0 }
    }

    #[inline(always)]
    unsafe fn store(self, p: *mut u8) {
        // SAFETY: the caller guarantees `p` is writable for one byte.
        unsafe { p.write(self as u8) }
    }

    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as u8 as f64
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self as i64
    }
    #[inline(always)]
    fn to_u64(self) -> u64 {
        self as u64
    }
    #[inline(always)]
    fn is_nonzero(self) -> bool {
        self
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        v != 0
    }
    #[inline(always)]
    fn from_u64(v: u64) -> Self {
        v != 0
    }
    #[inline(always)]
    fn from_bool(v: bool) -> Self {
        v
    }
}

/// Runs `$body` with the type alias `$T` bound to the Rust element type of `$dtype`.
/// This is the one place dtypes are dispatched; ops call it once, at the top.
///
/// ```
/// use strata::{with_dtype, DType, Element};
/// let size = with_dtype!(DType::BF16, T => std::mem::size_of::<T>());
/// assert_eq!(size, 2);
/// ```
#[macro_export]
macro_rules! with_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::DType::Bool => {
                type $T = bool;
                $body
            }
            $crate::DType::U8 => {
                type $T = u8;
                $body
            }
            $crate::DType::I8 => {
                type $T = i8;
                $body
            }
            $crate::DType::I16 => {
                type $T = i16;
                $body
            }
            $crate::DType::U16 => {
                type $T = u16;
                $body
            }
            $crate::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::DType::U32 => {
                type $T = u32;
                $body
            }
            $crate::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::DType::U64 => {
                type $T = u64;
                $body
            }
            $crate::DType::F16 => {
                type $T = $crate::half::f16;
                $body
            }
            $crate::DType::BF16 => {
                type $T = $crate::half::bf16;
                $body
            }
            $crate::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::DType::C64 => {
                type $T = $crate::Complex32;
                $body
            }
            $crate::DType::C128 => {
                type $T = $crate::Complex64;
                $body
            }
        }
    };
}

/// As [`with_dtype!`] for the real dtypes (bool, integers, floats); a complex dtype
/// evaluates `$complex` instead: for loops that need an ordering or real arithmetic.
#[macro_export]
macro_rules! with_real_dtype {
    ($dtype:expr, $T:ident => $body:expr, complex => $complex:expr) => {
        match $dtype {
            $crate::DType::Bool => {
                type $T = bool;
                $body
            }
            $crate::DType::U8 => {
                type $T = u8;
                $body
            }
            $crate::DType::I8 => {
                type $T = i8;
                $body
            }
            $crate::DType::I16 => {
                type $T = i16;
                $body
            }
            $crate::DType::U16 => {
                type $T = u16;
                $body
            }
            $crate::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::DType::U32 => {
                type $T = u32;
                $body
            }
            $crate::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::DType::U64 => {
                type $T = u64;
                $body
            }
            $crate::DType::F16 => {
                type $T = $crate::half::f16;
                $body
            }
            $crate::DType::BF16 => {
                type $T = $crate::half::bf16;
                $body
            }
            $crate::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::DType::C64 | $crate::DType::C128 => $complex,
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn itemsize_matches_rust_types() {
        for dt in DType::ALL {
            let size = with_dtype!(dt, T => std::mem::size_of::<T>());
            assert_eq!(size, dt.itemsize(), "{dt}");
            let dt2 = with_dtype!(dt, T => T::DTYPE);
            assert_eq!(dt, dt2);
            assert_eq!(DType::from_name(dt.name()), Some(dt));
        }
    }

    #[test]
    fn casts_follow_pytorch() {
        assert_eq!((-2.7f32).cast::<i32>(), -2);
        assert_eq!((2.7f64).cast::<u8>(), 2);
        assert!(0.5f32.cast::<bool>());
        assert!(!(0.0f32).cast::<bool>());
        assert!(!(-0.0f64).cast::<bool>());
        assert_eq!(true.cast::<f32>(), 1.0);
        assert_eq!(300i32.cast::<u8>(), 44);
        assert_eq!((-1i8).cast::<u16>(), 65535);
        assert_eq!(u64::MAX.cast::<f64>(), 18446744073709551615.0);
        assert_eq!(u64::MAX.cast::<i64>(), -1);
        assert_eq!((-1i64).cast::<u64>(), u64::MAX);
        assert_eq!(i64::MAX.cast::<f32>(), 9223372036854775807.0f32);
        assert_eq!(f16::from_f32(1.5).cast::<f32>(), 1.5);
        assert_eq!(16777217i64.cast::<f32>(), 16777216.0);
    }

    #[test]
    fn complex_casts_follow_pytorch() {
        let z = Complex64::new(-2.7, 1.5);
        assert_eq!(z.cast::<f64>(), -2.7);
        assert_eq!(z.cast::<i32>(), -2);
        assert!(z.cast::<bool>());
        assert!(Complex32::new(0.0, -0.5).cast::<bool>());
        assert!(!Complex32::new(-0.0, 0.0).cast::<bool>());
        assert_eq!(z.cast::<Complex32>(), Complex32::new(-2.7, 1.5));
        assert_eq!(3i64.cast::<Complex64>(), Complex64::new(3.0, 0.0));
        assert_eq!(true.cast::<Complex32>(), Complex32::new(1.0, 0.0));
        assert_eq!(
            f16::from_f32(1.5).cast::<Complex64>(),
            Complex64::new(1.5, 0.0)
        );
        assert_eq!(DType::ALL[..13], DType::REAL);
        assert!(DType::ALL[13..].iter().all(|d| d.is_complex()));
        assert_eq!(DType::C64.to_real(), DType::F32);
        assert_eq!(DType::F64.to_complex(), Some(DType::C128));
        assert_eq!(DType::I32.to_complex(), None);
        assert!(DType::C128.is_complex() && !DType::C128.is_float());
    }

    #[test]
    fn bool_load_tolerates_any_byte() {
        let b = [0u8, 1, 2, 255];
        // SAFETY: each pointer is inside `b`.
        let v: Vec<bool> = (0..4)
            .map(|i| unsafe { bool::load(b.as_ptr().add(i)) })
            .collect();
        assert_eq!(v, [false, true, true, true]);
    }
}
