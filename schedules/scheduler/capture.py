"""Capturing what a run prints and logs: a capped buffer, and where the text comes from.

Three places execute a task body, and each feeds one `OutputBuffer` per run:

- a worker process redirects its stdout, stderr and root logger to a
  `PipeWriter`, which ships the text to the scheduler over the worker's pipe
  as it comes (every 50 ms, or at once past 64 KB), so the scheduler holds
  everything written up to the moment a run is stopped at its timeout;
- an inline run (`isolation="inline"`, or no pool) writes to the buffer of
  the run whose context it executes in (`capturing()`), so concurrent inline
  runs, on the loop or in threads, never mix their output;
- a django.tasks worker runs the same engine, so one of the two above.

The buffer keeps the head and the tail within the cap and says how much was
cut between them; it also holds the text not yet streamed to live pages.
"""

from __future__ import annotations

import contextlib
import io
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from multiprocessing.connection import Connection
from typing import Any

from ..storable import storable_text

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LIVE_CHUNK_MAX = 64 * 1024  # characters sent live at once; older pending text is skipped
SHIP_EVERY = 0.05  # seconds a worker holds output before shipping it
SHIP_AT = 64 * 1024  # characters a worker ships at once, without waiting


class OutputBuffer:
    """A run's output, capped: the first half of `limit` characters and the last half.

    Thread-safe: inline sync tasks write from pool threads while the loop reads.
    """

    def __init__(self, limit: int) -> None:
        self.limit = max(int(limit), 2)
        self._head_limit = self.limit // 2
        self._tail_limit = self.limit - self._head_limit
        self._head = ""
        self._tail: list[str] = []
        self._tail_len = 0
        self.total = 0  # characters written, cut or not
        self._pending: list[str] = []
        self._pending_len = 0
        self._pending_from = 0  # offset (in `total`) of the first pending character
        self._saved_total = 0
        self._lock = threading.Lock()
        # Called (from the writing thread) when the first text arrives: most runs
        # print nothing, and need nothing streamed.
        self.on_first_write: Callable[[], Any] | None = None

    def write(self, text: str) -> int:
        if not text:
            return 0
        text = storable_text(text)  # saved, published and shown as the database keeps it
        with self._lock:
            first = self.total == 0
            self._keep(text)
            self._pending.append(text)
            self._pending_len += len(text)
            self.total += len(text)
            if self._pending_len > 2 * LIVE_CHUNK_MAX:
                joined = "".join(self._pending)[-LIVE_CHUNK_MAX:]
                self._pending, self._pending_len = [joined], len(joined)
                self._pending_from = self.total - len(joined)
        if first and self.on_first_write is not None:
            self.on_first_write()
        return len(text)

    def _keep(self, text: str) -> None:
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += text[:room]
            text = text[room:]
        if not text:
            return
        self._tail.append(text)
        self._tail_len += len(text)
        if self._tail_len > 2 * self._tail_limit:
            joined = "".join(self._tail)[-self._tail_limit :]
            self._tail, self._tail_len = [joined], len(joined)

    @property
    def cut(self) -> int:
        with self._lock:
            return self._cut()

    def _cut(self) -> int:
        return max(0, self.total - len(self._head) - min(self._tail_len, self._tail_limit))

    def text(self) -> str:
        """Everything kept: the head, a note of what was cut, the tail."""
        with self._lock:
            return self._text()

    def _text(self) -> str:
        tail = "".join(self._tail)[-self._tail_limit :] if self._tail else ""
        cut = self._cut()
        if not cut:
            return self._head + tail
        return f"{self._head}\n… [{cut:,} characters cut] …\n{tail}"

    def snapshot(self) -> tuple[str, int, int]:
        """(text, total, cut) at one instant, to be saved."""
        with self._lock:
            return self._text(), self.total, self._cut()

    def take_pending(self) -> tuple[int, str]:
        """(offset, text) written since the last call, for the live stream."""
        with self._lock:
            text, offset = "".join(self._pending), self._pending_from
            self._pending, self._pending_len = [], 0
            self._pending_from = self.total
            return offset, text

    def unsaved(self) -> bool:
        """Whether text was written since the last `mark_saved()`."""
        with self._lock:
            return self.total != self._saved_total

    def mark_saved(self, total: int) -> None:
        with self._lock:
            self._saved_total = total


def level_number(level: str | int | None) -> int | None:
    """A logging level from a name or a number; None or "" captures no log records."""
    if level in (None, "", "OFF", "off"):
        return None
    if isinstance(level, int):
        return level
    number = logging.getLevelName(str(level).upper())
    if not isinstance(number, int):
        raise ValueError(f"unknown logging level {level!r}")
    return number


# ---------------------------------------------------------------- inline runs

_current: ContextVar[OutputBuffer | None] = ContextVar("sillo_run_output", default=None)
_installed = 0
_install_lock = threading.Lock()


class _Redirect(io.TextIOBase):
    """sys.stdout / sys.stderr while inline runs capture: text written in a run's
    context goes to its buffer, any other to the stream that was there before."""

    def __init__(self, original: Any) -> None:
        self.original = original

    def write(self, text: str) -> int:
        buffer = _current.get()
        if buffer is not None:
            return buffer.write(text)
        return self.original.write(text)

    def flush(self) -> None:
        if _current.get() is None:
            self.original.flush()

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.original, "encoding", "utf-8")


