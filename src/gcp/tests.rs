//! Tests of the building blocks, through the production template: one of every block, GPU
//! pool sizing, ranges, the Gateway API's needs and locations.

use std::collections::BTreeMap;

use super::iam::account_project;
use super::spec::{
    AuthorizedNetworkSpec, AutoscalingSpec, BucketSpec, ClusterSpec, ConfigConnectorSpec,
    DatasetSpec, ExclusionScope, GpuDriverVersion, GpuPoolSpec, MaintenanceExclusionSpec,
    MaintenanceSpec, MaintenanceWindowSpec, MetricsSinkSpec, NetworkSpec, RegistrySpec,
    ServiceAccountSpec, TopicSpec,
};
use super::*;
use crate::accelerator::GpuPlan;
use crate::blueprint::Blueprint;
use crate::diagnostic::Diagnostic;
use crate::kinds::Registry;
use crate::plan::Repository;

#[test]
fn an_existing_account_is_found_in_the_project_its_email_names() {
    assert_eq!(
        account_project("trainer@ml-identities.iam.gserviceaccount.com"),
        Some("ml-identities")
    );
    assert_eq!(
        account_project("123-compute@developer.gserviceaccount.com"),
        None
    );
    assert_eq!(account_project("not-an-email"), None);
}

const BLUEPRINT: &str = "apiVersion: aiml.dev/v1alpha1\nkind: MultisliceTraining\nmetadata: {name: blocks}\nspec:\n  project: my-project\n  tpu: {type: v4-8}\n";

