//! Who is signed in, as one resource shared by the whole app. Pages that sign in, sign up or sign
//! out call [`Auth::refresh`] so every view that depends on the account re-reads it.

use leptos::prelude::*;
use leptos_router::components::Redirect;

use crate::api::accounts::current_user;
use contracts::error::AppError;
use contracts::types::Me;

#[derive(Clone, Copy)]
pub struct Auth {
    /// The signed-in account (`None` when signed out). Blocking, so that a page that redirects a
    /// signed-out visitor answers with a real HTTP redirect instead of a half-streamed page.
    pub user: Resource<Result<Option<Me>, AppError>>,
    /// Bumped after sign-in, sign-up and sign-out; the resource refetches when it changes.
    epoch: RwSignal<u64>,
}

impl Auth {
    /// Creates the resource and puts it in context; called once, at the top of the app.
    pub fn provide() -> Self {
        let epoch = RwSignal::new(0u64);
        let user = Resource::new_blocking(move || epoch.get(), |_| current_user());
        let auth = Auth { user, epoch };
        provide_context(auth);
        auth
    }

    pub fn refresh(&self) {
        self.epoch.update(|n| *n += 1);
    }

    /// The epoch, for resources that must refetch when the account changes.
    pub fn epoch(&self) -> u64 {
        self.epoch.get()
    }
}

pub fn use_auth() -> Auth {
    expect_context::<Auth>()
}

/// Sends a signed-out visitor to `/signin` (a 302 during server rendering, a client-side
/// navigation after hydration). Renders nothing otherwise.
#[component]
pub fn RequireSignedIn() -> impl IntoView {
    let signed_out = |user: &_| matches!(user, Ok(None) | Err(AppError::Unauthenticated));
    view! { <RedirectWhen when=signed_out to="/signin" /> }
}

/// The opposite, for the sign-in and sign-up pages: a signed-in visitor goes to the dashboard.
#[component]
pub fn RedirectIfSignedIn() -> impl IntoView {
    view! { <RedirectWhen when=|user| matches!(user, Ok(Some(_))) to="/" /> }
}

/// Sends the visitor `to` another page when the session (`when`) says so.
#[component]
fn RedirectWhen(
    when: fn(&Result<Option<Me>, AppError>) -> bool,
    to: &'static str,
) -> impl IntoView {
    let auth = use_auth();
    view! {
        <Suspense>
            {move || Suspend::new(async move {
                when(&auth.user.await).then(|| view! { <Redirect path=to /> })
            })}
        </Suspense>
    }
}
