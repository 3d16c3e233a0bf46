//! The page a signed-in account gets, with status 403, at a page that is not for it: the instance's
//! admin pages, for anyone but an instance admin. The server's page guard answers it before the
//! dashboard renders anything, as a document of its own without the dashboard's scripts: hydrating,
//! the router would render the page that was asked for, and nothing of that page (the cluster's
//! configuration, the data directory, live buttons) may reach the browser.

use leptos::prelude::*;

use crate::i18n::*;

/// The cookie leptos_i18n keeps the chosen language in (see `App`).
const LANGUAGE_COOKIE: &str = "i18n_pref_locale";

/// The language a request's `Cookie` headers chose, else the dashboard's default (see `App`). All of
/// them: HTTP/2 clients may send each cookie in a header of its own.
pub fn locale_of<'a>(cookie_headers: impl IntoIterator<Item = &'a str>) -> Locale {
    cookie_headers
        .into_iter()
        .flat_map(|h| h.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(name, _)| *name == LANGUAGE_COOKIE)
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or_default()
}

/// The whole HTML document, in `locale`.
pub fn forbidden_document(locale: Locale) -> String {
    let title = td_string!(locale, errors.page_forbidden).to_string();
    let why = td_string!(locale, errors.page_for_admins).to_string();
    let home = td_string!(locale, common.back_home).to_string();
    view! {
        <!DOCTYPE html>
        <html lang=locale.as_str()>
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                <link rel="stylesheet" href="/pkg/paddock.css" />
                <link rel="icon" type="image/svg+xml" href="/favicon.svg" />
                <title>{title.clone()}</title>
            </head>
            <body>
                <main id="main" class="auth-page">
                    <div class="auth-card" data-testid="forbidden">
                        <h1>"403"</h1>
                        <p>{title}</p>
                        <p>{why}</p>
                        <p><a href="/">{home}</a></p>
                    </div>
                </main>
            </body>
        </html>
    }
    .to_html()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_language_cookie_decides_and_chinese_is_the_default() {
        assert_eq!(locale_of(None), Locale::zh);
        assert_eq!(locale_of(Some("a=b; i18n_pref_locale=en")), Locale::en);
        assert_eq!(locale_of(Some("i18n_pref_locale=xx")), Locale::zh);
        assert_eq!(
            locale_of(["a=b", "i18n_pref_locale=en"]),
            Locale::en,
            "a header per cookie"
        );
        let zh = forbidden_document(Locale::zh);
        assert!(
            zh.contains("<html lang=\"zh\"") && zh.contains("403") && zh.contains("管理员"),
            "{zh}"
        );
        assert!(!zh.contains("<script"), "{zh}");
        assert!(forbidden_document(Locale::en).contains("administrators"));
    }
}
