//! A brand-new cluster converges from git alone, and every edit applies under continuous
//! reconciliation: the proof on a real API server (CONTRACT.md invariant 7).
//!
//! A fresh kube-apiserver starts with only what GKE and the Config Connector host provide:
//! Config Connector's and Config Sync's CRDs, Managed Prometheus, the Gateway API and GKE's
//! gateway policies, and the managed service mesh's Istio kinds. Everything else (JobSet,
//! Kueue, LeaderWorkerSet and their CRDs) must come from the rendered output itself. The test
//! then does what Config Sync does with the committed `rendered/` tree:
//!
//! 1. On the host, the RootSyncs of `rendered/_sync/config-connector-host/`; on each workload
//!    cluster, the RootSyncs of its `rendered/_sync/clusters/<project>/<location>/<cluster>/`
//!    folder, in the order their `config.kubernetes.io/depends-on` annotations give.
//! 2. Each RootSync's folder: CustomResourceDefinitions first (waiting until they are served),
//!    then namespaces, then every other object in the order of its own depends-on edges.
//!    Each object is applied once, server-side, and must be accepted on that first pass.
//!    Admission webhook configurations and aggregated APIServices name Services whose pods a
//!    bare API server never runs: they are checked with a server-side dry run instead.
//!
//! All clusters share the one server (their cluster-scoped objects do not collide). Then the
//! README's edit (`slices: 2` → `3`) is rendered and synced again, pruning what left the
//! folders, and must apply cleanly; and an edit that changes Jobs' pod templates (new Saxml
//! images) must too, where the same Job changed in place is refused by the server.

#[path = "support/apiserver.rs"]
mod apiserver_support;
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use apiserver_support::{ApiServer, output_text};
use serde_json::Value;

/// API groups whose kinds a GKE cluster (with the add-ons the blueprints turn on) or the Config
/// Connector host serve without the rendered output.
fn provided_by_gke_or_host(group: &str) -> bool {
    group.ends_with("cnrm.cloud.google.com")
        || matches!(
            group,
            // Config Sync (the fleet feature), Managed Prometheus, GKE Gateway, managed mesh.
            "configsync.gke.io"
                | "monitoring.googleapis.com"
                | "gateway.networking.k8s.io"
                | "networking.gke.io"
                | "networking.istio.io"
                | "security.istio.io"
        )
}

/// Kinds served by a pod of the platform (a webhook, an aggregated API): checked by dry run.
fn served_by_a_pod(kind: &str) -> bool {
    matches!(
        kind,
        "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration" | "APIService"
    )
}

/// One object of a rendered folder.
#[derive(Clone)]
struct Object {
    file: PathBuf,
    value: Value,
}

impl Object {
    fn group(&self) -> &str {
        let api_version = self.value["apiVersion"].as_str().unwrap_or_default();
        api_version.rsplit_once('/').map_or("", |(group, _)| group)
    }

    fn kind(&self) -> &str {
        self.value["kind"].as_str().unwrap_or_default()
    }

    fn name(&self) -> &str {
        self.value["metadata"]["name"].as_str().unwrap_or_default()
    }

    fn namespace(&self) -> Option<&str> {
        self.value["metadata"]["namespace"].as_str()
    }

    /// `group/namespaces/ns/Kind/name` or `group/Kind/name`, as depends-on spells it.
    fn reference(&self) -> String {
        match self.namespace() {
            Some(ns) => format!(
                "{}/namespaces/{ns}/{}/{}",
                self.group(),
                self.kind(),
                self.name()
            ),
            None => format!("{}/{}/{}", self.group(), self.kind(), self.name()),
        }
    }

    fn depends_on(&self) -> Vec<String> {
        self.value["metadata"]["annotations"]["config.kubernetes.io/depends-on"]
            .as_str()
            .map(|list| list.split(',').map(|s| s.trim().to_string()).collect())
            .unwrap_or_default()
    }
}

/// Every object under `dir` (one per file, `.yaml`), sorted by path.
fn objects_under(dir: &Path) -> Vec<Object> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
        .into_iter()
        .map(|file| {
            let value: Value =
                serde_saphyr::from_str(&std::fs::read_to_string(&file).expect("read"))
                    .expect("one object per rendered file");
            Object { file, value }
        })
        .collect()
}

