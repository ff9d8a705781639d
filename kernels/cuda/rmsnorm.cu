// Fused residual add + RMSNorm over rows of an f32 residual stream.
// x[r] += add[r] (when ADD), then out[r] = bf16(x[r] * rsqrt(mean(x[r]^2) + eps) * w).
// The residual stays f32 so that 36 layers of adds do not accumulate bf16 rounding;
// the normed output is bf16 because it only feeds bf16 GEMVs. One block per row.
#include <cuda_bf16.h>

__device__ __forceinline__ float block_sum(float v, float* shared) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    const int nwarps = (blockDim.x + 31) >> 5;
    float t = 0.f;
    for (int i = 0; i < nwarps; ++i) t += shared[i];
    return t;
}

// Each thread keeps its (at most RN_MAXV) elements in registers between the sum of squares
// and the output, instead of reading the row back: at decode this kernel is one block per
// token, so its time is its chain of dependent memory round trips. For the same reason the
// norm weights (constant) are loaded before pdl_wait, and the wait is followed by a single
// round trip. dim <= RN_MAXV * blockDim (checked by the launcher).
#define RN_MAXV 32

template <bool ADD>
__device__ void add_rmsnorm_impl(float* __restrict__ x, const float* __restrict__ add,
                                 const float* __restrict__ w, __nv_bfloat16* __restrict__ out,
                                 int dim, float eps) {
    __shared__ float partial[32];
    float wv[RN_MAXV];
#pragma unroll
    for (int j = 0; j < RN_MAXV; ++j) {
        const int i = threadIdx.x + j * blockDim.x;
        wv[j] = i < dim ? w[i] : 0.f;
    }
    pdl_wait();  // x and add come from earlier kernels
    float* row = x + (size_t)blockIdx.x * dim;
    const float* arow = ADD ? add + (size_t)blockIdx.x * dim : nullptr;
    float v[RN_MAXV];
    float ss = 0.f;
#pragma unroll
    for (int j = 0; j < RN_MAXV; ++j) {
        const int i = threadIdx.x + j * blockDim.x;
        v[j] = 0.f;
        if (i < dim) {
            v[j] = row[i];
            if (ADD) v[j] += arow[i];
        }
    }
#pragma unroll
    for (int j = 0; j < RN_MAXV; ++j) {
        const int i = threadIdx.x + j * blockDim.x;
        if (ADD && i < dim) row[i] = v[j];
        ss += v[j] * v[j];
    }
    const float r = rsqrtf(block_sum(ss, partial) / (float)dim + eps);
    __nv_bfloat16* orow = out + (size_t)blockIdx.x * dim;
#pragma unroll
    for (int j = 0; j < RN_MAXV; ++j) {
        const int i = threadIdx.x + j * blockDim.x;
        if (i < dim) orow[i] = __float2bfloat16(v[j] * r * wv[j]);
    }
}

extern "C" __global__ void rmsnorm_rows(float* x, const float* w, __nv_bfloat16* out, int dim, float eps) {
    pdl_trigger();
    add_rmsnorm_impl<false>(x, nullptr, w, out, dim, eps);
}

extern "C" __global__ void add_rmsnorm_rows(float* x, const float* add, const float* w,
                                            __nv_bfloat16* out, int dim, float eps) {
    pdl_trigger();
    add_rmsnorm_impl<true>(x, add, w, out, dim, eps);
}
