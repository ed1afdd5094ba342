//! What isvc knows of files it read before, so that it need not read them
//! again: for every input file and every file of an output tree, the
//! digest of its bytes, filed under the file's identity and status (device,
//! inode, size, modification and change times).
//!
//! `render --check`, `diff` and a re-render compare the digests of every
//! input and output file with the tree's manifest. Reading 29,000 files of
//! 60 MB for that costs more than a tenth of the render it saves. A file
//! whose status is the one recorded has the bytes recorded, as git's index
//! assumes of a work tree: every write to a file sets its change time to
//! the current time, and no call sets it back (stat(2), inode(7): "ctime
//! ... changed by writing or by setting inode information"), so an edit,
//! even one that restores the size and the modification time, shows.
//!
//! Two limits make that hold:
//! - Time stamps are taken from a coarse clock (a few milliseconds), so a
//!   file changed twice within one tick keeps its change time. A file is
//!   recorded only when its change time lies [`SETTLED_NS`] before the run
//!   began: every later write stamps a later tick. A file changed more
//!   recently is read every time until it has settled.
//! - The cache is the user's own, outside the tree ([`StatCache::open`]):
//!   it is never committed, and another checkout of the tree (other inodes)
//!   finds nothing in it and reads every file. Its entries are hints, each
//!   checked against the file's status before it is used; a damaged or
//!   foreign cache is ignored and replaced.
//!
//! Network file systems stamp files with the server's clock; a server more
//! than [`SETTLED_NS`] behind this machine's can defeat the first rule. (Git
//! compares with the time stamp of its own index file instead; isvc writes
//! nothing into the tree for a check.)
//! `ISVC_CACHE_DIR=` (empty) turns the cache off (docs/output.md).

use std::collections::HashMap;
use std::fs::Metadata;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// How long before the start of a run a file must have last changed to be
/// recorded: at least the granularity of any file system's time stamps
/// (FAT's are 2 seconds; most are a few milliseconds or finer).
pub const SETTLED_NS: i128 = 2_000_000_000;

/// Largest cache file read; a larger one is ignored (about 1.5 million
/// files).
const MAX_CACHE_BYTES: u64 = 256 << 20;

/// A tree's cache not written for this long is removed by the next run
/// that writes one (its tree is likely gone).
const UNUSED_FOR: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);

/// The name of a tree's cache file: this prefix and 32 hex digits.
const PREFIX: &str = "tree-";

/// Stale lines a cache file may hold beyond as many as its live ones
/// before it is written anew rather than appended to.
const APPEND_SLACK: usize = 1024;

const FIRST_LINE: &str = "isvc stat cache 1";

/// Which reading of a file an entry records: an input file's bytes, or one
/// of isvc's own files in an output tree (a file found foreign is never
/// recorded, so it is read again each time).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Input,
    Output,
}

impl Kind {
    const ALL: [Kind; 2] = [Kind::Input, Kind::Output];

    fn letter(self) -> char {
        match self {
            Kind::Input => 'i',
            Kind::Output => 'o',
        }
    }
}

/// A file's identity and status: what changes when its bytes do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl Stat {
    /// The status of a regular file (`None` for anything else, and on
    /// systems without inodes, where nothing is cached).
    pub fn of(meta: &Metadata) -> Option<Stat> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
            meta.is_file().then(|| Stat {
                dev: meta.dev(),
                ino: meta.ino(),
                size: meta.size(),
                mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
                ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
            })
        }
        #[cfg(not(unix))]
        {
            let _ = meta;
            None
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    stat: Stat,
    digest: String,
}

/// An entry of the cache as found, and whether this run used it.
#[derive(Debug)]
struct Found {
    entry: Entry,
    used: AtomicBool,
}

/// Entries by path, one map for each [`Kind`] (indexed by `kind as
/// usize`). A path is kept as its text: a path that is not UTF-8 is never
/// recorded (the file is read each time). The hasher is foldhash's: the
/// keys are the user's own paths, read by the user's own runs, and a
/// collision costs time, never a wrong answer.
type ByPath<V> = [HashMap<Box<str>, V, foldhash::fast::RandomState>; 2];

