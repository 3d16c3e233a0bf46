#!/usr/bin/env python3
"""What early stopping saves: the same grid sweep run twice on one server, once with ASHA and once with
every trial run to its end, side by side. A grid of four learning rates × two seeds on the shipped
sentiment sample (the nano preset unless BENCH_SWEEP_PRESET names another; CPU, one trial at a time:
the server's one CPU job slot), judged on the dev loss; ASHA's rungs at 10, 30, 90 and 270 steps
(η = 3) of 300.

Prints, for each: optimizer steps run by all trials together, wall time, trials stopped early, and the
best objective reached (with its trial's values); then the share of steps ASHA ran and whether it found
the same best trial.

Usage: bench_sweep.py PADDOCK_BINARY
"""

import os
import subprocess
import sys
import tempfile
import time

import rest

STEPS = 300
# The model shape: `nano` by default (a trial is then long enough for its own start and evaluations
# not to hide what the steps cost); BENCH_SWEEP_PRESET=tiny for a quick look.
PRESET = os.environ.get("BENCH_SWEEP_PRESET", "nano")


def main() -> None:
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        server = subprocess.Popen(
            [binary, "serve", "--bind", "127.0.0.1:0", "--data-dir", f"{tmp}/data",
             "--site-root", f"{tmp}/site", "--docker-host", "unix:///nonexistent.sock"],
            stdout=subprocess.PIPE, stderr=open(f"{tmp}/server.log", "w"), text=True)
        try:
            line = server.stdout.readline().strip()
            if not line.startswith("listening on "):
                sys.exit(f"the server did not start: {line!r}; see its log")
            api = Api(line.removeprefix("listening on "))
            api.post("/api/v1/auth/signup", {"username": "bench", "password": "a long password"})
            ws = api.post("/api/v1/workspaces", {"name": "bench"})["id"]
            ds = api.post(f"/api/v1/workspaces/{ws}/datasets/sample", None)["summary"]["id"]
            runs = {name: api.sweep(ws, ds, rule) for name, rule in [
                ("asha", {"rule": "asha", "min_steps": 10, "reduction_factor": 3}),
                ("full grid", {"rule": "none"}),
            ]}
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(f"grid of 8 trials (lr 1e-5, 1e-4, 1e-3, 3e-3 x seed 1, 2), {PRESET} preset, {STEPS} steps each, dev loss:")
    for name, (steps, seconds, pruned, best) in runs.items():
        values = ", ".join(f"{k}={v}" for k, v in best["parameters"].items())
        print(f"  {name:9}  steps {steps:5}   wall {seconds:6.1f} s   stopped early {pruned}   "
              f"best loss {best['objective']['value']:.4f} (trial {best['trial']}: {values})")
    (asha_steps, asha_time, _, asha_best), (full_steps, full_time, _, full_best) = runs.values()
    print(f"  asha / full grid: steps {asha_steps / full_steps:.2f}x, wall {asha_time / full_time:.2f}x; "
          f"same best trial: {'yes' if asha_best['parameters'] == full_best['parameters'] else 'no'}; "
          f"best loss {asha_best['objective']['value'] - full_best['objective']['value']:+.4f}")


class Api(rest.Api):
    def sweep(self, ws: int, ds: int, early_stopping):
        """Runs the grid with `early_stopping` to its end: (steps, seconds, trials stopped, best trial)."""
        spec = {
            "name": f"bench-{early_stopping['rule']}", "method": "grid", "parallelism": 1,
            "objective": {"metric": "loss"}, "early_stopping": early_stopping,
            "job": {"name": "bench", "dataset_id": ds, "preset": PRESET, "epochs": 100, "batch_size": 16,
                    "max_seq_len": 32, "max_steps": STEPS, "eval_every_steps": 10, "keep_best": 1},
            "parameters": {
                "learning_rate": {"distribution": "values", "values": [1e-5, 1e-4, 1e-3, 3e-3]},
                "seed": {"distribution": "values", "values": [1, 2]},
            },
        }
        started = time.monotonic()
        sweep = self.post(f"/api/v1/workspaces/{ws}/sweeps", spec)["summary"]["id"]
        path = f"/api/v1/workspaces/{ws}/sweeps/{sweep}"
        while (detail := self.call("GET", path))["summary"]["status"] != "finished":
            if time.monotonic() - started > 1800:
                sys.exit(f"sweep {sweep} did not finish in 30 minutes")
            time.sleep(1)
        seconds = time.monotonic() - started
        summary = detail["summary"]
        best = next(t for t in detail["trials"] if t["trial"] == summary["best"]["trial"])
        return summary["steps_run"], seconds, summary["counts"]["pruned"], best


if __name__ == "__main__":
    main()
