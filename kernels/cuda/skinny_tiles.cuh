// Included in front of skinny_bulk.cu and fp8_dequant.cu (sources.rs), and the lab's
// experiments built on the bulk pipeline (kernels/lab/src/sources.rs).
//
// Skinny GEMM for decode: y[m, n] = sum_k x[m, k] * w[n, k] for M <= 8 token rows, on the
// tensor cores (mma.sync m16n8k16, f32 accumulation). The weight tile is the MMA's A
// operand (16 output rows), the tokens are B (n = 8 columns; rows >= M are zeros), so one
// kernel serves M = 1..8 at the same cost: decode is bound by the weight stream, and the
// tensor cores make the FMAs and the x loads free next to it (the CUDA-core GEMV did 8x the
// FMAs and x loads at M = 8 and fell to ~1.2 TB/s).
//
// The k order inside a dot product is free as long as A and B agree, so each thread loads
// 16 contiguous bytes of its weight rows and of its token's x, and feeds them to the MMA as
// if they were the fragment's k positions (the fragment's "logical" k 2t..2t+1 and 2t+8..9
// of thread t are physical k 4 words further on; see the chunk layouts below). Every global
// load is then a full 16-byte vector and every line fetched is used whole.
//
// A block's 8 multiplying warps work on one 16-row tile at a time: the warps split K
// (interleaved chunks, so the block reads each weight row as one contiguous stream) and
// meet in shared memory. How the weights reach the warps' registers is the pipeline's
// business (skinny_bulk.cu: a producer warp copies them into a shared-memory ring). This
// header holds the tiles (weight layout, loads of x, MMAs) and the epilogues that sum the
// warps and store.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_fp16.h>

#define SG_WARPS 8

