use std::collections::BTreeSet;
use std::fs;

use rayon::prelude::*;

use super::*;
use crate::diagnostic::{Severity, render_human};

fn check_text(yaml: &str, options: &CheckOptions) -> Vec<Diagnostic> {
    check_with(Schemas::embedded(), yaml, options)
}

fn check_with(schemas: &Schemas, yaml: &str, options: &CheckOptions) -> Vec<Diagnostic> {
    let docs = crate::yaml::parse_documents(yaml).expect("test YAML parses");
    let mut out = Vec::new();
    for node in &docs {
        let object = Object::from_node("manifests/app.yaml", node).expect("a Kubernetes object");
        out.extend(schemas.check_with_source(&object, yaml, options));
    }
    out
}

fn rendered(yaml: &str) -> String {
    let diagnostics = check_text(yaml, &CheckOptions::default());
    let lookup = |_: &str| Some(yaml.to_owned());
    render_human(&diagnostics, &lookup, false)
}

const HPA_V2BETA1: &str = "\
apiVersion: autoscaling/v2beta1
kind: HorizontalPodAutoscaler
metadata:
  name: triton
  namespace: serving
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: triton}
  maxReplicas: 4
";

const ENV_NUMBER: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: triton
  namespace: serving
spec:
  selector: {matchLabels: {app: triton}}
  template:
    metadata: {labels: {app: triton}}
    spec:
      containers:
      - name: triton
        image: nvcr.io/nvidia/tritonserver:24.01-py3
        env:
        - name: MODEL_VERSION
          value: 1.10
";

