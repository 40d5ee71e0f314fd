//! The fast paths of the arg-reductions, gathers and masks against an index-arithmetic
//! model: random views (any order of dims, negative and zero strides, offsets) of random
//! storages, every element size (1, 2, 4, 8 bytes), lengths at the block edges, and
//! repeated, negative and out-of-range indices.
//!
//! The model reads a view's elements straight from its storage's values by
//! `offset + Σ coord·stride`, and evaluates each op by its definition (a sequential scan
//! for the arg-reductions, NaN winning and the first index on ties; element positions
//! for the gathers). `every_cpu_level` reruns this whole binary with `STRATA_CPU` capped
//! at each level below the one the machine has, so each dispatched copy is checked.

mod common;

use common::Rng;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use strata::kernel::cpu::detected;
use strata::{DType, ErrorKind, Tensor, TensorIndex};

/// Lengths around the vector widths and blocks of the kernels.
const EDGES: [usize; 14] = [1, 2, 7, 8, 31, 32, 33, 63, 64, 65, 511, 512, 513, 1025];

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

/// A view and the model of it: its storage's values (as `i64`, or `f64` for floats),
/// offset and strides.
struct View {
    t: Tensor,
    vals: Vec<f64>,
    offset: usize,
    strides: Vec<isize>,
}

impl View {
    fn shape(&self) -> &[usize] {
        self.t.shape()
    }
    /// The model's value at `coords`.
    fn at(&self, coords: &[usize]) -> f64 {
        let p = coords
            .iter()
            .zip(&self.strides)
            .fold(self.offset as isize, |a, (&c, &s)| a + c as isize * s);
        self.vals[p as usize]
    }
    /// Every element, row-major, by the model.
    fn elements(&self) -> Vec<f64> {
        (0..numel(self.shape()))
            .map(|f| self.at(&unravel(f, self.shape())))
            .collect()
    }
}

const DTYPES: [DType; 8] = [
    DType::U8,
    DType::I8,
    DType::I16,
    DType::F16,
    DType::I32,
    DType::F32,
    DType::I64,
    DType::F64,
];

/// A random view of `shape` in `dt` over a fresh storage of random values: dims in a
/// random order, strides spaced 1 or 2 apart, random signs; with `zeros`, a dim may get
/// stride 0 (the view then aliases, so it is only read).
fn random_view(rng: &mut Rng, shape: &[usize], dt: DType, zeros: bool, nan: bool) -> View {
    let nd = shape.len();
    let mut order: Vec<usize> = (0..nd).collect();
    for k in (1..nd).rev() {
        order.swap(k, rng.index(k + 1));
    }
    let mut strides = vec![0isize; nd];
    let mut span: isize = 1;
    for &k in order.iter().rev() {
        let gap = if rng.chance(1, 3) { 2 } else { 1 };
        let s = span * gap;
        strides[k] = if rng.chance(1, 3) { -s } else { s };
        span = s * shape[k].max(1) as isize;
        if zeros && rng.chance(1, 8) {
            strides[k] = 0;
        }
    }
    let offset: isize = shape
        .iter()
        .zip(&strides)
        .filter(|(_, &s)| s < 0)
        .map(|(&n, &s)| (n.max(1) as isize - 1) * -s)
        .sum();
    let hi: isize = shape
        .iter()
        .zip(&strides)
        .filter(|(_, &s)| s > 0)
        .map(|(&n, &s)| (n.max(1) as isize - 1) * s)
        .sum();
    let len = (offset + hi + 1 + rng.index(3) as isize) as usize;
    // Few distinct values, so ties are common.
    let spread = 1 + rng.index(40) as i64;
    let mut vals: Vec<f64> = (0..len)
        .map(|_| rng.range(-spread, spread) as f64)
        .collect();
    let float = matches!(dt, DType::F16 | DType::F32 | DType::F64);
    if float && nan {
        for v in vals.iter_mut() {
            match rng.index(60) {
                0 => *v = f64::NAN,
                1 => *v = f64::INFINITY,
                2 => *v = f64::NEG_INFINITY,
                3 => *v = -0.0,
                _ => {}
            }
        }
    }
    if !float {
        // Within every integer dtype's range.
        for v in vals.iter_mut() {
            *v = v.clamp(-100.0, 100.0);
            if dt == DType::U8 {
                *v = v.abs();
            }
        }
    }
    let base = Tensor::from_vec(vals.clone(), &[len])
        .unwrap()
        .to_dtype(dt)
        .unwrap();
    let t = base
        .as_strided(shape, &strides, Some(offset as usize))
        .unwrap();
    View {
        t,
        vals,
        offset: offset as usize,
        strides,
    }
}

