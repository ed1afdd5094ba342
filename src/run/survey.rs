//! What a run reads of an output tree and its inputs before it compiles:
//! the settings the manifest records, the tree's manifest and cache of file
//! status, the input files' digests, and the namespaces a change touches.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::compile::{Compiled, InputFile, Namespaces, Sources, compile_unshown, template_dir};
use crate::base::diagnostics::Diagnostics;
use crate::base::paths::{relative_to, slash};
use crate::check;
use crate::compiler;
use crate::emit::listing::Listings;
use crate::emit::manifest::{self, Manifest, Selection};
use crate::emit::stat::{self, StatCache};
use crate::emit::write as output;
use crate::load::{self, LoadedService, files::absolute};
use crate::model::objects::Held;
use crate::model::platform::{Engine, Platform};

/// What decides a render's output besides the services, as the manifest
/// records it: the platform file and the templates (by digest), the GitOps
/// engine and the disabled rules; and the platform file as it loaded (if it
/// did). Read before the inputs are loaded, so a file changed during the
/// run shows as changed the next time.
pub(super) fn run_settings_and_platform(inputs: &Sources, base: &Path) -> (Vec<String>, Option<Platform>) {
    use crate::load::files::read_regular;
    let base = absolute(base);
    let label = |p: &Path| slash(&relative_to(&absolute(p), &base));
    let mut settings = Vec::new();
    let platform = match &inputs.platform {
        None => {
            settings.push("platform none".to_string());
            None
        }
        Some(p) => match read_regular(p, load::MAX_FILE_BYTES, true) {
            Ok(bytes) => {
                settings.push(format!("platform {} {}", manifest::digest(&bytes), label(p)));
                load::load_platform(Some(p)).ok()
            }
            Err(_) => {
                settings.push("platform unreadable".to_string());
                None
            }
        },
    };
    match template_dir(inputs, platform.as_ref()) {
        None => settings.push("templates built-in".to_string()),
        Some(dir) => {
            settings.push(format!("templates {}", label(&dir)));
            match load::template_sources(&dir) {
                Ok(sources) => settings.extend(sources.iter().map(|s| {
                    let name = s.name.file_name().unwrap_or_default().to_string_lossy();
                    format!("template {} {name}", manifest::digest(s.text.as_bytes()))
                })),
                Err(_) => settings.push("templates unreadable".to_string()),
            }
        }
    }
    let engine = match inputs.gitops {
        None => "platform",
        Some(Engine::Argocd) => "argocd",
        Some(Engine::Flux) => "flux",
    };
    settings.push(format!("gitops {engine}"));
    let disabled = check::Config::with_disabled(&inputs.disable).map(|c| c.disabled.into_iter().collect::<Vec<_>>());
    match disabled {
        Ok(ids) if ids.is_empty() => settings.push("disable none".to_string()),
        Ok(ids) => settings.push(format!("disable {}", ids.join(","))),
        Err(_) => settings.push("disable unknown".to_string()),
    }
    (settings, platform)
}

/// The input files found, each with its status, and the directories their
/// labels are made from: what [`input_digests`] reads.
struct InputStatus {
    cwd: PathBuf,
    base: PathBuf,
    files: Vec<(PathBuf, Option<std::fs::Metadata>)>,
}

/// Finds the input files and reads their status; `None` when the inputs
/// include standard input or cannot all be found (the compile then reports
/// why).
fn input_status(paths: &[PathBuf], base: &Path) -> Option<InputStatus> {
    if paths.iter().any(|p| p == Path::new("-")) {
        return None;
    }
    let cwd = std::env::current_dir().ok()?;
    let base = crate::load::files::absolute_in(&cwd, base);
    let files = load::input_files_with_status(paths).ok()?;
    Some(InputStatus { cwd, base, files })
}

/// Every input file's label (as output headers name it) and digest, read
/// now but where `cache` knows the file unchanged; `None` when one cannot
/// be read (the compile then reports why).
fn input_digests(found: &InputStatus, cache: &StatCache) -> Option<Vec<InputFile>> {
    input_digests_read(found, cache, |_| None)
}