/// `objects` in apply order: groups of objects that may go together, each after every group it
/// depends on (the depends-on edges within the folder), CRDs and namespaces first.
fn apply_groups(objects: &[Object]) -> Vec<Vec<Object>> {
    let by_reference: BTreeMap<String, usize> = objects
        .iter()
        .enumerate()
        .map(|(i, o)| (o.reference(), i))
        .collect();
    let mut depth: Vec<Option<usize>> = vec![None; objects.len()];
    fn depth_of(
        i: usize,
        objects: &[Object],
        by_reference: &BTreeMap<String, usize>,
        depth: &mut Vec<Option<usize>>,
        visiting: &mut BTreeSet<usize>,
    ) -> usize {
        if let Some(d) = depth[i] {
            return d;
        }
        assert!(
            visiting.insert(i),
            "depends-on cycle through {}",
            objects[i].reference()
        );
        let d = objects[i]
            .depends_on()
            .iter()
            .map(|target| {
                let j = *by_reference.get(target).unwrap_or_else(|| {
                    panic!(
                        "{} depends on {target}, which its sync folder does not hold",
                        objects[i].file.display()
                    )
                });
                depth_of(j, objects, by_reference, depth, visiting) + 1
            })
            .max()
            .unwrap_or(0);
        visiting.remove(&i);
        depth[i] = Some(d);
        d
    }
    let mut groups: BTreeMap<(u8, usize), Vec<Object>> = BTreeMap::new();
    for (i, object) in objects.iter().enumerate() {
        let d = depth_of(i, objects, &by_reference, &mut depth, &mut BTreeSet::new());
        let first = match object.kind() {
            "CustomResourceDefinition" => 0,
            "Namespace" => 1,
            _ => 2,
        };
        groups.entry((first, d)).or_default().push(object.clone());
    }
    groups.into_values().collect()
}

/// The RootSyncs of one `_sync` folder, each with the folder it syncs, in the order their
/// depends-on edges give.
fn root_syncs(folder: &Path) -> Vec<(String, String)> {
    let syncs = objects_under(folder);
    assert!(
        syncs.iter().all(|o| o.kind() == "RootSync"),
        "{} holds sync objects only",
        folder.display()
    );
    apply_groups(&syncs)
        .into_iter()
        .flatten()
        .map(|o| {
            let dir = o.value["spec"]["git"]["dir"]
                .as_str()
                .expect("spec.git.dir")
                .to_string();
            (o.name().to_string(), dir)
        })
        .collect()
}

/// Applies `objects` (one sync folder) as its RootSync would; returns the objects applied.
fn sync(server: &ApiServer, manager: &str, objects: &[Object]) -> BTreeSet<String> {
    let mut applied = BTreeSet::new();
    for group in apply_groups(objects) {
        let (dry, real): (Vec<&Object>, Vec<&Object>) =
            group.iter().partition(|o| served_by_a_pod(o.kind()));
        for (batch, dry_run) in [(real, false), (dry, true)] {
            if batch.is_empty() {
                continue;
            }
            let mut cmd = server.kubectl();
            cmd.args([
                "apply",
                "--server-side",
                &format!("--field-manager={manager}"),
            ]);
            if dry_run {
                cmd.arg("--dry-run=server");
            }
            for object in &batch {
                cmd.arg("-f").arg(&object.file);
            }
            let out = cmd.output().expect("kubectl");
            assert!(
                out.status.success(),
                "{manager}: not accepted on the first pass:\n{}",
                output_text(&out)
            );
            applied.extend(batch.iter().map(|o| o.reference()));
        }
        if group.iter().any(|o| o.kind() == "CustomResourceDefinition") {
            wait_established(server, &group);
        }
    }
    applied
}

