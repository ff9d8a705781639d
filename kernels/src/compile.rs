//! NVRTC: CUDA C++ source -> cubin (SASS for one real architecture such as `sm_90a`), and a
//! disk cache of cubins keyed by source text + options + architecture + NVRTC version.
//!
//! Why cubin and not PTX: PTX from an NVRTC newer than the driver's CUDA will not load
//! (ARCHITECTURE.md, "The GPU machine"), while a cubin for the card's architecture always does. Why a cache: one
//! compile takes ~0.4 s, and the engine loads all kernels at every start.

use crate::error::{KernelError, Result};
use cudarc::nvrtc::{result, sys};
use std::ffi::CString;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileOptions {
    /// Real architecture, e.g. "sm_90a" (Hopper with wgmma/TMA) or "sm_90".
    pub arch: String,
    /// Where `cuda_bf16.h` and friends live (the toolkit's or the PyPI wheel's include dir).
    pub include_dirs: Vec<PathBuf>,
    /// Preprocessor definitions (`NAME=VALUE`), e.g. the block timeline's (trace.rs).
    pub defines: Vec<String>,
}

impl CompileOptions {
    pub fn args(&self) -> Vec<String> {
        let mut a = vec![
            format!("--gpu-architecture={}", self.arch),
            "--std=c++17".to_string(),
            // Line info costs nothing at run time and makes profiler output readable.
            "--generate-line-info".to_string(),
        ];
        a.extend(self.include_dirs.iter().map(|d| format!("-I{}", d.display())));
        a.extend(self.defines.iter().map(|d| format!("-D{d}")));
        a
    }
}

/// NVRTC's version as (major, minor); part of the cache key.
pub fn nvrtc_version() -> (i32, i32) {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: plain out-parameters.
    let _ = unsafe { sys::nvrtcVersion(&mut major, &mut minor) };
    (major, minor)
}

/// Compile one source file to a cubin.
pub fn compile_cubin(file: &str, src: &str, opts: &CompileOptions) -> Result<Vec<u8>> {
    compile(file, src, opts, &[]).map(|(cubin, _log)| cubin)
}

/// What ptxas reports for one kernel of a cubin (`--ptxas-options=-v`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelUsage {
    pub kernel: String,
    pub registers: u32,
    /// Bytes of registers spilled to local memory, stored and loaded.
    pub spill_stores: u32,
    pub spill_loads: u32,
}

/// `compile_cubin`, plus each kernel's registers and spills as ptxas reports them: the
/// same cubin (the report is only a log), for checks that need no GPU.
pub fn compile_with_usage(
    file: &str,
    src: &str,
    opts: &CompileOptions,
) -> Result<(Vec<u8>, Vec<KernelUsage>)> {
    let (cubin, log) = compile(file, src, opts, &["--ptxas-options=-v".to_string()])?;
    Ok((cubin, parse_ptxas_usage(&log)))
}

/// The kernels of a `ptxas -v` log, in order. Lines look like
/// `ptxas info    : Compiling entry function 'k' for 'sm_90a'`,
/// `ptxas         .     8 bytes stack frame, 8 bytes spill stores, 24 bytes spill loads`,
/// `ptxas info    : Used 80 registers, used 1 barriers, ... bytes smem`.
pub fn parse_ptxas_usage(log: &str) -> Vec<KernelUsage> {
    // The number just before `unit` in `line`, e.g. 80 in "Used 80 registers".
    fn before(line: &str, unit: &str) -> Option<u32> {
        let head = &line[..line.find(unit)?];
        head.split_whitespace().last()?.parse().ok()
    }
    let mut out: Vec<KernelUsage> = vec![];
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap_or_default();
            out.push(KernelUsage { kernel: name.to_string(), registers: 0, spill_stores: 0, spill_loads: 0 });
        } else if let Some(k) = out.last_mut() {
            if let Some(n) = before(line, " bytes spill stores") {
                k.spill_stores = n;
            }
            if let Some(n) = before(line, " bytes spill loads") {
                k.spill_loads = n;
            }
            if line.contains(": Used ") {
                k.registers = before(line, " registers").unwrap_or(0);
            }
        }
    }
    out
}

