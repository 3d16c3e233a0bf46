//! Byte sizes as people write them in a spec ("512m", "8g", "1.5G", "1073741824"). Units are binary, like
//! Docker's own `--memory 8g` (8 GiB), so a spec means the same here and on the command line.

/// Parses a size; `None` when the text is not a size. Accepts an integer or decimal number followed by an
/// optional unit `b`, `k`, `m`, `g`, `t` (each optionally followed by `b` or `ib`), case-insensitive.
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim().to_ascii_lowercase();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    if number.is_empty()
        || number.starts_with('.')
        || number.ends_with('.')
        || number.matches('.').count() > 1
    {
        return None;
    }
    let shift = match unit.trim() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return None,
    };
    let scale = (1u64 << shift) as f64;
    let value: f64 = number.parse().ok()?;
    let bytes = value * scale;
    // Fractions of a byte and sizes beyond i64 (Docker's field type) are not sizes.
    if !bytes.is_finite() || bytes.fract() != 0.0 || bytes > i64::MAX as f64 {
        return None;
    }
    Some(bytes as u64)
}

/// The shortest exact rendering with a binary unit, for messages ("8g", "512m", "1000").
pub fn format_size(bytes: u64) -> String {
    for (shift, unit) in [(40, "t"), (30, "g"), (20, "m"), (10, "k")] {
        if bytes != 0 && bytes.is_multiple_of(1u64 << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_docker_style_sizes() {
        assert_eq!(parse_size("8g"), Some(8 << 30));
        assert_eq!(parse_size("512m"), Some(512 << 20));
        assert_eq!(parse_size("512MiB"), Some(512 << 20));
        assert_eq!(parse_size("1.5G"), Some(3 << 29));
        assert_eq!(parse_size("64k"), Some(64 << 10));
        assert_eq!(parse_size("1000"), Some(1000));
        assert_eq!(parse_size(" 2 gb "), Some(2 << 30));
    }

    #[test]
    fn rejects_non_sizes() {
        for bad in [
            "lots",
            "",
            "g",
            "-1g",
            "1.2.3m",
            "8q",
            ".5g",
            "5.g",
            "0.3b",
            "99999999999t",
        ] {
            assert_eq!(parse_size(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn formats_exactly() {
        assert_eq!(format_size(8 << 30), "8g");
        assert_eq!(format_size(1536 << 20), "1536m");
        assert_eq!(format_size(1000), "1000");
    }
}
