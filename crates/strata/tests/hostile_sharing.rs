//! Hostile sharing and file tests (issue 15, items 4 and 5): `share_memory_` never moves
//! memory it would detach from its owner (a shared file map travels as its file, foreign
//! memory is refused), handles of file regions are checked like any other handle, and a
//! safetensors file keeps reading the file it opened after the path is replaced.

mod common;

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::ptr::NonNull;

use strata::interop::shared_tensor::{decode, encode};
use strata::interop::{
    load_npy, recv_tensor, save_npy, save_safetensors, send_tensor, NpyLoadOptions,
    SafetensorsFile, TensorMeta,
};
use strata::storage::{Exclusive, MapMode, Owner, SegmentId, SegmentInfo, ShmHandle, ShmKind};
use strata::{DType, ErrorKind, Layout, Storage, Tensor};

use common::{tmp_path, TmpPath};

fn tmp(ext: &str) -> TmpPath {
    tmp_path("hostile-sharing", ext)
}

fn f32_file(n: usize) -> (TmpPath, Vec<u8>) {
    let p = tmp("bin");
    let data: Vec<u8> = (0..n as u32)
        .flat_map(|v| (v as f32).to_le_bytes())
        .collect();
    std::fs::write(&p.0, &data).unwrap();
    (p, data)
}

fn file_f32(p: &TmpPath) -> Vec<f32> {
    std::fs::read(&p.0)
        .unwrap()
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn is_memfd(t: &Tensor) -> bool {
    t.storage().with_owner(|o| matches!(o, Owner::Shared(_)))
}

#[test]
fn a_shared_file_map_is_shared_and_share_memory_leaves_it_on_the_file() {
    let (p, _) = f32_file(16);
    let t = Tensor::from_file(&p.0, true, 16, DType::F32).unwrap();
    assert!(t.is_shared(), "a MAP_SHARED file map is shared memory");
    let ptr = t.data_ptr();
    t.share_memory_().unwrap();
    assert_eq!(t.data_ptr(), ptr, "share_memory_ moved a shared file map");
    assert!(!is_memfd(&t));
    t.set(&[3], -5.0).unwrap();
    assert_eq!(file_f32(&p)[3], -5.0, "the write did not reach the file");
}

#[test]
fn a_shared_file_map_travels_as_its_file_and_writes_reach_both() {
    let (p, _) = f32_file(32);
    let t = Tensor::from_file(&p.0, true, 32, DType::F32).unwrap();
    let v = t.narrow(0, 8, 8).unwrap().view(&[2, 4]).unwrap();
    let (a, b) = UnixStream::pair().unwrap();
    send_tensor(&a, &v).unwrap();
    assert!(!is_memfd(&t), "sending moved the file map into a memfd");
    let r = recv_tensor(&b).unwrap();
    // Received back in the process that sent it: the very storage, not a second mapping.
    assert!(r.same_storage(&t));
    assert_eq!(r.shape(), &[2, 4]);
    r.set(&[1, 0], 100.0).unwrap();
    assert_eq!(t.get::<f32>(&[12]).unwrap(), 100.0);
    assert_eq!(file_f32(&p)[12], 100.0);

    // A handle to the same region that this process has not seen: a fresh mapping of the
    // file, MAP_SHARED, so writes through it reach the file and the first mapping.
    let fd: OwnedFd = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&p.0)
        .unwrap()
        .into();
    let info = SegmentInfo {
        nbytes: 16,
        id: SegmentId { dev: 0, ino: 0 },
        read_only: false,
        kind: ShmKind::Memfd,
        name: None,
        file_offset: Some(4 * 20),
    };
    let s = Storage::from_shm_handle(ShmHandle { fd, info }).unwrap();
    assert!(!s.same(t.storage()));
    let u = Tensor::from_parts(s, Layout::contiguous(&[4]).unwrap(), DType::F32).unwrap();
    assert_eq!(u.to_vec::<f32>().unwrap(), vec![20.0, 21.0, 22.0, 23.0]);
    u.fill_(7.5).unwrap();
    assert_eq!(&file_f32(&p)[20..24], &[7.5; 4]);
    assert_eq!(
        t.get::<f32>(&[21]).unwrap(),
        7.5,
        "the two mappings disagree"
    );
}

