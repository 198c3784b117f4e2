//! Jsonnet blueprints through the binary: a `.jsonnet` file under `blueprints/` renders
//! exactly what the same blueprints written in YAML render; its errors and findings point at
//! the Jsonnet source; imports stay inside the repository; evaluation is bounded and sealed
//! from the environment; the render cache follows imported files; and the fleet example under
//! `examples/fleet/` is rendered and current.

mod support;

use std::path::Path;

use support::TestRepo;

/// A whole TritonServing blueprint in Jsonnet (all defaults but the project).
fn triton(name: &str) -> String {
    format!(
        "{{ apiVersion: 'aiml.dev/v1alpha1', kind: 'TritonServing', metadata: {{ name: '{name}' }}, spec: {{ project: 'my-project' }} }}"
    )
}

/// The same blueprint in YAML.
fn triton_yaml(name: &str) -> String {
    format!(
        "apiVersion: aiml.dev/v1alpha1\nkind: TritonServing\nmetadata:\n  name: {name}\nspec:\n  project: my-project\n"
    )
}

fn repo_with(files: &[(&str, &str)]) -> TestRepo {
    let repo = TestRepo::empty();
    for (path, text) in files {
        repo.write(path, text);
    }
    repo
}

/// The rendered objects of a repository (markers left out: they name the blueprint file).
fn rendered(repo: &TestRepo) -> Vec<(String, String)> {
    repo.generated()
        .into_iter()
        .filter(|(path, _)| path.starts_with("rendered/") && !path.ends_with(".aiml-generated"))
        .map(|(path, bytes)| (path, String::from_utf8(bytes).expect("utf-8")))
        .collect()
}

fn folders(repo: &TestRepo) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo.path().join("rendered"))
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn one_blueprint_renders_what_its_yaml_renders() {
    let jsonnet = repo_with(&[("blueprints/serve.jsonnet", &triton("serve"))]);
    let yaml = repo_with(&[("blueprints/serve.yaml", &triton_yaml("serve"))]);
    for repo in [&jsonnet, &yaml] {
        let run = repo.aiml(&["render"]);
        run.expect_code(0);
    }
    assert_eq!(folders(&jsonnet), ["serve"]);
    assert_eq!(rendered(&jsonnet), rendered(&yaml));
    let check = jsonnet.aiml(&["render", "--check"]);
    check.expect_code(0);
}

#[test]
fn a_list_and_an_object_give_several_blueprints() {
    let list = format!("[{}, {}]", triton("a"), triton("b"));
    let object =
        "local lib = import 'lib/t.libsonnet';\n{ first: lib.t('c'), second: lib.t('d') }\n";
    let library = format!(
        "{{ t(name):: {} }}\n",
        triton("NAME").replace("'NAME'", "name")
    );
    let repo = repo_with(&[
        ("blueprints/list.jsonnet", &list),
        ("blueprints/object.jsonnet", object),
        ("blueprints/lib/t.libsonnet", &library),
    ]);
    let run = repo.aiml(&["render"]);
    run.expect_code(0);
    // The library is imported, never a blueprint of its own.
    assert_eq!(folders(&repo), ["a", "b", "c", "d"]);
}

#[test]
fn a_runtime_error_names_the_jsonnet_file_line_and_stack() {
    let repo = repo_with(&[
        (
            "blueprints/fleet.jsonnet",
            "local lib = import 'lib.libsonnet';\n\n[lib.serve('a', 0)]\n",
        ),
        (
            "blueprints/lib.libsonnet",
            "{\n  serve(name, replicas)::\n    assert replicas > 0 : 'replicas must be positive';\n    { name: name },\n}\n",
        ),
    ]);
    let run = repo.aiml(&["render"]);
    run.expect_code(2).stderr_has("replicas must be positive");
    // Where it failed, and the call in the blueprint file that led there.
    run.stderr_has("--> blueprints/lib.libsonnet:3:")
        .stderr_has("at blueprints/fleet.jsonnet:3:")
        .stderr_has("jsonnet-evaluation");
    assert!(!repo.path().join("rendered").exists());
    insta::assert_snapshot!("runtime_error", run.stderr);

    let syntax = repo_with(&[("blueprints/bad.jsonnet", "{\n  a: 1,\n  b: ,\n}\n")]);
    let run = syntax.aiml(&["render"]);
    run.expect_code(2)
        .stderr_has("--> blueprints/bad.jsonnet:3:");
}

