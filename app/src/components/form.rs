//! Form pieces. A server error that names a field (`AppError::field()`), or each broken rule of an
//! `Invalid` error (`AppError::problems`), is shown under its field in the reader's language
//! ([`field_text`]) and marks the control `aria-invalid`; what names no field of the form is shown at
//! the top (or, for the long spec forms, the whole error is summed up above the submit button), so
//! nothing the server says is ever dropped.
//!
//! Two kinds of form use them. Short forms (sign-in, a name) submit with `ActionForm` and read the
//! browser's own inputs: [`Field`]. Spec forms (environment, job, upload) keep what is typed in a
//! [`FormState`] and build the request from it on submit: [`TextField`], [`SelectField`],
//! [`CheckField`] and [`FormSummary`]. Every field is one [`FieldRow`]: a label, the control, a hint
//! (`{id}-hint`) and the error line (`{id}-error`), which the control's `aria-describedby` names.

use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos::wasm_bindgen::JsCast;

use crate::i18n::*;
use contracts::error::AppError;

/// The error of an action's latest run, if it failed.
pub fn action_error<S>(action: ServerAction<S>) -> Signal<Option<AppError>>
where
    S: ServerFn<Error = AppError> + Send + Sync + Clone + 'static,
    S::Output: Send + Sync + Clone + 'static,
{
    Signal::derive(move || action.value().get().and_then(Result::err))
}

/// Once `action` answers: `done` with what it returned, or its error in `error`, which a success
/// clears (several buttons may share one error line: whichever ran last speaks).
pub fn on_answer<S>(
    action: ServerAction<S>,
    error: RwSignal<Option<AppError>>,
    done: impl Fn(S::Output) + 'static,
) where
    S: ServerFn<Error = AppError> + Send + Sync + Clone + 'static,
    S::Output: Send + Sync + Clone + 'static,
{
    Effect::new(move |_| match action.value().get() {
        Some(Ok(answer)) => {
            error.set(None);
            done(answer);
        }
        Some(Err(err)) => error.set(Some(err)),
        None => {}
    });
}

/// The `node_ref` of a short form that empties itself once `action` succeeds, so that the next one
/// (another member, another token) starts blank while a refused one keeps what was typed.
pub fn cleared_on_success<S>(action: ServerAction<S>) -> NodeRef<leptos::html::Form>
where
    S: ServerFn<Error = AppError> + Send + Sync + Clone + 'static,
    S::Output: Send + Sync + Clone + 'static,
{
    let form = NodeRef::<leptos::html::Form>::new();
    Effect::new(move |_| {
        if let (Some(Ok(_)), Some(form)) = (action.value().get(), form.get_untracked()) {
            form.reset();
        }
    });
    form
}

/// The ids a control's `aria-describedby` names: its hint (when it has one) and its error line.
pub fn described_by(id: &str, hint: bool) -> String {
    if hint {
        format!("{id}-hint {id}-error")
    } else {
        format!("{id}-error")
    }
}

/// One labelled control with its hint and its error line: the layout every field of every form has.
#[component]
pub fn FieldRow(
    /// The control's element id, unique on the page; the hint and error line are `{id}-hint` and
    /// `{id}-error`.
    id: &'static str,
    #[prop(into)] label: ViewFn,
    #[prop(optional_no_strip)] hint: Option<ViewFn>,
    /// What is wrong with this field, in the reader's language.
    #[prop(into)]
    message: Signal<Option<String>>,
    /// Hides the row (a choice that only matters for another choice).
    #[prop(optional, into)]
    hidden: Signal<bool>,
    children: Children,
) -> impl IntoView {
    view! {
        <div class="field" class:field-invalid=move || message.with(Option::is_some) hidden=move || hidden.get()>
            <label for=id>{label.run()}</label>
            {children()}
            {hint.map(|h| view! { <p class="hint" id=format!("{id}-hint")>{h.run()}</p> })}
            <p class="field-error" id=format!("{id}-error") data-testid=format!("{id}-error")>
                {move || message.get()}
            </p>
        </div>
    }
    .into_any()
}

/// A labelled input of a short form, read by the browser on submit (the input is not controlled).
#[component]
pub fn Field(
    /// The input's `name`, which is also the server function argument and the `field` an error names.
    name: &'static str,
    /// The element id (labels and `aria-describedby` point at it); unique on the page.
    id: &'static str,
    #[prop(into)] label: ViewFn,
    #[prop(optional_no_strip, into)] hint: Option<ViewFn>,
    #[prop(default = "text")] input_type: &'static str,
    #[prop(optional)] autocomplete: Option<&'static str>,
    #[prop(optional)] required: bool,
    #[prop(optional_no_strip, into)] maxlength: Option<u32>,
    /// Initial value (the browser keeps what the user types).
    #[prop(optional, into)]
    value: Option<String>,
    /// The form's current error; only what it says about `name` (or `also`) is shown here.
    error: Signal<Option<AppError>>,
    /// Other `field` names the server may use for this input (e.g. `user_id` for a username box).
    #[prop(optional)]
    also: &'static [&'static str],
) -> impl IntoView {
    let i18n = use_i18n();
    let message = Memo::new(move |_| {
        error.with(|e| {
            let e = e.as_ref()?;
            let locale = i18n.get_locale();
            std::iter::once(name)
                .chain(also.iter().copied())
                .find_map(|field| field_text(locale, e, field))
        })
    });
    let described = described_by(id, hint.is_some());
    view! {
        <FieldRow id label hint=hint message>
            <input
                id=id
                name=name
                type=input_type
                autocomplete=autocomplete
                required=required
                maxlength=maxlength.map(|n| n.to_string())
                value=value
                aria-invalid=move || message.with(Option::is_some).then_some("true")
                aria-describedby=described
                data-testid=id
            />
        </FieldRow>
    }
}

