// The latency of one dependent load while the rest of the GPU streams weights from HBM
// (bin/latency_load.rs): what each round trip of a decode step's latency-bound kernels (norms,
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
// the next value. A chain of them measures a kernel boundary plus one round trip. V only
// makes distinct functions: a chain cycling through latency_hop and latency_hop_t1..t3
// separates the cost of switching functions from that of fetching much code.
template <int V>
__device__ __forceinline__ void tiny_hop(const unsigned* __restrict__ in, unsigned* __restrict__ out) {
    pdl_trigger();
    pdl_wait();
    if (threadIdx.x == 0) out[0] = in[0] + 1;
}
extern "C" __global__ void latency_hop(const unsigned* __restrict__ in, unsigned* __restrict__ out) {
    tiny_hop<0>(in, out);
}
extern "C" __global__ void latency_hop_t1(const unsigned* __restrict__ in, unsigned* __restrict__ out) {
    tiny_hop<1>(in, out);
}
extern "C" __global__ void latency_hop_t2(const unsigned* __restrict__ in, unsigned* __restrict__ out) {
    tiny_hop<2>(in, out);
}
extern "C" __global__ void latency_hop_t3(const unsigned* __restrict__ in, unsigned* __restrict__ out) {
    tiny_hop<3>(in, out);
}

// The same hop with a long straight run of code before its store (~2700 instructions,
// 43.5 KB of SASS; four dependent chains, ~3 us of issue), in four variants with different
// constants, so that a chain cycling through them holds ~174 KB of code: what fetching a
// latency-bound kernel's code again costs, if an SM cannot keep a layer's kernels.
// (Measured, 2026-12-01 05:42: an SM keeps ~130 KB; past that +2.5 us per such kernel, the same
// beside the weight stream.)
constexpr int HOP_CODE_STEPS = 384;
template <int V>
__device__ __forceinline__ void latency_hop_code(const unsigned* __restrict__ in,
                                                 unsigned* __restrict__ out) {
    pdl_trigger();
    pdl_wait();
    const unsigned x = in[0];
    // Xor-multiply and add-rotate steps do not fold into fewer instructions.
    unsigned a = x, b = x ^ 0x1234567u, c = x + 0x89abcdefu, d = x * 3u;
#pragma unroll
    for (int i = 0; i < HOP_CODE_STEPS; ++i) {
        const unsigned k = 0x9E3779B1u * (unsigned)(4 * i + V + 1);
        a = (a ^ k) * 0x85EBCA6Bu;
        b = __funnelshift_l(b + k, b + k, 7);
        c = (c * 0xC2B2AE35u) ^ k;
        d = __funnelshift_l(d ^ k, d ^ k, 13) + 0x27d4eb2fu;
    }
    if (threadIdx.x == 0) {
        out[0] = x + 1;
        // Keeps the run live without changing the count.
        if ((a ^ b ^ c ^ d) == 0x9e3779b9u) out[1] = a;
    }
}
extern "C" __global__ void latency_hop_code0(const unsigned* __restrict__ in, unsigned* __restrict__ out) {
    latency_hop_code<0>(in, out);
}
extern "C" __global__ void latency_hop_code1(const unsigned* __restrict__ in, unsigned* __restrict__ out) {
    latency_hop_code<1>(in, out);
}
extern "C" __global__ void latency_hop_code2(const unsigned* __restrict__ in, unsigned* __restrict__ out) {
    latency_hop_code<2>(in, out);
}
extern "C" __global__ void latency_hop_code3(const unsigned* __restrict__ in, unsigned* __restrict__ out) {
    latency_hop_code<3>(in, out);
}
