//! Operator overloading: `&a + &b`, `&a * 2.0`, `1.0 - &a`, `-&a`, `!&mask`, …
//!
//! Tensor arithmetic is fallible (shapes may not broadcast, dtypes may not combine) and
//! strata never panics on user input, so **every operator's `Output` is
//! `Result<Tensor>`**: write `(&a + &b)?`. Operands may be tensors (owned or borrowed) or
//! the scalars `f64` and `i64` (on either side; `bool` too for `&`, `|`, `^`); scalars are
//! weak in type promotion, like Python numbers (`int32_tensor * 1.5` is float32).
//!
//! Only one float and one integer scalar type implement the operators, so that literals
//! infer (`&a * 2.0`, `&a + 1`): with impls for both `f32` and `f64`, `&a * 2.0` would not
//! compile. For an `f32` or `i32` value, write `&a * f64::from(x)` or call the method,
//! which takes any scalar (`a.mul(x)`).
//!
//! | operator | method |
//! |---|---|
//! | `a + b`, `a - b`, `a * b`, `a / b` | [`add`](Tensor::add), [`sub`](Tensor::sub), [`mul`](Tensor::mul), [`div`](Tensor::div) (true division) |
//! | `a % b` | [`remainder`](Tensor::remainder) (Python's `%`) |
//! | `a & b`, `a \| b`, `a ^ b` | [`bitwise_and`](Tensor::bitwise_and), [`bitwise_or`](Tensor::bitwise_or), [`bitwise_xor`](Tensor::bitwise_xor) |
//! | `-a` | [`neg`](Tensor::neg) |
//! | `!a` | [`bitwise_not`](Tensor::bitwise_not) (logical not for bool tensors) |
//!
//! ```
//! use strata::Tensor;
//! let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?;
//! let b = ((&a * 2.0)? - &a)?;
//! assert_eq!(b.to_vec::<f32>()?, vec![1.0, 2.0, 3.0]);
//! let c = (1.0 - &a)?;
//! assert_eq!(c.to_vec::<f32>()?, vec![0.0, -1.0, -2.0]);
//! # Ok::<(), strata::Error>(())
//! ```

use std::ops::{Add, BitAnd, BitOr, BitXor, Div, Mul, Neg, Not, Rem, Sub};

use super::Tensor;
use crate::error::Result;
use crate::kernel::plan::Operand;
use crate::ops::elementwise::{binary, Dest};
use crate::ops::table::Binary;

fn bin(kind: Binary, a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
    binary(kind, &a, &b, Dest::New)
}

macro_rules! tensor_binop {
    ($Trait:ident, $method:ident, $kind:ident; $($s:ty),*) => {
        impl $Trait<&Tensor> for &Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                bin(Binary::$kind, Operand::Tensor(self), Operand::Tensor(rhs))
            }
        }
        impl $Trait<Tensor> for &Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: Tensor) -> Result<Tensor> {
                bin(Binary::$kind, Operand::Tensor(self), Operand::Tensor(&rhs))
            }
        }
        impl $Trait<&Tensor> for Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                bin(Binary::$kind, Operand::Tensor(&self), Operand::Tensor(rhs))
            }
        }
        impl $Trait<Tensor> for Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: Tensor) -> Result<Tensor> {
                bin(Binary::$kind, Operand::Tensor(&self), Operand::Tensor(&rhs))
            }
        }
        $(
            impl $Trait<$s> for &Tensor {
                type Output = Result<Tensor>;
                fn $method(self, rhs: $s) -> Result<Tensor> {
                    bin(Binary::$kind, Operand::Tensor(self), rhs.into())
                }
            }
            impl $Trait<$s> for Tensor {
                type Output = Result<Tensor>;
                fn $method(self, rhs: $s) -> Result<Tensor> {
                    bin(Binary::$kind, Operand::Tensor(&self), rhs.into())
                }
            }
            impl $Trait<&Tensor> for $s {
                type Output = Result<Tensor>;
                fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                    bin(Binary::$kind, self.into(), Operand::Tensor(rhs))
                }
            }
            impl $Trait<Tensor> for $s {
                type Output = Result<Tensor>;
                fn $method(self, rhs: Tensor) -> Result<Tensor> {
                    bin(Binary::$kind, self.into(), Operand::Tensor(&rhs))
                }
            }
        )*
    };
}

tensor_binop!(Add, add, Add; f64, i64);
tensor_binop!(Sub, sub, Sub; f64, i64);
tensor_binop!(Mul, mul, Mul; f64, i64);
tensor_binop!(Div, div, Div; f64, i64);
tensor_binop!(Rem, rem, Remainder; f64, i64);
tensor_binop!(BitAnd, bitand, BitwiseAnd; i64, bool);
tensor_binop!(BitOr, bitor, BitwiseOr; i64, bool);
tensor_binop!(BitXor, bitxor, BitwiseXor; i64, bool);

impl Neg for &Tensor {
    type Output = Result<Tensor>;
    fn neg(self) -> Result<Tensor> {
        Tensor::neg(self)
    }
}

impl Neg for Tensor {
    type Output = Result<Tensor>;
    fn neg(self) -> Result<Tensor> {
        Tensor::neg(&self)
    }
}

impl Not for &Tensor {
    type Output = Result<Tensor>;
    fn not(self) -> Result<Tensor> {
        self.bitwise_not()
    }
}

impl Not for Tensor {
    type Output = Result<Tensor>;
    fn not(self) -> Result<Tensor> {
        self.bitwise_not()
    }
}
