//! Reductions, arg-reductions and scans on the GPU, over any layout.
//!
//! A reduction splits the input's dims into kept dims (one output element each) and
//! reduced dims, each group merged as far as the strides allow. A block of 256 threads
//! owns `TX` outputs and a chunk of the reduced elements: `TX = 32` when the outputs are
//! adjacent in memory (a reduction over a leading dim: each warp reads 32 neighbours),
//! `TX = 1` when the reduced elements are (each block walks one row). Per-chunk partials
//! are folded and finished (`mean`'s division, `var`'s correction, `logsumexp`'s log) by
//! a second kernel, one thread per output. `var`/`std` and `logsumexp` first compute the
//! mean and the maximum the same way and pass them to the main pass.

use std::fmt::Write as _;

use super::source::{ctype, load, store_cast, vtype, Geometry, MAX_DIMS};
use super::{allocate, dev_ptr, driver, CudaBackend};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::reduce::{ReduceSpec, Reduction};
use crate::storage::borrow;
use crate::tensor::Tensor;

/// One pass's fold: accumulator dtype, identity, per-element map and combine.
struct Fold {
    acc: DType,
    ident: String,
    map: String,
    combine: &'static str,
}

/// The identity of max/min over `dt` (`-inf`/`+inf`, or the integer limits).
fn extreme(dt: DType, max: bool) -> String {
    match dt {
        DType::Bool => (if max { "false" } else { "true" }).into(),
        d if d.is_float() => (if max { "-INFINITY" } else { "INFINITY" }).into(),
        DType::U8 | DType::U16 | DType::U32 | DType::U64 => {
            if max {
                "0".into()
            } else {
                format!("(({})-1)", ctype(dt))
            }
        }
        _ => {
            let bits = dt.itemsize() * 8;
            if max {
                format!("(({})((u64)1 << {}))", ctype(dt), bits - 1)
            } else {
                format!("(({})(((u64)1 << {}) - 1))", ctype(dt), bits - 1)
            }
        }
    }
}

/// The accumulator of sums and products of `dt`: int64 for integers and bool, float for
/// the half types and float32, double for float64.
fn sum_acc(dt: DType) -> DType {
    match dt {
        DType::F64 => DType::F64,
        d if d.is_float() => DType::F32,
        _ => DType::I64,
    }
}

const MAX_COMBINE_F: &str = "((x != x) ? x : ((y != y) ? y : (x < y ? y : x)))";
const MIN_COMBINE_F: &str = "((x != x) ? x : ((y != y) ? y : (x > y ? y : x)))";

fn fold_for(op: Reduction, dt: DType, out: DType) -> Result<Fold> {
    let v = "v";
    Ok(match op {
        Reduction::Sum | Reduction::Mean => {
            let acc = if op == Reduction::Mean {
                sum_acc(out)
            } else {
                sum_acc(dt)
            };
            Fold {
                acc,
                ident: "0".into(),
                map: format!("(({}){v})", vtype(acc)),
                combine: "x + y",
            }
        }
        Reduction::Prod => {
            let acc = sum_acc(dt);
            let combine = if acc == DType::I64 {
                "wmul(x, y)"
            } else {
                "x * y"
            };
            Fold {
                acc,
                ident: "1".into(),
                map: format!("(({}){v})", vtype(acc)),
                combine,
            }
        }
        Reduction::Amax | Reduction::Amin | Reduction::Max | Reduction::Min => {
            let max = matches!(op, Reduction::Amax | Reduction::Max);
            let combine = match (dt.is_float(), max) {
                (true, true) => MAX_COMBINE_F,
                (true, false) => MIN_COMBINE_F,
                (false, true) => "(x < y ? y : x)",
                (false, false) => "(x > y ? y : x)",
            };
            Fold {
                acc: dt,
                ident: extreme(dt, max),
                map: v.into(),
                combine,
            }
        }
        Reduction::All => Fold {
            acc: DType::Bool,
            ident: "true".into(),
            map: format!("nz({v})"),
            combine: "(x && y)",
        },
        Reduction::Any => Fold {
            acc: DType::Bool,
            ident: "false".into(),
            map: format!("nz({v})"),
            combine: "(x || y)",
        },
        other => {
            return Err(Error::value(
                other.name(),
                "internal error: not a single-pass reduction",
            ))
        }
    })
}

