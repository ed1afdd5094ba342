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
//! A swap of the tree hard-links the files it keeps, which moves their
//! change time alone: the writer records them under their new status
//! where nothing else changed ([`StatCache::record_relinked`]), so the run
//! after a render that swapped the tree's root need not read them all.
//!
//! A run that finds a tree up to date records its *fingerprint* beside the
//! cache ([`Fingerprint`]): a digest of the run's settings and of the
//! path and status of every input file and of every entry of the tree.
//! By the rule above, a later run that finds the same fingerprint finds
//! the same bytes everywhere, so the tree is still up to date: it answers
//! from the walks and the manifest's summary, without reading the cache or
//! any other file, and without parsing the manifest's listings. Every
//! status a fingerprint records has settled, as every entry of the cache
//! has.
//!
//! Network file systems stamp files with the server's clock; a server more
//! than [`SETTLED_NS`] behind this machine's can defeat the first rule. (Git
//! compares with the time stamp of its own index file instead; isvc writes
//! nothing into the tree for a check.)
//! `ISVC_CACHE_DIR=` (empty) turns the cache off (docs/output.md).

use std::fs::Metadata;
use std::hash::BuildHasher;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use hashbrown::HashTable;

use crate::base::digest::Digest;
use crate::base::paths::{PathOrder, orders_by_bytes};

/// How long before the start of a run a file must have last changed to be
/// recorded: at least the granularity of any file system's time stamps
/// (FAT's are 2 seconds; most are a few milliseconds or finer).
pub const SETTLED_NS: i64 = 2_000_000_000;

/// Largest cache file read; a larger one is ignored (about 1.5 million
/// files).
const MAX_CACHE_BYTES: u64 = 256 << 20;

/// A tree's cache not written for this long is removed by the next run
/// that writes one (its tree is likely gone).
const UNUSED_FOR: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);

/// The name of a tree's cache file: this prefix and a digest (32 lower-case
/// hex digits, [`crate::base::digest::is_digest`]).
const PREFIX: &str = "tree-";

/// Stale entries a cache file may hold beyond an eighth of its live ones
/// before it is written anew rather than appended to.
const APPEND_SLACK: usize = 1024;

/// The first line of a cache file: what it is, and the version of its
/// entries' form. The entries follow, each in the form [`push_cache_entry`]
/// writes: binary (the file is this machine's, never committed or read by
/// anything but isvc), so that a run reads a tree's 50,000 entries without
/// parsing a number or unquoting a path. As text (version 1), reading the
/// cache took 5.9% of the CPU samples of a re-render after one change at
/// 10,000 services; in binary, 2.6% (benches/README.md).
const FIRST_LINE: &str = "isvc stat cache 2";

/// An entry's bytes before its path: its kind's letter, its digest (32
/// hex digits), its status (device, inode, size, modification and change
/// times: five numbers of 8 bytes, little-endian) and its path's length (2
/// bytes, little-endian). The path's bytes (UTF-8) and [`END`] follow.
const HEAD: usize = 1 + 32 + 5 * 8 + 2;

/// The byte that ends every entry: a run killed while it appended leaves
/// an entry cut anywhere, which its length or its end shows.
const END: u8 = b'\n';

/// The suffix of the name of a tree's verified fingerprint, beside its
/// cache file ([`Place::verified`]).
const VERIFIED_SUFFIX: &str = ".verified";

/// The suffix of the name of a tree's directory listings, beside its cache
/// file ([`Place::listings`], `emit::listing`).
const LISTINGS_SUFFIX: &str = ".dirs";

/// Whether a file of `stale` entries beside `live` ones may keep them
/// (appended to) rather than be written anew with the live ones alone
/// ([`APPEND_SLACK`]); the listings beside the cache keep the same rule
/// for their lines.
pub(super) fn few_stale(stale: usize, live: usize) -> bool {
    stale <= live / 8 + APPEND_SLACK
}

/// The first line of a verified fingerprint's file; the next two are the
/// fingerprints of the inputs and of the tree.
const VERIFIED_LINE: &str = "isvc verified tree 2";

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
    /// Times in nanoseconds since 1970, which 64 bits hold until the year
    /// 2262; a later modification time (set by hand) is held as the
    /// largest, and an edit of such a file still moves its change time.
    mtime_ns: i64,
    ctime_ns: i64,
}

impl Stat {
    /// The status of a regular file (`None` for anything else, and on
    /// systems without inodes, where nothing is cached).
    pub fn of(meta: &Metadata) -> Option<Stat> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            meta.is_file().then(|| Stat {
                dev: meta.dev(),
                ino: meta.ino(),
                size: meta.size(),
                mtime_ns: nanos(meta.mtime(), meta.mtime_nsec()),
                ctime_ns: nanos(meta.ctime(), meta.ctime_nsec()),
            })
        }
        #[cfg(not(unix))]
        {
            let _ = meta;
            None
        }
    }

    /// The status of a regular file as fstatat(2) gives it (`None` for
    /// anything else): the same values as [`Stat::of`] takes from the
    /// standard library's, so an entry recorded from either is found by
    /// the other (a test says so).
    #[cfg(unix)]
    #[allow(clippy::unnecessary_cast)] // The fields' types differ between systems.
    pub fn of_raw(st: &rustix::fs::Stat) -> Option<Stat> {
        (rustix::fs::FileType::from_raw_mode(st.st_mode as _) == rustix::fs::FileType::RegularFile).then(|| Stat {
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            size: st.st_size as u64,
            mtime_ns: nanos(st.st_mtime as i64, st.st_mtime_nsec as i64),
            ctime_ns: nanos(st.st_ctime as i64, st.st_ctime_nsec as i64),
        })
    }
}

/// Whether a time (in nanoseconds since the epoch) lies [`SETTLED_NS`]
/// before `start_ns`, when a run began: any later write stamps a later
/// tick.
pub(super) fn settled(time_ns: i64, start_ns: i64) -> bool {
    time_ns.saturating_add(SETTLED_NS) < start_ns
}

impl Stat {
    /// Whether both its times had settled when the run that began at
    /// `start_ns` began.
    fn has_settled(&self, start_ns: i64) -> bool {
        settled(self.mtime_ns, start_ns) && settled(self.ctime_ns, start_ns)
    }
}

/// `n`, or the nearest number 64 bits hold.
fn saturating_i64(n: impl TryInto<i64> + PartialOrd + Default) -> i64 {
    let negative = n < Default::default();
    n.try_into().unwrap_or(if negative { i64::MIN } else { i64::MAX })
}

