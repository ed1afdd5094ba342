//! Engine rules: what the vLLM server needs to start and stop on a real
//! GPU cluster, which an overridden template or a platform file can take
//! away again.

use serde_json::Value;

use super::{CommandLine, Context, Finding, Rule, Severity, container_name, containers, pod_templates};
use crate::model::engine::{HF_HUB_OFFLINE, HF_TOKEN, HF_TOKEN_LEGACY, is_gated};
use crate::model::objects::Object;

pub const GATED_MODEL_WITHOUT_TOKEN: Rule = Rule::new(
    "ISVC050",
    Severity::Warning,
    "the server downloads a gated model (Llama, Mistral, Gemma) without a Hugging Face token",
)
.symptom(
    "the pod crash-loops at start-up with `401 Client Error` / `GatedRepoError: Access to model ... is restricted`; \
     the service never becomes ready",
)
.fix(
    "give the platform a token Secret (defaults.huggingFace.tokenSecret: {name, key}, or per tenant), or the service \
     an HF_TOKEN in spec.env taken from a Secret (valueFrom.secretKeyRef); create the Secret in the namespace",
)
.explain(
    "Repositories such as meta-llama/*, mistralai/* and google/gemma-* are gated: the files download only for an \
     account that accepted the licence, with its token. huggingface_hub reads the token from the HF_TOKEN \
     environment variable (huggingface/huggingface_hub docs/source/en/package_reference/environment_variables.md). \
     Without it the download fails and vLLM exits; the kubelet restarts it forever. A server that runs with \
     HF_HUB_OFFLINE (weights already on a volume) needs no token, nor does a model loaded from a path.",
);

/// The engine rules over one object.
pub(crate) fn check(_: &Context<'_>, o: &Object, out: &mut Vec<Finding>) {
    for template in pod_templates(o) {
        for c in containers(template) {
            gated_model(o, c, out);
        }
    }
}

/// The value of environment variable `name` in container `c`: the value,
/// `Some("")` for one taken from elsewhere, `None` when not set.
pub(crate) fn env<'v>(c: &'v Value, name: &str) -> Option<&'v str> {
    let e = c
        .get("env")
        .and_then(Value::as_array)?
        .iter()
        .rev()
        .find(|e| e.get("name").and_then(Value::as_str) == Some(name))?;
    Some(e.get("value").and_then(Value::as_str).unwrap_or_default())
}

fn gated_model(o: &Object, c: &Value, out: &mut Vec<Finding>) {
    let cl = CommandLine::of(c);
    let Some(model) = cl.model() else { return };
    if !is_gated(model) {
        return;
    }
    let offline =
        env(c, HF_HUB_OFFLINE).is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"));
    let token = env(c, HF_TOKEN).is_some() || env(c, HF_TOKEN_LEGACY).is_some() || cl.value(&["--hf-token"]).is_some();
    if !offline && !token {
        out.push(Finding::new(
            GATED_MODEL_WITHOUT_TOKEN,
            o,
            format!(
                "container \"{}\" downloads the gated model {model} with no HF_TOKEN; the download is refused",
                container_name(c)
            ),
        ));
    }
}
