//! Checks over the rendered objects of a run, after templates: the causes of
//! inference outages that can be seen before anything reaches a cluster.
//!
//! Each rule has a stable ID, a severity, a one-line summary, the symptom a
//! user would otherwise meet in the cluster, the fix, and a longer text for
//! `isvc check --explain ID`. `render` refuses to write output with an
//! error-level finding; `check` reports every finding.
//!
//! Rules live in one file per family and share the lookups of `Context` (`k8s::index`):
//!
//! - `network`: Services, selectors, ports, listen addresses;
//! - `probes`: startup, liveness and readiness probes;
//! - `resources`: GPUs, `/dev/shm`, CPU and memory;
//! - `scaling`: autoscalers, disruption budgets, rollouts;
//! - `image`: image references;
//! - `engine`: what vLLM needs to start and stop (tokens, drain, disk);
//! - `tenancy`: ResourceQuota and LimitRange admission;
//! - `gateway`: InferencePools' endpoint pickers: present, reachable, admitted.
//!
//! A family is a function over one object (run in parallel over all of
//! them); a family that wants the whole list instead (`fn(&[Object]) ->
//! Vec<Finding>`) is called in [`run_with`] after the others. Either way its
//! rules go into [`RULES`], which `--explain`, `--disable`, the annotation
//! and SARIF read. Findings are built with [`Finding::new`]. Rules can be
//! turned off per service with the [`DISABLE_ANNOTATION`] annotation and
//! per run with [`Config::disabled`]; both apply to every family.
//!
//! The compiler runs the rules one namespace at a time: the index then
//! holds that namespace's objects and the cluster-scoped ones. A rule reads
//! its object's own namespace (`cx.object(kind, namespace(o), ..)`,
//! `cx.selected(namespace(o), ..)`) and cluster-scoped objects (namespace
//! `""`), never another namespace; a rule over a cluster-scoped object
//! reads cluster-scoped objects only. The one exception, a ClusterQueue's
//! rule reading the workloads queued in its cohort, is why the compiler
//! checks a cohort's ClusterQueues with its tenants' namespaces.
//! `tests/it/groups.rs` compares the findings with those of one index over
//! every object.

mod engine;
mod gateway;
mod image;
mod network;
mod probes;
mod resources;
mod scaling;
pub(crate) use crate::k8s::index::{
    Context, Workload, container_name, containers, containers_in, init_containers, init_containers_in, labels,
    namespace, pod_templates, quantity, selector_matches,
};
pub(crate) use crate::model::compact::View;
mod security;
mod tenancy;

use crate::base::value::At;
use std::collections::{BTreeSet, HashMap, HashSet};

use rayon::prelude::*;
use serde_json::Value;

pub use crate::base::diagnostics::Severity;
use crate::base::diagnostics::{Diagnostic, Location, did_you_mean};
use crate::base::yaml::PathSegment;
use crate::load::LoadedService;
use crate::model::objects::{Object, ObjectId};
/// Model sizes, load times and loading peaks (shared with the derivation).
use crate::model::size as model;

pub use engine::{
    CACHE_OF_A_BRANCH, DRAIN_CUT_SHORT, GATED_MODEL_WITHOUT_TOKEN, LORA_SLOTS, MODEL_CACHE_UNBOUNDED,
    OFFLINE_WITHOUT_REVISION, RAY_WAIT_SHORTER_THAN_STARTUP, ROLLOUT_STOPS_ONLY_POD,
};
pub use gateway::{PICKER_ABSENT, PICKER_REFUSED, PICKER_UNREACHABLE};
pub use image::MUTABLE_IMAGE;
pub use network::{
    LISTENS_ON_LOOPBACK, SELECTOR_MATCHES_NO_POD, SERVER_PORT_NOT_DECLARED, TARGET_PORT_NOT_SERVED,
    WORKLOAD_SELECTOR_MISMATCH,
};
pub use probes::{LIVENESS_STRICTER_THAN_STARTUP, NO_STARTUP_PROBE, PROBE_NOT_SERVED, STARTUP_BUDGET_TOO_SHORT};
pub use resources::{
    CPU_LIMIT, GPU_REQUEST_NOT_LIMIT, MEMORY_BELOW_LOADING_PEAK, SHM_MISSING, SHM_TOO_SMALL, WEIGHTS_EXCEED_GPU_MEMORY,
};
pub use scaling::{
    AUTOSCALER_ON_ZERO_REPLICAS, AUTOSCALER_TARGET_MISSING, METRIC_NOT_SCRAPED, PDB_BLOCKS_DISRUPTION,
    REPLICAS_UNDER_AUTOSCALER, ROLLOUT_CANNOT_PROCEED,
};
pub use tenancy::{
    KUEUE_RECLAIM_INVERTS_PRIORITY, LIMIT_RANGE_INJECTS, LIMIT_RANGE_VIOLATION, PRIORITY_CLASS_NOT_OWNED,
    PRUNABLE_BY_GITOPS, QUOTA_BLOCKS_SCALE_UP, QUOTA_EXCEEDED,
};

