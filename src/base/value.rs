//! Reading a JSON value by path, and JSON strings quoted and unquoted
//! for the line-based files isvc keeps (a tree's manifest, the cache of
//! file status).

use std::borrow::Cow;

use serde_json::Value;

/// [`Value::pointer`] without its cost: serde_json decodes the escapes of
/// every segment of a JSON pointer (RFC 6901) into two new strings, even a
/// segment with no escape in it, and the rules read fields by pointer
/// millions of times in a render. The answer is the same for every
/// pointer (the tests hold the two equal).
pub trait At {
    /// The value at `pointer` (`/spec/template/spec`), if there is one.
    fn at(&self, pointer: &str) -> Option<&Value>;

    /// The field `key` of an object, as [`Value::get`] finds it, and
    /// faster for the small maps most objects are made of ([`field`]).
    fn field(&self, key: &str) -> Option<&Value>;
}

impl At for Value {
    fn field(&self, key: &str) -> Option<&Value> {
        self.as_object().and_then(|map| field(map, key))
    }

    fn at(&self, pointer: &str) -> Option<&Value> {
        if pointer.is_empty() {
            return Some(self);
        }
        let mut target = self;
        // Pointers are literals of the rules, seldom with an escape: the
        // whole pointer is searched for one once, not each token.
        let escaped = pointer.as_bytes().contains(&b'~');
        // Split with a predicate rather than a `char` pattern: these
        // pointers are short, and the pattern's searcher cost more to set
        // up than the scan (callgrind: this function 4% fewer instructions).
        #[allow(clippy::manual_pattern_char_comparison, reason = "the predicate is the faster split here")]
        for token in pointer.strip_prefix('/')?.split(|c: char| c == '/') {
            let token = unescape(token, escaped);
            target = match target {
                Value::Object(map) => field(map, &token)?,
                Value::Array(list) => list.get(index(&token)?)?,
                _ => return None,
            };
        }
        Some(target)
    }
}

/// A key of a JSON pointer (RFC 6901) with its escapes undone (`~1` is
/// `/`, `~0` is `~`); `escaped` says whether the pointer has any.
#[inline]
pub(crate) fn unescape(token: &str, escaped: bool) -> Cow<'_, str> {
    if escaped && token.as_bytes().contains(&b'~') {
        Cow::Owned(token.replace("~1", "/").replace("~0", "~"))
    } else {
        Cow::Borrowed(token)
    }
}

/// The field `key` of `map`. Most objects' maps hold a handful of fields:
/// those are searched in order, comparing lengths first, which costs less
/// than hashing the key (serde_json's maps hash with SipHash).
pub fn field<'a>(map: &'a serde_json::Map<String, Value>, key: &str) -> Option<&'a Value> {
    if map.len() <= SEARCHED {
        map.iter().find(|(k, _)| k.len() == key.len() && *k == key).map(|(_, v)| v)
    } else {
        map.get(key)
    }
}

/// The most fields a map may hold for [`field`] to search it in order.
const SEARCHED: usize = 16;

/// A list index as a JSON pointer spells it: decimal digits, no sign, no
/// leading zero (serde_json's `parse_index`).
pub(crate) fn index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
        return None;
    }
    token.parse().ok()
}

/// Appends `text` to `out` as a JSON string, as `serde_json::to_string`
/// writes it; a text with nothing to escape (most paths and names) is
/// copied between quotes without the serializer.
pub fn push_quoted(out: &mut String, text: &str) {
    if escapes(text) {
        out.push_str(&serde_json::to_string(text).unwrap_or_default());
    } else {
        out.push('"');
        out.push_str(text);
        out.push('"');
    }
}

/// The text of the JSON string `quoted`, `None` if it is not one: borrowed
/// when nothing in it is escaped.
pub fn unquote(quoted: &str) -> Option<Cow<'_, str>> {
    match quoted.strip_prefix('"').and_then(|q| q.strip_suffix('"')) {
        Some(plain) if !escapes(plain) => Some(Cow::Borrowed(plain)),
        _ => serde_json::from_str::<String>(quoted).ok().map(Cow::Owned),
    }
}

/// Whether a JSON string escapes a byte of `text`. Every byte is looked
/// at, without a branch for each (the compiler then checks them side by
/// side): a manifest and a cache of file status quote and unquote a path
/// on each of their tens of thousands of lines.
fn escapes(text: &str) -> bool {
    text.bytes().fold(false, |escaped, b| escaped | needs_escape(b))
}

/// A byte a JSON string escapes (RFC 8259, section 7): a quote, a
/// backslash or a control character.
fn needs_escape(b: u8) -> bool {
    (b == b'"') | (b == b'\\') | (b < 0x20)
}

/// How many bytes of whole lines [`parse_lines`] parses as one piece:
/// about 400 lines of a manifest or a cache of file status.
pub const PIECE_BYTES: usize = 1 << 16;

