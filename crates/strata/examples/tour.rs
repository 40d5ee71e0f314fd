//! A tour of strata's memory model: every tensor is a view (shape, signed strides,
//! offset) over a flat, shared storage. Each step prints the view with `explain()` (the
//! storage, with the elements the view touches marked `^`) and with `Display`, and asserts
//! the numbers it talks about, so the tour doubles as a check.
//!
//! Run it with `cargo run --release --example tour` (or `make tour`).

use strata::{s, DType, Error, Tensor};

/// Prints a numbered step heading and its explanation.
fn step(n: &mut usize, title: &str, text: &str) {
    *n += 1;
    println!("\n=== {n}. {title} ===");
    println!("{text}");
}

/// Prints a tensor's values and the picture of its view over the storage, including the
/// storage index of every view element.
fn show(label: &str, t: &Tensor) -> Result<(), Error> {
    println!("\n{label} =\n{t}");
    print!("{}", t.explain()?);
    Ok(())
}

/// As [`show`], without the per-element index grid (for views where it is obvious).
fn show_brief(label: &str, t: &Tensor) -> Result<(), Error> {
    println!("\n{label} =\n{t}");
    let text = t.explain()?;
    for line in text.lines().take_while(|l| !l.starts_with("storage index")) {
        println!("{line}");
    }
    Ok(())
}