/// Waits until the server serves every CRD of `group`, as Config Sync waits before applying
/// their objects. A CRD just created may have no conditions yet, which `kubectl wait` reports
/// as an error: asked again until a minute has passed.
fn wait_established(server: &ApiServer, group: &[Object]) {
    let began = std::time::Instant::now();
    loop {
        let mut cmd = server.kubectl();
        cmd.args(["wait", "--for=condition=Established", "--timeout=60s"]);
        for crd in group
            .iter()
            .filter(|o| o.kind() == "CustomResourceDefinition")
        {
            cmd.arg(format!("crd/{}", crd.name()));
        }
        let out = cmd.output().expect("kubectl wait");
        if out.status.success() {
            return;
        }
        assert!(
            began.elapsed() < std::time::Duration::from_secs(60),
            "CRDs not served:\n{}",
            output_text(&out)
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// Every sync folder of `repo`'s `rendered/_sync/`, host first: (folder, its RootSyncs).
fn sync_folders(repo: &Path) -> Vec<(PathBuf, Vec<(String, String)>)> {
    let base = repo.join("rendered/_sync");
    let mut folders = vec![base.join("config-connector-host")];
    let clusters = base.join("clusters");
    for project in std::fs::read_dir(&clusters).expect("clusters").flatten() {
        for location in std::fs::read_dir(project.path())
            .expect("locations")
            .flatten()
        {
            for cluster in std::fs::read_dir(location.path())
                .expect("cluster")
                .flatten()
            {
                folders.push(cluster.path());
            }
        }
    }
    folders.sort();
    folders
        .into_iter()
        .map(|folder| {
            let roots = root_syncs(&folder);
            (folder, roots)
        })
        .collect()
}

/// Syncs every root of `repo` once, in the engine's order; then prunes, per root, what it
/// applied `before` and no longer holds. Returns what each root applied.
fn sync_all(
    server: &ApiServer,
    repo: &Path,
    before: &BTreeMap<String, BTreeMap<String, Object>>,
) -> BTreeMap<String, BTreeMap<String, Object>> {
    let mut now = BTreeMap::new();
    for (_, roots) in sync_folders(repo) {
        for (name, dir) in roots {
            let objects = objects_under(&repo.join(&dir));
            assert!(!objects.is_empty(), "{name} syncs {dir}, which is empty");
            sync(server, &name, &objects);
            let held: BTreeMap<String, Object> =
                objects.into_iter().map(|o| (o.reference(), o)).collect();
            for (reference, old) in before.get(&name).into_iter().flatten() {
                if !held.contains_key(reference) && !served_by_a_pod(old.kind()) {
                    // The render removed its file: delete what it held.
                    let file = server.scratch().join("pruned.json");
                    std::fs::write(&file, old.value.to_string()).expect("write");
                    let out = server.run_kubectl(&[
                        "delete",
                        "--wait=false",
                        "-f",
                        &file.display().to_string(),
                    ]);
                    assert!(
                        out.status.success(),
                        "prune {reference}: {}",
                        output_text(&out)
                    );
                }
            }
            now.insert(name, held);
        }
    }
    now
}

/// Edits `blueprint` in `repo` (every `from` becomes `to`) and renders.
fn edit(repo: &Path, blueprint: &str, from: &str, to: &str) {
    let file = repo.join(format!("blueprints/{blueprint}.yaml"));
    let text = std::fs::read_to_string(&file).expect("blueprint");
    assert!(text.contains(from), "{blueprint} holds `{from}`");
    std::fs::write(&file, text.replace(from, to)).expect("write");
    let out = support::aiml_command(repo)
        .arg("render")
        .output()
        .expect("render");
    assert!(out.status.success(), "render: {}", output_text(&out));
}

fn of_kind<'a>(
    synced: &'a BTreeMap<String, BTreeMap<String, Object>>,
    kind: &str,
) -> Vec<&'a Object> {
    synced
        .values()
        .flat_map(BTreeMap::values)
        .filter(|o| o.kind() == kind)
        .collect()
}

#[test]
fn a_new_cluster_converges_from_git_alone_and_every_edit_applies() {
    let Some(server) =
        ApiServer::start_or_skip("a_new_cluster_converges_from_git_alone_and_every_edit_applies")
    else {
        return;
    };
    let installed = server.install_crds_of(provided_by_gke_or_host);
    assert!(installed > 20, "{installed} CRDs of GKE and the host");
    // The host's Config Connector namespace and Config Sync's own namespace exist before any
    // sync: the bootstraps of rendered/_sync/README.md need them.
    for namespace in ["my-project", "config-management-system"] {
        server.run_kubectl(&["create", "namespace", namespace]);
    }
    let scratch = tempfile::tempdir().expect("tmp");
    let repo = scratch.path();
    support::copy_this_repository(repo);

    // 1. From nothing: every root, every object, first pass.
    let first = sync_all(&server, repo, &BTreeMap::new());
    let jobsets = of_kind(&first, "JobSet");
    assert_eq!(jobsets.len(), 1, "the training's JobSet");
    let old_jobset = jobsets[0].name().to_string();
    let crds: BTreeSet<&str> = of_kind(&first, "CustomResourceDefinition")
        .iter()
        .map(|o| o.name())
        .collect();
    for needed in [
        "jobsets.jobset.x-k8s.io",
        "clusterqueues.kueue.x-k8s.io",
        "leaderworkersets.leaderworkerset.x-k8s.io",
    ] {
        assert!(
            crds.contains(needed),
            "the output delivers {needed}: {crds:?}"
        );
    }

    // 2. The README's edit: a third slice.
    edit(repo, "multislice-v4-32-training", "slices: 2", "slices: 3");
    let second = sync_all(&server, repo, &first);
    let jobsets = of_kind(&second, "JobSet");
    assert_eq!(jobsets.len(), 1);
    let new_jobset = jobsets[0].clone();
    assert_ne!(
        new_jobset.name(),
        old_jobset,
        "a new run replaces the old one"
    );
    let namespace = new_jobset.namespace().expect("namespaced");
    let out = server.run_kubectl(&[
        "get",
        "jobsets.jobset.x-k8s.io",
        "-n",
        namespace,
        "-o",
        "name",
    ]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("jobset.jobset.x-k8s.io/{}", new_jobset.name()),
        "the old run is pruned"
    );

    // 3. Jobs whose pod template changes: new Saxml images.
    let jobs_before: BTreeMap<String, Object> = of_kind(&second, "Job")
        .into_iter()
        .map(|o| (o.reference(), o.clone()))
        .collect();
    edit(repo, "sax-llama2-70b-v5e-16", ":2a12db6", ":3b23ec7");
    let rendered_jobs: Vec<Object> = objects_under(&repo.join("rendered"))
        .into_iter()
        .filter(|o| o.kind() == "Job" && !jobs_before.contains_key(&o.reference()))
        .collect();
    assert!(!rendered_jobs.is_empty(), "the new images change some Job");
    // The same change made in place, while the old Job still runs, is what the server refuses:
    // the proof is not vacuous.
    let job = &rendered_jobs[0];
    let stem = job.name().rsplit_once('-').expect("hashed").0;
    let old = jobs_before
        .values()
        .find(|o| o.name().rsplit_once('-').is_some_and(|(s, _)| s == stem))
        .expect("the same Job before");
    let mut in_place = job.value.clone();
    in_place["metadata"]["name"] = Value::from(old.name());
    let file = server.scratch().join("in-place.json");
    std::fs::write(&file, in_place.to_string()).expect("write");
    let out = server.run_kubectl(&[
        "apply",
        "--server-side",
        "--dry-run=server",
        // The root's own manager would own every field; forced, only the server's own
        // validation can refuse.
        "--force-conflicts",
        "--field-manager=configsync.gke.io",
        "-f",
        &file.display().to_string(),
    ]);
    assert!(
        !out.status.success(),
        "an in-place template change is refused"
    );
    assert!(
        output_text(&out).contains("field is immutable"),
        "{}",
        output_text(&out)
    );
    // Named after its content, the new Job is a new object: the sync applies, the old one goes.
    let third = sync_all(&server, repo, &second);
    let jobs_now: BTreeSet<String> = of_kind(&third, "Job")
        .into_iter()
        .map(Object::reference)
        .collect();
    assert!(jobs_now.contains(&job.reference()), "{jobs_now:?}");
    assert!(!jobs_now.contains(&old.reference()), "{jobs_now:?}");
    let out = server.run_kubectl(&[
        "get",
        "jobs",
        "-n",
        old.namespace().expect("namespaced"),
        old.name(),
    ]);
    assert!(!out.status.success(), "the old Job is pruned");
}
