//! A small seeded random number generator (SplitMix64): reproducible runs need the same
//! draws for the same seed, on every machine, without a dependency.

/// A seeded generator; the same seed gives the same sequence everywhere.
#[derive(Debug, Clone)]
pub struct SeededRng(u64);

impl SeededRng {
    /// A generator for `seed`, mixed with `salt` (a case's trial name) so that cases draw
    /// independent sequences and adding a case does not change the others' draws.
    pub fn new(seed: u64, salt: &str) -> Self {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in salt.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        SeededRng(seed ^ h)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A float in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::SeededRng;

    #[test]
    fn same_seed_same_draws_and_salts_differ() {
        let a: Vec<u64> = (0..3)
            .scan(SeededRng::new(7, "s::a"), |r, _| Some(r.next_u64()))
            .collect();
        let b: Vec<u64> = (0..3)
            .scan(SeededRng::new(7, "s::a"), |r, _| Some(r.next_u64()))
            .collect();
        let c: Vec<u64> = (0..3)
            .scan(SeededRng::new(7, "s::b"), |r, _| Some(r.next_u64()))
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        let mut r = SeededRng::new(1, "x");
        let mean: f64 = (0..10_000).map(|_| r.next_f64()).sum::<f64>() / 10_000.0;
        assert!((mean - 0.5).abs() < 0.02, "{mean}");
    }
}
