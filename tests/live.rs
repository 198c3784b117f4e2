//! `kubectl aiml status` end to end against a real kube-apiserver (tests/support/apiserver.rs):
//! the repository's own rendered output applied for real, statuses patched as Config Sync,
//! Config Connector and the controllers would write them (no controller runs), and the
//! command's lines, JSON and exit codes read back. Also: a user RBAC forbids, a cluster that
//! does not answer, a kubeconfig without the cluster's context.
//!
//! Needs `kube-apiserver` and `etcd` from `scripts/install-test-deps`; without them each test
//! fails, saying why; only where install-test-deps found no Go to build them is each test
//! skipped, saying so by name on the terminal.

#![allow(clippy::print_stderr, reason = "measurements are reported on stderr")]

mod support;

#[path = "support/apiserver.rs"]
mod apiserver_support;

use std::path::{Path, PathBuf};

use apiserver_support::{ApiServer, User, output_text};
use serde_json::{Value, json};
use support::{Run, aiml_command};

const BLUEPRINT: &str = "triton-t4-hpa";
const WORKLOAD_CONTEXT: &str = "gke_my-project_us-central1-a_triton-t4-hpa";
const HOST_CONTEXT: &str = "host";

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A git repository holding a copy of this repository's settings and rendered output, with
/// one commit; returns its folder and the commit id.
fn gitops_repository(dir: &Path) -> String {
    for top in ["rendered", "blueprints"] {
        copy_tree(&repo_root().join(top), &dir.join(top));
    }
    std::fs::copy(repo_root().join("aiml.yaml"), dir.join("aiml.yaml")).expect("copy aiml.yaml");
    let repo = git2::Repository::init(dir).expect("git init");
    let who = git2::Signature::now("Test", "test@example.com").expect("signature");
    support::commit_all(&repo, &who, "rendered").to_string()
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.expect("walk");
        let target = to.join(entry.path().strip_prefix(from).expect("under"));
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// `kubectl aiml status ARGS` in `repo` with `kubeconfig`.
fn status(repo: &Path, kubeconfig: &Path, args: &[&str]) -> Run {
    let mut all = vec!["status"];
    all.extend_from_slice(args);
    aiml(repo, kubeconfig, &all)
}

use support::aiml_with_kubeconfig as aiml;

/// The files of a blueprint's rendered output and of its sync objects.
fn blueprint_files(repo: &Path, blueprint: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(repo.join("rendered").join(blueprint))
        .sort_by_file_name()
        .into_iter()
        .map(|e| e.expect("walk").into_path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    for entry in walkdir::WalkDir::new(repo.join("rendered/_sync")).sort_by_file_name() {
        let path = entry.expect("walk").into_path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.ends_with(&format!("_aiml-{blueprint}.yaml"))
            || name.ends_with(&format!("_aiml-cc-{blueprint}.yaml"))
            || name.ends_with(&format!("_aiml-{blueprint}-workload.yaml"))
            || name.ends_with(&format!("_aiml-{blueprint}-config-connector.yaml"))
        {
            files.push(path);
        }
    }
    files
}

fn read_object(path: &Path) -> Value {
    serde_saphyr::from_str(&std::fs::read_to_string(path).expect("read")).expect("yaml")
}

/// Applies a blueprint's objects for real (namespaces first).
fn apply_blueprint(server: &ApiServer, repo: &Path, blueprint: &str) {
    for namespace in ["my-project", "config-management-system", "argocd"] {
        server.run_kubectl(&["create", "namespace", namespace]);
    }
    let files = blueprint_files(repo, blueprint);
    let (namespaces, others): (Vec<&PathBuf>, Vec<&PathBuf>) = files
        .iter()
        .partition(|p| read_object(p)["kind"] == "Namespace");
    for batch in [namespaces, others] {
        let mut cmd = server.kubectl();
        cmd.args([
            "apply",
            "--server-side",
            "--field-manager=configsync.gke.io",
        ]);
        for file in batch {
            cmd.arg("-f").arg(file);
        }
        let out = cmd.output().expect("kubectl");
        assert!(out.status.success(), "apply: {}", output_text(&out));
    }
}

const T: &str = "2026-11-27T10:00:00Z";

fn condition(kind: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": T})
}

/// The `status` a controller would write once the object is ready (`None`: the kind has no
/// status worth writing).
fn ready_status(object: &Value, head: &str) -> Option<Value> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let kind = object["kind"].as_str().unwrap_or_default();
    let replicas = object["spec"]["replicas"].as_i64().unwrap_or(1);
    Some(match (group, kind) {
        (g, _) if g.ends_with("cnrm.cloud.google.com") => json!({
            "conditions": [condition("Ready", "True", "UpToDate", "The resource is up to date")],
            "observedGeneration": 1,
        }),
        ("argoproj.io", "Application") => json!({
            "sync": {"status": "Synced", "revision": head},
            "health": {"status": "Healthy"},
            "operationState": {"operation": {"sync": {"revision": head}}, "phase": "Succeeded", "message": "successfully synced (all tasks run)", "startedAt": T},
        }),
        ("kueue.x-k8s.io", "ClusterQueue" | "LocalQueue") => json!({
            "conditions": [condition("Active", "True", "Ready", "Can admit new workloads")],
        }),
        ("jobset.x-k8s.io", "JobSet") => json!({
            "replicatedJobsStatus": [{"name": "slice", "ready": 2, "succeeded": 0, "failed": 0, "active": 2, "suspended": 0}],
        }),
        ("configsync.gke.io", "RootSync") => json!({
            "observedGeneration": 1,
            "source": {"commit": head},
            "rendering": {"commit": head},
            "sync": {"commit": head},
            "conditions": [condition("Syncing", "False", "Sync", "Sync Completed")],
        }),
        ("apps", "Deployment") => json!({
            "observedGeneration": 1,
            "replicas": replicas, "readyReplicas": replicas,
            "availableReplicas": replicas, "updatedReplicas": replicas,
            "conditions": [
                condition("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability."),
                condition("Progressing", "True", "NewReplicaSetAvailable", "ReplicaSet has successfully progressed."),
            ],
        }),
        ("autoscaling", "HorizontalPodAutoscaler") => json!({
            "currentReplicas": 1, "desiredReplicas": 1,
            "conditions": [
                condition("AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size"),
                condition("ScalingActive", "True", "ValidMetricFound", "the HPA was able to successfully calculate a replica count"),
            ],
        }),
        ("batch", "Job") => json!({
            "startTime": T, "completionTime": T, "succeeded": 1,
            "conditions": [
                condition("SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of succeeded pods"),
                condition("Complete", "True", "CompletionsReached", "Reached expected number of succeeded pods"),
            ],
        }),
        ("monitoring.googleapis.com", "PodMonitoring") => json!({
            "conditions": [{"type": "ConfigurationCreateSuccess", "status": "True", "lastUpdateTime": T, "lastTransitionTime": T}],
        }),
        ("", "Service") if object["spec"]["type"] == "LoadBalancer" => json!({
            "loadBalancer": {"ingress": [{"ip": "10.128.0.9", "ipMode": "VIP"}]},
        }),
        _ => return None,
    })
}

/// Writes `status` on the live object of `object` (the status subresource when it has one).
fn patch_status(server: &ApiServer, object: &Value, status: &Value) {
    let kind = object["kind"].as_str().expect("kind");
    let api_version = object["apiVersion"].as_str().expect("apiVersion");
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let resource = if group.is_empty() {
        kind.to_lowercase()
    } else {
        format!("{}.{group}", kind.to_lowercase())
    };
    let name = object["metadata"]["name"].as_str().expect("name");
    let mut args = vec![
        "patch".to_string(),
        resource,
        name.to_string(),
        "--subresource=status".into(),
        "--type=merge".into(),
        format!("--patch={}", json!({"status": status})),
    ];
    if let Some(namespace) = object["metadata"]["namespace"].as_str() {
        args.push(format!("--namespace={namespace}"));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = server.run_kubectl(&args);
    assert!(
        out.status.success(),
        "patch {args:?}: {}",
        output_text(&out)
    );
}

fn make_ready(server: &ApiServer, repo: &Path, blueprint: &str, head: &str) {
    for file in blueprint_files(repo, blueprint) {
        let object = read_object(&file);
        if let Some(status) = ready_status(&object, head) {
            patch_status(server, &object, &status);
        }
    }
}

fn line_of<'r>(run: &'r Run, target: &str) -> &'r str {
    line_of_blueprint(run, BLUEPRINT, target)
}

