#!/usr/bin/env python3
"""The Paddle side of Paddock's PaddleNLP import and export tests (trainer/tests/paddle.rs), run with the
pinned PaddleNLP of .venv-paddle (scripts/setup.sh paddle).

    fixtures.py make OUT           writes small PaddleNLP ERNIE directories with random weights under OUT,
                                   and OUT/expected.json: for each, the tokenizer's ids and what Paddle
                                   computes (logits, or the pooled output of a bare encoder) on TEXTS
    fixtures.py predict DIR        loads DIR with PaddleNLP's from_pretrained (as a team would, with the
                                   class its config names) and prints TEXTS, their ids and logits as JSON

The models cover what an import must handle: a classifier with task-type embeddings and relu; gelu
without them, saved in float16, three labels; a bare ErnieModel saved in bfloat16 with silu; the older
model_config.json layout with a protocol-2 pickle and tanh (PaddleNLP 2.4 / Paddle 2.x saves); a token
classifier with BIO tags; and the things it must refuse: another architecture (question answering), a
stray, a missing and a misshapen parameter, and a pickle that would run a command.
"""
import collections
import json
import os
import pickle
import sys
import warnings

warnings.filterwarnings("ignore")
os.environ.setdefault("GLOG_minloglevel", "3")

import numpy as np  # noqa: E402
import paddle  # noqa: E402
from paddlenlp.transformers import (  # noqa: E402
    ErnieConfig,
    ErnieForQuestionAnswering,
    ErnieForSequenceClassification,
    ErnieForTokenClassification,
    ErnieModel,
    ErnieTokenizer,
)

paddle.set_device("cpu")

TEXTS = [
    ["这家酒店的早餐很好吃，服务也周到。", None],
    ["电影太长了，剧情拖沓，不推荐。", None],
    ["物流很快", "包装有点破损，客服态度还行"],
    ["ERNIE 3.0 在中文任务上表现不错，GPU 训练只要 20 分钟！", None],
    ["好", None],
]
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def vocab():
    chars = sorted({c for pair in TEXTS for t in pair if t for c in t if not c.isspace() and not c.isascii()})
    words = ["ernie", "3", ".", "0", "gpu", "20", "!", ",", "##ie", "er", "##n"]
    return SPECIALS + chars + words


def config(**kw):
    base = dict(vocab_size=len(vocab()) + 7, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                intermediate_size=64, max_position_embeddings=128, initializer_range=0.2)
    base.update(kw)
    return ErnieConfig(**base)


def encode(tokenizer):
    enc = [tokenizer(t, text_pair=p, max_length=64, truncation=True) for t, p in TEXTS]
    width = max(len(e["input_ids"]) for e in enc)
    pad = lambda xs, v: xs + [v] * (width - len(xs))  # noqa: E731
    return {
        "input_ids": [pad(e["input_ids"], tokenizer.pad_token_id) for e in enc],
        "token_type_ids": [pad(e["token_type_ids"], 0) for e in enc],
        "attention_mask": [pad([1] * len(e["input_ids"]), 0) for e in enc],
    }


def run(model, batch):
    model.eval()
    with paddle.no_grad():
        args = {k: paddle.to_tensor(np.array(v, dtype="int64")) for k, v in batch.items()}
        out = model(**args)
    if isinstance(out, (tuple, list)):  # ErnieModel: (sequence_output, pooled_output)
        return {"pooled": out[1].numpy().astype("float64").tolist()}
    return {"logits": out.numpy().astype("float64").tolist()}


def in_float32(cls, cfg, directory):
    """What Paddle computes from the saved weights, in float32: a float16 model cannot run on Paddle's CPU
    kernels, and a bfloat16 one would round every activation; Paddock, too, imports into float32."""
    state = pickle.load(open(os.path.join(directory, "model_state.pdparams"), "rb"))
    model = cls(cfg)
    floats = {}
    for k, v in state.items():
        if k.endswith("@@"):
            continue
        if v.dtype == np.uint16:  # bfloat16, as Paddle saves it
            v = (v.astype(np.uint32) << 16).view(np.float32)
        floats[k] = v.astype(np.float32)
    missing, unexpected = model.set_state_dict(floats)
    assert not missing and not unexpected, (missing, unexpected)
    return model


