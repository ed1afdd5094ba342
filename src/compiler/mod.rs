//! The compiler: drives the stages over every cluster.

pub mod clusters;

use crate::base::yaml::PathSegment;
use crate::check;
use crate::derive::tenancy::place;
use crate::derive::{self, adapters, gitops, kueue, tenancy};
use crate::k8s::typecheck as kinds;
use crate::model::{crd, objects, platform};
use crate::render;
use rayon::prelude::*;
use std::collections::BTreeMap;

use crate::base::diagnostics::{Diagnostic, Diagnostics, Severity};
use crate::load::LoadedService;
use crate::model::objects::Object;
use crate::model::platform::Platform;
use crate::render::Templates;

/// The result of a successful compile: the objects in output order, and the
/// warnings found on the way.
#[derive(Debug)]
pub struct Compiled {
    pub objects: Vec<Object>,
    pub warnings: Diagnostics,
    /// Quota use of every tenant namespace (empty without tenant quotas).
    pub quota: Vec<tenancy::QuotaUsage>,
}

/// Derives, renders and checks every service, plus the CRD and the objects
/// of the platform's tenants, with every rule on. `label` names a service's
/// input file as the output headers should show it; `platform_file` names
/// the platform file.
pub fn compile(
    services: &[LoadedService],
    platform: &Platform,
    templates: &Templates,
    label: &(dyn Fn(&LoadedService) -> String + Sync),
    platform_file: Option<&str>,
) -> Result<Compiled, Diagnostics> {
    compile_with(services, platform, templates, label, platform_file, &check::Config::default())
}

/// [`compile`], with the rules `config` disables left out. Only error-level
/// rules run: an error stops the compile; warnings are for `isvc check`.
pub fn compile_with(
    services: &[LoadedService],
    platform: &Platform,
    templates: &Templates,
    label: &(dyn Fn(&LoadedService) -> String + Sync),
    platform_file: Option<&str>,
    config: &check::Config,
) -> Result<Compiled, Diagnostics> {
    let (objects, mut diags, quota) = render_all(services, platform, templates, label, platform_file);
    if diags.has_errors() {
        diags.sort();
        return Err(diags);
    }
    let mut findings = check::run_with(&objects, config);
    findings.retain(|f| f.rule.severity == Severity::Error);
    check::locate(&mut findings, services);
    diags.extend(findings.iter().map(check::Finding::to_diagnostic));
    diags.extend(check::annotation_problems(services));
    diags.sort();
    if diags.has_errors() {
        return Err(diags);
    }
    Ok(Compiled { objects, warnings: diags, quota })
}

/// Derives and renders every service, plus the CRD and the tenants'
/// objects, without running the rules: what `isvc check` examines.
pub fn render_objects(
    services: &[LoadedService],
    platform: &Platform,
    templates: &Templates,
    label: &(dyn Fn(&LoadedService) -> String + Sync),
    platform_file: Option<&str>,
) -> Result<Vec<Object>, Diagnostics> {
    let (objects, mut diags, _) = render_all(services, platform, templates, label, platform_file);
    diags.sort();
    if diags.has_errors() { Err(diags) } else { Ok(objects) }
}

/// The objects that rendered, in output order, the errors of the inputs
/// and of those that did not render (placement, quota and Kueue checks
/// included), and the tenants' quota use.
fn render_all(
    services: &[LoadedService],
    platform: &Platform,
    templates: &Templates,
    label: &(dyn Fn(&LoadedService) -> String + Sync),
    platform_file: Option<&str>,
) -> (Vec<Object>, Diagnostics, Vec<tenancy::QuotaUsage>) {
    let mut diags = Diagnostics::new();
    diags.extend(placements(services, platform));
    diags.extend(crate::load::validate::routes(services, platform, label));
    if diags.has_errors() {
        return (Vec::new(), diags, Vec::new());
    }
    let derived: Vec<Result<(&LoadedService, derive::DesiredService), Diagnostic>> = services
        .par_iter()
        .map(|s| {
            derive::derive(&s.service, platform)
                .map(|d| (s, d))
                .map_err(|e| Diagnostic::error(format!("cannot derive {}: {e}", s.service.name())).at(s.location(&[])))
        })
        .collect();
    let mut desired = Vec::with_capacity(derived.len());
    for d in derived {
        match d {
            Ok(pair) => desired.push(pair),
            Err(e) => diags.push(e),
        }
    }
    let pairs: Vec<(&LoadedService, &derive::DesiredService)> = desired.iter().map(|(s, d)| (*s, d)).collect();
    diags.extend(tenancy::check_quotas(&pairs, platform, platform_file));
    diags.extend(tenancy::check_limits(&pairs, platform));
    diags.extend(kueue::check(&pairs, platform, platform_file));
    let quota = tenancy::quota_usage(&pairs, platform);

    let rendered: Vec<Result<Vec<Object>, Vec<Diagnostic>>> =
        desired.par_iter().map(|(s, d)| render::render_service(templates, d, Some(&label(s)))).collect();
    let mut objects = vec![crd::object()];
    for r in rendered {
        match r {
            Ok(o) => objects.extend(o),
            Err(d) => diags.extend(d),
        }
    }
    for o in tenancy::objects(platform, platform_file).into_iter().chain(kueue::objects(platform, platform_file)) {
        for p in kinds::check(&o.value) {
            diags.push(Diagnostic::error(format!("{}: {}", o.id, p.message)));
        }
        objects.push(o);
    }
    objects::sort(&mut objects);
    diags.extend(adapters::check_mounted(&objects));
    (objects, diags, quota)
}

