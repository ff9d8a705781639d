// Lab kernels (bin/wide_wgmma.rs times them against the production wide FP8 GEMM): the
// wide FP8 GEMM on the warpgroup MMA as 8b64780 had it (engine/PERF-LOG.md step 79: correct,
// slower than mma.sync at 16-64 token rows), and a form with two stages of MMAs in flight.
// PIPE 1 is 8b64780's loop: each stage one dependent chain per warpgroup (A loads and
// conversions, eight MMAs on one accumulator, a full wait, the scale FMAs). With the scale
// applied after each stage two stages cannot be in flight: ptxas serializes MMAs whose
// accumulators other instructions read before the pipeline ends (C7514), which a
// two-accumulator form hit. PIPE 2 folds the scales into the A fragments instead (f16 code x
// f16 scale: other numerics than production's f32 scale after an exact f16 sum, so its error
// is printed beside the others) and keeps one accumulator for all stages, issuing a stage's
// MMAs before waiting for the last one's: one stage's conversions run under the other's
// MMAs. The ring's refill then trails by one more stage, since a slot is read until the
// wait after the next stage. f16 x, f32 y, K split by atomics as production; the weights in
// 8b64780's layout (a row's 128 codes of a stage in the MMAs' order: the lab's
// `mma_tiles`). Compiled behind the production wide_fp8.cu (its ring, clearing and output
// helpers).

// The warpgroup MMA: d (64 weight rows x NP tokens, f32) = A (64 x 16 f16 in registers, each
// warp's 16 rows in mma.sync's m16n8k16 A layout) x B (16 x NP f16 in shared memory, K-major
// core matrices without swizzle, through the descriptor b) + (acc ? d : 0); one overload per
// token count (16, 32, 64). d[4j..4j+3]: rows g and g + 8 of the warp, tokens 8j + 2t and
// 8j + 2t + 1.
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
__device__ __forceinline__ void wg_wait(float (&d)[32]) {
    asm volatile(WG_WAIT : WG_D0(d), WG_D1(d), WG_D2(d), WG_D3(d)::"memory");
}
// The A fragments of a stage's MMAs, after wg_wait: until then the hardware may still read
// them, so the compiler must not give their registers to anything else.
__device__ __forceinline__ void wg_keep(unsigned (&a)[2][4][4]) {
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int e = 0; e < 4; e += 2)
            asm volatile(""
                         : "+r"(a[h][e][0]), "+r"(a[h][e][1]), "+r"(a[h][e][2]), "+r"(a[h][e][3]),
                           "+r"(a[h][e + 1][0]), "+r"(a[h][e + 1][1]), "+r"(a[h][e + 1][2]),
                           "+r"(a[h][e + 1][3]));
}
// A shared-memory matrix descriptor without swizzle: start, leading byte offset (between the
// two core matrices along k) and stride byte offset (between core matrices along n), each in
// 16-byte units.
__device__ __forceinline__ unsigned long long wg_desc(const void* p, unsigned lbo, unsigned sbo) {
    return (unsigned long long)((smem_addr(p) & 0x3ffff) >> 4) |
           (unsigned long long)((lbo & 0x3ffff) >> 4) << 16 |
           (unsigned long long)((sbo & 0x3ffff) >> 4) << 32;
}

__device__ __forceinline__ unsigned f32_to_f16x2(float v) {
    const __half2 h = __float2half2_rn(v);
    return *reinterpret_cast<const unsigned*>(&h);
}
__device__ __forceinline__ unsigned mul_f16x2(unsigned a, unsigned b) {
    unsigned r;
    asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}

// The stage's sums in its scales (one per row and 128 k).
template <int NP>
__device__ __forceinline__ void wgw_scale(float (&c)[NP / 2], const float (&d)[NP / 2], float sa,
                                          float sb) {
#pragma unroll
    for (int j = 0; j < NP / 8; ++j) {
        c[4 * j] = fmaf(sa, d[4 * j], c[4 * j]);
        c[4 * j + 1] = fmaf(sa, d[4 * j + 1], c[4 * j + 1]);
        c[4 * j + 2] = fmaf(sb, d[4 * j + 2], c[4 * j + 2]);
        c[4 * j + 3] = fmaf(sb, d[4 * j + 3], c[4 * j + 3]);
    }
}

