//! Writes and reads through aliasing views, across threads and within one storage.
//!
//! Every write in the threaded tests sets the *whole* storage to one value (through a view
//! that covers it: transposed, flipped, reshaped …), so a consistent read sees all-equal
//! elements and a torn read — a reader overlapping a writer — shows mixed values.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use strata::{DType, Tensor, TensorIndex};

const ROWS: usize = 24;
const COLS: usize = 40;
const WRITERS: usize = 4;
const READERS: usize = 3;
const ROUNDS: i64 = 300;

/// Value written by writer `w` in round `k` (never 0, unique per write).
fn tag(w: usize, k: i64) -> i64 {
    (w as i64 + 1) * 1_000_000 + k + 1
}

/// Views that each cover the whole `[ROWS, COLS]` storage, every element exactly once.
fn covering_views(x: &Tensor) -> Vec<Tensor> {
    vec![
        x.clone(),
        x.t().unwrap(),
        x.flip(&[0]).unwrap(),
        x.flip(&[0, 1]).unwrap(),
        x.slice(1, None, None, -1).unwrap(),
        x.view(&[-1]).unwrap(),
        x.view(&[-1]).unwrap().flip(&[0]).unwrap(),
        x.view(&[COLS as i64, ROWS as i64]).unwrap().t().unwrap(),
        x.unflatten(1, &[4, 10])
            .unwrap()
            .permute(&[2, 0, 1])
            .unwrap(),
        x.index(&[
            TensorIndex::step(-1),
            TensorIndex::NewAxis,
            TensorIndex::full(),
        ])
        .unwrap(),
    ]
}

