//! Planning an op: result dtype (PyTorch's promotion), output layout (following the
//! inputs), and overlap handling between inputs and the written tensor.

use crate::dtype::{DType, DTypeKind};
use crate::error::{Error, Result};
use crate::layout::{DimVec, Layout, Shape, Strides};
use crate::tensor::{Scalar, Tensor};

/// An operand of an elementwise op: a tensor, or a dtype-less scalar (weak, like a Python
/// number).
#[derive(Debug, Clone)]
pub enum Operand<'a> {
    /// A tensor (a 0-d tensor is weak in promotion, as in PyTorch).
    Tensor(&'a Tensor),
    /// A Rust or Python scalar.
    Scalar(Scalar),
}

impl<'a> From<&'a Tensor> for Operand<'a> {
    fn from(t: &'a Tensor) -> Self {
        Operand::Tensor(t)
    }
}

macro_rules! operand_from_scalar {
    ($($t:ty),*) => {$(
        impl From<$t> for Operand<'_> {
            fn from(v: $t) -> Self {
                Operand::Scalar(v.into())
            }
        }
    )*};
}
operand_from_scalar!(bool, i32, i64, f32, f64, Scalar);

const UNSIGNED_WIDE: [DType; 3] = [DType::U16, DType::U32, DType::U64];

/// Two integer dtypes, one of them uint16/uint32/uint64, which PyTorch refuses to promote:
/// NumPy's (and the array API standard's) answer where an integer dtype holds both — the
/// wider unsigned one for two unsigned, else the signed dtype of at least twice the
/// unsigned one's width (uint16 with int8 is int32, uint32 with int64 is int64) — and
/// PyTorch's error where none does (uint64 with a signed dtype).
fn wide_unsigned(a: DType, b: DType) -> Result<DType> {
    let unsigned = |d: DType| matches!(d, DType::U8 | DType::U16 | DType::U32 | DType::U64);
    if unsigned(a) && unsigned(b) {
        return Ok(if a.itemsize() >= b.itemsize() { a } else { b });
    }
    let (u, s) = if unsigned(a) { (a, b) } else { (b, a) };
    match (2 * u.itemsize()).max(s.itemsize()) {
        2 => Ok(DType::I16),
        4 => Ok(DType::I32),
        8 => Ok(DType::I64),
        _ => Err(Error::dtype(
            "promote_types",
            format!(
                "Promotion for uint16, uint32, uint64 types is not supported, attempted to promote {} and {}",
                a.legacy_name(),
                b.legacy_name()
            ),
        )),
    }
}

/// PyTorch's `promote_types` for two dtypes (with NumPy's answer for the wide unsigned
/// integers mixed with other integers, which PyTorch refuses).
pub fn promote_types(a: DType, b: DType) -> Result<DType> {
    use DType::*;
    if a == b {
        return Ok(a);
    }
    if a == Bool {
        return Ok(b);
    }
    if b == Bool {
        return Ok(a);
    }
    let (ka, kb) = (a.kind(), b.kind());
    let float = |x: DType, y: DType| -> DType {
        match (x, y) {
            (F16, BF16) | (BF16, F16) => F32,
            _ if x.itemsize() >= y.itemsize() => x,
            _ => y,
        }
    };
    match (ka, kb) {
        (DTypeKind::Complex, DTypeKind::Complex) => {
            Ok(if a.itemsize() >= b.itemsize() { a } else { b })
        }
        // The complex dtype whose parts hold both (complex64 with float64: complex128).
        (DTypeKind::Complex, DTypeKind::Float) | (DTypeKind::Float, DTypeKind::Complex) => {
            Ok(if a == F64 || b == F64 || a == C128 || b == C128 {
                C128
            } else {
                C64
            })
        }
        (DTypeKind::Complex, _) => Ok(a),
        (_, DTypeKind::Complex) => Ok(b),
        (DTypeKind::Float, DTypeKind::Float) => Ok(float(a, b)),
        (DTypeKind::Float, _) => Ok(a),
        (_, DTypeKind::Float) => Ok(b),
        _ => {
            if UNSIGNED_WIDE.contains(&a) || UNSIGNED_WIDE.contains(&b) {
                return wide_unsigned(a, b);
            }
            // u8 with a signed type: the signed type of twice u8's width or wider.
            let signed = |x: DType| match x {
                U8 => I16,
                other => other,
            };
            let (sa, sb) = (signed(a), signed(b));
            Ok(if sa.itemsize() >= sb.itemsize() {
                sa
            } else {
                sb
            })
        }
    }
}

