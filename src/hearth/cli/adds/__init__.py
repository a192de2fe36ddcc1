"""``hearth adds``: ADDS documents and objects from the command line, one module per family.

    validate FILE ...                documents.py: valid, correctly signed ADDS documents?
    sign FILE --key ...              documents.py: fill in a document's signature
    cid FILE ...                     documents.py: the CID of each document
    schema [KIND]                    documents.py: the JSON Schema of a kind
    keygen --out PREFIX              keygen.py: Ed25519 and X25519 private keys (PEM, 0600);
                                     prints the public halves (base64url)
    publish FILE ...                 publish.py: encrypt FILE into a block store, sign its manifest
    grant MANIFEST ...               grant.py: wrap an object's content key to a reader (re-grant)
    open MANIFEST --grant ...        open.py: verify every block and decrypt
    provider-record ...              provider.py: sign a provider record for a local store (or
                                     fetch a node's)
    receipt ...                      provider.py: sign a storage receipt (or ask a node for one)
    head new ...                     heads.py: the next head of a (key, head_id) history
    head resolve FILES | --from URL  heads.py: the current head of each history; forks reported
    blocks copy SRC DST [CID...]     blocks.py: between the store layout, a plain directory and
                                     a URL

What the commands share: ``report.py`` (stderr, exit codes, progress bars), ``files.py`` (output
files), ``inputs.py`` (parsing arguments, reading keys and documents), ``options.py``,
``stores.py`` (``--blocks`` and its kin) and ``node.py`` (a provider node: its bearer and the
calls of ``hearth.client.adds``, imported only when a node is reached).

Exit status: 0 done; 1 refused or failed (one line on stderr says why); 2 usage error; 3 from
``head resolve`` when a history is forked; ``validate`` exits 1 when any file is invalid.

A block store location (``--blocks``) is a hearth block store directory (``ADDS-BLOCKSTORE``), a
plain directory of files named by their CIDs (the interchange form) or a provider node's
``http(s)://`` base URL; a URL store needs a bearer (node.py says which). Files written with
``-o`` are never replaced unless ``--force`` is given; each appears complete or not at all
(written beside, then renamed). Secrets (content keys, private keys, decrypted output) are
created mode 0600.
"""

from __future__ import annotations

import typer

from .blocks import blocks_copy_command
from .documents import cid_command, schema_command, sign_command, validate_command
from .grant import grant_command
from .heads import head_new_command, head_resolve_command
from .keygen import keygen_command
from .open import open_command
from .provider import provider_record_command, receipt_command
from .publish import publish_command

__all__ = ["app"]

app = typer.Typer(
    help="ADDS: validate, sign and name documents; publish, grant and open objects.",
    no_args_is_help=True,
)
app.command("validate")(validate_command)
app.command("sign")(sign_command)
app.command("cid")(cid_command)
app.command("schema")(schema_command)
app.command("keygen")(keygen_command)
app.command("publish")(publish_command)
app.command("grant")(grant_command)
app.command("open")(open_command)
app.command("provider-record")(provider_record_command)
app.command("receipt")(receipt_command)

head = typer.Typer(
    help="Heads: sign the next head of a history; resolve current heads and forks.",
    no_args_is_help=True,
)
head.command("new")(head_new_command)
head.command("resolve")(head_resolve_command)
app.add_typer(head, name="head")

blocks = typer.Typer(help="Block stores: copy between layouts and nodes.", no_args_is_help=True)
blocks.command("copy")(blocks_copy_command)
app.add_typer(blocks, name="blocks")
