//! Training and evaluation data: reading CSV/TSV/JSONL files, validating them into a
//! [`ValidationReport`], mapping labels to ids, splitting a dev set, and batching token ids.
//!
//! # Layout
//! - `encoding`: UTF-8 / GBK detection and conversion.
//! - `entities`: entity spans, tag schemes, and their alignment with tokens.
//! - `reader`: CSV, TSV and JSONL parsing into located rows.
//! - `validate`: value checks and statistics over one file.
//! - `report`: the serialisable report.
//! - `labels`: label string ↔ id.
//! - `split`: stratified dev split.
//! - `batch`: length-bucketed batches and padding.

pub mod batch;
pub mod encoding;
pub mod entities;
pub mod labels;
pub mod reader;
pub mod report;
pub mod split;
pub mod validate;

pub use batch::{Batch, Features, Gold};
pub use labels::LabelMap;
pub use reader::{Columns, DataFormat};
pub use report::{
    Issue, IssueDetail, IssueKind, LengthStats, LengthUnit, OverLength, Severity, TextEncoding,
    TokenLengths, Tokenization, ValidationReport,
};
pub use split::split_dev;
pub use validate::{validate_file, DataOptions, Example, Measure, Row, Validated};
