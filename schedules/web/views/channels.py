"""Notification channels: Editors add, disable, delete and test them; Viewers see their names.

A channel's URL and secret are never shown in full after saving, and not at
all to users who cannot change schedules.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.views.decorators.http import require_http_methods, require_POST

from ...alerts import services
from ...models import Channel
from ...notify.outbox import channel_target
from ...notify.targets import env_targets, mask
from .. import access
from ..alert_forms import ChannelForm


@require_http_methods(["GET", "POST"])
def channel_list(request: HttpRequest) -> HttpResponse:
    access.require(request, access.VIEW)
    can_change = request.user.has_perm(access.CHANGE)
    form = ChannelForm()
    status = 200
    if request.method == "POST":
        access.require(request, access.CHANGE)
        form = ChannelForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            channel = services.channel_create(
                name=data["name"], url=data["url"], secret=data["secret"], by=request.user
            )
            messages.success(request, f"Channel {channel.name} added.")
            return redirect("schedules:channel-list")
        status = 422
    channels = [
        {"channel": c, "masked": mask(c.url) if can_change else "", "signed": bool(c.secret)}
        for c in Channel.objects.all()
    ]
    from_env = [
        {
            "index": i,
            "kind": t.kind,
            "masked": t.masked if can_change else "",
            "signed": bool(t.secret),
        }
        for i, t in enumerate(env_targets())
    ]
    context = {"channels": channels, "from_env": from_env, "form": form, "can_change": can_change}
    return TemplateResponse(request, "schedules/channels.html", context, status=status)


@require_POST
def channel_toggle(request: HttpRequest, pk: int) -> HttpResponse:
    access.require(request, access.VIEW)
    access.require(request, access.CHANGE)
    channel = get_object_or_404(Channel, pk=pk)
    services.channel_set_enabled(channel=channel, enabled=not channel.enabled)
    return redirect("schedules:channel-list")


@require_POST
def channel_delete(request: HttpRequest, pk: int) -> HttpResponse:
    access.require(request, access.VIEW)
    access.require(request, access.CHANGE)
    channel = get_object_or_404(Channel, pk=pk)
    services.channel_delete(channel=channel)
    messages.success(request, f"Channel {channel.name} deleted.")
    return redirect("schedules:channel-list")


@require_POST
def channel_test(request: HttpRequest, pk: int) -> HttpResponse:
    access.require(request, access.VIEW)
    access.require(request, access.CHANGE)
    channel = get_object_or_404(Channel, pk=pk)
    target = channel_target(channel)
    answers = services.send_test(targets=[target])
    return TemplateResponse(request, "schedules/_test_answers.html", {"answers": answers})


@require_POST
def env_channel_test(request: HttpRequest, index: int) -> HttpResponse:
    access.require(request, access.VIEW)
    access.require(request, access.CHANGE)
    target = services.env_target(index)
    if target is None:
        raise Http404("no such channel in SILLO_NOTIFY")
    answers = services.send_test(targets=[target])
    return TemplateResponse(request, "schedules/_test_answers.html", {"answers": answers})
