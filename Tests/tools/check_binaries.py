#!/usr/bin/env python3
"""Checks the linked binaries against the privilege boundary (issue 22).

check_module_graph.py checks the graph Package.swift declares; this checks what
was linked, in the release binaries `make build` makes (and `make install`
installs, stripped):

1. stol-verifyd, the sandboxed parser of untrusted bytes, holds no symbol of
   swift-nio's server (NIOPosix, NIOExtras) or of swift-service-lifecycle, no
   libsystemd function (sd_notify, sd_listen_fds ...) and no libsystemd in its
   NEEDED entries, and nothing of the coordinator (ImportCoordinator,
   ReferenceDatabaseStore, the STOLImport module).
2. stol-importd, the trusted coordinator, holds no zlib inflate function and no
   libz in NEEDED, nothing of the container (StolFile, GzipInflater, the
   STOLContainer module), nothing of the verifier (DatabaseChecks,
   VerifierService, the STOLVerifier module) and not the SQLite descriptor VFS
   of CSTOLSQLite.
3. The serving daemons (taxonomy, favourites, import) name libmimalloc in
   NEEDED before libc, so that mimalloc, not glibc, serves their malloc
   (MemoryPolicy.swift says why).
4. No installed binary (the four daemons, stol-client, stol-pipeline) holds the
   name of a test hook's variable (STOL_TEST_PAUSE_AT, STOL_TEST_PAUSE_FILE,
   STOL_TEST_SANDBOX_PROBE, STOL_TEST_PROBE_PIDS, STOL_TEST_HANG_ON_SIGUSR2):
   the hooks are compiled only with STOL_TEST_HOOKS.

Symbols are read with `nm` (the symbol table and the dynamic one, defined and
undefined). A Swift rule matches a symbol's mangled name, where a module or type
is `<length><name>` (`8NIOPosix`), or its demangled one (`swift-demangle`, from
the toolchain: `NIOPosix.`), since mangling may abbreviate a name it has already
spelt. NEEDED is read with `readelf -d`, and the variables' names from the file's
bytes (what `strings` would show).

--self-test proves that each rule can fail: it runs every rule against a binary
that must break it (stol-taxonomyd has NIOPosix, stol-importd the coordinator and
libsystemd, stol-verifyd the container and the verifier; a build with the test
hooks, --hooks-bin (make test gives its debug build), the hooks' variables) and
fails unless every rule reports its violation.

Usage: check_binaries.py --bin DIR               check the release binaries in DIR
       check_binaries.py --self-test --bin DIR [--hooks-bin DIR]
Exit 0 when all hold, 1 with one line per violation otherwise, 2 when a binary
or a tool is missing.
"""
import argparse
import bisect
import os
import re
import subprocess
import sys

DAEMONS = ["stol-taxonomyd", "stol-favoritesd", "stol-importd", "stol-verifyd"]
COMMANDS = ["stol-client", "stol-pipeline"]
INSTALLED = DAEMONS + COMMANDS
HOOK_VARIABLES = ["STOL_TEST_PAUSE_AT", "STOL_TEST_PAUSE_FILE", "STOL_TEST_SANDBOX_PROBE",
                  "STOL_TEST_PROBE_PIDS", "STOL_TEST_HANG_ON_SIGUSR2"]


def swift_name(identifier):
    """A Swift identifier as mangled names spell it (`8NIOPosix`), not inside a longer one."""
    return re.compile(r"(?<![0-9])%d%s" % (len(identifier), re.escape(identifier)))


class Rule:
    """One thing `binary` must not hold; `violator` is a binary that must hold it (--self-test).
    A Swift symbol rule has `demangled` too: the pattern of the demangled name."""

    def __init__(self, binary, what, kind, pattern, violator, demangled=None, needle=None, demangled_needle=None):
        self.binary, self.what, self.kind, self.pattern, self.violator = binary, what, kind, pattern, violator
        self.demangled = demangled
        # What every match of a symbol rule contains, literally (Lines.matching).
        self.needle, self.demangled_needle = needle, demangled_needle


