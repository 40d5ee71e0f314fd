//! Property tests of the view machinery against an independent reference model.
//!
//! The model ([`Model`]) knows nothing of strides: it is the shape plus the storage index
//! of every element in row-major order, and each view op is written from scratch as pure
//! index arithmetic (a "gather": each output coordinate names an input coordinate). The
//! tensors under test start as `arange` over their storage, so every element's value is
//! its storage index, and after every op of a random chain we compare shapes, storage
//! indices (from the reported metadata *and* from the values), storage sharing and the
//! layout predicates (`is_contiguous`, `index_range`, `internal_overlap`, `contiguous()`).
//! When strata rejects an op, the model must reject it too, and the reverse.

mod common;

use common::view_ops::{run_op, Op};
use common::{numel, ravel, unravel};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use strata::layout::overlap::Overlap;
use strata::{DType, ErrorKind, Tensor, TensorIndex, ViewOp};

// ---------------------------------------------------------------------------------------
// The reference model
// ---------------------------------------------------------------------------------------

/// Shape plus the storage index (in units of `dt`'s item size) of each element, in
/// row-major order.
#[derive(Clone, Debug, PartialEq)]
struct Model {
    shape: Vec<usize>,
    idx: Vec<i64>,
    dt: DType,
}

impl Model {
    fn arange(shape: &[usize]) -> Model {
        Model {
            shape: shape.to_vec(),
            idx: (0..numel(shape) as i64).collect(),
            dt: DType::I64,
        }
    }

    fn ndim(&self) -> usize {
        self.shape.len()
    }

    fn at(&self, c: &[usize]) -> i64 {
        self.idx[ravel(c, &self.shape)]
    }

    /// The view of `shape` whose element at `c` is this model's element at `f(c)`.
    fn gather(&self, shape: Vec<usize>, f: impl Fn(&[usize]) -> Vec<usize>) -> Model {
        let n = numel(&shape);
        let idx = (0..n).map(|k| self.at(&f(&unravel(k, &shape)))).collect();
        Model {
            shape,
            idx,
            dt: self.dt,
        }
    }

    /// The same elements in the same order under another shape.
    fn reshaped(&self, shape: Vec<usize>) -> Model {
        assert_eq!(numel(&shape), self.idx.len());
        Model {
            shape,
            idx: self.idx.clone(),
            dt: self.dt,
        }
    }

    /// PyTorch's contiguity, characterised without strides: no elements, or the elements
    /// are consecutive storage indices in row-major order.
    fn contiguous(&self) -> bool {
        self.idx.windows(2).all(|w| w[1] == w[0] + 1)
    }

    fn has_duplicates(&self) -> bool {
        let mut v = self.idx.clone();
        v.sort_unstable();
        v.windows(2).any(|w| w[0] == w[1])
    }

    /// Whether some strides (any at all) reproduce these elements under `shape`: the
    /// stride of each dim is forced by its first step, then every element is checked.
    fn viewable_as(&self, shape: &[usize]) -> bool {
        let n = numel(shape);
        if n == 0 {
            return true;
        }
        let base = self.idx[0];
        let strides: Vec<i64> = (0..shape.len())
            .map(|k| {
                if shape[k] > 1 {
                    let mut c = vec![0; shape.len()];
                    c[k] = 1;
                    self.idx[ravel(&c, shape)] - base
                } else {
                    0
                }
            })
            .collect();
        (0..n).all(|f| {
            let c = unravel(f, shape);
            let pos: i64 = base
                + c.iter()
                    .zip(&strides)
                    .map(|(&i, &s)| i as i64 * s)
                    .sum::<i64>();
            pos == self.idx[f]
        })
    }
}

/// PyTorch's dim wrapping: `[-n, n)` with `n = max(ndim, 1)`.
fn wrap(dim: i64, ndim: usize) -> Option<usize> {
    let n = ndim.max(1) as i64;
    if dim < -n || dim >= n {
        None
    } else if dim < 0 {
        Some((dim + n) as usize)
    } else {
        Some(dim as usize)
    }
}

/// `infer_size`: at most one `-1`, no other negative size, product must match.
fn infer(shape: &[i64], n: usize) -> Option<Vec<usize>> {
    let holes: Vec<usize> = (0..shape.len()).filter(|&k| shape[k] == -1).collect();
    if holes.len() > 1 || shape.iter().any(|&s| s < -1) {
        return None;
    }
    let known: usize = shape
        .iter()
        .filter(|&&s| s >= 0)
        .map(|&s| s as usize)
        .product();
    let mut out: Vec<usize> = shape.iter().map(|&s| s.max(0) as usize).collect();
    match holes.first() {
        None => (known == n).then_some(out),
        Some(&k) => {
            if known == 0 || !n.is_multiple_of(known) {
                None
            } else {
                out[k] = n / known;
                Some(out)
            }
        }
    }
}

/// The positions Python's `range(len)[start:stop:step]` selects, as (first, count),
/// following CPython's `PySlice_AdjustIndices`.
fn py_slice(len: usize, start: Option<i64>, stop: Option<i64>, step: i64) -> (i64, usize) {
    assert_ne!(step, 0);
    let len = len as i64;
    let (lo_clamp, hi_clamp) = if step > 0 { (0, len) } else { (-1, len - 1) };
    let norm = |v: i64| {
        let v = if v < 0 { v + len } else { v };
        v.clamp(lo_clamp, hi_clamp)
    };
    let first = start.map_or(if step > 0 { 0 } else { len - 1 }, norm);
    let last = stop.map_or(if step > 0 { len } else { -1 }, norm);
    let count = if step > 0 && last > first {
        (last - first + step - 1) / step
    } else if step < 0 && first > last {
        (first - last + (-step) - 1) / (-step)
    } else {
        0
    };
    (first, count as usize)
}

fn m_permute(m: &Model, perm: &[usize]) -> Model {
    let shape = perm.iter().map(|&p| m.shape[p]).collect();
    m.gather(shape, |c| {
        let mut old = vec![0; perm.len()];
        for (i, &p) in perm.iter().enumerate() {
            old[p] = c[i];
        }
        old
    })
}

fn m_select(m: &Model, d: usize, i: usize) -> Model {
    let mut shape = m.shape.clone();
    shape.remove(d);
    m.gather(shape, |c| {
        let mut old = c.to_vec();
        old.insert(d, i);
        old
    })
}

/// Elements `first, first+step, …` (`count` of them) of dim `d`.
fn m_stride_dim(m: &Model, d: usize, first: i64, count: usize, step: i64) -> Model {
    let mut shape = m.shape.clone();
    shape[d] = count;
    m.gather(shape, |c| {
        let mut old = c.to_vec();
        old[d] = (first + c[d] as i64 * step) as usize;
        old
    })
}

fn m_slice(m: &Model, d: usize, start: Option<i64>, stop: Option<i64>, step: i64) -> Model {
    let (first, count) = py_slice(m.shape[d], start, stop, step);
    m_stride_dim(m, d, first, count, step)
}

fn m_unsqueeze(m: &Model, d: usize) -> Model {
    let mut shape = m.shape.clone();
    shape.insert(d, 1);
    m.gather(shape, |c| {
        let mut old = c.to_vec();
        old.remove(d);
        old
    })
}

