#!/usr/bin/env python3
"""Checks the module graph of Package.swift against the code (issue 15).

1. Every target declares what it imports: each `import X` in a target's Swift files
   names a dependency listed for that target (system modules aside); in the package
   and in its development tools' (Tools/Package.swift, whose dependencies on the
   package are its library products, named after their modules).
2. Every dependency a target declares is imported by at least one of its files, so
   the graph in Package.swift is the graph of the code. The package's executables are
   its seven products: the tools are in Tools/.
3. The thin client stays thin: `stol-client`'s transitive dependencies include no
   server-side module (NIOPosix, NIOExtras, ServiceLifecycle, libsystemd, STOLServer).
   The link graph follows the privilege boundary (issue 22): `stol-importd`'s closure
   holds no parser of untrusted bytes (STOLContainer, STOLVerifier, zlib, the SQLite
   descriptor VFS), `stol-verifyd`'s no coordinator and no server stack (STOLImport,
   STOLServer, NIOPosix, NIOExtras, ServiceLifecycle, libsystemd).
   `check_binaries.py` checks the same in the linked release binaries.
4. The README's module table ("Architecture") is the graph: each module row marks
   (●) exactly the executables whose dependency closure holds it, and its "depends
   on" column names every dependency the target declares.

Usage: check_module_graph.py [package-dir]   (needs `swift` on PATH; the tools: package-dir/Tools)
Exit 0 when all hold, 1 with one line per violation otherwise.
"""
import json
import os
import re
import subprocess
import sys

# Modules of the toolchain and the C library: never declared in Package.swift.
SYSTEM_MODULES = {"Foundation", "FoundationEssentials", "Glibc", "Dispatch", "Synchronization",
                  "XCTest", "_Concurrency", "Musl", "Darwin"}
# Modules that must never be in the client's dependency closure.
CLIENT_FORBIDDEN = {"NIOPosix", "NIOExtras", "ServiceLifecycle", "CSystemd", "STOLServer", "GRDB", "GRDBSQLite"}
# The privilege boundary (issue 22): what each side of the import must not link.
FORBIDDEN = {
    "stol-client": (CLIENT_FORBIDDEN, "a server-side module"),
    "stol-importd": ({"STOLContainer", "STOLVerifier", "CZlib", "CSTOLSQLite"},
                     "a parser of untrusted bytes (the coordinator never parses the file)"),
    "stol-verifyd": ({"STOLImport", "STOLServer", "NIOPosix", "NIOExtras", "ServiceLifecycle", "CSystemd"},
                     "the coordinator or the server stack (the sandboxed verifier serves with STOLDaemon alone)"),
}
IMPORT = re.compile(r"^\s*(?:@testable\s+|@_implementationOnly\s+)?(?:public\s+|internal\s+|package\s+)?import\s+(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?([A-Za-z_][A-Za-z0-9_]*)", re.M)


def dependency_names(target):
    names = []
    for dep in target.get("dependencies", []):
        for kind in ("byName", "target", "product"):
            if kind in dep:
                names.append(dep[kind][0])
    return names


def target_path(package_dir, target):
    if target.get("path"):
        return os.path.join(package_dir, target["path"])
    base = "Tests" if target["type"] == "test" else "Sources"
    return os.path.join(package_dir, base, target["name"])


def imports_of(directory):
    found = {}
    for root, _, files in os.walk(directory):
        for name in files:
            if not name.endswith(".swift"):
                continue
            path = os.path.join(root, name)
            with open(path, encoding="utf-8") as handle:
                # Multi-line string literals (Python scripts a test runs) are not imports.
                code = re.sub(r'"""(.|\n)*?"""', '""', handle.read())
                for module in IMPORT.findall(code):
                    found.setdefault(module, path)
    return found


EXECUTABLES = ["stol-taxonomyd", "stol-favoritesd", "stol-importd", "stol-verifyd", "stol-client", "stol-pipeline", "stol-web"]


def closure_of(targets, name):
    seen, pending = set(), [name]
    while pending:
        current = pending.pop()
        for dep in dependency_names(targets.get(current, {})):
            if dep not in seen:
                seen.add(dep)
                pending.append(dep)
    return seen


