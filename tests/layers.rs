//! The crate's shape, kept by reading its sources.
//!
//! - The top-level modules form layers that read like the pipeline, and a module imports only
//!   modules listed before it ([`LAYERS`]): no import runs from a lower layer to a higher one,
//!   so no two modules depend on each other. `ARCHITECTURE.md` shows the layers as a Mermaid
//!   picture and a table that this file generates; a test fails when they differ.
//! - Inside `validate`, the object models sit below the rules, and rule families stay apart.
//!
//! Test code (`#[cfg(test)]` items and the files they declare) may import anything.

#[path = "support/rust_source.rs"]
mod rust_source;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use rust_source::{Reference, Source, Token, read_tree, references, tokens, without_test_items};

/// A layer: its name, what it is for, and its modules, each of which may import only the
/// modules before it (in this layer and every layer below).
struct Layer {
    name: &'static str,
    role: &'static str,
    modules: &'static [&'static str],
}

/// Bottom to top. `cli` is the binary's module; every other one is the library's.
const LAYERS: &[Layer] = &[
    Layer {
        name: "foundation",
        role: "leaf types: bounds, the YAML reader, credential patterns, accelerator facts, \
               name checks, findings and the `Rule` type, the repository layout and safe reads",
        modules: &[
            "limits",
            "yaml",
            "secrets",
            "catalog",
            "names",
            "diagnostic",
            "repo",
        ],
    },
    Layer {
        name: "input",
        role: "what people write: Jsonnet evaluation, the blueprint envelope and strict reader, \
               `aiml.yaml`, loading a repository",
        modules: &["jsonnet", "blueprint", "settings", "input"],
    },
    Layer {
        name: "platform",
        role: "what every kind shares: the planner and exports, accelerator stanzas, GCP \
               building blocks, the in-memory overlay and its templates",
        modules: &["plan", "accelerator", "gcp", "overlay"],
    },
    Layer {
        name: "kinds",
        role: "each blueprint kind: its spec, plan and templates, and the registry",
        modules: &["kinds"],
    },
    Layer {
        name: "build",
        role: "building overlays with kustomize into rendered objects",
        modules: &["kustomize", "manifest"],
    },
    Layer {
        name: "validate",
        role: "rules over objects and their schemas",
        modules: &["validate", "schema"],
    },
    Layer {
        name: "gitops",
        role: "sync roots, writing the output, the render cache, commits, diffs and graphs",
        modules: &["sync", "workspace", "cache", "gitops", "graph"],
    },
    Layer {
        name: "live",
        role: "the clusters through kube: status, live diff, live graph",
        modules: &["live"],
    },
    Layer {
        name: "render",
        role: "the rule catalog, assembled from every module, and the render pipeline",
        modules: &["rules", "render"],
    },
    Layer {
        name: "cli",
        role: "the binary: commands, printing, exit codes",
        modules: &["cli"],
    },
];

/// Each module's position: a module may import only modules of a lower position.
fn positions() -> BTreeMap<&'static str, (usize, &'static str)> {
    LAYERS
        .iter()
        .flat_map(|layer| {
            layer
                .modules
                .iter()
                .map(move |module| (*module, layer.name))
        })
        .enumerate()
        .map(|(position, (module, layer))| (module, (position, layer)))
        .collect()
}

/// An import of one top-level module by another, where code names it.
#[derive(Debug)]
struct Import {
    from: String,
    to: String,
    path: String,
    line: usize,
}

/// The top-level module a reference in `source` names, if it names one other than its own.
fn target(source: &Source, reference: &Reference, library: &BTreeSet<String>) -> Option<String> {
    let own = source.module.first()?;
    let name = reference.name.as_str();
    let named = match reference.root.as_str() {
        "crate" if own != "cli" => Some(name),
        // The binary names the library by its crate name.
        "aiml" if own == "cli" => Some(name),
        // `super` from a top-level module (`src/x.rs`, `src/x/mod.rs`) is the crate root.
        "super" if reference.supers >= source.module.len() && own != "cli" => Some(name),
        _ => None,
    }?;
    (named != own && library.contains(named)).then(|| named.to_string())
}

