//! The second round of arg-reduction, gather and mask fast paths against models: the
//! two-pass block scan of the arg-reductions (block extremes with a NaN flag per lane,
//! then a vector search for the first occurrence), the table-driven compaction of
//! `nonzero` and masks, and the direct offsets of one index tensor (`x[idx]`,
//! `index_select`, `take`, `index_put_`). Lengths sit at the block and word edges;
//! NaNs, ties and signed zeros at block edges; indices negative, repeated and out of
//! range. `every_cpu_level` reruns this binary with `STRATA_CPU` capped at each level
//! below the machine's, so each dispatched copy is checked.

mod common;

use common::Rng;
use strata::kernel::cpu::detected;
use strata::{DType, ErrorKind, Tensor, TensorIndex};

/// Lengths around the lane count (32), the scan block (2048) and the parallel block.
const LENS: [usize; 16] = [
    1, 2, 31, 32, 33, 64, 65, 2047, 2048, 2049, 4095, 4096, 4097, 6001, 131_073, 262_147,
];

/// The sequential scan: NaN wins (its first occurrence), else the first strict extreme.
fn model_arg(xs: &[f64], max: bool) -> (f64, usize) {
    let (mut best, mut bi) = (xs[0], 0);
    for (i, &x) in xs.iter().enumerate().skip(1) {
        if best.is_nan() {
            break;
        }
        let better = x.is_nan() || if max { x > best } else { x < best };
        if better {
            best = x;
            bi = i;
        }
    }
    (best, bi)
}

fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b
}

/// Values of `n` elements in one of several patterns (each representable in every
/// tested dtype: small integers, infinities, signed zeros).
fn pattern(rng: &mut Rng, n: usize, kind: usize) -> Vec<f64> {
    match kind {
        0 => (0..n).map(|_| rng.range(-50, 50) as f64).collect(),
        1 => (0..n).map(|i| (i % 100) as f64).collect(), // rising runs: every block searched
        2 => (0..n).map(|i| -((i % 100) as f64)).collect(),
        3 => vec![7.0; n],
        4 => (0..n)
            .map(|i| if i % 3 == 0 { 0.0 } else { -0.0 })
            .collect(),
        _ => (0..n).map(|_| rng.range(-3, 3) as f64).collect(),
    }
}

fn check_run(x: &[f64], dt: DType, what: &str) {
    let t = Tensor::from_vec(x.to_vec(), &[x.len()])
        .unwrap()
        .to_dtype(dt)
        .unwrap();
    check_view(x, &t, dt, what);
    // Strided: `x` at every second element of a longer run (the gathered scan for long
    // runs), and reversed (a negative stride).
    let mut wide = vec![0.0; 2 * x.len()];
    for (i, &v) in x.iter().enumerate() {
        wide[2 * i] = v;
        // Fillers that would win (or lose) if the scan read them.
        wide[2 * i + 1] = if i % 2 == 0 { 100.0 } else { 0.0 };
    }
    let w = Tensor::from_vec(wide, &[2 * x.len()])
        .unwrap()
        .to_dtype(dt)
        .unwrap();
    check_view(
        x,
        &w.slice(0, None, None, 2).unwrap(),
        dt,
        &format!("{what} [::2]"),
    );
    let rev: Vec<f64> = x.iter().rev().copied().collect();
    let r = Tensor::from_vec(rev, &[x.len()])
        .unwrap()
        .to_dtype(dt)
        .unwrap();
    check_view(x, &r.flip(&[0]).unwrap(), dt, &format!("{what} flipped"));
}

fn check_view(x: &[f64], t: &Tensor, dt: DType, what: &str) {
    for max in [true, false] {
        let (v, i) = model_arg(x, max);
        let got = if max {
            t.argmax(None, false)
        } else {
            t.argmin(None, false)
        }
        .unwrap();
        assert_eq!(
            got.to_vec::<i64>().unwrap(),
            vec![i as i64],
            "{what} {dt} n={} max={max}",
            x.len()
        );
        let (vals, idx) = if max {
            t.max_dim(0, false)
        } else {
            t.min_dim(0, false)
        }
        .unwrap();
        assert_eq!(idx.to_vec::<i64>().unwrap(), vec![i as i64]);
        let got_v = common::values_f64(&vals)[0];
        assert!(same(got_v, v), "{what} {dt}: value {got_v} vs {v}");
        if v == 0.0 && dt.is_float() {
            // The value is the element at the index: its sign too.
            assert_eq!(got_v.is_sign_negative(), x[i].is_sign_negative(), "{what}");
        }
    }
}

