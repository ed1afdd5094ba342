//! Gateway registration: a service's `gateway.route` becomes a Gateway API
//! HTTPRoute (`gateway.networking.k8s.io/v1`) attached to the platform's
//! Gateway.
//!
//! Where the platform enables the Gateway API Inference Extension, the
//! route's backend is an InferencePool (`inference.networking.k8s.io/v1`)
//! selecting the service's serving pods, whose endpoint picker chooses a pod
//! per request (by queue length, loaded adapters, prefix cache); and a
//! service's `gateway.priority` becomes an InferenceObjective
//! (`llm-d.ai/v1alpha2`: llm-d took the API over when the extension dropped
//! it), which requests select with the `x-llm-d-inference-objective` header
//! (`x-gateway-inference-objective` is its deprecated alias; llm-d/llm-d-router
//! `pkg/epp/metadata/consts.go`). Without the extension the backend is the
//! service's Service.
//!
//! Every InferencePool gets its endpoint picker (llm-d's router, the
//! extension's `cmd/epp`), rendered here as the upstream chart does
//! (llm-d/llm-d-router `config/charts/routerlib/templates/`): a Deployment,
//! its Service (ext-proc, health and metrics ports), ServiceAccount, Role and
//! RoleBinding, the scorer configuration in a ConfigMap, a disruption budget,
//! and a ServiceMonitor where monitoring is on. InferencePool v1's
//! `endpointPickerRef` has no namespace, so the picker lives beside the pool.
//!
//! A route is a hostname, a path prefix, or both. Services of one namespace
//! may share a route when each gives `gateway.weight` (a canary): the route
//! then has one weighted backend per service, and the service whose name
//! sorts first renders the HTTPRoute ([`share_routes`]).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::platform::{EndpointPicker, FailureMode, GatewayConfig, ParentRef};
use crate::model::route::parse_route;
use crate::model::v1alpha2::InferenceServiceSpec;

pub const ROUTE_API_VERSION: &str = "gateway.networking.k8s.io/v1";
pub const POOL_GROUP: &str = "inference.networking.k8s.io";
pub const POOL_API_VERSION: &str = "inference.networking.k8s.io/v1";
pub const OBJECTIVE_API_VERSION: &str = "llm-d.ai/v1alpha2";
/// The header that selects an InferenceObjective (llm-d/llm-d-router
/// `pkg/epp/metadata/consts.go` `ObjectiveKey`).
pub const OBJECTIVE_HEADER: &str = "x-llm-d-inference-objective";
/// Its deprecated alias, which older pickers read alone (`OldObjectiveKey`).
pub const OBJECTIVE_HEADER_ALIAS: &str = "x-gateway-inference-objective";
/// The picker's gRPC health port (`--grpc-health-port`) and metrics port
/// (`--metrics-port`): llm-d/llm-d-router `pkg/epp/server/options.go`
/// defaults, which the chart's Service and probes use.
pub const PICKER_HEALTH_PORT: i32 = 9003;
pub const PICKER_METRICS_PORT: i32 = 9090;
/// Where the configuration ConfigMap is mounted, and its key.
pub const PICKER_CONFIG_DIR: &str = "/config";
pub const PICKER_CONFIG_FILE: &str = "config.yaml";
/// The chart's grace period: ext-proc streams drain before the pod stops
/// (`--drain-timeout` is 30s by default).
pub const PICKER_GRACE_SECONDS: i32 = 130;
/// Pod-template annotation holding the checksum of the picker's configuration.
pub const PICKER_CHECKSUM_ANNOTATION: &str = "ai.example.com/picker-config-checksum";
/// The picker's label value for `app.kubernetes.io/component`.
pub const PICKER_COMPONENT: &str = "endpoint-picker";

