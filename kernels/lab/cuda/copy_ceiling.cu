// Experiment (bin/copy_ceiling.rs): how fast can the step's weights stream into the SMs at
// all, by each way of moving them, with no multiplying? The engine's bulk GEMMs fill a
// ring of 16 KB stages with 16 bulk copies of 1 KB, one per weight row (rows are K
// elements apart in the checkpoint's row-major layout). Here the same ring is filled
// either that way or from weights laid out tile by tile, so that a stage is one contiguous
// 16 KB (one copy, or a few), against plain 16-byte loads (the way engine/PERF.md's read ceiling was measured).
// Built behind skinny_bulk.cu (its mbarrier and bulk-copy helpers).

// Streams the 16-row tiles of w [N, row_bytes] (rows `pitch` bytes apart) through a ring of `stages` stages per block
// (grid of persistent blocks, block b taking tiles b, b + grid, ...). tiled = 0: a stage is
// 1 KB of each of the tile's 16 rows (16 copies, as the engine); tiled = 1: the tile's
// 16 * row_bytes bytes are taken as laid out stage after stage, each stage `copies`
// contiguous copies of 16 KB / copies. The 8 consumer warps read every 16 bytes of a stage
// from shared memory (as the GEMMs' consumers do) and hand it back; `out` keeps the reads
// alive.
extern "C" __global__ void __launch_bounds__(TM_THREADS, 1)
    copy_ceiling_ring(const unsigned char* __restrict__ w, int N, int row_bytes, int pitch,
                      int piece, int tiled, int copies, int stages, unsigned* __restrict__ out) {
    pdl_trigger();
    extern __shared__ __align__(128) unsigned char ring[];
    __shared__ __align__(8) unsigned long long full[TM_MAX_STAGES], empty[TM_MAX_STAGES];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const unsigned ntiles = (N + 15) / 16;
    // Rows mode: a stage is `piece` bytes (1 or 2 KB) of each of the 16 rows, rows `pitch`
    // bytes apart. Tiled mode: pieces of 1 KB, rows packed.
    const int nst = row_bytes / piece;
    const int stage_bytes = 16 * (piece + 16);
    ring_init(full, empty, stages);
    if (warp == SG_WARPS) {
        unsigned long long policy;
        asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
        const int cb = 16 * TM_ROW_BYTES / copies;
        int i = 0;
        for (unsigned tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
            const unsigned char* tb = w + (size_t)tile * 16 * (tiled ? row_bytes : pitch);
            for (int k = 0; k < nst; ++k, ++i) {
                const int s = i % stages;
                if (i >= stages) mbar_wait(&empty[s], (i / stages - 1) & 1);
                if (lane == 0) mbar_arrive_tx(&full[s], 16 * piece);
                __syncwarp();
                unsigned char* dst = ring + s * stage_bytes;
                if (!tiled) {
                    if (lane < 16)
                        bulk_load(dst + lane * (piece + 16), tb + (size_t)lane * pitch + k * piece,
                                  piece, &full[s], policy);
                } else if (lane < copies) {
                    bulk_load(dst + lane * cb, tb + (size_t)k * 16 * TM_ROW_BYTES + lane * cb,
                              cb, &full[s], policy);
                }
            }
        }
        return;
    }
    pdl_wait();
    uint4 acc = make_uint4(0, 0, 0, 0);
    int i = 0;
    for (unsigned tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
        for (int k = 0; k < nst; ++k, ++i) {
            const int s = i % stages;
            mbar_wait(&full[s], (i / stages) & 1);
            // Warp w reads rows 2w and 2w + 1 of the stage (16-byte words, row stride as the
            // engine's ring; a tiled stage is read at the same places, wrong but as costly).
            const unsigned char* st = ring + s * stage_bytes;
            const int words = piece / 16;  // per row
#pragma unroll 4
            for (int j = 0; j < piece / 256; ++j) {
                const int word = lane + 32 * j;  // 2 rows of `words` words
                const uint4 v = *reinterpret_cast<const uint4*>(
                    st + (2 * warp + word / words) * (piece + 16) + (word % words) * 16);
                acc.x ^= v.x;
                acc.y ^= v.y;
                acc.z ^= v.z;
                acc.w ^= v.w;
            }
            __syncwarp();
            if (lane == 0) mbar_arrive(&empty[s]);
        }
    }
    if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0x9e3779b9u) out[blockIdx.x] = acc.x;
}

