//! What a CUDA backend runs with, for /v1/engine/info and so for every stored result: the
//! kernels' tuning as resolved for the model's weights (the defaults and any `LATLAB_*`
//! overrides), run-ahead's policy and whether decode replays CUDA graphs. Two runs of the
//! native engine are comparable only if these match; engine/PERF.md measures each of them.

use super::RunAhead;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CudaSettings {
    pub tuning: kernels::Tuning,
    pub run_ahead: RunAhead,
    pub graphs: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_name_every_knob_in_json() {
        let s = CudaSettings {
            tuning: kernels::Tuning::default(),
            run_ahead: RunAhead::Sure,
            graphs: true,
        };
        let v = serde_json::to_value(s).unwrap();
        assert_eq!(v["run_ahead"], "sure");
        assert_eq!(v["graphs"], true);
        let t = &v["tuning"];
        assert_eq!(t["bulk_stages"], 4);
        assert_eq!(t["pdl"], true);
        assert_eq!(t["tiled_weights"], true);
        assert_eq!(t["bulk_stages_wide"], 5);
        assert_eq!(t["attention_blocks"], 384);
        assert_eq!(t["smem_carveout"]["attention"], 100);
        assert!(t["smem_carveout"]["bf16_gemm"].is_null());
    }
}
