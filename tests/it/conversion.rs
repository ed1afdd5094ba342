//! Property tests of the conversion between InferenceService versions:
//! v1alpha1 to v1alpha2 and back loses nothing; v1alpha2 to v1alpha1 and
//! back loses nothing either (what v1alpha1 cannot say rides in an
//! annotation); and a v1alpha1 file renders exactly what its v1alpha2
//! translation (by `isvc migrate`) renders.

use std::collections::BTreeMap;

use isvc::base::diagnostics::Source;
use isvc::model::conversion::{LOST_FIELDS_ANNOTATION, from_hub, to_hub};
use isvc::model::objects::Object;
use isvc::model::v1alpha1 as v1;
use isvc::model::v1alpha2 as v2;
use k8s_openapi::api::core::v1::{EnvVar, EnvVarSource, SecretKeySelector};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::harness::Test;

fn dns_label() -> impl Strategy<Value = String> {
    "[a-z]([a-z0-9-]{0,20}[a-z0-9])?"
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof!["\\PC{1,30}", Just("a: b\n  evil: true".to_string()), Just("Qwen/Qwen3-0.6B".to_string())]
}

/// Labels and annotations: absent or non-empty (Kubernetes does not tell an
/// empty map from a missing one, and neither does the conversion).
fn string_map() -> impl Strategy<Value = Option<BTreeMap<String, String>>> {
    proptest::option::of(proptest::collection::btree_map("[a-z][a-z0-9.]{0,8}[a-z]", "[a-zA-Z0-9]{0,10}", 1..3))
}

prop_compose! {
    fn metadata()(name in dns_label(), namespace in proptest::option::of(dns_label()), labels in string_map(), annotations in string_map()) -> ObjectMeta {
        ObjectMeta { name: Some(name), namespace, labels, annotations, ..ObjectMeta::default() }
    }
}

fn phase() -> impl Strategy<Value = Option<v1::Phase>> {
    proptest::option::of(prop_oneof![Just(v1::Phase::Ready), Just(v1::Phase::Progressing)])
}

prop_compose! {
    fn v1alpha1()(
        metadata in metadata(),
        model in text(),
        replicas in 0..=1000i32,
        gpus in 1..=8i32,
        priority in proptest::option::of(dns_label()),
        queue in proptest::option::of(dns_label()),
        status in proptest::option::of((proptest::option::of(0..100i32), phase())),
    ) -> v1::InferenceService {
        v1::InferenceService {
            metadata,
            spec: v1::InferenceServiceSpec { model, replicas, gpus_per_replica: gpus, priority, queue },
            status: status.map(|(ready_replicas, phase)| v1::InferenceServiceStatus { ready_replicas, phase }),
        }
    }
}

prop_compose! {
    fn adapter()(name in dns_label(), source in prop_oneof!["[a-z]{1,8}/[a-z0-9-]{1,12}", "/[a-z]{1,8}/[a-z]{1,8}"]) -> v2::Adapter {
        v2::Adapter { name, source }
    }
}

fn quantity() -> impl Strategy<Value = Option<v2::QuantityText>> {
    proptest::option::of(prop_oneof!["[1-9][0-9]{0,2}(Gi|Mi|m)?", "[1-9][0-9]{0,2}"].prop_map(v2::QuantityText))
}

prop_compose! {
    fn status_v2()(
        ready_replicas in proptest::option::of(0..100i32),
        phase in phase(),
        loaded_adapters in proptest::collection::vec(dns_label(), 0..3),
        endpoint in proptest::option::of(text()),
        ready in proptest::option::of(prop_oneof![Just("True"), Just("False")]),
    ) -> v2::InferenceServiceStatus {
        let conditions = ready.into_iter().map(|s| serde_json::from_value(json!({
            "type": "Ready", "status": s, "reason": "Observed", "message": "", "lastTransitionTime": "2025-06-01T12:00:00Z",
        })).unwrap()).collect();
        v2::InferenceServiceStatus { ready_replicas, phase, loaded_adapters, endpoint, conditions }
    }
}

prop_compose! {
    fn v1alpha2()(
        metadata in metadata(),
        base_model in text(),
        adapters in proptest::collection::vec(adapter(), 0..4),
        scaling in prop_oneof![
            (0..=1000i32).prop_map(|r| (Some(r), None)),
            (1..=10i32, 0..=20i32, 1..=50i32).prop_map(|(min, extra, t)| (None, Some(v2::Autoscaling { min, max: min + extra, target_queue_length: t }))),
        ],
        (gpus_per_node, nodes) in (1..=8i32, prop_oneof![Just(1), 1..=4i32]),
        resources in proptest::option::of((quantity(), quantity(), quantity())),
        gateway in proptest::option::of(("[a-z]{1,8}\\.example\\.com(/[a-z]{1,6})?", proptest::option::of(-5..=5i32))),
        priority in proptest::option::of(dns_label()),
        queue in proptest::option::of(dns_label()),
        status in proptest::option::of(status_v2()),
        engine in engine(),
        accelerator in proptest::option::of(dns_label()),
        image in proptest::option::of("[a-z]{1,8}/[a-z-]{1,12}:v0\\.[0-9]{1,2}\\.[0-9]"),
    ) -> v2::InferenceService {
        let (replicas, autoscaling) = scaling;
        let (served_model_name, revision, args, env) = engine;
        v2::InferenceService {
            metadata,
            spec: v2::InferenceServiceSpec {
                base_model,
                adapters,
                replicas,
                autoscaling,
                gpus_per_replica: gpus_per_node * nodes,
                nodes_per_replica: nodes,
                resources: resources.map(|(cpu, memory, shm_size)| v2::Resources { cpu, memory, shm_size }),
                gateway: gateway.map(|(route, priority)| v2::Gateway { route, priority, weight: None }),
                priority,
                queue,
                served_model_name,
                revision,
                args,
                env,
                accelerator,
                image,
            },
            status,
        }
    }
}

