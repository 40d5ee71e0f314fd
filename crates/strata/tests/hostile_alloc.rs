//! Allocations sized by a user must fail with a `Resource` error, never abort the
//! process; printing must read only the elements it shows (PyTorch's summarised text).
//!
//! Sizes here are past 2^47 bytes, beyond any x86-64/aarch64 user address space, so the
//! system refuses them whatever its overcommit policy.

use strata::{try_vec, DType, ErrorKind, Tensor};

/// 2^46 elements: 2^49 bytes as f64, 2^46 as u8 (still refused: address space is 2^47).
const HUGE: i64 = 1 << 46;

fn huge_view(dtype: DType) -> Tensor {
    Tensor::zeros(&[1], dtype).unwrap().expand(&[HUGE]).unwrap()
}

#[test]
fn huge_allocations_are_resource_errors() {
    for r in [
        Tensor::zeros(&[1 << 46], DType::F64),
        Tensor::empty(&[1 << 46], DType::F64),
        Tensor::full(&[1 << 46], 1.0, DType::F64),
        huge_view(DType::F64).contiguous(),
        huge_view(DType::F64).clone_data(),
        huge_view(DType::F64).to_dtype(DType::F32),
    ] {
        let e = r.expect_err("a 2^49-byte allocation succeeded");
        assert_eq!(e.kind(), ErrorKind::Resource, "{e}");
    }
}

#[test]
fn to_vec_of_a_huge_view_is_a_resource_error() {
    let e = huge_view(DType::U8).to_vec::<u8>().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Resource, "{e}");
    assert!(e.to_string().contains("to_vec"), "{e}");
    let e = try_vec::<u64>("op", usize::MAX / 2).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Resource);
    assert_eq!(try_vec::<u64>("op", 3).unwrap().capacity(), 3);
}

#[test]
fn printing_a_huge_view_reads_only_what_it_shows() {
    assert_eq!(
        huge_view(DType::F32).to_string(),
        "tensor([0., 0., 0.,  ..., 0., 0., 0.])"
    );
    let t = Tensor::zeros(&[1, 1], DType::I64)
        .unwrap()
        .expand(&[1 << 30, 1 << 30])
        .unwrap();
    let row = "[0, 0, 0,  ..., 0, 0, 0]";
    let expect = format!(
        "tensor([{row},\n        {row},\n        {row},\n        ...,\n        {row},\n        {row},\n        {row}])"
    );
    assert_eq!(t.to_string(), expect);
    // Many dims of an expanded view: 6^22 shown elements cannot be printed; the text is
    // short and names the size.
    let many = Tensor::zeros(&[1; 22], DType::F32)
        .unwrap()
        .expand(&[7; 22])
        .unwrap();
    let s = many.to_string();
    assert!(s.starts_with("tensor([...],\n       size=(7, 7, "), "{s}");
    assert!(s.len() < 200, "{s}");
    // explain() draws a window of the storage, not the view.
    let e = huge_view(DType::F32).explain().unwrap();
    assert!(e.len() < 2000, "{e}");
}

#[test]
fn summary_matches_pytorch() {
    // torch.arange(10000).reshape(100, 100)
    let t = Tensor::arange(0, 10000, 1, DType::I64)
        .unwrap()
        .view(&[100, 100])
        .unwrap();
    assert_eq!(
        t.to_string(),
        "tensor([[   0,    1,    2,  ...,   97,   98,   99],
        [ 100,  101,  102,  ...,  197,  198,  199],
        [ 200,  201,  202,  ...,  297,  298,  299],
        ...,
        [9700, 9701, 9702,  ..., 9797, 9798, 9799],
        [9800, 9801, 9802,  ..., 9897, 9898, 9899],
        [9900, 9901, 9902,  ..., 9997, 9998, 9999]])"
    );
    // The width and notation come from the shown elements only: a large value in the
    // hidden middle changes nothing (t = torch.zeros(2000); t[1000] = 123456.5).
    let mut v = vec![0f32; 2000];
    v[1000] = 123456.5;
    let t = Tensor::from_vec(v, &[2000]).unwrap();
    assert_eq!(t.to_string(), "tensor([0., 0., 0.,  ..., 0., 0., 0.])");
    // torch.arange(1001.) * 0.5: fixed notation, width from 0, 0.5, 1, 499, 499.5, 500.
    let t = Tensor::arange(0, 1001, 1, DType::F64).unwrap();
    let half = Tensor::full(&[1001], 0.5, DType::F64).unwrap();
    let t = t.mul(&half).unwrap();
    assert_eq!(
        t.to_string(),
        "tensor([  0.0000,   0.5000,   1.0000,  ..., 499.0000, 499.5000, 500.0000],\n       dtype=float64)"
    );
}

#[test]
fn pieces_counted_by_the_user_are_allocated_fallibly() {
    let v = huge_view(DType::F32);
    for r in [
        v.unbind(0),
        v.split(1, 0),
        v.chunk(1 << 46, 0),
        Tensor::zeros(&[0], DType::F32).unwrap().chunk(1 << 46, 0),
    ] {
        let e = r.expect_err("2^46 pieces were allocated");
        assert_eq!(e.kind(), ErrorKind::Resource, "{e}");
    }
    // Ordinary counts still work.
    let t = Tensor::arange(0, 10, 1, DType::I64).unwrap();
    assert_eq!(t.split(3, 0).unwrap().len(), 4);
    assert_eq!(t.unbind(0).unwrap().len(), 10);
    assert_eq!(
        Tensor::zeros(&[0], DType::F32)
            .unwrap()
            .chunk(3, 0)
            .unwrap()
            .len(),
        3
    );
}
