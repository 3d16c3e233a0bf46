//! Who is signed in, as one resource shared by the whole app. Pages that sign in, sign up or sign
//! out call [`Auth::refresh`] so every view that depends on the account re-reads it.

use leptos::prelude::*;
use leptos_router::components::Redirect;
use leptos_router::hooks::{use_location, use_query_map};

use crate::api::accounts::current_user;
use crate::components::http::query;
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

/// Sends a signed-out visitor to `/signin?next=<this page>` (a 302 during server rendering, a
/// client-side navigation after hydration), so that signing in comes back to the link they
/// followed. Renders nothing otherwise.
#[component]
pub fn RequireSignedIn() -> impl IntoView {
    let location = use_location();
    let signed_out = |user: &_| matches!(user, Ok(None) | Err(AppError::Unauthenticated));
    let to = move || signin_url(&location.pathname.get(), &location.search.get());
    view! { <RedirectWhen when=signed_out to /> }
}

/// The opposite, for the sign-in and sign-up pages: a signed-in visitor goes on to the page they
/// were sent from (`?next=`), or to the dashboard.
#[component]
pub fn RedirectIfSignedIn() -> impl IntoView {
    view! { <RedirectWhen when=|user| matches!(user, Ok(Some(_))) to=use_next() /> }
}

/// `/signin?next=<path?search>`: the sign-in page that comes back to this page (plain `/signin` for
/// the home page, where signing in leads anyway). The server's page guard answers a signed-out page
/// load with it too.
pub fn signin_url(path: &str, search: &str) -> String {
    let here = match (path, search) {
        ("/", "") => return "/signin".to_string(),
        (path, "") => path.to_string(),
        (path, search) => format!("{path}?{search}"),
    };
    format!("/signin?{}", query(&[("next", &here)]))
}

/// Where to go once signed in: the `next` of the page's query when it is a path of this site, `/`
/// otherwise. Anything else (`//evil.example`, `https://…`, a backslash some browsers read as a
/// slash) would let a link send a fresh sign-in to another site.
pub fn next_path(next: Option<&str>) -> String {
    match next {
        Some(p) if p.starts_with('/') && !p.starts_with("//") && !p.contains('\\') => p.to_string(),
        _ => "/".to_string(),
    }
}

/// [`next_path`] of the current page's query, kept up to date.
pub fn use_next() -> impl Fn() -> String + Copy + Send + Sync + 'static {
    let query = use_query_map();
    move || query.with(|q| next_path(q.get_str("next")))
}

/// Sends the visitor `to` another page when the session (`when`) says so.
#[component]
fn RedirectWhen(
    when: fn(&Result<Option<Me>, AppError>) -> bool,
    to: impl Fn() -> String + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let auth = use_auth();
    view! {
        <Suspense>
            {move || Suspend::new(async move {
                when(&auth.user.await).then(|| view! { <Redirect path=to() /> })
            })}
        </Suspense>
    }
}

#[cfg(test)]
mod tests {
    use super::next_path;

    #[test]
    fn the_sign_in_page_remembers_the_page_and_its_query() {
        assert_eq!(
            super::signin_url("/w/3/jobs", ""),
            "/signin?next=%2Fw%2F3%2Fjobs"
        );
        assert_eq!(super::signin_url("/", ""), "/signin");
        assert_eq!(
            super::signin_url("/w/3/jobs/new", "dataset=2&x=a b"),
            "/signin?next=%2Fw%2F3%2Fjobs%2Fnew%3Fdataset%3D2%26x%3Da%20b"
        );
    }

    #[test]
    fn only_paths_of_this_site_are_followed() {
        assert_eq!(
            next_path(Some("/w/3/jobs/7?tab=log")),
            "/w/3/jobs/7?tab=log"
        );
        for foreign in [
            "//evil.example/x",
            "https://evil.example",
            "/\\evil.example",
            "w/3",
            "",
        ] {
            assert_eq!(next_path(Some(foreign)), "/", "{foreign}");
        }
        assert_eq!(next_path(None), "/");
    }
}
