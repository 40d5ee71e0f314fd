//! Shared memory: share_memory_ in place, handles over Unix sockets (in one process and
//! to a child process), the named strategy and its cleanup, bad handles.

mod common;

use std::os::unix::net::{UnixListener, UnixStream};
use std::process::Command;

use strata::interop::shared_tensor::{decode, encode};
use strata::interop::{recv_tensor, send_tensor};
use strata::storage::shm::{kept_fd_count, sweep_stale_names, unlink_pending_names};
use strata::storage::ShmKind;
use strata::{s, DType, Storage, Tensor};

use common::serial;

fn arange(n: i64) -> Tensor {
    Tensor::arange(0, n, 1, DType::F32).unwrap()
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn shm_names() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!("strata-{}-", std::process::id())))
        .collect();
    v.sort();
    v
}

#[test]
fn share_memory_moves_in_place_and_every_view_follows() {
    let _serial = serial();
    let x = arange(12).view(&[3, 4]).unwrap();
    let v = x.index(&s![1.., ..;-1]).unwrap();
    assert!(!x.is_shared());
    let before = x.storage().data_ptr();
    x.share_memory_().unwrap();
    assert!(x.is_shared() && v.is_shared());
    assert_ne!(before, x.storage().data_ptr());
    assert_eq!(
        x.to_vec::<f32>().unwrap(),
        (0..12).map(|i| i as f32).collect::<Vec<_>>()
    );
    let ptr = x.storage().data_ptr();
    x.share_memory_().unwrap(); // a second call does nothing
    assert_eq!(ptr, x.storage().data_ptr());
    v.fill_(-1.0).unwrap();
    assert_eq!(x.to_vec::<f32>().unwrap()[4..], [-1.0; 8]);
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    assert!(maps.contains("memfd:strata"), "{maps}");
}

#[test]
fn share_memory_is_refused_while_exported() {
    let _serial = serial();
    let x = arange(4);
    let pin = x.storage().pin_export();
    let err = x.share_memory_().unwrap_err();
    assert!(err.to_string().contains("exported raw"), "{err}");
    assert!(!x.is_shared());
    drop(pin);
    let cap = strata::interop::dlpack::to_dlpack_versioned(&x, false).unwrap();
    assert!(x.share_memory_().is_err());
    // SAFETY: a capsule we made and have not handed to anyone; its deleter frees it once.
    unsafe { ((*cap).deleter.unwrap())(cap) };
    x.share_memory_().unwrap();
    assert!(x.is_shared());
}

#[test]
fn zero_bytes_read_only_and_direct_creation() {
    let _serial = serial();
    let e = Tensor::zeros(&[0, 3], DType::F64).unwrap();
    e.share_memory_().unwrap();
    assert!(e.is_shared());
    let (a, b) = UnixStream::pair().unwrap();
    send_tensor(&a, &e).unwrap();
    let r = recv_tensor(&b).unwrap();
    assert_eq!(r.shape(), &[0, 3]);

    let mut buf = vec![7u8; 8];
    let ptr = std::ptr::NonNull::new(buf.as_mut_ptr()).unwrap();
    // SAFETY: `buf` outlives the storage (share_memory_ copies out of it, and the storage
    // drops before `buf`).
    // `Exclusive`: nothing else uses these bytes, so share_memory_ may copy them (a plain
    // foreign owner is refused: see hostile_sharing.rs).
    let ro = unsafe {
        Storage::from_foreign(
            ptr,
            8,
            true,
            Box::new(strata::storage::Exclusive(Box::new(()))),
        )
    };
    ro.share_memory_().unwrap();
    assert!(ro.is_shared() && ro.is_read_only());
    let t = Tensor::from_parts(ro, strata::Layout::contiguous(&[8]).unwrap(), DType::U8).unwrap();
    send_tensor(&a, &t).unwrap();
    let r = recv_tensor(&b).unwrap();
    assert!(r.is_read_only());
    assert_eq!(r.to_vec::<u8>().unwrap(), vec![7; 8]);
    drop((t, r));
    drop(buf);

    let z = Tensor::zeros_shared(&[2, 5], DType::I32, ShmKind::Memfd).unwrap();
    assert!(z.is_shared());
    assert_eq!(z.to_vec::<i32>().unwrap(), vec![0; 10]);
}

#[test]
fn handles_over_a_socketpair_keep_views_and_identity() {
    let _serial = serial();
    let x = arange(24).view(&[2, 3, 4]).unwrap();
    let v = x.index(&s![1, ..;-1, 1..3]).unwrap();
    let (a, b) = UnixStream::pair().unwrap();
    send_tensor(&a, &v).unwrap();
    send_tensor(&a, &x).unwrap();
    let rv = recv_tensor(&b).unwrap();
    let rx = recv_tensor(&b).unwrap();
    assert_eq!(
        (rv.shape(), rv.strides(), rv.offset()),
        (v.shape(), v.strides(), v.offset())
    );
    assert_eq!(rv.to_vec::<f32>().unwrap(), v.to_vec::<f32>().unwrap());
    // The same segment received (twice) maps to the one storage this process has.
    assert!(rv.same_storage(&rx) && rx.same_storage(&x));
}

#[test]
fn fd_count_stays_flat_over_many_sends() {
    let _serial = serial();
    let (a, b) = UnixStream::pair().unwrap();
    let warm = arange(8);
    send_tensor(&a, &warm).unwrap();
    drop(recv_tensor(&b).unwrap());
    let before = open_fds();
    for i in 0..300 {
        let t = arange(16 + i);
        send_tensor(&a, &t).unwrap();
        let r = recv_tensor(&b).unwrap();
        assert!(r.same_storage(&t));
    }
    assert!(open_fds() <= before + 2, "{} -> {}", before, open_fds());
    assert!(kept_fd_count() < 64);
}