fn random_shape(rng: &mut Rng, max_nd: usize) -> Vec<usize> {
    let nd = 1 + rng.index(max_nd);
    (0..nd)
        .map(|_| {
            if rng.chance(1, 4) {
                EDGES[rng.index(EDGES.len())].min(1100 / nd.pow(2))
            } else {
                rng.index(7)
            }
        })
        .collect()
}

/// A tensor's values as `f64` (through strata's own cast; identity for the values the
/// views hold, which every dtype represents exactly).
fn values(t: &Tensor) -> Vec<f64> {
    t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()
}

fn ints(t: &Tensor) -> Vec<i64> {
    t.to_vec::<i64>().unwrap()
}

fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan())
        || (a == b && a.is_sign_negative() == b.is_sign_negative())
        || (a == 0.0 && b == 0.0)
}

/// The sequential arg-scan: NaN wins (its first occurrence), ties keep the first.
fn model_arg(xs: &[f64], max: bool) -> (f64, usize) {
    let (mut best, mut bi) = (xs[0], 0);
    for (i, &x) in xs.iter().enumerate().skip(1) {
        if best.is_nan() {
            break;
        }
        if x.is_nan() || (max && x > best) || (!max && x < best) {
            best = x;
            bi = i;
        }
    }
    (best, bi)
}

/// Checks `max_dim`/`min_dim`/`argmax`/`argmin` along every dim and over all elements.
fn check_args(v: &View) -> Result<(), TestCaseError> {
    let shape = v.shape().to_vec();
    let nd = shape.len();
    let all = v.elements();
    for max in [true, false] {
        if !all.is_empty() {
            let got = if max {
                v.t.argmax(None, false)
            } else {
                v.t.argmin(None, false)
            };
            let want = model_arg(&all, max).1;
            prop_assert_eq!(ints(&got.unwrap()), vec![want as i64], "all, max={}", max);
        }
        for d in 0..nd {
            if shape[d] == 0 {
                continue;
            }
            let got = if max {
                v.t.max_dim(d as i64, false)
            } else {
                v.t.min_dim(d as i64, false)
            };
            let (vals, idx) = got.unwrap();
            let (vals, idx) = (values(&vals), ints(&idx));
            let mut out_shape = shape.clone();
            out_shape.remove(d);
            prop_assert_eq!(vals.len(), numel(&out_shape));
            for o in 0..numel(&out_shape) {
                let mut c = unravel(o, &out_shape);
                c.insert(d, 0);
                let run: Vec<f64> = (0..shape[d])
                    .map(|i| {
                        c[d] = i;
                        v.at(&c)
                    })
                    .collect();
                let (wv, wi) = model_arg(&run, max);
                prop_assert!(same(vals[o], wv), "dim {d} out {o}: {} vs {wv}", vals[o]);
                prop_assert_eq!(idx[o], wi as i64, "dim {} out {} max={}", d, o, max);
            }
        }
    }
    Ok(())
}

/// Random indices for a dim of `size`: in range, negative, repeated.
fn random_indices(rng: &mut Rng, n: usize, size: usize) -> Vec<i64> {
    let s = size as i64;
    (0..n).map(|_| rng.range(-s, s - 1)).collect()
}

fn wrap(i: i64, size: usize) -> usize {
    if i < 0 {
        (i + size as i64) as usize
    } else {
        i as usize
    }
}

fn index_tensor(ix: &[i64]) -> Tensor {
    Tensor::from_vec(ix.to_vec(), &[ix.len()]).unwrap()
}

