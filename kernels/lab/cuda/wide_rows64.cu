// Lab kernels (bin/wide_rows64.rs times them): the production wide FP8 GEMM's main loop
// (kernels/cuda/wide_fp8.cu, whose helpers this file uses) with the block's shape made
// template parameters, at 64 token rows, where the 16- and 32-row forms' block (4 warps of
// one 16-row fragment, 4 stages) loses to cuBLAS on the bf16 copies. Per weight byte a
// 64-row stage on that block reads 8 bytes of x from shared memory (16 weight rows a warp)
// and 2 from L2 (a 64-row block's x stage is twice its weights); two fragments a warp
// halve the first, 128- or 256-row blocks the second (engine/PERF-LOG.md step 76). The
// weights are the production wide copy (ops::wide_tiles, 64-row tiles): a block of more
// rows takes consecutive tiles, one bulk copy per tile and stage. With WARPS 4, RF 1 and
// STAGES 4 it is the production loop; if a shape wins, this template replaces it.

// MT: groups of 8 token rows (2: up to 16 rows, 4: up to 32, 8: up to 64). WARPS, RF,
// STAGES: the block's warps, each taking RF fragments of 16 weight rows (RF contiguous
// fragments: the block holds 16 WARPS RF rows, WF_ROWS-row production tiles one after
// another in shared memory), and its ring depth. XBF: x is bf16 (o_proj reads the
// attention's output), converted to f16 per word as TileFp8 does; else f16 as the `_f16`
// norms and the SwiGLU act write it. SWIGLU: splits must be 1.
template <int MT, int WARPS, int RF, int STAGES, bool XBF, bool SWIGLU, class Out>
__device__ __forceinline__ void wide_rf(const unsigned char* __restrict__ x,
                                         const unsigned char* __restrict__ w,
                                         const float* __restrict__ scale_inv, Out* __restrict__ y,
                                         int M, int N, int K, int R, int il, int splits,
                                         float* __restrict__ clear, int clear_n4) {
    constexpr int THREADS = 32 * WARPS, TR = 16 * WARPS * RF, SUB = TR / WF_ROWS;
    constexpr int M8 = MT * 8, TILE_BYTES = WF_ROWS * 128, W_BYTES = TR * 128, X_BYTES = M8 * 256;
    constexpr int SLOT = W_BYTES + X_BYTES;
    static_assert(TR % WF_ROWS == 0, "a block takes whole production tiles");
    extern __shared__ __align__(128) unsigned char ring[];
    __shared__ __align__(8) unsigned long long full[STAGES];
    pdl_trigger();
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int nch = K / 128, per = (nch + splits - 1) / splits;
    const int tile = blockIdx.x / splits, split = blockIdx.x % splits;
    const int n0 = tile * TR, kc0 = split * per, mine = max(0, min(nch, kc0 + per) - kc0);
    // The block's production tiles, each with its stages one after another (ops::wide_tiles).
    const unsigned char* wt = w + (size_t)tile * SUB * nch * TILE_BYTES;
    const int sc = (K + 127) / 128;
    // Fragment f of this warp: block rows ra[f] and ra[f] + 8.
    int ra[RF];
    const float* sra[RF];
    const float* srb[RF];
#pragma unroll
    for (int f = 0; f < RF; ++f) {
        ra[f] = 16 * (warp * RF + f) + g;
        sra[f] = scale_inv + (size_t)fp8_scale_row(n0 + ra[f], il, R) * sc + kc0;
        srb[f] = scale_inv + (size_t)fp8_scale_row(n0 + ra[f] + 8, il, R) * sc + kc0;
    }
    const unsigned long long policy = wf_ring_init<STAGES>(full);

    // Thread 0 only: the stage's weights, one bulk copy per production tile onto its barrier.
    auto load_w = [&](int slot, int kc) {
        mbar_arrive_tx(&full[slot], W_BYTES);
#pragma unroll
        for (int q = 0; q < SUB; ++q)
            bulk_load(ring + slot * SLOT + q * TILE_BYTES, wt + ((size_t)q * nch + kc) * TILE_BYTES,
                      TILE_BYTES, &full[slot], policy);
    };
    auto load_x = [&](int slot, int kc) {
        unsigned char* xs = ring + slot * SLOT + W_BYTES;
#pragma unroll
        for (int q = 0; q < (M8 * 16 + THREADS - 1) / THREADS; ++q) {
            const int i = tid + q * THREADS;
            if (i < M8 * 16) {
                const int m = i >> 4, u = i & 15;
                const bool ok = m < M;
                wf_copy16(xs + m * 256 + wf_x_unit(m, u) * 16,
                          x + (size_t)(ok ? m : 0) * 2 * K + (size_t)kc * 256 + u * 16, ok);
            }
        }
    };

    // The weights are constants: their first stages stream before the wait on the kernel
    // that writes x. Each stage's x is one cp.async commit group.
    if (tid == 0) {
#pragma unroll
        for (int s = 0; s < STAGES - 1; ++s)
            if (s < mine) load_w(s, kc0 + s);
    }
    pdl_wait();
    // The next split wide GEMM's y, zeroed here instead of by a memset in front of it.
    wf_clear(clear, clear_n4);
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < mine) load_x(s, kc0 + s);
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    float c[RF][MT][4];
#pragma unroll
    for (int f = 0; f < RF; ++f)
