//! Planning a `SaxServing` blueprint: the shared site recipe, the model and its serving
//! configuration, the Saxml pools, buckets and proxy, checked.

use std::collections::BTreeMap;

use super::TypedKind;
use super::serving::serving_config;
use super::spec::Spec;
use super::templates::{
    ConverterPlan, Identity, LoadBalancerPlan, ModelPlan, Plan, ProxyPlan, ResolvedImages, Workload,
};
use super::{SaxServing, models, rule};
use crate::accelerator::{self, TpuSupport};
use crate::catalog::TpuFamily;
use crate::gcp::spec::ServiceAccountSpec;
use crate::gcp::{self, AccountHandle, Addons, CpuPoolDefaults, Gcp, Scale};
use crate::overlay::role_pool::role_pool;
use crate::overlay::site::{
    BUCKET_USER_ROLES, Location, NODE_PROJECT_ROLES, SYSTEM_POOL, Site, pool_labels,
    tpu_node_selector,
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
/// Read objects (and the bucket's metadata) of a bucket.
const BUCKET_READER: &[&str] = &[
    "roles/storage.legacyBucketReader",
    "roles/storage.objectViewer",
];
/// Read and write objects of a bucket.
const BUCKET_WRITER: &[&str] = BUCKET_USER_ROLES;
/// Envoy, distroless (no shell, user 65532): the layer that forwards generation only.
const GENERATE_PROXY_IMAGE: &str = "envoyproxy/envoy:distroless-v1.34.1";

/// A Saxml component with an identity of its own: its key in the template, its
/// `spec.serviceAccounts` field, the label of its Google account (`<blueprint>-<label>`) and
/// its Kubernetes service account (`<prefix>-<suffix>`), its display name, and what it does
/// with the admin bucket and the checkpoints bucket. Separate identities keep each to its
/// data: only the converter writes checkpoints, only the admin server writes the cell's state.
struct Component {
    key: &'static str,
    field: &'static str,
    label: &'static str,
    suffix: &'static str,
    display: &'static str,
    admin_bucket: &'static [&'static str],
    checkpoints: &'static [&'static str],
}

const COMPONENTS: [Component; 5] = [
    Component {
        key: "admin",
        field: "admin",
        label: "admin",
        suffix: "admin",
        display: "Saxml admin server",
        admin_bucket: BUCKET_WRITER,
        checkpoints: &[],
    },
    // Model servers find the admin server through the admin bucket and load checkpoints.
    Component {
        key: "model_server",
        field: "modelServer",
        label: "model",
        suffix: "model-server",
        display: "Saxml model servers",
        admin_bucket: BUCKET_READER,
        checkpoints: BUCKET_READER,
    },
    // The proxy and saxutil find the admin server through the admin bucket; publishing is a
    // call to the admin server, which writes the cell's state itself.
    Component {
        key: "proxy",
        field: "proxy",
        label: "proxy",
        suffix: "proxy",
        display: "Saxml HTTP proxy",
        admin_bucket: BUCKET_READER,
        checkpoints: &[],
    },
    Component {
        key: "util",
        field: "util",
        label: "util",
        suffix: "util",
        display: "Saxml saxutil and publishing",
        admin_bucket: BUCKET_READER,
        checkpoints: &[],
    },
    // It reads the Meta checkpoint and writes the Pax one, both in the checkpoints bucket.
    Component {
        key: "converter",
        field: "converter",
        label: "convert",
        suffix: "converter",
        display: "Saxml checkpoint converter",
        admin_bucket: &[],
        checkpoints: BUCKET_WRITER,
    },
];

