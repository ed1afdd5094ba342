//! Reading the input: walks paths, parses YAML, checks every document
//! against the schema and Kubernetes' naming rules, and decodes it into the
//! typed spec. Every problem of every file is reported, not just the first.

pub mod files;
pub mod schema_validate;
pub mod validate;

use std::fs::Metadata;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use rayon::prelude::*;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::base::diagnostics::{Diagnostic, Diagnostics, Location, Source, Span, did_you_mean};
use crate::base::names;
use crate::base::quantity::Quantity;
use crate::base::yaml::{self, Limits, Node, NodeValue, PathSegment};
use crate::model::labels::RESERVED_LABELS;
use crate::model::platform::Platform;
use crate::model::schema::INFERENCE_SERVICE_VERSIONS;
use crate::model::v1alpha1::{API_VERSION, KIND};
use crate::model::v1alpha2::InferenceService;

/// Largest input file read, in bytes.
pub const MAX_FILE_BYTES: u64 = 8 << 20;

/// An InferenceService read from a file, with where it came from.
#[derive(Clone, Debug)]
pub struct LoadedService {
    /// The service as v1alpha2, whichever version the file has. Boxed:
    /// inline it made a loaded service 912 bytes, and the list of a
    /// fleet's services is moved whole as it is gathered and sorted.
    pub service: Box<InferenceService>,
    /// The `apiVersion` the file has.
    pub api_version: &'static str,
    pub source: Arc<Source>,
    /// Where the document is in its source: its place among the source's
    /// documents, and its root node's span.
    doc: usize,
    pub span: Span,
    /// The source's documents, parsed again the first time a diagnostic
    /// points into one of them and shared by the services of the source:
    /// a compile does not hold the nodes of a fleet's inputs.
    nodes: Arc<OnceLock<Vec<Option<Node>>>>,
    /// How many nodes the aliases of its source expanded to, over all of
    /// the source's documents.
    pub alias_nodes: usize,
}

/// `services` by namespace and name, to find where a finding or an
/// admission error about one of them points.
pub fn by_name(services: &[LoadedService]) -> std::collections::HashMap<(&str, &str), &LoadedService> {
    services.iter().map(|s| (s.id(), s)).collect()
}

impl LoadedService {
    /// What the service is known by: its namespace and name.
    pub fn id(&self) -> (&str, &str) {
        (self.service.namespace_or_default(), self.service.name())
    }

    /// The route the service claims (`spec.gateway.route`), as
    /// [`crate::model::route::Route`] prints it, if it is one.
    pub fn claimed_route(&self) -> Option<String> {
        let route = &self.service.spec.gateway.as_ref()?.route;
        crate::model::route::parse_route(route).ok().map(|r| r.to_string())
    }

    /// Location of a field of this document (or the nearest existing parent).
    pub fn location(&self, path: &[PathSegment]) -> Location {
        Location::span(&self.source, self.node().at_path(path).span)
    }

    /// The document's root node, for pointing diagnostics at fields.
    pub fn node(&self) -> &Node {
        let nodes = self.nodes.get_or_init(|| {
            // The source parsed before; the same text parses the same way.
            let (docs, _) = yaml::parse_stream_in(&self.source, Limits::default(), &yaml::RunBudget::new());
            docs.into_iter().map(|d| d.root).collect()
        });
        static NULL: Node = Node { value: NodeValue::Null, span: Span::EMPTY };
        nodes.get(self.doc).and_then(Option::as_ref).unwrap_or(&NULL)
    }
}

/// Lists the input files under `paths`: files as given, directories walked
/// for `*.yaml` and `*.yml` (hidden entries skipped), in a stable order.
///
/// Symbolic links inside a directory are followed only while they stay
/// inside it: a link that leads out of the directory is an error that names
/// the link, never its target, and nothing behind it is read. A file reached
/// twice (given twice, or through a link) is read once.
pub fn input_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Diagnostics> {
    Ok(input_files_with_status(paths)?.into_iter().map(|(f, _)| f).collect())
}

