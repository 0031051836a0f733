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
TITLES = {
    "failed": "{schedule} is failing",
    "recovered": "{schedule} recovered",
    "late": "{schedule} is late",
    "stuck": "{schedule} has a stuck run",
    "auto_paused": "{schedule} was auto-paused",
    "test": "Test notification from Sillo Dash",
}


def absolute_url(schedule_id: int | None, run_id: int | None = None) -> str:
    base = setting("SILLO_BASE_URL").rstrip("/")
    try:
        path = (
            reverse("schedules:schedule-detail", args=[schedule_id])
            if schedule_id
            else reverse("schedules:home")
        )
    except NoReverseMatch:
        path = "/"
    return f"{base}{path}" + (f"#run-{run_id}" if run_id else "")


def run_document(run: Any | None) -> dict[str, Any] | None:
    if run is None:
        return None
    error = run.error or ""
    if len(error) > ERROR_MAX_CHARS:
        error = error[: ERROR_MAX_CHARS - 1] + "…"
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


def title_of(payload: dict[str, Any]) -> str:
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
    lines += [f"Task: {payload.get('task') or '-'}", f"At: {payload['at']}", payload["url"]]
    return "\n".join(lines)


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None
