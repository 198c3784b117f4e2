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

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rayon::prelude::*;

use crate::blueprint::Blueprint;
use crate::cache::{self, Cache};
use crate::diagnostic::{self, Diagnostic, ObjectRef};
use crate::input;
use crate::kinds::{self, Kind, Registry, Spec};
use crate::kustomize::{Kustomize, KustomizeError};
use crate::manifest::{self, Manifest};
use crate::overlay::TemplateError;
use crate::plan::{Lookups, Planner, Repository};
use crate::repo::{self, OVERLAYS_DIR, RENDERED_DIR};
use crate::schema::{CheckOptions, Schemas};
use crate::settings::Settings;
use crate::sync;
use crate::validate::{self, Object};
use crate::workspace;

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
}

impl Default for Checks<'static> {
    fn default() -> Self {
        Self {
            schemas: Schemas::embedded(),
            options: CheckOptions::default(),
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
            let paths: Vec<String> = repo::files_under(&dir)?
                .iter()
                .map(|path| repo::display_path(&dir, path))
                .collect();
            roots.insert(
                name.clone(),
                sync::Roots::from_paths(paths.iter().map(String::as_str)),
            );
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

/// Phase 2 for one blueprint, up to the overlay: plans and renders templates, and adds the
/// fleet registration of a cluster it creates when the repository wires Config Sync.
fn compile_one(
    read: &Read<'_>,
    repository: &Repository,
    settings: &Settings,
) -> Result<(Option<kinds::Compiled>, Vec<Diagnostic>, Lookups), RenderError> {
    let template_error = |error| RenderError::Template {
        blueprint: read.blueprint.name.to_string(),
        error,
    };
    let mut planner = Planner::new(&read.blueprint, repository);
    let mut compiled = read.spec.compile(&mut planner).map_err(template_error)?;
    if let Some(compiled) = &mut compiled
        && let Some(fleet) = sync::fleet_objects(settings, repository, read.blueprint.name)
            .map_err(template_error)?
    {
        compiled
            .overlay
            .add_resources(
                crate::overlay::Plane::ConfigConnector,
                &read.blueprint,
                sync::FLEET_FILE,
                fleet,
            )
            .map_err(template_error)?;
    }
    let mut lookups = planner.lookups();
    // The fleet registration reads the blueprint's own exports and its cluster's owner.
    let me = read.blueprint.name;
    lookups.names.insert(me.to_string());
    if let Some(owner) = repository
        .get(me)
        .and_then(|e| e.exports.cluster_of.clone())
    {
        lookups.names.insert(owner);
    }
    Ok((compiled, planner.finish(), lookups))
}

/// A blueprint compiled into its overlay, without kustomize.
#[derive(Debug)]
pub struct CompiledBlueprint {
    /// `metadata.name`.
    pub name: String,
    /// The overlay, unless findings stopped it.
    pub compiled: Option<kinds::Compiled>,
}

/// Reads, plans and renders the overlays of the selected blueprints (`names` empty: all), in
/// memory, with every finding of loading and planning. What `render` does before kustomize.
pub fn compile(
    loaded: &input::Loaded,
    registry: &Registry,
    names: &[String],
) -> Result<(Vec<CompiledBlueprint>, Vec<Diagnostic>), RenderError> {
    let mut diagnostics = loaded.diagnostics.clone();
    let (read, repository) = read_all(
        unique_blueprints(loaded, registry),
        registry,
        &mut diagnostics,
    );
    let mut out = Vec::new();
    for r in selected(&read, names) {
        let (compiled, found, _) = compile_one(r, &repository, &loaded.settings)?;
        diagnostics.extend(found);
        out.push(CompiledBlueprint {
            name: r.blueprint.name.to_string(),
            compiled,
        });
    }
    diagnostic::sort(&mut diagnostics);
    Ok((out, diagnostics))
}

#[allow(
    clippy::too_many_arguments,
    reason = "the pipeline's inputs, each used once"
)]
fn build_one(
    read: &Read<'_>,
    repository: &Repository,
    settings: &Settings,
    kustomize: &Kustomize,
    checks: Checks<'_>,
    root: &Path,
    staging: &Path,
    output: Output,
    stage_all: bool,
) -> Result<(BlueprintResult, Lookups), RenderError> {
    let blueprint = &read.blueprint;
    let name = blueprint.name.to_string();
    let (compiled, mut diagnostics, lookups) = compile_one(read, repository, settings)?;
    let Some(compiled) = compiled else {
        let suppressed = suppress(blueprint, &mut diagnostics);
        return Ok((
            BlueprintResult {
                name,
                diagnostics,
                objects: Vec::new(),
                suppressed,
                description: String::new(),
                roots: sync::Roots::default(),
                cached: false,
                current: false,
                record: None,
            },
            lookups,
        ));
    };
    let overlay_dir = staging.join(OVERLAYS_DIR).join(&name);
    workspace::write_folder(
        &overlay_dir,
        blueprint.file,
        compiled
            .overlay
            .files
            .iter()
            .map(|(p, c)| (p.as_str(), c.as_bytes())),
    )?;
    let mut manifests = Vec::new();
    for plane in compiled.overlay.targets() {
        let display = format!("{OVERLAYS_DIR}/{name}/{}", plane.dir());
        let output = kustomize.build(&overlay_dir.join(plane.dir()), &display)?;
        let built = manifest::split(&output).map_err(|source| RenderError::Split {
            blueprint: name.clone(),
            source,
        })?;
        if built.is_empty() {
            return Err(RenderError::Empty {
                blueprint: name,
                target: display,
            });
        }
        if let Some(stray) = built.iter().find(|m| m.plane() != plane) {
            return Err(RenderError::WrongTarget {
                blueprint: name,
                target: display,
                object: stray.id.to_string(),
                expected: stray.plane().dir().to_string(),
            });
        }
        manifests.extend(built);
    }
    manifests.sort_by(|a, b| a.path.cmp(&b.path));
    diagnostics.extend(check_manifests(blueprint, &manifests, checks));
    let roots = sync::Roots::from_paths(manifests.iter().map(|m| m.path.as_str()));
    diagnostics.extend(sync::root_size_findings(blueprint, &roots));
    let rendered_files = || {
        manifests
            .iter()
            .map(|m| (m.path.as_str(), m.text.as_bytes()))
    };
    // Files are written only when their bytes change: a blueprint whose folders already hold
    // this output (a render without the cache, or after the tool changed) stages nothing, so
    // a fleet's re-render does not create and delete tens of thousands of files.
    let overlay_files = || {
        compiled
            .overlay
            .files
            .iter()
            .map(|(p, c)| (p.as_str(), c.as_bytes()))
    };
    if output == Output::FindingsOnly {
        // What writing would refuse is refused all the same: the answer is a render's.
        workspace::check_folder(
            &staging.join(RENDERED_DIR).join(&name),
            &rendered_files().collect::<Vec<_>>(),
        )?;
    }
    let current = output == Output::Stage
        && !stage_all
        && workspace::folder_is_current(
            &root.join(OVERLAYS_DIR).join(&name),
            blueprint.file,
            overlay_files(),
        )?
        && workspace::folder_is_current(
            &root.join(RENDERED_DIR).join(&name),
            blueprint.file,
            rendered_files(),
        )?;
    if current {
        fs_err::remove_dir_all(&overlay_dir)?;
    } else if output == Output::Stage {
        workspace::write_folder(
            &staging.join(RENDERED_DIR).join(&name),
            blueprint.file,
            rendered_files(),
        )?;
    }
    let mut objects: Vec<ObjectRef> = manifests.into_iter().map(|m| m.id).collect();
    objects.sort();
    let suppressed = suppress(blueprint, &mut diagnostics);
    Ok((
        BlueprintResult {
            name,
            diagnostics,
            objects,
            suppressed,
            description: compiled.description,
            roots,
            cached: false,
            current,
            record: None,
        },
        lookups,
    ))
}