def symbol_rule(binary, what, identifier, violator):
    """A Swift type (`ImportCoordinator`): the name, mangled or demangled, not a longer one."""
    return Rule(binary, what, "symbol", swift_name(identifier), violator,
                demangled=re.compile(r"(?<![A-Za-z0-9_])%s(?![A-Za-z0-9_])" % re.escape(identifier)),
                needle=f"{len(identifier)}{identifier}", demangled_needle=identifier)


def module_rule(binary, what, module, violator):
    """Anything of a Swift module: `8NIOPosix` mangled, `NIOPosix.` demangled."""
    return Rule(binary, what, "symbol", swift_name(module), violator,
                demangled=re.compile(r"(?<![A-Za-z0-9_])%s\." % re.escape(module)),
                needle=f"{len(module)}{module}", demangled_needle=module + ".")


def c_rule(binary, what, regex, needle, violator):
    """A C symbol matching `regex`, each of which contains the literal `needle`."""
    return Rule(binary, what, "symbol", re.compile(regex), violator, needle=needle)


def needed_rule(binary, what, regex, violator):
    return Rule(binary, what, "needed", re.compile(regex), violator)


def needed_first_rule(binary, what, first, then, violator):
    """NEEDED names a library matching `first` before one matching `then`: what the
    dynamic linker then binds a symbol both define (malloc) to. Violated by its absence."""
    return Rule(binary, what, "needed-first", (re.compile(first), re.compile(then)), violator)


RULES = [
    # The sandboxed verifier: no server stack, no systemd, no coordinator.
    module_rule("stol-verifyd", "NIOPosix (swift-nio's server)", "NIOPosix", "stol-taxonomyd"),
    module_rule("stol-verifyd", "NIOExtras", "NIOExtras", "stol-taxonomyd"),
    module_rule("stol-verifyd", "ServiceLifecycle", "ServiceLifecycle", "stol-importd"),
    c_rule("stol-verifyd", "libsystemd (sd_notify, sd_listen_fds, ...)", r"^sd_[a-z_]+(@.*)?$", "sd_", "stol-importd"),
    needed_rule("stol-verifyd", "libsystemd in NEEDED", r"^libsystemd\.so", "stol-importd"),
    symbol_rule("stol-verifyd", "ImportCoordinator", "ImportCoordinator", "stol-importd"),
    symbol_rule("stol-verifyd", "ReferenceDatabaseStore", "ReferenceDatabaseStore", "stol-importd"),
    module_rule("stol-verifyd", "module STOLImport (the coordinator)", "STOLImport", "stol-importd"),
    # The trusted coordinator: no parser of untrusted bytes.
    c_rule("stol-importd", "zlib inflate", r"^inflate[A-Za-z0-9_]*(@.*)?$", "inflate", "stol-verifyd"),
    needed_rule("stol-importd", "libz in NEEDED", r"^libz\.so", "stol-verifyd"),
    symbol_rule("stol-importd", "StolFile (verify, write)", "StolFile", "stol-verifyd"),
    symbol_rule("stol-importd", "GzipInflater", "GzipInflater", "stol-verifyd"),
    module_rule("stol-importd", "module STOLContainer (the container)", "STOLContainer", "stol-verifyd"),
    symbol_rule("stol-importd", "DatabaseChecks", "DatabaseChecks", "stol-verifyd"),
    symbol_rule("stol-importd", "VerifierService", "VerifierService", "stol-verifyd"),
    module_rule("stol-importd", "module STOLVerifier (the verifier)", "STOLVerifier", "stol-verifyd"),
    c_rule("stol-importd", "CSTOLSQLite's descriptor VFS", r"^stol_sqlite_register_descriptor_vfs$",
           "stol_sqlite_register_descriptor_vfs", "stol-verifyd"),
]
# The serving daemons' malloc is mimalloc's (MemoryPolicy): stol-client, which links no server, has glibc's.
for daemon in ["stol-taxonomyd", "stol-favoritesd", "stol-importd"]:
    RULES.append(needed_first_rule(daemon, "glibc's malloc (libmimalloc is not in NEEDED before libc)",
                                   r"^libmimalloc\.so", r"^libc\.so", "stol-client"))
