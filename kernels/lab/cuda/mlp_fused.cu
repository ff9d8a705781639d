// Experiment (lab only; kernels/lab/src/bin/mlp_fused.rs): decode's whole MLP at one token
// row in one kernel, gate|up, SwiGLU and down, with no grid-wide hand-off between the two
// GEMMs (engine/PERF-LOG.md step 57). Measured: no faster than the two GEMMs, so the engine does
// not run it; kept so the measurement can be run again.
//
// Down is split over the intermediate dimension instead of over its output rows. A
// gate|up tile (16 interleaved rows: 8 gate, 8 up; ops::interleave_gate_up) yields 8 act
// values, and those are all down needs to add its share of every output:
// y[o] += sum_j Wd[o, 8c + j] * act[8c + j] for act columns 8c..8c+7. So after each gate|up
// tile the producer streams that tile's down chunk, Wd[:, 8c..8c+8] re-laid contiguously
// ([hidden][8] bf16, 64 KB at hidden 4096; the test's `down_column_chunks`), through the
// same ring, and each multiplying thread keeps partial sums for its outputs in registers
// across the block's tiles. At the end every block adds its partials into y (the residual
// stream, so the MLP's residual add is done too), in no fixed order.
//
// Block = TM_THREADS: warps 0..7 multiply, warp 8 copies; `stages` ring stages of dynamic
// shared memory. Thread t of the multiplying warps owns outputs d * 1024 + j * 256 + t of
// down stage d (j = 0..3): hidden <= MF_MAX_HIDDEN keeps them in 16 registers.
#define MF_COLS 8
#define MF_STAGE_OUTS (TM_STAGE_BYTES / TM_ROW_STRIDE * TM_ROW_BYTES / (MF_COLS * 2))
#define MF_MAX_DOWN_STAGES 4
#define MF_MAX_HIDDEN (MF_MAX_DOWN_STAGES * MF_STAGE_OUTS)
#define MF_OUTS_PER_THREAD (MF_STAGE_OUTS / (SG_WARPS * 32))
#define MF_ACC (MF_MAX_DOWN_STAGES * MF_OUTS_PER_THREAD)

// The producer's down stage d of a tile's chunk (`chunk`: hidden rows of 16 bytes): outputs
// d * 1024.. in 1 KB pieces, one per lane, at the ring's row stride.
template <class Pos>
__device__ __forceinline__ void produce_down_stage(unsigned char* ring, unsigned long long* full,
                                                   unsigned long long* empty, const Pos& pos,
                                                   int d, int stages, int hidden,
                                                   const unsigned char* chunk,
                                                   unsigned long long policy) {
    const int lane = threadIdx.x & 31;
    const int s = pos.slot(stages);
    if (pos.reused(stages)) ring_wait<Pos::TESTED>(&empty[s], pos.prev_parity(stages));
    const int bytes = min(MF_STAGE_OUTS, hidden - d * MF_STAGE_OUTS) * MF_COLS * 2;
    if (lane == 0) mbar_arrive_tx(&full[s], bytes);
    __syncwarp();
    const int off = lane * TM_ROW_BYTES;
    if (off < bytes)
        bulk_load(ring + s * TM_STAGE_BYTES + lane * TM_ROW_STRIDE,
                  chunk + (size_t)d * MF_STAGE_OUTS * MF_COLS * 2 + off,
                  min(TM_ROW_BYTES, bytes - off), &full[s], policy);
}

// A multiplying thread's down stage d: its outputs' 8 weights times act, into acc.
template <class Pos>
__device__ __forceinline__ void consume_down_stage(float (&acc)[MF_ACC],
                                                   const float (&a)[MF_COLS],
                                                   const unsigned char* ring,
                                                   unsigned long long* full,
                                                   unsigned long long* empty, const Pos& pos,
                                                   int d, int stages, int hidden) {
    const int lane = threadIdx.x & 31, s = pos.slot(stages);
    ring_wait<Pos::TESTED>(&full[s], pos.parity(stages));
    const unsigned char* st = ring + s * TM_STAGE_BYTES;
#pragma unroll
    for (int j = 0; j < MF_OUTS_PER_THREAD; ++j) {
        const int q = j * SG_WARPS * 32 + threadIdx.x;
        if (d * MF_STAGE_OUTS + q < hidden) {
            const uint4 v = *reinterpret_cast<const uint4*>(
                st + (q / 64) * TM_ROW_STRIDE + (q % 64) * (MF_COLS * 2));
            const __nv_bfloat162* w = reinterpret_cast<const __nv_bfloat162*>(&v);
            float sum = 0.f;
#pragma unroll
            for (int p = 0; p < MF_COLS / 2; ++p) {
                const float2 f = __bfloat1622float2(w[p]);
                sum = fmaf(f.x, a[2 * p], sum);
                sum = fmaf(f.y, a[2 * p + 1], sum);
            }
            acc[d * MF_OUTS_PER_THREAD + j] += sum;
        }
    }
    __syncwarp();  // every lane's shared reads are done before the stage is handed back
    if (lane == 0) mbar_arrive(&empty[s]);
}

// The block's partial sums into y. MF_RED_V4:
// through shared memory (the ring is idle once every consumer has read its last stage),
// then one 16-byte vector red per 4 outputs; MF_NO_RED (timing only, wrong values): no
// adds at all, the sums kept alive. Else one scalar red per output.
__device__ __forceinline__ void add_partials(const float (&acc)[MF_ACC], float* __restrict__ y,
                                             int K, int nds, unsigned char* ring) {
#if defined(MF_NO_RED)
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < MF_ACC; ++i) s += acc[i];
    if (s == 1234.5f) y[threadIdx.x] = s;
