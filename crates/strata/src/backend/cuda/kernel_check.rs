//! Every kernel the CUDA backend generates, compiled with NVRTC — no GPU needed, so CI
//! catches a C++ error in the prelude or an op's `cuda(...)` expression before any GPU
//! run. The sources are made by the same functions the backend launches from (the
//! `*_code` and `plan_*` functions), over host tensors standing in for device ones.
//! Skipped, saying so, where NVRTC cannot be loaded (`make test` installs it).

use super::reduce::{passes, plan_arg, plan_pass, scan_code};
use super::source::{compile, store, store_cast};
use super::transfer::scatter_code;
use super::{binary_code, plan_loop, ternary_code, unary_code, Arg};
use crate::dtype::DType;
use crate::ops::reduce::Reduction;
use crate::ops::table::{Binary, Ternary, Unary};
use crate::tensor::{Scalar, Tensor};

/// The dtypes the CUDA backend has kernels for (every one but the complex dtypes, which
/// cannot live on a GPU yet: `Tensor::checked`).
const DTYPES: [DType; 13] = DType::REAL;

fn t(shape: &[usize], dt: DType) -> Tensor {
    Tensor::zeros(shape, dt).unwrap()
}

/// Renames the kernel of each source and wraps it in its own namespace, so that many
/// compile as one program (NVRTC's start-up cost dominates single small kernels).
fn batch(sources: &[String], first: usize) -> String {
    let mut out = String::new();
    for (i, s) in sources.iter().enumerate() {
        let n = first + i;
        out.push_str(&format!(
            "namespace n{n} {{\n{}\n}}\n",
            s.replace("void k(", &format!("void k{n}("))
        ));
    }
    out
}