# No installed binary names a test hook's variable; the violators are in --hooks-bin.
HOOK_VIOLATORS = {
    "STOL_TEST_PAUSE_AT": "stol-importd",
    "STOL_TEST_PAUSE_FILE": "stol-verifyd",
    "STOL_TEST_SANDBOX_PROBE": "stol-verifyd",
    "STOL_TEST_PROBE_PIDS": "stol-favoritesd",
    "STOL_TEST_HANG_ON_SIGUSR2": "stol-taxonomyd",
}
for binary in INSTALLED:
    for variable in HOOK_VARIABLES:
        RULES.append(Rule(binary, "test hook variable " + variable, "string", variable.encode(),
                          HOOK_VIOLATORS[variable]))


class Binary:
    """What one file holds: its symbols (both tables), NEEDED and bytes, read once."""

    def __init__(self, path):
        self.path = path
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{path}: no such binary (build it first: make build)")
        self._symbols = self._demangled = self._needed = self._bytes = None
        self._symbol_lines = self._demangled_lines = None

    def symbols(self):
        if self._symbols is None:
            names = set()
            for flags in (["--no-demangle"], ["--no-demangle", "--dynamic"]):
                out = subprocess.run(["nm", *flags, self.path], capture_output=True, text=True).stdout
                for line in out.splitlines():
                    fields = line.split()
                    if fields:
                        names.add(fields[-1])
            if not names:
                raise RuntimeError(f"{self.path}: nm finds no symbols (stripped?): check the build's binaries, not installed ones")
            self._symbols = names
        return self._symbols

    def demangled(self):
        """The Swift symbols demangled, each with its mangled name."""
        if self._demangled is None:
            swift = sorted(s for s in self.symbols() if s.startswith("$s") or s.startswith("_$s"))
            out = subprocess.run([demangler()], input="\n".join(swift) + "\n", capture_output=True, text=True,
                                 check=True).stdout.split("\n")
            if len(out) < len(swift):
                raise RuntimeError(f"{self.path}: swift-demangle answered {len(out)} lines for {len(swift)} symbols")
            self._demangled = list(zip(swift, out))
        return self._demangled

    def symbol_lines(self):
        """The symbols as one text, a name per line, for a rule's pattern to scan at C speed."""
        if self._symbol_lines is None:
            self._symbol_lines = Lines(sorted(self.symbols()))
        return self._symbol_lines

    def demangled_lines(self):
        if self._demangled_lines is None:
            self._demangled_lines = Lines([text for _, text in self.demangled()])
        return self._demangled_lines

    def needed(self):
        if self._needed is None:
            out = subprocess.run(["readelf", "-d", self.path], capture_output=True, text=True, check=True).stdout
            self._needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)
        return self._needed

    def content(self):
        if self._bytes is None:
            with open(self.path, "rb") as handle:
                self._bytes = handle.read()
        return self._bytes


class Lines:
    """Names joined into one text, where a rule's literal part (its needle) is found by str.find:
    only the lines holding it are matched against the rule's pattern (a pattern tried on each of
    some 200,000 names per binary, for 50 rules, was most of the check's 20 s)."""

    def __init__(self, lines):
        self.lines = lines
        self.text = "\n".join(lines)
        self.starts, at = [], 0
        for line in lines:
            self.starts.append(at)
            at += len(line) + 1

    def matching(self, pattern, needle):
        """The indexes of the lines that hold `needle` and match `pattern`."""
        found, at = [], self.text.find(needle)
        while at != -1:
            index = bisect.bisect_right(self.starts, at) - 1
            if pattern.search(self.lines[index]):
                found.append(index)
            at = self.text.find(needle, self.starts[index] + len(self.lines[index]) + 1)
        return found


def demangler():
    """swift-demangle of the toolchain on PATH (the Makefile puts /opt/swift/usr/bin there)."""
    for directory in os.environ.get("PATH", "").split(os.pathsep) + ["/opt/swift/usr/bin"]:
        candidate = os.path.join(directory, "swift-demangle")
        if os.access(candidate, os.X_OK):
            return candidate
    raise FileNotFoundError("swift-demangle: not found (put the Swift toolchain on PATH)")


