//! Property tests of advanced indexing (`Tensor::index` with index tensors and masks,
//! `Tensor::index_put_`, `Tensor::nonzero`) against an index-arithmetic model.
//!
//! The tensor under test is a random view (permuted, flipped, strided) of an `arange`
//! storage, so each element's value is its storage index. The model knows nothing of
//! strata's planning: it holds the view's elements as a flat row-major `Vec` (from the
//! view's reported offset and strides) and evaluates a key entry by entry with NumPy's
//! rules as PyTorch applies them (an int is a basic index; index tensors broadcast; their
//! dims go where the indexed dims were when those are adjacent among the indexed view's
//! dims, else first), computing each result element's source coordinates directly.

mod common;

use common::Rng;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use strata::{DType, ErrorKind, Tensor, TensorIndex};

fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut c = vec![0; shape.len()];
    for k in (0..shape.len()).rev() {
        c[k] = flat % shape[k];
        flat /= shape[k];
    }
    c
}

fn ravel(c: &[usize], shape: &[usize]) -> usize {
    c.iter().zip(shape).fold(0, |acc, (&i, &n)| acc * n + i)
}

/// A random view of a fresh `arange` storage: (the base tensor, the view).
fn random_view(rng: &mut Rng) -> (Tensor, Tensor) {
    let nd = 1 + rng.index(4);
    let shape: Vec<usize> = (0..nd)
        .map(|_| {
            if rng.chance(1, 12) {
                0
            } else {
                1 + rng.index(4)
            }
        })
        .collect();
    let n = numel(&shape) as i64;
    let base = Tensor::arange(0, n, 1, DType::I64).unwrap();
    let mut v = base
        .view(&shape.iter().map(|&s| s as i64).collect::<Vec<_>>())
        .unwrap();
    // A random permutation.
    let mut perm: Vec<i64> = (0..nd as i64).collect();
    for k in (1..nd).rev() {
        perm.swap(k, rng.index(k + 1));
    }
    v = v.permute(&perm).unwrap();
    for d in 0..nd as i64 {
        if rng.chance(1, 2) {
            v = v.flip(&[d]).unwrap();
        }
    }
    if rng.chance(1, 3) {
        let d = rng.index(nd) as i64;
        let step = if rng.chance(1, 2) { 2 } else { -2 };
        v = v.slice(d, None, None, step).unwrap();
    }
    (base, v)
}

/// The view's elements (= storage indices), row-major, by index arithmetic on its
/// reported metadata.
fn flat_of(v: &Tensor) -> Vec<i64> {
    let shape = v.shape();
    (0..numel(shape))
        .map(|f| {
            let c = unravel(f, shape);
            let mut p = v.offset() as i64;
            for (k, &ck) in c.iter().enumerate() {
                p += ck as i64 * v.strides()[k] as i64;
            }
            p
        })
        .collect()
}

/// One key entry, as the test generates it.
#[derive(Clone, Debug)]
enum Key {
    Int(i64),
    Slice(Option<i64>, Option<i64>, i64),
    NewAxis,
    Ellipsis,
    /// An integer index tensor: shape, values (row-major), dtype.
    Ints(Vec<usize>, Vec<i64>, DType),
    /// A 0-d integer tensor.
    Int0(i64),
    /// A mask: shape, values.
    Mask(Vec<usize>, Vec<bool>),
}

fn to_entry(k: &Key) -> TensorIndex {
    match k {
        Key::Int(i) => TensorIndex::Int(*i),
        Key::Slice(a, b, s) => TensorIndex::slice(*a, *b, *s),
        Key::NewAxis => TensorIndex::NewAxis,
        Key::Ellipsis => TensorIndex::Ellipsis,
        Key::Ints(shape, vals, dt) => TensorIndex::tensor(
            Tensor::from_vec(vals.clone(), shape)
                .unwrap()
                .to_dtype(*dt)
                .unwrap(),
        ),
        Key::Int0(i) => TensorIndex::tensor(Tensor::scalar(*i)),
        Key::Mask(shape, vals) => {
            TensorIndex::tensor(Tensor::from_vec(vals.clone(), shape).unwrap())
        }
    }
}