/// A time in seconds and nanoseconds, in nanoseconds (the nearest 64 bits
/// hold).
#[cfg(unix)]
pub(super) fn nanos(seconds: i64, nanoseconds: i64) -> i64 {
    seconds.saturating_mul(1_000_000_000).saturating_add(nanoseconds)
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    stat: Stat,
    digest: Digest,
}

/// An entry a run learned: its kind and path, and what it records. A path
/// is kept as its text: a path that is not UTF-8 is never recorded (the
/// file is read each time).
type Learned = (Kind, Box<str>, Entry);

/// The digests of files read by earlier runs (see the module's comment).
/// Shared by the threads that read files; [`StatCache::save`] keeps what
/// this run saw.
#[derive(Debug)]
pub struct StatCache {
    /// Where the cache is kept; `None` when it is off.
    file: Option<PathBuf>,
    /// When this run began, in nanoseconds since the epoch.
    start_ns: i64,
    /// The file read, of the same file or not.
    old: Old,
    /// Entries this run read the file for, in the order recorded: a list,
    /// not a map (a run with no cache records every file of the tree, and
    /// a map grown under a lock, one file at a time, cost a tenth of it).
    new: Mutex<Vec<Learned>>,
}

/// Where an entry lies in [`Old`]'s bytes, the status it records, and the
/// hash of its path.
#[derive(Clone, Copy, Debug)]
struct Slot {
    hash: u64,
    /// The status it records.
    stat: Stat,
    kind: Kind,
    /// Where the entry starts: its digest is its bytes 1 to 33, its path
    /// the `path_len` bytes from [`HEAD`] ([`push_cache_entry`]).
    at: u32,
    path_len: u16,
}

impl Slot {
    /// The entry's bytes in `bytes`, its end included.
    fn entry(self) -> std::ops::Range<usize> {
        self.at as usize..self.path().end + 1
    }

    fn path(self) -> std::ops::Range<usize> {
        let start = self.at as usize + HEAD;
        start..start + usize::from(self.path_len)
    }
}

/// The cache file as read: its bytes, and its entries indexed by kind and
/// path (where a file has several entries, the last one). Each entry is
/// checked when the file is read, and leaves only its status and where it
/// lies: well under half of what a map of owned paths and digests took,
/// which was most of the memory of a tree's survey.
#[derive(Debug, Default)]
struct Old {
    /// The file's bytes.
    bytes: Vec<u8>,
    slots: Vec<Slot>,
    /// Whether this run used each slot's entry.
    used: Vec<AtomicBool>,
    /// Slots by path, one table for each [`Kind`] (indexed by `kind as
    /// usize`). The hasher is foldhash's: the keys are the user's own
    /// paths, read by the user's own runs, and a collision costs time,
    /// never a wrong answer.
    index: [HashTable<u32>; 2],
    hasher: foldhash::fast::RandomState,
}

impl Old {
    /// The cache file's `bytes`; `None` for anything but a cache file of
    /// this version, or one with a damaged entry (cut short, of another
    /// kind, with a digest isvc does not write, a path that is not UTF-8 or
    /// no end where its length says).
    fn parse(bytes: Vec<u8>) -> Option<Old> {
        use hashbrown::hash_table::Entry;
        let mut at = bytes.strip_prefix(FIRST_LINE.as_bytes())?.strip_prefix(b"\n").map(|_| FIRST_LINE.len() + 1)?;
        let hasher = foldhash::fast::RandomState::default();
        let mut slots = Vec::new();
        while at < bytes.len() {
            let head: &[u8; HEAD] = bytes.get(at..at + HEAD)?.try_into().ok()?;
            let kind = match head[0] {
                b'i' => Kind::Input,
                b'o' => Kind::Output,
                _ => return None,
            };
            Digest::parse_bytes(&head[1..33])?;
            let number = |i: usize| u64::from_le_bytes(head[33 + 8 * i..41 + 8 * i].try_into().expect("8 bytes"));
            let stat = Stat {
                dev: number(0),
                ino: number(1),
                size: number(2),
                mtime_ns: number(3) as i64,
                ctime_ns: number(4) as i64,
            };
            let path_len = u16::from_le_bytes([head[HEAD - 2], head[HEAD - 1]]);
            let slot = Slot { hash: 0, stat, kind, at: u32::try_from(at).ok()?, path_len };
            let path = std::str::from_utf8(bytes.get(slot.path())?).ok()?;
            if bytes.get(slot.path().end) != Some(&END) {
                return None;
            }
            slots.push(Slot { hash: hasher.hash_one(path), ..slot });
            at = slot.entry().end;
        }
        let mut old = Old { bytes, hasher, slots, ..Old::default() };
        old.used = old.slots.iter().map(|_| AtomicBool::new(false)).collect();
        let inputs = old.slots.iter().filter(|s| s.kind == Kind::Input).count();
        old.index[Kind::Input as usize].reserve(inputs, |_| 0);
        old.index[Kind::Output as usize].reserve(old.slots.len() - inputs, |_| 0);
        let Old { bytes, slots, index, .. } = &mut old;
        let path = |j: u32| &bytes[slots[j as usize].path()];
        for (i, slot) in slots.iter().enumerate() {
            let i = u32::try_from(i).ok()?;
            // A later entry of the same file replaces an earlier one.
            match index[slot.kind as usize].entry(slot.hash, |&j| path(j) == path(i), |&j| slots[j as usize].hash) {
                Entry::Occupied(mut e) => *e.get_mut() = i,
                Entry::Vacant(e) => {
                    e.insert(i);
                }
            }
        }
        Some(old)
    }

    /// The number of entries.
    fn entries(&self) -> usize {
        self.slots.len()
    }

    /// The path of the entry `i`, checked to be UTF-8 when it was read.
    fn path(&self, i: u32) -> &[u8] {
        &self.bytes[self.slots[i as usize].path()]
    }

    /// The entry `i` as the file holds it.
    fn entry(&self, i: u32) -> &[u8] {
        &self.bytes[self.slots[i as usize].entry()]
    }

    fn digest(&self, i: u32) -> Option<Digest> {
        let at = self.slots[i as usize].at as usize;
        Digest::parse_bytes(&self.bytes[at + 1..at + 33])
    }

    /// The slot of the entry of `path`, if any.
    fn find(&self, kind: Kind, path: &str) -> Option<u32> {
        let hash = self.hasher.hash_one(path);
        self.index[kind as usize].find(hash, |&j| self.path(j) == path.as_bytes()).copied()
    }

