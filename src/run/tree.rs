//! A render into an output tree (`render --out`, `--check`) and `diff`
//! against one: over a tree its manifest describes unedited, only the
//! namespaces a change touches are compiled, and the files of the others
//! kept.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::compile::{
    InputFile, Namespaces, Progress, Remains, Sources, compile, compile_unshown, header_base, labeller, show_warnings,
};
use super::survey::{Reading, Survey, Surveyed, run_settings_and_platform};
use crate::base::diagnostics::{Diagnostic, Diagnostics};
use crate::base::digest::Digest;
use crate::compiler::Compilation;
use crate::compiler::admission::QuotaUsage;
use crate::emit::manifest::{self, MANIFEST, Manifest, Selection};
use crate::emit::{diff as compare, write as output};
use crate::load::LoadedService;
use crate::model::objects::Written;

/// How [`render_tree`] goes about its tree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// Writes it: over a tree its manifest describes, compiles and
    /// rewrites only what a change touches.
    #[default]
    Write,
    /// Writes nothing: finds what a render would change (`--check`).
    Check,
    /// Writes it, every namespace compiled and nothing taken from the tree
    /// (`--full`).
    Full,
    /// Writes nothing, every namespace compiled (`--check --full`).
    CheckFull,
}

impl Mode {
    fn checks(self) -> bool {
        matches!(self, Mode::Check | Mode::CheckFull)
    }
}

/// What [`render_tree`] did, or with [`Mode::Check`] found.
pub struct Rendered {
    /// The files a render creates, updates and deletes, and how many it
    /// leaves as they are (with `--check`, what the tree lacks: stale,
    /// missing, extra). Every file unchanged, when the manifest showed the
    /// tree up to date without a compile.
    pub changes: output::Changes,
    /// The objects rendered, in every cluster's tree.
    pub objects: usize,
    /// The files of the tree, the manifest among them.
    pub files: usize,
    /// The quota table of the tree's manifest.
    pub quota: Vec<QuotaUsage>,
    /// What the run held: its caller's to drop or leave.
    pub remains: Remains,
}

