//! The accelerator profile and the image of a service.
//!
//! - `spec.accelerator` names one of the platform's `accelerators`; left
//!   out, the first. The profile's `resource` is the extended resource the
//!   pods request (requests equal limits, as the API server demands of
//!   extended resources: kubernetes/kubernetes
//!   `pkg/apis/core/validation/validation.go`, "must be equal to ... limit").
//!   With the NVIDIA device plugin's `mixed` MIG strategy each slice type is
//!   its own resource (`nvidia.com/mig-3g.40gb`; NVIDIA/k8s-device-plugin
//!   `README.md`, "MIG support"), and AMD's plugin advertises `amd.com/gpu`
//!   (ROCm/k8s-device-plugin `README.md`). Its node labels and tolerations
//!   join the platform's `defaults`.
//! - Without profiles, today's behaviour: `nvidia.com/gpu` on the nodes of
//!   `defaults.nodeSelector`.
//! - `spec.image` replaces `defaults.image`, from the platform's
//!   `images.allowedRepositories` only.

use std::collections::BTreeMap;

use crate::base::diagnostics::did_you_mean;
use crate::model::platform::{DEFAULT_GPU_RESOURCE, Platform, Toleration, image_repository};
use crate::model::v1alpha2::InferenceServiceSpec;

/// The GPUs a service's pods run on.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    /// The profile's name; `None` without profiles.
    pub name: Option<String>,
    /// The extended resource one GPU is requested as.
    pub resource: String,
    pub node_selector: BTreeMap<String, String>,
    pub tolerations: Vec<Toleration>,
    /// Memory of one GPU, GiB, when the profile says.
    pub memory_gib: Option<u32>,
}

/// A field path, a message and a suggestion.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    pub path: Vec<&'static str>,
    pub message: String,
    pub help: String,
}

/// The profile of `spec`: the one it names, else the platform's first,
/// else `nvidia.com/gpu` with the platform's defaults. An unknown name is
/// refused with the names the platform declares.
pub fn profile(spec: &InferenceServiceSpec, platform: &Platform) -> Result<Profile, Refusal> {
    let d = &platform.defaults;
    let chosen = platform.accelerator(spec.accelerator.as_deref()).map_err(|names| {
        let wanted = spec.accelerator.as_deref().unwrap_or_default();
        let (message, help) = if names.is_empty() {
            (
                format!("unknown accelerator \"{wanted}\": the platform declares no accelerators"),
                "leave spec.accelerator out, or declare the profile under `accelerators` in the platform file"
                    .to_string(),
            )
        } else {
            let help = match did_you_mean(wanted, names.iter().copied()) {
                Some(near) => format!("did you mean \"{near}\"? The platform declares {}", names.join(", ")),
                None => format!("use one the platform declares: {}", names.join(", ")),
            };
            (format!("unknown accelerator \"{wanted}\""), help)
        };
        Refusal { path: vec!["spec", "accelerator"], message, help }
    })?;
    let Some(a) = chosen else {
        return Ok(Profile {
            name: None,
            resource: DEFAULT_GPU_RESOURCE.to_string(),
            node_selector: d.node_selector.clone(),
            tolerations: d.tolerations.clone(),
            memory_gib: None,
        });
    };
    let mut node_selector = d.node_selector.clone();
    node_selector.extend(a.node_selector.iter().map(|(k, v)| (k.clone(), v.clone())));
    let mut tolerations = d.tolerations.clone();
    tolerations.extend(a.tolerations.iter().filter(|t| !d.tolerations.contains(t)).cloned());
    Ok(Profile {
        name: Some(a.name.clone()),
        resource: a.resource.clone(),
        node_selector,
        tolerations,
        memory_gib: a.memory_gi_b,
    })
}

/// The server image of `spec`: its own, if the platform allows its
/// repository, else the platform's.
pub fn image(spec: &InferenceServiceSpec, platform: &Platform) -> Result<String, Refusal> {
    let Some(image) = &spec.image else { return Ok(platform.defaults.image.clone()) };
    if let Some(images) = platform.images.as_ref().filter(|i| !i.allows(image)) {
        return Err(Refusal {
            path: vec!["spec", "image"],
            message: format!(
                "image \"{image}\" is not from an allowed repository (its repository is {})",
                image_repository(image)
            ),
            help: format!(
                "use an image of {} (the platform's images.allowedRepositories), or leave spec.image out",
                images.allowed_repositories.join(", ")
            ),
        });
    }
    Ok(image.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::platform::{Accelerator, Images};

    fn platform() -> Platform {
        let mut p = Platform::default();
        p.defaults.node_selector = BTreeMap::from([("pool".to_string(), "inference".to_string())]);
        p.accelerators = vec![
            Accelerator {
                name: "h100".into(),
                resource: "nvidia.com/gpu".into(),
                node_selector: BTreeMap::from([("nvidia.com/gpu.product".into(), "NVIDIA-H100-80GB-HBM3".into())]),
                tolerations: vec![],
                memory_gi_b: Some(80),
                kueue_flavor: None,
            },
            Accelerator {
                name: "mig-3g".into(),
                resource: "nvidia.com/mig-3g.40gb".into(),
                node_selector: BTreeMap::new(),
                tolerations: vec![],
                memory_gi_b: Some(40),
                kueue_flavor: None,
            },
        ];
        p
    }

    #[test]
    fn the_named_profile_else_the_first_else_nvidia_gpu() {
        let mut spec = crate::model::conversion::sample_spec();
        assert_eq!(profile(&spec, &Platform::default()).unwrap().resource, "nvidia.com/gpu");
        let p = profile(&spec, &platform()).unwrap();
        assert_eq!((p.name.as_deref(), p.memory_gib), (Some("h100"), Some(80)));
        assert_eq!(p.node_selector.len(), 2, "the profile's labels join the defaults'");
        spec.accelerator = Some("mig-3g".into());
        assert_eq!(profile(&spec, &platform()).unwrap().resource, "nvidia.com/mig-3g.40gb");
        spec.accelerator = Some("h10".into());
        let refusal = profile(&spec, &platform()).unwrap_err();
        assert_eq!(refusal.path, ["spec", "accelerator"]);
        assert_eq!(refusal.message, "unknown accelerator \"h10\"");
        assert_eq!(refusal.help, "did you mean \"h100\"? The platform declares h100, mig-3g");
        assert!(profile(&spec, &Platform::default()).unwrap_err().message.contains("declares no accelerators"));
    }

    #[test]
    fn images_come_from_allowed_repositories() {
        let mut spec = crate::model::conversion::sample_spec();
        let mut p = Platform::default();
        assert_eq!(image(&spec, &p).unwrap(), p.defaults.image);
        spec.image = Some("registry.example.com/ml/vllm:v0.11.0".into());
        assert_eq!(image(&spec, &p).unwrap(), "registry.example.com/ml/vllm:v0.11.0");
        p.images = Some(Images { allowed_repositories: vec!["vllm/vllm-openai".into()] });
        assert_eq!(
            image(&spec, &p).unwrap_err().message,
            "image \"registry.example.com/ml/vllm:v0.11.0\" is not from an allowed repository (its repository is registry.example.com/ml/vllm)"
        );
        p.images = Some(Images { allowed_repositories: vec!["registry.example.com/ml/".into()] });
        assert!(image(&spec, &p).is_ok());
        spec.image = Some("registry.example.com/mlx/vllm:v1".into());
        assert!(image(&spec, &p).is_err());
    }
}
