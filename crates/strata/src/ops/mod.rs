//! The op layer: what an op means, independent of the device that runs it — argument
//! checks, shapes and placement rules, dtype rules, output allocation, in-place and
//! overlap rules. The loops that move and compute elements are the CPU backend's, in
//! `kernel/`.

pub(crate) mod index;