fn line_of_blueprint<'r>(run: &'r Run, blueprint: &str, target: &str) -> &'r str {
    run.stdout
        .lines()
        .find(|l| l.starts_with(&format!("{blueprint} ")) && l.contains(&format!(" {target} ")))
        .unwrap_or_else(|| panic!("no {target} line:\n{}", run.transcript()))
}

#[test]
fn status_follows_a_blueprint_from_nothing_to_ready_through_a_failure() {
    let Some(server) = ApiServer::start_or_skip(
        "status_follows_a_blueprint_from_nothing_to_ready_through_a_failure",
    ) else {
        return;
    };
    server.install_crds();
    let scratch = server.scratch();
    let repo = scratch.join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    let head = gitops_repository(&repo);
    let kubeconfig = scratch.join("kubeconfig");
    server.write_kubeconfig_with(
        &kubeconfig,
        &[(HOST_CONTEXT, User::Admin), (WORKLOAD_CONTEXT, User::Admin)],
        HOST_CONTEXT,
        None,
    );

    // 1. Nothing applied yet: every object is missing, and the sync objects too.
    let run = status(&repo, &kubeconfig, &[BLUEPRINT]);
    run.expect_code(1);
    let line = line_of(&run, "workload");
    assert!(
        line.contains("my-project/us-central1-a/triton-t4-hpa"),
        "{line}"
    );
    assert!(
        line.contains(" 0/26 ") && line.contains("missing"),
        "{line}"
    );

    // `diff --live` on the empty cluster: everything would be added; the objects in the
    // blueprint's own namespace cannot be dry-run before it exists (said, not refused); the
    // Config Connector namespace is the host's to provide, so its objects are refused.
    let run = aiml(&repo, &kubeconfig, &["diff", "--live", BLUEPRINT]);
    run.expect_code(1);
    run.stdout_has("refused by the server")
        .stdout_has("namespaces \"my-project\" not found")
        .stderr_has("not checked by the server")
        .stderr_has("Deployment/triton-t4-hpa/triton");
    assert!(
        !run.stdout.contains("Deployment/triton-t4-hpa/triton ["),
        "{}",
        run.transcript()
    );

    // 2. Applied, nothing reconciled: Config Connector has not answered.
    apply_blueprint(&server, &repo, BLUEPRINT);
    let run = status(&repo, &kubeconfig, &[BLUEPRINT]);
    run.expect_code(1);
    assert!(
        line_of(&run, "config-connector").contains("progressing"),
        "{}",
        run.transcript()
    );

    // 3. Everything reconciled but the GPU pool, refused for quota: failed, with the reason.
    make_ready(&server, &repo, BLUEPRINT, &head);
    let pool = read_object(&repo.join(format!(
        "rendered/{BLUEPRINT}/config-connector/my-project/containernodepool.container.cnrm.cloud.google.com_{BLUEPRINT}-gpu-pool.yaml"
    )));
    let quota = "Update call failed: error applying desired state: Quota 'NVIDIA_T4_GPUS' exceeded. Limit: 0.0 in region us-central1.";
    patch_status(
        &server,
        &pool,
        &json!({"conditions": [condition("Ready", "False", "UpdateFailed", quota)], "observedGeneration": 1}),
    );
    let run = status(&repo, &kubeconfig, &[BLUEPRINT]);
    run.expect_code(1);
    let line = line_of(&run, "config-connector");
    assert!(
        line.contains("failed")
            && line.contains("ContainerNodePool/my-project/triton-t4-hpa-gpu-pool")
            && line.contains("UpdateFailed")
            && line.contains("NVIDIA_T4_GPUS"),
        "{line}"
    );
    // `graph --live` colours the pool red, a ready object green.
    let run = aiml(&repo, &kubeconfig, &["graph", BLUEPRINT, "--live"]);
    run.expect_code(0);
    let node = |label: &str| {
        run.stdout
            .lines()
            .find(|l| l.contains(&format!("[\"{label}\"]")))
            .unwrap_or_else(|| panic!("no node {label}:\n{}", run.stdout))
            .to_string()
    };
    assert!(node("ContainerNodePool/my-project/triton-t4-hpa-gpu-pool").ends_with(":::failed"));
    assert!(node("ContainerCluster/my-project/triton-t4-hpa").ends_with(":::ready"));
    run.stdout_has("classDef failed fill:#f8d7da");
    let run = aiml(
        &repo,
        &kubeconfig,
        &["graph", BLUEPRINT, "--live", "-o", "dot"],
    );
    run.expect_code(0);
    run.stdout_has("fillcolor=\"#f8d7da\"");

    // `--wait` stops at once on a failure instead of waiting for the timeout.
    let began = std::time::Instant::now();
    status(&repo, &kubeconfig, &[BLUEPRINT, "--wait=2m"]).expect_code(1);
    assert!(began.elapsed() < std::time::Duration::from_secs(60));

    // 4. The pool recovers: everything is ready and synced at HEAD.
    patch_status(
        &server,
        &pool,
        &json!({"conditions": [condition("Ready", "True", "UpToDate", "The resource is up to date")]}),
    );
    let run = status(&repo, &kubeconfig, &[BLUEPRINT, "--wait=60s"]);
    run.expect_code(0);
    for target in ["config-connector", "workload"] {
        let line = line_of(&run, target);
        assert!(
            line.contains(&format!("{} (HEAD)", &head[..7])) && line.ends_with("ready"),
            "{line}"
        );
    }
    let run = status(&repo, &kubeconfig, &[BLUEPRINT, "-o", "json"]);
    run.expect_code(0);
    let report: Value = serde_json::from_str(&run.stdout).expect("json");
    assert_eq!(report["head"], head.as_str());
    let targets = report["targets"].as_array().expect("targets");
    assert_eq!(targets.len(), 2);
    for target in targets {
        assert_eq!(target["state"], "ready", "{target}");
        assert_eq!(target["ready"], target["total"], "{target}");
        assert_eq!(target["sync"]["at_head"], true, "{target}");
    }
    let run = status(&repo, &kubeconfig, &[BLUEPRINT, "-o", "yaml"]);
    run.expect_code(0);
    assert!(run.stdout.contains("state: ready"), "{}", run.transcript());

    // 5. `diff --live`: what was applied is what is rendered, so nothing would change.
    let run = aiml(&repo, &kubeconfig, &["diff", "--live", BLUEPRINT]);
    run.expect_code(0);
    run.stdout_has("no differences");

    // 6. A changed Job template (immutable), a changed Deployment, a removed ServiceAccount:
    // the server refuses the first, the others are changes, the last would be pruned.
    let folder = repo.join(format!("rendered/{BLUEPRINT}/workload/{BLUEPRINT}"));
    let job = support::rendered_run(&folder, "job.batch_triton-health-check-");
    let text = std::fs::read_to_string(&job).expect("read");
    let changed = text.replacen("image: ", "image: example.com/changed/", 1);
    assert_ne!(text, changed);
    std::fs::write(&job, changed).expect("write");
    std::fs::remove_file(folder.join("serviceaccount_triton-ingress.yaml")).expect("rm");
    let run = aiml(&repo, &kubeconfig, &["diff", "--live", BLUEPRINT]);
    run.expect_code(1);
    run.stdout_has("refused by the server")
        .stdout_has("Job/triton-t4-hpa/triton-health-check")
        .stdout_has("field is immutable")
        .stdout_has("ServiceAccount triton-t4-hpa/triton-ingress");
    let run = aiml(
        &repo,
        &kubeconfig,
        &["diff", "--live", BLUEPRINT, "-o", "json"],
    );
    run.expect_code(1);
    let report: Value = serde_json::from_str(&run.stdout).expect("json");
    assert_eq!(
        report["impact"]["server_refused"][0]["reason"], "Invalid",
        "{report}"
    );
}

