"""Regenerate docs/rules.md from the rule registry: ``python docs/generate.py``."""

from pathlib import Path

from shapetrace.rules.page import rules_markdown

if __name__ == "__main__":
    target = Path(__file__).with_name("rules.md")
    target.write_text(rules_markdown(), encoding="utf-8")
    print(f"wrote {target}")