/// Renders `sources` into the output tree `out`, or with [`Mode::Check`]
/// finds what a render would change there. A render of a tree the manifest
/// shows up to date writes nothing, so it answers as `--check` does (with
/// the quota table the manifest records). A render of a tree a manifest of
/// these settings describes, unedited, keeps the files of the namespaces
/// whose services are unchanged; it reads the tree once, under the lock it
/// writes under. A render waits for another render into the same place, as
/// it would to write; not while it reads standard input, which is never up
/// to date. With [`Mode::Full`] the tree is read as if the manifest
/// recorded other settings: nothing is taken from it, every namespace is
/// compiled.
pub fn render_tree(
    sources: &Sources,
    out: &Path,
    mode: Mode,
    progress: &dyn Progress,
) -> Result<Rendered, Diagnostics> {
    // The tree every mode reads and writes (`a/../b` is `b` beside `a`);
    // a refusal names it as given.
    let given = out;
    let out = &output::resolve_out(given);
    // Read before the inputs are loaded, once for the shortcut and the
    // manifest this run writes.
    let (mut settings, platform) = run_settings_and_platform(sources, &header_base());
    let stdin = sources.paths.iter().any(|p| p == Path::new("-"));
    let reading = match (mode, stdin) {
        (Mode::Full | Mode::CheckFull, _) => Reading::Skip,
        (Mode::Check, _) => Reading::Scan,
        (Mode::Write, false) => Reading::Open,
        (Mode::Write, true) => Reading::Skip,
    };
    let tree = if reading == Reading::Open { output::output_dir(given, &sources.paths)? } else { out.to_path_buf() };
    let survey = Survey::default();
    // Over a tree the manifest describes, only the input files of the
    // namespaces a change touches are read, where every other namespace's
    // objects can be kept. They are compiled while the tree is read.
    let surveyed = survey.read_while_compiling::<Written>(
        &sources.paths,
        &tree,
        &header_base(),
        &settings,
        reading,
        sources,
        platform.as_ref(),
    )?;
    let Surveyed { tree: read, described, same, compiled, selection, listed } = surveyed;
    if let Some(recorded) = described.filter(|_| same) {
        survey.cache().save();
        // The manifest and every file it lists.
        let files = listed + 1;
        let (objects, quota) = (recorded.objects, recorded.quota.clone());
        // The tree's listing, the manifest and the cache, and the lock
        // (which the system releases when a process exits), for the caller
        // to drop or leave.
        let mut remains = Remains::default();
        remains.keep(read);
        remains.keep(survey);
        let changes = output::Changes { unchanged: files, ..Default::default() };
        return Ok(Rendered { changes, objects, files, quota, remains });
    }
    let existing = read.existing();
    // A tree the manifest does not describe (or inputs it cannot record)
    // is compiled whole.
    let compiled = match compiled {
        Some(compiled) => compiled,
        None => compile_unshown::<Written>(sources, &header_base(), None, Namespaces::Recorded(None))?,
    };
    show_warnings(&compiled.0, progress);
    let (mut compiled, services, digests) = compiled;
    survey.take_input_digests(&services);
    let files = survey.inputs().unwrap_or_default();
    say_read(selection.as_ref(), files, &compiled.reused, progress);
    // Without any service, a render warns.
    let no_services = digests.is_empty();
    // The objects of each namespace compiled, to which those of the files
    // kept are added.
    let mut counts = object_counts(&compiled);
    let objects = std::mem::take(&mut compiled.objects);
    let made = objects.len();
    // The files of the namespaces kept gathered and the tree planned, while
    // what the input files declare is gathered for the manifest.
    let clusters = &compiled.clusters;
    let plan = || {
        let mut kept = existing.map(|e| e.kept(compiled.reused.clone(), clusters)).unwrap_or_default();
        // The files of the services of unchanged files in the namespaces
        // compiled again (only over a tree its manifest describes, read).
        if !compiled.kept_services.is_empty() {
            let Some(existing) = existing else {
                return Err(Diagnostics::from(Diagnostic::error(
                    "internal error: services kept from a tree that was not read",
                )));
            };
            existing.keep_services(&mut kept, &compiled.kept_services, clusters);
        }
        for (at, n) in &kept.objects {
            *counts.entry(at.clone()).or_default() += n;
        }
        let reused: usize = counts.iter().filter(|((_, ns), _)| compiled.reused.contains(ns)).map(|(_, n)| n).sum();
        let rendered = made + kept.service_objects() + reused;
        // Each namespace's objects, in every cluster's tree together.
        let mut totals: BTreeMap<&str, usize> = BTreeMap::new();
        for ((_, ns), n) in &counts {
            *totals.entry(ns).or_default() += n;
        }
        let namespaces: Vec<(String, Digest, usize)> = digests
            .into_iter()
            .map(|(ns, d)| {
                let objects = totals.get(ns.as_str()).copied().unwrap_or_default();
                (ns, d, objects)
            })
            .collect();
        let per_cluster: Vec<(String, String, usize)> =
            counts.iter().filter_map(|((c, ns), n)| Some((c.clone()?, ns.clone(), *n))).collect();
        Ok((rendered, namespaces, per_cluster, output::written_tree(objects, kept)))
    };
    let ((inputs, routes), planned) = rayon::join(|| declared(files, &services, selection.as_ref()), plan);
    let (rendered, namespaces, per_cluster, mut tree) = planned?;
    if survey.inputs().is_none() {
        // Standard input, or an input that changed while it was read: the
        // manifest never takes this tree for up to date.
        settings.push("inputs unrecorded".to_string());
    }
    if !compiled.warnings.is_empty() || no_services {
        // A run that warns compiles every time, so the warnings are shown.
        settings.push("warnings".to_string());
    }
    // The quota table: the compiled namespaces' rows, and the recorded
    // ones of the namespaces kept.
    let mut quota = compiled.quota;
    if let Some(kept) = described {
        quota.extend(kept.quota_of(&compiled.reused).cloned());
    }
    let recorded = Manifest::new(settings, inputs, rendered, namespaces, routes, &tree)
        .with_quota(quota)
        .with_clusters(per_cluster)
        .with_autoscaled(std::mem::take(&mut compiled.autoscaled));
    tree.insert(PathBuf::from(MANIFEST).into(), output::Contents::text(recorded.to_text()));
    let quota = recorded.quota.clone();
    // The manifest's records and the services read, for the caller to drop
    // or leave with the rest (tens of thousands of strings).
    let mut remains = Remains::default();
    remains.keep(recorded);
    remains.keep(services);
    if mode.checks() {
        let existing = match read.scanned {
            Some(existing) => existing,
            None => output::scan(out, survey.cache())?,
        };
        survey.cache().save();
        let changes = output::changes(&tree, &existing);
        return Ok(Rendered { changes, objects: rendered, files: tree.len(), quota, remains });
    }
    let changes = match &read.writer {
        // Opened before the compile: the tree is checked again for entries
        // that appeared or went since.
        Some(writer) => writer.write(&tree, survey.cache())?,
        None => output::write(&output::output_dir(given, &sources.paths)?, &tree, survey.cache())?,
    };
    survey.cache().save();
    let files = tree.len();
    // The tree written, the tree found and the cache's entries: tens of
    // thousands of files, which a process about to exit need not free one
    // by one. The lock goes with the reading of the tree.
    remains.keep(tree);
    remains.keep(read);
    remains.keep(survey);
    Ok(Rendered { changes, objects: rendered, files, quota, remains })
}

