//! matmul/bmm on the GPU through cuBLAS (loaded at run time).
//!
//! cuBLAS is column-major; a row-major product `C = A·B` is computed as `Cᵀ = Bᵀ·Aᵀ`. An
//! operand whose last two dims have a unit stride on either side is passed as it is
//! (transposed or not, with its leading dimension); any other layout is compacted on the
//! device first. float32 computes in float32 (no TF32, as PyTorch's default); float16
//! and bfloat16 accumulate in float32; integer and bool products are refused with
//! PyTorch's text (cuBLAS has none).

use std::ffi::c_void;

use cudarc::cublas::sys as blas;

use super::driver;
use super::{dev_ptr, CudaBackend};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::storage::{borrow, Device};
use crate::tensor::Tensor;

fn check(op: &'static str, ordinal: usize, call: &str, s: blas::cublasStatus_t) -> Result<()> {
    if s == blas::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(Error::Device {
            op,
            device: Device::Cuda(ordinal),
            msg: format!("cuBLAS error {s:?} in {call}"),
        })
    }
}

/// The device's cuBLAS handle, made on first use, bound to the current stream.
fn handle(be: &CudaBackend, op: &'static str) -> Result<blas::cublasHandle_t> {
    let g = be.gpu(op)?;
    // SAFETY: only tries to open the library.
    if !unsafe { blas::is_culib_present() } {
        return Err(Error::Device {
            op,
            device: Device::Cuda(be.ordinal),
            msg: "matmul on CUDA needs cuBLAS, but libcublas.so could not be loaded (add the CUDA toolkit's or the nvidia-cublas wheel's lib folder to LD_LIBRARY_PATH)".into(),
        });
    }
    let mut slot = g.blas.lock().unwrap_or_else(|e| e.into_inner());
    let h = match *slot {
        Some(h) => h as blas::cublasHandle_t,
        None => {
            let mut h: blas::cublasHandle_t = std::ptr::null_mut();
            // SAFETY: writes one handle; the device's context is current (gpu()).
            check(op, be.ordinal, "cublasCreate", unsafe {
                blas::cublasCreate_v2(&mut h)
            })?;
            *slot = Some(h as usize);
            h
        }
    };
    let stream = driver::current_stream(be.ordinal);
    // SAFETY: `h` is a live handle; the stream belongs to this device's context.
    check(op, be.ordinal, "cublasSetStream", unsafe {
        blas::cublasSetStream_v2(h, stream.cast())
    })?;
    Ok(h)
}

/// How one operand's last two dims (`rows × cols`) reach cuBLAS: `(transposed, ld)` in
/// cuBLAS's column-major terms, or `None` when it must be compacted.
fn as_blas(t: &Tensor) -> Option<(bool, i64)> {
    as_blas_any(t).filter(|&(_, ld)| ld <= i64::from(i32::MAX))
}

fn as_blas_any(t: &Tensor) -> Option<(bool, i64)> {
    let nd = t.ndim();
    let (r, c) = (t.shape()[nd - 2], t.shape()[nd - 1]);
    let (sr, sc) = (t.strides()[nd - 2], t.strides()[nd - 1]);
    // Row-major: column-major of the transpose, ld = row stride.
    if (sc == 1 || c <= 1) && sr >= c.max(1) as isize {
        return Some((false, sr.max(1) as i64));
    }
    if (sr == 1 || r <= 1) && sc >= r.max(1) as isize {
        return Some((true, sc.max(1) as i64));
    }
    None
}

/// One stride for `t`'s batch dims broadcast to `batch` (0 when broadcast everywhere),
/// or `None` when they do not collapse into one.
fn batch_stride(t: &Tensor, batch: &[usize]) -> Option<i64> {
    let nb = t.ndim() - 2;
    let lead = batch.len() - nb;
    let mut dims: Vec<(usize, isize)> = Vec::new();
    for (i, &n) in batch.iter().enumerate() {
        let s = if i < lead || t.shape()[i - lead] == 1 {
            0
        } else {
            t.strides()[i - lead]
        };
        if n > 1 {
            dims.push((n, s));
        }
    }
    let mut stride: Option<isize> = None;
    let mut expect: Option<isize> = None;
    for &(n, s) in dims.iter().rev() {
        match (stride, expect) {
            (None, _) => {
                stride = Some(s);
                expect = Some(s * n as isize);
            }
            (Some(st), Some(e)) => {
                if s != e && !(st == 0 && s == 0) {
                    return None;
                }
                expect = Some(s * n as isize);
            }
            _ => return None,
        }
    }
    Some(stride.unwrap_or(0) as i64)
}

