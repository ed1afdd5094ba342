//! The one place that knows YAML text.
//!
//! Reading: [`parse_documents`] turns a text into a tree of [`Node`]s that
//! keep their source spans, under hard limits so hostile input (alias bombs,
//! deep nesting, huge scalars) fails fast with an error. Plain scalars are
//! resolved with the YAML 1.2 core schema (`on`, `yes`, `no` are strings;
//! `0755` is the integer 755). Duplicate keys are errors; merge keys (`<<`)
//! are supported.
//!
//! Writing: [`to_string`] (or [`write()`], into a caller's buffer) emits a
//! JSON value as block YAML with the keys in the value's order and every
//! string that a YAML 1.1 reader (as Kubernetes uses) could take for
//! something else quoted. The emitter (`yaml/emit.rs`) writes the bytes
//! serde-saphyr wrote before it, and is tested against it.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use saphyr_parser::{Event, Parser, ScalarStyle, ScanError, Tag};
use serde_json::Value;

use crate::base::diagnostics::{Diagnostic, Location, Pos, Source, Span};

mod emit;

/// Hard limits applied while building the tree.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Deepest nesting of mappings and sequences.
    pub max_depth: usize,
    /// Most nodes a document may have, counting every alias expansion.
    pub max_nodes: usize,
    /// Longest scalar, in bytes.
    pub max_scalar_bytes: usize,
    /// Most nodes aliases may copy in the whole text, over all its
    /// documents: the budget does not start again at `---`.
    pub max_alias_nodes: usize,
    /// Refuse scalars holding characters YAML cannot print (control
    /// characters other than tab and line breaks, DEL, C1 controls): they
    /// would reach the output, which strict readers then refuse.
    pub printable_only: bool,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_depth: 64,
            max_nodes: 100_000,
            max_scalar_bytes: 1 << 20,
            max_alias_nodes: 100_000,
            printable_only: true,
        }
    }
}

/// The first character of `text` outside YAML 1.2's printable set.
pub fn unprintable(text: &str) -> Option<char> {
    text.chars().find(|&c| {
        let n = c as u32;
        !(c == '\t'
            || c == '\n'
            || c == '\r'
            || (0x20..0x7f).contains(&n)
            || n == 0x85
            || (0xa0..0xfffe).contains(&n)
            || n >= 0x10000)
    })
}

/// Most nodes aliases may copy over all the inputs of one run: the
/// services, the platform file and a snapshot together.
pub const MAX_RUN_ALIAS_NODES: usize = 1_000_000;

/// The alias expansion budget shared by every input of one run (see
/// [`parse_stream_in`]): the service files, the platform file and the
/// snapshot, so many files cannot each spend a file's budget.
#[derive(Debug)]
pub struct RunBudget {
    used: AtomicUsize,
    /// Bytes of input read so far.
    bytes: AtomicU64,
    max_alias_nodes: usize,
    max_bytes: u64,
}

/// Most bytes all the inputs of one run may have together: the service
/// files, the platform file and a snapshot (itself up to 512 MiB).
pub const MAX_RUN_INPUT_BYTES: u64 = 1 << 30;

impl Default for RunBudget {
    fn default() -> RunBudget {
        RunBudget::with_limits(MAX_RUN_ALIAS_NODES, MAX_RUN_INPUT_BYTES)
    }
}

impl RunBudget {
    pub fn new() -> RunBudget {
        RunBudget::default()
    }

    /// A budget with other limits than a run's (for tests and embedders).
    pub fn with_limits(max_alias_nodes: usize, max_bytes: u64) -> RunBudget {
        RunBudget { used: AtomicUsize::new(0), bytes: AtomicU64::new(0), max_alias_nodes, max_bytes }
    }

    /// Counts `len` bytes read from an input: the run's limit if the inputs
    /// read so far, these included, are larger.
    pub fn take_bytes(&self, len: u64) -> Result<(), u64> {
        let total = self.bytes.fetch_add(len, Ordering::Relaxed).saturating_add(len);
        if total > self.max_bytes { Err(self.max_bytes) } else { Ok(()) }
    }

    /// Takes back what [`RunBudget::take_bytes`] and
    /// [`RunBudget::take_alias_nodes`] counted of an input that is then
    /// read after all, and counted as it is read.
    pub fn give_back(&self, bytes: u64, alias_nodes: usize) {
        let _ = self.bytes.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| Some(b.saturating_sub(bytes)));
        let _ = self.used.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| Some(u.saturating_sub(alias_nodes)));
    }

    /// Counts `count` nodes of alias expansions of an input the run does
    /// not parse (known from an earlier run): the run's limit if the
    /// expansions counted so far, these included, are more.
    pub fn take_alias_nodes(&self, count: usize) -> Result<(), usize> {
        let total = self.used.fetch_add(count, Ordering::Relaxed).saturating_add(count);
        if total > self.max_alias_nodes { Err(self.max_alias_nodes) } else { Ok(()) }
    }
}

/// A parsed YAML node with the span it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub value: NodeValue,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum NodeValue {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(Key, Node)>),
}

/// A mapping key: always text (scalar keys are taken as written).
#[derive(Clone, Debug, PartialEq)]
pub struct Key {
    pub name: String,
    pub span: Span,
}

impl Node {
    /// The entry `key` of a mapping node.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            NodeValue::Map(entries) => entries.iter().find(|(k, _)| k.name == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The key node of entry `key` of a mapping node.
    pub fn key(&self, key: &str) -> Option<&Key> {
        match &self.value {
            NodeValue::Map(entries) => entries.iter().find(|(k, _)| k.name == key).map(|(k, _)| k),
            _ => None,
        }
    }

