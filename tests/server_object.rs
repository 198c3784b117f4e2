//! The object the API server judges: what it does to `null`s and missing fields before it
//! validates, found with a real kube-apiserver, and the tool agreeing with it.
//!
//! - `tests/fixtures/server/ok_nulls.yaml`: `null` where a custom resource's schema has a
//!   non-nullable field without a default (JobSet and LeaderWorkerSet pod templates: `args`,
//!   `env`, `labels`, `serviceAccountName`) is dropped by a create and by `kubectl apply`
//!   (apiextensions-apiserver's `PruneNonNullableNullsWithoutDefaults`), but refused by a
//!   server-side apply; in a built-in kind it is an absent field either way. The tool
//!   accepts the file (exit 0) and warns at exactly the fields the server-side apply names.
//! - `ok_defaults.yaml`: required fields the server defaults (a CRD schema's `default`, the
//!   Job defaulting of `onPodConditions[].status`, a RoleBinding's `roleRef.apiGroup`), a
//!   StatefulSet's `serviceName` (required by the 1.32 schema, never by the server) and
//!   line-wrapped base64 in a Secret are accepted by both, at every vendored minor; a JobSet failure
//!   policy rule without a name is accepted by the tool because JobSet's webhook names it,
//!   and refused by this server, which runs no webhook.
//! - `bad_required_null.yaml`: a required field given as `null` is refused by both.
//!
//! Needs `kube-apiserver` and `etcd` from `scripts/install-test-deps` (see `tests/apiserver.rs`);
//! the CLI tests need neither.

#[path = "support/apiserver.rs"]
mod apiserver_support;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Output;

use apiserver_support::ApiServer;
use assert_cmd::Command;
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/server")
        .join(name)
}

/// `validate -o json` on one fixture: its exit code and findings.
fn validate(name: &str) -> (i32, Vec<Value>) {
    validate_at(name, &[])
}

/// `validate -o json` with `extra` arguments (a `--kubernetes-version`).
fn validate_at(name: &str, extra: &[&str]) -> (i32, Vec<Value>) {
    let out = Command::cargo_bin("kubectl-aiml")
        .expect("binary")
        .env("NO_COLOR", "1")
        .current_dir(std::env::temp_dir())
        .args(["validate", "-o", "json"])
        .args(extra)
        .arg(fixture(name))
        .output()
        .expect("run kubectl-aiml");
    let findings = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{name}: not JSON ({e}): {}",
            apiserver_support::output_text(&out)
        )
    });
    (out.status.code().expect("exit code"), findings)
}

/// `(object kind, field)` of the schema findings of `severity`.
fn schema_fields(findings: &[Value], severity: &str) -> BTreeSet<(String, String)> {
    findings
        .iter()
        .filter(|f| f["rule"] == "schema-violation" && f["severity"] == severity)
        .map(|f| {
            let kind = f["object"]["kind"].as_str().unwrap_or("").to_owned();
            (kind, f["field"].as_str().unwrap_or("").to_owned())
        })
        .collect()
}

/// The findings of a fixture `validate` accepts (exit 0, no schema error).
fn accepted(name: &str) -> Vec<Value> {
    let (code, findings) = validate(name);
    assert_eq!(code, 0, "{findings:#?}");
    let errors = schema_fields(&findings, "error");
    assert!(errors.is_empty(), "{errors:?}");
    findings
}

#[test]
fn nulls_of_custom_resources_are_dropped_with_a_warning() {
    let findings = accepted("ok_nulls.yaml");
    let warned = schema_fields(&findings, "warning");
    let expected: BTreeSet<(String, String)> = [
        ("JobSet", "spec.replicatedJobs[0].template.metadata.labels"),
        (
            "JobSet",
            "spec.replicatedJobs[0].template.spec.template.metadata.labels",
        ),
        (
            "JobSet",
            "spec.replicatedJobs[0].template.spec.template.spec.serviceAccountName",
        ),
        (
            "JobSet",
            "spec.replicatedJobs[0].template.spec.template.spec.containers[0].args",
        ),
        (
            "JobSet",
            "spec.replicatedJobs[0].template.spec.template.spec.containers[0].env",
        ),
        (
            "LeaderWorkerSet",
            "spec.leaderWorkerTemplate.workerTemplate.metadata.labels",
        ),
        (
            "LeaderWorkerSet",
            "spec.leaderWorkerTemplate.workerTemplate.spec.serviceAccountName",
        ),
        (
            "LeaderWorkerSet",
            "spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].args",
        ),
        (
            "LeaderWorkerSet",
            "spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].env",
        ),
    ]
    .into_iter()
    .map(|(k, f)| (k.to_owned(), f.to_owned()))
    .collect();
    assert_eq!(warned, expected);
}

