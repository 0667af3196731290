"""Builds and runs examples/go (cgo, standard library only) against build/libkubetune.so when Go is on PATH."""
import os
import pathlib
import re
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
LIB_DIR = ROOT / "build"

pytestmark = pytest.mark.skipif(
    shutil.which("go") is None or not (LIB_DIR / "libkubetune.so").exists(),
    reason="needs the go toolchain and build/libkubetune.so",
)


def test_go_operator_example(tmp_path):
    env = dict(
        os.environ,
        CGO_ENABLED="1",
        CGO_CFLAGS=f"-I{ROOT / 'include'}",
        CGO_LDFLAGS=f"-L{LIB_DIR}",
        GOCACHE=str(tmp_path / "gocache"),
        GOPATH=str(tmp_path / "gopath"),
        GOPROXY="off",  # standard library only: nothing to download
        GOFLAGS="-mod=mod",
    )
    exe = tmp_path / "operator"
    subprocess.run(["go", "build", "-o", str(exe), "."], cwd=ROOT / "examples" / "go", env=env, check=True,
                   timeout=120)
    run_env = dict(os.environ, LD_LIBRARY_PATH=str(LIB_DIR))
    out = subprocess.run([str(exe)], env=run_env, capture_output=True, text=True, timeout=30, check=True).stdout
    # KPA: ceil(70 / 7) = 10 with 10 / 1 >= 2 -> panic; 10 ready pods at no load drop to floor(10 / 2) = 5.
    assert "kpa revision=0 desired=10 ebc=-271 activators=3 panicking=true" in out
    assert "kpa revision=2 desired=5" in out
    # HPA: the legacy scale-up cap and its ScalingLimited condition, upstream reason and message.
    assert "hpa desired=6 rescale=true" in out
    assert ("hpa condition ScalingLimited=True ScaleUpLimit: the desired replica count is increasing faster than "
            "the maximum scale rate") in out
    # HPA batch form: legacy cap max(2 x 4, 4) = 8 for 9 and for 30 (max 10); the failed metric keeps 4.
    assert "hpa fleet desired=[8 4 8]" in out
    restart = re.search(r"hpa fleet after restart desired=(\[[0-9 ]+\]) \(same as without: (\[[0-9 ]+\])\)", out)
    assert restart and restart.group(1) == restart.group(2), out  # a restored fleet decides as the original
    assert "kpa scaler t=36s want=0 replicas=0 state=Inactive reason=TimedOut requeue=none" in out
    assert "activator capacity=3 trackers=[0 1 4]" in out
    assert "kpa restored revision=0 desired=10 panicking=true" in out
    assert "restore rejected: kubetune: code -1: KpaFleet state must be an array of 3 decider states, got 0" in out
    assert "kpa min-scale inactive -> replicas=11 state=Activating" in out
    # The deliberate bad input: the library's message through err_out, naming the key.
    assert "rejected: kubetune: code -1: stable-window = 2s must be in [6s, 3600s] range" in out
