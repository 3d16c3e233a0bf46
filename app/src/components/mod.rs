//! Building blocks shared by the pages: the signed-in shell (header, workspace switcher, account
//! menu), the language switch, form fields that show server errors next to the input they concern,
//! notices, empty states, badges, a modal dialog and a copy-to-clipboard button.

pub mod auth;
pub mod badges;
pub mod copy;
pub mod dialog;
pub mod empty_state;
pub mod form;
pub mod header;
pub mod http;
pub mod lang_switch;
pub mod notice;
pub mod time;
pub mod workspaces;