/// [`input_digests`], the bytes of a file the cache does not know taken
/// from `read` where it has them (what a compile read), else read now.
fn input_digests_read<'r>(
    found: &InputStatus,
    cache: &StatCache,
    read_before: impl Fn(&Path) -> Option<&'r [u8]> + Sync,
) -> Option<Vec<InputFile>> {
    use rayon::prelude::*;
    let InputStatus { cwd, base, files } = found;
    // Gathered as a list of a known length and checked after (in place):
    // rayon gathers an `Option` of a list in pieces grown one item at a
    // time, each step on fresh memory.
    // Each file with its absolute path and, where it was read, the status
    // to record its digest under (recorded together after).
    let read: Vec<Option<(InputFile, PathBuf, Option<stat::Stat>)>> = files
        .par_iter()
        .map(|(f, meta)| {
            let path = crate::load::files::absolute_in(cwd, f);
            // The status of the file the path leads to, read as the loader
            // reads it (through `f` itself, links followed: `absolute`
            // resolves `..` in the text, which a link can make another
            // file). A file replaced between the two is recorded under the
            // status of the one before, which no later file has.
            let status = meta.as_ref().and_then(stat::Stat::of);
            let (digest, learned) = match status.and_then(|s| cache.lookup(stat::Kind::Input, &path, s)) {
                Some(d) => (d, None),
                None => {
                    let read_now;
                    let bytes = match read_before(f) {
                        Some(bytes) => bytes,
                        None => {
                            read_now = crate::load::files::read_regular(f, load::MAX_FILE_BYTES, true).ok()?;
                            &read_now
                        }
                    };
                    (manifest::digest(bytes), status)
                }
            };
            let bytes = meta.as_ref().map_or(0, std::fs::Metadata::len);
            let label = slash(&relative_to(&path, base));
            Some((InputFile { label, digest, bytes, path: f.clone() }, path, learned))
        })
        .collect();
    let read: Vec<_> = read.into_iter().collect::<Option<_>>()?;
    cache.record_all(
        stat::Kind::Input,
        read.iter().filter_map(|(file, path, learned)| Some((path.as_path(), (*learned)?, file.digest))),
    );
    Some(read.into_iter().map(|(file, _, _)| file).collect())
}

/// Where the cache of file status lives (`emit::stat`): `$ISVC_CACHE_DIR`
/// (empty turns it off), else `isvc` in `$XDG_CACHE_HOME` or in `~/.cache`.
fn stat_cache_dir() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).map(PathBuf::from);
    if let Some(dir) = var("ISVC_CACHE_DIR") {
        return (!dir.as_os_str().is_empty()).then_some(dir);
    }
    match var("XDG_CACHE_HOME").filter(|d| d.is_absolute()) {
        Some(dir) => Some(dir.join("isvc")),
        None => var("HOME").filter(|d| d.is_absolute()).map(|home| home.join(".cache").join("isvc")),
    }
}

/// Where the cache of file status of the output tree `out` is kept.
fn stat_place(out: &Path) -> stat::Place {
    stat::Place::of(stat_cache_dir().as_deref(), out)
}

/// The fingerprint of the input files as found, under the run's `settings`
/// (those the manifest records: which platform file and templates, by
/// digest) and arguments; `None` with the cache off. What the tree and the
/// labels of the inputs depend on besides is in it: the working directory,
/// the directory the labels are relative to, the tree's path and the input
/// paths given.
fn inputs_fingerprint(
    place: &stat::Place,
    settings: &[String],
    paths: &[PathBuf],
    out: &Path,
    found: &InputStatus,
) -> Option<stat::Verified> {
    let mut f = place.fingerprint()?;
    let text = |f: &mut stat::Fingerprint, p: &Path| f.text(p.as_os_str().as_encoded_bytes());
    f.text(b"settings");
    settings.iter().for_each(|s| f.text(s.as_bytes()));
    f.text(b"places");
    [found.cwd.as_path(), found.base.as_path(), out].into_iter().for_each(|p| text(&mut f, p));
    f.text(b"paths");
    paths.iter().for_each(|p| text(&mut f, p));
    f.text(b"inputs");
    f.entries(&found.files, |(path, meta)| {
        (path.as_os_str().as_encoded_bytes(), b'f', Some(meta.as_ref().and_then(stat::Stat::of)))
    });
    Some(f.finish())
}

