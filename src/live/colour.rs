//! `kubectl aiml graph --live`: each object node of the graph coloured by its state on the
//! cluster, from a `status` report of the same blueprints.

use std::collections::HashMap;

use super::health::State;
use super::status::Report;
use crate::graph::{Graph, NodeClass, SYNC_FOLDER};

/// Sets the class of every object node the report knows (`rendered/<folder>` and identity);
/// nodes of clusters that could not be asked stay plain.
pub fn colour(graph: &mut Graph, report: &Report) {
    let mut states: HashMap<(&str, &str), State> = HashMap::new();
    for target in &report.targets {
        for object in &target.objects {
            states.insert(
                (target.blueprint.as_str(), object.object.as_str()),
                object.health.state,
            );
        }
        if let Some(sync) = &target.sync {
            states.insert((SYNC_FOLDER, sync.object.as_str()), sync.health.state);
        }
    }
    for node in &mut graph.nodes {
        let Some(object) = &node.object else {
            continue;
        };
        let shown = object.to_string();
        if let Some(state) = states.get(&(node.folder.as_str(), shown.as_str())) {
            node.class = Some(match state {
                State::Ready => NodeClass::Ready,
                State::Progressing => NodeClass::Progressing,
                State::Failed => NodeClass::Failed,
                State::Missing => NodeClass::Missing,
            });
        }
    }
}
