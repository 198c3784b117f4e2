//! The README's table of the roles the Config Connector host's account needs is exactly
//! `gcp::HOST_ROLES`, and that list covers every kind of Config Connector object the
//! repository and its examples render (bindings by the kind of resource they are on), with no
//! role for a kind nothing renders.

use std::collections::BTreeSet;
use std::path::Path;

use aiml::gcp::{HOST_ROLES, host_roles_table};
use aiml::yaml::Node;

/// Every `.yaml` file under `dir`, recursively.
fn yaml_files(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            yaml_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "yaml") {
            found.push(path);
        }
    }
}

/// The kinds of Config Connector objects rendered under `rendered/` of the repository and of
/// each example, as `HOST_ROLES` names them.
fn rendered_kinds() -> BTreeSet<String> {
    let mut roots = vec![Path::new("rendered").to_path_buf()];
    for example in std::fs::read_dir("examples").expect("examples") {
        roots.push(example.expect("entry").path().join("rendered"));
    }
    let mut files = Vec::new();
    for root in &roots {
        yaml_files(root, &mut files);
    }
    assert!(files.len() > 100, "rendered output found: {}", files.len());
    let mut kinds = BTreeSet::new();
    let text =
        |node: &Node, path: &[&str]| node.at(path).and_then(Node::as_str).map(str::to_string);
    for file in files {
        let source = std::fs::read_to_string(&file).expect("read");
        for document in aiml::yaml::parse_documents(&source).expect("YAML") {
            let (Some(api_version), Some(kind)) =
                (text(&document, &["apiVersion"]), text(&document, &["kind"]))
            else {
                continue;
            };
            let group = api_version.split('/').next().unwrap_or_default();
            if !group.ends_with(".cnrm.cloud.google.com") {
                continue;
            }
            if kind == "IAMPolicyMember" {
                let on = text(&document, &["spec", "resourceRef", "kind"])
                    .unwrap_or_else(|| panic!("{}: a binding without a resource", file.display()));
                kinds.insert(format!("IAMPolicyMember on {on}"));
            } else {
                kinds.insert(kind);
            }
        }
    }
    kinds
}

#[test]
fn every_rendered_config_connector_kind_has_its_host_role_and_no_role_is_unused() {
    let rendered = rendered_kinds();
    let listed: BTreeSet<String> = HOST_ROLES
        .iter()
        .flat_map(|row| row.kinds.iter().map(|kind| (*kind).to_string()))
        .collect();
    let missing: Vec<&String> = rendered.difference(&listed).collect();
    assert!(
        missing.is_empty(),
        "rendered kinds without a role in gcp::HOST_ROLES: {missing:?}"
    );
    for row in HOST_ROLES {
        assert!(
            row.kinds.iter().any(|kind| rendered.contains(*kind)),
            "{} is for nothing rendered: {:?}",
            row.role,
            row.kinds
        );
    }
}

#[test]
fn the_readme_lists_the_host_roles() {
    let readme = std::fs::read_to_string("README.md").expect("README.md");
    let table = host_roles_table();
    assert!(
        readme.contains(&table),
        "README.md must hold this table of the Config Connector host's roles:\n\n{table}"
    );
}