/// NVRTC with the crate's options plus `extra`: the cubin and the program log.
fn compile(file: &str, src: &str, opts: &CompileOptions, extra: &[String]) -> Result<(Vec<u8>, String)> {
    let fail = |msg: String, log: String| KernelError::Compile {
        file: file.to_string(),
        arch: opts.arch.clone(),
        msg,
        log,
    };
    let c_src = CString::new(src).map_err(|e| fail(e.to_string(), String::new()))?;
    let c_name = CString::new(file).map_err(|e| fail(e.to_string(), String::new()))?;
    let prog =
        result::create_program(&c_src, Some(&c_name)).map_err(|e| fail(e.to_string(), String::new()))?;
    let mut args = opts.args();
    args.extend_from_slice(extra);
    // SAFETY: `prog` was just created and is destroyed exactly once below.
    let out = unsafe {
        match result::compile_program(prog, &args) {
            Ok(()) => {
                cubin_of(prog).map(|c| (c, program_log(prog))).map_err(|e| fail(e.to_string(), String::new()))
            }
            Err(e) => Err(fail(e.to_string(), program_log(prog))),
        }
    };
    // SAFETY: see above.
    let _ = unsafe { result::destroy_program(prog) };
    out
}

/// SAFETY: `prog` must be a successfully compiled, live program.
unsafe fn cubin_of(prog: sys::nvrtcProgram) -> std::result::Result<Vec<u8>, result::NvrtcError> {
    let mut size = 0usize;
    unsafe { sys::nvrtcGetCUBINSize(prog, &mut size) }.result()?;
    let mut buf = vec![0u8; size];
    unsafe { sys::nvrtcGetCUBIN(prog, buf.as_mut_ptr().cast()) }.result()?;
    Ok(buf)
}

/// SAFETY: `prog` must be live.
unsafe fn program_log(prog: sys::nvrtcProgram) -> String {
    match unsafe { result::get_program_log(prog) } {
        Ok(chars) => {
            let bytes: Vec<u8> = chars.iter().map(|&c| c as u8).take_while(|&b| b != 0).collect();
            String::from_utf8_lossy(&bytes).into_owned()
        }
        Err(e) => format!("(no log: {e})"),
    }
}

