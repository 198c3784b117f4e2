//! The frameworks the locustfile speaks, and the runner's queries.

use super::spec::Framework;
use super::templates::{LOCUSTFILE, runner_metrics};

#[test]
fn every_framework_has_a_name_and_a_path() {
    for (framework, name) in Framework::ALL {
        assert_eq!(Framework::parse(name), Some(*framework));
        assert!(
            framework
                .path(Some("m"))
                .is_some_and(|p| p.starts_with('/'))
        );
    }
    assert_eq!(Framework::Triton.path(None), None);
    assert_eq!(
        Framework::TensorrtLlmTriton.path(None).as_deref(),
        Some("/v2/models/ensemble/generate")
    );
}

#[test]
fn the_runner_queries_are_yaml_with_the_namespaces() {
    let text = runner_metrics("bench", Some("serving")).unwrap();
    let parsed: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
    let filter = parsed["metrics"]["CURRENT_RPS"]["filter"].as_str().unwrap();
    assert!(filter.contains("prometheus.googleapis.com/locust_requests_current_rps/gauge"));
    assert!(filter.contains("\"bench\""));
    let duty = parsed["metrics"]["ACCELERATOR_DUTY_CYCLE"]["filter"]
        .as_str()
        .unwrap();
    assert!(duty.contains("\"serving\""));
}

#[test]
fn the_locustfile_speaks_every_framework() {
    for (_, name) in Framework::ALL {
        assert!(
            LOCUSTFILE.contains(&format!("\"{name}\"")),
            "the locustfile has no request for {name}"
        );
    }
}

/// The findings of planning a `LocustBenchmark` with `spec`, beside a serving blueprint
/// `serving` that offers two HTTP services Locust can drive.
fn findings(spec: &str) -> Vec<String> {
    use super::LocustBenchmark;
    use crate::blueprint::Blueprint;
    use crate::kinds::{Registry, TypedKind};
    use crate::plan::{Exported, Exports, Planner, Repository, ServiceExport};

    let text = format!(
        "apiVersion: aiml.dev/v1alpha1\nkind: LocustBenchmark\nmetadata: {{name: bench}}\nspec:\n  project: my-project\n  prompts: gs://bkt/p.txt\n  cluster: {{existing: true, name: c, location: us-central1}}\n{spec}"
    );
    let documents = crate::yaml::parse_documents(&text).unwrap();
    let registry = Registry::builtin();
    let blueprint = Blueprint::from_node("b.yaml", &documents[0], &registry).unwrap();
    let spec: super::Spec = blueprint.read_spec().unwrap();
    let service = |name: &str| ServiceExport {
        name: name.into(),
        namespace: "llm".into(),
        port: 8000,
        protocol: "http".into(),
        framework: Some("vllm".into()),
        model: None,
    };
    let repository = Repository::from([(
        "serving".to_string(),
        Exported {
            kind: "TritonServing".into(),
            file: "blueprints/serving.yaml".into(),
            line: 1,
            exports: Exports {
                services: vec![service("a"), service("b")],
                ..Exports::default()
            },
            readable: true,
        },
    )]);
    let mut planner = Planner::new(&blueprint, &repository);
    LocustBenchmark::plan(&spec, &mut planner);
    planner
        .finish()
        .iter()
        .map(|d| {
            format!(
                "{} {}: {} | {} | {}",
                d.rule,
                d.field.as_deref().unwrap_or_default(),
                d.message,
                d.expected.as_deref().unwrap_or_default(),
                d.fix.as_deref().unwrap_or_default()
            )
        })
        .collect()
}

