"""GPU benchmark: strata's CUDA backend against PyTorch on the same device, same run.

    python3 python/bench/bench_cuda.py --out DIR      # writes DIR/bench_cuda.txt

Each GPU row is the median of >= 20 timed repetitions after >= 3 warm-ups, timed with each
library's own CUDA events (synchronized before and after), on random data. Columns:
``name | strata | torch | ratio (strata/torch time) | extra`` (GB/s counts bytes read +
written; TFLOP/s for matmul). The launch-overhead row is wall time per call.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import traceback

import numpy as np

import strata as st

LINES: list[str] = []


def emit(line: str = "") -> None:
    print(line, flush=True)
    LINES.append(line)


def _timed(event, sync, fn, reps, warmup) -> float:
    """Median milliseconds of ``fn`` between two timing events of ``event``'s class
    (recorded on that library's current stream), after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(reps):
        a, b = event(enable_timing=True), event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    sync()
    return statistics.median(times)


def t_strata(fn, reps=20, warmup=3) -> float:
    """Median milliseconds of ``fn`` on strata's current stream (CUDA events)."""
    return _timed(st.cuda.Event, st.cuda.synchronize, fn, reps, warmup)


def t_torch(torch, fn, reps=20, warmup=3) -> float:
    """The same for PyTorch, on its current stream."""
    return _timed(torch.cuda.Event, torch.cuda.synchronize, fn, reps, warmup)


def gbs(nbytes: float, ms: float) -> float:
    return nbytes / (ms * 1e-3) / 1e9


def row(name: str, s_ms: float, t_ms: float, extra: str = "") -> None:
    ratio = s_ms / t_ms if t_ms > 0 else float("nan")
    emit(f"{name:<34} | {s_ms:9.3f} ms | {t_ms:9.3f} ms | {ratio:6.2f} | {extra}")


def run_row(name, body):
    try:
        body()
    except Exception as e:  # one failing row must not stop the others
        emit(f"{name:<34} | ERROR {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        traceback.print_exc(file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=".", help="directory for bench_cuda.txt")
    ap.add_argument("--n", type=int, default=8192, help="square matrix size")
    args = ap.parse_args()
    import torch

    if not st.cuda.is_available() or not torch.cuda.is_available():
        print("bench_cuda: no CUDA device (strata: %s, torch: %s)" % (st.cuda.is_available(), torch.cuda.is_available()))
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    n = args.n
    emit(f"strata CUDA benchmark on {torch.cuda.get_device_name()} (torch {torch.__version__}, numpy {np.__version__})")
    emit("medians of >= 20 reps after 3 warm-ups, CUDA events; ratio = strata time / torch time")
    emit(f"{'name':<34} | {'strata':>12} | {'torch':>12} | {'ratio':>6} | extra")
    emit("-" * 100)
    rng = np.random.default_rng(0)
    host = rng.standard_normal((n, n), dtype=np.float32)
    S = st.from_numpy(host).cuda()  # the same random data in both libraries
    T = torch.from_numpy(host).cuda()
    host2 = rng.standard_normal((n, n), dtype=np.float32)
    S2, T2 = st.from_numpy(host2).cuda(), torch.from_numpy(host2).cuda()
    nbytes = n * n * 4
    memcpy = {}

    def memcpy_row():
        sd, td = st.empty(n, n, device="cuda"), torch.empty(n, n, device="cuda")
        s_ms = t_strata(lambda: sd.copy_(S))
        t_ms = t_torch(torch, lambda: td.copy_(T))
        memcpy["s"], memcpy["t"] = gbs(2 * nbytes, s_ms), gbs(2 * nbytes, t_ms)
        row(f"memcpy d2d {nbytes >> 20} MiB", s_ms, t_ms, f"strata {memcpy['s']:.0f} GB/s, torch {memcpy['t']:.0f} GB/s")

    run_row("memcpy", memcpy_row)

    def copy_row(name, sfn, tfn, moved, ref=None):
        """``ref``: the memcpy bandwidth of the same bytes (default: the 256 MiB one)."""
        def body():
            s_ms, t_ms = t_strata(sfn), t_torch(torch, tfn)
            g = gbs(moved, s_ms)
            base = ref if ref is not None else memcpy.get("s")
            frac = f", {g / base:.2f} of memcpy" if base else ""
            row(name, s_ms, t_ms, f"strata {g:.0f} GB/s{frac}, torch {gbs(moved, t_ms):.0f} GB/s")

        run_row(name, body)

    copy_row(f"transpose {n}^2 f32 .T.contiguous", lambda: S.T.contiguous(), lambda: T.T.contiguous(), 2 * nbytes)
    hx = rng.standard_normal((32, 64, 56, 56), dtype=np.float32)
    xs, xt = st.from_numpy(hx).cuda(), torch.from_numpy(hx).cuda()
    xb = 2 * xs.numel() * 4
    # The memcpy of the same bytes (a 25.7 MB copy does not reach the 256 MiB one's rate).
    xd = st.empty(*xs.shape, device="cuda")
    small_ms = t_strata(lambda: xd.copy_(xs))
    small_bw = gbs(xb, small_ms)
    emit(f"{'memcpy d2d same bytes as NCHW':<34} | {small_ms:9.3f} ms | {'':>12} | {'':>6} | strata {small_bw:.0f} GB/s")
    copy_row("NCHW->NHWC (32,64,56,56)", lambda: xs.permute(0, 2, 3, 1).contiguous(), lambda: xt.permute(0, 2, 3, 1).contiguous(), xb, small_bw)
    ys, yt = xs.permute(0, 2, 3, 1).contiguous(), xt.permute(0, 2, 3, 1).contiguous()
    copy_row("NHWC->NCHW (32,56,56,64)", lambda: ys.permute(0, 3, 1, 2).contiguous(), lambda: yt.permute(0, 3, 1, 2).contiguous(), xb, small_bw)
    copy_row(f"a + b {n}^2 f32", lambda: S + S2, lambda: T + T2, 3 * nbytes)
    copy_row(f"a + b.T {n}^2 f32", lambda: S + S2.T, lambda: T + T2.T, 3 * nbytes)
    copy_row(f"flip(0).contiguous {n}^2", lambda: S.flip(0).contiguous(), lambda: T.flip(0), 2 * nbytes)
    copy_row(f"[::2, ::2].contiguous {n}^2", lambda: S[::2, ::2].contiguous(), lambda: T[::2, ::2].contiguous(), 2 * nbytes // 4)
    rs, rt = S2[0], T2[0]
    cs, ct = S2[:, :1], T2[:, :1]
    copy_row(f"a + row ({n},) broadcast", lambda: S + rs, lambda: T + rt, 2 * nbytes)
    copy_row(f"a + col ({n},1) broadcast", lambda: S + cs, lambda: T + ct, 2 * nbytes)
    copy_row(f"sum(dim=0) {n}^2 f32 (read)", lambda: S.sum(0), lambda: T.sum(0), nbytes)
    copy_row(f"sum(dim=1) {n}^2 f32 (read)", lambda: S.sum(1), lambda: T.sum(1), nbytes)

    def matmul_row(dtype_s, dtype_t, label):
        def body():
            a_s, b_s = S.to(dtype_s), S2.to(dtype_s)
            a_t, b_t = T.to(dtype_t), T2.to(dtype_t)
            s_ms = t_strata(lambda: a_s @ b_s, reps=5, warmup=2) if label == "f32" else t_strata(lambda: a_s @ b_s)
            t_ms = t_torch(torch, lambda: a_t @ b_t, reps=5, warmup=2) if label == "f32" else t_torch(torch, lambda: a_t @ b_t)
            flop = 2 * n**3
            row(f"matmul {n}^2 {label}", s_ms, t_ms, f"strata {flop / s_ms / 1e9:.1f} TFLOP/s, torch {flop / t_ms / 1e9:.1f} TFLOP/s")

        run_row(f"matmul {label}", body)

    matmul_row(st.float32, torch.float32, "f32")
    matmul_row(st.bfloat16, torch.bfloat16, "bf16")

    # Host <-> device, 256 MiB.
    m = 256 << 20
    hbuf = rng.standard_normal(m // 4, dtype=np.float32)

    def transfer_rows():
        for pinned in (True, False):
            kind = "pinned" if pinned else "pageable"
            hs = st.from_numpy(hbuf.copy())
            ht = torch.from_numpy(hbuf.copy())
            if pinned:
                hs, ht = hs.pin_memory(), ht.pin_memory()
            ds, dt = st.empty(m // 4, device="cuda"), torch.empty(m // 4, device="cuda")
            s_ms = t_strata(lambda: ds.copy_(hs, non_blocking=pinned))
            t_ms = t_torch(torch, lambda: dt.copy_(ht, non_blocking=pinned))
            row(f"H2D 256 MiB {kind}", s_ms, t_ms, f"strata {gbs(m, s_ms):.1f} GB/s, torch {gbs(m, t_ms):.1f} GB/s")
            s_ms = t_strata(lambda: hs.copy_(ds, non_blocking=pinned))
            t_ms = t_torch(torch, lambda: ht.copy_(dt, non_blocking=pinned))
            row(f"D2H 256 MiB {kind}", s_ms, t_ms, f"strata {gbs(m, s_ms):.1f} GB/s, torch {gbs(m, t_ms):.1f} GB/s")
            if pinned:
                # Which side's memory decides the speed: each library copying into the
                # other's device buffer (DLPack views, zero-copy).
                ds_t, dt_s = torch.from_dlpack(ds), st.from_dlpack(dt)
                s_ms = t_strata(lambda: dt_s.copy_(hs, non_blocking=True))
                t_ms = t_torch(torch, lambda: ds_t.copy_(ht, non_blocking=True))
                row("H2D pinned, into the other's buf", s_ms, t_ms, f"strata {gbs(m, s_ms):.1f} GB/s, torch {gbs(m, t_ms):.1f} GB/s")
                s_ms = t_strata(lambda: ds.copy_(hs, non_blocking=True))
                t_ms = t_torch(torch, lambda: dt.copy_(ht, non_blocking=True))
                row("H2D 256 MiB pinned (again)", s_ms, t_ms, f"strata {gbs(m, s_ms):.1f} GB/s, torch {gbs(m, t_ms):.1f} GB/s")
                s_ms = t_strata(lambda: hs.to("cuda", non_blocking=True))
                t_ms = t_torch(torch, lambda: ht.to("cuda", non_blocking=True))
                row("H2D 256 MiB pinned .to(cuda)", s_ms, t_ms, f"strata {gbs(m, s_ms):.1f} GB/s, torch {gbs(m, t_ms):.1f} GB/s")

    run_row("host<->device", transfer_rows)

    def launch_row():
        calls = 10000
        h = rng.standard_normal(1024, dtype=np.float32)
        a_s, a_t = st.from_numpy(h).cuda(), torch.from_numpy(h).cuda()

        def wall(fn, sync):
            for _ in range(100):
                fn()
            sync()
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            sync()
            return (time.perf_counter() - t0) / calls * 1e6

        s_us = min(wall(lambda: a_s.add_(1), st.cuda.synchronize) for _ in range(3))
        t_us = min(wall(lambda: a_t.add_(1), torch.cuda.synchronize) for _ in range(3))
        emit(f"{'launch a.add_(1) 1024 f32 (wall)':<34} | {s_us:9.2f} us | {t_us:9.2f} us | {s_us / t_us:6.2f} | per call, 10000 calls")
        # The same call on a CPU tensor of 16 elements: the library's own per-call cost,
        # no launch (context for the row above).
        c_s, c_t = st.from_numpy(h[:16].copy()), torch.from_numpy(h[:16].copy())
        s_us = min(wall(lambda: c_s.add_(1), lambda: None) for _ in range(3))
        t_us = min(wall(lambda: c_t.add_(1), lambda: None) for _ in range(3))
        emit(f"{'cpu a.add_(1) 16 f32 (wall)':<34} | {s_us:9.2f} us | {t_us:9.2f} us | {s_us / t_us:6.2f} | per call, 10000 calls")

    run_row("launch overhead", launch_row)

    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "bench_cuda.txt")
    with open(path, "w") as f:
        f.write("\n".join(LINES) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
