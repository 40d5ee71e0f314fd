//! DLPack in Rust: export → import round trips (zero-copy, every dtype, every kind of
//! view), a hand-built producer whose deleter must run exactly once, and every rejection.

mod common;

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use proptest::prelude::*;
use strata::interop::dlpack::{
    self, code, from_dlpack_legacy, from_dlpack_versioned, to_dlpack_legacy, to_dlpack_versioned,
    DLDataType, DLDevice, DLManagedTensor, DLManagedTensorVersioned, DLPackVersion, DLTensor,
    FLAG_IS_COPIED, FLAG_READ_ONLY,
};
use strata::{DType, ErrorKind, Tensor};

use common::values_f64;

fn sample(shape: &[usize], dtype: DType) -> Tensor {
    let n: usize = shape.iter().product();
    let t = Tensor::arange(0.0, n as f64, 1.0, DType::F64).unwrap();
    let t = if dtype == DType::Bool {
        t.remainder(&Tensor::scalar(3.0))
            .unwrap()
            .eq(&Tensor::scalar(0.0))
            .unwrap()
    } else {
        t.to_dtype(dtype).unwrap()
    };
    let shape: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    t.reshape(&shape).unwrap()
}

fn round_trip(t: &Tensor) -> Tensor {
    let m = to_dlpack_versioned(t, false).unwrap();
    // SAFETY: `m` is a fresh export, consumed once.
    unsafe { from_dlpack_versioned(m) }.unwrap()
}

#[test]
fn every_dtype_and_view_round_trips_zero_copy() {
    for dtype in DType::ALL {
        let base = sample(&[4, 6], dtype);
        let views = [
            base.clone(),
            base.t().unwrap(),
            base.flip(&[0, 1]).unwrap(),
            base.slice(1, Some(1), None, 2).unwrap(),
            base.select(0, 2).unwrap().select(0, 3).unwrap(), // 0-d
            base.narrow(0, 1, 0).unwrap(),                    // empty
            base.unsqueeze(1).unwrap().expand(&[4, 3, 6]).unwrap(), // stride 0
        ];
        for v in &views {
            let u = round_trip(v);
            assert_eq!(u.dtype(), dtype);
            assert_eq!(u.shape(), v.shape());
            assert_eq!(values_f64(&u), values_f64(v), "{dtype} {:?}", v.strides());
            if v.numel() > 0 {
                assert_eq!(u.data_ptr(), v.data_ptr(), "{dtype}: copied");
                if v.numel() > 1 {
                    assert_eq!(u.strides(), v.strides());
                }
            }
            assert!(v.storage().export_count() >= 1);
            drop(u);
            assert_eq!(v.storage().export_count(), 0, "export pin leaked");
        }
    }
    // Writes through the import are seen by the source.
    let t = sample(&[3, 3], DType::F32);
    let u = round_trip(&t.t().unwrap());
    u.set(&[0, 1], 100.0).unwrap();
    assert_eq!(t.get::<f32>(&[1, 0]).unwrap(), 100.0);
}

