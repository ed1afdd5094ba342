//! The output tree: one file per object, written atomically, pruned, and
//! never touching what isvc did not write.
//!
//! - A file is isvc's when its first line starts with [`HEADER_PREFIX`].
//! - Everything is computed and checked before the first write, so an error
//!   leaves the tree as it was.
//! - The new tree is built beside the old one and swapped in with one
//!   atomic exchange: a crash leaves the old tree or the new one, never a
//!   mix. Where that is impossible, nothing is written (no file-by-file
//!   fallback).
//! - Directories without a change keep their inode, owner, mode, extended
//!   attributes and modification time.
//! - A file whose bytes would not change is not rewritten.
//! - isvc's files that are no longer produced are removed, with the
//!   directories that removal leaves empty. Other files are never touched,
//!   and a planned path that holds one is an error.
//! - Symbolic links inside the tree are never followed or written through.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::base::diagnostics::{Diagnostic, Diagnostics};
use crate::base::digest::{Digest, digest};
use crate::base::paths::TreePath;
#[cfg(unix)]
use crate::emit::listing::{DirStat, Listed as ListedAs, Listing};
use crate::emit::listing::{Learned, Listings};
use crate::emit::stat::{Fingerprint, Kind, Stat, StatCache};
use crate::model::objects::{HEADER_PREFIX, Object, Written};

/// Prefix of temporary files; leftovers of a killed run are removed.
/// The manifest's file name, at the root of the output tree (see
/// `emit::manifest`). Not a `.yaml` file: kustomize, Argo CD and Flux never
/// take it for a manifest to apply. The writer renames it into place on its
/// own, after the tree.
pub const MANIFEST: &str = ".isvc-manifest";

const TEMP_PREFIX: &str = ".isvc-tmp-";
/// Prefix of the staging directories built beside `--out`: a name no user
/// picks. Only directories with it are ever removed as leftovers of a
/// killed run, and only under the lock.
const STAGE_PREFIX: &str = ".isvc-staging~";

/// A file of a tree: the digest of its bytes, and the bytes themselves
/// where they are held. A planned file without its text is one a re-render
/// keeps as the tree holds it; a file of the tree without its text was
/// read for its digest alone ([`scan`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contents {
    /// [`crate::base::digest::digest`] of the bytes.
    pub digest: Digest,
    pub text: Option<String>,
}

impl Contents {
    /// `text`, with its digest.
    pub fn text(text: String) -> Contents {
        Contents { digest: digest(text.as_bytes()), text: Some(text) }
    }

    /// A file known by its digest alone.
    pub fn digest(digest: Digest) -> Contents {
        Contents { digest, text: None }
    }
}

/// The planned tree: relative path to file contents.
pub type Tree = BTreeMap<TreePath, Contents>;

/// The files for `objects`, with the kustomize entry points of each tree.
pub fn tree(objects: &[Object]) -> Tree {
    let tree: Tree = objects.par_iter().map(|o| (o.relative_path().into(), Contents::text(o.to_file()))).collect();
    with_kustomizations(tree, objects.iter().filter_map(|o| o.cluster.clone()).collect())
}

/// [`tree`] of objects already written to their files' text, with the
/// files of the namespaces `kept` from an earlier render, known by digest.
/// A directory kept with its kustomization keeps that one; the others are
/// made again.
pub fn written_tree(objects: Vec<Written>, kept: Kept) -> Tree {
    let roots: BTreeSet<String> = objects.iter().filter_map(|w| w.object.cluster.clone()).collect();
    let Kept { files: mut tree, dirs, unlisted, services, .. } = kept;
    let mut made: Vec<(TreePath, Contents)> =
        objects.into_par_iter().map(|w| (w.object.relative_path().into(), Contents::text(w.text))).collect();
    // The kept services' files stand among the files made of their
    // namespaces, which get their kustomizations made again.
    made.extend(services);
    // Sorted on every core, by bytes for plain paths: a map built from
    // sorted files (a cold render's) is built in one pass, where one
    // insert after another compared each path with some fifteen others,
    // component by component.
    made.par_sort_by(|a, b| a.0.cmp(&b.0));
    let roots: Vec<String> = roots.into_iter().collect();
    let dirs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
    // The kustomizations are made from the files outside the directories
    // kept with theirs: those the compile made, and the kept files of a
    // namespace without a kustomization of its own ([`Existing::kept`]).
    // A tree of several clusters' roots has every file looked at, as a
    // root's name may be a namespace's.
    let made_paths = made.iter().map(|(p, _)| p.as_path());
    let extra = if roots.is_empty() {
        crate::derive::gitops::kustomizations(made_paths.chain(unlisted.iter().map(PathBuf::as_path)), &dirs, &roots)
    } else {
        crate::derive::gitops::kustomizations(made_paths.chain(tree.keys().map(TreePath::as_path)), &dirs, &roots)
    };
    if tree.is_empty() {
        tree = made.into_iter().collect();
    } else {
        tree.extend(made);
    }
    tree.extend(extra.into_iter().map(|(path, text)| (path.into(), Contents::text(text))));
    tree
}

/// The files of some namespaces' directories of a tree found, which a
/// render keeps as they are: [`Existing::kept`], for [`written_tree`].
#[derive(Debug, Default)]
pub struct Kept {
    /// The namespaces whose files these are.
    pub namespaces: BTreeSet<String>,
    /// Their files, known by digest.
    files: Tree,
    /// How many objects each holds in each cluster's tree (`None` without
    /// clusters): its files in directories below its own (not its
    /// kustomization), for those that hold any.
    pub objects: BTreeMap<(Option<String>, String), usize>,
    /// The directories of the kustomizations kept.
    dirs: Vec<PathBuf>,
    /// The files of the namespaces kept without a kustomization in their
    /// own directory (none, in a tree isvc wrote): [`written_tree`] makes
    /// theirs again.
    unlisted: Vec<PathBuf>,
    /// The files of the services kept in namespaces compiled again
    /// ([`Existing::keep_services`]), known by digest.
    services: Vec<(TreePath, Contents)>,
}

impl Kept {
    /// How many objects the files of the services kept hold.
    pub fn service_objects(&self) -> usize {
        self.services.iter().filter(|(path, _)| holds_object(path)).count()
    }
}

/// Whether `name`, of a namespace or a service in a manifest or a
/// compile, is one plain name of the tree: not empty, `.` or `..`, and
/// without a `/` (one edited by hand into a manifest names no directory).
fn one_name(name: &str) -> bool {
    !name.contains('/') && crate::base::paths::plain(name.as_bytes())
}

/// The roots of a tree's namespace directories: each cluster's directory,
/// or, without clusters, the tree's own root (`None`).
fn roots(clusters: &[String]) -> Vec<Option<&str>> {
    if clusters.is_empty() { vec![None] } else { clusters.iter().map(|c| Some(c.as_str())).collect() }
}

impl Existing {
    /// Adds to `kept` the files of the services `services` names, by
    /// namespace: each service's directory, `<namespace>/<name>/` (in each
    /// of the `clusters`' trees, `<cluster>/<namespace>/<name>/`), in a
    /// namespace compiled again but for them
    /// ([`crate::Compilation::kept_services`]). Their objects are counted
    /// with their namespace's.
    pub fn keep_services(&self, kept: &mut Kept, services: &BTreeMap<String, BTreeSet<String>>, clusters: &[String]) {
        use std::ops::Bound;
        for root in roots(clusters) {
            if root.is_some_and(|r| !one_name(r)) {
                continue;
            }
            for (ns, names) in services {
                for name in names {
                    // Names a compile checked (DNS labels), never `..` or `a/b`.
                    if !one_name(ns) || !one_name(name) {
                        continue;
                    }
                    let dir = Path::new(root.unwrap_or_default()).join(ns).join(name);
                    let run = self.ours.range::<Path, _>((Bound::Included(dir.as_path()), Bound::Unbounded));
                    let start = kept.services.len();
                    for (path, contents) in run {
                        if !path.starts_with(&dir) {
                            break;
                        }
                        kept.services.push((path.clone(), Contents::digest(contents.digest)));
                    }
                    // (Every file below a service's directory holds an
                    // object.)
                    let files = kept.services.len() - start;
                    if files > 0 {
                        *kept.objects.entry((root.map(str::to_string), ns.clone())).or_default() += files;
                    }
                }
            }
        }
    }

    /// The files of the directories of `namespaces` (named by their first
    /// component, or in each of the `clusters`' trees by their second),
    /// each found as one run of the sorted files, with what
    /// [`written_tree`] needs to know of them.
    pub fn kept(&self, namespaces: BTreeSet<String>, clusters: &[String]) -> Kept {
        use std::ops::Bound;
        // A name that is not one plain name (empty, `..`, `a/b`: from a
        // manifest edited by hand) is no path's first name: it has no
        // files.
        let roots = roots(clusters);
        let dirs: Vec<(Option<&str>, &String)> = roots
            .iter()
            .filter(|r| r.is_none_or(one_name))
            .flat_map(|&root| namespaces.iter().filter(|ns| one_name(ns)).map(move |ns| (root, ns)))
            .collect();
        // Each directory's run of files gathered on every core, in order:
        // after one change at 10,000 services, 19 namespaces' 37,000 files,
        // which on one core took 15 ms after the compile.
        struct Run<'a> {
            files: Vec<(TreePath, Contents)>,
            kustomizations: Vec<&'a Path>,
            objects: usize,
            own: bool,
        }
        let runs: Vec<Run<'_>> = dirs
            .par_iter()
            .map(|&(root, ns)| {
                let dir = Path::new(root.unwrap_or_default()).join(ns);
                let mut run = Run { files: Vec::new(), kustomizations: Vec::new(), objects: 0, own: false };
                for (path, contents) in self.ours.range::<Path, _>((Bound::Included(dir.as_path()), Bound::Unbounded)) {
                    let Some(place) = Place::of(path, root, ns) else { break };
                    if let Some(d) = place.kustomization_dir {
                        run.own |= d == dir;
                        run.kustomizations.push(d);
                    }
                    if place.object {
                        run.objects += 1;
                    }
                    run.files.push((path.clone(), Contents::digest(contents.digest)));
                }
                run
            })
            .collect();
        let mut kept = Kept::default();
        let mut files: Vec<(TreePath, Contents)> = Vec::with_capacity(runs.iter().map(|r| r.files.len()).sum());
        for (run, (root, ns)) in runs.into_iter().zip(dirs) {
            kept.dirs.extend(run.kustomizations.iter().map(|d| d.to_path_buf()));
            if run.objects > 0 {
                kept.objects.insert((root.map(str::to_string), ns.clone()), run.objects);
            }
            if !run.own {
                kept.unlisted.extend(run.files.iter().map(|(p, _)| p.to_path_buf()));
            }
            files.extend(run.files);
        }
        // (Without clusters, in order already: the namespaces' directories
        // sort as their names, and each run in order.)
        kept.files = files.into_iter().collect();
        kept.namespaces = namespaces;
        kept
    }
}

/// Where a file of a namespace's directory lies, as [`Existing::kept`]
/// needs it.
#[derive(Debug, PartialEq, Eq)]
struct Place<'a> {
    /// The directory, if the file is a kustomization below the tree's root.
    kustomization_dir: Option<&'a Path>,
    /// Whether it holds an object ([`is_object_file`]).
    object: bool,
}