#[derive(Default)]
struct State {
    dim: Option<DType>,
    zero: Option<DType>,
    wrapped: Option<DType>,
}

fn update(slot: &mut Option<DType>, dt: DType) -> Result<()> {
    *slot = Some(match *slot {
        Some(cur) => promote_types(cur, dt)?,
        None => dt,
    });
    Ok(())
}

/// PyTorch's `combine_categories`.
fn combine(higher: Option<DType>, lower: Option<DType>) -> Result<Option<DType>> {
    Ok(match (higher, lower) {
        (Some(h), _) if h.is_complex() => Some(h),
        // A complex scalar or 0-d tensor over float tensors: the complex dtype of their
        // precision (float64 + 1j is complex128); over integers, its own.
        (Some(h), Some(l)) if l.is_complex() => Some(h.to_complex().unwrap_or(l)),
        (Some(h), _) if h.is_float() => Some(h),
        (Some(h), Some(l)) if h == DType::Bool || l.is_float() => Some(promote_types(h, l)?),
        (None, Some(l)) => Some(l),
        (h, _) => h,
    })
}

/// The result dtype of an elementwise op over `operands`, with PyTorch's rules: tensors
/// with dims decide unless a 0-d tensor or a scalar is of a higher category (bool < int <
/// float < complex); a Python float scalar counts as float32 (the default dtype), an int
/// as int64, a complex as complex64.
pub fn result_type(operands: &[Operand<'_>]) -> Result<DType> {
    let mut st = State::default();
    for op in operands {
        match op {
            Operand::Tensor(t) if t.ndim() > 0 => update(&mut st.dim, t.dtype())?,
            Operand::Tensor(t) => update(&mut st.zero, t.dtype())?,
            Operand::Scalar(s) => update(&mut st.wrapped, s.default_dtype())?,
        }
    }
    let inner = combine(st.zero, st.wrapped)?;
    combine(st.dim, inner)?.ok_or_else(|| Error::dtype("result_type", "no operands"))
}

/// True when a dtype is in the given category or a lower one.
pub fn kind_of(dt: DType) -> DTypeKind {
    match dt.kind() {
        DTypeKind::UInt => DTypeKind::Int,
        k => k,
    }
}

/// A dense layout of `shape` whose dim order follows the first input that is not
/// broadcast along the way (PyTorch: the output of an op on a transposed tensor is
/// transposed). Inputs are given already broadcast to `shape`.
pub fn output_layout(shape: &[usize], inputs: &[&Layout]) -> Result<Layout> {
    let nd = shape.len();
    // Dim order, slowest first, from the inputs' |strides| (stride-0 dims do not vote).
    let mut order: DimVec<usize> = (0..nd).collect();
    let key = |d: usize| -> DimVec<usize> {
        inputs
            .iter()
            .map(|l| {
                if shape[d] <= 1 {
                    0
                } else {
                    l.strides()[d].unsigned_abs()
                }
            })
            .collect()
    };
    // Stable insertion sort, slowest first; ties keep the logical order.
    for i in 1..nd {
        let mut j = i;
        while j > 0 {
            let (a, b) = (key(order[j - 1]), key(order[j]));
            let mut swap = false;
            for (x, y) in a.iter().zip(&b) {
                if *x == 0 || *y == 0 {
                    continue;
                }
                if x != y {
                    swap = x < y;
                    break;
                }
            }
            if !swap {
                break;
            }
            order.swap(j - 1, j);
            j -= 1;
        }
    }
    let mut strides = Strides::from_elem(0, nd);
    let mut acc: isize = 1;
    for &d in order.iter().rev() {
        strides[d] = acc;
        acc = acc.saturating_mul(shape[d].max(1) as isize);
    }
    let shape: Shape = shape.into();
    Layout::new_op("empty_like", &shape, &strides, 0)
}

/// A fresh zeroed output of `shape` and `dtype` whose dim order follows `inputs` (given
/// broadcast to `shape` or not; they are expanded here).
pub fn empty_for(shape: &[usize], dtype: DType, inputs: &[&Tensor]) -> Result<Tensor> {
    output_like(shape, dtype, inputs, true)
}

/// As [`empty_for`], but not zeroed: for a kernel that writes every element of it before
/// the tensor is returned (invariant S5).
pub(crate) fn output_for(shape: &[usize], dtype: DType, inputs: &[&Tensor]) -> Result<Tensor> {
    output_like(shape, dtype, inputs, false)
}

fn output_like(shape: &[usize], dtype: DType, inputs: &[&Tensor], zeroed: bool) -> Result<Tensor> {
    // On the inputs' device (the first input's; the backend call that follows checks
    // that they agree), from that device's backend.
    let device = crate::backend::common_device(inputs);
    let backend = crate::backend::backend_for("empty_like", device)?;
    let storage = |nbytes| backend.allocate("empty_like", nbytes, zeroed);
    let numel = crate::layout::checked_numel("empty_like", shape)?;
    let nbytes = numel
        .checked_mul(dtype.itemsize())
        .ok_or_else(|| Error::overflow("empty_like", format!("{numel} elements of {dtype}")))?;
    // Row-major inputs of the result's shape (and scalars) give a row-major result: the
    // common case, without the dim-order search below.
    if inputs
        .iter()
        .all(|t| t.ndim() == 0 || (crate::layout::same_dims(t.shape(), shape) && t.is_contiguous()))
    {
        // An input laid out exactly as the result will be lends its layout (a copy).
        let layout = match inputs.iter().find(|t| t.ndim() > 0) {
            Some(t) if t.layout().is_row_major_at_zero() => t.layout().clone(),
            _ => Layout::contiguous(shape)?,
        };
        return Tensor::fresh(storage(nbytes)?, layout, dtype);
    }
    let target: Vec<i64> = shape.iter().map(|&n| n as i64).collect();
    let mut views = Vec::with_capacity(inputs.len());
    for t in inputs {
        if t.ndim() > 0 {
            views.push(t.layout().expand(&target)?);
        }
    }
    let refs: Vec<&Layout> = views.iter().collect();
    let layout = output_layout(shape, &refs)?;
    Tensor::fresh(storage(nbytes)?, layout, dtype)
}

/// Borrows `out` exclusively and `inputs` shared for a kernel, and bumps `out`'s version.
pub(crate) fn borrow_for_write<'a, const M: usize>(
    op: &'static str,
    out: &'a Tensor,
    inputs: [&'a Tensor; M],
) -> Result<crate::storage::borrow::BorrowGuard<'a>> {
    let g = borrow_for(op, out, inputs)?;
    out.storage().bump_version();
    Ok(g)
}

