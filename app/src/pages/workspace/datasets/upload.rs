//! The upload form: a name, the file, and (folded away) the text and label column names and the file's
//! encoding (recognised by the server unless chosen: GBK and Big5 files are converted to UTF-8). The file goes
//! to `POST /api/v1/workspaces/{id}/datasets/upload` as the raw body through `XMLHttpRequest`, whose
//! upload progress drives the progress bar; the server then validates it with the trainer's validator.
//! A refused file keeps the server's words: `dataset_invalid` carries each problem with its line number,
//! and they are listed one per line under the file field. Nothing is created on refusal.

use contracts::ids::{DatasetId, WorkspaceId};
use leptos::prelude::*;

use crate::components::form::{described_by, message_at, FieldRow, SubmitButton};
use crate::components::http;
use crate::components::notice::ErrorNotice;
use crate::components::tasks::TaskSelect;
use crate::components::upload::{Upload, UploadProgress};
use crate::i18n::*;
use crate::pages::workspace::environments::parts::bytes_text;
use contracts::data::UploadEncoding;
use contracts::error::AppError;
use contracts::task::Task;
use contracts::types::DatasetDetail;

/// What an upload says about its file besides the bytes.
pub struct UploadMeta<'a> {
    pub name: &'a str,
    pub file_name: &'a str,
    pub task: Task,
    pub text: &'a str,
    /// The second text's column, sent for a task of pairs only.
    pub pair: &'a str,
    pub label: &'a str,
    pub label_names: &'a str,
    pub encoding: UploadEncoding,
}

/// Where the upload goes, with its metadata in the query string (label names only when given).
pub fn upload_url(workspace_id: WorkspaceId, m: &UploadMeta<'_>) -> String {
    let mut query = vec![
        ("name", m.name),
        ("filename", m.file_name),
        ("task", m.task.as_str()),
        ("text_column", m.text),
    ];
    if m.task.pairs() {
        query.push(("pair_column", m.pair));
    }
    query.push(("label_column", m.label));
    let (label_names, encoding) = (m.label_names, m.encoding);
    if !label_names.is_empty() {
        query.push(("label_names", label_names));
    }
    query.push(("encoding", encoding.as_str()));
    format!(
        "/api/v1/workspaces/{workspace_id}/datasets/upload?{}",
        http::query(&query)
    )
}

/// Bytes of a chosen file read in the browser to recognise its encoding before it is sent, as many as
/// the server looks at.
const HEAD_BYTES: u64 = 64 * 1024;
/// Rows of a file to be converted shown before it is sent.
const PREVIEW_LINES: usize = 5;

/// What a chosen file's first bytes say: its encoding and its first rows as they will be stored — a GBK
/// or Big5 file converted by the browser's own decoder, a UTF-8 one as it is (so that a wrong file or
/// a wrong column order is seen before it is sent, whatever its encoding). `None` when the head is not
/// text in any of them.
fn encoding_preview(head: &[u8]) -> Option<(UploadEncoding, Vec<String>)> {
    let (encoding, text) = match UploadEncoding::guess(head) {
        Some(legacy) => (legacy, http::decode(head, legacy.as_str())?),
        None => {
            let body = head.strip_prefix(&[0xEF, 0xBB, 0xBF]).unwrap_or(head);
            // The head may end inside a character: only whole ones are shown.
            let whole = match std::str::from_utf8(body) {
                Ok(text) => text,
                Err(e) if e.error_len().is_none() => {
                    std::str::from_utf8(&body[..e.valid_up_to()]).ok()?
                }
                Err(_) => return None,
            };
            (UploadEncoding::Utf8, whole.to_string())
        }
    };
    let lines = text.lines().take(PREVIEW_LINES).map(str::to_string);
    Some((encoding, lines.collect()))
}

/// `reviews.v2.tsv` → `reviews.v2`: the name a dataset gets when none is typed.
pub fn default_name(file_name: &str) -> String {
    match file_name.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem.to_string(),
        _ => file_name.to_string(),
    }
}