/// What a service's gateway objects need.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GatewayPlan {
    pub parent_ref: ParentRef,
    /// The route's hostname, if it names one.
    pub hostnames: Vec<String>,
    /// The path prefix the route matches.
    pub path: String,
    /// Whether the prefix is replaced by `/` before the request reaches vLLM.
    pub rewrite: bool,
    /// This service's own backend, with its weight where the route is shared.
    pub backend: BackendRef,
    /// The HTTPRoute's backends: this service's alone, or every service of a
    /// shared route, by name.
    pub backends: Vec<BackendRef>,
    /// Whether this service renders the HTTPRoute: false for all but the
    /// first service of a shared route.
    pub renders_route: bool,
    pub request_timeout: Option<String>,
    /// The InferencePool and its picker, where the platform enables the extension.
    pub pool: Option<PoolPlan>,
    /// The InferenceObjective's priority, where the pool exists.
    pub priority: Option<i32>,
    /// The header that selects the objective, and its deprecated alias.
    pub objective_headers: [&'static str; 2],
}

/// One backend of the route: an InferencePool, or a Service and its port.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BackendRef {
    pub group: String,
    pub kind: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight: Option<i32>,
}

/// The InferencePool's endpoint picker.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PoolPlan {
    pub endpoint_picker: String,
    pub endpoint_picker_port: i32,
    pub failure_mode: FailureMode,
    pub picker: PickerPlan,
}

/// The endpoint picker's objects.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PickerPlan {
    /// Name of every picker object: the service's name and the suffix.
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// The Deployment's labels: `labels`, and the service's Kueue queue and
    /// tier where it has one, so Kueue admits the picker with its server.
    pub workload_labels: BTreeMap<String, String>,
    pub selector: BTreeMap<String, String>,
    pub replicas: i32,
    pub image: String,
    pub image_pull_policy: String,
    pub args: Vec<String>,
    pub port: i32,
    pub health_port: i32,
    pub metrics_port: i32,
    /// The gRPC health service the probes ask: `inference-extension` for a
    /// single picker; `liveness` and `readiness` with leader election, so
    /// only the leader is Ready (routerlib `_deployment.yaml`).
    pub liveness_service: String,
    pub readiness_service: String,
    pub requests: BTreeMap<String, String>,
    pub limits: BTreeMap<String, String>,
    /// The picker configuration file (EndpointPickerConfig), as the ConfigMap holds it.
    pub config: BTreeMap<String, String>,
    pub config_dir: String,
    /// The Role's rules: what the picker watches.
    pub rules: Vec<serde_json::Value>,
    pub termination_grace_period_seconds: i32,
    /// Whether the flow control feature gate is on.
    pub flow_control: bool,
    /// The serving pods' security settings, with the service account token
    /// mounted: the picker watches the API server (the pod's annotation
    /// lists the relaxation, as for any granted exception).
    pub security: crate::derive::security::PodSecurity,
    /// Annotations of the picker's pods: the security relaxation and the
    /// configuration's checksum, so a configuration change rolls the picker.
    pub pod_annotations: BTreeMap<String, String>,
    /// Labels of the picker's ServiceMonitor: its own and the platform's.
    pub monitor_labels: BTreeMap<String, String>,
}

