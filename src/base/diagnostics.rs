//! Errors and warnings as data: what went wrong, where (file, line, column),
//! and how to fix it.
//!
//! Every stage of the pipeline reports problems as [`Diagnostic`]s and keeps
//! going where it can, so one run reports every error at once. Positions are
//! carried from the YAML parser to the message; [`Diagnostic::render`] shows
//! the offending source line with the span underlined.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Warning,
    Error,
}

/// A position in a source text: 1-based line, 1-based column (in characters).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Pos {
    pub line: usize,
    pub col: usize,
}

/// A range in a source text; `end` is exclusive and on the same line or later.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Span {
    pub start: Pos,
    pub end: Pos,
}

impl Span {
    /// The start of a text, empty.
    pub const EMPTY: Span = Span { start: Pos { line: 1, col: 1 }, end: Pos { line: 1, col: 1 } };

    pub fn at(line: usize, col: usize) -> Span {
        let p = Pos { line, col };
        Span { start: p, end: Pos { line, col: col + 1 } }
    }
}

/// A source text that diagnostics point into: its display name and contents.
#[derive(Debug, PartialEq, Eq)]
pub struct Source {
    /// The path as the user should read it (relative where possible).
    pub name: PathBuf,
    pub text: String,
}

impl Source {
    pub fn new(name: impl Into<PathBuf>, text: impl Into<String>) -> Arc<Source> {
        Arc::new(Source { name: name.into(), text: text.into() })
    }

    fn line(&self, line: usize) -> Option<&str> {
        // Line breaks as YAML counts them: "\n", "\r\n" and a lone "\r".
        line_starts(&self.text).nth(line.checked_sub(1)?).map(|(start, end)| &self.text[start..end])
    }
}

/// Where a diagnostic points: a file, and a span in it when known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub source: Arc<Source>,
    pub span: Option<Span>,
}

impl Location {
    pub fn file(source: &Arc<Source>) -> Location {
        Location { source: Arc::clone(source), span: None }
    }

    pub fn span(source: &Arc<Source>, span: Span) -> Location {
        Location { source: Arc::clone(source), span: Some(span) }
    }

    pub fn path(&self) -> &Path {
        &self.source.name
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.span {
            Some(s) => write!(f, "{}:{}:{}", self.source.name.display(), s.start.line, s.start.col),
            None => write!(f, "{}", self.source.name.display()),
        }
    }
}

/// One finding: severity, message, where, and optional help and notes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub message: String,
    pub location: Option<Location>,
    /// Further places involved (for example the other file of a duplicate).
    pub related: Vec<(Location, String)>,
    /// Background: why the problem matters (shown as `= note:` lines).
    pub notes: Vec<String>,
    /// A suggested fix: "did you mean ...".
    pub help: Option<String>,
    /// Something was already written when this error struck, so the run
    /// cannot say "nothing was written".
    pub after_writing: bool,
}

impl Diagnostic {
    pub fn error(message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            location: None,
            related: Vec::new(),
            notes: Vec::new(),
            help: None,
            after_writing: false,
        }
    }

    /// Marks an error that struck after some output was already written.
    pub fn after_writing(mut self) -> Diagnostic {
        self.after_writing = true;
        self
    }

    pub fn warning(message: impl Into<String>) -> Diagnostic {
        Diagnostic { severity: Severity::Warning, ..Diagnostic::error(message) }
    }

    pub fn at(mut self, location: Location) -> Diagnostic {
        self.location = Some(location);
        self
    }

    pub fn at_opt(mut self, location: Option<Location>) -> Diagnostic {
        self.location = location;
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    pub fn note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    pub fn related(mut self, location: Location, note: impl Into<String>) -> Diagnostic {
        self.related.push((location, note.into()));
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// The diagnostic as text: a headline, the location, the source line with
    /// the span underlined, notes and help. `color` adds ANSI styles.
    pub fn render(&self, color: bool) -> String {
        let style = Styles::new(color);
        let mut out = String::new();
        let (label, label_style) = match self.severity {
            Severity::Error => ("error", style.error),
            Severity::Warning => ("warning", style.warning),
        };
        out.push_str(&format!(
            "{}{label}{}: {}{}{}\n",
            label_style.render(),
            label_style.render_reset(),
            style.bold.render(),
            self.message,
            style.bold.render_reset()
        ));
        if let Some(loc) = &self.location {
            render_location(&mut out, loc, None, &style);
        }
        for (loc, note) in &self.related {
            render_location(&mut out, loc, Some(note), &style);
        }
        for note in &self.notes {
            out.push_str(&format!("  {}= note{}: {note}\n", style.help.render(), style.help.render_reset()));
        }
        if let Some(help) = &self.help {
            out.push_str(&format!("  {}= help{}: {help}\n", style.help.render(), style.help.render_reset()));
        }
        out
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.render(false).trim_end())
    }
}