/// The annotation of an InferenceService (copied to its objects) that turns
/// rules off for that service: a comma-separated list of rule IDs.
pub const DISABLE_ANNOTATION: &str = "isvc.ai.example.com/disable-checks";

/// A rule: stable ID, severity, and what it is about.
///
/// Rules are constants built with [`Rule::new`] and the text setters, so
/// adding a field never breaks a rule defined elsewhere:
///
/// ```
/// use isvc::check::{Rule, Severity};
/// const EXAMPLE: Rule = Rule::new("ISVC999", Severity::Warning, "one line: what is wrong")
///     .symptom("what the user sees in the cluster")
///     .fix("what to change")
///     .explain("the longer story for --explain");
/// assert_eq!(EXAMPLE.fix, "what to change");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    pub id: &'static str,
    pub severity: Severity,
    /// One line: what is wrong and why it matters.
    pub summary: &'static str,
    /// What breaks in a cluster: the symptom a user would otherwise see.
    pub symptom: &'static str,
    /// How to fix it.
    pub fix: &'static str,
    /// The longer text `isvc check --explain` prints: cause and background.
    pub explain: &'static str,
    /// The constant's name (`QUOTA_EXCEEDED`), set where the rule is
    /// registered in [`RULES`].
    pub name: &'static str,
}

impl Rule {
    pub const fn new(id: &'static str, severity: Severity, summary: &'static str) -> Rule {
        Rule { id, severity, summary, symptom: "", fix: "", explain: "", name: "" }
    }

    pub const fn symptom(self, symptom: &'static str) -> Rule {
        Rule { symptom, ..self }
    }

    pub const fn fix(self, fix: &'static str) -> Rule {
        Rule { fix, ..self }
    }

    pub const fn explain(self, explain: &'static str) -> Rule {
        Rule { explain, ..self }
    }

    pub const fn named(self, name: &'static str) -> Rule {
        Rule { name, ..self }
    }

    /// The rule's name in PascalCase (`QuotaExceeded`), as SARIF wants it.
    pub fn pascal_name(&self) -> String {
        self.name
            .split('_')
            .map(|w| {
                let mut c = w.chars();
                c.next()
                    .map(|f| f.to_ascii_uppercase().to_string() + &c.as_str().to_ascii_lowercase())
                    .unwrap_or_default()
            })
            .collect()
    }

    pub fn severity_name(&self) -> &'static str {
        match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }

    /// The text of `isvc check --explain ID`.
    pub fn long_text(&self) -> String {
        let mut out = format!("{} ({}): {}\n", self.id, self.severity_name(), self.summary);
        for (title, text) in [("Symptom", self.symptom), ("Cause", self.explain), ("Fix", self.fix)] {
            if !text.is_empty() {
                out.push_str(&format!("\n{title}:\n{}\n", wrap(text, 78, "  ")));
            }
        }
        let when = match self.severity {
            Severity::Error => "`isvc render` refuses to write output with this finding; `isvc check` reports it.",
            Severity::Warning => "A warning: `isvc check` reports it; `isvc render` writes the output anyway.",
        };
        out.push_str(&format!("\nSeverity:\n{}\n", wrap(when, 78, "  ")));
        out.push_str(&format!(
            "\nDisable:\n  for one service, annotate the InferenceService:\n    metadata:\n      annotations:\n        \
             {DISABLE_ANNOTATION}: \"{id}\"\n  for one run: isvc check --disable {id} (render takes the same flag)\n",
            id = self.id
        ));
        out
    }
}

