"""Budget: a PDF bank statement → transactions → categories → totals → advice.

::

    parse → batch → categorise (fleet) → sum → advise → report
      └──────────────────────────────────┘  └───────────────┘

* ``parse`` reads the statement with pypdf and parses lines like
  ``2026-10-03  GROCER Fresh Market  -84.20`` into :class:`Transaction` objects.
* ``batch`` splits them into numbered batches; ``categorise`` is a fleet of agents, one
  session per batch, answering with structured output (:class:`BatchCategories`).
* ``sum`` is a pure function: spending by category, income, net (:class:`Summary`).
* ``advise`` is the budget advisor agent; ``report`` puts the exact totals and the advice
  into one text.

Run it (offline sample replies unless a real provider is configured)::

    wingman-actors run formations/budget.py --input my-statement.pdf

Or from Python (installed, the ready formations live in ``wingman_actors.formations``)::

    from wingman_actors.formations import budget
    result = budget.build(provider=budget.sample_provider()).run(budget.default_input())
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from wingman_actors import Agent, Formation
from wingman_actors._extras import require
from wingman_actors.core import InferenceRequest
from wingman_actors.errors import AgentError, ErrorKind, WingmanError
from wingman_actors.providers import Provider
from wingman_actors.testing import ScriptedProvider

with require("pdf", "the budget formation"):  # reads the statement with pypdf
    from pypdf import PdfReader
    from pypdf.errors import DependencyError, PyPdfError

__all__ = [
    "CATEGORIES",
    "SAMPLE_LATENCY_S",
    "Assignment",
    "BatchCategories",
    "StatementError",
    "Summary",
    "Transaction",
    "build",
    "default_input",
    "make_batches",
    "parse_transactions",
    "read_statement",
    "sample_provider",
    "sum_by_category",
    "write_report",
]

CATEGORIES = (
    "income", "housing", "groceries", "dining", "transport",
    "utilities", "health", "entertainment", "shopping", "other",
)
"""The categories the categoriser may use."""

Category = Literal[
    "income", "housing", "groceries", "dining", "transport",
    "utilities", "health", "entertainment", "shopping", "other",
]

EXAMPLE_LINE = "2026-10-03  GROCER Fresh Market  -84.20"
_LINE = re.compile(r"^(\d{4}-\d{2}-\d{2})\s+(.+?)\s+([-+]?\d[\d,]*\.\d{2})$")
_BATCH_LINE = re.compile(r"^#(\d+)\s+(\S+)\s+(.+?)\s+([-+][\d,]*\d\.\d{2})$")


class Transaction(BaseModel):
    """One statement line. ``amount`` is negative for money out, positive for money in."""

    date: date
    description: str
    amount: float


class Assignment(BaseModel):
    """The category of the transaction numbered ``id`` in a batch."""

    id: int
    category: Category


class BatchCategories(BaseModel):
    """The categoriser's structured answer for one batch: one assignment per transaction."""

    categories: list[Assignment] = Field(default_factory=list)


class Summary(BaseModel):
    """One statement, summed.

    Attributes:
        period: first and last transaction date, e.g. ``"2026-10-01 to 2026-10-30"``.
        transactions: how many transactions.
        income: money in.
        spending: money out, as a positive number.
        net: income minus spending.
        by_category: spending per category (positive), largest first.
    """

    period: str
    transactions: int
    income: float
    spending: float
    net: float
    by_category: dict[str, float]


class StatementError(WingmanError):
    """The statement cannot be read or holds no transactions. Never retried."""

    retryable = False


# -- parse ------------------------------------------------------------------------------


def parse_transactions(text: str) -> list[Transaction]:
    """The transactions in a statement's text: lines of an ISO date, a description and a
    signed amount (``2026-10-03  GROCER Fresh Market  -84.20``); other lines are ignored."""
    out = []
    for raw in text.splitlines():
        m = _LINE.match(raw.strip())
        if m:
            out.append(Transaction(
                date=date.fromisoformat(m[1]), description=" ".join(m[2].split()),
                amount=float(m[3].replace(",", "")),
            ))
    return out


def read_statement(path: str | os.PathLike[str]) -> list[Transaction]:
    """The ``parse`` node: read a PDF statement and parse its transactions.

    Raises:
        StatementError: the file is missing, not a PDF, damaged, password-protected, or
            holds no transactions (the message says which, and what to do).
    """
    name = os.fspath(path)
    where = f"budget: cannot read statement {name!r}"
    file = Path(name).expanduser()
    if not file.exists():
        raise StatementError(f"{where}: file not found; pass the path of a PDF bank statement")
    if file.is_dir():
        raise StatementError(f"{where}: it is a directory; pass the path of a PDF file")
    try:
        with file.open("rb") as fh:
            head = fh.read(1024)
    except OSError as exc:
        raise StatementError(f"{where}: {exc.strerror or exc}") from exc
    if not head:
        raise StatementError(f"{where}: the file is empty; pass the PDF statement itself")
    if b"%PDF-" not in head:
        raise StatementError(f"{where}: not a PDF file (no %PDF header); export the statement as PDF")
    try:
        reader = PdfReader(file)
        if reader.is_encrypted and not _decrypt(reader):
            raise StatementError(
                f"{where}: it is password-protected; save an unprotected copy "
                "(e.g. qpdf --decrypt --password=PASSWORD in.pdf out.pdf) and pass that"
            )
        text = "\n".join(page.extract_text() or "" for page in reader.pages)
        pages = len(reader.pages)
    except PyPdfError as exc:
        raise StatementError(f"{where}: the PDF is damaged ({exc})") from exc
    transactions = parse_transactions(text)
    if transactions:
        return transactions
    if not text.strip():
        raise StatementError(
            f"budget: no text in statement {name!r} ({pages} page(s)): it looks scanned; run it through OCR first"
        )
    raise StatementError(
        f"budget: no transactions found in statement {name!r}: expected lines like {EXAMPLE_LINE!r} "
        "(ISO date, description, signed amount)"
    )