impl std::error::Error for Diagnostic {}

/// Longest stretch of a source line shown under a message.
const MAX_SHOWN: usize = 120;

fn render_location(out: &mut String, loc: &Location, note: Option<&str>, style: &Styles) {
    let arrow = format!("{}-->{}", style.help.render(), style.help.render_reset());
    match note {
        Some(n) => out.push_str(&format!("  {arrow} {loc} ({n})\n")),
        None => out.push_str(&format!("  {arrow} {loc}\n")),
    }
    let Some(span) = loc.span else { return };
    let Some(line) = loc.source.line(span.start.line) else {
        return;
    };
    let line = line.trim_end_matches('\r');
    let number = span.start.line.to_string();
    let gutter = " ".repeat(number.len());
    let bar = format!("{}|{}", style.help.render(), style.help.render_reset());
    // Underline from the start column to the end of the span on this line
    // (or to the end of the line when the span continues below).
    let chars = line.chars().count();
    let start = span.start.col.saturating_sub(1).min(chars);
    let end = if span.end.line == span.start.line { span.end.col.saturating_sub(1) } else { chars };
    let width = end.saturating_sub(start).max(1);
    // Long lines are shown as a window around the span.
    let (skip, start, width) = if chars > MAX_SHOWN {
        let skip = start.saturating_sub(20);
        (skip, start - skip, width.min(MAX_SHOWN - (start - skip).min(MAX_SHOWN - 1)))
    } else {
        (0, start, width)
    };
    let mut shown: String = line.chars().skip(skip).take(MAX_SHOWN).map(|c| if c == '\t' { ' ' } else { c }).collect();
    let start = if skip > 0 {
        shown.insert_str(0, "...");
        start + 3
    } else {
        start
    };
    if chars > skip + MAX_SHOWN {
        shown.push_str("...");
    }
    out.push_str(&format!(" {gutter} {bar}\n"));
    out.push_str(&format!(" {number} {bar} {shown}\n"));
    out.push_str(&format!(
        " {gutter} {bar} {}{}{}{}\n",
        " ".repeat(start),
        style.caret.render(),
        "^".repeat(width),
        style.caret.render_reset()
    ));
}

struct Styles {
    error: anstyle::Style,
    warning: anstyle::Style,
    bold: anstyle::Style,
    help: anstyle::Style,
    caret: anstyle::Style,
}

impl Styles {
    fn new(color: bool) -> Styles {
        use anstyle::{AnsiColor, Style};
        if !color {
            let plain = Style::new();
            return Styles { error: plain, warning: plain, bold: plain, help: plain, caret: plain };
        }
        Styles {
            error: Style::new().bold().fg_color(Some(AnsiColor::Red.into())),
            warning: Style::new().bold().fg_color(Some(AnsiColor::Yellow.into())),
            bold: Style::new().bold(),
            help: Style::new().fg_color(Some(AnsiColor::Cyan.into())),
            caret: Style::new().bold().fg_color(Some(AnsiColor::Red.into())),
        }
    }
}