impl<'a> Place<'a> {
    /// Where `path` lies, if it is in the directory of the namespace `ns`
    /// (one plain name): by its bytes where it is
    /// [`plain`](crate::base::paths::plain), as a walk's paths are, else
    /// by its components. Both give the same answers (a test says so); the
    /// components cost more, over a tree's 29,000 files.
    /// (`root`: the cluster's directory the namespace's lies in, if any.)
    fn of(path: &'a Path, root: Option<&str>, ns: &str) -> Option<Place<'a>> {
        let Some(whole) = crate::base::paths::plain_bytes(path) else {
            return Place::by_components(path, root, ns);
        };
        let b = match root {
            Some(r) => whole.strip_prefix(r.as_bytes())?.strip_prefix(b"/")?,
            None => whole,
        };
        let rest = b.strip_prefix(ns.as_bytes())?;
        if rest.first().is_some_and(|&c| c != b'/') {
            return None;
        }
        // A kustomization below the root: its name is the last, after a `/`.
        let kustomization =
            b.strip_suffix(crate::derive::gitops::KUSTOMIZATION.as_bytes()).is_some_and(|dir| dir.ends_with(b"/"));
        let kustomization_dir = if kustomization { path.parent() } else { None };
        Some(Place { kustomization_dir, object: plain_object_file(b) })
    }

    fn by_components(path: &'a Path, root: Option<&str>, ns: &str) -> Option<Place<'a>> {
        let below = path.strip_prefix(root.unwrap_or_default()).ok()?;
        if !below.starts_with(ns) {
            return None;
        }
        let parent = below.parent().filter(|d| !d.as_os_str().is_empty());
        let kustomization_dir = parent
            .filter(|_| path.file_name().is_some_and(|n| n == crate::derive::gitops::KUSTOMIZATION))
            .and(path.parent());
        Some(Place { kustomization_dir, object: is_object_file(below) })
    }
}

/// Whether the tree's file `path`, in a namespace's directory, holds an
/// object: an object's file is `<namespace>/<dir>/<file>`; the namespace's
/// kustomization, `<namespace>/kustomization.yaml`, is no object.
pub fn is_object_file(path: &Path) -> bool {
    match crate::base::paths::plain_bytes(path) {
        Some(b) => plain_object_file(b),
        None => path.components().nth(2).is_some(),
    }
}

/// [`is_object_file`] of a path of a tree, by its bytes where it is
/// [`plain`](crate::base::paths::plain), as a walk's and a render's are.
pub fn holds_object(path: &TreePath) -> bool {
    path.plain_bytes().map_or_else(|| is_object_file(path), plain_object_file)
}

/// [`is_object_file`] of a [`plain`](crate::base::paths::plain) path's
/// bytes, whose components are its names: at least three of them.
fn plain_object_file(b: &[u8]) -> bool {
    b.iter().filter(|&&c| c == b'/').nth(1).is_some()
}

/// Adds the kustomize entry points of each tree (one per cluster in
/// `roots`, else one) to `tree`.
fn with_kustomizations(mut tree: Tree, roots: BTreeSet<String>) -> Tree {
    let roots: Vec<String> = roots.into_iter().collect();
    let extra = crate::derive::gitops::kustomizations(tree.keys().map(TreePath::as_path), &[], &roots);
    tree.extend(extra.into_iter().map(|(path, text)| (path.into(), Contents::text(text))));
    tree
}

/// What is in an output directory now.
#[derive(Debug, Default)]
pub struct Existing {
    /// isvc's files: their digests, and their texts when asked for
    /// ([`scan_texts`]).
    pub ours: BTreeMap<TreePath, Contents>,
    /// Files (and other entries) isvc did not write.
    pub foreign: BTreeSet<PathBuf>,
    /// Symbolic links found in the tree.
    pub links: BTreeSet<PathBuf>,
    /// Leftover temporary files of an interrupted run.
    pub temps: Vec<PathBuf>,
    /// Every entry but directories, relative: what `entries` lists, in
    /// the order of paths (a list, not a set: the walk sorted it already,
    /// and a set built from it would compare every path with the next
    /// twice).
    pub entries: Vec<PathBuf>,
    /// Read for a writer: the status each of `ours` had when its digest
    /// was taken (from the cache of file status, or as it was read), where
    /// known, in the order of `ours`; empty otherwise. A swap that
    /// hard-links a file keeps its bytes and moves its change time alone:
    /// the cache learns the new status ([`StatCache::record_relinked`]).
    pub status: Vec<Option<Stat>>,
}

impl Existing {
    /// Whether the walk found the entry `path`.
    fn found(&self, path: &Path) -> bool {
        self.entries.binary_search_by(|e| e.as_path().cmp(path)).is_ok()
    }

    /// The entries found below `root`, relative to it, in order.
    fn found_below<'a>(&'a self, root: &'a Path) -> impl Iterator<Item = &'a Path> + 'a {
        // A path sorts component by component: the entries below `root`
        // follow it, together.
        let start = self.entries.partition_point(|e| e.as_path() < root);
        self.entries[start..].iter().map_while(move |p| p.strip_prefix(root).ok())
    }
}

/// Reads the output directory (which may not exist yet) for the digests of
/// isvc's files: a file `cache` knows unchanged is not read again, and
/// what is read goes into `cache`.
pub fn scan(out: &Path, cache: &StatCache) -> Result<Existing, Diagnostic> {
    walk_tree(out, false, cache.knows_outputs(), &Listings::off())?.read(cache)
}

/// [`scan`] with the texts of isvc's files, every file read.
pub fn scan_texts(out: &Path) -> Result<Existing, Diagnostic> {
    let cache = StatCache::off();
    walk_tree(out, true, false, &Listings::off())?.read(&cache)
}

/// An output directory walked, its files not read yet: [`Walked::read`]
/// reads them, with a cache of file status that may have been loaded
/// meanwhile.
pub struct Walked {
    out: PathBuf,
    /// What the walk found, sorted.
    found: Vec<Found>,
    texts: bool,
    /// Whether [`Existing::status`] is kept (for a writer).
    keep_status: bool,
}

/// Walks the output directory `out` (which may not exist yet) for
/// [`scan`], or [`scan_texts`] if `texts`: with `status`, each regular
/// file's status is taken, for a cache of file status that may know the
/// file (not where it knows none of a tree's files, as on a fresh
/// checkout, where every file is read, and its status taken as it is
/// opened). A directory whose listing `kept` holds for its status is not
/// read, and the listings of the directories read that may be kept are
/// saved ([`crate::emit::listing`]).
pub fn walk_tree(out: &Path, texts: bool, status: bool, kept: &Listings) -> Result<Walked, Diagnostic> {
    let mut walked = Walked { out: out.to_path_buf(), found: Vec::new(), texts, keep_status: false };
    match std::fs::symlink_metadata(out) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(walked),
        Err(e) => {
            return Err(Diagnostic::error(format!("cannot read {}: {e}", out.display())));
        }
        Ok(m) if m.file_type().is_symlink() => {
            return Err(Diagnostic::error(format!(
                "{} is a symbolic link; isvc writes only into a real directory",
                out.display()
            )));
        }
        Ok(m) if !m.is_dir() => {
            return Err(Diagnostic::error(format!("{} exists and is not a directory", out.display()))
                .help("choose another --out"));
        }
        Ok(_) => {}
    }
    // Sorted once, in parallel, so the sets below are built from sorted
    // lists (a path compares component by component, which adds up over
    // tens of thousands of inserts).
    let (mut found, learned) = walk(out, status && !texts, kept)
        .map_err(|e| Diagnostic::error(format!("cannot read {}: {e}", out.display())))?;
    kept.save(learned);
    crate::base::paths::sort_by_path(&mut found, |f| &f.rel);
    walked.found = found;
    Ok(walked)
}

impl Walked {
    /// Feeds `fingerprint` every entry found, in order: its path, what it
    /// is and a regular file's status.
    pub fn fingerprint(&self, fingerprint: &mut Fingerprint) {
        fingerprint.text(b"tree");
        fingerprint.entries(&self.found, |Found { rel, kind, stat }| {
            let path = rel.as_os_str().as_encoded_bytes();
            match kind {
                EntryKind::File => (path, b'f', Some(*stat)),
                EntryKind::Link => (path, b'l', None),
                EntryKind::Other => (path, b'o', None),
            }
        });
    }

    /// The tree's contents: isvc's files read for their digests (their
    /// texts too if walked for [`scan_texts`]), but those `cache` knows
    /// unchanged; what is read goes into `cache`.
    pub fn read(self, cache: &StatCache) -> Result<Existing, Diagnostic> {
        let Walked { out, found, texts, keep_status } = self;
        let out = out.as_path();
        let mut existing = Existing { entries: found.iter().map(|f| f.rel.clone()).collect(), ..Existing::default() };
        let mut files = Vec::with_capacity(found.len());
        for Found { rel, kind, stat } in found {
            match kind {
                EntryKind::Link => {
                    existing.links.insert(rel);
                }
                EntryKind::File if rel.file_name().is_some_and(|n| is_temp_name(&n.to_string_lossy())) => {
                    existing.temps.push(out.join(rel));
                }
                EntryKind::File => files.push((rel, stat)),
                EntryKind::Other => {
                    existing.foreign.insert(rel);
                }
            }
        }
        // Cached under its path in the tree: the cache is the tree's own.
        // A file read is recorded under the status of the file opened, so
        // the entry is that of the bytes hashed even if the file was
        // replaced since the walk. With each file, the status its digest
        // was taken from: the one the cache knew, or the one opened.
        let read_one = |rel: &Path, stat: Option<Stat>| -> std::io::Result<Taken> {
            if let Some(d) = stat.and_then(|s| cache.lookup(Kind::Output, rel, s)) {
                return Ok((Some(Contents::digest(d)), stat, false));
            }
            read_if_ours(&out.join(rel), texts).map(|(contents, opened)| (contents, opened, true))
        };
        let read: Vec<(PathBuf, std::io::Result<Taken>)> = files
            .into_par_iter()
            .map(|(rel, stat)| {
                let r = read_one(&rel, stat);
                (rel, r)
            })
            .collect();
        cache.record_all(
            Kind::Output,
            read.iter().filter_map(|(rel, r)| match r {
                Ok((Some(c), Some(opened), true)) => Some((rel.as_path(), *opened, c.digest)),
                _ => None,
            }),
        );
        // The status of each of isvc's files, in the order of `ours`.
        let mut status = Vec::new();
        let read = read
            .into_iter()
            .map(|(rel, r)| {
                let contents = r.map(|(contents, stat, _)| {
                    if keep_status && contents.is_some() {
                        status.push(stat);
                    }
                    contents
                });
                (rel, contents)
            })
            .collect();
        existing.ours = sort_read(out, read, &mut existing.foreign)?.into_iter().collect();
        existing.status = status;
        Ok(existing)
    }
}

/// isvc's files of what was `read` under `out`, in order; the files found
/// not to be isvc's go into `foreign`; the first error is the result.
fn sort_read(
    out: &Path,
    read: Vec<(PathBuf, std::io::Result<Option<Contents>>)>,
    foreign: &mut BTreeSet<PathBuf>,
) -> Result<Vec<(TreePath, Contents)>, Diagnostic> {
    let mut ours = Vec::with_capacity(read.len());
    for (rel, r) in read {
        match r {
            Ok(Some(contents)) => ours.push((rel.into(), contents)),
            Ok(None) => {
                foreign.insert(rel);
            }
            Err(e) => return Err(Diagnostic::error(format!("cannot read {}: {e}", out.join(&rel).display()))),
        }
    }
    Ok(ours)
}

impl Existing {
    /// isvc's files among those found that `keep` chooses, read again
    /// (under `out`) for their texts, as [`scan_texts`] reads them: what a
    /// diff of part of the tree compares with. A file that is no longer
    /// isvc's is foreign, one gone since is left out (as a walk now would
    /// not find it); no other entry is listed.
    pub fn texts_of(&self, out: &Path, keep: impl Fn(&Path) -> bool) -> Result<Existing, Diagnostic> {
        let chosen: Vec<PathBuf> = self.ours.keys().filter(|p| keep(p)).map(|p| p.to_path_buf()).collect();
        let read: Vec<(PathBuf, std::io::Result<Option<Contents>>)> = chosen
            .into_par_iter()
            .map(|rel| {
                let r = read_if_ours(&out.join(&rel), true).map(|(c, _)| c);
                (rel, r)
            })
            .filter(|(_, r)| !r.as_ref().is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound))
            .collect();
        let mut existing = Existing::default();
        existing.ours = sort_read(out, read, &mut existing.foreign)?.into_iter().collect();
        Ok(existing)
    }
}

/// The entries under `out` but directories, relative, names only.
fn entries(out: &Path) -> Result<BTreeSet<PathBuf>, Diagnostic> {
    if !out.is_dir() {
        return Ok(BTreeSet::new());
    }
    let (found, _) = walk(out, false, &Listings::off())
        .map_err(|e| Diagnostic::error(format!("cannot read {}: {e}", out.display())))?;
    Ok(found.into_iter().map(|f| f.rel).collect())
}

/// An entry of a tree other than a directory.
struct Found {
    /// Its path below the tree's root.
    rel: PathBuf,
    kind: EntryKind,
    /// A regular file's status, when asked for.
    stat: Option<Stat>,
}

/// What an entry of a tree is, as far as [`Walked::read`] cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EntryKind {
    File,
    Link,
    /// Anything else: a FIFO, a socket, a device.
    Other,
}

#[cfg(unix)]
impl EntryKind {
    /// As a directory's listing records it.
    fn listed(self) -> ListedAs {
        match self {
            EntryKind::File => ListedAs::File,
            EntryKind::Link => ListedAs::Link,
            EntryKind::Other => ListedAs::Other,
        }
    }

    /// What a listing records, but a directory (`None`).
    fn of_listed(listed: ListedAs) -> Option<EntryKind> {
        match listed {
            ListedAs::Dir => None,
            ListedAs::File => Some(EntryKind::File),
            ListedAs::Link => Some(EntryKind::Link),
            ListedAs::Other => Some(EntryKind::Other),
        }
    }
}

/// Every entry below `root` but directories, without following symbolic
/// links; with `stat`, each regular file's status. The directories of one
/// level are read in parallel, level after level (no recursion, so no
/// depth of directories exhausts the stack). A directory whose listing
/// `kept` holds for its status is not read ([`crate::emit::listing`]);
/// the listings of the directories read that may be kept are returned.
fn walk(root: &Path, stat: bool, kept: &Listings) -> std::io::Result<(Vec<Found>, Vec<Learned>)> {
    let dirs = Dirs::open(root)?;
    // Each directory's entries, gathered into one list of their total
    // length at the end (not grown by doubling: see `Old::parse` in `stat`).
    let mut found: Vec<Vec<Found>> = Vec::new();
    let mut learned = Vec::new();
    let mut level = vec![PathBuf::new()];
    while !level.is_empty() {
        let read: Vec<std::io::Result<Listed>> = level.par_iter().map(|dir| dirs.read(dir, stat, kept)).collect();
        level = Vec::new();
        for r in read {
            let (files, dirs, listing) = r?;
            found.push(files);
            level.extend(dirs);
            learned.extend(listing);
        }
    }
    let mut all = Vec::with_capacity(found.iter().map(Vec::len).sum());
    for files in found {
        all.extend(files);
    }
    Ok((all, learned))
}

/// A directory as [`Dirs::read`] found it: its entries but directories,
/// its directories, and its listing to keep, if it was read and may be
/// kept.
type Listed = (Vec<Found>, Vec<PathBuf>, Option<Learned>);

/// The directories of a tree, each opened from the tree's root (openat(2)
/// with the root's descriptor: a directory's path is looked up from the
/// root, not from the working directory, and the directory itself, not
/// its parents, is not followed if it has become a symbolic link since it
/// was listed), and each entry's status taken from its directory
/// (fstatat(2)). No more than one descriptor per thread is open below the
/// root's, however large a level.
#[cfg(unix)]
struct Dirs {
    root: PathBuf,
    fd: rustix::fd::OwnedFd,
}

#[cfg(unix)]
impl Dirs {
    fn open(root: &Path) -> std::io::Result<Dirs> {
        use rustix::fs::{Mode, OFlags};
        let fd = rustix::fs::open(root, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| named(root, e.into()))?;
        Ok(Dirs { root: root.to_path_buf(), fd })
    }

