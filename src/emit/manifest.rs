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
//! isvc 0.1.0 manifest 4
//! setting "gitops=argocd"
//! objects 12
//! input 0f3a… 0 ["team-a"] "services/chat.yaml"
//! namespace 5d2e… 3 "team-a"
//! route "team-a" "chat.example.com/v1"
//! quota [null,"team-a","tenant-quota","requests.nvidia.com/gpu","3","9","8"]
//! autoscaled [null,"team-a","apps/v1","Deployment","chat"]
//! output 9b1c… "team-a/chat/deployment.yaml"
//! ```
//!
//! An `input` record holds how many nodes the file's aliases expanded to
//! and names the namespaces of the services the file declares. A
//! `namespace` record holds the digest of one namespace's services
//! ([`crate::Compiler::namespace_digests`]) and how many objects the tree
//! holds of it (in every cluster's tree together); with clusters, a
//! `cluster` record (`cluster 3 "prod-us" "team-a"`) says how many of them
//! one cluster's tree holds, where it holds any. A `route` record, a route
//! its services claim
//! (`spec.gateway.route`, as [`crate::model::route::Route`] prints it). A
//! render whose settings are the recorded ones, over a tree the manifest
//! describes unedited, compiles only the namespaces whose services changed
//! and keeps the others' files as they are ([`crate::Options::reuse`]):
//! they are what a compile of the same services, platform, templates and
//! version writes. It does not even read the input files of the others
//! ([`Selection`]): by the `input` and `route` records, no service of
//! theirs can meet a changed one in a check. A `quota` record is a row of
//! the quota table the render printed (cluster, namespace, quota, resource,
//! used at steady state and at the autoscalers' maximum, hard limit): a
//! ResourceQuota counts the pods of its own namespace alone, so the rows of
//! a namespace kept are the ones recorded, and a render prints them from
//! here. With a GitOps engine, an `autoscaled` record names a workload
//! whose replica count an autoscaler owns, and its cluster (`null` without
//! clusters; [`crate::Compilation::autoscaled`]): the engine's objects list
//! those of every namespace, so a namespace is kept with what it recorded
//! ([`Manifest::recorded_namespaces`]).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::compiler::RecordedNamespace;
use crate::compiler::admission::QuotaUsage;
use crate::emit::write::{Existing, Tree};
use crate::model::objects::{HEADER_PREFIX, ObjectId};

pub use crate::emit::write::MANIFEST;

pub use crate::base::digest::{Digest, digest};
use crate::base::paths::slash;
use crate::base::value::{parse_lines, push_quoted, unquote};

/// What a render was run from and what it wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    /// Everything besides the input files that decides the output, one
    /// entry each, in a fixed order (see [`Manifest::to_text`]).
    pub settings: Vec<String>,
    /// Input files, sorted by label.
    pub inputs: Vec<Input>,
    /// How many objects the tree holds (what `diff` counts as unchanged).
    pub objects: usize,
    /// Each namespace's services by digest, and how many objects the tree
    /// holds of the namespace, sorted by namespace.
    pub namespaces: Vec<(String, Digest, usize)>,
    /// With clusters, how many objects each cluster's tree holds of a
    /// namespace (cluster, namespace, objects; none where it holds none),
    /// sorted ([`Manifest::with_clusters`]).
    pub clusters: Vec<(String, String, usize)>,
    /// The routes the services of each namespace claim: namespace and
    /// route, sorted.
    pub routes: Vec<(String, String)>,
    /// Every file of the tree but the manifest: path and digest, sorted by path.
    pub outputs: Vec<(String, Digest)>,
    /// The rows of the quota table the render printed, sorted by cluster,
    /// namespace and quota ([`Manifest::with_quota`]): a render that keeps
    /// a namespace, or finds the tree up to date, prints its rows from here.
    pub quota: Vec<QuotaUsage>,
    /// With a GitOps engine, the workloads whose replica count an
    /// autoscaler owns, with their cluster (`None` without clusters),
    /// sorted ([`Manifest::with_autoscaled`]).
    pub autoscaled: Vec<(Option<String>, ObjectId)>,
}

/// An input file as a manifest records it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Input {
    /// The label the output headers name it by.
    pub label: String,
    /// The digest of its bytes.
    pub digest: Digest,
    /// How many nodes its aliases expanded to, which count against a run's
    /// budget (`base::yaml::RunBudget`) whether it is read or not.
    pub aliases: usize,
    /// The namespaces of the services it declares, sorted, each once.
    pub namespaces: Vec<String>,
}

impl Manifest {
    /// The manifest of `tree` (which must not hold the manifest itself).
    pub fn new(
        settings: Vec<String>,
        mut inputs: Vec<Input>,
        objects: usize,
        mut namespaces: Vec<(String, Digest, usize)>,
        mut routes: Vec<(String, String)>,
        tree: &Tree,
    ) -> Manifest {
        inputs.sort();
        namespaces.sort();
        routes.sort();
        routes.dedup();
        // On every core: some 29,000 files at 10,000 services, each path
        // and digest copied (in the tree's order, sorted by bytes already
        // where its paths are plain, which the sort then only confirms).
        use rayon::prelude::*;
        let mut outputs: Vec<(String, Digest)> =
            tree.par_iter().map(|(path, contents)| (slash(path), contents.digest)).collect();
        outputs.sort();
        Manifest {
            settings,
            inputs,
            objects,
            namespaces,
            routes,
            outputs,
            clusters: Vec::new(),
            quota: Vec::new(),
            autoscaled: Vec::new(),
        }
    }

    /// The manifest with the quota table's `rows`, sorted by cluster,
    /// namespace and quota, each quota's rows in their order.
    pub fn with_quota(mut self, mut rows: Vec<QuotaUsage>) -> Manifest {
        rows.sort_by(|a, b| (&a.cluster, &a.namespace, &a.quota).cmp(&(&b.cluster, &b.namespace, &b.quota)));
        self.quota = rows;
        self
    }

    /// The manifest with the workloads whose replica count an autoscaler
    /// owns, `autoscaled`, by cluster (each once, sorted).
    pub fn with_autoscaled(mut self, autoscaled: impl IntoIterator<Item = (Option<String>, ObjectId)>) -> Manifest {
        let mut autoscaled: Vec<(Option<String>, ObjectId)> = autoscaled.into_iter().collect();
        autoscaled.sort();
        autoscaled.dedup();
        self.autoscaled = autoscaled;
        self
    }

