//! `einsum`: Einstein summation over labelled dims (PyTorch's and NumPy's notation:
//! letters, `...` for broadcast dims, an optional `->` output; without one, the output is
//! the `...` dims then the labels used once, in alphabetical order).
//!
//! Evaluated with the ops it is made of, so it is differentiable through them: a label
//! repeated in one operand takes the diagonal; a label no other operand and not the
//! output needs is summed away at once; operands are then contracted left to right, each
//! pair as one batched matrix product (`[batch, kept-left, summed] · [batch, summed,
//! kept-right]`), and the last result is summed and permuted into the output's order.

use crate::error::{Error, Result};
use crate::kernel::plan::promote_types;
use crate::tensor::Tensor;

const OP: &str = "einsum";

/// A label: a letter's code, or one of the `...` dims (from 256 up, right-aligned).
type Label = u32;
const ELLIPSIS_BASE: Label = 256;

/// One operand's labels: letters, and where `...` stands (if anywhere).
struct Term {
    labels: Vec<Label>,
    ellipsis: Option<usize>,
}

fn parse_term(s: &str, what: &str) -> Result<Term> {
    let b = s.as_bytes();
    let (mut labels, mut ellipsis, mut i) = (Vec::new(), None, 0);
    while i < b.len() {
        match b[i] {
            c if c.is_ascii_alphabetic() => {
                labels.push(Label::from(c));
                i += 1;
            }
            b'.' => {
                if b.get(i..i + 3) != Some(b"...") || ellipsis.is_some() {
                    return Err(Error::value(
                        OP,
                        format!("einsum(): found '.' for {what} that is not part of any ellipsis"),
                    ));
                }
                ellipsis = Some(labels.len());
                i += 3;
            }
            c => {
                return Err(Error::value(
                    OP,
                    format!(
                        "einsum(): invalid subscript given at index {i} in the equation string, subscripts must be in [a-zA-Z], got '{}'",
                        c as char
                    ),
                ))
            }
        }
    }
    Ok(Term { labels, ellipsis })
}

/// One operand on its way through the evaluation: the tensor and a label per dim.
struct Operand {
    t: Tensor,
    labels: Vec<Label>,
}

impl Operand {
    /// Takes the diagonal of every label repeated in this operand.
    fn diagonals(mut self, index: usize) -> Result<Operand> {
        loop {
            let dup = (0..self.labels.len()).find_map(|i| {
                (i + 1..self.labels.len())
                    .find(|&j| self.labels[j] == self.labels[i])
                    .map(|j| (i, j))
            });
            let Some((i, j)) = dup else { return Ok(self) };
            let (n, m) = (self.t.shape()[i], self.t.shape()[j]);
            if n != m {
                return Err(Error::shape(
                    OP,
                    format!(
                        "einsum(): subscript {} is repeated for operand {index} but the sizes don't match, {n} != {m}",
                        label_name(self.labels[i])
                    ),
                ));
            }
            let l = self.labels[i];
            self.t = self.t.diagonal(0, i as i64, j as i64)?;
            self.labels.remove(j);
            self.labels.remove(i);
            self.labels.push(l);
        }
    }

    /// Sums away the labels `keep` rejects.
    fn sum_unneeded(mut self, keep: impl Fn(Label) -> bool) -> Result<Operand> {
        let dims: Vec<i64> = (0..self.labels.len())
            .filter(|&k| !keep(self.labels[k]))
            .map(|k| k as i64)
            .collect();
        if dims.is_empty() {
            return Ok(self);
        }
        self.t = self.t.sum(&dims, false)?;
        self.labels.retain(|&l| keep(l));
        Ok(self)
    }

    fn size(&self, l: Label) -> usize {
        self.labels
            .iter()
            .position(|&x| x == l)
            .map_or(1, |k| self.t.shape()[k])
    }
}

fn label_name(l: Label) -> String {
    if l < ELLIPSIS_BASE {
        char::from(l as u8).to_string()
    } else {
        "...".to_string()
    }
}

