//! Concrete view examples (PyTorch's and NumPy's documented results), as plain tests: strides,
//! offsets, contiguity, copies versus views, display texts and `explain()`.

use strata::layout::contiguous_strides;
use strata::{s, DType, Ellipsis, Layout, NewAxis, Tensor, TensorIndex};

fn ar(n: i64) -> Tensor {
    Tensor::arange(0, n, 1, DType::I64).unwrap()
}

fn ar_shape(shape: &[i64]) -> Tensor {
    ar(shape.iter().product()).view(shape).unwrap()
}

fn vals(t: &Tensor) -> Vec<i64> {
    t.to_vec::<i64>().unwrap()
}

#[test]
fn contiguous_strides_are_row_major() {
    let x = Tensor::zeros(&[2, 3], DType::F32).unwrap();
    assert_eq!(x.strides(), &[3, 1]);
    let y = Tensor::zeros(&[1, 2, 3, 4], DType::F32).unwrap();
    assert_eq!(y.strides(), &[24, 12, 4, 1]);
    assert_eq!(
        contiguous_strides(&[1, 2, 3, 4]).as_slice(),
        &[24, 12, 4, 1]
    );
    assert!(x.is_contiguous() && y.is_contiguous());
    assert_eq!((x.offset(), y.offset()), (0, 0));
    // Size-0 and size-1 dims count as 1 when multiplying, as in PyTorch.
    assert_eq!(contiguous_strides(&[2, 0, 3]).as_slice(), &[3, 3, 1]);
}

#[test]
fn slicing_a_block_moves_the_offset() {
    // x[1:2, 1:4] of arange(12).reshape(3, 4)
    let x = ar_shape(&[3, 4]);
    let v = x.index(&s![1..2, 1..4]).unwrap();
    assert_eq!(v.shape(), &[1, 3]);
    assert_eq!((v.offset(), v.strides()), (5, &[4isize, 1][..]));
    assert_eq!(vals(&v), vec![5, 6, 7]);
    assert!(v.same_storage(&x));
    // A 1-row block is contiguous (the size-1 dim is ignored).
    assert!(v.is_contiguous());

    // points[1:3, 1:3] of a 3x3
    let points = ar_shape(&[3, 3]);
    let p = points.index(&s![1..3, 1..3]).unwrap();
    assert_eq!((p.offset(), p.strides()), (4, &[3isize, 1][..]));
    assert!(!p.is_contiguous());
    assert_eq!(vals(&p), vec![4, 5, 7, 8]);
    // The same through slice() and narrow().
    let q = points
        .slice(0, Some(1), Some(3), 1)
        .unwrap()
        .narrow(1, 1, 2)
        .unwrap();
    assert_eq!((q.offset(), q.strides()), (4, &[3isize, 1][..]));
}

#[test]
fn broadcasting_uses_stride_zero() {
    let a = ar(4);
    let b = a.broadcast_to(&[2, 3, 4]).unwrap();
    assert_eq!(b.strides(), &[0, 0, 1]);
    assert_eq!(b.offset(), 0);
    assert_eq!(vals(&b), [0, 1, 2, 3].repeat(6));
    assert!(!b.is_contiguous());
    assert!(b.same_storage(&a));

    // (2, 1) expanded to (3, 2, 4)
    let c = ar_shape(&[2, 1]).expand(&[3, 2, 4]).unwrap();
    assert_eq!(c.shape(), &[3, 2, 4]);
    assert_eq!(c.strides(), &[0, 1, 0]);
    assert_eq!(vals(&c), [[0; 4], [1; 4]].concat().repeat(3));
    // -1 keeps a size.
    assert_eq!(ar_shape(&[2, 1]).expand(&[-1, 5]).unwrap().shape(), &[2, 5]);
}

#[test]
fn flips_are_negative_strides() {
    let x = ar_shape(&[3, 4]);
    let f0 = x.flip(&[0]).unwrap();
    assert_eq!((f0.offset(), f0.strides()), (8, &[-4isize, 1][..]));
    assert_eq!(vals(&f0), vec![8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3]);
    let f1 = x.flip(&[1]).unwrap();
    assert_eq!((f1.offset(), f1.strides()), (3, &[4isize, -1][..]));
    assert_eq!(vals(&f1), vec![3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8]);
    assert!(f0.same_storage(&x) && f1.same_storage(&x));
    // x[::-1] is the same as flip(0); flipping twice is the identity layout.
    let r = x.index(&s![..;-1]).unwrap();
    assert_eq!((r.offset(), r.strides()), (8, &[-4isize, 1][..]));
    assert_eq!(f0.flip(&[0]).unwrap().layout(), x.layout());
    // Negative steps other than -1.
    let y = ar(10);
    let z = y.slice(0, Some(8), Some(1), -3).unwrap();
    assert_eq!((z.offset(), z.strides()), (8, &[-3isize][..]));
    assert_eq!(vals(&z), vec![8, 5, 2]);
}

