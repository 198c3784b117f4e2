//! GitOps wiring: what makes Config Sync or Argo CD apply exactly what `rendered/` holds.
//!
//! **Sync roots.** Every blueprint's `rendered/<name>/config-connector/` and
//! `rendered/<name>/workload/` is a sync root of its own: the reviewed files are the applied
//! files, with no kustomize in the cluster, and a root never mixes Config Connector objects
//! with workload objects (CONTRACT.md).
//!
//! **Gathering per cluster.** One cluster's root must take every blueprint that targets it,
//! yet the fleet's `GKEHubFeatureMembership` (and Argo CD's bootstrap) points at a single
//! folder. That folder is generated, `rendered/_sync/` ([`SYNC_DIR`]; `_` is never a
//! blueprint name), and holds sync objects, beside `platform/` (the controllers a cluster
//! needs, which no blueprint owns), never a blueprint's objects:
//!
//! ```text
//! rendered/_sync/                                  (settings.engine: config-sync)
//!   config-connector-host/…/rootsync…aiml-cc-<bp>  one RootSync per blueprint's config-connector/
//!   clusters/<project>/<location>/<cluster>/…      one RootSync per blueprint on that cluster
//!   bootstrap/config-connector-host.yaml           apply once on the host: syncs config-connector-host/
//!   bootstrap/clusters/<p>/<l>/<c>.yaml            apply once on a cluster no blueprint creates
//!   platform/<component>-<version>/…               a controller's release manifests (shared)
//!   platform/clusters/<p>/<l>/<c>/…                what differs per cluster (metrics adapter)
//!   platform/clusters/<p>/<l>/<c>/mesh/…           Config Connector objects (host) turning
//!                                                  managed Cloud Service Mesh on for it
//!   README.md                                      what to apply where
//! rendered/_sync/                                  (settings.engine: argocd)
//!   argocd/<namespace>/…application…               one Application per sync root
//!   bootstrap/argocd.yaml                          the app of apps, applied once
//! ```
//!
//! A cluster a blueprint creates is registered to the fleet by that blueprint's own
//! Config Connector objects ([`fleet_objects`]: `GKEHubMembership`, `GKEHubFeature`,
//! `GKEHubFeatureMembership` with `configSync.git.policyDir` = its `clusters/…` folder), so
//! Config Sync starts on it as soon as it exists. Adding a blueprint adds a RootSync to a
//! folder already synced: nothing to apply by hand but the two bootstraps.
//!
//! **Platform.** Each cluster also gets a root per controller its blueprints need
//! ([`platform`]), which its blueprint roots depend on (Config Sync `depends-on`, Argo CD
//! sync wave -1) and which never deletes what it applied. A cluster the repository creates
//! whose blueprints use Istio gets Google-managed Cloud Service Mesh through the fleet
//! ([`mesh_objects`], synced on the host), so Istio is no prerequisite there.
//!
//! Inputs are the repository's settings ([`crate::settings`]) and what each blueprint
//! exports ([`crate::plan::Exports`]); everything is rendered by `render`, so `render --check`
//! covers it, and it is deterministic.

pub mod platform;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::diagnostic::Diagnostic;
use crate::manifest;
use crate::overlay::Plane;
use crate::overlay::{self, TemplateError};
use crate::plan::Repository;
use crate::settings::{Engine, GIT_CREDENTIALS_SECRET, Git, Settings};

/// The generated folder under `rendered/` that gathers sync roots per cluster.
pub const SYNC_DIR: &str = "_sync";

/// Objects one sync root may hold before `nomos vet --threshold` (default 1,000) fails.
/// See: <https://github.com/GoogleContainerTools/kpt-config-sync/blob/main/cmd/nomos/vet/flags.go>
pub const MAX_OBJECTS_PER_ROOT: usize = 1_000;

/// Rule id of a sync root above [`MAX_OBJECTS_PER_ROOT`].
pub const SYNC_ROOT_SIZE: &str = "sync-root-size";

/// Rules about the sync wiring.
pub const RULES: &[crate::diagnostic::Rule] = &[crate::diagnostic::Rule {
    id: SYNC_ROOT_SIZE,
    summary: "a sync root holds at most 1,000 objects, `nomos vet`'s default limit (warning)",
}];

/// RootSync names become `root-reconciler-<name>` Deployments and labels: at most 63
/// characters, so at most 47 for the name.
const MAX_ROOT_SYNC_NAME: usize = 63 - "root-reconciler-".len();

/// The file of a blueprint's `config-connector/` overlay target holding its fleet objects.
pub const FLEET_FILE: &str = "fleet.yaml";

/// A GKE cluster that workload objects are applied on.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cluster {
    /// GCP project id.
    pub project: String,
    /// Zone or region.
    pub location: String,
    /// Cluster name.
    pub name: String,
    /// Config Connector namespace of its `ContainerCluster` object.
    pub namespace: String,
    /// Whether a blueprint of the repository creates it (else it exists already).
    pub managed: bool,
}

impl Cluster {
    /// Its folder under `rendered/_sync/clusters/`, when every part is a plain name (the
    /// planning findings of the blueprint say why otherwise).
    fn dir(&self) -> Option<String> {
        [&self.project, &self.location, &self.name]
            .iter()
            .all(|part| crate::names::check_dns_label(part).is_ok())
            .then(|| format!("clusters/{}/{}/{}", self.project, self.location, self.name))
    }

    /// `project/location/cluster`, as `aiml.yaml` names it.
    #[must_use]
    pub fn key(&self) -> String {
        format!("{}/{}/{}", self.project, self.location, self.name)
    }

    /// Argo CD's name for it: the kubeconfig context `gcloud container clusters
    /// get-credentials` writes, which `argocd cluster add CONTEXT` takes as the name.
    fn argocd_name(&self) -> String {
        format!("gke_{}_{}_{}", self.project, self.location, self.name)
    }
}

/// The cluster the workload objects of `blueprint` go to: its own, or that of the blueprint
/// whose cluster it runs on.
#[must_use]
pub fn target_cluster(repository: &Repository, blueprint: &str) -> Option<Cluster> {
    let exported = repository.get(blueprint)?;
    let owner = match &exported.exports.cluster_of {
        Some(owner) => repository.get(owner)?,
        None => exported,
    };
    let cluster = owner.exports.cluster.as_ref()?;
    Some(Cluster {
        project: cluster.project.clone(),
        location: cluster.location.clone(),
        name: cluster.name.clone(),
        namespace: cluster.config_connector_namespace.clone(),
        managed: cluster.managed,
    })
}

/// The folder (relative to the repository) the fleet's Config Sync syncs on `cluster`.
fn cluster_folder(cluster: &Cluster) -> Option<String> {
    Some(format!(
        "{}/{SYNC_DIR}/{}",
        crate::repo::RENDERED_DIR,
        cluster.dir()?
    ))
}

#[derive(Serialize)]
struct GitContext<'g> {
    repo: &'g str,
    branch: &'g str,
    auth: &'static str,
    gcp_service_account_email: Option<&'g str>,
    secret: Option<&'static str>,
}

impl<'g> GitContext<'g> {
    fn new(git: &'g Git) -> Self {
        Self {
            repo: &git.repo,
            branch: &git.branch,
            auth: git.auth.as_str(),
            gcp_service_account_email: git.gcp_service_account_email.as_deref(),
            secret: git.auth.uses_secret().then_some(GIT_CREDENTIALS_SECRET),
        }
    }
}

#[derive(Serialize)]
struct Api {
    name: String,
    service: &'static str,
}