// c += A B on the tensor cores (mma.sync m16n8k16, f32 accumulation): A is 16 x 16 in four
// registers of two values, B 16 x 8 in two. mma_bf16 for bf16 operands, mma_f16 for f16.
#define SG_MMA(name, type)                                                                 \
    __device__ __forceinline__ void name(float (&c)[4], unsigned a0, unsigned a1,          \
                                         unsigned a2, unsigned a3, unsigned b0, unsigned b1) { \
        asm("mma.sync.aligned.m16n8k16.row.col.f32." type "." type                        \
            ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"                   \
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])                                \
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));                       \
    }
SG_MMA(mma_bf16, "bf16")
SG_MMA(mma_f16, "f16")

// A barrier over the SG_WARPS warps that multiply (threads 0..255): the bulk-copy kernels'
// extra producer warp has left by the time they reduce.
__device__ __forceinline__ void consumers_sync() {
    asm volatile("bar.sync 1, %0;" ::"n"(SG_WARPS * 32) : "memory");
}

// Every warp's accumulator fragment into shared memory, then a barrier over the multiplying
// warps; the epilogues below sum red[w][row][m] over the warps w. One array for all of them.
typedef float RedTile[16][8];
__device__ __forceinline__ const RedTile* gather_fragments(const float (&c)[4]) {
    __shared__ float red[SG_WARPS][16][8];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    red[warp][g][2 * t] = c[0];
    red[warp][g][2 * t + 1] = c[1];
    red[warp][g + 8][2 * t] = c[2];
    red[warp][g + 8][2 * t + 1] = c[3];
    consumers_sync();
    return red;
}

// Sum the 8 warps' fragments and store y[m, n] for this block's 16 rows.
__device__ __forceinline__ void reduce_store(const float (&c)[4], float* __restrict__ y, int M,
                                             int N, int n0) {
    const RedTile* red = gather_fragments(c);
    if (threadIdx.x < 128) {
        const int r = threadIdx.x & 15, m = threadIdx.x >> 4;
        float s = 0.f;
#pragma unroll
        for (int w = 0; w < SG_WARPS; ++w) s += red[w][r][m];
        if (m < M && n0 + r < N) y[(size_t)m * N + n0 + r] = s;
    }
}

// Gate|up fused with SwiGLU: the weight rows come interleaved by 8 (tile j = gate rows
// 8j..8j+7, then up rows 8j..8j+7; ops::interleave_gate_up), so one block holds both halves
// of 8 outputs and writes act[m, 8j + r] = bf16(silu(g) * u) itself: no f32 gate|up buffer
// and no separate swiglu kernel. Sums and formula are those of reduce_store + swiglu.cu.
__device__ __forceinline__ void reduce_store_swiglu(const float (&c)[4],
                                                    __nv_bfloat16* __restrict__ act, int M,
                                                    int inter, int n0) {
    const RedTile* red = gather_fragments(c);
    if (threadIdx.x < 64) {
        const int r = threadIdx.x & 7, m = threadIdx.x >> 3;
        float gs = 0.f, us = 0.f;
#pragma unroll
        for (int w = 0; w < SG_WARPS; ++w) {
            gs += red[w][r][m];
            us += red[w][r + 8][m];
        }
        const int col = n0 / 2 + r;
        if (m < M && col < inter)
            act[(size_t)m * inter + col] = __float2bfloat16(gs / (1.0f + expf(-gs)) * us);
    }
}

// Where a kernel's sums go: y [M, N] f32 (Out = float), or act [M, N / 2] bf16 through
// SwiGLU for interleaved gate|up weights (Out = __nv_bfloat16, or __half for `_xh`).
__device__ __forceinline__ void store_out(const float (&c)[4], float* y, int M, int N, int n0) {
    reduce_store(c, y, M, N, n0);
}
__device__ __forceinline__ void store_out(const float (&c)[4], __nv_bfloat16* act, int M, int N,
                                          int n0) {
    reduce_store_swiglu(c, act, M, N / 2, n0);
}


// The rows one thread of a 16-row tile works on: weight rows n0 + g and n0 + g + 8 (the
// MMA's A rows g and g + 8) and token row g (its B column g), with g = lane / 4 and t =
// lane % 4 its place in the quad. Rows past N or M point at row 0 and are masked (va, vb,
// vx) where they are loaded.
struct TileRows {
    int n0, N, K, g, t;
    bool va, vb, vx;
    // `tile`: which 16-row tile (a persistent block takes several in turn).
    __device__ TileRows(int M, int N_, int K_, unsigned tile) : N(N_), K(K_) {
        const int lane = threadIdx.x & 31;
        g = lane >> 2;
        t = lane & 3;
        n0 = tile * 16;
        va = n0 + g < N;
        vb = n0 + g + 8 < N;
        vx = g < M;
    }
    __device__ int row_a() const { return va ? n0 + g : 0; }
    __device__ int row_b() const { return vb ? n0 + g + 8 : 0; }
    __device__ int row_x() const { return vx ? g : 0; }
};

// bf16 weights. A chunk is 64 k: thread t of a quad takes k 16t..16t+15 (two 16-byte
// pieces, 32 contiguous bytes of each of its two rows, so a quad covers a full 128-byte
// line per row), i.e. four MMAs.
struct TileBf16 : TileRows {
    struct Stage {
        uint4 a[2], b[2], x[2];
    };
    const uint4* xr;
    const __nv_bfloat16* w;
    int k8, nch;
    // For the bulk-copy pipeline: the rows as bytes, and 16-byte pieces per row.
    __device__ const unsigned char* bytes() const {
        return reinterpret_cast<const unsigned char*>(w);
    }
    __device__ int row_bytes() const { return K * 2; }
    __device__ int pieces() const { return k8; }

    __device__ TileBf16(const __nv_bfloat16* x, const __nv_bfloat16* w_, int M, int N_, int K_,
                        unsigned tile)
        : TileRows(M, N_, K_, tile), w(w_) {
        xr = reinterpret_cast<const uint4*>(x + (size_t)row_x() * K);
        k8 = K / 8;             // 16-byte pieces per row
        nch = (k8 + 7) / 8;     // 64-k chunks = 128 bytes per row
    }
    __device__ void load_x(Stage& s, int ch) const {
        const uint4 z = make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            const int p = (ch * 4 + t) * 2 + j;
            s.x[j] = ch < nch && p < k8 && vx ? __ldg(xr + p) : z;
        }
    }
    // Block-wide set-up after the wait on the previous kernel (TileFp8S stages x there).
    __device__ void prepare() const {}
    __device__ void mma(float (&c)[4], const Stage& s) const {
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            mma_bf16(c, s.a[j].x, s.b[j].x, s.a[j].y, s.b[j].y, s.x[j].x, s.x[j].y);
            mma_bf16(c, s.a[j].z, s.b[j].z, s.a[j].w, s.b[j].w, s.x[j].z, s.x[j].w);
        }
    }
};

