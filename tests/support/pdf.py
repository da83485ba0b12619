"""Small PDF statements for tests, written with fpdf2."""

from __future__ import annotations

from pathlib import Path

from fpdf import FPDF


def write_statement(path: Path, lines: list[str], *, title: str = "Account statement") -> Path:
    """Write a one-page PDF with a title and one text line per transaction."""
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    pdf.cell(0, 8, title, new_x="LMARGIN", new_y="NEXT")
    for line in lines:
        pdf.cell(0, 6, line, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))
    return path
