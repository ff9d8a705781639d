//! The two CPython `random` routines vLLM's dataset code uses, on top of MT19937:
//! `random.shuffle` (Fisher-Yates driven by `_randbelow_with_getrandbits`) and
//! `random.choices(population, k)` (oversampling when too few prompts pass the filters).
//! With them latlab picks the same ShareGPT prompts as `vllm bench serve --seed N`.

use crate::mt19937::Mt19937;

/// `random._randbelow_with_getrandbits(n)`: rejection sampling on `n.bit_length()` bits.
fn randbelow(mt: &mut Mt19937, n: usize) -> usize {
    if n == 0 {
        return 0;
    }
    let k = usize::BITS - n.leading_zeros();
    assert!(k <= 32, "populations above 2^32 are not supported");
    loop {
        let r = mt.getrandbits(k) as usize;
        if r < n {
            return r;
        }
    }
}

/// `random.shuffle(x)` as CPython 3.11+ does it.
pub fn shuffle<T>(mt: &mut Mt19937, x: &mut [T]) {
    for i in (1..x.len()).rev() {
        let j = randbelow(mt, i + 1);
        x.swap(i, j);
    }
}

/// Indices picked by `random.choices(range(n), k=k)`: `floor(random() * n)` each.
pub fn choices(mt: &mut Mt19937, n: usize, k: usize) -> Vec<usize> {
    (0..k).map(|_| (mt.next_f64() * n as f64).floor() as usize).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Golden values printed by CPython 3.11.7.
    #[test]
    fn shuffle_matches_cpython() {
        let mut mt = Mt19937::python_seeded(42);
        let mut x: Vec<u32> = (0..10).collect();
        shuffle(&mut mt, &mut x);
        assert_eq!(x, [7, 3, 2, 8, 5, 6, 9, 4, 0, 1]);

        // The size of the truncated ShareGPT file's two-turn list.
        let mut mt = Mt19937::python_seeded(0);
        let mut y: Vec<u32> = (0..17_400).collect();
        shuffle(&mut mt, &mut y);
        assert_eq!(y[..8], [12980, 14917, 14074, 10197, 10550, 3658, 2227, 9890]);
    }

    #[test]
    fn seeds_above_32_bits_and_choices_match_cpython() {
        assert_eq!(Mt19937::python_seeded((1 << 40) + 7).next_u32(), 2_635_837_658);
        let mut mt = Mt19937::python_seeded(0);
        assert_eq!(choices(&mut mt, 1000, 5), [844, 757, 420, 258, 511]);
    }
}