fn m_squeeze(m: &Model, drop: &[bool]) -> Model {
    let shape = (0..m.ndim())
        .filter(|&k| !drop[k])
        .map(|k| m.shape[k])
        .collect();
    m.gather(shape, |c| {
        let mut it = c.iter();
        drop.iter()
            .map(|&x| if x { 0 } else { *it.next().unwrap() })
            .collect()
    })
}

fn m_expand(m: &Model, sizes: &[i64]) -> Option<Model> {
    let (n, nd) = (sizes.len(), m.ndim());
    if n < nd {
        return None;
    }
    let lead = n - nd;
    let mut shape = Vec::with_capacity(n);
    for (i, &s) in sizes.iter().enumerate() {
        let existing = i.checked_sub(lead).map(|k| m.shape[k]);
        let target = match (s, existing) {
            (-1, Some(e)) => e,
            (-1, None) => return None,
            (s, _) if s < 0 => return None,
            (s, _) => s as usize,
        };
        if let Some(e) = existing {
            if e != target && e != 1 {
                return None;
            }
        }
        shape.push(target);
    }
    let old_shape = m.shape.clone();
    Some(m.gather(shape, |c| {
        (0..nd)
            .map(|k| if old_shape[k] == 1 { 0 } else { c[k + lead] })
            .collect()
    }))
}

fn m_diagonal(m: &Model, off: i64, a: usize, b: usize) -> Model {
    let (na, nb) = (m.shape[a] as i64, m.shape[b] as i64);
    let len = if off >= 0 {
        na.min(nb - off)
    } else {
        (na + off).min(nb)
    }
    .max(0) as usize;
    let mut shape: Vec<usize> = (0..m.ndim())
        .filter(|&k| k != a && k != b)
        .map(|k| m.shape[k])
        .collect();
    shape.push(len);
    let nd = m.ndim();
    m.gather(shape, |c| {
        let i = *c.last().unwrap() as i64;
        let mut rest = c[..c.len() - 1].iter();
        (0..nd)
            .map(|k| {
                if k == a {
                    (i + (-off).max(0)) as usize
                } else if k == b {
                    (i + off.max(0)) as usize
                } else {
                    *rest.next().unwrap()
                }
            })
            .collect()
    })
}

/// NumPy's basic indexing, as one gather: expand the ellipsis (or pad at the end) into
/// full slices, then walk the entries: an int pins an input coordinate, a slice makes an
/// output dim over an input dim, a new axis makes an output dim of size 1 over nothing.
fn m_index(m: &Model, entries: &[TensorIndex]) -> Option<Model> {
    let nd = m.ndim();
    let ell = entries
        .iter()
        .filter(|e| matches!(e, TensorIndex::Ellipsis))
        .count();
    let consumed = entries
        .iter()
        .filter(|e| matches!(e, TensorIndex::Int(_) | TensorIndex::Slice { .. }))
        .count();
    if ell > 1 || consumed > nd {
        return None;
    }
    let full = TensorIndex::Slice {
        start: None,
        stop: None,
        step: 1,
    };
    let mut expanded: Vec<TensorIndex> = Vec::new();
    for e in entries {
        if matches!(e, TensorIndex::Ellipsis) {
            expanded.extend(std::iter::repeat_n(full.clone(), nd - consumed));
        } else {
            expanded.push(e.clone());
        }
    }
    if ell == 0 {
        expanded.extend(std::iter::repeat_n(full, nd - consumed));
    }
    // Per output dim: None for a new axis, Some((input dim, first, step)).
    let mut out_dims: Vec<Option<(usize, i64, i64)>> = Vec::new();
    let mut shape = Vec::new();
    let mut pinned: Vec<Option<usize>> = vec![None; nd];
    let mut d = 0;
    for e in &expanded {
        match *e {
            TensorIndex::Int(i) => {
                let n = m.shape[d] as i64;
                if i < -n || i >= n {
                    return None;
                }
                pinned[d] = Some(if i < 0 { i + n } else { i } as usize);
                d += 1;
            }
            TensorIndex::Slice { start, stop, step } => {
                if step == 0 {
                    return None;
                }
                let (first, count) = py_slice(m.shape[d], start, stop, step);
                out_dims.push(Some((d, first, step)));
                shape.push(count);
                d += 1;
            }
            TensorIndex::NewAxis => {
                out_dims.push(None);
                shape.push(1);
            }
            TensorIndex::Ellipsis | TensorIndex::Tensor(_) => unreachable!(),
        }
    }
    Some(m.gather(shape, |c| {
        let mut old: Vec<usize> = pinned.iter().map(|p| p.unwrap_or(0)).collect();
        for (k, od) in out_dims.iter().enumerate() {
            if let Some((d, first, step)) = *od {
                old[d] = (first + c[k] as i64 * step) as usize;
            }
        }
        old
    }))
}

/// PyTorch's `view(dtype)` rule, applied to the metadata of `t`; the model then splits or
/// merges storage indices.
fn m_view_dtype(m: &Model, t: &Tensor, to: DType) -> Option<Model> {
    let (a, b) = (m.dt.itemsize(), to.itemsize());
    if a == b {
        return Some(Model {
            dt: to,
            ..m.clone()
        });
    }
    let nd = t.ndim();
    if nd == 0 {
        return None;
    }
    let st = t.strides();
    if st[nd - 1] != 1 {
        return None;
    }
    let mut shape = m.shape.clone();
    if b > a {
        let r = b / a;
        if !shape[nd - 1].is_multiple_of(r)
            || !t.offset().is_multiple_of(r)
            || st[..nd - 1].iter().any(|&s| s % r as isize != 0)
        {
            return None;
        }
        shape[nd - 1] /= r;
        let idx = m.idx.chunks(r).map(|g| g[0] / r as i64).collect();
        Some(Model { shape, idx, dt: to })
    } else {
        let r = a / b;
        shape[nd - 1] *= r;
        let idx = m
            .idx
            .iter()
            .flat_map(|&k| (0..r as i64).map(move |j| k * r as i64 + j))
            .collect();
        Some(Model { shape, idx, dt: to })
    }
}

// ---------------------------------------------------------------------------------------
// Ops: generated from seeds against the current shape
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct OpSeed {
    kind: u8,
    p: [i64; 6],
    list: Vec<[i64; 4]>,
}

fn op_seed() -> impl Strategy<Value = OpSeed> {
    (
        0u8..28,
        prop::array::uniform6(-9i64..=9),
        prop::collection::vec(prop::array::uniform4(-9i64..=9), 0..=5),
    )
        .prop_map(|(kind, p, list)| OpSeed { kind, p, list })
}

/// A dim for `n = max(ndim, 1)` dims: `±9` give the out-of-range `n` and `-n-1`, other
/// seeds a valid dim in `[-n, n)`.
fn dim_of(x: i64, ndim: usize) -> i64 {
    let n = ndim.max(1) as i64;
    match x {
        9 => n,
        -9 => -n - 1,
        _ => x.rem_euclid(2 * n) - n,
    }
}

/// A permutation of `0..n` ordered by the keys.
fn perm_of(n: usize, keys: impl Iterator<Item = i64>) -> Vec<i64> {
    let keys: Vec<i64> = keys.take(n).collect();
    let mut p: Vec<usize> = (0..n).collect();
    p.sort_by_key(|&k| (keys.get(k).copied().unwrap_or(0), k));
    p.into_iter().map(|k| k as i64).collect()
}

