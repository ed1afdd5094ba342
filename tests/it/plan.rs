//! `isvc plan` and `isvc status`: the Operator's reconcile against
//! snapshots in the shape `kubectl get deploy,rs,svc,hpa -A -o yaml` (and
//! `-o json`) prints them, with server-filled defaults, managedFields,
//! status, objects of other tools and of services not in the inputs.
//!
//! The reference scenario: an empty cluster gets a Deployment, a Service and
//! an HPA, and the service is Progressing; the converged cluster needs
//! nothing and the service is Ready; replicas 3 -> 6 updates the Deployment
//! (when below the new minimum) and the HPA (min 3, max 18); a Service
//! deleted by hand is created again, alone.

use std::path::Path;

use assert_cmd::Command;
use isvc::base::diagnostics::Source;
use isvc::emit::plan::{self, Plan, ServiceStatus, Verb};
use isvc::model::v1alpha1::Phase;
use serde_json::{Value, json};

use crate::harness::Test;

fn qwen3(replicas: i32) -> String {
    format!(
        "apiVersion: ai.example.com/v1alpha1\nkind: InferenceService\nmetadata: {{name: qwen3}}\n\
         spec: {{model: Qwen/Qwen3-0.6B, replicas: {replicas}, gpusPerReplica: 1}}\n"
    )
}

fn snapshot(name: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/live").join(name);
    plan::read_snapshot(&path).unwrap_or_else(|d| panic!("{}", d.render(false)))
}

/// Plans `services` against `live` and computes the statuses.
fn reconcile(services: &str, live: &[Value]) -> (Plan, Vec<ServiceStatus>) {
    let (loaded, diags) = isvc::load::parse_services(&Source::new("services/qwen3.yaml", services));
    assert!(diags.is_empty(), "{diags:?}");
    let compiled =
        Test::new().file("services/qwen3.yaml", services).compile().unwrap_or_else(|d| panic!("{}", d.render(false)));
    let plan = plan::plan(&compiled.objects, live);
    let services: Vec<&isvc::model::v1alpha2::InferenceService> = loaded.iter().map(|s| &*s.service).collect();
    let statuses = plan::status(&services, &compiled.objects, live, &plan);
    (plan, statuses)
}

/// The actions as "verb Kind namespace/name".
fn actions(plan: &Plan) -> Vec<String> {
    plan.actions.iter().map(|a| format!("{:?} {}", a.action, a.id()).to_lowercase()).collect()
}

/// The fields of the update of `kind`, as "path: live -> desired".
fn fields(plan: &Plan, kind: &str) -> Vec<String> {
    let a = plan.actions.iter().find(|a| a.kind == kind && a.action == Verb::Update).unwrap();
    let show = |v: &Option<Value>| v.as_ref().map_or("unset".to_string(), Value::to_string);
    a.fields.iter().map(|f| format!("{}: {} -> {}", f.path, show(&f.live), show(&f.desired))).collect()
}

/// The live object of `kind` named qwen3 in default.
fn live_object<'a>(live: &'a mut [Value], kind: &str) -> &'a mut Value {
    live.iter_mut().find(|v| v["kind"] == kind && v["metadata"]["name"] == "qwen3").unwrap()
}

#[test]
fn empty_cluster_creates_deployment_service_and_autoscaler() {
    let (plan, statuses) = reconcile(&qwen3(3), &snapshot("empty.yaml"));
    assert_eq!(
        actions(&plan),
        [
            "create service default/qwen3",
            "create deployment default/qwen3",
            "create horizontalpodautoscaler default/qwen3"
        ]
    );
    assert_eq!(statuses[0].phase, Phase::Progressing);
    assert_eq!(statuses[0].ready_replicas, 0);
    assert_eq!(statuses[0].message, "3 actions pending (see isvc plan)");
}

