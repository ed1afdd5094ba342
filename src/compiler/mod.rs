//! The compiler: one entry point that drives the stages over every
//! cluster. An [`Inputs`] (services, platform, templates, each with the name
//! it is known by) and [`Options`] (rules, GitOps engine, how headers name
//! input files) go in; a [`Compilation`] (what `render`, `diff`, `plan` and
//! `status` work from) or an [`Examination`] (what `check` reports) comes
//! out. No I/O: an Operator can embed it.

pub mod admission;
pub mod clusters;
pub mod kueue;
mod parts;

pub use parts::Parts;

use crate::base::digest::Digest;
use crate::base::free::{MadeOn, free_where_made};
use crate::base::value::At;
use crate::base::yaml::PathSegment;
use crate::check;
use crate::derive::tenancy::place;
use crate::derive::{self, adapters, gitops, tenancy};
use crate::k8s::typecheck;
use crate::model::{crd, objects, platform};
use crate::render;
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::base::diagnostics::{Diagnostic, Diagnostics, Severity};
use crate::load::LoadedService;
use crate::model::objects::{Held, Object, ObjectId};
use crate::model::platform::Platform;
use crate::render::Templates;

/// Everything a compile reads. The CLI builds it once from the files; an
/// Operator or a test builds it from values.
pub struct Inputs {
    pub services: Vec<LoadedService>,
    pub platform: Platform,
    /// The platform file as headers and messages name it, if there is one.
    pub platform_file: Option<String>,
    /// The platform file's document, for positions in its errors.
    pub platform_origin: Option<crate::load::PlatformOrigin>,
    pub templates: Templates,
}

impl Inputs {
    /// `services` with the built-in platform defaults and templates.
    pub fn new(services: Vec<LoadedService>) -> Inputs {
        Inputs {
            services,
            platform: Platform::default(),
            platform_file: None,
            platform_origin: None,
            templates: Templates::builtin(),
        }
    }

    /// Where the platform was read from, for positions in its errors.
    pub fn with_platform_origin(mut self, origin: Option<crate::load::PlatformOrigin>) -> Inputs {
        self.platform_origin = origin;
        self
    }

    pub fn with_platform(mut self, platform: Platform, file: Option<String>) -> Inputs {
        self.platform = platform;
        self.platform_file = file;
        self
    }

    pub fn with_templates(mut self, templates: Templates) -> Inputs {
        self.templates = templates;
        self
    }
}

/// How a service's output header names its input file.
pub type Label = dyn Fn(&LoadedService) -> String + Sync;

/// How to compile.
pub struct Options {
    /// The rules, less those the user disabled.
    pub rules: check::Config,
    /// The GitOps engine whose objects to add (else the platform's
    /// `gitops.engine`, if any).
    pub engine: Option<platform::Engine>,
    /// Only this cluster of the platform's `clusters` (its objects alone,
    /// without the GitOps engine's objects, which span clusters).
    pub cluster: Option<String>,
    label: Box<Label>,
    /// Namespaces whose objects the caller holds from an earlier compile.
    reuse: BTreeSet<String>,
    /// Input files (by label) whose services' files the caller holds.
    keep_files_of: BTreeSet<String>,
    /// What the earlier compile found in the namespaces of `reuse`.
    recorded: BTreeMap<String, RecordedNamespace>,
    /// Which namespaces are checked in parts, and in parts of how many
    /// services ([`Parts`]).
    pub parts: Parts,
}

/// What an earlier compile found in one namespace, that the GitOps
/// engine's objects read of every namespace ([`Options::recorded`]), by
/// cluster (`None` without clusters).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecordedNamespace {
    /// Its objects in each cluster's tree (what
    /// `derive::gitops::build_size_warnings` counts of a namespace's
    /// directory); a cluster not named holds none.
    pub objects: BTreeMap<Option<String>, usize>,
    /// Its workloads whose replica count an autoscaler owns, in each
    /// cluster ([`Compilation::autoscaled`]).
    pub autoscaled: BTreeMap<Option<String>, BTreeSet<ObjectId>>,
}

impl RecordedNamespace {
    /// How many objects `cluster`'s tree holds of the namespace.
    pub fn objects_in(&self, cluster: &Option<String>) -> usize {
        self.objects.get(cluster).copied().unwrap_or_default()
    }
}

impl Default for Options {
    fn default() -> Options {
        Options {
            rules: check::Config::default(),
            engine: None,
            cluster: None,
            label: Box::new(|s| s.source.name.display().to_string()),
            reuse: BTreeSet::new(),
            keep_files_of: BTreeSet::new(),
            recorded: BTreeMap::new(),
            parts: Parts::default(),
        }
    }
}

impl Options {
    pub fn rules(mut self, rules: check::Config) -> Options {
        self.rules = rules;
        self
    }

    pub fn engine(mut self, engine: Option<platform::Engine>) -> Options {
        self.engine = engine;
        self
    }

    pub fn cluster(mut self, cluster: Option<String>) -> Options {
        self.cluster = cluster;
        self
    }

    /// Namespaces not to compile, because the caller holds their objects
    /// from an earlier compile of the same services (the same
    /// [`Compiler::namespace_digests`]), platform, templates, rules and
    /// isvc version, in every cluster's tree alike (a cluster's services
    /// and platform follow from the platform and the services alone). With
    /// a GitOps engine, honoured for the namespaces [`Options::recorded`]
    /// gives what the engine's objects read of them. The namespaces of a
    /// Kueue cohort's tenants are compiled together and never left out. A
    /// namespace of which no service is given is left out as well: the
    /// caller may keep a namespace without reading its services' files.
    /// [`Compilation::reused`] says which were left out.
    pub fn reuse(mut self, namespaces: BTreeSet<String>) -> Options {
        self.reuse = namespaces;
        self
    }

    /// Input files, by the label [`Options::label`] gives them, whose
    /// services the caller holds the files of from an earlier compile of
    /// the same file, platform, templates, rules and isvc version. Their
    /// services are derived, rendered and checked with the rest of their
    /// namespace, and then left out of [`Compilation::objects`]
    /// ([`Compilation::kept_services`] names them): their files would be
    /// written with the same bytes. Not for a service that shares a
    /// weighted route: the first of such services by name renders the
    /// route, with every backend's weight (`derive::gateway::share_routes`),
    /// so its objects depend on the others' files. Honoured where
    /// [`Options::reuse`] is.
    pub fn keep_files_of(mut self, labels: BTreeSet<String>) -> Options {
        self.keep_files_of = labels;
        self
    }

    /// What the earlier compile found in each namespace of
    /// [`Options::reuse`], as [`Compilation::autoscaled`] and the
    /// namespace's object count gave it: with a GitOps engine, whose
    /// objects list every namespace and its autoscaled workloads, a
    /// namespace is reused only where this says what it holds.
    pub fn recorded(mut self, namespaces: BTreeMap<String, RecordedNamespace>) -> Options {
        self.recorded = namespaces;
        self
    }

    /// Which namespaces are checked in parts ([`Parts`]; by default, those of
    /// more than 1,000 services): the output and every finding are the
    /// same, the values of a large namespace are not all held at once.
    pub fn parts(mut self, parts: Parts) -> Options {
        self.parts = parts;
        self
    }

    /// Names a service's input file in output headers (default: the name
    /// its source was read under).
    pub fn label(mut self, label: impl Fn(&LoadedService) -> String + Sync + 'static) -> Options {
        self.label = Box::new(label);
        self
    }
}

/// Compiles [`Inputs`] with [`Options`].
pub struct Compiler<'a> {
    inputs: &'a Inputs,
    options: Options,
}

/// What `isvc check` reports: the objects examined (every cluster's), held
/// as `T`, and the findings of every rule, warnings included.
#[derive(Debug)]
pub struct Examination<T = Object> {
    pub objects: Vec<T>,
    pub findings: Vec<check::Finding>,
}