/// `x[idx]`, `index_select`, `take` and `gather` against the model.
fn check_gathers(rng: &mut Rng, v: &View) -> Result<(), TestCaseError> {
    let shape = v.shape().to_vec();
    let nd = shape.len();
    let all = v.elements();
    // x[idx] along dim 0 and index_select along every dim.
    for d in 0..nd {
        if shape[d] == 0 {
            continue;
        }
        let k = if rng.chance(1, 3) {
            EDGES[rng.index(EDGES.len())]
        } else {
            rng.index(9)
        };
        let ix = random_indices(rng, k, shape[d]);
        let got = values(&v.t.index_select(d as i64, &ix).unwrap());
        let mut out_shape = shape.clone();
        out_shape[d] = k;
        let want: Vec<f64> = (0..numel(&out_shape))
            .map(|o| {
                let mut c = unravel(o, &out_shape);
                c[d] = wrap(ix[c[d]], shape[d]);
                v.at(&c)
            })
            .collect();
        prop_assert_eq!(got.len(), want.len());
        for (a, b) in got.iter().zip(&want) {
            prop_assert!(same(*a, *b), "index_select dim {d}: {a} vs {b}");
        }
        if d == 0 {
            let got = values(
                &v.t.index(&[TensorIndex::tensor(index_tensor(&ix))])
                    .unwrap(),
            );
            prop_assert_eq!(got.len(), want.len());
            for (a, b) in got.iter().zip(&want) {
                prop_assert!(same(*a, *b), "x[idx]: {a} vs {b}");
            }
        }
        // Out of range: the op, the value, the dim and the size in the error.
        let bad = if rng.chance(1, 2) {
            shape[d] as i64
        } else {
            -(shape[d] as i64) - 1
        };
        let mut ix2 = ix.clone();
        ix2.insert(rng.index(ix.len() + 1), bad);
        let e = v.t.index_select(d as i64, &ix2).unwrap_err();
        prop_assert_eq!(e.kind(), ErrorKind::Index);
        let text = format!(
            "index {bad} is out of bounds for dimension {d} with size {}",
            shape[d]
        );
        prop_assert!(e.to_string().contains(&text), "{e}");
    }
    // take: flat positions.
    if !all.is_empty() {
        let k = rng.index(70);
        let ix = random_indices(rng, k, all.len());
        let got = values(&v.t.take(&index_tensor(&ix)).unwrap());
        let want: Vec<f64> = ix.iter().map(|&i| all[wrap(i, all.len())]).collect();
        prop_assert_eq!(got.len(), want.len());
        for (a, b) in got.iter().zip(&want) {
            prop_assert!(same(*a, *b), "take: {a} vs {b}");
        }
        let e = v.t.take(&index_tensor(&[all.len() as i64])).unwrap_err();
        prop_assert_eq!(e.kind(), ErrorKind::Index);
        prop_assert!(
            e.to_string().contains(&format!("index {}", all.len())),
            "{e}"
        );
    }
    // gather along every dim with an index no longer than the input off `dim`.
    for d in 0..nd {
        if shape[d] == 0 {
            continue;
        }
        let ishape: Vec<usize> = (0..nd)
            .map(|k| {
                if k == d {
                    rng.index(6)
                } else {
                    rng.index(shape[k] + 1)
                }
            })
            .collect();
        // PyTorch's gather takes `0..size` only: a negative index is an error.
        let ix: Vec<i64> = random_indices(rng, numel(&ishape), shape[d])
            .into_iter()
            .map(|i| wrap(i, shape[d]) as i64)
            .collect();
        let it = Tensor::from_vec(ix.clone(), &ishape).unwrap();
        let got = v.t.gather(d as i64, &it).unwrap();
        if !ix.is_empty() {
            let mut neg = ix.clone();
            neg[0] = -1;
            let e =
                v.t.gather(d as i64, &Tensor::from_vec(neg, &ishape).unwrap())
                    .unwrap_err();
            prop_assert_eq!(e.kind(), ErrorKind::Index);
        }
        prop_assert_eq!(got.shape(), &ishape[..]);
        let got = values(&got);
        for (o, a) in got.iter().enumerate() {
            let mut c = unravel(o, &ishape);
            c[d] = wrap(ix[o], shape[d]);
            let b = v.at(&c);
            prop_assert!(same(*a, b), "gather dim {d} at {o}: {a} vs {b}");
        }
    }
    Ok(())
}

