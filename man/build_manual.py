#!/usr/bin/env python3
"""Man pages of the STOL commands and daemons (`make man`).

swift-argument-parser's `generate-manual` writes the pages from each tool's
`--experimental-dump-help`, and it is kept for that (option lists, synopses,
the mdoc it writes). Three things it does not do, this script adds around it:

* It drops every non-ASCII character ("1…200" became "1200", "león" "len").
  The tool's help is given to it with each such character as an ASCII token,
  and the tokens become mdoc's `\\[uXXXX]` escapes in the page.
* An `AsyncParsableCommand` (every daemon) gets an implicit `help`
  subcommand, so the daemons' synopses read `stol-taxonomyd subcommand ...`.
  A `help` that is the only subcommand is left out of the help it reads.
* Its pages end with a generic EXIT STATUS (`.Ex -std`) and have no
  ENVIRONMENT, FILES or SEE ALSO. Those sections are written by hand in
  man/sections/<page>.mdoc (they state facts of the installed system: paths,
  variables, the real exit codes) and replace the generic ending.

    man/build_manual.py --generate-manual BIN --section 1 --output DIR TOOL...
"""
from __future__ import annotations

import argparse
import json
import os
import re
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOKEN = re.compile(r"ZQU([0-9A-F]{4,6})QZ")


def asciify(value):
    """Every non-ASCII character of every string as a token generate-manual keeps."""
    if isinstance(value, str):
        return "".join(c if ord(c) < 128 else f"ZQU{ord(c):04X}QZ" for c in value)
    if isinstance(value, list):
        return [asciify(v) for v in value]
    if isinstance(value, dict):
        return {k: asciify(v) for k, v in value.items()}
    return value


def drop_lone_help(command: dict) -> None:
    """Removes an implicit `help` that is a command's only subcommand, recursively."""
    subcommands = command.get("subcommands") or []
    if [s.get("commandName") for s in subcommands] == ["help"]:
        command.pop("subcommands")
    for sub in command.get("subcommands") or []:
        drop_lone_help(sub)


def dump_help(tool: Path) -> dict:
    output = subprocess.run([str(tool), "--experimental-dump-help"], check=True, capture_output=True, text=True).stdout
    document = json.loads(output)
    drop_lone_help(document["command"])
    return asciify(document)


def finish(page: str, sections: str | None, os_name: str | None = None) -> str:
    """Tokens to mdoc escapes; the generic EXIT STATUS replaced by the page's own
    sections; a blank line (a paragraph break of the help text, which mdoc warns
    about) as `.Pp`; `.Os` naming the product rather than "BSD"."""
    page = TOKEN.sub(lambda m: f"\\[u{m.group(1)}]", page)
    if sections is not None:
        cut = page.find('.Sh "EXIT STATUS"')
        if cut < 0:
            cut = len(page)
        page = page[:cut].rstrip("\n") + "\n" + sections.strip("\n") + "\n"
    lines: list[str] = []
    for line in page.split("\n")[:-1]:
        if line.strip():
            lines.append(line)
        elif lines and not lines[-1].startswith((".Pp", ".Sh", ".Ss", ".Bl", ".It")):
            lines.append(".Pp")
    if os_name:
        lines = [f'.Os "{os_name}"' if line == ".Os" else line for line in lines]
    return "\n".join(lines) + "\n"


def build(generate_manual: Path, tool: Path, section: int, output: Path, os_name: str | None = None) -> list[Path]:
    document = dump_help(tool)
    with tempfile.TemporaryDirectory(prefix="stol-man-") as scratch:
        scratch_path = Path(scratch)
        help_file = scratch_path / "help.json"
        help_file.write_text(json.dumps(document))
        # generate-manual runs the tool it is given with --experimental-dump-help: give it one
        # that prints the prepared help, under the tool's own name.
        wrapper = scratch_path / tool.name
        wrapper.write_text(f"#!/bin/sh\nexec cat '{help_file}'\n")
        wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
        pages = scratch_path / "pages"
        pages.mkdir()
        subprocess.run([str(generate_manual), str(wrapper), "--section", str(section), "-o", str(pages)], check=True)
        written = []
        for page in sorted(pages.iterdir()):
            extra = HERE / "sections" / (page.name + ".mdoc")
            sections = extra.read_text() if extra.exists() else None
            if sections is None:
                print(f"build_manual: warning: no {extra.relative_to(HERE.parent)}", file=sys.stderr)
            target = output / page.name
            target.write_text(finish(page.read_text(), sections, os_name))
            written.append(target)
        return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--generate-manual", required=True, type=Path)
    parser.add_argument("--section", required=True, type=int, choices=[1, 8])
    parser.add_argument("--output", required=True, type=Path)
    parser.add_argument("--os", dest="os_name", help='the footer\'s system name, e.g. "STOL 0.23.0"')
    parser.add_argument("tools", nargs="+", type=Path)
    args = parser.parse_args()
    args.output.mkdir(parents=True, exist_ok=True)
    for tool in args.tools:
        build(args.generate_manual, tool, args.section, args.output, args.os_name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