/// Every import between top-level modules in `sources`, test code left out.
fn imports(sources: &[Source], library: &BTreeSet<String>) -> Vec<Import> {
    let mut test_modules: BTreeSet<Vec<String>> = BTreeSet::new();
    let mut code = Vec::new();
    for source in sources {
        let (kept, declared) = without_test_items(tokens(&source.text));
        for name in declared {
            let mut module = source.module.clone();
            module.push(name);
            test_modules.insert(module);
        }
        code.push((source, kept));
    }
    let mut found = Vec::new();
    for (source, kept) in code {
        if test_modules
            .iter()
            .any(|test| source.module.starts_with(test))
        {
            continue;
        }
        for reference in references(&kept) {
            if let Some(to) = target(source, &reference, library) {
                found.push(Import {
                    from: source.module[0].clone(),
                    to,
                    path: source.path.clone(),
                    line: reference.line,
                });
            }
        }
    }
    found
}

/// What breaks the layers: an import of a module not below the importer, or a module no
/// layer places.
fn violations(imports: &[Import], library: &BTreeSet<String>) -> Vec<String> {
    let positions = positions();
    let mut found: Vec<String> = library
        .iter()
        .chain(std::iter::once(&"cli".to_string()))
        .filter(|module| !positions.contains_key(module.as_str()))
        .map(|module| {
            format!("module `{module}` is in no layer: add it to LAYERS in tests/layers.rs")
        })
        .collect();
    for import in imports {
        let (Some(from), Some(to)) = (
            positions.get(import.from.as_str()),
            positions.get(import.to.as_str()),
        ) else {
            continue;
        };
        if to.0 >= from.0 {
            found.push(format!(
                "{}:{}: `{}` ({} layer) imports `{}` ({} layer): a module imports only modules \
                 listed before it in tests/layers.rs; move what both need down, or pass it in",
                import.path, import.line, import.from, from.1, import.to, to.1
            ));
        }
    }
    found
}

fn crate_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The library's top-level modules, as `src/lib.rs` declares them.
fn library_modules() -> BTreeSet<String> {
    let lib = fs::read_to_string(crate_root().join("src/lib.rs")).unwrap();
    let (code, _) = without_test_items(tokens(&lib));
    code.windows(2)
        .filter_map(|pair| match (&pair[0].0, &pair[1].0) {
            (Token::Ident(word), Token::Ident(name)) if word == "mod" => Some(name.clone()),
            _ => None,
        })
        .collect()
}

/// Every source of the crate but `lib.rs` and `main.rs`, which only declare modules.
fn crate_sources() -> Vec<Source> {
    read_tree(&crate_root().join("src"), &[])
        .into_iter()
        .filter(|source| source.module != ["lib"] && source.module != ["main"])
        .collect()
}

#[test]
fn modules_import_only_from_layers_below() {
    let library = library_modules();
    // Guard against checking nothing, should the sources move.
    assert!(library.len() > 20, "{library:?}");
    let sources = crate_sources();
    let imports = imports(&sources, &library);
    assert!(imports.len() > 100, "only {} imports found", imports.len());
    for layer in LAYERS {
        for module in layer.modules {
            assert!(
                *module == "cli" || library.contains(*module),
                "LAYERS names `{module}`, which src/lib.rs does not declare"
            );
        }
    }
    let found = violations(&imports, &library);
    assert!(found.is_empty(), "layering broken:\n{}", found.join("\n"));
}