#[test]
fn arg_scan_matches_the_sequential_scan() {
    let mut rng = Rng(17);
    let dts = [
        DType::F32,
        DType::F64,
        DType::F16,
        DType::BF16,
        DType::I32,
        DType::I64,
        DType::I8,
        DType::U8,
    ];
    for &n in &LENS {
        for kind in 0..6 {
            let x = pattern(&mut rng, n, kind);
            for &dt in &dts {
                if (dt == DType::U8 && x.iter().any(|&v| v < 0.0)) || (n > 10_000 && kind > 1) {
                    continue;
                }
                check_run(&x, dt, &format!("pattern {kind}"));
            }
        }
    }
}

#[test]
fn arg_scan_nans_and_infinities_at_block_edges() {
    let mut rng = Rng(5);
    for &n in &[33usize, 2048, 2049, 4097, 6001, 8192, 10_241] {
        let base = pattern(&mut rng, n, 0);
        for &pos in &[
            0usize,
            1,
            31,
            32,
            2047,
            2048,
            2049,
            4095,
            4096,
            8191,
            8192,
            n - 1,
        ] {
            if pos >= n {
                continue;
            }
            for dt in [DType::F32, DType::F64, DType::F16, DType::BF16] {
                let mut x = base.clone();
                x[pos] = f64::NAN;
                check_run(&x, dt, &format!("NaN at {pos}"));
                x[n - 1 - (n - 1 - pos) / 2] = f64::NAN; // a second one, later
                check_run(&x, dt, &format!("two NaNs from {pos}"));
                let mut y = base.clone();
                y[pos] = f64::INFINITY;
                y[n - 1] = f64::INFINITY;
                check_run(&y, dt, &format!("+inf at {pos}"));
                y[pos] = f64::NEG_INFINITY;
                check_run(&y, dt, &format!("-inf at {pos}"));
                let all: Vec<f64> = vec![f64::NEG_INFINITY; n];
                check_run(&all, dt, "all -inf");
            }
        }
    }
}

/// Rows of a matrix (`argmax(dim=1)`, `max(dim=1)`) and of its transpose (a strided
/// reduced dim), against the model row by row.
#[test]
fn arg_rows_match_the_model() {
    let mut rng = Rng(9);
    for &(r, c) in &[
        (3usize, 2047usize),
        (5, 2049),
        (64, 33),
        (1000, 100),
        (7, 6001),
    ] {
        let mut x: Vec<f64> = (0..r * c).map(|_| rng.range(-20, 20) as f64).collect();
        x[c / 2] = f64::NAN;
        x[(r - 1) * c + c - 1] = f64::NAN;
        for dt in [DType::F32, DType::F64, DType::I32, DType::F16] {
            let t = Tensor::from_vec(x.clone(), &[r, c])
                .unwrap()
                .to_dtype(dt)
                .unwrap();
            let is_float = dt != DType::I32;
            for max in [true, false] {
                let (vals, idx) = if max {
                    t.max_dim(1, false)
                } else {
                    t.min_dim(1, false)
                }
                .unwrap();
                let vals = common::values_f64(&vals);
                let idx = idx.to_vec::<i64>().unwrap();
                let am = if max {
                    t.argmax(Some(1), false)
                } else {
                    t.argmin(Some(1), false)
                }
                .unwrap()
                .to_vec::<i64>()
                .unwrap();
                // The transpose's dim 0 is the same rows, read with stride `c`.
                let tt = t.t().unwrap();
                let am_t = if max {
                    tt.argmax(Some(0), false)
                } else {
                    tt.argmin(Some(0), false)
                }
                .unwrap()
                .to_vec::<i64>()
                .unwrap();
                for k in 0..r {
                    let row: Vec<f64> = x[k * c..(k + 1) * c]
                        .iter()
                        .map(|&v| if is_float || !v.is_nan() { v } else { 0.0 })
                        .collect();
                    let (v, i) = model_arg(&row, max);
                    assert_eq!(idx[k], i as i64, "{dt} {r}x{c} row {k} max={max}");
                    assert_eq!(am[k], i as i64);
                    assert_eq!(am_t[k], i as i64);
                    assert!(same(vals[k], v), "{dt} row {k}: {} vs {v}", vals[k]);
                }
            }
        }
    }
}

fn mask_of(bits: &[bool]) -> Tensor {
    Tensor::from_vec(bits.to_vec(), &[bits.len()]).unwrap()
}

