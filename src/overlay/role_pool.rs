//! CPU pools kept to one role each: their nodes carry `<key>=true` as a label and as a
//! `NO_SCHEDULE` taint, so only the pods that select and tolerate the key run there.

use crate::gcp::spec::NodePoolSpec;
use crate::gcp::{AccountHandle, ClusterHandle, CpuPoolDefaults, Gcp, TaintSpec};
use crate::plan::Planner;

/// Plans the pool `spec` with `defaults`, labelled and tainted `key=true` (whatever labels
/// and taints `defaults` has are replaced).
pub fn role_pool(
    (gcp, planner): (&mut Gcp, &mut Planner<'_>),
    (cluster, nodes): (&ClusterHandle, &AccountHandle),
    spec: &NodePoolSpec,
    key: &str,
    defaults: CpuPoolDefaults<'_>,
) {
    let labels = [(key, "true")];
    let taints = [TaintSpec { key, value: "true" }];
    let defaults = CpuPoolDefaults {
        labels: &labels,
        taints: &taints,
        ..defaults
    };
    gcp.cpu_pool(planner, cluster, spec, defaults, nodes);
}