#[test]
fn fields_the_server_or_a_webhook_defaults_are_not_missing() {
    accepted("ok_defaults.yaml");
    for minor in ["1.32", "1.33", "1.34", "1.35", "1.36"] {
        let (code, findings) = validate_at("ok_defaults.yaml", &["--kubernetes-version", minor]);
        assert_eq!(code, 0, "{minor}: {findings:#?}");
        assert!(
            schema_fields(&findings, "error").is_empty(),
            "{minor}: {findings:#?}"
        );
    }
}

#[test]
fn a_required_field_given_as_null_is_still_refused() {
    let (code, findings) = validate("bad_required_null.yaml");
    assert_eq!(code, 1, "{findings:#?}");
    assert_eq!(
        schema_fields(&findings, "error"),
        BTreeSet::from([(
            "JobSet".to_owned(),
            "spec.replicatedJobs[0].name".to_owned()
        )])
    );
}

/// The server's dry run of `verb` on a fixture.
fn dry_run(server: &ApiServer, verb: &[&str], name: &str) -> Output {
    let mut args = verb.to_vec();
    let file = fixture(name).display().to_string();
    args.extend(["--dry-run=server", "-f", &file]);
    server.run_kubectl(&args)
}

/// The fields a server's error names (`spec.x.y: Invalid value` / `Required value`).
fn fields_named(text: &str) -> BTreeSet<String> {
    let mut fields = BTreeSet::new();
    for marker in [": Invalid value", ": Required value"] {
        for (at, _) in text.match_indices(marker) {
            let before = &text[..at];
            let word = before.rsplit(' ').next().unwrap_or(before);
            let field = word.strip_prefix('[').unwrap_or(word);
            if field.starts_with("spec") {
                fields.insert(field.to_owned());
            }
        }
    }
    fields
}

#[test]
fn the_api_server_treats_nulls_and_defaults_as_the_tool_models() {
    let Some(server) =
        ApiServer::start_or_skip("the_api_server_treats_nulls_and_defaults_as_the_tool_models")
    else {
        return;
    };
    server.install_crds_of(|g| g == "jobset.x-k8s.io" || g == "leaderworkerset.x-k8s.io");
    let text = apiserver_support::output_text;

    // Nulls: a create drops them (as `kubectl apply` does), a server-side apply refuses
    // them, at exactly the fields the tool warns of.
    let created = dry_run(&server, &["create"], "ok_nulls.yaml");
    assert!(created.status.success(), "{}", text(&created));
    let applied = dry_run(&server, &["apply"], "ok_nulls.yaml");
    assert!(applied.status.success(), "{}", text(&applied));
    let ssa = dry_run(&server, &["apply", "--server-side"], "ok_nulls.yaml");
    assert!(!ssa.status.success(), "{}", text(&ssa));
    let refused = fields_named(&String::from_utf8_lossy(&ssa.stderr));
    let (_, findings) = validate("ok_nulls.yaml");
    let warned: BTreeSet<String> = schema_fields(&findings, "warning")
        .into_iter()
        .map(|(_, field)| field)
        .collect();
    assert_eq!(refused, warned, "{}", text(&ssa));
    assert!(
        String::from_utf8_lossy(&ssa.stdout).contains("job.batch/nulls serverside-applied"),
        "a built-in kind's null is an absent field: {}",
        text(&ssa)
    );

    // Defaults: both verbs accept the defaulted fields; the JobSet rule's name is filled by
    // JobSet's webhook, which this server does not run.
    for verb in [&["create"][..], &["apply", "--server-side"]] {
        let out = dry_run(&server, verb, "ok_defaults.yaml");
        let stdout = String::from_utf8_lossy(&out.stdout);
        for accepted in [
            "leaderworkerset.x-k8s.io/defaults",
            "job.batch/defaults",
            "rolebinding.rbac.authorization.k8s.io/defaults",
            "statefulset.apps/defaults",
            "secret/defaults",
        ] {
            assert!(
                stdout.contains(accepted),
                "{verb:?} {accepted}: {}",
                text(&out)
            );
        }
        assert_eq!(
            fields_named(&String::from_utf8_lossy(&out.stderr)),
            BTreeSet::from(["spec.failurePolicy.rules[0].name".to_owned()]),
            "{verb:?}: {}",
            text(&out)
        );
    }

    // A required null is refused either way.
    for verb in [&["create"][..], &["apply", "--server-side"]] {
        let out = dry_run(&server, verb, "bad_required_null.yaml");
        assert!(!out.status.success(), "{verb:?}: {}", text(&out));
        assert_eq!(
            fields_named(&String::from_utf8_lossy(&out.stderr)),
            BTreeSet::from(["spec.replicatedJobs[0].name".to_owned()]),
            "{verb:?}: {}",
            text(&out)
        );
    }
}
