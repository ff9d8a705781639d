//! `Tuning::smem_carveout`: the shared-memory carveout each group of kernels asks for.
//!
//! An SM splits 256 KB between L1 and shared memory and changes the split only when it is
//! idle, so the carveouts decide which kernels' blocks PDL can place beside which, and how
//! much L1 is left to kernels that read through it (the FP8 GEMMs at batch 4-8 read x
//! there). How the driver picks among them is not documented in detail; the groups and the
//! default come from whole-step sweeps (engine/PERF-LOG.md step 29), not from a model.

/// Percent of the largest carveout per group of kernels; `None` leaves it to the driver,
/// which picks per kernel from its shared memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Carveout {
    /// The bf16 skinny GEMMs (`skinny_gemm_bf16*`).
    pub bf16_gemm: Option<u8>,
    /// The FP8 skinny GEMMs (`skinny_gemm_fp8*`).
    pub fp8_gemm: Option<u8>,
    /// The split decode attention outside clusters and its merge kernel.
    pub attention: Option<u8>,
    /// The split decode attention merging in clusters (`decode_attention_cluster`,
    /// `decode_attention_mma_cluster`).
    pub attention_cluster: Option<u8>,
    /// Everything else (norms, rope, argmax, prefill).
    pub other: Option<u8>,
}

/// Which `Carveout` group a kernel belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelGroup {
    Bf16Gemm,
    Fp8Gemm,
    Attention,
    AttentionCluster,
    Other,
}

impl KernelGroup {
    pub fn of(kernel: &str) -> KernelGroup {
        if kernel.starts_with("skinny_gemm_bf16") {
            KernelGroup::Bf16Gemm
        } else if kernel.starts_with("skinny_gemm_fp8") {
            KernelGroup::Fp8Gemm
        } else if kernel.starts_with("decode_attention") && kernel.ends_with("_cluster") {
            KernelGroup::AttentionCluster
        } else if kernel.starts_with("decode_attention") {
            KernelGroup::Attention
        } else {
            KernelGroup::Other
        }
    }
}

impl Carveout {
    /// No preference anywhere (`driver`).
    pub const DRIVER: Carveout = Carveout::all(None);
    /// Every kernel at the largest (`max`).
    pub const MAX: Carveout = Carveout::all(Some(100));
    /// All but the skinny GEMMs at the largest (`max-outside-gemms`).
    pub const MAX_OUTSIDE_GEMMS: Carveout = Carveout { bf16_gemm: None, fp8_gemm: None, ..Carveout::MAX };
    /// The default: the split attention outside clusters and its merge at the largest,
    /// the rest the driver's (the one group whose preference paid in whole steps; the
    /// cluster kernel at the largest made FP8 batch 8 slower: engine/PERF-LOG.md step 29).
    pub const ATTENTION_MAX: Carveout = Carveout { attention: Some(100), ..Carveout::DRIVER };
    /// What `parse` takes, for error messages.
    pub const SYNTAX: &'static str = "driver, max, max-outside-gemms or B/F/A/C/O: the percent \
        of the largest carveout (0..=100, or - for the driver's choice) for the bf16 GEMMs, \
        the FP8 GEMMs, the attention outside clusters, the attention in clusters and the rest";

    const fn all(p: Option<u8>) -> Carveout {
        Carveout { bf16_gemm: p, fp8_gemm: p, attention: p, attention_cluster: p, other: p }
    }

    /// One of `SYNTAX`'s forms, e.g. `-/-/100/-/-`.
    pub fn parse(v: &str) -> Option<Carveout> {
        let pct = |p: &str| -> Option<Option<u8>> {
            if p == "-" {
                return Some(None);
            }
            p.parse::<u8>().ok().filter(|n| *n <= 100).map(Some)
        };
        match v {
            "driver" => Some(Self::DRIVER),
            "max" => Some(Self::MAX),
            "max-outside-gemms" => Some(Self::MAX_OUTSIDE_GEMMS),
            _ => match v.split('/').collect::<Vec<_>>()[..] {
                [b, f, a, c, o] => Some(Carveout {
                    bf16_gemm: pct(b)?,
                    fp8_gemm: pct(f)?,
                    attention: pct(a)?,
                    attention_cluster: pct(c)?,
                    other: pct(o)?,
                }),
                _ => None,
            },
        }
    }

    /// The preference for one kernel, if any.
    pub fn for_kernel(&self, kernel: &str) -> Option<u8> {
        match KernelGroup::of(kernel) {
            KernelGroup::Bf16Gemm => self.bf16_gemm,
            KernelGroup::Fp8Gemm => self.fp8_gemm,
            KernelGroup::Attention => self.attention,
            KernelGroup::AttentionCluster => self.attention_cluster,
            KernelGroup::Other => self.other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Carveout;

    #[test]
    fn carveout_groups_kernels_and_parses_each_form() {
        let c = Carveout::parse("-/58/100/72/0").unwrap();
        for (k, p) in [
            ("skinny_gemm_bf16_bulk_persistent", None),
            ("skinny_gemm_fp8_swiglu_bulk_xs", Some(58)),
            ("decode_attention_d128_g4", Some(100)),
            ("decode_attention_combine", Some(100)),
            ("decode_attention_cluster", Some(72)),
            ("decode_attention_mma_cluster", Some(72)),
            ("decode_attention_mma", Some(100)),
            ("add_rmsnorm_vec", Some(0)),
            ("qk_norm_rope_kv", Some(0)),
        ] {
            assert_eq!(c.for_kernel(k), p, "{k}");
        }
        assert_eq!(Carveout::parse("driver"), Some(Carveout::DRIVER));
        assert_eq!(Carveout::parse("max-outside-gemms"), Carveout::parse("-/-/100/100/100"));
        assert_eq!(Carveout::parse("max"), Carveout::parse("100/100/100/100/100"));
        for bad in ["101/0/0/0/0", "-", "a/b/c/d/e", "50/", "1/2/3/4", "1/2/3/4/5/6", ""] {
            assert_eq!(Carveout::parse(bad), None, "{bad}");
        }
    }
}
