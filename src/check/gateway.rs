//! Gateway rules: every InferencePool's endpoint picker must exist, answer
//! on the port the pool names, be reachable from the Gateway through the
//! namespace's NetworkPolicies, and have pods the namespace admits.
//!
//! The Gateway calls the picker of a pool (ext-proc, gRPC) for every
//! request, then sends the request to the pod the picker chose
//! (kubernetes-sigs/gateway-api-inference-extension `api/v1/inferencepool_types.go`,
//! `EndpointPickerRef`; the reference is a Service in the pool's own
//! namespace). Without a picker, a pool that fails closed rejects every
//! request, and one that fails open loses the picker's scheduling.

use crate::base::value::At;
use serde_json::{Map, Value};

use super::{Context, Finding, Rule, Severity, View, containers_in, labels, namespace, selector_matches};
use crate::model::objects::Object;

pub const PICKER_ABSENT: Rule = Rule::new(
    "ISVC060",
    Severity::Error,
    "an InferencePool whose endpoint picker is not there: no Service, no port, or no pods behind it",
)
.symptom(
    "every request through the route fails (failureMode FailClose: the Gateway answers 500 or 503 and logs an \
     ext-proc error) or is spread without regard to queues, KV cache and adapters (FailOpen)",
)
.fix(
    "render the pool with isvc's picker (gateway.inferenceExtension in the platform file renders one per pool), \
     or point endpointPickerRef at a Service that selects running picker pods on that port",
)
.explain(
    "InferencePool v1's endpointPickerRef names a Service in the pool's namespace and its port. The Gateway \
     opens a gRPC ext-proc stream to it for every request. If the Service does not exist, has no such port, \
     selects no pods or targets a port no picker container declares, the call fails, and the pool's \
     failureMode decides whether the request is dropped (FailClose, the API's default) or routed to a pod \
     of the Gateway's own choosing (FailOpen).",
);

pub const PICKER_UNREACHABLE: Rule = Rule::new(
    "ISVC061",
    Severity::Error,
    "a NetworkPolicy keeps the Gateway from an InferencePool's endpoint picker or its serving pods",
)
.symptom(
    "requests through the route time out or fail with 503 although the picker and the servers are Ready; the \
     Gateway's logs show ext-proc connection timeouts to the picker or upstream connect timeouts to the pods",
)
.fix(
    "admit the Gateway's namespace to the picker's ext-proc port and to the serving port (isvc's tenant \
     NetworkPolicy does so for the platform's gateway.parentRef.namespace)",
)
.explain(
    "Once a NetworkPolicy with Ingress selects a pod, only what one of its ingress rules allows reaches the \
     pod. The Gateway's data plane runs in the Gateway's namespace and connects to the picker's Service \
     port's target (ext-proc) and then directly to the chosen pod's target port. A policy that admits the \
     Gateway only on the serving port drops the ext-proc call, so the pool fails open or closed on every \
     request.",
);

pub const PICKER_REFUSED: Rule = Rule::new(
    "ISVC062",
    Severity::Error,
    "an InferencePool's endpoint picker pods are refused by the namespace's LimitRange or ResourceQuota",
)
.symptom(
    "the picker Deployment has no pods (`kubectl describe replicaset` shows `forbidden: exceeded quota` or \
     `maximum cpu usage per Container`), so the pool has no picker, although the servers run",
)
.fix(
    "give the picker requests and limits the namespace admits (gateway.endpointPicker.resources in the \
     platform file), or widen the tenant's limits",
)
.explain(
    "The picker's pods are admitted like any other: LimitRanger fills in and bounds their containers' \
     requests and limits, and a ResourceQuota that constrains a resource refuses a pod whose containers do \
     not state it. A refused picker leaves its pool without scheduling, so the symptom is on the route, \
     not on the picker.",
);

/// The gateway rules over one object.
pub(crate) fn check(cx: &Context<'_>, o: &Object, out: &mut Vec<Finding>) {
    if o.id.kind == "InferencePool" {
        pool(cx, o, out);
    }
}

