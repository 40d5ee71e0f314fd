//! `Device::Cuda`: parsing and printing, the clear error for every request of a CUDA
//! tensor, the one host check on every host-only operation, and the reduction table's
//! dtype rules against what the ops really return.

use std::ptr::NonNull;
use std::sync::Arc;

use strata::interop::dlpack::{to_dlpack_legacy, to_dlpack_versioned};
use strata::interop::{save_npy, serialize_safetensors};
use strata::{
    Allocator, CpuAllocator, DType, Device, Error, ErrorKind, Layout, Reduction, ReductionKind,
    Scalar, Storage, Tensor, TensorIndex,
};

/// Host memory that claims to be on `cuda:0`: a storage whose device is not the CPU on a
/// machine without a GPU (these tests skip themselves where a GPU is present). Its bytes are real host memory, so a check
/// that is missing shows as a wrong `Ok`, never as a crash.
struct FakeCuda;

impl Allocator for FakeCuda {
    fn name(&self) -> &'static str {
        "fake-cuda"
    }
    fn device(&self) -> Device {
        Device::Cuda(0)
    }
    fn allocate_zeroed(&self, nbytes: usize) -> strata::Result<NonNull<u8>> {
        CpuAllocator.allocate_zeroed(nbytes)
    }
    unsafe fn deallocate(&self, ptr: NonNull<u8>, nbytes: usize) {
        // SAFETY: `ptr` came from `CpuAllocator::allocate_zeroed(nbytes)` above (caller).
        unsafe { CpuAllocator.deallocate(ptr, nbytes) }
    }
}

fn cuda_tensor(shape: &[usize], dtype: DType) -> Tensor {
    let n: usize = shape.iter().product();
    let s = Storage::zeroed_in(Arc::new(FakeCuda), n * dtype.itemsize()).unwrap();
    Tensor::from_parts(s, Layout::contiguous(shape).unwrap(), dtype).unwrap()
}

/// `r` is the Device error of `op`, naming `cuda:0`.
#[track_caller]
fn assert_device_err<T: std::fmt::Debug>(r: strata::Result<T>, op: &str) {
    let e = r.expect_err("a CUDA tensor must be refused");
    assert_eq!(e.kind(), ErrorKind::Device, "{op}: {e}");
    let text = e.to_string();
    assert!(text.starts_with(op), "{op}: {text}");
    assert!(text.contains("cuda:0"), "{op}: {text}");
}

#[test]
fn device_prints_and_parses_as_pytorch() {
    assert_eq!(Device::Cpu.to_string(), "cpu");
    assert_eq!(Device::Cuda(0).to_string(), "cuda:0");
    assert_eq!(Device::Cuda(7).to_string(), "cuda:7");
    assert_eq!(Device::default(), Device::Cpu);
    for (s, d) in [
        ("cpu", Device::Cpu),
        ("cpu:0", Device::Cpu),
        ("cuda", Device::Cuda(0)),
        ("cuda:0", Device::Cuda(0)),
        ("cuda:1", Device::Cuda(1)),
        ("cuda:12", Device::Cuda(12)),
    ] {
        assert_eq!(s.parse::<Device>().unwrap(), d, "{s}");
        if s.contains(':') && s != "cpu:0" {
            assert_eq!(d.to_string(), s);
        }
    }
}

#[test]
fn bad_device_strings_are_value_errors_naming_the_text() {
    for s in ["", "gpu", "CUDA", "cuda0", "mps", " cpu", "cpu ", "xla:0"] {
        let e = s.parse::<Device>().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Value, "{s:?}");
        assert_eq!(
            e.to_string(),
            format!("device: Expected one of cpu, cuda device type at start of device string: {s}")
        );
    }
    for s in [
        "cuda:",
        "cuda:x",
        "cuda:-1",
        "cuda:+1",
        "cuda: 1",
        "cuda:1:2",
        "cuda:99999999999999999999999999",
    ] {
        let e = s.parse::<Device>().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Value, "{s:?}");
        assert_eq!(
            e.to_string(),
            format!("device: Invalid device string: '{s}'"),
            "{s:?}"
        );
    }
    let e = "cpu:1".parse::<Device>().unwrap_err();
    assert!(e.to_string().contains("'cpu:1'"), "{e}");
}

