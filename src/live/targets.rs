//! Where each rendered object is applied, read from `rendered/` alone: the committed output
//! says which cluster takes which folder, so `status` needs no render.
//!
//! - `rendered/<blueprint>/config-connector/` goes to the Config Connector host, with its sync
//!   object (`RootSync aiml-cc-<blueprint>` in `rendered/_sync/config-connector-host/`, or an
//!   Argo CD Application) on the host too.
//! - `rendered/<blueprint>/workload/` goes to the cluster whose sync folder holds the sync
//!   object of that folder (`rendered/_sync/clusters/<project>/<location>/<cluster>/`), or, with
//!   Argo CD, the Application's `spec.destination.name`.
//! - Without sync objects (`sync.engine: none`), the workload cluster is the one the blueprint's
//!   own `ContainerCluster` creates, when it creates one; else it is unknown, and said so.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::diagnostic::ObjectRef;
use crate::gitops::diff::{Object, Side};
use crate::graph::{SYNC_FOLDER, plane_of, synced_folders};
use crate::overlay::Plane;
use crate::repo::RENDERED_DIR;
use crate::settings::Settings;

/// A cluster, as the rendered output names it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum ClusterId {
    /// The Config Connector host.
    ConfigConnectorHost,
    /// A GKE cluster.
    Gke {
        /// GCP project id.
        project: String,
        /// Zone or region.
        location: String,
        /// Cluster name.
        name: String,
    },
    /// A cluster known only by a name (an Argo CD destination that is not GKE's context name).
    Named {
        /// The name.
        name: String,
    },
}

impl ClusterId {
    /// The GKE cluster a kubeconfig context name of `gcloud container clusters get-credentials`
    /// stands for (`gke_<project>_<location>_<cluster>`), else a named cluster.
    #[must_use]
    pub fn from_context_name(name: &str) -> Self {
        let parts: Vec<&str> = name.split('_').collect();
        match parts.as_slice() {
            ["gke", project, location, cluster] => ClusterId::Gke {
                project: (*project).to_string(),
                location: (*location).to_string(),
                name: (*cluster).to_string(),
            },
            _ => ClusterId::Named {
                name: name.to_string(),
            },
        }
    }

    /// `project/location/cluster`, the key of `contexts.clusters` in `aiml.yaml`.
    #[must_use]
    pub fn key(&self) -> String {
        match self {
            ClusterId::ConfigConnectorHost => "config-connector-host".to_string(),
            ClusterId::Gke {
                project,
                location,
                name,
            } => format!("{project}/{location}/{name}"),
            ClusterId::Named { name } => name.clone(),
        }
    }
}

impl std::fmt::Display for ClusterId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClusterId::ConfigConnectorHost => f.write_str("Config Connector host"),
            ClusterId::Gke { .. } => write!(f, "GKE cluster {}", self.key()),
            ClusterId::Named { name } => write!(f, "cluster {name}"),
        }
    }
}

/// The sync object that applies a target's folder, and the cluster it lives on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncObject {
    /// Where it lives.
    pub cluster: ClusterId,
    /// Which object it is.
    pub id: ObjectRef,
}

/// One blueprint's objects for one cluster.
#[derive(Clone, Debug)]
pub struct Target<'s> {
    /// The blueprint (its folder under `rendered/`).
    pub blueprint: String,
    /// Which of its folders.
    pub plane: Plane,
    /// The cluster that applies them; `None`: nothing rendered says.
    pub cluster: Option<ClusterId>,
    /// The rendered objects of the folder, in path order.
    pub objects: Vec<&'s Object>,
    /// The sync object of the folder, when the output has one.
    pub sync: Option<SyncObject>,
}