/// A shape for `view`/`reshape` of `n` elements: mostly a valid factorisation, sometimes
/// with a `-1`, sometimes broken (wrong product, `-2`, two `-1`).
fn target_shape(n: usize, p: &[i64; 6]) -> Vec<i64> {
    let mut nd = p[0].rem_euclid(5) as usize;
    if nd == 0 && n != 1 {
        nd = 1;
    }
    let mut out: Vec<i64> = Vec::new();
    if n == 0 {
        let zero_at = p[1].rem_euclid(nd as i64) as usize;
        for k in 0..nd {
            out.push(if k == zero_at {
                0
            } else {
                p[(k + 2) % 6].rem_euclid(4)
            });
        }
    } else {
        let mut rem = n;
        for k in 0..nd.saturating_sub(1) {
            let divs: Vec<usize> = (1..=rem).filter(|d| rem.is_multiple_of(*d)).collect();
            let d = divs[p[k + 1].rem_euclid(divs.len() as i64) as usize];
            out.push(d as i64);
            rem /= d;
        }
        if nd > 0 {
            out.push(rem as i64);
        }
    }
    if nd > 0 {
        let k = p[4].rem_euclid(nd as i64) as usize;
        match p[5].rem_euclid(12) {
            0..=3 => out[k] = -1,
            4 => out[k] += 1,
            5 => out[k] = -2,
            6 if nd >= 2 => {
                out[0] = -1;
                out[1] = -1;
            }
            _ => {}
        }
    }
    out
}

fn make_op(s: &OpSeed, shape: &[usize]) -> Op {
    let nd = shape.len();
    let p = &s.p;
    let size_at = |d: i64| wrap(d, nd).and_then(|k| shape.get(k).copied()).unwrap_or(1) as i64;
    match s.kind {
        0 => Op::View(target_shape(numel(shape), p)),
        1 => Op::Reshape(target_shape(numel(shape), p)),
        2 => Op::Flatten(dim_of(p[0], nd), dim_of(p[1], nd)),
        3 => {
            let d = dim_of(p[0], nd);
            let mut q = *p;
            q[0] = p[1];
            Op::Unflatten(d, target_shape(size_at(d) as usize, &q))
        }
        4 => Op::Transpose(dim_of(p[0], nd), dim_of(p[1], nd)),
        5 => {
            let mut perm = perm_of(nd, s.list.iter().map(|e| e[0]).chain(p.iter().copied()));
            match p[5].rem_euclid(10) {
                0 if nd >= 2 => perm[0] = perm[1],
                1 if nd >= 1 => {
                    perm.pop();
                }
                2 | 3 => {
                    for (k, v) in perm.iter_mut().enumerate() {
                        if p[k % 6] < 0 {
                            *v -= nd as i64;
                        }
                    }
                }
                _ => {}
            }
            Op::Permute(perm)
        }
        6 => {
            let k = p[0].rem_euclid(nd as i64 + 1) as usize;
            let mut src = perm_of(nd, p.iter().copied());
            let mut dst = perm_of(
                nd,
                s.list.iter().map(|e| e[1]).chain(p.iter().rev().copied()),
            );
            src.truncate(k);
            dst.truncate(k);
            match p[5].rem_euclid(10) {
                0 if k >= 2 => dst[1] = dst[0],
                1 if k >= 2 => src[1] = src[0],
                2 if k >= 1 => {
                    dst.pop();
                }
                3 => {
                    for v in src.iter_mut() {
                        *v -= nd as i64;
                    }
                }
                _ => {}
            }
            Op::Movedim(src, dst)
        }
        7 => Op::T,
        8 => Op::MT,
        9 => {
            let d = dim_of(p[0], nd);
            let n = size_at(d);
            // Start in [-n, n] (valid), length in [0, room + 1] (one past is invalid);
            // rarely out-of-range starts and negative lengths.
            let start = match p[3] {
                9 => n + 1,
                -9 => -n - 1,
                _ => p[1].rem_euclid(2 * n + 1) - n,
            };
            let room = n - if start < 0 { start + n } else { start };
            let len = if p[4] == 9 {
                -1
            } else {
                p[2].rem_euclid(room.max(0) + 2)
            };
            Op::Narrow(d, start, len)
        }
        10 => {
            let d = dim_of(p[0], nd);
            let n = size_at(d);
            Op::Select(d, p[1].rem_euclid(2 * n + 1) - n)
        }
        11 => {
            let opt = |v: i64| (v.rem_euclid(4) != 0).then_some(v);
            Op::Slice(
                dim_of(p[0], nd),
                opt(p[1]),
                opt(p[2]),
                p[3].rem_euclid(7) - 3,
            )
        }
        12 => {
            let mut dims: Vec<i64> = (0..nd as i64)
                .filter(|&k| (p[0].rem_euclid(64) >> k) & 1 == 1)
                .map(|k| if p[1] < 0 { k - nd as i64 } else { k })
                .collect();
            match p[5].rem_euclid(10) {
                0 if !dims.is_empty() => dims.push(dims[0]),
                1 => dims.push(nd.max(1) as i64),
                _ => {}
            }
            Op::Flip(dims)
        }
        13 | 14 => {
            let mut sizes: Vec<i64> = Vec::new();
            let lead = if nd >= 5 { 0 } else { p[5].rem_euclid(3) };
            for j in 0..lead {
                let v = s.list.get(j as usize).map_or(p[j as usize], |e| e[2]);
                sizes.push(if v == -9 { -1 } else { v.rem_euclid(4) });
            }
            for (k, &n) in shape.iter().enumerate() {
                let v = p[k % 5];
                let n = n as i64;
                sizes.push(if n == 1 {
                    match v.rem_euclid(6) {
                        5 => -1,
                        x => x.min(3),
                    }
                } else {
                    match v.rem_euclid(8) {
                        0 => -1,
                        1 => n + 1,
                        _ => n,
                    }
                });
            }
            if s.kind == 13 {
                Op::Expand(sizes)
            } else {
                Op::BroadcastTo(sizes.iter().map(|&v| v.max(0) as usize).collect())
            }
        }
        15 => Op::Squeeze,
        16 => {
            let mut dims: Vec<i64> = (0..nd as i64)
                .filter(|&k| (p[0].rem_euclid(64) >> k) & 1 == 1)
                .map(|k| if p[1] < 0 { k - nd as i64 } else { k })
                .collect();
            if p[5].rem_euclid(10) == 0 {
                dims.push(nd.max(1) as i64);
            }
            Op::SqueezeDims(dims)
        }
        17 => Op::Unsqueeze(dim_of(p[0], nd + 1)),
        18 => {
            let d = dim_of(p[0], nd);
            let n = size_at(d);
            Op::Unfold(
                d,
                p[1].rem_euclid(n + 2) as usize,
                p[2].rem_euclid(5) as usize,
            )
        }
        19 => {
            let a = dim_of(p[0], nd);
            // Mostly two different valid dims.
            let b = match wrap(a, nd) {
                Some(k) if nd >= 2 && p[5].rem_euclid(5) != 0 => {
                    let b = (k + 1 + p[1].rem_euclid(nd as i64 - 1) as usize) % nd;
                    if p[3] < 0 {
                        b as i64 - nd as i64
                    } else {
                        b as i64
                    }
                }
                _ => dim_of(p[1], nd),
            };
            Op::Diagonal(p[2].rem_euclid(7) - 3, a, b)
        }
        20 => {
            let d = dim_of(p[0], nd);
            let n = size_at(d);
            Op::Split(
                p[1].rem_euclid(n + 2) as usize,
                d,
                p[2].unsigned_abs() as usize,
            )
        }
        21 => {
            let d = dim_of(p[0], nd);
            let mut rem = size_at(d) as usize;
            let mut sizes = Vec::new();
            for e in &s.list {
                let take = (e[3].rem_euclid(3) as usize).min(rem);
                sizes.push(take);
                rem -= take;
            }
            sizes.push(rem);
            if p[5].rem_euclid(10) == 0 {
                sizes[0] += 1;
            }
            Op::SplitWithSizes(sizes, d, p[2].unsigned_abs() as usize)
        }
        22 => Op::Chunk(
            p[1].rem_euclid(5) as usize,
            dim_of(p[0], nd),
            p[2].unsigned_abs() as usize,
        ),
        23 => Op::Unbind(dim_of(p[0], nd), p[2].unsigned_abs() as usize),
        24 | 25 => Op::ViewDtype([DType::I64, DType::I32, DType::U8][p[0].rem_euclid(3) as usize]),
        _ => {
            let entries = s
                .list
                .iter()
                .map(|e| match e[0].rem_euclid(9) {
                    0..=2 => TensorIndex::Int(e[1].rem_euclid(9) - 4),
                    3..=5 => {
                        let opt = |v: i64| (v.rem_euclid(3) != 0).then_some(v.rem_euclid(13) - 6);
                        TensorIndex::Slice {
                            start: opt(e[1]),
                            stop: opt(e[2]),
                            step: e[3].rem_euclid(7) - 3,
                        }
                    }
                    6 | 7 => TensorIndex::NewAxis,
                    _ => TensorIndex::Ellipsis,
                })
                .collect();
            Op::Index(entries)
        }
    }
}

