//! Editor and shell support: `schema`, `explain`, `completion` (and the hidden `__complete`
//! the scripts call) and `man`, run as the binary against temporary repositories.

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::cargo::cargo_bin;
use serde_json::{Map, Value};

mod support;

use support::{EXAMPLE, TestRepo};

/// A YAML node as JSON, read by the tool's own YAML reader (what an editor sees as JSON).
fn to_json(node: &aiml::yaml::Node) -> Value {
    use aiml::yaml::Value as Y;
    match &node.value {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(*b),
        Y::Int(i) => Value::from(*i),
        Y::Float(f) => Value::from(*f),
        Y::String(s) => Value::String(s.clone()),
        Y::Seq(items) => Value::Array(items.iter().map(to_json).collect()),
        Y::Map(entries) => Value::Object(
            entries
                .iter()
                .map(|(key, value)| (key.text.clone(), to_json(value)))
                .collect::<Map<_, _>>(),
        ),
    }
}

/// Every blueprint document this repository ships or tests with: `blueprints/`, the
/// examples and the compile fixtures, as (file, kind, JSON).
fn shipped_blueprints() -> Vec<(String, String, Value)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<PathBuf> = Vec::new();
    for top in ["blueprints", "examples", "tests/fixtures/compile"] {
        for entry in walkdir::WalkDir::new(root.join(top)).sort_by_file_name() {
            let entry = entry.expect("walk");
            let path = entry.path();
            let in_blueprints =
                top == "blueprints" || path.components().any(|c| c.as_os_str() == "blueprints");
            let yaml = path
                .extension()
                .is_some_and(|ext| ext == "yaml" || ext == "yml");
            if entry.file_type().is_file() && in_blueprints && yaml {
                files.push(path.to_path_buf());
            }
        }
    }
    let mut documents = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read");
        let display = file.strip_prefix(root).unwrap().display().to_string();
        for node in aiml::yaml::parse_documents(&text).expect("yaml") {
            let json = to_json(&node);
            if json["apiVersion"] == "aiml.dev/v1alpha1" {
                let kind = json["kind"].as_str().expect("kind").to_string();
                documents.push((display.clone(), kind, json));
            }
        }
    }
    documents
}

fn kinds() -> Vec<String> {
    aiml::kinds::Registry::builtin()
        .names()
        .map(str::to_string)
        .collect()
}

fn schema_of(repo: &TestRepo, kind: &str) -> Value {
    let run = repo.aiml(&["schema", kind]);
    run.expect_code(0);
    serde_json::from_str(&run.stdout).expect("schema is JSON")
}

#[test]
fn schema_of_every_kind_is_valid_and_accepts_every_shipped_blueprint() {
    let repo = TestRepo::new();
    let documents = shipped_blueprints();
    for kind in kinds() {
        let schema = schema_of(&repo, &kind);
        assert_eq!(
            schema["$schema"], "http://json-schema.org/draft-07/schema#",
            "{kind}: yaml-language-server validates draft-07"
        );
        assert!(
            jsonschema::meta::is_valid(&schema),
            "{kind}: not a valid schema"
        );
        let validator = jsonschema::validator_for(&schema).expect("compiles");
        let mine: Vec<_> = documents.iter().filter(|(_, k, _)| *k == kind).collect();
        assert!(!mine.is_empty(), "no shipped blueprint of {kind}");
        for (file, _, document) in mine {
            let errors: Vec<String> = validator
                .iter_errors(document)
                .map(|e| format!("{} at {}", e, e.instance_path()))
                .collect();
            assert!(errors.is_empty(), "{file} ({kind}): {errors:#?}");
        }
        // A blueprint of another kind is not one of this kind.
        let other = documents
            .iter()
            .find(|(_, k, _)| *k != kind)
            .expect("other");
        assert!(!validator.is_valid(&other.2), "{kind} accepts {}", other.0);
    }
}

