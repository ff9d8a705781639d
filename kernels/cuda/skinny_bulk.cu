// Skinny GEMM for decode, the bulk-copy (TMA) pipeline (the tiles and epilogues:
// skinny_tiles.cuh). The register pipeline (skinny_gemm.cu) keeps at most two chunks per
// warp in flight, 64-128 bytes per thread, and tops out at ~3.75 TB/s (bf16) of the 4.30
// TB/s copy ceiling. Here one extra
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
// The ring itself (barriers, stages, producer and consumer steps): bulk_ring.cuh.

// The norm epilogue's words (NormIo, the `_norm` kernels) in dynamic shared memory, right
// behind the ring.
__device__ __forceinline__ float* norm_epi(int stages) {
    extern __shared__ __align__(128) unsigned char ring[];
    return reinterpret_cast<float*>(ring + stages * TM_STAGE_BYTES);
}

// Block = TM_THREADS: warps 0..7 multiply, warp 8 copies. Dynamic shared memory:
// stages * TM_STAGE_BYTES (the launcher raises the kernel's limit). Rows past N are not
// copied: their stale shared memory only reaches their own outputs, which are not stored.
// NORM: a `_norm` kernel, with decode's RMSNorm folded into its epilogue as io says
// (skinny_norm.cuh); the plain kernels compile without any of it.
template <bool NORM, class Pos, class Tile, class Out>
__device__ __forceinline__ void skinny_pipeline_bulk(const Tile& tile, Out* __restrict__ y, int M,
                                                     int N, int n0, int stages, int tiled,
                                                     const NormIo& io) {
    extern __shared__ __align__(128) unsigned char ring[];
    __shared__ __align__(8) unsigned long long full[TM_MAX_STAGES], empty[TM_MAX_STAGES];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int row_bytes = tile.row_bytes();
    const int nst = (row_bytes + TM_ROW_BYTES - 1) / TM_ROW_BYTES;
    ring_init(full, empty, stages);
    if (warp == SG_WARPS) {
        unsigned long long policy;
        asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
        const int rows = min(16, N - n0);
        const unsigned char* tb = tile.bytes() + (size_t)n0 * row_bytes;
        Pos pos;
        for (int k = 0; k < nst; ++k, pos.next(stages))
            produce_stage(ring, full, empty, pos, k, stages, row_bytes, rows, tb, tiled, policy);
        return;
    }
    float c[4] = {0.f, 0.f, 0.f, 0.f};
    typename Tile::Stage st;
    pdl_wait();  // x comes from the previous kernel
    if constexpr (NORM) {
        norm_prefetch_scale(io, M, norm_epi(stages));
        norm_prefetch_residual(io, y, M, N, n0, norm_epi(stages));
    }
    tile.prepare();
    Pos pos;
    for (int k = 0; k < nst; ++k, pos.next(stages)) {
        consume_stage(tile, st, c, ring, full, empty, pos, k, stages);
        if (k == 0) TRACE_MARK(4);  // first stage multiplied (trace builds only)
    }
    if constexpr (NORM)
        store_out_norm(c, y, M, N, tile.K, n0, io, norm_epi(stages));
    else
        store_out(c, y, M, N, n0);
    TRACE_MARK(3);
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

// The persistent form (`_persistent` entry points, `Tuning::bulk_persistent`): a grid of at
// most the blocks that fit at once, block b taking tiles b, b + gridDim.x, ... The ring and
// its barriers run on across the block's tiles (the ring position counts all their stages), so
// the producer streams the next tile's first stages while the warps finish and store this
// one: no ring refill and no block launch per tile. make(t) builds tile t's Tile. The
// default since session 7, for FP8 at batch 1 since session 8 (with x staged once per
// block; Tuning::fp8_persistent_rows); with a grid of one block per tile this does what
// skinny_pipeline_bulk does.
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

// The entry points: each kernel in a plain form and a `_norm` one (NORM_PARAMS after the
// ring's arguments, EXTRA). NORM_IO_OF(true / false): the epilogue's io, or none.
#define NORM_IO_OF(NORM) NORM_IO_##NORM
#define NORM_IO_false NO_NORM
#define NORM_IO_true NORM_IO

// The bf16 entry points: one-tile and persistent, each with f32 output and with SwiGLU
// (gate|up interleaved, bf16 act).
#define TM_BF16_ENTRIES(SUF, NORM, EXTRA)                                                      \
    extern "C" __global__ void __launch_bounds__(TM_THREADS, 3)                                \
        skinny_gemm_bf16_bulk##SUF(const __nv_bfloat16* __restrict__ x,                        \
                                   const __nv_bfloat16* __restrict__ w, float* __restrict__ y, \
                                   int M, int N, int K, int stages, int tiled EXTRA) {         \
        pdl_trigger();                                                                         \
        const TileBf16 tile(x, w, M, N, K, blockIdx.x);                                        \
        skinny_pipeline_bulk<NORM, RingPos>(tile, y, M, N, tile.n0, stages, tiled, NORM_IO_OF(NORM));   \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(TM_THREADS, 3)                                \
        skinny_gemm_bf16_swiglu_bulk##SUF(                                                     \
            const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,          \
            __nv_bfloat16* __restrict__ act, int M, int N, int K, int stages, int tiled EXTRA) { \
        pdl_trigger();                                                                         \
        const TileBf16 tile(x, w, M, N, K, blockIdx.x);                                        \
        skinny_pipeline_bulk<NORM, RingPos>(tile, act, M, N, tile.n0, stages, tiled, NORM_IO_OF(NORM)); \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(TM_THREADS, 3)                                \
        skinny_gemm_bf16_bulk_persistent##SUF(                                                 \
            const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,          \
            float* __restrict__ y, int M, int N, int K, int stages, int tiled EXTRA) {         \
        pdl_trigger();                                                                         \
        skinny_pipeline_bulk_tiles<NORM, RingPos>([&](unsigned t) { return TileBf16(x, w, M, N, K, t); }, \
                                         y, M, N, stages, tiled, NORM_IO_OF(NORM));            \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(TM_THREADS, 3)                                \
        skinny_gemm_bf16_swiglu_bulk_persistent##SUF(                                          \
            const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,          \
            __nv_bfloat16* __restrict__ act, int M, int N, int K, int stages, int tiled EXTRA) { \
        pdl_trigger();                                                                         \
        skinny_pipeline_bulk_tiles<NORM, RingPos>([&](unsigned t) { return TileBf16(x, w, M, N, K, t); }, \
                                         act, M, N, stages, tiled, NORM_IO_OF(NORM));          \
    }

