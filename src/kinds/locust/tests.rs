//! The frameworks the locustfile speaks, and the runner's queries.

use super::spec::Framework;
use super::templates::{LOCUSTFILE, runner_metrics};

#[test]
fn every_framework_has_a_name_and_a_path() {
    for (framework, name) in Framework::ALL {
        assert_eq!(Framework::parse(name), Some(*framework));
        assert!(
            framework
                .path(Some("m"))
                .is_some_and(|p| p.starts_with('/'))
        );
    }
    assert_eq!(Framework::Triton.path(None), None);
    assert_eq!(
        Framework::TensorrtLlmTriton.path(None).as_deref(),
        Some("/v2/models/ensemble/generate")
    );
}

#[test]
fn the_runner_queries_are_yaml_with_the_namespaces() {
    let text = runner_metrics("bench", Some("serving"));
    let parsed: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
    let filter = parsed["metrics"]["CURRENT_RPS"]["filter"].as_str().unwrap();
    assert!(filter.contains("prometheus.googleapis.com/locust_requests_current_rps/gauge"));
    assert!(filter.contains("\"bench\""));
    let duty = parsed["metrics"]["ACCELERATOR_DUTY_CYCLE"]["filter"]
        .as_str()
        .unwrap();
    assert!(duty.contains("\"serving\""));
}

#[test]
fn the_locustfile_speaks_every_framework() {
    for (_, name) in Framework::ALL {
        assert!(
            LOCUSTFILE.contains(&format!("\"{name}\"")),
            "the locustfile has no request for {name}"
        );
    }
}
