"""`make bench-serve`'s Python baseline: the usual naive way to serve a Hugging Face classifier.

FastAPI + uvicorn (one worker process), transformers `ErnieForSequenceClassification.from_pretrained(dir)`
and the tokenizer of the same directory (`AutoTokenizer`: the fast BertTokenizer from tokenizer.json),
truncation at the length the checkpoint was trained with (`trainer_state.json` `max_seq_len`, else 512),
fp32 on the CPU under `torch.no_grad()`, one request = one forward pass (no batching across requests).
The wire format is `paddock serve-model`'s: `POST /predict` `{"inputs": ["…"]}` → `{"predictions":
[{"label", "label_id", "probabilities"}], "batch_rows", "batch_requests"}`; `GET /health`.

The handler is a plain `def`, so FastAPI runs it on its thread pool and requests overlap (libtorch releases
the GIL during the forward pass); `--serial` makes it `async def` instead, one forward pass at a time on the
event loop. It prints `listening on http://ADDR` once the model is loaded and warmed up, like Paddock.

    .venv-parity/bin/python scripts/bench/serve_baseline.py --model DIR --bind 127.0.0.1:0 --threads 2
"""

import argparse
import json
import os
import socket
import sys


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a Hugging Face model directory")
    parser.add_argument("--bind", default="127.0.0.1:0", help="HOST:PORT; port 0 picks a free one")
    parser.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    parser.add_argument("--serial", action="store_true", help="async handler: one forward pass at a time")
    args = parser.parse_args()

    import torch
    import uvicorn
    from fastapi import FastAPI, HTTPException
    from pydantic import BaseModel
    from transformers import AutoTokenizer, ErnieForSequenceClassification

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    model = ErnieForSequenceClassification.from_pretrained(args.model).eval()
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    max_len = 512
    state = os.path.join(args.model, "trainer_state.json")
    if os.path.exists(state):
        with open(state, encoding="utf-8") as f:
            max_len = json.load(f).get("max_seq_len", max_len)
    max_len = min(max_len, model.config.max_position_embeddings)
    labels = [model.config.id2label[i] for i in range(model.config.num_labels)]

    def predict_texts(texts: list) -> dict:
        encoded = tokenizer(texts, truncation=True, max_length=max_len, padding=True, return_tensors="pt")
        with torch.no_grad():
            logits = model(**encoded).logits
        probabilities = torch.softmax(logits, dim=-1)
        predictions = []
        for row in probabilities.tolist():
            label_id = max(range(len(row)), key=row.__getitem__)
            predictions.append({"label": labels[label_id], "label_id": label_id, "probabilities": row})
        return {"predictions": predictions, "batch_rows": len(texts), "batch_requests": 1}

    predict_texts(["预热 warm-up"])

    class Body(BaseModel):
        inputs: list[str]

    def check(body: Body) -> None:
        if not body.inputs or any(not t.strip() for t in body.inputs):
            raise HTTPException(status_code=422, detail="inputs must be 1+ non-empty texts")

    app = FastAPI()

    if args.serial:
        @app.post("/predict")
        async def predict(body: Body) -> dict:
            check(body)
            return predict_texts(body.inputs)
    else:
        @app.post("/predict")
        def predict(body: Body) -> dict:
            check(body)
            return predict_texts(body.inputs)

    @app.get("/health")
    def health() -> dict:
        return {"status": "ready", "labels": labels, "max_seq_len": max_len}

    host, port = args.bind.rsplit(":", 1)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, int(port)))
    sock.listen(1024)
    print(f"listening on http://{host}:{sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, backlog=1024)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    sys.exit(main())
