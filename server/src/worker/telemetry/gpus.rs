//! The worker's GPUs through NVML: utilisation, memory, power, clocks and temperature per
//! device. nvml-wrapper opens libnvidia-ml when asked, so a host without the driver
//! builds and runs the same binary and only gets a note.

use bench_types::telemetry::Series;
use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};

/// Which devices to sample, by NVML index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Devices {
    All,
    Only(u32),
}

pub struct Gpus {
    nvml: Nvml,
    indices: Vec<u32>,
}

impl Gpus {
    /// Loads NVML and lists the devices; an error says why there is nothing to sample.
    pub fn open(devices: &Devices) -> Result<Gpus, String> {
        let nvml = Nvml::init().map_err(|e| format!("NVML is not available on this host ({e})"))?;
        let count = nvml.device_count().map_err(|e| format!("NVML could not count the GPUs ({e})"))?;
        let indices: Vec<u32> = match devices {
            Devices::All => (0..count).collect(),
            Devices::Only(i) if *i < count => vec![*i],
            Devices::Only(i) => return Err(format!("NVML sees {count} GPUs, none with index {i}")),
        };
        if indices.is_empty() {
            return Err("NVML sees no GPU on this host".into());
        }
        Ok(Gpus { nvml, indices })
    }

    /// One reading of every device; a value the device does not report is left out.
    /// Blocking (driver calls): run it off the async threads.
    pub fn sample(&self) -> Vec<(u32, Series, f64)> {
        let mut out = Vec::new();
        for &i in &self.indices {
            let Ok(d) = self.nvml.device_by_index(i) else { continue };
            let mut put = |s: Series, v: Option<f64>| {
                if let Some(v) = v {
                    out.push((i, s, v));
                }
            };
            put(Series::GpuUtilPct, d.utilization_rates().ok().map(|u| f64::from(u.gpu)));
            put(Series::GpuMemoryUsedMib, d.memory_info().ok().map(|m| m.used as f64 / (1024.0 * 1024.0)));
            put(Series::GpuPowerW, d.power_usage().ok().map(|mw| f64::from(mw) / 1000.0));
            put(Series::GpuSmClockMhz, d.clock_info(Clock::SM).ok().map(f64::from));
            put(Series::GpuMemClockMhz, d.clock_info(Clock::Memory).ok().map(f64::from));
            put(Series::GpuTemperatureC, d.temperature(TemperatureSensor::Gpu).ok().map(f64::from));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The machines that build latlab have no NVIDIA driver: opening says so, and does
    /// not panic. (On the GPU machine, it lists the devices instead.)
    #[test]
    fn without_nvml_opening_is_a_note_not_a_crash() {
        match Gpus::open(&Devices::All) {
            Err(e) => assert!(e.contains("NVML") || e.contains("GPU"), "{e}"),
            Ok(g) => assert!(!g.indices.is_empty()),
        }
    }
}
