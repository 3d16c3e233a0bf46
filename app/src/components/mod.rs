//! Building blocks shared by the pages: the signed-in shell (header, workspace switcher, account
//! menu), the language switch, the page frame and its loading and error states, tables, form fields
//! that show server errors next to the input they concern, notices, empty states, badges, a modal
//! dialog and confirmations, a copy-to-clipboard button, timers and the browser's streams.

pub mod auth;
pub mod badges;
pub mod clusters;
pub mod confirm;
pub mod copy;
pub mod dialog;
pub mod empty_state;
pub mod form;
pub mod header;
pub mod http;
pub mod lang_switch;
pub mod notice;
pub mod page;
pub mod poll;
pub mod precision;
pub mod sse;
pub mod table;
pub mod tasks;
pub mod time;
pub mod upload;
pub mod workspaces;