    /// The entries in use, one for each file: each slot's kind and index.
    fn live(&self) -> impl Iterator<Item = (Kind, u32)> + '_ {
        Kind::ALL.into_iter().flat_map(move |kind| self.index[kind as usize].iter().map(move |&i| (kind, i)))
    }
}

impl StatCache {
    /// No cache: every file is read.
    pub fn off() -> StatCache {
        StatCache { file: None, start_ns: 0, old: Old::default(), new: Mutex::default() }
    }

    /// The cache of the output tree `out`, kept in the directory `dir`
    /// ([`Place::of`]). `None` for `dir` turns it off.
    pub fn open(dir: Option<&Path>, out: &Path) -> StatCache {
        Place::of(dir, out).read()
    }

    /// The cache kept in `file`.
    pub fn at(file: PathBuf) -> StatCache {
        Place { file: Some(file), start_ns: now_ns() }.read()
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
    pub fn lookup(&self, kind: Kind, path: &Path, stat: Stat) -> Option<Digest> {
        self.file.as_ref()?;
        let i = self.old.find(kind, path.to_str()?)?;
        if self.old.slots[i as usize].stat != stat {
            return None;
        }
        self.old.used[i as usize].store(true, Ordering::Relaxed);
        self.old.digest(i)
    }

    /// Whether it is kept at all (not [`StatCache::off`]).
    pub fn is_on(&self) -> bool {
        self.file.is_some()
    }

    /// Whether it may know any file of the output tree (with the cache
    /// off, or none recorded, it knows none: their status is of no use).
    pub fn knows_outputs(&self) -> bool {
        self.file.is_some() && !self.old.index[Kind::Output as usize].is_empty()
    }

    /// Records `digest`, read from the file at `path` whose status was
    /// `stat` when it was read, if the file has settled.
    pub fn record(&self, kind: Kind, path: &Path, stat: Stat, digest: Digest) {
        self.record_all(kind, [(path, stat, digest)]);
    }

    /// Records the digests of the files `read` ([`StatCache::record`]),
    /// all at once: the files of a tree are read on every core, and
    /// recorded together after.
    pub fn record_all<'a>(&self, kind: Kind, read: impl IntoIterator<Item = (&'a Path, Stat, Digest)>) {
        self.learn(kind, read.into_iter().filter(|(_, stat, _)| settled(stat.ctime_ns, self.start_ns)));
    }

    /// Records the digests of files a swap of the tree hard-linked, each
    /// with its status `before` (when this run took its digest) and `now`
    /// (after the swap): the links made and removed changed its change time
    /// and nothing else. Recorded under `now` where the file is the same
    /// (device and inode), of the same size and modification time, and
    /// its digest was taken of settled bytes (both times of `before`
    /// [`SETTLED_NS`] before the run began: [`StatCache::is_settled`]). A
    /// write since the digest was taken sets the modification time to the
    /// time of the write, which a settled one is not, and the file is read
    /// again; only a write that also set the modification time back within
    /// the clock tick of the status taken after the swap would go unseen.
    pub fn record_relinked<'a>(&self, kind: Kind, files: impl IntoIterator<Item = (&'a Path, Stat, Stat, Digest)>) {
        let kept = |before: &Stat, now: &Stat| {
            (before.dev, before.ino, before.size, before.mtime_ns) == (now.dev, now.ino, now.size, now.mtime_ns)
        };
        let relinked = files.into_iter().filter(|(_, before, now, _)| kept(before, now) && self.is_settled(*before));
        self.learn(kind, relinked.map(|(path, _, now, digest)| (path, now, digest)));
    }

    /// Keeps `files` (path, status, digest) as learned by this run, but a
    /// path that is not UTF-8 or longer than an entry holds (read again
    /// each time); nothing with the cache off.
    fn learn<'a>(&self, kind: Kind, files: impl Iterator<Item = (&'a Path, Stat, Digest)>) {
        if self.file.is_none() {
            return;
        }
        let mut learned = Vec::with_capacity(files.size_hint().1.unwrap_or(0));
        for (path, stat, digest) in files {
            let Some(path) = path.to_str().filter(|p| u16::try_from(p.len()).is_ok()) else { continue };
            learned.push((kind, path.into(), Entry { stat, digest }));
        }
        self.new.lock().unwrap_or_else(|e| e.into_inner()).append(&mut learned);
    }

    /// Whether a digest taken of a file whose status was `stat` may be
    /// recorded: both its times [`SETTLED_NS`] before the run began
    /// ([`StatCache::record_relinked`] asks it; nothing is recorded with
    /// the cache off).
    pub fn is_settled(&self, stat: Stat) -> bool {
        self.file.is_some() && stat.has_settled(self.start_ns)
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
        if new.is_empty() {
            return;
        }
        let old = &self.old;
        let used = |i: u32| old.used[i as usize].load(Ordering::Relaxed);
        let mut learned: Vec<ToWrite<'_>> = new.iter().map(|(kind, k, e)| (*kind, &**k, Record::Learned(e))).collect();
        // By path (as a path sorts: component by component), then kind.
        let order = write_order(learned.iter());
        sort_to_write(&mut learned, order);
        // A file recorded twice by one run: its last entry (a sort keeps the
        // order of equal entries).
        learned.reverse();
        learned.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
        learned.reverse();
        // The entries kept: those in use that this run did not record
        // again. Counted from the few it recorded, so that a run appending
        // a handful of entries does not list the tens of thousands it keeps.
        let recorded_again = learned.iter().filter(|(kind, path, _)| old.find(*kind, path).is_some_and(used)).count();
        let kept_count = old.live().filter(|&(_, i)| used(i)).count() - recorded_again;
        // A few new entries are appended (a later entry wins over an earlier
        // one of the same file), so a run that read a handful of files
        // writes a handful of entries. The file is written anew, with only
        // what this run saw, once its stale entries (those not kept: of
        // files gone, changed or recorded again) outnumber an eighth of its
        // live ones by more than [`APPEND_SLACK`]: every run reads them all.
        let live = kept_count + learned.len();
        let stale = old.entries() - kept_count;
        if old.entries() > 0 && few_stale(stale, live) && append(file, &entries_bytes(b"", &learned)).is_ok() {
            remove_unused(file.parent().unwrap_or(Path::new(".")));
            return;
        }
        let relearned = |kind: Kind, path: &str| {
            learned.binary_search_by(|l| cmp_to_write(order, l, &(kind, path, Record::Kept(b"")))).is_ok()
        };
        let kept: Vec<ToWrite<'_>> = old
            .live()
            .filter_map(|(kind, i)| {
                // (A path was checked to be UTF-8 as the file was read.)
                let path = std::str::from_utf8(old.path(i)).ok()?;
                (used(i) && !relearned(kind, path)).then(|| (kind, path, Record::Kept(old.entry(i))))
            })
            .collect();
        let order = write_order(learned.iter().chain(&kept));
        let mut entries = learned;
        entries.extend(kept);
        sort_to_write(&mut entries, order);
        let bytes = entries_bytes(format!("{FIRST_LINE}\n").as_bytes(), &entries);
        if write_replacing(file, &bytes).is_ok() {
            remove_unused(file.parent().unwrap_or(Path::new(".")));
        }
    }
}

