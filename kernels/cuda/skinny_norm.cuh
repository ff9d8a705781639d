// Included after skinny_tiles.cuh in front of skinny_bulk.cu (sources.rs): the norm
// epilogue of the `_norm` bulk kernels.
#pragma once

// Decode's RMSNorm folded into the skinny GEMMs around it (ops::NormEpi, the `_norm` FP8
// kernels; the engine folds FP8 steps of one row, where it measured faster): no norm kernel and no reduction round trip between the linears. A
// *producer* (o_proj, down: each block owns whole output elements) adds its sums to the f32
// residual y, stores the next GEMM's x as hw = bf16(y * nw) (the norm's weights, not yet its
// scale) and the sums of y^2 over its tile's 16 columns, ss_out [M][N / 16]. A *consumer*
// (qkv, gate|up) reads such an hw as its x and multiplies its sums by row m's scale
// rsqrt(sum(ss_in[m]) / K + eps) before storing (before SwiGLU for gate|up): the same
// product as the norm kernel's, with hw rounded to bf16 before the scale instead of after.
// The residual keeps its bits: the add is the norm kernel's f32 add of the same sums.
// Both prefetch what their epilogue reads into shared memory (`epi`, behind the ring) with
// cp.async right after pdl_wait, each thread the words it will read back itself, so
// nothing waits on a round trip at the tile's end and no register is held across the loop
// (the persistent bf16 kernels sit at their 72-register cap). All pointers null: plain y.
struct NormIo {
    const float* ss_in;  // consumer: [M][nt_in] partial sums of squares (null: x is normed)
    int nt_in;
    float eps;
    const float* nw;     // producer: the next norm's weights [N] (null: y = sums)
    __nv_bfloat16* hw;   // producer: bf16(y * nw) [M, N]
    float* ss_out;       // producer: [M][N / 16]
};
#define NORM_PARAMS                                                                      \
    const float *__restrict__ ss_in, int nt_in, float eps, const float *__restrict__ nw, \
        __nv_bfloat16 *__restrict__ hw, float *__restrict__ ss_out
#define NORM_IO NormIo{ss_in, nt_in, eps, nw, hw, ss_out}
#define NO_NORM NormIo{nullptr, 0, 0.f, nullptr, nullptr, nullptr}

// Bytes of `epi` a launch needs (the launcher adds the same: ops::skinny_plan): the
// consumer's M rows of partials, or the producer's 128 residual words and 128 weights.
__device__ __forceinline__ int norm_epi_bytes(const NormIo& io, int M) {
    return io.ss_in ? M * io.nt_in * 4 : io.nw ? 2 * 128 * 4 : 0;
}

__device__ __forceinline__ void cp_async4(void* dst, const void* src) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(smem_addr(dst)), "l"(src)
                 : "memory");
}
__device__ __forceinline__ void cp_async_wait_all() {
    asm volatile("cp.async.wait_all;" ::: "memory");
}

// An SM keeps ~130 KB of kernel code, about what a decode layer's kernels take. Inlined
// into every GEMM, these epilogues made the persistent kernels half again as large, and
// steps that did not fold ran slower for it (engine/PERF-LOG.md step 52). So they live only
// in the `_norm` kernels (the plain ones compile as if they did not exist), and each piece is a __noinline__ function placed
// after the kernel's body, with its arguments by value (a reference to the kernel's NormIo
// would put it in local memory), behind an inline null check, its loops not unrolled.

// A pointer the compiler cannot reason about: the epilogue's null checks go through it, so
// that it does not unswitch the persistent kernels' tile loop on them (a copy of the whole
// loop per case: +7 KB of code that way).
__device__ __forceinline__ bool present(const void* p) {
    unsigned long long v;
    asm volatile("mov.b64 %0, %1;" : "=l"(v) : "l"(p));
    return v != 0;
}

// The consumer's prefetch, all multiplying warps after pdl_wait: warp m < M copies row m's
// partials, lane l the 16-byte groups l, l + 32, ... (nt_in % 4 == 0, checked by the
// launcher).
__device__ __noinline__ void norm_prefetch_scale_body(const float* ss_in, int nt_in, int M,
                                                      float* epi) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (warp < M) {
        const int off = warp * nt_in;
#pragma unroll 1
        for (int q = lane; q < nt_in / 4; q += 32) cp_async16(epi + off + 4 * q, ss_in + off + 4 * q);
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
}
__device__ __forceinline__ void norm_prefetch_scale(const NormIo& io, int M, float* epi) {
    if (present(io.ss_in)) norm_prefetch_scale_body(io.ss_in, io.nt_in, M, epi);
}

