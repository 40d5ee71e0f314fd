//! The CUDA backend against the CPU engine (the oracle), on a machine with a GPU: every
//! elementwise op of the table over every dtype class, casts between all dtypes, and
//! reductions, scans, matmul, indexing and copies, each over random layouts (row-major,
//! transposed, flipped, stepped, broadcast, 0-d, empty). Without a CUDA device each test
//! checks that CUDA requests fail with the clear error instead (see also `device.rs`).

use strata::ops::{Binary, Unary};
use strata::{cuda, DType, Device, ErrorKind, Reduction, Tensor, TensorIndex};

mod common;
use common::Rng;

const GPU: Device = Device::Cuda(0);

/// True when a GPU is here; else checks the no-GPU error once and says so.
fn gpu() -> bool {
    if cuda::is_available() {
        return true;
    }
    let e = Tensor::zeros(&[2], DType::F32)
        .unwrap()
        .to_device(GPU)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Device, "{e}");
    assert!(e.to_string().contains("cuda:0 is not available"), "{e}");
    false
}

/// The real dtypes (complex ones have their own tests, and no GPU kernels).
const DTYPES: [DType; 13] = DType::REAL;

/// Random values of `dtype`: small integers (signed ones around 0), floats in [-4, 4)
/// with a few specials (NaN, ±inf, ±0) when `specials`.
fn random(shape: &[usize], dtype: DType, rng: &mut Rng, specials: bool) -> Tensor {
    let n: usize = shape.iter().product();
    let mut v = Vec::with_capacity(n);
    for i in 0..n {
        let x = match dtype {
            DType::Bool => (rng.below(2)) as f64,
            DType::U8 | DType::U16 | DType::U32 | DType::U64 => rng.below(50) as f64,
            d if d.is_int() => rng.range(-50, 50) as f64,
            _ => {
                if specials && i % 17 == 3 {
                    [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -0.0][rng.index(5)]
                } else {
                    (rng.next() >> 11) as f64 / (1u64 << 53) as f64 * 8.0 - 4.0
                }
            }
        };
        v.push(x);
    }
    Tensor::from_vec(v, shape).unwrap().to_dtype(dtype).unwrap()
}

type View = fn(&Tensor) -> strata::Result<Tensor>;

/// Layouts over a `[6, 10]` base (each applied to the CPU and the GPU copy alike).
fn layouts() -> Vec<(&'static str, View)> {
    vec![
        ("row-major", |t| Ok(t.clone())),
        ("transposed", |t| t.t()),
        ("flipped", |t| t.flip(&[0, 1])),
        ("stepped", |t| {
            t.slice(0, Some(1), None, 2)?.slice(1, None, None, 3)
        }),
        ("broadcast", |t| {
            t.select(0, 2)?.unsqueeze(0)?.expand(&[4, 10])
        }),
        ("0-d", |t| t.select(0, 1)?.select(0, 3)),
        ("empty", |t| t.slice(0, Some(2), Some(2), 1)),
        ("flipped-transposed", |t| t.t()?.flip(&[1])),
    ]
}

/// Both as f64 values (row-major), NaN-aware, with a relative tolerance for floats.
fn assert_close(what: &str, got: &Tensor, want: &Tensor, tol: f64) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    let g = got
        .to_device(Device::Cpu)
        .unwrap()
        .to_dtype(DType::F64)
        .unwrap()
        .to_vec::<f64>()
        .unwrap();
    let w = want.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        let ok = if a.is_nan() || b.is_nan() {
            a.is_nan() && b.is_nan()
        } else if a.is_infinite() || b.is_infinite() {
            a == b
        } else {
            (a - b).abs() <= tol * a.abs().max(b.abs()).max(1e-30) || (a - b).abs() <= tol
        };
        assert!(ok, "{what}: element {i}: gpu {a} vs cpu {b}");
    }
}

fn tol(dt: DType, math: bool) -> f64 {
    match dt {
        DType::F16 => 2e-3,
        DType::BF16 => 1e-2,
        DType::F32 if math => 1e-5,
        DType::F32 => 1e-6,
        DType::F64 if math => 1e-13,
        DType::F64 => 1e-15,
        _ => 0.0,
    }
}

/// The tolerance of a result of `dt` (`math`: a transcendental op).
fn result_tol(dt: DType, math: bool) -> f64 {
    tol(dt, math)
}

