//! Block YAML from a JSON value, written straight into a `String`.
//!
//! The bytes are those serde-saphyr 2.2 writes for a `serde_json::Value`
//! with `prefer_block_scalars: false` and its other options at their
//! defaults (two-space indentation, compact lists under keys, `{}` and `[]`
//! for empty collections, YAML 1.1-safe quoting), which is what isvc wrote
//! before it had this emitter: the committed examples and every snapshot
//! stay byte for byte the same. The tests below keep serde-saphyr as the
//! oracle. Each decision mirrors a place in serde-saphyr 2.2.0
//! (github.com/bourumir-wyngs/serde-saphyr):
//!
//! - layout: `src/ser/serializer.rs` (`serialize_map`, `serialize_seq`,
//!   the scalars) and `src/ser/serializer/compound.rs` (`SeqSer`, `MapSer`:
//!   the first key or dash of a collection that is a list item stays on the
//!   dash's line, a list under a key is not indented, a key longer than
//!   1024 characters is written in the explicit `? key` / `: value` form);
//! - keys: `src/ser/serializer/helpers.rs` (`KeyScalarSink::serialize_str`:
//!   plain when safe both as a block key and in a flow mapping, else double
//!   quoted);
//! - values: `src/ser/serializer.rs` (`serialize_str`: `.`, `#` and `-`
//!   alone single quoted, otherwise plain when safe, else double quoted);
//! - the plain-scalar tests and the escapes: `src/ser/quoting.rs`;
//! - floats: `src/ser/zmij_format.rs` (zmij's shortest digits, then a `.0`
//!   or an exponent sign so that a YAML 1.1 reader takes a float).

use std::borrow::Cow;

use serde_json::{Number, Value};

/// Where a node starts.
#[derive(Clone, Copy)]
enum At {
    /// At the start of the document.
    Root,
    /// Right after `key:` of a block mapping whose keys are at `depth`.
    Value(usize),
    /// Right after the `:` that starts the value of an explicit `? key` of
    /// a mapping whose keys are at `depth`.
    ExplicitValue(usize),
    /// Right after the `- ` of a list item whose dash is at `depth`.
    Item(usize),
}

/// The longest key written as `key: value` (YAML 1.2.2, 7.4: an implicit
/// key is at most 1024 characters long); longer ones use `? key`.
const SIMPLE_KEY_MAX_LEN: usize = 1024;

/// Appends `value` to `out` as one block YAML document.
pub(super) fn document(value: &Value, out: &mut String) {
    node(value, At::Root, out);
}

/// Writes `value` starting `at` a place, down to its last line's newline.
/// A non-empty mapping under a key starts on the next line one level in; a
/// non-empty list under a key starts on the next line at the key's own
/// column; a collection that is a list item (or the value of an explicit
/// key, for a mapping) starts on that line; scalars and empty collections
/// stay on the line.
fn node(value: &Value, at: At, out: &mut String) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            // The keys' depth, and whether the first key goes on the
            // current line.
            let (depth, inline) = match at {
                At::Root => (0, false),
                At::Value(d) => {
                    out.push('\n');
                    (d + 1, false)
                }
                At::ExplicitValue(d) => {
                    out.push(' ');
                    (d + 1, true)
                }
                At::Item(d) => (d + 1, true),
            };
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 || !inline {
                    indent(out, depth);
                }
                let start = out.len();
                key(k, out);
                if is_simple_key(&out[start..]) {
                    out.push(':');
                    node(v, At::Value(depth), out);
                } else {
                    out.insert_str(start, "? ");
                    out.push('\n');
                    indent(out, depth);
                    out.push(':');
                    node(v, At::ExplicitValue(depth), out);
                }
            }
        }
        Value::Array(items) if !items.is_empty() => {
            // The dashes' depth, and whether the first dash goes on the
            // current line.
            let (depth, inline) = match at {
                At::Root => (0, false),
                At::Value(d) | At::ExplicitValue(d) => {
                    out.push('\n');
                    (d, false)
                }
                At::Item(d) => (d + 1, true),
            };
            for (i, item) in items.iter().enumerate() {
                if i > 0 || !inline {
                    indent(out, depth);
                }
                out.push_str("- ");
                node(item, At::Item(depth), out);
            }
        }
        scalar => {
            if matches!(at, At::Value(_) | At::ExplicitValue(_)) {
                out.push(' ');
            }
            match scalar {
                Value::Null => out.push_str("null"),
                Value::Bool(true) => out.push_str("true"),
                Value::Bool(false) => out.push_str("false"),
                Value::Number(n) => number(n, out),
                Value::String(s) => string(s, out),
                Value::Object(_) => out.push_str("{}"),
                Value::Array(_) => out.push_str("[]"),
            }
            out.push('\n');
        }
    }
}

