//! Errors of the kernels crate: compile failures carry NVRTC's log, launch failures the op.

#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    #[error("NVRTC could not compile {file} for {arch}: {msg}\n{log}")]
    Compile { file: String, arch: String, msg: String, log: String },
    #[error("CUDA driver error in {what}: {source}")]
    Driver {
        what: String,
        #[source]
        source: cudarc::driver::DriverError,
    },
    #[error("{op}: bad shape: {msg}")]
    Shape { op: &'static str, msg: String },
    #[error("kernel cache {path}: {source}")]
    Cache {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cuBLAS: {0}")]
    Blas(String),
    #[error("kernel configuration: {0}")]
    Config(String),
    #[error("kernel {0} is not in any loaded module")]
    MissingKernel(String),
}

pub type Result<T> = std::result::Result<T, KernelError>;

/// Attach context to a driver call's error.
pub trait DriverContext<T> {
    fn ctx(self, what: impl Into<String>) -> Result<T>;
}

impl<T> DriverContext<T> for std::result::Result<T, cudarc::driver::DriverError> {
    fn ctx(self, what: impl Into<String>) -> Result<T> {
        self.map_err(|source| KernelError::Driver { what: what.into(), source })
    }
}

/// A shape check: `Err(Shape)` with the message when `ok` is false.
pub(crate) fn check(ok: bool, op: &'static str, msg: impl FnOnce() -> String) -> Result<()> {
    if ok { Ok(()) } else { Err(KernelError::Shape { op, msg: msg() }) }
}
