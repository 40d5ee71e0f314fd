//! Helpers shared by the integration tests (each test file that needs them says
//! `mod common;`).

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

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
