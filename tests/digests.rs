//! Images pinned by digest, when a repository or a run asks for it (`image-digest`): off by
//! default, on with `images.requireDigests` in `aiml.yaml` or `--require-digests`, on manifests
//! and on what blueprints render, with the finding at the field that names the image.

mod support;

use support::TestRepo;

const TAGGED: &str = "apiVersion: batch/v1
kind: Job
metadata: {name: preprocess, namespace: ml}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: us-docker.pkg.dev/p/r/preprocess:1.4.0
";

const DIGEST: &str = "sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945";

fn digest_findings(run: &support::Run) -> Vec<serde_json::Value> {
    run.findings()
        .into_iter()
        .filter(|f| f["rule"] == "image-digest")
        .collect()
}

#[test]
fn a_tag_is_accepted_unless_digests_are_required() {
    let repo = TestRepo::empty();
    repo.write("k8s/job.yaml", TAGGED);
    let run = repo.aiml(&["validate", "-o", "json", "k8s"]);
    run.expect_code(0);
    assert!(digest_findings(&run).is_empty(), "{}", run.stdout);

    let run = repo.aiml(&["validate", "-o", "json", "--require-digests", "k8s"]);
    run.expect_code(1);
    let found = digest_findings(&run);
    assert_eq!(found.len(), 1, "{}", run.stdout);
    assert_eq!(found[0]["severity"], "error");
    assert_eq!(found[0]["line"], 10, "the image's line: {}", run.stdout);
    assert_eq!(found[0]["found"], "us-docker.pkg.dev/p/r/preprocess:1.4.0");

    // The same image with its digest passes; the tag may stay for the reader.
    repo.write(
        "k8s/job.yaml",
        &TAGGED.replace(":1.4.0", &format!(":1.4.0@{DIGEST}")),
    );
    repo.aiml(&["validate", "--require-digests", "k8s"])
        .expect_code(0);
}

#[test]
fn no_tag_is_one_digest_error_not_also_a_warning() {
    let repo = TestRepo::empty();
    repo.write("k8s/job.yaml", &TAGGED.replace(":1.4.0", ""));
    let run = repo.aiml(&["validate", "-o", "json", "--require-digests", "k8s"]);
    run.expect_code(1);
    let rules: Vec<_> = run
        .findings()
        .iter()
        .map(|f| f["rule"].as_str().unwrap_or_default().to_string())
        .filter(|rule| rule.starts_with("image-"))
        .collect();
    assert_eq!(rules, ["image-digest"], "{}", run.stdout);
}

#[test]
fn the_repository_setting_applies_to_manifests_and_blueprints() {
    let repo = TestRepo::new();
    repo.write("aiml.yaml", "images:\n  requireDigests: true\n");
    repo.write("k8s/job.yaml", TAGGED);
    let run = repo.aiml(&["validate", "-o", "json", "k8s"]);
    run.expect_code(1);
    assert_eq!(digest_findings(&run).len(), 1, "{}", run.stdout);

    // The blueprint's training image: the finding is at the field that names it.
    let image = "us-docker.pkg.dev/my-project/train/trainer:7";
    let mut replaced = false;
    let blueprint: String = support::EXAMPLE
        .lines()
        .map(|line| {
            if !replaced && line.trim_start().starts_with("image: ") {
                replaced = true;
                format!("    image: {image}\n")
            } else {
                format!("{line}\n")
            }
        })
        .collect();
    assert!(replaced, "the example names its training image");
    repo.write("blueprints/multislice-v4-32-training.yaml", &blueprint);
    let run = repo.aiml(&["validate", "-o", "json"]);
    run.expect_code(1);
    let found = digest_findings(&run);
    let at_field: Vec<_> = found.iter().filter(|f| f["found"] == image).collect();
    assert_eq!(at_field.len(), 1, "{}", run.stdout);
    assert_eq!(
        at_field[0]["file"],
        "blueprints/multislice-v4-32-training.yaml"
    );
    let line = blueprint
        .lines()
        .position(|l| l.contains(image))
        .expect("image line")
        + 1;
    assert_eq!(at_field[0]["line"], line, "{}", run.stdout);

    // Without the setting, the same repository has no such finding.
    repo.write("aiml.yaml", "images:\n  requireDigests: false\n");
    let run = repo.aiml(&["validate", "-o", "json"]);
    assert!(digest_findings(&run).is_empty(), "{}", run.stdout);
}

#[test]
fn a_misspelt_setting_is_refused_with_its_field() {
    let repo = TestRepo::new();
    repo.write("aiml.yaml", "images:\n  requireDigest: true\n");
    repo.write("k8s/job.yaml", TAGGED);
    repo.aiml(&["validate", "k8s"])
        .expect_code(2)
        .stderr_has("requireDigest");
}
