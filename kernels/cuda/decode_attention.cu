// Attention of query rows over a paged KV cache, split along the context (flash-decoding)
// with the G query heads of one KV head sharing every K/V read (GQA).
//
// Grid (row, kv_head, split). Split s of row r covers positions [s*per, (s+1)*per) of its
// context, per = ceil(ctx / splits), computed here from the row's actual length: a decode
// graph is captured once with a fixed grid, and the work still spreads over all splits at
// every length. One split writes the normalised output directly; several write partial
// (max, sum, acc) that decode_attention_combine merges.
//
// Why: one block per (row, head) walking the whole context left 32 blocks on 132 SMs at
// batch 1 and read each K/V row once per query head: 24 us per layer at ctx 452 for 1.4 MB.
//
// Inside a block (128 threads), positions go in tiles of 64, and every load a tile needs is
// issued at once: each position's K into the registers of the two threads that score it, the
// V rows into shared memory with cp.async. Then the scores (q in shared memory), an online
// softmax per head (max, sum), and thread d accumulates dimension d of every head's output
// from the V tile. The block's time is its chain of dependent memory round trips, not its
// bytes (1.4 MB of K/V per layer at ctx 342 is 0.3 us of bandwidth; the kernel took 15 us
// per layer in a step, gpu_step_chain), so the chain is kept short: the step metadata
// (lengths, tables) is read before pdl_wait, since it is written before the step's first
// kernel; and with `settled` (a decode step, where each row's only new token is its last
// position) so are the K/V of every older position, written by earlier steps. Only q and
// the new token's K/V, which the previous kernel (qk_norm_rope_kv) writes, wait.
#include <cuda_bf16.h>

#define DA_TILE 64
#define DA_MAXG 8
#define DA_MAXD 128
#define DA_THREADS 128
#define DA_QSTRIDE (DA_MAXD + 1)

#define DA_MAXSPLITS 32
// Splits of one (row, kv head) merged in a cluster: the portable cluster size.
#define DA_MAXCLUSTER 8

// V rows of the tile's positions [t0, t0 + n) into s_v, those below `fresh` (early) or the
// others (!early). 16-byte copies when a row is whole pieces (D % 8 == 0), else elements.
__device__ __forceinline__ void load_v_tile(__nv_bfloat16 (*s_v)[DA_MAXD],
                                            const __nv_bfloat16* __restrict__ v_cache,
                                            const int* s_slot, int t0, int n, int fresh,
                                            bool early, int kvd, int kv_off, int D) {
    if (D % 8 == 0) {
        const int pieces = D / 8;
        for (int idx = threadIdx.x; idx < n * pieces; idx += DA_THREADS) {
            const int i = idx / pieces, c = idx % pieces;
            if ((t0 + i < fresh) == early)
                cp_async16(&s_v[i][c * 8], v_cache + (size_t)s_slot[i] * kvd + kv_off + c * 8);
        }
    } else {
        for (int idx = threadIdx.x; idx < n * D; idx += DA_THREADS) {
            const int i = idx / D, d = idx % D;
            if ((t0 + i < fresh) == early)
                s_v[i][d] = v_cache[(size_t)s_slot[i] * kvd + kv_off + d];
        }
    }
}

// This thread's half of a position's K row (hd = D / 2 values, hd % 8 == 0) into registers.
__device__ __forceinline__ void load_k_half(uint4 (&kv)[DA_MAXD / 16],
                                            const __nv_bfloat16* krow, int hd) {
#pragma unroll
    for (int j = 0; j < DA_MAXD / 16; ++j)
        if (j * 8 < hd) kv[j] = *reinterpret_cast<const uint4*>(krow + j * 8);
}

// The scores' fast layout (the `_d32` kernels, head_dim % 32 == 0): eight lanes per
// position, 16 positions per pass of the block's 128 threads, DA_FPASSES passes per tile.
// Lane part p takes dimensions 32c + 4p .. 32c + 4p + 3 (c < head_dim / 32), so one
// position's lanes read 128 contiguous bytes of q (no bank conflicts; other positions'
// lanes read the same words). K comes into shared memory with the V tile (cp.async), rows
// DA_KSTRIDE apart so that the two positions of a half-warp's 8-byte reads hit different
// banks. Why: at batch 1 the 32 splits leave ~11 positions per block; with two lanes per
// position (64 dimensions x 4 heads each, K in registers) they all sat in warp 0, and the
// scores took half the kernel's time (the block timeline, engine/PERF-LOG.md step 27).
// Since the tensor-core kernel (decode_attention_mma.cu) takes head_dim 128, this layout
// serves the geometries it does not (other head dims of whole 32s, more query heads).
#define DA_FPASS 16
#define DA_FPASSES (DA_TILE / DA_FPASS)
#define DA_FCH (DA_MAXD / 32)
#define DA_KSTRIDE (DA_MAXD + 32)

