// The EAGLE-3 draft layer's own kernels (the GEMMs, norms, SwiGLU and attention are the
// target's): its input (two norms side by side), RoPE without q/k norm, row gathers by
// index, and the top-k of each row's log-softmax that the tree search reads.
// Semantics: engine/src/spec/draft/forward.rs, the CPU reference.
#include <cuda_bf16.h>

#define E3_NEG_INF __int_as_float(0xff800000)

__device__ __forceinline__ float e3_block_sum(float v, float* shared) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    __syncthreads();  // `shared` may still be read by the previous call
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    float t = 0.f;
    for (int i = 0; i < (int)((blockDim.x + 31) >> 5); ++i) t += shared[i];
    return t;
}

// One block per row r:
//   out[r, 0:H)  = bf16(rmsnorm(embed[ids[r]]) * input_norm)
//   out[r, H:2H) = bf16(rmsnorm(hidden[r]) * hidden_norm)
// and, when norm_residual (vLLM's norm_before_residual), hidden[r] = the normed hidden in
// f32, since the residual is then the normed input. q|k|v read `out` as one 2H-wide row.
extern "C" __global__ void eagle3_input(const unsigned int* __restrict__ ids,
                                        const __nv_bfloat16* __restrict__ embed,
                                        const float* __restrict__ input_norm,
                                        const float* __restrict__ hidden_norm,
                                        float* __restrict__ hidden,
                                        __nv_bfloat16* __restrict__ out, int H, float eps,
                                        int norm_residual) {
    pdl_trigger();
    pdl_wait();
    __shared__ float partial[32];
    const int r = blockIdx.x;
    const __nv_bfloat16* e = embed + (size_t)ids[r] * H;
    float* h = hidden + (size_t)r * H;
    __nv_bfloat16* o = out + (size_t)r * 2 * H;
    float ss = 0.f;
    for (int i = threadIdx.x; i < H; i += blockDim.x) {
        const float v = __bfloat162float(e[i]);
        ss += v * v;
    }
    const float re = rsqrtf(e3_block_sum(ss, partial) / (float)H + eps);
    for (int i = threadIdx.x; i < H; i += blockDim.x)
        o[i] = __float2bfloat16(__bfloat162float(e[i]) * re * input_norm[i]);
    ss = 0.f;
    for (int i = threadIdx.x; i < H; i += blockDim.x) ss += h[i] * h[i];
    const float rh = rsqrtf(e3_block_sum(ss, partial) / (float)H + eps);
    for (int i = threadIdx.x; i < H; i += blockDim.x) {
        const float v = h[i] * rh * hidden_norm[i];
        o[H + i] = __float2bfloat16(v);
        if (norm_residual) h[i] = v;
    }
}

// Llama attention input for T tokens, one block per (token, head slot) as qk_norm_rope_kv
// but without the q/k norm: q heads -> RoPE -> q_out; k heads -> RoPE -> k_cache[slot];
// v heads -> v_cache[slot]. qkv is [T, H*D + 2*KV*D] f32.
extern "C" __global__ void rope_kv(const float* __restrict__ qkv, const int* __restrict__ positions,
                                   const int* __restrict__ slots, __nv_bfloat16* __restrict__ q_out,
                                   __nv_bfloat16* __restrict__ k_cache,
                                   __nv_bfloat16* __restrict__ v_cache, int heads, int kv_heads,
                                   int head_dim, float theta) {
    pdl_trigger();
    pdl_wait();
    const int t = blockIdx.x, h = blockIdx.y, D = head_dim, half = D / 2;
    const int qd = heads * D, kvd = kv_heads * D;
    const float* row = qkv + (size_t)t * (qd + 2 * kvd);
    const size_t slot = (size_t)slots[t];
    if (h >= heads + kv_heads) {
        const int j = h - heads - kv_heads;
        for (int i = threadIdx.x; i < D; i += blockDim.x)
            v_cache[slot * kvd + j * D + i] = __float2bfloat16(row[qd + kvd + j * D + i]);
        return;
    }
    const bool is_q = h < heads;
    const float* src = is_q ? row + h * D : row + qd + (h - heads) * D;
    __nv_bfloat16* dst = is_q ? q_out + (size_t)t * qd + h * D
                              : k_cache + slot * kvd + (h - heads) * D;
    const float pos = (float)positions[t];
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
        float s, c;
        rope_angle(pos, i, D, theta, &s, &c);
        const float a = src[i], b = src[i + half];
        dst[i] = __float2bfloat16(a * c - b * s);
        dst[i + half] = __float2bfloat16(b * c + a * s);
    }
}

// out[r, :] = src[idx[r], :] over rows of `width` elements: one block per output row. The
// draft gathers its aux rows by KV slot (bf16) and parent hidden states by index (f32).
extern "C" __global__ void rows_gather_bf16(const __nv_bfloat16* __restrict__ src,
                                            const int* __restrict__ idx,
                                            __nv_bfloat16* __restrict__ out, int width) {
    pdl_trigger();
    pdl_wait();
    const __nv_bfloat16* s = src + (size_t)idx[blockIdx.x] * width;
    __nv_bfloat16* o = out + (size_t)blockIdx.x * width;
    for (int i = threadIdx.x; i < width; i += blockDim.x) o[i] = s[i];
}