/// [`input_files`], each with its status (links followed) as read to find
/// the files reached twice; `None` where it could not be read.
pub fn input_files_with_status(paths: &[PathBuf]) -> Result<Vec<(PathBuf, Option<Metadata>)>, Diagnostics> {
    let mut files = Vec::new();
    let mut diags = Diagnostics::new();
    for path in paths {
        match std::fs::metadata(path) {
            Ok(m) if m.is_file() => {
                files.push(path.clone());
                continue;
            }
            Ok(m) if m.is_dir() => {}
            Ok(m) => {
                diags.push(
                    Diagnostic::error(format!(
                        "{} is {}, not a file or directory of InferenceService files",
                        path.display(),
                        crate::load::files::describe(m.file_type())
                    ))
                    .help("isvc reads services from regular files; save the stream to a file and pass that"),
                );
                continue;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                diags.push(Diagnostic::error(format!("{}: no such file or directory", path.display())));
                continue;
            }
            Err(e) => {
                diags.push(Diagnostic::error(format!("cannot read {}: {e}", path.display())));
                continue;
            }
        }
        let root = match std::fs::canonicalize(path) {
            Ok(r) => r,
            Err(e) => {
                diags.push(Diagnostic::error(format!("cannot read {}: {e}", path.display())));
                continue;
            }
        };
        let mut escaped = Vec::new();
        // Sorted by name, compared as whole paths: the entries of a
        // directory share its path as their prefix, so the order is the
        // same, without taking each name apart from its path again for each
        // comparison (`sort_by_file_name` does; a quarter of the samples of
        // finding 10,000 inputs).
        let by_name = |a: &walkdir::DirEntry, b: &walkdir::DirEntry| a.path().as_os_str().cmp(b.path().as_os_str());
        let walker = walkdir::WalkDir::new(path).follow_links(true).sort_by(by_name).into_iter().filter_entry(|e| {
            if e.depth() > 0 && e.file_name().to_string_lossy().starts_with('.') {
                return false;
            }
            if e.path_is_symlink() && !std::fs::canonicalize(e.path()).is_ok_and(|t| t.starts_with(&root)) {
                if e.file_type().is_dir() || is_yaml(e.path()) {
                    escaped.push(e.path().to_path_buf());
                }
                return false;
            }
            true
        });
        for entry in walker {
            match entry {
                Ok(e) if e.file_type().is_file() && is_yaml(e.path()) => files.push(e.into_path()),
                Ok(_) => {}
                Err(err) => diags.push(Diagnostic::error(format!("cannot read {}: {err}", path.display()))),
            }
        }
        for link in escaped {
            diags.push(
                Diagnostic::error(format!(
                    "{} is a symbolic link that leads out of {}; isvc does not follow it",
                    link.display(),
                    path.display()
                ))
                .help("copy the file into the input directory, or pass its path on the command line"),
            );
        }
    }
    if diags.has_errors() {
        return Err(diags);
    }
    // A file reached twice (named and inside a named directory, or through
    // a link within the directory) is read once, at its first path: the
    // same canonical path. A canonical path costs a stat(2) per component,
    // so it is taken only for files that share a device and inode with
    // another (hard links stay two files, as they always were).
    let files: Vec<(PathBuf, Option<Metadata>)> = files
        .into_par_iter()
        .map(|f| {
            let meta = std::fs::metadata(&f).ok();
            (f, meta)
        })
        .collect();
    let mut shared = std::collections::HashMap::with_capacity(files.len());
    for id in files.iter().filter_map(|(_, m)| inode(m.as_ref()?)) {
        *shared.entry(id).or_insert(0usize) += 1;
    }
    let mut seen = std::collections::HashSet::new();
    let files = files
        .into_iter()
        .filter(|(f, m)| {
            let unique = m.as_ref().and_then(inode).is_some_and(|id| shared.get(&id) == Some(&1));
            unique || seen.insert(std::fs::canonicalize(f).unwrap_or_else(|_| f.clone()))
        })
        .collect();
    Ok(files)
}

/// The device and inode of a file's status, where the system has them and
/// they are usable (some FUSE file systems report inode 0 for every file).
fn inode(meta: &Metadata) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (meta.ino() != 0).then(|| (meta.dev(), meta.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        None
    }
}

fn is_yaml(path: &Path) -> bool {
    matches!(path.extension().and_then(|e| e.to_str()), Some("yaml" | "yml"))
}

/// Reads a file into a [`Source`], refusing what is too large or not text.
pub fn read_source(path: &Path) -> Result<Arc<Source>, Diagnostic> {
    read_source_limited(path, MAX_FILE_BYTES)
}

/// [`read_source`] with a size limit of `max_bytes`. Only a regular file is
/// read (a device, a FIFO or a directory is an error), and never more than
/// `max_bytes` of it.
pub fn read_source_limited(path: &Path, max_bytes: u64) -> Result<Arc<Source>, Diagnostic> {
    let bytes = crate::load::files::read_regular(path, max_bytes, true).map_err(|e| read_error(path, e, max_bytes))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        Diagnostic::error(format!(
            "{} is not UTF-8 text (invalid byte at offset {})",
            path.display(),
            e.utf8_error().valid_up_to()
        ))
    })?;
    Ok(Source::new(path, text))
}

