"""hearth as an MCP server (docs/mcp.md): one set of tools, resources and a prompt, served on two
transports.

- ``catalogue`` and ``shaping`` are pure (the MCP types and the standard library only): the
  tools' names, JSON schemas and annotations, the resources and the prompt, and how an answer
  becomes a tool result. Both transports use them, so they cannot drift apart.
- ``stdio`` is ``hearth mcp``: the server on the user's machine, speaking to the service through
  the SDK (``hearth.client``), signing root proofs locally when the identity's keys are there.
- The Streamable HTTP endpoint ``/mcp`` lives in the service (``hearth.server.mcp_http``) and
  calls the service's own functions; it never imports the SDK.

Nothing is imported here, so the service can import ``hearth.mcp.catalogue`` without the SDK.
"""
