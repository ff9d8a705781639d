// Fused residual add + RMSNorm over rows of an f32 residual stream.
// x[r] += add[r] (when ADD), then out[r] = bf16(x[r] * rsqrt(mean(x[r]^2) + eps) * w).
// The residual stays f32 so that 36 layers of adds do not accumulate bf16 rounding;
// the normed output is bf16 because it only feeds bf16 GEMVs. One block per row.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

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

// The lean form, for rows where dim % 16 == 0 and 32 <= dim / 16 <= 1024 (the launcher
// checks, and checks 16-byte alignment; other widths take the scalar kernels above): one
// block of dim / 16 threads per row, each thread holding 4 float4 of it (16 values) in
// registers, about a third of add_rmsnorm_rows' registers. Why: in a decode step a
// 256-thread block of the scalar kernel cannot be resident beside two GEMM blocks, so it
// is placed only as the GEMM before it drains, while a small block is placed early and
// waits at pdl_wait. Same formula and roundings as add_rmsnorm_impl; the sum of squares
// runs in another order.
// F16: out holds f16 (the `_f16` kernels, for FP8 decode at 2-8 rows): each value rounded
// to bf16 as here, then taken to f16 as the FP8 GEMMs take bf16 x (bf16x2_to_f16x2), so the
// GEMM that reads it multiplies the same bits as from the bf16 output.
template <bool ADD, bool F16>
__device__ void add_rmsnorm_vec_impl(float* __restrict__ x, const float* __restrict__ add,
                                     const float* __restrict__ w,
                                     __nv_bfloat16* __restrict__ out, int dim, float eps) {
    __shared__ float partial[32];
    float4 wv[4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
        wv[j] = reinterpret_cast<const float4*>(w)[threadIdx.x + j * blockDim.x];
    pdl_wait();  // x and add come from earlier kernels
    float4* row = reinterpret_cast<float4*>(x + (size_t)blockIdx.x * dim);
    const float4* arow = ADD ? reinterpret_cast<const float4*>(add + (size_t)blockIdx.x * dim)
                             : nullptr;
    float4 v[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const int q = threadIdx.x + j * blockDim.x;
        v[j] = row[q];
        if (ADD) {
            const float4 a = arow[q];
            v[j].x += a.x;
            v[j].y += a.y;
            v[j].z += a.z;
            v[j].w += a.w;
        }
    }
    // The block timeline's marks (trace builds only): thread 0's row has arrived (2), the
    // block's sum is known (3), its part of the output is stored (4).
#ifdef LATLAB_TRACE_BUF
    if (threadIdx.x == 0) {
        asm volatile("" ::"f"(v[3].w));
        TRACE_MARK(2);
    }
#endif
    float ss = 0.f;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        if (ADD) row[threadIdx.x + j * blockDim.x] = v[j];
        ss += v[j].x * v[j].x;
        ss += v[j].y * v[j].y;
        ss += v[j].z * v[j].z;
        ss += v[j].w * v[j].w;
    }
    const float r = rsqrtf(block_sum(ss, partial) / (float)dim + eps);
    TRACE_MARK(3);
    uint2* orow = reinterpret_cast<uint2*>(out + (size_t)blockIdx.x * dim);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const __nv_bfloat162 lo = __floats2bfloat162_rn(v[j].x * r * wv[j].x, v[j].y * r * wv[j].y);
        const __nv_bfloat162 hi = __floats2bfloat162_rn(v[j].z * r * wv[j].z, v[j].w * r * wv[j].w);
        unsigned wl = *reinterpret_cast<const unsigned*>(&lo);
        unsigned wh = *reinterpret_cast<const unsigned*>(&hi);
        if (F16) {
            wl = bf16x2_to_f16x2(wl);
            wh = bf16x2_to_f16x2(wh);
        }
        orow[threadIdx.x + j * blockDim.x] = make_uint2(wl, wh);
    }
    TRACE_MARK(4);
}

extern "C" __global__ void rmsnorm_vec(float* x, const float* w, __nv_bfloat16* out, int dim,
                                       float eps) {
    pdl_trigger();
    add_rmsnorm_vec_impl<false, false>(x, nullptr, w, out, dim, eps);
}

extern "C" __global__ void add_rmsnorm_vec(float* x, const float* add, const float* w,
                                           __nv_bfloat16* out, int dim, float eps) {
    pdl_trigger();
    add_rmsnorm_vec_impl<true, false>(x, add, w, out, dim, eps);
}

// The same norms with f16 output, for FP8 GEMMs that read x as f16 (the `_xh` kernels).
extern "C" __global__ void rmsnorm_vec_f16(float* x, const float* w, __half* out, int dim,
                                           float eps) {
    pdl_trigger();
    add_rmsnorm_vec_impl<false, true>(x, nullptr, w, reinterpret_cast<__nv_bfloat16*>(out), dim,
                                      eps);
}

extern "C" __global__ void add_rmsnorm_vec_f16(float* x, const float* add, const float* w,
                                               __half* out, int dim, float eps) {
    pdl_trigger();
    add_rmsnorm_vec_impl<true, true>(x, add, w, reinterpret_cast<__nv_bfloat16*>(out), dim, eps);
}