#[test]
fn converged_cluster_plans_nothing_and_is_ready() {
    // The snapshot carries server defaults, managedFields, status, an HPA
    // that owns spec.replicas, a ReplicaSet with the service's labels,
    // objects of other tools and a managed service not in the inputs.
    for file in ["converged.yaml", "converged.json"] {
        let (plan, statuses) = reconcile(&qwen3(3), &snapshot(file));
        assert!(plan.is_converged(), "{file}: {:#?}", plan);
        assert_eq!(plan.unchanged, 3);
        let s = &statuses[0];
        assert_eq!((s.phase, s.ready_replicas, s.wanted, s.replicas), (Phase::Ready, 1, 1, 3), "{file}");
        assert_eq!(s.message, "autoscaled between 1 and 9 pods");
    }
}

#[test]
fn doubling_replicas_raises_the_deployment_to_the_new_minimum_and_updates_the_autoscaler() {
    let (plan, statuses) = reconcile(&qwen3(6), &snapshot("converged.yaml"));
    assert_eq!(actions(&plan), ["update deployment default/qwen3", "update horizontalpodautoscaler default/qwen3"]);
    // At a minimum of 3 pods a rollout no longer surges (docs/engine.md).
    assert_eq!(
        fields(&plan, "Deployment"),
        [
            "spec.strategy.rollingUpdate.maxSurge: 1 -> 0",
            "spec.strategy.rollingUpdate.maxUnavailable: 0 -> 1",
            "spec.replicas: 1 -> 3"
        ]
    );
    assert_eq!(fields(&plan, "HorizontalPodAutoscaler"), ["spec.minReplicas: 1 -> 3", "spec.maxReplicas: 9 -> 18"]);
    assert_eq!(statuses[0].phase, Phase::Progressing);
}

#[test]
fn replicas_the_autoscaler_chose_inside_the_bounds_are_left_alone() {
    // Under load the HPA had scaled to 4: within the new 3..18, so the
    // replicas stay (only the rollout strategy of a 3-pod minimum changes).
    let mut live = snapshot("converged.yaml");
    live_object(&mut live, "Deployment")["spec"]["replicas"] = json!(4);
    let (plan, _) = reconcile(&qwen3(6), &live);
    assert_eq!(actions(&plan), ["update deployment default/qwen3", "update horizontalpodautoscaler default/qwen3"]);
    assert!(fields(&plan, "Deployment").iter().all(|f| f.starts_with("spec.strategy.")), "{plan:#?}");
    // Above the maximum the HPA scales down at its own pace.
    live_object(&mut live, "Deployment")["spec"]["replicas"] = json!(12);
    let (plan, _) = reconcile(&qwen3(3), &live);
    assert!(plan.is_converged(), "{plan:#?}");
}

#[test]
fn a_service_deleted_by_hand_is_created_again_alone() {
    let mut live = snapshot("converged.yaml");
    live.retain(|v| !(v["kind"] == "Service" && v["metadata"]["name"] == "qwen3"));
    let (plan, statuses) = reconcile(&qwen3(3), &live);
    assert_eq!(actions(&plan), ["create service default/qwen3"]);
    assert_eq!(plan.unchanged, 2);
    assert_eq!(statuses[0].phase, Phase::Progressing);
}

#[test]
fn scaling_to_zero_deletes_the_autoscaler_and_zeroes_the_deployment() {
    let (plan, _) = reconcile(&qwen3(0), &snapshot("converged.yaml"));
    assert_eq!(actions(&plan), ["update deployment default/qwen3", "delete horizontalpodautoscaler default/qwen3"]);
    assert_eq!(fields(&plan, "Deployment"), ["spec.replicas: 1 -> 0"]);
    // Back from zero: the autoscaler is created and the Deployment raised to
    // its minimum, since an autoscaler never scales a target at zero.
    let mut live = snapshot("converged.yaml");
    live.retain(|v| v["kind"] != "HorizontalPodAutoscaler");
    live_object(&mut live, "Deployment")["spec"]["replicas"] = json!(0);
    let (plan, _) = reconcile(&qwen3(4), &live);
    assert_eq!(actions(&plan), ["update deployment default/qwen3", "create horizontalpodautoscaler default/qwen3"]);
    assert_eq!(
        fields(&plan, "Deployment"),
        [
            "spec.strategy.rollingUpdate.maxSurge: 1 -> 0",
            "spec.strategy.rollingUpdate.maxUnavailable: 0 -> 1",
            "spec.replicas: 0 -> 2"
        ]
    );
}