extern "C" __global__ void rows_gather_f32(const float* __restrict__ src, const int* __restrict__ idx,
                                           float* __restrict__ out, int width) {
    pdl_trigger();
    pdl_wait();
    const float* s = src + (size_t)idx[blockIdx.x] * width;
    float* o = out + (size_t)blockIdx.x * width;
    for (int i = threadIdx.x; i < width; i += blockDim.x) o[i] = s[i];
}

// Key of (value, index): larger value first, then lower index (argmax.cu's order), with
// NaN as -inf so that a broken row cannot outrank a sound one (the CPU's `top_k`).
__device__ __forceinline__ unsigned long long topk_key(float v, int i) {
    if (v != v) v = E3_NEG_INF;
    unsigned b = __float_as_uint(v);
    b = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
    return ((unsigned long long)b << 32) | (0xffffffffu - (unsigned)i);
}

__device__ __forceinline__ unsigned long long e3_block_max_key(unsigned long long k,
                                                                unsigned long long* shared) {
    for (int o = 16; o > 0; o >>= 1) {
        const unsigned long long ok = __shfl_xor_sync(0xffffffff, k, o);
        k = ok > k ? ok : k;
    }
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    __syncthreads();
    if (lane == 0) shared[warp] = k;
    __syncthreads();
    unsigned long long t = 0;
    for (int i = 0; i < (int)((blockDim.x + 31) >> 5); ++i) t = shared[i] > t ? shared[i] : t;
    return t;
}

__device__ __forceinline__ float e3_block_max(float v, float* shared) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, o));
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    __syncthreads();
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    float t = E3_NEG_INF;
    for (int i = 0; i < (int)((blockDim.x + 31) >> 5); ++i) t = fmaxf(t, shared[i]);
    return t;
}

// One block per row of logits [rows, V]: the k best draft ids (ids[r, j], best first, ties
// to the lower id) and their log-probabilities lp[r, j] = min(logit - logsumexp(row), 0),
// NaN counting as -inf. One pass over the row: each thread keeps its max, its sum of
// e^(x - max) (rescaled when the max grows) and its KC best keys, sorted, in registers
// (KC: k rounded up to a power of two, a template per size so the list never spills);
// then the block merges: the max and the sum, and k rounds that each take the best head of
// the threads' lists. Why: k + 2 passes over the row in one block took 36 us for 4 rows of
// 32k (H200, engine/PERF-LOG.md step 72), as long as the draft's lm_head.
template <int KC>
__device__ __forceinline__ void topk_logprobs_body(const float* __restrict__ logits,
                                                   int* __restrict__ ids, float* __restrict__ lp,
                                                   int V, int k) {
    pdl_trigger();
    pdl_wait();
    __shared__ float fpart[32];
    __shared__ unsigned long long kpart[32];
    const float* row = logits + (size_t)blockIdx.x * V;
    float m = E3_NEG_INF, s = 0.f;
    unsigned long long best[KC];
#pragma unroll
    for (int j = 0; j < KC; ++j) best[j] = 0ull;  // below every key (-inf's included)
#pragma unroll 4
    for (int i = threadIdx.x; i < V; i += blockDim.x) {
        float x = row[i];
        if (x != x) x = E3_NEG_INF;
        if (x > m) {
            s = s * expf(m - x) + 1.f;
            m = x;
        } else if (x > E3_NEG_INF) {
            s += expf(x - m);
        }
        unsigned long long c = topk_key(x, i);
        if (c > best[KC - 1]) {
            // Insert into the descending list: each slot keeps the larger, passes the other on.
#pragma unroll
            for (int j = 0; j < KC; ++j) {
                const unsigned long long hi = best[j] > c ? best[j] : c;
                c = best[j] > c ? c : best[j];
                best[j] = hi;
            }
        }
    }
    const float gm = e3_block_max(m, fpart);
    const float sum = e3_block_sum(m > E3_NEG_INF ? s * expf(m - gm) : 0.f, fpart);
    const float lse = gm + logf(sum);
    for (int j = 0; j < k; ++j) {
        const unsigned long long top = e3_block_max_key(best[0], kpart);
        if (best[0] == top) {
            // This thread's head won (keys are unique: they carry the index): pop it.
#pragma unroll
            for (int q = 0; q + 1 < KC; ++q) best[q] = best[q + 1];
            best[KC - 1] = 0ull;
        }
        if (threadIdx.x == 0) {
            const int id = (int)(0xffffffffu - (unsigned)(top & 0xffffffffu));
            const float v = row[id];
            ids[(size_t)blockIdx.x * k + j] = id;
            lp[(size_t)blockIdx.x * k + j] = v != v ? E3_NEG_INF : fminf(v - lse, 0.f);
        }
    }
}

#define TOPK_ENTRY(KC)                                                                          \
    extern "C" __global__ void __launch_bounds__(512)                                          \
        topk_logprobs_k##KC(const float* __restrict__ logits, int* __restrict__ ids,           \
                            float* __restrict__ lp, int V, int k) {                            \
        topk_logprobs_body<KC>(logits, ids, lp, V, k);                                         \
    }
TOPK_ENTRY(1)
TOPK_ENTRY(2)
TOPK_ENTRY(4)
TOPK_ENTRY(8)
TOPK_ENTRY(16)
