//! Integration tests of the `paddock` binary: each test starts the real server on a free port with its
//! own temporary data directory and drives it over HTTP with reqwest, checking the database file
//! afterwards where "nothing was written" matters. One test binary (modules below) keeps link time down.

mod common;

mod accounts;
mod autoscale;
mod bad_input;
mod canary;
mod cli;
mod company_signin;
mod datasets;
mod endpoints;
mod environments;
mod evaluations;
mod fuzz;
mod jobs;
mod model_server;
mod ops;
mod pretrained;
mod process_contracts;
mod rbac;
mod security;
mod sweeps;
mod tasks;
mod tenant_boundary;
