//! One form, several runs: one spec per launched preset or per rung of the native ladder,
//! and where the browser goes once they exist.

use super::parser::ticked;
use super::{RunForm, load};
use bench_types::native_ladder::native_ladder;
use bench_types::{CreatedRuns, RunSpec, Target, ValidationErrors};

impl RunForm {
    /// Every spec the form asks for: one, or one per launched preset (each served under
    /// its own model name, which requests must use).
    pub fn to_specs(&self) -> Result<Vec<RunSpec>, ValidationErrors> {
        let base = self.to_spec()?;
        if self.is_native_ladder() {
            return self.ladder_specs(&base);
        }
        if self.target_kind != "launched" {
            return Ok(vec![base]);
        }
        let targets = self.launched_targets().expect("checked by to_spec");
        let many = targets.len() > 1;
        targets
            .into_iter()
            .map(|(name, t)| {
                let mut spec = base.clone();
                spec.model = t.model.clone();
                spec.label = match (base.label.is_empty(), many) {
                    (true, _) => name.to_string(),
                    (false, true) => format!("{} · {name}", base.label),
                    (false, false) => base.label.clone(),
                };
                spec.target = Target::Launched(t);
                spec.validate().map(|()| spec)
            })
            .collect()
    }

    /// Where the browser goes once the runs exist: the comparison of several (a native
    /// ladder opens on its ladder chart of TPOT, the latency FP8 and speculation act on),
    /// else the run.
    pub fn created_url(&self, created: &CreatedRuns) -> String {
        match (&created.comparison_slug, created.run_ids.first()) {
            (Some(slug), _) if self.is_native_ladder() => format!("/c/{slug}?chart=ladder&metric=tpot"),
            // A rate sweep is read as latency against the throughput each rate reached.
            (Some(slug), _) if self.is_rate_sweep() => format!("/c/{slug}?chart=curve"),
            (Some(slug), _) => format!("/c/{slug}"),
            (None, Some(id)) => format!("/runs/{id}"),
            (None, None) => "/runs".to_string(),
        }
    }

    /// Whether the form asks for the native ladder rather than one native target.
    pub fn is_native_ladder(&self) -> bool {
        self.target_kind == "native" && ticked(&self.native_ladder)
    }

    /// One spec per rung of the native ladder, from the form's model, device and batch (its
    /// weights and speculation fields are the rungs' to set).
    fn ladder_specs(&self, base: &RunSpec) -> Result<Vec<RunSpec>, ValidationErrors> {
        let mut e = ValidationErrors::default();
        let Target::Native(n) = &base.target else { unreachable!("a native form") };
        if base.load.max_concurrency.len() > 1 {
            // The ladder chart compares rung with rung; a sweep would interleave loads.
            e.push(
                "load.max_concurrency",
                "the native ladder compares its rungs at one concurrency; start one ladder per value",
            );
            return Err(e);
        }
        if self.is_rate_sweep() {
            e.push(
                load::RATE_FIELD,
                "the native ladder compares its rungs at one load; start one ladder per rate",
            );
            return Err(e);
        }
        let rungs = native_ladder(n, Some(&self.draft_model)).map_err(|m| {
            e.push("target.speculative.draft_model", m);
            e
        })?;
        rungs
            .into_iter()
            .map(|r| {
                let mut spec = base.clone();
                spec.target = Target::Native(r.target);
                spec.label = match base.label.is_empty() {
                    true => format!("native ladder · {}", r.name),
                    false => format!("{} · {}", base.label, r.name),
                };
                spec.validate().map(|()| spec)
            })
            .collect()
    }
}