/// The fingerprint of the tree as walked; `None` where it was not walked,
/// or with the cache off.
fn tree_fingerprint(place: &stat::Place, walk: &Walk) -> Option<stat::Verified> {
    let walked = walk.walked()?;
    let mut f = place.fingerprint()?;
    walked.fingerprint(&mut f);
    Some(f.finish())
}

/// What a run reads of an output tree and its inputs before it compiles:
/// the tree's manifest and cache of file status, and the digests of the
/// input files, each set once by [`Survey::read_while_compiling`], as it
/// is read.
#[derive(Default)]
pub(super) struct Survey {
    cache: OnceLock<StatCache>,
    manifest: OnceLock<Option<Manifest>>,
    /// The input files; `None` for standard input or an input that cannot
    /// be read.
    inputs: OnceLock<Option<Vec<InputFile>>>,
    /// The input files found, their digests left to be taken from what
    /// the compile reads ([`Survey::take_input_digests`]).
    deferred: OnceLock<InputStatus>,
}

/// How [`Survey::read_while_compiling`] reads the tree, when the manifest
/// records the settings.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Reading {
    /// Not at all.
    Skip,
    /// Without the lock (`--check`, `diff`).
    Scan,
    /// Under the lock, for writing: `out` is the checked output directory.
    Open,
}

/// The tree as walked, before its files are read.
pub(super) enum Walk {
    Skipped,
    Scanned(output::Walked),
    Opened(output::Opening),
}

impl Walk {
    /// What the walk found, if the tree was walked.
    fn walked(&self) -> Option<&output::Walked> {
        match self {
            Walk::Skipped => None,
            Walk::Scanned(walked) => Some(walked),
            Walk::Opened(opening) => Some(opening.walked()),
        }
    }

    /// The tree as walked, its files not read: a tree found up to date by
    /// its fingerprint (for writing, still under the lock).
    fn unread(self) -> TreeRead {
        match self {
            Walk::Skipped | Walk::Scanned(_) => TreeRead { writer: None, scanned: None },
            Walk::Opened(opening) => TreeRead { writer: Some(opening.unread()), scanned: None },
        }
    }

    /// The tree's files read, but those `cache` knows unchanged.
    pub(super) fn read(self, cache: &StatCache) -> Result<TreeRead, Diagnostics> {
        Ok(match self {
            Walk::Skipped => TreeRead { writer: None, scanned: None },
            Walk::Scanned(walked) => TreeRead { writer: None, scanned: walked.read(cache).ok() },
            Walk::Opened(opening) => TreeRead { writer: Some(opening.read(cache)?), scanned: None },
        })
    }
}

/// The tree as walked, and read if the cache was loaded by then.
enum Walking {
    Unread(Walk),
    Read(Result<(TreeRead, bool), Diagnostics>),
}

/// The tree as read: under the lock, for writing, or not.
pub(super) struct TreeRead {
    pub(super) writer: Option<output::Writer>,
    pub(super) scanned: Option<output::Existing>,
}

impl TreeRead {
    /// The tree's contents, either way.
    pub(super) fn existing(&self) -> Option<&output::Existing> {
        self.writer.as_ref().map(|w| &w.existing).or(self.scanned.as_ref())
    }

    /// Whether `recorded` (a manifest of this run's settings) lists the
    /// files isvc owns in the tree, unedited: the tree a render may keep
    /// namespaces of.
    pub(super) fn described_by(&self, recorded: &Manifest) -> bool {
        self.existing().is_some_and(|e| recorded.matches_tree(e))
    }
}

impl Survey {
    /// The cache of file status (off, before it is loaded).
    pub(super) fn cache(&self) -> &StatCache {
        self.cache.get_or_init(StatCache::off)
    }

    pub(super) fn manifest(&self) -> Option<&Manifest> {
        self.manifest.get().and_then(Option::as_ref)
    }

    pub(super) fn inputs(&self) -> Option<&[InputFile]> {
        self.inputs.get().and_then(Option::as_deref)
    }

