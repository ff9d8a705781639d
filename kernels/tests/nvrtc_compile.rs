//! CI check without a GPU: every kernel source compiles to an sm_90a cubin with NVRTC,
//! every kernel `sources::ALL` lists is in it, and none spills registers (ptxas' report;
//! MAY_SPILL lists the exceptions and why). The registers per kernel are printed.
//!
//! NVRTC comes from the CUDA toolkit when `libnvrtc` is already loadable (the GPU
//! machine, with LD_LIBRARY_PATH set), else from PyPI's `nvidia-cuda-nvrtc` +
//! `nvidia-cuda-runtime` wheels (headers and libs under `nvidia/cu13/`): the test finds
//! them through `python3` and re-runs itself with LD_LIBRARY_PATH pointing there, because
//! the dynamic loader reads that variable only at process start. Without either it skips
//! and says how to install them.

/// The lab's CUDA sources (kernels/lab: experiments, not production), compiled here too so
/// that CI catches a change to the production headers that breaks one.
#[path = "../lab/src/sources.rs"]
mod lab_sources;
use kernels::compile::{CompileOptions, compile_with_usage};
use kernels::sources::ALL;
use std::path::{Path, PathBuf};
use std::process::Command;

const CHILD: &str = "LATLAB_NVRTC_CHECK_CHILD";
const TEST: &str = "every_kernel_compiles_for_sm90a";

fn nvrtc_loadable() -> bool {
    kernels::cudarc::get_lib_name_candidates("nvrtc")
        .iter()
        // SAFETY: loading libnvrtc runs only its initialisers.
        .any(|n| unsafe { libloading::Library::new(n) }.is_ok())
}

/// `nvidia/cu13` of the PyPI wheels, found through python3's import path.
fn pip_cuda_root() -> Option<PathBuf> {
    let out = Command::new("python3")
        .args(["-c", "import nvidia; print('\\n'.join(nvidia.__path__))"])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| Path::new(l.trim()).join("cu13"))
        .find(|p| p.join("lib/libnvrtc.so.13").exists() && p.join("include/cuda_bf16.h").exists())
}

/// Kernels allowed to spill registers to local memory, and why. Every other kernel must
/// not: a spill in the decode path (GEMMs, attention, norms) costs a memory round trip per
/// use, and ptxas says so at compile time, so CI can catch it without a GPU.
const MAY_SPILL: &[(&str, &str)] = &[];

fn compile_all(include: PathBuf) {
    let opts = CompileOptions { arch: "sm_90a".into(), include_dirs: vec![include], defines: vec![] };
    let (maj, min) = kernels::compile::nvrtc_version();
    eprintln!("NVRTC {maj}.{min}, options {:?}", opts.args());
    let mut spills = vec![];
    for s in ALL {
        let t = std::time::Instant::now();
        let (cubin, usage) = compile_with_usage(s.file, s.src, &opts).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(&cubin[..4], b"\x7fELF", "{}: NVRTC did not return a cubin", s.file);
        eprintln!("{}: {} bytes in {:?}", s.file, cubin.len(), t.elapsed());
        // For reading the SASS (nvdisasm, from PyPI's nvidia-cuda-nvdisasm).
        if let Ok(dir) = std::env::var("LATLAB_CUBIN_DIR") {
            std::fs::write(PathBuf::from(dir).join(format!("{}.cubin", s.file)), &cubin)
                .expect("write the cubin");
        }
        let code = text_sizes(&cubin);
        for &k in s.kernels {
            let u = usage
                .iter()
                .find(|u| u.kernel == k)
                .unwrap_or_else(|| panic!("{}: ptxas compiled no kernel named {k}", s.file));
            // Code size: an SM keeps ~130 KB of code; a kernel whose code was evicted
            // fetches it again on its critical path, ~57 ns per KB run (engine/PERF-LOG.md,
            // 2026-12-01 05:42).
            let bytes = code
                .iter()
                .find(|(name, _)| name == k)
                .unwrap_or_else(|| panic!("{}: no .text section for {k}", s.file))
                .1;
            eprintln!(
                "  {k:<32} {:>3} registers, spills {} B stored / {} B loaded, {:>6} B of code",
                u.registers, u.spill_stores, u.spill_loads, bytes
            );
            if u.spill_stores + u.spill_loads > 0 && !MAY_SPILL.iter().any(|(name, _)| *name == k) {
                spills.push(format!("{k} ({} / {} B)", u.spill_stores, u.spill_loads));
            }
        }
    }
    // The lab's experiments build on the production headers and pipeline.
    for (name, src) in lab_sources::ALL {
        let (cubin, usage) = compile_with_usage(name, src, &opts).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(&cubin[..4], b"\x7fELF", "{name}: no cubin");
        // The wide GEMM's shapes: registers and spills say which ones can run as timed.
        if name.starts_with("wide_") {
            for u in &usage {
                eprintln!(
                    "  {name} {:<28} {:>3} registers, spills {} / {} B",
                    u.kernel, u.registers, u.spill_stores, u.spill_loads
                );
            }
        }
        if *name != "latency_load.cu" {
            continue;
        }
        // Its code hops must hold the ~43 KB of straight code they are named for.
        for (k, bytes) in text_sizes(&cubin) {
            eprintln!("  latency_load.cu {k:<24} {bytes:>6} B of code");
            if k.starts_with("latency_hop_code") {
                assert!(bytes > 40_000, "{k}: {bytes} B of code, expected ~43 KB");
            }
        }
    }
    assert!(spills.is_empty(), "kernels spill registers (see MAY_SPILL): {}", spills.join(", "));
    // The block timeline's build (kernels/src/trace.rs, a GPU timing instrument) must
    // compile too; its registers and spills do not matter.
    let traced = CompileOptions {
        defines: vec!["LATLAB_TRACE_BUF=0x1000ULL".into(), "LATLAB_TRACE_CAP=16ULL".into()],
        ..opts
    };
    for s in ALL {
        let (cubin, _) = compile_with_usage(s.file, s.src, &traced).unwrap_or_else(|e| panic!("traced {e}"));
        assert_eq!(&cubin[..4], b"\x7fELF", "{} (traced): no cubin", s.file);
    }
}

