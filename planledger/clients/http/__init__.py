"""The HTTP client of the service: `create_app(open_service, token)`."""

from planledger.clients.http.app import MAX_BODY_BYTES, create_app

__all__ = ["MAX_BODY_BYTES", "create_app"]
