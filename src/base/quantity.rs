//! Kubernetes resource quantities (`500m`, `4`, `32Gi`, `1.5`): parsing,
//! exact scaling by whole numbers, and comparison.
//!
//! A quantity keeps the suffix it was written with, so `32Gi` x 2 is `64Gi`
//! and `500m` x 3 is `1500m`, as a person would write them.

use std::cmp::Ordering;
use std::fmt;

/// What the range error says: Kubernetes keeps quantities in 64 bits.
const RANGE: &str = "Kubernetes quantities are at most 9223372036854775807 (just under 8Ei)";

/// A parsed quantity: `digits / 10^scale`, times the suffix's multiplier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quantity {
    digits: i128,
    scale: u32,
    suffix: Suffix,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Suffix {
    None,
    Milli,
    Decimal(u32),
    Binary(u32),
}

const DECIMAL: [(&str, u32); 6] = [("k", 1), ("M", 2), ("G", 3), ("T", 4), ("P", 5), ("E", 6)];
const BINARY: [(&str, u32); 6] = [("Ki", 1), ("Mi", 2), ("Gi", 3), ("Ti", 4), ("Pi", 5), ("Ei", 6)];

impl Quantity {
    /// Parses the forms used in practice: an optional sign-less decimal
    /// number with an optional fraction, then `m`, a decimal (`k` .. `E`) or
    /// a binary (`Ki` .. `Ei`) suffix. Exponent forms (`1e3`) are accepted.
    pub fn parse(text: &str) -> Result<Quantity, String> {
        let t = text.trim();
        let number_end = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
        let (number, rest) = t.split_at(number_end);
        if number.is_empty() || number == "." || number.bytes().filter(|&b| b == b'.').count() > 1 {
            return Err(format!("\"{text}\" is not a quantity (for example 500m, 4, 32Gi)"));
        }
        let (int, frac) = number.split_once('.').unwrap_or((number, ""));
        let scale = frac.len() as u32;
        // The digits without the point, as one number (both parts are
        // ASCII digits only, not both empty).
        let mut digits: i128 = 0;
        for b in int.bytes().chain(frac.bytes()) {
            digits = digits
                .checked_mul(10)
                .and_then(|d| d.checked_add(i128::from(b - b'0')))
                .ok_or_else(|| format!("\"{text}\" has too many digits to be a quantity"))?;
        }
        let (digits, scale, suffix) = match rest {
            "" => (digits, scale, Suffix::None),
            "m" => (digits, scale, Suffix::Milli),
            s if s.starts_with(['e', 'E']) && s != "E" && !s.starts_with("Ei") => {
                let exp: i32 = s[1..].parse().map_err(|_| format!("\"{text}\" is not a quantity"))?;
                if !(-18..=18).contains(&exp) {
                    return Err(format!("\"{text}\" is out of range"));
                }
                if exp >= 0 {
                    let digits = digits
                        .checked_mul(10i128.pow(exp as u32))
                        .ok_or_else(|| format!("\"{text}\" is out of range: {RANGE}"))?;
                    (digits, scale, Suffix::None)
                } else {
                    (digits, scale + exp.unsigned_abs(), Suffix::None)
                }
            }
            s => {
                if let Some((_, p)) = DECIMAL.iter().find(|(n, _)| *n == s) {
                    (digits, scale, Suffix::Decimal(*p))
                } else if let Some((_, p)) = BINARY.iter().find(|(n, _)| *n == s) {
                    (digits, scale, Suffix::Binary(*p))
                } else {
                    return Err(format!(
                        "\"{text}\" has an unknown suffix \"{s}\" (use m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi or Ei)"
                    ));
                }
            }
        };
        if scale > 9 {
            return Err(format!("\"{text}\" has more precision than Kubernetes keeps"));
        }
        let q = Quantity { digits, scale, suffix };
        let max = i128::from(i64::MAX) * 1_000_000_000;
        match digits.checked_mul(q.suffix_nanos()) {
            Some(n) if n / 10i128.pow(scale) <= max => Ok(q),
            _ => Err(format!("\"{text}\" is out of range: {RANGE}")),
        }
    }

    /// The quantity times a whole number, in the same suffix.
    pub fn times(&self, n: i64) -> Quantity {
        Quantity { digits: self.digits.saturating_mul(n as i128), ..self.clone() }
    }

