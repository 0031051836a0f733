"""Operations on alerts that operators ask for: rules, channels, test notifications."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from ..conf import setting
from ..models import Schedule
from ..notify import outbox, payload, send
from ..notify.errors import DeliveryFailed
from ..notify.targets import Target, env_targets, kind_of, parse
from .models import Channel
from .schema import clean_rules


def alert_rules_set(*, schedule: Schedule, rules: dict[str, Any]) -> Schedule:
    """Replace a schedule's own rules (the keys it overrides); raises InvalidRules."""
    schedule.alert = clean_rules(rules)
    schedule.updated_at = timezone.now()  # an edit: a run held for a worker reads it again
    Schedule.objects.filter(pk=schedule.pk).update(
        alert=schedule.alert, updated_at=schedule.updated_at
    )
    return schedule


def channel_create(
    *, name: str, url: str, secret: str = "", by: AbstractBaseUser | None = None
) -> Channel:
    """Save a channel; raises InvalidChannel for a URL no kind accepts."""
    parse(url, secret=secret)
    return Channel.objects.create(
        name=name,
        kind=kind_of(url),
        url=url.strip(),
        secret=secret,
        created_by=by if by is not None and by.is_authenticated else None,
    )


def channel_set_enabled(*, channel: Channel, enabled: bool) -> Channel:
    channel.enabled = enabled
    channel.save(update_fields=["enabled"])
    return channel


def channel_delete(*, channel: Channel) -> None:
    """Delete a channel; its delivery log stays (under its name)."""
    channel.delete()


@dataclass(frozen=True)
class TestAnswer:
    label: str
    ok: bool
    answer: str


def send_test(*, targets: list[Target], schedule: Schedule | None = None) -> list[TestAnswer]:
    """Send an `event: test` notification now, outside the outbox, and report each answer."""
    now = timezone.now()
    document = payload.build(
        event="test",
        schedule_code=schedule.code if schedule else "",
        schedule_id=schedule.pk if schedule else None,
        task_name=schedule.task_name if schedule else "",
        run=None,
        at=now,
        text="A test notification: this channel works.",
    )
    answers = []
    for i, target in enumerate(targets):
        try:
            answer = send.deliver(
                target,
                document,
                timeout=outbox_timeout(),
                delivery_id=f"test-{int(now.timestamp())}-{i}",
            )
            answers.append(TestAnswer(target.label, True, answer))
        except DeliveryFailed as exc:
            answers.append(TestAnswer(target.label, False, str(exc)))
        except Exception as exc:  # a channel's bug must not become a traceback page
            answers.append(TestAnswer(target.label, False, f"{type(exc).__name__}: {exc}"))
    return answers


def all_targets() -> list[Target]:
    return outbox.targets()


def env_target(index: int) -> Target | None:
    found = env_targets()
    return found[index] if 0 <= index < len(found) else None


def outbox_timeout() -> float:
    return setting("SILLO_NOTIFY_TIMEOUT")