/// The engine inputs: served name, revision, arguments, environment (a
/// value or a Secret key).
#[allow(clippy::type_complexity)]
fn engine() -> impl Strategy<Value = (Option<String>, Option<String>, Vec<String>, Vec<EnvVar>)> {
    let env = ("[A-Z][A-Z0-9_]{0,10}", proptest::option::of("[a-z0-9]{0,8}"), proptest::option::of(dns_label()))
        .prop_map(|(name, value, secret)| EnvVar {
            name,
            value: if secret.is_some() { None } else { value },
            value_from: secret.map(|s| EnvVarSource {
                secret_key_ref: Some(SecretKeySelector { name: s, key: "token".into(), optional: None }),
                ..EnvVarSource::default()
            }),
        });
    (
        proptest::option::of(text()),
        proptest::option::of(prop_oneof!["[0-9a-f]{40}", "main", "v[0-9]\\.[0-9]"]),
        proptest::collection::vec(prop_oneof!["--max-model-len=[0-9]{4,6}", Just("--enforce-eager".to_string())], 0..3),
        proptest::collection::vec(env, 0..3),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// v1alpha1 -> v1alpha2 -> v1alpha1 is the identity, and stores nothing
    /// in the annotation: v1alpha2 can say all that v1alpha1 can.
    #[test]
    fn v1alpha1_round_trips_through_the_hub(old in v1alpha1()) {
        let hub = to_hub(&old).unwrap();
        prop_assert_eq!(&hub.spec.base_model, &old.spec.model);
        prop_assert_eq!(hub.spec.replicas, Some(old.spec.replicas));
        prop_assert_eq!(&hub.spec.priority, &old.spec.priority);
        prop_assert_eq!(&hub.spec.queue, &old.spec.queue);
        let back = from_hub(&hub);
        prop_assert!(back.metadata.annotations.as_ref().is_none_or(|a| !a.contains_key(LOST_FIELDS_ANNOTATION)));
        prop_assert_eq!(serde_json::to_value(&back).unwrap(), serde_json::to_value(&old).unwrap());
    }

    /// v1alpha2 -> v1alpha1 -> v1alpha2 is the identity: what v1alpha1
    /// cannot say is kept in the annotation, not dropped.
    #[test]
    fn v1alpha2_round_trips_through_v1alpha1(new in v1alpha2()) {
        let down = from_hub(&new);
        prop_assert_eq!(&down.spec.model, &new.spec.base_model);
        prop_assert!((1..=8).contains(&down.spec.gpus_per_replica));
        let up = to_hub(&down).unwrap();
        prop_assert_eq!(up, new);
    }

    /// A v1alpha1 down-conversion is itself valid v1alpha1: it serializes
    /// and reads back unchanged.
    #[test]
    fn down_conversions_are_valid_v1alpha1_objects(new in v1alpha2()) {
        let down = from_hub(&new);
        let value = serde_json::to_value(&down).unwrap();
        let again: v1::InferenceService = serde_json::from_value(value.clone()).unwrap();
        prop_assert_eq!(serde_json::to_value(&again).unwrap(), value);
    }
}

/// Compiles one document given as JSON, as if it were a file.
fn compile(doc: &Value) -> Vec<Object> {
    let text = isvc::base::yaml::to_string(doc);
    Test::new()
        .file("services/s.yaml", text.clone())
        .compile()
        .unwrap_or_else(|d| panic!("{text}\n{}", d.render(false)))
        .objects
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// The same service written as v1alpha1 and as v1alpha2 (what `isvc
    /// migrate` writes) renders the same objects, byte for byte.
    #[test]
    fn both_versions_render_the_same_children(old in v1alpha1()) {
        let mut old = old;
        // Tiers and queues need a platform with tenants; this one has none.
        (old.spec.priority, old.spec.queue, old.status) = (None, None, None);
        if let Some(a) = old.metadata.annotations.as_mut() {
            a.remove(LOST_FIELDS_ANNOTATION);
        }
        let mut doc = serde_json::to_value(&old).unwrap();
        let v1_objects = compile(&doc);
        let text = isvc::base::yaml::to_string(&doc);
        let (migrated, _) = isvc::emit::migrate::migrate_source(&Source::new("services/s.yaml", text)).unwrap().unwrap();
        let (services, _) = isvc::load::parse_services(&Source::new("services/s.yaml", migrated));
        prop_assert_eq!(services[0].api_version, v2::API_VERSION);
        doc["apiVersion"] = json!(v2::API_VERSION);
        let spec = doc["spec"].as_object_mut().unwrap();
        let model = spec.remove("model").unwrap();
        spec.insert("baseModel".to_string(), model);
        let v2_objects = compile(&doc);
        prop_assert_eq!(v1_objects, v2_objects);
    }
}