/// [`read_source_limited`], with the bytes counted against `run`, the
/// budget of every input of the run.
pub fn read_source_in(path: &Path, max_bytes: u64, run: &yaml::RunBudget) -> Result<Arc<Source>, Diagnostic> {
    let source = read_source_limited(path, max_bytes)?;
    take_bytes(&source, run)?;
    Ok(source)
}

/// Counts the bytes of `source` against the run's budget.
pub fn take_bytes(source: &Arc<Source>, run: &yaml::RunBudget) -> Result<(), Diagnostic> {
    run.take_bytes(source.text.len() as u64).map_err(|max| {
        Diagnostic::error(format!(
            "{} takes the inputs of this run over {max} bytes in all; refusing to read more",
            source.name.display()
        ))
        .help(format!(
            "isvc reads at most {max} bytes per run (service files, platform file and snapshot together), \
             and at most {MAX_FILE_BYTES} bytes per input file; render smaller sets of services, each into its own --out"
        ))
    })
}

/// The name standard input goes by in messages.
pub const STDIN: &str = "<stdin>";

/// Standard input as a source, read up to `max_bytes`; `what` names it in
/// errors ("the services", "the snapshot").
pub fn read_stdin(what: &str, max_bytes: u64) -> Result<Arc<Source>, Diagnostic> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Diagnostic::error(format!("cannot read {what} from standard input: {e}")))?;
    if bytes.len() as u64 > max_bytes {
        return Err(Diagnostic::error(format!("standard input ({what}) is larger than {max_bytes} bytes")));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        Diagnostic::error(format!(
            "standard input ({what}) is not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })?;
    Ok(Source::new(STDIN, text))
}

/// The diagnostic for a file that could not be read.
pub fn read_error(path: &Path, e: crate::load::files::ReadError, max_bytes: u64) -> Diagnostic {
    use crate::load::files::ReadError;
    match e {
        ReadError::NotRegular(what) => Diagnostic::error(format!("{} is {what}, not a regular file", path.display()))
            .help("isvc reads its inputs from regular files; save the data to a file and pass that"),
        ReadError::TooLarge(len) => Diagnostic::error(format!(
            "{} is {len} bytes, larger than the limit of {max_bytes} bytes for an input file",
            path.display(),
        )),
        ReadError::Io(e) => Diagnostic::error(format!("cannot read {}: {e}", path.display())),
    }
}

/// The files of a template override directory (hidden ones skipped), in
/// name order. A symbolic link that leads out of the directory is an error
/// naming the link, never its target, and is not read: its content would
/// be shown in template errors.
pub fn template_sources(dir: &Path) -> Result<Vec<Arc<Source>>, Diagnostics> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| Diagnostic::error(format!("cannot read templates directory {}: {e}", dir.display())))?;
    let root = std::fs::canonicalize(dir)
        .map_err(|e| Diagnostic::error(format!("cannot read templates directory {}: {e}", dir.display())))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')))
        .collect();
    paths.sort();
    let mut sources = Vec::new();
    let mut diags = Diagnostics::new();
    for p in paths {
        let is_link = std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink());
        if is_link && !std::fs::canonicalize(&p).is_ok_and(|t| t.starts_with(&root)) {
            diags.push(
                Diagnostic::error(format!(
                    "{} is a symbolic link that leads out of {}; isvc does not follow it",
                    p.display(),
                    dir.display()
                ))
                .help("copy the template into the templates directory"),
            );
            continue;
        }
        if !p.is_file() {
            continue;
        }
        match read_source(&p) {
            Ok(s) => sources.push(s),
            Err(d) => diags.push(d),
        }
    }
    if diags.has_errors() {
        return Err(diags);
    }
    Ok(sources)
}

/// Loads every InferenceService under `paths`. Returns them sorted by
/// namespace and name, or every error found.
pub fn load_services(paths: &[PathBuf]) -> Result<Vec<LoadedService>, Diagnostics> {
    load_services_in(paths, &yaml::RunBudget::new())
}

/// [`load_services`], with alias expansions counted against `run`, the
/// budget of every input of the run.
pub fn load_services_in(paths: &[PathBuf], run: &yaml::RunBudget) -> Result<Vec<LoadedService>, Diagnostics> {
    // `-` is standard input, read once whatever else is given.
    let stdin = paths.iter().any(|p| p == Path::new("-"));
    let others: Vec<PathBuf> = paths.iter().filter(|p| *p != Path::new("-")).cloned().collect();
    let files = if others.is_empty() { Vec::new() } else { input_files(&others)? };
    let (mut services, mut diags) = read_services_in(&files, run);
    if stdin {
        let source = read_stdin("the services", MAX_FILE_BYTES).and_then(|s| take_bytes(&s, run).map(|()| s));
        let (s, d) = match source {
            Ok(source) => parse_services_in(&source, run),
            Err(d) => (Vec::new(), vec![d]),
        };
        services.extend(s);
        diags.extend(d);
    }
    finish_services(services, diags)
}

