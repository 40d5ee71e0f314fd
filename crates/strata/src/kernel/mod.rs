//! Kernels over strided layouts.
//!
//! For now this holds the simple, correct element walker the data ops of the core use;
//! the fast engine (plan → simplify → tile → parallelise) builds on it.

mod walk;

pub(crate) use walk::walk;
