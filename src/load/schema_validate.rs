//! Checks a parsed YAML tree against the JSON Schema generated from the Rust
//! types, reporting every problem at once with its position.
//!
//! The schema is the one `isvc schema` writes for editors, so editors and
//! the compiler agree on what a file may say. The checker knows the subset
//! of JSON Schema that schemars emits: `type`, `properties`, `required`,
//! `additionalProperties`, `items`, `enum`, `const`, `minimum`, `maximum`,
//! `minLength`, `maxLength`, `minItems`, `maxItems`, `$ref`, `allOf`,
//! `anyOf` and `oneOf`. A general JSON Schema validator would lose the
//! source positions and the "did you mean" help that this one gives.

use std::sync::Arc;

use serde_json::Value;

use crate::base::diagnostics::{Diagnostic, Location, Source, did_you_mean};
use crate::base::value::At;
use crate::base::yaml::{Node, NodeValue, Step, steps_string};

/// Checks `node` against `schema` (whose `$defs` hold referenced types).
pub fn validate(node: &Node, schema: &Value, source: &Arc<Source>) -> Vec<Diagnostic> {
    let mut validator = Validator { root: schema, source, diags: Vec::new() };
    validator.validate(node, schema, &mut Vec::new());
    validator.diags
}

struct Validator<'a> {
    root: &'a Value,
    source: &'a Arc<Source>,
    diags: Vec<Diagnostic>,
}