/// A spec form's state: its text as typed (the inputs copy every change here) and the latest error,
/// from the browser's own checks or from the server.
pub struct FormState<V: Send + Sync + 'static> {
    pub values: RwSignal<V>,
    pub error: RwSignal<Option<AppError>>,
}

impl<V: Send + Sync + 'static> Clone for FormState<V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<V: Send + Sync + 'static> Copy for FormState<V> {}

impl<V: Send + Sync + 'static> FormState<V> {
    pub fn new(values: V) -> Self {
        FormState {
            values: RwSignal::new(values),
            error: RwSignal::new(None),
        }
    }

    /// What shows under `field`, in the reader's language.
    pub fn message(self, field: &'static str) -> Signal<Option<String>> {
        message_at(self.error, field)
    }

    /// Once `action` answers: the page `to` names for its result, or its error under the fields.
    pub fn follow<S>(self, action: ServerAction<S>, to: impl Fn(&S::Output) -> String + 'static)
    where
        S: ServerFn<Error = AppError> + Send + Sync + Clone + 'static,
        S::Output: Send + Sync + Clone + 'static,
    {
        let navigate = leptos_router::hooks::use_navigate();
        Effect::new(move |_| match action.value().get() {
            Some(Ok(answer)) => navigate(&to(&answer), Default::default()),
            Some(Err(err)) => self.error.set(Some(err)),
            None => {}
        });
    }

    /// An `input`/`change` handler that stores the control's text with `set`.
    pub fn on_text(self, set: fn(&mut V, String)) -> impl Fn(leptos::ev::Event) + Clone {
        move |ev| {
            let text = event_target_value(&ev);
            self.values.update(|v| set(v, text));
        }
    }
}

/// What shows under `field` of a form whose latest error is `error`, in the reader's language.
pub fn message_at(
    error: RwSignal<Option<AppError>>,
    field: &'static str,
) -> Signal<Option<String>> {
    let i18n = use_i18n();
    Signal::derive(move || {
        error.with(|e| {
            e.as_ref()
                .and_then(|e| field_text(i18n.get_locale(), e, field))
        })
    })
}

/// `aria-invalid` while `message` says something.
fn invalid(message: Signal<Option<String>>) -> impl Fn() -> Option<&'static str> + Clone {
    move || message.with(Option::is_some).then_some("true")
}

/// A text input (or, with `rows`, a text area) of a spec form.
#[component]
pub fn TextField<V: Send + Sync + 'static>(
    form: FormState<V>,
    /// The element id and `data-testid`.
    id: &'static str,
    /// The field the server names in its problems.
    field: &'static str,
    #[prop(into)] label: ViewFn,
    #[prop(optional, into)] hint: Option<ViewFn>,
    /// The text it starts with.
    value: String,
    set: fn(&mut V, String),
    #[prop(optional)] inputmode: Option<&'static str>,
    #[prop(optional)] maxlength: Option<u32>,
    #[prop(optional)] required: bool,
    /// A text area of this many rows instead of one line.
    #[prop(optional)]
    rows: Option<u32>,
    /// For a form that focuses its first input when it opens.
    #[prop(optional)]
    node_ref: NodeRef<leptos::html::Input>,
) -> impl IntoView {
    let message = form.message(field);
    let described = described_by(id, hint.is_some());
    let control = match rows {
        None => view! {
            <input
                id=id
                data-testid=id
                node_ref=node_ref
                inputmode=inputmode
                autocomplete="off"
                maxlength=maxlength.map(|n| n.to_string())
                required=required
                value=value
                aria-invalid=invalid(message)
                aria-describedby=described
                on:input=form.on_text(set)
            />
        }
        .into_any(),
        Some(rows) => view! {
            <textarea
                id=id
                data-testid=id
                rows=rows.to_string()
                autocomplete="off"
                spellcheck="false"
                aria-invalid=invalid(message)
                aria-describedby=described
                on:input=form.on_text(set)
            >
                {value}
            </textarea>
        }
        .into_any(),
    };
    view! { <FieldRow id label hint=hint message>{control}</FieldRow> }
}

