"""Reading an Inspect AI ``.eval`` log (a zip archive of JSON entries) as the log its ``.json`` form holds."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from typing import Any

from tracetrim._json import strict_loads
from tracetrim.formats._table import FormatError

ZIP_MAGIC = b"PK\x03\x04"
"""How an ``.eval`` file (a zip archive) starts."""
MAX_ARCHIVE_BYTES = 1 << 30
"""The most an ``.eval`` archive may unpack to: a small file declaring more is refused, not unpacked."""
_ZSTD = 93
"""The zip compression method Inspect writes since 0.3.1xx (Python's zipfile reads only 0 and 8)."""
_LOCAL_HEADER = struct.Struct("<4s5H3L2H")


def _entry_bytes(archive: zipfile.ZipFile, data: bytes, info: zipfile.ZipInfo) -> bytes:
    if info.compress_type != _ZSTD:
        try:
            return archive.read(info)
        except (NotImplementedError, zipfile.BadZipFile, zlib.error, EOFError) as exc:
            raise FormatError(f".eval entry {info.filename}: {exc}") from None
    try:
        import zstandard
    except ImportError:
        raise FormatError(
            "this .eval file is zstd-compressed: reading it needs zstandard (pip install zstandard)"
        ) from None
    header = _LOCAL_HEADER.unpack_from(data, info.header_offset)
    if header[0] != ZIP_MAGIC:
        raise FormatError(f".eval entry {info.filename} is corrupt (no local header where the index says)")
    start = info.header_offset + _LOCAL_HEADER.size + header[9] + header[10]
    packed = data[start : start + info.compress_size]
    try:
        unpacked = zstandard.ZstdDecompressor().decompress(packed, max_output_size=info.file_size)
    except zstandard.ZstdError as exc:
        raise FormatError(f".eval entry {info.filename}: {exc}") from None
    if len(unpacked) != info.file_size or zlib.crc32(unpacked) != info.CRC:
        raise FormatError(f".eval entry {info.filename} is corrupt (its size or checksum does not match)")
    return unpacked


def _entry_json(archive: zipfile.ZipFile, data: bytes, info: zipfile.ZipInfo) -> Any:
    raw = _entry_bytes(archive, data, info)  # its own FormatError, not "not JSON"
    try:
        return strict_loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise FormatError(f".eval entry {info.filename} is not JSON ({exc})") from None


def read_eval_archive(data: bytes) -> dict[str, Any]:
    """An Inspect ``.eval`` log (a zip archive) as the eval log its ``.json`` form holds: the header's
    fields (``header.json``, or ``_journal/start.json`` for a log still being written) and ``samples``,
    each ``samples/*.json`` entry in the archive's order. `FormatError` for what is not such an archive."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, ValueError) as exc:
        raise FormatError(f"not a readable zip archive ({exc})") from None
    if sum(info.file_size for info in infos) > MAX_ARCHIVE_BYTES:
        raise FormatError(f"the archive unpacks to more than {MAX_ARCHIVE_BYTES:,} bytes")
    by_name = {info.filename: info for info in infos}
    header_info = by_name.get("header.json") or by_name.get("_journal/start.json")
    if header_info is None:
        raise FormatError("a zip archive without header.json: not an Inspect .eval log")
    header = _entry_json(archive, data, header_info)
    if not isinstance(header, dict):
        raise FormatError(".eval entry header.json must hold an object")
    samples = [
        _entry_json(archive, data, info)
        for info in infos
        if info.filename.startswith("samples/") and info.filename.endswith(".json")
    ]
    return {**header, "samples": samples}