def _decrypt(reader: PdfReader) -> bool:
    # Many bank statements are encrypted with an empty user password: they open as is.
    try:
        return bool(reader.decrypt(""))
    except (DependencyError, PyPdfError):
        return False


# -- batch, categorise, sum ---------------------------------------------------------------


def make_batches(transactions: Sequence[Transaction], size: int) -> list[str]:
    """Split the transactions into batches of ``size``, one text per batch; every line is
    numbered with the transaction's index (``#3  2026-10-02  GROCER Fresh Market  -84.20``)."""
    lines = [f"#{i}  {t.date.isoformat()}  {t.description}  {t.amount:+.2f}" for i, t in enumerate(transactions)]
    return ["\n".join(lines[i : i + size]) for i in range(0, len(lines), size)]


def merge_categories(count: int, answers: Sequence[BatchCategories]) -> list[str]:
    """The category of each of ``count`` transactions from the fleet's answers; a
    transaction no answer mentions is ``"other"``, ids out of range are ignored."""
    categories = ["other"] * count
    for answer in answers:
        for item in answer.categories:
            if 0 <= item.id < count:
                categories[item.id] = item.category
    return categories


def sum_by_category(transactions: Sequence[Transaction], categories: Sequence[str]) -> Summary:
    """Sum a statement: money out per category (largest first), income, net.

    Args:
        transactions: the statement's transactions.
        categories: the category of each transaction, in the same order.
    """
    spent: dict[str, float] = {}
    income = 0.0
    for t, category in zip(transactions, categories, strict=True):
        if t.amount >= 0:
            income += t.amount
        else:
            spent[category] = spent.get(category, 0.0) - t.amount
    by_category = {c: round(v, 2) for c, v in sorted(spent.items(), key=lambda kv: (-kv[1], kv[0]))}
    spending = round(sum(spent.values()), 2)
    dates = sorted(t.date for t in transactions)
    period = f"{dates[0].isoformat()} to {dates[-1].isoformat()}" if dates else ""
    return Summary(period=period, transactions=len(transactions), income=round(income, 2),
                   spending=spending, net=round(income - spending, 2), by_category=by_category)


def _sum_node(parse: list[Transaction], categorise: list[BatchCategories]) -> Summary:
    return sum_by_category(parse, merge_categories(len(parse), categorise))


def write_report(totals: Summary, advice: str) -> str:
    """The ``report`` node: the exact totals, then the advisor's text."""
    width = max((len(c) for c in totals.by_category), default=8)
    lines = [
        f"Budget for {totals.period} ({totals.transactions} transactions)",
        "",
        f"  {'Income':<{width + 2}}{totals.income:>12,.2f}",
        f"  {'Spending':<{width + 2}}{totals.spending:>12,.2f}",
        f"  {'Net':<{width + 2}}{totals.net:>12,.2f}",
        "",
        "Spending by category",
    ]
    for category, amount in totals.by_category.items():
        share = 100 * amount / totals.spending if totals.spending else 0.0
        lines.append(f"  {category:<{width + 2}}{amount:>12,.2f}  {share:5.1f}%")
    return "\n".join([*lines, "", "Advice", advice.strip()])


def _report_node(sum: Summary, advise: str) -> str:  # parameters named after the predecessors
    return write_report(sum, advise)


# -- the formation ------------------------------------------------------------------------

CATEGORISER_INSTRUCTIONS = (
    "You categorise bank transactions. Each line is '#id  date  description  amount' "
    "(negative amounts are money out). Give every id exactly one category from: "
    + ", ".join(CATEGORIES) + ". Money in is 'income'."
)
ADVISOR_INSTRUCTIONS = (
    "You are a practical budget advisor. From one month of spending summed by category, "
    "give three short, concrete suggestions, each quoting the amounts it is about. "
    "Plain text, no tables."
)
CATEGORISE_PROMPT = "Categorise these transactions:\n{input}"
ADVISE_PROMPT = "My statement for {period}, summed (JSON):\n{input}\n\nHow can I improve my budget?"


