//! The CPU sort loops: `sort`/`argsort`/`topk` along one dim ([`sort`]) and
//! `searchsorted` ([`search`]).
//!
//! Every element maps to an unsigned key whose integer order is the sort order
//! ([`SortKey`]): integers with the sign bit flipped, floats by their bits with negative
//! ones inverted, both zeros one key, every NaN the largest key (NaN sorts last, first when
//! descending, as in PyTorch), and the key complemented for a descending sort. A lane is
//! copied into `(key, position)` pairs — any stride, negative too — and ordered by key,
//! then position: LSD radix sort (stable by construction, one pass per key byte that is
//! not the same in every key) for long lanes, a comparison sort of the pairs (which are
//! unique, so the order is the stable one) for short lanes, and a selection followed by a
//! sort of the first `k` for `topk`. Every sort is therefore stable. Values are written
//! by reading the input at the sorted positions (NaN payloads and the sign of zero are
//! kept). Lanes run in parallel.

use rayon::prelude::*;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::DimVec;
use crate::storage::borrow;
use crate::tensor::Tensor;

/// A key type: an unsigned integer, ordered as the elements it stands for.
pub(crate) trait RadixKey: Copy + Ord + Send + Sync + 'static {
    /// Key bytes (radix passes).
    const BYTES: usize;
    /// The key as a `u64` (digits are taken from it).
    fn wide(self) -> u64;
    /// `0`, or all ones when `descending` (a key XORed with it has its order reversed).
    fn order_mask(descending: bool) -> Self;
    /// `self ^ mask`.
    fn xor(self, mask: Self) -> Self;
}

macro_rules! radix_key {
    ($($t:ty),*) => {$(
        impl RadixKey for $t {
            const BYTES: usize = size_of::<$t>();
            #[inline(always)]
            fn wide(self) -> u64 {
                self as u64
            }
            #[inline(always)]
            fn order_mask(descending: bool) -> Self {
                if descending { <$t>::MAX } else { 0 }
            }
            #[inline(always)]
            fn xor(self, mask: Self) -> Self {
                self ^ mask
            }
        }
    )*};
}
radix_key!(u8, u16, u32, u64);

/// An element type with an order-preserving key.
pub(crate) trait SortKey: Copy + Send + Sync {
    /// The key type.
    type K: RadixKey;
    /// The element's key: equal elements (`-0.0` and `0.0`, any two NaNs) share one.
    fn key(self) -> Self::K;
}

macro_rules! int_key {
    ($($t:ty => $k:ty),*) => {$(
        impl SortKey for $t {
            type K = $k;
            #[inline(always)]
            fn key(self) -> $k {
                // The sign bit flipped: two's complement order becomes unsigned order.
                (self as $k) ^ (1 << (8 * size_of::<$k>() - 1))
            }
        }
    )*};
}
int_key!(i8 => u8, i16 => u16, i32 => u32, i64 => u64);

macro_rules! uint_key {
    ($($t:ty),*) => {$(
        impl SortKey for $t {
            type K = $t;
            #[inline(always)]
            fn key(self) -> $t {
                self
            }
        }
    )*};
}
uint_key!(u8, u16, u32, u64);

/// A `bool` element read as its byte (any non-zero byte is `true`).
#[derive(Clone, Copy)]
#[repr(transparent)]
pub(crate) struct BoolByte(u8);

impl SortKey for BoolByte {
    type K = u8;
    #[inline(always)]
    fn key(self) -> u8 {
        u8::from(self.0 != 0)
    }
}

/// The key of a float: non-negative floats above the negative ones, negative ones in
/// reverse bit order, `-0.0` as `0.0` (adding `+0.0` turns it into `+0.0`), every NaN
/// above `+inf`. Branch-free but for a select.
macro_rules! float_key {
    ($($t:ty => $k:ty, $s:ty),*) => {$(
        impl SortKey for $t {
            type K = $k;
            #[inline(always)]
            fn key(self) -> $k {
                let y = self + 0.0;
                let b = y.to_bits();
                let sign: $k = 1 << (8 * size_of::<$k>() - 1);
                let k = b ^ ((((b as $s) >> (8 * size_of::<$k>() - 1)) as $k) | sign);
                if y.is_nan() { <$k>::MAX } else { k }
            }
        }
    )*};
}
float_key!(f32 => u32, i32, f64 => u64, i64);