fn main() -> Result<(), Error> {
    let mut n = 0;
    println!("strata tour: tensors are views over flat, shared, refcounted storage.");
    println!("`^` marks the storage elements a view touches; strides are in elements.");
    println!("Most storages below hold arange(n), so each value is also its storage index.");

    // ------------------------------------------------------------------ storage/strides
    step(
        &mut n,
        "Row-major storage and strides",
        "A (2,3) tensor is 6 elements in one flat storage; stepping one row skips 3\n\
         elements, one column skips 1, so its strides are (3,1).",
    );
    let a = Tensor::arange(0, 6, 1, DType::I64)?.view(&[2, 3])?;
    show_brief("a", &a)?;
    assert_eq!(a.strides(), &[3, 1]);
    assert_eq!(a.offset(), 0);
    assert!(a.is_contiguous());

    let b = Tensor::arange(0, 24, 1, DType::I64)?.view(&[1, 2, 3, 4])?;
    println!("\nIn a (1,2,3,4) tensor each stride is the product of the sizes after it:");
    show_brief("b", &b)?;
    assert_eq!(b.strides(), &[24, 12, 4, 1]);
    assert_eq!(b.get::<i64>(&[0, 1, 2, 3])?, 12 + 2 * 4 + 3);

    // ------------------------------------------------------------------ slicing
    step(
        &mut n,
        "Zero-copy slicing: x[1:2, 1:4]",
        "Slicing only moves the offset and keeps the strides: x[1:2, 1:4] of a (3,4)\n\
         tensor starts at element 1*4 + 1 = 5 of the same storage.",
    );
    let x = Tensor::arange(0, 12, 1, DType::I64)?.view(&[3, 4])?;
    show_brief("x", &x)?;
    let v = x.index(&s![1..2, 1..4])?;
    show_brief("x[1:2, 1:4]  (s![1..2, 1..4])", &v)?;
    assert_eq!(v.shape(), &[1, 3]);
    assert_eq!((v.offset(), v.strides()), (5, &[4, 1][..]));
    assert!(v.same_storage(&x));

    let points = Tensor::arange(0, 9, 1, DType::F32)?.view(&[3, 3])?;
    let sub = points.index(&s![1..3, 1..3])?;
    println!("\nA 2x2 block of a 3x3 tensor is a view with gaps between its rows;");
    println!("the grid at the end gives the storage index behind each view element:");
    show("points[1:3, 1:3]", &sub)?;
    assert_eq!((sub.offset(), sub.strides()), (4, &[3, 1][..]));
    assert!(!sub.is_contiguous());
    assert!(sub.same_storage(&points));

    // ------------------------------------------------------------------ broadcasting
    step(
        &mut n,
        "Broadcasting with stride 0",
        "Expanding arange(4) to (2,3,4) allocates nothing: the new dims get stride 0,\n\
         so all 24 view elements read the same 4 storage elements.",
    );
    let r = Tensor::arange(0, 4, 1, DType::I64)?;
    let bc = r.broadcast_to(&[2, 3, 4])?;
    show_brief("arange(4).broadcast_to((2,3,4))", &bc)?;
    println!(
        "{} view elements over {} storage elements; same storage as arange(4): {}",
        bc.numel(),
        bc.storage().nbytes() / 8,
        bc.same_storage(&r)
    );
    assert_eq!(bc.strides(), &[0, 0, 1]);
    assert!(bc.same_storage(&r));

    // ------------------------------------------------------------------ transpose
    step(
        &mut n,
        "Transpose and permute swap strides",
        "transpose(0,1) swaps the shape and the strides; the storage, the offset and so\n\
         the data pointer stay the same. permute reorders any number of dims.",
    );
    let at = a.transpose(0, 1)?;
    show_brief("a.transpose(0, 1)", &at)?;
    assert_eq!(at.strides(), &[1, 3]);
    assert!(at.same_storage(&a));
    assert_eq!(at.data_ptr(), a.data_ptr());
    assert!(!at.is_contiguous());
    println!(
        "same storage as a: {}; data_ptr {:#x} == {:#x}",
        at.same_storage(&a),
        at.data_ptr(),
        a.data_ptr()
    );
    let p = Tensor::arange(0, 24, 1, DType::I64)?
        .view(&[2, 3, 4])?
        .permute(&[2, 0, 1])?;
    println!(
        "\n(2,3,4).permute([2,0,1]): shape {:?}  strides {:?}  (was (12,4,1))",
        p.shape(),
        p.strides()
    );
    assert_eq!(p.strides(), &[1, 12, 4]);

    // ------------------------------------------------------------------ flips
    step(
        &mut n,
        "Flips are negative strides (zero-copy)",
        "flip(0) starts at the last row (offset 8) and walks rows backwards (stride -4);\n\
         flip(1) starts at the end of row 0 (offset 3) with stride -1. No data moves.",
    );
    let f0 = x.flip(&[0])?;
    show("x.flip(0)", &f0)?;
    assert_eq!((f0.offset(), f0.strides()), (8, &[-4, 1][..]));
    assert!(f0.same_storage(&x));
    let f1 = x.flip(&[1])?;
    show_brief("x.flip(1)", &f1)?;
    assert_eq!((f1.offset(), f1.strides()), (3, &[4, -1][..]));
    assert!(f1.same_storage(&x));

    let rev = x.slice(0, None, None, -1)?;
    let rev2 = x.index(&s![..;-1])?;
    println!(
        "\nx[::-1] (slice with step -1, or s![..;-1]) is the same view as flip(0): \
         offset {} strides {:?}",
        rev.offset(),
        rev.strides()
    );
    assert_eq!(rev.layout(), f0.layout());
    assert_eq!(rev2.layout(), f0.layout());
    let every_other = x.index(&s![.., ..;-2])?;
    println!("x[:, ::-2] =\n{every_other}");
    assert_eq!(
        (every_other.offset(), every_other.strides()),
        (3, &[4, -2][..])
    );

    // ------------------------------------------------------------------ view vs reshape
    step(
        &mut n,
        "view vs reshape",
        "view only re-labels the same storage, so it fails when the strides cannot\n\
         express the new shape; reshape then falls back to a contiguous copy.",
    );
    let xt = x.t()?;
    let err = xt.view(&[12]).unwrap_err();
    println!("\nx.t().view([12]) fails:\n  {err}");
    assert!(matches!(err, Error::ViewIncompatible { .. }));
    assert!(err.to_string().contains("Use .reshape(...) instead."));
    let flat = xt.reshape(&[12])?;
    println!(
        "x.t().reshape([12]) copies (same storage as x: {}):\n{flat}",
        flat.same_storage(&x)
    );
    assert!(!flat.same_storage(&x));
    assert!(flat.is_contiguous());
    let flat_view = x.reshape(&[12])?;
    println!(
        "x.reshape([12]) on contiguous x is a view (same storage as x: {}):\n{flat_view}",
        flat_view.same_storage(&x)
    );
    assert!(flat_view.same_storage(&x));
    assert_eq!(flat_view.data_ptr(), x.data_ptr());

    // ------------------------------------------------------------------ contiguous
    step(
        &mut n,
        "contiguous()",
        "contiguous() on a non-contiguous view copies into fresh, compact row-major\n\
         storage; on a contiguous tensor it returns the same storage, no copy.",
    );
    let c = xt.contiguous()?;
    show_brief("x.t().contiguous()", &c)?;
    println!("same storage as x: {}", c.same_storage(&x));
    assert!(!c.same_storage(&x));
    assert_eq!((c.offset(), c.strides()), (0, &[3, 1][..]));
    assert_eq!(c.to_vec::<i64>()?, xt.to_vec::<i64>()?);
    let same = x.contiguous()?;
    assert!(same.same_storage(&x));
    assert_eq!(same.data_ptr(), x.data_ptr());
    println!("x.contiguous() is x itself: same storage, same data_ptr.");

    // ------------------------------------------------------------------ shared writes
    step(
        &mut n,
        "Writes show through every view; one version counter",
        "Views share their storage, so zeroing through one view is visible through\n\
         another. Every in-place write bumps a version counter shared by all views.",
    );
    let points = Tensor::from_vec(vec![4.0f32, 1.0, 5.0, 3.0, 2.0, 1.0], &[3, 2])?;
    let points_t = points.transpose(0, 1)?;
    println!("\npoints =\n{points}\npoints.transpose(0, 1) =\n{points_t}");
    let v0 = points_t.version();
    points.index(&s![0, ..])?.fill_(9.0)?;
    println!("after points[0, :].fill_(9):\npoints_t =\n{points_t}");
    assert_eq!(points_t.get::<f32>(&[1, 0])?, 9.0);
    points.zero_()?;
    println!("after points.zero_():\npoints_t =\n{points_t}");
    assert_eq!(points_t.to_vec::<f32>()?, vec![0.0; 6]);
    println!(
        "version: {v0} before, {} after two writes (read through points_t)",
        points_t.version()
    );
    assert_eq!(points_t.version(), v0 + 2);
    assert_eq!(points.version(), points_t.version());

    // ------------------------------------------------------------------ more views
    step(
        &mut n,
        "unfold, diagonal and as_strided",
        "unfold makes overlapping sliding windows, diagonal walks with stride s0+s1,\n\
         and as_strided takes any (bounds-checked) strides, negative ones included.",
    );
    let ten = Tensor::arange(0, 10, 1, DType::I64)?;
    let win = ten.unfold(0, 3, 2)?;
    show_brief("arange(10).unfold(0, 3, 2)", &win)?;
    assert_eq!((win.shape(), win.strides()), (&[4, 3][..], &[2, 1][..]));
    let werr = win.zero_().unwrap_err();
    println!("Windows overlap, so writing through them is an error, not corruption:\n  {werr}");
    assert!(matches!(werr, Error::SelfOverlap { .. }));

    let sq = Tensor::arange(0, 9, 1, DType::I64)?.view(&[3, 3])?;
    let anti = sq.flip(&[1])?.diagonal(0, 0, 1)?;
    show_brief("sq.flip(1).diagonal()  (the anti-diagonal)", &anti)?;
    assert_eq!((anti.offset(), anti.strides()), (2, &[2][..]));
    assert_eq!(anti.to_vec::<i64>()?, vec![2, 4, 6]);

    let back = ten.as_strided(&[2, 3], &[-3, -1], Some(8))?;
    show("arange(10).as_strided((2,3), (-3,-1), offset 8)", &back)?;
    assert_eq!(back.to_vec::<i64>()?, vec![8, 7, 6, 5, 4, 3]);
    let oob = ten.as_strided(&[3], &[-4], Some(7)).unwrap_err();
    println!("A view reaching before element 0 is refused at construction:\n  {oob}");
    assert!(matches!(oob, Error::Shape { .. }));
    let oob = ten.as_strided(&[3], &[4], Some(3)).unwrap_err();
    println!("So is one reaching past the end:\n  {oob}");
    assert!(matches!(oob, Error::OutOfBounds { .. }));

    println!("\nAll {n} steps checked.");
    Ok(())
}