/// Word-wraps `text` to `width` columns, each line indented by `indent`.
fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut lines = Vec::new();
    for paragraph in text.split("\n\n") {
        let mut line = String::new();
        for word in paragraph.split_whitespace() {
            if !line.is_empty() && indent.len() + line.len() + 1 + word.len() > width {
                lines.push(format!("{indent}{line}"));
                line.clear();
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        lines.push(format!("{indent}{line}"));
        lines.push(String::new());
    }
    lines.pop();
    lines.join("\n")
}

/// Every rule, in ID order.
/// Registers rules, naming each after its constant (`QUOTA_EXCEEDED` is
/// `QuotaExceeded` in SARIF).
macro_rules! registry {
    ($($rule:ident),* $(,)?) => {
        &[$($rule.named(stringify!($rule))),*]
    };
}

use security::{
    CAPABILITIES_KEPT, HOST_NAMESPACES, HOST_PATH, NO_MEMORY_LIMIT, NO_SECCOMP_PROFILE, PRIVILEGE_ESCALATION,
    RUNS_AS_ROOT, SERVICE_ACCOUNT_TOKEN, WRITABLE_ROOT_FILESYSTEM,
};

pub const RULES: &[Rule] = registry![
    SELECTOR_MATCHES_NO_POD,
    TARGET_PORT_NOT_SERVED,
    LISTENS_ON_LOOPBACK,
    GPU_REQUEST_NOT_LIMIT,
    AUTOSCALER_TARGET_MISSING,
    WORKLOAD_SELECTOR_MISMATCH,
    SERVER_PORT_NOT_DECLARED,
    NO_STARTUP_PROBE,
    STARTUP_BUDGET_TOO_SHORT,
    LIVENESS_STRICTER_THAN_STARTUP,
    PROBE_NOT_SERVED,
    SHM_MISSING,
    SHM_TOO_SMALL,
    CPU_LIMIT,
    MEMORY_BELOW_LOADING_PEAK,
    AUTOSCALER_ON_ZERO_REPLICAS,
    REPLICAS_UNDER_AUTOSCALER,
    PDB_BLOCKS_DISRUPTION,
    ROLLOUT_CANNOT_PROCEED,
    MUTABLE_IMAGE,
    QUOTA_EXCEEDED,
    QUOTA_BLOCKS_SCALE_UP,
    LIMIT_RANGE_VIOLATION,
    METRIC_NOT_SCRAPED,
    LIMIT_RANGE_INJECTS,
    KUEUE_RECLAIM_INVERTS_PRIORITY,
    PRUNABLE_BY_GITOPS,
    PRIORITY_CLASS_NOT_OWNED,
    GATED_MODEL_WITHOUT_TOKEN,
    DRAIN_CUT_SHORT,
    ROLLOUT_STOPS_ONLY_POD,
    MODEL_CACHE_UNBOUNDED,
    RAY_WAIT_SHORTER_THAN_STARTUP,
    LORA_SLOTS,
    OFFLINE_WITHOUT_REVISION,
    PICKER_ABSENT,
    PICKER_UNREACHABLE,
    PICKER_REFUSED,
    WEIGHTS_EXCEED_GPU_MEMORY,
    CACHE_OF_A_BRANCH,
    RUNS_AS_ROOT,
    PRIVILEGE_ESCALATION,
    CAPABILITIES_KEPT,
    NO_SECCOMP_PROFILE,
    WRITABLE_ROOT_FILESYSTEM,
    SERVICE_ACCOUNT_TOKEN,
    NO_MEMORY_LIMIT,
    HOST_NAMESPACES,
    HOST_PATH,
];

/// The rule with ID `id` (case-insensitive).
pub fn rule(id: &str) -> Option<Rule> {
    RULES.iter().find(|r| r.id.eq_ignore_ascii_case(id.trim())).copied()
}

/// An error for an ID that names no rule, with the closest ID as help.
pub fn unknown_rule(id: &str) -> Diagnostic {
    let d = Diagnostic::error(format!("no rule has the ID \"{id}\""));
    match did_you_mean(id, RULES.iter().map(|r| r.id)) {
        Some(m) => d.help(format!("did you mean {m}?")),
        None => d.help(format!("rule IDs run from {} to {}", RULES[0].id, RULES[RULES.len() - 1].id)),
    }
}

/// Options of a check run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    /// Rule IDs to skip everywhere (`--disable`).
    pub disabled: BTreeSet<String>,
}

