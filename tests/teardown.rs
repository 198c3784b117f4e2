//! Deletion protection on real temporary git repositories: the example blueprint rendered and
//! committed, changed, rendered again, and `diff --fail-on destructive` run on the change.
//! Removing a blueprint, or a slice, abandons what holds capacity or data (exit 0, the report
//! says what stays and costs); a change GCP can only make by recreating a TPU pool exits 1
//! naming the pools, unless the base revision allowed teardown; a harmless change exits 0.

mod support;

use support::{EXAMPLE, Run, TestRepo};

const BLUEPRINT: &str = "blueprints/multislice-v4-32-training.yaml";
const NAME: &str = "multislice-v4-32-training";

/// A blueprint that stays when the example goes (a render needs one), on a cluster that
/// exists already.
const KEEPER: &str = "apiVersion: aiml.dev/v1alpha1\nkind: MultisliceTraining\nmetadata:\n  name: keeper\nspec:\n  project: my-project\n  cluster: {existing: true, name: other, location: us-central2-b}\n  tpu: {type: v4-8}\n";

/// The example repository under git with `blueprint` rendered and committed.
fn committed(blueprint: &str) -> (TestRepo, git2::Repository) {
    let repo = TestRepo::empty();
    repo.write(BLUEPRINT, blueprint);
    repo.write("blueprints/keeper.yaml", KEEPER);
    let git = git2::Repository::init(repo.path()).unwrap();
    render(&repo);
    commit(&git, "Render");
    (repo, git)
}

fn render(repo: &TestRepo) {
    repo.aiml(&["render"]).expect_code(0);
}

fn commit(git: &git2::Repository, message: &str) {
    let who = git2::Signature::new("Setup", "setup@example.com", &git2::Time::new(0, 0)).unwrap();
    support::commit_all(git, &who, message);
}

/// The example with `allowTeardown: true` in its spec.
fn allowing_teardown(blueprint: &str) -> String {
    blueprint.replace("spec:\n", "spec:\n  allowTeardown: true\n")
}

/// The example on TPU v4-16 slices (topology `2x2x2`): a placement GCP cannot change in place.
fn smaller_slices(blueprint: &str) -> String {
    blueprint
        .replace("type: v4-32", "type: v4-16")
        .replace("topology: 2x2x4", "topology: 2x2x2")
}

fn fail_on(repo: &TestRepo, extra: &[&str]) -> Run {
    let mut args = vec!["diff", "--fail-on", "destructive"];
    args.extend(extra);
    repo.aiml(&args)
}

/// `diff --fail-on destructive`, which must pass without a word on stderr.
fn passes(repo: &TestRepo) -> Run {
    let run = fail_on(repo, &[]);
    run.expect_code(0);
    assert_eq!(run.stderr, "", "{}", run.stdout);
    run
}

#[test]
fn removing_a_blueprint_abandons_its_cluster_pools_and_network() {
    let (repo, _git) = committed(EXAMPLE);
    std::fs::remove_file(repo.path().join(BLUEPRINT)).unwrap();
    render(&repo);
    let run = passes(&repo);
    for object in [
        format!(
            "ContainerCluster my-project/{NAME} [{NAME}]: removed from Config Connector but abandoned: it stays in GCP (and keeps costing about $0.10/h)"
        ),
        format!(
            "ContainerNodePool my-project/{NAME}-tpu-slice-0 [{NAME}]: removed from Config Connector but abandoned: it stays in GCP (and keeps costing about $0.00/h idle, up to $51.52/h)"
        ),
        format!(
            "ComputeNetwork my-project/{NAME}-network [{NAME}]: removed from Config Connector but abandoned: it stays in GCP (and costs nothing)"
        ),
        format!(
            "IAMServiceAccount my-project/{NAME}-node [{NAME}]: removed from Config Connector but abandoned: it stays in GCP (and costs nothing)"
        ),
    ] {
        assert!(
            run.stdout.contains(&format!("! remove {object}")),
            "{object}\n{}",
            run.stdout
        );
    }
    assert!(
        run.stdout
            .contains("note: abandoned, so still billed although no longer counted: "),
        "{}",
        run.stdout
    );
    // An abandoned grant costs nothing; what it keeps is access.
    let grants: Vec<&str> = run
        .stdout
        .lines()
        .filter(|line| line.trim_start().starts_with("! remove IAMPolicyMember"))
        .collect();
    assert!(!grants.is_empty(), "{}", run.stdout);
    for grant in grants {
        assert!(
            grant.contains("(and keeps granting its role) until deleted by hand"),
            "{grant}"
        );
    }
    // The workload account is no capacity and no data: it goes.
    assert!(
        !run.stdout
            .contains(&format!("! remove IAMServiceAccount my-project/{NAME}-wi"))
    );
    let json: serde_json::Value =
        serde_json::from_str(&fail_on(&repo, &["-o", "json"]).stdout).unwrap();
    let destructive = json["impact"]["destructive"].as_array().unwrap();
    assert!(
        destructive.iter().all(|d| d["blocking"] == false),
        "{destructive:#?}"
    );
}

