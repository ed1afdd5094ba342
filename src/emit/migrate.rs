//! `isvc migrate`: rewrites v1alpha1 InferenceService documents as v1alpha2,
//! in place.
//!
//! The two versions differ, for what v1alpha1 can say, in two tokens: the
//! `apiVersion` and the name of `spec.model` (now `baseModel`). So the
//! migration edits exactly those in the source text and leaves every other
//! byte alone: comments, layout, quoting, key order, anchors. Each result is
//! read back and must load as the same service as before; a document where
//! that does not hold (say, `model` comes in through a merge key) is not
//! rewritten, and the error says to edit it by hand. Nothing is written
//! unless every file can be migrated.

use std::path::PathBuf;
use std::sync::Arc;

use crate::base::diagnostics::{Diagnostic, Diagnostics, Source};
use crate::base::yaml::{Node, PathSegment};
use crate::load::{self, LoadedService};

/// What migrating one file would do.
#[derive(Debug)]
pub struct Migration {
    pub path: PathBuf,
    /// Documents rewritten to v1alpha2.
    pub documents: usize,
    /// The new text of the file.
    pub text: String,
}

/// The migrations of every input file under `paths` that has v1alpha1
/// documents, or every reason some cannot be migrated (bad input, or a
/// document that cannot be rewritten textually).
pub fn plan(paths: &[PathBuf]) -> Result<Vec<Migration>, Diagnostics> {
    let files = load::input_files(paths)?;
    let mut out = Vec::new();
    let mut diags = Diagnostics::new();
    for path in files {
        let source = match load::read_source(&path) {
            Ok(s) => s,
            Err(d) => {
                diags.push(d);
                continue;
            }
        };
        match migrate_source(&source) {
            Ok(Some((text, documents))) => out.push(Migration { path, documents, text }),
            Ok(None) => {}
            Err(d) => diags.extend(d),
        }
    }
    diags.sort();
    if diags.has_errors() { Err(diags) } else { Ok(out) }
}

/// The migrated text of one source and how many documents changed; `None`
/// when it has no v1alpha1 document.
pub fn migrate_source(source: &Arc<Source>) -> Result<Option<(String, usize)>, Vec<Diagnostic>> {
    let (before, diags) = load::parse_services(source);
    if !diags.is_empty() {
        return Err(diags);
    }
    let old: Vec<&LoadedService> =
        before.iter().filter(|s| s.api_version == crate::model::v1alpha1::API_VERSION).collect();
    if old.is_empty() {
        return Ok(None);
    }
    let mut edits = Vec::new();
    let mut diags = Vec::new();
    for s in &old {
        match edits_for(source, s.node()) {
            Ok(e) => edits.extend(e),
            Err(why) => diags.push(cannot(s, &why)),
        }
    }
    if !diags.is_empty() {
        return Err(diags);
    }
    edits.sort_by_key(|e| std::cmp::Reverse(e.0));
    let mut text = source.text.clone();
    for (at, len, with) in edits {
        text.replace_range(at..at + len, with);
    }
    // Read the result back: every document must load as the same service.
    let migrated = Source::new(&source.name, text.clone());
    let (after, problems) = load::parse_services(&migrated);
    if !problems.is_empty() || after.len() != before.len() {
        return Err(old.iter().map(|s| cannot(s, "the rewritten file does not load")).collect());
    }
    let changed: Vec<Diagnostic> = before
        .iter()
        .zip(&after)
        .filter(|(a, b)| a.service != b.service || b.api_version != crate::model::v1alpha2::API_VERSION)
        .map(|(a, _)| {
            cannot(a, "the rewritten document would mean something else (is `model` merged in from elsewhere?)")
        })
        .collect();
    if !changed.is_empty() {
        return Err(changed);
    }
    Ok(Some((text, old.len())))
}

fn cannot(s: &LoadedService, why: &str) -> Diagnostic {
    Diagnostic::error(format!(
        "cannot migrate InferenceService {}/{} in place: {why}",
        s.service.namespace_or_default(),
        s.service.name()
    ))
    .at(s.location(&[PathSegment::Key("apiVersion".into())]))
    .help(format!(
        "edit it by hand: set apiVersion to {} and rename spec.model to baseModel; the file is left unchanged",
        crate::model::v1alpha2::API_VERSION
    ))
}

/// The two edits of one v1alpha1 document, as (byte offset, length, new text).
fn edits_for(source: &Source, doc: &Node) -> Result<Vec<(usize, usize, &'static str)>, String> {
    if doc
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(crate::model::conversion::LOST_FIELDS_ANNOTATION))
        .is_some()
    {
        return Err(format!(
            "it holds v1alpha2 fields in the annotation {}, which only a conversion can restore",
            crate::model::conversion::LOST_FIELDS_ANNOTATION
        ));
    }
    let version = doc.get("apiVersion").ok_or("it has no apiVersion")?;
    let at = offset(source, version.span.start).ok_or("the apiVersion is not where the parser saw it")?;
    let version_edit = token(&source.text[at..], crate::model::v1alpha1::API_VERSION)
        .map(|start| {
            (at + start + crate::model::v1alpha1::API_VERSION.len() - "v1alpha1".len(), "v1alpha1".len(), "v1alpha2")
        })
        .ok_or("the apiVersion is not written as a plain or quoted scalar")?;
    let key = doc.get("spec").and_then(|s| s.key("model")).ok_or("it has no spec.model")?;
    let at = offset(source, key.span.start).ok_or("spec.model is not where the parser saw it")?;
    let model_edit = token(&source.text[at..], "model")
        .map(|start| (at + start, "model".len(), "baseModel"))
        .ok_or("spec.model is not written as a plain or quoted key")?;
    Ok(vec![version_edit, model_edit])
}

