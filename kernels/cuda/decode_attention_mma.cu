// Split decode attention on the tensor cores (mma.sync m16n8k16, bf16 in, f32 accumulation)
// for head_dim 128 and up to 8 query heads per KV head: the same grid, inputs and partial
// states as decode_attention.cu's kernels (block (row, kv head, split), 128 threads,
// decode_attention_combine merges the splits), so the launcher swaps it in.
//
// Why: the block timeline (engine/PERF-LOG.md step 45) put most of the batch-8 attention's
// time in its scores, softmax and P V; at 16-64 rows (step 83) the block-wide 64-position
// tiles' fixed costs (a slot lookup, then two block barriers, around each tile's copies)
// left the copies at 1.4-2.2 TB/s. Here each warp takes chunks of 16 positions alone
// (chunks w, w + 4, ... of the split) in a stage of its own, 34.8 KB in all as the tiles
// were (5 blocks per SM); each chunk's slots were looked up while the one before was
// copied, and no block barrier runs before the warps' states meet. (Two stages per warp,
// the next chunk in flight during the products, need 69.6 KB and 3 blocks per SM: slower
// at 8, 16 and 32 rows, step 85.) The products:
//   S^T = K Q^T    (m = 16 positions, n = 8 query heads, k = 128: 8 MMAs; K by ldmatrix)
//   O^T += V^T P^T (m = 16 dims x 8, n = 8 heads, k = 16 positions: 8 MMAs; V by
//                   ldmatrix.trans, P^T through 512 bytes of the warp's shared memory)
// Heads are the MMA's n so that one decode token's G <= 8 heads fill it; the positions
// and dims take m. A lane holds heads 2t and 2t + 1 of positions g and g + 8 in S, of dims
// g and g + 8 of each 16 in O, so the online softmax's per-head max and sum are three
// shuffles. The warps' states meet once, after the last chunk, in shared memory.
//
// Numerics against the CUDA-core kernels: the scores are sum(q k) * scale (they scale q
// first) in the MMA's order, and P is rounded to bf16 for the P V product (FlashAttention's
// choice, and the prefill kernel's); l sums the rounded P, so numerator and denominator agree.
#include <cuda_bf16.h>

// Positions a warp takes at a time (the MMAs' m).
#define DM_CHUNK 16
#define DM_D 128
#define DM_MAXG 8
#define DM_WARPS 4
#define DM_THREADS (DM_WARPS * 32)
// K/V rows padded by 16 bytes: the 8 rows an ldmatrix reads start in distinct bank groups.
#define DM_PITCH (DM_D + 8)
// A warp's P^T, [head][position], padded likewise for its B-fragment reads.
#define DM_PPITCH (16 + 8)

// Four 8x8 bf16 matrices from shared memory, lane l giving row l % 8 of matrix l / 8;
// `trans`: each delivered transposed.
template <bool TRANS>
__device__ __forceinline__ void dm_ldmatrix4(unsigned (&r)[4], const void* p) {
    if (TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(smem_addr(p)));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(smem_addr(p)));
}

// One warp's stage: a chunk's K and V rows.
struct DmStage {
    __nv_bfloat16 k[DM_CHUNK][DM_PITCH];
    __nv_bfloat16 v[DM_CHUNK][DM_PITCH];
};

