"""The one error a channel raises when a delivery did not get through."""

from __future__ import annotations


class DeliveryFailed(Exception):
    """The channel refused or could not be reached; the message is its answer."""
