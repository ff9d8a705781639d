// Skinny GEMM for decode: y[m, n] = sum_k x[m, k] * w[n, k] for M <= 8 token rows, on the
// tensor cores (mma.sync m16n8k16, f32 accumulation). The weight tile is the MMA's A
// operand (16 output rows), the tokens are B (n = 8 columns; rows >= M are zeros), so one
// kernel serves M = 1..8 at the same cost: decode is bound by the weight stream, and the
// tensor cores make the FMAs and the x loads free next to it (the CUDA-core GEMV did 8x the
// FMAs and x loads at M = 8 and fell to ~1.2 TB/s).
//
// The k order inside a dot product is free as long as A and B agree, so each thread loads
// 16 contiguous bytes of its weight rows and of its token's x, and feeds them to the MMA as
// if they were the fragment's k positions (the fragment's "logical" k 2t..2t+1 and 2t+8..9
// of thread t are physical k 4 words further on; see the chunk layouts below). Every global
// load is then a full 16-byte vector and every line fetched is used whole.
//
// A block is 8 warps over one 16-row tile: the warps split K (interleaved chunks, so the
// block reads each weight row as one contiguous stream) and meet in shared memory. Each
// warp alternates two register stages, loading one chunk while multiplying the other, so
// its loads stay in flight through the MMAs (the first version loaded 4 chunks, then
// multiplied them, and left DRAM idle meanwhile: 2.2-3.8 TB/s). Measured slower and
// dropped (engine/PERF.md, session 3): L2 prefetch of the rows ahead of the loads (2-20 %
// slower), and a cp.async ring of 3-8 shared-memory stages per warp (half the bandwidth).
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_fp16.h>

#define SG_WARPS 8