#[test]
fn owned_fields_changed_by_hand_are_updated_and_the_rest_is_not_isvcs() {
    let mut live = snapshot("converged.yaml");
    let deploy = live_object(&mut live, "Deployment");
    let c = &mut deploy["spec"]["template"]["spec"]["containers"][0];
    c["image"] = json!("vllm/vllm-openai:v0.10.2");
    // Normalised quantities and fields isvc does not set are not changes.
    c["resources"]["requests"]["cpu"] = json!("4000m");
    c["env"].as_array_mut().unwrap().push(json!({"name": "HF_HUB_OFFLINE", "value": "1"}));
    deploy["spec"]["template"]["spec"]["dnsPolicy"] = json!("None");
    deploy["metadata"]["annotations"]["team"] = json!("ml");
    let (plan, _) = reconcile(&qwen3(3), &live);
    assert_eq!(actions(&plan), ["update deployment default/qwen3"]);
    assert_eq!(
        fields(&plan, "Deployment"),
        ["spec.template.spec.containers[0].image: \"vllm/vllm-openai:v0.10.2\" -> \"vllm/vllm-openai:v0.11.0\""]
    );
}

#[test]
fn objects_without_the_managed_by_label_are_never_touched() {
    let mut live = snapshot("converged.yaml");
    let svc = live_object(&mut live, "Service");
    svc["metadata"]["labels"] = json!({"app": "qwen3"});
    svc["spec"]["selector"] = json!({"app": "qwen3"});
    let (plan, statuses) = reconcile(&qwen3(3), &live);
    assert!(plan.actions.is_empty(), "{plan:#?}");
    assert_eq!(plan.conflicts.len(), 1);
    assert_eq!(plan.conflicts[0].kind, "Service");
    assert!(!plan.is_converged());
    assert_eq!(statuses[0].phase, Phase::Progressing);
    // A managed object of a service in the inputs that is no longer wanted
    // is deleted; one of another service, or unmanaged, is not.
    let mut live = snapshot("converged.yaml");
    let mut extra = live_object(&mut live, "Service").clone();
    extra["kind"] = json!("PodDisruptionBudget");
    extra["apiVersion"] = json!("policy/v1");
    let mut unmanaged = extra.clone();
    unmanaged["metadata"]["name"] = json!("hand-made");
    unmanaged["metadata"]["labels"].as_object_mut().unwrap().remove("app.kubernetes.io/managed-by");
    live.extend([extra, unmanaged]);
    let (plan, _) = reconcile(&qwen3(3), &live);
    assert_eq!(actions(&plan), ["delete poddisruptionbudget default/qwen3"]);
}

#[test]
fn status_follows_the_deployment() {
    let mut live = snapshot("converged.yaml");
    let deploy = live_object(&mut live, "Deployment");
    deploy["status"]["readyReplicas"] = json!(0);
    let (_, statuses) = reconcile(&qwen3(3), &live);
    assert_eq!((statuses[0].phase, statuses[0].message.as_str()), (Phase::Progressing, "0 of 1 pods ready"));
    // The autoscaler asked for 4; 3 are ready.
    let deploy = live_object(&mut live, "Deployment");
    deploy["spec"]["replicas"] = json!(4);
    deploy["status"]["readyReplicas"] = json!(3);
    deploy["status"]["updatedReplicas"] = json!(4);
    let (_, statuses) = reconcile(&qwen3(3), &live);
    assert_eq!((statuses[0].phase, statuses[0].wanted), (Phase::Progressing, 4));
    // A rollout: the new pod template is not on every pod yet.
    let deploy = live_object(&mut live, "Deployment");
    deploy["status"]["readyReplicas"] = json!(4);
    deploy["status"]["updatedReplicas"] = json!(2);
    let (_, statuses) = reconcile(&qwen3(3), &live);
    assert_eq!(statuses[0].message, "rolling out: 2 of 4 pods updated");
    // The controller has not yet seen the latest spec.
    let deploy = live_object(&mut live, "Deployment");
    deploy["status"]["updatedReplicas"] = json!(4);
    deploy["metadata"]["generation"] = json!(2);
    let (_, statuses) = reconcile(&qwen3(3), &live);
    assert_eq!(statuses[0].phase, Phase::Progressing);
    deploy_observed(&mut live, 2);
    let (_, statuses) = reconcile(&qwen3(3), &live);
    assert_eq!((statuses[0].phase, statuses[0].ready_replicas), (Phase::Ready, 4));
}

