use super::*;

fn harden(text: &str) -> String {
    harden_pods("t", text.to_string()).unwrap()
}

/// The documents of `text` as JSON.
fn objects(text: &str) -> Vec<Json> {
    crate::yaml::parse_documents(text)
        .unwrap()
        .iter()
        .map(crate::yaml::to_json)
        .collect()
}

const DEPLOYMENT: &str = r#"
# A comment the pass keeps.
apiVersion: apps/v1
kind: Deployment
metadata:
  name: server
  namespace: serving
spec:
  template:
    metadata:
      labels:
        app: server
    spec:
      # Heads the account line.
      serviceAccountName: server
      initContainers:
      - name: fetch
        image: "busybox:1.37"
      containers:
      - name: main  # trailing comment
        image: "python:3.12"
        securityContext:
          runAsUser: 1000
      - image: "python@sha256:0000000000000000000000000000000000000000000000000000000000000000"
        name: helper
        securityContext: {}
"#;

#[test]
fn missing_settings_are_filled_in() {
    let out = harden(DEPLOYMENT);
    let object = &objects(&out)[0];
    let spec = &object["spec"]["template"]["spec"];
    assert_eq!(
        spec["securityContext"]["seccompProfile"]["type"], "RuntimeDefault",
        "{out}"
    );
    assert_eq!(spec["automountServiceAccountToken"], false);
    for container in [
        &spec["initContainers"][0],
        &spec["containers"][0],
        &spec["containers"][1],
    ] {
        let context = &container["securityContext"];
        assert_eq!(context["allowPrivilegeEscalation"], false, "{out}");
        assert_eq!(context["capabilities"]["drop"], json!(["ALL"]), "{out}");
    }
    assert_eq!(spec["containers"][0]["securityContext"]["runAsUser"], 1000);
    assert_eq!(spec["containers"][0]["name"], "main");
    assert_eq!(spec["containers"][1]["name"], "helper");
    // Comments stay, and the one above the account still heads the account line.
    assert!(out.contains("# A comment the pass keeps."));
    assert!(out.contains("name: main  # trailing comment"), "{out}");
    // A tag can move: pulled at every start. A digest cannot: the default stays.
    assert_eq!(spec["initContainers"][0]["imagePullPolicy"], "Always");
    assert_eq!(spec["containers"][0]["imagePullPolicy"], "Always");
    assert!(
        spec["containers"][1].get("imagePullPolicy").is_none(),
        "{out}"
    );
    assert!(
        out.contains("      # Heads the account line.\n      serviceAccountName: server"),
        "{out}"
    );
}

#[test]
fn the_pass_is_idempotent() {
    let once = harden(DEPLOYMENT);
    assert_eq!(harden(&once), once);
}

#[test]
fn explicit_settings_are_kept() {
    let text = r#"
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  template:
    spec:
      automountServiceAccountToken: true
      securityContext:
        seccompProfile:
          type: Unconfined
      containers:
      - name: privileged
        image: "agent:1"
        securityContext:
          privileged: true
      - name: escalates
        image: "agent:1"
        securityContext:
          allowPrivilegeEscalation: true
          capabilities:
            add: ["NET_ADMIN"]
      - name: drops-some
        image: "agent:1"
        securityContext:
          capabilities:
            drop: ["NET_RAW"]
"#;
    let out = harden(text);
    let spec = &objects(&out)[0]["spec"]["template"]["spec"];
    assert_eq!(spec["automountServiceAccountToken"], true);
    assert_eq!(
        spec["securityContext"]["seccompProfile"]["type"],
        "Unconfined"
    );
    assert_eq!(
        spec["containers"][0]["securityContext"],
        json!({"privileged": true}),
        "a privileged container gets nothing the API server would refuse beside it"
    );
    let escalates = &spec["containers"][1]["securityContext"];
    assert_eq!(escalates["allowPrivilegeEscalation"], true);
    assert_eq!(
        escalates["capabilities"],
        json!({"drop": ["ALL"], "add": ["NET_ADMIN"]}),
        "drop ALL, then add what the template adds"
    );
    let drops = &spec["containers"][2]["securityContext"];
    assert_eq!(drops["capabilities"], json!({"drop": ["NET_RAW"]}));
    assert_eq!(drops["allowPrivilegeEscalation"], false);
}

