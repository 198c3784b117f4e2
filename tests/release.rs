//! The release: the workflow and the CI examples pass actionlint; the four release targets are
//! the same in every file that names them; an archive packed by `scripts/package-release` is
//! reproducible, holds what krew checks for, passes krew's own validator from the manifest
//! `scripts/krew-manifest` fills, and installs with `kubectl krew install` as `kubectl aiml`.
//!
//! The archive here holds this test build's binary (stripped), under every target's name: the
//! validator installs each platform without running it. `scripts/release-dry-run` does the same
//! with the four real release builds. The pinned tools come from `scripts/release-tools`, which
//! `scripts/install-test-deps` runs.

mod support;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use support::{require, succeed};

const TARGETS: [&str; 4] = [
    "x86_64-unknown-linux-musl",
    "aarch64-unknown-linux-musl",
    "x86_64-apple-darwin",
    "aarch64-apple-darwin",
];

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(relative: &str) -> String {
    fs_err::read_to_string(repo().join(relative)).expect("a file of this repository")
}

/// The folder of krew's validator, `kubectl-krew` and actionlint (installed if missing).
fn release_tools() -> PathBuf {
    require("go");
    let output = succeed(
        &mut Command::new(repo().join("scripts/release-tools")),
        "scripts/release-tools installs krew and actionlint",
    );
    PathBuf::from(String::from_utf8(output.stdout).expect("a path").trim())
}

fn path_with(folder: &Path) -> std::ffi::OsString {
    let mut paths = vec![folder.to_path_buf()];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(paths).expect("PATH")
}

fn actionlint(tools: &Path, files: &[PathBuf]) -> std::process::Output {
    let shellcheck = require("shellcheck");
    Command::new(tools.join("actionlint"))
        .arg(format!("-shellcheck={}", shellcheck.display()))
        .args(files)
        .output()
        .expect("actionlint runs")
}