#[test]
fn removed_hpa_version_reads_well() {
    insta::assert_snapshot!(rendered(HPA_V2BETA1), @"
    error[api-version-removed]: HorizontalPodAutoscaler `autoscaling/v2beta1` was removed in Kubernetes 1.25; 1.35 does not serve it
     --> manifests/app.yaml:1:13
      |
    1 | apiVersion: autoscaling/v2beta1
      |             ^^^^^^^^^^^^^^^^^^^ apiVersion
      |
      = note: object: HorizontalPodAutoscaler/serving/triton
      = note: found: autoscaling/v2beta1
      = note: expected: autoscaling/v2
      = help: use `apiVersion: autoscaling/v2`; metric `targetAverageUtilization` became `target.averageUtilization` with `target.type: Utilization`
      = note: rule: `kubectl aiml rules api-version-removed`
    ");
}

#[test]
fn numeric_env_value_reads_well() {
    insta::assert_snapshot!(rendered(ENV_NUMBER), @r#"
    error[schema-violation]: `spec.template.spec.containers[0].env[0].value` must be a string, not a number
      --> manifests/app.yaml:16:18
       |
    16 |           value: 1.10
       |                  ^^^^ spec.template.spec.containers[0].env[0].value
       |
       = note: object: Deployment/serving/triton
       = note: found: 1.10
       = note: expected: a string
       = help: quote the value: `value: "1.10"`
       = note: rule: `kubectl aiml rules schema-violation`
    "#);
}

#[test]
fn without_source_text_the_parsed_value_is_shown() {
    let docs = crate::yaml::parse_documents(ENV_NUMBER).unwrap();
    let object = Object::from_node("a.yaml", &docs[0]).unwrap();
    let found = Schemas::embedded().check(&object, &CheckOptions::default());
    assert_eq!(found.len(), 1);
    assert_eq!(
        found[0].fix.as_deref(),
        Some("quote the value: `value: \"1.1\"`")
    );
}

#[test]
fn schemas_are_shared_across_threads() {
    fn sync<T: Send + Sync>() {}
    sync::<Schemas>();
    let docs = crate::yaml::parse_documents(ENV_NUMBER).unwrap();
    let object = Object::from_node("a.yaml", &docs[0]).unwrap();
    let counts: Vec<usize> = (0..64)
        .into_par_iter()
        .map(|_| {
            Schemas::embedded()
                .check(&object, &CheckOptions::default())
                .len()
        })
        .collect();
    assert!(counts.iter().all(|&n| n == 1), "{counts:?}");
}

/// Every kind of both embedded indexes has a schema that compiles, and every embedded CRD file
/// is in the index (nothing vendored goes unused).
#[test]
fn embedded_schemas_cover_every_kind_in_the_index() {
    let kinds = Schemas::embedded().kinds();
    let builtin = embedded::json(&format!("kubernetes/v{KUBERNETES_VERSION}/index.json")).unwrap();
    let crds = embedded::json("crds/index.json").unwrap();
    let expected = builtin.as_object().unwrap().len() + crds.as_object().unwrap().len();
    assert_eq!(kinds.len(), expected);
    assert!(kinds.len() > 200, "{}", kinds.len());
    let mut failures = Vec::new();
    for kind in &kinds {
        match Schemas::embedded().compile(&kind.api_version, &kind.kind) {
            Ok(true) => {}
            other => failures.push(format!("{} {}: {other:?}", kind.api_version, kind.kind)),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    let indexed: BTreeSet<String> = kinds
        .iter()
        .filter(|k| k.source.starts_with("crds/"))
        .map(|k| k.source.clone())
        .collect();
    let packed: BTreeSet<String> = embedded::names()
        .filter(|n| n.starts_with("crds/") && *n != "crds/index.json")
        .map(str::to_owned)
        .collect();
    assert_eq!(indexed, packed);
    for api_version in [
        "apps/v1",
        "batch/v1",
        "v1",
        "autoscaling/v2",
        "jobset.x-k8s.io/v1alpha2",
    ] {
        assert!(
            kinds.iter().any(|k| k.api_version == api_version),
            "{api_version}"
        );
    }
}

#[test]
fn compression_pays() {
    let (packed, raw) = embedded::sizes();
    assert!(packed * 8 < raw, "{packed} of {raw} bytes");
}

#[test]
fn deprecated_versions_warn() {
    let text = "apiVersion: v1\nkind: ComponentStatus\nmetadata: {name: etcd-0}\n";
    let found = check_text(text, &CheckOptions { strict: true });
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].severity, Severity::Warning);
    assert_eq!(found[0].rule, rule::API_VERSION_DEPRECATED);
    assert!(
        found[0].message.contains("since Kubernetes 1.19"),
        "{}",
        found[0].message
    );
}

#[test]
fn list_items_are_checked_one_by_one() {
    let text = "apiVersion: v1\nkind: List\nmetadata: {name: all}\nitems:\n- apiVersion: v1\n  kind: ServiceAccount\n  metadata: {name: a}\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: b}\n  data: {replicas: 2}\n- {kind: Orphan}\n";
    let found = check_text(text, &CheckOptions::default());
    let fields: Vec<&str> = found.iter().filter_map(|d| d.field.as_deref()).collect();
    assert_eq!(fields, ["data.replicas", "items[2]"], "{found:#?}");
}

const WIDGET_SCHEMA: &str = r#"{
  "type": "object",
  "properties": {
    "apiVersion": {"type": "string"},
    "kind": {"type": "string"},
    "metadata": {"type": "object"},
    "spec": {
      "type": "object",
      "properties": {"size": {"type": "integer"}},
      "additionalProperties": false
    }
  }
}"#;

const WIDGET: &str =
    "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: 2}\n";

#[test]
fn folders_add_crds_in_kubeconform_layout() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("example.com")).unwrap();
    fs::write(dir.path().join("example.com/widget_v1.json"), WIDGET_SCHEMA).unwrap();
    let strict = CheckOptions { strict: true };

    let before = check_text(WIDGET, &strict);
    assert_eq!(before[0].rule, rule::SCHEMA_UNKNOWN_KIND);

    let schemas = Schemas::with_dirs(&[dir.path().to_path_buf()]).unwrap();
    assert!(schemas.has_schema("example.com/v1", "Widget"));
    assert!(check_with(&schemas, WIDGET, &strict).is_empty());
    let bad = check_with(&schemas, &WIDGET.replace("size", "sise"), &strict);
    assert_eq!(bad.len(), 1, "{bad:#?}");
    assert_eq!(bad[0].field.as_deref(), Some("spec.sise"));
    assert_eq!(bad[0].fix.as_deref(), Some("did you mean `size`?"));
    // A custom resource's metadata is held to ObjectMeta, as the API server does.
    let meta = check_with(
        &schemas,
        &WIDGET.replace("{name: w}", "{name: w, label: x}"),
        &strict,
    );
    assert_eq!(
        meta[0].field.as_deref(),
        Some("metadata.label"),
        "{meta:#?}"
    );
    // The embedded schemas are still there.
    assert!(check_with(&schemas, ENV_NUMBER, &strict).len() == 1);
}

