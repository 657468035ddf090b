"""The page at /ui in a real headless Chromium (Debian's `chromium` and `chromium-driver`, driven
by selenium), on the session's real server with the fixture model: typed text translated exactly,
the detected language shown, alternatives as the API gives them, the server's error messages,
the whole page by keyboard alone, a .docx dropped, translated and downloaded with its bold runs,
a page asking for an API key when keys are on, and a translation memory chosen (#51): people's
texts with a badge saying so, for texts and files.

Skipped, saying why, where Chromium or its driver is not installed (`.ci/run` installs them:
`apt-get install chromium chromium-driver`). `UI_SCREENSHOT=docs/ui.png` saves the README's
screenshot of the page with a translation on it.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from harness import documents
from harness.corpus import corpus_sentences
from harness.servers import ROOT

pytestmark = [
    pytest.mark.server,
    pytest.mark.skipif(
        not (shutil.which("chromium") and shutil.which("chromedriver")),
        reason="Chromium or chromedriver is not installed (apt-get install chromium chromium-driver)",
    ),
]

WAIT_S = 60


def sentences(source: str, target: str) -> list[tuple[str, str]]:
    return [(text, translation) for src, tgt, text, translation in corpus_sentences() if (src, tgt) == (source, target)]


@pytest.fixture(scope="module")
def downloads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("downloads")


@pytest.fixture(scope="module")
def browser(downloads: Path) -> Iterator[object]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or ""
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1200,900"):
        options.add_argument(argument)
    options.add_experimental_option(
        "prefs", {"download.default_directory": str(downloads), "download.prompt_for_download": False}
    )
    # The browser's console: a script error or a Content-Security-Policy refusal shows there; its
    # network log: every request a page makes.
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver") or ""))
    driver.implicitly_wait(0)
    yield driver
    driver.quit()


def wait(browser, condition, what: str):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, WAIT_S, poll_frequency=0.05).until(lambda _: condition(), message=what)


def element(browser, element_id: str):
    from selenium.webdriver.common.by import By

    return browser.find_element(By.ID, element_id)


def open_page(browser, server) -> None:
    browser.get(f"{server.url}/ui")
    browser.execute_script("localStorage.clear(); sessionStorage.clear();")
    browser.refresh()
    wait(
        browser,
        lambda: browser.find_element("css selector", "body").get_attribute("data-ready") == "true",
        "page ready",
    )


def choose(browser, element_id: str, code: str) -> None:
    from selenium.webdriver.support.ui import Select

    Select(element(browser, element_id)).select_by_value(code)


def translate_on_page(browser, text: str) -> str:
    """Types `text`, presses Translate, and gives the translation once it is shown."""
    source = element(browser, "source-text")
    source.clear()
    source.send_keys(text)
    browser.execute_script("document.getElementById('target-text').textContent = '';")
    element(browser, "translate").click()
    return wait(browser, lambda: element(browser, "target-text").text, "a translation on the page")


# WCAG's contrast ratio of each visible text's colour on the first opaque background behind it.
CONTRAST_SCRIPT = """
const luminance = (rgb) => {
  const [r, g, b] = rgb.map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
};
const channels = (colour) => colour.match(/[\\d.]+/g).map(Number);
const background = (node) => {
  for (; node; node = node.parentElement) {
    const c = channels(getComputedStyle(node).backgroundColor);
    if (c.length === 3 || c[3] > 0) return c.slice(0, 3);
  }
  return [255, 255, 255];
};
const low = [];
for (const node of document.querySelectorAll("body *")) {
  const own = [...node.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
  if (!own || !node.offsetParent) continue;
  const [fg, bg] = [luminance(channels(getComputedStyle(node).color).slice(0, 3)), luminance(background(node))];
  const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
  if (ratio < 4.5) low.push(`${node.tagName}#${node.id}: ${ratio.toFixed(2)}`);
}
return low;
"""


def console_errors(browser) -> list[str]:
    return [entry["message"] for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]


def screenshot_if_asked(browser) -> None:
    target = os.environ.get("UI_SCREENSHOT")
    if target:
        path = Path(target) if Path(target).is_absolute() else ROOT / target
        path.write_bytes(browser.get_screenshot_as_png())


def test_typed_text_is_translated_exactly_with_named_languages(browser, server):
    open_page(browser, server)
    labels = {
        o.get_attribute("value"): o.text for o in element(browser, "target-lang").find_elements("tag name", "option")
    }
    assert labels["ja"] == "Japanese (ja)" and labels["de"] == "German (de)"
    languages = requests.get(f"{server.url}/languages", timeout=30).json()["languages"]
    assert sorted(labels) == sorted(languages)
    for source_lang, target_lang in (("en", "ja"), ("de", "fr")):
        choose(browser, "source-lang", source_lang)
        choose(browser, "target-lang", target_lang)
        text, expected = sentences(source_lang, target_lang)[1]
        assert translate_on_page(browser, text) == expected
        assert element(browser, "detected").text == ""  # an explicit source: nothing detected
    assert element(browser, "key-row").is_displayed() is False  # keys are off on this server
    assert browser.execute_script(CONTRAST_SCRIPT) == []  # every text on show, 4.5:1 or more
    assert console_errors(browser) == []


def test_auto_detect_shows_the_detected_language(browser, server):
    open_page(browser, server)
    assert element(browser, "source-lang").get_attribute("value") == "auto"
    choose(browser, "target-lang", "en")
    (fr_text, fr_expected), (ja_text, ja_expected) = sentences("fr", "en")[2], sentences("ja", "en")[0]
    assert translate_on_page(browser, fr_text) == fr_expected
    assert element(browser, "detected").text.startswith("Detected language: French (")
    if os.environ.get("UI_SCREENSHOT"):  # the README's: a detection and alternatives on show
        choose(browser, "alternatives", "2")
        translate_on_page(browser, fr_text)
        wait(browser, lambda: element(browser, "alternatives-section").is_displayed(), "alternatives")
        screenshot_if_asked(browser)
        choose(browser, "alternatives", "0")
    assert translate_on_page(browser, ja_text) == ja_expected
    assert element(browser, "detected").text.startswith("Detected language: Japanese (")
    # Swapping after a detection takes the detected language as the new target.
    element(browser, "swap").click()
    assert element(browser, "source-lang").get_attribute("value") == "en"
    assert element(browser, "target-lang").get_attribute("value") == "ja"
    assert element(browser, "source-text").get_attribute("value") == ja_expected


def test_alternatives_are_the_apis(browser, server):
    open_page(browser, server)
    choose(browser, "source-lang", "en")
    choose(browser, "target-lang", "de")
    choose(browser, "alternatives", "2")
    text, expected = sentences("en", "de")[0]
    payload = {"fromLang": "en", "toLang": "de", "records": [{"id": "1", "text": text}], "alternatives": 2}
    answer = requests.post(f"{server.url}/translation", json={"payload": payload}, timeout=60).json()["result"][0]
    assert translate_on_page(browser, text) == expected == answer["text"]
    shown = [item.text for item in element(browser, "alternatives-list").find_elements("tag name", "li")]
    assert shown and shown == answer["alternatives"]  # the fixture's beam search gives some
    assert element(browser, "alternatives-section").is_displayed()


def test_the_servers_error_message_is_shown(browser, server):
    open_page(browser, server)
    # A code the server does not serve, as a stale page could send: its 400 names the field.
    browser.execute_script("document.getElementById('target-lang').append(new Option('Klingon', 'tlh'))")
    choose(browser, "source-lang", "en")
    choose(browser, "target-lang", "tlh")
    element(browser, "source-text").send_keys(sentences("en", "de")[0][0])
    element(browser, "translate").click()
    error = wait(browser, lambda: element(browser, "text-error").text, "an error message")
    assert "toLang" in error and "tlh" in error
    # Nothing typed: said on the page, nothing sent.
    element(browser, "source-text").clear()
    element(browser, "translate").click()
    assert wait(browser, lambda: element(browser, "text-error").text, "a message") == "Type a text to translate."


def test_keyboard_alone(browser, server):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    open_page(browser, server)
    browser.execute_script("document.activeElement.blur()")  # from the top, as a page opens

    def press(*keys: str) -> str:
        ActionChains(browser).send_keys(*keys).perform()
        return browser.switch_to.active_element.get_attribute("id") or browser.switch_to.active_element.tag_name

    def chord(modifier: str, key: str) -> str:
        ActionChains(browser).key_down(modifier).send_keys(key).key_up(modifier).perform()
        return browser.switch_to.active_element.get_attribute("id")

    # The tab order follows the page: languages, text, Translate, then the file.
    assert press(Keys.TAB) == "a"  # the link to the API documentation
    assert press(Keys.TAB) == "source-lang"
    press("German")  # a focused select picks by typing, as a user does
    assert press(Keys.TAB) == "swap"
    assert press(Keys.TAB) == "target-lang"
    press("French")
    assert press(Keys.TAB) == "memory"
    assert press(Keys.TAB) == "source-text"
    text, expected = sentences("de", "fr")[0]
    press(text)
    assert press(Keys.TAB) == "translate"
    press(Keys.ENTER)
    assert wait(browser, lambda: element(browser, "target-text").text, "a translation") == expected
    # Ctrl+Enter in the text translates too.
    (other, other_expected) = sentences("de", "fr")[3]
    assert chord(Keys.SHIFT, Keys.TAB) == "source-text"
    chord(Keys.CONTROL, "a")
    press(Keys.DELETE)
    press(other)
    chord(Keys.CONTROL, Keys.ENTER)
    assert wait(browser, lambda: element(browser, "target-text").text == other_expected, "the second translation")
    assert press(Keys.TAB) == "translate"
    assert press(Keys.TAB) == "alternatives"
    assert press(Keys.TAB) == "document-file"


def test_a_chosen_memory_answers_what_it_holds_and_says_so(browser, server, tmp_path):
    (held, model_held), (other, other_expected) = sentences("en", "de")[:2]
    people = "Von einer Person übersetzt, nicht vom Modell."
    segments = [(held, people), ("Page 1 of 10", "Seite 1 von 10")]
    body = {
        "name": "page memory",
        "sourceLang": "en",
        "segments": [{"source": s, "target": t, "targetLang": "de"} for s, t in segments],
    }
    created = requests.post(f"{server.url}/memories", json=body, timeout=30)
    assert created.status_code == 201, created.text
    memory_id = created.json()["memoryId"]

    console_errors(browser)  # what the module's earlier tests left in the log (their refusals)
    open_page(browser, server)
    listed = {o.get_attribute("value"): o.text for o in element(browser, "memory").find_elements("tag name", "option")}
    assert listed[""] == "none" and listed[memory_id] == "page memory (English)"
    assert element(browser, "memory").get_attribute("value") == ""  # none unless chosen
    choose(browser, "source-lang", "en")
    choose(browser, "target-lang", "de")
    choose(browser, "memory", memory_id)

    def origin() -> tuple[str, bool]:
        return element(browser, "origin").text, element(browser, "origin").is_displayed()

    assert translate_on_page(browser, held) == people
    assert origin() == ("from memory (exact)", True)
    assert element(browser, "origin").get_attribute("data-kind") == "memory"
    assert translate_on_page(browser, other) == other_expected
    assert origin() == ("machine translation", True)
    assert translate_on_page(browser, "Page 3 of 12") == "Seite 3 von 12"
    assert origin() == ("from memory (substituted)", True)
    assert browser.execute_script(CONTRAST_SCRIPT) == []  # the badges too

    # A file with the memory chosen: the job names it, and the page says how many parts it gave.
    path = tmp_path / "notes.txt"
    path.write_text(f"{held}\n{other}\n", encoding="utf-8")
    element(browser, "document-file").send_keys(str(path))
    wait(browser, lambda: element(browser, "document-download").is_displayed(), "the download link")
    status = element(browser, "document-status").text
    assert status == "notes.txt is translated. 1 of its parts came from the memory.", status

    # None chosen again: the model's text, and no badge.
    choose(browser, "memory", "")
    assert translate_on_page(browser, held) == model_held
    assert origin() == ("", False)
    assert console_errors(browser) == []


def finished_downloads(folder):
    """The files Chromium has finished writing in folder. While it writes, a download is a
    hidden temporary (.org.chromium.Chromium.XXXXXX), then NAME.crdownload, then renamed: a CI run
    caught the first of these and took it for the download."""
    return {p for p in folder.iterdir() if not p.name.startswith(".") and not p.name.endswith(".crdownload")}


def test_a_dropped_docx_is_translated_and_downloaded(browser, server, downloads, tmp_path):
    (a, ta), (b, tb), (c, tc) = sentences("en", "de")[:3]
    path = tmp_path / "letter.docx"
    path.write_bytes(documents.docx([[(a + " ", False), (b, True)], [(c, False)]]))

    open_page(browser, server)
    choose(browser, "source-lang", "en")
    choose(browser, "target-lang", "de")
    assert ".docx" in element(browser, "document-formats").text
    element(browser, "document-file").send_keys(str(path))  # as a file chosen or dropped
    link = wait(
        browser,
        lambda: element(browser, "document-download").is_displayed() and element(browser, "document-download"),
        "the download link",
    )
    progress = element(browser, "document-progress")
    assert progress.get_attribute("value") == progress.get_attribute("max")
    assert element(browser, "document-status").text == "letter.docx is translated."
    assert element(browser, "document-error").text == ""
    assert browser.switch_to.active_element.get_attribute("id") == "document-download"
    before = finished_downloads(downloads)
    link.click()
    deadline = time.monotonic() + WAIT_S
    while not (fresh := finished_downloads(downloads) - before):
        assert time.monotonic() < deadline, "no file downloaded"
        time.sleep(0.1)
    (downloaded,) = fresh
    assert downloaded.suffix == ".docx"
    assert documents.docx_runs(downloaded.read_bytes()) == [[(ta + " ", False), (tb, True)], [(tc, False)]]


def test_a_bad_file_gets_the_servers_reason(browser, server, tmp_path):
    path = tmp_path / "broken.docx"
    path.write_bytes(b"not a zip")
    open_page(browser, server)
    element(browser, "document-file").send_keys(str(path))
    assert "zip" in wait(browser, lambda: element(browser, "document-error").text, "the error")
    assert element(browser, "document-download").is_displayed() is False


def test_with_keys_on_the_page_asks_for_one_and_sends_it(browser, fixture_model, tmp_path, monkeypatch):
    from harness.servers import register, start_server
    from tests.e2e.helpers import config_with

    monkeypatch.setenv("TEST_UI_API_KEYS", "ui-key-3c9e51a7f04d2b86")
    config = config_with(
        tmp_path, lambda s: s["Translation"]["translation"].update(auth={"keys_env": "TEST_UI_API_KEYS"})
    )
    home = tmp_path / "home"
    home.mkdir()
    keyed = start_server(home, register(fixture_model, home), tmp_path / "server.log", config=config)
    try:
        open_page(browser, keyed)
        assert element(browser, "key-row").is_displayed()
        choose(browser, "source-lang", "en")
        choose(browser, "target-lang", "ja")
        text, expected = sentences("en", "ja")[0]
        element(browser, "source-text").send_keys(text)
        element(browser, "translate").click()
        # Without a key: the server's 401 message, and the key field focused for it.
        assert "Authorization: Bearer" in wait(browser, lambda: element(browser, "text-error").text, "the 401")
        assert browser.switch_to.active_element.get_attribute("id") == "api-key"
        browser.switch_to.active_element.send_keys("not-the-key")
        element(browser, "translate").click()
        wait(browser, lambda: element(browser, "text-error").text == "the API key is not accepted", "the 403")
        key = element(browser, "api-key")
        key.clear()
        key.send_keys("ui-key-3c9e51a7f04d2b86")
        element(browser, "translate").click()
        assert wait(browser, lambda: element(browser, "target-text").text, "a translation") == expected
        assert element(browser, "text-error").is_displayed() is False
    finally:
        keyed.stop()


def test_an_error_clears_what_it_makes_stale(browser, server):
    open_page(browser, server)
    choose(browser, "source-lang", "auto")
    choose(browser, "target-lang", "en")
    choose(browser, "alternatives", "2")
    text, expected = sentences("fr", "en")[2]
    assert translate_on_page(browser, text) == expected
    wait(browser, lambda: element(browser, "alternatives-section").is_displayed(), "alternatives")
    assert element(browser, "detected").text.startswith("Detected language: French (")
    # A page whose limit is stale (the server's was lowered since it loaded) sends 20,001
    # characters: the server's 413 is shown, and nothing of the previous answer stays beside it.
    browser.execute_script("document.getElementById('source-text').dataset.maxChars = '30000'")
    set_text(browser, "a" * 20_001)
    element(browser, "translate").click()
    error = wait(browser, lambda: element(browser, "text-error").text, "the 413")
    assert "exceeds the limit of 20000" in error
    assert element(browser, "target-text").text == "" and element(browser, "detected").text == ""
    assert element(browser, "alternatives-section").is_displayed() is False


def set_text(browser, text: str) -> None:
    """As a paste or a script sets it (no maxlength stops either), then the page's input event."""
    browser.execute_script(
        "const t = document.getElementById('source-text'); t.value = arguments[0];"
        "t.dispatchEvent(new Event('input', {bubbles: true}));",
        text,
    )


def requests_sent(browser) -> int:
    return browser.execute_script(
        "return performance.getEntriesByType('resource').filter((e) => e.name.endsWith('/translation')).length"
    )


def test_the_counter_agrees_with_the_limit_the_page_enforces(browser, server):
    open_page(browser, server)
    choose(browser, "source-lang", "en")
    choose(browser, "target-lang", "de")
    text, expected = sentences("en", "de")[0]
    assert translate_on_page(browser, text) == expected
    # Characters as the server counts them: an emoji is one (two UTF-16 units in JavaScript).
    set_text(browser, "😀" * 10)
    assert element(browser, "char-count").text == "10 / 20000 characters"
    set_text(browser, "a" * 20_000)
    assert element(browser, "char-count").text == "20000 / 20000 characters"
    set_text(browser, "a" * 20_001)
    counter = element(browser, "char-count")
    assert counter.text == "20001 / 20000 characters" and "over" in counter.get_attribute("class")
    assert element(browser, "source-text").get_attribute("aria-invalid") == "true"
    sent = requests_sent(browser)
    element(browser, "translate").click()
    error = wait(browser, lambda: element(browser, "text-error").text, "the page's refusal")
    assert error == "The text has 20001 characters; at most 20000 are translated at once."
    assert requests_sent(browser) == sent  # refused on the page: nothing sent
    assert element(browser, "target-text").text == ""  # the earlier translation is not this text's
    set_text(browser, "a" * 20_000)
    assert "over" not in element(browser, "char-count").get_attribute("class")


def requested_urls(browser) -> list[str]:
    """Every URL the browser asked for since the last call (Chromium's network log)."""
    import json

    urls = []
    for entry in browser.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def test_the_docs_page_and_the_page_ask_nothing_of_another_origin(browser, server):
    # BentoML's docs page loaded Google Tag Manager and shields.io badges (#50); people self-host a
    # translator so that their text stays with them.
    from urllib.parse import urlsplit

    requested_urls(browser), console_errors(browser)  # what the module's earlier tests left in the logs
    browser.get(f"{server.url}/")
    title = wait(browser, lambda: browser.find_elements("css selector", "#swagger-ui .info .title"), "Swagger UI")
    assert "M2M100 translation service" in title[0].text
    # Every API's routes are listed, not only /translation.
    wait(browser, lambda: "/v3/glossaries" in browser.page_source, "the DeepL v3 routes")
    assert "/libretranslate/translate" in browser.page_source and "/documents" in browser.page_source
    docs = requested_urls(browser)
    open_page(browser, server)
    page = requested_urls(browser)
    origin = urlsplit(server.url).netloc
    assert docs and page
    elsewhere = [
        url for url in docs + page if urlsplit(url).scheme not in ("data", "blob") and urlsplit(url).netloc != origin
    ]
    assert elsewhere == []
    assert console_errors(browser) == []
