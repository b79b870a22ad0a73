"""Builds small PDFs with known layout for the parser tests (PyMuPDF writes them)."""
from __future__ import annotations

from pathlib import Path

import pymupdf

A4 = (595, 842)
LEFT, RIGHT = (50, 287), (308, 545)
HEADER = "Journal of Synthetic Tests, Vol. 3"


class PageWriter:
    """Writes lines top-down in one column; a gap after each paragraph separates blocks."""

    def __init__(self, page: pymupdf.Page, column: tuple[float, float], top: float = 70,
                 font: str = "helv", bold: str = "hebo") -> None:
        self.page, self.x, self.y = page, column[0], top
        self.font, self.bold = font, bold

    def heading(self, text: str, size: float = 12) -> None:
        self.y += 6
        self.page.insert_text((self.x, self.y), text, fontname=self.bold, fontsize=size)
        self.y += size * 1.6

    def paragraph(self, lines: list[str], size: float = 10) -> None:
        for line in lines:
            self.page.insert_text((self.x, self.y), line, fontname=self.font, fontsize=size)
            self.y += size * 1.25
        self.y += size * 1.2


def _furniture(page: pymupdf.Page, number: int) -> None:
    page.insert_text((200, 30), HEADER, fontname="helv", fontsize=8)
    page.insert_text((295, 815), str(number), fontname="helv", fontsize=9)


def two_column_paper(path: Path) -> Path:
    """Three pages: two-column pages 1-2 and a one-column page 3 (facts asserted in test_pdf)."""
    doc = pymupdf.open()
    page = doc.new_page(width=A4[0], height=A4[1])
    _furniture(page, 1)
    page.insert_text((150, 80), "A Study of Tidal Pools", fontname="hebo", fontsize=20)
    left = PageWriter(page, LEFT, top=130)
    left.heading("1 Introduction")
    left.paragraph(["Tidal pools hold a surprising variety of life. Their repre-",
                    "sentation in field guides is poor because they",
                    "change with every tide."])
    left.heading("2 Methods")
    left.paragraph(["We sampled forty pools along the northern coast",
                    "during spring low tides in 2024, and each pool was"])
    right = PageWriter(page, RIGHT, top=130)
    right.paragraph(["photographed and its species counted by two",
                     "observers working independently."])
    right.paragraph(["Figure 1: Map of the sampled tidal pools."], size=8)
    right.heading("2.1 Sampling Protocol", size=11)
    right.paragraph(["Water temperature was logged every ten minutes",
                     "with a waterproof sensor."])

    page = doc.new_page(width=A4[0], height=A4[1])
    _furniture(page, 2)
    left = PageWriter(page, LEFT)
    left.heading("3 Results")
    left.paragraph(["Anemones were found in thirty pools, while sea",
                    "stars appeared in only twelve."])
    left.paragraph(["Our state-of-the-art sensors never failed, which is",
                    "rare for state-of-the-",
                    "art equipment in salt water."])
    right = PageWriter(page, RIGHT)
    right.paragraph(["Table 1: Species counts per pool."], size=8)
    right.paragraph(["Pools higher on the shore held fewer species,",
                     "which matches earlier surveys of the region."])

    page = doc.new_page(width=A4[0], height=A4[1])
    _furniture(page, 3)
    one = PageWriter(page, (50, 545))
    one.heading("4 Conclusion")
    one.paragraph(["Tidal pools deserve more attention from ecologists, and this survey shows why."])
    doc.set_metadata({"title": "A Study of Tidal Pools"})
    doc.save(path)
    return path


def chinese_paper(path: Path) -> Path:
    doc = pymupdf.open()
    for number, (heading, lines, caption) in enumerate([
        ("1 引言", ["光合作用是植物利用光能把二氧化碳和水转化为有机", "物并释放氧气的过程。叶绿体吸收红光和蓝光。"],
         "图1：叶绿体的结构示意图"),
        ("2 火山", ["火山是地幔中的岩浆到达地表形成的。大多数火山位", "于板块边界，例如环太平洋火山带。"], None),
        ("3 结论", ["植物和火山都深刻地影响着地球的大气。"], None),
    ], start=1):
        page = doc.new_page(width=A4[0], height=A4[1])
        _furniture(page, number)
        if number == 1:
            page.insert_text((200, 80), "自然科学笔记", fontname="china-s", fontsize=20)
        writer = PageWriter(page, (50, 545), top=130, font="china-s", bold="china-s")
        writer.heading(heading, size=14)
        writer.paragraph(lines, size=10.5)
        if caption:
            writer.paragraph([caption], size=8)
    doc.save(path)
    return path


def scanned_paper(path: Path) -> Path:
    """A page that is only a picture of text: what a scanner without OCR produces."""
    doc = pymupdf.open()
    page = doc.new_page(width=A4[0], height=A4[1])
    picture = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 200, 100), False)
    picture.clear_with(200)
    page.insert_image(pymupdf.Rect(50, 50, 450, 250), pixmap=picture)
    doc.save(path)
    return path


def encrypted_paper(path: Path, source: Path) -> Path:
    doc = pymupdf.open(source)
    doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="secret", owner_pw="owner")
    return path
