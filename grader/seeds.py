"""Seeds derived from a run's seed (``grader.results.out`` records it per OUT), the same on
every machine and in every process: a student's hidden inputs, a catalogue entry's draws."""

import hashlib
import hmac
import json
import zlib


def derived(*parts: object) -> int:
    """A 32-bit seed of ``parts`` (the run's seed, a student, a check...): the same on every
    machine and in every process, unlike ``hash()``."""
    return zlib.crc32(":".join(map(str, parts)).encode())


def keyed(secret: int, *parts: object) -> int:
    """A 64-bit seed of ``parts`` (a student, a notebook, a use) keyed by OUT's secret:
    HMAC-SHA256, so seeds seen in kernels tell nothing of the secret, and so nothing of any
    other student's, notebook's or check's seed."""
    key = secret.to_bytes(max(1, (secret.bit_length() + 7) // 8), "big")
    message = json.dumps([str(part) for part in parts]).encode()
    return int.from_bytes(hmac.new(key, message, hashlib.sha256).digest()[:8], "big")
