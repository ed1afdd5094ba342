//! Rendering: the desired state of each service through its templates, then
//! every rendered document parsed back and checked before anyone writes it.
//! A built-in template that is not overridden is built as code instead
//! ([`builtin`]), with the same result and no text in between; its object
//! is type checked all the same.
//!
//! Templates are minijinja. Every `{{ value }}` is inserted as JSON (which is
//! YAML): strings are quoted and escaped, maps and lists become flow
//! collections. No value, however hostile, can add a key or a document.
//! Undefined variables are errors, and a render has a bounded amount of work
//! ("fuel"), so a broken or looping override fails instead of hanging.
//!
//! A parsed-back document must be exactly one object of the expected kind,
//! name and namespace, and must decode into its Kubernetes type with no
//! unknown fields. Mapping entries whose value is null are dropped, so a
//! template can write `replicas: {{ replicas }}` and the line disappears
//! when the derivation leaves the value out.

pub mod builtin;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use serde_json::Value;

use crate::base::diagnostics::{Diagnostic, Location, Source, Span, did_you_mean};
use crate::base::yaml::{self, Limits};
use crate::derive::DesiredService;
use crate::k8s::typecheck;
use crate::model::objects::{Object, ObjectId};

/// The built-in templates, by file name.
pub const BUILTIN: [(&str, &str); 19] = [
    ("deployment.yaml", include_str!("../../templates/deployment.yaml")),
    ("service.yaml", include_str!("../../templates/service.yaml")),
    ("horizontalpodautoscaler.yaml", include_str!("../../templates/horizontalpodautoscaler.yaml")),
    ("poddisruptionbudget.yaml", include_str!("../../templates/poddisruptionbudget.yaml")),
    ("configmap.yaml", include_str!("../../templates/configmap.yaml")),
    ("leaderworkerset.yaml", include_str!("../../templates/leaderworkerset.yaml")),
    ("scaledobject.yaml", include_str!("../../templates/scaledobject.yaml")),
    ("httproute.yaml", include_str!("../../templates/httproute.yaml")),
    ("inferencepool.yaml", include_str!("../../templates/inferencepool.yaml")),
    ("inferenceobjective.yaml", include_str!("../../templates/inferenceobjective.yaml")),
    ("servicemonitor.yaml", include_str!("../../templates/servicemonitor.yaml")),
    ("endpointpicker-serviceaccount.yaml", include_str!("../../templates/endpointpicker-serviceaccount.yaml")),
    ("endpointpicker-role.yaml", include_str!("../../templates/endpointpicker-role.yaml")),
    ("endpointpicker-rolebinding.yaml", include_str!("../../templates/endpointpicker-rolebinding.yaml")),
    ("endpointpicker-configmap.yaml", include_str!("../../templates/endpointpicker-configmap.yaml")),
    ("endpointpicker-service.yaml", include_str!("../../templates/endpointpicker-service.yaml")),
    ("endpointpicker-deployment.yaml", include_str!("../../templates/endpointpicker-deployment.yaml")),
    (
        "endpointpicker-poddisruptionbudget.yaml",
        include_str!("../../templates/endpointpicker-poddisruptionbudget.yaml"),
    ),
    ("endpointpicker-servicemonitor.yaml", include_str!("../../templates/endpointpicker-servicemonitor.yaml")),
];

/// Work one template render may do before it is stopped.
const FUEL: u64 = 200_000;

/// The template set: built-ins, with any user overrides in their place.
pub struct Templates {
    env: Environment<'static>,
    sources: BTreeMap<String, Arc<Source>>,
    /// Built-in templates not overridden, which [`builtin`] builds without
    /// the text round trip.
    built: BTreeSet<&'static str>,
}

impl Templates {
    /// The built-in templates only.
    pub fn builtin() -> Templates {
        Templates::new(Vec::new()).unwrap_or_else(|_| unreachable!("built-in templates compile"))
    }

    /// The built-in templates, every one rendered as text and parsed back
    /// as an override is: the reference `builtin` is tested against.
    pub fn builtin_as_text() -> Templates {
        let mut t = Templates::builtin();
        t.built.clear();
        t
    }

