//! Reading input as Kubernetes does: plain scalars resolved as `sigs.k8s.io/yaml` (go-yaml
//! v2) resolves them, the values YAML readers disagree on, control characters in every human
//! output, and `validate -` reading standard input.

mod support;

use aiml::yaml::{Value, parse_documents};
use support::TestRepo;

/// An autoscaler whose `maxReplicas` is written `max`, below a `minReplicas` no form reaches:
/// the `hpa-replica-bounds` finding quotes the maximum the rules read.
fn autoscaler(max: &str) -> String {
    format!(
        "apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
  namespace: serving
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: web}}
  minReplicas: 5000
  maxReplicas: {max}
"
    )
}

/// The maximum the rules saw for `maxReplicas: <written>`.
fn max_replicas_seen(written: &str) -> String {
    let repo = TestRepo::empty();
    repo.write("k8s/hpa.yaml", &autoscaler(written));
    let run = repo.aiml(&["validate", "k8s/hpa.yaml"]);
    assert_eq!(run.code, 1, "{written}: {}", run.transcript());
    let message = run
        .stderr
        .lines()
        .find(|line| line.contains("[hpa-replica-bounds]"))
        .unwrap_or_else(|| panic!("{written}: no bounds finding: {}", run.transcript()));
    let start = message.find("`maxReplicas` (").expect("the maximum") + "`maxReplicas` (".len();
    message[start..].split(')').next().unwrap().to_string()
}

/// One test a spelling, named after what kubectl does with it: `name: "written" => "seen";`.
macro_rules! max_replicas_tests {
    ($($name:ident: $written:literal => $seen:literal;)*) => {$(
        #[test]
        fn $name() {
            assert_eq!(max_replicas_seen($written), $seen);
        }
    )*};
}

max_replicas_tests! {
    leading_zero_octal_is_read_as_kubectl_reads_it: "010" => "8";
    yaml_1_2_octal_is_read_as_kubectl_reads_it: "0o10" => "8";
    hexadecimal_is_read_as_kubectl_reads_it: "0x1F" => "31";
    binary_is_read_as_kubectl_reads_it: "0b101" => "5";
    underscores_are_dropped_as_kubectl_drops_them: "1_000" => "1000";
    a_plus_sign_is_read_as_kubectl_reads_it: "+12" => "12";
    a_leading_zero_with_non_octal_digits_is_decimal: "09" => "9";
}

#[test]
fn a_whole_float_arrives_as_an_integer() {
    // kubectl sends JSON: Go writes the float 1000 as `1000`.
    assert_eq!(max_replicas_seen("1e3"), "1000");
    assert_eq!(max_replicas_seen("12.0"), "12");
}

/// The value of `v` in `v: <written>`, as every rule reads it.
fn value_of(written: &str) -> Value {
    let documents = parse_documents(&format!("v: {written}\n")).expect("parses");
    documents[0].get("v").expect("v").value.clone()
}

#[test]
fn floats_are_read_as_kubectl_reads_them() {
    assert_eq!(value_of(".5"), Value::Float(0.5));
    assert_eq!(value_of("-.5"), Value::Float(-0.5));
    assert_eq!(value_of("1.5e3"), Value::Int(1500));
    assert_eq!(value_of("1_000.5"), Value::Float(1000.5));
    // Go's ParseFloat overflows: the text stays a string.
    assert_eq!(value_of("1e400"), Value::String("1e400".into()));
}

#[test]
fn yaml_1_1_booleans_are_booleans() {
    for word in [
        "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE",
    ] {
        assert_eq!(value_of(word), Value::Bool(true), "{word}");
    }
    for word in [
        "n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE",
    ] {
        assert_eq!(value_of(word), Value::Bool(false), "{word}");
    }
    for text in ["tRUE", "yes please", "nope"] {
        assert_eq!(value_of(text), Value::String(text.into()), "{text}");
    }
}

#[test]
fn null_spellings_are_null() {
    for word in ["~", "null", "Null", "NULL", ""] {
        assert_eq!(value_of(word), Value::Null, "{word:?}");
    }
    assert_eq!(value_of("nULL"), Value::String("nULL".into()));
}