/// The digests of files read by earlier runs (see the module's comment).
/// Shared by the threads that read files; [`StatCache::save`] keeps what
/// this run saw.
#[derive(Debug)]
pub struct StatCache {
    /// Where the cache is kept; `None` when it is off.
    file: Option<PathBuf>,
    /// When this run began, in nanoseconds since the epoch.
    start_ns: i128,
    old: ByPath<Found>,
    /// The entry lines of the file read, of the same file or not.
    lines: usize,
    /// Entries this run read the file for.
    new: Mutex<ByPath<Entry>>,
}

impl StatCache {
    /// No cache: every file is read.
    pub fn off() -> StatCache {
        StatCache { file: None, start_ns: 0, old: ByPath::default(), lines: 0, new: Mutex::default() }
    }

    /// The cache of the output tree `out`, kept in the directory `dir`
    /// (one file per tree, named by the digest of the tree's real path).
    /// `None` for `dir` turns it off.
    pub fn open(dir: Option<&Path>, out: &Path) -> StatCache {
        let Some(dir) = dir else { return StatCache::off() };
        // Links and `..` resolved by the system, in that order; a tree not
        // yet written is named by its absolute path.
        let real = std::fs::canonicalize(out).unwrap_or_else(|_| crate::load::files::absolute(out));
        let file = dir.join(format!("{PREFIX}{}", crate::base::digest::digest(real.as_os_str().as_encoded_bytes())));
        StatCache::at(file)
    }

    /// The cache kept in `file`.
    pub fn at(file: PathBuf) -> StatCache {
        let start_ns =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i128);
        let (old, lines) = crate::load::files::read_regular(&file, MAX_CACHE_BYTES, false)
            .ok()
            .and_then(|bytes| parse(std::str::from_utf8(&bytes).ok()?))
            .unwrap_or_default();
        StatCache { file: Some(file), start_ns, old, lines, new: Mutex::default() }
    }

    /// The cache kept in `file`, for a run that began long after every
    /// file of a test was written.
    #[cfg(test)]
    pub(crate) fn settled(file: PathBuf) -> StatCache {
        let mut c = StatCache::at(file);
        c.start_ns += 10 * SETTLED_NS;
        c
    }

    /// The recorded digest of the file at `path` whose status is `stat`, if
    /// its status is the one recorded.
    pub fn lookup(&self, kind: Kind, path: &Path, stat: Stat) -> Option<String> {
        self.file.as_ref()?;
        let found = self.old[kind as usize].get(path.to_str()?).filter(|f| f.entry.stat == stat)?;
        found.used.store(true, Ordering::Relaxed);
        Some(found.entry.digest.clone())
    }

    /// Records `digest`, read from the file at `path` whose status was
    /// `stat` when it was read, if the file has settled.
    pub fn record(&self, kind: Kind, path: &Path, stat: Stat, digest: &str) {
        if self.file.is_none() {
            return;
        }
        if stat.ctime_ns + SETTLED_NS >= self.start_ns {
            return;
        }
        let Some(path) = path.to_str() else { return };
        let entry = Entry { stat, digest: digest.to_string() };
        self.new.lock().unwrap_or_else(|e| e.into_inner())[kind as usize].insert(path.into(), entry);
    }

    /// Keeps what this run saw (and nothing else) for the next run, when
    /// it recorded a file. A cache that cannot be written is no error: the
    /// next run reads the files.
    pub fn save(&self) {
        let Some(file) = &self.file else { return };
        let new = self.new.lock().unwrap_or_else(|e| e.into_inner());
        // Nothing learned: entries of files gone or changed stay until the
        // next write (they match no file), so a run that only read the
        // files it had to, such as a re-render after an edit, writes nothing.
        if new.iter().all(HashMap::is_empty) {
            return;
        }
        let used = |f: &Found| f.used.load(Ordering::Relaxed);
        let mut kept: Vec<Line<'_>> = Vec::new();
        let mut learned: Vec<Line<'_>> = Vec::new();
        for kind in Kind::ALL {
            let (old, new) = (&self.old[kind as usize], &new[kind as usize]);
            kept.extend(
                old.iter().filter(|(k, f)| used(f) && !new.contains_key(*k)).map(|(k, f)| (kind, &**k, &f.entry)),
            );
            learned.extend(new.iter().map(|(k, e)| (kind, &**k, e)));
        }
        // By path (as a path sorts: component by component), then kind.
        let order =
            |a: &Line<'_>, b: &Line<'_>| Path::new(a.1).cmp(Path::new(b.1)).then(a.0.letter().cmp(&b.0.letter()));
        learned.sort_by(order);
        // A few new entries are appended (a later line wins over an earlier
        // one of the same file), so a run that read a handful of files
        // writes a handful of lines. The file is written anew, with only
        // what this run saw, once its stale lines outnumber its live ones
        // by more than [`APPEND_SLACK`].
        let live = kept.len() + learned.len();
        if self.lines > 0 && self.lines + learned.len() <= 2 * live + APPEND_SLACK {
            let mut text = String::with_capacity(learned.len() * 160);
            for l in &learned {
                line(l, &mut text);
            }
            if append(file, text.as_bytes()).is_ok() {
                remove_unused(file.parent().unwrap_or(Path::new(".")));
                return;
            }
        }
        let mut entries = learned;
        entries.extend(kept);
        entries.sort_by(order);
        let mut text = String::with_capacity(32 + entries.len() * 160);
        text.push_str(FIRST_LINE);
        text.push('\n');
        for l in &entries {
            line(l, &mut text);
        }
        if write_replacing(file, text.as_bytes()).is_ok() {
            remove_unused(file.parent().unwrap_or(Path::new(".")));
        }
    }
}

