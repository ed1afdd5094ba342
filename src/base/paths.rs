//! Paths as text: as isvc names files (its headers, the manifest, the
//! kustomizations), and the order of an output tree's relative paths. isvc
//! builds those from checked names, one `/` between names: for those, the
//! order of [`Path`]'s `Ord` (component by component) is the order of their
//! bytes with `/` taken as the least byte, and it is found without
//! splitting them into components (which, over a tree's 29,000 paths,
//! costs a twentieth of a re-render).

use std::borrow::Cow;
use std::cmp::Ordering;
use std::path::{Component, Path, PathBuf};

/// `path`'s components joined with `/` on every system, names that are not
/// UTF-8 taken lossily. A `\` inside a Unix file name stays part of the
/// name (a header escapes it).
pub fn slash(path: &Path) -> String {
    slash_text(path).into_owned()
}

/// [`slash`], borrowed from `path` where its text is that already: a
/// [`plain`] path on Unix, where `/` is the only separator (no components
/// to split and join again).
pub fn slash_text(path: &Path) -> Cow<'_, str> {
    if cfg!(unix)
        && let Some(text) = path.to_str()
        && plain(text.as_bytes())
    {
        return Cow::Borrowed(text);
    }
    Cow::Owned(path.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>().join("/"))
}

/// A relative path with one `/` between names, none of them empty, `.` or
/// `..`, and no `/` at either end.
pub fn plain(p: &[u8]) -> bool {
    p.first() != Some(&b'/')
        && p.last() != Some(&b'/')
        && p.split(|&c| c == b'/').all(|name| !name.is_empty() && name != b"." && name != b"..")
}

/// `path`'s bytes where it is [`plain`] on Unix, whose only separator is
/// `/`: what the shortcuts by bytes take. Any other path, and every path on
/// other systems, is `None`, for the components' way.
pub fn plain_bytes(path: &Path) -> Option<&[u8]> {
    let b = path.as_os_str().as_encoded_bytes();
    (cfg!(unix) && plain(b)).then_some(b)
}

/// An absolute path with one `/` between names and none of them empty, `.`
/// or `..`: `/` and [`plain`] after it, or `/` alone. Its components are
/// its names, so a prefix of it up to a `/` is a prefix of its components.
pub fn plain_absolute(p: &[u8]) -> bool {
    p.strip_prefix(b"/").is_some_and(|rest| rest.is_empty() || plain(rest))
}

/// The order of two [`plain`] paths as `Path`'s `Ord` has it.
pub fn cmp_plain(a: &[u8], b: &[u8]) -> Ordering {
    // The bytes up to the first that differs, skipped eight at a time:
    // paths of one tree share long beginnings.
    let common = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= common && a[i..i + 8] == b[i..i + 8] {
        i += 8;
    }
    while i < common && a[i] == b[i] {
        i += 1;
    }
    let least = |c: u8| if c == b'/' { 0 } else { c };
    match (a.get(i), b.get(i)) {
        (Some(&x), Some(&y)) => least(x).cmp(&least(y)),
        _ => a.len().cmp(&b.len()),
    }
}

/// The order of a set of paths as `Path`'s `Ord` has it: by their bytes
/// ([`cmp_plain`]) when every one of them [`orders_by_bytes`], as the paths
/// a walk, a render and the cache of file status build do; else component
/// by component.
#[derive(Clone, Copy, Debug)]
pub struct PathOrder {
    by_bytes: bool,
}

impl PathOrder {
    /// The order of paths that all [`orders_by_bytes`] (`all`), or not.
    pub fn new(all: bool) -> PathOrder {
        PathOrder { by_bytes: all }
    }

    pub fn cmp(self, a: &Path, b: &Path) -> Ordering {
        if self.by_bytes {
            cmp_plain(a.as_os_str().as_encoded_bytes(), b.as_os_str().as_encoded_bytes())
        } else {
            a.cmp(b)
        }
    }
}

/// Whether the path `p` (its bytes) compares by its bytes in a
/// [`PathOrder`]: a plain path, relative or absolute.
pub fn orders_by_bytes(p: &[u8]) -> bool {
    plain(p) || plain_absolute(p)
}

