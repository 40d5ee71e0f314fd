//! [`DimVec`]: the per-dim lists of a [`Layout`](super::Layout) (shape, strides).
//!
//! Every view op copies a layout, and moves a tensor (layout, storage, dtype) in and out
//! of a `Result`. Two sizes decide what that costs:
//! - up to [`INLINE_DIMS`] (5, as PyTorch's `SizesAndStrides`) values live in a fixed
//!   array that is always fully initialised, so a copy is a fixed-size move with no
//!   length-dependent `memcpy` call (what `SmallVec::from_slice` costs); more dims (up to
//!   `MAX_NDIM`) go to a `Vec`;
//! - a `DimVec` is 48 bytes, so a `Tensor` stays within 128 bytes: larger values are
//!   moved by a call to `memcpy` rather than by a few vector moves.
//!
//! The length is a word-sized enum whose unused values are the niche that tells the two
//! representations apart, so there is no separate byte-sized tag: a byte written just
//! before a wide read of the same word defeats the CPU's store-to-load forwarding.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::{Deref, DerefMut};

/// Dims kept inline, without a heap allocation.
pub const INLINE_DIMS: usize = 5;

/// The length of an inline [`DimVec`] (`0..=INLINE_DIMS`), word-sized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum InlineLen {
    L0 = 0,
    L1 = 1,
    L2 = 2,
    L3 = 3,
    L4 = 4,
    L5 = 5,
}

impl InlineLen {
    const ALL: [InlineLen; INLINE_DIMS + 1] = [
        InlineLen::L0,
        InlineLen::L1,
        InlineLen::L2,
        InlineLen::L3,
        InlineLen::L4,
        InlineLen::L5,
    ];

    #[inline]
    fn of(n: usize) -> InlineLen {
        Self::ALL[n]
    }

    #[inline]
    fn get(self) -> usize {
        self as usize
    }
}

/// A short list of `Copy` values (one per dim), inline up to [`INLINE_DIMS`].
///
/// Behaves as a slice (`Deref<Target = [T]>`); equality, hashing and `Debug` are those of
/// the slice, whichever representation holds it.
pub enum DimVec<T: Copy + Default> {
    /// `buf[..len]` are the values; the rest of `buf` is `T::default()`.
    Inline {
        len: InlineLen,
        buf: [T; INLINE_DIMS],
    },
    /// Any number of values (used once there have been more than `INLINE_DIMS`).
    Heap(Vec<T>),
}

impl<T: Copy + Default> Clone for DimVec<T> {
    /// An inline list is copied whole, as one 48-byte value (wide moves from the source),
    /// not field by field: narrow stores read back by the wide loads of a later move stall
    /// (see the module doc).
    #[inline]
    fn clone(&self) -> Self {
        match self {
            // SAFETY: the inline variant holds only `Copy` data (a word-sized enum and an
            // array of `T: Copy`), so a bitwise copy of the whole value is a valid clone.
            DimVec::Inline { .. } => unsafe { std::ptr::read(self) },
            DimVec::Heap(v) => DimVec::Heap(v.clone()),
        }
    }
}

// The niche of `InlineLen` holds the discriminant: no tag beyond the inline variant.
const _: () = assert!(std::mem::size_of::<DimVec<usize>>() == 48);
const _: () = assert!(std::mem::size_of::<DimVec<isize>>() == 48);

impl<T: Copy + Default> DimVec<T> {
    /// An empty list.
    #[inline]
    pub fn new() -> Self {
        DimVec::Inline {
            len: InlineLen::L0,
            buf: [T::default(); INLINE_DIMS],
        }
    }

    /// An empty list with room for `n` values.
    #[inline]
    pub fn with_capacity(n: usize) -> Self {
        if n <= INLINE_DIMS {
            Self::new()
        } else {
            DimVec::Heap(Vec::with_capacity(n))
        }
    }

    /// A copy of `s`. An inline list is built whole, one arm per length: a
    /// `copy_from_slice` of a variable length is a `memcpy` call whose narrow stores the
    /// wide moves of the result then read back (see the module doc).
    #[inline]
    pub fn from_slice(s: &[T]) -> Self {
        let d = T::default();
        let buf = match *s {
            [] => [d; INLINE_DIMS],
            [a] => [a, d, d, d, d],
            [a, b] => [a, b, d, d, d],
            [a, b, c] => [a, b, c, d, d],
            [a, b, c, e] => [a, b, c, e, d],
            [a, b, c, e, f] => [a, b, c, e, f],
            _ => return DimVec::Heap(s.to_vec()),
        };
        DimVec::Inline {
            len: InlineLen::of(s.len()),
            buf,
        }
    }

    /// The first `n` values of `buf` (`n` at most [`INLINE_DIMS`]; the rest of `buf` must
    /// be `T::default()`), built whole: no length-dependent `memset`/`memcpy` call, whose
    /// narrow stores the wide moves of the result would read back (see the module doc).
    #[inline]
    pub(crate) fn inline_from(buf: [T; INLINE_DIMS], n: usize) -> Self {
        debug_assert!(n <= INLINE_DIMS);
        DimVec::Inline {
            len: InlineLen::of(n),
            buf,
        }
    }