/// The targets of the blueprints `names` (all when empty), in blueprint then plane order; the
/// sync folder itself is not a blueprint. Unknown names are the caller's to report
/// ([`blueprints`] lists what there is).
#[must_use]
pub fn targets<'s>(side: &'s Side, settings: &Settings, names: &[String]) -> Vec<Target<'s>> {
    // Folder synced (`rendered/<bp>/<plane>`) → the sync object and the cluster it syncs to.
    let mut synced: BTreeMap<String, (SyncObject, Option<ClusterId>)> = BTreeMap::new();
    for object in side.objects.values().filter(|o| o.folder == SYNC_FOLDER) {
        for (folder, _) in synced_folders(object) {
            let (lives_on, applies_to) = sync_clusters(object, settings);
            let relative = folder_in_repository(&folder, settings);
            synced.insert(
                relative,
                (
                    SyncObject {
                        cluster: lives_on,
                        id: object.id.clone(),
                    },
                    applies_to,
                ),
            );
        }
    }
    let mut grouped: BTreeMap<(String, Plane), Vec<&'s Object>> = BTreeMap::new();
    for object in side.objects.values() {
        if object.folder == SYNC_FOLDER || !(names.is_empty() || names.contains(&object.folder)) {
            continue;
        }
        grouped
            .entry((object.folder.clone(), plane_of(object)))
            .or_default()
            .push(object);
    }
    grouped
        .into_iter()
        .map(|((blueprint, plane), mut objects)| {
            objects.sort_by(|a, b| a.path.cmp(&b.path));
            let folder = format!("{RENDERED_DIR}/{blueprint}/{}", plane.dir());
            let (sync, synced_to) = match synced.get(&folder) {
                Some((sync, to)) => (Some(sync.clone()), to.clone()),
                None => (None, None),
            };
            let cluster = match plane {
                Plane::ConfigConnector => Some(ClusterId::ConfigConnectorHost),
                Plane::Workload => synced_to.or_else(|| created_cluster(side, &blueprint)),
            };
            Target {
                blueprint,
                plane,
                cluster,
                objects,
                sync,
            }
        })
        .collect()
}

/// The blueprints with rendered output (read or only listed).
#[must_use]
pub fn blueprints(side: &Side) -> Vec<String> {
    let names: std::collections::BTreeSet<String> = side
        .folders
        .iter()
        .cloned()
        .chain(side.objects.values().map(|o| o.folder.clone()))
        .filter(|f| f != SYNC_FOLDER)
        .collect();
    names.into_iter().collect()
}

/// A folder a sync object names, as a path of this repository: without `git.dir`.
fn folder_in_repository(folder: &str, settings: &Settings) -> String {
    let dir = settings.git.as_ref().map_or("", |git| git.dir.as_str());
    if dir.is_empty() {
        return folder.to_string();
    }
    folder
        .strip_prefix(dir)
        .and_then(|rest| rest.strip_prefix('/'))
        .unwrap_or(folder)
        .to_string()
}

/// Where a sync object lives, and the cluster it applies its folder to (`None`: not known).
fn sync_clusters(object: &Object, settings: &Settings) -> (ClusterId, Option<ClusterId>) {
    if object.id.group == "argoproj.io" {
        // Applications live with Argo CD; their destination is a cluster name Argo CD knows.
        let destination = object
            .node
            .at(&["spec", "destination", "name"])
            .and_then(crate::yaml::Node::as_str)
            .map(|name| {
                if name == settings.argocd.config_connector_cluster || name == "in-cluster" {
                    ClusterId::ConfigConnectorHost
                } else {
                    ClusterId::from_context_name(name)
                }
            });
        let argocd = match &settings.contexts.argocd {
            Some(context) => ClusterId::Named {
                name: context.clone(),
            },
            None => ClusterId::ConfigConnectorHost,
        };
        return (argocd, destination);
    }
    // Config Sync: the object lives where it applies, named by its folder under `_sync/`.
    let inner = object
        .path
        .strip_prefix(&format!("{RENDERED_DIR}/{SYNC_FOLDER}/"))
        .unwrap_or_default();
    let parts: Vec<&str> = inner.split('/').collect();
    let cluster = match parts.as_slice() {
        ["clusters", project, location, name, ..] => ClusterId::Gke {
            project: (*project).to_string(),
            location: (*location).to_string(),
            name: (*name).to_string(),
        },
        _ => ClusterId::ConfigConnectorHost,
    };
    (cluster.clone(), Some(cluster))
}

