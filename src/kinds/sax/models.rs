//! What the tool knows about serving Llama 2 with Saxml on TPUs: `data/saxml-serving.tsv`,
//! embedded and parsed once. The file says what each row is and where it comes from.

use std::sync::LazyLock;

use crate::catalog::TpuFamily;

/// The table, as shipped.
pub const TABLE: &str = include_str!("../../../data/saxml-serving.tsv");

/// A model the kind serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Model {
    /// `spec.model.name`.
    pub name: &'static str,
    /// Parameters, in billions.
    pub billions: u32,
    /// `--model-size` of Saxml's `convert_llama_ckpt`.
    pub converter_size: &'static str,
    /// Machine type of the auxiliary pool that converts the checkpoint (bf16 weights held in
    /// memory twice over while converting).
    pub converter_machine: &'static str,
    /// Memory the conversion asks for.
    pub converter_memory: &'static str,
    /// Scratch disk of the conversion (the Meta checkpoint and the Pax one).
    pub converter_scratch_gb: u32,
}

/// A Saxml serving configuration class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServingConfig {
    /// Fully qualified class name, as `saxutil publish` takes it.
    pub class: &'static str,
    /// `spec.model.name` it serves.
    pub model: &'static str,
    /// TPU generation.
    pub family: TpuFamily,
    /// Chips it shards the model over (`ICI_MESH_SHAPE`).
    pub chips: u32,
    /// Loads random weights (`test_mode` true).
    pub test_mode: bool,
    /// First Saxml source date with the class serving as described (`YYYY-MM-DD`).
    pub since: &'static str,
}

/// The parsed table.
#[derive(Debug, Default)]
pub struct Facts {
    /// The Llama 2 sizes of the reference guide.
    pub models: Vec<Model>,
    /// The Llama 2 configurations of `lm_cloud.py` on TPU.
    pub configs: Vec<ServingConfig>,
    /// Module of the serving configurations.
    pub module: &'static str,
    /// Saxml releases whose images Google publishes, with the date of their source.
    pub releases: Vec<(&'static str, &'static str)>,
    /// Where Google publishes the Saxml release images.
    pub registry: &'static str,
    /// Default tag of each component's release image.
    pub images: Vec<(&'static str, &'static str)>,
    /// Saxml's chip name for `--platform_chip`, per TPU generation.
    pub chips: Vec<(TpuFamily, &'static str)>,
    /// Default region and zone per TPU generation (`None`: any other).
    pub locations: Vec<(Option<TpuFamily>, &'static str, &'static str)>,
}

/// The embedded table (a malformed line is a bug in this binary, caught by a unit test).
pub static FACTS: LazyLock<Facts> = LazyLock::new(|| match Facts::parse(TABLE) {
    Ok(facts) => facts,
    Err(error) => panic!("data/saxml-serving.tsv is malformed: {error}"),
});

impl Facts {
    /// Parses the format of `data/saxml-serving.tsv`.
    pub fn parse(text: &'static str) -> Result<Self, String> {
        let mut facts = Self::default();
        for (index, line) in text.lines().enumerate() {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fields: Vec<&'static str> = line.split('\t').collect();
            let at = |why: String| format!("line {}: {why}", index + 1);
            match fields.as_slice() {
                ["model", name, billions, size, machine, memory, scratch, _] => {
                    facts.models.push(Model {
                        name,
                        billions: number(billions).map_err(at)?,
                        converter_size: size,
                        converter_machine: machine,
                        converter_memory: memory,
                        converter_scratch_gb: number(scratch).map_err(at)?,
                    });
                }
                ["config", class, model, family, chips, test_mode, since, _] => {
                    facts.configs.push(ServingConfig {
                        class,
                        model,
                        family: tpu_family(family).map_err(at)?,
                        chips: number(chips).map_err(at)?,
                        test_mode: test_mode
                            .parse()
                            .map_err(|_| at(format!("`{test_mode}`")))?,
                        since,
                    });
                }
                ["module", module, _] => facts.module = module,
                ["release", tag, date, _] => facts.releases.push((tag, date)),
                ["registry", registry, _] => facts.registry = registry,
                ["image", component, tag, _] => facts.images.push((component, tag)),
                ["chip", family, chip, _] => {
                    facts.chips.push((tpu_family(family).map_err(at)?, chip));
                }
                ["location", family, region, zone, _] => {
                    let family = (*family != "*")
                        .then(|| tpu_family(family))
                        .transpose()
                        .map_err(at)?;
                    facts.locations.push((family, region, zone));
                }
                _ => return Err(at("not a row this file has".into())),
            }
        }
        Ok(facts)
    }
}

fn number(text: &str) -> Result<u32, String> {
    text.parse()
        .map_err(|_| format!("`{text}` is not a number"))
}

fn tpu_family(text: &str) -> Result<TpuFamily, String> {
    TpuFamily::ALL
        .into_iter()
        .find(|family| family.display_name() == text)
        .ok_or_else(|| format!("`{text}` is not a TPU family of the catalog"))
}

/// The model called `name`.
#[must_use]
pub fn model(name: &str) -> Option<&'static Model> {
    FACTS.models.iter().find(|model| model.name == name)
}

