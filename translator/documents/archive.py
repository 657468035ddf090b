"""Zip containers (OOXML, ODF, EPUB) read safely and written back member for member.

Bounds are checked twice. From the central directory first: the number of entries and the sum of
their declared sizes. Then every member is inflated once, in chunks, counting the bytes it really
gives, before anything is parsed: a member can lie about its size (a bomb's part declares 5,000
bytes and expands to gigabytes), and zipfile's `read()` inflates a whole stream in one call before
it checks the CRC. The archive as a whole may give MAX_UNCOMPRESSED_BYTES, so reading one holds
that bound plus a chunk at most, and a bomb is refused as soon as it passes it.
Members not changed are written back with the same bytes, name, order, date and compression.
"""

from __future__ import annotations

import copy
import io
import zipfile

from translator.documents.model import MAX_UNCOMPRESSED_BYTES, MAX_ZIP_ENTRIES, BadDocument, TooLarge

# Office's encrypted files are OLE compound files, not zips (as are legacy .doc/.xls/.ppt).
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_CHUNK = 64 * 1024
# zipfile inflates bzip2 and LZMA members without an output bound (a few KB of bzip2 can give
# gigabytes per read); Office, OpenDocument and EPUB files are stored or deflated only.
_METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED}
_ERRORS = (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError, RuntimeError)


class Archive:
    def __init__(self, data: bytes, kind: str) -> None:
        if data.startswith(_OLE_MAGIC):
            raise BadDocument(
                f"this {kind} file is encrypted (password-protected) or in the legacy binary format; "
                "save it unencrypted in the current format"
            )
        try:
            self.zip = zipfile.ZipFile(io.BytesIO(data))
            infos = self.zip.infolist()
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            raise BadDocument(f"a {kind} file must be a zip archive, and this one cannot be read ({exc})") from exc
        if len(infos) > MAX_ZIP_ENTRIES:
            raise TooLarge("zip entries", MAX_ZIP_ENTRIES, len(infos))
        total = sum(info.file_size for info in infos)
        if total > MAX_UNCOMPRESSED_BYTES:
            raise TooLarge("uncompressed bytes", MAX_UNCOMPRESSED_BYTES, total)
        if any(info.flag_bits & 0x1 for info in infos):
            raise BadDocument(f"this {kind} file is encrypted; send it unencrypted")
        self.infos = infos
        self.kind = kind
        budget = MAX_UNCOMPRESSED_BYTES
        for info in infos:
            budget -= self._inflate(info, budget)

    def names(self) -> list[str]:
        return [info.filename for info in self.infos]

    def read(self, name: str) -> bytes:
        try:
            info = self.zip.getinfo(name)
        except KeyError as exc:
            raise BadDocument(f"this {self.kind} file has no member {name!r}") from exc
        return self._read(info)

    def _read(self, info: zipfile.ZipInfo) -> bytes:
        sink = io.BytesIO()
        # Checked when the archive was opened: the member gives its declared size, within the bound.
        self._inflate(info, info.file_size, sink)
        return sink.getvalue()

    def _inflate(self, info: zipfile.ZipInfo, budget: int, sink: io.BytesIO | None = None) -> int:
        """The count of the member's bytes, read in chunks into `sink` (or only counted); past
        `budget` it is refused, one chunk later at most."""
        name = info.filename
        if info.compress_type not in _METHODS:
            raise BadDocument(
                f"member {name!r} of this {self.kind} file is compressed with method {info.compress_type}; "
                "only stored and deflated members are read"
            )
        # zipfile cuts a member at its declared size, then fails it on its CRC (a 400 where a bomb
        # is a 413): opened without that cut, the member gives what it really holds, and the count
        # below is the bound.
        unbounded = copy.copy(info)
        unbounded.file_size = 1 << 62
        given = 0
        try:
            with self.zip.open(unbounded) as member:
                while chunk := member.read(_CHUNK):
                    given += len(chunk)
                    if given > budget:
                        raise TooLarge("uncompressed bytes", MAX_UNCOMPRESSED_BYTES)
                    if sink is not None:
                        sink.write(chunk)
        except _ERRORS as exc:
            raise BadDocument(f"member {name!r} of this {self.kind} file cannot be read ({exc})") from exc
        if given != info.file_size:
            raise BadDocument(
                f"member {name!r} of this {self.kind} file declares {info.file_size} bytes "
                f"and holds {given}: the archive is corrupt"
            )
        return given

    def write(self, changed: dict[str, bytes]) -> bytes:
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as target:
            for info in self.infos:
                data = changed.get(info.filename)
                if data is None:
                    data = self._read(info)
                target.writestr(info, data, compress_type=info.compress_type)
        return out.getvalue()
