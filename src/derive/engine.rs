//! The engine inputs of a service: the server arguments and environment
//! variables it adds to the ones isvc derives, and the Hugging Face token.
//!
//! - `spec.servedModelName` becomes `--served-model-name`; left out, no flag,
//!   so vLLM serves the model under its `--model` (`baseModel`), as before.
//! - `spec.revision` becomes `--revision`, so the weights are pinned in the
//!   rendered output like the image. With `HF_HUB_OFFLINE`, vLLM resolves
//!   the cached snapshot with this revision (vllm-project/vllm
//!   `vllm/transformers_utils/repo_utils.py`, `get_model_path`), so it must
//!   be the one the cache was filled with.
//! - `spec.args` follow every derived argument; input validation refuses
//!   the ones isvc owns ([`crate::model::engine::OWNED_ARGS`]).
//! - The environment is isvc's own (the writable directories), then
//!   `HF_TOKEN_PATH` naming the platform's (or the tenant's) token Secret,
//!   mounted read-only as a file, then `spec.env`. A service's own
//!   `HF_TOKEN` replaces the platform's. A file keeps the token out of the
//!   process environment (crash dumps, `/proc/<pid>/environ`), as checkov's
//!   CKV_K8S_35 asks.

use k8s_openapi::api::core::v1::EnvVar;

use crate::model::engine::{HF_TOKEN, HF_TOKEN_PATH, TOKEN_DIR, TOKEN_FILE, TOKEN_VOLUME};
use crate::model::platform::{Platform, SecretKeyRef};
use crate::model::v1alpha2::InferenceServiceSpec;

/// The value `args` give the option `names` (`--name value` or
/// `--name=value`), the last one as vLLM's parser keeps it.
pub fn arg_value<'a>(args: &'a [String], names: &[&str]) -> Option<&'a str> {
    let mut found = None;
    for (i, a) in args.iter().enumerate() {
        for n in names {
            if a == n {
                found = args.get(i + 1).map(String::as_str).or(found);
            } else if let Some(v) = a.strip_prefix(n).and_then(|r| r.strip_prefix('=')) {
                found = Some(v);
            }
        }
    }
    found
}

/// Server arguments from the spec's served name and revision.
pub fn identity_args(spec: &InferenceServiceSpec) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(n) = &spec.served_model_name {
        out.extend(["--served-model-name".to_string(), n.clone()]);
    }
    if let Some(r) = &spec.revision {
        out.extend(["--revision".to_string(), r.clone()]);
    }
    out
}

/// The environment of the server and workers: `base` (isvc's own), the
/// Hugging Face token unless the service gives its own, then `spec.env`.
pub fn env(spec: &InferenceServiceSpec, platform: &Platform, namespace: &str, base: &[EnvVar]) -> Vec<EnvVar> {
    let mut out = base.to_vec();
    if token_secret(spec, platform, namespace).is_some() {
        out.push(EnvVar {
            name: HF_TOKEN_PATH.to_string(),
            value: Some(format!("{TOKEN_DIR}/{TOKEN_FILE}")),
            value_from: None,
        });
    }
    out.extend(spec.env.iter().cloned());
    out
}

/// The token Secret the servers mount: the tenant's or the platform's,
/// unless the service gives its own `HF_TOKEN`.
fn token_secret<'p>(spec: &InferenceServiceSpec, platform: &'p Platform, namespace: &str) -> Option<&'p SecretKeyRef> {
    let secret = match platform.tenant_of(namespace) {
        Some(t) => t.hf_token(platform),
        None => platform.defaults.hugging_face.token_secret.as_ref(),
    };
    secret.filter(|_| !spec.env.iter().any(|e| e.name == HF_TOKEN))
}

