//! The render pipeline: blueprints → plans → overlays → kustomize → validated objects → disk.
//!
//! 1. Every blueprint's spec is read (phase 1) and what it exports is collected, so that
//!    blueprints can reference each other by name.
//! 2. The selected blueprints are planned and compiled in parallel (phase 2), each into a
//!    staging folder: its overlay (one folder per target cluster) is written there, each target
//!    is built once with kustomize, split into objects, validated, and the objects written
//!    beside it.
//! 3. Repository-wide checks run on the result (two blueprints rendering the same object).
//!
//! Nothing under `overlays/` or `rendered/` changes until every blueprint has succeeded; then
//! each changed blueprint folder is swapped in with a rename, and the swaps are rolled back if
//! one fails. `--check` builds the same staging tree and only compares.

mod collisions;
mod one;
pub mod waves;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rayon::prelude::*;

use crate::blueprint::Blueprint;
use crate::cache::{self, Cache};
use crate::diagnostic::{self, Diagnostic, ObjectRef};
use crate::input;
use crate::kinds::{self, Kind, Registry, Spec};
use crate::kustomize::{Kustomize, KustomizeError};
use crate::manifest;
use crate::overlay::TemplateError;
use crate::plan::Repository;
use crate::repo::{self, RENDERED_DIR};
use crate::schema::{CheckOptions, Schemas};
use crate::sync;
use crate::workspace;

use collisions::{collisions, rendered_elsewhere};
pub use one::{CompiledBlueprint, compile};
use one::{build_one, unsuppressible, without_output};

/// Environment variable that makes a render stage every blueprint it builds (`all`), even those
/// whose folders already hold their output: the slow path that the skipped staging must equal
/// (the fast-path tests compare the two).
pub const STAGING_VAR: &str = "AIML_STAGING";

/// Whether `AIML_STAGING=all` asks for every built blueprint to be staged.
fn stage_all() -> bool {
    std::env::var(STAGING_VAR).is_ok_and(|v| v.eq_ignore_ascii_case("all"))
}

/// How rendered objects are checked: against which schemas, how strictly.
#[derive(Clone, Copy)]
pub struct Checks<'s> {
    /// Schemas of the kinds (embedded, plus `--schemas` folders).
    pub schemas: &'s Schemas,
    /// Schema options (`--strict`: unknown kinds are errors).
    pub options: CheckOptions,
    /// What the rules are asked beyond their defaults (`--require-digests`, `aiml.yaml`).
    pub policy: crate::validate::Policy,
    /// Whether the command line chose the schemas' Kubernetes minor (`--kubernetes-version`,
    /// or `--schemas` folders, which are read for one minor): then `aiml.yaml`'s
    /// `kubernetes.version` does not.
    pub version_pinned: bool,
}

impl<'s> Checks<'s> {
    /// These checks under the repository's settings: its `images.requireDigests` joins the
    /// command line's `--require-digests`, and its `kubernetes.version` chooses the built-in
    /// kinds unless the command line chose them.
    #[must_use]
    pub fn with_settings(self, settings: &crate::settings::Settings) -> Checks<'s> {
        let mut checks = self;
        checks.policy.require_digests |= settings.images.require_digests;
        if !checks.version_pinned
            && let Some(version) = &settings.kubernetes_version
            // The settings' reader refused any other version: this is always `Ok`.
            && let Ok(schemas) = Schemas::embedded_for(version)
        {
            checks.schemas = schemas;
        }
        checks
    }
}

impl Default for Checks<'static> {
    fn default() -> Self {
        Self {
            schemas: Schemas::embedded(),
            options: CheckOptions::default(),
            policy: crate::validate::Policy::default(),
            version_pinned: false,
        }
    }
}

/// What a build does with the objects it renders.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// Stages them (and the overlays) for the swap or the comparison, unless the repository
    /// already holds exactly them: `render`, `render --check`, `diff --render`.
    Stage,
    /// Judges them only: `validate`, which needs the findings and nothing on disk. Writing
    /// (or comparing) hundreds of thousands of files a fleet renders only to delete them
    /// cost it more than a render; the overlays are still written, for kustomize to read.
    FindingsOnly,
}

/// Reports how far phase 2 is: the CLI draws a progress bar for fleets on a terminal.
pub trait Progress: Sync {
    /// Phase 2 starts on `total` blueprints.
    fn start(&self, _total: usize) {}
    /// One blueprint is done (from its cache or built).
    fn advance(&self) {}
    /// Phase 2 is over, successfully or not.
    fn finish(&self) {}
}

