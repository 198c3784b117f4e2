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
    walk(node, &mut path.to_string(), &mut out);
    out
}

/// `path` is the field of `node`, a buffer grown and cut back around each child: leaks are
/// rare, and a string made for every field cost `validate` of a large tree a twentieth.
fn walk<'a>(node: &'a Node, path: &mut String, out: &mut Vec<Leak<'a>>) {
    use std::fmt::Write as _;
    let parent = path.len();
    match &node.value {
        Value::String(text) => {
            if let Some(what) = credential(text) {
                out.push(Leak {
                    what,
                    field: path.clone(),
                    node,
                });
            }
        }
        Value::Seq(items) => {
            for (index, item) in items.iter().enumerate() {
                // Writing into a `String` cannot fail.
                let _ = write!(path, "[{index}]");
                walk(item, path, out);
                path.truncate(parent);
            }
        }
        Value::Map(entries) => {
            for (key, value) in entries {
                if parent > 0 {
                    path.push('.');
                }
                path.push_str(&key.text);
                walk(value, path, out);
                path.truncate(parent);
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
    locate(text).map(|(_, what)| what)
}

/// Where the first credential in `text` is (a byte range) and what it is.
fn locate(text: &str) -> Option<(std::ops::Range<usize>, &'static str)> {
    // A password in a URL (`https://user:PASSWORD@host`): whatever the URL is written into is
    // committed, so the password is leaked wherever the field ends up.
    if let Some(userinfo) = url_userinfo(text)
        .into_iter()
        .find(|(range, _)| text[range.clone()].contains(':'))
    {
        return Some((userinfo.0, "a password in a URL"));
    }
    if text.len() < 16 {
        return None;
    }
    if let Some(begin) = text.find("-----BEGIN ")
        && text[begin..]
            .lines()
            .next()
            .is_some_and(|line| line.contains("PRIVATE KEY-----"))
    {
        return Some((begin..text.len(), "a private key"));
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
                return Some((start..start + token.prefix.len() + run, token.what));
            }
            from = start + token.prefix.len();
        }
    }
    None
}

/// The user information (`user`, `user:password`, a token) of every URL in `text`, as byte
/// ranges, with each URL's scheme.
fn url_userinfo(text: &str) -> Vec<(std::ops::Range<usize>, &str)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = text[from..].find("://") {
        let at = from + found;
        from = at + 3;
        let scheme_start = text[..at]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || "+-.".contains(c)))
            .map_or(0, |i| i + 1);
        if scheme_start == at {
            continue;
        }
        let rest = &text[at + 3..];
        let authority_end = rest
            .find(|c: char| "/?#\"'".contains(c) || c.is_whitespace())
            .unwrap_or(rest.len());
        if let Some(end) = rest[..authority_end].rfind('@') {
            out.push((at + 3..at + 3 + end, &text[scheme_start..at]));
        }
    }
    out
}

/// Why the git URL `url` would carry a credential into the rendered output, if it would: a
/// password or any user name of a non-SSH URL (a token is often passed as the user name), a
/// query string (tokens are passed there too), or a token of a known shape anywhere. SSH user
/// names (`git@host:path`, `ssh://git@host/path`) are not secrets.
#[must_use]
pub fn git_url_credentials(url: &str) -> Option<&'static str> {
    if let Some((range, scheme)) = url_userinfo(url).into_iter().next() {
        let ssh = scheme.to_ascii_lowercase().contains("ssh");
        if url[range.clone()].contains(':') {
            return Some("a password before `@`");
        }
        if !ssh {
            return Some("a user name or token before `@`");
        }
    }
    if !url.contains("://")
        && let Some((user, _)) = url.split_once('@')
        && user.contains(':')
    {
        return Some("a password before `@`");
    }
    if url.contains('?') {
        return Some("a query string, where tokens are passed");
    }
    credential(url)
}

/// `line` with every credential `locate` finds and the user information of every URL
/// replaced by `*`, one per character (so columns stay where they were): for showing a line
/// of input in a message without leaking what it holds.
#[must_use]
pub fn mask(line: &str) -> String {
    let mut out = line.to_string();
    let hide = |out: &mut String, range: std::ops::Range<usize>| {
        let stars = "*".repeat(out[range.clone()].chars().count());
        out.replace_range(range, &stars);
    };
    // Query strings of URLs carry tokens too (`?access_token=…`).
    let mut ranges: Vec<std::ops::Range<usize>> =
        url_userinfo(line).into_iter().map(|(r, _)| r).collect();
    let mut from = 0;
    while let Some(found) = line[from..].find("://") {
        let start = from + found + 3;
        let end = line[start..]
            .find(|c: char| "\"'".contains(c) || c.is_whitespace())
            .map_or(line.len(), |e| start + e);
        if let Some(query) = line[start..end].find('?') {
            ranges.push(start + query + 1..end);
        }
        from = end.max(start);
    }
    ranges.sort_by_key(|r| std::cmp::Reverse(r.start));
    // From the end, so that earlier ranges stay where they were.
    for range in ranges {
        hide(&mut out, range);
    }
    // Each pass hides one; what is hidden is no longer found. Bounded all the same.
    for _ in 0..64 {
        let Some((range, _)) = locate(&out) else {
            break;
        };
        hide(&mut out, range);
    }
    out
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
    fn credentials_in_urls_are_found_and_masked() {
        assert_eq!(
            credential("https://user:hunter2@example.com/p.git"),
            Some("a password in a URL")
        );
        assert_eq!(credential("ssh://git@example.com/p.git"), None);
        assert_eq!(credential("https://example.com/a:b@c"), None);
        for (url, why) in [
            (
                "https://user:tok@example.com/p.git",
                "a password before `@`",
            ),
            (
                "https://tok@example.com/p.git",
                "a user name or token before `@`",
            ),
            ("ssh://user:pass@example.com/p.git", "a password before `@`"),
            ("user:pass@example.com:p.git", "a password before `@`"),
            (
                "https://example.com/p.git?access_token=x",
                "a query string, where tokens are passed",
            ),
            (
                "https://example.com/ghp_abcdefghijklmnopqrstuvwxyz0123456789/p.git",
                "a GitHub token",
            ),
        ] {
            assert_eq!(git_url_credentials(url), Some(why), "{url}");
        }
        for url in [
            "https://github.com/acme/p.git",
            "git@github.com:acme/p.git",
            "ssh://git@example.com:2222/acme/p.git",
        ] {
            assert_eq!(git_url_credentials(url), None, "{url}");
        }
        let line = "  repo: https://me:hunter2@example.com/p.git?t=abc # ghp_abcdefghijklmnopqrstuvwxyz0123456789";
        let masked = mask(line);
        assert_eq!(masked.chars().count(), line.chars().count());
        assert!(
            !masked.contains("hunter2")
                && !masked.contains("ghp_a")
                && !masked.contains("me:")
                && !masked.contains("t=abc"),
            "{masked}"
        );
        assert!(masked.contains("@example.com/p.git"), "{masked}");
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
