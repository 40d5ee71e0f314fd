//! The CPU backend: the strided kernel engine (`engine.rs`) and the loops built on it.
//!
//! [`engine`] plans and runs `N`-operand loops; `elementwise_loops` maps typed closures
//! over them, and `unary`/`binary`/`ternary` dispatch each op of the op table
//! (`ops/table.rs`) to those loops with its scalar function.

pub(crate) mod binary;
pub(crate) mod complex;
pub(crate) mod copy;
pub mod cpu;
pub(crate) mod elementwise_loops;
pub(crate) mod engine;
pub(crate) mod fft;
pub(crate) mod fill;
pub(crate) mod gather;
pub mod half_convert;
mod int_divide;
pub(crate) mod linalg;
pub(crate) mod math;
pub mod matmul;
pub mod plan;
pub(crate) mod pool;
pub(crate) mod prefetch;
pub(crate) mod reduce;
pub(crate) mod sort;
mod ternary;
mod transpose;
mod unary;
pub(crate) mod vector_math;
mod walk;

pub(crate) use binary::run_binary;
pub(crate) use ternary::run_ternary;
pub(crate) use unary::run_unary;
pub(crate) use walk::walk;

pub use crate::ops::scalar_lhs;
