#!/usr/bin/env python3
"""Every module a target imports is one it declares in Package.swift, and it declares no other.

SwiftPM's --explicit-target-dependency-import-check catches an import of a target that is not
reachable at all, but lets one through that is reached through another target's dependencies,
and does not look at other packages' products. This check reads `swift package dump-package`
and each target's sources, and names every import that is not a declared dependency.
"""
import json
import os
import re
import subprocess
import sys

# Modules of the toolchain and the system, which no Package.swift declares.
SYSTEM = {
    "Foundation", "FoundationEssentials", "FoundationNetworking", "FoundationXML", "Glibc", "Musl", "Dispatch", "Synchronization",
    "Testing", "XCTest", "Observation", "_Concurrency", "Darwin", "SwiftShims", "os", "PackageDescription",
}
IMPORT = re.compile(r"^(?:@[\w()]+\s+)*(?:public |package |internal |private |fileprivate )?import (?:struct |enum |class |func |protocol |typealias |var |let )?(\w+)", re.M)

package = json.loads(subprocess.run(["swift", "package", "dump-package"], check=True, capture_output=True, text=True).stdout)
problems = []
for target in package["targets"]:
    if target["type"] in ("system", "binary", "plugin"):
        continue
    name = target["name"]
    path = target.get("path") or os.path.join("Tests" if target["type"] == "test" else "Sources", name)
    declared = set()
    for dependency in target["dependencies"]:
        for kind in ("byName", "target", "product"):
            if kind in dependency:
                # A target's module name has `_` where its name has `-` (chappie-full).
                declared.add(dependency[kind][0].replace("-", "_") if kind != "product" else dependency[kind][0])
    imported = {}
    for root, _, files in os.walk(path):
        for file in files:
            if file.endswith(".swift"):
                source = os.path.join(root, file)
                for module in IMPORT.findall(open(source, encoding="utf-8").read()):
                    imported.setdefault(module, source)
    for module, source in sorted(imported.items()):
        if module not in declared and module not in SYSTEM and module != name.replace("-", "_"):
            problems.append(f"{name}: imports {module} ({source}) without declaring it in Package.swift")
    # A C target is used from its C sources, which this check does not read.
    has_c = any(f.endswith((".c", ".h")) for _, _, files in os.walk(path) for f in files)
    for module in sorted(declared - set(imported)):
        if not has_c:
            problems.append(f"{name}: declares {module} in Package.swift and never imports it")

# The targets that read the store and ask the daemon without the daemon's stack (the SDK's store,
# `ChappieDaemonClient`): none of them may reach NIO, NIOSSL or PostgreSQL's client, however
# indirectly.
LEAN = ["ChappieDaemonClient", "ChappieStore", "ChappieVault", "ChappieCore"]
targets = {t["name"]: t for t in package["targets"]}


def closure(name, seen):
    for dependency in targets[name]["dependencies"]:
        for kind in ("byName", "target", "product"):
            if kind in dependency:
                module = dependency[kind][0]
                if module not in seen:
                    seen.add(module)
                    if module in targets:
                        closure(module, seen)
    return seen


# The front binary (`chappie`) and what it does itself: no Foundation at all, whose start-up
# (and ICU, linked statically) is what the front binary exists to leave out (docs/architecture.md).
FRONT = ("ChappieFront", "ChappieBuild", "ChappieText", "ChappieSystem", "ChappieStoreFormat", "CSQLite", "CSodium", "CProcess")
for name in ["chappie", *FRONT[:5]]:
    for module in closure(name, set()):
        if module not in FRONT:
            problems.append(f"{name}: the front binary must link only {', '.join(FRONT)}, but reaches {module}")
    path = targets[name].get("path") or os.path.join("Sources", name)
    for root, _, files in os.walk(path):
        for file in files:
            if file.endswith(".swift"):
                source = os.path.join(root, file)
                for module in IMPORT.findall(open(source, encoding="utf-8").read()):
                    if module.startswith("Foundation"):
                        problems.append(f"{name}: {source} imports {module}; the front binary must start without Foundation")

for name in LEAN:
    heavy = sorted(m for m in closure(name, set()) if m.startswith("NIO") or m in ("PostgresNIO", "AsyncHTTPClient", "Hummingbird"))
    if heavy:
        problems.append(f"{name}: must not depend on NIO or PostgresNIO, but reaches {', '.join(heavy)}")

# docs/sdk.md, "What `import Chappie` pulls in", lists every module and product the SDK links.
def sdk_closure():
    modules, products = set(), set()
    def walk(name):
        for dependency in targets[name]["dependencies"]:
            if "product" in dependency:
                products.add(dependency["product"][0])
            for kind in ("byName", "target"):
                if kind in dependency and dependency[kind][0] not in modules:
                    modules.add(dependency[kind][0])
                    if dependency[kind][0] in targets:
                        walk(dependency[kind][0])
    walk("Chappie")
    return modules, products

with open("docs/sdk.md") as handle:
    sdk = handle.read()
section = sdk.split("## What `import Chappie` pulls in", 1)[-1].split("\n## ", 1)[0]
listed = set(re.findall(r"`(\w+)`", section.split("Not pulled in")[0]))
modules, products = sdk_closure()
for missing in sorted((modules | products) - listed):
    problems.append(f"docs/sdk.md: `import Chappie` pulls in {missing}, which its list does not name")
for extra in sorted(listed - modules - products - {"Chappie", "dlopen", "import"}):
    problems.append(f"docs/sdk.md: its list of what `import Chappie` pulls in names {extra}, which it does not link")

for problem in problems:
    print(problem)
if problems:
    sys.exit(1)
print(f"every import of {sum(1 for t in package['targets'] if t['type'] not in ('system', 'binary', 'plugin'))} targets is declared")
