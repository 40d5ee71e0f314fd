//! `Display` in PyTorch's style, and `explain()`, a picture of how a view maps onto its
//! storage.

use std::collections::HashSet;
use std::fmt::{self, Write as _};

use super::{Scalar, Tensor};
use crate::dtype::DType;
use crate::error::{list, Result};
use crate::kernel::walk;
use crate::layout::Layout;
use crate::with_dtype;

const EDGE: usize = 3;
const THRESHOLD: usize = 1000;
const LINEWIDTH: usize = 80;
const PRECISION: usize = 4;
/// The most elements a summarised print shows (beyond it, see `format_values`).
const MAX_SHOWN: usize = 1 << 20;

/// Python's `{:.4e}`: at least two exponent digits and an explicit sign.
fn sci(v: f64) -> String {
    let s = format!("{v:.PRECISION$e}");
    match s.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = e.strip_prefix('-').map_or(("+", e), |d| ("-", d));
            format!("{m}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

fn nonfinite(v: f64) -> Option<&'static str> {
    if v.is_nan() {
        Some("nan")
    } else if v == f64::INFINITY {
        Some("inf")
    } else if v == f64::NEG_INFINITY {
        Some("-inf")
    } else {
        None
    }
}

/// PyTorch's `_Formatter`: picks integer, fixed or scientific notation from the values
/// shown, and one width for all of them.
struct Formatter {
    float: bool,
    int_mode: bool,
    sci_mode: bool,
    width: usize,
    /// A complex dtype's formatters of the real and the imaginary parts (PyTorch's
    /// `formatter1`, `formatter2`).
    parts: Option<Box<(Formatter, Formatter)>>,
}

impl Formatter {
    fn new(dtype: DType, values: &[Scalar]) -> Formatter {
        if dtype.is_complex() {
            let part = |k: usize| -> Vec<Scalar> {
                values
                    .iter()
                    .map(|v| {
                        let (re, im) = v.to_complex();
                        Scalar::Float(if k == 0 { re } else { im })
                    })
                    .collect()
            };
            let (re, im) = (
                Formatter::new(DType::F64, &part(0)),
                Formatter::new(DType::F64, &part(1)),
            );
            return Formatter {
                float: true,
                int_mode: false,
                sci_mode: false,
                // Both parts and the `j`: PyTorch's element length less the separator.
                width: re.width + im.width + 1,
                parts: Some(Box::new((re, im))),
            };
        }
        let mut f = Formatter {
            float: dtype.is_float(),
            int_mode: true,
            sci_mode: false,
            width: 1,
            parts: None,
        };
        if f.float {
            let finite: Vec<f64> = values
                .iter()
                .map(|v| v.to_f64())
                .filter(|v| v.is_finite() && *v != 0.0)
                .collect();
            if !finite.is_empty() {
                let abs = finite.iter().map(|v| v.abs());
                let max = abs.clone().fold(f64::MIN, f64::max);
                let min = abs.fold(f64::MAX, f64::min);
                f.int_mode = finite.iter().all(|v| v.fract() == 0.0);
                f.sci_mode = if f.int_mode {
                    max / min > 1000.0 || max > 1e8
                } else {
                    max / min > 1000.0 || max > 1e8 || min < 1e-4
                };
            }
        }
        // As in PyTorch, a float width comes from the finite non-zero values only.
        f.width = values
            .iter()
            .filter(|v| !f.float || (v.to_f64().is_finite() && v.to_f64() != 0.0))
            .map(|&v| f.format(v).len())
            .max()
            .unwrap_or(1);
        f
    }

    fn format(&self, v: Scalar) -> String {
        if let Some(p) = &self.parts {
            // PyTorch's `_val_formatter`: the real part padded, the imaginary part with
            // its padding stripped and a sign always written.
            let (re, im) = v.to_complex();
            let real = p.0.padded(Scalar::Float(re));
            let imag = format!("{}j", p.1.padded(Scalar::Float(im)));
            let imag = imag.trim_start();
            return if imag.starts_with('-') || imag.starts_with('+') {
                format!("{real}{imag}")
            } else {
                format!("{real}+{imag}")
            };
        }
        if !self.float {
            return v.to_string();
        }
        let x = v.to_f64();
        if let Some(s) = nonfinite(x) {
            return s.to_string();
        }
        if self.sci_mode {
            sci(x)
        } else if self.int_mode {
            format!("{x:.0}.")
        } else {
            format!("{x:.PRECISION$}")
        }
    }

    fn padded(&self, v: Scalar) -> String {
        if self.parts.is_some() {
            // Each part is padded on its own.
            return self.format(v);
        }
        format!("{:>w$}", self.format(v), w = self.width)
    }
}

/// The values of a tensor as scalars, in row-major order.
fn scalars(t: &Tensor) -> Result<Vec<Scalar>> {
    with_dtype!(t.dtype(), T => Ok(t.to_vec::<T>()?.into_iter().map(Scalar::from_element).collect()))
}

/// The elements of a 1-D `t` that are printed: all of them, or, when summarising a row
/// longer than `2 * EDGE`, the first and last `EDGE` (read alone: a summarised row may be
/// an expanded view of more elements than memory holds). The flag says whether the row
/// was cut.
fn row(t: &Tensor, summarize: bool) -> Result<(Vec<Scalar>, bool)> {
    let n = t.shape()[0];
    if summarize && n > 2 * EDGE {
        let mut v = scalars(&t.slice(0, Some(0), Some(EDGE as i64), 1)?)?;
        v.extend(scalars(&t.slice(0, Some((n - EDGE) as i64), None, 1)?)?);
        Ok((v, true))
    } else {
        Ok((scalars(t)?, false))
    }
}

/// The elements shown after summarisation (the first and last `EDGE` of each dim): what
/// PyTorch's formatter sees (`get_summarized_data`), so the width and notation come
/// from these alone.
fn shown(t: &Tensor, summarize: bool, out: &mut Vec<Scalar>) -> Result<()> {
    match t.ndim() {
        0 => out.extend(scalars(t)?),
        1 => out.extend(row(t, summarize)?.0),
        _ => {
            let n = t.shape()[0];
            let pick: Vec<usize> = if summarize && n > 2 * EDGE {
                (0..EDGE).chain(n - EDGE..n).collect()
            } else {
                (0..n).collect()
            };
            for i in pick {
                shown(&t.select(0, i as i64)?, summarize, out)?;
            }
        }
    }
    Ok(())
}

fn tensor_str(t: &Tensor, indent: usize, summarize: bool, f: &Formatter) -> Result<String> {
    match t.ndim() {
        0 => Ok(f.format(t.item()?)),
        1 => {
            let (vals, cut) = row(t, summarize)?;
            let mut items: Vec<String> = vals.iter().map(|&v| f.padded(v)).collect();
            if cut {
                items.insert(EDGE, " ...".into());
            }
            let per_line = (LINEWIDTH.saturating_sub(indent) / (f.width + 2)).max(1);
            let lines: Vec<String> = items.chunks(per_line).map(|c| c.join(", ")).collect();
            Ok(format!(
                "[{}]",
                lines.join(&format!(",\n{}", " ".repeat(indent + 1)))
            ))
        }
        nd => {
            let n = t.shape()[0];
            let sub = |i: usize| tensor_str(&t.select(0, i as i64)?, indent + 1, summarize, f);
            let mut parts = Vec::new();
            if summarize && n > 2 * EDGE {
                for i in 0..EDGE {
                    parts.push(sub(i)?);
                }
                parts.push("...".into());
                for i in n - EDGE..n {
                    parts.push(sub(i)?);
                }
            } else {
                for i in 0..n {
                    parts.push(sub(i)?);
                }
            }
            let sep = format!(",{}{}", "\n".repeat(nd - 1), " ".repeat(indent + 1));
            Ok(format!("[{}]", parts.join(&sep)))
        }
    }
}

impl Tensor {
    /// The PyTorch-style text of the tensor's values (what `Display` prints), with
    /// `prefix` in place of `tensor(` and the dtype written as `dtype_prefix` + name when
    /// it is not a default dtype (float32, int64, bool).
    pub fn format_values(&self, prefix: &str, dtype_prefix: &str) -> Result<String> {
        // PyTorch's autograd suffix: the node that made the tensor, else whether it is a
        // leaf that requires grad.
        let grad = match self.grad_fn() {
            Some(f) => Some(format!("grad_fn=<{}>", f.name())),
            None if self.requires_grad() => Some("requires_grad=True".to_string()),
            None => None,
        };
        if !self.device().is_cpu() {
            // A GPU tensor prints its host copy, with PyTorch's `device='cuda:0'` suffix.
            let host = self.host_copy("format")?;
            return host.format_on(prefix, dtype_prefix, Some(self.device()), grad);
        }
        self.format_on(prefix, dtype_prefix, None, grad)
    }

    fn format_on(
        &self,
        prefix: &str,
        dtype_prefix: &str,
        device: Option<crate::storage::Device>,
        grad: Option<String>,
    ) -> Result<String> {
        self.check_host("format")?;
        let summarize = self.numel() > THRESHOLD;
        let indent = prefix.len();
        // Each dim shows at most 2 * EDGE entries when summarising, but many dims of an
        // expanded view still multiply to more text than can be built: such a tensor
        // prints as `[...]` with its size (PyTorch would try, and run out of memory).
        let shown_count = self.shape().iter().try_fold(1usize, |acc, &n| {
            let k = if summarize { n.min(2 * EDGE) } else { n };
            acc.checked_mul(k)
        });
        let too_many = shown_count.is_none_or(|c| c > MAX_SHOWN);
        let body = if self.numel() == 0 && self.ndim() > 0 {
            "[]".to_string()
        } else if too_many {
            "[...]".to_string()
        } else {
            let mut vals = Vec::new();
            shown(self, summarize, &mut vals)?;
            let f = Formatter::new(self.dtype, &vals);
            tensor_str(self, indent, summarize, &f)?
        };
        let mut suffixes = Vec::new();
        if let Some(d) = device {
            suffixes.push(format!("device='{d}'"));
        }
        if (self.numel() == 0 && self.ndim() > 1) || too_many {
            let dims: Vec<String> = self.shape().iter().map(|n| n.to_string()).collect();
            suffixes.push(format!("size=({})", dims.join(", ")));
        }
        let default = if self.numel() == 0 {
            self.dtype == DType::F32
        } else {
            // complex64 is the default complex dtype (that of float32).
            matches!(
                self.dtype,
                DType::F32 | DType::I64 | DType::Bool | DType::C64
            )
        };
        if !default {
            suffixes.push(format!("dtype={dtype_prefix}{}", self.dtype));
        }
        suffixes.extend(grad);
        // PyTorch's `_add_suffixes`: each suffix goes on the last line unless that would
        // pass the line width, then on a line of its own, indented under the values.
        let mut out = format!("{prefix}{body}");
        let mut last_line = match out.rfind('\n') {
            Some(p) => out.len() - p + 1,
            None => out.len() + 2,
        };
        for suffix in suffixes {
            if last_line + suffix.len() + 2 > LINEWIDTH {
                let _ = write!(out, ",\n{}{suffix}", " ".repeat(indent));
                last_line = indent + suffix.len();
            } else {
                let _ = write!(out, ", {suffix}");
                last_line += suffix.len() + 2;
            }
        }
        out.push(')');
        Ok(out)
    }

    /// A picture of the view over its storage: shape, strides, offset, the address
    /// formula, the storage's elements with the ones this view touches marked, and the
    /// storage index of every element of the view.
    ///
    /// ```
    /// let x = strata::Tensor::arange(0, 9, 1, strata::DType::F32)?.view(&[3, 3])?;
    /// let v = x.slice(0, Some(1), Some(3), 1)?.slice(1, Some(1), Some(3), 1)?;
    /// let text = v.explain()?;
    /// assert!(text.contains("offset 4"));
    /// assert!(text.contains("[[4, 5],"));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn explain(&self) -> Result<String> {
        if !self.device().is_cpu() {
            // The same view over a host copy of the whole storage.
            let host = crate::backend::cuda::transfer::storage_to_host("explain", self.storage())?;
            let mirror = Tensor::from_parts(host, self.layout.clone(), self.dtype)?;
            return Ok(format!("on {}: {}", self.device(), mirror.explain()?));
        }
        self.check_host("explain")?;
        let mut s = String::new();
        let l = &self.layout;
        let item = self.dtype.itemsize();
        let elems = self.storage.nbytes() / item;
        let _ = writeln!(
            s,
            "view     shape {}  strides {}  offset {}  dtype {}  contiguous: {}",
            list(l.shape()),
            list(l.strides()),
            l.offset(),
            self.dtype,
            if self.is_contiguous() { "yes" } else { "no" }
        );
        let terms: Vec<String> = l
            .strides()
            .iter()
            .enumerate()
            .map(|(k, st)| {
                let sign = if *st < 0 { '-' } else { '+' };
                format!(" {sign} {}·i{k}", st.unsigned_abs())
            })
            .collect();
        let idx: Vec<String> = (0..l.ndim()).map(|k| format!("i{k}")).collect();
        let _ = writeln!(
            s,
            "address  element [{}] is storage[{}{}]",
            idx.join(", "),
            l.offset(),
            terms.concat()
        );
        let _ = writeln!(
            s,
            "storage  {elems} × {} ({} bytes) at {:#x} on {}{}, {} handle(s)",
            self.dtype,
            self.storage.nbytes(),
            self.storage.data_ptr() as usize,
            self.device(),
            if self.is_read_only() {
                ", read-only"
            } else {
                ""
            },
            self.storage.handle_count()
        );
        // The storage elements, with the touched ones marked.
        const WINDOW: usize = 48;
        let touched: HashSet<usize> = if self.numel() <= 1 << 16 {
            let mut set = HashSet::new();
            walk(l.shape(), [l.strides()], [l.offset()], |[i]| {
                set.insert(i);
            });
            set
        } else {
            HashSet::new()
        };
        let (from, to) = match l.index_range() {
            Some((lo, _)) if elems > WINDOW => {
                let from = lo.saturating_sub(4).min(elems - WINDOW);
                (from, from + WINDOW)
            }
            _ => (0, elems.min(WINDOW)),
        };
        let whole = Tensor::from_parts(
            self.storage.clone(),
            Layout::contiguous(&[elems])?,
            self.dtype,
        )?;
        let vals = scalars(&whole.slice(0, Some(from as i64), Some(to as i64), 1)?)?;
        let f = Formatter::new(self.dtype, &vals);
        let w = f.width.max(to.to_string().len()) + 1;
        let (mut r_idx, mut r_val, mut r_mark) = (String::new(), String::new(), String::new());
        for (k, &v) in vals.iter().enumerate() {
            let i = from + k;
            let _ = write!(r_idx, "{i:>w$}");
            let _ = write!(r_val, "{:>w$}", f.format(v));
            let mark = if touched.contains(&i) { "^" } else { "" };
            let _ = write!(r_mark, "{mark:>w$}");
        }
        let more = |cond: bool| if cond { " …" } else { "" };
        let _ = writeln!(s, "  index {}{}{}", more(from > 0), r_idx, more(to < elems));
        let _ = writeln!(s, "  value {}{}{}", more(from > 0), r_val, more(to < elems));
        let _ = writeln!(s, "  view  {}{}", more(from > 0), r_mark.trim_end());
        if self.numel() > 0 && self.numel() <= 64 {
            let mut positions = Vec::with_capacity(self.numel());
            walk(l.shape(), [l.strides()], [l.offset()], |[i]| {
                positions.push(i as i64)
            });
            let idx_t = Tensor::from_vec(positions, l.shape())?;
            let grid = idx_t.format_values("", "")?;
            let grid = grid.strip_suffix(')').unwrap_or(&grid);
            let _ = writeln!(s, "storage index of each view element:");
            for line in grid.lines() {
                let _ = writeln!(s, "  {line}");
            }
        }
        Ok(s)
    }
}

