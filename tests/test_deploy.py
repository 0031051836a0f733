"""The production settings documented in docs/deploy.md pass `check --deploy`."""

from __future__ import annotations

import secrets

PRODUCTION = {
    "DJANGO_SETTINGS_MODULE": "sillo_dash.settings",
    "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
    "DJANGO_ALLOWED_HOSTS": "sillo.example.com",
    "DJANGO_CSRF_TRUSTED_ORIGINS": "https://sillo.example.com",
    "DJANGO_BEHIND_TLS_PROXY": "true",
    "DJANGO_SSL_REDIRECT": "true",
    "DJANGO_HSTS_SECONDS": "31536000",
    "DJANGO_HSTS_INCLUDE_SUBDOMAINS": "true",
    "DJANGO_HSTS_PRELOAD": "true",
    "SILLO_METRICS": "token",
    "SILLO_METRICS_TOKEN": secrets.token_urlsafe(24),
}


def test_the_documented_production_settings_pass_check_deploy(manage) -> None:
    result = manage("check", "--deploy", "--fail-level", "WARNING", env=PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_the_defaults_warn_about_what_a_deployment_must_set(manage) -> None:
    env = {"DJANGO_SETTINGS_MODULE": "sillo_dash.settings"}
    result = manage("check", "--deploy", "--fail-level", "WARNING", env=env)
    assert result.returncode != 0
    assert "SECURE_HSTS_SECONDS" in result.stderr + result.stdout


def test_bad_metrics_settings_are_refused_at_start(manage) -> None:
    result = manage("check", env={"SILLO_METRICS": "token", "SILLO_METRICS_TOKEN": "short"})
    assert result.returncode != 0
    assert "SILLO_METRICS_TOKEN of 16+ characters" in result.stderr
