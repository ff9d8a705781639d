//! Kernel launches through `cuLaunchKernelEx`, so that a launch can carry the programmatic
//! dependent launch (PDL) attribute: the next kernel on the stream may then start while
//! this one drains, run the part of its prologue that reads no earlier results (the skinny
//! GEMM streams its first weights), and wait in `griddepcontrol.wait` for the rest. Every
//! kernel in `cuda/` calls `pdl_wait()` before it touches a buffer an earlier kernel
//! writes or reads, so the attribute is safe on any of them. Inside a CUDA graph capture
//! the attribute becomes a programmatic edge and survives replay.
//!
//! cudarc's `LaunchArgs` cannot carry launch attributes, hence this small builder: every
//! argument is kept as 8 bytes (pointers, and i32/f32 in the low bytes: the driver reads
//! only the parameter's size, and the host is little-endian).

use crate::error::{DriverContext, Result};
use crate::gpu::Gpu;
use cudarc::driver::{CudaView, CudaViewMut, DevicePtr, DevicePtrMut, LaunchConfig, sys};
use std::ffi::c_void;

/// Dynamic shared memory a kernel gets without opting in.
const STATIC_SMEM_LIMIT: u32 = 48 * 1024;

/// Whether a kernel with `static_bytes` of static shared memory must opt in before it may
/// take `dynamic_bytes` more: above 48 KiB in all, not of the dynamic part alone (a bulk
/// GEMM's 45 KiB ring beside its 4 KiB of static arrays failed to launch with "invalid
/// argument" until this counted both).
fn needs_opt_in(static_bytes: u32, dynamic_bytes: u32) -> bool {
    dynamic_bytes > 0 && static_bytes + dynamic_bytes > STATIC_SMEM_LIMIT
}

/// A kernel opts in to `bytes` of dynamic shared memory where it needs to
/// (`needs_opt_in`; before a launch, and before an occupancy query counts blocks of that
/// size); idempotent, and not a stream operation, so it is also fine during graph capture.
pub(crate) fn allow_dynamic_smem(func: sys::CUfunction, bytes: u32, op: &str) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    // Dynamic memory over the limit needs the opt-in whatever the static part: no driver
    // query then (the bulk GEMMs' usual case, paid at every eager launch otherwise).
    let static_bytes = if bytes > STATIC_SMEM_LIMIT { 0 } else { static_smem(func, op)? };
    if !needs_opt_in(static_bytes, bytes) {
        return Ok(());
    }
    // SAFETY: a valid function handle and attribute.
    unsafe {
        sys::cuFuncSetAttribute(
            func,
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            bytes as i32,
        )
    }
    .result()
    .ctx(op)
}

/// The kernel's static shared memory, in bytes.
fn static_smem(func: sys::CUfunction, op: &str) -> Result<u32> {
    let mut static_bytes = 0i32;
    // SAFETY: a valid function handle and attribute, and a place for the answer.
    unsafe {
        sys::cuFuncGetAttribute(
            &mut static_bytes,
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
            func,
        )
    }
    .result()
    .ctx(op)?;
    Ok(static_bytes.max(0) as u32)
}

pub(crate) struct Launch<'g> {
    gpu: &'g Gpu,
    op: &'static str,
    func: sys::CUfunction,
    args: Vec<u64>,
    /// Thread block cluster shape (blocks), when the kernel merges through distributed
    /// shared memory.
    cluster: Option<(u32, u32, u32)>,
}

impl<'g> Launch<'g> {
    pub fn new(gpu: &'g Gpu, op: &'static str) -> Result<Self> {
        Ok(Launch { gpu, op, func: gpu.func(op)?.cu_function(), args: Vec::with_capacity(16), cluster: None })
    }

