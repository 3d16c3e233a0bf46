//! The tasks beside sentiment classification learn from their shipped samples, from scratch, and their
//! checkpoints say what they are: text matching on the synthetic question pairs of
//! `scripts/dataset/make_matching.py`, entity extraction on the silver-labelled sentences of
//! `scripts/dataset/make_entities.py` (training from JSON lines, dev from CoNLL).

mod common;

use std::path::Path;

use common::fixture;
use trainer::events::EventSink;
use trainer::predict::{encode_rows, Answer, EntityPrediction};
use trainer::task::Task;
use trainer::train::{train, EndStatus, JobConfig, RunControl};

/// A matching job on the sample pairs: a 1-layer model, 20 epochs, dev at each epoch's end.
fn matching_job(out: &Path) -> JobConfig {
    let toml = format!(
        r#"task = "matching"
[data]
train = {train:?}
dev = {dev:?}
[data.columns]
text = "text_a"
text_pair = "text_b"
[model]
preset = "tiny"
vocab_size = 2000
max_seq_len = 48
[train]
epochs = 20
batch_size = 32
lr = 2e-3
warmup_ratio = 0.1
seed = 42
threads = 1
device = "cpu"
log_every_steps = 50
[output]
dir = {out:?}
"#,
        train = fixture("matching_train.tsv").display().to_string(),
        dev = fixture("matching_dev.tsv").display().to_string(),
        out = out.display().to_string(),
    );
    JobConfig::from_toml_str(&toml).unwrap()
}

/// One training at a time: a run seeds libtorch's generator and sets its thread count, both global to
/// the process, so two tests training at once draw each other's numbers (a seeded run then lands
/// anywhere between chance and its documented score).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn a_matching_model_learns_to_judge_pairs_it_never_saw() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let job = matching_job(&tmp.path().join("run"));
    let outcome = train(&job, &EventSink::memory(), &RunControl::default()).unwrap();
    assert_eq!(outcome.status, EndStatus::Completed);
    // Dev is 120 `same` and 120 `different` pairs, none of them a training pair: chance is 0.5 (macro-F1
    // 0.33 for one answer). This seed reaches 0.78, the same every run; a TF-IDF cosine threshold
    // gets 0.76.
    let best = outcome.best_metric.unwrap();
    eprintln!("best dev macro-F1 {best:.3}");
    assert!(best >= 0.6, "best dev macro-F1 {best:.3} is near chance");

    // The checkpoint says its task, and reads pairs back as training did: its metrics on the dev pairs
    // are the ones training reported for it.
    let dir = outcome.best_checkpoint.unwrap();
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("config.json")).unwrap()).unwrap();
    assert_eq!(config["paddock_task"], "matching");
    assert_eq!(config["architectures"][0], "ErnieForSequenceClassification");
    let loaded = trainer::checkpoint::load(&dir, tch::Device::Cpu, None).unwrap();
    assert_eq!(loaded.config.task(), Task::Matching);
    let text = std::fs::read_to_string(fixture("matching_dev.tsv")).unwrap();
    let labels = loaded.config.labels();
    let (items, gold): (Vec<_>, Vec<_>) = text
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (
                (f[0].to_string(), Some(f[1].to_string())),
                labels.iter().position(|x| x == f[2]),
            )
        })
        .unzip();
    let rows = encode_rows(&loaded.tokenizer, &items, Some(&gold), 48).unwrap();
    let inference = trainer::predict::Inference {
        model: &loaded.model,
        device: tch::Device::Cpu,
        precision: trainer::Precision::Fp32,
        pad_id: loaded.tokenizer.pad_id(),
        batch_size: 64,
    };
    let metrics = inference.evaluate(&rows, &labels, Task::Matching).unwrap();
    assert!(
        (metrics.macro_f1 - best).abs() < 1e-9,
        "reloaded {} vs {best}",
        metrics.macro_f1
    );
}

