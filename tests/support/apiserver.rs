//! A real, pinned kube-apiserver and etcd for the cluster tests, started on 127.0.0.1.
//!
//! `scripts/install-test-deps` builds both binaries into a cache outside the clone; the tests
//! find them in `$AIML_TEST_APISERVER_BIN_DIR`, else in that cache. No controller runs: tests
//! create objects and patch their `status` themselves. Everything lives in one temporary
//! folder (certificates, etcd data, logs, kubeconfig, kubectl's discovery cache), and dropping
//! the [`ApiServer`] kills exactly the two processes it started and removes that folder.
//!
//! Used through `#[path = "support/apiserver.rs"] mod apiserver_support;` so that the other
//! test crates, which include `support/mod.rs`, do not compile it.

#![allow(dead_code, reason = "each test crate uses a part of this module")]

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

/// The pinned versions; keep them equal to those in `scripts/install-test-deps`.
pub const KUBERNETES_VERSION: &str = "v1.33.13";
/// The pinned etcd.
pub const ETCD_VERSION: &str = "v3.5.21";

/// The file `scripts/install-test-deps` leaves beside the binaries' folder when it could not
/// build them for want of Go: the only case in which a cluster test is skipped.
pub const SKIP_MARKER: &str = "cluster-tests-skipped";

/// How long the server may take to report ready (3–5 s on an idle machine; the machines
/// that run the tests are shared, so allow much more before calling it a failure).
const STARTUP_LIMIT: Duration = Duration::from_secs(90);

/// The folder with `kube-apiserver` and `etcd`: the environment variable, else the cache
/// folder `scripts/install-test-deps` builds into.
pub fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("AIML_TEST_APISERVER_BIN_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    cache.join("kubectl-aiml").join(format!(
        "apiserver-{KUBERNETES_VERSION}-etcd-{ETCD_VERSION}"
    ))
}

/// What a cluster test lacks to run, if anything.
fn missing() -> Option<String> {
    let dir = bin_dir();
    for bin in ["kube-apiserver", "etcd"] {
        if !dir.join(bin).is_file() {
            return Some(format!(
                "{bin} not built in {} (run scripts/install-test-deps)",
                dir.display()
            ));
        }
    }
    for tool in ["openssl", "kubectl"] {
        if which::which(tool).is_err() {
            return Some(format!("{tool} not on PATH"));
        }
    }
    None
}

/// Who a kubeconfig context authenticates as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum User {
    /// In `system:masters`: may do anything.
    Admin,
    /// `aiml-test-viewer`, in no group: may do nothing RBAC does not grant.
    Viewer,
}

/// A running etcd and kube-apiserver, and a kubeconfig for a `system:masters` client.
pub struct ApiServer {
    apiserver: Child,
    etcd: Child,
    /// Root of everything this server wrote; removed on drop (after the processes stop).
    dir: tempfile::TempDir,
    /// How long it took from the first process start to `/readyz` answering `ok`.
    pub startup: Duration,
}

impl ApiServer {
    /// Starts a server for the test `name`, or fails the test saying why it cannot: like
    /// every program a test runs, the server is required (scripts/install-test-deps builds
    /// it), since a skipped test would pass without checking anything.
    pub fn start_required(name: &str) -> Self {
        if let Some(why) = missing() {
            panic!("{name}: {why}");
        }
        Self::start()
    }

    /// Starts a server for the test `name`; `None` only on a machine where
    /// `scripts/install-test-deps` could not build one because there is no Go toolchain (it
    /// leaves [`SKIP_MARKER`] saying so), and then the test says on the terminal, by name,
    /// that it is skipped and why — never a silent pass. Anywhere else a missing server fails
    /// the test, as [`ApiServer::start_required`] does.
    pub fn start_or_skip(name: &str) -> Option<Self> {
        let Some(why) = missing() else {
            return Some(Self::start());
        };
        let marker = bin_dir().with_file_name(SKIP_MARKER);
        match std::fs::read_to_string(&marker) {
            Ok(reason) if which::which("go").is_err() => {
                use std::io::Write as _;
                // Straight to the terminal: the test harness captures `eprintln!` of a test
                // that passes, and this must be seen.
                let _ = writeln!(
                    std::io::stderr().lock(),
                    "SKIPPED {name}: {why}; {} (install Go and run scripts/install-test-deps)",
                    reason.trim()
                );
                None
            }
            _ => panic!("{name}: {why}"),
        }
    }

