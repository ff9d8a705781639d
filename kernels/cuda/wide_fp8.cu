// FP8 decode GEMM for 9-16 token rows: y[m, n] = sum_k x[m, k] w[n, k] with e4m3 weights
// and block scales (skinny_tiles.cuh's layout and fp8_scale_row), x as f16 or bf16, f32
// out, or gate|up interleaved by 8 rows with SwiGLU into an f16 act (the `_xh` kernels'
// rounding).
//
// Why not the skinny kernels: they hold 16 weight rows per tile and read the tile's x
// from L2 at every stage, so x traffic per weight byte is M/16, twice the weights' own at
// 32 rows. Here a block holds 128 weight rows (8 warps of 16) and stages x once per stage
// in shared memory for all of them: M/128. Whole FP8 decode steps at 12 and 16 rows ran
// 14 % and 9 % faster than on cuBLAS with the bf16 copies; a 32-token form ran steps of
// 24-32 rows 10-16 % slower, so only this 16-token one ships (engine/PERF-LOG.md step 64).
//
// A stage is 128 k: 128 bytes of each of the block's 128 rows (one scale column) and the
// same k of every token row of x, copied by all threads with cp.async into a ring of
// WF_STAGES. Shared rows are XOR-swizzled by 16-byte unit so each fragment read hits every
// bank once per phase. The MMAs are the skinny kernels' (thread t of a quad takes 32
// contiguous codes of its rows g and g + 8, and the same k of token g of each 8-token
// group), the codes converted to f16 once per stage for all the groups.
//
// Grids short of SMs split K: the S blocks of one tile form a thread block cluster, and
// after the loop each block leaves its partial tile in shared memory, where block r sums
// rows [r * 128 / S, (r + 1) * 128 / S) of all S in order and stores them: no atomics, no
// zeroing, the same bits at every run.
#define WF_ROWS 128
#define WF_THREADS 256
#define WF_STAGES 4

__device__ __forceinline__ int wf_w_unit(int r, int u) { return u ^ (r & 7); }
// x rows hold 16 units; a quad reads units 4t..4t+3, so the second half's units also swap
// pairs: units u and u + 8 of one row (the same banks) land on different ones.
__device__ __forceinline__ int wf_x_unit(int m, int u) { return u ^ ((m & 7) ^ ((u >> 3) << 1)); }

// 16 bytes global -> shared, or 16 zero bytes when !valid (cp.async's source size 0).
__device__ __forceinline__ void wf_copy16(void* dst, const void* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_addr(dst)), "l"(src),
                 "r"(valid ? 16 : 0)
                 : "memory");
}

template <int N_>
__device__ __forceinline__ void wf_wait_pending() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N_) : "memory");
}

// Store one reduced output: y[m, n] f32, or for SwiGLU the pair (gate, up) of act column
// `col` as f16 (a bf16-rounded value taken to f16, as reduce_store_swiglu_h).
__device__ __forceinline__ void wf_store(float* y, int m, int N, int n, float v) { y[(size_t)m * N + n] = v; }
__device__ __forceinline__ void wf_store_act(__half* act, int m, int inter, int col, float g, float u) {
    const __nv_bfloat16 b = __float2bfloat16(g / (1.0f + expf(-g)) * u);
    const unsigned h = bf16x2_to_f16x2(*reinterpret_cast<const unsigned short*>(&b));
    reinterpret_cast<unsigned short*>(act)[(size_t)m * inter + col] = (unsigned short)h;
}