/// The key of a half-precision float, from its bits as [`float_key!`]'s.
macro_rules! half_key {
    ($($t:ty),*) => {$(
        impl SortKey for $t {
            type K = u16;
            #[inline(always)]
            fn key(self) -> u16 {
                const SIGN: u16 = 0x8000;
                let b = self.to_bits();
                let b = if b == SIGN { 0 } else { b };
                let k = b ^ ((((b as i16) >> 15) as u16) | SIGN);
                if self.is_nan() { u16::MAX } else { k }
            }
        }
    )*};
}
half_key!(half::f16, half::bf16);

/// `body` with `$T` the [`SortKey`] type of `dtype`'s elements (`bool` read as its byte).
macro_rules! with_sort_key {
    ($dtype:expr, $T:ident => $body:expr, complex => $complex:expr) => {
        match $dtype {
            DType::C64 | DType::C128 => $complex,
            DType::Bool => {
                type $T = BoolByte;
                $body
            }
            DType::U8 => {
                type $T = u8;
                $body
            }
            DType::I8 => {
                type $T = i8;
                $body
            }
            DType::I16 => {
                type $T = i16;
                $body
            }
            DType::U16 => {
                type $T = u16;
                $body
            }
            DType::I32 => {
                type $T = i32;
                $body
            }
            DType::U32 => {
                type $T = u32;
                $body
            }
            DType::I64 => {
                type $T = i64;
                $body
            }
            DType::U64 => {
                type $T = u64;
                $body
            }
            DType::F16 => {
                type $T = half::f16;
                $body
            }
            DType::BF16 => {
                type $T = half::bf16;
                $body
            }
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
        }
    };
}

/// Lanes at least this long are radix sorted; shorter ones by comparison.
const RADIX_FROM: usize = 192;

/// Sorts `pairs` by key, then position (stable for the keys alone): LSD radix sort, one
/// pass per 8-bit digit that is not the same in every key (11-bit digits, three passes
/// for 32-bit keys, measured slower on 1M pairs: their 2048 buckets scatter over more
/// pages). `tmp` is scratch.
fn radix_sort<K: RadixKey>(pairs: &mut Vec<(K, u32)>, tmp: &mut Vec<(K, u32)>) {
    let n = pairs.len();
    let bits = 8;
    let buckets = 1usize << bits;
    let mask = (buckets - 1) as u64;
    let passes = (8 * K::BYTES).div_ceil(bits);
    // One histogram per digit, all in one read.
    let mut hist = vec![0usize; passes * buckets];
    for &(k, _) in pairs.iter() {
        let k = k.wide();
        for p in 0..passes {
            let d = ((k >> (p * bits)) & mask) as usize;
            // SAFETY: `p < passes` and `d ≤ mask < buckets`: inside the histogram.
            unsafe { *hist.get_unchecked_mut(p * buckets + d) += 1 };
        }
    }
    tmp.clear();
    tmp.resize(n, pairs[0]);
    let (mut src, mut dst) = (pairs, tmp);
    let mut swapped = false;
    let mut pos = vec![0usize; buckets];
    for p in 0..passes {
        let h = &hist[p * buckets..(p + 1) * buckets];
        // A digit every key shares orders nothing.
        if h.contains(&n) {
            continue;
        }
        let mut sum = 0;
        for (q, &c) in pos.iter_mut().zip(h) {
            *q = sum;
            sum += c;
        }
        let shift = p * bits;
        for &e in src.iter() {
            let d = ((e.0.wide() >> shift) & mask) as usize;
            // SAFETY: `d < buckets`; `pos[d]` starts at the number of keys with a smaller
            // digit and rises once per key with digit `d`, so it stays below `n`, the
            // length of `dst`.
            unsafe {
                let q = pos.get_unchecked_mut(d);
                *dst.get_unchecked_mut(*q) = e;
                *q += 1;
            }
        }
        std::mem::swap(&mut src, &mut dst);
        swapped = !swapped;
    }
    if swapped {
        // The sorted pairs are in the scratch buffer.
        dst.copy_from_slice(src);
    }
}

