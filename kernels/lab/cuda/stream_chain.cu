// Experiment (bin/stream_chain.rs): a chain of skinny GEMMs as ONE persistent kernel whose
// producer warps stream weights continuously across GEMM boundaries, while the multiplying
// warps meet at a grid-wide barrier between GEMMs (GEMM g + 1 reads what GEMM g wrote, as
// a decode step's would after a norm). The weights do not depend on the activations, so
// the ring keeps filling through the barrier: the question is how much of the per-kernel
// drain and ramp of a launch chain this removes. Built on skinny_bulk.cu's ring
// (ring_init, produce_stage, consume_stage) and skinny_tiles.cuh's tiles; compiled after
// them by the test.

// One GEMM of the chain: y [M, N] f32 = x [M, K] bf16 . w [N, K] (bf16, or e4m3 codes with
// scale_inv per (R rows, 128 k); il as TileFp8). 48 bytes; the test packs it as 6 u64.
struct ChainGemm {
    const unsigned char* w;
    const float* scale_inv;
    const __nv_bfloat16* x;
    float* y;
    int N, K, R, il;
};

__device__ __forceinline__ unsigned ld_acquire_gpu(const unsigned* p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

template <bool FP8>
struct ChainTile;
template <>
struct ChainTile<false> {
    using T = TileBf16;
    __device__ static T make(const ChainGemm& d, int M, unsigned tile) {
        return TileBf16(d.x, reinterpret_cast<const __nv_bfloat16*>(d.w), M, d.N, d.K, tile);
    }
    __device__ static int row_bytes(const ChainGemm& d) { return d.K * 2; }
};
template <>
struct ChainTile<true> {
    using T = TileFp8;
    __device__ static T make(const ChainGemm& d, int M, unsigned tile) {
        return TileFp8(d.x, d.w, d.scale_inv, M, d.N, d.K, d.R, d.il, tile);
    }
    __device__ static int row_bytes(const ChainGemm& d) { return d.K; }
};

// Block b takes GEMM g's tiles ((b - off_g) mod grid) + j * grid. rotate = 1: off_g = tiles
// of the GEMMs before g (mod grid), so a block with fewer tiles in one GEMM gets the first of
// the next; rotate = 0: off_g = 0, so tile t runs on block t, and the blocks the hardware
// spreads over the SMs first (b mod SMs) share a small GEMM's tiles evenly between SMs.
__device__ __forceinline__ unsigned first_tile(unsigned off) {
    return (blockIdx.x + gridDim.x - off) % gridDim.x;
}

// `bar` counts blocks done per GEMM (zeroed before the launch): GEMM g's multiplying warps
// start once it reaches g * gridDim.x. Every block must be resident (grid <= occupancy).
template <bool FP8>
__device__ __forceinline__ void chain_pipeline(const ChainGemm* __restrict__ gs, int n, int M,
                                               unsigned* bar, int stages, int rotate,
                                               int backoff) {
    using CT = ChainTile<FP8>;
    extern __shared__ __align__(128) unsigned char ring[];
    __shared__ __align__(8) unsigned long long full[TM_MAX_STAGES], empty[TM_MAX_STAGES];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const unsigned G = gridDim.x;
    ring_init(full, empty, stages);
    if (warp == SG_WARPS) {
        unsigned long long policy;
        asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
        RingPos pos;
        unsigned off = 0;
        for (int g = 0; g < n; ++g) {
            const ChainGemm d = gs[g];
            const int row_bytes = CT::row_bytes(d);
            const int nst = (row_bytes + TM_ROW_BYTES - 1) / TM_ROW_BYTES;
            const unsigned ntiles = (d.N + 15) / 16;
            for (unsigned tile = first_tile(off); tile < ntiles; tile += G) {
                const int n0 = (int)tile * 16, rows = min(16, d.N - n0);
                const unsigned char* tb = d.w + (size_t)n0 * row_bytes;
                for (int k = 0; k < nst; ++k, pos.next(stages))
                    produce_stage(ring, full, empty, pos, k, stages, row_bytes, rows, tb, 0,
                                  policy);
            }
            if (rotate) off = (off + ntiles) % G;
        }
        return;
    }
    typename CT::T::Stage st;
    RingPos pos;
    unsigned off = 0;
    for (int g = 0; g < n; ++g) {
        const ChainGemm d = gs[g];
        if (g > 0) {
            if (threadIdx.x == 0)
                while (ld_acquire_gpu(bar) < (unsigned)g * G)
                    if (backoff) __nanosleep(backoff);
            consumers_sync();
        }
        const int nst = (CT::row_bytes(d) + TM_ROW_BYTES - 1) / TM_ROW_BYTES;
        const unsigned ntiles = (d.N + 15) / 16;
        for (unsigned tile = first_tile(off); tile < ntiles; tile += G) {
            const typename CT::T t = CT::make(d, M, tile);
            float c[4] = {0.f, 0.f, 0.f, 0.f};
            for (int k = 0; k < nst; ++k, pos.next(stages))
                consume_stage(t, st, c, ring, full, empty, pos, k, stages);
            store_out(c, d.y, M, d.N, t.n0);
            consumers_sync();  // the stores are done, and red is free for the next tile
        }
        if (rotate) off = (off + ntiles) % G;
        if (threadIdx.x == 0) {
            __threadfence();
            atomicAdd(bar, 1u);
        }
    }
}

extern "C" __global__ void __launch_bounds__(TM_THREADS, 3)
    stream_chain_bf16(const ChainGemm* __restrict__ gs, int n, int M, unsigned* bar, int stages,
                      int rotate, int backoff) {
    chain_pipeline<false>(gs, n, M, bar, stages, rotate, backoff);
}

extern "C" __global__ void __launch_bounds__(TM_THREADS, 3)
    stream_chain_fp8(const ChainGemm* __restrict__ gs, int n, int M, unsigned* bar, int stages,
                     int rotate, int backoff) {
    chain_pipeline<true>(gs, n, M, bar, stages, rotate, backoff);
}

