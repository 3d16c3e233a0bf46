//! The job's log: live lines as the stream brings them (and, once the job ended, what it left) (kept to the newest [`KEPT_LINES`], following the
//! bottom like a terminal), and a search box that asks the server for every line containing the text
//! (`GET …/jobs/{job}/logs?contains=`), so a search covers the whole log, not just what this page holds.

use contracts::ids::{JobId, WorkspaceId};
use leptos::prelude::*;

use crate::components::http::{self, Request};
use crate::components::notice::ErrorNotice;
use crate::i18n::*;
use contracts::error::AppError;
use contracts::types::{LogLine, LogNote};

/// How many live lines the page keeps; older ones stay reachable through the search.
pub const KEPT_LINES: usize = 5000;

pub fn search_url(workspace_id: WorkspaceId, job_id: JobId, contains: &str) -> String {
    format!(
        "/api/v1/workspaces/{workspace_id}/jobs/{job_id}/logs?{}",
        http::query(&[("contains", contains)])
    )
}

#[component]
pub fn JobLog(
    workspace_id: WorkspaceId,
    job_id: JobId,
    #[prop(into)] lines: Signal<Vec<LogLine>>,
    /// The job has ended: nothing more will come, and the log no longer says "live".
    #[prop(into)]
    over: Signal<bool>,
) -> impl IntoView {
    let i18n = use_i18n();
    let query = RwSignal::new(String::new());
    // The search's answer (the text searched and its lines); `None` shows the live log.
    let found = RwSignal::new(None::<(String, Vec<LogLine>)>);
    let error = RwSignal::new(None::<AppError>);
    let searching = RwSignal::new(false);
    let request: http::Slot<Request> = http::slot();
    let pre = NodeRef::<leptos::html::Pre>::new();

    // Follow the newest line while showing the live log.
    Effect::new(move |_| {
        lines.track();
        if found.with(Option::is_none) {
            if let Some(pre) = pre.get() {
                pre.set_scroll_top(pre.scroll_height());
            }
        }
    });

    let search = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let text = query.get_untracked().trim().to_string();
        error.set(None);
        if text.is_empty() {
            found.set(None);
            return;
        }
        searching.set(true);
        let wanted = text.clone();
        let started = http::get(&search_url(workspace_id, job_id, &text), move |answer| {
            searching.set(false);
            if !answer.ok() {
                error.set(Some(answer.error()));
                return;
            }
            match serde_json::from_str::<Vec<LogLine>>(&answer.body) {
                Ok(lines) => found.set(Some((wanted, lines))),
                Err(e) => error.set(Some(AppError::transport(e.to_string()))),
            }
        });
        match started {
            Some(r) => request.set_value(Some(r)),
            None => searching.set(false),
        }
    };

    view! {
        <section class="card" aria-labelledby="job-log-title" data-testid="job-log-card">
            <div class="card-heading">
                <h2 id="job-log-title">{t!(i18n, job_detail.log_title)}</h2>
                <form class="log-search" role="search" on:submit=search data-testid="log-search-form">
                    <label class="visually-hidden" for="log-search">{t!(i18n, job_detail.log_search)}</label>
                    <input type="search" id="log-search" data-testid="log-search" autocomplete="off"
                        placeholder=move || t_string!(i18n, job_detail.log_search_placeholder)
                        prop:value=move || query.get()
                        on:input=move |ev| {
                            let v = event_target_value(&ev);
                            if v.is_empty() { found.set(None); }
                            query.set(v);
                        } />
                    <button type="submit" class="button button-small" data-testid="log-search-submit" disabled=move || searching.get()>
                        {t!(i18n, job_detail.log_search_button)}
                    </button>
                </form>
            </div>
            <p class="hint" role="status" data-testid="log-state">
                {move || match found.get() {
                    Some((text, lines)) => t_string!(i18n, job_detail.log_found, n = lines.len(), text = text).to_string(),
                    None if over.get() => t_string!(i18n, job_detail.log_ended, n = lines.with(Vec::len)).to_string(),
                    None => t_string!(i18n, job_detail.log_live, n = lines.with(Vec::len)).to_string(),
                }}
            </p>
            {move || error.get().map(|err| view! { <ErrorNotice err /> })}
            // One element per log entry (an entry may span lines: the trainer's error lists its problems).
            <pre class="log" node_ref=pre data-testid="job-log" tabindex="0" aria-labelledby="job-log-title">
                <For
                    each=move || match found.get() {
                        Some((_, lines)) => lines,
                        None => lines.get(),
                    }
                    key=|l| l.id
                    let:entry
                >
                    <LogEntry entry />
                </For>
            </pre>
        </section>
    }
    .into_any()
}