/// The read-only volume and mount of the token Secret, for the server and
/// every multi-node worker: only the Secret's key, as the file `token`,
/// readable by the pod's group (the pod's `fsGroup` owns it).
pub fn token_volume(
    spec: &InferenceServiceSpec,
    platform: &Platform,
    namespace: &str,
) -> Option<(serde_json::Value, serde_json::Value)> {
    let s = token_secret(spec, platform, namespace)?;
    let volume = serde_json::json!({
        "name": TOKEN_VOLUME,
        "secret": {"secretName": s.name, "items": [{"key": s.key, "path": TOKEN_FILE}], "defaultMode": 0o440},
    });
    let mount = serde_json::json!({"name": TOKEN_VOLUME, "mountPath": TOKEN_DIR, "readOnly": true});
    Some((volume, mount))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{EnvVarSource, SecretKeySelector};

    use crate::model::platform::{HuggingFace, SecretKeyRef, Tenant};

    fn spec() -> InferenceServiceSpec {
        crate::model::conversion::sample_spec()
    }

    fn token(name: &str) -> HuggingFace {
        HuggingFace { token_secret: Some(SecretKeyRef { name: name.into(), key: "token".into() }) }
    }

    /// The Secret a service mounts, and whether its environment points at
    /// the file.
    fn secret_of(spec: &InferenceServiceSpec, platform: &Platform, ns: &str) -> Option<String> {
        let e = env(spec, platform, ns, &[]);
        let (volume, mount) = token_volume(spec, platform, ns)?;
        assert_eq!(mount, serde_json::json!({"name": "hf-token", "mountPath": "/etc/isvc/hf-token", "readOnly": true}));
        assert!(e.iter().any(|e| e.name == HF_TOKEN_PATH && e.value.as_deref() == Some("/etc/isvc/hf-token/token")));
        assert!(e.iter().all(|e| e.name != HF_TOKEN), "no token in the environment");
        volume["secret"]["secretName"].as_str().map(str::to_string)
    }

    #[test]
    fn the_token_comes_from_the_tenant_then_the_platform_unless_the_service_gives_one() {
        let mut platform = Platform::default();
        assert_eq!(secret_of(&spec(), &platform, "default"), None);
        platform.defaults.hugging_face = token("hf-platform");
        assert_eq!(secret_of(&spec(), &platform, "default").as_deref(), Some("hf-platform"));
        let mut tenant: Tenant = serde_json::from_value(serde_json::json!({"name": "team-a"})).unwrap();
        tenant.hugging_face = Some(token("hf-team-a"));
        platform.tenants.push(tenant);
        assert_eq!(secret_of(&spec(), &platform, "team-a").as_deref(), Some("hf-team-a"));
        let mut own = spec();
        own.env = vec![EnvVar {
            name: HF_TOKEN.into(),
            value_from: Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector { name: "mine".into(), key: "t".into(), optional: None }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        }];
        // The service's own HF_TOKEN wins: no mount, no HF_TOKEN_PATH.
        let e = env(&own, &platform, "team-a", &[]);
        assert_eq!(e, own.env);
        assert!(token_volume(&own, &platform, "team-a").is_none());
    }

    #[test]
    fn argument_values_in_both_spellings() {
        let args: Vec<String> = ["--quantization", "fp8", "--dtype=float32", "-q=awq"].map(String::from).into();
        assert_eq!(arg_value(&args, &["--quantization", "-q"]), Some("awq"));
        assert_eq!(arg_value(&args, &["--dtype"]), Some("float32"));
        assert_eq!(arg_value(&args, &["--max-model-len"]), None);
    }

    #[test]
    fn served_name_and_revision_become_flags() {
        let mut s = spec();
        assert!(identity_args(&s).is_empty());
        s.served_model_name = Some("llama".into());
        s.revision = Some("0e9e39f249a16976918f6564b8830bc894c89659".into());
        assert_eq!(
            identity_args(&s),
            ["--served-model-name", "llama", "--revision", "0e9e39f249a16976918f6564b8830bc894c89659"]
        );
    }
}
