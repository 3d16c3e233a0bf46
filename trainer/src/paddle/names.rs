//! PaddleNLP's ERNIE parameter names and the Hugging Face ones Paddock's model uses, both ways: the
//! encoder's layers are `encoder.layers.N.self_attn.q_proj` in Paddle and
//! `encoder.layer.N.attention.self.query` in Hugging Face, and every Linear weight is stored `[in, out]`
//! by Paddle but `[out, in]` by PyTorch, so it is transposed on the way. Embeddings, LayerNorms and
//! biases keep their layout. One table serves import and export, so the two cannot drift apart.

/// How an array is laid out on the other side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// As it is.
    Same,
    /// A Linear weight: `[in, out]` in Paddle, `[out, in]` in Hugging Face.
    Transposed,
}

/// (Paddle, Hugging Face, whether it is a Linear), without the `ernie.` prefix of a task model; `{}` is
/// the layer number. A Linear's weight is transposed, its bias is not.
const TABLE: &[(&str, &str, bool)] = &[
    (
        "embeddings.word_embeddings",
        "embeddings.word_embeddings",
        false,
    ),
    (
        "embeddings.position_embeddings",
        "embeddings.position_embeddings",
        false,
    ),
    (
        "embeddings.token_type_embeddings",
        "embeddings.token_type_embeddings",
        false,
    ),
    (
        "embeddings.task_type_embeddings",
        "embeddings.task_type_embeddings",
        false,
    ),
    ("embeddings.layer_norm", "embeddings.LayerNorm", false),
    (
        "encoder.layers.{}.self_attn.q_proj",
        "encoder.layer.{}.attention.self.query",
        true,
    ),
    (
        "encoder.layers.{}.self_attn.k_proj",
        "encoder.layer.{}.attention.self.key",
        true,
    ),
    (
        "encoder.layers.{}.self_attn.v_proj",
        "encoder.layer.{}.attention.self.value",
        true,
    ),
    (
        "encoder.layers.{}.self_attn.out_proj",
        "encoder.layer.{}.attention.output.dense",
        true,
    ),
    (
        "encoder.layers.{}.norm1",
        "encoder.layer.{}.attention.output.LayerNorm",
        false,
    ),
    (
        "encoder.layers.{}.linear1",
        "encoder.layer.{}.intermediate.dense",
        true,
    ),
    (
        "encoder.layers.{}.linear2",
        "encoder.layer.{}.output.dense",
        true,
    ),
    (
        "encoder.layers.{}.norm2",
        "encoder.layer.{}.output.LayerNorm",
        false,
    ),
    ("pooler.dense", "pooler.dense", true),
];

/// The classification head, at the top of a task model on both sides.
const HEAD: &str = "classifier";

/// The Hugging Face name of a PaddleNLP ERNIE parameter and how its array is laid out there; `None` for
/// a name no ERNIE has (another architecture, or a part Paddock does not load).
pub fn to_hf(paddle: &str) -> Option<(String, Layout)> {
    translate(paddle, |(p, h, linear)| (p, h, linear))
}

/// The PaddleNLP name of a Hugging Face ERNIE parameter (for export), and how its array is laid out
/// there.
pub fn to_paddle(hf: &str) -> Option<(String, Layout)> {
    translate(hf, |(p, h, linear)| (h, p, linear))
}

fn translate(
    name: &str,
    direction: impl Fn((&'static str, &'static str, bool)) -> (&'static str, &'static str, bool),
) -> Option<(String, Layout)> {
    let (module, leaf) = name.rsplit_once('.')?;
    if !matches!(leaf, "weight" | "bias") {
        return None;
    }
    let layout = |linear: bool| match (linear, leaf) {
        (true, "weight") => Layout::Transposed,
        _ => Layout::Same,
    };
    if module == HEAD {
        return Some((name.to_string(), layout(true)));
    }
    let (prefix, inner) = match module.strip_prefix("ernie.") {
        Some(inner) => ("ernie.", inner),
        None => ("", module),
    };
    for &row in TABLE {
        let (from, to, linear) = direction(row);
        if let Some(layer) = matches(from, inner) {
            let to = to.replace("{}", &layer);
            return Some((format!("{prefix}{to}.{leaf}"), layout(linear)));
        }
    }
    None
}

