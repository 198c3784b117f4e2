//! Kinds a repository defines under `kinds/<Kind>/`: rendered through the shared GCP and
//! accelerator blocks, validated like built-in kinds, listed with their source, sandboxed
//! (no shadowing, no includes outside the kind, no rule suppression from templates), and
//! rendered again when their files change.

mod support;

use support::TestRepo;

const KIND: &str = r#"summary: A model server on one single-host TPU slice, behind a ClusterIP Service
accelerator: tpu
tpu:
  families: [v5e, v6e]
region: us-west4
zone: us-west4-a
kubernetesServiceAccount: server
schema:
  type: object
  required: [image]
  properties:
    image:
      type: string
      description: Server image, with a tag or digest.
    port:
      type: integer
      minimum: 1
      maximum: 65535
      default: 8000
      description: Port the server listens on.
    chips:
      type: integer
      description: TPU chips per pod (default, and right, is every chip of the host).
"#;

const TEMPLATE: &str = r#"{% import "aiml/workload.yaml" as blocks %}
{{ blocks.namespace(namespace) }}
{{ blocks.workload_identity_service_account(kubernetes_service_account, namespace, workload_service_account) }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
spec:
  replicas: 1
  selector:
    matchLabels:
      app.kubernetes.io/name: {{ name }}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {{ name }}
    spec:
      serviceAccountName: {{ kubernetes_service_account }}
      nodeSelector: {{ node_selector }}
      containers:
      - name: server
        image: {{ parameters.image }}
        ports:
        - containerPort: {{ parameters.port }}
        resources:
          requests:
            cpu: "4"
            memory: 16Gi
          limits:
            memory: 16Gi
            google.com/tpu: {{ parameters.chips if parameters.chips is defined else tpu.chips_per_host }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
spec:
  type: ClusterIP
  selector:
    app.kubernetes.io/name: {{ name }}
  ports:
  - port: {{ parameters.port }}
    targetPort: {{ parameters.port }}
"#;

const BLUEPRINT: &str = "apiVersion: aiml.dev/v1alpha1
kind: TpuServer
metadata:
  name: gemma-server
spec:
  project: my-project
  tpu:
    type: v5litepod-8
  image: us-docker.pkg.dev/my-project/serving/server:1.0
";

const DEPLOYMENT: &str =
    "rendered/gemma-server/workload/gemma-server/deployment.apps_gemma-server.yaml";

/// A repository with the `TpuServer` kind and one blueprint of it.
fn repository(blueprint: &str) -> TestRepo {
    let repo = TestRepo::empty();
    repo.write("kinds/TpuServer/kind.yaml", KIND);
    repo.write("kinds/TpuServer/templates/server.yaml", TEMPLATE);
    repo.write("blueprints/server.yaml", blueprint);
    repo
}

fn read(repo: &TestRepo, path: &str) -> String {
    std::fs::read_to_string(repo.path().join(path)).expect("read")
}

#[test]
fn a_repository_kind_renders_through_the_shared_blocks() {
    let repo = repository(BLUEPRINT);
    // Documentation beside the definition, binary or not, is no template.
    repo.write("kinds/TpuServer/README.md", "# TpuServer\n");
    std::fs::write(
        repo.path().join("kinds/TpuServer/diagram.png"),
        b"\x89PNG\r\n\x1a\n\xff",
    )
    .expect("write");
    let run = repo.aiml(&["render"]);
    run.expect_code(0);
    // The workload is the kind's template, with the derived TPU plan and the defaults of
    // its parameters.
    insta::assert_snapshot!(read(&repo, DEPLOYMENT));
    // The GCP side comes from the shared blocks: one TPU pool of one v5e-8 host, in the
    // kind's zone, labelled for the blueprint, released (scaled to zero) while no pod needs it.
    let pool = read(
        &repo,
        "rendered/gemma-server/config-connector/my-project/containernodepool.container.cnrm.cloud.google.com_gemma-server-tpu-slice-0.yaml",
    );
    support::assert_contains_all(
        &pool,
        &[
            "machineType: ct5lp-hightpu-8t",
            "minNodeCount: 0",
            "maxNodeCount: 1",
            "aiml.dev/blueprint: gemma-server",
            "- us-west4-a",
        ],
    );
    // Every object carries the labels of the contract, like any kind's.
    let service = read(
        &repo,
        "rendered/gemma-server/workload/gemma-server/service_gemma-server.yaml",
    );
    support::assert_contains_all(
        &service,
        &["app.kubernetes.io/managed-by: kubectl-aiml", "port: 8000"],
    );
    repo.aiml(&["render", "--check"]).expect_code(0);
}

#[test]
fn a_bad_topology_in_a_repository_kind_is_caught_at_its_line() {
    let repo = repository(&BLUEPRINT.replace(
        "    type: v5litepod-8\n",
        "    type: v5litepod-8\n    topology: 4x4\n",
    ));
    let run = repo.aiml(&["validate"]);
    run.expect_code(1);
    insta::assert_snapshot!(run.stderr);
    // A family the kind does not support is a finding too.
    let v4 = repository(&BLUEPRINT.replace("v5litepod-8", "v4-8"));
    let run = v4.aiml(&["validate"]);
    run.expect_code(1);
    run.stderr_has("error[tpu-family-unsupported]")
        .stderr_has("blueprints/server.yaml:8");
}

#[test]
fn the_rendered_objects_go_through_every_rule() {
    // The kind lets a blueprint ask for fewer chips than the host has: the manifest rule
    // catches it on the rendered Deployment.
    let repo = repository(&format!("{BLUEPRINT}  chips: 4\n"));
    let run = repo.aiml(&["render"]);
    run.expect_code(1).stderr_has("error[tpu-chips-per-host]");
    assert!(repo.generated().is_empty(), "findings write nothing");
}

#[test]
fn parameters_are_checked_against_the_kinds_schema_at_the_blueprint_line() {
    let repo = repository(&BLUEPRINT.replace("  image:", "  port: 70000\n  image:"));
    let run = repo.aiml(&["validate"]);
    run.expect_code(2);
    insta::assert_snapshot!(run.stderr);

    let typo = repository(&format!("{BLUEPRINT}  prot: 80\n"));
    let run = typo.aiml(&["render"]);
    run.expect_code(2);
    run.stderr_has("unknown field `prot`")
        .stderr_has("blueprints/server.yaml:10:3")
        .stderr_has("did you mean `port`?");
    assert!(typo.generated().is_empty());

    // Shared parts are read strictly by the same types as the built-in kinds'.
    let shared = repository(&BLUEPRINT.replace("    type: v5litepod-8", "    typ: v5litepod-8"));
    let run = shared.aiml(&["validate"]);
    run.expect_code(2);
    run.stderr_has("blueprints/server.yaml:8")
        .stderr_has("spec.tpu.typ");
}

#[test]
fn blueprints_lists_repository_kinds_with_their_source() {
    let repo = repository(BLUEPRINT);
    let run = repo.aiml(&["blueprints"]);
    run.expect_code(0);
    insta::assert_snapshot!(run.stdout);
    let json: serde_json::Value =
        serde_json::from_str(&repo.aiml(&["blueprints", "-o", "json"]).stdout).expect("json");
    let kinds = json["kinds"].as_array().expect("kinds");
    let source = |name: &str| {
        kinds
            .iter()
            .find(|k| k["kind"] == name)
            .map(|k| k["source"].clone())
    };
    assert_eq!(source("TpuServer"), Some("kinds/TpuServer/".into()));
    assert_eq!(source("MultisliceTraining"), Some("built-in".into()));
    assert_eq!(json["blueprints"][0]["kind"], "TpuServer");

    // The spec's schema: the shared parts the kind takes, and its parameters.
    let run = repo.aiml(&["blueprints", "--schema", "TpuServer"]);
    run.expect_code(0);
    let schema: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    let properties = schema["properties"].as_object().expect("properties");
    for field in ["project", "tpu", "cluster", "image", "port"] {
        assert!(properties.contains_key(field), "no `{field}` in {schema}");
    }
    assert!(!properties.contains_key("gpu"), "a TPU kind takes no `gpu`");
    assert_eq!(
        schema["required"],
        serde_json::json!(["project", "tpu", "image"])
    );
    assert_eq!(schema["additionalProperties"], false);
}

#[test]
fn a_repository_kind_cannot_shadow_a_built_in_kind() {
    let repo = repository(BLUEPRINT);
    repo.write("kinds/MultisliceTraining/kind.yaml", KIND);
    let run = repo.aiml(&["render"]);
    run.expect_code(2);
    assert_eq!(
        run.stderr,
        "error: `kinds/MultisliceTraining/`: shadows the built-in kind `MultisliceTraining`: a repository cannot redefine a built-in kind; rename the folder\n"
    );
    assert!(repo.generated().is_empty());
}

#[test]
fn templates_cannot_include_files_outside_their_kind() {
    let repo = repository(BLUEPRINT);
    repo.write("secret.txt", "hunter2\n");
    repo.write(
        "kinds/TpuServer/templates/server.yaml",
        &format!("{TEMPLATE}---\n{{% include \"../../../secret.txt\" %}}\n"),
    );
    let run = repo.aiml(&["render"]);
    run.expect_code(2);
    run.stderr_has("template `kinds/TpuServer/templates/server.yaml` failed: line 48:")
        .stderr_has("a kind's templates include only files of `kinds/TpuServer/templates/`");
    run.stderr_lacks("hunter2");
    assert!(repo.generated().is_empty());

    // Files of the kind's own folder can be included, and partials (`_*`) render nothing
    // by themselves.
    let repo = repository(BLUEPRINT);
    repo.write(
        "kinds/TpuServer/templates/_labels.yaml",
        "        tier: {{ parameters.port | string }}\n",
    );
    repo.write(
        "kinds/TpuServer/templates/server.yaml",
        &TEMPLATE.replace(
            "        app.kubernetes.io/name: {{ name }}\n    spec:",
            "        app.kubernetes.io/name: {{ name }}\n{% include \"_labels.yaml\" %}\n    spec:",
        ),
    );
    let run = repo.aiml(&["render"]);
    run.expect_code(0);
    assert!(read(&repo, DEPLOYMENT).contains("tier: \"8000\""));
}

#[test]
fn a_kind_cannot_turn_rules_off_but_its_blueprint_can() {
    // The kind's template tries to hide the chip mismatch it renders.
    let sneaky = TEMPLATE.replace(
        "kind: Deployment\nmetadata:\n  name: {{ name }}\n",
        "kind: Deployment\nmetadata:\n  name: {{ name }}\n  annotations:\n    aiml.dev/ignore: tpu-chips-per-host\n",
    );
    let repo = repository(&format!("{BLUEPRINT}  chips: 4\n"));
    repo.write("kinds/TpuServer/templates/server.yaml", &sneaky);
    let run = repo.aiml(&["render"]);
    run.expect_code(2);
    run.stderr_has("sets `aiml.dev/ignore` for blueprint `gemma-server`")
        .stderr_has("a kind cannot turn rules off");
    assert!(repo.generated().is_empty());

    // The blueprint's own annotation is the one way to turn the rule off.
    let repo = repository(&format!("{BLUEPRINT}  chips: 4\n").replace(
        "  name: gemma-server\n",
        "  name: gemma-server\n  annotations:\n    aiml.dev/ignore: tpu-chips-per-host\n",
    ));
    let run = repo.aiml(&["render"]);
    run.expect_code(0).stderr_has("1 suppressed");
}

#[test]
fn broken_kind_definitions_are_errors_naming_the_file_and_line() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "kinds/TpuServer/templates/server.yaml",
            "{% if %}\n",
            "error: `kinds/TpuServer/templates/server.yaml:1`: template syntax error:",
        ),
        (
            "kinds/TpuServer/kind.yaml",
            &KIND.replace(
                "      type: integer\n      minimum",
                "      type: integr\n      minimum",
            ),
            "error: `kinds/TpuServer/kind.yaml:16`: `schema.properties.port.type` is no valid JSON Schema",
        ),
        (
            "kinds/TpuServer/kind.yaml",
            &KIND.replace(
                "    image:\n",
                "    project:\n      type: string\n    image:\n",
            ),
            "error: `kinds/TpuServer/kind.yaml:12`: parameter `project` is a shared spec field of every kind; rename it",
        ),
        (
            "kinds/TpuServer/kind.yaml",
            &format!("{KIND}replicas: 2\n"),
            "error: `kinds/TpuServer/kind.yaml:24`: unknown field `replicas`",
        ),
        (
            "kinds/TpuServer/templates/server.yaml",
            &format!("{TEMPLATE}---\n- not\n- an object\n"),
            "rendered a document that is not a Kubernetes object for blueprint `gemma-server` (line 61 of the output)",
        ),
        (
            "kinds/TpuServer/templates/server.yaml",
            &format!("{TEMPLATE}---\nkey: [unclosed\n"),
            "rendered malformed YAML for blueprint `gemma-server`",
        ),
        (
            "kinds/TpuServer/templates/server.yaml",
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
            "the template ran too long (a runaway loop?)",
        ),
    ];
    for (file, text, expected) in cases {
        let repo = repository(BLUEPRINT);
        repo.write(file, text);
        let run = repo.aiml(&["render"]);
        assert_eq!(run.code, 2, "{file}: {}", run.transcript());
        assert!(run.stderr.contains(expected), "{file}: {}", run.stderr);
        assert!(repo.generated().is_empty(), "{file}: something was written");
    }
}