/// The rules a blueprint's `aiml.dev/ignore` names that stop its plan
/// ([`crate::rules::stops_planning`]): each is malformed input (exit 2), since suppressing it
/// would leave the blueprint without output and a render would remove what it rendered.
fn unsuppressible(blueprint: &Blueprint<'_>) -> Vec<Diagnostic> {
    blueprint
        .ignored_rules()
        .into_iter()
        .filter(|id| crate::rules::stops_planning(id))
        .map(|id| {
            let mut d = blueprint.key_error_at(
                "blueprint-schema",
                "metadata.annotations",
                crate::diagnostic::IGNORE_ANNOTATION,
                format!(
                    "`{}` names {}",
                    crate::diagnostic::IGNORE_ANNOTATION,
                    crate::rules::planning_reason(&id)
                ),
            );
            d.found = Some(id.clone());
            d.fix = Some(format!(
                "remove `{id}` from `{}` and fix what it reports",
                crate::diagnostic::IGNORE_ANNOTATION
            ));
            d
        })
        .collect()
}

/// A blueprint that rendered no object and has no error to say why. Writing its result would
/// remove its output, so it stops the render (exit 2) instead: a blueprint that is present is
/// never removed because it produced nothing.
fn without_output(result: &BlueprintResult) -> Option<RenderError> {
    (result.objects.is_empty() && !result.diagnostics.iter().any(Diagnostic::is_error)).then(|| {
        RenderError::NoOutput {
            blueprint: result.name.clone(),
        }
    })
}