/// A random key for a tensor of `shape`: mostly valid, sometimes out of range, with a
/// mismatched mask or unbroadcastable index shapes.
fn random_key(rng: &mut Rng, shape: &[usize]) -> Vec<Key> {
    let nd = shape.len();
    // Phase 1: the entry kinds (0 int, 1 slice, 2 new axis, 3 mask of k dims, 4 index
    // tensor) and the dims they consume.
    let mut kinds: Vec<(usize, usize)> = Vec::new();
    let mut consumed = 0;
    for _ in 0..rng.index(nd + 3) {
        let kind = [0, 1, 1, 2, 3, 4, 4, 4][rng.index(8)];
        let k = match kind {
            2 => 0,
            3 if consumed + 2 <= nd && rng.chance(1, 2) => 2,
            _ => 1,
        };
        if consumed + k > nd && !rng.chance(1, 20) {
            continue;
        }
        consumed += k;
        kinds.push((kind, k));
    }
    // Phase 2: an ellipsis somewhere (rarely two).
    let mut ellipsis_at = Vec::new();
    if rng.chance(1, 2) {
        ellipsis_at.push(rng.index(kinds.len() + 1));
        if rng.chance(1, 30) {
            ellipsis_at.push(rng.index(kinds.len() + 1));
        }
    }
    // Phase 3: each entry's source dim, then its values.
    let bshape: Vec<usize> = (0..1 + rng.index(2)).map(|_| rng.index(4)).collect();
    let mut key = Vec::new();
    let mut d = 0;
    for (p, &(kind, k)) in kinds.iter().enumerate() {
        for _ in ellipsis_at.iter().filter(|&&e| e == p) {
            key.push(Key::Ellipsis);
            d += nd.saturating_sub(consumed);
        }
        let n = shape.get(d).copied().unwrap_or(1) as i64;
        let bad = rng.chance(1, 25);
        match kind {
            0 => {
                let i = if bad {
                    if rng.chance(1, 2) {
                        n
                    } else {
                        -n - 1
                    }
                } else {
                    rng.range(-n, (n - 1).max(-n))
                };
                key.push(if rng.chance(1, 4) {
                    Key::Int0(i)
                } else {
                    Key::Int(i)
                });
            }
            1 => {
                let b = |rng: &mut Rng| {
                    if rng.chance(1, 3) {
                        None
                    } else {
                        Some(rng.range(-n - 2, n + 2))
                    }
                };
                let (start, stop) = (b(rng), b(rng));
                let step = [1, 1, 2, -1, -2, 3][rng.index(6)];
                key.push(Key::Slice(start, stop, step));
            }
            2 => key.push(Key::NewAxis),
            3 => {
                let mut mshape: Vec<usize> = (d..d + k)
                    .map(|j| shape.get(j).copied().unwrap_or(1))
                    .collect();
                if bad {
                    mshape[0] += 1;
                }
                let vals = (0..numel(&mshape)).map(|_| rng.chance(1, 2)).collect();
                key.push(Key::Mask(mshape, vals));
            }
            _ => {
                // An index tensor whose shape broadcasts to `bshape` (a suffix of it
                // with some dims 1), or not when `bad`.
                let drop = rng.index(bshape.len() + 1);
                let mut ishape: Vec<usize> = bshape[drop..]
                    .iter()
                    .map(|&s| if rng.chance(1, 3) { 1 } else { s })
                    .collect();
                if bad && !ishape.is_empty() {
                    ishape[0] += 2;
                }
                if ishape.is_empty() {
                    ishape.push(1);
                }
                let vals = (0..numel(&ishape))
                    .map(|_| {
                        if bad && rng.chance(1, 2) {
                            n + rng.range(0, 2)
                        } else if n > 0 {
                            rng.range(-n, n - 1)
                        } else {
                            0
                        }
                    })
                    .collect();
                let dt = [DType::I64, DType::I64, DType::I32, DType::I16][rng.index(4)];
                key.push(Key::Ints(ishape, vals, dt));
            }
        }
        d += k;
    }
    for _ in ellipsis_at.iter().filter(|&&e| e == kinds.len()) {
        key.push(Key::Ellipsis);
    }
    key
}