/// `x[mask]`, `masked_select`, `nonzero` against the model, the mask itself a random
/// view.
fn check_masks(rng: &mut Rng, v: &View) -> Result<(), TestCaseError> {
    let shape = v.shape().to_vec();
    let density = rng.index(5);
    let mv = random_view(rng, &shape, DType::U8, false, false);
    let bits: Vec<bool> = mv
        .elements()
        .iter()
        .map(|&x| match density {
            0 => false,
            1 => x == 0.0,
            4 => true,
            _ => x as i64 % density as i64 == 0,
        })
        .collect();
    let mask = Tensor::from_vec(bits.clone(), &shape).unwrap();
    // The mask as a strided view too: the same bits through mv's layout.
    let mask_view = {
        let storage: Vec<bool> = mv
            .vals
            .iter()
            .map(|&x| match density {
                0 => false,
                1 => x == 0.0,
                4 => true,
                _ => x as i64 % density as i64 == 0,
            })
            .collect();
        let n = storage.len();
        Tensor::from_vec(storage, &[n])
            .unwrap()
            .as_strided(&shape, &mv.strides, Some(mv.offset))
            .unwrap()
    };
    let all = v.elements();
    let want: Vec<f64> = all
        .iter()
        .zip(&bits)
        .filter(|(_, &b)| b)
        .map(|(&x, _)| x)
        .collect();
    for m in [&mask, &mask_view] {
        for got in [
            v.t.index(&[TensorIndex::tensor(m.clone())]).unwrap(),
            v.t.masked_select(m).unwrap(),
        ] {
            prop_assert_eq!(got.shape(), &[want.len()][..]);
            for (a, b) in values(&got).iter().zip(&want) {
                prop_assert!(same(*a, *b), "mask: {a} vs {b}");
            }
        }
        let nz = m.nonzero().unwrap();
        let want_nz: Vec<i64> = bits
            .iter()
            .enumerate()
            .filter(|(_, &b)| b)
            .flat_map(|(f, _)| unravel(f, &shape).into_iter().map(|c| c as i64))
            .collect();
        prop_assert_eq!(nz.shape(), &[want.len(), shape.len()][..]);
        prop_assert_eq!(ints(&nz), want_nz);
    }
    Ok(())
}

/// `index_put_` (last write wins) and the accumulating form, on a view without aliasing.
fn check_put(rng: &mut Rng, v: &View) -> Result<(), TestCaseError> {
    let shape = v.shape().to_vec();
    if shape[0] == 0 {
        return Ok(());
    }
    let k = if rng.chance(1, 3) {
        EDGES[rng.index(EDGES.len())]
    } else {
        rng.index(9)
    };
    let ix = random_indices(rng, k, shape[0]);
    let rest: usize = numel(&shape[1..]);
    let src: Vec<f64> = (0..k * rest).map(|i| (i % 50) as f64).collect();
    let mut vshape = shape.clone();
    vshape[0] = k;
    let value = Tensor::from_vec(src.clone(), &vshape).unwrap();
    let before = v.elements();
    let mut want = before.clone();
    for (j, &i) in ix.iter().enumerate() {
        let r0 = wrap(i, shape[0]) * rest;
        want[r0..r0 + rest].copy_from_slice(&src[j * rest..(j + 1) * rest]);
    }
    v.t.index_put_(&[TensorIndex::tensor(index_tensor(&ix))], &value)
        .unwrap();
    let got = values(&v.t);
    let dt = v.t.dtype();
    for (a, b) in got.iter().zip(&want) {
        // Values round-trip every dtype used (|x| < 50), so equality is exact.
        prop_assert!(same(*a, *b), "index_put_ {dt}: {a} vs {b}");
    }
    Ok(())
}

