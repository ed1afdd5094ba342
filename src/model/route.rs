//! A service's gateway route: a hostname, a path prefix, or both.

use std::fmt;

/// A parsed route: an optional hostname and a path prefix (`/` for all).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Route {
    pub host: Option<String>,
    pub path: String,
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.host, self.path.as_str()) {
            (Some(h), "/") => write!(f, "{h}"),
            (Some(h), p) => write!(f, "{h}{p}"),
            (None, p) => write!(f, "{p}"),
        }
    }
}

/// Parses `host`, `/path` or `host/path`. A trailing `/` is dropped, so
/// `a.example.com/x/` and `a.example.com/x` are the same route.
pub fn parse_route(text: &str) -> Result<Route, String> {
    let (host, path) = match text.find('/') {
        Some(0) => (None, text),
        Some(i) => (Some(&text[..i]), &text[i..]),
        None => (Some(text), "/"),
    };
    if let Some(h) = host {
        validate_hostname(h)?;
    }
    validate_path(path)?;
    let path = if path.len() > 1 { path.trim_end_matches('/') } else { path };
    Ok(Route { host: host.map(str::to_string), path: path.to_string() })
}

fn validate_hostname(host: &str) -> Result<(), String> {
    let name = host.strip_prefix("*.").unwrap_or(host);
    crate::base::names::dns1123_subdomain(name).map_err(|e| format!("hostname \"{host}\": {e}"))?;
    if name.split('.').all(|l| l.bytes().all(|b| b.is_ascii_digit())) {
        return Err(format!("hostname \"{host}\" is an IP address; a route needs a hostname"));
    }
    Ok(())
}

/// The Gateway API's rules for a path prefix.
fn validate_path(path: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("path \"{path}\" {why}"));
    if path.len() > 1024 {
        return bad("is longer than 1024 characters");
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || "-/._~!$&'()*+,;=:@%".contains(c);
    if let Some(c) = path.chars().find(|c| !allowed(*c)) {
        return bad(&format!("must not contain {c:?}"));
    }
    for part in ["//", "/./", "/../", "%2f", "%2F"] {
        if path.contains(part) {
            return bad(&format!("must not contain \"{part}\""));
        }
    }
    if path.ends_with("/..") || path.ends_with("/.") {
        return bad("must not end with \"/.\" or \"/..\"");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_are_a_host_a_prefix_or_both() {
        let r = |s| parse_route(s).map(|r| (r.host, r.path));
        assert_eq!(r("llm.example.com"), Ok((Some("llm.example.com".into()), "/".into())));
        assert_eq!(r("/qwen3/"), Ok((None, "/qwen3".into())));
        assert_eq!(r("llm.example.com/a/b"), Ok((Some("llm.example.com".into()), "/a/b".into())));
        assert_eq!(r("*.llm.example.com"), Ok((Some("*.llm.example.com".into()), "/".into())));
        assert_eq!(parse_route("llm.example.com/x/").unwrap(), parse_route("llm.example.com/x").unwrap());
        assert_eq!(parse_route("llm.example.com/x").unwrap().to_string(), "llm.example.com/x");
    }

    #[test]
    fn bad_routes_say_why() {
        assert_eq!(
            parse_route("LLM.example.com").unwrap_err(),
            "hostname \"LLM.example.com\": \"LLM\" must consist of lower case alphanumeric characters or '-'"
        );
        assert_eq!(
            parse_route("10.0.0.1/x").unwrap_err(),
            "hostname \"10.0.0.1\" is an IP address; a route needs a hostname"
        );
        assert_eq!(parse_route("/a//b").unwrap_err(), "path \"/a//b\" must not contain \"//\"");
        assert_eq!(parse_route("/a b").unwrap_err(), "path \"/a b\" must not contain ' '");
    }
}