/// The Mermaid picture and table of the layers, as ARCHITECTURE.md has them between the
/// markers: generated from [`LAYERS`] and the imports the code has.
fn architecture_block(imports: &[Import]) -> String {
    let positions = positions();
    let layer_of = |module: &str| positions.get(module).map(|(_, layer)| *layer);
    // Which layers each layer's code imports from.
    let mut uses: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for import in imports {
        if let (Some(from), Some(to)) = (layer_of(&import.from), layer_of(&import.to))
            && from != to
        {
            uses.entry(from).or_default().insert(to);
        }
    }
    let mut out = String::from("```mermaid\nflowchart TB\n");
    for layer in LAYERS.iter().rev() {
        out.push_str(&format!(
            "    subgraph {}[\"{}\"]\n",
            layer.name, layer.name
        ));
        out.push_str("        direction LR\n");
        for module in layer.modules {
            out.push_str(&format!("        {module}_mod[\"{module}\"]\n"));
        }
        out.push_str("    end\n");
    }
    for pair in LAYERS.windows(2).rev() {
        out.push_str(&format!("    {} --> {}\n", pair[1].name, pair[0].name));
    }
    out.push_str("```\n\n");
    out.push_str("| layer | modules, in order | for | imports from layers |\n");
    out.push_str("|---|---|---|---|\n");
    for layer in LAYERS.iter().rev() {
        let modules: Vec<String> = layer.modules.iter().map(|m| format!("`{m}`")).collect();
        let below: Vec<&str> = LAYERS
            .iter()
            .map(|l| l.name)
            .filter(|name| uses.get(layer.name).is_some_and(|set| set.contains(name)))
            .collect();
        out.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            layer.name,
            modules.join(" → "),
            layer.role,
            if below.is_empty() {
                "none".to_string()
            } else {
                below.join(", ")
            }
        ));
    }
    out
}

const BEGIN: &str = "<!-- layers: generated by tests/layers.rs; AIML_BLESS=1 rewrites it -->\n";
const END: &str = "<!-- end of layers -->\n";

#[test]
fn architecture_md_shows_the_layers_of_the_code() {
    let library = library_modules();
    let block = architecture_block(&imports(&crate_sources(), &library));
    let path = crate_root().join("ARCHITECTURE.md");
    let text = fs::read_to_string(&path).unwrap();
    let start = text
        .find(BEGIN)
        .expect("ARCHITECTURE.md has the layers' begin marker")
        + BEGIN.len();
    let end = start
        + text[start..]
            .find(END)
            .expect("ARCHITECTURE.md has the layers' end marker");
    if text[start..end] == block {
        return;
    }
    if std::env::var_os("AIML_BLESS").is_some_and(|v| v == "1") {
        fs::write(&path, format!("{}{block}{}", &text[..start], &text[end..])).unwrap();
        return;
    }
    panic!(
        "ARCHITECTURE.md's layers differ from the code; run `AIML_BLESS=1 cargo test --test \
         layers` and review the change. Expected:\n{block}"
    );
}

fn source(module: &[&str], text: &str) -> Source {
    Source {
        module: module.iter().map(|m| m.to_string()).collect(),
        path: format!("src/{}.rs", module.join("/")),
        text: text.to_string(),
    }
}

#[test]
fn an_import_from_a_higher_layer_is_caught() {
    let library: BTreeSet<String> = ["diagnostic", "rules", "gcp", "kinds", "plan"]
        .map(String::from)
        .into();
    let check = |sources: Vec<Source>| {
        let imports = imports(&sources, &library);
        violations(&imports, &library)
            .into_iter()
            .filter(|v| !v.contains("in no layer"))
            .collect::<Vec<_>>()
    };
    let upward = [
        (&["diagnostic"][..], "use crate::rules::doc_reference;\n"),
        (
            &["gcp", "infra"],
            "use crate::{plan::Planner, kinds::Registry};\n",
        ),
        (&["gcp"], "fn f() { super::kinds::Registry::builtin(); }\n"),
        (&["gcp", "network"], "use super::super::kinds;\n"),
        (&["plan"], "pub const R: &[crate::rules::Rule] = &[];\n"),
        (&["plan"], "#[cfg(test)]\nmod tests {}\nuse crate::kinds;\n"),
    ];
    for (module, text) in upward {
        let found = check(vec![source(module, text)]);
        assert_eq!(found.len(), 1, "{text}: {found:?}");
        assert!(
            found[0].contains("imports only modules listed before it"),
            "{found:?}"
        );
    }
    let fine = [
        (
            &["kinds"][..],
            "use crate::{gcp, plan::Planner};\nuse crate::diagnostic;\n",
        ),
        (
            &["gcp", "infra"],
            "use super::spec::X;\nuse crate::gcp::Gcp;\n",
        ),
        (
            &["plan"],
            "//! Unlike `crate::kinds`, …\nconst S: &str = \"crate::rules\";\n",
        ),
        (
            &["plan"],
            "#[cfg(test)]\nmod tests {\n    use crate::kinds::Registry;\n}\n",
        ),
        (&["plan"], "#[cfg(test)]\nuse crate::kinds::Registry;\n"),
        (
            &["plan"],
            "fn f(c: char) -> bool { c == '\"' || c == '{' }\nuse crate::diagnostic;\n",
        ),
    ];
    for (module, text) in fine {
        assert_eq!(
            check(vec![source(module, text)]),
            Vec::<String>::new(),
            "{text}"
        );
    }
    // A test module declared in its own file may import anything.
    let split = vec![
        source(&["plan"], "#[cfg(test)]\nmod tests;\n"),
        source(&["plan", "tests"], "use crate::kinds::Registry;\n"),
    ];
    assert_eq!(check(split), Vec::<String>::new());
    // The line of the import is named.
    let found = check(vec![source(
        &["plan"],
        "\n\n/* a\ncomment */\nuse crate::kinds;\n",
    )]);
    assert!(found[0].starts_with("src/plan.rs:5:"), "{found:?}");
}

