"""A researcher's library to import: one-page papers on the test topics, a Zotero library holding
two of them, and the count of archives an import has made ready so far."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pymupdf

from testkit.topics import TOPICS
from testkit.zotero_factory import IMPORTED_FILE, ZoteroLibrary


def paper(path: Path, topic: str, marker: str = "") -> Path:
    """A one-page PDF about `topic` (its paragraphs from testkit/topics.py); `marker` makes its bytes distinct."""
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_textbox(pymupdf.Rect(72, 72, 540, 770), "\n\n".join(TOPICS[topic]) + (f"\n\n{marker}" if marker else ""),
                        fontsize=10)
    doc.save(path)
    doc.close()
    return path


def zotero_library(data_dir: Path, scratch: Path) -> ZoteroLibrary:
    library = ZoteroLibrary(data_dir)
    reading = library.collection("COLREAD1", "Reading")
    jazz = library.item("journalArticle", "JAZZ2018", {"title": "Jazz and Its Origins", "date": "2018-00-00 2018",
                                                        "DOI": "10.1000/jazz.2018"},
                        creators=(("Ann", "Buck", "author"), ("Bo", "Bulian", "author"), ("Cy", "Ciaramita", "author")),
                        tags=("music",), collections=(reading,))
    library.attachment("JAZZPDF1", jazz, IMPORTED_FILE, "storage:jazz.pdf", "Full Text PDF",
                       content=paper(scratch / "jazz.pdf", "jazz").read_bytes())
    lava = library.item("journalArticle", "LAVA2020", {"title": "Volcanoes", "date": "2020-00-00 2020"},
                        creators=(("Dee", "Alt", "author"),))
    library.attachment("LAVAPDF1", lava, IMPORTED_FILE, "storage:lava.pdf", "Full Text PDF",
                       content=paper(scratch / "lava.pdf", "volcanoes").read_bytes())
    library.note("LAVANOTE", lava, "<p>check the ash figures</p>")
    return library


def ready_archives(data_dir: Path) -> int:
    try:
        with sqlite3.connect(f"{(data_dir / 'forest.sqlite3').as_uri()}?mode=ro", uri=True, timeout=1) as db:
            return db.execute("SELECT count(*) FROM archives WHERE status = 'ready'").fetchone()[0]
    except sqlite3.Error:
        return 0
