//! Kubernetes name, label and annotation rules, checked before anything is
//! written. Each function returns `Err` with the reason in the words of the
//! API server's own validation.

/// A DNS-1035 label: what a Service name must be. A DNS-1123 label that
/// starts with a letter.
pub fn dns1035_label(s: &str) -> Result<(), String> {
    dns1123_label(s)?;
    if !s.as_bytes()[0].is_ascii_lowercase() {
        return Err("must start with a lower case letter (a Service name is a DNS-1035 label)".to_string());
    }
    Ok(())
}

/// A DNS-1123 label: what a namespace name must be.
pub fn dns1123_label(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("must not be empty".to_string());
    }
    if s.len() > 63 {
        return Err(format!("must be no more than 63 characters (it has {})", s.len()));
    }
    if !s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
        return Err("must consist of lower case alphanumeric characters or '-'".to_string());
    }
    if s.starts_with('-') || s.ends_with('-') {
        return Err("must start and end with a lower case letter or digit".to_string());
    }
    Ok(())
}

/// `text` with every character outside `A-Z a-z 0-9 / . _ - + @ ,`
/// percent-escaped as its UTF-8 bytes (`%0A` for a newline, `%25` for `%`),
/// so input text can be shown on one line of a comment without closing it.
pub fn escape_path(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-' | '+' | '@' | ',') {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

/// A DNS-1123 subdomain: dot-separated labels, at most 253 characters.
pub fn dns1123_subdomain(s: &str) -> Result<(), String> {
    if s.len() > 253 {
        return Err(format!("must be no more than 253 characters (it has {})", s.len()));
    }
    for part in s.split('.') {
        dns1123_label(part).map_err(|e| format!("\"{part}\" {e}"))?;
    }
    Ok(())
}

/// A label or annotation key: an optional DNS subdomain prefix and '/', then
/// a name of at most 63 characters of alphanumerics, '-', '_' and '.',
/// starting and ending with an alphanumeric.
pub fn qualified_name(s: &str) -> Result<(), String> {
    let (prefix, name) = match s.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, s),
    };
    if let Some(p) = prefix {
        if p.is_empty() {
            return Err("prefix before '/' must not be empty".to_string());
        }
        dns1123_subdomain(p).map_err(|e| format!("prefix {e}"))?;
    }
    label_value(name, false).map_err(|e| format!("name part {e}"))
}

/// A label value: empty, or at most 63 alphanumerics, '-', '_' and '.',
/// starting and ending with an alphanumeric.
pub fn label_value(s: &str, allow_empty: bool) -> Result<(), String> {
    if s.is_empty() {
        return if allow_empty { Ok(()) } else { Err("must not be empty".to_string()) };
    }
    if s.len() > 63 {
        return Err(format!("must be no more than 63 characters (it has {})", s.len()));
    }
    if !s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')) {
        return Err("must consist of alphanumeric characters, '-', '_' or '.'".to_string());
    }
    let (first, last) = (s.as_bytes()[0], s.as_bytes()[s.len() - 1]);
    if !first.is_ascii_alphanumeric() || !last.is_ascii_alphanumeric() {
        return Err("must start and end with an alphanumeric character".to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_paths_keep_to_one_safe_line() {
        assert_eq!(escape_path("services/llama-3.1_b.yaml"), "services/llama-3.1_b.yaml");
        assert_eq!(escape_path("a\n---\nkind: X.yaml"), "a%0A---%0Akind%3A%20X.yaml");
        assert_eq!(escape_path("50%\\é"), "50%25%5C%C3%A9");
    }

    #[test]
    fn service_names_start_with_a_letter() {
        assert!(dns1035_label("qwen3").is_ok());
        assert!(dns1035_label("3qwen").unwrap_err().contains("start with a lower case letter"));
        assert!(dns1035_label("Qwen").is_err());
        assert!(dns1035_label("qwen-").is_err());
        assert!(dns1035_label(&"a".repeat(64)).is_err());
        assert!(dns1035_label(&"a".repeat(63)).is_ok());
    }

    #[test]
    fn namespaces_may_start_with_a_digit() {
        assert!(dns1123_label("0team").is_ok());
        assert!(dns1123_label("team_a").is_err());
    }

    #[test]
    fn label_keys_and_values() {
        assert!(qualified_name("app.kubernetes.io/name").is_ok());
        assert!(qualified_name("team").is_ok());
        assert!(qualified_name("/x").is_err());
        assert!(qualified_name("Bad_Prefix/x").is_err());
        assert!(label_value("", true).is_ok());
        assert!(label_value("a b", true).is_err());
        assert!(label_value("-a", true).is_err());
    }
}
