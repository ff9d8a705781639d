// Qwen3 attention input prep for T tokens, one block of 64 threads per (token, head slot):
//   head slots [0, H): q head -> per-head RMSNorm(q_norm) -> RoPE -> q_out (bf16)
//   [H, H+KV):         k head -> RMSNorm(k_norm) -> RoPE -> k_cache[slot] (bf16)
//   [H+KV, H+2KV):     v head -> v_cache[slot] (bf16)
// qkv is the fused projection output [T, H*D + 2*KV*D] in f32. The norm and rotation are
// rope.cuh's, shared with the decode attention that does them itself (decode_attention.cu).
//
// At decode this is one short block per head, so its time is latency: what does not depend
// on the previous kernel (the step's positions and slots, the norm weights, this thread's
// rotation, whose powf and sincosf are the slow part) is done before pdl_wait.
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
    __shared__ float partial[ROPE_GROUP / 32];
    const int t = blockIdx.x, h = blockIdx.y, D = head_dim;
    const int qd = heads * D, kvd = kv_heads * D;
    const float* row = qkv + (size_t)t * (qd + 2 * kvd);
    const size_t slot = (size_t)slots[t];
    const bool is_v = h >= heads + kv_heads, is_q = h < heads;
    const RopePair p = is_v ? RopePair{0.f, 0.f, 0.f, 0.f}
                            : rope_pair(is_q ? q_norm : k_norm, (float)positions[t],
                                        threadIdx.x, D, theta);
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
    const int half = D / 2;
    norm_rope_head(src, true, threadIdx.x, D, eps, p, partial,
                   [&](int i, __nv_bfloat16 lo, __nv_bfloat16 hi) {
                       dst[i] = lo;
                       dst[i + half] = hi;
                   });
}
