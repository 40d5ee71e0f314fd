//! Engine benchmarks: each case beside a same-run baseline (a memcpy of the same bytes
//! into a pre-faulted buffer, or a plain read of them), single-threaded and with all
//! threads. Run with `make bench` (or `cargo bench -p strata --bench engine`).
//!
//! Output: one line per case with the median time, GB/s of bytes moved, and the ratio to
//! its baseline (lower is better for ratios against memcpy).
//!
//! # Tuning notes
//!
//! The measurements behind the engine's constants (`crates/strata/src/kernel/engine.rs`),
//! kept here rather than in the code's comments; rerun the cases above to check them on a
//! new machine.
//! - `PAR_MIN` (2^18 elements): handing work to rayon's sleeping workers and waiting cost
//!   about 25 µs on the 2-core machine of the README's tables, as long as adding two f32
//!   vectors of ~250K elements on one thread; at 64K elements two threads took 34 µs
//!   where one took 9. A 64K-element f16 multiply takes ~330 µs on one thread (hence
//!   `GRAIN` for f16/bf16 operands).
//! - `TILE_BYTES` × `TILE_ROWS` (512 B × 256): on 8192² f32 transposes, 1 thread, a Xeon
//!   with AVX-512 (48 KiB L1d, 2 MiB L2), ~104 ms against ~230 for one line (64 B) × 256;
//!   64⁴ f64 permute(3,2,1,0) 51-57 ms against 80; 256 and 1024 bytes were between. (On
//!   the AVX2 host where it was first tuned, 256 × one line had beaten 64 × 64 by 2×.)
//! - Note [staged tiles] (2 KiB × 256): 8192² f32 `a + b.T`, 1 thread, same Xeon, against
//!   a same-run `a + b` of ~48 ms: 512 B × 256 rows ~150-190 ms; 2 KiB × 256 ~108 ms;
//!   2 KiB or 4 KiB × 512 ~104-110 ms; 16 whole rows ~150 ms. Staging by bands of two
//!   line-wide blocks (`x86::wide`) took 512 × 512 tiles from ~184 to ~108 ms.
//! - Note [streaming tiles] (128 B × 1024, non-temporal): 8192² f32 transpose, 1 thread,
//!   same Xeon (same-run memcpy ~20.5 ms): 32 output elements × 1024 rows streamed ~26 ms;
//!   64 × 1024 ~48 ms; 128 × 256 (the cached tile) ~72 ms streamed and 83-137 ms not;
//!   16-byte SSE blocks streamed ~45 ms. Streaming 2-byte elements measured slower.
//! - Short output rows taken whole: NCHW ↔ NHWC with 64 channels went from ~2.7× a memcpy
//!   to ~1.5-2×.
//! - Block cache, `ZEROED_FROM_CACHE` (`storage/alloc.rs`): serving zeroed requests above
//!   glibc's mmap threshold from the cache made a (1M, 2) f32 `sum(-1)` (4 MiB zeroed
//!   output) go from 0.63 to 1.42 ms, hence the limit.

use std::hint::black_box;
use std::time::Instant;

use rayon::prelude::*;
use strata::{DType, Tensor};

fn median(reps: usize, mut f: impl FnMut()) -> f64 {
    f(); // warm up (and fault in any fresh pages once)
    let mut v: Vec<f64> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[reps / 2]
}

struct Row {
    name: String,
    secs: f64,
    bytes: usize,
    base: f64,
    base_name: &'static str,
}

fn print(rows: &[Row], threads: usize) {
    println!("\n## {threads} thread(s)\n");
    println!(
        "| case | time (ms) | GB/s | baseline | baseline (ms) | ratio |\n|---|---:|---:|---|---:|---:|"
    );
    for r in rows {
        println!(
            "| {} | {:.2} | {:.1} | {} | {:.2} | {:.2}× |",
            r.name,
            r.secs * 1e3,
            r.bytes as f64 / r.secs / 1e9,
            r.base_name,
            r.base * 1e3,
            r.secs / r.base
        );
    }
}

/// Block size for splitting the baselines across the pool's threads.
const BLOCK: usize = 1 << 20;

