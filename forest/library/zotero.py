"""A Zotero data directory (zotero.sqlite and storage/<KEY>/<file>), read without disturbing Zotero.

A running Zotero keeps zotero.sqlite under an exclusive lock, in WAL mode, with its latest changes
still in zotero.sqlite-wal. When Zotero is using the database, it and its -wal/-journal files are
copied to a temporary folder and the copy is read; otherwise the database is read where it is
without a lock or a file written beside it (see _open_in_place). Nothing in the data directory is
written either way.

Documents are regular items with a PDF attachment (the first PDF attachment whose file is there,
by the order they were added), and standalone PDF attachments. Attachments are stored files
("storage:name.pdf" under storage/<attachment key>/) or linked files (an absolute path, or
"attachments:relative/path" under the base directory set in Zotero's preferences). Notes,
annotations, items in the trash and feed items are not documents.
"""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from forest.ingest.files import not_a_file
from forest.library.identity import normalize_arxiv_id
from forest.text import truncate
from forest.library.entries import (
    Creator, LibraryEntry, LibraryError, LibraryReading, SkippedItem, normalize_doi, year_in,
)

DATABASE = "zotero.sqlite"
STORAGE_PREFIX = "storage:"
BASE_DIR_PREFIX = "attachments:"
IMPORTED_FILE, IMPORTED_URL, LINKED_FILE = 0, 1, 2     # Zotero.Attachments.LINK_MODE_*
NOT_DOCUMENTS = ("note", "attachment", "annotation")
# The fields that name where an item appeared, in order of preference (Zotero's field names).
VENUE_FIELDS = ("publicationTitle", "proceedingsTitle", "bookTitle", "conferenceName")


def read_zotero(data_dir: Path | str, base_dir: Path | str | None = None) -> LibraryReading:
    """The documents of a Zotero data directory. `base_dir` is the base directory of linked files
    ("attachments:" paths); when not given it is read from the Zotero profile whose data directory
    this is (see find_base_directory)."""
    data_dir = Path(data_dir).expanduser()
    if not (data_dir / DATABASE).is_file():
        raise LibraryError(f"{data_dir} is not a Zotero data directory: it has no {DATABASE}")
    base = Path(base_dir).expanduser() if base_dir else find_base_directory(data_dir)
    with _snapshot(data_dir / DATABASE) as db:
        return _Reader(db, data_dir, base).read()


@contextmanager
def _snapshot(database: Path) -> Iterator[sqlite3.Connection]:
    """A connection to the database as Zotero last committed it, inside one read transaction."""
    db = _open_in_place(database)
    if db is not None:
        try:
            yield db
        finally:
            db.close()
        return
    with tempfile.TemporaryDirectory(prefix="forest-zotero-") as folder:
        copy = Path(folder) / database.name
        for suffix in ("", "-wal", "-journal"):
            source = database.with_name(database.name + suffix)
            if source.is_file():
                shutil.copyfile(source, copy.with_name(copy.name + suffix))
        db = sqlite3.connect(copy)
        try:
            db.execute("BEGIN")
            yield db
        finally:
            db.close()


def _open_in_place(database: Path) -> sqlite3.Connection | None:
    """A connection that reads the database where it is and writes nothing next to it, holding a
    read transaction; None when Zotero is using the database, which must then be copied.

    In WAL mode (Zotero 7) a -wal file means Zotero has the database open (or did not close it):
    its last changes are in that file. With no -wal file the database is opened immutable, which
    takes no lock and creates no -wal or -shm file. A database in rollback-journal mode (older
    Zotero) is opened read-only without waiting: Zotero's exclusive lock makes that fail at once."""
    with database.open("rb") as handle:
        header = handle.read(100)
    if not header.startswith(b"SQLite format 3\x00"):
        raise LibraryError(f"{database} is not an SQLite database")
    journal = database.with_name(database.name + ("-wal" if header[18] == 2 else "-journal"))
    if journal.exists():
        return None
    mode = "immutable=1" if header[18] == 2 else "mode=ro"
    db = sqlite3.connect(f"{database.as_uri()}?{mode}", uri=True, timeout=0)
    try:
        db.execute("BEGIN")
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()     # takes the shared lock now
        return db
    except sqlite3.DatabaseError as error:
        db.close()
        if "locked" in str(error) or "busy" in str(error):
            return None
        raise LibraryError(f"cannot read {database}: {error}") from None


