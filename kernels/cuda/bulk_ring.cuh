// Included in front of skinny_bulk.cu (sources.rs) and the lab's experiments built on its
// ring (kernels/lab/src/sources.rs): the bulk-copy ring.
// A producer warp streams weights into a ring of shared-memory stages with cp.async.bulk
// and mbarriers; the 8 multiplying warps wait on a stage's `full` barrier, read it, and
// hand it back through `empty`. skinny_bulk.cu's header says why.
#pragma once

#define TM_MAX_STAGES 8
#define TM_ROW_BYTES 1024
// Rows 16 bytes apart from a multiple of 128: the 8 lanes of one 16-byte shared load phase
// (rows g, g + 1; quads t = 0..3) then hit 8 different bank groups.
#define TM_ROW_STRIDE (TM_ROW_BYTES + 16)
#define TM_STAGE_BYTES (16 * TM_ROW_STRIDE)
#define TM_THREADS ((SG_WARPS + 1) * 32)

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
// mbar_wait with a test first, which never suspends the warp. ptxas places independent loads
// that come before the wait in the source (the stage's x and scales) right behind its first
// probe; behind a try_wait they issue only once the weights have landed, or it times out
// (seen in the SASS of the FP8 `_xh` kernels under RingPos, which has no division before
// the wait; loads placed before the wait did not bring those kernels' speed back: RingPos).
__device__ __forceinline__ void mbar_wait_tested(unsigned long long* b, unsigned parity) {
    asm volatile(
        "{\n"
        ".reg .pred done;\n"
        "mbarrier.test_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@done bra.uni landed;\n"
        "retry:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra retry;\n"
        "landed:\n"
        "}\n" ::"r"(smem_addr(b)),
        "r"(parity)
        : "memory");
}
template <bool TESTED>
__device__ __forceinline__ void ring_wait(unsigned long long* b, unsigned parity) {
    if constexpr (TESTED)
        mbar_wait_tested(b, parity);
    else
        mbar_wait(b, parity);
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

// Chunk ch's weights from its stage into the tile's Stage registers: this thread's 32
// bytes of rows g and g + 8 (chunks past the row end read zeros). `warp`: the thread's
// multiplying warp in its ring's group (a lab kernel holds several rings per block).
template <class Stage>
__device__ __forceinline__ void load_w_stage(Stage& s, const unsigned char* stage, int ch,
                                             int pieces, int warp) {
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const unsigned char* ra = stage + g * TM_ROW_STRIDE + warp * 128 + t * 32;
    const uint4 z = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int j = 0; j < 2; ++j) {
        const bool ok = (ch * 4 + t) * 2 + j < pieces;
        s.a[j] = ok ? *reinterpret_cast<const uint4*>(ra + 16 * j) : z;
        s.b[j] = ok ? *reinterpret_cast<const uint4*>(ra + 8 * TM_ROW_STRIDE + 16 * j) : z;
    }
}