fn pick_dtype(rng: &mut Rng) -> DType {
    DTYPES[rng.index(DTYPES.len())]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn arg_reductions_match_the_sequential_scan(seed in any::<u64>()) {
        let mut rng = Rng(seed);
        let shape = random_shape(&mut rng, 3);
        let dt = pick_dtype(&mut rng);
        let v = random_view(&mut rng, &shape, dt, true, true);
        check_args(&v)?;
    }

    #[test]
    fn gathers_match_the_model(seed in any::<u64>()) {
        let mut rng = Rng(seed);
        let shape = random_shape(&mut rng, 3);
        let dt = pick_dtype(&mut rng);
        let v = random_view(&mut rng, &shape, dt, true, true);
        check_gathers(&mut rng, &v)?;
    }

    #[test]
    fn masks_match_the_model(seed in any::<u64>()) {
        let mut rng = Rng(seed);
        let shape = random_shape(&mut rng, 3);
        let dt = if rng.chance(1, 8) { DType::Bool } else { pick_dtype(&mut rng) };
        let dt = if dt == DType::Bool { DType::U8 } else { dt };
        let v = random_view(&mut rng, &shape, dt, true, true);
        check_masks(&mut rng, &v)?;
    }

    #[test]
    fn index_put_matches_the_model(seed in any::<u64>()) {
        let mut rng = Rng(seed);
        let shape = random_shape(&mut rng, 3);
        let dt = pick_dtype(&mut rng);
        let v = random_view(&mut rng, &shape, dt, false, false);
        check_put(&mut rng, &v)?;
    }
}

/// Rising and falling runs and repeated extremes around the scan's sub-blocks (256
/// elements) and blocks (2048): the first occurrence is found after each block's
/// extreme is located by sub-block (`kernel/reduce/arg.rs`, `block_extreme`).
#[test]
fn rising_runs_and_repeated_extremes_around_sub_blocks() {
    let n = 2048 * 3 + 37;
    let mut cases: Vec<Vec<f64>> = vec![
        (0..n).map(|i| i as f64).collect(),
        (0..n).map(|i| (n - i) as f64).collect(),
        // Plateaus: rising by steps of 300 equal values.
        (0..n).map(|i| (i / 300) as f64).collect(),
    ];
    for &(p, q) in &[
        (255, 256),
        (256, 257),
        (0, 2047),
        (511, 2048),
        (2047, 2048),
        (2300, 4095),
        (6100, n - 1),
    ] {
        let mut x: Vec<f64> = (0..n).map(|i| ((i * 37) % 101) as f64).collect();
        x[p] = 500.0;
        x[q] = 500.0;
        cases.push(x.clone());
        // Signed zeros as the extreme: the first of either sign.
        let mut z: Vec<f64> = (0..n).map(|i| -(((i * 37) % 101) as f64) - 1.0).collect();
        z[p] = -0.0;
        z[q] = 0.0;
        cases.push(z);
    }
    for x in &cases {
        for dt in [DType::F32, DType::F64, DType::I32, DType::I16] {
            if dt.is_int() && x.iter().any(|v| v.abs() > 30000.0) {
                continue;
            }
            let t = Tensor::from_vec(x.clone(), &[n])
                .unwrap()
                .to_dtype(dt)
                .unwrap();
            for max in [true, false] {
                let want = model_arg(x, max).1 as i64;
                let got = if max {
                    t.argmax(None, false)
                } else {
                    t.argmin(None, false)
                };
                assert_eq!(ints(&got.unwrap()), vec![want], "{dt} max={max}");
            }
        }
    }
}

