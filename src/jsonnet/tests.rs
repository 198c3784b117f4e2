use super::locate::{Sources, field_definitions, locate};
use super::raw::Raw;
use super::*;

/// Without a worker process (library callers, the fuzz target), the checks made before
/// building values still turn the usual bombs into errors instead of aborts.
#[test]
fn bombs_are_refused_in_process_before_their_values_are_built() {
    let dir = tempfile::tempdir().unwrap();
    let bombs = [
        (
            "local f(n) = { a: f(n + 1) };\nf(0)\n",
            "deeper than 64 levels",
        ),
        ("{ x: std.range(1, 1e8) }\n", "larger than"),
        (
            "local f(n) = if n == 0 then [] else [f(n - 1)];\nf(100000)\n",
            "deeper than 64 levels",
        ),
        (
            "local d(s, n) = if n == 0 then s else d(s + s, n - 1);\n{ x: d('x', 40) }\n",
            "larger than",
        ),
    ];
    for (source, why) in bombs {
        let path = dir.path().join("bomb.jsonnet");
        std::fs::write(&path, source).unwrap();
        let error = evaluate(
            dir.path(),
            &path,
            "bomb.jsonnet",
            source,
            &Inputs::default(),
            64 << 20,
            Duration::from_secs(60),
        )
        .unwrap_err();
        assert!(error.message.contains(why), "{source}: {error:?}");
        assert_eq!(error.file, "bomb.jsonnet");
    }
}

#[test]
fn field_definitions_find_keys_of_every_form() {
    let keys = |line: &str| {
        field_definitions(line)
            .into_iter()
            .map(|(k, _)| k)
            .collect::<Vec<_>>()
    };
    assert_eq!(keys("  topology: '2x4',\n"), ["topology"]);
    assert_eq!(
        keys("  name:: 'x', 'aiml.dev/ignore': 'a'\n"),
        ["name", "aiml.dev/ignore"]
    );
    assert_eq!(keys("local size = 4;\n"), ["size"]);
    assert_eq!(keys("spec+: { replicas: 2 }\n"), ["spec", "replicas"]);
    assert!(keys("  // topology: '2x4'\n").is_empty());
    assert!(keys("if a == b then self.x else c\n").is_empty());
}

#[test]
fn a_field_is_placed_only_when_one_definition_can_have_made_it() {
    let main = "local lib = import 'lib.libsonnet';\n[\n  lib.model('a', topology='2x4'),\n  lib.model('b', topology='4x4'),\n]\n";
    let imports = BTreeMap::from([(
        "blueprints/lib.libsonnet".to_string(),
        "{ model(name, topology='2x2'):: { name: name, topology: topology } }\n".to_string(),
    )]);
    let sources = Sources::new(main, &imports);
    let span = locate(&sources, "topology", &Raw::String("4x4".into()), true).unwrap();
    assert_eq!((span.line, span.column), (4, 27));
    assert_eq!(&main[span.offset..span.offset + 5], "'4x4'");
    // The default is written in the library: placed there, on a line past the blueprint
    // file's five, when libraries may be pointed at.
    let span = locate(&sources, "topology", &Raw::String("2x2".into()), true).unwrap();
    assert_eq!((span.line, span.column), (6, 24));
    assert!(locate(&sources, "topology", &Raw::String("2x2".into()), false).is_none());
    // Defined only in the library, with a value the library did not write.
    assert!(locate(&sources, "name", &Raw::String("a".into()), true).is_none());
}