impl Config {
    /// A config that disables the rules listed in `lists` (each a
    /// comma-separated list of IDs, as `--disable` takes them). Unknown IDs
    /// are errors.
    pub fn with_disabled<S: AsRef<str>>(lists: &[S]) -> Result<Config, Vec<Diagnostic>> {
        let mut disabled = BTreeSet::new();
        let mut errors = Vec::new();
        for id in lists.iter().flat_map(|l| split_ids(l.as_ref())) {
            match rule(id) {
                Some(r) => {
                    disabled.insert(r.id.to_string());
                }
                None => errors.push(unknown_rule(id)),
            }
        }
        if errors.is_empty() { Ok(Config { disabled }) } else { Err(errors) }
    }
}

fn split_ids(list: &str) -> impl Iterator<Item = &str> {
    list.split([',', ' ', '\n', '\t']).map(str::trim).filter(|s| !s.is_empty())
}

/// A finding: the rule, the object and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub rule: Rule,
    /// The object, as `Kind namespace/name`.
    pub object: String,
    /// The input file the object was rendered from, if any.
    pub source: Option<String>,
    pub message: String,
    /// The object's identity.
    pub id: ObjectId,
    /// The InferenceService the object belongs to, if any.
    pub owner: Option<String>,
    /// Where in the input the service is defined, once [`locate`]d.
    pub location: Option<Location>,
}

impl Finding {
    /// A finding of `rule` on `object`. Rules in any module build findings
    /// with this, so new fields get their value here.
    pub fn new(rule: Rule, object: &Object, message: impl Into<String>) -> Finding {
        Finding {
            rule,
            object: object.id.to_string(),
            source: object.source.clone(),
            message: message.into(),
            id: object.id.clone(),
            owner: object.owner.clone(),
            location: None,
        }
    }

    /// The file to point at: the located input, else the object's source.
    pub fn file(&self) -> Option<String> {
        match &self.location {
            Some(l) => Some(l.path().display().to_string().replace('\\', "/")),
            None => self.source.clone(),
        }
    }

    /// The line of the service definition, where known.
    pub fn line(&self) -> Option<usize> {
        self.location.as_ref().and_then(|l| l.span).map(|s| s.start.line)
    }

    /// The finding as a diagnostic: message, location, symptom, fix.
    pub fn to_diagnostic(&self) -> Diagnostic {
        let mut message = format!("{} [{}]: {}", self.object, self.rule.id, self.message);
        if let (None, Some(src)) = (&self.location, &self.source) {
            message.push_str(&format!(" (from {src})"));
        }
        let mut d = Diagnostic::error(message).at_opt(self.location.clone());
        d.severity = self.rule.severity;
        if !self.rule.symptom.is_empty() {
            d = d.note(format!("in a cluster: {}", self.rule.symptom));
        }
        d.help(if self.rule.fix.is_empty() { self.rule.summary } else { self.rule.fix })
    }

    fn sort_key(&self) -> (Option<String>, Option<usize>, &ObjectId, &str, &str) {
        (self.file(), self.line(), &self.id, self.rule.id, &self.message)
    }
}

/// Runs every rule over `objects`.
pub fn run(objects: &[Object]) -> Vec<Finding> {
    run_with(objects, &Config::default())
}