#[test]
fn view_of_a_strided_slice() {
    // arange(48).view(2,3,8)[:,:,::2].view(6,4) has strides (8, 2).
    let x = ar(48).view(&[2, 3, 8]).unwrap();
    let s = x.index(&s![.., .., ..;2]).unwrap();
    assert_eq!(s.strides(), &[24, 8, 2]);
    let v = s.view(&[6, 4]).unwrap();
    assert_eq!(v.strides(), &[8, 2]);
    assert!(v.same_storage(&x));
    assert_eq!(
        vals(&v),
        (0..48).step_by(2).collect::<Vec<i64>>(),
        "every other element, in order"
    );
}

#[test]
fn reshape_of_a_transpose_copies() {
    let t = ar_shape(&[3, 4]);
    let tt = t.t().unwrap();
    assert!(tt.view(&[-1]).is_err());
    let r = tt.reshape(&[-1]).unwrap();
    assert!(!r.same_storage(&t));
    assert!(r.is_contiguous());
    assert_eq!(vals(&r), vec![0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]);
    // While reshape of a contiguous tensor is a view.
    let v = t.reshape(&[2, -1]).unwrap();
    assert!(v.same_storage(&t));
    assert_eq!(v.shape(), &[2, 6]);
    // And flatten follows reshape.
    assert!(!tt.flatten(0, -1).unwrap().same_storage(&t));
    assert!(t.flatten(0, -1).unwrap().same_storage(&t));
}

#[test]
fn size_one_dims_do_not_affect_contiguity() {
    // (2, 1, 3) with strides (3, 7, 1) is contiguous: the size-1 dim's stride is ignored.
    let x = ar(6).as_strided(&[2, 1, 3], &[3, 7, 1], Some(0)).unwrap();
    assert!(x.is_contiguous());
    assert_eq!(vals(&x), vec![0, 1, 2, 3, 4, 5]);
    assert!(Layout::new(&[2, 1, 3], &[3, 7, 1], 0)
        .unwrap()
        .is_contiguous());
    assert!(!Layout::new(&[2, 2, 3], &[3, 7, 1], 0)
        .unwrap()
        .is_contiguous());
    // contiguous() returns the same storage for it.
    assert!(x.contiguous().unwrap().same_storage(&x));
    // Empty tensors are contiguous whatever the strides.
    assert!(ar(6)
        .as_strided(&[0, 3], &[100, -7], Some(0))
        .unwrap()
        .is_contiguous());
    // unsqueeze keeps contiguity.
    let u = ar_shape(&[2, 3]).unsqueeze(1).unwrap();
    assert_eq!(u.strides(), &[3, 3, 1]);
    assert!(u.is_contiguous());
}

#[test]
fn unfold_makes_sliding_windows() {
    let u = ar(10).unfold(0, 3, 2).unwrap();
    assert_eq!(u.shape(), &[4, 3]);
    assert_eq!(u.strides(), &[2, 1]);
    assert_eq!(vals(&u), vec![0, 1, 2, 2, 3, 4, 4, 5, 6, 6, 7, 8]);
    // Windows along a non-last dim go last.
    let w = ar_shape(&[4, 2]).unfold(0, 2, 2).unwrap();
    assert_eq!(
        (w.shape(), w.strides()),
        (&[2usize, 2, 2][..], &[4isize, 1, 2][..])
    );
    assert_eq!(vals(&w), vec![0, 2, 1, 3, 4, 6, 5, 7]);
}

#[test]
fn chunk_split_unbind() {
    let pieces = ar(6).chunk(4, 0).unwrap();
    assert_eq!(pieces.len(), 3);
    assert_eq!(
        pieces.iter().map(vals).collect::<Vec<_>>(),
        vec![vec![0, 1], vec![2, 3], vec![4, 5]]
    );
    assert_eq!(
        pieces.iter().map(|p| p.offset()).collect::<Vec<_>>(),
        vec![0, 2, 4]
    );
    let s = ar(5).split(2, 0).unwrap();
    assert_eq!(
        s.iter().map(vals).collect::<Vec<_>>(),
        vec![vec![0, 1], vec![2, 3], vec![4]]
    );
    let s = ar(5).split_with_sizes(&[1, 0, 4], 0).unwrap();
    assert_eq!(
        s.iter().map(|p| p.numel()).collect::<Vec<_>>(),
        vec![1, 0, 4]
    );
    let rows = ar_shape(&[2, 3]).unbind(1).unwrap();
    assert_eq!(
        rows.iter().map(vals).collect::<Vec<_>>(),
        vec![vec![0, 3], vec![1, 4], vec![2, 5]]
    );
}