/// [`borrow_for_write`] without the version bump, for a path that may still give up
/// before writing (the elementwise flat path; the general path then borrows again).
pub(crate) fn borrow_for<'a, const M: usize>(
    op: &'static str,
    out: &'a Tensor,
    inputs: [&'a Tensor; M],
) -> Result<crate::storage::borrow::BorrowGuard<'a>> {
    let mut wants: smallvec::SmallVec<[(&crate::Storage, bool); 4]> = smallvec::SmallVec::new();
    wants.push((out.storage(), true));
    wants.extend(inputs.iter().map(|t| (t.storage(), false)));
    crate::storage::borrow::acquire(op, &wants)
}

/// `src` itself when reading it while writing `dst` is safe (different memory, or the
/// very same elements in the same order), else a compact copy of it (staging). A staged
/// input costs one copy; it is never silently corrupted.
///
/// Decided by addresses (see [`must_stage`]), not by storage identity: the same bytes
/// can come back as another storage (through NumPy, DLPack, the buffer protocol); for a
/// file mapped twice, by positions in the file.
pub fn stage_if_overlapping(dst: &Tensor, src: &Tensor) -> Result<Tensor> {
    if must_stage(dst, src) {
        src.contiguous_copy()
    } else {
        Ok(src.clone())
    }
}

