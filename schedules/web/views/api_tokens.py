"""The logged-in user's API tokens: create one (its text is shown once), revoke one."""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from ... import tokens
from ...models import ApiToken

EXPIRY_CHOICES = [("", "never"), ("7", "in 7 days"), ("30", "in 30 days"),
                  ("90", "in 90 days"), ("365", "in a year")]  # fmt: skip


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="What it is for, e.g. 'CI deploy hook'.")
    expires = forms.ChoiceField(
        label="Expires", choices=EXPIRY_CHOICES, required=False, initial="90"
    )


@login_required
@require_http_methods(["GET", "POST"])
def token_list(request: HttpRequest) -> HttpResponse:
    form = TokenForm(request.POST or None)
    issued = None
    status = 200
    if request.method == "POST":
        if form.is_valid():
            days = form.cleaned_data["expires"]
            expires_at = timezone.now() + timedelta(days=int(days)) if days else None
            issued = tokens.token_issue(
                user=request.user, name=form.cleaned_data["name"], expires_at=expires_at
            )
            form = TokenForm()
            status = 201
        else:
            status = 422
    now = timezone.now()
    rows = [(token, token.state(now=now)) for token in request.user.api_tokens.all()]
    context = {"form": form, "issued": issued, "rows": rows}
    response = TemplateResponse(request, "schedules/api_tokens.html", context, status=status)
    response["Cache-Control"] = "no-store"  # the page may show a token's only copy
    return response


@login_required
@require_POST
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    token = get_object_or_404(ApiToken, pk=pk, user=request.user)
    tokens.token_revoke(token=token)
    messages.success(request, f"Revoked the token '{token.name}'.")
    return HttpResponseRedirect("../../")  # the list, wherever the app is mounted