/// Runs every rule over `objects`, without the rules `config` or the
/// objects' own annotations disable. Findings come sorted. Linear in the
/// number of objects: lookups are indexed once per run.
pub fn run_with(objects: &[Object], config: &Config) -> Vec<Finding> {
    let found = run_in(&Context::new(objects), objects, config);
    // Every build with debug assertions (every test build) runs the rules
    // a second time with each lookup answered as a namespace checked in
    // parts answers it (`compiler::parts`): from the skeletons of the
    // services' objects, the others (the platform's) whole. A rule that
    // reads a field of a looked-up object its skeleton lacks fails each
    // test that calls this, not only the harness's compiles.
    #[cfg(debug_assertions)]
    {
        let shared = crate::model::compact::Shared::default();
        let skeleton = |o: &Object| match o.owner {
            Some(_) => crate::k8s::skeleton::skeleton(o.clone(), &shared),
            None => o.clone(),
        };
        let skeletons: Vec<Object> = objects.iter().map(skeleton).collect();
        let parted = run_in(&Context::new(&skeletons), objects, config);
        debug_assert!(
            found == parted,
            "the rules found other things with lookups answered from skeletons (k8s::skeleton lacks a field a \
             rule reads of a looked-up object):\nwhole: {found:#?}\nskeletons: {parted:#?}"
        );
    }
    found
}

/// [`run_with`] over an index of `objects` the caller has built already.
pub(crate) fn run_in(cx: &Context<'_>, objects: &[Object], config: &Config) -> Vec<Finding> {
    let families: [fn(&Context<'_>, &Object, &mut Vec<Finding>); 8] = [
        network::check,
        probes::check,
        resources::check,
        scaling::check,
        image::check,
        tenancy::check,
        engine::check,
        gateway::check,
    ];
    let mut findings: Vec<Finding> = objects
        .par_iter()
        .flat_map_iter(|o| {
            let mut out = Vec::new();
            for family in families {
                family(cx, o, &mut out);
            }
            out
        })
        .collect();
    // Families over the whole list of objects:
    findings.extend(security::check(objects));
    let disabled = disabled_by_annotation(objects);
    findings.retain(|f| {
        !config.disabled.contains(f.rule.id)
            && !disabled.get(&annotated(&f.id, f.owner.as_deref())).is_some_and(|ids| ids.contains(f.rule.id))
    });
    sort(&mut findings);
    findings
}

/// Sorts findings into report order, each once.
pub(crate) fn sort(findings: &mut Vec<Finding>) {
    findings.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    findings.dedup();
}

/// What an annotation that disables rules covers: every object of a
/// service, or an object of no service alone.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Annotated<'a> {
    /// The objects of the service of this namespace and name.
    Service(Option<&'a str>, &'a str),
    /// The object of this identity, of no service (the platform's).
    Object(&'a ObjectId),
}

/// Whose annotation covers the object `id` of `owner`: its service's, else
/// its own (a platform object named as a service is not the service's).
fn annotated<'a>(id: &'a ObjectId, owner: Option<&'a str>) -> Annotated<'a> {
    match owner {
        Some(owner) => Annotated::Service(id.namespace.as_deref(), owner),
        None => Annotated::Object(id),
    }
}

/// Rule IDs disabled by annotation, by what the annotation covers.
fn disabled_by_annotation(objects: &[Object]) -> HashMap<Annotated<'_>, HashSet<String>> {
    let mut out: HashMap<Annotated<'_>, HashSet<String>> = HashMap::new();
    for o in objects {
        let Some(list) = o.value.at("/metadata/annotations").and_then(|a| a.get(DISABLE_ANNOTATION)) else {
            continue;
        };
        out.entry(annotated(&o.id, o.owner.as_deref()))
            .or_default()
            .extend(split_ids(list.as_str().unwrap_or_default()).filter_map(rule).map(|r| r.id.to_string()));
    }
    out
}

/// Points each finding at the definition of its service (the line of its
/// `metadata.name`), so reports can show the file and line.
pub fn locate(findings: &mut [Finding], services: &[LoadedService]) {
    // A render of a fleet with no error finds nothing to locate: the map
    // of its services (10,000 at a time) is not built for nothing.
    if findings.is_empty() {
        return;
    }
    let by_name = crate::load::by_name(services);
    // On every core: the first finding of a service parses its file again
    // for positions (`LoadedService::node`; at 10,000 services `check`
    // locates 5,960 warnings in most of the files).
    findings.par_iter_mut().for_each(|f| {
        let (Some(ns), Some(owner)) = (f.id.namespace.as_deref(), f.owner.as_deref()) else { return };
        if let Some(s) = by_name.get(&(ns, owner)) {
            f.location = Some(s.location(&[PathSegment::Key("metadata".into()), PathSegment::Key("name".into())]));
        }
    });
}

