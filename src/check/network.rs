//! Network rules: a Service must select pods, reach a port they serve, and
//! the server must listen where the Service sends traffic.

use crate::base::value::At;
use serde_json::Value;

use super::{
    CommandLine, Context, Finding, Rule, Severity, View, container_name, containers, containers_in, namespace,
    pod_templates,
};
use crate::model::objects::Object;

pub const SELECTOR_MATCHES_NO_POD: Rule = Rule::new(
    "ISVC001",
    Severity::Error,
    "a Service whose selector matches no pod template has no endpoints and answers 503",
)
.symptom(
    "the Service has no endpoints (`kubectl get endpointslices` is empty); clients get connection refused or, \
     through an ingress or gateway, 503 Service Unavailable, although the pods are Running and Ready",
)
.fix("make every key=value of the Service's spec.selector a label of the pod template (metadata.labels under spec.template)")
.explain(
    "A Service sends traffic to the pods whose labels include every key=value pair of its selector. If no \
     pod template in the namespace carries all of them (a renamed label, a selector widened in a template \
     override, a typo), the endpoints controller finds no pods and the Service has nowhere to send requests. \
     isvc's own templates select on app.kubernetes.io/name, which every pod carries.",
);

pub const TARGET_PORT_NOT_SERVED: Rule = Rule::new(
    "ISVC002",
    Severity::Error,
    "a Service targetPort that no container port serves sends traffic nowhere",
)
.symptom(
    "the Service has endpoints but requests fail with connection refused or time out; through an ingress: 502 or 503",
)
.fix("set the Service port's targetPort to the name (or number) of a containerPort of the selected pods")
.explain(
    "A named targetPort is looked up among the ports of the selected pods' containers; a pod without a port \
     of that name is left out of the endpoints. A numeric targetPort is used as is, so the request reaches a \
     port nothing listens on. Either way the server is never reached.",
);

pub const LISTENS_ON_LOOPBACK: Rule =
    Rule::new("ISVC003", Severity::Error, "a server bound to 127.0.0.1 or localhost is unreachable from the Service")
        .symptom(
            "the pod runs and answers `curl localhost:8000` from inside, but every request through the Service is \
     refused; HTTP probes from the kubelet fail too, so the pod never becomes Ready",
        )
        .fix("start the server with --host 0.0.0.0 (or leave --host out: vLLM listens on every address by default)")
        .explain(
            "Traffic from a Service, and the kubelet's HTTP probes, arrive on the pod's IP address. A server bound \
     to the loopback address (127.0.0.1, ::1, localhost) only accepts connections from inside the pod.",
        );

pub const WORKLOAD_SELECTOR_MISMATCH: Rule = Rule::new(
    "ISVC006",
    Severity::Error,
    "a Deployment's selector must match the labels of its own pod template",
)
.symptom(
    "the API server rejects the Deployment (`selector` does not match template `labels`), so the GitOps sync \
     fails and nothing is created or updated",
)
.fix("make spec.selector a subset of spec.template.metadata.labels (isvc's templates use the service's selector for both)")
.explain(
    "A Deployment, StatefulSet or ReplicaSet owns the pods its selector matches, and the API server refuses \
     one whose own pod template would not be matched: the controller would create pods it cannot see and \
     create more without end. Template overrides that change pod labels must keep the selector's labels.",
);

pub const SERVER_PORT_NOT_DECLARED: Rule = Rule::new(
    "ISVC007",
    Severity::Error,
    "the server listens on a port that is not the container port the Service and probes use",
)
.symptom(
    "the pod never becomes Ready (probes on the declared port are refused) and the Service answers connection \
     refused or 503: the server runs, on another port",
)
.fix("make --port and the containerPort the same number (isvc derives both from the platform's defaults.port)")
.explain(
    "The Service's named targetPort and the probes' named port resolve to the containerPort declared in the \
     pod template; the declaration does not make the server listen there. vLLM listens on --port (8000 when \
     the flag is left out). If that is not one of the declared container ports, traffic and probes go to a \
     port nothing listens on.",
);

/// The network rules over one object.
pub(crate) fn check(cx: &Context<'_>, o: &Object, out: &mut Vec<Finding>) {
    match o.id.kind.as_str() {
        "Service" => check_service(cx, o, out),
        "Deployment" | "StatefulSet" | "ReplicaSet" => check_selector(o, out),
        _ => {}
    }
    for template in pod_templates(o) {
        for c in containers(template) {
            check_listen_address(o, c, out);
        }
    }
}

fn check_service(cx: &Context<'_>, o: &Object, out: &mut Vec<Finding>) {
    let Some(selector) = o.value.at("/spec/selector").and_then(Value::as_object) else { return };
    if selector.is_empty() {
        return;
    }
    let matched = cx.selected(namespace(o), selector);
    if matched.is_empty() {
        let sel: Vec<String> =
            selector.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect();
        out.push(Finding::new(
            SELECTOR_MATCHES_NO_POD,
            o,
            format!("selector {} matches no pod template in the namespace", sel.join(",")),
        ));
        return;
    }
    for (i, port) in o.value.at("/spec/ports").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let Some(target) = port.field("targetPort").or_else(|| port.field("port")) else { continue };
        let served = matched.iter().any(|t| {
            containers_in(t).any(|c| {
                c.field("ports").into_iter().flat_map(View::items).any(|p| match target {
                    Value::String(name) => p.field("name").and_then(View::as_str) == Some(name),
                    number => p.field("containerPort").is_some_and(|n| n == *number),
                })
            })
        });
        if !served {
            out.push(Finding::new(
                TARGET_PORT_NOT_SERVED,
                o,
                format!("spec.ports[{i}].targetPort {target} is not a port of any selected container"),
            ));
        }
    }
}

fn check_selector(o: &Object, out: &mut Vec<Finding>) {
    let Some(template) = o.value.at("/spec/template") else { return };
    let labels = template.at("/metadata/labels").and_then(Value::as_object);
    match o.value.at("/spec/selector") {
        None => out.push(Finding::new(WORKLOAD_SELECTOR_MISMATCH, o, "spec.selector is missing")),
        Some(selector) if !super::selector_matches(selector, labels) => out.push(Finding::new(
            WORKLOAD_SELECTOR_MISMATCH,
            o,
            format!("spec.selector {selector} does not match the pod template's labels"),
        )),
        Some(_) => {}
    }
}

fn check_listen_address(o: &Object, c: &Value, out: &mut Vec<Finding>) {
    let name = container_name(c);
    let cl = CommandLine::of(c);
    for h in cl.values(&["--host"]).filter(|h| matches!(*h, "127.0.0.1" | "localhost" | "::1" | "[::1]")) {
        out.push(Finding::new(
            LISTENS_ON_LOOPBACK,
            o,
            format!("container \"{name}\" listens on {h}; use --host 0.0.0.0"),
        ));
    }
    let Some(port) = cl.port() else { return };
    let declared: Vec<i64> = c
        .field("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.field("containerPort").and_then(Value::as_i64))
        .collect();
    if !declared.is_empty() && !declared.contains(&port) {
        let list: Vec<String> = declared.iter().map(i64::to_string).collect();
        out.push(Finding::new(
            SERVER_PORT_NOT_DECLARED,
            o,
            format!("container \"{name}\" listens on port {port} but declares containerPort {}", list.join(", ")),
        ));
    }
}