#[test]
fn cuda_requests_give_the_clear_error() {
    assert!(Device::Cpu.check_available("zeros").is_ok());
    let devices: &[Device] = if strata::cuda::is_available() {
        // Only device numbers this machine lacks are refused.
        &[Device::Cuda(63)]
    } else {
        assert_eq!(strata::cuda::device_count(), 0);
        &[Device::Cuda(0), Device::Cuda(3)]
    };
    for &d in devices {
        let e = d.check_available("zeros").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Device);
        // No driver here (CI), or a device number this machine does not have.
        let text = e.to_string();
        assert!(
            text.starts_with(&format!("zeros: device {d} is not available: ")),
            "{text}"
        );
        assert!(
            text.contains("no CUDA driver was found") || text.contains("invalid device ordinal"),
            "{text}"
        );
        assert!(matches!(e, Error::Device { device, .. } if device == d));
    }
    if strata::cuda::is_available() {
        return;
    }
    assert_device_err(
        Tensor::zeros_on(&[2, 3], DType::F32, Device::Cuda(0)),
        "zeros",
    );
    assert_device_err(Tensor::empty_on(&[2], DType::I64, Device::Cuda(0)), "empty");
    assert_device_err(
        Tensor::full_on(&[2], 1.5, DType::F64, Device::Cuda(0)),
        "full",
    );
    // Huge and bad shapes still get the device error first, never an allocation.
    assert_device_err(
        Tensor::zeros_on(&[usize::MAX, 2], DType::F32, Device::Cuda(0)),
        "zeros",
    );
    let x = Tensor::arange(0, 6, 1, DType::F32).unwrap();
    assert_device_err(x.to_device(Device::Cuda(0)), "to");
    // The CPU versions are the plain constructors.
    let z = Tensor::zeros_on(&[2, 3], DType::F32, Device::Cpu).unwrap();
    assert_eq!(
        (z.device(), z.to_vec::<f32>().unwrap()),
        (Device::Cpu, vec![0.0; 6])
    );
    let f = Tensor::full_on(&[3], 2, DType::I32, Device::Cpu).unwrap();
    assert_eq!(f.to_vec::<i32>().unwrap(), vec![2, 2, 2]);
    let same = x.to_device(Device::Cpu).unwrap();
    assert!(same.same_storage(&x));
}

#[test]
fn storage_takes_its_device_from_its_allocator() {
    if strata::cuda::is_available() {
        return; // the fake CUDA storage is host memory: only for machines without a GPU
    }
    let t = cuda_tensor(&[2, 3], DType::F32);
    assert_eq!(t.device(), Device::Cuda(0));
    assert_eq!(t.storage().device(), Device::Cuda(0));
    assert_eq!(
        Tensor::zeros(&[1], DType::F32).unwrap().device(),
        Device::Cpu
    );
    // Views keep the device.
    assert_eq!(t.t().unwrap().device(), Device::Cuda(0));
    assert_eq!(t.reshape(&[-1]).unwrap().device(), Device::Cuda(0));
}

#[test]
fn every_host_only_operation_refuses_a_cuda_storage() {
    if strata::cuda::is_available() {
        return; // the fake CUDA storage is host memory: only for machines without a GPU
    }
    let t = cuda_tensor(&[2, 3], DType::F32);
    assert_device_err(t.check_host("x"), "x");
    assert_device_err(t.storage().check_host("x"), "x");
    assert_device_err(t.to_vec::<f32>(), "to_vec");
    assert_device_err(t.get::<f32>(&[0, 0]), "get");
    assert_device_err(t.get_scalar(&[0, 0]), "get");
    assert_device_err(t.index(&strata::s![0, 0]).unwrap().item(), "get");
    assert_device_err(t.set(&[0, 0], 1.0), "set");
    assert_device_err(t.read_slice::<f32>(), "read_slice");
    assert_device_err(t.write_slice::<f32>(), "write_slice");
    assert_device_err(t.format_values("tensor(", ""), "format");
    assert_device_err(t.explain(), "explain");
    assert_device_err(t.to_row_major_bytes(), "to_row_major_bytes");
    assert_device_err(to_dlpack_versioned(&t, false), "to_dlpack");
    assert_device_err(to_dlpack_versioned(&t, true), "to_dlpack");
    assert_device_err(to_dlpack_legacy(&t, false), "to_dlpack");
    assert_device_err(t.share_memory_(), "share_memory_");
    assert_device_err(t.storage().share_memory_(), "share_memory_");
    assert_device_err(t.storage().shm_handle(), "shm_handle");
    assert_device_err(t.storage().shm_send_name(), "shm_send_name");
    assert_device_err(
        t.storage()
            .replace_backing("test", |_| Ok(strata::storage::Backing::empty())),
        "test",
    );
    assert_device_err(
        serialize_safetensors(&[("a", &t)], None),
        "safetensors save",
    );
    let dir = std::env::temp_dir().join(format!("strata-device-{}.npy", std::process::id()));
    assert_device_err(save_npy(&dir, &t), "npy save");
    assert!(!dir.exists(), "a refused save must not create the file");
    let mut sink = Vec::new();
    assert_device_err(
        strata::interop::npy::write_npy(&mut sink, &t, None),
        "npy save",
    );
    assert!(sink.is_empty());
    // Display cannot fail: it prints the error instead of the values.
    let shown = t.to_string();
    assert!(
        shown.contains("cuda:0") && shown.contains("unreadable"),
        "{shown}"
    );
    // Metadata needs no host access.
    assert_eq!(
        (t.shape(), t.strides(), t.dtype()),
        (&[2, 3][..], &[3, 1][..], DType::F32)
    );
    assert!(!t.is_shared());
    // The data is still intact and the storage still usable as host memory underneath.
    assert_eq!(t.storage().nbytes(), 24);
}

