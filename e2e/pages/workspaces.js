//! Page objects for `/workspaces/new` and the Members page of a workspace.

import { hydrated } from '../support/browser.js';

export class NewWorkspacePage {
  constructor(page) { this.page = page; }

  get name() { return this.page.getByTestId('new-workspace-name'); }
  get nameError() { return this.page.getByTestId('new-workspace-name-error'); }

  async create(name) {
    await this.name.fill(name);
    await this.page.getByTestId('create-workspace-submit').click();
    await this.page.waitForURL(/\/w\/\d+\/environments$/);
  }
}

export class MembersPage {
  constructor(page) { this.page = page; }

  async goto(workspaceId) {
    await this.page.goto(`/w/${workspaceId}/members`);
    await hydrated(this.page);
  }

  get table() { return this.page.getByTestId('members-table'); }
  get addForm() { return this.page.getByTestId('add-member-form'); }
  get usernameError() { return this.page.getByTestId('add-member-username-error'); }
  get ownerOnlyNote() { return this.page.getByTestId('members-owner-only'); }
  row(username) { return this.page.getByTestId(`member-row-${username}`); }
  roleSelect(username) { return this.page.getByTestId(`role-select-${username}`); }
  removeButton(username) { return this.page.getByTestId(`remove-${username}`); }

  async add(username, role) {
    await this.page.getByTestId('add-member-username').fill(username);
    await this.page.getByTestId('add-member-role').selectOption(role);
    await this.page.getByTestId('add-member-submit').click();
  }
}
