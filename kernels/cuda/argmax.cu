// Greedy sampling: out[r] = argmax(logits[r, :]), first maximum on ties (as torch.argmax
// and the CPU sampler). Two kernels: ARGMAX_PARTS blocks per row each reduce a slice to one
// packed key, then one warp per row reduces the keys. (One block per row scanned 151,936
// logits alone: 30 us per decode step on the H200.)
//
// Key = orderable(value) << 32 | (0xffffffff - index): the largest key is the largest value
// and, among equal values, the smallest index. NaN compares as the largest (never seen).
#define ARGMAX_PARTS 32

__device__ __forceinline__ unsigned long long argmax_key(float v, int i) {
    unsigned b = __float_as_uint(v);
    b = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
    return ((unsigned long long)b << 32) | (0xffffffffu - (unsigned)i);
}

__device__ __forceinline__ unsigned long long warp_max(unsigned long long k) {
    for (int o = 16; o > 0; o >>= 1) {
        const unsigned long long ok = __shfl_xor_sync(0xffffffff, k, o);
        k = ok > k ? ok : k;
    }
    return k;
}

// grid (rows, ARGMAX_PARTS), 256 threads; keys [rows, ARGMAX_PARTS].
extern "C" __global__ void argmax_partial(const float* __restrict__ logits,
                                          unsigned long long* __restrict__ keys, int vocab) {
    pdl_trigger();
    pdl_wait();
    __shared__ unsigned long long sk[8];
    const float* row = logits + (size_t)blockIdx.x * vocab;
    const int per = (vocab + ARGMAX_PARTS - 1) / ARGMAX_PARTS;
    const int start = blockIdx.y * per, end = min(vocab, start + per);
    unsigned long long best = 0;
    for (int i = start + threadIdx.x; i < end; i += blockDim.x) {
        const unsigned long long k = argmax_key(row[i], i);
        best = k > best ? k : best;
    }
    best = warp_max(best);
    if ((threadIdx.x & 31) == 0) sk[threadIdx.x >> 5] = best;
    __syncthreads();
    if (threadIdx.x < 32) {
        best = threadIdx.x < (blockDim.x >> 5) ? sk[threadIdx.x] : 0;
        best = warp_max(best);
        if (threadIdx.x == 0) keys[(size_t)blockIdx.x * ARGMAX_PARTS + blockIdx.y] = best;
    }
}

// grid rows, 32 threads.
extern "C" __global__ void argmax_final(const unsigned long long* __restrict__ keys,
                                        unsigned int* __restrict__ out) {
    pdl_trigger();
    pdl_wait();
    const unsigned long long k = warp_max(keys[(size_t)blockIdx.x * ARGMAX_PARTS + threadIdx.x]);
    // An empty slice keeps key 0; vocab >= 1 guarantees a real key wins.
    if (threadIdx.x == 0) out[blockIdx.x] = 0xffffffffu - (unsigned)(k & 0xffffffffu);
}