    /// The entries of the directory `rel`: what [`walk`] keeps, the
    /// directories to read next, and its listing if it may be kept. A
    /// directory whose status `kept` holds a listing for is not read:
    /// each file it lists has its status taken by its path (with `stat`),
    /// and where one is gone or is no longer a regular file, the
    /// directory is read after all.
    fn read(&self, rel: &Path, stat: bool, kept: &Listings) -> std::io::Result<Listed> {
        if !kept.is_on() {
            return self.list(rel, stat, None);
        }
        // The directory's status, taken before it is read: a listing
        // recorded with it is older than the status.
        let at = if rel.as_os_str().is_empty() { Path::new(".") } else { rel };
        let dir_stat = rustix::fs::statat(&self.fd, at, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
            .ok()
            .as_ref()
            .and_then(DirStat::of_raw);
        if let Some(listing) = dir_stat.and_then(|s| kept.find(rel.to_str()?, s))
            && let Some(listed) = self.listed(rel, stat, listing)
        {
            return Ok(listed);
        }
        self.list(rel, stat, dir_stat.filter(|s| kept.settled(s)))
    }

    /// The entries of the directory `rel` as `listing` records them, with
    /// each file's status (with `stat`); `None` where a file listed is
    /// gone or is something else now.
    fn listed(&self, rel: &Path, stat: bool, listing: Listing<'_>) -> Option<Listed> {
        use rustix::fs::AtFlags;
        let mut found = Vec::new();
        let mut dirs = Vec::new();
        for entry in listing.entries() {
            let (listed, name) = entry?;
            let path = rel.join(name);
            let Some(kind) = EntryKind::of_listed(listed) else {
                dirs.push(path);
                continue;
            };
            let stat = if stat && kind == EntryKind::File {
                Some(Stat::of_raw(&rustix::fs::statat(&self.fd, &path, AtFlags::SYMLINK_NOFOLLOW).ok()?)?)
            } else {
                None
            };
            found.push(Found { rel: path, kind, stat });
        }
        Some((found, dirs, None))
    }

    /// The entries of the directory `rel` read; with `settled` (its status
    /// taken before it was read, for a cache of listings), its listing.
    fn list(&self, rel: &Path, stat: bool, settled: Option<DirStat>) -> std::io::Result<Listed> {
        use rustix::fs::{AtFlags, FileType, Mode, OFlags};
        use std::os::unix::ffi::OsStrExt;
        let failed = |e: rustix::io::Errno| named(&self.root.join(rel), e.into());
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = if rel.as_os_str().is_empty() {
            rustix::fs::openat(&self.fd, c".", flags, Mode::empty())
        } else {
            rustix::fs::openat(&self.fd, rel, flags, Mode::empty())
        }
        .map_err(failed)?;
        let mut dir = rustix::fs::Dir::new(fd).map_err(failed)?;
        let mut found = Vec::new();
        let mut dirs = Vec::new();
        while let Some(entry) = dir.read() {
            let entry = entry.map_err(failed)?;
            let name = entry.file_name();
            if name == c"." || name == c".." {
                continue;
            }
            let name_os = std::ffi::OsStr::from_bytes(name.to_bytes());
            let status = |dir: &rustix::fs::Dir| {
                rustix::fs::statat(dir.fd().map_err(failed)?, name, AtFlags::SYMLINK_NOFOLLOW).map_err(failed)
            };
            // A file system that does not say what an entry is (`DT_UNKNOWN`)
            // is asked for its status.
            let (file_type, taken) = match entry.file_type() {
                FileType::Unknown => {
                    let st = status(&dir)?;
                    (FileType::from_raw_mode(st.st_mode as _), Some(st))
                }
                t => (t, None),
            };
            let path = rel.join(name_os);
            let kind = match file_type {
                FileType::Directory => {
                    dirs.push(path);
                    continue;
                }
                FileType::RegularFile => EntryKind::File,
                FileType::Symlink => EntryKind::Link,
                _ => EntryKind::Other,
            };
            let stat = match (stat && kind == EntryKind::File, taken) {
                (false, _) => None,
                (true, Some(st)) => Stat::of_raw(&st),
                // A file gone since its directory was read has no status.
                (true, None) => status(&dir).ok().as_ref().and_then(Stat::of_raw),
            };
            found.push(Found { rel: path, kind, stat });
        }
        let learned = settled.and_then(|s| {
            let files =
                found.iter().map(|f| (f.kind.listed(), f.rel.file_name().unwrap_or_default().as_encoded_bytes()));
            let subdirs = dirs.iter().map(|d| (ListedAs::Dir, d.file_name().unwrap_or_default().as_encoded_bytes()));
            Learned::new(rel, s, files.chain(subdirs))
        });
        Ok((found, dirs, learned))
    }
}

/// The directories of a tree, each read by its whole path.
#[cfg(not(unix))]
struct Dirs {
    root: PathBuf,
}

#[cfg(not(unix))]
impl Dirs {
    fn open(root: &Path) -> std::io::Result<Dirs> {
        Ok(Dirs { root: root.to_path_buf() })
    }

