"""Stopping a server and every process it started.

BentoML's process manager (circus) starts each worker with `os.setsid()`: in a session and process
group of its own, out of reach of a signal to the server's group. A server that exits gracefully
on SIGTERM stops them first; one that is SIGKILLed (or does not stop in time) leaves them running,
holding CPU, memory and its port for every later test (a stand-in pod's three processes ran for an
hour after a CI run). So the tree is read (psutil, /proc) before the first signal and again before
the last, and every process in it is killed that is still there. A server that has already exited
has no tree left to read: its orphans are found by a mark in their environment, which every process
started with `marked(env)` and all it starts inherit.

The mark names the process that made it (its pid and start time), so that what a test process
started is found after that process died without stopping it (a pytest-xdist worker that aborted
left three servers, 1.5 GB each, running to the end of the run): `reap_orphans` stops the marked
processes whose maker is gone, and only those; a server another run started, alive, is not touched.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import uuid
from collections.abc import Mapping

import psutil

MARK_ENV = "TRANSLATOR_PROCESS_TREE"


def marked(env: Mapping[str, str]) -> dict[str, str]:
    """`env` with a mark of its own, for `stop_tree` to find what was started with it: this
    process's pid and start time (`reap_orphans`), and a token of its own."""
    me = psutil.Process()
    return {**env, MARK_ENV: f"{me.pid}:{me.create_time():.3f}:{uuid.uuid4().hex}"}


def _maker_gone(mark: str) -> bool:
    """Whether the mark names its maker (`marked`'s pid:start:token) and that process is gone; a
    mark in another form (an older checkout's, a token alone) names none, and is never reaped."""
    match = re.fullmatch(r"(\d+):(\d+\.\d{3}):[0-9a-f]{32}", mark)
    if match is None:
        return False
    try:
        # The same pid and start time: a pid the system gave to another process since is not it.
        return f"{psutil.Process(int(match.group(1))).create_time():.3f}" != match.group(2)
    except psutil.NoSuchProcess:
        return True


def reap_orphans(grace_s: float = 10.0) -> list[int]:
    """Stop every process bearing a mark whose maker has died (SIGTERM, SIGKILL after `grace_s`
    seconds); the pids stopped."""
    orphans = []
    for candidate in psutil.process_iter():
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            mark = candidate.environ().get(MARK_ENV)
            if mark and _maker_gone(mark):
                orphans.append(candidate)
    for orphan in orphans:
        with contextlib.suppress(psutil.NoSuchProcess):
            orphan.terminate()
    _, alive = psutil.wait_procs(orphans, timeout=grace_s)
    for orphan in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            orphan.kill()
    psutil.wait_procs(alive, timeout=grace_s)
    return [orphan.pid for orphan in orphans]


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
