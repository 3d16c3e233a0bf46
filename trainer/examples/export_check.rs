//! Writes Paddock checkpoints for `scripts/parity/check_roundtrip.py`, which loads them with transformers'
//! `AutoModelForSequenceClassification` / `AutoTokenizer` and compares input_ids and logits with the ones
//! recorded here. Two checkpoints: the ERNIE parity fixture relabelled to two classes (fresh classifier), and
//! a from-scratch `nano` model with a vocabulary built from the texts.
//!
//! Usage: `cargo run -p trainer --example export_check -- OUT_DIR`

use std::path::Path;

use tch::nn::VarStore;
use tch::{Device, Tensor};
use trainer::{checkpoint, ErnieConfig, TaskModel, Tokenizer};

const TEXTS: &[(&str, Option<&str>)] = &[
    ("今天天气很好，我们去北京看电影", None),
    ("这个模型的服务质量太差了！", Some("价格便宜")),
    ("Hello World, ERNIE 3.0 和 BERT", None),
    ("Café naïve 数据 2026", Some("人工智能学习")),
];

fn run(model: &TaskModel, tok: &Tokenizer) -> serde_json::Value {
    let encoded: Vec<_> = TEXTS
        .iter()
        .map(|(t, p)| tok.encode(t, *p, 64).unwrap())
        .collect();
    let s = encoded.iter().map(|e| e.input_ids.len()).max().unwrap();
    let (mut ids, mut mask, mut types) = (vec![], vec![], vec![]);
    for e in &encoded {
        let pad = s - e.input_ids.len();
        ids.extend(
            e.input_ids
                .iter()
                .copied()
                .chain(std::iter::repeat_n(tok.pad_id(), pad)),
        );
        types.extend(
            e.token_type_ids
                .iter()
                .copied()
                .chain(std::iter::repeat_n(0, pad)),
        );
        mask.extend(
            std::iter::repeat_n(1i64, e.input_ids.len()).chain(std::iter::repeat_n(0, pad)),
        );
    }
    let shape = [TEXTS.len() as i64, s as i64];
    let (ids, mask, types) = (
        Tensor::from_slice(&ids).view(shape),
        Tensor::from_slice(&mask).view(shape),
        Tensor::from_slice(&types).view(shape),
    );
    let inputs = trainer::Inputs {
        input_ids: &ids,
        attention_mask: &mask,
        token_type_ids: Some(&types),
        task_type_ids: None,
    };
    let logits = tch::no_grad(|| model.forward_t(inputs, false));
    let n = logits.size()[1] as usize;
    let flat: Vec<f64> = Vec::try_from(logits.to_kind(tch::Kind::Double).view([-1])).unwrap();
    serde_json::json!({
        "texts": TEXTS.iter().map(|(t, p)| serde_json::json!([t, p])).collect::<Vec<_>>(),
        "input_ids": encoded.iter().map(|e| e.input_ids.clone()).collect::<Vec<_>>(),
        "logits": flat.chunks(n).map(|c| c.to_vec()).collect::<Vec<_>>(),
    })
}

fn main() {
    let out = std::env::args()
        .nth(1)
        .expect("usage: export_check OUT_DIR");
    let out = Path::new(&out);
    std::fs::create_dir_all(out).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/parity/ernie");
    let labels = vec!["neg".to_string(), "pos".to_string()];
    let loaded = checkpoint::load(&fixture, Device::Cpu, Some(&labels)).unwrap();
    let saved = checkpoint::save(
        &out.join("relabelled"),
        &loaded.vs,
        &loaded.config,
        &loaded.tokenizer,
    )
    .unwrap();
    let mut report = serde_json::Map::new();
    report.insert("relabelled".into(), run(&loaded.model, &loaded.tokenizer));
    eprintln!(
        "wrote {} ({} bytes, sha256 {})",
        saved.dir.display(),
        saved.bytes,
        saved.sha256
    );

    let tok = Tokenizer::build_from_corpus(
        TEXTS.iter().flat_map(|(t, p)| [Some(*t), *p]).flatten(),
        500,
    )
    .unwrap();
    tch::manual_seed(3);
    let mut config = ErnieConfig::preset("nano", tok.vocab_size(), 3).unwrap();
    config.set_labels(&["a".into(), "b".into(), "c".into()]);
    let vs = VarStore::new(Device::Cpu);
    let model = TaskModel::new(&vs.root(), &config);
    let saved = checkpoint::save(&out.join("scratch_nano"), &vs, &config, &tok).unwrap();
    report.insert("scratch_nano".into(), run(&model, &tok));
    eprintln!("wrote {} ({} bytes)", saved.dir.display(), saved.bytes);
    std::fs::write(
        out.join("paddock_logits.json"),
        serde_json::to_string_pretty(&report).unwrap(),
    )
    .unwrap();
}