impl<'a> Compiler<'a> {
    pub fn new(inputs: &'a Inputs, options: Options) -> Compiler<'a> {
        Compiler { inputs, options }
    }

    /// Derives, renders and checks every service for every cluster, with
    /// the tenants', Kueue's and the GitOps engine's objects: what `render`,
    /// `diff`, `plan` and `status` work from. Error-level rules stop it.
    pub fn compile(&self) -> Result<Compilation, Diagnostics> {
        self.compile_held()
    }

    /// [`Compiler::compile`], keeping each object as `T` once its checks
    /// have run: [`Written`](crate::model::objects::Written) keeps only its
    /// file's text, so a render holds the objects of at most two
    /// namespaces at a time (see [`Held::OVERLAP`]).
    pub fn compile_held<T: Held>(&self) -> Result<Compilation<T>, Diagnostics> {
        self.references()?;
        let platform = self.platform()?;
        let engine = engine(self.options.engine, &platform);
        // The engine's annotations go on every object; its own objects span
        // clusters, so one cluster's output leaves them out.
        let stage = self.stage(engine);
        let mut autoscaled = BTreeMap::new();
        let mut compiled = if platform.clusters.is_empty() {
            let (compiled, scaled) = stage.compile(&self.inputs.services, &platform)?;
            autoscaled.insert(None, scaled);
            compiled
        } else {
            let (per_cluster, failed) = per_cluster(&self.inputs.services, &platform, |s, p| stage.compile::<T>(s, p));
            let mut objects = Vec::new();
            let mut quota = Vec::new();
            let mut warnings = Vec::new();
            // Every cluster reuses the namespaces of `reuse` alike, and keeps
            // the services of the same files (where it runs them): what is
            // kept is named once for every cluster's tree.
            let mut reused = BTreeSet::new();
            let mut kept_services: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
            let mut kept_objects = BTreeMap::new();
            for (name, (c, scaled)) in per_cluster {
                objects.extend(c.objects.into_iter().map(|mut o| {
                    o.object_mut().cluster = Some(name.clone());
                    o
                }));
                quota.extend(c.quota.into_iter().map(|mut q| {
                    q.cluster = Some(name.clone());
                    q
                }));
                reused.extend(c.reused);
                for (ns, names) in c.kept_services {
                    kept_services.entry(ns).or_default().extend(names);
                }
                kept_objects.extend(c.kept_objects.into_iter().map(|((_, ns), n)| ((Some(name.clone()), ns), n)));
                autoscaled.insert(Some(name.clone()), scaled);
                warnings.push((name, c.warnings.0));
            }
            let mut diags =
                Diagnostics(once_or_named(&failed.into_iter().chain(warnings).collect::<Vec<_>>(), |d, c| {
                    d.message = format!("cluster {c}: {}", d.message)
                }));
            diags.sort();
            if diags.has_errors() {
                return Err(diags);
            }
            objects::sort(&mut objects);
            let clusters = platform.clusters.iter().map(|c| c.name.clone()).collect();
            let autoscaled = BTreeSet::new();
            Compilation { objects, warnings: diags, quota, clusters, reused, kept_services, kept_objects, autoscaled }
        };
        match (engine, &self.options.cluster) {
            (_, Some(_)) => compiled.objects.retain(|o| o.object().cluster.is_some()),
            (Some(engine), None) if platform.gitops.is_none() => {
                return Err(no_gitops_section(engine, self.inputs).into());
            }
            (Some(engine), None) => {
                let platform_file = self.inputs.platform_file.as_deref();
                add_engine_objects(
                    &mut compiled,
                    &platform,
                    engine,
                    &autoscaled,
                    &self.options.recorded,
                    platform_file,
                )?
            }
            (None, None) => {}
        }
        Ok(compiled)
    }

    /// A digest of each namespace's services as a compile reads them (each
    /// service's spec and metadata, the label its headers name its file by,
    /// its `apiVersion`): what [`Options::reuse`] is decided by.
    pub fn namespace_digests(&self) -> BTreeMap<String, Digest> {
        let mut parts: BTreeMap<&str, Vec<Vec<u8>>> = BTreeMap::new();
        for s in &self.inputs.services {
            let p = parts.entry(s.service.namespace_or_default()).or_default();
            p.push((self.options.label)(s).into_bytes());
            p.push(s.api_version.as_bytes().to_vec());
            p.push(serde_json::to_vec(&s.service).unwrap_or_default());
        }
        parts
            .into_par_iter()
            .map(|(ns, p)| (ns.to_string(), crate::base::digest::digest_parts(p.iter().map(Vec::as_slice))))
            .collect()
    }

    /// What the platform file names that the inputs lack: services its
    /// clusters run.
    fn references(&self) -> Result<(), Diagnostics> {
        let i = self.inputs;
        let mut diags = Diagnostics(clusters::unknown_services(&i.services, &i.platform, i.platform_origin.as_ref()));
        diags.sort();
        if diags.has_errors() { Err(diags) } else { Ok(()) }
    }

    fn stage(&self, engine: Option<platform::Engine>) -> Stage<'_> {
        // The engine's objects read every namespace: one is left out only
        // where the caller says what they read of it.
        let reuse = match engine {
            None => self.options.reuse.clone(),
            Some(_) => self.options.reuse.iter().filter(|n| self.options.recorded.contains_key(*n)).cloned().collect(),
        };
        Stage {
            engine,
            reuse,
            keep_files_of: &self.options.keep_files_of,
            templates: &self.inputs.templates,
            label: &*self.options.label,
            platform_file: self.inputs.platform_file.as_deref(),
            platform_origin: self.inputs.platform_origin.as_ref(),
            config: &self.options.rules,
            parts: self.options.parts,
        }
    }

    /// The platform, narrowed to the cluster the options name.
    fn platform(&self) -> Result<std::borrow::Cow<'a, Platform>, Diagnostics> {
        let platform = &self.inputs.platform;
        let Some(name) = &self.options.cluster else { return Ok(std::borrow::Cow::Borrowed(platform)) };
        let names: Vec<&str> = platform.clusters.iter().map(|c| c.name.as_str()).collect();
        if !names.contains(&name.as_str()) {
            let mut d = Diagnostic::error(if names.is_empty() {
                format!("--cluster {name}: the platform file lists no clusters")
            } else {
                format!("--cluster {name}: the platform file lists no cluster of that name")
            });
            d = match crate::base::diagnostics::did_you_mean(name, names.iter().copied()) {
                Some(near) => d.help(format!("did you mean --cluster {near}?")),
                None if names.is_empty() => {
                    d.help("leave --cluster out, or list the clusters under `clusters` in the platform file")
                }
                None => d.help(format!("the platform's clusters: {}", names.join(", "))),
            };
            return Err(d.into());
        }
        let mut narrowed = platform.clone();
        narrowed.clusters.retain(|c| &c.name == name);
        Ok(std::borrow::Cow::Owned(narrowed))
    }

    /// Renders every cluster as [`Compiler::compile`] does and runs every
    /// rule over each cluster's objects on their own: what `isvc check`
    /// reports. A render error of any cluster (a quota a cluster's
    /// `replicaFactor` breaks) is an error here too, so `check` and
    /// `render` agree. A finding every cluster shares is reported once; the
    /// others name their cluster.
    pub fn examine(&self) -> Result<Examination, Diagnostics> {
        self.examine_held()
    }

    /// [`Compiler::examine`], keeping each object as `T` once its checks
    /// have run ([`Compiler::compile_held`]).
    pub fn examine_held<T: Held>(&self) -> Result<Examination<T>, Diagnostics> {
        self.references()?;
        let platform = self.platform()?;
        let stage = self.stage(None);
        if platform.clusters.is_empty() {
            return stage.examine(&self.inputs.services, &platform);
        }
        let (per_cluster, failed) = per_cluster(&self.inputs.services, &platform, |s, p| stage.examine::<T>(s, p));
        if !failed.is_empty() {
            let passed = per_cluster.iter().map(|(c, _)| (c.clone(), Vec::new()));
            let all: Vec<(String, Vec<Diagnostic>)> = failed.into_iter().chain(passed).collect();
            let mut diags = Diagnostics(once_or_named(&all, |d, c| d.message = format!("cluster {c}: {}", d.message)));
            diags.sort();
            return Err(diags);
        }
        let mut objects = Vec::new();
        let mut findings = Vec::new();
        for (name, e) in per_cluster {
            objects.extend(e.objects.into_iter().map(|mut o| {
                o.object_mut().cluster = Some(name.clone());
                o
            }));
            findings.push((name, e.findings));
        }
        objects::sort(&mut objects);
        let findings = once_or_named(&findings, |f, c| f.message = format!("cluster {c}: {}", f.message));
        Ok(Examination { objects, findings })
    }
}