/// An entry to write: its kind, its path and what it records.
type Line<'a> = (Kind, &'a str, &'a Entry);

/// One entry of the cache file, as a line.
fn line(&(kind, path, e): &Line<'_>, text: &mut String) {
    use std::fmt::Write;
    let s = &e.stat;
    let _ =
        write!(text, "{} {} {} {} {} {} {} ", kind.letter(), e.digest, s.dev, s.ino, s.size, s.mtime_ns, s.ctime_ns);
    crate::base::value::push_quoted(text, path);
    text.push('\n');
}

/// Appends whole lines to an existing cache `file` in one write: writes in
/// append mode do not interleave with another run's, and a run killed
/// during the write leaves a damaged last line, for which the next run
/// ignores the cache and writes it anew.
fn append(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(file)?;
    if !f.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    f.write_all(bytes)
}

/// Removes the caches of trees in `dir` not written for [`UNUSED_FOR`];
/// nothing but cache files (by name, regular files) is touched.
fn remove_unused(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let now = std::time::SystemTime::now();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let ours = name
            .to_str()
            .and_then(|n| n.strip_prefix(PREFIX))
            .is_some_and(|d| d.len() == 32 && d.bytes().all(|b| b.is_ascii_hexdigit()));
        let unused = entry
            .metadata()
            .ok()
            .filter(|m| m.is_file())
            .and_then(|m| m.modified().ok())
            .is_some_and(|t| now.duration_since(t).is_ok_and(|age| age > UNUSED_FOR));
        if ours && unused {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Writes `file` whole through a temporary file beside it, so a reader
/// finds the old cache or the new one.
fn write_replacing(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::Builder::new().prefix(".tmp-").tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.persist(file).map_err(|e| e.error)?;
    Ok(())
}

/// The entries of a cache file (where a file has several lines, the last
/// one) and the number of lines; `None` for anything else. The lines are
/// read in parallel (a tree of 30,000 files has as many).
fn parse(text: &str) -> Option<(ByPath<Found>, usize)> {
    use rayon::prelude::*;
    let (first, rest) = text.split_once('\n')?;
    if first != FIRST_LINE {
        return None;
    }
    let lines: Vec<&str> = rest.lines().collect();
    let entries: Vec<(Kind, Box<str>, Found)> = lines.par_iter().map(|line| parse_line(line)).collect::<Option<_>>()?;
    let count = entries.len();
    let mut by_path = ByPath::default();
    // Sized up front: growing a map of tens of thousands of entries rehashes
    // every entry each time it doubles.
    let inputs = entries.iter().filter(|(kind, ..)| *kind == Kind::Input).count();
    by_path[Kind::Input as usize].reserve(inputs);
    by_path[Kind::Output as usize].reserve(count - inputs);
    for (kind, path, found) in entries {
        by_path[kind as usize].insert(path, found);
    }
    Some((by_path, count))
}

fn parse_line(line: &str) -> Option<(Kind, Box<str>, Found)> {
    let mut f = line.splitn(8, ' ');
    let kind = match f.next()? {
        "i" => Kind::Input,
        "o" => Kind::Output,
        _ => return None,
    };
    let digest = f.next()?;
    if digest.len() != 32 || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let stat = Stat {
        dev: f.next()?.parse().ok()?,
        ino: f.next()?.parse().ok()?,
        size: f.next()?.parse().ok()?,
        mtime_ns: f.next()?.parse().ok()?,
        ctime_ns: f.next()?.parse().ok()?,
    };
    let path = crate::base::value::unquote(f.next()?)?.into();
    let entry = Entry { stat, digest: digest.to_string() };
    Some((kind, path, Found { entry, used: AtomicBool::new(false) }))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn stat(meta: &Metadata) -> Stat {
        Stat::of(meta).unwrap()
    }

    /// A settled cache in `cache_file` that records `dir/a.yaml` (the
    /// file, written) as an input, and the file's path and status.
    fn record_one(dir: &Path, cache_file: &Path) -> (PathBuf, Metadata) {
        let f = dir.join("a.yaml");
        std::fs::write(&f, "a").unwrap();
        let meta = std::fs::symlink_metadata(&f).unwrap();
        let c = StatCache::settled(cache_file.to_path_buf());
        c.record(Kind::Input, &f, stat(&meta), "0123456789abcdef0123456789abcdef");
        c.save();
        (f, meta)
    }

    #[test]
    fn a_settled_file_is_found_until_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.yaml");
        std::fs::write(&f, "a: 1\n").unwrap();
        let cache_file = dir.path().join("cache/tree-x");
        let c = StatCache::settled(cache_file.clone());
        let meta = std::fs::symlink_metadata(&f).unwrap();
        assert_eq!(c.lookup(Kind::Output, &f, stat(&meta)), None);
        c.record(Kind::Output, &f, stat(&meta), "0123456789abcdef0123456789abcdef");
        c.save();

        let c = StatCache::settled(cache_file.clone());
        let meta = std::fs::symlink_metadata(&f).unwrap();
        assert_eq!(c.lookup(Kind::Output, &f, stat(&meta)).as_deref(), Some("0123456789abcdef0123456789abcdef"));
        // Recorded as an output file, not as an input.
        assert_eq!(c.lookup(Kind::Input, &f, stat(&meta)), None);

        // Same size, same modification time, other bytes: the change time
        // moved on.
        let mtime = meta.modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&f, "a: 2\n").unwrap();
        std::fs::File::options().write(true).open(&f).unwrap().set_modified(mtime).unwrap();
        let meta = std::fs::symlink_metadata(&f).unwrap();
        assert_eq!(meta.modified().unwrap(), mtime);
        assert_eq!(c.lookup(Kind::Output, &f, stat(&meta)), None);
    }

    #[test]
    fn a_file_changed_just_before_the_run_is_not_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.yaml");
        std::fs::write(&f, "a: 1\n").unwrap();
        let c = StatCache::at(dir.path().join("tree-x"));
        let meta = std::fs::symlink_metadata(&f).unwrap();
        c.record(Kind::Output, &f, stat(&meta), "0123456789abcdef0123456789abcdef");
        c.save();
        let c = StatCache::settled(dir.path().join("tree-x"));
        assert_eq!(c.lookup(Kind::Output, &f, stat(&meta)), None);
    }

    #[test]
    fn a_damaged_cache_is_ignored_and_an_unchanged_one_not_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tree-x");
        for text in ["", "isvc stat cache 1\no xyz 1 2 3 4 5 \"/a\"\n", "isvc stat cache 2\n", "\u{0}\u{1}"] {
            std::fs::write(&file, text).unwrap();
            assert!(StatCache::at(file.clone()).old.iter().all(HashMap::is_empty), "{text:?}");
        }
        let (f, meta) = record_one(dir.path(), &file);
        let written = std::fs::symlink_metadata(&file).unwrap();
        let c = StatCache::settled(file.clone());
        assert!(c.lookup(Kind::Input, &f, stat(&meta)).is_some());
        c.save();
        let again = std::fs::symlink_metadata(&file).unwrap();
        assert_eq!(Stat::of(&written), Stat::of(&again), "an unchanged cache is not written again");
    }

    #[test]
    fn the_caches_of_trees_unused_for_a_month_go() {
        let dir = tempfile::tempdir().unwrap();
        let old = |name: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, "x").unwrap();
            let then = std::time::SystemTime::now() - UNUSED_FOR - std::time::Duration::from_secs(60);
            std::fs::File::options().write(true).open(&p).unwrap().set_modified(then).unwrap();
            p
        };
        let stale = old(&format!("{PREFIX}{}", "a".repeat(32)));
        let foreign = old("notes.txt");
        let recent = dir.path().join(format!("{PREFIX}{}", "b".repeat(32)));
        std::fs::write(&recent, "x").unwrap();
        record_one(dir.path(), &dir.path().join(format!("{PREFIX}{}", "c".repeat(32))));
        assert!(!stale.exists());
        assert!(foreign.exists() && recent.exists());
    }

    #[test]
    fn a_few_new_entries_are_appended_and_a_stale_cache_written_anew() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tree-x");
        let files: Vec<PathBuf> = (0..3).map(|i| dir.path().join(format!("{i}.yaml"))).collect();
        let digest = |i: usize| format!("{i:032x}");
        let record = |c: &StatCache, i: usize| {
            let meta = std::fs::symlink_metadata(&files[i]).unwrap();
            c.record(Kind::Input, &files[i], stat(&meta), &digest(i));
        };
        let found = |c: &StatCache, i: usize| {
            let meta = std::fs::symlink_metadata(&files[i]).unwrap();
            c.lookup(Kind::Input, &files[i], stat(&meta))
        };
        for f in &files {
            std::fs::write(f, "a").unwrap();
        }
        let c = StatCache::settled(file.clone());
        record(&c, 0);
        c.save();
        let first = std::fs::read_to_string(&file).unwrap();

        // One new entry: one line appended, the file's first lines kept.
        let c = StatCache::settled(file.clone());
        assert_eq!(found(&c, 0), Some(digest(0)));
        record(&c, 1);
        c.save();
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.starts_with(&first) && text.lines().count() == 3, "{text}");

        // The same file recorded again: the later line wins.
        let c = StatCache::settled(file.clone());
        assert_eq!(found(&c, 1), Some(digest(1)));
        let meta = std::fs::symlink_metadata(&files[1]).unwrap();
        c.record(Kind::Input, &files[1], stat(&meta), &digest(7));
        c.save();
        let c = StatCache::settled(file.clone());
        assert_eq!(found(&c, 1), Some(digest(7)));
        assert_eq!(c.lines, 3);

        // A file with many stale lines (here past the slack) is written
        // anew with the entries this run used and learned.
        let mut text = std::fs::read_to_string(&file).unwrap();
        let stale = dir.path().join("gone.yaml");
        for i in 0..=APPEND_SLACK {
            text.push_str(&format!("i {} 1 {i} 1 1 1 \"{}\"\n", digest(i), stale.display()));
        }
        std::fs::write(&file, text).unwrap();
        let c = StatCache::settled(file.clone());
        assert_eq!(found(&c, 0), Some(digest(0)));
        record(&c, 2);
        c.save();
        let c = StatCache::settled(file.clone());
        assert_eq!(c.lines, 2, "{:?}", std::fs::read_to_string(&file));
        assert_eq!((found(&c, 0), found(&c, 1), found(&c, 2)), (Some(digest(0)), None, Some(digest(2))));
    }

    #[test]
    fn a_cache_with_a_torn_last_line_is_ignored() {
        // A run killed while it appended: the line is cut anywhere.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tree-x");
        let (f, meta) = record_one(dir.path(), &file);
        let whole = std::fs::read_to_string(&file).unwrap();
        let last = whole.lines().last().unwrap().to_string();
        for cut in 1..last.len() {
            std::fs::write(&file, format!("{whole}{}", &last[..cut])).unwrap();
            let c = StatCache::settled(file.clone());
            assert_eq!(c.lookup(Kind::Input, &f, stat(&meta)), None, "cut at {cut}: {:?}", &last[..cut]);
        }
    }

    #[test]
    fn off_finds_and_keeps_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.yaml");
        std::fs::write(&f, "a").unwrap();
        let meta = std::fs::symlink_metadata(&f).unwrap();
        let c = StatCache::off();
        c.record(Kind::Input, &f, stat(&meta), "0123456789abcdef0123456789abcdef");
        assert_eq!(c.lookup(Kind::Input, &f, stat(&meta)), None);
        c.save();
    }
}
