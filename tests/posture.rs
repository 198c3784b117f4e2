//! Security posture of what this repository renders, judged by an outside scanner: checkov
//! (pinned in scripts/checkov-requirements.txt, installed by scripts/install-test-deps) over
//! each shipped blueprint's `rendered/<name>/workload/`.
//!
//! Two promises are held here:
//! - the basics hold for every workload the tool writes, with no exception: each check in
//!   [`ALWAYS_PASS`] passes on every Deployment and Job of every blueprint;
//! - per workload, the failed checks are at most a quarter of what the reference guide the
//!   blueprint replaces fails ([`REFERENCES`], measured once with the same checkov).
//!
//! checkov reads Pods, Deployments, Jobs and the like but not JobSets or LeaderWorkerSets, so the
//! TPU pods are not judged here; `validate`'s own rules (tests/validate_rules.rs) cover them.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Failed checkov checks per workload of each reference guide, measured with checkov 3.3.30
/// on 2026-11-27 (`checkov -d <dir> --framework kubernetes`, failed checks of the Deployments,
/// Jobs and their Pods, per workload). The guides are named in docs and NOTES; their manifests
/// are not part of this repository.
const REFERENCES: &[(&str, f64, &str)] = &[
    (
        "triton-t4-hpa",
        35.0 / 2.0,
        "jarokaz/triton-on-gke-sandbox@5d0dc31 env-setup: 35 failed / 2 workloads",
    ),
    (
        "sax-llama2-70b-v5e-16",
        113.0 / 6.0,
        "applied-ai-engineering-samples@6b37d30 saxml-on-gke/environment: 113 failed / 6 workloads",
    ),
    (
        "locust-bench",
        34.0 / 2.0,
        "applied-ai-engineering-samples@b0f729b saxml-on-gke/environment/3-load_generator: 34 failed / 2 workloads",
    ),
    // The TPU training guide's workloads are JobSets, which checkov does not read: the lowest
    // of the other guides stands in for it.
    (
        "multislice-v4-32-training",
        34.0 / 2.0,
        "no checkov-readable workload in ai-on-gke tpu-training-on-gke: the lowest guide's figure",
    ),
];

/// The share of a reference guide's failed checks a shipped blueprint may fail, per workload.
const AT_MOST: f64 = 0.25;

/// Checks every workload of every shipped blueprint passes: pod and container security
/// context, capabilities, privilege escalation, seccomp, NetworkPolicy coverage.
const ALWAYS_PASS: &[(&str, &str)] = &[
    ("CKV_K8S_20", "allowPrivilegeEscalation: false"),
    ("CKV_K8S_28", "NET_RAW dropped"),
    ("CKV_K8S_29", "pod securityContext"),
    ("CKV_K8S_30", "container securityContext"),
    ("CKV_K8S_31", "seccomp RuntimeDefault"),
    ("CKV_K8S_37", "capabilities dropped"),
    ("CKV2_K8S_6", "a NetworkPolicy selects the pod"),
];

const WORKLOAD_KINDS: &[&str] = &[
    "Deployment",
    "Job",
    "StatefulSet",
    "DaemonSet",
    "CronJob",
    "Pod",
];

/// The pinned checkov, from `AIML_TEST_CHECKOV` or the cache scripts/install-test-deps fills.
fn checkov() -> PathBuf {
    if let Some(path) = std::env::var_os("AIML_TEST_CHECKOV").filter(|p| !p.is_empty()) {
        return PathBuf::from(path);
    }
    let requirements = include_str!("../scripts/checkov-requirements.txt");
    let version = requirements
        .lines()
        .find_map(|line| line.strip_prefix("checkov=="))
        .expect("scripts/checkov-requirements.txt pins checkov");
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    let path = cache
        .join("kubectl-aiml")
        .join(format!("checkov-{version}"))
        .join("bin")
        .join("checkov");
    assert!(
        path.is_file(),
        "checkov {version} is not installed at {}; run scripts/install-test-deps",
        path.display()
    );
    path
}

