//! The real API server accepts what the tool renders: every object of every committed
//! `rendered/` folder (this repository's blueprints and the examples; `tests/cli.rs` checks they
//! are what a render produces) passes a server-side dry-run apply against a pinned
//! kube-apiserver, with the custom resource kinds installed.
//!
//! Where the CRDs come from: the repository vendors no CustomResourceDefinition YAML, only the
//! JSON Schema of each served version (`schemas/crds/`, see `schemas/SOURCES.md` for upstream
//! repositories and commits). `apiserver_support::crds` turns each back into the CRD's OpenAPI v3 schema
//! (undoing the draft-07 conversion: `additionalProperties: false` dropped, `[T, "null"]` types
//! back to `T` with `nullable`), one CRD per group and kind with every vendored version, the
//! storage version and deprecations as the index records them. `x-kubernetes-preserve-unknown-fields`
//! appears only where the vendored schema has it. Descriptions are gone (they were removed
//! when vendoring); nothing else that the server checks is.
//!
//! Needs `kube-apiserver` and `etcd` from `scripts/install-test-deps`; without them each test
//! fails, saying why; only where install-test-deps found no Go to build them is each test
//! skipped, saying so by name on the terminal.

#![allow(clippy::print_stderr, reason = "measurements are reported on stderr")]

#[path = "support/apiserver.rs"]
mod apiserver_support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use apiserver_support::ApiServer;
use serde_json::{Value, json};

/// Rendered objects the real server refuses for a genuine reason that is not fixed yet:
/// (path from the repository root, the finding). Each must still be refused, so a fix shows
/// up here as a failure asking to remove the entry.
const KNOWN_REFUSALS: &[(&str, &str)] = &[];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn harness_serves_the_pinned_version_and_stops_what_it_started() {
    let Some(server) =
        ApiServer::start_or_skip("harness_serves_the_pinned_version_and_stops_what_it_started")
    else {
        return;
    };
    eprintln!("harness startup: {:.1?}", server.startup);
    let out = server.run_kubectl(&["version", "-o", "json"]);
    assert!(out.status.success(), "{}", text(&out));
    let version: Value = serde_json::from_slice(&out.stdout).expect("version json");
    assert_eq!(
        version["serverVersion"]["gitVersion"],
        apiserver_support::KUBERNETES_VERSION
    );
    // The client certificate is in system:masters: it may do anything.
    let out = server.run_kubectl(&["auth", "can-i", "*", "*", "--all-namespaces"]);
    assert_eq!(text(&out).trim(), "yes");
    // No controller runs: status is the test's to set.
    let out = server.run_kubectl(&["create", "namespace", "aiml-status"]);
    assert!(out.status.success(), "{}", text(&out));

    let pids = server.pids();
    let dir = server.root().to_path_buf();
    drop(server);
    for pid in pids {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "process {pid} still runs after drop"
        );
    }
    assert!(!dir.exists(), "{} left behind", dir.display());
}