class _Reader:
    def __init__(self, db: sqlite3.Connection, data_dir: Path, base_dir: Path | None) -> None:
        self.db, self.data_dir, self.base_dir = db, data_dir, base_dir

    def read(self) -> LibraryReading:
        try:
            items = self._items()
            fields = self._fields()
            creators = self._creators()
            tags = self._tags()
            collections = self._collections()
            attachments = self._pdf_attachments()
        except sqlite3.DatabaseError as error:
            raise LibraryError(f"{self.data_dir / DATABASE} is not a Zotero database Forest can read: "
                               f"{error}") from None
        entries, skipped = [], []
        for item_id, (key, type_name, parent_id) in items.items():
            if type_name in NOT_DOCUMENTS and not (type_name == "attachment" and parent_id is None):
                continue
            pdfs = attachments.get(item_id, [])
            values = fields.get(item_id, {})
            title = values.get("title", "")
            if not pdfs:
                if type_name != "attachment":
                    skipped.append(SkippedItem(source_key=key, title=title, reason="no PDF attachment"))
                continue
            located = [self._locate(*pdf) for pdf in pdfs]
            path, missing_reason = next((p for p in located if p[0] is not None and not p[1]), located[0])
            extra = _extra_fields(values.get("extra", ""))
            year, date = _zotero_date(values.get("date", ""))
            entries.append(LibraryEntry(
                path=path, title=title or (path.stem if path else key), source_kind="zotero",
                source_key=key, creators=tuple(creators.get(item_id, ())),
                year=year, date=date, doi=normalize_doi(values.get("DOI", "") or extra.get("doi", "")),
                venue=next((values[v] for v in VENUE_FIELDS if values.get(v)), ""),
                arxiv_id=normalize_arxiv_id(extra.get("arxiv", "")),
                url=values.get("url", ""), abstract=values.get("abstractNote", ""),
                tags=tuple(sorted(tags.get(item_id, ()), key=str.casefold)),
                collections=tuple(sorted(collections.get(item_id, ()), key=str.casefold)),
                citation_key=values.get("citationKey", "") or extra.get("citation key", ""),
                item_type=type_name, missing_reason=missing_reason))
        return LibraryReading(kind="zotero", source=self.data_dir, entries=tuple(entries), skipped=tuple(skipped))

    def _items(self) -> dict[int, tuple[str, str, int | None]]:
        """item id -> (key, type name, parent id) of the items of user and group libraries, trash excluded."""
        rows = self.db.execute(
            "SELECT i.itemID, i.key, t.typeName, COALESCE(a.parentItemID, n.parentItemID) "
            "FROM items i JOIN libraries l ON l.libraryID = i.libraryID "
            f"JOIN ({_union('itemTypes', 'itemTypeID', 'typeName')}) t ON t.itemTypeID = i.itemTypeID "
            "LEFT JOIN itemAttachments a ON a.itemID = i.itemID LEFT JOIN itemNotes n ON n.itemID = i.itemID "
            "WHERE l.type IN ('user', 'group') AND i.itemID NOT IN (SELECT itemID FROM deletedItems) "
            "ORDER BY i.itemID")
        return {item_id: (key, type_name, parent) for item_id, key, type_name, parent in rows}

    def _fields(self) -> dict[int, dict[str, str]]:
        """item id -> field name -> value; type-specific fields also under their base field
        (a case's "caseName" is its "title")."""
        base_of = {(item_type, field): base for item_type, field, base in self.db.execute(
            "SELECT m.itemTypeID, f.fieldName, b.fieldName "
            f"FROM ({_union('baseFieldMappings', 'itemTypeID', 'baseFieldID', 'fieldID')}) m "
            f"JOIN ({_union('fields', 'fieldID', 'fieldName')}) f ON f.fieldID = m.fieldID "
            f"JOIN ({_union('fields', 'fieldID', 'fieldName')}) b ON b.fieldID = m.baseFieldID")}
        values: dict[int, dict[str, str]] = defaultdict(dict)
        for item_id, item_type, field, value in self.db.execute(
                "SELECT d.itemID, i.itemTypeID, f.fieldName, v.value FROM itemData d "
                "JOIN items i ON i.itemID = d.itemID JOIN itemDataValues v ON v.valueID = d.valueID "
                f"JOIN ({_union('fields', 'fieldID', 'fieldName')}) f ON f.fieldID = d.fieldID"):
            text = str(value).strip()
            values[item_id][field] = text
            base = base_of.get((item_type, field))
            if base:
                values[item_id].setdefault(base, text)
        return values

    def _creators(self) -> dict[int, list[Creator]]:
        creators: dict[int, list[Creator]] = defaultdict(list)
        for item_id, first, last, single_field, creator_type in self.db.execute(
                "SELECT ic.itemID, c.firstName, c.lastName, c.fieldMode, t.creatorType FROM itemCreators ic "
                "JOIN creators c ON c.creatorID = ic.creatorID "
                "JOIN creatorTypes t ON t.creatorTypeID = ic.creatorTypeID ORDER BY ic.itemID, ic.orderIndex"):
            last, first = (last or "").strip(), (first or "").strip()
            if single_field:        # fieldMode 1: one-field name (an organisation), all in lastName
                last, first = last or first, ""
            creators[item_id].append(Creator(last=last or first, first=first if last else "",
                                             creator_type=creator_type))
        return creators

    def _tags(self) -> dict[int, list[str]]:
        tags: dict[int, list[str]] = defaultdict(list)
        for item_id, name in self.db.execute(
                "SELECT it.itemID, t.name FROM itemTags it JOIN tags t ON t.tagID = it.tagID"):
            tags[item_id].append(name)
        return tags

    def _collections(self) -> dict[int, list[str]]:
        """item id -> the paths ("Reading/NLP") of the collections it is in, trash excluded."""
        rows = self.db.execute(
            "SELECT collectionID, collectionName, parentCollectionID FROM collections "
            "WHERE collectionID NOT IN (SELECT collectionID FROM deletedCollections)").fetchall()
        parent_of = {cid: parent for cid, _, parent in rows}
        name_of = {cid: name for cid, name, _ in rows}
        paths: dict[int, str | None] = {}
        for cid in name_of:
            names, current, seen = [], cid, set()
            while current is not None and current not in seen:
                seen.add(current)
                if current not in name_of:      # a parent in the trash hides its subcollections
                    names = []
                    break
                names.append(name_of[current])
                current = parent_of[current]
            paths[cid] = "/".join(reversed(names)) if names else None
        members: dict[int, list[str]] = defaultdict(list)
        for cid, item_id in self.db.execute("SELECT collectionID, itemID FROM collectionItems"):
            if paths.get(cid):
                members[item_id].append(paths[cid])
        return members

    def _pdf_attachments(self) -> dict[int, list[tuple[str, int, str]]]:
        """document item id -> (attachment key, link mode, stored path) of its PDF files, in the order
        they were added. The document of a standalone attachment is the attachment itself."""
        attachments: dict[int, list[tuple[str, int, str]]] = defaultdict(list)
        for item_id, parent_id, key, link_mode, path in self.db.execute(
                "SELECT a.itemID, a.parentItemID, i.key, a.linkMode, a.path FROM itemAttachments a "
                "JOIN items i ON i.itemID = a.itemID "
                "WHERE a.itemID NOT IN (SELECT itemID FROM deletedItems) AND a.linkMode IN (?, ?, ?) "
                "AND (a.contentType = 'application/pdf' OR lower(a.path) LIKE '%.pdf') "
                "ORDER BY i.dateAdded, a.itemID", (IMPORTED_FILE, IMPORTED_URL, LINKED_FILE)):
            if path:
                attachments[item_id if parent_id is None else parent_id].append((key, link_mode, path))
        return attachments

    def _locate(self, key: str, link_mode: int, stored: str) -> tuple[Path | None, str]:
        """Where an attachment's file is, and why it cannot be used if it cannot."""
        if link_mode in (IMPORTED_FILE, IMPORTED_URL):
            name = stored[len(STORAGE_PREFIX):] if stored.startswith(STORAGE_PREFIX) else Path(stored).name
            return self._stored_file(key, name)
        if stored.startswith(BASE_DIR_PREFIX):
            relative = stored[len(BASE_DIR_PREFIX):].replace("\\", "/")
            if self.base_dir is None:
                return None, (f"linked file {relative!r} is relative to Zotero's base directory "
                              "for linked files, which is not set")
            path = self.base_dir / relative
        else:
            path = Path(stored)
            if not path.is_absolute():     # Zotero writes linked files as absolute or "attachments:" paths
                return None, f"linked file {truncate(stored, 200)!r} is a relative path, which Zotero never stores"
        problem = not_a_file(path)     # a FIFO or a device is named as such, never opened
        return path, f"linked file {path} {problem}" if problem else ""

    def _stored_file(self, key: str, name: str) -> tuple[Path | None, str]:
        """A stored file, confined to storage/<key>/ once symbolic links are resolved: a crafted
        database's "storage:../../x" or a link in storage/ to elsewhere reads nothing outside it.
        The resolved path is the one returned, so what was checked is what is read."""
        said = f"stored file storage/{truncate(key, 40)}/{truncate(name, 200)}"
        if not key or key in (".", "..") or "/" in key or "\\" in key:
            return None, f"{said}: the attachment key is not a folder name"
        storage = _resolved(self.data_dir / "storage")
        path = _resolved(storage / key / name)
        if not path.is_relative_to(storage / key) or path == storage / key:
            return None, f"{said} is outside storage/{truncate(key, 40)}/ of the data directory: not read"
        problem = not_a_file(path)
        return path, f"{said} {problem}" if problem else ""