/// (kernel, bytes of SASS) for every `.text.<kernel>` section of a cubin (an ELF64
/// little-endian file: section headers at e_shoff, e_shnum of e_shentsize bytes, names in
/// section e_shstrndx).
fn text_sizes(elf: &[u8]) -> Vec<(String, u64)> {
    let u16_at = |o: usize| u16::from_le_bytes(elf[o..o + 2].try_into().unwrap()) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(elf[o..o + 4].try_into().unwrap()) as usize;
    let u64_at = |o: usize| u64::from_le_bytes(elf[o..o + 8].try_into().unwrap());
    assert_eq!(elf[4], 2, "cubin is not ELF64");
    let (shoff, shentsize, shnum, shstrndx) =
        (u64_at(0x28) as usize, u16_at(0x3a), u16_at(0x3c), u16_at(0x3e));
    let header = |i: usize| shoff + i * shentsize;
    let names = u64_at(header(shstrndx) + 0x18) as usize;
    (0..shnum)
        .filter_map(|i| {
            let h = header(i);
            let start = names + u32_at(h);
            let end = start + elf[start..].iter().position(|&c| c == 0)?;
            let name = std::str::from_utf8(&elf[start..end]).ok()?;
            let kernel = name.strip_prefix(".text.")?;
            Some((kernel.to_string(), u64_at(h + 0x20)))
        })
        .collect()
}

#[test]
fn text_sizes_reads_an_elf64_section_table() {
    // A minimal ELF64: header, a string table and a .text.k section of 48 bytes.
    let strtab = b"\0.shstrtab\0.text.k\0";
    let mut elf = vec![0u8; 64];
    elf[..4].copy_from_slice(b"\x7fELF");
    elf[4] = 2;
    let strtab_at = elf.len();
    elf.extend_from_slice(strtab);
    let shoff = elf.len();
    let section = |name: u32, offset: u64, size: u64| {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(&name.to_le_bytes());
        h[0x18..0x20].copy_from_slice(&offset.to_le_bytes());
        h[0x20..0x28].copy_from_slice(&size.to_le_bytes());
        h
    };
    elf.extend(section(0, 0, 0));
    elf.extend(section(1, strtab_at as u64, strtab.len() as u64));
    elf.extend(section(11, 0, 48));
    elf[0x28..0x30].copy_from_slice(&(shoff as u64).to_le_bytes());
    elf[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
    elf[0x3c..0x3e].copy_from_slice(&3u16.to_le_bytes());
    elf[0x3e..0x40].copy_from_slice(&1u16.to_le_bytes());
    assert_eq!(text_sizes(&elf), vec![("k".to_string(), 48)]);
}

#[test]
fn every_kernel_compiles_for_sm90a() {
    if let Ok(include) = std::env::var(CHILD) {
        compile_all(PathBuf::from(include));
        return;
    }
    let toolkit_include = kernels::GpuOptions::from_env().expect("GPU options").include_dirs[0].clone();
    if nvrtc_loadable() && toolkit_include.join("cuda_bf16.h").exists() {
        compile_all(toolkit_include);
        return;
    }
    let Some(root) = pip_cuda_root() else {
        // scripts/test.sh installs the wheels and sets this: there a skip would hide a
        // kernel that no longer compiles.
        if std::env::var("LATLAB_REQUIRE_NVRTC").as_deref() == Ok("1") {
            panic!(
                "LATLAB_REQUIRE_NVRTC=1 but no NVRTC found: run scripts/setup.sh (pip nvidia-cuda-nvrtc nvidia-cuda-runtime)"
            );
        }
        eprintln!(
            "SKIPPED: no NVRTC found. Install it with \
             `python3 -m pip install nvidia-cuda-nvrtc nvidia-cuda-runtime` \
             (or put the CUDA toolkit's lib64 on LD_LIBRARY_PATH)"
        );
        return;
    };
    let lib = root.join("lib");
    let ld = match std::env::var("LD_LIBRARY_PATH") {
        Ok(old) if !old.is_empty() => format!("{}:{old}", lib.display()),
        _ => lib.display().to_string(),
    };
    let status = Command::new(std::env::current_exe().expect("test binary path"))
        .args(["--exact", TEST, "--nocapture", "--test-threads=1"])
        .env(CHILD, root.join("include"))
        .env("LD_LIBRARY_PATH", ld)
        .status()
        .expect("re-run the test binary");
    assert!(status.success(), "compiling with NVRTC from {} failed", root.display());
}
