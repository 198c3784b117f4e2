//! Credentials written where a reference belongs.
//!
//! Blueprints and rendered objects are committed to git and reviewed in pull requests, so a
//! token in them is a leaked token. Blueprints reference secrets (a Kubernetes Secret, a Secret
//! Manager secret); this module recognises the credentials people paste by mistake, by the
//! shapes their issuers give them (a Hugging Face token is `hf_` and 34 letters and digits), so
//! that both a blueprint ([`crate::plan`]) and any manifest ([`crate::validate`]) holding one
//! is refused under the rule [`RULE`]. The shapes are narrow on purpose: an image digest, a
//! hash or a long name never matches.

use crate::yaml::{Node, Value};

/// The rule that refuses credentials in blueprints and manifests.
pub const RULE: &str = "secret-literal";

/// A credential found in a document.
#[derive(Clone, Debug, PartialEq)]
pub struct Leak<'a> {
    /// What it looks like, e.g. "a Hugging Face token".
    pub what: &'static str,
    /// Dotted path of the field holding it.
    pub field: String,
    /// The node holding it.
    pub node: &'a Node,
}

/// Every credential in the string values under `node` (whose path is `path`), in document
/// order.
#[must_use]
pub fn find<'a>(node: &'a Node, path: &str) -> Vec<Leak<'a>> {
    let mut out = Vec::new();
    walk(node, path, &mut out);
    out
}

fn walk<'a>(node: &'a Node, path: &str, out: &mut Vec<Leak<'a>>) {
    match &node.value {
        Value::String(text) => {
            if let Some(what) = credential(text) {
                out.push(Leak {
                    what,
                    field: path.to_string(),
                    node,
                });
            }
        }
        Value::Seq(items) => {
            for (index, item) in items.iter().enumerate() {
                walk(item, &format!("{path}[{index}]"), out);
            }
        }
        Value::Map(entries) => {
            for (key, value) in entries {
                let child = if path.is_empty() {
                    key.text.clone()
                } else {
                    format!("{path}.{}", key.text)
                };
                walk(value, &child, out);
            }
        }
        Value::Null | Value::Bool(_) | Value::Int(_) | Value::Float(_) => {}
    }
}

/// Tokens: a prefix at a word boundary, then at least `min` characters of `alphabet`.
struct Token {
    what: &'static str,
    prefix: &'static str,
    min: usize,
    alphabet: fn(u8) -> bool,
}

fn alphanumeric(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

fn upper_alphanumeric(b: u8) -> bool {
    b.is_ascii_uppercase() || b.is_ascii_digit()
}

fn url_safe(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

const TOKENS: &[Token] = &[
    Token {
        what: "a Hugging Face token",
        prefix: "hf_",
        min: 30,
        alphabet: alphanumeric,
    },
    Token {
        what: "a Google API key",
        prefix: "AIza",
        min: 35,
        alphabet: url_safe,
    },
    Token {
        what: "a GitHub token",
        prefix: "ghp_",
        min: 36,
        alphabet: alphanumeric,
    },
    Token {
        what: "a GitHub token",
        prefix: "gho_",
        min: 36,
        alphabet: alphanumeric,
    },
    Token {
        what: "a GitHub token",
        prefix: "ghs_",
        min: 36,
        alphabet: alphanumeric,
    },
    Token {
        what: "a GitHub token",
        prefix: "github_pat_",
        min: 40,
        alphabet: url_safe,
    },
    Token {
        what: "an AWS access key",
        prefix: "AKIA",
        min: 16,
        alphabet: upper_alphanumeric,
    },
    Token {
        what: "an OpenAI API key",
        prefix: "sk-",
        min: 40,
        alphabet: url_safe,
    },
    Token {
        what: "a Slack token",
        prefix: "xoxb-",
        min: 20,
        alphabet: url_safe,
    },
    Token {
        what: "a Slack token",
        prefix: "xoxp-",
        min: 20,
        alphabet: url_safe,
    },
];

/// What credential `text` holds, if any.
#[must_use]
pub fn credential(text: &str) -> Option<&'static str> {
    if text.len() < 16 {
        return None;
    }
    if let Some(begin) = text.find("-----BEGIN ")
        && text[begin..]
            .lines()
            .next()
            .is_some_and(|line| line.contains("PRIVATE KEY-----"))
    {
        return Some("a private key");
    }
    let bytes = text.as_bytes();
    for token in TOKENS {
        let mut from = 0;
        while let Some(found) = text[from..].find(token.prefix) {
            let start = from + found;
            let at_boundary = start == 0 || !url_safe(bytes[start - 1]);
            let body = &bytes[start + token.prefix.len()..];
            let run = body.iter().take_while(|b| (token.alphabet)(**b)).count();
            if at_boundary && run >= token.min {
                return Some(token.what);
            }
            from = start + token.prefix.len();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_the_credentials_people_paste() {
        for (text, what) in [
            (
                "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
                "a Hugging Face token",
            ),
            (
                "Bearer hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
                "a Hugging Face token",
            ),
            (
                "AIzaSyA-1234567890abcdefghijklmnopqrstu",
                "a Google API key",
            ),
            ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "a GitHub token"),
            ("AKIAIOSFODNN7EXAMPLE", "an AWS access key"),
            (
                "-----BEGIN RSA PRIVATE KEY-----\nMIIE...\n-----END RSA PRIVATE KEY-----\n",
                "a private key",
            ),
            (
                "{\"private_key\": \"-----BEGIN PRIVATE KEY-----\\nMIIE\"}",
                "a private key",
            ),
        ] {
            assert_eq!(credential(text), Some(what), "{text}");
        }
    }

    #[test]
    fn leaves_names_hashes_and_references_alone() {
        for text in [
            "hf-token",
            "hf_token",
            "HF_TOKEN",
            "projects/my-project/secrets/hf-token/versions/latest",
            "us-docker.pkg.dev/p/r/image@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "meta-llama/Llama-2-70b-hf_with_a_long_suffix_that_is_not_a_token",
            "disk-0123456789abcdef0123456789abcdef0123456789abcdef",
            "my_hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
            "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
            "AKIAshort",
        ] {
            assert_eq!(credential(text), None, "{text}");
        }
    }

    #[test]
    fn finds_every_leak_with_its_field() {
        let documents = crate::yaml::parse_documents(
            "spec:\n  env:\n  - name: HF_TOKEN\n    value: hf_abcdefghijklmnopqrstuvwxyzABCDEFGH\n  other: fine\n",
        )
        .unwrap();
        let leaks = find(&documents[0], "");
        assert_eq!(leaks.len(), 1);
        assert_eq!(leaks[0].field, "spec.env[0].value");
        assert_eq!(leaks[0].node.span.line, 4);
    }
}