fn deploy_observed(live: &mut [Value], generation: i64) {
    live_object(live, "Deployment")["status"]["observedGeneration"] = json!(generation);
}

#[test]
fn snapshots_may_be_streams_of_single_objects() {
    let docs: Vec<String> = snapshot("converged.yaml").iter().map(isvc::base::yaml::to_string).collect();
    let stream = Source::new("stream.yaml", format!("---\n{}", docs.join("---\n")));
    let live = plan::parse_snapshot(&stream).unwrap();
    let (plan, _) = reconcile(&qwen3(3), &live);
    assert!(plan.is_converged());
    let bad = Source::new("bad.yaml", "apiVersion: v1\nkind: List\nitems:\n- kind: Service\n  metadata: {name: x}\n");
    let err = plan::parse_snapshot(&bad).unwrap_err();
    assert_eq!(err.0[0].to_string().lines().nth(1), Some("  --> bad.yaml:4:3"));
}

#[test]
fn a_large_snapshot_is_read_in_pieces_with_the_whole_reads_diagnostics() {
    // Over a megabyte: read a piece at a time (`base::yaml::parse_values_in`).
    let doc = |i: usize| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{i}\ndata:\n  k: '{}'\n", "v".repeat(400))
    };
    let docs: Vec<String> = (0..6000).map(doc).collect();
    let text = docs.join("---\n");
    assert!(text.len() > 1 << 21);
    let live = plan::parse_snapshot(&Source::new("big.yaml", text.as_str())).unwrap();
    assert_eq!(live.len(), 6000);
    assert_eq!(live[5999]["metadata"]["name"], "c5999");
    // An entry without a name near the end: the error has its line.
    let mut bad = docs.clone();
    bad[5990] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n".to_string();
    let line = 1 + bad[..5990].iter().map(|d| d.lines().count() + 1).sum::<usize>();
    let err = plan::parse_snapshot(&Source::new("big.yaml", bad.join("---\n"))).unwrap_err();
    assert_eq!(err.0.len(), 1);
    assert_eq!(err.0[0].to_string().lines().nth(1), Some(format!("  --> big.yaml:{line}:1").as_str()));
    // A syntax error there, as the whole text's parse reports it.
    bad[5990] = "apiVersion: v1\nkind: [\n".to_string();
    let err = plan::parse_snapshot(&Source::new("big.yaml", bad.join("---\n"))).unwrap_err();
    assert!(err.0[0].to_string().contains(&format!("big.yaml:{}:", line + 2)), "{}", err.0[0]);
    // The same objects as a List, as `kubectl get -o yaml` prints it.
    let item = |d: &String| format!("- {}", d.trim_end().replace('\n', "\n  "));
    let list = |docs: &[String]| {
        let items: Vec<String> = docs.iter().map(item).collect();
        format!("apiVersion: v1\nitems:\n{}\nkind: List\nmetadata:\n  resourceVersion: \"\"\n", items.join("\n"))
    };
    assert_eq!(plan::parse_snapshot(&Source::new("list.yaml", list(&docs))).unwrap(), live);
    bad[5990] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n".to_string();
    let line = 3 + bad[..5990].iter().map(|d| d.lines().count()).sum::<usize>();
    let err = plan::parse_snapshot(&Source::new("list.yaml", list(&bad))).unwrap_err();
    assert_eq!(err.0[0].to_string().lines().nth(1), Some(format!("  --> list.yaml:{line}:3").as_str()));
}

