//! Where a decode step's wall time goes (`Tuning::step_timing`, `LATLAB_STEP_TIMING=1`; an
//! instrument, off by default): CUDA events around the graph replay give the GPU's time, a
//! host clock around the whole call (metadata upload, replay, token download and wait) the
//! call's time, and the clock between calls the engine loop's own time. Inside the call,
//! host clocks also split out the metadata upload and the launch call; the rest of the call
//! beyond the replay is the GPU's start latency, the token download and the host's wake.
//! Why: a kernel change that shortens the lab's step chain need not shorten the engine's
//! step, and this says which of the three the engine's step is made of (engine/PERF-LOG.md,
//! 2026-11-30 23:19). Logged at info every `EVERY` steps, then reset.

use super::driver_err;
use crate::error::Result;
use kernels::Gpu;
use kernels::cudarc::driver::{CudaEvent, sys};
use std::time::{Duration, Instant};

/// Replays of the same step back to back after each log line (`burst`).
const BURST: u32 = 20;

/// Steps per log line (short enough that most windows hold no prefill: a prefill between two
/// decode calls counts as the loop's time).
const EVERY: u32 = 100;

pub(super) struct StepTiming {
    start: CudaEvent,
    end: CudaEvent,
    /// When the last call returned (the loop's time runs from there to the next call).
    last_return: Option<Instant>,
    call_began: Option<Instant>,
    /// When the replay's start event was recorded (the metadata is up) and when the launch
    /// call returned.
    replay_began: Option<Instant>,
    launched: Option<Instant>,
    steps: u32,
    gpu: Duration,
    call: Duration,
    between: Duration,
    meta: Duration,
    launch: Duration,
    /// A log line was just written: `burst` runs next.
    burst_due: bool,
}

impl StepTiming {
    /// The instrument, with its events on `gpu`'s context.
    pub fn new(gpu: &Gpu) -> Result<Self> {
        let ev = || {
            gpu.ctx()
                .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(driver_err("create step timing event"))
        };
        Ok(StepTiming {
            start: ev()?,
            end: ev()?,
            last_return: None,
            call_began: None,
            replay_began: None,
            launched: None,
            steps: 0,
            gpu: Duration::ZERO,
            call: Duration::ZERO,
            between: Duration::ZERO,
            meta: Duration::ZERO,
            launch: Duration::ZERO,
            burst_due: false,
        })
    }

    /// A decode call begins (before its metadata upload).
    pub fn call_begins(&mut self) {
        let now = Instant::now();
        if let Some(t) = self.last_return {
            self.between += now - t;
        }
        self.call_began = Some(now);
    }

    /// Just before and after the graph's launch, on its stream.
    pub fn replay_begins(&mut self, gpu: &Gpu) -> Result<()> {
        self.replay_began = Some(Instant::now());
        self.start.record(gpu.stream()).map_err(driver_err("record step timing event"))
    }
    pub fn replay_ends(&mut self, gpu: &Gpu) -> Result<()> {
        self.launched = Some(Instant::now());
        self.end.record(gpu.stream()).map_err(driver_err("record step timing event"))
    }

    /// The call has its results (the stream is synchronized, so both events are done).
    /// `captured`: this call captured the graph first, so it counts as no step.
    pub fn call_ends(&mut self, captured: bool) -> Result<()> {
        let now = Instant::now();
        if captured {
            self.call_began = None;
            self.last_return = Some(now);
            return Ok(());
        }
        let ms = self.start.elapsed_ms(&self.end).map_err(driver_err("read step timing events"))?;
        self.gpu += Duration::from_secs_f64(ms as f64 / 1e3);
        if let Some(t) = self.call_began.take() {
            self.call += now - t;
            if let (Some(r), Some(l)) = (self.replay_began.take(), self.launched.take()) {
                self.meta += r - t;
                self.launch += l - r;
            }
        }
        self.last_return = Some(now);
        self.steps += 1;
        if self.steps == EVERY {
            let per = |d: Duration| d.as_secs_f64() * 1e6 / self.steps as f64;
            tracing::info!(
                steps = self.steps,
                gpu_us = per(self.gpu),
                call_us = per(self.call),
                between_calls_us = per(self.between),
                meta_us = per(self.meta),
                launch_us = per(self.launch),
                "decode step timing (graph replay on the GPU; the whole call; the engine loop \
                 between calls; in the call, the metadata upload and the launch call)"
            );
            self.steps = 0;
            self.gpu = Duration::ZERO;
            self.call = Duration::ZERO;
            self.between = Duration::ZERO;
            self.meta = Duration::ZERO;
            self.launch = Duration::ZERO;
            self.burst_due = true;
        }
        Ok(())
    }

    /// After a log line: replay the step just run `BURST` times back to back and log the
    /// GPU time per replay. With the stream never idle, the graph's launch is hidden behind
    /// the replay before it, so this against `gpu_us` is what waiting on the host for each
    /// step costs on the GPU. Replaying a decode step again is idempotent (the same token at
    /// the same position writes the same K/V into the same slot), so the run's output does
    /// not change.
    pub fn burst(&mut self, gpu: &Gpu, mut replay: impl FnMut() -> Result<()>) -> Result<()> {
        if !std::mem::take(&mut self.burst_due) {
            return Ok(());
        }
        let rec = driver_err("record step timing event");
        self.start.record(gpu.stream()).map_err(&rec)?;
        for _ in 0..BURST {
            replay()?;
        }
        self.end.record(gpu.stream()).map_err(&rec)?;
        gpu.sync().map_err(super::kernel_err)?;
        let ms = self.start.elapsed_ms(&self.end).map_err(driver_err("read step timing events"))?;
        tracing::info!(
            replays = BURST,
            burst_us = ms as f64 * 1e3 / BURST as f64,
            "decode step replayed back to back (GPU time per replay)"
        );
        // The burst's time is not the loop's.
        self.last_return = Some(Instant::now());
        Ok(())
    }
}
