// Lab kernels (bin/wide_gemm.rs times them), behind the production wide FP8 GEMM
// (kernels/cuda/wide_fp8.cu), which the program times at 16 and 32 token rows:
// - wide_fp8_m64_r1: the 16- and 32-row forms' block (4 warps of one fragment, 4 stages)
//   at 64 token rows, where it lost to cuBLAS (engine/PERF-LOG.md, 2026-12-03 16:00, with
//   128-row blocks): one block per SM. The production 64-row form is another shape (step 76).
// - wide_bf16_m16 / _m32 / _m64: the same tiling for bf16 weights, which never beat cuBLAS
//   (row-major, 128-row blocks, 2026-12-03); wide_bf16_bulk_*: read as the FP8 kernel reads
//   since step 74 (64-row blocks, a tiled copy, one bulk copy per stage).
//   A stage is 64 k (128 bytes of each of the WF_ROWS weight rows) and the same k of every
//   token row of x; the MMAs are the skinny kernels' bf16 ones (skinny_tiles.cuh), repeated
//   for each group of 8 tokens; split-K blocks add into a zeroed y.
// Both take the production entries' arguments (x, w, scale_inv, y, M, N, K, R, il, splits,
// clear, clear_n4); the bf16 kernels ignore scale_inv, R, il and clear, and read every one
// of the MT * 8 rows of x.

// The bf16 forms' block: 4 warps, a ring of 4 stages.
#define WG_THREADS 128
#define WG_STAGES 4

extern "C" __global__ void __launch_bounds__(WG_THREADS, 1)
    wide_fp8_m64_r1(const __half* __restrict__ x, const unsigned char* __restrict__ w,
                    const float* __restrict__ scale_inv, float* __restrict__ y, int M, int N, int K,
                    int R, int il, int splits, float* __restrict__ clear, int clear_n4) {
    wide_fp8<8, 4, 1, 4, false, false>(reinterpret_cast<const unsigned char*>(x), w, scale_inv, y, M,
                                       N, K, R, il, splits, clear, clear_n4);
}

// Unit u of token row m's 64-k x piece (8 units of 16 bytes).
__device__ __forceinline__ int wg_x_unit(int m, int u) { return u ^ (m & 7); }

