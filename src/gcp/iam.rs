//! Identity: the blueprint's Google service accounts, the roles they are granted (on the
//! project or on one resource), and Workload Identity, which lets a Kubernetes service account
//! act as one of them.
//!
//! Its own module because every block hands its accounts and resources here: a binding's
//! member, resource and apply order depend on whether each side is created or existing, and
//! the binding objects' names must stay unique across all of them.

use super::spec::ServiceAccountSpec;
use super::{
    BucketHandle, CNRM, ClusterHandle, Dependency, Gcp, IamMemberPlan, IamResource, Member, Meta,
    Ref, RegistryHandle, ServiceAccountPlan, rule,
};
use crate::names;
use crate::plan::Planner;

/// A created-or-referenced service account.
#[derive(Clone, Debug)]
pub struct AccountHandle {
    /// Account id.
    pub id: String,
    /// Email.
    pub email: String,
    /// Short label for object names (`node`, `wi`, …).
    pub(super) label: String,
    pub(super) reference: Ref,
    pub(super) dependency: Option<Dependency>,
}

impl AccountHandle {
    /// The account as an IAM member: a reference when this overlay creates it, else its email.
    #[must_use]
    pub fn member(&self) -> Member {
        if self.dependency.is_some() {
            Member::ServiceAccount {
                reference: self.reference.clone(),
            }
        } else {
            Member::Principal {
                member: format!("serviceAccount:{}", self.email),
            }
        }
    }
}

/// A resource IAM bindings can be on.
#[derive(Clone, Debug)]
pub struct IamTarget {
    /// Short text for binding object names.
    label: String,
    resource: IamResource,
    dependency: Option<Dependency>,
}

impl IamTarget {
    /// A resource made elsewhere, by its Config Connector group and kind and its external id:
    /// e.g. (`secretmanager`, `SecretManagerSecret`, `projects/p/secrets/s`). `label` names
    /// the binding objects.
    #[must_use]
    pub fn external(group: &str, kind: &str, external: impl Into<String>, label: &str) -> Self {
        Self::new(group, kind, Ref::external(external), label, None)
    }

    /// The Config Connector object `kind` of `group` (short form, e.g. `storage`) that
    /// `reference` names, reconciled after `dependency` when this overlay creates it.
    pub(super) fn new(
        group: &str,
        kind: &str,
        reference: Ref,
        label: &str,
        dependency: Option<Dependency>,
    ) -> Self {
        Self {
            label: label.to_string(),
            resource: cnrm_resource(group, kind, reference),
            dependency,
        }
    }
}

impl Gcp {
    /// Reports node and workload accounts that are one account: pods would act as the
    /// nodes, and the nodes as the workload.
    pub fn require_distinct_accounts(
        planner: &mut Planner<'_>,
        nodes: &AccountHandle,
        workload: &AccountHandle,
    ) {
        if nodes.id == workload.id {
            planner.error(
                rule::SERVICE_ACCOUNT_ID,
                "spec.serviceAccounts.workload.name",
                "the node and workload service accounts must differ",
            );
        }
    }

    /// Plans a service account: created (with its display name) or existing.
    pub fn service_account(
        &mut self,
        planner: &mut Planner<'_>,
        spec: &ServiceAccountSpec,
        field: &str,
        label: &str,
        display_name: &str,
    ) -> AccountHandle {
        let given = self.given_or_derived(spec.name.as_ref(), &format!("-{label}"), 6, 30);
        let own_domain = format!("{}.iam.gserviceaccount.com", self.project);
        // An email names the account exactly (an existing one may live in another project);
        // an id is an account of the blueprint's project.
        let (id, email) = match given.split_once('@') {
            Some((id, domain)) => {
                if !spec.existing && domain != own_domain {
                    let d = planner.error(
                        rule::CONFLICT,
                        &format!("{field}.name"),
                        format!(
                            "a new service account is created in project `{}`, not as `{given}`",
                            self.project
                        ),
                    );
                    d.fix = Some(format!(
                        "write the id `{id}` alone, or add `existing: true` to use `{given}`"
                    ));
                }
                (id.to_string(), given.clone())
            }
            None => (given.clone(), format!("{given}@{own_domain}")),
        };
        planner.check_name(
            rule::SERVICE_ACCOUNT_ID,
            &format!("{field}.name"),
            &id,
            names::service_account_id,
        );
        let (reference, dependency) = if spec.existing {
            (Ref::external(email.clone()), None)
        } else {
            let iam = self.api("iam.googleapis.com");
            let dependency = self.dependency("iam", "IAMServiceAccount", &id);
            self.infra.service_accounts.push(ServiceAccountPlan {
                meta: Meta::new(id.clone(), [iam]),
                display_name: format!("{display_name} ({})", self.blueprint),
            });
            (Ref::name(id.clone()), Some(dependency))
        };
        AccountHandle {
            id,
            email,
            label: label.to_string(),
            reference,
            dependency,
        }
    }

