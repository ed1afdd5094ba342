//! isvc: an offline GitOps compiler for LLM inference services.
//!
//! The pipeline, one module per stage:
//!
//! ```text
//! load ─▶ derive ─▶ render ─▶ check ─▶ output | diff | plan
//! (files,   (pure:     (templates,  (rules over   (atomic tree write,
//!  schema,   desired    parse back,  rendered      prune, --check;
//!  names)    state)     kinds)       objects)      object diff;
//!                                                  reconcile against a
//!                                                  live snapshot)
//! ```
//!
//! [`compile`] runs derive, render and check over loaded services; it does no
//! I/O, so an Operator can embed it, and [`plan`] is the Operator's reconcile
//! over its result. `yaml` and `diagnostics` are leaves that every stage uses.

pub mod check;
pub mod cli;
pub mod crd;
pub mod derive;
pub mod diagnostics;
pub mod diff;
pub mod kinds;
pub mod load;
pub mod names;
pub mod objects;
pub mod output;
pub mod plan;
pub mod platform;
pub mod quantity;
pub mod render;
pub mod schema;
pub mod schema_check;
pub mod spec;
pub mod yaml;

use rayon::prelude::*;

use crate::diagnostics::{Diagnostic, Diagnostics, Severity};
use crate::load::LoadedService;
use crate::objects::Object;
use crate::platform::Platform;
use crate::render::Templates;

/// The result of a successful compile: the objects in output order, and the
/// warnings found on the way.
#[derive(Debug)]
pub struct Compiled {
    pub objects: Vec<Object>,
    pub warnings: Diagnostics,
}

/// Derives, renders and checks every service, plus the CRD, with every
/// rule on. `label` names a service's input file as the output headers
/// should show it.
pub fn compile(
    services: &[LoadedService],
    platform: &Platform,
    templates: &Templates,
    label: &(dyn Fn(&LoadedService) -> String + Sync),
) -> Result<Compiled, Diagnostics> {
    compile_with(services, platform, templates, label, &check::Config::default())
}

/// [`compile`], with the rules `config` disables left out. Only error-level
/// rules run: an error stops the compile; warnings are for `isvc check`.
pub fn compile_with(
    services: &[LoadedService],
    platform: &Platform,
    templates: &Templates,
    label: &(dyn Fn(&LoadedService) -> String + Sync),
    config: &check::Config,
) -> Result<Compiled, Diagnostics> {
    let (objects, mut diags) = render_all(services, platform, templates, label);
    let mut findings = check::run_with(&objects, config);
    findings.retain(|f| f.rule.severity == Severity::Error);
    check::locate(&mut findings, services);
    diags.extend(findings.iter().map(check::Finding::to_diagnostic));
    diags.extend(check::annotation_problems(services));
    diags.sort();
    if diags.has_errors() {
        return Err(diags);
    }
    Ok(Compiled { objects, warnings: diags })
}

/// Derives and renders every service, plus the CRD, without running the
/// rules: what `isvc check` examines.
pub fn render_objects(
    services: &[LoadedService],
    platform: &Platform,
    templates: &Templates,
    label: &(dyn Fn(&LoadedService) -> String + Sync),
) -> Result<Vec<Object>, Diagnostics> {
    let (objects, mut diags) = render_all(services, platform, templates, label);
    diags.sort();
    if diags.has_errors() { Err(diags) } else { Ok(objects) }
}

/// The objects that rendered, in output order, and the errors of those
/// that did not.
fn render_all(
    services: &[LoadedService],
    platform: &Platform,
    templates: &Templates,
    label: &(dyn Fn(&LoadedService) -> String + Sync),
) -> (Vec<Object>, Diagnostics) {
    let results: Vec<Result<Vec<Object>, Vec<Diagnostic>>> = services
        .par_iter()
        .map(|s| {
            let desired = derive::derive(&s.service, platform).map_err(|e| {
                vec![Diagnostic::error(format!("cannot derive {}: {e}", s.service.name())).at(s.location(&[]))]
            })?;
            render::render_service(templates, &desired, Some(&label(s)))
        })
        .collect();
    let mut diags = Diagnostics::new();
    let mut objects = vec![crd::object()];
    for r in results {
        match r {
            Ok(o) => objects.extend(o),
            Err(d) => diags.extend(d),
        }
    }
    objects::sort(&mut objects);
    (objects, diags)
}
