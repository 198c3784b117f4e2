//! Resource limits: how much the tool reads, how long it waits, how many things it counts.
//!
//! Every limit has a default that real repositories stay far below and an `AIML_*` environment
//! variable to change it (the README lists them). A value that does not parse is an error
//! naming the variable, never a silent fallback.

use std::time::Duration;

/// Largest input file read (blueprints, manifests): `AIML_MAX_FILE_SIZE`, bytes with an
/// optional `K`, `M` or `G` suffix. Default 64 MiB.
pub const MAX_FILE_SIZE_VAR: &str = "AIML_MAX_FILE_SIZE";
const DEFAULT_MAX_FILE_SIZE: u64 = 64 * 1024 * 1024;

/// How long one kustomize build may take: `AIML_KUSTOMIZE_TIMEOUT`, seconds. Default 120.
pub const KUSTOMIZE_TIMEOUT_VAR: &str = "AIML_KUSTOMIZE_TIMEOUT";
const DEFAULT_KUSTOMIZE_TIMEOUT: Duration = Duration::from_secs(120);

/// How long a render waits for another render of the same repository to finish:
/// `AIML_LOCK_TIMEOUT`, seconds. Default 60.
pub const LOCK_TIMEOUT_VAR: &str = "AIML_LOCK_TIMEOUT";
const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(60);

/// Nodes `kubectl aiml graph` draws before it refuses (a bigger picture is unreadable):
/// `AIML_MAX_GRAPH_NODES`. Default 2,000.
pub const MAX_GRAPH_NODES_VAR: &str = "AIML_MAX_GRAPH_NODES";
const DEFAULT_MAX_GRAPH_NODES: usize = 2_000;

/// Live objects `status` and `diff --live` hold from the clusters before they refuse (a bound
/// on memory; a 1,000-blueprint fleet has about 50,000): `AIML_MAX_LIVE_OBJECTS`. Default
/// 1,000,000.
pub const MAX_LIVE_OBJECTS_VAR: &str = "AIML_MAX_LIVE_OBJECTS";
const DEFAULT_MAX_LIVE_OBJECTS: usize = 1_000_000;

/// YAML documents in one file. Files are also bounded by size, so this only stops separator
/// storms (`---` repeated millions of times).
pub const MAX_DOCUMENTS: usize = 100_000;
/// YAML nodes (mappings, sequences, scalars) in one file.
pub const MAX_NODES: usize = 20_000_000;
/// Nodes in a Config Connector node pool, per zone (GKE's limit).
pub const MAX_NODES_PER_POOL: u32 = 1_000;

/// An `AIML_*` variable that does not parse.
#[derive(Debug, thiserror::Error)]
#[error("`{variable}={value}` is not valid: expected {expected}")]
pub struct LimitError {
    /// The variable.
    pub variable: &'static str,
    /// Its value.
    pub value: String,
    /// What it should be.
    pub expected: &'static str,
}

/// The limits of this run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest input file, bytes.
    pub max_file_size: u64,
    /// Longest kustomize build.
    pub kustomize_timeout: Duration,
    /// Longest wait for the repository lock.
    pub lock_timeout: Duration,
    /// Most nodes `graph` draws.
    pub max_graph_nodes: usize,
    /// Most live objects held from the clusters.
    pub max_live_objects: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            kustomize_timeout: DEFAULT_KUSTOMIZE_TIMEOUT,
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
            max_graph_nodes: DEFAULT_MAX_GRAPH_NODES,
            max_live_objects: DEFAULT_MAX_LIVE_OBJECTS,
        }
    }
}

impl Limits {
    /// The defaults, changed by the `AIML_*` variables that are set.
    pub fn from_env() -> Result<Self, LimitError> {
        let mut limits = Self::default();
        if let Some(value) = var(MAX_FILE_SIZE_VAR) {
            limits.max_file_size = parse_size(&value).ok_or(LimitError {
                variable: MAX_FILE_SIZE_VAR,
                value,
                expected: "a size in bytes such as `1048576`, `512K`, `64M` or `1G`",
            })?;
        }
        for (variable, slot) in [
            (KUSTOMIZE_TIMEOUT_VAR, &mut limits.kustomize_timeout),
            (LOCK_TIMEOUT_VAR, &mut limits.lock_timeout),
        ] {
            if let Some(value) = var(variable) {
                *slot = parse_seconds(&value).ok_or(LimitError {
                    variable,
                    value,
                    expected: "a number of seconds such as `120` or `0.5`",
                })?;
            }
        }
        for (variable, slot, expected) in [
            (
                MAX_GRAPH_NODES_VAR,
                &mut limits.max_graph_nodes,
                "a whole number above zero such as `2000`",
            ),
            (
                MAX_LIVE_OBJECTS_VAR,
                &mut limits.max_live_objects,
                "a whole number above zero such as `1000000`",
            ),
        ] {
            if let Some(value) = var(variable) {
                *slot = value
                    .trim()
                    .parse::<usize>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or(LimitError {
                        variable,
                        value,
                        expected,
                    })?;
            }
        }
        Ok(limits)
    }
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// `1048576`, `512K`, `64M`, `1G` (powers of 1024).
fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((index, _)) => text.split_at(index),
        None => (text, ""),
    };
    let multiplier: u64 = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        _ => return None,
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(multiplier))
        .filter(|n| *n > 0)
}

fn parse_seconds(text: &str) -> Option<Duration> {
    let seconds: f64 = text.trim().parse().ok()?;
    (seconds.is_finite() && seconds > 0.0 && seconds < 1e9)
        .then(|| Duration::from_secs_f64(seconds))
}

/// `64 MiB`, for messages.
#[must_use]
pub fn human_size(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (size, unit) in UNITS {
        if bytes >= size && bytes.is_multiple_of(size) {
            return format!("{} {unit}", bytes / size);
        }
    }
    format!("{bytes} bytes")
}

/// `120 s`, `0.5 s`, for messages.
#[must_use]
pub fn human_duration(duration: Duration) -> String {
    let seconds = duration.as_secs_f64();
    if seconds.fract() == 0.0 {
        format!("{seconds:.0} s")
    } else {
        format!("{seconds:.1} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sizes_and_durations() {
        assert_eq!(parse_size("1048576"), Some(1 << 20));
        assert_eq!(parse_size("512K"), Some(512 << 10));
        assert_eq!(parse_size("64m"), Some(64 << 20));
        assert_eq!(parse_size("1G"), Some(1 << 30));
        for bad in ["", "-1", "0", "1T", "lots", "99999999999999999999G"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
        assert_eq!(parse_seconds("0.5"), Some(Duration::from_millis(500)));
        for bad in ["0", "-3", "NaN", "inf", "soon"] {
            assert_eq!(parse_seconds(bad), None, "{bad}");
        }
        assert_eq!(human_size(64 << 20), "64 MiB");
        assert_eq!(human_size(1000), "1000 bytes");
    }
}
