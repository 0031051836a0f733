"""A host project that mounts the app under a prefix, as the README shows."""

from django.urls import include, path

urlpatterns = [path("ops/scheduler/", include("schedules.urls"))]
