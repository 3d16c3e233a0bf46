//! Parity with Python transformers on the golden fixtures of `scripts/parity/make_fixtures.py`: identical
//! input_ids / token_type_ids and logits within 1e-4 for an ERNIE model with task-type embeddings and a
//! BERT model without; the pickled `pytorch_model.bin` loader; the save → load round trip; and the loader's
//! handling of missing and surplus tensors.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tch::{Device, Kind, Tensor};
use trainer::{checkpoint, Inputs};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/parity")
}

fn expected() -> Value {
    let text = std::fs::read_to_string(fixtures().join("expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn model_fixture(dir: &str) -> Value {
    expected()["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["dir"] == dir)
        .unwrap()
        .clone()
}

fn int_tensor(v: &Value) -> Tensor {
    let rows: Vec<Vec<i64>> = serde_json::from_value(v.clone()).unwrap();
    let (b, s) = (rows.len() as i64, rows[0].len() as i64);
    Tensor::from_slice(&rows.concat()).view([b, s])
}

fn float_rows(t: &Tensor) -> Vec<Vec<f64>> {
    let t = t.to_kind(Kind::Double).contiguous();
    let cols = t.size()[1] as usize;
    let flat: Vec<f64> = Vec::try_from(t.view([-1])).unwrap();
    flat.chunks(cols).map(|c| c.to_vec()).collect()
}

/// Largest absolute difference between the model's logits and the fixture's, over every batch.
fn max_logit_error(model: &trainer::TaskModel, fixture: &Value) -> f64 {
    let mut worst = 0.0f64;
    for batch in fixture["batches"].as_array().unwrap() {
        let ids = int_tensor(&batch["input_ids"]);
        let mask = int_tensor(&batch["attention_mask"]);
        let types = int_tensor(&batch["token_type_ids"]);
        let tasks =
            (!batch["task_type_ids"].is_null()).then(|| int_tensor(&batch["task_type_ids"]));
        let inputs = Inputs {
            input_ids: &ids,
            attention_mask: &mask,
            token_type_ids: Some(&types),
            task_type_ids: tasks.as_ref(),
        };
        let logits = tch::no_grad(|| model.forward_t(inputs, false));
        // A token head's logits are compared on real tokens only: transformers' values at padded
        // positions are not an output anyone reads (and Paddock's unpadded encoder leaves zeros there).
        let (got, want) = if logits.dim() == 3 {
            let real: Vec<i64> = Vec::try_from(mask.view(-1)).unwrap();
            let keep = |rows: Vec<Vec<f64>>| -> Vec<Vec<f64>> {
                rows.into_iter()
                    .zip(&real)
                    .filter(|(_, &m)| m == 1)
                    .map(|(r, _)| r)
                    .collect()
            };
            let l = logits.size()[2];
            let want: Vec<Vec<Vec<f64>>> = serde_json::from_value(batch["logits"].clone()).unwrap();
            (
                keep(float_rows(&logits.reshape([-1, l]))),
                keep(want.concat()),
            )
        } else {
            let want: Vec<Vec<f64>> = serde_json::from_value(batch["logits"].clone()).unwrap();
            (float_rows(&logits), want)
        };
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.len(), w.len());
            for (a, b) in g.iter().zip(w) {
                worst = worst.max((a - b).abs());
            }
        }
    }
    worst
}

fn check_tokenizer(dir: &str) {
    let fixture = model_fixture(dir);
    let tok = trainer::Tokenizer::from_dir(&fixtures().join(dir)).unwrap();
    let mut items = Vec::new();
    for case in fixture["cases"].as_array().unwrap() {
        let text = case["text"].as_str().unwrap();
        let pair = case["pair"].as_str();
        let max_len = case["max_len"].as_u64().unwrap() as usize;
        let enc = tok.encode(text, pair, max_len).unwrap();
        let want_ids: Vec<i64> = serde_json::from_value(case["input_ids"].clone()).unwrap();
        let want_types: Vec<i64> = serde_json::from_value(case["token_type_ids"].clone()).unwrap();
        assert_eq!(
            enc.input_ids, want_ids,
            "{dir}: input_ids of {text:?} / {pair:?}"
        );
        assert_eq!(
            enc.token_type_ids, want_types,
            "{dir}: token_type_ids of {text:?} / {pair:?}"
        );
        items.push((text.to_string(), pair.map(String::from)));
    }
    // The parallel batch path gives the same results, in order.
    let batch = tok.encode_batch(&items, 40).unwrap();
    for (enc, (text, pair)) in batch.iter().zip(&items) {
        assert_eq!(enc, &tok.encode(text, pair.as_deref(), 40).unwrap());
    }
}

/// transformers' `ErnieForTokenClassification` (no pooler) loads as Paddock's token head, with every
/// parameter used, and gives the same logits for every real token.
#[test]
fn ernie_token_classifier_logits_match_transformers() {
    check_logits("ernie_tokens", "ernie_tokens");
    let loaded = checkpoint::load(&fixtures().join("ernie_tokens"), Device::Cpu, None).unwrap();
    assert_eq!(loaded.model.head(), trainer::task::Head::Token);
    assert!(loaded.model.ernie().pooler.is_none());
    assert_eq!(
        loaded.config.labels(),
        ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    );
}

#[test]
fn ernie_tokenizer_matches_transformers() {
    check_tokenizer("ernie");
}

#[test]
fn bert_tokenizer_matches_transformers() {
    check_tokenizer("bert");
}

fn check_logits(dir: &str, fixture_name: &str) {
    let fixture = model_fixture(fixture_name);
    let mut loaded = checkpoint::load(&fixtures().join(dir), Device::Cpu, None).unwrap();
    assert!(loaded.report.missing.is_empty(), "{:?}", loaded.report);
    assert!(loaded.report.unexpected.is_empty(), "{:?}", loaded.report);
    let err = max_logit_error(&loaded.model, &fixture);
    assert!(
        err < 1e-4,
        "{dir}: float32 logits differ from transformers by {err}"
    );
    // In float64 the only differences left are summation order: a much tighter bound.
    loaded.vs.double();
    let err = max_logit_error(&loaded.model, &fixture);
    assert!(
        err < 1e-9,
        "{dir}: float64 logits differ from transformers by {err}"
    );
}

#[test]
fn ernie_logits_match_transformers() {
    check_logits("ernie", "ernie");
}

#[test]
fn bert_logits_match_transformers() {
    let loaded = checkpoint::load(&fixtures().join("bert"), Device::Cpu, None).unwrap();
    assert_eq!(loaded.config.model_type, "bert");
    assert!(loaded
        .vs
        .variables()
        .keys()
        .all(|k| k.starts_with("bert.") || k.starts_with("classifier.")));
    assert!(!loaded.config.use_task_id);
    check_logits("bert", "bert");
}

/// libtorch's C++ unpickler cannot read the state dicts Python's `torch.save` writes (an OrderedDict);
/// the loader must say so clearly, naming the file, instead of crashing.
#[test]
fn unreadable_pickled_state_dict_is_a_clear_error() {
    let err = checkpoint::load(&fixtures().join("bert_bin"), Device::Cpu, None)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("bert_bin/pytorch_model.bin") && err.contains("safetensors"),
        "{err}"
    );
    assert!(
        !err.contains("frame #"),
        "the libtorch backtrace leaked into the message: {err}"
    );
}

