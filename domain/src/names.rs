//! Names people give things — workspaces, API tokens, datasets, jobs, pretrained models, endpoints and
//! their keys: one rule for all of them, so a name accepted in one place is never refused in another.
//! They are labels for humans (shown in lists, audit entries, logs), never paths or identifiers, so the
//! rule is only about length and invisible characters. Also the names of uploaded files (datasets, model
//! archives), which do become file names on the server and are therefore reduced to a safe alphabet.

use contracts::error::{AppError, ErrorCode};

/// Longest name, in characters.
pub const NAME_MAX: usize = 64;

/// The rule in words, for error messages.
pub const NAME_RULE: &str = "1–64 characters without control characters";

/// An uploaded file's name as the browser sent it, reduced to its last path component (trimmed), and the
/// same in a safe alphabet (ASCII letters, digits, `.`, `_`, `-`; anything else becomes `_`), because it
/// becomes a file name on the server.
pub fn uploaded_file_name(raw: &str) -> (&str, String) {
    let base = raw.rsplit(['/', '\\']).next().unwrap_or_default().trim();
    let safe = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    (base, safe)
}

/// The name without surrounding spaces, when it follows the rule.
pub fn display_name(raw: &str) -> Option<&str> {
    let name = raw.trim();
    let len = name.chars().count();
    (len > 0 && len <= NAME_MAX && !name.chars().any(char::is_control)).then_some(name)
}

/// [`display_name`], or the refusal of the `name` field: `code` says whose name it was, and `what`
/// opens the message (`"dataset name"` → "dataset name must be …").
pub(crate) fn checked<'a>(raw: &'a str, code: ErrorCode, what: &str) -> Result<&'a str, AppError> {
    display_name(raw)
        .ok_or_else(|| AppError::invalid("name", code, format!("{what} must be {NAME_RULE}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_trimmed_and_bounded_in_characters() {
        assert_eq!(display_name("  情感分析 v2 "), Some("情感分析 v2"));
        assert_eq!(
            display_name(&"字".repeat(NAME_MAX)).map(|n| n.chars().count()),
            Some(64)
        );
        assert_eq!(display_name(&"字".repeat(NAME_MAX + 1)), None);
        assert_eq!(display_name("   "), None);
        assert_eq!(display_name("a\u{0}b"), None);
        assert_eq!(display_name("line\nbreak"), None);
    }

    #[test]
    fn uploaded_file_names_lose_their_directories_and_odd_characters() {
        assert_eq!(
            uploaded_file_name(" C:\\data\\评论 v1.tsv "),
            ("评论 v1.tsv", "___v1.tsv".to_string())
        );
        assert_eq!(
            uploaded_file_name("../../etc/passwd"),
            ("passwd", "passwd".to_string())
        );
        assert_eq!(uploaded_file_name("m.tar"), ("m.tar", "m.tar".to_string()));
    }
}