/// What the model says an op gives: its pieces (one for most ops), or `None` when the op
/// is invalid. `copies` is set for reshape/flatten when no view can express the result.
struct Expect {
    pieces: Vec<Model>,
    copies: bool,
}

fn one(m: Model) -> Option<Expect> {
    Some(Expect {
        pieces: vec![m],
        copies: false,
    })
}

fn model_op(m: &Model, t: &Tensor, op: &Op) -> Option<Expect> {
    let nd = m.ndim();
    let n = m.idx.len();
    match op {
        Op::View(shape) => {
            let s = infer(shape, n)?;
            if !m.viewable_as(&s) {
                return None;
            }
            one(m.reshaped(s))
        }
        Op::Reshape(shape) => {
            let s = infer(shape, n)?;
            let copies = !m.viewable_as(&s);
            Some(Expect {
                pieces: vec![m.reshaped(s)],
                copies,
            })
        }
        Op::Flatten(a, b) => {
            let (a, b) = (wrap(*a, nd)?, wrap(*b, nd)?);
            if a > b {
                return None;
            }
            let s: Vec<usize> = if nd == 0 {
                vec![1]
            } else {
                let mut s = m.shape[..a].to_vec();
                s.push(numel(&m.shape[a..=b]));
                s.extend_from_slice(&m.shape[b + 1..]);
                s
            };
            let copies = !m.viewable_as(&s);
            Some(Expect {
                pieces: vec![m.reshaped(s)],
                copies,
            })
        }
        Op::Unflatten(d, sizes) => {
            let d = wrap(*d, nd)?;
            if nd == 0 || sizes.is_empty() {
                return None;
            }
            let inner = infer(sizes, m.shape[d])?;
            let mut s = m.shape[..d].to_vec();
            s.extend_from_slice(&inner);
            s.extend_from_slice(&m.shape[d + 1..]);
            assert!(m.viewable_as(&s), "splitting one dim is always a view");
            one(m.reshaped(s))
        }
        Op::Transpose(a, b) => {
            let (a, b) = (wrap(*a, nd)?, wrap(*b, nd)?);
            if nd == 0 {
                return one(m.clone());
            }
            let mut perm: Vec<usize> = (0..nd).collect();
            perm.swap(a, b);
            one(m_permute(m, &perm))
        }
        Op::Permute(dims) => {
            if dims.len() != nd {
                return None;
            }
            let perm: Vec<usize> = dims.iter().map(|&d| wrap(d, nd)).collect::<Option<_>>()?;
            let mut sorted = perm.clone();
            sorted.sort_unstable();
            sorted.dedup();
            if sorted.len() != nd {
                return None;
            }
            one(m_permute(m, &perm))
        }
        Op::Movedim(src, dst) => {
            if src.len() != dst.len() {
                return None;
            }
            let wrap_all = |v: &[i64]| -> Option<Vec<usize>> {
                let w: Vec<usize> = v.iter().map(|&d| wrap(d, nd)).collect::<Option<_>>()?;
                let mut s = w.clone();
                s.sort_unstable();
                s.dedup();
                (s.len() == w.len()).then_some(w)
            };
            let (s, d) = (wrap_all(src)?, wrap_all(dst)?);
            if nd == 0 {
                return one(m.clone());
            }
            let mut perm: Vec<Option<usize>> = vec![None; nd];
            for (&si, &di) in s.iter().zip(&d) {
                perm[di] = Some(si);
            }
            let mut rest = (0..nd).filter(|k| !s.contains(k));
            let perm: Vec<usize> = perm
                .into_iter()
                .map(|p| p.unwrap_or_else(|| rest.next().unwrap()))
                .collect();
            one(m_permute(m, &perm))
        }
        Op::T => match nd {
            0 | 1 => one(m.clone()),
            2 => one(m_permute(m, &[1, 0])),
            _ => None,
        },
        Op::MT => {
            if nd < 2 {
                return None;
            }
            let mut perm: Vec<usize> = (0..nd).collect();
            perm.swap(nd - 2, nd - 1);
            one(m_permute(m, &perm))
        }
        Op::Narrow(d, start, len) => {
            if nd == 0 {
                return None;
            }
            let d = wrap(*d, nd)?;
            let size = m.shape[d] as i64;
            if *len < 0 || *start < -size || *start > size {
                return None;
            }
            let start = if *start < 0 { start + size } else { *start };
            if start + len > size {
                return None;
            }
            one(m_stride_dim(m, d, start, *len as usize, 1))
        }
        Op::Select(d, i) => {
            if nd == 0 {
                return None;
            }
            let d = wrap(*d, nd)?;
            let size = m.shape[d] as i64;
            if *i < -size || *i >= size {
                return None;
            }
            one(m_select(m, d, if *i < 0 { i + size } else { *i } as usize))
        }
        Op::Slice(d, start, stop, step) => {
            if nd == 0 || *step == 0 {
                return None;
            }
            let d = wrap(*d, nd)?;
            one(m_slice(m, d, *start, *stop, *step))
        }
        Op::Flip(dims) => {
            let ds: Vec<usize> = dims.iter().map(|&d| wrap(d, nd)).collect::<Option<_>>()?;
            let mut s = ds.clone();
            s.sort_unstable();
            s.dedup();
            if s.len() != ds.len() {
                return None;
            }
            if nd == 0 {
                return one(m.clone());
            }
            let shape = m.shape.clone();
            one(m.gather(shape.clone(), |c| {
                c.iter()
                    .enumerate()
                    .map(|(k, &i)| if ds.contains(&k) { shape[k] - 1 - i } else { i })
                    .collect()
            }))
        }
        Op::Expand(sizes) => one(m_expand(m, sizes)?),
        Op::BroadcastTo(shape) => {
            let sizes: Vec<i64> = shape.iter().map(|&v| v as i64).collect();
            one(m_expand(m, &sizes)?)
        }
        Op::Squeeze => {
            let drop: Vec<bool> = m.shape.iter().map(|&n| n == 1).collect();
            one(m_squeeze(m, &drop))
        }
        Op::SqueezeDims(dims) => {
            let ds: Vec<usize> = dims.iter().map(|&d| wrap(d, nd)).collect::<Option<_>>()?;
            let drop: Vec<bool> = (0..nd)
                .map(|k| ds.contains(&k) && m.shape[k] == 1)
                .collect();
            one(m_squeeze(m, &drop))
        }
        Op::Unsqueeze(d) => one(m_unsqueeze(m, wrap(*d, nd + 1)?)),
        Op::Unfold(d, size, step) => {
            let d = wrap(*d, nd)?;
            let len = if nd == 0 { 1 } else { m.shape[d] };
            if *size > len || *step == 0 {
                return None;
            }
            if nd == 0 {
                return one(m.gather(vec![*size], |_| vec![]));
            }
            let mut shape = m.shape.clone();
            shape[d] = (len - size) / step + 1;
            shape.push(*size);
            one(m.gather(shape, |c| {
                let mut old = c[..nd].to_vec();
                old[d] = c[d] * step + c[nd];
                old
            }))
        }
        Op::Diagonal(off, a, b) => {
            let (a, b) = (wrap(*a, nd)?, wrap(*b, nd)?);
            if nd < 2 || a == b {
                return None;
            }
            one(m_diagonal(m, *off, a, b))
        }
        Op::Split(size, d, _) => {
            if nd == 0 {
                return None;
            }
            let d = wrap(*d, nd)?;
            let len = m.shape[d];
            if *size == 0 && len != 0 {
                return None;
            }
            let sizes: Vec<usize> = if len == 0 {
                vec![0]
            } else {
                (0..len)
                    .step_by(*size)
                    .map(|s| (*size).min(len - s))
                    .collect()
            };
            pieces(m, d, &sizes)
        }
        Op::SplitWithSizes(sizes, d, _) => {
            if nd == 0 {
                return None;
            }
            let d = wrap(*d, nd)?;
            if sizes.iter().sum::<usize>() != m.shape[d] {
                return None;
            }
            pieces(m, d, sizes)
        }
        Op::Chunk(chunks, d, _) => {
            if *chunks == 0 || nd == 0 {
                return None;
            }
            let d = wrap(*d, nd)?;
            let len = m.shape[d];
            let sizes: Vec<usize> = if len == 0 {
                vec![0; *chunks]
            } else {
                let per = len.div_ceil(*chunks);
                (0..len).step_by(per).map(|s| per.min(len - s)).collect()
            };
            pieces(m, d, &sizes)
        }
        Op::Unbind(d, _) => {
            if nd == 0 {
                return None;
            }
            let d = wrap(*d, nd)?;
            Some(Expect {
                pieces: (0..m.shape[d]).map(|i| m_select(m, d, i)).collect(),
                copies: false,
            })
        }
        Op::ViewDtype(to) => one(m_view_dtype(m, t, *to)?),
        Op::Index(entries) => one(m_index(m, entries)?),
        // Not drawn here: `hostile_shapes.rs` checks as_strided against its own model.
        Op::AsStrided(..) => panic!("views_prop draws no as_strided"),
    }
}

