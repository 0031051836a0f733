"""Where a benchmark's figures come from: the revision, the machine, the versions.

Every results file carries this, so the report can print it and can tell
when the files were not all made by one run of one revision. Every probe is
best effort: what cannot be read is reported as unknown, never guessed.
"""

from __future__ import annotations

import os
import platform
import shutil
import sqlite3
import subprocess
import time
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The libraries whose version decides a figure: the peers and what Sillo Dash runs on.
LIBRARIES = ("Django", "APScheduler", "SQLAlchemy", "cronsim", "croniter", "psycopg",
             "channels", "channels-redis", "daphne", "redis")  # fmt: skip
# PCI vendor ids of virtual disks (virtio, VMware, Hyper-V's is not PCI).
VIRTUAL_DISK_VENDORS = {"0x1af4": "virtio", "0x15ad": "VMware"}


def _run(*command: str) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=10, cwd=ROOT)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip()


def revision() -> dict:
    """The commit, and whether tracked files differed from it (generated docs aside)."""
    commit = _run("git", "rev-parse", "HEAD")
    changed = _run("git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                   ":!docs/benchmarks.md", ":!docs/benchmarks")  # fmt: skip
    return {"commit": commit or "unknown", "dirty": bool(changed)}


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def _cpuinfo(key: str) -> str:
    for line in _read("/proc/cpuinfo").splitlines():
        name, _, value = line.partition(":")
        if name.strip() == key:
            return value.strip()
    return ""


def disk(path: Path) -> dict:
    """The block device and file system that hold `path` (the benchmarks' files)."""
    found = {"path": str(path), "filesystem": "unknown", "device": "unknown"}
    best = ""
    for line in _read("/proc/self/mounts").splitlines():
        device, mount, kind, *_ = line.split()
        inside = str(path) == mount or str(path).startswith(mount.rstrip("/") + "/")
        if inside and len(mount) > len(best):
            best, found["device"], found["filesystem"] = mount, device, kind
    name = Path(found["device"]).name
    block = Path("/sys/block") / name
    if block.exists():
        vendor = _read(f"{block}/device/vendor")
        found["kind"] = VIRTUAL_DISK_VENDORS.get(vendor) or _read(f"{block}/device/model") or ""
        found["rotational"] = _read(f"{block}/queue/rotational") == "1"
    return found


def virtualisation() -> str:
    """What the kernel and systemd say about running in a VM or a container."""
    said = []
    if shutil.which("systemd-detect-virt"):
        vm = _run("systemd-detect-virt", "--vm")
        container = _run("systemd-detect-virt", "--container")
        said += [f"VM: {vm}"] if vm and vm != "none" else []
        said += [f"container: {container}"] if container and container != "none" else []
    if "hypervisor" in _cpuinfo("flags").split():
        said.append("the CPU reports a hypervisor")
    return "; ".join(said) or "none detected"


def machine(workdir: Path | None = None) -> dict:
    """The facts that decide whether two reports can be compared."""
    memory = 0
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            memory = int(line.split()[1]) * 1024
    return {
        "cpus": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu_model": _cpuinfo("model name") or platform.processor() or platform.machine(),
        "memory_gb": round(memory / 2**30, 1) if memory else None,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "system": f"{platform.system()} {platform.release()} {platform.machine()}",
        "virtualisation": virtualisation(),
        "disk": disk(workdir or Path(os.environ.get("TMPDIR", "/tmp"))),
    }


def versions() -> dict:
    found = {}
    for name in LIBRARIES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    found["SQLite"] = sqlite3.sqlite_version
    return found


def provenance(workdir: Path | None = None) -> dict:
    return {
        **revision(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "machine": machine(workdir),
        "versions": versions(),
    }