/// Python's slice rule: (first, count) of `start:stop:step` over `n`.
fn py_slice(n: usize, start: Option<i64>, stop: Option<i64>, step: i64) -> (i64, usize) {
    let n = n as i64;
    let clamp = |v: i64, lo: i64, hi: i64| v.max(lo).min(hi);
    let norm = |v: i64| if v < 0 { v + n } else { v };
    let (first, last) = if step > 0 {
        (
            start.map_or(0, |s| clamp(norm(s), 0, n)),
            stop.map_or(n, |s| clamp(norm(s), 0, n)),
        )
    } else {
        (
            start.map_or(n - 1, |s| clamp(norm(s), -1, n - 1)),
            stop.map_or(-1, |s| clamp(norm(s), -1, n - 1)),
        )
    };
    let count = if step > 0 {
        if last > first {
            (last - first + step - 1) / step
        } else {
            0
        }
    } else if first > last {
        (first - last - step - 1) / -step
    } else {
        0
    };
    (first, count as usize)
}

/// One dim of the indexed view, in the model.
#[derive(Clone, Debug)]
enum ViewDim {
    /// A slice over source dim `src`: first, step, count.
    Basic(usize, i64, i64, usize),
    NewAxis,
    /// A dim of an advanced group.
    Adv,
}

/// An advanced group: the source dims it covers and its index lists (one per covered
/// dim), each of shape `shape`.
struct Group {
    src: Vec<usize>,
    shape: Vec<usize>,
    lists: Vec<Vec<i64>>,
}