pub(crate) fn matmul(
    be: &CudaBackend,
    op: &'static str,
    out: &Tensor,
    a: &Tensor,
    b: &Tensor,
    batch: &[usize],
) -> Result<()> {
    let dt = out.dtype();
    let (ty, compute) = match dt {
        DType::F32 => (
            blas::cudaDataType::CUDA_R_32F,
            blas::cublasComputeType_t::CUBLAS_COMPUTE_32F,
        ),
        DType::F64 => (
            blas::cudaDataType::CUDA_R_64F,
            blas::cublasComputeType_t::CUBLAS_COMPUTE_64F,
        ),
        DType::F16 => (
            blas::cudaDataType::CUDA_R_16F,
            blas::cublasComputeType_t::CUBLAS_COMPUTE_32F,
        ),
        DType::BF16 => (
            blas::cudaDataType::CUDA_R_16BF,
            blas::cublasComputeType_t::CUBLAS_COMPUTE_32F,
        ),
        other => {
            return Err(Error::dtype(
                op,
                format!(
                    "\"addmm_cuda\" not implemented for '{}'",
                    other.legacy_name()
                ),
            ))
        }
    };
    let nd = out.ndim();
    let (m, n) = (out.shape()[nd - 2], out.shape()[nd - 1]);
    let k = a.shape()[a.ndim() - 1];
    let count: usize = batch.iter().product();
    if m == 0 || n == 0 || count == 0 {
        return Ok(());
    }
    if k == 0 {
        return crate::backend::Backend::fill(be, out, crate::tensor::Scalar::Int(0));
    }
    let fits = |v: usize| i32::try_from(v).is_ok();
    if !fits(m) || !fits(n) || !fits(k) || !fits(count) {
        return Err(Error::value(
            op,
            format!("matrix sizes {m}×{k}×{n} (batch {count}) exceed cuBLAS's 32-bit limits"),
        ));
    }
    // Operands cuBLAS can read as they are, else compact copies.
    let prep = |t: &Tensor| -> Result<(Tensor, bool, i64, i64)> {
        if let (Some((tr, ld)), Some(bs)) = (as_blas(t), batch_stride(t, batch)) {
            return Ok((t.clone(), tr, ld, bs));
        }
        // Batch dims that do not collapse into one stride (a broadcast batch dim beside
        // a real one) are expanded before compacting: then the batch stride is r·c.
        let t = if batch_stride(t, batch).is_some() {
            t.clone()
        } else {
            let nd = t.ndim();
            let mut full: Vec<usize> = batch.to_vec();
            full.extend_from_slice(&t.shape()[nd - 2..]);
            t.broadcast_to(&full)?
        };
        let c = t.contiguous_copy()?;
        let cols = c.shape()[c.ndim() - 1];
        let (tr, ld) = as_blas(&c).unwrap_or((false, cols.max(1) as i64));
        let bs = batch_stride(&c, batch).ok_or_else(|| {
            Error::value(
                op,
                "internal error: a compact operand's batch dims did not collapse",
            )
        })?;
        Ok((c, tr, ld, bs))
    };
    let (a, ta, lda, sa) = prep(a)?;
    let (b, tb, ldb, sb) = prep(b)?;
    let h = handle(be, op)?;
    let (one_f, zero_f) = (1.0f32, 0.0f32);
    let (one_d, zero_d) = (1.0f64, 0.0f64);
    let (alpha, beta): (*const c_void, *const c_void) = if dt == DType::F64 {
        (
            (&one_d as *const f64).cast(),
            (&zero_d as *const f64).cast(),
        )
    } else {
        (
            (&one_f as *const f32).cast(),
            (&zero_f as *const f32).cast(),
        )
    };
    let opn = |t: bool| {
        if t {
            blas::cublasOperation_t::CUBLAS_OP_T
        } else {
            blas::cublasOperation_t::CUBLAS_OP_N
        }
    };
    let _g = borrow::acquire(
        op,
        &[
            (out.storage(), true),
            (a.storage(), false),
            (b.storage(), false),
        ],
    )?;
    // SAFETY: the pointers address device tensors of the shapes and strides described
    // (checked by as_blas/batch_stride), held by the borrow above; alpha/beta outlive
    // the call (host pointer mode).
    let s = unsafe {
        blas::cublasGemmStridedBatchedEx(
            h,
            opn(tb),
            opn(ta),
            n as i32,
            m as i32,
            k as i32,
            alpha,
            dev_ptr(&b) as *const c_void,
            ty,
            ldb as i32,
            sb,
            dev_ptr(&a) as *const c_void,
            ty,
            lda as i32,
            sa,
            beta,
            dev_ptr(out) as *mut c_void,
            ty,
            n as i32,
            (m * n) as i64,
            count as i32,
            compute,
            blas::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
        )
    };
    check(op, be.ordinal, "cublasGemmStridedBatchedEx", s)
}

#[cfg(test)]
mod tests {
    use super::batch_stride;
    use crate::dtype::DType;
    use crate::tensor::Tensor;

    #[test]
    fn batch_strides_collapse_only_when_one_stride_walks_the_batch() {
        let t = |s: &[usize]| Tensor::zeros(s, DType::F32).unwrap();
        // (2,1) against batch (2,3): a broadcast dim beside a real one.
        let a = t(&[2, 1, 9, 12]);
        assert_eq!(batch_stride(&a, &[2, 3]), None);
        let full = a
            .broadcast_to(&[2, 3, 9, 12])
            .unwrap()
            .contiguous_copy()
            .unwrap();
        assert_eq!(batch_stride(&full, &[2, 3]), Some(108));
        // Broadcast everywhere: stride 0; a plain batch: the matrix size.
        assert_eq!(batch_stride(&t(&[12, 5]), &[2, 3]), Some(0));
        assert_eq!(batch_stride(&t(&[6, 12, 5]), &[6]), Some(60));
        assert_eq!(batch_stride(&t(&[3, 12, 5]), &[2, 3]), None);
        // A transposed batch does not collapse.
        let tr = t(&[3, 2, 4, 5]).transpose(0, 1).unwrap();
        assert_eq!(batch_stride(&tr, &[2, 3]), None);
    }
}