    /// The node at a path of keys and indexes, as far as it exists.
    pub fn at_path<'a>(&'a self, path: &[PathSegment]) -> &'a Node {
        let mut node = self;
        for seg in path {
            let next = match (seg, &node.value) {
                (PathSegment::Key(k), NodeValue::Map(_)) => node.get(k),
                (PathSegment::Index(i), NodeValue::Seq(items)) => items.get(*i),
                _ => None,
            };
            match next {
                Some(n) => node = n,
                None => break,
            }
        }
        node
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            NodeValue::Str(s) => Some(s),
            _ => None,
        }
    }

    /// A short name for the node's type, for messages: "a string", "a mapping".
    pub fn type_name(&self) -> &'static str {
        match &self.value {
            NodeValue::Null => "null",
            NodeValue::Bool(_) => "a boolean",
            NodeValue::Int(_) => "an integer",
            NodeValue::Float(_) => "a number",
            NodeValue::Str(_) => "a string",
            NodeValue::Seq(_) => "a list",
            NodeValue::Map(_) => "a mapping",
        }
    }

    /// The node as a JSON value (mapping order kept).
    pub fn to_json(&self) -> Value {
        match &self.value {
            NodeValue::Null => Value::Null,
            NodeValue::Bool(b) => Value::Bool(*b),
            NodeValue::Int(i) => Value::from(*i),
            NodeValue::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
            NodeValue::Str(s) => Value::String(s.clone()),
            NodeValue::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            NodeValue::Map(entries) => {
                Value::Object(entries.iter().map(|(k, v)| (k.name.clone(), v.to_json())).collect())
            }
        }
    }

    /// [`Node::to_json`], taking the node's strings rather than copying
    /// them.
    pub fn into_json(self) -> Value {
        match self.value {
            NodeValue::Null => Value::Null,
            NodeValue::Bool(b) => Value::Bool(b),
            NodeValue::Int(i) => Value::from(i),
            NodeValue::Float(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
            NodeValue::Str(s) => Value::String(s),
            NodeValue::Seq(items) => Value::Array(items.into_iter().map(Node::into_json).collect()),
            NodeValue::Map(entries) => {
                Value::Object(entries.into_iter().map(|(k, v)| (k.name, v.into_json())).collect())
            }
        }
    }

    fn count(&self) -> usize {
        1 + match &self.value {
            NodeValue::Seq(items) => items.iter().map(Node::count).sum(),
            NodeValue::Map(entries) => entries.iter().map(|(_, v)| 1 + v.count()).sum(),
            _ => 0,
        }
    }
}

/// One step of a path into a document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathSegment {
    Key(String),
    Index(usize),
}

/// One step of a path into a document, borrowing its key: what a walk
/// over a tree keeps while it goes, naming the path only where it reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

impl PathSegment {
    /// This step, borrowed.
    pub fn step(&self) -> Step<'_> {
        match self {
            PathSegment::Key(k) => Step::Key(k),
            PathSegment::Index(i) => Step::Index(*i),
        }
    }
}

/// Formats a path the way users write it: `spec.containers[0].image`.
pub fn path_string(path: &[PathSegment]) -> String {
    steps_string(path.iter().map(PathSegment::step))
}

/// [`path_string`] of borrowed steps.
pub fn steps_string<'a>(path: impl IntoIterator<Item = Step<'a>>) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    for step in path {
        match step {
            Step::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Step::Index(i) => {
                let _ = write!(s, "[{i}]");
            }
        }
    }
    s
}

/// A document of a stream: its root node, or `None` for an empty document.
pub type Document = Option<Node>;

/// One document of a stream, with the errors found in it.
#[derive(Debug)]
pub struct ParsedDocument {
    pub root: Document,
    /// Problems that spoil this document only (a duplicate key).
    pub errors: Vec<Diagnostic>,
}

/// Parses every document of `source`, strictly: the first problem is the error.
pub fn parse_documents(source: &Arc<Source>, limits: Limits) -> Result<Vec<Document>, Diagnostic> {
    strict(parse_stream(source, limits))
}

/// [`parse_documents`], with alias expansions also counted against `run`,
/// the budget of every input of the run.
pub fn parse_documents_in(source: &Arc<Source>, limits: Limits, run: &RunBudget) -> Result<Vec<Document>, Diagnostic> {
    strict(parse_stream_in(source, limits, run))
}

fn strict((docs, fatal): (Vec<ParsedDocument>, Option<Diagnostic>)) -> Result<Vec<Document>, Diagnostic> {
    if let Some(e) = fatal {
        return Err(e);
    }
    let mut out = Vec::with_capacity(docs.len());
    for mut d in docs {
        if !d.errors.is_empty() {
            return Err(d.errors.remove(0));
        }
        out.push(d.root);
    }
    Ok(out)
}

/// Parses every document of `source` as far as possible: the documents
/// before a syntax error, each with its own problems, and the syntax error
/// (after which nothing can be trusted) if there is one.
pub fn parse_stream(source: &Arc<Source>, limits: Limits) -> (Vec<ParsedDocument>, Option<Diagnostic>) {
    let (docs, fatal, _, _) = parse_text(source, &source.text, limits, None);
    (docs, fatal)
}

/// [`parse_stream`], with alias expansions also counted against `run`, the
/// budget of every file of the run.
pub fn parse_stream_in(
    source: &Arc<Source>,
    limits: Limits,
    run: &RunBudget,
) -> (Vec<ParsedDocument>, Option<Diagnostic>) {
    let (docs, fatal, _, _) = parse_text(source, &source.text, limits, Some(run));
    (docs, fatal)
}

/// [`parse_stream_in`], with how many nodes the aliases of the text
/// expanded to (what it took of `run`'s budget).
pub fn parse_stream_counted(
    source: &Arc<Source>,
    limits: Limits,
    run: &RunBudget,
) -> (Vec<ParsedDocument>, Option<Diagnostic>, usize) {
    let (docs, fatal, alias_nodes, _) = parse_text(source, &source.text, limits, Some(run));
    (docs, fatal, alias_nodes)
}

/// Parses `text`, the whole of `source`'s text or a piece of it (whose
/// spans are then counted from the piece's start): its documents, the
/// syntax error that stopped it, the nodes its aliases copied and the
/// nodes of its last document.
fn parse_text(
    source: &Arc<Source>,
    text: &str,
    limits: Limits,
    run: Option<&RunBudget>,
) -> (Vec<ParsedDocument>, Option<Diagnostic>, usize, usize) {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut builder = Builder {
        source,
        limits,
        run,
        alias_nodes: 0,
        stack: Vec::new(),
        anchors: HashMap::new(),
        nodes: 0,
        docs: Vec::new(),
        errors: Vec::new(),
    };
    for event in Parser::new_from_str(text) {
        let result = match event {
            Ok((event, span)) => builder.event(event, convert_span(&span)),
            Err(e) => Err(scan_error(source, &e)),
        };
        if let Err(e) = result {
            return (builder.docs, Some(e), builder.alias_nodes, builder.nodes);
        }
    }
    (builder.docs, None, builder.alias_nodes, builder.nodes)
}