// Weights are read once per step: bypass L1 so it keeps x, which every block re-reads.
__device__ __forceinline__ uint4 ld_stream(const void* p) {
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

__device__ __forceinline__ void mma_bf16(float (&c)[4], unsigned a0, unsigned a1, unsigned a2,
                                         unsigned a3, unsigned b0, unsigned b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// A barrier over the SG_WARPS warps that multiply (threads 0..255): the bulk-copy kernels'
// extra producer warp has left by the time they reduce.
__device__ __forceinline__ void consumers_sync() {
    asm volatile("bar.sync 1, %0;" ::"n"(SG_WARPS * 32) : "memory");
}

// Every warp's accumulator fragment into shared memory, then a barrier over the multiplying
// warps; the epilogues below sum red[w][row][m] over the warps w. One array for all of them.
typedef float RedTile[16][8];
__device__ __forceinline__ const RedTile* gather_fragments(const float (&c)[4]) {
    __shared__ float red[SG_WARPS][16][8];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    red[warp][g][2 * t] = c[0];
    red[warp][g][2 * t + 1] = c[1];
    red[warp][g + 8][2 * t] = c[2];
    red[warp][g + 8][2 * t + 1] = c[3];
    consumers_sync();
    return red;
}

// Sum the 8 warps' fragments and store y[m, n] for this block's 16 rows.
__device__ __forceinline__ void reduce_store(const float (&c)[4], float* __restrict__ y, int M,
                                             int N, int n0) {
    const RedTile* red = gather_fragments(c);
    if (threadIdx.x < 128) {
        const int r = threadIdx.x & 15, m = threadIdx.x >> 4;
        float s = 0.f;
#pragma unroll
        for (int w = 0; w < SG_WARPS; ++w) s += red[w][r][m];
        if (m < M && n0 + r < N) y[(size_t)m * N + n0 + r] = s;
    }
}

// Gate|up fused with SwiGLU: the weight rows come interleaved by 8 (tile j = gate rows
// 8j..8j+7, then up rows 8j..8j+7; ops::interleave_gate_up), so one block holds both halves
// of 8 outputs and writes act[m, 8j + r] = bf16(silu(g) * u) itself: no f32 gate|up buffer
// and no separate swiglu kernel. Sums and formula are those of reduce_store + swiglu.cu.
__device__ __forceinline__ void reduce_store_swiglu(const float (&c)[4],
                                                    __nv_bfloat16* __restrict__ act, int M,
                                                    int inter, int n0) {
    const RedTile* red = gather_fragments(c);
    if (threadIdx.x < 64) {
        const int r = threadIdx.x & 7, m = threadIdx.x >> 3;
        float gs = 0.f, us = 0.f;
#pragma unroll
        for (int w = 0; w < SG_WARPS; ++w) {
            gs += red[w][r][m];
            us += red[w][r + 8][m];
        }
        const int col = n0 / 2 + r;
        if (m < M && col < inter)
            act[(size_t)m * inter + col] = __float2bfloat16(gs / (1.0f + expf(-gs)) * us);
    }
}

// Where a kernel's sums go: y [M, N] f32 (Out = float), or act [M, N / 2] bf16 through
// SwiGLU for interleaved gate|up weights (Out = __nv_bfloat16).
__device__ __forceinline__ void store_out(const float (&c)[4], float* y, int M, int N, int n0) {
    reduce_store(c, y, M, N, n0);
}
__device__ __forceinline__ void store_out(const float (&c)[4], __nv_bfloat16* act, int M, int N,
                                          int n0) {
    reduce_store_swiglu(c, act, M, N / 2, n0);
}

// The pipeline both kernels share. Tile supplies the weight layout: Stage (one chunk's
// registers), nch (chunks of 128 weight bytes per row), load_w / load_x (a chunk's weights
// and tokens into a stage; chunks past nch load zeros) and mma (a stage into the
// accumulators). Two stages alternate, loading one chunk while multiplying the other. The
// first chunk's weights are requested before pdl_wait, while the previous kernel may still
// run (launch.rs).
template <class Tile, class Out>
__device__ __forceinline__ void skinny_pipeline(const Tile& tile, Out* __restrict__ y, int M,
                                                int N, int n0) {
    const int warp = threadIdx.x >> 5;
    float c0[4] = {0.f, 0.f, 0.f, 0.f}, c1[4] = {0.f, 0.f, 0.f, 0.f};
    typename Tile::Stage s0, s1;
    int ch = warp;
    tile.load_w(s0, ch);
    pdl_wait();  // x comes from the previous kernel; the weights above did not need it
    tile.load_x(s0, ch);
    while (ch < tile.nch) {
        tile.load_w(s1, ch + SG_WARPS);
        tile.load_x(s1, ch + SG_WARPS);
        tile.mma(c0, s0);
        ch += SG_WARPS;
        if (ch >= tile.nch) break;
        tile.load_w(s0, ch + SG_WARPS);
        tile.load_x(s0, ch + SG_WARPS);
        tile.mma(c1, s1);
        ch += SG_WARPS;
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) c0[i] += c1[i];
    store_out(c0, y, M, N, n0);
}

// bf16 weights. A chunk is 64 k: thread t of a quad takes k 16t..16t+15 (two 16-byte
// pieces, 32 contiguous bytes of each of its two rows, so a quad covers a full 128-byte
// line per row: with 16 bytes per thread every request fetched half lines and the kernel
// stalled at ~4.0 TB/s), i.e. four MMAs.
struct TileBf16 {
    struct Stage {
        uint4 a[2], b[2], x[2];
    };
    const uint4 *wa, *wb, *xr;
    const __nv_bfloat16* w;
    int n0, N, K, k8, nch;
    bool va, vb, vx;
    int t;
    // For the bulk-copy pipeline: the rows as bytes, and 16-byte pieces per row.
    __device__ const unsigned char* bytes() const {
        return reinterpret_cast<const unsigned char*>(w);
    }
    __device__ int row_bytes() const { return K * 2; }
    __device__ int pieces() const { return k8; }

    __device__ TileBf16(const __nv_bfloat16* x, const __nv_bfloat16* w_, int M, int N_, int K_)
        : w(w_), N(N_), K(K_) {
        const int lane = threadIdx.x & 31, g = lane >> 2;
        t = lane & 3;
        n0 = blockIdx.x * 16;
        va = n0 + g < N;
        vb = n0 + g + 8 < N;
        vx = g < M;
        wa = reinterpret_cast<const uint4*>(w + (size_t)(va ? n0 + g : 0) * K);
        wb = reinterpret_cast<const uint4*>(w + (size_t)(vb ? n0 + g + 8 : 0) * K);
        xr = reinterpret_cast<const uint4*>(x + (size_t)(vx ? g : 0) * K);
        k8 = K / 8;             // 16-byte pieces per row
        nch = (k8 + 7) / 8;     // 64-k chunks = 128 bytes per row
    }
    __device__ void load_w(Stage& s, int ch) const {
        const uint4 z = make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            const int p = (ch * 4 + t) * 2 + j;
            const bool ok = ch < nch && p < k8;
            s.a[j] = ok && va ? ld_stream(wa + p) : z;
            s.b[j] = ok && vb ? ld_stream(wb + p) : z;
        }
    }
    __device__ void load_x(Stage& s, int ch) const {
        const uint4 z = make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            const int p = (ch * 4 + t) * 2 + j;
            s.x[j] = ch < nch && p < k8 && vx ? __ldg(xr + p) : z;
        }
    }
    __device__ void mma(float (&c)[4], const Stage& s) const {
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            mma_bf16(c, s.a[j].x, s.b[j].x, s.a[j].y, s.b[j].y, s.x[j].x, s.x[j].y);
            mma_bf16(c, s.a[j].z, s.b[j].z, s.a[j].w, s.b[j].w, s.x[j].z, s.x[j].w);
        }
    }
};