/// A matching job whose file lacks the second text is refused before anything is written, at the column;
/// a row without its second text is refused at its line.
#[test]
fn matching_data_needs_the_second_text_of_every_pair() {
    let tmp = tempfile::tempdir().unwrap();
    let mut job = matching_job(&tmp.path().join("run"));
    job.data.columns.text_pair = "question_b".into();
    let err = train(&job, &EventSink::memory(), &RunControl::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("question_b"), "{err}");
    assert!(!tmp.path().join("run").join("checkpoints").exists());

    let file = tmp.path().join("pairs.tsv");
    std::fs::write(
        &file,
        "text_a\ttext_b\tlabel\n怎么改密码\t密码忘了\tsame\n怎么挂失\t\tdifferent\n",
    )
    .unwrap();
    let mut opts = trainer::data::DataOptions {
        task: Task::Matching,
        ..Default::default()
    };
    opts.columns.text = "text_a".into();
    opts.columns.text_pair = "text_b".into();
    let v = trainer::data::validate_file(&file, &opts, None, None, None).unwrap();
    assert!(!v.report.ok);
    let issue = &v.report.errors[0];
    assert_eq!(
        (issue.line, issue.field.as_deref()),
        (Some(3), Some("text_b"))
    );
}

/// An entity job on the sample sentences: 2 layers of 64, 8 epochs, dev at each epoch's end.
fn entity_job(out: &Path) -> JobConfig {
    let toml = format!(
        r#"task = "ner"
[data]
train = {train:?}
dev = {dev:?}
[model]
preset = "tiny"
vocab_size = 3000
max_seq_len = 64
num_hidden_layers = 2
hidden_size = 64
num_attention_heads = 4
intermediate_size = 128
[train]
epochs = 8
batch_size = 32
lr = 3e-3
warmup_ratio = 0.1
seed = 42
threads = 1
device = "cpu"
log_every_steps = 50
[output]
dir = {out:?}
"#,
        train = fixture("entities_train.jsonl").display().to_string(),
        dev = fixture("entities_dev.conll").display().to_string(),
        out = out.display().to_string(),
    );
    JobConfig::from_toml_str(&toml).unwrap()
}

#[test]
fn an_entity_model_learns_tags_and_finds_entities_with_their_offsets() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let job = entity_job(&tmp.path().join("run"));
    assert_eq!(
        job.metric_for_best(),
        "f1",
        "entity F1 ranks an entity job's checkpoints"
    );
    let outcome = train(&job, &EventSink::memory(), &RunControl::default()).unwrap();
    assert_eq!(outcome.status, EndStatus::Completed);
    // Exact-span F1 over the dev entities (a quarter of their words never in training): a model that
    // tags nothing scores 0. This seed reaches about 0.61 in 8 epochs (0.76 in 20).
    let best = outcome.best_metric.unwrap();
    let dev = outcome.dev_metrics.unwrap();
    let entities = dev.entities.unwrap();
    eprintln!("best dev entity F1 {best:.3}; last {entities:?}");
    assert!(best >= 0.4, "best dev entity F1 {best:.3}");
    assert_eq!(
        entities.gold, 516,
        "the dev file's entities, read from CoNLL tags"
    );
    let types: Vec<&str> = dev.per_class.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(types, ["LOC", "ORG", "PER"]);

    // A transformers token classifier: BIO labels, no pooler, the task recorded.
    let dir = outcome.best_checkpoint.unwrap();
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("config.json")).unwrap()).unwrap();
    assert_eq!(config["architectures"][0], "ErnieForTokenClassification");
    assert_eq!(config["paddock_task"], "ner");
    assert_eq!(config["id2label"]["0"], "O");
    let loaded = trainer::checkpoint::load(&dir, tch::Device::Cpu, None).unwrap();
    assert_eq!(loaded.config.task(), Task::Ner);
    assert!(loaded.vs.variables().keys().all(|k| !k.contains("pooler")));

    // The entities it finds are spans of the text as given, in characters.
    let inference = trainer::predict::Inference {
        model: &loaded.model,
        device: tch::Device::Cpu,
        precision: trainer::Precision::Fp32,
        pad_id: loaded.tokenizer.pad_id(),
        batch_size: 8,
    };
    let text = "今天的会议没有讨论什么新问题。".to_string();
    let labels = loaded.config.labels();
    let asked = trainer::predict::Asked::new(
        Task::Ner,
        &loaded.tokenizer,
        vec![(text.clone(), None), ("  ".into(), None)],
        64,
    )
    .unwrap();
    let found: Vec<EntityPrediction> = inference
        .answer(&asked, &labels)
        .unwrap()
        .into_iter()
        .map(|answer| match answer {
            Answer::Entities(found) => found,
            Answer::Label(p) => panic!("an entity model answered a label: {p:?}"),
        })
        .collect();
    assert_eq!(found.len(), 2);
    // Each token's logits over the tags: what the parity gate compares.
    let tokens = found[0].logits.as_ref().unwrap();
    assert_eq!(tokens.len(), asked.rows[0].input_ids.len());
    assert!(tokens.iter().all(|t| t.len() == labels.len()));
    for e in &found[0].entities {
        let chars: String = text.chars().skip(e.start).take(e.end - e.start).collect();
        assert_eq!(chars, e.text);
        assert!(["LOC", "ORG", "PER"].contains(&e.label.as_str()), "{e:?}");
    }
    assert!(found[1].entities.is_empty(), "nothing in blank text");
}

