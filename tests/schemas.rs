//! Schema conformance of rendered objects: CONTRACT.md, invariant 4 ("every rendered object is
//! accepted by the schema of its kind").
//!
//! Two schema sources, both read at test time, never copied into this repository:
//! - built-in kinds: the Kubernetes 1.32 JSON schemas shipped inside the PyPI package
//!   `kubernetes-validate` (install with `scripts/install-test-deps`), found through
//!   `AIML_K8S_SCHEMAS` or `python3`; the "-local-strict" variant, which rejects unknown fields;
//! - custom resources: `<crate>/../shared/schemas` (kubeconform layout plus `index.json`).
//!
//! A missing source skips the objects only it could check, with a notice on stderr; set
//! `AIML_REQUIRE_SCHEMAS=1` (e.g. in CI) to make a missing source a failure instead.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use jsonschema::{Draft, Registry, ValidationOptions, Validator};
use serde_json::Value;

/// The Kubernetes minor version the contract targets.
const K8S_MINOR: &str = "1.32";
/// `$id` of `_definitions.json` in the kubernetes-validate layout; every per-kind schema refers
/// to it as `/api/_definitions.json#/$defs/…`, resolved against its own `https://kubernetes.io/…`
/// `$id`.
const K8S_DEFINITIONS_URI: &str = "https://kubernetes.io/api/_definitions.json";
const OBJECT_META_DEF: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
/// Validation messages embed the offending value; an `anyOf` failure on a big object would print
/// all of it.
const MAX_MESSAGE_CHARS: usize = 300;

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[test]
fn rendered_objects_match_their_schemas() {
    let rendered = crate_dir().join("rendered");
    if !rendered.is_dir() {
        notice(format_args!(
            "skipping rendered_objects_match_their_schemas: {} does not exist yet",
            rendered.display()
        ));
        return;
    }
    let mut checker = Checker::new(sources());
    let report = checker.check_dir(&rendered);
    report.print_notes("rendered/");
    assert!(
        report.objects > 0,
        "{}: no objects found",
        rendered.display()
    );
    report.assert_clean();
}

#[test]
fn good_fixtures_match_their_schemas() {
    let mut checker = Checker::new(sources());
    let report = checker.check_dir(&fixtures().join("good"));
    report.print_notes("good fixtures");
    // Namespace, ServiceAccount, PriorityClass, Deployment, JobSet, 3 Kueue objects,
    // ContainerNodePool, IAMPolicyMember, StorageBucket.
    assert_eq!(report.objects, 11, "good fixtures: unexpected object count");
    report.assert_clean();
    if sources().is_complete() {
        assert!(
            report.skipped.is_empty(),
            "with both sources every object is checked"
        );
    }
}

