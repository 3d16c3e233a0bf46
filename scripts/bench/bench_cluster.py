#!/usr/bin/env python3
"""Submission-to-first-step latency of a job, on this server (the local executor) and on the Slurm test
cluster, side by side on one server: the time from the REST submission's answer to the job's first
training step, which every executor reaches through the same trainer and the same supervisor. Each
figure is the median and the spread of RUNS jobs (tiny preset, CPU).

Usage: bench_cluster.py PADDOCK_BINARY SLURM_CONF [RUNS]
"""

import http.cookiejar
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request


def main() -> None:
    binary, conf = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    with tempfile.TemporaryDirectory() as tmp:
        server = subprocess.Popen(
            [binary, "serve", "--bind", "127.0.0.1:0", "--data-dir", f"{tmp}/data",
             "--site-root", f"{tmp}/site", "--docker-host", "unix:///nonexistent.sock",
             "--slurm-conf", conf, "--slurm-cpus", "1", "--slurm-memory-mb", "1000"],
            stdout=subprocess.PIPE, stderr=open(f"{tmp}/server.log", "w"), text=True)
        try:
            line = server.stdout.readline().strip()
            if not line.startswith("listening on "):
                sys.exit(f"the server did not start: {line!r}; see its log")
            api = Api(line.removeprefix("listening on "))
            api.post("/api/v1/auth/signup", {"username": "bench", "password": "a long password"})
            ws = api.post("/api/v1/workspaces", {"name": "bench"})["id"]
            ds = api.post(f"/api/v1/workspaces/{ws}/datasets/sample", None)["summary"]["id"]
            figures = {}
            for where in ["local", "slurm"]:
                figures[where] = [api.first_step(ws, ds, where) for _ in range(runs)]
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(f"submission to first step, {runs} jobs each (seconds):")
    for where, times in figures.items():
        print(f"  {where:6} median {statistics.median(times):6.2f}   min {min(times):6.2f}   max {max(times):6.2f}")
    ratio = statistics.median(figures["slurm"]) / statistics.median(figures["local"])
    print(f"  slurm / local: {ratio:.2f}x")


class Api:
    def __init__(self, base: str) -> None:
        self.base = base
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))

    def call(self, method: str, path: str, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        with self.opener.open(request, timeout=60) as answer:
            text = answer.read()
            return json.loads(text) if text else None

    def post(self, path: str, body):
        return self.call("POST", path, body)

    def first_step(self, ws: int, ds: int, where: str) -> float:
        spec = {"name": f"bench-{where}", "dataset_id": ds, "preset": "tiny", "epochs": 1000,
                "batch_size": 16, "max_seq_len": 32, "max_steps": 1000000,
                "eval_every_steps": 1000000}
        if where == "slurm":
            spec["cluster"] = "slurm"
        job = self.post(f"/api/v1/workspaces/{ws}/jobs", spec)["summary"]["id"]
        submitted = time.monotonic()
        path = f"/api/v1/workspaces/{ws}/jobs/{job}"
        while self.call("GET", path)["summary"]["step"] < 1:
            if time.monotonic() - submitted > 300:
                sys.exit(f"job {job} ({where}) took no step in 5 minutes")
            time.sleep(0.05)
        took = time.monotonic() - submitted
        self.post(f"{path}/cancel", None)
        while self.call("GET", path)["summary"]["finished_at"] is None:
            time.sleep(0.2)
        return took


if __name__ == "__main__":
    main()
