// Per-slot state beside the KV cache for speculative decoding: the target's captured
// hidden states (the draft's aux input) stored by KV slot, and moving accepted tree nodes'
// rows (K, V and aux of every layer) from their verify slots to their sequential ones.
#include <cuda_bf16.h>

// aux[slots[t] * W + col + i] = bf16(x[t * H + i]) for i < H: one block per token.
extern "C" __global__ void aux_store(const float* __restrict__ x, const int* __restrict__ slots,
                                     __nv_bfloat16* __restrict__ aux, int H, int W, int col) {
    pdl_trigger();
    pdl_wait();
    const int t = blockIdx.x;
    const float* src = x + (size_t)t * H;
    __nv_bfloat16* dst = aux + (size_t)slots[t] * W + col;
    for (int i = threadIdx.x; i < H; i += blockDim.x) dst[i] = __float2bfloat16(src[i]);
}

// For each buffer b (bufs[b]: a bf16 array of rows of widths[b] elements, one per slot) and
// each pair p in order: row pairs[2p + 1] = row pairs[2p]. Block (b, c) owns columns
// [c * blockDim.x, (c + 1) * blockDim.x) of buffer b and walks the pairs in order, each
// thread on its own column: a later pair that reads a row an earlier one wrote reads it
// after the write (program order), and no other thread touches that element. Why in order:
// a path's node d moves to d + 1 and node d + 1 may sit where an earlier node lands.
extern "C" __global__ void slot_rows_move(const unsigned long long* __restrict__ bufs,
                                          const int* __restrict__ widths,
                                          const int* __restrict__ pairs, int n) {
    pdl_trigger();
    pdl_wait();
    const int b = blockIdx.x, col = blockIdx.y * blockDim.x + threadIdx.x, w = widths[b];
    if (col >= w) return;
    unsigned short* rows = reinterpret_cast<unsigned short*>(bufs[b]);
    for (int p = 0; p < n; ++p) {
        const int from = pairs[2 * p], to = pairs[2 * p + 1];
        rows[(size_t)to * w + col] = rows[(size_t)from * w + col];
    }
}
