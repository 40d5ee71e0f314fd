"""Run hostile code in a child interpreter, so that an abort, a segfault or a hang fails
one test instead of killing (or stalling) the whole pytest run.

Not a test module (no ``test_`` prefix); the hostile suites import it by name.

``run_isolated(code)`` runs ``code`` (a Python source string, dedented) in a fresh
``python -X faulthandler`` with the same ``sys.path`` as this process and returns the
finished process. ``assert_clean(code)`` also asserts that it exited 0, and that its
stderr has no "Exception ignored" noise, no panic and no fatal-error report.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

# Generous: a debug build of the extension imports slowly on a loaded 2-core machine.
DEFAULT_TIMEOUT = 120

NOISE = ("Exception ignored", "panicked", "Fatal Python error", "Traceback")


class IsolatedFailure(AssertionError):
    pass


def run_isolated(code: str, timeout: float = DEFAULT_TIMEOUT, env: dict | None = None):
    """Runs ``code`` in a child interpreter; a hang past ``timeout`` seconds raises
    ``IsolatedFailure`` (the child is killed), anything else returns the process."""
    child_env = dict(os.environ)
    child_env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    child_env.setdefault("RUST_BACKTRACE", "1")
    if env:
        child_env.update(env)
    src = textwrap.dedent(code)
    try:
        return subprocess.run(
            [sys.executable, "-X", "faulthandler", "-c", src],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=child_env,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as e:
        raise IsolatedFailure(
            f"child hung for {timeout}s\n--- stdout\n{e.stdout}\n--- stderr\n{e.stderr}\n--- code\n{src}"
        ) from None


def describe(r) -> str:
    how = f"signal {-r.returncode}" if r.returncode < 0 else f"exit {r.returncode}"
    return f"child {how}\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}"


def assert_clean(code: str, timeout: float = DEFAULT_TIMEOUT, env: dict | None = None):
    """Runs ``code`` isolated and asserts a clean exit: status 0, and nothing on stderr
    that reports a panic, an ignored exception or a fatal error. Returns the process
    (its stdout is the child's printed output)."""
    r = run_isolated(code, timeout=timeout, env=env)
    if r.returncode != 0:
        raise IsolatedFailure(describe(r))
    bad = [n for n in NOISE if n in r.stderr]
    if bad:
        raise IsolatedFailure(f"noise on stderr ({', '.join(bad)})\n" + describe(r))
    return r
