"""Probes of a signal at the very start of a command: Ctrl-C or SIGTERM within the first ~100 ms, while the
interpreter, the command's modules and numpy load, is the one-line stop or the interpreter's own default
action -- never a traceback through the command's code -- and a Ctrl-C that a C extension turns into another
exception while it loads (numpy's import makes an ``ImportError`` of it) is still the stop it was."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import attnphase
from attnphase import interrupts

ROOT = Path(attnphase.__file__).resolve().parent.parent
#: A command that runs for a minute (a census), stopped within its first 1.5 s.
LONG = ["census", "--alpha", "1.25", "--omega", "0.3", "--quadrature", "gh6", "--error-estimate", "0", "--json"]
STOP = {signal.SIGINT: (130, "attnphase: interrupted"), signal.SIGTERM: (143, "attnphase: terminated (SIGTERM)")}


def _project_frames(err: str) -> list[str]:
    """Traceback lines in a file of the project (not its virtual environment)."""
    return [line for line in re.findall(r'File "([^"]+)"', err)
            if line.startswith(str(ROOT)) and not line.startswith(str(ROOT / ".venv"))]


@pytest.fixture
def entry(monkeypatch):
    """``attnphase.__main__`` imported as the console script does (it makes the process a command: its signal
    handlers, ``sys.excepthook`` and ``sys.unraisablehook``), with this process's own restored afterwards."""
    monkeypatch.setattr(interrupts, "_ARRIVED", [])
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, *interrupts.TERMINATING)}
    hook, unraisable = sys.excepthook, sys.unraisablehook
    import attnphase.__main__ as module

    module.interrupts.handle_from_start()  # as on the first import
    assert sys.excepthook is interrupts.stop_at_top_level
    assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    yield module
    for s, old in saved.items():
        signal.signal(s, old)
    sys.excepthook, sys.unraisablehook = hook, unraisable


@pytest.mark.parametrize("sig", [signal.SIGINT, pytest.param(signal.SIGTERM, marks=pytest.mark.heavy)])
def test_signal_in_the_first_instants_is_the_stop_or_the_default_action(sig, tmp_path):
    code, last = STOP[sig]
    stopped = 0
    # the first ~100 ms finely (the interpreter's start, then the entry module), then later instants (a loaded
    # machine starts slower)
    for delay in [i / 1000 for i in range(0, 100, 8)] + [0.15, 0.25, 0.4, 0.6, 1.0, 1.5]:
        proc = subprocess.Popen([sys.executable, "-m", "attnphase", *LONG], cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        time.sleep(delay)
        os.kill(proc.pid, sig)
        out, err = proc.communicate(timeout=120)
        assert _project_frames(err) == [], (delay, proc.returncode, err)
        if last in err:  # the command's handlers held: its one line, last, and its exit code
            assert err.strip().splitlines()[-1] == last and "Traceback" not in err, (delay, err)
            assert proc.returncode in (code, -signal.SIGINT), (delay, proc.returncode, err)
            assert out == ""
            stopped += 1
        elif err.startswith("Error processing line") or (
                err.startswith("Exception ignored in: <function _get_module_lock") and "KeyboardInterrupt" in err):
            # lost in the interpreter's start-up, before the project's first line: site.py caught what the signal
            # raised in a .pth line of the editable install, or Python raised the Ctrl-C in importlib's weakref
            # callback at the end of an import and dropped it with its default hook (from the package's first
            # lines on, the command's hook sends a dropped Ctrl-C again: attnphase._send_again); the command runs on
            assert proc.returncode in (0, -sig, 1), (delay, proc.returncode, err)
        else:  # the interpreter's own start-up, before the first line of the project: its default action
            assert proc.returncode in (-sig, 1), (delay, proc.returncode, err)
    assert stopped >= 3


def _ctrl_c_turned_into(error: Exception) -> int:
    """A Ctrl-C to this process that the code running when it lands turns into ``error`` (as a C library does)."""
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)
    except KeyboardInterrupt:
        raise error from None
    return 0


def test_a_ctrl_c_turned_into_an_import_error_is_the_stop(entry, monkeypatch, capsys):
    """numpy's C import catches the KeyboardInterrupt raised while it loads ``datetime`` and raises ImportError."""

    monkeypatch.setattr("attnphase.cli.main",
                        lambda: _ctrl_c_turned_into(ImportError('PyCapsule_Import could not import module "datetime"')))
    assert entry.run() == 130
    assert capsys.readouterr().err == "attnphase: interrupted\n"