/// Kept/reduced split of `input` by `mask`, each merged.
fn split(input: &Tensor, mask: &[bool]) -> (Geometry, Geometry) {
    let (mut ks, mut kst, mut rs, mut rst) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (d, &m) in mask.iter().enumerate() {
        if m {
            rs.push(input.shape()[d]);
            rst.push(input.strides()[d]);
        } else {
            ks.push(input.shape()[d]);
            kst.push(input.strides()[d]);
        }
    }
    (Geometry::new(&ks, vec![kst]), Geometry::new(&rs, vec![rst]))
}

#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct RedArgs {
    input: u64,
    part: u64,
    aux: u64,
    out: u64,
    o: i64,
    r: i64,
    chunk: i64,
    g: i64,
    n: f64,
    ksize: [i64; MAX_DIMS],
    kstride: [i64; MAX_DIMS],
    rsize: [i64; MAX_DIMS],
    rstride: [i64; MAX_DIMS],
}

const RED_STRUCT: &str = "struct RA { u64 in; u64 part; u64 aux; u64 out; i64 O; i64 R; i64 chunk; i64 G; double n; i64 ksize[12]; i64 kstride[12]; i64 rsize[12]; i64 rstride[12]; };\n";

fn unravel(s: &mut String, var: &str, idx: &str, sizes: &str, strides: &str, nd: usize) {
    let _ = writeln!(s, "  i64 {var} = 0; {{ i64 q = {idx};");
    for d in (0..nd).rev() {
        if d == 0 {
            let _ = writeln!(s, "    {var} += q * a.{strides}[0];");
        } else {
            let _ = writeln!(s, "    {{ i64 c = q % a.{sizes}[{d}]; q /= a.{sizes}[{d}]; {var} += c * a.{strides}[{d}]; }}");
        }
    }
    s.push_str("  }\n");
}

fn check_dims(op: &'static str, g: &Geometry) -> Result<()> {
    if g.sizes.len() > MAX_DIMS {
        return Err(Error::value(
            op,
            format!("this layout needs {} dims after merging; CUDA kernels take at most {MAX_DIMS} (call .contiguous() first)", g.sizes.len()),
        ));
    }
    Ok(())
}

/// One pass of a reduction: what it folds, how it finishes, where it writes.
pub(crate) struct PassSpec {
    fold: Fold,
    /// Uses the per-output value of the previous pass (`aux`).
    aux: Option<DType>,
    /// The divisor `a.n` the finish may use.
    n_div: f64,
    /// A C++ expression of the folded `x` (and `aux`, `a.n`).
    finish: String,
    /// The dtype `finish` gives.
    finish_dt: DType,
    /// Writes into a scratch buffer of this dtype (for the next pass) rather than `out`.
    scratch: Option<DType>,
}

