//! Runs side by side (issue 37): the fields of their specs that differ, their last and best dev
//! scores, and their curves against step and time, read in one request; and the same as CSV.

use std::collections::{BTreeMap, BTreeSet};

use contracts::error::{internal, AppError, ErrorCode};
use contracts::ids::{JobId, WorkspaceId};
use contracts::runs::{
    higher_is_better, ComparedRun, Comparison, SeriesPoint, StartingModel, MAX_COMPARED,
    MAX_SERIES_POINTS,
};
use contracts::types::Role;
use sqlx::{SqliteConnection, SqlitePool};

use super::{job_row, queue_positions};
use crate::access;
use crate::auth::Actor;

/// The series a comparison may draw, in the order a picker offers them: the training step's
/// (`train_loss`, `lr`, `samples_per_s`) from the trainer's step events, then the dev evaluations'.
const SERIES: [&str; 7] = [
    "train_loss",
    "lr",
    "samples_per_s",
    "dev_macro_f1",
    "dev_accuracy",
    "dev_f1",
    "dev_loss",
];

/// Reads `jobs=1,2,3`: one to [`MAX_COMPARED`] distinct job ids, in the order given.
pub fn parse_ids(text: &str) -> Result<Vec<JobId>, AppError> {
    let refuse = |why: String| AppError::invalid("jobs", ErrorCode::RunsQueryInvalid, why);
    let mut ids = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let id: JobId = part
            .parse()
            .map_err(|_| refuse(format!("`{part}` is not a job id")))?;
        if !ids.contains(&id) {
            ids.push(id);
        }
        if ids.len() > MAX_COMPARED {
            return Err(refuse(format!(
                "at most {MAX_COMPARED} runs are compared at once"
            )));
        }
    }
    if ids.is_empty() {
        return Err(refuse("name the runs to compare, as jobs=1,2,3".into()));
    }
    Ok(ids)
}

/// Jobs `ids` of workspace `workspace_id` side by side. Any member; a job not in the workspace is a
/// 404, as opening it would be.
pub async fn compare(
    db: &SqlitePool,
    actor: &Actor,
    workspace_id: WorkspaceId,
    ids: &[JobId],
) -> Result<Comparison, AppError> {
    let mut conn = access::connect(db, actor, workspace_id, Role::Viewer).await?;
    let queue = queue_positions(&mut conn, workspace_id).await?;
    let mut runs = Vec::with_capacity(ids.len());
    let mut specs = Vec::with_capacity(ids.len());
    for &id in ids {
        let row = job_row(&mut conn, workspace_id, id).await?;
        let position = queue.iter().position(|q| *q == id).map(|p| p as i64 + 1);
        let summary = row.summary(position)?;
        let mut fields = match serde_json::to_value(row.spec()?) {
            Ok(serde_json::Value::Object(fields)) => fields,
            _ => return Err(internal("a job spec as JSON", id)),
        };
        // The name is the run's label, not a setting; where the weights came from is, in words.
        fields.remove("name");
        fields.insert(
            "starting_model".into(),
            starting_model(&summary.start).into(),
        );
        specs.push(fields);
        let (last_step, last, best, series) = scores(&mut conn, id, &summary).await?;
        runs.push(ComparedRun {
            summary,
            fields: BTreeMap::new(),
            last,
            last_step,
            best,
            series,
        });
    }
    let keys: BTreeSet<&String> = specs.iter().flat_map(|s| s.keys()).collect();
    let differing: Vec<String> = keys
        .into_iter()
        .filter(|k| specs.iter().any(|s| s.get(*k) != specs[0].get(*k)))
        .cloned()
        .collect();
    for (run, spec) in runs.iter_mut().zip(&specs) {
        run.fields = differing
            .iter()
            .map(|k| (k.clone(), spec.get(k).cloned().unwrap_or_default()))
            .collect();
    }
    let series = SERIES
        .iter()
        .filter(|s| runs.iter().any(|r| r.series.contains_key(**s)))
        .map(|s| s.to_string())
        .collect();
    Ok(Comparison {
        runs,
        differing,
        series,
    })
}

