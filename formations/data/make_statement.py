"""Write ``statement.pdf``: the sample bank statement the budget formation reads by default.

The PDF is committed, so nobody needs to run this; run it after changing ``TRANSACTIONS``::

    python formations/data/make_statement.py            # writes formations/data/statement.pdf
    python formations/data/make_statement.py out.pdf    # writes elsewhere

It needs fpdf2 (in the ``dev`` extra: ``pip install -e ".[dev]"``). The output is
byte-for-byte reproducible: the creation date is fixed, so re-running it leaves git clean.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

from fpdf import FPDF

BANK = "Northwind Bank"
ACCOUNT = "Alex Example - current account NL00 NWBK 0123 4567 89"
PERIOD = ("2026-10-01", "2026-10-31")
OPENING_BALANCE = 2140.55

TRANSACTIONS: list[tuple[str, str, float]] = [
    ("2026-10-01", "SALARY Northwind Logistics", 3250.00),
    ("2026-10-01", "RENT Maple Court Apartments", -1450.00),
    ("2026-10-02", "GROCER Fresh Market", -84.20),
    ("2026-10-03", "CAFE Bean There", -4.80),
    ("2026-10-04", "TRANSIT Monthly Pass", -65.00),
    ("2026-10-05", "UTILITY City Power & Light", -92.37),
    ("2026-10-06", "GROCER Fresh Market", -61.45),
    ("2026-10-07", "STREAMING Flixstream", -15.99),
    ("2026-10-08", "PHARMACY Wellcare", -23.10),
    ("2026-10-09", "RESTAURANT Luigi's Trattoria", -58.60),
    ("2026-10-10", "FUEL Shell Station 221", -47.30),
    ("2026-10-11", "GROCER Green Grocer Co-op", -39.75),
    ("2026-10-12", "INTERNET FiberNet", -49.99),
    ("2026-10-13", "CAFE Bean There", -5.20),
    ("2026-10-14", "GYM Iron Works Membership", -35.00),
    ("2026-10-15", "REFUND Shopwave Order 5377", 24.99),
    ("2026-10-16", "ONLINE Shopwave Order 5521", -76.48),
    ("2026-10-17", "GROCER Fresh Market", -102.33),
    ("2026-10-18", "CINEMA Starlight", -24.00),
    ("2026-10-20", "PHONE Telco Mobile Plan", -30.00),
    ("2026-10-22", "RESTAURANT Noodle House", -32.40),
    ("2026-10-24", "TAXI CityCab", -18.75),
    ("2026-10-25", "GROCER Fresh Market", -88.90),
    ("2026-10-29", "INSURANCE SafeHome Contents", -18.25),
    ("2026-10-30", "CAFE Bean There", -4.80),
]
"""(date, description, amount): negative amounts are money out."""

_CREATED = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


def line(date: str, description: str, amount: float) -> str:
    """One statement line, as the budget formation's parser expects it."""
    return f"{date}  {description:<36}{amount:>+12,.2f}"


def write(path: Path) -> Path:
    """Write the statement to ``path`` and return it."""
    pdf = FPDF(format="A4")
    pdf.set_creation_date(_CREATED)
    pdf.set_title(f"{BANK} statement {PERIOD[0]} to {PERIOD[1]}")
    pdf.set_author(BANK)
    pdf.add_page()
    pdf.set_font("Helvetica", style="B", size=16)
    pdf.cell(0, 10, BANK, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", size=10)
    pdf.cell(0, 6, ACCOUNT, new_x="LMARGIN", new_y="NEXT")
    pdf.cell(0, 6, f"Statement period: {PERIOD[0]} to {PERIOD[1]}", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(4)
    pdf.set_font("Courier", size=9.5)
    pdf.cell(0, 5, f"Opening balance {OPENING_BALANCE:,.2f}", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(2)
    pdf.set_font("Courier", style="B", size=9.5)
    pdf.cell(0, 5, f"{'Date':<12}{'Description':<36}{'Amount':>12}", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Courier", size=9.5)
    for date, description, amount in TRANSACTIONS:
        pdf.cell(0, 5, line(date, description, amount), new_x="LMARGIN", new_y="NEXT")
    closing = OPENING_BALANCE + sum(amount for _, _, amount in TRANSACTIONS)
    pdf.ln(2)
    pdf.cell(0, 5, f"Closing balance {closing:,.2f}", new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))
    return path


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("statement.pdf")
    print(f"wrote {write(out)} ({len(TRANSACTIONS)} transactions)")