/// The passes of reduction `op` of `dt` into `odt` over `n` elements each.
pub(crate) fn passes(
    op: Reduction,
    dt: DType,
    odt: DType,
    n: usize,
    correction: f64,
) -> Result<Vec<PassSpec>> {
    let n = n as f64;
    let one = |fold: Fold, finish: &str| {
        let acc = fold.acc;
        PassSpec {
            fold,
            aux: None,
            n_div: n,
            finish: finish.into(),
            finish_dt: acc,
            scratch: None,
        }
    };
    Ok(match op {
        Reduction::Sum
        | Reduction::Prod
        | Reduction::Amax
        | Reduction::Amin
        | Reduction::All
        | Reduction::Any
        | Reduction::Max
        | Reduction::Min => {
            vec![one(fold_for(op, dt, odt)?, "x")]
        }
        Reduction::Mean => vec![one(fold_for(op, dt, odt)?, "x / (ACC)a.n")],
        Reduction::Var | Reduction::Std => {
            let sum = Fold {
                acc: DType::F64,
                ident: "0".into(),
                map: "((double)v)".into(),
                combine: "x + y",
            };
            let sq = Fold {
                acc: DType::F64,
                ident: "0".into(),
                map: "(((double)v - aux) * ((double)v - aux))".into(),
                combine: "x + y",
            };
            let finish = if op == Reduction::Std {
                "sqrt(x / a.n)"
            } else {
                "x / a.n"
            };
            vec![
                PassSpec {
                    fold: sum,
                    aux: None,
                    n_div: n,
                    finish: "x / a.n".into(),
                    finish_dt: DType::F64,
                    scratch: Some(DType::F64),
                },
                PassSpec {
                    fold: sq,
                    aux: Some(DType::F64),
                    n_div: (n - correction).max(0.0),
                    finish: finish.into(),
                    finish_dt: DType::F64,
                    scratch: None,
                },
            ]
        }
        Reduction::Logsumexp => {
            let acc = sum_acc(odt);
            let at = vtype(acc);
            let max = Fold {
                acc,
                ident: "-INFINITY".into(),
                map: format!("(({at})v)"),
                combine: MAX_COMBINE_F,
            };
            let shift = format!("(m_isinf(aux) ? ({at})0 : aux)");
            let sum = Fold {
                acc,
                ident: "0".into(),
                map: format!("m_exp(({at})v - {shift})"),
                combine: "x + y",
            };
            vec![
                PassSpec {
                    fold: max,
                    aux: None,
                    n_div: n,
                    finish: "x".into(),
                    finish_dt: acc,
                    scratch: Some(acc),
                },
                PassSpec {
                    fold: sum,
                    aux: Some(acc),
                    n_div: n,
                    finish: format!("m_log(x) + {shift}"),
                    finish_dt: acc,
                    scratch: None,
                },
            ]
        }
        other => {
            return Err(Error::value(
                other.name(),
                "internal error: not a reduction",
            ))
        }
    })
}

/// A pass ready to launch: the two kernels' sources, the arguments, the grid.
pub(crate) struct PassPlan {
    pub partial: String,
    pub finish: String,
    args: RedArgs,
    grid: (u32, u32),
    o: usize,
    part_bytes: usize,
}