#[test]
fn cls_only_last_layer_equals_full_forward() {
    let loaded = checkpoint::load(&fixtures().join("ernie"), Device::Cpu, None).unwrap();
    let batch = &model_fixture("ernie")["batches"][1];
    let ids = int_tensor(&batch["input_ids"]);
    let mask = int_tensor(&batch["attention_mask"]);
    let tasks = int_tensor(&batch["task_type_ids"]);
    let ernie = loaded.model.ernie();
    let inputs = Inputs {
        input_ids: &ids,
        attention_mask: &mask,
        token_type_ids: None,
        task_type_ids: Some(&tasks),
    };
    let full = tch::no_grad(|| ernie.forward_t(inputs, false));
    let cls = tch::no_grad(|| ernie.forward_pooled_t(inputs, false));
    assert_eq!(cls.sequence_output.size(), vec![ids.size()[0], 1, 24]);
    let diff = (full.sequence_output.narrow(1, 0, 1) - &cls.sequence_output)
        .abs()
        .max()
        .double_value(&[]);
    assert!(diff < 1e-5, "{diff}");
    let diff = (full.pooled_output.unwrap() - cls.pooled_output.unwrap())
        .abs()
        .max()
        .double_value(&[]);
    assert!(diff < 1e-5, "{diff}");
}