// x [M, K] bf16, w [N, K] bf16, y [M, N] f32; K % 8 == 0 (checked by the launcher).
extern "C" __global__ void __launch_bounds__(SG_WARPS * 32, 2)
    skinny_gemm_bf16(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                     float* __restrict__ y, int M, int N, int K) {
    pdl_trigger();
    const TileBf16 tile(x, w, M, N, K);
    skinny_pipeline(tile, y, M, N, tile.n0);
}

// The same over interleaved gate|up weights [N = 2 * inter, K], writing act [M, inter] bf16.
extern "C" __global__ void __launch_bounds__(SG_WARPS * 32, 2)
    skinny_gemm_bf16_swiglu(const __nv_bfloat16* __restrict__ x,
                            const __nv_bfloat16* __restrict__ w,
                            __nv_bfloat16* __restrict__ act, int M, int N, int K) {
    pdl_trigger();
    const TileBf16 tile(x, w, M, N, K);
    skinny_pipeline(tile, act, M, N, tile.n0);
}

// Two e4m3 codes -> two bf16 (exact: every e4m3 value, subnormals included, is a normal f16
// and a bf16), through the hardware f16 conversion. An integer version (e4m3 bits placed
// in bf16's, off by 2^-120, with x scaled by 2^64 to compensate) measured 6-9 % slower:
// the kernel is bound by instruction issue, not by the conversions' throughput.
__device__ __forceinline__ unsigned fp8x2_to_bf16x2(unsigned short v) {
    const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(v, __NV_E4M3);
    const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&h));
    const __nv_bfloat162 b = __float22bfloat162_rn(f);
    return *reinterpret_cast<const unsigned*>(&b);
}