// BULK: the weights come tiled as the FP8 wide kernel's (ops::wide_tiles over the bf16
// matrix's bytes, [n, 2k]: a stage is 64 k of the block's WF_ROWS rows, 128 bytes each, one
// contiguous run moved by one bulk copy), else row-major by per-thread cp.async. Both wait
// for the kernel before them with PDL (the weights' first stages stream before the wait),
// zero `clear` for a later GEMM as the FP8 kernel does, and store where K is not split.
template <int MT, bool BULK>
__device__ __forceinline__ void wide_bf16(const unsigned char* __restrict__ x,
                                          const unsigned char* __restrict__ w, float* __restrict__ y,
                                          int N, int K, int splits, float* __restrict__ clear,
                                          int clear_n4) {
    constexpr int M = MT * 8, W_BYTES = WF_ROWS * 128, X_BYTES = M * 128, SLOT = W_BYTES + X_BYTES;
    extern __shared__ __align__(128) unsigned char ring[];
    __shared__ __align__(8) unsigned long long full[WG_STAGES];
    pdl_trigger();
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int nch = K / 64, per = (nch + splits - 1) / splits;
    const int tile = blockIdx.x / splits, split = blockIdx.x % splits;
    const int n0 = tile * WF_ROWS, kc0 = split * per, mine = max(0, min(nch, kc0 + per) - kc0);
    const unsigned char* wt = BULK ? w + (size_t)tile * nch * W_BYTES : w + (size_t)n0 * 2 * K;
    unsigned long long policy = 0;
    if constexpr (BULK) policy = wf_ring_init<WG_STAGES>(full);

    auto load_w = [&](int slot, int kc) {
        unsigned char* ws = ring + slot * SLOT;
        if constexpr (BULK) {
            if (tid == 0) {
                mbar_arrive_tx(&full[slot], W_BYTES);
                bulk_load(ws, wt + (size_t)kc * W_BYTES, W_BYTES, &full[slot], policy);
            }
        } else {
#pragma unroll
            for (int q = 0; q < WF_ROWS * 8 / WG_THREADS; ++q) {
                const int i = tid + q * WG_THREADS, r = i >> 3, u = i & 7;
                cp_async16(ws + r * 128 + wf_w_unit(r, u) * 16, wt + (size_t)r * 2 * K + (size_t)kc * 128 + u * 16);
            }
        }
    };
    auto load_x = [&](int slot, int kc) {
        unsigned char* xs = ring + slot * SLOT + W_BYTES;
#pragma unroll
        for (int q = 0; q < (M * 8 + WG_THREADS - 1) / WG_THREADS; ++q) {
            const int i = tid + q * WG_THREADS;
            if (i < M * 8) {
                const int m = i >> 3, u = i & 7;
                cp_async16(xs + m * 128 + wg_x_unit(m, u) * 16, x + (size_t)m * 2 * K + (size_t)kc * 128 + u * 16);
            }
        }
    };

    float c[MT][4];
#pragma unroll
    for (int j = 0; j < MT; ++j) c[j][0] = c[j][1] = c[j][2] = c[j][3] = 0.f;
#pragma unroll
    for (int s = 0; s < WG_STAGES - 1; ++s)
        if (s < mine) load_w(s, kc0 + s);
    pdl_wait();
    wf_clear(clear, clear_n4);
#pragma unroll
    for (int s = 0; s < WG_STAGES - 1; ++s) {
        if (s < mine) load_x(s, kc0 + s);
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    const int ra = 16 * warp + g, rb = ra + 8;
    for (int i = 0; i < mine; ++i) {
        wf_wait_pending<WG_STAGES - 2>();
        if constexpr (BULK) mbar_wait(&full[i % WG_STAGES], (i / WG_STAGES) & 1);
        __syncthreads();  // stage i landed for every thread; slot (i - 1) is free again
        if (i + WG_STAGES - 1 < mine) {
            load_w((i + WG_STAGES - 1) % WG_STAGES, kc0 + i + WG_STAGES - 1);
            load_x((i + WG_STAGES - 1) % WG_STAGES, kc0 + i + WG_STAGES - 1);
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
        const unsigned char* ws = ring + (i % WG_STAGES) * SLOT;
        const unsigned char* xs = ws + W_BYTES;
        uint4 a[2], b[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            a[h] = *reinterpret_cast<const uint4*>(ws + ra * 128 + wf_w_unit(ra, 2 * t + h) * 16);
            b[h] = *reinterpret_cast<const uint4*>(ws + rb * 128 + wf_w_unit(rb, 2 * t + h) * 16);
        }
#pragma unroll
        for (int j = 0; j < MT; ++j) {
            const int m = 8 * j + g;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const uint4 v = *reinterpret_cast<const uint4*>(xs + m * 128 + wg_x_unit(m, 2 * t + h) * 16);
                mma_bf16(c[j], a[h].x, b[h].x, a[h].y, b[h].y, v.x, v.y);
                mma_bf16(c[j], a[h].z, b[h].z, a[h].w, b[h].w, v.z, v.w);
            }
        }
    }
    // c[j]: rows ra (0, 1) and rb (2, 3), tokens 8j + 2t and 8j + 2t + 1.
    const bool add = splits > 1;
#pragma unroll
    for (int j = 0; j < MT; ++j) {
        float* y0 = y + (size_t)(8 * j + 2 * t) * N + n0;
        wf_out(y0 + ra, c[j][0], add);
        wf_out(y0 + N + ra, c[j][1], add);
        wf_out(y0 + rb, c[j][2], add);
        wf_out(y0 + N + rb, c[j][3], add);
    }
}

#define WG_BF16_ENTRY(NAME, MT, BULK)                                                              \
    extern "C" __global__ void __launch_bounds__(WG_THREADS, 3)                                   \
        NAME(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,            \
             const float* __restrict__ scale_inv, float* __restrict__ y, int M, int N, int K, int R, \
             int il, int splits, float* __restrict__ clear, int clear_n4) {                        \
        wide_bf16<MT, BULK>(reinterpret_cast<const unsigned char*>(x),                             \
                            reinterpret_cast<const unsigned char*>(w), y, N, K, splits, clear,     \
                            clear_n4);                                                             \
    }
WG_BF16_ENTRY(wide_bf16_m16, 2, false)
WG_BF16_ENTRY(wide_bf16_m32, 4, false)
WG_BF16_ENTRY(wide_bf16_m64, 8, false)
WG_BF16_ENTRY(wide_bf16_bulk_m16, 2, true)
WG_BF16_ENTRY(wide_bf16_bulk_m32, 4, true)
WG_BF16_ENTRY(wide_bf16_bulk_m64, 8, true)