#[test]
fn save_then_load_round_trips() {
    let src = checkpoint::load(&fixtures().join("ernie"), Device::Cpu, None).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("ckpt");
    let saved = checkpoint::save(&out, &src.vs, &src.config, &src.tokenizer).unwrap();
    assert_eq!(saved.dir, out);
    let names: Vec<&str> = saved.files.iter().map(|f| f.0.as_str()).collect();
    for f in [
        "config.json",
        "model.safetensors",
        "special_tokens_map.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "vocab.txt",
    ] {
        assert!(names.contains(&f), "{f} missing from {names:?}");
    }
    let bytes = std::fs::read(out.join("model.safetensors")).unwrap();
    use sha2::Digest;
    assert_eq!(saved.sha256, hex::encode(sha2::Sha256::digest(&bytes)));
    assert_eq!(saved.bytes, saved.files.iter().map(|f| f.1).sum::<u64>());
    // Nothing but the checkpoint is left next to it (no temporary directories).
    let siblings: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(siblings, vec![std::ffi::OsString::from("ckpt")]);

    let again = checkpoint::load(&out, Device::Cpu, None).unwrap();
    assert_eq!(
        again.config.labels(),
        vec!["negative", "neutral", "positive"]
    );
    assert_eq!(
        again.config.architectures,
        vec!["ErnieForSequenceClassification"]
    );
    assert_eq!(again.tokenizer.vocab(), src.tokenizer.vocab());
    let a = src.vs.variables();
    let b = again.vs.variables();
    assert_eq!(a.len(), b.len());
    for (name, t) in &a {
        assert!(t.equal(&b[name]), "{name} changed in the round trip");
    }
    assert!(max_logit_error(&again.model, &model_fixture("ernie")) < 1e-4);

    // Saving over an existing checkpoint replaces it whole.
    let resaved = checkpoint::save(&out, &again.vs, &again.config, &again.tokenizer).unwrap();
    assert_eq!(resaved.sha256, saved.sha256);
    let siblings: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert_eq!(siblings.len(), 1);
}

/// Copies the ERNIE fixture into `dst`, with its weights rewritten by `edit`.
fn edited_copy(
    dst: &Path,
    edit: impl FnOnce(&mut HashMap<String, (safetensors::Dtype, Vec<usize>, Vec<u8>)>),
) {
    let src = fixtures().join("ernie");
    std::fs::create_dir_all(dst).unwrap();
    for f in ["config.json", "vocab.txt", "tokenizer_config.json"] {
        std::fs::copy(src.join(f), dst.join(f)).unwrap();
    }
    let bytes = std::fs::read(src.join("model.safetensors")).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut map: HashMap<String, (safetensors::Dtype, Vec<usize>, Vec<u8>)> = st
        .tensors()
        .into_iter()
        .map(|(n, v)| (n, (v.dtype(), v.shape().to_vec(), v.data().to_vec())))
        .collect();
    edit(&mut map);
    let views: Vec<(String, safetensors::tensor::TensorView)> = map
        .iter()
        .map(|(n, (d, s, b))| {
            (
                n.clone(),
                safetensors::tensor::TensorView::new(*d, s.clone(), b).unwrap(),
            )
        })
        .collect();
    safetensors::tensor::serialize_to_file(views, &None, &dst.join("model.safetensors")).unwrap();
}