    /// The manifest with how many objects each cluster's tree holds of each
    /// namespace (cluster, namespace, objects), those of none left out.
    pub fn with_clusters(mut self, counts: impl IntoIterator<Item = (String, String, usize)>) -> Manifest {
        let mut counts: Vec<(String, String, usize)> = counts.into_iter().filter(|(_, _, n)| *n > 0).collect();
        counts.sort();
        self.clusters = counts;
        self
    }

    /// What the render found in each namespace recorded: how many objects
    /// the tree holds of it (`None`: all clusters' trees together, or the
    /// one tree without clusters) and in each cluster's tree, and its
    /// autoscaled workloads by cluster. What a compile that reuses a
    /// namespace is given ([`crate::Options::recorded`]).
    pub fn recorded_namespaces(&self) -> BTreeMap<String, RecordedNamespace> {
        let mut out: BTreeMap<String, RecordedNamespace> = self
            .namespaces
            .iter()
            .map(|(n, _, objects)| {
                (n.clone(), RecordedNamespace { objects: BTreeMap::from([(None, *objects)]), ..Default::default() })
            })
            .collect();
        for (cluster, ns, objects) in &self.clusters {
            if let Some(r) = out.get_mut(ns) {
                r.objects.insert(Some(cluster.clone()), *objects);
            }
        }
        for (cluster, id) in &self.autoscaled {
            if let Some(r) = id.namespace.as_ref().and_then(|n| out.get_mut(n)) {
                r.autoscaled.entry(cluster.clone()).or_default().insert(id.clone());
            }
        }
        out
    }

    /// The recorded rows of the quota table of the namespaces `kept`, in
    /// every cluster.
    pub fn quota_of<'m>(&'m self, kept: &'m BTreeSet<String>) -> impl Iterator<Item = &'m QuotaUsage> + 'm {
        self.quota.iter().filter(|r| kept.contains(&r.namespace))
    }

    /// Whether it records exactly these input files (label and digest),
    /// in any order.
    pub fn same_inputs(&self, current: &[(&str, &str)]) -> bool {
        let mut current = current.to_vec();
        current.sort_unstable();
        current.len() == self.inputs.len()
            && current.iter().zip(&self.inputs).all(|(c, r)| c.0 == r.label && c.1 == r.digest)
    }

    /// The recorded namespaces: digest and objects, by name.
    pub fn namespace_records(&self) -> BTreeMap<&str, (&str, usize)> {
        self.namespaces.iter().map(|(n, d, c)| (n.as_str(), (d.as_str(), *c))).collect()
    }

    /// The file's text: the header line, then one record a line.
    pub fn to_text(&self) -> String {
        use std::fmt::Write;
        let mut out = String::with_capacity(64 + (self.inputs.len() + self.outputs.len()) * 96);
        out.push_str(HEADER_PREFIX);
        out.push_str(
            ". Do not edit: digests of what this tree was rendered from and of its files, read by \
             `isvc render --check` and `isvc diff`; commit it with the tree.\n",
        );
        // (Writing to a String cannot fail.)
        let _ = writeln!(out, "{}", version_line());
        for s in &self.settings {
            out.push_str("setting ");
            push_quoted(&mut out, s);
            out.push('\n');
        }
        let _ = writeln!(out, "objects {}", self.objects);
        push_lines(&mut out, &self.inputs, |out, i| {
            let _ = write!(out, "input {} {} [", i.digest, i.aliases);
            for (n, namespace) in i.namespaces.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                push_quoted(out, namespace);
            }
            out.push_str("] ");
            push_quoted(out, &i.label);
            out.push('\n');
        });
        for (namespace, d, objects) in &self.namespaces {
            let _ = write!(out, "namespace {d} {objects} ");
            push_quoted(&mut out, namespace);
            out.push('\n');
        }
        for (cluster, namespace, objects) in &self.clusters {
            let _ = write!(out, "cluster {objects} ");
            push_quoted(&mut out, cluster);
            out.push(' ');
            push_quoted(&mut out, namespace);
            out.push('\n');
        }
        for (namespace, route) in &self.routes {
            out.push_str("route ");
            push_quoted(&mut out, namespace);
            out.push(' ');
            push_quoted(&mut out, route);
            out.push('\n');
        }
        for r in &self.quota {
            out.push_str("quota ");
            let row = (&r.cluster, &r.namespace, &r.quota, &r.key, &r.steady, &r.peak, &r.hard);
            // (Strings and a null serialise without fail.)
            out.push_str(&serde_json::to_string(&row).unwrap_or_default());
            out.push('\n');
        }
        // A JSON list of the cluster (or null), the namespace, the
        // version, the kind and the name; some 9,000 lines at 10,000
        // services with a GitOps engine.
        push_lines(&mut out, &self.autoscaled, |out, (cluster, id)| {
            out.push_str("autoscaled [");
            let fields =
                [cluster.as_deref(), id.namespace.as_deref(), Some(&id.api_version), Some(&id.kind), Some(&id.name)];
            for (n, field) in fields.into_iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                match field {
                    Some(text) => push_quoted(out, text),
                    None => out.push_str("null"),
                }
            }
            out.push_str("]\n");
        });
        push_lines(&mut out, &self.outputs, |out, (path, d)| {
            out.push_str("output ");
            out.push_str(d);
            out.push(' ');
            push_quoted(out, path);
            out.push('\n');
        });
        out
    }

    /// Reads a manifest written by this version of isvc; `None` for any
    /// other text (another version's, a damaged one, or one with a record
    /// a render could not have written: a digest that is not one, a
    /// namespace that is no DNS-1123 label, a file that is no plain path
    /// in the tree).
    pub fn parse(text: &str) -> Option<Manifest> {
        // The records are parsed on every core (a tree of 10,000 services
        // has some 39,000; `base::value::parse_lines`: a text of anything
        // else costs no more than its first lines), then gathered in order.
        let records = parse_lines(body(text)?, |_, line| Record::parse(line_text(line)))?;
        Manifest::of_records(records)
    }

    /// [`Manifest::parse`] but for the input and output files, which are
    /// left unread, and the number of output files it lists: all a run
    /// that found the tree up to date by its fingerprint reports
    /// (`emit::stat::Fingerprint`). Its lines are read on one core: some
    /// 39,000 at 10,000 services, of which all but a few hundred are
    /// passed over by their first word.
    pub fn summary(text: &str) -> Option<(Manifest, usize)> {
        let mut outputs = 0;
        let mut parsed = Vec::new();
        for line in records(text)? {
            if line.starts_with("output ") {
                outputs += 1;
            } else if !line.starts_with("input ") {
                parsed.push(Record::parse(line)?);
            }
        }
        Some((Manifest::of_records(parsed)?, outputs))
    }

    /// The manifest of `records`, in the order of their lines; `None`
    /// without the count of objects.
    fn of_records(records: Vec<Record>) -> Option<Manifest> {
        let mut m = Manifest::default();
        // Most lines name an output file.
        m.outputs.reserve(records.len());
        let mut objects = None;
        for record in records {
            match record {
                Record::Setting(s) => m.settings.push(s),
                Record::Objects(n) => objects = Some(n),
                Record::Namespace(n) => m.namespaces.push(n),
                Record::Input(i) => m.inputs.push(i),
                Record::Route(r) => m.routes.push(r),
                Record::Quota(q) => m.quota.push(*q),
                Record::Autoscaled(id) => m.autoscaled.push(*id),
                Record::Cluster(c) => m.clusters.push(c),
                Record::Output(o) => m.outputs.push(o),
            }
        }
        m.objects = objects?;
        Some(m)
    }

    /// The text of the manifest in the output directory `out`, if there is
    /// one, for [`Manifest::settings_in`] and [`Manifest::parse`].
    pub fn read_text(out: &Path) -> Option<String> {
        let bytes = crate::load::files::read_regular(&out.join(MANIFEST), 1 << 30, false).ok()?;
        String::from_utf8(bytes).ok()
    }

    /// The settings a manifest's text records, read from its first lines
    /// alone (where [`Manifest::to_text`] writes them), without parsing the
    /// rest: what decides, before the whole text is parsed, whether a run
    /// reads the tree. `None` for a text [`Manifest::parse`] rejects by its
    /// first lines; a text it rejects further down, or one with settings
    /// after other records, may give settings here and `None` there.
    pub fn settings_in(text: &str) -> Option<Vec<String>> {
        let settings = records(text)?.map_while(|line| line.strip_prefix("setting "));
        settings.map(|s| unquote(s).map(Cow::into_owned)).collect()
    }

    /// Whether the files isvc owns in the tree `existing` describes are the
    /// ones this manifest lists, with the same bytes: none missing, none
    /// extra, none edited.
    pub fn matches_tree(&self, existing: &Existing) -> bool {
        use rayon::prelude::*;
        // Each of isvc's files found is looked up among those listed (in
        // the order of their text, which is not the order of paths the tree
        // holds them in), by its bytes where they are its text already, on
        // every core: 29,000 searches at 10,000 services, the last step of
        // an up-to-date `render --check` (on one core, 6 ms of a profile's
        // samples; on every core the check took 0.985x the wall time in
        // pairs).
        let places: Option<Vec<usize>> = existing
            .ours
            .par_iter()
            .filter(|(path, _)| path.as_os_str() != MANIFEST)
            .map(|(path, contents)| {
                let text = match path.plain_bytes() {
                    Some(bytes) => Cow::Borrowed(bytes),
                    None => Cow::Owned(crate::base::paths::slash_text(path).into_owned().into_bytes()),
                };
                let i = self.outputs.binary_search_by(|(listed, _)| listed.as_bytes().cmp(&text)).ok()?;
                (self.outputs[i].1 == contents.digest).then_some(i)
            })
            .collect();
        // As many files, each matching a listed file no other matches,
        // are the same files (a path whose text is made, not borrowed,
        // may share its text with another).
        let Some(places) = places.filter(|p| p.len() == self.outputs.len()) else { return false };
        let mut matched = vec![false; self.outputs.len()];
        places.into_iter().all(|i| !std::mem::replace(&mut matched[i], true))
    }
}