/// Where a run's weights started, as one phrase: `scratch:tiny`, `pretrained:3 (ernie-3.0-nano)`,
/// `checkpoint:17 (job 5)` — the words of the list's model filter, so a cell can be pasted into it.
fn starting_model(start: &Option<StartingModel>) -> String {
    match start {
        None => String::new(),
        Some(StartingModel::Scratch { preset }) => format!("scratch:{preset}"),
        Some(StartingModel::Pretrained { id, name }) => match name {
            Some(name) => format!("pretrained:{id} ({name})"),
            None => format!("pretrained:{id}"),
        },
        Some(StartingModel::Checkpoint { id, job_id }) => match job_id {
            Some(job) => format!("checkpoint:{id} (job {job})"),
            None => format!("checkpoint:{id}"),
        },
    }
}

type Scores = (
    Option<i64>,
    BTreeMap<String, f64>,
    BTreeMap<String, f64>,
    BTreeMap<String, Vec<SeriesPoint>>,
);

/// A run's last dev scores (and their step), its best of each, and its series.
async fn scores(
    conn: &mut SqliteConnection,
    job_id: JobId,
    summary: &contracts::types::JobSummary,
) -> Result<Scores, AppError> {
    let rows: Vec<(String, i64, String, String)> =
        sqlx::query_as("SELECT kind, step, data, at FROM job_metrics WHERE job_id = ? ORDER BY id")
            .bind(job_id)
            .fetch_all(conn)
            .await?;
    let at = |t: &str| chrono::DateTime::parse_from_rfc3339(t).ok();
    let origin = summary
        .started_at
        .as_deref()
        .and_then(at)
        .or_else(|| rows.first().and_then(|r| at(&r.3)));
    let mut series: BTreeMap<String, Vec<SeriesPoint>> = BTreeMap::new();
    let (mut last_step, mut last, mut best) = (None, BTreeMap::new(), BTreeMap::new());
    for (kind, step, data, when) in &rows {
        let Ok(data) = serde_json::from_str::<serde_json::Value>(data) else {
            continue;
        };
        let secs = match (origin, at(when)) {
            (Some(origin), Some(when)) => (when - origin).num_milliseconds() as f64 / 1000.0,
            _ => 0.0,
        };
        let values: Vec<(&str, Option<f64>)> = match kind.as_str() {
            "step" => vec![
                ("train_loss", data["loss"].as_f64()),
                ("lr", data["lr"].as_f64()),
                ("samples_per_s", data["samples_per_s"].as_f64()),
            ],
            "eval" if data["split"].as_str().is_none_or(|s| s == "dev") => {
                let scores = [
                    ("macro_f1", data["macro_f1"].as_f64()),
                    ("accuracy", data["accuracy"].as_f64()),
                    ("f1", data.pointer("/entities/f1").and_then(|v| v.as_f64())),
                    ("loss", data["loss"].as_f64()),
                ];
                last_step = Some(*step);
                last.clear();
                for (name, value) in scores {
                    let Some(value) = value.filter(|v| v.is_finite()) else {
                        continue;
                    };
                    last.insert(name.to_string(), value);
                    let better = |old: &f64| match higher_is_better(name) {
                        true => value > *old,
                        false => value < *old,
                    };
                    if best.get(name).is_none_or(better) {
                        best.insert(name.to_string(), value);
                    }
                }
                vec![
                    ("dev_macro_f1", scores[0].1),
                    ("dev_accuracy", scores[1].1),
                    ("dev_f1", scores[2].1),
                    ("dev_loss", scores[3].1),
                ]
            }
            _ => Vec::new(),
        };
        for (name, value) in values {
            if let Some(value) = value.filter(|v| v.is_finite()) {
                series
                    .entry(name.to_string())
                    .or_default()
                    .push((*step, secs, value));
            }
        }
    }
    for points in series.values_mut() {
        thin(points, MAX_SERIES_POINTS);
    }
    Ok((last_step, last, best, series))
}

/// Keeps at most `max` of `points`, evenly spaced, the first and the last among them.
fn thin<T: Copy>(points: &mut Vec<T>, max: usize) {
    let n = points.len();
    if n <= max || max < 2 {
        return;
    }
    let kept: Vec<T> = (0..max).map(|i| points[i * (n - 1) / (max - 1)]).collect();
    *points = kept;
}