#[test]
fn actionlint_passes_the_release_workflow_and_the_ci_example() {
    let tools = release_tools();
    let files = [
        repo().join(".github/workflows/release.yml"),
        repo().join("examples/ci/github-actions.yaml"),
    ];
    let output = actionlint(&tools, &files);
    assert!(
        output.status.success(),
        "actionlint:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );

    // The same linter finds a shell mistake and an unknown expression in a workflow.
    let broken = tempfile::tempdir().expect("temporary folder");
    let workflow = broken.path().join("broken.yml");
    fs_err::write(
        &workflow,
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    steps:\n      - run: echo $1 ${{ github.nope }}\n",
    )
    .expect("write");
    let output = actionlint(&tools, &[workflow]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        !output.status.success(),
        "actionlint accepted a broken workflow"
    );
    assert!(text.contains("nope"), "{text}");
    assert!(text.contains("shellcheck"), "{text}");
}

/// Every archive name of the form `kubectl-aiml-<target>.tar.gz` in `text`.
fn archive_targets(text: &str) -> BTreeSet<String> {
    text.split("kubectl-aiml-")
        .skip(1)
        .filter_map(|rest| rest.split_once(".tar.gz").map(|(target, _)| target))
        .filter(|target| !target.contains(['{', ' ', '/', '"']))
        .map(str::to_owned)
        .collect()
}

/// The targets a shell script's `case` accepts: the line listing them with ` | `.
fn case_targets(script: &str) -> BTreeSet<String> {
    let line = script
        .lines()
        .find(|line| line.contains("-apple-darwin |") || line.contains("-linux-musl |"))
        .expect("a case line of targets");
    line.split(')')
        .next()
        .expect("a case pattern")
        .split('|')
        .map(|t| t.trim().to_owned())
        .collect()
}

#[test]
fn the_release_targets_agree_everywhere() {
    let expected: BTreeSet<String> = TARGETS.iter().map(|t| (*t).to_owned()).collect();
    assert_eq!(archive_targets(&read(".krew.yaml")), expected, ".krew.yaml");
    assert_eq!(case_targets(&read("scripts/package-release")), expected);
    assert_eq!(case_targets(&read("scripts/release-build")), expected);
    let workflow = read(".github/workflows/release.yml");
    let matrix: BTreeSet<String> = workflow
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- target: "))
        .map(str::to_owned)
        .collect();
    assert_eq!(matrix, expected, "release.yml's build matrix");
    let dry_run = read("scripts/release-dry-run");
    let all: BTreeSet<String> = dry_run
        .lines()
        .find_map(|line| line.strip_prefix("ALL_TARGETS=\""))
        .expect("ALL_TARGETS")
        .trim_end_matches('"')
        .split(' ')
        .map(str::to_owned)
        .collect();
    assert_eq!(all, expected, "scripts/release-dry-run");

    // cargo-binstall: every host a user may run it on resolves to one of the archives.
    let cargo = read("Cargo.toml");
    let metadata = &cargo[cargo
        .find("[package.metadata.binstall]")
        .expect("binstall metadata")..];
    let pkg_url = |section: &str| -> Option<String> {
        let start = metadata.find(section)? + section.len();
        let body = &metadata[start..];
        let body = &body[..body[1..].find("\n[").map_or(body.len(), |i| i + 1)];
        body.lines()
            .find_map(|line| line.strip_prefix("pkg-url = \""))
            .map(|url| url.trim_end_matches('"').to_owned())
    };
    let default = pkg_url("[package.metadata.binstall]").expect("a pkg-url");
    for host in [
        "x86_64-unknown-linux-gnu",
        "aarch64-unknown-linux-gnu",
        "x86_64-unknown-linux-musl",
        "aarch64-unknown-linux-musl",
        "x86_64-apple-darwin",
        "aarch64-apple-darwin",
    ] {
        let url = pkg_url(&format!("[package.metadata.binstall.overrides.{host}]"))
            .unwrap_or_else(|| default.clone())
            .replace("{ target }", host);
        let targets = archive_targets(&url);
        assert!(
            targets.len() == 1 && expected.contains(targets.iter().next().expect("one")),
            "binstall on {host} downloads {url}, which the release does not publish"
        );
    }

    // The image's kustomize is the one the tests pin.
    let pinned = |text: &str, key: &str| -> String {
        text.lines()
            .find_map(|line| line.strip_prefix(key))
            .unwrap_or_else(|| panic!("{key}"))
            .to_owned()
    };
    assert_eq!(
        pinned(&read("Dockerfile"), "ARG KUSTOMIZE_VERSION="),
        pinned(&read("scripts/install-test-deps"), "KUSTOMIZE_VERSION=")
    );
}

/// Serves the files of `folder` over HTTP on a free local port until the test ends, as the
/// release page would: krew's validator downloads each platform's archive from its `uri`.
fn serve(folder: PathBuf) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a local port");
    let address = listener.local_addr().expect("address");
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(&stream);
            let mut request = String::new();
            if reader.read_line(&mut request).is_err() {
                continue;
            }
            let name = request
                .split(' ')
                .nth(1)
                .unwrap_or("/")
                .trim_start_matches('/');
            let mut stream = &stream;
            let response = match fs_err::read(folder.join(name)) {
                Ok(body) if !name.contains('/') && !name.is_empty() => {
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    stream
                        .write_all(head.as_bytes())
                        .and_then(|()| stream.write_all(&body))
                }
                _ => stream.write_all(
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                ),
            };
            drop(response);
        }
    });
    format!("http://{address}/")
}

fn fill_manifest(dist: &Path, tag: &str, base_url: Option<&str>) -> String {
    let mut command = Command::new("go");
    command
        .current_dir(repo().join("scripts/krew-manifest"))
        .args(["run", ".", "-template"])
        .arg(repo().join(".krew.yaml"))
        .args(["-tag", tag, "-archives"])
        .arg(dist);
    if let Some(url) = base_url {
        command.args(["-base-url", url]);
    }
    let output = succeed(&mut command, "scripts/krew-manifest fills .krew.yaml");
    String::from_utf8(output.stdout).expect("UTF-8")
}

fn sha256_of(file: &Path) -> String {
    let output = succeed(Command::new("sha256sum").arg(file), "sha256sum");
    String::from_utf8_lossy(&output.stdout)
        .split(' ')
        .next()
        .expect("a sum")
        .to_owned()
}