#[test]
fn a_blueprint_finding_points_at_the_jsonnet_line_that_wrote_the_value() {
    let fleet = "\
local training(name, topology) = {
  apiVersion: 'aiml.dev/v1alpha1',
  kind: 'MultisliceTraining',
  metadata: { name: name },
  spec: { project: 'my-project', tpu: { type: 'v4-32', topology: topology } },
};
[
  training('good', '2x2x4'),
  training('bad', '2x2x2'),
]
";
    let repo = repo_with(&[("blueprints/fleet.jsonnet", fleet)]);
    let run = repo.aiml(&["render"]);
    run.expect_failure().stderr_has("tpu-topology");
    // The literal of the bad call.
    run.stderr_has("--> blueprints/fleet.jsonnet:9:19");

    // An unknown field written in a library: the finding points at the library's line, and
    // names the blueprint.
    let repo = repo_with(&[
        (
            "blueprints/fleet.jsonnet",
            "local lib = import 'lib.libsonnet';\n[lib.t('a'), lib.t('b')]\n",
        ),
        (
            "blueprints/lib.libsonnet",
            &format!(
                "{{ t(name):: {} + {{ spec+: {{ replicaz: 2 }} }} }}\n",
                triton("NAME").replace("'NAME'", "name")
            ),
        ),
    ]);
    let run = repo.aiml(&["render"]);
    run.expect_code(2)
        .stderr_has("--> blueprints/lib.libsonnet:1:144");
    // The library's line.
    run.stderr_has("{ spec+: { replicaz: 2 } }")
        .stderr_has("TritonServing/b");
}

/// A value a library under `lib/` wrote: findings about it name the library file and line
/// (human and JSON output), not the blueprint file or line 0. A value the library took from
/// its caller is not placed in the library.
#[test]
fn findings_about_a_value_a_library_wrote_name_the_library_line() {
    let fleet = "\
local tpu = import '../lib/tpu.libsonnet';
local training(name, slice) = {
  apiVersion: 'aiml.dev/v1alpha1',
  kind: 'MultisliceTraining',
  metadata: { name: name },
  spec: { project: 'my-project', tpu: slice },
};
[
  training('good', tpu.good),
  training('bad', tpu.bad),
]
";
    let library = "\
{
  good: { type: 'v4-32', topology: '2x2x4' },
  bad: { type: 'v4-32', topology: '2x2x2' },
}
";
    let repo = repo_with(&[
        ("blueprints/fleet.jsonnet", fleet),
        ("lib/tpu.libsonnet", library),
    ]);
    let run = repo.aiml(&["render"]);
    run.expect_failure().stderr_has("tpu-topology");
    // The library's literal.
    run.stderr_has("--> lib/tpu.libsonnet:3:35");
    // The library's line.
    run.stderr_has("bad: { type: 'v4-32', topology: '2x2x2' }")
        .stderr_has("MultisliceTraining/bad")
        .stderr_lacks("fleet.jsonnet:1");

    let run = repo.aiml(&["validate", "-o", "json"]);
    run.expect_failure();
    let findings = run.findings();
    let topology = findings
        .iter()
        .find(|f| {
            f["rule"]
                .as_str()
                .is_some_and(|r| r.starts_with("tpu-topology"))
        })
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert_eq!(topology["file"], "lib/tpu.libsonnet", "{topology}");
    assert_eq!(topology["line"], 3, "{topology}");
}

