//! Server functions: the dashboard's calls into the server, one module per resource as the domain
//! names them. Each is the domain call the REST handler makes too, run for the caller from context by
//! `context::as_caller` (which also gives a failure the HTTP status the REST API would), so each rule
//! lives in one place: the `domain` crate. Prefix `/rpc` keeps them apart from the public REST API
//! under `/api/v1`; each has a fixed endpoint name (`/rpc/sign_in`, …) so its URL does not change when
//! code moves. Uploads (datasets, pretrained models) and live streams (job metrics and logs, build
//! logs) are not server functions: the browser uses the REST routes for them, with upload progress and
//! server-sent events.
//!
//! # Layout
//! - [`accounts`]: sign-up, sign-in, sign-out and who is signed in.
//! - [`workspaces`], [`members`], [`activity`]: team workspaces, their members and their audit log.
//! - [`tokens`], [`admin`], [`clusters`], [`identity`]: personal API tokens; instance settings and
//!   accounts, registering clusters, and company sign-in's providers (admins only).
//! - [`environments`], [`datasets`], [`jobs`], [`sweeps`], [`checkpoints`], [`pretrained`],
//!   [`evaluations`], [`endpoints`]: the work of a workspace, in the order a team meets it.

pub mod accounts;
pub mod activity;
pub mod admin;
pub mod checkpoints;
pub mod clusters;
pub mod datasets;
pub mod endpoints;
pub mod environments;
pub mod evaluations;
pub mod identity;
pub mod jobs;
pub mod members;
pub mod pretrained;
pub mod sweeps;
pub mod tokens;
pub mod workspaces;