#[test]
fn readers_never_see_a_torn_write() {
    let x = Tensor::zeros(&[ROWS, COLS], DType::I64).unwrap();
    let v0 = x.version();
    let done = Arc::new(AtomicBool::new(false));
    let writes = Arc::new(AtomicU64::new(0));
    let start = Arc::new(Barrier::new(WRITERS + READERS));
    let mut handles = Vec::new();

    for w in 0..WRITERS {
        let views = covering_views(&x);
        let (writes, start) = (writes.clone(), start.clone());
        handles.push(thread::spawn(move || {
            start.wait();
            for k in 0..ROUNDS {
                let v = &views[(k as usize * 3 + w) % views.len()];
                let val = tag(w, k);
                match k % 4 {
                    0 => {
                        v.fill_(val).unwrap();
                    }
                    1 => {
                        // A full source from another storage.
                        let src = Tensor::full(v.shape(), val, DType::I64).unwrap();
                        v.copy_(&src).unwrap();
                    }
                    2 => {
                        // A broadcast 0-d source.
                        v.copy_(&Tensor::scalar(val)).unwrap();
                    }
                    _ => {
                        // The storage onto itself, through another covering view: staged,
                        // so it stays uniform (whatever value it holds).
                        let src = x_like_source(v);
                        v.copy_(&src).unwrap();
                    }
                }
                writes.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }

    let seen_total = Arc::new(AtomicU64::new(0));
    for r in 0..READERS {
        let views = covering_views(&x);
        let (done, start, seen_total) = (done.clone(), start.clone(), seen_total.clone());
        handles.push(thread::spawn(move || {
            start.wait();
            let mut reads = 0u64;
            let mut distinct = HashSet::new();
            while !done.load(Ordering::SeqCst) || reads < 50 {
                let v = &views[(reads as usize + r) % views.len()];
                let vals = if reads % 5 == 4 {
                    // Reading through a copy goes through copy_'s shared borrow.
                    v.contiguous_copy().unwrap().to_vec::<i64>().unwrap()
                } else {
                    v.to_vec::<i64>().unwrap()
                };
                assert_eq!(vals.len(), ROWS * COLS);
                let first = vals[0];
                assert!(
                    vals.iter().all(|&e| e == first),
                    "torn read through {v:?}: {:?}",
                    vals.iter().collect::<HashSet<_>>()
                );
                let valid = first == 0
                    || ((1..=WRITERS as i64).contains(&(first / 1_000_000))
                        && (1..=ROUNDS).contains(&(first % 1_000_000)));
                assert!(valid, "value {first} was never written");
                distinct.insert(first);
                reads += 1;
            }
            seen_total.fetch_add(distinct.len() as u64, Ordering::SeqCst);
        }));
    }

    // Join the writers, then release the readers.
    let readers = handles.split_off(WRITERS);
    for h in handles {
        h.join().unwrap();
    }
    done.store(true, Ordering::SeqCst);
    for h in readers {
        h.join().unwrap();
    }

    // Every in-place write bumped the one shared counter exactly once, whichever view
    // it went through.
    let total = writes.load(Ordering::SeqCst);
    assert_eq!(total, WRITERS as u64 * ROUNDS as u64);
    assert_eq!(x.version(), v0 + total);
    for v in covering_views(&x) {
        assert_eq!(v.version(), x.version());
    }
    // The final state is uniform and one of the written values.
    let vals = x.to_vec::<i64>().unwrap();
    assert!(vals.iter().all(|&e| e == vals[0]));
    assert_ne!(vals[0], 0);
    assert!(seen_total.load(Ordering::SeqCst) >= READERS as u64);
}

/// Another covering view of the same storage as `v`, with `v`'s shape.
fn x_like_source(v: &Tensor) -> Tensor {
    let flat = v
        .as_strided(&[ROWS * COLS], &[1], Some(0))
        .unwrap()
        .flip(&[0])
        .unwrap();
    let dims: Vec<i64> = v.shape().iter().map(|&n| n as i64).collect();
    flat.reshape(&dims).unwrap()
}

#[test]
fn single_element_writes_are_seen_in_order_through_other_views() {
    // One writer bumps one element through a transposed view with `set`; a reader polls the
    // same element through a flipped view with `get` and must see it never go backwards.
    const N: i64 = 2000;
    let y = Tensor::zeros(&[3, 5], DType::I64).unwrap();
    let v0 = y.version();
    let wv = y.t().unwrap(); // element y[2, 1] is wv[1, 2]
    let rv = y.flip(&[0, 1]).unwrap(); // element y[2, 1] is rv[0, 3]
    let other = y.select(0, 0).unwrap(); // elements not touched by the writer
    let start = Arc::new(Barrier::new(3));
    let writer = {
        let start = start.clone();
        thread::spawn(move || {
            start.wait();
            for k in 1..=N {
                wv.set(&[1, 2], k).unwrap();
            }
        })
    };
    let reader = {
        let start = start.clone();
        thread::spawn(move || {
            start.wait();
            let mut last = 0;
            while last < N {
                let v = rv.get::<i64>(&[0, 3]).unwrap();
                assert!(v >= last && v <= N, "went from {last} to {v}");
                last = v;
            }
        })
    };
    let bystander = thread::spawn(move || {
        start.wait();
        for _ in 0..200 {
            assert_eq!(other.to_vec::<i64>().unwrap(), vec![0; 5]);
        }
    });
    writer.join().unwrap();
    reader.join().unwrap();
    bystander.join().unwrap();
    assert_eq!(y.get::<i64>(&[2, 1]).unwrap(), N);
    assert_eq!(y.version(), v0 + N as u64);
    let mut want = vec![0i64; 15];
    want[2 * 5 + 1] = N;
    assert_eq!(y.to_vec::<i64>().unwrap(), want);
}

// ---------------------------------------------------------------------------------------
// copy_ within one storage: as if the source were read completely first
// ---------------------------------------------------------------------------------------

/// Copies `src` positions onto `dst` positions of a plain vector, reading all of the source
/// first.
fn expect_copy(data: &[i64], dst: &[usize], src: &[usize]) -> Vec<i64> {
    let vals: Vec<i64> = src.iter().map(|&i| data[i]).collect();
    let mut out = data.to_vec();
    for (&d, v) in dst.iter().zip(vals) {
        out[d] = v;
    }
    out
}

fn ar(n: i64) -> Tensor {
    Tensor::arange(0, n, 1, DType::I64).unwrap()
}

#[test]
fn overlapping_copy_reads_the_source_first_1d() {
    let base: Vec<i64> = (0..6).collect();
    let range = |a: usize, b: usize| (a..b).collect::<Vec<_>>();

    // x[1:] = x[:-1]: a forward shift (a naive loop would smear x[0] everywhere).
    let x = ar(6);
    x.slice(0, Some(1), None, 1)
        .unwrap()
        .copy_(&x.slice(0, None, Some(-1), 1).unwrap())
        .unwrap();
    let want = expect_copy(&base, &range(1, 6), &range(0, 5));
    assert_eq!(want, vec![0, 0, 1, 2, 3, 4]);
    assert_eq!(x.to_vec::<i64>().unwrap(), want);

    // x[:-1] = x[1:]: a backward shift.
    let x = ar(6);
    x.slice(0, None, Some(-1), 1)
        .unwrap()
        .copy_(&x.slice(0, Some(1), None, 1).unwrap())
        .unwrap();
    assert_eq!(x.to_vec::<i64>().unwrap(), vec![1, 2, 3, 4, 5, 5]);

    // x = x.flip(0): a naive loop would give [5, 4, 3, 3, 4, 5].
    let x = ar(6);
    x.copy_(&x.flip(&[0]).unwrap()).unwrap();
    assert_eq!(x.to_vec::<i64>().unwrap(), vec![5, 4, 3, 2, 1, 0]);

    // x[1:] = x[::-1][1:] (= x[4::-1]).
    let x = ar(6);
    let src = x
        .slice(0, None, None, -1)
        .unwrap()
        .slice(0, Some(1), None, 1)
        .unwrap();
    x.slice(0, Some(1), None, 1).unwrap().copy_(&src).unwrap();
    let want = expect_copy(&base, &range(1, 6), &[4, 3, 2, 1, 0]);
    assert_eq!(want, vec![0, 4, 3, 2, 1, 0]);
    assert_eq!(x.to_vec::<i64>().unwrap(), want);

    // x[::2] = x[1::2]: interleaved, ranges intersect, elements do not.
    let x = ar(6);
    x.slice(0, None, None, 2)
        .unwrap()
        .copy_(&x.slice(0, Some(1), None, 2).unwrap())
        .unwrap();
    assert_eq!(x.to_vec::<i64>().unwrap(), vec![1, 1, 3, 3, 5, 5]);

    // x = x: a no-op that still counts as a write.
    let x = ar(6);
    let v0 = x.version();
    x.copy_(&x).unwrap();
    assert_eq!(x.to_vec::<i64>().unwrap(), base);
    assert_eq!(x.version(), v0 + 1);

    // Through an i32 view of the i64 bytes: the low halves from the reversed words.
    let x = ar(4);
    let words = x.view_dtype(DType::I32).unwrap(); // [0, 0, 1, 0, 2, 0, 3, 0]
    let lows = words.slice(0, None, None, 2).unwrap(); // the low halves: [0, 1, 2, 3]
    let src = words
        .slice(0, None, None, -1)
        .unwrap()
        .slice(0, Some(0), Some(4), 1)
        .unwrap(); // [0, 3, 0, 2]
    lows.copy_(&src).unwrap();
    assert_eq!(x.to_vec::<i64>().unwrap(), vec![0, 3, 0, 2]);
}

#[test]
fn overlapping_copy_reads_the_source_first_2d() {
    let base: Vec<i64> = (0..16).collect();
    let pos = |r: usize, c: usize| r * 4 + c;

    // m = m.T: an in-place transpose.
    let m = ar(16).view(&[4, 4]).unwrap();
    m.copy_(&m.t().unwrap()).unwrap();
    let dst: Vec<usize> = (0..16).collect();
    let src: Vec<usize> = (0..16).map(|k| pos(k % 4, k / 4)).collect();
    assert_eq!(m.to_vec::<i64>().unwrap(), expect_copy(&base, &dst, &src));

    // m[:, 1:] = m[:, :-1]: a shift along rows.
    let m = ar(16).view(&[4, 4]).unwrap();
    m.slice(1, Some(1), None, 1)
        .unwrap()
        .copy_(&m.slice(1, None, Some(-1), 1).unwrap())
        .unwrap();
    let dst: Vec<usize> = (0..4)
        .flat_map(|r| (1..4).map(move |c| pos(r, c)))
        .collect();
    let src: Vec<usize> = (0..4)
        .flat_map(|r| (0..3).map(move |c| pos(r, c)))
        .collect();
    let want = expect_copy(&base, &dst, &src);
    assert_eq!(&want[..4], &[0, 0, 1, 2]);
    assert_eq!(m.to_vec::<i64>().unwrap(), want);

    // m = m[0] broadcast: every row becomes the first one.
    let m = ar(16).view(&[4, 4]).unwrap();
    m.copy_(&m.select(0, 0).unwrap()).unwrap();
    assert_eq!(m.to_vec::<i64>().unwrap(), [0, 1, 2, 3].repeat(4));

    // m[1:, 1:] = m.flip(0, 1)[:3, :3]: a rotated block onto an overlapping block.
    let m = ar(16).view(&[4, 4]).unwrap();
    let src_view = m
        .flip(&[0, 1])
        .unwrap()
        .slice(0, None, Some(3), 1)
        .unwrap()
        .slice(1, None, Some(3), 1)
        .unwrap();
    m.slice(0, Some(1), None, 1)
        .unwrap()
        .slice(1, Some(1), None, 1)
        .unwrap()
        .copy_(&src_view)
        .unwrap();
    let dst: Vec<usize> = (1..4)
        .flat_map(|r| (1..4).map(move |c| pos(r, c)))
        .collect();
    let src: Vec<usize> = (0..3)
        .flat_map(|r| (0..3).map(move |c| pos(3 - r, 3 - c)))
        .collect();
    assert_eq!(m.to_vec::<i64>().unwrap(), expect_copy(&base, &dst, &src));

    // The diagonal from the anti-diagonal, the anti-diagonal from the diagonal.
    let m = ar(16).view(&[4, 4]).unwrap();
    let diag = m.diagonal(0, 0, 1).unwrap();
    let anti = m.flip(&[1]).unwrap().diagonal(0, 0, 1).unwrap();
    diag.copy_(&anti).unwrap();
    assert_eq!(diag.to_vec::<i64>().unwrap(), vec![3, 6, 9, 12]);
    anti.copy_(&diag.flip(&[0]).unwrap()).unwrap();
    assert_eq!(anti.to_vec::<i64>().unwrap(), vec![12, 9, 6, 3]);
}

#[test]
fn overlapping_copy_while_other_threads_read() {
    // One thread keeps rotating a ring (x[1:] = x[:-1]; x[0] = old last) and mirroring it
    // in place twice, while readers check that every snapshot is a rotation of 0..n, or
    // its mirror image.
    const N: i64 = 64;
    const TURNS: usize = 400;
    let x = ar(N);
    let done = Arc::new(AtomicBool::new(false));
    let rotator = {
        let x = x.clone();
        let done = done.clone();
        thread::spawn(move || {
            for _ in 0..TURNS {
                // A roll is not a strided view, so build it in a scratch tensor; then one
                // copy_ rotates the whole ring, and no reader can see it half-rotated.
                let rolled = Tensor::zeros(&[N as usize], DType::I64).unwrap();
                rolled
                    .slice(0, Some(1), None, 1)
                    .unwrap()
                    .copy_(&x.slice(0, None, Some(-1), 1).unwrap())
                    .unwrap();
                rolled
                    .narrow(0, 0, 1)
                    .unwrap()
                    .copy_(&x.narrow(0, N - 1, 1).unwrap())
                    .unwrap();
                x.copy_(&rolled).unwrap();
                // Two in-place mirror images (staged copies of the storage onto
                // itself), which leave the ring as it was.
                x.copy_(&x.flip(&[0]).unwrap()).unwrap();
                x.copy_(&x.flip(&[0]).unwrap()).unwrap();
            }
            done.store(true, Ordering::SeqCst);
        })
    };
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let x = x.clone();
            let done = done.clone();
            thread::spawn(move || {
                let view = if r == 0 {
                    x.clone()
                } else {
                    x.flip(&[0]).unwrap()
                };
                while !done.load(Ordering::SeqCst) {
                    let mut v = view.to_vec::<i64>().unwrap();
                    if r == 1 {
                        v.reverse();
                    }
                    // A rotation of 0..N, possibly mirrored (between the two flips):
                    // every step is +1 (or every step -1) modulo N.
                    let step = (v[1] - v[0]).rem_euclid(N);
                    assert!(step == 1 || step == N - 1, "{v:?}");
                    for w in v.windows(2) {
                        assert_eq!((w[1] - w[0]).rem_euclid(N), step, "torn: {v:?}");
                    }
                }
            })
        })
        .collect();
    rotator.join().unwrap();
    for r in readers {
        r.join().unwrap();
    }
    let v = x.to_vec::<i64>().unwrap();
    let shift = TURNS % N as usize;
    let want: Vec<i64> = (0..N as usize)
        .map(|i| ((i + N as usize - shift) % N as usize) as i64)
        .collect();
    assert_eq!(v, want);
}

// ---------------------------------------------------------------------------------------
// Writes through one view show through every other; the version counter is shared
// ---------------------------------------------------------------------------------------

#[test]
fn zeroing_points_shows_in_its_transpose() {
    let points = Tensor::from_vec(vec![4.0f32, 1.0, 5.0, 3.0, 2.0, 1.0], &[3, 2]).unwrap();
    let points2 = points.transpose(0, 1).unwrap();
    assert_eq!(points2.shape(), &[2, 3]);
    assert_eq!(points2.strides(), &[1, 2]);
    assert!(points.same_storage(&points2));
    assert_eq!(
        points2.to_vec::<f32>().unwrap(),
        vec![4.0, 5.0, 2.0, 1.0, 3.0, 1.0]
    );
    let v0 = points.version();
    assert_eq!(points2.version(), v0);
    points.zero_().unwrap();
    assert_eq!(points2.to_vec::<f32>().unwrap(), vec![0.0; 6]);
    assert_eq!(points.version(), v0 + 1);
    assert_eq!(points2.version(), v0 + 1);

    // Every kind of in-place write bumps the shared counter once; reads do not.
    points2.set(&[1, 2], 7.0).unwrap();
    assert_eq!(points.get::<f32>(&[2, 1]).unwrap(), 7.0);
    assert_eq!(points.version(), v0 + 2);
    points2
        .select(0, 0)
        .unwrap()
        .copy_(&Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap())
        .unwrap();
    assert_eq!(points.version(), v0 + 3);
    assert_eq!(
        points.to_vec::<f32>().unwrap(),
        vec![1.0, 0.0, 2.0, 0.0, 3.0, 7.0]
    );
    {
        let mut w = points.write_slice::<f32>().unwrap();
        w[1] = -1.0;
    }
    assert_eq!(points2.version(), v0 + 4);
    assert_eq!(points2.get::<f32>(&[1, 0]).unwrap(), -1.0);
    points.flip(&[0]).unwrap().fill_(9.0).unwrap();
    assert_eq!(points2.version(), v0 + 5);
    let _ = points2.to_vec::<f32>().unwrap();
    let _ = points.contiguous().unwrap();
    let _ = points2.contiguous().unwrap(); // a copy: bumps only the copy's storage
    let _ = points.read_slice::<f32>().unwrap();
    assert_eq!(points.version(), v0 + 5);
    // A copy has its own storage and counter.
    let c = points2.contiguous().unwrap();
    assert!(!c.same_storage(&points));
    c.fill_(0.0).unwrap();
    assert_eq!(points.version(), v0 + 5);
    assert_eq!(points.to_vec::<f32>().unwrap(), vec![9.0; 6]);
}