/// The GKE cluster a blueprint's own `ContainerCluster` creates: its name (`spec.resourceID`
/// or `metadata.name`), location and project (the namespace's project annotation, else the
/// namespace, as the tool's output names them).
fn created_cluster(side: &Side, blueprint: &str) -> Option<ClusterId> {
    let cluster = side.objects.values().find(|o| {
        o.folder == blueprint
            && o.id.group == "container.cnrm.cloud.google.com"
            && o.id.kind == "ContainerCluster"
    })?;
    let text = |path: &[&str]| {
        cluster
            .node
            .at(path)
            .and_then(crate::yaml::Node::as_str)
            .map(str::to_string)
    };
    let project = text(&[
        "metadata",
        "annotations",
        "cnrm.cloud.google.com/project-id",
    ])
    .or_else(|| cluster.id.namespace.clone())?;
    Some(ClusterId::Gke {
        project,
        location: text(&["spec", "location"])?,
        name: text(&["spec", "resourceID"]).unwrap_or_else(|| cluster.id.name.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(files: &[(&str, &str)]) -> Side {
        let dir = tempfile::tempdir().expect("temp");
        for (path, text) in files {
            let path = dir
                .path()
                .join(path.strip_prefix("rendered/").expect("rendered/"));
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        }
        crate::gitops::diff::read_dir(dir.path(), 1 << 20).expect("read")
    }

    const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: n}\n";
    const CLUSTER: &str = "apiVersion: container.cnrm.cloud.google.com/v1beta1\nkind: ContainerCluster\nmetadata: {name: c1, namespace: p1}\nspec: {location: us-west4}\n";

    fn root(name: &str, dir: &str) -> String {
        format!(
            "apiVersion: configsync.gke.io/v1beta1\nkind: RootSync\nmetadata: {{name: {name}, namespace: config-management-system}}\nspec: {{git: {{dir: {dir}}}}}\n"
        )
    }

    fn gke(p: &str, l: &str, n: &str) -> ClusterId {
        ClusterId::Gke {
            project: p.into(),
            location: l.into(),
            name: n.into(),
        }
    }

    #[test]
    fn config_sync_folders_name_the_clusters() {
        let ws = root("aiml-b", "rendered/b/workload");
        let cc = root("aiml-cc-b", "rendered/b/config-connector");
        let side = side(&[
            ("rendered/b/workload/n/cm.yaml", CM),
            ("rendered/b/config-connector/p1/cluster.yaml", CLUSTER),
            (
                "rendered/_sync/clusters/p/us-east5/c/config-management-system/rs.yaml",
                &ws,
            ),
            (
                "rendered/_sync/config-connector-host/config-management-system/rs.yaml",
                &cc,
            ),
        ]);
        let found = targets(&side, &Settings::default(), &[]);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].plane, Plane::ConfigConnector);
        assert_eq!(found[0].cluster, Some(ClusterId::ConfigConnectorHost));
        assert_eq!(
            found[0].sync.as_ref().map(|s| s.id.name.as_str()),
            Some("aiml-cc-b")
        );
        assert_eq!(found[1].cluster, Some(gke("p", "us-east5", "c")));
        let sync = found[1].sync.as_ref().expect("sync");
        assert_eq!(sync.cluster, gke("p", "us-east5", "c"));
        assert_eq!(found[1].objects.len(), 1);
    }

    #[test]
    fn without_sync_objects_the_created_cluster_is_the_target() {
        let side = side(&[
            ("rendered/b/workload/n/cm.yaml", CM),
            ("rendered/b/config-connector/p1/cluster.yaml", CLUSTER),
            ("rendered/other/workload/n/cm.yaml", CM),
        ]);
        let found = targets(&side, &Settings::default(), &[]);
        let workload: Vec<_> = found
            .iter()
            .filter(|t| t.plane == Plane::Workload)
            .map(|t| (t.blueprint.as_str(), t.cluster.clone()))
            .collect();
        assert_eq!(
            workload,
            [("b", Some(gke("p1", "us-west4", "c1"))), ("other", None)]
        );
        assert_eq!(
            targets(&side, &Settings::default(), &["other".into()]).len(),
            1
        );
    }

    #[test]
    fn argocd_destinations_name_the_clusters() {
        let app = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a, namespace: argocd}\nspec:\n  source: {path: rendered/b/workload}\n  destination: {name: gke_p_europe-west4_c}\n";
        let side = side(&[
            ("rendered/b/workload/n/cm.yaml", CM),
            ("rendered/_sync/argocd/argocd/app.yaml", app),
        ]);
        let found = targets(&side, &Settings::default(), &[]);
        assert_eq!(found[0].cluster, Some(gke("p", "europe-west4", "c")));
        assert_eq!(
            found[0].sync.as_ref().map(|s| s.cluster.clone()),
            Some(ClusterId::ConfigConnectorHost)
        );
    }

    #[test]
    fn context_names_of_gke_parse_and_others_stay_names() {
        assert_eq!(
            ClusterId::from_context_name("gke_p_us-west4_c"),
            gke("p", "us-west4", "c")
        );
        assert_eq!(
            ClusterId::from_context_name("kind-dev"),
            ClusterId::Named {
                name: "kind-dev".into()
            }
        );
    }
}
