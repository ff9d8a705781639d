// Skinny GEMM for decode: y[m, n] = sum_k x[m, k] * w[n, k] for M <= 8 rows,
// x and w in bf16 (w in HF layout [N, K]), f32 accumulation and output.
// One warp per output column n streams its weight row once with 16-byte loads and reuses
// it for all M rows, so the kernel reads each weight byte once whatever M is: decode is
// bound by the weight stream (GPU.md: cuBLAS reaches 77 % of the read ceiling at M <= 8).
// Needs K % 8 == 0 (checked by the launcher) so every row starts 16-byte aligned.
#include <cuda_bf16.h>

template <int M>
__device__ void gemv_impl(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                          float* __restrict__ y, int N, int K) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int n = blockIdx.x * (blockDim.x >> 5) + warp;
    if (n >= N) return;
    const uint4* wrow = reinterpret_cast<const uint4*>(w + (size_t)n * K);
    const int k8 = K / 8;
    float acc[M];
#pragma unroll
    for (int m = 0; m < M; ++m) acc[m] = 0.f;
    for (int i = lane; i < k8; i += 32) {
        const uint4 wv = __ldg(wrow + i);
        const __nv_bfloat162* wp = reinterpret_cast<const __nv_bfloat162*>(&wv);
        float2 wf[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) wf[j] = __bfloat1622float2(wp[j]);
#pragma unroll
        for (int m = 0; m < M; ++m) {
            const uint4 xv = __ldg(reinterpret_cast<const uint4*>(x + (size_t)m * K) + i);
            const __nv_bfloat162* xp = reinterpret_cast<const __nv_bfloat162*>(&xv);
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const float2 xf = __bfloat1622float2(xp[j]);
                acc[m] = fmaf(xf.x, wf[j].x, acc[m]);
                acc[m] = fmaf(xf.y, wf[j].y, acc[m]);
            }
        }
    }
#pragma unroll
    for (int m = 0; m < M; ++m) {
        float v = acc[m];
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
        if (lane == 0) y[(size_t)m * N + n] = v;
    }
}

#define GEMV_ENTRY(M_)                                                                        \
    extern "C" __global__ void gemv_bf16_m##M_(const __nv_bfloat16* x, const __nv_bfloat16* w, \
                                               float* y, int N, int K) {                     \
        gemv_impl<M_>(x, w, y, N, K);                                                         \
    }
GEMV_ENTRY(1)
GEMV_ENTRY(2)
GEMV_ENTRY(3)
GEMV_ENTRY(4)
GEMV_ENTRY(5)
GEMV_ENTRY(6)
GEMV_ENTRY(7)
GEMV_ENTRY(8)