#[test]
fn every_rendered_object_is_accepted_by_a_real_api_server() {
    let name = "every_rendered_object_is_accepted_by_a_real_api_server";
    let began = Instant::now();
    let Some(server) = ApiServer::start_or_skip(name) else {
        return;
    };
    eprintln!("harness startup: {:.1?}", server.startup);
    let scratch = server.scratch();

    // 1. The custom resource kinds, for real, and wait until they are served.
    let installed = server.install_crds();

    let objects = rendered_objects();
    assert!(objects.len() > 100, "found only {} objects", objects.len());
    let mut refusals: BTreeMap<String, String> = BTreeMap::new();

    // 2. Namespaces for real (objects in them need them to exist, even in a dry run), then the
    // namespaces objects live in that no rendered file creates (the Config Connector project
    // namespaces and config-management-system: the cluster set-up owns those).
    let (namespaces, others): (Vec<&Object>, Vec<&Object>) =
        objects.iter().partition(|o| o.kind == "Namespace");
    apply(&server, &namespaces, false, &mut refusals);
    let created: BTreeSet<&str> = namespaces.iter().map(|o| o.name.as_str()).collect();
    let needed: BTreeSet<&str> = others
        .iter()
        .filter_map(|o| o.namespace.as_deref())
        .collect();
    // Those every cluster has from the start (the metrics adapter binds a role in kube-system).
    let builtin = BTreeSet::from(["default", "kube-system", "kube-public", "kube-node-lease"]);
    for ns in needed
        .difference(&created)
        .filter(|ns| !builtin.contains(*ns))
    {
        let out = server.run_kubectl(&["create", "namespace", ns]);
        assert!(out.status.success(), "namespace {ns}: {}", text(&out));
    }

    // 3. Everything else, as a server-side dry run.
    apply(&server, &others, true, &mut refusals);

    // A control: the server really validates (strict fields, CRD schemas enforced), so an
    // object with a field nobody defines is refused.
    let control = others
        .iter()
        .find(|o| o.api_version.contains("cnrm.cloud.google.com"))
        .expect("a Config Connector object");
    let mut broken = control.value.clone();
    broken["spec"]["aimlNoSuchField"] = json!(1);
    let file = scratch.join("control.json");
    std::fs::write(&file, serde_json::to_vec(&broken).expect("json")).expect("write control");
    let out = server.run_kubectl(&[
        "apply",
        "--server-side",
        "--dry-run=server",
        "-f",
        &file.display().to_string(),
    ]);
    assert!(
        !out.status.success() && text(&out).contains("aimlNoSuchField"),
        "an unknown field in {} was not refused: {}",
        control.file,
        text(&out)
    );

    let known: BTreeMap<&str, &str> = KNOWN_REFUSALS.iter().copied().collect();
    let mut report = Vec::new();
    for (file, message) in &refusals {
        if !known.contains_key(file.as_str()) {
            report.push(format!(
                "refused: {file}\n  {}",
                message.trim().replace('\n', "\n  ")
            ));
        }
    }
    for (file, finding) in &known {
        if !refusals.contains_key(*file) {
            report.push(format!(
                "now accepted: {file} (known refusal: {finding}); remove it from KNOWN_REFUSALS"
            ));
        }
    }
    eprintln!(
        "{} CRDs, {} objects ({} namespaces applied, {} dry-run), {} known refusals, {:.1?} in all",
        installed,
        objects.len(),
        namespaces.len(),
        others.len(),
        known.len(),
        began.elapsed()
    );
    assert!(report.is_empty(), "{}", report.join("\n"));
}

/// One rendered object and where it comes from.
struct Object {
    /// Path from the repository root.
    file: String,
    api_version: String,
    kind: String,
    name: String,
    namespace: Option<String>,
    value: Value,
}

/// Every object under `rendered/` and `examples/*/rendered/`, in path order.
fn rendered_objects() -> Vec<Object> {
    let root = repo();
    let mut tops = vec![root.join("rendered")];
    for entry in std::fs::read_dir(root.join("examples")).expect("examples") {
        let path = entry.expect("entry").path().join("rendered");
        if path.is_dir() {
            tops.push(path);
        }
    }
    let mut objects = Vec::new();
    for top in tops {
        for entry in walkdir::WalkDir::new(&top).sort_by_file_name() {
            let entry = entry.expect("walk");
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "yaml") {
                continue;
            }
            let file = path
                .strip_prefix(&root)
                .expect("under the repository")
                .display()
                .to_string();
            let source = std::fs::read_to_string(path).expect("read");
            let value: Value = serde_saphyr::from_str(&source)
                .unwrap_or_else(|e| panic!("{file}: not one YAML object: {e}"));
            let field = |v: &Value| v.as_str().map(str::to_owned);
            objects.push(Object {
                api_version: field(&value["apiVersion"]).expect("apiVersion"),
                kind: field(&value["kind"]).expect("kind"),
                name: field(&value["metadata"]["name"]).expect("name"),
                namespace: field(&value["metadata"]["namespace"]),
                file,
                value,
            });
        }
    }
    objects
}

/// Applies `objects` server-side (as a dry run when `dry_run`), one kubectl call per folder;
/// when a folder fails, each file again on its own, to name the object and the server's
/// message.
fn apply(
    server: &ApiServer,
    objects: &[&Object],
    dry_run: bool,
    refusals: &mut BTreeMap<String, String>,
) {
    let mut folders: BTreeMap<&str, Vec<&Object>> = BTreeMap::new();
    for o in objects {
        let folder = o.file.rsplit_once('/').map_or("", |(d, _)| d);
        folders.entry(folder).or_default().push(o);
    }
    let run = |files: &[&Object]| {
        let mut cmd = server.kubectl();
        cmd.args(["apply", "--server-side"]);
        if dry_run {
            cmd.arg("--dry-run=server");
        }
        for o in files {
            cmd.arg("-f").arg(repo().join(&o.file));
        }
        cmd.output().expect("run kubectl")
    };
    for files in folders.values() {
        if run(files).status.success() {
            continue;
        }
        for o in files {
            let out = run(std::slice::from_ref(o));
            if !out.status.success() {
                refusals.insert(o.file.clone(), text(&out));
            }
        }
    }
}
