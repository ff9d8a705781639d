// Lab kernel (bin/wide_gemm.rs times it): a decode GEMM for 16-64 token rows, y[m, n] =
// sum_k x[m, k] w[n, k], with FP8 (e4m3, 128x128 block scales, x as f16) or bf16 weights.
//
// Why: the engine's skinny kernels hold 16 weight rows per tile and read the tile's x
// from L2 at every stage, so x traffic per weight byte is M/16 (FP8) or M/32 (bf16): at
// 16-64 rows it would exceed the weights' own. Past 8 rows the engine runs cuBLAS on bf16
// weights instead (engine/PERF-LOG.md, 2026-12-03 15:40), which streams ~3.2 TB/s and
// makes FP8 models read bf16 bytes. Here a block holds 128 weight rows (8 warps x 16) and
// stages x once per stage in shared memory for all of them: x traffic falls to M/128
// (FP8) or M/256 (bf16) of the weights'. Grids short of SMs split K, the splits adding
// into y (zeroed first).
//
// A stage is one 128-byte piece of each of the 128 rows (FP8: 128 k, one scale column;
// bf16: 64 k) and the same k of every token row of x, copied with cp.async by all threads
// into a ring of STAGES. Shared rows are XOR-swizzled by 16-byte unit so that the
// fragment reads below hit every bank once per phase. The MMAs are the skinny kernels'
// (skinny_tiles.cuh: thread t of a quad takes 32 contiguous bytes of its two weight rows
// and the same k of its token), repeated for each group of 8 tokens.
#define WG_ROWS 128
#define WG_THREADS 256

// Unit u of weight row r's stage piece (8 units of 16 bytes) lives at unit w_unit(r, u).
__device__ __forceinline__ int w_unit(int r, int u) { return u ^ (r & 7); }
// Unit u of token row m's x piece: 16 units (FP8's 128 k of f16) or 8 (bf16's 64 k). With
// 16, a quad's four threads read units 4t..4t+3: the second half's units swap pairs too,
// so that units u and u + 8 (the same banks) of one row land on different ones.
template <int XU>
__device__ __forceinline__ int x_unit(int m, int u) {
    return XU == 8 ? (u ^ (m & 7)) : (u ^ ((m & 7) ^ ((u >> 3) << 1)));
}

template <int N_>
__device__ __forceinline__ void cp_async_wait_pending() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N_) : "memory");
}

