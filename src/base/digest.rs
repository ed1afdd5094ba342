//! Content digests: what the manifest of an output tree records of every
//! input and output, and of each namespace's services.

use sha2::{Digest, Sha256};

/// The first 128 bits of the SHA-256 of `bytes`, in lower-case hex.
pub fn digest(bytes: &[u8]) -> String {
    hex128(&Sha256::digest(bytes))
}

/// A digest of several byte strings, each length-prefixed so that no two
/// lists of parts share one.
pub fn digest_parts<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> String {
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
        self.0.update((part.len() as u64).to_le_bytes());
        self.0.update(part);
    }

    /// The digest of the parts added, as [`digest`] writes one.
    pub fn finish(self) -> String {
        hex128(&self.0.finalize())
    }
}

/// Whether `text` is a digest as [`digest`] writes it: 32 lower-case hex
/// digits.
pub fn is_digest(text: &str) -> bool {
    // Every byte looked at, without a branch for each (the compiler then
    // checks them side by side): a manifest and a cache hold one digest a
    // file, some 70,000 for a tree of 10,000 services.
    let Ok(bytes) = <&[u8; 32]>::try_from(text.as_bytes()) else { return false };
    bytes.iter().fold(true, |hex, &b| hex & ((b.wrapping_sub(b'0') < 10) | (b.wrapping_sub(b'a') < 6)))
}

/// The first 128 bits of a SHA-256 hash, in lower-case hex: two digits a
/// byte, looked up (a tree of 10,000 services takes some 40,000 digests,
/// and a formatted string a byte cost 0.8% of a cold render's samples).
fn hex128(hash: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(32);
    for &b in &hash[..16] {
        hex.push(char::from(DIGITS[usize::from(b >> 4)]));
        hex.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    hex
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
            assert_eq!(hex128(chunk), expected);
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
