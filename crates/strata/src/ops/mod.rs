//! The op layer: what each op means (argument checks, dtype rules, output shape and
//! allocation), device-independent; loops run behind `backend/`.

pub(crate) mod reduce;