/// True when reading `src` (broadcast to `dst`'s shape) while `dst` is written could
/// read a value already overwritten: the byte ranges the two views touch intersect, and
/// `src` is not `dst`'s very elements in `dst`'s order (same first-element address, same
/// item size, same strides over every dim of `dst` longer than 1), where each element is
/// read before it is written. NumPy's `np.copyto` decides the same way, by addresses, so
/// two storages over the same bytes are caught. O(ndim); a `src` that does not broadcast
/// to `dst`'s shape is left to the op to report.
pub fn must_stage(dst: &Tensor, src: &Tensor) -> bool {
    let (dl, sl) = (dst.layout(), src.layout());
    let (Some((d0, d1)), Some((s0, s1))) = (dl.index_range(), sl.index_range()) else {
        return false;
    };
    let (di, si) = (dst.dtype().itemsize(), src.dtype().itemsize());
    let (dp, sp) = (dst.storage(), src.storage());
    let (dbase, sbase) = if dst.same_storage(src) {
        let b = dp.data_ptr() as usize;
        (b, b)
    } else {
        match (dp.shared_file_position(), sp.shared_file_position()) {
            // Two mappings of one file: the same bytes at two addresses, so positions in
            // the file decide (Note [one file mapped twice] in `storage/mmap.rs`).
            (Some((df, d)), Some((sf, s))) if df == sf => {
                match (usize::try_from(d), usize::try_from(s)) {
                    (Ok(d), Ok(s)) => (d, s),
                    _ => return true,
                }
            }
            _ => (dp.data_ptr() as usize, sp.data_ptr() as usize),
        }
    };
    // Byte ranges [lo, hi): inside their storages (L4), so these cannot overflow; the
    // saturating forms only make that independent of the invariant.
    let range = |base: usize, lo: usize, hi: usize, item: usize| {
        (
            base.saturating_add(lo.saturating_mul(item)),
            base.saturating_add(hi.saturating_add(1).saturating_mul(item)),
        )
    };
    let (da, db) = range(dbase, d0, d1, di);
    let (sa, sb) = range(sbase, s0, s1, si);
    if db <= sa || sb <= da {
        return false;
    }
    if di != si || dbase + dl.offset() * di != sbase + sl.offset() * si {
        return true;
    }
    // Same first element and item size: the same elements in the same order when the
    // strides agree on every dim `dst` steps along (`src` aligned to it from the right,
    // broadcast dims reading stride 0).
    let (ds, ss) = (dl.shape(), sl.shape());
    if ss.len() > ds.len() {
        return false;
    }
    let lead = ds.len() - ss.len();
    for d in 0..ds.len() {
        let n = ds[d];
        let s = if d < lead {
            0
        } else {
            match ss[d - lead] {
                m if m == n => sl.strides()[d - lead],
                1 => 0,
                // Not broadcastable: the op reports it.
                _ => return false,
            }
        };
        if n > 1 && s != dl.strides()[d] {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use DType::*;

    fn t(dt: DType, shape: &[usize]) -> Tensor {
        Tensor::zeros(shape, dt).unwrap()
    }

    #[test]
    fn promotion_follows_pytorch() {
        assert_eq!(promote_types(U8, I8).unwrap(), I16);
        assert_eq!(promote_types(F16, BF16).unwrap(), F32);
        assert_eq!(promote_types(I64, F16).unwrap(), F16);
        assert_eq!(promote_types(Bool, I32).unwrap(), I32);
        assert!(promote_types(U64, I64).is_err());
        let (i32v, f16v, boolv) = (t(I32, &[2]), t(F16, &[2]), t(Bool, &[2]));
        let f64_0d = t(F64, &[]);
        assert_eq!(result_type(&[(&i32v).into(), 1.5.into()]).unwrap(), F32);
        assert_eq!(
            result_type(&[(&i32v).into(), (&f64_0d).into()]).unwrap(),
            F64
        );
        assert_eq!(
            result_type(&[(&f16v).into(), (&f64_0d).into()]).unwrap(),
            F16
        );
        assert_eq!(result_type(&[(&i32v).into(), 1.into()]).unwrap(), I32);
        assert_eq!(result_type(&[(&boolv).into(), 1.into()]).unwrap(), I64);
        assert_eq!(result_type(&[(&boolv).into(), true.into()]).unwrap(), Bool);
        let u8v = t(U8, &[2]);
        assert_eq!(result_type(&[(&u8v).into(), 300.into()]).unwrap(), U8);
        assert_eq!(result_type(&[1.into(), 2.5.into()]).unwrap(), F32);
    }

    #[test]
    fn complex_promotion_follows_pytorch() {
        use DType::*;
        let p = |a, b| promote_types(a, b).unwrap();
        assert_eq!(p(C64, F64), C128);
        assert_eq!(p(F64, C64), C128);
        assert_eq!(p(C64, F32), C64);
        assert_eq!(p(C64, F16), C64);
        assert_eq!(p(BF16, C64), C64);
        assert_eq!(p(C64, C128), C128);
        assert_eq!(p(C128, F32), C128);
        assert_eq!(p(I64, C64), C64);
        assert_eq!(p(U64, C128), C128);
        assert_eq!(p(Bool, C64), C64);
        let t = |dt, shape: &[usize]| Tensor::zeros(shape, dt).unwrap();
        let (f32v, f64v, i32v) = (t(F32, &[2]), t(F64, &[2]), t(I32, &[2]));
        let c = Scalar::Complex(1.0, 2.0);
        assert_eq!(result_type(&[(&f32v).into(), c.into()]).unwrap(), C64);
        assert_eq!(result_type(&[(&f64v).into(), c.into()]).unwrap(), C128);
        assert_eq!(result_type(&[(&i32v).into(), c.into()]).unwrap(), C64);
        let c128_0d = t(C128, &[]);
        assert_eq!(
            result_type(&[(&f32v).into(), (&c128_0d).into()]).unwrap(),
            C64
        );
        let c64v = t(C64, &[2]);
        assert_eq!(result_type(&[(&c64v).into(), 2.5.into()]).unwrap(), C64);
        assert_eq!(
            result_type(&[(&c64v).into(), (&t(F64, &[])).into()]).unwrap(),
            C64
        );
    }

    #[test]
    fn output_follows_input_order() {
        let p = Layout::contiguous(&[4, 3, 2])
            .unwrap()
            .permute(&[2, 0, 1])
            .unwrap();
        let c = Layout::contiguous(&[2, 4, 3]).unwrap();
        let out = output_layout(&[2, 4, 3], &[&p, &c]).unwrap();
        assert_eq!(out.strides(), p.strides());
        let b = Layout::contiguous(&[3])
            .unwrap()
            .expand(&[2, 4, 3])
            .unwrap();
        assert_eq!(
            output_layout(&[2, 4, 3], &[&b]).unwrap().strides(),
            c.strides()
        );
    }
}