/// A `<select>` of a spec form; the options are its children.
#[component]
pub fn SelectField<V: Send + Sync + 'static>(
    form: FormState<V>,
    id: &'static str,
    field: &'static str,
    #[prop(into)] label: ViewFn,
    #[prop(optional, into)] hint: Option<ViewFn>,
    set: fn(&mut V, String),
    /// Hides the field (a choice that only matters for another choice).
    #[prop(optional, into)]
    hidden: Signal<bool>,
    children: Children,
) -> impl IntoView {
    let message = form.message(field);
    let described = described_by(id, hint.is_some());
    view! {
        <FieldRow id label hint=hint message hidden>
            <select id=id data-testid=id aria-invalid=invalid(message) aria-describedby=described on:change=form.on_text(set)>
                {children()}
            </select>
        </FieldRow>
    }
}

/// A checkbox of a spec form, its label after it.
#[component]
pub fn CheckField<V: Send + Sync + 'static>(
    form: FormState<V>,
    id: &'static str,
    #[prop(into)] label: ViewFn,
    #[prop(optional, into)] hint: Option<ViewFn>,
    checked: bool,
    set: fn(&mut V, bool),
    #[prop(optional, into)] hidden: Signal<bool>,
) -> impl IntoView {
    let described = hint.is_some().then(|| format!("{id}-hint"));
    view! {
        <div class="field field-check" hidden=move || hidden.get()>
            <input
                type="checkbox"
                id=id
                data-testid=id
                checked=checked
                aria-describedby=described
                on:change=move |ev| {
                    let on = event_target_checked(&ev);
                    form.values.update(|v| set(v, on));
                }
            />
            <label for=id>{label.run()}</label>
            {hint.map(|h| view! { <p class="hint" id=format!("{id}-hint")>{h.run()}</p> })}
        </div>
    }
}

/// A spec form's whole error above its buttons: `heading`, then every problem (or the one message),
/// so a reader who does not scroll past each field still learns what to fix.
#[component]
pub fn FormSummary<V: Send + Sync + 'static>(
    form: FormState<V>,
    #[prop(into)] heading: ViewFn,
) -> impl IntoView {
    let i18n = use_i18n();
    let slot = NodeRef::<leptos::html::Div>::new();
    // A refused form takes the reader to what to fix: the first field marked invalid gets the focus
    // (which scrolls it into view), or this summary when no field is.
    Effect::new(move |_| {
        if form.error.with(Option::is_none) {
            return;
        }
        request_animation_frame(move || {
            let Some(slot) = slot.get_untracked() else {
                return;
            };
            let form = slot.closest("form").ok().flatten();
            let field = form.and_then(|f| f.query_selector("[aria-invalid='true']").ok().flatten());
            match field.and_then(|f| f.dyn_into::<leptos::web_sys::HtmlElement>().ok()) {
                Some(field) => {
                    let _ = field.focus();
                }
                None => slot.scroll_into_view(),
            }
        });
    });
    view! {
        <div aria-live="assertive" class="form-error-slot" node_ref=slot>
            {move || form.error.get().map(|err| {
                let code = err.code().to_string();
                let heading = heading.clone();
                view! {
                    <div class="notice notice-error" role="alert" data-testid="form-error" data-code=code>
                        <p><strong>{heading.run()}</strong></p>
                        <p class="form-error-detail">{move || error_text(i18n.get_locale(), &err)}</p>
                    </div>
                }
            })}
        </div>
    }
}

/// Errors that belong to no field of this form (wrong password, forbidden, network down, ...).
#[component]
pub fn FormError(
    error: Signal<Option<AppError>>,
    /// The field names this form shows errors for itself.
    fields: &'static [&'static str],
) -> impl IntoView {
    let i18n = use_i18n();
    let general = Memo::new(move |_| {
        error
            .get()
            .filter(|e| e.field().is_none_or(|f| !fields.contains(&f)))
    });
    view! {
        <div aria-live="assertive" class="form-error-slot">
            {move || {
                general
                    .get()
                    .map(|e| {
                        let code = e.code().to_string();
                        view! {
                            <p class="notice notice-error" role="alert" data-testid="form-error" data-code=code>
                                {move || error_text(i18n.get_locale(), &e)}
                            </p>
                        }
                    })
            }}
        </div>
    }
}

/// A submit button that is disabled (and says so) while the action runs, so a double click does
/// not send the form twice.
#[component]
pub fn SubmitButton(
    #[prop(into)] pending: Signal<bool>,
    testid: &'static str,
    #[prop(optional)] danger: bool,
    /// Off until the form can be sent (a confirmation typed): it then does not look like it could be.
    #[prop(optional, into)]
    blocked: Option<Signal<bool>>,
    children: Children,
) -> impl IntoView {
    view! {
        <button
            type="submit"
            class="button"
            class:button-primary=!danger
            class:button-danger=danger
            disabled=move || pending.get() || blocked.is_some_and(|b| b.get())
            aria-busy=move || pending.get().then_some("true")
            data-testid=testid
        >
            {children()}
        </button>
    }
}
