//! Form pieces. A server error that names a field (`AppError::field()`) is shown under that field
//! and marks it `aria-invalid`; any other error is shown once at the top of the form, so nothing the
//! server says is ever dropped.

use leptos::prelude::*;
use leptos::server_fn::ServerFn;

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

/// A labelled input with an optional hint and the place its error appears.
#[component]
pub fn Field(
    /// The input's `name`, which is also the server function argument and the `field` an error names.
    name: &'static str,
    /// The element id (labels and `aria-describedby` point at it); unique on the page.
    id: &'static str,
    #[prop(into)] label: ViewFn,
    #[prop(optional, into)] hint: Option<ViewFn>,
    #[prop(default = "text")] input_type: &'static str,
    #[prop(optional)] autocomplete: Option<&'static str>,
    #[prop(optional)] required: bool,
    #[prop(optional)] maxlength: Option<u32>,
    /// Initial value (the input is not controlled: the browser keeps what the user types).
    #[prop(optional, into)]
    value: Option<String>,
    /// The form's current error; only one naming `name` is shown here.
    error: Signal<Option<AppError>>,
    /// Other `field` names the server may use for this input (e.g. `user_id` for a username box).
    #[prop(optional)]
    also: &'static [&'static str],
) -> impl IntoView {
    let i18n = use_i18n();
    let mine = Memo::new(move |_| {
        error
            .get()
            .filter(|e| e.field().is_some_and(|f| f == name || also.contains(&f)))
    });
    let hint_id = format!("{id}-hint");
    let error_id = format!("{id}-error");
    let described_by = if hint.is_some() {
        format!("{hint_id} {error_id}")
    } else {
        error_id.clone()
    };
    view! {
        <div class="field" class:field-invalid=move || mine.with(Option::is_some)>
            <label for=id>{label.run()}</label>
            <input
                id=id
                name=name
                type=input_type
                autocomplete=autocomplete
                required=required
                maxlength=maxlength.map(|n| n.to_string())
                value=value
                aria-invalid=move || mine.with(Option::is_some).then_some("true")
                aria-describedby=described_by
                data-testid=id
            />
            {hint.map(|h| view! { <p class="hint" id=hint_id>{h.run()}</p> })}
            <p class="field-error" id=error_id.clone() data-testid=error_id>
                {move || mine.get().map(|e| error_text(i18n.get_locale(), &e))}
            </p>
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
    children: Children,
) -> impl IntoView {
    view! {
        <button
            type="submit"
            class="button"
            class:button-primary=!danger
            class:button-danger=danger
            disabled=move || pending.get()
            aria-busy=move || pending.get().then_some("true")
            data-testid=testid
        >
            {children()}
        </button>
    }
}