    /// Starts etcd and the API server and waits until `/readyz` answers; panics with the end
    /// of their logs when it does not within the limit.
    pub fn start() -> Self {
        let began = Instant::now();
        let dir = tempfile::Builder::new()
            .prefix("aiml-apiserver-")
            .tempdir()
            .expect("temp dir");
        let root = dir.path();
        certificates(root);
        let bins = bin_dir();
        let [etcd_client, etcd_peer, secure] = free_ports();

        let etcd = spawn_logged(
            Command::new(bins.join("etcd")).args([
                "--name=aiml-test".to_owned(),
                format!("--data-dir={}", root.join("etcd").display()),
                format!("--listen-client-urls=http://127.0.0.1:{etcd_client}"),
                format!("--advertise-client-urls=http://127.0.0.1:{etcd_client}"),
                format!("--listen-peer-urls=http://127.0.0.1:{etcd_peer}"),
                format!("--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer}"),
                format!("--initial-cluster=aiml-test=http://127.0.0.1:{etcd_peer}"),
                // A throwaway store: durability buys nothing and fsync is slow on shared disks.
                "--unsafe-no-fsync".to_owned(),
                "--log-level=warn".to_owned(),
            ]),
            &root.join("etcd.log"),
        );
        let pki = root.join("pki");
        let p = |f: &str| pki.join(f).display().to_string();
        let apiserver = spawn_logged(
            Command::new(bins.join("kube-apiserver")).args([
                format!("--etcd-servers=http://127.0.0.1:{etcd_client}"),
                "--bind-address=127.0.0.1".to_owned(),
                "--advertise-address=127.0.0.1".to_owned(),
                format!("--secure-port={secure}"),
                format!("--cert-dir={}", root.join("cert-dir").display()),
                format!("--tls-cert-file={}", p("server.crt")),
                format!("--tls-private-key-file={}", p("server.key")),
                format!("--client-ca-file={}", p("ca.crt")),
                format!("--service-account-key-file={}", p("sa.pub")),
                format!("--service-account-signing-key-file={}", p("sa.key")),
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local".to_owned(),
                "--service-cluster-ip-range=10.0.0.0/24".to_owned(),
                "--authorization-mode=RBAC".to_owned(),
                // No controller-manager runs: nothing would create the token the
                // ServiceAccount admission waits for, nor reconcile the endpoints.
                "--disable-admission-plugins=ServiceAccount".to_owned(),
                "--endpoint-reconciler-type=none".to_owned(),
                "--profiling=false".to_owned(),
            ]),
            &root.join("kube-apiserver.log"),
        );
        let mut server = Self {
            apiserver,
            etcd,
            dir,
            startup: Duration::ZERO,
        };
        server.write_kubeconfig(secure);
        server.wait_ready(began);
        server.startup = began.elapsed();
        server
    }

