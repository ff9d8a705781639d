// FP8 decode GEMM for 9-64 token rows: y[m, n] = sum_k x[m, k] w[n, k] with e4m3 weights
// and block scales (fp8_scale_row), x as f16 or bf16, f32 out, or gate|up interleaved by 8
// rows with SwiGLU into an f16 act (the `_xh` kernels' rounding). Four forms: 16 token rows
// (9-16), 32 (17-32), 48 (33-48) and 64 (49-64); rows past M are zero-filled.
//
// Why not the skinny kernels: they hold 16 weight rows per tile and read the tile's x
// from L2 at every stage, so x traffic per weight byte is M/16, twice the weights' own at
// 32 rows. Here a block holds 64 weight rows (4 warps of 16) and stages x once per stage
// in shared memory for all of them: M/64. Over Qwen3-8B's projections the first form (128
// rows) took 35 % and 18 % less than cuBLAS on the bf16 copies at 16 and 32 rows
// (engine/PERF-LOG.md step 65).
//
// The weights come in their own layout (ops::wide_tiles, a copy made at load): a stage is
// 128 k of a block's 64 rows, 8 KB in one contiguous run, which thread 0 moves with one bulk
// copy completing on the stage's mbarrier, while every thread copies the stage's x (the same
// k of every token row) with cp.async into a ring of STAGES. Inside the run, row r's
// 16-byte unit p holds the row's unit p ^ (r & 7), so each fragment read hits every bank once
// per phase. 64-row blocks read that way beat 128-row blocks reading row-major matrices by
// per-thread cp.async by 8.5 % / 11.5 % over the 144 projections at 16 / 32 rows (step 73):
// one copy instruction per stage, and three or four blocks per SM spread a short grid's
// tiles over the SMs more evenly. The MMAs are the skinny kernels' (thread t of a quad takes
// 32 contiguous codes of its rows g and g + 8, and the same k of token g of each 8-token
// group), the codes converted to f16 once per stage for all the groups.
//
// At 64 token rows that block loses to cuBLAS on the bf16 copies: per weight byte it reads
// 8 bytes of x from shared memory (each warp's 16 rows against all 64 tokens) and 2 from L2
// (a stage's x is twice its weights). The 64-row form's block holds 128 weight rows, two
// tiles of the layout (two bulk copies a stage), as 4 warps of two 16-row fragments: each x
// fragment read feeds both, and a stage's x serves twice the weights, halving both; 3
// stages, so that two blocks fit an SM (engine/PERF-LOG.md step 76). The 48-row form is the
// same block over 6 token groups: the decode ladder's 48 reads and multiplies a quarter
// less x than on the 64-row form (step 80).
//
// Grids short of SMs split K (the launcher picks the most blocks per tile that the SMs hold
// at once): the `splits` blocks of a tile each take an equal run of stages and add their
// partial sums into y with atomics (red.global.add.f32), so y must be zero before the
// launch (a tile of one block stores instead). A memset in front would cost a graph node
// that PDL cannot overlap (~1.1 us, 108 of them in a Qwen3-8B step), so the wide GEMM before
// it in the stream zeroes it: `clear` (clear_n4 float4s), zeroed by every block after its
// pdl_wait, when every kernel before this one (the readers of that buffer's last sums among
// them) has finished, and before the next kernel's pdl_wait returns. The launcher memsets
// only where no such GEMM came first (ops::WideZeros). The order of the split adds varies
// from run to run, so the f32 sums are not the same bits at every run: the price of the
// fastest form (vLLM and SGLang are not bit-deterministic at these batches either). The
// deterministic forms lost: the blocks of a tile as a thread block cluster summing through
// distributed shared memory took 1.4-1.9x the atomics' time on the split shapes
// (engine/PERF-LOG.md step 64), and partials in scratch summed in split order by the
// tile's last block ~1.27x over Qwen3-8B's 144 projections (step 65).
//
// SwiGLU cannot follow a split-K sum inside the kernel (no block holds a whole sum), so the
// SwiGLU form never splits: with gate|up interleaved by 8 rows a thread holds gate row g
// and up row g + 8 of the same act column and applies SwiGLU in registers. Qwen3-8B's
// gate|up has 384 tiles, several blocks per SM. At 16 rows that was the fastest form with
// 128-row blocks (31.7 us, against 35.2 for the plain GEMM at 2 splits and 37.5 with the
// swiglu kernel after it); at 32 rows the split GEMM and the swiglu kernel took 42.5 against
// 43.9 alone, but in a step they add y's zeroing (a memset, which the GEMM cannot overlap
// with PDL), a launch, and a bf16 act for down to convert: one form for both (step 65).
#define WF_ROWS 64

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

