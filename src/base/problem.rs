//! A problem at a field path: what every check of the model returns, from
//! input validation to the type check of rendered objects. Positions are
//! attached at the edge, where the path is looked up in the source file.

use crate::base::diagnostics::Diagnostic;
use crate::base::yaml::PathSegment;

/// A problem a typed check found in a spec, at the field it is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub path: Vec<PathSegment>,
    pub message: String,
    pub help: Option<String>,
}

impl Problem {
    pub fn new(path: Vec<PathSegment>, message: impl Into<String>) -> Problem {
        Problem { path, message: message.into(), help: None }
    }

    /// An error diagnostic with this problem's message and help, not yet
    /// placed.
    pub fn diagnostic(&self) -> Diagnostic {
        let d = Diagnostic::error(self.message.clone());
        match &self.help {
            Some(h) => d.help(h.clone()),
            None => d,
        }
    }

    pub fn help(mut self, help: impl Into<String>) -> Problem {
        self.help = Some(help.into());
        self
    }
}

/// The path of a field under `spec`.
pub fn spec_path(keys: &[&str]) -> Vec<PathSegment> {
    std::iter::once("spec").chain(keys.iter().copied()).map(|k| PathSegment::Key(k.to_string())).collect()
}

/// The path of a field given by its keys.
pub fn path(keys: &[&str]) -> Vec<PathSegment> {
    keys.iter().map(|k| PathSegment::Key(k.to_string())).collect()
}