#[test]
fn quoted_block_and_tagged_values_stay_text() {
    assert_eq!(value_of("\"010\""), Value::String("010".into()));
    assert_eq!(value_of("'yes'"), Value::String("yes".into()));
    assert_eq!(value_of("!!str 0x1F"), Value::String("0x1F".into()));
    assert_eq!(value_of("|-\n  010"), Value::String("010".into()));
    assert_eq!(value_of(">-\n  yes"), Value::String("yes".into()));
}

#[test]
fn keys_are_the_json_keys_kubectl_sends() {
    let documents = parse_documents("data:\n  010: a\n  on: b\n  \"yes\": c\n").unwrap();
    let keys: Vec<&str> = documents[0]
        .get("data")
        .and_then(|d| d.as_map())
        .unwrap()
        .iter()
        .map(|(k, _)| k.text.as_str())
        .collect();
    assert_eq!(keys, ["8", "true", "yes"]);
}

#[test]
fn a_yaml_1_1_word_where_a_string_belongs_says_what_kubectl_reads() {
    let repo = TestRepo::empty();
    let run = repo.validate_manifest(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: n\ndata:\n  k: \"1\"\n",
    );
    run.expect_code(1)
        .stderr_has("kubectl reads the unquoted `n` as the boolean `false` (YAML 1.1)")
        .stderr_has("quote the value: `namespace: \"n\"`");
}

#[test]
fn infinity_and_nan_are_refused_as_kubectl_refuses_them() {
    for written in [".inf", "-.Inf", ".NaN"] {
        let repo = TestRepo::empty();
        let run = repo.validate_manifest("hpa.yaml", &autoscaler(written));
        assert_eq!(run.code, 2, "{written}: {}", run.transcript());
        run.stderr_has("[yaml-syntax]")
            .stderr_has("k8s/hpa.yaml:9")
            .stderr_has("kubectl refuses the whole file");
    }
}

#[test]
fn values_readers_disagree_on_are_warnings_with_the_unambiguous_spelling() {
    let repo = TestRepo::empty();
    let text = autoscaler("010").replace("minReplicas: 5000", "minReplicas: 1")
        + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: serving\n  labels:\n    debug: \"yes\"\ndata:\n  mode: \"0644\"\n";
    let run = repo.validate_manifest("hpa.yaml", &text);
    // Warnings never change the exit code.
    run.expect_code(0);
    run.stderr_has("warning[yaml-ambiguous]");
    run.stderr_has("`010` is the number 8 to kubectl and the API server, but the number 10 to YAML 1.2 readers");
    run.stderr_has("k8s/hpa.yaml:9");
    run.stderr_has("write `8`, or quote it (`\"010\"`) if you meant text");
    // Quoted values are what they say: one warning only.
    assert_eq!(
        run.stderr.matches("[yaml-ambiguous]").count(),
        1,
        "{}",
        run.stderr
    );
    let json = repo.aiml(&["validate", "-o", "json", "k8s"]);
    let findings = json.findings();
    assert_eq!(findings[0]["rule"], "yaml-ambiguous");
    assert_eq!(findings[0]["field"], "spec.maxReplicas");
    assert_eq!(findings[0]["severity"], "warning");
}

#[test]
fn blueprints_are_read_with_the_same_reader() {
    let repo = TestRepo::new();
    let blueprint = support::EXAMPLE.replace("name: multislice-v4-32-training", "name: no");
    assert_ne!(blueprint, support::EXAMPLE);
    repo.write("blueprints/multislice-v4-32-training.yaml", &blueprint);
    let run = repo.aiml(&["validate"]);
    run.expect_code(2)
        .stderr_has("[yaml-ambiguous]")
        .stderr_has("metadata.name");
}

/// Runs the binary in `repo` with `input` on standard input (a pipe).
fn aiml_with_stdin(
    repo: &TestRepo,
    args: &[&str],
    input: &[u8],
    env: &[(&str, &str)],
) -> support::Run {
    support::aiml_with_stdin(repo.path(), args, input, env)
}

