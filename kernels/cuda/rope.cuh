// Included in front of qk_norm_rope_kv.cu and decode_attention.cu (sources.rs): Qwen3's
// per-head q/k RMSNorm + RoPE, written once so that the separate kernel and the decode
// attention that does it itself give the same bits.
//
// RoPE is HF's rotate-half with inv_freq = 1 / theta^(2i/D) computed in f32, as the CPU
// reference does. A head is handled by a group of 64 threads (head_dim <= 128): thread t
// owns the rotation pair (t, t + D/2) when t < D/2.
#pragma once
#include <cuda_bf16.h>

#define ROPE_GROUP 64

__device__ __forceinline__ void rope_angle(float pos, int i, int D, float theta, float* s,
                                           float* c) {
    const float inv_freq = 1.0f / powf(theta, (float)(2 * i) / (float)D);
    sincosf(pos * inv_freq, s, c);
}

// Thread t's rotation (sine, cosine) and norm weights of its pair. These need nothing from
// the previous kernel, and powf + sincosf are the slow part, so kernels compute them
// before pdl_wait.
struct RopePair {
    float s, c, wa, wb;
};

__device__ __forceinline__ RopePair rope_pair(const float* __restrict__ w, float pos, int t,
                                              int D, float theta) {
    RopePair p = {0.f, 0.f, 0.f, 0.f};
    if (t < D / 2) {
        rope_angle(pos, t, D, theta, &p.s, &p.c);
        p.wa = w[t];
        p.wb = w[t + D / 2];
    }
    return p;
}

// RMSNorm (eps, weights in p) and RoPE of one head, src = its D values in f32, by the group
// of 64 threads that t indexes. store(i, lo, hi) receives pair i = t's two results, rounded
// to bf16. The group meets in partial[2] at a __syncthreads: every thread of the block must
// call this the same number of times, with `active` false where its group has no head, and
// a fresh `partial` per call (a faster group would overwrite the one a slower one reads).
template <class Store>
__device__ __forceinline__ void norm_rope_head(const float* __restrict__ src, bool active,
                                               int t, int D, float eps, const RopePair& p,
                                               float* partial, Store store) {
    float ss = 0.f;
    if (active)
        for (int i = t; i < D; i += ROPE_GROUP) ss += src[i] * src[i];
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffff, ss, o);
    if ((t & 31) == 0) partial[t >> 5] = ss;
    __syncthreads();
    if (!active) return;
    float tot = 0.f;
    for (int i = 0; i < ROPE_GROUP / 32; ++i) tot += partial[i];
    const float r = rsqrtf(tot / (float)D + eps);
    const int half = D / 2;
    if (t < half) {
        const float a = src[t] * r * p.wa, b = src[t + half] * r * p.wb;
        store(t, __float2bfloat16(a * p.c - b * p.s), __float2bfloat16(b * p.c + a * p.s));
    }
}
