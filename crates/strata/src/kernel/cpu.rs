//! The instruction-set level the CPU kernels run at, chosen once per process at runtime.
//!
//! A build never assumes the build machine's CPU: the crate is compiled for the x86-64
//! baseline, and each vector kernel is compiled a second and third time inside functions
//! with `#[target_feature(enable = …)]` (`"avx2,fma,f16c"` and
//! `"avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c"`: the features of [`Level`]). Which
//! copy runs is decided here, from what the CPU reports, capped by the `STRATA_CPU`
//! environment variable (`portable`, `avx2` or `avx512`; read once, at the first kernel
//! that asks). The cap lets the benchmark and the tests exercise every path on one
//! machine: `STRATA_CPU=avx2` on an AVX-512 machine runs the AVX2 copies.
//!
//! Every level computes the same results, with two exceptions: the kernels are the same
//! Rust code compiled for wider registers, and the math functions (`kernel/vector_math/`)
//! use no fused multiply-add, so no level rounds differently. The exceptions are the
//! AVX-512 math kernels of `kernel/vector_math/avx512_f32.rs` and `avx512_f64.rs` (within
//! the same error bounds, other bits) and the small-matrix products' fused multiply-adds
//! at AVX2 and AVX-512 (`kernel/matmul.rs`).

use std::sync::atomic::{AtomicU8, Ordering};

/// An instruction-set level, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// The architecture's baseline (SSE2 on x86-64; every other architecture).
    Portable,
    /// x86-64 with AVX2, FMA and F16C (Haswell, Zen and later).
    Avx2,
    /// x86-64 with AVX-512 F/BW/DQ/VL on top of the AVX2 level (Skylake-X, Zen 4 and later).
    Avx512,
}

impl Level {
    /// The name `STRATA_CPU` takes for this level.
    pub fn name(self) -> &'static str {
        match self {
            Level::Portable => "portable",
            Level::Avx2 => "avx2",
            Level::Avx512 => "avx512",
        }
    }

    /// Every level, lowest first.
    pub const ALL: [Level; 3] = [Level::Portable, Level::Avx2, Level::Avx512];

    /// The level a `STRATA_CPU` value names.
    ///
    /// # Errors
    /// A value that names no level, as a message naming the variable and the value.
    pub fn parse(s: &str) -> Result<Level, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "portable" | "baseline" | "scalar" => Ok(Level::Portable),
            "avx2" => Ok(Level::Avx2),
            "avx512" | "avx-512" => Ok(Level::Avx512),
            _ => Err(format!(
                "STRATA_CPU={s:?} names no instruction-set level (expected portable, avx2 or avx512)"
            )),
        }
    }

    fn code(self) -> u8 {
        self as u8 + 1
    }

    fn from_code(c: u8) -> Level {
        match c {
            1 => Level::Portable,
            2 => Level::Avx2,
            _ => Level::Avx512,
        }
    }
}

/// The highest level this CPU supports, whatever `STRATA_CPU` says.
pub fn detected() -> Level {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        let avx2 = has!("avx2") && has!("fma") && has!("f16c");
        let avx512 =
            avx2 && has!("avx512f") && has!("avx512bw") && has!("avx512dq") && has!("avx512vl");
        if avx512 {
            Level::Avx512
        } else if avx2 {
            Level::Avx2
        } else {
            Level::Portable
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Level::Portable
    }
}

/// Cached [`avx512_bf16`]: 0 until first computed, then 1 (no) or 2 (yes).
static BF16: AtomicU8 = AtomicU8::new(0);

/// Whether the CPU has AVX512_BF16 beside the AVX-512 level (Zen 4, Sapphire Rapids; not
/// Skylake-X or Ice Lake): its `vcvtne2ps2bf16` rounds thirty-two float32 to bfloat16 in
/// one instruction (`half_convert::narrow_bf16_native`). Independent of `STRATA_CPU`:
/// the kernels use it only when they run at [`Level::Avx512`].
#[inline]
pub fn avx512_bf16() -> bool {
    let c = BF16.load(Ordering::Relaxed);
    if c != 0 {
        return c == 2;
    }
    #[cfg(target_arch = "x86_64")]
    let yes = detected() == Level::Avx512 && std::arch::is_x86_feature_detected!("avx512bf16");
    #[cfg(not(target_arch = "x86_64"))]
    let yes = false;
    BF16.store(if yes { 2 } else { 1 }, Ordering::Relaxed);
    yes
}

/// The cap `STRATA_CPU` sets: `Ok(None)` when unset or empty.
///
/// # Errors
/// A value that names no level (see [`Level::parse`]). The Python package checks this at
/// import and raises; the kernels themselves ignore a bad value (they run at the
/// detected level) rather than fail mid-op.
pub fn env_cap() -> Result<Option<Level>, String> {
    match std::env::var("STRATA_CPU") {
        Ok(v) if !v.trim().is_empty() => Level::parse(&v).map(Some),
        _ => Ok(None),
    }
}

/// Cached [`level`]: 0 until first computed.
static LEVEL: AtomicU8 = AtomicU8::new(0);

/// The level the kernels run at: [`detected`], capped by `STRATA_CPU` (computed once).
#[inline]
pub fn level() -> Level {
    let c = LEVEL.load(Ordering::Relaxed);
    if c != 0 {
        return Level::from_code(c);
    }
    let l = match env_cap() {
        Ok(Some(cap)) => detected().min(cap),
        _ => detected(),
    };
    LEVEL.store(l.code(), Ordering::Relaxed);
    l
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_bad_names_are_refused() {
        for l in Level::ALL {
            assert_eq!(Level::parse(l.name()), Ok(l));
        }
        assert_eq!(Level::parse(" AVX2 "), Ok(Level::Avx2));
        let e = Level::parse("sse9").unwrap_err();
        assert!(e.contains("STRATA_CPU") && e.contains("sse9"), "{e}");
    }

    #[test]
    fn the_level_never_exceeds_the_cpu() {
        assert!(level() <= detected());
        assert!(Level::Portable < Level::Avx2 && Level::Avx2 < Level::Avx512);
    }
}
