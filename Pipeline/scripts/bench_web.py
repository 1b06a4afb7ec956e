#!/usr/bin/env python3
"""make bench-web: the web app's speed and memory on a database (the full reference in `make bench`).

Starts the daemons (systemd/stack.sh) and stol-web on its Unix socket, as a user's browser would
reach it through `ssh -L`, and measures, each beside its baseline in the same run:

- a suggestion's round trip (1–3 typed characters, `search` with `prefix`), over HTTP on the
  app's socket, against the same request sent straight to taxonomy.sock (the protocol alone);
- a species page's data (its `detail` and `is_favorite`, as the page asks them), the same way;
- the first page ready in a real browser (Debian's chromium, headless, on the app's `--port`:
  a browser cannot open a Unix socket): from the navigation's start to the moment the script
  has drawn the page (`data-ready-ms`), each load a new tab with the cache disabled;
- everything the browser loads for that first page (decoded bytes);
- the app's own memory (VmHWM of stol-web after all of it).

Targets (issue 36): suggestion p99 <= 15 ms, species data p99 <= 20 ms, first page <= 500 ms,
first page <= 200 KB, stol-web <= 40 MB. Exit 1 when one is missed.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPOSITORY = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPOSITORY, "clients", "python"))

from stol._proto import favorites_pb2, taxonomy_pb2  # noqa: E402


class UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP/1.1 on a Unix socket, kept alive as a browser keeps its connection."""

    def __init__(self, path: str):
        super().__init__("localhost")
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def summary(values):
    return {"p50": percentile(values, 0.5), "p99": percentile(values, 0.99), "max": max(values), "n": len(values)}


class Direct:
    """The protocol alone: framed requests on the daemon's socket (the baseline)."""

    def __init__(self, path: str):
        self.connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.connection.connect(path)
        self.next = 1

    def ask(self, request) -> bytes:
        request.id = self.next
        self.next += 1
        body = request.SerializeToString()
        self.connection.sendall(len(body).to_bytes(4, "big") + body)
        length = int.from_bytes(self.exactly(4), "big")
        return self.exactly(length)

    def exactly(self, count: int) -> bytes:
        data = b""
        while len(data) < count:
            chunk = self.connection.recv(count - len(data))
            if not chunk:
                raise RuntimeError("the daemon closed the connection")
            data += chunk
        return data


def post(connection: UnixHTTPConnection, path: str, body: dict) -> dict:
    connection.request("POST", path, body=json.dumps(body),
                       headers={"Content-Type": "application/json", "Origin": "http://localhost"})
    response = connection.getresponse()
    data = response.read()
    if response.status != 200:
        raise RuntimeError("%s answered %d: %s" % (path, response.status, data[:300]))
    return json.loads(data)


def timed(function, *arguments):
    start = time.perf_counter()
    function(*arguments)
    return (time.perf_counter() - start) * 1000


