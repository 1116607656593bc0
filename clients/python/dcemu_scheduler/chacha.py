"""ChaCha8 exactly as dcemu's random streams draw it (rand_chacha 0.9's
``ChaCha8Rng``), so a scheduler program can draw the very numbers a
built-in policy would.

A stream is a 32-byte key, a 64-bit stream number and a position in 32-bit
words (``hello`` gives the scheduler's key and stream, each request its
position). Word ``w`` is word ``w % 16`` of ChaCha block ``w // 16``, the
block counter in state words 12-13 and the stream in words 14-15, as
rand_chacha lays them out.
"""

from __future__ import annotations

_MASK = 0xFFFFFFFF
_CONSTANTS = (0x61707865, 0x3320646E, 0x79622D32, 0x6B206574)


def _block(key: tuple[int, ...], counter: int, stream: int) -> list[int]:
    """The 16 output words of ChaCha with 8 rounds for one block."""
    s = [
        *_CONSTANTS,
        *key,
        counter & _MASK,
        (counter >> 32) & _MASK,
        stream & _MASK,
        (stream >> 32) & _MASK,
    ]
    x = list(s)

    def qr(a: int, b: int, c: int, d: int) -> None:
        xa = (x[a] + x[b]) & _MASK
        xd = x[d] ^ xa
        xd = ((xd << 16) & _MASK) | (xd >> 16)
        xc = (x[c] + xd) & _MASK
        xb = x[b] ^ xc
        xb = ((xb << 12) & _MASK) | (xb >> 20)
        xa = (xa + xb) & _MASK
        xd ^= xa
        xd = ((xd << 8) & _MASK) | (xd >> 24)
        xc = (xc + xd) & _MASK
        xb ^= xc
        x[a], x[b], x[c], x[d] = xa, ((xb << 7) & _MASK) | (xb >> 25), xc, xd

    for _ in range(4):
        qr(0, 4, 8, 12)
        qr(1, 5, 9, 13)
        qr(2, 6, 10, 14)
        qr(3, 7, 11, 15)
        qr(0, 5, 10, 15)
        qr(1, 6, 11, 12)
        qr(2, 7, 8, 13)
        qr(3, 4, 9, 14)
    return [(x[i] + s[i]) & _MASK for i in range(16)]


class ChaCha8:
    """A ChaCha8 stream positioned at ``word_pos``."""

    def __init__(self, key: bytes, stream: int, word_pos: int = 0) -> None:
        if len(key) != 32:
            raise ValueError(f"a ChaCha key has 32 bytes, got {len(key)}")
        self._key = tuple(int.from_bytes(key[i : i + 4], "little") for i in range(0, 32, 4))
        self._stream = stream
        self.word_pos = word_pos
        self._cached: tuple[int, list[int]] | None = None

    def next_u32(self) -> int:
        """The next 32-bit word (rand's ``next_u32``)."""
        block, word = divmod(self.word_pos, 16)
        if self._cached is None or self._cached[0] != block:
            self._cached = (block, _block(self._key, block, self._stream))
        self.word_pos += 1
        return self._cached[1][word]

    def next_u64(self) -> int:
        """Two words, the first the low half (rand's ``next_u64``)."""
        low = self.next_u32()
        return low | (self.next_u32() << 32)

    def index(self, n: int) -> int:
        """Uniform in ``0..n`` (``n`` > 0) exactly as dcemu's
        ``sampling::index``: Lemire's multiply-shift with rejection."""
        if not 0 < n <= _MASK:
            raise ValueError(f"index needs 0 < n < 2^32, got {n}")
        threshold = ((1 << 32) - n) % n
        while True:
            m = self.next_u32() * n
            if (m & _MASK) >= threshold:
                return m >> 32