class _ContextHandler(logging.Handler):
    """Log records emitted in a run's context, written to its buffer."""

    def emit(self, record: logging.LogRecord) -> None:
        buffer = _current.get()
        if buffer is None:
            return
        try:
            buffer.write(self.format(record) + "\n")
        except Exception:  # noqa: BLE001  a record that cannot format must not fail the run
            self.handleError(record)


_handler = _ContextHandler()
_handler.setFormatter(logging.Formatter(FORMAT))


@contextlib.contextmanager
def capturing(buffer: OutputBuffer | None, level: int | None) -> Iterator[None]:
    """Route this context's prints and log records (at `level` and above) to `buffer`.

    The redirection is installed while any inline run captures and removed
    after the last one, unless something else replaced the streams meanwhile.
    Loggers keep the levels the process configured: a record a logger drops
    never reaches the handler (worker processes lower their root logger instead).
    """
    if buffer is None:
        yield
        return
    global _installed
    with _install_lock:
        if _installed == 0:
            sys.stdout = _Redirect(sys.stdout)
            sys.stderr = _Redirect(sys.stderr)
            logging.getLogger().addHandler(_handler)
        _installed += 1
        _handler.setLevel(level if level is not None else logging.CRITICAL + 1)
    token = _current.set(buffer)
    try:
        yield
    finally:
        _current.reset(token)
        with _install_lock:
            _installed -= 1
            if _installed == 0:
                logging.getLogger().removeHandler(_handler)
                for name in ("stdout", "stderr"):
                    stream = getattr(sys, name)
                    if isinstance(stream, _Redirect):
                        setattr(sys, name, stream.original)


# ---------------------------------------------------------------- worker processes


class PipeWriter(io.TextIOBase):
    """A worker's stdout and stderr during its runs: text shipped to the scheduler as
    `{"output": text}` messages, by a thread every SHIP_EVERY seconds while a run
    is on, or at once past SHIP_AT characters (a task that prints fast waits for
    the pipe). One writer and one thread for the worker's life: a thread per run
    would cost a quick run more than the run."""

    def __init__(self, conn: Connection, lock: threading.Lock) -> None:
        self.conn = conn
        self.send_lock = lock
        self._pending: list[str] = []
        self._size = 0
        self._lock = threading.Lock()
        self._running = threading.Event()
        self._thread = threading.Thread(target=self._ship_forever, daemon=True)

    def start(self) -> PipeWriter:
        self._thread.start()
        return self

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            text = str(text)
        with self._lock:
            self._pending.append(text)
            self._size += len(text)
            full = self._size >= SHIP_AT
        if full:
            self.ship()
        return len(text)

    def flush(self) -> None:
        """Shipping is the thread's business; a task's flush() costs nothing."""

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def ship(self) -> None:
        # Taken and sent under the pipe's lock: text shipped by the thread can never
        # arrive after the run's reply (it would be read as the next run's output).
        with self.send_lock:
            with self._lock:
                text = "".join(self._pending)
                self._pending, self._size = [], 0
            if text:
                # The scheduler gone: the run's reply fails the same way, and says so.
                with contextlib.suppress(OSError, ValueError):
                    self.conn.send({"output": text})

    def _ship_forever(self) -> None:
        while True:
            self._running.wait()  # idle between runs
            time.sleep(SHIP_EVERY)
            self.ship()

    def begin_run(self) -> None:
        # Text written after the last run ended (a thread it left behind) is not this run's.
        with self._lock:
            self._pending, self._size = [], 0
        self._running.set()

    def end_run(self) -> None:
        """Ship the rest: called before the run's reply is sent."""
        self._running.clear()
        self.ship()


class _WriterHandler(logging.Handler):
    def __init__(self, writer: PipeWriter, level: int) -> None:
        super().__init__(level)
        self.writer = writer
        self.setFormatter(logging.Formatter(FORMAT))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.writer.write(self.format(record) + "\n")
        except Exception:  # noqa: BLE001  a record that cannot format must not fail the run
            self.handleError(record)


@contextlib.contextmanager
def capturing_in_worker(writer: PipeWriter, level: int | None) -> Iterator[PipeWriter]:
    """A worker's stdout, stderr and root logger shipped to the scheduler for one run.

    The worker has one run at a time and is its own process, so its root
    logger is lowered to `level` for the run: a task's INFO records are
    captured even where the project's logging keeps WARNING and above.
    """
    writer.begin_run()
    root = logging.getLogger()
    handler = _WriterHandler(writer, level) if level is not None else None
    saved = sys.stdout, sys.stderr, root.level
    sys.stdout = sys.stderr = writer
    if handler is not None:
        root.addHandler(handler)
        if root.level > level:
            root.setLevel(level)
    try:
        yield writer
    finally:
        sys.stdout, sys.stderr = saved[0], saved[1]
        if handler is not None:
            root.removeHandler(handler)
            root.setLevel(saved[2])
        writer.end_run()