    /// `n` copies of `v`.
    #[inline]
    pub fn from_elem(v: T, n: usize) -> Self {
        if n <= INLINE_DIMS {
            let mut buf = [T::default(); INLINE_DIMS];
            buf[..n].fill(v);
            DimVec::Inline {
                len: InlineLen::of(n),
                buf,
            }
        } else {
            DimVec::Heap(vec![v; n])
        }
    }

    /// Whether the values live on the heap.
    #[inline]
    pub fn spilled(&self) -> bool {
        matches!(self, DimVec::Heap(_))
    }

    /// The values as a slice.
    #[inline]
    pub fn as_slice(&self) -> &[T] {
        match self {
            DimVec::Inline { len, buf } => &buf[..len.get()],
            DimVec::Heap(v) => v,
        }
    }

    /// The values as a mutable slice.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        match self {
            DimVec::Inline { len, buf } => &mut buf[..len.get()],
            DimVec::Heap(v) => v,
        }
    }

    /// The heap list, after moving the inline values there if they are not yet.
    fn spill(&mut self) -> &mut Vec<T> {
        if let DimVec::Inline { len, buf } = self {
            let mut v = Vec::with_capacity(INLINE_DIMS * 2);
            v.extend_from_slice(&buf[..len.get()]);
            *self = DimVec::Heap(v);
        }
        match self {
            DimVec::Heap(v) => v,
            DimVec::Inline { .. } => unreachable!("spilled just above"),
        }
    }

    /// Appends `v`.
    #[inline]
    pub fn push(&mut self, v: T) {
        match self {
            DimVec::Inline { len, buf } if len.get() < INLINE_DIMS => {
                buf[len.get()] = v;
                *len = InlineLen::of(len.get() + 1);
            }
            _ => self.spill().push(v),
        }
    }

    /// Inserts `v` at `at` (`at <= len`), shifting the values after it.
    ///
    /// # Panics
    /// If `at > len`, as `Vec::insert`.
    pub fn insert(&mut self, at: usize, v: T) {
        match self {
            DimVec::Inline { len, buf } if len.get() < INLINE_DIMS => {
                let n = len.get();
                assert!(at <= n, "DimVec::insert: index {at} > len {n}");
                buf.copy_within(at..n, at + 1);
                buf[at] = v;
                *len = InlineLen::of(n + 1);
            }
            _ => self.spill().insert(at, v),
        }
    }

    /// Removes and returns the value at `at`.
    ///
    /// # Panics
    /// If `at >= len`, as `Vec::remove`.
    pub fn remove(&mut self, at: usize) -> T {
        match self {
            DimVec::Inline { len, buf } => {
                let n = len.get();
                assert!(at < n, "DimVec::remove: index {at} >= len {n}");
                let v = buf[at];
                buf.copy_within(at + 1..n, at);
                buf[n - 1] = T::default();
                *len = InlineLen::of(n - 1);
                v
            }
            DimVec::Heap(vec) => vec.remove(at),
        }
    }

    /// Appends the values of `s`.
    pub fn extend_from_slice(&mut self, s: &[T]) {
        match self {
            DimVec::Inline { len, buf } if len.get() + s.len() <= INLINE_DIMS => {
                let n = len.get();
                buf[n..n + s.len()].copy_from_slice(s);
                *len = InlineLen::of(n + s.len());
            }
            _ => self.spill().extend_from_slice(s),
        }
    }

    /// Shortens the list to `n` values (no-op if it is not longer).
    pub fn truncate(&mut self, n: usize) {
        match self {
            DimVec::Inline { len, buf } => {
                if n < len.get() {
                    buf[n..].fill(T::default());
                    *len = InlineLen::of(n);
                }
            }
            DimVec::Heap(v) => v.truncate(n),
        }
    }

    /// Makes the list `n` copies of `v`, where it lies ([`from_elem`](Self::from_elem)
    /// assigned over it would build a temporary and move it in).
    #[inline]
    pub fn set_elem(&mut self, v: T, n: usize) {
        match self {
            DimVec::Inline { len, buf } if n <= INLINE_DIMS => {
                buf[..n].fill(v);
                buf[n..].fill(T::default());
                *len = InlineLen::of(n);
            }
            DimVec::Heap(vec) => {
                vec.clear();
                vec.resize(n, v);
            }
            DimVec::Inline { .. } => *self = Self::from_elem(v, n),
        }
    }

    /// The values as a `Vec`.
    pub fn into_vec(self) -> Vec<T> {
        match self {
            DimVec::Inline { len, buf } => buf[..len.get()].to_vec(),
            DimVec::Heap(v) => v,
        }
    }
}

impl<T: Copy + Default> Default for DimVec<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy + Default> Deref for DimVec<T> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T: Copy + Default> DerefMut for DimVec<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        self.as_mut_slice()
    }
}

