"""Tensor files from Python: .npy (st.save / st.load) against numpy.load / numpy.save,
safetensors (strata.safetensors) against the safetensors package, st.from_file, zero-copy
mapping checks through /proc/self/maps, and malformed files."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

import strata as st
from _strata_helpers import NP_DTYPES, np_sample
from strata import safetensors as sst

safetensors_numpy = pytest.importorskip("safetensors.numpy")

SHAPES = [(), (0,), (2, 0, 3), (7,), (3, 4, 5)]


def mapping_of(ptr: int) -> str | None:
    """The path of the /proc/self/maps region holding address ``ptr`` (None: anonymous)."""
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(maxsplit=5)
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if lo <= ptr < hi:
                return parts[5].strip() if len(parts) > 5 else None
    raise AssertionError(f"address {ptr:#x} is not mapped")


# ---------------------------------------------------------------------------- .npy


@pytest.mark.parametrize("dtype", NP_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_npy_strata_to_numpy_and_back(tmp_path, dtype, shape):
    a = np_sample(shape, dtype)
    p = tmp_path / "a.npy"
    st.save(st.from_numpy(a), p)
    b = np.load(p)
    assert b.dtype == a.dtype and b.shape == a.shape
    np.testing.assert_array_equal(b, a)
    with open(p, "rb") as f:
        version = np.lib.format.read_magic(f)
        read = {(1, 0): np.lib.format.read_array_header_1_0}.get(
            version, np.lib.format.read_array_header_2_0
        )
        read(f)
        assert f.tell() % 64 == 0
    # ... and numpy's file back into strata, copied and mapped.
    q = tmp_path / "b.npy"
    np.save(q, a)
    for kw in ({}, {"mmap": True}, {"mmap_mode": "r"}, {"mmap_mode": "r+"}, {"mmap_mode": "c"}):
        t = st.load(q, **kw)
        assert t.shape == a.shape and t.numpy().dtype == a.dtype, kw
        np.testing.assert_array_equal(t.numpy(), a)


def test_npy_views_fortran_and_big_endian(tmp_path):
    a = np_sample((4, 6), np.float32)
    t = st.from_numpy(a)
    for v, ref in ((t.T, a.T), (t.flip(0), a[::-1]), (t[:, ::-2], a[:, ::-2])):
        p = tmp_path / "v.npy"
        st.save(v, p)
        np.testing.assert_array_equal(np.load(p), ref)
    # An F-contiguous tensor is saved as fortran_order, as NumPy saves it.
    st.save(t.T, tmp_path / "f.npy")
    with open(tmp_path / "f.npy", "rb") as f:
        np.lib.format.read_magic(f)
        _, fortran, _ = np.lib.format.read_array_header_1_0(f)
    assert fortran
    # NumPy's F-order file loads as an F-strided view (zero-copy when mapped).
    fa = np.asfortranarray(np_sample((3, 5, 2), np.int16))
    np.save(tmp_path / "g.npy", fa)
    for kw in ({}, {"mmap": True}):
        u = st.load(tmp_path / "g.npy", **kw)
        assert u.stride() == tuple(s // 2 for s in fa.strides)
        np.testing.assert_array_equal(u.numpy(), fa)
    # Big-endian data is byte-swapped into a copy.
    for dt in (">f4", ">i8", ">u2", ">f8"):
        be = np_sample((5, 3), np.dtype(dt).newbyteorder("="), seed=3).astype(dt)
        np.save(tmp_path / "be.npy", be)
        for kw in ({}, {"mmap_mode": "r"}):
            u = st.load(tmp_path / "be.npy", **kw)
            np.testing.assert_array_equal(u.numpy(), be.astype(be.dtype.newbyteorder("=")))
        with pytest.raises(ValueError, match="big-endian"):
            st.load(tmp_path / "be.npy", mmap_mode="r+")


@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
def test_npy_versions(tmp_path, version):
    a = np_sample((3, 4), np.float64)
    p = tmp_path / "v.npy"
    with open(p, "wb") as f:
        np.lib.format.write_array(f, a, version=version)
    np.testing.assert_array_equal(st.load(p).numpy(), a)
    st.save(st.from_numpy(a), p, version=version)
    with open(p, "rb") as f:
        assert np.lib.format.read_magic(f) == version
    np.testing.assert_array_equal(np.load(p), a)


def test_npy_large(tmp_path):
    a = np_sample((512, 1024), np.float32)  # 2 MiB
    p = tmp_path / "big.npy"
    st.save(st.from_numpy(a), p)
    np.testing.assert_array_equal(np.load(p), a)
    t = st.load(p, mmap=True)
    np.testing.assert_array_equal(t.numpy(), a)


def test_npy_mmap_is_zero_copy_and_honours_the_mode(tmp_path):
    a = np.arange(4096, dtype=np.float32)
    p = tmp_path / "m.npy"
    np.save(p, a)
    c = st.load(p, mmap=True)
    assert mapping_of(c.data_ptr()) == str(p)
    c[0] = -1.0  # copy-on-write: private
    assert c[0].item() == -1.0
    assert np.load(p)[0] == 0.0
    r = st.load(p, mmap_mode="r")
    assert mapping_of(r.data_ptr()) == str(p)
    with pytest.raises(st.ReadOnlyError):
        r[1] = 5.0
    s = st.load(p, mmap_mode="r+")
    s[2] = 42.0
    del s
    assert np.load(p)[2] == 42.0
    assert r[2].item() == 42.0  # the read-only map sees the shared write
    u = st.load(p)
    assert mapping_of(u.data_ptr()) != str(p)
    with pytest.raises(ValueError, match="mmap_mode"):
        st.load(p, mmap_mode="w")


def test_npy_errors(tmp_path):
    p = tmp_path / "e.npy"
    with pytest.raises(TypeError, match="bfloat16"):
        st.save(st.zeros(2, dtype=st.bfloat16), p)
    assert not p.exists()
    with pytest.raises(TypeError):
        st.save(np.zeros(2), p)
    with pytest.raises(OSError):
        st.load(tmp_path / "missing.npy")
    np.save(p, np.array(["a", "b"], dtype=object), allow_pickle=True)
    with pytest.raises(TypeError, match="object"):
        st.load(p)
    np.save(p, np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")]))
    with pytest.raises(TypeError, match="structured"):
        st.load(p)
    np.save(p, np.zeros(2, dtype=np.clongdouble))
    with pytest.raises(TypeError, match="complex"):
        st.load(p)
    np.save(p, np.arange(10, dtype=np.int32))
    good = p.read_bytes()
    for bad in (b"", b"\x93NUMPZ" + good[6:], good[:-1], good[:30], good[:6] + b"\x09" + good[7:]):
        p.write_bytes(bad)
        with pytest.raises(st.FormatError):
            st.load(p)
        with pytest.raises(ValueError):
            st.load(p, mmap=True)
    # A header longer than the cap is refused unless the cap is raised, as in NumPy.
    a = np.zeros(3, dtype=np.float32)
    pad = b"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }" + b" " * 20000
    pad += b" " * ((-(12 + len(pad) + 1)) % 64) + b"\n"
    p.write_bytes(b"\x93NUMPY\x02\x00" + struct.pack("<I", len(pad)) + pad + a.tobytes())
    with pytest.raises(st.FormatError, match="limit"):
        st.load(p)
    np.testing.assert_array_equal(st.load(p, max_header_size=30000).numpy(), a)


def test_from_file(tmp_path):
    a = np.arange(16, dtype=np.float32)
    p = tmp_path / "raw.bin"
    a.tofile(p)
    t = st.from_file(p, shared=False, size=16)
    assert t.dtype == st.float32
    np.testing.assert_array_equal(t.numpy(), a)
    t.fill_(0)
    np.testing.assert_array_equal(np.fromfile(p, dtype=np.float32), a)
    s = st.from_file(str(p), True, 8, dtype=st.int32)
    s[0] = 7
    del s
    assert np.fromfile(p, dtype=np.int32)[0] == 7
    with pytest.raises(st.FormatError, match="64 bytes"):
        st.from_file(p, size=17)
    with pytest.raises(OSError):
        st.from_file(tmp_path / "nope.bin", size=1)


# ---------------------------------------------------------------------- safetensors


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_safetensors_both_ways_every_dtype(tmp_path, shape):
    arrays = {f"x_{np.dtype(d).name}": np_sample(shape, d, seed=i) for i, d in enumerate(NP_DTYPES)}
    p = tmp_path / "s.safetensors"
    sst.save_file({k: st.from_numpy(v) for k, v in arrays.items()}, p, metadata={"k": "v"})
    back = safetensors_numpy.load_file(str(p))
    assert back.keys() == arrays.keys()
    for k, v in arrays.items():
        assert back[k].dtype == v.dtype and back[k].shape == v.shape
        np.testing.assert_array_equal(back[k], v)
    q = tmp_path / "theirs.safetensors"
    safetensors_numpy.save_file(arrays, str(q), metadata={"a": "b"})
    mine = sst.load_file(q)
    for k, v in arrays.items():
        np.testing.assert_array_equal(mine[k].numpy(), v)
    with sst.safe_open(q, framework="strata") as f:
        assert sorted(f.keys()) == sorted(arrays)
        assert f.metadata() == {"a": "b"}
        np.testing.assert_array_equal(f.get_tensor("x_int16").numpy(), arrays["x_int16"])
    mem = sst.load(q.read_bytes())
    for k, v in arrays.items():
        np.testing.assert_array_equal(mem[k].numpy(), v)
    data = sst.save({k: st.from_numpy(v) for k, v in arrays.items()})
    for k, v in safetensors_numpy.load(data).items():
        np.testing.assert_array_equal(v, arrays[k])


def test_safetensors_bfloat16_bytes(tmp_path):
    x = st.tensor([1.0, -2.5, 3.140625, 2.0**100], dtype=st.bfloat16)
    p = tmp_path / "bf.safetensors"
    sst.save_file({"w": x}, p)
    raw = p.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    assert header["w"]["dtype"] == "BF16" and header["w"]["shape"] == [4]
    b, e = header["w"]["data_offsets"]
    data = np.frombuffer(raw[8 + n + b : 8 + n + e], dtype="<u2")
    # bf16 is the top half of the float32 bits (these values are exact in bf16).
    f32 = np.array([1.0, -2.5, 3.140625, 2.0**100], dtype=np.float32).view(np.uint32)
    np.testing.assert_array_equal(data, (f32 >> 16).astype(np.uint16))
    y = sst.load_file(p)["w"]
    assert y.dtype == st.bfloat16
    assert y.float().tolist() == x.float().tolist()


def test_safetensors_zero_copy_private_and_views(tmp_path):
    a = np_sample((64, 64), np.float32)
    p = tmp_path / "z.safetensors"
    t = st.from_numpy(a)
    sst.save_file({"a": t, "at": t.T.contiguous(), "v": t.clone()[::2, ::-1]}, p)
    got = sst.load_file(p)
    np.testing.assert_array_equal(got["v"].numpy(), a[::2, ::-1])
    assert mapping_of(got["a"].data_ptr()) == str(p)
    got["a"].fill_(1.0)
    np.testing.assert_array_equal(sst.load_file(p)["a"].numpy(), a)
    np.testing.assert_array_equal(safetensors_numpy.load_file(str(p))["a"], a)


def test_safetensors_errors(tmp_path):
    t = st.arange(12.0).view(3, 4)
    p = tmp_path / "e.safetensors"
    with pytest.raises(ValueError, match="share memory"):
        sst.save_file({"a": t, "b": t.T}, p)
    with pytest.raises(ValueError, match="share memory"):
        sst.save_file({"a": t, "b": t}, p)
    sst.save_file({"a": t[0], "b": t[1]}, p)  # disjoint rows of one storage: fine
    with pytest.raises(TypeError):
        sst.save_file({"a": np.zeros(2)}, p)
    with pytest.raises(ValueError):
        sst.save_file({"__metadata__": t}, p)
    with pytest.raises(IndexError):
        sst.safe_open(p).get_tensor("nope")
    with pytest.raises(ValueError):
        sst.safe_open(p, framework="pt")
    with pytest.raises(OSError):
        sst.load_file(tmp_path / "missing.safetensors")

    def file(header: str, data: bytes) -> bytes:
        h = header.encode()
        return struct.pack("<Q", len(h)) + h + data

    ok = '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
    bad = {
        "empty": b"",
        "truncated": file(ok, b"\0" * 7),
        "size lies": struct.pack("<Q", 999) + file(ok, b"\0" * 8)[8:],
        "oversized header": struct.pack("<Q", 2**40) + file(ok, b"\0" * 8)[8:],
        "bad json": file('{"a":{"dtype":', b"\0" * 8),
        "not {": file(" " + ok, b"\0" * 8),
        "overlap": file(
            '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
            '"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}',
            b"\0" * 8,
        ),
        "out of range": file('{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}', b"\0" * 8),
        "shape mismatch": file('{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}', b"\0" * 8),
    }
    for what, data in bad.items():
        p.write_bytes(data)
        with pytest.raises(st.FormatError):
            sst.load_file(p)
        with pytest.raises(ValueError):
            sst.load(data)
