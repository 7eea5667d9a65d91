"""Per-job lock files: one owner at a time, released on exit, broken only when stale."""

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from sweep.config import schema as config
from sweep.config.grid import expand
from sweep.execution import runner
from sweep.execution.simulate import simulate
from sweep.storage import locks
from sweep.storage.locks import JobLocks
from sweep.storage.store import Store


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def plant(path, host, pid, age=0.0):
    """A lock file as another process would leave it, `age` seconds old."""
    path.write_text(json.dumps({"host": host, "pid": pid, "token": "other", "since": 0}))
    then = time.time() - age
    os.utime(path, (then, then))


def test_one_owner_at_a_time_and_release(tmp_path):
    a, b = JobLocks(tmp_path), JobLocks(tmp_path)
    assert a.acquire("job")
    assert not b.acquire("job")  # a live owner (this very process) holds it
    owner = json.loads((tmp_path / "job.lock").read_text())
    assert owner["host"] == locks.HOST and owner["pid"] == os.getpid()
    a.release("job")
    assert not (tmp_path / "job.lock").exists()
    assert b.acquire("job")


def test_release_never_removes_a_lock_taken_over_by_another(tmp_path):
    a = JobLocks(tmp_path)
    assert a.acquire("job")
    plant(tmp_path / "job.lock", "elsewhere", 1)  # e.g. broken as stale and retaken
    a.release("job")
    assert json.loads((tmp_path / "job.lock").read_text())["host"] == "elsewhere"


def test_dead_owner_on_this_host_is_broken(tmp_path):
    plant(tmp_path / "job.lock", locks.HOST, dead_pid())
    ours = JobLocks(tmp_path)
    assert ours.holder("job") is None
    assert ours.acquire("job")
    assert json.loads((tmp_path / "job.lock").read_text())["pid"] == os.getpid()
    assert not list(tmp_path.glob("*.broken"))


def test_other_host_is_trusted_until_its_heartbeat_stops(tmp_path):
    plant(tmp_path / "fresh.lock", "node-17", 4242, age=10.0)
    plant(tmp_path / "old.lock", "node-17", 4242, age=locks.STALE_AFTER + 60)
    ours = JobLocks(tmp_path)
    assert ours.holder("fresh")["host"] == "node-17"
    assert not ours.acquire("fresh")
    assert ours.acquire("old")


def test_unreadable_lock_is_trusted_while_fresh(tmp_path):
    (tmp_path / "job.lock").write_text("{half-writ")
    assert not JobLocks(tmp_path).acquire("job")


def test_heartbeat_keeps_held_locks_fresh_and_exit_releases(tmp_path, monkeypatch):
    monkeypatch.setattr(locks, "HEARTBEAT", 0.05)
    with JobLocks(tmp_path) as held:
        assert held.acquire("job")
        past = time.time() - 1000
        os.utime(tmp_path / "job.lock", (past, past))
        deadline = time.time() + 30
        while (tmp_path / "job.lock").stat().st_mtime < past + 500 and time.time() < deadline:
            time.sleep(0.05)
        assert (tmp_path / "job.lock").stat().st_mtime > past + 500
    assert not (tmp_path / "job.lock").exists()


