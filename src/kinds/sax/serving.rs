//! Which Saxml serving configuration loads the model on the slice, and whether the
//! model-server image has it.

use super::spec::Spec;
use super::{models, rule};
use crate::accelerator::TpuPlan;
use crate::plan::Planner;
use crate::plan::image::tag_of;

/// The serving configuration: the one the spec names, or the catalog's for the model on the
/// slice; findings when none serves real weights or the `model_server` image (and its source
/// date) predates it.
pub(super) fn serving_config(
    spec: &Spec,
    planner: &mut Planner<'_>,
    model: &models::Model,
    tpu: &TpuPlan,
    model_server: (&str, Option<&str>),
) -> Option<String> {
    let family = tpu.family?;
    if let Some(class) = &spec.model.serving_config {
        let valid = class.split('.').all(|part| {
            !part.is_empty()
                && part.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        });
        if !valid {
            let d = planner.error(
                rule::SERVING_CONFIG,
                "spec.model.servingConfig",
                format!("`{class}` is not a Python class path"),
            );
            d.expected = Some(format!(
                "e.g. `{}.LLaMA70BFP16TPUv5e16`",
                models::FACTS.module
            ));
            return None;
        }
        // A class the tool knows is checked like a default; any other is the user's own.
        if let Some(known) = models::config(class) {
            check_known(
                planner,
                known,
                model,
                tpu,
                model_server,
                "spec.model.servingConfig",
            );
        }
        return Some(class.clone());
    }
    let found = models::configs_for(model.name, family, tpu.chips_per_slice);
    match found.first() {
        Some(config) if !config.test_mode => {
            check_known(planner, config, model, tpu, model_server, "spec.model.name");
            Some(config.class.to_string())
        }
        _ => {
            let d = planner.error(
                rule::SERVING_CONFIG,
                "spec.model.name",
                format!(
                    "Saxml has no serving configuration that loads `{}` weights on {} chips of {family}",
                    model.name, tpu.chips_per_slice
                ),
            );
            d.found = found.first().map(|test| {
                format!(
                    "`{}`, which loads random weights (test mode)",
                    test.class.rsplit('.').next().unwrap_or(test.class)
                )
            });
            let offered: Vec<String> = models::FACTS
                .configs
                .iter()
                .filter(|c| c.model == model.name && !c.test_mode)
                .map(|c| format!("{} chips of {}", c.chips, c.family))
                .collect();
            d.expected = Some(if offered.is_empty() {
                "a serving configuration of your own".into()
            } else {
                offered.join(" or ")
            });
            d.fix = Some(format!(
                "use a slice Saxml has a configuration for, or set `spec.model.servingConfig` to a class your model-server image registers for {} chips",
                tpu.chips_per_slice
            ));
            None
        }
    }
}

/// Checks a known configuration against the slice and the model-server image (built from
/// Saxml of its release, else of the spec's source date).
pub(super) fn check_known(
    planner: &mut Planner<'_>,
    config: &models::ServingConfig,
    model: &models::Model,
    tpu: &TpuPlan,
    (image, source_date): (&str, Option<&str>),
    field: &str,
) {
    let short = config.class.rsplit('.').next().unwrap_or(config.class);
    if config.model != model.name
        || Some(config.family) != tpu.family
        || config.chips != tpu.chips_per_slice
    {
        let d = planner.error(
            rule::SERVING_CONFIG,
            field,
            format!(
                "`{short}` serves `{}` on {} chips of {}, not `{}` on {} chips of {}",
                config.model,
                config.chips,
                config.family,
                model.name,
                tpu.chips_per_slice,
                tpu.family.map_or_else(String::new, |f| f.to_string())
            ),
        );
        d.fix = Some("remove `spec.model.servingConfig` to use the matching one".into());
        return;
    }
    if config.test_mode {
        let d = planner.error(
            rule::SERVING_CONFIG,
            field,
            format!("`{short}` loads random weights (test mode), not the checkpoint"),
        );
        d.fix = Some("use a configuration with `test_mode` false".into());
        return;
    }
    let build = tag_of(image).and_then(models::release_date).or(source_date);
    match build {
        Some(date) if date < config.since => {
            let d = planner.error(
                rule::IMAGE_TOO_OLD,
                "spec.saxml.images.modelServer",
                format!(
                    "the model-server image is built from Saxml of {date}, before `{short}` could serve it ({})",
                    config.since
                ),
            );
            d.found = Some(image.to_string());
            d.expected = Some(format!("a Saxml build from {} or later", config.since));
            d.fix = Some(format!(
                "build the Saxml images from a commit of {} or later, push them to the blueprint's registry and set `spec.saxml.images` and `spec.saxml.sourceDate`",
                config.since
            ));
        }
        Some(_) => {}
        None => {
            let d = planner.error(
                rule::IMAGE_TOO_OLD,
                "spec.saxml.images.modelServer",
                format!("cannot tell which Saxml source the image `{image}` was built from"),
            );
            d.expected = Some(format!(
                "a release tag ({}) or `spec.saxml.sourceDate`",
                models::FACTS
                    .releases
                    .iter()
                    .map(|(tag, _)| format!("`{tag}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            d.fix = Some("set `spec.saxml.sourceDate: YYYY-MM-DD`".into());
        }
    }
}
