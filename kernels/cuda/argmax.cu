// Greedy sampling: out[r] = argmax(logits[r, :]), first maximum on ties (as torch.argmax
// and the CPU sampler). One block of 1024 threads per row.
extern "C" __global__ void argmax_rows(const float* __restrict__ logits, unsigned int* __restrict__ out,
                                       int vocab) {
    __shared__ float sv[32];
    __shared__ int si[32];
    const float* row = logits + (size_t)blockIdx.x * vocab;
    float best = __int_as_float(0xff800000);  // -inf
    int bi = 0x7fffffff;
    for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
        const float v = row[i];
        if (v > best) { best = v; bi = i; }  // strided ascending: first max per thread
    }
    for (int o = 16; o > 0; o >>= 1) {
        const float ov = __shfl_xor_sync(0xffffffff, best, o);
        const int oi = __shfl_xor_sync(0xffffffff, bi, o);
        if (ov > best || (ov == best && oi < bi)) { best = ov; bi = oi; }
    }
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) { sv[warp] = best; si[warp] = bi; }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)(blockDim.x >> 5); ++w)
            if (sv[w] > best || (sv[w] == best && si[w] < bi)) { best = sv[w]; bi = si[w]; }
        out[blockIdx.x] = (unsigned int)(bi == 0x7fffffff ? 0 : bi);
    }
}
