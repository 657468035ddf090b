"""Zip containers (OOXML, ODF, EPUB) read safely and written back member for member.

Bounds are checked from the central directory before anything is decompressed: the number of
entries and the sum of their declared sizes (a zip bomb declares its true size or fails its
read: zipfile stops each member at its declared size and checks its CRC). Members not changed are
written back with the same bytes, name, order, date and compression.
"""

from __future__ import annotations

import io
import zipfile

from translator.documents.model import MAX_UNCOMPRESSED_BYTES, MAX_ZIP_ENTRIES, BadDocument, too_large

# Office's encrypted files are OLE compound files, not zips (as are legacy .doc/.xls/.ppt).
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


class Archive:
    def __init__(self, data: bytes, kind: str) -> None:
        if data.startswith(_OLE_MAGIC):
            raise BadDocument(
                f"file: this {kind} file is encrypted (password-protected) or in the legacy binary format; "
                "save it unencrypted in the current format"
            )
        try:
            self.zip = zipfile.ZipFile(io.BytesIO(data))
            infos = self.zip.infolist()
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            raise BadDocument(
                f"file: a {kind} file must be a zip archive, and this one cannot be read ({exc})"
            ) from exc
        if len(infos) > MAX_ZIP_ENTRIES:
            raise too_large("zip entries", MAX_ZIP_ENTRIES, len(infos))
        total = sum(info.file_size for info in infos)
        if total > MAX_UNCOMPRESSED_BYTES:
            raise too_large("uncompressed bytes", MAX_UNCOMPRESSED_BYTES, total)
        if any(info.flag_bits & 0x1 for info in infos):
            raise BadDocument(f"file: this {kind} file is encrypted; send it unencrypted")
        self.infos = infos
        self.kind = kind

    def names(self) -> list[str]:
        return [info.filename for info in self.infos]

    def read(self, name: str) -> bytes:
        try:
            return self.zip.read(name)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as exc:
            raise BadDocument(f"file: member {name!r} of this {self.kind} file cannot be read ({exc})") from exc

    def write(self, changed: dict[str, bytes]) -> bytes:
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as target:
            for info in self.infos:
                data = changed.get(info.filename)
                if data is None:
                    data = self.zip.read(info)
                target.writestr(info, data, compress_type=info.compress_type)
        return out.getvalue()