#[test]
fn every_module_sits_in_a_layer() {
    let library: BTreeSet<String> = ["diagnostic", "newcomer"].map(String::from).into();
    let found = violations(&[], &library);
    assert_eq!(
        found,
        ["module `newcomer` is in no layer: add it to LAYERS in tests/layers.rs"]
    );
}

// ---- Inside `validate`: models below rules, rule families apart. ----

/// The sources of `src/validate/<name>/`, each with the name of its module there (`mod` for
/// the folder's own, the folder name for nested modules).
fn validate_part(name: &str) -> Vec<(String, Source)> {
    read_tree(&crate_root().join("src/validate").join(name), &[])
        .into_iter()
        .map(|source| {
            let module = source
                .module
                .first()
                .cloned()
                .unwrap_or_else(|| "mod".to_string());
            (module, source)
        })
        .collect()
}

/// What breaks the layering in `model` and `rules` sources; empty when the layers are kept.
/// A module of `model/` names nothing under `rules` and no `Diagnostic`: models are read before
/// any rule runs and make no findings. A rule family (a module of `rules/` other than `mod`
/// and `shared`) names no other family, whether as `rules::tpu`, `super::tpu`, `validate::tpu`
/// or through a glob of its parent (`use super::*;` outside a nested module); `shared` names
/// no family at all.
fn validate_violations(model: &[(String, Source)], rules: &[(String, Source)]) -> Vec<String> {
    let mut found = Vec::new();
    let families: BTreeSet<&str> = rules
        .iter()
        .map(|(module, _)| module.as_str())
        .filter(|module| !matches!(*module, "mod" | "shared"))
        .collect();

    for (_, source) in model {
        let tokens = tokens(&source.text);
        for (token, _) in &tokens {
            match token {
                Token::Ident(name) if name == "rules" => found.push(format!(
                    "{}: models must not name `rules`: they are read before any rule runs",
                    source.path
                )),
                Token::Ident(name) if name == "Diagnostic" => found.push(format!(
                    "{}: models must not name `Diagnostic`: findings are the rules' to make",
                    source.path
                )),
                _ => {}
            }
        }
        for reference in references(&tokens) {
            if reference.root == "validate" && reference.name == "*" {
                found.push(format!(
                    "{}: `validate::*` would bring the rules into a model",
                    source.path
                ));
            }
        }
    }

    for (module, source) in rules.iter().filter(|(module, _)| module != "mod") {
        for reference in references(&tokens(&source.text)) {
            let root = reference.root.as_str();
            let name = reference.name.as_str();
            let family = families.contains(name) && name != module;
            if family && matches!(root, "rules" | "super" | "validate") {
                found.push(format!(
                    "{}: names the rule family `{name}` (`{root}::{name}`); a rule module may use \
                     only the model, `rules::shared`, the catalog and diagnostics",
                    source.path
                ));
            } else if root == "super" && name == "*" && reference.top_level {
                found.push(format!(
                    "{}: `use super::*` at the top of a rule module imports the other families",
                    source.path
                ));
            }
        }
    }
    found
}