/// Time to copy `bytes` between two pre-faulted buffers on every thread of the current
/// pool, like the op it is compared with: the faster of memcpy per 1 MiB block and one
/// memcpy per thread (the C library's large copies skip reading the destination into
/// cache, which halves a 256 MiB copy's time on some machines).
fn memcpy_time(bytes: usize) -> f64 {
    let src = vec![1u8; bytes];
    let mut dst = vec![0u8; bytes];
    let blocks = median(7, || {
        dst.par_chunks_mut(BLOCK)
            .zip(black_box(&src).par_chunks(BLOCK))
            .for_each(|(d, s)| d.copy_from_slice(s));
        black_box(&mut dst);
    });
    let per = bytes.div_ceil(rayon::current_num_threads()).max(1);
    let whole = median(7, || {
        dst.par_chunks_mut(per)
            .zip(black_box(&src).par_chunks(per))
            .for_each(|(d, s)| d.copy_from_slice(s));
        black_box(&mut dst);
    });
    blocks.min(whole)
}

/// Time to read `bytes` (f32 sums with 8 accumulators, which stream at bandwidth).
fn read_time(bytes: usize) -> f64 {
    let src = vec![1.0f32; bytes / 4];
    median(7, || {
        let total: f32 = black_box(&src)
            .par_chunks(BLOCK / 4)
            .map(|b| {
                let mut acc = [0f32; 8];
                for c in b.chunks_exact(8) {
                    for k in 0..8 {
                        acc[k] += c[k];
                    }
                }
                acc.iter().sum::<f32>()
            })
            .sum();
        black_box(total);
    })
}

fn copy_case(rows: &mut Vec<Row>, name: &str, src: &Tensor) -> strata::Result<()> {
    let dst = Tensor::zeros(src.shape(), src.dtype())?;
    dst.fill_(1)?; // fault the pages in
    let bytes = src.numel() * src.dtype().itemsize();
    let secs = median(7, || {
        dst.copy_(black_box(src)).unwrap_or_else(|e| panic!("{e}"));
    });
    rows.push(Row {
        name: name.into(),
        secs,
        bytes: 2 * bytes,
        base: memcpy_time(bytes),
        base_name: "memcpy",
    });
    Ok(())
}

