//! `kubectl aiml`: compile AI/ML blueprints for GKE into validated Kustomize overlays.
//!
//! The pipeline, one module per stage:
//!
//! 1. [`repo`] finds blueprint files; [`yaml`] parses each file once into spanned [`yaml::Node`]s.
//! 2. [`blueprint`] reads a node into a typed spec (strict: unknown fields and wrong types are
//!    errors with file, line and the closest valid field) and checks it into a plan.
//! 3. [`overlay`] turns the plan into a Kustomize overlay in memory (embedded minijinja
//!    templates, every interpolation JSON-escaped).
//! 4. [`kustomize`] builds the overlay with the real kustomize, once per blueprint.
//! 5. [`manifest`] splits the output into objects; [`validate`] runs every rule on them.
//! 6. [`render`] writes `overlays/` and `rendered/` atomically, or compares them (`--check`).
//!
//! [`catalog`] holds the accelerator facts every stage shares; [`diagnostic`] the findings.

pub mod blueprint;
pub mod catalog;
pub mod diagnostic;
pub mod kustomize;
pub mod manifest;
pub mod overlay;
pub mod render;
pub mod repo;
pub mod schema;
pub mod validate;
pub mod yaml;