/// `nonzero` of 1-D masks (the table-driven compaction straight into the result), masks
/// of other layouts and ranks, and `x[mask]` through views of other strides.
#[test]
fn nonzero_and_masks_match_the_model() {
    let mut rng = Rng(3);
    let lens = [
        0usize, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 65_543, 262_149,
    ];
    for &n in &lens {
        for dens in [0u64, 1, 50, 99, 100] {
            let bits: Vec<bool> = (0..n).map(|_| rng.below(100) < dens).collect();
            let want: Vec<i64> = (0..n).filter(|&i| bits[i]).map(|i| i as i64).collect();
            let m = mask_of(&bits);
            let nz = m.nonzero().unwrap();
            assert_eq!(nz.shape(), &[want.len(), 1][..], "n={n} d={dens}");
            assert_eq!(nz.to_vec::<i64>().unwrap(), want, "n={n} d={dens}");
            // A strided mask (not the direct path) and a float tensor (cast first).
            if n > 0 {
                let twice: Vec<bool> = bits.iter().flat_map(|&b| [b, !b]).collect();
                let sv = mask_of(&twice).slice(0, Some(0), None, 2).unwrap();
                assert_eq!(sv.nonzero().unwrap().to_vec::<i64>().unwrap(), want);
                let f: Vec<f32> = bits.iter().map(|&b| if b { -0.5 } else { 0.0 }).collect();
                let ft = Tensor::from_vec(f, &[n]).unwrap();
                assert_eq!(ft.nonzero().unwrap().to_vec::<i64>().unwrap(), want);
            }
            // `x[mask]` on a contiguous source (offsets with step 1) and on a stride-2
            // view (step 2: the byte-by-byte compaction).
            let src: Vec<i32> = (0..2 * n as i32).collect();
            let x = Tensor::from_vec(src, &[2 * n]).unwrap();
            let xs = x.slice(0, Some(0), None, 2).unwrap();
            let got = xs.index(&[TensorIndex::tensor(m.clone())]).unwrap();
            let w: Vec<i32> = want.iter().map(|&i| 2 * i as i32).collect();
            assert_eq!(got.to_vec::<i32>().unwrap(), w, "n={n} d={dens}");
            let x1 = x.slice(0, Some(0), Some(n as i64), 1).unwrap();
            let got = x1.index(&[TensorIndex::tensor(m)]).unwrap();
            let w: Vec<i32> = want.iter().map(|&i| i as i32).collect();
            assert_eq!(got.to_vec::<i32>().unwrap(), w);
        }
    }
    // A mask whose true bytes are not 1 (a `uint8` storage viewed as `bool`).
    let raw: Vec<u8> = (0..100u8)
        .map(|i| [0, 1, 2, 0x7f, 0x80, 0xff][(i % 6) as usize])
        .collect();
    let m = Tensor::from_vec(raw.clone(), &[100])
        .unwrap()
        .view_dtype(DType::Bool)
        .unwrap();
    let want: Vec<i64> = (0..100)
        .filter(|&i| raw[i] != 0)
        .map(|i| i as i64)
        .collect();
    assert_eq!(m.nonzero().unwrap().to_vec::<i64>().unwrap(), want);
    // 2-D masks keep coordinates.
    let bits: Vec<bool> = (0..12).map(|i| i % 5 == 0).collect();
    let m2 = Tensor::from_vec(bits, &[3, 4]).unwrap();
    assert_eq!(
        m2.nonzero().unwrap().to_vec::<i64>().unwrap(),
        vec![0, 0, 1, 1, 2, 2]
    );
}

fn wrap(i: i64, size: usize) -> usize {
    if i < 0 {
        (i + size as i64) as usize
    } else {
        i as usize
    }
}