/// The gateway plan of a service that names a route the platform can serve.
/// `adapters`: whether the service serves LoRA adapters (the picker then
/// scores LoRA affinity).
pub fn plan(
    spec: &InferenceServiceSpec,
    config: Option<&GatewayConfig>,
    name: &str,
    namespace: &str,
    labels: &BTreeMap<String, String>,
    port: i32,
    security: &crate::model::platform::Security,
) -> Option<GatewayPlan> {
    let g = spec.gateway.as_ref()?;
    let config = config?;
    let route = parse_route(&g.route).ok()?;
    let pool = config.inference_extension.then(|| {
        let epp = &config.endpoint_picker;
        PoolPlan {
            endpoint_picker: picker_name(name, epp),
            endpoint_picker_port: epp.port,
            failure_mode: epp.failure_mode,
            picker: picker(epp, name, namespace, labels, !spec.adapters.is_empty(), g.priority.is_some(), security),
        }
    });
    let backend = match &pool {
        Some(_) => BackendRef {
            group: POOL_GROUP.to_string(),
            kind: "InferencePool".to_string(),
            name: name.to_string(),
            port: None,
            weight: g.weight,
        },
        None => BackendRef {
            group: String::new(),
            kind: "Service".to_string(),
            name: name.to_string(),
            port: Some(port),
            weight: g.weight,
        },
    };
    Some(GatewayPlan {
        parent_ref: config.parent_ref.clone(),
        hostnames: route.host.iter().cloned().collect(),
        rewrite: route.path != "/",
        path: route.path,
        backends: vec![backend.clone()],
        backend,
        renders_route: true,
        request_timeout: config.request_timeout.clone(),
        priority: pool.as_ref().and(g.priority),
        pool,
        objective_headers: [OBJECTIVE_HEADER, OBJECTIVE_HEADER_ALIAS],
    })
}

/// The name of a service's picker objects.
pub fn picker_name(service: &str, epp: &EndpointPicker) -> String {
    format!("{service}{}", epp.service_suffix)
}

/// Whether a service's requests wait in its picker's flow control queue:
/// the service has a route (so a pool and a picker), and the platform turns
/// flow control on or the service gives a priority.
pub fn picker_holds_requests(spec: &InferenceServiceSpec, config: Option<&GatewayConfig>) -> bool {
    spec.gateway.as_ref().is_some_and(|g| config.is_some_and(|c| c.picker_holds_requests(g.priority.is_some())))
}

/// The picker of the pool `name`: flags, probes and RBAC as llm-d's router
/// chart renders them (llm-d/llm-d-router `config/charts/routerlib/templates/
/// _deployment.yaml`, `_rbac.yaml`, `llm-d-router-gateway/templates/rbac.yaml`).
fn picker(
    epp: &EndpointPicker,
    name: &str,
    namespace: &str,
    service_labels: &BTreeMap<String, String>,
    adapters: bool,
    priority: bool,
    security: &crate::model::platform::Security,
) -> PickerPlan {
    // A priority acts only through flow control: turn it on for the pool.
    let flow_control = epp.flow_control || priority;
    let picker = picker_name(name, epp);
    let mut labels = service_labels.clone();
    labels.insert("app.kubernetes.io/name".to_string(), picker.clone());
    labels.insert("app.kubernetes.io/component".to_string(), PICKER_COMPONENT.to_string());
    let selector = BTreeMap::from([("app.kubernetes.io/name".to_string(), picker.clone())]);
    let ha = epp.replicas > 1;
    let flag = |f: &str, v: &str| [format!("--{f}"), v.to_string()];
    let mut args: Vec<String> = [
        flag("pool-name", name),
        flag("pool-namespace", namespace),
        flag("pool-group", POOL_GROUP),
        flag("config-file", &format!("{PICKER_CONFIG_DIR}/{PICKER_CONFIG_FILE}")),
        flag("grpc-port", &epp.port.to_string()),
        flag("grpc-health-port", &PICKER_HEALTH_PORT.to_string()),
        flag("metrics-port", &PICKER_METRICS_PORT.to_string()),
        flag("zap-encoder", "json"),
    ]
    .into_iter()
    .flatten()
    .collect();
    // Tracing is on by default and would export to a collector that may not
    // exist; metrics need no bearer token (the tenant NetworkPolicy admits
    // only the monitoring namespaces to the port).
    args.extend(["--tracing=false".to_string(), "--metrics-endpoint-auth=false".to_string()]);
    if ha {
        args.push("--ha-enable-leader-election".to_string());
    }
    let watch = |groups: &[&str], resources: &[&str]| serde_json::json!({"apiGroups": groups, "resources": resources, "verbs": ["get", "watch", "list"]});
    let mut rules = vec![
        watch(&[""], &["pods"]),
        watch(&[POOL_GROUP], &["inferencepools"]),
        watch(&["llm-d.ai", "inference.networking.x-k8s.io"], &["inferenceobjectives", "inferencemodelrewrites"]),
    ];
    if ha {
        rules.push(serde_json::json!({
            "apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
            "verbs": ["get", "watch", "list", "create", "update", "patch"],
        }));
    }
    let quantities = |m: &BTreeMap<String, crate::model::platform::QuantityText>| {
        m.iter().map(|(k, v)| (k.clone(), v.0.clone())).collect::<BTreeMap<_, _>>()
    };
    let config = picker_config(epp, adapters, flow_control);
    let security = crate::derive::security::derive(&crate::model::platform::Security {
        mount_service_account_token: true,
        ..security.clone()
    });
    let mut pod_annotations = security.pod_annotations.clone();
    pod_annotations.insert(
        PICKER_CHECKSUM_ANNOTATION.to_string(),
        format!("{:016x}", crate::derive::adapters::fnv1a(config.as_bytes())),
    );
    let (liveness_service, readiness_service) =
        if ha { ("liveness", "readiness") } else { ("inference-extension", "inference-extension") };
    PickerPlan {
        name: picker,
        workload_labels: labels.clone(),
        labels,
        selector,
        replicas: epp.replicas,
        image: epp.image.clone(),
        image_pull_policy: epp.image_pull_policy.as_str().to_string(),
        args,
        port: epp.port,
        health_port: PICKER_HEALTH_PORT,
        metrics_port: PICKER_METRICS_PORT,
        liveness_service: liveness_service.to_string(),
        readiness_service: readiness_service.to_string(),
        requests: quantities(&epp.resources.requests),
        limits: quantities(&epp.resources.limits),
        config: BTreeMap::from([(PICKER_CONFIG_FILE.to_string(), config)]),
        config_dir: PICKER_CONFIG_DIR.to_string(),
        rules,
        termination_grace_period_seconds: PICKER_GRACE_SECONDS,
        flow_control,
        pod_annotations,
        monitor_labels: BTreeMap::new(),
        security,
    }
}

