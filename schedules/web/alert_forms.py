"""Forms of the alerts pages: a schedule's rules (empty inherits), a channel."""

from __future__ import annotations

from typing import Any

from django import forms

from ..alerts.machine import NOTIFIABLE
from ..alerts.schema import RULE_NAMES, InvalidRules, clean_rules
from ..notify.targets import InvalidChannel, parse

INHERIT = ""
_NUMBERS = {
    "after_failures": (forms.IntegerField, "final failures in a row before failing opens"),
    "repeat_every": (forms.FloatField, "seconds between reminders while still failing"),
    "late_after": (
        forms.FloatField,
        "seconds past a slot before it is late (default: misfire grace)",
    ),
    "max_duration": (forms.FloatField, "seconds after which a run is stuck"),
    "stuck_factor": (forms.FloatField, "or: stuck after k × the recent p95 duration"),
    "pause_after": (forms.IntegerField, "auto-pause after this many final failures in a row"),
    "probe_after": (forms.FloatField, "half-open: one probe run this many seconds after pausing"),
}


class AlertRulesForm(forms.Form):
    """A schedule's own rules. An empty field inherits from the task and the settings."""

    notify_override = forms.BooleanField(required=False, label="Choose which incidents notify")
    notify = forms.MultipleChoiceField(
        required=False,
        choices=[(e, e.replace("_", "-")) for e in NOTIFIABLE],
        widget=forms.CheckboxSelectMultiple,
    )
    notify_recovery = forms.ChoiceField(
        required=False,
        label="Notify on recovery",
        choices=[(INHERIT, "inherit"), ("yes", "yes"), ("no", "no (quiet)")],
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, (field, help_text) in _NUMBERS.items():
            self.fields[name] = field(required=False, min_value=0, help_text=help_text)

    @classmethod
    def from_rules(cls, rules: dict[str, Any]) -> AlertRulesForm:
        initial: dict[str, Any] = {k: v for k, v in rules.items() if k in _NUMBERS}
        if "notify" in rules:
            initial["notify_override"] = True
            initial["notify"] = rules["notify"]
        if "notify_recovery" in rules:
            initial["notify_recovery"] = "yes" if rules["notify_recovery"] else "no"
        return cls(initial=initial)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        rules: dict[str, Any] = {}
        for name in _NUMBERS:
            if data.get(name) is not None:
                rules[name] = data[name]
        if data.get("notify_override"):
            rules["notify"] = data.get("notify") or []
        if data.get("notify_recovery"):
            rules["notify_recovery"] = data["notify_recovery"] == "yes"
        try:
            self.rules = clean_rules(rules)
        except InvalidRules as exc:
            name = str(exc).split(" ", 1)[0].rstrip(":")
            self.add_error(name if name in RULE_NAMES and name in self.fields else None, str(exc))
        return data


class ChannelForm(forms.Form):
    name = forms.CharField(max_length=100)
    url = forms.CharField(
        label="URL",
        widget=forms.TextInput(attrs={"autocomplete": "off"}),
        help_text="https://… (JSON webhook), mailto:ops@example.com, or an apprise URL "
        "(slack://…, ntfy://…, tgram://…)",
    )
    secret = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="webhooks only: signs each POST with HMAC-SHA256 (X-Sillo-Signature)",
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("url"):
            try:
                parse(data["url"], secret=data.get("secret", ""))
            except InvalidChannel as exc:
                self.add_error("url", str(exc))
        return data