/// The time now, in nanoseconds since the epoch.
fn now_ns() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| saturating_i64(d.as_nanos()))
}

/// Where the cache of a tree is kept, and when the run began: what a run
/// knows of the cache before it reads it ([`Place::read`]), and all it
/// needs to tell whether the tree is in a state it verified before
/// ([`Place::verified`]).
#[derive(Debug)]
pub struct Place {
    /// The cache file; `None` when the cache is off.
    file: Option<PathBuf>,
    /// When this run began, in nanoseconds since the epoch.
    start_ns: i64,
}

impl Place {
    /// The place of the cache of the output tree `out` in the directory
    /// `dir`: one file per tree, named by the digest of the tree's real
    /// path. `None` for `dir` turns the cache off.
    pub fn of(dir: Option<&Path>, out: &Path) -> Place {
        let start_ns = now_ns();
        let Some(dir) = dir else { return Place { file: None, start_ns } };
        // Links and `..` resolved by the system, in that order; a tree not
        // yet written is named by its absolute path.
        let real = std::fs::canonicalize(out).unwrap_or_else(|_| crate::load::files::absolute(out));
        let file = dir.join(format!("{PREFIX}{}", crate::base::digest::digest(real.as_os_str().as_encoded_bytes())));
        Place { file: Some(file), start_ns }
    }

    /// The cache kept here, as it is now (empty where there is none, or
    /// none that this version reads).
    pub fn read(&self) -> StatCache {
        let Some(file) = &self.file else { return StatCache::off() };
        let old = crate::load::files::read_regular(file, MAX_CACHE_BYTES, false)
            .ok()
            .and_then(Old::parse)
            .unwrap_or_default();
        StatCache { file: Some(file.clone()), start_ns: self.start_ns, old, new: Mutex::default() }
    }

    /// Whether the cache is on and a run kept one here: whether a walk of
    /// the tree takes each file's status, for the cache and the
    /// fingerprint. (Where there is none, as on a fresh checkout, every
    /// file is read, and its status taken as it is opened: 29,000 more
    /// calls at 10,000 services would buy nothing. The fingerprint is then
    /// recorded by the next run that finds the tree up to date.)
    pub fn exists(&self) -> bool {
        self.file.as_deref().is_some_and(Path::is_file)
    }

    /// A fingerprint for this place's tree, to be fed the run's settings
    /// and files; `None` with the cache off.
    pub fn fingerprint(&self) -> Option<Fingerprint> {
        self.file.as_ref()?;
        let mut parts = crate::base::digest::Parts::default();
        parts.push(VERIFIED_LINE.as_bytes());
        parts.push(env!("CARGO_PKG_VERSION").as_bytes());
        Some(Fingerprint { parts, start_ns: self.start_ns, settled: true })
    }

    fn verified_file(&self) -> Option<PathBuf> {
        self.beside(VERIFIED_SUFFIX)
    }

    /// The file beside the cache file whose name has `suffix` appended.
    fn beside(&self, suffix: &str) -> Option<PathBuf> {
        let mut name = self.file.as_ref()?.clone().into_os_string();
        name.push(suffix);
        Some(PathBuf::from(name))
    }

    /// The listings of the tree's directories kept beside the cache
    /// (`emit::listing`); none with the cache off.
    pub fn listings(&self) -> super::listing::Listings {
        match self.beside(LISTINGS_SUFFIX) {
            Some(file) => super::listing::Listings::read(file, self.start_ns),
            None => super::listing::Listings::off(),
        }
    }

    /// The fingerprints of the state a run last found the tree up to date
    /// in ([`Place::record_verified`]), if any: of the input files (with
    /// the run's settings), and of the tree.
    pub fn verified(&self) -> Option<(Digest, Digest)> {
        let bytes = crate::load::files::read_regular(&self.verified_file()?, 1024, false).ok()?;
        let text = std::str::from_utf8(&bytes).ok()?;
        let rest = text.strip_prefix(VERIFIED_LINE)?.strip_prefix('\n')?.strip_suffix('\n')?;
        let (inputs, tree) = rest.split_once('\n')?;
        Some((Digest::parse(inputs)?, Digest::parse(tree)?))
    }

    /// Records that the tree is up to date in the state the fingerprints
    /// of its `inputs` and of the `tree` describe, if every status they
    /// hold has settled ([`Fingerprint::finish`]) and they are not the ones
    /// recorded already. Fingerprints that cannot be written are no
    /// error: the next run reads the cache and the manifest.
    pub fn record_verified(&self, inputs: &Verified, tree: &Verified) {
        let Some(file) = self.verified_file().filter(|_| inputs.settled && tree.settled) else { return };
        if self.verified() != Some((inputs.digest, tree.digest)) {
            let text = format!("{VERIFIED_LINE}\n{}\n{}\n", inputs.digest, tree.digest);
            let _ = write_replacing(&file, text.as_bytes());
        }
    }
}

/// What a run read to find a tree up to date, by the status of each file
/// and not its bytes (see the module's comment): fed the run's settings,
/// then each input file and each entry of the tree, in the order found.
pub struct Fingerprint {
    parts: crate::base::digest::Parts,
    start_ns: i64,
    /// Whether every status fed so far had settled.
    settled: bool,
}

/// A finished [`Fingerprint`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    pub digest: Digest,
    /// Whether every status it holds had settled when the run began: only
    /// then may it be recorded.
    pub settled: bool,
}

/// An entry of a list fed to a fingerprint ([`Fingerprint::entries`]): its
/// path, what it is (a letter), and a regular file's status (`None` for
/// anything else; `Some(None)` for a file whose status was not taken,
/// which no later run's fingerprint may take for it).
pub type FingerprintEntry<'a> = (&'a [u8], u8, Option<Option<Stat>>);

