// Lab kernels (bin/wide_rows64.rs times them): the production wide FP8 GEMM
// (kernels/cuda/wide_fp8.cu) at 64 token rows in nine block shapes, where the 16- and
// 32-row forms' block (4 warps of one 16-row fragment, 4 stages) loses to cuBLAS on the
// bf16 copies (engine/PERF-LOG.md step 76). w64_w{warps}_r{fragments}_s{stages}: the
// production entries' arguments (x, w, scale_inv, y, M, N, K, R, il, splits, clear,
// clear_n4); BLOCKS as the ring and registers allow.
#define WR_ENTRY(NAME, WARPS, RF, STAGES, BLOCKS)                                                  \
    extern "C" __global__ void __launch_bounds__(32 * WARPS, BLOCKS)                              \
        NAME(const __half* __restrict__ x, const unsigned char* __restrict__ w,                   \
             const float* __restrict__ scale_inv, float* __restrict__ y, int M, int N, int K,     \
             int R, int il, int splits, float* __restrict__ clear, int clear_n4) {                \
        wide_fp8<8, WARPS, RF, STAGES, false, false>(reinterpret_cast<const unsigned char*>(x), w, \
                                                     scale_inv, y, M, N, K, R, il, splits, clear,  \
                                                     clear_n4);                                    \
    }
WR_ENTRY(w64_w4_r1_s4, 4, 1, 4, 2)
WR_ENTRY(w64_w4_r1_s3, 4, 1, 3, 3)
WR_ENTRY(w64_w2_r2_s3, 2, 2, 3, 3)
WR_ENTRY(w64_w2_r2_s4, 2, 2, 4, 2)
WR_ENTRY(w64_w4_r2_s2, 4, 2, 2, 3)
WR_ENTRY(w64_w4_r2_s3, 4, 2, 3, 2)
WR_ENTRY(w64_w4_r2_s4, 4, 2, 4, 1)
WR_ENTRY(w64_w8_r1_s3, 8, 1, 3, 2)
WR_ENTRY(w64_w8_r2_s3, 8, 2, 3, 1)
