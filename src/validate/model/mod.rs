//! What validation reads out of objects: pod templates and their pods.

pub(crate) mod workload;
