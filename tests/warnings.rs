//! Warnings never change the exit code (CONTRACT.md, "Exit codes"), on every path that reports
//! findings: `validate` of a file, a folder, standard input and the repository, with text or
//! JSON output; `render`, `render --check`; `diff --render` and `diff` of the working tree.
//!
//! Each case must print a warning (so the sweep cannot pass by finding nothing) and exit 0.
//! The manifest draws the warning of a multi-host JobSet whose one slice is not kept to a node
//! pool (`jobset-exclusive-topology`) and nothing else; the blueprint draws `yaml-ambiguous`
//! (an input rule, whose errors exit 2, but whose warnings must not).

mod support;

use support::{TestRepo, commit_all};

/// One multi-host TPU slice, with the exclusive-topology annotation keyed on the topology label
/// rather than the node pool: a warning and nothing else, schema and rules alike.
const JOBSET: &str = "\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: one-slice
  namespace: default
  annotations:
    alpha.jobset.sigs.k8s.io/exclusive-topology: cloud.google.com/gke-tpu-topology
spec:
  replicatedJobs:
  - name: slice
    replicas: 1
    template:
      spec:
        parallelism: 4
        completions: 4
        template:
          spec:
            restartPolicy: Never
            securityContext: {seccompProfile: {type: RuntimeDefault}}
            nodeSelector:
              cloud.google.com/gke-tpu-accelerator: tpu-v4-podslice
              cloud.google.com/gke-tpu-topology: 2x2x4
            containers:
            - name: jax
              image: python:3.12
              securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
              resources:
                limits:
                  google.com/tpu: 4
";

const WARNING: &str = "warning[jobset-exclusive-topology]";

#[test]
fn warnings_on_manifests_exit_0_on_every_path() {
    let repo = TestRepo::empty();
    repo.write("k8s/jobset.yaml", JOBSET);
    for args in [
        &["validate", "k8s/jobset.yaml"][..],
        &["validate", "k8s"],
        &["validate", "--strict", "k8s"],
    ] {
        repo.aiml(args)
            .about(args.join(" "))
            .expect_code(0)
            .stderr_has(WARNING)
            .stderr_lacks("error[");
    }
    let json = repo.aiml(&["validate", "-o", "json", "k8s"]);
    json.expect_code(0);
    let findings = json.findings();
    assert!(
        !findings.is_empty() && findings.iter().all(|f| f["severity"] == "warning"),
        "{findings:?}"
    );
    support::aiml_with_stdin(repo.path(), &["validate", "-"], JOBSET.as_bytes(), &[])
        .about("stdin")
        .expect_code(0)
        .stderr_has(WARNING);
}

#[test]
fn warnings_on_blueprints_exit_0_through_render_and_diff() {
    let repo = TestRepo::new();
    let blueprint = "blueprints/multislice-v4-32-training.yaml";
    // `0b10` is 2 to kubectl and the tool, the string "0b10" to YAML 1.2: a warning only.
    let text = support::EXAMPLE.replace("    slices: 2\n", "    slices: 0b10\n");
    assert_ne!(
        text,
        support::EXAMPLE,
        "the example's `slices: 2` line moved"
    );
    repo.write(blueprint, &text);
    let warning = "warning[yaml-ambiguous]";
    for args in [&["render"][..], &["render", "--check"], &["validate"]] {
        repo.aiml(args)
            .about(args.join(" "))
            .expect_code(0)
            .stderr_has(warning);
    }
    let git = git2::Repository::init(repo.path()).expect("git init");
    let who = git2::Signature::now("t", "t@example.com").expect("signature");
    commit_all(&git, &who, "render");
    for args in [
        &["diff", "--render", "--exit-code"][..],
        &["diff", "--exit-code"],
    ] {
        repo.aiml(args).about(args.join(" ")).expect_code(0);
    }
    repo.aiml(&["diff", "--render", "--exit-code"])
        .stderr_has(warning);
}

/// Files that are not manifests are said to be so, once each, as a warning, and nothing in them
/// is read as an object (exit 0): a Helm chart template (whose `{{ }}` lines are not YAML) and a
/// kustomize patch listed by the kustomization beside it (which lacks what its base gives).
/// A manifest whose strings hold `{{ }}` (a Jinja chat template) is still checked.
#[test]
fn templates_and_patches_are_reported_once_as_not_objects() {
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/public/sources");
    let repo = TestRepo::empty();
    for file in [
        "chart/templates/job.yaml",
        "overlay/kustomization.yaml",
        "overlay/patch.yaml",
        "configmap-chat-template.yaml",
    ] {
        repo.write(
            &format!("k8s/{file}"),
            &std::fs::read_to_string(fixtures.join(file)).unwrap(),
        );
    }
    let run = repo.aiml(&["validate", "-o", "json", "k8s/chart", "k8s/overlay"]);
    run.expect_code(0);
    let findings = run.findings();
    let seen: Vec<(String, String, String)> = findings
        .iter()
        .map(|f| {
            let file = f["file"].as_str().unwrap_or("").to_string();
            let message = f["message"].as_str().unwrap_or("").to_string();
            (f["rule"].as_str().unwrap_or("").to_string(), file, message)
        })
        .collect();
    let about = |needle: &str| {
        seen.iter()
            .filter(|(_, file, _)| file.ends_with(needle))
            .collect::<Vec<_>>()
    };
    let template = about("templates/job.yaml");
    assert_eq!(template.len(), 1, "{seen:#?}");
    assert_eq!(template[0].0, "not-an-object");
    assert!(
        template[0]
            .2
            .starts_with("Helm template (`{{- if .Values.job.enabled }}`)"),
        "{seen:#?}"
    );
    let patch = about("overlay/patch.yaml");
    assert_eq!(patch.len(), 1, "{seen:#?}");
    assert_eq!(patch[0].0, "not-an-object");
    assert!(
        patch[0].2.starts_with("kustomize patch (listed in `"),
        "{seen:#?}"
    );
    assert!(
        patch[0].2.contains("overlay/kustomization.yaml"),
        "{seen:#?}"
    );
    // The kustomization itself is the document that is not an object, as before.
    assert_eq!(about("overlay/kustomization.yaml").len(), 1, "{seen:#?}");
    assert_eq!(findings.len(), 3, "{seen:#?}");
    // Braces in a manifest's strings do not make it a template: its defect is found.
    repo.aiml(&["validate", "k8s/configmap-chat-template.yaml"])
        .expect_code(1)
        .stderr_has("error[schema-violation]")
        .stderr_lacks("Helm template");
}
