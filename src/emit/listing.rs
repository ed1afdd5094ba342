//! The listings of an output tree's directories, kept beside its cache of
//! file status (`emit::stat`), so that a walk of the tree need not read
//! a directory whose entries cannot have changed.
//!
//! Creating, removing or renaming an entry of a directory sets the
//! directory's modification and change times (POSIX: link(2), unlink(2),
//! rename(2), mkdir(2) and rmdir(2) "shall mark for update the last data
//! modification and last file status change timestamps of the parent
//! directory"; open(2) with `O_CREAT` likewise). A directory whose device,
//! inode and both times are the ones recorded with its listing has the
//! entries recorded: the walk takes the status of each file it lists by
//! the file's path (the files' own bytes are the cache's business, by the
//! file's status) and never opens or reads the directory. Git's untracked
//! cache rests on the same rule (`git update-index --untracked-cache`).
//!
//! The limits are the cache of file status's: a listing is recorded only
//! when both times lie `stat::SETTLED_NS` before the run began (a change
//! in the same tick of a coarse clock leaves the times as they were, so a
//! directory changed more recently is read every time until it has
//! settled), and a network file system whose server's clock is behind can
//! defeat that rule. Each line is a hint checked against the directory's
//! status before it is used; a file listed that is gone, or is no longer a
//! regular file, makes the walk read the directory after all, and an entry
//! is only ever a name in its directory (no `/`, `.` or `..`). A file this
//! version does not read is ignored and replaced; a damaged line that
//! lists as a directory what is not one makes the walk fail on it, as a
//! directory swapped for a link while a walk reads it does.
//!
//! The file holds one line per directory: device, inode, modification and
//! change times in nanoseconds, the directory's path below the tree's root
//! (`.` for the root), then each entry as a letter (`f` a regular file,
//! `d` a directory, `l` a symbolic link, `o` anything else) and its name.
//! A directory whose path or an entry's name is not UTF-8 or holds a space
//! or a control character is never recorded: it is read every time.

use std::hash::BuildHasher;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use hashbrown::HashTable;

const FIRST_LINE: &str = "isvc dir listings 1";

/// Largest listings file read; a larger one is ignored.
const MAX_BYTES: u64 = 64 << 20;

/// A directory's identity and the times its entries move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirStat {
    dev: u64,
    ino: u64,
    mtime_ns: i64,
    ctime_ns: i64,
}

impl DirStat {
    /// The status of a directory as fstatat(2) gives it (`None` for
    /// anything else).
    #[cfg(unix)]
    #[allow(clippy::unnecessary_cast)] // The fields' types differ between systems.
    pub fn of_raw(st: &rustix::fs::Stat) -> Option<DirStat> {
        use super::stat::nanos;
        (rustix::fs::FileType::from_raw_mode(st.st_mode as _) == rustix::fs::FileType::Directory).then(|| DirStat {
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            mtime_ns: nanos(st.st_mtime as i64, st.st_mtime_nsec as i64),
            ctime_ns: nanos(st.st_ctime as i64, st.st_ctime_nsec as i64),
        })
    }
}

/// What a listing records of an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Listed {
    File,
    Dir,
    Link,
    Other,
}

impl Listed {
    fn letter(self) -> char {
        match self {
            Listed::File => 'f',
            Listed::Dir => 'd',
            Listed::Link => 'l',
            Listed::Other => 'o',
        }
    }

    fn of_letter(b: u8) -> Option<Listed> {
        Some(match b {
            b'f' => Listed::File,
            b'd' => Listed::Dir,
            b'l' => Listed::Link,
            b'o' => Listed::Other,
            _ => return None,
        })
    }
}

/// A line a run learned: a directory it read whose times had settled.
pub struct Learned(String);