#[test]
fn bad_handles_are_errors() {
    let _serial = serial();
    assert!(decode(b"nope").is_err());
    let x = arange(6);
    let (_fd, rec) = x.to_shm_handle().unwrap();
    assert!(decode(&rec).is_ok());
    for cut in 0..rec.len() {
        assert!(decode(&rec[..cut]).is_err(), "cut at {cut}");
    }
    // A view that leaves the storage.
    let (info, mut meta) = decode(&rec).unwrap();
    meta.offset = 5;
    meta.shape = vec![4];
    let (fd, _) = x.to_shm_handle().unwrap();
    let err = Tensor::from_shm_handle(fd, &encode(&info, &meta)).unwrap_err();
    assert!(err.to_string().contains("out of bounds"), "{err}");
    // A segment smaller than claimed, and an unsealed memfd.
    let fd = rustix::fs::memfd_create("x", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    rustix::fs::ftruncate(&fd, 64).unwrap();
    let mut info2 = info.clone();
    info2.nbytes = 64;
    info2.id.ino = 1; // the sender's id is informational; a fresh inode is not registered
    let meta2 = strata::interop::TensorMeta {
        dtype: DType::U8,
        shape: vec![64],
        strides: vec![1],
        offset: 0,
    };
    let err = Tensor::from_shm_handle(fd, &encode(&info2, &meta2)).unwrap_err();
    assert!(err.to_string().contains("not sealed"), "{err}");
    let fd = rustix::fs::memfd_create("y", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    info2.nbytes = 1 << 20;
    let err = Tensor::from_shm_handle(fd, &encode(&info2, &meta2)).unwrap_err();
    assert!(err.to_string().contains("fewer than"), "{err}");
    // A peer that closes the socket.
    let (a, b) = UnixStream::pair().unwrap();
    drop(a);
    assert!(recv_tensor(&b).is_err());
}

/// The POSIX shm name of a named segment's base.
fn segment_name(t: &Tensor) -> String {
    let seg = t.storage().shared_segment().unwrap();
    seg.name().unwrap().to_string()
}

#[test]
fn named_segments_are_unlinked_by_receivers_creators_and_sweeps() {
    let _serial = serial();
    let t = Tensor::zeros_shared(&[4], DType::I64, ShmKind::Named).unwrap();
    let base = segment_name(&t);
    assert!(shm_names().contains(&base));
    let (n1, rec) = t.to_shm_name().unwrap();
    assert!(shm_names().contains(&n1));
    let r = Tensor::from_shm_name(&n1, &rec).unwrap();
    assert!(
        !shm_names().contains(&n1),
        "the receiver unlinks the send name"
    );
    assert!(r.same_storage(&t));
    assert!(
        Tensor::from_shm_name(&n1, &rec).is_err(),
        "a send name opens once"
    );
    drop((t, r));
    assert!(
        !shm_names().contains(&base),
        "the creator unlinks the base name on drop"
    );
    let t = Tensor::zeros_shared(&[4], DType::I64, ShmKind::Named).unwrap();
    let base = segment_name(&t);
    let (n2, _) = t.to_shm_name().unwrap(); // never received: the sender cleans it at exit
    assert!(unlink_pending_names() >= 2);
    assert!(!shm_names().contains(&n2) && !shm_names().contains(&base));
    drop(t);
    // A name whose process is dead is swept.
    let mut child = Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let stale = format!("/dev/shm/strata-{dead}-0-deadbeef");
    std::fs::write(&stale, b"x").unwrap();
    assert!(sweep_stale_names().unwrap() >= 1);
    assert!(!std::path::Path::new(&stale).exists());
    // A memfd has no name to send.
    assert!(arange(3).share_memory_().unwrap().to_shm_name().is_err());
}

/// The child half of `a_child_process_sees_and_writes_the_same_bytes` (runs only when the
/// parent re-executes this test binary with `STRATA_SHM_CHILD` set to a socket path).
#[test]
fn child_side() {
    let _serial = serial();
    let Ok(path) = std::env::var("STRATA_SHM_CHILD") else {
        return;
    };
    let sock = UnixStream::connect(path).unwrap();
    let t = recv_tensor(&sock).unwrap();
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    assert!(
        maps.contains("memfd:strata"),
        "no memfd mapping in the child"
    );
    assert_eq!(t.shape(), &[4]);
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![7.0, 5.0, 3.0, 1.0]);
    t.fill_(42.0).unwrap();
    send_tensor(&sock, &t).unwrap(); // the ack: the same view back
}

#[test]
fn a_child_process_sees_and_writes_the_same_bytes() {
    let _serial = serial();
    if std::env::var("STRATA_SHM_CHILD").is_ok() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("strata-shm-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sock");
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_side", "--nocapture", "--test-threads=1"])
        .env("STRATA_SHM_CHILD", &path)
        .spawn()
        .unwrap();
    let (sock, _) = listener.accept().unwrap();
    let x = arange(8);
    let v = x.index(&s![..;-2]).unwrap(); // [7, 5, 3, 1], offset 7, stride -2
    send_tensor(&sock, &v).unwrap();
    let back = recv_tensor(&sock).unwrap();
    assert!(child.wait().unwrap().success());
    assert!(back.same_storage(&x));
    assert_eq!(
        x.to_vec::<f32>().unwrap(),
        vec![0.0, 42.0, 2.0, 42.0, 4.0, 42.0, 6.0, 42.0]
    );
    let _ = std::fs::remove_dir_all(&dir);
}
