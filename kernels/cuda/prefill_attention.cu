// Causal attention for prefill (many query rows per sequence), FlashAttention-2 style on
// the tensor cores (mma.sync m16n8k16, bf16 in, f32 accumulation). A block takes 16
// consecutive query rows and one KV head; warp h takes query head kvh * G + h of those
// rows (the MMA's m = 16), so the G query heads of a KV head share every K/V tile the block
// stages in shared memory, and every row of the block shares it too.
//
// Why: decode_attention (one block per row, CUDA cores) re-reads a sequence's K/V once per
// query row, and took over a third of the prefill's kernel time on a 232-token prompt
// (engine/PERF-LOG.md, 2026-11-30 00:45, and step 11). The engine's prefill runs this
// kernel wherever the geometry fits (`prefill_attention_supported`), decode_attention
// with one split elsewhere.
//
// Per K/V tile of 64 positions: S = Q K^T (8 n8 tiles), mask (row's context, causal), an
// online softmax per row in registers (a row's 4 threads meet by shuffles), then O += P V
// with P rounded to bf16 (the C fragments of S are already P's A fragments). V is staged
// transposed so its B fragments are plain 32-bit shared loads.
//
// Rows of one block may belong to different sequences (a batch of prompts is one token
// list): the block makes one pass per distinct block table among its rows, and only that
// table's rows take part in it (the others see every score masked).
//
// Tree rows (a speculative verify, `tree` not null): row r's three ints are (lo, mask_lo,
// mask_hi). Positions below lo are the sequence's committed KV, all visible; position
// lo + j (j < 64) is tree node j, visible when bit j of the 64-bit mask is set (the row's
// ancestors and itself). The causal bound ctx_lens[r] still applies. Tree attention runs
// here and nowhere else: a verify's nodes share one block table, so one block stages each
// K/V tile once for all of them, which the decode kernels (one block per row) would not.
//
// Tree rows may split the context (gridDim.z = nsplit > 1): split z takes its share of each
// pass's 64-position tiles and writes its unnormalized output and (max, sum) per (row, head)
// to part_acc / part_ml in decode_attention_combine's layout, which merges them. Why: a
// verify of one 16-node tree is one block per KV head, 8 blocks walking the whole context
// while 124 SMs idle: 30 us per layer at 248 positions, where the 16 rows of a decode step
// take 11 (engine/PERF-LOG.md, step 69).
//
// Requires head_dim == 128 and G <= 8 (checked by the launcher); block = 32 * G threads.
#include <cuda_bf16.h>

#define PA_ROWS 16
#define PA_TILE 64
#define PA_D 128
#define PA_MAXG 8
#define PA_KPITCH (PA_D + 8)     // K rows padded so a fragment's 8 rows hit distinct banks
#define PA_VPITCH (PA_TILE + 8)  // V^T rows likewise

// Two floats -> bf16x2 (lo in the low half), and the rounded values back.
__device__ __forceinline__ unsigned pa_pack(float lo, float hi, float& rlo, float& rhi) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    const float2 r = __bfloat1622float2(v);
    rlo = r.x;
    rhi = r.y;
    return *reinterpret_cast<const unsigned*>(&v);
}