// settled != 0: every row's positions before its last were written by earlier launches (a
// decode step), so they are read before pdl_wait, as in decode_attention.cu.
//
// CLUSTER: the grid's z (splits, 2..8) is one thread block cluster, and the blocks merge
// their states through distributed shared memory (cluster_merge_head: the merge kernel's
// operations in its order, so the same bits), block `rank` taking heads rank, rank + nsplit,
// ...; no partials in global memory, no merge kernel.
template <bool CLUSTER>
__device__ __forceinline__ void decode_attention_mma_body(
    const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k_cache,
    const __nv_bfloat16* __restrict__ v_cache, const int* __restrict__ tables,
    const int* __restrict__ table_offs, const int* __restrict__ ctx_lens,
    float* __restrict__ part_acc, float* __restrict__ part_ml, __nv_bfloat16* __restrict__ out,
    int heads, int kv_heads, int D_arg, int block_size, float scale, int settled) {
    pdl_trigger();
    // The warps' stages; after the last chunk, the warps' O (s_o) and the block's merged
    // state (s_acc).
    __shared__ __align__(16) DmStage s_stage[DM_WARPS];
    __shared__ __align__(16) __nv_bfloat16 s_p[DM_WARPS][DM_MAXG][DM_PPITCH];
    __shared__ float s_wm[DM_WARPS][DM_MAXG], s_wl[DM_WARPS][DM_MAXG];
    (void)D_arg;  // DM_D, checked by the launcher
    const float NEG_INF = __int_as_float(0xff800000);
    const int r = blockIdx.x, kvh = blockIdx.y, split = blockIdx.z, nsplit = gridDim.z;
    const int G = heads / kv_heads, kvd = kv_heads * DM_D, kv_off = kvh * DM_D;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int ctx = ctx_lens[r];
    const int per = (ctx + nsplit - 1) / nsplit;
    const int start = split * per, end = min(ctx, start + per);
    const int chunks = start < end ? (end - start + DM_CHUNK - 1) / DM_CHUNK : 0;
    // A warp multiplies chunks warp, warp + DM_WARPS, ... of the split, each copied by the
    // warp alone into its stage, except where a split is at most one chunk (batch 1's 32
    // splits of ~11 positions): then every warp copies a quarter of it into warp 0's
    // stage, and warp 0 alone multiplies it.
    const bool one_chunk = per <= DM_CHUNK;  // block-uniform
    const int owner = one_chunk ? 0 : warp;  // the warp whose chunks this one copies
    const int owned = chunks > owner ? (chunks - owner + DM_WARPS - 1) / DM_WARPS : 0;
    const int mine = one_chunk && warp != 0 ? 0 : owned;  // the chunks this warp multiplies
    DmStage& st = s_stage[owner];
    const int* table = tables + table_offs[r];
    const int fresh = settled ? ctx - 1 : 0;
    // The first position of the owner's j-th chunk.
    auto chunk_t0 = [&](int j) { return start + (owner + j * DM_WARPS) * DM_CHUNK; };
    // Lane i < 16's slot: the cache slot of position i of the owner's j-th chunk (0 past it).
    auto slot_of = [&](int j) {
        const int p = chunk_t0(j) + lane;
        return j < owned && lane < DM_CHUNK && p < end
                   ? table[p / block_size] * block_size + p % block_size
                   : 0;
    };
    // The owner's j-th chunk into its stage: the positions below `fresh` (early) or the
    // others (!early). Lane l copies 16 bytes of rows 2i + l / 16, i < 8, of K and V (in
    // one_chunk, only this warp's two i), each row's slot from the lane that looked it up.
    auto issue = [&](int j, int slot, int fresh_at, bool early) {
        if (j >= owned) return;  // warp-uniform
        const int t0 = chunk_t0(j), n = min(DM_CHUNK, end - t0), c = (lane & 15) * 8;
#pragma unroll
        for (int i = 0; i < DM_CHUNK / 2; ++i) {
            const int row = 2 * i + (lane >> 4);
            const size_t at = (size_t)__shfl_sync(0xffffffff, slot, row) * kvd + kv_off + c;
            if ((!one_chunk || i / 2 == warp) && row < n && (t0 + row < fresh_at) == early) {
                cp_async16(&st.k[row][c], k_cache + at);
                cp_async16(&st.v[row][c], v_cache + at);
            }
        }
    };
    // This lane's heads 2t and 2t + 1: running max and sum over the warp's positions, and
    // O^T's fragments (dims 16i + g and 16i + g + 8).
    float m[2] = {NEG_INF, NEG_INF}, l[2] = {0.f, 0.f};
    float o[DM_D / 16][4];
#pragma unroll
    for (int i = 0; i < DM_D / 16; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
    // The first chunk's settled positions stream before pdl_wait, the rest after.
    const int slot0 = slot_of(0);
    issue(0, slot0, fresh, true);
    pdl_wait();  // q and the new token's K/V come from the previous kernel
    // Q^T's B fragments: head g (zero past G), dims 16ks + 2t, +1 and 16ks + 2t + 8, +9.
    unsigned qb[DM_D / 16][2];
    {
        const unsigned* qrow = reinterpret_cast<const unsigned*>(
            q + ((size_t)r * heads + (size_t)kvh * G + (g < G ? g : 0)) * DM_D);
#pragma unroll
        for (int ks = 0; ks < DM_D / 16; ++ks) {
            qb[ks][0] = g < G ? qrow[ks * 8 + t] : 0u;
            qb[ks][1] = g < G ? qrow[ks * 8 + t + 4] : 0u;
        }
    }
    issue(0, slot0, fresh, false);
    if (one_chunk) {  // the warps' quarters of warp 0's chunk are all in shared memory
        asm volatile("cp.async.wait_all;" ::: "memory");
        __syncthreads();
    }
    // The next chunk's slots are looked up while this one is copied and multiplied.
    int slot_next = slot_of(1);
    for (int j = 0; j < mine; ++j) {
        asm volatile("cp.async.wait_all;" ::: "memory");
        const int n = min(DM_CHUNK, end - chunk_t0(j));
        // V rows past n that the MMA reads: their P is 0, but 0 times a NaN left in shared
        // memory would still poison the sum. (K's are masked by a select.)
        for (int idx = lane; idx < (DM_CHUNK - n) * (DM_D / 8); idx += 32)
            *reinterpret_cast<uint4*>(&st.v[n + idx / (DM_D / 8)][(idx % (DM_D / 8)) * 8]) =
                make_uint4(0, 0, 0, 0);
        __syncwarp();  // every lane's copies of the chunk are in shared memory
        if (j == 0) TRACE_MARK(2);
        float s[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int ks = 0; ks < DM_D / 16; ++ks) {
            unsigned a[4];
            dm_ldmatrix4<false>(
                a, &st.k[(lane & 7) + ((lane >> 3) & 1) * 8][ks * 16 + (lane >> 4) * 8]);
            mma_bf16_16816(s, a, qb[ks][0], qb[ks][1]);
        }
        // s: positions g (s[0], s[1]) and g + 8 (s[2], s[3]) of the chunk; heads 2t, 2t + 1.
        const bool va = g < n, vb = g + 8 < n;
        float x[4] = {va ? s[0] * scale : NEG_INF, va ? s[1] * scale : NEG_INF,
                      vb ? s[2] * scale : NEG_INF, vb ? s[3] * scale : NEG_INF};
        float mx[2] = {fmaxf(x[0], x[2]), fmaxf(x[1], x[3])};
#pragma unroll
        for (int e = 0; e < 2; ++e)
#pragma unroll
            for (int off = 4; off < 32; off <<= 1)
                mx[e] = fmaxf(mx[e], __shfl_xor_sync(0xffffffff, mx[e], off));
        // The chunk's position 0 is valid, so each head's max is finite here.
        float corr[2], sum[2];
        unsigned short pb[4];
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            const float mn = fmaxf(m[e], mx[e]);
            corr[e] = expf(m[e] - mn);  // 0 on the warp's first chunk (m = -inf)
            m[e] = mn;
            const __nv_bfloat16 lo = __float2bfloat16(expf(x[e] - mn));
            const __nv_bfloat16 hi = __float2bfloat16(expf(x[e + 2] - mn));
            pb[e] = __bfloat16_as_ushort(lo);
            pb[e + 2] = __bfloat16_as_ushort(hi);
            sum[e] = __bfloat162float(lo) + __bfloat162float(hi);
        }
#pragma unroll
        for (int e = 0; e < 2; ++e) {
#pragma unroll
            for (int off = 4; off < 32; off <<= 1)
                sum[e] += __shfl_xor_sync(0xffffffff, sum[e], off);
            l[e] = l[e] * corr[e] + sum[e];
        }
#pragma unroll
        for (int i = 0; i < DM_D / 16; ++i) {
            o[i][0] *= corr[0];
            o[i][1] *= corr[1];
            o[i][2] *= corr[0];
            o[i][3] *= corr[1];
        }
        // P^T's B fragments come from P[head][position]: lane (g, t) holds heads 2t,
        // 2t + 1 of positions g, g + 8.
        unsigned short(*pw)[DM_PPITCH] =
            reinterpret_cast<unsigned short(*)[DM_PPITCH]>(&s_p[warp][0][0]);
        pw[2 * t][g] = pb[0];
        pw[2 * t + 1][g] = pb[1];
        pw[2 * t][g + 8] = pb[2];
        pw[2 * t + 1][g + 8] = pb[3];
        __syncwarp();
        const unsigned b0 = *reinterpret_cast<const unsigned*>(&pw[g][2 * t]);
        const unsigned b1 = *reinterpret_cast<const unsigned*>(&pw[g][2 * t + 8]);
#pragma unroll
        for (int i = 0; i < DM_D / 16; ++i) {
            unsigned a[4];
            dm_ldmatrix4<true>(
                a, &st.v[(lane & 7) + (lane >> 4) * 8][i * 16 + ((lane >> 3) & 1) * 8]);
            mma_bf16_16816(o[i], a, b0, b1);
        }
        __syncwarp();  // the stage and pw are rewritten from here on
        issue(j + 1, slot_next, 0, false);
        slot_next = slot_of(j + 2);
        if (j == 0) TRACE_MARK(3);
    }
    if (!CLUSTER && one_chunk) {
        // Every position of the split was warp 0's (one chunk, n <= 16; batch 1 at
        // Qwen3-8B: 32 splits of ~11): it writes the result from its fragments, with no
        // barrier and no merge of warps.
        if (warp == 0)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int h = 2 * t + e;
                if (h >= G) break;
                const size_t head = (size_t)r * heads + kvh * G + h;
                if (nsplit == 1) {
                    const float inv = 1.f / l[e];
#pragma unroll
                    for (int i = 0; i < DM_D / 16; ++i) {
                        out[head * DM_D + i * 16 + g] = __float2bfloat16(o[i][e] * inv);
                        out[head * DM_D + i * 16 + g + 8] = __float2bfloat16(o[i][e + 2] * inv);
                    }
                } else {
                    const size_t part = head * nsplit + split;
#pragma unroll
                    for (int i = 0; i < DM_D / 16; ++i) {
                        part_acc[part * DM_D + i * 16 + g] = o[i][e];
                        part_acc[part * DM_D + i * 16 + g + 8] = o[i][e + 2];
                    }
                    if (g == 0) {
                        part_ml[2 * part] = m[e];
                        part_ml[2 * part + 1] = l[e];
                    }
                }
            }
        TRACE_MARK(5);
        return;
    }
    __syncthreads();  // every warp is done with its stages, where the warps' O now go
    if (g == 0)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            s_wm[warp][2 * t + e] = m[e];
            s_wl[warp][2 * t + e] = l[e];
        }
    float(*s_o)[DM_MAXG][DM_D] = reinterpret_cast<float(*)[DM_MAXG][DM_D]>(&s_stage[0]);
