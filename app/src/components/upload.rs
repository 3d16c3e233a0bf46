//! A file sent from a form with its progress drawn: the bytes going out (an `XMLHttpRequest`, whose
//! upload events a `fetch` does not give), then the server's work on them. The upload forms (datasets,
//! pretrained models, image archives) share it.

use leptos::prelude::*;

use super::http::{self, Picked, Request, Response};
use crate::i18n::*;
use crate::pages::workspace::environments::parts::bytes_text;
use contracts::error::AppError;

/// Where an upload stands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Phase {
    Idle,
    /// Bytes sent and total.
    Sending(u64, u64),
    /// All sent; the server works on it.
    Processing,
}

/// One form's upload: its phase, and the request while it runs.
#[derive(Clone, Copy)]
pub struct Upload {
    pub phase: RwSignal<Phase>,
    request: http::Slot<Request>,
}

impl Upload {
    pub fn new() -> Self {
        Upload {
            phase: RwSignal::new(Phase::Idle),
            request: http::slot(),
        }
    }

    /// Whether one is under way (the form's submit button waits).
    pub fn busy(self) -> Signal<bool> {
        let phase = self.phase;
        Signal::derive(move || phase.get() != Phase::Idle)
    }

    /// The file chosen in `input`, to send now: `None` while an upload of this form is under way, or
    /// when no file is chosen, which `error` then says in `missing`'s words (a pick clears it).
    pub fn pick(
        self,
        input: NodeRef<leptos::html::Input>,
        missing: &str,
        error: RwSignal<Option<AppError>>,
    ) -> Option<Picked> {
        if self.busy().get_untracked() {
            return None;
        }
        let picked = http::file_to_send(input, missing);
        error.set(picked.as_ref().err().cloned());
        picked.ok()
    }

    /// Sends `picked` to `url`; `on_done` gets the answer. One that cannot start is `error`'s.
    pub fn send(
        self,
        url: &str,
        picked: &Picked,
        error: RwSignal<Option<AppError>>,
        on_done: impl FnOnce(Response) + 'static,
    ) {
        let phase = self.phase;
        phase.set(Phase::Sending(0, picked.size));
        let started = http::upload(
            url,
            picked,
            move |sent, total| {
                phase.set(if total > 0 && sent >= total {
                    Phase::Processing
                } else {
                    Phase::Sending(sent, total)
                })
            },
            move |answer| {
                phase.set(Phase::Idle);
                on_done(answer);
            },
        );
        if let Err(err) = http::keep_upload(self.request, started) {
            phase.set(Phase::Idle);
            error.set(Some(err));
        }
    }
}

impl Default for Upload {
    fn default() -> Self {
        Self::new()
    }
}

/// A progress bar while bytes go out, then an indeterminate one with `processing` (what the server
/// does with them) until it answers. `testid` is the bar's.
#[component]
pub fn UploadProgress(
    upload: Upload,
    #[prop(into)] processing: ViewFn,
    testid: &'static str,
) -> impl IntoView {
    let i18n = use_i18n();
    move || {
        match upload.phase.get() {
        Phase::Idle => None,
        Phase::Sending(sent, total) => Some(
            view! {
                <div class="upload-progress" role="status">
                    <progress data-testid=testid max=total.max(1).to_string() value=sent.to_string()></progress>
                    <span>{move || t_string!(i18n, common.uploading, sent = bytes_text(sent), total = bytes_text(total)).to_string()}</span>
                </div>
            }
            .into_any(),
        ),
        Phase::Processing => {
            let processing = processing.clone();
            Some(
                view! {
                    <div class="upload-progress" role="status">
                        <progress data-testid=testid></progress>
                        <span>{processing.run()}</span>
                    </div>
                }
                .into_any(),
            )
        }
    }
    }
}
