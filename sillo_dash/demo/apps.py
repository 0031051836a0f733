"""The demo app's config: a label of its own, so its name never clashes with a host's."""

from __future__ import annotations

from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "sillo_dash.demo"
    label = "sillo_demo"
    verbose_name = "Sillo Dash demo"