impl<T: Copy + Default> AsRef<[T]> for DimVec<T> {
    fn as_ref(&self) -> &[T] {
        self
    }
}

impl<T: Copy + Default> std::borrow::Borrow<[T]> for DimVec<T> {
    fn borrow(&self) -> &[T] {
        self
    }
}

impl<T: Copy + Default + PartialEq> PartialEq for DimVec<T> {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            // Both inline: the unused entries are `T::default()` in both, so the whole
            // arrays compare as the lists do, in a fixed-size compare (a slice compare is a
            // `memcmp` call, several per elementwise op).
            (DimVec::Inline { len: a, buf: x }, DimVec::Inline { len: b, buf: y }) => {
                a == b && x == y
            }
            _ => self.as_slice() == other.as_slice(),
        }
    }
}

impl<T: Copy + Default + Eq> Eq for DimVec<T> {}

impl<T: Copy + Default + Hash> Hash for DimVec<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

impl<T: Copy + Default + fmt::Debug> fmt::Debug for DimVec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_slice().fmt(f)
    }
}

impl<T: Copy + Default> FromIterator<T> for DimVec<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut out = DimVec::new();
        out.extend(iter);
        out
    }
}

impl<T: Copy + Default> Extend<T> for DimVec<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        for v in iter {
            self.push(v);
        }
    }
}

impl<'a, T: Copy + Default> IntoIterator for &'a DimVec<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<T: Copy + Default> From<&[T]> for DimVec<T> {
    fn from(s: &[T]) -> Self {
        Self::from_slice(s)
    }
}

impl<T: Copy + Default> From<Vec<T>> for DimVec<T> {
    fn from(v: Vec<T>) -> Self {
        if v.len() <= INLINE_DIMS {
            Self::from_slice(&v)
        } else {
            DimVec::Heap(v)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// One edit of a list, applied both to a `DimVec` and to a `Vec` (the reference).
    #[derive(Debug, Clone)]
    enum Edit {
        Push(i64),
        Insert(usize, i64),
        Remove(usize),
        Extend(Vec<i64>),
        Truncate(usize),
        Swap(usize, usize),
    }

    fn edit() -> impl Strategy<Value = Edit> {
        prop_oneof![
            any::<i64>().prop_map(Edit::Push),
            (0usize..20, any::<i64>()).prop_map(|(i, v)| Edit::Insert(i, v)),
            (0usize..20).prop_map(Edit::Remove),
            proptest::collection::vec(any::<i64>(), 0..5).prop_map(Edit::Extend),
            (0usize..20).prop_map(Edit::Truncate),
            (0usize..20, 0usize..20).prop_map(|(a, b)| Edit::Swap(a, b)),
        ]
    }

    proptest! {
        /// Any sequence of edits leaves a `DimVec` equal to a `Vec` given the same edits,
        /// across the inline/heap boundary; clones, hashes and equality follow the values.
        #[test]
        fn matches_vec(start in proptest::collection::vec(any::<i64>(), 0..10),
                       edits in proptest::collection::vec(edit(), 0..30)) {
            let mut d = DimVec::from_slice(&start);
            let mut v = start.clone();
            for e in edits {
                match e {
                    Edit::Push(x) => { d.push(x); v.push(x); }
                    Edit::Insert(i, x) => if i <= v.len() { d.insert(i, x); v.insert(i, x); },
                    Edit::Remove(i) => if i < v.len() {
                        prop_assert_eq!(d.remove(i), v.remove(i));
                    },
                    Edit::Extend(s) => { d.extend_from_slice(&s); v.extend_from_slice(&s); }
                    Edit::Truncate(n) => { d.truncate(n); v.truncate(n); }
                    Edit::Swap(a, b) => if a < v.len() && b < v.len() {
                        d.swap(a, b); v.swap(a, b);
                    },
                }
                prop_assert_eq!(d.as_slice(), v.as_slice());
                let c = d.clone();
                prop_assert_eq!(&c, &DimVec::from_slice(&v));
                prop_assert_eq!(&c, &v.iter().copied().collect::<DimVec<i64>>());
                prop_assert_eq!(&c, &DimVec::from(v.clone()));
            }
            prop_assert_eq!(d.into_vec(), v);
        }
    }

    #[test]
    fn inline_up_to_five_then_heap() {
        let mut d = DimVec::<usize>::from_elem(7, 5);
        assert!(!d.spilled());
        d.push(8);
        assert!(d.spilled());
        assert_eq!(&d[..], &[7, 7, 7, 7, 7, 8]);
        let mut e = DimVec::<usize>::new();
        e.insert(0, 1);
        e.insert(0, 2);
        e.insert(2, 3);
        assert_eq!(&e[..], &[2, 1, 3]);
        assert_eq!(e.remove(1), 1);
        assert_eq!(format!("{e:?}"), "[2, 3]");
    }

    #[test]
    #[should_panic(expected = "index 3 > len 2")]
    fn insert_past_end_panics_like_vec() {
        let mut e = DimVec::<usize>::from_slice(&[1, 2]);
        e.insert(3, 0);
    }
}
