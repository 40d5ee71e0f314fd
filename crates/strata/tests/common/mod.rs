//! Helpers shared by the integration tests (each test file that needs them says
//! `mod common;`): temp paths, a seeded RNG, row-major index arithmetic, element values as
//! f64, a per-binary test lock, reruns per CPU level; view-op cases in [`view_ops`].

#![allow(dead_code)]

pub mod view_ops;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use strata::{DType, Tensor};

/// A fresh path in the temp dir, removed when the guard drops.
pub struct TmpPath(pub PathBuf);

impl Drop for TmpPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A fresh path `strata-<tag>-<pid>-<n>.<ext>` in the temp dir (unique per process and
/// call, so test threads and concurrent test binaries never share one).
pub fn tmp_path(tag: &str, ext: &str) -> TmpPath {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    TmpPath(std::env::temp_dir().join(format!("strata-{tag}-{}-{n}.{ext}", std::process::id())))
}

/// SplitMix64: a cheap, seedable generator for test data (the same seed gives the same
/// values on every run and machine).
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A value in `0..n` (0 when `n` is 0).
    pub fn index(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// A value in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }

    /// True with probability `num/den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.next() % den < num
    }

    /// A float in `[0, 1)` (53 random bits).
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The element count of `shape`.
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// Row-major coordinates of flat position `flat` in `shape` (all sizes ≥ 1).
pub fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut c = vec![0; shape.len()];
    for k in (0..shape.len()).rev() {
        c[k] = flat % shape[k];
        flat /= shape[k];
    }
    c
}

/// The row-major flat position of coordinates `c` in `shape` (inverse of [`unravel`]).
pub fn ravel(c: &[usize], shape: &[usize]) -> usize {
    c.iter().zip(shape).fold(0, |acc, (&i, &n)| acc * n + i)
}

/// Element values as f64, in row-major order (every dtype).
pub fn values_f64(t: &Tensor) -> Vec<f64> {
    t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()
}

/// A lock for tests that must not overlap within one test binary (they count process-wide
/// resources: open fds, /dev/shm names, the block cache). Cargo runs a binary's tests on
/// parallel threads; a test that panicked while holding it does not poison the others.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The CPU levels this machine has (`Level::ALL` up to the detected one).
pub fn levels() -> Vec<strata::kernel::cpu::Level> {
    strata::kernel::cpu::Level::ALL
        .into_iter()
        .filter(|&l| l <= strata::kernel::cpu::detected())
        .collect()
}

/// True in a child run of [`rerun_at`] (`STRATA_CPU` set): the rerunning test returns.
pub fn is_child_run() -> bool {
    std::env::var_os("STRATA_CPU").is_some()
}

/// Reruns tests of this test binary in a child process with `STRATA_CPU` capped at
/// `level` (the level is chosen once per process): `tests` by exact name, each of which
/// must run and pass, or, with no names, every test but `skip` (the rerunning one).
pub fn rerun_at(level: strata::kernel::cpu::Level, tests: &[&str], skip: &str) {
    let exe = std::env::current_exe().unwrap();
    let run = |args: &[&str], what: &str| {
        let out = std::process::Command::new(&exe)
            .args(args)
            .env("STRATA_CPU", level.name())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{what} at STRATA_CPU={}:\n{stdout}\n{}",
            level.name(),
            String::from_utf8_lossy(&out.stderr)
        );
        stdout.into_owned()
    };
    if tests.is_empty() {
        run(&["--skip", skip, "--test-threads", "2"], "the tests");
    }
    for test in tests {
        let stdout = run(&["--exact", test, "--test-threads", "1"], test);
        assert!(
            stdout.contains("1 passed"),
            "{test} at {level:?} did not run"
        );
    }
}
