//! Scratch timing harness for reductions (not to be committed).
//!
//! Each case runs interleaved with its baseline (a plain 8-accumulator read of the same
//! bytes, or for scans a fresh contiguous copy), and the median of per-pair ratios is
//! reported, so machine noise hits both alike.
use std::hint::black_box;
use std::time::Instant;

use rayon::prelude::*;
use strata::{DType, Tensor};

fn paired(base: &dyn Fn(), case: &dyn Fn()) -> (f64, f64, f64) {
    base();
    case();
    let (mut tb, mut tc, mut r) = (vec![], vec![], vec![]);
    for _ in 0..9 {
        let t = Instant::now();
        base();
        let b = t.elapsed().as_secs_f64();
        let t = Instant::now();
        case();
        let c = t.elapsed().as_secs_f64();
        tb.push(b);
        tc.push(c);
        r.push(c / b);
    }
    for v in [&mut tb, &mut tc, &mut r] {
        v.sort_by(f64::total_cmp);
    }
    (tb[4], tc[4], r[4])
}

fn read8(x: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    for c in x.chunks_exact(8) {
        for k in 0..8 {
            acc[k] += c[k];
        }
    }
    acc.iter().sum()
}

fn main() {
    let only: Vec<String> = std::env::args().skip(1).collect();
    let want = |s: &str| only.is_empty() || only.iter().any(|o| s.contains(o.as_str()));
    let n = 8192;
    let a = Tensor::rand(&[n, n], DType::F32, 0).unwrap();
    for th in [1usize, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(th)
            .build()
            .unwrap();
        pool.install(|| {
            let read_base = || {
                let g = a.read_slice::<f32>().unwrap();
                if th == 1 {
                    black_box(read8(&g));
                } else {
                    let s: f32 = g.par_chunks(1 << 20).map(read8).sum();
                    black_box(s);
                }
            };
            let copy_base = || {
                black_box(a.contiguous_copy().unwrap());
            };
            println!("threads {th}:");
            let case = |name: &str, f: &dyn Fn()| {
                if !want(name) {
                    return;
                }
                let copy = name.starts_with("cumsum");
                let (tb, tc, r) = if copy {
                    paired(&copy_base, f)
                } else {
                    paired(&read_base, f)
                };
                println!(
                    "  {name:<24} {:8.2} ms  vs {} {:6.2} ms  ratio {:.2}",
                    tc * 1e3,
                    if copy { "copy" } else { "read" },
                    tb * 1e3,
                    r
                );
            };
            let at = a.t().unwrap();
            let tall = a.view(&[(n * n / 2) as i64, 2]).unwrap();
            let small = tall.narrow(0, 0, 1_000_000).unwrap();
            let r4 = a.view(&[(n * n / 4) as i64, 4]).unwrap();
            let r3 = a.narrow(1, 0, 8190).unwrap().reshape(&[-1, 3]).unwrap();
            case("sum dim1", &|| {
                black_box(a.sum(&[1], false).unwrap());
            });
            case("sum dim0", &|| {
                black_box(a.sum(&[0], false).unwrap());
            });
            case("sum all", &|| {
                black_box(a.sum(&[], false).unwrap());
            });
            case("sum T dim1", &|| {
                black_box(at.sum(&[1], false).unwrap());
            });
            case("(33M,2).sum(-1)", &|| {
                black_box(tall.sum(&[-1], false).unwrap());
            });
            case("(1e6,2).sum(-1)", &|| {
                black_box(small.sum(&[-1], false).unwrap());
            });
            case("(16M,4).sum(0)", &|| {
                black_box(r4.sum(&[0], false).unwrap());
            });
            case("(22M,3).sum(0)", &|| {
                black_box(r3.sum(&[0], false).unwrap());
            });
            case("amax dim1", &|| {
                black_box(a.amax(&[1], false).unwrap());
            });
            case("amax dim0", &|| {
                black_box(a.amax(&[0], false).unwrap());
            });
            case("mean all", &|| {
                black_box(a.mean(&[], false).unwrap());
            });
            case("argmax dim1", &|| {
                black_box(a.argmax(Some(1), false).unwrap());
            });
            case("argmax dim0", &|| {
                black_box(a.argmax(Some(0), false).unwrap());
            });
            case("argmax all", &|| {
                black_box(a.argmax(None, false).unwrap());
            });
            case("var dim1", &|| {
                black_box(a.var(&[1], false).unwrap());
            });
            case("logsumexp dim1", &|| {
                black_box(a.logsumexp(&[1], false).unwrap());
            });
            case("cumsum dim1", &|| {
                black_box(a.cumsum(1).unwrap());
            });
            case("cumsum dim0", &|| {
                black_box(a.cumsum(0).unwrap());
            });
        });
    }
}
