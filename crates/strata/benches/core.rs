//! Core benchmarks, run by `make bench` (`cargo bench -p strata --bench core`).
//!
//! Plain `std::time::Instant`, no harness. Every figure is the median of several
//! repetitions:
//!
//! 1. the per-call cost of view ops (pure metadata work plus an `Arc` clone), in ns/call;
//! 2. `contiguous()` of a 4096x4096 f32 tensor that is transposed or flipped, beside a
//!    same-run baseline: `copy_from_slice` of the same bytes into a fresh `Vec` (a plain
//!    memcpy). Both sides allocate their destination inside the timed region, so both pay
//!    the same page faults.

use std::hint::black_box;
use std::time::Instant;

use strata::{s, DType, Error, Tensor};

/// Repetitions per measurement; the median is reported.
const REPS: usize = 7;
/// Calls per repetition for the view ops.
const VIEW_ITERS: u32 = 200_000;
/// Edge of the square matrix copied in part 2.
const N: usize = 4096;

/// A named view op to time.
type Case<'a> = (&'static str, Box<dyn FnMut() -> Result<Tensor, Error> + 'a>);

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Median ns per call of `f` over `REPS` runs of `VIEW_ITERS` calls (after a warm-up run).
fn per_call(mut f: impl FnMut() -> Result<Tensor, Error>) -> Result<f64, Error> {
    for _ in 0..VIEW_ITERS / 10 {
        black_box(f()?);
    }
    let mut samples = Vec::with_capacity(REPS);
    for _ in 0..REPS {
        let start = Instant::now();
        for _ in 0..VIEW_ITERS {
            black_box(f()?);
        }
        samples.push(start.elapsed().as_secs_f64() * 1e9 / f64::from(VIEW_ITERS));
    }
    Ok(median(samples))
}

/// Median seconds of `f` over `REPS` runs (after one warm-up run).
fn timed<T>(mut f: impl FnMut() -> Result<T, Error>) -> Result<f64, Error> {
    black_box(f()?);
    let mut samples = Vec::with_capacity(REPS);
    for _ in 0..REPS {
        let start = Instant::now();
        let out = f()?;
        let secs = start.elapsed().as_secs_f64();
        drop(black_box(out));
        samples.push(secs);
    }
    Ok(median(samples))
}

fn main() -> Result<(), Error> {
    let total = Instant::now();
    println!(
        "strata core benchmarks (median of {REPS} repetitions; threads available: {})",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );

    // ---------------------------------------------------------------- view ops
    let m = Tensor::zeros(&[64, 64], DType::F32)?;
    let cube = Tensor::zeros(&[8, 16, 32], DType::F32)?;
    let rows: [Case<'_>; 6] = [
        ("clone() (Arc clone, baseline)", Box::new(|| Ok(m.clone()))),
        (
            "t().slice(0, 1..3)  (two view ops)",
            Box::new(|| m.t()?.slice(0, Some(1), Some(3), 1)),
        ),
        ("view(&[16, 256])", Box::new(|| m.view(&[16, 256]))),
        (
            "permute(&[2, 0, 1])  (8x16x32 tensor)",
            Box::new(|| cube.permute(&[2, 0, 1])),
        ),
        (
            "index(&s![1..3, ..;-1])",
            Box::new(|| m.index(&s![1..3, ..;-1])),
        ),
        ("flip(&[0, 1])", Box::new(|| m.flip(&[0, 1]))),
    ];
    println!(
        "\n{:<40} {:>10}",
        "view op on a 64x64 f32 tensor", "ns/call"
    );
    for (name, mut f) in rows {
        let ns = per_call(&mut f)?;
        println!("{name:<40} {ns:>10.1}");
    }

    // ---------------------------------------------------------------- copies
    let numel = N * N;
    let bytes = numel * std::mem::size_of::<f32>();
    let x = Tensor::arange(0, numel as i64, 1, DType::F32)?.view(&[N as i64, N as i64])?;

    let memcpy = timed(|| {
        let src = x.read_slice::<f32>()?;
        let mut dst = vec![0.0f32; numel];
        dst.copy_from_slice(&src);
        Ok(dst)
    })?;

    // The same copy into a buffer reused across runs: no page faults, for reference.
    let mut reused = vec![0.0f32; numel];
    let memcpy_warm = timed(|| {
        let src = x.read_slice::<f32>()?;
        reused.copy_from_slice(&src);
        Ok(())
    })?;

    let xt = x.t()?;
    let f0 = x.flip(&[0])?;
    let f1 = x.flip(&[1])?;
    let cases: [(&str, &Tensor); 4] = [
        ("contiguous() of x.t()", &xt),
        ("contiguous() of x.flip(0)", &f0),
        ("contiguous() of x.flip(1)", &f1),
        ("contiguous_copy() of x (contiguous)", &x),
    ];

    println!(
        "\n{:<40} {:>10} {:>8} {:>10}",
        format!("copy of {N}x{N} f32 ({} MiB)", bytes >> 20),
        "ms",
        "GB/s",
        "vs memcpy"
    );
    let gbs = |secs: f64| bytes as f64 / secs / 1e9;
    println!(
        "{:<40} {:>10.2} {:>8.2} {:>10}",
        "memcpy (copy_from_slice, fresh Vec)",
        memcpy * 1e3,
        gbs(memcpy),
        "1.0x"
    );
    println!(
        "{:<40} {:>10.2} {:>8.2} {:>10}",
        "memcpy into a reused Vec (no faults)",
        memcpy_warm * 1e3,
        gbs(memcpy_warm),
        format!("{:.1}x", memcpy_warm / memcpy)
    );
    for (name, t) in cases {
        let secs = if name.starts_with("contiguous_copy") {
            timed(|| t.contiguous_copy())?
        } else {
            timed(|| t.contiguous())?
        };
        println!(
            "{:<40} {:>10.2} {:>8.2} {:>10}",
            name,
            secs * 1e3,
            gbs(secs),
            format!("{:.1}x", secs / memcpy)
        );
    }

    // The copies must be right for the timings to mean anything.
    let c = xt.contiguous()?;
    assert!(!c.same_storage(&x) && c.is_contiguous());
    assert_eq!(c.get::<f32>(&[0, 1])?, N as f32);
    assert_eq!(c.get::<f32>(&[N - 1, 2])?, (2 * N + N - 1) as f32);
    let c = f1.contiguous()?;
    assert_eq!(c.get::<f32>(&[0, 0])?, (N - 1) as f32);
    let c = f0.contiguous()?;
    assert_eq!(c.get::<f32>(&[0, 0])?, ((N - 1) * N) as f32);

    println!("\nGB/s counts the {bytes} bytes copied once (read + write is twice that traffic).");
    println!("total {:.1} s", total.elapsed().as_secs_f64());
    Ok(())
}