#[component]
pub fn UploadForm(
    workspace_id: WorkspaceId,
    #[prop(into)] on_done: Callback<DatasetId>,
) -> impl IntoView {
    let i18n = use_i18n();
    let name = RwSignal::new(String::new());
    let task = RwSignal::new(Task::Classification);
    let text_column = RwSignal::new("text".to_string());
    let pair_column = RwSignal::new("text_b".to_string());
    // Matching data names its texts `text_a` and `text_b` by convention: the defaults follow the task
    // unless the user typed a name of their own.
    Effect::new(move |_| {
        let pairs = task.get().pairs();
        text_column.update(|t| {
            if t == "text" || t == "text_a" {
                *t = if pairs { "text_a" } else { "text" }.into();
            }
        });
    });
    let label_column = RwSignal::new("label".to_string());
    let label_names = RwSignal::new(String::new());
    let encoding = RwSignal::new(UploadEncoding::Auto);
    let chosen = RwSignal::new(None::<(String, u64)>);
    let preview = RwSignal::new(None::<(UploadEncoding, Vec<String>)>);
    let picks = StoredValue::new(0u32);
    let upload = Upload::new();
    let error = RwSignal::new(None::<AppError>);
    let file_input = NodeRef::<leptos::html::Input>::new();

    let on_file = move |_| {
        let picked = http::chosen(file_input);
        preview.set(None);
        // Only the last file chosen may show its preview: reads finish in any order.
        let this_read = picks.get_value() + 1;
        picks.set_value(this_read);
        if let Some(p) = &picked {
            if name.get_untracked().trim().is_empty() {
                name.set(default_name(&p.name));
            }
            http::read_head(p, HEAD_BYTES, move |head| {
                if picks.get_value() == this_read {
                    preview.set(encoding_preview(&head));
                }
            });
        }
        chosen.set(picked.map(|p| (p.name, p.size)));
        error.set(None);
    };

    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let missing = td_string!(i18n.get_locale_untracked(), datasets.err_no_file);
        let Some(picked) = upload.pick(file_input, missing, error) else {
            return;
        };
        let url = upload_url(
            workspace_id,
            &UploadMeta {
                name: name.get_untracked().trim(),
                file_name: &picked.name,
                task: task.get_untracked(),
                text: text_column.get_untracked().trim(),
                pair: pair_column.get_untracked().trim(),
                label: label_column.get_untracked().trim(),
                label_names: label_names.get_untracked().trim(),
                encoding: encoding.get_untracked(),
            },
        );
        upload.send(&url, &picked, error, move |answer| {
            if answer.status == 201 {
                match serde_json::from_str::<DatasetDetail>(&answer.body) {
                    Ok(detail) => on_done.run(detail.summary.id),
                    Err(e) => error.set(Some(AppError::transport(e.to_string()))),
                }
            } else {
                error.set(Some(answer.error()));
            }
        });
    };

    // The fields of this form, and the server's names for them: the extension (`file_name`) is the
    // file's.
    const FIELDS: [&str; 9] = [
        "name",
        "file",
        "file_name",
        "task",
        "text_column",
        "pair_column",
        "label_column",
        "label_names",
        "encoding",
    ];
    let general = Signal::derive(move || {
        error.with(|e| {
            e.as_ref()
                .filter(|e| e.field().is_none_or(|f| !FIELDS.contains(&f)))
                .cloned()
        })
    });
    let busy = upload.busy();

    view! {
        <form class="form upload-form" data-testid="dataset-upload-form" on:submit=on_submit novalidate>
            <div class="form-grid">
                <BoundField id="dataset-name" field="name" label=move || t!(i18n, datasets.name)
                    hint=move || t!(i18n, datasets.name_hint) maxlength=64 value=name error />
                <TaskSelect id="dataset-task" field="task" task error hint=move || t!(i18n, datasets.task_hint) />
                <FileField file_input chosen error on_file />
                <BoundField id="dataset-label-names" field="label_names" label=move || t!(i18n, datasets.label_names)
                    hint=move || t!(i18n, datasets.label_names_hint) maxlength=1024 value=label_names error />
            </div>
            <EncodingPreview preview encoding />
            <details class="columns-choice">
                <summary>{t!(i18n, datasets.columns)}</summary>
                <div class="form-grid">
                    <BoundField id="dataset-text-column" field="text_column" label=move || t!(i18n, datasets.text_column)
                        value=text_column error />
                    {move || task.get().pairs().then(|| view! {
                        <BoundField id="dataset-pair-column" field="pair_column" label=move || t!(i18n, datasets.pair_column)
                            value=pair_column error />
                    })}
                    <BoundField id="dataset-label-column" field="label_column" label=move || t!(i18n, datasets.label_column)
                        value=label_column error />
                    <EncodingField encoding error />
                </div>
                <p class="hint">{t!(i18n, datasets.columns_hint)}</p>
            </details>
            <UploadProgress upload testid="upload-progress" processing=move || t!(i18n, datasets.validating) />
            <div aria-live="assertive" class="form-error-slot">
                {move || general.get().map(|err| view! { <ErrorNotice err /> })}
            </div>
            <div class="form-actions">
                <SubmitButton pending=busy testid="dataset-upload-submit">{t!(i18n, datasets.upload_button)}</SubmitButton>
            </div>
        </form>
    }
    .into_any()
}