    /// The sum, in the suffix of the first non-zero operand when exact
    /// (`512Gi + 512Gi` is `1024Gi`), else in milli-units.
    pub fn plus(&self, other: &Quantity) -> Quantity {
        // Checked throughout: a sum too large for the arithmetic saturates
        // (and so exceeds every quota) instead of wrapping around.
        let total = self.nanos().saturating_add(other.nanos());
        let shape = if self.digits == 0 { other } else { self };
        for candidate in [shape, other, self] {
            let unit = candidate.suffix_nanos();
            for scale in candidate.scale..=9 {
                let Some(scaled) = total.checked_mul(10i128.pow(scale)) else { break };
                if scaled % unit == 0 {
                    return Quantity { digits: scaled / unit, scale, suffix: candidate.suffix };
                }
            }
        }
        Quantity { digits: total / 1_000_000, scale: 0, suffix: Suffix::Milli }
    }

    pub fn zero() -> Quantity {
        Quantity { digits: 0, scale: 0, suffix: Suffix::None }
    }

    /// The value in billionths of the base unit (cores, bytes, objects).
    pub fn nanos(&self) -> i128 {
        self.digits.saturating_mul(self.suffix_nanos()) / 10i128.pow(self.scale)
    }

    fn suffix_nanos(&self) -> i128 {
        match self.suffix {
            Suffix::None => 1_000_000_000,
            Suffix::Milli => 1_000_000,
            Suffix::Decimal(p) => 1_000_000_000 * 1000i128.pow(p),
            Suffix::Binary(p) => 1_000_000_000 * 1024i128.pow(p),
        }
    }
}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Quantity) -> Option<Ordering> {
        Some(self.nanos().cmp(&other.nanos()))
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ten = 10i128.pow(self.scale);
        let (int, mut frac, mut width) = (self.digits / ten, self.digits % ten, self.scale as usize);
        while width > 0 && frac % 10 == 0 {
            frac /= 10;
            width -= 1;
        }
        if width == 0 {
            write!(f, "{int}")?;
        } else {
            write!(f, "{int}.{frac:0width$}")?;
        }
        let suffix = match self.suffix {
            Suffix::None => "",
            Suffix::Milli => "m",
            Suffix::Decimal(p) => DECIMAL[p as usize - 1].0,
            Suffix::Binary(p) => BINARY[p as usize - 1].0,
        };
        f.write_str(suffix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    #[test]
    fn scales_in_the_written_suffix() {
        assert_eq!(q("32Gi").times(2).to_string(), "64Gi");
        assert_eq!(q("500m").times(3).to_string(), "1500m");
        assert_eq!(q("1.5").times(2).to_string(), "3");
        assert_eq!(q("0.25").times(1).to_string(), "0.25");
        assert_eq!(q("4").times(8).to_string(), "32");
    }

    #[test]
    fn compares_across_suffixes() {
        assert!(q("1Gi") > q("1G"));
        assert!(q("1500m") < q("2"));
        assert_eq!(q("1k").nanos(), q("1000").nanos());
        assert_eq!(q("1e3").nanos(), q("1k").nanos());
        assert_eq!(q("2Gi").plus(&q("512Mi")).to_string(), "2.5Gi");
        assert_eq!(q("1").plus(&q("500m")).to_string(), "1.5");
        assert_eq!(Quantity::zero().plus(&q("512Gi")).plus(&q("512Gi")).to_string(), "1024Gi");
    }

    #[test]
    fn rejects_what_kubernetes_rejects() {
        for bad in ["", "Gi", "1.2.3", "12GB", "-1", "1 Gi", "abc"] {
            assert!(Quantity::parse(bad).is_err(), "{bad}");
        }
        for huge in ["900000000000000000000000000000Ei", "8Ei", "9223372036854775808", "99999999999999999999e18"] {
            assert_eq!(Quantity::parse(huge).unwrap_err(), format!("\"{huge}\" is out of range: {RANGE}"), "{huge}");
        }
        assert!(Quantity::parse("9223372036854775807").is_ok() && Quantity::parse("7Ei").is_ok());
        // More digits than 128 bits hold, with the point anywhere.
        for many in ["1".repeat(40), format!("{}.5", "9".repeat(39)), format!("0.{}", "1".repeat(40))] {
            assert_eq!(Quantity::parse(&many).unwrap_err(), format!("\"{many}\" has too many digits to be a quantity"));
        }
        for exact in ["0.5", "1.25Gi", "1500m", "123456789012345678"] {
            assert_eq!(q(exact).to_string(), exact);
        }
    }

    #[test]
    fn sums_saturate_instead_of_wrapping() {
        let big = q("7Ei").times(i64::MAX);
        assert!(big.plus(&big) > q("7Ei"));
        assert!(big.plus(&q("64Gi")) > q("7Ei"));
    }
}