// K rows of the tile's positions [t0, t0 + n) into s_k, those below `fresh` (early) or the
// others (!early), as load_v_tile does for V. D % 32 == 0.
__device__ __forceinline__ void load_k_tile(__nv_bfloat16 (*s_k)[DA_KSTRIDE],
                                            const __nv_bfloat16* __restrict__ k_cache,
                                            const int* s_slot, int t0, int n, int fresh,
                                            bool early, int kvd, int kv_off, int D) {
    const int pieces = D / 8;
    for (int idx = threadIdx.x; idx < n * pieces; idx += DA_THREADS) {
        const int i = idx / pieces, c = idx % pieces;
        if ((t0 + i < fresh) == early)
            cp_async16(&s_k[i][c * 8], k_cache + (size_t)s_slot[i] * kvd + kv_off + c * 8);
    }
}

// settled != 0: every row's positions before its last were written by earlier launches
// (a decode step), so they are read before pdl_wait.
//
// CLUSTER: the grid's z (splits, 2..8) is one thread block cluster; the blocks merge their
// partial states through distributed shared memory (cluster_merge_head), block `rank`
// taking heads rank, rank + nsplit, ...: no partials in global memory, no second kernel.
// MG: query heads per KV head the block has room for; DC: head_dim fixed at compile time
// (0: the argument's), which turns the loads' divisions and loop bounds into constants.
template <bool CLUSTER, bool FAST, int MG = DA_MAXG, int DC = 0>
__device__ __forceinline__ void decode_attention_body(
    const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k_cache,
    const __nv_bfloat16* __restrict__ v_cache, const int* __restrict__ tables,
    const int* __restrict__ table_offs, const int* __restrict__ ctx_lens,
    float* __restrict__ part_acc, float* __restrict__ part_ml, __nv_bfloat16* __restrict__ out,
    int heads, int kv_heads, int D_arg, int block_size, float scale, int settled) {
    pdl_trigger();
    const int D = DC > 0 ? DC : D_arg;
    // q of the G heads; in the pair layout the second half of each head sits one float
    // further on, so the two threads of a position (one per half) read different banks; in
    // the fast one rows are whole float4s.
    __shared__ __align__(16) float s_q[MG][FAST ? DA_MAXD + 4 : DA_QSTRIDE];
    __shared__ float s_p[MG][DA_TILE];
    __shared__ int s_slot[DA_TILE];
    __shared__ __align__(16) __nv_bfloat16 s_v[DA_TILE][DA_MAXD];
    __shared__ __align__(16) __nv_bfloat16 s_k[FAST ? DA_TILE : 1][DA_KSTRIDE];
    __shared__ float s_m[MG], s_l[MG], s_corr[MG];
    const int r = blockIdx.x, kvh = blockIdx.y, split = blockIdx.z, nsplit = gridDim.z;
    const int G = heads / kv_heads, kvd = kv_heads * D, kv_off = kvh * D;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int ctx = ctx_lens[r];
    const int per = (ctx + nsplit - 1) / nsplit;
    const int start = split * per, end = min(ctx, start + per);
    const int* table = tables + table_offs[r];
    // Positions below `fresh` may be read before the wait.
    const int fresh = settled ? ctx - 1 : 0;
    // Scores: thread pair (2i, 2i+1) takes position i, each thread half of head_dim, so a
    // thread has all its K loads (up to 8 x 16 bytes) in flight at once. (Warps walking
    // positions one by one, with a shuffle reduction per position, paid a full memory
    // latency per position: 17 us per layer at ctx 452, 139 us for a 232-token prefill.)
    const int i = tid >> 1, half = tid & 1, hd = D / 2;
    const bool vec_k = hd % 8 == 0;
    if (tid < G) {
        s_m[tid] = __int_as_float(0xff800000);
        s_l[tid] = 0.f;
    }
    float acc[MG];
#pragma unroll
    for (int h = 0; h < MG; ++h) acc[h] = 0.f;
    bool waited = false;
    for (int t0 = start; t0 < end; t0 += DA_TILE) {
        const int n = min(DA_TILE, end - t0);
        tile_slots(s_slot, table, t0, n, block_size);
        __syncthreads();  // also: the previous tile's readers of s_p and s_v are done
        const __nv_bfloat16* krow =
            k_cache + (size_t)(i < n ? s_slot[i] : 0) * kvd + kv_off + half * hd;
        const bool k_early = t0 + i < fresh;
        uint4 kv[FAST ? 1 : DA_MAXD / 16];
        if (!waited) {
            if constexpr (FAST)
                load_k_tile(s_k, k_cache, s_slot, t0, n, fresh, true, kvd, kv_off, D);
            else if (vec_k && i < n && k_early)
                load_k_half(kv, krow, hd);
            load_v_tile(s_v, v_cache, s_slot, t0, n, fresh, true, kvd, kv_off, D);
            pdl_wait();  // q and the new token's K/V come from the previous kernel
            waited = true;
            const __nv_bfloat16* qrow = q + (size_t)r * heads * D + (size_t)kvh * G * D;
            for (int j = tid; j < G * D; j += DA_THREADS) {
                const int h = j / D, d = j % D;
                s_q[h][FAST ? d : d + (d >= D / 2)] = __bfloat162float(qrow[j]) * scale;
            }
            if constexpr (FAST)
                load_k_tile(s_k, k_cache, s_slot, t0, n, fresh, false, kvd, kv_off, D);
            else if (vec_k && i < n && !k_early)
                load_k_half(kv, krow, hd);
            load_v_tile(s_v, v_cache, s_slot, t0, n, fresh, false, kvd, kv_off, D);
        } else {
            if constexpr (FAST)
                load_k_tile(s_k, k_cache, s_slot, t0, n, 0, false, kvd, kv_off, D);
            else if (vec_k && i < n)
                load_k_half(kv, krow, hd);
            load_v_tile(s_v, v_cache, s_slot, t0, n, 0, false, kvd, kv_off, D);
        }
        asm volatile("cp.async.wait_all;" ::: "memory");
        __syncthreads();  // q and the V tile are in shared memory
        if (t0 == start) TRACE_MARK(2);
        if constexpr (FAST) {
            // Scores in the fast layout (load_k_tile): each lane's dot products over its
            // dimensions, then a butterfly over the position's eight lanes.
            const int part = tid & 7;
            for (int ps = 0; ps < DA_FPASSES; ++ps) {
                if (ps * DA_FPASS >= n) break;  // n is the block's: a uniform exit
                const int pos = ps * DA_FPASS + (tid >> 3);
                float sc[MG];
#pragma unroll
                for (int h = 0; h < MG; ++h) sc[h] = 0.f;
                if (pos < n) {
#pragma unroll
                    for (int c = 0; c < DA_FCH; ++c) {
                        if (c * 32 >= D) break;
                        const uint2 kw =
                            *reinterpret_cast<const uint2*>(&s_k[pos][32 * c + 4 * part]);
                        const __nv_bfloat162* k2 = reinterpret_cast<const __nv_bfloat162*>(&kw);
                        const float2 k01 = __bfloat1622float2(k2[0]), k23 = __bfloat1622float2(k2[1]);
#pragma unroll
                        for (int h = 0; h < MG; ++h)
                            if (h < G) {
                                const float4 qv =
                                    *reinterpret_cast<const float4*>(&s_q[h][32 * c + 4 * part]);
                                sc[h] += qv.x * k01.x + qv.y * k01.y + qv.z * k23.x + qv.w * k23.y;
                            }
                    }
                }
#pragma unroll
                for (int h = 0; h < MG; ++h) {
                    if (h >= G) break;
                    float v = sc[h];
                    v += __shfl_xor_sync(0xffffffff, v, 1);
                    v += __shfl_xor_sync(0xffffffff, v, 2);
                    v += __shfl_xor_sync(0xffffffff, v, 4);
                    if (pos < n && part == 0) s_p[h][pos] = v;
                }
            }
        }
        if constexpr (!FAST) {
            float part[MG];
#pragma unroll
            for (int h = 0; h < MG; ++h) part[h] = 0.f;
#ifdef LATLAB_TRACE_BUF
            // The block timeline: when thread 0's K registers (loaded before the wait) are
            // ready.
            if (t0 == start && vec_k && i < n) {
                asm volatile("" ::"r"(kv[0].x));
                TRACE_MARK(6);
            }
#endif
            if (i < n) {
                const float* qh = &s_q[0][0] + half * (hd + 1);
                if (vec_k) {
#pragma unroll
                    for (int j = 0; j < DA_MAXD / 16; ++j) {
                        if (j * 8 >= hd) break;
                        const __nv_bfloat162* k2 = reinterpret_cast<const __nv_bfloat162*>(&kv[j]);
#pragma unroll
                        for (int e = 0; e < 4; ++e) {
                            const float2 kf = __bfloat1622float2(k2[e]);
                            const int d = j * 8 + 2 * e;
#pragma unroll
                            for (int h = 0; h < MG; ++h)
                                if (h < G)
                                    part[h] += qh[h * DA_QSTRIDE + d] * kf.x +
                                               qh[h * DA_QSTRIDE + d + 1] * kf.y;
                        }
                    }
                } else {
                    for (int d = 0; d < hd; ++d) {
                        const float kf = __bfloat162float(krow[d]);
#pragma unroll
                        for (int h = 0; h < MG; ++h)
                            if (h < G) part[h] += qh[h * DA_QSTRIDE + d] * kf;
                    }
                }
            }
            // head_dim odd halves cannot happen (head_dim is even); the pair is adjacent lanes.
#pragma unroll
            for (int h = 0; h < MG; ++h) {
                if (h >= G) break;
                const float v = part[h] + __shfl_xor_sync(0xffffffff, part[h], 1);
                if (i < n && half == 0) s_p[h][i] = v;
            }
        }
        __syncthreads();
        if (t0 == start) TRACE_MARK(7);
        // Online softmax: warp w updates heads w, w + 4.
        for (int h = warp; h < G; h += DA_THREADS / 32) {
            float mx = __int_as_float(0xff800000);
            for (int j = lane; j < n; j += 32) mx = fmaxf(mx, s_p[h][j]);
            for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, o));
            const float m_old = s_m[h], m_new = fmaxf(m_old, mx);
            float sum = 0.f;
            for (int j = lane; j < n; j += 32) {
                const float e = expf(s_p[h][j] - m_new);
                s_p[h][j] = e;
                sum += e;
            }
            for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffff, sum, o);
            if (lane == 0) {
                const float corr = expf(m_old - m_new);  // 0 on the first tile (m_old = -inf)
                s_corr[h] = corr;
                s_l[h] = s_l[h] * corr + sum;
                s_m[h] = m_new;
            }
        }
        __syncthreads();
        if (t0 == start) TRACE_MARK(3);
        if (tid < D) {
#pragma unroll
            for (int h = 0; h < MG; ++h)
                if (h < G) acc[h] *= s_corr[h];
#pragma unroll 16
            for (int j = 0; j < n; ++j) {
                const float v = __bfloat162float(s_v[j][tid]);
#pragma unroll
                for (int h = 0; h < MG; ++h)
                    if (h < G) acc[h] = fmaf(s_p[h][j], v, acc[h]);
            }
        }
        __syncthreads();  // s_slot is rewritten by the next tile
    }
    // A split past the row's context loaded nothing, but its (empty) partials overwrite
    // buffers the previous layer's merge may still read.
    if (!waited) pdl_wait();
    TRACE_MARK(4);
    if (CLUSTER) {
        // The V tile is done with (the loop ends in a barrier): it holds this split's acc.
        __shared__ float s_w[CLUSTER ? 32 : 1], s_inv_l;
        float* s_acc = reinterpret_cast<float*>(&s_v[0][0]);
        if (tid < D)
#pragma unroll
            for (int h = 0; h < MG; ++h)
                if (h < G) s_acc[h * D + tid] = acc[h];
        cluster_sync();
        const int rank = (int)cluster_rank();
        for (int h = rank; h < G; h += nsplit)
            cluster_merge_head(s_m, s_l, s_acc, s_w, &s_inv_l, h, D, nsplit,
                               out + (size_t)r * heads * D + (size_t)(kvh * G + h) * D);
        cluster_sync();  // no block leaves while a peer still reads its shared memory
        return;
    }
    if (tid >= D) return;
    // Threads d < D write this split's result: the output itself for one split, else the
    // partial state.