/// No progress reporting.
impl Progress for () {}

/// An operation that could not be done (exit code 2), as opposed to findings.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// File system trouble.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// Kustomize missing or failing; the overlay path is in the message.
    #[error(transparent)]
    Kustomize(#[from] KustomizeError),
    /// A template of this binary, or of a repository kind, failed. (Not a `#[source]`: the
    /// message already holds it, and error chains would print it twice.)
    #[error("blueprint `{blueprint}`: {error}")]
    Template {
        /// The blueprint.
        blueprint: String,
        /// Why.
        error: TemplateError,
    },
    /// The Argo CD sync waves of a blueprint's overlay could not be written.
    #[error("blueprint `{blueprint}`: {error}")]
    Waves {
        /// The blueprint.
        blueprint: String,
        /// Why.
        error: waves::WaveError,
    },
    /// Kustomize output could not be split into objects.
    #[error("blueprint `{blueprint}`: {source}")]
    Split {
        /// The blueprint.
        blueprint: String,
        /// Why.
        #[source]
        source: manifest::SplitError,
    },
    /// An overlay target built objects that belong to the other target cluster.
    #[error(
        "blueprint `{blueprint}`: `{target}` built `{object}`, which belongs to the {expected} target"
    )]
    WrongTarget {
        /// The blueprint.
        blueprint: String,
        /// The overlay folder.
        target: String,
        /// The object.
        object: String,
        /// Where it belongs.
        expected: String,
    },
    /// An overlay folder built to no object: writing it would delete all of its output.
    #[error("blueprint `{blueprint}`: `{target}` builds to no object; nothing was written")]
    Empty {
        /// The blueprint.
        blueprint: String,
        /// The overlay folder.
        target: String,
    },
    /// A blueprint produced no object and no error says why: writing would remove its output.
    #[error(
        "blueprint `{blueprint}` rendered no object and no finding says why; nothing was written (its output is kept: a blueprint is removed only by deleting it from `blueprints/`)"
    )]
    NoOutput {
        /// The blueprint.
        blueprint: String,
    },
    /// The sync wiring could not be rendered (a bug in this binary).
    #[error(transparent)]
    Sync(#[from] sync::SyncError),
    /// Names given on the command line that are not blueprints.
    #[error("no blueprint named {}", .0.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "))]
    UnknownNames(Vec<String>),
}

/// What one blueprint produced in the staging folder.
#[derive(Debug)]
pub struct BlueprintResult {
    /// `metadata.name`.
    pub name: String,
    /// Findings (blueprint checks and rules on the rendered objects).
    pub diagnostics: Vec<Diagnostic>,
    /// Identities of the rendered objects, sorted.
    pub objects: Vec<ObjectRef>,
    /// Findings dropped because the blueprint turns their rule off (`aiml.dev/ignore`).
    pub suppressed: usize,
    /// One-line description.
    pub description: String,
    /// Objects per target folder: the blueprint's sync roots.
    pub roots: sync::Roots,
    /// Reused from the cache: its folders already hold this output and were not staged.
    pub cached: bool,
    /// Built, but its folders already held exactly this output: nothing staged for them.
    pub current: bool,
    /// What the render read, for the cache to record once the output is on disk.
    pub record: Option<cache::Record>,
}

impl BlueprintResult {
    /// The part of the result the cache keeps.
    #[must_use]
    pub fn cached_result(&self) -> cache::CachedResult {
        cache::CachedResult {
            diagnostics: self.diagnostics.clone(),
            objects: self.objects.clone(),
            suppressed: self.suppressed,
            description: self.description.clone(),
            roots: self.roots.clone(),
        }
    }
}

/// Everything a render (or check, or validate) found.
#[derive(Debug, Default)]
pub struct Report {
    /// Per blueprint, in name order.
    pub blueprints: Vec<BlueprintResult>,
    /// Loading problems and every blueprint's findings, sorted.
    pub diagnostics: Vec<Diagnostic>,
    /// Whether the repository has sync wiring (`rendered/_sync/`).
    pub sync: bool,
    /// Whether `rendered/_sync/` already holds what this render would write (not staged).
    pub sync_current: bool,
}

impl Report {
    /// Findings the blueprints turned off with `aiml.dev/ignore`.
    #[must_use]
    pub fn suppressed(&self) -> usize {
        self.blueprints.iter().map(|b| b.suppressed).sum()
    }