#[test]
fn folders_also_take_flat_layouts_and_win_over_embedded() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("widget_v1.json"), WIDGET_SCHEMA).unwrap();
    // A permissive JobSet schema replaces the embedded one.
    fs::write(
        dir.path().join("jobset-jobset-v1alpha2.json"),
        r#"{"type": "object"}"#,
    )
    .unwrap();
    let schemas = Schemas::with_dirs(&[dir.path().to_path_buf()]).unwrap();
    assert!(schemas.has_schema("example.com/v1", "Widget"));
    let jobset = "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: j}\nspec: {whatever: 1}\n";
    assert!(check_with(&schemas, jobset, &CheckOptions::default()).is_empty());
    assert!(!check_text(jobset, &CheckOptions::default()).is_empty());
}

#[test]
fn unusable_folders_and_schemas_are_reported() {
    let empty = tempfile::tempdir().unwrap();
    assert!(matches!(
        Schemas::with_dirs(&[empty.path().to_path_buf()]),
        Err(SchemaError::Empty { .. })
    ));
    assert!(matches!(
        Schemas::with_dirs(&[empty.path().join("missing")]),
        Err(SchemaError::Read { .. })
    ));
    fs::write(empty.path().join("widget_v1.json"), "{not json").unwrap();
    let schemas = Schemas::with_dirs(&[empty.path().to_path_buf()]).unwrap();
    let found = check_with(&schemas, WIDGET, &CheckOptions::default());
    assert_eq!(found[0].rule, rule::SCHEMA_INVALID, "{found:#?}");
}

#[test]
fn rule_ids_are_unique_kebab_case_and_distinct_from_validation_rules() {
    let mut ids: Vec<&str> = RULES.iter().map(|r| r.id).collect();
    ids.extend(crate::validate::RULES.iter().map(|r| r.id));
    for id in &ids {
        assert!(
            id.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'),
            "{id}"
        );
    }
    let count = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), count);
}

/// The fields of every finding, `field: message`, for short assertions.
fn fields(yaml: &str) -> Vec<String> {
    check_text(yaml, &CheckOptions::default())
        .iter()
        .filter(|d| d.is_error())
        .map(|d| format!("{}: {}", d.field.as_deref().unwrap_or(""), d.message))
        .collect()
}

// Verdicts found to differ from a real API server's by tests/differential.rs.

#[test]
fn null_is_read_as_the_api_server_reads_it() {
    // int-or-string and Quantity: null is unset, not "both alternatives".
    let service = "\
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  ports:
  - {port: 80, targetPort: null}
";
    assert_eq!(fields(service), Vec::<String>::new());
    // A required field given as null is a missing one.
    let deployment = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: null
  template: {spec: {containers: [null]}}
";
    let found = fields(deployment);
    assert!(
        found.iter().any(|f| f.starts_with("spec.selector: ")),
        "{found:?}"
    );
    // A list with keys takes no null item (server-side apply refuses it).
    assert!(
        found
            .iter()
            .any(|f| f.starts_with("spec.template.spec.containers[0]: ")),
        "{found:?}"
    );
    // A custom resource field with a default: the server puts the default in. One without:
    // dropped by a create or `kubectl apply`, refused by a server-side apply (a warning).
    let root_sync = "\
apiVersion: configsync.gke.io/v1beta1
kind: RootSync
metadata: {name: root-sync, namespace: config-management-system}
spec:
  sourceType: null
  git: {repo: 'https://github.com/example/repo', auth: none, branch: null}
";
    assert_eq!(fields(root_sync), Vec::<String>::new());
    let warned: Vec<String> = check_text(root_sync, &CheckOptions::default())
        .iter()
        .filter(|d| !d.is_error())
        .filter_map(|d| d.field.clone())
        .collect();
    assert_eq!(warned, ["spec.git.branch"]);
}

