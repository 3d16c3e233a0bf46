//! Finite-difference gradient check of the classification model in float64: autograd's gradient of the
//! cross-entropy loss must match central differences for a sample of entries of every parameter, with
//! padding and task types in the batch. Also checks that the padding row of the word embeddings gets no
//! gradient, as with `nn.Embedding(padding_idx=pad_token_id)` in transformers.

use tch::nn::VarStore;
use tch::{Device, Kind, Tensor};
use trainer::{ErnieConfig, ErnieForSequenceClassification, Inputs};

fn tiny_config(model_type: &str) -> ErnieConfig {
    let text = format!(
        r#"{{"model_type":"{model_type}","vocab_size":20,"hidden_size":8,"num_hidden_layers":2,
        "num_attention_heads":2,"intermediate_size":12,"max_position_embeddings":16,"type_vocab_size":2,
        "use_task_id":{},"task_type_vocab_size":3,"layer_norm_eps":1e-5,"num_labels":3,
        "hidden_dropout_prob":0.0,"attention_probs_dropout_prob":0.0,"initializer_range":0.5}}"#,
        model_type == "ernie"
    );
    ErnieConfig::from_json_str(&text).unwrap()
}

fn check(model_type: &str) {
    tch::manual_seed(7);
    let config = tiny_config(model_type);
    let mut vs = VarStore::new(Device::Cpu);
    let model = ErnieForSequenceClassification::new(&vs.root(), &config);
    vs.double();
    // LayerNorm parameters start at 1/0; perturb them so their gradients are generic.
    tch::no_grad(|| {
        for (name, t) in vs.variables() {
            if name.contains("LayerNorm") || name.ends_with("bias") {
                let _ = t.shallow_clone().g_add_(&(t.randn_like() * 0.3));
            }
        }
    });
    let ids = Tensor::from_slice(&[2i64, 5, 7, 9, 3, 0, 2, 11, 12, 13, 14, 3]).view([2, 6]);
    let mask = Tensor::from_slice(&[1i64, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1]).view([2, 6]);
    let types = Tensor::from_slice(&[0i64, 0, 0, 1, 1, 0, 0, 0, 1, 1, 1, 1]).view([2, 6]);
    let tasks = Tensor::from_slice(&[0i64, 1, 2, 1, 0, 0, 2, 2, 1, 0, 1, 2]).view([2, 6]);
    let labels = Tensor::from_slice(&[2i64, 0]);
    let tasks = (model_type == "ernie").then_some(tasks);
    let loss = || {
        model
            .forward_t(
                Inputs {
                    input_ids: &ids,
                    attention_mask: &mask,
                    token_type_ids: Some(&types),
                    task_type_ids: tasks.as_ref(),
                },
                true,
            )
            .cross_entropy_loss::<Tensor>(&labels, None, tch::Reduction::Mean, -100, 0.0)
    };

    let l = loss();
    assert_eq!(l.kind(), Kind::Double);
    l.backward();
    let eps = 1e-6;
    let mut checked = 0;
    let mut vars: Vec<(String, Tensor)> = vs.variables().into_iter().collect();
    vars.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, var) in &vars {
        let grad = var.grad();
        let flat_grad = grad.view([-1]);
        let numel = var.numel() as i64;
        let is_words = name.ends_with("word_embeddings.weight");
        if is_words {
            let pad_row = grad.get(config.pad_token_id);
            assert_eq!(
                pad_row.abs().sum(Kind::Double).double_value(&[]),
                0.0,
                "padding row got a gradient"
            );
        }
        // A few entries spread over the tensor, skipping the padding row of the word embeddings.
        let picks: Vec<i64> = (0..4).map(|k| (k * 7919 + 3) % numel).collect();
        for &i in &picks {
            if is_words && i / config.hidden_size as i64 == config.pad_token_id {
                continue;
            }
            let mut flat = var.view([-1]);
            let orig = flat.double_value(&[i]);
            let at = |v: f64, flat: &mut Tensor| {
                tch::no_grad(|| {
                    let _ = flat.get(i).fill_(v);
                });
                tch::no_grad(loss).double_value(&[])
            };
            let plus = at(orig + eps, &mut flat);
            let minus = at(orig - eps, &mut flat);
            at(orig, &mut flat);
            let numeric = (plus - minus) / (2.0 * eps);
            let analytic = flat_grad.double_value(&[i]);
            let tol = 1e-6 + 1e-5 * numeric.abs().max(analytic.abs());
            assert!(
                (numeric - analytic).abs() < tol,
                "{model_type} {name}[{i}]: autograd {analytic:e} vs finite difference {numeric:e}"
            );
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} entries checked");
}

#[test]
fn ernie_gradients_match_finite_differences() {
    check("ernie");
}

#[test]
fn bert_gradients_match_finite_differences() {
    check("bert");
}