impl fmt::Display for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.format_values("tensor(", "") {
            Ok(s) => f.write_str(&s),
            Err(e) => write!(f, "tensor(<unreadable: {e}>)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_pytorch_text() {
        let x = Tensor::arange(0, 6, 1, DType::F32)
            .unwrap()
            .view(&[2, 3])
            .unwrap();
        assert_eq!(
            x.to_string(),
            "tensor([[0., 1., 2.],\n        [3., 4., 5.]])"
        );
        let y = Tensor::from_vec(vec![0.5f64, -1.25], &[2]).unwrap();
        assert_eq!(y.to_string(), "tensor([ 0.5000, -1.2500], dtype=float64)");
        let z = Tensor::from_vec(vec![1i32, 20], &[2]).unwrap();
        assert_eq!(z.to_string(), "tensor([ 1, 20], dtype=int32)");
        assert_eq!(Tensor::scalar(3.0f32).to_string(), "tensor(3.)");
        assert_eq!(
            Tensor::zeros(&[0, 3], DType::F32).unwrap().to_string(),
            "tensor([], size=(0, 3))"
        );
        assert_eq!(
            Tensor::from_vec(vec![true, false], &[2])
                .unwrap()
                .to_string(),
            "tensor([ True, False])"
        );
        let big = Tensor::from_vec(vec![1e-5f32, 1.0], &[2]).unwrap();
        assert_eq!(big.to_string(), "tensor([1.0000e-05, 1.0000e+00])");
        let nan = Tensor::from_vec(vec![f32::NAN, 1.0, f32::NEG_INFINITY], &[3]).unwrap();
        assert_eq!(nan.to_string(), "tensor([nan, 1., -inf])");
        let long = Tensor::arange(0, 2000, 1, DType::I64).unwrap();
        assert_eq!(
            long.to_string(),
            "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"
        );
    }
}