/// `a` and `b` contracted over the labels in both that `keep` rejects, as one batched
/// matrix product; the result's labels are the shared kept ones, then `a`'s own, then
/// `b`'s own.
fn contract(a: Operand, b: Operand, keep: &dyn Fn(Label) -> bool) -> Result<Operand> {
    let in_b = |l: &Label| b.labels.contains(l);
    let in_a = |l: &Label| a.labels.contains(l);
    let batch: Vec<Label> = a
        .labels
        .iter()
        .copied()
        .filter(|l| in_b(l) && keep(*l))
        .collect();
    let summed: Vec<Label> = a
        .labels
        .iter()
        .copied()
        .filter(|l| in_b(l) && !keep(*l))
        .collect();
    let a_own: Vec<Label> = a.labels.iter().copied().filter(|l| !in_b(l)).collect();
    let b_own: Vec<Label> = b.labels.iter().copied().filter(|l| !in_a(l)).collect();
    // Sizes, broadcasting 1 against n as PyTorch does.
    let size = |l: Label| -> Result<usize> {
        let (n, m) = (a.size(l), b.size(l));
        if n == m || m == 1 {
            Ok(n)
        } else if n == 1 {
            Ok(m)
        } else {
            Err(Error::shape(
                OP,
                format!(
                    "einsum(): operands do not broadcast with remapped shapes (original->remapped): subscript {} has sizes {n} and {m}",
                    label_name(l)
                ),
            ))
        }
    };
    let arrange = |o: &Operand, order: &[&[Label]]| -> Result<Tensor> {
        let perm: Vec<i64> = order
            .iter()
            .flat_map(|g| g.iter())
            .filter_map(|l| o.labels.iter().position(|x| x == l).map(|k| k as i64))
            .collect();
        let t = o.t.permute(&perm)?;
        // Shared labels broadcast to the common size.
        let mut sizes = Vec::with_capacity(perm.len());
        for g in order {
            for &l in g.iter().filter(|l| o.labels.contains(l)) {
                sizes.push(if batch.contains(&l) || summed.contains(&l) {
                    size(l)? as i64
                } else {
                    o.size(l) as i64
                });
            }
        }
        t.expand(&sizes)
    };
    let prod = |ls: &[Label]| -> Result<usize> {
        ls.iter().try_fold(1usize, |p, &l| {
            p.checked_mul(size(l)?)
                .ok_or_else(|| Error::shape(OP, "einsum(): the operands' sizes overflow"))
        })
    };
    let (nb, nk) = (prod(&batch)?, prod(&summed)?);
    let (nm, nn) = (prod(&a_own)?, prod(&b_own)?);
    let ta =
        arrange(&a, &[&batch, &a_own, &summed])?.reshape(&[nb as i64, nm as i64, nk as i64])?;
    let tb =
        arrange(&b, &[&batch, &summed, &b_own])?.reshape(&[nb as i64, nk as i64, nn as i64])?;
    let r = ta.matmul(&tb)?;
    let mut shape: Vec<i64> = Vec::new();
    for &l in batch.iter().chain(&a_own) {
        shape.push(if batch.contains(&l) {
            size(l)?
        } else {
            a.size(l)
        } as i64);
    }
    for &l in &b_own {
        shape.push(b.size(l) as i64);
    }
    let mut labels = batch;
    labels.extend(a_own);
    labels.extend(b_own);
    Ok(Operand {
        t: r.reshape(&shape)?,
        labels,
    })
}