    /// Whether any finding is an error.
    #[must_use]
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// Whether any error means the input itself is malformed (exit 2).
    #[must_use]
    pub fn has_input_errors(&self) -> bool {
        self.diagnostics.iter().any(crate::rules::is_input_error)
    }

    /// The folders under `overlays/` and `rendered/` this render staged: every rendered
    /// blueprint's that the cache did not vouch for, and the sync wiring's.
    #[must_use]
    pub fn folders(&self) -> Vec<String> {
        let mut folders: Vec<String> = self
            .blueprints
            .iter()
            .filter(|b| !b.cached && !b.current)
            .map(|b| b.name.clone())
            .collect();
        if self.sync && !self.sync_current {
            folders.push(sync::SYNC_DIR.to_string());
        }
        folders
    }

    /// Blueprints whose folders the cache vouched for: left alone, never compared.
    #[must_use]
    pub fn unchanged(&self) -> BTreeSet<String> {
        self.blueprints
            .iter()
            .filter(|b| b.cached || b.current)
            .map(|b| b.name.clone())
            .chain(self.sync_current.then(|| sync::SYNC_DIR.to_string()))
            .collect()
    }

    /// Objects rendered over all blueprints.
    #[must_use]
    pub fn object_count(&self) -> usize {
        self.blueprints.iter().map(|b| b.objects.len()).sum()
    }
}

/// A blueprint whose spec was read (phase 1).
struct Read<'a> {
    blueprint: Blueprint<'a>,
    kind: &'a dyn Kind,
    spec: Box<dyn Spec>,
}

/// Compiles, builds and validates the selected blueprints into `staging` (which receives
/// `overlays/<name>/` and `rendered/<name>/`). `names` empty means all. `root` is the
/// repository, read for the rendered objects of blueprints not selected.
#[allow(
    clippy::too_many_arguments,
    reason = "the pipeline's inputs, each used once"
)]
pub fn build(
    loaded: &input::Loaded,
    registry: &Registry,
    names: &[String],
    kustomize: &Kustomize,
    checks: Checks<'_>,
    cache: Option<&Cache>,
    root: &Path,
    staging: &Path,
    output: Output,
    progress: &dyn Progress,
) -> Result<Report, RenderError> {
    // The repository's `images.requireDigests` joins the command line's `--require-digests`.
    let checks = checks.with_settings(&loaded.settings);
    let mut report = Report {
        blueprints: Vec::new(),
        diagnostics: loaded.diagnostics.clone(),
        sync: false,
        sync_current: false,
    };
    let all = unique_blueprints(loaded, registry);
    if !names.is_empty() {
        let unknown: Vec<String> = names
            .iter()
            .filter(|n| !all.iter().any(|b| b.name == n.as_str()))
            .cloned()
            .collect();
        // A name may be missing only because its file did not load; those diagnostics say why.
        if !unknown.is_empty() && loaded.diagnostics.is_empty() {
            return Err(RenderError::UnknownNames(unknown));
        }
    }

    let (read, repository) = read_all(all, registry, &mut report.diagnostics);
    let stage_all = stage_all();

    // Phase 2: plan, compile, build and validate the selected blueprints in parallel.
    let selected = selected(&read, names);
    progress.start(selected.len());
    let results: Vec<Result<BlueprintResult, RenderError>> = selected
        .par_iter()
        .map(|r| {
            let key = cache.map(|cache| {
                cache.key(&cache::Inputs {
                    name: r.blueprint.name,
                    file: r.blueprint.file,
                    text: r.blueprint.source,
                    kind: r.kind.fingerprint(),
                })
            });
            if let (Some(cache), Some(key)) = (cache, &key)
                && let Some(hit) = cache.lookup(root, r.blueprint.name, key, &repository)
            {
                return Ok(BlueprintResult {
                    name: r.blueprint.name.to_string(),
                    diagnostics: hit.diagnostics,
                    objects: hit.objects,
                    suppressed: hit.suppressed,
                    description: hit.description,
                    roots: hit.roots,
                    cached: true,
                    current: false,
                    record: None,
                });
            }
            let (mut result, lookups) = build_one(
                r,
                &repository,
                &loaded.settings,
                kustomize,
                checks,
                root,
                staging,
                output,
                stage_all,
            )?;
            if let (Some(cache), Some(key)) = (cache, key) {
                result.record = Some(cache.record(key, &lookups, &repository));
            }
            Ok(result)
        })
        .inspect(|_| progress.advance())
        .collect();
    progress.finish();
    for result in results {
        let result = result?;
        if let Some(error) = without_output(&result) {
            return Err(error);
        }
        report
            .diagnostics
            .extend(result.diagnostics.iter().cloned());
        report.blueprints.push(result);
    }
    report.blueprints.sort_by(|a, b| a.name.cmp(&b.name));

    let others = if names.is_empty() {
        BTreeMap::new()
    } else {
        rendered_elsewhere(root, &report.blueprints, &repository)?
    };
    report
        .diagnostics
        .extend(collisions(&report.blueprints, &others, &read, &repository));
    (report.sync, report.sync_current) = stage_sync(
        loaded,
        &repository,
        &report.blueprints,
        root,
        staging,
        output,
        stage_all,
    )?;
    diagnostic::sort(&mut report.diagnostics);
    Ok(report)
}

