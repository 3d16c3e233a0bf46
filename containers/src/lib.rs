//! Paddock's Docker layer: everything that turns an environment spec into running containers, through the
//! Docker Engine API (bollard). It knows Docker, not the database or the web app: callers persist state and
//! pass IDs and names in; this crate is idempotent so that they can retry and reconcile.
//!
//! # Layout
//! - [`spec`]: the environment spec, its validation (every field error at once) and its hashes.
//! - [`catalog`]: known base images with their CUDA versions (the CUDA → minimum driver table is
//!   `hostcaps::cuda`'s, beside what Paddock's own CUDA runtime needs, so the trainer asks the same one).
//! - [`preflight`]: the host's GPUs (`nvidia-smi`) checked against a spec before anything is created.
//! - [`build`]: deterministic Dockerfile + in-memory, streamed tar context → image, cached by build hash;
//!   the optional runtime layer (a binary and its `ldd` closure); pulling remote bases with progress.
//! - [`base`]: `paddock/base:busybox`, a base image made locally from Debian's static busybox, so that
//!   nothing needs a registry.
//! - [`lifecycle`]: provision (create + start) hardened, limited, labelled containers with the workspace
//!   volume; stop/start/restart/remove; status from inspect and from the event stream; one-shot stats.
//! - [`exec`]: run a command and collect its output; an interactive TTY session with resize for the
//!   browser terminal.
//! - [`reconcile`]: list Paddock's containers by label so the app can make its database agree with Docker.
//! - [`labels`]: label keys and deterministic names; [`error`]: the crate's one error type.
//!
//! # Reproducibility
//! "Same spec ⇒ same image ID" holds through two mechanisms. First, images are labelled with a build hash
//! (spec's image-relevant fields + resolved base image ID + runtime files digest) and reused when present.
//! Second, a forced rebuild is deterministic in its inputs (sorted tar entries with fixed mtimes, owners and
//! modes; generated files without timestamps), so Docker's classic builder finds every step in its cache and
//! returns the same image ID. What is *not* reproducible is a rebuild after the image and its cache are
//! gone: the classic builder (the only one in Debian's Docker 20.10 that the API can drive without a BuildKit
//! session) writes the build time into each step's image config (`created`), so the ID differs even though
//! every layer's content digest is identical (verified by the integration tests). See `build` for details.
//!
//! # Using it from the app
//! `Docker::connect()` once (an [`Error::DockerUnreachable`] means "no Docker": keep running, disable
//! environment actions, retry `ping` later); validate a spec with [`EnvSpec::validate_against`] and
//! `Docker::host_limits`; check GPUs with [`preflight::check`] (host GPUs from [`preflight::gpus::detect`],
//! image needs from [`catalog::ImageRequirements::for_image`]); `build_env_image` and record the image ID;
//! `provision` with names from [`labels`]; follow `container_events`; `list_managed` to reconcile.

pub mod base;
pub mod build;
pub mod catalog;
mod docker;
pub mod error;
pub mod exec;
pub mod labels;
pub mod lifecycle;
pub mod mirror;
pub mod preflight;
pub mod reconcile;
pub mod spec;

pub use docker::{Docker, PING_TIMEOUT};
pub use error::{Error, Result};
pub use spec::{EnvSpec, FieldError, GpuRequest, HostLimits};
