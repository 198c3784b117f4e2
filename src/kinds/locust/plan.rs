//! Planning a `LocustBenchmark` blueprint: the load generator's GCP blocks on the target's
//! cluster and the load, into the typed plan the workload template reads.

use super::spec::{LoadSpec, Spec};
use super::target;
use super::templates::{LoadPlan, Plan, ResolvedImages, Workload};
use crate::gcp::{self, Addons, CpuPoolDefaults, Scale, TaintSpec};
use crate::kinds::Exposure;
use crate::names::check_dns_label;
use crate::overlay::secret_ref::SecretStanza;
use crate::overlay::site::{Location, NODE_PROJECT_ROLES, Site};
use crate::overlay::{Planned, client};
use crate::plan::Planner;
use crate::plan::checks::{check_gcs_object, check_hugging_face_id, check_ranges};
use crate::plan::image::image_or;

/// `us-central1` when neither the spec nor the target's cluster says; a new cluster is
/// regional.
pub(super) const LOCATION: Location<'static> = Location::regional("us-central1");

/// Label and taint of the load generator's pool; the value is the blueprint name, so that
/// load tests sharing a cluster keep to their own pools.
const POOL_KEY: &str = "aiml.dev/load-generator";

pub(super) fn plan(spec: &Spec, planner: &mut Planner<'_>) -> Option<Plan> {
    let namespace = spec
        .namespace
        .clone()
        .unwrap_or_else(|| planner.name().to_string());
    planner.check_name(
        gcp::rule::KUBERNETES_NAME,
        "spec.namespace",
        &namespace,
        check_dns_label,
    );
    let target = target::resolve_target(spec, planner, &namespace);
    // A target blueprint on another's cluster: the load generator joins that cluster.
    let target_blueprint = spec.target.blueprint.as_deref();
    let cluster_spec = client::joined_cluster(
        planner,
        &spec.cluster,
        target_blueprint,
        "the load generator",
    );
    let (site, mut gcp) = Site::open(planner, spec.stanzas(&cluster_spec), &LOCATION);
    let load = load_plan(&spec.load, planner);
    let prompts = check_gcs_object(planner, "spec.prompts", &spec.prompts);
    // A target blueprint that is not there has its finding; its cluster would repeat it.
    if client::target_missing(planner, &spec.cluster, target_blueprint) {
        return None;
    }

    for api in [
        "container.googleapis.com",
        "storage.googleapis.com",
        "monitoring.googleapis.com",
        "artifactregistry.googleapis.com",
    ] {
        gcp.api(api);
    }
    let accounts = &spec.service_accounts;
    let [node_account, load_account, runner_account] = [
        (&accounts.nodes, "nodes", "node", "GKE load generator nodes"),
        (&accounts.load, "load", "load", "Locust load generator"),
        (
            &accounts.runner,
            "runner",
            "runner",
            "Locust benchmark runner",
        ),
    ]
    .map(|(written, field, suffix, display)| {
        let field = format!("spec.serviceAccounts.{field}");
        gcp.service_account(planner, written, &field, suffix, display)
    });
    let addons = Addons {
        gcs_fuse: false,
        horizontal_pod_autoscaling: true,
        http_load_balancing: true,
        managed_prometheus: true,
    };
    let cluster = site.cluster(&mut gcp, planner, addons, &node_account, None)?;
    // Master (2 CPUs), runner and one CPU per worker fit 6 to an 8-CPU node; one node more
    // lets a rollout start new pods before the old ones stop.
    let max_nodes = (load.workers + 3).div_ceil(6) + 1;
    let pool_labels = [(POOL_KEY, site.name.as_str())];
    let pool_taints = [TaintSpec {
        key: POOL_KEY,
        value: site.name.as_str(),
    }];
    gcp.cpu_pool(
        planner,
        &cluster,
        &spec.pool,
        CpuPoolDefaults {
            name: "load-generator-pool",
            field: "spec.pool",
            machine_type: "e2-standard-8",
            scale: Scale::Autoscaling {
                min: 1,
                max: max_nodes,
            },
            disk_size_gb: Some(100),
            labels: &pool_labels,
            taints: &pool_taints,
        },
        &node_account,
    );
    for role in NODE_PROJECT_ROLES {
        gcp.project_role(&node_account, role);
    }
    let load_ksa = "locust";
    let runner_ksa = "locust-runner";
    gcp.workload_identity(&load_account, &cluster, &namespace, load_ksa);
    gcp.workload_identity(&runner_account, &cluster, &namespace, runner_ksa);

    // Workers read the prompts; the runner writes results and reads Cloud Monitoring.
    if let Some((bucket, _)) = &prompts {
        client::read_bucket(&mut gcp, planner, "spec.prompts", bucket, &load_account);
    }
    let output = gcp.bucket(
        planner,
        &spec.output.bucket,
        "spec.output.bucket",
        &site.bucket_name("-results"),
    );
    for role in [
        "roles/storage.objectUser",
        "roles/storage.legacyBucketReader",
    ] {
        gcp.bucket_role(&output, &runner_account, role);
    }
    gcp.project_role(&runner_account, "roles/monitoring.viewer");

    // The Hugging Face token the tokenizer download needs: referenced, never held.
    let token = spec.hugging_face_token.as_ref().and_then(|token| {
        let stanza = SecretStanza {
            field: "spec.huggingFaceToken",
            what: "the token",
            example: "hf-token",
            secret: token.secret.as_ref(),
            secret_manager: token.secret_manager.as_ref(),
        };
        stanza.plan(planner, &mut gcp, &spec.project, &load_account)
    });
    // Request metrics go to this blueprint's sink, else to the target blueprint's.
    let pubsub_topic = client::metrics_topic(
        &mut gcp,
        planner,
        (&spec.metrics_sink, "spec.metricsSink"),
        (&spec.project, spec.project_number.as_deref()),
        target.as_ref().and_then(|t| t.metrics_topic.clone()),
        &load_account,
    );
    let registry = gcp.registry(
        planner,
        &spec.registry,
        "spec.registry",
        "Locust and benchmark-runner images",
    );
    gcp.registry_reader(&registry, &node_account);
    let written = &spec.images;
    let images = ResolvedImages {
        locust: image_or(
            planner,
            "spec.images.locust",
            written.locust.as_deref(),
            || format!("{}/locust:2.32.4", registry.url),
        ),
        runner: image_or(
            planner,
            "spec.images.runner",
            written.runner.as_deref(),
            || format!("{}/locust-runner:8676d66", registry.url),
        ),
        exporter: image_or(
            planner,
            "spec.images.exporter",
            written.exporter.as_deref(),
            || "containersol/locust_exporter:v0.5.0".into(),
        ),
    };
    if let Some(tokenizer) = &spec.tokenizer {
        check_hugging_face_id(planner, "spec.tokenizer", tokenizer);
    }
    let target = target?;
    let (bucket, object) = prompts?;
    if planner.has_errors() {
        return None;
    }
    Some(Planned {
        infra: gcp.finish(),
        workload: Workload {
            load_service_account: load_ksa.into(),
            load_account_email: load_account.email,
            runner_service_account: runner_ksa.into(),
            runner_account_email: runner_account.email,
            pool_key: POOL_KEY,
            target,
            load,
            prompts: format!("gs://{bucket}/{object}"),
            tokenizer: spec.tokenizer.clone().unwrap_or_default(),
            token,
            pubsub_topic,
            output_bucket: output.name,
            project: spec.project.clone(),
            images,
            web_ui: spec.expose.web_ui.unwrap_or(Exposure::Cluster),
            runner: spec.expose.runner.unwrap_or(Exposure::Cluster),
            namespace,
            name: site.name,
        },
    })
}