fn indent(out: &mut String, depth: usize) {
    const SPACES: &str = "                                                                ";
    let mut n = 2 * depth;
    while n > SPACES.len() {
        out.push_str(SPACES);
        n -= SPACES.len();
    }
    out.push_str(&SPACES[..n]);
}

/// Whether a key, as written, fits an implicit key (serde-saphyr counts the
/// characters of the quoted text).
fn is_simple_key(text: &str) -> bool {
    text.len() <= SIMPLE_KEY_MAX_LEN || text.chars().count() <= SIMPLE_KEY_MAX_LEN
}

fn number(n: &Number, out: &mut String) {
    if let Some(u) = n.as_u64() {
        out.push_str(itoa::Buffer::new().format(u));
    } else if let Some(i) = n.as_i64() {
        out.push_str(itoa::Buffer::new().format(i));
    } else if let Some(f) = n.as_f64() {
        float(f, out);
    }
}

/// A float the way serde-saphyr writes it: zmij's shortest text with a
/// decimal point in the mantissa and a sign in the exponent (`1.0e+300`,
/// `4.0e-6`, `2.0`), so a YAML 1.1 reader reads a float back. (A JSON
/// number is always finite; `.nan` and `.inf` are there as serde-saphyr
/// has them.)
fn float(f: f64, out: &mut String) {
    if f.is_nan() {
        out.push_str(".nan");
        return;
    }
    if f.is_infinite() {
        out.push_str(if f > 0.0 { ".inf" } else { "-.inf" });
        return;
    }
    let mut buf = zmij::Buffer::new();
    let s = buf.format_finite(f);
    match s.find(['e', 'E']) {
        Some(e) => {
            let (mantissa, exponent) = (&s[..e], &s[e + 1..]);
            out.push_str(mantissa);
            if !mantissa.contains('.') {
                out.push_str(".0");
            }
            out.push_str(&s[e..=e]);
            if !exponent.starts_with(['+', '-']) {
                out.push('+');
            }
            out.push_str(exponent);
        }
        None => {
            out.push_str(s);
            if !s.contains('.') {
                out.push_str(".0");
            }
        }
    }
}

/// A mapping key: plain when it is safe as a plain key both in a block and
/// in a flow mapping, else double quoted.
fn key(k: &str, out: &mut String) {
    if plain_key(k) {
        out.push_str(k);
    } else {
        double_quoted(k, out);
    }
}

/// A string value: `.`, `#` and `-` single quoted, plain when safe, else
/// double quoted.
fn string(s: &str, out: &mut String) {
    match s {
        "." => out.push_str("'.'"),
        "#" => out.push_str("'#'"),
        "-" => out.push_str("'-'"),
        _ if plain_value(s) => out.push_str(s),
        _ => double_quoted(s, out),
    }
}

fn double_quoted(s: &str, out: &mut String) {
    out.push('"');
    if s.bytes().all(|c| (0x20..0x7f).contains(&c) && c != b'"' && c != b'\\') {
        out.push_str(s);
    } else {
        escape(s, out);
    }
    out.push('"');
}