    /// Grants `role` on the project to `account`.
    pub fn project_role(&mut self, account: &AccountHandle, role: &str) {
        let name = format!(
            "{}-{}-{}",
            self.blueprint,
            account.label,
            names::role_slug(role)
        );
        let project = self.project_resource();
        self.bind(
            name,
            account.dependency.clone(),
            account.member(),
            role,
            project,
        );
    }

    /// Grants `role` on `bucket` to `account`.
    pub fn bucket_role(&mut self, bucket: &BucketHandle, account: &AccountHandle, role: &str) {
        self.grant(&bucket.iam_target(), account, role);
    }

    /// Lets `account` (a node account) pull images from `registry`: Artifact Registry Reader
    /// on that repository, not on the project.
    pub fn registry_reader(&mut self, registry: &RegistryHandle, account: &AccountHandle) {
        self.grant(
            &registry.repository.iam_target(),
            account,
            "roles/artifactregistry.reader",
        );
    }

    /// Lets `account` pull `image` when it lives in an Artifact Registry Docker repository
    /// (`<location>-docker.pkg.dev/<project>/<repository>/…`): Reader on that repository.
    /// Images elsewhere (public registries) need no grant.
    pub fn image_reader(&mut self, image: &str, account: &AccountHandle) {
        let Some((host, path)) = image.split_once('/') else {
            return;
        };
        let Some(location) = host.strip_suffix("-docker.pkg.dev") else {
            return;
        };
        let mut parts = path.splitn(3, '/');
        let (Some(project), Some(repository), Some(_)) = (parts.next(), parts.next(), parts.next())
        else {
            return;
        };
        let external = format!("projects/{project}/locations/{location}/repositories/{repository}");
        let target = IamTarget::external(
            "artifactregistry",
            "ArtifactRegistryRepository",
            external,
            repository,
        );
        self.grant(&target, account, "roles/artifactregistry.reader");
    }

    /// Grants `role` on a resource to `account`.
    pub fn grant(&mut self, target: &IamTarget, account: &AccountHandle, role: &str) {
        let name = format!(
            "{}-{}-{}-{}",
            self.blueprint,
            account.label,
            target.label.replace(['_', '.'], "-").to_lowercase(),
            names::role_slug(role)
        );
        let depends_on = self
            .target_dependencies(target)
            .into_iter()
            .chain(account.dependency.clone());
        self.bind(
            name,
            depends_on,
            account.member(),
            role,
            target.resource.clone(),
        );
    }

    /// Grants `role` on a resource to a principal that is no service account of the
    /// blueprint (a Google service agent), after `depends_on`; `label` names the binding
    /// object. Returns the dependency on the binding.
    pub fn grant_to_principal(
        &mut self,
        target: &IamTarget,
        principal: &str,
        label: &str,
        role: &str,
        depends_on: impl IntoIterator<Item = Dependency>,
    ) -> Dependency {
        let name = format!(
            "{}-{label}-{}-{}",
            self.blueprint,
            target.label.replace(['_', '.'], "-").to_lowercase(),
            names::role_slug(role)
        );
        let depends_on: Vec<Dependency> = self
            .target_dependencies(target)
            .into_iter()
            .chain(depends_on)
            .collect();
        let member = Member::Principal {
            member: principal.to_string(),
        };
        self.bind(name, depends_on, member, role, target.resource.clone())
    }