#[test]
fn schema_rejects_unknown_fields_and_wrong_envelopes() {
    let repo = TestRepo::new();
    let schema = schema_of(&repo, "MultisliceTraining");
    let validator = jsonschema::validator_for(&schema).expect("compiles");
    let example = to_json(&aiml::yaml::parse_documents(EXAMPLE).unwrap()[0]);
    assert!(validator.is_valid(&example));

    let mut typo = example.clone();
    typo["spec"]["tpu"]["slice"] = Value::from(2);
    let errors: Vec<String> = validator
        .iter_errors(&typo)
        .map(|e| e.to_string())
        .collect();
    assert!(
        errors.iter().any(|e| e.contains("slice")),
        "unknown field `spec.tpu.slice` accepted: {errors:?}"
    );
    let mut top = example.clone();
    top["status"] = Value::from("x");
    assert!(!validator.is_valid(&top));
    let mut version = example.clone();
    version["apiVersion"] = Value::from("aiml.dev/v1");
    assert!(!validator.is_valid(&version));
    let mut name = example.clone();
    name["metadata"]["name"] = Value::from("Not_A_Label");
    assert!(!validator.is_valid(&name));
    let mut wrong_type = example;
    wrong_type["spec"]["tpu"]["slices"] = Value::from("two");
    assert!(!validator.is_valid(&wrong_type));
}

#[test]
fn tpu_types_are_offered_but_every_accepted_spelling_validates() {
    let repo = TestRepo::new();
    let schema = schema_of(&repo, "MultisliceTraining");
    let tpu_type = &schema["definitions"]["TpuSpec"]["properties"]["type"];
    let examples: Vec<&str> = tpu_type["examples"]
        .as_array()
        .expect("examples")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(examples.contains(&"v4-32") && examples.contains(&"v5litepod-16"));
    assert_eq!(examples.len(), aiml::catalog::tpu_slice_names().len());
    let validator = jsonschema::validator_for(&schema).expect("compiles");
    let mut example = to_json(&aiml::yaml::parse_documents(EXAMPLE).unwrap()[0]);
    // `<family>-<topology>` is accepted by the catalog, and so must be by the schema.
    assert!(aiml::catalog::tpu_slice("v4-2x2x4", None).is_ok());
    example["spec"]["tpu"]["type"] = Value::from("v4-2x2x4");
    assert!(validator.is_valid(&example));
}

#[test]
fn schema_of_an_unknown_kind_fails_with_a_suggestion() {
    let repo = TestRepo::new();
    let run = repo.aiml(&["schema", "MultisliceTrainin"]);
    run.expect_code(2);
    assert!(run.stdout.is_empty());
    run.stderr_has("did you mean `MultisliceTraining`?");
}

#[test]
fn blueprints_schema_still_prints_the_spec_schema() {
    let repo = TestRepo::new();
    let run = repo.aiml(&["blueprints", "--schema", "SaxServing"]);
    run.expect_code(0);
    let spec: Value = serde_json::from_str(&run.stdout).unwrap();
    assert!(spec["properties"]["tpu"].is_object());
    assert!(spec["properties"].get("apiVersion").is_none());
}

/// One snapshot test a path `explain` prints, `name: "path";`: the snapshot takes the test's
/// name, as a test written out would.
macro_rules! explain_tests {
    ($($name:ident: $path:literal;)*) => {$(
        #[test]
        fn $name() {
            let repo = TestRepo::new();
            let run = repo.aiml(&["explain", $path]);
            run.expect_code(0);
            insta::assert_snapshot!(run.stdout);
        }
    )*};
}

explain_tests! {
    explain_a_kind: "MultisliceTraining";
    explain_a_nested_field_walks_optional_structs: "MultisliceTraining.spec.tpu";
}