def build(provider: Provider | None = None, *, batch_size: int = 10, max_workers: int = 4) -> Formation:
    """The budget formation.

    Args:
        provider: the model provider of the categoriser and the advisor (None: give one
            later with ``formation.run(..., provider=...)``); :func:`sample_provider` for
            offline sample replies.
        batch_size: transactions per categoriser session.
        max_workers: categoriser sessions at once.

    Returns:
        The formation; its input is the statement's path, its output the report text.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    categoriser = Agent("categoriser", instructions=CATEGORISER_INSTRUCTIONS, provider=provider,
                        output_schema=BatchCategories)
    advisor = Agent("advisor", instructions=ADVISOR_INSTRUCTIONS, provider=provider)

    def batch(transactions: list[Transaction]) -> list[str]:
        return make_batches(transactions, batch_size)

    return (
        Formation("budget")
        .add_function("parse", read_statement)
        .add_function("batch", batch)
        .add_fleet("categorise", categoriser, max_workers=max_workers, prompt=CATEGORISE_PROMPT, retries=1)
        .add_function("sum", _sum_node)
        .add_agent("advise", advisor, prompt=ADVISE_PROMPT, retries=1)
        .add_function("report", _report_node)
        .connect("parse", "batch", "categorise", "sum", "advise", "report")
        .connect("parse", "sum")
        .connect("sum", "report")
    )


def default_input() -> str:
    """The bundled sample statement, ``data/statement.pdf`` beside this module (package
    data, so it ships in the wheel); shown relative to the current directory when it is
    below it."""
    statement = Path(__file__).resolve().parent / "data" / "statement.pdf"
    try:
        return str(statement.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(statement)


# -- offline sample replies ---------------------------------------------------------------

_KEYWORDS: dict[str, tuple[str, ...]] = {
    "housing": ("RENT", "MORTGAGE", "INSURANCE", "HOA"),
    "groceries": ("GROCER", "SUPERMARKET", "MARKET", "BAKERY"),
    "dining": ("CAFE", "COFFEE", "RESTAURANT", "TAKEAWAY", "BAR "),
    "transport": ("TRANSIT", "FUEL", "TAXI", "BUS", "TRAIN", "PARKING"),
    "utilities": ("UTILITY", "INTERNET", "PHONE", "ELECTRIC", "WATER", "GAS "),
    "health": ("PHARMACY", "GYM", "DOCTOR", "DENTIST"),
    "entertainment": ("STREAMING", "CINEMA", "CONCERT", "THEATRE"),
    "shopping": ("ONLINE", "SHOP", "BOOKS", "STORE"),
}


def sample_category(description: str, amount: float) -> str:
    """The sample categoriser's rule: money in is income, else the first keyword match."""
    if amount >= 0:
        return "income"
    upper = f"{description.upper()} "
    return next((c for c, words in _KEYWORDS.items() if any(w in upper for w in words)), "other")


def _sample_categories(request: InferenceRequest) -> str:
    assignments = []
    for line in request.messages[-1].text.splitlines():
        m = _BATCH_LINE.match(line.strip())
        if m:
            category = sample_category(m[3], float(m[4].replace(",", "")))
            assignments.append({"id": int(m[1]), "category": category})
    return json.dumps({"categories": assignments})


def _sample_advice(request: InferenceRequest) -> str:
    text = request.messages[-1].text
    summary = Summary.model_validate(json.JSONDecoder().raw_decode(text, text.index("{"))[0])
    ranked = list(summary.by_category.items())
    tips = ["(sample reply: computed offline from your totals, not written by a model)"]
    if ranked:
        top, amount = ranked[0]
        share = 100 * amount / summary.spending if summary.spending else 0.0
        tips.append(f"1. {top.capitalize()} is your largest cost at {amount:,.2f} ({share:.0f}% of spending); "
                    "check whether it can be renegotiated or shared.")
    if len(ranked) > 1:
        second, amount = ranked[1]
        tips.append(f"2. {second.capitalize()} comes next at {amount:,.2f}; a weekly limit of "
                    f"{amount / 4.3 * 0.9:,.2f} would save about {amount * 0.1:,.2f} a month.")
    rate = 100 * summary.net / summary.income if summary.income else 0.0
    tips.append(f"3. You kept {summary.net:,.2f} of {summary.income:,.2f} income ({rate:.0f}%); "
                "move part of it to savings on payday.")
    return "\n".join(tips)


SAMPLE_LATENCY_S = 0.4
"""Seconds each sample reply takes when the launcher shows the live view on a terminal, so
the run unfolds visibly offline (piped and ``--json`` runs stay instant)."""


def sample_provider() -> ScriptedProvider:
    """Deterministic offline replies for every agent of the formation: the categoriser
    answers by keyword, the advisor quotes the real totals. Used by the launcher when no
    real provider is configured."""

    def reply(request: InferenceRequest) -> str:
        if request.instructions.startswith(CATEGORISER_INSTRUCTIONS):
            return _sample_categories(request)
        if request.instructions.startswith(ADVISOR_INSTRUCTIONS):
            return _sample_advice(request)
        raise AgentError("the budget sample replies only answer the categoriser and the advisor",
                         kind=ErrorKind.INVALID, provider="scripted")

    return ScriptedProvider([reply], cycle=True, model="sample-replies")