/// Reads and parses the InferenceServices of each of `files` (which must be
/// files, not directories), with every problem found; see
/// [`finish_services`].
pub fn read_services_in<P: AsRef<Path> + Sync>(
    files: &[P],
    run: &yaml::RunBudget,
) -> (Vec<LoadedService>, Diagnostics) {
    let results: Vec<(Vec<LoadedService>, Vec<Diagnostic>)> = files
        .par_iter()
        .map(|path| match read_source_in(path.as_ref(), MAX_FILE_BYTES, run) {
            Ok(source) => parse_services_in(&source, run),
            Err(d) => (Vec::new(), vec![d]),
        })
        .collect();
    let mut diags = Diagnostics::new();
    // Sized once: a service is most of a kilobyte, and a fleet has thousands.
    let mut services = Vec::with_capacity(results.iter().map(|(s, _)| s.len()).sum());
    for (s, d) in results {
        services.extend(s);
        diags.extend(d);
    }
    (services, diags)
}

/// The services read, sorted by namespace and name, or every error found
/// reading them and every service declared twice.
pub fn finish_services(
    mut services: Vec<LoadedService>,
    mut diags: Diagnostics,
) -> Result<Vec<LoadedService>, Diagnostics> {
    // Stable: services of one name stay in the order they were read, for
    // `validate_duplicates`.
    services.sort_by(|a, b| a.id().cmp(&b.id()));
    validate_duplicates(&services, &mut diags);
    diags.sort();
    if diags.has_errors() {
        return Err(diags);
    }
    Ok(services)
}

/// Parses every InferenceService document of one source text.
pub fn parse_services(source: &Arc<Source>) -> (Vec<LoadedService>, Vec<Diagnostic>) {
    parse_services_in(source, &yaml::RunBudget::new())
}

/// [`parse_services`], with alias expansions counted against `run`, the
/// budget of every file of the run.
pub fn parse_services_in(source: &Arc<Source>, run: &yaml::RunBudget) -> (Vec<LoadedService>, Vec<Diagnostic>) {
    let (docs, fatal, alias_nodes) = yaml::parse_stream_counted(source, Limits::default(), run);
    let mut services = Vec::new();
    let mut diags = Vec::new();
    let nodes = Arc::new(OnceLock::new());
    for (i, doc) in docs.into_iter().enumerate() {
        if !doc.errors.is_empty() {
            diags.extend(doc.errors);
            continue;
        }
        let Some(node) = doc.root else { continue };
        match parse_service(source, &node) {
            Ok((service, api_version)) => services.push(LoadedService {
                service: Box::new(service),
                api_version,
                source: Arc::clone(source),
                doc: i,
                span: node.span,
                nodes: Arc::clone(&nodes),
                alias_nodes,
            }),
            Err(d) => diags.extend(d),
        }
    }
    diags.extend(fatal);
    // Shrunk to the services found: a list grown by pushing starts with
    // room for four (most of a kilobyte each), and a fleet's files hold
    // one each, all alive until `read_services_in` joins them. Not sized
    // from the documents up front: a file of empty documents (`---` lines)
    // would reserve room for millions of services.
    services.shrink_to_fit();
    (services, diags)
}

/// The service of one document, and the `apiVersion` it has.
fn parse_service(source: &Arc<Source>, node: &Node) -> Result<(InferenceService, &'static str), Vec<Diagnostic>> {
    let api_version = validate_header(
        source,
        node,
        KIND,
        &INFERENCE_SERVICE_VERSIONS,
        "only InferenceService documents belong here; move other manifests out of the input paths",
    )?;
    let schema = crate::model::schema::inference_service_cached(api_version).unwrap_or(&Value::Null);
    let mut diags = crate::load::schema_validate::validate(node, schema, source);
    validate_metadata(source, node, &mut diags);
    if !diags.is_empty() {
        return Err(diags);
    }
    let service: InferenceService = if api_version == API_VERSION {
        let old: crate::model::v1alpha1::InferenceService = decode(source, node)?;
        crate::model::conversion::to_hub(&old).map_err(|e| {
            vec![
                Diagnostic::error(e)
                    .at(Location::span(source, node.at_path(&[key("metadata"), key("annotations")]).span)),
            ]
        })?
    } else {
        decode(source, node)?
    };
    let problems = validate::service(&service.spec);
    if !problems.is_empty() {
        return Err(problems
            .into_iter()
            .map(|p| {
                let d = Diagnostic::error(p.message).at(Location::span(source, node.at_path(&p.path).span));
                match p.help {
                    Some(h) => d.help(h),
                    None => d,
                }
            })
            .collect());
    }
    Ok((service, api_version))
}