/// Before a file is sent: what it is, that it is kept as it is (UTF-8) or will be converted (or, with
/// UTF-8 chosen, refused), and its first rows as they will be stored.
#[component]
fn EncodingPreview(
    preview: RwSignal<Option<(UploadEncoding, Vec<String>)>>,
    encoding: RwSignal<UploadEncoding>,
) -> impl IntoView {
    let i18n = use_i18n();
    move || {
        preview.get().map(|(found, lines)| {
            let name = match found {
                UploadEncoding::Big5 => "Big5",
                _ => "GBK / GB18030",
            };
            let says = move || match (found, encoding.get()) {
                (UploadEncoding::Utf8, _) => t_string!(i18n, datasets.preview_utf8).to_string(),
                (_, UploadEncoding::Utf8) => {
                    t_string!(i18n, datasets.preview_refused, encoding = name).to_string()
                }
                _ => t_string!(i18n, datasets.preview_converted, encoding = name).to_string(),
            };
            view! {
                <div class="notice notice-info encoding-preview" role="status" data-testid="encoding-preview" data-encoding=found.as_str()>
                    <p>{says}</p>
                    <pre translate="no">{lines.join("\n")}</pre>
                </div>
            }
        })
    }
}

/// A text input bound to `value`: the form writes it too (the name follows the chosen file).
#[component]
fn BoundField(
    id: &'static str,
    field: &'static str,
    #[prop(into)] label: ViewFn,
    #[prop(optional, into)] hint: Option<ViewFn>,
    #[prop(optional)] maxlength: Option<u32>,
    value: RwSignal<String>,
    error: RwSignal<Option<AppError>>,
) -> impl IntoView {
    let message = message_at(error, field);
    let described = described_by(id, hint.is_some());
    view! {
        <FieldRow id label hint=hint message>
            <input
                id=id
                data-testid=id
                autocomplete="off"
                maxlength=maxlength.map(|n| n.to_string())
                prop:value=move || value.get()
                aria-invalid=move || message.with(Option::is_some).then_some("true")
                aria-describedby=described
                on:input=move |ev| value.set(event_target_value(&ev))
            />
        </FieldRow>
    }
}

/// What the file's bytes are in. Left on "recognise", a GBK/GB18030 or Big5 file is converted to
/// UTF-8 on the server, and its page says so; the other choices are for a file the guess gets wrong.
#[component]
fn EncodingField(
    encoding: RwSignal<UploadEncoding>,
    error: RwSignal<Option<AppError>>,
) -> impl IntoView {
    let i18n = use_i18n();
    let message = message_at(error, "encoding");
    let label = move |e: UploadEncoding| match e {
        UploadEncoding::Auto => t_string!(i18n, datasets.encoding_auto).to_string(),
        UploadEncoding::Utf8 => "UTF-8".to_string(),
        UploadEncoding::Gb18030 => "GBK / GB18030".to_string(),
        UploadEncoding::Big5 => t_string!(i18n, datasets.encoding_big5).to_string(),
    };
    view! {
        <FieldRow id="dataset-encoding" label=move || t!(i18n, datasets.encoding) message>
            <select id="dataset-encoding" data-testid="dataset-encoding"
                aria-invalid=move || message.with(Option::is_some).then_some("true")
                on:change=move |ev| {
                    let v = event_target_value(&ev);
                    if let Some(e) = UploadEncoding::ALL.into_iter().find(|e| e.as_str() == v) {
                        encoding.set(e);
                    }
                }>
                {UploadEncoding::ALL.into_iter().map(|e| view! {
                    <option value=e.as_str() selected=move || encoding.get() == e>{move || label(e)}</option>
                }).collect_view()}
            </select>
        </FieldRow>
    }
}

