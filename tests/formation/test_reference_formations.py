"""The two formations of the Wingman reference, end to end with scripted providers."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from datetime import date
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pypdf import PdfReader

from tests.support.pdf import write_statement
from wingman_actors import Agent, Formation
from wingman_actors.core import InferenceRequest
from wingman_actors.testing import ScriptedProvider


class Transaction(BaseModel):
    date: date
    description: str
    amount: float
    category: str = "uncategorised"


LINE = re.compile(r"^(\d{4}-\d{2}-\d{2})\s+(.+?)\s+(-?\d+\.\d{2})$")


def parse_pdf(path: str) -> list[Transaction]:
    text = "\n".join(page.extract_text() or "" for page in PdfReader(path).pages)
    rows = []
    for line in text.splitlines():
        m = LINE.match(line.strip())
        if m:
            rows.append(Transaction(date=date.fromisoformat(m[1]), description=m[2], amount=float(m[3])))
    return rows


CATEGORIES = {"GROCER": "food", "CAFE": "food", "RENT": "housing", "BUS": "transport"}


def categorise(transactions: list[Transaction]) -> list[Transaction]:
    return [
        t.model_copy(update={"category": next((c for k, c in CATEGORIES.items() if k in t.description), "other")})
        for t in transactions
    ]


def sum_by_category(transactions: list[Transaction]) -> dict[str, float]:
    totals: dict[str, float] = defaultdict(float)
    for t in transactions:
        totals[t.category] += -t.amount
    return dict(sorted(totals.items()))


def test_budget_formation_parses_a_pdf_sums_categories_and_advises(tmp_path: Path) -> None:
    pdf = write_statement(tmp_path / "statement.pdf", [
        "2026-10-01 RENT October -1200.00",
        "2026-10-03 GROCER Fresh Market -84.20",
        "2026-10-04 CAFE Corner -4.80",
        "2026-10-05 BUS Pass -55.00",
        "2026-10-07 GROCER Fresh Market -61.00",
    ])

    def advise(request: InferenceRequest) -> str:
        totals = json.loads(request.messages[-1].text.split("\n", 1)[1])
        biggest = max(totals, key=totals.get)
        return f"Your biggest spend is {biggest} at {totals[biggest]:.2f}."

    advisor = Agent("advisor", instructions="You are a budget advisor.", provider=ScriptedProvider([advise]))
    f = (
        Formation("budget")
        .add_function("parse", parse_pdf)
        .add_function("categorise", categorise)
        .add_function("sum", sum_by_category)
        .add_agent("advisor", advisor, prompt="Monthly totals by category:\n{input}")
        .connect("parse", "categorise", "sum", "advisor")
    )
    result = f.run(str(pdf))
    assert result.outputs == {"advisor": "Your biggest spend is housing at 1200.00."}
    assert result.nodes["sum"].status == "succeeded"
    assert len(result.nodes) == 4


class Plan(BaseModel):
    title: str
    sections: list[str]


def test_research_formation_fans_an_outline_out_to_a_fleet_and_assembles(tmp_path: Path) -> None:
    outline = Agent("outline", provider=ScriptedProvider(
        ['{"title": "Owls", "sections": ["Diet", "Flight", "Sleep"]}']), output_schema=Plan)
    researcher = Agent("researcher", provider=ScriptedProvider(
        [lambda req: f"notes on {req.messages[-1].text.removeprefix('Research: ')}"], cycle=True))

    def assemble_reply(request: InferenceRequest) -> str:
        return "REPORT\n" + request.messages[-1].text

    assembler = Agent("assembler", provider=ScriptedProvider([assemble_reply]))

    def sections(plan: Plan) -> list[str]:
        return plan.sections

    def joined(notes: list[str]) -> str:
        return "\n".join(notes)

    f = (
        Formation("research")
        .add_agent("outline", outline)
        .add_function("sections", sections)
        .add_fleet("research", researcher, max_workers=3, prompt="Research: {input}")
        .add_function("join", joined)
        .add_agent("assemble", assembler)
        .connect("outline", "sections", "research", "join", "assemble")
    )
    result = f.run("Write about owls")
    assert result.output == "REPORT\nnotes on Diet\nnotes on Flight\nnotes on Sleep"
    assert result.usage.output_tokens == sum(t.usage.output_tokens for t in result.nodes.values())
    assert result.nodes["research"].usage.output_tokens > 0


def test_formation_events_tag_agent_text_with_the_node_in_the_research_formation() -> None:
    seen: list[Any] = []
    a = Agent("a", provider=ScriptedProvider(["hello there"]))
    Formation("one").add_agent("writer", a).run("x", on_event=seen.append)
    assert {e.node for e in seen if e.type == "agent_text"} == {"writer"}