/// The documents of a large stream as JSON values, and the alias
/// expansions charged for them to the run's budget (what to give back,
/// [`RunBudget::give_back`], if the text is parsed again after all).
#[derive(Debug)]
pub struct Values {
    /// Every non-empty document's value, in the text's order.
    pub values: Vec<Value>,
    pub alias_nodes: usize,
}

/// Texts are cut into pieces of about this many bytes by [`parse_values_in`].
const PIECE_BYTES: usize = 1 << 20;

/// The documents of `source` as JSON values, parsed a piece at a time on
/// every core: a snapshot of a fleet is tens of thousands of documents in
/// tens of megabytes, which one core takes seconds to read. `None` where
/// the pieces cannot stand for the whole text: then the caller parses it
/// whole ([`parse_documents_in`]), for its diagnostics and their positions.
///
/// Each piece is a run of whole documents, cut where a line starts with a
/// document start marker (`---` and then white space or the end), which
/// YAML does not allow inside a document's content (YAML 1.2.2, 9.1.4:
/// `c-forbidden`). What the whole text's parse holds to holds for them:
/// - each document's limits (nodes, depth, scalar size) and its anchors
///   start again at every document, in a piece as in the whole;
/// - the text's alias budget is one budget shared by the pieces, so their
///   expansions together meet the text's limit, as the whole's would;
/// - the run's budget is charged once, with the pieces' sum.
///
/// `None` for a text with a directive (a line starting with `%`, which
/// applies to the document after it), and for any error or problem in a
/// piece (the text's budget spent included): nothing but the values is
/// kept of a piece.
pub fn parse_values_in(source: &Arc<Source>, limits: Limits, run: &RunBudget) -> Option<Values> {
    values_in_pieces(source, limits, run, PIECE_BYTES)
}

fn values_in_pieces(source: &Arc<Source>, limits: Limits, run: &RunBudget, piece_bytes: usize) -> Option<Values> {
    let text = source.text.as_str();
    if text.starts_with('%') || text.contains("\n%") {
        return None;
    }
    // The text's own alias budget, which the pieces share: its limit is
    // the text's, and its bytes are not counted (the run counted them).
    let file = RunBudget::with_limits(limits.max_alias_nodes, u64::MAX);
    let documents = pieces(text, piece_bytes);
    // One document: a List's items may still be cut.
    let list = if documents.len() == 1 { list_pieces(text, piece_bytes) } else { None };
    let values = match list {
        Some(list) => vec![list.value(source, limits, &file)?],
        None => parse_pieces(source, &documents, limits, &file)?.into_iter().flat_map(|(values, _)| values).collect(),
    };
    let alias_nodes = file.used.load(Ordering::Relaxed);
    if run.take_alias_nodes(alias_nodes).is_err() {
        run.give_back(0, alias_nodes);
        return None;
    }
    Some(Values { values, alias_nodes })
}

/// Each piece's documents as values, with the nodes of its last document,
/// parsed on every core with `limits` and the text's alias budget `file`;
/// `None` for any error or problem in any piece.
fn parse_pieces(
    source: &Arc<Source>,
    pieces: &[&str],
    limits: Limits,
    file: &RunBudget,
) -> Option<Vec<(Vec<Value>, usize)>> {
    use rayon::prelude::*;
    use std::sync::atomic::AtomicBool;
    let failed = AtomicBool::new(false);
    pieces
        .par_iter()
        .map(|piece| {
            if failed.load(Ordering::Relaxed) {
                return None;
            }
            let (docs, fatal, _, nodes) = parse_text(source, piece, limits, Some(file));
            if fatal.is_some() || docs.iter().any(|d| !d.errors.is_empty()) {
                failed.store(true, Ordering::Relaxed);
                return None;
            }
            // Each document's nodes dropped as its value is made.
            Some((docs.into_iter().filter_map(|d| d.root).map(Node::into_json).collect(), nodes))
        })
        .collect()
}

/// A List written as `kubectl get -o yaml` writes it: its `items:` key at
/// the start of a line, alone on it, and each item a `- ` line at the start
/// of one, its own lines indented (a line at the start of a line is
/// either an item's dash or the next key: YAML indents an item's content
/// past its dash, 8.2.1). The items are cut into pieces of whole items.
struct ListPieces<'t> {
    /// The document's lines before the `items:` line, and after its items.
    head: &'t str,
    tail: &'t str,
    /// The items' lines, each piece a block sequence of whole items.
    items: Vec<&'t str>,
}

impl ListPieces<'_> {
    /// The List's value: the rest's mapping (which must not have its own
    /// `items`) with the items of every piece. Each piece is parsed one
    /// level shallower than the items lie in the whole, and their nodes
    /// together, with the rest's, must stay within the whole document's
    /// limit.
    fn value(self, source: &Arc<Source>, limits: Limits, file: &RunBudget) -> Option<Value> {
        // The lines before the items and those after them each stand on
        // their own (no quoted scalar or flow collection runs across a
        // cut), so the cuts are where the whole's items begin and end.
        let alone = |text: &str| {
            let (docs, fatal, _, _) = parse_text(source, text, limits, None);
            fatal.is_none() && docs.iter().all(|d| d.errors.is_empty())
        };
        if !alone(self.head) || !alone(self.tail) {
            return None;
        }
        let (rest, _, _, rest_nodes) = parse_text(source, &format!("{}{}", self.head, self.tail), limits, Some(file));
        let [ParsedDocument { root: Some(rest), errors }] = <[ParsedDocument; 1]>::try_from(rest).ok()? else {
            return None;
        };
        if !errors.is_empty() || rest.get("items").is_some() {
            return None;
        }
        let Value::Object(mut list) = rest.into_json() else { return None };
        let shallower = Limits { max_depth: limits.max_depth.checked_sub(1)?, ..limits };
        let pieces = parse_pieces(source, &self.items, shallower, file)?;
        // The whole's count: the rest's nodes, the `items` key and its
        // sequence, and the items (each piece counts a sequence of its own).
        let nodes = pieces.iter().map(|(_, n)| n - 1).sum::<usize>() + rest_nodes + 2;
        if nodes > limits.max_nodes {
            return None;
        }
        let mut items = Vec::new();
        for (values, _) in pieces {
            let [Value::Array(piece)] = <[Value; 1]>::try_from(values).ok()? else { return None };
            items.extend(piece);
        }
        list.insert("items".to_string(), Value::Array(items));
        Some(Value::Object(list))
    }
}