/// FNV-1a, 64 bit: stable across Rust versions (std's hasher is not), so cache names
/// written by one build are found by the next.
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in *p {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        // Separator so ("ab", "c") and ("a", "bc") differ.
        h ^= 0xff;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The cache file name of a source compiled with `opts` by NVRTC `version`.
pub fn cache_name(file: &str, src: &str, opts: &CompileOptions, version: (i32, i32)) -> String {
    let args = opts.args().join("\n");
    let ver = format!("{}.{}", version.0, version.1);
    let key = fnv1a(&[src.as_bytes(), args.as_bytes(), ver.as_bytes()]);
    let stem = file.trim_end_matches(".cu");
    format!("{stem}-{}-{key:016x}.cubin", opts.arch)
}

/// Cubins on disk under one folder.
#[derive(Debug, Clone)]
pub struct DiskCache {
    pub dir: PathBuf,
}

impl DiskCache {
    /// `$LATLAB_KERNEL_CACHE`, else `$XDG_CACHE_HOME/latlab/kernels`, else
    /// `~/.cache/latlab/kernels`, else a folder under the system temp dir.
    pub fn default_dir() -> PathBuf {
        let env = |k| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        if let Some(d) = env("LATLAB_KERNEL_CACHE") {
            return d;
        }
        if let Some(d) = env("XDG_CACHE_HOME") {
            return d.join("latlab/kernels");
        }
        if let Some(h) = env("HOME") {
            return h.join(".cache/latlab/kernels");
        }
        std::env::temp_dir().join("latlab-kernels")
    }

    /// The cached cubin, or compile and store it. Returns (cubin, was_cached).
    pub fn get_or_compile(&self, file: &str, src: &str, opts: &CompileOptions) -> Result<(Vec<u8>, bool)> {
        let path = self.dir.join(cache_name(file, src, opts, nvrtc_version()));
        if let Ok(bytes) = std::fs::read(&path)
            && !bytes.is_empty()
        {
            return Ok((bytes, true));
        }
        let cubin = compile_cubin(file, src, opts)?;
        self.store(&path, &cubin)?;
        Ok((cubin, false))
    }

    /// Write via a temp file + rename, so a concurrent reader never sees half a cubin. The
    /// temp file is the writer thread's own: test binaries start a Gpu per test, on
    /// parallel threads of one process, and two threads compiling into an empty cache
    /// shared a per-process name, one renaming the file away while the other still wrote
    /// it (a `cuda_attention` run on a fresh cache, 2026-12-07).
    fn store(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        let io = |source| KernelError::Cache { path: path.display().to_string(), source };
        std::fs::create_dir_all(&self.dir).map_err(io)?;
        let thread: String =
            format!("{:?}", std::thread::current().id()).chars().filter(char::is_ascii_digit).collect();
        let tmp = path.with_extension(format!("tmp{}-{thread}", std::process::id()));
        std::fs::write(&tmp, bytes).map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    }
}

#[cfg(test)]
mod tests {
    /// Threads of one process storing the same cubin at once (tests starting their Gpus on
    /// an empty cache) all succeed, and the file is always one whole payload.
    #[test]
    fn concurrent_stores_of_one_cubin_all_land_whole() {
        let dir = tempfile::tempdir().unwrap();
        let cache = super::DiskCache { dir: dir.path().to_path_buf() };
        let path = dir.path().join("k-sm_90a-0.cubin");
        let payload = |t: u8| vec![t; 1 << 18];
        std::thread::scope(|s| {
            for t in 0..8u8 {
                let (cache, path) = (&cache, &path);
                s.spawn(move || {
                    for _ in 0..20 {
                        cache.store(path, &payload(t)).unwrap();
                        let got = std::fs::read(path).unwrap();
                        assert!(got.len() == 1 << 18 && got.iter().all(|&b| b == got[0]), "a torn cubin");
                    }
                });
            }
        });
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, [std::ffi::OsString::from("k-sm_90a-0.cubin")], "temp files left behind");
    }

    #[test]
    fn ptxas_usage_is_read_per_kernel() {
        let log = "ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'combine' for 'sm_90a'
ptxas info    : Function properties for combine
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 32 registers, used 1 barriers, 132 bytes smem
ptxas info    : Compile time = 18.672 ms
ptxas info    : Compiling entry function 'fused' for 'sm_90a'
ptxas info    : Function properties for fused
ptxas         .     8 bytes stack frame, 8 bytes spill stores, 24 bytes spill loads
ptxas info    : Used 80 registers, used 1 barriers, 8 bytes cumulative stack size, 7588 bytes smem
";
        let u = super::parse_ptxas_usage(log);
        let got: Vec<(&str, u32, u32, u32)> =
            u.iter().map(|k| (k.kernel.as_str(), k.registers, k.spill_stores, k.spill_loads)).collect();
        assert_eq!(got, [("combine", 32, 0, 0), ("fused", 80, 8, 24)]);
        assert!(super::parse_ptxas_usage("no ptxas here").is_empty());
    }

    use super::*;

    #[test]
    fn cache_name_depends_on_source_options_arch_and_version() {
        let o = CompileOptions {
            arch: "sm_90a".into(),
            include_dirs: vec!["/usr/local/cuda/include".into()],
            defines: vec![],
        };
        let base = cache_name("gemv.cu", "src", &o, (13, 0));
        assert!(base.starts_with("gemv-sm_90a-") && base.ends_with(".cubin"), "{base}");
        assert_eq!(base, cache_name("gemv.cu", "src", &o, (13, 0)));
        assert_ne!(base, cache_name("gemv.cu", "src2", &o, (13, 0)));
        assert_ne!(base, cache_name("gemv.cu", "src", &o, (13, 1)));
        let o2 = CompileOptions { arch: "sm_90".into(), ..o.clone() };
        assert_ne!(base, cache_name("gemv.cu", "src", &o2, (13, 0)));
        let o3 = CompileOptions { include_dirs: vec![], ..o };
        assert_ne!(base, cache_name("gemv.cu", "src", &o3, (13, 0)));
        let o4 = CompileOptions { defines: vec!["LATLAB_TRACE_CAP=16".into()], ..o3.clone() };
        assert_ne!(cache_name("gemv.cu", "src", &o3, (13, 0)), cache_name("gemv.cu", "src", &o4, (13, 0)));
    }
}