    /// The op's name, for errors.
    pub fn op(&self) -> &'static str {
        self.op
    }

    /// A read-only device buffer.
    pub fn input<T>(&mut self, v: &CudaView<'_, T>) -> &mut Self {
        let (p, _sync) = v.device_ptr(self.gpu.stream());
        self.args.push(p);
        self
    }

    /// A device buffer the kernel writes.
    pub fn output<T>(&mut self, v: &mut CudaViewMut<'_, T>) -> &mut Self {
        let (p, _sync) = v.device_ptr_mut(self.gpu.stream());
        self.args.push(p);
        self
    }

    /// `input`, for a kernel that reads the buffer in 16-byte pieces (vector loads, bulk
    /// copies): an error naming the op and `what` unless the view starts 16-byte aligned.
    pub fn input_aligned16<T>(&mut self, v: &CudaView<'_, T>, what: &str) -> Result<&mut Self> {
        self.input(v);
        self.last_aligned16(what, "read")
    }

    /// `output`, for a kernel that writes the buffer in 16-byte pieces: an error naming the
    /// op unless the view starts 16-byte aligned.
    pub fn output_aligned16<T>(&mut self, v: &mut CudaViewMut<'_, T>) -> Result<&mut Self> {
        self.output(v);
        self.last_aligned16("buffer", "written")
    }

    /// The pointer just pushed starts 16-byte aligned, or an error naming the op.
    fn last_aligned16(&mut self, what: &str, how: &str) -> Result<&mut Self> {
        let p = *self.args.last().expect("just pushed");
        crate::error::check(p.is_multiple_of(16), self.op, || {
            format!("{what} at {p:#x} is not 16-byte aligned ({how} in 16-byte pieces)")
        })?;
        Ok(self)
    }

    /// Launch in thread block clusters of this shape (the grid must divide by it; at most 8
    /// blocks, the portable size).
    pub fn cluster(&mut self, dims: (u32, u32, u32)) -> &mut Self {
        self.cluster = Some(dims);
        self
    }

    /// A null device pointer, for an optional buffer the kernel then leaves alone.
    pub fn null(&mut self) -> &mut Self {
        self.args.push(0);
        self
    }

    pub fn i32(&mut self, v: i32) -> &mut Self {
        self.args.push(v as u32 as u64);
        self
    }

    pub fn f32(&mut self, v: f32) -> &mut Self {
        self.args.push(v.to_bits() as u64);
        self
    }

    /// # Safety
    /// The arguments must match the kernel's parameters in order and type, and the
    /// caller must have checked every buffer's extent against what the kernel reads and
    /// writes for `cfg`.
    pub unsafe fn launch(&mut self, cfg: LaunchConfig) -> Result<()> {
        let stream = self.gpu.stream();
        self.gpu.ctx().bind_to_thread().ctx(self.op)?;
        // SAFETY: an all-zero attribute value is valid for every variant of the union.
        let mut attrs: [sys::CUlaunchAttribute; 2] = unsafe { std::mem::zeroed() };
        let mut n_attrs = 0;
        if self.gpu.tuning().pdl {
            let a = &mut attrs[n_attrs];
            a.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
            a.value.programmaticStreamSerializationAllowed = 1;
            n_attrs += 1;
        }
        if let Some((x, y, z)) = self.cluster {
            let a = &mut attrs[n_attrs];
            a.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
            a.value.clusterDim.x = x;
            a.value.clusterDim.y = y;
            a.value.clusterDim.z = z;
            n_attrs += 1;
        }
        allow_dynamic_smem(self.func, cfg.shared_mem_bytes, self.op)?;
        let config = sys::CUlaunchConfig {
            gridDimX: cfg.grid_dim.0,
            gridDimY: cfg.grid_dim.1,
            gridDimZ: cfg.grid_dim.2,
            blockDimX: cfg.block_dim.0,
            blockDimY: cfg.block_dim.1,
            blockDimZ: cfg.block_dim.2,
            sharedMemBytes: cfg.shared_mem_bytes,
            hStream: stream.cu_stream(),
            // Null without attributes, as before clusters came (PDL off).
            attrs: if n_attrs == 0 { std::ptr::null_mut() } else { attrs.as_mut_ptr() },
            numAttrs: n_attrs as u32,
        };
        let mut ptrs: Vec<*mut c_void> = self.args.iter_mut().map(|a| a as *mut u64 as *mut c_void).collect();
        // SAFETY: `config`, `attrs` and the argument storage outlive the call (the driver
        // copies the parameters before returning); the caller vouches for the arguments.
        unsafe { sys::cuLaunchKernelEx(&config, self.func, ptrs.as_mut_ptr(), std::ptr::null_mut()) }
            .result()
            .ctx(self.op)
    }
}

#[cfg(test)]
mod tests {
    use super::needs_opt_in;

    #[test]
    fn the_opt_in_counts_static_and_dynamic_shared_memory() {
        assert!(!needs_opt_in(4 * 1024, 0));
        assert!(!needs_opt_in(0, 48 * 1024));
        assert!(!needs_opt_in(4 * 1024, 44 * 1024));
        // 45952 bytes of ring and staged x beside 4.2 KiB of static arrays.
        assert!(needs_opt_in(4300, 45952));
        assert!(needs_opt_in(0, 48 * 1024 + 1));
    }
}
