//! Storage and data: Cloud Storage buckets, Artifact Registry repositories, Pub/Sub topics
//! and subscriptions, BigQuery datasets and tables; the blocks `sink` builds the metrics sink
//! from.
//!
//! Its own module because these are the resources whose data outlives the blueprint: the
//! created ones are protected (`protect`), each can be an existing one instead,
//! and their names and locations follow each service's own rules.

use std::marker::PhantomData;

use super::spec::{BucketSpec, DatasetSpec, RegistrySpec, TopicSpec};
use super::{
    BigQueryDelivery, BucketPlan, Column, DatasetPlan, Dependency, Gcp, IamTarget,
    MessageSchemaPlan, Meta, Ref, RegistryPlan, SubscriptionPlan, TablePlan, TopicPlan,
    conflicts_with_existing, location_error, named, rule,
};
use crate::names;
use crate::plan::Planner;

/// A created-or-referenced resource of the kind `K` ([`Bucket`], [`Topic`] or [`Dataset`]):
/// its name, and how the objects that use it refer to it and wait for it.
#[derive(Clone, Debug)]
pub struct Handle<K> {
    /// The resource's name or id.
    pub name: String,
    pub(super) reference: Ref,
    pub(super) dependency: Option<Dependency>,
    kind: PhantomData<K>,
}

/// The Config Connector kind a [`Handle`] is a resource of.
pub trait Resource {
    /// API group, short form (`storage`).
    const GROUP: &'static str;
    /// Kind (`StorageBucket`).
    const KIND: &'static str;
}

/// A Cloud Storage bucket.
#[derive(Clone, Copy, Debug)]
pub enum Bucket {}

/// A Pub/Sub topic.
#[derive(Clone, Copy, Debug)]
pub enum Topic {}

/// A BigQuery dataset.
#[derive(Clone, Copy, Debug)]
pub enum Dataset {}

/// An Artifact Registry repository.
#[derive(Clone, Copy, Debug)]
pub enum Repository {}

impl Resource for Bucket {
    const GROUP: &'static str = "storage";
    const KIND: &'static str = "StorageBucket";
}

impl Resource for Topic {
    const GROUP: &'static str = "pubsub";
    const KIND: &'static str = "PubSubTopic";
}

impl Resource for Dataset {
    const GROUP: &'static str = "bigquery";
    const KIND: &'static str = "BigQueryDataset";
}

impl Resource for Repository {
    const GROUP: &'static str = "artifactregistry";
    const KIND: &'static str = "ArtifactRegistryRepository";
}

/// A created-or-referenced bucket.
pub type BucketHandle = Handle<Bucket>;

/// A created-or-referenced Pub/Sub topic.
pub type TopicHandle = Handle<Topic>;

/// A created-or-referenced BigQuery dataset.
pub type DatasetHandle = Handle<Dataset>;

impl<K: Resource> Handle<K> {
    /// A resource made elsewhere, by its external id.
    fn existing(name: String, external: String) -> Self {
        Self {
            name,
            reference: Ref::external(external),
            dependency: None,
            kind: PhantomData,
        }
    }

    /// The resource as the resource of an IAM binding.
    #[must_use]
    pub fn iam_target(&self) -> IamTarget {
        IamTarget::new(
            K::GROUP,
            K::KIND,
            self.reference.clone(),
            &self.name,
            self.dependency.clone(),
        )
    }
}

impl BucketHandle {
    /// `gs://<name>`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("gs://{}", self.name)
    }
}

/// A created-or-referenced Artifact Registry repository.
#[derive(Clone, Debug)]
pub struct RegistryHandle {
    /// `<location>-docker.pkg.dev/<project>/<repository>`.
    pub url: String,
    /// The repository, for grants on it.
    pub repository: Handle<Repository>,
}

impl Gcp {
    /// Plans a bucket: created (kept when the object is deleted, see `protect`) or existing. `default_name` applies when the spec names none.
    pub fn bucket(
        &mut self,
        planner: &mut Planner<'_>,
        spec: &BucketSpec,
        field: &str,
        default_name: &str,
    ) -> BucketHandle {
        let name = named(
            planner,
            spec.name.as_ref(),
            default_name,
            field,
            rule::BUCKET_NAME,
            names::bucket,
            self.project_valid,
        );
        if spec.existing {
            keeps_its_location(planner, field, spec.location.as_ref(), "bucket");
            return Handle::existing(name.clone(), name);
        }
        let storage = self.api("storage.googleapis.com");
        check_location(planner, field, spec.location.as_deref());
        let location = spec
            .location
            .clone()
            .unwrap_or_else(|| self.region.clone())
            .to_uppercase();
        self.infra.buckets.push(BucketPlan {
            meta: Meta::new(name.clone(), [storage]),
            location,
        });
        self.created(name.clone(), &name)
    }

    /// Plans a Docker repository in Artifact Registry.
    pub fn registry(
        &mut self,
        planner: &mut Planner<'_>,
        spec: &RegistrySpec,
        field: &str,
        description: &str,
    ) -> RegistryHandle {
        let blueprint = self.blueprint.clone();
        let name = named(
            planner,
            spec.name.as_ref(),
            &blueprint,
            field,
            rule::RESOURCE_NAME,
            names::resource,
            true,
        );
        check_location(planner, field, spec.location.as_deref());
        let location = spec.location.clone().unwrap_or_else(|| self.region.clone());
        let url = format!("{location}-docker.pkg.dev/{}/{name}", self.project);
        let repository = if spec.existing {
            let external = format!(
                "projects/{}/locations/{location}/repositories/{name}",
                self.project
            );
            Handle::existing(name, external)
        } else {
            let api = self.api("artifactregistry.googleapis.com");
            self.infra.registries.push(RegistryPlan {
                meta: Meta::new(name.clone(), [api]),
                location,
                description: description.to_string(),
            });
            self.created(name.clone(), &name)
        };
        RegistryHandle { url, repository }
    }