#pragma unroll
        for (int j = 0; j < MT; ++j) c[f][j][0] = c[f][j][1] = c[f][j][2] = c[f][j][3] = 0.f;
    for (int i = 0; i < mine; ++i) {
        wf_wait_pending<STAGES - 2>();
        mbar_wait(&full[i % STAGES], (i / STAGES) & 1);
        __syncthreads();  // stage i landed for every thread; the slot of stage i - 1 is free
        if (i + STAGES - 1 < mine) {
            if (tid == 0) load_w((i + STAGES - 1) % STAGES, kc0 + i + STAGES - 1);
            load_x((i + STAGES - 1) % STAGES, kc0 + i + STAGES - 1);
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
        const unsigned char* ws = ring + (i % STAGES) * SLOT;
        const unsigned char* xs = ws + W_BYTES;
        // The thread's 32 codes of rows ra and rb of each fragment as f16 pairs, once for
        // every group: word e of piece h holds codes 16h + 4e..+3, the MMA's a0 / a2 (row
        // ra) and a1 / a3 (rb).
        unsigned af[RF][2][4][4];
        float sa[RF], sb[RF];
#pragma unroll
        for (int f = 0; f < RF; ++f) {
            const int fa = ra[f], fb = fa + 8;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const uint4 a = *reinterpret_cast<const uint4*>(ws + fa * 128 + wf_w_unit(fa, 2 * t + h) * 16);
                const uint4 b = *reinterpret_cast<const uint4*>(ws + fb * 128 + wf_w_unit(fb, 2 * t + h) * 16);
                const unsigned aw[4] = {a.x, a.y, a.z, a.w}, bw[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    af[f][h][e][0] = fp8x2_to_f16x2(aw[e] & 0xffff);
                    af[f][h][e][1] = fp8x2_to_f16x2(bw[e] & 0xffff);
                    af[f][h][e][2] = fp8x2_to_f16x2(aw[e] >> 16);
                    af[f][h][e][3] = fp8x2_to_f16x2(bw[e] >> 16);
                }
            }
            sa[f] = __ldg(sra[f] + i);
            sb[f] = __ldg(srb[f] + i);
        }
#pragma unroll
        for (int j = 0; j < MT; ++j) {
            const int m = 8 * j + g;
            unsigned xw[16];
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const uint4 v = *reinterpret_cast<const uint4*>(xs + m * 256 + wf_x_unit(m, 4 * t + q) * 16);
                xw[4 * q] = v.x;
                xw[4 * q + 1] = v.y;
                xw[4 * q + 2] = v.z;
                xw[4 * q + 3] = v.w;
            }
            if constexpr (XBF) {
#pragma unroll
                for (int q = 0; q < 16; ++q) xw[q] = bf16x2_to_f16x2(xw[q]);
            }
#pragma unroll
            for (int f = 0; f < RF; ++f) {
                float p[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
                for (int h = 0; h < 2; ++h)
#pragma unroll
                    for (int e = 0; e < 4; ++e)
                        mma_f16(p, af[f][h][e][0], af[f][h][e][1], af[f][h][e][2], af[f][h][e][3],
                                xw[8 * h + 2 * e], xw[8 * h + 2 * e + 1]);
                c[f][j][0] = fmaf(sa[f], p[0], c[f][j][0]);
                c[f][j][1] = fmaf(sa[f], p[1], c[f][j][1]);
                c[f][j][2] = fmaf(sb[f], p[2], c[f][j][2]);
                c[f][j][3] = fmaf(sb[f], p[3], c[f][j][3]);
            }
        }
    }
    // c[f][j]: rows ra[f] (0, 1) and ra[f] + 8 (2, 3), tokens 8j + 2t and 8j + 2t + 1. Every
    // copy this block issued has landed (stage mine - 1 was waited for), so it may leave.
