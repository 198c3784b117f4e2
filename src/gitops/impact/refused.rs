//! Kubernetes fields that cannot change on an existing object: the API server's update
//! validation, a webhook (JobSet, LeaderWorkerSet, Kueue) or a CRD transition rule
//! (`self == oldSelf`) refuses the update, so the apply fails until the object is deleted and
//! created again. Unlike Config Connector's immutable fields (where GCP deletes and recreates
//! the resource), nothing is destroyed by the refusal itself; what replacing the object costs
//! is said per kind ([`remedy`]).
//!
//! The rules are data, `data/refused-updates.tsv`, derived by `scripts/derive-immutable-fields`
//! with each rule's repository, commit, file and function. A rule covers a field path and
//! everything under it, minus listed exceptions, under a condition read from the old or new
//! object (`immutable: true`, `spec.suspend`, a Service's type), so that mutable fields (a
//! Deployment's template, a StatefulSet's replicas, a Job's parallelism, a claim's storage
//! request) never raise a line.

use std::sync::LazyLock;

use serde::Serialize;

use crate::diagnostic::ObjectRef;
use crate::gitops::diff::FieldChange;
// One reader of Kubernetes quantities for the crate: validation's.
use crate::validate::model::fields::quantity;
use crate::yaml::{Node, Value};

/// The refused-update table, as shipped.
pub const REFUSED_UPDATES: &str = include_str!("../../../data/refused-updates.tsv");

/// What kind of change a rule refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refuses {
    /// Any change at or under the path (but the exceptions).
    Change,
    /// A change once the old object has a value.
    ChangeOnceSet,
    /// A value written that differs from the old one (leaving the field out keeps the
    /// cluster's value, as a Service's allocated cluster IP).
    NewValue,
    /// A smaller quantity.
    Decrease,
}

/// When a rule (or its exceptions) applies.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Condition {
    Always,
    /// The old object has `path` = value.
    Old(String, String),
    /// Unless the new object has `path` = value.
    NewNot(String, String),
    /// Unless either side has `path` = value.
    Neither(String, String),
    /// Either side has `path` = value.
    Either(String, String),
    /// The old object has `path`.
    OldSet(String),
    /// Unless the new Job is Indexed with `completions` equal to `parallelism` (elastic
    /// Indexed Jobs scale both together).
    NotElasticIndexed,
}

/// One row of the table.
#[derive(Clone, Debug)]
struct Rule {
    group: &'static str,
    kind: &'static str,
    refuses: Refuses,
    path: &'static str,
    except: Vec<&'static str>,
    when: Condition,
    except_when: Condition,
    who: &'static str,
    source: Source,
}

/// Where a rule is read upstream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Source {
    /// `owner/name` on GitHub.
    pub repository: &'static str,
    /// The release tag read.
    #[serde(rename = "ref")]
    pub reference: &'static str,
    /// Its commit.
    pub commit: &'static str,
    /// The file.
    pub file: &'static str,
    /// The function (or `x-kubernetes-validations` for a CRD rule).
    pub function: &'static str,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}, {} {}",
            self.repository, self.reference, self.file, self.function
        )
    }
}

/// A change the API server or a webhook refuses: the apply fails until the object is
/// replaced.
#[derive(Clone, Debug, Serialize)]
pub struct Refused {
    /// The blueprint (folder under `rendered/`).
    pub blueprint: String,
    /// The object.
    pub object: ObjectRef,
    /// The changed fields the rule covers, as the diff names them.
    pub fields: Vec<String>,
    /// Who refuses: `the API server`, `the JobSet webhook`, …
    pub refused_by: &'static str,
    /// The rule, in words.
    pub why: String,
    /// Where the rule is read.
    pub source: Source,
    /// What the user must do, and what that costs.
    pub remedy: String,
}