#pragma unroll
    for (int i = 0; i < DM_D / 16; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int h = 2 * t + (e & 1);
            if (h < G) s_o[warp][h][i * 16 + g + (e >> 1) * 8] = o[i][e];
        }
    __syncthreads();
    // The warps' states merged as the splits' are: thread h < G weighs head h's warps
    // (a warp without positions has l = 0 and weight 0), then thread d sums dimension d.
    __shared__ float s_wt[DM_WARPS][DM_MAXG], s_mh[DM_MAXG], s_lh[DM_MAXG];
    if (tid < G) {
        const int h = tid;
        float mh = NEG_INF;
#pragma unroll
        for (int w = 0; w < DM_WARPS; ++w) mh = fmaxf(mh, s_wm[w][h]);
        float lh = 0.f;
#pragma unroll
        for (int w = 0; w < DM_WARPS; ++w) {
            const float wt = s_wl[w][h] > 0.f ? expf(s_wm[w][h] - mh) : 0.f;
            s_wt[w][h] = wt;
            lh = fmaf(s_wl[w][h], wt, lh);
        }
        s_mh[h] = mh;
        s_lh[h] = lh;
    }
    __syncthreads();
    TRACE_MARK(4);
    const int d = tid;
    // CLUSTER: this block's state for its peers, [head][dim], after the warps' O.
    float* s_acc = reinterpret_cast<float*>(&s_stage[0]) + DM_WARPS * DM_MAXG * DM_D;
    for (int h = 0; h < G; ++h) {
        float acc = 0.f;
#pragma unroll
        for (int w = 0; w < DM_WARPS; ++w) acc = fmaf(s_o[w][h][d], s_wt[w][h], acc);
        const size_t head = (size_t)r * heads + kvh * G + h;
        if (CLUSTER) {
            s_acc[h * DM_D + d] = acc;
        } else if (nsplit == 1) {
            out[head * DM_D + d] = __float2bfloat16(acc * (1.f / s_lh[h]));
        } else {
            const size_t part = head * nsplit + split;
            part_acc[part * DM_D + d] = acc;
            if (d == 0) {
                part_ml[2 * part] = s_mh[h];
                part_ml[2 * part + 1] = s_lh[h];
            }
        }
    }
    if (CLUSTER) {
        __shared__ float s_w[32], s_inv_l;
        cluster_sync();
        const int rank = (int)cluster_rank();
        for (int h = rank; h < G; h += nsplit)
            cluster_merge_head(s_mh, s_lh, s_acc, s_w, &s_inv_l, h, DM_D, nsplit,
                               out + ((size_t)r * heads + kvh * G + h) * DM_D);
        cluster_sync();  // no block leaves while a peer still reads its shared memory
    }
    TRACE_MARK(5);
}

#define DM_ENTRY(NAME, CLUSTER)                                                                \
    extern "C" __global__ void __launch_bounds__(DM_THREADS, 5)                                \
        NAME(const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k_cache,   \
             const __nv_bfloat16* __restrict__ v_cache, const int* __restrict__ tables,        \
             const int* __restrict__ table_offs, const int* __restrict__ ctx_lens,             \
             float* __restrict__ part_acc, float* __restrict__ part_ml,                        \
             __nv_bfloat16* __restrict__ out, int heads, int kv_heads, int D, int block_size,  \
             float scale, int settled) {                                                       \
        decode_attention_mma_body<CLUSTER>(q, k_cache, v_cache, tables, table_offs, ctx_lens,  \
                                           part_acc, part_ml, out, heads, kv_heads, D,         \
                                           block_size, scale, settled);                        \
    }
DM_ENTRY(decode_attention_mma, false)
DM_ENTRY(decode_attention_mma_cluster, true)