#[test]
fn every_routed_op_refuses_a_cuda_tensor() {
    if strata::cuda::is_available() {
        return; // the fake CUDA storage is host memory: only for machines without a GPU
    }
    let t = cuda_tensor(&[2, 3], DType::F32);
    let c = Tensor::ones(&[2, 3], DType::F32).unwrap();
    // Reductions and scans: one per kind, and every table entry below.
    assert_device_err(t.sum(&[], false), "sum");
    assert_device_err(t.mean(&[0], true), "mean");
    assert_device_err(t.var(&[1], false), "var");
    assert_device_err(t.logsumexp(&[1], false), "logsumexp");
    assert_device_err(t.max(), "max");
    assert_device_err(t.max_dim(0, false), "max");
    assert_device_err(t.argmin(None, false), "argmin");
    assert_device_err(t.argmax(Some(1), true), "argmax");
    assert_device_err(t.cumsum(1), "cumsum");
    assert_device_err(t.cumprod(0), "cumprod");
    // Copies, casts, fills, matmul.
    assert_device_err(t.fill_(1.0), "fill_");
    assert_device_err(t.zero_(), "fill_");
    assert_device_err(t.clone_data(), "copy");
    assert_device_err(t.contiguous_copy(), "copy");
    assert_device_err(t.t().unwrap().contiguous(), "copy");
    assert_device_err(t.to_dtype(DType::F64), "copy");
    assert_device_err(t.matmul(&t.t().unwrap()), "matmul");
    assert_device_err(t.t().unwrap().mm(&t), "mm");
    // copy_ crosses devices (as PyTorch's); without a driver it is refused naming it.
    assert_device_err(c.copy_(&t), "copy_");
    assert_device_err(t.copy_(&c), "copy_");
    // Any other op mixing devices: PyTorch's text, naming both.
    let e = c.add(&t).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Device);
    assert!(
        e.to_string().contains("Expected all tensors to be on the same device, but found at least two devices, cpu and cuda:0"),
        "{e}"
    );
    let e = c.matmul(&t.t().unwrap()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Device, "{e}");
    // The CPU operand was not written.
    assert_eq!(c.to_vec::<f32>().unwrap(), vec![1.0; 6]);
}

#[test]
fn reduction_table_is_complete_and_consistent() {
    let names: Vec<&str> = Reduction::ALL.iter().map(|r| r.name()).collect();
    assert_eq!(
        names,
        [
            "sum",
            "prod",
            "mean",
            "amax",
            "amin",
            "max",
            "min",
            "argmax",
            "argmin",
            "all",
            "any",
            "var",
            "std",
            "logsumexp",
            "cumsum",
            "cumprod"
        ]
    );
    for r in Reduction::ALL {
        assert!(!r.doc().is_empty(), "{r:?}");
    }
    let scans: Vec<_> = Reduction::ALL
        .iter()
        .filter(|r| r.kind() == ReductionKind::Scan)
        .map(|r| r.name())
        .collect();
    assert_eq!(scans, ["cumsum", "cumprod"]);
}