fn condition(text: &'static str) -> Result<Condition, String> {
    let pair = |rest: &str| {
        rest.split_once('=')
            .map(|(p, v)| (p.to_string(), v.to_string()))
            .ok_or_else(|| format!("`{text}`: expected PATH=VALUE"))
    };
    Ok(match text.split_once(':') {
        None if text == "always" => Condition::Always,
        None if text == "not-elastic-indexed" => Condition::NotElasticIndexed,
        Some(("old", rest)) => pair(rest).map(|(p, v)| Condition::Old(p, v))?,
        Some(("new-not", rest)) => pair(rest).map(|(p, v)| Condition::NewNot(p, v))?,
        Some(("neither", rest)) => pair(rest).map(|(p, v)| Condition::Neither(p, v))?,
        Some(("either", rest)) => pair(rest).map(|(p, v)| Condition::Either(p, v))?,
        Some(("old-set", rest)) => Condition::OldSet(rest.to_string()),
        _ => return Err(format!("unknown condition `{text}`")),
    })
}

fn parse(text: &'static str) -> Result<Vec<Rule>, String> {
    let mut rules = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |why: String| format!("data/refused-updates.tsv line {}: {why}", index + 1);
        let cells: Vec<&'static str> = line.split('\t').collect();
        let [
            group,
            kind,
            refuses,
            path,
            except,
            when,
            except_when,
            who,
            repository,
            reference,
            file,
            function,
        ] = cells[..]
        else {
            return Err(at(format!("{} columns, expected 12", cells.len())));
        };
        let refuses = match refuses {
            "immutable" => Refuses::Change,
            "set-once" => Refuses::ChangeOnceSet,
            "given" => Refuses::NewValue,
            "no-decrease" => Refuses::Decrease,
            other => return Err(at(format!("unknown rule `{other}`"))),
        };
        let (tag, commit) = reference.split_once(' ').unwrap_or((reference, ""));
        rules.push(Rule {
            group,
            kind,
            refuses,
            path,
            except: if except == "-" {
                Vec::new()
            } else {
                except.split(',').collect()
            },
            when: condition(when).map_err(at)?,
            except_when: condition(except_when).map_err(at)?,
            who,
            source: Source {
                repository,
                reference: tag,
                commit,
                file,
                function,
            },
        });
    }
    Ok(rules)
}

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    // The table is built into the binary; a unit test reads every row of it.
    parse(REFUSED_UPDATES).unwrap_or_default()
});

/// A diff field path with list positions and names dropped (`[name=a]`, `[0]` → `[]`) and
/// quoted map keys kept (`labels["a/b"]`), as the table writes paths.
fn normalise(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '[' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'"') {
            // A quoted key, escaped as Rust's `{:?}` writes it: copy it to its closing `"]`.
            out.push('[');
            let mut escaped = false;
            let mut opened = false;
            for c in chars.by_ref() {
                out.push(c);
                if c == '"' && !escaped {
                    if opened {
                        break;
                    }
                    opened = true;
                }
                escaped = c == '\\' && !escaped;
            }
            if chars.peek() == Some(&']') {
                chars.next();
            }
            out.push(']');
        } else {
            for c in chars.by_ref() {
                if c == ']' {
                    break;
                }
            }
            out.push_str("[]");
        }
    }
    out
}

/// Whether `path` (normalised) is `pattern` or under it.
fn covers(pattern: &str, path: &str) -> bool {
    path.strip_prefix(pattern)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.') || rest.starts_with('['))
}

fn scalar<'a>(node: Option<&'a Node>, path: &str) -> Option<std::borrow::Cow<'a, str>> {
    let segments: Vec<&str> = path.split('.').collect();
    let found = node?.at(&segments)?;
    Some(match &found.value {
        Value::String(s) => std::borrow::Cow::Borrowed(s.as_str()),
        Value::Bool(b) => b.to_string().into(),
        Value::Int(i) => i.to_string().into(),
        Value::Float(f) => f.to_string().into(),
        Value::Null | Value::Seq(_) | Value::Map(_) => return None,
    })
}

