//! The association of float sums, bit for bit, against an index model.
//!
//! A float sum's result depends on the order of its additions; strata fixes that order
//! by the geometry alone (`kernel/reduce/run.rs`, `kernel/reduce/wide_leaf.rs`), so a
//! sum is the same on every machine, at every CPU level and for every thread count. The
//! model below restates that order from the documentation, with scalar additions only:
//!
//! - a run is halved at `n / 2 / 16 · 16` until a piece fits a leaf; the halves' results
//!   (16 lanes each) are combined lane by lane, left + right;
//! - a contiguous run longer than 256 elements has *wide* leaves: up to `sets · 16 · 16`
//!   elements (8 sets for a 4-byte accumulator, 4 for an 8-byte one), element `i` of the
//!   leaf added in order to lane `i % 16` of set `(i / 16) % sets`; the sets are then
//!   combined (`s + sets/2`, ... down to set 0 + set 1);
//! - a shorter run is one plain leaf: element `i` into lane `i % 16` of one of two sets,
//!   by whether `i / 16` is even (for a 4-byte accumulator; one set for 8 bytes), the
//!   second set added into the first, then the elements past the last full 16 into
//!   lanes `0, 1, ...`;
//! - the 16 lanes are folded `k + 8`, `k + 4`, `k + 2`, `k + 1`.
//!
//! The test compares `sum` with the model for `float32` (and `float16`/`bfloat16`
//! inputs, accumulated in `float32`) and `float64`, at lengths around every boundary,
//! at every CPU level this machine has (a child process per level) and with one and
//! two threads.

mod common;

use half::{bf16, f16};
use strata::{DType, Tensor};

const LANES: usize = 16;

/// The float accumulator the model adds in.
trait Acc: Copy + std::ops::Add<Output = Self> + PartialEq + std::fmt::Debug {
    const ZERO: Self;
    fn bits(self) -> u64;
}
impl Acc for f32 {
    const ZERO: Self = 0.0;
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
}
impl Acc for f64 {
    const ZERO: Self = 0.0;
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

/// A plain leaf; `two`: the two sets of the contiguous loop for narrow accumulators
/// (half inputs, widened a block at a time, and strided runs use one).
fn plain_leaf<A: Acc>(x: &[A], two: bool) -> [A; LANES] {
    let mut acc = [A::ZERO; LANES];
    let mut acc2 = [A::ZERO; LANES];
    let full = x.len() / LANES;
    for c in 0..full {
        let set = if two && c % 2 == 1 {
            &mut acc2
        } else {
            &mut acc
        };
        for k in 0..LANES {
            set[k] = set[k] + x[c * LANES + k];
        }
    }
    for k in 0..LANES {
        acc[k] = acc[k] + acc2[k];
    }
    for (k, i) in (full * LANES..x.len()).enumerate() {
        acc[k] = acc[k] + x[i];
    }
    acc
}

fn wide_leaf<A: Acc>(x: &[A]) -> [A; LANES] {
    let sets = if size_of::<A>() <= 4 { 8 } else { 4 };
    let mut acc = vec![[A::ZERO; LANES]; sets];
    for (i, &v) in x.iter().enumerate() {
        let (j, k) = ((i / LANES) % sets, i % LANES);
        acc[j][k] = acc[j][k] + v;
    }
    let mut w = sets / 2;
    while w >= 1 {
        for j in 0..w {
            for k in 0..LANES {
                acc[j][k] = acc[j][k] + acc[j + w][k];
            }
        }
        w /= 2;
    }
    acc[0]
}

/// How a run is folded.
#[derive(Clone, Copy)]
enum Run {
    /// Contiguous, of a 4- or 8-byte input.
    Contiguous,
    /// Contiguous half-precision input (plain leaves widened a block at a time).
    ContiguousHalf,
    /// With a step.
    Strided,
}

fn tree<A: Acc>(x: &[A], run: Run, wide: bool) -> [A; LANES] {
    let sets = if size_of::<A>() <= 4 { 8 } else { 4 };
    let leaf = if wide { sets * LANES * 16 } else { 256 };
    if x.len() <= leaf {
        let two = matches!(run, Run::Contiguous) && size_of::<A>() <= 4;
        return if wide {
            wide_leaf(x)
        } else {
            plain_leaf(x, two)
        };
    }
    let h = x.len() / 2 / LANES * LANES;
    let mut a = tree(&x[..h], run, wide);
    let b = tree(&x[h..], run, wide);
    for k in 0..LANES {
        a[k] = a[k] + b[k];
    }
    a
}

/// The modelled sum of a run.
fn model<A: Acc>(x: &[A], run: Run) -> A {
    let wide = !matches!(run, Run::Strided) && x.len() > 256;
    let mut acc = tree(x, run, wide);
    let mut w = LANES / 2;
    while w >= 1 {
        for k in 0..w {
            acc[k] = acc[k] + acc[k + w];
        }
        w /= 2;
    }
    acc[0]
}

/// Lengths around the plain leaf (256), the wide leaves (1024, 2048), their rows (64,
/// 128), the single-thread tree (65536) and the split across threads.
const LENGTHS: [usize; 22] = [
    0,
    1,
    17,
    255,
    256,
    257,
    300,
    1023,
    1024,
    1025,
    1100,
    2047,
    2048,
    2049,
    2063,
    4096,
    5000,
    65_535,
    65_536,
    65_537,
    200_003,
    1 << 20,
];

/// Values with full `f32` mantissas of mixed signs and magnitudes (so any other order
/// of additions rounds differently).
fn data(n: usize) -> Vec<f64> {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let u = (s >> 11) as f64 / (1u64 << 53) as f64;
            (u - 0.3) * (1.0 + (s % 7) as f64 * 100.0)
        })
        .collect()
}

