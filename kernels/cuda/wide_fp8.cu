// FP8 decode GEMM for 9-64 token rows: y[m, n] = sum_k x[m, k] w[n, k] with e4m3 weights
// and block scales (fp8_scale_row), x as f16 or bf16, f32 out, or gate|up interleaved by 8
// rows with SwiGLU into an f16 act (the `_xh` kernels' rounding). Four forms: 16 token rows
// (9-16), 32 (17-32), 48 (33-48) and 64 (49-64); rows past M are zero-filled.
//
// Why not the skinny kernels: they hold 16 weight rows per tile and read the tile's x
// from L2 at every stage, so x traffic per weight byte is M/16, twice the weights' own at
// 32 rows. Here a block holds 64 or 128 weight rows and stages x once per stage in shared
// memory for all of them. Over Qwen3-8B's projections the first form (128 rows) took 35 %
// and 18 % less than cuBLAS on the bf16 copies at 16 and 32 rows (engine/PERF-LOG.md step
// 65).
//
// The weights come in their own layout (ops::wide_tiles, a copy made at load): a stage is
// 128 k of a tile's 64 rows, 8 KB in one contiguous run, which thread 0 moves with one bulk
// copy per tile completing on the stage's mbarrier into a ring of STAGES. Inside the run,
// row r's 16-byte unit p holds the row's unit p ^ (r & 7), so each fragment read hits every
// bank once per phase; and a row's 128 codes are in the order the MMAs take them (thread t
// of a quad reads its 32 with two 16-byte loads). 64-row tiles read that way beat 128-row
// blocks reading row-major matrices by per-thread cp.async by 8.5 % / 11.5 % over the 144
// projections at 16 / 32 rows (step 73).
//
// The MMAs are the warpgroup's (wgmma): each warp converts its 16 rows' codes of a stage to
// f16 in registers (the A operand), and the tensor cores read x, the B operand, from the
// ring themselves, once per warpgroup: 2 bytes of x per weight byte at 64 tokens. With
// mma.sync every warp read the stage's whole x into registers (twice that, and twice the
// MMAs of 32 tokens on Hopper's slower warp-level path), which made the 64-row form cost
// 41 % more than the 32-row one over the same weight bytes (engine/PERF-LOG.md step 78).
// x reaches the ring through registers (fetched a stage before it is stored, stored a stage
// before it is read): the MMAs read it through the async proxy, so its writes need a proxy
// fence, and with cp.async copies of later stages still in flight that fence drained the
// ring at every stage (step 79). Forms past 32 tokens take 128-row blocks (two warpgroups,
// two bulk copies a stage), so that a stage's x serves twice the weights from L2.
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
__device__ __forceinline__ void wf_store_act(__half* act, int m, int inter, int col, float g,
                                             float u) {
    const __nv_bfloat16 b = __float2bfloat16(g / (1.0f + expf(-g)) * u);
    const unsigned h = bf16x2_to_f16x2(*reinterpret_cast<const unsigned short*>(&b));
    reinterpret_cast<unsigned short*>(act)[(size_t)m * inter + col] = (unsigned short)h;
}

// The warpgroup MMA: d (64 weight rows x NP tokens, f32) = A (64 x 16 f16 in registers, each
// warp's 16 rows in mma.sync's m16n8k16 A layout) x B (16 x NP f16 in shared memory, K-major
// core matrices without swizzle, through the descriptor b) + (acc ? d : 0); one overload per
// token count. d[4j..4j+3]: rows g and g + 8 of the warp, tokens 8j + 2t and 8j + 2t + 1.
// wg_wait holds d as operands: to the compiler the MMA's asm wrote d when it was issued, so
// without them it may read d before the hardware is done (the lab's wgmma probe saw this).
#define WG_D0(d) "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), \
        "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
#define WG_D1(d) "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), \
        "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
#define WG_D2(d) "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), \
        "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23])