/// Checks `kind` and `apiVersion` first, so a foreign document gets one
/// clear error instead of a list of unknown fields. Returns the version
/// found, one of `api_versions` (newest first).
fn validate_header(
    source: &Arc<Source>,
    node: &Node,
    kind: &str,
    api_versions: &[&'static str],
    foreign_help: &str,
) -> Result<&'static str, Vec<Diagnostic>> {
    if !matches!(node.value, NodeValue::Map(_)) {
        return Err(vec![
            Diagnostic::error(format!(
                "expected {} {kind} mapping, found {}",
                if kind.starts_with(['A', 'E', 'I', 'O', 'U']) { "an" } else { "a" },
                node.type_name()
            ))
            .at(Location::span(source, node.span)),
        ]);
    }
    let found_kind = node.get("kind");
    match found_kind.and_then(Node::as_str) {
        Some(k) if k == kind => {}
        Some(k) => {
            let help = if k.eq_ignore_ascii_case(kind) || did_you_mean(k, [kind]).is_some() {
                format!("did you mean \"{kind}\"?")
            } else {
                foreign_help.to_string()
            };
            return Err(vec![
                Diagnostic::error(format!("expected kind \"{kind}\", found \"{k}\""))
                    .at(Location::span(source, found_kind.map_or(node.span, |n| n.span)))
                    .help(help),
            ]);
        }
        None => {
            return Err(vec![
                Diagnostic::error(format!("missing \"kind\": expected \"kind: {kind}\""))
                    .at(Location::span(source, found_kind.map_or(node.span, |n| n.span))),
            ]);
        }
    }
    let found = node.get("apiVersion");
    let api_version = api_versions[0];
    match found.and_then(Node::as_str) {
        Some(v) if api_versions.contains(&v) => {
            Ok(api_versions.iter().find(|a| **a == v).copied().unwrap_or(api_version))
        }
        other => {
            let msg = match other {
                Some(v) => format!("unsupported apiVersion \"{v}\" for {kind}"),
                None => format!("missing \"apiVersion\" for {kind}"),
            };
            Err(vec![Diagnostic::error(msg).at(Location::span(source, found.map_or(node.span, |n| n.span))).help(
                match api_versions {
                    [newest, older @ ..] if !older.is_empty() => {
                        format!("use \"apiVersion: {newest}\" ({} is read too)", older.join(", "))
                    }
                    _ => format!("use \"apiVersion: {api_version}\""),
                },
            )])
        }
    }
}

/// Decodes a schema-checked node into its typed form.
fn decode<T: DeserializeOwned>(source: &Arc<Source>, node: &Node) -> Result<T, Vec<Diagnostic>> {
    serde_path_to_error::deserialize(node.to_json()).map_err(|e| {
        let path = path_segments(e.path());
        let at = node.at_path(&path);
        vec![Diagnostic::error(format!("invalid value: {}", e.inner())).at(Location::span(source, at.span))]
    })
}

fn path_segments(path: &serde_path_to_error::Path) -> Vec<PathSegment> {
    path.iter()
        .filter_map(|seg| match seg {
            serde_path_to_error::Segment::Map { key } => Some(PathSegment::Key(key.clone())),
            serde_path_to_error::Segment::Seq { index } => Some(PathSegment::Index(*index)),
            _ => None,
        })
        .collect()
}

fn key(k: &str) -> PathSegment {
    PathSegment::Key(k.to_string())
}