    /// Takes the digests of the input files the survey left to the
    /// compile (there was no manifest to compile by): of the files the
    /// compile read, from their bytes as it read them (the `services`'
    /// sources), and of the others (the cache does not know them, and
    /// they declared no service) read now. Nothing where the survey took
    /// them.
    pub(super) fn take_input_digests(&self, services: &[LoadedService]) {
        let Some(found) = self.deferred.get() else { return };
        let read: std::collections::HashMap<&Path, &[u8]> =
            services.iter().map(|s| (s.source.name.as_path(), s.source.text.as_bytes())).collect();
        let _ = self.inputs.set(input_digests_read(found, self.cache(), |path| read.get(path).copied()));
    }

    /// The manifest, when it records this run's settings and the tree is
    /// read (`reading`) from input files all found: whether it describes
    /// the tree is for [`TreeRead::described_by`] to tell.
    pub(super) fn recorded(&self, settings: &[String], reading: Reading) -> Option<&Manifest> {
        self.of_settings(settings, reading).filter(|_| self.inputs().is_some())
    }

    /// The manifest, when it records this run's settings and the tree is
    /// read (`reading`): one a compile may go by, once the input files are
    /// all found ([`Survey::recorded`]).
    fn of_settings(&self, settings: &[String], reading: Reading) -> Option<&Manifest> {
        self.manifest().filter(|m| reading != Reading::Skip && m.settings == settings)
    }

    /// Whether `recorded` lists exactly this run's input files, by digest.
    /// With [`TreeRead::described_by`]: the tree is by its digests exactly what
    /// a render would write there, and no compile is needed.
    pub(super) fn same_inputs(&self, recorded: &Manifest) -> bool {
        let Some(current) = self.inputs() else { return false };
        let current: Vec<(&str, &str)> = current.iter().map(|f| (f.label.as_str(), f.digest.as_str())).collect();
        !current.is_empty() && recorded.same_inputs(&current)
    }

