"""The tables and polynomials of the AVX-512 float32 logarithms (`log_fast` in
crates/strata/src/kernel/vector_math/avx512_f32.rs): prints the Rust constants.

`m = getmant(x)` in [0.75, 1.5) falls in one of sixteen intervals read off its bits
(index = low four bits of bits(m) >> 19): [1, 1.5) in eight of 1/16, [0.75, 1) in eight
of 1/32. Per interval `1/c` (c = 1 for the two next to 1, the midpoint elsewhere, then
c := 1/float32(1/c)), `log_b c` (plus log_b 2 for m < 1) as a high part on a 2^-17 grid
(with the base's high part of log_b 2 added exactly) and a float32 low part; then
`log_b(1 + r) = a0·r + r²·Q(r)`, a0 = 1/ln b split in two float32, Q of degree 3 fitted
for relative error by weighted least squares on Chebyshev nodes, each coefficient rounded
to float32 before the next is fitted. Needs numpy and mpmath (`make test` installs both):
    .venv/bin/python scripts/gen_log_f32_tables.py
"""
import numpy as np, mpmath as mp, struct
mp.mp.prec = 200
def f32(x): return float(np.float32(x))
def bits(x): return struct.unpack('<I', struct.pack('<f', np.float32(x)))[0]
L = {'ln': mp.log(2), 'log2': mp.mpf(1), 'log10': mp.log10(2)}
LHI = {'ln': struct.unpack('<f', struct.pack('<I',0x3f317200))[0], 'log2': 1.0,
       'log10': struct.unpack('<f', struct.pack('<I',0x3e9a2000))[0]}
def logb(b, x):
    return {'ln': mp.log, 'log2': lambda v: mp.log(v, 2), 'log10': mp.log10}[b](x)
# intervals by index i = low 4 bits of bits(m)>>19, m = getmant(x) in [0.75, 1.5)
lo_m, hi_m = [], []
for i in range(16):
    if i < 8: a, b_ = 1 + i/16, 1 + (i+1)/16
    else: a, b_ = 0.75 + (i-8)/32, 0.75 + (i-7)/32
    lo_m.append(a); hi_m.append(b_)
invc = []
for i in range(16):
    if i in (0, 15): invc.append(1.0)
    else: invc.append(f32(2/(lo_m[i]+hi_m[i])))
rmin = min(f32(lo_m[i]*invc[i]-1) for i in range(16)); rmax = max(hi_m[i]*invc[i]-1 for i in range(16))
print("// r range", rmin, rmax)
out = ["const LOGF_INVC: [f32; 16] = [" + ", ".join(f"f32::from_bits(0x{bits(v):08x})" for v in invc) + "];"]
for b in ('ln', 'log2', 'log10'):
    Lx = L[b]; lhi = mp.mpf(LHI[b]); 
    ths, tls = [], []
    for i in range(16):
        c = 1/mp.mpf(invc[i])
        base = lhi if i >= 8 else 0
        t = logb(b, c)
        th = mp.nint(t * 2**17) / 2**17 + base
        tl = f32(float(logb(b, c) + (Lx if i >= 8 else 0) - th))
        ths.append(float(th)); tls.append(tl)
        assert f32(float(th)) == float(th)
    out.append(f"const {b.upper()}F_T_HI: [f32; 16] = [" + ", ".join(f"f32::from_bits(0x{bits(v):08x})" for v in ths) + "];")
    out.append(f"const {b.upper()}F_T_LO: [f32; 16] = [" + ", ".join(f"f32::from_bits(0x{bits(v):08x})" for v in tls) + "];")
    # log_b(1+r) = a0*r + r^2*Q(r): a0 split hi/lo; Q degree 3 fitted for relative error
    a0 = 1/mp.log(10 if b=='log10' else 2 if b=='log2' else mp.e)
    a0h = f32(float(a0)); a0l = f32(float(a0 - mp.mpf(a0h)))
    DEG = 3
    lo_r, hi_r = rmin*1.01, rmax*1.01
    xs = np.cos(np.linspace(0, np.pi, 4000))*(hi_r-lo_r)/2 + (hi_r+lo_r)/2
    xs = xs[np.abs(xs) > 1e-12]
    tot = np.array([float(logb(b, 1+mp.mpf(x))) for x in xs])
    ys = np.array([float((logb(b, 1+mp.mpf(x)) - a0*mp.mpf(x))/mp.mpf(x)**2) for x in xs])
    fixed = []
    for k in range(DEG+1):
        rest = ys - sum(c*xs**j for j, c in enumerate(fixed))
        V = np.stack([xs**j for j in range(k, DEG+1)], 1)
        w = xs**2/np.abs(tot)
        sol = np.linalg.lstsq(V*w[:,None], rest*w, rcond=None)[0]
        fixed.append(f32(sol[0]))
    err = np.max(np.abs(sum(c*xs**j for j, c in enumerate(fixed)) - ys)*xs**2/np.abs(tot))
    print(f"// {b} poly rel err {err:.3g} = 2^{np.log2(err):.1f}")
    out.append(f"const {b.upper()}F_A0: (f32, f32) = (f32::from_bits(0x{bits(a0h):08x}), f32::from_bits(0x{bits(a0l):08x}));")
    out.append(f"const {b.upper()}F_Q: [f32; {DEG+1}] = [" + ", ".join(f"f32::from_bits(0x{bits(v):08x})" for v in fixed) + "];")
print("\n".join(out))