@pytest.mark.parametrize("checked", [False, True], ids=["while-checking-input", "while-computing"])
def test_a_ctrl_c_turned_into_a_value_error_is_the_stop_not_bad_input_or_a_failure(entry, monkeypatch, capsys, checked):
    """A library turns the Ctrl-C into another error (an ImportError that a command turns into ``ValueError('--backend:
    ...')``): the stop it was (130, the one line), not bad input (2) nor a failed computation (1)."""
    from attnphase import cli, work
    from attnphase.numerics.commands import solve

    def converts(args) -> int:
        if checked:
            work.begin("solving the state evolution")
        return _ctrl_c_turned_into(ValueError("--backend: numba could not be imported"))

    monkeypatch.setattr(solve, "run", converts)
    assert cli.main(["solve", "--alpha", "1"]) == 130
    assert capsys.readouterr().err == "attnphase: interrupted\n"


def _ctrl_c_swallowed() -> None:
    """A Ctrl-C to this process whose KeyboardInterrupt the code running when it lands clears: only the signal's
    record is left."""
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)
    except KeyboardInterrupt:
        pass


@pytest.mark.parametrize("checked", [False, True], ids=["before-work-begins", "while-computing"])
def test_a_ctrl_c_whose_stop_a_library_swallowed_is_still_the_stop(entry, monkeypatch, capsys, checked):
    """Swallowed before the command's work begins: raised there, nothing computed; swallowed later: the command's
    exit code is the stop's (130, the one line), not 0."""
    from attnphase import cli, work
    from attnphase.numerics.commands import solve

    computed = []

    def swallows(args) -> int:
        if checked:
            work.begin("solving the state evolution")
        _ctrl_c_swallowed()
        if not checked:
            work.begin("solving the state evolution")
        computed.append(True)
        return 0

    monkeypatch.setattr(solve, "run", swallows)
    assert cli.main(["solve", "--alpha", "1"]) == 130
    assert capsys.readouterr().err == "attnphase: interrupted\n"
    assert computed == ([True] if checked else [])


def test_an_error_a_destructor_raises_after_a_stop_is_not_printed(entry, monkeypatch) -> None:
    """A Ctrl-C that cuts an object's construction (llvmlite's ModuleRef while numba compiles, on a fresh clone) makes
    its destructor raise an AttributeError Python hands to ``sys.unraisablehook``: once a signal has arrived it is not
    printed (the stop ends the command, its one line); before any signal such an error goes to the previous hook."""
    import types

    seen: list = []
    monkeypatch.setattr(interrupts, "_PREVIOUS_UNRAISABLE_HOOK", seen.append)
    broken = types.SimpleNamespace(exc_type=AttributeError, exc_value=AttributeError("no _as_parameter_"),
                                   exc_traceback=None, err_msg="Exception ignored in", object=None)
    sys.unraisablehook(broken)
    assert seen == [broken]  # no signal yet: printed as Python would
    interrupts._ARRIVED.append(signal.SIGINT)
    sys.unraisablehook(broken)
    assert seen == [broken]


def test_work_begins_without_a_check_outside_the_command(entry) -> None:
    """A library caller of a command's run (not :func:`attnphase.cli.main`) has no signal mark: an old record does
    not stop it."""
    from attnphase import work

    interrupts._ARRIVED.append(signal.SIGINT)
    work.reset()
    work.begin("solving the state evolution")
    assert work.current() == "solving the state evolution"


def test_a_value_error_after_an_earlier_command_was_stopped_is_still_bad_input(entry, monkeypatch, capsys):
    """Only a signal since the command started makes its error a stop (an in-process caller runs several)."""
    from attnphase import cli
    from attnphase.numerics.commands import solve

    interrupts._ARRIVED.append(signal.SIGINT)  # an earlier command's stop

    def bad(args) -> int:
        raise ValueError("--alpha: must be positive")

    monkeypatch.setattr(solve, "run", bad)
    assert cli.main(["solve", "--alpha", "1"]) == 2
    assert capsys.readouterr().err == "attnphase: error: --alpha: must be positive\n"


def test_an_import_error_without_a_signal_is_not_hidden(entry, monkeypatch):

    def broken() -> int:
        raise ImportError("a missing module")

    monkeypatch.setattr("attnphase.cli.main", broken)
    with pytest.raises(ImportError, match="a missing module"):
        entry.run()


