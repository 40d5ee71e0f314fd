//! Autograd against finite differences (float64, central differences), and PyTorch's
//! semantics and messages for the graph, in-place writes and views.

// One-input checks read best as `&[x.clone()]`.
#![allow(clippy::cloned_ref_to_slice_refs)]

use std::sync::Arc;

use strata::autograd::{self, no_grad};
use strata::{DType, Tensor, TensorIndex};

type F = dyn Fn(&[Tensor]) -> strata::Result<Tensor>;

fn t64(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn vals(t: &Tensor) -> Vec<f64> {
    t.contiguous().unwrap().to_vec::<f64>().unwrap()
}

/// Fixed pseudo-random values in `[lo, hi)`.
fn sample(n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

/// `Σ w·f(inputs)` for fixed weights `w`, so every output element matters.
fn weighted(f: &F, inputs: &[Tensor], w: &[f64]) -> strata::Result<Tensor> {
    let y = f(inputs)?;
    let wt = t64(&w[..y.numel()], y.shape());
    y.mul(&wt)?.sum(&[], false)
}

/// Checks the analytic gradient of `Σ w·f` against central differences, for every input.
fn gradcheck(name: &str, f: &F, inputs: &[Tensor]) {
    for x in inputs {
        x.requires_grad_(true).unwrap();
    }
    let y = f(inputs).unwrap();
    let w = sample(y.numel().max(1), 99, -1.0, 1.0);
    let loss = weighted(f, inputs, &w).unwrap();
    let grads = autograd::grad(&[loss], inputs, &[], None, false, true).unwrap();
    let eps = 1e-6;
    for (k, x) in inputs.iter().enumerate() {
        let base = vals(x);
        let mut numeric = vec![0.0; base.len()];
        for i in 0..base.len() {
            let probe = |d: f64| {
                let mut v = base.clone();
                v[i] += d;
                let mut ins: Vec<Tensor> = inputs.iter().map(|t| t.detach()).collect();
                ins[k] = t64(&v, x.shape());
                let _g = no_grad();
                weighted(f, &ins, &w).unwrap().item().unwrap().to_f64()
            };
            numeric[i] = (probe(eps) - probe(-eps)) / (2.0 * eps);
        }
        let analytic = match &grads[k] {
            Some(g) => {
                assert_eq!(g.shape(), x.shape(), "{name}: gradient shape for input {k}");
                vals(g)
            }
            None => vec![0.0; base.len()],
        };
        for i in 0..base.len() {
            let (a, n) = (analytic[i], numeric[i]);
            assert!(
                (a - n).abs() <= 1e-5 * (1.0 + n.abs()),
                "{name}: input {k} element {i}: analytic {a} vs numeric {n}"
            );
        }
    }
}

fn unary(name: &'static str, lo: f64, hi: f64, op: fn(&Tensor) -> strata::Result<Tensor>) {
    let x = t64(&sample(6, 3, lo, hi), &[2, 3]);
    // Contiguous and transposed inputs.
    gradcheck(name, &move |i: &[Tensor]| op(&i[0]), &[x.clone()]);
    gradcheck(name, &move |i: &[Tensor]| op(&i[0].t()?), &[x]);
}

#[test]
fn unary_ops_match_finite_differences() {
    unary("neg", -2.0, 2.0, |x| x.neg());
    unary("abs", 0.2, 2.0, |x| x.abs());
    unary("square", -2.0, 2.0, |x| x.square());
    unary("sqrt", 0.5, 3.0, |x| x.sqrt());
    unary("rsqrt", 0.5, 3.0, |x| x.rsqrt());
    unary("exp", -2.0, 2.0, |x| x.exp());
    unary("exp2", -2.0, 2.0, |x| x.exp2());
    unary("expm1", -2.0, 2.0, |x| x.expm1());
    unary("log", 0.5, 3.0, |x| x.log());
    unary("log2", 0.5, 3.0, |x| x.log2());
    unary("log10", 0.5, 3.0, |x| x.log10());
    unary("log1p", -0.5, 3.0, |x| x.log1p());
    unary("sin", -3.0, 3.0, |x| x.sin());
    unary("cos", -3.0, 3.0, |x| x.cos());
    unary("tan", -1.0, 1.0, |x| x.tan());
    unary("asin", -0.9, 0.9, |x| x.asin());
    unary("acos", -0.9, 0.9, |x| x.acos());
    unary("atan", -3.0, 3.0, |x| x.atan());
    unary("sinh", -2.0, 2.0, |x| x.sinh());
    unary("cosh", -2.0, 2.0, |x| x.cosh());
    unary("tanh", -2.0, 2.0, |x| x.tanh());
    unary("asinh", -2.0, 2.0, |x| x.asinh());
    unary("acosh", 1.5, 3.0, |x| x.acosh());
    unary("atanh", -0.9, 0.9, |x| x.atanh());
    unary("sigmoid", -3.0, 3.0, |x| x.sigmoid());
    unary("gelu", -3.0, 3.0, |x| x.gelu());
    unary("erf", -2.0, 2.0, |x| x.erf());
    unary("erfc", -2.0, 2.0, |x| x.erfc());
    unary("erfinv", -0.9, 0.9, |x| x.erfinv());
    unary("reciprocal", 0.5, 3.0, |x| x.reciprocal());
    unary("relu", -2.0, 2.0, |x| x.relu());
    unary("deg2rad", -2.0, 2.0, |x| x.deg2rad());
    unary("rad2deg", -2.0, 2.0, |x| x.rad2deg());
    unary("frac", 0.1, 0.9, |x| x.frac());
    unary("floor", 0.1, 0.9, |x| x.floor());
}

#[test]
fn binary_ops_match_finite_differences_with_broadcasting() {
    type B = fn(&Tensor, &Tensor) -> strata::Result<Tensor>;
    let ops: &[(&str, f64, f64, B)] = &[
        ("add", -2.0, 2.0, |a, b| a.add(b)),
        ("sub", -2.0, 2.0, |a, b| a.sub(b)),
        ("mul", -2.0, 2.0, |a, b| a.mul(b)),
        ("div", 0.5, 2.0, |a, b| a.div(b)),
        ("pow", 0.5, 2.0, |a, b| a.pow(b)),
        ("maximum", -2.0, 2.0, |a, b| a.maximum(b)),
        ("minimum", -2.0, 2.0, |a, b| a.minimum(b)),
        ("atan2", 0.5, 2.0, |a, b| a.atan2(b)),
        ("hypot", 0.5, 2.0, |a, b| a.hypot(b)),
        ("logaddexp", -2.0, 2.0, |a, b| a.logaddexp(b)),
        ("logaddexp2", -2.0, 2.0, |a, b| a.logaddexp2(b)),
        ("xlogy", 0.5, 2.0, |a, b| a.xlogy(b)),
        ("fmod", 0.5, 2.0, |a, b| a.fmod(b)),
        ("remainder", 0.5, 2.0, |a, b| a.remainder(b)),
    ];
    for &(name, lo, hi, op) in ops {
        let a = t64(&sample(6, 5, lo, hi), &[2, 3]);
        let b = t64(&sample(3, 7, lo, hi), &[3]);
        gradcheck(
            name,
            &move |i: &[Tensor]| op(&i[0], &i[1]),
            &[a.clone(), b.clone()],
        );
        let c = t64(&sample(2, 11, lo, hi), &[2, 1]);
        gradcheck(name, &move |i: &[Tensor]| op(&i[0], &i[1]), &[c, b.clone()]);
    }
    // Scalars on either side.
    let a = t64(&sample(4, 13, 0.5, 2.0), &[4]);
    gradcheck("mul scalar", &|i: &[Tensor]| i[0].mul(3.0), &[a.clone()]);
    gradcheck("pow scalar", &|i: &[Tensor]| i[0].pow(2.5), &[a.clone()]);
    gradcheck(
        "rsub scalar",
        &|i: &[Tensor]| strata::ops::scalar_lhs("sub", 1.0.into(), &i[0]),
        &[a],
    );
}

#[test]
fn view_ops_match_finite_differences() {
    let x = t64(&sample(24, 17, -1.0, 1.0), &[2, 3, 4]);
    let cases: Vec<(&str, Box<F>)> = vec![
        (
            "transpose",
            Box::new(|i: &[Tensor]| i[0].transpose(0, 2)?.mul(&i[0].transpose(0, 2)?)),
        ),
        (
            "permute",
            Box::new(|i: &[Tensor]| i[0].permute(&[2, 0, 1])?.exp()),
        ),
        ("view", Box::new(|i: &[Tensor]| i[0].view(&[6, 4])?.sin())),
        (
            "reshape copy",
            Box::new(|i: &[Tensor]| i[0].transpose(0, 1)?.reshape(&[24])?.sin()),
        ),
        (
            "flip",
            Box::new(|i: &[Tensor]| i[0].flip(&[0, 2])?.mul(&i[0])),
        ),
        (
            "slice step -2",
            Box::new(|i: &[Tensor]| i[0].slice(2, None, None, -2)?.exp()),
        ),
        ("select", Box::new(|i: &[Tensor]| i[0].select(1, -1)?.exp())),
        (
            "narrow",
            Box::new(|i: &[Tensor]| i[0].narrow(2, 1, 2)?.exp()),
        ),
        (
            "expand",
            Box::new(|i: &[Tensor]| i[0].select(0, 0)?.unsqueeze(0)?.expand(&[5, 3, 4])?.sin()),
        ),
        (
            "squeeze",
            Box::new(|i: &[Tensor]| i[0].narrow(0, 0, 1)?.squeeze()?.exp()),
        ),
        (
            "diagonal",
            Box::new(|i: &[Tensor]| i[0].diagonal(0, 1, 2)?.exp()),
        ),
        (
            "unfold overlapping",
            Box::new(|i: &[Tensor]| i[0].unfold(2, 2, 1)?.exp()),
        ),
        (
            "as_strided overlapping",
            Box::new(|i: &[Tensor]| i[0].as_strided(&[3, 3], &[1, 2], Some(1))?.exp()),
        ),
        (
            "as_strided of a non-dense input",
            Box::new(|i: &[Tensor]| {
                i[0].slice(2, None, None, 2)?
                    .as_strided(&[2, 3], &[12, 2], Some(0))?
                    .exp()
            }),
        ),
        (
            "unbind",
            Box::new(|i: &[Tensor]| {
                let p = i[0].unbind(1)?;
                p[0].mul(&p[2])
            }),
        ),
        (
            "split",
            Box::new(|i: &[Tensor]| {
                let p = i[0].split(3, 2)?;
                p[1].exp()
            }),
        ),
        (
            "index",
            Box::new(|i: &[Tensor]| {
                i[0].index(&[
                    TensorIndex::Int(1),
                    TensorIndex::Slice {
                        start: None,
                        stop: None,
                        step: 2,
                    },
                    TensorIndex::NewAxis,
                ])?
                .exp()
            }),
        ),
        (
            "movedim",
            Box::new(|i: &[Tensor]| i[0].movedim(&[0], &[2])?.exp()),
        ),
        (
            "view of view",
            Box::new(|i: &[Tensor]| {
                i[0].transpose(0, 2)?
                    .slice(0, Some(1), None, 2)?
                    .select(1, 1)?
                    .exp()
            }),
        ),
    ];
    for (name, f) in cases {
        gradcheck(name, f.as_ref(), &[x.clone()]);
    }
}

#[test]
fn as_strided_of_an_overlapping_input_splits_shared_positions() {
    // PyTorch's rule: input elements sharing a storage position share its gradient.
    let x = t64(&[1.0, 2.0, 3.0], &[3]);
    x.requires_grad_(true).unwrap();
    let e = x.unsqueeze(0).unwrap().expand(&[2, 3]).unwrap(); // two rows alias x
    let v = e.as_strided(&[3], &[1], Some(0)).unwrap(); // x again, read through e
    v.mul(&t64(&[1.0, 10.0, 100.0], &[3]))
        .unwrap()
        .sum(&[], false)
        .unwrap()
        .backward(None, false, false)
        .unwrap();
    assert_eq!(vals(&x.grad().unwrap()), vec![1.0, 10.0, 100.0]);
}

#[test]
fn reductions_and_products_match_finite_differences() {
    let x = t64(&sample(24, 19, -1.0, 1.0), &[2, 3, 4]);
    gradcheck(
        "sum all",
        &|i: &[Tensor]| i[0].sum(&[], false),
        &[x.clone()],
    );
    gradcheck(
        "sum dims",
        &|i: &[Tensor]| i[0].sum(&[0, -1], false)?.exp(),
        &[x.clone()],
    );
    gradcheck(
        "sum keepdim",
        &|i: &[Tensor]| i[0].sum(&[1], true)?.exp(),
        &[x.clone()],
    );
    gradcheck(
        "mean",
        &|i: &[Tensor]| i[0].mean(&[2], false)?.exp(),
        &[x.clone()],
    );
    let m = t64(&sample(12, 23, -1.0, 1.0), &[3, 4]);
    let n = t64(&sample(8, 29, -1.0, 1.0), &[4, 2]);
    let v = t64(&sample(4, 31, -1.0, 1.0), &[4]);
    let w = t64(&sample(3, 37, -1.0, 1.0), &[3]);
    let b = t64(&sample(24, 41, -1.0, 1.0), &[2, 3, 4]);
    let mm: &F = &|i: &[Tensor]| i[0].matmul(&i[1]);
    gradcheck("mm", mm, &[m.clone(), n.clone()]);
    gradcheck("mv", mm, &[m.clone(), v.clone()]);
    gradcheck("vm", mm, &[w.clone(), m.clone()]);
    gradcheck("dot", mm, &[v.clone(), v.clone()]);
    gradcheck("batched broadcast", mm, &[b.clone(), n.clone()]);
    gradcheck("batched vec", mm, &[b, v]);
    gradcheck(
        "mm transposed",
        &|i: &[Tensor]| i[0].t()?.mm(&i[1]),
        &[n, m.t().unwrap().contiguous().unwrap()],
    );
}

#[test]
fn gradients_accumulate_and_graphs_are_freed() {
    let x = t64(&[1.0, 2.0, 3.0], &[3]);
    x.requires_grad_(true).unwrap();
    let y = x.mul(&x).unwrap().sum(&[], false).unwrap();
    y.backward(None, true, false).unwrap();
    assert_eq!(vals(&x.grad().unwrap()), vec![2.0, 4.0, 6.0]);
    y.backward(None, false, false).unwrap();
    assert_eq!(vals(&x.grad().unwrap()), vec![4.0, 8.0, 12.0]);
    let e = y.backward(None, false, false).unwrap_err().to_string();
    assert!(
        e.starts_with("Trying to backward through the graph a second time"),
        "{e}"
    );
    // A node that kept no tensors may run again (PyTorch: `s = x + 1` twice).
    let s = x.add(1.0).unwrap();
    s.sum(&[], false)
        .unwrap()
        .backward(None, false, false)
        .unwrap();
    s.sum(&[], false)
        .unwrap()
        .backward(None, false, false)
        .unwrap();
    assert_eq!(vals(&x.grad().unwrap()), vec![6.0, 10.0, 14.0]);
    // A gradient shared by two leaves is not aliased between their .grad.
    let a = t64(&[1.0], &[1]);
    let b = t64(&[1.0], &[1]);
    a.requires_grad_(true).unwrap();
    b.requires_grad_(true).unwrap();
    a.add(&b)
        .unwrap()
        .sum(&[], false)
        .unwrap()
        .backward(None, false, false)
        .unwrap();
    a.grad().unwrap().add_(1.0).unwrap();
    assert_eq!(vals(&b.grad().unwrap()), vec![1.0]);
}

#[test]
fn pytorch_messages() {
    let x = t64(&[1.0, 2.0, 3.0], &[3]);
    let e = x
        .sum(&[], false)
        .unwrap()
        .backward(None, false, false)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "element 0 of tensors does not require grad and does not have a grad_fn"
    );
    x.requires_grad_(true).unwrap();
    let e = x.exp().unwrap().backward(None, false, false).unwrap_err();
    assert_eq!(
        e.to_string(),
        "grad can be implicitly created only for scalar outputs"
    );
    let e = x.add_(1.0).unwrap_err();
    assert_eq!(
        e.to_string(),
        "a leaf Variable that requires grad is being used in an in-place operation."
    );
    let e = x.narrow(0, 0, 2).unwrap().mul_(2.0).unwrap_err();
    assert_eq!(
        e.to_string(),
        "a view of a leaf Variable that requires grad is being used in an in-place operation."
    );
    {
        let _g = no_grad();
        x.add_(1.0).unwrap(); // allowed under no_grad (an optimizer step)
    }
    assert_eq!(vals(&x), vec![2.0, 3.0, 4.0]);
    let i = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
    let e = i.requires_grad_(true).unwrap_err();
    assert_eq!(
        e.to_string(),
        "only Tensors of floating point and complex dtype can require gradients"
    );
    // A saved tensor written in place.
    let y = x.exp().unwrap();
    let z = y.mul(&y).unwrap().sum(&[], false).unwrap();
    y.add_(1.0).unwrap();
    let e = z.backward(None, false, false).unwrap_err().to_string();
    // (Versions count every write of the storage, the op's own first write included.)
    let v0 = y.version() - 1;
    assert!(
        e.starts_with(&format!("one of the variables needed for gradient computation has been modified by an inplace operation: [strata.DoubleTensor [3]], which is output 0 of ExpBackward0, is at version {}; expected version {v0} instead.", v0 + 1)),
        "{e}"
    );
    // A view made under no_grad, written with grad on.
    let w = x.mul(2.0).unwrap();
    let v = {
        let _g = no_grad();
        w.narrow(0, 0, 1).unwrap()
    };
    let e = v.mul_(2.0).unwrap_err().to_string();
    assert!(e.starts_with("A view was created in no_grad mode"), "{e}");
}

#[test]
fn in_place_on_a_view_rewrites_the_base_history() {
    // PyTorch: y = x.clone(); y[1:3].mul_(2); y.sum().backward() → x.grad = [1, 2, 2, 1].
    let x = t64(&[1.0, 2.0, 3.0, 4.0], &[4]);
    x.requires_grad_(true).unwrap();
    let y = x.clone_data().unwrap();
    y.narrow(0, 1, 2).unwrap().mul_(2.0).unwrap();
    assert_eq!(y.grad_fn().unwrap().name(), "CopySlices");
    y.sum(&[], false)
        .unwrap()
        .backward(None, false, false)
        .unwrap();
    assert_eq!(vals(&x.grad().unwrap()), vec![1.0, 2.0, 2.0, 1.0]);

    // The value written comes from another tensor that requires grad; an earlier view of
    // the base sees the write through its regenerated grad_fn.
    let a = t64(&[1.0, 2.0, 3.0], &[3]);
    let w = t64(&[5.0], &[1]);
    a.requires_grad_(true).unwrap();
    w.requires_grad_(true).unwrap();
    let b = a.mul(1.0).unwrap();
    let early = b.narrow(0, 0, 2).unwrap();
    b.narrow(0, 1, 1).unwrap().mul_(&w).unwrap(); // b = [a0, a1·w, a2]
    assert_eq!(early.grad_fn().unwrap().name(), "AsStridedBackward0");
    early
        .mul(&early)
        .unwrap()
        .sum(&[], false)
        .unwrap()
        .backward(None, false, false)
        .unwrap();
    // Σ early² = a0² + (a1·w)²: ∂a = [2a0, 2·a1·w², 0], ∂w = 2·a1²·w.
    assert_eq!(vals(&a.grad().unwrap()), vec![2.0, 100.0, 0.0]);
    assert_eq!(vals(&w.grad().unwrap()), vec![40.0]);
}

#[test]
fn grad_and_double_backward() {
    let x = t64(&[1.0, 2.0, -1.5], &[3]);
    x.requires_grad_(true).unwrap();
    let y = x.mul(&x).unwrap().mul(&x).unwrap().sum(&[], false).unwrap();
    let g = autograd::grad(&[y], &[x.clone()], &[], None, true, false).unwrap();
    let g = g[0].clone().unwrap();
    assert_eq!(vals(&g), vec![3.0, 12.0, 6.75]);
    assert!(x.grad().is_none(), "grad() leaves .grad alone");
    let gg = autograd::grad(
        &[g.sum(&[], false).unwrap()],
        &[x.clone()],
        &[],
        None,
        false,
        false,
    )
    .unwrap();
    assert_eq!(vals(&gg[0].clone().unwrap()), vec![6.0, 12.0, -9.0]);
    // Unused inputs.
    let z = t64(&[1.0], &[1]);
    z.requires_grad_(true).unwrap();
    let y = x.sum(&[], false).unwrap();
    let e = autograd::grad(&[y.clone()], &[z.clone()], &[], Some(true), false, false).unwrap_err();
    assert!(e
        .to_string()
        .starts_with("One of the differentiated Tensors appears to not have been used"));
    assert!(autograd::grad(&[y], &[z], &[], None, false, true).unwrap()[0].is_none());
}

#[test]
fn hooks_retain_grad_and_detach() {
    let x = t64(&[1.0, 2.0], &[2]);
    x.requires_grad_(true).unwrap();
    let y = x.mul(3.0).unwrap();
    y.retain_grad().unwrap();
    let id = y
        .register_hook(Arc::new(|g: &Tensor| Ok(Some(g.mul(10.0)?))))
        .unwrap();
    x.register_hook(Arc::new(|g: &Tensor| Ok(Some(g.add(1.0)?))))
        .unwrap();
    y.sum(&[], false)
        .unwrap()
        .backward(None, false, false)
        .unwrap();
    assert_eq!(vals(&y.grad().unwrap()), vec![10.0, 10.0]);
    assert_eq!(vals(&x.grad().unwrap()), vec![31.0, 31.0]);
    assert!(y.remove_hook(id));
    assert!(!x.detach().requires_grad());
    assert!(x.detach().same_storage(&x));
    assert!(!y.is_leaf() && x.is_leaf());
    let node = y.grad_fn().unwrap();
    assert_eq!(node.name(), "MulBackward0");
    let next = node.next_functions();
    assert_eq!(next[0].node.as_ref().unwrap().name(), "AccumulateGrad");
    assert!(next[1].node.is_none(), "the scalar operand has no history");
    // Grad mode is off inside no_grad: nothing is recorded.
    let z = {
        let _g = no_grad();
        x.mul(2.0).unwrap()
    };
    assert!(!z.requires_grad() && z.is_leaf());
    assert_eq!(x.dtype(), DType::F64);
}

#[test]
fn more_reductions_match_finite_differences() {
    let x = t64(&sample(24, 43, 0.2, 1.5), &[2, 3, 4]);
    let cases: Vec<(&str, Box<F>)> = vec![
        (
            "prod dims",
            Box::new(|i: &[Tensor]| i[0].prod(&[1, 2], false)),
        ),
        ("prod all", Box::new(|i: &[Tensor]| i[0].prod(&[], false))),
        ("amax", Box::new(|i: &[Tensor]| i[0].amax(&[2], true))),
        ("amin", Box::new(|i: &[Tensor]| i[0].amin(&[0, 1], false))),
        ("max", Box::new(|i: &[Tensor]| i[0].max())),
        ("min", Box::new(|i: &[Tensor]| i[0].min())),
        (
            "max_dim",
            Box::new(|i: &[Tensor]| Ok(i[0].max_dim(1, false)?.0)),
        ),
        (
            "min_dim keepdim",
            Box::new(|i: &[Tensor]| Ok(i[0].min_dim(-1, true)?.0)),
        ),
        ("var", Box::new(|i: &[Tensor]| i[0].var(&[1], false))),
        (
            "std",
            Box::new(|i: &[Tensor]| i[0].std_correction(&[0, 2], 0.0, true)),
        ),
        (
            "logsumexp",
            Box::new(|i: &[Tensor]| i[0].logsumexp(&[2], false)),
        ),
        ("cumsum", Box::new(|i: &[Tensor]| i[0].cumsum(1))),
        ("cumprod", Box::new(|i: &[Tensor]| i[0].cumprod(-1))),
        (
            "where",
            Box::new(|i: &[Tensor]| Tensor::where_cond(&i[0].gt(0.8)?, &i[0].exp()?, &i[0].sin()?)),
        ),
        (
            "clamp",
            Box::new(|i: &[Tensor]| i[0].clamp(Some(0.5.into()), Some(1.2.into()))),
        ),
        (
            "index tensor",
            Box::new(|i: &[Tensor]| {
                let idx = Tensor::from_vec(vec![1i64, 0, 1], &[3]).unwrap();
                i[0].index(&[TensorIndex::Tensor(Box::new(idx))])
            }),
        ),
        (
            "mask",
            Box::new(|i: &[Tensor]| {
                let m = i[0].detach().gt(0.8)?;
                i[0].index(&[TensorIndex::Tensor(Box::new(m))])?.exp()
            }),
        ),
    ];
    for (name, f) in cases {
        gradcheck(name, f.as_ref(), &[x.clone()]);
    }
    // Zeros in prod and cumprod: the exact products of the other elements.
    let z = t64(&[0.5, 0.0, 2.0, 3.0, 0.0, 1.5], &[2, 3]);
    gradcheck(
        "prod with zeros",
        &|i: &[Tensor]| i[0].prod(&[1], false),
        &[z.clone()],
    );
    gradcheck(
        "cumprod with zeros",
        &|i: &[Tensor]| i[0].cumprod(1),
        &[z.clone()],
    );
    gradcheck(
        "prod all with a zero",
        &|i: &[Tensor]| i[0].prod(&[], false),
        &[z],
    );
}

#[test]
fn in_place_writes_record_their_inputs() {
    // fill_, index_put_, item assignment and copy_ into a tensor that did not require grad.
    let w = t64(&[2.0, 3.0], &[2]);
    w.requires_grad_(true).unwrap();
    let out = Tensor::zeros(&[5], DType::F64).unwrap();
    out.index_assign_(
        &[TensorIndex::Slice {
            start: Some(1),
            stop: Some(3),
            step: 1,
        }],
        &w.mul(2.0).unwrap(),
    )
    .unwrap();
    let idx = Tensor::from_vec(vec![4i64, 4], &[2]).unwrap();
    out.index_put_accumulate_(&[TensorIndex::Tensor(Box::new(idx))], &w)
        .unwrap();
    out.narrow(0, 2, 1).unwrap().fill_(7.0).unwrap();
    assert_eq!(vals(&out), vec![0.0, 4.0, 7.0, 0.0, 5.0]);
    let weights = t64(&[1.0, 10.0, 100.0, 1000.0, 10000.0], &[5]);
    out.mul(&weights)
        .unwrap()
        .sum(&[], false)
        .unwrap()
        .backward(None, false, false)
        .unwrap();
    // w0 reaches out[1] (×2) and out[4]; w1 reached out[2], overwritten by fill_, and out[4].
    assert_eq!(vals(&w.grad().unwrap()), vec![20.0 + 10000.0, 10000.0]);

    // A view of a tensor that tracks nothing cannot carry the write's gradient to it:
    // an error, not a silently lost gradient.
    let plain = Tensor::zeros(&[4], DType::F64).unwrap();
    let e = plain
        .narrow(0, 1, 2)
        .unwrap()
        .copy_(&w)
        .unwrap_err()
        .to_string();
    assert!(e.contains("index_assign_"), "{e}");

    let dst = Tensor::zeros(&[2, 2], DType::F64).unwrap();
    let src = t64(&[1.0, 2.0], &[2]);
    src.requires_grad_(true).unwrap();
    dst.copy_(&src).unwrap(); // broadcast over the rows
    dst.sum(&[], false)
        .unwrap()
        .backward(None, false, false)
        .unwrap();
    assert_eq!(vals(&src.grad().unwrap()), vec![2.0, 2.0]);
}

#[test]
fn clamp_with_tensor_bounds_sends_gradients_to_them() {
    let x = t64(&sample(6, 47, -2.0, 2.0), &[2, 3]);
    let lo = t64(&sample(3, 53, -1.0, 0.0), &[3]);
    let hi = t64(&sample(2, 59, 0.2, 1.0), &[2, 1]);
    gradcheck(
        "clamp tensors",
        &|i: &[Tensor]| i[0].clamp_tensor(Some(&i[1]), Some(&i[2])),
        &[x.clone(), lo.clone(), hi.clone()],
    );
    // lo > hi: every element is hi.
    let lo2 = t64(&[5.0, 5.0, 5.0], &[3]);
    gradcheck(
        "clamp crossed",
        &|i: &[Tensor]| i[0].clamp_tensor(Some(&i[1]), Some(&i[2])),
        &[x, lo2, hi],
    );
}

#[test]
fn double_backward_through_an_in_place_op() {
    // y = x·1, then y *= x: y = x², ∂Σy/∂x = 2x, and its derivative 2.
    let x = t64(&[1.0, -3.0], &[2]);
    x.requires_grad_(true).unwrap();
    let y = x.mul(1.0).unwrap();
    y.mul_(&x).unwrap();
    let g = autograd::grad(
        &[y.sum(&[], false).unwrap()],
        &[x.clone()],
        &[],
        None,
        true,
        false,
    )
    .unwrap()[0]
        .clone()
        .unwrap();
    assert_eq!(vals(&g), vec![2.0, -6.0]);
    let gg = autograd::grad(&[g.sum(&[], false).unwrap()], &[x], &[], None, false, false).unwrap();
    assert_eq!(vals(&gg[0].clone().unwrap()), vec![2.0, 2.0]);
}

#[test]
fn in_place_through_views_matches_finite_differences_and_twice_differentiates() {
    let x = t64(&sample(12, 61, -1.0, 1.0), &[3, 4]);
    let w = t64(&sample(2, 67, -1.0, 1.0), &[2]);
    gradcheck(
        "view in place",
        &|i: &[Tensor]| {
            // (Not exp: its backward reads its result, which the writes below change; that
            // is PyTorch's "modified by an inplace operation" error, tested elsewhere.)
            let y = i[0].mul(&i[0])?;
            y.narrow(1, 1, 2)?.mul_(&i[1])?; // a view of a non-leaf, written with w
            y.t()?.select(0, 3)?.add_(&i[1].sum(&[], false)?)?; // a column, through t()
            y.sin()
        },
        &[x.clone(), w],
    );
    // Second derivative through CopySlices: y = [x0, x1², x2², x3].
    let x = t64(&[1.0, 2.0, 3.0, 4.0], &[4]);
    x.requires_grad_(true).unwrap();
    let y = x.mul(1.0).unwrap();
    y.narrow(0, 1, 2)
        .unwrap()
        .mul_(&x.narrow(0, 1, 2).unwrap())
        .unwrap();
    let g = autograd::grad(
        &[y.sum(&[], false).unwrap()],
        &[x.clone()],
        &[],
        None,
        true,
        false,
    )
    .unwrap()[0]
        .clone()
        .unwrap();
    assert_eq!(vals(&g), vec![1.0, 4.0, 6.0, 1.0]);
    let gg = autograd::grad(&[g.sum(&[], false).unwrap()], &[x], &[], None, false, true).unwrap();
    assert_eq!(vals(&gg[0].clone().unwrap()), vec![0.0, 2.0, 2.0, 0.0]);
}

#[test]
fn bad_uses_are_errors_with_pytorch_texts() {
    let plain = t64(&[1.0, 2.0], &[2]);
    let msg = |r: strata::Result<()>| r.unwrap_err().to_string();
    assert!(msg(plain.retain_grad())
        .contains("can't retain_grad on Tensor that has requires_grad=False"));
    assert!(msg(plain
        .register_hook(Arc::new(|_: &Tensor| Ok(None)))
        .map(|_| ()))
    .contains("cannot register a hook on a tensor that doesn't require gradient"));
    let x = t64(&[1.0, 2.0], &[2]);
    x.requires_grad_(true).unwrap();
    assert!(msg(x.set_grad(Some(t64(&[1.0], &[1])))).contains("different size"));
    assert!(
        msg(x.set_grad(Some(Tensor::zeros(&[2], DType::F32).unwrap()))).contains("different type")
    );
    let y = x.mul(2.0).unwrap();
    assert!(msg(y.requires_grad_(false).map(|_| ()))
        .contains("only change requires_grad flags of leaf"));
    assert!(msg(y.narrow(0, 0, 1).unwrap().detach_().map(|_| ()))
        .starts_with("Can't detach views in-place"));
    // A gradient of the wrong shape, a hook that changes the shape, an input that does not
    // require grad.
    let e = msg(y.backward(Some(&t64(&[1.0], &[1])), true, false));
    assert!(
        e.starts_with("Mismatch in shape: grad_output[0] has a shape of [1]"),
        "{e}"
    );
    let z = x.mul(3.0).unwrap();
    z.register_hook(Arc::new(|g: &Tensor| Ok(Some(g.sum(&[], false)?))))
        .unwrap();
    let e = msg(z.sum(&[], false).unwrap().backward(None, false, false));
    assert!(e.contains("has changed the size of value"), "{e}");
    let e = autograd::grad(
        &[y.sum(&[], false).unwrap()],
        &[plain],
        &[],
        None,
        false,
        false,
    )
    .unwrap_err()
    .to_string();
    assert_eq!(e, "One of the differentiated Tensors does not require grad");
}

#[test]
fn placing_sorting_and_composite_ops_match_finite_differences() {
    // Distinct values, so sorts and top-k have no ties to break.
    let x = t64(&sample(12, 21, -2.0, 2.0), &[3, 4]);
    let y = t64(&sample(12, 22, -2.0, 2.0), &[3, 4]);
    let v3 = t64(&sample(6, 23, -1.0, 1.0), &[2, 3]);
    let w3 = t64(&sample(6, 24, -1.0, 1.0), &[2, 3]);
    let idx = Tensor::from_vec(vec![2i64, 0, 1, 1, 3, 0], &[2, 3]).unwrap();
    let perm = Tensor::from_vec(vec![2i64, 0, 1, 0, 1, 2, 1, 2, 0], &[3, 3]).unwrap();
    type Case = (&'static str, Box<F>, Vec<Tensor>);
    let cases: Vec<Case> = vec![
        (
            "cat",
            Box::new(|i: &[Tensor]| Tensor::cat(&[&i[0], &i[1].t()?.t()?.narrow(0, 0, 2)?], 0)),
            vec![x.clone(), y.clone()],
        ),
        (
            "cat dim 1 of a transposed input",
            Box::new(|i: &[Tensor]| Tensor::cat(&[&i[0].t()?, &i[1].t()?], 1)),
            vec![x.clone(), y.clone()],
        ),
        (
            "stack",
            Box::new(|i: &[Tensor]| Tensor::stack(&[&i[0], &i[1]], 1)),
            vec![x.clone(), y.clone()],
        ),
        (
            "sort",
            Box::new(|i: &[Tensor]| Ok(i[0].sort(1, false, false)?.0)),
            vec![x.clone()],
        ),
        (
            "sort descending dim 0",
            Box::new(|i: &[Tensor]| Ok(i[0].t()?.sort(0, true, true)?.0)),
            vec![x.clone()],
        ),
        (
            "topk",
            Box::new(|i: &[Tensor]| Ok(i[0].topk(2, 1, true, true)?.0)),
            vec![x.clone()],
        ),
        (
            "gather",
            Box::new(move |i: &[Tensor]| i[0].narrow(0, 0, 2)?.gather(1, &idx)),
            vec![x.clone()],
        ),
        (
            "scatter",
            Box::new({
                let perm = perm.clone();
                move |i: &[Tensor]| {
                    i[0].narrow(1, 0, 3)?
                        .scatter(1, &perm.narrow(0, 0, 2)?, &i[1])
                }
            }),
            vec![x.clone(), w3.clone()],
        ),
        (
            "scatter_add with repeats",
            Box::new(|i: &[Tensor]| {
                let rep = Tensor::from_vec(vec![0i64, 0, 2, 1, 1, 1], &[2, 3])?;
                i[0].scatter_add(1, &rep, &i[1])
            }),
            vec![x.clone(), w3.clone()],
        ),
        (
            "take_along_dim",
            Box::new(move |i: &[Tensor]| i[0].take_along_dim(&perm.narrow(1, 0, 2)?, Some(1))),
            vec![x.narrow(1, 0, 3).unwrap().contiguous().unwrap()],
        ),
        (
            "roll",
            Box::new(|i: &[Tensor]| i[0].roll(&[1, -2], &[0, 1])),
            vec![x.clone()],
        ),
        (
            "repeat",
            Box::new(|i: &[Tensor]| i[0].repeat(&[2, 1, 3])),
            vec![v3.clone()],
        ),
        (
            "tile of a column",
            Box::new(|i: &[Tensor]| i[0].narrow(1, 0, 1)?.tile(&[2, 3])),
            vec![v3.clone()],
        ),
        (
            "tril",
            Box::new(|i: &[Tensor]| i[0].tril(1)),
            vec![x.clone()],
        ),
        (
            "triu",
            Box::new(|i: &[Tensor]| i[0].t()?.triu(-1)),
            vec![x.clone()],
        ),
        (
            "diff",
            Box::new(|i: &[Tensor]| i[0].diff(2, 1, None, Some(&i[1].narrow(1, 0, 1)?))),
            vec![x.clone(), y.clone()],
        ),
        (
            "softmax",
            Box::new(|i: &[Tensor]| i[0].softmax(1, None)),
            vec![x.clone()],
        ),
        (
            "log_softmax",
            Box::new(|i: &[Tensor]| i[0].t()?.log_softmax(1, None)),
            vec![x.clone()],
        ),
        (
            "cross",
            Box::new(|i: &[Tensor]| i[0].cross(&i[1], Some(1))),
            vec![v3.clone(), w3.clone()],
        ),
        (
            "cumulative_sum",
            Box::new(|i: &[Tensor]| i[0].cumulative_sum(Some(1), None, true)),
            vec![x.clone()],
        ),
        (
            "einsum matmul",
            Box::new(|i: &[Tensor]| Tensor::einsum("ij,kj->ik", &[&i[0], &i[1]])),
            vec![x.clone(), y.clone()],
        ),
        (
            "einsum diagonal and sum",
            Box::new(|i: &[Tensor]| Tensor::einsum("ii,ij->j", &[&i[0].narrow(1, 0, 3)?, &i[1]])),
            vec![x.clone(), y.clone()],
        ),
        (
            "meshgrid",
            Box::new(|i: &[Tensor]| {
                let g = Tensor::meshgrid(&[&i[0].select(0, 0)?, &i[1].select(1, 1)?], true)?;
                g[0].mul(&g[1])
            }),
            vec![x.clone(), y.clone()],
        ),
    ];
    for (name, f, inputs) in &cases {
        let inputs: Vec<Tensor> = inputs
            .iter()
            .map(|t| t.detach().clone_data().unwrap())
            .collect();
        gradcheck(name, f.as_ref(), &inputs);
    }
    // Grad-fn names, as PyTorch's.
    let a = x.detach().requires_grad_(true).unwrap().clone();
    let names = [
        Tensor::cat(&[&a, &a], 0)
            .unwrap()
            .grad_fn()
            .unwrap()
            .name()
            .to_string(),
        a.sort(0, false, false)
            .unwrap()
            .0
            .grad_fn()
            .unwrap()
            .name()
            .to_string(),
        a.topk(1, 0, true, true)
            .unwrap()
            .0
            .grad_fn()
            .unwrap()
            .name()
            .to_string(),
        a.repeat(&[2, 1])
            .unwrap()
            .grad_fn()
            .unwrap()
            .name()
            .to_string(),
        a.roll(&[1], &[0])
            .unwrap()
            .grad_fn()
            .unwrap()
            .name()
            .to_string(),
    ];
    assert_eq!(
        names,
        [
            "CatBackward0",
            "SortBackward0",
            "TopkBackward0",
            "RepeatBackward0",
            "RollBackward0"
        ]
    );
}

/// Complex numbers (`autograd/complex.rs`): the gradient of a real loss with respect to
/// `z = x + iy` is `∂L/∂x + i·∂L/∂y`, checked against central differences of each part.
#[test]
fn complex_gradients_match_finite_differences_of_each_part() {
    let pairs = |v: &[f64]| t64(v, &[v.len() / 2, 2]).view_as_complex().unwrap();
    let start = [0.7, 0.4, -1.1, 0.3, 0.5, -0.9];
    // Losses of z (3 complex numbers): a holomorphic chain, then the non-holomorphic ops.
    type Loss = Box<dyn Fn(&Tensor) -> strata::Result<Tensor>>;
    let losses: Vec<(&str, Loss)> = vec![
        (
            "exp·sin·z + z²/3",
            Box::new(|z: &Tensor| {
                let w = z.exp()?.mul(&z.sin()?)?.mul(z)?.add(&z.mul(z)?.div(3.0)?)?;
                w.view_as_real()?.sum(&[], false)
            }),
        ),
        (
            "|z|·angle(z) + Im(conj z)",
            Box::new(|z: &Tensor| {
                z.abs()?
                    .mul(&z.angle()?)?
                    .add(&z.conj()?.imag()?)?
                    .sum(&[], false)
            }),
        ),
        (
            "Re(z @ zᵀ)",
            Box::new(|z: &Tensor| {
                let m = z.unsqueeze(1)?;
                m.matmul(&m.t()?)?.real()?.sum(&[], false)
            }),
        ),
    ];
    for (name, f) in &losses {
        let z = pairs(&start);
        z.requires_grad_(true).unwrap();
        f(&z).unwrap().backward(None, false, false).unwrap();
        let g = vals(&z.grad().unwrap().view_as_real().unwrap());
        let eps = 1e-6;
        for (i, &gi) in g.iter().enumerate() {
            let at = |d: f64| {
                let mut v = start;
                v[i] += d;
                let _off = no_grad();
                f(&pairs(&v)).unwrap().item().unwrap().to_f64()
            };
            let numeric = (at(eps) - at(-eps)) / (2.0 * eps);
            assert!(
                (gi - numeric).abs() < 1e-6 * (1.0 + numeric.abs()),
                "{name}: part {i}: analytic {gi}, numeric {numeric}"
            );
        }
    }
}

#[test]
fn complex_backward_needs_a_gradient_and_real_inputs_get_real_gradients() {
    let x = t64(&[0.5, 2.0], &[2]);
    x.requires_grad_(true).unwrap();
    let c = t64(&[1.0, 2.0], &[1, 2]).view_as_complex().unwrap(); // 1 + 2i
    let y = x.mul(&c).unwrap().sum(&[], false).unwrap();
    let e = y.backward(None, false, false).unwrap_err();
    assert!(
        e.to_string().contains("only for real scalar outputs"),
        "{e}"
    );
    // L = Re(y) = Σ x·1: the gradient of x is its real part, 1.
    y.real().unwrap().backward(None, false, false).unwrap();
    let g = x.grad().unwrap();
    assert_eq!(g.dtype(), DType::F64);
    assert_eq!(vals(&g), vec![1.0, 1.0]);
}
