//! `kubectl aiml`: compile AI/ML blueprints for GKE into validated Kustomize overlays.
//!
//! The pipeline, one module per stage:
//!
//! 1. [`repo`] finds blueprint files; [`yaml`] parses each file once into spanned [`yaml::Node`]s.
//! 2. [`blueprint`] checks each document's envelope and finds its kind in the
//!    [`kinds::Registry`]; the kind reads its `spec` strictly ([`blueprint::de`]).
//! 3. [`plan`]: each kind plans its blueprint (phase 2, after every blueprint's exports are
//!    known): [`gcp`] plans the shared GCP building blocks, [`accelerator`] resolves the
//!    `tpu`/`gpu` stanzas through [`catalog`], and the kind plans its workloads.
//! 4. [`overlay`] renders the plan into one Kustomize overlay per target cluster, in memory
//!    (embedded minijinja templates, every interpolation JSON-escaped).
//! 5. [`kustomize`] builds each overlay folder with the real kustomize.
//! 6. [`manifest`] splits the output into objects; [`validate`] runs every rule on them.
//! 7. [`render`] writes `overlays/` and `rendered/` atomically, or compares them (`--check`),
//!    with the GitOps wiring [`sync`] derives from the [`settings`] (`aiml.yaml`).
//! 8. [`gitops`] commits what was written (`render --commit`) and compares the rendered objects
//!    of two revisions (`diff`) with their impact: destructive changes, accelerators, cost.
//!
//! 9. [`graph`] draws the rendered objects and their references (`graph`).
//!
//! [`diagnostic`] holds the findings every stage reports.

pub mod accelerator;
pub mod blueprint;
pub mod cache;
pub mod catalog;
pub mod diagnostic;
pub mod gcp;
pub mod gitops;
pub mod graph;
pub mod input;
pub mod jsonnet;
pub mod kinds;
pub mod kustomize;
pub mod limits;
pub mod live;
pub mod manifest;
pub mod names;
pub mod overlay;
pub mod plan;
pub mod render;
pub mod repo;
pub mod rules;
pub mod schema;
pub mod secrets;
pub mod settings;
pub mod sync;
pub mod validate;
pub mod workspace;
pub mod yaml;