/// What the manifest records of what the input files declare: each file
/// with the namespaces of its services, and the routes each namespace's
/// services claim. Of a file left unread (`selection`), as recorded.
fn declared(
    files: &[InputFile],
    services: &[LoadedService],
    selection: Option<&Selection<'_>>,
) -> (Vec<manifest::Input>, Vec<(String, String)>) {
    let label = labeller(&header_base());
    // Each file's namespaces, and its aliases' expansions.
    let mut of_file: BTreeMap<String, (BTreeSet<&str>, usize)> = BTreeMap::new();
    let mut routes: Vec<(String, String)> = Vec::new();
    for s in services {
        let namespace = s.service.namespace_or_default();
        let file = of_file.entry(label(s)).or_default();
        file.0.insert(namespace);
        file.1 = s.alias_nodes;
        if let Some(route) = s.claimed_route() {
            routes.push((namespace.to_string(), route));
        }
    }
    if let Some(selection) = selection {
        routes.extend(selection.clean_routes().cloned());
    }
    // Each file's record made on every core: 10,000 at 10,000 services,
    // most of them copied from the manifest after one change.
    use rayon::prelude::*;
    let inputs = files
        .par_iter()
        .map(|f| {
            let (namespaces, aliases) = match (selection.and_then(|s| s.unread(&f.label)), of_file.get(&f.label)) {
                (Some(recorded), _) => (recorded.namespaces.clone(), recorded.aliases),
                (None, Some((namespaces, aliases))) => (namespaces.iter().map(|n| n.to_string()).collect(), *aliases),
                (None, None) => (Vec::new(), 0),
            };
            manifest::Input { label: f.label.clone(), digest: f.digest, aliases, namespaces }
        })
        .collect();
    (inputs, routes)
}

/// How many objects of each namespace `compiled` made (those of the
/// files kept are counted in the tree, not taken from the manifest).
fn object_counts(compiled: &Compilation<Written>) -> BTreeMap<(Option<String>, String), usize> {
    let mut counts = BTreeMap::new();
    for o in compiled.objects.iter().filter(|w| !w.object.bootstrap) {
        if let Some(ns) = &o.object.id.namespace {
            *counts.entry((o.object.cluster.clone(), ns.clone())).or_default() += 1;
        }
    }
    counts
}