#define WG_D3(d) "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), \
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define WG_SETP(i) "{\n.reg .pred p;\nsetp.ne.b32 p, %" #i ", 0;\n"
__device__ __forceinline__ void wg_mma(float (&d)[8], const unsigned (&a)[4], unsigned long long b,
                                       int acc) {
    asm volatile(WG_SETP(13) "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9,%10,%11}, %12, p, 1, 1, 0;\n}\n"
                 : WG_D0(d)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(acc));
}
__device__ __forceinline__ void wg_mma(float (&d)[16], const unsigned (&a)[4], unsigned long long b,
                                       int acc) {
    asm volatile(WG_SETP(21) "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, "
                 "{%16,%17,%18,%19}, %20, p, 1, 1, 0;\n}\n"
                 : WG_D0(d), WG_D1(d)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(acc));
}
__device__ __forceinline__ void wg_mma(float (&d)[24], const unsigned (&a)[4], unsigned long long b,
                                       int acc) {
    asm volatile(WG_SETP(29) "wgmma.mma_async.sync.aligned.m64n48k16.f32.f16.f16 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
                 "%16,%17,%18,%19,%20,%21,%22,%23}, {%24,%25,%26,%27}, %28, p, 1, 1, 0;\n}\n"
                 : WG_D0(d), WG_D1(d), WG_D2(d)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(acc));
}
__device__ __forceinline__ void wg_mma(float (&d)[32], const unsigned (&a)[4], unsigned long long b,
                                       int acc) {
    asm volatile(WG_SETP(37) "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
                 "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, "
                 "{%32,%33,%34,%35}, %36, p, 1, 1, 0;\n}\n"
                 : WG_D0(d), WG_D1(d), WG_D2(d), WG_D3(d)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(acc));
}
#define WG_WAIT "wgmma.wait_group.sync.aligned 0;"
__device__ __forceinline__ void wg_wait(float (&d)[8]) {
    asm volatile(WG_WAIT : WG_D0(d)::"memory");
}
__device__ __forceinline__ void wg_wait(float (&d)[16]) {
    asm volatile(WG_WAIT : WG_D0(d), WG_D1(d)::"memory");
}
__device__ __forceinline__ void wg_wait(float (&d)[24]) {
    asm volatile(WG_WAIT : WG_D0(d), WG_D1(d), WG_D2(d)::"memory");
}
__device__ __forceinline__ void wg_wait(float (&d)[32]) {
    asm volatile(WG_WAIT : WG_D0(d), WG_D1(d), WG_D2(d), WG_D3(d)::"memory");
}
// The A fragments of a stage's MMAs, after wg_wait: until then the hardware may still read
// them, so the compiler must not give their registers to anything else.
__device__ __forceinline__ void wg_keep(unsigned (&a)[8][4]) {
#pragma unroll
    for (int s = 0; s < 8; s += 2)
        asm volatile(""
                     : "+r"(a[s][0]), "+r"(a[s][1]), "+r"(a[s][2]), "+r"(a[s][3]),
                       "+r"(a[s + 1][0]), "+r"(a[s + 1][1]), "+r"(a[s + 1][2]), "+r"(a[s + 1][3]));
}
// A shared-memory matrix descriptor without swizzle: start, leading byte offset (between the
// two core matrices along k) and stride byte offset (between core matrices along n), each in
// 16-byte units.
__device__ __forceinline__ unsigned long long wg_desc(const void* p, unsigned lbo, unsigned sbo) {
    return (unsigned long long)((smem_addr(p) & 0x3ffff) >> 4) |
           (unsigned long long)((lbo & 0x3ffff) >> 4) << 16 |
           (unsigned long long)((sbo & 0x3ffff) >> 4) << 32;
}

