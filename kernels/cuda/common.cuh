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

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// A shared-memory address as the 32-bit offset PTX's shared-memory operands take.
__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