impl Tensor {
    /// Einstein summation (PyTorch's `einsum`, NumPy's notation): `"ij,jk->ik"` is a
    /// matrix product, `"ii"` a trace, `"bij,bjk->bik"` a batched product, `"...ij->...ji"`
    /// a transpose of the last two dims. Operands are promoted to one dtype.
    ///
    /// ```
    /// use strata::Tensor;
    /// let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
    /// let tr = Tensor::einsum("ii", &[&a])?;
    /// assert_eq!(tr.to_vec::<f32>()?, vec![5.0]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    ///
    /// # Errors
    /// A malformed equation; a different number of operands than terms; a term whose
    /// labels do not match its operand's dims; sizes of one label that disagree (other
    /// than 1 against n); an output label that is repeated or in no input.
    pub fn einsum(equation: &str, operands: &[&Tensor]) -> Result<Tensor> {
        let eq: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
        let (lhs, rhs) = match eq.split_once("->") {
            Some((l, r)) => (l, Some(r)),
            None => (eq.as_str(), None),
        };
        let terms: Vec<Term> = lhs
            .split(',')
            .map(|s| parse_term(s, "operand"))
            .collect::<Result<_>>()?;
        if terms.len() != operands.len() {
            return Err(Error::value(
                OP,
                if terms.len() < operands.len() {
                    "einsum(): more operands were provided than specified in the equation"
                } else {
                    "einsum(): fewer operands were provided than specified in the equation"
                },
            ));
        }
        // Each operand's labels, `...` expanded to its broadcast dims (right-aligned).
        let mut ell_max = 0usize;
        for (i, (term, t)) in terms.iter().zip(operands).enumerate() {
            let n = term.labels.len();
            match term.ellipsis {
                None if n != t.ndim() => {
                    return Err(Error::shape(
                        OP,
                        format!(
                            "einsum(): the number of subscripts in the equation ({n}) does not match the number of dimensions ({}) for operand {i} and no ellipsis was given",
                            t.ndim()
                        ),
                    ))
                }
                Some(_) if n > t.ndim() => {
                    return Err(Error::shape(
                        OP,
                        format!(
                            "einsum(): the number of subscripts in the equation ({n}) is more than the number of dimensions ({}) for operand {i}",
                            t.ndim()
                        ),
                    ))
                }
                Some(_) => ell_max = ell_max.max(t.ndim() - n),
                None => {}
            }
        }
        let ell: Vec<Label> = (0..ell_max as Label).map(|k| ELLIPSIS_BASE + k).collect();
        let dtype = operands
            .iter()
            .skip(1)
            .try_fold(operands.first().map(|t| t.dtype()), |dt, t| {
                dt.map(|d| promote_types(d, t.dtype())).transpose()
            })?;
        let mut ops: Vec<Operand> = Vec::with_capacity(operands.len());
        for (term, t) in terms.iter().zip(operands) {
            let mut labels = term.labels.clone();
            if let Some(at) = term.ellipsis {
                let e = t.ndim() - term.labels.len();
                labels.splice(at..at, ell[ell_max - e..].iter().copied());
            }
            let t = match dtype {
                Some(dt) if dt != t.dtype() => t.to_dtype(dt)?,
                _ => (*t).clone(),
            };
            ops.push(Operand { t, labels });
        }
        // The output's labels.
        let out: Vec<Label> = match rhs {
            Some(r) => {
                let term = parse_term(r, "the output")?;
                let mut labels = term.labels.clone();
                if let Some(at) = term.ellipsis {
                    labels.splice(at..at, ell.iter().copied());
                }
                for (k, &l) in labels.iter().enumerate() {
                    if labels[..k].contains(&l) {
                        return Err(Error::value(
                            OP,
                            format!("einsum(): output subscript {} appears more than once in the output", label_name(l)),
                        ));
                    }
                    if !ops.iter().any(|o| o.labels.contains(&l)) && l < ELLIPSIS_BASE {
                        return Err(Error::value(
                            OP,
                            format!("einsum(): output subscript {} does not appear in the equation for any input operand", label_name(l)),
                        ));
                    }
                }
                labels
            }
            None => {
                let mut once: Vec<Label> = Vec::new();
                let all: Vec<Label> = ops.iter().flat_map(|o| o.labels.iter().copied()).collect();
                for &l in &all {
                    if l < ELLIPSIS_BASE && all.iter().filter(|&&x| x == l).count() == 1 {
                        once.push(l);
                    }
                }
                once.sort_unstable();
                let mut labels = ell.clone();
                labels.extend(once);
                labels
            }
        };
        if ops.is_empty() {
            return Err(Error::value(
                OP,
                "einsum(): must provide at least one operand",
            ));
        }
        let ops: Vec<Operand> = ops
            .into_iter()
            .enumerate()
            .map(|(i, o)| o.diagonals(i))
            .collect::<Result<_>>()?;
        // Contract left to right; a label survives while the output or a later operand
        // uses it.
        let mut iter = ops.into_iter();
        let mut acc = iter.next().expect("at least one operand");
        let rest: Vec<Operand> = iter.collect();
        let needed_after = |k: usize, l: Label| {
            out.contains(&l) || rest[k..].iter().any(|o| o.labels.contains(&l))
        };
        acc = acc.sum_unneeded(|l| needed_after(0, l))?;
        for (k, b) in rest.iter().enumerate() {
            let b = Operand {
                t: b.t.clone(),
                labels: b.labels.clone(),
            };
            let keep = |l: Label| needed_after(k + 1, l);
            let b = b.sum_unneeded(|l| keep(l) || acc.labels.contains(&l))?;
            acc = acc.sum_unneeded(|l| keep(l) || b.labels.contains(&l))?;
            acc = contract(acc, b, &keep)?;
        }
        let acc = acc.sum_unneeded(|l| out.contains(&l))?;
        // Output labels the operands lack (a `...` of no dims in some operand, or sizes
        // broadcast away) come in as size-1 dims.
        let mut t = acc.t;
        let mut labels = acc.labels;
        for &l in &out {
            if !labels.contains(&l) {
                t = t.unsqueeze(t.ndim() as i64)?;
                labels.push(l);
            }
        }
        let perm: Vec<i64> = out
            .iter()
            .map(|l| {
                labels
                    .iter()
                    .position(|x| x == l)
                    .expect("every output label is present") as i64
            })
            .collect();
        t.permute(&perm)
    }
}
