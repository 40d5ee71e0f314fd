"""Generates crates/strata/src/kernel/vector_math/trig_table.rs: the rows of
``2**E * (2/pi) mod 4`` (three 28-bit parts) behind the float32 sine, cosine and tangent's
argument reduction, and checks that reduction against mpmath at 400 bits.

    python3 python/tools/gen_trig_table.py > crates/strata/src/kernel/vector_math/trig_table.rs

Needs mpmath (``pip install mpmath``); not part of the build.
"""

import mpmath

mpmath.mp.prec = 400
TWO_OVER_PI = 2 / mpmath.pi
BITS = 380
B = int(mpmath.floor(TWO_OVER_PI * mpmath.mpf(2) ** BITS))  # bits b_1..b_380 of 2/pi


def bit(i: int) -> int:
    """b_i, the coefficient of 2**-i in 2/pi (0 for i < 1)."""
    return 0 if i < 1 else (B >> (BITS - i)) & 1


def part(E: int, j: int) -> int:
    """Part j of T(E) = 2**E * 2/pi mod 4: the powers 2**(1 - 28j) .. 2**(-26 - 28j)."""
    v = 0
    for p in range(1 - 28 * j, -27 - 28 * j, -1):
        v = v * 2 + bit(E - p)  # b_i 2**(E - i) = 2**p  =>  i = E - p
    return v


def main() -> None:
    rows = [[part(e - 150, j) for j in range(3)] for e in range(126, 255)]
    scale = [mpmath.mpf(2) ** -26, mpmath.mpf(2) ** -54, mpmath.mpf(2) ** -82]
    for e in range(126, 255):
        for m in (0x800000, 0xFFFFFF, 0xC90FDB, 0xA2F983):
            x = mpmath.mpf(m) * mpmath.mpf(2) ** (e - 150)
            q = x * TWO_OVER_PI
            row = rows[e - 126]
            qq = mpmath.mpf(m) * sum(mpmath.mpf(c) * s for c, s in zip(row, scale))
            assert (int(mpmath.nint(q)) - int(mpmath.nint(qq))) % 4 == 0
            assert abs((q - mpmath.nint(q)) - (qq - mpmath.nint(qq))) < mpmath.mpf(2) ** -55
    assert all(0 <= c < 2**28 for row in rows for c in row)
    print("""//! `2ˣ·(2/π) mod 4` for the exponents of the `f32` values from 0.5 up (Payne–Hanek
//! reduction, `f32_math.rs`): row `e − 126` for biased exponent `e`, in three 28-bit parts,
//! the value being `c₀·2⁻²⁶ + c₁·2⁻⁵⁴ + c₂·2⁻⁸²` for `E = e − 150` (the exponent of a value
//! whose 24-bit integer mantissa is `m`: `x = m·2ᴱ`). Generated from 380 bits of `2/π`
//! by `python/tools/gen_trig_table.py`, which checks the reduction it gives.

pub(super) const TWO_OVER_PI_MOD4: [[i32; 3]; 129] = [""")
    for row in rows:
        print("    [%d, %d, %d]," % tuple(row))
    print("];")


if __name__ == "__main__":
    main()