#[test]
fn a_blueprint_that_allowed_teardown_is_removed_with_its_resources() {
    let (repo, git) = committed(EXAMPLE);
    // Allowing it changes annotations only: nothing is deleted by this commit.
    repo.write(BLUEPRINT, &allowing_teardown(EXAMPLE));
    render(&repo);
    let run = fail_on(&repo, &["--exit-code"]);
    run.expect_code(1);
    assert_eq!(run.stderr, "");
    run.stdout_has("nothing destroyed")
        .stdout_has("- metadata.annotations[\"cnrm.cloud.google.com/deletion-policy\"]: abandon")
        .stdout_has("+ metadata.annotations[\"aiml.dev/allow-teardown\"]: true");
    fail_on(&repo, &[]).expect_code(0);
    commit(&git, "Allow teardown");
    std::fs::remove_file(repo.path().join(BLUEPRINT)).unwrap();
    render(&repo);
    let run = passes(&repo);
    run.stdout_has(&format!(
        "! remove ContainerNodePool my-project/{NAME}-tpu-slice-1 [{NAME}]: its TPU slice (16 TPU v4 chips on 4 nodes) is torn down\n"
    ))
    .stdout_has(&format!(
        "! remove ContainerCluster my-project/{NAME} [{NAME}]: the cluster and every workload on it are torn down\n"
    ));
}

#[test]
fn recreating_a_tpu_pool_fails_unless_teardown_was_allowed() {
    let (repo, git) = committed(EXAMPLE);
    repo.write(BLUEPRINT, &smaller_slices(EXAMPLE));
    render(&repo);
    let run = fail_on(&repo, &[]);
    run.expect_code(1);
    for slice in 0..2 {
        assert!(
            run.stderr.contains(&format!(
                "  recreate ContainerNodePool my-project/{NAME}-tpu-slice-{slice} [{NAME}]: GCP cannot update `spec.placementPolicy.tpuTopology` in place"
            )),
            "{}",
            run.stderr
        );
    }
    run.stderr_has("error: --fail-on destructive: 2 changes would delete GCP resources")
        .stderr_has(
            "set `allowTeardown: true` in the blueprint's spec, render and commit that first",
        );
    // The report says so too, in every format.
    run.stdout_has("its blueprint did not allow teardown");
    let json: serde_json::Value =
        serde_json::from_str(&fail_on(&repo, &["-o", "json"]).stdout).unwrap();
    let blocking: Vec<&str> = json["impact"]["destructive"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["blocking"] == true)
        .map(|d| d["object"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        blocking,
        [format!("{NAME}-tpu-slice-0"), format!("{NAME}-tpu-slice-1")]
    );
    fail_on(&repo, &["-o", "markdown"])
        .expect_code(1)
        .stdout_has("its blueprint did not allow teardown");
    // Without `--fail-on`, the same diff is a report.
    repo.aiml(&["diff"]).expect_code(0);

    // Allowed first (its own commit), the same change passes.
    repo.write(BLUEPRINT, &allowing_teardown(EXAMPLE));
    render(&repo);
    commit(&git, "Allow teardown");
    repo.write(BLUEPRINT, &smaller_slices(&allowing_teardown(EXAMPLE)));
    render(&repo);
    let run = passes(&repo);
    run.stdout_has(&format!(
        "! recreate ContainerNodePool my-project/{NAME}-tpu-slice-0"
    ));
}

#[test]
fn a_slice_fewer_leaves_the_slice_running_and_costing() {
    let three = EXAMPLE.replace("slices: 2", "slices: 3");
    let (repo, _git) = committed(&three);
    repo.write(BLUEPRINT, EXAMPLE);
    render(&repo);
    let run = passes(&repo);
    run.stdout_has(&format!(
        "! remove ContainerNodePool my-project/{NAME}-tpu-slice-2 [{NAME}]: removed from Config Connector but abandoned: it stays in GCP (and keeps costing about $0.00/h idle, up to $51.52/h) until deleted by hand\n"
    ))
    .stdout_has(&format!(
        "note: abandoned, so still billed although no longer counted: ContainerNodePool my-project/{NAME}-tpu-slice-2 $0.00/h idle, up to $51.52/h"
    ));
    // A slice kept up bills around the clock once abandoned.
    let kept = |text: &str| {
        text.replace(
            "capacity: {type: onDemand}",
            "capacity: {type: onDemand}\n    idle: keep",
        )
    };
    let (repo, _git) = committed(&kept(&three));
    repo.write(BLUEPRINT, &kept(EXAMPLE));
    render(&repo);
    passes(&repo).stdout_has(&format!(
        "! remove ContainerNodePool my-project/{NAME}-tpu-slice-2 [{NAME}]: removed from Config Connector but abandoned: it stays in GCP (and keeps costing about $51.52/h) until deleted by hand\n"
    ));
}

#[test]
fn a_harmless_change_passes_and_the_flag_takes_known_values_only() {
    let (repo, _git) = committed(EXAMPLE);
    repo.write(
        BLUEPRINT,
        &EXAMPLE.replace("tpu:jax0.5.2-rev1", "tpu:jax0.6.1-rev1"),
    );
    render(&repo);
    let run = passes(&repo);
    run.stdout_has(
        "tpu:jax0.5.2-rev1 → us-docker.pkg.dev/cloud-tpu-images/jax-stable-stack/tpu:jax0.6.1-rev1",
    );
    // `--exit-code` still says that something differs.
    fail_on(&repo, &["--exit-code"]).expect_code(1);
    repo.aiml(&["diff", "--fail-on", "everything"])
        .expect_code(2)
        .stderr_has("invalid value 'everything' for '--fail-on <WHAT>'")
        .stderr_has("[possible values: destructive]");
    // The live diff dry-runs what rendered/ holds: it never sees a removal.
    repo.aiml(&["diff", "--live", "--fail-on", "destructive"])
        .expect_code(2)
        .stderr_has("cannot be used with");
}