fn pieces(m: &Model, d: usize, sizes: &[usize]) -> Option<Expect> {
    let mut start = 0;
    let mut out = Vec::new();
    for &s in sizes {
        out.push(m_stride_dim(m, d, start as i64, s, 1));
        start += s;
    }
    Some(Expect {
        pieces: out,
        copies: false,
    })
}

/// The [`ViewOp`] for `op`, when it has one.
fn as_view_op(op: &Op) -> Option<ViewOp<'_>> {
    Some(match op {
        Op::View(s) => ViewOp::View(s),
        Op::Reshape(s) => ViewOp::Reshape(s),
        Op::Transpose(a, b) => ViewOp::Transpose(*a, *b),
        Op::Permute(d) => ViewOp::Permute(d),
        Op::T => ViewOp::T,
        Op::MT => ViewOp::MT,
        Op::Narrow(d, s, l) => ViewOp::Narrow(*d, *s, *l),
        Op::Select(d, i) => ViewOp::Select(*d, *i),
        Op::Slice(d, a, b, s) => ViewOp::Slice(*d, *a, *b, *s),
        Op::Flip(d) => ViewOp::Flip(d),
        Op::Unsqueeze(d) => ViewOp::Unsqueeze(*d),
        Op::Index(e) => ViewOp::Index(e),
        _ => return None,
    })
}

