//! Probe rules: a pod loading weights must not be killed, and a loaded
//! server must pass the probes that gate its traffic.

use crate::base::value::At;
use serde_json::Value;

use super::model;
use super::{CommandLine, Context, Finding, Rule, Severity, container_name, containers, pod_templates};
use crate::model::objects::Object;

pub const NO_STARTUP_PROBE: Rule = Rule::new(
    "ISVC008",
    Severity::Error,
    "a liveness probe without a startup probe kills the server while it is still loading the model",
)
.symptom(
    "pods go Running -> restarted -> CrashLoopBackOff; `kubectl describe pod` shows `Liveness probe failed: \
     connection refused` and `Container vllm failed liveness probe, will be restarted`, and the model never \
     finishes loading",
)
.fix(
    "add a startupProbe on the same endpoint with periodSeconds x failureThreshold covering the load time \
     (isvc's templates do: defaults.probes.startupTimeoutSeconds)",
)
.explain(
    "The liveness probe starts as soon as the container does. vLLM answers HTTP only once the weights are \
     loaded and the engine is up, which takes minutes to tens of minutes, so the liveness probe fails \
     failureThreshold times in a row and the kubelet restarts the container, which starts loading again. A \
     startup probe holds the liveness and readiness probes off until it succeeds once, so the load can take \
     as long as the startup probe allows while a hung server is still restarted later.",
);

pub const STARTUP_BUDGET_TOO_SHORT: Rule =
    Rule::new("ISVC009", Severity::Warning, "the startup probe gives up before a model of this size can be loaded")
        .symptom(
            "on a cold node (weights not cached), pods restart after the startup budget with `Startup probe failed`, \
     and go to CrashLoopBackOff; the Deployment's rollout never completes",
        )
        .fix(
            "raise the startup budget (periodSeconds x failureThreshold of the startupProbe; in isvc, \
     defaults.probes.startupTimeoutSeconds in the platform file) to at least the estimate",
        )
        .explain(
            "The startup budget is initialDelaySeconds + periodSeconds x failureThreshold. The estimate is 5 minutes \
     for the fixed work (imports, CUDA initialisation, memory profiling, CUDA graph capture) plus the weights \
     read at 100 MB/s, a conservative rate for a cold download from a model hub or a network volume. The \
     weight size comes from the parameter count in the model id (70B, 0.6B, 8x7B; the largest count in the \
     name) at 2 bytes a parameter, or 1 byte for FP8/INT8 and half a byte for AWQ/GPTQ/INT4 models. A model \
     id without a count gets the fixed 5 minutes only. Image pulls happen before the container starts and do \
     not count. If the weights are always on a local disk, the estimate is pessimistic: disable the rule for \
     that service.",
        );

pub const LIVENESS_STRICTER_THAN_STARTUP: Rule = Rule::new(
    "ISVC010",
    Severity::Warning,
    "the liveness probe is stricter than the startup probe that let the pod start",
)
.symptom(
    "pods pass start-up, then restart shortly after (`Liveness probe failed`), often under load, and end in \
     CrashLoopBackOff although the server was healthy",
)
.fix("probe the same endpoint (path, port, scheme) in both, with a liveness timeoutSeconds no shorter than the startup probe's")
.explain(
    "Once the startup probe succeeds, the liveness probe takes over. If it checks a different endpoint or \
     port than the one the startup probe proved, or gives each request less time, it can fail on a server \
     that is working: the startup probe never showed the stricter check passes. A busy vLLM server answers \
     /health more slowly while it is saturated, so a short liveness timeout restarts pods exactly when they \
     are needed most.",
);

pub const PROBE_NOT_SERVED: Rule =
    Rule::new("ISVC011", Severity::Error, "a probe points at a path or port the server does not serve")
        .symptom(
            "a readiness probe: pods stay Running but 0/1 Ready and the Service has no endpoints (503); a startup or \
     liveness probe: pods restart forever (CrashLoopBackOff) with `probe failed: HTTP probe failed with \
     statuscode: 404` or `connection refused`",
        )
        .fix(
            "point httpGet.path at an endpoint the server answers (vLLM: /health) and httpGet.port at a declared \
     container port (by name, like isvc's `http`) the server listens on",
        )
        .explain(
            "A named probe port must be the name of one of the container's ports; a numeric one must be a port the \
     container declares or the server's --port. For vLLM containers the path must be one the OpenAI-compatible \
     server answers with 200 on GET: /health, /ping, /version, /v1/models, /metrics or /load. Other servers' \
     paths are not checked.",
        );

/// Paths vLLM's OpenAI-compatible server answers on GET.
const VLLM_PATHS: [&str; 6] = ["/health", "/ping", "/version", "/v1/models", "/metrics", "/load"];

const PROBES: [&str; 3] = ["startupProbe", "livenessProbe", "readinessProbe"];

/// The probe rules over one object.
pub(crate) fn check(_: &Context<'_>, o: &Object, out: &mut Vec<Finding>) {
    for template in pod_templates(o) {
        for c in containers(template) {
            check_container(o, c, out);
        }
    }
}