def prefixes(rng: random.Random, count: int) -> list[str]:
    """1–3 first characters of the names people type (the everyday queries), sampled."""
    words = []
    with open(os.path.join(REPOSITORY, "Tests", "relevance", "everyday-queries.tsv"), encoding="utf-8") as source:
        next(source)
        for line in source:
            query = line.split("\t")[0].strip().lower()
            if query and query[0].isalpha():
                words.append(query)
    return [rng.choice(words)[:rng.randint(1, 3)] for _ in range(count)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", required=True, help="the directory of the stol-* binaries")
    parser.add_argument("--database", required=True, help="the taxonomy database (out/reference.sqlite)")
    parser.add_argument("--requests", type=int, default=500, help="suggestions and species pages each (default 500)")
    parser.add_argument("--loads", type=int, default=10, help="first-page loads in the browser (default 10)")
    arguments = parser.parse_args()
    rng = random.Random(36)
    directory = tempfile.mkdtemp(prefix="stol-bench-web-")
    env = dict(os.environ, STOL_RUNTIME_DIR=directory + "/run", STOL_STATE_DIR=directory + "/state")
    env.pop("STOL_RELEASE", None)
    stack = os.path.join(REPOSITORY, "systemd", "stack.sh")
    web = None
    driver = None
    try:
        subprocess.run([stack, "start", arguments.bin, arguments.database], env=env, check=True,
                       stdout=subprocess.DEVNULL, timeout=300)
        socket_path = directory + "/web/web.sock"
        web = subprocess.Popen([os.path.join(arguments.bin, "stol-web"), "--socket", socket_path], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        for line in web.stdout:
            if "listening on" in line:
                break
        port_web = subprocess.Popen([os.path.join(arguments.bin, "stol-web"), "--port", "0"], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        base = ""
        for line in port_web.stdout:
            found = re.search(r"listening on (http://127\.0\.0\.1:\d+)/", line)
            if found:
                base = found.group(1)
                break

        http_connection = UnixHTTPConnection(socket_path)
        taxonomy = Direct(env["STOL_RUNTIME_DIR"] + "/taxonomy.sock")
        favorites = Direct(env["STOL_RUNTIME_DIR"] + "/favorites.sock")
        # Search answers once the names' indexes are built: wait for the first answer.
        started = time.perf_counter()
        post(http_connection, "/api/taxonomy", {"search": {"query": "lion", "prefix": True, "limit": 8}})
        ready = time.perf_counter() - started

        typed = prefixes(rng, arguments.requests)
        web_suggest, direct_suggest = [], []
        for text in typed:
            web_suggest.append(timed(post, http_connection, "/api/taxonomy",
                                     {"search": {"query": text, "prefix": True, "limit": 8, "language": "en"}}))
            request = taxonomy_pb2.TaxonomyRequest()
            request.search.query, request.search.prefix, request.search.limit, request.search.language = text, True, 8, "en"
            direct_suggest.append(timed(taxonomy.ask, request))

        with sqlite3.connect("file:%s?mode=ro" % arguments.database, uri=True) as database:
            species = [row[0] for row in database.execute(
                "SELECT id FROM taxa WHERE rank = 'species' ORDER BY random() LIMIT ?", (arguments.requests,))]

        def web_page(taxon):
            post(http_connection, "/api/taxonomy", {"detail": {"taxonId": str(taxon), "language": "en"}})
            post(http_connection, "/api/favorites", {"isFavorite": {"taxonId": str(taxon)}})

        def direct_page(taxon):
            request = taxonomy_pb2.TaxonomyRequest()
            request.detail.taxon_id, request.detail.language = taxon, "en"
            taxonomy.ask(request)
            question = favorites_pb2.FavoritesRequest()
            question.is_favorite.taxon_id = taxon
            favorites.ask(question)

        web_species, direct_species = [], []
        for taxon in species:
            web_species.append(timed(web_page, taxon))
            direct_species.append(timed(direct_page, taxon))

        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        options = webdriver.ChromeOptions()
        options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
        for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options)
        loads, sizes = [], []
        for index in range(arguments.loads):
            taxon = species[index % len(species)]
            driver.switch_to.new_window("tab")
            # A cold load each time: nothing from the browser's cache.
            driver.execute_cdp_cmd("Network.enable", {})
            driver.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": True})
            driver.get("%s/taxon/%d" % (base, taxon))
            ready_ms = None
            deadline = time.time() + 30
            while ready_ms is None and time.time() < deadline:
                ready_ms = driver.execute_script("return document.documentElement.dataset.readyMs || null")
            if ready_ms is None:
                raise RuntimeError("the page was not drawn within 30 s")
            loads.append(float(ready_ms))
            sizes.append(driver.execute_script(
                "return performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))"
                ".reduce((sum, entry) => sum + (entry.decodedBodySize || 0), 0)"))

        rss = 0
        for process in (web, port_web):  # the API's instance and the browser's
            with open("/proc/%d/status" % process.pid) as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        rss = max(rss, int(line.split()[1]) / 1024)
        rows = [
            ("suggestion (1-3 chars), ms", summary(web_suggest), summary(direct_suggest), 15),
            ("species page data, ms", summary(web_species), summary(direct_species), 20),
        ]
        print("web app bench: %s, stol-web on its Unix socket; baseline: the same requests straight to the daemons"
              % arguments.database)
        print("search ready after %.2f s" % ready)
        print("%-30s %8s %8s %8s %10s %8s %8s" % ("", "p50", "p99", "max", "direct p99", "ratio", "target"))
        missed = []
        for name, measured, baseline, target in rows:
            print("%-30s %8.2f %8.2f %8.2f %10.2f %7.2fx %8s" % (name, measured["p50"], measured["p99"], measured["max"],
                                                                baseline["p99"], measured["p99"] / baseline["p99"], "<=%d" % target))
            if measured["p99"] > target:
                missed.append(name)
        first = summary(loads)
        print("%-30s %8.0f %8s %8.0f %10s %8s %8s" % ("first page in chromium, ms", first["p50"], "", first["max"], "", "", "<=500"))
        print("%-30s %8.1f %8s %8s %10s %8s %8s" % ("first page's bytes, KB", max(sizes) / 1000, "", "", "", "", "<=200"))
        print("%-30s %8.1f %8s %8s %10s %8s %8s" % ("stol-web VmHWM, MB", rss, "", "", "", "", "<=40"))
        if first["max"] > 500:
            missed.append("first page")
        if max(sizes) > 200_000:
            missed.append("first page's bytes")
        if rss > 40:
            missed.append("memory")
        if missed:
            print("FAILED: " + ", ".join(missed))
            return 1
        return 0
    finally:
        if driver:
            driver.quit()
        for process in (web, locals().get("port_web")):
            if process:
                process.terminate()
                process.wait(timeout=30)
        subprocess.run([stack, "stop"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
