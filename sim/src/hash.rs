//! The output hash of a race report: FNV-1a (64-bit) over the transcript
//! lines a run printed. A fixed, documented function of the printed text, so
//! the same run hashes the same on every machine and every Rust version
//! (unlike `std`'s `RandomState` or the `Hash` impls of std types).

use std::fmt::{self, Write as _};

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

    /// The hash as reports print it: `fnv1a64:` and 16 hex digits.
    pub fn text(self) -> String {
        format!("fnv1a64:{:016x}", self.0)
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
        assert_eq!(OutputHash::default().text(), "fnv1a64:cbf29ce484222325");
    }
}
