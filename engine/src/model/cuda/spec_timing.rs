//! Where a speculative round's time goes (`LATLAB_STEP_TIMING=1`, as step_timing.rs for
//! decode steps; an instrument, off by default): per part of the round, the host's wall
//! clock around it and the GPU's time between CUDA events recorded on the stream at its
//! start and end. Parts: the verify (its graph replay or eager forward, against the whole
//! call), the draft's extension (the eager pass over the positions it has not seen, up to
//! the root's top-k on the host), each tree level (upload, replay, top-k download) and the
//! whole `propose` call, whose wall minus the parts is the host's tree search.
//! Why: the round's wall time is verify + draft, and each of those is GPU work plus host
//! work the GPU waits on; this says which (engine/PERF-LOG.md, step 69).

use super::driver_err;
use crate::error::Result;
use kernels::Gpu;
use kernels::cudarc::driver::{CudaEvent, sys};
use std::time::{Duration, Instant};

/// Verify calls per log line.
const EVERY: u32 = 50;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Part {
    Verify = 0,
    Extend = 1,
    Level = 2,
    Propose = 3,
}

const PARTS: usize = 4;
const NAMES: [&str; PARTS] = ["verify", "draft extend", "draft level", "draft call"];

/// A part begun: its host clock and the index of its start event.
pub(super) struct Begun {
    part: Part,
    at: Instant,
    ev: usize,
    /// The end event, once the part's last kernel is queued (`queued`).
    end_ev: Option<usize>,
}

pub(super) struct SpecTiming {
    /// Events, reused call after call: `used` of them recorded since the last `settle`.
    ev: Vec<CudaEvent>,
    used: usize,
    /// (part, start event, end event) recorded but not read yet.
    pending: Vec<(Part, usize, usize)>,
    wall: [Duration; PARTS],
    gpu: [Duration; PARTS],
    count: [u32; PARTS],
}

impl SpecTiming {
    pub fn new() -> Self {
        SpecTiming {
            ev: vec![],
            used: 0,
            pending: vec![],
            wall: [Duration::ZERO; PARTS],
            gpu: [Duration::ZERO; PARTS],
            count: [0; PARTS],
        }
    }

    fn record(&mut self, gpu: &Gpu) -> Result<usize> {
        if self.used == self.ev.len() {
            let e = gpu
                .ctx()
                .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(driver_err("create spec timing event"))?;
            self.ev.push(e);
        }
        self.ev[self.used].record(gpu.stream()).map_err(driver_err("record spec timing event"))?;
        self.used += 1;
        Ok(self.used - 1)
    }

    pub fn begin(&mut self, gpu: &Gpu, part: Part) -> Result<Begun> {
        self.begin_at(gpu, part, Instant::now())
    }

    /// A part whose host side began at `at`, before its GPU side.
    pub fn begin_at(&mut self, gpu: &Gpu, part: Part, at: Instant) -> Result<Begun> {
        Ok(Begun { part, at, ev: self.record(gpu)?, end_ev: None })
    }

    /// The part's last kernel is queued: its end event goes on the stream (before the
    /// download the host then waits on, which is not GPU work).
    pub fn queued(&mut self, gpu: &Gpu, b: &mut Begun) -> Result<()> {
        b.end_ev = Some(self.record(gpu)?);
        Ok(())
    }

    /// The part is over on the host: its wall time runs to now (and its GPU time to its
    /// `queued` event, or to now's).
    pub fn end(&mut self, gpu: &Gpu, b: Begun) -> Result<()> {
        let end = match b.end_ev {
            Some(e) => e,
            None => self.record(gpu)?,
        };
        let p = b.part as usize;
        self.wall[p] += b.at.elapsed();
        self.count[p] += 1;
        self.pending.push((b.part, b.ev, end));
        Ok(())
    }

    /// At the end of a call: waits for the stream (cheap: the call has just waited on its
    /// results), reads the GPU times, and logs a line every `EVERY` verify calls.
    pub fn settle(&mut self, gpu: &Gpu) -> Result<()> {
        gpu.sync().map_err(super::kernel_err)?;
        for (part, a, b) in self.pending.drain(..) {
            let ms = self.ev[a].elapsed_ms(&self.ev[b]).map_err(driver_err("read spec timing events"))?;
            self.gpu[part as usize] += Duration::from_secs_f64(ms as f64 / 1e3);
        }
        self.used = 0;
        if self.count[Part::Verify as usize] < EVERY {
            return Ok(());
        }
        let us = |d: Duration, n: u32| d.as_secs_f64() * 1e6 / n.max(1) as f64;
        let line: Vec<String> = (0..PARTS)
            .map(|p| {
                format!(
                    "{}: {} calls, wall {:.0} us, gpu {:.0} us",
                    NAMES[p],
                    self.count[p],
                    us(self.wall[p], self.count[p]),
                    us(self.gpu[p], self.count[p])
                )
            })
            .collect();
        tracing::info!("spec round timing (per call) | {}", line.join(" | "));
        *self = SpecTiming { ev: std::mem::take(&mut self.ev), ..SpecTiming::new() };
        Ok(())
    }
}