/// The `k` smallest of `pairs` (unique), sorted, through a max-heap of `k` candidates: one
/// comparison for most elements when `k` is small against the lane.
fn smallest_k<K: RadixKey>(pairs: &mut Vec<(K, u32)>, k: usize) {
    let mut heap: std::collections::BinaryHeap<(K, u32)> = pairs[..k].iter().copied().collect();
    for &e in &pairs[k..] {
        let mut top = heap.peek_mut().expect("k > 0");
        if e < *top {
            *top = e;
        }
    }
    pairs.clear();
    pairs.extend(heap.into_sorted_vec());
}

/// Orders `pairs` (unique: positions differ) and keeps the first `k`, sorted.
fn order<K: RadixKey>(pairs: &mut Vec<(K, u32)>, tmp: &mut Vec<(K, u32)>, k: usize) {
    let n = pairs.len();
    if k == 0 {
        pairs.clear();
    } else if k < n && k <= 1024 && k.saturating_mul(64) <= n {
        smallest_k(pairs, k);
    } else if k < n && k <= n / 8 {
        pairs.select_nth_unstable(k - 1);
        pairs.truncate(k);
        pairs.sort_unstable();
    } else if n >= RADIX_FROM {
        radix_sort(pairs, tmp);
        pairs.truncate(k);
    } else {
        pairs.sort_unstable();
        pairs.truncate(k);
    }
}

use super::reduce::Shared;

/// The storage offsets of the first element of every lane along `dim` of a tensor of
/// `shape` with `strides` and `offset` (row-major over the other dims).
fn lane_bases(shape: &[usize], strides: &[isize], offset: usize, dim: usize) -> Vec<isize> {
    let mut s: DimVec<usize> = DimVec::from_slice(shape);
    s[dim] = 1;
    let mut v = Vec::with_capacity(crate::layout::numel_of(&s));
    super::walk(&s, [strides], [offset], |[o]| v.push(o as isize));
    v
}

/// `values`/`indices` (fresh, contiguous, `input`'s shape with `k` along `dim`) ← the
/// first `k` elements of each lane of `input` along `dim`, ascending or descending, and
/// their positions (int64). `input`'s lanes have at most `u32::MAX` elements.
pub(crate) fn sort(
    op: &'static str,
    values: Option<&Tensor>,
    indices: &Tensor,
    input: &Tensor,
    dim: usize,
    descending: bool,
) -> Result<()> {
    let n = input.shape()[dim];
    if u32::try_from(n).is_err() {
        return Err(Error::shape(
            op,
            format!(
                "sorting a dim of {n} elements is not supported (at most {})",
                u32::MAX
            ),
        ));
    }
    if indices.dtype() != DType::I64 {
        return Err(Error::dtype(op, "internal error: indices must be int64"));
    }
    with_sort_key!(input.dtype(), T => sort_typed::<T>(op, values, indices, input, dim, descending),
        complex => Err(Error::dtype(op, "Sort does not support complex dtypes on CPU")))
}

