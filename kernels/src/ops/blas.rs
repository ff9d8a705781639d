//! cuBLAS GEMM for prefill (more than 8 rows): y[m, n] = x[m, k] w[n, k]^T, bf16 in, f32
//! out, f32 compute. Decode batches (<= 8 rows) use the skinny GEMM, which streams the
//! weights ~2-3 % faster than cuBLAS there (engine/PERF-LOG.md).

use crate::error::{KernelError, Result, check};
use crate::gpu::Gpu;
use cudarc::cublas::{result, sys};
use cudarc::driver::{CudaView, CudaViewMut, DevicePtr, DevicePtrMut};

/// Whether `gemm_into` can run (libcublas was found when the `Gpu` was made).
pub fn blas_available(gpu: &Gpu) -> bool {
    gpu.blas().is_some()
}

/// Row-major y = x w^T through cuBLAS (column-major): y^T [n, m] = w [k, n]^T x^T [k, m].
pub fn gemm_into(
    gpu: &Gpu,
    x: &CudaView<'_, half::bf16>,
    w: &CudaView<'_, half::bf16>,
    n: usize,
    k: usize,
    y: &mut CudaViewMut<'_, f32>,
) -> Result<()> {
    const OP: &str = "cublas_gemm";
    let blas = gpu.blas().ok_or_else(|| KernelError::Blas("not available (libcublas not found)".into()))?;
    check(k > 0 && w.len() == n * k, OP, || format!("w {} != {n} x {k}", w.len()))?;
    check(x.len() % k == 0, OP, || format!("x {} is not rows x {k}", x.len()))?;
    let m = x.len() / k;
    check(y.len() == m * n, OP, || format!("y {} != {m} x {n}", y.len()))?;
    if m == 0 {
        return Ok(());
    }
    let dim = |v: usize| {
        i32::try_from(v).map_err(|_| KernelError::Shape { op: OP, msg: format!("{v} does not fit in i32") })
    };
    let (mi, ni, ki) = (dim(m)?, dim(n)?, dim(k)?);
    let s = gpu.stream();
    let (alpha, beta) = (1.0f32, 0.0f32);
    let (wp, _rw) = w.device_ptr(s);
    let (xp, _rx) = x.device_ptr(s);
    let (yp, _ry) = y.device_ptr_mut(s);
    // SAFETY: pointers come from live device buffers whose sizes were checked above; the
    // handle is bound to `s`, the stream the buffers are used on.
    unsafe {
        result::gemm_ex(
            *blas.handle(),
            sys::cublasOperation_t::CUBLAS_OP_T,
            sys::cublasOperation_t::CUBLAS_OP_N,
            ni,
            mi,
            ki,
            (&alpha as *const f32).cast(),
            wp as *const _,
            sys::cudaDataType::CUDA_R_16BF,
            ki,
            xp as *const _,
            sys::cudaDataType::CUDA_R_16BF,
            ki,
            (&beta as *const f32).cast(),
            yp as *mut _,
            sys::cudaDataType::CUDA_R_32F,
            ni,
            sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
            sys::cublasGemmAlgo_t::CUBLAS_GEMM_DFALT,
        )
    }
    .map_err(|e| KernelError::Blas(format!("GemmEx m={m} n={n} k={k}: {e:?}")))
}
