//! The strided kernel engine (`engine.rs`) and the ops built on it.
//!
//! [`engine`] plans and runs `N`-operand loops; the op modules supply typed inner kernels.

pub(crate) mod binary;
pub(crate) mod copy;
pub(crate) mod elementwise;
pub(crate) mod engine;
pub(crate) mod ewise;
pub(crate) mod fill;
mod gather;
mod math;
pub(crate) mod matmul;
pub mod plan;
pub(crate) mod pool;
pub(crate) mod reduce;
mod ternary;
mod transpose;
mod unary;
mod walk;

pub(crate) use walk::walk;

pub use binary::scalar_lhs;
