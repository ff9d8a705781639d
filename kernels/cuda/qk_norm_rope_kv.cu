// Qwen3 attention input prep for T tokens, one block per (token, head slot):
//   head slots [0, H): q head -> per-head RMSNorm(q_norm) -> RoPE -> q_out (bf16)
//   [H, H+KV):         k head -> RMSNorm(k_norm) -> RoPE -> k_cache[slot] (bf16)
//   [H+KV, H+2KV):     v head -> v_cache[slot] (bf16)
// qkv is the fused projection output [T, H*D + 2*KV*D] in f32. RoPE is HF's rotate-half
// with inv_freq = 1 / theta^(2i/D) computed in f32, as the CPU reference does.
//
// At decode this is one short block per head, so its time is latency: what does not depend
// on the previous kernel (the step's positions and slots, the norm weights, this thread's
// first rotation, whose powf and sincosf are the slow part) is done before pdl_wait.
#include <cuda_bf16.h>

extern "C" __global__ void qk_norm_rope_kv(const float* __restrict__ qkv,
                                           const float* __restrict__ q_norm,
                                           const float* __restrict__ k_norm,
                                           const int* __restrict__ positions,
                                           const int* __restrict__ slots,
                                           __nv_bfloat16* __restrict__ q_out,
                                           __nv_bfloat16* __restrict__ k_cache,
                                           __nv_bfloat16* __restrict__ v_cache,
                                           int heads, int kv_heads, int head_dim,
                                           float theta, float eps) {
    pdl_trigger();
    __shared__ float partial[32];
    const int t = blockIdx.x, h = blockIdx.y, D = head_dim, half = D / 2;
    const int qd = heads * D, kvd = kv_heads * D;
    const float* row = qkv + (size_t)t * (qd + 2 * kvd);
    const size_t slot = (size_t)slots[t];
    const bool is_v = h >= heads + kv_heads, is_q = h < heads;
    const float* w = is_q ? q_norm : k_norm;
    const float pos = (float)positions[t];
    const int i0 = threadIdx.x;
    float s0 = 0.f, c0 = 0.f, wa0 = 0.f, wb0 = 0.f;
    if (!is_v && i0 < half) {
        rope_angle(pos, i0, D, theta, &s0, &c0);
        wa0 = w[i0];
        wb0 = w[i0 + half];
    }
    pdl_wait();  // qkv comes from the previous kernel
    if (is_v) {
        const int j = h - heads - kv_heads;
        for (int i = threadIdx.x; i < D; i += blockDim.x)
            v_cache[slot * kvd + j * D + i] = __float2bfloat16(row[qd + kvd + j * D + i]);
        return;
    }
    const float* src = is_q ? row + h * D : row + qd + (h - heads) * D;
    __nv_bfloat16* dst = is_q ? q_out + (size_t)t * qd + h * D
                              : k_cache + slot * kvd + (h - heads) * D;
    float ss = 0.f;
    for (int i = threadIdx.x; i < D; i += blockDim.x) ss += src[i] * src[i];
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffff, ss, o);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = ss;
    __syncthreads();
    float tot = 0.f;
    for (int i = 0; i < (int)((blockDim.x + 31) >> 5); ++i) tot += partial[i];
    const float r = rsqrtf(tot / (float)D + eps);
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
        float s = s0, c = c0, wa = wa0, wb = wb0;
        if (i != i0) {
            rope_angle(pos, i, D, theta, &s, &c);
            wa = w[i];
            wb = w[i + half];
        }
        const float a = src[i] * r * wa, b = src[i + half] * r * wb;
        dst[i] = __float2bfloat16(a * c - b * s);
        dst[i + half] = __float2bfloat16(b * c + a * s);
    }
}