/// Sorts `items` by the path `key` gives, in the order of [`Path`]'s `Ord`
/// ([`PathOrder`]), on every core, keeping the order of equal items.
pub fn sort_by_path<T: Send + Sync>(items: &mut [T], key: impl Fn(&T) -> &Path + Sync) {
    use rayon::prelude::*;
    let all = items.par_iter().all(|i| orders_by_bytes(key(i).as_os_str().as_encoded_bytes()));
    let order = PathOrder::new(all);
    items.par_sort_by(|a, b| order.cmp(key(a), key(b)));
}

/// A path below an output tree's root, as the maps of a tree's files key
/// them: a [`Path`] that compares as one (`Ord`, `Eq` and `Hash` are
/// `Path`'s, so a map of them is looked up by `&Path`), but by its bytes
/// where both sides are [`plain`], as the paths a walk or a render builds
/// are. A map of 29,000 files built from a sorted list compares each path
/// with the next twice (to find the list sorted, then to drop duplicates):
/// component by component, that was a twelfth of the instructions of
/// `render --check` of an up-to-date tree.
#[derive(Clone)]
pub struct TreePath {
    path: PathBuf,
    /// Whether the path is [`plain`] on Unix ([`plain_bytes`]).
    plain: bool,
}

impl TreePath {
    pub fn new(path: PathBuf) -> TreePath {
        let plain = plain_bytes(&path).is_some();
        TreePath { path, plain }
    }

    pub fn as_path(&self) -> &Path {
        &self.path
    }

    pub fn into_path_buf(self) -> PathBuf {
        self.path
    }

    /// Its bytes, if it is [`plain`] (as [`plain_bytes`] has them).
    pub fn plain_bytes(&self) -> Option<&[u8]> {
        self.plain.then(|| self.bytes())
    }

    fn bytes(&self) -> &[u8] {
        self.path.as_os_str().as_encoded_bytes()
    }
}

impl From<PathBuf> for TreePath {
    fn from(path: PathBuf) -> TreePath {
        TreePath::new(path)
    }
}

impl From<&str> for TreePath {
    fn from(path: &str) -> TreePath {
        TreePath::new(PathBuf::from(path))
    }
}

impl std::ops::Deref for TreePath {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for TreePath {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl std::borrow::Borrow<Path> for TreePath {
    fn borrow(&self) -> &Path {
        &self.path
    }
}

impl std::fmt::Debug for TreePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.path.fmt(f)
    }
}

impl PartialEq for TreePath {
    fn eq(&self, other: &TreePath) -> bool {
        // Two plain paths are the same path exactly when their bytes are
        // the same: neither has an empty name, `.` or `..` to leave out.
        if self.plain && other.plain { self.bytes() == other.bytes() } else { self.path == other.path }
    }
}

impl Eq for TreePath {}

impl PartialOrd for TreePath {
    fn partial_cmp(&self, other: &TreePath) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TreePath {
    fn cmp(&self, other: &TreePath) -> Ordering {
        if self.plain && other.plain { cmp_plain(self.bytes(), other.bytes()) } else { self.path.cmp(&other.path) }
    }
}

impl std::hash::Hash for TreePath {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.path.hash(state)
    }
}

/// `path` relative to `base` (both absolute), using `..` where needed.
pub fn relative_to(path: &Path, base: &Path) -> PathBuf {
    // Below a plain `base` (not `/`), a path of its bytes, a `/` and a
    // plain rest is that rest: the components match up to the `/` (the
    // common case, taken for each of 10,000 input files).
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let (p, b) = (path.as_os_str().as_bytes(), base.as_os_str().as_bytes());
        if b.len() > 1
            && plain_absolute(b)
            && let Some(rest) = p.strip_prefix(b).and_then(|r| r.strip_prefix(b"/"))
            && plain(rest)
        {
            return PathBuf::from(std::ffi::OsStr::from_bytes(rest));
        }
    }
    relative_by_components(path, base)
}