/// Every length around the scan's widths (`kernel/reduce/arg.rs`: 64 accumulators for
/// 4-byte elements, 32 for 8-byte ones, sub-blocks of 256, blocks of 2048 whose last
/// one is kept at least a fold wide, a short last part folded again as the last full
/// width), with few distinct values (ties everywhere), an occasional NaN, as one run and
/// as the rows of a matrix (`argmax(dim=1)`), against the sequential model.
#[test]
fn lengths_around_the_fold_widths_and_the_last_block() {
    let mut rng = Rng(0x5eed_a7a7);
    let mut lens: Vec<usize> = (1..=3)
        .flat_map(|k: usize| [32 * k - 1, 32 * k, 32 * k + 1, 64 * k - 1, 64 * k + 1])
        .collect();
    lens.extend([255, 256, 257, 300, 511, 513, 2047, 2048, 2049, 2048 + 31]);
    lens.extend([
        2048 + 63,
        2048 + 64,
        2048 + 65,
        4096 - 1,
        4096 + 1,
        4096 + 40,
    ]);
    for &n in &lens {
        for trial in 0..12 {
            let rows = 3;
            let mut x: Vec<f64> = (0..rows * n).map(|_| rng.below(6) as f64).collect();
            if trial % 3 == 0 {
                let k = rng.below((rows * n) as u64) as usize;
                x[k] = if trial % 2 == 0 { f64::NAN } else { 9.0 };
            }
            if trial % 4 == 1 {
                // The extreme only in the last few elements of a row.
                let k = rng.below(rows as u64) as usize * n + n
                    - 1
                    - rng.below(n.min(40) as u64) as usize;
                x[k] = -7.0;
                x[k.saturating_sub(1).max(k / n * n)] = 12.0;
            }
            for dt in [DType::F32, DType::F64, DType::I16, DType::I64] {
                if dt.is_int() && x.iter().any(|v| v.is_nan()) {
                    continue;
                }
                let t = Tensor::from_vec(x.clone(), &[rows, n])
                    .unwrap()
                    .to_dtype(dt)
                    .unwrap();
                let flat = t.reshape(&[(rows * n) as i64]).unwrap();
                for max in [true, false] {
                    let want = model_arg(&x, max).1 as i64;
                    let got = if max {
                        flat.argmax(None, false)
                    } else {
                        flat.argmin(None, false)
                    };
                    assert_eq!(
                        ints(&got.unwrap()),
                        vec![want],
                        "{dt} n={n} trial={trial} max={max}"
                    );
                    let want: Vec<i64> = x.chunks(n).map(|r| model_arg(r, max).1 as i64).collect();
                    let got = if max {
                        t.argmax(Some(1), false)
                    } else {
                        t.argmin(Some(1), false)
                    };
                    assert_eq!(
                        ints(&got.unwrap()),
                        want,
                        "{dt} rows n={n} trial={trial} max={max}"
                    );
                }
            }
        }
    }
}

/// Staircases: each block (2048 elements) of a long run holds a better extreme than the
/// last, or the best value starts in one block and repeats through the later ones, so
/// the first occurrence lies in an earlier block than the last that holds it.
#[test]
fn staircases_across_blocks_keep_the_first_occurrence() {
    for n in [2048 * 3 + 100, 10_000, 70_000] {
        for step in [1usize, 7, 700, 2048, 2049, 5000] {
            for cap in [usize::MAX, 3, n / step / 2] {
                let x: Vec<f64> = (0..n).map(|i| (i / step).min(cap) as f64).collect();
                for dt in [DType::F32, DType::F64, DType::I32, DType::I64] {
                    let t = Tensor::from_vec(x.clone(), &[n])
                        .unwrap()
                        .to_dtype(dt)
                        .unwrap();
                    let want = model_arg(&x, true).1 as i64;
                    let got = ints(&t.argmax(None, false).unwrap());
                    assert_eq!(got, vec![want], "{dt} n={n} step={step} cap={cap} max");
                    let neg = t.neg().unwrap();
                    let got = ints(&neg.argmin(None, false).unwrap());
                    assert_eq!(got, vec![want], "{dt} n={n} step={step} cap={cap} min");
                }
            }
        }
    }
}

