"""The output options every ``attnphase`` command shares (``--json``, ``--quiet``, ``--out DIR``: :data:`OUT_RULE`),
and how a command writes its outputs: paths checked before any work, nothing half-written
(:func:`write_text_atomic`, :func:`staged_output`). Imports the standard library only; bad paths raise
``ValueError`` naming the option.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from attnphase.execution.outputs import json_value as json_value, write_text  # json_value: re-exported

OUT_RULE = "--out is always a folder, created if missing"


def add_json_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true",
                   help="print the result as exactly one JSON object on stdout (messages go to stderr)")


def add_quiet_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quiet", action="store_true",
                   help="no progress bars or progress lines (results, warnings and notes are always printed)")


def add_out_option(p: argparse.ArgumentParser, default: str, writes: str) -> None:
    p.add_argument("--out", default=default, metavar="DIR",
                   help=f"output folder: writes {writes} there ({OUT_RULE}; default {default})")


_FILE_SUFFIXES = (".csv", ".json", ".png", ".md", ".txt", ".pdf", ".svg")


def out_dir_from_args(args: argparse.Namespace) -> Path:
    """``--out`` as a folder path ready to receive files (:func:`check_out_dir`); an empty name is a ValueError."""
    if not str(args.out).strip():  # `--out "$DIR"` with DIR unset: never this folder without a word
        raise ValueError(f"--out: an empty folder name ({OUT_RULE}); give --out . for the current folder")
    return check_out_dir(Path(args.out))


def shown_path(path: str | Path) -> str:
    """``path`` as a message shows it: a name longer than 80 characters is cut in its middle."""
    text = str(path)
    return text if len(text) <= 80 else f"{text[:40]}...{text[-40:]} ({len(text)} characters)"


def _nearest_existing(path: Path) -> Path:
    p = path.absolute()
    return next((q for q in [p, *p.parents] if os.path.lexists(q)), Path(p.anchor))


#: The longest file name (bytes) a job writes in ``--out DIR`` or its ``tasks/`` folder, with a margin: a temporary
#: ``.<64-hex task key>.task.<random>.tmp`` (execution/store.py) or ``.<file name, 64 at most>.<random>.tmp``.
PROBE_NAME_BYTES = 128


def check_out_dir(out: Path) -> Path:
    """``--out DIR`` ready to receive files: a folder (not a file, nor a file's name ``.csv`` ...) whose missing
    folders can be made in its nearest existing ancestor, a writable folder (tried in a hidden folder, then removed)."""
    try:  # an OSError: a name the system refuses to look up (too long, ...)
        if out.exists() and not out.is_dir():
            raise ValueError(f"--out must be a folder ({OUT_RULE}); {shown_path(out)!r} is a file")
        if not out.exists() and out.suffix.lower() in _FILE_SUFFIXES:
            raise ValueError(f"--out must be a folder ({OUT_RULE}), got the file name {shown_path(out)!r}")
        # the first of out and its ancestors that is a symbolic link leading nowhere (a missing target, a loop)
        p = out.absolute()
        if link := next((q for q in [*reversed(p.parents), p] if os.path.islink(q) and not os.path.exists(q)), None):
            raise ValueError(f"--out: cannot create {shown_path(out)!r}: {shown_path(link)!r} is a symbolic "
                             f"link to {shown_path(os.readlink(link))!r}, which leads nowhere (a missing target or a "
                             f"loop of links)")
        base = _nearest_existing(out)
        if not base.is_dir():
            raise ValueError(f"--out: cannot create {shown_path(out)!r}: {shown_path(base)!r} is a file, not a folder")
        if not os.access(base, os.W_OK | os.X_OK):
            raise ValueError(f"--out: cannot write in {shown_path(base)!r} (permission denied)")
        missing = p.relative_to(base).parts
        from attnphase.interrupts import deferred

        with deferred():  # a signal between making the hidden probe folder and removing it would leave it behind
            try:
                probe = Path(tempfile.mkdtemp(prefix=f".attnphase-check-{_owner_tag()}-", dir=base))
            except OSError as exc:
                raise ValueError(f"--out: cannot write in {shown_path(base)!r}: the system refuses it "
                                 f"({exc.strerror or exc})") from None
            try:
                try:
                    probe.joinpath(*missing).mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise ValueError(f"--out: cannot create {shown_path(out)!r} ({exc.strerror or exc})") from None
                try:  # and the deepest files a job writes there: DIR/tasks/.<task key>.<random>.tmp
                    inner = probe.joinpath(*missing, "tasks")
                    inner.mkdir()
                    (inner / ("." + "k" * PROBE_NAME_BYTES)).touch()
                except OSError as exc:
                    raise ValueError(f"--out: cannot write files in {shown_path(out)!r}: the path of a file there "
                                     f"would be too long for the system ({exc.strerror or exc}); take a shorter "
                                     "--out") from None
            finally:
                shutil.rmtree(probe, ignore_errors=True)
    except OSError as exc:
        raise ValueError(f"--out: cannot use {shown_path(out)!r} ({exc.strerror or exc})") from None
    return out


def check_out_file(path: str | Path, option: str) -> Path:
    """An output FILE (``derive -o``): not a folder, in a writable folder, a name the system takes."""
    file = Path(path)
    try:
        if file.is_dir():
            raise ValueError(f"{option} must name a file, {str(file)!r} is a folder")
        parent = file.parent  # Path("x").parent is Path(".")
        if not parent.exists():
            raise ValueError(f"{option}: the folder {str(parent)!r} of {str(file)!r} does not exist")
        if not parent.is_dir():
            raise ValueError(f"{option}: {str(parent)!r} is a file, not a folder")
        if not os.access(parent.absolute(), os.W_OK | os.X_OK):
            raise ValueError(f"{option}: cannot write in {str(parent)!r} (permission denied)")
        limit = os.pathconf(parent.absolute(), "PC_NAME_MAX")
        if len(os.fsencode(file.name)) > limit:
            raise ValueError(f"{option}: cannot use {shown_path(file)!r} (File name too long: "
                             f"{len(os.fsencode(file.name))} bytes, at most {limit} here)")
    except OSError as exc:  # a name the system refuses to look up (too long, ...)
        raise ValueError(f"{option}: cannot use {shown_path(path)!r} ({exc.strerror or exc})") from None
    return file


def write_text_atomic(path: str | Path, text: str, option: str = "--out") -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and a rename
    (:func:`attnphase.execution.outputs.write_text`); an OSError is a ValueError naming ``option``."""
    path = Path(path)
    try:
        write_text(path, text)
    except OSError as exc:
        raise ValueError(f"{option}: cannot write {str(path)!r} ({exc.strerror or exc})") from None


class OutputClash(ValueError):
    """A folder of ``--out DIR`` named as a file the job writes: bad input (exit code 2), found before any work."""

    input_error = True


class JobFailed(RuntimeError):
    """A job failed after its work began (exit code 1, one line): nothing was written into ``--out DIR``; the tasks
    it finished are kept in DIR/tasks."""


def _kept_tasks(out: Path) -> str:
    """What a failed job leaves for its rerun: the tasks finished in ``out/tasks`` (their files), said as they are."""
    try:
        n = sum(1 for p in (out / "tasks").rglob("*.task") if p.is_file())
    except OSError:
        n = 0
    return (f"the {n} task{'' if n == 1 else 's'} it finished kept in its tasks/ folder (a rerun reads them back)"
            if n else "and no task had finished")


def _disk_full(folder: Path) -> str:
    """" -- the file system is full ..." where the one holding ``folder`` has under a mebibyte free ("" elsewhere)."""
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return ""
    return f" -- the file system holding {shown_path(folder)} is full ({free} bytes free)" if free < 2 ** 20 else ""


def _work_since(out: Path, stage: Path, since: float) -> bool:
    """Whether a job made a file since ``since``, in its staging folder or in a folder of ``out`` (a task)."""
    try:
        files = [p for p in stage.rglob("*") if p.is_file()] + [p for p in out.glob("*/*") if p.is_file()]
        return any(p.stat().st_mtime >= since for p in files)
    except OSError:
        return False


def _owner_tag() -> str:
    """``<host>-<pid>`` of this process, as the hidden folders it makes are named."""
    import socket

    host = re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname()) or "host"
    return f"{host}-{os.getpid()}"


