// Skinny GEMM for decode (the tiles and epilogues: skinny_tiles.cuh), on a bulk-copy
// (TMA) pipeline. One extra producer warp streams the block's 16 weight rows into a ring of
// shared-memory stages with cp.async.bulk (the copy engine moves the bytes; no thread
// issues a load per 16 bytes) and mbarriers, so each block keeps `stages` x 16 KB in
// flight, and the 8 multiplying warps only read shared memory. A register pipeline (each
// warp loading its own weights, two chunks in flight) topped out well below the copy
// ceiling; engine/PERF-LOG.md step 12 has the numbers. `stages` (2..TM_MAX_STAGES) is a
// kernel argument so that one build serves every ring depth `Tuning` picks: fewer stages
// fit more blocks per SM, and grids with under two blocks per SM (o_proj, down) take a
// deeper ring (ops::skinny_plan). A stage holds 1 KB of each row: 8 chunks of 128 bytes,
// chunk i * 8 + w for warp w, the chunk order and registers the tiles' mma and load_x
// expect. The producer never waits on the previous kernel (it reads only weights); the
// others wait before they read x.
// The ring itself (barriers, stages, producer and consumer steps): bulk_ring.cuh.

// The norm epilogue's words (NormIo, the `_norm` kernels) in dynamic shared memory, right
// behind the ring.
__device__ __forceinline__ float* norm_epi(int stages) {
    extern __shared__ __align__(128) unsigned char ring[];
    return reinterpret_cast<float*>(ring + stages * TM_STAGE_BYTES);
}

// The persistent pipeline's producer warp: block b's tiles b, b + gridDim.x, ... of w [N,
// row_bytes], stage after stage, the ring running on across tiles.
template <class Pos>
__device__ __forceinline__ void produce_tiles(unsigned char* ring, unsigned long long* full,
                                              unsigned long long* empty,
                                              const unsigned char* w, int N, int row_bytes,
                                              int stages, int tiled) {
    unsigned long long policy;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    const unsigned ntiles = (N + 15) / 16;
    const int nst = (row_bytes + TM_ROW_BYTES - 1) / TM_ROW_BYTES;
    Pos pos;
    for (unsigned tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
        const int n0 = (int)tile * 16, rows = min(16, N - n0);
        const unsigned char* tb = w + (size_t)n0 * row_bytes;
        for (int k = 0; k < nst; ++k, pos.next(stages))
            produce_stage(ring, full, empty, pos, k, stages, row_bytes, rows, tb, tiled, policy);
    }
}

// The pipeline (`_persistent` entry points): a grid of at most the blocks that fit at once,
// block b taking 16-row tiles b, b + gridDim.x, ... The ring and its barriers run on
// across the block's tiles (the ring position counts all their stages), so the producer
// streams the next tile's first stages while the warps finish and store this one: no ring
// refill and no block launch per tile (a block per tile measured slower, engine/PERF-LOG.md
// step 20). make(t) builds tile t's Tile. Block = TM_THREADS: warps 0..7 multiply, warp 8
// copies. Dynamic shared memory: stages * TM_STAGE_BYTES (the launcher raises the kernel's
// limit), then the norm epilogue's words and staged x where the kernel has them. Rows past
// N are not copied: their stale shared memory only reaches their own outputs, which are
// not stored. NORM: a `_norm` kernel, with decode's RMSNorm folded into its epilogue as io
// says (skinny_norm.cuh); the plain kernels compile without any of it.
template <bool NORM, class Pos, class MakeTile, class Out>
__device__ __forceinline__ void skinny_pipeline_bulk_tiles(const MakeTile& make,
                                                           Out* __restrict__ y, int M, int N,
                                                           int stages, int tiled,
                                                           const NormIo& io) {
    using Tile = decltype(make(0u));
    extern __shared__ __align__(128) unsigned char ring[];
    __shared__ __align__(8) unsigned long long full[TM_MAX_STAGES], empty[TM_MAX_STAGES];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const unsigned ntiles = (N + 15) / 16;
    const Tile first = make(blockIdx.x);
    const int row_bytes = first.row_bytes();
    const int nst = (row_bytes + TM_ROW_BYTES - 1) / TM_ROW_BYTES;
    ring_init(full, empty, stages);
    if (warp == SG_WARPS) {
        produce_tiles<Pos>(ring, full, empty, first.bytes(), N, row_bytes, stages, tiled);
        return;
    }
    typename Tile::Stage st;
    pdl_wait();  // x comes from the previous kernel
    if constexpr (NORM) norm_prefetch_scale(io, M, norm_epi(stages));
    first.prepare();
    TRACE_MARK(2);
    Pos pos;
    for (unsigned tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
        const Tile t = make(tile);
        // After the barrier that ended the last tile's store: its words are read.
        if constexpr (NORM) norm_prefetch_residual(io, y, M, N, t.n0, norm_epi(stages));
        float c[4] = {0.f, 0.f, 0.f, 0.f};
        for (int k = 0; k < nst; ++k, pos.next(stages)) {
            consume_stage(t, st, c, ring, full, empty, pos, k, stages);
            // The block timeline's "first stage multiplied" (its x and weights arrived):
            // compiles to nothing outside trace builds.
            if (k == 0 && tile == blockIdx.x) TRACE_MARK(4);
        }
        if constexpr (NORM)
            store_out_norm(c, y, M, N, t.K, t.n0, io, norm_epi(stages));
        else
            store_out(c, y, M, N, t.n0);
        // The next tile's fragments go where this one's store still reads.
        if (tile + gridDim.x < ntiles) consumers_sync();
    }
    TRACE_MARK(3);
}

