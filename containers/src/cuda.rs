//! CUDA versions, NVIDIA driver versions and compute capabilities, and the table that ties CUDA toolkit
//! releases to the oldest Linux driver able to run them. The table is NVIDIA's "CUDA Toolkit and
//! Corresponding Driver Versions" (CUDA release notes, table 3, Linux x86_64 column). It uses the toolkit
//! requirement, not the looser "minor version compatibility" floor (driver ≥ 525 for all of 12.x, ≥ 580 for
//! 13.x, ≥ 450.80.02 for 11.x), because the official CUDA images set `NVIDIA_REQUIRE_CUDA=cuda>=12.x` and the
//! NVIDIA container runtime enforces exactly that at container start — which is the failure users meet and
//! that preflight exists to predict.

use std::fmt;
use std::str::FromStr;

/// A dotted numeric version (`550.54.15`, `12.4.1`, `9.0`), compared component by component with missing
/// components as zero (`12.4` = `12.4.0`). The text is kept as written, because driver versions have
/// meaningful leading zeros for people (`535.104.05`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct Version {
    parts: Vec<u32>,
    text: String,
}

impl Version {
    pub fn parts(&self) -> &[u32] {
        &self.parts
    }

    /// `major.minor` only (CUDA `12.4.1` → `12.4`).
    pub fn major_minor(&self) -> Version {
        let (major, minor) = (
            self.parts.first().copied().unwrap_or(0),
            self.parts.get(1).copied().unwrap_or(0),
        );
        Version {
            parts: vec![major, minor],
            text: format!("{major}.{minor}"),
        }
    }

    /// Components without trailing zeros: the identity used for equality and hashing.
    fn significant(&self) -> &[u32] {
        let end = self
            .parts
            .iter()
            .rposition(|&p| p != 0)
            .map_or(0, |i| i + 1);
        &self.parts[..end]
    }
}

impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.significant() == other.significant()
    }
}

impl Eq for Version {}

impl std::hash::Hash for Version {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.significant().hash(state);
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let n = self.parts.len().max(other.parts.len());
        (0..n)
            .map(|i| {
                self.parts
                    .get(i)
                    .copied()
                    .unwrap_or(0)
                    .cmp(&other.parts.get(i).copied().unwrap_or(0))
            })
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl FromStr for Version {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let parts: Result<Vec<u32>, _> = s.split('.').map(str::parse::<u32>).collect();
        match parts {
            Ok(parts) if !parts.is_empty() && parts.len() <= 4 => Ok(Version {
                parts,
                text: s.to_string(),
            }),
            _ => Err(format!("{s:?} is not a dotted version number")),
        }
    }
}