// FP8 weights with block scales: w [N, K] e4m3 codes, scale_inv [ceil(N/R), ceil(K/128)]
// f32 with w_real = code * scale_inv[n/R][k/128]. R = 128 is the Qwen3-8B-FP8 layout; the
// engine passes R = 1 (a scale row per weight row) when it fuses projections whose row
// counts are not multiples of 128 (tiny test models). A chunk is 128 k, exactly one scale
// column (thread t of a quad takes codes 32t..32t+31: a full 128-byte line per row per
// quad), so each chunk's partial sums get their rows' scales in f32. K % 16 == 0.
// IL > 0: the codes are gate|up interleaved by 8 rows (IL = inter) while the scales keep
// the checkpoint's order, gate rows then up rows: fp8_scale_row maps a code row back.
__device__ __forceinline__ int fp8_scale_row(int n, int il, int R) {
    const int orig = il == 0 ? n : ((n & 15) < 8 ? 0 : il) + (n >> 4) * 8 + (n & 7);
    return orig / R;
}

struct TileFp8 {
    struct Stage {
        uint4 a[2], b[2], x[4];
        float sa, sb;  // scales of rows g and g + 8 for this chunk
    };
    const uint4 *wa, *wb, *xr;
    const unsigned char* w;
    const float *sra, *srb;
    int n0, N, K, k16, nch;
    bool va, vb, vx;
    int t;
    __device__ const unsigned char* bytes() const { return w; }
    __device__ int row_bytes() const { return K; }
    __device__ int pieces() const { return k16; }

    __device__ TileFp8(const __nv_bfloat16* x, const unsigned char* w_, const float* scale_inv,
                       int M, int N_, int K_, int R, int il)
        : w(w_), N(N_), K(K_) {
        const int lane = threadIdx.x & 31, g = lane >> 2;
        t = lane & 3;
        n0 = blockIdx.x * 16;
        va = n0 + g < N;
        vb = n0 + g + 8 < N;
        vx = g < M;
        wa = reinterpret_cast<const uint4*>(w + (size_t)(va ? n0 + g : 0) * K);
        wb = reinterpret_cast<const uint4*>(w + (size_t)(vb ? n0 + g + 8 : 0) * K);
        xr = reinterpret_cast<const uint4*>(x + (size_t)(vx ? g : 0) * K);
        const int sc = (K + 127) / 128;
        sra = scale_inv + (size_t)fp8_scale_row(va ? n0 + g : 0, il, R) * sc;
        srb = scale_inv + (size_t)fp8_scale_row(vb ? n0 + g + 8 : 0, il, R) * sc;
        k16 = K / 16;           // 16-byte pieces of a weight row
        nch = (k16 + 7) / 8;    // 128-k chunks = 128 bytes per row
    }
    __device__ void load_w(Stage& s, int ch) const {
        const uint4 z = make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            const int p = (ch * 4 + t) * 2 + j;  // piece of 16 codes = 2 x-pieces
            const bool ok = ch < nch && p < k16;
            s.a[j] = ok && va ? ld_stream(wa + p) : z;
            s.b[j] = ok && vb ? ld_stream(wb + p) : z;
        }
    }
    __device__ void load_x(Stage& s, int ch) const {
        const uint4 z = make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            const int p = (ch * 4 + t) * 2 + j;
            const bool ok = ch < nch && p < k16 && vx;
            s.x[2 * j] = ok ? __ldg(xr + 2 * p) : z;
            s.x[2 * j + 1] = ok ? __ldg(xr + 2 * p + 1) : z;
        }
        s.sa = ch < nch ? __ldg(sra + ch) : 0.f;
        s.sb = ch < nch ? __ldg(srb + ch) : 0.f;
    }
    __device__ void mma(float (&c)[4], const Stage& s) const {
        float p[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            const unsigned aw[4] = {s.a[j].x, s.a[j].y, s.a[j].z, s.a[j].w};
            const unsigned bw[4] = {s.b[j].x, s.b[j].y, s.b[j].z, s.b[j].w};
            const uint4 x0 = s.x[2 * j], x1 = s.x[2 * j + 1];
            const unsigned xw[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                // Word i holds codes 4i..4i+3 = bf16 pairs 2i, 2i+1 = x words 2i, 2i+1.
                mma_bf16(p, fp8x2_to_bf16x2(aw[i] & 0xffff), fp8x2_to_bf16x2(bw[i] & 0xffff),
                         fp8x2_to_bf16x2(aw[i] >> 16), fp8x2_to_bf16x2(bw[i] >> 16), xw[2 * i],
                         xw[2 * i + 1]);
            }
        }
        // c[0], c[1] are row g's outputs, c[2], c[3] row g + 8's.
        c[0] = fmaf(s.sa, p[0], c[0]);
        c[1] = fmaf(s.sa, p[1], c[1]);
        c[2] = fmaf(s.sb, p[2], c[2]);
        c[3] = fmaf(s.sb, p[3], c[3]);
    }
};