#[test]
fn status_says_why_a_cluster_could_not_be_asked() {
    let Some(server) = ApiServer::start_or_skip("status_says_why_a_cluster_could_not_be_asked")
    else {
        return;
    };
    let scratch = server.scratch();
    let repo = scratch.join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    gitops_repository(&repo);
    let kubeconfig = scratch.join("kubeconfig");

    // No context for the workload cluster: how to get one.
    server.write_kubeconfig_with(
        &kubeconfig,
        &[(HOST_CONTEXT, User::Admin)],
        HOST_CONTEXT,
        None,
    );
    let run = status(&repo, &kubeconfig, &[BLUEPRINT]);
    run.expect_code(2);
    run.stdout_has("gcloud container clusters get-credentials triton-t4-hpa --location us-central1-a --project my-project");

    // A user RBAC forbids: which list, and what to grant.
    server.write_kubeconfig_with(
        &kubeconfig,
        &[
            (HOST_CONTEXT, User::Viewer),
            (WORKLOAD_CONTEXT, User::Viewer),
        ],
        HOST_CONTEXT,
        None,
    );
    let run = status(&repo, &kubeconfig, &[BLUEPRINT]);
    run.expect_code(2);
    run.stdout_has("forbidden to")
        .stdout_has("aiml-test-viewer");

    // Rights in the blueprint's namespaces only (and to read namespaces): the cluster-wide
    // lists are forbidden, the lists per namespace are not, so the cluster can be asked.
    for args in [
        vec![
            "create",
            "clusterrole",
            "aiml-reader",
            "--verb=get,list",
            "--resource=*.*",
        ],
        vec![
            "create",
            "clusterrole",
            "aiml-namespaces",
            "--verb=get,list",
            "--resource=namespaces",
        ],
        vec![
            "create",
            "clusterrolebinding",
            "aiml-namespaces",
            "--clusterrole=aiml-namespaces",
            "--user=aiml-test-viewer",
        ],
    ] {
        let out = server.run_kubectl(&args);
        assert!(out.status.success(), "{args:?}: {}", output_text(&out));
    }
    for namespace in ["triton-t4-hpa", "my-project", "config-management-system"] {
        server.run_kubectl(&["create", "namespace", namespace]);
        let out = server.run_kubectl(&[
            "create",
            "rolebinding",
            "aiml-reader",
            "--clusterrole=aiml-reader",
            "--user=aiml-test-viewer",
            "--namespace",
            namespace,
        ]);
        assert!(out.status.success(), "rolebinding: {}", output_text(&out));
    }
    let run = status(&repo, &kubeconfig, &[BLUEPRINT]);
    run.expect_code(1);
    assert!(
        line_of(&run, "workload").contains("missing"),
        "{}",
        run.transcript()
    );

    // A cluster that does not answer: named, with the cause, within the timeout.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    server.write_kubeconfig_with(
        &kubeconfig,
        &[(HOST_CONTEXT, User::Admin), (WORKLOAD_CONTEXT, User::Admin)],
        HOST_CONTEXT,
        Some(closed),
    );
    let began = std::time::Instant::now();
    let run = status(&repo, &kubeconfig, &[BLUEPRINT, "--request-timeout=5s"]);
    run.expect_code(2);
    run.stdout_has("could not reach")
        .stdout_has(&format!("127.0.0.1:{closed}"));
    assert!(began.elapsed() < std::time::Duration::from_secs(30));

    // No kubeconfig at all.
    let run = status(&repo, &scratch.join("absent"), &[BLUEPRINT]);
    run.expect_code(2);
    run.stdout_has("no kubeconfig");

    // An unknown blueprint is named, with the closest one.
    let run = status(&repo, &kubeconfig, &["triton-t4"]);
    run.expect_code(2);
    run.stderr_has("did you mean `triton-t4-hpa`");
}