#[test]
fn two_blueprints_of_one_file_need_their_own_names() {
    let repo = repo_with(&[(
        "blueprints/fleet.jsonnet",
        &format!("[{}, {}]", triton("same"), triton("same")),
    )]);
    let run = repo.aiml(&["render"]);
    run.expect_code(2)
        .stderr_has("blueprint name `same` is already used");
    // Both names are the same literal: no line can be told, the document can.
    run.stderr_has("in blueprints/fleet.jsonnet, at `[1].metadata.name`")
        .stderr_has("also defined at blueprints/fleet.jsonnet (`[0]`)");
}

#[test]
fn imports_outside_the_repository_are_refused() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("x.libsonnet"), "{ leaked: true }\n").unwrap();
    let absolute = outside.path().join("x.libsonnet");
    let cases = [
        (
            "../../x.libsonnet".to_string(),
            "resolves outside the repository",
        ),
        (
            "./../../x.libsonnet".to_string(),
            "resolves outside the repository",
        ),
        (
            absolute.display().to_string(),
            "absolute paths are not allowed",
        ),
        ("link.libsonnet".to_string(), "through a symbolic link"),
    ];
    for (import, why) in cases {
        let repo = repo_with(&[(
            "blueprints/fleet.jsonnet",
            &format!("local x = import '{import}';\n[x]\n"),
        )]);
        std::os::unix::fs::symlink(&absolute, repo.path().join("blueprints/link.libsonnet"))
            .unwrap();
        let run = repo.aiml(&["render"]);
        assert_eq!(run.code, 2, "{import}: {}", run.transcript());
        assert!(run.stderr.contains(why), "{import}: {}", run.stderr);
        assert!(
            run.stderr.contains("--> blueprints/fleet.jsonnet:1:18"),
            "{import}: {}",
            run.stderr
        );
        run.stderr_lacks("leaked");
        assert!(!repo.path().join("rendered").exists());
        if import.starts_with("../../") {
            insta::assert_snapshot!("refused_import", run.stderr);
        }
    }

    // `..` that comes back inside, and a link to a file inside, are fine.
    let repo = repo_with(&[
        (
            "blueprints/team/fleet.jsonnet",
            "local lib = import '../lib/t.libsonnet';\nlocal linked = import 'linked.libsonnet';\n[lib.t('a'), linked.t('b')]\n",
        ),
        (
            "blueprints/lib/t.libsonnet",
            &format!(
                "{{ t(name):: {} }}\n",
                triton("NAME").replace("'NAME'", "name")
            ),
        ),
    ]);
    std::os::unix::fs::symlink(
        repo.path().join("blueprints/lib/t.libsonnet"),
        repo.path().join("blueprints/team/linked.libsonnet"),
    )
    .unwrap();
    let run = repo.aiml(&["render"]);
    run.expect_code(0);
    assert_eq!(folders(&repo), ["a", "b"]);
}

#[test]
fn runaway_recursion_is_stopped_and_nothing_is_written() {
    let repo = repo_with(&[(
        "blueprints/fleet.jsonnet",
        "local f(n) = f(n + 1) + 1;\n{ x: f(0) }\n",
    )]);
    let run = repo.aiml(&["render"]);
    run.expect_code(2)
        .stderr_has("stack overflow")
        .stderr_has("--> blueprints/fleet.jsonnet:1:");
    assert!(!repo.path().join("rendered").exists());
    assert!(!repo.path().join("overlays").exists());
}