#[derive(Serialize)]
struct FleetCluster<'c> {
    name: &'c str,
    namespace: &'c str,
}

#[derive(Serialize)]
struct Fleet<'a> {
    project: String,
    namespace: String,
    apis: Vec<Api>,
    api_dependencies: Vec<String>,
    feature: String,
    membership: &'a str,
    membership_depends_on: Vec<String>,
    feature_membership: String,
    feature_membership_depends_on: Vec<String>,
    issuer: String,
    cluster: FleetCluster<'a>,
    git: GitContext<'a>,
    policy_dir: String,
}

/// The fleet host project of `cluster`, and the Config Connector namespace of its fleet
/// objects (its membership among them).
fn fleet_place(settings: &Settings, cluster: &Cluster) -> (String, String) {
    let project = settings
        .fleet
        .project
        .clone()
        .unwrap_or_else(|| cluster.project.clone());
    let namespace = match (&settings.fleet.namespace, &settings.fleet.project) {
        (Some(namespace), _) => namespace.clone(),
        (None, Some(project)) if *project != cluster.project => project.clone(),
        (None, _) => cluster.namespace.clone(),
    };
    (project, namespace)
}

/// A `depends-on` entry for the Config Connector object `kind`/`name` of `group`.
fn on(group: &str, kind: &str, namespace: &str, name: &str) -> String {
    format!("{group}.cnrm.cloud.google.com/namespaces/{namespace}/{kind}/{name}")
}

#[derive(Serialize)]
struct Mesh {
    project: String,
    namespace: String,
    api: String,
    api_dependency: String,
    feature: String,
    feature_dependency: String,
    feature_membership: String,
    membership: String,
}

/// Google-managed Cloud Service Mesh on `cluster` (one the repository creates and registers
/// to the fleet), turned on through the fleet: the Mesh API, the fleet's `servicemesh`
/// feature, and the cluster's feature membership with automatic management, which installs
/// the managed control plane (the Istio APIs, and injection with the `gateway` template) and
/// keeps it upgraded. Config Connector objects for the host, as a YAML stream.
fn mesh_objects(settings: &Settings, cluster: &Cluster) -> Result<String, TemplateError> {
    let (project, namespace) = fleet_place(settings, cluster);
    let api = format!("{}-mesh", cluster.name);
    let feature = format!("{}-servicemesh", cluster.name);
    let mesh = Mesh {
        api_dependency: on("serviceusage", "Service", &namespace, &api),
        feature_dependency: on("gkehub", "GKEHubFeature", &namespace, &feature),
        feature_membership: feature.clone(),
        membership: cluster.name.clone(),
        project,
        namespace,
        api,
        feature,
    };
    #[derive(Serialize)]
    struct Context {
        m: Mesh,
    }
    overlay::render("sync/mesh.yaml", &Context { m: mesh })
}

/// The Config Connector objects that register the cluster `blueprint` creates to the fleet and
/// turn Config Sync on, pointed at the cluster's folder of `rendered/_sync/`, as a YAML stream
/// for the blueprint's `config-connector/` target ([`FLEET_FILE`]). `None` unless the engine
/// is Config Sync and the blueprint creates a cluster.
pub fn fleet_objects(
    settings: &Settings,
    repository: &Repository,
    blueprint: &str,
) -> Result<Option<String>, TemplateError> {
    let Some(git) = settings.wiring() else {
        return Ok(None);
    };
    if settings.engine != Engine::ConfigSync {
        return Ok(None);
    }
    let Some(exported) = repository.get(blueprint) else {
        return Ok(None);
    };
    if exported.exports.cluster_of.is_some() {
        return Ok(None);
    }
    let Some(cluster) = target_cluster(repository, blueprint).filter(|c| c.managed) else {
        return Ok(None);
    };
    let Some(folder) = cluster_folder(&cluster) else {
        return Ok(None);
    };
    let (project, namespace) = fleet_place(settings, &cluster);
    let apis: Vec<Api> = [
        ("gkehub", "gkehub.googleapis.com"),
        (
            "anthosconfigmanagement",
            "anthosconfigmanagement.googleapis.com",
        ),
    ]
    .into_iter()
    .map(|(short, service)| Api {
        name: format!("{blueprint}-{short}"),
        service,
    })
    .collect();
    let api_dependencies: Vec<String> = apis
        .iter()
        .map(|api| on("serviceusage", "Service", &namespace, &api.name))
        .collect();
    let feature = format!("{blueprint}-configmanagement");
    let membership_depends_on = vec![
        on(
            "container",
            "ContainerCluster",
            &cluster.namespace,
            &cluster.name,
        ),
        api_dependencies[0].clone(),
    ];
    let feature_membership_depends_on = vec![
        on("gkehub", "GKEHubFeature", &namespace, &feature),
        on("gkehub", "GKEHubMembership", &namespace, &cluster.name),
        api_dependencies[1].clone(),
    ];
    let fleet = Fleet {
        issuer: format!(
            "https://container.googleapis.com/v1/projects/{}/locations/{}/clusters/{}",
            cluster.project, cluster.location, cluster.name
        ),
        project,
        namespace,
        apis,
        api_dependencies,
        feature,
        membership: &cluster.name,
        membership_depends_on,
        feature_membership: format!("{blueprint}-configsync"),
        feature_membership_depends_on,
        cluster: FleetCluster {
            name: &cluster.name,
            namespace: &cluster.namespace,
        },
        git: GitContext::new(git),
        policy_dir: git.path(&folder),
    };
    #[derive(Serialize)]
    struct Context<'a> {
        f: Fleet<'a>,
    }
    overlay::render("sync/fleet.yaml", &Context { f: fleet }).map(Some)
}

/// What a blueprint's render holds, for the sync roots: objects per target folder (absent:
/// the blueprint has no such folder), and the slow objects its Config Connector root waits for.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Roots {
    /// Objects under `rendered/<name>/config-connector/`.
    pub config_connector: Option<usize>,
    /// Objects under `rendered/<name>/workload/`.
    pub workload: Option<usize>,
    /// `ContainerCluster` objects under `config-connector/`.
    #[serde(default)]
    pub clusters: usize,
    /// `ContainerNodePool` objects under `config-connector/` (TPU slices among them).
    #[serde(default)]
    pub node_pools: usize,
    /// What its objects need on their cluster (the platform root).
    #[serde(default)]
    pub uses: platform::Uses,
}

/// File name prefixes (`<kind>.<group>_`, as `rendered/` names files) of the objects that
/// take longest to become ready.
const CLUSTER_FILE: &str = "containercluster.container.cnrm.cloud.google.com_";
const NODE_POOL_FILE: &str = "containernodepool.container.cnrm.cloud.google.com_";

/// How long Config Sync waits for one apply group of a Config Connector root to become ready
/// before it stops and tries again at the next sync (its default, 5 minutes, is shorter than
/// GKE takes). Sized from the longest GKE operation the root holds, as the upstream clients
/// wait for them: a cluster 40 minutes (the Terraform Google provider's default create
/// timeout for `google_container_cluster`, on which Config Connector's `ContainerCluster` is
/// built; regional clusters take longest), a node pool 30 minutes (the same provider's
/// `google_container_node_pool` default, and the 1,800 s Google's own Workflows connector
/// waits for `nodePools.create`; a multi-host TPU slice is one such pool). `None`: the
/// default suffices.
#[must_use]
pub fn reconcile_timeout(roots: &Roots) -> Option<&'static str> {
    if roots.clusters > 0 {
        Some("40m")
    } else if roots.node_pools > 0 {
        Some("30m")
    } else {
        None
    }
}

