//! The CEL environment of the evaluator: the standard library and the strings extension
//! (which Kubernetes also includes: k8s.io/apiserver, pkg/cel/environment/base.go,
//! `ext.Strings`), plus the Kubernetes libraries the vendored CRDs call, written here:
//! URLs (k8s.io/apiserver, pkg/cel/library/urls.go: `isURL`, `url`, `getScheme`,
//! `getHost`, `getHostname`, `getPort`, `getEscapedPath`) and regular expressions
//! (pkg/cel/library/regex.go: `find`, `findAll`). Other Kubernetes functions (quantity,
//! IP and CIDR, format, semver, authz, lists' `sum` and `isSorted`) are not: a rule that
//! reaches one is reported as not evaluated.

use std::sync::{Arc, OnceLock};

use cel::extractors::This;
use cel::{Context, Env, ExecutionError, Value};

/// Functions whose errors come from the data (a string that is no URL): the server's
/// evaluation errs the same way and refuses the object.
pub(crate) const K8S_FUNCTIONS: &[&str] = &[
    "url",
    "getScheme",
    "getHost",
    "getHostname",
    "getPort",
    "getEscapedPath",
    "find",
    "findAll",
    "duration",
    "timestamp",
    "int",
    "uint",
    "double",
    "charAt",
    "indexOf",
    "lastIndexOf",
    "substring",
];

/// The shared environment: rules are compiled with it.
pub(crate) fn env() -> &'static Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Env::stdlib();
        // The strings extension declares its overloads once; it cannot fail on a fresh Env.
        let _ = env.add_extension(cel::extensions::strings);
        Arc::new(env)
    })
}

/// The root context with the Kubernetes functions; each evaluation opens a scope on it.
pub(crate) fn context() -> &'static Context<'static, 'static> {
    static CONTEXT: OnceLock<Context<'static, 'static>> = OnceLock::new();
    CONTEXT.get_or_init(|| {
        let mut context = Context::with_env(Arc::clone(env()));
        // None of these names is a standard or strings-extension overload, so none conflicts.
        let _ = context.add_function("isURL", is_url);
        let _ = context.add_function("url", url);
        let _ = context.add_function("getScheme", get_scheme);
        let _ = context.add_function("getHost", get_host);
        let _ = context.add_function("getHostname", get_hostname);
        let _ = context.add_function("getPort", get_port);
        let _ = context.add_function("getEscapedPath", get_escaped_path);
        let _ = context.add_function("find", find);
        let _ = context.add_function("findAll", find_all);
        context
    })
}

fn is_url(s: Arc<String>) -> bool {
    parse_request_uri(&s).is_ok()
}

/// `url(s)`: the string itself stands for the URL (each getter parses it again); an
/// invalid one errs, as the server's does.
fn url(s: Arc<String>) -> Result<Value, ExecutionError> {
    parse_request_uri(&s).map_err(|e| ExecutionError::function_error("url", e))?;
    Ok(Value::String(s))
}

fn get_scheme(This(s): This<Arc<String>>) -> Result<Value, ExecutionError> {
    part(&s, "getScheme", |u| u.scheme)
}

fn get_host(This(s): This<Arc<String>>) -> Result<Value, ExecutionError> {
    part(&s, "getHost", |u| u.host)
}

fn get_hostname(This(s): This<Arc<String>>) -> Result<Value, ExecutionError> {
    part(&s, "getHostname", |u| u.hostname)
}

fn get_port(This(s): This<Arc<String>>) -> Result<Value, ExecutionError> {
    part(&s, "getPort", |u| u.port)
}

fn get_escaped_path(This(s): This<Arc<String>>) -> Result<Value, ExecutionError> {
    part(&s, "getEscapedPath", |u| u.path)
}

/// The first match of a regular expression, or `""` (regex.go: `find`).
fn find(This(s): This<Arc<String>>, re: Arc<String>) -> Result<Value, ExecutionError> {
    let re = regex(&re, "find")?;
    Ok(Value::from(
        re.find(&s)
            .map(|m| m.as_str().to_owned())
            .unwrap_or_default(),
    ))
}

/// Every match (regex.go: `findAll`).
fn find_all(This(s): This<Arc<String>>, re: Arc<String>) -> Result<Value, ExecutionError> {
    let re = regex(&re, "findAll")?;
    let all: Vec<Value> = re
        .find_iter(&s)
        .map(|m| Value::from(m.as_str().to_owned()))
        .collect();
    Ok(Value::List(Arc::new(all)))
}