#[test]
fn diagonal_permute_movedim_index() {
    let m = ar_shape(&[3, 4]);
    let d = m.diagonal(1, 0, 1).unwrap();
    assert_eq!(
        (d.shape(), d.strides(), d.offset()),
        (&[3usize][..], &[5isize][..], 1)
    );
    assert_eq!(vals(&d), vec![1, 6, 11]);
    let d = m.diagonal(-1, 0, 1).unwrap();
    assert_eq!(vals(&d), vec![4, 9]);
    let x = ar_shape(&[2, 3, 4]);
    let p = x.permute(&[2, 0, 1]).unwrap();
    assert_eq!(
        (p.shape(), p.strides()),
        (&[4usize, 2, 3][..], &[1isize, 12, 4][..])
    );
    let mv = x.movedim(&[0], &[2]).unwrap();
    assert_eq!(
        (mv.shape(), mv.strides()),
        (&[3usize, 4, 2][..], &[4isize, 1, 12][..])
    );
    let mt = x.mt().unwrap();
    assert_eq!(mt.shape(), &[2, 4, 3]);
    // x[1, ..., None, ::-2]
    let i = x
        .index(&[
            TensorIndex::Int(1),
            Ellipsis.into(),
            NewAxis.into(),
            TensorIndex::step(-2),
        ])
        .unwrap();
    assert_eq!(i.shape(), &[3, 1, 2]);
    assert_eq!(vals(&i), vec![15, 13, 19, 17, 23, 21]);
    assert_eq!(i.offset(), 15);
}

#[test]
fn view_dtype_reinterprets_bytes() {
    let x = ar(3);
    let w = x.view_dtype(DType::I32).unwrap();
    assert_eq!(w.shape(), &[6]);
    assert_eq!(w.to_vec::<i32>().unwrap(), vec![0, 0, 1, 0, 2, 0]);
    let b = x.view_dtype(DType::U8).unwrap();
    assert_eq!(b.shape(), &[24]);
    assert_eq!(b.get::<u8>(&[8]).unwrap(), 1);
    let f = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    let i = f.view_dtype(DType::I32).unwrap();
    assert_eq!(i.get::<i32>(&[0, 0]).unwrap(), 1.0f32.to_bits() as i32);
    let d = f.view_dtype(DType::F64).unwrap();
    assert_eq!(
        (d.shape(), d.strides()),
        (&[2usize, 1][..], &[1isize, 1][..])
    );
    // Back and forth is the identity layout.
    assert_eq!(d.view_dtype(DType::F32).unwrap().layout(), f.layout());
}

#[test]
fn display_texts() {
    assert_eq!(
        ar_shape(&[2, 3]).to_string(),
        "tensor([[0, 1, 2],\n        [3, 4, 5]])"
    );
    assert_eq!(
        Tensor::arange(0, 6, 1, DType::F32)
            .unwrap()
            .view(&[2, 3])
            .unwrap()
            .t()
            .unwrap()
            .to_string(),
        "tensor([[0., 3.],\n        [1., 4.],\n        [2., 5.]])"
    );
    assert_eq!(
        ar_shape(&[2, 2, 2]).to_string(),
        "tensor([[[0, 1],\n         [2, 3]],\n\n        [[4, 5],\n         [6, 7]]])"
    );
    assert_eq!(
        ar(4).flip(&[0]).unwrap().to_string(),
        "tensor([3, 2, 1, 0])"
    );
    assert_eq!(
        Tensor::from_vec(vec![-1i64, 2], &[2]).unwrap().to_string(),
        "tensor([-1,  2])"
    );
    assert_eq!(
        Tensor::from_vec(vec![1i32, 20], &[2]).unwrap().to_string(),
        "tensor([ 1, 20], dtype=int32)"
    );
    assert_eq!(
        Tensor::from_vec(vec![0.5f64, -1.25], &[2])
            .unwrap()
            .to_string(),
        "tensor([ 0.5000, -1.2500], dtype=float64)"
    );
    assert_eq!(
        Tensor::from_vec(vec![0.5f32, 1.25], &[2])
            .unwrap()
            .to_string(),
        "tensor([0.5000, 1.2500])"
    );
    assert_eq!(Tensor::scalar(7i64).to_string(), "tensor(7)");
    assert_eq!(
        Tensor::from_vec(vec![true, false], &[2])
            .unwrap()
            .to_string(),
        "tensor([ True, False])"
    );
    assert_eq!(
        Tensor::zeros(&[0, 3], DType::F32).unwrap().to_string(),
        "tensor([], size=(0, 3))"
    );
    // A broadcast view prints its repeated values.
    assert_eq!(
        ar(2).broadcast_to(&[2, 2]).unwrap().to_string(),
        "tensor([[0, 1],\n        [0, 1]])"
    );
    // Long tensors are summarised.
    assert_eq!(
        ar(2000).to_string(),
        "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"
    );
}

