//! Changing an endpoint (editors and owners): scale it to another number of replicas, or roll out
//! another checkpoint of the workspace. On a ready endpoint the server does either in the background
//! without failing a request — new replicas pass the parity gate before traffic moves, old ones drain —
//! and says what is under way in the status message, which the page's polling shows. A stopped or failed
//! endpoint keeps the change for its next deployment; one that is starting must finish first.

use contracts::ids::{CheckpointId, JobId};
use leptos::prelude::*;

use crate::api::endpoints::ChangeEndpoint;
use crate::components::form::on_answer;
use crate::components::notice::ErrorNotice;
use crate::i18n::*;
use contracts::error::{AppError, ErrorCode};
use contracts::types::{CheckpointInfo, EndpointChange, EndpointDetail, EndpointStatus};

/// A checkpoint that can be rolled out: its id, its job's name and its step.
pub type Choice = (CheckpointId, String, i64);

/// The checkpoints that can be rolled out (their files are still on disk), newest first.
pub fn rollout_choices(
    checkpoints: &[CheckpointInfo],
    job_name: impl Fn(JobId) -> String,
) -> Vec<Choice> {
    let mut live: Vec<&CheckpointInfo> = checkpoints
        .iter()
        .filter(|c| c.deleted_at.is_none())
        .collect();
    live.sort_by_key(|c| std::cmp::Reverse(c.id));
    live.into_iter()
        .map(|c| (c.id, job_name(c.job_id), c.step))
        .collect()
}

