"""The production settings documented in docs/deploy.md pass `check --deploy`."""

from __future__ import annotations

import json
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


def test_check_deploy_fails_without_a_secret_key_from_the_environment(manage) -> None:
    env = {k: v for k, v in PRODUCTION.items() if k != "DJANGO_SECRET_KEY"}
    result = manage("check", "--deploy", env=env)
    assert result.returncode != 0
    assert "schedules.E020" in result.stderr + result.stdout
    assert "DJANGO_SECRET_KEY is not set" in result.stderr + result.stdout


def test_the_data_folder_and_database_are_private(manage, tmp_path) -> None:
    result = manage("migrate", "--noinput", env={"DJANGO_SETTINGS_MODULE": "sillo_dash.settings"})
    assert result.returncode == 0, result.stderr
    data = tmp_path / "data"
    assert data.stat().st_mode & 0o777 == 0o700
    for path in data.iterdir():
        assert path.stat().st_mode & 0o777 == 0o600, path.name


def test_a_web_process_keeps_django_out_of_the_collectors_walks(manage) -> None:
    """daphne imports sillo_dash.asgi once per web process: what it set up is frozen,
    so a full collection in a request walks the request's objects, not Django's."""
    probe = (
        "import gc, json, sillo_dash.asgi; "
        "print(json.dumps({'frozen': gc.get_freeze_count(), 'walked': len(gc.get_objects())}))"
    )
    result = manage("shell", "--no-imports", "-c", probe, env=PRODUCTION)
    assert result.returncode == 0, result.stderr
    view = json.loads(result.stdout.strip().splitlines()[-1])
    assert view["frozen"] > 10_000, view  # Django's modules, models, settings, the routing
    assert view["walked"] < view["frozen"], view
