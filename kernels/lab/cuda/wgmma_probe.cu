// Experiment (bin/wgmma_probe.rs): can the FP8 tensor cores Hopper actually has stream a
// decode GEMM's FP8 weights faster than the f16-MMA kernels? On sm_90a, mma.sync with
// e4m3 operands compiles to F2FP unpacks plus HMMA.16816 (emulated, checked in SASS,
// engine/PERF-LOG.md, 2026-11-30 16:45); only the warpgroup MMA (wgmma, QGMMA in SASS) multiplies
// e4m3 natively. Here: W8A8 with x already quantized (per token and 128-k group, codes
// laid out for the B descriptor by the host), weights as wgmma's A operand in registers,
// loaded from a ring of shared-memory stages that 2-D tensor copies fill (one request per
// 64 x 128-byte box, 128-byte swizzle: 64 per-row bulk copies of 256 bytes per stage
// capped the first form at 1.35 TB/s). A tile is 64 rows (one warpgroup's M); the two
// warpgroups split each stage's two 128-k chunks; one producer thread copies. Persistent
// blocks over units of 64 rows x unit_k (split-K, atomic adds) keep every SM streaming.
// Included after common.cuh, skinny_tiles.cuh and skinny_bulk.cu (mbarriers, bulk copies).

#define WG_ROWS 64
#define WG_BOX_BYTES (WG_ROWS * 128)          // one 128-k chunk of the tile's 64 rows
#define WG_STAGE_BYTES (2 * WG_BOX_BYTES)     // two chunks per stage
#define WG_THREADS (2 * 128 + 32)
#define WG_MAX_STAGES 12

// The host's CUtensorMap (cuTensorMapEncodeTiled: u8 [N, K], box 128 x 64, 128-byte
// swizzle), passed by value.
struct __align__(64) WgTensorMap {
    unsigned long long v[16];
};

// A shared-memory matrix descriptor without swizzle: start, leading byte offset (between
// core matrices along k) and stride byte offset (along n), each in 16-byte units.
__device__ __forceinline__ unsigned long long wg_desc(const void* p, unsigned lbo, unsigned sbo) {
    return (unsigned long long)((smem_addr(p) & 0x3ffff) >> 4) |
           (unsigned long long)((lbo & 0x3ffff) >> 4) << 16 |
           (unsigned long long)((sbo & 0x3ffff) >> 4) << 32;
}

// d (64 x 8, f32) = A (64 x 32 e4m3, registers) x B (32 x 8 e4m3, shared) + (acc ? d : 0).
__device__ __forceinline__ void wg_mma(float (&d)[4], const unsigned (&a)[4],
                                       unsigned long long b, int acc) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "%8, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(acc));
}

// Wait for every issued wgmma. The accumulators and the A fragments of the MMAs in flight
// are operands here: to the compiler the wgmma asm wrote p when issued and read a, so
// without them it may read p, or reuse a's registers, before the hardware is done (qkv
// came out 1-7 % wrong in some runs). The fragments are kept as the quads the MMAs take
// (a[q] for MMA q), so the compiler has no reason to copy them into temporaries whose
// registers it could reuse.
__device__ __forceinline__ void wg_wait0(float (&p)[4], unsigned (&a)[4][4]) {
    asm volatile("wgmma.wait_group.sync.aligned 0;"
                 : "+f"(p[0]), "+f"(p[1]), "+f"(p[2]), "+f"(p[3]), "+r"(a[0][0]), "+r"(a[0][1]),
                   "+r"(a[0][2]), "+r"(a[0][3]), "+r"(a[1][0]), "+r"(a[1][1]), "+r"(a[1][2]),
                   "+r"(a[1][3]), "+r"(a[2][0]), "+r"(a[2][1]), "+r"(a[2][2]), "+r"(a[2][3]),
                   "+r"(a[3][0]), "+r"(a[3][1]), "+r"(a[3][2]), "+r"(a[3][3])
                 :
                 : "memory");
}

// One 128 x 64 box of the weights (k0, n0) into dst, completing on bar.
__device__ __forceinline__ void wg_tensor_load(void* dst, const WgTensorMap* tm, int k0, int n0,
                                               unsigned long long* bar,
                                               unsigned long long policy) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
        ".L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(smem_addr(dst)),
        "l"(tm), "r"(k0), "r"(n0), "r"(smem_addr(bar)), "l"(policy)
        : "memory");
}