/// Plans pass `p` over `input` (its kept/reduced split by `mask`) writing dtype `dst_dt`,
/// for a device with `sms` multiprocessors; `None` when there are no outputs. Pure.
pub(crate) fn plan_pass(
    op: &'static str,
    input: &Tensor,
    mask: &[bool],
    p: &PassSpec,
    dst_dt: DType,
    sms: usize,
) -> Result<Option<PassPlan>> {
    let (kg, rg) = split(input, mask);
    check_dims(op, &kg)?;
    check_dims(op, &rg)?;
    let o = kg.numel();
    let r = rg.numel();
    if o == 0 {
        return Ok(None);
    }
    let dt = input.dtype();
    let acc = p.fold.acc;
    let at = vtype(acc);
    // Outputs adjacent in memory (the smallest kept stride is 1 and the reduced strides
    // are larger): 32 outputs per block; else one output per block.
    let kmin = kg.strides[0]
        .iter()
        .map(|s| s.unsigned_abs())
        .min()
        .unwrap_or(0);
    let rmin = rg.strides[0]
        .iter()
        .map(|s| s.unsigned_abs())
        .min()
        .unwrap_or(usize::MAX);
    let tx: usize = if o >= 32 && kmin == 1 && rmin > 1 {
        32
    } else {
        1
    };
    let ty = 256 / tx;
    let bx = o.div_ceil(tx);
    let want = sms * 8;
    let gmax = r.div_ceil(ty * 16).max(1);
    let chunks = want.div_ceil(bx).clamp(1, gmax).min(65535);
    let chunk = r.div_ceil(chunks).max(1);

    let head = |s: &mut String| {
        s.push_str(RED_STRUCT);
        let _ = writeln!(s, "typedef {at} ACC;");
        let _ = writeln!(
            s,
            "__device__ __forceinline__ ACC comb(ACC x, ACC y) {{ return {}; }}",
            p.fold.combine
        );
    };
    let aux_decl = p.aux.map(|a| {
        format!(
            "  const {} aux = ((const {}*)a.aux)[o];\n",
            vtype(a),
            ctype(a)
        )
    });
    let mut s = String::new();
    head(&mut s);
    let _ = writeln!(s, "extern \"C\" __global__ void k(const RA a) {{");
    let _ = writeln!(s, "  __shared__ ACC sh[256];");
    let _ = writeln!(
        s,
        "  const int tx = threadIdx.x % {tx}, ty = threadIdx.x / {tx};"
    );
    let _ = writeln!(s, "  const i64 o = (i64)blockIdx.x * {tx} + tx;");
    let _ = writeln!(
        s,
        "  const i64 r0 = (i64)blockIdx.y * a.chunk; const i64 r1 = min(a.R, r0 + a.chunk);"
    );
    let _ = writeln!(s, "  ACC acc = (ACC)({});", p.fold.ident);
    let _ = writeln!(s, "  if (o < a.O) {{");
    unravel(&mut s, "ko", "o", "ksize", "kstride", kg.sizes.len());
    let _ = writeln!(
        s,
        "  const {c}* base = (const {c}*)a.in + ko;",
        c = ctype(dt)
    );
    if let Some(d) = &aux_decl {
        s.push_str(d);
    }
    let _ = writeln!(s, "  for (i64 r = r0 + ty; r < r1; r += {ty}) {{");
    unravel(&mut s, "ro", "r", "rsize", "rstride", rg.sizes.len());
    let _ = writeln!(s, "    const {} v = {};", vtype(dt), load(dt, "base + ro"));
    let _ = writeln!(s, "    acc = comb(acc, (ACC)({}));", p.fold.map);
    s.push_str("  }}\n");
    s.push_str("  sh[threadIdx.x] = acc; __syncthreads();\n");
    let _ = writeln!(s, "  for (int st = {ty} / 2; st > 0; st >>= 1) {{ if (ty < st) sh[threadIdx.x] = comb(sh[threadIdx.x], sh[threadIdx.x + st * {tx}]); __syncthreads(); }}");
    let _ = writeln!(
        s,
        "  if (ty == 0 && o < a.O) ((ACC*)a.part)[(i64)blockIdx.y * a.O + o] = sh[tx];"
    );
    s.push_str("}\n");

    let mut f = String::new();
    head(&mut f);
    let _ = writeln!(f, "extern \"C\" __global__ void k(const RA a) {{");
    let _ = writeln!(f, "  for (i64 o = (i64)blockIdx.x * blockDim.x + threadIdx.x; o < a.O; o += (i64)gridDim.x * blockDim.x) {{");
    let _ = writeln!(f, "    ACC x = (ACC)({});", p.fold.ident);
    let _ = writeln!(
        f,
        "    for (i64 g = 0; g < a.G; ++g) x = comb(x, ((const ACC*)a.part)[g * a.O + o]);"
    );
    if let Some(d) = &aux_decl {
        f.push_str(d);
    }
    let _ = writeln!(
        f,
        "    {}",
        store_cast(
            p.finish_dt,
            dst_dt,
            &format!("(({}*)a.out) + o", ctype(dst_dt)),
            &format!("({})", p.finish)
        )
    );
    f.push_str("  }\n}\n");

    let mut args = RedArgs {
        input: dev_ptr(input),
        part: 0,
        aux: 0,
        out: 0,
        o: o as i64,
        r: r as i64,
        chunk: chunk as i64,
        g: chunks as i64,
        n: p.n_div,
        ksize: [1; MAX_DIMS],
        kstride: [0; MAX_DIMS],
        rsize: [1; MAX_DIMS],
        rstride: [0; MAX_DIMS],
    };
    for (d, (&n, &st)) in kg.sizes.iter().zip(&kg.strides[0]).enumerate() {
        args.ksize[d] = n as i64;
        args.kstride[d] = st as i64;
    }
    for (d, (&n, &st)) in rg.sizes.iter().zip(&rg.strides[0]).enumerate() {
        args.rsize[d] = n as i64;
        args.rstride[d] = st as i64;
    }
    let gx = u32::try_from(bx)
        .map_err(|_| Error::value(op, format!("{o} outputs are too many for one CUDA grid")))?;
    Ok(Some(PassPlan {
        partial: s,
        finish: f,
        args,
        grid: (gx, chunks as u32),
        o,
        part_bytes: chunks * o * acc.itemsize(),
    }))
}

