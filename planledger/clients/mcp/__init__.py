"""The MCP server: plan tools and `plan://` resources over the service layer, on stdio."""

from planledger.clients.mcp.server import build_server, serve_stdio

__all__ = ["build_server", "serve_stdio"]