/// Entries hashed together, in [`Fingerprint::entries`].
const FINGERPRINT_PIECE: usize = 2048;

impl Fingerprint {
    /// Adds a text (a setting, a path, a marker between lists).
    pub fn text(&mut self, text: &[u8]) {
        self.parts.push(text);
    }

    /// Adds a list of entries (the input files, or the tree's entries), in
    /// their order. They are hashed in pieces on every core, each piece's
    /// digest added in order: some 39,000 entries at 10,000 services, which
    /// on one core took 1% of the samples of a re-render after one change.
    pub fn entries<T: Sync>(&mut self, items: &[T], entry: impl Fn(&T) -> FingerprintEntry<'_> + Sync) {
        use rayon::prelude::*;
        let start_ns = self.start_ns;
        let pieces: Vec<(Digest, bool)> = items
            .par_chunks(FINGERPRINT_PIECE)
            .map(|piece| {
                let mut bytes = Vec::with_capacity(piece.len() * 96);
                let mut settled = true;
                for item in piece {
                    settled &= push_entry(&mut bytes, entry(item), start_ns);
                }
                (crate::base::digest::digest(&bytes), settled)
            })
            .collect();
        self.parts.push(&(items.len() as u64).to_le_bytes());
        for (digest, settled) in pieces {
            self.parts.push(digest.as_bytes());
            self.settled &= settled;
        }
    }

    pub fn finish(self) -> Verified {
        Verified { digest: self.parts.finish(), settled: self.settled }
    }
}

/// Writes `entry` into `bytes`, its path length-prefixed; whether its
/// status, if it has one, had settled when the run began (`start_ns`).
fn push_entry(bytes: &mut Vec<u8>, (path, kind, stat): FingerprintEntry<'_>, start_ns: i64) -> bool {
    bytes.extend_from_slice(&(path.len() as u64).to_le_bytes());
    bytes.extend_from_slice(path);
    bytes.push(kind);
    match stat {
        None => {
            bytes.push(b'-');
            true
        }
        Some(None) => {
            bytes.push(b'?');
            false
        }
        Some(Some(s)) => {
            bytes.push(b'=');
            for n in [s.dev, s.ino, s.size, s.mtime_ns as u64, s.ctime_ns as u64] {
                bytes.extend_from_slice(&n.to_le_bytes());
            }
            s.has_settled(start_ns)
        }
    }
}

/// How entries to write are ordered: by path, as a path sorts
/// ([`PathOrder`]: by their bytes, as isvc's own paths are, relative or
/// absolute), then kind.
fn cmp_to_write(order: PathOrder, a: &ToWrite<'_>, b: &ToWrite<'_>) -> std::cmp::Ordering {
    order.cmp(Path::new(a.1), Path::new(b.1)).then(a.0.letter().cmp(&b.0.letter()))
}

/// The order of the paths of `entries`.
fn write_order<'a, 'l: 'a>(mut entries: impl Iterator<Item = &'a ToWrite<'l>>) -> PathOrder {
    PathOrder::new(entries.all(|e| orders_by_bytes(e.1.as_bytes())))
}

