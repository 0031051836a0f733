"""The notification payload: a stable interface (docs/alerts.md, "Payload").

Built when the notification is written, so that every channel and every
retry sends the same document about the moment it describes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.urls import NoReverseMatch, reverse

from ..conf import setting

ERROR_MAX_CHARS = 1000
SUMMARY_ERROR_CHARS = 120  # of each member's error, in a summary's text
TITLES = {
    "failed": "{schedule} is failing",
    "recovered": "{schedule} recovered",
    "late": "{schedule} is late",
    "stuck": "{schedule} has a stuck run",
    "auto_paused": "{schedule} was auto-paused",
    "test": "Test notification from Sillo Dash",
}
# A summary's title, by the event its members share.
SUMMARY_TITLES = {
    "failed": "{size} schedules are failing",
    "recovered": "{size} schedules recovered",
    "late": "{size} schedules are late",
    "stuck": "{size} schedules have a stuck run",
    "auto_paused": "{size} schedules were auto-paused",
}


def absolute_url(schedule_id: int | None, run_id: int | None = None) -> str:
    if schedule_id:
        return _absolute("schedules:schedule-detail", schedule_id) + (
            f"#run-{run_id}" if run_id else ""
        )
    return _absolute("schedules:home")


def _absolute(name: str, *args: Any) -> str:
    base = setting("SILLO_BASE_URL").rstrip("/")
    try:
        path = reverse(name, args=args)
    except NoReverseMatch:
        path = "/"
    return f"{base}{path}"


def run_document(run: Any | None) -> dict[str, Any] | None:
    if run is None:
        return None
    error = _clipped(run.error or "", ERROR_MAX_CHARS)
    return {
        "id": run.pk,
        "status": run.status,
        "attempt": run.attempt,
        "started_at": _iso(run.started_at),
        "finished_at": _iso(run.finished_at),
        "error": error,
    }


def build(
    *,
    event: str,
    schedule_code: str,
    task_name: str,
    schedule_id: int | None,
    run: Any | None,
    at: datetime,
    text: str = "",
    incident_id: int | None = None,
    kind: str = "",
) -> dict[str, Any]:
    return {
        "event": event,
        "schedule": schedule_code,
        "task": task_name,
        "run": run_document(run),
        "url": absolute_url(schedule_id, run.pk if run is not None else None),
        "at": at.isoformat(),
        "text": text,
        "incident": {"id": incident_id, "kind": kind} if incident_id else None,
    }


def summary(
    *, event: str, members: list[dict[str, Any]], size: int, at: datetime
) -> dict[str, Any]:
    """The payload of a summary of `size` notifications of `event` (notify/grouping.py):
    the fields of a single one, with `group` naming the first `members`."""
    lines = [_member_line(m) for m in members]
    if size > len(members):
        lines.append(f"and {size - len(members)} more")
    return {
        "event": event,
        "schedule": "",
        "task": "",
        "run": None,
        "url": _absolute("schedules:incident-list"),
        "at": at.isoformat(),
        "text": "\n".join(lines),
        "incident": None,
        "group": {"size": size, "schedules": [m.get("schedule") or "" for m in members]},
    }


def _member_line(member: dict[str, Any]) -> str:
    line = f"{member.get('schedule') or '-'}: {member.get('text') or member['event']}"
    error = ((member.get("run") or {}).get("error") or "").strip().splitlines()
    if not error:
        return line
    raised = error[-1]  # a traceback's last line says what was raised
    return f"{line} ({_clipped(raised, SUMMARY_ERROR_CHARS)})"


def _clipped(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def title_of(payload: dict[str, Any]) -> str:
    group = payload.get("group")
    if group:
        template = SUMMARY_TITLES.get(payload["event"], "{size} notifications: {event}")
        return template.format(size=group["size"], event=payload["event"])
    return TITLES.get(payload["event"], "{schedule}: {event}").format(
        schedule=payload.get("schedule") or "-", event=payload["event"]
    )


def body_of(payload: dict[str, Any]) -> str:
    lines = [title_of(payload)]
    if payload.get("text"):
        lines.append(payload["text"])
    run = payload.get("run")
    if run:
        lines.append(f"Run {run['id']}: {run['status']} (attempt {run['attempt']})")
        if run.get("error"):
            lines.append(run["error"])
    if not payload.get("group"):
        lines.append(f"Task: {payload.get('task') or '-'}")
    lines += [f"At: {payload['at']}", payload["url"]]
    return "\n".join(lines)


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None