/// One line of a manifest, parsed ([`Manifest::parse`]).
enum Record {
    Setting(String),
    Objects(usize),
    Namespace((String, Digest, usize)),
    Input(Input),
    Route((String, String)),
    Quota(Box<QuotaUsage>),
    Autoscaled(Box<(Option<String>, ObjectId)>),
    Cluster((String, String, usize)),
    Output((String, Digest)),
}

impl Record {
    /// The record of `line`; `None` for a line a manifest does not hold.
    fn parse(line: &str) -> Option<Record> {
        let unquote = |s: &str| unquote(s).map(Cow::into_owned);
        let digest = Digest::parse;
        let namespace = |n: &str| crate::base::names::dns1123_label(n).is_ok();
        let (word, rest) = split_space(line)?;
        Some(match word {
            "setting" => Record::Setting(unquote(rest)?),
            "objects" => Record::Objects(rest.parse().ok()?),
            "namespace" => {
                let (d, rest) = split_space(rest)?;
                let (objects, name) = split_space(rest)?;
                let name = unquote(name).filter(|n| namespace(n))?;
                Record::Namespace((name, digest(d)?, objects.parse().ok()?))
            }
            "input" => {
                let (d, rest) = split_space(rest)?;
                let (aliases, rest) = split_space(rest)?;
                let (namespaces, label) = json_pair::<Vec<String>, String>(rest)?;
                if !namespaces.iter().all(|n| namespace(n)) {
                    return None;
                }
                Record::Input(Input { label, digest: digest(d)?, aliases: aliases.parse().ok()?, namespaces })
            }
            "route" => Record::Route(json_pair::<String, String>(rest).filter(|(n, _)| namespace(n))?),
            "quota" => {
                type Row = (Option<String>, String, String, String, String, String, String);
                let (cluster, namespace, quota, key, steady, peak, hard) = serde_json::from_str::<Row>(rest).ok()?;
                let row = QuotaUsage { cluster, namespace, quota, key, steady, peak, hard };
                if !plausible(&row) {
                    return None;
                }
                Record::Quota(Box::new(row))
            }
            "autoscaled" => {
                type Row = (Option<String>, String, String, String, String);
                let (cluster, ns, api_version, kind, name) = serde_json::from_str::<Row>(rest).ok()?;
                let plain = |s: &str, extra: &[u8]| {
                    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || extra.contains(&b))
                };
                let valid = namespace(&ns)
                    && cluster.as_deref().is_none_or(namespace)
                    && crate::base::names::dns1123_subdomain(&name).is_ok()
                    && plain(&kind, b"")
                    && plain(&api_version, b"./-");
                if !valid {
                    return None;
                }
                Record::Autoscaled(Box::new((cluster, ObjectId::new(&api_version, &kind, Some(&ns), &name))))
            }
            "cluster" => {
                // A cluster's name is a DNS-1123 label, as a namespace's.
                let (objects, rest) = split_space(rest)?;
                let (cluster, ns) = json_pair::<String, String>(rest).filter(|(c, n)| namespace(c) && namespace(n))?;
                Record::Cluster((cluster, ns, objects.parse().ok()?))
            }
            "output" => {
                let (d, name) = split_space(rest)?;
                let path = unquote(name).filter(|p| crate::base::paths::plain(p.as_bytes()))?;
                Record::Output((path, digest(d)?))
            }
            _ => return None,
        })
    }
}