/// Checks names, labels and annotations against Kubernetes' rules. Works on
/// the tree, so it runs even when other fields of the document are wrong.
fn validate_metadata(source: &Arc<Source>, node: &Node, diags: &mut Vec<Diagnostic>) {
    let Some(meta) = node.get("metadata") else {
        return;
    };
    type Rule = fn(&str) -> Result<(), String>;
    let rules: [(&str, Rule); 2] = [("name", names::dns1035_label), ("namespace", names::dns1123_label)];
    for (field, rule) in rules {
        let Some(n) = meta.get(field) else { continue };
        let Some(value) = n.as_str() else { continue };
        if let Err(e) = rule(value) {
            diags.push(
                Diagnostic::error(format!("invalid {field} \"{value}\": {e}"))
                    .at(Location::span(source, n.span))
                    .help(suggest_dns(value)),
            );
        }
    }
    if let Some(NodeValue::Map(labels)) = meta.get("labels").map(|n| &n.value) {
        for (k, v) in labels {
            let key_loc = Location::span(source, k.span);
            if let Err(e) = names::qualified_name(&k.name) {
                diags.push(Diagnostic::error(format!("invalid label key \"{}\": {e}", k.name)).at(key_loc.clone()));
            }
            if let Some(value) = v.as_str()
                && let Err(e) = names::label_value(value, true)
            {
                diags.push(
                    Diagnostic::error(format!("invalid value for label \"{}\": {e}", k.name))
                        .at(Location::span(source, v.span)),
                );
            }
            if RESERVED_LABELS.contains(&k.name.as_str()) {
                diags.push(
                    Diagnostic::error(format!("label \"{}\" is set by isvc and cannot be given", k.name))
                        .at(key_loc)
                        .help("remove it; isvc labels every object with the service name"),
                );
            }
        }
    }
    if let Some(annotations) = meta.get("annotations")
        && let NodeValue::Map(entries) = &annotations.value
    {
        let mut total = 0;
        for (k, v) in entries {
            total += k.name.len() + v.as_str().map_or(0, str::len);
            if let Err(e) = names::qualified_name(&k.name) {
                diags.push(
                    Diagnostic::error(format!("invalid annotation key \"{}\": {e}", k.name))
                        .at(Location::span(source, k.span)),
                );
            }
            if k.name == crate::model::conversion::LOST_FIELDS_ANNOTATION {
                diags.push(
                        Diagnostic::error(format!("annotation \"{}\" is set by isvc and cannot be given", k.name))
                            .at(Location::span(source, k.span))
                            .help("write the fields under spec with apiVersion: ai.example.com/v1alpha2 (`isvc migrate` rewrites the file)"),
                    );
            }
            if k.name == crate::model::labels::EXCEPTIONS_ANNOTATION {
                diags.push(
                    Diagnostic::error(format!("annotation \"{}\" is set by isvc and cannot be given", k.name))
                        .at(Location::span(source, k.span))
                        .help("security exceptions are granted in the platform file (securityExceptions)"),
                );
            }
        }
        if total > 256 * 1024 {
            diags.push(
                Diagnostic::error(format!("annotations total {total} bytes; Kubernetes allows 262144"))
                    .at(Location::span(source, annotations.span)),
            );
        }
    }
}

/// A DNS-safe spelling of `name`, for help text.
fn suggest_dns(name: &str) -> String {
    let mut s: String =
        name.to_ascii_lowercase().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    while s.contains("--") {
        s = s.replace("--", "-");
    }
    let s = s.trim_matches('-');
    let s = s.trim_start_matches(|c: char| c.is_ascii_digit()).trim_start_matches('-');
    let s: String = s.chars().take(63).collect();
    let s = s.trim_end_matches('-');
    if s.is_empty() || s == name {
        "use lower case letters, digits and '-', starting with a letter".to_string()
    } else {
        format!("try \"{s}\"")
    }
}

/// Reports each service whose namespace and name a service before it has:
/// `services` are sorted by [`LoadedService::id`], those of one name in the
/// order read.
fn validate_duplicates(services: &[LoadedService], diags: &mut Diagnostics) {
    for run in services.chunk_by(|a, b| a.id() == b.id()) {
        let [first, rest @ ..] = run else { continue };
        let (ns, name) = first.id();
        for s in rest {
            // Report the later one (in file order) against the earlier one.
            let (a, b) = if (first.source.name.as_path(), first.span) <= (s.source.name.as_path(), s.span) {
                (first, s)
            } else {
                (s, first)
            };
            diags.push(
                Diagnostic::error(format!("InferenceService {ns}/{name} is defined twice"))
                    .at(b.location(&[key("metadata"), key("name")]))
                    .related(a.location(&[key("metadata"), key("name")]), "first defined here")
                    .help("rename one of them or put it in another namespace"),
            );
        }
    }
}

/// Where the platform was read from: its file and document, for pointing
/// later diagnostics (a cluster naming an unknown service) at its fields.
#[derive(Clone, Debug)]
pub struct PlatformOrigin {
    pub source: Arc<Source>,
    pub node: Node,
}

impl PlatformOrigin {
    /// Location of a field of the platform document (or the nearest
    /// existing parent; the empty path is the document).
    pub fn location(&self, path: &[PathSegment]) -> Location {
        Location::span(&self.source, self.node.at_path(path).span)
    }
}

/// Loads the platform file, or the built-in defaults when `path` is `None`.
pub fn load_platform(path: Option<&Path>) -> Result<Platform, Diagnostics> {
    load_platform_with_origin(path).map(|(p, _)| p)
}

