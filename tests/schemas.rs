//! Schema conformance of rendered objects: CONTRACT.md, invariant 4 ("every rendered object is
//! accepted by the schema of its kind"), checked with the schemas built into the tool
//! (`aiml::schema`): the built-in kinds of the default minor and the vendored CRDs. Nothing is read
//! from outside the repository and nothing is skipped.
//!
//! - every object under `rendered/` passes (deprecation warnings aside);
//! - `tests/fixtures/schemas/good/` passes, and each file of `bad/` is rejected with the
//!   findings its `# expect:` lines name;
//! - on edge cases where JSON Schema and the API server could disagree, the checker sides with
//!   the API server.

mod support;

use std::fs;
use std::path::{Path, PathBuf};

use aiml::diagnostic::{Diagnostic, Severity};
use aiml::schema::{CheckOptions, Schemas, rule};
use aiml::validate::Object;
use aiml::yaml::parse_documents;

const STRICT: CheckOptions = CheckOptions { strict: true };

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixtures() -> PathBuf {
    crate_dir().join("tests/fixtures/schemas")
}

/// Every `.yaml`/`.yml` file under `dir`, recursively, sorted by path.
fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries =
            fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path
                .extension()
                .is_some_and(|ext| ext == "yaml" || ext == "yml")
            {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Objects checked, and the findings of one YAML text; a document that is not a Kubernetes
/// object (no `apiVersion`, `kind`, `metadata.name`) is a pseudo-finding the CLI reports on its
/// own (the schema checker only ever sees objects).
fn check_text(file: &str, text: &str, options: &CheckOptions) -> (usize, Vec<String>) {
    let documents = parse_documents(text).unwrap_or_else(|e| panic!("{file}: {e}"));
    let mut lines = Vec::new();
    let mut objects = 0;
    for document in &documents {
        let Some(object) = Object::from_node(file, document) else {
            lines.push(format!(
                "{file}: not a Kubernetes object: needs apiVersion, kind and metadata.name"
            ));
            continue;
        };
        objects += 1;
        let diagnostics = Schemas::embedded().check_with_source(&object, text, options);
        lines.extend(diagnostics.iter().map(one_line));
    }
    (objects, lines)
}

/// A finding on one line, for matching and for failure messages.
fn one_line(d: &Diagnostic) -> String {
    let mut line = format!(
        "{}[{}] {}:{}:{} {}: {}",
        d.severity,
        d.rule,
        d.file,
        d.line,
        d.column,
        d.field.as_deref().unwrap_or("-"),
        d.message
    );
    for (label, value) in [
        ("found", &d.found),
        ("expected", &d.expected),
        ("fix", &d.fix),
    ] {
        if let Some(value) = value {
            line.push_str(&format!(" | {label}: {value}"));
        }
    }
    line
}

fn is_deprecation(line: &str) -> bool {
    line.starts_with(&format!("warning[{}]", rule::API_VERSION_DEPRECATED))
}

/// Checks every file under `dir` (strict: a kind without schema fails); returns the number of
/// objects and the findings other than deprecation warnings.
fn check_dir(dir: &Path) -> (usize, Vec<String>) {
    let mut objects = 0;
    let mut lines = Vec::new();
    for file in yaml_files(dir) {
        let shown = file
            .strip_prefix(crate_dir())
            .unwrap_or(&file)
            .display()
            .to_string();
        let text = fs::read_to_string(&file).expect("readable YAML");
        let (n, found) = check_text(&shown, &text, &STRICT);
        objects += n;
        lines.extend(found.into_iter().filter(|l| !is_deprecation(l)));
    }
    (objects, lines)
}

#[test]
fn rendered_objects_match_their_schemas() {
    let (objects, problems) = check_dir(&crate_dir().join("rendered"));
    assert!(objects > 0, "rendered/: no objects found");
    assert!(
        problems.is_empty(),
        "{} finding(s) in {objects} rendered object(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn good_fixtures_match_their_schemas() {
    let (objects, problems) = check_dir(&fixtures().join("good"));
    // Namespace, ServiceAccount, PriorityClass, Deployment, JobSet, 3 Kueue objects,
    // ContainerNodePool, IAMPolicyMember, StorageBucket.
    assert_eq!(objects, 11, "good fixtures: unexpected object count");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn kueue_v1beta1_is_deprecated_but_accepted() {
    let text = fs::read_to_string(fixtures().join("good/workload/kueue.yaml")).unwrap();
    let (objects, lines) = check_text("kueue.yaml", &text, &CheckOptions::default());
    assert_eq!(objects, 3);
    assert_eq!(
        lines.len(),
        3,
        "one deprecation each:\n{}",
        lines.join("\n")
    );
    assert!(
        lines
            .iter()
            .all(|l| is_deprecation(l) && l.contains("use `apiVersion: kueue.x-k8s.io/v1beta2`")),
        "{}",
        lines.join("\n")
    );
}

/// Each file under `bad/` holds one object with one defect, and names the findings it must
/// cause with `# expect: <text>` comment lines (each must occur in some finding, rendered as
/// by [`one_line`]). At least one finding must be an error.
#[test]
fn bad_fixtures_are_each_rejected() {
    let files = yaml_files(&fixtures().join("bad"));
    assert!(
        files.len() >= 10,
        "expected the bad fixtures, found {files:?}"
    );
    let mut problems = Vec::new();
    for file in &files {
        let text = fs::read_to_string(file).expect("bad fixture is readable");
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let expected: Vec<&str> = text
            .lines()
            .filter_map(|line| line.strip_prefix("# expect:"))
            .map(str::trim)
            .collect();
        assert!(!expected.is_empty(), "{name}: no `# expect:` line");
        let (_, lines) = check_text(&name, &text, &STRICT);
        if !lines.iter().any(|l| !l.starts_with("warning")) {
            problems.push(format!(
                "{name}: accepted, but must be rejected: {lines:#?}"
            ));
        }
        for want in expected {
            if !lines.iter().any(|line| line.contains(want)) {
                problems.push(format!(
                    "{name}: no finding mentions {want:?}; findings were:\n    {}",
                    lines.join("\n    ")
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Where JSON Schema and the API server could disagree, the checker must side with the API
/// server: neither reject what it accepts nor accept what it rejects.
#[test]
fn checker_agrees_with_the_api_server_on_edge_cases() {
    let jobset_container = |fields: &str| {
        format!(
            "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {{name: q}}\n\
             spec:\n  replicatedJobs:\n  - name: w\n    template:\n      spec:\n        \
             template:\n          spec:\n            containers:\n            - name: c\n              \
             image: busybox\n              {fields}\n"
        )
    };
    let jobset_cpu =
        |value: &str| jobset_container(&format!("resources: {{limits: {{cpu: {value}}}}}"));
    let lws_container = |fields: &str| {
        format!(
            "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata: {{name: q}}\n\
             spec:\n  leaderWorkerTemplate:\n    size: 2\n    workerTemplate:\n      spec:\n        \
             containers:\n        - name: c\n          image: busybox\n          {fields}\n"
        )
    };
    let pod_cpu = |value: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: q}}\nspec:\n  containers:\n  \
             - name: c\n    image: busybox\n    resources: {{limits: {{cpu: {value}}}}}\n"
        )
    };
    let deployment_surge = |value: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: q}}\nspec:\n  \
             selector: {{matchLabels: {{a: b}}}}\n  strategy: {{rollingUpdate: {{maxSurge: {value}}}}}\n  \
             template:\n    metadata: {{labels: {{a: b}}}}\n    spec: {{containers: [{{name: c, image: i}}]}}\n"
        )
    };
    let monitoring = |interval: &str| {
        format!(
            "apiVersion: monitoring.googleapis.com/v1\nkind: PodMonitoring\nmetadata: {{name: q}}\n\
             spec:\n  selector: {{}}\n  endpoints:\n  - port: 8080\n    interval: {interval}\n"
        )
    };
    let namespace_label = |value: &str| {
        format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: q\n  labels: {{team: {value}}}\n"
        )
    };
    let secret = |data: &str| {
        format!("apiVersion: v1\nkind: Secret\nmetadata: {{name: q}}\ndata: {{key: {data}}}\n")
    };
    let env_value = |value: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: q}}\nspec:\n  containers:\n  \
             - name: c\n    image: busybox\n    env: [{{name: A, value: {value}}}]\n"
        )
    };
    let argo_values = |values: &str| {
        format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {{name: q}}\nspec:\n  \
             project: default\n  destination: {{server: https://kubernetes.default.svc}}\n  \
             source:\n    repoURL: https://example.com/charts\n    chart: c\n    \
             targetRevision: 1.0.0\n    helm:\n      valuesObject: {values}\n"
        )
    };
    let root_sync = |git: &str| {
        format!(
            "apiVersion: configsync.gke.io/v1beta1\nkind: RootSync\nmetadata: {{name: q}}\nspec:\n  \
             sourceFormat: unstructured\n  git: {{repo: https://example.com/r, auth: none{git}}}\n"
        )
    };
    let cases = [
        // CRD pod templates: quantities are x-kubernetes-int-or-string, i.e. an integer or a
        // string matching the quantity pattern.
        (jobset_cpu("4"), true),
        (jobset_cpu("\"2\""), true),
        (jobset_cpu("500m"), true),
        (jobset_cpu("1.0"), true), // kubectl sends 1.0 as the JSON number 1
        (jobset_cpu("0.5"), false), // the API server rejects a float here too ("integer,string")
        (jobset_cpu("\"0.5\""), true),
        (jobset_cpu("lots"), false),
        // … and unknown fields deep inside an embedded pod template are rejected.
        (jobset_container("imagePullPolicy: Always"), true),
        (jobset_container("imagePulPolicy: Always"), false),
        (lws_container("ports: [{containerPort: 8080}]"), true),
        (lws_container("port: 8080"), false),
        // Built-in Pod: resource.Quantity accepts any JSON number or a string.
        (pod_cpu("4"), true),
        (pod_cpu("0.5"), true),
        (pod_cpu("\"2\""), true),
        (pod_cpu("true"), false),
        // Built-in IntOrString: an integer or a string, not a float.
        (deployment_surge("1"), true),
        (deployment_surge("25%"), true),
        (deployment_surge("1.5"), false),
        // format: duration is a Go duration for the API server (kube-openapi), not ISO 8601.
        (monitoring("30s"), true),
        (monitoring("1m30s"), true),
        (monitoring("thirty"), false),
        // kubectl reads YAML 1.1: an unquoted `on` is a boolean, and label values are strings.
        (namespace_label("\"on\""), true),
        (namespace_label("on"), false),
        (namespace_label("yes"), false),
        (namespace_label("onward"), true),
        // format: byte is base64, checked by the API server when it decodes Secret data.
        (secret("aGVsbG8="), true),
        (secret("hello!"), false),
        // Env values are strings: a number must be quoted.
        (env_value("\"1.10\""), true),
        (env_value("1.10"), false),
        // x-kubernetes-preserve-unknown-fields: anything goes below it.
        (argo_values("{replicas: 2, nested: {any: [1, two]}}"), true),
        (argo_values("[1, 2]"), false), // … but its own `type: object` still holds
        // nullable: an explicit null is accepted where the CRD says `nullable: true`.
        (root_sync(", secretRef: null"), true),
        (root_sync(", secretRef: {name: s}"), true),
        (root_sync(", secretRef: {nam: s}"), false),
        // Built-ins: null stands for "unset" on optional fields.
        (env_value("null"), true),
    ];
    let mut problems = Vec::new();
    for (yaml, accepted) in &cases {
        let (_, lines) = check_text("case.yaml", yaml, &STRICT);
        let errors: Vec<&String> = lines.iter().filter(|l| !l.starts_with("warning")).collect();
        if errors.is_empty() != *accepted {
            let verdict = if *accepted { "rejected" } else { "accepted" };
            problems.push(format!("wrongly {verdict}:\n{yaml}{lines:#?}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The classic mistakes read well: file, line, field, expectation and a fix that quotes the
/// value as written.
#[test]
fn numeric_env_value_is_quoted_as_written() {
    let text = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec:\n      containers:\n      - name: c\n        image: i\n        env:\n        - name: VERSION\n          value: 1.10\n";
    let (_, lines) = check_text("deploy.yaml", text, &STRICT);
    assert_eq!(
        lines,
        [
            "error[schema-violation] deploy.yaml:14:18 spec.template.spec.containers[0].env[0].value: \
             `spec.template.spec.containers[0].env[0].value` must be a string, not a number \
             | found: 1.10 | expected: a string | fix: quote the value: `value: \"1.10\"`"
        ]
    );
}

#[test]
fn removed_api_versions_are_errors() {
    let text = "apiVersion: autoscaling/v2beta1\nkind: HorizontalPodAutoscaler\nmetadata: {name: h}\nspec: {}\n";
    let (_, lines) = check_text("hpa.yaml", text, &CheckOptions::default());
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert!(
        lines[0].starts_with("error[api-version-removed] hpa.yaml:1:13 apiVersion: "),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].contains("removed in Kubernetes 1.25"),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].contains("expected: autoscaling/v2"),
        "{}",
        lines[0]
    );
}

#[test]
fn unknown_kinds_warn_unless_strict() {
    let text = "apiVersion: tpu.example.com/v1\nkind: TPUSlice\nmetadata: {name: s}\n";
    let documents = parse_documents(text).unwrap();
    let object = Object::from_node("s.yaml", &documents[0]).unwrap();
    let lenient = Schemas::embedded().check(&object, &CheckOptions::default());
    assert_eq!(lenient.len(), 1);
    assert_eq!(lenient[0].severity, Severity::Warning);
    assert_eq!(lenient[0].rule, rule::SCHEMA_UNKNOWN_KIND);
    let strict = Schemas::embedded().check(&object, &STRICT);
    assert_eq!(strict[0].severity, Severity::Error);
}

#[test]
fn blueprints_are_not_schema_checked() {
    let text = "apiVersion: aiml.dev/v1alpha1\nkind: MultisliceTraining\nmetadata: {name: b}\nspec: {anything: 1}\n";
    let (objects, lines) = check_text("b.yaml", text, &STRICT);
    assert_eq!((objects, lines.len()), (1, 0), "{lines:#?}");
}

/// The findings of `file` (under `tests/fixtures/versions/`) at Kubernetes `version`.
fn at_version(file: &str, version: &str) -> Vec<String> {
    let path = fixtures().with_file_name("versions").join(file);
    let text = fs::read_to_string(&path).expect("fixture");
    let documents = parse_documents(&text).expect("yaml");
    let object = Object::from_node(file, &documents[0]).expect("object");
    let schemas = Schemas::embedded_for(version).expect("vendored version");
    assert_eq!(
        schemas.kubernetes_version(),
        version.trim_start_matches('v')
    );
    schemas
        .check_with_source(&object, &text, &STRICT)
        .iter()
        .map(one_line)
        .collect()
}

#[test]
fn a_kind_a_newer_minor_serves_says_from_which() {
    // resource.k8s.io/v1 (DRA, GA in 1.34): "served from 1.34" below it, valid from it on.
    let below = at_version("resourceclaim_v1.yaml", "1.32");
    assert_eq!(below.len(), 1, "{below:?}");
    assert!(
        below[0].contains("kind-not-served")
            && below[0].contains("it is served from Kubernetes 1.34")
            && below[0].contains("--kubernetes-version 1.34"),
        "{below:?}"
    );
    for version in ["1.34", "v1.35", "1.36"] {
        assert_eq!(
            at_version("resourceclaim_v1.yaml", version),
            Vec::<String>::new(),
            "{version}"
        );
    }
    // An older minor served it, the target no longer does.
    assert_eq!(
        at_version("resourceclaim_v1alpha3.yaml", "1.33"),
        Vec::<String>::new()
    );
    let removed = at_version("resourceclaim_v1alpha3.yaml", "1.36");
    assert_eq!(removed.len(), 1, "{removed:?}");
    assert!(
        removed[0].contains("api-version-removed")
            && removed[0].contains("was removed in Kubernetes 1.34; 1.36 does not serve it")
            && removed[0].contains("resource.k8s.io/v1"),
        "{removed:?}"
    );
}

#[test]
fn the_target_version_is_a_flag_of_validate() {
    let file = fixtures()
        .with_file_name("versions")
        .join("resourceclaim_v1.yaml");
    let run = |args: &[&str]| {
        assert_cmd::Command::cargo_bin("kubectl-aiml")
            .expect("binary")
            .env("NO_COLOR", "1")
            .current_dir(std::env::temp_dir())
            .arg("validate")
            .args(args)
            .arg(&file)
            .output()
            .expect("run")
    };
    // The default minor (1.35, GKE's Regular channel) serves `resource.k8s.io/v1`; 1.33 does not.
    assert_eq!(run(&[]).status.code(), Some(0));
    let older = run(&["--kubernetes-version", "1.33"]);
    assert_eq!(older.status.code(), Some(1));
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&older.stdout),
        String::from_utf8_lossy(&older.stderr)
    );
    assert!(said.contains("served from Kubernetes 1.34"), "{said}");
    assert_eq!(
        run(&["--kubernetes-version", "1.34"]).status.code(),
        Some(0)
    );
    let unknown = run(&["--kubernetes-version", "1.29"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&unknown.stderr)
            .contains("no schemas for Kubernetes `1.29`: expected one of 1.32, 1.33"),
        "{}",
        String::from_utf8_lossy(&unknown.stderr)
    );
}

/// `kubernetes.version` in `aiml.yaml` chooses the built-in kinds for the repository's
/// manifests and blueprints; `--kubernetes-version` wins over it; a minor this build does not
/// vendor is refused at its line.
#[test]
fn the_target_version_is_a_setting_of_the_repository() {
    let claim = std::fs::read_to_string(
        fixtures()
            .with_file_name("versions")
            .join("resourceclaim_v1.yaml"),
    )
    .expect("fixture");
    let repo = support::TestRepo::new();
    repo.write("k8s/claim.yaml", &claim);
    repo.aiml(&["validate", "k8s"]).expect_code(0); // the default minor, 1.35, serves it
    repo.write("aiml.yaml", "kubernetes:\n  version: \"1.33\"\n");
    repo.aiml(&["validate", "k8s"])
        .expect_code(1)
        .stderr_has("served from Kubernetes 1.34");
    // The blueprints of the repository are checked against the same minor: still valid.
    repo.aiml(&["validate"]).expect_code(0);
    repo.aiml(&["validate", "--kubernetes-version", "1.34", "k8s"])
        .expect_code(0);
    repo.write("aiml.yaml", "kubernetes:\n  version: \"1.29\"\n");
    repo.aiml(&["validate", "k8s"])
        .expect_code(2)
        .stderr_has("aiml.yaml:2")
        .stderr_has("kubernetes.version");
}

/// A CRD given with `--schemas` whose CEL rules the tool evaluates, cannot evaluate, or would
/// not end: a rule that fails is an error at its field; one calling a function the tool
/// lacks (`quantity`), or whose cost bound passes the server's limit, is a warning naming the
/// rule and the kind, and leaves the exit code alone; a transition rule is skipped.
#[test]
fn cel_rules_of_a_given_crd_are_judged_or_named() {
    let repo = support::TestRepo::new();
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "x-kubernetes-validations": [
                    {"rule": "self.min <= self.max", "message": "min must not exceed max", "fieldPath": ".min"},
                    {"rule": "quantity(self.size).isGreaterThan(quantity('1Gi'))", "message": "too small"},
                    {"rule": "self.items.all(a, self.items.all(b, self.items.all(c, a + b + c >= 0)))", "message": "bomb"},
                    {"rule": "self == oldSelf", "message": "immutable"}
                ],
                "properties": {
                    "min": {"type": "integer"},
                    "max": {"type": "integer"},
                    "size": {"type": "string"},
                    "items": {"type": "array", "items": {"type": "integer"}}
                }
            }
        }
    });
    repo.write(
        "schemas/example.com/widget_v1.json",
        &serde_json::to_string_pretty(&schema).expect("json"),
    );
    let items: Vec<String> = (0..300).map(|i| i.to_string()).collect();
    let widget = |min: u32| {
        format!(
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  min: {min}\n  max: 2\n  size: 2Gi\n  items: [{}]\n",
            items.join(", ")
        )
    };
    repo.write("k8s/ok.yaml", &widget(1));
    repo.aiml(&["validate", "--schemas", "schemas", "k8s/ok.yaml"])
        .expect_code(0)
        .stderr_has("the Widget CRD's rule `quantity(self.size).isGreaterThan(quantity('1Gi'))` was not evaluated: it calls `quantity`")
        .stderr_has("the Widget CRD's rule `self.items.all(a, self.items.all(b, self.items.all(c, a + b + c >= 0)))` was not evaluated: its cost on this value may reach")
        .stderr_has("0 errors, 2 warnings");
    repo.write("k8s/bad.yaml", &widget(3));
    repo.aiml(&["validate", "--schemas", "schemas", "k8s/bad.yaml"])
        .expect_code(1)
        .stderr_has("error[schema-violation]: `spec.min`: min must not exceed max")
        .stderr_has("k8s/bad.yaml:6:8");
}