#[test]
fn every_pod_template_kind_is_hardened() {
    let pod = |indent: usize| {
        let pad = " ".repeat(indent);
        format!("{pad}containers:\n{pad}- name: c\n{pad}  image: \"busybox:1.37\"\n")
    };
    let text = [
        format!("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n{}", pod(2)),
        format!(
            "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: s\nspec:\n  template:\n    spec:\n{}",
            pod(6)
        ),
        format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\nspec:\n  template:\n    spec:\n{}",
            pod(6)
        ),
        format!(
            "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: c\nspec:\n  jobTemplate:\n    spec:\n      template:\n        spec:\n{}",
            pod(10)
        ),
        format!(
            "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: js\nspec:\n  replicatedJobs:\n  - name: a\n    template:\n      spec:\n        template:\n          spec:\n{}  - name: b\n    template:\n      spec:\n        template:\n          spec:\n{}",
            pod(12),
            pod(12)
        ),
        format!(
            "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata:\n  name: l\nspec:\n  leaderWorkerTemplate:\n    leaderTemplate:\n      spec:\n{}    workerTemplate:\n      spec:\n{}",
            pod(8),
            pod(8)
        ),
    ]
    .join("---\n");
    let out = harden(&text);
    let objects = objects(&out);
    let specs = [
        &objects[0]["spec"],
        &objects[1]["spec"]["template"]["spec"],
        &objects[2]["spec"]["template"]["spec"],
        &objects[3]["spec"]["jobTemplate"]["spec"]["template"]["spec"],
        &objects[4]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"],
        &objects[4]["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"],
        &objects[5]["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"],
        &objects[5]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"],
    ];
    for (index, spec) in specs.iter().enumerate() {
        assert_eq!(
            spec["securityContext"]["seccompProfile"]["type"], "RuntimeDefault",
            "pod template {index}:\n{out}"
        );
        assert_eq!(spec["automountServiceAccountToken"], false, "{index}");
        assert_eq!(
            spec["containers"][0]["securityContext"]["capabilities"]["drop"],
            json!(["ALL"]),
            "{index}"
        );
    }
}

#[test]
fn accounts_that_call_the_api_and_istio_proxies_keep_their_token() {
    let text = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: operator
  namespace: ops
spec:
  template:
    spec:
      serviceAccountName: operator
      containers:
      - name: c
        image: "op:1"
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: operator
  namespace: ops
subjects:
- kind: ServiceAccount
  name: operator
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: operator
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: gateway
  namespace: ops
spec:
  template:
    metadata:
      annotations:
        inject.istio.io/templates: gateway
    spec:
      containers:
      - name: istio-proxy
        image: auto
"#;
    // The same pod and account name in another namespace.
    let other = text
        .split("---")
        .next()
        .unwrap()
        .replace("namespace: ops", "namespace: elsewhere");
    let out = harden(&format!("{text}---{other}"));
    let objects = objects(&out);
    let automount =
        |i: usize| objects[i]["spec"]["template"]["spec"]["automountServiceAccountToken"].clone();
    assert_eq!(automount(0), Json::Null, "bound by a RoleBinding:\n{out}");
    assert_eq!(automount(2), Json::Null, "Istio's proxy");
    assert_eq!(
        automount(3),
        false,
        "the same name in another namespace is not bound"
    );
    // The gateway is still locked down where Istio's template agrees.
    let gateway = &objects[2]["spec"]["template"]["spec"];
    assert_eq!(
        gateway["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
}

#[test]
fn objects_without_pods_are_untouched() {
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  spec: y\n";
    assert_eq!(harden(text), text);
}
