#!/usr/bin/env python3
"""Per-process usage of one lnpu device shared by several processes.

Run by vm_guest.sh in the test VM. Starts clients (tests/driver/
usage_client.cc) that each open DEVICE, hold a device buffer of their own
size, run their own number of NOP jobs and then keep the device open until
released, so that nothing is sampled late: once every client said "ready",
checks each one's /proc/<pid>/fdinfo (its client id, job count, memory,
compute busy time) and npu-top's JSON report of the same processes, then
releases them. Exit 0 if every check passed, else 1 with one line per
failed check.
usage: vm_usage_check.py DEVICE USAGE_CLIENT NPU_TOP
"""
import json
import os
import select
import subprocess
import sys
import time

# (jobs, device buffer KiB) of each client: all different, so that one
# client's figures cannot pass for another's.
CLIENTS = [(3, 64), (7, 128), (11, 256)]
CMD_BUFFER_KIB = 4
READY_TIMEOUT_S = 300

SIZE_UNITS = {"": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def fdinfo_of_device(pid, device):
    """The fdinfo keys of pid's open files of `device`, one dict per fd."""
    files = []
    fd_dir = f"/proc/{pid}/fd"
    for fd in os.listdir(fd_dir):
        try:
            if os.readlink(os.path.join(fd_dir, fd)) != device:
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                text = f.read()
        except OSError:
            continue
        keys = {}
        for line in text.splitlines():
            key, _, value = line.partition(":")
            keys[key] = value.strip()
        files.append(keys)
    return files


def quantity(value):
    """'68 KiB' -> 69632; '12 ns' -> 12."""
    number, _, unit = value.partition(" ")
    return int(number) * SIZE_UNITS.get(unit, 1)


def main():
    device, client_exe, npu_top = sys.argv[1:4]
    failures = []
    procs = []
    try:
        for jobs, kib in CLIENTS:
            procs.append(subprocess.Popen([client_exe, device, str(jobs), str(kib)],
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          text=True))
        ids = []
        deadline = time.monotonic() + READY_TIMEOUT_S
        for proc in procs:
            left = max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([proc.stdout], [], [], left)
            line = proc.stdout.readline().split() if ready else []
            if len(line) != 2 or line[0] != "ready":
                failures.append(f"client {proc.pid} did not get ready: {line}")
                ids.append(None)
            else:
                ids.append(int(line[1]))
        if failures:
            return failures
        if len(set(ids)) != len(ids):
            failures.append(f"client ids are not distinct: {ids}")

        # Every client is alive and idle: its fdinfo is final.
        for proc, client_id, (jobs, kib) in zip(procs, ids, CLIENTS):
            files = fdinfo_of_device(proc.pid, device)
            if len(files) != 1:
                failures.append(f"pid {proc.pid}: {len(files)} open files of {device}, want 1")
                continue
            keys = files[0]
            memory = (kib + CMD_BUFFER_KIB) << 10
            checks = [
                ("drm-driver", keys.get("drm-driver") == "lnpu"),
                ("drm-client-id", keys.get("drm-client-id") == str(client_id)),
                ("lnpu-jobs-submitted", keys.get("lnpu-jobs-submitted") == str(jobs)),
                ("drm-total-memory", quantity(keys.get("drm-total-memory", "0")) == memory),
                ("drm-resident-memory",
                 quantity(keys.get("drm-resident-memory", "0")) == memory),
                ("drm-engine-compute", quantity(keys.get("drm-engine-compute", "0")) > 0),
                ("drm-engine-dma", quantity(keys.get("drm-engine-dma", "1")) == 0),
            ]
            for key, ok in checks:
                if not ok:
                    failures.append(f"pid {proc.pid} ({jobs} jobs, {memory} bytes): {key} is "
                                    f"{keys.get(key)!r}")
            print(f"pid {proc.pid}: client {client_id}, {keys.get('lnpu-jobs-submitted')} jobs, "
                  f"memory {keys.get('drm-total-memory')}, compute "
                  f"{keys.get('drm-engine-compute')}")

        # npu-top sees the same processes with the same figures.
        top = subprocess.run([npu_top, "--device", device, "--once", "--json", "--interval",
                              "0.2"], capture_output=True, text=True, timeout=120)
        if top.returncode != 0:
            failures.append(f"npu-top exited {top.returncode}: {top.stderr.strip()}")
        else:
            report = json.loads(top.stdout)
            by_pid = {p["pid"]: p for p in report["processes"]}
            for proc, client_id, (jobs, kib) in zip(procs, ids, CLIENTS):
                row = by_pid.get(proc.pid)
                want = {"client_ids": [client_id], "jobs_submitted": jobs,
                        "memory_total_bytes": (kib + CMD_BUFFER_KIB) << 10}
                got = {key: row.get(key) for key in want} if row else None
                if got != want:
                    failures.append(f"npu-top on pid {proc.pid}: {got}, want {want}")
                elif row["jobs_per_second"] != 0:
                    failures.append(f"npu-top on idle pid {proc.pid}: "
                                    f"{row['jobs_per_second']} jobs/s")
            counters = report.get("counters") or {}
            if counters.get("jobs_submitted", 0) < sum(jobs for jobs, _ in CLIENTS):
                failures.append(f"npu-top device counters: {counters}")
            print(f"npu-top: {len(report['processes'])} processes, device counters {counters}")
    finally:
        for proc in procs:
            if proc.stdin:
                proc.stdin.close()
        for proc in procs:
            try:
                code = proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = "killed"
            if code != 0:
                failures.append(f"client {proc.pid} exited {code}")
    return failures


if __name__ == "__main__":
    failed = main()
    for failure in failed:
        print("FAILED:", failure)
    sys.exit(1 if failed else 0)
