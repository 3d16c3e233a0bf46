#!/usr/bin/env python3
"""Jobs and replicas on this server (the local executor) and on the Slurm test cluster, side by side on
one server:
- submission-to-first-step latency of a job: the time from the REST submission's answer to the job's
  first training step, which every executor reaches through the same trainer and the same supervisor
  (median and spread of RUNS jobs, tiny preset, CPU);
- deploy-to-ready latency of a one-replica endpoint (the replica started, warmed up, parity gate passed,
  route set), here and on the cluster;
- what the two-node cluster holds at once: 6 jobs submitted together (one CPU each), the most seen
  running at the same time and what Slurm says of the others; an endpoint asking 4 replicas there;
- when Docker answers: the same first-step latency for a job in an environment's image (with the Paddock
  runtime, built first), in a container here and in a container on a cluster node (which checks the
  image lock there first);
- registering the same cluster from the dashboard's API and removing it again, RUNS times: with its tools
  on this host and over SSH to the test cluster's login node (the controller asked, the partition
  checked, the account checked with `sbatch --test-only`).

Usage: bench_cluster.py PADDOCK_BINARY SLURM_CONF [RUNS]
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error

import rest


def main() -> None:
    binary, conf = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    built = []
    with tempfile.TemporaryDirectory() as tmp:
        server = subprocess.Popen(
            [binary, "serve", "--bind", "127.0.0.1:0", "--data-dir", f"{tmp}/data",
             "--site-root", f"{tmp}/site",
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
            checkpoint = api.trained_checkpoint(ws, ds)
            ready = {where: api.deploy_ready(ws, checkpoint, where, 1)[0] for where in ["local", "slurm"]}
            held, waiting = api.jobs_held(ws, ds, 6)
            _, replicas = api.deploy_ready(ws, checkpoint, "slurm", 4)
            registered = {where: [api.register(conf, where) for _ in range(runs)]
                          for where in ["local", "ssh"]}
            environment = api.runtime_environment(ws)
            if environment is not None:
                environment, image = environment
                built.append(image)
                for where in ["docker", "slurm-image"]:
                    figures[where] = [api.first_step(ws, ds, where, environment) for _ in range(runs)]
        finally:
            server.terminate()
            server.wait(timeout=30)
            # The runtime image is gigabytes: not left behind.
            for image in built:
                subprocess.run(["docker", "rmi", "-f", image], capture_output=True)
    print(f"submission to first step, {runs} jobs each (seconds):")
    for where, times in figures.items():
        print(f"  {where:6} median {statistics.median(times):6.2f}   min {min(times):6.2f}   max {max(times):6.2f}")
    ratio = statistics.median(figures["slurm"]) / statistics.median(figures["local"])
    print(f"  slurm / local: {ratio:.2f}x")
    if "docker" in figures:
        ratio = statistics.median(figures["slurm-image"]) / statistics.median(figures["docker"])
        print(f"  slurm-image / docker: {ratio:.2f}x")
    else:
        print("  (no Docker engine answers: jobs in an environment's image were not measured)")
    print("deploy to ready, one replica (seconds):")
    for where, took in ready.items():
        print(f"  {where:6} {took:6.2f}")
    print(f"  slurm / local: {ready['slurm'] / ready['local']:.2f}x")
    print(f"the cluster held {held} of 6 one-CPU jobs running at once; the others waited: {waiting}")
    print(f"registering the cluster from the API, {runs} times each (seconds):")
    for where, times in registered.items():
        print(f"  {where:6} median {statistics.median(times):6.2f}   min {min(times):6.2f}   max {max(times):6.2f}")
    print(f"an endpoint asking 4 replicas on the cluster: {replicas} ready")


class Api(rest.Api):
    def first_step(self, ws: int, ds: int, where: str, environment=None) -> float:
        spec = {"name": f"bench-{where}", "dataset_id": ds, "preset": "tiny", "epochs": 1000,
                "batch_size": 16, "max_seq_len": 32, "max_steps": 1000000,
                "eval_every_steps": 1000000}
        if where.startswith("slurm"):
            spec["cluster"] = "slurm"
        if environment is not None:
            spec["environment_id"] = environment
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

    def register(self, conf: str, where: str) -> float:
        """Registers the test cluster as `lab` (its tools here, or over SSH through its login node, which
        is first given the server's key) and removes it; the registration's time."""
        if where == "ssh":
            key = self.call("GET", "/api/v1/admin/ssh-key")["public_key"]
            ssh = os.path.join(os.path.dirname(conf), "ssh")
            with open(os.path.join(ssh, "authorized_keys"), "r+") as keys:
                if key not in keys.read():
                    keys.write(key + "\n")
            with open(os.path.join(ssh, "known_hosts")) as known:
                reach = {"kind": "ssh", "destination": "root@127.0.0.1", "port": 2222,
                         "known_hosts": known.read()}
        else:
            reach = {"kind": "local", "slurm_conf": conf}
        body = {"name": "lab", "reach": reach, "partition": "short", "account": "team-a",
                "cpus": 1, "memory_mb": 1000}
        started = time.monotonic()
        self.post("/api/v1/admin/clusters", body)
        took = time.monotonic() - started
        self.call("DELETE", "/api/v1/admin/clusters/lab")
        return took

    def wait(self, path: str, done, what: str, limit: float = 300):
        started = time.monotonic()
        while True:
            got = self.call("GET", path)
            if done(got):
                return got
            if time.monotonic() - started > limit:
                sys.exit(f"{path}: no {what} in {limit} s: {got}")
            time.sleep(0.1)

    def runtime_environment(self, ws: int):
        """An environment whose image carries the Paddock runtime, built: its id and its image's;
        None without Docker."""
        spec = {"name": "bench-runtime", "base_image": "paddock/base:busybox", "runtime": True,
                "cpus": 1, "memory": "4g", "shm_size": "256m"}
        try:
            created = self.post(f"/api/v1/workspaces/{ws}/environments", spec)
        except urllib.error.HTTPError as e:
            if e.code == 503:
                return None
            raise
        env = created["summary"]["id"]
        built = self.wait(f"/api/v1/workspaces/{ws}/environments/{env}",
                          lambda e: e["summary"]["build_status"] not in ("queued", "building"), "build", 900)
        if built["summary"]["build_status"] != "built":
            sys.exit(f"the runtime environment did not build: {built['versions'][0].get('build_error')}")
        return env, built["summary"]["image_id"]

    def trained_checkpoint(self, ws: int, ds: int) -> int:
        spec = {"name": "bench-model", "dataset_id": ds, "preset": "tiny", "batch_size": 16,
                "max_seq_len": 32, "max_steps": 10, "eval_every_steps": 5}
        job = self.post(f"/api/v1/workspaces/{ws}/jobs", spec)["summary"]["id"]
        done = self.wait(f"/api/v1/workspaces/{ws}/jobs/{job}",
                         lambda j: j["summary"]["finished_at"] is not None, "end")
        return done["checkpoints"][0]["id"]

    def deploy_ready(self, ws: int, checkpoint: int, where: str, replicas: int):
        """Seconds from the deployment's answer to the endpoint being ready, and its ready replicas."""
        spec = {"name": f"bench-{where}-{replicas}", "checkpoint_id": checkpoint, "replicas": replicas}
        if where == "slurm":
            spec["cluster"] = "slurm"
        endpoint = self.post(f"/api/v1/workspaces/{ws}/endpoints", spec)["summary"]["id"]
        deployed = time.monotonic()
        path = f"/api/v1/workspaces/{ws}/endpoints/{endpoint}"
        done = self.wait(path, lambda e: e["summary"]["status"] != "starting", "verdict")
        took = time.monotonic() - deployed
        if done["summary"]["status"] != "ready":
            sys.exit(f"the {where} endpoint did not become ready: {done['summary']}")
        self.post(f"{path}/undeploy", None)
        return took, done["summary"]["ready_replicas"]

    def jobs_held(self, ws: int, ds: int, count: int):
        """The most of `count` endless cluster jobs seen running at once, and Slurm's reasons for the
        ones that waited."""
        spec = {"dataset_id": ds, "preset": "tiny", "epochs": 1000, "batch_size": 16, "max_seq_len": 32,
                "max_steps": 1000000, "eval_every_steps": 1000000, "cluster": "slurm"}
        jobs = [self.post(f"/api/v1/workspaces/{ws}/jobs", {**spec, "name": f"held-{i}"})["summary"]["id"]
                for i in range(count)]
        most, reasons, started = 0, set(), time.monotonic()
        while time.monotonic() - started < 90:
            placements = [self.call("GET", f"/api/v1/workspaces/{ws}/jobs/{j}/placement") for j in jobs]
            running = sum(1 for p in placements if p and p["state"] == "running")
            reasons |= {p["reason"] for p in placements if p and p["state"] == "waiting" and p["reason"]}
            most = max(most, running)
            if most == count or (most > 0 and reasons):
                break
            time.sleep(0.5)
        for j in jobs:
            self.post(f"/api/v1/workspaces/{ws}/jobs/{j}/cancel", None)
        for j in jobs:
            self.wait(f"/api/v1/workspaces/{ws}/jobs/{j}", lambda d: d["summary"]["finished_at"] is not None, "end")
        return most, ", ".join(sorted(reasons)) or "none"


if __name__ == "__main__":
    main()