/// The pieces of `text`, one document, if it is a List as
/// [`ListPieces`] describes with items enough for two pieces of at least
/// `piece_bytes` each.
fn list_pieces(text: &str, piece_bytes: usize) -> Option<ListPieces<'_>> {
    let key = if text.starts_with("items:") { 0 } else { text.find("\nitems:")? + 1 };
    let first = text[key..].find('\n').map_or(text.len(), |i| key + i + 1);
    let after_key = text[key + "items:".len()..first].trim();
    if !(after_key.is_empty() || after_key.starts_with('#')) {
        return None;
    }
    let mut items = Vec::new();
    let (mut start, mut at) = (first, first);
    for line in text[first..].split_inclusive('\n') {
        let dash = line.starts_with("- ") || line.trim_end() == "-";
        if !(dash || line.starts_with(' ') || line.starts_with('#') || line.trim().is_empty()) {
            break;
        }
        if dash && at - start >= piece_bytes {
            items.push(&text[start..at]);
            start = at;
        }
        at += line.len();
    }
    items.push(&text[start..at]);
    if items.len() < 2 {
        return None;
    }
    Some(ListPieces { head: &text[..key], tail: &text[at..], items })
}

/// `text` cut into runs of whole documents of at least `piece_bytes` each
/// (the last one may be shorter), each but the first starting with a line
/// that is a document start marker.
fn pieces(text: &str, piece_bytes: usize) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut from = 0;
    while let Some(found) = text[from..].find("\n---") {
        // The marker's line starts after the newline.
        let at = from + found + 1;
        from = at + 3;
        let marker = matches!(text.as_bytes().get(from), None | Some(b' ' | b'\t' | b'\r' | b'\n'));
        if marker && at - start >= piece_bytes {
            pieces.push(&text[start..at]);
            start = at;
        }
    }
    pieces.push(&text[start..]);
    pieces
}

fn convert_span(span: &saphyr_parser::Span) -> Span {
    Span {
        start: Pos { line: span.start.line(), col: span.start.col() + 1 },
        end: Pos { line: span.end.line(), col: span.end.col() + 1 },
    }
}

fn scan_error(source: &Arc<Source>, e: &ScanError) -> Diagnostic {
    let m = e.marker();
    let info = e.info();
    let d =
        Diagnostic::error(format!("invalid YAML: {info}")).at(Location::span(source, Span::at(m.line(), m.col() + 1)));
    match scan_hint(info, source.text.lines().nth(m.line().saturating_sub(1)).unwrap_or_default()) {
        Some(h) => d.help(h),
        None => d,
    }
}

/// A hint for the parser's messages that name a symptom, not the cause.
fn scan_hint(info: &str, line: &str) -> Option<&'static str> {
    if info.contains("unprintable") {
        return Some("remove the character here: it is not text (a NUL byte or another control character)");
    }
    if line.starts_with([' ', '\t']) && line.trim_start_matches(' ').starts_with('\t')
        || info.contains("tabs")
        || info.contains(" tab")
    {
        return Some("indent with spaces: YAML does not allow tabs for indentation");
    }
    if info.contains("quoted scalar") {
        return Some("is a quote left unclosed?");
    }
    if info.contains("mapping values are not allowed") {
        return Some("check this line's indentation against the line above; a value that contains \": \" needs quotes");
    }
    if info.contains("did not find expected key") || info.contains("did not find expected '-'") {
        return Some("check the indentation: the keys of one mapping must start in the same column");
    }
    if info.contains("flow") || info.contains("did not find expected ',' or") {
        return Some("is a '{' or '[' left unclosed above?");
    }
    None
}

enum Frame {
    Seq { items: Vec<Node>, start: Span, anchor: usize },
    Map { entries: Vec<(Key, Node)>, pending_key: Option<Node>, start: Span, anchor: usize, merges: Vec<(Span, Node)> },
}

struct Builder<'s> {
    source: &'s Arc<Source>,
    limits: Limits,
    run: Option<&'s RunBudget>,
    /// Nodes copied by aliases so far, over every document of the text.
    alias_nodes: usize,
    stack: Vec<Frame>,
    anchors: HashMap<usize, (Node, usize)>,
    nodes: usize,
    docs: Vec<ParsedDocument>,
    /// Problems of the current document.
    errors: Vec<Diagnostic>,
}

