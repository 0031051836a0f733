"""Create a first admin with a random password, shown once, if no user exists."""

from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "On a fresh database, create user 'admin' with a random password and print it once."

    def add_arguments(self, parser: object) -> None:
        parser.add_argument("--username", default="admin")
        parser.add_argument("--url", default="http://127.0.0.1:8000/")

    def handle(self, *args: object, username: str, url: str, **options: object) -> None:
        users = get_user_model()
        if users.objects.exists():
            return
        password = secrets.token_urlsafe(12)
        users.objects.create_superuser(username=username, email="", password=password)
        self.stdout.write(
            self.style.SUCCESS(
                f"Created the first user. Log in at {url} as '{username}' with password "
                f"'{password}' (shown only this once; change it in the admin)."
            )
        )