impl Roots {
    /// Counts objects per target from rendered file paths (`config-connector/…`, `workload/…`),
    /// and the API groups in use. The files [`platform::Uses::reads`] picks must be added with
    /// [`Roots::from_manifests`] for the platform needs to be complete.
    pub fn from_paths<'p>(paths: impl IntoIterator<Item = &'p str>) -> Self {
        let mut roots = Self::default();
        for path in paths {
            roots.uses.note_path(path);
            match path.split('/').next() {
                Some(dir) if dir == Plane::ConfigConnector.dir() => {
                    *roots.config_connector.get_or_insert(0) += 1;
                    let file = path.rsplit('/').next().unwrap_or_default();
                    roots.clusters += usize::from(file.starts_with(CLUSTER_FILE));
                    roots.node_pools += usize::from(file.starts_with(NODE_POOL_FILE));
                }
                Some(dir) if dir == Plane::Workload.dir() => {
                    *roots.workload.get_or_insert(0) += 1;
                }
                _ => {}
            }
        }
        roots
    }

    /// [`Roots::from_paths`] of a blueprint's rendered objects, with what their content says.
    #[must_use]
    pub fn from_manifests(manifests: &[manifest::Manifest]) -> Self {
        let mut roots = Self::from_paths(manifests.iter().map(|m| m.path.as_str()));
        roots.uses.note_objects(manifests);
        roots
    }
}

/// `sync-root-size` warnings for a blueprint whose folders exceed [`MAX_OBJECTS_PER_ROOT`].
#[must_use]
pub fn root_size_findings(
    blueprint: &crate::blueprint::Blueprint<'_>,
    roots: &Roots,
) -> Vec<Diagnostic> {
    [
        (Plane::ConfigConnector, roots.config_connector),
        (Plane::Workload, roots.workload),
    ]
    .into_iter()
    .filter_map(|(plane, count)| Some((plane, count?)))
    .filter(|(_, count)| *count > MAX_OBJECTS_PER_ROOT)
    .map(|(plane, count)| {
        let (span, _) = blueprint.node.closest("metadata.name");
        Diagnostic::warning(
            SYNC_ROOT_SIZE,
            format!(
                "`{}/{}/{}/` holds {count} objects, more than one sync root should",
                crate::repo::RENDERED_DIR,
                blueprint.name,
                plane.dir()
            ),
        )
        .at(blueprint.file, span)
        .field("metadata.name")
        .object(blueprint.object_ref())
        .found(format!("{count} objects"))
        .expected(format!(
            "at most {MAX_OBJECTS_PER_ROOT} (`nomos vet --threshold` default)"
        ))
        .fix("split the blueprint into several blueprints")
    })
    .collect()
}

/// One RootSync or Application.
#[derive(Serialize)]
struct Root {
    name: String,
    instance: String,
    dir: String,
    propagate_deletion: bool,
    /// Argo CD destination cluster name.
    destination: String,
    /// Argo CD destination namespace, when one is needed.
    namespace: Option<String>,
    /// Config Sync's `spec.override.reconcileTimeout`, when the default is too short.
    reconcile_timeout: Option<&'static str>,
    /// Config Sync: the RootSyncs (of the same folder) applied and ready before this one.
    depends_on: Vec<String>,
    /// Argo CD: the app of apps' sync wave (`None`: wave 0).
    wave: Option<i32>,
    /// Argo CD: apply server-side (CRDs beyond the 256 KiB client-side annotation).
    server_side: bool,
}

impl Root {
    /// The root of one plane of the blueprint `instance`: deleting it deletes its objects.
    fn blueprint(name: String, instance: &str, dir: String, destination: String) -> Self {
        Self {
            name,
            instance: instance.to_string(),
            dir,
            propagate_deletion: true,
            destination,
            namespace: None,
            reconcile_timeout: None,
            depends_on: Vec::new(),
            wave: None,
            server_side: false,
        }
    }

    /// The root of one platform component on one cluster: removing it (the cluster no
    /// longer needs the component) leaves the controller and its CRDs, and with them every
    /// object of theirs, in place.
    fn platform(name: String, dir: String, destination: String) -> Self {
        Self {
            name,
            instance: PLATFORM_INSTANCE.to_string(),
            dir,
            propagate_deletion: false,
            destination,
            namespace: None,
            depends_on: Vec::new(),
            wave: Some(PLATFORM_WAVE),
            server_side: true,
            reconcile_timeout: None,
        }
    }

    /// A bootstrap root, over the tool's own `_sync` folder: it never deletes what it synced.
    fn bootstrap(name: &str, dir: String, destination: &str, namespace: Option<String>) -> Self {
        Self {
            name: name.to_string(),
            instance: BOOTSTRAP_INSTANCE.to_string(),
            dir,
            propagate_deletion: false,
            destination: destination.to_string(),
            namespace,
            reconcile_timeout: None,
            depends_on: Vec::new(),
            wave: None,
            server_side: false,
        }
    }
}

/// `app.kubernetes.io/instance` of the platform roots, which belong to no one blueprint.
pub const PLATFORM_INSTANCE: &str = "aiml-platform";

/// Argo CD sync wave of the platform Applications: before every blueprint's (wave 0).
const PLATFORM_WAVE: i32 = -1;

/// The platform of `cluster` (folder `dir`): its needs' components, each one root, and their
/// objects added to `files`. Nothing when the settings say its controllers are managed
/// elsewhere.
fn platform_roots(
    settings: &Settings,
    git: &Git,
    cluster: &Cluster,
    dir: &str,
    needs: &platform::Needs,
    files: &mut BTreeMap<String, String>,
) -> Result<Vec<Root>, SyncError> {
    if settings.platform.managed_elsewhere.contains(&cluster.key()) {
        return Ok(Vec::new());
    }
    let mut roots = Vec::new();
    for &component in &needs.components {
        let folder = platform::folder(component, dir);
        let prefix = format!("{folder}/");
        // Shared folders are written once, for the first cluster that needs them.
        let written = files
            .range(prefix.clone()..)
            .next()
            .is_some_and(|(path, _)| path.starts_with(&prefix));
        if !written {
            let account = needs.metrics_adapter_account.as_deref();
            place_objects(files, &folder, platform::objects(component, account)?);
        }
        let path = sync_path(git, &folder);
        let name = match settings.engine {
            Engine::ArgoCd => application_name(
                &format!(
                    "platform-{}-{}-{}-{}",
                    component.short(),
                    cluster.project,
                    cluster.location,
                    cluster.name
                ),
                "",
            ),
            Engine::ConfigSync | Engine::None => {
                root_sync_name("aiml-platform-", component.short())
            }
        };
        roots.push(Root::platform(name, path, cluster.argocd_name()));
    }
    Ok(roots)
}