/// The storage indices marked `^` under the storage row of `explain()`.
fn marked(text: &str) -> Vec<usize> {
    let line = |prefix: &str| -> Vec<char> {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} line in\n{text}"))
            .chars()
            .collect()
    };
    let index = line("  index ");
    let view = line("  view  ");
    let mut out = Vec::new();
    for (p, &c) in view.iter().enumerate() {
        if c == '^' {
            // The index printed right-aligned in the same column ends at `p`.
            let mut start = p;
            while start > 0 && index[start - 1].is_ascii_digit() {
                start -= 1;
            }
            let s: String = index[start..=p].iter().collect();
            out.push(
                s.parse()
                    .unwrap_or_else(|_| panic!("bad column {p} in\n{text}")),
            );
        }
    }
    out
}

#[test]
fn explain_shows_the_mapping() {
    let points = ar_shape(&[3, 3]);
    let p = points.index(&s![1..3, 1..3]).unwrap();
    let text = p.explain().unwrap();
    assert!(text.contains("shape [2, 2]"), "{text}");
    assert!(text.contains("strides [3, 1]"), "{text}");
    assert!(text.contains("offset 4"), "{text}");
    assert!(text.contains("contiguous: no"), "{text}");
    assert!(text.contains("storage[4 + 3·i0 + 1·i1]"), "{text}");
    assert_eq!(marked(&text), vec![4, 5, 7, 8], "{text}");
    assert!(text.contains("[[4, 5],\n   [7, 8]]"), "{text}");

    // A flipped view marks the same elements however it walks them.
    let f = points.flip(&[0, 1]).unwrap();
    let text = f.explain().unwrap();
    assert!(
        text.contains("strides [-3, -1]") && text.contains("offset 8"),
        "{text}"
    );
    assert_eq!(marked(&text), (0..9).collect::<Vec<_>>(), "{text}");
    assert!(text.contains("[[8, 7, 6],"), "{text}");

    // A column marks every third element.
    let c = points.select(1, 2).unwrap();
    let text = c.explain().unwrap();
    assert_eq!(marked(&text), vec![2, 5, 8], "{text}");
    assert!(text.contains("contiguous: no"), "{text}");
}

#[test]
fn data_ptr_moves_by_offset_times_itemsize() {
    for dtype in [DType::I64, DType::F32, DType::U8, DType::F16] {
        let x = Tensor::zeros(&[4, 6], dtype).unwrap();
        let base = x.data_ptr();
        let item = dtype.itemsize();
        let views = [
            x.select(0, 2).unwrap(),
            x.flip(&[0, 1]).unwrap(),
            x.index(&s![1..3, 2..;2]).unwrap(),
            x.t().unwrap(),
            x.diagonal(1, 0, 1).unwrap(),
        ];
        for v in views {
            assert_eq!(v.data_ptr() - base, v.offset() * item, "{v:?}");
        }
        assert_eq!(x.flip(&[0, 1]).unwrap().offset(), 23);
        assert_eq!(x.select(0, 2).unwrap().data_ptr() - base, 12 * item);
    }
}

#[test]
fn may_share_memory() {
    let x = ar(10);
    let a = x.slice(0, None, Some(5), 1).unwrap();
    let b = x.slice(0, Some(5), None, 1).unwrap();
    let c = x.slice(0, Some(4), Some(7), 1).unwrap();
    assert!(!a.may_share_memory(&b));
    assert!(a.may_share_memory(&c));
    assert!(b.may_share_memory(&c));
    assert!(x.may_share_memory(&x.flip(&[0]).unwrap()));
    // Interleaved views may share memory by their ranges (NumPy's answer too).
    let even = x.slice(0, None, None, 2).unwrap();
    let odd = x.slice(0, Some(1), None, 2).unwrap();
    assert!(even.may_share_memory(&odd));
    // Another storage, or an empty view, never does.
    assert!(!x.may_share_memory(&ar(10)));
    assert!(!x.may_share_memory(&x.narrow(0, 3, 0).unwrap()));
    assert!(a.same_storage(&b));
}

#[test]
fn display_of_empty_int_tensor_names_the_dtype() {
    assert_eq!(ar(0).to_string(), "tensor([], dtype=int64)");
    assert_eq!(
        Tensor::zeros(&[0, 3], DType::Bool).unwrap().to_string(),
        "tensor([], size=(0, 3), dtype=bool)"
    );
}