def make(out):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "vocab.txt"), "w") as f:
        f.write("\n".join(vocab()) + "\n")
    tokenizer = ErnieTokenizer(os.path.join(out, "vocab.txt"))
    batch = encode(tokenizer)
    expected = {"texts": TEXTS, "batch": batch, "models": {}}

    def save(name, cls, cfg, dtype="float32", seed=0):
        paddle.seed(seed)
        model = cls(cfg)
        directory = os.path.join(out, name)
        if dtype != "float32":
            model.to(dtype=dtype)
        model.save_pretrained(directory)
        tokenizer.save_pretrained(directory)
        expected["models"][name] = run(in_float32(cls, cfg, directory), batch)
        return directory

    save("cls_relu_task", ErnieForSequenceClassification,
         config(hidden_act="relu", use_task_id=True, type_vocab_size=2, num_labels=2,
                id2label={0: "负面", 1: "正面"}, label2id={"负面": 0, "正面": 1}))
    save("cls_gelu_fp16", ErnieForSequenceClassification, config(num_labels=3), dtype="float16", seed=1)
    save("bare_silu_bf16", ErnieModel, config(hidden_act="silu", use_task_id=True), dtype="bfloat16", seed=2)

    # PaddleNLP 2.4 and Paddle 2.x: model_config.json with init_args, a protocol-2 pickle (and tanh).
    directory = save("legacy_p2", ErnieForSequenceClassification, config(num_labels=2, hidden_act="tanh"), seed=3)
    cfg = json.load(open(os.path.join(directory, "config.json")))
    os.remove(os.path.join(directory, "config.json"))
    encoder = {k: v for k, v in cfg.items() if k not in ("architectures", "id2label", "label2id", "num_labels")}
    encoder["init_class"] = "ErnieModel"
    legacy = {"init_args": [encoder], "init_class": "ErnieForSequenceClassification", "num_classes": 2}
    json.dump(legacy, open(os.path.join(directory, "model_config.json"), "w"))
    state = paddle.load(os.path.join(directory, "model_state.pdparams"))
    paddle.save(state, os.path.join(directory, "model_state.pdparams"), protocol=2)

    # An entity tagger: logits per token, BIO names; PaddleNLP keeps a pooler it never uses.
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    save("token_classifier", ErnieForTokenClassification,
         config(num_labels=5, id2label=dict(enumerate(tags)), label2id={t: i for i, t in enumerate(tags)}), seed=4)

    # Refused: another architecture, and three damaged copies of the first model.
    save("question_answering", ErnieForQuestionAnswering, config(), seed=5)
    source = os.path.join(out, "cls_relu_task")
    original = pickle.load(open(os.path.join(source, "model_state.pdparams"), "rb"))

    def damaged(name, change):
        directory = os.path.join(out, name)
        os.makedirs(directory, exist_ok=True)
        for f in os.listdir(source):
            if f != "model_state.pdparams":
                with open(os.path.join(source, f), "rb") as src, open(os.path.join(directory, f), "wb") as dst:
                    dst.write(src.read())
        state = collections.OrderedDict(original)
        change(state)
        with open(os.path.join(directory, "model_state.pdparams"), "wb") as f:
            pickle.dump(state, f, protocol=4)

    def stray(s):
        s["ernie.encoder.layers.0.self_attn.qkv_proj.weight"] = np.zeros((32, 96), np.float32)

    def missing(s):
        del s["ernie.encoder.layers.1.norm2.bias"]

    def misshapen(s):
        s["ernie.encoder.layers.0.linear1.weight"] = np.zeros((64, 32), np.float32)

    damaged("stray_parameter", stray)
    damaged("missing_parameter", missing)
    damaged("misshapen_parameter", misshapen)

    class Runs:
        def __reduce__(self):
            return (os.system, ("touch " + os.path.join(out, "pwned"),))

    damaged("runs_a_command", lambda s: s.__setitem__("ernie.pooler.dense.bias", Runs()))

    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, ensure_ascii=False)


def predict(directory):
    tokenizer = ErnieTokenizer.from_pretrained(directory)
    architecture = json.load(open(os.path.join(directory, "config.json")))["architectures"][0]
    cls = {"ErnieForSequenceClassification": ErnieForSequenceClassification,
           "ErnieForTokenClassification": ErnieForTokenClassification}[architecture]
    model = cls.from_pretrained(directory)
    batch = encode(tokenizer)
    print(json.dumps({"texts": TEXTS, "batch": batch, **run(model, batch)}, ensure_ascii=False))


if __name__ == "__main__":
    command, path = sys.argv[1], sys.argv[2]
    {"make": make, "predict": predict}[command](path)