/// The picker's pod templates and the container port the ref reaches, or
/// why there are none.
fn picker_pods<'a>(cx: &Context<'a>, o: &Object) -> Result<(Vec<View<'a>>, &'a Object, Port), String> {
    let ns = namespace(o);
    let Some(r) = o.value.at("/spec/endpointPickerRef") else {
        return Err("has no endpointPickerRef".to_string());
    };
    let kind = r.field("kind").and_then(Value::as_str).unwrap_or("Service");
    let name = r.field("name").and_then(Value::as_str).unwrap_or_default();
    if kind != "Service" {
        return Err(format!("names a {kind}, not a Service"));
    }
    let port = r.at("/port/number").and_then(Value::as_i64);
    let Some(svc) = cx.object("Service", ns, name) else {
        return Err(format!("names Service {ns}/{name}, which is not rendered"));
    };
    let ports = svc.view().at("/spec/ports").into_iter().flat_map(View::items);
    let Some(sp) = ports.into_iter().find(|p| p.field("port").and_then(View::as_i64) == port) else {
        return Err(format!("names port {} of Service {ns}/{name}, which has no such port", port.unwrap_or_default()));
    };
    let selector = svc.view().at("/spec/selector").and_then(View::as_object);
    let pods = selector.filter(|s| !s.is_empty()).map(|s| cx.selected(ns, s)).unwrap_or_default();
    if pods.is_empty() {
        return Err(format!("names Service {ns}/{name}, which selects no pods"));
    }
    let target = sp.field("targetPort").or_else(|| sp.field("port")).map_or(Value::Null, View::to_json);
    let resolved = pods.iter().find_map(|t| container_port(*t, &target));
    let Some(port) = resolved else {
        return Err(format!(
            "names Service {ns}/{name}, whose port {} targets {}, which no picker container declares",
            port.unwrap_or_default(),
            super::show(Some(&target))
        ));
    };
    Ok((pods, svc, port))
}

/// A container port: its number and name.
#[derive(Clone, Debug)]
struct Port {
    number: i64,
    name: Option<String>,
}

fn container_port(template: View<'_>, target: &Value) -> Option<Port> {
    containers_in(template).flat_map(|c| c.field("ports").into_iter().flat_map(View::items)).find_map(|p| {
        let number = p.field("containerPort").and_then(View::as_i64)?;
        let name = p.field("name").and_then(View::as_str).map(str::to_string);
        let hit = match target {
            Value::String(s) => name.as_deref() == Some(s.as_str()),
            Value::Number(n) => n.as_i64() == Some(number),
            _ => false,
        };
        hit.then_some(Port { number, name })
    })
}

