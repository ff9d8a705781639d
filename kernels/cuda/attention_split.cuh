// What the split attention files share (sources.rs puts it in front of decode_attention.cu
// and decode_attention_mma.cu, after common.cuh): the cache slots of a tile's positions, the
// merge weights of the splits' partial states, and the thread block cluster helpers that
// merge them through distributed shared memory. Both merges (the combine kernel and the
// clusters) run the same operations in the same order, so they give the same bits.
#include <cuda_bf16.h>

// The cache slot of each position [t0, t0 + n) of a row whose block table is `table`, into
// s_slot[0, n) (threads below n, one each; the caller's barrier publishes them).
__device__ __forceinline__ void tile_slots(int* s_slot, const int* __restrict__ table, int t0,
                                           int n, int block_size) {
    if (threadIdx.x < n) {
        const int p = t0 + threadIdx.x;
        s_slot[threadIdx.x] = table[p / block_size] * block_size + p % block_size;
    }
}

// Thread block clusters (decode_attention_cluster): the splits of one (row, kv head) are one
// cluster, and they merge through distributed shared memory instead of a second kernel.
__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

// Every thread of every block of the cluster arrives; on return, what the cluster's blocks
// wrote to shared memory before it is visible to all of them.
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;"
                 ::: "memory");
}

// The generic address of `p` (this block's shared memory) in the cluster's block `rank`.
template <class T>
__device__ __forceinline__ const T* peer(const T* p, unsigned rank) {
    unsigned long long out;
    asm volatile("mapa.u64 %0, %1, %2;" : "=l"(out) : "l"(p), "r"(rank));
    return reinterpret_cast<const T*>(out);
}

// The merge weights, by warp 0, whose lane s holds split s's (m, l) (-inf, 0 past the
// splits): w_s = e^(m_s - m) over the splits with l > 0 (m their max) into s_w[lane], and
// 1 / sum_s l_s w_s into *s_inv_l. Shared by both merges, which must give the same bits.
__device__ __forceinline__ void merge_weights(float m, float l, float* s_w, float* s_inv_l) {
    const int lane = threadIdx.x;
    float gm = l > 0.f ? m : __int_as_float(0xff800000);
    for (int o = 16; o > 0; o >>= 1) gm = fmaxf(gm, __shfl_xor_sync(0xffffffff, gm, o));
    const float w = l > 0.f ? expf(m - gm) : 0.f;
    float lw = l * w;
    for (int o = 16; o > 0; o >>= 1) lw += __shfl_xor_sync(0xffffffff, lw, o);
    s_w[lane] = w;
    if (lane == 0) *s_inv_l = 1.f / lw;
}

// The merge of decode_attention_combine for head h of this (row, kv head), over the
// cluster's nsplit blocks: each one's (m, l) from s_m / s_l and its acc from s_acc
// ([G][D] floats), read from the peer's shared memory. The same operations in the same
// order as the combine kernel, so the same bits.
__device__ __forceinline__ void cluster_merge_head(const float* s_m, const float* s_l,
                                                   const float* s_acc, float* s_w,
                                                   float* s_inv_l, int h, int D, int nsplit,
                                                   __nv_bfloat16* __restrict__ dst) {
    const int tid = threadIdx.x;
    if (tid < 32) {
        float m = __int_as_float(0xff800000), l = 0.f;
        if (tid < nsplit) {
            m = peer(s_m, tid)[h];
            l = peer(s_l, tid)[h];
        }
        merge_weights(m, l, s_w, s_inv_l);
    }
    __syncthreads();
    if (tid < D) {
        float o = 0.f;
        for (int s = 0; s < nsplit; ++s) o = fmaf(peer(s_acc, s)[h * D + tid], s_w[s], o);
        dst[tid] = __float2bfloat16(o * *s_inv_l);
    }
    __syncthreads();  // s_w and s_inv_l are rewritten for the next head
}
