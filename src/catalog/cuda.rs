//! CUDA versions of container images and the NVIDIA driver branches GKE installs, as data:
//! `data/gpu-cuda.tsv`, embedded at build time, each row with its source and date.
//!
//! An image's CUDA version is read from what it says about itself: an NGC container release
//! (`nvcr.io/nvidia/tritonserver:26.07-py3`), a CUDA base image (`nvidia/cuda:12.4.1-…`), a
//! `cudaX.Y` tag (`pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime`) or a `CUDA_VERSION` the
//! container sets. Anything else is unknown.

use std::sync::LazyLock;

/// The embedded table.
const TABLE: &str = include_str!("../../data/gpu-cuda.tsv");

/// A CUDA version, major and minor.
pub type CudaVersion = (u32, u32);

/// The rows, read once.
struct Facts {
    /// `gpuDriverVersion` → driver branch.
    drivers: Vec<(&'static str, u32)>,
    /// CUDA version → lowest driver branch, ascending.
    cuda: Vec<(CudaVersion, u32)>,
    /// NGC release (year, month) → CUDA version, ascending.
    ngc: Vec<((u32, u32), CudaVersion)>,
}

static FACTS: LazyLock<Facts> = LazyLock::new(|| parse(TABLE));

/// `major.minor` (and any patch after it) as two numbers.
fn pair(text: &str) -> Option<(u32, u32)> {
    let mut parts = text.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

fn parse(text: &'static str) -> Facts {
    let mut facts = Facts {
        drivers: Vec::new(),
        cuda: Vec::new(),
        ngc: Vec::new(),
    };
    for line in text.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        let (kind, item, value) = match fields.as_slice() {
            [kind, item, value, _source, _as_of, ..] => (*kind, *item, *value),
            _ => continue,
        };
        match kind {
            "driver" => facts.drivers.extend(value.parse().ok().map(|v| (item, v))),
            "cuda" => facts.cuda.extend(pair(item).zip(value.parse().ok())),
            "ngc" => facts.ngc.extend(pair(item).zip(pair(value))),
            _ => {}
        }
    }
    facts.cuda.sort_unstable();
    facts.ngc.sort_unstable();
    facts
}

/// The driver branch GKE installs for a node pool's `gpuDriverVersion` (`DEFAULT`, `LATEST`).
#[must_use]
pub fn driver_branch(gpu_driver_version: &str) -> Option<u32> {
    FACTS
        .drivers
        .iter()
        .find(|(version, _)| *version == gpu_driver_version)
        .map(|(_, branch)| *branch)
}

/// The lowest driver branch that runs `cuda` natively: that of the highest listed CUDA version
/// not above it.
#[must_use]
pub fn min_driver(cuda: CudaVersion) -> Option<u32> {
    FACTS
        .cuda
        .iter()
        .rev()
        .find(|(version, _)| *version <= cuda)
        .map(|(_, branch)| *branch)
}

/// The CUDA version an image is built on, when its reference says (see the module doc).
#[must_use]
pub fn image_cuda(image: &str) -> Option<CudaVersion> {
    let without_digest = image.split('@').next()?;
    let (repository, tag) = without_digest.rsplit_once(':')?;
    if tag.contains('/') {
        return None; // a registry port, not a tag
    }
    // A `cudaX.Y` part of any tag.
    if let Some(at) = tag.find("cuda") {
        let rest = &tag[at + 4..];
        if let Some(version) = pair(rest.split(['-', '_']).next().unwrap_or("")) {
            return Some(version);
        }
    }
    let name = repository.rsplit('/').next().unwrap_or(repository);
    if name == "cuda" {
        return pair(tag);
    }
    // NGC framework containers are tagged by release, `YY.MM-…`.
    if repository.starts_with("nvcr.io/nvidia/") {
        let release = pair(tag.split('-').next().unwrap_or(""))?;
        return FACTS
            .ngc
            .iter()
            .rev()
            .find(|(from, _)| *from <= release)
            .map(|(_, cuda)| *cuda);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_parses_and_names_a_source() {
        let sources = crate::catalog::source_ids(TABLE);
        for line in TABLE.lines().filter(|line| !line.starts_with('#')) {
            let fields: Vec<&str> = line.split('\t').collect();
            match fields.as_slice() {
                ["source", _, _, url, _] => assert!(url.starts_with("https://"), "{line}"),
                ["driver" | "cuda" | "ngc", _, _, source, as_of, ..] => {
                    assert!(sources.contains(source), "{line}");
                    assert_eq!(as_of.len(), 10, "{line}");
                }
                _ => panic!("not a row: {line:?}"),
            }
        }
        let rows = TABLE
            .lines()
            .filter(|line| {
                ["driver\t", "cuda\t", "ngc\t"]
                    .iter()
                    .any(|k| line.starts_with(k))
            })
            .count();
        assert_eq!(
            rows,
            FACTS.drivers.len() + FACTS.cuda.len() + FACTS.ngc.len()
        );
    }

    #[test]
    fn reads_the_cuda_of_images() {
        assert_eq!(
            image_cuda("nvcr.io/nvidia/tritonserver:26.07-py3"),
            Some((13, 0))
        );
        assert_eq!(
            image_cuda("nvcr.io/nvidia/tritonserver:24.05-py3"),
            Some((12, 4))
        );
        assert_eq!(
            image_cuda("nvidia/cuda:12.4.1-base-ubuntu22.04"),
            Some((12, 4))
        );
        assert_eq!(
            image_cuda("pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime"),
            Some((12, 4))
        );
        assert_eq!(image_cuda("vllm/vllm-openai:v0.6.3"), None);
        assert_eq!(image_cuda("localhost:5000/cuda"), None);
        assert_eq!(image_cuda("python:3.11"), None);
    }

    #[test]
    fn every_unverified_row_says_why_and_every_verified_release_names_its_notes() {
        for line in TABLE
            .lines()
            .filter(|line| line.starts_with("ngc\t") || line.starts_with("driver\t"))
        {
            let note = line.split('\t').nth(5).unwrap_or("");
            assert!(
                note.starts_with("INFERRED: ") || note.starts_with("rel-"),
                "neither verified against a release page nor marked: {line}"
            );
        }
    }

    #[test]
    fn reads_the_release_boundaries_the_notes_give() {
        // Triton's release notes: 23.10 CUDA 12.2.2, 23.12 12.3.2, 25.03 12.8.1, 25.06 12.9.1.
        for (image, cuda) in [
            ("nvcr.io/nvidia/tritonserver:23.10-py3", (12, 2)),
            ("nvcr.io/nvidia/tritonserver:23.12-py3", (12, 3)),
            ("nvcr.io/nvidia/tritonserver:25.03-py3", (12, 8)),
            ("nvcr.io/nvidia/tritonserver:25.06-py3", (12, 9)),
        ] {
            assert_eq!(image_cuda(image), Some(cuda), "{image}");
        }
    }

    #[test]
    fn cuda_13_needs_a_newer_driver_than_default() {
        assert_eq!(min_driver((13, 0)), Some(580));
        assert_eq!(min_driver((12, 7)), Some(560));
        assert!(driver_branch("DEFAULT") < min_driver((13, 0)));
        assert!(driver_branch("LATEST") >= min_driver((13, 0)));
        assert_eq!(driver_branch("INSTALLATION_DISABLED"), None);
    }
}