fn holds(condition: &Condition, old: Option<&Node>, new: Option<&Node>) -> bool {
    let is =
        |node: Option<&Node>, path: &str, value: &str| scalar(node, path).as_deref() == Some(value);
    match condition {
        Condition::Always => true,
        Condition::Old(path, value) => is(old, path, value),
        Condition::NewNot(path, value) => !is(new, path, value),
        Condition::Neither(path, value) => !is(old, path, value) && !is(new, path, value),
        Condition::Either(path, value) => is(old, path, value) || is(new, path, value),
        Condition::OldSet(path) => old
            .and_then(|o| o.at(&path.split('.').collect::<Vec<_>>()))
            .is_some_and(|n| !matches!(n.value, Value::Null)),
        Condition::NotElasticIndexed => {
            let indexed = is(new, "spec.completionMode", "Indexed");
            let completions = scalar(new, "spec.completions");
            !(indexed && completions.is_some() && completions == scalar(new, "spec.parallelism"))
        }
    }
}

fn refused(rule: &Rule, field: &FieldChange) -> bool {
    let (before, after) = (field.before.as_deref(), field.after.as_deref());
    match rule.refuses {
        Refuses::Change => true,
        Refuses::ChangeOnceSet => before.is_some(),
        Refuses::NewValue => after.is_some(),
        Refuses::Decrease => match (before.and_then(quantity), after.and_then(quantity)) {
            (Some(was), Some(now)) => now < was,
            _ => false,
        },
    }
}

/// Exceptions in few words: their common parent (when deeper than `path`) and what is
/// under it (`metadata.labels`, `spec.nodeSelector` under `spec.replicatedJobs[].template…`).
fn exceptions(path: &str, except: &[&str]) -> String {
    let split: Vec<Vec<&str>> = except.iter().map(|e| e.split('.').collect()).collect();
    let shortest = split.iter().map(Vec::len).min().unwrap_or(0);
    let mut common = 0;
    while common + 1 < shortest && split.iter().all(|s| s[common] == split[0][common]) {
        common += 1;
    }
    let parent = split
        .first()
        .map(|s| s[..common].join("."))
        .unwrap_or_default();
    let names: Vec<String> = split
        .iter()
        .map(|s| format!("`{}`", s[common..].join(".")))
        .collect();
    if parent.len() > path.len() {
        format!("{} of `{parent}`", names.join(", "))
    } else {
        names.join(", ")
    }
}

fn describe_condition(condition: &Condition) -> String {
    match condition {
        Condition::Always => String::new(),
        Condition::Old(path, value) => format!(" when the object has `{path}: {value}`"),
        Condition::NewNot(path, value) => format!(" unless `{path}` is `{value}`"),
        Condition::Neither(path, value) => format!(" unless `{path}` is `{value}`"),
        Condition::Either(path, value) => format!(" while `{path}` is `{value}`"),
        Condition::OldSet(path) => format!(" once `{path}` is set"),
        Condition::NotElasticIndexed => {
            " unless the Job is Indexed and completions change together with parallelism"
                .to_string()
        }
    }
}

fn why(rule: &Rule) -> String {
    let what = match rule.refuses {
        Refuses::Change => format!("refuses changes to `{}`", rule.path),
        Refuses::ChangeOnceSet => format!("refuses changes to `{}` once set", rule.path),
        Refuses::NewValue => format!(
            "refuses a new value of `{}` (leaving it out keeps the cluster's)",
            rule.path
        ),
        Refuses::Decrease => format!("refuses a smaller `{}`", rule.path),
    };
    let mut text = format!("{} {what}{}", rule.who, describe_condition(&rule.when));
    if !rule.except.is_empty() {
        text.push_str(&format!(
            " other than {}{}",
            exceptions(rule.path, &rule.except),
            describe_condition(&rule.except_when)
        ));
    }
    text
}