/// The result of a successful compile: the objects in output order, and the
/// warnings found on the way.
#[derive(Debug)]
pub struct Compilation<T = Object> {
    pub objects: Vec<T>,
    pub warnings: Diagnostics,
    /// Quota use of every tenant namespace (empty without tenant quotas).
    pub quota: Vec<admission::QuotaUsage>,
    /// The clusters whose trees the objects go to, as the platform lists
    /// them (the one [`Options::cluster`] names); empty without clusters.
    pub clusters: Vec<String>,
    /// The namespaces of [`Options::reuse`] left out: none of their
    /// objects is in `objects`, in any cluster's tree.
    pub reused: BTreeSet<String>,
    /// The services of [`Options::keep_files_of`] left out, by namespace:
    /// checked with their namespace, none of their objects in `objects`.
    pub kept_services: BTreeMap<String, BTreeSet<String>>,
    /// How many objects the services of `kept_services` have, by cluster
    /// (`None` without clusters) and namespace (what the GitOps engine's
    /// objects count of a namespace).
    pub(crate) kept_objects: BTreeMap<(Option<String>, String), usize>,
    /// With a GitOps engine, the workloads whose replica count an
    /// autoscaler owns, by cluster (`None` without clusters), as the
    /// engine's objects list them (they leave it to the autoscaler): those
    /// of the namespaces compiled, and the recorded ones of the namespaces
    /// reused. What a later compile that reuses a namespace is given back
    /// ([`Options::recorded`]).
    pub autoscaled: BTreeSet<(Option<String>, ObjectId)>,
}

/// A cluster's objects after [`Stage::checked`]: the warnings of the render
/// and admission, the tenants' quota use, every rule's findings (not yet
/// located in the inputs) and the workloads an autoscaler scales.
struct Checked<T> {
    objects: Vec<T>,
    /// Each group's objects as checked, joined into `objects` at the end:
    /// one list grown group by group would be copied each time it doubles,
    /// while a group's objects are in memory (12 MB at 10,000 services).
    held: Vec<Vec<T>>,
    diags: Diagnostics,
    quota: Vec<admission::QuotaUsage>,
    findings: Vec<check::Finding>,
    /// Whether only error-level findings are kept, as found: a compile
    /// reads no other (at 10,000 services the rules find 5,960 warnings).
    errors_only: bool,
    /// The workloads an autoscaler scales, found only for a GitOps engine.
    autoscaled: BTreeSet<ObjectId>,
    reused: BTreeSet<String>,
    kept_services: BTreeMap<String, BTreeSet<String>>,
    kept_objects: BTreeMap<String, usize>,
}

impl<T: Held> Checked<T> {
    /// Keeps the rules' `found` findings (those of error level alone, where
    /// only they are read).
    fn found(&mut self, found: Vec<check::Finding>) {
        if self.errors_only {
            self.findings.extend(found.into_iter().filter(|f| f.rule.severity == Severity::Error));
        } else {
            self.findings.extend(found);
        }
    }

    /// Keeps a group's `held` objects, compacted ([`Held::compact`]). Where
    /// the next group renders while this one is checked
    /// ([`Held::OVERLAP`]), this runs once that render is done: copies
    /// made beside the next group's allocations would share their pages,
    /// which stay in use once this group's are freed.
    fn keep(&mut self, mut held: Vec<T>) {
        T::compact(&mut held);
        self.held.push(held);
    }
}

/// What every cluster's compile shares: the templates, how headers name
/// input files, the platform file's name, the rules and the GitOps engine
/// whose annotations the objects get.
struct Stage<'a> {
    templates: &'a Templates,
    label: &'a Label,
    platform_file: Option<&'a str>,
    platform_origin: Option<&'a crate::load::PlatformOrigin>,
    config: &'a check::Config,
    engine: Option<platform::Engine>,
    /// Namespaces not to compile (see [`Options::reuse`]).
    reuse: BTreeSet<String>,
    /// Input files whose services' objects are checked but not held (see
    /// [`Options::keep_files_of`]).
    keep_files_of: &'a BTreeSet<String>,
    /// Which groups are checked in parts ([`Options::parts`]).
    parts: Parts,
}

/// Objects compiled, indexed and checked together: one namespace's
/// services and the platform's objects in it; with Kueue, the namespaces
/// of every tenant with queues in one cohort, with the cohort's
/// ClusterQueues (a cohort's borrowing, reclaim and preemption span its
/// tenants' namespaces).
struct Group<'s> {
    services: Vec<&'s LoadedService>,
    objects: Vec<Object>,
}

/// How a cohort's group is named among the groups: no namespace starts
/// with `/`.
const COHORT: &str = "/cohort/";

/// The GitOps engine a compile adds the objects of: the one `chosen`
/// (`--gitops`), else the platform's `gitops.engine`, if any.
pub fn engine(chosen: Option<platform::Engine>, platform: &Platform) -> Option<platform::Engine> {
    chosen.or(platform.gitops.as_ref().and_then(|g| g.engine))
}

/// The namespaces of the tenants with Kueue queues, each with the name of
/// its cohort's group: compiled with their cohort every time, never reused
/// apart ([`Options::reuse`]).
pub fn cohort_namespaces(platform: &Platform) -> BTreeMap<String, String> {
    let mut cohort_of = BTreeMap::new();
    for t in platform.tenants.iter().filter(|t| !t.queues.is_empty()) {
        for ns in t.namespace_list() {
            cohort_of.insert(ns, format!("{COHORT}{}", t.cohort_name()));
        }
    }
    cohort_of
}

/// The groups of a cluster's services and the platform's namespaced
/// objects, by name (a namespace, or [`COHORT`] and a cohort's name), with
/// the ClusterQueues of each cohort taken out of `shared` into its group.
/// Every rule and admission check reads the objects of one namespace, of
/// one cohort's tenants, and cluster-scoped ones (see [`crate::check`]),
/// which every group sees, so a group's findings do not depend on the
/// others.
fn groups<'s>(
    services: &'s [LoadedService],
    platform_objects: Vec<Object>,
    shared: &mut Vec<Object>,
    platform: &Platform,
) -> Vec<(String, Group<'s>)> {
    // The namespaces of the tenants with queues go with their cohort.
    let cohort_of = cohort_namespaces(platform);
    let key = |ns: &str| cohort_of.get(ns).cloned().unwrap_or_else(|| ns.to_string());
    let mut groups: BTreeMap<String, Group<'s>> = BTreeMap::new();
    let empty = || Group { services: Vec::new(), objects: Vec::new() };
    for s in services {
        groups.entry(key(s.service.namespace_or_default())).or_insert_with(empty).services.push(s);
    }
    for o in platform_objects {
        groups.entry(key(o.id.namespace.as_deref().unwrap_or_default())).or_insert_with(empty).objects.push(o);
    }
    // Kueue reads a ClusterQueue's cohort from `spec.cohortName` (v1beta2;
    // `spec.cohort` before): kubernetes-sigs/kueue apis/kueue/v1beta1
    // clusterqueue_types.go.
    let cohort = |o: &Object| {
        let v = o.value.at("/spec/cohortName").or_else(|| o.value.at("/spec/cohort"));
        v.and_then(serde_json::Value::as_str).map(str::to_string)
    };
    for o in std::mem::take(shared) {
        match cohort(&o).filter(|_| o.id.kind == "ClusterQueue") {
            Some(c) => groups.entry(format!("{COHORT}{c}")).or_insert_with(empty).objects.push(o),
            None => shared.push(o),
        }
    }
    groups.into_iter().collect()
}