extern "C" __global__ void __launch_bounds__(PA_MAXG * 32)
    prefill_attention(const __nv_bfloat16* __restrict__ q,
                      const __nv_bfloat16* __restrict__ k_cache,
                      const __nv_bfloat16* __restrict__ v_cache, const int* __restrict__ tables,
                      const int* __restrict__ table_offs, const int* __restrict__ ctx_lens,
                      const int* __restrict__ tree, __nv_bfloat16* __restrict__ out,
                      float* __restrict__ part_acc, float* __restrict__ part_ml, int T,
                      int heads, int kv_heads, int block_size, float scale) {
    __shared__ __align__(16) __nv_bfloat16 s_k[PA_TILE][PA_KPITCH];
    __shared__ __align__(16) __nv_bfloat16 s_vt[PA_D][PA_VPITCH];
    __shared__ int s_slot[PA_TILE];
    __shared__ int s_toff[PA_ROWS], s_ctx[PA_ROWS], s_lo[PA_ROWS];
    __shared__ unsigned long long s_mask[PA_ROWS];
    pdl_trigger();
    pdl_wait();
    const float NEG_INF = __int_as_float(0xff800000);
    const int row0 = blockIdx.x * PA_ROWS, kvh = blockIdx.y;
    const int G = heads / kv_heads, kvd = kv_heads * PA_D;
    const int tid = threadIdx.x, nthreads = blockDim.x;
    const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int rows = min(PA_ROWS, T - row0);
    if (tid < PA_ROWS) {
        s_toff[tid] = tid < rows ? table_offs[row0 + tid] : -1;
        s_ctx[tid] = tid < rows ? ctx_lens[row0 + tid] : 0;
        // No tree: nothing at or past the context is a tree node.
        s_lo[tid] = tree != nullptr && tid < rows ? tree[3 * (row0 + tid)] : s_ctx[tid];
        s_mask[tid] = tree != nullptr && tid < rows
                          ? (unsigned long long)(unsigned)tree[3 * (row0 + tid) + 1] |
                                ((unsigned long long)(unsigned)tree[3 * (row0 + tid) + 2] << 32)
                          : 0ull;
    }
    // Q as A fragments: head kvh * G + warp, rows g and g + 8 of the block (zeros past T).
    const int head = kvh * G + warp;
    unsigned qa[PA_D / 16][4];
    {
        const bool oka = g < rows, okb = g + 8 < rows;
        const unsigned* qra = reinterpret_cast<const unsigned*>(
            q + ((size_t)(oka ? row0 + g : 0) * heads + head) * PA_D);
        const unsigned* qrb = reinterpret_cast<const unsigned*>(
            q + ((size_t)(okb ? row0 + g + 8 : 0) * heads + head) * PA_D);
#pragma unroll
        for (int kk = 0; kk < PA_D / 16; ++kk) {
            qa[kk][0] = oka ? qra[kk * 8 + t] : 0u;
            qa[kk][1] = okb ? qrb[kk * 8 + t] : 0u;
            qa[kk][2] = oka ? qra[kk * 8 + 4 + t] : 0u;
            qa[kk][3] = okb ? qrb[kk * 8 + 4 + t] : 0u;
        }
    }
    __syncthreads();
    float o[PA_D / 8][4];
#pragma unroll
    for (int nd = 0; nd < PA_D / 8; ++nd) o[nd][0] = o[nd][1] = o[nd][2] = o[nd][3] = 0.f;
    // Softmax state of rows g (a) and g + 8 (b); l is this thread's share of the row sum.
    float m_a = NEG_INF, m_b = NEG_INF, l_a = 0.f, l_b = 0.f;
    const int ctx_a = s_ctx[g], ctx_b = s_ctx[g + 8];
    const int lo_a = s_lo[g], lo_b = s_lo[g + 8];
    const unsigned long long mask_a = s_mask[g], mask_b = s_mask[g + 8];
    const unsigned all = (1u << rows) - 1u;
    unsigned done = 0;
    while (done != all) {
        // This pass: the rows that share the first unfinished row's block table.
        const int cur = s_toff[__ffs(~done & all) - 1];
        unsigned active = 0;
        int kv_end = 0;
        for (int r = 0; r < rows; ++r)
            if (s_toff[r] == cur) {
                active |= 1u << r;
                kv_end = max(kv_end, s_ctx[r]);
            }
        const bool act_a = (active >> g) & 1u, act_b = (active >> (g + 8)) & 1u;
        const int* table = tables + cur;
        // This split's tiles of the pass (all of them without splits).
        const int tiles = (kv_end + PA_TILE - 1) / PA_TILE;
        const int per = (tiles + gridDim.z - 1) / gridDim.z;
        const int t_end = min(kv_end, (int)(blockIdx.z + 1) * per * PA_TILE);
        for (int t0 = blockIdx.z * per * PA_TILE; t0 < t_end; t0 += PA_TILE) {
            const int n = min(PA_TILE, kv_end - t0);
            __syncthreads();  // the previous tile's shared reads are done
            for (int i = tid; i < PA_TILE; i += nthreads)
                s_slot[i] = i < n ? table[(t0 + i) / block_size] * block_size +
                                        (t0 + i) % block_size
                                  : -1;
            __syncthreads();
            // Stage K rows and V^T: position p, 32 bytes (16 dims) per item, consecutive
            // threads on consecutive positions (conflict-free transposed stores).
            for (int i = tid; i < PA_TILE * (PA_D / 16); i += nthreads) {
                const int p = i % PA_TILE, d0 = (i / PA_TILE) * 16;
                const int slot = s_slot[p];
                uint4 k0 = make_uint4(0, 0, 0, 0), k1 = k0, v0 = k0, v1 = k0;
                if (slot >= 0) {
                    const size_t base = (size_t)slot * kvd + (size_t)kvh * PA_D + d0;
                    k0 = *reinterpret_cast<const uint4*>(k_cache + base);
                    k1 = *reinterpret_cast<const uint4*>(k_cache + base + 8);
                    v0 = *reinterpret_cast<const uint4*>(v_cache + base);
                    v1 = *reinterpret_cast<const uint4*>(v_cache + base + 8);
                }
                *reinterpret_cast<uint4*>(&s_k[p][d0]) = k0;
                *reinterpret_cast<uint4*>(&s_k[p][d0 + 8]) = k1;
                const __nv_bfloat16* ve0 = reinterpret_cast<const __nv_bfloat16*>(&v0);
                const __nv_bfloat16* ve1 = reinterpret_cast<const __nv_bfloat16*>(&v1);
#pragma unroll
                for (int e = 0; e < 8; ++e) {
                    s_vt[d0 + e][p] = ve0[e];
                    s_vt[d0 + 8 + e][p] = ve1[e];
                }
            }
            __syncthreads();
            // S = Q K^T: n8 tile j holds positions t0 + 8j .. t0 + 8j + 7.
            float s[PA_TILE / 8][4];
#pragma unroll
            for (int j = 0; j < PA_TILE / 8; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
#pragma unroll
            for (int kk = 0; kk < PA_D / 16; ++kk) {
#pragma unroll
                for (int j = 0; j < PA_TILE / 8; ++j) {
                    const unsigned* kr = reinterpret_cast<const unsigned*>(&s_k[j * 8 + g][kk * 16]);
                    mma_bf16_16816(s[j], qa[kk], kr[t], kr[4 + t]);
                }
            }
            // Scale and mask; this tile's row maxima over the row's 4 threads.
            float mx_a = NEG_INF, mx_b = NEG_INF;
#pragma unroll
            for (int j = 0; j < PA_TILE / 8; ++j) {
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int p = t0 + j * 8 + 2 * t + e;
                    const bool see_a = p < ctx_a && (p < lo_a || ((mask_a >> (p - lo_a)) & 1ull));
                    const bool see_b = p < ctx_b && (p < lo_b || ((mask_b >> (p - lo_b)) & 1ull));
                    const float va = act_a && see_a ? s[j][e] * scale : NEG_INF;
                    const float vb = act_b && see_b ? s[j][2 + e] * scale : NEG_INF;
                    s[j][e] = va;
                    s[j][2 + e] = vb;
                    mx_a = fmaxf(mx_a, va);
                    mx_b = fmaxf(mx_b, vb);
                }
            }
#pragma unroll
            for (int o2 = 1; o2 <= 2; o2 <<= 1) {
                mx_a = fmaxf(mx_a, __shfl_xor_sync(0xffffffffu, mx_a, o2));
                mx_b = fmaxf(mx_b, __shfl_xor_sync(0xffffffffu, mx_b, o2));
            }
            // A row with nothing unmasked yet keeps max -inf: exponentiate against 0 then,
            // so its p and correction are 0 instead of NaN.
            const float new_a = fmaxf(m_a, mx_a), new_b = fmaxf(m_b, mx_b);
            const float base_a = new_a == NEG_INF ? 0.f : new_a;
            const float base_b = new_b == NEG_INF ? 0.f : new_b;
            const float corr_a = expf(m_a - base_a), corr_b = expf(m_b - base_b);
            m_a = new_a;
            m_b = new_b;
            l_a *= corr_a;
            l_b *= corr_b;
#pragma unroll
            for (int nd = 0; nd < PA_D / 8; ++nd) {
                o[nd][0] *= corr_a;
                o[nd][1] *= corr_a;
                o[nd][2] *= corr_b;
                o[nd][3] *= corr_b;
            }
            // P in bf16 as A fragments (k16 step kk = S tiles 2kk and 2kk + 1); the row sums
            // add the rounded values, so numerator and denominator agree.
            unsigned pa[PA_TILE / 16][4];
#pragma unroll
            for (int j = 0; j < PA_TILE / 8; ++j) {
                float r0, r1, r2, r3;
                const unsigned lo = pa_pack(expf(s[j][0] - base_a), expf(s[j][1] - base_a), r0, r1);
                const unsigned hi = pa_pack(expf(s[j][2] - base_b), expf(s[j][3] - base_b), r2, r3);
                l_a += r0 + r1;
                l_b += r2 + r3;
                pa[j / 2][(j & 1) * 2] = lo;
                pa[j / 2][(j & 1) * 2 + 1] = hi;
            }
            // O += P V: V^T row d holds dimension d of the tile's 64 positions.
#pragma unroll
            for (int kk = 0; kk < PA_TILE / 16; ++kk) {
#pragma unroll
                for (int nd = 0; nd < PA_D / 8; ++nd) {
                    const unsigned* vr = reinterpret_cast<const unsigned*>(&s_vt[nd * 8 + g][kk * 16]);
                    mma_bf16_16816(o[nd], pa[kk], vr[t], vr[4 + t]);
                }
            }
        }
        done |= active;
    }
#pragma unroll
    for (int o2 = 1; o2 <= 2; o2 <<= 1) {
        l_a += __shfl_xor_sync(0xffffffffu, l_a, o2);
        l_b += __shfl_xor_sync(0xffffffffu, l_b, o2);
    }
    if (gridDim.z > 1) {
        // Partial state of (row, head, split z): acc unnormalized, against max m.
        const int nsplit = gridDim.z;
        if (g < rows) {
            const size_t part = ((size_t)(row0 + g) * heads + head) * nsplit + blockIdx.z;
#pragma unroll
            for (int nd = 0; nd < PA_D / 8; ++nd)
                *reinterpret_cast<float2*>(&part_acc[part * PA_D + nd * 8 + 2 * t]) =
                    make_float2(o[nd][0], o[nd][1]);
            if (t == 0) *reinterpret_cast<float2*>(&part_ml[2 * part]) = make_float2(m_a, l_a);
        }
        if (g + 8 < rows) {
            const size_t part = ((size_t)(row0 + g + 8) * heads + head) * nsplit + blockIdx.z;
#pragma unroll
            for (int nd = 0; nd < PA_D / 8; ++nd)
                *reinterpret_cast<float2*>(&part_acc[part * PA_D + nd * 8 + 2 * t]) =
                    make_float2(o[nd][2], o[nd][3]);
            if (t == 0) *reinterpret_cast<float2*>(&part_ml[2 * part]) = make_float2(m_b, l_b);
        }
        return;
    }
    const float inv_a = l_a > 0.f ? 1.f / l_a : 0.f, inv_b = l_b > 0.f ? 1.f / l_b : 0.f;
    float unused0, unused1;
    if (g < rows) {
        unsigned* dst = reinterpret_cast<unsigned*>(out + ((size_t)(row0 + g) * heads + head) * PA_D);
#pragma unroll
        for (int nd = 0; nd < PA_D / 8; ++nd)
            dst[nd * 4 + t] = pa_pack(o[nd][0] * inv_a, o[nd][1] * inv_a, unused0, unused1);
    }
    if (g + 8 < rows) {
        unsigned* dst =
            reinterpret_cast<unsigned*>(out + ((size_t)(row0 + g + 8) * heads + head) * PA_D);
#pragma unroll
        for (int nd = 0; nd < PA_D / 8; ++nd)
            dst[nd * 4 + t] = pa_pack(o[nd][2] * inv_b, o[nd][3] * inv_b, unused0, unused1);
    }
}
