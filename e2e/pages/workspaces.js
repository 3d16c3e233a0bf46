//! Page objects for `/workspaces/new` and the Members page of a workspace.

import { PageObject, SectionPage } from './page.js';

export class NewWorkspacePage extends PageObject {
  get name() { return this.page.getByTestId('new-workspace-name'); }
  get nameError() { return this.page.getByTestId('new-workspace-name-error'); }

  async create(name) {
    await this.name.fill(name);
    await this.page.getByTestId('create-workspace-submit').click();
    await this.page.waitForURL(/\/w\/\d+\/environments$/);
  }
}

/** Rows are `member-row-<username>`; there is no empty state (the owner is always a member). */
export class MembersPage extends SectionPage {
  constructor(page) { super(page, 'members', 'member'); }

  get addForm() { return this.page.getByTestId('add-member-form'); }
  get usernameError() { return this.page.getByTestId('add-member-username-error'); }
  get ownerOnlyNote() { return this.page.getByTestId('members-owner-only'); }
  roleSelect(username) { return this.page.getByTestId(`role-select-${username}`); }
  removeButton(username) { return this.page.getByTestId(`remove-${username}`); }

  async add(username, role) {
    await this.page.getByTestId('add-member-username').fill(username);
    await this.page.getByTestId('add-member-role').selectOption(role);
    await this.page.getByTestId('add-member-submit').click();
  }
}
