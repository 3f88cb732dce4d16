"""A real headless browser for tests of the HTML report: Debian's chromium driven by selenium
through chromium-driver (scripts/setup.sh installs both). `open_page` loads a local file and
returns the driver; `console_errors` lists what the page logged at SEVERE level."""

from __future__ import annotations

import os
import shutil

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
CHROMEDRIVER = shutil.which("chromedriver")


def browser_available() -> bool:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return False
    return bool(CHROMIUM and CHROMEDRIVER)


needs_browser = pytest.mark.skipif(not browser_available() and not os.environ.get("CI"),
                                   reason="chromium, chromium-driver or selenium missing "
                                          "(scripts/setup.sh installs them)")


def new_driver(width: int = 1400, height: int = 1000):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}", "--disable-extensions",
                # offline: the page must not need the network; any fetch fails loudly.
                "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


def open_page(driver, path: str, timeout: float = 60):
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get("file://" + os.path.abspath(path))
    WebDriverWait(driver, timeout).until(
        lambda d: d.execute_script("return document.body && document.body.dataset.rendered") == "yes"
        or d.execute_script("return !!window.__pyprof_error"))
    return driver


def console_errors(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
