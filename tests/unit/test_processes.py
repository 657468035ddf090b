"""harness/processes.py: a server's workers in sessions of their own (as BentoML's circus starts
them) are stopped with it, also when the server has already exited."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid

import psutil
import pytest

from harness.processes import MARK_ENV, marked, stop_tree

pytestmark = pytest.mark.processes

# A parent that starts a child in a session of its own (os.setsid, as circus does), prints the
# child's pid, and then waits, or exits at once when told to (leaving the child an orphan).
PARENT = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
print(child.pid, flush=True)
if sys.argv[1] == "wait":
    time.sleep(600)
"""


def start(mode: str) -> tuple[subprocess.Popen, dict[str, str], int]:
    env = marked(os.environ)
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, mode], env=env, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    return parent, env, child


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_child_in_its_own_session_is_stopped_with_its_parent() -> None:
    parent, _, child = start("wait")
    assert not gone(child) and os.getpgid(child) != os.getpgid(parent.pid)  # out of the group's reach
    stop_tree(parent)  # no mark needed: the tree is read while the parent lives
    assert parent.returncode is not None and gone(child)


def test_an_orphan_of_a_parent_that_exited_is_found_by_its_mark() -> None:
    parent, env, child = start("exit")
    parent.wait(30)
    time.sleep(0.1)
    assert not gone(child), "the orphan outlives its parent (what leaked before)"
    stop_tree(parent)
    assert not gone(child), "without the mark, nothing can find it"
    stop_tree(parent, env=env)
    assert gone(child)


# A test process that starts a server with a mark of its own and dies without stopping it (an
# aborted pytest-xdist worker): the server is an orphan whose mark names a maker that is gone.
MAKER = """
import subprocess, sys
from harness.processes import marked
server = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(600)"],
    env=marked({}),
    start_new_session=True,
    stdout=subprocess.DEVNULL,  # not the pipes the test reads to their end
    stderr=subprocess.DEVNULL,
)
print(server.pid, flush=True)
"""


def test_the_processes_a_dead_test_process_started_are_reaped_and_no_others() -> None:
    from harness.processes import reap_orphans

    maker = subprocess.run(
        [sys.executable, "-c", MAKER], env={**os.environ, "PYTHONPATH": os.getcwd()}, capture_output=True, text=True
    )
    orphan = int(maker.stdout)
    parent, env, child = start("wait")  # marked by this test process, which is alive
    unknown = subprocess.Popen(  # a mark that names no maker (an older checkout's): never reaped
        [sys.executable, "-c", "import time; time.sleep(600)"], env={**os.environ, MARK_ENV: uuid.uuid4().hex}
    )
    try:
        assert not gone(orphan)
        assert orphan in reap_orphans(grace_s=5)
        assert gone(orphan) and not gone(child) and parent.poll() is None and unknown.poll() is None
    finally:
        stop_tree(parent, env=env)
        unknown.kill()
        if not gone(orphan):
            psutil.Process(orphan).kill()