const BOUNDS: &str = include_str!("fixtures/validate/err_hpa-replica-bounds.yaml");

#[test]
fn validate_dash_reads_a_stream_from_standard_input() {
    let repo = TestRepo::empty();
    let run = aiml_with_stdin(&repo, &["validate", "-"], BOUNDS.as_bytes(), &[]);
    run.expect_code(1).stderr_has("--> <stdin>:12:16");
    // With the line.
    run.stderr_has("12 |   maxReplicas: 2")
        .stderr_has("2 objects");
    let json = aiml_with_stdin(
        &repo,
        &["validate", "-o", "json", "-"],
        BOUNDS.as_bytes(),
        &[],
    );
    let findings = json.findings();
    assert_eq!(findings[0]["file"], "<stdin>");
    assert_eq!(findings[0]["line"], 12);
}

#[cfg(unix)]
#[test]
fn dev_stdin_is_standard_input_too() {
    let repo = TestRepo::empty();
    let run = aiml_with_stdin(&repo, &["validate", "/dev/stdin"], BOUNDS.as_bytes(), &[]);
    run.expect_code(1).stderr_has("--> <stdin>:12:16");
}

#[test]
fn standard_input_is_bounded_like_a_file() {
    let repo = TestRepo::empty();
    let big = format!("{BOUNDS}\n# {}\n", "x".repeat(4096));
    let run = aiml_with_stdin(
        &repo,
        &["validate", "-"],
        big.as_bytes(),
        &[("AIML_MAX_FILE_SIZE", "2K")],
    );
    run.expect_code(2)
        .stderr_has("`<stdin>` is larger than 2 KiB (set `AIML_MAX_FILE_SIZE` to raise the limit)");
    let twice = aiml_with_stdin(&repo, &["validate", "-", "/dev/stdin"], b"a: 1\n", &[]);
    twice.expect_code(2).stderr_has("it can be read once");
}

#[test]
fn kustomize_output_pipes_into_validate() {
    let repo = TestRepo::empty();
    repo.write("k8s/hpa.yaml", BOUNDS);
    repo.write(
        "k8s/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- hpa.yaml\n",
    );
    let built = support::succeed(
        std::process::Command::new("kustomize")
            .args(["build", "k8s"])
            .current_dir(repo.path()),
        "kustomize v5 (on PATH for the tests) builds k8s/",
    );
    let run = aiml_with_stdin(&repo, &["validate", "-"], &built.stdout, &[]);
    run.expect_code(1);
    assert_eq!(
        run.stderr.matches("[hpa-replica-bounds]").count(),
        2,
        "{}",
        run.stderr
    );
    run.stderr_has("--> <stdin>:");
}

/// An escape sequence, a bell, a C1 CSI, DEL and a right-to-left override.
const HOSTILE: &str = "\u{1b}[2J\u{7}\u{9b}31m\u{7f}\u{202e}";

/// Fails when `text` holds a character a terminal would act on (other than line breaks and
/// tabs).
fn assert_inert(what: &str, text: &str) {
    let bad: Vec<char> = text
        .chars()
        .filter(|&c| {
            (c.is_control() && c != '\n' && c != '\t') || matches!(c, '\u{202a}'..='\u{202e}')
        })
        .collect();
    assert!(bad.is_empty(), "{what}: raw {bad:?} in {text:?}");
}