fn load_plan(spec: &LoadSpec, planner: &mut Planner<'_>) -> LoadPlan {
    let load = LoadPlan {
        users: spec.users.unwrap_or(1),
        spawn_rate: spec.spawn_rate.unwrap_or(5),
        duration: spec.duration.unwrap_or(120),
        workers: spec.workers.unwrap_or(1),
        stop_timeout: spec.stop_timeout.unwrap_or(0),
        request_timeout: spec.request_timeout.unwrap_or(600),
        max_prompts: spec.max_prompts.unwrap_or(1_000),
        max_prompt_length: spec.max_prompt_length.unwrap_or(1_024),
        max_output_length: spec.max_output_length.unwrap_or(256),
        best_of: spec.best_of.unwrap_or(1),
        use_beam_search: spec.use_beam_search.unwrap_or(false),
    };
    check_ranges(
        planner,
        "spec.load",
        &[
            ("users", load.users, 1, 100_000),
            ("spawnRate", load.spawn_rate, 1, 10_000),
            ("duration", load.duration, 1, 7 * 24 * 3_600),
            ("workers", load.workers, 1, 1_000),
            ("stopTimeout", load.stop_timeout, 0, 24 * 3_600),
            ("requestTimeout", load.request_timeout, 1, 24 * 3_600),
            ("maxPrompts", load.max_prompts, 1, 10_000_000),
            ("maxPromptLength", load.max_prompt_length, 1, 1_000_000),
            ("maxOutputLength", load.max_output_length, 1, 1_000_000),
            ("bestOf", load.best_of, 1, 64),
        ],
    );
    if load.users < load.workers && spec.users.is_some() {
        let d = planner.warning(
            gcp::rule::CONFLICT,
            "spec.load.workers",
            format!(
                "{} workers for {} users: Locust leaves the extra workers idle",
                load.workers, load.users
            ),
        );
        d.fix = Some("use at most as many workers as users".into());
    }
    load
}