/// A list of diagnostics gathered over a run, kept in a stable order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    pub fn new() -> Diagnostics {
        Diagnostics(Vec::new())
    }

    pub fn push(&mut self, d: Diagnostic) {
        self.0.push(d);
    }

    pub fn extend(&mut self, other: impl IntoIterator<Item = Diagnostic>) {
        self.0.extend(other);
    }

    pub fn has_errors(&self) -> bool {
        self.0.iter().any(Diagnostic::is_error)
    }

    pub fn error_count(&self) -> usize {
        self.0.iter().filter(|d| d.is_error()).count()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Sort by file, then position, then message, so output does not depend
    /// on the order in which parallel work finished.
    pub fn sort(&mut self) {
        self.0.sort_by_key(sort_key);
        self.0.dedup();
    }

    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.0.iter()
    }

    /// All diagnostics rendered, followed by a one-line count of errors.
    pub fn render(&self, color: bool) -> String {
        let mut out = String::new();
        for d in &self.0 {
            out.push_str(&d.render(color));
            out.push('\n');
        }
        let errors = self.error_count();
        if errors > 0 {
            let s = if errors == 1 { "" } else { "s" };
            if self.0.iter().any(|d| d.after_writing) {
                out.push_str(&format!(
                    "error: aborting due to {errors} error{s}; some output was written before the error (see above)\n"
                ));
            } else {
                out.push_str(&format!("error: aborting due to {errors} error{s}; nothing was written\n"));
            }
        }
        out
    }
}

fn sort_key(d: &Diagnostic) -> (Option<PathBuf>, Option<Span>, String) {
    (d.location.as_ref().map(|l| l.source.name.clone()), d.location.as_ref().and_then(|l| l.span), d.message.clone())
}

/// The (start, end) byte range of every line of `text`, without its line
/// break; "\n", "\r\n" and a lone "\r" each end a line, as in YAML.
pub fn line_starts(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut done = false;
    std::iter::from_fn(move || {
        if done || start > bytes.len() || (start == bytes.len() && start > 0) {
            return None;
        }
        let mut i = start;
        while i < bytes.len() && bytes[i] != b'\n' && bytes[i] != b'\r' {
            i += 1;
        }
        let line = (start, i);
        if i >= bytes.len() {
            done = true;
        } else if bytes[i] == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
            start = i + 2;
        } else {
            start = i + 1;
        }
        Some(line)
    })
}

impl From<Diagnostic> for Diagnostics {
    fn from(d: Diagnostic) -> Diagnostics {
        Diagnostics(vec![d])
    }
}

impl IntoIterator for Diagnostics {
    type Item = Diagnostic;
    type IntoIter = std::vec::IntoIter<Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

/// The closest candidate to `word`, if one is close enough to be a likely
/// typo: used for "did you mean ...?" help.
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = word.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|c| (strsim::damerau_levenshtein(&lower, &c.to_ascii_lowercase()), c))
        .filter(|(d, c)| *d <= (c.len().max(3) / 3).max(1) + usize::from(c.len() > 8))
        .min_by_key(|(d, c)| (*d, *c))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        let fields = ["model", "replicas", "gpusPerReplica"];
        assert_eq!(did_you_mean("replica", fields), Some("replicas"));
        assert_eq!(did_you_mean("gpuPerReplica", fields), Some("gpusPerReplica"));
        assert_eq!(did_you_mean("Model", fields), Some("model"));
        assert_eq!(did_you_mean("image", fields), None);
    }

    #[test]
    fn renders_source_line_with_caret() {
        let src = Source::new("svc.yaml", "spec:\n  replica: 3\n");
        let d = Diagnostic::error("unknown field \"replica\"")
            .at(Location::span(&src, Span { start: Pos { line: 2, col: 3 }, end: Pos { line: 2, col: 10 } }))
            .help("did you mean \"replicas\"?");
        assert_eq!(
            d.render(false),
            "error: unknown field \"replica\"\n  --> svc.yaml:2:3\n   |\n 2 |   replica: 3\n   |   ^^^^^^^\n  = help: did you mean \"replicas\"?\n"
        );
    }
}