/// What `parse` makes of each line of `text`, in order; `None` once it
/// gives `None` for a line. `parse` is given the line's offset in `text`
/// and the line with its newline, if it has one. The lines are parsed on
/// every core, in pieces of whole lines of about [`PIECE_BYTES`], each of
/// which stops at its first line `parse` refuses.
///
/// Where the items of every line take no more than twice the text's
/// bytes (a manifest's or a cache's lines: some 40 to 140 bytes each, for
/// items of about 90), the lines are counted first and each piece fills
/// its own part of one list: no list per piece grown by doubling, then
/// copied into the whole (at 10,000 services, a check of an up-to-date
/// tree peaked 11 MiB lower and took 0.96x the time; benches/README.md).
/// Any other text (short lines: a text of anything else) is parsed piece
/// by piece into lists gathered after, so that it costs no more than its
/// first lines, and no list of every line is made first.
pub fn parse_lines<T: Send>(text: &str, parse: impl Fn(usize, &str) -> Option<T> + Sync) -> Option<Vec<T>> {
    use rayon::prelude::*;
    let pieces = line_pieces(text, PIECE_BYTES);
    let counts: Vec<usize> = pieces.par_iter().map(|(_, p)| lines_in(p)).collect();
    let total: usize = counts.iter().sum();
    if !fits_one_list::<T>(total, text.len()) {
        return parse_pieces(&pieces, &parse);
    }
    let mut items: Vec<Option<T>> = Vec::new();
    items.resize_with(total, || None);
    let mut parts = Vec::with_capacity(pieces.len());
    let mut rest = items.as_mut_slice();
    for &n in &counts {
        let (part, after) = rest.split_at_mut(n);
        parts.push(part);
        rest = after;
    }
    let parsed = pieces.par_iter().zip(parts).all(|(&(start, piece), part)| {
        let mut at = start;
        for (line, slot) in piece.split_inclusive('\n').zip(part.iter_mut()) {
            let offset = at;
            at += line.len();
            match parse(offset, line) {
                Some(item) => *slot = Some(item),
                None => return false,
            }
        }
        true
    });
    // (Gathered in place where an item's `Option` is no larger than the
    // item, as with a niche.)
    if parsed { items.into_iter().collect() } else { None }
}

/// Whether the items of `lines` lines take no more than twice the `bytes`
/// of their text, for [`parse_lines`] to make one list of them up front.
fn fits_one_list<T>(lines: usize, bytes: usize) -> bool {
    lines.saturating_mul(std::mem::size_of::<Option<T>>()) <= bytes.saturating_mul(2)
}

/// [`parse_lines`] of `pieces`, each into a list of its own, gathered
/// after: each piece stops at its first line `parse` refuses.
fn parse_pieces<T: Send>(
    pieces: &[(usize, &str)],
    parse: &(impl Fn(usize, &str) -> Option<T> + Sync),
) -> Option<Vec<T>> {
    use rayon::prelude::*;
    let parsed: Vec<Option<Vec<T>>> = pieces
        .par_iter()
        .map(|&(start, piece)| {
            let mut at = start;
            piece
                .split_inclusive('\n')
                .map(|line| {
                    let offset = at;
                    at += line.len();
                    parse(offset, line)
                })
                .collect()
        })
        .collect();
    // Sized up front: a list grown by doubling takes fresh memory at each
    // step, and a fresh page costs the system its zeroing.
    let mut items = Vec::with_capacity(parsed.iter().flatten().map(Vec::len).sum());
    for piece in parsed {
        items.extend(piece?);
    }
    Some(items)
}

/// How many lines `piece` holds, as `split_inclusive('\n')` counts them.
fn lines_in(piece: &str) -> usize {
    let newlines = piece.bytes().filter(|&b| b == b'\n').count();
    newlines + usize::from(!piece.is_empty() && !piece.ends_with('\n'))
}