/// What the user must do to land a refused change of a `kind` object, and what it costs.
#[must_use]
pub fn remedy(group: &str, kind: &str) -> String {
    let replace = format!("the apply fails until the {kind} is deleted and created again");
    match (group, kind) {
        ("batch", "Job") | ("jobset.x-k8s.io", "JobSet") => {
            format!("{replace}: the run restarts (from its last checkpoint, if it writes one)")
        }
        ("leaderworkerset.x-k8s.io", "LeaderWorkerSet") => {
            format!("{replace}: every group restarts and serving stops meanwhile")
        }
        ("apps", "StatefulSet") => format!(
            "{replace} (`kubectl delete --cascade=orphan` keeps its pods and volume claims; existing claims keep their old template)"
        ),
        ("apps", "Deployment" | "ReplicaSet" | "DaemonSet") => {
            format!("{replace}: its pods are replaced")
        }
        ("", "Service") => format!("{replace}: it gets a new cluster IP"),
        ("", "PersistentVolumeClaim") => format!(
            "{replace}: its volume is released (and its data deleted under the `Delete` reclaim policy); a claim under a new name keeps the old one"
        ),
        ("", "ConfigMap" | "Secret") => format!(
            "{replace} (or made under a new name); running pods see the new data only when they restart"
        ),
        _ => replace,
    }
}