/// When `cluster` is one the repository creates (registered to the fleet by its blueprint),
/// its blueprints use Istio and its controllers are not managed elsewhere: the objects that
/// turn Google-managed Cloud Service Mesh on for it ([`mesh_objects`]), written to its platform
/// folder `platform/<dir>/mesh/`, and the host's root that syncs them.
fn managed_mesh(
    settings: &Settings,
    git: &Git,
    cluster: &Cluster,
    dir: &str,
    needs: &platform::Needs,
    files: &mut BTreeMap<String, String>,
) -> Result<Option<Root>, SyncError> {
    if !needs.istio
        || !cluster.managed
        || settings.engine != Engine::ConfigSync
        || settings.platform.managed_elsewhere.contains(&cluster.key())
    {
        return Ok(None);
    }
    let folder = format!("platform/{dir}/mesh");
    place(files, &folder, &mesh_objects(settings, cluster)?)?;
    let path = sync_path(git, &folder);
    let name = root_sync_name(
        "aiml-platform-mesh-",
        &format!("{}-{}-{}", cluster.project, cluster.location, cluster.name),
    );
    Ok(Some(Root {
        server_side: false,
        wave: None,
        ..Root::platform(name, path, String::new())
    }))
}

/// The files of `rendered/_sync/` (relative path → content) for the repository's blueprints
/// (`roots`, by name, every blueprint of the repository), or `None` when nothing is wired.
pub fn sync_folder(
    settings: &Settings,
    repository: &Repository,
    roots: &BTreeMap<String, Roots>,
) -> Result<Option<BTreeMap<String, String>>, SyncError> {
    let Some(git) = settings.wiring() else {
        return Ok(None);
    };
    let rendered = |name: &str, plane: Plane| {
        git.path(&format!(
            "{}/{name}/{}",
            crate::repo::RENDERED_DIR,
            plane.dir()
        ))
    };
    let own = |relative: &str| sync_path(git, relative);
    let mut files = BTreeMap::new();
    let mut readme = Readme::default();
    match settings.engine {
        Engine::None => return Ok(None),
        Engine::ConfigSync => {
            let mut host = Vec::new();
            let mut clusters: BTreeMap<Cluster, Vec<Root>> = BTreeMap::new();
            let needs = cluster_needs(repository, roots);
            for (name, roots) in roots {
                if roots.config_connector.is_some() {
                    host.push(Root {
                        reconcile_timeout: reconcile_timeout(roots),
                        ..Root::blueprint(
                            root_sync_name("aiml-cc-", name),
                            name,
                            rendered(name, Plane::ConfigConnector),
                            String::new(),
                        )
                    });
                }
                if roots.workload.is_some() {
                    match target_cluster(repository, name).filter(|c| c.dir().is_some()) {
                        Some(cluster) => {
                            clusters.entry(cluster).or_default().push(Root::blueprint(
                                root_sync_name("aiml-", name),
                                name,
                                rendered(name, Plane::Workload),
                                String::new(),
                            ))
                        }
                        None => readme.unplaced.push(name.clone()),
                    }
                }
            }
            for (cluster, mut roots) in clusters {
                let Some(dir) = cluster.dir() else { continue };
                let mut needed = needs.get(&cluster).cloned().unwrap_or_default();
                if let Some(mesh) =
                    managed_mesh(settings, git, &cluster, &dir, &needed, &mut files)?
                {
                    if let Some(istio) = platform::Provider::Istio.prerequisite() {
                        needed.prerequisites.remove(istio);
                    }
                    needed.managed_mesh = Some(mesh.dir.clone());
                    host.push(mesh);
                }
                let platform = platform_roots(settings, git, &cluster, &dir, &needed, &mut files)?;
                let depends_on: Vec<String> = platform
                    .iter()
                    .map(|root| {
                        format!(
                            "configsync.gke.io/namespaces/config-management-system/RootSync/{}",
                            root.name
                        )
                    })
                    .collect();
                for root in &mut roots {
                    root.depends_on.clone_from(&depends_on);
                }
                readme.platform.push((
                    cluster.clone(),
                    platform.iter().map(|r| r.dir.clone()).collect(),
                    needed,
                ));
                roots.extend(platform);
                place(&mut files, &dir, &root_syncs(git, settings, roots)?)?;
                if cluster.managed {
                    readme.fleet.push(cluster.clone());
                } else {
                    let bootstrap = Root::bootstrap("aiml-workload", own(&dir), "", None);
                    let objects = root_syncs(git, settings, vec![bootstrap])?;
                    let file = bootstrap_file(&mut files, &dir, &objects)?;
                    readme.existing.push((cluster.clone(), file));
                }
            }
            if !host.is_empty() {
                place(
                    &mut files,
                    "config-connector-host",
                    &root_syncs(git, settings, host)?,
                )?;
                let bootstrap = Root::bootstrap(
                    "aiml-config-connector",
                    own("config-connector-host"),
                    "",
                    None,
                );
                let objects = root_syncs(git, settings, vec![bootstrap])?;
                readme.host = Some(bootstrap_file(
                    &mut files,
                    "config-connector-host",
                    &objects,
                )?);
            }
        }
        Engine::ArgoCd => {
            let mut applications = Vec::new();
            let needs = cluster_needs(repository, roots);
            for (cluster, needed) in &needs {
                let Some(dir) = cluster.dir() else { continue };
                let platform = platform_roots(settings, git, cluster, &dir, needed, &mut files)?;
                readme.platform.push((
                    cluster.clone(),
                    platform.iter().map(|r| r.dir.clone()).collect(),
                    needed.clone(),
                ));
                applications.extend(platform);
            }
            for (name, roots) in roots {
                if roots.config_connector.is_some() {
                    applications.push(Root::blueprint(
                        application_name(name, "-config-connector"),
                        name,
                        rendered(name, Plane::ConfigConnector),
                        settings.argocd.config_connector_cluster.clone(),
                    ));
                }
                if roots.workload.is_some() {
                    match target_cluster(repository, name).filter(|c| c.dir().is_some()) {
                        Some(cluster) => {
                            readme.argocd_clusters.push(cluster.argocd_name());
                            applications.push(Root::blueprint(
                                application_name(name, "-workload"),
                                name,
                                rendered(name, Plane::Workload),
                                cluster.argocd_name(),
                            ));
                        }
                        None => readme.unplaced.push(name.clone()),
                    }
                }
            }
            if !applications.is_empty() {
                place(
                    &mut files,
                    "argocd",
                    &argo_applications(git, settings, applications)?,
                )?;
                let bootstrap = Root::bootstrap(
                    "aiml",
                    own("argocd"),
                    "in-cluster",
                    Some(settings.argocd.namespace.clone()),
                );
                let objects = argo_applications(git, settings, vec![bootstrap])?;
                readme.argocd = Some(bootstrap_file(&mut files, "argocd", &objects)?);
            }
            readme.argocd_clusters.sort();
            readme.argocd_clusters.dedup();
        }
    }
    files.insert("README.md".into(), readme.text(settings));
    Ok(Some(files))
}

/// What each cluster's blueprints need, from what every blueprint on it renders.
fn cluster_needs(
    repository: &Repository,
    roots: &BTreeMap<String, Roots>,
) -> BTreeMap<Cluster, platform::Needs> {
    let mut needs: BTreeMap<Cluster, platform::Needs> = BTreeMap::new();
    for (name, roots) in roots {
        if roots.workload.is_none() {
            continue;
        }
        if let Some(cluster) = target_cluster(repository, name).filter(|c| c.dir().is_some()) {
            needs.entry(cluster).or_default().add(&roots.uses);
        }
    }
    needs
}

/// `app.kubernetes.io/instance` of the bootstrap objects, which belong to no one blueprint.
pub const BOOTSTRAP_INSTANCE: &str = "aiml-sync";

