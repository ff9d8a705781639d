// Split decode attention on the tensor cores (mma.sync m16n8k16, bf16 in, f32 accumulation)
// for head_dim 128 and up to 8 query heads per KV head: the same grid, inputs and partial
// states as decode_attention.cu's kernels (block (row, kv head, split), 128 threads, tiles of
// 64 positions, decode_attention_combine merges the splits), so the launcher swaps it in.
//
// Why: the block timeline (engine/PERF-LOG.md step 45) put most of the batch-8 attention's
// time in its scores, softmax and P V: at batch 8 an SM holds 4-5 blocks of ~38 positions each, and the CUDA-core form issues ~3700 warp
// instructions per block (q re-read from shared memory for every position, three block
// barriers per tile). Here each warp takes 16 positions of the tile alone, with the
// products on the tensor cores and the softmax in registers:
//   S^T = K Q^T    (m = 16 positions, n = 8 query heads, k = 128: 8 MMAs; K by ldmatrix)
//   O^T += V^T P^T (m = 16 dims x 8, n = 8 heads, k = 16 positions: 8 MMAs; V by
//                   ldmatrix.trans, P^T through 512 bytes of the warp's shared memory)
// Heads are the MMA's n so that one decode token's G <= 8 heads fill it; the positions
// and dims take m. A lane holds heads 2t and 2t + 1 of positions g and g + 8 in S, of dims
// g and g + 8 of each 16 in O, so the online softmax's per-head max and sum are three
// shuffles. The warps' states meet once, after the last tile, in shared memory.
//
// Numerics against the CUDA-core kernels: the scores are sum(q k) * scale (they scale q
// first) in the MMA's order, and P is rounded to bf16 for the P V product (FlashAttention's
// choice, and the prefill kernel's); l sums the rounded P, so numerator and denominator agree.
#include <cuda_bf16.h>

#define DM_TILE 64
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

// Rows [t0, t0 + n) of a cache into s, those below `fresh` (early) or the others (!early).
__device__ __forceinline__ void dm_load_tile(__nv_bfloat16 (*s)[DM_PITCH],
                                             const __nv_bfloat16* __restrict__ cache,
                                             const int* s_slot, int t0, int n, int fresh,
                                             bool early, int kvd, int kv_off) {
    for (int idx = threadIdx.x; idx < n * (DM_D / 8); idx += DM_THREADS) {
        const int i = idx / (DM_D / 8), c = idx % (DM_D / 8);
        if ((t0 + i < fresh) == early)
            cp_async16(&s[i][c * 8], cache + (size_t)s_slot[i] * kvd + kv_off + c * 8);
    }
}

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
    __shared__ __align__(16) __nv_bfloat16 s_k[DM_TILE][DM_PITCH];
    __shared__ __align__(16) __nv_bfloat16 s_v[DM_TILE][DM_PITCH];
    __shared__ __align__(16) __nv_bfloat16 s_p[DM_WARPS][DM_MAXG][DM_PPITCH];
    __shared__ int s_slot[DM_TILE];
    __shared__ float s_wm[DM_WARPS][DM_MAXG], s_wl[DM_WARPS][DM_MAXG];
    (void)D_arg;  // DM_D, checked by the launcher
    const float NEG_INF = __int_as_float(0xff800000);
    const int r = blockIdx.x, kvh = blockIdx.y, split = blockIdx.z, nsplit = gridDim.z;
    const int G = heads / kv_heads, kvd = kv_heads * DM_D, kv_off = kvh * DM_D;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int ctx = ctx_lens[r];
    const int per = (ctx + nsplit - 1) / nsplit;
    const int start = split * per, end = min(ctx, start + per);
    const int* table = tables + table_offs[r];
    const int fresh = settled ? ctx - 1 : 0;
    // This lane's heads 2t and 2t + 1: running max and sum over the warp's positions, and
    // O^T's fragments (dims 16i + g and 16i + g + 8).
    float m[2] = {NEG_INF, NEG_INF}, l[2] = {0.f, 0.f};
    float o[DM_D / 16][4];
