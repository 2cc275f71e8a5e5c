"""What the dashboard's browser tests read from Chromium besides the page: its console and screenshots."""
import os
import time


def console_errors(driver):
    """The browser's console messages of level SEVERE since the last call (failed loads, exceptions, CSP)."""
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def screenshot(driver, name):
    """Writes $KGYM_SCREENSHOTS/<name>.png of the whole page (up to 4000 px tall) when that variable is set (the
    images of docs/)."""
    out = os.environ.get("KGYM_SCREENSHOTS")
    if not out:
        return
    os.makedirs(out, exist_ok=True)
    height = driver.execute_script("return Math.min(4000, document.documentElement.scrollHeight)")
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": 1440, "height": height, "deviceScaleFactor": 1, "mobile": False})
    time.sleep(0.5)  # let the charts redraw at the new size
    driver.save_screenshot(os.path.join(out, name + ".png"))
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