def readme_problems(package_dir, targets):
    """Rows of the README table: | `Module` | holds | depends on | six process columns |."""
    problems, rows = [], 0
    closures = {e: closure_of(targets, e) for e in EXECUTABLES}
    with open(os.path.join(package_dir, "README.md"), encoding="utf-8") as handle:
        for line in handle:
            match = re.match(r"^\| `(STOL\w+)` \|", line)
            if not match or match.group(1) not in targets:
                continue
            module = match.group(1)
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 4:
                continue  # another table naming a target (the test suites)
            if len(cells) != 3 + len(EXECUTABLES):
                problems.append(f"README: the row of {module} has {len(cells)} columns, expected {3 + len(EXECUTABLES)}")
                continue
            rows += 1
            marked = {e for e, cell in zip(EXECUTABLES, cells[3:]) if cell == "●"}
            linked = {e for e in EXECUTABLES if module in closures[e]}
            for e in sorted(marked - linked):
                problems.append(f"README: marks {e} as using {module}, but it does not depend on it")
            for e in sorted(linked - marked):
                problems.append(f"README: {e} depends on {module}, but the table does not mark it")
            named = set(re.findall(r"[A-Za-z][A-Za-z0-9]+", cells[2]))
            for dep in dependency_names(targets[module]):
                if dep not in named:
                    problems.append(f"README: {module} depends on {dep}, which its row does not name")
            for word in named:
                if (word.startswith("STOL") or word.startswith("C")) and word in targets and word not in dependency_names(targets[module]):
                    problems.append(f"README: {module}'s row names {word}, which it does not depend on")
    if rows == 0:
        problems.append("README: no module table found (section Architecture)")
    return problems


def dump_targets(package_dir):
    dump = json.loads(subprocess.run(["swift", "package", "--package-path", package_dir, "dump-package"],
                                     check=True, capture_output=True, text=True).stdout)
    return {t["name"]: t for t in dump["targets"]}


def import_problems(package_dir, targets, shown_from):
    """Rules 1 and 2 for one package's targets."""
    problems = []
    for name, target in sorted(targets.items()):
        if target["type"] in ("system", "binary"):
            continue
        declared = set(dependency_names(target))  # every product here is named as its module
        imported = imports_of(target_path(package_dir, target))
        for module, path in sorted(imported.items()):
            if module in SYSTEM_MODULES or module == name:
                continue
            if module not in declared:
                problems.append(f"{name}: imports {module} ({os.path.relpath(path, shown_from)}) without declaring it")
        for module in sorted(declared - set(imported)):
            problems.append(f"{name}: declares {module} but no file imports it")
    return problems


def main():
    package_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    tools_dir = os.path.join(package_dir, "Tools")
    targets = dump_targets(package_dir)
    tools = dump_targets(tools_dir)
    problems = import_problems(package_dir, targets, package_dir) + import_problems(tools_dir, tools, package_dir)
    for name, target in sorted(targets.items()):
        if target["type"] == "executable" and name not in EXECUTABLES:
            problems.append(f"{name}: an executable of Package.swift that is not a product (a tool goes to Tools/Package.swift)")

    # Products of packages pull their own modules: NIOCore never pulls NIOPosix, and
    # the forbidden names are checked as they are spelt in this package.
    for executable, (forbidden, what) in FORBIDDEN.items():
        for module in sorted(closure_of(targets, executable) & forbidden):
            problems.append(f"{executable}: depends (transitively) on {module}, {what}")
    closure = closure_of(targets, "stol-client")
    problems += readme_problems(package_dir, targets)

    for line in problems:
        print(line)
    if problems:
        return 1
    print(f"module graph ok: {len(targets)} targets and {len(tools)} tools; every import declared and used; "
          f"the README's table agrees; "
          f"stol-client's closure: {', '.join(sorted(closure))}; "
          f"stol-importd links none of {', '.join(sorted(FORBIDDEN['stol-importd'][0]))}; "
          f"stol-verifyd none of {', '.join(sorted(FORBIDDEN['stol-verifyd'][0]))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
