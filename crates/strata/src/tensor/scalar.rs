//! [`Scalar`]: a dtype-less number, like a Python scalar.

use std::fmt;

use crate::dtype::{DType, DTypeKind, Element};

/// A number without a dtype of its own (a Python `bool`, `int`, `float` or `complex`). It converts
/// to any element type with the cast rules of [`Element::cast`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// An unsigned integer above `i64::MAX` (read from a uint64 tensor; smaller values are
    /// always `Int`).
    UInt(u64),
    /// A floating-point number.
    Float(f64),
    /// A complex number `(re, im)`.
    Complex(f64, f64),
}

impl Scalar {
    /// Checks that the value can be stored in `dtype` without overflow, as PyTorch's
    /// `checked_convert` does for `fill_`, `full` and element writes: an integer or a
    /// (truncated) float outside an integer dtype's range, a non-finite float into an
    /// integer dtype, or a complex number with an imaginary part into a real dtype, is an
    /// error.
    pub fn check_fits(self, op: &'static str, dtype: crate::DType) -> crate::Result<()> {
        let limits = crate::ops::elementwise::int_limits(dtype);
        if let Scalar::Complex(_, im) = self {
            // A real dtype cannot hold an imaginary part: PyTorch's overflow error, never
            // a silent drop.
            if im != 0.0 && !dtype.is_complex() {
                let name = limits.map_or(dtype.c_name(), |(_, _, n)| n);
                return Err(crate::Error::Value {
                    op,
                    msg: format!("value cannot be converted to type {name} without overflow"),
                });
            }
        }
        let Some((lo, hi, name)) = limits else {
            return Ok(());
        };
        let fits = match self {
            Scalar::Bool(_) => true,
            Scalar::Int(v) => (lo..=hi).contains(&i128::from(v)),
            Scalar::UInt(v) => (lo..=hi).contains(&i128::from(v)),
            Scalar::Float(f) | Scalar::Complex(f, _) => {
                f.is_finite() && f.trunc() >= lo as f64 && f.trunc() <= hi as f64
            }
        };
        if fits {
            Ok(())
        } else {
            Err(crate::Error::Value {
                op,
                msg: format!("value cannot be converted to type {name} without overflow"),
            })
        }
    }

    /// The value as element type `T`.
    pub fn to<T: Element>(self) -> T {
        match self {
            Scalar::Bool(b) => T::from_bool(b),
            Scalar::Int(i) => T::from_i64(i),
            Scalar::UInt(u) => T::from_u64(u),
            Scalar::Float(f) => T::from_f64(f),
            Scalar::Complex(re, im) => T::from_complex(re, im),
        }
    }

    /// The value as `f64` (a complex number's real part).
    pub fn to_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => b as u8 as f64,
            Scalar::Int(i) => i as f64,
            Scalar::UInt(u) => u as f64,
            Scalar::Float(f) | Scalar::Complex(f, _) => f,
        }
    }

    /// The value as a complex number `(re, im)`.
    pub fn to_complex(self) -> (f64, f64) {
        match self {
            Scalar::Complex(re, im) => (re, im),
            other => (other.to_f64(), 0.0),
        }
    }

    /// The category of the scalar (bool, int or float).
    pub fn kind(self) -> DTypeKind {
        match self {
            Scalar::Bool(_) => DTypeKind::Bool,
            Scalar::Int(_) | Scalar::UInt(_) => DTypeKind::Int,
            Scalar::Float(_) => DTypeKind::Float,
            Scalar::Complex(..) => DTypeKind::Complex,
        }
    }

    /// PyTorch's default dtype for the scalar: bool, int64, float32 or complex64.
    pub fn default_dtype(self) -> DType {
        match self {
            Scalar::Bool(_) => DType::Bool,
            Scalar::Int(_) => DType::I64,
            Scalar::UInt(_) => DType::U64,
            Scalar::Float(_) => DType::F32,
            Scalar::Complex(..) => DType::C64,
        }
    }

    /// Reads an element as a scalar (uint64 values above `i64::MAX` as `UInt`).
    pub fn from_element<T: Element>(v: T) -> Scalar {
        match T::DTYPE.kind() {
            DTypeKind::Bool => Scalar::Bool(v.is_nonzero()),
            DTypeKind::UInt if T::DTYPE == DType::U64 && v.to_u64() > i64::MAX as u64 => {
                Scalar::UInt(v.to_u64())
            }
            DTypeKind::Int | DTypeKind::UInt => Scalar::Int(v.to_i64()),
            DTypeKind::Float => Scalar::Float(v.to_f64()),
            DTypeKind::Complex => {
                let (re, im) = v.to_complex();
                Scalar::Complex(re, im)
            }
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(b) => write!(f, "{}", if *b { "True" } else { "False" }),
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::UInt(u) => write!(f, "{u}"),
            Scalar::Float(x) => write!(f, "{x}"),
            Scalar::Complex(re, im) => {
                let sign = if im.is_sign_negative() { '-' } else { '+' };
                write!(f, "({re}{sign}{}j)", im.abs())
            }
        }
    }
}

impl From<bool> for Scalar {
    fn from(v: bool) -> Self {
        Scalar::Bool(v)
    }
}

macro_rules! scalar_from {
    ($variant:ident, $as:ty: $($t:ty),*) => {$(
        impl From<$t> for Scalar {
            fn from(v: $t) -> Self {
                Scalar::$variant(v as $as)
            }
        }
    )*};
}
scalar_from!(Int, i64: i8, i16, i32, i64, u8, u16, u32, isize);
scalar_from!(Float, f64: f32, f64);

impl From<crate::Complex32> for Scalar {
    fn from(v: crate::Complex32) -> Self {
        Scalar::Complex(v.re.into(), v.im.into())
    }
}

impl From<crate::Complex64> for Scalar {
    fn from(v: crate::Complex64) -> Self {
        Scalar::Complex(v.re, v.im)
    }
}

impl From<half::f16> for Scalar {
    fn from(v: half::f16) -> Self {
        Scalar::Float(v.to_f64())
    }
}

impl From<half::bf16> for Scalar {
    fn from(v: half::bf16) -> Self {
        Scalar::Float(v.to_f64())
    }
}