/// Pass as the tolerance of [`same`]: the result dtype's, for plain (`PLAIN`) or math
/// (`MATH`) ops.
const PLAIN: f64 = -1.0;
const MATH: f64 = -2.0;

/// The same outcome on both devices: equal values, or errors of the same kind.
fn same(what: &str, gpu: strata::Result<Tensor>, cpu: strata::Result<Tensor>, tol: f64) {
    match (gpu, cpu) {
        (Ok(g), Ok(c)) => {
            assert_eq!(g.device(), GPU, "{what}: result device");
            // Integer and bool inputs of float math give float results: their tolerance.
            let tol = if tol < 0.0 {
                result_tol(c.dtype(), -tol > 1.5)
            } else {
                tol
            };
            assert_close(what, &g, &c, tol);
        }
        (Err(g), Err(c)) => assert_eq!(g.kind(), c.kind(), "{what}: {g} vs {c}"),
        (Ok(_), Err(c)) => panic!("{what}: gpu succeeded, cpu failed: {c}"),
        (Err(g), Ok(_)) => panic!("{what}: gpu failed: {g}"),
    }
}

#[test]
fn unary_ops_match_the_cpu_engine() {
    if !gpu() {
        return;
    }
    let mut rng = Rng(1);
    for dt in DTYPES {
        let base = random(&[6, 10], dt, &mut rng, true);
        let dev = base.to_device(GPU).unwrap();
        for (name, view) in layouts() {
            let (c, g) = (view(&base).unwrap(), view(&dev).unwrap());
            for &op in Unary::ALL {
                let what = format!("{}({dt}, {name})", op.name());
                let math = op.cost() == strata::ops::Cost::Math;
                same(
                    &what,
                    g.unary_op(op),
                    c.unary_op(op),
                    if math { MATH } else { PLAIN },
                );
            }
        }
    }
}

/// Large enough for every loop kind: rows (last dim ≥ 32), tiled (a transposed operand,
/// both tile dims ≥ 16, partial tiles at the edges, a batch dim), flat and strided.
#[test]
fn every_loop_kind_matches_on_large_layouts() {
    if !gpu() {
        return;
    }
    let mut rng = Rng(12);
    type Big = fn(&Tensor) -> strata::Result<Tensor>;
    let views: [(&str, Big); 7] = [
        ("row-major", |t| Ok(t.clone())),
        ("transposed", |t| t.t()),
        ("flipped", |t| t.flip(&[0])),
        ("flipped both", |t| t.flip(&[0, 1])),
        ("stepped", |t| {
            t.slice(0, None, None, 2)?.slice(1, Some(1), None, 2)
        }),
        ("broadcast row", |t| {
            t.select(0, 3)?.unsqueeze(0)?.expand(&[70, 90])
        }),
        ("broadcast column", |t| {
            t.slice(1, Some(0), Some(1), 1)?.expand(&[70, 90])
        }),
    ];
    for dt in [
        DType::F32,
        DType::F64,
        DType::F16,
        DType::I64,
        DType::U8,
        DType::Bool,
    ] {
        let base = random(&[70, 90], dt, &mut rng, false);
        let base_t = random(&[90, 70], dt, &mut rng, false);
        let (g, g_t) = (base.to_device(GPU).unwrap(), base_t.to_device(GPU).unwrap());
        for (name, view) in views {
            let c = view(&base).unwrap();
            let d = view(&g).unwrap();
            // Views of the transposed base have the (70, 90) shape only where expected.
            let (ct, dt_) = (base_t.t().unwrap(), g_t.t().unwrap());
            same(
                &format!("copy({dt}, {name})"),
                d.contiguous_copy(),
                c.contiguous_copy(),
                0.0,
            );
            same(
                &format!("cast to f32({dt}, {name})"),
                d.to_dtype(DType::F32),
                c.to_dtype(DType::F32),
                0.0,
            );
            if c.shape() == [70, 90] && dt != DType::Bool {
                same(
                    &format!("add transposed({dt}, {name})"),
                    d.add(&dt_),
                    c.add(&ct),
                    PLAIN,
                );
                same(
                    &format!("mul transposed by view({dt}, {name})"),
                    dt_.mul(&d),
                    ct.mul(&c),
                    PLAIN,
                );
            }
        }
        // NCHW → NHWC and back: a tiled copy with a batch dim.
        let x = random(&[3, 5, 40, 36], dt, &mut rng, false);
        let gx = x.to_device(GPU).unwrap();
        for perm in [[0i64, 2, 3, 1], [0, 3, 1, 2], [3, 2, 1, 0]] {
            same(
                &format!("permute {perm:?}({dt})"),
                gx.permute(&perm).unwrap().contiguous_copy(),
                x.permute(&perm).unwrap().contiguous_copy(),
                0.0,
            );
        }
        // In place through a flipped view into a transposed destination.
        let (c, d) = (base_t.clone_data().unwrap(), g_t.clone_data().unwrap());
        if dt != DType::Bool {
            c.t().unwrap().add_(&base.flip(&[1]).unwrap()).unwrap();
            d.t().unwrap().add_(&g.flip(&[1]).unwrap()).unwrap();
            same(&format!("add_ into transposed({dt})"), Ok(d), Ok(c), PLAIN);
        }
    }
}

