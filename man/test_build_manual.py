"""The man pages and the help they come from (`make test` runs this with the built tools).

The pure parts of build_manual.py are tested on their own; with STOL_BIN_DIR (the
built executables: make test's debug build) and STOL_MAN_DIR (what `make man` wrote)
set, the pages and every command's help are checked too: no character lost, the
sections people look for, the real exit codes, daemon synopses without "subcommand",
no mdoc warning, and no help paragraph broken by hand in mid-sentence
(swift-argument-parser wraps each hard line again at the terminal's width, so such a
paragraph came out ragged). Without the two variables those classes skip, saying so
(make test always sets them, and fails on any skip it does not expect).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import unittest
from pathlib import Path

import build_manual

REPO = Path(__file__).resolve().parent.parent
BIN = Path(os.environ["STOL_BIN_DIR"]) if os.environ.get("STOL_BIN_DIR") else None
MAN = Path(os.environ["STOL_MAN_DIR"]) if os.environ.get("STOL_MAN_DIR") else None
COMMANDS = {"stol-client": 1, "stol-pipeline": 1}
DAEMONS = {"stol-taxonomyd": 8, "stol-favoritesd": 8, "stol-importd": 8, "stol-verifyd": 8}


class PureParts(unittest.TestCase):
    def test_non_ascii_goes_through_generate_manual_as_tokens_and_comes_back_as_escapes(self):
        tokens = build_manual.asciify({"a": ["1…200", "león"], "n": 3})
        self.assertTrue(all(ord(c) < 128 for c in json.dumps(tokens, ensure_ascii=False)))
        page = build_manual.finish(f".Dd x\n.Os\n{tokens['a'][0]} {tokens['a'][1]}\n", None, "STOL 9")
        self.assertIn("1\\[u2026]200 le\\[u00F3]n", page)
        self.assertIn('.Os "STOL 9"', page)

    def test_a_lone_implicit_help_subcommand_is_dropped_but_real_subcommands_stay(self):
        daemon = {"commandName": "d", "subcommands": [{"commandName": "help"}]}
        build_manual.drop_lone_help(daemon)
        self.assertNotIn("subcommands", daemon)
        client = {"commandName": "c", "subcommands": [{"commandName": "fav"}, {"commandName": "help"}]}
        build_manual.drop_lone_help(client)
        self.assertEqual([s["commandName"] for s in client["subcommands"]], ["fav", "help"])

    def test_the_generic_exit_status_is_replaced_and_blank_lines_become_paragraphs(self):
        page = '.Sh DESCRIPTION\nOne.\n\nTwo.\n.Sh "EXIT STATUS"\n.Ex -std\n'
        finished = build_manual.finish(page, ".Sh EXIT STATUS\n.Bl -tag\n.It 0\nok\n.El\n")
        self.assertNotIn(".Ex -std", finished)
        self.assertIn("One.\n.Pp\nTwo.\n.Sh EXIT STATUS", finished)
        self.assertNotIn("\n\n", finished)


def help_texts(command: dict, path: list[str]):
    yield " ".join(path), command.get("discussion") or ""
    for argument in command.get("arguments") or []:
        yield " ".join(path) + " " + (argument.get("valueName") or ""), argument.get("discussion") or ""
    for sub in command.get("subcommands") or []:
        yield from help_texts(sub, path + [sub["commandName"]])


def broken_sentences(text: str) -> list[str]:
    """Pairs of unindented lines where the second continues the first's sentence."""
    lines = text.split("\n")
    found = []
    for a, b in zip(lines, lines[1:]):
        if not a.strip() or not b.strip() or a[0].isspace() or b[0].isspace():
            continue
        if b.startswith(("Example", "Exit", "Environment", "Output")):
            continue
        if re.match(r"[a-z0-9(\"'`,;:\u2026]", b) or not re.search(r"[.:!?)]$", a.rstrip()):
            found.append(f"{a[-50:]!r} / {b[:50]!r}")
    return found


@unittest.skipUnless(BIN, "STOL_BIN_DIR not set (make test sets it to the debug build)")
class Help(unittest.TestCase):
    def test_no_help_paragraph_is_broken_by_hand_in_mid_sentence(self):
        problems = []
        for tool in list(COMMANDS) + list(DAEMONS):
            dump = json.loads(subprocess.run([str(BIN / tool), "--experimental-dump-help"], check=True,
                                             capture_output=True, text=True).stdout)
            for where, text in help_texts(dump["command"], [tool]):
                problems += [f"{where}: {p}" for p in broken_sentences(text)]
        self.assertEqual(problems, [], "end the line with a backslash continuation instead")


@unittest.skipUnless(MAN, "STOL_MAN_DIR not set (make test sets it to what make man wrote)")
class Pages(unittest.TestCase):
    def page(self, tool: str) -> str:
        section = {**COMMANDS, **DAEMONS}[tool]
        return (MAN / f"{tool}.{section}").read_text()

    def test_every_page_has_the_sections_people_look_for(self):
        for tool in {**COMMANDS, **DAEMONS}:
            sections = re.findall(r"^\.Sh (.+)$", self.page(tool), re.M)
            sections = [s.strip('"') for s in sections]
            for wanted in ["NAME", "SYNOPSIS", "DESCRIPTION", "ENVIRONMENT", "FILES", "EXIT STATUS", "SEE ALSO"]:
                self.assertIn(wanted, sections, tool)
            self.assertNotIn(".Ex -std", self.page(tool), f"{tool}: the generic exit status is still there")

    def test_non_ascii_characters_of_the_help_are_kept(self):
        self.assertIn("zh, \\[u2026])", self.page("stol-client"), "the '…' of --lang's help was stripped")

    def test_daemon_synopses_name_no_subcommand(self):
        for tool in DAEMONS:
            synopsis = self.page(tool).split(".Sh SYNOPSIS")[1].split(".Sh")[0]
            self.assertNotIn("subcommand", synopsis, tool)

    def test_the_clients_exit_status_lists_every_code_it_has(self):
        source = (REPO / "Sources/STOLClientKit/ClientError.swift").read_text()
        enum = source.split("enum ExitCode")[1].split("}")[0]
        codes = {int(code) for code in re.findall(r"case \w+ = (\d+)", enum)}
        section = self.page("stol-client").split('.Sh EXIT STATUS')[1].split(".Sh")[0]
        listed = {int(code) for code in re.findall(r"^\.It (\d+)$", section, re.M)}
        self.assertEqual(listed, codes)

    def test_each_daemons_exit_status_lists_the_codes_its_help_names(self):
        for tool in DAEMONS:
            page = self.page(tool)
            description = page.split(".Sh DESCRIPTION")[1].split(".Sh")[0]
            named = {int(code) for code in re.findall(r"(?:^|; )(\d+) ", description.split("Exit status:")[1].strip())}
            section = page.split(".Sh EXIT STATUS")[1].split(".Sh")[0]
            listed = {int(code) for code in re.findall(r"^\.It (\d+)$", section, re.M)}
            self.assertEqual(listed, named, tool)

    def test_groff_renders_every_page_without_a_warning(self):
        self.assertIsNotNone(shutil.which("groff"), "groff is not installed: apt-get install groff-base (make deps)")
        for page in sorted(MAN.iterdir()):
            result = subprocess.run(["groff", "-mandoc", "-Tutf8", "-ww", "-z", str(page)], capture_output=True, text=True,
                                    env={**os.environ, "LC_ALL": "C.UTF-8"})
            self.assertEqual(result.stderr, "", page.name)


if __name__ == "__main__":
    unittest.main()