// The ring's barriers, one per stage, for thread 0's bulk copies (every thread calls it;
// it ends in a __syncthreads), and the L2 policy that lets the streamed weights go first.
template <int STAGES>
__device__ __forceinline__ unsigned long long wf_ring_init(unsigned long long* full) {
    unsigned long long policy;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) mbar_init(&full[s], 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    return policy;
}

// `clear` (n4 float4s) zeroed by the whole grid: the next split GEMM's y (header). Only
// after pdl_wait, when the buffer's last readers have finished.
__device__ __forceinline__ void wf_clear(float* __restrict__ clear, int n4) {
    if (clear == nullptr) return;
    float4* c4 = reinterpret_cast<float4*>(clear);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x)
        c4[i] = make_float4(0.f, 0.f, 0.f, 0.f);
}

// One output of a split: stored where the tile has one block, else added into the zeroed y.
__device__ __forceinline__ void wf_out(float* p, float v, bool add) {
    if (add)
        atomicAdd(p, v);  // result unused: compiles to red.global.add.f32
    else
        *p = v;
}
// The SwiGLU of one (gate, up) pair into act column `col` as f16 (a bf16-rounded value
// taken to f16, as reduce_store_swiglu_h).
__device__ __forceinline__ void wf_store_act(__half* act, int m, int inter, int col, float g, float u) {
    const __nv_bfloat16 b = __float2bfloat16(g / (1.0f + expf(-g)) * u);
    const unsigned h = bf16x2_to_f16x2(*reinterpret_cast<const unsigned short*>(&b));
    reinterpret_cast<unsigned short*>(act)[(size_t)m * inter + col] = (unsigned short)h;
}

// The thread's 32 codes of rows fa and fb (fa + 8) of a stage's run ws (thread t of a quad
// reads units 2t and 2t + 1 of each) as f16 pairs: word e of unit h holds codes
// 16h + 4e..+3, the MMA's a0 / a2 (row fa) and a1 / a3 (row fb) in af[h][e].
__device__ __forceinline__ void wf_fragment(const unsigned char* ws, int fa, int fb, int t,
                                            unsigned (&af)[2][4][4]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const unsigned char* pa = ws + fa * 128 + wf_w_unit(fa, 2 * t + h) * 16;
        const unsigned char* pb = ws + fb * 128 + wf_w_unit(fb, 2 * t + h) * 16;
        const uint4 a = *reinterpret_cast<const uint4*>(pa);
        const uint4 b = *reinterpret_cast<const uint4*>(pb);
        const unsigned aw[4] = {a.x, a.y, a.z, a.w}, bw[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            af[h][e][0] = fp8x2_to_f16x2(aw[e] & 0xffff);
            af[h][e][1] = fp8x2_to_f16x2(bw[e] & 0xffff);
            af[h][e][2] = fp8x2_to_f16x2(aw[e] >> 16);
            af[h][e][3] = fp8x2_to_f16x2(bw[e] >> 16);
        }
    }
}