def _union(table: str, *columns: str) -> str:
    """Rows of a global-schema table and of its "Combined" twin (built at Zotero's start-up with the
    custom types), so either being filled is enough."""
    listed = ", ".join(columns)
    return f"SELECT {listed} FROM {table} UNION SELECT {listed} FROM {table}Combined"


def _zotero_date(value: str) -> tuple[int | None, str]:
    """(year, date as written) of a Zotero date. Zotero stores "2018-05-00 May 2018": an SQL date
    with 00 for unknown parts, then the date as the user wrote it."""
    sql_date, _, written = value.partition(" ")
    if len(sql_date) == 10 and sql_date[:4].isdigit() and sql_date[4] == "-" and sql_date[7] == "-":
        return (int(sql_date[:4]) or None), written or sql_date
    return year_in(value), value


def _extra_fields(extra: str) -> dict[str, str]:
    """"Key: value" lines of the Extra field (where older Zotero versions keep a DOI or citation key)."""
    found = {}
    for line in extra.splitlines():
        name, colon, value = line.partition(":")
        if colon and value.strip():
            found.setdefault(name.strip().lower(), value.strip())
    return found


def find_base_directory(data_dir: Path) -> Path | None:
    """Zotero's base directory for linked files ("extensions.zotero.baseAttachmentPath"), from the
    prefs.js of the Zotero profile whose data directory is `data_dir`; None when no profile says."""
    target = _resolved(data_dir)
    for prefs_file in _profile_prefs_files():
        try:
            prefs = read_prefs(prefs_file)
        except OSError:
            continue
        if prefs.get("extensions.zotero.useDataDir") and prefs.get("extensions.zotero.dataDir"):
            profile_data_dir = Path(str(prefs["extensions.zotero.dataDir"]))
        else:
            profile_data_dir = Path.home() / "Zotero"          # Zotero's default data directory
        base = prefs.get("extensions.zotero.baseAttachmentPath")
        if _resolved(profile_data_dir) == target and base:
            return Path(str(base))
    return None


