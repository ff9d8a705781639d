// Prefill with FP8 weights: expand one matrix to bf16 for cuBLAS (at load, for the kept
// prefill copies, or at every prefill: the engine's `--fp8-prefill-weights`). code * scale
// is computed in f32 and rounded once to bf16 (the only rounding; the decode GEMMs keep it
// in f32). Each thread converts 8 codes. w [N, K] e4m3 codes row-major, scales and il as
// the skinny GEMMs read them (fp8_scale_row, skinny_tiles.cuh); K % 8 == 0.
extern "C" __global__ void fp8_dequant_bf16(const unsigned char* __restrict__ w,
                                            const float* __restrict__ scale_inv,
                                            __nv_bfloat16* __restrict__ out, int N, int K,
                                            int R, int il) {
    pdl_trigger();
    pdl_wait();
    const size_t i8 = (size_t)blockIdx.x * blockDim.x + threadIdx.x;  // group of 8 codes
    const size_t total8 = (size_t)N * K / 8;
    if (i8 >= total8) return;
    const size_t e = i8 * 8;
    const int n = (int)(e / K), k = (int)(e % K);
    const float s = scale_inv[(size_t)fp8_scale_row(n, il, R) * ((K + 127) / 128) + k / 128];
    const uint2 v = *reinterpret_cast<const uint2*>(w + e);
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