/// [`relative_to`], component by component.
fn relative_by_components(path: &Path, base: &Path) -> PathBuf {
    let p: Vec<Component> = path.components().collect();
    let b: Vec<Component> = base.components().collect();
    let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out = PathBuf::new();
    for _ in common..b.len() {
        out.push("..");
    }
    for c in &p[common..] {
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A plain path of one to five names, long enough to share more than
    /// the eight bytes [`cmp_plain`] skips at a time.
    fn plain_path() -> impl Strategy<Value = String> {
        let name = "[a.-]{1,6}".prop_map(|n| if n == "." || n == ".." { format!("{n}a") } else { n });
        proptest::collection::vec(name, 1..=5).prop_map(|names| names.join("/"))
    }

    proptest! {
        #[test]
        fn plain_paths_compare_as_paths(a in plain_path(), b in plain_path()) {
            prop_assert!(plain(a.as_bytes()) && plain(b.as_bytes()));
            prop_assert_eq!(cmp_plain(a.as_bytes(), b.as_bytes()), Path::new(&a).cmp(Path::new(&b)));
        }

        #[test]
        fn paths_sharing_a_beginning_compare_as_paths(common in plain_path(), a in plain_path(), b in plain_path()) {
            let (a, b) = (format!("{common}/{a}"), format!("{common}/{b}"));
            prop_assert_eq!(cmp_plain(a.as_bytes(), b.as_bytes()), Path::new(&a).cmp(Path::new(&b)));
        }

        /// Absolute plain paths, among themselves and against relative
        /// ones (the cache of file status sorts both by their bytes).
        #[test]
        fn absolute_plain_paths_compare_as_paths(a in plain_path(), b in plain_path(), rooted in 0..3u8) {
            let a = if rooted & 1 == 1 { format!("/{a}") } else { a };
            let b = if rooted >= 1 { format!("/{b}") } else { b };
            prop_assert!(plain(a.as_bytes()) || plain_absolute(a.as_bytes()));
            prop_assert_eq!(cmp_plain(a.as_bytes(), b.as_bytes()), Path::new(&a).cmp(Path::new(&b)));
        }
    }

    #[test]
    fn only_a_plain_path_is_taken_by_its_bytes() {
        for p in ["a", "a/b/c.yaml", "team-a/_namespace/x.yaml"] {
            let expected = cfg!(unix).then_some(p.as_bytes());
            assert_eq!(plain_bytes(Path::new(p)), expected, "{p}");
        }
        for p in ["", "/a", "a/", "a//b", "./a", "a/../b", "a/./b"] {
            assert_eq!(plain_bytes(Path::new(p)), None, "{p}");
        }
    }

    #[test]
    fn a_path_is_named_with_slashes_borrowed_where_its_text_is_that_already() {
        let joined =
            |p: &Path| p.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>();
        for p in ["a/b/c.yaml", "a", "a//b", "./a/b", "/a/b", "a/../b", "a/b/"] {
            let p = Path::new(p);
            assert_eq!(slash_text(p), joined(p).join("/"), "{p:?}");
            assert_eq!(slash(p), joined(p).join("/"), "{p:?}");
        }
        if cfg!(unix) {
            assert!(matches!(slash_text(Path::new("a/b/c.yaml")), Cow::Borrowed("a/b/c.yaml")));
            assert!(matches!(slash_text(Path::new("a//b")), Cow::Owned(_)));
        }
    }

    proptest! {
        #[test]
        fn bytes_compare_with_the_slash_least(a in "[a/-]{0,40}", b in "[a/-]{0,40}") {
            let least = |c: &u8| if *c == b'/' { 0 } else { *c };
            let expected = a.bytes().map(|c| least(&c)).cmp(b.bytes().map(|c| least(&c)));
            prop_assert_eq!(cmp_plain(a.as_bytes(), b.as_bytes()), expected);
        }
    }

    proptest! {
        #[test]
        fn tree_paths_compare_as_paths(a in "[a./-]{0,8}", b in "[a./-]{0,8}") {
            let (ta, tb) = (TreePath::from(a.as_str()), TreePath::from(b.as_str()));
            let (pa, pb) = (Path::new(&a), Path::new(&b));
            prop_assert_eq!(ta.cmp(&tb), pa.cmp(pb));
            prop_assert_eq!(ta == tb, pa == pb);
        }
    }

    #[test]
    fn a_tree_path_is_looked_up_as_the_path_it_is() {
        let mut files = std::collections::BTreeMap::new();
        for p in ["a/b", "a", "a//c", "./a", "a-b"] {
            files.insert(TreePath::from(p), p);
        }
        assert_eq!(files.get(Path::new("a/c")), Some(&"a//c"));
        assert_eq!(files.get(Path::new("./a")), Some(&"./a"));
        assert_eq!(files.get(Path::new("a/b")), Some(&"a/b"));
        let mut by_path = ["a/b", "a", "a//c", "./a", "a-b"];
        by_path.sort_by(|a, b| Path::new(a).cmp(Path::new(b)));
        assert_eq!(files.keys().map(|k| k.to_str().unwrap()).collect::<Vec<_>>(), by_path);
        // The same path written two ways is one key.
        files.insert(TreePath::from("a/./b"), "again");
        assert_eq!(files.len(), 5);
        assert_eq!(files.get(Path::new("a/b")), Some(&"again"));
    }

    #[test]
    fn a_name_sorts_before_its_longer_siblings_and_after_its_files() {
        let mut paths = ["a-c", "a/b", "a", "a.yaml", "a/b/c", "ab"];
        paths.sort_by(|a, b| cmp_plain(a.as_bytes(), b.as_bytes()));
        assert_eq!(paths, ["a", "a/b", "a/b/c", "a-c", "a.yaml", "ab"]);
        for p in ["", "/a", "a/", "a//b", "./a", "a/../b"] {
            assert!(!plain(p.as_bytes()), "{p}");
        }
        for p in ["/", "/a", "/a/b.yaml"] {
            assert!(plain_absolute(p.as_bytes()), "{p}");
        }
        for p in ["", "a", "//a", "/a/", "/a/./b", "/a/../b"] {
            assert!(!plain_absolute(p.as_bytes()), "{p}");
        }
    }

    proptest::proptest! {
        #[test]
        fn sort_by_path_sorts_in_the_order_of_paths(
            a in "/?[a./-]{0,8}",
            b in "/?[a./-]{0,8}",
        ) {
            let mut paths = vec![PathBuf::from(a), PathBuf::from(b), PathBuf::from("a/a"), PathBuf::from("a-")];
            sort_by_path(&mut paths, |p| p);
            proptest::prop_assert!(paths.is_sorted(), "{:?}", paths);
        }
    }

    #[test]
    fn sort_by_path_puts_a_name_before_its_longer_siblings_and_their_files() {
        let mut paths: Vec<PathBuf> = ["a-c", "a/b", "a", "a.yaml", "a/b/c", "ab"].map(PathBuf::from).to_vec();
        sort_by_path(&mut paths, |p| p);
        assert_eq!(paths, ["a", "a/b", "a/b/c", "a-c", "a.yaml", "ab"].map(PathBuf::from));
        // Not plain: sorted by `Ord`, which takes `a//b` for `a/b`.
        let mut paths: Vec<PathBuf> = ["a-c", "a//b", "a"].map(PathBuf::from).to_vec();
        sort_by_path(&mut paths, |p| p);
        assert_eq!(paths, ["a", "a//b", "a-c"].map(PathBuf::from));
    }
    #[test]
    fn relative_paths() {
        assert_eq!(
            relative_to(Path::new("/r/ex/services/a.yaml"), Path::new("/r/ex")),
            PathBuf::from("services/a.yaml")
        );
        assert_eq!(relative_to(Path::new("/r/other/a.yaml"), Path::new("/r/ex")), PathBuf::from("../other/a.yaml"));
        // The shortcut for a plain path below a plain base gives what the
        // components give, and the rest take the components' way.
        let bases = ["/r/ex", "/", "/r", "/r/ex/", "/r//ex", "/r/./ex"];
        let paths = ["/r/ex/services/a.yaml", "/r/ex", "/r/exa/b", "/r/ex//a", "/r/ex/./a", "/r/ex/../a", "/a", "/"];
        for (base, path) in bases.iter().flat_map(|b| paths.iter().map(move |p| (Path::new(b), Path::new(p)))) {
            assert_eq!(relative_to(path, base), relative_by_components(path, base), "{path:?} from {base:?}");
        }
    }
}
