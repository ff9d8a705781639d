// Lab kernels (bin/wide_variants.rs times them), behind the production wide FP8 GEMM
// (kernels/cuda/wide_fp8.cu) and the bulk ring's barriers (bulk_ring.cuh): its main loop
// with the three things that shape how its weights stream made template parameters, to
// find which one holds the 16- and 32-row forms at 2.2-3.2 TB/s:
// - WARPS: weight rows per block (16 per warp; production 8 until step 74, so 128-row
//   tiles, then 4). Fewer rows balance a short grid better (gate|up's 192 tiles leave 60
//   SMs two blocks and 72 one); x staged per stage costs M / (16 WARPS) of the weight bytes.
// - ST: ring stages (production 4).
// - MODE: 0 the reads of the production kernel until step 74 (128 bytes of each row per
//   stage, rows K apart, one cp.async of 16 bytes per thread per 16 bytes); 1 the weights tiled so that a block's
//   stage is one contiguous 16 KB (swizzle applied in the layout), still cp.async per
//   thread; 2 the tiled stage moved by one bulk copy (cp.async.bulk, completing on an
//   mbarrier) that thread 0 issues, x by cp.async as before.
// Tiled layout (MODE 1, 2): stage s of tile T (16 WARPS rows) at (T * K / 128 + s) * rows
// * 128 bytes; row r's 16-byte unit p there holds the row's unit p ^ (r & 7) of the stage
// (wf_w_unit, its own inverse). Scales plain ([n / 128, k / 128], interleave 0).
template <int MT, int WARPS, int ST, int MODE>
__device__ __forceinline__ void wide_variant(const unsigned char* __restrict__ x,
                                             const unsigned char* __restrict__ w,
                                             const float* __restrict__ scale_inv, float* __restrict__ y,
                                             int M, int N, int K, int splits) {
    constexpr int TR = 16 * WARPS, THREADS = 32 * WARPS;
    constexpr int M8 = MT * 8, W_BYTES = TR * 128, X_BYTES = M8 * 256, SLOT = W_BYTES + X_BYTES;
    extern __shared__ __align__(128) unsigned char ring[];
    __shared__ __align__(8) unsigned long long full[ST];
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int nch = K / 128, per = (nch + splits - 1) / splits;
    const int tile = blockIdx.x / splits, split = blockIdx.x % splits;
    const int n0 = tile * TR, kc0 = split * per, mine = max(0, min(nch, kc0 + per) - kc0);
    const unsigned char* wt = MODE == 0 ? w + (size_t)n0 * K : w + (size_t)tile * nch * W_BYTES;
    const int ra = 16 * warp + g, rb = ra + 8;
    const float* sra = scale_inv + (size_t)((n0 + ra) / 128) * nch + kc0;
    const float* srb = scale_inv + (size_t)((n0 + rb) / 128) * nch + kc0;
    unsigned long long policy = 0;
    if constexpr (MODE == 2) policy = wf_ring_init<ST>(full);

    auto load_w = [&](int slot, int kc) {
        unsigned char* ws = ring + slot * SLOT;
        if constexpr (MODE == 0) {
#pragma unroll
            for (int q = 0; q < TR * 8 / THREADS; ++q) {
                const int i = tid + q * THREADS, r = i >> 3, u = i & 7;
                wf_copy16(ws + r * 128 + wf_w_unit(r, u) * 16, wt + (size_t)r * K + (size_t)kc * 128 + u * 16,
                          true);
            }
        } else if constexpr (MODE == 1) {
            const unsigned char* src = wt + (size_t)kc * W_BYTES;
#pragma unroll
            for (int q = 0; q < TR * 8 / THREADS; ++q) {
                const int i = tid + q * THREADS;
                wf_copy16(ws + i * 16, src + i * 16, true);
            }
        } else {
            if (tid == 0) {
                mbar_arrive_tx(&full[slot], W_BYTES);
                bulk_load(ws, wt + (size_t)kc * W_BYTES, W_BYTES, &full[slot], policy);
            }
        }
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

#pragma unroll
    for (int s = 0; s < ST - 1; ++s)
        if (s < mine) load_w(s, kc0 + s);
#pragma unroll
    for (int s = 0; s < ST - 1; ++s) {
        if (s < mine) load_x(s, kc0 + s);
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    float c[MT][4];
#pragma unroll
    for (int j = 0; j < MT; ++j) c[j][0] = c[j][1] = c[j][2] = c[j][3] = 0.f;
    for (int i = 0; i < mine; ++i) {
        wf_wait_pending<ST - 2>();
        if constexpr (MODE == 2) mbar_wait(&full[i % ST], (i / ST) & 1);
        __syncthreads();
        if (i + ST - 1 < mine) {
            load_w((i + ST - 1) % ST, kc0 + i + ST - 1);
            load_x((i + ST - 1) % ST, kc0 + i + ST - 1);
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
        const unsigned char* ws = ring + (i % ST) * SLOT;
        const unsigned char* xs = ws + W_BYTES;
        unsigned af[2][4][4];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const uint4 a = *reinterpret_cast<const uint4*>(ws + ra * 128 + wf_w_unit(ra, 2 * t + h) * 16);
            const uint4 b = *reinterpret_cast<const uint4*>(ws + rb * 128 + wf_w_unit(rb, 2 * t + h) * 16);
            const unsigned aw[4] = {a.x, a.y, a.z, a.w}, bw[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                af[h][e][0] = fp8x2_to_f16x2(aw[e] & 0xffff);
                af[h][e][1] = fp8x2_to_f16x2(bw[e] & 0xffff);
                af[h][e][2] = fp8x2_to_f16x2(aw[e] >> 16);
                af[h][e][3] = fp8x2_to_f16x2(bw[e] >> 16);
            }
        }
        const float sa = __ldg(sra + i), sb = __ldg(srb + i);
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
            float p[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
            for (int h = 0; h < 2; ++h)
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    mma_f16(p, af[h][e][0], af[h][e][1], af[h][e][2], af[h][e][3], xw[8 * h + 2 * e],
                            xw[8 * h + 2 * e + 1]);
            c[j][0] = fmaf(sa, p[0], c[j][0]);
            c[j][1] = fmaf(sa, p[1], c[j][1]);
            c[j][2] = fmaf(sb, p[2], c[j][2]);
            c[j][3] = fmaf(sb, p[3], c[j][3]);
        }
    }
    const bool add = splits > 1;
#pragma unroll
    for (int j = 0; j < MT; ++j) {
        const int m0 = 8 * j + 2 * t;
        float* y0 = y + (size_t)m0 * N + n0;
        if (m0 < M) {
            wf_out(y0 + ra, c[j][0], add);
            wf_out(y0 + rb, c[j][2], add);
        }
        if (m0 + 1 < M) {
            wf_out(y0 + N + ra, c[j][1], add);
            wf_out(y0 + N + rb, c[j][3], add);
        }
    }
}

// wv_m{rows}_w{warps}_s{stages}_{mode}: the production entries' arguments (x, w,
// scale_inv, y, M, N, K, R, il, splits); R must be 128 and il 0.
#define WV_ENTRY(MT, WARPS, ST, MODE, MIN_BLOCKS)                                                  \
    extern "C" __global__ void __launch_bounds__(32 * WARPS, MIN_BLOCKS)                          \
        wv_m##MT##_w##WARPS##_s##ST##_##MODE(const __half* __restrict__ x,                         \
                                             const unsigned char* __restrict__ w,                  \
                                             const float* __restrict__ scale_inv,                  \
                                             float* __restrict__ y, int M, int N, int K, int R,    \
                                             int il, int splits) {                                 \
        wide_variant<MT, WARPS, ST, MODE>(reinterpret_cast<const unsigned char*>(x), w, scale_inv, \
                                          y, M, N, K, splits);                                     \
    }
// MT 2: 16 token rows, 4: 32.
WV_ENTRY(2, 8, 4, 0, 2)
WV_ENTRY(2, 8, 4, 1, 2)
WV_ENTRY(2, 8, 4, 2, 2)
WV_ENTRY(2, 8, 8, 2, 1)
WV_ENTRY(2, 4, 4, 0, 4)
WV_ENTRY(2, 4, 4, 2, 4)
WV_ENTRY(2, 4, 6, 2, 3)
WV_ENTRY(4, 8, 4, 0, 2)
WV_ENTRY(4, 8, 4, 1, 2)
WV_ENTRY(4, 8, 4, 2, 2)
WV_ENTRY(4, 4, 4, 2, 4)
WV_ENTRY(4, 4, 6, 2, 2)
// After step 74 (the 64-row bulk form in production): 32-row blocks (more, shorter-lived
// blocks for qkv and o_proj's small grids) and ring depths around 4.
WV_ENTRY(2, 2, 4, 2, 8)
WV_ENTRY(2, 2, 8, 2, 4)
WV_ENTRY(2, 4, 3, 2, 5)
WV_ENTRY(2, 4, 5, 2, 3)
WV_ENTRY(4, 2, 4, 2, 6)
WV_ENTRY(4, 4, 3, 2, 4)
