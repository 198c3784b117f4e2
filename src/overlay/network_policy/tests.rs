use super::*;

const OBJECTS: &str = r#"
apiVersion: v1
kind: Namespace
metadata:
  name: serving
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: server
  namespace: serving
  annotations:
    iam.gke.io/gcp-service-account: "server@p.iam.gserviceaccount.com"
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: server, namespace: serving}
spec:
  serviceName: server
  template:
    metadata:
      labels: {app.kubernetes.io/name: server}
    spec:
      containers:
      - image: "server:1"
        name: main
        ports:
        - name: http
          containerPort: 8000
        - name: metrics
          containerPort: 8002
---
apiVersion: v1
kind: Service
metadata:
  name: server
  namespace: serving
spec:
  type: LoadBalancer
  selector:
    app.kubernetes.io/name: server
  ports:
  - port: 80
    targetPort: http
---
apiVersion: monitoring.googleapis.com/v1
kind: PodMonitoring
metadata:
  name: server
  namespace: serving
spec:
  selector:
    matchLabels:
      app.kubernetes.io/name: server
  endpoints:
  - port: metrics
---
apiVersion: batch/v1
kind: Job
metadata:
  name: smoke
  namespace: serving
spec:
  template:
    spec:
      hostNetwork: true
      containers:
      - name: c
        image: "smoke:1"
        ports:
        - containerPort: 8471
"#;

/// The policies the pass appended, by name.
fn policies(text: &str) -> BTreeMap<String, Json> {
    crate::yaml::parse_documents(text)
        .unwrap()
        .iter()
        .map(crate::yaml::to_json)
        .filter(|o| o["kind"] == "NetworkPolicy")
        .map(|o| (o["metadata"]["name"].as_str().unwrap().to_string(), o))
        .collect()
}

#[test]
fn a_namespace_is_closed_and_each_edge_of_its_objects_is_allowed() {
    let out = add_policies("t", "bp", OBJECTS.to_string()).unwrap();
    assert!(out.starts_with(OBJECTS), "the objects stay as they were");
    let policies = policies(&out);
    assert_eq!(
        policies.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "aiml-allow-consumers-server",
            "aiml-allow-dns",
            "aiml-allow-google-apis",
            "aiml-allow-load-balancer-server",
            "aiml-allow-namespace-egress",
            "aiml-allow-scrape-server",
            "aiml-allow-server",
            "aiml-default-deny",
        ],
        "{out}"
    );
    for policy in policies.values() {
        assert_eq!(policy["metadata"]["namespace"], "serving");
    }
    assert_eq!(
        policies["aiml-default-deny"]["spec"],
        json!({"podSelector": {}, "policyTypes": ["Ingress", "Egress"]})
    );
    let server = &policies["aiml-allow-server"]["spec"];
    assert_eq!(
        server["podSelector"],
        json!({"matchLabels": {"app.kubernetes.io/name": "server"}})
    );
    assert_eq!(
        server["ingress"],
        json!([{"from": [{"podSelector": {}}], "ports": [
            {"protocol": "TCP", "port": 8000},
            {"protocol": "TCP", "port": 8002},
        ]}])
    );
    assert_eq!(
        policies["aiml-allow-load-balancer-server"]["spec"]["ingress"],
        json!([{"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [
            {"protocol": "TCP", "port": "http"},
        ]}])
    );
    assert_eq!(
        policies["aiml-allow-consumers-server"]["spec"]["ingress"][0]["from"],
        json!([{"namespaceSelector": {"matchLabels": {"consumer.aiml.dev/bp": "true"}}}])
    );
    let scrape = &policies["aiml-allow-scrape-server"]["spec"];
    assert_eq!(
        scrape["ingress"][0]["from"][0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"],
        "gmp-system"
    );
    assert_eq!(scrape["ingress"][0]["ports"][0]["port"], "metrics");
    let google = &policies["aiml-allow-google-apis"]["spec"]["egress"];
    assert_eq!(google[0]["to"][0]["ipBlock"]["cidr"], "169.254.169.254/32");
    assert_eq!(google[1]["ports"][0]["port"], 988);
    let dns = &policies["aiml-allow-dns"]["spec"]["egress"][0];
    assert_eq!(dns["ports"][0], json!({"protocol": "UDP", "port": 53}));
}

#[test]
fn without_workload_identity_there_is_no_google_egress() {
    let text = OBJECTS.replace("iam.gke.io/gcp-service-account", "example.com/other");
    let policies = policies(&add_policies("t", "bp", text).unwrap());
    assert!(!policies.contains_key("aiml-allow-google-apis"));
    assert!(policies.contains_key("aiml-default-deny"));
}

#[test]
fn objects_without_a_namespace_are_untouched() {
    let text = OBJECTS.replace("kind: Namespace", "kind: ConfigMap");
    assert_eq!(add_policies("t", "bp", text.clone()).unwrap(), text);
}
