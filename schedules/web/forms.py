"""The schedule form: task, kwargs (validated against the task's signature), options."""

from __future__ import annotations

from zoneinfo import available_timezones

from django import forms

from .. import chains, inputs
from ..choices import priority_value
from ..models import Schedule
from ..registry import OPTION_NAMES, registry
from ..validation import InvalidKwargs, json_text, kwargs_from_text, signature_problem

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
            self.initial["kwargs"] = json_text(self.instance.kwargs)
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
        # Follow-ups as the operator types them: schedule codes, comma-separated.
        for name, when in (("then", "succeeds"), ("catch", "fails for good (after its retries)")):
            self.initial[name] = ", ".join(map(str, chains.codes_of(self.initial.get(name))))
            self.fields[name] = forms.CharField(
                required=False,
                label=f"{name.capitalize()} (follow-ups)",
                help_text=f"Schedule codes to run when a run {when}, comma-separated.",
            )
        self.fields["result_as"].label = "Pass the outcome as"
        self.fields["result_as"].help_text = (
            "A keyword argument name: follow-ups receive the run's result (then) or its "
            "failure (catch) in it, over their own kwargs. Empty: not passed."
        )
        self.fields["tz"].widget = forms.TextInput(attrs={"list": "zones"})
        self.fields["tz"].required = False
        self.fields["tz"].help_text = "Zone to show times in; empty: the trigger's zone."
        if not self.instance.pk:
            self.initial["tz"] = ""

    def clean_tz(self) -> str:
        tz = self.cleaned_data["tz"]
        problem = inputs.zone_problem(tz)
        if problem:
            raise forms.ValidationError(problem)
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

    def clean_then(self) -> list:
        return chains.codes_of(self.cleaned_data.get("then"))

    def clean_catch(self) -> list:
        return chains.codes_of(self.cleaned_data.get("catch"))

    def clean_kwargs(self) -> dict:
        try:
            return kwargs_from_text(self.cleaned_data.get("kwargs") or "{}")
        except InvalidKwargs as exc:
            raise forms.ValidationError(str(exc).removeprefix("kwargs: ")) from None

    def clean(self) -> dict:
        data = super().clean()
        declaration = registry.get(data.get("task_name") or "")
        if declaration is not None and not self.data.get("dispatch"):
            data["dispatch"] = declaration.options.dispatch  # where the task's runs go
        if declaration is not None and isinstance(data.get("kwargs"), dict):
            problem = signature_problem(declaration.func, data["kwargs"])
            if problem:
                self.add_error(
                    "kwargs", f"does not fit {declaration.name}: {problem.removeprefix('kwargs: ')}"
                )
        options = {name: data[name] for name in OPTION_NAMES if data.get(name) is not None}
        for name, problem in inputs.option_problems(options).items():
            if name in self.fields and name not in self.errors:
                self.add_error(name, problem)
        code = self.instance.code if self.instance.pk else data.get("code")
        if code and not any(name in self.errors for name in chains.CHAIN_FIELDS):
            # Known codes, no cycle (with its path), the depth limit, result_as fits.
            problems = chains.chain_problems(
                code=code,
                then=data.get("then"),
                catch=data.get("catch"),
                result_as=data.get("result_as") or "",
                kept=chains.kept_by(self.instance),
            )
            for name, problem in problems.items():
                self.add_error(name, problem)
        return data