/// The body of a double-quoted scalar (quoting.rs, `escape_double_quoted`):
/// YAML's named escapes where there is one, `\xXX` for the other C0 and C1
/// controls and DEL, `\uXXXX` for U+FFFE and U+FFFF.
fn escape(s: &str, out: &mut String) {
    let mut from = 0;
    for (i, ch) in s.char_indices() {
        let named = match ch {
            '\\' => "\\\\",
            '"' => "\\\"",
            '\0' => "\\0",
            '\u{7}' => "\\a",
            '\u{8}' => "\\b",
            '\t' => "\\t",
            '\n' => "\\n",
            '\u{b}' => "\\v",
            '\u{c}' => "\\f",
            '\r' => "\\r",
            '\u{1b}' => "\\e",
            '\u{feff}' => "\\uFEFF",
            '\u{85}' => "\\N",
            '\u{2028}' => "\\L",
            '\u{2029}' => "\\P",
            c if needs_escape(c) => "",
            _ => continue,
        };
        out.push_str(&s[from..i]);
        from = i + ch.len_utf8();
        if named.is_empty() {
            let n = ch as u32;
            let (prefix, digits) = if n <= 0xff { ("\\x", 2) } else { ("\\u", 4) };
            out.push_str(prefix);
            for shift in (0..digits).rev() {
                out.push(char::from(b"0123456789ABCDEF"[((n >> (4 * shift)) & 0xf) as usize]));
            }
        } else {
            out.push_str(named);
        }
    }
    out.push_str(&s[from..]);
}

/// Characters that a plain or single-quoted scalar cannot hold
/// (quoting.rs, `is_controll_which_needs_escaping`): the C0 and C1
/// controls, DEL, the byte order mark, the line and paragraph separators,
/// and the noncharacters U+FFFE and U+FFFF.
fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{feff}' | '\u{2028}' | '\u{2029}' | '\u{fffe}' | '\u{ffff}')
}

/// Whether a value string can be written plain (quoting.rs,
/// `is_plain_value_safe` with YAML 1.1 checks, block context). The order of
/// the checks differs from serde-saphyr's for speed; the answer does not.
fn plain_value(s: &str) -> bool {
    if !plain_start_and_end(s) || ambiguous(s, false) || document_marker(s) {
        return false;
    }
    let b = s.as_bytes();
    // No edge white space (checked above), so `s.trim()` ends where `s`
    // does (for the text after a non-ASCII byte as well: `trim` would take
    // Unicode white space, which such a text then reads below).
    if b[b.len() - 1] == b':' {
        return false;
    }
    let mut prev = 0u8;
    for &c in b {
        let class = CLASS[usize::from(c)];
        if class != 0 {
            // A control character, `: ` or ` #` (the only ASCII white
            // space before a `#` that is not itself a control is the
            // space); past ASCII, the text is read by characters.
            if class & CONTROL != 0 || (class & SPACE != 0 && prev == b':') || (class & HASH != 0 && prev == b' ') {
                return false;
            }
            if class & NON_ASCII != 0 {
                return !(s.contains(": ")
                    || s.trim().ends_with(':')
                    || s.chars().any(needs_escape)
                    || comment_start(s));
            }
        }
        prev = c;
    }
    true
}

/// The bytes the plain-scalar tests of an ASCII text stop at, by class (one
/// table lookup a byte instead of a chain of comparisons; 4% of the
/// instructions of `render --stdout` went to those chains).
const CONTROL: u8 = 1;
/// `:`, `,`, `[`, `]`, `{` and `}`: not in a plain key.
const FLOW: u8 = 2;
const HASH: u8 = 4;
const SPACE: u8 = 8;
const NON_ASCII: u8 = 16;

const CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = match c as u8 {
            0..=0x1f | 0x7f => CONTROL,
            b':' | b',' | b'[' | b']' | b'{' | b'}' => FLOW,
            b'#' => HASH,
            b' ' => SPACE,
            0x80.. => NON_ASCII,
            _ => 0,
        };
        c += 1;
    }
    t
};

/// Whether a key can be written plain: serde-saphyr asks both
/// `is_plain_safe` (a block key: no `:` at all, YAML 1.2 checks) and
/// `is_plain_value_safe` in flow context (no `,[]{}`, YAML 1.1 checks).
fn plain_key(s: &str) -> bool {
    // Ambiguous in YAML 1.1 or 1.2: the 1.2 words are among the 1.1 ones.
    if !plain_start_and_end(s) || ambiguous(s, false) || numeric(s, true) || document_marker(s) {
        return false;
    }
    let mut prev = 0u8;
    for &c in s.as_bytes() {
        let class = CLASS[usize::from(c)];
        if class != 0 {
            if class & (CONTROL | FLOW) != 0 || (class & HASH != 0 && prev == b' ') {
                return false;
            }
            if class & NON_ASCII != 0 {
                return !(s.chars().any(|c| needs_escape(c) || matches!(c, ':' | ',' | '[' | ']' | '{' | '}'))
                    || comment_start(s));
            }
        }
        prev = c;
    }
    true
}

