// Token embedding gather: out[r, :] = float(table[ids[r], :]). One block per row.
// The host has already checked every id against the vocabulary size.
#include <cuda_bf16.h>

extern "C" __global__ void embed_gather(const unsigned int* __restrict__ ids,
                                        const __nv_bfloat16* __restrict__ table,
                                        float* __restrict__ out, int hidden) {
    pdl_trigger();
    pdl_wait();
    const int r = blockIdx.x;
    const __nv_bfloat16* src = table + (size_t)ids[r] * hidden;
    float* dst = out + (size_t)r * hidden;
    for (int i = threadIdx.x; i < hidden; i += blockDim.x) dst[i] = __bfloat162float(src[i]);
}
