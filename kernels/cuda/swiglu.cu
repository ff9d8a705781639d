// SwiGLU: out[r, c] = bf16(silu(gu[r, c]) * gu[r, I + c]) where gu is the fused gate|up
// projection [T, 2I] in f32.
#include <cuda_bf16.h>

extern "C" __global__ void swiglu(const float* __restrict__ gu, __nv_bfloat16* __restrict__ out,
                                  int inter, int total) {
    pdl_trigger();
    pdl_wait();
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    const int r = idx / inter, c = idx % inter;
    const float g = gu[(size_t)r * 2 * inter + c], u = gu[(size_t)r * 2 * inter + inter + c];
    out[idx] = __float2bfloat16(g / (1.0f + expf(-g)) * u);
}