/// Stages `rendered/_sync/` for every blueprint of the repository: those rendered now, and
/// the others as their folders under `rendered/` hold them. Returns whether anything is wired,
/// and whether `rendered/_sync/` already holds it (then nothing is staged: for a fleet, writing
/// thousands of unchanged sync objects would cost a no-op render most of its time).
fn stage_sync(
    loaded: &input::Loaded,
    repository: &Repository,
    rendered: &[BlueprintResult],
    root: &Path,
    staging: &Path,
    output: Output,
    stage_all: bool,
) -> Result<(bool, bool), RenderError> {
    if loaded.settings.wiring().is_none() {
        return Ok((false, false));
    }
    // By name: a scan of `rendered` per blueprint would cost a fleet the square of its size.
    let rendered: BTreeMap<&str, &sync::Roots> = rendered
        .iter()
        .map(|b| (b.name.as_str(), &b.roots))
        .collect();
    let mut roots: BTreeMap<String, sync::Roots> = BTreeMap::new();
    for name in repository.keys() {
        if let Some(rendered) = rendered.get(name.as_str()) {
            roots.insert(name.clone(), (*rendered).clone());
            continue;
        }
        let dir = root.join(RENDERED_DIR).join(name);
        if fs_err::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
            let files = repo::files_under(&dir)?;
            let paths: Vec<String> = files
                .iter()
                .map(|path| repo::display_path(&dir, path))
                .collect();
            let mut found = sync::Roots::from_paths(paths.iter().map(String::as_str));
            // The few files whose content the platform needs (HPAs, pod templates, IAM).
            let mut read = Vec::new();
            for (file, path) in files.iter().zip(&paths) {
                if sync::platform::Uses::reads(path) {
                    let text = fs_err::read_to_string(file)?;
                    read.extend(manifest::split(&text).unwrap_or_default());
                }
            }
            found.uses.note_objects(&read);
            roots.insert(name.clone(), found);
        }
    }
    let Some(files) = sync::sync_folder(&loaded.settings, repository, &roots)? else {
        return Ok((false, false));
    };
    let contents = || files.iter().map(|(p, c)| (p.as_str(), c.as_bytes()));
    if output == Output::FindingsOnly {
        return Ok((true, false));
    }
    let source = crate::settings::SETTINGS_FILE;
    let current = root.join(RENDERED_DIR).join(sync::SYNC_DIR);
    if !stage_all && workspace::folder_is_current(&current, source, contents())? {
        return Ok((true, true));
    }
    workspace::write_folder(
        &staging.join(RENDERED_DIR).join(sync::SYNC_DIR),
        source,
        contents(),
    )?;
    Ok((true, false))
}

/// The blueprints with a valid envelope, each name once. A duplicate name is already an error
/// from loading; building it twice would race on one staging folder, so only its first
/// definition is used.
fn unique_blueprints<'a>(loaded: &'a input::Loaded, registry: &'a Registry) -> Vec<Blueprint<'a>> {
    let mut seen = BTreeSet::new();
    loaded
        .blueprints(registry)
        .into_iter()
        .filter(|b| seen.insert(b.name))
        .collect()
}

