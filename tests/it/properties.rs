//! Property tests over generated valid InferenceServices: rendering is
//! deterministic and idempotent, values cannot break out of their YAML
//! scalars, and the invariants every rendered service must keep hold.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::common::service;
use isvc::base::diagnostics::Source;
use isvc::model::objects::Object;
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::harness::Test;

/// Writes `doc` as YAML text, loads it like a file, and compiles it.
fn compile(doc: &Value) -> Vec<Object> {
    let text = isvc::base::yaml::to_string(doc);
    let source: Arc<Source> = Source::new("services/generated.yaml", text.clone());
    let (_, diags) = isvc::load::parse_services(&source);
    assert!(diags.is_empty(), "valid input was rejected:\n{text}\n{diags:?}");
    Test::new()
        .file("services/generated.yaml", text.clone())
        .compile()
        .unwrap_or_else(|d| panic!("valid input failed to compile:\n{text}\n{}", d.render(false)))
        .objects
}

fn find<'a>(objects: &'a [Object], kind: &str) -> Option<&'a Value> {
    objects.iter().find(|o| o.id.kind == kind).map(|o| &o.value)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn rendering_is_deterministic(doc in service()) {
        let a = isvc::emit::write::tree(&compile(&doc));
        let b = isvc::emit::write::tree(&compile(&doc));
        prop_assert_eq!(a, b);
    }

    #[test]
    fn values_never_escape_their_scalars(doc in service()) {
        let objects = compile(&doc);
        let deploy = find(&objects, "Deployment").unwrap();
        let args = &deploy["spec"]["template"]["spec"]["containers"][0]["args"];
        prop_assert_eq!(&args[1], &doc["spec"]["model"]);
        prop_assert_eq!(objects.len(), if doc["spec"]["replicas"] == 0 { 3 } else { 4 });
        if let Some(annotations) = doc["metadata"].get("annotations") {
            prop_assert_eq!(&deploy["metadata"]["annotations"], annotations);
        }
        // Re-parsing the written file gives back the same object.
        for o in &objects {
            let text = o.to_file();
            let source = Source::new("x.yaml", text);
            let docs = isvc::base::yaml::parse_documents(&source, isvc::base::yaml::Limits::default()).unwrap();
            prop_assert_eq!(docs.len(), 1);
            prop_assert_eq!(&docs[0].as_ref().unwrap().to_json(), &o.value);
        }
    }

    #[test]
    fn services_select_their_pods_and_autoscalers_follow_the_operator(doc in service()) {
        let objects = compile(&doc);
        let deploy = find(&objects, "Deployment").unwrap();
        let service = find(&objects, "Service").unwrap();
        let pod_labels = deploy["spec"]["template"]["metadata"]["labels"].as_object().unwrap();
        for (k, v) in service["spec"]["selector"].as_object().unwrap() {
            prop_assert_eq!(pod_labels.get(k), Some(v), "selector {} not on the pods", k);
        }
        prop_assert_eq!(&deploy["spec"]["selector"]["matchLabels"], &service["spec"]["selector"]);
        let ports: Vec<&Value> = deploy["spec"]["template"]["spec"]["containers"][0]["ports"].as_array().unwrap().iter().collect();
        let target = &service["spec"]["ports"][0]["targetPort"];
        prop_assert!(ports.iter().any(|p| &p["name"] == target), "targetPort {} matches no container port", target);
        prop_assert_eq!(&service["spec"]["ports"][0]["port"], &json!(8000));

        let replicas = doc["spec"]["replicas"].as_i64().unwrap();
        let gpus = doc["spec"].get("gpusPerReplica").and_then(Value::as_i64).unwrap_or(1).to_string();
        let resources = &deploy["spec"]["template"]["spec"]["containers"][0]["resources"];
        prop_assert_eq!(&resources["requests"]["nvidia.com/gpu"], &json!(gpus));
        prop_assert_eq!(&resources["limits"]["nvidia.com/gpu"], &json!(gpus));
        match find(&objects, "HorizontalPodAutoscaler") {
            None => {
                prop_assert_eq!(replicas, 0);
                prop_assert_eq!(&deploy["spec"]["replicas"], &json!(0));
            }
            Some(hpa) => {
                prop_assert_eq!(&hpa["spec"]["minReplicas"], &json!((replicas / 2).max(1)));
                prop_assert_eq!(&hpa["spec"]["maxReplicas"], &json!(replicas * 3));
                // The Deployment starts at `replicas`, inside the HPA's bounds,
                // so the HPA leaves it there until its metric says otherwise.
                prop_assert_eq!(&deploy["spec"]["replicas"], &json!(replicas));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// render, then --check and diff against the result, find nothing; a
    /// second render rewrites nothing.
    #[test]
    fn render_then_check_and_diff_are_clean(docs in proptest::collection::vec(service(), 1..6)) {
        let mut seen = BTreeMap::new();
        let docs: Vec<Value> = docs.into_iter().filter(|d| {
            let key = (d["metadata"].get("namespace").map_or_else(|| "\"default\"".to_string(), Value::to_string), d["metadata"]["name"].to_string());
            seen.insert(key, ()).is_none()
        }).collect();
        let objects: Vec<Object> = {
            let text: String = docs.iter().map(|d| format!("---\n{}", isvc::base::yaml::to_string(d))).collect();
            let compiled = Test::new().file("services/all.yaml", text).compile();
            prop_assert!(compiled.is_ok());
            compiled.unwrap().objects
        };
        let dir = tempfile::tempdir().unwrap();
        let tree = isvc::emit::write::tree(&objects);
        let off = isvc::emit::stat::StatCache::off();
        let first = isvc::emit::write::write(dir.path(), &tree, &off).unwrap();
        prop_assert_eq!(first.create.len(), tree.len());
        let existing = isvc::emit::write::scan_texts(dir.path()).unwrap();
        prop_assert!(isvc::emit::write::changes(&tree, &existing).is_empty());
        let held = <isvc::model::objects::Written as isvc::model::objects::Held>::hold(objects.clone());
        prop_assert!(isvc::emit::diff::diff(&held, &existing).unwrap().is_empty());
        let again = isvc::emit::write::write(dir.path(), &tree, &off).unwrap();
        prop_assert!(again.is_empty());
        prop_assert_eq!(again.unchanged, tree.len());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// The rendered objects, read back as a live snapshot, are converged:
    /// `plan` finds nothing to do.
    #[test]
    fn plan_against_the_rendered_output_is_empty(doc in service()) {
        let objects = compile(&doc);
        let live: Vec<Value> = objects.iter().map(|o| o.value.clone()).collect();
        let plan = isvc::emit::plan::plan(&objects, &live);
        prop_assert!(plan.is_converged(), "{}", isvc::report::plan::to_text(&plan, false));
    }
}