/// Which input files a render reads when a manifest describes the tree
/// unedited, with the settings of the run: those of the namespaces a
/// change touches, and no others. A namespace is touched (dirty) when
///
/// - a file that declared services in it changed or went (by the
///   manifest's `input` records), or a file read declares one there: every
///   file of a dirty namespace is read, so each check of a namespace sees
///   all of its services, as in a full render;
/// - a service read claims a route that a service of it claims (by the
///   manifest's `route` records): the routes' check spans namespaces;
/// - the caller names it from the start (the namespaces compiled together
///   in a Kueue cohort, never kept).
///
/// The other recorded namespaces ([`Selection::clean`]) have the files and
/// the services they had when the tree was rendered, so a compile keeps
/// their objects ([`crate::Options::reuse`]) and reads none of their files.
/// Use: [`Selection::batch`] until it is empty, telling
/// [`Selection::declared`] what each batch of files declared.
pub struct Selection<'a> {
    manifest: &'a Manifest,
    /// This run's input files by label: the recorded input of that label
    /// and digest (`None` for a new or changed file), and whether it is
    /// read.
    current: BTreeMap<&'a str, (Option<&'a Input>, bool)>,
    dirty: BTreeSet<String>,
}

impl<'a> Selection<'a> {
    /// The selection over `manifest` of this run's input files, `current`
    /// (label and digest), with the namespaces `always` dirty; `None` when
    /// two files of the run, or two the manifest records, have one label
    /// (two names that differ only in bytes that are not UTF-8, or a path
    /// through a link and `..`): a file is known by its label alone.
    pub fn new(
        manifest: &'a Manifest,
        current: impl IntoIterator<Item = (&'a str, &'a str)>,
        always: impl IntoIterator<Item = String>,
    ) -> Option<Selection<'a>> {
        // Looked up by hash: tens of thousands of labels that share their
        // first dozens of bytes (`services/<namespace>/`) compare slowly.
        let recorded: foldhash::HashMap<&str, usize> =
            manifest.inputs.iter().enumerate().map(|(n, i)| (i.label.as_str(), n)).collect();
        // The recorded inputs of the files unchanged, by their place.
        let mut same = vec![false; manifest.inputs.len()];
        let mut files = 0;
        let current: BTreeMap<&str, (Option<&Input>, bool)> = current
            .into_iter()
            .inspect(|_| files += 1)
            .map(|(label, digest)| {
                let n = recorded.get(label).copied().filter(|&n| manifest.inputs[n].digest == digest);
                if let Some(n) = n {
                    same[n] = true;
                }
                (label, (n.map(|n| &manifest.inputs[n]), false))
            })
            .collect();
        if recorded.len() != manifest.inputs.len() || current.len() != files {
            return None;
        }
        let mut dirty: BTreeSet<String> = always.into_iter().collect();
        for (input, same) in manifest.inputs.iter().zip(same) {
            // Changed or gone: what it declared is touched.
            if !same {
                dirty.extend(input.namespaces.iter().cloned());
            }
        }
        Some(Selection { manifest, current, dirty })
    }

    /// The manifest it selects by.
    pub fn manifest(&self) -> &'a Manifest {
        self.manifest
    }

    /// The recorded input of an unchanged file, read or not.
    pub fn recorded(&self, label: &str) -> Option<&'a Input> {
        self.current.get(label).and_then(|(same, _)| *same)
    }

    /// The unchanged files, by label, with their recorded inputs.
    pub fn unchanged(&self) -> impl Iterator<Item = (&'a str, &'a Input)> + '_ {
        self.current.iter().filter_map(|(label, (same, _))| same.map(|i| (*label, i)))
    }

    /// The labels of the files to read now, each returned once: the new and
    /// changed files, and the unchanged ones that declare a dirty namespace.
    /// Empty once every file to read was returned.
    pub fn batch(&mut self) -> Vec<&'a str> {
        let mut out = Vec::new();
        for (label, (same, read)) in &mut self.current {
            let touched = same.is_none_or(|i| i.namespaces.iter().any(|n| self.dirty.contains(n)));
            if !*read && touched {
                *read = true;
                out.push(*label);
            }
        }
        out
    }

    /// What the files just read declare: the namespaces of their services
    /// and the routes these claim.
    pub fn declared<'s>(
        &mut self,
        namespaces: impl IntoIterator<Item = &'s str>,
        routes: impl IntoIterator<Item = String>,
    ) {
        self.dirty.extend(namespaces.into_iter().map(str::to_string));
        let routes: BTreeSet<String> = routes.into_iter().collect();
        for (namespace, route) in &self.manifest.routes {
            if routes.contains(route) {
                self.dirty.insert(namespace.clone());
            }
        }
    }

    /// The labels of the files read.
    pub fn read(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.current.iter().filter(|(_, (_, read))| *read).map(|(label, _)| *label)
    }

    /// The recorded input of an unchanged file not read: what it declares.
    pub fn unread(&self, label: &str) -> Option<&'a Input> {
        self.current.get(label).filter(|(_, read)| !read).and_then(|(same, _)| *same)
    }

    /// The recorded namespaces that are not dirty, with their digests: kept
    /// as they are.
    pub fn clean(&self) -> BTreeMap<String, Digest> {
        let manifest = self.manifest;
        manifest
            .namespaces
            .iter()
            .filter(|(n, _, _)| !self.dirty.contains(n))
            .map(|(n, d, _)| (n.clone(), *d))
            .collect()
    }

    /// The recorded routes of the clean namespaces.
    pub fn clean_routes(&self) -> impl Iterator<Item = &'a (String, String)> + '_ {
        self.manifest.routes.iter().filter(|(n, _)| !self.dirty.contains(n))
    }
}