// Plain loads: every thread streams 16-byte words of w [bytes] with `unroll` (1, 4 or 8)
// loads in flight, cache-streaming, grid-stride.
template <int U>
__device__ __forceinline__ uint4 xor_words(const uint4* __restrict__ w, size_t n) {
    uint4 acc = make_uint4(0, 0, 0, 0);
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + (U - 1) * stride < n; i += U * stride) {
        uint4 v[U];
#pragma unroll
        for (int j = 0; j < U; ++j) v[j] = __ldcs(w + i + j * stride);
#pragma unroll
        for (int j = 0; j < U; ++j) {
            acc.x ^= v[j].x;
            acc.y ^= v[j].y;
            acc.z ^= v[j].z;
            acc.w ^= v[j].w;
        }
    }
    for (; i < n; i += stride) {
        const uint4 v = __ldcs(w + i);
        acc.x ^= v.x;
        acc.y ^= v.y;
        acc.z ^= v.z;
        acc.w ^= v.w;
    }
    return acc;
}

extern "C" __global__ void copy_ceiling_loads(const uint4* __restrict__ w, unsigned long long n,
                                              int unroll, unsigned* __restrict__ out) {
    pdl_trigger();
    const uint4 acc = unroll >= 8 ? xor_words<8>(w, n)
                      : unroll >= 4 ? xor_words<4>(w, n)
                                    : xor_words<1>(w, n);
    pdl_wait();
    if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0x9e3779b9u) out[blockIdx.x] = acc.x;
}

// The engine's persistent bf16 GEMM (skinny_bulk.cu's skinny_pipeline_bulk_tiles with
// TileBf16, f32 out, as it was in 2026-11-30 23:19: its ring tracked by RingDiv), rebuilt here with parts of its consumers switched off (timing only:
// the values are wrong where a part is off). With tiled weights the ring alone streams the
// step's linears ~250 us faster than the GEMMs (2026-11-30 20:18): this says which consumer part
// holds them. parts: bit 0 loads x, bit 1 multiplies, bit 2 runs the per-tile epilogue
// (gather, barrier, reduce, store, and the barrier before the next tile); 7 is the engine's
// kernel, instruction for instruction in what it computes. Bit 3 (timing only, wrong
// values): x read from shared memory instead of through L1, as a block that staged x once
// would read it, from a 2 KB region behind the ring (indices wrapped) so that as many
// blocks fit per SM as without it: the x loads' cost with the occupancy held.
extern "C" __global__ void __launch_bounds__(TM_THREADS, 3)
    copy_ceiling_gemm(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                      float* __restrict__ y, int M, int N, int K, int stages, int tiled,
                      int parts) {
    pdl_trigger();
    extern __shared__ __align__(128) unsigned char ring[];
    __shared__ __align__(8) unsigned long long full[TM_MAX_STAGES], empty[TM_MAX_STAGES];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const unsigned ntiles = (N + 15) / 16;
    const TileBf16 first(x, w, M, N, K, blockIdx.x);
    const int row_bytes = first.row_bytes();
    const int nst = (row_bytes + TM_ROW_BYTES - 1) / TM_ROW_BYTES;
    ring_init(full, empty, stages);
    if (warp == SG_WARPS) {
        produce_tiles<RingDiv>(ring, full, empty, first.bytes(), N, row_bytes, stages, tiled);
        return;
    }
    TileBf16::Stage st;
    st.x[0] = st.x[1] = make_uint4(0, 0, 0, 0);
    pdl_wait();
    first.prepare();
    int i = 0;
    for (unsigned tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
        const TileBf16 t(x, w, M, N, K, tile);
        float c[4] = {0.f, 0.f, 0.f, 0.f};
        for (int k = 0; k < nst; ++k, ++i) {
            const int s = i % stages, ch = k * SG_WARPS + warp;
            if (parts & 8) {
                const uint4* xs = reinterpret_cast<const uint4*>(ring + stages * TM_STAGE_BYTES);
                const int q = lane & 3;
                const bool vx = (lane >> 2) < M;
#pragma unroll
                for (int j = 0; j < 2; ++j) {
                    const int p = (ch * 4 + q) * 2 + j;
                    st.x[j] = p < t.pieces() && vx ? xs[p & 127] : make_uint4(0, 0, 0, 0);
                }
            } else if (parts & 1) {
                t.load_x(st, ch);
            }
            mbar_wait(&full[s], (i / stages) & 1);
            load_w_stage(st, ring + s * TM_STAGE_BYTES, ch, t.pieces(), warp);
            __syncwarp();
            if (lane == 0) mbar_arrive(&empty[s]);
            if (parts & 2) {
                t.mma(c, st);
            } else {
                // Keep the loads: one integer op per register instead of the MMAs.
                c[0] += __uint_as_float((st.a[0].x ^ st.a[1].y ^ st.b[0].z ^ st.b[1].w ^
                                         st.x[0].x ^ st.x[1].y) & 0x3fffffffu);
            }
        }
        if (parts & 4) {
            store_out(c, y, M, N, t.n0);
            if (tile + gridDim.x < ntiles) consumers_sync();
        } else if (c[0] == 1234.5f) {
            y[t.n0] = c[1];
        }
    }
}