// XBF: x is bf16 (o_proj reads the attention's output), converted to f16 per word as
// TileFp8 does; else f16 as the `_f16` norms and the SwiGLU act write it.
template <int MT, bool XBF, bool SWIGLU, class Out>
__device__ __forceinline__ void wide_fp8(const unsigned char* __restrict__ x,
                                         const unsigned char* __restrict__ w,
                                         const float* __restrict__ scale_inv, Out* __restrict__ y,
                                         int M, int N, int K, int R, int il, int splits) {
    constexpr int M8 = MT * 8, W_BYTES = WF_ROWS * 128, X_BYTES = M8 * 256, SLOT = W_BYTES + X_BYTES;
    constexpr int PSTRIDE = M8 + 1;  // the partial tile's row stride, in floats
    extern __shared__ __align__(128) unsigned char ring[];
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int nch = K / 128, per = (nch + splits - 1) / splits;
    const int tile = blockIdx.x / splits, split = blockIdx.x % splits;
    const int n0 = tile * WF_ROWS, kc0 = split * per, mine = max(0, min(nch, kc0 + per) - kc0);
    const unsigned char* wt = w + (size_t)n0 * K;
    const int ra = 16 * warp + g, rb = ra + 8;
    const int sc = (K + 127) / 128;
    const float* sra = scale_inv + (size_t)fp8_scale_row(n0 + ra, il, R) * sc + kc0;
    const float* srb = scale_inv + (size_t)fp8_scale_row(n0 + rb, il, R) * sc + kc0;

    auto load_w = [&](int slot, int kc) {
        unsigned char* ws = ring + slot * SLOT;
#pragma unroll
        for (int q = 0; q < WF_ROWS * 8 / WF_THREADS; ++q) {
            const int i = tid + q * WF_THREADS, r = i >> 3, u = i & 7;
            wf_copy16(ws + r * 128 + wf_w_unit(r, u) * 16, wt + (size_t)r * K + (size_t)kc * 128 + u * 16, true);
        }
    };
    auto load_x = [&](int slot, int kc) {
        unsigned char* xs = ring + slot * SLOT + W_BYTES;
#pragma unroll
        for (int q = 0; q < (M8 * 16 + WF_THREADS - 1) / WF_THREADS; ++q) {
            const int i = tid + q * WF_THREADS;
            if (i < M8 * 16) {
                const int m = i >> 4, u = i & 15;
                const bool ok = m < M;
                wf_copy16(xs + m * 256 + wf_x_unit(m, u) * 16,
                          x + (size_t)(ok ? m : 0) * 2 * K + (size_t)kc * 256 + u * 16, ok);
            }
        }
    };

    pdl_trigger();
    // The weights are constants: their first stages stream before the wait on the kernel
    // that writes x. Each stage's copies are one commit group with its x (stage 0's group
    // holds the early weights too).
#pragma unroll
    for (int s = 0; s < WF_STAGES - 1; ++s)
        if (s < mine) load_w(s, kc0 + s);
    pdl_wait();
#pragma unroll
    for (int s = 0; s < WF_STAGES - 1; ++s) {
        if (s < mine) load_x(s, kc0 + s);
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    float c[MT][4];
#pragma unroll
    for (int j = 0; j < MT; ++j) c[j][0] = c[j][1] = c[j][2] = c[j][3] = 0.f;
    for (int i = 0; i < mine; ++i) {
        wf_wait_pending<WF_STAGES - 2>();
        __syncthreads();  // stage i landed for every thread; the slot of stage i - 1 is free
        if (i + WF_STAGES - 1 < mine) {
            load_w((i + WF_STAGES - 1) % WF_STAGES, kc0 + i + WF_STAGES - 1);
            load_x((i + WF_STAGES - 1) % WF_STAGES, kc0 + i + WF_STAGES - 1);
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
        const unsigned char* ws = ring + (i % WF_STAGES) * SLOT;
        const unsigned char* xs = ws + W_BYTES;
        // The thread's 32 codes of rows ra and rb as f16 pairs, once for every group: word
        // e of piece h holds codes 16h + 4e..+3, the MMA's a0 / a2 (row ra) and a1 / a3 (rb).
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
            if constexpr (XBF) {
#pragma unroll
                for (int q = 0; q < 16; ++q) xw[q] = bf16x2_to_f16x2(xw[q]);
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
    // The partial tile P[row][token] over the ring (every copy has landed and been read).
    wf_wait_pending<0>();
    __syncthreads();
    float* part = reinterpret_cast<float*>(ring);
#pragma unroll
    for (int j = 0; j < MT; ++j) {
        const int m0 = 8 * j + 2 * t;
        part[ra * PSTRIDE + m0] = c[j][0];
        part[ra * PSTRIDE + m0 + 1] = c[j][1];
        part[rb * PSTRIDE + m0] = c[j][2];
        part[rb * PSTRIDE + m0 + 1] = c[j][3];
    }
    cluster_sync();  // every block's partial tile is in place (a lone block: __syncthreads)
    // Block r sums its share of the rows over the cluster's blocks, in rank order.
    const int r = (int)cluster_rank();
    if constexpr (SWIGLU) {
        // 16-row groups: gate rows 16q..16q + 7, up rows 16q + 8..15 of act column
        // n0 / 2 + 8q + c; group q's outputs belong to block q * splits / 8.
        const int groups = 8 / splits, q0 = r * groups, inter = N / 2;
        for (int i = tid; i < groups * 8 * M8; i += WF_THREADS) {
            const int col = i & 7, q = q0 + (i >> 3) % groups, m = (i >> 3) / groups;
            if (m >= M) continue;
            float gs = 0.f, us = 0.f;
            for (int s = 0; s < splits; ++s) {
                const float* ps = peer(part, (unsigned)s);
                gs += ps[(16 * q + col) * PSTRIDE + m];
                us += ps[(16 * q + 8 + col) * PSTRIDE + m];
            }
            wf_store_act(y, m, inter, n0 / 2 + 8 * q + col, gs, us);
        }
    } else {
        const int rows = WF_ROWS / splits, r0 = r * rows;
        for (int i = tid; i < rows * M8; i += WF_THREADS) {
            const int lr = r0 + i % rows, m = i / rows;
            if (m >= M) continue;
            float s_ = 0.f;
            for (int s = 0; s < splits; ++s) s_ += peer(part, (unsigned)s)[lr * PSTRIDE + m];
            wf_store(y, m, N, n0 + lr, s_);
        }
    }
    cluster_sync();  // no block leaves while a peer still reads its shared memory
}

// Entry points (two groups of 8 tokens: up to 16 rows) by x type and output.
#define WF_ENTRY(NAME, MT, XBF, SWIGLU, XT, OUT)                                                  \
    extern "C" __global__ void __launch_bounds__(WF_THREADS, 2)                                  \
        NAME(const XT* __restrict__ x, const unsigned char* __restrict__ w,                       \
             const float* __restrict__ scale_inv, OUT* __restrict__ y, int M, int N, int K, int R, \
             int il, int splits) {                                                                \
        wide_fp8<MT, XBF, SWIGLU>(reinterpret_cast<const unsigned char*>(x), w, scale_inv, y, M, N, \
                                  K, R, il, splits);                                              \
    }
WF_ENTRY(wide_fp8, 2, false, false, __half, float)
WF_ENTRY(wide_fp8_bx, 2, true, false, __nv_bfloat16, float)
WF_ENTRY(wide_fp8_swiglu, 2, false, true, __half, __half)