#define NO_EXTRA
#define NORM_EXTRA , NORM_PARAMS
TM_BF16_ENTRIES(, false, NO_EXTRA)
TM_BF16_ENTRIES(_norm, true, NORM_EXTRA)

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

// The four FP8 entry points of one tile kind (SUF): one-tile and persistent, each with f32
// output and with SwiGLU (gate|up interleaved, bf16 act). TILE(t) builds tile t from the
// kernel's arguments; POS is how the ring tracks its stages (RingPos or RingDiv).
#define TM_FP8_ENTRIES(SUF, TILE, NORM, EXTRA, XT, AT, POS)                                    \
    extern "C" __global__ void __launch_bounds__(TM_THREADS, 3)                                \
        skinny_gemm_fp8_bulk##SUF(const XT* __restrict__ x,                         \
                                  const unsigned char* __restrict__ w,                         \
                                  const float* __restrict__ scale_inv, float* __restrict__ y,  \
                                  int M, int N, int K, int R, int il, int stages,              \
                                  int tiled EXTRA) {                                           \
        pdl_trigger();                                                                         \
        const auto tile = TILE(blockIdx.x);                                                    \
        skinny_pipeline_bulk<NORM, POS>(tile, y, M, N, tile.n0, stages, tiled, NORM_IO_OF(NORM));   \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(TM_THREADS, 3)                                \
        skinny_gemm_fp8_swiglu_bulk##SUF(const XT* __restrict__ x,                  \
                                         const unsigned char* __restrict__ w,                  \
                                         const float* __restrict__ scale_inv,                  \
                                         AT* __restrict__ act, int M, int N, int K, \
                                         int R, int il, int stages, int tiled EXTRA) {         \
        pdl_trigger();                                                                         \
        const auto tile = TILE(blockIdx.x);                                                    \
        skinny_pipeline_bulk<NORM, POS>(tile, act, M, N, tile.n0, stages, tiled, NORM_IO_OF(NORM)); \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(TM_THREADS, 3)                                \
        skinny_gemm_fp8_bulk_persistent##SUF(                                                  \
            const XT* __restrict__ x, const unsigned char* __restrict__ w,          \
            const float* __restrict__ scale_inv, float* __restrict__ y, int M, int N, int K,   \
            int R, int il, int stages, int tiled EXTRA) {                                      \
        pdl_trigger();                                                                         \
        skinny_pipeline_bulk_tiles<NORM, POS>([&](unsigned t) { return TILE(t); }, y, M, N, stages, \
                                         tiled, NORM_IO_OF(NORM));                             \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(TM_THREADS, 3)                                \
        skinny_gemm_fp8_swiglu_bulk_persistent##SUF(                                           \
            const XT* __restrict__ x, const unsigned char* __restrict__ w,          \
            const float* __restrict__ scale_inv, AT* __restrict__ act, int M,       \
            int N, int K, int R, int il, int stages, int tiled EXTRA) {                        \
        pdl_trigger();                                                                         \
        skinny_pipeline_bulk_tiles<NORM, POS>([&](unsigned t) { return TILE(t); }, act, M, N,       \
                                         stages, tiled, NORM_IO_OF(NORM));                     \
    }