// MT: groups of 8 token rows (2: up to 16 rows, 4: up to 32, 8: up to 64). WARPS, RF,
// STAGES: the block's warps, each taking RF fragments of 16 weight rows (contiguous: the
// block holds 16 WARPS RF rows, as WF_ROWS-row tiles of the wide layout one after another
// in shared memory), and its ring depth. XBF: x is bf16 (o_proj reads the attention's
// output), converted to f16 per word as TileFp8 does; else f16 as the `_f16` norms and the
// SwiGLU act write it. SWIGLU: splits must be 1.
template <int MT, int WARPS, int RF, int STAGES, bool XBF, bool SWIGLU, class Out>
__device__ __forceinline__ void wide_fp8(const unsigned char* __restrict__ x,
                                          const unsigned char* __restrict__ w,
                                          const float* __restrict__ scale_inv, Out* __restrict__ y,
                                         int M, int N, int K, int R, int il, int splits,
                                         float* __restrict__ clear, int clear_n4) {
    constexpr int THREADS = 32 * WARPS, TR = 16 * WARPS * RF, SUB = TR / WF_ROWS;
    constexpr int M8 = MT * 8, TILE_BYTES = WF_ROWS * 128, W_BYTES = TR * 128, X_BYTES = M8 * 256;
    constexpr int SLOT = W_BYTES + X_BYTES;
    static_assert(TR % WF_ROWS == 0, "a block takes whole tiles of the layout");
    extern __shared__ __align__(128) unsigned char ring[];
    __shared__ __align__(8) unsigned long long full[STAGES];
    pdl_trigger();
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int nch = K / 128, per = (nch + splits - 1) / splits;
    const int tile = blockIdx.x / splits, split = blockIdx.x % splits;
    const int n0 = tile * TR, kc0 = split * per, mine = max(0, min(nch, kc0 + per) - kc0);
    // The block's tiles of the layout, each with its stages one after another (ops::wide_tiles).
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

    // Thread 0 only: the stage's weights, one bulk copy per tile onto its barrier.
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
        // Each fragment's codes as f16 pairs, once for every group (wf_fragment).
        unsigned af[RF][2][4][4];
        float sa[RF], sb[RF];
#pragma unroll
        for (int f = 0; f < RF; ++f) {
            const int fa = ra[f], fb = fa + 8;
            wf_fragment(ws, fa, fb, t, af[f]);
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

// Entry points by token rows (the 16-, 32-, 48- and 64-row forms), x type and output, each with
// its block shape (ops::wide's FORMS, which launches them, holds the same numbers).
// BLOCKS: resident blocks per SM, as the form's ring allows.
#define WF_ENTRY(NAME, MT, WARPS, RF, STAGES, XBF, SWIGLU, XT, OUT, BLOCKS)                       \
    extern "C" __global__ void __launch_bounds__(32 * WARPS, BLOCKS)                              \
        NAME(const XT* __restrict__ x, const unsigned char* __restrict__ w,                       \
             const float* __restrict__ scale_inv, OUT* __restrict__ y, int M, int N, int K, int R, \
             int il, int splits, float* __restrict__ clear, int clear_n4) {                       \
        wide_fp8<MT, WARPS, RF, STAGES, XBF, SWIGLU>(reinterpret_cast<const unsigned char*>(x), w, \
                                                     scale_inv, y, M, N, K, R, il, splits, clear,  \
                                                     clear_n4);                                    \
    }
WF_ENTRY(wide_fp8_m16, 2, 4, 1, 4, false, false, __half, float, 4)
WF_ENTRY(wide_fp8_bx_m16, 2, 4, 1, 4, true, false, __nv_bfloat16, float, 4)
WF_ENTRY(wide_fp8_swiglu_m16, 2, 4, 1, 4, false, true, __half, __half, 4)
WF_ENTRY(wide_fp8_m32, 4, 4, 1, 4, false, false, __half, float, 3)
WF_ENTRY(wide_fp8_bx_m32, 4, 4, 1, 4, true, false, __nv_bfloat16, float, 3)
WF_ENTRY(wide_fp8_swiglu_m32, 4, 4, 1, 4, false, true, __half, __half, 3)
WF_ENTRY(wide_fp8_m48, 6, 4, 2, 3, false, false, __half, float, 2)
WF_ENTRY(wide_fp8_bx_m48, 6, 4, 2, 3, true, false, __nv_bfloat16, float, 2)
WF_ENTRY(wide_fp8_swiglu_m48, 6, 4, 2, 3, false, true, __half, __half, 2)
WF_ENTRY(wide_fp8_m64, 8, 4, 2, 3, false, false, __half, float, 2)
WF_ENTRY(wide_fp8_bx_m64, 8, 4, 2, 3, true, false, __nv_bfloat16, float, 2)
WF_ENTRY(wide_fp8_swiglu_m64, 8, 4, 2, 3, false, true, __half, __half, 2)
