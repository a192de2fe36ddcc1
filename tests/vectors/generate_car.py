"""Golden vector for CAR v1 framing (``hearth.adds.car``).

``python -m tests.vectors.generate_car`` rewrites ``FILENAME`` beside this module: a CAR whose
root is the golden ``head-minimal`` document and whose blocks are that head, the
``manifest-minimal`` document and a fixed 100-byte block, each once, in that order.
``test_car_vectors.py`` regenerates it in memory and compares byte for byte, then reads it with
``multiformats`` (varints, CIDs) and a DAG-CBOR reading written in the test itself.

The file's name does not end in ``.json`` or ``.pem``: ``test_vectors.py`` owns those.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

from hearth.adds import cid_for_bytes
from hearth.adds.car import CarWriter

from .generate import documents, fixed_bytes

HERE = Path(__file__).parent
FILENAME = "documents.car.golden"


def blocks() -> list[tuple[str, bytes]]:
    signed = documents()
    block = fixed_bytes("car/block", 100)
    return [
        (signed["head-minimal"].cid, signed["head-minimal"].canonical),
        (signed["manifest-minimal"].cid, signed["manifest-minimal"].canonical),
        (cid_for_bytes(block), block),
    ]


def render() -> bytes:
    out = io.BytesIO()
    writer = CarWriter(out)
    for cid, data in blocks():
        writer.put(cid, data)
    writer.put(*blocks()[0])  # a block put twice is written once
    writer.finish([blocks()[0][0]])
    return out.getvalue()


def main() -> int:
    (HERE / FILENAME).write_bytes(render())
    print(f"wrote {HERE / FILENAME}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