/// Sorts `entries` in `order`, on every core (a tree of 10,000 services
/// has 39,000), keeping the order of equal entries.
fn sort_to_write(entries: &mut [ToWrite<'_>], order: PathOrder) {
    use rayon::prelude::*;
    entries.par_sort_by(|a, b| cmp_to_write(order, a, b));
}

/// What an entry to write records: an entry of the file read, kept as it
/// was, or what this run learned.
enum Record<'a> {
    Kept(&'a [u8]),
    Learned(&'a Entry),
}

/// An entry to write: its kind, its path and what it records.
type ToWrite<'a> = (Kind, &'a str, Record<'a>);

/// `first`, then `entries`, written on every core in pieces (a tree of
/// 10,000 services has 39,000) and joined in order.
fn entries_bytes(first: &[u8], entries: &[ToWrite<'_>]) -> Vec<u8> {
    use rayon::prelude::*;
    const PIECE: usize = 1024;
    let pieces: Vec<Vec<u8>> = entries
        .par_chunks(PIECE)
        .map(|chunk| {
            let mut bytes = Vec::with_capacity(chunk.len() * (HEAD + 64));
            for (kind, path, record) in chunk {
                match record {
                    Record::Kept(entry) => bytes.extend_from_slice(entry),
                    Record::Learned(e) => push_cache_entry(&mut bytes, *kind, path, &e.stat, &e.digest),
                }
            }
            bytes
        })
        .collect();
    let mut bytes = Vec::with_capacity(first.len() + pieces.iter().map(Vec::len).sum::<usize>());
    bytes.extend_from_slice(first);
    pieces.iter().for_each(|p| bytes.extend_from_slice(p));
    bytes
}

/// One entry of the cache file: [`HEAD`]'s fields, the path and [`END`]
/// (the path no longer than 65,535 bytes: [`StatCache::learn`] keeps no
/// longer one).
fn push_cache_entry(bytes: &mut Vec<u8>, kind: Kind, path: &str, stat: &Stat, digest: &Digest) {
    bytes.push(kind.letter() as u8);
    bytes.extend_from_slice(digest.as_bytes());
    for n in [stat.dev, stat.ino, stat.size, stat.mtime_ns as u64, stat.ctime_ns as u64] {
        bytes.extend_from_slice(&n.to_le_bytes());
    }
    bytes.extend_from_slice(&(path.len() as u16).to_le_bytes());
    bytes.extend_from_slice(path.as_bytes());
    bytes.push(END);
}

/// Appends whole entries to an existing cache `file` in one write: writes
/// in append mode do not interleave with another run's, and a run killed
/// during the write leaves a damaged last entry, for which the next run
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
        let digest = name.to_str().and_then(|n| n.strip_prefix(PREFIX));
        let ours = digest.is_some_and(|d| {
            let d = d.strip_suffix(VERIFIED_SUFFIX).or_else(|| d.strip_suffix(LISTINGS_SUFFIX)).unwrap_or(d);
            crate::base::digest::is_digest(d)
        });
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
pub(super) fn write_replacing(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::Builder::new().prefix(".tmp-").tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.persist(file).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn stat(meta: &Metadata) -> Stat {
        Stat::of(meta).unwrap()
    }

    fn d(text: &str) -> Digest {
        Digest::parse(text).unwrap()
    }

    /// A settled cache in `cache_file` that records `dir/a.yaml` (the
    /// file, written) as an input, and the file's path and status.
    fn record_one(dir: &Path, cache_file: &Path) -> (PathBuf, Metadata) {
        let f = dir.join("a.yaml");
        std::fs::write(&f, "a").unwrap();
        let meta = std::fs::symlink_metadata(&f).unwrap();
        let c = StatCache::settled(cache_file.to_path_buf());
        c.record(Kind::Input, &f, stat(&meta), d("0123456789abcdef0123456789abcdef"));
        c.save();
        (f, meta)
    }

    #[test]
    fn a_status_from_fstatat_is_the_one_from_the_standard_library() {
        // The walk of a tree takes each file's status with fstatat(2), the
        // file read with the standard library's: an entry recorded from
        // the one must be found by the other.
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.yaml");
        std::fs::write(&f, "a: 1\n").unwrap();
        let raw = rustix::fs::statat(rustix::fs::CWD, &f, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).unwrap();
        assert_eq!(Stat::of_raw(&raw), Some(stat(&std::fs::symlink_metadata(&f).unwrap())));
        assert_eq!(Stat::of_raw(&rustix::fs::stat(dir.path()).unwrap()), None, "a directory has no entry");
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
        c.record(Kind::Output, &f, stat(&meta), d("0123456789abcdef0123456789abcdef"));
        c.save();

        let c = StatCache::settled(cache_file.clone());
        let meta = std::fs::symlink_metadata(&f).unwrap();
        assert_eq!(c.lookup(Kind::Output, &f, stat(&meta)), Some(d("0123456789abcdef0123456789abcdef")));
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

    /// A place for a cache in `dir`, for a run that began `after` seconds
    /// after now.
    fn place_after(dir: &Path, after: i64) -> Place {
        Place { file: Some(dir.join("tree-x")), start_ns: now_ns() + after * 1_000_000_000 }
    }

    #[test]
    fn a_fingerprint_is_recorded_only_where_every_status_has_settled() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.yaml");
        std::fs::write(&f, "a").unwrap();
        let now = Stat::of(&std::fs::metadata(&f).unwrap());
        let fingerprint = |place: &Place, stat: Option<Option<Stat>>| {
            let mut fp = place.fingerprint().unwrap();
            fp.text(b"settings");
            fp.entries(&[stat], |&stat| (b"a.yaml", b'f', stat));
            fp.finish()
        };
        // Just written: the same fingerprint, but not to be recorded.
        let fresh = place_after(dir.path(), 0);
        let v = fingerprint(&fresh, Some(now));
        assert!(!v.settled);
        fresh.record_verified(&v, &v);
        assert_eq!(fresh.verified(), None);
        // A status not taken is never settled; a link or other entry has
        // none to settle.
        let later = place_after(dir.path(), 10);
        assert!(!fingerprint(&later, Some(None)).settled);
        assert!(fingerprint(&later, None).settled);
        let v = fingerprint(&later, Some(now));
        assert!(v.settled);
        assert_eq!(v.digest, fingerprint(&fresh, Some(now)).digest, "the same files, the same fingerprint");
        // Both fingerprints must have settled.
        let link = fingerprint(&later, None);
        later.record_verified(&v, &fingerprint(&fresh, Some(now)));
        assert_eq!(later.verified(), None);
        later.record_verified(&v, &link);
        let both = Some((v.digest, link.digest));
        assert_eq!(later.verified(), both);
        assert_eq!(place_after(dir.path(), 20).verified(), both, "read by a later run");
        // Any other status, path or kind is another fingerprint.
        let mut other = now.unwrap();
        other.ctime_ns += 1;
        assert_ne!(fingerprint(&later, Some(Some(other))).digest, v.digest);
        assert_ne!(fingerprint(&later, None).digest, v.digest);
        let mut fp = later.fingerprint().unwrap();
        fp.text(b"settings");
        fp.entries(&[now], |&stat| (b"b.yaml", b'f', Some(stat)));
        assert_ne!(fp.finish().digest, v.digest);
        // No fingerprint with the cache off.
        assert!(Place { file: None, start_ns: 0 }.fingerprint().is_none());
    }

    #[test]
    fn a_damaged_fingerprint_file_records_none() {
        let dir = tempfile::tempdir().unwrap();
        let place = place_after(dir.path(), 10);
        let file = place.verified_file().unwrap();
        let d = "0123456789abcdef0123456789abcdef";
        for text in [
            String::new(),
            "isvc verified tree 2\n".to_string(),
            format!("isvc verified tree 2\n{d}\n"),
            format!("isvc verified tree 2\n{d}\nabc\n"),
            format!("isvc verified tree 2\n{d}\n{d}"),
            format!("isvc verified tree 1\n{d}\n{d}\n"),
            format!("isvc verified tree 2\n{d}\n{d}\n{d}\n"),
        ] {
            std::fs::write(&file, &text).unwrap();
            assert_eq!(place.verified(), None, "{text:?}");
        }
        std::fs::write(&file, format!("isvc verified tree 2\n{d}\n{}\n", "f".repeat(32))).unwrap();
        assert_eq!(place.verified(), Some((self::d(d), self::d(&"f".repeat(32)))));
    }

    #[test]
    fn times_beyond_64_bits_of_nanoseconds_are_held_as_the_nearest() {
        assert_eq!(saturating_i64(i128::MAX), i64::MAX);
        assert_eq!(saturating_i64(i128::MIN), i64::MIN);
        assert_eq!(saturating_i64(u128::MAX), i64::MAX);
        assert_eq!(saturating_i64(-5i128), -5);
        #[cfg(unix)]
        assert_eq!((nanos(i64::MAX / 2, 999_999_999), nanos(-3, 5)), (i64::MAX, -2_999_999_995));
    }

    #[test]
    fn a_file_relinked_is_recorded_under_its_new_status_only_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.yaml");
        std::fs::write(&f, "a: 1\n").unwrap();
        let before = stat(&std::fs::symlink_metadata(&f).unwrap());
        // A link made and removed, as a swap of the tree does: the change
        // time moves on, nothing else.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::hard_link(&f, dir.path().join("b.yaml")).unwrap();
        std::fs::remove_file(dir.path().join("b.yaml")).unwrap();
        let now = stat(&std::fs::symlink_metadata(&f).unwrap());
        assert_ne!(before, now, "the change time moved on");
        let digest = d("0123456789abcdef0123456789abcdef");
        let cache_file = dir.path().join("cache/tree-x");
        let c = StatCache::settled(cache_file.clone());
        c.record_relinked(Kind::Output, [(f.as_path(), before, now, digest)]);
        c.save();
        let c = StatCache::settled(cache_file.clone());
        assert_eq!(c.lookup(Kind::Output, &f, now), Some(digest));

        // Written since its digest was taken: another modification time.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&f, "a: 2\n").unwrap();
        let written = stat(&std::fs::symlink_metadata(&f).unwrap());
        let c = StatCache::settled(dir.path().join("cache/tree-y"));
        c.record_relinked(Kind::Output, [(f.as_path(), before, written, digest)]);
        c.save();
        assert_eq!(StatCache::settled(dir.path().join("cache/tree-y")).lookup(Kind::Output, &f, written), None);

        // A digest taken of a file changed just before the run: not recorded.
        let c = StatCache::at(dir.path().join("cache/tree-z"));
        c.record_relinked(Kind::Output, [(f.as_path(), before, now, digest)]);
        c.save();
        assert_eq!(StatCache::settled(dir.path().join("cache/tree-z")).lookup(Kind::Output, &f, now), None);
    }

    #[test]
    fn a_file_changed_just_before_the_run_is_not_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.yaml");
        std::fs::write(&f, "a: 1\n").unwrap();
        let c = StatCache::at(dir.path().join("tree-x"));
        let meta = std::fs::symlink_metadata(&f).unwrap();
        c.record(Kind::Output, &f, stat(&meta), d("0123456789abcdef0123456789abcdef"));
        c.save();
        let c = StatCache::settled(dir.path().join("tree-x"));
        assert_eq!(c.lookup(Kind::Output, &f, stat(&meta)), None);
    }

    /// An entry as the cache file holds it.
    fn entry(kind: Kind, digest: &str, path: &str) -> Vec<u8> {
        let stat = Stat { dev: 1, ino: 2, size: 3, mtime_ns: 4, ctime_ns: 5 };
        let mut bytes = Vec::new();
        push_cache_entry(&mut bytes, kind, path, &stat, &d(digest));
        bytes
    }

    /// The entries of the cache file `file`, in its order: kind, path and
    /// digest.
    fn entries_in(file: &Path) -> Vec<(Kind, String, Digest)> {
        let old = Old::parse(std::fs::read(file).unwrap()).expect("a cache file");
        (0..old.entries() as u32)
            .map(|i| {
                let path = String::from_utf8(old.path(i).to_vec()).unwrap();
                (old.slots[i as usize].kind, path, old.digest(i).unwrap())
            })
            .collect()
    }

    /// A cache file's bytes: its first line, then `entries`.
    fn file_of(entries: &[&[u8]]) -> Vec<u8> {
        let mut bytes = format!("{FIRST_LINE}\n").into_bytes();
        entries.iter().for_each(|e| bytes.extend_from_slice(e));
        bytes
    }

    #[test]
    fn a_damaged_cache_is_ignored_and_an_unchanged_one_not_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tree-x");
        let good = entry(Kind::Output, &"0".repeat(32), "/a");
        // Each field damaged in turn: a kind isvc does not write, a digest
        // in upper case, a path that is not UTF-8, a length past the end,
        // a length short of the end, and no end.
        let mut damaged = Vec::new();
        for (at, byte) in [(0, b'x'), (1, b'A'), (HEAD, 0xff), (HEAD - 2, 3), (HEAD - 2, 1), (HEAD + 2, b' ')] {
            let mut e = good.clone();
            e[at] = byte;
            damaged.push(e);
        }
        let version_1 = format!("isvc stat cache 1\no {} 1 2 3 4 5 \"/a\"\n", "0".repeat(32)).into_bytes();
        let mut cases = vec![Vec::new(), version_1, b"\0\x01".to_vec(), FIRST_LINE.as_bytes().to_vec()];
        for e in &damaged {
            // Alone, and after good entries.
            cases.push(file_of(&[e]));
            cases.push(file_of(&[&good, &good, e]));
        }
        for bytes in cases {
            std::fs::write(&file, &bytes).unwrap();
            assert!(StatCache::at(file.clone()).old.slots.is_empty(), "{:?}", &bytes[..bytes.len().min(120)]);
        }
        std::fs::write(&file, file_of(&[&good[..]; 3])).unwrap();
        assert_eq!(StatCache::at(file.clone()).old.slots.len(), 3, "good entries");
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
        let stale_fingerprint = old(&format!("{PREFIX}{}{VERIFIED_SUFFIX}", "a".repeat(32)));
        let stale_listings = old(&format!("{PREFIX}{}{LISTINGS_SUFFIX}", "a".repeat(32)));
        let foreign = old("notes.txt");
        let foreign_suffix = old(&format!("{PREFIX}{}.old", "a".repeat(32)));
        // A name isvc does not give a cache (its digest in upper case).
        let upper = old(&format!("{PREFIX}{}", "A".repeat(32)));
        let recent = dir.path().join(format!("{PREFIX}{}", "b".repeat(32)));
        std::fs::write(&recent, "x").unwrap();
        record_one(dir.path(), &dir.path().join(format!("{PREFIX}{}", "c".repeat(32))));
        assert!(!stale.exists() && !stale_fingerprint.exists() && !stale_listings.exists());
        assert!(foreign.exists() && foreign_suffix.exists() && upper.exists() && recent.exists());
    }

    #[test]
    fn a_few_new_entries_are_appended_and_a_stale_cache_written_anew() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tree-x");
        let files: Vec<PathBuf> = (0..3).map(|i| dir.path().join(format!("{i}.yaml"))).collect();
        let digest = |i: usize| d(&format!("{i:032x}"));
        let record = |c: &StatCache, i: usize| {
            let meta = std::fs::symlink_metadata(&files[i]).unwrap();
            c.record(Kind::Input, &files[i], stat(&meta), digest(i));
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
        let first = std::fs::read(&file).unwrap();

        // One new entry: one entry appended, the file's first bytes kept.
        let c = StatCache::settled(file.clone());
        assert_eq!(found(&c, 0), Some(digest(0)));
        record(&c, 1);
        c.save();
        let bytes = std::fs::read(&file).unwrap();
        assert!(bytes.starts_with(&first) && entries_in(&file).len() == 2, "{bytes:?}");

        // The same file recorded again: the later entry wins.
        let c = StatCache::settled(file.clone());
        assert_eq!(found(&c, 1), Some(digest(1)));
        let meta = std::fs::symlink_metadata(&files[1]).unwrap();
        c.record(Kind::Input, &files[1], stat(&meta), digest(7));
        c.save();
        let c = StatCache::settled(file.clone());
        assert_eq!(found(&c, 1), Some(digest(7)));
        assert_eq!(c.old.entries(), 3);

        // A file recorded twice by one run: one entry, the last recorded.
        let meta = std::fs::symlink_metadata(&files[2]).unwrap();
        c.record(Kind::Input, &files[2], stat(&meta), digest(8));
        c.record_all(Kind::Input, [(files[2].as_path(), stat(&meta), digest(9))]);
        c.save();
        let entries = entries_in(&file);
        let of_2: Vec<_> = entries.iter().filter(|(_, p, _)| p.ends_with("2.yaml")).collect();
        assert!(of_2.len() == 1 && of_2[0].2 == digest(9), "{entries:?}");
        let c = StatCache::settled(file.clone());
        assert_eq!(found(&c, 2), Some(digest(9)));

        // A file with many stale entries (here past the slack) is written
        // anew with the entries this run used and learned.
        let mut bytes = std::fs::read(&file).unwrap();
        let stale = dir.path().join("gone.yaml");
        for i in 0..=APPEND_SLACK {
            let stat = Stat { dev: 1, ino: i as u64, size: 1, mtime_ns: 1, ctime_ns: 1 };
            push_cache_entry(&mut bytes, Kind::Input, stale.to_str().unwrap(), &stat, &digest(i));
        }
        std::fs::write(&file, bytes).unwrap();
        let c = StatCache::settled(file.clone());
        assert_eq!(found(&c, 0), Some(digest(0)));
        record(&c, 2);
        c.save();
        let c = StatCache::settled(file.clone());
        assert_eq!(c.old.entries(), 2, "{:?}", entries_in(&file));
        assert_eq!((found(&c, 0), found(&c, 1), found(&c, 2)), (Some(digest(0)), None, Some(digest(2))));
    }

    #[test]
    fn paths_of_any_text_and_entries_kept_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tree-x");
        // A quote, a backslash, a newline and a space in a file name.
        let odd = dir.path().join("a \"b\\c\nd.yaml");
        let plain = dir.path().join("e.yaml");
        for f in [&odd, &plain] {
            std::fs::write(f, "a").unwrap();
        }
        let meta = |f: &Path| stat(&std::fs::symlink_metadata(f).unwrap());
        let c = StatCache::settled(file.clone());
        c.record(Kind::Output, &odd, meta(&odd), d(&format!("{:032x}", 1)));
        c.save();
        let c = StatCache::settled(file.clone());
        assert_eq!(c.lookup(Kind::Output, &odd, meta(&odd)), Some(d(&format!("{:032x}", 1))));
        assert_eq!(c.lookup(Kind::Input, &odd, meta(&odd)), None);
        let odd_entry = std::fs::read(&file).unwrap()[FIRST_LINE.len() + 1..].to_vec();
        // Written anew (stale entries past the slack): the entry used is
        // kept as it was, with the one learned.
        let mut bytes = std::fs::read(&file).unwrap();
        let gone = dir.path().join("gone.yaml");
        for i in 0..=APPEND_SLACK {
            let stat = Stat { dev: 1, ino: i as u64, size: 1, mtime_ns: 1, ctime_ns: 1 };
            push_cache_entry(&mut bytes, Kind::Input, gone.to_str().unwrap(), &stat, &d(&format!("{i:032x}")));
        }
        std::fs::write(&file, bytes).unwrap();
        let c = StatCache::settled(file.clone());
        assert!(c.lookup(Kind::Output, &odd, meta(&odd)).is_some());
        c.record(Kind::Input, &plain, meta(&plain), d(&format!("{:032x}", 2)));
        c.save();
        let bytes = std::fs::read(&file).unwrap();
        assert_eq!(entries_in(&file).len(), 2, "{bytes:?}");
        assert!(bytes.windows(odd_entry.len()).any(|w| w == odd_entry), "{bytes:?}");
        let c = StatCache::settled(file);
        assert_eq!(c.lookup(Kind::Output, &odd, meta(&odd)), Some(d(&format!("{:032x}", 1))));
        assert_eq!(c.lookup(Kind::Input, &plain, meta(&plain)), Some(d(&format!("{:032x}", 2))));
    }

    #[test]
    fn a_cache_with_a_torn_last_entry_is_ignored() {
        // A run killed while it appended: the entry is cut anywhere.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tree-x");
        let (f, meta) = record_one(dir.path(), &file);
        let whole = std::fs::read(&file).unwrap();
        let last = entry(Kind::Output, &"1".repeat(32), "/b.yaml");
        for cut in 1..last.len() {
            std::fs::write(&file, [&whole[..], &last[..cut]].concat()).unwrap();
            let c = StatCache::settled(file.clone());
            assert_eq!(c.lookup(Kind::Input, &f, stat(&meta)), None, "cut at {cut}: {:?}", &last[..cut]);
        }
        std::fs::write(&file, [&whole[..], &last[..]].concat()).unwrap();
        assert!(StatCache::settled(file).lookup(Kind::Input, &f, stat(&meta)).is_some(), "whole");
    }

    #[test]
    fn a_path_longer_than_an_entry_holds_is_not_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tree-x");
        let f = dir.path().join("a.yaml");
        std::fs::write(&f, "a").unwrap();
        let meta = stat(&std::fs::symlink_metadata(&f).unwrap());
        let c = StatCache::settled(file.clone());
        let long = PathBuf::from(format!("/{}", "a".repeat(usize::from(u16::MAX))));
        c.record(Kind::Output, &long, meta, d(&"2".repeat(32)));
        c.record(Kind::Output, &f, meta, d(&"3".repeat(32)));
        c.save();
        let entries = entries_in(&file);
        assert_eq!(entries.len(), 1, "{entries:?}");
        assert_eq!(StatCache::settled(file).lookup(Kind::Output, &f, meta), Some(d(&"3".repeat(32))));
    }

    #[test]
    fn off_finds_and_keeps_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.yaml");
        std::fs::write(&f, "a").unwrap();
        let meta = std::fs::symlink_metadata(&f).unwrap();
        let c = StatCache::off();
        c.record(Kind::Input, &f, stat(&meta), d("0123456789abcdef0123456789abcdef"));
        assert_eq!(c.lookup(Kind::Input, &f, stat(&meta)), None);
        c.save();
    }
}