#pragma unroll
    for (int f = 0; f < RF; ++f)
#pragma unroll
        for (int j = 0; j < MT; ++j) {
            const int m0 = 8 * j + 2 * t, fa = ra[f], fb = fa + 8;
            if constexpr (SWIGLU) {
                // Rows fa and fb are gate and up of one act column: the fragment's 16 rows
                // start at n0 + fa - g and hold 8 columns.
                const int inter = N / 2, col = (n0 + fa - g) / 2 + g;
                if (m0 < M) wf_store_act(y, m0, inter, col, c[f][j][0], c[f][j][2]);
                if (m0 + 1 < M) wf_store_act(y, m0 + 1, inter, col, c[f][j][1], c[f][j][3]);
            } else {
                const bool add = splits > 1;
                float* y0 = y + (size_t)m0 * N + n0;
                if (m0 < M) {
                    wf_out(y0 + fa, c[f][j][0], add);
                    wf_out(y0 + fb, c[f][j][2], add);
                }
                if (m0 + 1 < M) {
                    wf_out(y0 + N + fa, c[f][j][1], add);
                    wf_out(y0 + N + fb, c[f][j][3], add);
                }
            }
        }
}

// w64_w{warps}_r{fragments}_s{stages}: the production entries' arguments (x, w, scale_inv,
// y, M, N, K, R, il, splits, clear, clear_n4); BLOCKS as the ring and registers allow.
#define WR_ENTRY(NAME, MT, WARPS, RF, STAGES, BLOCKS)                                             \
    extern "C" __global__ void __launch_bounds__(32 * WARPS, BLOCKS)                              \
        NAME(const __half* __restrict__ x, const unsigned char* __restrict__ w,                   \
             const float* __restrict__ scale_inv, float* __restrict__ y, int M, int N, int K,     \
             int R, int il, int splits, float* __restrict__ clear, int clear_n4) {                \
        wide_rf<MT, WARPS, RF, STAGES, false, false>(reinterpret_cast<const unsigned char*>(x), w, \
                                                     scale_inv, y, M, N, K, R, il, splits, clear,  \
                                                     clear_n4);                                    \
    }
WR_ENTRY(w64_w4_r1_s4, 8, 4, 1, 4, 2)
WR_ENTRY(w64_w4_r1_s3, 8, 4, 1, 3, 3)
WR_ENTRY(w64_w2_r2_s3, 8, 2, 2, 3, 3)
WR_ENTRY(w64_w2_r2_s4, 8, 2, 2, 4, 2)
WR_ENTRY(w64_w4_r2_s2, 8, 4, 2, 2, 3)
WR_ENTRY(w64_w4_r2_s3, 8, 4, 2, 3, 2)
WR_ENTRY(w64_w4_r2_s4, 8, 4, 2, 4, 1)
WR_ENTRY(w64_w8_r1_s3, 8, 8, 1, 3, 2)
WR_ENTRY(w64_w8_r2_s3, 8, 8, 2, 3, 1)
