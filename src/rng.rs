//! SplitMix64 (Steele, Lea and Flood, *Fast Splittable Pseudorandom Number Generators*, 2014):
//! the one seeded generator of mpicast, for what must replay (a multiplier search, the draws of
//! the Random agent variants, the simulator's losses, routing keys) and for every test that
//! shuffles, drops or corrupts. Pure, no dependency: the command line and the fuzz targets
//! include it by `#[path]` with the pure modules that use it.

/// The generator's increment (the golden ratio in 64 bits).
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// The output function: a bijection on u64 that mixes every input bit into every output bit.
fn finalise(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Advances `state` and gives the next number.
pub fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(GAMMA);
    finalise(*state)
}

/// The number `next` gives from `z` without keeping the state: a hash of a counter or a key.
pub fn mix(z: u64) -> u64 {
    finalise(z.wrapping_add(GAMMA))
}

/// The generator as a value, for tests: `next_u64` is `next`; the helpers draw from it.
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        next(&mut self.0)
    }

    /// `next_u64() % n`, 0 for `n` = 0.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    /// True with probability `p` (0 never draws).
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && ((self.next_u64() >> 11) as f64) < p * (1u64 << 53) as f64
    }

    /// `n` bytes, each the low byte of one draw.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference outputs of SplitMix64 from seed 1234567 (the generator's published test
    /// vector), so that every user keeps drawing what it drew before this module existed.
    #[test]
    fn draws_the_reference_sequence() {
        let mut s = 1234567;
        let got: Vec<u64> = (0..5).map(|_| next(&mut s)).collect();
        assert_eq!(
            got,
            [
                6457827717110365317,
                3203168211198807973,
                9817491932198370423,
                4593380528125082431,
                16408922859458223821
            ]
        );
        assert_eq!(mix(1234567), got[0]);
        let mut r = Rng::new(1234567);
        assert_eq!(r.next_u64(), got[0]);
        assert_eq!(r.below(10), got[1] % 10);
        assert_eq!(r.below(0), 0);
        assert_eq!(r.bytes(2), [got[2] as u8, got[3] as u8]);
    }
}
