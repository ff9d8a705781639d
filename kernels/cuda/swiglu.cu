// SwiGLU: out[r, c] = bf16(silu(gate[r, c]) * up[r, c]) over the fused gate|up projection
// gu [T, 2I] in f32. tiled = 0: gate is columns 0..I, up columns I..2I. tiled = 1: the
// weights were interleaved by 8 rows (ops::interleave_gate_up), so column block j of 16
// holds gate 8j..8j+7 then up 8j..8j+7.
#include <cuda_bf16.h>

extern "C" __global__ void swiglu(const float* __restrict__ gu, __nv_bfloat16* __restrict__ out,
                                  int inter, int total, int tiled) {
    pdl_trigger();
    pdl_wait();
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    const int r = idx / inter, c = idx % inter;
    const float* row = gu + (size_t)r * 2 * inter;
    const int gc = tiled ? (c >> 3) * 16 + (c & 7) : c;
    const float g = row[gc], u = row[tiled ? gc + 8 : inter + c];
    out[idx] = __float2bfloat16(g / (1.0f + expf(-g)) * u);
}
