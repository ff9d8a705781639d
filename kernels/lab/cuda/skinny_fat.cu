// Lab kernel (bin/copy_ceiling.rs times it), out of the engine since it lost there: the
// skinny GEMM for decode at one token row as a "fat" block. One CTA per SM holds `groups`
// (2 or 3) of skinny_bulk.cu's rings, each a producer warp and 8 multiplying warps on their
// own 16-row tiles, and they share one copy of x, staged in shared memory once per launch.
// bf16 weights only.
//
// Why it was tried: the bulk kernels load x through L1 at every stage, and those loads cost
// a bf16 batch-1 step's linears measurable time (engine/PERF-LOG.md step 58). A separate
// block per ring has no room for x beside its ring (step 36), and copying x through the
// ring at every stage makes every block ask L2 for the same lines at once (step 42). One
// CTA per SM stages x once for all its rings: faster among GEMMs alone (step 59), slower
// in every form inside a whole step (steps 60-63). The engine's launcher for it
// (ops::skinny_fat, `Tuning::bf16_fat`) is in commit 8e13e98.
//
// Same chunk order, MMAs and warp sums as the bulk kernels: the same bits. Dynamic shared
// memory: groups x stages x TM_STAGE_BYTES of rings, then x (K bf16), then each group's 8 x
// 16 f32 warp sums.
#define FAT_MAX_GROUPS 3

// A tile's outputs from its group's warp sums red[warp][row] (token 0's column of each
// warp's fragment), summed in reduce_store's order: f32 y, or SwiGLU's act over
// interleaved gate|up rows (reduce_store_swiglu's formula).
__device__ __forceinline__ void fat_store(const float (*red)[16], int lt, float* __restrict__ y,
                                          int N, int n0) {
    if (lt < 16) {
        float s = 0.f;
#pragma unroll
        for (int w = 0; w < SG_WARPS; ++w) s += red[w][lt];
        if (n0 + lt < N) y[n0 + lt] = s;
    }
}
__device__ __forceinline__ void fat_store(const float (*red)[16], int lt,
                                          __nv_bfloat16* __restrict__ act, int N, int n0) {
    if (lt < 8) {
        float gs = 0.f, us = 0.f;
#pragma unroll
        for (int w = 0; w < SG_WARPS; ++w) {
            gs += red[w][lt];
            us += red[w][lt + 8];
        }
        const int col = n0 / 2 + lt;
        if (col < N / 2) act[col] = __float2bfloat16(gs / (1.0f + expf(-gs)) * us);
    }
}