// The command line.

fn isvc(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("isvc").unwrap();
    c.current_dir(dir).arg("--color").arg("never");
    c
}

fn run(c: &mut Command) -> (i32, String, String) {
    let out = c.output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

fn setup(replicas: i32) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("services")).unwrap();
    std::fs::write(dir.path().join("services/qwen3.yaml"), qwen3(replicas)).unwrap();
    dir
}

fn live(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/live").join(name).display().to_string()
}

#[test]
fn plan_and_status_exit_0_when_converged_and_1_otherwise() {
    let dir = setup(3);
    let (code, out, err) = run(isvc(dir.path()).args(["plan", "--live", &live("converged.yaml")]));
    assert_eq!((code, out.as_str()), (0, "plan: 0 to create, 0 to update, 0 to delete, 3 unchanged\n"), "{err}");
    let (code, out, _) = run(isvc(dir.path()).args(["status", "--live", &live("converged.yaml")]));
    assert_eq!(code, 0);
    assert_eq!(
        out,
        "NAMESPACE   NAME    MODEL             REPLICAS   READY   PHASE   MESSAGE\n\
         default     qwen3   Qwen/Qwen3-0.6B   3          1       Ready   autoscaled between 1 and 9 pods\n"
    );
    let dir = setup(6);
    let (code, out, _) = run(isvc(dir.path()).args(["plan", "--live", &live("converged.json")]));
    assert_eq!(code, 1);
    assert_eq!(
        out,
        "~ update Deployment default/qwen3\n    spec.strategy.rollingUpdate.maxSurge: 1 -> 0\n    \
         spec.strategy.rollingUpdate.maxUnavailable: 0 -> 1\n    spec.replicas: 1 -> 3  (raised to the minimum of HorizontalPodAutoscaler default/qwen3)\n\
         ~ update HorizontalPodAutoscaler default/qwen3\n    spec.minReplicas: 1 -> 3\n    spec.maxReplicas: 9 -> 18\n\
         plan: 0 to create, 2 to update, 0 to delete, 1 unchanged\n"
    );
    let (code, out, _) = run(isvc(dir.path()).args(["status", "--live", &live("converged.yaml"), "--format", "json"]));
    assert_eq!(code, 1);
    let list: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(list["kind"], "List");
    assert_eq!(list["items"][0]["kind"], "InferenceService");
    assert_eq!(list["items"][0]["spec"]["replicas"], 6);
    assert_eq!(list["items"][0]["apiVersion"], "ai.example.com/v1alpha2");
    assert_eq!(
        list["items"][0]["status"],
        json!({
            "readyReplicas": 1,
            "phase": "Progressing",
            "endpoint": "http://qwen3.default.svc:8000",
            "conditions": [{
                "type": "Ready", "status": "False", "reason": "Progressing",
                "message": "2 actions pending (see isvc plan)",
                "lastTransitionTime": "2025-06-02T09:16:41Z",
            }],
        })
    );
}