#[test]
fn binary_ops_match_the_cpu_engine_with_broadcasting_and_scalars() {
    if !gpu() {
        return;
    }
    let mut rng = Rng(2);
    for dt in DTYPES {
        let a = random(&[6, 10], dt, &mut rng, true);
        let b = random(&[6, 10], dt, &mut rng, true);
        let row = random(&[10], dt, &mut rng, false);
        let (ga, gb, grow) = (
            a.to_device(GPU).unwrap(),
            b.to_device(GPU).unwrap(),
            row.to_device(GPU).unwrap(),
        );
        for &op in Binary::ALL {
            let math = op.cost() == strata::ops::Cost::Math;
            let t = if math { MATH } else { PLAIN };
            let what = |s: &str| format!("{}({dt}, {s})", op.name());
            same(&what("same"), ga.binary_op(op, &gb), a.binary_op(op, &b), t);
            same(
                &what("transposed"),
                ga.t().unwrap().binary_op(op, &gb.t().unwrap()),
                a.t().unwrap().binary_op(op, &b.t().unwrap()),
                t,
            );
            same(
                &what("mixed"),
                ga.binary_op(op, &gb.flip(&[0]).unwrap()),
                a.binary_op(op, &b.flip(&[0]).unwrap()),
                t,
            );
            same(
                &what("row"),
                ga.binary_op(op, &grow),
                a.binary_op(op, &row),
                t,
            );
            same(&what("scalar"), ga.binary_op(op, 3), a.binary_op(op, 3), t);
            same(
                &what("float scalar"),
                ga.binary_op(op, 1.5),
                a.binary_op(op, 1.5),
                t,
            );
            // A CPU 0-d tensor joins GPU tensors as a scalar.
            let s = row.select(0, 4).unwrap();
            same(
                &what("cpu 0-d"),
                ga.binary_op(op, &s),
                a.binary_op(op, &s),
                t,
            );
        }
    }
}

#[test]
fn mixing_devices_is_pytorchs_error() {
    if !gpu() {
        return;
    }
    let a = Tensor::ones(&[3], DType::F32).unwrap();
    let g = a.to_device(GPU).unwrap();
    let e = g.add(&a).unwrap_err();
    assert!(
        e.to_string().contains("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"),
        "{e}"
    );
}

#[test]
fn writes_into_overlapping_views_are_refused_as_on_the_cpu() {
    if !gpu() {
        return;
    }
    let a = Tensor::ones(&[1, 5], DType::F32).unwrap();
    let g = a.to_device(GPU).unwrap();
    for (t, dev) in [(&a, "cpu"), (&g, "cuda")] {
        let e = t
            .expand(&[4, 5])
            .unwrap()
            .mul_(&Tensor::scalar(2.0f32))
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Overlap, "{dev}: {e}");
    }
    assert_eq!(g.to_vec::<f32>().unwrap(), vec![1.0; 5]);
}

#[test]
fn casts_between_all_dtypes_match() {
    if !gpu() {
        return;
    }
    let mut rng = Rng(3);
    for from in DTYPES {
        let base = random(&[6, 10], from, &mut rng, true);
        let dev = base.to_device(GPU).unwrap();
        for to in DTYPES {
            for (name, view) in layouts() {
                let (c, g) = (view(&base).unwrap(), view(&dev).unwrap());
                same(
                    &format!("{from}->{to} ({name})"),
                    g.to_dtype(to),
                    c.to_dtype(to),
                    0.0,
                );
            }
        }
    }
}