// The producer's prefetch for the tile at n0, threads (m, r) = (tid / 16, tid % 16) < 128
// (the threads that store in reduce_store): residual y[m, n0 + r] and nw[n0 + r].
__device__ __noinline__ void norm_prefetch_residual_body(const float* y, const float* nw, int M,
                                                         int N, int n0, float* epi) {
    const int r = threadIdx.x & 15, m = threadIdx.x >> 4;
    if (m < M && n0 + r < N) {
        cp_async4(epi + threadIdx.x, y + (size_t)m * N + n0 + r);
        cp_async4(epi + 128 + threadIdx.x, nw + n0 + r);
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
}
__device__ __forceinline__ void norm_prefetch_residual(const NormIo& io, const float* y, int M,
                                                       int N, int n0, float* epi) {
    if (present(io.nw) && threadIdx.x < 128) norm_prefetch_residual_body(y, io.nw, M, N, n0, epi);
}
// SwiGLU kernels are never producers (the launcher checks).
__device__ __forceinline__ void norm_prefetch_residual(const NormIo&, const __nv_bfloat16*, int,
                                                       int, int, float*) {}

// The consumer's row scales into scale[m], warp m (< M) summing the partials its lanes
// copied (each lane reads back only its own copies: no barrier needed) in a fixed order.
// Called by every multiplying warp before the barrier in gather_fragments.
__device__ __noinline__ void norm_publish_scale_body(int nt_in, float eps, int M, int K,
                                                     const float* epi, float* scale) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    cp_async_wait_all();
    if (warp >= M) return;
    const int off = warp * nt_in;
    float s = 0.f;
#pragma unroll 1
    for (int q = lane; q < nt_in / 4; q += 32) {
        const float4 v = *reinterpret_cast<const float4*>(epi + off + 4 * q);
        s += (v.x + v.y) + (v.z + v.w);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
    if (lane == 0) scale[warp] = rsqrtf(s / (float)K + eps);
}
__device__ __forceinline__ void norm_publish_scale(const NormIo& io, int M, int K,
                                                   const float* epi, float* scale) {
    if (present(io.ss_in)) norm_publish_scale_body(io.nt_in, io.eps, M, K, epi, scale);
}

// The producer's store, threads (m, r) < 128 (warps 0..3 whole: the half-warp of row m sums
// its 16 squares): y[m, n0 + r] = residual + s, hw, and row m's partial sum of squares.
__device__ __noinline__ void norm_store_residual(float s, float* y, __nv_bfloat16* hw,
                                                 float* ss_out, int M, int N, int n0,
                                                 const float* epi) {
    const int r = threadIdx.x & 15, m = threadIdx.x >> 4;
    const bool ok = m < M && n0 + r < N;
    cp_async_wait_all();
    const float h = ok ? epi[threadIdx.x] + s : 0.f;
    if (ok) {
        y[(size_t)m * N + n0 + r] = h;
        hw[(size_t)m * N + n0 + r] = __float2bfloat16(h * epi[128 + threadIdx.x]);
    }
    float q = h * h;
#pragma unroll
    for (int o = 8; o > 0; o >>= 1) q += __shfl_xor_sync(0xffffffff, q, o);
    if (r == 0 && m < M) ss_out[(size_t)m * ((N + 15) / 16) + n0 / 16] = q;
}

// reduce_store for the `_norm` kernels: times row m's scale for a consumer; a producer adds
// the sums to y instead and stores hw and ss_out.
__device__ __forceinline__ void reduce_store_norm(const float (&c)[4], float* __restrict__ y, int M,
                                             int N, int K, int n0, const NormIo& io,
                                             const float* epi) {
    __shared__ float scale[SG_WARPS];
    norm_publish_scale(io, M, K, epi, scale);
    const RedTile* red = gather_fragments(c);
    if (threadIdx.x < 128) {
        const int r = threadIdx.x & 15, m = threadIdx.x >> 4;
        float s = 0.f;
#pragma unroll
        for (int w = 0; w < SG_WARPS; ++w) s += red[w][r][m];
        if (present(io.nw)) {
            norm_store_residual(s, y, io.hw, io.ss_out, M, N, n0, epi);
        } else if (m < M && n0 + r < N) {
            y[(size_t)m * N + n0 + r] = present(io.ss_in) ? s * scale[m] : s;
        }
    }
}

// reduce_store_swiglu for the `_norm` kernels: a consumer (io.ss_in) scales g and u by row
// m's norm scale first.
__device__ __forceinline__ void reduce_store_swiglu_norm(const float (&c)[4],
                                                    __nv_bfloat16* __restrict__ act, int M,
                                                    int inter, int K, int n0,
                                                    const NormIo& io, const float* epi) {
    __shared__ float scale[SG_WARPS];
    norm_publish_scale(io, M, K, epi, scale);
    const RedTile* red = gather_fragments(c);
    if (threadIdx.x < 64) {
        const int r = threadIdx.x & 7, m = threadIdx.x >> 3;
        float gs = 0.f, us = 0.f;
#pragma unroll
        for (int w = 0; w < SG_WARPS; ++w) {
            gs += red[w][r][m];
            us += red[w][r + 8][m];
        }
        if (present(io.ss_in)) {
            const float sc = scale[m];
            gs *= sc;
            us *= sc;
        }
        const int col = n0 / 2 + r;
        if (m < M && col < inter)
            act[(size_t)m * inter + col] = __float2bfloat16(gs / (1.0f + expf(-gs)) * us);
    }
}

// store_out for the `_norm` kernels. K: the tile's, for the consumer's scale.
__device__ __forceinline__ void store_out_norm(const float (&c)[4], float* y, int M, int N,
                                               int K, int n0, const NormIo& io,
                                               const float* epi) {
    reduce_store_norm(c, y, M, N, K, n0, io, epi);
}
__device__ __forceinline__ void store_out_norm(const float (&c)[4], __nv_bfloat16* act, int M,
                                               int N, int K, int n0, const NormIo& io,
                                               const float* epi) {
    reduce_store_swiglu_norm(c, act, M, N / 2, K, n0, io, epi);
}
