//! The validation report the platform shows for a data file (declared in `contracts::data`, which the
//! server and the dashboard read it with): how the validator fills its statistics — length percentiles
//! with a histogram in characters and, when the caller can count them, in tokens (with the rows longer
//! than the usual sequence limits) — and how its errors become the trainer's error.

pub use contracts::data::{
    HistogramBin, Issue, IssueDetail, IssueKind, LengthStats, LengthUnit, OverLength, Severity,
    TextEncoding, TokenLengths, Tokenization, ValidationReport, MAX_ISSUES_KEPT,
};

/// The sequence limits people pick most (`max_seq_len`): the token report says how many rows each cuts.
pub const COMMON_MAX_LENGTHS: [usize; 3] = [128, 256, 512];

/// A one-paragraph summary of the report's errors for an [`crate::Error::Data`]: the file and the first
/// few located problems.
pub fn error_summary(report: &ValidationReport) -> String {
    const SHOWN: usize = 5;
    let mut s = format!("{}: {} error(s)", report.path, report.error_count);
    for issue in report.errors.iter().take(SHOWN) {
        s.push_str("\n  ");
        if let Some(l) = issue.line {
            s.push_str(&format!("line {l}: "));
        }
        if let Some(f) = &issue.field {
            s.push_str(&format!("`{f}`: "));
        }
        s.push_str(&issue.message);
    }
    if report.error_count > SHOWN {
        s.push_str(&format!("\n  … and {} more", report.error_count - SHOWN));
    }
    s
}

/// `Ok(())` when the report has no errors, else an [`crate::Error::Data`] naming the first bad line.
pub fn to_result(report: &ValidationReport) -> crate::Result<()> {
    if report.ok {
        return Ok(());
    }
    let first = report.errors.first();
    Err(crate::Error::Data {
        line: first.and_then(|i| i.line),
        field: first.and_then(|i| i.field.clone()),
        message: error_summary(report),
    })
}

/// Percentiles (nearest rank), mean and a histogram of `lengths`; `None` for no rows.
pub fn length_stats(
    lengths: &[usize],
    unit: LengthUnit,
    limit: Option<usize>,
) -> Option<LengthStats> {
    if lengths.is_empty() {
        return None;
    }
    let mut sorted = lengths.to_vec();
    sorted.sort_unstable();
    let rank =
        |q: f64| sorted[((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1];
    let max = *sorted.last().unwrap();
    Some(LengthStats {
        unit,
        p50: rank(0.5),
        p95: rank(0.95),
        max,
        mean: sorted.iter().sum::<usize>() as f64 / sorted.len() as f64,
        over_limit: limit.map(|l| sorted.iter().filter(|&&x| x > l).count()),
        histogram: histogram(&sorted, rank(0.99), max),
    })
}

/// [`TokenLengths`] of `lengths` counted by `tokenizer`; `limit` (the job's `max_seq_len`) fills
/// `over_limit`.
pub fn token_lengths(
    lengths: &[usize],
    tokenizer: Tokenization,
    limit: Option<usize>,
) -> Option<TokenLengths> {
    let stats = length_stats(lengths, LengthUnit::Tokens, limit)?;
    let over = COMMON_MAX_LENGTHS
        .iter()
        .map(|&max_len| OverLength {
            max_len,
            rows: lengths.iter().filter(|&&l| l > max_len).count(),
        })
        .collect();
    Some(TokenLengths {
        tokenizer,
        stats,
        over,
    })
}

/// About 16 equal bins of a round width (1, 2, 4, 8, …) from zero to past the 99th percentile `p99`,
/// and the rows beyond them in one last bin that ends past the maximum: a few very long rows must not
/// squeeze every other row into the first bar.
fn histogram(sorted: &[usize], p99: usize, max: usize) -> Vec<HistogramBin> {
    let width = (p99 / 16 + 1).next_power_of_two();
    let bins = p99 / width + 1;
    let mut out: Vec<HistogramBin> = (0..bins)
        .map(|i| HistogramBin {
            from: i * width,
            to: (i + 1) * width,
            count: 0,
        })
        .collect();
    let end = bins * width;
    if max >= end {
        out.push(HistogramBin {
            from: end,
            to: max + 1,
            count: 0,
        });
    }
    let last = out.len() - 1;
    for &x in sorted {
        out[(x / width).min(last)].count += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_histogram() {
        let lens: Vec<usize> = (1..=100).collect();
        let s = length_stats(&lens, LengthUnit::Chars, Some(90)).unwrap();
        assert_eq!((s.p50, s.p95, s.max), (50, 95, 100));
        assert_eq!(s.over_limit, Some(10));
        assert_eq!(s.histogram.iter().map(|b| b.count).sum::<usize>(), 100);
        assert!(s.histogram.iter().all(|b| b.to - b.from == 8));
        assert!((s.mean - 50.5).abs() < 1e-9);
        // One very long row among short ones: the short ones spread over the bins, the long one
        // has the last bin to itself.
        let mut lens = vec![10; 99];
        lens[..40].fill(3);
        lens.push(5000);
        let h = length_stats(&lens, LengthUnit::Chars, None)
            .unwrap()
            .histogram;
        let last = h.last().unwrap();
        assert_eq!((last.from, last.to, last.count), (11, 5001, 1));
        assert_eq!(h[3].count + h[10].count, 99, "{h:?}");
        assert!(length_stats(&[], LengthUnit::Chars, None).is_none());
    }

    #[test]
    fn token_lengths_count_the_rows_over_each_common_limit() {
        let lens = [3, 128, 129, 200, 256, 300, 512, 513, 2000];
        let t = token_lengths(&lens, Tokenization::Basic, Some(256)).unwrap();
        assert_eq!(t.tokenizer, Tokenization::Basic);
        assert_eq!(t.stats.unit, LengthUnit::Tokens);
        assert_eq!(t.stats.max, 2000);
        assert_eq!(t.stats.over_limit, Some(4));
        let over: Vec<(usize, usize)> = t.over.iter().map(|o| (o.max_len, o.rows)).collect();
        assert_eq!(over, [(128, 7), (256, 4), (512, 2)]);
        let json = serde_json::to_value(&t).unwrap();
        assert_eq!(
            json["p50"], 256,
            "the statistics sit beside the tokenizer's name: {json}"
        );
        assert_eq!(json["over"][2]["rows"], 2);
        assert!(token_lengths(&[], Tokenization::Basic, None).is_none());
    }

    #[test]
    fn issue_lists_are_capped_but_counted() {
        let mut r = ValidationReport::new(std::path::Path::new("x.tsv"));
        for i in 0..(MAX_ISSUES_KEPT + 5) {
            r.push(Issue::error(
                IssueKind::EmptyText,
                Some(i + 2),
                None,
                "empty".into(),
            ));
        }
        assert_eq!(r.errors.len(), MAX_ISSUES_KEPT);
        assert_eq!(r.error_count, MAX_ISSUES_KEPT + 5);
        assert!(!r.ok);
        let err = to_result(&r).unwrap_err().to_string();
        assert!(err.starts_with("line 2:"), "{err}");
        assert!(err.contains("x.tsv"), "{err}");
    }
}