// NP token rows (16, 32 or 64), WGS warpgroups (each one 64-row tile of the layout), STAGES
// ring slots, PIPE stages of MMAs in flight (1 or 2).
template <int NP, int WGS, int STAGES, int PIPE>
__device__ __forceinline__ void wide_wgmma(const unsigned char* __restrict__ x,
                                           const unsigned char* __restrict__ w,
                                           const float* __restrict__ scale_inv,
                                           float* __restrict__ y,
                                           int M, int N, int K, int R, int il, int splits) {
    constexpr int THREADS = 128 * WGS, TR = WF_ROWS * WGS, TILE_BYTES = WF_ROWS * 128;
    constexpr int W_BYTES = TR * 128, X_BYTES = NP * 256, SLOT = W_BYTES + X_BYTES;
    constexpr int PIECES = NP * 16 / THREADS;
    // Stages whose weights are in flight ahead of the one computed.
    constexpr int AHEAD = STAGES - PIPE;
    static_assert(NP % 16 == 0 && PIECES * THREADS == NP * 16, "token rows");
    static_assert(PIPE == 1 || PIPE == 2, "one or two stages of MMAs in flight");
    static_assert(AHEAD >= 2, "x is stored a stage before it is read");
    extern __shared__ __align__(128) unsigned char ring[];
    __shared__ __align__(8) unsigned long long full[STAGES];
    pdl_trigger();
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int nch = K / 128, per = (nch + splits - 1) / splits;
    const int tile = blockIdx.x / splits, split = blockIdx.x % splits;
    const int n0 = tile * TR, kc0 = split * per, mine = max(0, min(nch, kc0 + per) - kc0);
    const unsigned char* wt = w + (size_t)tile * WGS * nch * TILE_BYTES;
    const int sc = (K + 127) / 128;
    const int fa = 16 * warp + g, fb = fa + 8;
    const float* sra = scale_inv + (size_t)fp8_scale_row(n0 + fa, il, R) * sc + kc0;
    const float* srb = scale_inv + (size_t)fp8_scale_row(n0 + fb, il, R) * sc + kc0;
    const unsigned long long policy = wf_ring_init<STAGES>(full);

    auto load_w = [&](int kc) {
        const int slot = kc % STAGES;
        mbar_arrive_tx(&full[slot], W_BYTES);
#pragma unroll
        for (int q = 0; q < WGS; ++q)
            bulk_load(ring + slot * SLOT + q * TILE_BYTES,
                      wt + ((size_t)q * nch + kc0 + kc) * TILE_BYTES, TILE_BYTES, &full[slot],
                      policy);
    };
    // x piece (m, u) (token m, k 8u..8u+7 of the stage) at (u NP + m) x 16 in its slot: the B
    // operand's core matrices. A warp takes 16 tokens x 2 units a round.
    auto piece = [&](int q) {
        const int i = tid + q * THREADS, j = i >> 5;
        const int m = 16 * (j >> 3) + 8 * ((i >> 4) & 1) + (i & 7);
        return make_int2(m, 2 * (j & 7) + ((i >> 3) & 1));
    };
    uint4 xr[PIECES];
    auto fetch_x = [&](int kc) {
#pragma unroll
        for (int q = 0; q < PIECES; ++q) {
            const int2 p = piece(q);
            const size_t at = (size_t)p.x * 2 * K + (size_t)(kc0 + kc) * 256 + p.y * 16;
            const unsigned char* src = x + at;
            xr[q] = p.x < M ? *reinterpret_cast<const uint4*>(src) : make_uint4(0, 0, 0, 0);
        }
    };
    auto store_x = [&](int kc) {
        unsigned char* xs = ring + (kc % STAGES) * SLOT + W_BYTES;
#pragma unroll
        for (int q = 0; q < PIECES; ++q) {
            const int2 p = piece(q);
            *reinterpret_cast<uint4*>(xs + (p.y * NP + p.x) * 16) = xr[q];
        }
    };

    // Stages 0..AHEAD-1 of the weights in flight; x of 0..AHEAD-2 stored, AHEAD-1 fetched.
    if (tid == 0) {
#pragma unroll
        for (int s = 0; s < AHEAD; ++s)
            if (s < mine) load_w(s);
    }
    pdl_wait();
#pragma unroll
    for (int s = 0; s < AHEAD - 1; ++s) {
        if (s < mine) {
            fetch_x(s);
            store_x(s);
        }
    }
    if (AHEAD - 1 < mine) fetch_x(AHEAD - 1);
    // Stage i landed for every thread; then the ring's refill: x of stage i + AHEAD - 1
    // stored (its slot's stage, i - PIPE - 1, done), the next fetched, and the weights of
    // stage i + AHEAD into the slot of stage i - PIPE, whose MMAs the last iteration's wait
    // finished.
    auto advance = [&](int i) {
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        mbar_wait(&full[i % STAGES], (i / STAGES) & 1);
        __syncthreads();
        if (i + AHEAD - 1 < mine) {
            store_x(i + AHEAD - 1);
            if (i + AHEAD < mine) fetch_x(i + AHEAD);
        }
        if (tid == 0 && i + AHEAD < mine) load_w(i + AHEAD);
    };
    auto desc = [&](int i, int s) {
        return wg_desc(ring + (i % STAGES) * SLOT + W_BYTES + 2 * s * NP * 16, NP * 16, 128);
    };

    float c[NP / 2];
#pragma unroll
    for (int v = 0; v < NP / 2; ++v) c[v] = 0.f;
    if constexpr (PIPE == 1) {
        float d[NP / 2];
        unsigned a[2][4][4];
#pragma unroll
        for (int v = 0; v < NP / 2; ++v) d[v] = 0.f;
        for (int i = 0; i < mine; ++i) {
            advance(i);
            wf_fragment(ring + (i % STAGES) * SLOT, fa, fb, t, a);
            const float sa = __ldg(sra + i), sb = __ldg(srb + i);
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
            for (int s = 0; s < 8; ++s) wg_mma(d, a[s / 4][s % 4], desc(i, s), s);
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
            wg_wait(d);
            wg_keep(a);
            wgw_scale<NP>(c, d, sa, sb);
        }
    } else {
        // The scales folded into the A fragments (f16 code x f16 scale), so that one
        // accumulator runs through every stage and nothing reads it until the end: the next
        // stage's MMAs go out before the last stage's are waited for. Two sets of A
        // fragments, stage i in set i % 2; the loop unrolled by two keeps both in registers.
        float d[NP / 2];
        unsigned a0[2][4][4], a1[2][4][4];
#pragma unroll
        for (int v = 0; v < NP / 2; ++v) d[v] = 0.f;
        auto step = [&](int i, unsigned (&a)[2][4][4], unsigned (&ap)[2][4][4]) {
            advance(i);
            wf_fragment(ring + (i % STAGES) * SLOT, fa, fb, t, a);
            const unsigned sa = f32_to_f16x2(__ldg(sra + i)), sb = f32_to_f16x2(__ldg(srb + i));
#pragma unroll
            for (int s = 0; s < 8; ++s) {
                unsigned(&q)[4] = a[s / 4][s % 4];
                q[0] = mul_f16x2(q[0], sa);
                q[1] = mul_f16x2(q[1], sb);
                q[2] = mul_f16x2(q[2], sa);
                q[3] = mul_f16x2(q[3], sb);
            }
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
            for (int s = 0; s < 8; ++s) wg_mma(d, a[s / 4][s % 4], desc(i, s), 1);
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
            if (i > 0) {
                asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
                wg_keep(ap);
            }
        };
        int i = 0;
        for (; i + 1 < mine; i += 2) {
            step(i, a0, a1);
            step(i + 1, a1, a0);
        }
        if (i < mine) step(i, a0, a1);
        wg_wait(d);
        wg_keep(a0);
        wg_keep(a1);
#pragma unroll
        for (int v = 0; v < NP / 2; ++v) c[v] = d[v];
    }
    // c[4j..4j+3]: rows fa (0, 1) and fb (2, 3), tokens 8j + 2t and 8j + 2t + 1.
    const bool add = splits > 1;
#pragma unroll
    for (int j = 0; j < NP / 8; ++j) {
        const int m0 = 8 * j + 2 * t;
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

// wg_m{NP}_w{WGS}_s{STAGES}_p{PIPE}: the production entries' first ten arguments (x, w,
// scale_inv, y, M, N, K, R, il, splits); BLOCKS as the ring and registers allow.
#define WW_ENTRY(NAME, NP, WGS, STAGES, PIPE, BLOCKS)                                             \
    extern "C" __global__ void __launch_bounds__(128 * WGS, BLOCKS)                               \
        NAME(const __half* __restrict__ x, const unsigned char* __restrict__ w,                   \
             const float* __restrict__ scale_inv, float* __restrict__ y, int M, int N, int K,     \
             int R, int il, int splits) {                                                         \
        wide_wgmma<NP, WGS, STAGES, PIPE>(reinterpret_cast<const unsigned char*>(x), w, scale_inv, \
                                          y, M, N, K, R, il, splits);                              \
    }
WW_ENTRY(wg_m16_w1_s4_p1, 16, 1, 4, 1, 4)
WW_ENTRY(wg_m16_w1_s4_p2, 16, 1, 4, 2, 4)
WW_ENTRY(wg_m32_w1_s4_p1, 32, 1, 4, 1, 3)
WW_ENTRY(wg_m32_w1_s4_p2, 32, 1, 4, 2, 3)
WW_ENTRY(wg_m64_w2_s6_p1, 64, 2, 6, 1, 1)
WW_ENTRY(wg_m64_w2_s6_p2, 64, 2, 6, 2, 1)
WW_ENTRY(wg_m64_w1_s4_p2, 64, 1, 4, 2, 2)