#[test]
fn a_packed_archive_passes_krew_validation_and_installs_as_kubectl_aiml() {
    let tools = release_tools();
    require("kubectl");
    let work = tempfile::tempdir().expect("temporary folder");
    let binary = work.path().join("kubectl-aiml");
    fs_err::copy(env!("CARGO_BIN_EXE_kubectl-aiml"), &binary).expect("copy the binary");
    // Debug information is most of a test build: krew's checks do not need it.
    succeed(Command::new(require("strip")).arg(&binary), "strip");

    let dist = work.path().join("dist");
    let pack = |out: &Path| {
        succeed(
            Command::new(repo().join("scripts/package-release"))
                .args([TARGETS[0]])
                .arg(&binary)
                .arg(out)
                .env("SOURCE_DATE_EPOCH", "1700000000"),
            "scripts/package-release",
        );
        out.join(format!("kubectl-aiml-{}.tar.gz", TARGETS[0]))
    };
    let archive = pack(&dist);
    let again = pack(&work.path().join("again"));
    assert_eq!(
        sha256_of(&archive),
        sha256_of(&again),
        "the same binary packs to the same bytes"
    );
    let sums =
        fs_err::read_to_string(dist.join(format!("kubectl-aiml-{}.tar.gz.sha256", TARGETS[0])))
            .expect("the .sha256 file");
    assert_eq!(
        sums,
        format!(
            "{}  kubectl-aiml-{}.tar.gz\n",
            sha256_of(&archive),
            TARGETS[0]
        )
    );
    let listing = succeed(Command::new("tar").arg("-tvzf").arg(&archive), "tar -t");
    let listing = String::from_utf8_lossy(&listing.stdout);
    let entries: Vec<(&str, &str, &str)> = listing
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (fields[0], fields[1], *fields.last().expect("a name"))
        })
        .collect();
    assert_eq!(
        entries,
        [
            ("-rwxr-xr-x", "0/0", "kubectl-aiml"),
            ("-rw-r--r--", "0/0", "LICENSE"),
            ("-rw-r--r--", "0/0", "README.md"),
        ],
        "{listing}"
    );
    for target in &TARGETS[1..] {
        fs_err::copy(&archive, dist.join(format!("kubectl-aiml-{target}.tar.gz"))).expect("copy");
    }

    // krew's validator installs every platform from the filled manifest, served locally.
    let base_url = serve(dist.clone());
    let local = work.path().join("local");
    fs_err::create_dir(&local).expect("folder");
    fs_err::write(
        local.join("aiml.yaml"),
        fill_manifest(&dist, "v0.1.0", Some(&base_url)),
    )
    .expect("write");
    let output = succeed(
        Command::new(tools.join("validate-krew-manifest"))
            .arg("-manifest")
            .arg(local.join("aiml.yaml"))
            .env("PATH", path_with(&tools)),
        "krew's validator",
    );
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(log.contains("all 4 spec.platforms installed fine"), "{log}");

    // The published form names the release's download URLs and the same checksums.
    let published = fill_manifest(&dist, "v0.1.0", None);
    assert!(published.starts_with("apiVersion: krew.googlecontainertools.github.com/v1alpha2\n"));
    assert!(published.contains("  version: v0.1.0\n"), "{published}");
    for target in TARGETS {
        assert!(
            published.contains(&format!(
                "uri: https://github.com/kubectl-aiml/kubectl-aiml/releases/download/v0.1.0/kubectl-aiml-{target}.tar.gz\n    sha256: {}\n",
                sha256_of(&archive)
            )),
            "{published}"
        );
    }
    let published_file = work.path().join("aiml.yaml");
    fs_err::write(&published_file, &published).expect("write");
    succeed(
        Command::new(tools.join("validate-krew-manifest"))
            .arg("-manifest")
            .arg(&published_file)
            .arg("-skip-install"),
        "krew's validator on the published manifest",
    );

    // `kubectl krew install` checks the archive's checksum, then kubectl finds the plugin.
    let krew_root = work.path().join("krew-root");
    let install = |archive: &Path| {
        Command::new("kubectl")
            .args(["krew", "install", "--manifest"])
            .arg(&published_file)
            .arg("--archive")
            .arg(archive)
            .env("KREW_ROOT", &krew_root)
            .env("KREW_OS", "linux")
            .env("KREW_ARCH", "amd64")
            .env("PATH", path_with(&tools))
            .output()
            .expect("kubectl krew runs")
    };
    let tampered = work.path().join("tampered.tar.gz");
    let mut bytes = fs_err::read(&archive).expect("read");
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    fs_err::write(&tampered, bytes).expect("write");
    let refused = install(&tampered);
    assert!(
        !refused.status.success(),
        "krew installed an archive whose checksum differs"
    );
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("checksum does not match"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let installed = install(&archive);
    assert!(
        installed.status.success(),
        "kubectl krew install: {}",
        String::from_utf8_lossy(&installed.stderr)
    );
    let output = succeed(
        Command::new("kubectl")
            .args(["aiml", "--version"])
            .env("PATH", path_with(&krew_root.join("bin"))),
        "kubectl aiml, installed by krew",
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!("kubectl-aiml {}\n", env!("CARGO_PKG_VERSION"))
    );
}