/// `(check id, resource)` of every failed check checkov reports for `folder`, which is copied
/// first to a folder checkov reads (it skips any path with a hidden folder in it, and a clone
/// may live under one).
fn failed_checks(checkov: &Path, folder: &Path) -> Vec<(String, String)> {
    let copy = tempfile::Builder::new()
        .prefix("posture")
        .tempdir()
        .expect("temporary folder");
    support::copy_dir(folder, copy.path());
    let folder = copy.path();
    let output = Command::new(checkov)
        .args(["--framework", "kubernetes", "--output", "json", "--quiet"])
        .args(["--compact", "--skip-download", "-d"])
        .arg(folder)
        // No telemetry, no calls home: the verdict depends on the pinned checks alone.
        .env("BC_SKIP_MAPPING", "TRUE")
        .env("CHECKOV_RUN_SCA_PACKAGE_SCAN_V2", "false")
        .output()
        .expect("run checkov");
    let text = String::from_utf8_lossy(&output.stdout);
    let report: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|error| {
        panic!(
            "checkov on {} printed no JSON report ({error}); stderr:\n{}",
            folder.display(),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let reports = match report {
        serde_json::Value::Array(reports) => reports,
        report => vec![report],
    };
    let mut failed = Vec::new();
    let judged: u64 = reports
        .iter()
        .map(|r| {
            r["summary"]["passed"].as_u64().unwrap_or(0)
                + r["summary"]["failed"].as_u64().unwrap_or(0)
        })
        .sum();
    // An empty verdict means checkov read nothing, not that everything passed.
    assert!(judged > 0, "checkov judged nothing in {}", folder.display());
    for report in &reports {
        for check in report["results"]["failed_checks"]
            .as_array()
            .into_iter()
            .flatten()
        {
            failed.push((
                check["check_id"].as_str().unwrap_or_default().to_string(),
                check["resource"].as_str().unwrap_or_default().to_string(),
            ));
        }
    }
    failed
}

/// `Kind.namespace.name[.…]` → `(namespace, name)` when the kind carries pods: checkov names a
/// controller's pod after the controller, so both count as one workload.
fn workload_of(resource: &str) -> Option<(String, String)> {
    let mut parts = resource.splitn(4, '.');
    let (kind, namespace, name) = (parts.next()?, parts.next()?, parts.next()?);
    WORKLOAD_KINDS
        .contains(&kind)
        .then(|| (namespace.to_string(), name.to_string()))
}

/// The Deployments and Jobs of a rendered workload folder, as `(namespace, name)`.
fn workloads(folder: &Path) -> BTreeSet<(String, String)> {
    let mut found = BTreeSet::new();
    for (path, content) in aiml::render::read_tree(folder).expect("read rendered") {
        if !path.ends_with(".yaml") {
            continue;
        }
        let text = String::from_utf8(content).expect("utf-8");
        for document in aiml::yaml::parse_documents(&text).expect("yaml") {
            let kind = document.get("kind").and_then(|k| k.as_str());
            if !kind.is_some_and(|k| WORKLOAD_KINDS.contains(&k)) {
                continue;
            }
            let field = |name: &str| {
                document
                    .get("metadata")
                    .and_then(|m| m.get(name))
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_string()
            };
            found.insert((field("namespace"), field("name")));
        }
    }
    found
}

#[test]
fn shipped_blueprints_fail_at_most_a_quarter_of_their_reference_guides_checks() {
    let checkov = checkov();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let shipped: BTreeSet<String> = support::shipped_blueprints()
        .into_iter()
        .map(|s| s.name)
        .collect();
    let measured: BTreeSet<String> = REFERENCES.iter().map(|r| r.0.to_string()).collect();
    assert_eq!(
        shipped, measured,
        "every shipped blueprint needs its reference figure in REFERENCES"
    );
    let mut problems = Vec::new();
    let mut table = String::new();
    for (blueprint, reference, source) in REFERENCES {
        let folder = root.join("rendered").join(blueprint).join("workload");
        let ours = workloads(&folder);
        assert!(
            !ours.is_empty(),
            "{blueprint}: no workload in {}",
            folder.display()
        );
        let failed = failed_checks(&checkov, &folder);
        let mut per_check: BTreeMap<&str, BTreeSet<(String, String)>> = BTreeMap::new();
        let mut count = 0usize;
        for (check, resource) in &failed {
            let Some(workload) = workload_of(resource) else {
                continue;
            };
            if !ours.contains(&workload) {
                continue;
            }
            count += 1;
            per_check.entry(check).or_default().insert(workload);
        }
        for (check, why) in ALWAYS_PASS {
            if let Some(workloads) = per_check.get(check) {
                problems.push(format!(
                    "{blueprint}: {check} ({why}) fails on {workloads:?}"
                ));
            }
        }
        let per_workload = count as f64 / ours.len() as f64;
        let share = per_workload / reference;
        table.push_str(&format!(
            "{blueprint}: {count} failed / {} workloads = {per_workload:.2} per workload, {share:.2} of the reference's {reference:.2} ({source}); failing: {:?}\n",
            ours.len(),
            per_check.keys().collect::<Vec<_>>()
        ));
        if share > AT_MOST {
            problems.push(format!(
                "{blueprint}: {per_workload:.2} failed checks per workload is {share:.2} of the reference guide's {reference:.2}, more than {AT_MOST}"
            ));
        }
    }
    assert!(problems.is_empty(), "{}\n{table}", problems.join("\n"));
}

#[test]
fn the_scanner_sees_a_bare_deployment_fail_the_basics() {
    // Keeps the test above honest: the same invocation on an unhardened Deployment must report
    // every check the test requires to pass.
    let checkov = checkov();
    let folder = tempfile::tempdir().expect("temporary folder");
    std::fs::write(
        folder.path().join("deployment.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: bare\n  namespace: team\nspec:\n  selector:\n    matchLabels: {app: bare}\n  template:\n    metadata:\n      labels: {app: bare}\n    spec:\n      containers:\n      - name: bare\n        image: nginx:1.27\n",
    )
    .expect("write");
    let failed: BTreeSet<String> = failed_checks(&checkov, folder.path())
        .into_iter()
        .filter(|(_, resource)| workload_of(resource).is_some())
        .map(|(check, _)| check)
        .collect();
    for (check, why) in ALWAYS_PASS {
        assert!(
            failed.contains(*check),
            "checkov did not report {check} ({why}) on a bare Deployment: {failed:?}"
        );
    }
}
