//! Page objects for `/signup` and `/signin`: fill the form, submit, read the error shown next to a
//! field or at the top of the form.

import { PageObject } from './page.js';

class AuthForm extends PageObject {
  constructor(page, prefix) {
    super(page);
    this.prefix = prefix;
  }

  get username() { return this.page.getByTestId(`${this.prefix}-username`); }
  get password() { return this.page.getByTestId(`${this.prefix}-password`); }
  get submitButton() { return this.page.getByTestId(`${this.prefix}-submit`); }
  get title() { return this.page.getByTestId('page-title'); }
  /** The error shown under one field (`username` or `password`). */
  fieldError(field) { return this.page.getByTestId(`${this.prefix}-${field}-error`); }
  get formError() { return this.page.getByTestId('form-error'); }

  async goto() { await this.visit(`/${this.prefix}`); }

  async submit(username, password) {
    await this.username.fill(username);
    await this.password.fill(password);
    await this.submitButton.click();
  }
}

export class SignUpPage extends AuthForm {
  constructor(page) { super(page, 'signup'); }
}

export class SignInPage extends AuthForm {
  constructor(page) { super(page, 'signin'); }
}
