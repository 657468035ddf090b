"""What a benchmark ran on: the machine, the checkout, and the GPU's busy time while it ran.

`GpuSampler` reads `nvidia-smi` every 100 ms during a point and averages its utilization.gpu (the
share of the driver's own last window, 1/6 s to 1 s, in which a kernel was running: samples closer
than that repeat it), with the memory in use and the power, where a GPU is (the lent machines of
`make gpu-check`); nothing elsewhere.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import threading
from importlib import metadata
from typing import Any

import psutil

from fixture.cpuinfo import cpu_fields
from harness.servers import ROOT

SAMPLE_MS = 100


def machine() -> dict[str, Any]:
    cpu = cpu_fields().get("model name", platform.processor() or platform.machine())
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, torch; c = torch.cuda.is_available(); print(json.dumps({'cuda': c, "
            "'device': torch.cuda.get_device_name() if c else 'cpu', 'threads': torch.get_num_threads()}))",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    torch_info = json.loads(probe.stdout) if probe.returncode == 0 else {}
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "cores_available": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "ram_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "device": torch_info.get("device"),
        "torch_default_threads": torch_info.get("threads"),
        "python": platform.python_version(),
        "torch": metadata.version("torch"),
        "transformers": metadata.version("transformers"),
        "bentoml": metadata.version("bentoml"),
        "platform": platform.platform(),
    }


def git_state() -> dict[str, Any]:
    def git(*arguments: str) -> str:
        done = subprocess.run(["git", *arguments], cwd=ROOT, capture_output=True, text=True, check=False)
        return done.stdout.strip() if done.returncode == 0 else ""

    return {"commit": git("rev-parse", "HEAD") or "unknown", "dirty": bool(git("status", "--porcelain"))}


class GpuSampler:
    """`with GpuSampler() as gpu: ...; gpu.summary()`: the GPU's mean busy fraction, peak memory in
    use (MiB) and mean power (W) over the block, from nvidia-smi; None where there is no nvidia-smi."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float, float]] = []
        self._process: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None

    def __enter__(self) -> GpuSampler:
        command = shutil.which("nvidia-smi")
        if command is None:
            return self
        self._process = subprocess.Popen(
            [
                command,
                "--query-gpu=utilization.gpu,memory.used,power.draw",
                "--format=csv,noheader,nounits",
                f"-lms={SAMPLE_MS}",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        return self

    def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            try:
                busy, memory, power = (float(part) for part in line.split(",")[:3])
            except ValueError:
                continue  # "[N/A]" power on some cards
            self.samples.append((busy / 100, memory, power))

    def __exit__(self, *exc: object) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(5)
        if self._reader is not None:
            self._reader.join(5)

    def summary(self) -> dict[str, float] | None:
        if not self.samples:
            return None
        busy = [s[0] for s in self.samples]
        return {
            "gpu_busy": round(sum(busy) / len(busy), 3),
            "gpu_memory_mib": max(s[1] for s in self.samples),
            "gpu_power_w": round(sum(s[2] for s in self.samples) / len(self.samples), 1),
        }
