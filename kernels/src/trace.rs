//! The block timeline: a timing instrument for the GPU tests, never the engine. With
//! `GpuOptions::trace_events` > 0 every kernel is compiled with `LATLAB_TRACE_BUF`
//! (common.cuh), and thread 0 of each block records when the block starts and when its
//! wait on the previous kernel returns. Why: with programmatic dependent launch a kernel's
//! cost depends on its neighbours (when its blocks can be placed, when its wait returns),
//! which neither a kernel timed alone nor a step with one kind of kernel left out shows.
//! `launches` groups the events into kernel launches; a launch's first wait return is when
//! the kernel before it finished, so the gaps between those are the step's critical path,
//! kernel by kernel.

use crate::error::{DriverContext, Result};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use std::sync::Arc;

/// What an event records: a block starting, its wait on the previous kernel returning, or
/// a point the kernel marks itself (`TRACE_MARK(2..7)` in common.cuh).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Start,
    Waited,
    Mark(u8),
}

/// One event of one block (common.cuh's layout, decoded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceEvent {
    /// %globaltimer, ns.
    pub t_ns: u64,
    pub kind: EventKind,
    pub sm: u32,
    /// Warps per block and blocks in the grid: a launch's signature.
    pub warps: u32,
    pub grid: u32,
    pub block: u32,
}

/// u64 per block record (LATLAB_TRACE_REC in common.cuh): the block's signature word,
/// then the time of each event kind 0-7 (0: absent).
const REC: usize = 9;

/// The events of one block record (common.cuh's `latlab_trace`).
pub fn decode(rec: &[u64]) -> Vec<TraceEvent> {
    let w = rec[0];
    rec[1..REC]
        .iter()
        .enumerate()
        .filter(|(_, t)| **t != 0)
        .map(|(k, &t_ns)| TraceEvent {
            t_ns,
            kind: match k {
                0 => EventKind::Start,
                1 => EventKind::Waited,
                k => EventKind::Mark(k as u8),
            },
            sm: ((w >> 53) & 0xff) as u32,
            warps: ((w >> 47) & 0x3f) as u32,
            grid: ((w >> 23) & 0xff_ffff) as u32,
            block: (w & 0x7f_ffff) as u32,
        })
        .collect()
}

/// The device buffer the traced kernels write: a count, then a record per block.
pub struct Trace {
    buf: CudaSlice<u64>,
    cap: usize,
}

impl Trace {
    /// Room for `cap` block records.
    pub(crate) fn new(stream: &Arc<CudaStream>, cap: usize) -> Result<Self> {
        let buf = stream.alloc_zeros(1 + REC * cap).ctx("allocate the trace buffer")?;
        Ok(Trace { buf, cap })
    }

    /// The preprocessor definitions that make the kernels write this buffer.
    pub(crate) fn defines(&self, stream: &Arc<CudaStream>) -> Vec<String> {
        let (p, _sync) = self.buf.device_ptr(stream);
        vec![format!("LATLAB_TRACE_BUF={p:#x}ULL"), format!("LATLAB_TRACE_CAP={}ULL", self.cap)]
    }

    /// Forget the events so far (a stream operation: ordered with the launches).
    pub fn clear(&mut self, stream: &Arc<CudaStream>) -> Result<()> {
        stream.memset_zeros(&mut self.buf).ctx("clear the trace")
    }

    /// The events since the last `clear`, in time order (waits for the stream). Blocks past
    /// the buffer's capacity are lost; the second value counts them.
    pub fn events(&self, stream: &Arc<CudaStream>) -> Result<(Vec<TraceEvent>, usize)> {
        let raw = stream.clone_dtoh(&self.buf).ctx("read the trace")?;
        let n = raw[0] as usize;
        let kept = n.min(self.cap);
        let mut ev: Vec<TraceEvent> = raw[1..1 + REC * kept].chunks(REC).flat_map(decode).collect();
        ev.sort_by_key(|e| e.t_ns);
        Ok((ev, n - kept))
    }
}

/// One kernel launch as its blocks' events show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchTimes {
    pub grid: u32,
    pub warps: u32,
    /// First and last block start (all blocks placed).
    pub first_start: u64,
    pub last_start: u64,
    /// First and last wait return; the first is when the kernel before finished (if a
    /// block was waiting by then).
    pub first_wait: Option<u64>,
    pub last_wait: Option<u64>,
    /// The latest event of each mark kind 2..7 over the launch's blocks (index kind - 2).
    pub last_mark: [Option<u64>; 6],
    /// Each mark kind's sum (ns after `first_start`: %globaltimer counts from the epoch, so
    /// raw times would overflow a sum) and count over the blocks (`mean_mark`).
    mark_sum: [u64; 6],
    mark_n: [u32; 6],
    starts: u32,
    waits: u32,
}

