"""RFC 6570 URI Templates in provider endpoints, and the ``{cid}`` rule.

``uri-template`` lists a template's variables but parses leniently (it takes defaults such as
``{cid=x}``, array markers and spaces in literals), so the grammar of RFC 6570 section 2, with
Erratum 6937 (``'`` allowed in literals), is checked here first.
"""

from __future__ import annotations

import re

import uri_template

__all__ = ["template_problem"]

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


def template_problem(template: str) -> tuple[str, str] | None:
    """Why an endpoint template is refused, as (code, message), or None when it is fine.

    ``spec.endpoint.template``: not an RFC 6570 template. ``spec.endpoint.missing_cid``: no
    expression names the variable ``cid``. ``profile.endpoint.cid_prefix``: ``cid`` is only used
    with a prefix modifier (``{cid:3}``), which would expand to a truncated CID.
    """
    if not _TEMPLATE.fullmatch(template) or not uri_template.validate(template):
        return "spec.endpoint.template", "not an RFC 6570 URI Template"
    uses = [v for v in uri_template.URITemplate(template).variables if v.name == "cid"]
    if not uses:
        return "spec.endpoint.missing_cid", "the template does not use the variable {cid}"
    if all(v.max_length for v in uses):
        return "profile.endpoint.cid_prefix", "{cid} is only used with a prefix modifier"
    return None