/// The configurations for `model` on `chips` chips of `family`, real weights first.
#[must_use]
pub fn configs_for(model: &str, family: TpuFamily, chips: u32) -> Vec<&'static ServingConfig> {
    let mut found: Vec<&ServingConfig> = FACTS
        .configs
        .iter()
        .filter(|c| c.model == model && c.family == family && c.chips == chips)
        .collect();
    found.sort_by_key(|c| c.test_mode);
    found
}

/// The configuration whose class is `class`, when the tool knows it.
#[must_use]
pub fn config(class: &str) -> Option<&'static ServingConfig> {
    FACTS.configs.iter().find(|c| c.class == class)
}

/// The date of the Saxml source of an image tagged `tag`, when it is a release.
#[must_use]
pub fn release_date(tag: &str) -> Option<&'static str> {
    FACTS
        .releases
        .iter()
        .find(|(release, _)| *release == tag)
        .map(|(_, date)| *date)
}

/// The default tag of a component's release image.
#[must_use]
pub fn release_tag(component: &str) -> &'static str {
    FACTS
        .images
        .iter()
        .find(|(name, _)| *name == component)
        .map_or("", |(_, tag)| tag)
}

/// Saxml's chip name for `--platform_chip`.
#[must_use]
pub fn platform_chip(family: TpuFamily) -> Option<&'static str> {
    FACTS
        .chips
        .iter()
        .find(|(chips_family, _)| *chips_family == family)
        .map(|(_, chip)| *chip)
}

/// Where the TPU generation is offered: the default region and zone.
#[must_use]
pub fn location(family: Option<TpuFamily>) -> (&'static str, &'static str) {
    let locations = &FACTS.locations;
    let found = locations.iter().find(|(f, ..)| f.is_some() && *f == family);
    found
        .or_else(|| locations.iter().find(|(f, ..)| f.is_none()))
        .map_or(("", ""), |(_, region, zone)| (*region, *zone))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::image::is_date;

    #[test]
    fn the_table_parses_and_every_configuration_is_of_a_known_model_with_a_date() {
        let facts = Facts::parse(TABLE).unwrap();
        assert_eq!(facts.models.len(), 3);
        for config in &facts.configs {
            assert!(model(config.model).is_some(), "{}", config.class);
            assert!(is_date(config.since), "{}", config.class);
            assert!(config.class.starts_with(&format!("{}.", facts.module)));
        }
        for (tag, date) in &facts.releases {
            assert!(is_date(date), "{tag}");
        }
        for component in ["admin-server", "model-server", "util", "http"] {
            assert!(
                release_date(release_tag(component)).is_some(),
                "{component}"
            );
        }
        assert!(facts.registry.contains('/') && facts.locations.iter().any(|l| l.0.is_none()));
        assert!(!is_date("2024-13-01") && !is_date("2024-6-1") && !is_date("latest"));
        let bad = Facts::parse("config\tx\tllama2-7b\tTPU v9\t4\tfalse\t2024-01-01\tL\n");
        assert_eq!(
            bad.unwrap_err(),
            "line 1: `TPU v9` is not a TPU family of the catalog"
        );
    }

    #[test]
    fn the_70b_v5e_16_configuration_serves_real_weights_only_after_april_2024() {
        let found = configs_for("llama2-70b", TpuFamily::V5e, 16);
        assert_eq!(
            found[0].class,
            "saxml.server.pax.lm.params.lm_cloud.LLaMA70BFP16TPUv5e16"
        );
        assert!(!found[0].test_mode);
        assert!(release_date("v1.2.0").unwrap() < found[0].since);
        assert_eq!(
            location(Some(TpuFamily::V4)),
            ("us-central2", "us-central2-b")
        );
        assert_eq!(location(None), location(Some(TpuFamily::Tpu7x)));
    }
}
