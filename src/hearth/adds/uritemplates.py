"""RFC 6570 URI Templates in provider endpoints, and the ``{cid}`` rule.

The grammar of RFC 6570 section 2 is checked here, with Erratum 6937 (``'`` allowed in literals),
and the variables are read from the same grammar. ``uri-template`` is not used on this path: it
accepts extensions RFC 6570 does not have (``{cid=x}``, ``{cid[]}``, spaces in literals), refuses
valid prefixes of four digits (``{var:9999}``), and keeps only the last use of a repeated
variable; the tests use it as a second opinion where it is right.
"""

from __future__ import annotations

import re

__all__ = ["template_problem", "variables"]

_PCT = r"%[0-9A-Fa-f]{2}"
_UCS = (
    "\u00a0-\ud7ff\uf900-\ufdcf\ufdf0-\uffef"
    + "".join(f"{chr(p * 0x10000)}-{chr(p * 0x10000 + 0xFFFD)}" for p in range(1, 14))
    + "\U000e1000-\U000efffd"
)
_PRIVATE = "\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd"
_LITERAL = rf"(?:[!#$&-;=?-\[\]_a-z~{_UCS}{_PRIVATE}]|{_PCT})"
_VARCHAR = rf"(?:[A-Za-z0-9_]|{_PCT})"
_VARSPEC = rf"{_VARCHAR}(?:\.?{_VARCHAR})*(?::[1-9][0-9]{{0,3}}|\*)?"
_EXPRESSION = rf"\{{[+#./;?&]?{_VARSPEC}(?:,{_VARSPEC})*\}}"
_TEMPLATE = re.compile(rf"(?:{_LITERAL}|{_EXPRESSION})*")
_EXPRESSION_BODY = re.compile(r"\{[+#./;?&]?([^}]*)\}")


def variables(template: str) -> list[tuple[str, int | None]]:
    """Every variable use of a valid template, in order, as (name, prefix length or None)."""
    uses: list[tuple[str, int | None]] = []
    for body in _EXPRESSION_BODY.findall(template):
        for varspec in body.split(","):
            name, _, prefix = varspec.rstrip("*").partition(":")
            uses.append((name, int(prefix) if prefix else None))
    return uses


def template_problem(template: str) -> tuple[str, str] | None:
    """Why an endpoint template is refused, as (code, message), or None when it is fine.

    ``spec.endpoint.template``: not an RFC 6570 template. ``spec.endpoint.missing_cid``: no
    expression names the variable ``cid``. ``profile.endpoint.cid_prefix``: ``cid`` is only used
    with a prefix modifier (``{cid:3}``), which would expand to a truncated CID.
    """
    if not _TEMPLATE.fullmatch(template):
        return "spec.endpoint.template", "not an RFC 6570 URI Template"
    prefixes = [prefix for name, prefix in variables(template) if name == "cid"]
    if not prefixes:
        return "spec.endpoint.missing_cid", "the template does not use the variable {cid}"
    if None not in prefixes:
        return "profile.endpoint.cid_prefix", "{cid} is only used with a prefix modifier"
    return None