extern "C" __global__ void __launch_bounds__(SG_WARPS * 32, 2)
    skinny_gemm_fp8(const __nv_bfloat16* __restrict__ x, const unsigned char* __restrict__ w,
                    const float* __restrict__ scale_inv, float* __restrict__ y, int M, int N,
                    int K, int R, int il) {
    pdl_trigger();
    const TileFp8 tile(x, w, scale_inv, M, N, K, R, il);
    skinny_pipeline(tile, y, M, N, tile.n0);
}

// FP8 gate|up (interleaved codes, il = inter) fused with SwiGLU: act [M, N / 2] bf16.
extern "C" __global__ void __launch_bounds__(SG_WARPS * 32, 2)
    skinny_gemm_fp8_swiglu(const __nv_bfloat16* __restrict__ x,
                           const unsigned char* __restrict__ w,
                           const float* __restrict__ scale_inv,
                           __nv_bfloat16* __restrict__ act, int M, int N, int K, int R, int il) {
    pdl_trigger();
    const TileFp8 tile(x, w, scale_inv, M, N, K, R, il);
    skinny_pipeline(tile, act, M, N, tile.n0);
}

// ---- The bulk-copy (TMA) pipeline --------------------------------------------------------
// The register pipeline above keeps at most two chunks per warp in flight, 64-128 bytes per
// thread, and tops out at ~3.75 TB/s (bf16) of the 4.30 TB/s copy ceiling. Here one extra
// producer warp streams the block's 16 weight rows into a ring of shared-memory stages with
// cp.async.bulk (the copy engine moves the bytes; no thread issues a load per 16 bytes) and
// mbarriers, so each block keeps `stages` x 16 KB in flight, and the 8 multiplying warps
// only read shared memory. `stages` (2..TM_MAX_STAGES) is a kernel argument so that one
// build serves a sweep: fewer stages fit more blocks per SM, and grids with under two
// blocks per SM (o_proj, down) take a deeper ring (ops::skinny). H200, all linears of a
// bf16 step: 4024 us (register pipeline), 3792 (bulk, 4 stages), 3692 (4, and 6 for the
// small grids), i.e. 4.10 TB/s. A stage holds 1 KB of each row: 8 chunks of 128 bytes,
// chunk i * 8 + w for warp w, the same chunk order and registers as the register pipeline,
// so the tiles' mma and load_x serve both. The producer never waits on the previous kernel
// (it reads only weights); the others wait before they read x.
#define TM_MAX_STAGES 8
#define TM_ROW_BYTES 1024
// Rows 16 bytes apart from a multiple of 128: the 8 lanes of one 16-byte shared load phase
// (rows g, g + 1; quads t = 0..3) then hit 8 different bank groups.
#define TM_ROW_STRIDE (TM_ROW_BYTES + 16)
#define TM_STAGE_BYTES (16 * TM_ROW_STRIDE)
#define TM_THREADS ((SG_WARPS + 1) * 32)

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(unsigned long long* b, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(b)), "r"(count)
                 : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned long long* b) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(b)) : "memory");
}
// Arrive and announce the bytes the stage's copies will deliver.
__device__ __forceinline__ void mbar_arrive_tx(unsigned long long* b, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(b)),
                 "r"(bytes)
                 : "memory");
}
// Wait until the barrier's phase of this parity has completed.
__device__ __forceinline__ void mbar_wait(unsigned long long* b, unsigned parity) {
    asm volatile(
        "{\n"
        ".reg .pred done;\n"
        "retry:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra retry;\n"
        "}\n" ::"r"(smem_addr(b)),
        "r"(parity)
        : "memory");
}
// bytes (a multiple of 16, both addresses 16-byte aligned) from global to shared memory,
// completing on the barrier. Weights are read once per step: evict them from L2 first.
__device__ __forceinline__ void bulk_load(void* dst, const void* src, unsigned bytes,
                                          unsigned long long* bar, unsigned long long policy) {
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint "
        "[%0], [%1], %2, [%3], %4;" ::"r"(smem_addr(dst)),
        "l"(src), "r"(bytes), "r"(smem_addr(bar)), "l"(policy)
        : "memory");
}