/// Says, with `-v`, how many of the input `files` a compile of the
/// namespaces a change touches read (`selection`), and how many namespaces
/// it kept.
fn say_read(
    selection: Option<&Selection<'_>>,
    files: &[InputFile],
    reused: &BTreeSet<String>,
    progress: &dyn Progress,
) {
    // Without a selection (a cluster names the services it runs), every
    // file was read, and the namespaces unchanged may still be kept.
    let read = match selection {
        Some(s) => s.read().count(),
        None if !reused.is_empty() => files.len(),
        None => return,
    };
    progress.note(&format!("read {read} of {} input files; {} namespaces unchanged", files.len(), reused.len()));
}

/// Whether the tree's file `path` lies in the directory of one of
/// `namespaces`, or in that of one of `services` (by namespace:
/// `<namespace>/<name>/...`), in the tree's root or, with `clusters`, in
/// one of theirs (`<cluster>/<namespace>/...`): a file a compile of the
/// other namespaces and services keeps. `Some` for a file kept, with
/// whether it holds an object (it lies below the namespace's own
/// directory). Its names are read from its bytes where it is plain, as a
/// walk's paths are (29,000 of them at 10,000 services), else from its
/// components.
fn kept_file(
    path: &crate::base::paths::TreePath,
    namespaces: &BTreeSet<String>,
    services: &BTreeMap<String, BTreeSet<String>>,
    clusters: &[String],
) -> Option<bool> {
    use std::borrow::Cow;
    // The names of `path`, one by one (none collected: this runs for every
    // file of the tree).
    fn kept_names<'a>(
        mut names: impl Iterator<Item = Cow<'a, str>>,
        namespaces: &BTreeSet<String>,
        services: &BTreeMap<String, BTreeSet<String>>,
        clusters: &[String],
    ) -> Option<bool> {
        if !clusters.is_empty() {
            let cluster = names.next()?;
            if !clusters.iter().any(|c| *c == cluster) {
                return None;
            }
        }
        let (ns, name, deeper) = (names.next()?, names.next(), names.next().is_some());
        if namespaces.contains(&*ns) {
            return Some(deeper);
        }
        let service = name.is_some_and(|name| services.get(&*ns).is_some_and(|names| names.contains(&*name)));
        (deeper && service).then_some(true)
    }
    match path.plain_bytes().and_then(|b| std::str::from_utf8(b).ok()) {
        Some(text) => kept_names(text.split('/').map(Cow::Borrowed), namespaces, services, clusters),
        None => kept_names(path.iter().map(|n| n.to_string_lossy()), namespaces, services, clusters),
    }
}

/// What a render of `sources` would change in the tree `out`, object by
/// object (`isvc diff`). Over a tree its manifest describes, unedited, with
/// these settings, only the namespaces a change touches are compiled
/// (`diff_over_manifest`); with `full`, with [`Sources::cluster`], or
/// over any other tree, every service is compiled and the whole tree read.
pub fn diff(
    sources: &Sources,
    out: &Path,
    full: bool,
    progress: &dyn Progress,
) -> Result<(compare::Report, Remains), Diagnostics> {
    // The tree a render writes (`output::resolve_out`).
    let out = &output::resolve_out(out);
    let mut remains = Remains::default();
    if sources.cluster.is_none()
        && !full
        && let Some(report) = diff_over_manifest(sources, out, progress, &mut remains)?
    {
        return Ok((report, remains));
    }
    let (compiled, _) = compile::<Written>(sources, None, progress)?;
    let mut existing = output::scan_texts(out)?;
    if let Some(name) = &sources.cluster {
        // One cluster's objects against that cluster's tree alone.
        existing.ours.retain(|path, _| path.starts_with(name));
    }
    let report = compare::diff(&compiled.objects, &existing)?;
    remains.keep((compiled, existing));
    Ok((report, remains))
}

