//! A [`Hasher`] adaptor that may write each hashed string as something else,
//! so a hash can be taken up to a renaming of ids: a message's digest writes
//! its own id as a marker ([`crate::Message::digest`]), and the engines'
//! canonical fingerprint writes every id as its rank.
//!
//! It relies on how std hashes a `str`: one `write` of its bytes (then
//! `write_u8(0xff)`). Fixed-width writes never carry a string, so they are
//! forwarded untouched: `Hasher`'s defaults would route them through
//! `write`, where a one-byte id such as `A` could match an integer's byte.

use std::hash::Hasher;

/// Forwards every write to `inner`, except that the bytes of each `write`
/// go to `on_bytes`, which writes them (or what stands for them) to `inner`.
pub struct StringHasher<H, F> {
    inner: H,
    on_bytes: F,
}

impl<H: Hasher, F: FnMut(&mut H, &[u8])> StringHasher<H, F> {
    /// Hashes into `inner`, each byte string through `on_bytes`.
    pub fn new(inner: H, on_bytes: F) -> Self {
        Self { inner, on_bytes }
    }
}

impl<H: Hasher, F: FnMut(&mut H, &[u8])> Hasher for StringHasher<H, F> {
    fn finish(&self) -> u64 {
        self.inner.finish()
    }

    fn write(&mut self, bytes: &[u8]) {
        (self.on_bytes)(&mut self.inner, bytes);
    }

    fn write_u8(&mut self, value: u8) {
        self.inner.write_u8(value);
    }

    fn write_u16(&mut self, value: u16) {
        self.inner.write_u16(value);
    }

    fn write_u32(&mut self, value: u32) {
        self.inner.write_u32(value);
    }

    fn write_u64(&mut self, value: u64) {
        self.inner.write_u64(value);
    }

    fn write_u128(&mut self, value: u128) {
        self.inner.write_u128(value);
    }

    fn write_usize(&mut self, value: usize) {
        self.inner.write_usize(value);
    }

    fn write_i8(&mut self, value: i8) {
        self.inner.write_i8(value);
    }

    fn write_i16(&mut self, value: i16) {
        self.inner.write_i16(value);
    }

    fn write_i32(&mut self, value: i32) {
        self.inner.write_i32(value);
    }

    fn write_i64(&mut self, value: i64) {
        self.inner.write_i64(value);
    }

    fn write_i128(&mut self, value: i128) {
        self.inner.write_i128(value);
    }

    fn write_isize(&mut self, value: isize) {
        self.inner.write_isize(value);
    }
}

/// splitmix64's step and finalizer: spreads a value over 64 bits. The
/// checker's fingerprint mixes ranks with it (so sums of distinct rank
/// sets rarely coincide), the simulator seeds its PRNG with it, and the
/// inbox's treap draws its priorities from it. One copy, pinned by the
/// simulator's golden streams.
pub fn mix(value: u64) -> u64 {
    let mut z = value.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use std::hash::{DefaultHasher, Hash};

    use super::*;

    fn hashed(value: &impl Hash, on_bytes: impl FnMut(&mut DefaultHasher, &[u8])) -> u64 {
        let mut hasher = StringHasher::new(DefaultHasher::new(), on_bytes);
        value.hash(&mut hasher);
        hasher.finish()
    }

    #[test]
    fn strings_go_through_the_callback_and_integers_do_not() {
        let plain = |value: &(u8, &str)| {
            let mut hasher = DefaultHasher::new();
            value.hash(&mut hasher);
            hasher.finish()
        };
        let verbatim = |inner: &mut DefaultHasher, bytes: &[u8]| inner.write(bytes);
        assert_eq!(hashed(&(b'A', "B"), verbatim), plain(&(b'A', "B")));
        // `A` renamed to `B`: the string changes, the byte 0x41 does not.
        let rename = |inner: &mut DefaultHasher, bytes: &[u8]| match bytes {
            b"A" => inner.write(b"B"),
            other => inner.write(other),
        };
        assert_eq!(hashed(&(b'A', "A"), rename), plain(&(b'A', "B")));
        assert_ne!(hashed(&(b'A', "A"), rename), plain(&(b'B', "B")));
    }
}
