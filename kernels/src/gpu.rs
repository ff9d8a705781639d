//! `Gpu`: one CUDA context, one non-default stream, and every kernel of `sources::ALL`
//! compiled (or read from the disk cache) and loaded. The engine thread owns one `Gpu`;
//! nothing here is shared between threads.

use crate::compile::{CompileOptions, DiskCache};
use crate::error::{DriverContext, KernelError, Result};
use crate::sources;
use cudarc::cublas::CudaBlas;
use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtrMut};
use cudarc::nvrtc::Ptx;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Debug, Clone)]
pub struct GpuOptions {
    pub ordinal: usize,
    /// None: derived from the device's compute capability (`sm_90a` on Hopper).
    pub arch: Option<String>,
    pub include_dirs: Vec<PathBuf>,
    pub cache_dir: PathBuf,
    pub tuning: Tuning,
}

/// How kernels are launched and which variants run; fixed for a `Gpu`'s life. The
/// defaults are what measured fastest and was verified on the H200 (engine/PERF.md); the
/// environment can override them for A/B runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuning {
    /// Programmatic dependent launch on every kernel (`launch.rs`). `LATLAB_PDL=0|1`.
    pub pdl: bool,
    /// Prefill attention through the tensor-core kernel (prefill_attention.cu) where the
    /// geometry allows, instead of decode_attention with one split (H200, Qwen3-8B, 232
    /// tokens: 22 instead of 123 us per layer, TTFT 14 -> 10 ms). `LATLAB_PREFILL_ATTENTION=0|1`.
    pub prefill_attention: bool,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            pdl: true,
            prefill_attention: true,
        }
    }
}

/// "0" / "1" of a switch variable, or an error naming it.
fn switch(name: &str, v: Option<&str>, default: bool) -> Result<bool> {
    match v {
        None => Ok(default),
        Some("1") => Ok(true),
        Some("0") => Ok(false),
        Some(v) => Err(KernelError::Config(format!(
            "{name}={v:?}: expected 0 or 1"
        ))),
    }
}

impl Tuning {
    /// The defaults, overridden by `LATLAB_PDL` and `LATLAB_PREFILL_ATTENTION` when set.
    pub fn from_env() -> Result<Self> {
        let var = |n: &str| std::env::var(n).ok();
        Self::from_vars(
            var("LATLAB_PDL").as_deref(),
            var("LATLAB_PREFILL_ATTENTION").as_deref(),
        )
    }

    /// `from_env` over given values (tests cannot set the process environment safely).
    pub fn from_vars(pdl: Option<&str>, prefill_attention: Option<&str>) -> Result<Self> {
        let d = Tuning::default();
        Ok(Tuning {
            pdl: switch("LATLAB_PDL", pdl, d.pdl)?,
            prefill_attention: switch(
                "LATLAB_PREFILL_ATTENTION",
                prefill_attention,
                d.prefill_attention,
            )?,
        })
    }
}

impl GpuOptions {
    /// Device 0; headers from `$LATLAB_CUDA_INCLUDE`, else `$CUDA_HOME/include`, else
    /// `/usr/local/cuda/include`; the default disk cache; `Tuning::from_env`.
    pub fn from_env() -> Result<Self> {
        let include = std::env::var_os("LATLAB_CUDA_INCLUDE")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("CUDA_HOME").map(|h| PathBuf::from(h).join("include")))
            .unwrap_or_else(|| PathBuf::from("/usr/local/cuda/include"));
        Ok(GpuOptions {
            ordinal: 0,
            arch: None,
            include_dirs: vec![include],
            cache_dir: DiskCache::default_dir(),
            tuning: Tuning::from_env()?,
        })
    }
}

pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    kernels: HashMap<&'static str, CudaFunction>,
    name: String,
    arch: String,
    tuning: Tuning,
    /// cuBLAS on `stream` with a fixed workspace (graph capture must not allocate), when
    /// libcublas can be loaded.
    blas: Option<(CudaBlas, CudaSlice<u8>)>,
}

/// cuBLAS workspace: NVIDIA recommends 32 MiB on Hopper.
const BLAS_WORKSPACE: usize = 32 << 20;

fn lib_loadable(name: &str) -> bool {
    cudarc::get_lib_name_candidates(name)
        .iter()
        // SAFETY: loading the library runs only its initialisers.
        .any(|n| unsafe { libloading::Library::new(n) }.is_ok())
}