fn pool(cx: &Context<'_>, o: &Object, out: &mut Vec<Finding>) {
    let ns = namespace(o);
    let (pods, svc, port) = match picker_pods(cx, o) {
        Ok(found) => found,
        Err(why) => {
            let mode = o.value.at("/spec/endpointPickerRef/failureMode").and_then(Value::as_str);
            let effect = match mode {
                Some("FailOpen") => "the Gateway routes without it (FailOpen)",
                _ => "every request to the pool fails (FailClose)",
            };
            out.push(Finding::new(PICKER_ABSENT, o, format!("its endpointPickerRef {why}: {effect}")));
            return;
        }
    };
    // Reachability from every Gateway a route to this pool attaches to.
    let pool_pods: Vec<View<'_>> = o
        .value
        .at("/spec/selector/matchLabels")
        .and_then(Value::as_object)
        .map(|s| cx.selected(ns, s))
        .unwrap_or_default();
    let target_ports: Vec<i64> = o
        .value
        .at("/spec/targetPorts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.field("number").and_then(Value::as_i64))
        .collect();
    for gateway_ns in gateway_namespaces(cx, o) {
        if pods.iter().any(|t| !admitted(cx, ns, *t, &gateway_ns, &port)) {
            out.push(Finding::new(
                PICKER_UNREACHABLE,
                o,
                format!(
                    "no NetworkPolicy of namespace {ns} admits the Gateway's namespace {gateway_ns} to port {} of its \
                     endpoint picker {}: the ext-proc call of every request is dropped",
                    port.number, svc.id
                ),
            ));
        }
        for number in &target_ports {
            let serving = Port { number: *number, name: None };
            if pool_pods.iter().any(|t| !admitted(cx, ns, *t, &gateway_ns, &serving)) {
                out.push(Finding::new(
                    PICKER_UNREACHABLE,
                    o,
                    format!(
                        "no NetworkPolicy of namespace {ns} admits the Gateway's namespace {gateway_ns} to port \
                         {number} of the pool's pods: requests the picker sends there are dropped"
                    ),
                ));
            }
        }
    }
    // Admission of the picker's pods.
    if let Some(w) = cx.workload_of_templates(ns, &pods) {
        let mut problems = super::tenancy::limit_range_problems(cx, w);
        problems.extend(super::tenancy::quota_field_problems(cx, w));
        for p in problems {
            out.push(Finding::new(PICKER_REFUSED, o, format!("its endpoint picker {}: {p}", w.object.id)));
        }
    }
}

/// The namespaces of the Gateways the HTTPRoutes to `pool` attach to.
fn gateway_namespaces(cx: &Context<'_>, pool: &Object) -> Vec<String> {
    let ns = namespace(pool);
    let mut out: Vec<String> = Vec::new();
    for route in cx.routes_to_pool(ns, &pool.id.name) {
        let parents = route.view().at("/spec/parentRefs").into_iter().flat_map(View::items);
        for p in parents {
            let gns = p.field("namespace").and_then(View::as_str).unwrap_or(ns).to_string();
            if !out.contains(&gns) {
                out.push(gns);
            }
        }
    }
    out
}

/// Whether the NetworkPolicies of `ns` let a connection from namespace
/// `from` reach `port` of the pods of `template` (kubernetes/api
/// `networking/v1/types.go`: a pod no Ingress policy selects takes
/// everything; otherwise what one rule of a selecting policy allows).
fn admitted(cx: &Context<'_>, ns: &str, template: View<'_>, from: &str, port: &Port) -> bool {
    let pod_labels = labels(template, "/metadata/labels");
    let selecting: Vec<&Object> = cx
        .objects_of_kind(ns, "NetworkPolicy")
        .iter()
        .filter(|p| {
            let selects = p.view().at("/spec/podSelector").is_none_or(|s| selector_matches(s, pod_labels));
            let types = p.view().at("/spec/policyTypes").and_then(View::as_array);
            let ingress = types.is_none_or(|t| t.iter().any(|v| v.as_str() == Some("Ingress")));
            selects && ingress
        })
        .copied()
        .collect();
    if selecting.is_empty() {
        return true;
    }
    let ns_labels = namespace_labels(cx, from);
    selecting.iter().any(|p| {
        let rules = p.view().at("/spec/ingress").into_iter().flat_map(View::items);
        rules.into_iter().any(|r| {
            let peers = r.field("from").and_then(View::as_array);
            let peer_ok = peers.is_none_or(|peers| {
                peers.is_empty()
                    || peers.iter().any(|peer| match peer.field("namespaceSelector") {
                        Some(sel) => selector_matches(sel, Some(&ns_labels)),
                        // A podSelector alone selects pods of the policy's namespace.
                        None => peer.field("podSelector").is_some() && from == ns,
                    })
            });
            let ports = r.field("ports").and_then(View::as_array);
            let port_ok = ports.is_none_or(|ports| {
                ports.is_empty()
                    || ports.iter().any(|p| match p.field("port") {
                        None => true,
                        Some(v) if v.as_number().is_some() => {
                            let lo = v.as_i64().unwrap_or_default();
                            let hi = p.field("endPort").and_then(View::as_i64).unwrap_or(lo);
                            (lo..=hi).contains(&port.number)
                        }
                        Some(v) => v.as_str().is_some_and(|s| port.name.as_deref() == Some(s)),
                    })
            });
            peer_ok && port_ok
        })
    })
}

/// The labels of namespace `ns`: those of its rendered Namespace, and the
/// `kubernetes.io/metadata.name` label the API server gives every namespace.
fn namespace_labels(cx: &Context<'_>, ns: &str) -> Map<String, Value> {
    let mut out: Map<String, Value> = cx
        .object("Namespace", "", ns)
        .and_then(|n| labels(n.view(), "/metadata/labels"))
        .map(|l| l.iter().map(|(k, v)| (k.to_string(), v.to_json())).collect())
        .unwrap_or_default();
    out.insert("kubernetes.io/metadata.name".to_string(), Value::String(ns.to_string()));
    out
}
