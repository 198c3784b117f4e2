//! Reading the crate's own Rust sources for the tests that keep its shape (`tests/layers.rs`):
//! a tokenizer that leaves comments and literals out, the paths code names, and the items that
//! only tests compile.
//!
//! Only code counts: comments, doc comments and string literals may name anything.

use std::fs;
use std::path::{Path, PathBuf};

/// A token of Rust code: enough to follow paths such as `super::{gpu::x, shared::y}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Token {
    Ident(String),
    /// `::`.
    PathSep,
    Punct(char),
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The tokens of `source` with their lines, without comments and with string and character
/// literals left out.
pub fn tokens(source: &str) -> Vec<(Token, usize)> {
    let chars: Vec<char> = source.chars().collect();
    let at = |i: usize| chars.get(i).copied();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    // Counts the newlines a skipped stretch held, so lines stay right after literals.
    let skip_to = |from: usize, to: usize, line: &mut usize| {
        *line += chars[from..to.min(chars.len())]
            .iter()
            .filter(|c| **c == '\n')
            .count();
        to
    };
    while let Some(c) = at(i) {
        let next = at(i + 1);
        let after_ident = i > 0 && is_ident_char(chars[i - 1]);
        if c == '/' && next == Some('/') {
            while at(i).is_some_and(|c| c != '\n') {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            // Block comments nest.
            let (start, mut j, mut depth) = (i, i, 0);
            while let Some(c) = at(j) {
                if c == '/' && at(j + 1) == Some('*') {
                    depth += 1;
                    j += 2;
                } else if c == '*' && at(j + 1) == Some('/') {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            i = skip_to(start, j, &mut line);
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
                i = skip_to(i, j, &mut line);
            } else {
                out.push((Token::Ident("r".to_string()), line));
                i += 1;
            }
        } else if c == '"' {
            let mut j = i + 1;
            while let Some(c) = at(j) {
                j += if c == '\\' { 2 } else { 1 };
                if c == '"' {
                    break;
                }
            }
            i = skip_to(i, j, &mut line);
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
            out.push((Token::Ident(chars[start..i].iter().collect()), line));
        } else if c == ':' && next == Some(':') {
            out.push((Token::PathSep, line));
            i += 2;
        } else {
            if c == '\n' {
                line += 1;
            } else if !c.is_whitespace() {
                out.push((Token::Punct(c), line));
            }
            i += 1;
        }
    }
    out
}

/// A path segment that follows `root::`, as code names it.
#[derive(Debug)]
pub struct Reference {
    /// `crate`, `super`, `rules`, …; `super::super` is `super` twice.
    pub root: String,
    /// How many `super::` led to the name (0 for other roots).
    pub supers: usize,
    /// The segment after the root: a module name, or `*`.
    pub name: String,
    /// Whether the reference is outside every brace, where `super` is the parent module.
    pub top_level: bool,
    /// Its line.
    pub line: usize,
}

/// Every `root::name` in the tokens, with `root::{a::x, b}` giving `a` and `b`; `crate::a::b`
/// gives `crate`/`a` and `a`/`b`.
pub fn references(tokens: &[(Token, usize)]) -> Vec<Reference> {
    let token = |i: usize| tokens.get(i).map(|(token, _)| token);
    let mut found = Vec::new();
    let mut depth = 0_usize;
    for (index, (current, line)) in tokens.iter().enumerate() {
        match current {
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => depth = depth.saturating_sub(1),
            Token::Ident(root) if token(index + 1) == Some(&Token::PathSep) => {
                // `super::super::x`: the name is after the last `super`.
                let mut at = index;
                let mut supers = 0;
                while root == "super"
                    && token(at) == Some(&Token::Ident("super".into()))
                    && token(at + 1) == Some(&Token::PathSep)
                {
                    supers += 1;
                    at += 2;
                }
                let after = if supers == 0 { index + 2 } else { at };
                let mut names = Vec::new();
                match token(after) {
                    Some(Token::Ident(name)) => names.push(name.clone()),
                    Some(Token::Punct('*')) => names.push("*".to_string()),
                    Some(Token::Punct('{')) => {
                        // The first segment of each item of the group.
                        let mut inner = 0_usize;
                        let mut item_start = true;
                        for (token, _) in &tokens[after + 1..] {
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
                    supers,
                    name,
                    top_level: depth == 0,
                    line: *line,
                }));
            }
            _ => {}
        }
    }
    found
}

/// The tokens without the items only tests compile (`#[cfg(test)]` on a module, function,
/// `use` or anything else), and the names of the modules declared that way in another file
/// (`#[cfg(test)] mod tests;`), whose files are test code too.
pub fn without_test_items(tokens: Vec<(Token, usize)>) -> (Vec<(Token, usize)>, Vec<String>) {
    let is = |i: usize, expected: &Token| tokens.get(i).is_some_and(|(t, _)| t == expected);
    let punct = Token::Punct;
    let ident = |s: &str| Token::Ident(s.to_string());
    let mut kept = Vec::new();
    let mut test_modules = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let cfg_test = is(i, &punct('#'))
            && is(i + 1, &punct('['))
            && is(i + 2, &ident("cfg"))
            && is(i + 3, &punct('('))
            && is(i + 4, &ident("test"))
            && is(i + 5, &punct(')'))
            && is(i + 6, &punct(']'));
        if !cfg_test {
            kept.push(tokens[i].clone());
            i += 1;
            continue;
        }
        // Skip the item: up to a `;` or `,` outside brackets, to the brace that closes its
        // body, or to the end of the list it stands in (a field, an argument).
        let mut j = i + 7;
        let mut depth = 0_usize;
        let mut declared = None;
        while let Some((token, _)) = tokens.get(j) {
            match token {
                Token::Ident(word) if word == "mod" && depth == 0 => {
                    if let Some((Token::Ident(name), _)) = tokens.get(j + 1) {
                        declared = Some(name.clone());
                    }
                }
                Token::Punct('{' | '(' | '[') => depth += 1,
                Token::Punct('}' | ')' | ']') if depth == 0 => {
                    j -= 1;
                    break;
                }
                Token::Punct(c @ ('}' | ')' | ']')) => {
                    depth -= 1;
                    if depth == 0 && *c == '}' {
                        declared = None;
                        break;
                    }
                }
                Token::Punct(';' | ',') if depth == 0 => break,
                _ => {}
            }
            j += 1;
        }
        test_modules.extend(declared);
        i = j + 1;
    }
    (kept, test_modules)
}

/// One source file: the module it belongs to, its path for messages, and its text.
pub struct Source {
    /// The module path inside the crate (`["gcp", "infra"]`), `[]` for `lib.rs`/`main.rs`.
    pub module: Vec<String>,
    /// Relative to the crate root, with `/`.
    pub path: String,
    /// Its text.
    pub text: String,
}

/// Every `.rs` file under `folder`, nested folders included, sorted, with its module path
/// below `prefix` (`mod.rs` is its folder's module).
pub fn read_tree(folder: &Path, prefix: &[String]) -> Vec<Source> {
    let mut out = Vec::new();
    let mut entries: Vec<PathBuf> = fs::read_dir(folder)
        .unwrap_or_else(|error| panic!("{}: {error}", folder.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
        let mut module = prefix.to_vec();
        if path.is_dir() {
            module.push(stem);
            out.extend(read_tree(&path, &module));
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            if stem != "mod" {
                module.push(stem);
            }
            out.push(Source {
                module,
                path: path
                    .strip_prefix(env!("CARGO_MANIFEST_DIR"))
                    .unwrap_or(&path)
                    .display()
                    .to_string(),
                text: fs::read_to_string(&path).unwrap(),
            });
        }
    }
    out
}