impl<'a> Validator<'a> {
    fn resolve(&self, schema: &'a Value) -> &'a Value {
        let mut s = schema;
        for _ in 0..32 {
            match s.field("$ref").and_then(Value::as_str) {
                Some(r) => {
                    let name = r.rsplit('/').next().unwrap_or_default();
                    let defs = self.root.field("$defs").or_else(|| self.root.field("definitions"));
                    match defs.and_then(|d| d.field(name)) {
                        Some(target) => s = target,
                        None => return s,
                    }
                }
                None => return s,
            }
        }
        s
    }

    fn error(&mut self, node: &Node, message: String) -> &mut Diagnostic {
        self.diags.push(Diagnostic::error(message).at(Location::span(self.source, node.span)));
        self.diags.last_mut().expect("just pushed")
    }

    fn validate<'n>(&mut self, node: &'n Node, schema: &'a Value, path: &mut Vec<Step<'n>>) {
        let schema = self.resolve(schema);
        if let Some(all) = schema.field("allOf").and_then(Value::as_array) {
            for s in all {
                self.validate(node, s, path);
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(branches) = schema.field(key).and_then(Value::as_array) {
                self.validate_branches(node, branches, path);
            }
        }
        if let Some(types) = schema.field("type")
            && !type_matches(node, types)
        {
            let expected = describe_types(types);
            let found = describe_node(node);
            let field = path_text(path);
            let msg = if field.is_empty() {
                format!("expected {expected}, found {found}")
            } else {
                format!("\"{field}\" must be {expected}, found {found}")
            };
            let help = type_help(node, types);
            let d = self.error(node, msg);
            if let Some(h) = help {
                d.help = Some(h);
            }
            return;
        }
        if let Some(allowed) = schema.field("const") {
            self.validate_enum(node, std::slice::from_ref(allowed), path);
        }
        if let Some(allowed) = schema.field("enum").and_then(Value::as_array) {
            self.validate_enum(node, allowed, path);
        }
        match &node.value {
            NodeValue::Map(entries) => self.validate_map(node, entries, schema, path),
            NodeValue::Seq(items) => {
                if let Some(min) = schema.field("minItems").and_then(Value::as_u64)
                    && (items.len() as u64) < min
                {
                    let field = path_text(path);
                    self.error(node, format!("\"{field}\" needs at least {min} items, found {}", items.len()));
                }
                if let Some(max) = schema.field("maxItems").and_then(Value::as_u64)
                    && (items.len() as u64) > max
                {
                    let field = path_text(path);
                    self.error(node, format!("\"{field}\" takes at most {max} items, found {}", items.len()));
                }
                if let Some(item_schema) = schema.field("items") {
                    for (i, item) in items.iter().enumerate() {
                        path.push(Step::Index(i));
                        self.validate(item, item_schema, path);
                        path.pop();
                    }
                }
            }
            NodeValue::Int(_) | NodeValue::Float(_) => self.validate_range(node, schema, path),
            NodeValue::Str(s) => self.validate_length(node, s, schema, path),
            NodeValue::Null | NodeValue::Bool(_) => {}
        }
    }

    fn validate_branches<'n>(&mut self, node: &'n Node, branches: &'a [Value], path: &[Step<'n>]) {
        let mut best: Option<Vec<Diagnostic>> = None;
        for branch in branches {
            let mut sub = Validator { root: self.root, source: self.source, diags: Vec::new() };
            sub.validate(node, branch, &mut path.to_vec());
            if sub.diags.is_empty() {
                return;
            }
            // Prefer the branch that got furthest: a type error on the node
            // itself means the branch was not what the user meant.
            let is_type_error =
                sub.diags.len() == 1 && sub.diags[0].location.as_ref().and_then(|l| l.span) == Some(node.span);
            let score = if is_type_error { usize::MAX } else { sub.diags.len() };
            let best_score = best.as_ref().map_or(usize::MAX, |b| {
                if b.len() == 1 && b[0].location.as_ref().and_then(|l| l.span) == Some(node.span) {
                    usize::MAX
                } else {
                    b.len()
                }
            });
            if best.is_none() || score < best_score {
                best = Some(sub.diags);
            }
        }
        if let Some(diags) = best {
            self.diags.extend(diags);
        }
    }

    fn validate_enum(&mut self, node: &Node, allowed: &[Value], path: &[Step<'_>]) {
        // A string (as enums mostly are) compared where it lies; any other
        // value as JSON.
        let found = match &node.value {
            NodeValue::Str(s) => allowed.iter().any(|a| a.as_str() == Some(s)),
            _ => allowed.contains(&node.to_json()),
        };
        if found {
            return;
        }
        let value = node.to_json();
        let names: Vec<String> =
            allowed.iter().map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string)).collect();
        let field = path_text(path);
        let list = names.join(", ");
        let msg = match names.len() {
            1 => format!("\"{field}\" must be {}, found {}", quote(&names[0]), describe_node(node)),
            _ => format!("\"{field}\" must be one of {list}, found {}", describe_node(node)),
        };
        let help = value
            .as_str()
            .and_then(|s| did_you_mean(s, names.iter().map(String::as_str)).map(|m| format!("did you mean \"{m}\"?")));
        let d = self.error(node, msg);
        d.help = help;
    }

    fn validate_range(&mut self, node: &Node, schema: &Value, path: &[Step<'_>]) {
        let v = match node.value {
            NodeValue::Int(i) => i as f64,
            NodeValue::Float(f) => f,
            _ => return,
        };
        let shown = || node.to_json().to_string();
        if let Some(min) = schema.field("minimum").and_then(Value::as_f64)
            && v < min
        {
            let (field, shown) = (path_text(path), shown());
            self.error(node, format!("\"{field}\" must be at least {}, found {shown}", num(min)));
            return;
        }
        if let Some(max) = schema.field("maximum").and_then(Value::as_f64)
            && v > max
        {
            let (field, shown) = (path_text(path), shown());
            self.error(node, format!("\"{field}\" must be at most {}, found {shown}", num(max)));
        }
    }

    fn validate_length(&mut self, node: &Node, s: &str, schema: &Value, path: &[Step<'_>]) {
        let len = s.chars().count() as u64;
        if let Some(min) = schema.field("minLength").and_then(Value::as_u64)
            && len < min
        {
            let field = path_text(path);
            let msg = if min == 1 {
                format!("\"{field}\" must not be empty")
            } else {
                format!("\"{field}\" must be at least {min} characters long")
            };
            self.error(node, msg);
        }
        if let Some(max) = schema.field("maxLength").and_then(Value::as_u64)
            && len > max
        {
            let field = path_text(path);
            self.error(node, format!("\"{field}\" must be at most {max} characters long, found {len}"));
        }
    }

    fn validate_map<'n>(
        &mut self,
        node: &Node,
        entries: &'n [(crate::base::yaml::Key, Node)],
        schema: &'a Value,
        path: &mut Vec<Step<'n>>,
    ) {
        let properties = schema.field("properties").and_then(Value::as_object);
        let additional = schema.field("additionalProperties");
        // The map's own path, named where a problem is reported.
        let depth = path.len();
        let here = |path: &[Step<'_>]| path_text(&path[..depth]);
        for (key, value) in entries {
            path.push(Step::Key(&key.name));
            match properties.and_then(|p| crate::base::value::field(p, &key.name)) {
                Some(sub) => self.validate(value, sub, path),
                None => match additional {
                    Some(Value::Bool(false)) => {
                        let names: Vec<&str> =
                            properties.map(|p| p.keys().map(String::as_str).collect()).unwrap_or_default();
                        let field = here(path);
                        let place = if field.is_empty() { String::new() } else { format!(" in \"{field}\"") };
                        let elsewhere = ELSEWHERE.iter().find(|(f, k, _)| *f == field && *k == key.name);
                        let help = match did_you_mean(&key.name, names.iter().copied()) {
                            _ if elsewhere.is_some() => elsewhere.map(|(_, _, h)| h.to_string()).unwrap_or_default(),
                            Some(m) => format!("did you mean \"{m}\"?"),
                            None if names.is_empty() => "remove it".to_string(),
                            None => format!("expected one of: {}", names.join(", ")),
                        };
                        let d = Diagnostic::error(format!("unknown field \"{}\"{place}", key.name))
                            .at(Location::span(self.source, key.span))
                            .help(help);
                        self.diags.push(d);
                    }
                    Some(sub @ Value::Object(_)) => self.validate(value, sub, path),
                    _ => {}
                },
            }
            path.pop();
        }
        if let Some(required) = schema.field("required").and_then(Value::as_array) {
            for name in required.iter().filter_map(Value::as_str) {
                if !entries.iter().any(|(k, _)| k.name == name) {
                    // An unknown key that looks like this one has already
                    // been reported with "did you mean"; one error is enough.
                    let misspelt = entries.iter().any(|(k, _)| {
                        properties.is_none_or(|p| !p.contains_key(&k.name))
                            && did_you_mean(
                                &k.name,
                                properties
                                    .map(|p| p.keys().map(String::as_str).collect::<Vec<_>>())
                                    .unwrap_or_default(),
                            ) == Some(name)
                    });
                    if !misspelt {
                        let field = here(path);
                        let what = if field.is_empty() { String::new() } else { format!(" in \"{field}\"") };
                        self.error(node, format!("missing required field \"{name}\"{what}"));
                    }
                }
            }
        }
    }
}

/// Fields that live elsewhere than where they are easily written: (the map,
/// the key, where it goes).
const ELSEWHERE: &[(&str, &str, &str)] = &[
    (
        "defaults.modelCache",
        "storageClassName",
        "the shared model cache is the top-level `modelCache: {storageClassName, size}`; defaults.modelCache sizes each pod's own emptyDir",
    ),
    (
        "defaults.modelCache",
        "size",
        "the shared model cache is the top-level `modelCache: {storageClassName, size}`; defaults.modelCache sizes each pod's own emptyDir (sizeLimit)",
    ),
    ("defaults", "accelerators", "accelerator profiles are a top-level list of the platform file, `accelerators:`"),
];

/// A path as users write it (`spec.containers[0].image`), made only for a
/// problem's message: a valid file's walk names none.
fn path_text(path: &[Step<'_>]) -> String {
    steps_string(path.iter().copied())
}

fn type_matches(node: &Node, types: &Value) -> bool {
    let one = |t: &str| {
        matches!(
            (&node.value, t),
            (NodeValue::Null, "null")
                | (NodeValue::Bool(_), "boolean")
                | (NodeValue::Int(_), "integer" | "number")
                | (NodeValue::Float(_), "number")
                | (NodeValue::Str(_), "string")
                | (NodeValue::Seq(_), "array")
                | (NodeValue::Map(_), "object")
        )
    };
    match types {
        Value::String(t) => one(t),
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).any(one),
        _ => true,
    }
}

fn describe_types(types: &Value) -> String {
    let name = |t: &str| match t {
        "null" => "null",
        "boolean" => "a boolean (true or false)",
        "integer" => "an integer",
        "number" => "a number",
        "string" => "a string",
        "array" => "a list",
        "object" => "a mapping",
        _ => "a value",
    };
    match types {
        Value::String(t) => name(t).to_string(),
        Value::Array(ts) => {
            let names: Vec<&str> = ts.iter().filter_map(Value::as_str).filter(|t| *t != "null").map(name).collect();
            names.join(" or ")
        }
        _ => "a value".to_string(),
    }
}

fn describe_node(node: &Node) -> String {
    match &node.value {
        NodeValue::Null => "nothing (null)".to_string(),
        NodeValue::Str(s) if s.chars().count() > 40 => {
            format!("a string ({:?}...)", s.chars().take(40).collect::<String>())
        }
        NodeValue::Seq(_) | NodeValue::Map(_) => node.type_name().to_string(),
        NodeValue::Float(f) if f.is_nan() => "a number (NaN, not a number)".to_string(),
        NodeValue::Float(f) if f.is_infinite() => {
            format!("a number ({}infinity, or too large to hold)", if *f < 0.0 { "minus " } else { "" })
        }
        _ => format!("{} ({})", node.type_name(), node.to_json()),
    }
}

fn type_help(node: &Node, types: &Value) -> Option<String> {
    let wants = |t: &str| match types {
        Value::String(s) => s == t,
        Value::Array(ts) => ts.iter().any(|x| x == t),
        _ => false,
    };
    match &node.value {
        NodeValue::Str(s) if (wants("integer") || wants("number")) && s.trim().parse::<f64>().is_ok() => {
            Some(format!("remove the quotes: {}", s.trim()))
        }
        NodeValue::Str(s) if wants("boolean") => match s.to_ascii_lowercase().as_str() {
            "yes" | "on" | "y" => Some("YAML 1.2 reads this as a string; write true".to_string()),
            "no" | "off" | "n" => Some("YAML 1.2 reads this as a string; write false".to_string()),
            _ => None,
        },
        NodeValue::Float(f) if wants("integer") && f.is_finite() && f.abs() < 2f64.powi(31) => {
            Some(format!("use a whole number, for example {}", f.round()))
        }
        NodeValue::Float(_) if wants("integer") || wants("number") => {
            Some("use a whole number within the field's range".to_string())
        }
        NodeValue::Int(_) | NodeValue::Float(_) | NodeValue::Bool(_) if wants("string") => {
            Some(format!("quote it to make it a string: \"{}\"", node.to_json()))
        }
        NodeValue::Null if wants("string") || wants("object") || wants("array") => {
            Some("give it a value or remove the line".to_string())
        }
        _ => None,
    }
}

fn quote(s: &str) -> String {
    format!("\"{s}\"")
}

fn num(f: f64) -> String {
    if f.fract() == 0.0 { format!("{}", f as i64) } else { f.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::yaml::{Limits, parse_documents};

    fn errors(schema: Value, text: &str) -> Vec<String> {
        let src = Source::new("t.yaml", text);
        let node = parse_documents(&src, Limits::default()).unwrap().remove(0).unwrap();
        validate(&node, &schema, &src)
            .iter()
            .map(|d| format!("{}: {}", d.location.as_ref().unwrap(), d.message))
            .collect()
    }

    fn schema() -> Value {
        serde_json::json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["model", "replicas"],
            "properties": {
                "model": {"type": "string", "minLength": 1},
                "replicas": {"type": "integer", "minimum": 0},
                "mode": {"anyOf": [{"$ref": "#/$defs/Mode"}, {"type": "null"}]}
            },
            "$defs": {"Mode": {"type": "string", "enum": ["Online", "Offline"]}}
        })
    }

    #[test]
    fn reports_every_problem() {
        let errs = errors(schema(), "model: ''\nreplica: 3\nmode: Onlin\n");
        assert_eq!(
            errs,
            vec![
                "t.yaml:1:8: \"model\" must not be empty",
                "t.yaml:2:1: unknown field \"replica\"",
                "t.yaml:3:7: \"mode\" must be one of Online, Offline, found a string (\"Onlin\")",
            ]
        );
    }

    #[test]
    fn missing_fields_are_reported_when_nothing_looks_like_them() {
        assert_eq!(errors(schema(), "model: m\n"), vec!["t.yaml:1:1: missing required field \"replicas\""]);
    }

    #[test]
    fn wrong_types_say_what_was_expected() {
        assert_eq!(
            errors(schema(), "model: m\nreplicas: \"3\"\n"),
            vec!["t.yaml:2:11: \"replicas\" must be an integer, found a string (\"3\")"]
        );
        assert_eq!(
            errors(schema(), "model: m\nreplicas: 1.5\n"),
            vec!["t.yaml:2:11: \"replicas\" must be an integer, found a number (1.5)"]
        );
        assert_eq!(
            errors(schema(), "model: m\nreplicas: -1\n"),
            vec!["t.yaml:2:11: \"replicas\" must be at least 0, found -1"]
        );
    }
}