@pytest.mark.parametrize(("sig", "stop"), [(signal.SIGTERM, interrupts.Terminated), (signal.SIGINT, KeyboardInterrupt)])
def test_a_stop_that_lands_in_a_c_callback_is_sent_again_not_dropped(entry, sig, stop, capsys):
    """numba's compiler (llvmlite) calls back into Python; a stop raised there is printed and dropped by Python
    ("Exception ignored on calling ctypes callback function") and the command would run on as if never asked to stop."""
    import ctypes

    def callback() -> None:
        os.kill(os.getpid(), sig)
        time.sleep(1)  # the handler runs here, inside the callback

    with pytest.raises(stop):
        with interrupts.handling_termination():
            ctypes.CFUNCTYPE(None)(callback)()
            for _ in range(100):  # the command's own code goes on: the stop, sent again, is raised here
                time.sleep(0.01)
    err = capsys.readouterr().err
    assert "Exception ignored" not in err and "Traceback" not in err, err


@pytest.mark.parametrize(("sig", "stop"), [(signal.SIGTERM, interrupts.Terminated), (signal.SIGINT, KeyboardInterrupt)])
def test_a_signal_while_the_hook_sends_a_dropped_stop_again_is_not_dropped_too(entry, sig, stop, capsys):
    """The stop lands in a C callback (dropped by Python, handed to ``sys.unraisablehook``), and a signal arrives while
    the hook runs -- the copy it sends again, where the machine is too busy to let the hook return within 10 ms (a
    fresh clone compiling), or a second Ctrl-C.  An exception the hook raises is printed and dropped by Python
    ("Exception ignored in sys.unraisablehook"): the command ran to its end and exited 0.  Here the signal is sent at
    the hook's first instant (a trace function's call event), so it is handled inside the hook every time."""
    import ctypes

    def callback() -> None:
        os.kill(os.getpid(), sig)
        time.sleep(1)  # the handler runs here, inside the callback

    def in_the_hook(frame, event, arg):
        if event == "call" and frame.f_code is interrupts._redeliver.__code__:
            os.kill(os.getpid(), sig)  # handled before the hook's first line
        return None

    tracing = sys.gettrace()
    with pytest.raises(stop):
        with interrupts.handling_termination():
            sys.settrace(in_the_hook)
            try:
                ctypes.CFUNCTYPE(None)(callback)()
            finally:
                sys.settrace(tracing)
            for _ in range(100):  # the command's own code goes on: the stop, sent again, is raised here
                time.sleep(0.01)
    time.sleep(0.05)  # one copy sent, not two: none left to land after the stop
    err = capsys.readouterr().err
    assert "Exception ignored" not in err and "Traceback" not in err, err


#: ``python -c`` as the command: a Ctrl-C handled at the K-th call of importlib's module-lock weakref callback
#: (``_get_module_lock.<locals>.cb``, run as each import ends) while the package loads, then a second of the
#: command's work; exit code 99 where the package loads with fewer than K such calls.  Imports only modules loaded
#: with the interpreter before the package.
_CTRL_C_IN_AN_IMPORTS_CALLBACK = """
import os, sys, time
sys.argv[0] = '-m'; sys.orig_argv[:] = [sys.executable, '-m', 'attnphase', 'census']
K, seen = {k}, [0]
def at_the_callback(frame, event, arg):
    if event == 'call' and frame.f_code.co_name == 'cb' and 'importlib' in frame.f_code.co_filename:
        seen[0] += 1
        if seen[0] == K:
            sys.setprofile(None)
            os.kill(os.getpid(), 2)  # handled at the callback's first instant
sys.setprofile(at_the_callback)
import attnphase
sys.setprofile(None)
if seen[0] < K:
    os._exit(99)
for _ in range(100):
    time.sleep(0.01)
"""