fn make_blas(stream: &Arc<CudaStream>) -> Result<Option<(CudaBlas, CudaSlice<u8>)>> {
    if !lib_loadable("cublas") {
        tracing::warn!(
            "libcublas not found: prefill falls back to the skinny GEMM, 8 rows at a time"
        );
        return Ok(None);
    }
    let blas = CudaBlas::new(stream.clone())
        .map_err(|e| KernelError::Blas(format!("create handle: {e:?}")))?;
    let mut ws = stream
        .alloc_zeros::<u8>(BLAS_WORKSPACE)
        .ctx("cuBLAS workspace")?;
    {
        let (p, _rec) = ws.device_ptr_mut(stream);
        // SAFETY: the workspace outlives the handle (both live in the same `Gpu`, handle first
        // in the tuple, so it is dropped before the buffer).
        unsafe {
            cudarc::cublas::sys::cublasSetWorkspace_v2(*blas.handle(), p as *mut _, BLAS_WORKSPACE)
        }
        .result()
        .map_err(|e| KernelError::Blas(format!("set workspace: {e:?}")))?;
    }
    Ok(Some((blas, ws)))
}

/// Whether a CUDA driver can be loaded and sees at least one device. Probes the library
/// by name first: cudarc panics when it cannot load libcuda, and a CPU-only machine is
/// not an error.
pub fn cuda_available() -> bool {
    lib_loadable("cuda") && matches!(CudaContext::device_count(), Ok(n) if n > 0)
}

/// `sm_90a` for compute capability 9.0 (the `a` unlocks wgmma/TMA), `sm_XY` otherwise.
pub fn arch_for(major: i32, minor: i32) -> String {
    if (major, minor) == (9, 0) {
        "sm_90a".to_string()
    } else {
        format!("sm_{major}{minor}")
    }
}

impl Gpu {
    pub fn new(opts: &GpuOptions) -> Result<Self> {
        let ctx = CudaContext::new(opts.ordinal).ctx("create context")?;
        // One stream, one thread: cudarc's cross-stream event tracking buys nothing and
        // breaks graph capture (CUDA_ERROR_STREAM_CAPTURE_ISOLATION, GPU.md).
        // SAFETY: called before any buffer exists.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().ctx("create stream")?;
        let name = ctx.name().ctx("device name")?;
        let arch = match &opts.arch {
            Some(a) => a.clone(),
            None => {
                let (ma, mi) = ctx.compute_capability().ctx("compute capability")?;
                arch_for(ma, mi)
            }
        };
        let copts = CompileOptions {
            arch: arch.clone(),
            include_dirs: opts.include_dirs.clone(),
        };
        let cache = DiskCache {
            dir: opts.cache_dir.clone(),
        };
        let mut kernels = HashMap::new();
        for s in sources::ALL {
            let (cubin, cached) = cache.get_or_compile(s.file, s.src, &copts)?;
            tracing::debug!(file = s.file, cached, bytes = cubin.len(), "kernel module");
            let module = ctx
                .load_module(Ptx::from_binary(cubin))
                .ctx(format!("load module {}", s.file))?;
            for &k in s.kernels {
                let f = module.load_function(k).ctx(format!("load kernel {k}"))?;
                kernels.insert(k, f);
            }
        }
        let blas = make_blas(&stream)?;
        Ok(Gpu {
            ctx,
            stream,
            kernels,
            name,
            arch,
            tuning: opts.tuning,
            blas,
        })
    }

    pub fn ctx(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The stream every op launches on (never the legacy default stream: graphs need this).
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The device's name, e.g. "NVIDIA H200".
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn arch(&self) -> &str {
        &self.arch
    }

    pub fn tuning(&self) -> Tuning {
        self.tuning
    }

    pub(crate) fn blas(&self) -> Option<&CudaBlas> {
        self.blas.as_ref().map(|(b, _)| b)
    }

    pub(crate) fn func(&self, name: &str) -> Result<&CudaFunction> {
        self.kernels
            .get(name)
            .ok_or_else(|| KernelError::MissingKernel(name.to_string()))
    }

    /// Wait for all queued work; surfaces asynchronous kernel errors.
    pub fn sync(&self) -> Result<()> {
        self.stream.synchronize().ctx("stream synchronize")
    }
}

#[cfg(test)]
mod tests {
    use super::Tuning;

    #[test]
    fn tuning_reads_switches_and_names_a_bad_value() {
        assert_eq!(Tuning::from_vars(None, None).unwrap(), Tuning::default());
        assert!(Tuning::default().pdl && Tuning::default().prefill_attention);
        let t = Tuning::from_vars(Some("0"), Some("0")).unwrap();
        assert!(!t.pdl && !t.prefill_attention);
        let e = Tuning::from_vars(Some("yes"), None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("LATLAB_PDL=\"yes\"") && e.contains("0 or 1"),
            "{e}"
        );
        let e = Tuning::from_vars(None, Some("2")).unwrap_err().to_string();
        assert!(e.contains("LATLAB_PREFILL_ATTENTION=\"2\""), "{e}");
    }
}