/// Where `word` starts in `text`, if `text` starts with it as a plain,
/// single- or double-quoted scalar.
fn token(text: &str, word: &str) -> Option<usize> {
    let boundary = |rest: &str| rest.chars().next().is_none_or(|c| !(c.is_alphanumeric() || "-_./".contains(c)));
    if text.starts_with(word) && boundary(&text[word.len()..]) {
        return Some(0);
    }
    for q in ['"', '\''] {
        if let Some(rest) = text.strip_prefix(q)
            && rest.starts_with(word)
            && rest[word.len()..].starts_with(q)
        {
            return Some(1);
        }
    }
    None
}

/// The byte offset of a parser position (1-based line, 1-based column in
/// characters, after any byte-order mark).
fn offset(source: &Source, pos: crate::base::diagnostics::Pos) -> Option<usize> {
    let bom = if source.text.starts_with('\u{feff}') { '\u{feff}'.len_utf8() } else { 0 };
    let text = &source.text[bom..];
    let (line_start, _) = crate::base::diagnostics::line_starts(text).nth(pos.line.checked_sub(1)?)?;
    let line = &text[line_start..];
    let col = line.char_indices().nth(pos.col.checked_sub(1)?).map(|(i, _)| i)?;
    Some(bom + line_start + col)
}

/// Prefix of the file a migration stages beside the file it replaces.
const STAGE_PREFIX: &str = ".isvc-migrate~";

/// Writes every migration, as one step as far as a file system allows.
///
/// First each new text is staged beside the file it replaces (a symbolic
/// link is resolved, so the link stays a link), with the file's mode and,
/// where permitted, its owner. Only when every file is staged are they put
/// in place: renamed over the old file, or, for a file with several hard
/// links, written into the same inode so the links stay. A failure while
/// staging removes the staged files and writes nothing. A failure or a
/// kill after the first file is in place leaves some files migrated and
/// the others as they were: migrating is idempotent, so running `isvc
/// migrate` again finishes the job, and removes staged files left over
/// (see [`remove_leftovers`]).
pub fn write(migrations: &[Migration]) -> Result<(), Diagnostics> {
    let mut staged: Vec<(PathBuf, PathBuf, std::fs::Metadata)> = Vec::new();
    let unstage = |staged: &[(PathBuf, PathBuf, std::fs::Metadata)]| {
        for (_, tmp, _) in staged {
            let _ = std::fs::remove_file(tmp);
        }
    };
    for m in migrations {
        match stage(m) {
            Ok(s) => staged.push(s),
            Err(d) => {
                unstage(&staged);
                return Err(d.into());
            }
        }
    }
    for (done, (target, tmp, meta)) in staged.iter().enumerate() {
        if let Err(e) = put_in_place(target, tmp, meta) {
            unstage(&staged[done..]);
            let d = Diagnostic::error(format!("cannot write {}: {e}", target.display()));
            return Err(if done == 0 {
                d.into()
            } else {
                d.after_writing()
                    .note(format!("{done} of {} files were migrated before this one", staged.len()))
                    .help("fix the problem and run `isvc migrate` again: it migrates the files still at v1alpha1")
                    .into()
            });
        }
    }
    Ok(())
}

/// The staged file of `m`: (the real file, the staged file, its metadata).
fn stage(m: &Migration) -> Result<(PathBuf, PathBuf, std::fs::Metadata), Diagnostic> {
    let fail = |p: &std::path::Path, e: std::io::Error| {
        Diagnostic::error(format!("cannot write {}: {e}", p.display()))
            .help(format!("no file was changed; the new text is staged as {STAGE_PREFIX}<name> beside each file first"))
    };
    let target = std::fs::canonicalize(&m.path).map_err(|e| fail(&m.path, e))?;
    let meta = std::fs::metadata(&target).map_err(|e| fail(&m.path, e))?;
    let tmp = staged_name(&target);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let _ = std::fs::remove_file(&tmp);
    let mut file = options.open(&tmp).map_err(|e| fail(&m.path, e))?;
    let result = (|| {
        use std::io::Write;
        file.write_all(m.text.as_bytes())?;
        file.sync_all()?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            // Keep the owner where allowed (as root); a failure keeps ours.
            let _ = std::os::unix::fs::fchown(&file, Some(meta.uid()), Some(meta.gid()));
        }
        file.set_permissions(meta.permissions())
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(fail(&m.path, e));
    }
    Ok((target, tmp, meta))
}