#[test]
fn plan_reads_the_snapshot_from_stdin_and_reports_json() {
    let dir = setup(3);
    let text = std::fs::read_to_string(live("empty.yaml")).unwrap();
    let (code, out, _) = run(isvc(dir.path()).args(["plan", "--live", "-", "--format", "json"]).write_stdin(text));
    assert_eq!(code, 1);
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["converged"], false);
    let kinds: Vec<&str> = report["actions"].as_array().unwrap().iter().map(|a| a["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["Service", "Deployment", "HorizontalPodAutoscaler"]);
    assert!(report["actions"].as_array().unwrap().iter().all(|a| a["action"] == "create"));
}

#[test]
fn a_bad_snapshot_or_bad_input_exits_2() {
    let dir = setup(3);
    std::fs::write(dir.path().join("snap.yaml"), "items: [\n").unwrap();
    let (code, out, err) = run(isvc(dir.path()).args(["plan", "--live", "snap.yaml"]));
    assert_eq!((code, out.as_str()), (2, ""));
    assert!(err.contains("snap.yaml"), "{err}");
    let (code, _, err) = run(isvc(dir.path()).args(["status", "--live", "missing.yaml"]));
    assert_eq!(code, 2);
    assert!(err.contains("cannot read missing.yaml"), "{err}");
}

/// `plan` prunes every kind the kinds table says a service owns: a route,
/// a pool, an objective, a monitor, a KEDA ScaledObject, a ConfigMap, a
/// LeaderWorkerSet or an endpoint picker's ServiceAccount, Role and
/// RoleBinding the service no longer wants is deleted, as the
/// reference Operator's owner references would have it.
#[test]
fn plan_prunes_every_kind_a_service_owns() {
    let compiled = Test::new().file("services/qwen3.yaml", qwen3(1)).objects();
    let mut live: Vec<Value> = compiled.iter().map(|o| o.value.clone()).collect();
    let stale = [
        ("gateway.networking.k8s.io/v1", "HTTPRoute"),
        ("inference.networking.k8s.io/v1", "InferencePool"),
        ("llm-d.ai/v1alpha2", "InferenceObjective"),
        ("monitoring.coreos.com/v1", "ServiceMonitor"),
        ("keda.sh/v1alpha1", "ScaledObject"),
        ("v1", "ConfigMap"),
        ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"),
        ("policy/v1", "PodDisruptionBudget"),
        ("v1", "ServiceAccount"),
        ("rbac.authorization.k8s.io/v1", "Role"),
        ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ];
    for (api_version, kind) in stale {
        live.push(json!({
            "apiVersion": api_version, "kind": kind,
            "metadata": {"name": "qwen3-old", "namespace": "default",
                         "labels": {"app.kubernetes.io/name": "qwen3", "app.kubernetes.io/managed-by": "isvc"}},
        }));
    }
    let plan = plan::plan(&compiled, &live);
    let deleted: Vec<(&str, &str)> = plan
        .actions
        .iter()
        .filter(|a| a.action == Verb::Delete)
        .map(|a| (a.api_version.as_str(), a.kind.as_str()))
        .collect();
    for (api_version, kind) in stale {
        assert!(deleted.contains(&(api_version, kind)), "{kind} is not pruned: {deleted:?}");
    }
    // Every kind a service owns is in that list or among the rendered ones.
    for k in isvc::model::kinds::service_kinds() {
        let rendered = compiled.iter().any(|o| o.id.kind == k.kind);
        assert!(rendered || stale.iter().any(|(_, kind)| *kind == k.kind), "{} is not covered", k.kind);
    }
}

/// A service KEDA scales: its ScaledObject, not the Deployment, sets the
/// count once the Deployment exists.
#[test]
fn a_count_keda_chose_is_left_alone_and_one_below_its_minimum_raised() {
    let platform = "apiVersion: ai.example.com/v1alpha1\nkind: Platform\n\
                    keda: {serverAddress: 'http://prometheus.monitoring.svc:9090'}\nmonitoring: {}\n";
    let services = "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {name: qwen3}\n\
                    spec: {baseModel: Qwen/Qwen3-0.6B, gpusPerReplica: 1, autoscaling: {min: 2, max: 8, targetQueueLength: 4}}\n";
    let compiled =
        Test::new().service(services).platform(platform).compile().unwrap_or_else(|d| panic!("{}", d.render(false)));
    assert!(compiled.objects.iter().any(|o| o.id.kind == "ScaledObject"));
    assert!(!compiled.objects.iter().any(|o| o.id.kind == "HorizontalPodAutoscaler"));
    // The cluster holds what was applied, and the Deployment at the count
    // KEDA's HPA chose under load (keda-hpa-qwen3 scales it within 2..8).
    let mut live: Vec<Value> = compiled.objects.iter().map(|o| o.value.clone()).collect();
    live_object(&mut live, "Deployment")["spec"]["replicas"] = json!(5);
    // KEDA's own HPA carries the ScaledObject's labels, isvc's among them,
    // and the ScaledObject as its controller (kedacore/keda
    // controllers/keda/hpa.go, newHPAForScaledObject): not isvc's to prune.
    let so = compiled.objects.iter().find(|o| o.id.kind == "ScaledObject").unwrap();
    let (key, value) = isvc::model::labels::MANAGED_BY;
    assert_eq!(so.value["metadata"]["labels"][key], value);
    live.push(json!({
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {
            "name": "keda-hpa-qwen3",
            "namespace": "default",
            "labels": so.value["metadata"]["labels"],
            "ownerReferences": [{"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "name": "qwen3",
                                 "uid": "1", "controller": true}],
        },
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "qwen3"},
                 "minReplicas": 2, "maxReplicas": 8},
    }));
    let plan = plan::plan(&compiled.objects, &live);
    assert!(plan.is_converged(), "{plan:#?}");
    let (loaded, _) = isvc::load::parse_services(&Source::new("services/qwen3.yaml", services));
    let services: Vec<&isvc::model::v1alpha2::InferenceService> = loaded.iter().map(|s| &*s.service).collect();
    let deploy = live_object(&mut live, "Deployment");
    deploy["status"] = json!({"readyReplicas": 5, "updatedReplicas": 5});
    let statuses = plan::status(&services, &compiled.objects, &live, &plan);
    assert_eq!((statuses[0].phase, statuses[0].wanted), (Phase::Ready, 5));
    assert_eq!(statuses[0].message, "autoscaled between 2 and 8 pods");
    // Below minReplicaCount, KEDA's executor sets the count to it
    // (kedacore/keda pkg/scaling/executor, RequestScale); so does the plan.
    live_object(&mut live, "Deployment")["spec"]["replicas"] = json!(1);
    let plan = plan::plan(&compiled.objects, &live);
    assert_eq!(fields(&plan, "Deployment"), ["spec.replicas: 1 -> 2"]);
    assert_eq!(plan.actions[0].fields[0].note.as_deref(), Some("raised to the minimum of ScaledObject default/qwen3"));
}

