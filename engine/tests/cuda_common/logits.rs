//! Logits comparisons the backend tests share: the CUDA backend against the CPU reference
//! (`matches_cpu`), and one CUDA path against another (`close_logits`).

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
    let second =
        a.iter().enumerate().filter(|&(j, _)| j != top).fold(f32::NEG_INFINITY, |m, (_, &v)| m.max(v));
    if a[top] - second > 2.0 * diff {
        assert_eq!(argmax(a), argmax(b), "{what}: argmax");
    }
    diff
}

/// How far the CUDA backend's logits may lie from the CPU reference's, as a fraction of the
/// row's largest magnitude. The GPU rounds each GEMM input (normed activations, attention
/// output, SwiGLU output), the weights and the KV cache to bf16 (2^-9 relative), where the
/// CPU keeps f32. Through 2-3 layers that moves logits by ~1 % of the row's largest
/// magnitude; 5 % is allowed, which a real bug (wrong RoPE pair, missing norm, wrong page)
/// exceeds many times over.
pub const CPU_TOL: f32 = 0.05;

/// Max |gpu - cpu| over the row relative to the row's max |cpu|; asserts it is within
/// `CPU_TOL` and that argmax agrees unless the CPU's top-2 gap is within the tolerance.
pub fn matches_cpu(what: &str, gpu: &[f32], cpu: &[f32]) -> f32 {
    let (diff, scale) = diff_and_scale(cpu, gpu);
    let err = diff / scale;
    assert!(err <= CPU_TOL, "{what}: max |gpu - cpu| = {err:.3e} x max|cpu| {scale}");
    let (ag, ac) = (argmax(gpu), argmax(cpu));
    if ag != ac {
        let gap = cpu[ac as usize] - cpu[ag as usize];
        assert!(gap <= 2.0 * CPU_TOL * scale, "{what}: argmax gpu {ag} vs cpu {ac}, gap {gap}");
        eprintln!("{what}: near-tie argmax differs (gap {gap:.3e})");
    }
    err
}

/// n token ids, distinct per salt, under Qwen3's vocabulary.
pub fn prompt(n: usize, salt: u32) -> Vec<u32> {
    (0..n as u32).map(|i| (i * 7919 + salt * 104_729) % 151_000).collect()
}