// FP8 weights meet the tokens on the f16 tensor cores, not the bf16 ones: two e4m3 codes
// become two f16 in one conversion, exactly (every e4m3 value, subnormals included, is a
// normal f16), where reaching bf16 took three more (f16 -> f32 -> bf16). The tokens are
// converted instead, bf16 -> f16, which is exact for |x| in [2^-14, 65504] (f16 has 3 more
// mantissa bits than bf16 and fewer exponent bits): smaller values lose low bits as f16
// subnormals (a relative error that only touches terms below 6e-5), and larger ones
// saturate to +-65504 instead of becoming infinite (decode inputs are normed activations
// and SwiGLU outputs, far below that). Per 128-k chunk and thread: 32 code pairs at 1
// instruction instead of 4, 16 token pairs at 3 instead of 0 (engine/PERF-LOG.md step 14;
// an integer e4m3 -> bf16 placement measured slower there).
__device__ __forceinline__ unsigned fp8x2_to_f16x2(unsigned short v) {
    const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(v, __NV_E4M3);
    return *reinterpret_cast<const unsigned*>(&h);
}

// FP8 weights with block scales: w [N, K] e4m3 codes, scale_inv [ceil(N/R), ceil(K/128)]
// f32 with w_real = code * scale_inv[n/R][k/128]. R = 128 is the Qwen3-8B-FP8 layout; the
// engine passes R = 1 (a scale row per weight row) when it fuses projections whose row
// counts are not multiples of 128 (tiny test models). A chunk is 128 k, exactly one scale
// column (thread t of a quad takes codes 32t..32t+31: a full 128-byte line per row per
// quad), so each chunk's partial sums get their rows' scales in f32. K % 16 == 0.
// IL > 0: the codes are gate|up interleaved by 8 rows (IL = inter) while the scales keep
// the checkpoint's order, gate rows then up rows: fp8_scale_row maps a code row back.
__device__ __forceinline__ int fp8_scale_row(int n, int il, int R) {
    const int orig = il == 0 ? n : ((n & 15) < 8 ? 0 : il) + (n >> 4) * 8 + (n & 7);
    return orig / R;
}

struct TileFp8 : TileRows {
    struct Stage {
        uint4 a[2], b[2], x[4];
        float sa, sb;  // scales of rows g and g + 8 for this chunk
    };
    const uint4* xr;
    const unsigned char* w;
    const float *sra, *srb;
    int k16, nch;
    __device__ const unsigned char* bytes() const { return w; }
    __device__ int row_bytes() const { return K; }
    __device__ int pieces() const { return k16; }