#[test]
fn exports_fill_the_header_as_recommended() {
    let t = sample(&[2, 3, 4], DType::I16);
    let v = t.permute(&[2, 0, 1]).unwrap().flip(&[1]).unwrap();
    let m = to_dlpack_versioned(&v, false).unwrap();
    // SAFETY: a live export, read then consumed below.
    let r = unsafe { &*m };
    assert_eq!(r.version, DLPackVersion { major: 1, minor: 1 });
    assert_eq!(r.flags, 0);
    let d = &r.dl_tensor;
    assert_eq!(
        d.device,
        DLDevice {
            device_type: 1,
            device_id: 0
        }
    );
    assert_eq!(
        d.dtype,
        DLDataType {
            code: code::INT,
            bits: 16,
            lanes: 1
        }
    );
    assert_eq!(d.byte_offset, 0);
    assert_eq!(d.data as usize, v.data_ptr());
    // SAFETY: `ndim` entries each.
    let (shape, strides) = unsafe {
        (
            std::slice::from_raw_parts(d.shape, 3).to_vec(),
            std::slice::from_raw_parts(d.strides, 3).to_vec(),
        )
    };
    assert_eq!(shape, [4, 2, 3]);
    assert_eq!(strides, [1, -12, 4]);
    // SAFETY: consumed once.
    drop(unsafe { from_dlpack_versioned(m) }.unwrap());
    // copy=true: a compact copy flagged IS_COPIED.
    let m = to_dlpack_versioned(&v, true).unwrap();
    // SAFETY: as above.
    let flags = unsafe { (*m).flags };
    assert_eq!(flags, FLAG_IS_COPIED);
    // SAFETY: consumed once.
    let c = unsafe { from_dlpack_versioned(m) }.unwrap();
    assert!(c.is_contiguous());
    assert_ne!(c.data_ptr(), v.data_ptr());
    assert_eq!(values_f64(&c), values_f64(&v));
    // Legacy round trip.
    let m = to_dlpack_legacy(&v, false).unwrap();
    // SAFETY: consumed once.
    let l = unsafe { from_dlpack_legacy(m) }.unwrap();
    assert_eq!(l.data_ptr(), v.data_ptr());
    assert_eq!(values_f64(&l), values_f64(&v));
}

/// A hand-built producer: owns its data and metadata, counts deleter calls.
struct Made {
    data: Vec<u64>,
    shape: Vec<i64>,
    strides: Option<Vec<i64>>,
}

static DELETED: Mutex<Vec<usize>> = Mutex::new(Vec::new());
static NEXT: AtomicUsize = AtomicUsize::new(1);

unsafe extern "C" fn made_deleter(m: *mut DLManagedTensorVersioned) {
    // SAFETY: built by `make` below from two `Box::into_raw`s.
    let (m, ctx) = unsafe {
        let m = Box::from_raw(m);
        let ctx = Box::from_raw(m.manager_ctx.cast::<(usize, Made)>());
        (m, ctx)
    };
    DELETED.lock().unwrap().push(ctx.0);
    drop((m, ctx));
}

unsafe extern "C" fn made_legacy_deleter(m: *mut DLManagedTensor) {
    // SAFETY: built by `make_legacy` below.
    let (m, ctx) = unsafe {
        let m = Box::from_raw(m);
        let ctx = Box::from_raw(m.manager_ctx.cast::<(usize, Made)>());
        (m, ctx)
    };
    DELETED.lock().unwrap().push(ctx.0);
    drop((m, ctx));
}

fn deleted(id: usize) -> usize {
    DELETED.lock().unwrap().iter().filter(|&&i| i == id).count()
}

struct Spec {
    dtype: DLDataType,
    device: i32,
    ndim: i32,
    version: u32,
    flags: u64,
    byte_offset: u64,
    null_data: bool,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            dtype: DLDataType {
                code: code::UINT,
                bits: 64,
                lanes: 1,
            },
            device: 1,
            ndim: -100, // -100: use the shape's length
            version: 1,
            flags: 0,
            byte_offset: 0,
            null_data: false,
        }
    }
}

fn make(made: Made, spec: Spec) -> (*mut DLManagedTensorVersioned, usize) {
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    let mut ctx = Box::new((id, made));
    let ndim = if spec.ndim == -100 {
        ctx.1.shape.len() as i32
    } else {
        spec.ndim
    };
    let dl = DLTensor {
        data: if spec.null_data {
            std::ptr::null_mut()
        } else {
            ctx.1.data.as_mut_ptr().cast::<c_void>()
        },
        device: DLDevice {
            device_type: spec.device,
            device_id: 0,
        },
        ndim,
        dtype: spec.dtype,
        shape: ctx.1.shape.as_mut_ptr(),
        strides: ctx
            .1
            .strides
            .as_mut()
            .map_or(std::ptr::null_mut(), |s| s.as_mut_ptr()),
        byte_offset: spec.byte_offset,
    };
    let m = Box::new(DLManagedTensorVersioned {
        version: DLPackVersion {
            major: spec.version,
            minor: 0,
        },
        manager_ctx: Box::into_raw(ctx).cast(),
        deleter: Some(made_deleter),
        flags: spec.flags,
        dl_tensor: dl,
    });
    (Box::into_raw(m), id)
}

