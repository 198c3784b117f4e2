//! The rule families.

pub(crate) mod cross;
pub(crate) mod gpu;
pub(crate) mod kueue;
pub(crate) mod nodepool;
pub(crate) mod shared;
pub(crate) mod tpu;