/// `text` cut into pieces of whole lines, each of about `bytes` bytes (a
/// line longer than that is a piece of its own), with their offsets.
fn line_pieces(text: &str, bytes: usize) -> Vec<(usize, &str)> {
    let mut pieces = Vec::with_capacity(text.len() / bytes + 1);
    let mut at = 0;
    while at < text.len() {
        let end = (at + bytes).min(text.len());
        // Cut after a newline: a byte of its own in UTF-8, so the cut falls
        // between characters.
        let end = text.as_bytes()[end..].iter().position(|&b| b == b'\n').map_or(text.len(), |n| end + n + 1);
        pieces.push((at, &text[at..end]));
        at = end;
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn document() -> Value {
        json!({
            "spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}},
            "a/b": {"m~n": 1},
            "": {"": 2},
            "0": [3],
        })
    }

    #[test]
    fn line_pieces_are_whole_lines_and_cover_the_text() {
        let text = "ab\nçé\n\nlong line here\nz";
        for bytes in 1..=text.len() + 1 {
            let pieces = line_pieces(text, bytes);
            assert_eq!(pieces.iter().map(|(_, p)| *p).collect::<String>(), text, "{bytes}");
            assert!(pieces[..pieces.len() - 1].iter().all(|(_, p)| p.ends_with('\n')), "{bytes}: {pieces:?}");
            assert!(pieces.iter().all(|&(at, p)| text[at..].starts_with(p)), "{bytes}: {pieces:?}");
        }
        assert!(line_pieces("", 4).is_empty());
    }

    #[test]
    fn lines_are_parsed_in_order_with_their_offsets_until_one_is_refused() {
        let text: String = (0..3 * PIECE_BYTES / 4).map(|n| format!("{n}\n")).collect();
        let parsed =
            parse_lines(&text, |at, line| Some((at, line.strip_suffix('\n')?.parse::<usize>().ok()?))).unwrap();
        assert_eq!(parsed.len(), 3 * PIECE_BYTES / 4);
        assert!(parsed.iter().enumerate().all(|(n, &(at, v))| v == n && text[at..].starts_with(&format!("{n}\n"))));
        let refused = format!("{text}x\n{text}");
        assert_eq!(parse_lines(&refused, |_, line| line.strip_suffix('\n')?.parse::<usize>().ok()), None);
        assert_eq!(parse_lines("", |_, _| Some(())), Some(Vec::new()));
    }

    #[test]
    fn long_lines_are_parsed_into_one_list_as_short_ones_piece_by_piece() {
        // Lines of 68 bytes, for items of 24 (as options): one list, its
        // parts filled by each piece; lines of a few bytes: piece by piece.
        let pad = "x".repeat(60);
        let long: String = (0..3 * PIECE_BYTES / 64).map(|n| format!("{n:>6} {pad}\n")).collect();
        let short: String = (0..3 * PIECE_BYTES / 4).map(|n| format!("{n}\n")).collect();
        let number = |line: &str| line.split_whitespace().next()?.parse::<usize>().ok();
        type Item = (usize, usize);
        assert!(fits_one_list::<Item>(long.lines().count(), long.len()));
        assert!(!fits_one_list::<Item>(short.lines().count(), short.len()));
        for text in [&long, &short] {
            let parsed = parse_lines(text, |at, line| Some((at, number(line)?))).unwrap();
            assert_eq!(parsed.len(), text.lines().count());
            let line_at = |at: usize| text[at..].lines().next().and_then(number);
            assert!(parsed.iter().enumerate().all(|(n, &(at, v))| v == n && line_at(at) == Some(n)));
            // A line refused anywhere refuses the text; so does a last
            // line without its newline that `parse` refuses.
            let refused = format!("{text}{pad}\n{text}");
            assert_eq!(parse_lines(&refused, |_, line| number(line)), None);
            assert_eq!(parse_lines(&format!("{text}{pad}"), |_, line| number(line)), None);
            // A last line without its newline is a line.
            let unended = format!("{text}7");
            assert_eq!(parse_lines(&unended, |_, line| number(line)).map(|v| v.len()), Some(text.lines().count() + 1));
        }
        assert_eq!(lines_in(""), 0);
        assert_eq!(lines_in("a"), 1);
        assert_eq!(lines_in("a\n"), 1);
        assert_eq!(lines_in("a\nb"), 2);
    }

    #[test]
    fn reads_as_serde_json_reads() {
        let v = document();
        for p in [
            "",
            "/",
            "//",
            "/spec",
            "/spec/template/spec/containers/1/name",
            "/spec/template/spec/containers/01/name",
            "/spec/template/spec/containers/+1",
            "/spec/template/spec/containers/2",
            "/spec/template/spec/containers/-1",
            "/a~1b/m~0n",
            "/a~1b/m~n",
            "/a/b",
            "/0/0",
            "spec",
            "/spec/missing/x",
        ] {
            assert_eq!(v.at(p), v.pointer(p), "{p:?}");
        }
    }

    proptest! {
        #[test]
        fn strings_quote_and_unquote_as_serde_json_does(text in "\\PC{0,12}|[a-z/\"\\\\\u{0}-\u{1f}\u{7f}é]{0,12}") {
            let mut quoted = String::new();
            push_quoted(&mut quoted, &text);
            prop_assert_eq!(&quoted, &serde_json::to_string(&text).unwrap());
            prop_assert_eq!(unquote(&quoted).map(|t| t.into_owned()), Some(text.clone()));
            // Not one JSON string: what serde_json refuses, refused.
            for bad in [format!("{quoted} "), format!("\"{text}"), text.clone()] {
                prop_assert_eq!(unquote(&bad).map(|t| t.into_owned()), serde_json::from_str::<String>(&bad).ok());
            }
        }

        #[test]
        fn any_pointer_reads_as_serde_json_reads(
            segments in proptest::collection::vec("[a-z0-9~/+]{0,4}|spec|template|containers|0|1", 0..5),
        ) {
            let v = document();
            let p: String = segments.iter().map(|s| format!("/{s}")).collect();
            prop_assert_eq!(v.at(&p), v.pointer(&p));
        }
    }
}