    __device__ TileFp8(const __nv_bfloat16* x, const unsigned char* w_, const float* scale_inv,
                       int M, int N_, int K_, int R, int il, unsigned tile)
        : TileRows(M, N_, K_, tile), w(w_) {
        xr = reinterpret_cast<const uint4*>(x + (size_t)row_x() * K);
        const int sc = (K + 127) / 128;
        sra = scale_inv + (size_t)fp8_scale_row(row_a(), il, R) * sc;
        srb = scale_inv + (size_t)fp8_scale_row(row_b(), il, R) * sc;
        k16 = K / 16;           // 16-byte pieces of a weight row
        nch = (k16 + 7) / 8;    // 128-k chunks = 128 bytes per row
    }
    // A piece is 16 codes, i.e. 2 x-pieces.
    __device__ void load_x(Stage& s, int ch) const {
        const uint4 z = make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            const int p = (ch * 4 + t) * 2 + j;
            const bool ok = ch < nch && p < k16 && vx;
            s.x[2 * j] = ok ? __ldg(xr + 2 * p) : z;
            s.x[2 * j + 1] = ok ? __ldg(xr + 2 * p + 1) : z;
        }
        load_scales(s, ch);
    }
    __device__ void prepare() const {}
    // The chunk's scales of rows g and g + 8 (part of load_x).
    __device__ void load_scales(Stage& s, int ch) const {
        s.sa = ch < nch ? __ldg(sra + ch) : 0.f;
        s.sb = ch < nch ? __ldg(srb + ch) : 0.f;
    }
    __device__ void mma(float (&c)[4], const Stage& s) const { mma_x<false>(c, s); }
    // XF16: the stage's x words are f16 pairs already (TileFp8S), not bf16 ones.
    template <bool XF16>
    __device__ void mma_x(float (&c)[4], const Stage& s) const {
        float p[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            const unsigned aw[4] = {s.a[j].x, s.a[j].y, s.a[j].z, s.a[j].w};
            const unsigned bw[4] = {s.b[j].x, s.b[j].y, s.b[j].z, s.b[j].w};
            const uint4 x0 = s.x[2 * j], x1 = s.x[2 * j + 1];
            const unsigned xw[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                // Word i holds codes 4i..4i+3 = f16 pairs 2i, 2i+1 = x words 2i, 2i+1.
                const unsigned x0 = XF16 ? xw[2 * i] : bf16x2_to_f16x2(xw[2 * i]);
                const unsigned x1 = XF16 ? xw[2 * i + 1] : bf16x2_to_f16x2(xw[2 * i + 1]);
                mma_f16(p, fp8x2_to_f16x2(aw[i] & 0xffff), fp8x2_to_f16x2(bw[i] & 0xffff),
                        fp8x2_to_f16x2(aw[i] >> 16), fp8x2_to_f16x2(bw[i] >> 16), x0, x1);
            }
        }
        // c[0], c[1] are row g's outputs, c[2], c[3] row g + 8's.
        c[0] = fmaf(s.sa, p[0], c[0]);
        c[1] = fmaf(s.sa, p[1], c[1]);
        c[2] = fmaf(s.sb, p[2], c[2]);
        c[3] = fmaf(s.sb, p[3], c[3]);
    }
};

// An FP8 tile whose x sits in shared memory as f16, staged once per block by prepare()
// (the `*_xs` bulk kernels, at one token row): the x loads through L1 at every stage were
// where the FP8 GEMM stalled most at batch 1 (engine/PERF-LOG.md step 24). Each 16-byte unit of a row holds 8 f16 of x at k 16p + 8h.. for the thread that reads
// it: unit ((ch * 2 + j) * 2 + h) * 4 + t of chunk ch, quad place t and piece j (p = (ch
// * 4 + t) * 2 + j), so a quad's four reads of one (j, h) are 64 contiguous bytes; rows
// are XS_PAD units apart beyond their chunks, so rows g and g + 1 of one read phase fall on
// other banks. The f16 values are bf16x2_to_f16x2's, as TileFp8 makes them per stage: the
// same products bit for bit.
#define XS_PAD 4
__host__ __device__ constexpr int xs_row_units(int K) { return (K / 16 + 7) / 8 * 16 + XS_PAD; }

