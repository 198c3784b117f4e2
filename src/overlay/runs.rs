//! Run objects that can change: every Job and JobSet a workload target renders is named after
//! its content, as kustomize names a generated ConfigMap (`<name>-<10-character hash>`).
//!
//! A Job's `spec.template` and a JobSet's `spec.replicatedJobs` cannot change on an existing
//! object (the API server and the JobSet webhook refuse the update), so under a sync engine
//! that applies forever, an edited run would fail to apply on every attempt. Named after its
//! content, an edited run is a new object: the engine creates it and prunes the old one (its
//! Jobs and pods go with it), and `diff` reports the pair as one run replacing another. An
//! unchanged run keeps its name, so a finished run is never started again by a render, and a
//! run deleted by hand is recreated as it was.
//!
//! The pass edits the rendered text in place (the template's comments stay) and rewrites the
//! places that name a run: the `batch.kubernetes.io/job-name`, `job-name` and
//! `jobset.sigs.k8s.io/jobset-name` labels that Services and policies select its pods by.

use std::collections::BTreeMap;

use crate::yaml::{Node, Value};

use super::TemplateError;

/// Labels whose value is the name of the Job or JobSet that owns a pod.
const RUN_NAME_LABELS: &[&str] = &[
    "batch.kubernetes.io/job-name",
    "job-name",
    "jobset.sigs.k8s.io/jobset-name",
];

/// Length of the hash suffix (kustomize's), without its `-`.
const HASH_LEN: usize = 10;

/// A Job's name is also a label value on its pods: at most 63 characters.
const MAX_JOB_NAME: usize = 63;

/// Whether `(apiVersion, kind)` is a run object, and the most characters its name may have.
fn run_limit(object: &Node) -> Option<usize> {
    let api_version = object.get("apiVersion")?.as_str()?;
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    match (group, object.get("kind")?.as_str()?) {
        ("batch", "Job") => Some(MAX_JOB_NAME),
        // Each child Job is `<jobset>-<replicatedJob>-<index>` and must itself fit.
        ("jobset.x-k8s.io", "JobSet") => {
            let widest = object
                .at(&["spec", "replicatedJobs"])
                .and_then(Node::as_seq)
                .unwrap_or_default()
                .iter()
                .map(|job| {
                    let name = job.get("name").and_then(Node::as_str).map_or(0, str::len);
                    let replicas = job.get("replicas").and_then(Node::as_i64).unwrap_or(1);
                    let digits = (replicas.max(1) - 1).max(0).to_string().len();
                    name + digits + 2
                })
                .max()
                .unwrap_or(0);
            Some(MAX_JOB_NAME.saturating_sub(widest))
        }
        _ => None,
    }
}

/// The content hash of a run: its object without `metadata.name`, as JSON, through SHA-1,
/// spelled with kustomize's alphabet (hex without the vowel-like `0 1 3 a e`), so that
/// `diff` matches an old and a new name the way it matches generator renames.
fn content_hash(object: &Node) -> String {
    let mut json = crate::yaml::to_json(object);
    if let Some(metadata) = json.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        metadata.remove("name");
    }
    let text = json.to_string();
    let hex = git2::Oid::hash_object(git2::ObjectType::Blob, text.as_bytes())
        .map(|oid| oid.to_string())
        .unwrap_or_default();
    hex.chars()
        .take(HASH_LEN)
        .map(|c| match c {
            '0' => 'g',
            '1' => 'h',
            '3' => 'k',
            'a' => 'm',
            'e' => 't',
            other => other,
        })
        .collect()
}

/// `resources` (a YAML stream a workload template rendered) with every run object named after
/// its content and every label that selects its pods following it.
pub fn name_runs(template: &str, resources: String) -> Result<String, TemplateError> {
    let error = |message: String| TemplateError {
        template: template.to_string(),
        message,
    };
    let documents = crate::yaml::parse_documents(&resources)
        .map_err(|e| error(format!("the rendered objects do not parse: {e}")))?;
    let mut renamed: BTreeMap<String, String> = BTreeMap::new();
    let mut edits: Vec<(usize, String, String)> = Vec::new();
    for document in &documents {
        let Some(limit) = run_limit(document) else {
            continue;
        };
        let Some(name_node) = document.at(&["metadata", "name"]) else {
            continue;
        };
        let Some(name) = name_node.as_str() else {
            continue;
        };
        let hash = content_hash(document);
        let new = crate::names::shortened(name, &format!("-{hash}"), limit);
        renamed.insert(name.to_string(), new.clone());
        edits.push((name_node.span.offset, name.to_string(), new));
    }
    if renamed.is_empty() {
        return Ok(resources);
    }
    for document in &documents {
        selecting_labels(document, &renamed, &mut edits);
    }
    edits.sort_by_key(|(offset, _, _)| std::cmp::Reverse(*offset));
    edits.dedup_by_key(|(offset, _, _)| *offset);
    let mut text = resources;
    for (offset, old, new) in edits {
        let len = scalar_len(&text[offset..], &old).ok_or_else(|| {
            error(format!(
                "cannot find the name `{old}` where the rendered objects put it"
            ))
        })?;
        text.replace_range(
            offset..offset + len,
            &serde_json::Value::from(new).to_string(),
        );
    }
    Ok(text)
}