impl Stage<'_> {
    /// Derives, renders and checks every service of one cluster, plus the
    /// CRD and the objects of the platform's tenants. Only error-level rules
    /// run: an error stops the compile; warnings are for `isvc check`. With
    /// the compilation, the workloads an autoscaler scales.
    fn compile<T: Held>(
        &self,
        services: &[LoadedService],
        platform: &Platform,
    ) -> Result<(Compilation<T>, BTreeSet<ObjectId>), Diagnostics> {
        let Checked {
            objects, mut diags, quota, mut findings, autoscaled, reused, kept_services, kept_objects, ..
        } = self.checked(services, platform, true)?;
        check::locate(&mut findings, services);
        diags.extend(findings.iter().map(check::Finding::to_diagnostic));
        diags.extend(check::annotation_problems(services));
        diags.sort();
        if diags.has_errors() {
            return Err(diags);
        }
        let compilation = Compilation {
            objects,
            warnings: diags,
            quota,
            clusters: Vec::new(),
            reused,
            kept_services,
            kept_objects: kept_objects.into_iter().map(|(ns, n)| ((None, ns), n)).collect(),
            autoscaled: BTreeSet::new(),
        };
        Ok((compilation, autoscaled))
    }

    /// One cluster's objects, rendered as [`Stage::compile`] renders them,
    /// and every rule's findings over them.
    fn examine<T: Held>(&self, services: &[LoadedService], platform: &Platform) -> Result<Examination<T>, Diagnostics> {
        let Checked { objects, mut findings, .. } = self.checked(services, platform, false)?;
        check::locate(&mut findings, services);
        Ok(Examination { objects, findings })
    }

    /// Renders, admits and checks one cluster's objects a [`Group`] at a
    /// time, keeping each group's objects as `T` once checked: a render
    /// never holds the objects of more than two groups, the one checked
    /// and the next, rendered meanwhile ([`Held::OVERLAP`]; one, for
    /// `render --stdout`). An error before the rules stops it, once every
    /// group has reported its errors. The rules' findings below error
    /// level are left out where `errors_only`.
    fn checked<'s, T: Held>(
        &self,
        services: &'s [LoadedService],
        platform: &Platform,
        errors_only: bool,
    ) -> Result<Checked<T>, Diagnostics> {
        let mut out = Checked {
            objects: Vec::new(),
            held: Vec::new(),
            diags: Diagnostics::new(),
            quota: Vec::new(),
            findings: Vec::new(),
            errors_only,
            autoscaled: BTreeSet::new(),
            reused: BTreeSet::new(),
            kept_services: BTreeMap::new(),
            kept_objects: BTreeMap::new(),
        };
        let diags = &mut out.diags;
        // The CRD's object (its schema generated, about 1 ms) made beside
        // the services' placements.
        let (crd, placed) = rayon::join(crd::object, || placements(services, platform));
        diags.extend(placed);
        diags.extend(crate::load::validate::routes(services, platform, self.label));
        diags.extend(crate::load::validate::scale_from_zero(services, platform));
        if diags.has_errors() {
            diags.sort();
            return Err(out.diags);
        }
        // The platform's objects: cluster-scoped ones every group sees.
        let mut shared = vec![crd];
        let mut namespaced = Vec::new();
        for o in tenancy::objects(platform, self.platform_file)
            .into_iter()
            .chain(derive::kueue::objects(platform, self.platform_file))
        {
            for p in typecheck::typecheck(&o.value) {
                diags.push(Diagnostic::error(format!("{}: {}", o.id, p.message)));
            }
            if o.id.namespace.is_some() { namespaced.push(o) } else { shared.push(o) }
        }
        diags.extend(kueue::admit_queues(platform, self.platform_file, self.platform_origin));
        let groups = groups(services, namespaced, &mut shared, platform);
        let whole = groups.len() == 1;
        // The namespaces of the groups compiled.
        let mut compiled = BTreeSet::new();
        let mut todo = Vec::new();
        for (namespace, group) in groups {
            if self.reuse.contains(&namespace) {
                out.reused.insert(namespace);
                continue;
            }
            compiled.extend(group.services.iter().map(|s| s.service.namespace_or_default().to_string()));
            compiled.extend(group.objects.iter().filter_map(|o| o.id.namespace.clone()));
            todo.push(group);
        }
        // A group is rendered while the one before it is checked (where
        // `T` allows it: [`Held::OVERLAP`]): sorting, indexing, admission
        // and most rules run on one thread, and the next group's derive and
        // render fill the other cores meanwhile (benches/README.md). At
        // most two groups' objects are alive at once. Where `T` holds one
        // group's objects at a time, the next group's services are derived
        // meanwhile, and rendered once the group checked is held: their
        // desired states (a few kilobytes each) are alive with its objects.
        // The errors of a group's derive and render join `diags` before its
        // own check, as one group after another would have them.
        // A large group checked in parts is derived as it is rendered, a
        // service at a time ([`Stage::render_skeletons`]).
        let derive = |group: Group<'s>| {
            let mut diags = Diagnostics::new();
            if T::PARTED && group.services.len() > self.parts.above {
                return (Derived::Parted(group.services), group.objects, diags, BTreeMap::new());
            }
            let desired = self.derive(&group.services, platform, &mut diags);
            let kept = self.kept_services(&desired);
            (Derived::Whole(desired), group.objects, diags, kept)
        };
        let render = |(derived, platform_objects, mut diags, mut kept): (Derived<'s>, Vec<Object>, Diagnostics, _)| {
            let (mut objects, parted) = match derived {
                Derived::Whole(desired) => {
                    let write_ahead = T::write_ahead(desired.len()).then_some(&kept);
                    (self.render(desired, write_ahead, &mut diags), None)
                }
                Derived::Parted(services) => {
                    let (objects, parted) = self.render_skeletons(&services, platform, &mut kept, &mut diags);
                    (objects, Some(parted))
                }
            };
            objects.extend(platform_objects);
            (objects, diags, kept, parted)
        };
        let mut todo = todo.into_iter();
        let mut next = todo.next().map(derive).map(render);
        while let Some((mut objects, diags, kept, parted)) = next.take() {
            out.diags.extend(diags);
            if whole {
                objects.append(&mut shared);
            }
            let following = todo.next();
            let (held, rendered) = {
                let (out, shared) = (&mut out, &shared);
                let check = || self.check_group(shared, objects, parted, services, platform, &kept, out);
                if T::OVERLAP {
                    rayon::join(check, || following.map(derive).map(render))
                } else {
                    let (held, derived) = rayon::join(check, || following.map(derive));
                    (held, derived.map(render))
                }
            };
            out.keep(held);
            // A group's services are its namespaces' own: the groups' lists
            // join without overlap.
            for (ns, names) in kept {
                out.kept_services.entry(ns).or_default().extend(names);
            }
            next = rendered;
        }
        // A namespace to keep of which nothing was read (its services' files
        // left unread, see `Options::reuse`) is left out as well.
        out.reused.extend(self.reuse.iter().filter(|n| !compiled.contains(*n)).cloned());
        if !shared.is_empty() {
            // Several groups: the cluster-scoped objects are checked among
            // themselves (no rule over one reads namespaced objects).
            let shared = std::mem::take(&mut shared);
            let held = self.check_group(&[], shared, None, services, platform, &BTreeMap::new(), &mut out);
            out.keep(held);
        }
        if out.diags.has_errors() {
            out.diags.sort();
            return Err(out.diags);
        }
        out.objects = Vec::with_capacity(out.held.iter().map(Vec::len).sum());
        for group in std::mem::take(&mut out.held) {
            out.objects.extend(group);
        }
        objects::sort(&mut out.objects);
        check::sort(&mut out.findings);
        // The quota table in the objects' order, as one group would give it.
        out.quota.sort_by(|a, b| (&a.namespace, &a.quota).cmp(&(&b.namespace, &b.quota)));
        Ok(out)
    }

    /// Indexes a group's `objects` with the `shared` cluster-scoped ones,
    /// admits them (quotas and Kueue's queues), runs every rule over them
    /// unless an error was found and annotates them for the GitOps engine,
    /// its errors in `out.diags`: the group's objects as `T`, for
    /// [`Checked::keep`], but those of the services `kept` (by namespace),
    /// whose files the caller holds. Where the group is checked in parts
    /// (`parted`, what renders each of its services again), `objects` are
    /// in the small form lookups read ([`Stage::render_skeletons`]) and the
    /// rules run a part at a time ([`Stage::check_parts`]).
    #[allow(clippy::too_many_arguments, reason = "the group, what it is checked against, and where the results go")]
    fn check_group<T: Held>(
        &self,
        shared: &[Object],
        mut objects: Vec<Object>,
        parted: Option<Parted<'_>>,
        services: &[LoadedService],
        platform: &Platform,
        kept: &BTreeMap<String, BTreeSet<String>>,
        out: &mut Checked<T>,
    ) -> Vec<T> {
        let diags = &mut out.diags;
        objects::sort(&mut objects);
        let picker = platform.gateway.as_ref().filter(|g| g.inference_extension).map(|g| &g.endpoint_picker);
        diags.extend(twice_rendered(&objects, services, picker.map(|p| p.service_suffix.as_str())));
        if parted.is_none() {
            // In parts, each service's objects were read as rendered.
            diags.extend(adapters::unmounted(&objects));
        }
        let cx = crate::k8s::index::Context::new(shared.iter().chain(&objects));
        diags.extend(kueue::admit_workloads(&cx, services, platform, self.platform_file));
        let (quota_errors, quota) = admission::quotas(&cx, &objects, services, self.platform_file);
        diags.extend(quota_errors);
        out.quota.extend(quota);
        // Only the GitOps engine's objects read which workloads an
        // autoscaler scales (`add_engine_objects`).
        if self.engine.is_some() {
            out.autoscaled.extend(gitops::autoscaled(objects.iter()));
        }
        if let Some(parted) = parted {
            let held = if out.diags.has_errors() {
                Vec::new()
            } else {
                self.check_parts(&cx, &objects, &parted, platform, kept, out)
            };
            drop(cx);
            // The skeletons freed on every core (24,000 at 2,000 services
            // with gateway routes: 4% of a render's time on one).
            objects.into_par_iter().for_each(drop);
            return held;
        }
        if !out.diags.has_errors() {
            let found = check::run_in(&cx, &objects, self.config);
            out.found(found);
        }
        drop(cx);
        self.hold(objects, kept, out)
    }

    /// The rules over a group checked in parts, whose objects `skeletons`
    /// (sorted) the index `cx` holds in the small form lookups read: each
    /// part's services ([`Parted`]) are derived and rendered again, checked
    /// whole and held. The group's objects as `T`, in the order of the
    /// parts.
    fn check_parts<T: Held>(
        &self,
        cx: &crate::k8s::index::Context<'_>,
        skeletons: &[Object],
        parted: &Parted<'_>,
        platform: &Platform,
        kept: &BTreeMap<String, BTreeSet<String>>,
        out: &mut Checked<T>,
    ) -> Vec<T> {
        let again = &parted.again;
        let derive = |i: usize| derive::derive(&again[i].service.service, platform).ok();
        let names: Vec<(&str, &str)> = again.iter().map(|a| (a.namespace.as_str(), a.name.as_str())).collect();
        let mut held = Vec::with_capacity(skeletons.len());
        // The services' objects rendered again: as many as the first time.
        let mut again_rendered = 0;
        for part in parts::split(skeletons, &names, self.parts.size) {
            // The weighted routes the part's services share: each route's
            // services derived again and given its backends, as the first
            // time.
            let routes: BTreeSet<usize> = part.services.iter().filter_map(|&i| again[i].route).collect();
            let sharing: HashMap<usize, derive::DesiredService> = routes
                .into_par_iter()
                .flat_map_iter(|r| {
                    let mut members: Vec<(usize, derive::DesiredService)> =
                        parted.routes[r].iter().filter_map(|&i| derive(i).map(|d| (i, d))).collect();
                    derive::gateway::share_routes(&mut members.iter_mut().map(|(_, d)| d).collect::<Vec<_>>());
                    members
                })
                .collect();
            // The derivation is pure: the objects rendered the first time.
            let mut objects: Vec<Object> = part
                .services
                .par_iter()
                .flat_map_iter(|&i| {
                    let derived;
                    let desired = match sharing.get(&i) {
                        Some(d) => d,
                        None => {
                            derived = derive(i);
                            derived.as_ref()?
                        }
                    };
                    render::render_service(self.templates, desired, Some(&(self.label)(again[i].service))).ok()
                })
                .flatten()
                .collect();
            drop(sharing);
            again_rendered += objects.len();
            objects.extend(part.others.iter().map(|&i| skeletons[i].clone()));
            objects::sort(&mut objects);
            let found = check::run_in(cx, &objects, self.config);
            out.found(found);
            held.extend(self.hold(objects, kept, out));
            // The part's values freed before the next part is rendered: at
            // 10,000 services in one namespace, freed on the way as the
            // next part rendered, `render --stdout` peaked 4 MiB higher
            // and was no faster (benches/README.md).
            crate::base::free::freed();
        }
        let first_rendered = skeletons.iter().filter(|o| o.owner.is_some()).count();
        if again_rendered != first_rendered {
            out.diags.push(
                Diagnostic::error(format!(
                    "internal error: a namespace checked in parts rendered {again_rendered} objects of its services \
                     the second time, {first_rendered} the first"
                ))
                .help("nothing was written; please report this"),
            );
        }
        held
    }

    /// A group's (or a part's) checked `objects` as `T`, annotated for the
    /// GitOps engine, but those of the services `kept`, which are counted.
    fn hold<T: Held>(
        &self,
        mut objects: Vec<Object>,
        kept: &BTreeMap<String, BTreeSet<String>>,
        out: &mut Checked<T>,
    ) -> Vec<T> {
        if let Some(engine) = self.engine {
            gitops::annotate(&mut objects, engine);
        }
        if !kept.is_empty() {
            let (held, unheld): (Vec<Object>, Vec<Object>) =
                objects.into_iter().partition(|o| match (&o.id.namespace, &o.owner) {
                    (Some(ns), Some(owner)) => !is_kept(kept, ns, owner),
                    _ => true,
                });
            for ns in unheld.iter().filter_map(|o| o.id.namespace.as_ref()) {
                *out.kept_objects.entry(ns.clone()).or_default() += 1;
            }
            // Freed on every core: after one change in a namespace of
            // 10,000 services, these are 28,000 objects, whose values took
            // 0.1 s to free on one (benches/README.md).
            unheld.into_par_iter().for_each(drop);
            objects = held;
        }
        T::hold(objects)
    }

    /// Whether the caller holds the files of the service `s`
    /// ([`Options::keep_files_of`]); its label is made only where it holds
    /// some.
    fn keeps_files_of(&self, s: &LoadedService) -> bool {
        !self.keep_files_of.is_empty() && self.keep_files_of.contains(&(self.label)(s))
    }

    /// The services among `desired` whose objects are checked but not held
    /// ([`Options::keep_files_of`]), by namespace: those of the files named
    /// there that share no weighted route.
    fn kept_services(&self, desired: &[Desired<'_>]) -> BTreeMap<String, BTreeSet<String>> {
        let mut kept: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (s, d, _) in desired {
            let shares_route = d.gateway.as_ref().is_some_and(|g| g.backend.weight.is_some());
            if !shares_route && self.keeps_files_of(s) {
                kept.entry(d.namespace.clone()).or_default().insert(d.name.clone());
            }
        }
        kept
    }

    /// The desired state of each of `services` that derives; the errors of
    /// those that do not go to `diags`. Services sharing a weighted route
    /// are left to render one HTTPRoute. Each desired state is boxed (one
    /// takes 4.3 KB inline), so the lists that hold a group's desired
    /// states while it renders stay small; with each, the worker that
    /// derived it, where `render` frees it.
    fn derive<'s>(
        &self,
        services: &[&'s LoadedService],
        platform: &Platform,
        diags: &mut Diagnostics,
    ) -> Vec<Desired<'s>> {
        // The errors boxed as well, so that the list's items stay small.
        let derived: Vec<Result<Desired<'s>, Box<Diagnostic>>> = services
            .par_iter()
            .map(|s| {
                derive::derive(&s.service, platform)
                    .map(|d| (*s, Box::new(d), MadeOn::here()))
                    .map_err(|e| Box::new(underived(s, &e)))
            })
            .collect();
        let mut desired = Vec::with_capacity(derived.len());
        for d in derived {
            match d {
                Ok(pair) => desired.push(pair),
                Err(e) => diags.push(*e),
            }
        }
        derive::gateway::share_routes(&mut desired.iter_mut().map(|(_, d, _)| &mut **d).collect::<Vec<_>>());
        desired
    }

    /// The objects of the `desired` services that rendered; the errors of
    /// those that did not go to `diags`. With `write_ahead`, each object's
    /// file is written as soon as its service is rendered
    /// ([`Object::write_ahead`]), but for the services it names (by
    /// namespace), whose files the caller holds.
    fn render(
        &self,
        desired: Vec<Desired<'_>>,
        write_ahead: Option<&BTreeMap<String, BTreeSet<String>>>,
        diags: &mut Diagnostics,
    ) -> Vec<Object> {
        let mut objects = self.cache_objects(&desired, diags);
        // The desired states are freed once the group is rendered, each on
        // the worker that derived it (`base::free`): freed as each service
        // rendered, on whichever worker rendered it, `render --stdout` at
        // 10,000 services in 20 namespaces took about 1.05x the CPU time,
        // and peaked no lower (groups of more than `Parts::above` services
        // derive and render in parts instead).
        let (rendered, desired): (Vec<_>, Vec<_>) = desired
            .into_par_iter()
            .map(|(s, d, made)| {
                let mut rendered = render::render_service(self.templates, &d, Some(&(self.label)(s)));
                let write = write_ahead.is_some_and(|kept| !is_kept(kept, &d.namespace, &d.name));
                if write && let Ok(objects) = &mut rendered {
                    objects.iter_mut().for_each(Object::write_ahead);
                }
                (rendered, (made, d))
            })
            .unzip();
        free_where_made(desired);
        for r in rendered {
            match r {
                Ok(o) => objects.extend(o),
                Err(d) => diags.extend(d),
            }
        }
        objects
    }

    /// Derives and renders a group to check in parts, a service at a time:
    /// each service's objects, once rendered and read by the checks of a
    /// service's own objects (its adapters mounted), kept in the small form
    /// lookups read ([`skeleton`](crate::k8s::skeleton::skeleton)), and its
    /// desired state freed (those of services that share a weighted route
    /// once every one is derived and given the route's backends, as
    /// [`Stage::derive`] does); the model cache's objects, which several
    /// services make together, whole. With the objects, what renders each
    /// service again; the services whose files the caller holds go to
    /// `kept` ([`Stage::kept_services`]).
    fn render_skeletons<'s>(
        &self,
        services: &[&'s LoadedService],
        platform: &Platform,
        kept: &mut BTreeMap<String, BTreeSet<String>>,
        diags: &mut Diagnostics,
    ) -> (Vec<Object>, Parted<'s>) {
        // What the skeletons hold alike, kept once (`k8s::skeleton`).
        let alike = crate::model::compact::Shared::default();
        let firsts: Vec<Result<First<'s>, Vec<Diagnostic>>> = services
            .par_iter()
            .map(|s| {
                let d = derive::derive(&s.service, platform).map_err(|e| vec![underived(s, &e)])?;
                let cache = d.cache.clone().map(|c| (Box::new(c), (self.label)(s)));
                let again = Again { service: s, namespace: d.namespace.clone(), name: d.name.clone(), route: None };
                if d.gateway.as_ref().is_some_and(|g| g.backend.weight.is_some()) {
                    return Ok(First { again, cache, rendered: Err(Box::new(d)) });
                }
                Ok(First { again, cache, rendered: Ok(self.skeletons_of(s, &d, &alike)) })
            })
            .collect();
        let mut again = Vec::with_capacity(firsts.len());
        // The services that share a weighted route, by place in `again`.
        let mut sharing: Vec<(usize, Box<derive::DesiredService>)> = Vec::new();
        let mut caches = Vec::new();
        let mut objects = Vec::new();
        let mut take = |rendered: Rendered, diags: &mut Diagnostics| match rendered {
            Ok((own, problems)) => {
                objects.extend(own);
                diags.extend(problems);
            }
            Err(problems) => diags.extend(problems),
        };
        for first in firsts {
            match first {
                Ok(First { again: a, cache, rendered }) => {
                    caches.extend(cache.map(|c| (c, a.namespace.clone())));
                    match rendered {
                        Ok(rendered) => {
                            if self.keeps_files_of(a.service) {
                                kept.entry(a.namespace.clone()).or_default().insert(a.name.clone());
                            }
                            take(rendered, diags);
                        }
                        Err(desired) => sharing.push((again.len(), desired)),
                    }
                    again.push(a);
                }
                Err(problems) => diags.extend(problems),
            }
        }
        // The services of a shared route: each given the route's backends,
        // and its route's services noted, to share it again a part at a time.
        let routes = derive::gateway::share_routes(&mut sharing.iter_mut().map(|(_, d)| &mut **d).collect::<Vec<_>>());
        let shared: Vec<Rendered> =
            sharing.par_iter().map(|(i, d)| self.skeletons_of(again[*i].service, d, &alike)).collect();
        for rendered in shared {
            take(rendered, diags);
        }
        // From places in `sharing` to places in `again`.
        let routes: Vec<Vec<usize>> =
            routes.into_iter().map(|members| members.into_iter().map(|p| sharing[p].0).collect()).collect();
        for (r, members) in routes.iter().enumerate() {
            for &i in members {
                again[i].route = Some(r);
            }
        }
        let plans = caches.iter().map(|((plan, label), ns)| (&**plan, ns.as_str(), Some(label.clone())));
        objects.extend(self.type_checked(derive::cache::objects(plans), diags));
        (objects, Parted { again, routes })
    }

    /// The objects of the service `s` of desired state `d` in the small form
    /// lookups read, and the errors of its adapters not mounted.
    fn skeletons_of(
        &self,
        s: &LoadedService,
        d: &derive::DesiredService,
        shared: &crate::model::compact::Shared,
    ) -> Rendered {
        let mut own = render::render_service(self.templates, d, Some(&(self.label)(s)))?;
        // In the group's order, as the group's check reads them.
        objects::sort(&mut own);
        let unmounted = adapters::unmounted(&own);
        Ok((own.into_iter().map(|o| crate::k8s::skeleton::skeleton(o, shared)).collect(), unmounted))
    }

    /// The model cache's objects of the `desired` services (claims and
    /// download Jobs several services share), type checked.
    fn cache_objects(&self, desired: &[Desired<'_>], diags: &mut Diagnostics) -> Vec<Object> {
        let cache_plans = desired
            .iter()
            .filter_map(|(s, d, _)| d.cache.as_ref().map(|c| (c, d.namespace.as_str(), Some((self.label)(s)))));
        self.type_checked(derive::cache::objects(cache_plans), diags)
    }

    /// `objects`, each type checked, its problems as errors in `diags`.
    fn type_checked(&self, objects: Vec<Object>, diags: &mut Diagnostics) -> Vec<Object> {
        for o in &objects {
            for p in typecheck::typecheck(&o.value) {
                diags.push(Diagnostic::error(format!("{}: {}", o.id, p.message)));
            }
        }
        objects
    }
}