#[test]
fn where_clamp_and_in_place_ops_match() {
    if !gpu() {
        return;
    }
    let mut rng = Rng(4);
    for dt in [DType::F32, DType::F64, DType::F16, DType::I32, DType::U8] {
        let x = random(&[6, 10], dt, &mut rng, true);
        let y = random(&[6, 10], dt, &mut rng, true);
        let m = random(&[6, 10], DType::Bool, &mut rng, false);
        let (gx, gy, gm) = (
            x.to_device(GPU).unwrap(),
            y.to_device(GPU).unwrap(),
            m.to_device(GPU).unwrap(),
        );
        same(
            &format!("where {dt}"),
            Tensor::where_cond(&gm.t().unwrap(), &gx.t().unwrap(), &gy.t().unwrap()),
            Tensor::where_cond(&m.t().unwrap(), &x.t().unwrap(), &y.t().unwrap()),
            0.0,
        );
        let (lo, hi) = (Some(strata::Scalar::Int(-2)), Some(strata::Scalar::Int(3)));
        same(
            &format!("clamp {dt}"),
            gx.flip(&[1]).unwrap().clamp(lo, hi),
            x.flip(&[1]).unwrap().clamp(lo, hi),
            0.0,
        );
        // In place into a transposed view, reading a flipped alias of itself.
        let (cx, cg) = (x.contiguous_copy().unwrap(), gx.contiguous_copy().unwrap());
        let rc = cx
            .t()
            .unwrap()
            .add_(&cx.t().unwrap().flip(&[0]).unwrap())
            .cloned();
        let rg = cg
            .t()
            .unwrap()
            .add_(&cg.t().unwrap().flip(&[0]).unwrap())
            .cloned();
        same(
            &format!("add_ aliasing {dt}"),
            rg.map(|_| cg.clone()),
            rc.map(|_| cx.clone()),
            tol(dt, false),
        );
    }
}

#[test]
fn reductions_match_over_any_dims() {
    if !gpu() {
        return;
    }
    let mut rng = Rng(5);
    let shapes: [&[usize]; 4] = [&[6, 10], &[3, 4, 5], &[300, 7], &[2, 5000]];
    let dims: [&[i64]; 6] = [&[], &[0], &[1], &[-1], &[0, 1], &[1, 0]];
    for shape in shapes {
        for dt in [
            DType::F32,
            DType::F64,
            DType::F16,
            DType::BF16,
            DType::I32,
            DType::U8,
            DType::Bool,
        ] {
            let x = random(shape, dt, &mut rng, false);
            let g = x.to_device(GPU).unwrap();
            for t in [false, true] {
                let (cx, gx) = if t {
                    (x.transpose(0, -1).unwrap(), g.transpose(0, -1).unwrap())
                } else {
                    (x.clone(), g.clone())
                };
                for d in dims {
                    for keep in [false, true] {
                        let what = |op: &str| {
                            format!("{op}({dt}, {shape:?}, t={t}, dims={d:?}, keep={keep})")
                        };
                        // Float inputs: a looser bound for a different summation order;
                        // integer inputs: exact, or the float result's own bound.
                        let tl = if dt.is_float() {
                            tol(dt, true).max(1e-5) * 10.0
                        } else {
                            MATH
                        };
                        let mx = |v: f64| if tl < 0.0 { tl } else { tl.max(v) };
                        same(&what("sum"), gx.sum(d, keep), cx.sum(d, keep), tl);
                        same(&what("mean"), gx.mean(d, keep), cx.mean(d, keep), tl);
                        same(&what("amax"), gx.amax(d, keep), cx.amax(d, keep), 0.0);
                        same(&what("amin"), gx.amin(d, keep), cx.amin(d, keep), 0.0);
                        same(&what("all"), gx.all(d, keep), cx.all(d, keep), 0.0);
                        same(&what("any"), gx.any(d, keep), cx.any(d, keep), 0.0);
                        same(&what("var"), gx.var(d, keep), cx.var(d, keep), mx(1e-6));
                        same(
                            &what("std"),
                            gx.std_correction(d, 0.0, keep),
                            cx.std_correction(d, 0.0, keep),
                            mx(1e-6),
                        );
                        same(
                            &what("logsumexp"),
                            gx.logsumexp(d, keep),
                            cx.logsumexp(d, keep),
                            mx(1e-6),
                        );
                        if shape.iter().product::<usize>() < 100 {
                            same(&what("prod"), gx.prod(d, keep), cx.prod(d, keep), mx(1e-5));
                        }
                    }
                }
            }
        }
    }
    let _ = Reduction::Sum;
}