/// Whether `name` is `pattern` (with `{}` standing for a layer number); the layer number, or an empty
/// string for a pattern without one.
fn matches(pattern: &str, name: &str) -> Option<String> {
    match pattern.split_once("{}") {
        None => (pattern == name).then(String::new),
        Some((before, after)) => {
            let layer = name.strip_prefix(before)?.strip_suffix(after)?;
            (!layer.is_empty() && layer.bytes().all(|b| b.is_ascii_digit()))
                .then(|| layer.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paddle_names_map_to_hugging_face_and_back() {
        let cases = [
            (
                "ernie.embeddings.word_embeddings.weight",
                "ernie.embeddings.word_embeddings.weight",
                Layout::Same,
            ),
            (
                "ernie.embeddings.task_type_embeddings.weight",
                "ernie.embeddings.task_type_embeddings.weight",
                Layout::Same,
            ),
            (
                "ernie.embeddings.layer_norm.bias",
                "ernie.embeddings.LayerNorm.bias",
                Layout::Same,
            ),
            (
                "ernie.encoder.layers.0.self_attn.q_proj.weight",
                "ernie.encoder.layer.0.attention.self.query.weight",
                Layout::Transposed,
            ),
            (
                "ernie.encoder.layers.11.self_attn.out_proj.bias",
                "ernie.encoder.layer.11.attention.output.dense.bias",
                Layout::Same,
            ),
            (
                "ernie.encoder.layers.3.norm1.weight",
                "ernie.encoder.layer.3.attention.output.LayerNorm.weight",
                Layout::Same,
            ),
            (
                "ernie.encoder.layers.3.linear1.weight",
                "ernie.encoder.layer.3.intermediate.dense.weight",
                Layout::Transposed,
            ),
            (
                "ernie.encoder.layers.3.linear2.weight",
                "ernie.encoder.layer.3.output.dense.weight",
                Layout::Transposed,
            ),
            (
                "ernie.encoder.layers.3.norm2.bias",
                "ernie.encoder.layer.3.output.LayerNorm.bias",
                Layout::Same,
            ),
            (
                "ernie.pooler.dense.weight",
                "ernie.pooler.dense.weight",
                Layout::Transposed,
            ),
            ("classifier.weight", "classifier.weight", Layout::Transposed),
            ("classifier.bias", "classifier.bias", Layout::Same),
            // The bare encoder (`ErnieModel`) has no `ernie.` prefix on either side.
            (
                "encoder.layers.1.self_attn.v_proj.weight",
                "encoder.layer.1.attention.self.value.weight",
                Layout::Transposed,
            ),
            (
                "embeddings.position_embeddings.weight",
                "embeddings.position_embeddings.weight",
                Layout::Same,
            ),
        ];
        for (paddle, hf, layout) in cases {
            assert_eq!(to_hf(paddle), Some((hf.to_string(), layout)), "{paddle}");
            assert_eq!(to_paddle(hf), Some((paddle.to_string(), layout)), "{hf}");
        }
    }

    #[test]
    fn names_no_ernie_has_are_not_guessed() {
        for name in [
            "ernie.encoder.layers.x.linear1.weight",
            "ernie.encoder.layers..linear1.weight",
            "ernie.encoder.layers.0.linear3.weight",
            "bert.embeddings.word_embeddings.weight",
            "ernie.embeddings.word_embeddings.weight_scale",
            "lm_head.decoder.weight",
            "weight",
        ] {
            assert_eq!(to_hf(name), None, "{name}");
        }
    }
}