/// Whether a recorded row of the quota table is one a render could have
/// written: names that Kubernetes accepts, a resource name and quantities
/// of printable ASCII without spaces. The rows are printed as recorded, so
/// a manifest edited to hold anything else (a control character for the
/// terminal) is none.
fn plausible(r: &QuotaUsage) -> bool {
    use crate::base::names::{dns1123_label, dns1123_subdomain};
    let word = |s: &str| !s.is_empty() && s.len() <= 253 && s.bytes().all(|b| b.is_ascii_graphic());
    r.cluster.as_deref().is_none_or(|c| dns1123_label(c).is_ok())
        && dns1123_label(&r.namespace).is_ok()
        && dns1123_subdomain(&r.quota).is_ok()
        && [&r.key, &r.steady, &r.peak, &r.hard].iter().all(|s| word(s))
}

/// The text after a manifest's two first lines, if they are the header and
/// this version's line.
fn body(text: &str) -> Option<&str> {
    let mut rest = text;
    let mut line = || {
        let (line, after) = rest.split_at(rest.find('\n').map_or(rest.len(), |n| n + 1));
        rest = after;
        line_text(line)
    };
    (line().starts_with(HEADER_PREFIX) && line() == version_line()).then_some(rest)
}

/// A line without its line ending, as [`str::lines`] gives it: a newline,
/// or a carriage return and a newline.
fn line_text(line: &str) -> &str {
    match line.strip_suffix('\n') {
        Some(line) => line.strip_suffix('\r').unwrap_or(line),
        None => line,
    }
}

/// The lines after the header line and the version line of a manifest
/// this version of isvc writes; `None` for any other text.
fn records(text: &str) -> Option<std::str::Lines<'_>> {
    Some(body(text)?.lines())
}

/// The manifest's second line: the isvc version and the format of the
/// manifest's records, so that a manifest written by another version, or by
/// a build of this version with other records, is none (the next render
/// compiles in full and writes it anew). Format 2 added the `quota` records.
fn version_line() -> String {
    format!("isvc {} manifest {MANIFEST_FORMAT}", env!("CARGO_PKG_VERSION"))
}

const MANIFEST_FORMAT: u32 = 4;

/// `text` split at its first space, found byte by byte: the fields split
/// are short (a `str` search for a `char` sets up a `memchr` each time, a
/// tenth of the instructions of reading a manifest of 39,000 lines).
fn split_space(text: &str) -> Option<(&str, &str)> {
    let at = text.bytes().position(|b| b == b' ')?;
    Some((&text[..at], &text[at + 1..]))
}

/// How many of a manifest's records [`push_lines`] writes in one piece.
const LINES_A_PIECE: usize = 4096;

/// Appends a line of each of `items` to `out`, in order, by `line`: in
/// pieces on every core, each piece's text appended in turn (the inputs
/// and files of a tree of 10,000 services are some 39,000 lines, written
/// by a render after the compile, which waits for them).
fn push_lines<T: Sync>(out: &mut String, items: &[T], line: impl Fn(&mut String, &T) + Sync) {
    use rayon::prelude::*;
    if items.len() <= LINES_A_PIECE {
        items.iter().for_each(|item| line(out, item));
        return;
    }
    let pieces: Vec<String> = items
        .par_chunks(LINES_A_PIECE)
        .map(|piece| {
            let mut text = String::with_capacity(piece.len() * 96);
            piece.iter().for_each(|item| line(&mut text, item));
            text
        })
        .collect();
    out.reserve(pieces.iter().map(String::len).sum());
    pieces.iter().for_each(|p| out.push_str(p));
}