pub(crate) fn reduce(
    be: &CudaBackend,
    op: Reduction,
    out: &Tensor,
    input: &Tensor,
    spec: &ReduceSpec<'_>,
) -> Result<()> {
    let name = op.name();
    if out.numel() == 0 {
        return Ok(());
    }
    let g = be.gpu(name)?;
    let stream = driver::current_stream(be.ordinal);
    let _g = borrow::acquire(name, &[(out.storage(), true), (input.storage(), false)])?;
    let mut aux: Option<crate::storage::Storage> = None;
    for p in passes(op, input.dtype(), out.dtype(), spec.n, spec.correction)? {
        let dst_dt = p.scratch.unwrap_or(out.dtype());
        let Some(mut plan) = plan_pass(name, input, spec.mask, &p, dst_dt, g.sms as usize)? else {
            return Ok(());
        };
        let part = allocate(name, be.ordinal, plan.part_bytes, false)?;
        let scratch = match p.scratch {
            Some(d) => Some(allocate(name, be.ordinal, plan.o * d.itemsize(), false)?),
            None => None,
        };
        plan.args.part = part.data_ptr() as u64;
        plan.args.aux = aux.as_ref().map_or(0, |s| s.data_ptr() as u64);
        plan.args.out = scratch
            .as_ref()
            .map_or(dev_ptr(out), |s| s.data_ptr() as u64);
        let k = g.kernel(name, &plan.partial)?;
        g.launch_grid(
            name,
            k,
            (plan.grid.0, plan.grid.1, 1),
            (256, 1, 1),
            0,
            stream,
            &plan.args,
        )?;
        let k = g.kernel(name, &plan.finish)?;
        g.launch(name, k, plan.o, stream, &plan.args)?;
        // Freed to this stream's cache: reused only by later work on the same stream.
        drop(part);
        aux = scratch;
    }
    Ok(())
}

/// argmax/argmin (and the values of max/min along a dim): one block per output, pairs
/// folded with the first occurrence winning and NaN counting as the extreme.
pub(crate) fn arg_reduce(
    be: &CudaBackend,
    op: Reduction,
    values: Option<&Tensor>,
    indices: &Tensor,
    input: &Tensor,
    spec: &ReduceSpec<'_>,
) -> Result<()> {
    let name = op.name();
    let g = be.gpu(name)?;
    let Some((src, mut args, o)) = plan_arg(op, input, spec.mask, values.map(Tensor::dtype))?
    else {
        return Ok(());
    };
    args.aux = values.map_or(0, dev_ptr);
    args.out = dev_ptr(indices);
    let k = g.kernel(name, &src)?;
    let mut borrows = vec![(input.storage(), false), (indices.storage(), true)];
    if let Some(v) = values {
        borrows.push((v.storage(), true));
    }
    let _g = borrow::acquire(name, &borrows)?;
    let blocks = o.min(65535 * 16) as u32;
    g.launch_grid(
        name,
        k,
        (blocks, 1, 1),
        (256, 1, 1),
        0,
        driver::current_stream(be.ordinal),
        &args,
    )
}