_HIDDEN = re.compile(r"^\.attnphase-(?:stage|check)-(?P<host>.+)-(?P<pid>\d+)-[a-z0-9_]+$")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process
        return True
    return True


def remove_stale_staging(folder: Path) -> None:
    """Remove the hidden staging folders in ``folder`` left by a process of this machine that is gone (folders of
    live processes and of other machines are left alone)."""
    host = _owner_tag().rsplit("-", 1)[0]
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for e in entries:
        m = _HIDDEN.match(e.name)
        if m and m["host"] == host and not _alive(int(m["pid"])) and e.is_dir(follow_symlinks=False):
            shutil.rmtree(e.path, ignore_errors=True)


@contextlib.contextmanager
def staged_output(out: Path, job: str | None = None, model: dict[str, Any] | None = None):
    """Yield a hidden staging folder in ``out``'s nearest existing ancestor (the stale ones of dead processes removed
    there and in ``out``'s parent); on success its files move into ``out`` (created if missing), on any failure or
    interrupt it is removed. ``job``, ``model``: the files an earlier
    ``job`` of another model wrote into ``out`` are removed (:func:`attnphase.job_record.replace_job`); a folder in
    ``out`` named as a file of ``job`` (``<job>...csv``) is an :class:`OutputClash` before anything is staged."""
    from attnphase.interrupts import deferred
    from attnphase.job_record import replace_job

    if job is not None and out.is_dir():  # a folder named as one of the job's files: found before any work
        taken = sorted(p.name for p in out.iterdir() if p.is_dir() and p.name.startswith(job)
                       and p.suffix.lower() in (*_FILE_SUFFIXES, ".nc"))
        if taken:
            raise OutputClash(f"--out: {shown_path(out / taken[0])!r} is a folder where the job writes a file; move "
                              "it or give another --out")
    base = _nearest_existing(out)
    # a run that died before ``out`` existed staged in its parent: cleaned too once ``out`` is there
    for folder in dict.fromkeys((base, out.absolute().parent)):
        remove_stale_staging(folder)
    try:
        stage = Path(tempfile.mkdtemp(prefix=f".attnphase-stage-{_owner_tag()}-", dir=base))
    except OSError as exc:
        raise ValueError(f"--out: cannot write in {shown_path(base)!r} ({exc.strerror or exc})") from None
    started = time.time() - 0.05  # a file time may lag the clock by a tick
    try:
        yield stage
    except BaseException as exc:
        with deferred():  # a second Ctrl-C does not cut the clean-up
            worked = (isinstance(exc, Exception) and not isinstance(exc, JobFailed) and not getattr(exc, "input_error", False)
                      and _work_since(out, stage, started))
            shutil.rmtree(stage, ignore_errors=True)
        if worked:  # not bad input: the job failed on its way (exit code 1), its finished tasks are kept
            what = " ".join(str(exc).replace(str(stage), str(out)).split())
            raise JobFailed(f"the job failed after its work began ({type(exc).__name__}: {what}){_disk_full(base)}; "
                            f"nothing was written into {shown_path(out)}, {_kept_tasks(out)}") from exc
        raise
    created: list[Path] = []
    with deferred():
        try:
            missing = [p for p in reversed(out.absolute().parents) if not p.exists()] + ([] if out.exists() else [out])
            for folder in missing:
                try:
                    folder.mkdir()
                    created.append(folder)
                except FileExistsError:  # a concurrent run made it: share it
                    if not folder.is_dir():
                        raise
            written = sorted(item.name for item in stage.iterdir())
            # a file where a folder goes (or the reverse) is found before anything moves: no mix of two runs' files
            clash = [name for name in written if (out / name).exists()
                     and (out / name).is_dir() != (stage / name).is_dir()]
            if clash:
                raise IsADirectoryError(f"{shown_path(out / clash[0])} is a "
                                        f"{'folder' if (out / clash[0]).is_dir() else 'file'} where the job writes a "
                                        f"{'folder' if (stage / clash[0]).is_dir() else 'file'}; nothing was moved "
                                        "into it")
            for name in written:
                item, target = stage / name, out / name
                if target.is_dir() and item.is_dir():
                    shutil.rmtree(target)
                os.replace(item, target)
            if job is not None and written:  # nothing written: the outputs were up to date, the record stands
                replace_job(out, job, model, written, shown_path(out))
        except OSError as exc:
            for folder in reversed(created):
                shutil.rmtree(folder, ignore_errors=True)
            raise ValueError(f"--out: cannot write into {shown_path(out)!r} ({exc.strerror or exc})") from None
        finally:
            shutil.rmtree(stage, ignore_errors=True)


class Rewriting:
    """A text stream that writes through to ``stream`` with every ``old`` of ``replace`` put as its ``new``
    (a job writing into a staging folder prints the final folder's name)."""

    def __init__(self, stream: Any, replace: dict[str, str]) -> None:
        self._stream, self._replace = stream, replace

    def write(self, text: str) -> int:
        for old, new in self._replace.items():
            text = text.replace(old, new)
        return self._stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
