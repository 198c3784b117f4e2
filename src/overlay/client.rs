//! What a client kind shares, one whose workload calls an endpoint another blueprint serves
//! (see [`crate::plan::endpoint`]): running on that blueprint's cluster, reading its input
//! from Cloud Storage, and publishing request metrics to a sink of its own or the served
//! blueprint's.

use crate::gcp::spec::{BucketSpec, ClusterSpec, MetricsSinkSpec};
use crate::gcp::{AccountHandle, Gcp, IamTarget};
use crate::plan::{Planner, TopicExport};

/// The cluster as written, or the served blueprint's (`target`) when none is named: a
/// client runs on a cluster it never owns by default.
#[must_use]
pub fn cluster(written: &ClusterSpec, target: Option<&str>) -> ClusterSpec {
    let mut cluster = written.clone();
    if cluster == ClusterSpec::default()
        && let Some(target) = target
    {
        cluster.blueprint = Some(target.to_string());
    }
    cluster
}

/// [`cluster`], where a served blueprint that runs on another's cluster lends that
/// blueprint's: the client joins the cluster the server runs on.
#[must_use]
pub fn joined_cluster(
    planner: &Planner<'_>,
    written: &ClusterSpec,
    target: Option<&str>,
) -> ClusterSpec {
    let mut cluster = cluster(written, target);
    if *written == ClusterSpec::default()
        && let Some(owner) = cluster
            .blueprint
            .as_deref()
            .and_then(|target| planner.peek(target))
            .and_then(|exported| exported.exports.cluster_of.clone())
    {
        cluster.blueprint = Some(owner);
    }
    cluster
}

/// Lets `reader` read the objects of `bucket`, which the client does not own (its input,
/// named at `field`).
pub fn read_bucket(
    gcp: &mut Gcp,
    planner: &mut Planner<'_>,
    field: &str,
    bucket: &str,
    reader: &AccountHandle,
) {
    let bucket_handle = gcp.bucket(
        planner,
        &BucketSpec {
            name: Some(bucket.to_string()),
            existing: true,
            location: None,
        },
        field,
        bucket,
    );
    gcp.bucket_role(&bucket_handle, reader, "roles/storage.objectViewer");
}

/// The Pub/Sub topic `publisher` sends request metrics to, granted: the client's own sink
/// when `sink` (at `field`) enables one, else the served blueprint's topic, if any.
pub fn metrics_topic(
    gcp: &mut Gcp,
    planner: &mut Planner<'_>,
    (sink, field): (&MetricsSinkSpec, &str),
    (project, project_number): (&str, Option<&str>),
    served: Option<TopicExport>,
    publisher: &AccountHandle,
) -> Option<String> {
    let own_sink = gcp.metrics_sink(planner, sink, field, false, project_number);
    if let Some(topic) = own_sink {
        gcp.grant(&topic.iam_target(), publisher, "roles/pubsub.publisher");
        Some(format!("projects/{project}/topics/{}", topic.name))
    } else {
        served.map(|topic| {
            gcp.api("pubsub.googleapis.com");
            gcp.grant(
                &IamTarget::external("pubsub", "PubSubTopic", topic.path(), &topic.name),
                publisher,
                "roles/pubsub.publisher",
            );
            topic.path()
        })
    }
}