/// The model's answer: the result shape and, per result element (row-major), the flat
/// position in the source view it reads. `None`: an error.
fn model(shape: &[usize], key: &[Key]) -> Option<(Vec<usize>, Vec<usize>, bool)> {
    let nd = shape.len();
    let consumed: usize = key
        .iter()
        .map(|k| match k {
            Key::Int(_) | Key::Int0(_) | Key::Slice(..) | Key::Ints(..) => 1,
            Key::Mask(s, _) => s.len(),
            _ => 0,
        })
        .sum();
    let ellipses = key.iter().filter(|k| matches!(k, Key::Ellipsis)).count();
    if ellipses > 1 || consumed > nd {
        return None;
    }
    let mut pinned = vec![0usize; nd];
    let mut dims: Vec<ViewDim> = Vec::new();
    let mut groups: Vec<Group> = Vec::new();
    let mut d = 0;
    let mut entries: Vec<Key> = key.to_vec();
    if ellipses == 0 {
        entries.push(Key::Ellipsis);
    }
    for e in &entries {
        match e {
            Key::Int(i) | Key::Int0(i) => {
                let n = shape[d] as i64;
                if *i < -n || *i >= n {
                    return None;
                }
                pinned[d] = (if *i < 0 { i + n } else { *i }) as usize;
                d += 1;
            }
            Key::Slice(a, b, s) => {
                let (first, count) = py_slice(shape[d], *a, *b, *s);
                dims.push(ViewDim::Basic(d, first, *s, count));
                d += 1;
            }
            Key::NewAxis => dims.push(ViewDim::NewAxis),
            Key::Ellipsis => {
                for _ in 0..nd - consumed {
                    dims.push(ViewDim::Basic(d, 0, 1, shape[d]));
                    d += 1;
                }
            }
            Key::Ints(s, vals, _) => {
                dims.push(ViewDim::Adv);
                groups.push(Group {
                    src: vec![d],
                    shape: s.clone(),
                    lists: vec![vals.clone()],
                });
                d += 1;
            }
            Key::Mask(s, vals) => {
                let k = s.len();
                if s[..] != shape[d..d + k] {
                    return None;
                }
                let mut lists = vec![Vec::new(); k];
                for (f, &v) in vals.iter().enumerate() {
                    if v {
                        for (m, c) in unravel(f, s).into_iter().enumerate() {
                            lists[m].push(c as i64);
                        }
                    }
                }
                let count = lists[0].len();
                dims.extend(std::iter::repeat_n(ViewDim::Adv, k));
                groups.push(Group {
                    src: (d..d + k).collect(),
                    shape: vec![count],
                    lists,
                });
                d += k;
            }
        }
    }
    let advanced = !groups.is_empty();
    // Broadcast the group shapes (right-aligned).
    let bnd = groups.iter().map(|g| g.shape.len()).max().unwrap_or(0);
    let mut bshape = vec![1usize; bnd];
    for g in &groups {
        for (k, &s) in g.shape.iter().enumerate() {
            let slot = &mut bshape[bnd - g.shape.len() + k];
            if *slot == 1 {
                *slot = s;
            } else if s != 1 && s != *slot {
                return None;
            }
        }
    }
    // Placement.
    let adv_pos: Vec<usize> = dims
        .iter()
        .enumerate()
        .filter(|(_, v)| matches!(v, ViewDim::Adv))
        .map(|(p, _)| p)
        .collect();
    let adjacent = adv_pos.windows(2).all(|w| w[1] == w[0] + 1);
    let rest: Vec<ViewDim> = dims
        .iter()
        .filter(|v| !matches!(v, ViewDim::Adv))
        .cloned()
        .collect();
    let insert_at = if advanced && adjacent { adv_pos[0] } else { 0 };
    let rest_sizes: Vec<usize> = rest
        .iter()
        .map(|v| match v {
            ViewDim::Basic(_, _, _, c) => *c,
            _ => 1,
        })
        .collect();
    let nb = if advanced { bnd } else { 0 };
    let mut out_shape = rest_sizes[..insert_at].to_vec();
    out_shape.extend(if advanced { &bshape[..] } else { &[][..] });
    out_shape.extend(&rest_sizes[insert_at..]);
    // Bounds: every index at a broadcast position.
    if advanced {
        for j in 0..numel(&bshape) {
            let b = unravel(j, &bshape);
            for g in &groups {
                let gi = bcast_pos(&b, &g.shape);
                for (m, list) in g.lists.iter().enumerate() {
                    let n = shape[g.src[m]] as i64;
                    if list[gi] < -n || list[gi] >= n {
                        return None;
                    }
                }
            }
        }
    }
    let mut reads = Vec::with_capacity(numel(&out_shape));
    for f in 0..numel(&out_shape) {
        let c = unravel(f, &out_shape);
        let b = &c[insert_at..insert_at + nb];
        let r: Vec<usize> = c[..insert_at]
            .iter()
            .chain(&c[insert_at + nb..])
            .copied()
            .collect();
        let mut src = pinned.clone();
        for (v, &rc) in rest.iter().zip(&r) {
            if let ViewDim::Basic(sd, first, step, _) = *v {
                src[sd] = (first + rc as i64 * step) as usize;
            }
        }
        for g in &groups {
            let gi = bcast_pos(b, &g.shape);
            for (m, list) in g.lists.iter().enumerate() {
                let n = shape[g.src[m]] as i64;
                let i = list[gi];
                src[g.src[m]] = (if i < 0 { i + n } else { i }) as usize;
            }
        }
        reads.push(ravel(&src, shape));
    }
    Some((out_shape, reads, advanced))
}

/// The flat position in an array of `shape` that broadcast coordinates `b` read.
fn bcast_pos(b: &[usize], shape: &[usize]) -> usize {
    let off = b.len() - shape.len();
    let c: Vec<usize> = shape
        .iter()
        .enumerate()
        .map(|(k, &s)| if s == 1 { 0 } else { b[off + k] })
        .collect();
    ravel(&c, shape)
}