/// One entry: the trainer's line as it was written, or Paddock's note in the reader's language.
#[component]
fn LogEntry(entry: LogLine) -> impl IntoView {
    let i18n = use_i18n();
    let LogLine { id, line, note, .. } = entry;
    let noted = note.is_some();
    let text = move || match &note {
        Some(note) => note_text(i18n.get_locale(), note),
        None => line.clone(),
    };
    view! { <span class="log-line" data-id=id data-note=noted>{text}"\n"</span> }
}

/// Paddock's note in the reader's language; what came from elsewhere (the trainer's message, the
/// cluster's account) stays as it was said.
pub fn note_text(locale: Locale, note: &LogNote) -> String {
    match note {
        LogNote::TimeLimit { minutes } => {
            td_string!(locale, job_detail.note_time_limit, minutes = minutes).to_string()
        }
        LogNote::Killed { grace_secs } => {
            td_string!(locale, job_detail.note_killed, secs = grace_secs).to_string()
        }
        LogNote::NotAnEvent { why, line } => {
            td_string!(locale, job_detail.note_not_an_event, why = why, line = line).to_string()
        }
        LogNote::LinesBeyond => td_string!(locale, job_detail.note_lines_beyond).to_string(),
        LogNote::TrainLogFull { max_bytes } => {
            td_string!(locale, job_detail.note_train_log_full, bytes = max_bytes).to_string()
        }
        LogNote::FilesRefused { reason } => {
            td_string!(locale, job_detail.note_files_refused, reason = reason).to_string()
        }
        LogNote::CheckpointNotRecorded { step, why } => td_string!(
            locale,
            job_detail.note_checkpoint_not_recorded,
            step = step,
            why = why
        )
        .to_string(),
        LogNote::TrainerError { message } => {
            td_string!(locale, job_detail.note_trainer_error, message = message).to_string()
        }
        LogNote::StoppedByCluster => {
            td_string!(locale, job_detail.note_stopped_by_cluster).to_string()
        }
        LogNote::Ended { code, how } => match (code, how) {
            (Some(code), None) => {
                td_string!(locale, job_detail.note_exited, code = code).to_string()
            }
            (Some(code), Some(how)) => td_string!(
                locale,
                job_detail.note_ended_how_code,
                how = how,
                code = code
            )
            .to_string(),
            (None, Some(how)) => {
                td_string!(locale, job_detail.note_ended_how, how = how).to_string()
            }
            (None, None) => td_string!(locale, job_detail.note_disappeared).to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_search_url_encodes_the_text() {
        assert_eq!(
            search_url(WorkspaceId::new(1), JobId::new(2), "step 3"),
            "/api/v1/workspaces/1/jobs/2/logs?contains=step%203"
        );
    }

    /// The English locale says what the stored line says, so a page in English reads as the API does;
    /// the Chinese one frames the same values.
    #[test]
    fn every_note_reads_as_its_stored_line_in_english_and_in_chinese_in_chinese() {
        let notes = [
            LogNote::TimeLimit { minutes: 30 },
            LogNote::Killed { grace_secs: 20 },
            LogNote::NotAnEvent {
                why: "missing field `ts`".into(),
                line: "{}".into(),
            },
            LogNote::LinesBeyond,
            LogNote::TrainLogFull { max_bytes: 1500 },
            LogNote::FilesRefused {
                reason: "events.jsonl is a link".into(),
            },
            LogNote::CheckpointNotRecorded {
                step: 6,
                why: "it was not copied".into(),
            },
            LogNote::TrainerError {
                message: "CUDA out of memory".into(),
            },
            LogNote::StoppedByCluster,
            LogNote::Ended {
                code: Some(1),
                how: None,
            },
            LogNote::Ended {
                code: Some(137),
                how: Some("NODE_FAIL".into()),
            },
            LogNote::Ended {
                code: None,
                how: Some("NODE_FAIL".into()),
            },
            LogNote::Ended {
                code: None,
                how: None,
            },
        ];
        for note in &notes {
            assert_eq!(note_text(Locale::en, note), note.english());
            let zh = note_text(Locale::zh, note);
            assert!(zh.starts_with("[paddock] "), "{zh}");
            assert!(
                zh.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)),
                "not in Chinese: {zh}"
            );
        }
        assert_eq!(
            note_text(Locale::zh, &notes[1]),
            "[paddock] 要求停止后 20 秒内运行仍未结束；强制终止"
        );
    }
}