/// Drops the findings of rules the blueprint turns off (`aiml.dev/ignore`), on itself and on
/// the objects it renders; returns how many.
fn suppress(blueprint: &Blueprint<'_>, diagnostics: &mut Vec<Diagnostic>) -> usize {
    let ignored = blueprint.ignored_rules();
    if ignored.is_empty() {
        return 0;
    }
    let before = diagnostics.len();
    // Malformed input and what stops the plan stay: [`unsuppressible`] says why.
    diagnostics.retain(|d| {
        crate::rules::INPUT_RULES.contains(&d.rule.as_str())
            || crate::rules::stops_planning(d.rule.as_str())
            || !ignored.iter().any(|id| id == d.rule.as_str())
    });
    before - diagnostics.len()
}

/// Identities of the objects that blueprints not rendered in this run hold under
/// `rendered/`, read from their file names (`<plane>/<namespace>/<kind>[.<group>]_<name>.yaml`).
fn rendered_elsewhere(
    root: &Path,
    rendered: &[BlueprintResult],
    repository: &Repository,
) -> std::io::Result<BTreeMap<String, Vec<ObjectRef>>> {
    let mut others = BTreeMap::new();
    let dir = root.join(RENDERED_DIR);
    if !dir.is_dir() {
        return Ok(others);
    }
    let this_run: BTreeSet<&str> = rendered.iter().map(|b| b.name.as_str()).collect();
    for entry in fs_err::read_dir(&dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        // Only blueprints of the repository: a folder left by a deleted blueprint goes at the
        // next full render.
        if this_run.contains(name.as_str())
            || !repository.contains_key(&name)
            || !entry.file_type()?.is_dir()
        {
            continue;
        }
        let ids = repo::files_under(&entry.path())?
            .iter()
            .filter_map(|path| manifest::id_from_path(&repo::display_path(&entry.path(), path)))
            .collect();
        others.insert(name, ids);
    }
    Ok(others)
}

/// The cluster a blueprint's workload objects go to (`project/location/name`), when known.
fn target_cluster(repository: &Repository, blueprint: &str) -> Option<String> {
    let exported = repository.get(blueprint)?;
    if let Some(cluster) = &exported.exports.cluster {
        return Some(format!(
            "{}/{}/{}",
            cluster.project, cluster.location, cluster.name
        ));
    }
    let owner = repository.get(exported.exports.cluster_of.as_deref()?)?;
    owner
        .exports
        .cluster
        .as_ref()
        .map(|cluster| format!("{}/{}/{}", cluster.project, cluster.location, cluster.name))
}

