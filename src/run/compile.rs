//! The inputs of a run loaded and compiled: what a run compiles from
//! ([`Sources`]), what it tells along the way ([`Progress`]) and leaves to
//! its caller ([`Remains`]), and the compile of every namespace or of those
//! a change touches.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::base::diagnostics::{Diagnostic, Diagnostics};
use crate::base::digest::Digest;
use crate::base::paths::{relative_to, slash};
use crate::check;
use crate::compiler::{self, Compilation, Compiler, Examination, Options};
use crate::emit::manifest::{self, Manifest, Selection};
use crate::emit::plan;
use crate::load::{self, LoadedService, files::absolute};
use crate::model::objects::{self, Held, Object};
use crate::model::platform::Engine;
use crate::render::Templates;

/// What a run compiles: the input paths (`-` for standard input), and the
/// settings that decide its output besides the services.
#[derive(Clone, Debug, Default)]
pub struct Sources {
    /// InferenceService files or directories.
    pub paths: Vec<PathBuf>,
    /// The platform file; built-in defaults without one.
    pub platform: Option<PathBuf>,
    /// The directory of template overrides; else the platform file's.
    pub templates: Option<PathBuf>,
    /// The GitOps engine, over the platform file's.
    pub gitops: Option<Engine>,
    /// Rules turned off: IDs, comma-separated or one by one.
    pub disable: Vec<String>,
    /// Only this cluster of the platform file's.
    pub cluster: Option<String>,
}

/// Where a run tells what it finds along the way, as soon as it finds it:
/// a compile's warnings, and notes a verbose run shows. Errors are not told
/// but returned.
pub trait Progress {
    /// Warnings (and notes) a compile or load found.
    fn warnings(&self, found: &Diagnostics);
    /// A line for a verbose run.
    fn note(&self, line: &str);
}

/// What a run read, compiled and wrote, left for its caller to drop: a
/// process about to exit may [`leave`](Remains::leave) it instead, where
/// freeing tens of thousands of paths, texts and values one by one would
/// only delay the exit (at 10,000 services, 0.6 s on one core after
/// `plan`).
#[derive(Default)]
pub struct Remains(Vec<Box<dyn std::any::Any>>);

impl Remains {
    pub(super) fn keep<T: 'static>(&mut self, t: T) {
        self.0.push(Box::new(t));
    }

    /// Frees nothing: everything goes with the process.
    pub fn leave(self) {
        std::mem::forget(self);
    }
}

/// The budget of this run (alias expansions, bytes read), shared by every
/// input: the service files, the platform file and a snapshot.
pub fn run_budget() -> &'static crate::base::yaml::RunBudget {
    static RUN: std::sync::OnceLock<crate::base::yaml::RunBudget> = std::sync::OnceLock::new();
    RUN.get_or_init(crate::base::yaml::RunBudget::new)
}

/// The directory output headers name input files relative to: the one
/// isvc runs in, never the output directory, so the bytes of an object do
/// not depend on where the output lives (a tree rendered elsewhere and
/// compared with `diff` shows only real changes).
pub fn header_base() -> PathBuf {
    absolute(Path::new("."))
}

/// Everything a run reads, and the rules it keeps.
pub(super) struct Loaded {
    inputs: compiler::Inputs,
    config: check::Config,
    /// What the load warns of, for the caller to show.
    warnings: Diagnostics,
}

/// An input file as a survey read it.
pub(super) struct InputFile {
    /// The path it is read by.
    pub(super) path: PathBuf,
    /// The label output headers name it by.
    pub(super) label: String,
    /// The digest of its bytes.
    pub(super) digest: Digest,
    /// Its size in bytes.
    pub(super) bytes: u64,
}

