"""The schedule form: task, kwargs (validated against the task's signature), options."""

from __future__ import annotations

import inspect
import json
from zoneinfo import available_timezones

from django import forms

from ..choices import priority_value
from ..models import Schedule
from ..registry import OPTION_NAMES, registry

ZONES = sorted(available_timezones())


class ScheduleForm(forms.ModelForm):
    kwargs = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
        required=False,
        help_text="A JSON object: the keyword arguments the task receives.",
    )
    task_name = forms.ChoiceField(choices=())
    # The version the operator opened: saving onto a newer one is refused (see schedule_update).
    opened_version = forms.IntegerField(widget=forms.HiddenInput, required=False)

    class Meta:
        model = Schedule
        fields = ["code", "task_name", "kwargs", "tz", *OPTION_NAMES]

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        names = sorted(registry.runnable_names())
        current = self.instance.task_name if self.instance.pk else None
        if current and current not in names:
            names.append(current)  # an orphan keeps its name until changed
        self.fields["task_name"].choices = [(n, n) for n in names]
        if self.instance.pk:
            self.fields["code"].disabled = True
            self.initial.setdefault("opened_version", self.instance.version)
            self.initial["kwargs"] = json.dumps(self.instance.kwargs, indent=2, ensure_ascii=False)
        else:
            self.initial.setdefault("kwargs", "{}")
        # An option left out (older clients, scripts) takes the model's default.
        for name in ("dispatch", "rate_period", "rate_mode"):
            self.fields[name].required = False
        self.fields["priority"] = forms.CharField(
            required=False,
            initial=self.initial.get("priority", self.instance.priority),
            help_text="An integer, or low, normal, high, critical: higher starts first "
            "among queued runs.",
        )
        self.fields["tz"].widget = forms.TextInput(attrs={"list": "zones"})
        self.fields["tz"].required = False
        self.fields["tz"].help_text = "Zone to show times in; empty: the trigger's zone."
        if not self.instance.pk:
            self.initial["tz"] = ""

    def clean_tz(self) -> str:
        tz = self.cleaned_data["tz"]
        if tz and tz not in ZONES and tz != "UTC":
            raise forms.ValidationError(f"unknown time zone '{tz}'")
        return tz

    def clean_priority(self) -> int:
        try:
            return priority_value(self.cleaned_data.get("priority") or 0)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def _or_default(self, name: str):
        value = self.cleaned_data.get(name)
        return Schedule._meta.get_field(name).default if value in (None, "") else value

    def clean_dispatch(self) -> str:
        return self._or_default("dispatch")

    def clean_rate_period(self) -> float:
        return self._or_default("rate_period")

    def clean_rate_mode(self) -> str:
        return self._or_default("rate_mode")

    def clean_kwargs(self) -> dict:
        text = self.cleaned_data.get("kwargs") or "{}"
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"not valid JSON: {exc.msg} (line {exc.lineno})") from None
        if not isinstance(value, dict):
            raise forms.ValidationError('must be a JSON object, such as {"region": "eu"}')
        return value

    def clean(self) -> dict:
        data = super().clean()
        declaration = registry.get(data.get("task_name") or "")
        if declaration is not None and isinstance(data.get("kwargs"), dict):
            try:
                inspect.signature(declaration.func).bind(**data["kwargs"])
            except TypeError as exc:
                self.add_error("kwargs", f"does not fit {declaration.name}: {exc}")
        return data