impl Builder<'_> {
    fn err(&self, span: Span, msg: impl Into<String>) -> Diagnostic {
        Diagnostic::error(msg).at(Location::span(self.source, span))
    }

    fn event(&mut self, event: Event<'_>, span: Span) -> Result<(), Diagnostic> {
        match event {
            Event::StreamStart | Event::StreamEnd | Event::Nothing | Event::DocumentEnd => Ok(()),
            Event::DocumentStart(_) => {
                self.anchors.clear();
                self.nodes = 0;
                self.errors.clear();
                Ok(())
            }
            Event::Alias(id) => {
                let Some(count) = self.anchors.get(&id).map(|(_, c)| *c) else {
                    return Err(self.err(span, "alias refers to an anchor that is not defined before it"));
                };
                self.alias_budget(count, span)?;
                self.budget(count, span)?;
                let mut node = self.anchors[&id].0.clone();
                node.span = span;
                self.finish(node)
            }
            Event::Scalar(text, style, anchor, tag) => {
                if text.len() > self.limits.max_scalar_bytes {
                    return Err(self.err(
                        span,
                        format!(
                            "scalar of {} bytes is longer than the limit of {} bytes",
                            text.len(),
                            self.limits.max_scalar_bytes
                        ),
                    ));
                }
                if let Some(c) = self.limits.printable_only.then(|| unprintable(&text)).flatten() {
                    // Spoils this document only: the others are still checked.
                    let e = self
                        .err(
                            span,
                            format!(
                                "this value holds the control character U+{:04X}, which YAML output cannot show",
                                c as u32
                            ),
                        )
                        .help("remove it: isvc copies values into the output, and kubectl refuses such characters");
                    self.errors.push(e);
                }
                self.budget(1, span)?;
                let value = resolve_scalar(&text, style, tag.as_deref()).map_err(|m| self.err(span, m))?;
                let node = Node { value, span };
                if anchor > 0 {
                    self.anchors.insert(anchor, (node.clone(), 1));
                }
                self.finish(node)
            }
            Event::SequenceStart(anchor, tag) => {
                self.validate_collection_tag(tag.as_deref(), "seq", span)?;
                self.push(Frame::Seq { items: Vec::new(), start: span, anchor }, span)
            }
            Event::MappingStart(anchor, tag) => {
                self.validate_collection_tag(tag.as_deref(), "map", span)?;
                self.push(
                    Frame::Map { entries: Vec::new(), pending_key: None, start: span, anchor, merges: Vec::new() },
                    span,
                )
            }
            Event::SequenceEnd => match self.stack.pop() {
                Some(Frame::Seq { items, start, anchor }) => {
                    let node = Node { value: NodeValue::Seq(items), span: Span { start: start.start, end: span.end } };
                    self.anchor(anchor, &node);
                    self.finish(node)
                }
                _ => Err(self.err(span, "unbalanced sequence end")),
            },
            Event::MappingEnd => match self.stack.pop() {
                Some(Frame::Map { mut entries, start, anchor, merges, .. }) => {
                    for (at, merge) in merges {
                        merge_into(&mut entries, merge).map_err(|m| self.err(at, m))?;
                    }
                    let node =
                        Node { value: NodeValue::Map(entries), span: Span { start: start.start, end: span.end } };
                    self.anchor(anchor, &node);
                    self.finish(node)
                }
                _ => Err(self.err(span, "unbalanced mapping end")),
            },
        }
    }

    fn validate_collection_tag(&self, tag: Option<&Tag>, expected: &str, span: Span) -> Result<(), Diagnostic> {
        match tag {
            None => Ok(()),
            Some(t) if t.is_yaml_core_schema() && t.suffix == expected => Ok(()),
            Some(t) => Err(self.err(span, format!("unsupported tag {t}: tags are not used in these files"))),
        }
    }

    fn budget(&mut self, count: usize, span: Span) -> Result<(), Diagnostic> {
        self.nodes = self.nodes.saturating_add(count);
        if self.nodes > self.limits.max_nodes {
            return Err(self.err(
                span,
                format!(
                    "document has more than {} nodes (counting alias expansions); refusing to expand it further",
                    self.limits.max_nodes
                ),
            ));
        }
        Ok(())
    }

    /// Counts `count` nodes copied by an alias against the text's and the
    /// run's alias budgets, which never start again at `---`.
    fn alias_budget(&mut self, count: usize, span: Span) -> Result<(), Diagnostic> {
        self.alias_nodes = self.alias_nodes.saturating_add(count);
        let help = "an alias (*name) copies its anchor's whole subtree; write the values out, or use fewer aliases";
        if self.alias_nodes > self.limits.max_alias_nodes {
            return Err(self
                .err(
                    span,
                    format!(
                        "aliases in this file expand to more than {} nodes (over all its documents); refusing to expand them further",
                        self.limits.max_alias_nodes
                    ),
                )
                .help(help));
        }
        if let Some(run) = self.run {
            let used = run.used.fetch_add(count, Ordering::Relaxed).saturating_add(count);
            if used > run.max_alias_nodes {
                return Err(self
                    .err(
                        span,
                        format!(
                            "aliases in the input files expand to more than {} nodes in all; refusing to expand them further",
                            run.max_alias_nodes
                        ),
                    )
                    .help(help));
            }
        }
        Ok(())
    }

    fn push(&mut self, frame: Frame, span: Span) -> Result<(), Diagnostic> {
        if self.stack.len() >= self.limits.max_depth {
            return Err(self.err(span, format!("nesting is deeper than the limit of {} levels", self.limits.max_depth)));
        }
        self.budget(1, span)?;
        self.stack.push(frame);
        Ok(())
    }

    fn anchor(&mut self, anchor: usize, node: &Node) {
        if anchor > 0 {
            self.anchors.insert(anchor, (node.clone(), node.count()));
        }
    }

    /// Hands a finished node to its parent, or ends the document.
    fn finish(&mut self, node: Node) -> Result<(), Diagnostic> {
        let source = self.source;
        match self.stack.last_mut() {
            None => {
                let doc = match node.value {
                    NodeValue::Null if node_is_empty_doc(&node) => None,
                    _ => Some(node),
                };
                self.docs.push(ParsedDocument { root: doc, errors: std::mem::take(&mut self.errors) });
                Ok(())
            }
            Some(Frame::Seq { items, .. }) => {
                items.push(node);
                Ok(())
            }
            Some(Frame::Map { entries, pending_key, merges, .. }) => match pending_key.take() {
                None => {
                    *pending_key = Some(node);
                    Ok(())
                }
                Some(key) => {
                    let name = match &key.value {
                        NodeValue::Str(s) => s.clone(),
                        NodeValue::Null => String::new(),
                        NodeValue::Bool(b) => b.to_string(),
                        NodeValue::Int(i) => i.to_string(),
                        NodeValue::Float(f) => f.to_string(),
                        NodeValue::Seq(_) | NodeValue::Map(_) => {
                            return Err(Diagnostic::error("mapping keys must be plain text, not lists or mappings")
                                .at(Location::span(source, key.span)));
                        }
                    };
                    if name == "<<" && matches!(key.value, NodeValue::Str(_)) && is_plain_merge(&key) {
                        merges.push((key.span, node));
                        return Ok(());
                    }
                    if let Some((first, _)) = entries.iter().find(|(k, _)| k.name == name) {
                        // The document is spoilt, but the rest of the stream
                        // can still be read and checked.
                        self.errors.push(
                            Diagnostic::error(format!("duplicate key \"{name}\""))
                                .at(Location::span(source, key.span))
                                .related(Location::span(source, first.span), "first defined here")
                                .help("remove one of the two entries"),
                        );
                        return Ok(());
                    }
                    entries.push((Key { name, span: key.span }, node));
                    Ok(())
                }
            },
        }
    }
}

fn node_is_empty_doc(node: &Node) -> bool {
    // An empty document parses as a plain empty scalar.
    node.span.start == node.span.end || matches!(node.value, NodeValue::Null)
}

fn is_plain_merge(_key: &Node) -> bool {
    // Quoted "<<" resolves to a string too; the parser does not tell us the
    // style here, so a quoted "<<" is treated as a merge as well. Kubernetes
    // tooling does the same.
    true
}

