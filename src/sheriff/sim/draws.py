"""Deterministic random draws: every entity gets its own stream derived from the seed.

A global stream would make a task's outcome depend on the order in which clients ask
for things; keyed sub-streams keep the history identical whatever sheriff does.
"""

from __future__ import annotations

import base64
import hashlib
import random


def _digest(seed: int, keys: tuple[object, ...], size: int) -> bytes:
    text = f"{seed}\x1f" + "\x1f".join(map(str, keys))
    return hashlib.blake2b(text.encode(), digest_size=size).digest()


def rng(seed: int, *keys: object) -> random.Random:
    """A random stream for the entity named by `keys`."""
    return random.Random(int.from_bytes(_digest(seed, keys, 8), "big"))


def unit(seed: int, *keys: object) -> float:
    """One uniform draw in [0, 1) for the entity named by `keys` (cheaper than `rng`)."""
    return int.from_bytes(_digest(seed, keys, 7), "big") / float(1 << 56)


def units(seed: int, count: int, *keys: object) -> list[float]:
    """Up to nine uniform draws in [0, 1) from one hash (for hot paths)."""
    raw = _digest(seed, keys, 7 * count)
    return [int.from_bytes(raw[i : i + 7], "big") / float(1 << 56) for i in range(0, 7 * count, 7)]


def slug(seed: int, *keys: object) -> str:
    """A Taskcluster-style "nice" slugid (22 url-safe characters, UUID v4 layout)."""
    raw = bytearray(_digest(seed, keys, 16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    raw[0] &= 0x7F  # nice slugids never start with '-'
    return base64.urlsafe_b64encode(bytes(raw)).decode()[:22]


def revision(seed: int, *keys: object) -> str:
    """A 40-hex changeset id."""
    return _digest(seed, keys, 20).hex()


def hexid(seed: int, length: int, *keys: object) -> str:
    """A short hex string, e.g. for hook hashes."""
    return _digest(seed, keys, (length + 1) // 2).hex()[:length]
