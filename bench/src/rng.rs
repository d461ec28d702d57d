//! A tiny deterministic PRNG (SplitMix64), so generated bundles are
//! byte-identical across runs, platforms and compiler versions.

/// Finalising mix function of SplitMix64 (a good 64-bit hash).
pub const fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// SplitMix64 pseudo-random number generator (Steele, Lea, Flood 2014).
///
/// Not cryptographic; only used to make synthetic data reproducible.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// Creates a generator from a seed.
    pub const fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// Creates an independent stream for item `index` under `seed` with a
    /// `salt` distinguishing several streams of the same item.
    pub const fn stream(seed: u64, index: u64, salt: u64) -> Self {
        Self::new(mix64(seed ^ mix64(index.wrapping_add(1) ^ mix64(salt))))
    }

    /// Returns the next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix64(self.state)
    }

    /// Returns a number in `0..n` (0 when `n == 0`), by multiply-shift.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Returns a number in `lo..=hi` (`lo` when `hi <= lo`).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            lo
        } else {
            lo + self.below(hi - lo + 1)
        }
    }

    /// Returns `true` with probability `per_mille / 1000`.
    pub fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }

    /// Picks one element of `items`; `None` only when `items` is empty.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        items.get(self.below(items.len() as u64) as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reproducible_and_bounded() {
        let mut a = SplitMix64::new(42);
        let mut b = SplitMix64::new(42);
        for _ in 0..1000 {
            assert_eq!(a.next_u64(), b.next_u64());
            let x = a.range(3, 7);
            assert!((3..=7).contains(&x));
            b.range(3, 7);
        }
        assert_eq!(a.below(0), 0);
        assert!(a.pick::<u8>(&[]).is_none());
    }
}