template <class Out>
__device__ __forceinline__ void skinny_fat(const __nv_bfloat16* __restrict__ x,
                                           const __nv_bfloat16* __restrict__ w,
                                           Out* __restrict__ y, int N, int K, int stages,
                                           int tiled, int groups) {
    extern __shared__ __align__(128) unsigned char smem[];
    __shared__ __align__(8) unsigned long long full[FAT_MAX_GROUPS][TM_MAX_STAGES],
        empty[FAT_MAX_GROUPS][TM_MAX_STAGES];
    const int gid = threadIdx.x / TM_THREADS, lt = threadIdx.x % TM_THREADS;
    const int warp = lt >> 5, lane = lt & 31, g = lane >> 2, q = lane & 3;
    unsigned char* ring = smem + gid * stages * TM_STAGE_BYTES;
    uint4* xs = reinterpret_cast<uint4*>(smem + groups * stages * TM_STAGE_BYTES);
    float(*red)[16] = reinterpret_cast<float(*)[16]>(
        smem + groups * stages * TM_STAGE_BYTES + K * 2 + gid * SG_WARPS * 16 * 4);
    const unsigned ntiles = (N + 15) / 16, first = blockIdx.x * groups + gid,
                   step = gridDim.x * groups;
    const int row_bytes = K * 2, k8 = K / 8;
    const int nst = (row_bytes + TM_ROW_BYTES - 1) / TM_ROW_BYTES;
    if (threadIdx.x == 0) {
        for (int i = 0; i < groups; ++i)
            for (int s = 0; s < stages; ++s) {
                mbar_init(&full[i][s], 1);
                mbar_init(&empty[i][s], SG_WARPS);
            }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (warp == SG_WARPS) {
        // The group's producer: its tiles first, b * groups + gid, stepping over the grid's.
        unsigned long long policy;
        asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
        const unsigned char* wb = reinterpret_cast<const unsigned char*>(w);
        RingPos pos;
        for (unsigned tile = first; tile < ntiles; tile += step) {
            const int rows = min(16, N - (int)tile * 16);
            const unsigned char* tb = wb + (size_t)tile * 16 * row_bytes;
            for (int k = 0; k < nst; ++k, pos.next(stages))
                produce_stage(ring, full[gid], empty[gid], pos, k, stages, row_bytes, rows, tb,
                              tiled, policy);
        }
        return;
    }
    pdl_wait();  // x comes from the previous kernel
    // Every multiplying warp of every group stages x, then all of them meet (barrier 15;
    // 1..groups are the groups' own).
    const int ct = gid * SG_WARPS * 32 + lt, cn = groups * SG_WARPS * 32;
    for (int i = ct; i < k8; i += cn) xs[i] = __ldg(reinterpret_cast<const uint4*>(x) + i);
    asm volatile("bar.sync 15, %0;" ::"r"(cn) : "memory");
    TRACE_MARK(2);  // x staged (the block timeline's mark, as the bulk kernels' after prepare)
    TileBf16::Stage st;
    RingPos pos;
    const uint4 z = make_uint4(0, 0, 0, 0);
    for (unsigned tile = first; tile < ntiles; tile += step) {
        const int n0 = (int)tile * 16;
        float c[4] = {0.f, 0.f, 0.f, 0.f};
        for (int k = 0; k < nst; ++k, pos.next(stages)) {
            // consume_stage's work with x from shared memory: token 0 is B's column 0, so
            // only the quad g = 0 holds x, the rest zeros.
            const int s = pos.slot(stages), ch = k * SG_WARPS + warp;
#pragma unroll
            for (int j = 0; j < 2; ++j) {
                const int p = (ch * 4 + q) * 2 + j;
                st.x[j] = p < k8 && g == 0 ? xs[p] : z;
            }
            ring_wait<RingPos::TESTED>(&full[gid][s], pos.parity(stages));
            load_w_stage(st, ring + s * TM_STAGE_BYTES, ch, k8, warp);
            __syncwarp();  // every lane's shared reads are done before the stage is handed back
            if (lane == 0) mbar_arrive(&empty[gid][s]);
#pragma unroll
            for (int j = 0; j < 2; ++j) {
                mma_bf16(c, st.a[j].x, st.b[j].x, st.a[j].y, st.b[j].y, st.x[j].x, st.x[j].y);
                mma_bf16(c, st.a[j].z, st.b[j].z, st.a[j].w, st.b[j].w, st.x[j].z, st.x[j].w);
            }
            if (k == 0 && tile == first) TRACE_MARK(4);  // first stage multiplied (trace only)
        }
        // Token 0's column of each warp's fragment: c[0] row g, c[2] row g + 8.
        if (q == 0) {
            red[warp][g] = c[0];
            red[warp][g + 8] = c[2];
        }
        asm volatile("bar.sync %0, 256;" ::"r"(1 + gid) : "memory");
        fat_store(red, lt, y, N, n0);
        // The next tile's sums go where this one's store still reads.
        asm volatile("bar.sync %0, 256;" ::"r"(1 + gid) : "memory");
    }
    TRACE_MARK(3);
}

// x [1, K] bf16, w [N, K] bf16 (`tiled`: ops::tile_weights' layout); y [1, N] f32, or act
// [1, N / 2] bf16 through SwiGLU for interleaved gate|up. M is always 1 (the launcher's
// check); it is here so the arguments run as the bulk kernels' do.
extern "C" __global__ void __launch_bounds__(FAT_MAX_GROUPS * TM_THREADS, 1)
    skinny_gemm_bf16_fat(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                         float* __restrict__ y, int M, int N, int K, int stages, int tiled,
                         int groups) {
    pdl_trigger();
    skinny_fat(x, w, y, N, K, stages, tiled, groups);
}
extern "C" __global__ void __launch_bounds__(FAT_MAX_GROUPS * TM_THREADS, 1)
    skinny_gemm_bf16_swiglu_fat(const __nv_bfloat16* __restrict__ x,
                                const __nv_bfloat16* __restrict__ w,
                                __nv_bfloat16* __restrict__ act, int M, int N, int K,
                                int stages, int tiled, int groups) {
    pdl_trigger();
    skinny_fat(x, w, act, N, K, stages, tiled, groups);
}