#[component]
pub fn ManageCard(live: RwSignal<EndpointDetail>, choices: Vec<Choice>) -> impl IntoView {
    let i18n = use_i18n();
    let (workspace_id, endpoint_id) =
        live.with_untracked(|d| (d.summary.workspace_id, d.summary.id));
    let status = Memo::new(move |_| live.with(|d| d.summary.status));
    let starting = Memo::new(move |_| status.get() == EndpointStatus::Starting);
    let current = Memo::new(move |_| live.with(|d| d.summary.checkpoint_id));
    // An endpoint that sizes itself is scaled through its policy (the scaling card), not by hand.
    let autoscaled = Memo::new(move |_| live.with(|d| d.summary.autoscale.is_some()));
    let replicas = RwSignal::new(live.with_untracked(|d| d.summary.replicas.to_string()));
    let checkpoint = RwSignal::new(live.with_untracked(|d| d.summary.checkpoint_id.to_string()));
    let change = ServerAction::<ChangeEndpoint>::new();
    let error = RwSignal::new(None::<AppError>);
    on_answer(change, error, move |detail| live.set(detail));
    let send = move |c: EndpointChange| {
        change.dispatch(ChangeEndpoint {
            workspace_id,
            endpoint_id,
            change: c,
        });
    };
    let scale = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        match replicas.get_untracked().trim().parse::<u32>() {
            Ok(n) => send(EndpointChange {
                replicas: Some(n),
                checkpoint_id: None,
            }),
            Err(_) => error.set(Some(AppError::invalid(
                "replicas",
                ErrorCode::EndpointSpecInvalid,
                td_string!(i18n.get_locale_untracked(), endpoints.err_number),
            ))),
        }
    };
    let roll_out = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        if let Ok(id) = checkpoint.get_untracked().parse::<CheckpointId>() {
            send(EndpointChange {
                replicas: None,
                checkpoint_id: Some(id),
            });
        }
    };
    let busy = change.pending();
    let choices = StoredValue::new(choices);
    view! {
        <section class="card" aria-labelledby="endpoint-manage-title" data-testid="endpoint-manage">
            <h2 id="endpoint-manage-title">{t!(i18n, endpoint_detail.manage_title)}</h2>
            {move || match status.get() {
                EndpointStatus::Ready => None,
                EndpointStatus::Starting => Some(view! { <p class="hint" data-testid="manage-note">{t!(i18n, endpoint_detail.manage_starting)}</p> }.into_any()),
                _ => Some(view! { <p class="hint" data-testid="manage-note">{t!(i18n, endpoint_detail.manage_next_deploy)}</p> }.into_any()),
            }}
            <div class="manage-grid">
                <form class="form" data-testid="scale-form" on:submit=scale novalidate hidden=move || autoscaled.get()>
                    <div class="field">
                        <label for="scale-replicas">{t!(i18n, endpoint_detail.scale_label)}</label>
                        <div class="inline-control">
                            <input id="scale-replicas" data-testid="scale-replicas" type="number" min="1" max="8" inputmode="numeric"
                                aria-describedby="scale-hint" prop:value=move || replicas.get()
                                on:input=move |ev| replicas.set(event_target_value(&ev)) />
                            <button type="submit" class="button" data-testid="scale-submit" disabled=move || busy.get() || starting.get()>
                                {t!(i18n, endpoint_detail.scale_button)}
                            </button>
                        </div>
                        <p class="hint" id="scale-hint">{t!(i18n, endpoint_detail.scale_hint)}</p>
                    </div>
                </form>
                <form class="form" data-testid="rollout-form" on:submit=roll_out novalidate>
                    <div class="field">
                        <label for="rollout-checkpoint">{t!(i18n, endpoint_detail.rollout_label)}</label>
                        <div class="inline-control">
                            <select id="rollout-checkpoint" data-testid="rollout-checkpoint" aria-describedby="rollout-hint"
                                on:change=move |ev| checkpoint.set(event_target_value(&ev))>
                                {move || choices.get_value().into_iter().map(|(id, job, step)| {
                                    let is_current = current.get() == id;
                                    // `#12 · tiny-snownlp · step 30 (current)`.
                                    let text = move || {
                                        let step = t_string!(i18n, endpoints.checkpoint_step, step = step).to_string();
                                        let mark = is_current.then(|| format!(" ({})", t_string!(i18n, endpoint_detail.current)));
                                        format!("#{id} · {job} · {step}{}", mark.unwrap_or_default())
                                    };
                                    view! {
                                        <option value=id.to_string() selected=move || checkpoint.get() == id.to_string()>{text}</option>
                                    }
                                }).collect_view()}
                            </select>
                            <button type="submit" class="button" data-testid="rollout-submit"
                                disabled=move || busy.get() || starting.get() || checkpoint.get() == current.get().to_string()>
                                {t!(i18n, endpoint_detail.rollout_button)}
                            </button>
                        </div>
                        <p class="hint" id="rollout-hint">{t!(i18n, endpoint_detail.rollout_hint)}</p>
                    </div>
                </form>
            </div>
            {move || error.get().map(|err| view! { <ErrorNotice err /> })}
        </section>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checkpoint(id: i64, job_id: i64, step: i64, deleted: bool) -> CheckpointInfo {
        CheckpointInfo {
            id: CheckpointId::new(id),
            job_id: JobId::new(job_id),
            step,
            epoch: None,
            metrics: None,
            container_path: String::new(),
            bytes: 0,
            sha256: String::new(),
            best: false,
            degenerate: None,
            created_at: String::new(),
            deleted_at: deleted.then(|| "2026-12-02T10:00:00Z".to_string()),
        }
    }

    #[test]
    fn only_checkpoints_on_disk_can_be_rolled_out_newest_first() {
        let list = vec![
            checkpoint(1, 5, 10, false),
            checkpoint(2, 5, 20, true),
            checkpoint(3, 6, 30, false),
        ];
        let choices = rollout_choices(&list, |job| {
            if job == JobId::new(5) {
                "a".into()
            } else {
                "b".into()
            }
        });
        assert_eq!(
            choices,
            vec![
                (CheckpointId::new(3), "b".to_string(), 30),
                (CheckpointId::new(1), "a".to_string(), 10)
            ]
        );
    }
}