#[test]
fn explain_tpu_type_lists_the_catalogs_types() {
    let repo = TestRepo::new();
    let run = repo.aiml(&["explain", "SaxServing.spec.tpu.type"]);
    run.expect_code(0)
        .stdout_has("FIELD:    type <string> -required-")
        .stdout_has("DESCRIPTION:\n    Catalog name");
    for name in ["v4-32", "v5litepod-16", "v5p-64", "v6e-8"] {
        assert!(
            run.stdout.contains(&format!(" {name},")),
            "{name} missing:\n{}",
            run.stdout
        );
    }
    let json = repo.aiml(&["explain", "SaxServing.spec.tpu.type", "-o", "json"]);
    json.expect_code(0);
    let json: Value = serde_json::from_str(&json.stdout).unwrap();
    let values: Vec<String> = json["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(values, aiml::catalog::tpu_slice_names());
    assert_eq!(json["type"], "string");
    assert_eq!(json["required"], true);
    assert_eq!(json["valuesExhaustive"], false);
}

#[test]
fn explain_shows_defaults_and_enumerated_values() {
    let repo = TestRepo::new();
    let slices = repo.aiml(&["explain", "MultisliceTraining.spec.tpu.slices"]);
    slices.expect_code(0).stdout_has("DEFAULT:  1");
    let gpu = repo.aiml(&["explain", "TritonServing.spec.gpu.type"]);
    gpu.expect_code(0)
        .stdout_has("ALLOWED VALUES:\n")
        .stdout_has("nvidia-tesla-t4");
}

#[test]
fn explain_a_value_of_a_field() {
    let repo = TestRepo::new();
    let run = repo.aiml(&["explain", "SaxServing.spec.tpu.type", "v5litepod-16"]);
    run.expect_code(0);
    assert_eq!(
        run.stdout,
        "v5litepod-16: TPU v5e slice, topology 4x4, 4 hosts x 4 chips (16 chips), machine type ct5lp-hightpu-4t, node label cloud.google.com/gke-tpu-accelerator=tpu-v5-lite-podslice\n"
    );
    let unknown = repo.aiml(&["explain", "SaxServing.spec.tpu.type", "v5litepod-17"]);
    unknown
        .expect_code(2)
        .stderr_has("did you mean `v5litepod-16`?");
}

#[test]
fn explain_an_unknown_field_fails_with_a_suggestion() {
    let repo = TestRepo::new();
    let run = repo.aiml(&["explain", "MultisliceTraining.spec.tpu.tipe"]);
    run.expect_code(2);
    assert!(run.stdout.is_empty());
    insta::assert_snapshot!(run.stderr, @"error: field `spec.tpu.tipe` does not exist in MultisliceTraining; did you mean `type`? (fields of `spec.tpu`: capacity, idle, slices, topology, type)");
    let kind = repo.aiml(&["explain", "SaxServng.spec"]);
    kind.expect_code(2).stderr_has("did you mean `SaxServing`?");
}

/// A repository with blueprints of two kinds, one in a sub-folder.
fn completion_repo() -> TestRepo {
    let repo = TestRepo::new();
    let other = EXAMPLE.replace("name: multislice-v4-32-training", "name: team-b-training");
    repo.write("blueprints/team-b/train.yaml", &other);
    repo
}

fn complete(repo: &TestRepo, words: &[&str]) -> (Vec<String>, String) {
    let mut args = vec!["__complete", "--"];
    args.extend_from_slice(words);
    let run = repo.aiml(&args);
    run.expect_code(0);
    let mut lines: Vec<String> = run.stdout.lines().map(str::to_string).collect();
    let directive = lines.pop().expect("directive line");
    assert!(directive.starts_with(':'), "{}", run.stdout);
    let values = lines
        .iter()
        .map(|line| line.split('\t').next().unwrap().to_string())
        .collect();
    (values, directive)
}

#[test]
fn completion_lists_blueprint_names_and_tpu_types() {
    let repo = completion_repo();
    let (names, directive) = complete(&repo, &["render", ""]);
    assert_eq!(names, ["multislice-v4-32-training", "team-b-training"]);
    assert_eq!(directive, ":4", "no file names for blueprint names");
    // Names already given are not offered again; the prefix filters.
    let (names, _) = complete(&repo, &["render", "multislice-v4-32-training", ""]);
    assert_eq!(names, ["team-b-training"]);
    let (names, _) = complete(
        &repo,
        &["--repo", repo.path().to_str().unwrap(), "render", "te"],
    );
    assert_eq!(names, ["team-b-training"]);
    let (names, directive) = complete(&repo, &["graph", "te"]);
    assert_eq!(
        (names, directive.as_str()),
        (vec!["team-b-training".to_string()], ":4")
    );

    let (types, _) = complete(
        &repo,
        &["explain", "MultisliceTraining.spec.tpu.type", "v5lite"],
    );
    assert_eq!(
        types,
        [
            "v5litepod-1",
            "v5litepod-4",
            "v5litepod-8",
            "v5litepod-16",
            "v5litepod-32",
            "v5litepod-64",
            "v5litepod-128",
            "v5litepod-256"
        ]
    );
    let (all, _) = complete(&repo, &["explain", "SaxServing.spec.tpu.type", ""]);
    assert_eq!(all, aiml::catalog::tpu_slice_names());
}

#[test]
fn completion_of_commands_flags_and_explain_paths() {
    let repo = completion_repo();
    let (commands, _) = complete(&repo, &[""]);
    for command in [
        "render",
        "validate",
        "diff",
        "graph",
        "schema",
        "explain",
        "completion",
        "man",
    ] {
        assert!(
            commands.iter().any(|c| c == command),
            "{command}: {commands:?}"
        );
    }
    assert!(
        !commands.iter().any(|c| c.starts_with("__")),
        "hidden: {commands:?}"
    );
    let (flags, _) = complete(&repo, &["render", "--c"]);
    assert_eq!(flags, ["--check", "--commit"]);
    let (formats, _) = complete(&repo, &["-o", ""]);
    assert_eq!(
        formats,
        ["text", "json", "markdown", "mermaid", "dot", "yaml"]
    );
    let (formats, _) = complete(&repo, &["diff", "--output=ma"]);
    assert_eq!(formats, ["--output=markdown"]);
    let (kinds, directive) = complete(&repo, &["explain", "Sax"]);
    assert_eq!(
        (kinds.as_slice(), directive.as_str()),
        (&["SaxServing.".to_string()][..], ":6")
    );
    let (fields, _) = complete(&repo, &["explain", "SaxServing.spec.tp"]);
    assert_eq!(fields, ["SaxServing.spec.tpu."]);
    let (leaves, _) = complete(&repo, &["explain", "SaxServing.spec.tpu."]);
    assert_eq!(
        leaves,
        [
            "SaxServing.spec.tpu.capacity.",
            "SaxServing.spec.tpu.idle",
            "SaxServing.spec.tpu.slices",
            "SaxServing.spec.tpu.topology",
            "SaxServing.spec.tpu.type"
        ]
    );
    let (schema_kinds, _) = complete(&repo, &["schema", ""]);
    assert_eq!(schema_kinds, kinds_list());
    let (_, directive) = complete(&repo, &["validate", ""]);
    assert_eq!(directive, ":0", "validate takes file names");
    let (_, directive) = complete(&repo, &["--repo", ""]);
    assert_eq!(directive, ":16", "--repo takes a folder");
}

fn kinds_list() -> Vec<String> {
    kinds()
}

/// PATH with the binary's folder first, as after `cargo install`.
fn path_with_binary(extra: &Path) -> std::ffi::OsString {
    let binary = cargo_bin("kubectl-aiml");
    let mut paths = vec![extra.to_path_buf(), binary.parent().unwrap().to_path_buf()];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(paths).unwrap()
}

#[test]
fn completion_scripts_generate_and_parse() {
    let repo = TestRepo::new();
    for shell in ["bash", "zsh", "fish", "kubectl"] {
        let run = repo.aiml(&["completion", shell]);
        run.expect_code(0);
        assert!(run.stdout.contains("kubectl-aiml __complete --"), "{shell}");
        let file = repo.path().join(format!("completion.{shell}"));
        std::fs::write(&file, &run.stdout).unwrap();
        // Each script is parsed by its shell (`kubectl`'s plugin script is POSIX sh).
        let checker = match shell {
            "kubectl" => "sh",
            shell => shell,
        };
        let status = Command::new(support::require(checker))
            .arg("-n")
            .arg(&file)
            .status()
            .unwrap();
        assert!(status.success(), "{checker} -n rejects the {shell} script");
    }
    let bad = repo.aiml(&["completion", "tcsh"]);
    bad.expect_code(2);
}

/// Writes the `shell` completion script as `file` into the completion repository, runs `shell
/// args` there with the binary on PATH, and returns what it printed (it must succeed).
fn complete_in(shell: &str, file: &str, args: &[&str]) -> String {
    let repo = completion_repo();
    let script = repo.aiml(&["completion", shell]).stdout;
    std::fs::write(repo.path().join(file), script).unwrap();
    let output = support::succeed(
        Command::new(support::require(shell))
            .args(args)
            .current_dir(repo.path())
            .env("PATH", path_with_binary(repo.path())),
        &format!("{shell} completes through the hook"),
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn bash_completes_through_the_hook() {
    // What bash passes the function for `kubectl-aiml render <TAB>` and `--output=<TAB>`
    // (readline splits the `=` into a word of its own).
    let program = r#"
        source ./completion.bash
        t() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _kubectl_aiml; echo "${COMPREPLY[*]}"; }
        t kubectl-aiml render ""
        t kubectl-aiml --output = j
        t kubectl-aiml explain SaxServing.spec.tpu.type v6e-1
    "#;
    assert_eq!(
        complete_in("bash", "completion.bash", &["-c", program]),
        "multislice-v4-32-training team-b-training\njson\nv6e-1 v6e-16 v6e-128\n"
    );
}

#[test]
fn fish_completes_through_the_hook() {
    let program = "source ./completion.fish; complete -C 'kubectl-aiml render '; complete -C 'kubectl-aiml diff --output=ma'";
    assert_eq!(
        complete_in("fish", "completion.fish", &["--no-config", "-c", program]),
        "multislice-v4-32-training\tMultisliceTraining\nteam-b-training\tMultisliceTraining\n--output=markdown\tMarkdown, for pull-request comments (`diff` only)\n"
    );
}

#[test]
fn zsh_completes_through_the_hook() {
    // Outside a completion widget: stand-ins for compdef and compadd print what the hook
    // would offer (the values array, named last on compadd's command line).
    let program = r#"
        compdef() {}
        compadd() { print -rl -- "${(@P)${@[-1]}}" }
        source ./_kubectl-aiml
        words=(kubectl-aiml render ""); CURRENT=3; _kubectl_aiml
        words=(kubectl-aiml explain SaxServing.spec.tpu.type v6e-1); CURRENT=4; _kubectl_aiml
    "#;
    assert_eq!(
        complete_in("zsh", "_kubectl-aiml", &["-f", "-c", program]),
        "multislice-v4-32-training\nteam-b-training\nv6e-1\nv6e-16\nv6e-128\n"
    );
}

#[test]
fn kubectl_completes_the_plugin_through_kubectl_complete_aiml() {
    support::require("kubectl");
    let repo = completion_repo();
    let bin = repo.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let script = repo.aiml(&["completion", "kubectl"]).stdout;
    let executable = bin.join("kubectl_complete-aiml");
    support::write_script(&executable, &script);
    // kubectl finds the plugin as `kubectl-aiml` on PATH and asks `kubectl_complete-aiml`.
    let output = Command::new("kubectl")
        .args(["__complete", "aiml", "render", ""])
        .current_dir(repo.path())
        .env("PATH", path_with_binary(&bin))
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(
        stdout,
        "multislice-v4-32-training\tMultisliceTraining\nteam-b-training\tMultisliceTraining\n:4\n",
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn man_page_documents_every_command() {
    let repo = TestRepo::new();
    let run = repo.aiml(&["man"]);
    run.expect_code(0).stdout_has(".TH KUBECTL-AIML 1");
    // The visible commands, as `--help` lists them.
    let help = repo.aiml(&["--help"]).stdout;
    let commands: Vec<&str> = help
        .split("Commands:\n")
        .nth(1)
        .expect("commands in --help")
        .lines()
        .take_while(|line| line.starts_with("  "))
        // Wrapped descriptions continue further in.
        .filter(|line| !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .collect();
    assert!(commands.len() >= 10, "{commands:?}");
    for command in commands {
        assert!(
            run.stdout
                .contains(&format!(".SH \"KUBECTL AIML {}\"", command.to_uppercase())),
            "no section for `{command}`"
        );
    }
    assert!(!run.stdout.contains("__complete"));
    // One page: no references to per-command pages that are not installed.
    assert!(!run.stdout.contains("aiml\\-render(1)"), "{}", run.stdout);
    // The page is a pure function of the binary.
    assert_eq!(repo.aiml(&["man"]).stdout, run.stdout);
}