/// A multi-node service: a LeaderWorkerSet of 2-pod groups, which its
/// HorizontalPodAutoscaler scales through the set's scale subresource
/// (kubernetes-sigs/lws `api/leaderworkerset/v1`: `+kubebuilder:subresource:scale`,
/// specpath `.spec.replicas`). The count is groups.
#[test]
fn a_leader_worker_set_is_planned_and_reported_as_its_autoscaler_scales_it() {
    let services = "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {name: big}\n\
                    spec: {baseModel: m, replicas: 2, gpusPerReplica: 16, nodesPerReplica: 2}\n";
    let compiled = Test::new().service(services).compile().unwrap_or_else(|d| panic!("{}", d.render(false)));
    let lws = compiled.objects.iter().find(|o| o.id.kind == "LeaderWorkerSet").expect("a LeaderWorkerSet");
    let hpa = compiled.objects.iter().find(|o| o.id.kind == "HorizontalPodAutoscaler").expect("an HPA");
    assert_eq!(hpa.value["spec"]["scaleTargetRef"]["kind"], "LeaderWorkerSet");
    assert_eq!(lws.value["spec"]["replicas"], json!(2));
    assert_eq!((&hpa.value["spec"]["minReplicas"], &hpa.value["spec"]["maxReplicas"]), (&json!(1), &json!(6)));
    let mut live: Vec<Value> = compiled.objects.iter().map(|o| o.value.clone()).collect();
    let at = live.iter().position(|v| v["kind"] == "LeaderWorkerSet").unwrap();
    // The HPA scaled to 4 groups: the plan leaves the count alone.
    live[at]["spec"]["replicas"] = json!(4);
    live[at]["metadata"]["generation"] = json!(3);
    live[at]["status"] = json!({"observedGeneration": 3, "readyReplicas": 4, "updatedReplicas": 4, "replicas": 4});
    let plan = plan::plan(&compiled.objects, &live);
    assert!(plan.is_converged(), "{plan:#?}");
    let (loaded, _) = isvc::load::parse_services(&Source::new("services/big.yaml", services));
    let services: Vec<&isvc::model::v1alpha2::InferenceService> = loaded.iter().map(|s| &*s.service).collect();
    let statuses = plan::status(&services, &compiled.objects, &live, &plan);
    assert_eq!((statuses[0].phase, statuses[0].ready_replicas, statuses[0].wanted), (Phase::Ready, 4, 4));
    assert_eq!(statuses[0].message, "autoscaled between 1 and 6 groups");
    // Three of the four groups ready.
    live[at]["status"]["readyReplicas"] = json!(3);
    let statuses = plan::status(&services, &compiled.objects, &live, &plan);
    assert_eq!((statuses[0].phase, statuses[0].message.as_str()), (Phase::Progressing, "3 of 4 groups ready"));
    // At zero the HPA does nothing (pkg/controller/podautoscaler): the plan
    // raises the set to the minimum.
    live[at]["spec"]["replicas"] = json!(0);
    let plan = plan::plan(&compiled.objects, &live);
    assert_eq!(fields(&plan, "LeaderWorkerSet"), ["spec.replicas: 0 -> 1"]);
}