def _resolved(path: Path) -> Path:
    try:
        return path.expanduser().resolve()
    except OSError:
        return path


def _profile_prefs_files() -> list[Path]:
    """prefs.js of each Zotero profile in the places Zotero keeps profiles (Linux, macOS, Windows)."""
    home = Path.home()
    roots = [home / ".zotero" / "zotero", home / "Library" / "Application Support" / "Zotero" / "Profiles"]
    if os.environ.get("APPDATA"):
        roots.append(Path(os.environ["APPDATA"]) / "Zotero" / "Zotero" / "Profiles")
    return sorted(prefs for root in roots if root.is_dir() for prefs in root.glob("*/prefs.js"))


def read_prefs(prefs_file: Path) -> dict[str, object]:
    """The user_pref("name", value); lines of a Mozilla prefs.js, values decoded as JSON."""
    prefs: dict[str, object] = {}
    decoder = json.JSONDecoder()
    for line in prefs_file.read_text(encoding="utf-8", errors="replace").splitlines():
        line = line.strip()
        if not (line.startswith("user_pref(") and line.endswith(");")):
            continue
        inner = line[len("user_pref("):-2]
        try:
            name, end = decoder.raw_decode(inner)
            rest = inner[end:].lstrip()
            if not rest.startswith(","):
                continue
            value, _ = decoder.raw_decode(rest[1:].lstrip())
        except ValueError:
            continue
        if isinstance(name, str):
            prefs[name] = value
    return prefs