// The entry points. NORM_IO_OF(true / false): the `_norm` kernels' epilogue io, or none;
// EXTRA: NORM_PARAMS after the ring's arguments, or nothing.
#define NORM_IO_OF(NORM) NORM_IO_##NORM
#define NORM_IO_false NO_NORM
#define NORM_IO_true NORM_IO
#define NO_EXTRA
#define NORM_EXTRA , NORM_PARAMS

// bf16: f32 output, and SwiGLU (gate|up interleaved, bf16 act). No `_norm` form: bf16
// steps keep their norm kernels (engine/PERF-LOG.md step 52).
extern "C" __global__ void __launch_bounds__(TM_THREADS, 3)
    skinny_gemm_bf16_bulk_persistent(const __nv_bfloat16* __restrict__ x,
                                     const __nv_bfloat16* __restrict__ w, float* __restrict__ y,
                                     int M, int N, int K, int stages, int tiled) {
    pdl_trigger();
    skinny_pipeline_bulk_tiles<false, RingPos>(
        [&](unsigned t) { return TileBf16(x, w, M, N, K, t); }, y, M, N, stages, tiled, NO_NORM);
}
extern "C" __global__ void __launch_bounds__(TM_THREADS, 3)
    skinny_gemm_bf16_swiglu_bulk_persistent(const __nv_bfloat16* __restrict__ x,
                                            const __nv_bfloat16* __restrict__ w,
                                            __nv_bfloat16* __restrict__ act, int M, int N, int K,
                                            int stages, int tiled) {
    pdl_trigger();
    skinny_pipeline_bulk_tiles<false, RingPos>(
        [&](unsigned t) { return TileBf16(x, w, M, N, K, t); }, act, M, N, stages, tiled,
        NO_NORM);
}

// The FP8 kernels with x staged in shared memory (TileFp8S) keep it behind the ring's
// `stages` slots (and, in the `_norm` kernels, the norm epilogue's words): the launcher adds
// M x xs_row_units(K) x 16 bytes to the dynamic shared memory.
__device__ __forceinline__ uint4* staged_x(int stages) {
    extern __shared__ __align__(128) unsigned char ring[];
    return reinterpret_cast<uint4*>(ring + stages * TM_STAGE_BYTES);
}
__device__ __forceinline__ uint4* staged_x_norm(int stages, const NormIo& io, int M) {
    return reinterpret_cast<uint4*>(reinterpret_cast<unsigned char*>(norm_epi(stages)) +
                                    norm_epi_bytes(io, M));
}

// The two FP8 entry points of one tile kind (SUF): f32 output, and SwiGLU (gate|up
// interleaved, act of type AT). TILE(t) builds tile t from the kernel's arguments; POS is
// how the ring tracks its stages (RingPos or RingDiv: bulk_ring.cuh says which and why).
#define TM_FP8_ENTRIES(SUF, TILE, NORM, EXTRA, XT, AT, POS)                                    \
    extern "C" __global__ void __launch_bounds__(TM_THREADS, 3)                                \
        skinny_gemm_fp8_bulk_persistent##SUF(                                                  \
            const XT* __restrict__ x, const unsigned char* __restrict__ w,                     \
            const float* __restrict__ scale_inv, float* __restrict__ y, int M, int N, int K,   \
            int R, int il, int stages, int tiled EXTRA) {                                      \
        pdl_trigger();                                                                         \
        skinny_pipeline_bulk_tiles<NORM, POS>([&](unsigned t) { return TILE(t); }, y, M, N,    \
                                              stages, tiled, NORM_IO_OF(NORM));                \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(TM_THREADS, 3)                                \
        skinny_gemm_fp8_swiglu_bulk_persistent##SUF(                                           \
            const XT* __restrict__ x, const unsigned char* __restrict__ w,                     \
            const float* __restrict__ scale_inv, AT* __restrict__ act, int M, int N, int K,    \
            int R, int il, int stages, int tiled EXTRA) {                                      \
        pdl_trigger();                                                                         \
        skinny_pipeline_bulk_tiles<NORM, POS>([&](unsigned t) { return TILE(t); }, act, M, N,  \
                                              stages, tiled, NORM_IO_OF(NORM));                \
    }

// x loaded through L1 at each stage (TileFp8), or staged whole (TileFp8S, one row: the
// launcher stages x at batch 1 only).
#define TM_TILE_FP8(t) TileFp8(x, w, scale_inv, M, N, K, R, il, t)
#define TM_TILE_FP8S(t) TileFp8S(x, w, scale_inv, M, N, K, R, il, t, staged_x(stages))
#define TM_TILE_FP8S_NORM(t) \
    TileFp8S(x, w, scale_inv, M, N, K, R, il, t, staged_x_norm(stages, NORM_IO, M))
#define BF16 __nv_bfloat16
TM_FP8_ENTRIES(, TM_TILE_FP8, false, NO_EXTRA, BF16, BF16, RingDiv)
TM_FP8_ENTRIES(_xs, TM_TILE_FP8S, false, NO_EXTRA, BF16, BF16, RingPos)
TM_FP8_ENTRIES(_norm, TM_TILE_FP8, true, NORM_EXTRA, BF16, BF16, RingDiv)
TM_FP8_ENTRIES(_xs_norm, TM_TILE_FP8S_NORM, true, NORM_EXTRA, BF16, BF16, RingPos)

// x read as f16 and SwiGLU's act stored as f16 (TileFp8H; batches 2-8 of FP8 weights, the
// engine's step/half_x.rs); no norm epilogue.
#define TM_XB reinterpret_cast<const __nv_bfloat16*>(x)
#define TM_TILE_FP8H(t) TileFp8H(TM_XB, w, scale_inv, M, N, K, R, il, t)
TM_FP8_ENTRIES(_xh, TM_TILE_FP8H, false, NO_EXTRA, __half, __half, RingDiv)