/// The arg-reduction kernel of `op` over `input` split by `mask` (writing values of
/// `values_dt` too when given), its arguments and the output count; `None` when there
/// are no outputs. Pure.
pub(crate) fn plan_arg(
    op: Reduction,
    input: &Tensor,
    mask: &[bool],
    values_dt: Option<DType>,
) -> Result<Option<(String, RedArgs, usize)>> {
    let name = op.name();
    let dt = input.dtype();
    let (kg, rg) = split(input, mask);
    check_dims(name, &kg)?;
    check_dims(name, &rg)?;
    let o = kg.numel();
    let r = rg.numel();
    if o == 0 {
        return Ok(None);
    }
    let max = matches!(op, Reduction::Argmax | Reduction::Max);
    let vt = vtype(dt);
    // `better(x, i, y, j)`: is (y, j) preferred over (x, i)?
    let cmp = if max { ">" } else { "<" };
    let nan = if dt.is_float() {
        "(y != y && !(x != x)) ||"
    } else {
        ""
    };
    let tie = if dt.is_float() {
        "(x != x && y != y && j < i) ||"
    } else {
        ""
    };
    let mut s = String::from(RED_STRUCT);
    let _ = writeln!(s, "__device__ __forceinline__ bool better({vt} x, i64 i, {vt} y, i64 j) {{ return {nan} {tie} (!(x != x) && (y {cmp} x || (y == x && j < i))); }}");
    let _ = writeln!(s, "extern \"C\" __global__ void k(const RA a) {{");
    let _ = writeln!(s, "  __shared__ {vt} sv[256]; __shared__ i64 si[256];");
    let _ = writeln!(s, "  for (i64 o = blockIdx.x; o < a.O; o += gridDim.x) {{");
    unravel(&mut s, "ko", "o", "ksize", "kstride", kg.sizes.len());
    let _ = writeln!(
        s,
        "  const {c}* base = (const {c}*)a.in + ko;",
        c = ctype(dt)
    );
    let _ = writeln!(s, "  {vt} bv = {}; i64 bi = -1;", load(dt, "base"));
    let _ = writeln!(s, "  for (i64 r = threadIdx.x; r < a.R; r += 256) {{");
    unravel(&mut s, "ro", "r", "rsize", "rstride", rg.sizes.len());
    let _ = writeln!(s, "    const {vt} v = {};", load(dt, "base + ro"));
    s.push_str("    if (bi < 0 || better(bv, bi, v, r)) { bv = v; bi = r; }\n  }\n");
    s.push_str("  sv[threadIdx.x] = bv; si[threadIdx.x] = bi; __syncthreads();\n");
    s.push_str("  for (int st = 128; st > 0; st >>= 1) { if (threadIdx.x < st) { const i64 j = si[threadIdx.x + st]; if (j >= 0 && (si[threadIdx.x] < 0 || better(sv[threadIdx.x], si[threadIdx.x], sv[threadIdx.x + st], j))) { sv[threadIdx.x] = sv[threadIdx.x + st]; si[threadIdx.x] = j; } } __syncthreads(); }\n");
    s.push_str("  if (threadIdx.x == 0) { ((long long*)a.out)[o] = si[0];");
    if let Some(vd) = values_dt {
        let _ = write!(
            s,
            " {}",
            store_cast(dt, vd, &format!("(({}*)a.aux) + o", ctype(vd)), "sv[0]")
        );
    }
    s.push_str(" }\n  __syncthreads();\n  }\n}\n");
    let mut args = RedArgs {
        input: dev_ptr(input),
        part: 0,
        aux: 0,
        out: 0,
        o: o as i64,
        r: r as i64,
        chunk: 0,
        g: 0,
        n: 0.0,
        ksize: [1; MAX_DIMS],
        kstride: [0; MAX_DIMS],
        rsize: [1; MAX_DIMS],
        rstride: [0; MAX_DIMS],
    };
    for (d, (&n, &st)) in kg.sizes.iter().zip(&kg.strides[0]).enumerate() {
        args.ksize[d] = n as i64;
        args.kstride[d] = st as i64;
    }
    for (d, (&n, &st)) in rg.sizes.iter().zip(&rg.strides[0]).enumerate() {
        args.rsize[d] = n as i64;
        args.rstride[d] = st as i64;
    }
    Ok(Some((s, args, o)))
}

