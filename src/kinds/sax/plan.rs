//! Planning a `SaxServing` blueprint: the shared site recipe, the model and its serving
//! configuration, the Saxml pools, buckets and proxy, checked.

use std::collections::BTreeMap;

use super::TypedKind;
use super::serving::serving_config;
use super::spec::Spec;
use super::templates::{ConverterPlan, ModelPlan, Plan, ProxyPlan, ResolvedImages, Workload};
use super::{SaxServing, models, rule};
use crate::accelerator::{self, TpuSupport};
use crate::catalog::TpuFamily;
use crate::gcp::{self, Addons, CpuPoolDefaults, Scale};
use crate::kinds::Exposure;
use crate::overlay::role_pool::role_pool;
use crate::overlay::site::{
    Accounts, Location, SYSTEM_POOL, Site, accounts, pool_labels, tpu_node_selector,
};
use crate::overlay::stanzas;
use crate::overlay::tpu_memory::weights_fit;
use crate::plan::Planner;
use crate::plan::image::{image_or, source_date, tag_of};

/// APIs the kind needs beyond those its blocks enable.
const SERVICES: &[&str] = &[
    "artifactregistry.googleapis.com",
    "logging.googleapis.com",
    "monitoring.googleapis.com",
];
/// Display names of the node and workload accounts.
const ACCOUNT_NAMES: (&str, &str) = ("GKE Saxml nodes", "Saxml workloads");

/// The proxy is reachable from the VPC unless the blueprint says otherwise.
const PROXY_EXPOSURE: Exposure = Exposure::Internal;

/// Where the TPU generation is offered: the default region and zone. A new cluster is
/// regional; a borrowed cluster lends its location only when the spec names no region.
pub(super) fn location(spec: &Spec) -> Location<'static> {
    let family = crate::catalog::tpu_slice(&spec.tpu.type_, None)
        .ok()
        .map(|slice| slice.family);
    let (region, zone) = models::location(family);
    Location {
        zone: Some(zone),
        borrow_without_region_only: true,
        ..Location::regional(region)
    }
}

pub(super) fn cell_name(spec: &Spec, blueprint: &str) -> String {
    spec.saxml.cell.clone().unwrap_or_else(|| {
        // Sax names start with a letter.
        if blueprint.starts_with(|c: char| c.is_ascii_digit()) {
            format!("sax-{blueprint}")
        } else {
            blueprint.to_string()
        }
    })
}

pub(super) fn proxy_service(blueprint: &str) -> String {
    format!("{blueprint}-http")
}

/// The image given at `spec.saxml.images.<field>`, else the release image of `component`;
/// checked.
fn image(
    planner: &mut Planner<'_>,
    given: &Option<String>,
    component: &str,
    field: &str,
) -> String {
    image_or(
        planner,
        &format!("spec.saxml.images.{field}"),
        given.as_deref(),
        || {
            let tag = models::release_tag(component);
            format!("{}/sax-{component}:{tag}", models::FACTS.registry)
        },
    )
}