const TRAINING: &str = "multislice-v4-32-training";
const TRAINING_CONTEXT: &str = "gke_my-project_us-central2-b_multislice-v4-32-training";

/// A node of a GKE TPU pool, as GKE labels it, `Ready`.
fn tpu_node(server: &ApiServer, name: &str, pool: &str, topology: &str) {
    let node = json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {
            "cloud.google.com/gke-nodepool": pool,
            "cloud.google.com/gke-tpu-accelerator": "tpu-v4-podslice",
            "cloud.google.com/gke-tpu-topology": topology,
        }},
    });
    let file = server.scratch().join(format!("{name}.json"));
    std::fs::write(&file, node.to_string()).expect("write node");
    let out = server.run_kubectl(&["create", "-f", &file.display().to_string()]);
    assert!(out.status.success(), "node: {}", output_text(&out));
    patch_status(
        server,
        &node,
        &json!({"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
            "message": "kubelet is posting ready status", "lastHeartbeatTime": T, "lastTransitionTime": T}]}),
    );
}

#[test]
fn status_reads_argo_cd_kueue_admission_and_tpu_nodes() {
    let Some(server) =
        ApiServer::start_or_skip("status_reads_argo_cd_kueue_admission_and_tpu_nodes")
    else {
        return;
    };
    server.install_crds();
    let scratch = server.scratch();
    let repo = scratch.join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir");
    // This repository's blueprints, wired with Argo CD instead of Config Sync.
    copy_tree(&repo_root().join("blueprints"), &repo.join("blueprints"));
    std::fs::write(
        repo.join("aiml.yaml"),
        "git:\n  repo: https://github.com/kubectl-aiml/kubectl-aiml.git\nsync:\n  engine: argocd\n",
    )
    .expect("write aiml.yaml");
    let out = aiml_command(&repo)
        .args(["render"])
        .output()
        .expect("render");
    assert!(out.status.success(), "render: {}", output_text(&out));
    let git = git2::Repository::init(&repo).expect("git init");
    let who = git2::Signature::now("Test", "test@example.com").expect("signature");
    let head = support::commit_all(&git, &who, "rendered").to_string();
    let kubeconfig = scratch.join("kubeconfig");
    server.write_kubeconfig_with(
        &kubeconfig,
        &[(HOST_CONTEXT, User::Admin), (TRAINING_CONTEXT, User::Admin)],
        HOST_CONTEXT,
        None,
    );
    apply_blueprint(&server, &repo, TRAINING);
    make_ready(&server, &repo, TRAINING, &head);

    // The JobSet waits for Kueue, which says why: the quota is short.
    let job = read_object(&support::rendered_run(
        &repo.join(format!("rendered/{TRAINING}/workload/{TRAINING}")),
        "jobset.jobset.x-k8s.io_",
    ));
    let jobset_name = job["metadata"]["name"].as_str().expect("name").to_string();
    let jobset = server.run_kubectl(&[
        "get",
        "jobsets.jobset.x-k8s.io",
        &jobset_name,
        "-n",
        TRAINING,
        "-o",
        "jsonpath={.metadata.uid}",
    ]);
    let uid = String::from_utf8(jobset.stdout).expect("uid");
    let pending = "couldn't assign flavors to pod set slice: insufficient quota for google.com/tpu in flavor multislice-v4-32-training-v4-32-2x2x4, request > maximum capacity (64 > 32)";
    let workload = json!({
        "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
        "metadata": {"name": format!("jobset-{TRAINING}-1a2b3"), "namespace": TRAINING,
            "labels": {"kueue.x-k8s.io/job-uid": uid},
            "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                "name": jobset_name, "uid": uid, "controller": true}]},
        "spec": {"queueName": "tpu-training-jobs", "podSets": [{"name": "slice", "count": 8,
            "template": {"spec": {"containers": [{"name": "train", "image": "busybox"}]}}}]},
    });
    let file = scratch.join("workload.json");
    std::fs::write(&file, workload.to_string()).expect("write");
    let out = server.run_kubectl(&["create", "-f", &file.display().to_string()]);
    assert!(out.status.success(), "workload: {}", output_text(&out));
    patch_status(
        &server,
        &workload,
        &json!({"conditions": [condition("QuotaReserved", "False", "Pending", pending)]}),
    );
    patch_status(
        &server,
        &job,
        &json!({"conditions": [condition("Suspended", "True", "SuspendedJobs", "jobset is suspended")]}),
    );
    // Slice 0 has its four hosts; slice 1's nodes carry another topology than the pool asks.
    for i in 0..4 {
        tpu_node(&server, &format!("gke-slice0-{i}"), "tpu-slice-0", "2x2x4");
        tpu_node(&server, &format!("gke-slice1-{i}"), "tpu-slice-1", "2x2x2");
    }

    let run = status(&repo, &kubeconfig, &[TRAINING]);
    run.expect_code(1);
    let host = line_of_blueprint(&run, TRAINING, "config-connector");
    assert!(
        host.contains(&format!("{} (HEAD)", &head[..7])) && host.ends_with("ready"),
        "{host}"
    );
    let line = line_of_blueprint(&run, TRAINING, "workload");
    assert!(
        line.contains("my-project/us-central2-b/multislice-v4-32-training"),
        "{line}"
    );
    assert!(line.contains(&format!("{} (HEAD)", &head[..7])), "{line}");
    assert!(
        line.contains("failed") && line.contains("node pool tpu-slice-1"),
        "{line}"
    );

    let run = status(&repo, &kubeconfig, &[TRAINING, "-o", "json"]);
    let report: Value = serde_json::from_str(&run.stdout).expect("json");
    let workload_target = report["targets"]
        .as_array()
        .expect("targets")
        .iter()
        .find(|t| t["target"] == "workload")
        .expect("workload target");
    assert_eq!(
        workload_target["sync"]["object"],
        format!("Application/argocd/aiml-{TRAINING}-workload")
    );
    let jobset = workload_target["objects"]
        .as_array()
        .expect("objects")
        .iter()
        .find(|o| {
            o["object"]
                .as_str()
                .is_some_and(|s| s.starts_with("JobSet/"))
        })
        .expect("jobset");
    assert_eq!(jobset["health"]["state"], "progressing", "{jobset}");
    assert_eq!(jobset["admission"]["state"], "progressing", "{jobset}");
    assert!(
        jobset["admission"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("insufficient quota")),
        "{jobset}"
    );
    let pools = workload_target["node_pools"].as_array().expect("pools");
    let pool = |name: &str| pools.iter().find(|p| p["pool"] == name).expect("pool");
    assert_eq!(pool("tpu-slice-0")["health"]["state"], "ready", "{pools:?}");
    assert_eq!(
        pool("tpu-slice-1")["health"]["state"],
        "failed",
        "{pools:?}"
    );
}