/// Warnings for IDs in [`DISABLE_ANNOTATION`] annotations that name no rule.
pub fn annotation_problems(services: &[LoadedService]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for s in services {
        let Some(list) = s.service.metadata.annotations.as_ref().and_then(|a| a.get(DISABLE_ANNOTATION)) else {
            continue;
        };
        let path = ["metadata", "annotations", DISABLE_ANNOTATION].map(|k| PathSegment::Key(k.to_string()));
        for id in split_ids(list).filter(|id| rule(id).is_none()) {
            let mut d = unknown_rule(id).at(s.location(&path));
            d.severity = Severity::Warning;
            d.message.push_str(&format!(" in annotation {DISABLE_ANNOTATION}; it disables nothing"));
            out.push(d);
        }
    }
    out
}

/// A value as written, for messages: strings bare, the rest as JSON.
pub(crate) fn show(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => "nothing".to_string(),
    }
}

pub(crate) use crate::model::size::gib;

/// The command line of a container (`command` then `args`), split into
/// flags and positional words the way a server's argument parser sees it.
pub(crate) struct CommandLine<'a> {
    /// (flag, value) pairs in order; the value is `None` for a bare flag.
    flags: Vec<(&'a str, Option<&'a str>)>,
    positional: Vec<&'a str>,
    pub words: Vec<&'a str>,
    image: &'a str,
    /// Whether the container replaces the image's entrypoint (`command`).
    own_command: bool,
}

