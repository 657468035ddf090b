"""Stopping a server and every process it started.

BentoML's process manager (circus) starts each worker with `os.setsid()`: in a session and process
group of its own, out of reach of a signal to the server's group. A server that exits gracefully
on SIGTERM stops them first; one that is SIGKILLed (or does not stop in time) leaves them running,
holding CPU, memory and its port for every later test (a stand-in pod's three processes ran for an
hour after a CI run). So the tree is read (psutil, /proc) before the first signal and again before
the last, and every process in it is killed that is still there. A server that has already exited
has no tree left to read: its orphans are found by a mark in their environment, which every process
started with `marked(env)` and all it starts inherit.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import uuid
from collections.abc import Mapping

import psutil

MARK_ENV = "TRANSLATOR_PROCESS_TREE"


def marked(env: Mapping[str, str]) -> dict[str, str]:
    """`env` with a mark of its own, for `stop_tree` to find what was started with it."""
    return {**env, MARK_ENV: uuid.uuid4().hex}


def _marked_with(mark: str) -> list[psutil.Process]:
    found = []
    for candidate in psutil.process_iter():
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            if candidate.environ().get(MARK_ENV) == mark:
                found.append(candidate)
    return found


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _running(member: psutil.Process) -> bool:
    try:
        return member.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def stop_tree(process: subprocess.Popen, grace_s: float = 0.0, env: Mapping[str, str] | None = None) -> int | None:
    """SIGTERM to `process`'s group and `grace_s` seconds to exit (none: SIGKILL at once), then
    SIGKILL to its group, to every descendant seen and to every process bearing the mark of `env`
    (the environment it was started with, if `marked`); its exit code."""
    # The tree only of a process not yet reaped: a reaped one's pid may be another process's now.
    seen = {p.pid: p for p in _tree(process.pid)} if process.poll() is None else {}
    if grace_s > 0 and process.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(grace_s)
    if process.poll() is None:
        seen |= {p.pid: p for p in _tree(process.pid)}  # workers started meanwhile (a restart)
    mark = (env or {}).get(MARK_ENV)
    if mark:
        seen |= {p.pid: p for p in _marked_with(mark)}
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    for member in seen.values():
        # psutil checks the process is the one seen (its start time), not a reused pid.
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            member.kill()
    if process.poll() is None:
        process.wait(10)
    # Not the zombies of a parent that has gone: reaped by PID 1 whenever it does, they hold nothing.
    psutil.wait_procs([p for p in seen.values() if _running(p)], timeout=10)
    return process.returncode
