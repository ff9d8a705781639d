// The latency of one dependent load while the rest of the GPU streams weights from HBM
// (gpu_latency_load.rs): what each round trip of a decode step's latency-bound kernels (norms,
// rope, attention, merge) costs beside the next GEMM's early copies.

// One thread follows `next` (a random cycle over 128-byte lines: next[i] is the index of
// the next line's first word) from word `start` for `hops` loads and writes the nanoseconds
// they took. ld.global.cg caches in L2 only, so every hop leaves the SM.
extern "C" __global__ void latency_chase(const unsigned* __restrict__ next, unsigned start,
                                         int hops, unsigned long long* __restrict__ out) {
    unsigned i = start;
    unsigned long long t0, t1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    for (int h = 0; h < hops; ++h)
        asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(i) : "l"(next + i) : "memory");
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    out[0] = t1 - t0;
    out[1] = i;  // keeps the chain's loads live
}

// Every thread streams 16-byte loads over n16 pieces of src, `passes` times, four in flight,
// bypassing L1 as the GEMMs' weight loads do; the xor keeps them live.
extern "C" __global__ void stream_load(const uint4* __restrict__ src, unsigned long long n16,
                                       int passes, unsigned* __restrict__ out) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned acc = 0;
    for (int p = 0; p < passes; ++p) {
        for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
             i < n16; i += 4 * stride) {
            uint4 v[4];
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const unsigned long long q = i + j * stride;
                v[j] = make_uint4(0, 0, 0, 0);
                if (q < n16)
                    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                                 : "=r"(v[j].x), "=r"(v[j].y), "=r"(v[j].z), "=r"(v[j].w)
                                 : "l"(src + q));
            }
#pragma unroll
            for (int j = 0; j < 4; ++j) acc ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
        }
    }
    if (acc == 0x9e3779b9u) out[0] = acc;
}

// One hop of a chain of dependent kernels, as a decode layer's latency-bound kernels chain:
// launched with PDL, it waits on the kernel before it, reads what that one wrote and writes
// the next value. A chain of them measures a kernel boundary plus one round trip.
extern "C" __global__ void latency_hop(const unsigned* __restrict__ in, unsigned* __restrict__ out) {
    pdl_trigger();
    pdl_wait();
    if (threadIdx.x == 0) out[0] = in[0] + 1;
}