#[test]
fn models_are_below_rules_and_families_are_apart() {
    let model = validate_part("model");
    let rules = validate_part("rules");
    // Guard against checking nothing, should the folders move.
    let modules = |sources: &[(String, Source)]| -> BTreeSet<String> {
        sources.iter().map(|(module, _)| module.clone()).collect()
    };
    for expected in ["mod", "workload", "nodepool", "accelerator", "placement"] {
        assert!(modules(&model).contains(expected), "model/{expected}");
    }
    for expected in [
        "mod",
        "shared",
        "tpu",
        "jobset",
        "placement",
        "gpu",
        "nodepool",
        "cross",
        "kueue",
    ] {
        assert!(modules(&rules).contains(expected), "rules/{expected}");
    }
    let found = validate_violations(&model, &rules);
    assert!(found.is_empty(), "layering broken:\n{}", found.join("\n"));
}

#[test]
fn a_reintroduced_cycle_between_rule_families_is_caught() {
    let named = |module: &str, text: &str| (module.to_string(), source(&[module], text));
    let families = || {
        vec![
            named("mod", "pub(crate) mod gpu;\npub(crate) mod tpu;\n"),
            named("shared", "use crate::catalog;\n"),
            named("gpu", ""),
            named("tpu", ""),
        ]
    };
    let check = |model: Vec<(String, Source)>, extra: Vec<(String, Source)>| {
        let mut rules = families();
        rules.extend(extra);
        validate_violations(&model, &rules)
    };
    assert!(check(vec![], vec![]).is_empty());

    let broken_rules = [
        "use crate::validate::rules::tpu::bad_topology;\n",
        "use super::{gpu::unknown_gpu, shared::code_list};\n",
        "use crate::validate::rules::{\n    shared::code_list,\n    tpu,\n};\n",
        "fn f() { super::tpu::check(&[], &mut Vec::new()); }\n",
        "use crate::validate::tpu::TpuTarget;\n",
        "use super::*;\n",
    ];
    for text in broken_rules {
        assert_eq!(check(vec![], vec![named("kueue", text)]).len(), 1, "{text}");
    }
    let shared_naming_a_family = named("shared", "use super::gpu::selected_gpu;\n");
    assert_eq!(
        check(vec![], vec![shared_naming_a_family]).len(),
        1,
        "shared"
    );

    let broken_models = [
        "use crate::validate::rules::tpu::{self, TpuTarget};\n",
        "use crate::diagnostic::Diagnostic;\n",
        "use crate::validate::*;\n",
    ];
    for text in broken_models {
        let found = check(vec![named("workload", text)], vec![]);
        assert!(!found.is_empty(), "{text}");
    }

    let fine_rules = [
        "//! Unlike `rules::tpu`, this module …\nuse super::shared::code_list;\n",
        "fn f() -> &'static str { \"rules::tpu and super::gpu\" }\n",
        "fn f(c: char) -> bool { c == '\"' || c == '\\'' || c == '{' }\nuse super::shared::plural;\n",
        "use crate::validate::model::PodGroup;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
        "/* super::gpu /* nested */ rules::tpu */\nuse crate::validate::rules::shared::Locate;\n",
        "use crate::validate::rules::kueue::check;\n",
    ];
    for text in fine_rules {
        let found = check(vec![], vec![named("kueue", text)]);
        assert_eq!(found, Vec::<String>::new(), "{text}");
    }
    let fine_model = "//! Read before the rules (`rules::tpu`).\n\
                      use crate::validate::model::workload::Selection;\n\
                      const NOTE: &str = \"see rules::shared\";\n";
    let found = check(vec![named("workload", fine_model)], vec![]);
    assert_eq!(found, Vec::<String>::new());
}
