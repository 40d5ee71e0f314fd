//! The block cache (Note [block cache] in `storage/cache.rs`): kernels' fresh outputs
//! reuse large freed blocks, results stay right when they do, and the limit holds.

mod common;

use common::serial;
use std::time::Duration;

use strata::storage::cache::DECAY;
use strata::storage::{cache_stats, empty_cache, set_cache_decay, set_cache_limit};
use strata::{DType, Tensor};

const MB: usize = 1 << 20;

/// A (rows, 1024) f32 tensor of distinct values (4 KiB a row).
fn rows(n: usize, seed: u64) -> Tensor {
    Tensor::rand(&[n, 1024], DType::F32, seed).unwrap()
}

fn reference_sum(a: &Tensor, b: &Tensor) -> Vec<f32> {
    let (a, b) = (a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
    a.iter().zip(&b).map(|(x, y)| x + y).collect()
}

#[test]
fn a_freed_output_is_reused_by_the_next_output_of_its_size() {
    let _g = serial();
    // No decay: this test counts blocks, which a slow debug build must not see expire.
    set_cache_decay(Duration::MAX);
    set_cache_limit(256 * MB);
    empty_cache();
    let (a, b) = (rows(1024, 1), rows(1024, 2)); // 4 MiB each
    let first = a.add(&b).unwrap();
    let addr = first.data_ptr();
    assert_eq!(first.to_vec::<f32>().unwrap(), reference_sum(&a, &b));
    drop(first);
    let held = cache_stats();
    assert_eq!(held.blocks, 1);
    assert!(held.bytes >= 4 * MB && held.bytes <= 4 * MB + 128);

    // The next output of that size takes the same block, and is computed in full: the
    // old values (and, in debug builds, the poison) are all overwritten.
    let hits = cache_stats().hits;
    let second = a.mul(&b).unwrap();
    assert_eq!(second.data_ptr(), addr);
    assert_eq!(cache_stats().hits, hits + 1);
    let (av, bv) = (a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
    let want: Vec<f32> = av.iter().zip(&bv).map(|(x, y)| x * y).collect();
    assert_eq!(second.to_vec::<f32>().unwrap(), want);

    // A strided copy into a reused block.
    drop(second);
    let flipped = a.flip(&[0]).unwrap().contiguous().unwrap();
    assert_eq!(flipped.data_ptr(), addr);
    let want: Vec<f32> = av.chunks(1024).rev().flatten().copied().collect();
    assert_eq!(flipped.to_vec::<f32>().unwrap(), want);
    empty_cache();
}

#[test]
fn zeroed_tensors_take_cached_blocks_cleared_up_to_32_mib() {
    let _g = serial();
    // No decay: this test counts blocks, which a slow debug build must not see expire.
    set_cache_decay(Duration::MAX);
    set_cache_limit(256 * MB);
    empty_cache();
    let (a, b) = (rows(512, 3), rows(512, 4));
    let out = a.add(&b).unwrap();
    let addr = out.data_ptr();
    drop(out);
    assert_eq!(cache_stats().blocks, 1);
    // The freed output's block holds a + b (stale values): zeros clears it.
    let z = Tensor::zeros(&[512, 1024], DType::F32).unwrap();
    assert_eq!(z.data_ptr(), addr);
    assert_eq!(cache_stats().blocks, 0);
    assert!(z.to_vec::<f32>().unwrap().iter().all(|&x| x == 0.0));
    // So do reductions, whose outputs start zeroed.
    drop(z);
    let s = Tensor::ones(&[512, 1024, 2], DType::F32)
        .unwrap()
        .sum(&[-1], false)
        .unwrap();
    assert!(s.to_vec::<f32>().unwrap().iter().all(|&x| x == 2.0));
    drop(s);
    // Above 32 MiB, zeros maps fresh pages and leaves a cached block alone.
    drop(rows(10 * 1024, 5).neg().unwrap()); // a 40 MiB output, cached when freed
    let held = cache_stats().blocks;
    let big = Tensor::zeros(&[10 * 1024, 1024], DType::F32).unwrap();
    assert_eq!(cache_stats().blocks, held);
    assert!(big.to_vec::<f32>().unwrap().iter().all(|&x| x == 0.0));
    drop(big);
    empty_cache();
    assert_eq!((cache_stats().blocks, cache_stats().bytes), (0, 0));
}

#[test]
fn the_limit_bounds_what_is_kept() {
    let _g = serial();
    // No decay: this test counts blocks, which a slow debug build must not see expire.
    set_cache_decay(Duration::MAX);
    empty_cache();
    set_cache_limit(10 * MB);
    let outs: Vec<Tensor> = (0..4)
        .map(|i| {
            Tensor::rand(&[1024, 1024], DType::F32, i)
                .unwrap()
                .neg()
                .unwrap()
        })
        .collect();
    drop(outs); // four 4 MiB blocks freed: at most two fit
    let s = cache_stats();
    assert_eq!(s.limit, 10 * MB);
    assert_eq!(s.blocks, 2);
    assert!(s.bytes <= 10 * MB);

    // Lowering the limit frees what is over it; 0 turns the cache off.
    assert_eq!(set_cache_limit(5 * MB), 10 * MB);
    assert_eq!(cache_stats().blocks, 1);
    set_cache_limit(0);
    assert_eq!(cache_stats().bytes, 0);
    drop(rows(1024, 5).neg().unwrap());
    assert_eq!(cache_stats().blocks, 0);

    // Small outputs are left to malloc.
    set_cache_limit(256 * MB);
    drop(rows(16, 6).neg().unwrap());
    assert_eq!(cache_stats().blocks, 0);
    empty_cache();
}

#[test]
fn outputs_on_many_threads_share_the_cache_safely() {
    let _g = serial();
    // No decay: this test counts blocks, which a slow debug build must not see expire.
    set_cache_decay(Duration::MAX);
    set_cache_limit(64 * MB);
    empty_cache();
    let a = rows(512, 7);
    let want: Vec<f32> = a.to_vec::<f32>().unwrap().iter().map(|x| x * 3.0).collect();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..20 {
                    let y = a.mul(3.0).unwrap();
                    assert_eq!(y.to_vec::<f32>().unwrap(), want);
                }
            });
        }
    });
    let st = cache_stats();
    assert!(st.blocks <= 4 && st.bytes <= 64 * MB);
    assert!(st.hits > 0);
    empty_cache();
}