fn check_index(seed: u64) -> Result<(), TestCaseError> {
    let mut rng = Rng(seed);
    let (base, v) = random_view(&mut rng);
    let key = random_key(&mut rng, v.shape());
    let entries: Vec<TensorIndex> = key.iter().map(to_entry).collect();
    let flat = flat_of(&v);
    let got = v.index(&entries);
    let want = model(v.shape(), &key);
    match (got, want) {
        (Err(e), None) => {
            prop_assert_eq!(e.kind(), ErrorKind::Index, "{:?}: {}", key, e);
        }
        (Ok(t), Some((shape, reads, advanced))) => {
            prop_assert_eq!(t.shape(), &shape[..], "{:?}", key);
            let want: Vec<i64> = reads.iter().map(|&p| flat[p]).collect();
            prop_assert_eq!(t.to_vec::<i64>().unwrap(), want, "{:?}", key);
            // Basic keys give views, advanced ones copies.
            prop_assert_eq!(t.same_storage(&base), !advanced, "{:?}", key);
        }
        (got, want) => {
            return Err(TestCaseError::fail(format!(
                "{key:?} on {:?}: strata {:?}, model {:?}",
                v.shape(),
                got.map(|t| t.shape().to_vec()),
                want.map(|w| w.0)
            )))
        }
    }
    Ok(())
}