impl Learned {
    /// The line of the directory `rel` of status `stat`, with its
    /// `entries`; `None` where a name cannot be written in one.
    pub fn new<'a>(
        rel: &Path,
        stat: DirStat,
        entries: impl IntoIterator<Item = (Listed, &'a [u8])>,
    ) -> Option<Learned> {
        let path = rel.as_os_str().as_encoded_bytes();
        let path = if path.is_empty() { "." } else { std::str::from_utf8(path).ok().filter(|p| writable(p))? };
        let DirStat { dev, ino, mtime_ns, ctime_ns } = stat;
        let mut line = format!("{dev} {ino} {mtime_ns} {ctime_ns} {path}");
        for (listed, name) in entries {
            let name = std::str::from_utf8(name).ok().filter(|n| is_name(n))?;
            line.push(' ');
            line.push(listed.letter());
            line.push_str(name);
        }
        Some(Learned(line))
    }
}

/// Whether `text` can stand as one field of a line: not empty, no space,
/// no control character.
fn writable(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b > b' ' && b != 0x7f)
}

/// Whether `name` is one entry's name a line can hold: [`writable`], no
/// `/`, not `.` or `..` (a damaged line's entry never names a path
/// outside its directory).
fn is_name(name: &str) -> bool {
    writable(name) && !name.contains('/') && name != "." && name != ".."
}

/// The listings kept for one tree, as read at the start of a run.
#[derive(Debug, Default)]
pub struct Listings {
    /// Where they are kept; `None` when the cache is off.
    file: Option<PathBuf>,
    /// When this run began, in nanoseconds since the epoch.
    start_ns: i64,
    /// The file's text, its first line [`FIRST_LINE`].
    text: String,
    /// Each line's span in `text`, without its newline, and where its path
    /// lies in it.
    lines: Vec<Line>,
    used: Vec<AtomicBool>,
    /// Lines by path (the last line of a path).
    index: HashTable<u32>,
    hasher: foldhash::fast::RandomState,
}

/// A line of the file: its span in the text, without its newline.
#[derive(Debug, Clone, Copy)]
struct Line {
    start: u32,
    end: u32,
    /// Where its path lies in the text: after the line's fourth space.
    path: (u32, u32),
    hash: u64,
}

/// A directory's recorded listing, for [`Listings::find`].
pub struct Listing<'a>(&'a str);

impl<'a> Listing<'a> {
    /// Its entries, in the order they were recorded; `None` for a damaged
    /// one (then the directory is read).
    pub fn entries(&self) -> impl Iterator<Item = Option<(Listed, &'a str)>> + 'a {
        self.0.split(' ').filter(|e| !e.is_empty()).map(|e| {
            let listed = Listed::of_letter(*e.as_bytes().first()?)?;
            let name = &e[1..];
            is_name(name).then_some((listed, name))
        })
    }
}

impl Listings {
    /// No listings: every directory is read.
    pub fn off() -> Listings {
        Listings::default()
    }

    /// The listings kept in `file` (none where there is no such file, or
    /// one this version does not read), for a run that began at
    /// `start_ns`.
    pub fn read(file: PathBuf, start_ns: i64) -> Listings {
        let text = crate::load::files::read_regular(&file, MAX_BYTES, false)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .filter(|text| text.strip_prefix(FIRST_LINE).is_some_and(|rest| rest.starts_with('\n')));
        let mut l = Listings { file: Some(file), start_ns, ..Listings::default() };
        if let Some(text) = text {
            l.index_lines(text);
        }
        l
    }

    /// Indexes the lines of `text`, whose first line is [`FIRST_LINE`].
    fn index_lines(&mut self, text: String) {
        let mut lines = Vec::new();
        let first = FIRST_LINE.len() + 1;
        let mut at = first;
        for line in text[first..].split_inclusive('\n') {
            let start = at;
            at += line.len();
            // A line cut short (a run killed while it wrote) ends the file.
            let Some(line) = line.strip_suffix('\n') else { break };
            let Some(path) = path_span(line) else { break };
            let (Ok(s), Ok(e), Ok(ps), Ok(pe)) = (
                u32::try_from(start),
                u32::try_from(start + line.len()),
                u32::try_from(start + path.0),
                u32::try_from(start + path.1),
            ) else {
                break;
            };
            let hash = self.hasher.hash_one(&line[path.0..path.1]);
            lines.push(Line { start: s, end: e, path: (ps, pe), hash });
        }
        self.text = text;
        let mut index = HashTable::with_capacity(lines.len());
        for (i, line) in lines.iter().enumerate() {
            let path = &self.text[line.path.0 as usize..line.path.1 as usize];
            let text = &self.text;
            match index.entry(
                line.hash,
                |&j: &u32| {
                    let l: &Line = &lines[j as usize];
                    &text[l.path.0 as usize..l.path.1 as usize] == path
                },
                |&j| lines[j as usize].hash,
            ) {
                hashbrown::hash_table::Entry::Occupied(mut e) => *e.get_mut() = i as u32,
                hashbrown::hash_table::Entry::Vacant(e) => {
                    e.insert(i as u32);
                }
            }
        }
        self.used = lines.iter().map(|_| AtomicBool::new(false)).collect();
        self.lines = lines;
        self.index = index;
    }

