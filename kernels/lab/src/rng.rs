//! The experiments' random inputs: a splitmix64 stream (fixed seeds, so two runs time the
//! same data) and the values the GEMM experiments draw from it.

pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }

    /// A random e4m3 code that is not NaN (0x7f / 0xff).
    pub fn code(&mut self) -> u8 {
        let c = self.next_u64() as u8;
        if c & 0x7f == 0x7f { c - 1 } else { c }
    }

    /// A positive block scale, as a checkpoint's (amax / 448 of small weights).
    pub fn scale(&mut self) -> f32 {
        ((self.next_u64() >> 40) as f32 / (1u64 << 24) as f32 + 0.1) / 64.0
    }
}