/// A plain scalar must be non-empty, must not begin or end with ASCII white
/// space, and must not begin with an indicator (`-` and `?` only alone or
/// before white space).
fn plain_start_and_end(s: &str) -> bool {
    let b = s.as_bytes();
    let (Some(&first), Some(&last)) = (b.first(), b.last()) else {
        return false;
    };
    if first.is_ascii_whitespace() || last.is_ascii_whitespace() {
        return false;
    }
    match first {
        b'-' | b'?' => b.len() > 1 && !b[1].is_ascii_whitespace(),
        b',' | b':' | b'[' | b']' | b'{' | b'}' | b'#' | b'&' | b'*' | b'!' | b'|' | b'>' | b'\'' | b'"' | b'%'
        | b'@' | b'`' => false,
        _ => true,
    }
}

/// A `#` after white space would start a comment.
fn comment_start(s: &str) -> bool {
    s.match_indices('#').any(|(i, _)| s[..i].chars().next_back().is_some_and(char::is_whitespace))
}

/// `---` or `...` alone or before white space.
fn document_marker(s: &str) -> bool {
    s.strip_prefix("---")
        .or_else(|| s.strip_prefix("..."))
        .is_some_and(|rest| rest.as_bytes().first().is_none_or(u8::is_ascii_whitespace))
}

/// Whether a reader could resolve the plain scalar `s` to something other
/// than a string (quoting.rs, `is_ambiguous`). `s` is non-empty and has no
/// ASCII white space at its ends (the callers check that first), so the
/// YAML 1.1 boolean test needs no trimming.
fn ambiguous(s: &str, yaml_12: bool) -> bool {
    // Most keys and strings: a letter first rules out a number and a
    // timestamp (each starts with a digit, a sign, `.` or `_`), leaving
    // the words, none longer than five bytes.
    if s.as_bytes().first().is_some_and(u8::is_ascii_alphabetic) {
        return s.len() <= 5 && ambiguous_word(s, yaml_12);
    }
    ambiguous_word(s, yaml_12) || numeric(s, yaml_12) || (!yaml_12 && yaml11_timestamp(s))
}

/// The words (in any case) that read as null, a boolean or a float: `~`,
/// `null`, `true`, `false`, `nan`, `inf`, `±inf`, and in YAML 1.1 also
/// `y`, `yes`, `on`, `n`, `no`, `off`, and `<<` and `=` (merge and value
/// keys).
fn ambiguous_word(s: &str, yaml_12: bool) -> bool {
    let mut buf = [0u8; 5];
    let Some(lower) = crate::base::lowercase_in(s, &mut buf) else { return false };
    match lower {
        b"~" | b"null" | b"true" | b"false" | b"nan" | b"inf" | b"+inf" | b"-inf" => true,
        b"y" | b"yes" | b"on" | b"n" | b"no" | b"off" | b"<<" | b"=" => !yaml_12,
        _ => false,
    }
}