#[allow(clippy::too_many_lines, reason = "one recipe, read top to bottom")]
pub(super) fn plan(spec: &Spec, planner: &mut Planner<'_>) -> Option<Plan> {
    let name = planner.name().to_string();
    // On another blueprint's cluster, its region and zone are the defaults.
    let (site, mut gcp) = Site::open(planner, stanzas!(spec), &location(spec));
    let tpu = accelerator::resolve_tpu(
        planner,
        &spec.tpu,
        TpuSupport {
            kind: SaxServing::NAME,
            families: &[TpuFamily::V4, TpuFamily::V5e],
            multislice: false,
            // Serving must answer: its slices stay up unless the blueprint releases them.
            idle: accelerator::Idle::Keep,
            queued_provisioning: false,
        },
    );
    let (namespace, kubernetes_service_account) = site.names(planner, "saxml");
    let cell = cell_name(spec, &name);
    planner.check_name(
        gcp::rule::KUBERNETES_NAME,
        "spec.saxml.cell",
        &cell,
        check_sax_name,
    );

    // The model and how it is served.
    let model = match models::model(&spec.model.name) {
        Some(model) => Some(model),
        None => {
            let names: Vec<&str> = models::FACTS.models.iter().map(|m| m.name).collect();
            let d = planner.error(
                gcp::rule::CONFLICT,
                "spec.model.name",
                format!("unknown model `{}`", spec.model.name),
            );
            d.expected = Some(format!("one of `{}`", names.join("`, `")));
            d.fix = crate::catalog::closest(&spec.model.name, names.iter().copied())
                .map(|best| format!("did you mean `{best}`?"));
            None
        }
    };
    let replicas = spec.model.replicas.unwrap_or(1);
    if !(1..=accelerator::MAX_SLICES).contains(&replicas) {
        let d = planner.error(
            gcp::rule::NODE_POOL_SIZE,
            "spec.model.replicas",
            format!(
                "`replicas` must be between 1 and {}: each is a TPU slice",
                accelerator::MAX_SLICES
            ),
        );
        d.found = Some(replicas.to_string());
    }
    let given = &spec.saxml.images;
    let images = ResolvedImages {
        admin_server: image(planner, &given.admin_server, "admin-server", "adminServer"),
        model_server: image(planner, &given.model_server, "model-server", "modelServer"),
        util: image(planner, &given.util, "util", "util"),
        http: image(planner, &given.http, "http", "http"),
    };
    let date = spec.saxml.source_date.as_deref();
    let source_date = source_date(planner, "spec.saxml.sourceDate", date, "Saxml commit");
    // A model too large for the slice has no configuration either: one finding says why.
    let serving_config = match (model, &tpu) {
        (Some(model), Some(tpu)) => {
            let weights = (model.name, model.billions);
            weights_fit(planner, rule::MODEL_TOO_LARGE, weights, tpu)
                .then(|| {
                    serving_config(
                        spec,
                        planner,
                        model,
                        tpu,
                        (&images.model_server, source_date),
                    )
                })
                .flatten()
        }
        _ => None,
    };

    // GCP: a regional cluster with a system pool and the Saxml pools.
    let accounts = Accounts::plan(&mut gcp, planner, SERVICES, accounts!(spec), ACCOUNT_NAMES);
    let addons = Addons {
        gcs_fuse: true,
        horizontal_pod_autoscaling: true,
        http_load_balancing: spec.proxy.expose.unwrap_or(PROXY_EXPOSURE) != Exposure::Cluster,
        // Load tests on this cluster (and serving dashboards) scrape with it.
        managed_prometheus: true,
    };
    // A borrowed or existing cluster keeps its system pool; the Saxml pools are this
    // blueprint's wherever it runs.
    let system_pool = CpuPoolDefaults {
        name: "system-pool",
        machine_type: "n1-standard-8",
        disk_size_gb: Some(200),
        labels: &[],
        ..SYSTEM_POOL
    };
    let cluster = site.cluster(
        &mut gcp,
        planner,
        addons,
        &accounts.nodes,
        Some(system_pool),
    )?;
    // Each Saxml role on a pool of its own, labelled and tainted with its key ([`role_pool`]):
    // the admin server's, the proxies' and the converter's, sized for the model.
    // The converter's boot disk gives its scratch request as allocatable ephemeral storage
    // (GKE reserves part of every boot disk), beside the node's own 100 GiB.
    let (converter_machine, converter_disk) = model.map_or(("n2-highmem-16", 200), |m| {
        (
            m.converter_machine,
            crate::gcp::boot_disk_for_ephemeral(m.converter_scratch_gb)
                .max(m.converter_scratch_gb + 100),
        )
    });
    let mut pools = BTreeMap::new();
    for (role, pool_spec) in [
        ("admin", &spec.pools.admin),
        ("proxy", &spec.pools.proxy),
        ("auxiliary", &spec.pools.auxiliary),
    ] {
        let (scale, machine_type, disk) = match role {
            "admin" => (Scale::Fixed { nodes: 1 }, "n1-standard-8", 100),
            "proxy" => (Scale::Autoscaling { min: 1, max: 3 }, "n1-standard-8", 100),
            _ => (
                Scale::Autoscaling { min: 0, max: 1 },
                converter_machine,
                converter_disk,
            ),
        };
        let defaults = CpuPoolDefaults {
            name: &format!("saxml-{role}-pool"),
            field: &format!("spec.pools.{role}"),
            machine_type,
            scale,
            disk_size_gb: Some(disk),
            labels: &[],
            taints: &[],
        };
        let key = format!("saxml-{role}-node-pool");
        let on = (&cluster, &accounts.nodes);
        role_pool((&mut gcp, planner), on, pool_spec, &key, defaults);
        pools.insert(role, key);
    }
    accounts.bind(
        &mut gcp,
        &cluster,
        (&namespace, &kubernetes_service_account),
        &[],
    );
    let [admin_bucket, checkpoint_bucket] = [
        (&spec.buckets.admin, "admin", "admin"),
        (&spec.buckets.checkpoints, "checkpoints", "models"),
    ]
    .map(|(bucket, field, suffix)| {
        let default = format!("{}-{name}-{suffix}", spec.project);
        let default = crate::names::shortened(&default, "", 63);
        gcp.bucket(planner, bucket, &format!("spec.buckets.{field}"), &default)
    });
    // The admin server and model servers keep Sax's state in the admin bucket; model
    // servers read checkpoints; the converter writes them.
    for (bucket, role) in [
        (&admin_bucket, "roles/storage.objectUser"),
        (&admin_bucket, "roles/storage.legacyBucketReader"),
        (&checkpoint_bucket, "roles/storage.objectUser"),
        (&checkpoint_bucket, "roles/storage.legacyBucketReader"),
    ] {
        gcp.bucket_role(bucket, &accounts.workload, role);
    }
    let registry = gcp.registry(
        planner,
        &spec.registry,
        "spec.registry",
        "Saxml and checkpoint-converter images",
    );
    // Load tests of this blueprint publish here ([`Exports::metrics_topic`]); each grants
    // its own publisher.
    gcp.metrics_sink(
        planner,
        &spec.performance_testing,
        "spec.performanceTesting",
        true,
        spec.project_number.as_deref(),
    );

    let tpu = tpu?;
    let model = model?;
    let serving_config = serving_config?;
    if planner.has_errors() {
        return None;
    }
    accelerator::check_obtainable(planner, &tpu);
    gcp.slice_pools(
        &cluster,
        &tpu,
        replicas,
        false,
        &accounts.nodes,
        &pool_labels(&name),
    );

    let model_id = format!("/sax/{cell}/{}", model.name);
    let pax_checkpoint = format!("{}/{}/pax", checkpoint_bucket.url(), model.name);
    let converter = spec.converter.enabled.unwrap_or(true).then(|| {
        let image = spec.converter.image.clone().unwrap_or_else(|| {
            let default = models::release_tag("model-server");
            let tag = tag_of(&images.model_server).unwrap_or(default);
            format!("{}/checkpoint-converter:{tag}", registry.url)
        });
        planner.check_image("spec.converter.image", &image);
        ConverterPlan {
            image,
            size: model.converter_size,
            memory: model.converter_memory,
            scratch: format!("{}Gi", model.converter_scratch_gb),
            meta_checkpoint: spec
                .model
                .meta_checkpoint
                .clone()
                .unwrap_or_else(|| format!("{}/{}/meta", checkpoint_bucket.url(), model.name)),
            pax_checkpoint: pax_checkpoint.clone(),
        }
    });
    if let Some(checkpoint) = &spec.model.meta_checkpoint
        && !checkpoint.starts_with("gs://")
    {
        let d = planner.error(
            gcp::rule::CONFLICT,
            "spec.model.metaCheckpoint",
            "the Meta checkpoint is read from Cloud Storage",
        );
        d.expected = Some("`gs://<bucket>/<folder>`".into());
    }
    let (min, max, cpu_utilization) = spec.proxy.autoscaling.map_or((1, 3, 70), |a| {
        (
            a.min_replicas,
            a.max_replicas,
            a.cpu_utilization.unwrap_or(70),
        )
    });
    if min == 0 || min > max || max > 1_000 {
        let d = planner.error(
            gcp::rule::NODE_POOL_SIZE,
            "spec.proxy.autoscaling",
            format!("proxy autoscaling from {min} to {max} pods cannot work"),
        );
        d.expected = Some("`1 ≤ minReplicas ≤ maxReplicas ≤ 1000`".into());
    }
    if !(1..=100).contains(&cpu_utilization) {
        let d = planner.error(
            gcp::rule::NODE_POOL_SIZE,
            "spec.proxy.autoscaling.cpuUtilization",
            format!("a CPU utilisation target of {cpu_utilization}% cannot work"),
        );
        d.expected = Some("a percentage from 1 to 100".into());
    }
    if planner.has_errors() {
        return None;
    }
    let node_selector = tpu_node_selector(&tpu, &name);
    let platform_chip = tpu
        .family
        .and_then(models::platform_chip)
        .unwrap_or("tpuv5e");
    Some(Plan {
        infra: gcp.finish(),
        workload: Workload {
            admin_bucket: admin_bucket.name,
            model: ModelPlan {
                id: model_id,
                serving_config,
                checkpoint: format!("{pax_checkpoint}/checkpoint_00000000"),
                replicas,
            },
            converter,
            proxy: ProxyPlan {
                service: proxy_service(&name),
                min,
                max,
                cpu_utilization,
                expose: spec.proxy.expose.unwrap_or(PROXY_EXPOSURE),
            },
            pools,
            workload_service_account: accounts.workload.email,
            platform_chip,
            node_selector,
            images,
            tpu,
            cell,
            namespace,
            kubernetes_service_account,
            name,
        },
    })
}

/// Sax names: a lowercase letter, then lowercase letters, digits, `-` and `_`.
fn check_sax_name(name: &str) -> Result<(), String> {
    let valid = name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if valid {
        Ok(())
    } else {
        Err("Sax names start with a lowercase letter, then letters, digits, `-` or `_`".into())
    }
}