fn sort_typed<T: SortKey>(
    op: &'static str,
    values: Option<&Tensor>,
    indices: &Tensor,
    input: &Tensor,
    dim: usize,
    descending: bool,
) -> Result<()> {
    let n = input.shape()[dim];
    let k = indices.shape()[dim];
    let in_bases = lane_bases(input.shape(), input.strides(), input.offset(), dim);
    let out_bases = lane_bases(indices.shape(), indices.strides(), indices.offset(), dim);
    let (si, so) = (input.strides()[dim], indices.strides()[dim]);
    let mut wants = vec![(input.storage(), false), (indices.storage(), true)];
    if let Some(v) = values {
        wants.push((v.storage(), true));
    }
    let _g = borrow::acquire(op, &wants)?;
    let inp = Shared(input.storage().data_ptr() as *const T);
    let idx = Shared(indices.storage().data_ptr() as *mut i64);
    let val = Shared(values.map_or(std::ptr::null_mut(), |v| v.storage().data_ptr() as *mut T));
    let lanes = in_bases.len();
    let flip = <T::K as RadixKey>::order_mask(descending);
    let run = |lo: usize, hi: usize| {
        let mut pairs: Vec<(T::K, u32)> = Vec::with_capacity(n);
        let mut tmp: Vec<(T::K, u32)> = Vec::new();
        for l in lo..hi {
            let (ib, ob) = (in_bases[l], out_bases[l]);
            pairs.clear();
            let base = inp.get().wrapping_offset(ib);
            let spare = &mut pairs.spare_capacity_mut()[..n];
            if si == 1 {
                // SAFETY: the lane's `n` elements are contiguous from `base`, inside
                // `input`'s checked layout (L4) over its live, borrowed storage (S1, S4).
                let lane = unsafe { std::slice::from_raw_parts(base, n) };
                for (i, (slot, &x)) in spare.iter_mut().zip(lane).enumerate() {
                    slot.write((x.key().xor(flip), i as u32));
                }
            } else {
                for (i, slot) in spare.iter_mut().enumerate() {
                    // SAFETY: element `i` of lane `l`, as above.
                    let x = unsafe { *base.offset(i as isize * si) };
                    slot.write((x.key().xor(flip), i as u32));
                }
            }
            // SAFETY: the first `n` slots were written above.
            unsafe { pairs.set_len(n) };
            order(&mut pairs, &mut tmp, k);
            let (ip, vp) = (idx.get().wrapping_offset(ob), val.get());
            for (j, &(_, i)) in pairs.iter().enumerate() {
                // SAFETY: element `j` of the output lane: `indices` is a fresh tensor
                // written only here (lanes are disjoint).
                unsafe { *ip.offset(j as isize * so) = i64::from(i) };
            }
            if !vp.is_null() {
                let vp = vp.wrapping_offset(ob);
                for (j, &(_, i)) in pairs.iter().enumerate() {
                    // SAFETY: as above, in `values` (same shape and layout as `indices`);
                    // `i < n` is a position of the input lane.
                    unsafe { *vp.offset(j as isize * so) = *base.offset(i as isize * si) };
                }
            }
        }
    };
    let work = lanes.saturating_mul(n);
    if lanes > 1 && work >= 1 << 15 {
        super::pool::parallel(|threads| {
            if threads <= 1 {
                return run(0, lanes);
            }
            let per = lanes.div_ceil(threads * 4).max(1);
            (0..lanes.div_ceil(per))
                .into_par_iter()
                .for_each(|c| run(c * per, ((c + 1) * per).min(lanes)));
        });
    } else {
        run(0, lanes);
    }
    Ok(())
}

/// `out[j]` (int64 or int32, fresh and contiguous, `values`' shape) ← the insertion
/// position of `values[j]` in its row of `seq` (`seq`'s last dim; `seq` is 1-D, or its
/// leading dims equal `values`'). `right`: after equal elements. `sorter`: positions
/// (int64, `seq`'s shape) that order each row. The rows are sorted by [`SortKey`]'s order
/// (NaN last).
pub(crate) fn search(
    op: &'static str,
    out: &Tensor,
    seq: &Tensor,
    values: &Tensor,
    sorter: Option<&Tensor>,
    right: bool,
) -> Result<()> {
    with_sort_key!(seq.dtype(), T => search_typed::<T>(op, out, seq, values, sorter, right),
        complex => Err(crate::kernel::math::not_implemented(op, seq.dtype())))
}