/// Whether `s` reads as a number (quoting.rs, `is_numeric`): YAML 1.2 core
/// and JSON spellings, `.inf` and `.nan`, and with YAML 1.1 also base 60,
/// `_` separators anywhere (as Go YAML strips them) and `0b`/`0o` with a
/// sign after the prefix.
fn numeric(s: &str, yaml_12: bool) -> bool {
    if !matches!(s.as_bytes().first(), Some(b'0'..=b'9' | b'+' | b'-' | b'.' | b'_')) {
        return false;
    }
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    // After its sign, every number starts with a digit, `.` or `_` (a
    // server flag such as `--port` is none).
    if !matches!(unsigned.as_bytes().first(), Some(b'0'..=b'9' | b'.' | b'_')) {
        return false;
    }
    if unsigned.eq_ignore_ascii_case(".inf") || unsigned.eq_ignore_ascii_case(".nan") {
        return true;
    }
    if !yaml_12 {
        if yaml11_sexagesimal(s) {
            return true;
        }
        if let Some((radix, digits)) = radix_prefix(unsigned)
            && digit_run(digits, radix, false)
        {
            return true;
        }
    }
    let stripped: Cow<str> =
        if !yaml_12 && s.contains('_') { Cow::Owned(s.replace('_', "")) } else { Cow::Borrowed(s) };
    let s = stripped.as_ref();
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    if let Some((radix, digits)) = radix_prefix(unsigned) {
        let digits = if !yaml_12 && (s.starts_with("0b") || s.starts_with("0o")) {
            digits.strip_prefix(['+', '-']).unwrap_or(digits)
        } else {
            digits
        };
        return digit_run(digits, radix, true);
    }
    let mantissa = match unsigned.split_once(['e', 'E']) {
        Some((mantissa, exponent)) => {
            if !digit_run(exponent.strip_prefix(['+', '-']).unwrap_or(exponent), 10, true) {
                return false;
            }
            mantissa
        }
        None => unsigned,
    };
    match mantissa.split_once('.') {
        Some((whole, fraction)) => {
            if !whole.is_empty() && !digit_run(whole, 10, true) {
                false
            } else if !yaml_12 {
                fraction.bytes().all(|b| b.is_ascii_digit() || b == b'.')
            } else if fraction.is_empty() {
                !whole.is_empty()
            } else {
                digit_run(fraction, 10, true)
            }
        }
        None => digit_run(mantissa, 10, true),
    }
}

fn radix_prefix(s: &str) -> Option<(u32, &str)> {
    match s.as_bytes() {
        [b'0', b'b' | b'B', ..] => Some((2, &s[2..])),
        [b'0', b'o' | b'O', ..] => Some((8, &s[2..])),
        [b'0', b'x' | b'X', ..] => Some((16, &s[2..])),
        _ => None,
    }
}

/// A non-empty run of digits of `radix` and `_`; with `strict`, every `_`
/// stands between two digits.
fn digit_run(s: &str, radix: u32, strict: bool) -> bool {
    let b = s.as_bytes();
    let digit = |c: u8| char::from(c).is_digit(radix) && c.is_ascii();
    !b.is_empty()
        && b.iter().enumerate().all(|(i, &c)| {
            digit(c)
                || (c == b'_' && (!strict || (i > 0 && digit(b[i - 1]) && b.get(i + 1).is_some_and(|&n| digit(n)))))
        })
}

/// YAML 1.1 base 60: `[-+]? [1-9][0-9_]* (: [0-5]?[0-9])+` as an integer,
/// `[-+]? [0-9][0-9_]* (: [0-5]?[0-9])+ \. [0-9_]*` as a float.
fn yaml11_sexagesimal(s: &str) -> bool {
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (integer, fraction) = match unsigned.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (unsigned, None),
    };
    let Some((first, rest)) = integer.split_once(':') else {
        return false;
    };
    let Some(&lead) = first.as_bytes().first() else {
        return false;
    };
    if !lead.is_ascii_digit()
        || (fraction.is_none() && lead == b'0')
        || !first.bytes().all(|b| b.is_ascii_digit() || b == b'_')
    {
        return false;
    }
    rest.split(':').all(|part| match part.as_bytes() {
        [d] => d.is_ascii_digit(),
        [t, u] => matches!(t, b'0'..=b'5') && u.is_ascii_digit(),
        _ => false,
    }) && fraction.is_none_or(|f| f.bytes().all(|b| b.is_ascii_digit() || b == b'_'))
}