/// Many threads take and free blocks of mixed sizes under a small limit (so blocks are
/// evicted, expired and reused all the time); each writes its own pattern into what it
/// got, holds it across a yield and reads it back, and no block is live in two tensors
/// at once (the set of live addresses never takes an address twice).
#[test]
fn no_block_is_handed_out_twice_under_concurrent_use() {
    use std::collections::HashSet;
    use std::sync::Mutex;
    let _g = serial();
    // Blocks expire within milliseconds: taken, evicted, expired and reused at once.
    set_cache_decay(Duration::from_millis(30));
    set_cache_limit(12 * MB);
    empty_cache();
    let src = rows(768, 8); // 3 MiB: row counts 256..768 give 1..3 MiB outputs
    let live: Mutex<HashSet<usize>> = Mutex::new(HashSet::new());
    let hits = cache_stats().hits;
    std::thread::scope(|s| {
        for id in 0..6usize {
            let (src, live) = (&src, &live);
            s.spawn(move || {
                for i in 0..40usize {
                    let n = 256 + (id * 97 + i * 131) % 513;
                    let rows_n = i64::try_from(n).unwrap();
                    let out = src.narrow(0, 0, rows_n).unwrap().neg().unwrap();
                    let pattern = (id * 1000 + i) as f32;
                    out.fill_(pattern).unwrap();
                    let addr = out.data_ptr();
                    assert!(
                        live.lock().unwrap().insert(addr),
                        "block {addr:#x} handed out twice"
                    );
                    std::thread::yield_now();
                    let v = out.to_vec::<f32>().unwrap();
                    assert_eq!(v.len(), n * 1024);
                    assert!(
                        v.iter().all(|&x| x == pattern),
                        "thread {id} round {i}: overwritten"
                    );
                    assert!(live.lock().unwrap().remove(&addr));
                    drop(out);
                }
            });
        }
    });
    let st = cache_stats();
    assert!(st.hits > hits, "the threads never reused a block");
    assert!(st.bytes <= 12 * MB && st.blocks <= 12);
    empty_cache();
}

/// A cached block unused for the decay (one second) is returned to the system with no
/// call into strata (the reaper thread); one a loop keeps reusing stays.
#[test]
fn idle_blocks_are_returned_without_a_call_and_reused_ones_stay() {
    use std::time::Instant;
    let _g = serial();
    set_cache_decay(DECAY);
    set_cache_limit(256 * MB);
    empty_cache();
    let a = rows(1024, 9); // 4 MiB
                           // A loop that reuses its block every 100 ms, for 1.5 s: the block is never idle for
                           // the decay, so it stays (hits, no release).
    drop(a.neg().unwrap());
    let before = cache_stats();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_millis(1500) {
        drop(a.neg().unwrap());
        std::thread::sleep(Duration::from_millis(100));
    }
    let kept = cache_stats();
    assert_eq!(kept.blocks, 1);
    assert_eq!(kept.released_blocks, before.released_blocks);
    assert!(kept.hits >= before.hits + 10);

    // Three more blocks of other sizes, then nothing: all four go within about a second.
    let outs: Vec<Tensor> = [512i64, 640, 896]
        .iter()
        .map(|&n| a.narrow(0, 0, n).unwrap().neg().unwrap())
        .collect();
    drop(outs);
    let held = cache_stats();
    assert_eq!(held.blocks, 4);
    assert!(held.oldest_idle.is_some() && held.decay == Duration::from_secs(1));
    let t1 = Instant::now();
    // `cache_stats` only reads: nothing here expires a block but the reaper.
    while cache_stats().blocks > 0 && t1.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let gone = t1.elapsed();
    let after = cache_stats();
    assert_eq!(
        (after.blocks, after.bytes),
        (0, 0),
        "still held after {gone:?}"
    );
    assert!(
        gone >= Duration::from_millis(800),
        "returned after only {gone:?}"
    );
    assert!(
        gone <= Duration::from_millis(2500),
        "returned only after {gone:?}"
    );
    assert_eq!(after.released_blocks, held.released_blocks + 4);
    assert!(after.released_bytes >= held.released_bytes + 12 * MB as u64);
    assert!(after
        .since_release
        .is_some_and(|t| t < Duration::from_secs(1)));
    assert_eq!(after.oldest_idle, None);
}