/// `diff`'s report for a tree its manifest describes unedited (with this
/// run's settings); `None` for any other tree, and for inputs that are not
/// all files read (standard input, a file that cannot be read), which a
/// full compile reports on. When the input files are
/// those recorded, from the manifest alone. Else only the namespaces a
/// change touches are compiled, and compared with their files, as a render
/// compiles and writes them: every other namespace's inputs and files are
/// those recorded, so a full compile would find its objects unchanged, and
/// they are counted so (`a_partial_diff_reports_what_a_full_diff_reports`
/// in `tests/it/manifest.rs`). A pull request that changes one service of
/// thousands compiles and reads one namespace, not the fleet.
fn diff_over_manifest(
    sources: &Sources,
    out: &Path,
    progress: &dyn Progress,
    remains: &mut Remains,
) -> Result<Option<compare::Report>, Diagnostics> {
    let (settings, platform) = run_settings_and_platform(sources, &header_base());
    let survey = Survey::default();
    let surveyed = survey.read_while_compiling::<Written>(
        &sources.paths,
        out,
        &header_base(),
        &settings,
        Reading::Scan,
        sources,
        platform.as_ref(),
    )?;
    survey.cache().save();
    let Surveyed { tree: read, described, same, compiled, selection, .. } = surveyed;
    let Some(recorded) = described else { return Ok(None) };
    let report = if same {
        compare::Report { objects: Vec::new(), unchanged: recorded.objects }
    } else {
        let (Some(files), Some(existing), Some((compiled, _, _))) = (survey.inputs(), read.scanned.as_ref(), compiled)
        else {
            return Ok(None);
        };
        show_warnings(&compiled, progress);
        say_read(selection.as_ref(), files, &compiled.reused, progress);
        let kept = |p: &crate::base::paths::TreePath| {
            kept_file(p, &compiled.reused, &compiled.kept_services, &compiled.clusters)
        };
        let unchanged = existing.ours.keys().filter(|p| kept(p) == Some(true)).count();
        let mut report = compare::diff_in_tree(&compiled.objects, existing, out, |p| kept(p).is_none())?;
        report.unchanged += unchanged;
        remains.keep(compiled);
        report
    };
    // The tree's listing, the manifest and the cache: tens of thousands of
    // paths, for the caller to drop or leave.
    remains.keep(read);
    remains.keep(survey);
    Ok(Some(report))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_kept_in_a_namespace_kept_or_a_service_kept_in_each_clusters_tree() {
        use crate::base::paths::TreePath;
        let namespaces: BTreeSet<String> = ["a".to_string()].into();
        let services: BTreeMap<String, BTreeSet<String>> = [("b".to_string(), ["s".to_string()].into())].into();
        let kept = |p: &str, clusters: &[String]| kept_file(&TreePath::from(p), &namespaces, &services, clusters);
        let none: [String; 0] = [];
        assert_eq!(kept("a/s/deployment.yaml", &none), Some(true));
        assert_eq!(kept("a/kustomization.yaml", &none), Some(false), "kept, but no object");
        assert_eq!(kept("b/s/service.yaml", &none), Some(true));
        assert_eq!(kept("b/t/service.yaml", &none), None);
        assert_eq!(kept("b/kustomization.yaml", &none), None);
        assert_eq!(kept("_gitops/application-x.yaml", &none), None);
        let clusters = ["east".to_string(), "west".to_string()];
        assert_eq!(kept("east/a/s/deployment.yaml", &clusters), Some(true));
        assert_eq!(kept("west/a/kustomization.yaml", &clusters), Some(false));
        assert_eq!(kept("west/b/s/service.yaml", &clusters), Some(true));
        assert_eq!(kept("north/a/s/deployment.yaml", &clusters), None, "no such cluster");
        assert_eq!(kept("a/s/deployment.yaml", &clusters), None, "not in a cluster's tree");
        assert_eq!(kept("east/kustomization.yaml", &clusters), None);
        // A path that is not plain is read by its components alike.
        assert_eq!(kept("east//a/./s/deployment.yaml", &clusters), Some(true));
    }
}