#[test]
fn hostile_file_names_and_values_reach_no_terminal_raw() {
    let repo = TestRepo::new();
    // A blueprint file named with controls, and a manifest whose object name and offending
    // line hold them (the YAML escapes make raw characters; the comment holds raw C1 and
    // bidi characters, which YAML allows in text).
    repo.write(&format!("blueprints/b{HOSTILE}.yaml"), support::EXAMPLE);
    std::fs::remove_file(
        repo.path()
            .join("blueprints/multislice-v4-32-training.yaml"),
    )
    .unwrap();
    let manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \"a\\e[2J\\a\\x9b\\u202e\"\n  namespace: n\ndata:\n  k: \"1\"\n";
    repo.write(&format!("k8s/m{HOSTILE}.yaml"), manifest);
    let runs = [
        ("validate", repo.aiml(&["validate"])),
        ("validate k8s", repo.aiml(&["validate", "k8s"])),
        (
            "validate -o json k8s",
            repo.aiml(&["validate", "-o", "json", "k8s"]),
        ),
        ("blueprints", repo.aiml(&["blueprints"])),
        (
            "blueprints -o json",
            repo.aiml(&["blueprints", "-o", "json"]),
        ),
        ("render", repo.aiml(&["render"])),
        ("render --check", repo.aiml(&["render", "--check"])),
        (
            "usage error",
            repo.aiml(&["validate", &format!("--no-such{HOSTILE}")]),
        ),
        (
            "missing path",
            repo.aiml(&["validate", &format!("k8s/none{HOSTILE}.yaml")]),
        ),
    ];
    for (what, run) in &runs {
        assert_inert(&format!("{what} stdout"), &run.stdout);
        assert_inert(&format!("{what} stderr"), &run.stderr);
    }
    let (_, validate) = &runs[1];
    validate
        .expect_code(1)
        .stderr_has("m\\u{1b}[2J\\u{7}\\u{9b}31m");
    // JSON stays JSON, with the very characters as its values.
    let (_, json) = &runs[2];
    let findings: serde_json::Value = serde_json::from_str(&json.stdout).expect("valid JSON");
    assert!(
        findings.as_array().is_some_and(|a| !a.is_empty()),
        "{}",
        json.stdout
    );
    let (_, listing) = &runs[4];
    let listing: serde_json::Value = serde_json::from_str(&listing.stdout).expect("valid JSON");
    assert_eq!(
        listing["blueprints"][0]["file"],
        format!("blueprints/b{HOSTILE}.yaml"),
        "the JSON value is the file's real name"
    );
    let (_, usage) = &runs[7];
    usage
        .expect_code(2)
        .stderr_has("--no-such")
        .stderr_has("\\u{9b}31m\\u{202e}");
}

#[test]
fn a_source_line_with_raw_controls_is_quoted_inert_and_aligned() {
    let repo = TestRepo::empty();
    let run = repo.validate_manifest(
        "m.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: n\ndata:\n  k: 1 # \u{9b}2J\u{202e}\n",
    );
    // YAML refuses a raw C1 control: the finding quotes the line it is on, one `�` for each
    // character a terminal would act on, so the caret still points at the right column.
    run.expect_code(2);
    assert_inert("validate", &run.stderr);
    run.stderr_has("7 |   k: 1 # \u{fffd}2J\u{fffd}")
        .stderr_has("  |          ^");
}

#[test]
fn diff_reports_escape_object_and_file_names() {
    let repo = TestRepo::new();
    let render = repo.aiml(&["render"]);
    render.expect_code(0);
    let git = git2::Repository::init(repo.path()).unwrap();
    support::commit_all(
        &git,
        &git2::Signature::now("t", "t@example.com").unwrap(),
        "c",
    );
    // A hostile change to the rendered output, as a pull request could carry.
    repo.write(
        &format!("rendered/multislice-v4-32-training/workload/default/ConfigMap_x{HOSTILE}.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \"a\\e[2J\\a\\x9b\\u202e\"\n  namespace: default\ndata:\n  k: \"\\e]0;title\\a\"\n",
    );
    for output in ["text", "markdown", "json"] {
        let run = repo.aiml(&["diff", "-o", output]);
        assert_eq!(run.code, 0, "{output}: {}", run.transcript());
        assert!(!run.stdout.is_empty(), "{output}: {}", run.transcript());
        assert_inert(&format!("diff -o {output} stdout"), &run.stdout);
        assert_inert(&format!("diff -o {output} stderr"), &run.stderr);
        if output == "json" {
            serde_json::from_str::<serde_json::Value>(&run.stdout).expect("valid JSON");
        }
    }
}