/// A group's services, derived ([`Stage::derive`]), or to derive as they
/// are rendered, where the group is checked in parts
/// ([`Stage::render_skeletons`]).
enum Derived<'s> {
    Whole(Vec<Desired<'s>>),
    Parted(Vec<&'s LoadedService>),
}

/// What renders the services of a group checked in parts again (the
/// derivation is pure): each service, and the services of each weighted
/// route several share, which are derived together
/// ([`derive::gateway::share_routes`]).
struct Parted<'s> {
    again: Vec<Again<'s>>,
    /// Each shared route's services, by place in `again`.
    routes: Vec<Vec<usize>>,
}

/// A service of a group checked in parts: the service, its namespace and
/// name, and the weighted route it shares, if any (a place in
/// [`Parted::routes`]).
struct Again<'s> {
    service: &'s LoadedService,
    namespace: String,
    name: String,
    route: Option<usize>,
}

/// A service's objects in the small form lookups read, with the errors of
/// the checks of its own objects; or the errors of its render.
type Rendered = Result<(Vec<Object>, Vec<Diagnostic>), Vec<Diagnostic>>;

/// A service of a group checked in parts, derived: what renders it again,
/// its model cache's plan (with the label of its file), and its objects;
/// or, where it shares a weighted route, its desired state, rendered once
/// every service of the route is derived.
struct First<'s> {
    again: Again<'s>,
    cache: Option<(Box<derive::cache::CachePlan>, String)>,
    rendered: Result<Rendered, Box<derive::DesiredService>>,
}

