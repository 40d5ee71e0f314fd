//! The op layer: what an op means, independent of the device it runs on.
//!
//! - [`table`]: THE elementwise op table — each unary, binary and ternary op declared once
//!   (name, dtype rule, cost class, scalar function, doc, in-place variant); the enums,
//!   `Tensor` methods, CPU dispatch and Python methods are generated from it.
//! - [`elementwise`]: the elementwise op layer — dtype rules, broadcasting, the output or
//!   in-place destination, then one call into the backend's loops (`kernel/` on the CPU).

pub mod elementwise;
pub mod table;

pub use elementwise::scalar_lhs;
pub use table::{op_table, Binary, Cost, OpInfo, Ternary, Unary};