fn check_container(o: &Object, c: &Value, out: &mut Vec<Finding>) {
    let name = container_name(c);
    let cl = CommandLine::of(c);
    for kind in PROBES {
        if let Some(p) = c.field(kind) {
            unserved(o, c, &cl, kind, p, out);
        }
    }
    // The rules about loading time are for model servers, not sidecars.
    if !cl.serves_model() {
        return;
    }
    let (startup, liveness) = (c.field("startupProbe"), c.field("livenessProbe"));
    if let (None, Some(l)) = (startup, liveness) {
        out.push(Finding::new(
            NO_STARTUP_PROBE,
            o,
            format!(
                "container \"{name}\" has a liveness probe that restarts it after {}s without an answer, and no startup probe",
                budget(l)
            ),
        ));
    }
    let Some(s) = startup else { return };
    let size = cl.model_size();
    let need = model::startup_seconds(size.as_ref());
    let have = budget(s);
    if have < need {
        let what = match (&size, cl.model()) {
            (Some(size), Some(m)) => format!("{m} ({})", size.describe()),
            (None, Some(m)) => format!("{m} (size unknown: the fixed part only)"),
            _ => "a model of unknown size".to_string(),
        };
        out.push(Finding::new(
            STARTUP_BUDGET_TOO_SHORT,
            o,
            format!("container \"{name}\" may take {have}s to start; loading {what} needs about {need}s"),
        ));
    }
    if let Some(l) = liveness {
        stricter_liveness(o, name, s, l, out);
    }
}

/// Seconds a probe lets a container go without a success before acting.
fn budget(probe: &Value) -> i64 {
    let field = |k: &str, default: i64| probe.field(k).and_then(Value::as_i64).unwrap_or(default);
    field("initialDelaySeconds", 0) + field("periodSeconds", 10) * field("failureThreshold", 3)
}

/// The probe's handler without its timings: what it checks, with the API
/// server's defaults filled in so equal checks compare equal.
fn handler(probe: &Value) -> Option<(&'static str, Value)> {
    let (kind, h) = raw_handler(probe)?;
    let mut h = h.clone();
    if let (Some(m), "httpGet") = (h.as_object_mut(), kind) {
        m.entry("path").or_insert_with(|| Value::from("/"));
        m.entry("scheme").or_insert_with(|| Value::from("HTTP"));
    }
    Some((kind, h))
}

/// The probe's handler as written.
fn raw_handler(probe: &Value) -> Option<(&'static str, &Value)> {
    ["httpGet", "tcpSocket", "grpc", "exec"].into_iter().find_map(|k| probe.field(k).map(|h| (k, h)))
}

fn stricter_liveness(o: &Object, name: &str, startup: &Value, liveness: &Value, out: &mut Vec<Finding>) {
    let timeout = |p: &Value| p.field("timeoutSeconds").and_then(Value::as_i64).unwrap_or(1);
    // Handlers written alike check alike; others are compared with the
    // defaults filled in.
    let differ = raw_handler(startup) != raw_handler(liveness) && handler(startup) != handler(liveness);
    if differ {
        let show = |p: &Value| handler(p).map_or("nothing".to_string(), |(k, v)| format!("{k} {v}"));
        out.push(Finding::new(
            LIVENESS_STRICTER_THAN_STARTUP,
            o,
            format!(
                "container \"{name}\": the liveness probe checks {} but the startup probe checked {}",
                show(liveness),
                show(startup)
            ),
        ));
    } else if timeout(liveness) < timeout(startup) {
        out.push(Finding::new(
            LIVENESS_STRICTER_THAN_STARTUP,
            o,
            format!(
                "container \"{name}\": the liveness probe allows {}s per request, the startup probe {}s",
                timeout(liveness),
                timeout(startup)
            ),
        ));
    }
}

fn unserved(o: &Object, c: &Value, cl: &CommandLine<'_>, kind: &str, probe: &Value, out: &mut Vec<Finding>) {
    let name = container_name(c);
    let Some(target) = ["httpGet", "tcpSocket", "grpc"].iter().find_map(|k| probe.field(k)) else { return };
    let ports = c.field("ports").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let port = target.field("port");
    let served = match port {
        Some(Value::String(n)) if n.parse::<i64>().is_err() => ports.iter().any(|p| p.field("name") == port),
        Some(v) => {
            let number = v.as_i64().or_else(|| v.as_str().and_then(|s| s.parse().ok()));
            let declared = ports.iter().any(|p| p.field("containerPort").and_then(Value::as_i64) == number);
            declared || number == cl.port() || (ports.is_empty() && cl.port().is_none())
        }
        None => true,
    };
    if !served {
        out.push(Finding::new(
            PROBE_NOT_SERVED,
            o,
            format!("container \"{name}\": {kind} port {} is not a port the container serves", super::show(port)),
        ));
    }
    let Some(path) = target.field("path").and_then(Value::as_str) else { return };
    let bare = path.split('?').next().unwrap_or_default();
    let bare = if bare.len() > 1 { bare.trim_end_matches('/') } else { bare };
    if probe.field("httpGet").is_some() && cl.is_vllm() && !VLLM_PATHS.contains(&bare) {
        out.push(Finding::new(
            PROBE_NOT_SERVED,
            o,
            format!("container \"{name}\": {kind} path {path} is not served by vLLM (use /health)"),
        ));
    }
}