// NP: token rows staged (16, 32, 48 or 64; a batch of fewer is zero-filled). WGS: the block's
// warpgroups, each one 64-row tile of the layout (the block's tiles lie one after another in
// a stage, so block row r is at r x 128 bytes); STAGES: the ring's depth. XBF: x is bf16 (o_proj
// reads the attention's output), converted to f16 in shared memory by the thread that copied
// it; else f16 as the `_f16` norms and the SwiGLU act write it. SWIGLU: splits must be 1.
template <int NP, int WGS, int STAGES, bool XBF, bool SWIGLU, class Out>
__device__ __forceinline__ void wide_fp8(const unsigned char* __restrict__ x,
                                         const unsigned char* __restrict__ w,
                                         const float* __restrict__ scale_inv, Out* __restrict__ y,
                                         int M, int N, int K, int R, int il, int splits,
                                         float* __restrict__ clear, int clear_n4) {
    constexpr int THREADS = 128 * WGS, TR = WF_ROWS * WGS, TILE_BYTES = WF_ROWS * 128;
    constexpr int W_BYTES = TR * 128, X_BYTES = NP * 256, SLOT = W_BYTES + X_BYTES;
    // 16-byte pieces of a stage's x per thread.
    constexpr int PIECES = NP * 16 / THREADS;
    static_assert(NP % 16 == 0 && NP <= 64 && PIECES * THREADS == NP * 16, "token rows");
    extern __shared__ __align__(128) unsigned char ring[];
    __shared__ __align__(8) unsigned long long full[STAGES];
    pdl_trigger();
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int nch = K / 128, per = (nch + splits - 1) / splits;
    const int tile = blockIdx.x / splits, split = blockIdx.x % splits;
    const int n0 = tile * TR, kc0 = split * per, mine = max(0, min(nch, kc0 + per) - kc0);
    // The block's tiles of the layout, each with its stages one after another (ops::wide_tiles).
    const unsigned char* wt = w + (size_t)tile * WGS * nch * TILE_BYTES;
    const int sc = (K + 127) / 128;
    // The thread's weight rows (its warp's 16 of the warpgroup's MMA): fa and fa + 8.
    const int fa = 16 * warp + g, fb = fa + 8;
    const float* sra = scale_inv + (size_t)fp8_scale_row(n0 + fa, il, R) * sc + kc0;
    const float* srb = scale_inv + (size_t)fp8_scale_row(n0 + fb, il, R) * sc + kc0;
    const unsigned long long policy = wf_ring_init<STAGES>(full);

    // Thread 0 only: the stage's weights, one bulk copy per tile onto its barrier.
    auto load_w = [&](int slot, int kc) {
        mbar_arrive_tx(&full[slot], W_BYTES);
#pragma unroll
        for (int q = 0; q < WGS; ++q)
            bulk_load(ring + slot * SLOT + q * TILE_BYTES, wt + ((size_t)q * nch + kc) * TILE_BYTES,
                      TILE_BYTES, &full[slot], policy);
    };
    // A stage's x is NP x 16 pieces of 16 bytes (token m, k 8u..8u+7), piece (m, u) at
    // (u NP + m) x 16 in the slot: the B operand's core matrices (8 tokens x 8 k), the MMA of
    // k 16s..16s+15 starting at u = 2s. Piece q of this thread: a warp takes 16 tokens x 2
    // units (a 32-byte sector of each token's row), each quarter 8 tokens of one unit (every
    // bank once); the warps of a round take the 8 unit pairs, rounds the token groups.
    auto piece = [&](int q) {
        const int i = tid + q * THREADS, j = i >> 5;
        const int m = 16 * (j >> 3) + 8 * ((i >> 4) & 1) + (i & 7);
        const int u = 2 * (j & 7) + ((i >> 3) & 1);
        return make_int2(m, u);
    };
    // x through registers (the header says why): xr holds the stage fetched and not yet stored.
    uint4 xr[PIECES];
    auto fetch_x = [&](int kc) {
#pragma unroll
        for (int q = 0; q < PIECES; ++q) {
            const int2 p = piece(q);
            const unsigned char* src = x + (size_t)p.x * 2 * K + (size_t)kc * 256 + p.y * 16;
            xr[q] = p.x < M ? *reinterpret_cast<const uint4*>(src) : make_uint4(0, 0, 0, 0);
        }
    };
    auto store_x = [&](int slot) {
        unsigned char* xs = ring + slot * SLOT + W_BYTES;
#pragma unroll
        for (int q = 0; q < PIECES; ++q) {
            const int2 p = piece(q);
            uint4 v = xr[q];
            if constexpr (XBF) {
                v.x = bf16x2_to_f16x2(v.x);
                v.y = bf16x2_to_f16x2(v.y);
                v.z = bf16x2_to_f16x2(v.z);
                v.w = bf16x2_to_f16x2(v.w);
            }
            *reinterpret_cast<uint4*>(xs + (p.y * NP + p.x) * 16) = v;
        }
    };

    // The weights are constants: their first stages stream before the wait on the kernel
    // that writes x.
    if (tid == 0) {
#pragma unroll
        for (int s = 0; s < STAGES - 1; ++s)
            if (s < mine) load_w(s, kc0 + s);
    }
    pdl_wait();
    // The next split wide GEMM's y, zeroed here instead of by a memset in front of it.
    wf_clear(clear, clear_n4);
    // Stages 0..STAGES - 3 of x stored, STAGES - 2 fetched.
#pragma unroll
    for (int s = 0; s < STAGES - 2; ++s) {
        if (s < mine) {
            fetch_x(kc0 + s);
            store_x(s);
        }
    }
    if (STAGES - 2 < mine) fetch_x(kc0 + STAGES - 2);
    float c[NP / 2], d[NP / 2];
#pragma unroll
    for (int v = 0; v < NP / 2; ++v) c[v] = d[v] = 0.f;
    for (int i = 0; i < mine; ++i) {
        const int slot = i % STAGES;
        // x stored by the generic proxy; the MMAs read it through the async proxy.
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        mbar_wait(&full[slot], (i / STAGES) & 1);
        __syncthreads();  // stage i landed for every thread; the slot of stage i - 1 is free
        if (i + STAGES - 2 < mine) {
            // Into the slot of stage i - 2, read by every thread before this barrier.
            store_x((i + STAGES - 2) % STAGES);
            if (i + STAGES - 1 < mine) fetch_x(kc0 + i + STAGES - 1);
        }
        if (tid == 0 && i + STAGES - 1 < mine)
            load_w((i + STAGES - 1) % STAGES, kc0 + i + STAGES - 1);
        const unsigned char* ws = ring + slot * SLOT;
        const unsigned char* xs = ws + W_BYTES;
        // The thread's 32 codes of rows fa and fb as f16 pairs: word e of unit h holds, per
        // the layout's order in a row (ops::wide_tiles), the codes of MMA s = 4h + e at k
        // 2t, 2t + 1 (its a0 / a1) and 2t + 8, 2t + 9 (a2 / a3).
        unsigned a[8][4];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const unsigned char* pa = ws + fa * 128 + wf_w_unit(fa, 2 * t + h) * 16;
            const unsigned char* pb = ws + fb * 128 + wf_w_unit(fb, 2 * t + h) * 16;
            const uint4 wa = *reinterpret_cast<const uint4*>(pa);
            const uint4 wb = *reinterpret_cast<const uint4*>(pb);
            const unsigned aw[4] = {wa.x, wa.y, wa.z, wa.w}, bw[4] = {wb.x, wb.y, wb.z, wb.w};
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                a[4 * h + e][0] = fp8x2_to_f16x2(aw[e] & 0xffff);
                a[4 * h + e][1] = fp8x2_to_f16x2(bw[e] & 0xffff);
                a[4 * h + e][2] = fp8x2_to_f16x2(aw[e] >> 16);
                a[4 * h + e][3] = fp8x2_to_f16x2(bw[e] >> 16);
            }
        }
        const float sa = __ldg(sra + i), sb = __ldg(srb + i);
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int s = 0; s < 8; ++s)
            wg_mma(d, a[s], wg_desc(xs + 2 * s * NP * 16, NP * 16, 128), s);
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        wg_wait(d);
        // The stage's sums in its scales (one per row and 128 k).
