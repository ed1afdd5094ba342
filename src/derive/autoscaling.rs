//! Queue-length autoscaling: the bounds a service scales between, and which
//! object does the scaling.
//!
//! A service that names `autoscaling` scales between its `min` and `max` on
//! vLLM's `vllm:num_requests_waiting`, `targetQueueLength` waiting requests
//! per replica. Where the platform declares `keda`, a KEDA ScaledObject does
//! it with a Prometheus trigger (KEDA then owns the HorizontalPodAutoscaler
//! it creates); otherwise the HorizontalPodAutoscaler of every service does,
//! reading the metric through the cluster's metrics adapter. Never both: the
//! two would fight over the replica count.
//!
//! Behind an endpoint picker with flow control, requests wait in the picker
//! rather than in vLLM, so `vllm:num_requests_waiting` under-reads demand:
//! the service scales on the picker's queue instead
//! (`llm_d_epp_flow_control_queue_size`, llm-d/llm-d-router
//! `pkg/epp/metrics/metrics.go`), as llm-d's workload autoscaling guide does
//! (llm-d/llm-d `guides/workload-autoscaling/keda-epp/README.md`): KEDA with
//! the platform's `gateway.endpointPicker.queueQuery`, or the HPA with an
//! Object metric on the picker's Service, through the metrics adapter. That
//! queue exists at zero pods, so there `autoscaling.min: 0` is allowed with
//! KEDA, which activates the workload from zero.

use serde::Serialize;

use crate::model::platform::{EndpointPicker, KedaConfig};
use crate::model::v1alpha2::InferenceServiceSpec;

/// The ScaledObject's trigger settings for one service.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KedaTrigger {
    pub server_address: String,
    pub query: String,
    pub polling_interval: i32,
}

/// The KEDA trigger of a service that names `autoscaling`, where the
/// platform uses KEDA.
/// `picker`: the picker's settings and Service name, where the service's
/// requests wait in it.
pub fn keda_trigger(
    spec: &InferenceServiceSpec,
    keda: Option<&KedaConfig>,
    picker: Option<(&EndpointPicker, &str)>,
    namespace: &str,
    name: &str,
) -> Option<KedaTrigger> {
    let keda = keda?;
    spec.autoscaling.as_ref()?;
    let query = match picker {
        Some((epp, picker)) => epp.queue_query.replace("{namespace}", namespace).replace("{picker}", picker),
        None => keda.query.replace("{namespace}", namespace).replace("{name}", name),
    };
    Some(KedaTrigger { server_address: keda.server_address.clone(), query, polling_interval: keda.polling_interval })
}

/// The metric of the picker's queue, which an HPA reads as an Object metric
/// of the picker's Service.
pub const PICKER_QUEUE_METRIC: &str = "llm_d_epp_flow_control_queue_size";

/// The bounds a service scales between and its steady-state replicas:
/// `autoscaling` as given, or for `replicas` > 0 the reference Operator's
/// max(1, replicas / 2) to replicas x 3. `None` bounds for a fixed count of 0.
pub fn bounds(spec: &InferenceServiceSpec) -> (Option<(i32, i32)>, i32) {
    match (&spec.autoscaling, spec.replicas) {
        (Some(a), _) => (Some((a.min, a.max)), a.min),
        (None, Some(r)) => (crate::derive::autoscaler_bounds(r), r),
        (None, None) => (None, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::v1alpha2::Autoscaling;

    fn spec(replicas: Option<i32>, autoscaling: Option<(i32, i32, i32)>) -> InferenceServiceSpec {
        let mut s = crate::model::conversion::spec_to_hub(&crate::model::v1alpha1::InferenceServiceSpec {
            model: "m".into(),
            replicas: 0,
            gpus_per_replica: 1,
            priority: None,
            queue: None,
        });
        s.replicas = replicas;
        s.autoscaling = autoscaling.map(|(min, max, t)| Autoscaling { min, max, target_queue_length: t });
        s
    }

    #[test]
    fn bounds_come_from_autoscaling_or_the_reference_operator() {
        assert_eq!(bounds(&spec(None, Some((2, 6, 4)))), (Some((2, 6)), 2));
        assert_eq!(bounds(&spec(Some(4), None)), (Some((2, 12)), 4));
        assert_eq!(bounds(&spec(Some(0), None)), (None, 0));
    }

    #[test]
    fn the_query_names_the_service() {
        let default_query =
            || "sum(vllm:num_requests_waiting{namespace=\"{namespace}\",service=\"{name}\"})".to_string();
        let keda =
            KedaConfig { server_address: "http://prom:9090".into(), query: default_query(), polling_interval: 15 };
        let t = keda_trigger(&spec(None, Some((1, 2, 3))), Some(&keda), None, "team-a", "llama").unwrap();
        assert_eq!(t.query, "sum(vllm:num_requests_waiting{namespace=\"team-a\",service=\"llama\"})");
        assert!(keda_trigger(&spec(Some(1), None), Some(&keda), None, "team-a", "llama").is_none());
        // Behind a picker with flow control: the picker's queue.
        let epp = EndpointPicker::default();
        let t = keda_trigger(&spec(None, Some((0, 2, 3))), Some(&keda), Some((&epp, "llama-epp")), "team-a", "llama");
        assert_eq!(
            t.unwrap().query,
            "sum(llm_d_epp_flow_control_queue_size{namespace=\"team-a\",service=\"llama-epp\"})"
        );
    }
}
