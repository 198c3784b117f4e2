//! The rule families, one module each: `tpu` and `gpu` (pods' selectors and requests),
//! `jobset` (multislice JobSets), `placement` (each multi-host TPU slice on a slice of its own),
//! `nodepool` (Config Connector node pools), `cross` (workloads against node pools), `fit`
//! (pods against the allocatable capacity of their nodes), `zone` (accelerators where
//! they are offered), `driver` (GPU images' CUDA against the nodes' driver), `kueue`
//! (queues, flavors and quota), `autoscaling` (HorizontalPodAutoscalers), `network`
//! (pods no NetworkPolicy selects), `gateway` (public gateways without authentication), `secrets`
//! (credentials written into any object), `security` (host access, security contexts, unpinned
//! images, public Services, project-wide IAM grants), `resources` (container requests and limits
//! as the API server validates them), `apiserver` (the rest of the API server's Go validation
//! of the built-in kinds: selectors, restart policies, names, Service ports, autoscaler
//! metrics, NetworkPolicy peers, RBAC rules, disruption budgets, priorities) and `computeclass`
//! (the accelerators of GKE ComputeClass priorities); plus `shared`, the finding builders
//! several families use.
//!
//! Each family reads the models of [`crate::validate::model`], `shared`, the catalog and
//! diagnostics, and nothing else: no family imports another, so that a defect has one owner
//! and a family can change without the others. Rule ids and the rule listing are in
//! [`crate::validate`]; the order families run in does not matter, as findings are sorted.

pub(crate) mod apiserver;
pub(crate) mod autoscaling;
pub(crate) mod computeclass;
pub(crate) mod cross;
pub(crate) mod driver;
pub(crate) mod fit;
pub(crate) mod gateway;
pub(crate) mod gpu;
pub(crate) mod jobset;
pub(crate) mod kueue;
pub(crate) mod network;
pub(crate) mod nodepool;
pub(crate) mod placement;
pub(crate) mod resources;
pub(crate) mod secrets;
pub(crate) mod security;
pub(crate) mod shared;
pub(crate) mod tpu;
pub(crate) mod zone;