// xq: the host's codes, [K / 32 steps][2 halves][8 tokens][16 bytes] (a step's B operand
// is its two 8 x 16-byte core matrices), xs: scales [K / 128][8]. Weights through `tm`
// (u8 [N, K]), scale_inv [N / 128][K / 128]. The work is cut into units of 64 rows x
// unit_k (split-K: y must be zeroed, each unit adds its sums atomically); block b takes
// units b, b + gridDim.x, ... with its ring running on across them (persistent).
// N % 64 == 0, unit_k % 512 == 0, K % unit_k == 0.
extern "C" __global__ void __launch_bounds__(WG_THREADS, 1)
    fp8_wgmma_probe(const __grid_constant__ WgTensorMap tm, const float* __restrict__ scale_inv,
                    const uint4* __restrict__ xq, const float* __restrict__ xs,
                    float* __restrict__ y, int M, int N, int K, int stages, int unit_k,
                    int stream_only) {
    extern __shared__ __align__(1024) unsigned char smem_base[];
    __shared__ __align__(8) unsigned long long full[WG_MAX_STAGES], empty[WG_MAX_STAGES];
    __shared__ float red[128][4];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int sc = K / 128, splits = K / unit_k, units = N / WG_ROWS * splits;
    const int ust = unit_k / 256;  // stages per unit
    // The swizzled boxes need 1024-byte alignment, which the declaration alone did not
    // always give (the launcher adds 1024 bytes for this).
    unsigned char* ring = smem_base + ((1024 - (smem_addr(smem_base) & 1023)) & 1023);
    unsigned char* xsm = ring + stages * WG_STAGE_BYTES;  // K * 8 bytes of codes
    float* xsc = reinterpret_cast<float*>(xsm + K * 8);
    if (threadIdx.x == 0) {
        for (int s = 0; s < stages; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 8);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (warp == 8) {
        if (lane == 0) {
            unsigned long long policy;
            asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
            int i = 0;
            for (int u = blockIdx.x; u < units; u += gridDim.x) {
                const int n0 = u / splits * WG_ROWS, k0 = u % splits * unit_k;
                for (int j = 0; j < ust; ++j, ++i) {
                    const int s = i % stages;
                    if (i >= stages) mbar_wait(&empty[s], (i / stages - 1) & 1);
                    mbar_arrive_tx(&full[s], WG_STAGE_BYTES);
                    unsigned char* dst = ring + s * WG_STAGE_BYTES;
                    wg_tensor_load(dst, &tm, k0 + j * 256, n0, &full[s], policy);
                    wg_tensor_load(dst + WG_BOX_BYTES, &tm, k0 + j * 256 + 128, n0, &full[s],
                                   policy);
                }
            }
        }
        return;
    }
    // x codes and scales into shared memory (L2 hits after the first block).
    for (int i = threadIdx.x; i < K / 2; i += 256)
        reinterpret_cast<uint4*>(xsm)[i] = xq[i];
    for (int i = threadIdx.x; i < sc * 8; i += 256) xsc[i] = xs[i];
    asm volatile("bar.sync 1, 256;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // generic writes -> wgmma reads
    const int wg = warp >> 2, wr = (warp & 3) * 16, g = lane >> 2, t = lane & 3;
    // 128-byte swizzle: 16-byte unit u of box row r sits at unit u ^ (r % 8).
    const int ra_row = wr + g, rb_row = wr + g + 8;
    // Ring stage i's weights into registers (and the slot handed back): rows ra_row, rb_row
    // of this warpgroup's chunk, this thread's 32 bytes of each.
    // The chunk's weight scale (row block n0 / 128, chunk ch) is read here too, a stage
    // ahead of its use: read after the MMAs' wait it stalled every stage on an L2 round
    // trip (ncu: 57 % of the warps' cycles on the L1TEX scoreboard).
    auto load = [&](int i, int n0, int ch, unsigned (&fa)[4][4], float& ws) {
        ws = __ldg(scale_inv + (size_t)(n0 / 128) * sc + ch);
        const int s = i % stages;
        mbar_wait(&full[s], (i / stages) & 1);
        const unsigned char* box = ring + s * WG_STAGE_BYTES + wg * WG_BOX_BYTES;
        const unsigned char* pa = box + ra_row * 128;
        const unsigned char* pb = box + rb_row * 128;
        const uint4 a0 = *reinterpret_cast<const uint4*>(pa + ((2 * t) ^ (ra_row & 7)) * 16);
        const uint4 a1 = *reinterpret_cast<const uint4*>(pa + ((2 * t + 1) ^ (ra_row & 7)) * 16);
        const uint4 b0 = *reinterpret_cast<const uint4*>(pb + ((2 * t) ^ (rb_row & 7)) * 16);
        const uint4 b1 = *reinterpret_cast<const uint4*>(pb + ((2 * t + 1) ^ (rb_row & 7)) * 16);
        __syncwarp();
        if (lane == 0) mbar_arrive(&empty[s]);
        // Words 2q, 2q + 1 of this thread's 32 bytes (row a, row b) are the fragment's k
        // 4t.. and 16 + 4t.. of MMA q; the host laid x out to match.
        const unsigned ra[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
        const unsigned rb[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            fa[q][0] = ra[2 * q];
            fa[q][1] = rb[2 * q];
            fa[q][2] = ra[2 * q + 1];
            fa[q][3] = rb[2 * q + 1];
        }
    };
    // Chunk ch's 4 MMAs (ch: 128-k index along K) on the loaded registers, issued.
    auto issue = [&](int ch, const unsigned (&fa)[4][4], float (&p)[4]) {
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int q = 0; q < 4; ++q) wg_mma(p, fa[q], wg_desc(xsm + (ch * 4 + q) * 256, 128, 256), q);
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    };
    // Chunk ch's sums into c, scaled by the weight block's and the tokens' scales.
    auto add = [&](int ch, float ws, const float (&p)[4], float (&c)[4]) {
        const float2 xv = *reinterpret_cast<const float2*>(xsc + ch * 8 + 2 * t);
        c[0] = fmaf(ws * xv.x, p[0], c[0]);
        c[1] = fmaf(ws * xv.y, p[1], c[1]);
        c[2] = fmaf(ws * xv.x, p[2], c[2]);
        c[3] = fmaf(ws * xv.y, p[3], c[3]);
    };
    // Two register sets: stage i + 1's weights load while stage i's MMAs run (a wgmma's
    // register operands stay untouched until it completes). Deferring each wait by one
    // stage (wait_group 1, two accumulators) measured no faster (engine/PERF-LOG.md, step 33).
    unsigned fa0[4][4], fa1[4][4];
    float p0[4] = {0.f, 0.f, 0.f, 0.f}, p1[4] = {0.f, 0.f, 0.f, 0.f};
    const int tid = threadIdx.x & 127;
    int i = 0;
    if (stream_only) {
        // The ring alone (timing only: no reads, no MMAs, y left zero): what this copy
        // scheme streams with consumers that cost nothing.
        for (int u = blockIdx.x; u < units; u += gridDim.x)
            for (int j = 0; j < ust; ++j, ++i) {
                mbar_wait(&full[i % stages], (i / stages) & 1);
                __syncwarp();
                if (lane == 0) mbar_arrive(&empty[i % stages]);
            }
        return;
    }
    for (int u = blockIdx.x; u < units; u += gridDim.x) {
        const int n0 = u / splits * WG_ROWS, kc = u % splits * unit_k / 128 + wg;
        float c[4] = {0.f, 0.f, 0.f, 0.f};
        float ws0, ws1;
        load(i, n0, kc, fa0, ws0);
        for (int j = 0; j < ust; j += 2, i += 2) {
            issue(kc + 2 * j, fa0, p0);
            load(i + 1, n0, kc + 2 * j + 2, fa1, ws1);
            wg_wait0(p0, fa0);
            add(kc + 2 * j, ws0, p0, c);
            issue(kc + 2 * j + 2, fa1, p1);
            if (j + 2 < ust) load(i + 2, n0, kc + 2 * j + 4, fa0, ws0);
            wg_wait0(p1, fa1);
            add(kc + 2 * j + 2, ws1, p1, c);
        }
        // Warpgroup 1 hands its sums to warpgroup 0, which adds rows wr + g and wr + g + 8.
        if (wg == 1)
            for (int j = 0; j < 4; ++j) red[tid][j] = c[j];
        asm volatile("bar.sync 1, 256;" ::: "memory");
        if (wg == 0) {
            const int r0 = n0 + wr + g, m0 = 2 * t;
            if (m0 < M) {
                atomicAdd(y + (size_t)m0 * N + r0, c[0] + red[tid][0]);
                atomicAdd(y + (size_t)m0 * N + r0 + 8, c[2] + red[tid][2]);
            }
            if (m0 + 1 < M) {
                atomicAdd(y + (size_t)(m0 + 1) * N + r0, c[1] + red[tid][1]);
                atomicAdd(y + (size_t)(m0 + 1) * N + r0 + 8, c[3] + red[tid][3]);
            }
        }
        asm volatile("bar.sync 1, 256;" ::: "memory");  // red is free for the next unit
    }
}