/// Runs the table entry `r` on `x` as its `Tensor` method does (over dim 0 where one is
/// needed); the values output (indices for `Arg`).
fn run(r: Reduction, x: &Tensor) -> strata::Result<Tensor> {
    Ok(match r {
        Reduction::Sum => x.sum(&[0], false)?,
        Reduction::Prod => x.prod(&[0], false)?,
        Reduction::Mean => x.mean(&[0], false)?,
        Reduction::Amax => x.amax(&[0], false)?,
        Reduction::Amin => x.amin(&[0], false)?,
        Reduction::Max => {
            let all = x.max()?;
            let (v, i) = x.max_dim(0, false)?;
            assert_eq!((all.dtype(), i.dtype()), (v.dtype(), DType::I64));
            v
        }
        Reduction::Min => {
            let all = x.min()?;
            let (v, i) = x.min_dim(0, false)?;
            assert_eq!((all.dtype(), i.dtype()), (v.dtype(), DType::I64));
            v
        }
        Reduction::Argmax => x.argmax(Some(0), false)?,
        Reduction::Argmin => x.argmin(None, false)?,
        Reduction::All => x.all(&[0], false)?,
        Reduction::Any => x.any(&[], false)?,
        Reduction::Var => x.var(&[0], false)?,
        Reduction::Std => x.std(&[0], false)?,
        Reduction::Logsumexp => x.logsumexp(&[0], false)?,
        Reduction::Cumsum => x.cumsum(0)?,
        Reduction::Cumprod => x.cumprod(0)?,
    })
}

#[test]
fn reduction_table_dtype_rules_are_what_the_ops_return() {
    // The real dtypes: a complex tensor's reductions are composed from its parts' in
    // `ops/reduce.rs` (tested in python/tests/test_complex.py), not by the table's rule.
    for &dt in DType::ALL.iter().filter(|d| !d.is_complex()) {
        let x = Tensor::arange(1, 7, 1, DType::I64)
            .unwrap()
            .to_dtype(dt)
            .unwrap()
            .view(&[2, 3])
            .unwrap();
        for &r in Reduction::ALL {
            let rule = r.dtype_rule().out_dtype(dt);
            let got = run(r, &x);
            match (rule, got) {
                (Ok(want), Ok(t)) => assert_eq!(t.dtype(), want, "{} of {dt}", r.name()),
                (Err(e1), Err(e2)) => assert_eq!(e1, e2, "{} of {dt}", r.name()),
                (a, b) => panic!("{} of {dt}: table says {a:?}, op gives {b:?}", r.name()),
            }
        }
    }
    // Spot checks of the rules against PyTorch's.
    use strata::DTypeRule;
    assert_eq!(
        DTypeRule::SumLike.out_dtype(DType::Bool).unwrap(),
        DType::I64
    );
    assert_eq!(DTypeRule::SumLike.out_dtype(DType::U8).unwrap(), DType::I64);
    assert_eq!(
        DTypeRule::SumLike.out_dtype(DType::BF16).unwrap(),
        DType::BF16
    );
    assert_eq!(DTypeRule::Logical.out_dtype(DType::U8).unwrap(), DType::U8);
    assert_eq!(
        DTypeRule::Logical.out_dtype(DType::F32).unwrap(),
        DType::Bool
    );
    assert_eq!(
        DTypeRule::ToFloat.out_dtype(DType::I32).unwrap(),
        DType::F32
    );
    let e = Reduction::Mean
        .dtype_rule()
        .out_dtype(DType::I32)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Int"
    );
}

/// Elementwise ops and advanced indexing go through the backend too: a CUDA tensor (or a
/// CPU one mixed with it) is refused with the Device error, and nothing is written.
/// (The refusal comes from the output's allocation, which names `empty_like`, or from
/// the backend call, which names the op; either way it names the device.)
#[test]
fn elementwise_and_indexing_refuse_a_cuda_tensor() {
    if strata::cuda::is_available() {
        return; // the fake CUDA storage is host memory: only for machines without a GPU
    }
    let t = cuda_tensor(&[2, 3], DType::F32);
    let c = Tensor::ones(&[2, 3], DType::F32).unwrap();
    let device_err = |r: strata::Result<Tensor>, what: &str| {
        let e = r.expect_err(what);
        assert_eq!(e.kind(), ErrorKind::Device, "{what}: {e}");
        assert!(e.to_string().contains("cuda:0"), "{what}: {e}");
    };
    device_err(t.neg(), "neg");
    device_err(t.sinh(), "sinh");
    device_err(t.add(&t), "add");
    device_err(c.add(&t), "cpu + cuda");
    device_err(t.add(&c), "cuda + cpu");
    device_err(t.clamp(Some(Scalar::Float(0.0)), None), "clamp");
    let ix = Tensor::from_vec(vec![1i64, 0], &[2]).unwrap();
    device_err(t.index(&[TensorIndex::from(&ix)]), "index");
    device_err(
        c.index_put_(&[TensorIndex::from(&ix)], &t).cloned(),
        "index_put_",
    );
    let e = c.add_(&t).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Device, "{e}");
    assert_eq!(c.to_vec::<f32>().unwrap(), vec![1.0; 6]);
}
