//! Logits comparisons the backend tests share (cuda_backend: against the CPU; cuda_paths:
//! one kernel path against another).

use engine::sampling::argmax;

/// (max |a - b|, max |a|) of two logits rows.
pub fn diff_and_scale(a: &[f32], b: &[f32]) -> (f32, f32) {
    let scale = a.iter().fold(0f32, |m, v| m.max(v.abs()));
    let diff = a.iter().zip(b).fold(0f32, |m, (p, q)| m.max((p - q).abs()));
    (diff, scale)
}

/// Two kernel paths' logits rows agree within 2 % of the row's largest magnitude, and in
/// argmax unless the top two are closer than their difference. Returns the difference.
pub fn close_logits(what: &str, a: &[f32], b: &[f32]) -> f32 {
    let (diff, scale) = diff_and_scale(a, b);
    assert!(diff <= 0.02 * scale, "{what}: {diff} apart (scale {scale})");
    let top = argmax(a) as usize;
    let second = a
        .iter()
        .enumerate()
        .filter(|&(j, _)| j != top)
        .fold(f32::NEG_INFINITY, |m, (_, &v)| m.max(v));
    if a[top] - second > 2.0 * diff {
        assert_eq!(argmax(a), argmax(b), "{what}: argmax");
    }
    diff
}

/// n token ids, distinct per salt, under Qwen3's vocabulary.
pub fn prompt(n: usize, salt: u32) -> Vec<u32> {
    (0..n as u32)
        .map(|i| (i * 7919 + salt * 104_729) % 151_000)
        .collect()
}