/// `view_in_place` agrees with the method of the same op: the same view when it succeeds
/// (`got`), the same error text when it fails, and then the tensor is left unchanged.
fn check_in_place(
    t: &Tensor,
    op: &Op,
    got: &strata::Result<Vec<Tensor>>,
    ctx: &str,
) -> Result<(), TestCaseError> {
    let Some(vop) = as_view_op(op) else {
        return Ok(());
    };
    let mut u = t.clone();
    let layout = |x: &Tensor| (x.shape().to_vec(), x.strides().to_vec(), x.offset());
    let got_view = match (op, got) {
        // reshape copies where no view exists: in place, that is view's error.
        (Op::Reshape(_), Ok(g)) if !g[0].same_storage(t) => {
            let e = u.view_in_place(vop).unwrap_err();
            prop_assert!(e.to_string().starts_with(VIEW_TEXT), "{}; {}", e, ctx);
            prop_assert_eq!(layout(&u), layout(t), "changed by a failed op; {}", ctx);
            return Ok(());
        }
        _ => got,
    };
    match (u.view_in_place(vop), got_view) {
        (Ok(()), Ok(g)) => {
            prop_assert_eq!(layout(&u), layout(&g[0]), "in place; {}", ctx);
            prop_assert!(u.same_storage(t), "in place; {}", ctx);
        }
        (Err(e), Err(f)) => {
            prop_assert_eq!(e.to_string(), f.to_string(), "in place; {}", ctx);
            prop_assert_eq!(layout(&u), layout(t), "changed by a failed op; {}", ctx);
        }
        (r, g) => {
            return Err(err(format!(
                "in place {r:?} but the method gave {:?}; {ctx}",
                g.as_ref().map(|v| v.len())
            )))
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Comparison
// ---------------------------------------------------------------------------------------

/// The value an element at storage index `j` (in units of `dt`) holds when the storage
/// is `arange` in `i64`: a little-endian slice of the `i64` at that byte.
fn expected_value(j: i64, dt: DType) -> i64 {
    let size = dt.itemsize() as i64;
    let byte = j * size;
    let word = byte / 8;
    let shift = (byte % 8) * 8;
    let v = word >> shift;
    if size == 8 {
        v
    } else {
        v & ((1i64 << (8 * size)) - 1)
    }
}

fn values(t: &Tensor) -> strata::Result<Vec<i64>> {
    Ok(match t.dtype() {
        DType::I64 => t.to_vec::<i64>()?,
        DType::I32 => t.to_vec::<i32>()?.into_iter().map(i64::from).collect(),
        DType::U8 => t.to_vec::<u8>()?.into_iter().map(i64::from).collect(),
        other => panic!("unexpected dtype {other}"),
    })
}

/// Storage index of each element from the reported metadata, by plain arithmetic.
fn meta_indices(t: &Tensor) -> Vec<i128> {
    let shape = t.shape();
    (0..numel(shape))
        .map(|f| {
            let c = unravel(f, shape);
            t.offset() as i128
                + c.iter()
                    .zip(t.strides())
                    .map(|(&i, &s)| i as i128 * s as i128)
                    .sum::<i128>()
        })
        .collect()
}

const VIEW_TEXT: &str = "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.";

fn err(msg: String) -> TestCaseError {
    TestCaseError::fail(msg)
}

/// Everything we know about a view, checked against the model.
fn check(t: &Tensor, m: &Model, base: &Tensor, ctx: &str) -> Result<(), TestCaseError> {
    prop_assert_eq!(t.shape(), &m.shape[..], "shape; {}", ctx);
    prop_assert_eq!(t.dtype(), m.dt, "dtype; {}", ctx);
    prop_assert_eq!(t.numel(), m.idx.len(), "numel; {}", ctx);
    prop_assert!(t.same_storage(base), "storage not shared; {}", ctx);
    prop_assert!(
        t.offset() <= isize::MAX as usize,
        "offset {} beyond isize::MAX; {:?}; {}",
        t.offset(),
        t,
        ctx
    );
    let meta = meta_indices(t);
    let want: Vec<i128> = m.idx.iter().map(|&i| i as i128).collect();
    prop_assert_eq!(
        &meta,
        &want,
        "storage indices from metadata {:?}; {}",
        t,
        ctx
    );
    let vals = values(t).map_err(|e| err(format!("to_vec failed: {e}; {ctx}")))?;
    let want_vals: Vec<i64> = m.idx.iter().map(|&j| expected_value(j, m.dt)).collect();
    prop_assert_eq!(&vals, &want_vals, "values; {:?}; {}", t, ctx);

    // Predicates.
    prop_assert_eq!(
        t.is_contiguous(),
        m.contiguous(),
        "is_contiguous {:?}; {}",
        t,
        ctx
    );
    let range = m
        .idx
        .iter()
        .min()
        .zip(m.idx.iter().max())
        .map(|(&lo, &hi)| (lo as usize, hi as usize));
    prop_assert_eq!(
        t.layout().index_range(),
        range,
        "index_range {:?}; {}",
        t,
        ctx
    );
    let dup = m.has_duplicates();
    match t.layout().internal_overlap() {
        Overlap::No => prop_assert!(!dup, "internal_overlap says No {:?}; {}", t, ctx),
        Overlap::Yes => prop_assert!(dup, "internal_overlap says Yes {:?}; {}", t, ctx),
        Overlap::Maybe => {}
    }

    // contiguous(): same values; the same storage exactly when already contiguous.
    let c = t
        .contiguous()
        .map_err(|e| err(format!("contiguous failed: {e}; {ctx}")))?;
    prop_assert_eq!(c.shape(), t.shape(), "contiguous shape; {}", ctx);
    prop_assert!(c.is_contiguous(), "contiguous() not contiguous; {}", ctx);
    prop_assert_eq!(
        values(&c).map_err(|e| err(e.to_string()))?,
        want_vals,
        "contiguous values; {}",
        ctx
    );
    prop_assert_eq!(
        c.same_storage(t),
        m.contiguous(),
        "contiguous() shares storage iff contiguous; {}",
        ctx
    );
    Ok(())
}

fn run_chain(
    start: Tensor,
    m: Model,
    base: &Tensor,
    seeds: &[OpSeed],
) -> Result<(), TestCaseError> {
    run_ops(start, m, base, seeds.len(), |t, k| {
        make_op(&seeds[k], t.shape())
    })
}

/// Applies `steps` ops (each made from the current tensor) to strata and to the model,
/// checking after each one.
fn run_ops(
    start: Tensor,
    mut m: Model,
    base: &Tensor,
    steps: usize,
    mut make: impl FnMut(&Tensor, usize) -> Op,
) -> Result<(), TestCaseError> {
    let mut t = start;
    let mut ctx = format!("start {t:?}");
    check(&t, &m, base, &ctx)?;
    for step in 0..steps {
        let op = make(&t, step);
        ctx.push_str(&format!(" -> {op:?}"));
        let got = run_op(&t, &op);
        check_in_place(&t, &op, &got, &ctx)?;
        let want = model_op(&m, &t, &op);
        let (got, want) = match (got, want) {
            (Err(e), None) => {
                // A valid shape that no strides can express: view says to use reshape,
                // and reshape gives the values as a copy.
                if let Op::View(shape) = &op {
                    if let Some(s) = infer(shape, m.idx.len()) {
                        prop_assert!(e.to_string().starts_with(VIEW_TEXT), "{}; {}", e, ctx);
                        let r = t
                            .reshape(shape)
                            .map_err(|e| err(format!("reshape failed: {e}; {ctx}")))?;
                        prop_assert_eq!(r.shape(), &s[..], "{}", ctx);
                        prop_assert!(!r.same_storage(&t), "{}", ctx);
                        let want: Vec<i64> =
                            m.idx.iter().map(|&j| expected_value(j, m.dt)).collect();
                        prop_assert_eq!(
                            values(&r).map_err(|e| err(e.to_string()))?,
                            want,
                            "{}",
                            ctx
                        );
                    }
                }
                continue;
            }
            (Ok(g), None) => {
                return Err(err(format!(
                    "strata accepted an op the model rejects: got {g:?}; {ctx}"
                )))
            }
            (Err(e), Some(_)) => {
                return Err(err(format!(
                    "strata rejected an op the model accepts: {e} (kind {:?}); {ctx}",
                    e.kind()
                )))
            }
            (Ok(g), Some(w)) => (g, w),
        };
        prop_assert_eq!(got.len(), want.pieces.len(), "number of pieces; {}", ctx);
        if want.copies {
            // reshape/flatten that cannot be a view: a compact copy of the right values.
            let r = &got[0];
            let w = &want.pieces[0];
            prop_assert_eq!(r.shape(), &w.shape[..], "{}", ctx);
            prop_assert!(!r.same_storage(&t), "should copy; {}", ctx);
            prop_assert!(r.is_contiguous(), "{}", ctx);
            let want_vals: Vec<i64> = w.idx.iter().map(|&j| expected_value(j, w.dt)).collect();
            prop_assert_eq!(
                values(r).map_err(|e| err(e.to_string()))?,
                want_vals,
                "{}",
                ctx
            );
            continue;
        }
        for (g, w) in got.iter().zip(&want.pieces) {
            check(g, w, base, &ctx)?;
        }
        if !got.is_empty() {
            let k = op.piece() % got.len();
            t = got[k].clone();
            m = want.pieces[k].clone();
        }
    }
    Ok(())
}

/// An `as_strided` start: shape, strides (negative and zero included) and an offset over
/// an `arange` storage of `len` elements. `fit` picks an offset that fits when one does.
#[derive(Debug, Clone)]
struct Strided {
    len: usize,
    dims: Vec<(usize, isize)>,
    offset_seed: usize,
    fit: bool,
}

fn strided(max_size: usize, max_stride: isize) -> impl Strategy<Value = Strided> {
    (
        1usize..=96,
        prop::collection::vec((0..=max_size, -max_stride..=max_stride), 0..=4),
        any::<usize>(),
        prop::bool::weighted(0.85),
    )
        .prop_map(|(len, dims, offset_seed, fit)| Strided {
            len,
            dims,
            offset_seed,
            fit,
        })
}

/// Builds the view; returns `Ok(None)` when the model says it must be refused (and it
/// was), or the view with its model.
fn build_strided(s: &Strided) -> Result<Option<(Tensor, Model, Tensor)>, TestCaseError> {
    let base = Tensor::arange(0, s.len as i64, 1, DType::I64).unwrap();
    let shape: Vec<usize> = s.dims.iter().map(|d| d.0).collect();
    let strides: Vec<isize> = s.dims.iter().map(|d| d.1).collect();
    let n = numel(&shape);
    let lo: i64 = s
        .dims
        .iter()
        .map(|&(k, st)| {
            if st < 0 && k > 0 {
                (k as i64 - 1) * st as i64
            } else {
                0
            }
        })
        .sum();
    let hi: i64 = s
        .dims
        .iter()
        .map(|&(k, st)| {
            if st > 0 && k > 0 {
                (k as i64 - 1) * st as i64
            } else {
                0
            }
        })
        .sum();
    let (min_off, max_off) = (-lo, s.len as i64 - 1 - hi);
    let offset = if s.fit && n > 0 && min_off <= max_off {
        min_off as usize + s.offset_seed % (max_off - min_off + 1) as usize
    } else {
        s.offset_seed % (s.len + 8)
    };
    let valid = n == 0 || (offset as i64 >= min_off && offset as i64 <= max_off);
    let got = base.as_strided(&shape, &strides, Some(offset));
    match (got, valid) {
        (Err(e), false) => {
            prop_assert_eq!(e.kind(), ErrorKind::Shape, "{}", e);
            Ok(None)
        }
        (Ok(t), true) => {
            let idx = (0..n)
                .map(|f| {
                    let c = unravel(f, &shape);
                    offset as i64
                        + c.iter()
                            .zip(&strides)
                            .map(|(&i, &st)| i as i64 * st as i64)
                            .sum::<i64>()
                })
                .collect();
            let m = Model {
                shape,
                idx,
                dt: DType::I64,
            };
            Ok(Some((t, m, base)))
        }
        (Ok(t), false) => Err(err(format!(
            "as_strided accepted an out-of-bounds view {t:?}"
        ))),
        (Err(e), true) => Err(err(format!(
            "as_strided refused a valid view: {e}; {s:?} offset {offset}"
        ))),
    }
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(512))]

    /// Random chains of view ops from `arange(n).view(shape)`.
    #[test]
    fn chains_from_arange(
        shape in prop::collection::vec(0usize..=5, 0..=4),
        seeds in prop::collection::vec(op_seed(), 1..=6),
    ) {
        let n = numel(&shape);
        let base = Tensor::arange(0, n as i64, 1, DType::I64).unwrap();
        let dims: Vec<i64> = shape.iter().map(|&k| k as i64).collect();
        let t = base.view(&dims).unwrap();
        run_chain(t, Model::arange(&shape), &base, &seeds)?;
    }

    /// Random chains of view ops from random `as_strided` views (negative and zero
    /// strides, offsets) over a bigger storage; out-of-bounds views must be refused.
    #[test]
    fn chains_from_as_strided(
        s in strided(4, 6),
        seeds in prop::collection::vec(op_seed(), 1..=6),
    ) {
        if let Some((t, m, base)) = build_strided(&s)? {
            run_chain(t, m, &base, &seeds)?;
        }
    }
}

proptest! {
    #![proptest_config(config(384))]

    /// The layout predicates on arbitrary strides (overlapping ones included).
    #[test]
    fn predicates_on_arbitrary_strides(s in strided(4, 7)) {
        if let Some((t, m, base)) = build_strided(&s)? {
            check(&t, &m, &base, &format!("{s:?}"))?;
        }
    }

    /// `reshape` always gives the right values, and shares storage exactly when `view`
    /// succeeds, which is exactly when some strides can express the new shape.
    #[test]
    fn reshape_shares_storage_exactly_when_view_succeeds(
        s in strided(4, 5),
        p in prop::array::uniform6(-9i64..=9),
    ) {
        if let Some((t, m, _)) = build_strided(&s)? {
            let target = target_shape(m.idx.len(), &p);
            let ctx = format!("{t:?} reshape {target:?}");
            let r = t.reshape(&target);
            let v = t.view(&target);
            match infer(&target, m.idx.len()) {
                None => {
                    prop_assert!(r.is_err(), "reshape accepted a bad shape; {}", ctx);
                    prop_assert!(v.is_err(), "view accepted a bad shape; {}", ctx);
                    let (re, ve) = (r.unwrap_err(), v.unwrap_err());
                    prop_assert_eq!(re.kind(), ErrorKind::Shape, "{}", re);
                    prop_assert_eq!(ve.kind(), ErrorKind::Shape, "{}", ve);
                }
                Some(shape) => {
                    let r = r.map_err(|e| err(format!("reshape failed: {e}; {ctx}")))?;
                    prop_assert_eq!(r.shape(), &shape[..], "{}", ctx);
                    prop_assert_eq!(values(&r).map_err(|e| err(e.to_string()))?, m.idx.clone(), "{}", ctx);
                    let viewable = m.viewable_as(&shape);
                    prop_assert_eq!(v.is_ok(), viewable, "view success vs model; {}", ctx);
                    prop_assert_eq!(r.same_storage(&t), viewable, "reshape sharing; {}", ctx);
                    if let Ok(v) = v {
                        prop_assert_eq!(meta_indices(&v), meta_indices(&r), "{}", ctx);
                        prop_assert_eq!(v.offset(), t.offset(), "{}", ctx);
                    } else {
                        let e = v.unwrap_err();
                        prop_assert!(e.to_string().starts_with(VIEW_TEXT), "{}", e);
                    }
                }
            }
        }
    }

    /// `fill_` succeeds exactly when no two elements share memory, and then writes exactly
    /// the view's elements; on a refused write the storage is untouched.
    #[test]
    fn fill_writes_exactly_the_view(s in strided(4, 5)) {
        if let Some((t, m, base)) = build_strided(&s)? {
            let before = base.to_vec::<i64>().unwrap();
            let v0 = base.version();
            let r = t.fill_(-1);
            let after = base.to_vec::<i64>().unwrap();
            if m.has_duplicates() {
                let e = r.err().ok_or_else(|| err(format!("fill_ on self-overlapping {t:?}")))?;
                prop_assert_eq!(e.kind(), ErrorKind::Overlap);
                prop_assert_eq!(&after, &before);
                prop_assert_eq!(base.version(), v0);
            } else {
                r.map_err(|e| err(format!("fill_ refused {t:?}: {e}")))?;
                let mut want = before.clone();
                for &j in &m.idx {
                    want[j as usize] = -1;
                }
                prop_assert_eq!(&after, &want);
                prop_assert_eq!(base.version(), v0 + 1);
            }
        }
    }

    /// `copy_` between two views of one storage acts as if the source were read
    /// completely before the first write.
    #[test]
    fn copy_within_one_storage_reads_source_first(
        d in strided(4, 4),
        s_seed in prop::collection::vec(-6isize..=6, 4),
        s_off in any::<usize>(),
    ) {
        if let Some((dst, dm, base)) = build_strided(&d)? {
            // A source of the same shape with other strides over the same storage.
            let strides: Vec<isize> = (0..dst.ndim()).map(|k| s_seed[k]).collect();
            let n = base.numel() as i64;
            let lo: i64 = dst.shape().iter().zip(&strides).map(|(&k, &st)| if st < 0 && k > 0 { (k as i64 - 1) * st as i64 } else { 0 }).sum();
            let hi: i64 = dst.shape().iter().zip(&strides).map(|(&k, &st)| if st > 0 && k > 0 { (k as i64 - 1) * st as i64 } else { 0 }).sum();
            prop_assume!(-lo <= n - 1 - hi);
            let off = (-lo + (s_off % (n - hi + lo) as usize) as i64) as usize;
            let src = base.as_strided(dst.shape(), &strides, Some(off)).unwrap();
            let src_vals = src.to_vec::<i64>().unwrap();
            let before = base.to_vec::<i64>().unwrap();
            let r = dst.copy_(&src);
            let after = base.to_vec::<i64>().unwrap();
            if dm.has_duplicates() {
                prop_assert!(r.is_err());
                prop_assert_eq!(after, before);
            } else {
                r.map_err(|e| err(format!("copy_ refused: {e}")))?;
                let mut want = before;
                for (&j, &v) in dm.idx.iter().zip(&src_vals) {
                    want[j as usize] = v;
                }
                prop_assert_eq!(after, want, "dst {:?} src {:?}", dst, src);
            }
        }
    }
}

proptest! {
    #![proptest_config(config(512))]

    /// `view(dtype)` to a smaller type, a slice of the (now longer) last dim, then views
    /// to every type: PyTorch's rule (stride, size and offset divisibility) decides.
    #[test]
    fn view_dtype_after_slicing_the_last_dim(
        shape in prop::collection::vec(1usize..=4, 1..=3),
        first in prop::sample::select(vec![DType::I32, DType::U8]),
        start in 0i64..10,
        len in 0i64..12,
        step in 1i64..=3,
        then in prop::sample::select(vec![DType::I64, DType::I32, DType::U8]),
    ) {
        let n = numel(&shape);
        let base = Tensor::arange(0, n as i64, 1, DType::I64).unwrap();
        let dims: Vec<i64> = shape.iter().map(|&k| k as i64).collect();
        let t = base.view(&dims).unwrap();
        let ops = [
            Op::ViewDtype(first),
            Op::Slice(-1, Some(start), Some(start + len), step),
            Op::ViewDtype(then),
            Op::ViewDtype(DType::I64),
        ];
        run_ops(t, Model::arange(&shape), &base, ops.len(), |_, k| ops[k].clone())?;
    }
}

// ---------------------------------------------------------------------------------------
// The model itself, against hand-checked Python results
// ---------------------------------------------------------------------------------------

fn py(len: usize, start: Option<i64>, stop: Option<i64>, step: i64) -> Vec<i64> {
    let (first, count) = py_slice(len, start, stop, step);
    (0..count as i64).map(|k| first + k * step).collect()
}

#[test]
fn model_slices_match_python() {
    // list(range(5))[...]
    assert_eq!(py(5, None, None, -1), vec![4, 3, 2, 1, 0]);
    assert_eq!(py(5, Some(10), Some(-10), -2), vec![4, 2, 0]);
    assert_eq!(py(5, Some(-2), None, 1), vec![3, 4]);
    assert_eq!(py(5, Some(3), Some(1), 1), Vec::<i64>::new());
    assert_eq!(py(5, Some(-10), Some(2), 1), vec![0, 1]);
    assert_eq!(py(5, Some(1), Some(-10), -1), vec![1, 0]);
    assert_eq!(py(5, None, None, -3), vec![4, 1]);
    assert_eq!(py(5, Some(-1), Some(-3), -1), vec![4, 3]);
    assert_eq!(py(5, None, Some(-1), 2), vec![0, 2]);
    assert_eq!(py(0, None, None, -1), Vec::<i64>::new());
    assert_eq!(py(5, Some(7), None, -1), vec![4, 3, 2, 1, 0]);
}

#[test]
fn model_view_rule_examples() {
    // arange(48).view(2,3,8)[:,:,::2] can be viewed as (6,4) and even (24,) (stride 2),
    // but [:,:,:4] only as (6,4), not (24,).
    let m = m_slice(&Model::arange(&[2, 3, 8]), 2, None, None, 2);
    assert!(m.viewable_as(&[6, 4]));
    assert!(m.viewable_as(&[24]));
    let m = m_slice(&Model::arange(&[2, 3, 8]), 2, None, Some(4), 1);
    assert!(m.viewable_as(&[6, 4]));
    assert!(!m.viewable_as(&[24]));
    assert!(!m.viewable_as(&[3, 8]));
    let t = m_permute(&Model::arange(&[3, 4]), &[1, 0]);
    assert!(!t.viewable_as(&[12]));
    assert!(t.viewable_as(&[4, 3, 1]));
    assert!(!t.contiguous());
    assert!(Model::arange(&[3, 4]).contiguous());
    assert_eq!(infer(&[2, -1], 6), Some(vec![2, 3]));
    assert_eq!(infer(&[-1, -1], 6), None);
    assert_eq!(infer(&[0, -1], 0), None);
    assert_eq!(infer(&[5, 5], 24), None);
}

// ---------------------------------------------------------------------------------------
// Regression tests for src bugs these properties found.
// ---------------------------------------------------------------------------------------

#[test]
fn movedim_on_0d_tensor() {
    let x = Tensor::scalar(3i64);
    let r = std::panic::catch_unwind(|| x.movedim(&[0], &[0]).map(|t| t.shape().to_vec()));
    assert!(matches!(r, Ok(Ok(ref s)) if s.is_empty()), "{r:?}");
}

#[test]
fn empty_expanded_view_is_not_overlapping() {
    let x = Tensor::zeros(&[0], DType::I64).unwrap();
    let e = x.expand(&[3, 0]).unwrap();
    assert_eq!(e.layout().internal_overlap(), Overlap::No);
    e.fill_(1).unwrap();
    e.copy_(&Tensor::zeros(&[3, 0], DType::I64).unwrap())
        .unwrap();
}

#[test]
fn offset_moving_ops_on_empty_views_keep_offset_in_range() {
    let base = Tensor::arange(0, 10, 1, DType::I64).unwrap();
    let e = base.as_strided(&[3, 0], &[-3, 1], Some(0)).unwrap();
    let results = [
        e.flip(&[0]),
        e.select(0, 2),
        e.slice(0, Some(1), None, 1),
        e.narrow(0, 2, 1),
        e.index(&[TensorIndex::Int(2)]),
    ];
    for r in results {
        let v = r.unwrap();
        assert!(v.offset() <= isize::MAX as usize, "{v:?}");
        let _ = v.data_ptr();
    }
}