    /// Reads the output tree `out` and the input files `paths` (labelled
    /// relative to `base`) and, on the chance that the manifest of this
    /// run's `settings` describes the tree (as it does unless the tree was
    /// edited by hand), compiles `inputs` where the manifest shows them
    /// changed: the namespaces [`select`] chooses (the input files are
    /// those recorded: nothing). Returns the manifest if it describes the
    /// tree, and then the compile (its warnings not shown yet), with the
    /// selection it read by.
    ///
    /// The tree is walked (for a render, under the lock it writes under)
    /// and the input files found, side by side, each with the status of
    /// every file where the cache may know it, and each part takes its
    /// fingerprint ([`stat::Fingerprint`]). Where both are those a run
    /// recorded as it found the tree up to date, the tree still is, and
    /// the survey ends with the manifest's summary: nothing else is read.
    ///
    /// Else the cache of file status and the manifest are read side by
    /// side: the tree's files and the input files are looked up in the
    /// one, the tree and the selection are judged by the other. The tree's
    /// files are read, but those the cache knows unchanged; the input
    /// files' digests are taken, and what changed compiled. Where the
    /// inputs' fingerprint is not the one recorded (a service changed),
    /// the inputs' part goes on to that while the tree is walked: at
    /// 10,000 services in 20 namespaces, a re-render after one change
    /// waited for the walk and then took 1.06x the time (benches/README.md;
    /// so did `diff` when the compile waited for the tree to be read). A
    /// tree found up to date so has its fingerprints recorded.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn read_while_compiling<'s, T: Held>(
        &'s self,
        paths: &[PathBuf],
        out: &Path,
        base: &Path,
        settings: &[String],
        reading: Reading,
        inputs: &Sources,
        platform: Option<&Platform>,
    ) -> Result<Surveyed<'s, T>, Diagnostics> {
        // The run's start (what a status must be older than to be
        // recorded) is taken before anything of the tree is read.
        let place = stat_place(out);
        let text = Manifest::read_text(out);
        // The settings the manifest records, on its first lines, decide
        // whether the tree is walked.
        let recorded = text.as_deref().and_then(Manifest::settings_in);
        let reading = if recorded.is_some_and(|s| s == settings) { reading } else { Reading::Skip };
        let status = place.exists();
        let verified = if reading == Reading::Skip { None } else { place.verified() };
        let text = text.as_deref();
        // The cache of file status and the manifest, read side by side.
        // (The manifest is set first: with the cache set, both are.)
        let load = || {
            let (cache, manifest) = rayon::join(|| place.read(), || text.and_then(Manifest::parse));
            let _ = self.manifest.set(manifest);
            let _ = self.cache.set(cache);
        };
        // The tree's files read, and whether the manifest describes them.
        let read = |walk: Walk| {
            let tree = walk.read(self.cache())?;
            // (Of a manifest of this run's settings: whether the input
            // files were all found is for the other part to tell.)
            let described = self.manifest().is_some_and(|m| m.settings == settings && tree.described_by(m));
            Ok::<_, Diagnostics>((tree, described))
        };
        // The input files' digests taken, and what changed compiled.
        let produce = |found: Option<InputStatus>| {
            // Without a manifest of these settings to compile by, every
            // input file is compiled: its digest is taken from the bytes
            // the compile reads, not read twice (a first render of 10,000
            // services read each file once for its digest and once to
            // parse it).
            match found {
                Some(found) if self.of_settings(settings, reading).is_none() => {
                    let _ = self.deferred.set(found);
                }
                found => {
                    let _ = self.inputs.set(found.and_then(|found| input_digests(&found, self.cache())));
                }
            }
            let recorded = self.recorded(settings, reading);
            let same = recorded.is_some_and(|m| self.same_inputs(m));
            // The manifest, if there is something to compile by it.
            let changed = recorded.filter(|_| !same);
            let files = self.inputs().unwrap_or_default();
            let mut selection = changed.and_then(|m| select(inputs, platform, m, files));
            let compiled = changed
                .map(|m| compile_unshown::<T>(inputs, base, None, Namespaces::of(&mut selection, files, Some(m))));
            (same, compiled, selection)
        };
        // The tree walked and its fingerprint taken; read too if the other
        // part has loaded the cache by then (it does so only once the tree
        // cannot be found up to date by its fingerprint).
        let ((walk, tree_fp), (inputs_fp, early)) = rayon::join(
            || {
                // The directories' listings kept beside the cache, which
                // spare the walk most directories' reads; not where the
                // cache knows nothing yet (a fresh checkout, a first
                // render), as no file's status is taken either: the
                // status of every directory, to record its listing, would
                // be 10,000 calls more at 10,000 services.
                let kept = if reading == Reading::Skip || !status { Listings::off() } else { place.listings() };
                let walk = match reading {
                    Reading::Skip => Walk::Skipped,
                    Reading::Scan => output::walk_tree(out, false, status, &kept).map_or(Walk::Skipped, Walk::Scanned),
                    Reading::Open => match output::Writer::lock_and_walk(out, status, &kept) {
                        Ok(opening) => Walk::Opened(opening),
                        Err(e) => return (Err(e), None),
                    },
                };
                let tree_fp = tree_fingerprint(&place, &walk);
                let walk = if self.cache.get().is_some() { Walking::Read(read(walk)) } else { Walking::Unread(walk) };
                (Ok(walk), tree_fp)
            },
            || {
                let found = input_status(paths, base);
                let inputs_fp =
                    found.as_ref().and_then(|found| inputs_fingerprint(&place, settings, paths, out, found));
                // Inputs other than those of the state recorded: the tree
                // cannot be found up to date by its fingerprint, and the
                // compile starts while the tree is walked.
                let may_be_verified = matches!((&verified, &inputs_fp), (Some((v, _)), Some(f)) if *v == f.digest);
                if may_be_verified {
                    return (inputs_fp, Err(found));
                }
                load();
                (inputs_fp, Ok(produce(found)))
            },
        );
        let (tree, produced) = match (walk?, early) {
            (Walking::Read(tree), Ok(produced)) => (tree, produced),
            (Walking::Unread(walk), Ok(produced)) => (read(walk), produced),
            // (The cache is loaded only once the inputs' part found no
            // fingerprint to match.)
            (Walking::Read(tree), Err(found)) => (tree, produce(found)),
            (Walking::Unread(walk), Err(found)) => {
                let tree_verified = matches!((&verified, &tree_fp), (Some((_, v)), Some(f)) if *v == f.digest);
                if tree_verified && let Some((summary, listed)) = text.and_then(Manifest::summary) {
                    let _ = self.manifest.set(Some(summary));
                    let described = self.manifest();
                    let tree = walk.unread();
                    return Ok(Surveyed { tree, described, same: true, compiled: None, selection: None, listed });
                }
                load();
                rayon::join(|| read(walk), || produce(found))
            }
        };
        let (tree, described) = tree?;
        let (same, compiled, selection) = produced;
        let described = self.recorded(settings, reading).filter(|_| described);
        // A compile of a tree the manifest does not describe is set aside:
        // its errors too, which a full compile reports.
        let compiled = match (described, compiled) {
            (Some(_), Some(compiled)) => Some(compiled?),
            _ => None,
        };
        let selection = selection.filter(|_| described.is_some());
        if let (Some(_), true, Some(inputs), Some(tree)) = (described, same, &inputs_fp, &tree_fp) {
            place.record_verified(inputs, tree);
        }
        let listed = described.map_or(0, |m| m.outputs.len());
        Ok(Surveyed { tree, described, same, compiled, selection, listed })
    }
}