// x loaded through L1 at each stage (TileFp8), or staged whole (TileFp8S).
#define TM_TILE_FP8(t) TileFp8(x, w, scale_inv, M, N, K, R, il, t)
#define TM_TILE_FP8S(t) TileFp8S(x, w, scale_inv, M, N, K, R, il, t, staged_x(stages))
#define TM_TILE_FP8S_NORM(t) \
    TileFp8S(x, w, scale_inv, M, N, K, R, il, t, staged_x_norm(stages, NORM_IO, M))
#define BF16 __nv_bfloat16
TM_FP8_ENTRIES(, TM_TILE_FP8, false, NO_EXTRA, BF16, BF16, RingDiv)
TM_FP8_ENTRIES(_xs, TM_TILE_FP8S, false, NO_EXTRA, BF16, BF16, RingPos)
TM_FP8_ENTRIES(_norm, TM_TILE_FP8, true, NORM_EXTRA, BF16, BF16, RingDiv)
TM_FP8_ENTRIES(_xs_norm, TM_TILE_FP8S_NORM, true, NORM_EXTRA, BF16, BF16, RingPos)

// x read as f16 and SwiGLU's act stored as f16 (`Tuning::fp8_x_f16`, TileFp8H /
// TileFp8SH); no norm epilogue.
#define TM_XB reinterpret_cast<const __nv_bfloat16*>(x)
#define TM_TILE_FP8H(t) TileFp8H(TM_XB, w, scale_inv, M, N, K, R, il, t)
#define TM_TILE_FP8SH(t) TileFp8SH(TM_XB, w, scale_inv, M, N, K, R, il, t, staged_x(stages))
TM_FP8_ENTRIES(_xh, TM_TILE_FP8H, false, NO_EXTRA, __half, __half, RingDiv)
TM_FP8_ENTRIES(_xs_xh, TM_TILE_FP8SH, false, NO_EXTRA, __half, __half, RingPos)
