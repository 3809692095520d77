"""README.md's options table is the one :func:`options_markdown` generates."""

from __future__ import annotations

from pathlib import Path

from nsight_lab.options import OPTIONS, options_markdown

README = Path(__file__).resolve().parents[2] / "README.md"


def _readme_table() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("\n| option ") + 1
    end = text.index("\n\n", start)
    return text[start:end]


def test_readme_options_table_is_generated() -> None:
    """Regenerate with ``python -m nsight_lab.options --markdown`` when this fails."""
    assert _readme_table() == options_markdown()


def test_table_has_one_row_per_option_with_its_choices() -> None:
    rows = options_markdown().splitlines()[2:]
    assert len(rows) == len(OPTIONS)
    for option, row in zip(OPTIONS, rows, strict=True):
        assert row.startswith(f"| `{option.flag}")
        if option.choices is not None:
            assert "\\|".join(option.choices()) in row
    widths = {len(line) for line in options_markdown().splitlines()}
    assert len(widths) == 1  # padded as prettier writes it
