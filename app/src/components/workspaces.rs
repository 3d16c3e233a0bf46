//! The caller's workspaces, shared by the header's switcher and the pages that create, rename or
//! delete a workspace (they call [`WorkspaceList::refresh`] so the switcher follows).

use leptos::prelude::*;

use crate::api::workspaces::list_workspaces;
use crate::components::auth::use_auth;
use contracts::error::AppError;
use contracts::types::WorkspaceSummary;

#[derive(Clone, Copy)]
pub struct WorkspaceList {
    pub list: Resource<Result<Vec<WorkspaceSummary>, AppError>>,
    /// Bumped after a workspace is created, renamed, deleted or the caller's membership changes.
    pub epoch: RwSignal<u64>,
}

impl WorkspaceList {
    /// Created by the signed-in layout, so signed-out pages never ask for it.
    pub fn provide() -> Self {
        let auth = use_auth();
        let epoch = RwSignal::new(0u64);
        // Blocking: `/` redirects to the first workspace, which must be an HTTP redirect.
        let list =
            Resource::new_blocking(move || (auth.epoch(), epoch.get()), |_| list_workspaces());
        let this = WorkspaceList { list, epoch };
        provide_context(this);
        this
    }

    pub fn refresh(&self) {
        self.epoch.update(|n| *n += 1);
    }
}

pub fn use_workspace_list() -> WorkspaceList {
    expect_context::<WorkspaceList>()
}
