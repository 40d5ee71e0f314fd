//! View-op cases shared by the view property suites (`views_prop.rs` draws them from seeds
//! against the current shape, `hostile_shapes.rs` with extreme arguments): one value per
//! public view op with its arguments, and [`run_op`], which calls the op's method.

use strata::{DType, Tensor, TensorIndex};

/// A view op with its arguments. Ops that give several pieces carry, last, the piece a
/// chain continues with ([`Op::piece`], taken modulo the count).
#[derive(Debug, Clone)]
pub enum Op {
    View(Vec<i64>),
    Reshape(Vec<i64>),
    Flatten(i64, i64),
    Unflatten(i64, Vec<i64>),
    Transpose(i64, i64),
    Permute(Vec<i64>),
    Movedim(Vec<i64>, Vec<i64>),
    T,
    MT,
    Narrow(i64, i64, i64),
    Select(i64, i64),
    Slice(i64, Option<i64>, Option<i64>, i64),
    Flip(Vec<i64>),
    Expand(Vec<i64>),
    BroadcastTo(Vec<usize>),
    Squeeze,
    SqueezeDims(Vec<i64>),
    Unsqueeze(i64),
    AsStrided(Vec<usize>, Vec<isize>, Option<usize>),
    Unfold(i64, usize, usize),
    Diagonal(i64, i64, i64),
    Split(usize, i64, usize),
    SplitWithSizes(Vec<usize>, i64, usize),
    Chunk(usize, i64, usize),
    Unbind(i64, usize),
    ViewDtype(DType),
    Index(Vec<TensorIndex>),
}

impl Op {
    /// Which piece of a split/chunk/unbind a chain continues with (0 for other ops).
    pub fn piece(&self) -> usize {
        match self {
            Op::Split(_, _, p)
            | Op::SplitWithSizes(_, _, p)
            | Op::Chunk(_, _, p)
            | Op::Unbind(_, p) => *p,
            _ => 0,
        }
    }
}

/// Calls `op`'s method on `t`: one tensor, or every piece of a split/chunk/unbind.
pub fn run_op(t: &Tensor, op: &Op) -> strata::Result<Vec<Tensor>> {
    let one = |r: strata::Result<Tensor>| r.map(|x| vec![x]);
    match op {
        Op::View(s) => one(t.view(s)),
        Op::Reshape(s) => one(t.reshape(s)),
        Op::Flatten(a, b) => one(t.flatten(*a, *b)),
        Op::Unflatten(d, s) => one(t.unflatten(*d, s)),
        Op::Transpose(a, b) => one(t.transpose(*a, *b)),
        Op::Permute(d) => one(t.permute(d)),
        Op::Movedim(s, d) => one(t.movedim(s, d)),
        Op::T => one(t.t()),
        Op::MT => one(t.mt()),
        Op::Narrow(d, s, l) => one(t.narrow(*d, *s, *l)),
        Op::Select(d, i) => one(t.select(*d, *i)),
        Op::Slice(d, a, b, s) => one(t.slice(*d, *a, *b, *s)),
        Op::Flip(d) => one(t.flip(d)),
        Op::Expand(s) => one(t.expand(s)),
        Op::BroadcastTo(s) => one(t.broadcast_to(s)),
        Op::Squeeze => one(t.squeeze()),
        Op::SqueezeDims(d) => one(t.squeeze_dims(d)),
        Op::Unsqueeze(d) => one(t.unsqueeze(*d)),
        Op::AsStrided(sh, st, o) => one(t.as_strided(sh, st, *o)),
        Op::Unfold(d, s, st) => one(t.unfold(*d, *s, *st)),
        Op::Diagonal(o, a, b) => one(t.diagonal(*o, *a, *b)),
        Op::Split(s, d, _) => t.split(*s, *d),
        Op::SplitWithSizes(s, d, _) => t.split_with_sizes(s, *d),
        Op::Chunk(c, d, _) => t.chunk(*c, *d),
        Op::Unbind(d, _) => t.unbind(*d),
        Op::ViewDtype(to) => one(t.view_dtype(*to)),
        Op::Index(e) => one(t.index(e)),
    }
}