impl TryFrom<String> for Version {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl From<Version> for String {
    fn from(v: Version) -> String {
        v.to_string()
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// CUDA toolkit release (`major.minor[.patch]`) → oldest Linux x86_64 driver, newest first. Only the point
/// releases that raised the requirement have a row; the others share the row before them (12.6 Update 2 needs
/// what 12.6 Update 1 needs). NVIDIA's "Update N" of `x.y` is `x.y.N`, except in 11.0, whose RC was 11.0.1,
/// GA 11.0.2 and Update 1 11.0.3.
///
/// Source: table 3 of the CUDA 13.1 release notes,
/// <https://docs.nvidia.com/cuda/archive/13.1.0/cuda-toolkit-release-notes/index.html>, checked against the
/// current notes (13.4 Update 1, <https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html>),
/// whose table for 12.9 and earlier is the same. The current notes give CUDA 13.2 and later only as a driver
/// branch (R595, R610, R615), not a minimum version, so those releases are left out: preflight then says it
/// cannot confirm compatibility rather than guessing.
const DRIVER_TABLE: &[(&str, &str)] = &[
    ("13.1", "590.44.01"),
    ("13.0.2", "580.95.05"),
    ("13.0.1", "580.82.07"),
    ("13.0", "580.65.06"),
    ("12.9.1", "575.57.08"),
    ("12.9", "575.51.03"),
    ("12.8.1", "570.124.06"),
    ("12.8", "570.26"),
    ("12.6.3", "560.35.05"),
    ("12.6.1", "560.35.03"),
    ("12.6", "560.28.03"),
    ("12.5.1", "555.42.06"),
    ("12.5", "555.42.02"),
    ("12.4.1", "550.54.15"),
    ("12.4", "550.54.14"),
    ("12.3.1", "545.23.08"),
    ("12.3", "545.23.06"),
    ("12.2.2", "535.104.05"),
    ("12.2.1", "535.86.09"),
    ("12.2", "535.54.03"),
    ("12.1", "530.30.02"),
    ("12.0.1", "525.85.12"),
    ("12.0", "525.60.13"),
    ("11.8", "520.61.05"),
    ("11.7.1", "515.48.07"),
    ("11.7", "515.43.04"),
    ("11.6.1", "510.47.03"),
    ("11.6", "510.39.01"),
    ("11.5", "495.29.05"),
    ("11.4.3", "470.82.01"),
    ("11.4.1", "470.57.02"),
    ("11.4", "470.42.01"),
    ("11.3", "465.19.01"),
    ("11.2.1", "460.32.03"),
    ("11.2", "460.27.03"),
    ("11.1.1", "455.32"),
    ("11.1", "455.23"),
    ("11.0.3", "450.51.06"),
    ("11.0.2", "450.51.05"),
    ("11.0", "450.36.06"),
];

/// The oldest driver that runs CUDA `cuda`: the entry for the newest listed release not newer than `cuda`
/// within the same major.minor. `None` for a CUDA version the table does not know (newer or older than all
/// entries) — callers must then refuse to guess.
pub fn min_driver_for(cuda: &Version) -> Option<Version> {
    DRIVER_TABLE.iter().find_map(|(c, d)| {
        let c: Version = c.parse().expect("table entry");
        (c.major_minor() == cuda.major_minor() && &c <= cuda)
            .then(|| d.parse().expect("table entry"))
    })
}

/// The newest CUDA release in the table that `driver` can run, for messages ("driver 535.104.05 supports up
/// to CUDA 12.2.2").
pub fn max_cuda_for(driver: &Version) -> Option<Version> {
    DRIVER_TABLE.iter().find_map(|(c, d)| {
        let d: Version = d.parse().expect("table entry");
        (&d <= driver).then(|| c.parse().expect("table entry"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        s.parse().unwrap()
    }

    #[test]
    fn versions_compare_numerically() {
        assert!(v("550.54.15") > v("550.54.14"));
        assert!(v("550.100") > v("550.54.15"));
        assert!(v("12.4") == v("12.4.0"));
        assert!(v("9.0") < v("10.0"));
        assert_eq!(v("535.104.05").to_string(), "535.104.05");
        assert_eq!(v("535.104.05"), v("535.104.5"));
        assert!("12.x".parse::<Version>().is_err());
        assert!("".parse::<Version>().is_err());
    }

    #[test]
    fn driver_table_lookups() {
        assert_eq!(min_driver_for(&v("12.4.1")), Some(v("550.54.15")));
        assert_eq!(min_driver_for(&v("12.4.0")), Some(v("550.54.14")));
        assert_eq!(min_driver_for(&v("12.8.1")), Some(v("570.124.06")));
        assert_eq!(min_driver_for(&v("12.6.2")), Some(v("560.35.03")));
        assert_eq!(min_driver_for(&v("11.8.0")), Some(v("520.61.05")));
        // Update releases that raised the requirement, per NVIDIA's table.
        assert_eq!(min_driver_for(&v("12.3.1")), Some(v("545.23.08")));
        assert_eq!(min_driver_for(&v("12.3.2")), Some(v("545.23.08")));
        assert_eq!(min_driver_for(&v("12.9.1")), Some(v("575.57.08")));
        assert_eq!(min_driver_for(&v("11.7.1")), Some(v("515.48.07")));
        assert_eq!(min_driver_for(&v("11.6.1")), Some(v("510.47.03")));
        assert_eq!(min_driver_for(&v("11.4.2")), Some(v("470.57.02")));
        assert_eq!(min_driver_for(&v("11.0.3")), Some(v("450.51.06")));
        assert_eq!(min_driver_for(&v("13.0.0")), Some(v("580.65.06")));
        assert_eq!(min_driver_for(&v("13.0.2")), Some(v("580.95.05")));
        assert_eq!(min_driver_for(&v("13.1.1")), Some(v("590.44.01")));
        // Known to NVIDIA only as a driver branch: not guessed.
        assert_eq!(min_driver_for(&v("13.2")), None);
        assert_eq!(min_driver_for(&v("14.0")), None);
        assert_eq!(min_driver_for(&v("10.2")), None);
    }

    #[test]
    fn driver_to_cuda() {
        assert_eq!(max_cuda_for(&v("535.104.05")), Some(v("12.2.2")));
        assert_eq!(max_cuda_for(&v("550.54.15")), Some(v("12.4.1")));
        assert_eq!(max_cuda_for(&v("575.57.08")), Some(v("12.9.1")));
        assert_eq!(max_cuda_for(&v("580.95.05")), Some(v("13.0.2")));
        assert_eq!(max_cuda_for(&v("400.0")), None);
    }

    #[test]
    fn table_is_ordered_newest_first() {
        let entries: Vec<(Version, Version)> =
            DRIVER_TABLE.iter().map(|(c, d)| (v(c), v(d))).collect();
        for pair in entries.windows(2) {
            assert!(pair[0].0 > pair[1].0 && pair[0].1 >= pair[1].1, "{pair:?}");
        }
    }
}
