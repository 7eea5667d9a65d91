"""Progress in a log file: a plain line at every tenth of the jobs and at least every 30 s."""

from sweep.cli.progress import LOG_EVERY, LogLines, clock_time


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_a_line_at_every_tenth_of_the_jobs():
    clock, lines = Clock(), []
    log = LogLines("demo", lines.append, clock)
    log.start(320, 0)
    for _ in range(320):
        clock.now += 0.01
        log.job_done(None, "ok")
    assert len(lines) == 10
    assert lines[0] == "demo: 32/320 job(s) (10%), 100 jobs/s, eta 0:00:03"
    assert lines[-1] == "demo: 320/320 job(s) (100%), 100 jobs/s, eta 0:00:00"


def test_a_line_at_least_every_30_s_when_jobs_are_slow():
    clock, lines = Clock(), []
    log = LogLines("big", lines.append, clock)
    log.start(1000, 0)
    log.job_done(None, "ok")
    for _ in range(130):  # 65 s of ticks, half a second apart, no job finishing
        clock.now += 0.5
        log.tick()
    assert lines == ["big: 1/1000 job(s) (0%), 0.0333 jobs/s, eta 8:19:30",
                     "big: 1/1000 job(s) (0%), 0.0167 jobs/s, eta 16:39:00"]
    assert LOG_EVERY <= 30


def test_few_jobs_each_get_a_line():
    clock, lines = Clock(), []
    log = LogLines("tiny", lines.append, clock)
    log.start(3, 0)
    for _ in range(3):
        clock.now += 2.0
        log.job_done(None, "ok")
    assert [line.split(" job(s)")[0] for line in lines] == ["tiny: 1/3", "tiny: 2/3",
                                                            "tiny: 3/3"]
    assert clock_time(3725) == "1:02:05"