fn suite(threads: usize) -> strata::Result<Vec<Row>> {
    let mut rows = Vec::new();
    let n = 8192;
    let a = Tensor::rand(&[n, n], DType::F32, 1)?;
    copy_case(&mut rows, "8192² transpose → contiguous", &a.t()?)?;
    let x = Tensor::rand(&[8, 2048, 256], DType::F32, 2)?;
    copy_case(
        &mut rows,
        "(8,2048,256) → (8,256,2048)",
        &x.permute(&[0, 2, 1])?,
    )?;
    let nchw = Tensor::rand(&[32, 64, 56, 56], DType::F32, 3)?;
    copy_case(
        &mut rows,
        "NCHW → NHWC (32,64,56,56)",
        &nchw.permute(&[0, 2, 3, 1])?,
    )?;
    let nhwc = nchw.permute(&[0, 2, 3, 1])?.contiguous()?;
    copy_case(&mut rows, "NHWC → NCHW", &nhwc.permute(&[0, 3, 1, 2])?)?;
    let q = Tensor::rand(&[64, 64, 64, 64], DType::F64, 4)?;
    copy_case(
        &mut rows,
        "64⁴ f64 permute (3,2,1,0)",
        &q.permute(&[3, 2, 1, 0])?,
    )?;
    copy_case(&mut rows, "8192² flip(0) → contiguous", &a.flip(&[0])?)?;
    copy_case(&mut rows, "8192² flip(1) → contiguous", &a.flip(&[1])?)?;
    copy_case(
        &mut rows,
        "8192² [::2, ::2] → contiguous",
        &a.slice(0, None, None, 2)?.slice(1, None, None, 2)?,
    )?;

    // Elementwise: a + b.T against the same-run contiguous a + b.
    let b = Tensor::rand(&[n, n], DType::F32, 5)?;
    let bytes = 3 * n * n * 4;
    let add = median(5, || {
        black_box(a.add(black_box(&b)).unwrap_or_else(|e| panic!("{e}")));
    });
    let copy3 = memcpy_time(n * n * 4) * 1.5;
    rows.push(Row {
        name: "8192² a + b (contiguous)".into(),
        secs: add,
        bytes,
        base: copy3,
        base_name: "1.5× memcpy",
    });
    let bt = b.t()?;
    let add_t = median(5, || {
        black_box(a.add(black_box(&bt)).unwrap_or_else(|e| panic!("{e}")));
    });
    rows.push(Row {
        name: "8192² a + b.T".into(),
        secs: add_t,
        bytes,
        base: add,
        base_name: "a + b",
    });
    let col = Tensor::rand(&[n, 1], DType::F32, 6)?;
    let row = Tensor::rand(&[1, n], DType::F32, 7)?;
    let bc = median(5, || {
        black_box(col.add(black_box(&row)).unwrap_or_else(|e| panic!("{e}")));
    });
    rows.push(Row {
        name: "(8192,1) + (1,8192)".into(),
        secs: bc,
        bytes: n * n * 4,
        base: memcpy_time(n * n * 4),
        base_name: "memcpy",
    });

    // Reductions against a same-run read of the same bytes.
    let read = read_time(n * n * 4);
    for (name, dim) in [("8192² sum(dim=0)", 0i64), ("8192² sum(dim=1)", 1)] {
        let secs = median(5, || {
            black_box(a.sum(&[dim], false).unwrap_or_else(|e| panic!("{e}")));
        });
        rows.push(Row {
            name: name.into(),
            secs,
            bytes: n * n * 4,
            base: read,
            base_name: "read",
        });
    }
    let pairs = Tensor::rand(&[1_000_000, 2], DType::F32, 8)?;
    let secs = median(7, || {
        black_box(pairs.sum(&[-1], false).unwrap_or_else(|e| panic!("{e}")));
    });
    rows.push(Row {
        name: "(1M,2).sum(-1)".into(),
        secs,
        bytes: 8_000_000,
        base: read_time(8_000_000),
        base_name: "read",
    });

    // Matmul 2048² f32: strided operands against the plain product.
    let m = 2048;
    let ma = Tensor::rand(&[m, m], DType::F32, 9)?;
    let mb = Tensor::rand(&[m, m], DType::F32, 10)?;
    let flops = 2.0 * (m as f64).powi(3);
    let mm = median(3, || {
        black_box(ma.matmul(black_box(&mb)).unwrap_or_else(|e| panic!("{e}")));
    });
    println!(
        "[{threads} thread(s)] matmul 2048² f32 A @ B: {:.1} ms = {:.1} GFLOP/s",
        mm * 1e3,
        flops / mm / 1e9
    );
    let mbt = mb.t()?;
    let secs = median(3, || {
        black_box(ma.matmul(black_box(&mbt)).unwrap_or_else(|e| panic!("{e}")));
    });
    rows.push(Row {
        name: "matmul 2048² A @ B.T".into(),
        secs,
        bytes: 3 * m * m * 4,
        base: mm,
        base_name: "A @ B",
    });
    let mar = ma.flip(&[0])?;
    let secs = median(3, || {
        black_box(mar.matmul(black_box(&mb)).unwrap_or_else(|e| panic!("{e}")));
    });
    rows.push(Row {
        name: "matmul 2048² A[::-1] @ B".into(),
        secs,
        bytes: 3 * m * m * 4,
        base: mm,
        base_name: "A @ B",
    });
    Ok(rows)
}

fn main() -> strata::Result<()> {
    println!(
        "# strata engine benchmarks ({} logical CPUs)",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let max = rayon::current_num_threads();
    let mut counts = vec![1];
    if max > 1 {
        counts.push(max);
    }
    for t in counts {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build()
            .map_err(|e| strata::Error::Resource {
                op: "bench",
                msg: e.to_string(),
            })?;
        let rows = pool.install(|| suite(t))?;
        print(&rows, t);
    }
    Ok(())
}