#[test]
fn changing_a_kinds_files_renders_its_blueprints_again() {
    let repo = repository(BLUEPRINT);
    repo.aiml(&["render"]).expect_code(0);
    let again = repo.aiml(&["render"]);
    again.stderr_has("0 files changed");
    // The blueprint did not change; the kind's template did.
    repo.write(
        "kinds/TpuServer/templates/server.yaml",
        &TEMPLATE.replace("cpu: \"4\"", "cpu: \"2\""),
    );
    let run = repo.aiml(&["render"]);
    run.expect_code(0).stderr_lacks("0 files changed");
    assert!(read(&repo, DEPLOYMENT).contains("cpu: \"2\""));
    // Any file of the folder counts, not only templates.
    repo.write("kinds/TpuServer/kind.yaml", &KIND.replace("8000", "9000"));
    repo.aiml(&["render"]).expect_code(0);
    assert!(read(&repo, DEPLOYMENT).contains("containerPort: 9000"));
    repo.aiml(&["render", "--check"]).expect_code(0);
}

#[test]
fn a_gpu_kind_gets_its_pool_selector_and_bucket_from_the_shared_blocks() {
    let repo = TestRepo::empty();
    repo.write(
        "kinds/GpuBatch/kind.yaml",
        "summary: A batch Job on the blueprint's GPU pool, reading and writing its bucket
accelerator: gpu
bucket: true
schema:
  type: object
  properties:
    image: {type: string, default: \"python:3.12\"}
",
    );
    repo.write(
        "kinds/GpuBatch/templates/job.yaml",
        r#"{% import "aiml/workload.yaml" as blocks %}
{{ blocks.namespace(namespace) }}
{{ blocks.workload_identity_service_account(kubernetes_service_account, namespace, workload_service_account) }}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      serviceAccountName: {{ kubernetes_service_account }}
      nodeSelector: {{ node_selector }}
      containers:
      - name: batch
        image: {{ parameters.image }}
        env:
        - name: OUTPUT
          value: {{ bucket.url }}
        resources:
          requests:
            cpu: "2"
            memory: 8Gi
          limits:
            memory: 8Gi
            nvidia.com/gpu: {{ gpu.count }}
"#,
    );
    repo.write(
        "blueprints/batch.yaml",
        "apiVersion: aiml.dev/v1alpha1
kind: GpuBatch
metadata:
  name: batch
spec:
  project: my-project
  gpu: {type: nvidia-l4, count: 1}
  gpuPool: {autoscaling: {minNodes: 0, maxNodes: 2}}
",
    );
    let run = repo.aiml(&["render"]);
    run.expect_code(0);
    let job = std::fs::read_to_string(support::rendered_run(
        &repo.path().join("rendered/batch/workload/batch"),
        "job.batch_batch-",
    ))
    .expect("read");
    support::assert_contains_all(
        &job,
        &[
            "cloud.google.com/gke-accelerator: nvidia-l4",
            "aiml.dev/blueprint: batch",
            "nvidia.com/gpu: 1",
            "value: gs://my-project-batch",
            "image: python:3.12",
        ],
    );
    let pool = read(
        &repo,
        "rendered/batch/config-connector/my-project/containernodepool.container.cnrm.cloud.google.com_batch-gpu-pool.yaml",
    );
    support::assert_contains_all(&pool, &["machineType: g2-standard-4", "maxNodeCount: 2"]);
    assert!(
        repo.path()
            .join("rendered/batch/config-connector/my-project/storagebucket.storage.cnrm.cloud.google.com_my-project-batch.yaml")
            .is_file()
    );

    // The `gpu` stanza is checked through the catalog like the built-in kinds'.
    repo.write(
        "blueprints/batch.yaml",
        &read(&repo, "blueprints/batch.yaml")
            .replace("nvidia-l4, count: 1", "nvidia-tesla-t4, count: 3"),
    );
    let run = repo.aiml(&["validate"]);
    run.expect_code(1);
    run.stderr_has("error[gpu-count]")
        .stderr_has("blueprints/batch.yaml:7");
}

#[test]
fn render_commit_takes_the_kinds_files_with_the_output() {
    let repo = repository(BLUEPRINT);
    let git = git2::Repository::init(repo.path()).expect("git init");
    let identity: [(&str, &std::ffi::OsStr); 4] = [
        ("GIT_AUTHOR_NAME", "Test Author".as_ref()),
        ("GIT_AUTHOR_EMAIL", "author@example.com".as_ref()),
        ("GIT_COMMITTER_NAME", "Test Committer".as_ref()),
        ("GIT_COMMITTER_EMAIL", "committer@example.com".as_ref()),
    ];
    let run = repo.aiml_with_env(&["render", "--commit"], &identity);
    run.expect_code(0);
    let tree = git
        .head()
        .and_then(|head| head.peel_to_tree())
        .expect("a commit");
    for path in [
        "kinds/TpuServer/kind.yaml",
        "kinds/TpuServer/templates/server.yaml",
        "blueprints/server.yaml",
        "overlays/gemma-server/workload/resources.yaml",
    ] {
        assert!(
            tree.get_path(std::path::Path::new(path)).is_ok(),
            "`{path}` is not in the commit"
        );
    }
}

#[test]
fn a_kinds_folder_of_another_project_is_left_alone() {
    // A git work tree without `blueprints/`: `validate` checks manifests there, and the
    // project's own `kinds/` folder means nothing to kubectl-aiml.
    let repo = TestRepo::empty();
    std::fs::create_dir(repo.path().join(".git")).expect("mkdir");
    repo.write("kinds/Go/types.go", "package kinds\n");
    let run = repo.validate_manifest(
        "namespace.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: apps\n",
    );
    run.expect_code(0);
    // In a kubectl-aiml repository the same folder is a broken kind.
    repo.write("blueprints/server.yaml", BLUEPRINT);
    let run = repo.aiml(&["validate", "k8s"]);
    run.expect_code(2).stderr_has("`kinds/Go/`: no `kind.yaml`");
}

#[test]
fn a_kind_without_accelerator_or_fields_of_its_own() {
    let repo = TestRepo::empty();
    repo.write(
        "kinds/Notes/kind.yaml",
        "summary: A ConfigMap of notes on the blueprint's cluster\n",
    );
    repo.write(
        "kinds/Notes/templates/notes.yaml",
        "apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name ~ \"-notes\" }}
  namespace: default
data:
  cluster: {{ cluster.name }}
  selector: {{ node_selector | length | string }}
",
    );
    let blueprint = "apiVersion: aiml.dev/v1alpha1
kind: Notes
metadata:
  name: notes
spec:
  project: my-project
";
    repo.write("blueprints/notes.yaml", blueprint);
    let run = repo.aiml(&["render"]);
    run.expect_code(0);
    let notes = read(
        &repo,
        "rendered/notes/workload/default/configmap_notes-notes.yaml",
    );
    support::assert_contains_all(&notes, &["cluster: notes", "selector: \"0\""]);

    // Without `accelerator: tpu` the stanza is no field of the kind.
    repo.write(
        "blueprints/notes.yaml",
        &format!("{blueprint}  tpu: {{type: v6e-8}}\n"),
    );
    let run = repo.aiml(&["validate"]);
    run.expect_code(2);
    run.stderr_has("unknown field `tpu`")
        .stderr_has("blueprints/notes.yaml:7:3");
}

/// Copies the folder `from` into `to`, recursively.
fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

#[test]
fn the_example_repository_kind_renders_what_is_committed() {
    let repo = TestRepo::empty();
    copy_dir(
        std::path::Path::new("examples/repository-kind"),
        repo.path(),
    );
    let run = repo.aiml(&["render", "--check"]);
    run.expect_code(0);
    let run = repo.aiml(&["blueprints"]);
    run.stdout_has("TpuSmokeTest           kinds/TpuSmokeTest/");
    // The template reads the slice's numbers: a single-host type is one pod of 8 chips.
    repo.write(
        "blueprints/smoke-v5e-16.yaml",
        &read(&repo, "blueprints/smoke-v5e-16.yaml").replace("v5litepod-16", "v5litepod-8"),
    );
    let run = repo.aiml(&["render"]);
    run.expect_code(0);
    let job = std::fs::read_to_string(support::rendered_run(
        &repo
            .path()
            .join("rendered/smoke-v5e-16/workload/smoke-v5e-16"),
        "job.batch_smoke-v5e-16-",
    ))
    .expect("read");
    support::assert_contains_all(&job, &["parallelism: 1", "google.com/tpu: 8"]);
}
