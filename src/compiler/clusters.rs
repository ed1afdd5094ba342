//! Multi-cluster rendering: each cluster the platform lists gets its own
//! tree, rendered from the same services with that cluster's overrides
//! (replica factor, node selector, registry mirror, which services run
//! there). The overrides are applied to the typed inputs before the
//! derivation, so every cluster's output passes the same checks.

use crate::load::LoadedService;
use crate::model::platform::{Cluster, Platform};

/// One cluster's inputs: the services that run there and its platform.
pub struct ClusterInputs<'a> {
    pub cluster: &'a Cluster,
    pub services: Vec<LoadedService>,
    pub platform: Platform,
}

/// The inputs of every cluster, in the order the platform lists them.
pub fn inputs<'a>(services: &[LoadedService], platform: &'a Platform) -> Vec<ClusterInputs<'a>> {
    platform
        .clusters
        .iter()
        .map(|c| ClusterInputs { cluster: c, services: services_for(c, services), platform: platform_for(c, platform) })
        .collect()
}

/// Whether `cluster` runs `service` (`name` or `namespace/name`).
pub fn runs(cluster: &Cluster, service: &LoadedService) -> bool {
    let s = &service.service;
    cluster.services.is_empty()
        || cluster.services.iter().any(|sel| match sel.split_once('/') {
            Some((ns, name)) => ns == s.namespace_or_default() && name == s.name(),
            None => sel == s.name(),
        })
}

fn services_for(cluster: &Cluster, services: &[LoadedService]) -> Vec<LoadedService> {
    services
        .iter()
        .filter(|s| runs(cluster, s))
        .map(|s| {
            let mut s = s.clone();
            let spec = &mut s.service.spec;
            if let (Some(image), Some(registry)) = (&mut spec.image, &cluster.image_registry) {
                *image = mirror(image, registry);
            }
            spec.replicas = spec.replicas.map(|r| scale(r, cluster.replica_factor));
            if let Some(a) = &mut spec.autoscaling {
                a.min = scale(a.min, cluster.replica_factor);
                a.max = ((f64::from(a.max) * cluster.replica_factor).ceil() as i32).clamp(a.min, i32::MAX);
            }
            s
        })
        .collect()
}

/// `replicas` x `factor`, rounded up; 0 stays 0 and a running service keeps
/// at least one replica.
pub fn scale(replicas: i32, factor: f64) -> i32 {
    if replicas == 0 {
        return 0;
    }
    ((f64::from(replicas) * factor).ceil() as i32).clamp(1, crate::model::v1alpha1::MAX_REPLICAS)
}

fn platform_for(cluster: &Cluster, platform: &Platform) -> Platform {
    let mut p = platform.clone();
    p.defaults.node_selector.extend(cluster.node_selector.clone());
    if let Some(registry) = &cluster.image_registry {
        p.defaults.image = mirror(&p.defaults.image, registry);
        // Services' own images, the model cache's images and the allowed
        // repositories move to the mirror alike.
        for r in p.images.iter_mut().flat_map(|i| i.allowed_repositories.iter_mut()) {
            *r = mirror(r, registry);
        }
        let caches = p.model_cache.iter_mut().chain(p.tenants.iter_mut().filter_map(|t| t.model_cache.as_mut()));
        for c in caches {
            if let Some(i) = &mut c.downloader_image {
                *i = mirror(i, registry);
            }
            if let Some(i) = &mut c.image {
                i.reference = mirror(&i.reference, registry);
            }
        }
    }
    p
}

/// The image pulled from `registry` instead of its own registry:
/// `vllm/vllm-openai:v0.11.0` becomes `mirror.example.com/vllm/vllm-openai:v0.11.0`,
/// `ghcr.io/org/img:1` becomes `mirror.example.com/org/img:1`.
pub fn mirror(image: &str, registry: &str) -> String {
    let registry = registry.trim_end_matches('/');
    let path = match image.split_once('/') {
        // The first component is a registry if it has a '.' or ':' or is localhost.
        Some((first, rest)) if first.contains('.') || first.contains(':') || first == "localhost" => rest,
        _ => image,
    };
    format!("{registry}/{path}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirrors_keep_the_repository_path() {
        assert_eq!(
            mirror("vllm/vllm-openai:v0.11.0", "mirror.example.com"),
            "mirror.example.com/vllm/vllm-openai:v0.11.0"
        );
        assert_eq!(mirror("ghcr.io/org/img:1", "mirror.example.com/"), "mirror.example.com/org/img:1");
        assert_eq!(mirror("localhost:5000/img@sha256:abc", "m.io"), "m.io/img@sha256:abc");
    }

    #[test]
    fn replica_factors_round_up_and_keep_zero() {
        assert_eq!(scale(3, 0.5), 2);
        assert_eq!(scale(1, 0.1), 1);
        assert_eq!(scale(0, 2.0), 0);
        assert_eq!(scale(4, 1.5), 6);
    }
}