// Chunk ch's weights from its stage into the registers load_w would fill: this thread's 32
// bytes of rows g and g + 8 (chunks past the row end read zeros, as load_w).
template <class Stage>
__device__ __forceinline__ void load_w_stage(Stage& s, const unsigned char* stage, int ch,
                                             int pieces) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const unsigned char* ra = stage + g * TM_ROW_STRIDE + warp * 128 + t * 32;
    const uint4 z = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int j = 0; j < 2; ++j) {
        const bool ok = (ch * 4 + t) * 2 + j < pieces;
        s.a[j] = ok ? *reinterpret_cast<const uint4*>(ra + 16 * j) : z;
        s.b[j] = ok ? *reinterpret_cast<const uint4*>(ra + 8 * TM_ROW_STRIDE + 16 * j) : z;
    }
}

// Block = TM_THREADS: warps 0..7 multiply, warp 8 copies. Dynamic shared memory:
// stages * TM_STAGE_BYTES (the launcher raises the kernel's limit). Rows past N are not
// copied: their stale shared memory only reaches their own outputs, which are not stored.
template <class Tile, class Out>
__device__ __forceinline__ void skinny_pipeline_bulk(const Tile& tile, Out* __restrict__ y, int M,
                                                     int N, int n0, int stages) {
    extern __shared__ __align__(128) unsigned char ring[];
    __shared__ __align__(8) unsigned long long full[TM_MAX_STAGES], empty[TM_MAX_STAGES];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int row_bytes = tile.row_bytes();
    const int nst = (row_bytes + TM_ROW_BYTES - 1) / TM_ROW_BYTES;
    if (threadIdx.x == 0) {
        for (int s = 0; s < stages; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], SG_WARPS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (warp == SG_WARPS) {
        unsigned long long policy;
        asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
        const int rows = min(16, N - n0);
        const unsigned char* src = tile.bytes() + (size_t)(n0 + lane) * row_bytes;
        for (int i = 0; i < nst; ++i) {
            const int s = i % stages;
            if (i >= stages) mbar_wait(&empty[s], (i / stages - 1) & 1);
            const int off = i * TM_ROW_BYTES;
            const int bytes = min(TM_ROW_BYTES, row_bytes - off);
            if (lane == 0) mbar_arrive_tx(&full[s], bytes * rows);
            __syncwarp();
            if (lane < rows)
                bulk_load(ring + s * TM_STAGE_BYTES + lane * TM_ROW_STRIDE, src + off, bytes,
                          &full[s], policy);
        }
        return;
    }
    float c[4] = {0.f, 0.f, 0.f, 0.f};
    typename Tile::Stage st;
    pdl_wait();  // x comes from the previous kernel
    for (int i = 0; i < nst; ++i) {
        const int s = i % stages, ch = i * SG_WARPS + warp;
        tile.load_x(st, ch);
        mbar_wait(&full[s], (i / stages) & 1);
        load_w_stage(st, ring + s * TM_STAGE_BYTES, ch, tile.pieces());
        __syncwarp();  // every lane's shared reads are done before the stage is handed back
        if (lane == 0) mbar_arrive(&empty[s]);
        tile.mma(c, st);
    }
    store_out(c, y, M, N, n0);
}

extern "C" __global__ void __launch_bounds__(TM_THREADS, 3)
    skinny_gemm_bf16_bulk(const __nv_bfloat16* __restrict__ x,
                          const __nv_bfloat16* __restrict__ w, float* __restrict__ y, int M,
                          int N, int K, int stages) {
    pdl_trigger();
    const TileBf16 tile(x, w, M, N, K);
    skinny_pipeline_bulk(tile, y, M, N, tile.n0, stages);
}

extern "C" __global__ void __launch_bounds__(TM_THREADS, 3)
    skinny_gemm_bf16_swiglu_bulk(const __nv_bfloat16* __restrict__ x,
                                 const __nv_bfloat16* __restrict__ w,
                                 __nv_bfloat16* __restrict__ act, int M, int N, int K,
                                 int stages) {
    pdl_trigger();
    const TileBf16 tile(x, w, M, N, K);
    skinny_pipeline_bulk(tile, act, M, N, tile.n0, stages);
}

extern "C" __global__ void __launch_bounds__(TM_THREADS, 3)
    skinny_gemm_fp8_bulk(const __nv_bfloat16* __restrict__ x, const unsigned char* __restrict__ w,
                         const float* __restrict__ scale_inv, float* __restrict__ y, int M,
                         int N, int K, int R, int il, int stages) {
    pdl_trigger();
    const TileFp8 tile(x, w, scale_inv, M, N, K, R, il);
    skinny_pipeline_bulk(tile, y, M, N, tile.n0, stages);
}

extern "C" __global__ void __launch_bounds__(TM_THREADS, 3)
    skinny_gemm_fp8_swiglu_bulk(const __nv_bfloat16* __restrict__ x,
                                const unsigned char* __restrict__ w,
                                const float* __restrict__ scale_inv,
                                __nv_bfloat16* __restrict__ act, int M, int N, int K, int R,
                                int il, int stages) {
    pdl_trigger();
    const TileFp8 tile(x, w, scale_inv, M, N, K, R, il);
    skinny_pipeline_bulk(tile, act, M, N, tile.n0, stages);
}

// Prefill with FP8 weights: expand one matrix to bf16 for cuBLAS. code * scale is computed
// in f32 and rounded once to bf16 (the only rounding; the decode kernel keeps it in f32).
// Each thread converts 8 codes. Layout, R and il as skinny_gemm_fp8; K % 8 == 0.
extern "C" __global__ void fp8_dequant_bf16(const unsigned char* __restrict__ w,
                                            const float* __restrict__ scale_inv,
                                            __nv_bfloat16* __restrict__ out, int N, int K,
                                            int R, int il) {
    pdl_trigger();
    pdl_wait();
    const size_t i8 = (size_t)blockIdx.x * blockDim.x + threadIdx.x;  // group of 8 codes
    const size_t total8 = (size_t)N * K / 8;
    if (i8 >= total8) return;
    const size_t e = i8 * 8;
    const int n = (int)(e / K), k = (int)(e % K);
    const float s = scale_inv[(size_t)fp8_scale_row(n, il, R) * ((K + 127) / 128) + k / 128];
    const uint2 v = *reinterpret_cast<const uint2*>(w + e);
    const unsigned words[2] = {v.x, v.y};
    __align__(16) __nv_bfloat162 o[4];
#pragma unroll
    for (int j = 0; j < 2; ++j) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const __half2_raw hr = __nv_cvt_fp8x2_to_halfraw2(
                (unsigned short)(h ? words[j] >> 16 : words[j] & 0xffff), __NV_E4M3);
            const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&hr));
            o[2 * j + h] = __floats2bfloat162_rn(f.x * s, f.y * s);
        }
    }
    *reinterpret_cast<uint4*>(out + e) = *reinterpret_cast<const uint4*>(o);
}
