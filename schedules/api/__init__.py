"""The JSON API (`api/v1/`): django-ninja routers over the same services, selectors and
permissions as the dashboard. See docs/api.md."""