/// Applies a merge key's value: entries already present win.
fn merge_into(entries: &mut Vec<(Key, Node)>, merge: Node) -> Result<(), String> {
    let sources = match merge.value {
        NodeValue::Map(_) => vec![merge],
        NodeValue::Seq(items) => items,
        _ => return Err("a merge key (<<) needs a mapping or a list of mappings".to_string()),
    };
    for source in sources {
        let NodeValue::Map(more) = source.value else {
            return Err("a merge key (<<) needs a mapping or a list of mappings".to_string());
        };
        for (k, v) in more {
            if !entries.iter().any(|(e, _)| e.name == k.name) {
                entries.push((k, v));
            }
        }
    }
    Ok(())
}

/// Resolves a scalar with the YAML 1.2 core schema.
fn resolve_scalar(text: &str, style: ScalarStyle, tag: Option<&Tag>) -> Result<NodeValue, String> {
    if let Some(tag) = tag {
        if !tag.is_yaml_core_schema() {
            return Err(format!("unsupported tag {tag}: tags are not used in these files"));
        }
        return match tag.suffix.as_str() {
            "str" => Ok(NodeValue::Str(text.to_string())),
            "null" => Ok(NodeValue::Null),
            "bool" => match resolve_plain(text) {
                v @ NodeValue::Bool(_) => Ok(v),
                _ => Err(format!("\"{text}\" is not a boolean")),
            },
            "int" => match resolve_plain(text) {
                v @ NodeValue::Int(_) => Ok(v),
                _ => Err(format!("\"{text}\" is not an integer")),
            },
            "float" => match resolve_plain(text) {
                NodeValue::Int(i) => Ok(NodeValue::Float(i as f64)),
                v @ NodeValue::Float(_) => Ok(v),
                _ => Err(format!("\"{text}\" is not a number")),
            },
            other => Err(format!("unsupported tag !!{other}: tags are not used in these files")),
        };
    }
    Ok(match style {
        ScalarStyle::Plain => resolve_plain(text),
        _ => NodeValue::Str(text.to_string()),
    })
}

fn resolve_plain(text: &str) -> NodeValue {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return NodeValue::Null,
        "true" | "True" | "TRUE" => return NodeValue::Bool(true),
        "false" | "False" | "FALSE" => return NodeValue::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return NodeValue::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return NodeValue::Float(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return NodeValue::Float(f64::NAN),
        _ => {}
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return match text.parse::<i64>() {
            Ok(i) => NodeValue::Int(i),
            Err(_) => text.parse::<f64>().map_or_else(|_| NodeValue::Str(text.to_string()), NodeValue::Float),
        };
    }
    // The core schema's `0o [0-7]+` and `0x [0-9a-fA-F]+` (YAML 1.2.2,
    // 10.3.2 Tag Resolution): digits only, where `from_str_radix` would also
    // take a sign (`0x-9` is a string, not -9).
    if let Some(oct) = text.strip_prefix("0o").filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        && let Ok(i) = i64::from_str_radix(oct, 8)
    {
        return NodeValue::Int(i);
    }
    if let Some(hex) = text.strip_prefix("0x").filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_hexdigit()))
        && let Ok(i) = i64::from_str_radix(hex, 16)
    {
        return NodeValue::Int(i);
    }
    if is_core_float(text)
        && let Ok(f) = text.parse::<f64>()
    {
        return NodeValue::Float(f);
    }
    NodeValue::Str(text.to_string())
}

/// `[-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?`
fn is_core_float(text: &str) -> bool {
    let b = text.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'-' | b'+')));
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let int_digits = i - int_start;
    let mut frac_digits = 0;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let s = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        frac_digits = i - s;
    }
    if int_digits == 0 && frac_digits == 0 {
        return false;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
            i += 1;
        }
        let s = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == s {
            return false;
        }
    }
    i == b.len()
}

/// Emits `value` as one block-style YAML document (no `---`), keys in the
/// value's order. Strings that could read as another type are quoted.
pub fn to_string(value: &Value) -> String {
    to_string_after("", value)
}

/// `prefix` followed by [`to_string`] of `value`, in a string of exactly
/// that length: the text is written into a buffer kept by each thread
/// ([`with_scratch`]) and copied once, which costs less than a walk of the
/// value to guess the length, or a string grown by doubling and left with
/// unused capacity.
pub fn to_string_after(prefix: &str, value: &Value) -> String {
    with_scratch(|buf| {
        buf.push_str(prefix);
        write(value, buf);
        String::from(buf.as_str())
    })
}

/// What `make` makes of an empty buffer that each thread keeps for its next
/// text (a fresh one, should `make` itself ask for it), so writing texts
/// one after another allocates once per thread. A buffer that grew past 1
/// MiB (a large text) is not kept.
pub fn with_scratch<R>(make: impl FnOnce(&mut String) -> R) -> R {
    const KEEP: usize = 1 << 20;
    thread_local! {
        static SCRATCH: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
    }
    SCRATCH.with(|scratch| {
        let mut fresh = String::new();
        let mut kept = scratch.try_borrow_mut();
        let buf = match kept.as_deref_mut() {
            Ok(kept) => kept,
            Err(_) => &mut fresh,
        };
        buf.clear();
        let made = make(buf);
        if buf.capacity() > KEEP {
            *buf = String::new();
        }
        made
    })
}

/// [`to_string`], appended to `out`.
pub fn write(value: &Value, out: &mut String) {
    emit::document(value, out);
}

