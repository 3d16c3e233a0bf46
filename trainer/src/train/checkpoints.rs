//! The run's checkpoint directory, `OUT/checkpoints/step-NNNNNNN/`: writing a complete checkpoint (the
//! Hugging Face files from `checkpoint::save` plus `trainer_state.json` and `optimizer.safetensors`)
//! under a hidden name and renaming it into place, so a crash never leaves a checkpoint that looks whole
//! but is not; retention (the best `keep_best` by metric plus the latest, others deleted from disk); and
//! finding the latest checkpoint to resume from.

use std::path::{Path, PathBuf};

use tch::nn::VarStore;

use super::optimizer::AdamW;
use super::state::{KeptCheckpoint, TrainerState, OPTIMIZER_FILE, STATE_FILE};
use crate::checkpoint::SavedCheckpoint;
use crate::{ErnieConfig, Error, Result, Tokenizer};

/// Directory name for the checkpoint at `step`; zero-padded so names sort by step.
pub fn dir_name(step: usize) -> String {
    format!("step-{step:07}")
}

/// Removes leftovers of interrupted saves (hidden `.…` directories) from `checkpoints/`.
pub fn clean_partial(root: &Path) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with('.') && entry.path().is_dir() {
            std::fs::remove_dir_all(entry.path()).map_err(|e| Error::io(entry.path(), e))?;
        }
    }
    Ok(())
}

/// Writes a complete checkpoint for `state.global_step` into `root` and returns what was written
/// (bytes and sha256 cover the whole directory and `model.safetensors` respectively).
pub fn write(
    root: &Path,
    vs: &VarStore,
    config: &ErnieConfig,
    tokenizer: &Tokenizer,
    opt: &AdamW,
    state: &TrainerState,
) -> Result<SavedCheckpoint> {
    let name = dir_name(state.global_step);
    let partial = root.join(format!(".{name}.partial"));
    let final_dir = root.join(&name);
    let result = (|| {
        let saved = crate::checkpoint::save(&partial, vs, config, tokenizer)?;
        opt.save(&partial.join(OPTIMIZER_FILE))?;
        state.write(&partial)?;
        if final_dir.exists() {
            std::fs::remove_dir_all(&final_dir).map_err(|e| Error::io(&final_dir, e))?;
        }
        std::fs::rename(&partial, &final_dir).map_err(|e| Error::io(&final_dir, e))?;
        let extra: u64 = [OPTIMIZER_FILE, STATE_FILE]
            .iter()
            .filter_map(|f| std::fs::metadata(final_dir.join(f)).ok())
            .map(|m| m.len())
            .sum();
        Ok(SavedCheckpoint {
            dir: final_dir.clone(),
            bytes: saved.bytes + extra,
            ..saved
        })
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&partial);
    }
    result
}

/// Which kept checkpoints survive: the `keep_best` best by metric (earlier wins ties) plus the latest.
/// Returns the survivors (in step order) and the names to delete.
pub fn retain(
    kept: &[KeptCheckpoint],
    keep_best: usize,
    higher_is_better: bool,
) -> (Vec<KeptCheckpoint>, Vec<String>) {
    let latest = kept.iter().map(|k| k.step).max();
    let mut ranked: Vec<&KeptCheckpoint> = kept.iter().filter(|k| k.metric.is_some()).collect();
    ranked.sort_by(|a, b| {
        let (x, y) = (a.metric.unwrap_or(0.0), b.metric.unwrap_or(0.0));
        let ord = if higher_is_better {
            y.total_cmp(&x)
        } else {
            x.total_cmp(&y)
        };
        ord.then(a.step.cmp(&b.step))
    });
    let best: Vec<usize> = ranked.iter().take(keep_best).map(|k| k.step).collect();
    let (mut keep, drop): (Vec<KeptCheckpoint>, Vec<KeptCheckpoint>) = kept
        .iter()
        .cloned()
        .partition(|k| Some(k.step) == latest || best.contains(&k.step));
    keep.sort_by_key(|k| k.step);
    (keep, drop.into_iter().map(|k| k.name).collect())
}

/// The newest complete checkpoint (one with `trainer_state.json`) under `root`.
pub fn latest(root: &Path) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("step-"))
                && p.join(STATE_FILE).is_file()
        })
        .collect();
    dirs.sort();
    dirs.pop()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(step: usize, metric: Option<f64>) -> KeptCheckpoint {
        KeptCheckpoint {
            name: dir_name(step),
            step,
            metric,
        }
    }

    #[test]
    fn keeps_best_k_and_latest() {
        let kept = vec![
            k(10, Some(0.7)),
            k(20, Some(0.9)),
            k(30, Some(0.8)),
            k(40, Some(0.6)),
            k(45, None),
        ];
        let (keep, drop) = retain(&kept, 2, true);
        assert_eq!(
            keep.iter().map(|k| k.step).collect::<Vec<_>>(),
            [20, 30, 45]
        );
        assert_eq!(drop, [dir_name(10), dir_name(40)]);
        let (keep, _) = retain(&kept, 1, false);
        assert_eq!(keep.iter().map(|k| k.step).collect::<Vec<_>>(), [40, 45]);
        let (keep, drop) = retain(&kept[..1], 1, true);
        assert_eq!((keep.len(), drop.len()), (1, 0));
    }
}
