//! Content digests: what the manifest of an output tree records of every
//! input and output, and of each namespace's services.

use sha2::Sha256;

/// A digest as [`digest`] writes it: 32 lower-case hex digits, held in
/// place. A manifest and a cache hold one a file, some 70,000 for a tree of
/// 10,000 services, and a run copies each from list to list: as a `String`
/// each copy was an allocation of its own (a re-render after one change
/// at 10,000 services made 949,000 allocations with them, 803,000 without;
/// benches/README.md). Only [`digest`], [`Parts`], [`Digest::parse`] and
/// [`Digest::parse_bytes`] make one, so every `Digest` is one isvc could
/// have written.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest([u8; 32]);

impl Digest {
    /// `text`, if it is a digest as [`digest`] writes it ([`is_digest`]).
    pub fn parse(text: &str) -> Option<Digest> {
        Digest::parse_bytes(text.as_bytes())
    }

    /// [`Digest::parse`] of bytes.
    pub fn parse_bytes(bytes: &[u8]) -> Option<Digest> {
        let hex = <[u8; 32]>::try_from(bytes).ok()?;
        is_hex(&hex).then_some(Digest(hex))
    }

    /// Its 32 hex digits.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    pub fn as_str(&self) -> &str {
        // Only hex digits are ever stored (see the type's comment).
        std::str::from_utf8(&self.0).expect("hex digits")
    }
}

impl std::ops::Deref for Digest {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Display for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Debug for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq<str> for Digest {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Digest {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<Digest> for &str {
    fn eq(&self, other: &Digest) -> bool {
        *self == other.as_str()
    }
}

impl serde::Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// The first 128 bits of the SHA-256 of `bytes`, in lower-case hex.
pub fn digest(bytes: &[u8]) -> Digest {
    use sha2::Digest as _;
    hex128(&Sha256::digest(bytes))
}

/// A digest of several byte strings, each length-prefixed so that no two
/// lists of parts share one.
pub fn digest_parts<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> Digest {
    let mut hash = Parts::default();
    parts.into_iter().for_each(|p| hash.push(p));
    hash.finish()
}

/// [`digest_parts`] of parts given one at a time.
#[derive(Default)]
pub struct Parts(Sha256);

impl Parts {
    /// Adds the next part.
    pub fn push(&mut self, part: &[u8]) {
        use sha2::Digest as _;
        self.0.update((part.len() as u64).to_le_bytes());
        self.0.update(part);
    }

    /// The digest of the parts added, as [`digest`] writes one.
    pub fn finish(self) -> Digest {
        use sha2::Digest as _;
        hex128(&self.0.finalize())
    }
}

/// Whether `text` is a digest as [`digest`] writes it: 32 lower-case hex
/// digits.
pub fn is_digest(text: &str) -> bool {
    <&[u8; 32]>::try_from(text.as_bytes()).is_ok_and(is_hex)
}

/// Whether all 32 bytes are lower-case hex digits. Every byte is looked at,
/// without a branch for each (the compiler then checks them side by
/// side): a manifest and a cache hold one digest a file, some 70,000 for
/// a tree of 10,000 services.
fn is_hex(bytes: &[u8; 32]) -> bool {
    bytes.iter().fold(true, |hex, &b| hex & ((b.wrapping_sub(b'0') < 10) | (b.wrapping_sub(b'a') < 6)))
}

/// The first 128 bits of a SHA-256 hash, in lower-case hex: two digits a
/// byte, looked up (a tree of 10,000 services takes some 40,000 digests,
/// and a formatted string a byte cost 0.8% of a cold render's samples).
fn hex128(hash: &[u8]) -> Digest {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = [0; 32];
    for (i, &b) in hash[..16].iter().enumerate() {
        hex[2 * i] = DIGITS[usize::from(b >> 4)];
        hex[2 * i + 1] = DIGITS[usize::from(b & 0xf)];
    }
    Digest(hex)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_the_first_half_of_sha256() {
        // SHA-256 of the empty string: e3b0c442 98fc1c14 9afbf4c8 996fb924 ...
        assert_eq!(digest(b""), "e3b0c44298fc1c149afbf4c8996fb924");
    }

    #[test]
    fn every_byte_is_two_lower_case_hex_digits() {
        let bytes: Vec<u8> = (0..=255).collect();
        for chunk in bytes.chunks(16) {
            let expected: String = chunk.iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(hex128(chunk), *expected);
        }
    }

    #[test]
    fn a_digest_is_32_lower_case_hex_digits() {
        assert!(is_digest(&digest(b"x")));
        for not in [
            "",
            "e3b0c44298fc1c149afbf4c8996fb92",
            "E3B0C44298FC1C149AFBF4C8996FB924",
            "e3b0c44298fc1c149afbf4c8996fb92g",
        ] {
            assert!(!is_digest(not), "{not}");
        }
    }

    #[test]
    fn parts_are_kept_apart() {
        assert_ne!(digest_parts([&b"ab"[..], b"c"]), digest_parts([&b"a"[..], b"bc"]));
        assert_eq!(digest_parts([&b"ab"[..], b"c"]), digest_parts([&b"ab"[..], b"c"]));
    }
}