    /// The kubeconfig of a client in `system:masters`.
    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("kubeconfig")
    }

    /// A `kubectl` bound to this server (and to a discovery cache of its own, so nothing is
    /// written under `~/.kube`).
    pub fn kubectl(&self) -> Command {
        let mut cmd = Command::new("kubectl");
        cmd.arg(format!("--kubeconfig={}", self.kubeconfig().display()))
            .arg(format!(
                "--cache-dir={}",
                self.dir.path().join("kube-cache").display()
            ))
            .env_remove("KUBECONFIG");
        cmd
    }

    /// Runs `kubectl` with `args` against this server.
    pub fn run_kubectl(&self, args: &[&str]) -> Output {
        self.kubectl().args(args).output().expect("run kubectl")
    }

    /// A folder for the test's own files, removed with the server.
    pub fn scratch(&self) -> PathBuf {
        let path = self.dir.path().join("scratch");
        std::fs::create_dir_all(&path).expect("mkdir scratch");
        path
    }

    /// The process ids of etcd and the API server.
    pub fn pids(&self) -> [u32; 2] {
        [self.etcd.id(), self.apiserver.id()]
    }

    /// The temporary folder everything lives in.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a kubeconfig at `path` with one context per `(name, user)` (the user is
    /// [`User::Admin`] or [`User::Viewer`]), all reaching this server unless `port` names
    /// another (a closed port: an unreachable cluster), and `current` as the current context.
    pub fn write_kubeconfig_with(
        &self,
        path: &Path,
        contexts: &[(&str, User)],
        current: &str,
        port: Option<u16>,
    ) {
        let pki = self.dir.path().join("pki");
        let server = match port {
            Some(port) => format!("https://127.0.0.1:{port}"),
            None => self.server_url(),
        };
        let mut text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: aiml-test\n  cluster:\n    server: {server}\n    certificate-authority: {}\nusers:\n",
            pki.join("ca.crt").display()
        );
        for user in ["admin", "viewer"] {
            text.push_str(&format!(
                "- name: {user}\n  user:\n    client-certificate: {}\n    client-key: {}\n",
                pki.join(format!("{user}.crt")).display(),
                pki.join(format!("{user}.key")).display()
            ));
        }
        text.push_str("contexts:\n");
        for (name, user) in contexts {
            let user = match user {
                User::Admin => "admin",
                User::Viewer => "viewer",
            };
            text.push_str(&format!(
                "- name: \"{name}\"\n  context:\n    cluster: aiml-test\n    user: {user}\n"
            ));
        }
        text.push_str(&format!("current-context: \"{current}\"\n"));
        std::fs::write(path, text).expect("write kubeconfig");
    }

    /// `https://127.0.0.1:PORT`.
    pub fn server_url(&self) -> String {
        let text = std::fs::read_to_string(self.kubeconfig()).expect("kubeconfig");
        text.lines()
            .find_map(|l| l.trim().strip_prefix("server: "))
            .expect("server line")
            .to_string()
    }

    fn write_kubeconfig(&self, port: u16) {
        let pki = self.dir.path().join("pki");
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: aiml-test\n  cluster:\n    \
             server: https://127.0.0.1:{port}\n    certificate-authority: {ca}\nusers:\n\
             - name: aiml-test-admin\n  user:\n    client-certificate: {crt}\n    \
             client-key: {key}\ncontexts:\n- name: aiml-test\n  context:\n    cluster: aiml-test\n\
             \x20   user: aiml-test-admin\ncurrent-context: aiml-test\n",
            ca = pki.join("ca.crt").display(),
            crt = pki.join("admin.crt").display(),
            key = pki.join("admin.key").display(),
        );
        std::fs::write(self.kubeconfig(), text).expect("write kubeconfig");
    }

    fn wait_ready(&mut self, began: Instant) {
        loop {
            let exited = [
                ("etcd", &mut self.etcd),
                ("kube-apiserver", &mut self.apiserver),
            ]
            .into_iter()
            .find_map(|(name, child)| {
                let status = child.try_wait().expect("poll child")?;
                Some(format!("{name} exited ({status})"))
            });
            if let Some(exited) = exited {
                panic!("{exited} before the server was ready\n{}", self.logs());
            }
            let out = self.run_kubectl(&["--request-timeout=2s", "get", "--raw=/readyz"]);
            if out.status.success() && out.stdout == b"ok" {
                return;
            }
            if began.elapsed() > STARTUP_LIMIT {
                panic!(
                    "kube-apiserver not ready after {:?}; last /readyz: {}{}\n{}",
                    STARTUP_LIMIT,
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr),
                    self.logs()
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Installs the CustomResourceDefinition of every vendored custom resource kind
    /// ([`crds`]) for real and waits until the server serves them; returns how many.
    pub fn install_crds(&self) -> usize {
        self.install_crds_of(|_| true)
    }

    /// Installs the vendored CustomResourceDefinitions whose API group `wanted` accepts, as
    /// [`ApiServer::install_crds`] does; returns how many.
    pub fn install_crds_of(&self, wanted: impl Fn(&str) -> bool) -> usize {
        let crds: Vec<Value> = crds()
            .into_iter()
            .filter(|crd| crd["spec"]["group"].as_str().is_some_and(&wanted))
            .collect();
        let file = self.scratch().join("crds.json");
        let list = json!({"apiVersion": "v1", "kind": "List", "items": crds});
        std::fs::write(&file, serde_json::to_vec(&list).expect("json")).expect("write crds");
        let out = self.run_kubectl(&["apply", "--server-side", "-f", &file.display().to_string()]);
        assert!(out.status.success(), "CRDs refused:\n{}", output_text(&out));
        let out = self.run_kubectl(&[
            "wait",
            "--for=condition=Established",
            "crd",
            "--all",
            "--timeout=120s",
        ]);
        assert!(
            out.status.success(),
            "CRDs not established:\n{}",
            output_text(&out)
        );
        crds.len()
    }

    /// The last lines of both logs, for a failure message.
    pub fn logs(&self) -> String {
        ["etcd.log", "kube-apiserver.log"]
            .iter()
            .map(|f| {
                format!(
                    "--- last lines of {f} ---\n{}",
                    tail(&self.dir.path().join(f), 40)
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        // Only the two children this value started; the server first, so it does not log a
        // storm of etcd errors while going down.
        for child in [&mut self.apiserver, &mut self.etcd] {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn spawn_logged(cmd: &mut Command, log: &Path) -> Child {
    let file = std::fs::File::create(log).expect("create log");
    cmd.stdin(Stdio::null())
        .stdout(file.try_clone().expect("dup log"))
        .stderr(file)
        .spawn()
        .unwrap_or_else(|e| panic!("start {:?}: {e}", cmd.get_program()))
}

/// Three ports the kernel just handed out on 127.0.0.1 (held together so they differ).
fn free_ports() -> [u16; 3] {
    let listeners: Vec<TcpListener> = (0..3)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind a free port"))
        .collect();
    let port = |i: usize| listeners[i].local_addr().expect("local addr").port();
    [port(0), port(1), port(2)]
}

/// The last `lines` lines of a file (the logs can be long).
fn tail(path: &Path, lines: usize) -> String {
    let Ok(mut file) = std::fs::File::open(path) else {
        return "(no log)".to_owned();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(16 * 1024)));
    let mut text = String::new();
    let _ = file.read_to_string(&mut text);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// A throwaway CA; a serving certificate for 127.0.0.1; a client certificate in
/// `system:masters`; a service-account signing key. EC keys: generating them is instant.
fn certificates(root: &Path) {
    let pki = root.join("pki");
    std::fs::create_dir_all(&pki).expect("mkdir pki");
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    openssl(
        &pki,
        &[
            &["req", "-x509"],
            &ec[..],
            &[
                "-keyout",
                "ca.key",
                "-out",
                "ca.crt",
                "-days",
                "2",
                "-subj",
                "/CN=aiml-test-ca",
            ],
        ]
        .concat(),
    );
    std::fs::write(
        pki.join("server.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\n\
        extendedKeyUsage=serverAuth\n",
    )
    .expect("write ext");
    std::fs::write(pki.join("admin.ext"), "extendedKeyUsage=clientAuth\n").expect("write ext");
    std::fs::write(pki.join("viewer.ext"), "extendedKeyUsage=clientAuth\n").expect("write ext");
    for (name, subject) in [
        ("server", "/CN=kube-apiserver"),
        ("admin", "/O=system:masters/CN=aiml-test-admin"),
        // A user no RBAC rule names: every request it makes is forbidden until a test grants it.
        ("viewer", "/CN=aiml-test-viewer"),
    ] {
        let (key, csr, crt, ext) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.crt"),
            format!("{name}.ext"),
        );
        openssl(
            &pki,
            &[
                &["req", "-new"],
                &ec[..],
                &["-keyout", &key, "-out", &csr, "-subj", subject],
            ]
            .concat(),
        );
        openssl(
            &pki,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "2",
                "-extfile",
                &ext,
                "-out",
                &crt,
            ],
        );
    }
    openssl(
        &pki,
        &[
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-out",
            "sa.key",
        ],
    );
    openssl(
        &pki,
        &["pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub"],
    );
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run openssl");
    assert!(
        out.status.success(),
        "openssl {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Standard output and error of a finished command, for a message.
pub fn output_text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The CustomResourceDefinitions of every vendored custom resource kind (see the crate doc).
pub fn crds() -> Vec<Value> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/crds");
    let index: Map<String, Value> =
        serde_json::from_slice(&std::fs::read(dir.join("index.json")).expect("index"))
            .expect("index json");
    let mut kinds: BTreeMap<(String, String), Vec<&Value>> = BTreeMap::new();
    for entry in index.values() {
        let s = |k: &str| entry[k].as_str().expect("index field").to_owned();
        kinds
            .entry((s("group"), s("kind")))
            .or_default()
            .push(entry);
    }
    kinds
        .into_iter()
        .map(|((group, kind), entries)| {
            let plural = plural(&kind.to_lowercase());
            let storage = entries.iter().filter(|e| e["storage"] == true).count();
            assert_eq!(storage, 1, "{group}/{kind}: {storage} storage versions in the index");
            let versions: Vec<Value> = entries
                .iter()
                .map(|e| {
                    let file = e["file"].as_str().expect("file");
                    let schema: Value =
                        serde_json::from_slice(&std::fs::read(dir.join(file)).expect("schema"))
                            .expect("schema json");
                    let mut schema = openapi(schema);
                    schema["type"] = json!("object");
                    let mut version = json!({
                        "name": e["version"],
                        "served": true,
                        "storage": e["storage"],
                        "schema": {"openAPIV3Schema": schema},
                    });
                    if schema["properties"].get("status").is_some() {
                        version["subresources"] = json!({"status": {}});
                    }
                    if e["deprecated"] == true {
                        version["deprecated"] = json!(true);
                        if e["deprecationWarning"].is_string() {
                            version["deprecationWarning"] = e["deprecationWarning"].clone();
                        }
                    }
                    version
                })
                .collect();
            let mut metadata = json!({"name": format!("{plural}.{group}")});
            // The server refuses kinds in Kubernetes' own groups (gateway.networking.k8s.io)
            // without this annotation; "unapproved" is the documented way to say there is no
            // API review behind this copy.
            if (group.ends_with(".k8s.io") && !group.ends_with(".x-k8s.io"))
                || group.ends_with(".kubernetes.io")
            {
                metadata["annotations"] = json!({
                    "api-approved.kubernetes.io": "unapproved, built by tests/apiserver.rs from schemas/crds"
                });
            }
            json!({
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": metadata,
                "spec": {
                    "group": group,
                    "names": {"kind": kind, "listKind": format!("{kind}List"), "plural": plural, "singular": kind.to_lowercase()},
                    "scope": entries[0]["scope"],
                    "versions": versions,
                },
            })
        })
        .collect()
}

/// The plural Kubernetes tooling derives from a lower-case kind.
fn plural(kind: &str) -> String {
    match kind.strip_suffix('y') {
        Some(stem) if !stem.ends_with(['a', 'e', 'i', 'o', 'u']) => format!("{stem}ies"),
        _ if kind.ends_with('s') => format!("{kind}es"),
        _ => format!("{kind}s"),
    }
}

/// A vendored draft-07 schema back as a CRD's OpenAPI v3 schema: only the keywords that hold
/// schemas are walked (a `default` or `enum` value is data, even when it has a `type` key).
fn openapi(schema: Value) -> Value {
    let Value::Object(mut map) = schema else {
        return schema;
    };
    map.remove("$schema");
    // Added when vendoring to make unknown fields an error; CRDs forbid it (pruning and
    // strict field validation do that job on the server).
    if map.get("additionalProperties") == Some(&Value::Bool(false)) {
        map.remove("additionalProperties");
    }
    if let Some(Value::Array(types)) = map.get("type") {
        let real: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
        assert_eq!(real.len(), 1, "a type list other than [T, null]: {types:?}");
        let real = real[0].clone();
        if types.len() > 1 {
            map.insert("nullable".to_owned(), json!(true));
        }
        map.insert("type".to_owned(), real);
    }
    for (key, value) in &mut map {
        match key.as_str() {
            "properties" | "patternProperties" => {
                if let Value::Object(props) = value {
                    for prop in props.values_mut() {
                        *prop = openapi(prop.take());
                    }
                }
            }
            "items" | "additionalProperties" | "not" => *value = openapi(value.take()),
            "anyOf" | "oneOf" | "allOf" => {
                if let Value::Array(list) = value {
                    for item in list.iter_mut() {
                        *item = openapi(item.take());
                    }
                }
            }
            _ => {}
        }
    }
    Value::Object(map)
}
