"""A host's URLconf for the tests: the app under a prefix, the host's own login page."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import include, path

urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("ops/scheduler/", include("schedules.urls")),
]
