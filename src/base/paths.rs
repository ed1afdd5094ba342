//! Paths as text: as isvc names files (its headers, the manifest, the
//! kustomizations), and the order of an output tree's relative paths. isvc
//! builds those from checked names, one `/` between names: for those, the
//! order of [`Path`]'s `Ord` (component by component) is the order of their
//! bytes with `/` taken as the least byte, and it is found without
//! splitting them into components (which, over a tree's 29,000 paths,
//! costs a twentieth of a re-render).

use std::borrow::Cow;
use std::cmp::Ordering;
use std::path::Path;

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
    let least = |c: &u8| if *c == b'/' { 0 } else { *c };
    a.iter().map(least).cmp(b.iter().map(least))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn plain_paths_compare_as_paths(a in "[a./-]{0,8}", b in "[a./-]{0,8}") {
            prop_assume!(plain(a.as_bytes()) && plain(b.as_bytes()));
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
}