/// Two JSON values and nothing else but the space between them.
fn json_pair<A: serde::de::DeserializeOwned, B: serde::de::DeserializeOwned>(text: &str) -> Option<(A, B)> {
    let mut de = serde_json::Deserializer::from_str(text);
    let a = serde::Deserialize::deserialize(&mut de).ok()?;
    let b = serde::Deserialize::deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some((a, b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::paths::TreePath;
    use crate::base::value::PIECE_BYTES;
    use crate::emit::write::Contents;

    fn input(label: &str, digest_of: &[u8], namespaces: &[&str]) -> Input {
        Input {
            label: label.to_string(),
            digest: digest(digest_of),
            aliases: label.len(),
            namespaces: namespaces.iter().map(|n| n.to_string()).collect(),
        }
    }

    fn sample() -> Manifest {
        let mut tree = Tree::new();
        tree.insert(TreePath::from("b/x.yaml"), Contents::text(format!("{HEADER_PREFIX}\nb")));
        tree.insert(TreePath::from("a/we\"ird\nname.yaml"), Contents::text(format!("{HEADER_PREFIX}\na")));
        Manifest::new(
            vec!["gitops=flux".to_string(), "platform none".to_string()],
            vec![input("services/z.yaml", b"z", &["team-b"]), input("services/a b.yaml", b"a", &["team-a", "x"])],
            2,
            vec![("team-b".to_string(), digest(b"b"), 1), ("team-a".to_string(), digest(b"a"), 1)],
            vec![
                ("team-b".to_string(), "chat.example.com/\"v1\"".to_string()),
                ("team-b".to_string(), "chat.example.com/\"v1\"".to_string()),
            ],
            &tree,
        )
        .with_quota(vec![quota_row("team-b", "q", "requests.cpu"), quota_row("team-a", "q.x", "limits.memory")])
        .with_clusters([
            ("west".to_string(), "team-a".to_string(), 1),
            ("east".to_string(), "team-a".to_string(), 0),
            ("east".to_string(), "team-b".to_string(), 1),
        ])
        .with_autoscaled([
            (None, ObjectId::new("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", Some("team-b"), "big.one")),
            (None, ObjectId::new("apps/v1", "Deployment", Some("team-a"), "chat")),
            (None, ObjectId::new("apps/v1", "Deployment", Some("team-a"), "chat")),
            (Some("west".to_string()), ObjectId::new("apps/v1", "Deployment", Some("team-a"), "chat")),
        ])
    }

    fn quota_row(namespace: &str, quota: &str, key: &str) -> QuotaUsage {
        QuotaUsage {
            cluster: None,
            namespace: namespace.to_string(),
            quota: quota.to_string(),
            key: key.to_string(),
            steady: "1".to_string(),
            peak: "3".to_string(),
            hard: "4Gi".to_string(),
        }
    }

    #[test]
    fn a_manifest_of_many_pieces_reads_back_whole() {
        let mut tree = Tree::new();
        for n in 0..3000 {
            tree.insert(
                TreePath::from(format!("team-a/s{n:04}/deployment.yaml").as_str()),
                Contents::digest(digest(&[n as u8])),
            );
        }
        let m = Manifest::new(vec!["platform none".to_string()], Vec::new(), 3000, Vec::new(), Vec::new(), &tree);
        let text = m.to_text();
        assert!(text.len() > 2 * PIECE_BYTES, "{} bytes", text.len());
        assert_eq!(Manifest::parse(&text), Some(m));
        // One line that is no record, anywhere, makes the text no manifest.
        let last = text.lines().last().unwrap();
        assert_eq!(Manifest::parse(&text.replacen(last, "output", 1)), None);
        assert_eq!(Manifest::parse(&format!("{text}\n")), None, "an empty line");
        // A header and then nothing but empty lines: each piece stops at
        // its first.
        let head: String = text.lines().take(2).map(|l| format!("{l}\n")).collect();
        assert_eq!(Manifest::parse(&format!("{head}{}", "\n".repeat(4 * PIECE_BYTES))), None);
        assert_eq!(body(&format!("{head}rest")), Some("rest"));
        assert_eq!(body(&head.replace('\n', "\r\n")), Some(""), "lines may end with CR LF");
        assert_eq!(body("no manifest\n"), None);
    }

    #[test]
    fn a_summary_is_the_manifest_but_its_files_and_counts_the_outputs() {
        let m = sample();
        let text = m.to_text();
        let (summary, outputs) = Manifest::summary(&text).unwrap();
        assert_eq!(outputs, m.outputs.len());
        assert_eq!(summary, Manifest { inputs: Vec::new(), outputs: Vec::new(), ..m });
        // Of another version's text, or a damaged record it reads, none.
        assert_eq!(Manifest::summary(&text.replacen("\nisvc ", "\nisvc 9", 1)), None);
        assert_eq!(Manifest::summary(&text.replacen("\nobjects ", "\nobjects x", 1)), None);
    }

    #[test]
    fn lines_written_in_pieces_keep_their_order() {
        // More records than one piece holds: the pieces, written on every
        // core, are joined in order.
        let items: Vec<usize> = (0..LINES_A_PIECE * 2 + 7).collect();
        let mut text = String::from("head\n");
        push_lines(&mut text, &items, |out, n| out.push_str(&format!("{n}\n")));
        let expected: String =
            std::iter::once("head".to_string()).chain(items.iter().map(usize::to_string)).map(|l| l + "\n").collect();
        assert_eq!(text, expected);
    }

    #[test]
    fn the_text_reads_back_to_the_same_manifest() {
        let m = sample();
        let text = m.to_text();
        assert!(text.starts_with(HEADER_PREFIX));
        assert_eq!(text.lines().count(), 1 + 1 + 2 + 1 + 2 + 2 + 2 + 1 + 2 + 3 + 2, "{text}");
        assert_eq!(Manifest::parse(&text), Some(m.clone()));
        assert!(!m.settings.is_empty());
        assert_eq!(Manifest::settings_in(&text), Some(m.settings.clone()), "the settings, from the first lines");
        assert_eq!(Manifest::settings_in(&text.replacen("\nisvc ", "\nisvc 9", 1)), None, "another version's");
        assert_eq!(m.inputs[0].label, "services/a b.yaml", "inputs are sorted");
        assert_eq!(m.inputs[0].namespaces, ["team-a", "x"]);
        assert_eq!(m.routes.len(), 1, "a route claimed twice in a namespace is recorded once");
        assert_eq!(m.outputs[0].0, "a/we\"ird\nname.yaml", "outputs are sorted");
        assert_eq!(m.namespaces[0].0, "team-a", "namespaces are sorted");
        assert_eq!(m.quota[0].namespace, "team-a", "quota rows are sorted by namespace");
        assert_eq!(m.autoscaled[0].1.name, "chat", "autoscaled workloads are sorted, each once");
        assert_eq!(m.autoscaled[2].0.as_deref(), Some("west"), "those of no cluster first");
        // Each as the JSON list of its fields.
        for (cluster, id) in &m.autoscaled {
            let record = (cluster, &id.namespace, &id.api_version, &id.kind, &id.name);
            let line = format!("autoscaled {}\n", serde_json::to_string(&record).unwrap());
            assert!(text.contains(&line), "{line}");
        }
        assert_eq!(m.clusters.len(), 2, "a cluster that holds none of a namespace is not recorded");
        assert_eq!(m.clusters[0].0, "east", "cluster records are sorted");
        let recorded = m.recorded_namespaces();
        assert_eq!(recorded["team-a"].objects_in(&None), 1);
        assert_eq!(recorded["team-a"].objects_in(&Some("west".into())), 1);
        assert_eq!(recorded["team-a"].objects_in(&Some("east".into())), 0);
        assert_eq!(recorded["team-b"].objects_in(&Some("east".into())), 1);
        let names = |r: &RecordedNamespace, c: Option<&str>| -> Vec<String> {
            r.autoscaled
                .get(&c.map(str::to_string))
                .into_iter()
                .flatten()
                .map(|id| format!("{}/{}", id.kind, id.name))
                .collect()
        };
        assert_eq!(names(&recorded["team-a"], None), ["Deployment/chat"]);
        assert_eq!(names(&recorded["team-a"], Some("west")), ["Deployment/chat"]);
        assert!(names(&recorded["team-a"], Some("east")).is_empty());
        assert_eq!(names(&recorded["team-b"], None), ["LeaderWorkerSet/big.one"]);
        // A record a render could not have written makes the text no manifest.
        for (good, bad) in [
            ("namespace ", "namespace 0"),
            ("[\"team-a\",", "[\"team a\","),
            ("route \"team-b\"", "route \"../b\""),
            ("\"team-a\"\n", "\"Team-A\"\n"),
            ("\"b/x.yaml\"", "\"b/../x.yaml\""),
            ("\"b/x.yaml\"", "\"/b/x.yaml\""),
            ("autoscaled [null,\"team-a\"", "autoscaled [null,\"team_a\""),
            ("autoscaled [\"west\"", "autoscaled [\"../w\""),
            ("autoscaled [null,", "autoscaled ["),
            ("cluster 1 \"east\"", "cluster 1 \"e/st\""),
            ("cluster 1 \"east\"", "cluster x \"east\""),
            ("cluster 1 \"east\" \"team-b\"", "cluster 1 \"east\" \"team b\""),
            ("cluster 1 \"east\" \"team-b\"", "cluster 1 \"east\""),
            ("\"Deployment\",\"chat\"", "\"Deployment\",\"Chat\""),
            ("\"Deployment\",\"chat\"", "\"Deploy ment\",\"chat\""),
            ("\"apps/v1\",\"Deployment\"", "\"apps/v1\\n\",\"Deployment\""),
            ("\"Deployment\",\"chat\"]", "\"Deployment\"]"),
        ] {
            let edited = text.replacen(good, bad, 1);
            assert_ne!(edited, text, "{good}");
            assert_eq!(Manifest::parse(&edited), None, "{bad}");
        }
        let output = text.lines().find(|l| l.starts_with("output ")).unwrap();
        let longer = output.replacen("output ", "output f", 1);
        assert_eq!(Manifest::parse(&text.replacen(output, &longer, 1)), None, "a digest of 33 digits");
        let upper = format!("output {}", output["output ".len()..].to_uppercase());
        assert_eq!(Manifest::parse(&text.replacen(output, &upper, 1)), None, "upper-case digits");
        let kept = BTreeSet::from(["team-b".to_string()]);
        assert_eq!(m.quota_of(&kept).map(|r| r.key.as_str()).collect::<Vec<_>>(), ["requests.cpu"]);
        assert_eq!(m.namespace_records().get("team-b"), Some(&(digest(b"b").as_str(), 1)));
        assert!(m.same_inputs(&[("services/z.yaml", &digest(b"z")), ("services/a b.yaml", &digest(b"a"))]));
        assert!(!m.same_inputs(&[("services/z.yaml", &digest(b"z"))]), "a file gone");
        assert!(!m.same_inputs(&[("services/z.yaml", &digest(b"z")), ("services/a b.yaml", &digest(b"A"))]));
        // Another version's manifest, or a damaged one, is not read.
        assert_eq!(Manifest::parse(&text.replacen("\nisvc ", "\nisvc 9", 1)), None);
        assert_eq!(Manifest::parse(&text.replacen("objects 2", "objects two", 1)), None);
        assert_eq!(Manifest::parse(&format!("{text}bogus line\n")), None);
        assert_eq!(Manifest::parse(&format!("{text}route \"a\"\n")), None, "a route without its namespace");
        assert_eq!(Manifest::parse(&format!("{text}route \"a\" \"b\" \"c\"\n")), None);
        assert_eq!(Manifest::parse(&format!("{text}quota [null,\"a\"]\n")), None, "a quota row cut short");
        let row = |ns: &str, key: &str| format!("{text}quota [null,\"{ns}\",\"q\",\"{key}\",\"1\",\"2\",\"3\"]\n");
        assert!(Manifest::parse(&row("team-a", "requests.cpu")).is_some());
        assert_eq!(Manifest::parse(&row("team-a", "requests.cpu\\u001b[2J")), None, "a control character");
        assert_eq!(Manifest::parse(&row("Team A", "requests.cpu")), None, "no namespace name");
        // A manifest of this version without the format (before quota rows).
        let unformatted = text.replacen(" manifest 4\n", "\n", 1);
        assert_ne!(unformatted, text);
        assert_eq!(Manifest::parse(&unformatted), None);
        // One of the format before (no cluster in `autoscaled` records).
        assert_eq!(Manifest::parse(&text.replacen(" manifest 4\n", " manifest 3\n", 1)), None);
        assert_eq!(Manifest::parse("not ours"), None);
        // An input line without its namespaces (an earlier format) is not read.
        let old = format!("input {} \"services/z.yaml\"\n", digest(b"z"));
        assert_eq!(Manifest::parse(&format!("{text}{old}")), None);
    }

    /// A manifest of three namespaces: `a` in a.yaml, `b` in b.yaml and
    /// both.yaml (which declares `c` too), `c` in c.yaml claiming route r.
    fn fleet() -> Manifest {
        let ns = |n: &str| (n.to_string(), digest(n.as_bytes()), 3);
        Manifest::new(
            Vec::new(),
            vec![
                input("a.yaml", b"a", &["a"]),
                input("b.yaml", b"b", &["b"]),
                input("both.yaml", b"both", &["b", "c"]),
                input("c.yaml", b"c", &["c"]),
                input("d.yaml", b"d", &["d"]),
            ],
            12,
            vec![ns("a"), ns("b"), ns("c"), ns("d")],
            vec![("c".to_string(), "r".to_string()), ("d".to_string(), "s".to_string())],
            &Tree::new(),
        )
    }

    /// What a file declares: namespaces and routes.
    type Declares = dyn Fn(&str) -> (Vec<&'static str>, Vec<&'static str>);

    /// Runs a selection to its end, each batch declaring what `declares`
    /// says of its files: the batches and the selection.
    fn run<'a>(mut s: Selection<'a>, declares: &Declares) -> (Vec<Vec<&'a str>>, Selection<'a>) {
        let mut batches = Vec::new();
        loop {
            let batch = s.batch();
            if batch.is_empty() {
                return (batches, s);
            }
            let (mut namespaces, mut routes) = (Vec::new(), Vec::new());
            for label in &batch {
                let (n, r) = declares(label);
                namespaces.extend(n);
                routes.extend(r.into_iter().map(str::to_string));
            }
            s.declared(namespaces, routes);
            batches.push(batch);
        }
    }

    fn as_recorded(label: &str) -> (Vec<&'static str>, Vec<&'static str>) {
        match label {
            "a.yaml" => (vec!["a"], vec![]),
            "b.yaml" => (vec!["b"], vec![]),
            "both.yaml" => (vec!["b", "c"], vec![]),
            "c.yaml" => (vec!["c"], vec!["r"]),
            "d.yaml" => (vec!["d"], vec!["s"]),
            _ => (vec![], vec![]),
        }
    }

    fn current(m: &Manifest) -> Vec<(&str, &str)> {
        m.inputs.iter().map(|i| (i.label.as_str(), i.digest.as_str())).collect()
    }

    /// [`current`] with the `i`th file changed.
    fn changed(m: &Manifest, i: usize) -> Vec<(&str, &str)> {
        let mut now = current(m);
        now[i].1 = "0123456789abcdef0123456789abcdef";
        now
    }

    #[test]
    fn nothing_changed_reads_nothing_and_keeps_every_namespace() {
        let m = fleet();
        let (batches, s) = run(Selection::new(&m, current(&m), []).unwrap(), &as_recorded);
        assert!(batches.is_empty());
        assert_eq!(s.clean().keys().collect::<Vec<_>>(), ["a", "b", "c", "d"]);
        assert_eq!(s.unread("a.yaml"), Some(&m.inputs[0]));
        assert_eq!(s.clean_routes().count(), 2);
    }

    #[test]
    fn a_changed_file_reads_every_file_of_its_namespaces() {
        let m = fleet();
        let (batches, s) = run(Selection::new(&m, changed(&m, 0), []).unwrap(), &as_recorded);
        assert_eq!(batches, [vec!["a.yaml"]]);
        assert_eq!(s.clean().keys().collect::<Vec<_>>(), ["b", "c", "d"]);
        assert_eq!(s.unread("a.yaml"), None, "read");

        // b.yaml changed: both.yaml is read for b, and declares c, so c.yaml
        // is read too.
        let (batches, s) = run(Selection::new(&m, changed(&m, 1), []).unwrap(), &as_recorded);
        assert_eq!(batches, [vec!["b.yaml", "both.yaml"], vec!["c.yaml"]]);
        assert_eq!(s.read().collect::<Vec<_>>(), ["b.yaml", "both.yaml", "c.yaml"]);
        assert_eq!(s.clean().keys().collect::<Vec<_>>(), ["a", "d"]);
        assert_eq!(s.clean_routes().collect::<Vec<_>>(), [&("d".to_string(), "s".to_string())]);
    }

    #[test]
    fn a_changed_file_moving_to_another_namespace_or_route_reads_that_one_too() {
        let m = fleet();
        let now = changed(&m, 0);
        // a.yaml now declares its service in d.
        let moved = |label: &str| if label == "a.yaml" { (vec!["d"], vec![]) } else { as_recorded(label) };
        let (batches, s) = run(Selection::new(&m, now.clone(), []).unwrap(), &moved);
        assert_eq!(batches, [vec!["a.yaml"], vec!["d.yaml"]]);
        assert_eq!(s.clean().keys().collect::<Vec<_>>(), ["b", "c"], "a is gone, d is compiled");
        // a.yaml now claims route r, which c's services claim.
        let routed = |label: &str| if label == "a.yaml" { (vec!["a"], vec!["r"]) } else { as_recorded(label) };
        let (batches, s) = run(Selection::new(&m, now, []).unwrap(), &routed);
        assert_eq!(batches, [vec!["a.yaml"], vec!["both.yaml", "c.yaml"], vec!["b.yaml"]]);
        assert_eq!(s.clean().keys().collect::<Vec<_>>(), ["d"]);
    }

    #[test]
    fn two_files_of_one_label_select_nothing() {
        let m = fleet();
        let mut now = current(&m);
        now.push(now[0]);
        assert!(Selection::new(&m, now, []).is_none(), "two files of this run");
        let mut twice = fleet();
        twice.inputs.push(input("a.yaml", b"other", &["b"]));
        assert!(Selection::new(&twice, current(&m), []).is_none(), "two recorded files");
        let s = Selection::new(&m, changed(&m, 0), []).unwrap();
        assert_eq!(s.recorded("a.yaml"), None, "changed");
        assert_eq!(s.recorded("b.yaml").map(|i| i.aliases), Some(6));
        let unchanged: Vec<&str> = s
            .unchanged()
            .map(|(label, i)| std::ptr::eq(i, s.recorded(label).unwrap()).then_some(label).unwrap())
            .collect();
        assert_eq!(unchanged, ["b.yaml", "both.yaml", "c.yaml", "d.yaml"], "all but a.yaml, with their records");
        assert!(std::ptr::eq(s.manifest(), &m));
    }

    #[test]
    fn a_removed_or_new_file_and_the_namespaces_always_compiled() {
        let m = fleet();
        let mut now = current(&m);
        now.remove(4);
        let (batches, s) = run(Selection::new(&m, now.clone(), []).unwrap(), &as_recorded);
        assert!(batches.is_empty(), "d.yaml was d's only file: nothing is left to read");
        assert_eq!(s.clean().keys().collect::<Vec<_>>(), ["a", "b", "c"]);

        let new = digest(b"new");
        now.push(("new.yaml", &new));
        let (batches, s) = run(Selection::new(&m, now, ["a".to_string()]).unwrap(), &as_recorded);
        assert_eq!(batches, [vec!["a.yaml", "new.yaml"]], "a new file is read, and a's");
        assert_eq!(s.unread("new.yaml"), None);
        assert_eq!(s.clean().keys().collect::<Vec<_>>(), ["b", "c"]);
    }

    #[test]
    fn a_tree_matches_only_with_the_same_files_and_bytes() {
        let m = sample();
        let existing = |files: &[(&str, String)]| Existing {
            ours: files.iter().map(|(p, t)| (TreePath::from(*p), Contents::text(t.clone()))).collect(),
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

    /// A name that is no UTF-8 is compared by its bytes, which no listed
    /// text has: such a tree never matches, and is compiled (isvc names
    /// its files after DNS names; a file so named was put there by hand).
    #[cfg(unix)]
    #[test]
    fn a_name_that_is_no_utf8_matches_no_listed_file() {
        use std::os::unix::ffi::OsStrExt;
        let text = format!("{HEADER_PREFIX}\nt");
        let path = |bytes: &[u8]| TreePath::from(std::path::PathBuf::from(std::ffi::OsStr::from_bytes(bytes)));
        let odd = path(b"a/\xff.yaml");
        let mut tree = Tree::new();
        tree.insert(odd.clone(), Contents::text(text.clone()));
        tree.insert(TreePath::from("b/x.yaml"), Contents::text(text.clone()));
        let m = Manifest::new(Vec::new(), Vec::new(), 2, Vec::new(), Vec::new(), &tree);
        let existing = |paths: Vec<TreePath>| Existing {
            ours: paths.into_iter().map(|p| (p, Contents::text(text.clone()))).collect(),
            ..Existing::default()
        };
        assert!(!m.matches_tree(&existing(vec![odd, TreePath::from("b/x.yaml")])));
        assert!(!m.matches_tree(&existing(vec![TreePath::from("b/x.yaml")])), "a listed file is missing");
    }
}
