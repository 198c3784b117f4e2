//! GPU images against the driver of the nodes they run on: an image built on a CUDA version
//! newer than the node's NVIDIA driver runs only through CUDA forward compatibility (on
//! data-center GPUs, with the compatibility libraries the image ships), and fails to start
//! elsewhere. The CUDA of an image and the driver branch of `gpuDriverVersion` are the
//! catalog's (`data/gpu-cuda.tsv`).
//!
//! Owns `gpu-driver-cuda`. A warning: the pods may run, but on a path NVIDIA supports only for
//! some GPUs and driver branches.

use crate::catalog::{self, CudaVersion};
use crate::diagnostic::Diagnostic;
use crate::validate::model::PodGroup;
use crate::validate::model::nodepool::NodePool;
use crate::validate::model::workload::container_nodes;
use crate::validate::rule;
use crate::validate::rules::shared::Locate;
use crate::yaml::Node;

/// Runs `gpu-driver-cuda` over every GPU pod template that can land on a pool of the set.
pub(crate) fn check(groups: &[PodGroup<'_>], pools: &[NodePool<'_>], out: &mut Vec<Diagnostic>) {
    for group in groups.iter().filter(|group| group.gpu.is_some()) {
        let matching = group.matching_pools(pools);
        // Pools whose driver branch the table knows; any other pool could have a driver new
        // enough, so nothing is judged then.
        let branches: Option<Vec<(&NodePool<'_>, &str, u32)>> = matching
            .iter()
            .filter(|pool| !pool.gpus.is_empty())
            .map(|pool| {
                let (version, ..) = pool.gpu_driver.as_ref()?;
                Some((*pool, *version, catalog::driver_branch(version)?))
            })
            .collect();
        let Some(branches) = branches.filter(|branches| !branches.is_empty()) else {
            continue;
        };
        let template = &group.template;
        for (container, path) in container_nodes(template.spec, &template.path) {
            let Some((cuda, node, field, source)) = container_cuda(container, &path) else {
                continue;
            };
            let Some(needed) = catalog::min_driver(cuda) else {
                continue;
            };
            if branches.iter().any(|(.., branch)| *branch >= needed) {
                continue;
            }
            let (pool, version, branch) = branches[0];
            let diagnostic = Diagnostic::warning(
                rule::GPU_DRIVER_CUDA,
                format!(
                    "{source} is built on CUDA {}.{}, newer than the R{branch} driver `gpuDriverVersion: {version}` installs on `{}`",
                    cuda.0, cuda.1, pool.name
                ),
            )
            .found(format!("CUDA {}.{} on driver R{branch}", cuda.0, cuda.1))
            .expected(format!("a driver of branch R{needed} or newer"))
            .fix(format!(
                "set `gpuDriverVersion: LATEST` on the node pool's `guestAccelerator` (in a blueprint, `spec.gpuPool.driverVersion: LATEST`), or use an image built on CUDA the R{branch} driver runs; until then the image runs only through CUDA forward compatibility, on data-center GPUs such as T4 and L4"
            ))
            .blueprint_field("spec.gpuPool.driverVersion");
            out.push(template.finding(diagnostic, node, &field));
        }
    }
}

/// The CUDA version a container runs: its `CUDA_VERSION` environment variable when set
/// literally, else what its image reference says. With the node to point at, its field and
/// words for the message.
fn container_cuda<'a>(
    container: &'a Node,
    path: &str,
) -> Option<(CudaVersion, &'a Node, String, String)> {
    for (index, variable) in container.items("env").iter().enumerate() {
        if variable.get("name").and_then(Node::as_str) != Some("CUDA_VERSION") {
            continue;
        }
        let value = variable.get("value")?;
        let text = value.as_str()?;
        let mut parts = text.split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        let field = format!("{path}.env[{index}].value");
        return Some((
            (major, minor),
            value,
            field,
            "the container's `CUDA_VERSION`".to_string(),
        ));
    }
    let image = container.get("image")?;
    let cuda = catalog::image_cuda(image.as_str()?)?;
    let name = image.as_str()?;
    Some((cuda, image, format!("{path}.image"), format!("`{name}`")))
}
