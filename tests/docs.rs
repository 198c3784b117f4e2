//! What the README and the docs point at exists for whoever clones the repository, and the
//! install commands the README shows work in a fresh home folder.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::cargo::cargo_bin;

/// The Markdown a cloner reads: README, ARCHITECTURE, docs/ and the examples' READMEs.
fn documents() -> Vec<PathBuf> {
    let mut files = vec![PathBuf::from("README.md"), PathBuf::from("ARCHITECTURE.md")];
    for top in ["docs", "examples"] {
        for entry in walkdir::WalkDir::new(top).sort_by_file_name() {
            let entry = entry.expect("walk");
            let markdown = entry.path().extension().is_some_and(|e| e == "md");
            let in_examples = top == "docs" || entry.file_name() == "README.md";
            if entry.file_type().is_file() && markdown && in_examples {
                files.push(entry.into_path());
            }
        }
    }
    files
}

/// The targets of Markdown links `[text](target)` in `text`.
fn link_targets(text: &str) -> Vec<&str> {
    text.match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &text[at + 2..];
            rest.find(')').map(|end| &rest[..end])
        })
        .collect()
}

/// Code spans (`` `x` ``) without spaces, on one line.
fn code_spans(text: &str) -> Vec<&str> {
    text.lines()
        .flat_map(|line| line.split('`').skip(1).step_by(2))
        .filter(|span| !span.is_empty() && !span.contains(char::is_whitespace))
        .collect()
}

/// Paths that documents name on purpose although a clone does not hold them: each is made by
/// the user or by a run.
const MADE_LATER: &[&str] = &[
    "fuzz/artifacts/",                    // where cargo-fuzz puts a crash's input
    "schemas/example.com/widget_v1.json", // a `--schemas` folder of the user's own
    ".github/workflows/",                 // where to copy the CI example
];

/// Top-level folders of the repository: a code span starting with one is a path in it.
const TOPS: &[&str] = &[
    "scripts/",
    "docs/",
    "examples/",
    "data/",
    "src/",
    "tests/",
    "schemas/",
    "fuzz/",
    ".github/",
];

#[test]
fn documents_point_only_at_files_a_clone_has() {
    let mut missing = Vec::new();
    for document in documents() {
        let text = std::fs::read_to_string(&document).expect("read");
        let shown = document.display();
        for target in link_targets(&text) {
            let target = target.split('#').next().unwrap_or_default();
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let path = document.parent().unwrap_or(Path::new("")).join(target);
            if !path.exists() {
                missing.push(format!("{shown}: link to `{target}`"));
            }
        }
        for span in code_spans(&text) {
            let placeholder = span.contains(['<', '>', '*', '{', '}', '…', '$'])
                || span.contains("NAME")
                || span.contains("...");
            if !TOPS.iter().any(|top| span.starts_with(top))
                || placeholder
                || MADE_LATER.contains(&span)
            {
                continue;
            }
            // `src/render.rs:120` names a line of a file.
            let path = span.split(':').next().unwrap_or_default();
            if !Path::new(path).exists() {
                missing.push(format!("{shown}: `{span}`"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "paths the documents name that a clone does not have:\n{}",
        missing.join("\n")
    );
}

/// Material outside the repository (a sibling `shared/` folder of the maintainers' machines)
/// is never named by what a cloner reads or runs.
#[test]
fn nothing_points_outside_the_repository() {
    let mut files = documents();
    for entry in walkdir::WalkDir::new("scripts").sort_by_file_name() {
        let entry = entry.expect("walk scripts");
        if entry.file_type().is_file() {
            files.push(entry.into_path());
        }
    }
    files.push(PathBuf::from("data/prices.tsv"));
    let mut found = Vec::new();
    for file in files {
        // Its owner replaces the sibling folder it reads (issue 18).
        if file.ends_with("derive-immutable-fields") {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("read");
        for (number, line) in text.lines().enumerate() {
            if ["../shared", "`shared/", " shared/", "/work/"]
                .iter()
                .any(|outside| line.contains(outside))
            {
                found.push(format!(
                    "{}:{}: {}",
                    file.display(),
                    number + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "references to files outside the repository:\n{}",
        found.join("\n")
    );
}

/// The README's shell lines that install the completion scripts and the man page, as a user
/// copies them (trailing comments dropped, the final `man` call left out).
fn install_commands() -> Vec<String> {
    let readme = std::fs::read_to_string("README.md").expect("README");
    let commands: Vec<String> = readme
        .lines()
        .filter(|line| {
            line.contains("completion zsh >")
                || line.contains("completion fish >")
                || line.contains("completion kubectl >")
                || line.contains("aiml man >")
        })
        .map(|line| {
            let line = line.trim().trim_start_matches("**Man page**: `");
            let line = line.split(" # ").next().unwrap_or(line);
            let line = line.split(" && man ").next().unwrap_or(line);
            line.trim_end_matches('`').trim().to_string()
        })
        .collect();
    assert_eq!(
        commands.len(),
        4,
        "the README's install lines (zsh, fish, kubectl, man) moved: {commands:?}"
    );
    commands
}

#[test]
fn readme_install_commands_work_in_a_fresh_home() {
    let home = tempfile::tempdir().expect("home");
    // `kubectl aiml` as kubectl runs the plugin: a stand-in that calls the binary.
    let bin = tempfile::tempdir().expect("bin");
    let kubectl = bin.path().join("kubectl");
    support::write_script(
        &kubectl,
        &format!(
            "#!/bin/sh\n[ \"$1\" = aiml ] && shift\nexec '{}' \"$@\"\n",
            cargo_bin("kubectl-aiml").display()
        ),
    );
    let binary = cargo_bin("kubectl-aiml");
    let path = std::env::join_paths(
        [bin.path(), binary.parent().expect("bin dir")]
            .into_iter()
            .map(Path::to_path_buf)
            .chain(std::env::split_paths(
                &std::env::var_os("PATH").unwrap_or_default(),
            )),
    )
    .expect("PATH");
    for command in install_commands() {
        // zsh expands `~` and `${fpath[1]}` as a user's zsh does; the others are POSIX.
        let shell = if command.contains("completion zsh") {
            "zsh"
        } else {
            "sh"
        };
        support::succeed(
            Command::new(support::require(shell))
                .args(if shell == "zsh" {
                    vec!["-f", "-c"]
                } else {
                    vec!["-c"]
                })
                .arg(&command)
                .env("HOME", home.path())
                .env("PATH", &path)
                .current_dir(home.path()),
            &format!("`{command}` fails in a fresh home folder"),
        );
    }
    for installed in [
        ".zfunc/_kubectl-aiml",
        ".config/fish/completions/kubectl-aiml.fish",
        ".local/bin/kubectl_complete-aiml",
        ".local/share/man/man1/kubectl-aiml.1",
    ] {
        let file = home.path().join(installed);
        assert!(
            std::fs::metadata(&file).is_ok_and(|m| m.len() > 0),
            "{installed} was not written"
        );
    }
}
