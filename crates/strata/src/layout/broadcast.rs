//! Broadcasting of shapes (NumPy/PyTorch rules: align trailing dims; a size-1 dim
//! stretches).

use super::Shape;
use crate::error::{Error, Result};

/// The broadcast shape of `a` and `b`.
///
/// # Errors
/// [`Error::Broadcast`] with PyTorch's text when two sizes differ and neither is 1.
pub fn broadcast_shapes(op: &'static str, a: &[usize], b: &[usize]) -> Result<Shape> {
    let n = a.len().max(b.len());
    let mut out = Shape::from_elem(0, n);
    for i in 0..n {
        let da = (i + a.len()).checked_sub(n).map(|k| a[k]).unwrap_or(1);
        let db = (i + b.len()).checked_sub(n).map(|k| b[k]).unwrap_or(1);
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(Error::Broadcast {
                op,
                a: da,
                b: db,
                dim: i,
            });
        };
    }
    Ok(out)
}

/// The broadcast shape of all of `shapes`.
pub fn broadcast_all(op: &'static str, shapes: &[&[usize]]) -> Result<Shape> {
    // Equal shapes, apart from 0-d ones (scalars), which broadcast to anything: the
    // common case, without building the result dim by dim.
    let mut dims = shapes.iter().filter(|s| !s.is_empty());
    match dims.next() {
        None => return Ok(Shape::new()),
        Some(first) if dims.all(|s| s == first) => return Ok(Shape::from(*first)),
        Some(_) => {}
    }
    let mut out = Shape::new();
    for s in shapes {
        out = broadcast_shapes(op, &out, s)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules() {
        assert_eq!(
            broadcast_shapes("add", &[8, 1, 6, 1], &[7, 1, 5])
                .unwrap()
                .as_slice(),
            &[8, 7, 6, 5]
        );
        assert_eq!(broadcast_shapes("add", &[], &[3]).unwrap().as_slice(), &[3]);
        assert_eq!(
            broadcast_shapes("add", &[0], &[1]).unwrap().as_slice(),
            &[0]
        );
        assert_eq!(
            broadcast_shapes("add", &[2, 3], &[2, 4]).unwrap_err().to_string(),
            "add: The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"
        );
        assert_eq!(
            broadcast_all("where", &[&[3, 1], &[1, 4], &[2, 1, 1]])
                .unwrap()
                .as_slice(),
            &[2, 3, 4]
        );
    }
}