#pragma unroll
    for (int h = 0; h < MG; ++h) {
        if (h >= G) break;
        const int head = kvh * G + h;
        if (nsplit == 1) {
            out[(size_t)r * heads * D + (size_t)head * D + tid] = __float2bfloat16(acc[h] / s_l[h]);
        } else {
            const size_t part = ((size_t)r * heads + head) * nsplit + split;
            part_acc[part * D + tid] = acc[h];
            if (tid == 0) {
                part_ml[2 * part] = s_m[h];
                part_ml[2 * part + 1] = s_l[h];
            }
        }
    }
    TRACE_MARK(5);
}

// The entry points: the pair layout, with the merge kernel after it or merging in place
// inside thread block clusters of its splits (`_cluster`, launch.rs: the same output as
// decode_attention + decode_attention_combine, bit for bit; part_acc and part_ml are not
// touched), for head dims the fast layout does not take; and the fast layout (`_d32`,
// head_dim % 32 == 0) with the merge kernel (ops::attention_kernel says why not in
// clusters). Each serves the geometries decode_attention_mma.cu does not.
#define DA_ENTRY(NAME, CLUSTER, FAST, MG, DC)                                                  \
    extern "C" __global__ void __launch_bounds__(DA_THREADS)                                   \
        NAME(const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k_cache,   \
             const __nv_bfloat16* __restrict__ v_cache, const int* __restrict__ tables,        \
             const int* __restrict__ table_offs, const int* __restrict__ ctx_lens,             \
             float* __restrict__ part_acc, float* __restrict__ part_ml,                        \
             __nv_bfloat16* __restrict__ out, int heads, int kv_heads, int D, int block_size,  \
             float scale, int settled) {                                                       \
        decode_attention_body<CLUSTER, FAST, MG, DC>(q, k_cache, v_cache, tables, table_offs,  \
                                             ctx_lens, part_acc, part_ml, out, heads,          \
                                             kv_heads, D, block_size, scale, settled);         \
    }
