"""The budget formation: statement parsing, categorising, sums, advice, input errors."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from pypdf import PdfWriter

from formations import budget
from tests.formations import statement_data
from tests.formations.statement_data import STATEMENT
from tests.support.pdf import write_statement
from wingman_actors.core import InferenceRequest, Message
from wingman_actors.testing import run_node


def test_parse_reads_every_transaction_of_the_bundled_statement() -> None:
    parsed = budget.read_statement(str(STATEMENT))
    expected = [(date.fromisoformat(d), desc, amount) for d, desc, amount in statement_data.transactions()]
    assert [(t.date, t.description, t.amount) for t in parsed] == expected


def test_parse_reads_amounts_with_thousands_separators_and_plus_signs() -> None:
    text = "Opening balance 2,140.55\n2026-10-01  SALARY Acme  +3,250.00\n2026-10-02  RENT Flat  -1,450.00\n"
    assert [t.amount for t in budget.parse_transactions(text)] == [3250.00, -1450.00]


def test_sum_by_category_matches_the_statement_totals() -> None:
    parsed = budget.read_statement(str(STATEMENT))
    categories = [budget.sample_category(t.description, t.amount) for t in parsed]
    summary = budget.sum_by_category(parsed, categories)
    assert summary.transactions == len(statement_data.transactions())
    assert summary.income == statement_data.income()
    assert summary.spending == statement_data.spending()
    assert summary.net == round(statement_data.income() - statement_data.spending(), 2)
    assert summary.spending == pytest.approx(sum(summary.by_category.values()))
    assert list(summary.by_category.values()) == sorted(summary.by_category.values(), reverse=True)


def test_budget_formation_with_sample_replies_reports_totals_by_category_and_advice() -> None:
    result = budget.build(provider=budget.sample_provider()).run(str(STATEMENT))
    spent: dict[str, float] = {}
    for _, description, amount in statement_data.transactions():
        if amount < 0:
            category = budget.sample_category(description, amount)
            spent[category] = spent.get(category, 0.0) - amount
    lines = [line.split() for line in result.output.splitlines()]
    assert ["Spending", f"{statement_data.spending():,.2f}"] in lines
    assert ["Income", f"{statement_data.income():,.2f}"] in lines
    for category, total in spent.items():
        assert any(words[:2] == [category, f"{total:,.2f}"] for words in lines)
    assert "sample reply" in result.output


def test_categorise_runs_one_session_per_batch() -> None:
    provider = budget.sample_provider()
    budget.build(provider=provider, batch_size=10).run(str(STATEMENT))
    categoriser_calls = [r for r in provider.requests if r.instructions.startswith(budget.CATEGORISER_INSTRUCTIONS)]
    assert len(categoriser_calls) == 3  # 25 transactions in batches of 10


def test_sample_categoriser_answers_with_valid_structured_output() -> None:
    batch = budget.make_batches(budget.read_statement(str(STATEMENT)), 5)[0]
    request = InferenceRequest(messages=[Message.user(batch)], instructions=budget.CATEGORISER_INSTRUCTIONS)
    answer = budget.BatchCategories.model_validate_json(budget.sample_provider().run_inference(request).text)
    assert [(a.id, a.category) for a in answer.categories][:3] == [(0, "income"), (1, "housing"), (2, "groceries")]


def test_merge_categories_defaults_transactions_the_answers_miss_to_other() -> None:
    answers = [budget.BatchCategories(categories=[budget.Assignment(id=1, category="dining"),
                                                  budget.Assignment(id=9, category="health")])]
    assert budget.merge_categories(3, answers) == ["other", "dining", "other"]


def test_parse_node_runs_alone_on_the_bundled_statement() -> None:
    run = run_node(budget.build(), "parse", str(STATEMENT))
    assert len(run.output) == len(statement_data.transactions())


def test_budget_formation_validates() -> None:
    plan = budget.build().validate()
    assert list(plan.order) == ["parse", "batch", "categorise", "sum", "advise", "report"]


def test_default_input_is_the_bundled_statement() -> None:
    assert Path(budget.default_input()).resolve() == STATEMENT


def test_bundled_statement_is_what_make_statement_writes(tmp_path: Path) -> None:
    written = statement_data.make_statement().write(tmp_path / "statement.pdf")
    assert written.read_bytes() == STATEMENT.read_bytes()


def test_missing_statement_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(budget.StatementError, match=r"cannot read statement '.*nope\.pdf': file not found"):
        budget.read_statement(str(tmp_path / "nope.pdf"))


def test_a_text_file_is_refused_as_not_a_pdf(tmp_path: Path) -> None:
    path = tmp_path / "notes.pdf"
    path.write_text("date,amount\n")
    with pytest.raises(budget.StatementError, match="not a PDF file"):
        budget.read_statement(str(path))


def test_an_empty_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.pdf"
    path.write_bytes(b"")
    with pytest.raises(budget.StatementError, match="the file is empty"):
        budget.read_statement(str(path))


def test_a_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(budget.StatementError, match="it is a directory"):
        budget.read_statement(str(tmp_path))


def test_a_password_protected_statement_is_a_clear_error(tmp_path: Path) -> None:
    writer = PdfWriter(clone_from=STATEMENT)
    writer.encrypt(user_password="secret", algorithm="RC4-128")
    writer.write(tmp_path / "locked.pdf")
    with pytest.raises(budget.StatementError, match="password-protected; save an unprotected copy"):
        budget.read_statement(str(tmp_path / "locked.pdf"))


def test_a_statement_encrypted_with_an_empty_password_opens(tmp_path: Path) -> None:
    writer = PdfWriter(clone_from=STATEMENT)
    writer.encrypt(user_password="", owner_password="owner", algorithm="RC4-128")
    writer.write(tmp_path / "restricted.pdf")
    assert len(budget.read_statement(str(tmp_path / "restricted.pdf"))) == len(statement_data.transactions())


def test_a_pdf_without_transactions_says_what_lines_it_expects(tmp_path: Path) -> None:
    path = write_statement(tmp_path / "letter.pdf", ["Dear customer,", "your card is on its way."])
    with pytest.raises(budget.StatementError, match=r"no transactions found .* expected lines like"):
        budget.read_statement(str(path))


def test_a_pdf_without_text_suggests_ocr(tmp_path: Path) -> None:
    writer = PdfWriter()
    writer.add_blank_page(200, 200)
    writer.write(tmp_path / "scan.pdf")
    with pytest.raises(budget.StatementError, match=r"no text .* run it through OCR"):
        budget.read_statement(str(tmp_path / "scan.pdf"))


def test_statement_errors_are_not_retried() -> None:
    assert budget.StatementError("x").retryable is False