/// The error of a service `s` whose derivation failed with `e`, at the
/// service.
fn underived(s: &LoadedService, e: &str) -> Diagnostic {
    Diagnostic::error(format!("cannot derive {}: {e}", s.service.name())).at(s.location(&[]))
}

/// Whether the service `name` of `namespace` is among the services `kept`
/// (by namespace, [`Stage::kept_services`]), whose files the caller holds.
fn is_kept(kept: &BTreeMap<String, BTreeSet<String>>, namespace: &str, name: &str) -> bool {
    kept.get(namespace).is_some_and(|names| names.contains(name))
}

/// A service, its desired state (boxed) and the worker that derived it
/// ([`Stage::derive`]).
type Desired<'s> = (&'s LoadedService, Box<derive::DesiredService>, MadeOn);

/// What [`per_cluster`] gives: what succeeded, by cluster, and the errors
/// of what failed, by cluster.
type PerCluster<T> = (Vec<(String, T)>, Vec<(String, Vec<Diagnostic>)>);

/// Runs `f` for every cluster the platform lists, with that cluster's
/// services and platform.
fn per_cluster<T>(
    services: &[LoadedService],
    platform: &Platform,
    f: impl Fn(&[LoadedService], &Platform) -> Result<T, Diagnostics>,
) -> PerCluster<T> {
    let mut done = Vec::new();
    let mut failed = Vec::new();
    for input in clusters::inputs(services, platform) {
        match f(&input.services, &input.platform) {
            Ok(t) => done.push((input.cluster.name.clone(), t)),
            Err(d) => failed.push((input.cluster.name.clone(), d.0)),
        }
    }
    (done, failed)
}