/// Plans one of every building block with `plan` and renders it with the production
/// template; returns the YAML and the findings.
fn with_planner(plan: impl FnOnce(&mut Planner<'_>, &mut Gcp)) -> (String, Vec<String>) {
    let (text, findings) = planned(plan);
    let findings = findings
        .into_iter()
        .map(|d| {
            format!(
                "{}: {} ({})",
                d.rule,
                d.message,
                d.field.unwrap_or_default()
            )
        })
        .collect();
    (text, findings)
}

/// [`with_planner`], with the findings whole.
fn planned(plan: impl FnOnce(&mut Planner<'_>, &mut Gcp)) -> (String, Vec<Diagnostic>) {
    planned_with(false, plan)
}

/// [`planned`] for a blueprint that does (or does not) allow teardown.
fn planned_with(
    allow_teardown: bool,
    plan: impl FnOnce(&mut Planner<'_>, &mut Gcp),
) -> (String, Vec<Diagnostic>) {
    let documents = crate::yaml::parse_documents(BLUEPRINT).unwrap();
    let registry = Registry::builtin();
    let blueprint = Blueprint::from_node("blueprints/b.yaml", &documents[0], &registry).unwrap();
    let repository = Repository::new();
    let mut planner = Planner::new(&blueprint, &repository);
    let config_connector = ConfigConnectorSpec::default();
    let mut gcp = Gcp::new(
        &mut planner,
        SiteSpec {
            project: "my-project",
            region: "us-central1",
            zone: "us-central1-a",
            config_connector: &config_connector,
            allow_teardown,
        },
    );
    plan(&mut planner, &mut gcp);
    let infra = gcp.finish();
    #[derive(serde::Serialize)]
    struct Context {
        infra: Infrastructure,
    }
    let text = crate::overlay::render("gcp/config-connector.yaml", &Context { infra }).unwrap();
    (text, planner.finish())
}

/// A zonal cluster with no add-ons.
fn zonal() -> ClusterOptions<'static> {
    ClusterOptions {
        default_location: "us-central1-a",
        addons: Addons::default(),
    }
}

/// Plans the nodes' service account and a cluster from `spec` and `network`, as a kind does.
fn nodes_and_cluster(
    planner: &mut Planner<'_>,
    gcp: &mut Gcp,
    spec: &ClusterSpec,
    network: &NetworkSpec,
    options: ClusterOptions<'_>,
) -> (AccountHandle, ClusterHandle) {
    let nodes = gcp.service_account(
        planner,
        &ServiceAccountSpec::default(),
        "spec.a",
        "node",
        "Nodes",
    );
    let cluster = gcp.cluster(planner, spec, network, options, &nodes);
    (nodes, cluster.expect("a cluster"))
}

/// Plans one of every building block: a regional cluster with a Gateway API, a GPU pool, a
/// bucket, a registry, a topic with a publisher, a dataset, a table and a subscription.
fn every_block(planner: &mut Planner<'_>, gcp: &mut Gcp) {
    let options = ClusterOptions {
        default_location: "us-central1",
        addons: Addons {
            managed_prometheus: true,
            horizontal_pod_autoscaling: true,
            ..Addons::default()
        },
    };
    let (spec, network) = (ClusterSpec::default(), NetworkSpec::default());
    let (nodes, cluster) = nodes_and_cluster(planner, gcp, &spec, &network, options);
    assert!(gcp.gateway_api(planner, &cluster, &NetworkSpec::default(), true));
    let gpu = GpuPlan {
        accelerator: "nvidia-tesla-t4",
        count: 1,
        machine_type: "n1-standard-4".into(),
        attached: true,
    };
    gcp.gpu_pool(
        &cluster,
        "gpu-pool",
        &gpu,
        Scale::Autoscaling { min: 1, max: 3 },
        &nodes,
    );
    let bucket = gcp.bucket(
        planner,
        &BucketSpec::default(),
        "spec.bucket",
        "my-project-models",
    );
    gcp.bucket_role(&bucket, &nodes, "roles/storage.objectViewer");
    gcp.registry(planner, &RegistrySpec::default(), "spec.registry", "Images");
    let topic = gcp.topic(
        planner,
        &TopicSpec::default(),
        "spec.topic",
        "metrics",
        Some("syntax = \"proto3\";\nmessage Metrics { string test_id = 1; }\n"),
    );
    let publisher = gcp.service_account(
        planner,
        &ServiceAccountSpec::default(),
        "spec.b",
        "wi",
        "Workloads",
    );
    gcp.grant(&topic.iam_target(), &publisher, "roles/pubsub.publisher");
    let dataset = gcp.dataset(
        planner,
        &DatasetSpec::default(),
        "spec.dataset",
        "load_tests",
    );
    gcp.table(
        &dataset,
        "requests",
        vec![Column {
            name: "latency".into(),
            column_type: "FLOAT".into(),
            mode: "NULLABLE".into(),
        }],
    );
    gcp.bigquery_subscription("metrics-to-bigquery", &topic, &dataset, "requests");
    let table = IamTarget::new(
        "bigquery",
        "BigQueryTable",
        Ref::name("load-tests-requests"),
        "requests",
        Some(gcp.dependency("bigquery", "BigQueryTable", "load-tests-requests")),
    );
    gcp.grant_to_principal(
        &table,
        "serviceAccount:service-123@gcp-sa-pubsub.iam.gserviceaccount.com",
        "pubsub-agent",
        "roles/bigquery.dataEditor",
        [],
    );
}

/// Each rendered object as `Kind/name` with its deletion policy and teardown marker.
fn protection(text: &str) -> Vec<(String, Option<String>, Option<String>)> {
    let annotation = |document: &crate::yaml::Node, key: &str| {
        document
            .at(&["metadata", "annotations", key])
            .and_then(crate::yaml::Node::as_str)
            .map(str::to_string)
    };
    crate::yaml::parse_documents(text)
        .unwrap()
        .iter()
        .map(|document| {
            let at = |path: &[&str]| document.at(path).and_then(crate::yaml::Node::as_str);
            (
                format!(
                    "{}/{}",
                    at(&["kind"]).unwrap_or_default(),
                    at(&["metadata", "name"]).unwrap_or_default()
                ),
                annotation(document, DELETION_POLICY),
                annotation(document, TEARDOWN_ANNOTATION),
            )
        })
        .collect()
}

#[test]
fn what_holds_capacity_or_data_is_abandoned_unless_teardown_is_allowed() {
    let kept = |object: &str| {
        let kind = object.split('/').next().unwrap();
        let row = PROTECTED.iter().find(|row| row.kind == kind);
        match row.map(|row| row.scope) {
            Some(Scope::Always) => true,
            // The node account (`blocks-node`) and the roles granted to it; not the workload
            // account, nor the Pub/Sub agent's grant.
            Some(Scope::NodeAccount) => object.contains("blocks-node"),
            None => false,
        }
    };
    let (text, findings) = planned_with(false, every_block);
    assert!(findings.is_empty(), "{findings:?}");
    let objects = protection(&text);
    for (object, policy, marker) in &objects {
        let expected = (kept(object) || object.starts_with("Service/")).then(|| "abandon".into());
        assert_eq!(policy, &expected, "{object}");
        assert_eq!(marker, &None, "{object}");
    }
    for protected in [
        "ContainerCluster/blocks",
        "ContainerNodePool/blocks-gpu-pool",
        "ComputeNetwork/blocks-network",
        "ComputeSubnetwork/blocks-proxy-subnet",
        "ComputeRouterNAT/blocks-nat",
        "IAMServiceAccount/blocks-node",
        "IAMPolicyMember/blocks-node-my-project-models-storage-objectviewer",
        "StorageBucket/my-project-models",
        "BigQueryTable/load-tests-requests",
    ] {
        assert!(
            objects
                .iter()
                .any(|(o, policy, _)| o == protected && policy.is_some()),
            "{protected}: {objects:#?}"
        );
    }
    for loose in ["IAMServiceAccount/blocks-wi", "PubSubTopic/metrics"] {
        assert!(
            objects
                .iter()
                .any(|(o, policy, _)| o == loose && policy.is_none()),
            "{loose}: {objects:#?}"
        );
    }
    // Allowed: the same objects carry the marker instead; enabled APIs stay abandoned.
    let (text, _) = planned_with(true, every_block);
    for (object, policy, marker) in protection(&text) {
        let service = object.starts_with("Service/");
        assert_eq!(policy.is_some(), service, "{object}");
        assert_eq!(marker.is_some(), kept(&object), "{object}");
        if let Some(marker) = marker {
            assert_eq!(marker, "true");
        }
    }
}

#[test]
fn every_block_renders_through_its_macro() {
    let (text, findings) = with_planner(every_block);
    assert!(findings.is_empty(), "{findings:?}");
    let documents = crate::yaml::parse_documents(&text).unwrap();
    // Every macro's output is what Config Connector accepts.
    let schemas = crate::schema::Schemas::embedded();
    let options = crate::schema::CheckOptions { strict: true };
    for document in &documents {
        let object = crate::validate::Object::from_node("config-connector.yaml", document)
            .expect("an object");
        let problems = schemas.check_with_source(&object, &text, &options);
        assert!(problems.is_empty(), "{}: {problems:#?}", object.id);
    }
    let mut kinds: Vec<&str> = documents
        .iter()
        .filter_map(|d| d.get("kind").and_then(crate::yaml::Node::as_str))
        .collect();
    kinds.sort_unstable();
    kinds.dedup();
    assert_eq!(
        kinds,
        [
            "ArtifactRegistryRepository",
            "BigQueryDataset",
            "BigQueryTable",
            "ComputeNetwork",
            "ComputeRouter",
            "ComputeRouterNAT",
            "ComputeSubnetwork",
            "ContainerCluster",
            "ContainerNodePool",
            "IAMPolicyMember",
            "IAMServiceAccount",
            "PubSubSchema",
            "PubSubSubscription",
            "PubSubTopic",
            "Service",
            "StorageBucket",
        ]
    );
    insta::assert_snapshot!(text);
}

#[test]
fn gpu_pools_are_sized_from_their_spec_and_declare_the_driver() {
    let mut handles = Vec::new();
    let (text, findings) = with_planner(|planner, gcp| {
        let (spec, network) = (ClusterSpec::default(), NetworkSpec::default());
        let (nodes, cluster) = nodes_and_cluster(planner, gcp, &spec, &network, zonal());
        // L4s are built into G2 machine types; the pool still declares them for the driver.
        let l4 = GpuPlan {
            accelerator: "nvidia-l4",
            count: 2,
            machine_type: "g2-standard-24".into(),
            attached: false,
        };
        let defaults = GpuPoolDefaults {
            name: "gpu-pool",
            field: "spec.gpuPool",
            scale: Scale::Autoscaling { min: 1, max: 3 },
            disk_size_gb: Some(100),
            labels: BTreeMap::from([("aiml.dev/blueprint".into(), "blocks".into())]),
        };
        handles.push(gcp.sized_gpu_pool(
            planner,
            &cluster,
            &l4,
            &GpuPoolSpec {
                autoscaling: Some(AutoscalingSpec {
                    min_nodes: 0,
                    max_nodes: 4,
                }),
                driver_version: Some(GpuDriverVersion::Latest),
                spot: true,
                ..GpuPoolSpec::default()
            },
            &defaults,
            &nodes,
        ));
        handles.push(gcp.sized_gpu_pool(
            planner,
            &cluster,
            &l4,
            &GpuPoolSpec {
                name: Some("fixed".into()),
                node_count: Some(2),
                ..GpuPoolSpec::default()
            },
            &defaults,
            &nodes,
        ));
        // Bounds that cannot work, and a name GKE refuses, are findings.
        gcp.sized_gpu_pool(
            planner,
            &cluster,
            &l4,
            &GpuPoolSpec {
                name: Some("GPU".into()),
                autoscaling: Some(AutoscalingSpec {
                    min_nodes: 3,
                    max_nodes: 1,
                }),
                ..GpuPoolSpec::default()
            },
            &defaults,
            &nodes,
        );
    });
    assert_eq!(
        handles,
        [
            GpuPoolHandle {
                name: "gpu-pool".into(),
                min_nodes: 0,
                max_nodes: 4,
                gpus_per_node: 2,
            },
            GpuPoolHandle {
                name: "fixed".into(),
                min_nodes: 2,
                max_nodes: 2,
                gpus_per_node: 2,
            },
        ]
    );
    insta::assert_debug_snapshot!(findings, @r#"
    [
        "node-pool-size: autoscaling from 3 to 1 nodes cannot work (spec.gpuPool.autoscaling)",
        "gcp-resource-name: invalid name `GPU`: must start with a lowercase letter (spec.gpuPool.name)",
    ]
    "#);
    let pool = text
        .split("---\n")
        .find(|document| document.contains("resourceID: \"gpu-pool\""))
        .unwrap();
    insta::assert_snapshot!("gpu_pool_l4_spot_latest_driver", pool);
}

#[test]
fn ranges_with_host_bits_or_overlaps_are_findings() {
    let (_, findings) = with_planner(|planner, gcp| {
        let network = NetworkSpec {
            nodes_cidr: Some("10.0.0.1/20".into()),
            pods_cidr: Some("10.0.0.0/14".into()),
            services_cidr: Some("10.0.16.0/20".into()),
            ..NetworkSpec::default()
        };
        gcp.network(planner, &network);
    });
    insta::assert_debug_snapshot!(findings, @r#"
    [
        "network-cidr: `10.0.0.1/20` has host bits set (spec.network.nodesCidr)",
        "network-cidr: `10.0.16.0/20` overlaps `10.0.0.0/14` of `spec.network.podsCidr` (spec.network.servicesCidr)",
    ]
    "#);
}

/// Plans a new cluster (with `network`) and a Gateway API ingress on it; returns the
/// subnets' kinds and ranges, whether the cluster got the Gateway API, and the findings.
fn gateway_on(network: &NetworkSpec, internal: bool) -> (Vec<String>, bool, Vec<String>) {
    let mut planned = (Vec::new(), false);
    let (_, findings) = with_planner(|planner, gcp| {
        let (_, cluster) =
            nodes_and_cluster(planner, gcp, &ClusterSpec::default(), network, zonal());
        let ready = gcp.gateway_api(planner, &cluster, network, internal);
        assert_eq!(ready, !network.existing || !internal);
        let subnets = gcp
            .infra
            .subnetworks
            .iter()
            .map(|s| format!("{} {:?}", s.cidr, s.purpose))
            .collect();
        let plan = &gcp.infra.clusters[0];
        assert!(
            plan.addons.http_load_balancing,
            "the Gateway controller needs it"
        );
        planned = (subnets, plan.gateway_api);
    });
    (planned.0, planned.1, findings)
}

#[test]
fn gateway_api_enables_the_cluster_and_an_internal_one_gets_a_proxy_only_subnet() {
    let (subnets, enabled, findings) = gateway_on(&NetworkSpec::default(), true);
    assert!(enabled);
    assert!(findings.is_empty(), "{findings:?}");
    assert_eq!(subnets.len(), 2);
    assert_eq!(subnets[1], "10.129.16.0/23 ProxyOnly");
    // A global external load balancer needs no proxy-only subnet.
    let (subnets, enabled, _) = gateway_on(&NetworkSpec::default(), false);
    assert!(enabled);
    assert_eq!(subnets.len(), 1);
    // An existing VPC may have its region's one active proxy-only subnet already.
    let existing = NetworkSpec {
        existing: true,
        ..NetworkSpec::default()
    };
    let (subnets, enabled, _) = gateway_on(&existing, true);
    assert!(enabled);
    assert!(subnets.is_empty());
}

#[test]
fn proxy_only_ranges_are_checked() {
    // The default range collides with wider node ranges only when it is used.
    let wide = NetworkSpec {
        nodes_cidr: Some("10.129.0.0/16".into()),
        ..NetworkSpec::default()
    };
    let (_, _, external) = gateway_on(&wide, false);
    assert!(external.is_empty(), "{external:?}");
    let (_, _, internal) = gateway_on(&wide, true);
    insta::assert_debug_snapshot!(internal, @r#"
    [
        "network-cidr: the default proxy-only range `10.129.16.0/23` overlaps `10.129.0.0/16` (spec.network.proxyOnlyCidr)",
    ]
    "#);
    // A range written down is checked with the subnet's, and must hold the proxies.
    let given = NetworkSpec {
        proxy_only_cidr: Some("192.168.64.0/27".into()),
        ..NetworkSpec::default()
    };
    let (subnets, _, findings) = gateway_on(&given, true);
    assert_eq!(subnets[1], "192.168.64.0/27 ProxyOnly");
    insta::assert_debug_snapshot!(findings, @r#"
    [
        "network-cidr: `192.168.64.0/27` overlaps `192.168.64.0/18` of `spec.network.podsCidr` (spec.network.proxyOnlyCidr)",
        "network-cidr: `192.168.64.0/27` is too small for a proxy-only subnet (spec.network.proxyOnlyCidr)",
    ]
    "#);
}

#[test]
fn locations_are_checked() {
    let (_, findings) = with_planner(|planner, gcp| {
        let spec = ClusterSpec {
            location: Some("europe-west4".into()),
            ..ClusterSpec::default()
        };
        nodes_and_cluster(planner, gcp, &spec, &NetworkSpec::default(), zonal());
    });
    assert_eq!(
        findings,
        [
            "gcp-location: cluster location `europe-west4` is not in region `us-central1` (spec.cluster.location)"
        ]
    );
}

#[test]
fn what_an_existing_resource_keeps_or_a_location_gets_wrong_is_a_finding() {
    let (_, findings) = planned(|planner, gcp| {
        let network = NetworkSpec {
            existing: true,
            pods_cidr: Some("10.0.0.0/14".into()),
            proxy_only_cidr: Some("10.129.16.0/23".into()),
            ..NetworkSpec::default()
        };
        let spec = ClusterSpec {
            location: Some("us central".into()),
            ..ClusterSpec::default()
        };
        nodes_and_cluster(planner, gcp, &spec, &network, zonal());
        let bucket = BucketSpec {
            existing: true,
            location: Some("EU".into()),
            ..BucketSpec::default()
        };
        gcp.bucket(planner, &bucket, "spec.bucket", "my-project-models");
        let dataset = DatasetSpec {
            existing: true,
            location: Some("EU".into()),
            ..DatasetSpec::default()
        };
        gcp.dataset(planner, &dataset, "spec.dataset", "load_tests");
    });
    let findings: Vec<String> = findings
        .into_iter()
        .map(|d| {
            let field = d.field.unwrap_or_default();
            let found = d.found.unwrap_or_default();
            let fix = d.fix.unwrap_or_default();
            format!(
                "{}: {} ({field}) found: {found} fix: {fix}",
                d.rule, d.message
            )
        })
        .collect();
    insta::assert_debug_snapshot!(findings, @r#"
    [
        "gcp-location: invalid cluster location `us central`: a zone or a region (spec.cluster.location) found: us central fix: ",
        "blueprint-conflict: an existing network keeps its own ranges (spec.network.podsCidr) found:  fix: remove `spec.network.podsCidr`, or `existing: true`",
        "blueprint-conflict: an existing network keeps its own ranges (spec.network.proxyOnlyCidr) found:  fix: remove `spec.network.proxyOnlyCidr`, or `existing: true`",
        "blueprint-conflict: an existing bucket keeps its own location (spec.bucket.location) found:  fix: remove `spec.bucket.location`, or `existing: true`",
        "blueprint-conflict: an existing dataset keeps its own location (spec.dataset.location) found:  fix: remove `spec.dataset.location`, or `existing: true`",
    ]
    "#);
}

#[test]
fn boot_disks_give_pods_the_ephemeral_storage_they_request() {
    // A 700 GiB disk: 70 GiB eviction threshold and the 100 GiB system cap leave 530 GiB.
    assert!((allocatable_ephemeral_gib(700) - 530.0).abs() < 1e-9);
    // The 70B checkpoint converter's 600 GiB of scratch needs a 780 GiB disk, not 700.
    assert_eq!(boot_disk_for_ephemeral(600), 780);
    for request in [1, 9, 10, 50, 100, 150, 268, 269, 600, 10_000] {
        let disk = boot_disk_for_ephemeral(request);
        assert!(
            allocatable_ephemeral_gib(disk) >= f64::from(request),
            "{request} GiB on {disk}"
        );
        assert!(
            disk <= 10 || allocatable_ephemeral_gib(disk - 10) < f64::from(request),
            "{request} GiB: {disk} is not the smallest multiple of 10"
        );
    }
}

/// The rendered object `kind`/`name` of `text`.
fn object<'t>(documents: &'t [crate::yaml::Node], kind: &str, name: &str) -> &'t crate::yaml::Node {
    documents
        .iter()
        .find(|d| {
            d.at(&["kind"]).and_then(crate::yaml::Node::as_str) == Some(kind)
                && d.at(&["metadata", "name"])
                    .and_then(crate::yaml::Node::as_str)
                    == Some(name)
        })
        .unwrap_or_else(|| panic!("no {kind}/{name}"))
}

/// The scalar at `path` of `node`, as text.
fn text_at(node: &crate::yaml::Node, path: &[&str]) -> String {
    let value = node
        .at(path)
        .unwrap_or_else(|| panic!("no {}", path.join(".")));
    value.as_str().map_or_else(
        || format!("{:?}", value.value),
        std::string::ToString::to_string,
    )
}

#[test]
fn new_clusters_are_private_behind_cloud_nat_with_dataplane_v2_and_a_maintenance_window() {
    let (text, findings) = with_planner(|planner, gcp| {
        let (spec, network) = (ClusterSpec::default(), NetworkSpec::default());
        nodes_and_cluster(planner, gcp, &spec, &network, zonal());
    });
    assert!(findings.is_empty(), "{findings:?}");
    let documents = crate::yaml::parse_documents(&text).unwrap();
    let cluster = object(&documents, "ContainerCluster", "blocks");
    let spec = |path: &str| {
        text_at(
            cluster,
            &[&["spec"][..], &path.split('.').collect::<Vec<_>>()].concat(),
        )
    };
    assert_eq!(
        spec("privateClusterConfig.enablePrivateNodes"),
        "Bool(true)"
    );
    assert_eq!(
        spec("privateClusterConfig.enablePrivateEndpoint"),
        "Bool(false)"
    );
    assert_eq!(
        spec("masterAuthorizedNetworksConfig.gcpPublicCidrsAccessEnabled"),
        "Bool(false)"
    );
    assert!(
        cluster
            .at(&["spec", "masterAuthorizedNetworksConfig", "cidrBlocks"])
            .is_none()
    );
    assert_eq!(
        spec("controlPlaneEndpointsConfig.dnsEndpointConfig.allowExternalTraffic"),
        "Bool(true)"
    );
    assert_eq!(spec("datapathProvider"), "ADVANCED_DATAPATH");
    assert_eq!(
        spec("maintenancePolicy.recurringWindow.recurrence"),
        "FREQ=WEEKLY;BYDAY=SA,SU"
    );
    // The cluster waits for the NAT, the NAT for its router, the router for the VPC.
    let depends_on = |object: &crate::yaml::Node| {
        text_at(
            object,
            &["metadata", "annotations", "config.kubernetes.io/depends-on"],
        )
    };
    assert!(depends_on(cluster).contains("/ComputeRouterNAT/blocks-nat"));
    let nat = object(&documents, "ComputeRouterNAT", "blocks-nat");
    assert!(depends_on(nat).ends_with("/ComputeRouter/blocks-router"));
    assert_eq!(
        text_at(nat, &["spec", "routerRef", "name"]),
        "blocks-router"
    );
    assert_eq!(
        text_at(nat, &["spec", "sourceSubnetworkIpRangesToNat"]),
        "ALL_SUBNETWORKS_ALL_IP_RANGES"
    );
    let router = object(&documents, "ComputeRouter", "blocks-router");
    assert!(depends_on(router).ends_with("/ComputeNetwork/blocks-network"));
    assert_eq!(text_at(router, &["spec", "region"]), "us-central1");
}

#[test]
fn an_existing_vpc_gets_no_nat() {
    let (text, _) = with_planner(|planner, gcp| {
        let network = NetworkSpec {
            existing: true,
            ..NetworkSpec::default()
        };
        nodes_and_cluster(planner, gcp, &ClusterSpec::default(), &network, zonal());
    });
    assert!(!text.contains("ComputeRouter"), "{text}");
    assert!(text.contains("enablePrivateNodes: true"));
}

#[test]
fn authorized_networks_are_listed_and_checked() {
    let network = |cidr: &str| AuthorizedNetworkSpec {
        cidr: cidr.into(),
        name: Some("office".into()),
    };
    let (text, findings) = with_planner(|planner, gcp| {
        let spec = ClusterSpec {
            authorized_networks: Some(vec![
                network("203.0.113.0/24"),
                network("203.0.113.1/24"),
                network("0.0.0.0/0"),
                network("office"),
            ]),
            ..ClusterSpec::default()
        };
        nodes_and_cluster(planner, gcp, &spec, &NetworkSpec::default(), zonal());
    });
    assert!(
        text.contains("- cidrBlock: \"203.0.113.0/24\"\n      displayName: \"office\""),
        "{text}"
    );
    insta::assert_debug_snapshot!(findings, @r#"
    [
        "authorized-networks: `203.0.113.1/24` has host bits set (spec.cluster.authorizedNetworks[1].cidr)",
        "authorized-networks: `0.0.0.0/0` opens the control plane's IP endpoint to the internet (spec.cluster.authorizedNetworks[2].cidr)",
        "authorized-networks: invalid CIDR range `office` (spec.cluster.authorizedNetworks[3].cidr)",
    ]
    "#);
    let (_, findings) = planned(|planner, gcp| {
        let spec = ClusterSpec {
            authorized_networks: Some(Vec::new()),
            ..ClusterSpec::default()
        };
        nodes_and_cluster(planner, gcp, &spec, &NetworkSpec::default(), zonal());
    });
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0].rule, rule::AUTHORIZED_NETWORKS);
    assert_eq!(
        findings[0].field.as_deref(),
        Some("spec.cluster.authorizedNetworks")
    );
    assert!(
        findings[0]
            .fix
            .as_deref()
            .is_some_and(|fix| fix.starts_with("remove `spec.cluster.authorizedNetworks`")),
        "{:?}",
        findings[0]
    );
}

#[test]
fn maintenance_windows_and_exclusions_are_rendered_and_checked() {
    let exclusion = |name: &str, start: &str, end: &str, scope| MaintenanceExclusionSpec {
        name: name.into(),
        start: start.into(),
        end: end.into(),
        scope,
    };
    let (text, findings) = with_planner(|planner, gcp| {
        let spec = ClusterSpec {
            maintenance: MaintenanceSpec {
                window: Some(MaintenanceWindowSpec {
                    start: "2026-01-05T22:00:00Z".into(),
                    end: "2026-01-06T04:00:00Z".into(),
                    recurrence: "FREQ=WEEKLY;BYDAY=MO,TU,WE".into(),
                }),
                exclusions: vec![exclusion(
                    "llama-pretraining",
                    "2026-12-01T00:00:00Z",
                    "2026-12-22T00:00:00Z",
                    None,
                )],
            },
            ..ClusterSpec::default()
        };
        nodes_and_cluster(planner, gcp, &spec, &NetworkSpec::default(), zonal());
    });
    assert!(findings.is_empty(), "{findings:?}");
    let documents = crate::yaml::parse_documents(&text).unwrap();
    let policy = object(&documents, "ContainerCluster", "blocks")
        .at(&["spec", "maintenancePolicy"])
        .unwrap();
    assert_eq!(
        text_at(policy, &["recurringWindow", "startTime"]),
        "2026-01-05T22:00:00Z"
    );
    let exclusions = crate::yaml::to_json(policy.get("maintenanceExclusion").unwrap());
    assert_eq!(
        exclusions,
        serde_json::json!([{
            "exclusionName": "llama-pretraining",
            "startTime": "2026-12-01T00:00:00Z",
            "endTime": "2026-12-22T00:00:00Z",
            "exclusionOptions": {"scope": "NO_MINOR_OR_NODE_UPGRADES"},
        }])
    );
    let (_, findings) = with_planner(|planner, gcp| {
        let spec = ClusterSpec {
            maintenance: MaintenanceSpec {
                window: Some(MaintenanceWindowSpec {
                    start: "2026-01-05 22:00".into(),
                    end: "2026-01-06T04:00:00Z".into(),
                    recurrence: "weekly".into(),
                }),
                exclusions: vec![
                    exclusion("run", "2026-12-22T00:00:00Z", "2026-12-01T00:00:00Z", None),
                    exclusion(
                        "run",
                        "2026-12-01T00:00:00Z",
                        "2027-01-15T00:00:00Z",
                        Some(ExclusionScope::NoUpgrades),
                    ),
                ],
            },
            ..ClusterSpec::default()
        };
        nodes_and_cluster(planner, gcp, &spec, &NetworkSpec::default(), zonal());
    });
    insta::assert_debug_snapshot!(findings, @r#"
    [
        "maintenance-policy: `2026-01-05 22:00` is no UTC time (spec.cluster.maintenance.window.start)",
        "maintenance-policy: `weekly` is no RFC 5545 recurrence (spec.cluster.maintenance.window.recurrence)",
        "maintenance-policy: `2026-12-01T00:00:00Z` is not after `2026-12-22T00:00:00Z` (spec.cluster.maintenance.exclusions[0].end)",
        "maintenance-policy: maintenance exclusion name `run` is empty or used twice (spec.cluster.maintenance.exclusions[1].name)",
        "maintenance-policy: exclusion `run` holds back every upgrade for 45 days; GKE allows 30 (spec.cluster.maintenance.exclusions[1].end)",
    ]
    "#);
}

#[test]
fn existing_clusters_keep_their_access_and_maintenance() {
    let (_, findings) = with_planner(|planner, gcp| {
        let spec = ClusterSpec {
            existing: true,
            authorized_networks: Some(vec![AuthorizedNetworkSpec {
                cidr: "203.0.113.0/24".into(),
                name: None,
            }]),
            maintenance: MaintenanceSpec {
                exclusions: vec![MaintenanceExclusionSpec {
                    name: "run".into(),
                    start: "2026-12-01T00:00:00Z".into(),
                    end: "2026-12-22T00:00:00Z".into(),
                    scope: None,
                }],
                ..MaintenanceSpec::default()
            },
            ..ClusterSpec::default()
        };
        nodes_and_cluster(planner, gcp, &spec, &NetworkSpec::default(), zonal());
    });
    insta::assert_debug_snapshot!(findings, @r#"
    [
        "blueprint-conflict: `spec.cluster.authorizedNetworks` has no effect on an existing cluster (spec.cluster.authorizedNetworks)",
        "blueprint-conflict: `spec.cluster.maintenance` has no effect on an existing cluster (spec.cluster.maintenance)",
    ]
    "#);
}

#[test]
fn the_pubsub_agent_writes_the_metrics_table_not_the_project() {
    let (text, findings) = with_planner(|planner, gcp| {
        gcp.metrics_sink(
            planner,
            &MetricsSinkSpec::default(),
            "spec.metrics",
            true,
            Some("123"),
        );
    });
    assert!(findings.is_empty(), "{findings:?}");
    let documents = crate::yaml::parse_documents(&text).unwrap();
    let grants: Vec<&crate::yaml::Node> = documents
        .iter()
        .filter(|d| d.at(&["kind"]).and_then(crate::yaml::Node::as_str) == Some("IAMPolicyMember"))
        .collect();
    assert_eq!(grants.len(), 1, "{text}");
    let grant = grants[0];
    assert_eq!(
        text_at(grant, &["spec", "member"]),
        "serviceAccount:service-123@gcp-sa-pubsub.iam.gserviceaccount.com"
    );
    assert_eq!(
        text_at(grant, &["spec", "role"]),
        "roles/bigquery.dataEditor"
    );
    assert_eq!(
        text_at(grant, &["spec", "resourceRef", "kind"]),
        "BigQueryTable"
    );
    assert_eq!(
        text_at(grant, &["spec", "resourceRef", "name"]),
        "blocks-metrics-performance-metrics"
    );
    let name = text_at(grant, &["metadata", "name"]);
    let subscription = object(
        &documents,
        "PubSubSubscription",
        "blocks-metrics-to-bigquery",
    );
    assert!(
        text_at(
            subscription,
            &["metadata", "annotations", "config.kubernetes.io/depends-on"]
        )
        .contains(&format!("/IAMPolicyMember/{name}")),
        "the subscription waits for the grant"
    );
}