// The ring's barriers: full[s] completes when stage s's copies land (one arrival, the
// producer's, with the byte count), empty[s] when the 8 multiplying warps have read it.
// Ends in a block barrier, after which every thread may use them.
__device__ __forceinline__ void ring_init(unsigned long long* full, unsigned long long* empty,
                                          int stages) {
    if (threadIdx.x == 0) {
        for (int s = 0; s < stages; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], SG_WARPS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
}

// Where stage i of the ring's life sits: slot i % stages, round parity (i / stages) & 1.
// `stages` is a kernel argument, so computing them from i takes an integer division (~20
// dependent instructions) at every stage of every warp, where ncu found a sixth of the
// FP8 batch-1 gate|up GEMM's warp samples. RingPos advances them one stage at a time
// instead, and waits with a test first (mbar_wait_tested). It made batch-1 steps faster
// in both weight types, and FP8 batch-8 steps slower, for a reason not understood
// (engine/PERF-LOG.md step 55). So the FP8 kernels that load x from global memory at every
// stage (batches 2-8: plain, `_norm`, `_xh`) keep RingDiv, the form measured before; the
// bf16 kernels and the FP8 ones with x staged in shared memory (batch 1) take RingPos.
struct RingPos {
    static constexpr bool TESTED = true;
    int n = 0, s = 0;
    unsigned ph = 0;
    // Whether the slot was filled before (the producer then waits for it to be emptied).
    __device__ __forceinline__ bool reused(int stages) const { return n >= stages; }
    __device__ __forceinline__ int slot(int) const { return s; }
    __device__ __forceinline__ unsigned parity(int) const { return ph; }
    // The parity of the round before (the producer waits for the warps to have emptied it).
    __device__ __forceinline__ unsigned prev_parity(int) const { return ph ^ 1; }
    __device__ __forceinline__ void next(int stages) {
        ++n;
        if (++s == stages) {
            s = 0;
            ph ^= 1;
        }
    }
};
struct RingDiv {
    static constexpr bool TESTED = false;
    int i = 0;
    __device__ __forceinline__ bool reused(int stages) const { return i >= stages; }
    __device__ __forceinline__ int slot(int stages) const { return i % stages; }
    __device__ __forceinline__ unsigned parity(int stages) const { return (i / stages) & 1; }
    __device__ __forceinline__ unsigned prev_parity(int stages) const {
        return (i / stages - 1) & 1;
    }
    __device__ __forceinline__ void next(int) { ++i; }
};

// The producer warp's stage at pos in the ring's life (k: the stage's place in its tile's
// rows):
// wait until the warps have emptied the slot, then copy bytes k * TM_ROW_BYTES.. of the
// tile's `rows` rows into it, each lane one row. `tile` points at the tile's first row.
// Weights in the checkpoint's row-major layout (tiled = 0) have each row's piece
// row_bytes from the next; tiled weights (ops::tile_weights, tiled = 1) hold a tile's
// stages one after another, each stage's `rows` pieces side by side, so that a stage is
// one contiguous run of bytes, which the ring streams faster (engine/PERF-LOG.md step 34).
template <class Pos>
__device__ __forceinline__ void produce_stage(unsigned char* ring, unsigned long long* full,
                                              unsigned long long* empty, const Pos& pos, int k,
                                              int stages, int row_bytes, int rows,
                                              const unsigned char* tile, int tiled,
                                              unsigned long long policy) {
    const int lane = threadIdx.x & 31;
    const int s = pos.slot(stages);
    if (pos.reused(stages)) ring_wait<Pos::TESTED>(&empty[s], pos.prev_parity(stages));
    const int off = k * TM_ROW_BYTES;
    const int bytes = min(TM_ROW_BYTES, row_bytes - off);
    if (lane == 0) mbar_arrive_tx(&full[s], bytes * rows);
    __syncwarp();
    const unsigned char* src = tiled ? tile + (size_t)rows * off + (size_t)lane * bytes
                                     : tile + (size_t)lane * row_bytes + off;
    if (lane < rows)
        bulk_load(ring + s * TM_STAGE_BYTES + lane * TM_ROW_STRIDE, src, bytes, &full[s],
                  policy);
}

// A multiplying warp's stage at pos (k: its place in the tile): x of chunk k * 8 + warp, the
// weights from the ring once they have landed, the slot handed back, the MMAs.
template <class Tile, class Pos>
__device__ __forceinline__ void consume_stage(const Tile& tile, typename Tile::Stage& st,
                                              float (&c)[4], const unsigned char* ring,
                                              unsigned long long* full,
                                              unsigned long long* empty, const Pos& pos,
                                              int k, int stages) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int s = pos.slot(stages), ch = k * SG_WARPS + warp;
    tile.load_x(st, ch);
    ring_wait<Pos::TESTED>(&full[s], pos.parity(stages));
    load_w_stage(st, ring + s * TM_STAGE_BYTES, ch, tile.pieces(), warp);
    __syncwarp();  // every lane's shared reads are done before the stage is handed back
    if (lane == 0) mbar_arrive(&empty[s]);
    tile.mma(c, st);
}
