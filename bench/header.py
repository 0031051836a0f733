"""The report's header: which revision, when, on what machine, with which versions
and database settings; and a warning when the results are not from one run of
one revision (bench/provenance.py records these in every results file)."""

from __future__ import annotations

from formatting import table


def _revision(documents: dict[str, dict]) -> tuple[str, list[str]]:
    commits = {name: doc.get("commit", "unknown") for name, doc in documents.items()}
    dirty = sorted(name for name, doc in documents.items() if doc.get("dirty"))
    warnings = []
    text = ", ".join(sorted({commit[:12] for commit in commits.values()}))
    if len(set(commits.values())) > 1:
        warnings.append(
            "**Mixed revisions:** the results were made at different commits ("
            + "; ".join(f"{name} at {commit[:12]}" for name, commit in commits.items())
            + "); they are not one run of one revision."
        )
    if "unknown" in commits.values():
        warnings.append("**Unknown revision** for some results (no git, or an older file).")
    if dirty:
        text += " with uncommitted changes"
        warnings.append(
            f"**Uncommitted changes** in the working tree when {', '.join(dirty)} ran: the "
            "figures are not of the commit named."
        )
    return text, warnings


def _disk(disk: dict | None) -> str:
    if not disk:
        return "unknown"
    kind = disk.get("kind")
    flags = ", ".join(
        part
        for part in (
            kind and f"{kind} device",
            disk.get("filesystem"),
            "the kernel flags it rotational" if disk.get("rotational") else None,
        )
        if part
    )
    return f"{disk['device']} ({flags}), holding {disk['path']}"


def _settings(documents: dict[str, dict]) -> list[list[str]]:
    """One row per benchmark and database: the settings it ran with, as read back."""
    rows = []
    for name, doc in documents.items():
        for database, systems in (doc["settings"].get("durability") or {}).items():
            text = "; ".join(
                f"{system}: " + ", ".join(f"{key} {value}" for key, value in found.items())
                for system, found in systems.items()
            )
            rows.append([f"{database} ({name})", text])
    return rows


def header(documents: dict[str, dict], runs: dict) -> list[str]:
    """The header lines: the facts table, then any warning about the results' origin."""
    if not documents:
        return ["**No results:** no benchmark wrote figures.", ""]
    first = next(iter(documents.values()))
    machine = first.get("machine") or {}
    revision, warnings = _revision(documents)
    dates = sorted(doc["date"] for doc in documents.values() if doc.get("date"))
    modes = {bool(doc["settings"].get("quick")) for doc in documents.values()}
    machines = {repr(doc.get("machine")) for doc in documents.values()}
    if len(machines) > 1:
        warnings.append("**Mixed machines:** the results were not all made on this machine.")
    if len(modes) > 1:
        warnings.append("**Mixed modes:** some results are quick, some full.")
    versions = first.get("versions") or {}
    usable = machine.get("cpus_usable")
    cpus = f"{machine.get('cpus')} CPUs" + (
        f" ({usable} usable)" if usable and usable != machine.get("cpus") else ""
    )
    rows = [
        ["commit", revision or "unknown"],
        ["date", " to ".join(dict.fromkeys([dates[0], dates[-1]])) if dates else "unknown"],
        ["machine", f"{cpus}, {machine.get('cpu_model')}, {machine.get('memory_gb')} GB memory"],
        ["virtualisation", machine.get("virtualisation", "unknown")],
        ["disk", _disk(machine.get("disk"))],
        ["system", machine.get("system", "unknown")],
        ["Python", f"{machine.get('implementation')} {machine.get('python')}"],
        ["libraries", ", ".join(f"{name} {version}" for name, version in versions.items())],
        *_settings(documents),
        ["mode", "quick (`make bench QUICK=1`: shorter windows)" if True in modes else "full"],
        [
            "run",
            ", ".join(
                f"{name} {run['seconds']:.0f} s" + ("" if run.get("ok") else " (FAILED)")
                for name, run in runs.items()
            ),
        ],
    ]
    lines = [table(["", ""], rows), ""]
    for warning in warnings:
        lines += [warning, ""]
    return lines