#[test]
fn arg_reductions_and_scans_match() {
    if !gpu() {
        return;
    }
    let mut rng = Rng(6);
    for dt in [
        DType::F32,
        DType::F64,
        DType::F16,
        DType::I64,
        DType::U8,
        DType::Bool,
    ] {
        // Ties and NaNs: first occurrence wins, NaN counts as the extreme.
        let x = random(&[40, 30], dt, &mut rng, true)
            .remainder(4)
            .unwrap_or_else(|_| random(&[40, 30], dt, &mut rng, true));
        let g = x.to_device(GPU).unwrap();
        for t in [false, true] {
            let (cx, gx) = if t {
                (x.t().unwrap(), g.t().unwrap())
            } else {
                (x.clone(), g.clone())
            };
            for dim in [None, Some(0), Some(1), Some(-1)] {
                for keep in [false, true] {
                    let what = |op: &str| format!("{op}({dt}, t={t}, dim={dim:?}, keep={keep})");
                    same(
                        &what("argmax"),
                        gx.argmax(dim, keep),
                        cx.argmax(dim, keep),
                        0.0,
                    );
                    same(
                        &what("argmin"),
                        gx.argmin(dim, keep),
                        cx.argmin(dim, keep),
                        0.0,
                    );
                }
            }
            for dim in [0i64, 1] {
                let tl = if dt.is_float() { 1e-4 } else { 0.0 };
                same(
                    &format!("cumsum({dt}, t={t}, {dim})"),
                    gx.cumsum(dim),
                    cx.cumsum(dim),
                    tl,
                );
                if dt.is_float() {
                    let small = cx.div(8.0).unwrap();
                    same(
                        &format!("cumprod({dt}, t={t}, {dim})"),
                        small.to_device(GPU).unwrap().cumprod(dim),
                        small.cumprod(dim),
                        1e-3,
                    );
                }
            }
        }
    }
}

#[test]
fn matmul_matches_for_every_float_dtype_and_layout() {
    if !gpu() {
        return;
    }
    let mut rng = Rng(7);
    for dt in [DType::F32, DType::F64, DType::F16, DType::BF16] {
        let a = random(&[3, 37, 29], dt, &mut rng, false);
        let b = random(&[3, 29, 41], dt, &mut rng, false);
        let (ga, gb) = (a.to_device(GPU).unwrap(), b.to_device(GPU).unwrap());
        let tl = match dt {
            DType::F64 => 1e-12,
            DType::F32 => 1e-4,
            _ => 3e-2,
        };
        same(&format!("bmm {dt}"), ga.matmul(&gb), a.matmul(&b), tl);
        let (at, bt) = (
            a.transpose(1, 2).unwrap().contiguous_copy().unwrap(),
            b.transpose(1, 2).unwrap().contiguous_copy().unwrap(),
        );
        let (gat, gbt) = (at.to_device(GPU).unwrap(), bt.to_device(GPU).unwrap());
        same(
            &format!("bmm transposed operands {dt}"),
            gat.transpose(1, 2)
                .unwrap()
                .matmul(&gbt.transpose(1, 2).unwrap()),
            at.transpose(1, 2)
                .unwrap()
                .matmul(&bt.transpose(1, 2).unwrap()),
            tl,
        );
        // A broadcast batch and a stepped (compacted) operand.
        let m = random(&[29, 41], dt, &mut rng, false);
        same(
            &format!("broadcast batch {dt}"),
            ga.matmul(&m.to_device(GPU).unwrap()),
            a.matmul(&m),
            tl,
        );
        let big = random(&[58, 82], dt, &mut rng, false);
        let step = |t: &Tensor| {
            t.slice(0, None, None, 2)
                .unwrap()
                .slice(1, None, None, 2)
                .unwrap()
        };
        same(
            &format!("stepped {dt}"),
            ga.matmul(&step(&big.to_device(GPU).unwrap())),
            a.matmul(&step(&big)),
            tl,
        );
    }
    let i = Tensor::ones(&[2, 2], DType::I64)
        .unwrap()
        .to_device(GPU)
        .unwrap();
    let e = i.matmul(&i).unwrap_err();
    assert!(
        e.to_string()
            .contains("\"addmm_cuda\" not implemented for 'Long'"),
        "{e}"
    );
}