    /// Whether listings are kept at all (the cache is on).
    pub fn is_on(&self) -> bool {
        self.file.is_some()
    }

    /// Whether a directory of status `stat`, read now, may be recorded:
    /// both its times had settled when the run began.
    pub fn settled(&self, stat: &DirStat) -> bool {
        let settled = |t: i64| super::stat::settled(t, self.start_ns);
        self.is_on() && settled(stat.mtime_ns) && settled(stat.ctime_ns)
    }

    /// The listing recorded of the directory `rel` (`""` for the root) if
    /// its status is `stat`, as recorded.
    pub fn find(&self, rel: &str, stat: DirStat) -> Option<Listing<'_>> {
        let rel = if rel.is_empty() { "." } else { rel };
        let hash = self.hasher.hash_one(rel);
        let &i = self.index.find(hash, |&j| self.path(j) == rel)?;
        let line = &self.lines[i as usize];
        let text = &self.text[line.start as usize..line.end as usize];
        let mut fields = text.splitn(5, ' ');
        let mut number = || fields.next()?.parse::<i64>().ok();
        let recorded = DirStat {
            dev: u64::try_from(number()?).ok()?,
            ino: u64::try_from(number()?).ok()?,
            mtime_ns: number()?,
            ctime_ns: number()?,
        };
        if recorded != stat {
            return None;
        }
        self.used[i as usize].store(true, Ordering::Relaxed);
        let entries = &self.text[line.path.1 as usize..line.end as usize];
        Some(Listing(entries))
    }

    fn path(&self, i: u32) -> &str {
        let l = &self.lines[i as usize];
        &self.text[l.path.0 as usize..l.path.1 as usize]
    }

    /// Keeps what a walk `learned`, where it learned anything: the file is
    /// written anew, through a temporary file (so no line is ever cut
    /// short), with its lines and those learned after them (a later line
    /// of a path replaces an earlier one), or, where its stale lines are
    /// many (`stat::few_stale`, the cache's rule), with the lines used and
    /// those learned alone. A file that cannot be written is no error: the
    /// next run reads the directories.
    pub fn save(&self, learned: Vec<Learned>) {
        let Some(file) = &self.file else { return };
        if learned.is_empty() {
            return;
        }
        let used = self.used.iter().filter(|u| u.load(Ordering::Relaxed)).count();
        let stale = self.lines.len() - used;
        let keep_all = super::stat::few_stale(stale, used + learned.len());
        let mut text = String::with_capacity(FIRST_LINE.len() + 1 + self.text.len() + learned.len() * 80);
        text.push_str(FIRST_LINE);
        text.push('\n');
        if keep_all {
            // Later lines of a path replace earlier ones.
            if let (Some(first), Some(last)) = (self.lines.first(), self.lines.last()) {
                text.push_str(&self.text[first.start as usize..last.end as usize + 1]);
            }
        } else {
            for (i, l) in self.lines.iter().enumerate() {
                if self.used[i].load(Ordering::Relaxed) {
                    text.push_str(&self.text[l.start as usize..l.end as usize]);
                    text.push('\n');
                }
            }
        }
        for Learned(line) in learned {
            text.push_str(&line);
            text.push('\n');
        }
        let _ = super::stat::write_replacing(file, text.as_bytes());
    }
}