    /// Built-ins overridden by `overrides` (file name and text). A name that
    /// is not a built-in must start with `_` (a partial for `{% include %}`).
    pub fn new(overrides: Vec<Arc<Source>>) -> Result<Templates, Vec<Diagnostic>> {
        let mut sources: BTreeMap<String, Arc<Source>> = BUILTIN
            .iter()
            .map(|(name, text)| (name.to_string(), Source::new(format!("templates/{name}"), *text)))
            .collect();
        let mut diags = Vec::new();
        // Every built-in template is built as code ([`builtin::build`]).
        let mut built: BTreeSet<&'static str> = BUILTIN.iter().map(|(name, _)| *name).collect();
        for src in overrides {
            let name = src.name.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if !sources.contains_key(&name) && !name.starts_with('_') {
                let mut d =
                    Diagnostic::error(format!("\"{name}\" is not a template isvc renders")).at(Location::file(&src));
                let builtin: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
                d = match did_you_mean(&name, builtin.iter().copied()) {
                    Some(m) => d.help(format!("did you mean \"{m}\"?")),
                    None => d.help(format!("overridable templates: {}; partials start with '_'", builtin.join(", "))),
                };
                diags.push(d);
                continue;
            }
            built.retain(|b| *b != name);
            sources.insert(name, src);
        }
        let mut env = environment();
        for (name, src) in &sources {
            if let Err(e) = env.add_template_owned(name.clone(), src.text.clone()) {
                diags.push(template_error(src, &e));
            }
        }
        if diags.is_empty() { Ok(Templates { env, sources, built }) } else { Err(diags) }
    }

    fn source(&self, name: &str) -> Option<&Arc<Source>> {
        self.sources.get(name)
    }
}

/// The template environment: strict about undefined values, bounded in
/// work, and with every `{{ value }}` written by [`write_value`].
fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_auto_escape_callback(|_| AutoEscape::Json);
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_fuel(Some(FUEL));
    env.set_formatter(|out, _state, value| {
        if value.is_safe()
            && let Some(s) = value.as_str()
        {
            return out.write_str(s).map_err(minijinja::Error::from);
        }
        let json = serde_json::to_value(value).map_err(|e| {
            minijinja::Error::new(minijinja::ErrorKind::BadSerialization, format!("cannot write the value: {e}"))
        })?;
        let mut text = String::new();
        write_value(&json, &mut text);
        out.write_str(&text).map_err(minijinja::Error::from)
    });
    env
}

