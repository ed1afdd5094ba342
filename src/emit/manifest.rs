//! The manifest of an output tree: a small text file at the tree's root,
//! written with the tree and committed with it, that records what the tree
//! was rendered from (the isvc version, the settings of the run, the
//! platform file, the templates, every input file) and what it holds (every
//! file isvc wrote there), each by digest.
//!
//! `render --check` and `diff` read it first. When the inputs and settings
//! of this run are the ones it records, and the files isvc owns in the tree
//! are exactly the ones it lists with the bytes it lists (every file is read
//! and hashed, so a hand edit shows, unless the user's cache of file
//! status, `emit::stat`, knows it unchanged since it was last hashed), a
//! render would change nothing, and
//! they answer without compiling. In every other case — no manifest, a
//! manifest of another version or other settings, a changed input, an
//! edited, missing or extra output file, a run that had warnings to print —
//! they compile in full and report what differs, exactly as without it.
//!
//! The manifest is one of isvc's files: it starts with the header line,
//! it is written, compared and pruned like any other, and a render that
//! changes nothing leaves it untouched. Digests are the first 128 bits of
//! SHA-256, in hex. Paths and labels are JSON strings, so no file name can
//! break a line.
//!
//! The format, one record a line after the header line:
//!
//! ```text
//! isvc 0.1.0
//! setting "gitops=argocd"
//! objects 12
//! input 0f3a… "services/chat.yaml"
//! namespace 5d2e… 3 "team-a"
//! output 9b1c… "team-a/chat/deployment.yaml"
//! ```
//!
//! A `namespace` record holds the digest of one namespace's services
//! ([`crate::Compiler::namespace_digests`]) and how many objects the tree
//! holds of it. A render whose settings are the recorded ones, over a tree
//! the manifest describes unedited, compiles only the namespaces whose
//! services changed and keeps the others' files as they are
//! ([`crate::Options::reuse`]): they are what a compile of the same
//! services, platform, templates and version writes.

use std::path::{Path, PathBuf};

use crate::emit::write::{Existing, Tree};
use crate::model::objects::HEADER_PREFIX;

pub use crate::emit::write::MANIFEST;

pub use crate::base::digest::digest;

/// `path`'s components joined with `/`, as the manifest names files.
pub fn slash(path: &Path) -> String {
    path.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>().join("/")
}

/// What a render was run from and what it wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    /// Everything besides the input files that decides the output, one
    /// entry each, in a fixed order (see [`Manifest::to_text`]).
    pub settings: Vec<String>,
    /// Input files: the label the output headers name them by, and the
    /// digest of their bytes, sorted by label.
    pub inputs: Vec<(String, String)>,
    /// How many objects the tree holds (what `diff` counts as unchanged).
    pub objects: usize,
    /// Each namespace's services by digest, and how many objects the tree
    /// holds of the namespace, sorted by namespace.
    pub namespaces: Vec<(String, String, usize)>,
    /// Every file of the tree but the manifest: path and digest, sorted by path.
    pub outputs: Vec<(String, String)>,
}

impl Manifest {
    /// The manifest of `tree` (which must not hold the manifest itself).
    pub fn new(
        settings: Vec<String>,
        mut inputs: Vec<(String, String)>,
        objects: usize,
        mut namespaces: Vec<(String, String, usize)>,
        tree: &Tree,
    ) -> Manifest {
        inputs.sort();
        namespaces.sort();
        let mut outputs: Vec<(String, String)> =
            tree.iter().map(|(path, contents)| (slash(path), contents.digest.clone())).collect();
        outputs.sort();
        Manifest { settings, inputs, objects, namespaces, outputs }
    }

    /// The recorded namespaces: digest and objects, by name.
    pub fn namespace_records(&self) -> std::collections::BTreeMap<&str, (&str, usize)> {
        self.namespaces.iter().map(|(n, d, c)| (n.as_str(), (d.as_str(), *c))).collect()
    }

    /// The file's text: the header line, then one record a line.
    pub fn to_text(&self) -> String {
        let quote = |s: &str| serde_json::to_string(s).unwrap_or_default();
        let mut out = String::with_capacity(64 + (self.inputs.len() + self.outputs.len()) * 96);
        out.push_str(HEADER_PREFIX);
        out.push_str(
            ". Do not edit: digests of what this tree was rendered from and of its files, read by \
             `isvc render --check` and `isvc diff`; commit it with the tree.\n",
        );
        out.push_str(&format!("isvc {}\n", env!("CARGO_PKG_VERSION")));
        for s in &self.settings {
            out.push_str(&format!("setting {}\n", quote(s)));
        }
        out.push_str(&format!("objects {}\n", self.objects));
        for (label, d) in &self.inputs {
            out.push_str(&format!("input {d} {}\n", quote(label)));
        }
        for (namespace, d, objects) in &self.namespaces {
            out.push_str(&format!("namespace {d} {objects} {}\n", quote(namespace)));
        }
        for (path, d) in &self.outputs {
            out.push_str(&format!("output {d} {}\n", quote(path)));
        }
        out
    }

