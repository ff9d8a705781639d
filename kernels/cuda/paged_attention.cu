// Attention of query rows over a paged KV cache (GQA), one block per (row, q head).
// Each row r attends to positions 0..ctx_lens[r] of its sequence, whose pages are listed at
// tables[table_offs[r] ..]: decode rows have ctx = position + 1, and a prefill chunk is just
// one row per token with its own causal ctx, so the same kernel serves both (prefill reads
// KV O(n^2) times: correct first; a flash-style prefill kernel replaces it later).
// Each warp runs an online softmax over positions warp, warp + W, ...; the warps' partial
// (max, sum, acc) are merged at the end. head_dim <= 128 (4 values per lane).
#include <cuda_bf16.h>

#define MAX_PER_LANE 4

extern "C" __global__ void __launch_bounds__(512) paged_attention(const __nv_bfloat16* __restrict__ q,
                                           const __nv_bfloat16* __restrict__ k_cache,
                                           const __nv_bfloat16* __restrict__ v_cache,
                                           const int* __restrict__ tables,
                                           const int* __restrict__ table_offs,
                                           const int* __restrict__ ctx_lens,
                                           __nv_bfloat16* __restrict__ out,
                                           int heads, int kv_heads, int head_dim,
                                           int block_size, float scale) {
    __shared__ float s_m[32], s_l[32];
    __shared__ float s_acc[32][MAX_PER_LANE * 32];
    const int r = blockIdx.x, h = blockIdx.y, D = head_dim;
    const int kvh = h / (heads / kv_heads);
    const int kvd = kv_heads * D;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nwarps = blockDim.x >> 5;
    const int ctx = ctx_lens[r];
    const int* table = tables + table_offs[r];
    const __nv_bfloat16* qrow = q + (size_t)r * heads * D + h * D;

    float qv[MAX_PER_LANE], acc[MAX_PER_LANE];
#pragma unroll
    for (int j = 0; j < MAX_PER_LANE; ++j) {
        const int d = lane + 32 * j;
        qv[j] = d < D ? __bfloat162float(qrow[d]) * scale : 0.f;
        acc[j] = 0.f;
    }
    float m = __int_as_float(0xff800000), l = 0.f;
    for (int p = warp; p < ctx; p += nwarps) {
        const size_t slot = (size_t)table[p / block_size] * block_size + p % block_size;
        const __nv_bfloat16* krow = k_cache + slot * kvd + kvh * D;
        const __nv_bfloat16* vrow = v_cache + slot * kvd + kvh * D;
        float s = 0.f;
#pragma unroll
        for (int j = 0; j < MAX_PER_LANE; ++j) {
            const int d = lane + 32 * j;
            if (d < D) s += qv[j] * __bfloat162float(krow[d]);
        }
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
        const float m_new = fmaxf(m, s);
        const float corr = expf(m - m_new), e = expf(s - m_new);
        l = l * corr + e;
#pragma unroll
        for (int j = 0; j < MAX_PER_LANE; ++j) {
            const int d = lane + 32 * j;
            const float v = d < D ? __bfloat162float(vrow[d]) : 0.f;
            acc[j] = acc[j] * corr + e * v;
        }
        m = m_new;
    }
    if (lane == 0) { s_m[warp] = m; s_l[warp] = l; }
#pragma unroll
    for (int j = 0; j < MAX_PER_LANE; ++j) s_acc[warp][lane + 32 * j] = acc[j];
    __syncthreads();
    // ctx >= 1, so at least warp 0 saw a position and the max is finite.
    float gm = s_m[0];
    for (int w = 1; w < nwarps; ++w) gm = fmaxf(gm, s_m[w]);
    float gl = 0.f;
    for (int w = 0; w < nwarps; ++w) gl += s_l[w] * expf(s_m[w] - gm);
    __nv_bfloat16* orow = out + (size_t)r * heads * D + h * D;
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        float o = 0.f;
        for (int w = 0; w < nwarps; ++w) o += s_acc[w][d] * expf(s_m[w] - gm);
        orow[d] = __float2bfloat16(o / gl);
    }
}
