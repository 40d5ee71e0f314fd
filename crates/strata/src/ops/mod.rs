//! The op layer: what an op means, independent of the device that runs it — argument
//! checks, shapes and placement rules, dtype rules, output allocation, in-place and
//! overlap rules. The loops that move and compute elements are the backend's (the CPU
//! backend's are in `kernel/`).
//!
//! - [`table`]: THE elementwise op table — each unary, binary and ternary op declared once
//!   (name, dtype rule, cost class, scalar function, doc, in-place variant); the enums,
//!   `Tensor` methods, CPU dispatch and Python methods are generated from it.
//! - [`elementwise`]: the elementwise op layer — dtype rules, broadcasting, the output or
//!   in-place destination, then one call into the backend's loops.
//! - `reduce`: the reduction table (each reduction and scan declared once: name, kind,
//!   dtype rule) and the reductions' op layer (dims, keepdim, output), over the loops in
//!   `kernel/reduce/`.
//! - `index`: advanced indexing — what a key of index tensors and masks selects, and
//!   `index_put_`, over the gather/scatter loops; `gather`/`scatter` along a dim.
//! - `arrange`: ops that place elements by position (`cat`, `stack`, `roll`, `repeat`,
//!   `tile`, `tril`/`triu`, `meshgrid`, `diff`), over the backend's copies.
//! - `sort`: `sort`, `argsort`, `topk`, `unique`, `searchsorted`, over the backend's sort
//!   and search loops (`kernel/sort.rs` on the CPU).
//! - `composite`: ops composed of other ops, so differentiable through them (`softmax`,
//!   `log_softmax`, `isclose`/`allclose`, `cross`, `cumulative_sum`); `einsum` (the same,
//!   with its equation parser).
//! - `complex`: complex tensors' own ops — the views of their parts (`view_as_real`,
//!   `view_as_complex`, `real`, `imag`), `conj`, `abs`/`angle`, `complex`/`polar`
//!   (complex arithmetic and math are table entries with `complex` arms).
//! - [`fft`]: discrete Fourier transforms (`strata::fft`, PyTorch's `torch.fft`): sizes,
//!   dims, dtypes and norms, over the row transforms of `kernel/fft.rs`.
//! - `linalg`: linear algebra (`strata::linalg`, PyTorch's `torch.linalg`): factorisations
//!   per matrix over the backend's `linalg` loops (`kernel/linalg.rs`, through `faer`),
//!   and the norms, `pinv`, `lstsq`, `trace`, `tensordot` composed from them and other ops.

pub(crate) mod arrange;
pub(crate) mod complex;
pub(crate) mod composite;
pub(crate) mod einsum;
pub mod elementwise;
pub(crate) mod elementwise_grad;
pub mod fft;
pub(crate) mod index;
pub mod linalg;
mod linalg_grad;
pub(crate) mod reduce;
pub(crate) mod sort;
pub mod table;

pub use elementwise::scalar_lhs;
pub use table::{op_table, Binary, Cost, OpInfo, Ternary, Unary};