/// The comparison as CSV, one row per run: id, name, status, duration, the differing fields, then
/// the best and last of each dev score some run has. A cell a spreadsheet would run as a formula
/// (`=`, `+`, `-`, `@` first: a run's name is anyone's text) is quoted with a leading `'`.
pub fn to_csv(comparison: &Comparison) -> Result<String, AppError> {
    let metrics: BTreeSet<&String> = comparison
        .runs
        .iter()
        .flat_map(|r| r.best.keys().chain(r.last.keys()))
        .collect();
    let mut out = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = ["job_id", "name", "status", "duration_secs"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    header.extend(comparison.differing.iter().cloned());
    header.extend(metrics.iter().map(|m| format!("best_{m}")));
    header.extend(metrics.iter().map(|m| format!("last_{m}")));
    header.push("last_step".into());
    let failed = |e: csv::Error| internal("writing a comparison as CSV", e);
    out.write_record(&header).map_err(failed)?;
    for run in &comparison.runs {
        let s = &run.summary;
        let mut row = vec![
            s.id.to_string(),
            s.name.clone(),
            s.status.as_str().to_string(),
            s.duration_secs
                .map(|d| format!("{d:.1}"))
                .unwrap_or_default(),
        ];
        row.extend(
            comparison
                .differing
                .iter()
                .map(|k| match run.fields.get(k) {
                    None | Some(serde_json::Value::Null) => String::new(),
                    Some(serde_json::Value::String(text)) => text.clone(),
                    Some(value) => value.to_string(),
                }),
        );
        let number = |v: Option<&f64>| v.map(f64::to_string).unwrap_or_default();
        row.extend(metrics.iter().map(|m| number(run.best.get(*m))));
        row.extend(metrics.iter().map(|m| number(run.last.get(*m))));
        row.push(run.last_step.map(|s| s.to_string()).unwrap_or_default());
        out.write_record(row.iter().map(|cell| inert(cell)))
            .map_err(failed)?;
    }
    let bytes = out
        .into_inner()
        .map_err(|e| internal("writing a comparison as CSV", e))?;
    String::from_utf8(bytes).map_err(|e| internal("a comparison's CSV", e))
}

/// `cell`, made inert for a spreadsheet when it would start a formula (OWASP's CSV injection advice).
/// Numbers, negative ones included, pass as they are.
fn inert(cell: &str) -> String {
    let formula =
        cell.starts_with(['=', '+', '-', '@', '\t', '\r']) && cell.parse::<f64>().is_err();
    match formula {
        true => format!("'{cell}"),
        false => cell.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_read_distinct_and_bounded_and_refused_at_jobs() {
        assert_eq!(
            parse_ids("3, 1,3,,2").unwrap(),
            [JobId::new(3), JobId::new(1), JobId::new(2)]
        );
        for bad in ["", ",", "1,x", "1;2"] {
            let refused = parse_ids(bad).unwrap_err();
            assert_eq!(refused.field(), Some("jobs"), "{bad}");
        }
        let many: Vec<String> = (1..=MAX_COMPARED as i64 + 1)
            .map(|i| i.to_string())
            .collect();
        assert!(parse_ids(&many.join(",")).is_err());
        assert_eq!(
            parse_ids(&many[..MAX_COMPARED].join(",")).unwrap().len(),
            MAX_COMPARED
        );
    }

    #[test]
    fn long_series_are_thinned_evenly_keeping_both_ends() {
        let mut points: Vec<usize> = (0..10_001).collect();
        thin(&mut points, 1000);
        assert_eq!(points.len(), 1000);
        assert_eq!((points[0], points[999]), (0, 10_000));
        assert!(points.windows(2).all(|w| w[1] > w[0]));
        let mut short = vec![1, 2, 3];
        thin(&mut short, 1000);
        assert_eq!(short, [1, 2, 3]);
    }

    #[tokio::test]
    async fn runs_compare_by_what_differs_with_their_scores_curves_and_csv() {
        use crate::testing::{dataset, jobs, team, test_db};
        let (dir, db) = test_db().await;
        let jobs = jobs(&dir, &db).await;
        let team = team(&db).await;
        let ds = dataset(&db, team.ws, "reviews", &["negative", "positive"]).await;
        let mut ids = Vec::new();
        for (name, lr) in [("=cmd|' /C calc'!A0", 1e-4), ("b", 3e-4)] {
            let mut spec = contracts::types::JobSpec::new(name, ds);
            spec.learning_rate = lr;
            let job = super::super::submit(&db, &jobs, &team.owner, team.ws, spec)
                .await
                .unwrap();
            ids.push(job.summary.id);
        }
        let point = |job: JobId, kind: &str, step: i64, data: serde_json::Value, at: &str| {
            sqlx::query(
                "INSERT INTO job_metrics (job_id, kind, step, data, at) VALUES (?, ?, ?, ?, ?)",
            )
            .bind(job)
            .bind(kind.to_string())
            .bind(step)
            .bind(data.to_string())
            .bind(at.to_string())
        };
        let eval = |f1: f64, loss: f64, split: &str| serde_json::json!({ "accuracy": f1, "macro_f1": f1, "loss": loss, "split": split });
        for q in [
            point(
                ids[0],
                "step",
                1,
                serde_json::json!({ "loss": 0.9, "lr": 1e-4 }),
                "2026-12-07T10:00:00Z",
            ),
            point(
                ids[0],
                "eval",
                10,
                eval(0.6, 0.5, "dev"),
                "2026-12-07T10:00:30Z",
            ),
            point(
                ids[0],
                "eval",
                20,
                eval(0.5, 0.4, "dev"),
                "2026-12-07T10:01:00Z",
            ),
            point(
                ids[0],
                "eval",
                20,
                eval(0.9, 0.1, "test"),
                "2026-12-07T10:01:01Z",
            ),
        ] {
            q.execute(&db).await.unwrap();
        }

        let compared = compare(&db, &team.viewer, team.ws, &ids).await.unwrap();
        assert_eq!(
            compared.differing,
            ["learning_rate"],
            "the name is a label, the rest is equal"
        );
        let a = &compared.runs[0];
        assert_eq!(a.fields["learning_rate"], serde_json::json!(1e-4));
        assert_eq!(
            (a.last_step, a.last["macro_f1"], a.last["loss"]),
            (Some(20), 0.5, 0.4)
        );
        assert_eq!(
            (a.best["macro_f1"], a.best["loss"]),
            (0.6, 0.4),
            "best of each: highest, lowest loss"
        );
        assert_eq!(
            a.series["dev_macro_f1"],
            [(10, 30.0, 0.6), (20, 60.0, 0.5)],
            "from the first point"
        );
        assert_eq!(a.series["train_loss"], [(1, 0.0, 0.9)]);
        assert!(compared.runs[1].series.is_empty() && compared.runs[1].best.is_empty());
        assert_eq!(
            compared.series,
            [
                "train_loss",
                "lr",
                "dev_macro_f1",
                "dev_accuracy",
                "dev_loss"
            ]
        );

        let csv = to_csv(&compared).unwrap();
        let mut lines = csv.lines();
        assert_eq!(
            lines.next().unwrap(),
            "job_id,name,status,duration_secs,learning_rate,best_accuracy,best_loss,best_macro_f1,last_accuracy,last_loss,last_macro_f1,last_step"
        );
        let first = lines.next().unwrap();
        assert!(
            first.starts_with(&format!(
                "{},'=cmd|' /C calc'!A0,queued,,0.0001,0.6,0.4,0.6,0.5,0.4,0.5,20",
                ids[0]
            )),
            "{first}"
        );

        let outsider = crate::testing::actor(&db, "outsider").await;
        assert!(compare(&db, &outsider, team.ws, &ids).await.is_err());
        let other_ws = crate::workspaces::create(&db, &team.owner, "other")
            .await
            .unwrap()
            .id;
        let err = compare(&db, &team.owner, other_ws, &ids).await.unwrap_err();
        assert!(
            matches!(err, AppError::NotFound),
            "a run of another workspace is not found: {err:?}"
        );
    }

    #[test]
    fn formulas_are_made_inert_and_numbers_are_not() {
        assert_eq!(inert("=HYPERLINK(\"x\")"), "'=HYPERLINK(\"x\")");
        assert_eq!(inert("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(inert("-0.5"), "-0.5");
        assert_eq!(inert("1e-5"), "1e-5");
        assert_eq!(inert("lr sweep #3"), "lr sweep #3");
    }
}