struct TileFp8S : TileFp8 {
    uint4* xs;  // the block's staged x: M rows of xs_row_units(K) units
    const __nv_bfloat16* x;
    int M;
    __device__ TileFp8S(const __nv_bfloat16* x_, const unsigned char* w_, const float* scale_inv,
                        int M_, int N_, int K_, int R, int il, unsigned tile, uint4* xs_)
        : TileFp8(x_, w_, scale_inv, M_, N_, K_, R, il, tile), xs(xs_), x(x_), M(M_) {}
    // All multiplying threads: x [M, K] bf16 from global memory (16 contiguous bytes per
    // thread and step) into xs as f16, then their barrier.
    __device__ void prepare() const {
        const int groups = K / 8, units = xs_row_units(K);
        for (int i = threadIdx.x; i < M * groups; i += SG_WARPS * 32) {
            const int m = i / groups, q = i - m * groups;
            const int p = q >> 1, h = q & 1, ch = p >> 3, tq = (p & 7) >> 1, j = p & 1;
            const uint4 v = __ldg(reinterpret_cast<const uint4*>(x + (size_t)m * K) + q);
            xs[m * units + ((ch * 2 + j) * 2 + h) * 4 + tq] =
                make_uint4(bf16x2_to_f16x2(v.x), bf16x2_to_f16x2(v.y), bf16x2_to_f16x2(v.z),
                           bf16x2_to_f16x2(v.w));
        }
        consumers_sync();
    }
    __device__ void load_x(Stage& s, int ch) const {
        const uint4 z = make_uint4(0, 0, 0, 0);
        const uint4* r = xs + row_x() * xs_row_units(K);
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            const int p = (ch * 4 + t) * 2 + j, u = ((ch * 2 + j) * 2) * 4 + t;
            const bool ok = ch < nch && p < k16 && vx;
            s.x[2 * j] = ok ? r[u] : z;
            s.x[2 * j + 1] = ok ? r[u + 4] : z;
        }
        load_scales(s, ch);
    }
    __device__ void mma(float (&c)[4], const Stage& s) const { mma_x<true>(c, s); }
};

// The `_xh` kernels' tile (FP8 decode at 2-8 rows): x reaches the GEMM as f16, written so
// by its producer (the `_f16` norms, the `_xh` SwiGLU epilogue) with bf16x2_to_f16x2's
// bits, so no block converts it at every stage: the same products, bit for bit. The
// constructor takes x's address as bf16 only because the tile reads whole words of it,
// never values.
struct TileFp8H : TileFp8 {
    using TileFp8::TileFp8;
    __device__ void mma(float (&c)[4], const Stage& s) const { mma_x<true>(c, s); }
};

// reduce_store_swiglu for the `_xh` kernels: act as f16, each value rounded to bf16 first
// and taken to f16 as the FP8 GEMM after it (down) would take it. A copy of the bf16 one's
// sums, which keeps its SASS as measured.
__device__ __forceinline__ void reduce_store_swiglu_h(const float (&c)[4], __half* __restrict__ act,
                                                      int M, int inter, int n0) {
    const RedTile* red = gather_fragments(c);
    if (threadIdx.x < 64) {
        const int r = threadIdx.x & 7, m = threadIdx.x >> 3;
        float gs = 0.f, us = 0.f;
#pragma unroll
        for (int w = 0; w < SG_WARPS; ++w) {
            gs += red[w][r][m];
            us += red[w][r + 8][m];
        }
        const int col = n0 / 2 + r;
        if (m < M && col < inter) {
            const __nv_bfloat16 b = __float2bfloat16(gs / (1.0f + expf(-gs)) * us);
            const unsigned h = bf16x2_to_f16x2(*reinterpret_cast<const unsigned short*>(&b));
            reinterpret_cast<unsigned short*>(act)[(size_t)m * inter + col] = (unsigned short)h;
        }
    }
}
__device__ __forceinline__ void store_out(const float (&c)[4], __half* act, int M, int N,
                                          int n0) {
    reduce_store_swiglu_h(c, act, M, N / 2, n0);
}