#[test]
fn indexing_matches() {
    if !gpu() {
        return;
    }
    let mut rng = Rng(8);
    let x = random(&[20, 15], DType::F32, &mut rng, false);
    let g = x.to_device(GPU).unwrap();
    let idx = Tensor::from_vec(vec![3i64, -1, 0, 3, 19], &[5]).unwrap();
    same(
        "index_select 0",
        g.index_select(0, &[3, -1, 0, 3, 19]),
        x.index_select(0, &[3, -1, 0, 3, 19]),
        0.0,
    );
    same(
        "index_select 1 of transposed",
        g.t().unwrap().index_select(1, &[2, 2, 7]),
        x.t().unwrap().index_select(1, &[2, 2, 7]),
        0.0,
    );
    same(
        "take",
        g.take(&idx.to_device(GPU).unwrap()),
        x.take(&idx),
        0.0,
    );
    let mask = x.gt(0.5).unwrap();
    same(
        "mask",
        g.masked_select(&mask.to_device(GPU).unwrap()),
        x.masked_select(&mask),
        0.0,
    );
    // index_put_ with repeated positions, accumulating and not.
    for acc in [false, true] {
        let (c, d) = (x.contiguous_copy().unwrap(), g.contiguous_copy().unwrap());
        let vals = random(&[5, 15], DType::F32, &mut rng, false);
        let put = |t: &Tensor, i: &Tensor, v: &Tensor| {
            let key = [TensorIndex::Tensor(Box::new(i.clone()))];
            if acc {
                t.index_put_accumulate_(&key, v).map(|_| t.clone())
            } else {
                t.index_put_(&key, v).map(|_| t.clone())
            }
        };
        let rc = put(&c, &idx, &vals);
        let rg = put(
            &d,
            &idx.to_device(GPU).unwrap(),
            &vals.to_device(GPU).unwrap(),
        );
        same(&format!("index_put_ accumulate={acc}"), rg, rc, 1e-6);
    }
    // t[mask] = 7: a host scalar into a GPU tensor.
    let seven = Tensor::scalar(7.0f32);
    let (c, d) = (x.contiguous_copy().unwrap(), g.contiguous_copy().unwrap());
    let key = |m: &Tensor| [TensorIndex::Tensor(Box::new(m.clone()))];
    c.index_put_(&key(&mask), &seven).unwrap();
    let rg = d
        .index_put_(&key(&mask.to_device(GPU).unwrap()), &seven)
        .cloned();
    same("t[mask] = scalar", rg, Ok(c), 0.0);
}

#[test]
fn copies_in_both_directions_keep_values_for_every_layout() {
    if !gpu() {
        return;
    }
    let mut rng = Rng(9);
    for dt in DTYPES {
        let base = random(&[6, 10], dt, &mut rng, true);
        for (name, view) in layouts() {
            let v = view(&base).unwrap();
            // Host view to the device (the device gathers the strided span).
            let g = v.to_device(GPU).unwrap();
            assert_close(&format!("to cuda {dt} {name}"), &g, &v, 0.0);
            // Device view back to the host.
            let gv = view(&base.to_device(GPU).unwrap()).unwrap();
            assert_close(
                &format!("to cpu {dt} {name}"),
                &gv.to_device(Device::Cpu).unwrap(),
                &v,
                0.0,
            );
            // copy_ across devices into strided destinations, with a cast.
            let dst = Tensor::zeros(&[10, 6], DType::F64).unwrap().t().unwrap();
            if v.shape() == [6, 10] {
                dst.copy_(&gv).unwrap();
                assert_close(
                    &format!("copy_ d2h {dt} {name}"),
                    &dst.to_dtype(dt).unwrap(),
                    &v,
                    0.0,
                );
                let gdst = Tensor::zeros(&[10, 6], DType::F64)
                    .unwrap()
                    .to_device(GPU)
                    .unwrap()
                    .t()
                    .unwrap();
                gdst.copy_(&v).unwrap();
                assert_close(
                    &format!("copy_ h2d {dt} {name}"),
                    &gdst.to_dtype(dt).unwrap(),
                    &v,
                    0.0,
                );
            }
        }
    }
}

