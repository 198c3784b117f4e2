//! Planning `SaxServing` blueprints: the proxy's reach and each component's identity.

use super::{Plan, SaxServing, Spec};
use crate::blueprint::Blueprint;
use crate::kinds::{Registry, TypedKind};
use crate::plan::{Planner, Repository};

fn read(spec: &str) -> (Option<Plan>, Vec<String>) {
    let text = format!(
        "apiVersion: aiml.dev/v1alpha1\nkind: SaxServing\nmetadata: {{name: sax}}\nspec:\n  project: my-project\n  performanceTesting: {{enabled: false}}\n  tpu: {{type: v5litepod-4}}\n  model: {{name: llama2-7b}}\n{spec}"
    );
    let documents = crate::yaml::parse_documents(&text).unwrap();
    let registry = Registry::builtin();
    let blueprint = Blueprint::from_node("b.yaml", &documents[0], &registry).unwrap();
    let spec: Spec = blueprint.read_spec().unwrap();
    let repository = Repository::new();
    let mut planner = Planner::new(&blueprint, &repository);
    let plan = SaxServing::plan(&spec, &mut planner);
    let findings = planner
        .finish()
        .iter()
        .map(|d| d.rule.to_string())
        .collect();
    (plan, findings)
}

#[test]
fn the_proxy_stays_in_the_cluster_unless_a_load_balancer_names_its_sources() {
    let (plan, findings) = read("");
    assert!(findings.is_empty(), "{findings:?}");
    assert!(plan.unwrap().workload.proxy.load_balancer.is_none());
    let (plan, findings) =
        read("  proxy: {loadBalancer: {sourceRanges: [10.20.0.0/16, \"fd00::/8\"]}}\n");
    assert!(findings.is_empty(), "{findings:?}");
    let load_balancer = plan.unwrap().workload.proxy.load_balancer.unwrap();
    assert_eq!(load_balancer.service, "sax-generate");
    assert_eq!(load_balancer.source_ranges, ["10.20.0.0/16", "fd00::/8"]);
    let unprotected = crate::plan::rule::INGRESS_UNPROTECTED;
    for ranges in ["[]", "[0.0.0.0/0]"] {
        let (plan, findings) = read(&format!(
            "  proxy: {{loadBalancer: {{sourceRanges: {ranges}}}}}\n"
        ));
        assert!(plan.is_none(), "{ranges}");
        assert_eq!(findings, [unprotected], "{ranges}");
    }
    let (_, findings) = read("  proxy: {loadBalancer: {sourceRanges: [10.20.0.0]}}\n");
    assert_eq!(findings, [crate::gcp::rule::NETWORK_CIDR]);
}

/// `<account label>: <bucket label> <role>` of every bucket grant.
fn bucket_grants(plan: &Plan) -> Vec<String> {
    let mut grants: Vec<String> = plan
        .infra
        .iam_members
        .iter()
        .filter(|member| member.role.starts_with("roles/storage."))
        .map(|member| format!("{} {}", member.meta.name, member.role))
        .collect();
    grants.sort();
    grants
}

#[test]
fn each_component_has_its_own_identity_with_only_its_access() {
    let (plan, findings) = read("");
    assert!(findings.is_empty(), "{findings:?}");
    let plan = plan.unwrap();
    let identities = &plan.workload.identities;
    let accounts: Vec<(&str, &str, &str)> = identities
        .iter()
        .map(|(key, identity)| {
            (
                *key,
                identity.kubernetes_service_account.as_str(),
                identity.email.as_str(),
            )
        })
        .collect();
    assert_eq!(
        accounts,
        [
            (
                "admin",
                "saxml-admin",
                "sax-admin@my-project.iam.gserviceaccount.com"
            ),
            (
                "converter",
                "saxml-converter",
                "sax-convert@my-project.iam.gserviceaccount.com"
            ),
            (
                "model_server",
                "saxml-model-server",
                "sax-model@my-project.iam.gserviceaccount.com"
            ),
            (
                "proxy",
                "saxml-proxy",
                "sax-proxy@my-project.iam.gserviceaccount.com"
            ),
            (
                "util",
                "saxml-util",
                "sax-util@my-project.iam.gserviceaccount.com"
            ),
        ]
    );
    let grants = bucket_grants(&plan);
    let writers: Vec<&String> = grants
        .iter()
        .filter(|grant| grant.ends_with("objectUser"))
        .collect();
    // Only the admin server writes the cell's state, only the converter writes checkpoints.
    assert_eq!(writers.len(), 2, "{grants:#?}");
    assert!(writers[0].starts_with("sax-admin-"), "{writers:?}");
    assert!(writers[1].starts_with("sax-convert-"), "{writers:?}");
    assert!(writers[1].contains("models"), "{writers:?}");
    // The model servers read both buckets; the proxy and saxutil the admin bucket only.
    for (label, buckets) in [("model", 2), ("proxy", 1), ("util", 1)] {
        let viewer: Vec<&String> = grants
            .iter()
            .filter(|grant| {
                grant.starts_with(&format!("sax-{label}-")) && grant.ends_with("objectViewer")
            })
            .collect();
        assert_eq!(viewer.len(), buckets, "{label}: {grants:#?}");
    }
    // Nothing project-wide beyond the nodes' own roles.
    assert!(
        plan.infra
            .iam_members
            .iter()
            .filter(|member| member.role.starts_with("roles/storage."))
            .all(|member| !member.meta.name.contains("-node-")),
    );
    // Without the conversion Job, no converter account.
    let (plan, _) = read("  converter: {enabled: false}\n");
    assert!(!plan.unwrap().workload.identities.contains_key("converter"));
}