fn sources() -> Vec<String> {
    let mut v = Vec::new();
    fn add(v: &mut Vec<String>, out: &Tensor, args: &[Arg<'_>], prefix: &str, body: &str) {
        // Tiled where the layout calls for it (see `tile_dims`), as the backend does.
        let names = ["{A}", "{B}", "{C}"];
        let plan = plan_loop(
            "check",
            out,
            args,
            prefix,
            |vals| {
                let mut b = body.to_string();
                for (n, val) in names.iter().zip(vals) {
                    b = b.replace(n, val);
                }
                b
            },
            true,
        )
        .unwrap()
        .unwrap();
        v.push(plan);
    }
    for dt in DTYPES {
        let a = t(&[3, 4], dt);
        let at = t(&[4, 3], dt).t().unwrap();
        for &op in Unary::ALL {
            let out_dt = match op.rule() {
                crate::ops::table::UnaryRule::Pred | crate::ops::table::UnaryRule::Logical => {
                    DType::Bool
                }
                _ => dt,
            };
            if let Ok((prefix, body)) = unary_code(op, dt, out_dt) {
                add(&mut v, &t(&[3, 4], out_dt), &[Arg::T(&at)], &prefix, &body);
            }
        }
        for &op in Binary::ALL {
            let out_dt = match op.rule() {
                crate::ops::table::BinaryRule::Compare => DType::Bool,
                _ => dt,
            };
            if let Ok((prefix, body)) = binary_code(op, dt, out_dt) {
                add(
                    &mut v,
                    &t(&[3, 4], out_dt),
                    &[Arg::T(&a), Arg::S(dt, Scalar::Int(2))],
                    &prefix,
                    &body,
                );
            }
        }
        let cond = t(&[3, 4], DType::Bool);
        let (prefix, body) = ternary_code(Ternary::Where, DType::Bool, dt, dt).unwrap();
        add(
            &mut v,
            &t(&[3, 4], dt),
            &[Arg::T(&cond), Arg::T(&a), Arg::T(&at)],
            &prefix,
            &body,
        );
        if let Ok((prefix, body)) = ternary_code(Ternary::Clamp, dt, dt, dt) {
            add(
                &mut v,
                &t(&[3, 4], dt),
                &[
                    Arg::T(&a),
                    Arg::S(dt, Scalar::Int(0)),
                    Arg::S(dt, Scalar::Int(1)),
                ],
                &prefix,
                &body,
            );
        }
        for to in DTYPES {
            add(
                &mut v,
                &t(&[3, 4], to),
                &[Arg::T(&at)],
                "",
                &store_cast(dt, to, "p0", "{A}"),
            );
        }
        add(
            &mut v,
            &t(&[3, 4], dt),
            &[Arg::S(dt, Scalar::Int(1))],
            "",
            &store(dt, "p0", "{A}"),
        );
        // Tiled loops: a transposing copy and a binary op with one transposed operand.
        let big = t(&[48, 40], dt);
        let big_t = t(&[40, 48], dt).t().unwrap();
        add(
            &mut v,
            &t(&[48, 40], DType::F32),
            &[Arg::T(&big_t)],
            "",
            &store_cast(dt, DType::F32, "p0", "{A}"),
        );
        if let Ok((prefix, body)) = binary_code(Binary::Add, dt, dt) {
            add(
                &mut v,
                &t(&[48, 40], dt),
                &[Arg::T(&big), Arg::T(&big_t)],
                &prefix,
                &body,
            );
        }
        // Row loops: a flipped copy into every dtype, a broadcast row added.
        let flipped = t(&[6, 40], dt).flip(&[0]).unwrap();
        for to in DTYPES {
            add(
                &mut v,
                &t(&[6, 40], to),
                &[Arg::T(&flipped)],
                "",
                &store_cast(dt, to, "p0", "{A}"),
            );
        }
        if let Ok((prefix, body)) = binary_code(Binary::Add, dt, dt) {
            let row = t(&[40], dt).broadcast_to(&[6, 40]).unwrap();
            add(
                &mut v,
                &t(&[6, 40], dt),
                &[Arg::T(&t(&[6, 40], dt)), Arg::T(&row)],
                &prefix,
                &body,
            );
        }
        let ix = t(&[3, 4], DType::I64);
        for acc in [false, true] {
            add(
                &mut v,
                &t(&[3, 4], dt),
                &[Arg::T(&a), Arg::T(&ix)],
                "",
                &scatter_code(dt, acc),
            );
        }
        // Reductions (every pass), arg-reductions and scans.
        let x = t(&[6, 10], dt).t().unwrap();
        let sumlike = match dt {
            d if d.is_float() => d,
            _ => DType::I64,
        };
        let outs = [
            (Reduction::Sum, sumlike),
            (Reduction::Prod, sumlike),
            (Reduction::Amax, dt),
            (Reduction::Amin, dt),
            (Reduction::All, DType::Bool),
            (Reduction::Any, DType::Bool),
            (Reduction::Mean, if dt.is_float() { dt } else { DType::F32 }),
            (Reduction::Var, if dt.is_float() { dt } else { DType::F32 }),
            (Reduction::Std, if dt.is_float() { dt } else { DType::F32 }),
            (
                Reduction::Logsumexp,
                if dt.is_float() { dt } else { DType::F32 },
            ),
        ];
        for (op, odt) in outs {
            for mask in [[true, false], [false, true], [true, true]] {
                for p in passes(op, dt, odt, 10, 1.0).unwrap() {
                    let plan = plan_pass("check", &x, &mask, &p, odt, 132)
                        .unwrap()
                        .unwrap();
                    v.push(plan.partial);
                    v.push(plan.finish);
                }
            }
        }
        for op in [
            Reduction::Argmax,
            Reduction::Argmin,
            Reduction::Max,
            Reduction::Min,
        ] {
            let vals = matches!(op, Reduction::Max | Reduction::Min).then_some(dt);
            v.push(plan_arg(op, &x, &[false, true], vals).unwrap().unwrap().0);
        }
        for op in [Reduction::Cumsum, Reduction::Cumprod] {
            let body = scan_code(op, dt, sumlike, 10, 6, 1);
            add(
                &mut v,
                &t(&[6], sumlike),
                &[Arg::T(&t(&[6], dt))],
                "",
                &body,
            );
        }
    }
    v.sort();
    v.dedup();
    v
}

#[test]
fn every_generated_kernel_compiles_with_nvrtc() {
    // SAFETY: only tries to open the library.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        // `make test` installs NVRTC and sets STRATA_REQUIRE_NVRTC, so there the
        // check cannot pass without compiling; a bare `cargo test` may skip it.
        assert!(
            std::env::var_os("STRATA_REQUIRE_NVRTC").is_none(),
            "STRATA_REQUIRE_NVRTC is set but libnvrtc.so was not found"
        );
        return;
    }
    let all = sources();
    assert!(all.len() > 1000, "{} kernels", all.len());
    assert!(
        all.iter().any(|k| k.contains("t1[tx][q]")),
        "no tiled kernel was generated"
    );
    assert!(
        all.iter()
            .any(|k| k.contains("const I inner = (I)a.size[D]")),
        "no row kernel was generated"
    );
    // Two programs at a time (one per core), many kernels each.
    let chunks: Vec<(usize, &[String])> = all
        .chunks(200)
        .enumerate()
        .map(|(i, c)| (i * 200, c))
        .collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = chunks
            .chunks(chunks.len().div_ceil(2).max(1))
            .map(|part| {
                s.spawn(move || {
                    for &(first, c) in part {
                        let src = batch(c, first);
                        if let Err(e) = compile("check", 0, (9, 0), &src) {
                            // Find the first failing kernel for a readable message.
                            for (i, one) in c.iter().enumerate() {
                                if let Err(e1) = compile("check", 0, (9, 0), one) {
                                    panic!("kernel {} does not compile: {e1}\n{one}", first + i);
                                }
                            }
                            panic!("a batch does not compile: {e}");
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    });
}
