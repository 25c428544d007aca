//! The output hash of a race report: FNV-1a (64-bit) over the transcript
//! lines a run printed. A fixed, documented function of the printed text, so
//! the same run hashes the same on every machine and every Rust version
//! (unlike `std`'s `RandomState` or the `Hash` impls of std types).

use std::fmt::{self, Write as _};
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use courier_core::{Output, Refusal};

const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0000_0100_0000_01b3;

/// A running FNV-1a 64 hash of text.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct OutputHash(u64);

impl Default for OutputHash {
    fn default() -> Self {
        Self(OFFSET_BASIS)
    }
}

impl OutputHash {
    /// Adds what one input printed, as `courier run` prints it: the error
    /// line of a refusal, else one line per output; then an empty line, so
    /// the hash also pins which input printed which lines.
    pub fn add(&mut self, result: &Result<(), Refusal>, outputs: &[Output]) {
        match result {
            Err(refusal) => writeln!(self, "error: {refusal}"),
            Ok(()) => outputs
                .iter()
                .try_for_each(|output| writeln!(self, "{output}")),
        }
        .expect("hashing never fails");
        self.write_bytes(b"\n");
    }

    fn write_bytes(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0 ^ u64::from(*byte)).wrapping_mul(PRIME);
        }
    }
}

/// The hash as reports print it: `fnv1a64:` and 16 hex digits.
impl fmt::Display for OutputHash {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{PREFIX}{:016x}", self.0)
    }
}

/// The only spelling [`OutputHash`]'s `Display` writes.
const PREFIX: &str = "fnv1a64:";

/// Reads back exactly what `Display` writes, so a report's hash that is
/// not one (another algorithm, a digit short) is refused when the report
/// is read, not taken for a hash that differs.
impl FromStr for OutputHash {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        text.strip_prefix(PREFIX)
            .filter(|digits| {
                digits.len() == 16
                    && digits
                        .bytes()
                        .all(|digit| matches!(digit, b'0'..=b'9' | b'a'..=b'f'))
            })
            .and_then(|digits| u64::from_str_radix(digits, 16).ok())
            .map(Self)
            .ok_or_else(|| {
                format!("{text:?} is not an output hash (`{PREFIX}` and 16 lowercase hex digits)")
            })
    }
}

impl Serialize for OutputHash {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for OutputHash {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl fmt::Write for OutputHash {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        self.write_bytes(text.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// FNV-1a's published test vectors pin the function itself.
    #[test]
    fn matches_the_reference_vectors() {
        let hash = |text: &str| {
            let mut hash = OutputHash::default();
            hash.write_str(text).expect("infallible");
            hash.0
        };
        assert_eq!(hash(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(hash("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(hash("foobar"), 0x8594_4171_f739_67e8);
        assert_eq!(
            OutputHash::default().to_string(),
            "fnv1a64:cbf29ce484222325"
        );
    }

    /// A report's hash reads back only as `Display` writes it.
    #[test]
    fn reads_back_only_what_it_writes() {
        let hash = OutputHash(0x0123_4567_89ab_cdef);
        assert_eq!(hash.to_string().parse::<OutputHash>(), Ok(hash));
        for wrong in [
            "sha1:zz",
            "fnv1a64:0123456789abcde",
            "fnv1a64:0123456789abcdef0",
            "fnv1a64:0123456789ABCDEF",
            "fnv1a64:+123456789abcdef",
            "FNV1A64:0123456789abcdef",
            "",
        ] {
            assert!(wrong.parse::<OutputHash>().is_err(), "{wrong:?}");
        }
    }
}