def test_a_killed_owner_leaves_a_lock_that_the_next_run_breaks(tmp_path):
    code = ("import sys, time; from sweep.storage.locks import JobLocks; "
            "JobLocks(sys.argv[1]).acquire('job'); print('held', flush=True); time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline().strip() == "held"
    assert not JobLocks(tmp_path).acquire("job")  # alive: respected
    proc.kill()
    proc.wait()
    assert JobLocks(tmp_path).acquire("job")  # dead: broken


# ---------------------------------------------------------------- the runner under locks

def small_sweep(tmp_path):
    cfg = config.from_dict({"name": "l", "model": {"n": 4, "d": 4},  # a part per job
                            "integrate": {"t_max": 1.0, "save_every": 0.5},
                            "grid": {"beta": [0.0, 1.0, 2.0, 3.0]}})
    return expand(cfg), Store(cfg, tmp_path / "l.nc")


def run_in_background(jobs, store):
    notices, box = [], {}
    hooks = runner.Hooks(notice=notices.append)
    thread = threading.Thread(target=lambda: box.update(report=runner.run(jobs, store,
                                                                          hooks=hooks)))
    thread.start()
    return thread, notices, box


@pytest.mark.parametrize("other_finishes", [True, False],
                         ids=["other-run-finishes", "other-run-gives-up"])
@pytest.mark.parametrize("holder", ["live-unrelated-pid", "fresh-lock-of-another-host"])
def test_runner_waits_for_a_job_another_run_holds(tmp_path, monkeypatch, other_finishes,
                                                  holder):
    """A lock whose pid is alive here (pid reuse after a kill -9 looks the same) or whose
    host is another and whose heartbeat is fresh is respected, and the wait says at once
    who holds it, since when and how to clear it, then again while it lasts."""
    monkeypatch.setattr(runner, "WAIT_POLL", 0.05)
    monkeypatch.setattr(runner, "WAIT_NOTICE", 0.3)  # said again while the wait lasts
    jobs, store = small_sweep(tmp_path)
    store.dir.mkdir(parents=True)
    held = store.dir / f"{jobs[1].id}.lock"
    host, pid = (locks.HOST, os.getpid()) if holder == "live-unrelated-pid" else \
        ("node-elsewhere", 4242)
    plant(held, host, pid)  # alive (or on a host whose pids we cannot see), not our token
    thread, notices, box = run_in_background(jobs, store)
    deadline = time.time() + 60
    while len(notices) < 2 and time.time() < deadline:
        time.sleep(0.02)
    assert len(notices) >= 2 and notices[1].startswith("waiting for 1 job(s)")
    assert notices[0].startswith("waiting for 1 job(s) another run is computing: held by "
                                 f"{host} pid {pid} since 00:00:00 UTC (")
    assert f"lock {held}. If no sweep runs as that pid" in notices[0]
    assert "remove the lock files" in notices[0]
    assert thread.is_alive() and not store.done(jobs[1])
    if other_finishes:
        store.write(jobs[1], simulate(jobs[1]))
    held.unlink()
    thread.join(60)
    report = box["report"]
    assert (report.completed, report.elsewhere) == ((3, 1) if other_finishes else (4, 0))
    assert all(store.done(j) for j in jobs) and not list(store.dir.glob("*.lock"))


def test_runner_breaks_the_lock_of_a_dead_run(tmp_path):
    jobs, store = small_sweep(tmp_path)
    store.dir.mkdir(parents=True)
    plant(store.dir / f"{jobs[2].id}.lock", locks.HOST, dead_pid())
    report = runner.run(jobs, store)
    assert report.completed == 4 and all(store.done(j) for j in jobs)
    assert not list(store.dir.glob("*.lock"))


@pytest.mark.parametrize("links", [True, False], ids=["hard-link", "exclusive-create"])
def test_a_lock_that_cannot_be_written_is_not_left_behind(tmp_path, monkeypatch, links):
    def full(*args):
        raise OSError(28, "No space left on device")

    def no_links(*args):
        raise OSError(1, "Operation not permitted")

    with monkeypatch.context() as patch:
        if links:
            patch.setattr(type(tmp_path), "write_bytes", full)
        else:
            patch.setattr(locks.os, "link", no_links)
            patch.setattr(locks.os, "write", full)
        with pytest.raises(OSError):
            JobLocks(tmp_path).acquire("job")
    assert not list(tmp_path.iterdir())


def test_without_hard_links_locks_still_exclude(tmp_path, monkeypatch):
    def no_links(*args):
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(locks.os, "link", no_links)
    first, second = JobLocks(tmp_path), JobLocks(tmp_path)
    assert first.acquire("job") and not second.acquire("job")
    first.release("job")
    assert second.acquire("job")


def test_an_empty_lock_left_by_a_killed_writer_is_broken(tmp_path):
    path = tmp_path / "job.lock"
    path.write_bytes(b"")  # killed between creating the file and writing its owner
    assert not JobLocks(tmp_path).acquire("job")  # a writer may still be on its way
    old = time.time() - 2 * locks.UNWRITTEN_AFTER
    os.utime(path, (old, old))
    assert JobLocks(tmp_path).acquire("job")


def test_release_on_a_disk_gone_read_only_does_not_raise(tmp_path, monkeypatch):
    held = JobLocks(tmp_path)
    assert held.acquire("job")

    def read_only(self, missing_ok=False):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(type(tmp_path), "unlink", read_only)
    held.release("job")
    assert not held.held


# ---------------------------------------------------------------- one owner record

def test_the_locks_of_one_run_are_links_to_one_record(tmp_path):
    with JobLocks(tmp_path) as held:
        assert all(held.acquire(name) for name in ("a", "b", "c"))
        inodes = {(tmp_path / f"{name}.lock").stat().st_ino for name in ("a", "b", "c")}
        records = [p for p in tmp_path.iterdir() if p.suffix == ".tmp"]
        assert len(inodes) == 1 and len(records) == 1
        assert records[0].stat().st_ino in inodes
        owner = json.loads((tmp_path / "b.lock").read_text())
        assert owner["pid"] == os.getpid() and owner["token"] == held.token
        held.release("b")
        assert not (tmp_path / "b.lock").exists() and (tmp_path / "a.lock").exists()
    assert not list(tmp_path.iterdir())


def test_a_record_removed_as_abandoned_is_written_again(tmp_path):
    held = JobLocks(tmp_path)
    assert held.acquire("a")
    for record in tmp_path.glob(".*.tmp"):
        record.unlink()  # what store.remove_abandoned does after an hour without a heartbeat
    assert held.acquire("b")
    assert json.loads((tmp_path / "b.lock").read_text())["token"] == held.token
    with JobLocks(tmp_path) as other:
        assert not other.acquire("b")
    held.release("a")
    held.release("b")
    assert [p.suffix for p in tmp_path.iterdir()] == [".tmp"]  # the record, until exit


def test_another_owner_in_this_process_gets_its_own_record(tmp_path):
    first, second = JobLocks(tmp_path), JobLocks(tmp_path)
    assert first.acquire("a") and second.acquire("b")
    assert not second.acquire("a")
    first.release("a")  # only the lock: the other owner's lock still names its owner
    assert json.loads((tmp_path / "b.lock").read_text())["token"] == second.token
    assert locks.read_owner(tmp_path / "b.lock")["token"] != first.token


def test_a_link_retried_over_nfs_that_reports_eexist_is_still_ours(tmp_path, monkeypatch):
    """NFS resends a LINK whose reply was lost; the resend finds the link the first one made
    and fails with EEXIST. The lock is ours when it is our record's inode (open(2))."""
    real_link = os.link

    def lost_reply(src, dst):
        real_link(src, dst)
        raise FileExistsError(17, "File exists", str(dst))

    mine, other = JobLocks(tmp_path), JobLocks(tmp_path)
    assert other.acquire("held")
    monkeypatch.setattr(os, "link", lost_reply)
    assert mine.acquire("job") and "job" in mine.held
    assert not mine.acquire("held")  # EEXIST on another run's record: not ours
    monkeypatch.undo()
    mine.release("job")
    assert not (tmp_path / "job.lock").exists() and (tmp_path / "held.lock").exists()