fn check_put(seed: u64, accumulate: bool) -> Result<(), TestCaseError> {
    let mut rng = Rng(seed);
    let (base, v) = random_view(&mut rng);
    let key = random_key(&mut rng, v.shape());
    let entries: Vec<TensorIndex> = key.iter().map(to_entry).collect();
    let flat = flat_of(&v);
    let Some((shape, reads, _)) = model(v.shape(), &key) else {
        let e = v
            .index_put_(&entries, &Tensor::scalar(0i64))
            .err()
            .ok_or_else(|| TestCaseError::fail(format!("{key:?}: no error")))?;
        prop_assert_eq!(e.kind(), ErrorKind::Index, "{:?}: {}", key, e);
        return Ok(());
    };
    // A value of the result's shape, or one that broadcasts to it (dims of 1, fewer dims).
    let mut vshape: Vec<usize> = shape.clone();
    if rng.chance(1, 2) {
        let drop = rng.index(vshape.len() + 1);
        vshape.drain(..drop);
        for s in vshape.iter_mut() {
            if rng.chance(1, 3) {
                *s = 1;
            }
        }
    }
    let vals: Vec<i64> = (0..numel(&vshape))
        .map(|_| 1000 + rng.range(0, 999))
        .collect();
    let value = Tensor::from_vec(vals.clone(), &vshape).unwrap();
    let mut storage = base.to_vec::<i64>().unwrap();
    for (f, &p) in reads.iter().enumerate() {
        let c = unravel(f, &shape);
        let vi = bcast_pos(&c[..], &vshape);
        let dst = flat[p] as usize;
        if accumulate {
            storage[dst] += vals[vi];
        } else {
            storage[dst] = vals[vi];
        }
    }
    if accumulate {
        v.index_put_accumulate_(&entries, &value).unwrap();
    } else {
        v.index_put_(&entries, &value).unwrap();
    }
    prop_assert_eq!(
        base.to_vec::<i64>().unwrap(),
        storage,
        "{:?} on {:?}",
        key,
        v.shape()
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn index_matches_the_model(seed in any::<u64>()) {
        check_index(seed)?;
    }

    #[test]
    fn index_put_matches_the_model(seed in any::<u64>()) {
        check_put(seed, false)?;
    }

    #[test]
    fn index_put_accumulate_matches_the_model(seed in any::<u64>()) {
        check_put(seed, true)?;
    }

    #[test]
    fn nonzero_matches_the_model(seed in any::<u64>()) {
        let mut rng = Rng(seed);
        let (_, v) = random_view(&mut rng);
        let m = v.remainder(3i64).unwrap(); // zeros at every third storage index
        let flat: Vec<i64> = flat_of(&v).iter().map(|x| x % 3).collect();
        let mut want = Vec::new();
        let mut n = 0;
        for (f, &x) in flat.iter().enumerate() {
            if x != 0 {
                want.extend(unravel(f, v.shape()).iter().map(|&c| c as i64));
                n += 1;
            }
        }
        let nz = m.nonzero().unwrap();
        prop_assert_eq!(nz.shape(), &[n, v.ndim()][..]);
        prop_assert_eq!(nz.to_vec::<i64>().unwrap(), want);
        // The tuple form indexes the same elements back.
        let cols: Vec<TensorIndex> = m.nonzero_tuple().unwrap().into_iter().map(Into::into).collect();
        let picked = m.index(&cols).unwrap();
        prop_assert!(picked.to_vec::<i64>().unwrap().iter().all(|&x| x != 0));
        prop_assert_eq!(picked.numel(), n);
    }
}

/// The generator reaches every kind of case often enough for 256 cases to mean
/// something: successful advanced keys (with masks, with separated index tensors), basic
/// keys, and errors.
#[test]
fn the_generator_covers_the_cases() {
    let (mut adv, mut basic, mut errors, mut masks, mut separated) = (0, 0, 0, 0, 0);
    for seed in 0..256u64 {
        let mut rng = Rng(seed);
        let (_, v) = random_view(&mut rng);
        let key = random_key(&mut rng, v.shape());
        match model(v.shape(), &key) {
            None => errors += 1,
            Some((shape, _, true)) => {
                adv += 1;
                masks += usize::from(key.iter().any(|k| matches!(k, Key::Mask(..))));
                // Separated: the result does not start with the view's leading dims.
                let r = v
                    .index(&key.iter().map(to_entry).collect::<Vec<_>>())
                    .unwrap();
                assert_eq!(r.shape(), &shape[..]);
                let firsts = key
                    .iter()
                    .position(|k| matches!(k, Key::Ints(..) | Key::Mask(..)));
                let seconds = key
                    .iter()
                    .rposition(|k| matches!(k, Key::Ints(..) | Key::Mask(..)));
                separated += usize::from(
                    firsts != seconds
                        && key[firsts.unwrap()..seconds.unwrap()]
                            .iter()
                            .any(|k| matches!(k, Key::Slice(..) | Key::NewAxis)),
                );
            }
            Some(_) => basic += 1,
        }
    }
    assert!(
        adv >= 60 && basic >= 20 && errors >= 20,
        "{adv} {basic} {errors}"
    );
    assert!(masks >= 15 && separated >= 10, "{masks} {separated}");
}

// ---------------------------------------------------------------------------------------
// Examples and error texts
// ---------------------------------------------------------------------------------------

fn t(shape: &[usize]) -> Tensor {
    Tensor::arange(0, numel(shape) as i64, 1, DType::I64)
        .unwrap()
        .view(&shape.iter().map(|&s| s as i64).collect::<Vec<_>>())
        .unwrap()
}

fn ints(v: &[i64]) -> TensorIndex {
    TensorIndex::tensor(Tensor::from_slice(v, &[v.len()]).unwrap())
}

fn mask(v: &[bool], shape: &[usize]) -> TensorIndex {
    TensorIndex::tensor(Tensor::from_slice(v, shape).unwrap())
}

fn err_text(r: strata::Result<Tensor>) -> String {
    let e = r.expect_err("an error");
    assert_eq!(e.kind(), ErrorKind::Index, "{e}");
    e.to_string()
}

#[test]
fn placement_examples() {
    let x = t(&[2, 3, 4, 5]);
    let full = TensorIndex::full;
    // Separated: broadcast dims first.
    let r = x.index(&[ints(&[0, 1]), full(), ints(&[1, 2])]).unwrap();
    assert_eq!(r.shape(), &[2, 3, 5]);
    // Adjacent: in place.
    let r = x.index(&[full(), ints(&[0, 1]), ints(&[1, 2])]).unwrap();
    assert_eq!(r.shape(), &[2, 2, 5]);
    // An int between two index tensors is basic (PyTorch): still adjacent.
    let r = x
        .index(&[full(), ints(&[0, 1]), TensorIndex::Int(1), ints(&[1, 2])])
        .unwrap();
    assert_eq!(r.shape(), &[2, 2]);
    // A new axis separates.
    let r = x
        .index(&[ints(&[0, 1]), TensorIndex::NewAxis, ints(&[0, 1])])
        .unwrap();
    assert_eq!(r.shape(), &[2, 1, 4, 5]);
    // 0-d integer tensor: a basic int, a view.
    let r = x
        .index(&[TensorIndex::tensor(Tensor::scalar(1i32))])
        .unwrap();
    assert!(r.same_storage(&x));
    assert_eq!(r.shape(), &[3, 4, 5]);
}

#[test]
fn error_texts() {
    let x = t(&[2, 3]);
    let e = err_text(x.index(&[TensorIndex::full(), ints(&[0, 5])]));
    assert!(
        e.contains("index 5 is out of bounds for dimension 1 with size 3"),
        "{e}"
    );
    let e = err_text(x.index(&[ints(&[i64::MIN])]));
    assert!(
        e.contains("index -9223372036854775808 is out of bounds for dimension 0 with size 2"),
        "{e}"
    );
    let e = err_text(x.index(&[ints(&[i64::MAX])]));
    assert!(e.contains("out of bounds"), "{e}");
    let e = err_text(x.index(&[mask(&[true, false, true], &[3])]));
    assert!(
        e.contains(
            "The shape of the mask [3] at index 0 does not match the shape of the indexed tensor [2, 3]"
        ),
        "{e}"
    );
    let e = err_text(x.index(&[ints(&[0, 1]), ints(&[0, 1, 2])]));
    assert!(
        e.contains(
            "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]"
        ),
        "{e}"
    );
    let f = TensorIndex::tensor(Tensor::from_vec(vec![1.0f32], &[1]).unwrap());
    let e = err_text(x.index(&[f]));
    assert!(
        e.contains("tensors used as indices must be long, int, byte or bool tensors"),
        "{e}"
    );
    let e = err_text(x.index(&[ints(&[0]), ints(&[0]), ints(&[0])]));
    assert!(
        e.contains("too many indices for tensor of dimension 2"),
        "{e}"
    );
    // A view op refuses an index tensor (advanced indexing copies).
    let mut y = x.clone();
    let e = y
        .view_in_place(strata::ViewOp::Index(&[ints(&[0])]))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Index);
    assert!(x.layout().index(&[ints(&[0])]).is_err());
    // index_put_: out of range, bad value shape, read-only-free error kinds.
    let e = x
        .index_put_(&[ints(&[7])], &Tensor::scalar(1i64))
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("index 7 is out of bounds for dimension 0 with size 2"),
        "{e}"
    );
    let e = x
        .index_put_(&[ints(&[0, 1])], &Tensor::zeros(&[4], DType::I64).unwrap())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Shape, "{e}");
    assert_eq!(
        x.to_vec::<i64>().unwrap(),
        (0..6).collect::<Vec<_>>(),
        "unchanged on error"
    );
}