/// Writes `value` as JSON in which no string holds a character YAML gives
/// a meaning (`'` `,` `:` `#` brackets and braces, the other indicators, line
/// breaks): they are `\u` escapes, which a double-quoted YAML scalar reads
/// back as the same text. So a value stays one scalar (or one collection)
/// in any spot of a template: bare, inside quotes of either kind (say
/// `"{{ model }}-x"`), or in a flow collection. At worst a template that
/// quotes a value fails to parse; it can never gain a key.
fn write_value(value: &Value, out: &mut String) {
    match value {
        Value::String(s) => {
            out.push('"');
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\'' | ',' | '[' | ']' | '{' | '}' | ':' | '#' | '&' | '*' | '!' | '|' | '>' | '%' | '@' | '`'
                    | '?' | '<' | '=' | '~' => out.push_str(&format!("\\u{:04X}", c as u32)),
                    c if c.is_control() || (c as u32) < 0x20 => out.push_str(&format!("\\u{:04X}", c as u32)),
                    c => out.push(c),
                }
            }
            out.push('"');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(v, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(&Value::String(k.clone()), out);
                out.push_str(": ");
                write_value(v, out);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

fn template_error(src: &Arc<Source>, e: &minijinja::Error) -> Diagnostic {
    let what = match e.detail() {
        Some(detail) => format!("{}: {detail}", e.kind()),
        None => e.kind().to_string(),
    };
    let d = Diagnostic::error(format!("template error: {what}"));
    match e.line() {
        Some(line) => d.at(Location::span(src, Span::at(line, 1))),
        None => d.at(Location::file(src)),
    }
}

/// Renders every object of one service. `source` is the input file as the
/// headers name it.
pub fn render_service(
    templates: &Templates,
    desired: &DesiredService,
    source: Option<&str>,
) -> Result<Vec<Object>, Vec<Diagnostic>> {
    // The values as the templates see them, made only when one is used.
    let mut ctx: Option<minijinja::Value> = None;
    let mut objects = Vec::new();
    let mut diags = Vec::new();
    for child in &desired.objects {
        let name = match desired.gateway.as_ref().and_then(|g| g.pool.as_ref()) {
            Some(pool) if child.picker => pool.picker.name.as_str(),
            _ => desired.name.as_str(),
        };
        let id = ObjectId::new(child.api_version, child.kind, Some(&desired.namespace), name);
        let object = |value| Object::new(id.clone(), value).owned_by(&desired.name).from_source(source);
        if templates.built.contains(child.template)
            && let Some(value) = builtin::build(child.template, desired)
        {
            // The built object equals what the template's text renders,
            // which decodes into its type: tests/it/builtin.rs holds that
            // for every example and generated services. A build with debug
            // assertions (the tests') type checks it here again; a release
            // build leaves that out, a tenth of the instructions of `render
            // --stdout` (callgrind, 1,000 services). The rules run on the
            // object either way.
            let problems = if cfg!(debug_assertions) { typecheck::typecheck(&value) } else { Vec::new() };
            if problems.is_empty() {
                objects.push(object(value));
            } else {
                // The derivation let a value through that the type
                // refuses: isvc's bug, reported like a template's.
                diags.extend(problems.into_iter().map(|p| {
                    Diagnostic::error(format!(
                        "rendered {id} (built-in templates/{}): {} at {}",
                        child.template,
                        p.message,
                        yaml::path_string(&p.path)
                    ))
                    .help("this is a bug in isvc; please report it with the input that caused it")
                }));
            }
            continue;
        }
        let ctx = ctx.get_or_insert_with(|| minijinja::Value::from(minijinja::value::Serde(desired)));
        let tsrc = templates.source(child.template);
        let rendered = templates.env.get_template(child.template).and_then(|t| t.render(&*ctx));
        let text = match rendered {
            Ok(text) => text,
            Err(e) => {
                let loc = tsrc.cloned().unwrap_or_else(|| Source::new(child.template, ""));
                diags.push(template_error(&loc, &e));
                continue;
            }
        };
        let label = format!("templates/{} (rendered for {}/{})", child.template, desired.namespace, desired.name);
        match parse_back(Source::new(label, text), &id) {
            Ok(value) => objects.push(object(value)),
            Err(d) => diags.extend(d),
        }
    }
    if diags.is_empty() { Ok(objects) } else { Err(diags) }
}

/// Parses a rendered document and checks that it is one valid object with
/// the identity `expected`.
pub fn parse_back(rendered: Arc<Source>, expected: &ObjectId) -> Result<Value, Vec<Diagnostic>> {
    let docs = yaml::parse_documents(&rendered, Limits::default()).map_err(|d| vec![d])?;
    let mut docs: Vec<yaml::Node> = docs.into_iter().flatten().collect();
    if docs.len() != 1 {
        return Err(vec![
            Diagnostic::error(format!(
                "template must render exactly one {} document, it rendered {}",
                expected.kind,
                docs.len()
            ))
            .at(Location::file(&rendered)),
        ]);
    }
    let node = docs.remove(0);
    let mut value = node.to_json();
    drop_nulls(&mut value);
    let at = |path: &[yaml::PathSegment]| Location::span(&rendered, node.at_path(path).span);
    let found = ObjectId::of(&value);
    if found.as_ref() != Some(expected) {
        let what = found.map_or_else(
            || "an object without apiVersion, kind or metadata.name".to_string(),
            |f| format!("{f} ({})", f.api_version),
        );
        return Err(vec![
            Diagnostic::error(format!("template rendered {what}, expected {expected} ({})", expected.api_version))
                .at(Location::span(&rendered, node.span))
                .help("a template may change an object's contents but not its apiVersion, kind, name or namespace"),
        ]);
    }
    let problems = typecheck::typecheck(&value);
    if !problems.is_empty() {
        return Err(problems
            .into_iter()
            .map(|p| Diagnostic::error(format!("rendered {expected}: {}", p.message)).at(at(&p.path)))
            .collect());
    }
    Ok(value)
}

/// Removes mapping entries whose value is null, at every depth.
pub fn drop_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => map.retain(|_, v| {
            drop_nulls(v);
            !v.is_null()
        }),
        Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(template: &str, v: &str) -> Result<Value, String> {
        let text = environment().render_str(template, minijinja::context! { v => v }).map_err(|e| e.to_string())?;
        let docs = yaml::parse_documents(&Source::new("t.yaml", text), Limits::default()).map_err(|d| d.message)?;
        Ok(docs.into_iter().flatten().next().map(|n| n.to_json()).unwrap_or(Value::Null))
    }

    #[test]
    fn a_value_cannot_add_keys_wherever_a_template_puts_it() {
        let hostile = [
            "', evil: '",
            "\", evil: \"",
            "x\nevil: y",
            "a: b",
            "x, evil: y",
            "} , evil: {",
            "# c",
            "&a *a !t |",
            "\\",
        ];
        let templates = [
            "k: {{ v }}",
            "k: '{{ v }}'",
            "k: \"{{ v }}-x\"",
            "{k: '{{ v }}'}",
            "{k: \"{{ v }}\"}",
            "{k: {{ v }}-x}",
            "k: [{{ v }}]",
        ];
        for t in templates {
            for v in hostile {
                if let Ok(value) = render(t, v) {
                    let keys: Vec<&String> = value.as_object().map(|m| m.keys().collect()).unwrap_or_default();
                    assert_eq!(keys, ["k"], "{t} with {v:?}: {value}");
                }
            }
        }
        // Bare, the value reads back exactly.
        for v in hostile {
            assert_eq!(render("k: {{ v }}", v).unwrap()["k"], Value::String(v.to_string()));
        }
    }
}
