"""Fit the float32 GELU kernel's polynomial (`GELU_S` in
crates/strata/src/kernel/vector_math/avx512_f32.rs) and print it.

S(a) = ½·e^(a²/2)·erfc(a/√2) for a = |x| in [0, 14.6], as a degree-10 polynomial in
t = (a − K)/(a + K), K = 2√2 rounded to float32. Each coefficient is rounded to float32
before the next is fitted (a weighted least-squares fit to the relative error at
Chebyshev nodes in t, reweighted towards minimax). The printed error estimate evaluates
the polynomial as the kernel does (t from a float32 `a`, Horner with fused steps) against
mpmath at 30 digits, in units of 2⁻²⁴ relative, per range of `a`.

Needs numpy and mpmath.
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 30
K = float(np.float32(2 * np.sqrt(2)))
DEG = 10
A1 = 14.6


def s_exact(a):
    z = mp.mpf(a) / mp.sqrt(2)
    return float(mp.erfc(z) * mp.exp(z**2) / 2)


def main():
    t0, t1 = -1.0, (A1 - K) / (A1 + K)
    n = 3000
    u = np.cos(np.pi * (np.arange(n) + 0.5) / n)
    ts = (t0 + t1) / 2 + (t1 - t0) / 2 * u
    ys = np.array([s_exact(x) for x in K * (1 + ts) / (1 - ts)])
    w = 1 / np.abs(ys)
    vander = np.vander(ts, DEG + 1, increasing=True)
    fixed = []
    for j in range(DEG + 1):
        resid = ys - (vander[:, :j] @ np.array(fixed) if j else 0)
        b = vander[:, j:]
        weight = np.ones(n)
        for _ in range(30):
            c, *_ = np.linalg.lstsq(b * (w * weight)[:, None], resid * w * weight, rcond=None)
            err = (b @ c - resid) * w
            weight = weight * np.abs(err) ** 0.5
            weight /= weight.max()
        fixed.append(float(np.float32(c[0])))
    c = np.array(fixed)
    f = np.float32
    rng = np.random.default_rng(1)
    a32 = np.sort(rng.uniform(0, A1, 20000).astype(f))
    t32 = ((a32 - f(K)).astype(np.float64) / (a32 + f(K)).astype(f)).astype(f)
    acc = f(c[-1])
    for ck in c[-2::-1]:
        acc = (acc.astype(np.float64) * t32 + f(ck)).astype(f)
    ref = np.array([s_exact(float(x)) for x in a32])
    e = np.abs((acc - ref) / ref) / 2.0**-24
    for lo, hi in [(0, 1.4), (1.4, 3), (3, 6), (6, 10), (10, A1)]:
        sel = (a32 >= lo) & (a32 < hi)
        print(f"// a in [{lo}, {hi}): {e[sel].max():.2f}·2⁻²⁴ relative")
    for v in c:
        print(f"    f32::from_bits(0x{f(v).view(np.uint32):08x}),")


if __name__ == "__main__":
    main()
