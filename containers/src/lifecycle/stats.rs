//! One-shot resource usage for the environment detail page: CPU percent (of one CPU, like `docker stats`)
//! and memory in use against the limit. Docker takes two samples about a second apart to compute CPU, so a
//! call takes about a second; the app polls it only while someone looks.

use bollard::query_parameters::StatsOptionsBuilder;
use futures_util::StreamExt;

use crate::error::{Error, Result};
use crate::Docker;

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ContainerStats {
    /// 100 = one full CPU (so up to 100 × CPUs), as `docker stats` shows it.
    pub cpu_percent: f64,
    /// Memory in use, excluding reclaimable page cache (what the OOM killer counts against the limit).
    pub memory_bytes: u64,
    pub memory_limit_bytes: u64,
    pub pids: Option<u64>,
}

impl Docker {
    /// Samples a running container's usage once.
    pub async fn stats(&self, name: &str) -> Result<ContainerStats> {
        let options = StatsOptionsBuilder::default()
            .stream(false)
            .one_shot(false)
            .build();
        let sample = self
            .api()
            .stats(name, Some(options))
            .next()
            .await
            .ok_or_else(|| Error::NotFound {
                kind: "container stats",
                name: name.to_string(),
            })?
            .map_err(|e| Error::docker(format!("reading stats of {name}"), "container", name, e))?;
        Ok(from_sample(&sample))
    }
}

fn from_sample(s: &bollard::models::ContainerStatsResponse) -> ContainerStats {
    let total = |c: &Option<bollard::models::ContainerCpuStats>| {
        c.as_ref()
            .and_then(|c| c.cpu_usage.as_ref())
            .and_then(|u| u.total_usage)
            .unwrap_or(0)
    };
    let system = |c: &Option<bollard::models::ContainerCpuStats>| {
        c.as_ref().and_then(|c| c.system_cpu_usage).unwrap_or(0)
    };
    let cpu_delta = total(&s.cpu_stats).saturating_sub(total(&s.precpu_stats)) as f64;
    let system_delta = system(&s.cpu_stats).saturating_sub(system(&s.precpu_stats)) as f64;
    let online = s
        .cpu_stats
        .as_ref()
        .and_then(|c| {
            c.online_cpus.map(u64::from).or_else(|| {
                c.cpu_usage
                    .as_ref()
                    .and_then(|u| u.percpu_usage.as_ref())
                    .map(|p| p.len() as u64)
            })
        })
        .unwrap_or(1) as f64;
    let cpu_percent = if system_delta > 0.0 {
        cpu_delta / system_delta * online * 100.0
    } else {
        0.0
    };
    let memory = s.memory_stats.as_ref();
    let usage = memory.and_then(|m| m.usage).unwrap_or(0);
    // cgroup v1 reports total_inactive_file, v2 inactive_file; docker stats subtracts it.
    let inactive = memory
        .and_then(|m| m.stats.as_ref())
        .and_then(|st| {
            st.get("total_inactive_file")
                .or_else(|| st.get("inactive_file"))
                .copied()
        })
        .unwrap_or(0);
    ContainerStats {
        cpu_percent,
        memory_bytes: usage.saturating_sub(inactive),
        memory_limit_bytes: memory.and_then(|m| m.limit).unwrap_or(0),
        pids: s.pids_stats.as_ref().and_then(|p| p.current),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bollard::models::{
        ContainerCpuStats, ContainerCpuUsage, ContainerMemoryStats, ContainerStatsResponse,
    };

    #[test]
    fn computes_like_docker_stats() {
        let cpu = |total, system| ContainerCpuStats {
            cpu_usage: Some(ContainerCpuUsage {
                total_usage: Some(total),
                ..Default::default()
            }),
            system_cpu_usage: Some(system),
            online_cpus: Some(2),
            ..Default::default()
        };
        let sample = ContainerStatsResponse {
            cpu_stats: Some(cpu(1_500, 10_000)),
            precpu_stats: Some(cpu(1_000, 8_000)),
            memory_stats: Some(ContainerMemoryStats {
                usage: Some(300),
                limit: Some(1_000),
                stats: Some([("total_inactive_file".to_string(), 100u64)].into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let stats = from_sample(&sample);
        assert_eq!(stats.cpu_percent, 50.0);
        assert_eq!((stats.memory_bytes, stats.memory_limit_bytes), (200, 1_000));
    }
}