DA_ENTRY(decode_attention, false, false, DA_MAXG, 0)
DA_ENTRY(decode_attention_cluster, true, false, DA_MAXG, 0)
DA_ENTRY(decode_attention_d32, false, true, DA_MAXG, 0)

// Merge the splits of (row, head): out = sum_s acc_s e^(m_s - m) / sum_s l_s e^(m_s - m).
// A split past the row's context has l = 0 and is skipped. One block per (row, head).
// Every split's (m, l) is loaded at once into shared memory (a loop over splits that
// loaded them one by one paid an L2 round trip per split: ~16 us per layer at 32 splits),
// and each thread's acc of every split (head_dim <= DA_THREADS: one dimension per thread)
// in the same round trip, into registers, before the weights exist: then the sum, in the
// same order as before.
extern "C" __global__ void __launch_bounds__(DA_THREADS)
    decode_attention_combine(const float* __restrict__ part_acc, const float* __restrict__ part_ml,
                             __nv_bfloat16* __restrict__ out, int heads, int D, int nsplit) {
    pdl_trigger();
    pdl_wait();
    __shared__ float s_w[DA_MAXSPLITS];
    __shared__ float s_inv_l;
    const int r = blockIdx.x, h = blockIdx.y, tid = threadIdx.x;
    const size_t base = ((size_t)r * heads + h) * nsplit;
    float acc[DA_MAXSPLITS];
#pragma unroll
    for (int s = 0; s < DA_MAXSPLITS; ++s)
        acc[s] = s < nsplit && tid < D ? part_acc[(base + s) * D + tid] : 0.f;
    if (tid < 32) {
        float m = __int_as_float(0xff800000), l = 0.f;
        if (tid < nsplit) {
            m = part_ml[2 * (base + tid)];
            l = part_ml[2 * (base + tid) + 1];
        }
        merge_weights(m, l, s_w, &s_inv_l);
    }
    __syncthreads();
    TRACE_MARK(2);
    if (tid < D) {
        float o = 0.f;
#pragma unroll
        for (int s = 0; s < DA_MAXSPLITS; ++s)
            if (s < nsplit) o = fmaf(acc[s], s_w[s], o);
        out[(size_t)r * heads * D + (size_t)h * D + tid] = __float2bfloat16(o * s_inv_l);
    }
}