/// Phase 1: reads every spec, so that references to blueprints not selected resolve too.
fn read_all<'a>(
    blueprints: Vec<Blueprint<'a>>,
    registry: &'a Registry,
    diagnostics: &mut Vec<Diagnostic>,
) -> (Vec<Read<'a>>, Repository) {
    let mut read = Vec::new();
    let mut unreadable = Vec::new();
    for blueprint in blueprints {
        // Before the spec is read: a token pasted where a reference belongs is reported as a
        // leak, even when it also breaks the spec's shape.
        diagnostics.extend(blueprint.credential_findings());
        diagnostics.extend(unsuppressible(&blueprint));
        // The envelope check accepted the kind, so the registry has it.
        let Some(kind) = registry.get(blueprint.kind) else {
            continue;
        };
        match kind.read(&blueprint) {
            Ok(spec) => read.push(Read {
                blueprint,
                kind,
                spec,
            }),
            Err(diagnostic) => {
                diagnostics.push(diagnostic);
                unreadable.push(blueprint);
            }
        }
    }
    let mut repository = kinds::repository(read.iter().map(|r| (&r.blueprint, r.spec.as_ref())));
    for blueprint in unreadable {
        repository.insert(
            blueprint.name.to_string(),
            crate::plan::Exported {
                kind: blueprint.kind.to_string(),
                file: blueprint.file.to_string(),
                line: blueprint.node.span.line,
                exports: crate::plan::Exports::default(),
                readable: false,
            },
        );
    }
    (read, repository)
}

fn selected<'r, 'a>(read: &'r [Read<'a>], names: &[String]) -> Vec<&'r Read<'a>> {
    read.iter()
        .filter(|r| names.is_empty() || names.iter().any(|n| n == r.blueprint.name))
        .collect()
}

/// Reads every regular file under `dir` (relative path → bytes), without following links;
/// empty when `dir` does not exist. For tests and tools that compare trees.
pub fn read_tree(dir: &Path) -> std::io::Result<BTreeMap<String, Vec<u8>>> {
    let mut files = BTreeMap::new();
    if dir.is_dir() {
        for path in repo::files_under(dir)? {
            if fs_err::symlink_metadata(&path)?.file_type().is_file() {
                files.insert(repo::display_path(dir, &path), fs_err::read(&path)?);
            }
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::one::check_manifests;
    use super::*;

    /// A blueprint that rendered nothing stops the render unless an error says why: its
    /// output is never removed for lack of output (whatever the path: built or cached).
    #[test]
    fn a_blueprint_without_output_and_without_an_error_stops_the_render() {
        let result = |diagnostics: Vec<Diagnostic>, cached: bool| BlueprintResult {
            name: "b".into(),
            diagnostics,
            objects: Vec::new(),
            suppressed: 1,
            description: String::new(),
            roots: sync::Roots::default(),
            cached,
            current: false,
            record: None,
        };
        for cached in [false, true] {
            assert!(matches!(
                without_output(&result(Vec::new(), cached)),
                Some(RenderError::NoOutput { .. })
            ));
            assert!(
                without_output(&result(vec![Diagnostic::warning("gpu-count", "w")], cached))
                    .is_some()
            );
            assert!(
                without_output(&result(vec![Diagnostic::error("tpu-slices", "e")], cached))
                    .is_none()
            );
        }
    }

    /// Findings on generated objects point at the blueprint line they trace back to, not at
    /// the rendered file nobody wrote.
    #[test]
    fn findings_on_rendered_objects_point_at_the_blueprint() {
        let blueprint_text = "apiVersion: aiml.dev/v1alpha1\nkind: MultisliceTraining\nmetadata:\n  name: b\nspec:\n  project: my-project\n  tpu:\n    type: v4-32\n    slices: 2\n";
        let documents = crate::yaml::parse_documents(blueprint_text).unwrap();
        let registry = Registry::builtin();
        let blueprint =
            Blueprint::from_node("blueprints/b.yaml", &documents[0], &registry).unwrap();
        // A two-slice JobSet without exclusive placement, as a broken template would render it.
        let rendered = "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: b\n  namespace: b\n  labels:\n    app.kubernetes.io/managed-by: kubectl-aiml\n    app.kubernetes.io/instance: b\nspec:\n  replicatedJobs:\n  - name: slice\n    replicas: 2\n    template:\n      spec:\n        parallelism: 4\n        completions: 4\n        template:\n          spec:\n            nodeSelector:\n              cloud.google.com/gke-tpu-accelerator: tpu-v4-podslice\n              cloud.google.com/gke-tpu-topology: 2x2x4\n            containers:\n            - name: c\n              image: busybox:1\n              resources:\n                limits:\n                  google.com/tpu: 4\n";
        let manifests = manifest::split(rendered).unwrap();
        let found = check_manifests(&blueprint, &manifests, Checks::default());
        let finding = found
            .iter()
            .find(|d| d.rule == "jobset-exclusive-topology")
            .unwrap_or_else(|| panic!("{found:#?}"));
        assert_eq!(finding.file, "blueprints/b.yaml");
        assert_eq!(
            (finding.line, finding.column),
            (9, 13),
            "the `slices: 2` value"
        );
    }
}