fn idx(v: &[i64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap()
}

/// One index tensor alone: `x[idx]`, `index_select`, `take`, `index_put_`, with
/// negative, repeated and out-of-range values, contiguous and strided indices.
#[test]
fn one_index_tensor_matches_the_model() {
    let mut rng = Rng(11);
    let size = 1000usize;
    let src: Vec<f32> = (0..size).map(|v| v as f32).collect();
    let x = Tensor::from_vec(src, &[size]).unwrap();
    for &k in &[0usize, 1, 5, 4096, 200_000] {
        let ix: Vec<i64> = (0..k)
            .map(|_| rng.range(-(size as i64), size as i64 - 1))
            .collect();
        let want: Vec<f32> = ix.iter().map(|&i| wrap(i, size) as f32).collect();
        let got = x.index(&[TensorIndex::tensor(idx(&ix))]).unwrap();
        assert_eq!(got.to_vec::<f32>().unwrap(), want, "k={k}");
        assert_eq!(x.take(&idx(&ix)).unwrap().to_vec::<f32>().unwrap(), want);
        // A strided index (not the direct path) and a u64 one.
        let twice: Vec<i64> = ix.iter().flat_map(|&i| [i, 12345]).collect();
        let sv = idx(&twice).slice(0, Some(0), None, 2).unwrap();
        let got = x.index(&[TensorIndex::tensor(sv)]).unwrap();
        assert_eq!(got.to_vec::<f32>().unwrap(), want);
        let ux: Vec<u64> = ix.iter().map(|&i| wrap(i, size) as u64).collect();
        let ut = Tensor::from_vec(ux, &[k]).unwrap();
        let got = x.index(&[TensorIndex::tensor(ut)]).unwrap();
        assert_eq!(got.to_vec::<f32>().unwrap(), want);
    }
    // Rows and columns of a matrix (index_select), a negative-stride view.
    let m = Tensor::from_vec((0..30 * 40).map(|v| v as i64).collect(), &[30, 40]).unwrap();
    let rows = [3i64, -1, 3, 0, 29];
    let got = m.index_select(0, &rows).unwrap();
    let want: Vec<i64> = rows
        .iter()
        .flat_map(|&r| (0..40).map(move |c| wrap(r, 30) as i64 * 40 + c))
        .collect();
    assert_eq!(got.to_vec::<i64>().unwrap(), want);
    let got = m.index_select(1, &rows).unwrap();
    let want: Vec<i64> = (0..30)
        .flat_map(|r| rows.iter().map(move |&c| r * 40 + wrap(c, 40) as i64))
        .collect();
    assert_eq!(got.to_vec::<i64>().unwrap(), want);
    let flipped = m.flip(&[0]).unwrap();
    let got = flipped.index_select(0, &rows).unwrap();
    let want: Vec<i64> = rows
        .iter()
        .flat_map(|&r| (0..40).map(move |c| (29 - wrap(r, 30) as i64) * 40 + c))
        .collect();
    assert_eq!(got.to_vec::<i64>().unwrap(), want);
    // index_put_: the last write wins on repeats; negative indices count from the end.
    let t = Tensor::zeros(&[10], DType::F32).unwrap();
    let ix = [1i64, -1, 1, 3];
    let v = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();
    t.index_put_(&[TensorIndex::tensor(idx(&ix))], &v).unwrap();
    assert_eq!(
        t.to_vec::<f32>().unwrap(),
        vec![0.0, 3.0, 0.0, 4.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0]
    );
}

#[test]
fn out_of_range_indices_are_clear_errors() {
    let x = Tensor::from_vec((0..10).map(|v| v as f32).collect(), &[10]).unwrap();
    for (bad, name) in [
        (10i64, "10"),
        (-11, "-11"),
        (i64::MAX, "9223372036854775807"),
        (i64::MIN, "-9223372036854775808"),
    ] {
        // The bad value among good ones: the error names it.
        let mut ix = vec![0i64, 9, -10, 3];
        ix.insert(2, bad);
        let e = x.index(&[TensorIndex::tensor(idx(&ix))]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Index);
        assert!(
            e.to_string().contains(&format!(
                "index {name} is out of bounds for dimension 0 with size 10"
            )),
            "{e}"
        );
        let e = x.take(&idx(&ix)).unwrap_err();
        assert!(
            e.to_string()
                .contains(&format!("index {name} is out of bounds")),
            "{e}"
        );
        let t = Tensor::zeros(&[10], DType::F32).unwrap();
        let v = Tensor::zeros(&[5], DType::F32).unwrap();
        let e = t
            .index_put_(&[TensorIndex::tensor(idx(&ix))], &v)
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Index);
        // Nothing was written.
        assert_eq!(t.to_vec::<f32>().unwrap(), vec![0.0; 10]);
    }
    let m = Tensor::from_vec((0..12).map(|v| v as f32).collect(), &[3, 4]).unwrap();
    let e = m.index_select(1, &[0, 4]).unwrap_err();
    assert!(
        e.to_string()
            .contains("index 4 is out of bounds for dimension 1 with size 4"),
        "{e}"
    );
    // An empty dim: every index is out of range.
    let empty = Tensor::zeros(&[0], DType::F32).unwrap();
    let e = empty.index(&[TensorIndex::tensor(idx(&[0]))]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Index);
    let got = empty.index(&[TensorIndex::tensor(idx(&[]))]).unwrap();
    assert_eq!(got.shape(), &[0][..]);
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
