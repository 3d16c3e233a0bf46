//! One module per URL of the dashboard (see `App` for the route table):
//! - [`auth`]: `/signin`, `/signup`.
//! - [`home`]: the signed-in layout, `/` (redirects to a workspace) and `/workspaces/new`.
//! - [`workspace`]: `/w/{id}/...` — the side navigation and one page per section.
//! - [`tokens`]: `/settings/tokens`; [`admin`]: `/admin`; [`not_found`]: everything else.
//! - [`forbidden`]: the 403 document the server's page guard answers at admin pages for non-admins.

pub mod admin;
pub mod auth;
pub mod forbidden;
pub mod home;
pub mod not_found;
pub mod tokens;
pub mod workspace;