/// The refused changes among `fields` of a changed `object` whose old and new versions are
/// `old` and `new`: one per rule, with the fields it covers.
#[must_use]
pub fn assess(
    blueprint: &str,
    object: &ObjectRef,
    fields: &[FieldChange],
    old: Option<&Node>,
    new: Option<&Node>,
) -> Vec<Refused> {
    let mut found: Vec<Refused> = Vec::new();
    let rules: Vec<&Rule> = RULES
        .iter()
        .filter(|rule| rule.group == object.group && rule.kind == object.kind)
        .filter(|rule| holds(&rule.when, old, new))
        .collect();
    for field in fields {
        let path = normalise(&field.path);
        // The first rule that refuses the field names it (a field is reported once).
        let rule = rules.iter().find(|rule| {
            covers(rule.path, &path)
                && !(rule.except.iter().any(|e| covers(e, &path))
                    && holds(&rule.except_when, old, new))
                && refused(rule, field)
        });
        let Some(rule) = rule else { continue };
        let why = why(rule);
        match found
            .iter_mut()
            .find(|r| r.why == why && r.source == rule.source)
        {
            Some(existing) => existing.fields.push(field.path.clone()),
            None => found.push(Refused {
                blueprint: blueprint.to_string(),
                object: object.clone(),
                fields: vec![field.path.clone()],
                refused_by: rule.who,
                why,
                source: rule.source.clone(),
                remedy: remedy(&object.group, &object.kind),
            }),
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gitops::diff::field_changes;

    fn node(text: &str) -> Node {
        crate::yaml::parse_documents(text).unwrap().remove(0)
    }

    /// The refused lines of a change from `old` to `new`: (fields, who).
    fn check(group: &str, kind: &str, old: &str, new: &str) -> Vec<(Vec<String>, String)> {
        let (old, new) = (node(old), node(new));
        let object = ObjectRef {
            group: group.to_string(),
            kind: kind.to_string(),
            namespace: Some("ns".to_string()),
            name: "x".to_string(),
        };
        let fields = field_changes(&old, &new);
        assert!(!fields.is_empty(), "the test changes something");
        assess("bp", &object, &fields, Some(&old), Some(&new))
            .into_iter()
            .map(|r| (r.fields, r.refused_by.to_string()))
            .collect()
    }

    fn fields(found: &[(Vec<String>, String)]) -> Vec<String> {
        found.iter().flat_map(|(f, _)| f.clone()).collect()
    }

    #[test]
    fn the_shipped_table_reads_whole_and_cites_every_source() {
        let rows = REFUSED_UPDATES
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .count();
        let rules = parse(REFUSED_UPDATES).unwrap();
        assert_eq!(rules.len(), rows);
        assert!(rules.len() > 40, "{}", rules.len());
        for rule in &rules {
            assert_eq!(rule.source.commit.len(), 40, "{rule:?}");
            assert!(!rule.source.file.is_empty() && !rule.source.function.is_empty());
        }
        assert!(parse("a\tb\n").is_err());
    }

    #[test]
    fn paths_are_normalised_as_the_table_writes_them() {
        assert_eq!(
            normalise("spec.replicatedJobs[name=slice].template.spec.containers[0].image"),
            "spec.replicatedJobs[].template.spec.containers[].image"
        );
        assert_eq!(
            normalise("metadata.labels[\"kueue.x-k8s.io/queue-name\"]"),
            "metadata.labels[\"kueue.x-k8s.io/queue-name\"]"
        );
        assert_eq!(normalise("data[\"a\\\"]b\"].x"), "data[\"a\\\"]b\"].x");
        assert!(covers("spec.selector", "spec.selector.matchLabels.app"));
        assert!(!covers("spec.selector", "spec.selectorX"));
    }

    const JOBSET: &str = "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: x\n  labels: {kueue.x-k8s.io/queue-name: q}\nspec:\n  SUSPEND\n  replicatedJobs:\n  - name: slice\n    replicas: 2\n    template:\n      spec:\n        parallelism: 4\n        template:\n          metadata: {labels: {a: b}}\n          spec:\n            nodeSelector: {pool: a}\n            containers:\n            - name: c\n              image: i:1\n";

    fn jobset(suspend: bool) -> String {
        JOBSET.replace("SUSPEND", &format!("suspend: {suspend}"))
    }

    #[test]
    fn a_jobset_refuses_changes_to_its_replicated_jobs() {
        let old = jobset(false);
        let found = check(
            "jobset.x-k8s.io",
            "JobSet",
            &old,
            &old.replace("replicas: 2", "replicas: 3"),
        );
        assert_eq!(
            found,
            [(
                vec!["spec.replicatedJobs[name=slice].replicas".to_string()],
                "the JobSet webhook".to_string()
            )]
        );
        // Its pods' scheduling fields may change only while it is suspended.
        let moved = |text: &str| text.replace("pool: a", "pool: b");
        assert_eq!(
            fields(&check("jobset.x-k8s.io", "JobSet", &old, &moved(&old))),
            ["spec.replicatedJobs[name=slice].template.spec.template.spec.nodeSelector.pool"]
        );
        let suspended = jobset(true);
        assert!(check("jobset.x-k8s.io", "JobSet", &suspended, &moved(&suspended)).is_empty());
        // Kueue refuses a new queue while it runs, not while it is suspended.
        let queue = |text: &str| text.replace("queue-name: q", "queue-name: r");
        assert_eq!(
            check("jobset.x-k8s.io", "JobSet", &old, &queue(&old))[0].1,
            "Kueue's job webhook"
        );
        assert!(check("jobset.x-k8s.io", "JobSet", &suspended, &queue(&suspended)).is_empty());
        // Suspending or resuming is fine.
        assert!(check("jobset.x-k8s.io", "JobSet", &old, &suspended).is_empty());
    }

    const JOB: &str = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\nspec:\n  suspend: false\n  parallelism: 2\n  completions: 4\n  backoffLimit: 3\n  template:\n    spec:\n      containers:\n      - name: c\n        image: i:1\n";

    #[test]
    fn a_job_refuses_template_and_completions_but_not_suspend_or_parallelism() {
        let refused = |new: &str| fields(&check("batch", "Job", JOB, new));
        assert_eq!(
            refused(&JOB.replace("i:1", "i:2")),
            ["spec.template.spec.containers[name=c].image"]
        );
        assert_eq!(
            refused(&JOB.replace("completions: 4", "completions: 5")),
            ["spec.completions"]
        );
        assert!(refused(&JOB.replace("suspend: false", "suspend: true")).is_empty());
        assert!(refused(&JOB.replace("parallelism: 2", "parallelism: 3")).is_empty());
        assert!(refused(&JOB.replace("backoffLimit: 3", "backoffLimit: 5")).is_empty());
        // Elastic Indexed Jobs scale completions with parallelism.
        let indexed = JOB.replace(
            "parallelism: 2\n  completions: 4",
            "completionMode: Indexed\n  parallelism: 4\n  completions: 4",
        );
        let scaled = indexed.replace(
            "parallelism: 4\n  completions: 4",
            "parallelism: 6\n  completions: 6",
        );
        assert!(check("batch", "Job", &indexed, &scaled).is_empty());
    }

    #[test]
    fn apps_selectors_and_statefulset_specs_are_refused_but_templates_and_replicas_are_not() {
        let deployment = "kind: Deployment\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {app: a}\n  template:\n    metadata: {labels: {app: a}}\n    spec:\n      containers:\n      - {name: c, image: i:1}\n";
        for kind in ["Deployment", "ReplicaSet", "DaemonSet"] {
            let found = check(
                "apps",
                kind,
                deployment,
                &deployment.replace("app: a}", "app: b}"),
            );
            // The template's labels change with it, and may.
            assert_eq!(fields(&found), ["spec.selector.matchLabels.app"], "{kind}");
        }
        let refused = |new: &str| fields(&check("apps", "Deployment", deployment, new));
        assert!(refused(&deployment.replace("i:1", "i:2")).is_empty());
        assert!(refused(&deployment.replace("replicas: 2", "replicas: 5")).is_empty());
        let sts = "kind: StatefulSet\nspec:\n  replicas: 2\n  serviceName: s\n  podManagementPolicy: OrderedReady\n  template:\n    spec:\n      containers:\n      - {name: c, image: i:1}\n  volumeClaimTemplates:\n  - metadata: {name: data}\n    spec:\n      storageClassName: standard\n      resources: {requests: {storage: 10Gi}}\n";
        let refused = |new: &str| fields(&check("apps", "StatefulSet", sts, new));
        assert_eq!(
            refused(&sts.replace("storage: 10Gi", "storage: 20Gi")),
            ["spec.volumeClaimTemplates[0].spec.resources.requests.storage"]
        );
        assert_eq!(
            refused(&sts.replace(
                "podManagementPolicy: OrderedReady",
                "podManagementPolicy: Parallel"
            )),
            ["spec.podManagementPolicy"]
        );
        assert!(refused(&sts.replace("replicas: 2", "replicas: 3")).is_empty());
        assert!(refused(&sts.replace("i:1", "i:2")).is_empty());
    }

    #[test]
    fn core_kinds_refuse_what_the_api_server_refuses_and_nothing_else() {
        let service = "kind: Service\nspec:\n  type: ClusterIP\n  clusterIP: 10.0.0.1\n  ports:\n  - {port: 80}\n";
        let refused = |old: &str, new: &str| fields(&check("", "Service", old, new));
        assert_eq!(
            refused(service, &service.replace("10.0.0.1", "10.0.0.2")),
            ["spec.clusterIP"]
        );
        // Leaving the address out keeps the allocated one; ports change freely.
        let without = service.replace("  clusterIP: 10.0.0.1\n", "");
        assert!(refused(service, &without).is_empty());
        assert!(refused(service, &service.replace("port: 80", "port: 81")).is_empty());
        let external = service.replace("ClusterIP\n", "ExternalName\n");
        assert!(refused(&external, &external.replace("10.0.0.1", "10.0.0.2")).is_empty());

        let claim = "kind: PersistentVolumeClaim\nspec:\n  storageClassName: standard\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 10Gi}}\n";
        let refused = |new: &str| fields(&check("", "PersistentVolumeClaim", claim, new));
        assert_eq!(
            refused(&claim.replace("standard", "premium-rwo")),
            ["spec.storageClassName"]
        );
        assert!(
            refused(&claim.replace("10Gi", "20Gi")).is_empty(),
            "expansion is allowed"
        );
        assert_eq!(
            refused(&claim.replace("10Gi", "5Gi")),
            ["spec.resources.requests.storage"],
            "shrinking is not"
        );

        let config = "kind: ConfigMap\nimmutable: IMMUTABLE\ndata: {a: \"1\"}\n";
        let frozen = config.replace("IMMUTABLE", "true");
        assert_eq!(
            fields(&check(
                "",
                "ConfigMap",
                &frozen,
                &frozen.replace("\"1\"", "\"2\"")
            )),
            ["data.a"]
        );
        let mutable = config.replace("IMMUTABLE", "false");
        assert!(
            check(
                "",
                "ConfigMap",
                &mutable,
                &mutable.replace("\"1\"", "\"2\"")
            )
            .is_empty()
        );
        let secret = frozen.replace("ConfigMap", "Secret");
        assert_eq!(
            check("", "Secret", &secret, &secret.replace("\"1\"", "\"2\""))[0].0,
            ["data.a"]
        );
    }

    #[test]
    fn webhooks_and_crd_rules_of_leaderworkerset_and_kueue() {
        let lws = "kind: LeaderWorkerSet\nspec:\n  replicas: 1\n  leaderWorkerTemplate:\n    size: 4\n    subGroupPolicy: {subGroupSize: 2}\n";
        assert_eq!(
            check(
                "leaderworkerset.x-k8s.io",
                "LeaderWorkerSet",
                lws,
                &lws.replace("subGroupSize: 2", "subGroupSize: 4")
            )[0]
            .1,
            "the LeaderWorkerSet webhook"
        );
        assert!(
            check(
                "leaderworkerset.x-k8s.io",
                "LeaderWorkerSet",
                lws,
                &lws.replace("replicas: 1", "replicas: 2")
            )
            .is_empty()
        );
        let queue = "kind: LocalQueue\nspec: {clusterQueue: a}\n";
        let found = check(
            "kueue.x-k8s.io",
            "LocalQueue",
            queue,
            &queue.replace(": a", ": b"),
        );
        assert_eq!(found[0].0, ["spec.clusterQueue"]);
        assert!(found[0].1.contains("CRD"), "{found:?}");
        let cluster_queue = "kind: ClusterQueue\nspec:\n  cohort: a\n  resourceGroups: [{flavors: [{name: f, resources: [{name: cpu, nominalQuota: 1}]}]}]\n";
        assert!(
            check(
                "kueue.x-k8s.io",
                "ClusterQueue",
                cluster_queue,
                &cluster_queue.replace("nominalQuota: 1", "nominalQuota: 2")
            )
            .is_empty()
        );
    }

    #[test]
    fn exceptions_are_named_briefly() {
        assert_eq!(
            exceptions(
                "spec.replicatedJobs",
                &[
                    "spec.replicatedJobs[].template.spec.template.metadata.labels",
                    "spec.replicatedJobs[].template.spec.template.spec.nodeSelector"
                ]
            ),
            "`metadata.labels`, `spec.nodeSelector` of `spec.replicatedJobs[].template.spec.template`"
        );
        assert_eq!(
            exceptions("spec", &["spec.replicas", "spec.template"]),
            "`replicas`, `template`"
        );
    }

    #[test]
    fn quantities_compare_by_value() {
        assert_eq!(quantity("1Gi"), Some(1024.0 * 1024.0 * 1024.0));
        assert_eq!(quantity("1500m"), Some(1.5));
        assert_eq!(quantity("2e3"), Some(2000.0));
        assert!(quantity("1Gi").unwrap() > quantity("1G").unwrap());
        assert_eq!(quantity("lots"), None);
    }
}