def findings(rule, binary):
    """What of `rule` the binary holds: a few examples, empty when it holds none."""
    if rule.kind == "symbol":
        symbols = binary.symbol_lines()
        found = {symbols.lines[i] for i in symbols.matching(rule.pattern, rule.needle)}
        if rule.demangled is not None:
            demangled = binary.demangled()
            found |= {f"{demangled[i][0]} ({demangled[i][1].strip()[:120]})" if demangled[i][0] not in found
                      else demangled[i][0] for i in binary.demangled_lines().matching(rule.demangled, rule.demangled_needle)}
        found = sorted(found)
    elif rule.kind == "needed":
        found = [n for n in binary.needed() if rule.pattern.search(n)]
    elif rule.kind == "needed-first":
        first, then = rule.pattern
        needed = binary.needed()
        at = lambda pattern: next((i for i, n in enumerate(needed) if pattern.search(n)), len(needed))
        found = [] if at(first) < at(then) else [f"NEEDED {', '.join(needed)}"]
    else:
        found = [rule.pattern.decode()] if rule.pattern in binary.content() else []
    return found


def describe(found):
    """At most two examples, each cut to 100 characters, and how many more."""
    shown = ", ".join(f[:100] + ("…" if len(f) > 100 else "") for f in found[:2])
    return shown + (f" (and {len(found) - 2} more)" if len(found) > 2 else "")


def check(bin_dir):
    binaries = {name: Binary(os.path.join(bin_dir, name)) for name in INSTALLED}
    problems, checked = [], {}
    for rule in RULES:
        found = findings(rule, binaries[rule.binary])
        checked.setdefault(rule.binary, []).append(rule.what)
        if found:
            problems.append(f"VIOLATION {rule.binary}: holds {rule.what}: {describe(found)}")
    for name in INSTALLED:
        binary = binaries[name]
        hooks = sum(1 for what in checked[name] if what.startswith("test hook"))
        others = [what for what in checked[name] if not what.startswith("test hook")]
        print(f"{name}: {len(binary.symbols())} symbols, NEEDED {', '.join(binary.needed())}; "
              f"checked: none of the {hooks} test hook variables" + (f"; no {'; no '.join(others)}" if others else ""))
    return problems


def self_test(bin_dir, hooks_dir):
    """Every rule against a binary that must break it; returns the rules that did not fire."""
    silent, fired, skipped = [], 0, 0
    cache = {}

    def load(directory, name):
        key = (directory, name)
        if key not in cache:
            cache[key] = Binary(os.path.join(directory, name))
        return cache[key]

    seen_strings = set()
    for rule in RULES:
        if rule.kind == "string":
            if rule.pattern in seen_strings:
                continue  # one proof per variable: the rule is the same for every binary
            seen_strings.add(rule.pattern)
            if not hooks_dir:
                skipped += 1
                continue
            violator = load(hooks_dir, rule.violator)
            where = f"{rule.violator} of {hooks_dir}"
        else:
            violator = load(bin_dir, rule.violator)
            where = rule.violator
        found = findings(rule, violator)
        claim = f"no installed binary holds {rule.what}" if rule.kind == "string" else f"{rule.binary} holds no {rule.what}"
        if found:
            fired += 1
            print(f"self-test: the rule '{claim}' fails on {where} as it must: {describe(found)}")
        else:
            silent.append(f"self-test: the rule '{claim}' does not fail on {where}, "
                          f"which holds it: the rule cannot see what it checks")
    if skipped:
        print(f"self-test: {skipped} test hook variables not tried (no --hooks-bin: a build with STOL_TEST_HOOKS)")
    print(f"self-test: {fired} rules failed on their violators")
    return silent


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", required=True, help="the release binaries (swift build -c release --show-bin-path)")
    parser.add_argument("--self-test", action="store_true", help="prove that every rule can fail")
    parser.add_argument("--hooks-bin", help="with --self-test: binaries built with STOL_TEST_HOOKS")
    args = parser.parse_args()
    try:
        problems = self_test(args.bin, args.hooks_bin) if args.self_test else check(args.bin)
    except (FileNotFoundError, RuntimeError, subprocess.CalledProcessError) as error:
        print(f"check_binaries: {error}", file=sys.stderr)
        return 2
    for line in problems:
        print(line)
    if problems:
        return 1
    if not args.self_test:
        print(f"binaries ok: {len(RULES)} rules over {', '.join(INSTALLED)} in {args.bin}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
