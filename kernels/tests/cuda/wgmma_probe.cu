// Experiment (gpu_wgmma_probe.rs): can the FP8 tensor cores Hopper actually has stream a
// decode GEMM's FP8 weights faster than the f16-MMA kernels? On sm_90a, mma.sync with
// e4m3 operands compiles to F2FP unpacks plus HMMA.16816 (emulated, checked in SASS,
// engine/PERF.md session 11); only the warpgroup MMA (wgmma, QGMMA in SASS) multiplies
// e4m3 natively. Here: W8A8 with x already quantized (per token and 128-k group, codes
// laid out for the B descriptor by the host), weights as wgmma's A operand in registers,
// loaded from a ring of shared-memory stages that 2-D tensor copies fill (one request per
// 64 x 128-byte box, 128-byte swizzle: 64 per-row bulk copies of 256 bytes per stage
// capped the first form at 1.35 TB/s). A tile is 64 rows (one warpgroup's M); the two
// warpgroups split each stage's two 128-k chunks; one producer thread copies.
// Included after common.cuh, skinny_tiles.cuh and skinny_bulk.cu (mbarriers, bulk copies).

#define WG_ROWS 64
#define WG_BOX_BYTES (WG_ROWS * 128)          // one 128-k chunk of the tile's 64 rows
#define WG_STAGE_BYTES (2 * WG_BOX_BYTES)     // two chunks per stage
#define WG_THREADS (2 * 128 + 32)
#define WG_MAX_STAGES 8

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
// (u8 [N, K]), scale_inv [N / 128][K / 128]; N % 64 == 0, K % 512 == 0.
extern "C" __global__ void __launch_bounds__(WG_THREADS, 1)
    fp8_wgmma_probe(const __grid_constant__ WgTensorMap tm,
                    const float* __restrict__ scale_inv, const uint4* __restrict__ xq,
                    const float* __restrict__ xs, float* __restrict__ y, int M, int N, int K,
                    int stages) {
    extern __shared__ __align__(1024) unsigned char ring[];
    __shared__ __align__(8) unsigned long long full[WG_MAX_STAGES], empty[WG_MAX_STAGES];
    __shared__ float red[128][4];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int n0 = blockIdx.x * WG_ROWS, nst = K / 256, sc = K / 128;
    if (smem_addr(ring) & 1023) __trap();  // the swizzled boxes need 1024-byte alignment
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
            for (int i = 0; i < nst; ++i) {
                const int s = i % stages;
                if (i >= stages) mbar_wait(&empty[s], (i / stages - 1) & 1);
                mbar_arrive_tx(&full[s], WG_STAGE_BYTES);
                unsigned char* dst = ring + s * WG_STAGE_BYTES;
                wg_tensor_load(dst, &tm, i * 256, n0, &full[s], policy);
                wg_tensor_load(dst + WG_BOX_BYTES, &tm, i * 256 + 128, n0, &full[s], policy);
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
    float c[4] = {0.f, 0.f, 0.f, 0.f};
    // Stage i's weights into registers (and the slot handed back): rows ra_row, rb_row of
    // this warpgroup's chunk, this thread's 32 bytes of each.
    auto load = [&](int i, unsigned (&ra)[8], unsigned (&rb)[8]) {
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
        ra[0] = a0.x, ra[1] = a0.y, ra[2] = a0.z, ra[3] = a0.w;
        ra[4] = a1.x, ra[5] = a1.y, ra[6] = a1.z, ra[7] = a1.w;
        rb[0] = b0.x, rb[1] = b0.y, rb[2] = b0.z, rb[3] = b0.w;
        rb[4] = b1.x, rb[5] = b1.y, rb[6] = b1.z, rb[7] = b1.w;
    };
    // Stage i's 4 MMAs on the loaded registers (issued, not waited for).
    auto issue = [&](int i, const unsigned (&ra)[8], const unsigned (&rb)[8], float (&p)[4]) {
        const int ch = i * 2 + wg;
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            // Words 2q, 2q + 1 of this thread's 32 bytes are the fragment's k 4t.. and 16 +
            // 4t.. of step q; the host laid x out to match.
            const unsigned a[4] = {ra[2 * q], rb[2 * q], ra[2 * q + 1], rb[2 * q + 1]};
            wg_mma(p, a, wg_desc(xsm + (ch * 4 + q) * 256, 128, 256), q);
        }
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    };
    // Stage i's chunk sums into c, scaled by the weight block's and the tokens' scales.
    auto add = [&](int i, const float (&p)[4]) {
        const int ch = i * 2 + wg;
        const float ws = __ldg(scale_inv + (size_t)(n0 / 128) * sc + ch);
        const float2 xv = *reinterpret_cast<const float2*>(xsc + ch * 8 + 2 * t);
        c[0] = fmaf(ws * xv.x, p[0], c[0]);
        c[1] = fmaf(ws * xv.y, p[1], c[1]);
        c[2] = fmaf(ws * xv.x, p[2], c[2]);
        c[3] = fmaf(ws * xv.y, p[3], c[3]);
    };
    // Two register sets: stage i + 1's weights load while stage i's MMAs run (a wgmma's
    // register operands stay untouched until it completes). nst is even (K % 512).
    // Deferring each wait by one stage (wait_group 1, two accumulators) measured no
    // faster (engine/PERF.md, step 33).
    unsigned ra0[8], rb0[8], ra1[8], rb1[8];
    float p0[4] = {0.f, 0.f, 0.f, 0.f}, p1[4] = {0.f, 0.f, 0.f, 0.f};
    load(0, ra0, rb0);
    for (int i = 0; i < nst; i += 2) {
        issue(i, ra0, rb0, p0);
        load(i + 1, ra1, rb1);
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        add(i, p0);
        issue(i + 1, ra1, rb1, p1);
        if (i + 2 < nst) load(i + 2, ra0, rb0);
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        add(i + 1, p1);
    }
    // Warpgroup 1 hands its sums to warpgroup 0, which stores rows wr + g and wr + g + 8.
    const int tid = threadIdx.x & 127;
    if (wg == 1)
        for (int j = 0; j < 4; ++j) red[tid][j] = c[j];
    asm volatile("bar.sync 1, 256;" ::: "memory");
    if (wg == 0) {
        const int r0 = n0 + wr + g, m0 = 2 * t;
        const float v[4] = {c[0] + red[tid][0], c[1] + red[tid][1], c[2] + red[tid][2],
                            c[3] + red[tid][3]};
        if (m0 < M) y[(size_t)m0 * N + r0] = v[0], y[(size_t)m0 * N + r0 + 8] = v[2];
        if (m0 + 1 < M) y[(size_t)(m0 + 1) * N + r0] = v[1], y[(size_t)(m0 + 1) * N + r0 + 8] = v[3];
    }
}