/// `kubectl aiml ARGS` in `repo` with its address space capped at 512 MiB (`ulimit -v`): a
/// run that needs more aborts, and its exit code says so.
fn aiml_capped(repo: &TestRepo, args: &[&str]) -> support::Run {
    let output = std::process::Command::new("sh")
        .arg("-c")
        // The worker caps itself at 512 MiB of address space; the command as a whole (a debug
        // binary maps about 300 MB, each thread of the parent reserves stack and a malloc
        // arena) is held to 1 GiB, so a cap the worker failed to set would still not take
        // the machine.
        .arg("ulimit -v 1048576 && exec \"$0\" \"$@\"")
        .arg(assert_cmd::cargo::cargo_bin("kubectl-aiml"))
        .args(args)
        .current_dir(repo.path())
        .env("NO_COLOR", "1")
        .output()
        .expect("run kubectl-aiml");
    support::Run {
        args: args.iter().map(|arg| arg.to_string()).collect(),
        context: String::new(),
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Files that would take gigabytes of memory or an unbounded stack to evaluate are findings
/// about the file (exit 2), the worker within 512 MiB, and nothing is written.
#[test]
fn jsonnet_bombs_are_findings_within_512_mib() {
    let deep_literal = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let bombs: &[(&str, &str, &str)] = &[
        (
            "object recursion",
            "local f(n) = { a: f(n + 1) };\nf(0)\n",
            "deeper than 64 levels",
        ),
        (
            "a range of 10^8",
            "{ x: std.range(1, 1e8) }\n",
            "the output is larger than 64 MiB",
        ),
        (
            "arrays nested 100,000 deep by a function",
            "local f(n) = if n == 0 then [] else [f(n - 1)];\nf(100000)\n",
            "deeper than 64 levels",
        ),
        (
            "arrays nested 100,000 deep by a fold",
            "std.foldl(function(acc, i) [acc], std.range(1, 100000), [])\n",
            "ran out of stack",
        ),
        (
            "arrays nested 100,000 deep in the source",
            &deep_literal,
            "ran out of stack",
        ),
        (
            "a string doubled 30 times",
            "local d(s, n) = if n == 0 then s else d(s + s, n - 1);\n{ x: d('x', 30) }\n",
            "the output is larger than 64 MiB",
        ),
        (
            "a string doubled 40 times",
            "local d(s, n) = if n == 0 then s else d(s + s, n - 1);\n{ x: d('x', 40) }\n",
            "the output is larger than 64 MiB",
        ),
        (
            "a string doubled 40 times, then hashed",
            "local d(s, n) = if n == 0 then s else d(s + s, n - 1);\n{ x: std.md5(d('x', 40)) }\n",
            "needed more than 512 MiB of memory",
        ),
        (
            "a comprehension of 10^8",
            "[x for x in std.range(1, 1e8)]\n",
            "needed more than 512 MiB of memory",
        ),
    ];
    for (what, source, why) in bombs {
        let repo = repo_with(&[("blueprints/bomb.jsonnet", source)]);
        let run = aiml_capped(&repo, &["render"]);
        assert_eq!(run.code, 2, "{what}: {}", run.transcript());
        assert!(
            run.stderr.contains("error[jsonnet-evaluation]: jsonnet: "),
            "{what}: {}",
            run.stderr
        );
        assert!(run.stderr.contains(why), "{what}: {}", run.stderr);
        assert!(
            run.stderr.contains("blueprints/bomb.jsonnet"),
            "{what}: {}",
            run.stderr
        );
        assert!(!repo.path().join("rendered").exists(), "{what}");
        assert!(!repo.path().join("overlays").exists(), "{what}");
    }
    // `validate` of the file evaluates it the same way.
    let repo = repo_with(&[(
        "blueprints/bomb.jsonnet",
        "[x for x in std.range(1, 1e8)]\n",
    )]);
    let run = aiml_capped(&repo, &["validate", "blueprints/bomb.jsonnet"]);
    run.expect_code(2)
        .stderr_has("needed more than 512 MiB of memory");
}

/// A YAML file may hold 100,000 documents at most; one Jsonnet file may not yield more either
/// (else it would be a way around the limit): one finding naming the file, not 100,001.
#[test]
fn a_jsonnet_file_yields_at_most_the_documents_a_yaml_file_may_hold() {
    for output in [
        "[{} for i in std.range(0, 100000)]",
        "{ ['b' + i]: {} for i in std.range(0, 100000) }",
    ] {
        let repo = repo_with(&[("blueprints/many.jsonnet", output)]);
        let run = repo.aiml(&["render"]);
        run.expect_code(2);
        run.stderr_has("blueprints/many.jsonnet")
            .stderr_has("evaluates to 100001 documents, more than the 100000 one file may hold");
        assert!(
            !run.stderr.contains("blueprint-schema"),
            "refused whole, not read document by document: {}",
            run.stderr
        );
        assert!(!repo.path().join("rendered").exists());
    }
}

/// Jsonnet files evaluate in parallel, yet the repository is read in path order: blueprints
/// list in it, and each duplicate name points at the definition before it in that order,
/// whichever evaluation ends first (the first files are the slowest here).
#[test]
fn several_jsonnet_files_load_in_path_order() {
    let slow = "local spin = std.foldl(function(a, b) a + b, std.range(1, 200000), 0);\n";
    let mut files = Vec::new();
    for i in 0..8 {
        let pause = if i < 4 { slow } else { "" };
        files.push((
            format!("blueprints/f{i}.jsonnet"),
            format!(
                "{pause}[{}, {}]",
                triton(&format!("own-{i}")),
                triton("same")
            ),
        ));
    }
    files.push(("blueprints/f4a.yaml".into(), triton_yaml("same")));
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let repo = repo_with(&files);
    for _ in 0..3 {
        let run = repo.aiml(&["blueprints", "-o", "json"]);
        run.expect_code(2);
        let listed: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
        let names: Vec<&str> = listed["blueprints"]
            .as_array()
            .expect("blueprints")
            .iter()
            .filter_map(|b| b["name"].as_str())
            .filter(|name| name.starts_with("own-"))
            .collect();
        assert_eq!(
            names,
            [
                "own-0", "own-1", "own-2", "own-3", "own-4", "own-5", "own-6", "own-7"
            ],
            "{}",
            run.stdout
        );
        let duplicates: Vec<(&str, &str)> = listed["diagnostics"]
            .as_array()
            .expect("diagnostics")
            .iter()
            .filter(|d| d["rule"] == "blueprint-name-duplicate")
            .map(|d| {
                (
                    d["file"].as_str().unwrap_or_default(),
                    d["found"].as_str().unwrap_or_default(),
                )
            })
            .collect();
        // Each later definition names the one before it, in path order.
        assert_eq!(
            duplicates,
            [
                (
                    "blueprints/f1.jsonnet",
                    "also defined at blueprints/f0.jsonnet:2 (`[1]`)"
                ),
                (
                    "blueprints/f2.jsonnet",
                    "also defined at blueprints/f1.jsonnet:2 (`[1]`)"
                ),
                (
                    "blueprints/f3.jsonnet",
                    "also defined at blueprints/f2.jsonnet:2 (`[1]`)"
                ),
                (
                    "blueprints/f4.jsonnet",
                    "also defined at blueprints/f3.jsonnet:2 (`[1]`)"
                ),
                (
                    "blueprints/f4a.yaml",
                    "also defined at blueprints/f4.jsonnet:1 (`[1]`)"
                ),
                (
                    "blueprints/f5.jsonnet",
                    "also defined at blueprints/f4a.yaml:1"
                ),
                (
                    "blueprints/f6.jsonnet",
                    "also defined at blueprints/f5.jsonnet:1 (`[1]`)"
                ),
                (
                    "blueprints/f7.jsonnet",
                    "also defined at blueprints/f6.jsonnet:1 (`[1]`)"
                ),
            ]
        );
    }
}

#[test]
fn long_evaluations_and_huge_outputs_are_stopped() {
    let repo = repo_with(&[(
        "blueprints/slow.jsonnet",
        "std.foldl(function(a, b) a + b, std.range(1, 1000000000), 0)\n",
    )]);
    let started = std::time::Instant::now();
    let run = repo.aiml_with_env(
        &["render"],
        &[("AIML_JSONNET_TIMEOUT", std::ffi::OsStr::new("1"))],
    );
    run.expect_code(2).stderr_has("took longer than 1 s");
    assert!(started.elapsed() < std::time::Duration::from_secs(30));

    let repo = repo_with(&[(
        "blueprints/huge.jsonnet",
        "[{ spec: std.repeat('x', 1000) } for i in std.range(1, 100000)]\n",
    )]);
    let run = repo.aiml_with_env(
        &["render"],
        &[("AIML_MAX_FILE_SIZE", std::ffi::OsStr::new("64K"))],
    );
    run.expect_code(2).stderr_has("the output is larger than");
}

#[test]
fn external_variables_come_from_aiml_yaml_and_never_from_the_environment() {
    let fleet = "\
function(team) [
  {
    apiVersion: 'aiml.dev/v1alpha1',
    kind: 'TritonServing',
    metadata: { name: team + '-' + std.extVar('env') },
    spec: { project: std.extVar('projects')[std.extVar('env')] },
  },
]
";
    let settings = "jsonnet:\n  extVars: {env: prod}\n  extCode:\n    projects: \"{ prod: 'acme-prod' }\"\n  tlaVars: {team: search}\n";
    let repo = repo_with(&[("blueprints/fleet.jsonnet", fleet), ("aiml.yaml", settings)]);
    let run = repo.aiml_with_env(&["render"], &[("env", std::ffi::OsStr::new("staging"))]);
    run.expect_code(0);
    assert_eq!(folders(&repo), ["search-prod"]);
    let objects = rendered(&repo);
    assert!(
        objects.iter().any(|(_, text)| text.contains("acme-prod")),
        "the project from extCode"
    );

    // A variable of the process environment is not an external variable.
    let leak = "[{ apiVersion: 'aiml.dev/v1alpha1', kind: 'TritonServing', metadata: { name: 'x' }, spec: { project: std.extVar('AIML_TEST_SECRET') } }]\n";
    let repo = repo_with(&[("blueprints/fleet.jsonnet", leak)]);
    let run = repo.aiml_with_env(
        &["render"],
        &[("AIML_TEST_SECRET", std::ffi::OsStr::new("hunter2"))],
    );
    run.expect_code(2)
        .stderr_has("external variable is not defined: AIML_TEST_SECRET")
        .stderr_has("jsonnet.extVars");
    run.stderr_lacks("hunter2");
    assert!(!run.stdout.contains("hunter2"));

    // Settings are read as strictly as the rest of `aiml.yaml`.
    let repo = repo_with(&[
        ("blueprints/fleet.jsonnet", &triton("a")),
        (
            "aiml.yaml",
            "sync: {engine: none}\njsonnet:\n  extVar: {env: prod}\n",
        ),
    ]);
    let run = repo.aiml(&["render"]);
    run.expect_code(2).stderr_has("did you mean `extVars`?");
}

#[test]
fn editing_an_imported_library_renders_again() {
    let library = |replicas: u32| {
        format!(
            "{{ t(name):: {} + {{ spec+: {{ autoscaling: {{ minReplicas: 1, maxReplicas: {replicas} }} }} }} }}\n",
            triton("NAME").replace("'NAME'", "name")
        )
    };
    let repo = repo_with(&[
        (
            "blueprints/fleet.jsonnet",
            "local lib = import 'lib.libsonnet';\n[lib.t('a')]\n",
        ),
        ("blueprints/lib.libsonnet", &library(3)),
    ]);
    let run = repo.aiml(&["render"]);
    run.expect_code(0);
    let before = rendered(&repo);
    repo.write("blueprints/lib.libsonnet", &library(2));
    let run = repo.aiml(&["render"]);
    run.expect_code(0);
    let after = rendered(&repo);
    assert!(
        before != after,
        "the library's change did not reach the output"
    );
    let fresh = repo_with(&[
        (
            "blueprints/fleet.jsonnet",
            "local lib = import 'lib.libsonnet';\n[lib.t('a')]\n",
        ),
        ("blueprints/lib.libsonnet", &library(2)),
    ]);
    let run = fresh.aiml(&["render", "--no-cache"]);
    run.expect_code(0);
    assert!(
        after == rendered(&fresh),
        "a cached render differs from a fresh one"
    );
    let check = repo.aiml(&["render", "--check"]);
    check.expect_code(0);
}

/// `examples/fleet/`'s committed overlays and rendered output are what a render produces.
#[test]
fn the_fleet_example_is_rendered_and_current() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fleet");
    let repo = TestRepo::empty();
    for top in ["blueprints", "overlays", "rendered"] {
        for (path, content) in aiml::render::read_tree(&example.join(top)).expect("read") {
            repo.write(
                &format!("{top}/{path}"),
                std::str::from_utf8(&content).expect("utf-8"),
            );
        }
    }
    repo.write(
        "aiml.yaml",
        &std::fs::read_to_string(example.join("aiml.yaml")).expect("aiml.yaml"),
    );
    let check = repo.aiml(&["render", "--check", "--no-cache"]);
    assert_eq!(
        check.code,
        0,
        "run `cargo run -- render` in examples/fleet and commit:\n{}",
        check.transcript()
    );
    assert_eq!(
        folders(&repo).len(),
        9,
        "8 blueprints and _sync: {:?}",
        folders(&repo)
    );
}

