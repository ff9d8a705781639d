//! MT19937, the generator behind both CPython's `random` and numpy's legacy
//! `np.random.seed` / `np.random.gamma`. vLLM shuffles ShareGPT with the first and draws
//! arrival gaps with the second, so reproducing its picks and schedules needs this exact
//! generator and the two seeding routines.

pub struct Mt19937 {
    state: [u32; 624],
    index: usize,
}

impl Mt19937 {
    /// `init_genrand(seed)`: numpy's legacy seeding for an integer seed.
    pub fn new_genrand(seed: u32) -> Self {
        let mut state = [0u32; 624];
        state[0] = seed;
        for i in 1..624 {
            state[i] =
                1_812_433_253u32.wrapping_mul(state[i - 1] ^ (state[i - 1] >> 30)).wrapping_add(i as u32);
        }
        Mt19937 { state, index: 624 }
    }

    /// `init_by_array(key)`: CPython's `random.seed(int)` splits |seed| into 32-bit words
    /// (least significant first, at least one word) and calls this.
    pub fn new_by_array(key: &[u32]) -> Self {
        let mut mt = Self::new_genrand(19_650_218);
        let s = &mut mt.state;
        let (n, len) = (624usize, key.len().max(1));
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..n.max(len) {
            let k = key.get(j).copied().unwrap_or(0);
            s[i] = (s[i] ^ (s[i - 1] ^ (s[i - 1] >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(k)
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= n {
                s[0] = s[n - 1];
                i = 1;
            }
            if j >= len {
                j = 0;
            }
        }
        for _ in 0..n - 1 {
            s[i] = (s[i] ^ (s[i - 1] ^ (s[i - 1] >> 30)).wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= n {
                s[0] = s[n - 1];
                i = 1;
            }
        }
        s[0] = 0x8000_0000;
        mt
    }

    /// CPython's `random.seed(n)` for a non-negative integer.
    pub fn python_seeded(seed: u64) -> Self {
        let lo = seed as u32;
        let hi = (seed >> 32) as u32;
        if hi == 0 { Self::new_by_array(&[lo]) } else { Self::new_by_array(&[lo, hi]) }
    }

    pub fn next_u32(&mut self) -> u32 {
        if self.index >= 624 {
            self.twist();
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    fn twist(&mut self) {
        const UPPER: u32 = 0x8000_0000;
        const LOWER: u32 = 0x7fff_ffff;
        for k in 0..624 {
            let y = (self.state[k] & UPPER) | (self.state[(k + 1) % 624] & LOWER);
            let mag = if y & 1 == 1 { 0x9908_b0df } else { 0 };
            self.state[k] = self.state[(k + 397) % 624] ^ (y >> 1) ^ mag;
        }
        self.index = 0;
    }

    /// 53-bit double in [0, 1): CPython's `random.random()` and numpy's `legacy_double`.
    pub fn next_f64(&mut self) -> f64 {
        let a = (self.next_u32() >> 5) as f64;
        let b = (self.next_u32() >> 6) as f64;
        (a * 67_108_864.0 + b) * (1.0 / 9_007_199_254_740_992.0)
    }

    /// CPython's `getrandbits(k)` for 1 <= k <= 32.
    pub fn getrandbits(&mut self, k: u32) -> u32 {
        debug_assert!((1..=32).contains(&k));
        self.next_u32() >> (32 - k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_outputs() {
        // The first output of init_genrand(5489) is the MT19937 reference value.
        assert_eq!(Mt19937::new_genrand(5489).next_u32(), 3_499_211_612);
        // CPython 3.11: random.seed(0); random.getrandbits(32) -> 3626764237
        assert_eq!(Mt19937::python_seeded(0).next_u32(), 3_626_764_237);
        // CPython 3.11: random.seed(0); random.random() -> 0.8444218515250481
        assert_eq!(Mt19937::python_seeded(0).next_f64(), 0.8444218515250481);
    }
}