fn search_typed<T: SortKey>(
    op: &'static str,
    out: &Tensor,
    seq: &Tensor,
    values: &Tensor,
    sorter: Option<&Tensor>,
    right: bool,
) -> Result<()> {
    if values.dtype() != seq.dtype() || sorter.is_some_and(|s| s.dtype() != DType::I64) {
        return Err(Error::dtype(op, "internal error: operand dtypes"));
    }
    let nd = seq.ndim();
    let n = seq.shape()[nd - 1];
    let (ss, sl) = (seq.strides()[nd - 1], seq.layout().clone());
    let mut wants = vec![
        (seq.storage(), false),
        (values.storage(), false),
        (out.storage(), true),
    ];
    if let Some(s) = sorter {
        wants.push((s.storage(), false));
    }
    let _g = borrow::acquire(op, &wants)?;
    let sp = seq.storage().data_ptr() as *const T;
    let vp = values.storage().data_ptr() as *const T;
    let op_ = out.storage().data_ptr();
    let wide = out.dtype() == DType::I64;
    // Per value: the row base of `seq` (and of `sorter`), then a binary search.
    let row_len = values.shape().last().copied().unwrap_or(1);
    let vnd = values.ndim();
    let mut j = 0usize;
    let mut result: Result<()> = Ok(());
    super::walk(
        values.shape(),
        [values.strides()],
        [values.offset()],
        |[vo]| {
            if result.is_err() {
                return;
            }
            // The row of `seq`: the single row for 1-D, else the row with the value's
            // leading coordinates (the value's own row number, as the leading dims agree).
            let row = if nd == 1 || vnd == 0 { 0 } else { j / row_len };
            let (sbase, srow_base) = if nd == 1 {
                (sl.offset() as isize, 0isize)
            } else {
                let mut rem = row;
                let mut base = sl.offset() as isize;
                let mut sbase = 0isize;
                for d in (0..nd - 1).rev() {
                    let sz = sl.shape()[d];
                    let c = rem % sz;
                    rem /= sz;
                    base += c as isize * sl.strides()[d];
                    if let Some(s) = sorter {
                        sbase += c as isize * s.strides()[d];
                    }
                }
                (base, sbase)
            };
            // SAFETY: `vo` is an element of `values`' checked layout over its borrowed storage.
            let key = unsafe { *vp.add(vo) }.key();
            let before = |m: T::K| m < key || (right && m == key);
            if sorter.is_none() {
                // Branch-free lower bound (a select per level, no mispredicted jumps).
                let row = sp.wrapping_offset(sbase);
                // SAFETY: positions `< n` of the row, inside `seq`'s checked layout.
                let at = |i: usize| unsafe { *row.offset(i as isize * ss) }.key();
                let (mut base, mut size) = (0usize, n);
                while size > 1 {
                    let half = size / 2;
                    base = if before(at(base + half)) {
                        base + half
                    } else {
                        base
                    };
                    size -= half;
                }
                let pos = if n == 0 {
                    0
                } else {
                    base + usize::from(before(at(base)))
                };
                // SAFETY: element `j` of the fresh contiguous `out`, of `values`' shape.
                unsafe {
                    if wide {
                        *(op_ as *mut i64).add(j) = pos as i64;
                    } else {
                        *(op_ as *mut i32).add(j) = pos as i32;
                    }
                }
                j += 1;
                return;
            }
            let at = |i: usize| -> Result<T::K> {
                let p = match sorter {
                    None => i as isize,
                    Some(s) => {
                        // SAFETY: element `i` of the sorter's row (same shape as `seq`).
                        let q = unsafe {
                            *(s.storage().data_ptr() as *const i64).offset(
                                s.offset() as isize + srow_base + i as isize * s.strides()[nd - 1],
                            )
                        };
                        if q < 0 || q as usize >= n {
                            return Err(Error::index(
                            op,
                            format!("sorter index out of range: {q} for a sorted_sequence of size {n}"),
                        ));
                        }
                        q as isize
                    }
                };
                // SAFETY: position `p < n` of the row, inside `seq`'s checked layout.
                Ok(unsafe { *sp.offset(sbase + p * ss) }.key())
            };
            let (mut lo, mut hi) = (0usize, n);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                let m = match at(mid) {
                    Ok(m) => m,
                    Err(e) => {
                        result = Err(e);
                        return;
                    }
                };
                if before(m) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            // SAFETY: element `j` of the fresh contiguous `out`, of `values`' shape.
            unsafe {
                if wide {
                    *(op_ as *mut i64).add(j) = lo as i64;
                } else {
                    *(op_ as *mut i32).add(j) = lo as i32;
                }
            }
            j += 1;
        },
    );
    result
}