    /// Reads a manifest written by this version of isvc; `None` for any
    /// other text (another version's, a damaged one).
    pub fn parse(text: &str) -> Option<Manifest> {
        let mut lines = text.lines();
        if !lines.next()?.starts_with(HEADER_PREFIX) {
            return None;
        }
        if lines.next()? != format!("isvc {}", env!("CARGO_PKG_VERSION")) {
            return None;
        }
        let unquote = |s: &str| serde_json::from_str::<String>(s).ok();
        let mut m = Manifest::default();
        let mut objects = None;
        for line in lines {
            let (word, rest) = line.split_once(' ')?;
            match word {
                "setting" => m.settings.push(unquote(rest)?),
                "objects" => objects = Some(rest.parse().ok()?),
                "namespace" => {
                    let (d, rest) = rest.split_once(' ')?;
                    let (objects, name) = rest.split_once(' ')?;
                    m.namespaces.push((unquote(name)?, d.to_string(), objects.parse().ok()?));
                }
                "input" | "output" => {
                    let (d, name) = rest.split_once(' ')?;
                    let entry = (unquote(name)?, d.to_string());
                    if word == "input" { &mut m.inputs } else { &mut m.outputs }.push(entry);
                }
                _ => return None,
            }
        }
        m.objects = objects?;
        Some(m)
    }

    /// The manifest in the output directory `out`, if there is one this
    /// version of isvc can read.
    pub fn read(out: &Path) -> Option<Manifest> {
        let bytes = crate::load::files::read_regular(&out.join(MANIFEST), 1 << 30, false).ok()?;
        Manifest::parse(std::str::from_utf8(&bytes).ok()?)
    }

    /// Whether the files isvc owns in the tree `existing` describes are the
    /// ones this manifest lists, with the same bytes: none missing, none
    /// extra, none edited.
    pub fn matches_tree(&self, existing: &Existing) -> bool {
        let manifest = PathBuf::from(MANIFEST);
        // Both sides in one order: the manifest's by path string, the scan's
        // by path; they agree because every listed path is compared below.
        let mut ours: Vec<(String, &str)> = existing
            .ours
            .iter()
            .filter(|(p, _)| **p != manifest)
            .map(|(p, contents)| (slash(p), contents.digest.as_str()))
            .collect();
        if ours.len() != self.outputs.len() {
            return false;
        }
        ours.sort_by(|a, b| a.0.cmp(&b.0));
        ours.iter().zip(&self.outputs).all(|((path, d), (listed, recorded))| path == listed && d == recorded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emit::write::Contents;

    fn sample() -> Manifest {
        let mut tree = Tree::new();
        tree.insert(PathBuf::from("b/x.yaml"), Contents::text(format!("{HEADER_PREFIX}\nb")));
        tree.insert(PathBuf::from("a/we\"ird\nname.yaml"), Contents::text(format!("{HEADER_PREFIX}\na")));
        Manifest::new(
            vec!["gitops=flux".to_string(), "platform none".to_string()],
            vec![("services/z.yaml".to_string(), digest(b"z")), ("services/a b.yaml".to_string(), digest(b"a"))],
            2,
            vec![("team-b".to_string(), digest(b"b"), 1), ("team \"a\"".to_string(), digest(b"a"), 1)],
            &tree,
        )
    }

    #[test]
    fn the_text_reads_back_to_the_same_manifest() {
        let m = sample();
        let text = m.to_text();
        assert!(text.starts_with(HEADER_PREFIX));
        assert_eq!(text.lines().count(), 1 + 1 + 2 + 1 + 2 + 2 + 2, "{text}");
        assert_eq!(Manifest::parse(&text), Some(m.clone()));
        assert_eq!(m.inputs[0].0, "services/a b.yaml", "inputs are sorted");
        assert_eq!(m.outputs[0].0, "a/we\"ird\nname.yaml", "outputs are sorted");
        assert_eq!(m.namespaces[0].0, "team \"a\"", "namespaces are sorted");
        assert_eq!(m.namespace_records().get("team-b"), Some(&(digest(b"b").as_str(), 1)));
        // Another version's manifest, or a damaged one, is not read.
        assert_eq!(Manifest::parse(&text.replacen("\nisvc ", "\nisvc 9", 1)), None);
        assert_eq!(Manifest::parse(&text.replacen("objects 2", "objects two", 1)), None);
        assert_eq!(Manifest::parse(&format!("{text}bogus line\n")), None);
        assert_eq!(Manifest::parse("not ours"), None);
    }

    #[test]
    fn a_tree_matches_only_with_the_same_files_and_bytes() {
        let m = sample();
        let existing = |files: &[(&str, String)]| Existing {
            ours: files.iter().map(|(p, t)| (PathBuf::from(p), Contents::text(t.clone()))).collect(),
            ..Existing::default()
        };
        let a = ("a/we\"ird\nname.yaml", format!("{HEADER_PREFIX}\na"));
        let b = ("b/x.yaml", format!("{HEADER_PREFIX}\nb"));
        let own = (MANIFEST, m.to_text());
        assert!(m.matches_tree(&existing(&[a.clone(), b.clone(), own.clone()])));
        assert!(m.matches_tree(&existing(&[a.clone(), b.clone()])), "the manifest itself is not listed");
        assert!(!m.matches_tree(&existing(std::slice::from_ref(&a))), "a missing file");
        let extra = ("c.yaml", format!("{HEADER_PREFIX}\nc"));
        assert!(!m.matches_tree(&existing(&[a.clone(), b.clone(), extra])), "an extra file");
        let edited = ("b/x.yaml", format!("{HEADER_PREFIX}\nB"));
        assert!(!m.matches_tree(&existing(&[a, edited])), "a hand edit");
    }
}