/// `validate FILE.jsonnet` evaluates the file (with the repository's variables, imports kept
/// inside it) and judges what it yields: blueprints are compiled, findings point at the
/// Jsonnet line; a Jsonnet file outside any repository may import only beside itself.
#[test]
fn validate_evaluates_jsonnet_files_named_on_the_command_line() {
    let repo = repo_with(&[
        ("aiml.yaml", "jsonnet:\n  extVars:\n    topology: 4x8\n"),
        ("blueprints/keep.yaml", &triton_yaml("keep")),
        (
            "drafts/train.jsonnet",
            "{ apiVersion: 'aiml.dev/v1alpha1', kind: 'MultisliceTraining', metadata: { name: 'train' },\n  spec: { project: 'my-project', tpu: { type: 'v4-32', topology: std.extVar('topology') } } }\n",
        ),
        ("drafts/ok.jsonnet", &triton("ok")),
    ]);
    let run = repo.aiml(&["validate", "drafts/train.jsonnet"]);
    run.expect_code(1);
    run.stderr_has("error[tpu-topology")
        .stderr_has("--> drafts/train.jsonnet:2:");
    let run = repo.aiml(&["validate", "drafts/ok.jsonnet"]);
    run.expect_code(0).stderr_has("1 blueprint");

    let outside = tempfile::tempdir().expect("temp dir");
    std::fs::write(outside.path().join("lib.libsonnet"), triton("lib")).expect("write");
    std::fs::write(
        outside.path().join("leak.jsonnet"),
        "import '../etc/passwd'",
    )
    .expect("write");
    std::fs::write(
        outside.path().join("fine.jsonnet"),
        "import 'lib.libsonnet'",
    )
    .expect("write");
    let fine = repo.aiml(&[
        "validate",
        &outside.path().join("fine.jsonnet").to_string_lossy(),
    ]);
    fine.expect_code(0);
    let leak = repo.aiml(&[
        "validate",
        &outside.path().join("leak.jsonnet").to_string_lossy(),
    ]);
    leak.expect_code(2).stderr_has("jsonnet-evaluation");
}