#[test]
fn caching_allocator_reuses_blocks_and_empties() {
    if !gpu() {
        return;
    }
    let _g = common::serial();
    cuda::synchronize(None).unwrap();
    let before = cuda::memory_allocated(None).unwrap();
    {
        let _a = Tensor::zeros(&[1 << 20], DType::F32)
            .unwrap()
            .to_device(GPU)
            .unwrap();
        assert!(cuda::memory_allocated(None).unwrap() >= before + (4 << 20));
    }
    let reserved = cuda::memory_reserved(None).unwrap();
    for _ in 0..50 {
        let _a = Tensor::zeros_on(&[1 << 20], DType::F32, GPU).unwrap();
    }
    assert_eq!(
        cuda::memory_reserved(None).unwrap(),
        reserved,
        "a loop of same-sized tensors reuses one block"
    );
    assert_eq!(cuda::memory_allocated(None).unwrap(), before);
    cuda::empty_cache().unwrap();
    assert!(cuda::memory_reserved(None).unwrap() < reserved);
}

#[test]
fn streams_events_and_pinned_copies() {
    if !gpu() {
        return;
    }
    let s = cuda::Stream::new(None).unwrap();
    let host = Tensor::arange(0, 1 << 22, 1, DType::F32)
        .unwrap()
        .pin_memory()
        .unwrap();
    assert!(host.is_pinned());
    let start = cuda::Event::new(true).unwrap();
    let end = cuda::Event::new(true).unwrap();
    let out;
    {
        let _cur = s.make_current();
        start.record(None).unwrap();
        let g = host.to_device_with(GPU, true).unwrap();
        out = g.mul(2).unwrap().to_device_with(Device::Cpu, true).unwrap();
        end.record(None).unwrap();
    }
    s.synchronize().unwrap();
    assert!(s.query().unwrap());
    assert!(start.elapsed_time(&end).unwrap() > 0.0);
    assert!(out.is_pinned());
    let want = Tensor::arange(0, 1 << 22, 1, DType::F32)
        .unwrap()
        .mul(2)
        .unwrap();
    assert_close("pinned round trip", &out, &want, 0.0);
}

#[test]
fn host_views_of_gpu_tensors() {
    if !gpu() {
        return;
    }
    let x = Tensor::from_vec(vec![1.5f32, 2.0, -3.0], &[3])
        .unwrap()
        .to_device(GPU)
        .unwrap();
    assert_eq!(
        x.to_string(),
        "tensor([ 1.5000,  2.0000, -3.0000], device='cuda:0')"
    );
    assert_eq!(x.get::<f32>(&[2]).unwrap(), -3.0);
    x.set(&[0], 7).unwrap();
    assert_eq!(x.to_vec::<f32>().unwrap(), vec![7.0, 2.0, -3.0]);
    assert!(x.explain().unwrap().contains("cuda:0"));
}

/// `sort`/`argsort`/`topk`/`searchsorted` have no GPU loop yet: a Device error naming the
/// op and the device, never a wrong result.
#[test]
fn sorting_on_the_gpu_is_a_clear_error() {
    if !gpu() {
        return;
    }
    let x = Tensor::from_vec(vec![3.0f32, 1.0, 2.0], &[3])
        .unwrap()
        .to_device(Device::Cuda(0))
        .unwrap();
    for (op, e) in [
        ("sort", x.sort(0, false, false).map(|p| p.0).unwrap_err()),
        ("argsort", x.argsort(0, false, false).unwrap_err()),
        ("topk", x.topk(1, 0, true, true).map(|p| p.0).unwrap_err()),
        (
            "searchsorted",
            x.searchsorted(&x, false, false, None).unwrap_err(),
        ),
    ] {
        assert_eq!(e.kind(), ErrorKind::Device, "{op}: {e}");
        assert!(
            e.to_string().contains(op) && e.to_string().contains("cuda:0"),
            "{e}"
        );
    }
}