/// The picker's EndpointPickerConfig: the chart's default scorers (queue
/// depth, KV-cache use, prefix cache; routerlib `_config.yaml`), LoRA
/// affinity for a service with adapters (`lora-affinity-scorer`,
/// `pkg/epp/framework/plugins/scheduling/scorer/loraaffinity`), and the
/// `flowControl` feature gate (`pkg/epp/flowcontrol/config.go`), whose
/// queue settings keep their defaults. llm-d's router reads its metrics
/// through data-source plugins; the extension's own picker (the older
/// apiVersion) scrapes without them.
pub fn picker_config(epp: &EndpointPicker, adapters: bool, flow_control: bool) -> String {
    let mut scorers = vec![("queue-scorer", 2), ("kv-cache-utilization-scorer", 2), ("prefix-cache-scorer", 3)];
    if adapters {
        scorers.push(("lora-affinity-scorer", 1));
    }
    let mut out = format!("apiVersion: {}\nkind: EndpointPickerConfig\n", epp.config_api_version);
    if flow_control {
        out.push_str("featureGates:\n- flowControl\n");
    }
    out.push_str("plugins:\n");
    for (s, _) in &scorers {
        out.push_str(&format!("- type: {s}\n"));
    }
    if epp.config_api_version.starts_with("llm-d.ai/") {
        out.push_str("- type: metrics-data-source\n  parameters:\n    scheme: http\n    path: /metrics\n");
        out.push_str("- type: core-metrics-extractor\n");
    }
    out.push_str("schedulingProfiles:\n- name: default\n  plugins:\n");
    for (s, w) in &scorers {
        out.push_str(&format!("  - pluginRef: {s}\n    weight: {w}\n"));
    }
    out
}

