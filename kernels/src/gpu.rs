//! `Gpu`: one CUDA context, one non-default stream, and every kernel of `sources::ALL`
//! compiled (or read from the disk cache) and loaded. The engine thread owns one `Gpu`;
//! nothing here is shared between threads.

pub use crate::carveout::Carveout;
use crate::compile::{CompileOptions, DiskCache};
use crate::error::{DriverContext, KernelError, Result};
use crate::sources;
use crate::trace::Trace;
pub use crate::tuning::{ATTENTION_BLOCKS_RANGE, BULK_STAGES_RANGE, Tuning, WIDE_ROWS};
use cudarc::cublas::CudaBlas;
use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtrMut, sys};
use cudarc::nvrtc::Ptx;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone)]
pub struct GpuOptions {
    pub ordinal: usize,
    /// None: derived from the device's compute capability (`sm_90a` on Hopper).
    pub arch: Option<String>,
    pub include_dirs: Vec<PathBuf>,
    pub cache_dir: PathBuf,
    pub tuning: Tuning,
    /// Above 0: compile the kernels with the block timeline (trace.rs), with room for
    /// this many blocks' records. A timing instrument for the GPU tests: 0 everywhere else.
    pub trace_events: usize,
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
            trace_events: 0,
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
    sms: usize,
    /// `resident_blocks` answers by (kernel, threads, shared memory): persistent GEMMs ask
    /// at every launch, and an eager step would otherwise pay two driver calls per GEMM.
    resident: Mutex<HashMap<(&'static str, u32, u32), u32>>,
    /// The block timeline's buffer, when `GpuOptions::trace_events` asked for one.
    trace: Option<Mutex<Trace>>,
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
        tracing::warn!("libcublas not found: prefill falls back to the skinny GEMM, 8 rows at a time");
        return Ok(None);
    }
    let blas =
        CudaBlas::new(stream.clone()).map_err(|e| KernelError::Blas(format!("create handle: {e:?}")))?;
    let mut ws = stream.alloc_zeros::<u8>(BLAS_WORKSPACE).ctx("cuBLAS workspace")?;
    {
        let (p, _rec) = ws.device_ptr_mut(stream);
        // SAFETY: the workspace outlives the handle (both live in the same `Gpu`, handle first
        // in the tuple, so it is dropped before the buffer).
        unsafe { cudarc::cublas::sys::cublasSetWorkspace_v2(*blas.handle(), p as *mut _, BLAS_WORKSPACE) }
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
    if (major, minor) == (9, 0) { "sm_90a".to_string() } else { format!("sm_{major}{minor}") }
}

impl Gpu {
    pub fn new(opts: &GpuOptions) -> Result<Self> {
        let ctx = CudaContext::new(opts.ordinal).ctx("create context")?;
        // One stream, one thread: cudarc's cross-stream event tracking buys nothing and
        // breaks graph capture (CUDA_ERROR_STREAM_CAPTURE_ISOLATION; ARCHITECTURE.md, "The GPU machine").
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
        let trace = match opts.trace_events {
            0 => None,
            n => Some(Trace::new(&stream, n)?),
        };
        let copts = CompileOptions {
            arch: arch.clone(),
            include_dirs: opts.include_dirs.clone(),
            defines: trace.as_ref().map(|t| t.defines(&stream)).unwrap_or_default(),
        };
        let cache = DiskCache { dir: opts.cache_dir.clone() };
        let mut kernels = HashMap::new();
        for s in sources::ALL {
            let (cubin, cached) = cache.get_or_compile(s.file, s.src, &copts)?;
            tracing::debug!(file = s.file, cached, bytes = cubin.len(), "kernel module");
            let module = ctx.load_module(Ptx::from_binary(cubin)).ctx(format!("load module {}", s.file))?;
            for &k in s.kernels {
                let f = module.load_function(k).ctx(format!("load kernel {k}"))?;
                if let Some(pct) = opts.tuning.smem_carveout.for_kernel(k) {
                    f.set_attribute(
                        sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                        pct as i32,
                    )
                    .ctx(format!("shared memory carveout of {k}"))?;
                }
                kernels.insert(k, f);
            }
        }
        let blas = make_blas(&stream)?;
        let sms = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .ctx("SM count")? as usize;
        Ok(Gpu {
            ctx,
            stream,
            kernels,
            name,
            arch,
            tuning: opts.tuning,
            blas,
            sms,
            resident: Mutex::new(HashMap::new()),
            trace: trace.map(Mutex::new),
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

    /// Streaming multiprocessors of the device.
    pub fn sms(&self) -> usize {
        self.sms
    }

    pub(crate) fn blas(&self) -> Option<&CudaBlas> {
        self.blas.as_ref().map(|(b, _)| b)
    }

    pub(crate) fn func(&self, name: &str) -> Result<&CudaFunction> {
        self.kernels.get(name).ok_or_else(|| KernelError::MissingKernel(name.to_string()))
    }

    /// Blocks of kernel `name` (threads each, `smem` bytes of dynamic shared memory) that one
    /// SM holds at once: the grid of a persistent kernel is this times the SMs.
    pub(crate) fn resident_blocks(&self, name: &'static str, threads: u32, smem: u32) -> Result<u32> {
        let key = (name, threads, smem);
        // A poisoned lock only means another query panicked; the answers stay valid.
        if let Some(&n) = self.resident.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return Ok(n);
        }
        let f = self.func(name)?;
        crate::launch::allow_dynamic_smem(f.cu_function(), smem, "occupancy query")?;
        let n = f
            .occupancy_max_active_blocks_per_multiprocessor(threads, smem as usize, None)
            .ctx("occupancy query")?;
        if n == 0 {
            return Err(KernelError::Config(format!(
                "{name}: no block of {threads} threads and {smem} B of shared memory fits an SM"
            )));
        }
        self.resident.lock().unwrap_or_else(|e| e.into_inner()).insert(key, n);
        Ok(n)
    }

    /// The block timeline (`GpuOptions::trace_events`), if this `Gpu` was built with it.
    pub fn trace(&self) -> Option<std::sync::MutexGuard<'_, Trace>> {
        self.trace.as_ref().map(|t| t.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Wait for all queued work; surfaces asynchronous kernel errors.
    pub fn sync(&self) -> Result<()> {
        self.stream.synchronize().ctx("stream synchronize")
    }
}