def test_ctrl_c_in_the_callback_that_ends_an_import_while_the_package_loads_is_the_stop():
    """Each import ends in a weakref callback of importlib (the module lock freed), where Python prints and drops an
    exception (\"Exception ignored in: ... cb\").  While the package makes the process the command it imports
    ``signal``, ``threading``, ``typing``: a Ctrl-C handled in one of their callbacks, before the command's own
    ``sys.unraisablehook`` was in place, was dropped and the command ran to its end with exit code 0 (on a fresh
    clone, 0.2 s after start).  At every such callback: exit 130 and the one line."""
    checked = 0
    for k in range(1, 40):
        proc = subprocess.run([sys.executable, "-c", _CTRL_C_IN_AN_IMPORTS_CALLBACK.format(k=k)], capture_output=True,
                              text=True, timeout=60, cwd=ROOT,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        if proc.returncode == 99:
            break
        assert (proc.returncode, proc.stderr) == (130, "attnphase: interrupted\n"), (k, proc.returncode, proc.stderr)
        checked += 1
    assert checked >= 3, checked


def _interpreter_start_up() -> float:
    """Seconds from starting this interpreter to the first line of its ``-c`` code (``site`` and the .pth files of
    the environment included: no project code runs before), the median of five starts on this machine now."""
    import statistics

    times = []
    for _ in range(5):
        t0 = time.monotonic()
        out = subprocess.run([sys.executable, "-c", "import time; print(time.monotonic())"], capture_output=True,
                             text=True, check=True).stdout
        times.append(float(out) - t0)
    return statistics.median(times)


def test_the_package_import_of_the_command_installs_its_handlers_and_a_library_import_does_not():
    """``python -m attnphase`` imports the package before it compiles and runs ``attnphase.__main__``: the package
    makes the process the command there (a Ctrl-C is the stop from then on); ``import attnphase`` in a program, or in
    a worker that multiprocessing spawned, leaves Python's defaults."""
    probe = ("import signal, sys; {} import attnphase; "
             "print(getattr(signal.getsignal(signal.SIGINT), '__name__', ''), sys.excepthook.__module__)")
    as_command = "sys.argv[0] = '-m'; sys.orig_argv[:] = [sys.executable, '-m', 'attnphase', 'solve'];"
    worker = "sys.argv[0] = '-m'; sys.orig_argv[:] = [sys.executable, '-m', 'attnphase', '--multiprocessing-fork'];"
    got = {name: subprocess.run([sys.executable, "-c", probe.format(pre)], capture_output=True, text=True,
                                check=True, cwd=ROOT).stdout.split()
           for name, pre in (("command", as_command), ("library", ""), ("worker", worker))}
    assert got["command"] == ["_raise_interrupt", "attnphase.interrupts"], got
    assert got["library"] == got["worker"] == ["default_int_handler", "sys"], got


def test_ctrl_c_once_the_interpreter_has_started_is_the_stop(tmp_path):
    """SIGINT at 0.05 ... 0.5 s after ``python -m attnphase census`` (``LONG``) starts: exit 130, the one line, no traceback,
    wherever it lands once the interpreter's own start-up is over (measured here: before it no project code can run;
    a signal there is Python's default action, with no frame of the project)."""
    start_up = _interpreter_start_up()
    checked = 0
    for delay in (0.05, 0.1, 0.2, 0.3, 0.5):
        proc = subprocess.Popen([sys.executable, "-m", "attnphase", *LONG],  # still running at 0.5 s, warm cache or not
                                cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        assert _project_frames(err) == [], (delay, err)
        if delay >= start_up + 0.03:
            assert proc.returncode == 130 and "Traceback" not in err, (delay, start_up, proc.returncode, err)
            assert err.strip().splitlines()[-1] == "attnphase: interrupted" and out == "", (delay, err)
            checked += 1
    assert checked >= 2 or start_up > 0.2, start_up  # a machine so loaded that its start-up takes 0.2 s checks less


def test_a_signal_during_shut_down_after_a_stop_keeps_the_exit_code():
    """A stop reported (``stopped``), then a Ctrl-C and a SIGTERM while the process shuts down (its ``atexit``
    functions), as ``_redeliver`` sends one again when a C library both dropped it and turned it into an error the
    command stopped on: the exit code stays 130 with the one line, never death by SIGINT (-2) or a traceback.  The
    other way to -2 (CPython's own exit after a Ctrl-C a C library ran code under) is the test above's delays."""
    code = ("import os, signal, sys, time\n"
            "from attnphase import interrupts\n"
            "interrupts.THE_COMMAND = True  # as in the command's own process\n"
            "interrupts.handle_from_start()\n"
            "import atexit\n"
            "def late():  # a Ctrl-C and a SIGTERM while the process shuts down\n"
            "    os.kill(os.getpid(), signal.SIGINT); os.kill(os.getpid(), signal.SIGTERM); time.sleep(0.05)\n"
            "atexit.register(late)\n"
            "sys.exit(interrupts.exit_code_kept(interrupts.stopped(KeyboardInterrupt())))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.returncode == 130 and "Traceback" not in proc.stderr, (proc.returncode, proc.stderr)
    assert proc.stderr == "attnphase: interrupted\n"