/// cumsum/cumprod along `dim`: one thread per line, in order.
pub(crate) fn scan(
    be: &CudaBackend,
    op: Reduction,
    out: &Tensor,
    input: &Tensor,
    dim: usize,
) -> Result<()> {
    let name = op.name();
    let dt = input.dtype();
    let odt = out.dtype();
    let len = input.shape()[dim];
    let (si, so) = (input.strides()[dim], out.strides()[dim]);
    // The lines: every dim but `dim`, for both tensors.
    let mut shape = Vec::new();
    let (mut is, mut os) = (Vec::new(), Vec::new());
    for d in 0..input.ndim() {
        if d != dim {
            shape.push(input.shape()[d]);
            is.push(input.strides()[d]);
            os.push(out.strides()[d]);
        }
    }
    let geo = Geometry::new(&shape, vec![is, os]);
    let body = scan_code(op, dt, odt, len, si, so);
    if geo.sizes.len() > MAX_DIMS {
        return Err(Error::value(
            name,
            "this layout has too many dims for a CUDA scan (call .contiguous() first)",
        ));
    }
    // One "element" per line: a loop over the line geometry with two tensor operands.
    let lines = Tensor::from_parts(
        out.storage().clone(),
        crate::layout::Layout::new(&shape, &geo_strides(&shape, out, dim), out.offset())?,
        odt,
    )?;
    let src = Tensor::from_parts(
        input.storage().clone(),
        crate::layout::Layout::new(&shape, &geo_strides(&shape, input, dim), input.offset())?,
        dt,
    )?;
    be.map(name, &lines, &[super::Arg::T(&src)], "", |_| body.clone())
}

fn geo_strides(shape: &[usize], t: &Tensor, dim: usize) -> Vec<isize> {
    let mut v = Vec::with_capacity(shape.len());
    for d in 0..t.ndim() {
        if d != dim {
            v.push(t.strides()[d]);
        }
    }
    v
}

/// The per-line body of scan `op` (`p1` the input line, `p0` the output line, `len`
/// elements at strides `si`, `so`). Pure.
pub(crate) fn scan_code(
    op: Reduction,
    dt: DType,
    odt: DType,
    len: usize,
    si: isize,
    so: isize,
) -> String {
    let acc = sum_acc(odt);
    let at = vtype(acc);
    let combine = match (op, acc) {
        (Reduction::Cumprod, DType::I64) => "wmul(x, v)",
        (Reduction::Cumprod, _) => "x * v",
        (_, DType::I64) => "wadd(x, v)",
        _ => "x + v",
    };
    let ident = if op == Reduction::Cumprod { "1" } else { "0" };
    format!(
        "{at} x = ({at}){ident};\n    for (i64 t = 0; t < {len}; ++t) {{ const {at} v = ({at}){}; x = {combine}; {} }}",
        load(dt, &format!("p1 + t * (i64)({si})")),
        store_cast(acc, odt, &format!("p0 + t * (i64)({so})"), "x")
    )
}