/// Long runs: the parallel blocks of the arg-reductions and gathers, with the extreme,
/// a NaN or a tie placed at block edges.
#[test]
fn long_runs_at_block_edges() {
    let n = (1 << 17) * 2 + 3;
    for &pos in &[0usize, 1, 511, 512, 65_535, 65_536, 131_071, n - 1] {
        for dt in [DType::F32, DType::F64, DType::I32, DType::I8, DType::F16] {
            let mut x = vec![0.0f64; n];
            x[pos] = 5.0;
            x[n - 1 - pos / 2] = 5.0; // a tie later (or the same place)
            let t = Tensor::from_vec(x.clone(), &[n])
                .unwrap()
                .to_dtype(dt)
                .unwrap();
            let want = model_arg(&x, true).1 as i64;
            assert_eq!(
                ints(&t.argmax(None, false).unwrap()),
                vec![want],
                "{dt} at {pos}"
            );
            let neg: Vec<f64> = x.iter().map(|v| -v).collect();
            let t = Tensor::from_vec(neg, &[n]).unwrap().to_dtype(dt).unwrap();
            assert_eq!(
                ints(&t.argmin(None, false).unwrap()),
                vec![want],
                "{dt} at {pos}"
            );
            if matches!(dt, DType::F32 | DType::F64 | DType::F16) {
                let mut y = x.clone();
                y[pos] = f64::NAN;
                y[n - 1] = f64::NAN;
                let t = Tensor::from_vec(y.clone(), &[n])
                    .unwrap()
                    .to_dtype(dt)
                    .unwrap();
                assert_eq!(ints(&t.argmax(None, false).unwrap()), vec![pos as i64]);
                assert_eq!(ints(&t.argmin(None, false).unwrap()), vec![pos as i64]);
            }
        }
    }
    // A big gather (the parallel split) and a big mask (parallel counts and compaction).
    let m = 1 << 19;
    let src: Vec<i32> = (0..m as i32).collect();
    let t = Tensor::from_vec(src, &[m]).unwrap();
    let ix: Vec<i64> = (0..m as i64)
        .map(|i| (i * 7919) % m as i64 - (i % 2) * m as i64)
        .collect();
    let got = t.index(&[TensorIndex::tensor(index_tensor(&ix))]).unwrap();
    let want: Vec<i32> = ix.iter().map(|&i| wrap(i, m) as i32).collect();
    assert_eq!(got.to_vec::<i32>().unwrap(), want);
    let bits: Vec<bool> = (0..m).map(|i| (i * 31) % 7 < 3).collect();
    let mask = Tensor::from_vec(bits.clone(), &[m]).unwrap();
    let got = t.index(&[TensorIndex::tensor(mask.clone())]).unwrap();
    let want: Vec<i32> = (0..m).filter(|&i| bits[i]).map(|i| i as i32).collect();
    assert_eq!(got.to_vec::<i32>().unwrap(), want);
    let nz: Vec<i64> = (0..m).filter(|&i| bits[i]).map(|i| i as i64).collect();
    assert_eq!(mask.nonzero().unwrap().to_vec::<i64>().unwrap(), nz);
}

/// Bad inputs of the new ops: index dtypes, dims, shapes.
#[test]
fn bad_inputs_are_clear_errors() {
    let x = Tensor::from_vec((0..12).map(|v| v as f32).collect(), &[3, 4]).unwrap();
    let fi = Tensor::from_vec(vec![0.0f32, 1.0], &[2]).unwrap();
    let e = x.take(&fi).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DType);
    assert!(
        e.to_string().contains("take") && e.to_string().contains("float32"),
        "{e}"
    );
    let e = x.gather(0, &fi.view(&[1, 2]).unwrap()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DType);
    assert!(e.to_string().contains("gather"), "{e}");
    let e = x.gather(0, &index_tensor(&[0, 1])).unwrap_err();
    assert!(e.to_string().contains("same number of dimensions"), "{e}");
    let big = Tensor::from_vec(vec![0i64; 10], &[2, 5]).unwrap();
    let e = x.gather(0, &big).unwrap_err();
    assert!(e.to_string().contains("no larger than self"), "{e}");
    let e = x.gather(2, &big).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Index);
    let e = x
        .gather(1, &Tensor::from_vec(vec![4i64], &[1, 1]).unwrap())
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("index 4 is out of bounds for dimension 1 with size 4"),
        "{e}"
    );
    let e = x.masked_select(&x).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DType);
    assert!(e.to_string().contains("masked_select"), "{e}");
    let m = Tensor::from_vec(vec![true, false, true], &[3]).unwrap();
    let e = x.masked_select(&m).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Shape);
    let e = x.take(&index_tensor(&[-13])).unwrap_err();
    assert!(e.to_string().contains("index -13 is out of bounds"), "{e}");
    let e = x.index(&[TensorIndex::tensor(fi)]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Index);
    // 0-d cases: take and gather of a 0-d index give 0-d results; masked_select broadcasts.
    let i0 = Tensor::scalar(-1i64);
    let r = x.take(&i0).unwrap();
    assert_eq!(
        (r.shape(), r.to_vec::<f32>().unwrap()),
        (&[][..], vec![11.0])
    );
    let s = Tensor::scalar(7.0f32);
    assert_eq!(
        s.gather(0, &Tensor::scalar(0i64))
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        vec![7.0]
    );
    let r = s.masked_select(&m).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![7.0, 7.0]);
}

/// Reruns this binary's tests with `STRATA_CPU` capped at each level below the detected
/// one (the level is chosen once per process).
#[test]
fn every_cpu_level() {
    if common::is_child_run() {
        return;
    }
    for level in common::levels().into_iter().filter(|&l| l < detected()) {
        common::rerun_at(level, &[], "every_cpu_level");
    }
}