    /// What a binding on `target` waits for: the object, when this overlay creates it; else
    /// its API, which this blueprint enables first (a resource made elsewhere takes its
    /// binding through its own API; one created here depends on that API already).
    fn target_dependencies(&mut self, target: &IamTarget) -> Vec<Dependency> {
        let api = match (&target.dependency, &target.resource.api_version) {
            (None, Some(api_version)) => api_version
                .split_once('.')
                .map(|(group, _)| self.api(&format!("{group}.googleapis.com"))),
            _ => None,
        };
        target.dependency.iter().cloned().chain(api).collect()
    }

    /// Lets the Kubernetes service account `namespace/ksa` act as `account` (Workload
    /// Identity). The cluster must exist first: it creates the project's identity pool.
    pub fn workload_identity(
        &mut self,
        account: &AccountHandle,
        cluster: &ClusterHandle,
        namespace: &str,
        kubernetes_service_account: &str,
    ) {
        // Pods exchange their Kubernetes token for Google credentials through this API.
        self.api("iamcredentials.googleapis.com");
        let name = format!(
            "{}-{}-workload-identity-user",
            self.blueprint, account.label
        );
        // A binding on an account made elsewhere goes through the IAM API.
        let api = account
            .dependency
            .is_none()
            .then(|| self.api("iam.googleapis.com"));
        let depends_on = account
            .dependency
            .iter()
            .chain(&cluster.dependency)
            .chain(&api)
            .cloned();
        let reference = match &account.dependency {
            Some(_) => account.reference.clone(),
            // An existing account may live in another project: its email says which.
            None => Ref::external(format!(
                "projects/{}/serviceAccounts/{}",
                account_project(&account.email).unwrap_or(&self.project),
                account.email
            )),
        };
        let member = Member::Principal {
            member: format!(
                "serviceAccount:{}[{namespace}/{kubernetes_service_account}]",
                cluster.workload_pool()
            ),
        };
        self.bind(
            name,
            depends_on,
            member,
            "roles/iam.workloadIdentityUser",
            cnrm_resource("iam", "IAMServiceAccount", reference),
        );
    }

    /// The project, as the resource of an IAM binding.
    fn project_resource(&self) -> IamResource {
        IamResource {
            api_version: None,
            kind: "Project".into(),
            reference: Ref::external(format!("projects/{}", self.project)),
        }
    }

    /// Plans the binding object `name`: `role` for `member` on `resource`. Returns the
    /// dependency on it.
    fn bind(
        &mut self,
        name: String,
        depends_on: impl IntoIterator<Item = Dependency>,
        member: Member,
        role: &str,
        resource: IamResource,
    ) -> Dependency {
        let dependency = self.dependency("iam", "IAMPolicyMember", &name);
        self.infra.iam_members.push(IamMemberPlan {
            meta: Meta::new(name, depends_on),
            member,
            role: role.to_string(),
            resource,
        });
        dependency
    }
}

/// The Config Connector object `kind` of `group` (short form) that `reference` names, as the
/// resource of an IAM binding.
fn cnrm_resource(group: &str, kind: &str, reference: Ref) -> IamResource {
    IamResource {
        api_version: Some(format!("{group}.{CNRM}/v1beta1")),
        kind: kind.to_string(),
        reference,
    }
}

/// The project of a user-managed service account, from its email
/// (`<id>@<project>.iam.gserviceaccount.com`); `None` for Google-managed accounts.
pub(super) fn account_project(email: &str) -> Option<&str> {
    email
        .split_once('@')?
        .1
        .strip_suffix(".iam.gserviceaccount.com")
}

/// The bindings among `grants` (of the Config Connector namespace `namespace`) that grant
/// roles to the account `reference` names (by object or by email), as dependencies: whoever
/// runs as the account needs its roles first.
pub(super) fn grants_to(
    grants: &[IamMemberPlan],
    namespace: &str,
    reference: &Ref,
) -> Vec<Dependency> {
    let email = reference
        .external
        .as_ref()
        .map(|e| format!("serviceAccount:{e}"));
    grants
        .iter()
        .filter(|grant| match &grant.member {
            Member::ServiceAccount { reference: member } => member == reference,
            Member::Principal { member } => email.as_ref() == Some(member),
        })
        .map(|grant| Dependency::on("iam", "IAMPolicyMember", namespace, &grant.meta.name))
        .collect()
}