/// A scalar as text for messages: strings quoted, others as written.
pub fn describe(value: &Value) -> Cow<'static, str> {
    match value {
        Value::String(s) => Cow::Owned(format!("{s:?}")),
        other => Cow::Owned(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<Document>, Diagnostic> {
        parse_documents(&Source::new("t.yaml", text), Limits::default())
    }

    fn one(text: &str) -> Value {
        parse(text).unwrap().into_iter().flatten().next().unwrap().to_json()
    }

    #[test]
    fn signs_after_a_radix_prefix_make_strings() {
        let v = one("a: 0x-9\nb: 0x+f\nc: 0o-7\nd: 0o+7\ne: 0x1F\nf: 0o17\ng: 0x\n");
        for k in ["a", "b", "c", "d", "g"] {
            assert!(v[k].is_string(), "{k}: {}", v[k]);
        }
        assert_eq!((v["e"].as_i64(), v["f"].as_i64()), (Some(31), Some(15)));
    }

    #[test]
    fn core_schema_scalars() {
        let v = one("a: on\nb: no\nc: 0755\nd: 0x1f\ne: 1.5\nf: ~\ng: True\nh: '3'\ni: 1e3\nj: 12:30\n");
        assert_eq!(
            v,
            serde_json::json!({"a": "on", "b": "no", "c": 755, "d": 31, "e": 1.5, "f": null, "g": true, "h": "3", "i": 1000.0, "j": "12:30"})
        );
    }

    #[test]
    fn duplicate_keys_are_errors_with_both_positions() {
        let e = parse("a: 1\nb: 2\na: 3\n").unwrap_err();
        assert_eq!(e.message, "duplicate key \"a\"");
        assert_eq!(e.location.unwrap().span.unwrap().start, Pos { line: 3, col: 1 });
        assert_eq!(e.related[0].0.span.unwrap().start, Pos { line: 1, col: 1 });
    }

    #[test]
    fn merge_keys_fill_missing_entries() {
        let v = one("base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  y: 3\n");
        assert_eq!(v["m"], serde_json::json!({"y": 3, "x": 1}));
    }

    #[test]
    fn alias_bomb_fails_fast() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let p = i - 1;
            text.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        let e = parse(&text).unwrap_err();
        assert!(e.message.contains("more than 100000 nodes"), "{}", e.message);
    }

    #[test]
    fn the_alias_budget_does_not_start_again_at_a_document_start() {
        // Each document expands 12 330 nodes, far under the per-document limit.
        let doc = "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n";
        let text = [doc; 11].join("---\n");
        let e = parse(&text).unwrap_err();
        assert!(e.message.starts_with("aliases in this file expand to more than 100000 nodes"), "{}", e.message);
        assert!(parse(&[doc; 8].join("---\n")).is_ok());
        // The run's budget is shared by every file.
        let run = RunBudget::new();
        let mut failed = None;
        for i in 0..20 {
            let src = Source::new(format!("f{i}.yaml"), [doc; 8].join("---\n"));
            if let (_, Some(e)) = parse_stream_in(&src, Limits::default(), &run) {
                failed = Some((i, e));
                break;
            }
        }
        let (i, e) = failed.expect("the run budget ends expansion");
        assert_eq!(i, 10);
        assert!(e.message.starts_with("aliases in the input files expand to more than 1000000 nodes"), "{}", e.message);
    }

    #[test]
    fn deep_nesting_fails_fast() {
        let text = "[".repeat(100) + &"]".repeat(100);
        let e = parse(&text).unwrap_err();
        assert!(e.message.contains("nesting is deeper than the limit of 64"), "{}", e.message);
        // Far deeper input is stopped by the parser itself.
        let text = "[".repeat(100_000) + &"]".repeat(100_000);
        assert!(parse(&text).is_err());
    }

    #[test]
    fn empty_documents_are_none() {
        let docs = parse("---\n# only a comment\n---\na: 1\n").unwrap();
        assert_eq!(docs.len(), 2);
        assert!(docs[0].is_none());
        assert!(docs[1].is_some());
        assert!(parse("").unwrap().is_empty());
    }

    #[test]
    fn bom_and_crlf_are_accepted() {
        assert_eq!(one("\u{feff}a: 1\r\nb: x\r\n"), serde_json::json!({"a": 1, "b": "x"}));
    }

    #[test]
    fn emitted_strings_survive_a_yaml_1_1_reader() {
        let v =
            serde_json::json!({"a": "on", "b": "0755", "c": "1_000", "d": "12:30", "e": "", "f": "x: y", "g": "true"});
        let text = to_string(&v);
        for line in text.lines() {
            let (_, rhs) = line.split_once(": ").unwrap();
            assert!(rhs.starts_with('"') || rhs.starts_with('\''), "{line}");
        }
        assert_eq!(one(&text), v);
    }

    #[test]
    fn a_text_is_cut_only_where_a_line_is_a_document_start_marker() {
        let text = "a: 1\n---\nb: 2\n--- \nc: 3\n---x\n----\n---\r\nd\n";
        assert_eq!(pieces(text, 1), ["a: 1\n", "---\nb: 2\n", "--- \nc: 3\n---x\n----\n", "---\r\nd\n"]);
        // Each piece is at least as long as asked, the last one aside.
        assert_eq!(pieces(text, 12), ["a: 1\n---\nb: 2\n", "--- \nc: 3\n---x\n----\n", "---\r\nd\n"]);
        assert_eq!(pieces(text, 1000), [text]);
        assert_eq!(pieces("a\n---", 1), ["a\n", "---"]);
    }

    fn whole(source: &Arc<Source>, limits: Limits) -> Vec<Value> {
        let docs = parse_documents(source, limits).unwrap();
        docs.into_iter().flatten().map(|n| n.to_json()).collect()
    }

    #[test]
    fn a_stream_read_in_pieces_has_the_values_of_the_whole() {
        let text = "\u{feff}# a comment\na: &x {b: [1, 2.5, null, true, \"s\"]}\nc: *x\n\
                    --- |\n  block\n  ---not a marker\n...\n---\n---\n\
                    - &y {<<: {k: v}, l: 0x1f}\n- *y\n--- # empty, then a plain scalar\n--- plain\n\
                    ---\nkey: 'single\n  quoted'\n";
        let source = Source::new("s.yaml", text);
        let expected = whole(&source, Limits::default());
        assert_eq!(expected.len(), 5);
        for piece_bytes in [1, 10, 40, 1 << 20] {
            let run = RunBudget::new();
            let got = values_in_pieces(&source, Limits::default(), &run, piece_bytes).unwrap();
            assert_eq!(got.values, expected, "pieces of {piece_bytes} bytes");
            // The aliases' expansions, charged to the run once, as the whole's.
            let counted = RunBudget::new();
            let (_, _, aliases) = parse_stream_counted(&source, Limits::default(), &counted);
            assert_eq!((got.alias_nodes, run.used.load(Ordering::Relaxed)), (aliases, aliases));
        }
    }

    #[test]
    fn a_stream_the_pieces_cannot_stand_for_is_left_to_the_whole_parse() {
        let none = |text: &str, limits: Limits| {
            let run = RunBudget::new();
            let got = values_in_pieces(&Source::new("s.yaml", text), limits, &run, 1);
            // Nothing is left charged to the run.
            assert_eq!(run.used.load(Ordering::Relaxed), 0, "{text}");
            got.is_none()
        };
        let limits = Limits::default();
        assert!(!none("a: 1\n---\nb: 2\n", limits));
        // A directive applies to the document after it.
        assert!(none("%YAML 1.2\n---\na: 1\n", limits));
        assert!(none("a: 1\n...\n%YAML 1.2\n---\nb: 2\n", limits));
        // A syntax error, or a problem of one document, in a later piece.
        assert!(none("a: 1\n---\nb: [\n", limits));
        assert!(none("a: 1\n---\nb: 1\nb: 2\n", limits));
        // An alias defined in an earlier document: anchors start again at
        // every document, in a piece as in the whole.
        assert!(none("a: &x 1\n---\nb: *x\n", limits));
        // The text's alias budget is the pieces' together: each document's
        // aliases are within it, all of them are not.
        let doc = "a: &x [1, 2, 3, 4, 5, 6, 7, 8, 9]\nb: [*x, *x, *x, *x]\n";
        let text = format!("{doc}---\n{doc}---\n{doc}");
        let tight = Limits { max_alias_nodes: 70, ..Limits::default() };
        assert!(parse_documents(&Source::new("s.yaml", text.as_str()), tight).is_err());
        assert!(none(&text, tight));
        let run = RunBudget::new();
        assert!(values_in_pieces(&Source::new("s.yaml", doc), tight, &run, 1).is_some());
    }

    #[test]
    fn the_runs_alias_budget_is_charged_once_with_the_pieces_sum() {
        let doc = "a: &x [1, 2, 3]\nb: [*x, *x]\n";
        let text = format!("{doc}---\n{doc}");
        let source = Source::new("s.yaml", text.as_str());
        let (_, _, aliases) = parse_stream_counted(&source, Limits::default(), &RunBudget::new());
        // Room for one document's aliases, not for both.
        let run = RunBudget::with_limits(aliases - 1, u64::MAX);
        assert!(values_in_pieces(&source, Limits::default(), &run, 1).is_none());
        assert_eq!(run.used.load(Ordering::Relaxed), 0);
        let run = RunBudget::with_limits(aliases, u64::MAX);
        assert_eq!(values_in_pieces(&source, Limits::default(), &run, 1).unwrap().alias_nodes, aliases);
    }

    const LIST: &str = "apiVersion: v1\nitems:   # the objects\n- kind: A\n  metadata: {name: a}\n  data: |\n    x\n    - y\n\
                        # between items\n-\n  kind: B\n\n- kind: C\n  spec: [1, &z {k: v}, *z]\nkind: List\nmetadata:\n  resourceVersion: \"\"\n";

    #[test]
    fn a_list_is_cut_between_its_items() {
        let list = list_pieces(LIST, 1).unwrap();
        assert_eq!((list.head, list.tail), ("apiVersion: v1\n", "kind: List\nmetadata:\n  resourceVersion: \"\"\n"));
        assert_eq!(
            list.items,
            [
                "- kind: A\n  metadata: {name: a}\n  data: |\n    x\n    - y\n# between items\n",
                "-\n  kind: B\n\n",
                "- kind: C\n  spec: [1, &z {k: v}, *z]\n"
            ]
        );
        assert_eq!(list_pieces(LIST, 60).unwrap().items.len(), 2);
        // Too few items for two pieces, items not at the start of their
        // lines, or an `items` key with a value on its line: not cut.
        assert!(list_pieces(LIST, 1000).is_none());
        assert!(list_pieces("kind: List\nitems:\n  - a: 1\n  - b: 2\n", 1).is_none());
        assert!(list_pieces("kind: List\nitems: [a, b]\n", 1).is_none());
    }

    #[test]
    fn a_list_read_in_pieces_has_the_value_of_the_whole() {
        let source = Source::new("l.yaml", LIST);
        let expected = whole(&source, Limits::default());
        for piece_bytes in [1, 60, 1000] {
            let got = values_in_pieces(&source, Limits::default(), &RunBudget::new(), piece_bytes).unwrap();
            assert_eq!(got.values, expected, "pieces of {piece_bytes} bytes");
        }
        let none = |text: &str, limits: Limits| {
            let run = RunBudget::new();
            let got = values_in_pieces(&Source::new("l.yaml", text), limits, &run, 1);
            assert_eq!(run.used.load(Ordering::Relaxed), 0, "{text}");
            got.is_none()
        };
        // An `items` key twice (an error of the whole), an alias of an
        // anchor in another piece, a duplicate key in an item.
        assert!(none(&format!("{LIST}items: []\n"), Limits::default()));
        assert!(none("kind: List\nitems:\n- a: &x 1\n- b: *x\n", Limits::default()));
        assert!(none("kind: List\nitems:\n- a: 1\n- b: 2\n  b: 3\n", Limits::default()));
        // A quoted scalar or a flow collection that runs over the cuts
        // (the parser refuses their lines at the start of a line): the
        // lines around the items do not stand alone, and the whole's error
        // is the one reported.
        for across in ["note: \"x\nitems:\n- a: 1\n- b: 2\ny\"\n", "note: [x,\nitems:\n- a: 1\n- b: 2\n]\n"] {
            let text = format!("kind: List\n{across}");
            assert!(parse_documents(&Source::new("l.yaml", text.as_str()), Limits::default()).is_err());
            assert!(none(&text, Limits::default()));
        }
        // The items lie one level deeper in the whole than in a piece, and
        // their nodes together count against the whole document's limit.
        let text = "kind: List\nitems:\n- a: {b: 1}\n- c: {d: 2}\n";
        let source = Source::new("l.yaml", text);
        for (limits, whole_ok) in [
            (Limits { max_depth: 4, ..Limits::default() }, true),
            (Limits { max_depth: 3, ..Limits::default() }, false),
            (Limits { max_nodes: 15, ..Limits::default() }, true),
            (Limits { max_nodes: 14, ..Limits::default() }, false),
        ] {
            assert_eq!(parse_documents(&source, limits).is_ok(), whole_ok, "{limits:?}");
            assert_eq!(!none(text, limits), whole_ok, "{limits:?}");
        }
    }
}
