//! Page object for the signed-in frame: header (workspace switcher, language switch, account menu)
//! and the workspace side navigation and heading.

import { idInUrl, PageObject } from './page.js';

export class Shell extends PageObject {
  get langSwitch() { return this.page.getByTestId('lang-switch'); }
  get accountName() { return this.page.getByTestId('account-name'); }
  get pageTitle() { return this.page.getByTestId('page-title'); }
  get workspaceName() { return this.page.getByTestId('workspace-name'); }
  get roleBadge() { return this.page.getByTestId('workspace-heading').getByTestId('role-badge'); }
  get readOnlyBadge() { return this.page.getByTestId('readonly-badge'); }
  navLink(section) { return this.page.getByTestId(`nav-${section}`); }

  /** Follows a side-navigation link (client-side routing once hydrated). */
  async openSection(section) {
    await this.navLink(section).click();
    await this.page.waitForURL(new RegExp(`/w/\\d+/${section}$`));
  }

  async signOut() {
    await this.page.getByTestId('account-toggle').click();
    await this.page.getByTestId('signout').click();
    await this.page.waitForURL(/\/signin$/);
  }

  /** The workspace id in the current URL. */
  workspaceId() { return idInUrl(this.page, /^\/w\/(\d+)\//, 'a workspace page'); }
}
