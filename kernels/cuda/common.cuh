// Prepended to every kernel source (sources.rs).
//
// Programmatic dependent launch (sm_90+, launch.rs): a kernel launched with the PDL
// attribute may start before the previous kernel on the stream has finished.
// pdl_wait() returns once every earlier kernel has completed and its writes are visible,
// so each kernel calls it before it reads or writes any buffer another kernel touches;
// only reads of constant data (weights) may come before it. pdl_trigger() lets the next
// kernel launch now; every kernel calls it first thing, since the next one waits anyway.
// Both are no-ops for a launch without the attribute.
#pragma once

// The block timeline (a timing instrument, kernels/src/trace.rs; never in a normal build):
// with LATLAB_TRACE_BUF defined as the device address of a u64 buffer, thread 0 of every
// block records when the block starts (pdl_trigger, every kernel's first statement, kind 0),
// when its wait on the previous kernel returns (pdl_wait, kind 1), and points the kernel
// marks itself (TRACE_MARK(2..7)). Layout: a u64 count of records, then a record of
// LATLAB_TRACE_REC u64 per block: smid << 53 | warps << 47 | blocks in the grid << 23 |
// linear block index, then %globaltimer (ns) of kinds 0-7, 0 where absent. The record is
// reserved with one atomic at the block's start, so only that event stalls thread 0 for a
// round trip (before the block's wait, where it mostly waits anyway).
#ifdef LATLAB_TRACE_BUF
#define LATLAB_TRACE_REC 9
__device__ __forceinline__ void latlab_trace(unsigned kind) {
    __shared__ unsigned long long rec;  // this block's record, reserved at its start
    if (threadIdx.x | threadIdx.y | threadIdx.z) return;
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    unsigned long long* buf = reinterpret_cast<unsigned long long*>(LATLAB_TRACE_BUF);
    if (kind == 0) {
        rec = atomicAdd(buf, 1ULL);
        if (rec < LATLAB_TRACE_CAP) {
            unsigned smid;
            asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
            const unsigned long long grid = (unsigned long long)gridDim.x * gridDim.y * gridDim.z;
            const unsigned long long block =
                blockIdx.x +
                (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
            const unsigned long long warps = (blockDim.x * blockDim.y * blockDim.z + 31) / 32;
            buf[1 + rec * LATLAB_TRACE_REC] = (unsigned long long)(smid & 0xff) << 53 |
                                              (warps & 0x3f) << 47 | (grid & 0xffffff) << 23 |
                                              (block & 0x7fffff);
        }
    }
    if (rec < LATLAB_TRACE_CAP && kind < 8) buf[1 + rec * LATLAB_TRACE_REC + 1 + kind] = t;
}
#define TRACE_MARK(kind) latlab_trace(kind)
#else
#define latlab_trace(kind)
#define TRACE_MARK(kind)
#endif

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    latlab_trace(1);
}

__device__ __forceinline__ void pdl_trigger() {
    latlab_trace(0);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// A shared-memory address as the 32-bit offset PTX's shared-memory operands take.
__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared without registers (cp.async, completed by cp.async.wait_*).
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_addr(dst)), "l"(src)
                 : "memory");
}

// c += a b on the tensor cores: m16n8k16, bf16 operands in the PTX fragment layouts (a: 4
// registers of the 16x16 row-major tile, b: 2 of the 16x8 column-major one), f32 c.
__device__ __forceinline__ void mma_bf16_16816(float (&c)[4], const unsigned (&a)[4],
                                               unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two bf16 (a word's low and high halves) as two f16, saturating at +-65504: exact for
// |x| in [2^-14, 65504] (f16 has 3 more mantissa bits than bf16 and fewer exponent bits).
// How the FP8 GEMMs take bf16 x onto the f16 tensor cores (skinny_tiles.cuh), and how the
// `_f16` norms and `_xh` SwiGLU epilogues write x for them (FP8 decode at 2-8 rows): one
// conversion, so both give the same bits.
__device__ __forceinline__ unsigned bf16x2_to_f16x2(unsigned u) {
    const float lo = __uint_as_float(u << 16), hi = __uint_as_float(u & 0xffff0000u);
    unsigned r;
    asm("cvt.rn.satfinite.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
