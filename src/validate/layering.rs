//! Test that keeps the validation layers apart, by reading the sources of
//! `src/validate/model/` and `src/validate/rules/`.
//!
//! - A module of `model/` names nothing under `rules` and no `Diagnostic`: models are read
//!   before any rule runs and make no findings.
//! - A rule family (a module of `rules/` other than `mod.rs` and `shared`) names no other
//!   family, whether as `rules::tpu`, `super::tpu`, `validate::tpu` or through a glob of its
//!   parent (`use super::*;` outside a nested module). `shared` names no family at all.
//!
//! Only code counts: comments, doc comments and string literals may name anything. The test
//! owns no rule and changes no behaviour; it fails when someone reintroduces the cycle that
//! once ran between the workload, TPU, GPU, node pool and Kueue modules.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// A token of Rust code: enough to follow paths such as `super::{gpu::x, shared::y}`.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Ident(String),
    /// `::`.
    PathSep,
    Punct(char),
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The tokens of `source`, without comments and with string and character literals left out.
fn tokens(source: &str) -> Vec<Token> {
    let chars: Vec<char> = source.chars().collect();
    let at = |i: usize| chars.get(i).copied();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(c) = at(i) {
        let next = at(i + 1);
        let after_ident = i > 0 && is_ident_char(chars[i - 1]);
        if c == '/' && next == Some('/') {
            while at(i).is_some_and(|c| c != '\n') {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            // Block comments nest.
            let mut depth = 0;
            while let Some(c) = at(i) {
                if c == '/' && at(i + 1) == Some('*') {
                    depth += 1;
                    i += 2;
                } else if c == '*' && at(i + 1) == Some('/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == 'r' && !after_ident && matches!(next, Some('"' | '#')) {
            // Raw string: `r"…"` or `r#"…"#`.
            let mut j = i + 1;
            while at(j) == Some('#') {
                j += 1;
            }
            if at(j) == Some('"') {
                let hashes = j - i - 1;
                j += 1;
                while let Some(c) = at(j) {
                    j += 1;
                    if c == '"' && (0..hashes).all(|k| at(j + k) == Some('#')) {
                        j += hashes;
                        break;
                    }
                }
                i = j;
            } else {
                out.push(Token::Ident("r".to_string()));
                i += 1;
            }
        } else if c == '"' {
            i += 1;
            while let Some(c) = at(i) {
                i += if c == '\\' { 2 } else { 1 };
                if c == '"' {
                    break;
                }
            }
        } else if c == '\'' && next == Some('\\') {
            // An escaped character literal: `'\n'`, `'\''`, `'\u{…}'`.
            i += 3;
            while at(i).is_some_and(|c| c != '\'') {
                i += 1;
            }
            i += 1;
        } else if c == '\'' && at(i + 2) == Some('\'') {
            // A character literal; any other `'` starts a lifetime, read as punctuation.
            i += 3;
        } else if is_ident_char(c) {
            let start = i;
            while at(i).is_some_and(is_ident_char) {
                i += 1;
            }
            out.push(Token::Ident(chars[start..i].iter().collect()));
        } else if c == ':' && next == Some(':') {
            out.push(Token::PathSep);
            i += 2;
        } else {
            if !c.is_whitespace() {
                out.push(Token::Punct(c));
            }
            i += 1;
        }
    }
    out
}

/// A path segment that follows `root::`, as code names it.
#[derive(Debug)]
struct Reference {
    /// `rules`, `super`, `validate`, …
    root: String,
    /// The segment after it: a module name, or `*`.
    name: String,
    /// Whether the reference is outside every brace, where `super` is the parent module.
    top_level: bool,
}

/// Every `root::name` in the tokens, with `root::{a::x, b}` giving `a` and `b`.
fn references(tokens: &[Token]) -> Vec<Reference> {
    let mut found = Vec::new();
    let mut depth = 0_usize;
    for (index, token) in tokens.iter().enumerate() {
        match token {
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => depth = depth.saturating_sub(1),
            Token::Ident(root) if tokens.get(index + 1) == Some(&Token::PathSep) => {
                let mut names = Vec::new();
                match tokens.get(index + 2) {
                    Some(Token::Ident(name)) => names.push(name.clone()),
                    Some(Token::Punct('*')) => names.push("*".to_string()),
                    Some(Token::Punct('{')) => {
                        // The first segment of each item of the group.
                        let mut inner = 0_usize;
                        let mut item_start = true;
                        for token in &tokens[index + 3..] {
                            match token {
                                Token::Punct('{') => inner += 1,
                                Token::Punct('}') if inner == 0 => break,
                                Token::Punct('}') => inner -= 1,
                                Token::Punct(',') if inner == 0 => {
                                    item_start = true;
                                    continue;
                                }
                                Token::Ident(name) if item_start => names.push(name.clone()),
                                Token::Punct('*') if item_start => names.push("*".to_string()),
                                _ => {}
                            }
                            item_start = false;
                        }
                    }
                    _ => {}
                }
                found.extend(names.into_iter().map(|name| Reference {
                    root: root.clone(),
                    name,
                    top_level: depth == 0,
                }));
            }
            _ => {}
        }
    }
    found
}

/// One source file of a layer: the module it belongs to (its file stem, or the folder under
/// the layer for nested modules), its path for messages, and its text.
struct Source {
    module: String,
    path: String,
    text: String,
}

/// What breaks the layering in `model` and `rules` sources; empty when the layers are kept.
fn violations(model: &[Source], rules: &[Source]) -> Vec<String> {
    let mut found = Vec::new();
    let families: BTreeSet<&str> = rules
        .iter()
        .map(|source| source.module.as_str())
        .filter(|module| !matches!(*module, "mod" | "shared"))
        .collect();

    for source in model {
        let tokens = tokens(&source.text);
        for token in &tokens {
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

    for source in rules.iter().filter(|source| source.module != "mod") {
        for reference in references(&tokens(&source.text)) {
            let root = reference.root.as_str();
            let name = reference.name.as_str();
            let family = families.contains(name) && name != source.module;
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

/// Every `.rs` file under `folder`, nested folders included, as [`Source`]s of `module`.
fn read_tree(folder: &Path, module: Option<&str>, out: &mut Vec<Source>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(folder)
        .unwrap_or_else(|error| panic!("{}: {error}", folder.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
        if path.is_dir() {
            read_tree(&path, Some(module.unwrap_or(&stem)), out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(Source {
                module: module.map_or(stem, str::to_string),
                path: path
                    .strip_prefix(env!("CARGO_MANIFEST_DIR"))
                    .unwrap_or(&path)
                    .display()
                    .to_string(),
                text: fs::read_to_string(&path).unwrap(),
            });
        }
    }
}

fn layer(name: &str) -> Vec<Source> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/validate")
        .join(name);
    let mut sources = Vec::new();
    read_tree(&folder, None, &mut sources);
    sources
}

#[test]
fn models_are_below_rules_and_families_are_apart() {
    let model = layer("model");
    let rules = layer("rules");
    // Guard against checking nothing, should the folders move.
    let modules = |sources: &[Source]| -> BTreeSet<String> {
        sources.iter().map(|source| source.module.clone()).collect()
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
    let found = violations(&model, &rules);
    assert!(found.is_empty(), "layering broken:\n{}", found.join("\n"));
}

#[test]
fn a_reintroduced_cycle_is_caught() {
    let source = |module: &str, text: &str| Source {
        module: module.to_string(),
        path: format!("{module}.rs"),
        text: text.to_string(),
    };
    let families = || {
        vec![
            source("mod", "pub(crate) mod gpu;\npub(crate) mod tpu;\n"),
            source("shared", "use crate::catalog;\n"),
            source("gpu", ""),
            source("tpu", ""),
        ]
    };
    let check = |model: Vec<Source>, extra: Vec<Source>| {
        let mut rules = families();
        rules.extend(extra);
        violations(&model, &rules)
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
        assert_eq!(
            check(vec![], vec![source("kueue", text)]).len(),
            1,
            "{text}"
        );
    }
    let shared_naming_a_family = source("shared", "use super::gpu::selected_gpu;\n");
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
        let found = check(vec![source("workload", text)], vec![]);
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
        let found = check(vec![], vec![source("kueue", text)]);
        assert_eq!(found, Vec::<String>::new(), "{text}");
    }
    let fine_model = "//! Read before the rules (`rules::tpu`).\n\
                      use crate::validate::model::workload::Selection;\n\
                      const NOTE: &str = \"see rules::shared\";\n";
    let found = check(vec![source("workload", fine_model)], vec![]);
    assert_eq!(found, Vec::<String>::new());
}