#[test]
fn index_put_into_an_expanded_view_is_refused() {
    let x = t(&[3]).expand(&[2, 3]).unwrap();
    let e = x
        .index_put_(&[ints(&[0])], &Tensor::scalar(9i64))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Overlap, "{e}");
}

#[test]
fn index_put_from_an_alias_is_staged() {
    // x[[0, 1, 2, 3]] = x.flip(0): the value is read whole before any write.
    let x = t(&[4, 3]);
    x.index_put_(&[ints(&[0, 1, 2, 3])], &x.flip(&[0]).unwrap())
        .unwrap();
    let want: Vec<i64> = (0..4)
        .rev()
        .flat_map(|r| (0..3).map(move |c| r * 3 + c))
        .collect();
    assert_eq!(x.to_vec::<i64>().unwrap(), want);
    // Through a mask, from a transposed alias of the same elements.
    let y = t(&[3, 3]);
    let m = mask(&[true; 3], &[3]);
    y.index_put_(&[m], &y.t().unwrap()).unwrap();
    assert_eq!(y.to_vec::<i64>().unwrap(), vec![0, 3, 6, 1, 4, 7, 2, 5, 8]);
}

#[test]
fn index_put_casts_the_value() {
    let x = Tensor::zeros(&[3], DType::I32).unwrap();
    x.index_put_(
        &[ints(&[2, 0])],
        &Tensor::from_vec(vec![1.7f64, -2.7], &[2]).unwrap(),
    )
    .unwrap();
    assert_eq!(x.to_vec::<i32>().unwrap(), vec![-2, 0, 1]);
}

