//! The platform root (`rendered/_sync/platform/`, `aiml::sync::platform`): every group the
//! committed output renders has a provider on its cluster, the vendored manifests are what
//! `data/platform/SOURCES.md` says, a cluster can opt out, and a real API server with no CRD
//! of its own accepts the platform objects and then the workloads that need them.

#[path = "support/mod.rs"]
mod support;

#[path = "support/apiserver.rs"]
mod apiserver_support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use aiml::sync::platform::{Component, Provider, provider};
use apiserver_support::{ApiServer, output_text};
use support::TestRepo;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir`, as paths relative to it, sorted.
fn files(dir: &Path) -> Vec<String> {
    let mut found: Vec<String> = walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|entry| entry.expect("walk"))
        .filter(|entry| entry.file_type().is_file())
        .map(|entry| {
            entry
                .path()
                .strip_prefix(dir)
                .expect("under dir")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    found.sort();
    found
}

/// The repositories with committed output: this one and each example that has `rendered/`.
fn repositories_with_output() -> Vec<PathBuf> {
    support::repositories_with_output()
}

/// `dir:` of a RootSync's text.
fn synced_dir(text: &str) -> String {
    text.lines()
        .find_map(|line| line.trim().strip_prefix("dir: "))
        .expect("a RootSync has spec.git.dir")
        .trim_matches('"')
        .to_string()
}

/// Per cluster folder of `rendered/_sync/clusters/`: the blueprints it syncs and the platform
/// components (short names) it syncs.
fn clusters(rendered: &Path) -> BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)> {
    let mut clusters: BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)> = BTreeMap::new();
    let sync = rendered.join("_sync/clusters");
    if !sync.is_dir() {
        return clusters;
    }
    for file in files(&sync) {
        let cluster = file.split('/').take(3).collect::<Vec<_>>().join("/");
        let text = std::fs::read_to_string(sync.join(&file)).expect("read");
        let dir = synced_dir(&text);
        let entry = clusters.entry(cluster).or_default();
        if let Some(component) = file
            .rsplit('/')
            .next()
            .and_then(|name| name.strip_prefix("rootsync.configsync.gke.io_aiml-platform-"))
        {
            entry
                .1
                .insert(component.trim_end_matches(".yaml").to_string());
        } else if let Some(blueprint) = dir
            .strip_suffix("/workload")
            .and_then(|d| d.rsplit('/').next())
        {
            entry.0.insert(blueprint.to_string());
        }
    }
    clusters
}

/// The provider test: every object of every committed `rendered/` tree belongs to a group
/// that something on its cluster serves, and a group the platform root serves is in that
/// cluster's platform root (as is the metrics adapter for an HPA on an external metric).
#[test]
fn every_rendered_group_has_a_provider_on_its_cluster() {
    let mut checked = 0;
    for repository in repositories_with_output() {
        let rendered = repository.join("rendered");
        let clusters = clusters(&rendered);
        let settings = std::fs::read_to_string(repository.join("aiml.yaml")).unwrap_or_default();
        for (cluster, (blueprints, components)) in &clusters {
            let elsewhere = settings.contains(&format!("- {cluster}"));
            for blueprint in blueprints {
                for file in files(&rendered.join(blueprint).join("workload")) {
                    let path = format!("workload/{file}");
                    let id = aiml::manifest::id_from_path(&path).expect("a rendered file");
                    let where_ = format!("{}: rendered/{blueprint}/{path}", repository.display());
                    let served = provider(&id.group)
                        .unwrap_or_else(|| panic!("{where_}: no provider for `{}`", id.group));
                    assert_ne!(served, Provider::ConfigConnectorHost, "{where_}");
                    let mut needed = Vec::new();
                    if let Provider::Platform(component) = served {
                        needed.push(component);
                    }
                    if id.kind == "horizontalpodautoscaler" {
                        let text = std::fs::read_to_string(rendered.join(blueprint).join(&path))
                            .expect("read");
                        if text.contains("type: External") || text.contains("type: Object") {
                            needed.push(Component::MetricsAdapter);
                        }
                    }
                    for component in needed {
                        assert!(
                            elsewhere || components.contains(component.short()),
                            "{where_}: cluster `{cluster}` has no platform root for {}",
                            component.title()
                        );
                    }
                    checked += 1;
                }
                for file in files(&rendered.join(blueprint).join("config-connector")) {
                    let id = aiml::manifest::id_from_path(&format!("config-connector/{file}"))
                        .expect("a rendered file");
                    assert_eq!(
                        provider(&id.group),
                        Some(Provider::ConfigConnectorHost),
                        "{}: rendered/{blueprint}/config-connector/{file}",
                        repository.display()
                    );
                }
            }
        }
        // The platform's own objects are served by Kubernetes (CRDs, RBAC, webhooks, …); a
        // cluster's `mesh/` folder holds Config Connector objects, synced on the host.
        let platform = rendered.join("_sync/platform");
        if platform.is_dir() {
            for file in files(&platform) {
                if file.starts_with("clusters/") && file.contains("/mesh/") {
                    let relative = file.splitn(6, '/').nth(5).expect("namespace/file");
                    let id = aiml::manifest::id_from_path(&format!("config-connector/{relative}"))
                        .unwrap_or_else(|| panic!("{file}: not a rendered file name"));
                    assert_eq!(
                        provider(&id.group),
                        Some(Provider::ConfigConnectorHost),
                        "{file}"
                    );
                    continue;
                }
                // `<component>/…`, or `clusters/<p>/<l>/<c>/<component>/…`.
                let skip = if file.starts_with("clusters/") { 5 } else { 1 };
                let relative = file
                    .splitn(skip + 1, '/')
                    .nth(skip)
                    .expect("component folder");
                let id = aiml::manifest::id_from_path(&format!("workload/{relative}"))
                    .unwrap_or_else(|| panic!("{file}: not a rendered file name"));
                assert_eq!(provider(&id.group), Some(Provider::Kubernetes), "{file}");
            }
        }
    }
    assert!(checked > 50, "only {checked} workload objects checked");
}

/// `data/platform/sources.json` names every vendored file with its sha256, and the binary
/// embeds exactly those bytes for the version each component pins.
#[test]
fn vendored_platform_files_are_what_sources_say() {
    use sha2::Digest as _;
    let dir = root().join("data/platform");
    let sources: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("sources.json")).expect("sources.json"))
            .expect("json");
    let sources = sources.as_array().expect("a list");
    assert_eq!(sources.len(), Component::ALL.len());
    for component in Component::ALL {
        let entry = sources
            .iter()
            .find(|s| s["component"] == component.name())
            .unwrap_or_else(|| panic!("{} is not in sources.json", component.name()));
        assert_eq!(entry["version"], component.version());
        assert_eq!(entry["file"], component.file());
        assert_eq!(entry["licence"], "Apache-2.0");
        assert!(entry["commit"].as_str().is_some_and(|c| c.len() == 40));
        let bytes = std::fs::read(dir.join(component.file())).expect("vendored file");
        let digest = hex(&sha2::Sha256::digest(&bytes));
        assert_eq!(entry["sha256"], digest.as_str(), "{}", component.file());
        assert!(
            aiml::sync::platform::vendored(component) == bytes,
            "the binary embeds another {}",
            component.file()
        );
    }
    let readme = std::fs::read_to_string(dir.join("SOURCES.md")).expect("SOURCES.md");
    for entry in sources {
        assert!(
            readme.contains(entry["sha256"].as_str().expect("sha256")),
            "SOURCES.md and sources.json disagree"
        );
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A cluster whose controllers are managed elsewhere gets no platform root, and the sync
/// README says what it must run; a malformed entry stops the render with its line.
#[test]
fn a_cluster_managed_elsewhere_gets_no_platform_root() {
    let repo = TestRepo::new();
    let git = "git:\n  repo: https://github.com/acme/ml-platform.git\n";
    repo.write("aiml.yaml", git);
    repo.aiml(&["render"]).expect_code(0);
    assert!(
        repo.path()
            .join("rendered/_sync/platform/jobset-v0.12.0")
            .is_dir()
    );

    repo.write(
        "aiml.yaml",
        &format!(
            "{git}platform:\n  managedElsewhere:\n  - my-project/us-central2-b/multislice-v4-32-training\n"
        ),
    );
    repo.aiml(&["render"]).expect_code(0);
    assert!(!repo.path().join("rendered/_sync/platform").exists());
    let readme =
        std::fs::read_to_string(repo.path().join("rendered/_sync/README.md")).expect("README");
    assert!(
        readme.contains("- `my-project/us-central2-b/multislice-v4-32-training`: managed elsewhere (`aiml.yaml` `platform.managedElsewhere`); must run JobSet v0.12.0, Kueue v0.19.2"),
        "{readme}"
    );
    let root_sync = std::fs::read_to_string(repo.path().join(
        "rendered/_sync/clusters/my-project/us-central2-b/multislice-v4-32-training/config-management-system/rootsync.configsync.gke.io_aiml-multislice-v4-32-training.yaml",
    ))
    .expect("RootSync");
    assert!(!root_sync.contains("depends-on"), "{root_sync}");

    let before = repo.generated();
    repo.write(
        "aiml.yaml",
        &format!("{git}platform:\n  managedElsewhere:\n  - multislice-v4-32-training\n"),
    );
    repo.aiml(&["render"])
        .expect_code(2)
        .stderr_has("aiml.yaml:5")
        .stderr_has("platform.managedElsewhere[0]")
        .stderr_has("project/location/cluster");
    assert!(before == repo.generated(), "a refused render changed files");
}

/// Runs `kubectl apply --server-side` (really, not a dry run) on `files`, failing with the
/// server's words.
fn apply(server: &ApiServer, files: &[PathBuf], what: &str) {
    if files.is_empty() {
        return;
    }
    let mut args = vec!["apply".to_string(), "--server-side".to_string()];
    for file in files {
        args.push("-f".into());
        args.push(file.display().to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = server.run_kubectl(&args);
    assert!(
        out.status.success(),
        "{what} refused:\n{}",
        output_text(&out)
    );
}

/// Waits until the server serves every CRD applied so far.
fn established(server: &ApiServer) {
    let out = server.run_kubectl(&[
        "wait",
        "--for=condition=Established",
        "crd",
        "--all",
        "--timeout=120s",
    ]);
    assert!(out.status.success(), "{}", output_text(&out));
}

/// Contract invariant 7 for the platform root alone: on a server with no CRD, this
/// repository's platform objects apply (CRDs first, until Established), and then every
/// workload object of the blueprints on those clusters is accepted. Only what GKE provides
/// (Managed Prometheus, the Gateway API) and Istio, a named prerequisite, are installed
/// besides, from the vendored schemas. No controller runs on the test server, so the
/// platform's webhook configurations and aggregated APIs, which would send every request to
/// a Service with no pod behind it, are left out.
#[test]
fn a_fresh_api_server_accepts_the_platform_root_then_the_workloads() {
    let server = ApiServer::start_required(
        "a_fresh_api_server_accepts_the_platform_root_then_the_workloads",
    );
    let rendered = root().join("rendered");
    let platform = rendered.join("_sync/platform");
    let (crds, others): (Vec<String>, Vec<String>) = files(&platform)
        .into_iter()
        .filter(|f| {
            !f.contains("webhookconfiguration.admissionregistration.k8s.io_")
                && !f.contains("apiservice.apiregistration.k8s.io_")
                // The managed mesh's Config Connector objects go to the host (tests/convergence.rs).
                && !f.contains("/mesh/")
        })
        .partition(|f| f.contains("customresourcedefinition.apiextensions.k8s.io_"));
    assert!(crds.len() > 10, "{crds:?}");
    let paths = |list: &[String]| list.iter().map(|f| platform.join(f)).collect::<Vec<_>>();
    apply(&server, &paths(&crds), "the platform CRDs");
    established(&server);
    let (namespaces, rest): (Vec<String>, Vec<String>) =
        others.into_iter().partition(|f| f.contains("/namespace_"));
    apply(&server, &paths(&namespaces), "the platform namespaces");
    apply(&server, &paths(&rest), "the platform objects");

    // What GKE and the named prerequisites provide: not the platform's to deliver.
    let outside: Vec<serde_json::Value> = apiserver_support::crds()
        .into_iter()
        .filter(|crd| {
            let group = crd["spec"]["group"].as_str().unwrap_or_default();
            matches!(
                provider(group),
                Some(Provider::ManagedPrometheus | Provider::GkeGateway | Provider::Istio)
            )
        })
        .collect();
    let file = server.scratch().join("gke-crds.json");
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": outside});
    std::fs::write(&file, serde_json::to_vec(&list).expect("json")).expect("write");
    apply(&server, &[file], "the GKE-provided CRDs");
    established(&server);

    let mut applied = 0;
    for (_, (blueprints, _)) in clusters(&rendered) {
        for blueprint in blueprints {
            let workload = rendered.join(&blueprint).join("workload");
            let (cluster_scoped, namespaced): (Vec<String>, Vec<String>) = files(&workload)
                .into_iter()
                .partition(|f| f.starts_with("_cluster/"));
            let at = |list: &[String]| list.iter().map(|f| workload.join(f)).collect::<Vec<_>>();
            apply(
                &server,
                &at(&cluster_scoped),
                &format!("{blueprint}'s cluster objects"),
            );
            apply(&server, &at(&namespaced), &format!("{blueprint}'s objects"));
            applied += cluster_scoped.len() + namespaced.len();
        }
    }
    assert!(applied > 40, "only {applied} workload objects applied");
    // The kinds the platform root delivers are served now, from its CRDs alone.
    for kind in [
        "jobsets.jobset.x-k8s.io",
        "leaderworkersets.leaderworkerset.x-k8s.io",
        "localqueues.kueue.x-k8s.io",
    ] {
        let out = server.run_kubectl(&["get", kind, "--all-namespaces", "-o", "name"]);
        assert!(
            out.status.success() && !out.stdout.is_empty(),
            "{kind}: {}",
            output_text(&out)
        );
    }
}

/// A repository with this one's `blueprints` (by name) and a git URL, rendered.
fn rendered_with(blueprints: &[&str]) -> TestRepo {
    let repo = TestRepo::empty();
    for blueprint in blueprints {
        let file = format!("blueprints/{blueprint}.yaml");
        repo.write(
            &file,
            &std::fs::read_to_string(root().join(&file)).expect("blueprint"),
        );
    }
    repo.write(
        "aiml.yaml",
        "git:\n  repo: https://github.com/acme/ml-platform.git\n",
    );
    repo.aiml(&["render"]).expect_code(0);
    repo
}

/// A render of some blueprints reads the others' platform needs from their folders (the
/// HPA on an external metric, the adapter's account): the wiring is the same as after a
/// render of all of them.
#[test]
fn a_partial_render_keeps_every_cluster_platform() {
    let repo = rendered_with(&["triton-t4-hpa", "locust-bench", "sax-llama2-70b-v5e-16"]);
    let all = repo.generated();
    let adapter = "rendered/_sync/platform/clusters/my-project/us-central1-a/triton-t4-hpa/custom-metrics-stackdriver-adapter-v0.16.9-gke.0/custom-metrics/serviceaccount_custom-metrics-stackdriver-adapter.yaml";
    let account = String::from_utf8(all[adapter].clone()).expect("utf-8");
    assert!(
        account.contains(
            "iam.gke.io/gcp-service-account: triton-t4-hpa-metrics@my-project.iam.gserviceaccount.com"
        ),
        "{account}"
    );
    repo.aiml(&["render", "locust-bench", "--no-cache"])
        .expect_code(0);
    support::assert_same_files(
        ("a render of all", &all),
        ("a render of one", &repo.generated()),
    );
}

/// The rules `validate` applies to anyone's manifests hold for what the tool itself installs:
/// every platform pod runs with the restricted security context and every platform namespace
/// is closed by NetworkPolicies (`container-security-context`, `namespace-network-policy`).
/// A fresh render of blueprints that need all four components, then the committed output of
/// this repository and its examples.
#[test]
fn the_platform_root_passes_the_tools_own_security_rules() {
    let repo = rendered_with(&[
        "triton-t4-hpa",
        "sax-llama2-70b-v5e-16",
        "multislice-v4-32-training",
    ]);
    let generated = repo.generated();
    for component in Component::ALL {
        let folder = format!("{}-{}/", component.name(), component.version());
        assert!(
            generated
                .keys()
                .any(|path| path.starts_with("rendered/_sync/platform/") && path.contains(&folder)),
            "{folder} not rendered"
        );
    }
    let mut repositories = vec![repo.path().to_path_buf()];
    repositories.extend(repositories_with_output());
    for repository in repositories {
        let args = ["validate", "-o", "json", "rendered"];
        let output = support::aiml_command(&repository)
            .args(args)
            .output()
            .expect("run kubectl-aiml");
        let run = support::Run::from_output(&args, output).about(repository.display());
        run.expect_code(0);
        let findings: Vec<String> = run
            .findings()
            .iter()
            .filter(|f| {
                f["file"]
                    .as_str()
                    .is_some_and(|file| file.contains("_sync/platform/"))
                    && matches!(
                        f["rule"].as_str(),
                        Some("container-security-context" | "namespace-network-policy")
                    )
            })
            .map(|f| format!("{}: {}", f["file"], f["message"]))
            .collect();
        assert!(
            findings.is_empty(),
            "{}:\n{}",
            repository.display(),
            findings.join("\n")
        );
    }
}