// LAST: split-K without atomics into y and without zeroing it (the `_lb` entry points):
// each split stores its partial tile to scratch [splits][M][N] and bumps the tile's
// counter; the block that arrives last sums the partials in split order (the same bits at
// every run), stores y and resets the counter for the next launch. The question it asks:
// is this as fast as the atomics, where the engine's cluster reduction was not
// (engine/PERF-LOG.md step 64)?
template <bool FP8, int MT, int STAGES, bool LAST = false>
__device__ __forceinline__ void wide_gemm(const unsigned char* __restrict__ x,
                                          const unsigned char* __restrict__ w,
                                          const float* __restrict__ scale_inv,
                                          float* __restrict__ y, int N, int K, int per_unit,
                                          float* __restrict__ scratch = nullptr,
                                          unsigned* __restrict__ counters = nullptr) {
    constexpr int M = MT * 8;
    constexpr int K_STAGE = FP8 ? 128 : 64;
    constexpr int XU = K_STAGE * 2 / 16;  // x units per token row and stage
    constexpr int W_BYTES = WG_ROWS * 128, X_BYTES = M * XU * 16, SLOT = W_BYTES + X_BYTES;
    extern __shared__ __align__(128) unsigned char ring[];
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int nch = K / K_STAGE, splits = (nch + per_unit - 1) / per_unit;
    const int tile = blockIdx.x / splits, split = blockIdx.x % splits;
    const int n0 = tile * WG_ROWS, kc0 = split * per_unit, mine = min(nch, kc0 + per_unit) - kc0;
    const int w_row = FP8 ? K : 2 * K, x_row = 2 * K;
    const unsigned char* wt = w + (size_t)n0 * w_row;

    auto load = [&](int slot, int kc) {
        unsigned char* ws = ring + slot * SLOT;
        unsigned char* xs = ws + W_BYTES;
#pragma unroll
        for (int q = 0; q < WG_ROWS * 8 / WG_THREADS; ++q) {
            const int i = tid + q * WG_THREADS, r = i >> 3, u = i & 7;
            cp_async16(ws + r * 128 + w_unit(r, u) * 16, wt + (size_t)r * w_row + (size_t)kc * 128 + u * 16);
        }
#pragma unroll
        for (int q = 0; q < (M * XU + WG_THREADS - 1) / WG_THREADS; ++q) {
            const int i = tid + q * WG_THREADS;
            if (i < M * XU) {
                const int m = i / XU, u = i % XU;
                cp_async16(xs + m * XU * 16 + x_unit<XU>(m, u) * 16,
                           x + (size_t)m * x_row + (size_t)kc * XU * 16 + u * 16);
            }
        }
    };

    float c[MT][4];
#pragma unroll
    for (int j = 0; j < MT; ++j) c[j][0] = c[j][1] = c[j][2] = c[j][3] = 0.f;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < mine) load(s, kc0 + s);
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    const int ra = 16 * warp + g, rb = ra + 8;
    for (int i = 0; i < mine; ++i) {
        cp_async_wait_pending<STAGES - 2>();
        __syncthreads();  // stage i landed for every thread; slot (i - 1) is free again
        if (i + STAGES - 1 < mine) load((i + STAGES - 1) % STAGES, kc0 + i + STAGES - 1);
        asm volatile("cp.async.commit_group;" ::: "memory");
        const unsigned char* ws = ring + (i % STAGES) * SLOT;
        const unsigned char* xs = ws + W_BYTES;
        uint4 a[2], b[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            a[h] = *reinterpret_cast<const uint4*>(ws + ra * 128 + w_unit(ra, 2 * t + h) * 16);
            b[h] = *reinterpret_cast<const uint4*>(ws + rb * 128 + w_unit(rb, 2 * t + h) * 16);
        }
        if constexpr (FP8) {
            // The tile's 128 rows share one scale row (Qwen3-8B-FP8's 128x128 blocks).
            const float sc = __ldg(scale_inv + (size_t)tile * (K / 128) + kc0 + i);
#pragma unroll
            for (int j = 0; j < MT; ++j) {
                const int m = 8 * j + g;
                unsigned xw[16];
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    const uint4 v = *reinterpret_cast<const uint4*>(xs + m * XU * 16 + x_unit<XU>(m, 4 * t + q) * 16);
                    xw[4 * q] = v.x;
                    xw[4 * q + 1] = v.y;
                    xw[4 * q + 2] = v.z;
                    xw[4 * q + 3] = v.w;
                }
                float p[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const unsigned aw[4] = {a[h].x, a[h].y, a[h].z, a[h].w};
                    const unsigned bw[4] = {b[h].x, b[h].y, b[h].z, b[h].w};
#pragma unroll
                    for (int e = 0; e < 4; ++e)
                        mma_f16(p, fp8x2_to_f16x2(aw[e] & 0xffff), fp8x2_to_f16x2(bw[e] & 0xffff),
                                fp8x2_to_f16x2(aw[e] >> 16), fp8x2_to_f16x2(bw[e] >> 16),
                                xw[8 * h + 2 * e], xw[8 * h + 2 * e + 1]);
                }
#pragma unroll
                for (int e = 0; e < 4; ++e) c[j][e] = fmaf(sc, p[e], c[j][e]);
            }
        } else {
#pragma unroll
            for (int j = 0; j < MT; ++j) {
                const int m = 8 * j + g;
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const uint4 v =
                        *reinterpret_cast<const uint4*>(xs + m * XU * 16 + x_unit<XU>(m, 2 * t + h) * 16);
                    mma_bf16(c[j], a[h].x, b[h].x, a[h].y, b[h].y, v.x, v.y);
                    mma_bf16(c[j], a[h].z, b[h].z, a[h].w, b[h].w, v.z, v.w);
                }
            }
        }
    }
    // c[j]: rows ra (0, 1) and rb (2, 3), tokens 8j + 2t and 8j + 2t + 1.
    if constexpr (!LAST) {
#pragma unroll
        for (int j = 0; j < MT; ++j) {
            const size_t m0 = 8 * j + 2 * t;
            atomicAdd(y + m0 * N + n0 + ra, c[j][0]);
            atomicAdd(y + (m0 + 1) * N + n0 + ra, c[j][1]);
            atomicAdd(y + m0 * N + n0 + rb, c[j][2]);
            atomicAdd(y + (m0 + 1) * N + n0 + rb, c[j][3]);
        }
    } else {
        float* part = scratch + (size_t)split * M * N;
#pragma unroll
        for (int j = 0; j < MT; ++j) {
            const size_t m0 = 8 * j + 2 * t;
            part[m0 * N + n0 + ra] = c[j][0];
            part[(m0 + 1) * N + n0 + ra] = c[j][1];
            part[m0 * N + n0 + rb] = c[j][2];
            part[(m0 + 1) * N + n0 + rb] = c[j][3];
        }
        __shared__ bool last;
        __threadfence();  // this block's partial is visible before its arrival counts
        __syncthreads();
        if (tid == 0) last = atomicAdd(counters + tile, 1u) == (unsigned)splits - 1;
        __syncthreads();
        if (!last) return;
        __threadfence();  // and every other block's partial is visible to this one
        for (int i = tid; i < WG_ROWS * M; i += WG_THREADS) {
            const int lr = i % WG_ROWS, m = i / WG_ROWS;
            float sum = 0.f;
            for (int s = 0; s < splits; ++s) sum += __ldcg(scratch + ((size_t)s * M + m) * N + n0 + lr);
            y[(size_t)m * N + n0 + lr] = sum;
        }
        if (tid == 0) counters[tile] = 0;
    }
}