#pragma unroll
    for (int i = 0; i < DM_D / 16; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
    // Q^T's B fragments: head g (zero past G), dims 16ks + 2t, +1 and 16ks + 2t + 8, +9.
    unsigned qb[DM_D / 16][2];
    bool waited = false;
    for (int t0 = start; t0 < end; t0 += DM_TILE) {
        const int n = min(DM_TILE, end - t0);
        tile_slots(s_slot, table, t0, n, block_size);
        __syncthreads();  // also: the previous tile's readers of s_k and s_v are done
        if (!waited) {
            dm_load_tile(s_k, k_cache, s_slot, t0, n, fresh, true, kvd, kv_off);
            dm_load_tile(s_v, v_cache, s_slot, t0, n, fresh, true, kvd, kv_off);
            pdl_wait();  // q and the new token's K/V come from the previous kernel
            waited = true;
            const unsigned* qrow = reinterpret_cast<const unsigned*>(
                q + ((size_t)r * heads + (size_t)kvh * G + (g < G ? g : 0)) * DM_D);
#pragma unroll
            for (int ks = 0; ks < DM_D / 16; ++ks) {
                qb[ks][0] = g < G ? qrow[ks * 8 + t] : 0u;
                qb[ks][1] = g < G ? qrow[ks * 8 + t + 4] : 0u;
            }
            dm_load_tile(s_k, k_cache, s_slot, t0, n, fresh, false, kvd, kv_off);
            dm_load_tile(s_v, v_cache, s_slot, t0, n, fresh, false, kvd, kv_off);
        } else {
            dm_load_tile(s_k, k_cache, s_slot, t0, n, 0, false, kvd, kv_off);
            dm_load_tile(s_v, v_cache, s_slot, t0, n, 0, false, kvd, kv_off);
        }
        // V rows past n that a warp's MMA reads: their P is 0, but 0 times a NaN left in
        // shared memory would still poison the sum. (K's are masked by a select.)
        const int vend = min(DM_TILE, (n + 15) & ~15);
        for (int idx = tid; idx < (vend - n) * (DM_D / 8); idx += DM_THREADS)
            *reinterpret_cast<uint4*>(&s_v[n + idx / (DM_D / 8)][(idx % (DM_D / 8)) * 8]) =
                make_uint4(0, 0, 0, 0);
        asm volatile("cp.async.wait_all;" ::: "memory");
        __syncthreads();  // the K and V tiles are in shared memory
        if (t0 == start) TRACE_MARK(2);
        const int p0 = warp * 16;
        if (p0 < n) {  // warp-uniform
            float s[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
            for (int ks = 0; ks < DM_D / 16; ++ks) {
                unsigned a[4];
                dm_ldmatrix4<false>(
                    a, &s_k[p0 + (lane & 7) + ((lane >> 3) & 1) * 8][ks * 16 + (lane >> 4) * 8]);
                mma_bf16_16816(s, a, qb[ks][0], qb[ks][1]);
            }
            // s: positions p0 + g (s[0], s[1]) and p0 + g + 8 (s[2], s[3]); heads 2t, 2t + 1.
            const bool va = p0 + g < n, vb = p0 + g + 8 < n;
            float x[4] = {va ? s[0] * scale : NEG_INF, va ? s[1] * scale : NEG_INF,
                          vb ? s[2] * scale : NEG_INF, vb ? s[3] * scale : NEG_INF};
            float mx[2] = {fmaxf(x[0], x[2]), fmaxf(x[1], x[3])};
#pragma unroll
            for (int e = 0; e < 2; ++e)
#pragma unroll
                for (int off = 4; off < 32; off <<= 1)
                    mx[e] = fmaxf(mx[e], __shfl_xor_sync(0xffffffff, mx[e], off));
            // Position p0 < n is valid, so each head's max is finite here.
            float corr[2], sum[2];
            unsigned short pb[4];
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const float mn = fmaxf(m[e], mx[e]);
                corr[e] = expf(m[e] - mn);  // 0 on the warp's first tile (m = -inf)
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
                    a, &s_v[p0 + (lane & 7) + (lane >> 4) * 8][i * 16 + ((lane >> 3) & 1) * 8]);
                mma_bf16_16816(o[i], a, b0, b1);
            }
            __syncwarp();  // pw is rewritten at the next tile
        }
        if (t0 == start) TRACE_MARK(3);
    }
    // A split past the row's context loaded nothing, but its (empty) partials overwrite
    // buffers the previous layer's merge may still read.
    if (!waited) pdl_wait();
    if (!CLUSTER && per <= 16) {
        // Every position of the split was warp 0's (one tile, n <= 16; batch 1 at
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
    __syncthreads();  // every warp is done with s_k, which now holds the warps' O
    if (g == 0)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            s_wm[warp][2 * t + e] = m[e];
            s_wl[warp][2 * t + e] = l[e];
        }
    float(*s_o)[DM_MAXG][DM_D] = reinterpret_cast<float(*)[DM_MAXG][DM_D]>(&s_k[0][0]);
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
    // CLUSTER: this block's state for its peers, [head][dim], where V's tile was.
    float* s_acc = reinterpret_cast<float*>(&s_v[0][0]);
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
