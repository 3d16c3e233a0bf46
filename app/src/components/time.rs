//! Timestamps as people read them. The API speaks RFC 3339; the UI shows minutes in UTC (the same on
//! the server and in the browser, so hydration never disagrees) and keeps the exact value in
//! `<time datetime>`.

use leptos::prelude::*;

/// `2026-12-02T15:12:48Z` → `2026-12-02 15:12 UTC`; anything unparsable is shown as it came.
pub fn short_time(rfc3339: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .map(|t| {
            t.with_timezone(&chrono::Utc)
                .format("%Y-%m-%d %H:%M UTC")
                .to_string()
        })
        .unwrap_or_else(|_| rfc3339.to_string())
}

#[component]
pub fn Timestamp(#[prop(into)] at: String) -> impl IntoView {
    let text = short_time(&at);
    view! { <time datetime=at>{text}</time> }
}

#[cfg(test)]
mod tests {
    use super::short_time;

    #[test]
    fn formats_utc_minutes_and_keeps_garbage() {
        assert_eq!(short_time("2026-12-02T15:12:48Z"), "2026-12-02 15:12 UTC");
        assert_eq!(
            short_time("2026-12-02T23:30:00+08:00"),
            "2026-12-02 15:30 UTC"
        );
        assert_eq!(short_time("yesterday"), "yesterday");
    }
}