/// What [`Survey::read_while_compiling`] found.
pub(super) struct Surveyed<'s, T> {
    pub(super) tree: TreeRead,
    /// The manifest, if it records this run's settings and describes the
    /// tree.
    pub(super) described: Option<&'s Manifest>,
    /// Whether the manifest lists this run's input files, unchanged.
    pub(super) same: bool,
    /// The compile of what the manifest shows changed, if it describes the
    /// tree and the inputs changed.
    pub(super) compiled: Option<Compiled<T>>,
    pub(super) selection: Option<Selection<'s>>,
    /// The number of output files the manifest lists, if it describes the
    /// tree (`described` may leave them unread).
    pub(super) listed: usize,
}

/// The namespaces a render compiles whatever changed (those of the tenants
/// with Kueue queues: a cohort's tenants are compiled together), when it
/// may read only the input files of the namespaces a change touches; `None`
/// when it may not: where a cluster names the services it runs, each of
/// which must be among the services a compile is given (the compile's
/// check of the names, `compiler::clusters::unknown_services`, would miss
/// the services of the namespaces kept unread).
fn always_compiled(inputs: &Sources, platform: Option<&Platform>) -> Option<BTreeSet<String>> {
    let Some(platform) = platform else {
        // No platform file, or one that does not load (the compile says why).
        return (inputs.platform.is_none() && inputs.gitops.is_none()).then(BTreeSet::new);
    };
    let names_services = platform.clusters.iter().any(|c| !c.services.is_empty());
    (!names_services).then(|| compiler::cohort_namespaces(platform).into_keys().collect())
}

/// The input files of the namespaces a change touches, over the tree the
/// manifest `recorded` describes, when a compile may read only those
/// ([`always_compiled`], [`Selection::new`]).
fn select<'m>(
    inputs: &Sources,
    platform: Option<&Platform>,
    recorded: &'m Manifest,
    files: &'m [InputFile],
) -> Option<Selection<'m>> {
    let always = always_compiled(inputs, platform)?;
    Selection::new(recorded, files.iter().map(|f| (f.label.as_str(), f.digest.as_str())), always)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_taken_from_the_bytes_a_compile_read_and_other_files_read_now() {
        let dir = tempfile::tempdir().unwrap();
        let (read, unread) = (dir.path().join("read.yaml"), dir.path().join("unread.yaml"));
        std::fs::write(&read, "on disk").unwrap();
        std::fs::write(&unread, "on disk too").unwrap();
        let files = [&read, &unread].map(|p| (p.to_path_buf(), std::fs::metadata(p).ok())).to_vec();
        let found = InputStatus { cwd: dir.path().to_path_buf(), base: dir.path().to_path_buf(), files };
        // The bytes a compile read of `read` (here not those on disk, to
        // tell the two apart): its digest is theirs, and the file is not
        // read again; `unread` is.
        let compiled = b"as the compile read it";
        let digests = input_digests_read(&found, &StatCache::off(), |p| (p == read).then_some(&compiled[..])).unwrap();
        assert_eq!(digests[0].label, "read.yaml");
        assert_eq!(digests[0].digest, manifest::digest(compiled));
        assert_eq!(digests[1].digest, manifest::digest(b"on disk too"));
        // Without them, each file is read.
        let read_now = input_digests(&found, &StatCache::off()).unwrap();
        assert_eq!(read_now[0].digest, manifest::digest(b"on disk"));
    }
}