/// Items found per cluster: one that every cluster has is kept once, the
/// others are `named` after their cluster.
fn once_or_named<T: Clone + PartialEq>(per_cluster: &[(String, Vec<T>)], named: impl Fn(&mut T, &str)) -> Vec<T> {
    let all = per_cluster.len();
    let mut out: Vec<T> = Vec::new();
    for (cluster, items) in per_cluster {
        for item in items {
            if per_cluster.iter().filter(|(_, other)| other.contains(item)).count() == all {
                if !out.contains(item) {
                    out.push(item.clone());
                }
            } else {
                let mut item = item.clone();
                named(&mut item, cluster);
                out.push(item);
            }
        }
    }
    out
}

/// `--gitops` given and the platform file has no `gitops` section (or
/// there is no platform file): the error, at the platform document.
fn no_gitops_section(engine: platform::Engine, inputs: &Inputs) -> Diagnostic {
    let engine = match engine {
        platform::Engine::Argocd => "argocd",
        platform::Engine::Flux => "flux",
    };
    let why = "isvc does not guess where the output lives or where it goes; see docs/gitops.md";
    match (&inputs.platform_origin, &inputs.platform_file) {
        (Some(origin), file) => Diagnostic::error(format!(
            "--gitops {engine} needs a `gitops` section in the platform file: name, repoURL, revision and path"
        ))
        .at(origin.location(&[]))
        .help(format!("add a `gitops` section to {} ({why})", file.as_deref().unwrap_or("the platform file"))),
        (None, Some(file)) => Diagnostic::error(format!(
            "--gitops {engine} needs a `gitops` section in {file}: name, repoURL, revision and path"
        ))
        .help(why),
        (None, None) => Diagnostic::error(format!(
            "--gitops {engine} needs a platform file with a `gitops` section: name, repoURL, revision and path"
        ))
        .help(format!("pass --platform with a file that has one ({why})")),
    }
}

/// Adds the GitOps engine's objects (Argo CD or Flux) for every cluster's
/// tree, and orders the output for the engine. `autoscaled` holds each
/// cluster's workloads an autoscaler scales.
fn add_engine_objects<T: Held>(
    compiled: &mut Compilation<T>,
    platform: &Platform,
    engine: platform::Engine,
    autoscaled: &BTreeMap<Option<String>, BTreeSet<ObjectId>>,
    recorded: &BTreeMap<String, RecordedNamespace>,
    platform_file: Option<&str>,
) -> Result<(), Diagnostics> {
    // The namespaces reused ([`Options::reuse`]): none of their objects is
    // compiled, what the engine reads of them (in each cluster's tree) is
    // what the caller recorded.
    let reused: Vec<(&str, &RecordedNamespace)> =
        compiled.reused.iter().filter_map(|n| Some((n.as_str(), recorded.get(n)?))).collect();
    let mut targets: Vec<gitops::Target<'_>> = Vec::new();
    let clusters: Vec<Option<&platform::Cluster>> =
        if platform.clusters.is_empty() { vec![None] } else { platform.clusters.iter().map(Some).collect() };
    // Objects counted without being compiled: the reused namespaces' and
    // the kept services', by cluster and namespace.
    let mut counts: Vec<(Option<&str>, &str, usize)> = Vec::new();
    for c in clusters {
        let name = c.map(|c| c.name.clone());
        let mine = compiled.objects.iter().map(Held::object).filter(|o| o.cluster == name);
        let mut namespaces: BTreeSet<String> = mine.filter_map(|o| o.id.namespace.clone()).collect();
        // Gathered as sorted runs (the compiled namespaces', then each
        // reused one's), then sorted in one pass that merges the runs: at
        // 10,000 services some 9,000 workloads, which inserted into a set
        // one by one (with the Applications then made on one core) were 5%
        // of the samples of a re-render after one change with Argo CD.
        let mut autoscaled: Vec<&ObjectId> = autoscaled.get(&name).into_iter().flatten().collect();
        for (ns, r) in &reused {
            let objects = r.objects_in(&name);
            if objects > 0 {
                namespaces.insert(ns.to_string());
                counts.push((c.map(|c| c.name.as_str()), ns, objects));
            }
            autoscaled.extend(r.autoscaled.get(&name).into_iter().flatten());
        }
        autoscaled.sort();
        autoscaled.dedup();
        // The namespaces compiled that hold only services kept
        // ([`Options::keep_files_of`]; their autoscaled workloads were
        // found as they were checked).
        for ((cluster, ns), n) in compiled.kept_objects.iter().filter(|((cluster, _), n)| *cluster == name && **n > 0) {
            namespaces.insert(ns.clone());
            counts.push((cluster.as_deref(), ns, *n));
        }
        compiled.autoscaled.extend(autoscaled.iter().map(|id| (name.clone(), (*id).clone())));
        targets.push(gitops::Target { cluster: c, namespaces, autoscaled });
    }
    if let (platform::Engine::Argocd, Some(g)) = (engine, &platform.gitops) {
        compiled.warnings.0.extend(gitops::build_size_warnings(g, compiled.objects.iter().map(Held::object), &counts));
    }
    let mut extra = gitops::engine_objects(platform, engine, &targets, platform_file).map_err(Diagnostics::from)?;
    // Held in output order, as `Held::hold` takes them.
    objects::sort(&mut extra);
    compiled.objects.extend(T::hold(extra));
    objects::sort(&mut compiled.objects);
    Ok(())
}