#[test]
fn sums_follow_the_modelled_association() {
    for n in LENGTHS {
        let v = data(n);
        let f32s: Vec<f32> = v.iter().map(|&x| x as f32).collect();
        let t = Tensor::from_vec(f32s.clone(), &[n]).unwrap();
        let got = t.sum(&[], false).unwrap().to_vec::<f32>().unwrap()[0];
        let want = model(&f32s, Run::Contiguous);
        assert_eq!(
            got.to_bits(),
            want.to_bits(),
            "float32 n={n}: {got} vs {want}"
        );
        // The mean divides the same sum (in float64, rounded to float32).
        let mean = t.mean(&[], false).unwrap().to_vec::<f32>().unwrap()[0];
        if n > 0 {
            assert_eq!(mean, (want as f64 / n as f64) as f32, "float32 mean n={n}");
        }

        let t = Tensor::from_vec(v.clone(), &[n]).unwrap();
        let got = t.sum(&[], false).unwrap().to_vec::<f64>().unwrap()[0];
        let want = model(&v, Run::Contiguous);
        assert_eq!(
            got.to_bits(),
            want.to_bits(),
            "float64 n={n}: {got} vs {want}"
        );

        // Half inputs widen exactly and add in float32; the result rounds once.
        for dt in [DType::F16, DType::BF16] {
            let t = Tensor::from_vec(f32s.clone(), &[n])
                .unwrap()
                .to_dtype(dt)
                .unwrap();
            let wide = t.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap();
            let want = model(&wide, Run::ContiguousHalf);
            let s = t.sum(&[], false).unwrap();
            let (got, want) = if dt == DType::F16 {
                let g = s.to_vec::<f16>().unwrap()[0];
                (g.to_bits(), f16::from_f32(want).to_bits())
            } else {
                let g = s.to_vec::<bf16>().unwrap()[0];
                (g.to_bits(), bf16::from_f32(want).to_bits())
            };
            assert_eq!(got, want, "{dt} n={n}");
        }
    }
}

#[test]
fn strided_runs_keep_plain_leaves() {
    // A run with a step is folded in plain leaves at every length.
    for n in [300usize, 2049, 70_001] {
        let v: Vec<f32> = data(2 * n).iter().map(|&x| x as f32).collect();
        let t = Tensor::from_vec(v.clone(), &[2 * n]).unwrap();
        let s = t.slice(0, None, None, 2).unwrap();
        let got = s.sum(&[], false).unwrap().to_vec::<f32>().unwrap()[0];
        let every_other: Vec<f32> = v.iter().step_by(2).copied().collect();
        let want = model(&every_other, Run::Strided);
        assert_eq!(got.to_bits(), want.to_bits(), "x[::2] n={n}");
    }
}

#[test]
fn pools_agree_bit_for_bit() {
    let v: Vec<f32> = data(1 << 20).iter().map(|&x| x as f32).collect();
    let want = model(&v, Run::Contiguous).bits();
    for threads in [1, 2, 3] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let got = pool.install(|| {
            let t = Tensor::from_vec(v.clone(), &[v.len()]).unwrap();
            t.sum(&[], false).unwrap().to_vec::<f32>().unwrap()[0]
        });
        assert_eq!(got.to_bits() as u64, want, "{threads} threads");
    }
}

#[test]
fn every_cpu_level_gives_the_model() {
    if common::is_child_run() {
        return;
    }
    for level in common::levels() {
        common::rerun_at(
            level,
            &[
                "sums_follow_the_modelled_association",
                "strided_runs_keep_plain_leaves",
            ],
            "",
        );
    }
}