#define WG_ENTRY(NAME, FP8, MT, STAGES, MINB)                                                   \
    extern "C" __global__ void __launch_bounds__(WG_THREADS, MINB)                              \
        NAME(const unsigned char* __restrict__ x, const unsigned char* __restrict__ w,          \
             const float* __restrict__ scale_inv, float* __restrict__ y, int N, int K,          \
             int per_unit) {                                                                    \
        wide_gemm<FP8, MT, STAGES>(x, w, scale_inv, y, N, K, per_unit);                         \
    }
WG_ENTRY(wide_fp8_m16, true, 2, 4, 2)
WG_ENTRY(wide_fp8_m32, true, 4, 4, 2)
WG_ENTRY(wide_fp8_m64, true, 8, 4, 1)
WG_ENTRY(wide_bf16_m16, false, 2, 4, 2)
WG_ENTRY(wide_bf16_m32, false, 4, 4, 2)
WG_ENTRY(wide_bf16_m64, false, 8, 4, 2)

#define WG_ENTRY_LB(NAME, FP8, MT, STAGES, MINB)                                                \
    extern "C" __global__ void __launch_bounds__(WG_THREADS, MINB)                              \
        NAME(const unsigned char* __restrict__ x, const unsigned char* __restrict__ w,          \
             const float* __restrict__ scale_inv, float* __restrict__ y, int N, int K,          \
             int per_unit, float* __restrict__ scratch, unsigned* __restrict__ counters) {      \
        wide_gemm<FP8, MT, STAGES, true>(x, w, scale_inv, y, N, K, per_unit, scratch, counters); \
    }
WG_ENTRY_LB(wide_fp8_m16_lb, true, 2, 4, 2)
WG_ENTRY_LB(wide_fp8_m32_lb, true, 4, 4, 2)