/// A name rendered more than once: what renders it (each object's owner,
/// `None` for the platform's, in order), its namespace and its name.
type Clash<'o> = (Vec<Option<&'o str>>, Option<&'o str>, &'o str);

/// An error for each identity (API group, kind, namespace, name) two of a
/// group's `objects` share, sorted (so objects of one kind, namespace and
/// name follow each other): object names derive from service names, and a
/// service with a gateway route also names its endpoint picker's objects
/// `<service><picker_suffix>` (`-epp`), which a service of that name
/// renders too. A cluster
/// holds one object of an identity. Kustomize refuses the tree (its
/// resource map: "may not add resource with an already registered id"),
/// and so Flux; Argo CD applies only the last of them and warns
/// (`RepeatedResourceWarning`, argo-cd `controller/state.go`,
/// `DeduplicateTargetObjects`). Located at the service whose own name the
/// object bears, else at the last of them by name.
fn twice_rendered(objects: &[Object], services: &[LoadedService], picker_suffix: Option<&str>) -> Vec<Diagnostic> {
    // The kinds of each name rendered more than once.
    let mut found: BTreeMap<Clash<'_>, Vec<&str>> = BTreeMap::new();
    let same =
        |a: &Object, b: &Object| a.id.kind == b.id.kind && a.id.name == b.id.name && a.id.namespace == b.id.namespace;
    for run in objects.chunk_by(same).filter(|run| run.len() > 1) {
        // Of one kind, namespace and name: those of one API group as well.
        let mut groups: BTreeMap<&str, Vec<&Object>> = BTreeMap::new();
        for o in run {
            groups.entry(o.id.group()).or_default().push(o);
        }
        for twins in groups.into_values().filter(|t| t.len() > 1) {
            let mut owners: Vec<Option<&str>> = twins.iter().map(|o| o.owner.as_deref()).collect();
            owners.sort();
            let id = &twins[0].id;
            found.entry((owners, id.namespace.as_deref(), id.name.as_str())).or_default().push(&id.kind);
        }
    }
    if found.is_empty() {
        return Vec::new();
    }
    let by_name = crate::load::by_name(services);
    let name_path = [PathSegment::Key("metadata".into()), PathSegment::Key("name".into())];
    found
        .into_iter()
        .map(|((owners, namespace, name), kinds)| {
            let makers: Vec<String> = owners
                .iter()
                .map(|o| match o {
                    Some(owner) => format!("service {owner:?}"),
                    None => "the platform file".to_string(),
                })
                .collect();
            let owner = owners.iter().flatten().find(|o| **o == name).or_else(|| owners.iter().flatten().last());
            let location =
                owner.and_then(|o| by_name.get(&(namespace.unwrap_or_default(), *o))).map(|s| s.location(&name_path));
            let times = match owners.len() {
                2 => "twice".to_string(),
                n => format!("{n} times"),
            };
            let named = match namespace {
                Some(ns) => format!("{ns}/{name}"),
                None => name.to_string(),
            };
            Diagnostic::error(format!(
                "{} {named} {} rendered {times}, for {}: a cluster holds one object of a kind and name",
                and_list(&kinds),
                if kinds.len() == 1 { "is" } else { "are each" },
                and_list(&makers.iter().map(String::as_str).collect::<Vec<_>>())
            ))
            .at_opt(location)
            .note(match picker_suffix {
                Some(suffix) => format!(
                    "object names come from service names, and a service with a gateway route also names its \
                     endpoint picker's objects <service>{suffix}"
                ),
                None => "object names come from service names".to_string(),
            })
            .help("rename one of the services")
        })
        .collect()
}

/// `items` as prose: "a", "a and b", "a, b and c".
fn and_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// Checks every service's placement, with positions.
pub fn placements(services: &[LoadedService], platform: &Platform) -> Vec<Diagnostic> {
    // Each service on its own, on every core, in the services' order.
    let mut diags: Vec<Diagnostic> = services
        .par_iter()
        .flat_map_iter(|s| {
            let at =
                |path: &[&str]| s.location(&path.iter().map(|k| PathSegment::Key(k.to_string())).collect::<Vec<_>>());
            let placed =
                place(&s.service, platform).err().map(|(path, message)| Diagnostic::error(message).at(at(&path)));
            let refusals = [
                derive::accelerators::profile(&s.service.spec, platform).err(),
                derive::accelerators::image(&s.service.spec, platform).err(),
            ];
            let refused =
                refusals.into_iter().flatten().map(move |r| Diagnostic::error(r.message).at(at(&r.path)).help(r.help));
            placed.into_iter().chain(refused)
        })
        .collect();
    let mut homeless: BTreeMap<&str, &LoadedService> = BTreeMap::new();
    if !platform.tenants.is_empty() {
        for s in services {
            if platform.tenant_of(s.service.namespace_or_default()).is_none() {
                homeless.entry(s.service.namespace_or_default()).or_insert(s);
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn object(api_version: &str, kind: &str, name: &str, owner: Option<&str>) -> Object {
        let value =
            serde_json::json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": "ns"}});
        let o = Object::new(ObjectId::new(api_version, kind, Some("ns"), name), value);
        match owner {
            Some(owner) => o.owned_by(owner),
            None => o,
        }
    }

    fn messages(mut objects: Vec<Object>) -> Vec<String> {
        objects::sort(&mut objects);
        twice_rendered(&objects, &[], Some("-epp")).into_iter().map(|d| d.message).collect()
    }

    #[test]
    fn objects_of_one_identity_are_an_error_once_for_each_name_and_pair() {
        let twice = "ns/a-epp are each rendered twice, for service \"a\" and service \"a-epp\": \
                     a cluster holds one object of a kind and name";
        assert_eq!(
            messages(vec![
                object("v1", "Service", "a-epp", Some("a")),
                object("apps/v1", "Deployment", "a-epp", Some("a-epp")),
                object("v1", "Service", "a-epp", Some("a-epp")),
                object("apps/v1", "Deployment", "a-epp", Some("a")),
                object("v1", "Service", "a", Some("a")),
            ]),
            [format!("Service and Deployment {twice}")]
        );
        // One kind and name in two API groups is two objects; two versions
        // of one group, one.
        assert!(
            messages(vec![
                object("v1", "Service", "s", Some("s")),
                object("serving.knative.dev/v1", "Service", "s", Some("t")),
            ])
            .is_empty()
        );
        assert_eq!(
            messages(vec![
                object("autoscaling/v2", "HorizontalPodAutoscaler", "s", Some("s")),
                object("autoscaling/v1", "HorizontalPodAutoscaler", "s", None),
                object("autoscaling/v2", "HorizontalPodAutoscaler", "s", Some("t")),
            ]),
            ["HorizontalPodAutoscaler ns/s is rendered 3 times, for the platform file, service \"s\" and \
              service \"t\": a cluster holds one object of a kind and name"]
        );
    }
}
