//! isvc: an offline GitOps compiler for LLM inference services.
//!
//! The pipeline, one module per stage:
//!
//! ```text
//! load ─▶ derive ─▶ render ─▶ check ─▶ output | diff
//! (files,   (pure:     (templates,  (rules over   (atomic tree write,
//!  schema,   desired    parse back,  rendered      prune, --check;
//!  names)    state)     kinds)       objects)      object diff)
//! ```
//!
//! [`compile`] runs derive, render and check over loaded services; it does no
//! I/O, so an Operator can embed it. `yaml` and `diagnostics` are leaves that
//! every stage uses.

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
pub mod platform;
pub mod quantity;
pub mod render;
pub mod schema;
pub mod schema_check;
pub mod security;
pub mod spec;
pub mod yaml;

use rayon::prelude::*;

use crate::diagnostics::{Diagnostic, Diagnostics};
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

/// Derives, renders and checks every service, plus the CRD. `label` names a
/// service's input file as the output headers should show it.
pub fn compile(
    services: &[LoadedService],
    platform: &Platform,
    templates: &Templates,
    label: &(dyn Fn(&LoadedService) -> String + Sync),
) -> Result<Compiled, Diagnostics> {
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
    for finding in check::run(&objects) {
        diags.push(finding.to_diagnostic());
    }
    diags.sort();
    if diags.has_errors() {
        return Err(diags);
    }
    Ok(Compiled { objects, warnings: diags })
}