/// The file input, the chosen file's name and size, and what the server found wrong with it: a
/// refused file's problems one per line, with their line numbers.
#[component]
fn FileField(
    file_input: NodeRef<leptos::html::Input>,
    chosen: RwSignal<Option<(String, u64)>>,
    error: RwSignal<Option<AppError>>,
    on_file: impl Fn(leptos::ev::Event) + 'static,
) -> impl IntoView {
    let i18n = use_i18n();
    let mine = Signal::derive(move || {
        error.with(|e| {
            e.as_ref()
                .filter(|e| e.field().is_some_and(|f| f == "file" || f == "file_name"))
                .cloned()
        })
    });
    view! {
        <div class="field" class:field-invalid=move || mine.with(Option::is_some)>
            <label for="dataset-file">{t!(i18n, datasets.file)}</label>
            <input
                type="file"
                id="dataset-file"
                data-testid="dataset-file"
                accept=".csv,.tsv,.txt,.jsonl,.ndjson,.conll,.bio"
                node_ref=file_input
                aria-invalid=move || mine.with(Option::is_some).then_some("true")
                aria-describedby="dataset-file-hint dataset-file-error"
                on:change=on_file
            />
            <p class="hint" id="dataset-file-hint">
                {move || match chosen.get() {
                    Some((file, size)) => format!("{file} · {}", bytes_text(size)),
                    None => t_string!(i18n, datasets.file_hint).to_string(),
                }}
            </p>
            <div class="field-error" id="dataset-file-error" data-testid="dataset-file-error">
                {move || mine.get().map(|err| {
                    if err.has_problems() {
                        let list: Vec<String> = err.problems_at("file").map(|p| problem_text(i18n.get_locale(), p)).collect();
                        view! {
                            <p>{t!(i18n, datasets.invalid_file)}</p>
                            <ul class="problems" data-testid="dataset-problems">
                                {list.into_iter().map(|p| view! { <li>{p}</li> }).collect_view()}
                            </ul>
                        }
                        .into_any()
                    } else {
                        view! { <p>{move || error_text(i18n.get_locale(), &err)}</p> }.into_any()
                    }
                })}
            </div>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file gets its preview before it is sent: UTF-8 as it is (with or without a BOM, cut inside
    /// a character at the end of the head), a legacy encoding as it will be converted.
    #[test]
    fn a_chosen_file_shows_its_first_rows_in_any_encoding() {
        let utf8 = "text,label\n很好,1\n".as_bytes();
        assert_eq!(
            encoding_preview(utf8),
            Some((
                UploadEncoding::Utf8,
                vec!["text,label".into(), "很好,1".into()]
            ))
        );
        let mut bom_cut = vec![0xEF, 0xBB, 0xBF];
        bom_cut.extend_from_slice(&"text\n很好".as_bytes()[..9]);
        assert_eq!(
            encoding_preview(&bom_cut),
            Some((UploadEncoding::Utf8, vec!["text".into(), "很".into()]))
        );
    }

    fn meta<'a>(
        name: &'a str,
        file_name: &'a str,
        label_names: &'a str,
        encoding: UploadEncoding,
    ) -> UploadMeta<'a> {
        UploadMeta {
            name,
            file_name,
            task: Task::Classification,
            text: "text",
            pair: "text_b",
            label: "label",
            label_names,
            encoding,
        }
    }

    #[test]
    fn the_upload_url_carries_the_metadata() {
        assert_eq!(
            upload_url(WorkspaceId::new(3), &meta("评论", "a b.tsv", "", UploadEncoding::Big5)),
            "/api/v1/workspaces/3/datasets/upload?name=%E8%AF%84%E8%AE%BA&filename=a%20b.tsv&task=classification&text_column=text&label_column=label&encoding=big5"
        );
        assert_eq!(
            upload_url(WorkspaceId::new(3), &meta("r", "r.tsv", "0=负面,1=正面", UploadEncoding::Auto)),
            "/api/v1/workspaces/3/datasets/upload?name=r&filename=r.tsv&task=classification&text_column=text&label_column=label&label_names=0%3D%E8%B4%9F%E9%9D%A2%2C1%3D%E6%AD%A3%E9%9D%A2&encoding=auto"
        );
        let pairs = UploadMeta {
            task: Task::Matching,
            text: "q1",
            ..meta("p", "p.tsv", "", UploadEncoding::Auto)
        };
        assert_eq!(
            upload_url(WorkspaceId::new(3), &pairs),
            "/api/v1/workspaces/3/datasets/upload?name=p&filename=p.tsv&task=matching&text_column=q1&pair_column=text_b&label_column=label&encoding=auto"
        );
    }

    #[test]
    fn names_default_to_the_file_stem() {
        assert_eq!(default_name("snownlp_train.tsv"), "snownlp_train");
        assert_eq!(default_name("a.b.csv"), "a.b");
        assert_eq!(default_name(".hidden"), ".hidden");
    }
}
