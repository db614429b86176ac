"""Progress of a job's tasks on the terminal: done / running / failed, the stored ones, an ETA."""

from __future__ import annotations

import contextlib
import logging
import sys
from typing import Any

from attnphase.execution.executor import Progress
from attnphase.execution.store import Outcome


#: The logger whose INFO records (its children's) a bar shows as the stage of a task it runs in this process.
STAGE_LOGGER = "attnphase"


class _Stage(logging.Handler):
    """Hands each record's message to a :class:`TaskBar` (:meth:`TaskBar.stage`)."""

    def __init__(self, taskbar: "TaskBar") -> None:
        super().__init__(logging.INFO)
        self.taskbar = taskbar

    def emit(self, record: logging.LogRecord) -> None:
        self.taskbar.stage(record.getMessage())


def store_notes(total: int, stored: int, corrupted: int, note: Any) -> None:
    """What a job says of its store as it starts: a warning for each corrupted or partial task file removed (on stderr,
    under ``--quiet`` too), and ``note(text)`` of the tasks read back from it."""
    if corrupted:
        print(f"attnphase: warning: {corrupted} corrupted or partial task file(s) removed from the store; "
              "computing them again", file=sys.stderr)
    if stored:
        # an estimate is said above only where it is 10 s or more (attnphase.workload.announce_tasks)
        timing = ("the job takes seconds; any time estimate above counted them" if stored == total else
                  "any time estimate above counted them")
        note(f"{stored} of {total} tasks read back from the store ({timing}; --fresh recomputes them)")


class StoreNotes(Progress):
    """The reports of a job with its own bar (one task in this process, a bar over its points): only
    :func:`store_notes` (``quiet``: the warning alone)."""

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet

    def start(self, total: int, stored: int, corrupted: int) -> None:
        store_notes(total, stored, corrupted, self.note)

    def note(self, text: str) -> None:
        if not self.quiet:
            print(f"attnphase: {text}", file=sys.stderr)


class TaskBar(Progress, contextlib.AbstractContextManager):
    """A tqdm bar over tasks (``desc``) counting finished tasks (stored ones included); the postfix says how many
    run now, failed, and were read back from the store, and what a task that runs in this process says it does (the
    INFO records of :data:`STAGE_LOGGER`'s loggers while the bar is open). ``quiet``: no bar, no notes, no stages (a
    corrupted stored task is a warning, said all the same)."""

    def __init__(self, desc: str, unit: str = "task", quiet: bool = False) -> None:
        self.desc, self.unit, self.quiet = desc, unit, quiet
        self.bar: Any = None
        self.n_running = self.n_failed = self.n_stored = 0
        self.now = ""
        self._handler: _Stage | None = None
        self._level = logging.NOTSET

    def start(self, total: int, stored: int, corrupted: int) -> None:
        from tqdm import tqdm

        self.n_stored = stored
        store_notes(total, stored, corrupted, self.note)
        self.bar = tqdm(total=total, initial=stored, desc=self.desc, unit=self.unit, file=sys.stderr,
                        disable=self.quiet, dynamic_ncols=True)
        if not self.quiet and self._handler is None:
            logger = logging.getLogger(STAGE_LOGGER)
            self._handler, self._level = _Stage(self), logger.level
            logger.addHandler(self._handler)
            logger.setLevel(logging.INFO)
        self._postfix()

    def stage(self, text: str) -> None:
        """Show ``text`` (what the task running here does now) after the counts, until a task finishes."""
        self.now = text
        self._postfix(refresh=True)

    def running(self, n: int) -> None:
        self.n_running = n
        self._postfix()

    def finished(self, outcome: Outcome) -> None:
        self.n_failed += not outcome.ok
        self.now = ""
        self.bar.update(1)
        self._postfix()

    def note(self, text: str) -> None:
        from tqdm import tqdm

        if not self.quiet:  # tqdm.write: above the bars that run now, if any
            tqdm.write(f"attnphase: {text}", file=sys.stderr)

    def _postfix(self, refresh: bool = False) -> None:
        if not self.quiet and self.bar is not None:
            self.bar.set_postfix_str(f"running {self.n_running}, failed {self.n_failed}, from the store {self.n_stored}"
                                     + (f"; {self.now}" if self.now else ""), refresh=refresh)

    def __exit__(self, *exc: Any) -> None:
        if self._handler is not None:
            logger = logging.getLogger(STAGE_LOGGER)
            logger.removeHandler(self._handler)
            logger.setLevel(self._level)
            self._handler = None
        if self.bar is not None:
            self.bar.close()


def failure_summary(outcomes: list[Outcome]) -> str:
    """One line: how many tasks failed and why (each distinct reason once, with the labels of up to 3 of its tasks)."""
    failed = [o for o in outcomes if not o.ok]
    if not failed:
        return ""
    reasons: dict[str, list[str]] = {}
    for o in failed:
        reasons.setdefault(o.reason, []).append(o.label)
    return f"{len(failed)} of {len(outcomes)} tasks failed: " + "; ".join(
        f"{reason} ({', '.join(labels[:3])}{', ...' if len(labels) > 3 else ''})" for reason, labels in reasons.items())


def task_counts(outcomes: list[Outcome]) -> dict[str, int]:
    """How many tasks there were (``total``), were ``computed``, read back from the store (``stored``), ``failed``."""
    return {"total": len(outcomes), "computed": sum(o.status == "done" for o in outcomes),
            "stored": sum(o.status == "stored" for o in outcomes), "failed": sum(not o.ok for o in outcomes)}


def job_summary(what: str, seconds: float, counts: dict[str, int], failures: str) -> int:
    """The job's last lines on stderr -- ``<what> (<seconds> s; tasks: N computed, N from the store,
    N failed)`` and, where tasks failed, ``attnphase: <failures>`` -- and its exit code (1 if any failed)."""
    print(f"{what} ({seconds:.1f} s; tasks: {counts['computed']} computed, {counts['stored']} from the store, "
          f"{counts['failed']} failed)", file=sys.stderr)
    if failures:
        print(f"attnphase: {failures}", file=sys.stderr)
        return 1
    return 0