fn staged_name(target: &std::path::Path) -> PathBuf {
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    target.with_file_name(format!("{STAGE_PREFIX}{name}"))
}

fn put_in_place(target: &std::path::Path, tmp: &std::path::Path, meta: &std::fs::Metadata) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if meta.nlink() > 1 {
            // A rename would split the file from its other links.
            let text = std::fs::read(tmp)?;
            let mut file = std::fs::OpenOptions::new().write(true).truncate(true).open(target)?;
            std::io::Write::write_all(&mut file, &text)?;
            file.sync_all()?;
            return std::fs::remove_file(tmp);
        }
    }
    let _ = meta;
    std::fs::rename(tmp, target)
}

/// Removes the staged files a killed `isvc migrate` left beside the input
/// files under `paths`, and returns them. Only `.isvc-migrate~<name>`
/// beside an existing `<name>` is taken for one.
pub fn remove_leftovers(paths: &[PathBuf]) -> Vec<PathBuf> {
    let Ok(files) = load::input_files(paths) else { return Vec::new() };
    let mut removed = Vec::new();
    for f in files {
        let Ok(target) = std::fs::canonicalize(&f) else { continue };
        let tmp = staged_name(&target);
        if std::fs::symlink_metadata(&tmp).is_ok_and(|m| m.is_file()) && std::fs::remove_file(&tmp).is_ok() {
            removed.push(tmp);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn migrate(text: &str) -> Result<Option<String>, String> {
        let source = Source::new("s.yaml", text);
        migrate_source(&source)
            .map(|r| r.map(|(t, _)| t))
            .map_err(|d| d.into_iter().map(|d| d.message).collect::<Vec<_>>().join("\n"))
    }

    #[test]
    fn only_the_version_and_the_key_change() {
        let text = "# the chat model\napiVersion: ai.example.com/v1alpha1   # old\nkind: InferenceService\nmetadata: {name: chat}\nspec:\n  model: \"Qwen/Qwen3-8B\"  # pinned\n  replicas: 2\n";
        assert_eq!(
            migrate(text).unwrap().unwrap(),
            "# the chat model\napiVersion: ai.example.com/v1alpha2   # old\nkind: InferenceService\nmetadata: {name: chat}\nspec:\n  baseModel: \"Qwen/Qwen3-8B\"  # pinned\n  replicas: 2\n"
        );
    }

    #[test]
    fn flow_style_quoted_keys_and_several_documents() {
        let text = "\u{feff}{\"apiVersion\": \"ai.example.com/v1alpha1\", \"kind\": \"InferenceService\", \"metadata\": {\"name\": \"a\"}, \"spec\": {\"model\": \"m\", \"replicas\": 1}}\n---\napiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {name: b}\nspec: {baseModel: m, replicas: 1}\n---\napiVersion: 'ai.example.com/v1alpha1'\nkind: InferenceService\nmetadata: {name: c}\nspec: {'model': ü, replicas: 0}\n";
        let out = migrate(text).unwrap().unwrap();
        assert!(out.starts_with("\u{feff}{\"apiVersion\": \"ai.example.com/v1alpha2\""), "{out}");
        assert!(out.contains("\"spec\": {\"baseModel\": \"m\""), "{out}");
        assert!(out.ends_with("apiVersion: 'ai.example.com/v1alpha2'\nkind: InferenceService\nmetadata: {name: c}\nspec: {'baseModel': ü, replicas: 0}\n"), "{out}");
    }

    #[test]
    fn lone_carriage_returns_end_lines() {
        let text = "apiVersion: ai.example.com/v1alpha1\rkind: InferenceService\rmetadata: {name: a}\rspec:\r  model: m\r  replicas: 1\r";
        assert_eq!(
            migrate(text).unwrap().unwrap(),
            "apiVersion: ai.example.com/v1alpha2\rkind: InferenceService\rmetadata: {name: a}\rspec:\r  baseModel: m\r  replicas: 1\r"
        );
    }

    #[test]
    fn nothing_to_do_for_v1alpha2() {
        assert_eq!(
            migrate(
                "apiVersion: ai.example.com/v1alpha2\nkind: InferenceService\nmetadata: {name: a}\nspec: {baseModel: m, replicas: 1}\n"
            ),
            Ok(None)
        );
    }

    #[test]
    fn a_model_merged_in_from_elsewhere_is_refused() {
        let text = "apiVersion: ai.example.com/v1alpha1\nkind: InferenceService\nmetadata:\n  name: a\n  annotations: &base {model: m}\nspec:\n  <<: *base\n  replicas: 1\n";
        let err = migrate(text).unwrap_err();
        assert_eq!(
            err,
            "cannot migrate InferenceService default/a in place: the rewritten document would mean something else (is `model` merged in from elsewhere?)"
        );
    }

    #[test]
    fn bad_input_is_reported_not_migrated() {
        let err = migrate(
            "apiVersion: ai.example.com/v1alpha1\nkind: InferenceService\nmetadata: {name: a}\nspec: {model: m}\n",
        )
        .unwrap_err();
        assert_eq!(err, "missing required field \"replicas\" in \"spec\"");
    }
}
