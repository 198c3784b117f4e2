//! What the tool knows about serving Llama 2 with Saxml on TPUs, as data.
//!
//! Serving configurations are classes of `saxml/server/pax/lm/params/lm_cloud.py` in
//! google/saxml. Each fixes a TPU generation and a chip count (its `ICI_MESH_SHAPE`); a class
//! whose `test_mode` is true loads random weights instead of the checkpoint. `since` is the
//! date of the Saxml commit that made the class serve real weights (for the 70B v5e-16 class,
//! commit 4e41a79 of 2024-04-11, after release v1.2.0).

use crate::catalog::TpuFamily;

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

/// The Llama 2 sizes of the reference guide.
pub const MODELS: &[Model] = &[
    Model {
        name: "llama2-7b",
        billions: 7,
        converter_size: "7b",
        converter_machine: "n2-highmem-16",
        converter_memory: "100Gi",
        converter_scratch_gb: 100,
    },
    Model {
        name: "llama2-13b",
        billions: 13,
        converter_size: "13b",
        converter_machine: "n2-highmem-32",
        converter_memory: "200Gi",
        converter_scratch_gb: 150,
    },
    // The guide's 112 GB converter cannot hold 70B: its bf16 weights alone are ~140 GB.
    Model {
        name: "llama2-70b",
        billions: 70,
        converter_size: "70b",
        converter_machine: "n2-highmem-64",
        converter_memory: "450Gi",
        converter_scratch_gb: 600,
    },
];

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

const LM_CLOUD: &str = "saxml.server.pax.lm.params.lm_cloud";

macro_rules! config {
    ($class:literal, $model:literal, $family:expr, $chips:literal, $test:literal, $since:literal) => {
        ServingConfig {
            class: concat!("saxml.server.pax.lm.params.lm_cloud.", $class),
            model: $model,
            family: $family,
            chips: $chips,
            test_mode: $test,
            since: $since,
        }
    };
}

/// The Llama 2 configurations of `lm_cloud.py` on TPU.
pub const SERVING_CONFIGS: &[ServingConfig] = &[
    config!(
        "LLaMA7BFP16TPUv5e",
        "llama2-7b",
        TpuFamily::V5e,
        4,
        false,
        "2023-10-17"
    ),
    config!(
        "LLaMA7BTPUv5e8",
        "llama2-7b",
        TpuFamily::V5e,
        8,
        false,
        "2024-04-11"
    ),
    config!(
        "LLaMA7BTPUv5e16",
        "llama2-7b",
        TpuFamily::V5e,
        16,
        false,
        "2024-04-11"
    ),
    config!(
        "LLaMA7BFP16TPUv4",
        "llama2-7b",
        TpuFamily::V4,
        4,
        true,
        "2023-05-02"
    ),
    config!(
        "LLaMA70BFP16TPUv5e16",
        "llama2-70b",
        TpuFamily::V5e,
        16,
        false,
        "2024-04-11"
    ),
    config!(
        "LLaMA70BFP16TPUv5e32",
        "llama2-70b",
        TpuFamily::V5e,
        32,
        true,
        "2023-10-02"
    ),
    config!(
        "LLaMA70BFP16TPUv5e64",
        "llama2-70b",
        TpuFamily::V5e,
        64,
        true,
        "2023-10-02"
    ),
];

/// Saxml releases whose images Google publishes, with the date of their source.
pub const RELEASES: &[(&str, &str)] = &[
    ("v1.0.0", "2023-08-30"),
    ("v1.1.0", "2023-10-19"),
    ("v1.2.0", "2024-02-20"),
];

/// Where Google publishes the Saxml release images.
pub const RELEASE_REGISTRY: &str = "us-docker.pkg.dev/cloud-tpu-images/inference";

/// The model called `name`.
#[must_use]
pub fn model(name: &str) -> Option<&'static Model> {
    MODELS.iter().find(|model| model.name == name)
}

/// The configurations for `model` on `chips` chips of `family`, real weights first.
#[must_use]
pub fn configs_for(model: &str, family: TpuFamily, chips: u32) -> Vec<&'static ServingConfig> {
    let mut found: Vec<&ServingConfig> = SERVING_CONFIGS
        .iter()
        .filter(|c| c.model == model && c.family == family && c.chips == chips)
        .collect();
    found.sort_by_key(|c| c.test_mode);
    found
}

/// The configuration whose class is `class`, when the tool knows it.
#[must_use]
pub fn config(class: &str) -> Option<&'static ServingConfig> {
    SERVING_CONFIGS.iter().find(|c| c.class == class)
}

/// The date of the Saxml source of an image tagged `tag`, when it is a release.
#[must_use]
pub fn release_date(tag: &str) -> Option<&'static str> {
    RELEASES
        .iter()
        .find(|(release, _)| *release == tag)
        .map(|(_, date)| *date)
}

/// Whether `text` is a `YYYY-MM-DD` date.
#[must_use]
pub fn is_date(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    matches!(parts.as_slice(), [y, m, d]
        if y.len() == 4 && m.len() == 2 && d.len() == 2
            && [y, m, d].iter().all(|p| p.bytes().all(|b| b.is_ascii_digit()))
            && (1..=12).contains(&m.parse::<u32>().unwrap_or(0))
            && (1..=31).contains(&d.parse::<u32>().unwrap_or(0)))
}

/// Saxml's chip name for `--platform_chip`.
#[must_use]
pub fn platform_chip(family: TpuFamily) -> Option<&'static str> {
    match family {
        TpuFamily::V4 => Some("tpuv4"),
        TpuFamily::V5e => Some("tpuv5e"),
        _ => None,
    }
}

/// Short name of the Sax model for `saxutil` (lowercase letters, digits, `-`, `_`).
#[must_use]
pub fn sax_model_name(model: &str) -> String {
    model.to_string()
}

/// Module of the serving configurations, for messages.
#[must_use]
pub fn lm_cloud() -> &'static str {
    LM_CLOUD
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_configuration_is_of_a_known_model_with_a_date() {
        for config in SERVING_CONFIGS {
            assert!(model(config.model).is_some(), "{}", config.class);
            assert!(is_date(config.since), "{}", config.class);
            assert!(config.class.starts_with(lm_cloud()));
        }
        for (tag, date) in RELEASES {
            assert!(is_date(date), "{tag}");
        }
        assert!(!is_date("2024-13-01") && !is_date("2024-6-1") && !is_date("latest"));
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
    }
}