    fn read(&self, rel: &Path, _stat: bool, _kept: &Listings) -> std::io::Result<Listed> {
        let dir = self.root.join(rel);
        let mut found = Vec::new();
        let mut dirs = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(|e| named(&dir, e))? {
            let entry = entry.map_err(|e| named(&dir, e))?;
            let file_type = entry.file_type().map_err(|e| named(&dir, e))?;
            let path = rel.join(entry.file_name());
            let kind = match () {
                _ if file_type.is_dir() => {
                    dirs.push(path);
                    continue;
                }
                _ if file_type.is_file() => EntryKind::File,
                _ if file_type.is_symlink() => EntryKind::Link,
                _ => EntryKind::Other,
            };
            found.push(Found { rel: path, kind, stat: None });
        }
        Ok((found, dirs, None))
    }
}

/// `e`, with the path it is about.
fn named(path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// A temporary file of [`write_atomic`]: the prefix and six random letters
/// or digits, and nothing else, so a user's file is never taken for one.
fn is_temp_name(name: &str) -> bool {
    name.strip_prefix(TEMP_PREFIX).is_some_and(|r| r.len() == 6 && r.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// Largest file taken for one of isvc's own; a larger one is foreign.
const MAX_OWN_FILE_BYTES: u64 = 64 << 20;

/// A file of the tree as read: its contents if it is isvc's, and the
/// status of the file opened where it was read (to record in the cache of
/// file status).
type FileRead = (Option<Contents>, Option<Stat>);

/// A file of the tree as [`Walked::read`] took it: its contents if it is
/// isvc's, the status its digest was taken from, and whether it was read
/// now (to record in the cache of file status) rather than known by it.
type Taken = (Option<Contents>, Option<Stat>, bool);

/// The digest of `path`, and its text if `text`, if isvc wrote it, with
/// the status of the file opened. Of a file that does not start with the
/// header, no more than one read's worth is read ([`read_own`]), whatever
/// its size; a FIFO or device is foreign and never opened for long.
fn read_if_ours(path: &Path, text: bool) -> std::io::Result<FileRead> {
    use crate::load::files::{ReadError, open_regular};
    let (file, meta) = match open_regular(path, false) {
        Ok(r) => r,
        Err(ReadError::NotRegular(_) | ReadError::TooLarge(_)) => return Ok((None, None)),
        Err(ReadError::Io(e)) => return Err(e),
    };
    if meta.len() > MAX_OWN_FILE_BYTES {
        return Ok((None, None));
    }
    // The status of the file opened (fstat(2) by `open_regular`).
    let opened = Stat::of(&meta);
    if text {
        // One allocation of the file's size (and a byte to see its end).
        let mut bytes = Vec::with_capacity(meta.len() as usize + 1);
        if !read_own(&file, meta.len(), &mut bytes)? {
            return Ok((None, None));
        }
        return Ok((String::from_utf8(bytes).ok().map(Contents::text), opened));
    }
    // For the digest alone, each thread reads into one buffer it keeps.
    thread_local! {
        static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    BUFFER.with_borrow_mut(|bytes| {
        bytes.clear();
        if !read_own(&file, meta.len(), bytes)? {
            return Ok((None, None));
        }
        Ok((std::str::from_utf8(bytes).is_ok().then(|| Contents::digest(digest(bytes))), opened))
    })
}

/// Reads the open `file` of `len` bytes (as its status gave them) into
/// `bytes`, if it starts with isvc's header: whether it does. The first
/// read asks for the whole file and a byte more (of a file as small as
/// isvc's, in one call; at least the header), but no more than
/// [`FIRST_READ`], so that a large file that is not isvc's costs one read;
/// a file longer than its status said (one that grew since) is read to
/// its end, up to [`MAX_OWN_FILE_BYTES`] in all.
fn read_own(mut file: &std::fs::File, len: u64, bytes: &mut Vec<u8>) -> std::io::Result<bool> {
    use std::io::Read;
    let whole = usize::try_from(len).map_or(FIRST_READ, |l| l.saturating_add(1));
    let want = whole.max(HEADER_PREFIX.len()).min(FIRST_READ);
    let start = bytes.len();
    bytes.resize(start + want, 0);
    let mut got = 0;
    while got < want {
        match file.read(&mut bytes[start + got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    bytes.truncate(start + got);
    if !bytes[start..].starts_with(HEADER_PREFIX.as_bytes()) {
        return Ok(false);
    }
    if got == want {
        file.take(MAX_OWN_FILE_BYTES.saturating_sub(got as u64)).read_to_end(bytes)?;
    }
    Ok(true)
}

/// The most [`read_own`] asks for in its first read: 64 KiB.
const FIRST_READ: usize = 64 << 10;

/// How the planned tree differs from what is on disk.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    pub create: Vec<PathBuf>,
    pub update: Vec<PathBuf>,
    pub delete: Vec<PathBuf>,
    pub unchanged: usize,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.create.is_empty() && self.update.is_empty() && self.delete.is_empty()
    }

    /// Every path created, updated or deleted.
    fn paths(&self) -> impl Iterator<Item = &PathBuf> {
        self.create.iter().chain(&self.update).chain(&self.delete)
    }

    /// The changes of the tree a swap replaces: all but the manifest's
    /// ([`write_swap`]).
    fn without_manifest(&self) -> Changes {
        let record = Path::new(MANIFEST);
        let not_record = |v: &Vec<PathBuf>| v.iter().filter(|p| p.as_path() != record).cloned().collect::<Vec<_>>();
        Changes {
            create: not_record(&self.create),
            update: not_record(&self.update),
            delete: not_record(&self.delete),
            unchanged: self.unchanged,
        }
    }

    /// One line: "3 created, 1 updated, 0 deleted, 10 unchanged".
    pub fn summary(&self) -> String {
        format!(
            "{} created, {} updated, {} deleted, {} unchanged",
            self.create.len(),
            self.update.len(),
            self.delete.len(),
            self.unchanged
        )
    }
}

/// Compares the planned tree with the existing one.
pub fn changes(planned: &Tree, existing: &Existing) -> Changes {
    let mut c = Changes::default();
    // Both maps in path order, walked side by side.
    let mut old = existing.ours.iter().peekable();
    for (path, contents) in planned {
        while let Some((gone, _)) = old.next_if(|(p, _)| *p < path) {
            c.delete.push(gone.to_path_buf());
        }
        match old.next_if(|(p, _)| *p == path) {
            Some((_, was)) if was.digest == contents.digest => c.unchanged += 1,
            Some(_) => c.update.push(path.to_path_buf()),
            None => c.create.push(path.to_path_buf()),
        }
    }
    c.delete.extend(old.map(|(p, _)| p.to_path_buf()));
    c
}

/// Errors that make writing `planned` unsafe: a planned file that isvc did
/// not write, or a path through a symbolic link or a foreign file.
pub fn conflicts(planned: &Tree, existing: &Existing, out: &Path) -> Diagnostics {
    // Only a planned path that is, or lies below, a link or a foreign file
    // can conflict: those few entries are looked up in the plan (a path
    // sorts component by component, so the paths below one follow it),
    // rather than every planned path's ancestors in theirs.
    let mut suspects: BTreeSet<&Path> = BTreeSet::new();
    for entry in existing.foreign.iter().chain(&existing.links) {
        let from = (std::ops::Bound::Included(entry.as_path()), std::ops::Bound::Unbounded);
        suspects.extend(planned.range::<Path, _>(from).map(|(p, _)| p.as_path()).take_while(|p| p.starts_with(entry)));
    }
    let mut diags = Diagnostics::new();
    for path in suspects {
        if existing.foreign.contains(path) {
            diags.push(
                Diagnostic::error(format!("refusing to overwrite {}: isvc did not write it", out.join(path).display()))
                    .help("move the file away, or choose another --out"),
            );
            continue;
        }
        for ancestor in path.ancestors().skip(1).filter(|a| !a.as_os_str().is_empty()) {
            if existing.links.contains(ancestor) || existing.foreign.contains(ancestor) {
                diags.push(Diagnostic::error(format!(
                    "refusing to write {}: {} is a symbolic link or a file",
                    out.join(path).display(),
                    out.join(ancestor).display()
                )));
                break;
            }
        }
        if existing.links.contains(path) {
            diags.push(Diagnostic::error(format!(
                "refusing to write through symbolic link {}",
                out.join(path).display()
            )));
        }
    }
    diags
}

/// Writes `planned` into `out`: creates and updates changed files, removes
/// isvc's stale files, leaves everything else alone.
///
/// Runs under a lock on `out`'s parent directory, so two renders into the
/// same place cannot interleave (the second waits). The new tree is built
/// beside `out` — unchanged and foreign files hard-linked, so they keep
/// their inode and modification time — and exchanged with the old one in
/// one atomic rename: a render killed at any moment leaves the old tree or
/// the new one, never a mix. Only the deepest directory holding every
/// change is exchanged, and directories without a change keep their inode
/// (see `write_swap`). Where no atomic exchange is possible (`out` is a
/// mount point, the file system or system cannot exchange directories), or
/// the tree cannot be staged (a file isvc may not hard-link, a FIFO or
/// device in `out`), the render is refused and nothing is written: there is
/// no file-by-file fallback.
///
/// `cache` spares reading the files of the tree it knows unchanged, and
/// learns the new status of those the swap hard-links.
pub fn write(out: &Path, planned: &Tree, cache: &StatCache) -> Result<Changes, Diagnostics> {
    let writer = Writer::open(out, cache)?;
    writer.apply(planned, &writer.existing, changes(planned, &writer.existing), cache)
}

/// An output directory locked for writing, and what it holds: what a render
/// that reads the tree before it writes (to keep the files of namespaces
/// it does not compile again) holds from its reading to its writing, so no
/// other render changes the tree between the two. The lock is held until
/// the writer is dropped.
pub struct Writer {
    out: PathBuf,
    parent: PathBuf,
    _lock: Lock,
    /// The tree as it is, read under the lock.
    pub existing: Existing,
}

/// A tree locked for writing and walked ([`Writer::lock_and_walk`]).
pub struct Opening {
    writer: Writer,
    walked: Walked,
}

impl Opening {
    /// The writer, with the tree's files read (see [`Walked::read`]).
    pub fn read(self, cache: &StatCache) -> Result<Writer, Diagnostics> {
        let Opening { mut writer, walked } = self;
        writer.existing = walked.read(cache)?;
        Ok(writer)
    }

    /// The tree as walked.
    pub fn walked(&self) -> &Walked {
        &self.walked
    }

    /// The writer, holding the lock, for a tree that is not written: its
    /// files are not read, and [`Writer::existing`] is empty.
    pub fn unread(self) -> Writer {
        self.writer
    }
}

impl Writer {
    /// Locks `out`'s parent, removes a killed run's leftovers and reads the
    /// tree.
    pub fn open(out: &Path, cache: &StatCache) -> Result<Writer, Diagnostics> {
        Writer::lock_and_walk(out, cache.knows_outputs(), &Listings::off())?.read(cache)
    }

    /// [`Writer::open`] but for reading the tree's files: what
    /// [`Opening::read`] does. With `status`, the walk takes each file's
    /// status ([`walk_tree`]).
    pub fn lock_and_walk(out: &Path, status: bool, kept: &Listings) -> Result<Opening, Diagnostics> {
        let parent = match out.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(parent) if !parent.is_dir() => {
                return Err(Diagnostic::error(format!(
                    "cannot create {}: {} does not exist",
                    out.display(),
                    parent.display()
                ))
                .help("create the parent directory first")
                .into());
            }
            Some(parent) => parent.to_path_buf(),
            None => PathBuf::from("."),
        };
        let lock = lock(&parent, out)?;
        remove_leftovers(&parent);
        let mut walked = walk_tree(out, false, status, kept)?;
        walked.keep_status = true;
        Ok(Opening {
            writer: Writer { out: out.to_path_buf(), parent, _lock: lock, existing: Existing::default() },
            walked,
        })
    }

    /// Writes `planned` over the tree read at [`Writer::open`] (see
    /// [`write()`]). The lock keeps other renders out, not other programs: a
    /// file added or removed since then where the write will change the
    /// tree means the tree is read again.
    pub fn write(&self, planned: &Tree, cache: &StatCache) -> Result<Changes, Diagnostics> {
        let found = changes(planned, &self.existing);
        if self.same_where_written(&found)? {
            return self.apply(planned, &self.existing, found, cache);
        }
        let existing = scan(&self.out, cache)?;
        self.apply(planned, &existing, changes(planned, &existing), cache)
    }

    /// Whether the entries of the part of the tree that writing `changes`
    /// replaces are still those read at [`Writer::open`]. Only that part is
    /// read again: the swap replaces one directory ([`swap_root`]) and the
    /// manifest, and an entry another program adds or removes anywhere else
    /// in the meantime is left as it is, as if it came after the render.
    fn same_where_written(&self, changes: &Changes) -> Result<bool, Diagnostics> {
        if changes.is_empty() {
            return Ok(true);
        }
        let record = Path::new(MANIFEST);
        if std::fs::symlink_metadata(self.out.join(record)).is_ok() != self.existing.found(record) {
            return Ok(false);
        }
        let tree = changes.without_manifest();
        if tree.is_empty() {
            return Ok(true);
        }
        let root = swap_root(&self.out, &tree);
        let now = entries(&self.out.join(&root))?;
        Ok(now.iter().map(PathBuf::as_path).eq(self.existing.found_below(&root)))
    }

    /// Writes `planned` over `existing`, the tree as it is, which `changes`
    /// (of the two) turn into the other.
    /// The files the swap hard-links are recorded in `cache` under their
    /// new status.
    fn apply(
        &self,
        planned: &Tree,
        existing: &Existing,
        changes: Changes,
        cache: &StatCache,
    ) -> Result<Changes, Diagnostics> {
        let out = self.out.as_path();
        let diags = conflicts(planned, existing, out);
        if diags.has_errors() {
            return Err(diags);
        }
        if changes.is_empty() {
            return Ok(changes);
        }
        if is_missing_or_empty(out) {
            write_fresh(out, planned)?;
            return Ok(changes);
        }
        write_swap(out, &self.parent, planned, &changes, existing, cache)?;
        Ok(changes)
    }
}

/// The output directory to write, checked against the inputs: `.` and `..`
/// inside it are resolved (lexically, against the working directory), so
/// `--out sub/..` or `--out ./new/.` name a directory with a real parent;
/// and it may neither lie inside an input directory (every later run would
/// read isvc's own output as input) nor contain an input.
pub fn output_dir(out: &Path, inputs: &[PathBuf]) -> Result<PathBuf, Diagnostic> {
    let resolved = resolve_out(out);
    let abs_out = real_or_lexical(&resolved);
    for input in inputs {
        let abs_in = real_or_lexical(input);
        let (inside, what) = if abs_out.starts_with(&abs_in) && input.is_dir() {
            (true, "inside the input directory")
        } else if abs_in.starts_with(&abs_out) {
            (true, "around the input")
        } else {
            (false, "")
        };
        if inside {
            return Err(Diagnostic::error(format!(
                "--out {} is {what} {}: every later run would read isvc's own output as input",
                out.display(),
                input.display()
            ))
            .help("choose an --out beside the input directory, for example `--out rendered` next to `services`"));
        }
    }
    Ok(resolved)
}

/// The output tree `out` names, as every command finds it: a path with `.`
/// or `..` in it made absolute with them resolved in its text (`a/../b` is
/// `b` beside `a`, whatever `a` links to, as a shell's `cd` has it); any
/// other as it is. A render, `render --check` and `diff` of one `--out`
/// so read and write the same directory.
pub fn resolve_out(out: &Path) -> PathBuf {
    use std::path::Component;
    let dotted = out.components().any(|c| matches!(c, Component::CurDir | Component::ParentDir));
    if dotted { crate::load::files::absolute(out) } else { out.to_path_buf() }
}

/// The canonical form of `path`, or of its nearest existing ancestor with
/// the rest appended, so paths that do not exist yet compare too.
fn real_or_lexical(path: &Path) -> PathBuf {
    let abs = crate::load::files::absolute(path);
    let mut base = abs.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(base) {
            let mut p = real;
            p.extend(rest.iter().rev());
            return p;
        }
        match (base.parent(), base.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                base = parent;
            }
            _ => return abs,
        }
    }
}

/// Holds the lock on the output's parent directory until dropped.
pub struct Lock {
    _dir: std::fs::File,
}

fn lock(parent: &Path, out: &Path) -> Result<Lock, Diagnostic> {
    let fail = |e: std::io::Error| Diagnostic::error(format!("cannot lock {}: {e}", parent.display()));
    let dir = std::fs::File::open(parent).map_err(fail)?;
    match dir.try_lock() {
        Ok(()) => return Ok(Lock { _dir: dir }),
        Err(std::fs::TryLockError::WouldBlock) => {
            eprintln!("waiting for another isvc render into {} to finish...", out.display());
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(fail(e)),
    }
    dir.lock().map_err(fail)?;
    Ok(Lock { _dir: dir })
}

/// Staging directories of a killed run. The parent's lock is held, so no
/// other render is using them.
fn remove_leftovers(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for e in entries.flatten() {
        if e.file_name().to_string_lossy().starts_with(STAGE_PREFIX) && e.file_type().is_ok_and(|t| t.is_dir()) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

enum Swap {
    /// Every entry of the directory to swap is removed, so it goes too:
    /// its parent is swapped instead. Nothing was changed.
    Vanishes,
    Failed(Diagnostic),
}

/// Builds the new tree beside `out` and swaps it in atomically.
///
/// Only the deepest directory holding every change is swapped (a service's
/// directory when only its files change), so the directories above it stay
/// as they are. Inside it, every directory with no change below it is
/// exchanged back after the commit: its copy in the new tree and the
/// original hold the same entries (files are hard links), so whichever a
/// reader sees is the new tree, and the original keeps its inode, owner,
/// mode, extended attributes and modification time.
///
/// Every file hard-linked into the new tree gets a new change time (its
/// link count changes), its bytes and other status unchanged: `cache`
/// records it under its new status, where `existing` knew its digest
/// ([`StatCache::record_relinked`]), so the next run need not read it.
fn write_swap(
    out: &Path,
    parent: &Path,
    planned: &Tree,
    changes: &Changes,
    existing: &Existing,
    cache: &StatCache,
) -> Result<(), Diagnostic> {
    // The manifest checks itself against the tree, so it is not swapped
    // with it (a change of the manifest alone would otherwise swap the
    // whole tree): it is renamed into place once the tree is, and a run
    // killed in between leaves a manifest that no longer matches the tree,
    // which costs the next `--check` its shortcut and nothing else.
    let record = Path::new(MANIFEST);
    let tree_changes = changes.without_manifest();
    if !tree_changes.is_empty() {
        let (root, linked) = swap_changes(out, parent, planned, &tree_changes)?;
        record_relinked(out, &root, &linked, existing, cache);
    }
    if changes.paths().any(|p| p == record) {
        match planned.get(record) {
            Some(contents) => write_beside(
                parent,
                &out.join(record),
                planned_text(record, contents).map_err(|e| fail_write(out, record, e))?,
            )?,
            None => std::fs::remove_file(out.join(record))
                .map_err(|e| Diagnostic::error(format!("cannot remove {}: {e}", out.join(record).display())))?,
        }
    }
    // Temporary files an interrupted run of an older isvc left in the tree.
    for temp in &existing.temps {
        let _ = std::fs::remove_file(temp);
    }
    Ok(())
}

/// The swap of [`write_swap`], for `changes` without the manifest: the
/// directory swapped (below `out`), and the files hard-linked below it.
fn swap_changes(
    out: &Path,
    parent: &Path,
    planned: &Tree,
    changes: &Changes,
) -> Result<(PathBuf, Vec<PathBuf>), Diagnostic> {
    let mut root = swap_root(out, changes);
    loop {
        match swap_subtree(out, parent, &root, planned, changes) {
            Ok(linked) => return Ok((root, linked)),
            Err(Swap::Vanishes) if root.pop() => {}
            Err(Swap::Vanishes) => return Err(Diagnostic::error(format!("cannot write {}", out.display()))),
            Err(Swap::Failed(d)) => return Err(d),
        }
    }
}

/// The directory below `out` a swap of `changes` (without the manifest)
/// replaces first: the deepest one holding every change. A created file's
/// directory may not exist yet: the swapped directory is one that does.
fn swap_root(out: &Path, changes: &Changes) -> PathBuf {
    let changed: Vec<&PathBuf> = changes.paths().collect();
    let mut root = common_parent(&changed);
    while !root.as_os_str().is_empty() && !is_real_dir(&out.join(&root)) {
        root.pop();
    }
    root
}

/// The longest directory path that is a parent of every path of `paths`.
fn common_parent(paths: &[&PathBuf]) -> PathBuf {
    let mut common: Option<Vec<std::path::Component<'_>>> = None;
    for p in paths {
        let dir: Vec<_> = p.parent().map(|d| d.components().collect()).unwrap_or_default();
        common = Some(match common {
            None => dir,
            Some(c) => c.iter().zip(&dir).take_while(|(a, b)| a == b).map(|(a, _)| *a).collect(),
        });
    }
    common.unwrap_or_default().iter().collect()
}

fn is_real_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

/// Stages the new `out/root` beside `out` and exchanges the two; see
/// [`write_swap`]. Returns the files hard-linked into the new tree (below
/// `root`), now in place.
fn swap_subtree(
    out: &Path,
    parent: &Path,
    root: &Path,
    planned: &Tree,
    changes: &Changes,
) -> Result<Vec<PathBuf>, Swap> {
    let from = out.join(root);
    let fail = |what: &Path, e: std::io::Error| {
        Swap::Failed(Diagnostic::error(format!("cannot write {}: {e}", what.display())))
    };
    let refuse = |what: &Path, why: String| {
        Swap::Failed(Diagnostic::error(format!("cannot stage the new tree of {}: {why}", out.display())).help(format!(
            "isvc builds the new tree beside the old one, hard-linking the files it keeps, and swaps the two; \
                 it does not write in place. Render as the owner of {}, and keep only files, directories and \
                 symbolic links in it ({} is in the way)",
            out.display(),
            what.display()
        )))
    };
    if let Some(dir) = [out, from.as_path()].into_iter().find(|d| on_another_device(parent, d)) {
        return Err(Swap::Failed(cannot_swap(
            out,
            format!("{} is a mount point (on another file system than {})", dir.display(), parent.display()),
        )));
    }
    // Paths below `root`.
    let below = |p: &PathBuf| p.strip_prefix(root).map(Path::to_path_buf).unwrap_or_else(|_| p.clone());
    let replaced: BTreeSet<PathBuf> = changes.update.iter().chain(&changes.delete).map(below).collect();
    let replaced: BTreeSet<&PathBuf> = replaced.iter().collect();
    // Directories with a change below them; the others are kept.
    let touched: BTreeSet<PathBuf> =
        changes.paths().flat_map(|p| below(p).ancestors().skip(1).map(Path::to_path_buf).collect::<Vec<_>>()).collect();
    let staging = tempfile::Builder::new().prefix(STAGE_PREFIX).tempdir_in(parent).map_err(|e| fail(parent, e))?;
    let stage = staging.path();
    let mut mirrored: BTreeSet<PathBuf> = BTreeSet::new();
    let mut kept: Vec<PathBuf> = Vec::new();
    let mut linked: Vec<PathBuf> = Vec::new();
    // Mirror the current tree: directories, links, and every file that stays.
    for entry in walkdir::WalkDir::new(&from).follow_links(false).sort_by_file_name() {
        let entry =
            entry.map_err(|e| Swap::Failed(Diagnostic::error(format!("cannot read {}: {e}", out.display()))))?;
        let rel = entry.path().strip_prefix(&from).unwrap_or(entry.path()).to_path_buf();
        let target = stage.join(&rel);
        let ft = entry.file_type();
        // Only the entries of the directories replaced need be known to
        // `keep_newcomers`: those of a directory put back are in place (a
        // copy that could not be put back holds every entry it is walked
        // for). Each known path costs a sorted insert, compared component
        // by component: most of the tree's, with clusters.
        if rel.parent().is_none_or(|p| touched.contains(p)) {
            mirrored.insert(rel.clone());
        }
        if ft.is_dir() {
            if !rel.as_os_str().is_empty() {
                if on_another_device(&from, entry.path()) {
                    return Err(Swap::Failed(cannot_swap(
                        out,
                        format!(
                            "{} is a mount point (on another file system than {})",
                            entry.path().display(),
                            from.display()
                        ),
                    )));
                }
                std::fs::create_dir(&target).map_err(|e| fail(&target, e))?;
            }
            if !touched.contains(&rel) && rel.parent().is_some_and(|p| touched.contains(p)) {
                kept.push(rel.clone());
            }
            // The new directory takes the old one's mode, its extended
            // attributes and, where the system lets us (as root), its owner.
            if let Ok(meta) = entry.metadata() {
                let _ = std::fs::set_permissions(&target, meta.permissions());
                #[cfg(unix)]
                {
                    use std::os::unix::fs::MetadataExt;
                    let _ = std::os::unix::fs::lchown(&target, Some(meta.uid()), Some(meta.gid()));
                }
                copy_xattrs(entry.path(), &target);
            }
        } else if ft.is_symlink() {
            let link = std::fs::read_link(entry.path()).map_err(|e| fail(entry.path(), e))?;
            symlink(&link, &target).map_err(|e| {
                refuse(entry.path(), format!("cannot copy the symbolic link {}: {e}", entry.path().display()))
            })?;
        } else if ft.is_file() {
            if replaced.contains(&rel) || is_temp_name(&entry.file_name().to_string_lossy()) {
                continue;
            }
            if let Err(e) = std::fs::hard_link(entry.path(), &target) {
                if is_cross_device(&e) {
                    return Err(Swap::Failed(cannot_swap(
                        out,
                        format!("{} is on another file system than {}", entry.path().display(), parent.display()),
                    )));
                }
                return Err(refuse(entry.path(), format!("cannot hard-link {}: {e}", entry.path().display())));
            }
            linked.push(rel);
        } else {
            let what = crate::load::files::describe(ft);
            return Err(refuse(entry.path(), format!("{} is {what}", entry.path().display())));
        }
    }
    let written: Vec<&PathBuf> = changes.create.iter().chain(&changes.update).collect();
    let staged: Vec<PathBuf> = written.iter().map(|rel| below(rel)).collect();
    make_dirs(stage, staged.iter().map(PathBuf::as_path)).map_err(|(dir, e)| fail(&out.join(root).join(dir), e))?;
    let errors: Vec<Swap> = written
        .par_iter()
        .zip(&staged)
        .filter_map(|(rel, at)| {
            let written = planned_text(rel, &planned[rel.as_path()]).and_then(|t| std::fs::write(stage.join(at), t));
            written.err().map(|e| fail(&out.join(rel), e))
        })
        .collect();
    if let Some(e) = errors.into_iter().next() {
        return Err(e);
    }
    for rel in &changes.delete {
        remove_empty_parents(stage, &below(rel));
    }
    if !root.as_os_str().is_empty() && is_missing_or_empty(stage) {
        return Err(Swap::Vanishes);
    }
    exchange(stage, &from).map_err(|e| Swap::Failed(cannot_swap(out, exchange_refused(&e))))?;
    // The commit is done; `stage` now holds the old tree. Each unchanged
    // directory goes back in place of its copy (same entries).
    let back: BTreeSet<&Path> =
        kept.iter().filter(|dir| exchange(&stage.join(dir), &from.join(dir)).is_ok()).map(PathBuf::as_path).collect();
    // Entries another process created in `out` while the new tree was
    // built are in the old tree: move them across before dropping
    // `staging` removes the rest. A directory put back holds its own.
    keep_newcomers(stage, &from, &mirrored, &replaced, &back);
    // The copies of the directories put back (with clusters, a change to a
    // service touches every cluster's tree, and the copies are most of the
    // tree) are removed on every core.
    back.par_iter().for_each(|dir| {
        let _ = std::fs::remove_dir_all(stage.join(dir));
    });
    drop(staging);
    Ok(linked)
}

/// Records in `cache` the files `linked` below `root` (of `out`) under
/// their status now, with the digests `existing` took of them: a swap
/// hard-linked them into the new tree, and the links made and removed
/// changed their change time alone. Only where the file is the one whose
/// digest was taken, unchanged but for its change time
/// ([`StatCache::record_relinked`]): one written since has a new
/// modification time, and is read again.
fn record_relinked(out: &Path, root: &Path, linked: &[PathBuf], existing: &Existing, cache: &StatCache) {
    if !cache.is_on() {
        return;
    }
    // Each linked file with what the tree's read took of it: `linked` is in
    // the order of paths (a walk sorted by name), as the files of
    // `existing` below `root` are, so the two are walked together rather
    // than each file looked up (58,000 at 10,000 services in two clusters).
    use std::ops::Bound::{Excluded, Included, Unbounded};
    if existing.status.len() != existing.ours.len() {
        return;
    }
    let start = existing.ours.range::<Path, _>((Unbounded, Excluded(root))).count();
    let mut known = existing
        .ours
        .range::<Path, _>((Included(root), Unbounded))
        .zip(&existing.status[start..])
        .map_while(|((path, c), stat)| Some((path.strip_prefix(root).ok()?, c, stat)))
        .peekable();
    let mut pairs: Vec<(&PathBuf, Stat, Digest)> = Vec::with_capacity(linked.len());
    for rel in linked {
        while known.next_if(|(path, ..)| *path < rel.as_path()).is_some() {}
        if let Some((_, c, stat)) = known.next_if(|(path, ..)| *path == rel.as_path()) {
            // Only a digest of settled bytes is recorded: the files of a
            // render right after another are not looked at again.
            pairs.extend(stat.filter(|s| cache.is_settled(*s)).map(|before| (rel, before, c.digest)));
        }
    }
    // Their status now, taken on every core.
    let from = out.join(root);
    let now: Vec<(PathBuf, Stat, Stat, Digest)> = pairs
        .into_par_iter()
        .filter_map(|(rel, before, digest)| {
            let now = std::fs::symlink_metadata(from.join(rel)).ok().as_ref().and_then(Stat::of)?;
            Some((root.join(rel), before, now, digest))
        })
        .collect();
    cache.record_relinked(Kind::Output, now.iter().map(|(p, before, now, d)| (p.as_path(), *before, *now, *d)));
}

/// Why two directories could not be exchanged, in words.
fn exchange_refused(e: &std::io::Error) -> String {
    #[cfg(any(target_os = "linux", target_os = "android", target_vendor = "apple"))]
    {
        use rustix::io::Errno;
        let unsupported = [Errno::INVAL, Errno::NOSYS, Errno::NOTSUP, Errno::OPNOTSUPP];
        if unsupported.iter().any(|n| e.raw_os_error() == Some(n.raw_os_error())) {
            return format!("its file system cannot exchange two directories in one step ({e})");
        }
        format!("exchanging the new tree with the old one failed ({e})")
    }
    #[cfg(not(any(target_os = "linux", target_os = "android", target_vendor = "apple")))]
    {
        format!("this system cannot exchange two directories in one step ({e})")
    }
}

/// The error for an output tree that cannot be swapped in one step. isvc
/// then writes nothing: replacing files one by one would leave a mixed
/// tree behind a failed or killed run.
fn cannot_swap(out: &Path, why: String) -> Diagnostic {
    Diagnostic::error(format!("cannot replace {} in one step: {why}", out.display())).help(format!(
        "isvc builds the new tree beside the old one and swaps the two atomically; it never replaces files one by one, \
         which a failed or killed run would leave half done. Render into a new directory (`--out {0}.new`) and move it \
         into place, or keep the tree in a directory inside the mount (`--out {0}/tree`) or on a local file system",
        out.display()
    ))
}

/// Whether `path` lies on another file system than `dir`.
fn on_another_device(dir: &Path, path: &Path) -> bool {
    #[cfg(test)]
    if FAKE_MOUNT.with(|m| m.borrow().as_deref() == Some(path)) {
        return true;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let dev = |p: &Path| std::fs::symlink_metadata(p).map(|m| m.dev()).ok();
        matches!((dev(dir), dev(path)), (Some(a), Some(b)) if a != b)
    }
    #[cfg(not(unix))]
    {
        let _ = (dir, path);
        false
    }
}

#[cfg(test)]
thread_local! {
    /// A directory tests take for a mount point.
    static FAKE_MOUNT: std::cell::RefCell<Option<PathBuf>> = const { std::cell::RefCell::new(None) };
    /// An error tests make the exchange fail with.
    static FAKE_EXCHANGE_ERROR: std::cell::Cell<Option<i32>> = const { std::cell::Cell::new(None) };
}

/// Moves the entries of `old` that were neither mirrored into the new tree
/// nor replaced by isvc into `new`, at the same place.
fn keep_newcomers(
    old: &Path,
    new: &Path,
    mirrored: &BTreeSet<PathBuf>,
    replaced: &BTreeSet<&PathBuf>,
    back: &BTreeSet<&Path>,
) {
    let mut walker = walkdir::WalkDir::new(old).follow_links(false).sort_by_file_name().into_iter();
    while let Some(Ok(entry)) = walker.next() {
        let Ok(rel) = entry.path().strip_prefix(old) else { continue };
        if entry.file_type().is_dir() && back.contains(rel) {
            // The copy of a directory put back: the original, newcomers
            // and all, is in the new tree.
            walker.skip_current_dir();
            continue;
        }
        if rel.as_os_str().is_empty() || mirrored.contains(rel) || replaced.contains(&rel.to_path_buf()) {
            continue;
        }
        let target = new.join(rel);
        if let Some(dir) = target.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        if std::fs::symlink_metadata(&target).is_err() {
            let _ = std::fs::rename(entry.path(), &target);
        }
        if entry.file_type().is_dir() {
            walker.skip_current_dir();
        }
    }
}

/// Copies the extended attributes of `from` to `to`, as far as allowed.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn copy_xattrs(from: &Path, to: &Path) {
    let mut names = vec![0u8; 64 << 10];
    let Ok(n) = rustix::fs::llistxattr(from, &mut names[..]) else { return };
    for name in names[..n].split(|b| *b == 0).filter(|n| !n.is_empty()) {
        let Ok(name) = std::ffi::CString::new(name) else { continue };
        let mut value = vec![0u8; 64 << 10];
        if let Ok(len) = rustix::fs::lgetxattr(from, name.as_c_str(), &mut value[..]) {
            let _ = rustix::fs::lsetxattr(to, name.as_c_str(), &value[..len], rustix::fs::XattrFlags::empty());
        }
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn copy_xattrs(_: &Path, _: &Path) {}

fn is_cross_device(e: &std::io::Error) -> bool {
    #[cfg(unix)]
    {
        e.raw_os_error() == Some(rustix::io::Errno::XDEV.raw_os_error())
    }
    #[cfg(not(unix))]
    {
        let _ = e;
        false
    }
}

/// Exchanges two directories atomically: renameat2(2) with RENAME_EXCHANGE
/// on Linux (man-pages: renameat2.2), renamex_np(2) with RENAME_SWAP on
/// Apple systems (rustix maps both to `RenameFlags::EXCHANGE`).
#[cfg(any(target_os = "linux", target_os = "android", target_vendor = "apple"))]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    #[cfg(test)]
    if let Some(errno) = FAKE_EXCHANGE_ERROR.with(std::cell::Cell::get) {
        return Err(std::io::Error::from_raw_os_error(errno));
    }
    renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE).map_err(std::io::Error::from)
}

#[cfg(not(any(target_os = "linux", target_os = "android", target_vendor = "apple")))]
fn exchange(_: &Path, _: &Path) -> std::io::Result<()> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

#[cfg(unix)]
fn symlink(link: &Path, at: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(link, at)
}

#[cfg(not(unix))]
fn symlink(_: &Path, _: &Path) -> std::io::Result<()> {
    Err(std::io::Error::other("symbolic links are not supported here"))
}

fn is_missing_or_empty(dir: &Path) -> bool {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => entries.next().is_none(),
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

/// A first render: the whole tree is written into a staging directory beside
/// `out` and renamed into place, so the tree appears complete or not at all.
fn write_fresh(out: &Path, planned: &Tree) -> Result<(), Diagnostics> {
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let fail = |what: &Path, e: std::io::Error| Diagnostic::error(format!("cannot write {}: {e}", what.display()));
    let staging = tempfile::Builder::new().prefix(STAGE_PREFIX).tempdir_in(parent).map_err(|e| fail(parent, e))?;
    // tempdir is private (0700); the output is an ordinary directory.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(staging.path(), std::fs::Permissions::from_mode(0o755));
    }
    make_dirs(staging.path(), planned.keys().map(TreePath::as_path)).map_err(|(dir, e)| fail(&out.join(dir), e))?;
    let errors: Vec<Diagnostic> = planned
        .par_iter()
        .filter_map(|(rel, contents)| {
            let written = planned_text(rel, contents).and_then(|t| std::fs::write(staging.path().join(rel), t));
            written.err().map(|e| fail(&out.join(rel), e))
        })
        .collect();
    if !errors.is_empty() {
        return Err(Diagnostics(errors));
    }
    // rename(2) replaces an empty directory atomically.
    let staged = staging.keep();
    std::fs::rename(&staged, out).map_err(|e| {
        let _ = std::fs::remove_dir_all(&staged);
        if is_cross_device(&e) || on_another_device(parent, out) {
            let why = format!("{} is a mount point (on another file system than {})", out.display(), parent.display());
            return Diagnostics::from(cannot_swap(out, why));
        }
        Diagnostics::from(fail(out, e))
    })
}

/// Creates below `base` the directory of each of `files` (paths relative
/// to it), with its parents: a level at a time, parents first, each level
/// on every core. A first render of 10,000 services makes some 10,000
/// directories, which one after the other on one core took 6% of its
/// time with the other idle (benches/README.md). On failure, the directory
/// (relative) and the error.
fn make_dirs<'a>(base: &Path, files: impl Iterator<Item = &'a Path>) -> Result<(), (PathBuf, std::io::Error)> {
    // Each directory once: the files come in order, so most share the
    // directory of the file before.
    let mut dirs: Vec<&Path> = Vec::new();
    for dir in files.filter_map(Path::parent).filter(|d| !d.as_os_str().is_empty()) {
        if dirs.last() != Some(&dir) {
            dirs.push(dir);
        }
    }
    dirs.sort_unstable_by(|a, b| a.as_os_str().cmp(b.as_os_str()));
    dirs.dedup();
    let mut levels: BTreeMap<usize, Vec<&Path>> = BTreeMap::new();
    for dir in dirs {
        levels.entry(dir.components().count()).or_default().push(dir);
    }
    // A level's parents exist once the levels above it are made, but for
    // a parent that holds no file, which `create_dir_all` makes as well
    // (two at once each find it made, which it takes for success).
    // The first failure in the order of the paths, whichever core met it.
    for (_, level) in levels {
        let failed: Vec<(PathBuf, std::io::Error)> = level
            .par_iter()
            .filter_map(|dir| std::fs::create_dir_all(base.join(dir)).err().map(|e| (dir.to_path_buf(), e)))
            .collect();
        if let Some(failure) = failed.into_iter().next() {
            return Err(failure);
        }
    }
    Ok(())
}

/// The text to write for the planned file `rel`. A file kept from the tree
/// has none: it is written only when the tree changed under the render.
fn planned_text<'a>(rel: &Path, contents: &'a Contents) -> std::io::Result<&'a [u8]> {
    contents.text.as_deref().map(str::as_bytes).ok_or_else(|| {
        std::io::Error::other(format!(
            "{} changed while isvc rendered (it was to be kept as it was); run isvc again",
            rel.display()
        ))
    })
}

fn fail_write(out: &Path, rel: &Path, e: std::io::Error) -> Diagnostic {
    Diagnostic::error(format!("cannot write {}: {e}", out.join(rel).display()))
}

/// Writes `bytes` to `path` through a temporary file and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Diagnostic> {
    let tmp = stage_file(path, bytes)?;
    tmp.persist(path).map_err(|e| Diagnostic::error(format!("cannot write {}: {}", path.display(), e.error)))?;
    Ok(())
}

/// Writes `bytes` to `path` atomically through a temporary file in a
/// staging directory in `parent` (the tree's parent), so a run killed
/// before the rename leaves nothing in the tree: the next run removes the
/// staging directory ([`remove_leftovers`]). Where `parent` is on another
/// file system than `path` (the tree is a mount point), the temporary file
/// is written beside `path` ([`write_atomic`]).
fn write_beside(parent: &Path, path: &Path, bytes: &[u8]) -> Result<(), Diagnostic> {
    let Ok(staging) = tempfile::Builder::new().prefix(STAGE_PREFIX).tempdir_in(parent) else {
        return write_atomic(path, bytes);
    };
    let tmp = stage_file_in(staging.path(), path, bytes)?;
    match tmp.persist(path) {
        Ok(_) => Ok(()),
        Err(e) if is_cross_device(&e.error) => write_atomic(path, bytes),
        Err(e) => Err(Diagnostic::error(format!("cannot write {}: {}", path.display(), e.error))),
    }
}

/// `bytes` in a temporary file beside `path`, ready to be renamed over it
/// (removed if dropped instead).
fn stage_file(path: &Path, bytes: &[u8]) -> Result<tempfile::NamedTempFile, Diagnostic> {
    stage_file_in(path.parent().unwrap_or(Path::new(".")), path, bytes)
}

/// [`stage_file`], the temporary file in `dir`.
fn stage_file_in(dir: &Path, path: &Path, bytes: &[u8]) -> Result<tempfile::NamedTempFile, Diagnostic> {
    let fail = |e: std::io::Error| Diagnostic::error(format!("cannot write {}: {e}", path.display()));
    let mut tmp =
        tempfile::Builder::new().prefix(TEMP_PREFIX).permissions(readable()).tempfile_in(dir).map_err(fail)?;
    tmp.write_all(bytes).map_err(fail)?;
    Ok(tmp)
}

/// Mode of written files: readable by everyone, like files `git checkout` writes.
fn readable() -> std::fs::Permissions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::Permissions::from_mode(0o644)
    }
    #[cfg(not(unix))]
    {
        std::fs::metadata(".").map(|m| m.permissions()).unwrap_or_else(|_| unreachable!())
    }
}