/// Compiles for every cluster the platform lists (or the one cluster), and
/// adds the GitOps engine's objects when `engine` (or the platform's
/// `gitops.engine`) names one. Each cluster's objects carry its name.
pub fn compile_all(
    services: &[LoadedService],
    platform: &Platform,
    templates: &Templates,
    label: &(dyn Fn(&LoadedService) -> String + Sync),
    platform_file: Option<&str>,
    engine: Option<platform::Engine>,
    config: &check::Config,
) -> Result<Compiled, Diagnostics> {
    let engine = engine.or(platform.gitops.as_ref().and_then(|g| g.engine));
    let mut compiled = if platform.clusters.is_empty() {
        compile_with(services, platform, templates, label, platform_file, config)?
    } else {
        compile_clusters(services, platform, templates, label, platform_file, config)?
    };
    if let Some(engine) = engine {
        gitops::annotate(&mut compiled.objects, engine);
        let mut targets: Vec<gitops::Target<'_>> = Vec::new();
        let clusters: Vec<Option<&platform::Cluster>> =
            if platform.clusters.is_empty() { vec![None] } else { platform.clusters.iter().map(Some).collect() };
        for c in clusters {
            let mine = compiled.objects.iter().filter(|o| o.cluster.as_deref() == c.map(|c| c.name.as_str()));
            let namespaces = mine.clone().filter_map(|o| o.id.namespace.clone()).collect();
            let autoscaled = gitops::autoscaled(mine);
            targets.push(gitops::Target { cluster: c, namespaces, autoscaled });
        }
        let extra = gitops::engine_objects(platform, engine, &targets, platform_file).map_err(Diagnostics::from)?;
        compiled.objects.extend(extra);
        objects::sort(&mut compiled.objects);
    }
    Ok(compiled)
}

fn compile_clusters(
    services: &[LoadedService],
    platform: &Platform,
    templates: &Templates,
    label: &(dyn Fn(&LoadedService) -> String + Sync),
    platform_file: Option<&str>,
    config: &check::Config,
) -> Result<Compiled, Diagnostics> {
    let mut objects = Vec::new();
    let mut quota = Vec::new();
    let mut per_cluster: Vec<(String, Diagnostics)> = Vec::new();
    let mut failed = false;
    for input in clusters::inputs(services, platform) {
        let name = input.cluster.name.clone();
        match compile_with(&input.services, &input.platform, templates, label, platform_file, config) {
            Ok(c) => {
                objects.extend(c.objects.into_iter().map(|mut o| {
                    o.cluster = Some(name.clone());
                    o
                }));
                quota.extend(c.quota.into_iter().map(|mut q| {
                    q.cluster = Some(name.clone());
                    q
                }));
                per_cluster.push((name, c.warnings));
            }
            Err(d) => {
                failed = true;
                per_cluster.push((name, d));
            }
        }
    }
    // A finding every cluster shares is reported once; the others name
    // their cluster.
    let mut diags = Diagnostics::new();
    let all = per_cluster.len();
    for (name, found) in &per_cluster {
        for d in found.iter() {
            let everywhere = per_cluster.iter().filter(|(_, other)| other.iter().any(|x| x == d)).count() == all;
            if everywhere {
                diags.push(d.clone());
            } else {
                let mut d = d.clone();
                d.message = format!("cluster {name}: {}", d.message);
                diags.push(d);
            }
        }
    }
    diags.sort();
    if failed {
        return Err(diags);
    }
    objects::sort(&mut objects);
    Ok(Compiled { objects, warnings: diags, quota })
}

/// Checks every service's placement, with positions.
pub fn placements(services: &[LoadedService], platform: &Platform) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    let mut homeless: BTreeMap<&str, &LoadedService> = BTreeMap::new();
    for s in services {
        if let Err((path, message)) = place(&s.service, platform) {
            let path: Vec<PathSegment> = path.iter().map(|k| PathSegment::Key(k.to_string())).collect();
            diags.push(Diagnostic::error(message).at(s.location(&path)));
        }
        if !platform.tenants.is_empty() && platform.tenant_of(s.service.namespace_or_default()).is_none() {
            homeless.entry(s.service.namespace_or_default()).or_insert(s);
        }
    }
    for (ns, s) in homeless {
        diags.push(
            Diagnostic::warning(format!(
                "namespace \"{ns}\" belongs to no tenant: no quota, priority or network isolation applies"
            ))
            .at(s.location(&[PathSegment::Key("metadata".into())]))
            .help("add it to a tenant's namespaces in the platform file"),
        );
    }
    diags
}