/// Loads the inputs, reporting every problem of every one together. The
/// services are those of the files a selection picks of `selected`, if
/// given (those of some namespaces: [`Selection`]), else every input
/// path's. They are read after the platform file, as a full render reads
/// them, so the run's budgets run out on the same files.
pub(super) fn load_inputs(
    inputs: &Sources,
    selected: Option<(&mut Selection<'_>, &[InputFile])>,
) -> Result<Loaded, Diagnostics> {
    let platform = load::load_platform_in(inputs.platform.as_deref(), run_budget());
    let template_dir = template_dir(inputs, platform.as_ref().ok().map(|(p, _)| p));
    let templates = load_templates(template_dir.as_deref());
    let (services, kept) = match selected {
        Some((selection, files)) => (read_selected(selection, files, run_budget()), !selection.clean().is_empty()),
        None => (load::load_services_in(&inputs.paths, run_budget()), false),
    };
    let config = check::Config::with_disabled(&inputs.disable);
    let mut diags = Diagnostics::new();
    let platform = platform.map_err(|d| diags.extend(d)).ok();
    let templates = templates.map_err(|d| diags.extend(d)).ok();
    let services = services.map_err(|d| diags.extend(d)).ok();
    let config = config.map_err(|d| diags.extend(d)).ok();
    let (Some(platform), Some(templates), Some(services), Some(config)) = (platform, templates, services, config)
    else {
        diags.sort();
        return Err(diags);
    };
    let mut warnings = Diagnostics::new();
    if services.is_empty() && !kept {
        let paths: Vec<String> = inputs.paths.iter().map(|p| p.display().to_string()).collect();
        warnings.push(
            Diagnostic::warning(format!("no InferenceService found in {}", paths.join(", ")))
                .help("the output holds only the CRD; a render removes the objects of every service rendered before"),
        );
    }
    let platform_file = inputs.platform.as_ref().map(|p| p.display().to_string());
    let (platform, origin) = platform;
    Ok(Loaded {
        inputs: compiler::Inputs::new(services)
            .with_platform(platform, platform_file)
            .with_platform_origin(origin)
            .with_templates(templates),
        config,
        warnings,
    })
}

/// The directory of template overrides: `--templates`, else the platform
/// file's `templates` (relative to the platform file).
pub(super) fn template_dir(inputs: &Sources, platform: Option<&crate::model::platform::Platform>) -> Option<PathBuf> {
    inputs.templates.clone().or_else(|| {
        let dir = platform?.templates.as_ref()?;
        let base = inputs.platform.as_deref().and_then(Path::parent).unwrap_or(Path::new(""));
        Some(base.join(dir))
    })
}

/// Names the platform file relative to `base`, as output headers show it.
pub(super) fn platform_label(inputs: &Sources, base: &Path) -> Option<String> {
    let base = absolute(base);
    inputs.platform.as_ref().map(|p| slash(&relative_to(&absolute(p), &base)))
}

/// Names input files relative to `base`, as output headers show them.
pub(super) fn labeller(base: &Path) -> impl Fn(&LoadedService) -> String + Sync + use<> {
    let base = absolute(base);
    // Read once: each read of the working directory is a system call.
    let cwd = std::env::current_dir().unwrap_or_default();
    move |s: &LoadedService| {
        if s.source.name == Path::new(load::STDIN) {
            return "-".to_string();
        }
        slash(&relative_to(&load::files::absolute_in(&cwd, &s.source.name), &base))
    }
}

/// Loads the inputs and compiles them, the warnings told to `progress`.
/// `one_cluster` names a command that works on one cluster's objects: a
/// platform with several clusters then needs [`Sources::cluster`].
pub fn compile<T: Held>(
    sources: &Sources,
    one_cluster: Option<&str>,
    progress: &dyn Progress,
) -> Result<(Compilation<T>, Vec<LoadedService>), Diagnostics> {
    compile_for(sources, &header_base(), one_cluster, Namespaces::Unrecorded, progress).map(|(c, s, _)| (c, s))
}

/// What a compile does with each namespace's digest, for a tree's manifest.
pub(super) enum Namespaces<'m, 's> {
    /// Nothing: no tree is written.
    Unrecorded,
    /// Works them out for the manifest; with the manifest of a tree it
    /// describes unedited, the namespaces whose services it records
    /// unchanged are not compiled again ([`Compilation::reused`]).
    Recorded(Option<&'m Manifest>),
    /// With the manifest of a tree it describes unedited: the services of
    /// the namespaces a change touched, read, and the digests of the other
    /// recorded namespaces, kept without their files being read
    /// ([`Selection`]).
    Selected(&'s mut Selection<'m>, &'s [InputFile]),
}

/// A compilation, the services it was compiled from, and each namespace's
/// digest (empty unless [`Namespaces::Recorded`]).
pub(super) type Compiled<T> = (Compilation<T>, Vec<LoadedService>, BTreeMap<String, Digest>);

impl<'m, 's> Namespaces<'m, 's> {
    /// The files `selection` chooses of `files`, or, without one, every
    /// file, with the namespaces `recorded` records unchanged kept.
    pub(super) fn of(
        selection: &'s mut Option<Selection<'m>>,
        files: &'s [InputFile],
        recorded: Option<&'m Manifest>,
    ) -> Self {
        match selection {
            Some(s) => Namespaces::Selected(s, files),
            None => Namespaces::Recorded(recorded),
        }
    }
}

/// [`compile`], with what `namespaces` asks for; its warnings told.
pub(super) fn compile_for<T: Held>(
    inputs: &Sources,
    base: &Path,
    one_cluster: Option<&str>,
    namespaces: Namespaces<'_, '_>,
    progress: &dyn Progress,
) -> Result<Compiled<T>, Diagnostics> {
    let compiled = compile_unshown(inputs, base, one_cluster, namespaces)?;
    show_warnings(&compiled.0, progress);
    Ok(compiled)
}

/// Tells what a compilation warns of.
pub(super) fn show_warnings<T>(compiled: &Compilation<T>, progress: &dyn Progress) {
    if !compiled.warnings.is_empty() {
        progress.warnings(&compiled.warnings);
    }
}

/// [`compile_for`], its warnings (the load's first) left in the
/// compilation, or put before the errors, for the caller to show: a
/// compile whose result may be set aside shows nothing.
pub(super) fn compile_unshown<T: Held>(
    inputs: &Sources,
    base: &Path,
    one_cluster: Option<&str>,
    namespaces: Namespaces<'_, '_>,
) -> Result<Compiled<T>, Diagnostics> {
    let (mut selected, recorded, record) = match namespaces {
        Namespaces::Unrecorded => (None, None, false),
        Namespaces::Recorded(recorded) => (None, recorded, true),
        Namespaces::Selected(selection, files) => {
            let recorded = selection.manifest();
            (Some((selection, files)), Some(recorded), true)
        }
    };
    let mut i = load_inputs(inputs, selected.as_mut().map(|(s, files)| (&mut **s, *files)))?;
    let warned = |errors: Diagnostics| {
        let mut all = i.warnings.clone();
        all.extend(errors);
        all
    };
    // The input files read that are unchanged since the tree was rendered
    // (those of the namespaces a change touches): their services' files
    // are the tree's (`Options::keep_files_of`).
    let unchanged: BTreeSet<String> = selected
        .as_ref()
        .map(|(s, _)| s.read().filter(|label| s.recorded(label).is_some()).map(str::to_string).collect())
        .unwrap_or_default();
    // The namespaces kept unread, with their recorded digests.
    let clean = selected.map(|(s, _)| s.clean()).unwrap_or_default();
    let clusters: Vec<&str> = i.inputs.platform.clusters.iter().map(|c| c.name.as_str()).collect();
    if let (Some(what), None, true) = (one_cluster, &inputs.cluster, clusters.len() > 1) {
        return Err(warned(
            Diagnostic::error(format!(
                "{what} works on one cluster, and the platform file lists {}: {}",
                clusters.len(),
                clusters.join(", ")
            ))
            .help(format!("name one with --cluster {}", clusters[0]))
            .into(),
        ));
    }
    i.inputs.platform_file = platform_label(inputs, base);
    let options =
        Options::default().rules(i.config).engine(inputs.gitops).cluster(inputs.cluster.clone()).label(labeller(base));
    let mut digests = BTreeMap::new();
    if record {
        digests = Compiler::new(&i.inputs, Options::default().label(labeller(base))).namespace_digests();
        // The namespaces kept: their services were not read.
        digests.extend(clean);
    }
    let records = recorded.map(Manifest::namespace_records).unwrap_or_default();
    let reuse: BTreeSet<String> = digests
        .iter()
        .filter(|(ns, d)| records.get(ns.as_str()).is_some_and(|r| r.0 == d.as_str()))
        .map(|(ns, _)| ns.clone())
        .collect();
    // What the GitOps engine's objects read of the namespaces kept.
    let facts = recorded.map(Manifest::recorded_namespaces).unwrap_or_default();
    let options = options.reuse(reuse).keep_files_of(unchanged).recorded(facts);
    let mut compiled = Compiler::new(&i.inputs, options).compile_held().map_err(warned)?;
    if !i.warnings.is_empty() {
        compiled.warnings = warned(std::mem::take(&mut compiled.warnings));
    }
    Ok((compiled, i.inputs.services, digests))
}

pub(super) fn load_templates(dir: Option<&Path>) -> Result<Templates, Diagnostics> {
    let Some(dir) = dir else {
        return Ok(Templates::builtin());
    };
    Templates::new(load::template_sources(dir)?).map_err(Diagnostics)
}

/// Reads the input files `selection` chooses of `files`, batch by batch,
/// and the services they declare. Every unchanged file counts against the
/// run's budgets as it did when it was read (its bytes, and the nodes its
/// aliases expanded to, as recorded), a file read taking its own share
/// instead: the budgets run out exactly where a render reading every file
/// runs out, with the same error.
pub(super) fn read_selected(
    selection: &mut Selection<'_>,
    files: &[InputFile],
    run: &crate::base::yaml::RunBudget,
) -> Result<Vec<LoadedService>, Diagnostics> {
    // By hash, as `Selection::new` looks labels up.
    let by_label: foldhash::HashMap<&str, &InputFile> = files.iter().map(|f| (f.label.as_str(), f)).collect();
    // What every unchanged file took of the budgets when it was read,
    // charged up front (they fit, with the same platform file, when the
    // tree was rendered): those read give theirs back before they are read.
    let charge = |label: &str, recorded: &manifest::Input| Some((by_label.get(label)?.bytes, recorded.aliases));
    let share = |selection: &Selection<'_>, label: &str| charge(label, selection.recorded(label)?);
    let (bytes, aliases) = selection
        .unchanged()
        .filter_map(|(label, recorded)| charge(label, recorded))
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    // Within the budgets: see above.
    let _ = (run.take_bytes(bytes), run.take_alias_nodes(aliases));
    let mut services = Vec::new();
    let mut diags = Diagnostics::new();
    loop {
        let labels = selection.batch();
        if labels.is_empty() {
            break;
        }
        for (bytes, aliases) in labels.iter().filter_map(|l| share(selection, l)) {
            run.give_back(bytes, aliases);
        }
        let batch: Vec<&Path> = labels.iter().filter_map(|l| by_label.get(l)).map(|f| f.path.as_path()).collect();
        let (read, d) = load::read_services_in(&batch, run);
        selection.declared(
            read.iter().map(|s| s.service.namespace_or_default()),
            read.iter().filter_map(LoadedService::claimed_route),
        );
        services.extend(read);
        diags.extend(d);
    }
    load::finish_services(services, diags)
}

/// Loads the inputs and runs every rule over the objects they compile to
/// (`isvc check`), the load's warnings and the problems of the services'
/// annotations told to `progress`. The objects are counted, not kept: each
/// group's values are freed once checked (at 10,000 services the peak fell
/// from 420 to 92 MiB).
pub fn examine(
    sources: &Sources,
    progress: &dyn Progress,
) -> Result<(Examination<objects::Examined>, Remains), Diagnostics> {
    let mut i = load_inputs(sources, None)?;
    if !i.warnings.is_empty() {
        progress.warnings(&i.warnings);
    }
    i.inputs.platform_file = platform_label(sources, &header_base());
    let options = Options::default().rules(i.config).cluster(sources.cluster.clone()).label(labeller(&header_base()));
    let examination = Compiler::new(&i.inputs, options).examine_held::<objects::Examined>()?;
    let problems = Diagnostics(check::annotation_problems(&i.inputs.services));
    if !problems.is_empty() {
        progress.warnings(&problems);
    }
    let mut remains = Remains::default();
    remains.keep(i.inputs);
    Ok((examination, remains))
}

/// Compiles the inputs and reads the snapshot, reporting the problems of both.
/// What `plan` and `status` work from: the objects compiled (of one
/// cluster), the services, the snapshot `live` (a file of the objects a
/// cluster holds) and the plan from the one to the other.
pub struct Reconciled {
    pub compiled: Compilation,
    pub services: Vec<LoadedService>,
    pub live: Vec<serde_json::Value>,
    pub plan: plan::Plan,
}

/// Compiles the inputs and reads the snapshot `live`, reporting the
/// problems of both, and plans the one against the other.
pub fn reconcile(sources: &Sources, live: &Path, progress: &dyn Progress) -> Result<Reconciled, Diagnostics> {
    // A snapshot is one cluster's: plan against that cluster's objects.
    // It is read on a thread of its own while the services compile: its
    // parse runs on one core (a `kubectl get -o yaml` snapshot is one List
    // document; 1.3 s for 55 MB at 10,000 services), the compile on every
    // core. Both count against the one budget of the run, as the service
    // files read at once already do.
    let (compiled, live) = std::thread::scope(|scope| {
        let live = scope.spawn(|| plan::read_snapshot_in(live, run_budget()));
        let compiled = compile::<Object>(sources, Some("plan or status against a snapshot"), progress);
        (compiled, live.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    });
    let (compiled, live) = match (compiled, live) {
        (Ok(c), Ok(l)) => (c, l),
        (c, l) => {
            let mut diags = Diagnostics::new();
            diags.extend(c.err().into_iter().flatten());
            diags.extend(l.err().into_iter().flatten());
            return Err(diags);
        }
    };
    let (compiled, services) = compiled;
    let plan = plan::plan(&compiled.objects, &live);
    Ok(Reconciled { compiled, services, live, plan })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emit::write as output;

    /// A file of one service in namespace `ns` whose annotations take
    /// `aliases` nodes of alias expansions.
    fn service_file(dir: &Path, name: &str, ns: &str, aliases: usize) -> InputFile {
        let mut annotations = String::from("{x.example.com/a0: &v x");
        for i in 0..aliases {
            annotations.push_str(&format!(", x.example.com/a{}: *v", i + 1));
        }
        let text = format!(
            "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\n\
             metadata: {{name: {name}, namespace: {ns}, annotations: {annotations}}}}}\n\
             spec: {{baseModel: Qwen/Qwen3-0.6B, replicas: 1}}\n"
        );
        let path = dir.join(format!("{name}.yaml"));
        std::fs::write(&path, &text).unwrap();
        InputFile {
            label: format!("{name}.yaml"),
            digest: crate::base::digest::digest(text.as_bytes()),
            bytes: text.len() as u64,
            path,
        }
    }

    /// Every file read as a full render reads them, and only the files of
    /// the namespace of the one that changed: both against budgets of
    /// `aliases` nodes and `bytes` bytes.
    fn both_ways(
        files: &[InputFile],
        recorded: &Manifest,
        aliases: usize,
        bytes: u64,
    ) -> (Result<usize, Vec<String>>, Result<usize, Vec<String>>) {
        let messages = |d: Diagnostics| d.iter().map(|d| d.message.clone()).collect::<Vec<_>>();
        let run = crate::base::yaml::RunBudget::with_limits(aliases, bytes);
        let paths: Vec<&Path> = files.iter().map(|f| f.path.as_path()).collect();
        let (services, diags) = load::read_services_in(&paths, &run);
        let full = load::finish_services(services, diags).map(|s| s.len()).map_err(messages);
        let run = crate::base::yaml::RunBudget::with_limits(aliases, bytes);
        let mut selection =
            Selection::new(recorded, files.iter().map(|f| (f.label.as_str(), f.digest.as_str())), []).unwrap();
        let partial = read_selected(&mut selection, files, &run).map(|s| s.len()).map_err(messages);
        (full, partial)
    }

    #[test]
    fn files_left_unread_count_against_the_budgets_as_when_they_were_read() {
        let dir = tempfile::tempdir().unwrap();
        let mut files = vec![
            service_file(dir.path(), "a", "a", 3),
            service_file(dir.path(), "b", "b", 3),
            service_file(dir.path(), "c", "c", 0),
        ];
        let record = |f: &InputFile, aliases: usize, ns: &str| manifest::Input {
            label: f.label.clone(),
            digest: f.digest,
            aliases,
            namespaces: vec![ns.to_string()],
        };
        let inputs = vec![record(&files[0], 3, "a"), record(&files[1], 3, "b"), record(&files[2], 0, "c")];
        let namespaces =
            ["a", "b", "c"].map(|n| (n.to_string(), crate::base::digest::digest(n.as_bytes()), 1)).to_vec();
        let recorded = Manifest::new(Vec::new(), inputs, 3, namespaces, Vec::new(), &output::Tree::new());
        let total: u64 = files.iter().map(|f| f.bytes).sum();
        // c changes and still fits: one file read, as many services.
        files[2] = service_file(dir.path(), "c", "c", 0);
        files[2].digest = crate::base::digest::digest(b"changed");
        assert_eq!(both_ways(&files, &recorded, 6, total), (Ok(3), Ok(1)));
        // One alias more, or a byte more, takes either render over.
        files[2] = service_file(dir.path(), "c", "c", 1);
        let (full, partial) = both_ways(&files, &recorded, 6, total + 100);
        let over = "aliases in the input files expand to more than 6 nodes in all; refusing to expand them further";
        assert_eq!(full, Err(vec![over.to_string()]));
        assert_eq!(partial, full);
        let (full, partial) = both_ways(&files, &recorded, 7, total);
        assert!(
            full.as_ref().is_err_and(|e| e.len() == 1 && e[0].contains("takes the inputs of this run over")),
            "{full:?}"
        );
        assert_eq!(partial, full);
        assert!(both_ways(&files, &recorded, 7, total + 100).1.is_ok());
    }
}