#[test]
fn huge_expanded_masks_and_indices_are_resource_errors() {
    const HUGE: i64 = 1 << 46;
    let x = Tensor::zeros(&[4], DType::F64).unwrap();
    let v = x.narrow(0, 0, 1).unwrap().expand(&[HUGE]).unwrap();
    let m = Tensor::scalar(true).expand(&[HUGE]).unwrap();
    let e = v.index(&[m.clone().into()]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Resource, "{e}");
    assert_eq!(m.nonzero().unwrap_err().kind(), ErrorKind::Resource);
    let i = Tensor::scalar(0i64).expand(&[HUGE]).unwrap();
    let e = x.index(&[i.into()]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Resource, "{e}");
}

#[test]
fn zero_dim_boolean_masks_add_a_dim_of_one_or_zero() {
    // NumPy's and PyTorch's rule: x[True] is x[None], x[False] is x[None][:0].
    let x = Tensor::from_vec((0..6).map(|v| v as f32).collect::<Vec<_>>(), &[2, 3]).unwrap();
    let t = TensorIndex::tensor(Tensor::scalar(true));
    let f = TensorIndex::tensor(Tensor::scalar(false));
    let y = x.index(std::slice::from_ref(&t)).unwrap();
    assert_eq!(y.shape(), &[1, 2, 3]);
    assert_eq!(y.to_vec::<f32>().unwrap(), x.to_vec::<f32>().unwrap());
    assert_eq!(
        x.index(std::slice::from_ref(&f)).unwrap().shape(),
        &[0, 2, 3]
    );
    // After an int, and beside an integer index tensor (broadcast with it).
    let y = x.index(&[TensorIndex::Int(1), t.clone()]).unwrap();
    assert_eq!(
        (y.shape(), y.to_vec::<f32>().unwrap()),
        (&[1usize, 3][..], vec![3.0, 4.0, 5.0])
    );
    let y = x.index(&[ints(&[1, 0]), t.clone()]).unwrap();
    let want = vec![3.0, 4.0, 5.0, 0.0, 1.0, 2.0];
    assert_eq!(
        (y.shape(), y.to_vec::<f32>().unwrap()),
        (&[2usize, 3][..], want)
    );
    // A false mask is a length-0 index: it does not broadcast with two indices.
    assert!(x.index(&[ints(&[1, 0]), f.clone()]).is_err());
    assert_eq!(
        x.index(&[TensorIndex::Ellipsis, t.clone()])
            .unwrap()
            .shape(),
        &[2, 3, 1]
    );
    // A 0-d tensor of one element.
    let s = Tensor::scalar(7.0f64);
    assert_eq!(
        s.index(std::slice::from_ref(&t))
            .unwrap()
            .to_vec::<f64>()
            .unwrap(),
        vec![7.0]
    );
    // Writes: all of x, or nothing.
    let z = x.contiguous().unwrap();
    z.index_put_(std::slice::from_ref(&t), &Tensor::scalar(9.0f32))
        .unwrap();
    assert!(z.to_vec::<f32>().unwrap().iter().all(|&v| v == 9.0));
    let z = x.contiguous().unwrap();
    z.index_put_(std::slice::from_ref(&f), &Tensor::scalar(9.0f32))
        .unwrap();
    assert_eq!(z.to_vec::<f32>().unwrap(), x.to_vec::<f32>().unwrap());
}
