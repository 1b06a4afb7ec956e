"""The web app in a real browser: Debian's chromium, headless, driven by chromedriver through
python3-selenium, against the real daemons (``systemd/stack.sh`` on the tests' database) and the
real ``stol-web``. Each screen's main path as a person takes it (typing, picking, the keyboard),
what the page shows compared with ``stol-client``, the app's door (another uid, a foreign Host or
Origin), no request leaving the machine (the browser's own network log), axe-core's serious and
critical accessibility findings on every screen (PyPI ``axe-selenium-python``), and a stopped
daemon told in words and recovered from.

Screenshots of each screen go to ``$STOL_WEB_SCREENSHOTS`` when it is set (docs/web.md shows them).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPOSITORY = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPOSITORY, "clients", "python", "tests"))

import _stack  # noqa: E402
from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.select import Select  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

STACK = None
WEB = None
BASE = ""
DRIVER = None
SCREENS = {
    "tree": "/", "search": "/search?q=lion", "taxon": "/taxon/9689", "compare": "/compare/9689/9694",
    "favourites": "/favourites", "about": "/about", "cladogram": "/cladogram?taxa=9689,9694,9612",
    "history": "/history/9689", "relatives": "/relatives/9689", "changes": "/changes",
}


def setUpModule():
    global STACK, WEB, BASE, DRIVER
    STACK = _stack.start()
    web = os.path.join(STACK.bin, "stol-web")
    WEB = subprocess.Popen([web, "--port", "0"], env=STACK.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True)
    # It prints where it listens once the socket is bound: read until that line.
    for line in WEB.stdout:
        found = re.search(r"listening on (http://127\.0\.0\.1:\d+)/", line)
        if found:
            BASE = found.group(1)
            break
    if not BASE:
        raise RuntimeError("stol-web did not say where it listens")
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1200,900", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    DRIVER = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options)
    DRIVER.set_page_load_timeout(30)


def tearDownModule():
    if DRIVER:
        DRIVER.quit()
    if WEB:
        WEB.terminate()
        WEB.wait(timeout=30)
        WEB.stdout.close()
    if STACK:
        STACK.close()


def wait(condition, seconds: float = 20):
    # A page the script draws again replaces its elements: one read between the two is stale.
    return WebDriverWait(DRIVER, seconds, ignored_exceptions=[StaleElementReferenceException]).until(condition)


def open_page(path: str):
    DRIVER.get(BASE + path)
    wait(lambda d: not d.find_elements(By.CSS_SELECTOR, "main .loading"))


def main_text() -> str:
    return DRIVER.find_element(By.ID, "main").text


def screenshot(name: str):
    directory = os.environ.get("STOL_WEB_SCREENSHOTS")
    if directory:
        os.makedirs(directory, exist_ok=True)
        DRIVER.save_screenshot(os.path.join(directory, name + ".png"))


def curl(*arguments: str, uid: int | None = None) -> tuple[int, str]:
    command = ["curl", "-q", "-s", "-o", "-", "-w", "\n%{http_code}", "--max-time", "10", *arguments]
    if uid is not None:
        command = ["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups", *command]
    output = subprocess.run(command, stdout=subprocess.PIPE, universal_newlines=True, timeout=30).stdout
    body, _, status = output.rpartition("\n")
    return int(status or 0), body


def fav_ids() -> list[int]:
    """The favourites ``stol-client fav list`` lists (as the same user as the app)."""
    return [entry["taxon_id"] for entry in STACK.cli_json("fav", "list")["entries"]]


class Screens(unittest.TestCase):
    def setUp(self):
        DRIVER.get(BASE + "/assets/icon.svg")
        DRIVER.execute_script("sessionStorage.clear()")

    def test_typing_lio_suggests_the_lion_and_picking_it_by_keyboard_opens_its_page(self):
        open_page("/search")
        field = DRIVER.find_element(By.ID, "search-field")
        field.send_keys("lio")
        options = wait(lambda d: [o for o in d.find_elements(By.CSS_SELECTOR, "#search-field-list [role=option]")
                                  if "Panthera leo" in o.text] and d.find_elements(By.CSS_SELECTOR, "#search-field-list [role=option]"))
        index = next(i for i, o in enumerate(options) if "Panthera leo" in o.text)
        for _ in range(index + 1):
            field.send_keys(Keys.ARROW_DOWN)
        self.assertEqual(field.get_attribute("aria-activedescendant"), options[index].get_attribute("id"))
        field.send_keys(Keys.ENTER)
        wait(EC.url_to_be(BASE + "/taxon/9689"))
        wait(EC.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Panthera leo"))
        self.assertIn("lion", main_text())

    def test_search_results_highlight_the_match_and_the_empty_states_differ(self):
        open_page("/search")
        self.assertIn("No query yet", main_text())
        open_page("/search?q=tiger")
        marks = [m.text.lower() for m in DRIVER.find_elements(By.CSS_SELECTOR, ".results mark")]
        self.assertIn("tiger", marks)
        self.assertIn("Panthera tigris", main_text())
        screenshot("search")
        open_page("/search?q=qqxxzzqq")
        self.assertIn("No results for", main_text())
        open_page("/search?q=Panthera&rank=genus")
        self.assertEqual(DRIVER.find_element(By.CSS_SELECTOR, ".chips button[aria-pressed=true]").text, "genus")
        self.assertTrue(all("genus" in row.text for row in DRIVER.find_elements(By.CSS_SELECTOR, ".results li")))

    def test_the_dogs_page_opens_from_its_id_with_its_path_and_names(self):
        open_page("/taxon/9615")
        self.assertEqual(DRIVER.find_element(By.TAG_NAME, "h1").text, "Canis lupus familiaris")
        crumbs = [a.text for a in DRIVER.find_elements(By.CSS_SELECTOR, ".crumbs a")]
        expected = [t.get("scientific_name") for t in STACK.cli_json("detail", "9615")["lineage"]]
        self.assertEqual(crumbs, expected)
        self.assertIn("Canis lupus", crumbs)
        self.assertIn("dog", main_text())

    def test_the_heart_toggles_the_favourite_and_stol_client_sees_it(self):
        open_page("/taxon/9689")
        heart = wait(lambda d: d.find_element(By.CSS_SELECTOR, "button.heart"))
        before = heart.get_attribute("aria-pressed")
        heart.send_keys(Keys.ENTER)
        wanted = "false" if before == "true" else "true"
        wait(lambda d: d.find_element(By.CSS_SELECTOR, "button.heart").get_attribute("aria-pressed") == wanted)
        listed = fav_ids()
        self.assertEqual(9689 in listed, wanted == "true", listed)
        screenshot("taxon")
        DRIVER.find_element(By.CSS_SELECTOR, "button.heart").send_keys(Keys.SPACE)
        wait(lambda d: d.find_element(By.CSS_SELECTOR, "button.heart").get_attribute("aria-pressed") == before)
        self.assertEqual(9689 in fav_ids(), before == "true")

    def test_comparing_lion_and_tiger_finds_panthera_and_draws_both_paths(self):
        open_page("/compare")
        self.assertIn("Pick two taxa", main_text())
        for field, typed, wanted, path in (("compare-a", "Panthera le", "Panthera leo", "/compare/9689"),
                                           ("compare-b", "tiger", "Panthera tigris", "/compare/9689/9694")):
            box = DRIVER.find_element(By.ID, field)
            box.clear()
            box.send_keys(typed)
            option = wait(lambda d: next((o for o in d.find_elements(By.CSS_SELECTOR, "#%s-list [role=option]" % field)
                                          if wanted in o.text), None))
            index = DRIVER.find_elements(By.CSS_SELECTOR, "#%s-list [role=option]" % field).index(option)
            for _ in range(index + 1):
                box.send_keys(Keys.ARROW_DOWN)
            box.send_keys(Keys.ENTER)
            # Picking goes to the pair's address and the page is drawn again, with new fields:
            # the next field is looked up only once this one has been replaced.
            wait(EC.url_to_be(BASE + path))
            wait(EC.staleness_of(box))
            wait(lambda d, f=field: d.find_element(By.ID, f).get_attribute("value") == wanted)
        wait(EC.url_to_be(BASE + "/compare/9689/9694"))
        wait(EC.text_to_be_present_in_element((By.ID, "main"), "Common ancestor"))
        text = main_text()
        expected = STACK.cli_json("compare", "9689", "9694")
        self.assertIn(expected["lca"]["scientific_name"], text)
        self.assertEqual(expected["lca"]["scientific_name"], "Panthera")
        self.assertIn(expected["shared_clade"], text)
        picture = DRIVER.find_element(By.CSS_SELECTOR, "svg.drawing")
        self.assertIn("meet at Panthera", picture.get_attribute("aria-label"))
        wait(EC.text_to_be_present_in_element((By.ID, "main"), "distance"))
        screenshot("compare")

    def test_browsing_from_the_root_reaches_e_coli_k12_in_ncbis_own_ranks(self):
        open_page("/")
        Select(DRIVER.find_element(By.ID, "ranks")).select_by_value("all")
        roots = wait(lambda d: [li.find_element(By.CSS_SELECTOR, ".row a[href^='/taxon/']").text
                                for li in d.find_elements(By.CSS_SELECTOR, ".tree > li")])
        # The path stol-client gives, from the first of its taxa the tree's roots list.
        lineage = [t.get("scientific_name") for t in STACK.cli_json("detail", "83333", "--ranks", "all")["lineage"]]
        start = next(i for i, name in enumerate(lineage) if name in roots)
        names = lineage[start:] + ["Escherichia coli K-12"]
        for name in names:
            row = wait(lambda d, n=name: next((li for li in d.find_elements(By.CSS_SELECTOR, ".tree li")
                                               if li.find_element(By.CSS_SELECTOR, ".row a[href^='/taxon/']").text == n), None))
            if name == names[-1]:
                break
            toggle = row.find_element(By.CSS_SELECTOR, ":scope > .row > button.toggle")
            if toggle.get_attribute("aria-expanded") != "true":
                toggle.send_keys(Keys.ENTER)
        self.assertIn("Escherichia coli", names)
        screenshot("tree")

    def test_a_shareable_link_opens_the_same_view(self):
        open_page("/compare/9689/9694")
        first = main_text()
        open_page("/taxon/Panthera%20leo")
        wait(EC.url_to_be(BASE + "/taxon/9689"))
        open_page("/compare/9689/9694")
        self.assertEqual(main_text(), first)
        self.assertIn("Panthera", first)

    def test_favourites_sort_remove_and_export_names_without_ids_or_times(self):
        for taxon in ("9689", "9694", "9612"):
            STACK.cli("fav", "add", taxon)
        open_page("/favourites")
        self.assertIn("3 favourites", main_text())
        link = DRIVER.find_element(By.CSS_SELECTOR, "a[download]")
        status, exported = curl(link.get_attribute("href"))
        self.assertEqual(status, 200)
        self.assertEqual(exported, STACK.cli("fav", "export").stdout)
        self.assertIn("Panthera leo", exported)
        self.assertNotRegex(exported, r"\b9689\b|\d{4}-\d\d-\d\d")
        Select(DRIVER.find_element(By.ID, "fav-sort")).select_by_value("scientific")
        wait(lambda d: d.find_element(By.ID, "fav-sort").get_attribute("value") == "scientific"
             and not d.find_elements(By.CSS_SELECTOR, "main .loading"))
        shown = [a.text for a in DRIVER.find_elements(By.CSS_SELECTOR, ".results .row a[href^='/taxon/']")]
        listed = [e["scientific_name"] for e in STACK.cli_json("fav", "list", "--sort", "scientific")["entries"]]
        self.assertEqual(shown, listed)
        screenshot("favourites")
        for box in DRIVER.find_elements(By.CSS_SELECTOR, ".results input[type=checkbox]")[:2]:
            box.send_keys(Keys.SPACE)
        DRIVER.find_element(By.XPATH, "//button[text()='Remove selected']").send_keys(Keys.ENTER)
        wait(EC.text_to_be_present_in_element((By.ID, "main"), "1 favourites"))
        self.assertEqual(len(fav_ids()), 1)
        STACK.cli("fav", "clear", "--yes")
        open_page("/favourites")
        self.assertIn("Tap ♥ on any species", main_text())

    def test_the_about_page_names_every_release_and_the_one_that_answers(self):
        open_page("/about")
        text = main_text()
        self.assertIn("We collect no data", text)
        self.assertIn("bundled", text)
        self.assertIn("species saved", text)
        screenshot("about")

    def test_a_stopped_daemon_is_told_in_words_and_the_app_works_again_when_it_returns(self):
        STACK.stop()
        try:
            open_page("/taxon/9689")
            text = main_text()
            self.assertIn("not running", text)
            self.assertNotIn("Error(", text)
        finally:
            STACK.start()
        DRIVER.find_element(By.XPATH, "//button[text()='Try again']").send_keys(Keys.ENTER)
        wait(EC.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Panthera leo"))

    def test_an_unknown_id_and_an_ambiguous_name_are_told_in_words(self):
        open_page("/taxon/999999999")
        self.assertTrue(DRIVER.find_elements(By.CSS_SELECTOR, "[role=alert]"))
        open_page("/taxon/Panthera%20nosuchname")
        self.assertIn("No taxon is called", main_text())


class Cladogram(unittest.TestCase):
    def test_the_cladogram_joins_the_taxa_and_its_newick_is_stol_clients(self):
        open_page("/cladogram?taxa=9689,9694,9612")
        drawing = wait(lambda d: d.find_element(By.CSS_SELECTOR, "svg.drawing"))
        labels = [t.text for t in drawing.find_elements(By.TAG_NAME, "text")]
        self.assertTrue(any(label.startswith("Panthera (") for label in labels), labels)
        self.assertTrue(any(label.startswith("Carnivora (") for label in labels), labels)
        status, newick = curl(DRIVER.find_element(By.CSS_SELECTOR, "a[download='tree.nwk']").get_attribute("href"))
        self.assertEqual(status, 200)
        self.assertEqual(newick, STACK.cli("tree", "--taxa", "--format", "newick", stdin="9689\n9694\n9612\n").stdout)
        screenshot("cladogram")


class Tunnel(unittest.TestCase):
    """The default socket reached as from a laptop: `ssh -L 8080:/run/user/UID/stol/web.sock host` forwards
    a TCP port to the Unix socket; socat does the same here (`TCP-LISTEN` to `UNIX-CONNECT`), and the
    browser opens http://localhost:PORT/ (a Host of a port the app never bound)."""

    def test_the_unix_socket_through_a_forwarded_port_serves_the_pages(self):
        directory = os.path.join(STACK.directory, "tunnel")
        path = os.path.join(directory, "web.sock")
        app = subprocess.Popen([os.path.join(STACK.bin, "stol-web"), "--socket", path], env=STACK.env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        forward = None
        try:
            for line in app.stdout:
                if "listening on unix:" + path in line:
                    break
            self.assertEqual(oct(os.stat(path).st_mode & 0o777), "0o600")
            self.assertEqual(oct(os.stat(directory).st_mode & 0o777), "0o700")
            # socat -d -d says where it listens (the kernel's free port) before it accepts.
            forward = subprocess.Popen(["socat", "-d", "-d", "TCP-LISTEN:0,bind=127.0.0.1,reuseaddr,fork", "UNIX-CONNECT:" + path],
                                       stderr=subprocess.PIPE, universal_newlines=True)
            port = None
            for line in forward.stderr:
                found = re.search(r"listening on AF=2 127\.0\.0\.1:(\d+)", line)
                if found:
                    port = found.group(1)
                    break
            self.assertIsNotNone(port, "socat did not listen")
            DRIVER.get("http://localhost:%s/taxon/9689" % port)
            wait(EC.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Panthera leo"))
        finally:
            if forward:
                forward.terminate()
                forward.wait(timeout=10)
                forward.stderr.close()
            app.terminate()
            app.wait(timeout=30)
            app.stdout.close()
        self.assertFalse(os.path.exists(path), "the socket outlived the app")


class Door(unittest.TestCase):
    def test_another_user_is_refused_and_the_owner_served(self):
        status, _ = curl(BASE + "/taxon/9689")
        self.assertEqual(status, 200)
        status, body = curl(BASE + "/taxon/9689", uid=60015)
        self.assertEqual(status, 403)
        self.assertNotIn("<script", body)

    def test_a_foreign_host_and_a_foreign_origin_are_refused(self):
        self.assertEqual(curl("-H", "Host: evil.example", BASE + "/")[0], 421)
        status, _ = curl("-X", "POST", "-H", "Origin: http://evil.example", "-H", "Content-Type: application/json",
                         "--data-binary", '{"clear":{}}', BASE + "/api/favorites")
        self.assertEqual(status, 403)

    def test_every_screen_loads_nothing_from_another_origin_and_keeps_the_policy(self):
        DRIVER.get_log("performance")
        for path in SCREENS.values():
            open_page(path)
        requests = []
        for entry in DRIVER.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message.get("method") == "Network.requestWillBeSent":
                requests.append(message["params"]["request"]["url"])
        self.assertTrue(requests)
        foreign = [url for url in requests if not (url.startswith(BASE + "/") or url.startswith("blob:" + BASE)
                                                   or url.startswith("data:"))]
        self.assertEqual(foreign, [])
        violations = [e["message"] for e in DRIVER.get_log("browser") if "Content Security Policy" in e["message"]]
        self.assertEqual(violations, [])

    def test_no_serious_or_critical_accessibility_finding_on_any_screen(self):
        from axe_selenium_python import Axe
        for name, path in SCREENS.items():
            open_page(path)
            axe = Axe(DRIVER)
            axe.inject()
            results = axe.run()
            bad = [(v["id"], v["impact"], v["help"]) for v in results["violations"] if v["impact"] in ("serious", "critical")]
            self.assertEqual(bad, [], name)

    def test_the_main_actions_are_reachable_by_keyboard(self):
        open_page("/taxon/9689")
        reached = set()
        body = DRIVER.find_element(By.TAG_NAME, "body")
        body.send_keys(Keys.TAB)
        for _ in range(60):
            active = DRIVER.switch_to.active_element
            reached.add((active.tag_name, active.get_attribute("aria-label") or active.text.strip()))
            active.send_keys(Keys.TAB)
        labels = {label for _, label in reached}
        for wanted in ("Skip to content", "Search", "Compare with…", "Closest relatives", "Favourite Panthera leo"):
            self.assertTrue(any(wanted in label for label in labels), (wanted, sorted(labels)))


if __name__ == "__main__":
    unittest.main()