/// Every value of a [`RUN_NAME_LABELS`] key anywhere in `node` that names a renamed run.
fn selecting_labels(
    node: &Node,
    renamed: &BTreeMap<String, String>,
    edits: &mut Vec<(usize, String, String)>,
) {
    match &node.value {
        Value::Map(entries) => {
            for (key, value) in entries {
                if RUN_NAME_LABELS.contains(&key.text.as_str())
                    && let Some(old) = value.as_str()
                    && let Some(new) = renamed.get(old)
                {
                    edits.push((value.span.offset, old.to_string(), new.clone()));
                }
                selecting_labels(value, renamed, edits);
            }
        }
        Value::Seq(items) => {
            for item in items {
                selecting_labels(item, renamed, edits);
            }
        }
        _ => {}
    }
}

/// The length in bytes of the scalar at the start of `text` that spells `value`: plain, or in
/// double or single quotes. `None` when it spells something else.
fn scalar_len(text: &str, value: &str) -> Option<usize> {
    for quote in ['"', '\''] {
        if let Some(rest) = text.strip_prefix(quote) {
            // Names are DNS labels: no escapes inside the quotes.
            return (rest.strip_prefix(value)?.starts_with(quote)).then_some(value.len() + 2);
        }
    }
    let rest = text.strip_prefix(value)?;
    rest.chars()
        .next()
        .is_none_or(|c| c.is_whitespace() || c == '#')
        .then_some(value.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUNS: &str = r#"
# A comment the pass keeps.
apiVersion: v1
kind: Service
metadata:
  name: "smoke-workers"
spec:
  clusterIP: None
  selector:
    batch.kubernetes.io/job-name: "smoke"
---
apiVersion: batch/v1
kind: Job
metadata:
  name: "smoke"  # trailing comment
spec:
  template:
    spec:
      subdomain: smoke-workers
      containers:
      - name: jax
        image: "python:3.12"
---
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: training
spec:
  replicatedJobs:
  - name: slice
    replicas: 2
    template:
      spec:
        parallelism: 4
"#;

    fn names(text: &str) -> Vec<String> {
        crate::yaml::parse_documents(text)
            .unwrap()
            .iter()
            .map(|d| {
                d.at(&["metadata", "name"])
                    .and_then(Node::as_str)
                    .unwrap()
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn runs_are_named_after_their_content_and_selectors_follow() {
        let out = name_runs("t", RUNS.to_string()).unwrap();
        let names = names(&out);
        assert_eq!(names[0], "smoke-workers", "a Service keeps its name");
        let (job_stem, job_hash) = names[1].rsplit_once('-').unwrap();
        assert_eq!(job_stem, "smoke");
        assert_eq!(
            crate::gitops::diff::generator_stem(&names[1]),
            Some("smoke"),
            "diff matches it as a hash-suffixed name: {job_hash}"
        );
        assert!(names[2].starts_with("training-"), "{}", names[2]);
        assert!(out.contains(&format!("batch.kubernetes.io/job-name: \"{}\"", names[1])));
        assert!(out.contains("# A comment the pass keeps."));
        assert!(out.contains("# trailing comment"));
        // Deterministic, and idempotent only through the template: the same input, the same names.
        assert_eq!(name_runs("t", RUNS.to_string()).unwrap(), out);
    }

    #[test]
    fn any_change_to_a_run_gives_a_new_name_and_nothing_else_changes_it() {
        let before = names(&name_runs("t", RUNS.to_string()).unwrap());
        let three = names(&name_runs("t", RUNS.replace("replicas: 2", "replicas: 3")).unwrap());
        assert_eq!(before[1], three[1], "the Job did not change");
        assert_ne!(before[2], three[2], "the JobSet did");
        let image = names(&name_runs("t", RUNS.replace("3.12", "3.13")).unwrap());
        assert_ne!(before[1], image[1]);
        // Comments and quoting are not content.
        let restyled = RUNS
            .replace("# A comment the pass keeps.", "")
            .replace("name: training", "name: 'training'");
        assert_eq!(names(&name_runs("t", restyled).unwrap()), before);
    }

    #[test]
    fn names_fit_the_child_jobs_and_pod_labels() {
        let long = "a".repeat(60);
        let text = RUNS
            .replace("\"smoke\"", &format!("\"{long}\""))
            .replace("name: training", &format!("name: {long}"));
        let out = names(&name_runs("t", text).unwrap());
        assert!(out[1].len() <= 63, "{}", out[1]);
        // `<jobset>-slice-1` fits 63 characters.
        assert!(out[2].len() + "-slice-1".len() <= 63, "{}", out[2]);
        assert_ne!(out[1], out[2]);
    }

    #[test]
    fn streams_without_runs_are_returned_as_they_are() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n".to_string();
        assert_eq!(name_runs("t", text.clone()).unwrap(), text);
    }
}