/// Gives every service of a shared route the route's backends, and leaves
/// the HTTPRoute to the service whose name sorts first. Routes are shared
/// only where every service gives a weight (the loader refuses the rest).
/// Each route's services, by place in `services`.
pub fn share_routes(services: &mut [&mut crate::derive::DesiredService]) -> Vec<Vec<usize>> {
    type Key = (String, Vec<String>, String);
    let mut routes: BTreeMap<Key, Vec<usize>> = BTreeMap::new();
    for (i, d) in services.iter().enumerate() {
        let Some(g) = d.gateway.as_ref().filter(|g| g.backend.weight.is_some()) else { continue };
        routes.entry((d.namespace.clone(), g.hostnames.clone(), g.path.clone())).or_default().push(i);
    }
    for places in routes.values_mut() {
        // In the order of the services' names; the first renders the route.
        places.sort_by(|&a, &b| services[a].name.cmp(&services[b].name));
        let backends: Vec<BackendRef> =
            places.iter().filter_map(|&p| services[p].gateway.as_ref()).map(|g| g.backend.clone()).collect();
        for (n, &p) in places.iter().enumerate() {
            let d = &mut *services[p];
            let Some(g) = d.gateway.as_mut() else { continue };
            g.backends = backends.clone();
            g.renders_route = n == 0;
            if n > 0 {
                d.objects.retain(|c| c.kind != "HTTPRoute");
            }
        }
    }
    routes.into_values().collect()
}

/// Where clients reach a service: its route, or the Service's address.
pub fn endpoint(spec: &InferenceServiceSpec, name: &str, namespace: &str, port: i32) -> String {
    match spec.gateway.as_ref().and_then(|g| parse_route(&g.route).ok()) {
        Some(route) => route.to_string(),
        None => format!("http://{name}.{namespace}.svc:{port}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_picker_config_has_the_scorers_and_the_flow_control_gate() {
        let epp = EndpointPicker::default();
        let plain = picker_config(&epp, false, false);
        assert!(plain.starts_with("apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n"), "{plain}");
        assert!(!plain.contains("lora-affinity-scorer") && !plain.contains("featureGates"));
        let full = picker_config(&epp, true, true);
        assert!(full.contains("featureGates:\n- flowControl\n"));
        assert!(full.contains("  - pluginRef: lora-affinity-scorer\n    weight: 1\n"));
        // The extension's own picker reads no data-source plugins.
        let old = EndpointPicker { config_api_version: "inference.networking.x-k8s.io/v1alpha1".into(), ..epp };
        assert!(!picker_config(&old, false, false).contains("metrics-data-source"));
    }

    #[test]
    fn pickers_watch_what_the_chart_grants_and_elect_a_leader_when_several() {
        let labels = BTreeMap::from([("app.kubernetes.io/name".to_string(), "a".to_string())]);
        let sec = crate::model::platform::Security::default();
        let one = picker(&EndpointPicker::default(), "a", "ns", &labels, false, false, &sec);
        assert_eq!(one.name, "a-epp");
        assert_eq!(one.labels["app.kubernetes.io/name"], "a-epp");
        assert!(one.security.automount_service_account_token);
        assert!(!one.args.contains(&"--ha-enable-leader-election".to_string()));
        assert_eq!(one.rules.len(), 3);
        let two =
            picker(&EndpointPicker { replicas: 2, ..EndpointPicker::default() }, "a", "ns", &labels, false, true, &sec);
        assert!(two.args.contains(&"--ha-enable-leader-election".to_string()));
        assert_eq!((two.liveness_service.as_str(), two.readiness_service.as_str()), ("liveness", "readiness"));
        assert!(two.flow_control, "a priority turns flow control on");
        assert_ne!(one.pod_annotations[PICKER_CHECKSUM_ANNOTATION], two.pod_annotations[PICKER_CHECKSUM_ANNOTATION]);
    }
}