#elif defined(MF_RED_V4)
    float* part = reinterpret_cast<float*>(ring);
    consumers_sync();  // every warp has read its last stage
#pragma unroll
    for (int d = 0; d < MF_MAX_DOWN_STAGES; ++d)
#pragma unroll
        for (int j = 0; j < MF_OUTS_PER_THREAD; ++j) {
            const int o = d * MF_STAGE_OUTS + j * SG_WARPS * 32 + threadIdx.x;
            if (d < nds && o < K) part[o] = acc[d * MF_OUTS_PER_THREAD + j];
        }
    consumers_sync();
    for (int o = threadIdx.x * 4; o < K; o += SG_WARPS * 32 * 4) {
        const float4 v = *reinterpret_cast<const float4*>(part + o);
        asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(y + o), "f"(v.x),
                     "f"(v.y), "f"(v.z), "f"(v.w)
                     : "memory");
    }
#else
#pragma unroll
    for (int d = 0; d < MF_MAX_DOWN_STAGES; ++d)
#pragma unroll
        for (int j = 0; j < MF_OUTS_PER_THREAD; ++j) {
            const int o = d * MF_STAGE_OUTS + j * SG_WARPS * 32 + threadIdx.x;
            if (d < nds && o < K) atomicAdd(&y[o], acc[d * MF_OUTS_PER_THREAD + j]);
        }
#endif
}

// x [1, K] bf16 (the normed hidden state), wgu [2 inter, K] interleaved gate|up (`tiled`:
// ops::tile_weights' layout), wd [inter / 8][hidden = K][8] (`down_column_chunks`), y
// [K] f32 (the residual, added to). Persistent: block b takes tiles b, b + gridDim.x, ...
extern "C" __global__ void __launch_bounds__(TM_THREADS, 2)
    mlp_fused_bf16(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ wgu,
                   const __nv_bfloat16* __restrict__ wd, float* __restrict__ y, int inter,
                   int K, int stages, int tiled) {
    pdl_trigger();
    extern __shared__ __align__(128) unsigned char ring[];
    __shared__ __align__(8) unsigned long long full[TM_MAX_STAGES], empty[TM_MAX_STAGES];
    __shared__ float act_s[MF_COLS];
    const int warp = threadIdx.x >> 5;
    const int N = 2 * inter, row_bytes = K * 2;
    const unsigned ntiles = N / 16;
    const int nst = (row_bytes + TM_ROW_BYTES - 1) / TM_ROW_BYTES;
    const int nds = (K + MF_STAGE_OUTS - 1) / MF_STAGE_OUTS;
    const size_t chunk_bytes = (size_t)K * MF_COLS * 2;
    ring_init(full, empty, stages);
    if (warp == SG_WARPS) {
        unsigned long long policy;
        asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
        const unsigned char* gu = reinterpret_cast<const unsigned char*>(wgu);
        const unsigned char* dw = reinterpret_cast<const unsigned char*>(wd);
        RingPos pos;
        for (unsigned tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
            const unsigned char* tb = gu + (size_t)tile * 16 * row_bytes;
            for (int k = 0; k < nst; ++k, pos.next(stages))
                produce_stage(ring, full, empty, pos, k, stages, row_bytes, 16, tb, tiled,
                              policy);
            for (int d = 0; d < nds; ++d, pos.next(stages))
                produce_down_stage(ring, full, empty, pos, d, stages, K,
                                   dw + tile * chunk_bytes, policy);
        }
        return;
    }
    float acc[MF_ACC];
#pragma unroll
    for (int i = 0; i < MF_ACC; ++i) acc[i] = 0.f;
    TileBf16::Stage st;
    pdl_wait();  // x comes from the previous kernel
    RingPos pos;
    for (unsigned tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
        const TileBf16 t(x, wgu, 1, N, K, tile);
        float c[4] = {0.f, 0.f, 0.f, 0.f};
        for (int k = 0; k < nst; ++k, pos.next(stages))
            consume_stage(t, st, c, ring, full, empty, pos, k, stages);
        // SwiGLU as reduce_store_swiglu computes it, rounded to bf16 as down's GEMM would
        // read it from act.
        const RedTile* red = gather_fragments(c);
        if (threadIdx.x < MF_COLS) {
            float gs = 0.f, us = 0.f;
#pragma unroll
            for (int w = 0; w < SG_WARPS; ++w) {
                gs += red[w][threadIdx.x][0];
                us += red[w][threadIdx.x + 8][0];
            }
            act_s[threadIdx.x] =
                __bfloat162float(__float2bfloat16(gs / (1.0f + expf(-gs)) * us));
        }
        consumers_sync();
        float a[MF_COLS];
#pragma unroll
        for (int j = 0; j < MF_COLS; ++j) a[j] = act_s[j];
#pragma unroll
        for (int d = 0; d < MF_MAX_DOWN_STAGES; ++d)
            if (d < nds) {
                consume_down_stage(acc, a, ring, full, empty, pos, d, stages, K);
                pos.next(stages);
            }
    }
    add_partials(acc, y, K, nds, ring);
    TRACE_MARK(3);
}
