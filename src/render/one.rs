//! Phase 2 for one blueprint: plan and compile it into its overlay (with the fleet
//! registration Config Sync needs), build each target with kustomize, validate the objects,
//! drop what the blueprint suppresses, and stage the result. Blueprints run through it in
//! parallel, so it reads only what it is given.

use std::path::Path;

use crate::blueprint::Blueprint;
use crate::diagnostic::{self, Diagnostic, ObjectRef};
use crate::input;
use crate::kinds::{self, Registry};
use crate::kustomize::Kustomize;
use crate::manifest::{self, Manifest};
use crate::plan::{Lookups, Planner, Repository};
use crate::repo::{OVERLAYS_DIR, RENDERED_DIR};
use crate::settings::{Engine, Settings};
use crate::sync;
use crate::validate::{self, Object};
use crate::workspace;

use super::{
    BlueprintResult, Checks, Output, Read, RenderError, read_all, selected, unique_blueprints,
};

/// Phase 2 for one blueprint, up to the overlay: plans and renders templates, and adds the
/// fleet registration of a cluster it creates when the repository wires Config Sync.
pub(super) fn compile_one(
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
    // Argo CD ignores depends-on: the same order, as sync waves.
    if settings.engine == Engine::ArgoCd
        && let Some(compiled) = &mut compiled
    {
        super::waves::add_sync_waves(&mut compiled.overlay).map_err(|error| {
            RenderError::Waves {
                blueprint: read.blueprint.name.to_string(),
                error,
            }
        })?;
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
pub(super) fn build_one(
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
    let roots = sync::Roots::from_manifests(&manifests);
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
pub(super) fn unsuppressible(blueprint: &Blueprint<'_>) -> Vec<Diagnostic> {
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
pub(super) fn without_output(result: &BlueprintResult) -> Option<RenderError> {
    (result.objects.is_empty() && !result.diagnostics.iter().any(Diagnostic::is_error)).then(|| {
        RenderError::NoOutput {
            blueprint: result.name.clone(),
        }
    })
}

/// Drops the findings of rules the blueprint turns off (`aiml.dev/ignore`), on itself and on
/// the objects it renders; returns how many.
pub(super) fn suppress(blueprint: &Blueprint<'_>, diagnostics: &mut Vec<Diagnostic>) -> usize {
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

/// Checks a blueprint's rendered objects against their schemas and every rule, and points
/// the findings at the blueprint.
pub(super) fn check_manifests(
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
    diagnostics.extend(validate::validate_with(&objects, checks.policy));
    for d in &mut diagnostics {
        // The user wrote the blueprint, not the rendered file: point there. An image finding
        // points at the blueprint field that names the image, when one does (else the image is
        // the kind's default, and the blueprint's name is what there is to point at).
        let written = d
            .found
            .as_deref()
            .filter(|_| image_rule(&d.rule))
            .and_then(|image| find_string(blueprint.node, image, String::new()));
        let span = match written {
            Some((span, field)) => {
                d.blueprint_field = Some(field);
                span
            }
            None => {
                let field = d.blueprint_field.as_deref().unwrap_or("metadata.name");
                blueprint.node.closest(field).0
            }
        };
        d.file = blueprint.file.to_string();
        d.line = span.line;
        d.column = span.column;
    }
    diagnostics
}

/// Whether `rule` judges an image reference (its finding's `found` is the reference).
fn image_rule(rule: &str) -> bool {
    rule == validate::rule::IMAGE_UNPINNED || rule == validate::rule::IMAGE_DIGEST
}

/// The first string scalar of `node` equal to `value`, in source order: where it is and its
/// dotted path (`spec.images.modelServer`, `spec.containers[0].image`).
fn find_string(
    node: &crate::yaml::Node,
    value: &str,
    path: String,
) -> Option<(crate::yaml::Span, String)> {
    use crate::yaml::Value;
    match &node.value {
        Value::String(s) if s == value => Some((node.span, path)),
        Value::Map(entries) => entries.iter().find_map(|(key, child)| {
            let child_path = if path.is_empty() {
                key.text.clone()
            } else {
                format!("{path}.{}", key.text)
            };
            find_string(child, value, child_path)
        }),
        Value::Seq(items) => items
            .iter()
            .enumerate()
            .find_map(|(index, child)| find_string(child, value, format!("{path}[{index}]"))),
        _ => None,
    }
}
