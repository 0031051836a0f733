"""Run the suite on the production profile: throwaway PostgreSQL and Redis servers.

    python -m tests.production_profile [pytest args]

Starts PostgreSQL (initdb/pg_ctl in a temporary folder, as the `postgres`
user when run as root) and Redis (`redis-server` on a free port) from the
system binaries, points DATABASE_URL and REDIS_URL at them, runs pytest on
every test not marked `sqlite`, and stops both servers. Without the binaries
it says why and exits 0, unless CI=true, where a missing server fails the run.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def find(binary: str) -> str | None:
    found = shutil.which(binary)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{binary}"))
    return candidates[-1] if candidates else None


def _as_postgres(args: list[str]) -> list[str]:
    """initdb refuses to run as root: run the server tools as the postgres user."""
    if os.geteuid() != 0:
        return args
    return ["runuser", "-u", "postgres", "--", *args]


@contextlib.contextmanager
def postgres(*, durable: bool = False) -> Iterator[str]:
    initdb, pg_ctl = find("initdb"), find("pg_ctl")
    if not initdb or not pg_ctl:
        raise FileNotFoundError("initdb/pg_ctl not found (apt-get install postgresql)")
    folder = Path(tempfile.mkdtemp(prefix="sillo-pg-"))
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(folder, user.pw_uid, user.pw_gid)
    data = folder / "data"
    port = free_port()
    subprocess.run(
        _as_postgres([initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"]),
        check=True, capture_output=True,
    )  # fmt: skip
    # Tests trade durability for speed; benchmarks measure what production runs (durable).
    durability = "-c fsync=on -c synchronous_commit=on" if durable else "-c fsync=off"
    options = (
        f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 {durability} -c max_connections=200"
    )
    start = [pg_ctl, "-D", str(data), "-l", str(folder / "log"), "-o", options, "-w", "start"]
    subprocess.run(_as_postgres(start), check=True, capture_output=True)
    try:
        yield f"postgres://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            _as_postgres([pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"]),
            capture_output=True,
        )  # fmt: skip
        shutil.rmtree(folder, ignore_errors=True)


class RedisServer(NamedTuple):
    url: str
    pid: int


@contextlib.contextmanager
def redis() -> Iterator[RedisServer]:
    server = shutil.which("redis-server")
    if not server:
        raise FileNotFoundError("redis-server not found (apt-get install redis-server)")
    folder = Path(tempfile.mkdtemp(prefix="sillo-redis-"))
    port = free_port()
    process = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(folder)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 10
    while True:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            break
        if time.monotonic() > deadline:
            process.kill()
            raise RuntimeError("redis-server did not start")
        time.sleep(0.05)
    try:
        yield RedisServer(f"redis://127.0.0.1:{port}/0", process.pid)
    finally:
        process.terminate()
        process.wait(10)
        shutil.rmtree(folder, ignore_errors=True)


def main(args: list[str]) -> int:
    ci = os.environ.get("CI") == "true"
    try:
        with postgres() as database_url, redis() as (redis_url, _pid):
            env = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": redis_url}
            print(f"production profile: PostgreSQL {database_url}, Redis {redis_url}", flush=True)
            command = [sys.executable, "-m", "pytest", "-m", "not sqlite and not pure", *args]
            return subprocess.run(command, env=env).returncode
    except (FileNotFoundError, subprocess.CalledProcessError) as exc:
        detail = exc.stderr.decode(errors="replace")[-500:] if getattr(exc, "stderr", None) else ""
        message = f"production profile not tested: {exc} {detail}".strip()
        print(message, file=sys.stderr)
        return 1 if ci else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