/// Each file under `bad/` holds one object with one defect, and names the failure it must cause
/// with `# expect: <text>` comment lines (each must occur in some failure line).
#[test]
fn bad_fixtures_are_each_rejected() {
    let sources = sources();
    if !sources.is_complete() {
        // Without both sources some defects would go unnoticed (skipped), proving nothing.
        notice("skipping bad_fixtures_are_each_rejected: a schema source is missing");
        return;
    }
    let mut checker = Checker::new(sources);
    let files = yaml_files(&fixtures().join("bad"));
    assert!(
        files.len() >= 5,
        "expected the bad fixtures, found {files:?}"
    );

    let mut problems = Vec::new();
    for file in &files {
        let text = fs::read_to_string(file).expect("bad fixture is readable");
        let expected: Vec<&str> = text
            .lines()
            .filter_map(|line| line.strip_prefix("# expect:"))
            .map(str::trim)
            .collect();
        assert!(
            !expected.is_empty(),
            "{}: no `# expect:` line",
            file.display()
        );

        let mut report = Report::default();
        checker.check_file(file, &mut report);
        let lines: Vec<String> = report.failures.iter().map(ToString::to_string).collect();
        if lines.is_empty() {
            problems.push(format!(
                "{}: accepted, but must be rejected",
                file.display()
            ));
        }
        for want in expected {
            if !lines.iter().any(|line| line.contains(want)) {
                problems.push(format!(
                    "{}: no failure mentions {want:?}; failures were:\n    {}",
                    file.display(),
                    lines.join("\n    ")
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Where JSON Schema and the API server could disagree, the checker must side with the API
/// server: neither reject what it accepts nor accept what it rejects.
#[test]
fn checker_agrees_with_the_api_server_on_edge_cases() {
    let sources = sources();
    if !sources.is_complete() {
        notice(
            "skipping checker_agrees_with_the_api_server_on_edge_cases: a schema source is missing",
        );
        return;
    }
    let mut checker = Checker::new(sources);
    let jobset_container = |fields: &str| {
        format!(
            "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {{name: q}}\n\
             spec:\n  replicatedJobs:\n  - name: w\n    template:\n      spec:\n        \
             template:\n          spec:\n            containers:\n            - name: c\n              \
             image: busybox\n              {fields}\n"
        )
    };
    let jobset_cpu =
        |value: &str| jobset_container(&format!("resources: {{limits: {{cpu: {value}}}}}"));
    let pod_cpu = |value: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: q}}\nspec:\n  containers:\n  \
             - name: c\n    image: busybox\n    resources: {{limits: {{cpu: {value}}}}}\n"
        )
    };
    let monitoring = |interval: &str| {
        format!(
            "apiVersion: monitoring.googleapis.com/v1\nkind: PodMonitoring\nmetadata: {{name: q}}\n\
             spec:\n  selector: {{}}\n  endpoints:\n  - port: 8080\n    interval: {interval}\n"
        )
    };
    let namespace_label = |value: &str| {
        format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: q\n  labels: {{team: {value}}}\n"
        )
    };
    let secret = |data: &str| {
        format!("apiVersion: v1\nkind: Secret\nmetadata: {{name: q}}\ndata: {{key: {data}}}\n")
    };
    let cases = [
        // CRD pod templates: quantities are x-kubernetes-int-or-string, i.e. an integer or a
        // string matching the quantity pattern.
        (jobset_cpu("4"), true),
        (jobset_cpu("\"2\""), true),
        (jobset_cpu("500m"), true),
        (jobset_cpu("0.5"), false), // the API server rejects a float here too ("integer,string")
        (jobset_cpu("lots"), false),
        // … and unknown fields deep inside an embedded pod template are rejected.
        (jobset_container("imagePullPolicy: Always"), true),
        (jobset_container("imagePulPolicy: Always"), false),
        // Built-in Pod: resource.Quantity accepts any JSON number or a string.
        (pod_cpu("4"), true),
        (pod_cpu("0.5"), true),
        (pod_cpu("\"2\""), true),
        // format: duration is a Go duration for the API server (kube-openapi), not ISO 8601.
        (monitoring("30s"), true),
        (monitoring("1m30s"), true),
        (monitoring("thirty"), false),
        // kubectl reads YAML 1.1: an unquoted `on` is a boolean, and label values are strings.
        (namespace_label("\"on\""), true),
        (namespace_label("on"), false),
        // format: byte is base64, checked by the API server when it decodes Secret data.
        (secret("aGVsbG8="), true),
        (secret("hello!"), false),
    ];
    let mut problems = Vec::new();
    for (yaml, accepted) in &cases {
        let failures = checker.check_text(yaml);
        if failures.is_empty() != *accepted {
            let verdict = if *accepted { "rejected" } else { "accepted" };
            problems.push(format!("wrongly {verdict}:\n{yaml}{failures:#?}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// Schema sources
// ---------------------------------------------------------------------------------------------

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixtures() -> PathBuf {
    crate_dir().join("tests/fixtures/schemas")
}

/// libtest captures `println!`/`eprintln!` of passing tests; a skipped check must be visible in
/// every `cargo test` run, so write to the stderr handle, which is not captured.
fn notice(message: impl fmt::Display) {
    let _ = writeln!(std::io::stderr(), "note: {message}");
}

fn require_schemas() -> bool {
    std::env::var("AIML_REQUIRE_SCHEMAS").is_ok_and(|v| !v.is_empty() && v != "0")
}

fn read_json(path: &Path) -> Value {
    let text = fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read schema {}: {e}", path.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("schema {} is not JSON: {e}", path.display()))
}

/// Both sources, loaded once for all tests (so each notice is printed once, and the 1.3 MB
/// `_definitions.json` is parsed once).
fn sources() -> &'static Sources {
    static SOURCES: OnceLock<Sources> = OnceLock::new();
    SOURCES.get_or_init(Sources::load)
}

struct Sources {
    builtin: Option<BuiltinSchemas>,
    crds: Option<CrdSchemas>,
}

impl Sources {
    /// Loads both sources; a missing one is a notice (or a panic under `AIML_REQUIRE_SCHEMAS`).
    fn load() -> Self {
        let builtin = match locate_builtin_schemas() {
            Ok(dir) => Some(BuiltinSchemas::load(dir)),
            Err(reason) => {
                missing_source(&format!("skipping built-in schema checks: {reason}"));
                None
            }
        };
        let crd_dir = crate_dir().join("../shared/schemas");
        let crds = if crd_dir.join("index.json").is_file() {
            // Canonical, so that messages show /…/shared/schemas rather than …/main/../shared.
            Some(CrdSchemas::load(crd_dir.canonicalize().unwrap_or(crd_dir)))
        } else {
            missing_source(&format!(
                "skipping CRD schema checks: {} not found",
                crd_dir.join("index.json").display()
            ));
            None
        };
        Self { builtin, crds }
    }

    fn is_complete(&self) -> bool {
        self.builtin.is_some() && self.crds.is_some()
    }
}

fn missing_source(message: &str) {
    assert!(
        !require_schemas(),
        "AIML_REQUIRE_SCHEMAS is set, but {message}"
    );
    notice(message);
}

/// Kubernetes built-in schemas: one file per kind, `<kind>-<group prefix>-<version>.json`
/// (`deployment-apps-v1.json`, `namespace-v1.json`), plus `_definitions.json` they all refer to.
struct BuiltinSchemas {
    dir: PathBuf,
    /// Holds `_definitions.json` under its `$id`, so references resolve without any retrieval.
    registry: Registry<'static>,
}

/// `AIML_K8S_SCHEMAS` (the 1.32 folder itself, or the `kubernetes_validate` package folder)
/// wins; otherwise ask python3 where the package is. Uses `find_spec` rather than importing it:
/// only its data is needed, not its Python dependencies.
fn locate_builtin_schemas() -> Result<PathBuf, String> {
    if let Some(root) = std::env::var_os("AIML_K8S_SCHEMAS") {
        let root = PathBuf::from(root);
        // An explicit setting that does not work is a mistake to report, not a reason to skip.
        return Ok(version_dir(&root).unwrap_or_else(|| {
            panic!(
                "AIML_K8S_SCHEMAS={} holds neither _definitions.json nor a \
                 kubernetes-json-schema/v{K8S_MINOR}.*-local-strict folder",
                root.display()
            )
        }));
    }
    let hint = "run scripts/install-test-deps or set AIML_K8S_SCHEMAS";
    let output = Command::new("python3")
        .args([
            "-c",
            "import importlib.util as u; s = u.find_spec('kubernetes_validate'); \
             print(s.submodule_search_locations[0] if s else '')",
        ])
        .output()
        .map_err(|e| format!("cannot run python3 ({e}); {hint}"))?;
    let package = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if !output.status.success() || package.is_empty() {
        return Err(format!(
            "python package kubernetes-validate not found; {hint}"
        ));
    }
    version_dir(Path::new(&package)).ok_or_else(|| {
        format!(
            "{package} has no kubernetes-json-schema/v{K8S_MINOR}.*-local-strict folder; {hint}"
        )
    })
}

/// The folder holding `_definitions.json`: `root` itself, or the newest
/// `v1.32.<patch>-local-strict` under `root` or `root/kubernetes-json-schema`.
fn version_dir(root: &Path) -> Option<PathBuf> {
    if root.join("_definitions.json").is_file() {
        return Some(root.to_path_buf());
    }
    let prefix = format!("v{K8S_MINOR}.");
    [root.to_path_buf(), root.join("kubernetes-json-schema")]
        .iter()
        .filter_map(|parent| fs::read_dir(parent).ok())
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let patch: u32 = name
                .strip_prefix(&prefix)?
                .strip_suffix("-local-strict")?
                .parse()
                .ok()?;
            Some((patch, entry.path()))
        })
        .filter(|(_, path)| path.join("_definitions.json").is_file())
        .max()
        .map(|(_, path)| path)
}

impl BuiltinSchemas {
    fn load(dir: PathBuf) -> Self {
        let definitions = read_json(&dir.join("_definitions.json"));
        let registry = Registry::new()
            .add(K8S_DEFINITIONS_URI, definitions)
            .and_then(|builder| builder.prepare())
            .unwrap_or_else(|e| panic!("cannot index {}/_definitions.json: {e}", dir.display()));
        Self { dir, registry }
    }

    fn path(&self, group: &str, version: &str, kind: &str) -> PathBuf {
        // kubernetes-validate keeps the group's first label only: rbac.authorization.k8s.io →
        // rbac. That can collide with a CRD group, so the caller checks the file's GVK too.
        let kind = kind.to_lowercase();
        let name = match group.split('.').next() {
            Some(prefix) if !prefix.is_empty() => format!("{kind}-{prefix}-{version}.json"),
            _ => format!("{kind}-{version}.json"),
        };
        self.dir.join(name)
    }
}

/// Custom resource schemas: `index.json` maps `group/version/Kind` to a file in the folder.
struct CrdSchemas {
    dir: PathBuf,
    /// `group/version/Kind` → (schema file, deprecation warning).
    index: BTreeMap<String, (PathBuf, Option<String>)>,
    groups: BTreeSet<String>,
}

impl CrdSchemas {
    fn load(dir: PathBuf) -> Self {
        let Value::Object(entries) = read_json(&dir.join("index.json")) else {
            panic!("{}/index.json is not a JSON object", dir.display());
        };
        let mut index = BTreeMap::new();
        let mut groups = BTreeSet::new();
        for (key, entry) in entries {
            let file = entry["file"]
                .as_str()
                .unwrap_or_else(|| panic!("index.json: {key} has no \"file\""));
            let deprecation = (entry["deprecated"] == Value::Bool(true)).then(|| {
                entry["deprecationWarning"]
                    .as_str()
                    .unwrap_or("deprecated version")
                    .to_owned()
            });
            if let Some(group) = entry["group"].as_str() {
                groups.insert(group.to_owned());
            }
            index.insert(key, (dir.join(file), deprecation));
        }
        Self { dir, index, groups }
    }
}

// ---------------------------------------------------------------------------------------------
// The checker
// ---------------------------------------------------------------------------------------------

/// One rejected object (or an object that could not be checked at all).
#[derive(Debug)]
struct Failure {
    file: String,
    object: String,
    /// JSON pointer into the object; empty for the object as a whole.
    path: String,
    message: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "(object)"
        } else {
            &self.path
        };
        write!(
            f,
            "{}: {}: {path}: {}",
            self.file, self.object, self.message
        )
    }
}

#[derive(Default)]
struct Report {
    objects: usize,
    failures: Vec<Failure>,
    /// Objects not checked because the only source that could have a schema for them is missing.
    skipped: Vec<String>,
    /// Deprecated CRD versions in use (accepted, but worth knowing).
    deprecations: BTreeSet<String>,
}

impl Report {
    fn print_notes(&self, what: &str) {
        if !self.skipped.is_empty() {
            notice(format_args!(
                "{what}: {} of {} objects not schema-checked (schema source missing): {}",
                self.skipped.len(),
                self.objects,
                self.skipped.join(", ")
            ));
        }
        for deprecation in &self.deprecations {
            notice(format_args!("{what}: {deprecation}"));
        }
    }

    fn assert_clean(&self) {
        if !self.failures.is_empty() {
            let lines: Vec<String> = self.failures.iter().map(ToString::to_string).collect();
            panic!(
                "{} schema failure(s) in {} object(s):\n{}",
                lines.len(),
                self.objects,
                lines.join("\n")
            );
        }
    }
}

enum Lookup {
    Found {
        path: PathBuf,
        is_crd: bool,
        /// The CRD version's deprecation warning, if it is deprecated.
        deprecation: Option<String>,
    },
    /// No schema, and none could be found elsewhere: both sources are present, or the group is
    /// a CRD group (whose kinds are all in the index). A failure.
    Missing(String),
    /// A source that might have it is missing: skipped.
    Unknown,
}

struct Checker {
    sources: &'static Sources,
    /// Compiled schemas by file, each compiled once; `Err` keeps a broken schema's message.
    validators: BTreeMap<PathBuf, Result<Validator, String>>,
    /// `ObjectMeta` from the built-ins: CRD schemas only say `metadata: {type: object}`, while
    /// the API server checks custom resources' metadata like any other object's.
    object_meta: Option<Validator>,
}

/// Options shared by every schema: no retrieval at all (every `$ref` must be in the registry),
/// and `format` checks that match the API server's.
fn options<'r>(draft: Draft, registry: Option<&'r Registry<'static>>) -> ValidationOptions<'r> {
    let options = jsonschema::options()
        .with_draft(draft)
        .offline()
        // 2020-12 treats `format` as an annotation by default; Kubernetes does check formats.
        .should_validate_formats(true)
        .with_format("duration", is_kubernetes_duration)
        .with_format("byte", is_base64);
    match registry {
        Some(registry) => options.with_registry(registry),
        None => options,
    }
}

impl Checker {
    fn new(sources: &'static Sources) -> Self {
        let object_meta = sources.builtin.as_ref().map(|builtin| {
            let schema = serde_json::json!({
                "$ref": format!("{K8S_DEFINITIONS_URI}#/$defs/{OBJECT_META_DEF}")
            });
            options(Draft::Draft202012, Some(&builtin.registry))
                .build(&schema)
                .expect("ObjectMeta schema compiles")
        });
        Self {
            sources,
            validators: BTreeMap::new(),
            object_meta,
        }
    }

    /// Checks every `.yaml`/`.yml` file under `dir`, recursively, in sorted order.
    fn check_dir(&mut self, dir: &Path) -> Report {
        let mut report = Report::default();
        for file in yaml_files(dir) {
            self.check_file(&file, &mut report);
        }
        report
    }

    fn check_file(&mut self, file: &Path, report: &mut Report) {
        let shown = file
            .strip_prefix(crate_dir())
            .unwrap_or(file)
            .display()
            .to_string();
        let fail = |report: &mut Report, object: &str, message: String| {
            report.failures.push(Failure {
                file: shown.clone(),
                object: object.to_owned(),
                path: String::new(),
                message,
            });
        };
        let text = match fs::read_to_string(file) {
            Ok(text) => text,
            Err(e) => return fail(report, "-", format!("cannot read: {e}")),
        };
        // serde-saphyr's defaults read YAML 1.1 booleans (yes/on) as booleans, as kubectl does.
        let documents: Vec<Value> = match serde_saphyr::from_multiple(&text) {
            Ok(documents) => documents,
            Err(e) => return fail(report, "-", format!("not valid YAML: {e}")),
        };
        for (index, document) in documents.iter().enumerate() {
            if document.is_null() {
                continue; // an empty document, e.g. after a trailing `---`
            }
            report.objects += 1;
            let label = object_label(document, index);
            if let Err(message) = self.check_object(document, &label, &shown, report) {
                fail(report, &label, message);
            }
        }
    }

    /// Checks parsed YAML text and returns the failure lines (for small inline cases).
    fn check_text(&mut self, yaml: &str) -> Vec<String> {
        let dir = tempfile::tempdir().expect("temporary directory");
        let file = dir.path().join("object.yaml");
        fs::write(&file, yaml).expect("write temporary object");
        let report = self.check_dir(dir.path());
        assert!(report.skipped.is_empty(), "not checked: {yaml}");
        report
            .failures
            .iter()
            .map(|f| format!("{}: {}", f.path, f.message))
            .collect()
    }

    /// Validates one object; `Err` is a failure about the object as a whole.
    fn check_object(
        &mut self,
        object: &Value,
        label: &str,
        file: &str,
        report: &mut Report,
    ) -> Result<(), String> {
        let (Some(api_version), Some(kind)) =
            (object["apiVersion"].as_str(), object["kind"].as_str())
        else {
            return Err("not a Kubernetes object: needs string apiVersion and kind".to_owned());
        };
        let (path, is_crd) = match self.lookup(api_version, kind) {
            Lookup::Found {
                path,
                is_crd,
                deprecation,
            } => {
                if let Some(warning) = deprecation {
                    report
                        .deprecations
                        .insert(format!("{api_version} {kind}: {warning}"));
                }
                (path, is_crd)
            }
            Lookup::Missing(why) => return Err(why),
            Lookup::Unknown => {
                report.skipped.push(format!("{file} ({label})"));
                return Ok(());
            }
        };
        let validator = compiled(
            &mut self.validators,
            self.sources.builtin.as_ref(),
            &path,
            is_crd,
        )?;
        let mut push = |error: jsonschema::ValidationError<'_>, prefix: &str| {
            report.failures.push(Failure {
                file: file.to_owned(),
                object: label.to_owned(),
                path: format!("{prefix}{}", error.instance_path()),
                message: short_message(&error),
            });
        };
        for error in validator.iter_errors(object) {
            push(error, "");
        }
        if let (true, Some(meta), Some(metadata)) =
            (is_crd, &self.object_meta, object.get("metadata"))
        {
            for error in meta.iter_errors(metadata) {
                push(error, "/metadata");
            }
        }
        Ok(())
    }

    fn lookup(&self, api_version: &str, kind: &str) -> Lookup {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        if let Some(crds) = &self.sources.crds
            && let Some((path, deprecation)) = crds.index.get(&format!("{group}/{version}/{kind}"))
        {
            return Lookup::Found {
                path: path.clone(),
                is_crd: true,
                deprecation: deprecation.clone(),
            };
        }
        let in_crd_group = self
            .sources
            .crds
            .as_ref()
            .is_some_and(|c| c.groups.contains(group));
        if !in_crd_group && let Some(builtin) = &self.sources.builtin {
            let path = builtin.path(group, version, kind);
            if path.is_file() && declares_gvk(&path, group, version, kind) {
                return Lookup::Found {
                    path,
                    is_crd: false,
                    deprecation: None,
                };
            }
        }
        if in_crd_group || self.sources.is_complete() {
            let known = self.api_versions_of(kind);
            let hint = if known.is_empty() {
                String::new()
            } else {
                format!(" ({kind} is served as {})", known.join(", "))
            };
            Lookup::Missing(format!(
                "no schema for apiVersion {api_version} kind {kind}: neither a Kubernetes \
                 {K8S_MINOR} built-in nor a CRD in {}{hint}",
                self.sources
                    .crds
                    .as_ref()
                    .map_or(Path::new("-"), |c| &c.dir)
                    .display()
            ))
        } else {
            Lookup::Unknown
        }
    }

    /// The apiVersions that do have a schema for `kind`, for a helpful failure message.
    fn api_versions_of(&self, kind: &str) -> Vec<String> {
        let mut found = BTreeSet::new();
        if let Some(crds) = &self.sources.crds {
            for key in crds.index.keys() {
                if let Some((api_version, k)) = key.rsplit_once('/')
                    && k == kind
                {
                    found.insert(api_version.to_owned());
                }
            }
        }
        if let Some(builtin) = &self.sources.builtin {
            let prefix = format!("{}-", kind.to_lowercase());
            let entries = fs::read_dir(&builtin.dir)
                .into_iter()
                .flatten()
                .filter_map(Result::ok);
            for entry in entries {
                if !entry.file_name().to_string_lossy().starts_with(&prefix) {
                    continue;
                }
                let schema = read_json(&entry.path());
                for gvk in schema["x-kubernetes-group-version-kind"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    if let (Some(group), Some(version)) =
                        (gvk["group"].as_str(), gvk["version"].as_str())
                        && gvk["kind"] == kind
                    {
                        found.insert(if group.is_empty() {
                            version.to_owned()
                        } else {
                            format!("{group}/{version}")
                        });
                    }
                }
            }
        }
        found.into_iter().collect()
    }
}