#[test]
fn a_read_only_map_travels_read_only_and_a_private_map_is_copied() {
    let p = tmp("npy");
    let x = Tensor::arange(0, 12, 1, DType::F64).unwrap();
    save_npy(&p.0, &x).unwrap();
    let ro = load_npy(
        &p.0,
        NpyLoadOptions {
            mmap: Some(MapMode::ReadOnly),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(ro.is_shared() && ro.is_read_only());
    let (a, b) = UnixStream::pair().unwrap();
    send_tensor(&a, &ro).unwrap();
    let r = recv_tensor(&b).unwrap();
    assert!(r.is_read_only());
    assert_eq!(r.fill_(1.0).unwrap_err().kind(), ErrorKind::ReadOnly);
    assert_eq!(r.to_vec::<f64>().unwrap(), x.to_vec::<f64>().unwrap());

    // Copy-on-write: private memory whose writes never reach the file; share_memory_
    // copies it (what the user wrote comes along) and the file stays as it was.
    let before = std::fs::read(&p.0).unwrap();
    let c = load_npy(
        &p.0,
        NpyLoadOptions {
            mmap: Some(MapMode::CopyOnWrite),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(!c.is_shared());
    c.set(&[0], 42.0).unwrap();
    c.share_memory_().unwrap();
    assert!(is_memfd(&c));
    assert_eq!(c.get::<f64>(&[0]).unwrap(), 42.0);
    c.set(&[1], 43.0).unwrap();
    assert_eq!(std::fs::read(&p.0).unwrap(), before);
}

#[test]
fn foreign_memory_is_refused_not_silently_copied() {
    let mut buf = vec![1u8; 64];
    let ptr = NonNull::new(buf.as_mut_ptr()).unwrap();
    // SAFETY: `buf` outlives the storage (dropped at the end).
    let s = unsafe { Storage::from_foreign(ptr, 64, false, Box::new(())) };
    let t = Tensor::from_parts(s, Layout::contiguous(&[64]).unwrap(), DType::U8).unwrap();
    let e = t.share_memory_().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Value);
    let msg = e.to_string();
    assert!(
        msg.contains("share_memory_") && msg.contains("clone()"),
        "{msg}"
    );
    assert!(msg.contains("NumPy") && msg.contains("DLPack"), "{msg}");
    assert!(!t.is_shared());
    let (a, _b) = UnixStream::pair().unwrap();
    let e = send_tensor(&a, &t).unwrap_err();
    assert!(e.to_string().contains("clone()"), "{e}");
    // The storage still is the owner's memory: writes reach `buf`.
    t.fill_(9).unwrap();
    drop(t);
    assert!(buf.iter().all(|&b| b == 9));

    // A clone may be shared.
    let mut buf2 = vec![3u8; 8];
    let ptr = NonNull::new(buf2.as_mut_ptr()).unwrap();
    // SAFETY: as above.
    let s = unsafe { Storage::from_foreign(ptr, 8, true, Box::new(())) };
    let t = Tensor::from_parts(s, Layout::contiguous(&[8]).unwrap(), DType::U8).unwrap();
    assert!(t.share_memory_().is_err(), "read-only foreign memory moved");
    let c = t.contiguous_copy().unwrap();
    c.share_memory_().unwrap();
    assert!(c.is_shared());
    drop((t, c));
    // An exclusive owner may move.
    let ptr = NonNull::new(buf2.as_mut_ptr()).unwrap();
    // SAFETY: as above.
    let s = unsafe { Storage::from_foreign(ptr, 8, false, Box::new(Exclusive(Box::new(())))) };
    s.share_memory_().unwrap();
    assert!(s.is_shared());
    drop(s);
    drop(buf2);
}

#[test]
fn bad_file_handles_are_errors() {
    let (p, _) = f32_file(4);
    let open = || -> OwnedFd { std::fs::File::open(&p.0).unwrap().into() };
    let info = |off: u64, nbytes: usize| SegmentInfo {
        nbytes,
        id: SegmentId { dev: 0, ino: 0 },
        read_only: true,
        kind: ShmKind::Memfd,
        name: None,
        file_offset: Some(off),
    };
    for (off, n) in [
        (0, 17),
        (16, 1),
        (u64::MAX, 1),
        (u64::MAX - 3, 8),
        (1 << 62, usize::MAX),
        (0, usize::MAX),
    ] {
        let e = Storage::from_shm_handle(ShmHandle {
            fd: open(),
            info: info(off, n),
        })
        .unwrap_err();
        assert!(
            matches!(
                e.kind(),
                ErrorKind::Format | ErrorKind::Overflow | ErrorKind::Io
            ),
            "{off} {n}: {e}"
        );
    }
    // Not a regular file: a socket.
    let (a, _b) = UnixStream::pair().unwrap();
    let e = Storage::from_shm_handle(ShmHandle {
        fd: a.into(),
        info: info(0, 4),
    })
    .unwrap_err();
    assert!(e.to_string().contains("regular file"), "{e}");
    // A view outside the received region is refused by the layout check.
    let meta = TensorMeta {
        dtype: DType::F32,
        shape: vec![5],
        strides: vec![1],
        offset: 0,
    };
    assert!(Tensor::from_shm_handle(open(), &encode(&info(0, 16), &meta)).is_err());
    let meta = TensorMeta {
        dtype: DType::F32,
        shape: vec![2],
        strides: vec![isize::MAX],
        offset: usize::MAX / 2,
    };
    assert!(Tensor::from_shm_handle(open(), &encode(&info(0, 16), &meta)).is_err());
    // Record checks: a file handle with a name, a memfd handle with a file offset.
    let ok = TensorMeta {
        dtype: DType::F32,
        shape: vec![4],
        strides: vec![1],
        offset: 0,
    };
    let mut rec = encode(&info(0, 16), &ok);
    assert_eq!(decode(&rec).unwrap().0.file_offset, Some(0));
    let t = Tensor::from_shm_handle(open(), &rec).unwrap();
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![0.0, 1.0, 2.0, 3.0]);
    rec[5] = 3; // an unknown kind
    assert!(decode(&rec).is_err());
    let mut memfd = info(0, 16);
    memfd.file_offset = None;
    let mut rec = encode(&memfd, &ok);
    rec[40..48].copy_from_slice(&8u64.to_le_bytes()); // the file offset field
    assert!(decode(&rec)
        .unwrap_err()
        .to_string()
        .contains("file offset"));
}

#[test]
fn safetensors_file_reads_the_file_it_opened_after_the_path_is_replaced() {
    let p = tmp("safetensors");
    let a = Tensor::arange(0, 6, 1, DType::F32)
        .unwrap()
        .view(&[2, 3])
        .unwrap();
    let b = Tensor::arange(100, 104, 1, DType::I64).unwrap();
    save_safetensors(&p.0, &[("a", &a), ("b", &b)], None).unwrap();
    let f = SafetensorsFile::open(&p.0).unwrap();
    let early = f.get("a").unwrap();
    // Replace the path atomically with a different file (other names, sizes, offsets).
    let q = tmp("safetensors");
    let big = Tensor::full(&[50], 9.0, DType::F64).unwrap();
    let c = Tensor::full(&[3], -1.0, DType::F32).unwrap();
    save_safetensors(&q.0, &[("a", &big), ("zz", &c)], None).unwrap();
    std::fs::rename(&q.0, &p.0).unwrap();
    let a2 = f.get("a").unwrap();
    assert_eq!((a2.shape(), a2.dtype()), (&[2usize, 3][..], DType::F32));
    assert_eq!(a2.to_vec::<f32>().unwrap(), a.to_vec::<f32>().unwrap());
    assert_eq!(
        f.get("b").unwrap().to_vec::<i64>().unwrap(),
        vec![100, 101, 102, 103]
    );
    assert!(f.get("zz").is_err());
    drop(f);
    // Tensors outlive the file object: each holds its own mapping.
    assert_eq!(early.to_vec::<f32>().unwrap(), a.to_vec::<f32>().unwrap());
    assert_eq!(a2.to_vec::<f32>().unwrap(), a.to_vec::<f32>().unwrap());
}

#[test]
fn npy_map_is_of_the_file_opened() {
    // `load_npy` reads the header and maps the data from one open file, so the mapped
    // data always matches the header it read (no reopen of the path in between).
    let p = tmp("npy");
    let x = Tensor::arange(0, 10, 1, DType::I32).unwrap();
    save_npy(&p.0, &x).unwrap();
    for mode in [MapMode::ReadOnly, MapMode::Shared, MapMode::CopyOnWrite] {
        let t = load_npy(
            &p.0,
            NpyLoadOptions {
                mmap: Some(mode),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(t.to_vec::<i32>().unwrap(), x.to_vec::<i32>().unwrap());
        assert_eq!(t.is_shared(), mode != MapMode::CopyOnWrite, "{mode:?}");
    }
}

/// Run by [`a_map_beyond_the_fd_budget_reopens_its_path_and_detects_a_replaced_file`] in
/// a child process (this test binary re-executed with `STRATA_FD_BUDGET_CHILD` set), whose
/// fd limit is lowered before anything reads it.
#[test]
fn fd_budget_child_side() {
    let Ok(dir) = std::env::var("STRATA_FD_BUDGET_CHILD") else {
        return;
    };
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let lim = getrlimit(Resource::Nofile);
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(64),
            maximum: lim.maximum,
        },
    )
    .unwrap();
    // Use up the budget of kept fds (a quarter of 64) with shared-memory segments.
    let mut keep = Vec::new();
    while keep.len() < 64 {
        let before = strata::storage::shm::kept_fd_count();
        keep.push(Tensor::zeros_shared(&[2], DType::U8, ShmKind::Memfd).unwrap());
        if strata::storage::shm::kept_fd_count() == before {
            break; // the budget is spent: later maps keep no fd
        }
    }
    let path = PathBuf::from(&dir).join("budget.bin");
    std::fs::write(&path, [1u8, 2, 3, 4, 5, 6, 7, 8]).unwrap();
    let t = Tensor::from_file(&path, true, 8, DType::U8).unwrap();
    // No kept fd: the send reopens the path, checked to be the mapped file.
    let h = t.storage().shm_handle().unwrap();
    let st = rustix::fs::fstat(&h.fd).unwrap();
    assert_eq!(st.st_ino as u64, h.info.id.ino);
    assert_eq!(h.info.file_offset, Some(0));
    // Replace the path by another file: the send refuses instead of sending the new one.
    let other = PathBuf::from(&dir).join("other.bin");
    std::fs::write(&other, [9u8; 8]).unwrap();
    std::fs::rename(&other, &path).unwrap();
    let e = t.storage().shm_handle().unwrap_err();
    assert!(e.to_string().contains("replaced"), "{e}");
    assert_eq!(t.to_vec::<u8>().unwrap(), vec![1, 2, 3, 4, 5, 6, 7, 8]);
    println!("FD_BUDGET_CHILD_OK");
}

#[test]
fn a_map_beyond_the_fd_budget_reopens_its_path_and_detects_a_replaced_file() {
    if std::env::var("STRATA_FD_BUDGET_CHILD").is_ok() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("strata-fd-budget-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "fd_budget_child_side",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("STRATA_FD_BUDGET_CHILD", &dir)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("FD_BUDGET_CHILD_OK"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
