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
//! it), which requests select with the `x-gateway-inference-objective`
//! header. Without the extension the backend is the service's Service.
//!
//! A route is a hostname, a path prefix, or both; no two services may claim
//! the same one.

use serde::Serialize;

use crate::model::platform::{FailureMode, GatewayConfig, ParentRef};
use crate::model::route::parse_route;
use crate::model::v1alpha2::InferenceServiceSpec;

pub const ROUTE_API_VERSION: &str = "gateway.networking.k8s.io/v1";
pub const POOL_GROUP: &str = "inference.networking.k8s.io";
pub const POOL_API_VERSION: &str = "inference.networking.k8s.io/v1";
pub const OBJECTIVE_API_VERSION: &str = "llm-d.ai/v1alpha2";

/// What a service's gateway objects need.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GatewayPlan {
    pub parent_ref: ParentRef,
    /// The route's hostname, if it names one.
    pub hostnames: Vec<String>,
    /// The path prefix the route matches.
    pub path: String,
    /// Whether the prefix is replaced by `/` before the request reaches vLLM.
    pub rewrite: bool,
    pub backend: BackendRef,
    pub request_timeout: Option<String>,
    /// The InferencePool, where the platform enables the extension.
    pub pool: Option<PoolPlan>,
    /// The InferenceObjective's priority, where the pool exists.
    pub priority: Option<i32>,
}

/// The route's backend: the InferencePool, or the Service and its port.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BackendRef {
    pub group: String,
    pub kind: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
}

/// The InferencePool's endpoint picker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PoolPlan {
    pub endpoint_picker: String,
    pub endpoint_picker_port: i32,
    pub failure_mode: FailureMode,
}

/// The gateway plan of a service that names a route the platform can serve.
pub fn plan(spec: &InferenceServiceSpec, config: Option<&GatewayConfig>, name: &str, port: i32) -> Option<GatewayPlan> {
    let g = spec.gateway.as_ref()?;
    let config = config?;
    let route = parse_route(&g.route).ok()?;
    let pool = config.inference_extension.then(|| PoolPlan {
        endpoint_picker: format!("{name}{}", config.endpoint_picker.service_suffix),
        endpoint_picker_port: config.endpoint_picker.port,
        failure_mode: config.endpoint_picker.failure_mode,
    });
    let backend = match &pool {
        Some(_) => BackendRef {
            group: POOL_GROUP.to_string(),
            kind: "InferencePool".to_string(),
            name: name.to_string(),
            port: None,
        },
        None => {
            BackendRef { group: String::new(), kind: "Service".to_string(), name: name.to_string(), port: Some(port) }
        }
    };
    Some(GatewayPlan {
        parent_ref: config.parent_ref.clone(),
        hostnames: route.host.iter().cloned().collect(),
        rewrite: route.path != "/",
        path: route.path,
        backend,
        request_timeout: config.request_timeout.clone(),
        priority: pool.as_ref().and(g.priority),
        pool,
    })
}

/// Where clients reach a service: its route, or the Service's address.
pub fn endpoint(spec: &InferenceServiceSpec, name: &str, namespace: &str, port: i32) -> String {
    match spec.gateway.as_ref().and_then(|g| parse_route(&g.route).ok()) {
        Some(route) => route.to_string(),
        None => format!("http://{name}.{namespace}.svc:{port}"),
    }
}