/// Entity files are checked like the others: each problem at its line — a span past the text, two
/// spans that overlap, a type the model does not know, a CoNLL tag that is none — and nothing trains.
#[test]
fn entity_data_is_refused_at_the_line_of_each_problem() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("bad.jsonl");
    std::fs::write(
        &file,
        concat!(
            "{\"text\":\"张三\",\"entities\":[{\"start\":0,\"end\":2,\"label\":\"PER\"}]}\n",
            "{\"text\":\"李四\",\"entities\":[{\"start\":1,\"end\":5,\"label\":\"PER\"}]}\n",
            "{\"text\":\"王五在北京\",\"entities\":[{\"start\":0,\"end\":3,\"label\":\"PER\"},{\"start\":2,\"end\":5,\"label\":\"LOC\"}]}\n",
            "{\"text\":\"赵六\"}\n",
            "{\"text\":\"微软\",\"entities\":[{\"start\":0,\"end\":2,\"label\":\"COMPANY\"}]}\n",
        ),
    )
    .unwrap();
    let opts = trainer::data::DataOptions {
        task: Task::Ner,
        ..Default::default()
    };
    let known = trainer::data::LabelMap::new(trainer::data::entities::bio_labels(&[
        "LOC".into(),
        "PER".into(),
    ]))
    .unwrap();
    let v = trainer::data::validate_file(&file, &opts, Some(&known), None, None).unwrap();
    let problems: Vec<(Option<usize>, Option<&str>)> = v
        .report
        .errors
        .iter()
        .map(|i| (i.line, i.field.as_deref()))
        .collect();
    assert_eq!(
        problems,
        [2, 3, 4, 5].map(|l| (Some(l), Some("entities"))),
        "{:?}",
        v.report.errors
    );
    assert!(v.report.errors[1].message.contains("overlap"));
    assert!(v.report.errors[3].message.contains("COMPANY"));
    assert_eq!(v.report.label_distribution.get("PER"), Some(&1));

    let mut job = entity_job(&tmp.path().join("run"));
    job.data.dev = Some(tmp.path().join("bad.conll"));
    std::fs::write(
        tmp.path().join("bad.conll"),
        "张 B-PER\n三 I-PER\n\n北 B-LOC\n京 Q-LOC\n",
    )
    .unwrap();
    let err = train(&job, &EventSink::memory(), &RunControl::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("Q-LOC"), "{err}");
    assert!(!tmp.path().join("run").join("checkpoints").exists());
}