#[test]
fn imports_honour_offsets_strides_and_flags_and_delete_once() {
    // Compact (NULL strides) with a byte offset of one element.
    let (m, id) = make(
        Made {
            data: (0..7).collect(),
            shape: vec![2, 3],
            strides: None,
        },
        Spec {
            byte_offset: 8,
            ..Default::default()
        },
    );
    // SAFETY: a valid, unconsumed managed tensor.
    let t = unsafe { from_dlpack_versioned(m) }.unwrap();
    assert_eq!(t.to_vec::<u64>().unwrap(), [1, 2, 3, 4, 5, 6]);
    let views = [t.t().unwrap(), t.select(0, 1).unwrap(), t.clone()];
    drop(t);
    assert_eq!(deleted(id), 0, "deleted while views live");
    drop(views);
    assert_eq!(deleted(id), 1);

    // Negative strides: data points at the allocation start, byte_offset at the last element.
    let (m, id) = make(
        Made {
            data: (0..6).collect(),
            shape: vec![2, 3],
            strides: Some(vec![-3, -1]),
        },
        Spec {
            byte_offset: 5 * 8,
            flags: FLAG_READ_ONLY,
            ..Default::default()
        },
    );
    // SAFETY: as above.
    let t = unsafe { from_dlpack_versioned(m) }.unwrap();
    assert_eq!(t.to_vec::<u64>().unwrap(), [5, 4, 3, 2, 1, 0]);
    assert!(t.is_read_only());
    assert_eq!(t.fill_(0i64).unwrap_err().kind(), ErrorKind::ReadOnly);
    // A read-only tensor re-exports with the flag, and not through the legacy ABI.
    let m2 = to_dlpack_versioned(&t, false).unwrap();
    // SAFETY: a live export.
    assert_eq!(unsafe { (*m2).flags } & FLAG_READ_ONLY, FLAG_READ_ONLY);
    // SAFETY: consumed once.
    drop(unsafe { from_dlpack_versioned(m2) }.unwrap());
    assert_eq!(
        to_dlpack_legacy(&t, false).unwrap_err().kind(),
        ErrorKind::ReadOnly
    );
    drop(t);
    assert_eq!(deleted(id), 1);

    // 0-d and zero-size.
    let (m, id) = make(
        Made {
            data: vec![42],
            shape: vec![],
            strides: None,
        },
        Spec::default(),
    );
    // SAFETY: as above.
    let t = unsafe { from_dlpack_versioned(m) }.unwrap();
    assert_eq!((t.ndim(), t.get::<u64>(&[]).unwrap()), (0, 42));
    drop(t);
    assert_eq!(deleted(id), 1);
    let (m, id) = make(
        Made {
            data: vec![],
            shape: vec![3, 0],
            strides: Some(vec![0, 1]),
        },
        Spec::default(),
    );
    // SAFETY: as above.
    let t = unsafe { from_dlpack_versioned(m) }.unwrap();
    assert_eq!(t.shape(), &[3, 0]);
    drop(t);
    assert_eq!(deleted(id), 1);

    // Legacy import.
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    let mut ctx = Box::new((
        id,
        Made {
            data: vec![9, 8],
            shape: vec![2],
            strides: None,
        },
    ));
    let dl = DLTensor {
        data: ctx.1.data.as_mut_ptr().cast(),
        device: DLDevice {
            device_type: 1,
            device_id: 0,
        },
        ndim: 1,
        dtype: DLDataType {
            code: code::UINT,
            bits: 64,
            lanes: 1,
        },
        shape: ctx.1.shape.as_mut_ptr(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    };
    let m = Box::into_raw(Box::new(DLManagedTensor {
        dl_tensor: dl,
        manager_ctx: Box::into_raw(ctx).cast(),
        deleter: Some(made_legacy_deleter),
    }));
    // SAFETY: as above.
    let t = unsafe { from_dlpack_legacy(m) }.unwrap();
    assert_eq!(t.to_vec::<u64>().unwrap(), [9, 8]);
    assert!(!t.is_read_only());
    drop(t);
    assert_eq!(deleted(id), 1);
}

#[test]
fn rejections_error_and_delete_once() {
    let made = || Made {
        data: (0..6).collect(),
        shape: vec![2, 3],
        strides: None,
    };
    let cases: Vec<(&str, Made, Spec, ErrorKind)> = vec![
        (
            // Without a usable GPU (CI): the device error, naming why.
            "cuda",
            made(),
            Spec {
                device: 2,
                ..Default::default()
            },
            ErrorKind::Device,
        ),
        (
            "an unknown device type",
            made(),
            Spec {
                device: 4,
                ..Default::default()
            },
            ErrorKind::Value,
        ),
        (
            "complex32",
            made(),
            Spec {
                dtype: DLDataType {
                    code: code::COMPLEX,
                    bits: 32,
                    lanes: 1,
                },
                ..Default::default()
            },
            ErrorKind::DType,
        ),
        (
            "lanes",
            made(),
            Spec {
                dtype: DLDataType {
                    code: code::FLOAT,
                    bits: 32,
                    lanes: 4,
                },
                ..Default::default()
            },
            ErrorKind::DType,
        ),
        (
            "bits",
            made(),
            Spec {
                dtype: DLDataType {
                    code: code::FLOAT,
                    bits: 8,
                    lanes: 1,
                },
                ..Default::default()
            },
            ErrorKind::DType,
        ),
        (
            "version 2",
            made(),
            Spec {
                version: 2,
                ..Default::default()
            },
            ErrorKind::Value,
        ),
        (
            "ndim 65",
            made(),
            Spec {
                ndim: 65,
                ..Default::default()
            },
            ErrorKind::Shape,
        ),
        (
            "ndim -1",
            made(),
            Spec {
                ndim: -1,
                ..Default::default()
            },
            ErrorKind::Shape,
        ),
        (
            "negative size",
            Made {
                data: vec![0; 4],
                shape: vec![2, -2],
                strides: None,
            },
            Spec::default(),
            ErrorKind::Shape,
        ),
        (
            "overflowing extent",
            Made {
                data: vec![0; 4],
                shape: vec![1 << 40, 1 << 40],
                strides: Some(vec![1 << 40, 1]),
            },
            Spec::default(),
            ErrorKind::Overflow,
        ),
        (
            "misaligned",
            made(),
            Spec {
                byte_offset: 3,
                ..Default::default()
            },
            ErrorKind::Value,
        ),
        (
            "null data",
            made(),
            Spec {
                null_data: true,
                ..Default::default()
            },
            ErrorKind::Value,
        ),
    ];
    for (what, made, spec, kind) in cases {
        if what == "cuda" && strata::cuda::is_available() {
            continue;
        }
        let (m, id) = make(made, spec);
        // SAFETY: a managed tensor whose metadata may be bad but whose pointers are valid.
        let e = unsafe { from_dlpack_versioned(m) }.unwrap_err();
        assert_eq!(e.kind(), kind, "{what}: {e}");
        assert_eq!(deleted(id), 1, "{what}: deleter not called exactly once");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_views_round_trip(
        shape in prop::collection::vec(1usize..5, 0..4),
        flips in prop::collection::vec(any::<bool>(), 4),
        perm_seed in 0usize..24,
        step in 1i64..3,
        dt in 0usize..13,
    ) {
        let dtype = DType::ALL[dt];
        let t = sample(&shape, dtype);
        let nd = shape.len();
        let mut perm: Vec<i64> = (0..nd as i64).collect();
        if nd > 1 {
            perm.rotate_left(perm_seed % nd);
            if perm_seed % 2 == 1 { perm.swap(0, nd - 1); }
        }
        let mut v = t.permute(&perm).unwrap();
        let fl: Vec<i64> = (0..nd).filter(|&d| flips[d]).map(|d| d as i64).collect();
        v = v.flip(&fl).unwrap();
        if nd > 0 {
            v = v.slice(0, None, None, step).unwrap();
        }
        let u = round_trip(&v);
        prop_assert_eq!(u.shape(), v.shape());
        prop_assert_eq!(values_f64(&u), values_f64(&v));
        prop_assert!(u.same_storage(&u));
        let _ = dlpack::DLPACK_VERSION;
    }
}