#[test]
fn missing_head_is_initialised_and_extra_tensors_tolerated() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("encoder_only");
    edited_copy(&dir, |m| {
        m.retain(|k, _| !k.starts_with("classifier.") && !k.starts_with("ernie.pooler."));
        let q = m["ernie.encoder.layer.0.attention.self.query.weight"].clone();
        m.insert(
            "ernie.encoder.layer.7.attention.self.query.weight".into(),
            q,
        );
        m.insert(
            "cls.predictions.bias".into(),
            (safetensors::Dtype::F32, vec![2], vec![0; 8]),
        );
        // Old-style LayerNorm names map onto the current ones.
        let w = m.remove("ernie.embeddings.LayerNorm.weight").unwrap();
        m.insert("ernie.embeddings.LayerNorm.gamma".into(), w);
    });
    let loaded = checkpoint::load(&dir, Device::Cpu, None).unwrap();
    let r = &loaded.report;
    assert_eq!(
        r.missing,
        vec![
            "classifier.bias",
            "classifier.weight",
            "ernie.pooler.dense.bias",
            "ernie.pooler.dense.weight"
        ]
    );
    assert_eq!(r.initialised, r.missing);
    assert_eq!(
        r.unexpected,
        vec![
            "cls.predictions.bias",
            "ernie.encoder.layer.7.attention.self.query.weight"
        ]
    );
    let ln = &loaded.vs.variables()["ernie.embeddings.LayerNorm.weight"];
    assert!(
        ln.ne(1.0).any().int64_value(&[]) == 1,
        "gamma was not loaded into LayerNorm.weight"
    );

    // A different label count keeps the encoder and re-initialises the classifier.
    let labels: Vec<String> = vec!["a".into(), "b".into()];
    let relabelled =
        checkpoint::load(&fixtures().join("ernie"), Device::Cpu, Some(&labels)).unwrap();
    assert_eq!(relabelled.config.num_labels, 2);
    assert_eq!(
        relabelled.report.initialised,
        vec!["classifier.bias", "classifier.weight"]
    );
    assert!(relabelled.report.missing.is_empty());
    assert_eq!(
        relabelled.vs.variables()["classifier.weight"].size(),
        vec![2, 24]
    );
}

#[test]
fn missing_encoder_tensors_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("broken");
    edited_copy(&dir, |m| {
        m.remove("ernie.encoder.layer.1.attention.self.query.weight");
        m.remove("ernie.embeddings.task_type_embeddings.weight");
    });
    let err = match checkpoint::load(&dir, Device::Cpu, None) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("a checkpoint without encoder weights loaded"),
    };
    assert!(err.contains("2 required tensor(s) missing"), "{err}");
    assert!(
        err.contains("ernie.encoder.layer.1.attention.self.query.weight"),
        "{err}"
    );
    assert!(
        err.contains("ernie.embeddings.task_type_embeddings.weight"),
        "{err}"
    );

    let dir = tmp.path().join("wrong_shape");
    edited_copy(&dir, |m| {
        m.insert(
            "ernie.pooler.dense.bias".into(),
            (safetensors::Dtype::F32, vec![3], vec![0; 12]),
        );
    });
    let err = checkpoint::load(&dir, Device::Cpu, None)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("ernie.pooler.dense.bias") && err.contains("[3]"),
        "{err}"
    );

    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let err = checkpoint::load(&empty, Device::Cpu, None)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("config.json"), "{err}");
}

#[test]
fn unpadded_and_padded_paths_agree() {
    // The fixture batches have padding, so the default path packs them; the padded path must agree
    // (float64, so only summation order differs).
    let mut loaded = checkpoint::load(&fixtures().join("ernie"), Device::Cpu, None).unwrap();
    loaded.vs.double();
    let fixture = model_fixture("ernie");
    let packed = max_logit_error(&loaded.model, &fixture);
    loaded.model.ernie_mut().unpad = false;
    let padded = max_logit_error(&loaded.model, &fixture);
    assert!(
        packed < 1e-9 && padded < 1e-9,
        "packed {packed}, padded {padded}"
    );
    let batch = &fixture["batches"][0];
    let mask = int_tensor(&batch["attention_mask"]);
    assert!(
        trainer::model::encoder::Packing::new(&mask).is_some(),
        "fixture batch 0 should be packable"
    );
}
