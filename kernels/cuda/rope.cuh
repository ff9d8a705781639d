// RoPE's angle for element pair (i, i + D/2) of a head at position pos: HF's rotate-half
// with inv_freq = 1 / theta^(2i/D) computed in f32, as the CPU reference does. Shared by
// the target's q/k-norm form (qk_norm_rope_kv.cu) and the EAGLE-3 draft's (eagle3.cu).
#pragma once

__device__ __forceinline__ void rope_angle(float pos, int i, int D, float theta, float* s,
                                           float* c) {
    const float inv_freq = 1.0f / powf(theta, (float)(2 * i) / (float)D);
    sincosf(pos * inv_freq, s, c);
}