    /// Plans a Pub/Sub topic, with a message schema (`PROTOCOL_BUFFER` text) when given.
    pub fn topic(
        &mut self,
        planner: &mut Planner<'_>,
        spec: &TopicSpec,
        field: &str,
        default_name: &str,
        schema: Option<&str>,
    ) -> TopicHandle {
        let name = named(
            planner,
            spec.name.as_ref(),
            default_name,
            field,
            rule::RESOURCE_NAME,
            names::pubsub,
            true,
        );
        if spec.existing {
            let external = format!("projects/{}/topics/{name}", self.project);
            return Handle::existing(name, external);
        }
        let api = self.api("pubsub.googleapis.com");
        let object = object_name(&name);
        let mut depends_on = vec![api.clone()];
        let schema = schema.map(|definition| {
            let schema_object = format!("{object}-schema");
            depends_on.push(self.dependency("pubsub", "PubSubSchema", &schema_object));
            self.infra.message_schemas.push(MessageSchemaPlan {
                meta: Meta::new(schema_object.clone(), [api]),
                schema_type: "PROTOCOL_BUFFER".into(),
                definition: definition.to_string(),
            });
            Ref::name(schema_object)
        });
        self.infra.topics.push(TopicPlan {
            meta: Meta::new(object.clone(), depends_on),
            schema,
        });
        self.created(name, &object)
    }

    /// Plans a subscription of `topic` that writes each message into `table` of `dataset`,
    /// field by field along the topic's schema, with the message metadata.
    pub fn bigquery_subscription(
        &mut self,
        name: &str,
        topic: &TopicHandle,
        dataset: &DatasetHandle,
        table: &str,
    ) {
        let table_object = table_object_name(dataset, table);
        let mut depends_on: Vec<Dependency> = topic.dependency.iter().cloned().collect();
        depends_on.extend(dataset.dependency.clone());
        let table_ref = if dataset.dependency.is_some() {
            depends_on.push(self.dependency("bigquery", "BigQueryTable", &table_object));
            Ref::name(table_object)
        } else {
            Ref::external(format!(
                "projects/{}/datasets/{}/tables/{table}",
                self.project, dataset.name
            ))
        };
        self.infra.subscriptions.push(SubscriptionPlan {
            meta: Meta::new(name, depends_on),
            topic: topic.reference.clone(),
            bigquery: Some(BigQueryDelivery {
                table: table_ref,
                use_topic_schema: true,
                write_metadata: true,
            }),
        });
    }

    /// Plans a BigQuery dataset.
    pub fn dataset(
        &mut self,
        planner: &mut Planner<'_>,
        spec: &DatasetSpec,
        field: &str,
        default_name: &str,
    ) -> DatasetHandle {
        let name = named(
            planner,
            spec.name.as_ref(),
            default_name,
            field,
            rule::RESOURCE_NAME,
            names::bigquery,
            true,
        );
        if spec.existing {
            keeps_its_location(planner, field, spec.location.as_ref(), "dataset");
            let external = format!("projects/{}/datasets/{name}", self.project);
            return Handle::existing(name, external);
        }
        let api = self.api("bigquery.googleapis.com");
        check_location(planner, field, spec.location.as_deref());
        let object = object_name(&name);
        let location = spec.location.clone().unwrap_or_else(|| self.region.clone());
        self.infra.datasets.push(DatasetPlan {
            meta: Meta::new(object.clone(), [api]),
            resource_id: name.clone(),
            location,
        });
        self.created(name, &object)
    }

    /// The resource called `name` that this overlay creates as the object `object`.
    fn created<K: Resource>(&self, name: String, object: &str) -> Handle<K> {
        Handle {
            name,
            reference: Ref::name(object),
            dependency: Some(self.dependency(K::GROUP, K::KIND, object)),
            kind: PhantomData,
        }
    }

    /// Plans a BigQuery table with `columns` in `dataset`.
    pub fn table(&mut self, dataset: &DatasetHandle, name: &str, columns: Vec<Column>) {
        self.infra.tables.push(TablePlan {
            meta: Meta::new(table_object_name(dataset, name), dataset.dependency.clone()),
            resource_id: name.to_string(),
            dataset: dataset.reference.clone(),
            schema: serde_json::to_string(&columns).unwrap_or_default(),
            columns,
        });
    }
}

/// Table ids repeat across datasets; their object names carry the dataset.
fn table_object_name(dataset: &DatasetHandle, table: &str) -> String {
    format!("{}-{}", object_name(&dataset.name), object_name(table))
}

/// Kubernetes object names allow no `_`; BigQuery ids allow nothing else between words.
fn object_name(bigquery_id: &str) -> String {
    bigquery_id.to_lowercase().replace('_', "-")
}

/// Checks the `location` a spec part gives, if any.
fn check_location(planner: &mut Planner<'_>, field: &str, location: Option<&str>) {
    if let Some(location) = location
        && let Err(reason) = names::data_location(location)
    {
        location_error(
            planner,
            &format!("{field}.location"),
            format!("invalid location `{location}`: {reason}"),
            location,
        );
    }
}

/// Reports the `location` given to an existing `what` (which keeps its own), if any.
fn keeps_its_location(
    planner: &mut Planner<'_>,
    field: &str,
    location: Option<&String>,
    what: &str,
) {
    if location.is_some() {
        conflicts_with_existing(
            planner,
            &format!("{field}.location"),
            format!("an existing {what} keeps its own location"),
        );
    }
}