#[test]
fn a_target_blueprint_with_several_servers_needs_one_chosen() {
    assert_eq!(
        findings("  target: {blueprint: serving, port: 80}\n"),
        [
            "blueprint-conflict spec.target.port: `spec.target.port` comes from blueprint `serving` |  | remove `spec.target.port`",
            "locust-target spec.target.blueprint: blueprint `serving` serves several models: `a`, `b` |  | choose one with `spec.target.service`",
        ]
    );
    assert_eq!(
        findings("  target: {blueprint: serving, service: c}\n"),
        [
            "locust-target spec.target.service: blueprint `serving` (TritonServing) serves nothing Locust can drive as `c` | an HTTP service of framework `sax`, `tgi`, `vllm`, `tensorrt_llm_triton`, `triton` | "
        ]
    );
}

#[test]
fn a_token_reference_is_spelled_as_its_store_expects() {
    let target = "  target: {blueprint: serving, service: a}\n";
    assert_eq!(
        findings(&format!(
            "{target}  huggingFaceToken: {{secret: {{name: hf-token, key: a/b}}}}\n"
        )),
        [
            "kubernetes-name spec.huggingFaceToken.secret.key: `a/b` is not a Secret key | letters, digits, `-`, `_` and `.` | "
        ]
    );
    assert_eq!(
        findings(&format!(
            "{target}  huggingFaceToken: {{secretManager: {{secret: hf.token, version: v1, project: P}}}}\n"
        )),
        [
            "gcp-resource-name spec.huggingFaceToken.secretManager.secret: `hf.token` is not a Secret Manager secret id | letters, digits, `-` and `_` | ",
            "gcp-resource-name spec.huggingFaceToken.secretManager.version: `v1` is not a secret version | `latest` or a version number | ",
            "gcp-project-id spec.huggingFaceToken.secretManager.project: invalid name `P`: project ids have 6 to 30 lowercase letters, digits or `-` |  | set `spec.huggingFaceToken.secretManager.project` to a valid name",
        ]
    );
}

#[test]
fn a_target_by_address_and_a_tokenizer_are_checked() {
    let frameworks = "`sax`, `tgi`, `vllm`, `tensorrt_llm_triton`, `triton`";
    let incomplete = [
        "locust-target spec.target.port: a target given by address needs `spec.target.port` |  | "
            .to_string(),
        format!(
            "locust-target spec.target.framework: a target given by address needs `spec.target.framework` | {frameworks} | "
        ),
    ];
    let mut expected = incomplete.to_vec();
    expected.push("blueprint-conflict spec.tokenizer: `a/b/c` is not a Hugging Face model id | `<owner>/<model>`, e.g. `meta-llama/Llama-2-70b-hf` | ".into());
    assert_eq!(
        findings("  target: {service: tgi}\n  tokenizer: a/b/c\n"),
        expected
    );
    let mut expected = incomplete.to_vec();
    expected.push("locust-target spec.target.service: `http://x:80` is not a host name | a Service name, `<service>.<namespace>`, a DNS name or an IP address | give the port in `target.port` and the path in `target.path`".into());
    assert_eq!(findings("  target: {service: 'http://x:80'}\n"), expected);
    assert_eq!(
        findings("  target: {blueprint: serving, service: a}\n  load: {requestTimeout: 0}\n"),
        ["blueprint-conflict spec.load.requestTimeout: `0` is out of range | 1 to 86400 | "]
    );
    for (target, finding) in [
        (
            "{service: tgi, port: 80, framework: tgi, path: generate}",
            "spec.target.path: `generate` is not a request path | an absolute path, e.g. `/generate` | ",
        ),
        (
            "{service: tgi, port: 80, framework: triton}",
            "spec.target.model: requests to `triton` go to a model: `/v2/models/<model>/generate` |  | set `spec.target.model`",
        ),
        (
            "{service: s, port: 80, framework: sax}",
            "spec.target.model: the Saxml HTTP server needs the Sax model id | `/sax/<cell>/<model>` | ",
        ),
        (
            "{}",
            "spec.target: the target needs `blueprint` or `service` |  | set `target.blueprint: <serving blueprint>`, or `target: {service, port, framework}`",
        ),
    ] {
        assert_eq!(
            findings(&format!("  target: {target}\n")),
            [format!("locust-target {finding}")]
        );
    }
}