impl LaunchTimes {
    /// The mean over the blocks that marked it of mark `kind` (2..7), in ns after
    /// `first_start` (an f64 of epoch nanoseconds would keep only 256 ns steps): where the
    /// typical block is, beside `last_mark`'s slowest.
    pub fn mean_mark(&self, kind: u8) -> Option<f64> {
        let i = usize::from(kind).checked_sub(2).filter(|&i| i < 6)?;
        (self.mark_n[i] > 0).then(|| self.mark_sum[i] as f64 / f64::from(self.mark_n[i]))
    }
}

/// Group time-ordered events into launches. A block start belongs to the latest launch of
/// its signature (grid, warps) that still has blocks to start, else it opens a launch; a
/// wait return to the earliest launch of its signature with more starts than waits. Sound
/// for a stream of launches because a launch begins only after every block of the one
/// before it started, and its waits return only after the one before it finished.
pub fn launches(events: &[TraceEvent]) -> Vec<LaunchTimes> {
    let mut out: Vec<LaunchTimes> = vec![];
    for e in events {
        let same = |l: &LaunchTimes| l.grid == e.grid && l.warps == e.warps;
        match e.kind {
            EventKind::Start => match out.iter_mut().rev().find(|l| same(l)) {
                Some(l) if l.starts < l.grid => {
                    l.starts += 1;
                    l.last_start = e.t_ns;
                }
                _ => out.push(LaunchTimes {
                    grid: e.grid,
                    warps: e.warps,
                    first_start: e.t_ns,
                    last_start: e.t_ns,
                    first_wait: None,
                    last_wait: None,
                    last_mark: [None; 6],
                    mark_sum: [0; 6],
                    mark_n: [0; 6],
                    starts: 1,
                    waits: 0,
                }),
            },
            EventKind::Waited => {
                if let Some(l) = out.iter_mut().find(|l| same(l) && l.waits < l.starts) {
                    l.waits += 1;
                    l.first_wait.get_or_insert(e.t_ns);
                    l.last_wait = Some(e.t_ns);
                }
            }
            // A mark belongs to the latest launch of its signature that has started.
            EventKind::Mark(k) => {
                let i = usize::from(k).wrapping_sub(2);
                if let Some(l) = out.iter_mut().rev().find(|l| same(l))
                    && let Some(m) = l.last_mark.get_mut(i)
                {
                    *m = Some(m.map_or(e.t_ns, |t| t.max(e.t_ns)));
                    l.mark_sum[i] += e.t_ns.saturating_sub(l.first_start);
                    l.mark_n[i] += 1;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{EventKind, TraceEvent, decode, launches};

    #[test]
    fn block_records_decode_from_common_cuh_layout() {
        let w = 131u64 << 53 | 9 << 47 | 396 << 23 | 395;
        let ev = decode(&[w, 1000, 1234, 0, 0, 0, 1500, 0, 0]);
        let at = |t_ns, kind| TraceEvent { t_ns, kind, sm: 131, warps: 9, grid: 396, block: 395 };
        assert_eq!(
            ev,
            [at(1000, EventKind::Start), at(1234, EventKind::Waited), at(1500, EventKind::Mark(5))]
        );
    }

    #[test]
    fn events_group_into_launches_in_stream_order() {
        let ev = |t, kind, grid, warps| TraceEvent { t_ns: t, kind, sm: 0, warps, grid, block: 0 };
        use EventKind::{Start as S, Waited as W};
        // A (2 blocks of 9 warps), then B (1 block of 2 warps) launched while A runs, then
        // A's signature again: a new launch once A's two blocks have started.
        let events = [
            ev(0, S, 2, 9),
            ev(1, S, 2, 9),
            ev(2, W, 2, 9),
            ev(3, S, 1, 2),
            ev(4, W, 2, 9),
            ev(6, W, 1, 2),
            ev(7, S, 2, 9),
            ev(8, S, 2, 9),
            ev(9, W, 2, 9),
            ev(10, W, 2, 9),
            ev(11, EventKind::Mark(3), 2, 9),
            ev(12, EventKind::Mark(3), 2, 9),
        ];
        let l = launches(&events);
        assert_eq!(l.len(), 3);
        assert_eq!((l[0].first_start, l[0].last_start), (0, 1));
        assert_eq!((l[0].first_wait, l[0].last_wait), (Some(2), Some(4)));
        assert_eq!((l[1].grid, l[1].first_wait), (1, Some(6)));
        assert_eq!((l[2].first_start, l[2].first_wait), (7, Some(9)));
        assert_eq!((l[2].last_mark[1], l[0].last_mark[1]), (Some(12), None));
        assert_eq!((l[2].mean_mark(3), l[2].mean_mark(2)), (Some(4.5), None));
        assert_eq!(l[2].mean_mark(9), None);
        // %globaltimer counts ns from the epoch: 400 blocks' marks must not overflow.
        let t0 = 1_764_000_000_000_000_000u64;
        let mut big = vec![ev(t0, S, 400, 9)];
        big.extend((1..400).map(|i| ev(t0 + i, S, 400, 9)));
        big.extend((0..400).map(|i| ev(t0 + 1000 + i, EventKind::Mark(4), 400, 9)));
        let l = launches(&big);
        assert_eq!(l[0].mean_mark(4), Some(1000.0 + 199.5));
    }
}