/// [`load_platform`], with where the platform came from.
pub fn load_platform_with_origin(path: Option<&Path>) -> Result<(Platform, Option<PlatformOrigin>), Diagnostics> {
    load_platform_in(path, &yaml::RunBudget::new())
}

/// [`load_platform_with_origin`], with alias expansions counted against
/// `run`, the budget of every input of the run.
pub fn load_platform_in(
    path: Option<&Path>,
    run: &yaml::RunBudget,
) -> Result<(Platform, Option<PlatformOrigin>), Diagnostics> {
    let Some(path) = path else {
        return Ok((Platform::default(), None));
    };
    let source = read_source_in(path, MAX_FILE_BYTES, run)?;
    parse_platform_in(&source, run).map(|(p, o)| (p, Some(o))).map_err(|d| {
        let mut d = Diagnostics(d);
        d.sort();
        d
    })
}

/// Parses a platform file's text.
pub fn parse_platform(source: &Arc<Source>) -> Result<Platform, Vec<Diagnostic>> {
    parse_platform_with_origin(source).map(|(p, _)| p)
}

/// [`parse_platform`], with the document it was read from.
pub fn parse_platform_with_origin(source: &Arc<Source>) -> Result<(Platform, PlatformOrigin), Vec<Diagnostic>> {
    parse_platform_in(source, &yaml::RunBudget::new())
}

/// [`parse_platform_with_origin`], with alias expansions counted against
/// `run`, the budget of every input of the run.
pub fn parse_platform_in(
    source: &Arc<Source>,
    run: &yaml::RunBudget,
) -> Result<(Platform, PlatformOrigin), Vec<Diagnostic>> {
    let docs = yaml::parse_documents_in(source, Limits::default(), run).map_err(|d| vec![d])?;
    let mut docs: Vec<Node> = docs.into_iter().flatten().collect();
    if docs.len() != 1 {
        return Err(vec![
            Diagnostic::error(format!("a platform file holds exactly one document, found {}", docs.len()))
                .at(Location::file(source)),
        ]);
    }
    let node = docs.remove(0);
    validate_header(
        source,
        &node,
        crate::model::platform::KIND,
        &[API_VERSION],
        "--platform takes a file with \"kind: Platform\"",
    )?;
    let mut diags = crate::load::schema_validate::validate(&node, &crate::model::schema::platform(), source);
    validate_platform(source, &node, &mut diags);
    if !diags.is_empty() {
        return Err(diags);
    }
    let platform: Platform = decode(source, &node)?;
    let problems = validate::platform(&platform);
    if problems.is_empty() {
        return Ok((platform, PlatformOrigin { source: source.clone(), node }));
    }
    Err(problems.into_iter().map(|p| p.diagnostic().at(Location::span(source, node.at_path(&p.path).span))).collect())
}