#pragma unroll
        for (int j = 0; j < NP / 8; ++j) {
            c[4 * j] = fmaf(sa, d[4 * j], c[4 * j]);
            c[4 * j + 1] = fmaf(sa, d[4 * j + 1], c[4 * j + 1]);
            c[4 * j + 2] = fmaf(sb, d[4 * j + 2], c[4 * j + 2]);
            c[4 * j + 3] = fmaf(sb, d[4 * j + 3], c[4 * j + 3]);
        }
        wg_keep(a);
    }
    // c[4j..4j+3]: rows fa (0, 1) and fb (2, 3), tokens 8j + 2t and 8j + 2t + 1. Every copy
    // this block issued has landed (stage mine - 1 was waited for), so it may leave.
#pragma unroll
    for (int j = 0; j < NP / 8; ++j) {
        const int m0 = 8 * j + 2 * t;
        if constexpr (SWIGLU) {
            // Rows fa and fb are gate and up of one act column: the warp's 16 rows start at
            // n0 + fa - g and hold 8 columns.
            const int inter = N / 2, col = (n0 + fa - g) / 2 + g;
            if (m0 < M) wf_store_act(y, m0, inter, col, c[4 * j], c[4 * j + 2]);
            if (m0 + 1 < M) wf_store_act(y, m0 + 1, inter, col, c[4 * j + 1], c[4 * j + 3]);
        } else {
            const bool add = splits > 1;
            float* y0 = y + (size_t)m0 * N + n0;
            if (m0 < M) {
                wf_out(y0 + fa, c[4 * j], add);
                wf_out(y0 + fb, c[4 * j + 2], add);
            }
            if (m0 + 1 < M) {
                wf_out(y0 + N + fa, c[4 * j + 1], add);
                wf_out(y0 + N + fb, c[4 * j + 3], add);
            }
        }
    }
}