impl<'a> CommandLine<'a> {
    pub fn of(container: &'a Value) -> CommandLine<'a> {
        let raw: Vec<&str> = ["command", "args"]
            .iter()
            .filter_map(|k| container.field(k).and_then(Value::as_array))
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        // A shell script (`sh -c "vllm serve ..."`) is read word by word.
        let mut words = Vec::with_capacity(raw.len());
        for (i, w) in raw.iter().enumerate() {
            if i > 0 && raw[i - 1] == "-c" {
                words.extend(w.split_whitespace());
            } else {
                words.push(*w);
            }
        }
        let mut flags = Vec::new();
        let mut positional = Vec::new();
        let is_flag = |w: &str| w.len() > 1 && w.starts_with('-') && !w[1..].starts_with(|c: char| c.is_ascii_digit());
        let mut i = 0;
        while i < words.len() {
            let w = words[i];
            if !is_flag(w) {
                positional.push(w);
            } else if let Some((name, value)) = w.split_once('=') {
                flags.push((name, Some(value)));
            } else if words.get(i + 1).is_some_and(|next| !is_flag(next)) {
                flags.push((w, Some(words[i + 1])));
                i += 1;
            } else {
                flags.push((w, None));
            }
            i += 1;
        }
        let image = container.field("image").and_then(Value::as_str).unwrap_or_default();
        let own_command = container.field("command").and_then(Value::as_array).is_some_and(|c| !c.is_empty());
        CommandLine { flags, positional, words, image, own_command }
    }

    /// Every value given to any of `names`.
    pub fn values<'s>(&'s self, names: &'s [&'s str]) -> impl Iterator<Item = &'a str> + 's {
        self.flags.iter().filter(move |(f, _)| names.contains(f)).filter_map(|(_, v)| *v)
    }

    /// The last value given to any of `names` (the one a parser keeps).
    pub fn value(&self, names: &[&str]) -> Option<&'a str> {
        self.values(names).last()
    }

    fn number(&self, names: &[&str]) -> Option<i64> {
        self.value(names).and_then(|v| v.parse().ok())
    }

    /// Whether the container runs vLLM: its command line says so, or its
    /// image does and it keeps the image's entrypoint (a helper that runs
    /// its own command in a vLLM image, such as the model cache's marker
    /// step, is not the server).
    pub fn is_vllm(&self) -> bool {
        let has = |s: &str| s.to_ascii_lowercase().contains("vllm");
        (has(self.image) && !self.own_command) || self.words.iter().any(|w| has(w))
    }

    /// The model the server loads: `--model`, or the word after `serve`.
    pub fn model(&self) -> Option<&'a str> {
        self.value(&["--model"]).or_else(|| {
            let at = self.positional.iter().position(|w| *w == "serve")?;
            self.positional.get(at + 1).copied()
        })
    }

    /// Whether the container is a model server (names a model or runs vLLM);
    /// rules about loading weights apply to these only, not to sidecars.
    pub fn serves_model(&self) -> bool {
        !self.downloads() && (self.model().is_some() || self.is_vllm())
    }

    /// Whether the container runs the Hugging Face CLI's download (a model
    /// cache Job, even in a vLLM image): it fetches weights, it does not
    /// load them.
    pub fn downloads(&self) -> bool {
        self.words.windows(2).any(|w| matches!(w[0], "hf" | "huggingface-cli") && w[1] == "download")
    }

    /// The repository a Hugging Face CLI download fetches: the word after
    /// `download`.
    pub fn downloaded_repo(&self) -> Option<&'a str> {
        if !self.downloads() {
            return None;
        }
        let at = self.positional.iter().position(|w| *w == "download")?;
        self.positional.get(at + 1).copied()
    }

    /// The size of the model the server loads, as far as its name and the
    /// quantization and dtype flags tell.
    pub fn model_size(&self) -> Option<model::ModelSize> {
        model::ModelSize::guess(self.model()?, self.value(&["--quantization", "-q"]), self.value(&["--dtype"]))
    }

    /// The port the server listens on: `--port`, or vLLM's default 8000.
    pub fn port(&self) -> Option<i64> {
        self.number(&["--port"]).or_else(|| self.is_vllm().then_some(8000))
    }

    /// Worker processes sharing the pod's GPUs: tensor x pipeline x data
    /// parallel sizes (1 when none is given).
    pub fn ranks(&self) -> i64 {
        let size = |names: &[&str]| self.number(names).unwrap_or(1).max(1);
        size(&["--tensor-parallel-size", "-tp", "--tp", "--tp-size"])
            * size(&["--pipeline-parallel-size", "-pp"])
            * size(&["--data-parallel-size", "-dp"])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_services_annotation_covers_its_objects_not_a_platform_object_of_its_name() {
        let annotated_object = |kind: &str, annotations: Value| {
            let value = json!({"apiVersion": "v1", "kind": kind,
                "metadata": {"name": "container-limits", "namespace": "ml", "annotations": annotations}});
            Object::new(ObjectId::of(&value).unwrap(), value)
        };
        // The service `container-limits` turns ISVC014 off; the platform's
        // LimitRange of that name is not its object.
        let service = annotated_object("Service", json!({DISABLE_ANNOTATION: "ISVC014"})).owned_by("container-limits");
        let platform = annotated_object("LimitRange", json!({}));
        let objects = [service, platform];
        let disabled = disabled_by_annotation(&objects);
        let off =
            |o: &Object| disabled.get(&annotated(&o.id, o.owner.as_deref())).is_some_and(|ids| ids.contains("ISVC014"));
        assert!(off(&objects[0]));
        assert!(!off(&objects[1]));
        // An object of no service is covered by its own annotation.
        let own = annotated_object("LimitRange", json!({DISABLE_ANNOTATION: "ISVC014"}));
        let objects = [own];
        let disabled = disabled_by_annotation(&objects);
        assert!(disabled.get(&annotated(&objects[0].id, None)).is_some_and(|ids| ids.contains("ISVC014")));
    }

    #[test]
    fn rule_ids_are_unique_sequential_and_documented() {
        // Workload rules count up from ISVC001, the blocks of later rule
        // families from ISVC040 and ISVC050, security rules from ISVC100;
        // each block without gaps.
        for (start, end) in [(1, 40), (40, 50), (50, 60), (60, 70), (70, 100), (100, 1000)] {
            let block: Vec<&Rule> =
                RULES.iter().filter(|r| r.id[4..].parse::<usize>().is_ok_and(|n| (start..end).contains(&n))).collect();
            for (i, r) in block.iter().enumerate() {
                assert_eq!(r.id, format!("ISVC{:03}", i + start));
            }
        }
        assert!(RULES.windows(2).all(|w| w[0].id < w[1].id), "rule IDs are unique and in order");
        for r in RULES {
            assert!(
                !r.summary.is_empty() && !r.symptom.is_empty() && !r.fix.is_empty() && !r.explain.is_empty(),
                "{}",
                r.id
            );
        }
    }

    #[test]
    fn command_lines_read_like_a_parser() {
        let c = json!({"image": "vllm/vllm-openai:v0.11.0", "args": ["--model", "m", "--port=9000", "-tp", "4", "--enforce-eager"]});
        let cl = CommandLine::of(&c);
        assert_eq!(cl.model(), Some("m"));
        assert_eq!(cl.port(), Some(9000));
        assert_eq!(cl.ranks(), 4);
        assert!(cl.is_vllm());
        // A helper in a vLLM image with a command of its own is not the server;
        // a download names its repository.
        let helper = json!({"image": "vllm/vllm-openai:v0.11.0", "command": ["/bin/sh", "-c", "touch \"$MARKER\""]});
        assert!(!CommandLine::of(&helper).is_vllm() && !CommandLine::of(&helper).serves_model());
        let download = json!({"image": "vllm/vllm-openai:v0.11.0", "command": ["hf"], "args": ["download", "org/m", "--revision", "main"]});
        let cl = CommandLine::of(&download);
        assert!(cl.downloads() && !cl.serves_model());
        assert_eq!((cl.downloaded_repo(), cl.value(&["--revision"])), (Some("org/m"), Some("main")));
        assert!(CommandLine::of(&json!({"image": "vllm/vllm-openai:v0.11.0", "args": ["--model", "m"]})).is_vllm());
        let shell = json!({"image": "python", "command": ["sh", "-c", "vllm serve Qwen/Qwen3-8B --host 0.0.0.0"]});
        let cl = CommandLine::of(&shell);
        assert_eq!(cl.model(), Some("Qwen/Qwen3-8B"));
        assert_eq!(cl.port(), Some(8000));
        assert_eq!(cl.value(&["--host"]), Some("0.0.0.0"));
        // Arguments are not split at spaces, outside a shell script.
        let spaced =
            json!({"image": "vllm/vllm-openai:v0.11.0", "args": ["--model", "/models/my model", "--port", "8001"]});
        assert_eq!(CommandLine::of(&spaced).model(), Some("/models/my model"));
        // A flag's value never starts with a dash: `--model` gets nothing here.
        let odd = json!({"image": "server", "args": ["--model", "--port", "x"]});
        let cl = CommandLine::of(&odd);
        assert_eq!(cl.model(), None);
        assert_eq!(cl.port(), None);
    }

    #[test]
    fn selectors_follow_kubernetes() {
        let labels = json!({"app": "a", "tier": "gpu"});
        let l = labels.as_object();
        assert!(selector_matches(&json!({"matchLabels": {"app": "a"}}), l));
        assert!(!selector_matches(&json!({"matchLabels": {"app": "b"}}), l));
        assert!(selector_matches(
            &json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gpu"]}]}),
            l
        ));
        assert!(!selector_matches(
            &json!({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["gpu"]}]}),
            l
        ));
        assert!(selector_matches(&json!({"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}), l));
        assert!(selector_matches(&json!({}), l));
    }

    #[test]
    fn disable_lists_are_checked() {
        let c = Config::with_disabled(&["isvc014, ISVC009", "ISVC001"]).unwrap();
        assert_eq!(c.disabled.iter().map(String::as_str).collect::<Vec<_>>(), ["ISVC001", "ISVC009", "ISVC014"]);
        let err = Config::with_disabled(&["ISVC14"]).unwrap_err();
        assert_eq!(err[0].help.as_deref(), Some("did you mean ISVC014?"));
    }

    #[test]
    fn explain_text_says_how_to_disable() {
        let text = CPU_LIMIT.long_text();
        assert!(text.starts_with("ISVC014 (warning): "), "{text}");
        assert!(text.contains("Symptom:") && text.contains("Fix:") && text.contains("Cause:"), "{text}");
        assert!(text.contains("isvc.ai.example.com/disable-checks: \"ISVC014\""), "{text}");
        assert!(text.lines().all(|l| l.len() <= 100), "{text}");
    }
}
