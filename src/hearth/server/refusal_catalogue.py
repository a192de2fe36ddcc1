"""Every refusal the service answers with, once: its status, when it is sent, and where the docs
say more.

The table "Errors" of docs/service.md is drawn from this catalogue (``python -m
hearth.server.refusal_catalogue`` prints it), and tests/server/test_refusals.py holds the page to
it and every refusal code the source can raise to an entry with that status. A new refusal is
therefore written here first. The refusals themselves (``ApiError`` and its factories) are in
``errors.py``; this module is plain data, with nothing of the web framework.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

SERVICE = "service.md"


@dataclass(frozen=True)
class Refusals:
    """One row of the table: the codes answered with ``status`` for one reason (``when``), and
    the page (with its section) of docs/ that explains them."""

    status: int
    codes: tuple[str, ...]
    when: str
    docs: str

    def __post_init__(self) -> None:
        if not 400 <= self.status <= 599 or not self.codes:
            raise ValueError(f"not a refusal row: {self.status} {self.codes}")


def _row(status: int, codes: str, when: str, docs: str = f"{SERVICE}#errors") -> Refusals:
    return Refusals(status, tuple(codes.split()), when, docs)


CATALOGUE: Final[tuple[Refusals, ...]] = (
    _row(
        400,
        "invalid_json",
        "the body is not JSON this service reads: a syntax error, bytes that are not UTF-8 "
        "(`json_not_utf8`), nesting deeper than 64 (`json_too_deep`), an integer too long to "
        "convert (`json_number_too_long`); `details[]` of `loc`, `message`, `type`",
        f"{SERVICE}#text-the-service-stores",
    ),
    _row(
        400,
        "invalid_cid",
        "ADDS: a CID that is not canonical",
        f"{SERVICE}#provider-node",
    ),
    _row(
        400,
        "gateway_format_required",
        "`GET`/`HEAD /ipfs/{cid}`: neither `?format=` nor `Accept` asks for a raw block or a CAR",
        f"{SERVICE}#the-ipfs-trustless-gateway",
    ),
    _row(
        400,
        "invalid_cursor",
        "any listing: a cursor outside the pattern the OpenAPI document shows for it",
        f"{SERVICE}#the-openapi-document",
    ),
    _row(
        400,
        "bad_request",
        "the request is not valid HTTP/1.1 (answered by the server before any route, then closed)",
        f"{SERVICE}#request-heads",
    ),
    _row(
        401,
        "unauthorized",
        "no bearer, or an unknown or revoked one; the body carries `hint` and `docs`, and the "
        "response carries `WWW-Authenticate` (a bridge: its runtime's control token)",
        f"{SERVICE}#bearer-keys",
    ),
    _row(
        401,
        "invalid_control_token",
        "a bridge with a control token that is not its runtime's current one",
        "bridge.md#connecting",
    ),
    _row(
        402,
        "insufficient_credits",
        "a wallet cannot pay (`details`: `wallet_id`, `balance`, `required`, `currency`); "
        "nothing was charged, nothing is bought or retried",
        f"{SERVICE}#wallets-and-vault",
    ),
    _row(
        403,
        "no_self_witnessing",
        "a memory's own identity (or, for a project-level memory, its project) as its witness "
        "(wall 3)",
        f"{SERVICE}#memory-and-chronicle",
    ),
    _row(
        403,
        "no_self_sponsorship",
        "the sponsor of an elevation is the subject itself",
        "elevation.md",
    ),
    _row(
        403,
        "signing_key_unknown signing_key_revoked",
        "a thought signed by a key the identity does not have, or has revoked",
        "strands.md#thoughts",
    ),
    _row(
        403,
        "not_bridged",
        "a bridge connecting to a runtime that is not bridged",
        "bridge.md#connecting",
    ),
    _row(
        403,
        "console_form_refused",
        "a console form without its session's form token, or sent from another origin or site; "
        "nothing was done",
        "console.md#forms",
    ),
    _row(
        404,
        "not_found",
        "an unknown URL gets the guided 404 (`hint`, `next_actions`, `docs`); a missing resource "
        "gets a small body, and another project's resource is reported the same way",
    ),
    _row(
        404,
        "no_inventory",
        "the provider record, while none is signed (no block held yet, or no public address "
        "configured)",
        f"{SERVICE}#provider-node",
    ),
    _row(
        404,
        "runtime_deleted",
        "a bridge connecting to a deleted runtime",
        "bridge.md#connecting",
    ),
    _row(
        405,
        "method_not_allowed",
        "`Allow` lists every method of the path",
        f"{SERVICE}#the-openapi-document",
    ),
    _row(
        408,
        "request_timeout",
        "the request head did not arrive within `HEADER_TIMEOUT_SECONDS`",
        f"{SERVICE}#request-heads",
    ),
    _row(
        409,
        "registration_nonce_used key_proof_used authority_sequence_mismatch authority_busy",
        "single-use values and leases (`authority_sequence_mismatch` carries "
        "`details.next_sequence`)",
        f"{SERVICE}#root-proofs-bearerroot",
    ),
    _row(
        409,
        "import_proof_used identity_exists import_conflict",
        "`POST /v1/identities/import`: a replayed import proof; a root key (or identity id) "
        "this service already holds; a record id it holds already",
        "export.md#import",
    ),
    _row(
        409,
        "not_held",
        "a receipt asked for items the project does not hold (`details.missing`)",
        f"{SERVICE}#provider-node",
    ),
    _row(
        409,
        "idempotency_key_reused",
        "a fund request's `Idempotency-Key` already made a different transfer "
        "(`details.transfer_id`)",
        f"{SERVICE}#wallets-and-vault",
    ),
    _row(
        409,
        "tier_transition_refused memory_changed",
        "memory elevation and deletion",
        f"{SERVICE}#memory-and-chronicle",
    ),
    _row(
        409,
        "memory_not_head supersede_binding_mismatch",
        "memory history: superseding, elevating or confirming a version that is not the head "
        "of its chain (a stale head), a new version bound elsewhere than the one it replaces",
        "memory.md#history",
    ),
    _row(
        409,
        "memory_untrusted memory_already_trusted",
        "memory provenance: elevating an untrusted memory, confirming a trusted one",
        "memory.md#provenance",
    ),
    _row(
        409,
        "already_elevated",
        "the target of an elevation is not at level 0",
        "elevation.md",
    ),
    _row(
        409,
        "invalid_runtime_state stale_runtime_state runtime_deleted",
        "a runtime move its status does not allow, a status another move changed meanwhile, "
        "a deleted runtime (kept for audit)",
        "runtimes.md#states-and-moves",
    ),
    _row(
        409,
        "not_bridged not_self_custody runtime_unbound",
        "a request for another custody: a control token of a runtime that is not bridged, a "
        "self runtime's report from another, an inbox of a runtime bound to no identity",
        "runtimes.md#custody",
    ),
    _row(
        409,
        "kid_taken thought_seq_conflict inbox_message_not_taken inbox_message_not_yours",
        "identity keys, thoughts and the inbox: a kid already used, a seq already written, a "
        "message not taken, or taken by another runtime",
        "strands.md",
    ),
    _row(
        409,
        "nothing_to_buy own_template purchase_used",
        "templates: a free template, the project's own, a purchase already used",
        "forks-templates.md#templates",
    ),
    _row(
        410,
        "gone",
        "`POST /v1/register`",
        f"{SERVICE}#arrival",
    ),
    _row(
        410,
        "moved",
        "a mutation naming an identity that moved to another service (`details.moved_to`: "
        "its address and DID there)",
        "export.md#moving",
    ),
    _row(
        413,
        "payload_too_large",
        "the body is over `MAX_BODY_BYTES` (a block: over `MAX_BLOCK_BYTES`; an import: over "
        "`MAX_IMPORT_BYTES`), whether it was declared or streamed",
    ),
    _row(
        422,
        "validation_error",
        "the request does not match the route (`details[]` of `loc`, `message`, `type`, never "
        "the input value)",
        f"{SERVICE}#the-openapi-document",
    ),
    _row(
        422,
        "invalid_search_query",
        "`GET /v1/memories/search`: a `q` this service cannot read as words, quoted phrases and "
        'prefixes (`details[]` of `loc` `["query", "q"]`, `message`, `type`, and '
        "`position`, the character where the problem is; never the query)",
        "memory.md#the-query",
    ),
    _row(
        422,
        "unstorable_text",
        "a NUL or a lone surrogate anywhere in the path, the query or the JSON body, on every "
        "route (`details[]` of `loc`, `message`, `type` `nul_character` or `lone_surrogate`, "
        "never the value)",
        f"{SERVICE}#text-the-service-stores",
    ),
    _row(
        422,
        "invalid_public_key invalid_timestamp key_proof_stale key_proof_invalid pow_required "
        "pow_insufficient",
        "registration",
        f"{SERVICE}#arrival",
    ),
    _row(
        422,
        "import_proof_required import_proof_stale import_proof_invalid import_not_car "
        "import_invalid",
        "`POST /v1/identities/import`: no key proof, a stale or wrong one, a body that is not a "
        "CAR, an archive that does not verify with this service's key (`details.problems`)",
        "export.md#import",
    ),
    _row(
        422,
        "authority_proof_invalid authority_proof_stale",
        "root proofs",
        f"{SERVICE}#root-proofs-bearerroot",
    ),
    _row(
        422,
        "discovery_stale discovery_signature_invalid",
        "signed discovery",
        f"{SERVICE}#arrival",
    ),
    _row(
        422,
        "recovery_refused recovery_stale",
        "recovery",
        f"{SERVICE}#arrival",
    ),
    _row(
        422,
        "invalid_blob invalid_key_derivation",
        "backups",
        f"{SERVICE}#backups",
    ),
    _row(
        422,
        "chronicle_kind_reserved",
        "POST /v1/chronicle with a kind the service alone writes (refusal, seal, note)",
        f"{SERVICE}#memory-and-chronicle",
    ),
    _row(
        422,
        "identity_required",
        "scaffold, when the project has several identities; a tool of /mcp that acts on an "
        "identity, when none is named and the project has no sole active one",
        f"{SERVICE}#scaffold",
    ),
    _row(
        422,
        "attestations_required attestations_not_applicable attestation_invalid attester_unknown "
        "attester_key_required expression_patch_needs_identity",
        "memory elevation; each is recorded in the chronicle",
        f"{SERVICE}#memory-and-chronicle",
    ),
    _row(
        422,
        "sponsor_unknown sponsor_signature_invalid",
        "an elevation's sponsor: not an identity of this service with a root key, or a "
        "statement that does not verify",
        "elevation.md",
    ),
    _row(
        422,
        "same_wallet invalid_vault_name",
        "funding a wallet from itself; a vault name whose identity prefix is not a lower-case "
        "UUID, or has no key after the colon",
        f"{SERVICE}#wallets-and-vault",
    ),
    _row(
        422,
        "cid_mismatch invalid_document",
        "ADDS blocks and documents (`invalid_document`: `details.problems[]` of `pointer`, "
        "`code`, `message`)",
        f"{SERVICE}#provider-node",
    ),
    _row(
        422,
        "llm_required llm_incomplete unsupported_llm_provider bridge_required "
        "bridge_not_applicable invalid_advertised_url invalid_key_id identity_inactive "
        "immutable_field",
        "provisioning and updating a runtime: what its custody needs, what it must not have, "
        "what cannot change after provisioning",
        "runtimes.md#provisioning-rules",
    ),
    _row(
        422,
        "invalid_purpose kid_reserved runtime_required runtime_not_applicable "
        "runtime_identity_mismatch",
        "identity keys and strands: a key's purpose and runtime, the reserved kid `primary`, a "
        "strand's runtime bound to another identity",
        "strands.md#identity-keys",
    ),
    _row(
        422,
        "plaintext_refused invalid_nonce invalid_ciphertext thought_signature_invalid",
        "thoughts: ciphertext and nonce only (wall 7), in canonical base64, signed for the exact "
        "write",
        "strands.md#thoughts",
    ),
    _row(
        422,
        "memory_not_parents",
        "a fork naming memories that are not the parent's own",
        "forks-templates.md#forks",
    ),
    _row(
        422,
        "payout_wallet_required purchase_required purchase_template_mismatch",
        "templates: a priced template without a payout wallet, a priced template used without "
        "a purchase, a purchase of another template",
        "forks-templates.md#templates",
    ),
    _row(
        422,
        "unknown_format",
        "a wake in a format the service does not render (`details.allowed`)",
        "wake.md#refusals",
    ),
    _row(
        426,
        "upgrade_required",
        "a plain GET of the bridge's path that passes its checks (with `Upgrade: websocket`)",
        "bridge.md#connecting",
    ),
    _row(
        428,
        "authority_proof_required",
        "`details` carries `next_sequence`, `did`, `missing_headers`, `headers` and the `recipe`",
        f"{SERVICE}#root-proofs-bearerroot",
    ),
    _row(
        429,
        "rate_limited",
        "`Retry-After` is set",
        f"{SERVICE}#arrival",
    ),
    _row(
        431,
        "request_header_fields_too_large",
        "the head is over `MAX_HEADER_BYTES` or `MAX_HEADER_COUNT`",
        f"{SERVICE}#request-heads",
    ),
    _row(
        500,
        "internal_error",
        "the body carries an opaque `request_id`, and the log line with the traceback carries "
        "the same id; no trace reaches the client",
        f"{SERVICE}#request-ids-and-the-access-log",
    ),
    _row(
        501,
        "kms_master_key_missing",
        "a trusted runtime, and the service has no `KMS_MASTER_KEY`",
        "runtimes.md#provisioning-rules",
    ),
    _row(
        503,
        "provider_key_unavailable",
        "the stored provider key is wrapped and `KMS_MASTER_KEY` is missing or different",
        f"{SERVICE}#provider-node",
    ),
    _row(
        503,
        "block_store_unavailable",
        "a block `PUT` or read when the block store (an object store, `BLOCKSTORE_URL`) does "
        "not answer: nothing was stored or recorded",
        f"{SERVICE}#provider-node",
    ),
    _row(
        503,
        "service_key_unconfigured service_key_unavailable",
        "`GET /v1/mathos/public-key`: the service's signing key file is not configured, or "
        "cannot be read",
        f"{SERVICE}#orientation",
    ),
    _row(
        503,
        "public_address_unset",
        "an app with no `PUBLIC_BASE_URL` serving on a unix socket, where no address names it",
        f"{SERVICE}#running-it",
    ),
    _row(
        503,
        "not_ready",
        "`GET /readyz`: a readiness check failed (`details.checks`)",
        f"{SERVICE}#probes-and-metrics",
    ),
)


def statuses() -> dict[str, frozenset[int]]:
    """Each code and the statuses it is answered with."""
    found: dict[str, set[int]] = {}
    for row in CATALOGUE:
        for code in row.codes:
            found.setdefault(code, set()).add(row.status)
    return {code: frozenset(each) for code, each in found.items()}


def _link(docs: str) -> str:
    page, _, section = docs.partition("#")
    # The table lives in service.md: its own sections are linked by anchor alone.
    target = f"#{section}" if page == SERVICE else docs
    return f"[{docs}]({target})"


def markdown_table() -> str:
    """The table of docs/service.md, "Errors": rows by status, in the catalogue's order."""
    lines = ["| status | error | when | docs |", "|---|---|---|---|"]
    for row in sorted(CATALOGUE, key=lambda row: row.status):
        codes = ", ".join(f"`{code}`" for code in row.codes)
        lines.append(f"| {row.status} | {codes} | {row.when} | {_link(row.docs)} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")
