// Skinny GEMM for decode, the register pipeline (the tiles and epilogues: skinny_tiles.cuh).
// Each warp alternates two register stages, loading one chunk while multiplying the other,
// so its loads stay in flight through the MMAs (the first version loaded 4 chunks, then
// multiplied them, and left DRAM idle meanwhile: 2.2-3.8 TB/s). Measured slower and
// dropped (engine/PERF.md, session 3): L2 prefetch of the rows ahead of the loads (2-20 %
// slower), and a cp.async ring of 3-8 shared-memory stages per warp (half the bandwidth).
// Also the FP8 dequantization for prefill.

// The pipeline both kernels share. Tile supplies the weight layout: Stage (one chunk's
// registers), nch (chunks of 128 weight bytes per row), load_w / load_x (a chunk's weights
// and tokens into a stage; chunks past nch load zeros) and mma (a stage into the
// accumulators). Two stages alternate, loading one chunk while multiplying the other. The
// first chunk's weights are requested before pdl_wait, while the previous kernel may still
// run (launch.rs).
template <class Tile, class Out>
__device__ __forceinline__ void skinny_pipeline(const Tile& tile, Out* __restrict__ y, int M,
                                                int N, int n0) {
    const int warp = threadIdx.x >> 5;
    float c0[4] = {0.f, 0.f, 0.f, 0.f}, c1[4] = {0.f, 0.f, 0.f, 0.f};
    typename Tile::Stage s0, s1;
    int ch = warp;
    tile.load_w(s0, ch);
    pdl_wait();  // x comes from the previous kernel; the weights above did not need it
    tile.load_x(s0, ch);
    while (ch < tile.nch) {
        tile.load_w(s1, ch + SG_WARPS);
        tile.load_x(s1, ch + SG_WARPS);
        tile.mma(c0, s0);
        ch += SG_WARPS;
        if (ch >= tile.nch) break;
        tile.load_w(s0, ch + SG_WARPS);
        tile.load_x(s0, ch + SG_WARPS);
        tile.mma(c1, s1);
        ch += SG_WARPS;
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) c0[i] += c1[i];
    store_out(c0, y, M, N, n0);
}

// x [M, K] bf16, w [N, K] bf16, y [M, N] f32; K % 8 == 0 (checked by the launcher).
extern "C" __global__ void __launch_bounds__(SG_WARPS * 32, 2)
    skinny_gemm_bf16(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                     float* __restrict__ y, int M, int N, int K) {
    pdl_trigger();
    const TileBf16 tile(x, w, M, N, K, blockIdx.x);
    skinny_pipeline(tile, y, M, N, tile.n0);
}

// The same over interleaved gate|up weights [N = 2 * inter, K], writing act [M, inter] bf16.
extern "C" __global__ void __launch_bounds__(SG_WARPS * 32, 2)
    skinny_gemm_bf16_swiglu(const __nv_bfloat16* __restrict__ x,
                            const __nv_bfloat16* __restrict__ w,
                            __nv_bfloat16* __restrict__ act, int M, int N, int K) {
    pdl_trigger();
    const TileBf16 tile(x, w, M, N, K, blockIdx.x);
    skinny_pipeline(tile, act, M, N, tile.n0);
}

extern "C" __global__ void __launch_bounds__(SG_WARPS * 32, 2)
    skinny_gemm_fp8(const __nv_bfloat16* __restrict__ x, const unsigned char* __restrict__ w,
                    const float* __restrict__ scale_inv, float* __restrict__ y, int M, int N,
                    int K, int R, int il) {
    pdl_trigger();
    const TileFp8 tile(x, w, scale_inv, M, N, K, R, il, blockIdx.x);
    skinny_pipeline(tile, y, M, N, tile.n0);
}

// FP8 gate|up (interleaved codes, il = inter) fused with SwiGLU: act [M, N / 2] bf16.
extern "C" __global__ void __launch_bounds__(SG_WARPS * 32, 2)
    skinny_gemm_fp8_swiglu(const __nv_bfloat16* __restrict__ x,
                           const unsigned char* __restrict__ w,
                           const float* __restrict__ scale_inv,
                           __nv_bfloat16* __restrict__ act, int M, int N, int K, int R, int il) {
    pdl_trigger();
    const TileFp8 tile(x, w, scale_inv, M, N, K, R, il, blockIdx.x);
    skinny_pipeline(tile, act, M, N, tile.n0);
}

// Prefill with FP8 weights: expand one matrix to bf16 for cuBLAS. code * scale is computed
// in f32 and rounded once to bf16 (the only rounding; the decode kernel keeps it in f32).
// Each thread converts 8 codes. Layout, R and il as skinny_gemm_fp8; K % 8 == 0.
extern "C" __global__ void fp8_dequant_bf16(const unsigned char* __restrict__ w,
                                            const float* __restrict__ scale_inv,
                                            __nv_bfloat16* __restrict__ out, int N, int K,
                                            int R, int il, int tiled) {
    pdl_trigger();
    pdl_wait();
    const size_t i8 = (size_t)blockIdx.x * blockDim.x + threadIdx.x;  // group of 8 codes
    const size_t total8 = (size_t)N * K / 8;
    if (i8 >= total8) return;
    const size_t e = i8 * 8;
    const int n = (int)(e / K), k = (int)(e % K);
    const float s = scale_inv[(size_t)fp8_scale_row(n, il, R) * ((K + 127) / 128) + k / 128];
    // Tiled codes (ops::tiled_index): tile of 16 rows, then 1 KB pieces, each piece's rows
    // side by side. A group of 8 codes never straddles a piece (K % 8 == 0).
    size_t src = e;
    if (tiled) {
        const int n0 = n & ~15, rows = min(16, N - n0), c0 = k & ~1023;
        src = (size_t)n0 * K + (size_t)rows * c0 + (size_t)(n - n0) * min(1024, K - c0) +
              (k - c0);
    }
    const uint2 v = *reinterpret_cast<const uint2*>(w + src);
    const unsigned words[2] = {v.x, v.y};
    __align__(16) __nv_bfloat162 o[4];
#pragma unroll
    for (int j = 0; j < 2; ++j) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const __half2_raw hr = __nv_cvt_fp8x2_to_halfraw2(
                (unsigned short)(h ? words[j] >> 16 : words[j] & 0xffff), __NV_E4M3);
            const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&hr));
            o[2 * j + h] = __floats2bfloat162_rn(f.x * s, f.y * s);
        }
    }
    *reinterpret_cast<uint4*>(out + e) = *reinterpret_cast<const uint4*>(o);
}