/// Where the path lies in a line: after its fourth space, up to the next
/// space or the line's end; `None` for a line of fewer fields.
fn path_span(line: &str) -> Option<(usize, usize)> {
    let mut at = 0;
    for _ in 0..4 {
        at += line[at..].find(' ')? + 1;
    }
    let end = line[at..].find(' ').map_or(line.len(), |e| at + e);
    (end > at).then_some((at, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(ino: u64, t: i64) -> DirStat {
        DirStat { dev: 1, ino, mtime_ns: t, ctime_ns: t }
    }

    fn learned(rel: &str, s: DirStat, entries: &[(Listed, &str)]) -> Learned {
        Learned::new(Path::new(rel), s, entries.iter().map(|(l, n)| (*l, n.as_bytes()))).unwrap()
    }

    fn entries(l: Listing<'_>) -> Vec<(Listed, String)> {
        l.entries().map(|e| e.map(|(l, n)| (l, n.to_string())).unwrap()).collect()
    }

    #[test]
    fn a_listing_is_found_by_its_path_and_status_only() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tree-x.dirs");
        let start = 100 * super::super::stat::SETTLED_NS;
        let l = Listings::read(file.clone(), start);
        assert!(l.settled(&stat(1, 0)) && !l.settled(&stat(1, start - 1)));
        l.save(vec![
            learned("", stat(1, 5), &[(Listed::Dir, "team-00"), (Listed::File, "kustomization.yaml")]),
            learned("team-00", stat(2, 6), &[(Listed::Link, "a"), (Listed::Other, "fifo")]),
        ]);
        let l = Listings::read(file.clone(), start);
        let root = entries(l.find("", stat(1, 5)).unwrap());
        assert_eq!(root, vec![(Listed::Dir, "team-00".into()), (Listed::File, "kustomization.yaml".into())]);
        assert_eq!(entries(l.find("team-00", stat(2, 6)).unwrap()).len(), 2);
        // Another inode, another time, another path: not found.
        assert!(l.find("team-00", stat(3, 6)).is_none());
        assert!(l.find("team-00", stat(2, 7)).is_none());
        assert!(l.find("team-01", stat(2, 6)).is_none());
        // A later line of a path replaces the earlier one.
        l.save(vec![learned("team-00", stat(2, 9), &[])]);
        let l = Listings::read(file, start);
        assert!(l.find("team-00", stat(2, 6)).is_none());
        assert_eq!(entries(l.find("team-00", stat(2, 9)).unwrap()), vec![]);
        assert!(l.find("", stat(1, 5)).is_some());
    }

    #[test]
    fn names_a_line_cannot_hold_are_never_recorded() {
        for name in ["a b", "tab\there", "new\nline", ".", "..", "a/b", "../x"] {
            assert!(Learned::new(Path::new("d"), stat(1, 1), [(Listed::File, name.as_bytes())]).is_none(), "{name:?}");
        }
        assert!(Learned::new(Path::new("a b"), stat(1, 1), []).is_none());
        assert!(Learned::new(Path::new("d"), stat(1, 1), [(Listed::File, &b"\xff"[..])]).is_none());
    }

    #[test]
    fn a_damaged_or_foreign_file_holds_nothing() {
        let dir = tempfile::tempdir().unwrap();
        for (i, text) in [
            "isvc stat cache 1\n1 2 3 4 . fa\n".to_string(),
            format!("{FIRST_LINE}\n1 2 3 . fa\n"),
            format!("{FIRST_LINE}\nx 2 3 4 . fa\n"),
            format!("{FIRST_LINE}\n1 2 3 4 . fa"),
        ]
        .iter()
        .enumerate()
        {
            let file = dir.path().join(format!("f{i}"));
            std::fs::write(&file, text).unwrap();
            let l = Listings::read(file, i64::MAX);
            assert!(l.find("", stat(2, 3)).is_none(), "{text:?}");
        }
        // A bad entry reads as damaged.
        let file = dir.path().join("bad");
        std::fs::write(&file, format!("{FIRST_LINE}\n1 2 3 3 . xa f f.. f../x\n")).unwrap();
        let l = Listings::read(file, i64::MAX);
        let found = l.find("", DirStat { dev: 1, ino: 2, mtime_ns: 3, ctime_ns: 3 }).unwrap();
        assert!(found.entries().all(|e| e.is_none()));
    }
}