fn regex(pattern: &str, function: &str) -> Result<regex::Regex, ExecutionError> {
    regex::Regex::new(pattern).map_err(|e| ExecutionError::function_error(function, e))
}

fn part(s: &str, function: &str, pick: impl Fn(Url<'_>) -> &str) -> Result<Value, ExecutionError> {
    parse_request_uri(s)
        .map(|u| Value::from(pick(u).to_owned()))
        .map_err(|e| ExecutionError::function_error(function, e))
}

/// The parts of a URL the library returns.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Url<'s> {
    pub(crate) scheme: &'s str,
    /// `host[:port]`, as written.
    pub(crate) host: &'s str,
    /// The host without port or IPv6 brackets.
    pub(crate) hostname: &'s str,
    pub(crate) port: &'s str,
    /// The path as written (escaped).
    pub(crate) path: &'s str,
}

/// Go's `url.ParseRequestURI`, which the Kubernetes URL library uses (net/url, url.go:
/// `parse` with `viaRequest`): an absolute URL or an absolute path, no fragment split, no
/// control characters, a valid scheme, a host of allowed characters and a numeric port.
pub(crate) fn parse_request_uri(raw: &str) -> Result<Url<'_>, String> {
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err("net/url: invalid control character in URL".to_owned());
    }
    if raw.is_empty() {
        return Err("empty url".to_owned());
    }
    let mut url = Url::default();
    if raw == "*" {
        url.path = raw;
        return Ok(url);
    }
    let (scheme, mut rest) = split_scheme(raw)?;
    url.scheme = scheme;
    if let Some((before, _query)) = rest.split_once('?') {
        rest = before;
    }
    if !rest.starts_with('/') {
        if scheme.is_empty() {
            return Err("invalid URI for request".to_owned());
        }
        return Ok(url); // opaque, as `mailto:x`
    }
    if !scheme.is_empty() && rest.starts_with("//") && !rest.starts_with("///") {
        let authority = &rest[2..];
        let end = authority.find('/').unwrap_or(authority.len());
        let (auth, path) = authority.split_at(end);
        let host = auth.rsplit_once('@').map_or(auth, |(_, host)| host);
        check_host(host)?;
        url.host = host;
        let (hostname, port) = split_host_port(host);
        url.hostname = hostname;
        url.port = port;
        rest = path;
    }
    check_escapes(rest)?;
    url.path = rest;
    Ok(url)
}

fn split_scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            '0'..='9' | '+' | '-' | '.' => return Ok(("", raw)),
            ':' if i == 0 => return Err("missing protocol scheme".to_owned()),
            ':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

fn check_host(host: &str) -> Result<(), String> {
    let (name, port) = if let Some(rest) = host.strip_prefix('[') {
        let Some(end) = rest.find(']') else {
            return Err("missing ']' in host".to_owned());
        };
        (&rest[..end], &rest[end + 1..])
    } else {
        match host.rfind(':') {
            Some(i) => (&host[..i], &host[i..]),
            None => (host, ""),
        }
    };
    let port_ok =
        port.is_empty() || (port.starts_with(':') && port[1..].bytes().all(|b| b.is_ascii_digit()));
    if !port_ok {
        return Err(format!("invalid port {port:?} after host"));
    }
    // Characters Go's `shouldEscape(c, encodeHost)` rejects in a host.
    if let Some(c) = name.chars().find(|c| {
        c.is_ascii() && !(c.is_ascii_alphanumeric() || "-_.~!$&'()*+,;=:[]<>\"%".contains(*c))
    }) {
        return Err(format!("invalid character {c:?} in host name"));
    }
    check_escapes(name)
}

fn split_host_port(host: &str) -> (&str, &str) {
    if let Some(rest) = host.strip_prefix('[') {
        let end = rest.find(']').unwrap_or(rest.len());
        let port = rest[end..].strip_prefix("]:").unwrap_or("");
        return (&rest[..end], port);
    }
    match host.rsplit_once(':') {
        Some((name, port)) => (name, port),
        None => (host, ""),
    }
}

/// Every `%` starts a two-digit hex escape (Go's `unescape`).
fn check_escapes(s: &str) -> Result<(), String> {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let ok = bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
            if !ok {
                let end = (i + 3).min(s.len());
                return Err(format!(
                    "invalid URL escape {:?}",
                    s.get(i..end).unwrap_or("%")
                ));
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    Ok(())
}