/// Two blueprints that render the same object (group, kind, namespace, name) on the same
/// cluster would fight over it: an error on each, naming the other. Config Connector objects
/// share the host cluster; workload objects collide only on the same target cluster.
fn collisions(
    rendered: &[BlueprintResult],
    others: &BTreeMap<String, Vec<ObjectRef>>,
    read: &[Read<'_>],
    repository: &Repository,
) -> Vec<Diagnostic> {
    // Kinds compare case-insensitively: identities read back from file names are lower case.
    let key = |blueprint: &str, id: &ObjectRef| {
        let cluster = match crate::overlay::Plane::of_group(&id.group) {
            crate::overlay::Plane::ConfigConnector => None,
            crate::overlay::Plane::Workload => target_cluster(repository, blueprint),
        };
        (
            cluster,
            id.group.clone(),
            id.kind.to_lowercase(),
            id.namespace.clone(),
            id.name.clone(),
        )
    };
    let mut owners: BTreeMap<_, Vec<(&str, &ObjectRef)>> = BTreeMap::new();
    let sources = rendered
        .iter()
        .map(|b| (b.name.as_str(), &b.objects))
        .chain(others.iter().map(|(name, ids)| (name.as_str(), ids)));
    for (blueprint, ids) in sources {
        for id in ids {
            owners
                .entry(key(blueprint, id))
                .or_default()
                .push((blueprint, id));
        }
    }
    // By name, for as many collisions as objects.
    let read: BTreeMap<&str, &Read<'_>> = read.iter().map(|r| (r.blueprint.name, r)).collect();
    let rendered: BTreeSet<&str> = rendered.iter().map(|b| b.name.as_str()).collect();
    let mut diagnostics = Vec::new();
    for owners in owners.values().filter(|owners| owners.len() > 1) {
        for (blueprint, id) in owners {
            // Report on blueprints rendered now; the others are reported when they render.
            let Some(read) = read.get(blueprint) else {
                continue;
            };
            if !rendered.contains(blueprint) {
                continue;
            }
            let others: Vec<String> = owners
                .iter()
                .filter(|(other, _)| other != blueprint)
                .map(|(other, _)| format!("`{other}`"))
                .collect();
            diagnostics.push(
                read.blueprint
                    .error_at(
                        "blueprint-object-collision",
                        "metadata.name",
                        format!(
                            "blueprints `{blueprint}` and {} both render {}",
                            others.join(", "),
                            describe(id)
                        ),
                    )
                    .object((*id).clone())
                    .expected("each object rendered by one blueprint only")
                    .fix("give the object another name in one of the blueprints (e.g. `spec.namespace`, or a different cluster or bucket name)"),
            );
        }
    }
    diagnostics
}

fn describe(id: &ObjectRef) -> String {
    let kind = if id.group.is_empty() {
        id.kind.clone()
    } else {
        format!("{}.{}", id.kind, id.group)
    };
    match &id.namespace {
        Some(namespace) => format!("`{kind}` `{namespace}/{}`", id.name),
        None => format!("`{kind}` `{}`", id.name),
    }
}

/// Checks a blueprint's rendered objects against their schemas and every rule, and points
/// the findings at the blueprint.
fn check_manifests(
    blueprint: &Blueprint<'_>,
    manifests: &[Manifest],
    checks: Checks<'_>,
) -> Vec<Diagnostic> {
    let mut diagnostics = Vec::new();
    for m in manifests {
        for label in ["app.kubernetes.io/managed-by", "app.kubernetes.io/instance"] {
            if m.node.at(&["metadata", "labels", label]).is_none() {
                diagnostics.push(
                    Diagnostic::error(
                        "object-labels",
                        format!("rendered object lacks label `{label}`"),
                    )
                    .object(m.id.clone()),
                );
            }
        }
    }
    let objects: Vec<Object<'_>> = manifests
        .iter()
        .map(|m| Object {
            file: &m.path,
            api_version: &m.api_version,
            id: m.id.clone(),
            node: &m.node,
        })
        .collect();
    for (object, manifest) in objects.iter().zip(manifests) {
        diagnostics.extend(checks.schemas.check_with_source(
            object,
            &manifest.text,
            &checks.options,
        ));
    }
    diagnostics.extend(validate::validate(&objects));
    for d in &mut diagnostics {
        // The user wrote the blueprint, not the rendered file: point there.
        let field = d.blueprint_field.as_deref().unwrap_or("metadata.name");
        let (span, _) = blueprint.node.closest(field);
        d.file = blueprint.file.to_string();
        d.line = span.line;
        d.column = span.column;
    }
    diagnostics
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