/// Why the sync folder could not be made: a bug in this binary's templates.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// A template failed.
    #[error(transparent)]
    Template(#[from] TemplateError),
    /// A template printed something that is not a set of objects.
    #[error("the sync wiring template printed objects that do not split: {0}")]
    Split(#[from] manifest::SplitError),
    /// The vendored platform manifests are broken.
    #[error(transparent)]
    Platform(#[from] platform::PlatformError),
}

/// Argo CD Application names stay within 63 characters: they are label values under Argo
/// CD's label tracking.
fn application_name(blueprint: &str, suffix: &str) -> String {
    crate::names::shortened(&format!("aiml-{blueprint}"), suffix, 63)
}

fn root_sync_name(prefix: &str, blueprint: &str) -> String {
    crate::names::shortened(&format!("{prefix}{blueprint}"), "", MAX_ROOT_SYNC_NAME)
}

#[derive(Serialize)]
struct RootsContext<'a> {
    git: GitContext<'a>,
    argocd: &'a crate::settings::ArgoCd,
    root_syncs: Vec<Root>,
    applications: Vec<Root>,
}

fn root_syncs(git: &Git, settings: &Settings, roots: Vec<Root>) -> Result<String, TemplateError> {
    overlay::render(
        "sync/roots.yaml",
        &RootsContext {
            git: GitContext::new(git),
            argocd: &settings.argocd,
            root_syncs: roots,
            applications: Vec::new(),
        },
    )
}

fn argo_applications(
    git: &Git,
    settings: &Settings,
    applications: Vec<Root>,
) -> Result<String, TemplateError> {
    overlay::render(
        "sync/roots.yaml",
        &RootsContext {
            git: GitContext::new(git),
            argocd: &settings.argocd,
            root_syncs: Vec::new(),
            applications,
        },
    )
}

/// The one object of `stream`, checked like every rendered object, as the text of its file.
fn single(stream: &str) -> Result<String, manifest::SplitError> {
    Ok(manifest::split(stream)?
        .into_iter()
        .map(|object| object.text)
        .collect())
}

/// Writes `bootstrap/<dir>.yaml`, the object (in `stream`) that syncs the folder `dir`, and
/// returns its path.
fn bootstrap_file(
    files: &mut BTreeMap<String, String>,
    dir: &str,
    stream: &str,
) -> Result<String, manifest::SplitError> {
    let file = format!("bootstrap/{dir}.yaml");
    files.insert(file.clone(), single(stream)?);
    Ok(file)
}

/// Splits `stream` into one file per object under `dir`, named as `rendered/` names them
/// (`<namespace>/<kind>.<group>_<name>.yaml`).
fn place(
    files: &mut BTreeMap<String, String>,
    dir: &str,
    stream: &str,
) -> Result<(), manifest::SplitError> {
    place_objects(files, dir, manifest::split(stream)?);
    Ok(())
}

/// Adds `objects` as files under `dir`, without the plane folder their paths start with
/// (`_sync` folders are synced whole, each holding one plane's objects).
fn place_objects(
    files: &mut BTreeMap<String, String>,
    dir: &str,
    objects: impl IntoIterator<Item = manifest::Manifest>,
) {
    for object in objects {
        let path = [Plane::Workload, Plane::ConfigConnector]
            .iter()
            .find_map(|plane| object.path.strip_prefix(&format!("{}/", plane.dir())))
            .unwrap_or(&object.path);
        files.insert(format!("{dir}/{path}"), object.text);
    }
}

/// The path (for a sync object's `dir`) of `relative`, a folder of `rendered/_sync/`.
fn sync_path(git: &Git, relative: &str) -> String {
    git.path(&format!(
        "{}/{SYNC_DIR}/{relative}",
        crate::repo::RENDERED_DIR
    ))
}

/// What `rendered/_sync/README.md` tells people to do.
#[derive(Default)]
struct Readme {
    host: Option<String>,
    /// Per cluster: the folders of its platform roots and what it needs.
    platform: Vec<(Cluster, Vec<String>, platform::Needs)>,
    fleet: Vec<Cluster>,
    existing: Vec<(Cluster, String)>,
    argocd: Option<String>,
    argocd_clusters: Vec<String>,
    unplaced: Vec<String>,
}

impl Readme {
    /// What each cluster gets of the platform, and what must be there already.
    fn platform_text(&self, settings: &Settings) -> String {
        if self.platform.is_empty() {
            return String::new();
        }
        let mut text = String::from(
            "\n## Platform controllers\n\n\
             Each cluster gets the controllers its blueprints' objects need, pinned releases\n\
             vendored in `data/platform/` (see its `SOURCES.md`), each from its own folder here.\n\
             These roots never delete what they applied: a cluster that stops needing a\n\
             controller keeps it, its CRDs and their objects until someone removes them.\n",
        );
        text.push_str(match settings.engine {
            Engine::ArgoCd => {
                "Their Applications are in sync wave -1 of the app of apps, the blueprints' in 0.\n\
                 Argo CD waits for a wave to be healthy only if it assesses the health of\n\
                 Applications, which it does not by default: add a health check for\n\
                 `argoproj.io/Application` (`resource.customizations.health.argoproj.io_Application`\n\
                 in `argocd-cm`, returning the Application's `status.health`), or the blueprints'\n\
                 Applications sync at once and retry until the CRDs exist.\n"
            }
            Engine::ConfigSync | Engine::None => {
                "Each blueprint RootSync of a cluster `depends-on` its platform RootSyncs, so they are\n\
                 applied once those are up (reconciler running); until the controllers' CRDs are\n\
                 applied, a blueprint's custom objects fail with KNV1021 and are retried.\n"
            }
        });
        text.push('\n');
        for (cluster, dirs, needs) in &self.platform {
            let components: Vec<String> = needs
                .components
                .iter()
                .map(|c| format!("{} {}", c.title(), c.version()))
                .collect();
            let key = cluster.key();
            let elsewhere = settings.platform.managed_elsewhere.contains(&key);
            text.push_str(&format!("- `{key}`: "));
            if components.is_empty() && needs.managed_mesh.is_none() {
                text.push_str("no controller");
            } else if elsewhere {
                text.push_str(&format!(
                    "managed elsewhere (`aiml.yaml` `platform.managedElsewhere`); must run {}",
                    components.join(", ")
                ));
                if needs.components.contains(&platform::Component::Kueue) {
                    text.push_str(" (Kueue with `waitForPodsReady` and the `batch/job`, `jobset.x-k8s.io/jobset` and `leaderworkerset.x-k8s.io/leaderworkerset` integrations)");
                }
                if needs
                    .components
                    .contains(&platform::Component::MetricsAdapter)
                {
                    match &needs.metrics_adapter_account {
                        Some(account) => text.push_str(&format!(
                            " (the adapter's service account annotated `iam.gke.io/gcp-service-account: {account}`)"
                        )),
                        None => text.push_str(" (the adapter's service account with Workload Identity to read Cloud Monitoring)"),
                    }
                }
            } else {
                text.push_str(&components.join(", "));
                for dir in dirs {
                    text.push_str(&format!(", `{dir}`"));
                }
                if let Some(mesh) = &needs.managed_mesh {
                    if !components.is_empty() {
                        text.push_str(", ");
                    }
                    text.push_str(&format!(
                        "Cloud Service Mesh (Google-managed, for Istio and its `gateway` injection template), turned on through the fleet by `{mesh}` on the Config Connector host"
                    ));
                }
                if needs
                    .components
                    .contains(&platform::Component::MetricsAdapter)
                {
                    match &needs.metrics_adapter_account {
                        Some(account) => text.push_str(&format!(" (the adapter reads Cloud Monitoring as `{account}`)")),
                        None => text.push_str(" (no blueprint on it grants the adapter a Google service account: give its Kubernetes service account `custom-metrics/custom-metrics-stackdriver-adapter` Workload Identity to read Cloud Monitoring)"),
                    }
                }
            }
            let unprovided: Vec<String> =
                needs.unprovided.iter().map(|g| format!("`{g}`")).collect();
            let prerequisites: Vec<String> = needs
                .prerequisites
                .iter()
                .map(ToString::to_string)
                .collect();
            for (label, items, separator) in [
                ("no provider known to kubectl-aiml for", unprovided, ", "),
                (
                    "not installed by kubectl-aiml, must be on it:",
                    prerequisites,
                    "; ",
                ),
            ] {
                if !items.is_empty() {
                    text.push_str(&format!("; {label} {}", items.join(separator)));
                }
            }
            text.push_str(".\n");
        }
        text
    }

    fn text(&self, settings: &Settings) -> String {
        let mut text = String::from(
            "# Sync wiring (generated by kubectl-aiml from aiml.yaml; do not edit)\n\n\
             Every blueprint's `rendered/<name>/config-connector/` and `rendered/<name>/workload/`\n\
             is a sync root of its own. This folder gathers them per cluster (sync objects\n\
             only, beside `platform/`: the controllers each cluster needs). Apply each bootstrap\n\
             below once; everything after comes from git.\n",
        );
        match settings.engine {
            Engine::ConfigSync | Engine::None => {
                if let Some(host) = &self.host {
                    text.push_str(&format!(
                        "\n## Config Connector host cluster\n\n\
                         Config Sync installed, Config Connector in namespaced mode:\n\n\
                         ```sh\nkubectl apply -f rendered/{SYNC_DIR}/{host}\n```\n"
                    ));
                }
                if !self.fleet.is_empty() {
                    text.push_str(
                        "\n## Clusters the blueprints create\n\n\
                         Nothing to apply: each is registered to the fleet with Config Sync on by the\n\
                         objects of the blueprint that creates it, pointed at its folder here.\n\n",
                    );
                    for cluster in &self.fleet {
                        text.push_str(&format!(
                            "- `{}/{}/{}`: `{}/`\n",
                            cluster.project,
                            cluster.location,
                            cluster.name,
                            cluster.dir().unwrap_or_default()
                        ));
                    }
                }
                if !self.existing.is_empty() {
                    text.push_str(
                        "\n## Existing clusters\n\nConfig Sync installed, apply once on each:\n\n```sh\n",
                    );
                    for (cluster, file) in &self.existing {
                        text.push_str(&format!(
                            "kubectl --context {} apply -f rendered/{SYNC_DIR}/{file}\n",
                            cluster.argocd_name()
                        ));
                    }
                    text.push_str("```\n");
                }
            }
            Engine::ArgoCd => {
                if let Some(bootstrap) = &self.argocd {
                    text.push_str(&format!(
                        "\n## Argo CD\n\n\
                         Argo CD 3 or later (annotation resource tracking: the objects keep their\n\
                         `app.kubernetes.io/instance` label). Give Argo CD the repository's credentials\n\
                         if it is private (`argocd repo add`), register each workload cluster under its\n\
                         kubeconfig context name, then apply the app of apps once where Argo CD runs\n\
                         (namespace `{}`):\n\n```sh\n",
                        settings.argocd.namespace
                    ));
                    for cluster in &self.argocd_clusters {
                        text.push_str(&format!("argocd cluster add {cluster}\n"));
                    }
                    text.push_str(&format!(
                        "kubectl apply -f rendered/{SYNC_DIR}/{bootstrap}\n```\n"
                    ));
                }
            }
        }
        text.push_str(&self.platform_text(settings));
        if !self.unplaced.is_empty() {
            text.push_str(&format!(
                "\n## Not wired\n\nNo cluster is known for: {}.\n",
                self.unplaced
                    .iter()
                    .map(|name| format!("`{name}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{ClusterExport, Exported, Exports};
    use crate::settings::GitAuth;

    fn exported(exports: Exports) -> Exported {
        Exported {
            kind: "MultisliceTraining".into(),
            file: "blueprints/x.yaml".into(),
            line: 1,
            exports,
            readable: true,
        }
    }

    fn cluster(project: &str, name: &str, managed: bool) -> Exports {
        Exports {
            cluster: Some(ClusterExport {
                project: project.into(),
                name: name.into(),
                location: "us-central2-b".into(),
                region: "us-central2".into(),
                config_connector_namespace: project.into(),
                managed,
            }),
            ..Exports::default()
        }
    }

    /// `owner` creates its cluster, `guest` runs on it, `outside` runs on a cluster that
    /// exists already.
    fn repository() -> Repository {
        let mut repository = Repository::new();
        repository.insert(
            "owner".into(),
            exported(cluster("my-project", "owner", true)),
        );
        repository.insert(
            "guest".into(),
            exported(Exports {
                cluster_of: Some("owner".into()),
                ..Exports::default()
            }),
        );
        repository.insert("outside".into(), exported(cluster("other", "prod", false)));
        repository
    }

    fn settings(engine: Engine) -> Settings {
        Settings {
            git: Some(Git {
                repo: "https://example.com/acme/platform.git".into(),
                branch: "main".into(),
                dir: String::new(),
                auth: GitAuth::None,
                gcp_service_account_email: None,
            }),
            engine,
            ..Settings::default()
        }
    }

    fn both() -> Roots {
        Roots {
            config_connector: Some(3),
            workload: Some(2),
            ..Roots::default()
        }
    }

    #[test]
    fn only_the_blueprint_that_creates_a_cluster_registers_it() {
        let repository = repository();
        let config_sync = settings(Engine::ConfigSync);
        let fleet = fleet_objects(&config_sync, &repository, "owner")
            .unwrap()
            .unwrap();
        let objects = manifest::split(&fleet).unwrap();
        let kinds: Vec<&str> = objects.iter().map(|m| m.id.kind.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "GKEHubFeature",
                "GKEHubFeatureMembership",
                "GKEHubMembership",
                "Service",
                "Service"
            ]
        );
        let membership = objects
            .iter()
            .find(|m| m.id.kind == "GKEHubFeatureMembership")
            .unwrap();
        assert_eq!(
            membership
                .node
                .at(&["spec", "configmanagement", "configSync", "git", "policyDir"])
                .and_then(crate::yaml::Node::as_str),
            Some("rendered/_sync/clusters/my-project/us-central2-b/owner")
        );
        for object in &objects {
            let errors = crate::schema::Schemas::embedded().check_with_source(
                &crate::validate::Object::from_node(&object.path, &object.node).unwrap(),
                &object.text,
                &crate::schema::CheckOptions { strict: true },
            );
            assert!(errors.is_empty(), "{}: {errors:#?}", object.path);
        }
        for (engine, name) in [
            (Engine::ConfigSync, "guest"),
            (Engine::ConfigSync, "outside"),
            (Engine::ArgoCd, "owner"),
            (Engine::None, "owner"),
        ] {
            assert!(
                fleet_objects(&settings(engine), &repository, name)
                    .unwrap()
                    .is_none(),
                "{engine:?} {name}"
            );
        }
        assert!(
            fleet_objects(&Settings::default(), &repository, "owner")
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn one_folder_per_cluster_gathers_every_blueprint_on_it() {
        let repository = repository();
        let roots: BTreeMap<String, Roots> = ["owner", "guest", "outside"]
            .into_iter()
            .map(|name| (name.to_string(), both()))
            .collect();
        let files = sync_folder(&settings(Engine::ConfigSync), &repository, &roots)
            .unwrap()
            .unwrap();
        let paths: Vec<&str> = files.keys().map(String::as_str).collect();
        assert_eq!(
            paths,
            [
                "README.md",
                "bootstrap/clusters/other/us-central2-b/prod.yaml",
                "bootstrap/config-connector-host.yaml",
                "clusters/my-project/us-central2-b/owner/config-management-system/rootsync.configsync.gke.io_aiml-guest.yaml",
                "clusters/my-project/us-central2-b/owner/config-management-system/rootsync.configsync.gke.io_aiml-owner.yaml",
                "clusters/other/us-central2-b/prod/config-management-system/rootsync.configsync.gke.io_aiml-outside.yaml",
                "config-connector-host/config-management-system/rootsync.configsync.gke.io_aiml-cc-guest.yaml",
                "config-connector-host/config-management-system/rootsync.configsync.gke.io_aiml-cc-outside.yaml",
                "config-connector-host/config-management-system/rootsync.configsync.gke.io_aiml-cc-owner.yaml",
            ]
        );
        let guest = &files["clusters/my-project/us-central2-b/owner/config-management-system/rootsync.configsync.gke.io_aiml-guest.yaml"];
        assert!(
            guest.contains("dir: \"rendered/guest/workload\""),
            "{guest}"
        );
        let readme = &files["README.md"];
        assert!(readme.contains("kubectl --context gke_other_us-central2-b_prod apply -f rendered/_sync/bootstrap/clusters/other/us-central2-b/prod.yaml"), "{readme}");

        let argocd = sync_folder(&settings(Engine::ArgoCd), &repository, &roots)
            .unwrap()
            .unwrap();
        assert_eq!(
            argocd.keys().filter(|p| p.starts_with("argocd/")).count(),
            6
        );
        let guest = &argocd["argocd/argocd/application.argoproj.io_aiml-guest-workload.yaml"];
        assert!(
            guest.contains("name: \"gke_my-project_us-central2-b_owner\""),
            "{guest}"
        );
        assert!(
            sync_folder(&Settings::default(), &repository, &roots)
                .unwrap()
                .is_none()
        );
    }

    /// `owner` runs a JobSet on its cluster, `outside` an HPA on an external metric on a
    /// cluster that exists.
    fn needing() -> BTreeMap<String, Roots> {
        let uses = |groups: &[&str], external_metrics| platform::Uses {
            groups: groups.iter().map(|g| (*g).to_string()).collect(),
            external_metrics,
            ..platform::Uses::default()
        };
        BTreeMap::from([
            (
                "owner".to_string(),
                Roots {
                    uses: uses(&["", "jobset.x-k8s.io", "kueue.x-k8s.io"], false),
                    ..both()
                },
            ),
            ("guest".to_string(), both()),
            (
                "outside".to_string(),
                Roots {
                    uses: uses(&["autoscaling"], true),
                    ..both()
                },
            ),
        ])
    }

    #[test]
    fn clusters_the_repository_creates_get_managed_service_mesh_for_istio() {
        let repository = repository();
        let istio = platform::Uses {
            groups: ["networking.istio.io".to_string()].into(),
            gateway_injection: true,
            ..platform::Uses::default()
        };
        let roots = BTreeMap::from([
            (
                "owner".to_string(),
                Roots {
                    uses: istio.clone(),
                    ..both()
                },
            ),
            (
                "outside".to_string(),
                Roots {
                    uses: istio,
                    ..both()
                },
            ),
        ]);
        let files = sync_folder(&settings(Engine::ConfigSync), &repository, &roots)
            .unwrap()
            .unwrap();
        let mesh: Vec<&str> = files
            .keys()
            .filter(|p| p.contains("/mesh/"))
            .map(String::as_str)
            .collect();
        assert_eq!(
            mesh,
            [
                "platform/clusters/my-project/us-central2-b/owner/mesh/my-project/gkehubfeature.gkehub.cnrm.cloud.google.com_owner-servicemesh.yaml",
                "platform/clusters/my-project/us-central2-b/owner/mesh/my-project/gkehubfeaturemembership.gkehub.cnrm.cloud.google.com_owner-servicemesh.yaml",
                "platform/clusters/my-project/us-central2-b/owner/mesh/my-project/service.serviceusage.cnrm.cloud.google.com_owner-mesh.yaml",
            ],
            "only the cluster the repository creates, registered to the fleet"
        );
        let membership = manifest::split(&files[mesh[1]]).unwrap().remove(0);
        assert_eq!(
            membership
                .node
                .at(&["spec", "mesh", "management"])
                .and_then(crate::yaml::Node::as_str),
            Some("MANAGEMENT_AUTOMATIC")
        );
        assert_eq!(
            membership
                .node
                .at(&["spec", "membershipRef", "name"])
                .and_then(crate::yaml::Node::as_str),
            Some("owner"),
            "the membership the owner's fleet objects create"
        );
        for path in &mesh {
            let object = manifest::split(&files[*path]).unwrap().remove(0);
            let errors = crate::schema::Schemas::embedded().check_with_source(
                &crate::validate::Object::from_node(&object.path, &object.node).unwrap(),
                &object.text,
                &crate::schema::CheckOptions { strict: true },
            );
            assert!(errors.is_empty(), "{path}: {errors:#?}");
        }
        // Synced on the host, never deleting what it turned on.
        let root = files
            .iter()
            .find(|(p, _)| {
                p.contains("config-connector-host/") && p.contains("aiml-platform-mesh-")
            })
            .map(|(_, text)| text)
            .unwrap();
        assert!(
            root.contains(
                "dir: \"rendered/_sync/platform/clusters/my-project/us-central2-b/owner/mesh\""
            ),
            "{root}"
        );
        assert!(!root.contains("deletion-propagation-policy"), "{root}");
        // Istio is a prerequisite only where the tool does not turn the mesh on.
        let readme = &files["README.md"];
        assert!(
            readme
                .contains("- `my-project/us-central2-b/owner`: Cloud Service Mesh (Google-managed"),
            "{readme}"
        );
        assert!(
            readme.contains("- `other/us-central2-b/prod`: no controller; not installed by kubectl-aiml, must be on it: Istio 1.30"),
            "{readme}"
        );

        // Opted out, or under Argo CD (no fleet registration): a prerequisite everywhere.
        let mut elsewhere = settings(Engine::ConfigSync);
        elsewhere
            .platform
            .managed_elsewhere
            .insert("my-project/us-central2-b/owner".into());
        for settings in [elsewhere, settings(Engine::ArgoCd)] {
            let files = sync_folder(&settings, &repository, &roots)
                .unwrap()
                .unwrap();
            assert!(
                !files.keys().any(|p| p.contains("/mesh/")),
                "{:?}",
                settings.engine
            );
        }
    }

    #[test]
    fn each_cluster_syncs_its_controllers_before_its_blueprints() {
        let repository = repository();
        let files = sync_folder(&settings(Engine::ConfigSync), &repository, &needing())
            .unwrap()
            .unwrap();
        let owner = "clusters/my-project/us-central2-b/owner/config-management-system";
        let platform: Vec<&str> = files
            .keys()
            .filter(|p| p.contains("rootsync.configsync.gke.io_aiml-platform-"))
            .map(String::as_str)
            .collect();
        assert_eq!(
            platform,
            [
                "clusters/my-project/us-central2-b/owner/config-management-system/rootsync.configsync.gke.io_aiml-platform-jobset.yaml",
                "clusters/my-project/us-central2-b/owner/config-management-system/rootsync.configsync.gke.io_aiml-platform-kueue.yaml",
                "clusters/other/us-central2-b/prod/config-management-system/rootsync.configsync.gke.io_aiml-platform-metrics-adapter.yaml",
            ]
        );
        let jobset =
            &files[&format!("{owner}/rootsync.configsync.gke.io_aiml-platform-jobset.yaml")];
        assert!(
            jobset.contains("dir: \"rendered/_sync/platform/jobset-v0.12.0\""),
            "{jobset}"
        );
        // Never deleted with what it applied: the CRDs would take every JobSet along.
        assert!(!jobset.contains("deletion-propagation-policy"), "{jobset}");
        for blueprint in ["guest", "owner"] {
            let root = &files[&format!("{owner}/rootsync.configsync.gke.io_aiml-{blueprint}.yaml")];
            assert!(root.contains("config.kubernetes.io/depends-on: \"configsync.gke.io/namespaces/config-management-system/RootSync/aiml-platform-jobset,configsync.gke.io/namespaces/config-management-system/RootSync/aiml-platform-kueue\""), "{root}");
        }
        assert!(files.contains_key("platform/kueue-v0.19.2/_cluster/customresourcedefinition.apiextensions.k8s.io_workloads.kueue.x-k8s.io.yaml"));
        assert!(files.keys().any(|p| p.starts_with("platform/clusters/other/us-central2-b/prod/custom-metrics-stackdriver-adapter-v0.16.9-gke.0/")));
        assert!(!files.keys().any(|p| p.starts_with("platform/lws")));

        // Opted out: no platform root, and the README says what must be there.
        let mut elsewhere = settings(Engine::ConfigSync);
        elsewhere
            .platform
            .managed_elsewhere
            .insert("my-project/us-central2-b/owner".into());
        let files = sync_folder(&elsewhere, &repository, &needing())
            .unwrap()
            .unwrap();
        assert!(
            !files
                .keys()
                .any(|p| p.starts_with("platform/jobset") || p.contains("aiml-platform-jobset"))
        );
        let root = &files[&format!("{owner}/rootsync.configsync.gke.io_aiml-owner.yaml")];
        assert!(!root.contains("depends-on"), "{root}");
        assert!(files["README.md"].contains("`my-project/us-central2-b/owner`: managed elsewhere (`aiml.yaml` `platform.managedElsewhere`); must run JobSet v0.12.0, Kueue v0.19.2"), "{}", files["README.md"]);

        let argocd = sync_folder(&settings(Engine::ArgoCd), &repository, &needing())
            .unwrap()
            .unwrap();
        let kueue = argocd
            .iter()
            .find(|(p, _)| p.starts_with("argocd/") && p.contains("platform-kueue"))
            .map(|(_, text)| text)
            .unwrap();
        for expected in [
            "argocd.argoproj.io/sync-wave: \"-1\"",
            "- ServerSideApply=true",
            "name: \"gke_my-project_us-central2-b_owner\"",
        ] {
            assert!(kueue.contains(expected), "{expected}: {kueue}");
        }
        assert!(!kueue.contains("resources-finalizer"), "{kueue}");
    }

    #[test]
    fn long_blueprint_names_give_valid_sync_object_names() {
        let name = "a-very-long-blueprint-name-for-llama-pretraining-on-tpu-v5p-128";
        assert_eq!(name.len(), 63);
        let root_sync = root_sync_name("aiml-cc-", name);
        assert!(root_sync.len() <= MAX_ROOT_SYNC_NAME, "{root_sync}");
        assert_ne!(
            root_sync,
            root_sync_name("aiml-cc-", &format!("{}x", &name[..62]))
        );
        assert!(application_name(name, "-config-connector").len() <= 63);
    }

    #[test]
    fn config_connector_roots_wait_for_clusters_and_slices_and_applications_retry() {
        let repository = repository();
        let owner = Roots::from_paths([
            "config-connector/p/containercluster.container.cnrm.cloud.google.com_owner.yaml",
            "config-connector/p/containernodepool.container.cnrm.cloud.google.com_owner-tpu.yaml",
            "workload/_cluster/c.yaml",
        ]);
        assert_eq!((owner.clusters, owner.node_pools), (1, 1));
        let guest = Roots::from_paths([
            "config-connector/p/containernodepool.container.cnrm.cloud.google.com_guest-tpu.yaml",
        ]);
        let roots: BTreeMap<String, Roots> = [
            ("owner".to_string(), owner),
            ("guest".to_string(), guest),
            ("outside".to_string(), both()),
        ]
        .into_iter()
        .collect();
        let schemas = crate::schema::Schemas::embedded();
        let valid = |path: &str, text: &str| {
            for object in manifest::split(text).unwrap() {
                let errors = schemas.check_with_source(
                    &crate::validate::Object::from_node(path, &object.node).unwrap(),
                    &object.text,
                    &crate::schema::CheckOptions { strict: true },
                );
                assert!(errors.is_empty(), "{path}: {errors:#?}");
            }
        };
        let files = sync_folder(&settings(Engine::ConfigSync), &repository, &roots)
            .unwrap()
            .unwrap();
        let host =
            "config-connector-host/config-management-system/rootsync.configsync.gke.io_aiml-cc-";
        for (name, timeout) in [
            ("owner", Some("40m")),
            ("guest", Some("30m")),
            ("outside", None),
        ] {
            let text = &files[&format!("{host}{name}.yaml")];
            valid(name, text);
            let object = &manifest::split(text).unwrap()[0];
            let found = object
                .node
                .at(&["spec", "override", "reconcileTimeout"])
                .and_then(crate::yaml::Node::as_str);
            assert_eq!(found, timeout, "{text}");
        }
        let workload = &files["clusters/my-project/us-central2-b/owner/config-management-system/rootsync.configsync.gke.io_aiml-owner.yaml"];
        assert!(!workload.contains("reconcileTimeout"), "{workload}");

        let argocd = sync_folder(&settings(Engine::ArgoCd), &repository, &roots)
            .unwrap()
            .unwrap();
        for (path, text) in argocd.iter().filter(|(p, _)| p.ends_with(".yaml")) {
            valid(path, text);
            let object = &manifest::split(text).unwrap()[0];
            let policy = object.node.at(&["spec", "syncPolicy"]).unwrap();
            let options: Vec<&str> = policy
                .items("syncOptions")
                .iter()
                .filter_map(crate::yaml::Node::as_str)
                .collect();
            assert_eq!(options, ["SkipDryRunOnMissingResource=true"], "{path}");
            let retry = |field: &[&str]| {
                policy.at(field).map(|n| {
                    n.as_str()
                        .map_or_else(|| format!("{:?}", n.value), str::to_string)
                })
            };
            assert!(
                retry(&["retry", "limit"]).is_some_and(|l| l.contains("-1")),
                "{text}"
            );
            assert_eq!(
                retry(&["retry", "backoff", "maxDuration"]).as_deref(),
                Some("10m")
            );
        }
    }

    #[test]
    fn roots_count_objects_per_target_folder() {
        let roots = Roots::from_paths([
            "config-connector/p/a.yaml",
            "config-connector/p/b.yaml",
            "workload/_cluster/c.yaml",
        ]);
        assert_eq!(roots.config_connector, Some(2));
        assert_eq!(roots.workload, Some(1));
        assert_eq!(
            Roots::from_paths(["workload/ns/x.yaml"]).config_connector,
            None
        );
    }
}
