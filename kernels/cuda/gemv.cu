// Skinny GEMM for decode: y[m, n] = sum_k x[m, k] * w[n, k] for M <= 8 rows,
// x and w in bf16 (w in HF layout [N, K]), f32 accumulation and output.
// Warps stream weight rows once with 16-byte loads and reuses
// it for all M rows, so the kernel reads each weight byte once whatever M is: decode is
// bound by the weight stream (GPU.md: cuBLAS reaches 77 % of the read ceiling at M <= 8).
// Needs K % 8 == 0 (checked by the launcher) so every row starts 16-byte aligned.
#include <cuda_bf16.h>

// Each warp computes C adjacent columns so one load of x feeds C weight rows (at M = 8,
// one column per warp made x's L1 traffic 8x the weight stream: 24 ms per Qwen3-8B step).
template <int M, int C>
__device__ void gemv_impl(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                          float* __restrict__ y, int N, int K) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int n0 = (blockIdx.x * (blockDim.x >> 5) + warp) * C;
    if (n0 >= N) return;
    const int k8 = K / 8;
    float acc[M][C];
#pragma unroll
    for (int m = 0; m < M; ++m)
#pragma unroll
        for (int c = 0; c < C; ++c) acc[m][c] = 0.f;
    for (int i = lane; i < k8; i += 32) {
        float2 wf[C][4];
#pragma unroll
        for (int c = 0; c < C; ++c) {
            uint4 wv = make_uint4(0, 0, 0, 0);
            if (n0 + c < N) wv = __ldg(reinterpret_cast<const uint4*>(w + (size_t)(n0 + c) * K) + i);
            const __nv_bfloat162* wp = reinterpret_cast<const __nv_bfloat162*>(&wv);
#pragma unroll
            for (int j = 0; j < 4; ++j) wf[c][j] = __bfloat1622float2(wp[j]);
        }
#pragma unroll
        for (int m = 0; m < M; ++m) {
            const uint4 xv = __ldg(reinterpret_cast<const uint4*>(x + (size_t)m * K) + i);
            const __nv_bfloat162* xp = reinterpret_cast<const __nv_bfloat162*>(&xv);
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const float2 xf = __bfloat1622float2(xp[j]);
#pragma unroll
                for (int c = 0; c < C; ++c) {
                    acc[m][c] = fmaf(xf.x, wf[c][j].x, acc[m][c]);
                    acc[m][c] = fmaf(xf.y, wf[c][j].y, acc[m][c]);
                }
            }
        }
    }
#pragma unroll
    for (int m = 0; m < M; ++m)
#pragma unroll
        for (int c = 0; c < C; ++c) {
            float v = acc[m][c];
            for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
            if (lane == 0 && n0 + c < N) y[(size_t)m * N + n0 + c] = v;
        }
}

// Columns per warp for M rows: must match `cols_per_warp` in ops/gemv.rs.
#define GEMV_ENTRY(M_, C_)                                                                    \
    extern "C" __global__ void gemv_bf16_m##M_(const __nv_bfloat16* x, const __nv_bfloat16* w, \
                                               float* y, int N, int K) {                     \
        gemv_impl<M_, C_>(x, w, y, N, K);                                                     \
    }
GEMV_ENTRY(1, 2)
GEMV_ENTRY(2, 2)
GEMV_ENTRY(3, 4)
GEMV_ENTRY(4, 4)
GEMV_ENTRY(5, 4)
GEMV_ENTRY(6, 4)
GEMV_ENTRY(7, 4)
GEMV_ENTRY(8, 4)