/// YAML 1.1 timestamps, as Go YAML reads them: `YYYY-M-D`, optionally
/// followed by `T`, `t` or blanks, `h:m:s`, a fraction after `.` or `,`,
/// blanks, and `Z` or a `±h[:mm]` offset.
fn yaml11_timestamp(s: &str) -> bool {
    struct Cursor<'a>(&'a str);
    impl Cursor<'_> {
        fn digits(&mut self, min: usize, max: usize) -> bool {
            let n = self.0.bytes().take_while(u8::is_ascii_digit).count();
            let ok = (min..=max).contains(&n);
            if ok {
                self.0 = &self.0[n..];
            }
            ok
        }
        fn eat(&mut self, c: char) -> bool {
            match self.0.strip_prefix(c) {
                Some(rest) => {
                    self.0 = rest;
                    true
                }
                None => false,
            }
        }
        fn blanks(&mut self) {
            self.0 = self.0.trim_start_matches([' ', '\t']);
        }
    }
    let mut c = Cursor(s);
    if !(c.digits(4, 4) && c.eat('-') && c.digits(1, 2) && c.eat('-') && c.digits(1, 2)) {
        return false;
    }
    if c.0.is_empty() {
        return true;
    }
    if !(c.eat('T') || c.eat('t')) {
        let before = c.0.len();
        c.blanks();
        if c.0.len() == before {
            return false;
        }
    }
    if !(c.digits(1, 2) && c.eat(':') && c.digits(1, 2) && c.eat(':') && c.digits(1, 2)) {
        return false;
    }
    if c.eat('.') || c.eat(',') {
        c.digits(0, usize::MAX);
    }
    c.blanks();
    if c.0.is_empty() || c.0 == "Z" {
        return true;
    }
    if !((c.eat('+') || c.eat('-')) && c.digits(1, 2)) {
        return false;
    }
    if c.eat(':') && !c.digits(2, 2) {
        return false;
    }
    c.0.is_empty()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Number, Value, json};

    use crate::base::diagnostics::Source;
    use crate::base::yaml::{Limits, parse_documents};

    /// What isvc wrote before this emitter: the oracle.
    fn saphyr(value: &Value) -> String {
        let options = serde_saphyr::ser_options! {
            prefer_block_scalars: false,
        };
        serde_saphyr::to_string_with_options(value, options).unwrap()
    }

    fn emit(value: &Value) -> String {
        let mut out = String::new();
        super::document(value, &mut out);
        out
    }

    /// The emitted text, read back by isvc's own parser.
    fn read_back(text: &str) -> Value {
        // Escaped control characters are the point here, not an input error.
        let limits = Limits { printable_only: false, ..Limits::default() };
        let docs = parse_documents(&Source::new("emitted.yaml", text), limits)
            .unwrap_or_else(|e| panic!("emitted text does not parse: {}\n{text}", e.message));
        assert_eq!(docs.len(), 1, "{text}");
        // A document holding only `null` is an empty document to the parser.
        docs[0].as_ref().map_or(Value::Null, |root| root.to_json())
    }

    /// `value` as the parser gives it back: it holds integers as i64, so an
    /// integer above i64::MAX reads back as a float.
    fn as_read(value: &Value) -> Value {
        match value {
            Value::Number(n) if n.as_u64().is_some_and(|u| u > i64::MAX as u64) => Value::from(n.as_f64().unwrap()),
            Value::Array(items) => Value::Array(items.iter().map(as_read).collect()),
            Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), as_read(v))).collect()),
            other => other.clone(),
        }
    }

    /// Whether a mapping anywhere in `value` has the key `<<`: the parser
    /// takes even a quoted `<<` for a merge key, so such values do not read
    /// back as written.
    fn has_merge_key(value: &Value) -> bool {
        match value {
            Value::Array(items) => items.iter().any(has_merge_key),
            Value::Object(map) => map.iter().any(|(k, v)| k == "<<" || has_merge_key(v)),
            _ => false,
        }
    }

    fn check(value: &Value) {
        let ours = emit(value);
        assert_eq!(ours, saphyr(value), "differs from serde-saphyr for {value:?}");
        if !has_merge_key(value) {
            assert_eq!(read_back(&ours), as_read(value), "does not read back:\n{ours}");
        }
    }

    /// Pieces of hostile text: YAML indicators, white space and line breaks
    /// of every kind, controls, unusual Unicode, digits and number parts,
    /// and words that a YAML 1.1 or 1.2 reader takes for something else.
    const PIECES: &[&str] = &[
        "-",
        "?",
        ":",
        ",",
        "[",
        "]",
        "{",
        "}",
        "#",
        "&",
        "*",
        "!",
        "|",
        ">",
        "'",
        "\"",
        "%",
        "@",
        "`",
        "\\",
        " ",
        "  ",
        "\n",
        "\t",
        "\r",
        "\u{b}",
        "\u{c}",
        "\u{85}",
        "\u{a0}",
        "\u{2028}",
        "\u{2029}",
        "\u{3000}",
        "\u{feff}",
        "\u{fffe}",
        "\u{ffff}",
        "\u{0}",
        "\u{1}",
        "\u{7}",
        "\u{8}",
        "\u{1b}",
        "\u{7f}",
        "\u{80}",
        "\u{9f}",
        "\u{200b}",
        "\u{e000}",
        "\u{1f600}",
        "\u{10ffff}",
        "é",
        "字",
        "0",
        "1",
        "5",
        "7",
        "9",
        "12",
        "60",
        ".",
        "e",
        "E",
        "x",
        "o",
        "b",
        "_",
        "+",
        "=",
        "~",
        "<<",
        "---",
        "...",
        ": ",
        " #",
        "on",
        "On",
        "No",
        "n",
        "Y",
        "yes",
        "OFF",
        "NULL",
        "null",
        "Null",
        "true",
        "False",
        "TRUE",
        ".NaN",
        ".inf",
        "-.Inf",
        "+.INF",
        "nan",
        "inf",
        "0x",
        "0o",
        "0b",
        "0X1F",
        "0755",
        "1_000",
        "12:30",
        "1:20:30.5",
        "1e3",
        "2001-12-14",
        "2001-12-14t21:59:43.10-05:00",
        "T",
        "t",
        "Z",
        "a",
        "key",
        "value",
        "http://x",
        "a b",
    ];

    /// The pieces that make most of the plain-or-quoted decisions.
    const COMMON: &[&str] = &["-", "?", ":", "#", " ", "\n", "a", "0", "1", ".", "_", "e", "+", "~"];

    fn text() -> impl Strategy<Value = String> {
        let piece = prop_oneof![prop::sample::select(PIECES), prop::sample::select(COMMON)];
        prop::collection::vec(piece, 0..6).prop_map(|p| p.concat())
    }

    /// Text around the 1024 characters where a key becomes explicit
    /// (`? key`), counting its quotes and escapes.
    fn long_text() -> impl Strategy<Value = String> {
        (prop::sample::select(&["a", "é", "\u{1}", "\"", "a:", "x y", "\u{1f600}"][..]), 250usize..1100)
            .prop_map(|(piece, n)| piece.repeat(n / piece.chars().count()))
    }

    fn string() -> impl Strategy<Value = String> {
        prop_oneof![8 => text(), 2 => any::<String>(), 1 => long_text(), 2 => "[a-z][a-z0-9./-]{0,20}"]
    }

    fn number() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            prop::sample::select(&[i64::MIN, i64::MAX, 0, -1, 1][..]).prop_map(Value::from),
            Just(Value::from(u64::MAX)),
            any::<f64>().prop_filter_map("finite", |f| Number::from_f64(f).map(Value::Number)),
            prop::sample::select(
                &[
                    -0.0,
                    0.0,
                    0.1,
                    1.0,
                    -2.5,
                    100.0,
                    1e15,
                    1e16,
                    1e21,
                    1e22,
                    1e300,
                    -1e300,
                    1e-7,
                    2.5e-5,
                    5e-324,
                    f64::MAX,
                    f64::MIN,
                    f64::MIN_POSITIVE,
                    f64::EPSILON,
                ][..]
            )
            .prop_map(Value::from),
        ]
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            number(),
            string().prop_map(Value::String),
            Just(json!({})),
            Just(json!([])),
        ];
        leaf.prop_recursive(6, 96, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((string(), inner), 0..6)
                    .prop_map(|entries| Value::Object(entries.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

        #[test]
        fn any_value_is_written_as_serde_saphyr_writes_it(v in value()) {
            check(&v);
        }

        #[test]
        fn any_string_is_quoted_as_serde_saphyr_quotes_it(s in string()) {
            // As the root, a value, a key and a list item.
            check(&Value::String(s.clone()));
            check(&json!({"k": s.clone(), s.clone(): 1, "l": [s.clone(), {s.clone(): [s]}]}));
        }

        /// The short cut of `ambiguous`: a letter first, then only the
        /// words of five bytes or fewer, quoted only for what else it holds.
        #[test]
        fn a_long_string_led_by_a_letter_is_quoted_as_serde_saphyr_quotes_it(s in "[A-Za-z][ -~\\t\u{80}-\u{10FFFF}]{5,16}") {
            check(&json!({"k": s.clone(), s.clone(): 1, "l": [s.clone(), {s.clone(): [s]}]}));
        }

        #[test]
        fn a_short_string_led_by_a_letter_is_quoted_as_serde_saphyr_quotes_it(s in "[A-Za-z][ -~]{0,4}") {
            check(&json!({"k": s.clone(), s.clone(): 1, "l": [s.clone(), {s.clone(): [s]}]}));
        }

        /// The short cut of `numeric`: after the sign, a digit, `.` or `_`.
        #[test]
        fn a_string_led_by_a_sign_is_quoted_as_serde_saphyr_quotes_it(s in "[+-][-+._0-9a-fA-FxXoObBeE:]{0,8}") {
            check(&json!({"k": s.clone(), s.clone(): 1, "l": [s.clone(), {s.clone(): [s]}]}));
        }
    }

    #[test]
    fn hostile_strings_are_written_as_serde_saphyr_writes_them() {
        let mut cases: Vec<String> = PIECES.iter().map(|p| p.to_string()).collect();
        for a in PIECES {
            for b in ["", "a", " ", ":", "#", "0", "_", "."] {
                cases.push(format!("{a}{b}"));
                cases.push(format!("{b}{a}"));
                cases.push(format!("x{a}{b}y"));
                cases.push(format!("{a}{b}y"));
            }
        }
        for s in cases {
            check(&json!({"v": s.clone(), s.clone(): [s.clone()], "m": [{s.clone(): s}]}));
        }
    }

    #[test]
    fn keys_over_1024_characters_are_explicit_as_in_serde_saphyr() {
        // 1024 characters with the quotes are still a simple key; 1025 are not.
        for key in ["a".repeat(1024), "a".repeat(1025), ":".repeat(1022), ":".repeat(1023), "é".repeat(1100)] {
            for value in [json!(1), json!({}), json!([]), json!({"a": 1, "b": [1]}), json!([1, {"c": 2}])] {
                check(&json!({ key.clone(): value.clone() }));
                check(&json!([{ key.clone(): value.clone(), "next": value.clone() }]));
                check(&json!({"outer": { "x": 1, key.clone(): { key.clone(): value.clone() } }}));
            }
        }
        let text = emit(&json!({"a".repeat(1025): {"b": 1, "c": 2}}));
        assert_eq!(text, format!("? {}\n: b: 1\n  c: 2\n", "a".repeat(1025)));
    }

    #[test]
    fn layout_of_nested_collections() {
        let v = json!({
            "a": {"b": [1, [2, [3, {}]], [], {"c": {"d": []}, "e": [{"f": 1}, {}]}]},
            "g": [[{"h": 1, "i": 2}]],
            "j": {},
        });
        check(&v);
        assert_eq!(
            emit(&v),
            "a:\n  b:\n  - 1\n  - - 2\n    - - 3\n      - {}\n  - []\n  - c:\n      d: []\n    e:\n    - f: 1\n    - {}\ng:\n- - h: 1\n    i: 2\nj: {}\n"
        );
        for root in [json!(null), json!(true), json!(1.5), json!("x"), json!({}), json!([]), json!([[]]), json!([{}])] {
            check(&root);
        }
    }

    #[test]
    fn floats_are_written_as_serde_saphyr_writes_them() {
        for f in [0.1, -0.0, 1e300, 1e-7, 5e-324, 1e15, 1e16, 1e21, 123456789.125, f64::MAX] {
            check(&json!({ "f": f }));
        }
        assert_eq!(emit(&json!([1e300, -0.0, 2.0, 0.1, 1e-7])), "- 1.0e+300\n- -0.0\n- 2.0\n- 0.1\n- 1.0e-7\n");
    }
}
