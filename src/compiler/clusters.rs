//! Multi-cluster rendering: each cluster the platform lists gets its own
//! tree, rendered from the same services with that cluster's overrides
//! (replica factor, node selector, registry mirror, which services run
//! there). The overrides are applied to the typed inputs before the
//! derivation, so every cluster's output passes the same checks.

use std::collections::BTreeSet;

use crate::base::diagnostics::{Diagnostic, did_you_mean};
use crate::base::yaml::PathSegment;
use crate::load::{LoadedService, PlatformOrigin};
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

/// Errors for the services a cluster's `services` names that are not among
/// the inputs, at the entry in the platform file (when `origin` is known),
/// with the nearest name as a suggestion.
pub fn unknown_services(
    services: &[LoadedService],
    platform: &Platform,
    origin: Option<&PlatformOrigin>,
) -> Vec<Diagnostic> {
    // Without clusters that name services, the names are not gathered (a
    // fleet's, on one core before its compile starts).
    if platform.clusters.iter().all(|c| c.services.is_empty()) {
        return Vec::new();
    }
    let names: BTreeSet<&str> = services.iter().map(|s| s.service.name()).collect();
    let qualified: BTreeSet<String> =
        services.iter().map(|s| format!("{}/{}", s.service.namespace_or_default(), s.service.name())).collect();
    let mut diags = Vec::new();
    for (i, cluster) in platform.clusters.iter().enumerate() {
        for (j, sel) in cluster.services.iter().enumerate() {
            let near = match sel.split_once('/') {
                Some(_) if qualified.contains(sel) => continue,
                None if names.contains(sel.as_str()) => continue,
                // The right name in another namespace, else the nearest.
                Some((_, name)) => qualified
                    .iter()
                    .find(|q| q.split_once('/').is_some_and(|(_, n)| n == name))
                    .map(String::as_str)
                    .or_else(|| did_you_mean(sel, qualified.iter().map(String::as_str))),
                None => did_you_mean(sel, names.iter().copied()),
            };
            let mut d = Diagnostic::error(format!(
                "cluster \"{}\" runs service \"{sel}\", which is not among the input services",
                cluster.name
            ));
            if let Some(origin) = origin {
                let path = [
                    PathSegment::Key("clusters".into()),
                    PathSegment::Index(i),
                    PathSegment::Key("services".into()),
                    PathSegment::Index(j),
                ];
                d = d.at(origin.location(&path));
            }
            d = match near {
                Some(near) => d.help(format!("did you mean \"{near}\"?")),
                None => d.help("name an input service as `name` or `namespace/name`, or remove the entry"),
            };
            diags.push(d);
        }
    }
    diags
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
        // So do the endpoint pickers: a cluster that pulls from a mirror
        // may reach no other registry.
        if let Some(g) = &mut p.gateway {
            g.endpoint_picker.image = mirror(&g.endpoint_picker.image, registry);
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
