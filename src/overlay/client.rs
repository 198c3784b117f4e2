//! What a client kind shares, one whose workload calls an endpoint another blueprint serves
//! (see [`crate::plan::endpoint`]): running on that blueprint's cluster, reading its input
//! from Cloud Storage, and publishing request metrics to a sink of its own or the served
//! blueprint's.

use crate::gcp::spec::{BucketSpec, ClusterSpec, MetricsSinkSpec};
use crate::gcp::{AccountHandle, Gcp, IamTarget};
use crate::plan::{Planner, TopicExport, rule};

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
/// blueprint's: the client joins the cluster the server runs on. A client whose target is
/// given by address (`target` is `None`) and that names no cluster is a finding, naming it as
/// `client`.
pub fn joined_cluster(
    planner: &mut Planner<'_>,
    written: &ClusterSpec,
    target: Option<&str>,
    client: &str,
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
    if target.is_none() && cluster == ClusterSpec::default() {
        let d = planner.error(
            rule::CONFLICT,
            "spec.cluster",
            format!("a target given by address needs the cluster {client} runs on"),
        );
        d.fix = Some(
            "set `spec.cluster.blueprint: <blueprint>`, or `spec.cluster: {existing: true, name: …, location: …}`"
                .into(),
        );
    }
    cluster
}

/// Whether the served blueprint that the client's cluster defaults to is missing: the
/// reference has its finding, and planning the cluster would repeat it.
#[must_use]
pub fn target_missing(planner: &Planner<'_>, written: &ClusterSpec, target: Option<&str>) -> bool {
    *written == ClusterSpec::default()
        && target.is_some_and(|target| planner.peek(target).is_none())
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