#[test]
fn int32_fields_are_bounded() {
    let hpa = "\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 4294967296
";
    assert_eq!(
        fields(hpa),
        ["spec.maxReplicas: `spec.maxReplicas` must be at most 2147483647"]
    );
}

#[test]
fn names_labels_and_annotations_are_checked_as_the_api_server_does() {
    let objects = "\
apiVersion: v1
kind: Service
metadata:
  name: 1web
  labels: {'bad key': x, ok: 'not a value!'}
  annotations: {'/x': v}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: Bad_Name, namespace: ml}
spec: {clusterQueue: cq}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: Any_Name.Is-Fine, namespace: ml}
spec: {maxUnavailable: 1}
";
    let found = fields(objects);
    let on = |field: &str| found.iter().filter(|f| f.starts_with(field)).count();
    assert_eq!(on("metadata.name: `1web`"), 1, "{found:?}");
    assert_eq!(on("metadata.labels[\"bad key\"]"), 1, "{found:?}");
    assert_eq!(on("metadata.labels.ok"), 1, "{found:?}");
    assert_eq!(on("metadata.annotations[\"/x\"]"), 1, "{found:?}");
    assert_eq!(
        on("metadata.name: `Bad_Name` is not a valid LocalQueue name"),
        1,
        "{found:?}"
    );
    assert_eq!(found.len(), 5, "{found:?}");
}

#[test]
fn pod_templates_of_built_in_kinds_have_their_labels_checked() {
    let objects = "\
apiVersion: batch/v1
kind: Job
metadata: {name: train}
spec:
  template:
    metadata:
      labels: {app: 'not a value!'}
      annotations: {'bad key': x}
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
---
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: train}
spec:
  replicatedJobs:
  - name: w
    template:
      spec:
        template:
          metadata:
            labels: {app: 'not a value!'}
          spec:
            restartPolicy: Never
            containers: [{name: c, image: busybox}]
";
    // The server checks a Job's template metadata, not a JobSet's (its schema only).
    assert_eq!(
        fields(objects)
            .iter()
            .map(|f| f.split(':').next().unwrap_or_default())
            .collect::<Vec<_>>(),
        [
            "spec.template.metadata.labels.app",
            "spec.template.metadata.annotations[\"bad key\"]"
        ]
    );
}

/// A CRD's CEL rule that fails is an error at the rule's field with the rule's message.
#[test]
fn a_failed_cel_rule_reads_well() {
    const JOBSET: &str = "\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: train
spec:
  startupPolicy:
    startupPolicyOrder: InOrder
  replicatedJobs:
  - name: workers
    replicas: 1
    dependsOn:
    - {name: workers, status: Ready}
    template:
      spec:
        template:
          spec:
            restartPolicy: Never
            containers: [{name: main, image: busybox}]
";
    insta::assert_snapshot!(rendered(JOBSET), @"
    error[schema-violation]: `spec`: StartupPolicy and DependsOn APIs are mutually exclusive
     --> manifests/app.yaml:5:1
      |
    5 | spec:
      | ^^^^ spec
      |
      = note: object: JobSet/train
      = note: expected: the JobSet CRD's rule `!(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder == 'InOrder' && self.replicatedJobs.exists(x, has(x.dependsOn)))` to hold
      = help: change the value so that the rule holds
      = note: rule: `kubectl aiml rules schema-violation`
    ");
}