/// The spec of `component`'s account.
fn account_spec<'s>(spec: &'s Spec, component: &Component) -> &'s ServiceAccountSpec {
    let accounts = &spec.service_accounts;
    match component.key {
        "admin" => &accounts.admin,
        "model_server" => &accounts.model_server,
        "proxy" => &accounts.proxy,
        "util" => &accounts.util,
        _ => &accounts.converter,
    }
}

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
    for api in SERVICES {
        gcp.api(api);
    }
    let nodes = gcp.service_account(
        planner,
        &spec.service_accounts.nodes,
        "spec.serviceAccounts.nodes",
        "node",
        "GKE Saxml nodes",
    );
    let converter_enabled = spec.converter.enabled.unwrap_or(true);
    let accounts: Vec<(&Component, AccountHandle)> = COMPONENTS
        .iter()
        .filter(|component| component.key != "converter" || converter_enabled)
        .map(|component| {
            let field = format!("spec.serviceAccounts.{}", component.field);
            let account_spec = account_spec(spec, component);
            let account =
                gcp.service_account(planner, account_spec, &field, component.label, component.display);
            planner.check_name(
                gcp::rule::KUBERNETES_NAME,
                "spec.kubernetesServiceAccount",
                &format!("{kubernetes_service_account}-{}", component.suffix),
                crate::names::check_dns_label,
            );
            if account.id == nodes.id {
                planner.error(
                    gcp::rule::SERVICE_ACCOUNT_ID,
                    &format!("{field}.name"),
                    "the node and workload service accounts must differ: pods would act as the nodes",
                );
            }
            (component, account)
        })
        .collect();
    let load_balancer = spec
        .proxy
        .load_balancer
        .as_ref()
        .and_then(|lb| check_source_ranges(planner, &lb.source_ranges));
    let addons = Addons {
        gcs_fuse: true,
        horizontal_pod_autoscaling: true,
        // The proxy's load balancer is a Service of type LoadBalancer (layer 4), which needs
        // no GKE Ingress controller.
        http_load_balancing: false,
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
    let cluster = site.cluster(&mut gcp, planner, addons, &nodes, Some(system_pool))?;
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
        let on = (&cluster, &nodes);
        role_pool((&mut gcp, planner), on, pool_spec, &key, defaults);
        pools.insert(role, key);
    }
    for role in NODE_PROJECT_ROLES {
        gcp.project_role(&nodes, role);
    }
    let [admin_bucket, checkpoint_bucket] = [
        (&spec.buckets.admin, "admin", "admin"),
        (&spec.buckets.checkpoints, "checkpoints", "models"),
    ]
    .map(|(bucket, field, suffix)| {
        let default = format!("{}-{name}-{suffix}", spec.project);
        let default = crate::names::shortened(&default, "", 63);
        gcp.bucket(planner, bucket, &format!("spec.buckets.{field}"), &default)
    });
    let identities = bind_components(
        &mut gcp,
        &cluster,
        &accounts,
        (&namespace, &kubernetes_service_account),
        (&admin_bucket, &checkpoint_bucket),
    );
    let registry = gcp.registry(
        planner,
        &spec.registry,
        "spec.registry",
        "Saxml and checkpoint-converter images",
    );
    gcp.registry_reader(&registry, &nodes);
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
    gcp.slice_pools(&cluster, &tpu, replicas, false, &nodes, &pool_labels(&name));

    let model_id = format!("/sax/{cell}/{}", model.name);
    let pax_checkpoint = format!("{}/{}/pax", checkpoint_bucket.url(), model.name);
    let converter = converter_enabled.then(|| {
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
                load_balancer: load_balancer.map(|source_ranges| LoadBalancerPlan {
                    service: format!("{name}-generate"),
                    image: GENERATE_PROXY_IMAGE,
                    source_ranges,
                }),
            },
            pools,
            identities,
            platform_chip,
            node_selector,
            images,
            tpu,
            cell,
            namespace,
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

/// Lets each component's Kubernetes service account (`<prefix>-<suffix>`) act as its own
/// Google account, and grants that account its roles on the two buckets, nothing project-wide.
fn bind_components(
    gcp: &mut Gcp,
    cluster: &gcp::ClusterHandle,
    accounts: &[(&Component, AccountHandle)],
    (namespace, prefix): (&str, &str),
    (admin_bucket, checkpoints): (&gcp::BucketHandle, &gcp::BucketHandle),
) -> BTreeMap<&'static str, Identity> {
    let mut identities = BTreeMap::new();
    for (component, account) in accounts {
        let kubernetes_service_account = format!("{prefix}-{}", component.suffix);
        gcp.workload_identity(account, cluster, namespace, &kubernetes_service_account);
        for (bucket, roles) in [
            (admin_bucket, component.admin_bucket),
            (checkpoints, component.checkpoints),
        ] {
            for role in roles {
                gcp.bucket_role(bucket, account, role);
            }
        }
        identities.insert(
            component.key,
            Identity {
                kubernetes_service_account,
                email: account.email.clone(),
            },
        );
    }
    identities
}

/// The load balancer's client networks: at least one, each a CIDR range, none that lets every
/// address in (a load balancer open to all needs no list, and is what this field prevents).
fn check_source_ranges(planner: &mut Planner<'_>, ranges: &[String]) -> Option<Vec<String>> {
    let field = "spec.proxy.loadBalancer.sourceRanges";
    if ranges.is_empty() {
        let d = planner.error(
            crate::plan::rule::INGRESS_UNPROTECTED,
            field,
            "a load balancer without source ranges is reachable from the whole VPC and every network connected to it",
        );
        d.expected = Some("the client networks, e.g. `[10.20.0.0/16]`".into());
        d.fix = Some("list the networks of the clients, or remove `spec.proxy.loadBalancer` to keep the proxy in the cluster".into());
        return None;
    }
    let mut ok = true;
    for (index, range) in ranges.iter().enumerate() {
        let at = format!("{field}[{index}]");
        match range.parse::<ipnet::IpNet>() {
            Err(_) => {
                ok = false;
                let d = planner.error(
                    gcp::rule::NETWORK_CIDR,
                    &at,
                    format!("`{range}` is not a CIDR range"),
                );
                d.expected = Some("an address and a prefix length, e.g. `10.20.0.0/16`".into());
            }
            Ok(net) if net.prefix_len() == 0 => {
                ok = false;
                let d = planner.error(
                    crate::plan::rule::INGRESS_UNPROTECTED,
                    &at,
                    format!("`{range}` lets every address in"),
                );
                d.fix = Some("list the networks of the clients instead".into());
            }
            Ok(_) => {}
        }
    }
    ok.then(|| ranges.to_vec())
}
