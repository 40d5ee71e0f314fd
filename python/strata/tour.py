"""A walkthrough of strata's memory model: ``python -m strata.tour``.

The same steps as the Rust tour (``cargo run --release --example tour``), plus sharing with
NumPy, shown by equal data pointers and ``np.shares_memory``. Each step prints the view and
the storage it maps onto, and checks the numbers it claims.
"""

from __future__ import annotations

import strata as st


def step(title: str, text: str) -> None:
    print()
    print(f"== {title}")
    for line in text.strip().splitlines():
        print(f"   {line.strip()}")
    print()


def show(name: str, t: st.Tensor) -> None:
    print(f"{name} = {t!r}")
    print(t.explain())


def main() -> None:
    step(
        "1. Row-major storage and strides",
        """A tensor is a view over a flat storage. Element [i, j] of a (2, 3) tensor lives at
        offset + i*stride[0] + j*stride[1]; row-major strides are (3, 1).""",
    )
    x = st.arange(6).view(2, 3)
    show("x", x)
    assert x.stride() == (3, 1)
    y = st.zeros(1, 2, 3, 4)
    print("zeros(1, 2, 3, 4).stride() =", y.stride())
    assert y.stride() == (24, 12, 4, 1)

    step(
        "2. Zero-copy slicing",
        """x[1:2, 1:4] of arange(12).reshape(3, 4) is a view: offset 5, strides (4, 1).
        points[1:3, 1:3] of a 3x3 starts at offset 4 with strides (3, 1): not contiguous.""",
    )
    x = st.arange(12).reshape(3, 4)
    v = x[1:2, 1:4]
    show("x[1:2, 1:4]", v)
    assert (v.storage_offset(), v.stride()) == (5, (4, 1))
    assert v.untyped_storage() == x.untyped_storage()
    points = st.arange(9.0).view(3, 3)
    p = points[1:3, 1:3]
    show("points[1:3, 1:3]", p)
    assert (p.storage_offset(), p.stride(), p.is_contiguous()) == (4, (3, 1), False)

    step(
        "3. Broadcasting is a stride of 0",
        """arange(4) expanded to (2, 3, 4) reads the same 4 elements again: strides (0, 0, 1).""",
    )
    b = st.arange(4).expand(2, 3, 4)
    print("arange(4).expand(2, 3, 4).stride() =", b.stride())
    assert b.stride() == (0, 0, 1)

    step(
        "4. Transpose and permute swap strides",
        """No data moves: the transposed view has swapped strides and the same data pointer.""",
    )
    x = st.arange(6).view(2, 3)
    xt = x.t()
    show("x.t()", xt)
    assert xt.stride() == (1, 3) and xt.data_ptr() == x.data_ptr()
    z = st.zeros(2, 3, 4).permute(2, 0, 1)
    print("zeros(2, 3, 4).permute(2, 0, 1).stride() =", z.stride())
    assert z.stride() == (1, 12, 4)

    step(
        "5. Flips are negative strides (PyTorch copies here)",
        """flip(0) of a 3x4 starts at the last row: offset 8, strides (-4, 1).
        flip(1) starts at the end of the first row: offset 3, strides (4, -1).""",
    )
    x = st.arange(12).view(3, 4)
    f0, f1 = x.flip(0), x.flip(1)
    show("x.flip(0)", f0)
    assert (f0.storage_offset(), f0.stride()) == (8, (-4, 1))
    assert (f1.storage_offset(), f1.stride()) == (3, (4, -1))
    r = x[::-1, ::2]
    print("x[::-1, ::2] =", r, "strides", r.stride())

    step(
        "6. view vs reshape",
        """view never copies: it fails when the strides cannot express the new shape.
        reshape returns a view when it can, else a compact copy.""",
    )
    try:
        x.t().view(12)
    except st.ShapeError as e:
        print("x.t().view(12) ->", type(e).__name__ + ":", e)
    r = x.t().reshape(12)
    print("x.t().reshape(12) shares storage:", r.untyped_storage() == x.untyped_storage())
    assert r.untyped_storage() != x.untyped_storage()
    assert x.reshape(4, 3).untyped_storage() == x.untyped_storage()

    step(
        "7. contiguous() makes a fresh compact storage when needed",
        """A non-contiguous view gets a new storage with row-major strides; a contiguous
        tensor is returned as it is.""",
    )
    c = x.t().contiguous()
    show("x.t().contiguous()", c)
    assert c.stride() == (3, 1) and c.untyped_storage() != x.untyped_storage()
    assert x.contiguous().untyped_storage() == x.untyped_storage()

    step(
        "8. Writes through one view show through every other",
        """Zeroing points shows in points.transpose(0, 1); the version counter is shared.""",
    )
    points = st.tensor([[4.0, 1.0], [5.0, 3.0], [2.0, 1.0]])
    points2 = points.transpose(0, 1)
    v0 = points2._version
    points.zero_()
    print("points2 after points.zero_():", points2)
    assert points2.tolist() == [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    assert points2._version == v0 + 1

    try:
        import numpy as np
    except ImportError:
        print("\n(NumPy is not installed: skipping the NumPy steps.)")
        return

    step(
        "9. NumPy shares memory both ways",
        """t.numpy() and np.asarray(t) view the tensor's bytes; strata.from_numpy(a) views
        the array's, negative strides included. Equal data pointers, np.shares_memory.""",
    )
    t = st.arange(12.0).view(3, 4)[::-1]
    a = t.numpy()
    print("t.data_ptr() =", hex(t.data_ptr()), " a.ctypes.data =", hex(a.ctypes.data))
    print("a.strides =", a.strides, " t.stride() =", t.stride())
    assert a.ctypes.data == t.data_ptr()
    a[0, 0] = 100.0
    print("after a[0, 0] = 100:", t[0, 0].item())
    assert t[0, 0].item() == 100.0
    n = np.arange(10.0)[::-3]
    u = st.from_numpy(n)
    print("from_numpy(np.arange(10.)[::-3]).stride() =", u.stride())
    assert u.data_ptr() == n.ctypes.data and np.shares_memory(u.numpy(), n)
    print("\nDone.")


if __name__ == "__main__":
    main()
