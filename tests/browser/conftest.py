"""Headless Chromium (Debian's chromium + chromium-driver, driven by Selenium) for the dashboard's tests. The tests
skip only when those are not installed; setup.sh installs them."""
import os
import shutil
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "py"))

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def _missing():
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "python3-selenium is not installed"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.path.exists(path):
            return path + " is not installed (apt-get install chromium chromium-driver)"
    return None


@pytest.fixture(scope="module")
def browser():
    why = _missing()
    if why:
        pytest.skip(why)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1440,1000",
                "--allow-file-access-from-files", "--lang=en-US"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def console_errors(driver):
    """The browser's console messages of level SEVERE since the last call (failed loads, exceptions, CSP)."""
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def screenshot(driver, name):
    """Writes $KGYM_SCREENSHOTS/<name>.png of the whole page (up to 4000 px tall) when that variable is set (the
    images of docs/)."""
    out = os.environ.get("KGYM_SCREENSHOTS")
    if not out:
        return
    import time
    os.makedirs(out, exist_ok=True)
    height = driver.execute_script("return Math.min(4000, document.documentElement.scrollHeight)")
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": 1440, "height": height, "deviceScaleFactor": 1, "mobile": False})
    time.sleep(0.5)  # let the charts redraw at the new size
    driver.save_screenshot(os.path.join(out, name + ".png"))
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