fn remove_empty_parents(out: &Path, rel: &Path) {
    for ancestor in rel.ancestors().skip(1).filter(|a| !a.as_os_str().is_empty()) {
        // remove_dir fails on a non-empty directory, which ends the climb.
        if std::fs::remove_dir(out.join(ancestor)).is_err() {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry a walk found: its path, kind and status.
    type Entry = (PathBuf, EntryKind, Option<Stat>);

    /// What a walk found, and the listings it learned.
    fn found(root: &Path, kept: &Listings) -> (Vec<Entry>, Vec<Learned>) {
        let (mut found, learned) = walk(root, true, kept).unwrap();
        found.sort_by(|a, b| a.rel.cmp(&b.rel));
        (found.into_iter().map(|f| (f.rel, f.kind, f.stat)).collect(), learned)
    }

    #[cfg(unix)]
    #[test]
    fn a_walk_by_kept_listings_finds_what_reading_every_directory_finds() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("out");
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/x.yaml"), "x").unwrap();
        std::fs::write(root.join("a/b/y.yaml"), "y").unwrap();
        std::fs::write(root.join("c.yaml"), "c").unwrap();
        let file = dir.path().join("tree.dirs");
        // A run long after every change: every directory read is learned.
        let listings = || Listings::read(file.clone(), i64::MAX);
        let read_all = || found(&root, &Listings::off()).0;
        let (first, learned) = found(&root, &listings());
        assert_eq!(first, read_all());
        assert_eq!(learned.len(), 3);
        listings().save(learned);
        // Every directory kept: none read, the same entries found.
        let (kept, learned) = found(&root, &listings());
        assert_eq!(kept, first);
        assert!(learned.is_empty());
        // A file edited in place: its new status, from its listing kept.
        std::fs::write(root.join("a/x.yaml"), "edited").unwrap();
        let (edited, learned) = found(&root, &listings());
        assert_eq!(edited, read_all());
        assert_ne!(edited, first);
        assert!(learned.is_empty());
        // A file added, a directory swapped for a link: the directories
        // they changed are read again, and learned again. (A run records
        // a listing only once its directory has not changed for a while,
        // so a change stamps a later time; here, after a clock tick.)
        std::thread::sleep(std::time::Duration::from_millis(50));
        std::fs::write(root.join("a/z.yaml"), "z").unwrap();
        std::fs::rename(root.join("a/b"), dir.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("moved"), root.join("a/b")).unwrap();
        let (changed, learned) = found(&root, &listings());
        assert_eq!(changed, read_all());
        let names: Vec<&str> = changed.iter().map(|(p, _, _)| p.to_str().unwrap()).collect();
        assert_eq!(names, ["a/b", "a/x.yaml", "a/z.yaml", "c.yaml"]);
        assert_eq!(changed[0].1, EntryKind::Link);
        assert_eq!(learned.len(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn a_listing_that_names_a_file_gone_has_its_directory_read() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("out");
        std::fs::create_dir_all(root.join("a")).unwrap();
        std::fs::write(root.join("a/x.yaml"), "x").unwrap();
        let meta = std::fs::symlink_metadata(root.join("a")).unwrap();
        let nanos = |s: i64, ns: i64| s * 1_000_000_000 + ns;
        // A listing with the directory's very status that lists a file
        // that is not there (a damaged or forged line), and one that
        // names a path outside the directory.
        let line = format!(
            "{} {} {} {} a fghost.yaml f../../escape\n",
            meta.dev(),
            meta.ino(),
            nanos(meta.mtime(), meta.mtime_nsec()),
            nanos(meta.ctime(), meta.ctime_nsec())
        );
        let file = dir.path().join("tree.dirs");
        std::fs::write(&file, format!("isvc dir listings 1\n{line}")).unwrap();
        let (walked, _) = found(&root, &Listings::read(file, i64::MAX));
        assert_eq!(walked, found(&root, &Listings::off()).0);
        assert_eq!(walked.len(), 1);
    }

    #[test]
    fn own_files_are_read_whole_whatever_their_status_said() {
        let dir = tempfile::tempdir().unwrap();
        let small = format!("{HEADER_PREFIX}\nkind: Service\n");
        // Longer than the first read.
        let large = format!("{HEADER_PREFIX}\n{}", "a: b\n".repeat(FIRST_READ / 4));
        for (name, text) in [("small.yaml", &small), ("large.yaml", &large)] {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            // The length the status gave, and others (a file that grew or
            // shrank since): the whole file either way.
            let len = text.len() as u64;
            for said in [len, 0, 5, len - 1, len + 1, len + 100] {
                let mut bytes = b"kept".to_vec();
                let file = std::fs::File::open(&path).unwrap();
                assert!(read_own(&file, said, &mut bytes).unwrap(), "{name} {said}");
                assert_eq!(&bytes[4..], text.as_bytes(), "{name} {said}");
            }
            let (read, opened) = read_if_ours(&path, true).unwrap();
            assert_eq!(read.and_then(|c| c.text), Some(text.clone()));
            assert_eq!(opened, Stat::of(&std::fs::metadata(&path).unwrap()));
            let (read, _) = read_if_ours(&path, false).unwrap();
            assert_eq!(read.map(|c| c.digest), Some(digest(text.as_bytes())));
        }
        // A file without isvc's header, however long, is not isvc's.
        let foreign = dir.path().join("foreign.yaml");
        std::fs::write(&foreign, "a: b\n".repeat(FIRST_READ / 2)).unwrap();
        let mut bytes = Vec::new();
        assert!(!read_own(&std::fs::File::open(&foreign).unwrap(), 10, &mut bytes).unwrap());
        assert_eq!(read_if_ours(&foreign, true).unwrap(), (None, None));
        std::fs::write(&foreign, &HEADER_PREFIX[..4]).unwrap();
        assert_eq!(read_if_ours(&foreign, false).unwrap(), (None, None), "shorter than the header");
    }

    #[test]
    fn a_file_is_placed_by_its_bytes_as_by_its_components() {
        let paths = [
            "team-a",
            "team-a/kustomization.yaml",
            "team-a/svc/deployment.yaml",
            "team-a/svc/kustomization.yaml",
            "team-a/_namespace/resourcequota.yaml",
            "team-ab/svc/service.yaml",
            "team-a.yaml",
            "team-b/svc/kustomization.yaml",
            "kustomization.yaml",
            "team-a/a/b/kustomization.yaml",
            "team-a//svc/deployment.yaml",
            "team-a/./kustomization.yaml",
        ];
        for p in paths {
            let path = Path::new(p);
            assert_eq!(Place::of(path, None, "team-a"), Place::by_components(path, None, "team-a"), "{p}");
            assert_eq!(is_object_file(path), path.components().nth(2).is_some(), "{p}");
            assert_eq!(holds_object(&TreePath::from(p)), is_object_file(path), "{p}");
        }
        let place = Place::of(Path::new("team-a/svc/kustomization.yaml"), None, "team-a").unwrap();
        assert_eq!(place, Place { kustomization_dir: Some(Path::new("team-a/svc")), object: true });
        assert_eq!(Place::of(Path::new("team-ab/svc/service.yaml"), None, "team-a"), None);
        // In a cluster's tree, the same places one directory down.
        for p in paths {
            let rooted = format!("east/{p}");
            let path = Path::new(&rooted);
            let place = Place::of(path, Some("east"), "team-a");
            assert_eq!(place, Place::by_components(path, Some("east"), "team-a"), "{rooted}");
            let unrooted = Place::of(Path::new(p), None, "team-a");
            assert_eq!(place.as_ref().map(|p| p.object), unrooted.as_ref().map(|p| p.object), "{rooted}");
            assert_eq!(Place::of(path, Some("west"), "team-a"), None, "{rooted}");
        }
        let place = Place::of(Path::new("east/team-a/kustomization.yaml"), Some("east"), "team-a").unwrap();
        assert_eq!(place, Place { kustomization_dir: Some(Path::new("east/team-a")), object: false });
        assert_eq!(Place::of(Path::new("east/kustomization.yaml"), Some("east"), "team-a"), None);
    }

    /// [`super::write`] without a cache.
    fn write(out: &Path, planned: &Tree) -> Result<Changes, Diagnostics> {
        super::write(out, planned, &StatCache::off())
    }

    /// A tree of `planned` files rendered into a new directory, opened for
    /// writing again: the directory (removed when dropped), the tree's path
    /// and the writer.
    fn opened(planned: &Tree) -> (tempfile::TempDir, PathBuf, Writer) {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        write(&out, planned).unwrap();
        let writer = Writer::open(&out, &StatCache::off()).unwrap();
        (dir, out, writer)
    }

    fn planned(files: &[(&str, &str)]) -> Tree {
        files.iter().map(|(p, t)| (PathBuf::from(p).into(), Contents::text(format!("{HEADER_PREFIX}\n{t}")))).collect()
    }

    #[test]
    fn conflicts_are_the_planned_paths_at_or_below_a_link_or_a_foreign_file() {
        let set = |paths: &[&str]| paths.iter().map(PathBuf::from).collect::<BTreeSet<_>>();
        // `h` is foreign, a planned file and the directory of another;
        // `i` is both a link and foreign.
        let existing = Existing {
            foreign: set(&["a", "f.yaml", "h", "i"]),
            links: set(&["b", "c/d.yaml", "i"]),
            ..Existing::default()
        };
        let plan = planned(&[
            ("a/x.yaml", ""),
            ("ab/z.yaml", ""),
            ("b/c/y.yaml", ""),
            ("c/d.yaml", ""),
            ("c/e.yaml", ""),
            ("f.yaml", ""),
            ("g.yaml", ""),
            ("h", ""),
            ("h/j.yaml", ""),
            ("i/k.yaml", ""),
        ]);
        let diags = conflicts(&plan, &existing, Path::new("out"));
        let messages: Vec<String> = diags.iter().map(|d| d.message.clone()).collect();
        assert_eq!(
            messages,
            [
                "refusing to write out/a/x.yaml: out/a is a symbolic link or a file",
                "refusing to write out/b/c/y.yaml: out/b is a symbolic link or a file",
                "refusing to write through symbolic link out/c/d.yaml",
                "refusing to overwrite out/f.yaml: isvc did not write it",
                "refusing to overwrite out/h: isvc did not write it",
                "refusing to write out/h/j.yaml: out/h is a symbolic link or a file",
                "refusing to write out/i/k.yaml: out/i is a symbolic link or a file",
            ]
        );
    }

    #[test]
    fn writes_prunes_and_leaves_foreign_files_alone() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let first = planned(&[("a/x.yaml", "1"), ("b/y.yaml", "2")]);
        let c = write(&out, &first).unwrap();
        assert_eq!(c.create.len(), 2);
        std::fs::write(out.join("a/notes.md"), "mine").unwrap();

        let second = planned(&[("a/x.yaml", "1")]);
        let c = write(&out, &second).unwrap();
        assert_eq!((c.create.len(), c.update.len(), c.delete.len(), c.unchanged), (0, 0, 1, 1));
        assert!(!out.join("b").exists(), "emptied directory is removed");
        assert_eq!(std::fs::read_to_string(out.join("a/notes.md")).unwrap(), "mine");
    }

    #[test]
    fn unchanged_files_are_not_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let t = planned(&[("x.yaml", "1")]);
        write(dir.path(), &t).unwrap();
        let before = std::fs::metadata(dir.path().join("x.yaml")).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let c = write(dir.path(), &t).unwrap();
        assert!(c.is_empty());
        assert_eq!(std::fs::metadata(dir.path().join("x.yaml")).unwrap().modified().unwrap(), before);
    }

    #[test]
    fn refuses_to_overwrite_foreign_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("x.yaml"), "hand written").unwrap();
        let err = write(dir.path(), &planned(&[("x.yaml", "1")])).unwrap_err();
        assert!(err.render(false).contains("isvc did not write it"));
        assert_eq!(std::fs::read_to_string(dir.path().join("x.yaml")).unwrap(), "hand written");
    }

    #[test]
    fn changes_sort_files_into_created_updated_deleted_and_unchanged() {
        let planned = planned(&[("a.yaml", "1"), ("b/x.yaml", "2"), ("b/y.yaml", "new"), ("d.yaml", "4")]);
        let existing = Existing {
            ours: [("a.yaml", "1"), ("b/w.yaml", "gone"), ("b/y.yaml", "old"), ("c.yaml", "gone"), ("e.yaml", "gone")]
                .iter()
                .map(|(p, t)| (PathBuf::from(p).into(), Contents::text(format!("{HEADER_PREFIX}\n{t}"))))
                .collect(),
            ..Existing::default()
        };
        let c = changes(&planned, &existing);
        let paths = |v: &[PathBuf]| v.iter().map(|p| p.to_string_lossy().into_owned()).collect::<Vec<_>>();
        assert_eq!(paths(&c.create), ["b/x.yaml", "d.yaml"]);
        assert_eq!(paths(&c.update), ["b/y.yaml"]);
        assert_eq!(paths(&c.delete), ["b/w.yaml", "c.yaml", "e.yaml"]);
        assert_eq!(c.unchanged, 1);
    }

    #[test]
    fn a_tree_of_any_depth_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let mut deep = dir.path().to_path_buf();
        for _ in 0..1500 {
            deep.push("d");
        }
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(deep.join("x.yaml"), format!("{HEADER_PREFIX}\n1")).unwrap();
        let existing = scan(dir.path(), &StatCache::off()).unwrap();
        assert_eq!(existing.ours.len(), 1);
        assert_eq!(existing.ours.keys().next().unwrap().components().count(), 1501);
    }

    #[test]
    fn a_file_written_beside_the_tree_is_staged_outside_it() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join(MANIFEST), "old").unwrap();
        write_beside(dir.path(), &out.join(MANIFEST), b"new").unwrap();
        assert_eq!(std::fs::read_to_string(out.join(MANIFEST)).unwrap(), "new");
        // Nothing left in the tree or beside it: a killed run's staging
        // directory would be the next run's to remove.
        let names = |d: &Path| -> Vec<String> {
            std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
        };
        assert_eq!(names(&out), [MANIFEST]);
        assert_eq!(names(dir.path()), ["out"]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(out.join(MANIFEST)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o644);
        }
    }

    #[test]
    fn a_scan_takes_the_digests_of_settled_files_from_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        write(&out, &planned(&[("a/x.yaml", "1"), ("b/y.yaml", "2")])).unwrap();
        let cache_file = dir.path().join("cache/tree");
        let cache = StatCache::settled(cache_file.clone());
        let first = scan(&out, &cache).unwrap();
        cache.save();
        let real = first.ours[Path::new("a/x.yaml")].digest;
        assert_eq!(real, digest(format!("{HEADER_PREFIX}\n1").as_bytes()));
        // A cache that holds another digest for the file as it is: believed,
        // so the file was not read.
        let bytes = std::fs::read(&cache_file).unwrap();
        let bogus = "ffffffffffffffffffffffffffffffff";
        let at = bytes.windows(32).position(|w| w == real.as_bytes()).expect("the digest recorded");
        std::fs::write(&cache_file, [&bytes[..at], bogus.as_bytes(), &bytes[at + 32..]].concat()).unwrap();
        let again = scan(&out, &StatCache::settled(cache_file.clone())).unwrap();
        assert_eq!(again.ours[Path::new("a/x.yaml")].digest, bogus);
        assert_eq!(again.ours[Path::new("b/y.yaml")], first.ours[Path::new("b/y.yaml")]);
        assert_eq!(again.entries, first.entries);
        // Without the cache, every file is read.
        let read = scan(&out, &StatCache::off()).unwrap();
        assert_eq!(read.ours, first.ours);
        let texts = scan_texts(&out).unwrap();
        assert_eq!(texts.ours[Path::new("a/x.yaml")].text.as_deref(), Some(&*format!("{HEADER_PREFIX}\n1")));
    }

    #[test]
    fn directories_are_made_a_level_at_a_time_with_parents_that_hold_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let files = ["a/x.yaml", "a/b/c/y.yaml", "a/b/c/z.yaml", "d/e/f/g/w.yaml", "top.yaml"];
        make_dirs(dir.path(), files.iter().map(Path::new)).unwrap();
        for made in ["a", "a/b", "a/b/c", "d/e/f/g"] {
            assert!(dir.path().join(made).is_dir(), "{made}");
        }
        // Made again: nothing to do, no error.
        make_dirs(dir.path(), files.iter().map(Path::new)).unwrap();
        // A file where a directory goes: the first such directory in the
        // order of the paths is named, whichever core met it first.
        std::fs::write(dir.path().join("m"), "").unwrap();
        std::fs::write(dir.path().join("n"), "").unwrap();
        let blocked = ["n/x.yaml", "m/y.yaml", "k/z.yaml"];
        let (failed, _) = make_dirs(dir.path(), blocked.iter().map(Path::new)).unwrap_err();
        assert_eq!(failed, Path::new("m"));
    }

    #[test]
    fn the_files_a_swap_hard_links_are_recorded_in_the_cache_under_their_new_status() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        write(&out, &planned(&[("a/x.yaml", "1"), ("b/y.yaml", "2"), ("c/z.yaml", "3")])).unwrap();
        let cache_file = dir.path().join("cache/tree");
        let cache = StatCache::settled(cache_file.clone());
        scan(&out, &cache).unwrap();
        cache.save();
        let z = out.join("c/z.yaml");
        let before = Stat::of(&std::fs::symlink_metadata(&z).unwrap()).unwrap();
        // Two directories change: the tree's root is swapped, and c/z.yaml
        // hard-linked into the new tree.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let cache = StatCache::settled(cache_file.clone());
        let writer = Writer::open(&out, &cache).unwrap();
        let changes =
            writer.write(&planned(&[("a/x.yaml", "4"), ("b/y.yaml", "5"), ("c/z.yaml", "3")]), &cache).unwrap();
        assert_eq!((changes.update.len(), changes.unchanged), (2, 1));
        cache.save();
        drop(writer);
        let now = Stat::of(&std::fs::symlink_metadata(&z).unwrap()).unwrap();
        assert_ne!(before, now, "the links changed its change time");
        let cache = StatCache::settled(cache_file);
        let recorded = cache.lookup(Kind::Output, Path::new("c/z.yaml"), now);
        assert_eq!(recorded, Some(digest(format!("{HEADER_PREFIX}\n3").as_bytes())));
        // The files written are not: they changed during the run.
        let x = Stat::of(&std::fs::symlink_metadata(out.join("a/x.yaml")).unwrap()).unwrap();
        assert_eq!(cache.lookup(Kind::Output, Path::new("a/x.yaml"), x), None);
    }

    #[test]
    fn the_entries_found_are_looked_up_and_listed_below_a_directory_in_their_order() {
        let mut entries: Vec<PathBuf> = ["b", "a-b/x", "a/c/d", "a", "a/b", "ab"].map(PathBuf::from).to_vec();
        crate::base::paths::sort_by_path(&mut entries, |p| p);
        let existing = Existing { entries, ..Existing::default() };
        assert!(existing.found(Path::new("a/b")) && existing.found(Path::new("a-b/x")));
        assert!(!existing.found(Path::new("a/x")) && !existing.found(Path::new("a-b")));
        let below = |root: &str| existing.found_below(Path::new(root)).map(Path::to_path_buf).collect::<Vec<_>>();
        assert_eq!(below("a"), ["", "b", "c/d"].map(PathBuf::from), "`a` itself, then its files, not `a-b` or `ab`");
        assert_eq!(below("a/c"), ["d"].map(PathBuf::from));
        assert!(below("c").is_empty());
    }

    /// A tree of isvc's `files`, each known by the digest of its own name.
    fn existing_of(files: &[&str]) -> Existing {
        let ours = files.iter().map(|p| (PathBuf::from(p).into(), Contents::digest(digest(p.as_bytes())))).collect();
        Existing { ours, ..Existing::default() }
    }

    /// `paths` as slashed text, for comparing with a list of names.
    fn names(paths: &mut dyn Iterator<Item = &Path>) -> Vec<String> {
        paths.map(crate::base::paths::slash).collect()
    }

    #[test]
    fn the_files_kept_of_some_namespaces_are_their_directories_and_plan_the_kustomizations_all_files_would() {
        let files = [
            "a/kustomization.yaml",
            "a/s/deployment.yaml",
            "a/s/service.yaml",
            "a-b/s/x.yaml",
            "ab/kustomization.yaml",
            "b/s/y.yaml",
            "kustomization.yaml",
        ];
        let existing = existing_of(&files);
        let kept = existing.kept(["a", "b"].map(String::from).into(), &[]);
        let held = ["a/kustomization.yaml", "a/s/deployment.yaml", "a/s/service.yaml", "b/s/y.yaml"];
        assert_eq!(names(&mut kept.files.keys().map(TreePath::as_path)), held, "not `a-b` or `ab`, which sort between");
        assert_eq!(kept.files[Path::new("b/s/y.yaml")].digest, digest(b"b/s/y.yaml"));
        assert_eq!(kept.objects, [((None, "a".to_string()), 2), ((None, "b".to_string()), 1)].into());
        assert_eq!(kept.dirs, [PathBuf::from("a")]);
        assert_eq!(
            names(&mut kept.unlisted.iter().map(PathBuf::as_path)),
            ["b/s/y.yaml"],
            "`b` has no kustomization of its own"
        );
        // What the kustomizations over every file kept would be.
        let all: Vec<&Path> = kept.files.keys().map(TreePath::as_path).collect();
        let expected = crate::derive::gitops::kustomizations(all.into_iter(), &[Path::new("a")], &[]);
        assert_eq!(
            names(&mut expected.iter().map(|(p, _)| p.as_path())),
            ["b/kustomization.yaml", "kustomization.yaml"]
        );
        let tree = written_tree(Vec::new(), kept);
        for (path, text) in expected {
            assert_eq!(tree[path.as_path()], Contents::text(text), "{}", path.display());
        }
        assert_eq!(tree.len(), held.len() + 2);
        // Names that are not one directory's name have no files.
        let none = existing.kept(["", ".", "..", "a/s", "/a"].map(String::from).into(), &[]);
        assert!(none.files.is_empty() && none.objects.is_empty() && none.unlisted.is_empty());
    }

    #[test]
    fn the_files_kept_in_clusters_trees_are_each_clusters_directories_of_the_namespaces() {
        let files = [
            "_gitops/applicationset-x.yaml",
            "east/_cluster/kustomization.yaml",
            "east/a/kustomization.yaml",
            "east/a/s/deployment.yaml",
            "east/a/t/deployment.yaml",
            "east/ab/s/x.yaml",
            "east/b/kustomization.yaml",
            "east/b/s/y.yaml",
            "east/kustomization.yaml",
            "west/a/kustomization.yaml",
            "west/a/s/deployment.yaml",
            "west/a/s/service.yaml",
            "west/kustomization.yaml",
        ];
        let existing = existing_of(&files);
        let clusters = ["east", "west"].map(String::from);
        let mut kept = existing.kept(["a".to_string()].into(), &clusters);
        let held = [
            "east/a/kustomization.yaml",
            "east/a/s/deployment.yaml",
            "east/a/t/deployment.yaml",
            "west/a/kustomization.yaml",
            "west/a/s/deployment.yaml",
            "west/a/s/service.yaml",
        ];
        assert_eq!(names(&mut kept.files.keys().map(TreePath::as_path)), held);
        let at = |c: &str, ns: &str| (Some(c.to_string()), ns.to_string());
        assert_eq!(kept.objects, [(at("east", "a"), 2), (at("west", "a"), 2)].into());
        assert_eq!(kept.dirs, [PathBuf::from("east/a"), PathBuf::from("west/a")]);
        assert!(kept.unlisted.is_empty());
        // A service kept in namespace `b`, compiled again: its directory in
        // every cluster's tree that has one.
        existing.keep_services(&mut kept, &[("b".to_string(), ["s".to_string()].into())].into(), &clusters);
        assert_eq!(names(&mut kept.services.iter().map(|(p, _)| p.as_path())), ["east/b/s/y.yaml"]);
        assert_eq!(kept.objects[&at("east", "b")], 1);
        assert_eq!(kept.service_objects(), 1);
        // A tree without clusters has no namespace `east`.
        assert!(existing.kept(["a".to_string()].into(), &[]).files.is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn a_file_added_after_the_tree_was_read_is_seen_before_writing() {
        let (_dir, out, writer) = opened(&planned(&[("a/x.yaml", "1")]));
        // Another program writes where isvc is about to, after the read.
        std::fs::create_dir(out.join("b")).unwrap();
        std::fs::write(out.join("b/y.yaml"), "hand written").unwrap();
        let err = writer.write(&planned(&[("a/x.yaml", "1"), ("b/y.yaml", "2")]), &StatCache::off()).unwrap_err();
        assert!(err.render(false).contains("isvc did not write it"), "{}", err.render(false));
        assert_eq!(std::fs::read_to_string(out.join("b/y.yaml")).unwrap(), "hand written");
    }

    #[test]
    fn a_file_added_outside_the_swapped_directory_stays_where_it_is() {
        let (_dir, out, writer) = opened(&planned(&[("a/x.yaml", "1"), ("b/y.yaml", "1")]));
        std::fs::write(out.join("b/notes.txt"), "hand written").unwrap();
        let changes = writer.write(&planned(&[("a/x.yaml", "2"), ("b/y.yaml", "1")]), &StatCache::off()).unwrap();
        assert_eq!(changes.update, vec![PathBuf::from("a/x.yaml")]);
        assert!(std::fs::read_to_string(out.join("a/x.yaml")).unwrap().ends_with("\n2"));
        assert_eq!(std::fs::read_to_string(out.join("b/notes.txt")).unwrap(), "hand written");
    }

    #[test]
    fn an_isvc_file_removed_after_the_tree_was_read_is_written_again() {
        let (_dir, out, writer) = opened(&planned(&[("a/x.yaml", "1"), ("a/z.yaml", "1"), ("b/y.yaml", "1")]));
        // In the directory the write replaces: seen, and written again.
        std::fs::remove_file(out.join("a/z.yaml")).unwrap();
        let changes = writer
            .write(&planned(&[("a/x.yaml", "2"), ("a/z.yaml", "1"), ("b/y.yaml", "1")]), &StatCache::off())
            .unwrap();
        assert_eq!(changes.create, vec![PathBuf::from("a/z.yaml")]);
        assert_eq!(changes.update, vec![PathBuf::from("a/x.yaml")]);
        assert!(out.join("a/z.yaml").is_file());
    }

    #[test]
    fn an_isvc_file_removed_elsewhere_after_the_tree_was_read_stays_removed() {
        let (_dir, out, writer) = opened(&planned(&[("a/x.yaml", "1"), ("b/y.yaml", "1")]));
        // Outside the directory the write replaces, the removal is left as
        // if it came after the render; the next render writes it again.
        std::fs::remove_file(out.join("b/y.yaml")).unwrap();
        let next = planned(&[("a/x.yaml", "2"), ("b/y.yaml", "1")]);
        let changes = writer.write(&next, &StatCache::off()).unwrap();
        drop(writer);
        assert_eq!(changes.update, vec![PathBuf::from("a/x.yaml")]);
        assert!(!out.join("b/y.yaml").exists());
        let changes = write(&out, &next).unwrap();
        assert_eq!(changes.create, vec![PathBuf::from("b/y.yaml")]);
    }

    #[test]
    fn a_manifest_added_after_the_tree_was_read_is_seen_before_writing() {
        let (_dir, out, writer) = opened(&planned(&[("a/x.yaml", "1")]));
        std::fs::write(out.join(MANIFEST), "hand written").unwrap();
        let err = writer.write(&planned(&[("a/x.yaml", "2"), (MANIFEST, "record")]), &StatCache::off()).unwrap_err();
        assert!(err.render(false).contains("isvc did not write it"), "{}", err.render(false));
        assert_eq!(std::fs::read_to_string(out.join(MANIFEST)).unwrap(), "hand written");
    }

    #[test]
    fn a_tree_that_cannot_be_staged_is_refused_not_written_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        write(&out, &planned(&[("a/x.yaml", "1"), ("b/y.yaml", "2")])).unwrap();
        let fifo = out.join("a/pipe");
        rustix::fs::mknodat(rustix::fs::CWD, &fifo, rustix::fs::FileType::Fifo, 0o600.into(), 0).unwrap();
        let err = write(&out, &planned(&[("a/x.yaml", "changed"), ("b/y.yaml", "changed")])).unwrap_err();
        let text = err.render(false);
        assert!(
            text.starts_with(&format!(
                "error: cannot stage the new tree of {}: {} is a FIFO (named pipe)\n",
                out.display(),
                fifo.display()
            )),
            "{text}"
        );
        assert!(text.ends_with("error: aborting due to 1 error; nothing was written\n"), "{text}");
        assert_eq!(std::fs::read_to_string(out.join("a/x.yaml")).unwrap(), format!("{HEADER_PREFIX}\n1"));
        assert_eq!(std::fs::read_to_string(out.join("b/y.yaml")).unwrap(), format!("{HEADER_PREFIX}\n2"));
    }

    #[test]
    fn only_isvc_staging_entries_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let mine = dir.path().join(".isvc-tmp-mine");
        std::fs::create_dir(&mine).unwrap();
        std::fs::write(mine.join("keep"), "x").unwrap();
        std::fs::create_dir(dir.path().join(".isvc-staging~left")).unwrap();
        write(&out, &planned(&[("x.yaml", "1")])).unwrap();
        std::fs::write(out.join(".isvc-tmp-notes"), "mine").unwrap();
        write(&out, &planned(&[("x.yaml", "2")])).unwrap();
        assert!(mine.join("keep").exists());
        assert!(out.join(".isvc-tmp-notes").exists());
        assert!(!dir.path().join(".isvc-staging~left").exists(), "a killed run's staging directory is removed");
    }

    #[test]
    fn entries_created_while_staging_move_into_the_new_tree() {
        let old = tempfile::tempdir().unwrap();
        let new = tempfile::tempdir().unwrap();
        for f in ["kept.yaml", "late.txt", "d/late.txt", "newdir/a.txt", "ours.yaml"] {
            std::fs::create_dir_all(old.path().join(f).parent().unwrap()).unwrap();
            std::fs::write(old.path().join(f), f).unwrap();
        }
        let mirrored: BTreeSet<PathBuf> = ["kept.yaml", "d"].iter().map(PathBuf::from).collect();
        let ours = PathBuf::from("ours.yaml");
        let replaced: BTreeSet<&PathBuf> = [&ours].into_iter().collect();
        // `k` was put back: what the old tree holds there is its copy.
        std::fs::create_dir_all(old.path().join("k")).unwrap();
        std::fs::write(old.path().join("k/copy.yaml"), "copy").unwrap();
        keep_newcomers(old.path(), new.path(), &mirrored, &replaced, &[Path::new("k")].into_iter().collect());
        for f in ["late.txt", "d/late.txt", "newdir/a.txt"] {
            assert_eq!(std::fs::read_to_string(new.path().join(f)).unwrap(), f);
        }
        assert!(!new.path().join("kept.yaml").exists() && !new.path().join("ours.yaml").exists());
        assert!(!new.path().join("k").exists(), "the copy of a directory put back stays behind");
    }

    #[cfg(unix)]
    #[test]
    fn a_swap_keeps_the_mode_of_directories() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        write(&out, &planned(&[("a/x.yaml", "1"), ("b/y.yaml", "2")])).unwrap();
        std::fs::set_permissions(out.join("a"), std::fs::Permissions::from_mode(0o750)).unwrap();
        std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o711)).unwrap();
        write(&out, &planned(&[("a/x.yaml", "1"), ("b/y.yaml", "changed")])).unwrap();
        assert_eq!(std::fs::metadata(out.join("a")).unwrap().permissions().mode() & 0o777, 0o750);
        assert_eq!(std::fs::metadata(&out).unwrap().permissions().mode() & 0o777, 0o711);
        // Extended attributes stay too, where the file system has them.
        #[cfg(target_os = "linux")]
        if rustix::fs::lsetxattr(out.join("a"), "user.isvc-test", b"kept", rustix::fs::XattrFlags::empty()).is_ok() {
            write(&out, &planned(&[("a/x.yaml", "1"), ("b/y.yaml", "again")])).unwrap();
            let mut value = [0u8; 16];
            let n = rustix::fs::lgetxattr(out.join("a"), "user.isvc-test", &mut value[..]).unwrap();
            assert_eq!(&value[..n], b"kept");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_swap_keeps_unchanged_directories_as_they_are() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let files = |b: &str, c: &str| {
            planned(&[("kustomization.yaml", "k"), ("ns/a/x.yaml", "1"), ("ns/b/y.yaml", b), ("ns/c/d/z.yaml", c)])
        };
        write(&out, &files("2", "3")).unwrap();
        std::fs::set_permissions(out.join("ns/a"), std::fs::Permissions::from_mode(0o750)).unwrap();
        std::fs::write(out.join("ns/a/notes.md"), "mine").unwrap();
        let ino = |p: &str| std::fs::metadata(out.join(p)).unwrap().ino();
        let before: Vec<u64> = ["", "ns", "ns/a", "ns/b", "ns/c", "ns/c/d"].iter().map(|p| ino(p)).collect();
        let mtime = std::fs::metadata(out.join("ns/a")).unwrap().modified().unwrap();
        // Only ns/b changes: it alone is swapped, everything else stays.
        let c = write(&out, &files("changed", "3")).unwrap();
        assert_eq!((c.update.len(), c.unchanged), (1, 3));
        let after: Vec<u64> = ["", "ns", "ns/a", "ns/b", "ns/c", "ns/c/d"].iter().map(|p| ino(p)).collect();
        assert_eq!(
            [after[0], after[1], after[2], after[4], after[5]],
            [before[0], before[1], before[2], before[4], before[5]]
        );
        assert_ne!(after[3], before[3], "the changed directory is the new one");
        // Changes in two services: their common parent is swapped, and the
        // unchanged service's directory is put back as it was.
        write(&out, &files("again", "changed")).unwrap();
        assert_eq!(ino("ns/a"), before[2]);
        assert_eq!(ino(""), before[0]);
        assert_ne!(ino("ns"), before[1]);
        assert_eq!(std::fs::metadata(out.join("ns/a")).unwrap().permissions().mode() & 0o777, 0o750);
        assert_eq!(std::fs::metadata(out.join("ns/a")).unwrap().modified().unwrap(), mtime);
        assert_eq!(std::fs::read_to_string(out.join("ns/a/notes.md")).unwrap(), "mine");
        assert_eq!(std::fs::read_to_string(out.join("ns/c/d/z.yaml")).unwrap(), format!("{HEADER_PREFIX}\nchanged"));
        // A service removed with its namespace: the directories it leaves
        // empty go, the rest stays.
        let c = write(&out, &planned(&[("kustomization.yaml", "k"), ("ns/a/x.yaml", "1"), ("ns/b/y.yaml", "again")]))
            .unwrap();
        assert_eq!(c.delete.len(), 1);
        assert!(!out.join("ns/c").exists());
        assert_eq!(ino("ns/a"), before[2]);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, ["out"], "no staging directory is left behind");
    }

    #[test]
    fn a_tree_that_cannot_be_swapped_in_one_step_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        write(&out, &planned(&[("a/x.yaml", "1"), ("b/y.yaml", "2")])).unwrap();
        let next = planned(&[("a/x.yaml", "changed"), ("b/y.yaml", "changed")]);
        let help = format!(
            "  = help: isvc builds the new tree beside the old one and swaps the two atomically; it never replaces files \
             one by one, which a failed or killed run would leave half done. Render into a new directory (`--out \
             {0}.new`) and move it into place, or keep the tree in a directory inside the mount (`--out {0}/tree`) or on \
             a local file system\n\nerror: aborting due to 1 error; nothing was written\n",
            out.display()
        );
        // The file system cannot exchange directories.
        #[cfg(target_os = "linux")]
        {
            FAKE_EXCHANGE_ERROR.with(|e| e.set(Some(rustix::io::Errno::INVAL.raw_os_error())));
            let err = write(&out, &next).unwrap_err().render(false);
            FAKE_EXCHANGE_ERROR.with(|e| e.set(None));
            assert_eq!(
                err,
                format!(
                    "error: cannot replace {} in one step: its file system cannot exchange two directories in one \
                     step (Invalid argument (os error 22))\n{help}",
                    out.display()
                )
            );
        }
        // `out` is a mount point: nothing can be staged beside it.
        FAKE_MOUNT.with(|m| *m.borrow_mut() = Some(out.clone()));
        let err = write(&out, &next).unwrap_err().render(false);
        FAKE_MOUNT.with(|m| *m.borrow_mut() = None);
        assert_eq!(
            err,
            format!(
                "error: cannot replace {0} in one step: {0} is a mount point (on another file system than {1})\n{help}",
                out.display(),
                dir.path().display()
            )
        );
        assert_eq!(std::fs::read_to_string(out.join("a/x.yaml")).unwrap(), format!("{HEADER_PREFIX}\n1"));
        assert_eq!(std::fs::read_to_string(out.join("b/y.yaml")).unwrap(), format!("{HEADER_PREFIX}\n2"));
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, ["out"], "the staging directory is removed");
        write(&out, &next).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn never_writes_through_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), out.join("a")).unwrap();
        let err = write(&out, &planned(&[("a/x.yaml", "1")])).unwrap_err();
        assert!(err.render(false).contains("symbolic link"), "{}", err.render(false));
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    }
}
