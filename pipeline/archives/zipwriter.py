"""A zip container around members that are already compressed (raw deflate) or stored.

Python's ``zipfile`` compresses what it is given; the packaging cache hands
over finished deflate streams, so the headers are written here (APPNOTE 6.3:
local headers, central directory, zip64 records only when a size or an
offset needs them). Every field that could vary is fixed: 1980-01-01 00:00,
made by Unix (the mode bits mean the same everywhere), no comments.
"""

from __future__ import annotations

import struct
from typing import BinaryIO

# 1980-01-01 00:00:00 in DOS format: the earliest moment a zip can store.
_DOS_DATE = (0 << 9) | (1 << 5) | 1
_DOS_TIME = 0
_MAX32 = 0xFFFFFFFF
_MAX16 = 0xFFFF
_UNIX = 3
_DEFLATED = 8
_STORED = 0
_UTF8_FLAG = 0x800


class ZipWriter:
    """Writes members to ``out`` one after the other, then the central directory."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.offset = 0

    def _write(self, data: bytes) -> None:
        self.out.write(data)
        self.offset += len(data)

    def member(self, name: str, payload: bytes, *, stored: bool, crc: int, size: int, attr: int) -> bytes:
        """Write one member's local header and ``payload``; return its central directory record."""
        try:
            encoded, flags = name.encode("ascii"), 0
        except UnicodeEncodeError:
            encoded, flags = name.encode("utf-8"), _UTF8_FLAG
        method = _STORED if stored else _DEFLATED
        csize = len(payload)
        offset = self.offset
        big = size >= _MAX32 or csize >= _MAX32
        version = 45 if big or offset >= _MAX32 else 20
        local_extra = struct.pack("<HHQQ", 1, 16, size, csize) if big else b""
        self._write(
            struct.pack(
                "<4sHHHHHIIIHH",
                b"PK\x03\x04",
                version,
                flags,
                method,
                _DOS_TIME,
                _DOS_DATE,
                crc & _MAX32,
                _MAX32 if big else csize,
                _MAX32 if big else size,
                len(encoded),
                len(local_extra),
            )
        )
        self._write(encoded + local_extra)
        self._write(payload)
        wide = big or offset >= _MAX32
        # All three 64-bit fields when any needs it: each one marked 0xFFFFFFFF in the record.
        central_extra = struct.pack("<HHQQQ", 1, 24, size, csize, offset) if wide else b""
        return (
            struct.pack(
                "<4sBBHHHHHIIIHHHHHII",
                b"PK\x01\x02",
                version,
                _UNIX,
                version,
                flags,
                method,
                _DOS_TIME,
                _DOS_DATE,
                crc & _MAX32,
                _MAX32 if wide else csize,
                _MAX32 if wide else size,
                len(encoded),
                len(central_extra),
                0,
                0,
                0,
                attr,
                _MAX32 if wide else offset,
            )
            + encoded
            + central_extra
        )

    def finish(self, central: list[bytes]) -> None:
        """The central directory and its end records (zip64 ones when counts or offsets overflow)."""
        start = self.offset
        for record in central:
            self._write(record)
        size = self.offset - start
        count = len(central)
        if count >= _MAX16 or size >= _MAX32 or start >= _MAX32:
            end64 = self.offset
            self._write(
                struct.pack("<4sQHHIIQQQQ", b"PK\x06\x06", 44, 45, 45, 0, 0, count, count, size, start)
            )
            self._write(struct.pack("<4sIQI", b"PK\x06\x07", 0, end64, 1))
            self._write(struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, _MAX16, _MAX16, _MAX32, _MAX32, 0))
            return
        self._write(struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, count, count, size, start, 0))
