//! Reading again on a timer, for what the server does not stream: lists whose rows are still moving
//! (a build, a queued job, a starting endpoint) and pages that follow one thing. Timers run in the
//! browser only (effects never run on the server) and stop when their component goes away.

use std::time::Duration;

use leptos::prelude::*;
use serde::{de::DeserializeOwned, Serialize};

use contracts::error::AppError;

/// Calls `tick` every `period` while the calling component lives.
pub fn every(period: Duration, tick: impl Fn() + Clone + 'static) {
    Effect::new(move |_| {
        let handle = set_interval_with_handle(tick.clone(), period).ok();
        on_cleanup(move || {
            if let Some(handle) = handle {
                handle.clear();
            }
        });
    });
}

/// Reads `list` again every `period` while one of its rows is `moving` (the table stays in place
/// meanwhile, so the rows' badges follow the server's state).
pub fn refetch_while<T>(
    list: Resource<Result<Vec<T>, AppError>>,
    period: Duration,
    moving: fn(&T) -> bool,
) where
    T: Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
{
    every(period, move || {
        let any = list
            .get_untracked()
            .is_some_and(|l| l.is_ok_and(|l| l.iter().any(moving)));
        if any {
            list.refetch();
        }
    });
}