/// What `status` looks up for each service (its workload and autoscaler,
/// the plan's actions for it, its endpoint) is indexed once for the fleet:
/// each service still gets its own. Two services sharing a weighted route
/// both report the route (rendered by the first of them by name), a
/// service without a gateway its Service's address, and each its own count
/// of pending actions.
#[test]
fn status_finds_each_services_own_objects_and_a_shared_route() {
    let doc = |name: &str, spec: &str| {
        format!(
            "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {{name: {name}, namespace: team-a}}\n\
             spec: {{baseModel: Qwen/Qwen3-0.6B, {spec}}}\n"
        )
    };
    let text = [
        doc("v1", "replicas: 1, gateway: {route: llm.example.com/v, weight: 50}"),
        doc("v2", "replicas: 1, gateway: {route: llm.example.com/v, weight: 50}"),
        doc("chat", "replicas: 4"),
    ]
    .join("---\n");
    let (loaded, diags) = isvc::load::parse_services(&Source::new("services/fleet.yaml", &text));
    assert!(diags.is_empty(), "{diags:?}");
    let compiled = Test::new()
        .platform(
            "apiVersion: ai.example.com/v1alpha1\nkind: Platform\n\
             gateway:\n  parentRef: {name: gw, namespace: gateway-system}\n",
        )
        .file("services/fleet.yaml", text.as_str())
        .compile()
        .unwrap_or_else(|d| panic!("{}", d.render(false)));
    // A cluster with everything but chat's Service, and v2's Deployment
    // edited by hand.
    let mut live: Vec<Value> = compiled
        .objects
        .iter()
        .filter(|o| o.owner.is_some() && !(o.id.kind == "Service" && o.id.name == "chat"))
        .map(|o| o.value.clone())
        .collect();
    let v2 = live.iter_mut().find(|v| v["kind"] == "Deployment" && v["metadata"]["name"] == "v2").unwrap();
    v2["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = json!(1);
    let plan = plan::plan(&compiled.objects, &live);
    assert_eq!(actions(&plan), ["create service team-a/chat", "update deployment team-a/v2"]);
    let services: Vec<&isvc::model::v1alpha2::InferenceService> = loaded.iter().map(|s| &*s.service).collect();
    let statuses = plan::status(&services, &compiled.objects, &live, &plan);
    let seen: Vec<(&str, Option<&str>, &str, i64)> =
        statuses.iter().map(|s| (s.name.as_str(), s.endpoint.as_deref(), s.message.as_str(), s.wanted)).collect();
    assert_eq!(
        seen,
        [
            ("v1", Some("http://llm.example.com/v"), "rolling out: 0 of 1 pods updated", 1),
            ("v2", Some("http://llm.example.com/v"), "1 action pending (see isvc plan)", 1),
            ("chat", Some("http://chat.team-a.svc:8000"), "1 action pending (see isvc plan)", 4),
        ]
    );
}