/// The compiled schema of `path`, compiled on first use. A free function, not a method, so that
/// the returned borrow of `validators` leaves the checker's other fields usable.
fn compiled<'v>(
    validators: &'v mut BTreeMap<PathBuf, Result<Validator, String>>,
    builtin: Option<&BuiltinSchemas>,
    path: &Path,
    is_crd: bool,
) -> Result<&'v Validator, String> {
    validators
        .entry(path.to_path_buf())
        .or_insert_with(|| {
            let schema = read_json(path);
            // CRD schemas are OpenAPI v3 structural schemas converted to draft-07 (their
            // `$schema`); they use no `$ref` and no draft-4-only keyword, so draft 7 means
            // exactly what the API server means. The built-ins declare 2020-12 and refer to
            // `_definitions.json` in the registry.
            let (draft, registry) = if is_crd {
                (Draft::Draft7, None)
            } else {
                (Draft::Draft202012, builtin.map(|b| &b.registry))
            };
            options(draft, registry)
                .build(&schema)
                .map_err(|e| format!("schema {} does not compile: {e}", path.display()))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Whether a built-in schema file is really for `group/version/kind` (see `BuiltinSchemas::path`).
fn declares_gvk(path: &Path, group: &str, version: &str, kind: &str) -> bool {
    let schema = read_json(path);
    schema["x-kubernetes-group-version-kind"]
        .as_array()
        .is_some_and(|gvks| {
            gvks.iter().any(|gvk| {
                gvk["group"] == group && gvk["version"] == version && gvk["kind"] == kind
            })
        })
}

/// `Kind namespace/name`, or the document's position when it has no name.
fn object_label(object: &Value, index: usize) -> String {
    let kind = object["kind"].as_str().unwrap_or("<no kind>");
    let name = object["metadata"]["name"].as_str();
    match (object["metadata"]["namespace"].as_str(), name) {
        (Some(namespace), Some(name)) => format!("{kind} {namespace}/{name}"),
        (None, Some(name)) => format!("{kind} {name}"),
        (_, None) => format!("{kind} (document {})", index + 1),
    }
}

fn short_message(error: &jsonschema::ValidationError<'_>) -> String {
    let message = error.to_string();
    if message.chars().count() <= MAX_MESSAGE_CHARS {
        message
    } else {
        // Same message with the (long) offending value replaced by a placeholder.
        error.masked_with("<value>").to_string()
    }
}

/// Every `.yaml`/`.yml` file under `dir`, recursively, sorted by path.
fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries =
            fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path
                .extension()
                .is_some_and(|ext| ext == "yaml" || ext == "yml")
            {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

// ---------------------------------------------------------------------------------------------
// Formats as the API server reads them (k8s.io/kube-openapi strfmt)
// ---------------------------------------------------------------------------------------------

/// `format: duration` is a Go duration (`30s`, `1h30m`, `-1.5h`, `0`) or strfmt's spelled-out
/// form (`3 days`, `1w`), not JSON Schema's ISO 8601 (`PT30S`).
fn is_kubernetes_duration(text: &str) -> bool {
    is_go_duration(text) || is_spelled_duration(text)
}

fn is_go_duration(text: &str) -> bool {
    let text = text.strip_prefix(['-', '+']).unwrap_or(text);
    if text == "0" {
        return true;
    }
    let mut rest = text;
    let mut parts = 0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..digits];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return false;
        }
        rest = &rest[digits..];
        let Some(unit) = ["ns", "us", "µs", "μs", "ms", "s", "m", "h"]
            .into_iter()
            .filter(|unit| rest.starts_with(unit))
            .max_by_key(|unit| unit.len())
        else {
            return false;
        };
        rest = &rest[unit.len()..];
        parts += 1;
    }
    parts > 0
}

fn is_spelled_duration(text: &str) -> bool {
    const UNITS: [&str; 16] = [
        "ns",
        "us",
        "ms",
        "s",
        "m",
        "h",
        "d",
        "w",
        "nanosecond",
        "microsecond",
        "millisecond",
        "second",
        "minute",
        "hour",
        "day",
        "week",
    ];
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let unit = text[digits..].trim_start();
    let unit = if unit.len() > 2 {
        unit.strip_suffix('s').unwrap_or(unit)
    } else {
        unit
    };
    digits > 0 && UNITS.contains(&unit)
}

/// `format: byte` is standard base64 with padding (Go's `base64.StdEncoding`).
fn is_base64(text: &str) -> bool {
    let body = text.trim_end_matches('=');
    let padding = text.len() - body.len();
    text.len().is_multiple_of(4)
        && padding <= 2
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}