/// Checks the platform's quantities and cross-field rules on the tree, so
/// they are reported together with schema errors. Values the file leaves
/// out take the built-in default.
fn validate_platform(source: &Arc<Source>, node: &Node, diags: &mut Vec<Diagnostic>) {
    let builtin = Platform::default().defaults;
    let field = |path: &[&str]| {
        let segs: Vec<PathSegment> = path.iter().map(|k| key(k)).collect();
        let n = node.at_path(&segs);
        // at_path stops at the deepest existing node; only an exact hit counts.
        let exact = segs.iter().try_fold(node, |n, s| match s {
            PathSegment::Key(k) => n.get(k),
            PathSegment::Index(_) => None,
        });
        (exact.is_some(), n)
    };
    let quantity = |path: &[&str], default: Option<&str>, diags: &mut Vec<Diagnostic>| -> Option<Quantity> {
        let (present, n) = field(path);
        let text = if present {
            match &n.value {
                NodeValue::Str(s) => s.clone(),
                NodeValue::Int(i) => i.to_string(),
                NodeValue::Float(f) => f.to_string(),
                _ => return None, // the schema check reports the type
            }
        } else {
            default?.to_string()
        };
        let name = path.join(".");
        match Quantity::parse(&text) {
            Ok(q) if q.nanos() == 0 => {
                diags.push(
                    Diagnostic::error(format!("\"{name}\" must be more than zero")).at(Location::span(source, n.span)),
                );
                None
            }
            Ok(q) => Some(q),
            Err(e) => {
                let mut d = Diagnostic::error(format!("\"{name}\": {e}")).at(Location::span(source, n.span));
                if let Some(fix) = quantity_fix(&text) {
                    d = d.help(format!("did you mean \"{fix}\"?"));
                }
                diags.push(d);
                None
            }
        }
    };
    let r = &builtin.resources;
    let cpu = quantity(&["defaults", "resources", "cpuPerGpu"], Some(&r.cpu_per_gpu), diags);
    let memory = quantity(&["defaults", "resources", "memoryPerGpu"], Some(&r.memory_per_gpu), diags);
    let limit = quantity(&["defaults", "resources", "cpuLimitPerGpu"], None, diags);
    let shm = quantity(&["defaults", "resources", "shmSizePerGpu"], Some(&r.shm_size_per_gpu), diags);
    quantity(
        &["defaults", "autoscaling", "targetAverageValue"],
        Some(&builtin.autoscaling.target_average_value),
        diags,
    );
    let at = |path: &[&str]| Location::span(source, field(path).1.span);
    if let (Some(cpu), Some(limit)) = (cpu, limit)
        && limit < cpu
    {
        diags.push(
            Diagnostic::error(format!("\"defaults.resources.cpuLimitPerGpu\" ({limit}) is below cpuPerGpu ({cpu})"))
                .at(at(&["defaults", "resources", "cpuLimitPerGpu"]))
                .help("a limit below the request is rejected by the API server; raise the limit or remove it"),
        );
    }
    if let (Some(memory), Some(shm)) = (memory, shm)
        && shm >= memory
    {
        diags.push(
                Diagnostic::error(format!(
                    "\"defaults.resources.shmSizePerGpu\" ({shm}) must be below memoryPerGpu ({memory}): /dev/shm counts against the memory limit"
                ))
                .at(at(&["defaults", "resources", "shmSizePerGpu"])),
            );
    }
    validate::platform_security(source, node, diags);
    let int = |path: &[&str], default: i32| match &field(path) {
        (true, Node { value: NodeValue::Int(i), .. }) => Some(*i),
        (true, _) => None,
        (false, _) => Some(i64::from(default)),
    };
    if let (Some(0), Some(0)) = (
        int(&["defaults", "rollout", "maxSurge"], builtin.rollout.max_surge),
        int(&["defaults", "rollout", "maxUnavailable"], builtin.rollout.max_unavailable),
    ) {
        diags.push(
            Diagnostic::error("\"defaults.rollout\": maxSurge and maxUnavailable cannot both be 0 (a rollout could never replace a pod)")
                .at(at(&["defaults", "rollout"]))
                .help("set maxUnavailable: 1, or maxSurge: 1 if you keep a spare GPU"),
        );
    }
    if let (true, n) = field(&["defaults", "probes", "path"])
        && n.as_str().is_some_and(|p| !p.starts_with('/'))
    {
        diags
            .push(Diagnostic::error("\"defaults.probes.path\" must start with '/'").at(Location::span(source, n.span)));
    }
}

/// The usual fix for a quantity written the way people write sizes.
fn quantity_fix(text: &str) -> Option<String> {
    let t = text.trim();
    for (wrong, right) in
        [("GB", "Gi"), ("MB", "Mi"), ("KB", "Ki"), ("TB", "Ti"), ("gi", "Gi"), ("mi", "Mi"), ("g", "G")]
    {
        if let Some(n) = t.strip_suffix(wrong)
            && Quantity::parse(n).is_ok()
        {
            return Some(format!("{n}{right}"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_found_after_loading_points_into_its_own_document() {
        let text = "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {name: a}\n\
                    spec: {baseModel: Qwen/Qwen3-0.6B, replicas: 1}\n---\n# the second\n\
                    apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {name: b}\n\
                    spec:\n  baseModel: Qwen/Qwen3-0.6B\n  replicas: 2\n";
        let (services, diags) = parse_services(&Source::new("two.yaml", text));
        assert!(diags.is_empty(), "{diags:?}");
        let replicas = [key("spec"), key("replicas")];
        let at = |s: &LoadedService| s.location(&replicas).span.map(|s| (s.start.line, s.start.col));
        assert_eq!(at(&services[1]), Some((12, 13)));
        assert_eq!(at(&services[0]), Some((4, 46)));
        // Both documents' nodes come from one parse of the source.
        assert!(Arc::ptr_eq(&services[0].nodes, &services[1].nodes));
        assert_eq!(services[1].span.start.line, 7);
    }

    #[test]
    fn a_files_services_take_the_room_they_need_and_empty_documents_none() {
        let one = "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {name: a}\n\
                   spec: {baseModel: Qwen/Qwen3-0.6B, replicas: 1}\n";
        let (services, diags) = parse_services(&Source::new("one.yaml", one));
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!((services.len(), services.capacity()), (1, 1));
        // Many empty documents and one service: room for the service alone.
        let text = format!("{}{one}", "---\n".repeat(10_000));
        let (services, diags) = parse_services(&Source::new("empty.yaml", &text));
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!((services.len(), services.capacity()), (1, 1));
    }
}