// Entry points by token rows (the 16-, 32-, 48- and 64-row forms), x type and output, each
// with its block shape (ops::wide's FORMS, which launches them, holds the same numbers).
// BLOCKS: resident blocks per SM, as the form's ring allows.
#define WF_ENTRY(NAME, NP, WGS, STAGES, XBF, SWIGLU, XT, OUT, BLOCKS)                             \
    extern "C" __global__ void __launch_bounds__(128 * WGS, BLOCKS)                               \
        NAME(const XT* __restrict__ x, const unsigned char* __restrict__ w,                       \
             const float* __restrict__ scale_inv, OUT* __restrict__ y, int M, int N, int K, int R, \
             int il, int splits, float* __restrict__ clear, int clear_n4) {                       \
        wide_fp8<NP, WGS, STAGES, XBF, SWIGLU>(reinterpret_cast<const unsigned char*>(x), w,       \
                                               scale_inv, y, M, N, K, R, il, splits, clear,        \
                                               clear_n4);                                          \
    }
WF_ENTRY(wide_fp8_m16, 16, 1, 4, false, false, __half, float, 4)
WF_ENTRY(wide_fp8_bx_m16, 16, 1, 4, true, false, __nv_bfloat16, float, 4)
WF_ENTRY(wide_fp8_swiglu_m16, 16, 1, 4, false, true, __half, __half, 4)
WF_ENTRY(wide_fp8_m32, 32, 1, 4, false, false, __half, float, 3)
WF_ENTRY(wide_fp8_bx_m32, 32, 1, 4, true, false, __nv_bfloat16, float, 3)
WF_ENTRY(wide_fp8_swiglu_m32, 32, 1, 4, false, true, __half, __half, 3)
WF_ENTRY(wide_fp8_m48, 48, 2, 6, false, false, __half, float, 1)
WF_ENTRY(wide_fp8_bx_m48, 48, 2, 6, true, false, __nv_bfloat16, float, 1)
WF_ENTRY(wide_fp8_swiglu_m48, 48, 2, 6, false, true, __half, __half, 1)
WF_ENTRY(wide_fp8_m64, 64, 2, 6, false, false, __half, float, 1)
WF_ENTRY(wide_fp8_bx_m64, 64, 2, 6, true, false, __nv_bfloat16, float, 1)
WF_ENTRY(wide_fp8_swiglu_m64, 64, 2, 6, false, true, __half, __half, 1)
