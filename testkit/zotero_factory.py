"""Builds a real zotero.sqlite from Zotero's own schema files (tests/data/zotero_schema), the way
Zotero creates a new database, then writes items the way Zotero stores them."""
from __future__ import annotations

import json
import sqlite3
import zlib
from pathlib import Path

SCHEMA = Path(__file__).resolve().parents[1] / "tests" / "data" / "zotero_schema"
USER_LIBRARY = 1
IMPORTED_FILE, IMPORTED_URL, LINKED_FILE, LINKED_URL = 0, 1, 2, 3


def _sql_version(name: str) -> int:
    """Each schema file starts with "-- <version>"."""
    return int((SCHEMA / f"{name}.sql").read_text(encoding="utf-8").split("\n", 1)[0].lstrip("- "))


class ZoteroLibrary:
    """A Zotero data directory under construction: zotero.sqlite and storage/."""

    def __init__(self, data_dir: Path, create: bool = True, exclusive: bool = False,
                 journal_mode: str = "WAL") -> None:
        """A new database, or (create=False) the existing one, opened as Zotero opens it: WAL mode
        and, as a running Zotero holds it, an exclusive lock (exclusive=True) kept until close()."""
        self.data_dir = data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(data_dir / "zotero.sqlite", isolation_level=None)
        if exclusive:
            self.db.execute("PRAGMA main.locking_mode=EXCLUSIVE")
        self.db.execute(f"PRAGMA journal_mode={journal_mode}")
        self.db.execute("PRAGMA synchronous=NORMAL")        # Zotero's setting in WAL mode
        if create:
            self._initialize_schema()
        self._clock = self.db.execute("SELECT count(*) FROM items").fetchone()[0]
        self.db.execute("PRAGMA foreign_keys=ON")

    # What Zotero.Schema._initializeSchema() does for a new database.
    def _initialize_schema(self) -> None:
        db = self.db
        for name in ("system", "userdata", "triggers"):
            db.executescript("BEGIN;\n" + (SCHEMA / f"{name}.sql").read_text(encoding="utf-8") + "\nCOMMIT;")
        db.execute("BEGIN")
        global_schema = json.loads((SCHEMA / "global_schema.json").read_text(encoding="utf-8"))
        self._update_global_schema(global_schema)
        for name in ("system", "userdata", "triggers"):
            db.execute("REPLACE INTO version (schema, version) VALUES (?, ?)", (name, _sql_version(name)))
        db.execute("INSERT INTO libraries (libraryID, type, editable, filesEditable) VALUES (?, 'user', 1, 1)",
                   (USER_LIBRARY,))
        self._update_custom_tables()
        db.execute("COMMIT")

    def _update_global_schema(self, data: dict) -> None:
        """Zotero.Schema._updateGlobalSchema(): fields, creator types and item types with their
        field order, base-field mappings and creator types; ids handed out in order from 1."""
        db = self.db
        fields: dict[str, int] = {}
        creator_types: dict[str, int] = {}
        for item_type in data["itemTypes"]:
            for entry in item_type["fields"]:
                for name in (entry["field"], entry.get("baseField")):
                    if name and name not in fields:
                        fields[name] = len(fields) + 1
            for entry in item_type["creatorTypes"]:
                creator_types.setdefault(entry["creatorType"], len(creator_types) + 1)
        db.executemany("INSERT INTO fields VALUES (?, ?, NULL)", [(i, n) for n, i in fields.items()])
        db.executemany("INSERT INTO creatorTypes VALUES (?, ?)", [(i, n) for n, i in creator_types.items()])
        for type_id, item_type in enumerate(data["itemTypes"], start=1):
            db.execute("INSERT INTO itemTypes VALUES (?, ?, NULL, 1)", (type_id, item_type["itemType"]))
            for index, entry in enumerate(item_type["fields"]):
                db.execute("INSERT INTO itemTypeFields VALUES (?, ?, 0, ?)", (type_id, fields[entry["field"]], index))
                if entry.get("baseField"):
                    db.execute("INSERT INTO baseFieldMappings VALUES (?, ?, ?)",
                               (type_id, fields[entry["baseField"]], fields[entry["field"]]))
            for entry in item_type["creatorTypes"]:
                db.execute("INSERT INTO itemTypeCreatorTypes VALUES (?, ?, ?)",
                           (type_id, creator_types[entry["creatorType"]], 1 if entry.get("primary") else 0))
        stored = {key: value for key, value in data.items() if key != "itemTypes"}
        db.execute("REPLACE INTO settings VALUES ('globalSchema', 'data', ?)",
                   (zlib.compress(json.dumps(stored).encode("utf-8")),))
        db.execute("REPLACE INTO version (schema, version) VALUES ('globalSchema', ?)", (data["version"],))

    def _update_custom_tables(self) -> None:
        """Zotero.Schema._updateCustomTables(), run at start-up (there are no custom types here)."""
        db = self.db
        db.execute("INSERT INTO itemTypesCombined SELECT itemTypeID, typeName, display, 0 FROM itemTypes")
        db.execute("INSERT INTO fieldsCombined SELECT fieldID, fieldName, NULL, fieldFormatID, 0 FROM fields")
        db.execute("INSERT INTO itemTypeFieldsCombined SELECT itemTypeID, fieldID, hide, orderIndex FROM itemTypeFields")
        db.execute("INSERT INTO baseFieldMappingsCombined SELECT itemTypeID, baseFieldID, fieldID FROM baseFieldMappings")

    def _id(self, table: str, column: str, where: str, params: tuple) -> int | None:
        row = self.db.execute(f"SELECT {column} FROM {table} WHERE {where}", params).fetchone()
        return row[0] if row else None

    def _type_id(self, type_name: str) -> int:
        return self._id("itemTypes", "itemTypeID", "typeName = ?", (type_name,))

    def _new_item(self, type_name: str, key: str) -> int:
        self._clock += 1
        stamp = f"2024-01-01 00:{self._clock // 60:02d}:{self._clock % 60:02d}"
        cursor = self.db.execute(
            "INSERT INTO items (itemTypeID, dateAdded, dateModified, clientDateModified, libraryID, key) "
            "VALUES (?, ?, ?, ?, ?, ?)", (self._type_id(type_name), stamp, stamp, stamp, USER_LIBRARY, key))
        return cursor.lastrowid

    def _set_field(self, item_id: int, field: str, value: str) -> None:
        field_id = self._id("fields", "fieldID", "fieldName = ?", (field,))
        assert field_id is not None, f"Zotero has no field {field!r}"
        value_id = self._id("itemDataValues", "valueID", "value = ?", (value,))
        if value_id is None:
            value_id = self.db.execute("INSERT INTO itemDataValues (value) VALUES (?)", (value,)).lastrowid
        self.db.execute("INSERT INTO itemData VALUES (?, ?, ?)", (item_id, field_id, value_id))

    def item(self, type_name: str, key: str, fields: dict[str, str], creators: tuple = (),
             tags: tuple[str, ...] = (), collections: tuple[int, ...] = ()) -> int:
        """A regular item. creators: (first, last, type) for a two-field name, (name, type) for a
        one-field name (fieldMode 1). Dates are given as Zotero stores them ("2018-00-00 2018")."""
        item_id = self._new_item(type_name, key)
        for field, value in fields.items():
            self._set_field(item_id, field, value)
        for index, creator in enumerate(creators):
            first, last, mode = (creator[0], creator[1], 0) if len(creator) == 3 else ("", creator[0], 1)
            creator_id = self._id("creators", "creatorID", "lastName = ? AND firstName = ? AND fieldMode = ?",
                                  (last, first, mode))
            if creator_id is None:
                creator_id = self.db.execute(
                    "INSERT INTO creators (firstName, lastName, fieldMode) VALUES (?, ?, ?)", (first, last, mode)).lastrowid
            type_id = self._id("creatorTypes", "creatorTypeID", "creatorType = ?", (creator[-1],))
            self.db.execute("INSERT INTO itemCreators VALUES (?, ?, ?, ?)", (item_id, creator_id, type_id, index))
        for tag in tags:
            tag_id = self._id("tags", "tagID", "name = ?", (tag,))
            if tag_id is None:
                tag_id = self.db.execute("INSERT INTO tags (name) VALUES (?)", (tag,)).lastrowid
            self.db.execute("INSERT INTO itemTags VALUES (?, ?, 0)", (item_id, tag_id))
        for collection_id in collections:
            self.db.execute("INSERT INTO collectionItems (collectionID, itemID) VALUES (?, ?)",
                            (collection_id, item_id))
        return item_id

    def attachment(self, key: str, parent_id: int | None, link_mode: int, path: str, title: str,
                   content: bytes | None = None, content_type: str = "application/pdf",
                   collections: tuple[int, ...] = ()) -> int:
        """An attachment item; `content` is written to storage/<key>/ for a stored file."""
        item_id = self._new_item("attachment", key)
        self._set_field(item_id, "title", title)
        self.db.execute("INSERT INTO itemAttachments (itemID, parentItemID, linkMode, contentType, path) "
                        "VALUES (?, ?, ?, ?, ?)", (item_id, parent_id, link_mode, content_type, path))
        if content is not None and path.startswith("storage:"):
            folder = self.data_dir / "storage" / key
            folder.mkdir(parents=True, exist_ok=True)
            (folder / path[len("storage:"):]).write_bytes(content)
        for collection_id in collections:
            self.db.execute("INSERT INTO collectionItems (collectionID, itemID) VALUES (?, ?)",
                            (collection_id, item_id))
        return item_id

    def note(self, key: str, parent_id: int | None, html: str) -> int:
        item_id = self._new_item("note", key)
        self.db.execute("INSERT INTO itemNotes (itemID, parentItemID, note, title) VALUES (?, ?, ?, ?)",
                        (item_id, parent_id, html, html.split(">")[-1][:40]))
        return item_id

    def collection(self, key: str, name: str, parent_id: int | None = None) -> int:
        return self.db.execute(
            "INSERT INTO collections (collectionName, parentCollectionID, libraryID, key) VALUES (?, ?, ?, ?)",
            (name, parent_id, USER_LIBRARY, key)).lastrowid

    def trash(self, item_id: int) -> None:
        self.db.execute("INSERT INTO deletedItems (itemID) VALUES (?)", (item_id,))

    def close(self) -> None:
        self.db.close()
